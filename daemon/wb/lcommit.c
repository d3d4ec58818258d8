/* SPDX-License-Identifier: MIT */
/*
 * lcommit: see lcommit.h. A record is: struct lc_hdr, next struct
 * lc_ext, then the extents' bytes in order. Its key is the page's disk
 * key (upstream handle, page index) and a sequence number, unique and
 * increasing across runs (next_seq). A page holds one full record (all
 * of the page's write-back bytes when it was written) or none, then
 * delta records (only bytes written since the previous record): replayed
 * in sequence order they give the page's write-back bytes. A delta costs
 * what the client wrote; once a page's deltas since its full record
 * would outgrow a new full record, a full record replaces them all in
 * one transaction, so the journal holds at most about twice a page's
 * write-back bytes and writes about twice what clients wrote.
 *
 * Invariants: a page index is in fstate.lc_pages iff this run put a
 * record for it (or installed one at start) and has not deleted its
 * records, and then lc_map holds its entry; lc_stale holds the bytes
 * (file offsets) a client wrote since they were last journaled, so every
 * byte acknowledged to a client of a local export is in a record, in
 * lc_stale, or stable upstream (when a note was lost, lc_lost is set and
 * the file's COMMITs wait for the upstream instead); lc_syncs counts the syncs in flight,
 * each holding a file reference. A page's records are deleted only when
 * the page holds no write-back bytes (every byte in it is stable
 * upstream).
 *
 * The journal never rolls back acknowledged data: a record is superseded
 * by any later acknowledgement of its bytes, whatever path made it, and a
 * start replays only records that are not superseded. While the tier is
 * on, superseded records are deleted (above). Once it is off (fence.st
 * not NONE) they cannot be, so a fence (lcommit_fence.h) covers them:
 * fence.fz.hi is the highest sequence put (no put follows: the journal
 * refuses them), fence.tracked counts the lc_map entries of every file
 * (a page is forgotten once it holds no write-back bytes), and the fence
 * is written when that reaches 0. Every COMMIT or FILE_SYNC WRITE
 * answered the upstream way meanwhile is answered NFS3_OK only once the
 * fence is durable (lcommit_upstream_wait), else NFS3ERR_JUKEBOX. Files
 * whose records are kept rather than superseded (STALE, not installed at
 * start) are listed in the fence and never covered. next_seq is above
 * the start's fence, so a new record is never covered.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/rand.h>
#include <uthash.h>
#include <xxhash.h>

#include "daemon.h"
#include "disk.h"
#include "disk_tier.h"
#include "fstate.h"
#include "lcommit.h"
#include "lcommit_fence.h"
#include "log.h"
#include "ratelog.h"
#include "nfs3_status.h"
#include "writeback.h"

#define LC_MAGIC	0x3152434cu	/* "LCR1" */
#define LC_MAX_EXT	256		/* extents one record holds */
#define LCOMMIT_RETRY	5.0		/* seconds between retries of a
					 * failed write-back of local data */
#define LC_VERF_KEY	"writeverf"
#define LC_ID_KEY	"journal_id"	/* the journal's identity (fences) */

struct lc_hdr {
	uint32_t magic;
	uint32_t export_id;
	uint64_t offset;		/* the page's first byte in the file */
	uint32_t page_size;
	uint32_t next;			/* extents */
	uint64_t checksum;		/* XXH3-64 of the record, this 0 */
	struct cattr attr;		/* the file as clients saw it */
};

struct lc_ext {
	uint32_t off, len;		/* page-relative */
	uint32_t uid, gid, ngids;
	uint32_t gids[NFS_CRED_MAX_GIDS];
};

/* The verifier as kept in the meta database. */
struct lc_verf {
	uint8_t verf[NFS3_WRITEVERFSIZE];
	uint8_t clean;			/* 1: reusable at the next start */
};

/* What the journal holds for one page of a file (fstate.lc_map). */
struct lc_page {
	uint64_t idx;			/* the page index, the hash key */
	uint64_t since;			/* bytes of delta records since its
					 * full record (UINT64_MAX: unknown,
					 * the next record is full) */
	UT_hash_handle hh;
};

struct lc_sync {
	struct daemon *d;
	struct cfile *f;		/* reference */
	lcommit_fn *fn;
	void *arg;
};

#define LCOMMIT_LOG_INTERVAL 10.0	/* seconds between such lines */

/* A COMMIT or FILE_SYNC WRITE whose bytes are stable upstream, waiting
 * for the fence (lcommit_upstream_wait). */
struct lc_waiter {
	struct daemon *d;
	wb_wait_fn fn;
	void *arg;
	double since;			/* daemon_now() when it began to wait */
	struct lc_waiter *next;
};

/* The fence of this run (lcommit_fence.h). NONE while the journal can
 * delete; PENDING from the moment it cannot (the tier turned off) until
 * no page of this run's records holds write-back bytes; WRITING while
 * its thread writes it; then DURABLE once in cache_dir or state_dir, or
 * FAILED (retried every LCOMMIT_RETRY seconds). DURABLE also when the
 * tier turned off with nothing journaled. */
enum lc_fence_state { LCF_NONE, LCF_PENDING, LCF_WRITING, LCF_DURABLE,
		      LCF_FAILED };

struct lc_fence_job;

/* The fence's state (struct lcommit.fence). */
struct lc_fence {
	enum lc_fence_state st;
	struct lcommit_fence fz;	/* id, hi and the files left out */
	bool overflow;			/* more files to leave out than fit */
	uint64_t tracked;		/* lc_map entries of every file */
	double retry_at;		/* FAILED: the next try */
	bool fail_logged;		/* the failure's one log line */
	struct lc_waiter *waiters;	/* owned, answered once each */
	struct lc_fence_job *job;	/* WRITING: the thread's job, owned */
	pthread_t thread;
	int efd;			/* the thread's eventfd (-1: none) */
	struct event *ev;		/* on it, in the loop; owned */
};

/*
 * Local commit's state: one per daemon (d->lcommit), made by
 * lcommit_new in daemon_start's core (zeroed: a fresh daemon starts at
 * zero, its sequence numbers at 1, no fence) and freed by lcommit_free
 * in daemon_stop, whether or not lcommit_stop ran (a SIGKILL-like test
 * stops without it: nothing here touches the journal then). Loop thread
 * only; the fence's thread works on a copy (struct lc_fence_job).
 */
struct lcommit {
	struct lcommit_stats stats;
	/* The pacing of write-back failure lines, one per cause. */
	struct ratelog fail_log[LC_NCAUSES];
	/* Journal rewrites and deletions queued this run
	 * (lcommit_rewrites). */
	uint64_t rewrites_queued;
	uint64_t next_seq;		/* the next record's sequence number */
	uint64_t first_seq;		/* next_seq when this run began */
	uint64_t pages_held;		/* pages with records in the journal:
					 * the lc_map entries made (records
					 * kept at start or after STALE stay
					 * counted) */
	/* The fence found at start (fence.fz.hi is its hi until this run's
	 * own fence is due). */
	struct lcommit_fence start_fence;
	struct lc_fence fence;		/* this run's */
};

/* The journal when it can take records now. */
static struct disk *journal(const struct daemon *d)
{
	struct disk *dk = disk_tier_disk(d);

	return dk && disk_on(dk) ? dk : NULL;
}

