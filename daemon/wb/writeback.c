/* SPDX-License-Identifier: MIT */
/*
 * writeback: see writeback.h. Per file, the driver keeps at most
 * WB_INFLIGHT upstream WRITEs (WB_INFLIGHT_WTMAX wtmax of data; each at most
 * wb_wsize(), writeback_wsize or wtmax) in flight;
 * a COMMIT goes when the file has no DIRTY or WRITING bytes, when its
 * UNSTABLE bytes pass commit_early(), or as soon as every byte written
 * before a waiting client COMMIT arrived is UNSTABLE (the upstream COMMIT
 * covers every UNSTABLE byte tagged for it at send time). Waiters hang on
 * the file's fstate and are checked after every completion and on the
 * background tick (every 100 ms), which also times them out and starts
 * write-behind. WRITEs waiting for cache room wait on one global list,
 * woken after any completion once a page can be had, timed out by the
 * tick.
 *
 * Every upstream WRITE of a run is one of the proxy's own mutations of the
 * file (cfile_mutation_begin/end), so its wcc data never looks like
 * another writer.
 *
 * State: struct writeback (d->wb), made by writeback_start.
 *
 * Invariants (writeback_check_why, run by the invariant sweep): every
 * wb_call is on d->wb->calls from call_new to call_free and carries
 * WB_CALL_MAGIC meanwhile; fstate.wb_inflight is the number of this
 * file's wb_calls for WRITEs in flight and wb_inflight_bytes their data;
 * commit_tag is the tag of the file's one COMMIT wb_call in flight, 0
 * when there is none; each wb_call holds
 * a file reference, so the fstate it counts in stays (fstate_idle is
 * false meanwhile); nrooms is the length of `rooms`; every waiter (wb_wait
 * and wb_room) is called exactly once, then freed, except at shutdown
 * (fstate_free drops them unanswered).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>
#include <openssl/rand.h>
#include <utlist.h>

#include "attr.h"
#include "checkobj.h"
#include "daemon.h"
#include "fstate.h"
#include "log.h"
#include "nfs3_status.h"
#include "ratelog.h"
#include "writeback.h"

#define WB_INFLIGHT 32		/* upstream WRITEs in flight per file, */
#define WB_INFLIGHT_WTMAX 8	/* and at most this many wtmax of data:
				 * scattered small runs need many calls to
				 * hide a link's latency, large ones few;
				 * each is a copy outside cache_size */
#define WB_TICK_US 100000
#define WB_COMMIT_EARLY 8	/* x wtmax: see commit_early() */
#define WB_DIRTY_AUTO_MAX 256	/* MiB: dirty_limit = 0's ceiling */
#define WB_RETRY_PAUSE 1.0	/* s after a failed COMMIT or a JUKEBOX
				 * WRITE before the next: not one per
				 * round trip */
#define WB_LOG_INTERVAL 10.0	/* s between two failure lines of one
				 * export, call and status (as refusals) */
#define WB_LOG_RPC NFS3_NSTATUSES /* the status slot of an RPC refusal */

struct wb_wait {
	enum wb_wait_kind kind;
	uint64_t off, len;
	uint32_t mark;			/* WB_WAIT_ALL: cfile_wb_mark */
	double deadline;
	wb_wait_fn fn;
	void *arg;
	struct wb_wait *prev, *next;
};

/* A client WRITE waiting for cache room (writeback_room_wait). */
struct wb_room {
	double since, deadline;
	wb_room_fn fn;
	void *arg;
	struct wb_room *prev, *next;
};

#define WB_CALL_MAGIC 0x57424341u	/* "WBCA" */

/* One upstream WRITE or COMMIT in flight, on the daemon's call list from
 * call_new to call_free. */
struct wb_call {
	uint32_t magic;			/* WB_CALL_MAGIC while live */
	bool commit;			/* a COMMIT (seq is its tag) */
	struct daemon *d;
	struct cfile *f;		/* reference */
	uint32_t seq;			/* run seq, or COMMIT tag */
	uint64_t off;			/* a WRITE's bytes: [off, off + len) */
	uint32_t len;
	struct wb_call *prev, *next;	/* the daemon's calls (wb->calls) */
};

/*
 * Write-back's state, owned by struct daemon (d->wb): made by
 * writeback_start, freed by writeback_stop. Loop thread.
 */
