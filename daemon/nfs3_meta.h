/* SPDX-License-Identifier: MIT */
/*
 * nfs3_meta: GETATTR, LOOKUP, ACCESS, READDIR and READDIRPLUS answered
 * from the proxy's caches where the consistency rules allow
 * (docs/semantics.md "Metadata"), forwarded otherwise; and the hook by
 * which forwarded replies feed the metadata cache (cache/meta.h).
 */
#ifndef NFSCACHED_DAEMON_NFS3_META_H
#define NFSCACHED_DAEMON_NFS3_META_H

#include <stdint.h>

#include "cache.h"
#include "dispatch.h"
#include "meta.h"
#include "upstream.h"

struct req;
struct export_rt;

/* The procedures the metadata cache answers; also the metric labels. */
#define NFS3_META_PROCS(X) \
	X(NFS3_META_GETATTR, "getattr") \
	X(NFS3_META_LOOKUP, "lookup") \
	X(NFS3_META_ACCESS, "access") \
	X(NFS3_META_READDIR, "readdir") \
	X(NFS3_META_READDIRPLUS, "readdirplus")

enum nfs3_meta_proc {
#define X(e, s) e,
	NFS3_META_PROCS(X)
#undef X
	NFS3_META_NPROCS
};

/* Counters of the metadata handlers and the cache's own. */
struct nfs3_meta_stats {
	uint64_t hits[NFS3_META_NPROCS];	/* answered locally */
	uint64_t misses[NFS3_META_NPROCS];	/* forwarded upstream */
	uint64_t negative_hits;		/* LOOKUP hits that were NOENT */
	uint64_t revalidations;		/* GETATTRs sent to revalidate a
					 * directory before serving its
					 * listing */
	struct meta_stats cache;	/* entries, memory, evictions */
};

/* Lower-case label of a procedure ("getattr", ...). */
const char *nfs3_meta_proc_name(enum nfs3_meta_proc p);

/* Copy the counters into *st (zeros before the first metadata call). */
void nfs3_meta_stats_get(struct nfs3_meta_stats *st);

/* The handlers (dispatch.c rows). RFC 1813 sections 3.3.1, 3.3.3,
 * 3.3.4, 3.3.16 and 3.3.17. */
enum op_status nfs3_op_getattr(struct req *r);
enum op_status nfs3_op_lookup(struct req *r);
enum op_status nfs3_op_access(struct req *r);
enum op_status nfs3_op_readdir(struct req *r);
enum op_status nfs3_op_readdirplus(struct req *r);

/*
 * Feed a forwarded call's decoded upstream result res (handles still
 * upstream handles) into the metadata cache: LOOKUP and READDIR(PLUS)
 * results fill it (when dir, the cached file of the call's first handle,
 * still has generation gen, its value when the call was sent), and the
 * proxy's own CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME and
 * LINK update the affected names or drop the directory (meta.h). uc is
 * the identity the call was made with. Called by the forward path after
 * the page cache has seen the reply (cfile_mutation_end done). dir may be
 * NULL.
 */
void nfs3_meta_learn(struct req *r, struct export_rt *ex,
		     const struct upstream_cred *uc, struct cfile *dir,
		     uint64_t gen, void *res);

/* Free the metadata cache (shutdown). */
void nfs3_meta_shutdown(void);

#endif
