/* SPDX-License-Identifier: MIT */
/*
 * writeback: the driver that moves absorbed client writes upstream
 * (docs/design.md "Write semantics"). It asks the cache for coalesced runs of
 * dirty bytes (cache_wb_next), sends them as upstream WRITEs (UNSTABLE, or
 * FILE_SYNC while a FILE_SYNC caller waits), then COMMITs upstream and
 * settles the bytes by the upstream's write verifier: bytes written under a
 * verifier the COMMIT does not return are written again.
 *
 * It runs when a client asks (FILE_SYNC WRITE, COMMIT), in the background
 * for dirty data older than writeback_delay or when dirty bytes pass
 * dirty_limit, and at shutdown. A write-back failure (NOSPC, DQUOT, ACCES,
 * STALE, ...) drops the bytes and is reported to the next WRITE or COMMIT
 * of that file; a failed COMMIT, and a WRITE answered JUKEBOX, are sent
 * again WB_RETRY_PAUSE (1 s) later, not once per round trip. Failures
 * are logged by status name, one line per WB_LOG_INTERVAL per export,
 * call and status (ratelog.h).
 */
#ifndef NFSCACHED_DAEMON_WRITEBACK_H
#define NFSCACHED_DAEMON_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

#include "nfs3_prot.h"

struct daemon;
struct cfile;
struct export_rt;

/* What a waiting client call waits for. */
enum wb_wait_kind {
	WB_WAIT_RANGE,		/* [off, off+len) clean: FILE_SYNC WRITE */
	WB_WAIT_ALL,		/* every byte written before the wait
				 * began clean: COMMIT (RFC 1813 section
				 * 3.3.21); later writes are not waited
				 * for */
	WB_WAIT_IDLE,		/* no upstream WRITE or COMMIT in flight */
};

/* Called once with NFS3_OK, the file's write-back error, or
 * NFS3ERR_JUKEBOX when the wait timed out (upstream_timeout). */
typedef void (*wb_wait_fn)(struct daemon *d, nfsstat3 status, void *arg);

/* Called once by the room wait: room true when cache pages can be had
 * again (the caller retries and may wait again), false at its deadline. */
typedef void (*wb_room_fn)(struct daemon *d, bool room, void *arg);

/*
 * Counters this module owns, declared once for struct writeback_stats and
 * for /metrics: X(C type, field, Prometheus type, metric name, help);
 * double counters are seconds, rendered to the microsecond
 * (daemon/ctl/metrics.c; HACKING.md "Adding a counter").
 */
#define WRITEBACK_METRICS(X, A) \
	WRITEBACK_ROOM_METRICS(X, A) \
	WRITEBACK_EXPORT_METRICS(X, A)

/* Cache room is shared by every export: these have no export label. */
#define WRITEBACK_ROOM_METRICS(X, A) \
	X(uint64_t, room_waits, counter, "nfscached_write_room_waits_total", \
	  "Waits of client WRITEs for cache room that ended (woken or timed out).") \
	X(uint64_t, room_timeouts, counter, \
	  "nfscached_write_room_wait_timeouts_total", \
	  "Of those, waits that reached their 10 s limit (the WRITE then went through).") \
	X(double, room_wait_seconds, counter, \
	  "nfscached_write_room_wait_seconds_total", \
	  "Total time client WRITEs spent waiting for cache room.")

/* Per export (the export label): writeback_stats_export(). */
#define WRITEBACK_EXPORT_METRICS(X, A) \
	X(uint64_t, writes, counter, "nfscached_upstream_write_calls_total", \
	  "Upstream WRITEs sent by write-back.") \
	X(uint64_t, write_bytes, counter, "nfscached_upstream_write_bytes_total", \
	  "Bytes written upstream by write-back.") \
	X(uint64_t, commits, counter, "nfscached_upstream_commit_calls_total", \
	  "Upstream COMMITs sent by write-back.") \
	X(uint64_t, retries, counter, "nfscached_writeback_retries_total", \
	  "Write-back WRITEs that got no answer and were made dirty again.") \
	X(uint64_t, errors, counter, "nfscached_writeback_errors_total", \
	  "Write-back failures kept for the file and reported to its next WRITE or COMMIT.")

struct writeback_stats {
#define X(t, f, k, n, h) t f;
	WRITEBACK_METRICS(X, )
#undef X
	uint64_t waits_timed_out;	/* not exported */
};

/*
 * Create the proxy's write verifier (8 bytes from OpenSSL RAND_bytes, new
 * at every start) and the background timer. Returns 0, or -1 if RAND_bytes
 * failed (the caller must not serve: a reused verifier could lose data).
 */
/*
 * Make write-back's state (d->wb, owned by d: counters, room waiters,
 * the verifier, the background tick on d->base) with a fresh random
 * write verifier and start the tick. Loop thread, once, after the cache
 * exists (daemon_start). Returns 0, or -1 when memory, the timer or
 * RAND_bytes failed (d->wb may then be set: writeback_stop frees it).
 */
int writeback_start(struct daemon *d);

