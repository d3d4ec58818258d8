/* SPDX-License-Identifier: MIT */
/*
 * nfs3_read: the NFSv3 READ handler (RFC 1813 section 3.3.6), served from
 * the cache with joined fetches and readahead. Its counters are in
 * struct nfs3_ops_stats (nfs3_ops.h: nfs3_count_read, nfs3_count_fetch).
 */
#ifndef NFSCACHED_DAEMON_NFS3_READ_H
#define NFSCACHED_DAEMON_NFS3_READ_H

#include "dispatch.h"

struct req;

/* READ r (arguments decoded, client handles). OP_PENDING or OP_DONE. */
enum op_status nfs3_op_read(struct req *r);

#endif