struct writeback {
	struct writeback_stats stats;	/* the room counters */
	struct writeback_stats by_export[NFS3_EXPORT_IDS]; /* by export id */
	/* The pacing of failure lines: by export id, then WRITE (0) or
	 * COMMIT (1), then status index (nfs3_status_index; WB_LOG_RPC). */
	struct ratelog fail_log[NFS3_EXPORT_IDS][2][NFS3_NSTATUSES + 1];
	struct wb_room *rooms;		/* oldest first */
	unsigned nrooms;		/* the length of rooms */
	bool waking;			/* room_wake or a first flush runs */
	struct event *tick;		/* the background tick, owned */
	struct wb_call *calls;		/* every WRITE and COMMIT in flight */
	uint8_t verf[NFS3_WRITEVERFSIZE]; /* the verifier clients see */
};

/* The per-export counters of f's export (id 0 when it has none). */
static struct writeback_stats *ex_stats(struct daemon *d, struct cfile *f)
{
	struct fstate *fs = fstate_find(f);

	return &d->wb->by_export[fs && fs->ex ? fs->ex->conf->id % NFS3_EXPORT_IDS : 0];
}

/* The live call a completion's arg names (aborts on anything else:
 * checkobj.h). */
static struct wb_call *call_of(void *arg)
{
	struct wb_call *call = arg;

	CHECK_OBJ(call, WB_CALL_MAGIC);
	return call;
}

static void call_free(struct daemon *d, struct wb_call *call);

/* Log write-back's failure of f (a WRITE of len bytes, or a COMMIT when
 * len is 0) with nfsstat3 status (0: refused at the RPC level), paced by
 * WB_LOG_INTERVAL per export, call and status. */
static void wb_log_failure(struct daemon *d, struct cfile *f, uint32_t len, uint32_t status)
{
	struct fstate *fs = fstate_find(f);
	const char *path = fs && fs->ex ? fs->ex->conf->path : "?";
	unsigned id = fs && fs->ex ? fs->ex->conf->id % NFS3_EXPORT_IDS : 0;
	unsigned si = status ? nfs3_status_index(status) : WB_LOG_RPC;
	struct ratelog *rl = &d->wb->fail_log[id][len == 0][si];
	double now = daemon_now();

	if (len && !status)
		ratelog_msg(rl, now, WB_LOG_INTERVAL, LOG_LEVEL_WARN,
			    "write-back to %s refused upstream at the RPC "
			    "level (credential): %u bytes reported as "
			    "NFS3ERR_ACCES to the file's next WRITE or COMMIT",
			    path, len);
	else if (len)
		ratelog_msg(rl, now, WB_LOG_INTERVAL, LOG_LEVEL_WARN,
			    "write-back to %s failed upstream with %s: %u "
			    "bytes not written, reported to the file's next "
			    "WRITE or COMMIT", path, nfs3_status_name(status),
			    len);
	else
		ratelog_msg(rl, now, WB_LOG_INTERVAL, LOG_LEVEL_WARN,
			    "upstream COMMIT of write-back to %s failed with "
			    "%s: %llu bytes stay uncommitted and are committed "
			    "again", path, nfs3_status_name(status),
			    (unsigned long long)cfile_wb_bytes(f, WB_UNSTABLE));
}


static void wb_pump(struct daemon *d, struct cfile *f);

const uint8_t *writeback_verf(const struct daemon *d)
{
	return d->wb->verf;
}

void writeback_set_verf(struct daemon *d, const uint8_t v[NFS3_WRITEVERFSIZE])
{
	memcpy(d->wb->verf, v, sizeof(d->wb->verf));
}

/* The verifier bytes as the cache's 64-bit number. */
static uint64_t verf64(const char *v)
{
	uint64_t x;

	memcpy(&x, v, sizeof(x));
	return x;
}

/* Bytes of f in state st written before mark. */
static uint64_t upto(const struct cfile *f, uint32_t mark,
		     enum cache_wb_state st)
{
	return cfile_wb_bytes_upto(f, mark, st);
}

/* True if a COMMIT waiter's bytes are all written, some uncommitted:
 * an upstream COMMIT now answers it, whatever else is being written. */
static bool commit_ripe(const struct fstate *fs, const struct cfile *f)
{
	const struct wb_wait *w;

	DL_FOREACH(fs->waits, w)
		if (w->kind == WB_WAIT_ALL && !upto(f, w->mark, WB_DIRTY) &&
		    !upto(f, w->mark, WB_WRITING) &&
		    upto(f, w->mark, WB_UNSTABLE))
			return true;
	return false;
}

/* Call and free the waiters of f whose condition holds (or all, with
 * force and status). */