bool lcommit_on(const struct daemon *d, const struct export_rt *ex)
{
	struct lcommit *lc = d->lcommit;
	struct disk *dk = journal(d);
	struct disk_stats st;
	uint64_t ps = d->conf->page_size;

	if (!ex || !ex->conf || !conf_commit_local(ex->conf))
		return false;
	if (!dk) {
		lc->stats.fallbacks++;	/* the journal cannot take it */
		return false;
	}
	disk_stats_get(dk, &st);
	if (st.journal_bytes < ((uint64_t)d->conf->disk_dirty_limit << 20) &&
	    (lc->pages_held + 1) * ps <=
	    ((uint64_t)d->conf->cache_size << 20) / 2)
		return true;
	lc->stats.fallbacks++;	/* at the bound: the caller waits upstream */
	return false;
}

void lcommit_note_write(struct cfile *f, uint64_t off, uint64_t len)
{
	struct fstate *fs = fstate_find(f);

	/* Noted for every export: a reload may make this one local before
	 * these bytes are COMMITted, and its next COMMIT must journal them.
	 * The note goes with the file's write-back bytes (lcommit_settle). */
	if (fs && len && rangeset_add(&fs->lc_stale, off, off + len) != 0) {
		/* The next COMMITs of f wait for the upstream instead. */
		fs->lc_lost = true;
		log_warn("local commit: out of memory noting a write");
	}
}

/* Encode a record of page idx of f with the n extents ext, their bytes
 * at the same offsets of page, into buf (room for the largest); its
 * length. */
static size_t rec_encode(struct cfile *f, struct export_rt *ex, uint64_t idx,
			 uint32_t ps, const struct cache_wb_extent *ext,
			 size_t n, const uint8_t *page, uint8_t *buf)
{
	struct lc_hdr *h = (struct lc_hdr *)buf;
	struct lc_ext *x = (struct lc_ext *)(h + 1);
	uint8_t *p = (uint8_t *)(x + n);

	memset(h, 0, sizeof(*h));
	h->magic = LC_MAGIC;
	h->export_id = ex->conf->id;
	h->offset = idx * ps;
	h->page_size = ps;
	h->next = (uint32_t)n;
	h->attr = *cfile_attr(f);
	for (size_t i = 0; i < n; i++) {
		memset(&x[i], 0, sizeof(x[i]));
		x[i].off = ext[i].off;
		x[i].len = ext[i].len;
		x[i].uid = ext[i].cred.uid;
		x[i].gid = ext[i].cred.gid;
		x[i].ngids = ext[i].cred.ngids;
		memcpy(x[i].gids, ext[i].cred.gids, sizeof(x[i].gids));
		memcpy(p, page + ext[i].off, ext[i].len);
		p += ext[i].len;
	}
	h->checksum = XXH3_64bits(buf, (size_t)(p - buf));
	return (size_t)(p - buf);
}

/* The bytes a record of these n extents takes. */
static uint64_t rec_size(const struct cache_wb_extent *ext, size_t n)
{
	uint64_t b = sizeof(struct lc_hdr) + n * sizeof(struct lc_ext);

	for (size_t i = 0; i < n; i++)
		b += ext[i].len;
	return b;
}

/*
 * The extents of ext[0..n) within the stale bytes of f's page idx (file
 * offsets [pstart, pstart + ps)) into out (room for max); their number,
 * or max + 1 when they do not fit or the stale ranges cannot all be
 * read at once (the caller then writes a full record). *stale: how many
 * stale bytes the page has.
 */
static size_t delta_extents(const struct fstate *fs, uint64_t pstart,
			    uint32_t ps, const struct cache_wb_extent *ext,
			    size_t n, struct cache_wb_extent *out, size_t max,
			    uint64_t *stale)
{
	struct range r[64];
	size_t nr = rangeset_ranges_in(&fs->lc_stale, pstart, pstart + ps, r, 64);
	size_t m = 0;

	*stale = 0;
	if (nr >= 64)
		return max + 1;
	for (size_t j = 0; j < nr; j++)
		*stale += r[j].end - r[j].start;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < nr; j++) {
			uint64_t lo = r[j].start - pstart, hi = r[j].end - pstart;
			uint64_t s0 = ext[i].off, e0 = s0 + ext[i].len;

			if (lo < s0)
				lo = s0;
			if (hi > e0)
				hi = e0;
			if (lo >= hi)
				continue;
			if (m == max)
				return max + 1;
			out[m] = ext[i];
			out[m].off = (uint32_t)lo;
			out[m].len = (uint32_t)(hi - lo);
			m++;
		}
	}
	return m;
}

/* The journal state of page idx of fs, created (since unknown) if
 * absent and counted in lc; NULL on ENOMEM. */
static struct lc_page *page_state(struct lcommit *lc, struct fstate *fs,
				  uint64_t idx)
{
	struct lc_page *pm;

	HASH_FIND(hh, fs->lc_map, &idx, sizeof(idx), pm);
	if (pm)
		return pm;
	if (!(pm = calloc(1, sizeof(*pm))))
		return NULL;
	pm->idx = idx;
	pm->since = UINT64_MAX;
	HASH_ADD(hh, fs->lc_map, idx, sizeof(pm->idx), pm);
	lc->pages_held++;
	lc->fence.tracked++;
	return pm;
}

/* Forget page idx's journal state (its records were deleted). */
static void page_forget(struct lcommit *lc, struct fstate *fs, uint64_t idx)
{
	struct lc_page *pm;

	HASH_FIND(hh, fs->lc_map, &idx, sizeof(idx), pm);
	if (pm) {
		HASH_DEL(fs->lc_map, pm);
		free(pm);
		lc->pages_held--;
		lc->fence.tracked--;
	}
	rangeset_remove(&fs->lc_pages, idx, idx + 1);
}

/* Forget every page's journal state (the records stay on disk). */
static void untrack(struct lcommit *lc, struct fstate *fs)
{
	struct lc_page *pm, *tmp;

	HASH_ITER(hh, fs->lc_map, pm, tmp) {
		HASH_DEL(fs->lc_map, pm);
		free(pm);
		lc->fence.tracked--;
	}
	rangeset_clear(&fs->lc_pages);
}

/* Scratch space for journaling one page. */
struct lc_buf {
	uint8_t *rec;			/* the largest record */
	struct cache_wb_extent ext[LC_MAX_EXT + 1];
	struct cache_wb_extent delta[LC_MAX_EXT + 1];
};

/*
 * Journal page idx of f: a delta record of its bytes written since they
 * were last journaled, or a full record replacing the page's others when
 * the deltas would outgrow one, the page has none yet, force is set, or
 * some bytes written since are stable upstream already (an older record
 * may hold older bytes there: only a full record, which leaves them out,
 * keeps a replay from writing them back); its records are deleted when
 * it holds no write-back bytes. 0, or -1 when the journal refused it.
 */
