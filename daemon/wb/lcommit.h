/* SPDX-License-Identifier: MIT */
/*
 * lcommit: commit = "local" (issue 18, docs/disk-tier.md "Local commit").
 * A COMMIT or a FILE_SYNC/DATA_SYNC WRITE of an export with commit =
 * "local" is answered once the file's bytes not yet stable upstream are
 * durable in the disk tier's journal (disk.h "The journal"): per page a
 * full record of its write-back extents, then delta records of what was
 * written since (RFC 1813 sections 3.3.7 and 3.3.21: "stable storage" is
 * cache_dir here). Write-back to the upstream goes on as for any absorbed
 * data (writeback.c); a page's records are deleted once the page holds no
 * write-back bytes (written and COMMITted upstream under the same
 * verifier), and found again at start when the daemon stopped before
 * that: the bytes become dirty again and are written back.
 *
 * The proxy's write verifier is kept in cache_dir: reused at start only
 * when the previous run stopped cleanly with every acknowledged byte
 * either committed upstream or journaled (lcommit_stop), else new, so
 * clients resend their UNSTABLE writes after any crash.
 */
#ifndef NFSCACHED_DAEMON_LCOMMIT_H
#define NFSCACHED_DAEMON_LCOMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "writeback.h"

struct daemon;
struct export_rt;
struct evbuffer;

/* Causes of write-back failures of locally committed data, the metric's
 * label (RFC 1813 nfsstat3 names, lower case). */
#define LCOMMIT_CAUSES(X) \
	X(LC_ACCES, "acces") \
	X(LC_PERM, "perm") \
	X(LC_STALE, "stale") \
	X(LC_DQUOT, "dquot") \
	X(LC_NOSPC, "nospc") \
	X(LC_ROFS, "rofs") \
	X(LC_OTHER, "other")

enum lcommit_cause {
#define X(e, s) e,
	LCOMMIT_CAUSES(X)
#undef X
	LC_NCAUSES
};

/* Counters this module owns (/metrics; docs/metrics.md). */
struct lcommit_stats {
	uint64_t commits;		/* COMMITs answered locally */
	uint64_t sync_writes;		/* FILE_SYNC WRITEs answered locally */
	uint64_t records_written;	/* journal records put */
	uint64_t bytes_written;		/* their data bytes */
	uint64_t fallbacks;		/* answered the upstream way instead:
					 * tier off, journal full, error */
	uint64_t recovered_records;	/* found at start and installed */
	uint64_t recovered_bytes;
	uint64_t kept_records;		/* found at start, not installed
					 * (no export, no room): kept */
	uint64_t superseded_records;	/* found at start, covered by the
					 * fence: skipped and deleted */
	uint64_t fence_writes;		/* fences made durable */
	uint64_t fence_failures;	/* fence writes that failed */
	uint64_t failures[LC_NCAUSES];	/* write-back failures, by cause */
	bool verf_reused;		/* the write verifier survived the
					 * last restart */
};

/*
 * Make d's local commit state (d->lcommit, owned by d; struct lcommit in
 * lcommit.c: counters, sequence numbers, the fence), zeroed: a fresh
 * daemon starts with its counters at zero and no fence. daemon_start's
 * core calls it before the disk tier starts (the tier may call
 * d->tier_off) and before anything else here: every other lcommit_*
 * that takes d needs it, with or without the journal (lcommit_start).
 * Outside the loop. Returns 0, or -1 on ENOMEM (d->lcommit stays NULL).
 */
int lcommit_new(struct daemon *d);

/*
 * Free d->lcommit (and clear it): daemon_stop, after lcommit_fence_stop
 * and after the files' states are freed (cache_owner_clear: their
 * lcommit_fstate_clear still counts in it). Touches neither the journal
 * nor the fence files, so a daemon stopped without lcommit_stop (a
 * crash, as the unit tests simulate one) is freed as well; a fence
 * waiter still queued is dropped unanswered. NULL d->lcommit: nothing.
 * Outside the loop (it has stopped serving).
 */
void lcommit_free(struct daemon *d);

/*
 * At start, after the disk tier opened and the exports' upstream clients
 * were made, before serving (once per daemon, after lcommit_new): choose
 * the write verifier (reused after a clean stop, writeback_set_verf) and
 * install every journal record as dirty data of its file (attributes
 * from the record, expired so the next use revalidates them), its
 * write-back queued. Without a disk tier it does nothing. Returns 0; a
 * record it cannot install is kept on disk and counted (kept_records),
 * never deleted. Returns -1 with err (room errlen bytes) filled,
 * installing nothing, when a record was written with another page_size
 * (the daemon must not start).
 */
