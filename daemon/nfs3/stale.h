/* SPDX-License-Identifier: MIT */
/*
 * stale: answering from the cache while an export's upstream is
 * unreachable (the stale_on_error directive, docs/semantics.md "The
 * upstream going away"). Attributes that expired less than stale_on_error
 * seconds ago stand in for the upstream's (READ of cached bytes,
 * GETATTR), and the last FSINFO, FSSTAT and PATHCONF answers per handle
 * are remembered so a mount works during an outage. Every answer given
 * this way is counted by procedure. Unreachable means the call failed
 * with the connection lost or timed out (a stalled upstream included), or
 * could not be sent because the upstream is not UP; an upstream that
 * answers, even with an error, is never second-guessed.
 */
#ifndef NFSCACHED_DAEMON_STALE_H
#define NFSCACHED_DAEMON_STALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "cred.h"
#include "upstream.h"

struct daemon;
struct export_rt;

/*
 * Counters this module owns, declared once for struct stale_stats and for
 * /metrics (rows as in server.h's SERVER_METRICS): answers given from
 * stale state, by NFSv3 procedure number; the label set stale_proc names
 * only the procedures stale_on_error answers (daemon/ctl/metrics.c); MNTs
 * answered from a kept root handle.
 */
#define STALE_METRICS(X, A) \
	A(answers, UPSTREAM_NPROCS, counter, "nfscached_stale_answers_total", \
	  "procedure", stale_proc, \
	  "Calls answered from expired cached state while the upstream was unreachable (stale_on_error), by procedure.") \
	X(uint64_t, mounts, counter, "nfscached_stale_mounts_total", \
	  "MOUNT MNT calls answered with the export's root handle kept in cache_dir while the upstream was unreachable (stale_on_error).")

struct stale_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	STALE_METRICS(X, A)
#undef A
#undef X
};

/*
 * Make d->stale (the remembered results, the outage records' state and
 * the counters above), empty and zero: at start, before the disk tier
 * and stale_restore. 0, or -1 (ENOMEM; d->stale stays NULL). Event
 * loop, before serving. Every other stale_* function but stale_refused
 * needs it done, and stale_forget_all not yet.
 */
int stale_start(struct daemon *d);

/* The status to judge a call nfs3_send refused by: UPSTREAM_EDOWN when
 * ex's upstream is not UP (unreachable), else UPSTREAM_EPROTO. */
enum upstream_status stale_refused(const struct export_rt *ex);

/*
 * True if f's cached attributes may be used now for a call whose upstream
 * call ended with st: stale_on_error > 0, st is UPSTREAM_EDOWN or
 * UPSTREAM_ETIMEDOUT, and f has attributes that expired less than
 * stale_on_error seconds ago (daemon_now()). f may be NULL (false).
 */
bool stale_attrs_usable(const struct daemon *d, const struct cfile *f,
			enum upstream_status st);

/* Count, in d's counters, one answer of NFSv3 procedure proc given from
 * stale state. Event loop. */
void stale_count(struct daemon *d, uint32_t proc);

/* Count, in d's counters, one MNT answered with a root handle stale_root
 * gave. Event loop. */
void stale_count_mount(struct daemon *d);

/*
 * Remember the upstream's result XDR res[0..len) of proc (FSINFO, FSSTAT
 * or PATHCONF; others are ignored) for upstream handle fh[0..fhlen) of
 * export ex, with its post_op_attr dropped (old attributes must not be
 * taken for new ones). Copied; the oldest of STALE_SLOTS is replaced.
 * Only while stale_on_error > 0. ENOMEM forgets it.
 */
void stale_remember(const struct daemon *d, const struct export_rt *ex,
		    uint32_t proc, const uint8_t *fh, size_t fhlen,
		    const uint8_t *res, size_t len);

/*
 * The remembered result of proc for fh of ex, *len bytes of XDR (borrowed
 * until the next stale_remember), if stale_on_error > 0 and st says the
 * upstream is unreachable; else NULL.
 */
const uint8_t *stale_recall(const struct daemon *d, const struct export_rt *ex,
			    uint32_t proc, const uint8_t *fh, size_t fhlen,
			    enum upstream_status st, size_t *len);

/*
 * ---- outage records (docs/semantics.md "Outage mode") ----
 * With stale_on_error > 0 and a cache_dir, what a client needs to mount,
 * look a path up and read a cached file is also kept in cache_dir as it
 * is learned (disk_outage_put: asynchronous, on the disk tier's writer,
 * a put only when the value changed), and installed again at the next
 * start (stale_restore), so a restarted proxy answers from it while the
 * upstream is away. Each stale_keep_* is a no-op without both. Loop
 * thread only.
 */

/* Keep f's attributes (as clients are shown them). */
void stale_keep_attr(const struct daemon *d, const struct cfile *f);

/* Keep that cr asked `asked` on f and was granted `granted`. */
void stale_keep_access(const struct daemon *d, const struct cfile *f,
		       const struct nfs_cred *cr, uint32_t asked,
		       uint32_t granted);

/* Keep that name[0..nlen) in directory dir[0..dlen) is handle fh[0..fhlen)
 * (upstream handles). */
void stale_keep_name(const struct daemon *d, const uint8_t *dir, size_t dlen,
		     const uint8_t *name, size_t nlen, const uint8_t *fh,
		     size_t fhlen);

/* Keep ex's root handle root[0..len) (upstream). */
void stale_keep_root(const struct daemon *d, const struct export_rt *ex,
		     const uint8_t *root, size_t len);

/* True when calls of ex are to be answered from stale state now:
 * stale_on_error > 0 and ex's upstream is not UP. */
bool stale_now(const struct daemon *d, const struct export_rt *ex);

/* ex's root handle kept by an earlier run (*len bytes, borrowed), if
 * stale_now(d, ex); else NULL. */
const uint8_t *stale_root(const struct daemon *d, const struct export_rt *ex,
			  size_t *len);

/* Install a kept name: name in dir is fh, learned at now (seconds,
 * daemon_now's clock); nfs3_meta's, passed in by the caller of
 * stale_restore (stale does not call a handler module). */
typedef void stale_name_fn(struct daemon *d, const uint8_t *dir, size_t dlen,
			   const uint8_t *name, size_t nlen, const uint8_t *fh,
			   size_t fhlen, double now);

/*
 * At start, after the disk tier and the local-commit journal: read every
 * outage record of cache_dir and install it, as learned when it was kept
 * and already expired (the first use with the upstream up asks it):
 * attributes into files that have none, ACCESS results, names (through
 * name_fn), FSINFO/FSSTAT/PATHCONF results and root handles. Returns the
 * number of records installed. No-op (0) without stale_on_error or a
 * cache_dir.
 */
long stale_restore(struct daemon *d, stale_name_fn *name_fn);

/*
 * Forget the outage records: queue their removal from cache_dir
 * (disk_outage_drop_all, after the puts queued before) and forget the
 * root handles an earlier run kept and what this process put, so what
 * is learned next is kept again (`nfscached cache drop`). What is in RAM
 * (attributes, names, the FSINFO/FSSTAT/PATHCONF table) stays. No-op
 * without stale_on_error or a cache_dir. Loop thread only.
 */
void stale_drop_kept(const struct daemon *d);

/* Free d->stale, what stale_remember kept with it, and clear it
 * (shutdown, after the disk tier stopped: its last callbacks keep
 * attributes). No-op when NULL. Event loop. */
void stale_forget_all(struct daemon *d);

/* Copy d's counters into *st (zeros without stale_start). Event loop
 * (metrics, tests). */
void stale_stats_get(const struct daemon *d, struct stale_stats *st);

#endif