static int page_journal(struct daemon *d, struct cfile *f, struct fstate *fs,
			uint64_t idx, struct lc_buf *b, bool force)
{
	struct lcommit *lc = d->lcommit;
	struct disk *dk = journal(d);
	uint32_t ps = cache_page_size(d->cache);
	bool tracked = rangeset_contains(&fs->lc_pages, idx, idx + 1);
	const uint8_t *page;
	struct disk_key k;
	struct lc_page *pm;
	size_t n, m;
	uint64_t full, delta, stale, dbytes = 0;
	bool whole;
	size_t len;

	if (!dk || !disk_tier_key(f, idx, &k))
		return -1;
	n = cfile_page_wb(d->cache, f, idx, NULL, b->ext, LC_MAX_EXT);
	if (n > LC_MAX_EXT)
		return -1;
	if (n == 0) {
		if (!tracked)
			return 0;
		if (disk_journal_del(dk, &k) != 0)
			return -1;
		page_forget(lc, fs, idx);
		return 0;
	}
	m = delta_extents(fs, idx * ps, ps, b->ext, n, b->delta, LC_MAX_EXT,
			  &stale);
	for (size_t i = 0; i < m && m <= LC_MAX_EXT; i++)
		dbytes += b->delta[i].len;
	/* Nothing new to keep, and no record that could hold older bytes
	 * than the page now has. */
	if (!force && (!tracked || stale == 0) && m == 0)
		return 0;
	if (!(pm = page_state(lc, fs, idx)))
		return -1;
	full = rec_size(b->ext, n);
	delta = m <= LC_MAX_EXT ? rec_size(b->delta, m) : UINT64_MAX;
	whole = force || !tracked || pm->since == UINT64_MAX ||
		delta == UINT64_MAX || pm->since + delta > full ||
		dbytes < stale;
	page = cfile_page_bytes(f, idx);
	len = whole ? rec_encode(f, fs->ex, idx, ps, b->ext, n, page, b->rec)
		    : rec_encode(f, fs->ex, idx, ps, b->delta, m, page, b->rec);
	if (disk_journal_put(dk, &k, lc->next_seq, whole, b->rec, len) != 0 ||
	    rangeset_add(&fs->lc_pages, idx, idx + 1) != 0) {
		if (!rangeset_contains(&fs->lc_pages, idx, idx + 1))
			page_forget(lc, fs, idx);	/* lc_map == lc_pages */
		return -1;
	}
	lc->next_seq++;
	pm->since = whole ? 0 : pm->since + delta;
	lc->stats.records_written++;
	lc->stats.bytes_written += len;
	return 0;
}

/* A page's journal scratch space: NULL on ENOMEM. */
static struct lc_buf *buf_new(uint32_t ps)
{
	struct lc_buf *b = calloc(1, sizeof(*b));

	if (b && !(b->rec = malloc(sizeof(struct lc_hdr) +
				   LC_MAX_EXT * sizeof(struct lc_ext) + ps))) {
		free(b);
		b = NULL;
	}
	return b;
}

static void buf_free(struct lc_buf *b)
{
	if (b)
		free(b->rec);
	free(b);
}

/* Journal the stale bytes of f in pages [first, end). 0 or -1. */
static int stale_journal(struct daemon *d, struct cfile *f, struct fstate *fs,
			 uint64_t first, uint64_t end)
{
	uint32_t ps = cache_page_size(d->cache);
	uint64_t lo = first * ps, hi = end > UINT64_MAX / ps ? UINT64_MAX : end * ps;
	struct lc_buf *b = buf_new(ps);
	struct range r[64];
	uint64_t done = lo;
	int rc = b ? 0 : -1;

	if (fs->lc_lost)
		rc = -1;	/* a write's note was lost: wait upstream */
	/* Page by page, each once: the stale bytes of a page are cleared
	 * only after its record is queued. */
	while (rc == 0 && rangeset_ranges_in(&fs->lc_stale, done, hi, r, 64) > 0) {
		uint64_t idx = r[0].start / ps;

		rc = page_journal(d, f, fs, idx, b, false);
		if (rc == 0)
			rc = rangeset_remove(&fs->lc_stale, idx * ps,
					     (idx + 1) * ps);
		done = (idx + 1) * ps;
	}
	buf_free(b);
	return rc;
}

void lcommit_rewrite(struct daemon *d, struct cfile *f, uint64_t off,
		     uint64_t len)
{
	struct fstate *fs = fstate_find(f);
	uint32_t ps = cache_page_size(d->cache);
	uint64_t first = off / ps;
	uint64_t end = len ? (off + len - 1) / ps + 1 : UINT64_MAX;
	struct lc_buf *b;
	struct range r[64];

	if (!fs || !fs->lc_pages.n || !journal(d))
		return;
	if (!(b = buf_new(ps))) {
		log_error("local commit: out of memory rewriting the journal "
			  "of a changed file");
		return;
	}
	/* Each recorded page in the window: a full record of what it holds
	 * now, or no record when it holds no write-back bytes. */
	for (uint64_t from = first;
	     rangeset_ranges_in(&fs->lc_pages, from, end, r, 64) > 0;) {
		uint64_t idx = r[0].start;

		d->lcommit->rewrites_queued++;
		if (page_journal(d, f, fs, idx, b, true) != 0)
			log_error("local commit: cannot rewrite the journal "
				  "record of page %" PRIu64 "; a restart may "
				  "replay older bytes there", idx);
		from = idx + 1;
	}
	buf_free(b);
}

static void fence_check(struct daemon *d);
static void tier_check(struct daemon *d);

/* The journal's sync for one lcommit_sync came back. */
static void sync_done(void *arg, bool durable)
{
	struct lc_sync *s = arg;
	struct fstate *fs = fstate_find(s->f);

	if (fs)
		fs->lc_syncs--;
	if (!durable) {
		s->d->lcommit->stats.fallbacks++;
		tier_check(s->d);
	}
	s->fn(s->d, durable, s->arg);
	if (fs)
		fstate_release(s->d, s->f);
	cfile_put(s->d->cache, &s->f);
	free(s);
}

int lcommit_sync(struct daemon *d, struct cfile *f, struct export_rt *ex,
		 uint64_t off, uint64_t len, lcommit_fn *fn, void *arg)
{
	struct lcommit_stats *st = &d->lcommit->stats;
	uint64_t ps = d->conf->page_size;
	struct fstate *fs = fstate_get(d, f, ex);
	struct disk *dk = journal(d);
	struct lc_sync *s;
	size_t n;
	const uint8_t *fh;

	if (!fs || !dk || !(s = calloc(1, sizeof(*s)))) {
		st->fallbacks++;
		return -1;
	}
	if (stale_journal(d, f, fs, len ? off / ps : 0,
			  len ? (off + len - 1) / ps + 1 : UINT64_MAX) != 0) {
		/* What was queued stays correct (each record is a page's
		 * whole state); the caller waits for the upstream. */
		free(s);
		st->fallbacks++;
		return -1;
	}
	fh = cfile_fh(f, &n);
	s->d = d;
	s->f = cache_find(d->cache, fh, n);
	s->fn = fn;
	s->arg = arg;
	if (disk_journal_sync(dk, sync_done, s) != 0) {
		cfile_put(d->cache, &s->f);
		free(s);
		st->fallbacks++;
		return -1;
	}
	fs->lc_syncs++;
	return 0;
}


/* Page idx of f holds no write-back bytes: delete its records, or, when
 * the journal cannot delete any more, only forget them (the fence will
 * cover them: their bytes are stable upstream now). */
static void settle_page(struct lcommit *lc, struct disk *dk, struct cfile *f,
			struct fstate *fs, uint64_t idx)
{
	struct disk_key k;

	if (!disk_tier_key(f, idx, &k))
		return;
	if (dk && disk_journal_del(dk, &k) == 0) {
		lc->rewrites_queued++;
		page_forget(lc, fs, idx);
	} else if (lc->fence.st != LCF_NONE) {
		page_forget(lc, fs, idx);
	}
}

uint64_t lcommit_rewrites(const struct daemon *d)
{
	return d->lcommit->rewrites_queued;
}

/* What lcommit_ack_wait waits on. */
struct lc_ack {
	struct daemon *d;
	wb_wait_fn fn;
	void *arg;
};

/* The journal's sync after a call's rewrites came back: durable, the
 * call may be answered once no fence is due; not durable (the tier
 * turned off), once the fence that covers the records is. */