static void waits_check(struct daemon *d, struct cfile *f, bool force,
			nfsstat3 status)
{
	struct fstate *fs = fstate_find(f);
	struct wb_wait *w, *tmp;
	uint32_t ps = cache_page_size(d->cache);
	double now = daemon_now();
	int err;

	if (!fs)
		return;
	DL_FOREACH_SAFE(fs->waits, w, tmp) {
		nfsstat3 st = status;
		bool done = force;

		if (!done && (err = cfile_wb_error_take(f)) != 0) {
			st = (nfsstat3)err;
			done = true;
		}
		if (!done) {
			switch (w->kind) {
			case WB_WAIT_RANGE:
				done = cfile_range_clean(f, w->off, w->len, ps);
				break;
			case WB_WAIT_ALL:
				done = !cfile_has_wb_upto(f, w->mark);
				break;
			case WB_WAIT_IDLE:
				done = !fs->wb_inflight && !fs->commit_tag;
				break;
			}
			st = NFS3_OK;
		}
		if (!done && now >= w->deadline) {
			d->wb->stats.waits_timed_out++;
			st = NFS3ERR_JUKEBOX;
			done = true;
		}
		if (!done)
			continue;
		DL_DELETE(fs->waits, w);
		w->fn(d, st, w->arg);
		free(w);
	}
	fs->stable = false;
	DL_FOREACH(fs->waits, w)
		if (w->kind == WB_WAIT_RANGE)
			fs->stable = true;
}

/* End room wait w (already off the list) with room, counting it. */
static void room_end(struct daemon *d, struct wb_room *w, bool room)
{
	d->wb->stats.room_waits++;
	d->wb->stats.room_timeouts += !room;
	d->wb->stats.room_wait_seconds += daemon_now() - w->since;
	w->fn(d, room, w->arg);
	free(w);
}

/* Wake room waiters while pages can be had, oldest first; each waiter
 * present now once (one that finds no room again waits anew). Not
 * re-entered from a waiter's callback. */
static void room_wake(struct daemon *d)
{
	unsigned n = d->wb->nrooms;

	if (d->wb->waking)
		return;
	d->wb->waking = true;
	while (n-- && d->wb->rooms && cache_has_room(d->cache)) {
		struct wb_room *w = d->wb->rooms;

		DL_DELETE(d->wb->rooms, w);
		d->wb->nrooms--;
		room_end(d, w, true);
	}
	d->wb->waking = false;
}

/* End the room waits past their deadline. */
static void room_expire(struct daemon *d, double now)
{
	struct wb_room *w, *tmp, *gone = NULL;

	DL_FOREACH_SAFE(d->wb->rooms, w, tmp) {
		if (now < w->deadline)
			continue;
		DL_DELETE(d->wb->rooms, w);
		d->wb->nrooms--;
		DL_APPEND(gone, w);
	}
	DL_FOREACH_SAFE(gone, w, tmp) {
		DL_DELETE(gone, w);
		room_end(d, w, false);
	}
}

/* After any completion on f: waiters, more work, maybe free the state.
 * Waiters first, so a waiter for an idle file (a truncating SETATTR) can
 * hold write-back before new WRITEs start. */
static void wb_settle(struct daemon *d, struct cfile *f)
{
	waits_check(d, f, false, NFS3_OK);
	wb_pump(d, f);
	waits_check(d, f, false, NFS3_OK);
	if (d->wb_hooks && d->wb_hooks->settle)
		d->wb_hooks->settle(d, f);
	fstate_release(d, f);
	if (d->wb->rooms)
		room_wake(d);
}

/* Close the own-mutation bracket of write-back WRITE call (res: its
 * reply, NULL if it failed); fetches of other bytes stay current
 * (cfile_wb_write_end). */
static void wb_mutated(struct daemon *d, struct cfile *f, struct fstate *fs,
		       const struct wb_call *call, const WRITE3res *res)
{
	struct cwcc pre_tmp;
	struct cattr post_tmp;
	const struct cwcc *pre = NULL;
	const struct cattr *post = NULL;

	if (res) {
		pre = attr_from_pre_op(&res->WRITE3res_u.resok.file_wcc.before, &pre_tmp);
		post = attr_from_post_op(&res->WRITE3res_u.resok.file_wcc.after, &post_tmp);
	}
	cfile_wb_write_end(d->cache, f, call->off, call->off + call->len, pre,
			   post, daemon_now(), daemon_ac(fs->ex, NF3REG));
}

/*
 * A write-back WRITE of f failed hard (an RPC-level refusal, or an error
 * status other than JUKEBOX) while f holds locally committed data: the
 * client was told it is stable, so it is kept and retried (lcommit.h),
 * except what a STALE file can no longer take (the journal keeps it).
 * True when handled here.
 */
