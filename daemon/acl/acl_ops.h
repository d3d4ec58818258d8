/* SPDX-License-Identifier: MIT */
/*
 * acl_ops: the NFS ACL side protocol (NFSACL v3, program 100227), served
 * on the NFS port and forwarded to the export's upstream, so that
 * getfacl/setfacl on a client see and change the file's POSIX ACLs as
 * they would against the file server.
 *
 * A call's handle is unwrapped and checked like any NFS handle
 * (nfs3_guard_unwrap), the export's client rules apply
 * (nfs3_guard_request; SETACL of a read-only client is NFS3ERR_ROFS) and
 * the caller's credential is mapped as for NFS (root_squash,
 * all_squash: nfs3_guard_cred), then the call goes to the upstream's
 * NFSACL on its NFS port (the URL's nfsport; 0: its rpcbind) on a worker
 * of d->nfsacl's call pool (proto/rpccall.h). An upstream that does not
 * serve NFSACL makes the proxy answer PROG_UNAVAIL, as such a server
 * does, so the client falls back to the mode bits; one that refuses the
 * arguments (GARBAGE_ARGS) makes the proxy refuse them the same way; an
 * upstream that does not answer gives NFS3ERR_JUKEBOX. A SETACL that the upstream took
 * expires the file's cached attributes (its mode's group bits follow the
 * ACL's mask). Replies carry no attributes (the upstream's know nothing
 * of the bytes the proxy holds for the file).
 *
 * GETACL replies are cached with the file's attributes (issue 40): an
 * NFS3_OK reply, as sent to the client (XDR bytes, attributes cleared),
 * is kept on the file's cache entry for the mask asked
 * (cfile_acl_store: at most CACHE_ACL_SLOTS masks, CACHE_ACL_MAX bytes
 * each), and a later GETACL of the same file and mask is answered from it,
 * after the same handle, client-rule and credential steps, while the
 * file's attributes would answer a GETATTR (nfs3_meta_attr_trusted). The
 * attributes a forwarded GETACL's reply carries are observed as a
 * GETATTR's would be. A reply is kept only if no drop came between its
 * call and its reply (cfile_acl_gen). Kept replies are dropped by a SETACL
 * through the proxy (when sent and when answered, however), by an own
 * SETATTR that changes mode, uid or gid, by attributes that show another
 * writer's change, and with the file's cache entry (cache.h).
 *
 * State: d->nfsacl (struct nfsacl, owned; nfsacl_start/nfsacl_stop): the
 * call pool and the counters; a GETACL in flight holds a reference to its
 * file (struct acl_op), let go when it is answered or the pool stops
 * (before the cache is freed). Loop thread throughout.
 */
#ifndef NFSCACHED_DAEMON_ACL_OPS_H
#define NFSCACHED_DAEMON_ACL_OPS_H

#include <stdint.h>

#include "proc_table.h"

struct daemon;
struct req;

/* The NFSACL counters (nfsacl_stats_get), for /metrics. */
#define NFSACL_METRICS(X, A) \
	X(uint64_t, forwarded, counter, "nfscached_nfsacl_forwarded_total", \
	  "NFSACL calls (GETACL, SETACL) sent to the upstream.") \
	X(uint64_t, unserved, counter, "nfscached_nfsacl_unserved_total", \
	  "Of them, calls an upstream that does not serve NFSACL refused: the client got PROG_UNAVAIL and uses the mode bits.") \
	X(uint64_t, failed, counter, "nfscached_nfsacl_failures_total", \
	  "Of them, calls the upstream did not answer (down, timeout): the client got NFS3ERR_JUKEBOX.") \
	X(uint64_t, cache_hits, counter, "nfscached_nfsacl_cache_hits_total", \
	  "GETACL calls answered from the reply cached with the file's attributes, with no upstream call.")

struct nfsacl_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	NFSACL_METRICS(X, A)
#undef X
#undef A
};

/* Make d->nfsacl: a call pool of 2 workers on d->base. 0, or -1 on
 * ENOMEM or no thread. Loop thread, at start. */
int nfsacl_start(struct daemon *d);

/* Stop d->nfsacl's calls (pending ones answered NFS3ERR_JUKEBOX) and
 * free it. Before the server is freed. No-op without one. */
void nfsacl_stop(struct daemon *d);

/* d's counters (zero without d->nfsacl). */
void nfsacl_stats_get(const struct daemon *d, struct nfsacl_stats *st);

/* The first broken invariant of d->nfsacl's call pool
 * (rpccall_check_why), or NULL. Loop thread (the sweep). */
const char *nfsacl_check_why(const struct daemon *d);

/* The handlers of the dispatch table's NFSACL v3 rows: NULL answered
 * here, GETACL and SETACL forwarded. */
enum op_status nfsacl_op_null(struct req *r);
enum op_status nfsacl_op_forward(struct req *r);

#endif