static void ack_synced(void *arg, bool durable)
{
	struct lc_ack *a = arg;

	if (!durable)
		tier_check(a->d);
	if (lcommit_fence_wait(a->d, a->fn, a->arg) != 0)
		a->fn(a->d, NFS3ERR_JUKEBOX, a->arg);
	free(a);
}

int lcommit_ack_wait(struct daemon *d, uint64_t since, wb_wait_fn fn,
		     void *arg)
{
	struct disk *dk = journal(d);
	struct lc_ack *a;

	if (d->lcommit->rewrites_queued == since || !dk)
		return lcommit_fence_wait(d, fn, arg);
	if (!(a = calloc(1, sizeof(*a))))
		return -1;
	a->d = d;
	a->fn = fn;
	a->arg = arg;
	if (disk_journal_sync(dk, ack_synced, a) != 0) {
		/* The tier is off: the fence covers the records. */
		free(a);
		tier_check(d);
		return lcommit_fence_wait(d, fn, arg);
	}
	return 0;
}

void lcommit_settle(struct daemon *d, struct cfile *f)
{
	struct fstate *fs = fstate_find(f);
	struct disk *dk;
	struct range r[64];
	size_t n;

	tier_check(d);
	dk = journal(d);
	if (!fs || (!fs->lc_pages.n && !fs->lc_stale.n && !fs->lc_lost))
		return;
	if (!cfile_has_wb(f)) {
		rangeset_clear(&fs->lc_stale);
		fs->lc_lost = false;
	}
	/* Every record page that holds no write-back bytes now goes: the
	 * gaps of the file's write-back pages inside each range of
	 * lc_pages. */
	for (uint64_t from = 0;
	     (n = rangeset_ranges_in(&fs->lc_pages, from, UINT64_MAX, r, 64));) {
		size_t nr = n < 64 ? n : 64;

		from = r[nr - 1].end;
		for (size_t i = 0; i < nr; i++) {
			struct range g[64];
			uint64_t at = r[i].start;
			size_t m;

			while (at < r[i].end &&
			       (m = cfile_wb_page_gaps(f, at, r[i].end, g, 64))) {
				size_t ng = m < 64 ? m : 64;

				for (size_t j = 0; j < ng; j++)
					for (uint64_t idx = g[j].start;
					     idx < g[j].end; idx++)
						settle_page(d->lcommit, dk,
							    f, fs, idx);
				if (m <= 64)
					break;
				at = g[ng - 1].end;
			}
		}
		if (n <= 64)
			break;
	}
	fence_check(d);
}

/* ---- the fence: the tier turned off with records outstanding ---- */

/* Leave the file fh (len bytes) out of this run's fence: its records
 * are kept, not superseded. */
static void fence_keep_fh(struct lcommit *lc, const uint8_t *fh, size_t len)
{
	struct lc_fence *fe = &lc->fence;
	struct lcommit_fence *fz = &fe->fz;

	if (!len || len > LCF_FH_MAX)
		return;
	for (uint32_t i = 0; i < fz->nkeep; i++)
		if (fz->keep[i].len == len && !memcmp(fz->keep[i].fh, fh, len))
			return;
	if (fz->nkeep == LCF_KEEP_MAX) {
		fe->overflow = true;
		return;
	}
	fz->keep[fz->nkeep].len = (uint8_t)len;
	memcpy(fz->keep[fz->nkeep].fh, fh, len);
	fz->nkeep++;
}

/* Leave f out of this run's fence. */
static void fence_keep(struct lcommit *lc, struct cfile *f)
{
	size_t n;
	const uint8_t *fh = cfile_fh(f, &n);

	if (fh)
		fence_keep_fh(lc, fh, n);
}

/* Answer every waiter with st (all of them, or only those waiting since
 * before t when st is not NFS3_OK). */
static void waiters_answer(struct lc_fence *fe, nfsstat3 st, double t)
{
	struct lc_waiter **pp = &fe->waiters, *w;

	while ((w = *pp)) {
		if (st != NFS3_OK && w->since > t) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->fn(w->d, st, w->arg);
		free(w);
	}
}

/* One fence write, run on its own thread (it blocks on the disk). */
struct lc_fence_job {
	struct lcommit_fence fz;
	char *dir[2];			/* cache_dir, state_dir (copies) */
	int rc[2], err[2];		/* each place's result and errno */
	int efd;			/* signalled when done */
};

/* Write the job's fence in each place, then signal. */
static void *fence_thread(void *arg)
{
	struct lc_fence_job *j = arg;
	uint64_t one = 1;

	for (int i = 0; i < 2; i++) {
		errno = 0;
		j->rc[i] = lcommit_fence_write(j->dir[i], &j->fz);
		j->err[i] = errno;
	}
	if (j->efd >= 0 && write(j->efd, &one, sizeof(one)) < 0)
		return NULL;	/* the counter is non-zero already */
	return NULL;
}

/* Free a fence job. */
static void job_free(struct lc_fence_job *j)
{
	if (j) {
		free(j->dir[0]);
		free(j->dir[1]);
	}
	free(j);
}

/* A fence write ended (rc/err of cache_dir and state_dir): durable once
 * either holds it, else failed and retried later. */
static void fence_written(struct daemon *d, const struct lc_fence_job *j)
{
	struct lcommit *lc = d->lcommit;
	struct lc_fence *fe = &lc->fence;
	const char *cd = d->conf->cache_dir, *sd = d->conf->state_dir;

	if (j && (j->rc[0] == 0 || j->rc[1] == 0)) {
		fe->st = LCF_DURABLE;
		lc->stats.fence_writes++;
		log_info("local commit: journal records up to %" PRIu64 " are "
			 "superseded (their bytes are stable upstream); fence "
			 "written in %s%s%s", j->fz.hi,
			 j->rc[0] == 0 ? cd : "",
			 j->rc[0] == 0 && j->rc[1] == 0 ? " and " : "",
			 j->rc[1] == 0 ? sd : "");
		waiters_answer(fe, NFS3_OK, 0);
		return;
	}
	if (!fe->fail_logged)
		log_error("local commit: cannot write the journal fence (%s: "
			  "%s; %s: %s): COMMITs are answered NFS3ERR_JUKEBOX "
			  "until it is written, retried every %g s", cd,
			  j ? strerror(j->err[0]) : fe->overflow ?
			  "too many files kept" : !fe->fz.id ?
			  "no journal id" : "out of memory", sd,
			  j ? strerror(j->err[1]) : "-", LCOMMIT_RETRY);
	fe->fail_logged = true;
	fe->st = LCF_FAILED;
	lc->stats.fence_failures++;
	fe->retry_at = daemon_now() + LCOMMIT_RETRY;
	waiters_answer(fe, NFS3ERR_JUKEBOX, daemon_now());
}

/* Collect the fence thread's result (it is done, or about to be). */
static void fence_collect(struct daemon *d)
{
	struct lc_fence *fe = &d->lcommit->fence;
	struct lc_fence_job *j = fe->job;

	if (!j)
		return;
	pthread_join(fe->thread, NULL);
	fe->job = NULL;
	fence_written(d, j);
	job_free(j);
}

/* The fence thread signalled. */
static void fence_ready(evutil_socket_t fd, short what, void *arg)
{
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) >= 0)
		fence_collect(arg);
}

void lcommit_fence_drain(struct daemon *d)
{
	fence_collect(d);
}