static bool wb_failed_local(struct daemon *d, struct cfile *f,
			    const struct wb_call *call,
			    enum upstream_status status, const WRITE3res *res)
{
	int err = status == UPSTREAM_EPROTO ? NFS3ERR_ACCES
		  : res && res->status != NFS3_OK &&
				    res->status != NFS3ERR_JUKEBOX
			  ? (int)res->status : 0;
	bool keep;

	if (!err || !d->wb_hooks || !d->wb_hooks->failed ||
	    !d->wb_hooks->failed(d, f, err, &keep))
		return false;
	ex_stats(d, f)->errors++;
	cache_wb_done(d->cache, f, call->seq,
		      keep ? CACHE_WB_RETRY : CACHE_WB_FAILED, 0, err);
	return true;
}

/* An upstream WRITE of a run came back. */
static void wb_write_done(enum upstream_status status, void *decoded,
			  void *arg)
{
	struct wb_call *call = call_of(arg);
	struct daemon *d = call->d;
	struct cfile *f = call->f;
	struct fstate *fs = fstate_find(f);
	WRITE3res *res = NULL;

	if (status == UPSTREAM_OK)
		res = decoded;
	fs->wb_inflight--;
	fs->wb_inflight_bytes -= call->len;
	fs->last_write = daemon_now();
	wb_mutated(d, f, fs, call, res);
	if (wb_failed_local(d, f, call, status, res)) {
		/* Locally committed: kept, retried after a pause. */
	} else if (status == UPSTREAM_EPROTO) {
		/* The upstream will not take the writer's credential: a
		 * retry would meet the same refusal. Kept, and reported. */
		ex_stats(d, f)->errors++;
		wb_log_failure(d, f, call->len, 0);
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_FAILED, 0,
			      NFS3ERR_ACCES);
	} else if (!res || res->status == NFS3ERR_JUKEBOX) {
		/* "Try again later" (RFC 1813 s2.6): not at once. */
		if (res)
			fs->write_retry_at = daemon_now() + WB_RETRY_PAUSE;
		ex_stats(d, f)->retries++;
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_RETRY, 0, 0);
	} else if (res->status != NFS3_OK) {
		ex_stats(d, f)->errors++;
		wb_log_failure(d, f, call->len, (uint32_t)res->status);
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_FAILED, 0,
			      (int)res->status);
	} else if (res->WRITE3res_u.resok.count < call->len) {
		/* A short write: send it all again (rare; servers write all). */
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_RETRY, 0, 0);
	} else if (res->WRITE3res_u.resok.committed == UNSTABLE) {
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_UNSTABLE,
			      verf64(res->WRITE3res_u.resok.verf), 0);
	} else {
		cache_wb_done(d->cache, f, call->seq, CACHE_WB_STABLE, 0, 0);
	}
	wb_settle(d, f);
	call_free(d, call);
}

/* An upstream COMMIT came back. */
static void wb_commit_done(enum upstream_status status, void *decoded,
			   void *arg)
{
	struct wb_call *call = call_of(arg);
	struct daemon *d = call->d;
	struct cfile *f = call->f;
	struct fstate *fs = fstate_find(f);
	COMMIT3res *res = NULL;
	uint64_t again;

	if (status == UPSTREAM_OK)
		res = decoded;
	fs->commit_tag = 0;
	if (res && res->status == NFS3_OK) {
		again = cache_commit_done(d->cache, f, call->seq, true,
					  verf64(res->COMMIT3res_u.resok.verf));
		if (again)
			log_info("upstream write verifier changed: writing %llu bytes again",
				 (unsigned long long)again);
	} else {
		/* A refusal is worth a line; JUKEBOX or no answer is
		 * an outage of the upstream, not of this file. */
		if (res && res->status != NFS3ERR_JUKEBOX)
			wb_log_failure(d, f, 0, (uint32_t)res->status);
		fs->commit_retry_at = daemon_now() + WB_RETRY_PAUSE;
		cache_commit_done(d->cache, f, call->seq, false, 0);
	}
	wb_settle(d, f);
	call_free(d, call);
}

/* A new call record holding a reference to f. */
static struct wb_call *call_new(struct daemon *d, struct cfile *f)
{
	struct wb_call *call = calloc(1, sizeof(*call));
	size_t n;
	const uint8_t *fh = cfile_fh(f, &n);

	if (!call)
		return NULL;
	call->magic = WB_CALL_MAGIC;
	call->d = d;
	call->f = cache_find(d->cache, fh, n);
	DL_APPEND(d->wb->calls, call);
	return call;
}

/* Drop call's file reference, take it off the call list and free it. */
static void call_free(struct daemon *d, struct wb_call *call)
{
	cfile_put(d->cache, &call->f);
	DL_DELETE(d->wb->calls, call);
	call->magic = 0;
	free(call);
}