int lcommit_start(struct daemon *d, char *err, size_t errlen);

/*
 * At the end of a clean stop (SIGTERM), after the final write-back:
 * journal what is left of the local exports' files and, when nothing
 * acknowledged is left outside the journal, mark the verifier reusable.
 * When the tier turned off and the fence is due (lcommit_tier_off), write
 * it first. Blocks on the disk (the loop has stopped serving).
 */
void lcommit_stop(struct daemon *d);

/* True when ex's COMMITs may be answered locally now: commit = "local",
 * the disk tier on, the journal under disk_dirty_limit and its pages
 * within half of cache_size (so the next start can install them). A
 * local export past either bound counts a fallback (the caller then
 * waits for the upstream). */
bool lcommit_on(const struct daemon *d, const struct export_rt *ex);

/* A client WRITE of [off, off + len) of f (bytes) was absorbed: its
 * pages must be journaled by the next local sync of f. The note lives
 * in f's state (fstate.lc_stale; none: nothing noted); on ENOMEM it is
 * lost, logged, and f's COMMITs wait for the upstream until f holds no
 * write-back bytes. Loop thread. */
void lcommit_note_write(struct cfile *f, uint64_t off, uint64_t len);

/* A local sync ended: durable true once the bytes are in the journal;
 * false when they could not be (the caller then waits for the upstream,
 * as with commit = "upstream"). */
typedef void lcommit_fn(struct daemon *d, bool durable, void *arg);

/*
 * Journal f's pages written since their last journaling that hold
 * write-back bytes in [off, off + len) (len 0: the whole file), then
 * call fn once, from the disk tier's completion (never before this
 * returns). f (of export ex) is referenced until then. Returns 0, or -1
 * (fn never called) when it cannot start: tier off, ENOMEM, a page with
 * more extents than a record holds.
 */
int lcommit_sync(struct daemon *d, struct cfile *f, struct export_rt *ex,
		 uint64_t off, uint64_t len, lcommit_fn *fn, void *arg);

/* After any write-back completion of f: delete the records of its pages
 * that hold no write-back bytes any more. */
void lcommit_settle(struct daemon *d, struct cfile *f);

/*
 * f's bytes in [off, off + len) (len 0: to the end of the file) changed
 * other than by an absorbed WRITE: a truncating SETATTR or CREATE, a
 * WRITE written through to the upstream, a REMOVE of the last link that
 * dropped the unwritten data. Each of f's recorded pages there gets a
 * full record of what it holds now, replacing its older records, or loses
 * its records when it holds no write-back bytes, so a replay after a
 * crash cannot bring the old bytes (or size) back. Queued, not waited
 * for: a crash before the journal's next commit (about a millisecond)
 * can still replay them.
 */
void lcommit_rewrite(struct daemon *d, struct cfile *f, uint64_t off,
		     uint64_t len);

/*
 * A write-back WRITE of f failed upstream with status (a hard error).
 * Returns true when f holds locally committed data: the failure is
 * counted by cause and logged, and the caller must keep the bytes (retry
 * later: lcommit_backoff) instead of dropping them; for NFS3ERR_STALE (the
 * file is gone upstream) the records are kept in cache_dir and not
 * deleted, and the caller drops the RAM copy as usual. False: not local.
 */
bool lcommit_failed(struct daemon *d, struct cfile *f, int status,
		    bool *keep);

/* True while f's write-back waits after a failure of locally committed
 * data (retried every LCOMMIT_RETRY seconds of daemon_now()). */
bool lcommit_backoff(struct cfile *f, double now);

/* Free what f's state fs holds for this module (the fstate_hooks clear
 * hook, fstate_free), its pages no longer counted in d->lcommit's fence
 * (their records stay on disk). Loop thread, or daemon_stop before
 * lcommit_free. */
void lcommit_fstate_clear(struct daemon *d, struct fstate *fs);

/* True when fs holds nothing of this module (fstate_idle). */
bool lcommit_fstate_idle(const struct fstate *fs);

/*
 * The disk tier turned off at run time (disk_tier's log hook; also found
 * by this module itself at its next step): the journal can no longer
 * delete records, so from now on they are superseded by a fence instead
 * (lcommit.c's top): every file with records is written back at once,
 * and once none of their pages holds write-back bytes the fence is
 * written. Loop thread; once per run.
 */
void lcommit_tier_off(struct daemon *d);