/* Start writing the fence, first in cache_dir, then in state_dir, on a
 * thread of its own (the loop does not wait on a failing disk); the
 * calls waiting for it wait on (LCF_WRITING). */
static void fence_write(struct daemon *d)
{
	struct lc_fence *fe = &d->lcommit->fence;
	struct lc_fence_job *j;

	if (fe->job)
		return;			/* one at a time */
	if (fe->overflow || !fe->fz.id) {
		fence_written(d, NULL);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		j->fz = fe->fz;
		j->dir[0] = strdup(d->conf->cache_dir);
		j->dir[1] = d->conf->state_dir ? strdup(d->conf->state_dir) : NULL;
		j->efd = fe->ev ? fe->efd : -1;
	}
	if (!j || !j->dir[0]) {
		job_free(j);
		fence_written(d, NULL);
		return;
	}
	fe->st = LCF_WRITING;
	if (fe->ev && pthread_create(&fe->thread, NULL, fence_thread, j) == 0) {
		fe->job = j;
		return;
	}
	/* No thread or no event: write here (blocks the loop once). */
	fence_thread(j);
	fence_written(d, j);
	job_free(j);
}

/* Write the fence when no page of this run's records holds write-back
 * bytes any more. */
static void fence_check(struct daemon *d)
{
	const struct lc_fence *fe = &d->lcommit->fence;

	if (fe->st == LCF_PENDING && fe->tracked == 0)
		fence_write(d);
}

/* A flush of kick_tracked ended: lcommit_settle has seen it. */
static void tracked_flushed(struct daemon *d, nfsstat3 st, void *arg)
{
	(void)d, (void)st, (void)arg;
}

/* Write back every file whose pages still have records, all of it (the
 * growing tail too), now and not after writeback_delay, and COMMIT it
 * upstream, as a waiting COMMIT would: each such page needs one moment
 * with no write-back bytes for the fence to come. Bytes written since
 * can keep it waiting, so this repeats every write-back tick while the
 * fence is due, for the files not already waited for. */
static void kick_tracked(struct daemon *d)
{
	for (struct cfile *f = cache_wb_file_first(d->cache), *next; f;
	     f = next) {
		struct fstate *fs = fstate_find(f);

		next = cache_wb_file_next(d->cache, f);
		if (!fs || !fs->lc_pages.n || !fs->ex || fs->waits)
			continue;
		if (writeback_wait(d, f, fs->ex, WB_WAIT_ALL, 0, 0,
				   tracked_flushed, NULL) != 0)
			writeback_kick(d, f, fs->ex, true);
	}
}

void lcommit_tier_off(struct daemon *d)
{
	struct lcommit *lc = d->lcommit;
	struct lc_fence *fe = &lc->fence;
	struct disk *dk = disk_tier_disk(d);
	struct disk_stats st;

	if (fe->st != LCF_NONE || !dk)
		return;
	disk_stats_get(dk, &st);
	if (st.journal_records == 0 && lc->next_seq == lc->first_seq) {
		/* No record on disk, none put by this run: none to cover. */
		fe->st = LCF_DURABLE;
		return;
	}
	fe->st = LCF_PENDING;
	fe->fz.hi = lc->next_seq - 1;
	kick_tracked(d);
	if (fe->tracked)
		log_warn("local commit: the journal can no longer delete; %"
			 PRIu64 " page(s) with records are written back "
			 "upstream now, and COMMITs wait for them and the "
			 "journal fence", fe->tracked);
	fence_check(d);
}

/* The tier turned off and this module has not heard it yet. */
static void tier_check(struct daemon *d)
{
	const struct lc_fence *fe = &d->lcommit->fence;
	struct disk *dk = disk_tier_disk(d);

	if (fe->st == LCF_NONE && dk && !disk_on(dk))
		lcommit_tier_off(d);
}

/* A COMMIT's or FILE_SYNC WRITE's bytes are stable upstream (or failed). */
static void upstream_done(struct daemon *d, nfsstat3 st, void *arg)
{
	struct lc_fence *fe = &d->lcommit->fence;
	struct lc_waiter *w = arg;

	tier_check(d);
	if (st == NFS3_OK && fe->st == LCF_FAILED &&
	    daemon_now() >= fe->retry_at)
		fence_write(d);
	if (st == NFS3_OK && (fe->st == LCF_PENDING ||
			      fe->st == LCF_WRITING ||
			      fe->st == LCF_FAILED)) {
		w->since = daemon_now();
		w->next = fe->waiters;
		fe->waiters = w;
		return;
	}
	w->fn(d, st, w->arg);
	free(w);
}

int lcommit_upstream_wait(struct daemon *d, struct cfile *f,
			  struct export_rt *ex, enum wb_wait_kind kind,
			  uint64_t off, uint64_t len, wb_wait_fn fn, void *arg)
{
	struct lc_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -1;
	w->d = d;
	w->fn = fn;
	w->arg = arg;
	if (writeback_wait(d, f, ex, kind, off, len, upstream_done, w) != 0) {
		free(w);
		return -1;
	}
	return 0;
}

bool lcommit_fence_due(const struct daemon *d)
{
	const struct lc_fence *fe = &d->lcommit->fence;

	return fe->st != LCF_NONE && fe->st != LCF_DURABLE;
}

int lcommit_fence_wait(struct daemon *d, wb_wait_fn fn, void *arg)
{
	struct lc_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -1;
	w->d = d;
	w->fn = fn;
	w->arg = arg;
	upstream_done(d, NFS3_OK, w);
	return 0;
}

void lcommit_tick(struct daemon *d)
{
	struct lc_fence *fe = &d->lcommit->fence;
	double now;

	if (fe->st == LCF_NONE || fe->st == LCF_DURABLE)
		return;
	now = daemon_now();
	if (fe->st == LCF_PENDING)
		kick_tracked(d);
	fence_check(d);
	if (fe->st == LCF_FAILED && now >= fe->retry_at)
		fence_write(d);
	/* Not answered within LCOMMIT_RETRY: the client retries later. */
	if (fe->st != LCF_DURABLE)
		waiters_answer(fe, NFS3ERR_JUKEBOX, now - LCOMMIT_RETRY);
}

void lcommit_fence_stop(struct daemon *d)
{
	struct lc_fence *fe;
	uint64_t tracked;

	if (!d->lcommit)
		return;
	fe = &d->lcommit->fence;
	tracked = fe->tracked;	/* the fstates still count */
	waiters_answer(fe, NFS3ERR_JUKEBOX, 1e300);
	if (fe->job) {
		pthread_join(fe->thread, NULL);	/* stopping: may wait */
		job_free(fe->job);
	}
	if (fe->ev)
		event_free(fe->ev);
	if (fe->efd >= 0)
		close(fe->efd);
	memset(fe, 0, sizeof(*fe));
	fe->efd = -1;
	fe->tracked = tracked;
}

/* The cause label of a failure status. */
static enum lcommit_cause cause_of(int status)
{
	switch (status) {
	case NFS3ERR_ACCES: return LC_ACCES;
	case NFS3ERR_PERM: return LC_PERM;
	case NFS3ERR_STALE: return LC_STALE;
	case NFS3ERR_DQUOT: return LC_DQUOT;
	case NFS3ERR_NOSPC: return LC_NOSPC;
	case NFS3ERR_ROFS: return LC_ROFS;
	default: return LC_OTHER;
	}
}