/* Send one run as an upstream WRITE. false if it could not be sent. */
static bool wb_send_run(struct daemon *d, struct cfile *f, struct fstate *fs,
			uint8_t *buf, const struct cache_wb_run *run)
{
	struct wb_call *call = call_new(d, f);
	char fh[CACHE_FH_MAX];
	const uint8_t *p;
	WRITE3args a;
	struct nfs_cred uc;
	size_t n;

	if (!call)
		return false;
	memset(&a, 0, sizeof(a));
	p = cfile_fh(f, &n);
	memcpy(fh, p, n);
	a.file.data.data_val = fh;
	a.file.data.data_len = (u_int)n;
	a.offset = run->off;
	a.count = run->len;
	a.stable = fs->stable ? FILE_SYNC : UNSTABLE;
	a.data.data_len = run->len;
	a.data.data_val = (char *)buf;
	uc = run->cred;			/* the run's writer */
	uc.machine = "nfscached";
	call->seq = run->seq;
	call->off = run->off;
	call->len = run->len;
	cfile_mutation_begin(f);
	if (upcall_send(&fs->ex->upc, NFSPROC3_WRITE,
			(xdrproc_t)xdr_WRITE3args, &a,
			(struct upcall_res){ (xdrproc_t)xdr_WRITE3res,
					     sizeof(WRITE3res) },
			&uc, wb_write_done, call) != 0) {
		cfile_mutation_end(d->cache, f, NULL, NULL, daemon_now(),
				   daemon_ac(fs->ex, NF3REG));
		cache_wb_done(d->cache, f, run->seq, CACHE_WB_RETRY, 0, 0);
		call_free(d, call);
		return false;
	}
	fs->wb_inflight++;
	fs->wb_inflight_bytes += run->len;
	fs->commit_cred = uc;
	fs->has_commit_cred = true;
	ex_stats(d, f)->writes++;
	ex_stats(d, f)->write_bytes += run->len;
	return true;
}

/* Send an upstream COMMIT for f's UNSTABLE bytes. */
static void wb_send_commit(struct daemon *d, struct cfile *f,
			   struct fstate *fs)
{
	struct wb_call *call;
	char fh[CACHE_FH_MAX];
	const uint8_t *p;
	COMMIT3args a;
	struct nfs_cred uc;
	size_t n;
	uint32_t tag;

	if (!fs->has_commit_cred || daemon_now() < fs->commit_retry_at ||
	    !(call = call_new(d, f)))
		return;
	tag = cache_commit_begin(d->cache, f);
	if (!tag) {
		call_free(d, call);
		return;
	}
	memset(&a, 0, sizeof(a));
	p = cfile_fh(f, &n);
	memcpy(fh, p, n);
	a.file.data.data_val = fh;
	a.file.data.data_len = (u_int)n;
	uc = fs->commit_cred;
	uc.machine = "nfscached";
	call->seq = tag;
	call->commit = true;
	if (upcall_send(&fs->ex->upc, NFSPROC3_COMMIT,
			(xdrproc_t)xdr_COMMIT3args, &a,
			(struct upcall_res){ (xdrproc_t)xdr_COMMIT3res,
					     sizeof(COMMIT3res) },
			&uc, wb_commit_done, call) != 0) {
		cache_commit_done(d->cache, f, tag, false, 0);
		call_free(d, call);
		return;
	}
	fs->commit_tag = tag;
	ex_stats(d, f)->commits++;
}

/* UNSTABLE bytes of one file past which it is COMMITted even while more
 * is being written: a writer that never stops would otherwise pin its
 * data for good, and pinned pages are room new writes cannot have. A
 * quarter of the smaller of dirty_limit (WB_DIRTY_AUTO_MAX when 0) and
 * cache_size, at least
 * WB_COMMIT_EARLY wtmax (fewer, larger COMMITs) unless that is more than
 * half the cache, so the COMMIT returns while the writer still finds
 * room. */
static uint64_t commit_early(const struct daemon *d, uint32_t wtmax)
{
	uint64_t dirty = (uint64_t)(d->conf->dirty_limit ? d->conf->dirty_limit
							: WB_DIRTY_AUTO_MAX) << 20;
	uint64_t cache = (uint64_t)d->conf->cache_size << 20;
	uint64_t quarter = (dirty < cache ? dirty : cache) / 4;
	uint64_t floor = WB_COMMIT_EARLY * (uint64_t)wtmax;

	if (floor > cache / 2)
		floor = cache / 2;
	return quarter > floor ? quarter : floor;
}

