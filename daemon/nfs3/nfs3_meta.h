/* SPDX-License-Identifier: MIT */
/*
 * nfs3_meta: GETATTR, LOOKUP, ACCESS, READDIR and READDIRPLUS answered
 * from the proxy's caches where the consistency rules allow
 * (docs/semantics.md "Metadata"), forwarded otherwise; and the names
 * hooks by which forwarded replies feed the metadata cache (cache/meta.h).
 */
#ifndef NFSCACHED_DAEMON_NFS3_META_H
#define NFSCACHED_DAEMON_NFS3_META_H

#include <stdint.h>

#include "cache.h"
#include "proc_table.h"
#include "meta.h"
#include "nfs3_proc.h"
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

/*
 * Counters of the metadata handlers, declared once for struct
 * nfs3_meta_stats and for /metrics (rows as in server.h's
 * SERVER_METRICS), and the cache's own (META_METRICS). hits and misses
 * are rendered by hand as one family with two labels,
 * nfscached_meta_requests_total{procedure,result} (daemon/ctl/metrics.c).
 */
#define NFS3_META_METRICS(X, A) \
	X(uint64_t, negative_hits, counter, "nfscached_meta_negative_hits_total", \
	  "LOOKUPs answered NFS3ERR_NOENT from a cached negative entry (also counted as lookup hits).") \
	X(uint64_t, revalidations, counter, "nfscached_meta_revalidations_total", \
	  "GETATTRs sent to revalidate a directory before serving its cached listing.")

struct nfs3_meta_stats {
#define X(t, f, k, n, h) t f;
	NFS3_META_METRICS(X, )
#undef X
	uint64_t hits[NFS3_META_NPROCS];	/* answered locally */
	uint64_t misses[NFS3_META_NPROCS];	/* forwarded upstream */
	struct meta_stats cache;	/* entries, memory, evictions */
};

/* Lower-case label of a procedure ("getattr", ...). */
const char *nfs3_meta_proc_name(enum nfs3_meta_proc p);

/*
 * Make d->nfs3_meta (the counters above, and the slot of the metadata
 * cache, made at the first metadata call), all zero: at start, before
 * the first NFSv3 call and stale_restore. 0, or -1 (ENOMEM;
 * d->nfs3_meta stays NULL). Event loop, before serving.
 */
int nfs3_meta_start(struct daemon *d);

/* Copy d's counters into *st (zeros without nfs3_meta_start; the cache's
 * zeros before the first metadata call). Event loop (metrics, tests). */
void nfs3_meta_stats_get(const struct daemon *d, struct nfs3_meta_stats *st);

/*
 * True when f's (may be NULL) cached attributes may answer a GETATTR of
 * export ex now without asking the upstream: within their timeout
 * (acregmin..acregmax, acdirmin..acdirmax), that timeout within the
 * export's current maximum (a reload lowering it takes effect at once),
 * and ex not `strict`. What else is cached with the attributes (the
 * NFSACL GETACL replies, daemon/acl) is trusted by the same test. Event
 * loop.
 */
bool nfs3_meta_attr_trusted(const struct export_rt *ex, const struct cfile *f);

/* The handlers (dispatch.c rows). RFC 1813 sections 3.3.1, 3.3.3,
 * 3.3.4, 3.3.16 and 3.3.17. */
enum op_status nfs3_op_getattr(struct req *r);
enum op_status nfs3_op_lookup(struct req *r);
enum op_status nfs3_op_access(struct req *r);
enum op_status nfs3_op_readdir(struct req *r);
enum op_status nfs3_op_readdirplus(struct req *r);

/*
 * The names hooks (nfs3_proc.h nfs3_names_fn) of the table's rows: what a
 * forwarded call's decoded upstream result res (handles still upstream
 * handles) teaches the metadata cache. LOOKUP and READDIR(PLUS) results
 * fill it (their rows ask for names_fill: only while dir, the cached file
 * of the call's first handle, kept its generation since the call was
 * sent), with the caller's (cc) LOOKUP or READ right; the proxy's own
 * CREATE, MKDIR, SYMLINK, MKNOD (nfs3_names_create), REMOVE, RMDIR
 * (nfs3_names_remove), RENAME and LINK update the affected names or drop
 * the directory (meta.h). Called after the page cache has seen the reply
 * (cfile_mutation_end done). Each does nothing without a metadata cache
 * (no budget, or no memory for one). nfs3_names_none learns nothing: the
 * rows of the other procedures name it because every forwarded reply
 * creates the metadata cache or applies a reloaded meta_cache_size.
 */
nfs3_names_fn nfs3_names_lookup, nfs3_names_readdir, nfs3_names_create,
	nfs3_names_remove, nfs3_names_rename, nfs3_names_link, nfs3_names_none;

/*
 * GETATTR and ACCESS learn nothing for the names; with stale_on_error and
 * a cache_dir they keep the file's attributes (and ACCESS its result)
 * for an outage (stale.h, outage records).
 */
nfs3_names_fn nfs3_names_getattr, nfs3_names_access;

/*
 * Install a name kept by an earlier run (stale_restore's stale_name_fn):
 * name in dir is fh, learned at now, as of dir's current attributes
 * (restored first). Only at start, before serving.
 */
void nfs3_meta_restore_name(struct daemon *d, const uint8_t *dir, size_t dlen,
			    const uint8_t *name, size_t nlen, const uint8_t *fh,
			    size_t fhlen, double now);

/* Drop every name and listing cached under directory dir (an upstream
 * handle, len bytes): `nfscached cache forget`. Nothing if none. */
void nfs3_meta_forget_dir(struct daemon *d, const uint8_t *dir, size_t len);

/* Free d's metadata cache and d->nfs3_meta, and clear it (shutdown,
 * after the last forwarded reply). No-op when NULL. Event loop. */
void nfs3_meta_shutdown(struct daemon *d);

/* meta_check_why on d's metadata cache (NULL also before it exists).
 * Event loop (the invariant sweep). */
const char *nfs3_meta_check_why(const struct daemon *d);

#endif