bool lcommit_failed(struct daemon *d, struct cfile *f, int status, bool *keep)
{
	struct lcommit *lc = d->lcommit;
	struct fstate *fs = fstate_find(f);
	enum lcommit_cause c = cause_of(status);

	*keep = false;
	if (!fs || !fs->lc_pages.n)
		return false;
	lc->stats.failures[c]++;
	if (c == LC_STALE) {
		/* Gone upstream: nowhere to write it. The records stay in
		 * cache_dir (not tracked, so never deleted by this run) and
		 * are tried again at the next start. */
		log_error("write-back of locally committed data failed: the "
			  "file is gone upstream (NFS3ERR_STALE); its %zu "
			  "journal record(s) are kept in %s",
			  (size_t)rangeset_bytes(&fs->lc_pages),
			  d->conf->cache_dir);
		fence_keep(lc, f);
		untrack(lc, fs);
		fence_check(d);
		return true;
	}
	*keep = true;
	fs->lc_retry_at = daemon_now() + LCOMMIT_RETRY;
	ratelog_msg(&lc->fail_log[c], daemon_now(), LCOMMIT_LOG_INTERVAL,
		    LOG_LEVEL_WARN, "write-back of locally committed data "
		    "failed upstream with %s; kept in %s, retried every %g s",
		    nfs3_status_name((uint32_t)status), d->conf->cache_dir,
		    LCOMMIT_RETRY);
	return true;
}

bool lcommit_backoff(struct cfile *f, double now)
{
	struct fstate *fs = fstate_find(f);

	return fs && fs->lc_retry_at > now;
}

void lcommit_fstate_clear(struct daemon *d, struct fstate *fs)
{
	untrack(d->lcommit, fs);
	rangeset_clear(&fs->lc_stale);
}

bool lcommit_fstate_idle(const struct fstate *fs)
{
	return !fs->lc_pages.n && !fs->lc_stale.n && !fs->lc_syncs && !fs->lc_map;
}

/* ---- start and stop ---- */

int lcommit_new(struct daemon *d)
{
	struct lcommit *lc = calloc(1, sizeof(*lc));

	if (!lc)
		return -1;
	lc->next_seq = lc->first_seq = 1;
	lc->fence.efd = -1;
	d->lcommit = lc;
	return 0;
}

void lcommit_free(struct daemon *d)
{
	struct lcommit *lc = d->lcommit;

	if (!lc)
		return;
	/* Normally done already (daemon_stop calls lcommit_fence_stop
	 * before the server goes): the thread joined, the event freed. */
	if (lc->fence.job || lc->fence.ev || lc->fence.efd >= 0)
		lcommit_fence_stop(d);
	/* A waiter queued since (by a last callback of disk_tier_stop) is
	 * dropped unanswered: the server its call came on is gone. */
	while (lc->fence.waiters) {
		struct lc_waiter *w = lc->fence.waiters;

		lc->fence.waiters = w->next;
		free(w);
	}
	free(lc);
	d->lcommit = NULL;
}

/* Whether rec[0..len) is a well-formed record; its header. */
static const struct lc_hdr *rec_check(const void *rec, size_t len)
{
	struct lc_hdr h;
	const struct lc_ext *x;
	uint64_t sum = 0;
	uint8_t *copy;

	if (len < sizeof(h))
		return NULL;
	memcpy(&h, rec, sizeof(h));
	if (h.magic != LC_MAGIC || h.next == 0 || h.next > LC_MAX_EXT ||
	    len < sizeof(h) + h.next * sizeof(*x))
		return NULL;
	x = (const struct lc_ext *)((const struct lc_hdr *)rec + 1);
	for (uint32_t i = 0; i < h.next; i++) {
		if (x[i].off > h.page_size || x[i].len > h.page_size - x[i].off ||
		    x[i].ngids > NFS_CRED_MAX_GIDS)
			return NULL;
		sum += x[i].len;
	}
	if (len != sizeof(h) + h.next * sizeof(*x) + sum ||
	    !(copy = malloc(len)))
		return NULL;
	memcpy(copy, rec, len);
	((struct lc_hdr *)copy)->checksum = 0;
	sum = XXH3_64bits(copy, len);
	free(copy);
	return sum == h.checksum ? rec : NULL;
}

/* A record the start's fence covers: skipped and deleted. */
static int superseded(struct daemon *d, const struct disk_key *k)
{
	struct disk *dk = journal(d);

	d->lcommit->stats.superseded_records++;
	if (dk)
		(void)disk_journal_del(dk, k);
	return 0;
}

/* Install one record's extents as dirty data of its file (a page's
 * records come in sequence order: later bytes replace earlier ones). */
static int recover_one(void *arg, const struct disk_key *k, uint64_t seq,
		       const void *rec, size_t len)
{
	struct daemon *d = arg;
	struct lcommit *lc = d->lcommit;
	const struct lc_hdr *h = rec_check(rec, len);
	const struct lc_ext *x = h ? (const struct lc_ext *)(h + 1) : NULL;
	const uint8_t *p = x ? (const uint8_t *)(x + h->next) : NULL;
	struct export_rt *ex = h ? daemon_export(d, h->export_id) : NULL;
	struct cfile *f = ex ? cache_get(d->cache, k->fh, k->fh_len) : NULL;
	double now = daemon_now();
	struct fstate *fs;
	int bad = 0;

	if (lc->start_fence.hi &&
	    lcommit_fence_covers(&lc->start_fence, seq, k->fh, k->fh_len)) {
		cfile_put(d->cache, &f);
		return superseded(d, k);
	}
	if (!f) {
		fence_keep_fh(lc, k->fh, k->fh_len);
		lc->stats.kept_records++;
		lc->pages_held++;	/* still needs room at a later start */
		log_error("journal record %s at page %" PRIu64 " kept in "
			  "cache_dir: %s", h ? "of an unknown export" :
			  "damaged", k->page, h ? "no export with its id" :
			  "it does not decode");
		return 0;
	}
	fs = fstate_get(d, f, ex);
	/* The file's attributes as clients last saw them: from its newest
	 * record. */
	if (!cfile_has_attr(f) || (fs && seq > fs->lc_attr_seq)) {
		cfile_attr_observe(d->cache, f, &h->attr, now,
				   daemon_ac(ex, h->attr.type));
		if (fs)
			fs->lc_attr_seq = seq;
	}
	cfile_attr_expire(f);
	for (uint32_t i = 0; i < h->next && !bad; i++) {
		struct nfs_cred cr = { .uid = x[i].uid, .gid = x[i].gid,
				       .ngids = x[i].ngids };

		memcpy(cr.gids, x[i].gids, sizeof(cr.gids));
		bad = cache_write_dirty(d->cache, f, h->offset + x[i].off, p,
					x[i].len, &cr, now, h->attr.mtime);
		p += x[i].len;
	}
	/* Tracked: in lc_pages, and in lc_map with its next record full. */
	if (!bad && (!fs || !page_state(lc, fs, k->page)))
		bad = 1;
	if (!bad && rangeset_add(&fs->lc_pages, k->page, k->page + 1) != 0) {
		page_forget(lc, fs, k->page);
		bad = 1;
	}
	if (!bad) {
		lc->stats.recovered_records++;
		lc->stats.recovered_bytes += len;
		writeback_kick(d, f, ex, true);
	} else {
		fence_keep_fh(lc, k->fh, k->fh_len);
		lc->stats.kept_records++;
		lc->pages_held++;
		log_error("journal record of page %" PRIu64 " kept in cache_dir: "
			  "no room in the cache (cache_size) to install it",
			  k->page);
	}
	cfile_put(d->cache, &f);
	return 0;
}