/* The largest upstream WRITE write-back sends, bytes: the upstream's
 * wtmax (already capped by max_transfer), at most writeback_wsize, as the
 * Linux client's wsize mount option caps its WRITEs. Not simply wtmax:
 * the benchmark's NFS-Ganesha spent 3.5 CPU-seconds writing 625 MiB
 * received in 1 MiB WRITEs against 0.9 in 256 KiB ones (the same bytes,
 * direct from the load generator: 220 vs 364 MB/s), and on two CPUs
 * that time is the proxy's. */
static uint32_t wb_wsize(const struct daemon *d, uint32_t wtmax)
{
	uint32_t ws = d->conf->writeback_wsize;

	return ws && ws < wtmax ? ws : wtmax;
}

/* Push f's write-back as far as it can go now. */
static void wb_pump(struct daemon *d, struct cfile *f)
{
	struct fstate *fs = fstate_find(f);
	uint32_t wtmax, wsize;
	uint8_t *buf;
	struct cache_wb_run run;
	bool keep_tail;

	if (!fs || !fs->ex || fs->hold ||
	    upcall_state(&fs->ex->upc) != UPSTREAM_UP ||
	    (d->wb_hooks && d->wb_hooks->backoff &&
	     d->wb_hooks->backoff(f, daemon_now())))
		return;
	wtmax = upcall_wtmax(&fs->ex->upc);
	if (!wtmax)
		return;
	wsize = wb_wsize(d, wtmax);
	buf = malloc(wsize);
	if (!buf)
		return;
	/* In the background, the growing tail of a file being appended to
	 * waits for more, so upstream WRITEs stay wsize-sized; a waiting
	 * client, the stop, or a quiet file take everything. */
	keep_tail = !fs->waits && !d->stopping && !d->wb->rooms &&
		    daemon_now() - fs->last_absorb < d->conf->writeback_delay;
	while (daemon_now() >= fs->write_retry_at &&
	       fs->wb_inflight < WB_INFLIGHT &&
	       fs->wb_inflight_bytes + wsize <= WB_INFLIGHT_WTMAX * (uint64_t)wtmax &&
	       cache_wb_next_ex(d->cache, f, wsize, keep_tail, buf, &run))
		if (!wb_send_run(d, f, fs, buf, &run))
			break;
	free(buf);
	/* COMMIT once the file's writing is done, or, for a file that keeps
	 * getting new data, once enough is written but uncommitted (only
	 * the UNSTABLE bytes at send time are settled by it). */
	if (fs->want_commit && !fs->commit_tag &&
	    cfile_wb_bytes(f, WB_UNSTABLE) &&
	    ((!fs->wb_inflight && !cfile_wb_bytes(f, WB_DIRTY)) ||
	     cfile_wb_bytes(f, WB_UNSTABLE) >= commit_early(d, wtmax)) &&
	    (d->stopping || daemon_now() - fs->last_write >=
				    d->conf->writeback_commit_delay))
		wb_send_commit(d, f, fs);
	/* A client's COMMIT waits only for the bytes written before it
	 * came (RFC 1813 section 3.3.21), not for the file to go quiet. */
	if (!fs->commit_tag && commit_ripe(fs, f) &&
	    (d->stopping || daemon_now() - fs->last_write >=
				    d->conf->writeback_commit_delay))
		wb_send_commit(d, f, fs);
	/* Writers wait for room: only COMMITs unpin pages, so one is
	 * always in flight while there is something to commit. */
	if (d->wb->rooms && !fs->commit_tag && cfile_wb_bytes(f, WB_UNSTABLE))
		wb_send_commit(d, f, fs);
	if (!cfile_has_wb(f))
		fs->want_commit = false;
}

void writeback_kick(struct daemon *d, struct cfile *f, struct export_rt *ex,
		    bool want_commit)
{
	struct fstate *fs = fstate_get(d, f, ex);

	if (!fs)
		return;
	if (want_commit)
		fs->want_commit = true;
	wb_settle(d, f);
}

int writeback_room_wait(struct daemon *d, double deadline, wb_room_fn fn,
			void *arg)
{
	struct wb_room *w = calloc(1, sizeof(*w));
	bool first = !d->wb->rooms;

	if (!w)
		return -1;
	w->since = daemon_now();
	w->deadline = deadline;
	w->fn = fn;
	w->arg = arg;
	DL_APPEND(d->wb->rooms, w);
	d->wb->nrooms++;
	if (first && !d->wb->waking) {
		d->wb->waking = true;	/* fn must not run before we return */
		writeback_flush_all(d);
		d->wb->waking = false;
	}
	return 0;
}

