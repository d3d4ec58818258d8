/* SPDX-License-Identifier: MIT */
/*
 * nfs3_fwd: NFSv3 calls forwarded to the upstream (RFC 1813 section 3):
 * the procedures without a handler of their own, and the misses of those
 * with one. A forwarded call is prepared by the security boundary
 * (nfs3_guard.h), waits for what it needs written back or idle (the
 * write-back coordination of SETATTR, truncating CREATE and REMOVE of a
 * file the proxy holds writes of, writeback.h), is sent through the
 * export's upstream (nfs3_send), and its reply teaches the cache
 * (nfs3_learn.h) before it is rewrapped and sent to the client. A call the
 * upstream cannot serve now gets NFS3ERR_JUKEBOX so the client retries,
 * or under stale_on_error an answer from remembered state (stale.h).
 */
#ifndef NFSCACHED_DAEMON_NFS3_FWD_H
#define NFSCACHED_DAEMON_NFS3_FWD_H

#include "proc_table.h"
#include "upstream.h"

struct req;
struct export_rt;

/* NULL (RFC 1813 s3.3.0): answered by the proxy itself. */
enum op_status nfs3_op_null(struct req *r);

/* Prepare (nfs3_prepare) and forward r. OP_PENDING, or OP_DONE when it
 * replied at once (a refused call, an upstream that cannot take it). */
enum op_status nfs3_op_forward(struct req *r);

/*
 * Forward r, already through nfs3_prepare (handles unwrapped, ex and uc
 * set; uc is copied), to the upstream and reply with its answer. Returns
 * OP_PENDING, or OP_DONE when it replied at once.
 */
enum op_status nfs3_forward_prepared(struct req *r, struct export_rt *ex,
				     const struct nfs_cred *uc);

#endif