/* Choose the verifier: the stored one after a clean stop when the whole
 * journal was installed (reusable), else the new one writeback_start
 * made; then store it as not clean (a crash from here on must change
 * it). A record left uninstalled holds bytes a client may still COMMIT
 * under the old verifier and find answered with nothing behind it. */
static void verf_start(struct daemon *d, struct disk *dk, bool reusable)
{
	struct lcommit *lc = d->lcommit;
	struct lc_verf v;
	long n = disk_meta_get(dk, LC_VERF_KEY, &v, sizeof(v));

	if (reusable && n == (long)sizeof(v) && v.clean == 1) {
		writeback_set_verf(d, v.verf);
		lc->stats.verf_reused = true;
	}
	memcpy(v.verf, writeback_verf(d), sizeof(v.verf));
	v.clean = 0;
	if (disk_meta_put(dk, LC_VERF_KEY, &v, sizeof(v)) == 0)
		return;
	/* Could not record "not clean": a reused verifier could then be
	 * reused again after a crash. Take a new one that is never kept. */
	if (lc->stats.verf_reused && RAND_bytes(v.verf, sizeof(v.verf)) == 1)
		writeback_set_verf(d, v.verf);
	lc->stats.verf_reused = false;
	log_warn("cannot record the write verifier in cache_dir: a new one "
		 "is used at every start");
}

/* What size_check looks for and found. */
struct lc_size {
	uint32_t want, other;
	uint64_t max_seq;		/* the highest sequence seen */
};

/* A record written with another page_size: its key's page index means
 * another byte range now, so this run could neither track nor ever
 * delete it, and a later start would replay it over newer data. */
static int size_check(void *arg, const struct disk_key *k, uint64_t seq,
		      const void *rec, size_t len)
{
	struct lc_size *sz = arg;
	const struct lc_hdr *h = rec_check(rec, len);

	(void)k;
	if (seq > sz->max_seq)
		sz->max_seq = seq;
	if (h && h->page_size != sz->want) {
		sz->other = h->page_size;
		return 1;
	}
	return 0;
}

/* This journal's identity, made at its first start; 0 when it cannot
 * be read or kept (no fence can then be written). */
static uint64_t journal_id(struct disk *dk)
{
	uint64_t id = 0;

	if (disk_meta_get(dk, LC_ID_KEY, &id, sizeof(id)) == (long)sizeof(id) &&
	    id)
		return id;
	if (RAND_bytes((uint8_t *)&id, sizeof(id)) != 1 || !id ||
	    disk_meta_put(dk, LC_ID_KEY, &id, sizeof(id)) != 0)
		return 0;
	return id;
}

/* Prepare the fence files and read the highest valid fence of this
 * journal into lc->start_fence (hi 0: none). */
static void fence_start(struct daemon *d, struct disk *dk)
{
	struct lcommit *lc = d->lcommit;
	struct lc_fence *fe = &lc->fence;
	const char *dirs[2] = { d->conf->cache_dir, d->conf->state_dir };
	struct lcommit_fence got;

	fe->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fe->efd >= 0)
		fe->ev = event_new(d->base, fe->efd, EV_READ | EV_PERSIST,
				   fence_ready, d);
	if (fe->ev && event_add(fe->ev, NULL) != 0) {
		event_free(fe->ev);
		fe->ev = NULL;
	}
	if (!fe->ev)
		log_warn("local commit: cannot watch the fence writer: a fence "
			 "is written on the event loop");
	fe->fz.id = journal_id(dk);
	for (int i = 0; i < 2 && fe->fz.id; i++) {
		if (lcommit_fence_read(dirs[i], fe->fz.id, &got) == 1 &&
		    got.hi > lc->start_fence.hi)
			lc->start_fence = got;
		if (lcommit_fence_prepare(dirs[i]) != 0)
			log_warn("local commit: cannot prepare the journal "
				 "fence in %s: %s", dirs[i], strerror(errno));
	}
	fe->fz.hi = lc->start_fence.hi;
}

/*
 * The tier could not open its index at start. If that index was kept
 * holding journal records (or a journal that could not be read while an
 * export commits locally), refuse to start: serving now would answer
 * from older bytes than those records acknowledged, and a later start
 * with the index repaired would replay them over whatever this run
 * acknowledged meanwhile. Neither is a guess to make for the operator.
 * 0, or -1 with the reason in err.
 */
static int unread_journal_check(struct daemon *d, char *err, size_t errlen)
{
	struct disk *dk = disk_tier_disk(d);
	long n = dk ? disk_journal_unread(dk) : 0;
	bool local = false;

	for (size_t i = 0; i < d->nexports; i++)
		local |= conf_commit_local(d->exports[i]->conf);
	if (n == 0 || (n < 0 && !local))
		return 0;
	snprintf(err, errlen, "cache_dir %s: its index cannot be opened (the "
		 "line above says why) and its journal %s locally committed "
		 "writes not yet written back: serving now would answer from "
		 "older data, and a later start would replay them over newer "
		 "writes. Repair or restore the file system and start again; "
		 "or move %s/index.mdb aside to give those writes up "
		 "(docs/disk-tier.md, \"A damaged index\")",
		 d->conf->cache_dir, n > 0 ? "holds" : "may hold",
		 d->conf->cache_dir);
	if (n > 0) {
		char count[64];

		snprintf(count, sizeof(count), " (%ld record(s))", n);
		strncat(err, count, errlen - strlen(err) - 1);
	}
	return -1;
}

int lcommit_start(struct daemon *d, char *err, size_t errlen)
{
	struct lcommit *lc = d->lcommit;
	struct disk *dk = journal(d);
	struct lc_size sz = { cache_page_size(d->cache), 0, 0 };
	uint64_t hi;
	long n;

	if (!dk)
		return unread_journal_check(d, err, errlen);
	fence_start(d, dk);
	(void)disk_journal_scan(dk, size_check, &sz);
	/* Above the fence too: a new record must never look superseded. */
	hi = lc->start_fence.hi;
	lc->next_seq = (sz.max_seq > hi ? sz.max_seq : hi) + 1;
	lc->first_seq = lc->next_seq;
	if (sz.other) {
		snprintf(err, errlen, "cache_dir %s holds locally committed "
			 "data written with page_size = %u (now %u): start once "
			 "with page_size = %u so it is written back upstream, "
			 "then change it (docs/disk-tier.md, \"Local commit\")",
			 d->conf->cache_dir, sz.other, sz.want, sz.other);
		return -1;
	}
	/* Clients are not served yet: the verifier is chosen after the
	 * records are installed, knowing whether all of them were. */
	n = disk_journal_scan(dk, recover_one, d);
	verf_start(d, dk, n >= 0 && lc->stats.kept_records == 0);
	if (n < 0)
		log_error("cannot read the journal in %s: %s", d->conf->cache_dir,
			  strerror(errno));
	else if (n > 0)
		log_info("local commit: %ld journal record(s) found, %" PRIu64
			 " installed for write-back, %" PRIu64 " kept, %" PRIu64
			 " superseded by the fence (up to %" PRIu64 ") and "
			 "deleted", n, lc->stats.recovered_records,
			 lc->stats.kept_records, lc->stats.superseded_records,
			 lc->start_fence.hi);
	return 0;
}

/* lcommit_stop's last sync came back. */
static void stop_synced(void *arg, bool durable)
{
	*(int *)arg = durable ? 1 : -1;
}