int writeback_wait(struct daemon *d, struct cfile *f, struct export_rt *ex,
		   enum wb_wait_kind kind, uint64_t off, uint64_t len,
		   wb_wait_fn fn, void *arg)
{
	struct fstate *fs = fstate_get(d, f, ex);
	struct wb_wait *w = calloc(1, sizeof(*w));

	if (!fs || !w) {
		free(w);
		return -1;
	}
	w->kind = kind;
	w->off = off;
	w->len = len;
	if (kind == WB_WAIT_ALL)
		w->mark = cfile_wb_mark(f);
	w->deadline = daemon_now() + d->conf->upstream_timeout;
	w->fn = fn;
	w->arg = arg;
	DL_APPEND(fs->waits, w);
	if (kind == WB_WAIT_RANGE)
		fs->stable = true;
	if (kind != WB_WAIT_IDLE)
		fs->want_commit = kind == WB_WAIT_ALL || fs->want_commit;
	wb_settle(d, f);
	return 0;
}

/* Whether f's dirty data is due in the background at now. */
static bool wb_due(const struct daemon *d, struct cfile *f, double now,
		   bool over_limit)
{
	if (over_limit)
		return true;
	if (cfile_wb_bytes(f, WB_DIRTY) &&
	    now - cfile_dirty_since(f) >= d->conf->writeback_delay)
		return true;
	/* Written but not committed: commit once the data is quiet. */
	return !cfile_wb_bytes(f, WB_DIRTY) && cfile_wb_bytes(f, WB_UNSTABLE);
}

/*
 * Dirty (and WRITING) bytes past which write-back starts at once:
 * dirty_limit as given, or with dirty_limit = 0 (the default) the smaller
 * of WB_DIRTY_AUTO_MAX and a quarter of cache_size, as the kernel starts
 * background write-back at dirty_background_ratio of memory (or at
 * dirty_background_bytes when that is set). The old fixed 256 MiB let a
 * cache no larger than it fill with dirty data before any write-back
 * began, and then every writer waited for room while the first
 * write-back and COMMIT drained it (W3 at 0 ms with the benchmark's
 * 256 MiB cache: 36-52 WRITEs waited 0.8-1.4 s in all; with a quarter,
 * none did).
 */
static uint64_t dirty_threshold(const struct daemon *d)
{
	uint64_t quarter = ((uint64_t)d->conf->cache_size << 20) / 4;
	uint64_t auto_max = (uint64_t)WB_DIRTY_AUTO_MAX << 20;

	if (d->conf->dirty_limit)
		return (uint64_t)d->conf->dirty_limit << 20;
	return quarter && quarter < auto_max ? quarter : auto_max;
}