/*
 * writeback_wait for a COMMIT or FILE_SYNC WRITE answered the upstream
 * way, same arguments and async contract, except that while a fence is
 * due (the tier turned off with records outstanding) fn gets NFS3_OK
 * only once the fence is durable: a replay at the next start could
 * otherwise bring older bytes back over what this call acknowledges. A
 * fence that cannot be written, or does not come within LCOMMIT_RETRY
 * seconds, gives NFS3ERR_JUKEBOX (the client retries).
 */
int lcommit_upstream_wait(struct daemon *d, struct cfile *f,
			  struct export_rt *ex, enum wb_wait_kind kind,
			  uint64_t off, uint64_t len, wb_wait_fn fn, void *arg);

/* The same wait for a reply whose bytes are stable upstream already (a
 * WRITE written through FILE_SYNC): fn(d, NFS3_OK or NFS3ERR_JUKEBOX,
 * arg) exactly once, possibly before this returns; -1 on ENOMEM (fn is
 * never called). */
int lcommit_fence_wait(struct daemon *d, wb_wait_fn fn, void *arg);

/*
 * How many journal rewrites and deletions this run has queued (a
 * truncation, a REMOVE, a written-through WRITE rewrite the records of
 * the pages they touch). A call that may have queued some takes this
 * before and hands it to lcommit_ack_wait. Loop thread.
 */
uint64_t lcommit_rewrites(const struct daemon *d);

/*
 * Call fn(d, NFS3_OK or NFS3ERR_JUKEBOX, arg) exactly once (possibly
 * before this returns) when what a call acknowledges can no longer be
 * undone by a replay at the next start: the journal rewrites queued since
 * `since` (lcommit_rewrites) are durable (one journal sync after them;
 * the journal keeps queue order), and no fence is due (as
 * lcommit_fence_wait). If the tier turned off meanwhile, the fence that
 * covers the records is waited for instead. -1 on ENOMEM (fn is never
 * called). Loop thread.
 */
int lcommit_ack_wait(struct daemon *d, uint64_t since, wb_wait_fn fn,
		     void *arg);

/* True while d's fence is due and not yet durable (the tier turned off
 * with records outstanding): a call that changes a file upstream then
 * waits for it first (lcommit_fence_wait). Loop thread. */
bool lcommit_fence_due(const struct daemon *d);

/* The write-back tick (writeback.c): retry a failed fence, answer
 * waiters that waited too long. */
void lcommit_tick(struct daemon *d);

/* Tests: wait for a fence write in flight (its thread) and run its
 * completion now, as the loop would once the thread signals. Loop
 * thread. */
void lcommit_fence_drain(struct daemon *d);

/* Stopping: answer every fence waiter of d NFS3ERR_JUKEBOX, wait for a
 * fence write in flight (its thread) and free its event (daemon_stop,
 * just before disk_tier_stop, before the server goes). The fence is
 * then NONE (its tracked count kept for lcommit_fstate_clear). NULL
 * d->lcommit: nothing. */
void lcommit_fence_stop(struct daemon *d);

/* Local commit's write-back hooks (writeback.h): lcommit_settle,
 * lcommit_failed, lcommit_backoff, lcommit_tick. main() and the unit
 * harness set d->wb_hooks to it before daemon_cache_start. */
extern const struct writeback_hooks lcommit_wb_hooks;

/* The owners' fstate hooks (fstate.h): lcommit_fstate_idle,
 * lcommit_fstate_clear and writeback_wait_unlink. main() and the unit
 * harness set d->fstate_hooks to it before serving. */
extern const struct fstate_hooks lcommit_fstate_hooks;

/* Copy d's counters into *st (zeros without lcommit_new). Loop thread
 * (metrics, tests). */
void lcommit_stats_get(const struct daemon *d, struct lcommit_stats *st);

/* The first broken invariant of this module's state (lcommit.c's top)
 * over the files holding write-back bytes, or NULL (invariant.c, debug
 * and test runs with NFSCACHED_CHECK). */
const char *lcommit_check_why(struct daemon *d);

/* Count one call of d answered locally: a COMMIT (commit true) or a
 * FILE_SYNC/DATA_SYNC WRITE. Loop thread. */
void lcommit_count(struct daemon *d, bool commit);

/* Append d's /metrics families of this module to o. Loop thread. */
void lcommit_render(const struct daemon *d, struct evbuffer *o);

/* Append the module's part of `nfscached cache status` to o: the member
 * "local_commit":{"journal_records":N,"journal_bytes":N,
 * "writeback_failures":{CAUSE:N,...}} (no leading comma): the journal's
 * counts from d's disk tier (0 without one), the failures from d's
 * local commit state. Loop thread. */
void lcommit_status_json(const struct daemon *d, struct evbuffer *o);

#endif