void lcommit_stop(struct daemon *d)
{
	const struct lc_fence *fe = &d->lcommit->fence;
	struct disk *dk = journal(d);
	bool all = true;
	int done = 0;
	struct lc_verf v;

	/* The final write-back may have made the fence due: written now,
	 * waiting for it (the loop no longer runs). */
	fence_collect(d);
	if ((fe->st == LCF_PENDING && fe->tracked == 0) ||
	    fe->st == LCF_FAILED) {
		fence_write(d);
		fence_collect(d);
	}
	if (!dk)
		return;
	for (struct cfile *f = cache_wb_file_first(d->cache); f;
	     f = cache_wb_file_next(d->cache, f)) {
		struct fstate *fs = fstate_find(f);

		if (!fs || !fs->ex || !conf_commit_local(fs->ex->conf) ||
		    stale_journal(d, f, fs, 0, UINT64_MAX) != 0)
			all = false;
	}
	if (disk_journal_sync(dk, stop_synced, &done) != 0)
		return;
	disk_drain(dk);
	if (!all || done != 1)
		return;
	memcpy(v.verf, writeback_verf(d), sizeof(v.verf));
	v.clean = 1;
	if (disk_meta_put(dk, LC_VERF_KEY, &v, sizeof(v)) == 0)
		log_info("write verifier kept for the next start: every "
			 "acknowledged byte is upstream or in %s",
			 d->conf->cache_dir);
}

const char *lcommit_check_why(struct daemon *d)
{
	for (struct cfile *f = cache_wb_file_first(d->cache); f;
	     f = cache_wb_file_next(d->cache, f)) {
		const struct fstate *fs = fstate_find(f);
		const struct lc_page *pm, *tmp;

		if (!fs)
			continue;
		if (HASH_COUNT(fs->lc_map) != rangeset_bytes(&fs->lc_pages))
			return "lcommit: a file's lc_map and lc_pages count "
			       "different pages";
		HASH_ITER(hh, fs->lc_map, pm, tmp)
			if (!rangeset_contains(&fs->lc_pages, pm->idx,
					       pm->idx + 1))
				return "lcommit: a page in lc_map has no record "
				       "(not in lc_pages)";
	}
	return NULL;
}

void lcommit_stats_get(const struct daemon *d, struct lcommit_stats *st)
{
	if (d->lcommit)
		*st = d->lcommit->stats;
	else
		memset(st, 0, sizeof(*st));
}

/* The cause labels, by enum lcommit_cause. */
static const char *const cause[] = {
#define X(e, s) s,
	LCOMMIT_CAUSES(X)
#undef X
};

void lcommit_status_json(const struct daemon *d, struct evbuffer *o)
{
	const struct lcommit_stats *stats = &d->lcommit->stats;
	struct disk *dk = disk_tier_disk(d);
	struct disk_stats st = { 0 };

	if (dk)
		disk_stats_get(dk, &st);
	evbuffer_add_printf(o, "\"local_commit\":{\"journal_records\":%" PRIu64
			    ",\"journal_bytes\":%" PRIu64
			    ",\"writeback_failures\":{", st.journal_records,
			    st.journal_bytes);
	for (int i = 0; i < LC_NCAUSES; i++)
		evbuffer_add_printf(o, "%s\"%s\":%" PRIu64, i ? "," : "",
				    cause[i], stats->failures[i]);
	evbuffer_add_printf(o, "}}");
}

void lcommit_render(const struct daemon *d, struct evbuffer *o)
{
	const struct lcommit_stats *stats = &d->lcommit->stats;
	const char *n = "nfscached_local_writeback_failures_total";

	evbuffer_add_printf(o,
		"# HELP nfscached_local_commits_total COMMITs and FILE_SYNC "
		"WRITEs answered once the data was durable in cache_dir "
		"(commit = \"local\").\n"
		"# TYPE nfscached_local_commits_total counter\n"
		"nfscached_local_commits_total{call=\"commit\"} %" PRIu64 "\n"
		"nfscached_local_commits_total{call=\"write\"} %" PRIu64 "\n"
		"# HELP nfscached_local_commit_fallbacks_total COMMITs and "
		"FILE_SYNC WRITEs of a local export answered the upstream "
		"way because the journal could not take them (tier off, "
		"journal full, out of memory).\n"
		"# TYPE nfscached_local_commit_fallbacks_total counter\n"
		"nfscached_local_commit_fallbacks_total %" PRIu64 "\n"
		"# HELP nfscached_local_journal_writes_total Journal records "
		"written (a full or delta record per page per local commit).\n"
		"# TYPE nfscached_local_journal_writes_total counter\n"
		"nfscached_local_journal_writes_total %" PRIu64 "\n"
		"# HELP nfscached_local_journal_write_bytes_total Bytes of "
		"those records.\n"
		"# TYPE nfscached_local_journal_write_bytes_total counter\n"
		"nfscached_local_journal_write_bytes_total %" PRIu64 "\n"
		"# HELP nfscached_local_recovered_records Journal records "
		"installed for write-back at this start.\n"
		"# TYPE nfscached_local_recovered_records gauge\n"
		"nfscached_local_recovered_records %" PRIu64 "\n"
		"# HELP nfscached_local_kept_records Journal records found at "
		"this start and kept in cache_dir, not installed.\n"
		"# TYPE nfscached_local_kept_records gauge\n"
		"nfscached_local_kept_records %" PRIu64 "\n"
		"# HELP nfscached_local_superseded_records Journal records "
		"found at this start that the fence marks superseded: "
		"skipped and deleted.\n"
		"# TYPE nfscached_local_superseded_records gauge\n"
		"nfscached_local_superseded_records %" PRIu64 "\n"
		"# HELP nfscached_local_journal_fence_writes_total Journal "
		"fences made durable.\n"
		"# TYPE nfscached_local_journal_fence_writes_total counter\n"
		"nfscached_local_journal_fence_writes_total %" PRIu64 "\n"
		"# HELP nfscached_local_journal_fence_failures_total Journal "
		"fence writes that failed in cache_dir and state_dir.\n"
		"# TYPE nfscached_local_journal_fence_failures_total counter\n"
		"nfscached_local_journal_fence_failures_total %" PRIu64 "\n"
		"# HELP nfscached_write_verifier_reused 1 when this start kept "
		"the previous run's write verifier (clean stop).\n"
		"# TYPE nfscached_write_verifier_reused gauge\n"
		"nfscached_write_verifier_reused %d\n",
		stats->commits, stats->sync_writes, stats->fallbacks,
		stats->records_written, stats->bytes_written,
		stats->recovered_records, stats->kept_records,
		stats->superseded_records, stats->fence_writes,
		stats->fence_failures, stats->verf_reused ? 1 : 0);
	evbuffer_add_printf(o, "# HELP %s Write-back failures of locally "
			    "committed data, by cause (the data is kept).\n"
			    "# TYPE %s counter\n", n, n);
	for (int i = 0; i < LC_NCAUSES; i++)
		evbuffer_add_printf(o, "%s{cause=\"%s\"} %" PRIu64 "\n", n,
				    cause[i], stats->failures[i]);
}

void lcommit_count(struct daemon *d, bool commit)
{
	if (commit)
		d->lcommit->stats.commits++;
	else
		d->lcommit->stats.sync_writes++;
}

const struct writeback_hooks lcommit_wb_hooks = {
	.settle = lcommit_settle,
	.failed = lcommit_failed,
	.backoff = lcommit_backoff,
	.tick = lcommit_tick,
};

const struct fstate_hooks lcommit_fstate_hooks = {
	.idle = lcommit_fstate_idle,
	.clear = lcommit_fstate_clear,
	.wait_unlink = writeback_wait_unlink,
};