/* Stop the background timer, drop room waiters uncalled and free d->wb
 * (NULL after; a no-op when NULL). Loop thread, before the event base
 * goes; no write-back call may complete after (upstreams stopped). */
void writeback_stop(struct daemon *d);

/* The write verifier clients see (RFC 1813 s3.3.7 writeverf3: 8 bytes,
 * borrowed from d->wb until writeback_stop). Any thread holding d's
 * loop; d->wb must exist (after writeback_start). */
const uint8_t *writeback_verf(const struct daemon *d);

/* Replace d's write verifier with v (8 bytes, copied): lcommit_start,
 * before serving, installs the previous run's after a clean stop. Loop
 * thread; after writeback_start. */
void writeback_set_verf(struct daemon *d, const uint8_t v[NFS3_WRITEVERFSIZE]);

/*
 * Make f (of export ex) write back what it can now. want_commit also
 * COMMITs upstream when the writing is done.
 */
void writeback_kick(struct daemon *d, struct cfile *f, struct export_rt *ex,
		    bool want_commit);

/*
 * Wait until kind holds for f, writing back as needed, then call fn. The
 * async contract: returns -1 on ENOMEM (fn is never called), else 0 and
 * fn is called exactly once, possibly before writeback_wait returns (when
 * the condition already holds).
 */
int writeback_wait(struct daemon *d, struct cfile *f, struct export_rt *ex,
		   enum wb_wait_kind kind, uint64_t off, uint64_t len,
		   wb_wait_fn fn, void *arg);

/*
 * Wait until the cache can give a page again (every page holds bytes in
 * write-back state: Linux's balance_dirty_pages), then call fn(d, true,
 * arg); at deadline (daemon_now() seconds) call fn(d, false, arg). Waiters
 * are woken in arrival order as write-back frees pages, never polled.
 * While any waits, every dirty file is written back and COMMITted
 * upstream without the background delays. Returns -1 on ENOMEM (fn is
 * never called), else 0 and fn is called exactly once, never before
 * writeback_room_wait returns. Waiters left at writeback_stop are
 * dropped uncalled.
 */
int writeback_room_wait(struct daemon *d, double deadline, wb_room_fn fn,
			void *arg);

/* Write back and commit everything (shutdown). */
void writeback_flush_all(struct daemon *d);

/* True when no byte is dirty, writing or unstable anywhere. */
bool writeback_clean(const struct daemon *d);

/* Free one waiter without calling it; returns the next one (shutdown). */
struct wb_wait *writeback_wait_unlink(struct wb_wait *w);

/*
 * Check write-back's invariants (the top of writeback.c) on d: every
 * call on its list is live (WB_CALL_MAGIC) and its file has a state;
 * each such file's wb_inflight and wb_inflight_bytes are its WRITEs in
 * flight and their bytes, its commit_tag the tag of its one COMMIT in
 * flight (0 with none), and so for every file with write-back bytes;
 * nrooms is the room list's length. Returns NULL, or a static sentence
 * naming the broken one. Loop thread, between turns (invariant.c);
 * O(calls^2 + files), for the sampled sweep only.
 */
const char *writeback_check_why(struct daemon *d);

/* Copy d's counters (every export's summed, and the room counters) into
 * *st (caller's); all zero before writeback_start or after
 * writeback_stop. Loop thread. */
void writeback_stats_get(const struct daemon *d, struct writeback_stats *st);

/* Copy the WRITEBACK_EXPORT_METRICS counters of d's export id (1..63,
 * taken modulo NFS3_EXPORT_IDS) into *st (caller's; the other fields
 * zero, all zero without d->wb). Loop thread. */
void writeback_stats_export(const struct daemon *d, unsigned id,
			    struct writeback_stats *st);

/*
 * Seconds (now - then, monotonic, as daemon_now()) since the oldest bytes
 * of d's cache not yet stable upstream were absorbed: bytes a client
 * wrote that are DIRTY, being written (WRITING) or written but not yet
 * COMMITted (UNSTABLE), whatever retries, failed WRITEs or COMMITs and
 * verifier changes they went through (cfile_wb_since); 0 only when every
 * byte is stable upstream. While write-back fails it keeps growing. Walks
 * the files with write-back state: call it at scrape time, not per call.
 */
double writeback_oldest_dirty_age(struct daemon *d, double now);

/*
 * What a module above write-back (local commit) adds to it, registered
 * through d->wb_hooks (daemon.h; NULL, or a NULL member: nothing, as
 * without local commit). Write-back does not know who registered them.
 * Loop thread. settle: after any completion of f (lcommit_settle).
 * failed: a write-back WRITE of f failed hard with status; true when the
 * hook took it, *keep then says keep the bytes (lcommit_failed). backoff:
 * true while f's write-back must wait at now (lcommit_backoff). tick: the
 * background tick's end (lcommit_tick).
 */
struct writeback_hooks {
	void (*settle)(struct daemon *d, struct cfile *f);
	bool (*failed)(struct daemon *d, struct cfile *f, int status,
		       bool *keep);
	bool (*backoff)(struct cfile *f, double now);
	void (*tick)(struct daemon *d);
};

#endif