/* Background tick: write-behind, dirty limit, waiter deadlines. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct timeval tv = { 0, WB_TICK_US };
	double now = daemon_now();
	uint64_t limit = dirty_threshold(d);
	struct cfile *f, *next;

	(void)fd;
	(void)what;
	for (f = cache_wb_file_first(d->cache); f; f = next) {
		bool over = cache_wb_bytes(d->cache, WB_DIRTY) +
			    cache_wb_bytes(d->cache, WB_WRITING) > limit;
		struct fstate *fs = fstate_find(f);

		next = cache_wb_file_next(d->cache, f);
		if (!fs)
			continue;
		if (wb_due(d, f, now, over) || d->stopping || d->wb->rooms)
			fs->want_commit = true;
		else if (!fs->waits)
			continue;
		wb_settle(d, f);
	}
	if (d->wb->rooms)
		room_expire(d, now);
	if (d->wb_hooks && d->wb_hooks->tick)
		d->wb_hooks->tick(d);
	mclock_timer_add(d->wb->tick, &tv);
}

int writeback_start(struct daemon *d)
{
	struct timeval tv = { 0, WB_TICK_US };

	d->wb = calloc(1, sizeof(*d->wb));
	if (!d->wb)
		return -1;
	if (RAND_bytes(d->wb->verf, sizeof(d->wb->verf)) != 1)
		return -1;
	d->wb->tick = evtimer_new(d->base, tick_cb, d);
	if (!d->wb->tick)
		return -1;
	mclock_timer_add(d->wb->tick, &tv);
	return 0;
}

void writeback_stop(struct daemon *d)
{
	struct wb_room *w, *tmp;

	if (!d->wb)
		return;
	DL_FOREACH_SAFE(d->wb->rooms, w, tmp) {
		DL_DELETE(d->wb->rooms, w);
		free(w);
	}
	if (d->wb->tick)
		event_free(d->wb->tick);
	free(d->wb);
	d->wb = NULL;
}

void writeback_flush_all(struct daemon *d)
{
	struct cfile *f, *next;

	for (f = cache_wb_file_first(d->cache); f; f = next) {
		struct fstate *fs = fstate_find(f);

		next = cache_wb_file_next(d->cache, f);
		if (fs) {
			fs->want_commit = true;
			wb_settle(d, f);
		}
	}
}

bool writeback_clean(const struct daemon *d)
{
	return !cache_wb_bytes(d->cache, WB_DIRTY) &&
	       !cache_wb_bytes(d->cache, WB_WRITING) &&
	       !cache_wb_bytes(d->cache, WB_UNSTABLE);
}

struct wb_wait *writeback_wait_unlink(struct wb_wait *w)
{
	struct wb_wait *next = w->next;

	free(w);
	return next;
}

void writeback_stats_get(const struct daemon *d, struct writeback_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d->wb)
		return;
	*st = d->wb->stats;
	for (unsigned id = 0; id < NFS3_EXPORT_IDS; id++) {
#define X(t, f, k, n, h) st->f += d->wb->by_export[id].f;
		WRITEBACK_EXPORT_METRICS(X, )
#undef X
	}
}

void writeback_stats_export(const struct daemon *d, unsigned id,
			    struct writeback_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d->wb)
		return;
#define X(t, f, k, n, h) st->f = d->wb->by_export[id % NFS3_EXPORT_IDS].f;
	WRITEBACK_EXPORT_METRICS(X, )
#undef X
}

double writeback_oldest_dirty_age(struct daemon *d, double now)
{
	double oldest = now;

	if (!d->cache)
		return 0;
	for (struct cfile *f = cache_wb_file_first(d->cache); f;
	     f = cache_wb_file_next(d->cache, f)) {
		double since = cfile_wb_since(f);

		if (since > 0 && since < oldest)
			oldest = since;
	}
	return now - oldest;
}

/* Of the calls on d's list for file f: WRITEs, their bytes, COMMITs and
 * the last COMMIT's tag. */
struct wb_calls_of {
	uint32_t writes, commits, tag;
	uint64_t bytes;
};

static struct wb_calls_of calls_of(const struct writeback *wb,
				   const struct cfile *f)
{
	struct wb_calls_of n = { 0, 0, 0, 0 };
	const struct wb_call *c;

	DL_FOREACH(wb->calls, c) {
		if (c->f != f)
			continue;
		if (c->commit) {
			n.commits++;
			n.tag = c->seq;
		} else {
			n.writes++;
			n.bytes += c->len;
		}
	}
	return n;
}

/* What the file's state says against the calls in flight for it; NULL
 * when they agree. */
static const char *file_check_why(const struct fstate *fs,
				  struct wb_calls_of n)
{
	if (n.writes != fs->wb_inflight)
		return "write-back: a file's wb_inflight is not the number of "
		       "its upstream WRITEs in flight";
	if (n.bytes != fs->wb_inflight_bytes)
		return "write-back: a file's wb_inflight_bytes is not the sum "
		       "of its upstream WRITEs in flight";
	if (n.commits > 1)
		return "write-back: a file has two upstream COMMITs in flight";
	if (n.commits ? fs->commit_tag != n.tag : fs->commit_tag != 0)
		return "write-back: a file's commit_tag is not the tag of its "
		       "upstream COMMIT in flight (0 without one)";
	return NULL;
}

const char *writeback_check_why(struct daemon *d)
{
	const struct writeback *wb = d->wb;
	const struct wb_room *r;
	const struct wb_call *c;
	const char *why;
	unsigned n = 0;

	if (!wb)
		return NULL;
	DL_FOREACH(wb->rooms, r)
		n++;
	if (n != wb->nrooms)
		return "write-back: nrooms is not the length of the room list";
	DL_FOREACH(wb->calls, c) {
		const struct fstate *fs;

		if (c->magic != WB_CALL_MAGIC)
			return "write-back: a call on the list is not live "
			       "(magic)";
		if (!(fs = fstate_find(c->f)))
			return "write-back: a file with an upstream WRITE or "
			       "COMMIT in flight has no state";
		if ((why = file_check_why(fs, calls_of(wb, c->f))))
			return why;
	}
	/* The other way: a file counting calls that are not in flight. */
	for (struct cfile *f = cache_wb_file_first(d->cache); f;
	     f = cache_wb_file_next(d->cache, f)) {
		const struct fstate *fs = fstate_find(f);

		if (fs && (why = file_check_why(fs, calls_of(wb, f))))
			return why;
	}
	return NULL;
}
