/* SPDX-License-Identifier: MIT */
/*
 * disk_tier: the daemon's side of the disk page store (disk_tier.h).
 *
 * The tier is inclusive: a page filled from the upstream is stored with
 * the post-operation attributes of the READ that brought it, as the cache
 * then knows it (disk_tier_describe: its clean bytes and the reply's as
 * valid ranges, the file's known holes in it as holes, holding no data
 * bytes); a page loaded back is used only when those attributes equal
 * the file's current ones (size, fileid, mtime, ctime), and then gives
 * its holes to the file's hole set and its bytes to the page. The READ
 * path revalidates attributes that are not fresh before it plans, and
 * after a restart none are, so a file's disk pages are used again only
 * once the upstream has confirmed the version; a changed file's pages are
 * dropped from disk. Loads run on the store's threads; their completions
 * come back through its eventfd, watched here with a persistent libevent
 * read event.
 *
 * A batch (struct dt_batch) is the loads of one call: it holds a file
 * reference and the generation it was sent under, and frees itself when
 * its last load is back.
 *
 * The tier's state is the daemon's (struct disk_tier, d->disk_tier): made
 * by disk_tier_start when cache_dir is set, freed by disk_tier_stop, so a
 * new daemon's tier counts from 0 with its gate open. Every field is
 * touched from the event loop only (the store's threads never see it).
 * Invariants, while d->disk_tier is set:
 * - magic is DISK_TIER_MAGIC; disk is the open store and ev watches its
 *   eventfd, except inside disk_tier_stop, where ev is freed first and
 *   disk is NULL while disk_close runs the last completions (every call
 *   then sees no tier, as without one);
 * - csum_seen <= the store's checksum_failures, and unused_hits and
 *   unused_hit_bytes <= its hits and hit_bytes (a load is counted as a hit
 *   before it comes back; disk_tier_stats clamps all the same);
 * - gate_closed is true exactly when the last disk_tier_gate action was a
 *   close;
 * - buf holds cache_page_size bytes: disk_tier_filled's page, rewritten by
 *   each call (disk_store copies what it needs before it returns).
 * - the batches on room_head..room_tail are each held by one pending
 *   count for the room, and the list is empty once the tier is stopped;
 * - store_cap is disk_tier_store_cap of the cache's pages, fixed at start.
 * A batch borrows its daemon, not the tier: the tier outlives every batch
 * (disk_close completes each load before disk_tier_stop frees it).
 *
 * Memory (issue 42): every byte the tier holds for the cache counts
 * against cache_size, once. The store's page buffers (a queued store's
 * copy, a load's page: disk_params buf_get/buf_put) are lent by the cache
 * (cache_loan_get), charged as pages: lending one evicts a clean page
 * when the budget is full, so pages + loans <= the budget's pages, and
 * they come from the cache's own pool, whose mapped memory is what RSS
 * sees. Invariants, with the store's counts (disk_stats store_bufs,
 * load_bufs):
 * - the cache's loan bytes are (store_bufs + load_bufs) * page_size;
 * - a lent buffer is touched by one thread at a time: the loop until
 *   disk_store or disk_load has queued it (the store's copy is made
 *   there, on the loop, from buf), then only the worker running that
 *   operation, then the loop again from disk_poll, which gives it back.
 *   No worker reads a RAM page: they never see the cache, and the loop
 *   may change any page at any time without a lock;
 * - a store is never dropped for memory while the cache can lend: when
 *   the disk is slower than the fills, store_bufs reaching store_cap
 *   (a quarter of the pages) makes the tier congested, and then a READ
 *   that must fetch waits for room (disk_tier_load) and readahead fetches
 *   nothing, so the fills slow to the disk's pace. What is already in
 *   flight may pass store_cap; it is still lent, still within the budget.
 *   A store is dropped only when the cache has nothing to lend (every
 *   page pinned by write-back or lent), the queue is full or the tier is
 *   off: it held clean bytes only, so a later miss fetches them again.
 * - a loan may evict any clean page, one a READ just planned as a hit
 *   included (readahead's loads are sent before a hit is copied): that
 *   READ then finds bytes missing and goes upstream (read_from_cache's
 *   bypass), never serves a byte it does not have.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checkobj.h"
#include "daemon.h"
#include "disk.h"
#include "disk_tier.h"
#include "log.h"
#include "ratelog.h"

#define DT_MAX_LOADS	256	/* pages one call loads, at most */
#define DISK_TIER_LOG_INTERVAL	10.0	/* seconds between checksum lines */
#define DISK_TIER_MAGIC	0x44544952u	/* "DTIR" */
#define DISK_TIER_STORE_DIV	4	/* store_cap: a quarter of the pages */

/* The daemon's disk tier (d->disk_tier): see the invariants above. */
struct disk_tier {
	uint32_t magic;			/* DISK_TIER_MAGIC; 0 once freed */
	struct disk *disk;		/* the store, owned */
	struct event *ev;		/* on disk_fd(disk), owned */
	bool gate_closed;		/* the test gate (disk_tier_gate) */
	char cache_dir[256];		/* for log lines */
	/* Checksum failures already logged or counted in a line's "more",
	 * and the rate of those lines. */
	uint64_t csum_seen;
	struct ratelog csum_log;
	/* Pages the disk layer loaded (and counted as hits) that were not
	 * used: stored for an older version of their file, or the file
	 * changed while the load was in flight. disk_tier_stats takes them
	 * out of the hits, so nfscached_disk_hits_total counts pages served
	 * at the file's current version. */
	uint64_t unused_hits, unused_hit_bytes;
	/* disk_tier_filled's page (cache_page_size bytes), owned. The
	 * tier's, not a worker's: filled and handed to disk_store on the
	 * loop, which copies it before returning, so one is enough and a
	 * fill allocates nothing. */
	uint8_t *buf;
	/* Backpressure (the model above): stores holding a copy at or past
	 * store_cap make the tier congested; the batches of READs waiting
	 * for room, oldest first (each holds one pending count for it). */
	uint64_t store_cap;
	struct dt_batch *room_head, *room_tail;
	uint64_t room_waits;		/* READs that waited for room */
};

struct dt_batch {
	struct daemon *d;
	struct cfile *f;		/* reference */
	uint64_t gen;
	unsigned pending;
	bool readahead;
	bool dropped;			/* the file's disk pages were dropped */
	disk_tier_done_fn *done;
	void *arg;
	struct dt_batch *room_next;	/* on the tier's room list */
};

/* The store's log hook: one line when the tier turns off. */
static void tier_log(void *arg, const char *reason)
{
	struct daemon *d = arg;

	log_error("%s; serving from RAM and the upstream only", reason);
	if (d->tier_off)
		d->tier_off(d);	/* the journal's records: a fence now */
}

/* Log the checksum failures counted since the last look, at most one
 * line per DISK_TIER_LOG_INTERVAL (the next says how many it skipped). */
static void tier_log_checksums(struct disk_tier *t, double now)
{
	struct disk_stats st;
	uint64_t skipped, n;

	disk_stats_get(t->disk, &st);
	n = st.checksum_failures - t->csum_seen;
	if (n == 0)
		return;
	t->csum_seen = st.checksum_failures;
	if (!ratelog_note(&t->csum_log, now, DISK_TIER_LOG_INTERVAL, n,
			  &skipped))
		return;
	if (skipped)
		log_warn("disk tier: %" PRIu64 " page(s) in %s failed a checksum "
			 "(a damaged record or damaged bytes): dropped, fetched "
			 "again from the upstream, never served (and %" PRIu64
			 " more in the last %.0f s, not logged)", n,
			 t->cache_dir, skipped, DISK_TIER_LOG_INTERVAL);
	else
		log_warn("disk tier: %" PRIu64 " page(s) in %s failed a checksum "
			 "(a damaged record or damaged bytes): dropped, fetched "
			 "again from the upstream, never served", n,
			 t->cache_dir);
}

/* The store's page buffers: lent by the cache, so that a queued store's
 * copy and a load's page count against cache_size (the model above). On
 * the loop only: disk_store, disk_load and disk_poll run there. */
static void *tier_buf_get(void *arg)
{
	struct daemon *d = arg;

	return cache_loan_get(d->cache);
}

static void tier_buf_put(void *arg, void *buf)
{
	struct daemon *d = arg;

	cache_loan_put(d->cache, buf);
}

/* Stores holding a copy now (queued or running, not yet polled). */
static uint64_t tier_store_bufs(const struct disk_tier *t)
{
	struct disk_stats st;

	disk_stats_get(t->disk, &st);
	return st.store_bufs;
}

/* True when t's stores hold store_cap copies or more while it is on. */
static bool tier_congested(const struct disk_tier *t)
{
	return t && t->disk && t->store_cap && disk_on(t->disk) &&
	       tier_store_bufs(t) >= t->store_cap;
}

static void batch_unhold(struct dt_batch *b);

/* Let the READs waiting for room go on, oldest first, once the tier is
 * no longer congested (below store_cap, off, or closing: every_one). All
 * of them: one let go whose READ then needs no fetch makes no store, and
 * so no completion that would let the next one go. What they fetch may
 * pass store_cap by their READs' pages: still lent, so still within
 * cache_size. */
static void tier_room_wake(struct disk_tier *t, bool every_one)
{
	struct dt_batch *b = t->room_head, *next;

	if (!b || (!every_one && tier_congested(t)))
		return;
	/* Taken off first: a READ let go that waits again joins a new list. */
	t->room_head = t->room_tail = NULL;
	for (; b; b = next) {
		next = b->room_next;
		b->room_next = NULL;
		batch_unhold(b);
	}
}

/* The eventfd became readable (arg: the tier): run the completions. */
static void tier_ready(evutil_socket_t fd, short what, void *arg)
{
	struct disk_tier *t = arg;

	(void)fd, (void)what;
	CHECK_OBJ(t, DISK_TIER_MAGIC);
	disk_poll(t->disk);
	tier_room_wake(t, false);
	tier_log_checksums(t, daemon_now());
}

/* What the store's opening found, in a line each: a format reset, and
 * records dropped by the scan (those go through tier_log_checksums). */
static void tier_log_open(struct disk_tier *t, const struct conf *c)
{
	struct disk_stats st;

	disk_stats_get(t->disk, &st);
	if (st.format_resets)
		log_warn("disk tier: %s was written in another format or with "
			 "another page_size: its pages were dropped (the "
			 "journal of locally committed data is kept)",
			 c->cache_dir);
	tier_log_checksums(t, daemon_now());
}

/* Free t, whose store is closed (or was never opened) and event freed. */
static void tier_free(struct disk_tier *t)
{
	t->magic = 0;
	free(t->buf);
	free(t);
}

/* A new tier with its page buffer for cache c, not yet open; NULL on
 * ENOMEM. */
static struct disk_tier *tier_new(const struct cache *c)
{
	struct disk_tier *t = calloc(1, sizeof(*t));

	if (t && !(t->buf = malloc(cache_page_size(c)))) {
		free(t);
		return NULL;
	}
	if (t)
		t->magic = DISK_TIER_MAGIC;
	return t;
}

int disk_tier_start(struct daemon *d, char *err, size_t len)
{
	const struct conf *c = d->conf;
	struct disk_tier *t;
	struct disk_params p = {
		.dir = c->cache_dir,
		.page_size = c->page_size,
		.budget_bytes = (uint64_t)c->disk_cache_size << 20,
		.durable = true,
		.journal_max = (uint64_t)c->disk_dirty_limit << 20,
		.log = tier_log,
		.log_arg = d,
		.buf_get = tier_buf_get,
		.buf_put = tier_buf_put,
		.buf_arg = d,
	};
	struct cache_stats cs;

	if (!c->cache_dir || !*c->cache_dir)
		return 0;
	if (!(t = tier_new(d->cache))) {
		snprintf(err, len, "cache_dir %s: out of memory", c->cache_dir);
		return -1;
	}
	t->disk = disk_open(&p, err, len);
	if (!t->disk) {
		tier_free(t);
		return -1;
	}
	snprintf(t->cache_dir, sizeof(t->cache_dir), "%s", c->cache_dir);
	cache_stats_get(d->cache, &cs);
	t->store_cap = disk_tier_store_cap(cs.page_cost ?
					   cs.budget / cs.page_cost : 0);
	t->ev = event_new(d->base, disk_fd(t->disk), EV_READ | EV_PERSIST,
			  tier_ready, t);
	if (!t->ev || event_add(t->ev, NULL) != 0) {
		snprintf(err, len, "cache_dir %s: cannot watch the disk tier",
			 c->cache_dir);
		if (t->ev)
			event_free(t->ev);
		disk_close(&t->disk);
		tier_free(t);
		return -1;
	}
	d->disk_tier = t;
	log_info("disk tier: %s, %" PRIu32 " MiB", c->cache_dir,
		 c->disk_cache_size);
	tier_log_open(t, c);
	return 0;
}

void disk_tier_stop(struct daemon *d)
{
	struct disk_tier *t = d->disk_tier;

	if (!t)
		return;
	CHECK_OBJ(t, DISK_TIER_MAGIC);
	event_free(t->ev);
	t->ev = NULL;
	/* Sets t->disk to NULL first, then runs the last completions, whose
	 * batches still reach t through d (unused_hit). */
	disk_close(&t->disk);
	/* READs waiting for room go on (to the upstream: no tier). */
	tier_room_wake(t, true);
	d->disk_tier = NULL;
	tier_free(t);
}

/* d's open store, or NULL: no tier, or disk_tier_stop is closing it. */
static struct disk *tier_disk(const struct daemon *d)
{
	return d->disk_tier ? d->disk_tier->disk : NULL;
}

bool disk_tier_key(const struct cfile *f, uint64_t pg, struct disk_key *k)
{
	size_t len;
	const uint8_t *fh = cfile_fh(f, &len);

	if (!fh || len == 0 || len > DISK_FH_MAX)
		return false;
	k->fh_len = (uint8_t)len;
	memcpy(k->fh, fh, len);
	k->page = pg;
	return true;
}

/* The version attributes of a. */
static struct disk_attr tier_attr(const struct cattr *a)
{
	return (struct disk_attr){
		.size = a->size, .fileid = a->fileid,
		.mtime_sec = a->mtime.sec, .mtime_nsec = a->mtime.nsec,
		.ctime_sec = a->ctime.sec, .ctime_nsec = a->ctime.nsec,
	};
}

/*
 * The holes of f in [base, end) into pg->holes, page-relative, and out of
 * *known; past the first DISK_MAX_RANGES - 1 (one short of the limit, so
 * the valid ranges between them fit) they are zeros in buf, and known.
 */
static void describe_holes(const struct cfile *f, uint64_t base, uint64_t end,
			   uint8_t *buf, struct rangeset *known,
			   struct disk_page *pg)
{
	struct range r[16];

	for (uint64_t at = base; at < end;) {
		size_t k = cfile_holes_in(f, at, end, r, 16);

		for (size_t i = 0; i < k && i < 16; i++) {
			uint64_t s = r[i].start - base, e = r[i].end - base;
			struct disk_range h = { (uint32_t)s,
						   (uint32_t)(e - s) };

			if (pg->nholes < DISK_MAX_RANGES - 1) {
				if (rangeset_remove(known, s, e) == 0)
					pg->holes[pg->nholes++] = h;
			} else if (rangeset_add(known, s, e) == 0) {
				memset(buf + s, 0, e - s);
			}
		}
		if (k <= 16)
			break;
		at = r[15].end;
	}
}

bool disk_tier_describe(const struct cache *c, const struct cfile *f,
			uint64_t pgi, uint64_t off, const uint8_t *data,
			uint64_t len, const struct cattr *a, uint8_t *buf,
			struct disk_page *pg)
{
	uint64_t ps = cache_page_size(c), base = pgi * ps, end = base + ps;
	uint64_t s = off > base ? off : base;
	struct rangeset known = RANGESET_INIT;
	const struct range *v;
	size_t n;

	memset(pg, 0, sizeof(*pg));
	pg->attr = tier_attr(a);
	end = end < a->size ? end : a->size;
	if (base >= end)
		return false;
	cfile_page_clean(c, f, pgi, buf, &known);	/* ENOMEM: a subset */
	if (s < off + len && s < end) {
		uint64_t t = off + len < end ? off + len : end;

		memcpy(buf + (s - base), data + (s - off), t - s);
		rangeset_add(&known, s - base, t - base);
	}
	describe_holes(f, base, end, buf, &known, pg);
	rangeset_truncate(&known, end - base);
	v = rangeset_ranges(&known, &n);
	for (size_t i = 0; i < n && i < DISK_MAX_RANGES; i++)
		pg->valid[pg->nvalid++] = (struct disk_range){
			(uint32_t)v[i].start,
			(uint32_t)(v[i].end - v[i].start) };
	pg->data = pg->nvalid ? buf : NULL;
	rangeset_clear(&known);
	return pg->nvalid || pg->nholes;
}

void disk_tier_filled(struct daemon *d, struct cfile *f, uint64_t off,
		      const uint8_t *data, uint64_t len, const struct cattr *a)
{
	struct disk *dk = tier_disk(d);
	uint32_t ps = cache_page_size(d->cache);
	struct disk_page pg;
	struct disk_key k;

	if (!dk || !a || !disk_on(dk) || len == 0)
		return;
	for (uint64_t p = off / ps; p * ps < off + len; p++) {
		if (!disk_tier_key(f, p, &k))
			return;
		if (disk_tier_describe(d->cache, f, p, off, data, len, a,
				       d->disk_tier->buf, &pg))
			disk_store(dk, &k, &pg);
	}
	if (d->tier_kept)
		d->tier_kept(d, f);	/* the version these pages belong to */
}

/* True when the stored version attributes equal f's current ones. */
static bool tier_same_version(const struct cfile *f, const struct disk_attr *s)
{
	struct disk_attr now;

	if (!cfile_has_attr(f))
		return false;
	now = tier_attr(cfile_attr(f));
	return memcmp(&now, s, sizeof(now)) == 0;
}

/* One load of a batch: which page. */
struct dt_load {
	struct dt_batch *b;
	uint64_t page;
};

/* Fill a loaded page into the cache, at page index pgi: its holes into
 * f's hole set, its valid bytes into the page. */
static void tier_fill(struct dt_batch *b, uint64_t pgi, const struct disk_page *pg)
{
	uint64_t base = pgi * cache_page_size(b->d->cache);

	for (uint32_t i = 0; i < pg->nholes; i++)
		cfile_hole_add(b->d->cache, b->f, base + pg->holes[i].off,
			       base + pg->holes[i].off + pg->holes[i].len);
	for (uint32_t i = 0; i < pg->nvalid; i++)
		cache_fill_ex(b->d->cache, b->f, base + pg->valid[i].off,
			      pg->data + pg->valid[i].off, pg->valid[i].len,
			      b->readahead);
}

/* Count a loaded page that was not used (struct disk_tier). */
static void unused_hit(struct disk_tier *t, const struct disk_page *pg)
{
	t->unused_hits++;
	for (uint32_t i = 0; i < pg->nvalid; i++)
		t->unused_hit_bytes += pg->valid[i].len;
}

/* One page of a batch came back: fill it, or drop a changed file. */
static void tier_loaded(void *arg, enum disk_result r, const struct disk_page *pg)
{
	struct dt_load *l = arg;
	struct dt_batch *b = l->b;
	bool same_gen = r == DISK_HIT && cfile_gen(b->f) == b->gen;
	bool same_version = same_gen && tier_same_version(b->f, &pg->attr);

	CHECK_OBJ(b->d->disk_tier, DISK_TIER_MAGIC);	/* outlives b */
	if (r == DISK_HIT && !same_version)
		unused_hit(b->d->disk_tier, pg);
	if (same_gen) {
		if (same_version) {
			tier_fill(b, l->page, pg);
		} else if (!b->dropped && tier_disk(b->d)) {
			/* (No store while disk_close runs the last loads:
			 * what they found is dropped at the next start.) */
			size_t len;
			const uint8_t *fh = cfile_fh(b->f, &len);

			b->dropped = true;
			log_debug("disk tier: a file changed since its pages "
				  "were stored; dropping them");
			disk_drop_file(tier_disk(b->d), fh, (uint8_t)len);
			/* The outage record follows the version now known. */
			if (b->d->tier_kept)
				b->d->tier_kept(b->d, b->f);
		}
	}
	free(l);
	batch_unhold(b);
}

/* Drop one of b's pending counts (a load back, the room come, the hold
 * while sending); the last one calls done and frees b. */
static void batch_unhold(struct dt_batch *b)
{
	if (--b->pending > 0)
		return;
	if (b->done)
		b->done(b->arg);
	cfile_put(b->d->cache, &b->f);
	free(b);
}

/* A new batch on f, or NULL. */
static struct dt_batch *batch_new(struct daemon *d, struct cfile *f, bool ra)
{
	struct dt_batch *b = calloc(1, sizeof(*b));
	size_t len;
	const uint8_t *fh = cfile_fh(f, &len);

	if (!b)
		return NULL;
	b->d = d;
	b->f = cache_find(d->cache, fh, len);	/* a reference */
	if (!b->f) {
		free(b);
		return NULL;
	}
	b->gen = cfile_gen(f);
	b->readahead = ra;
	b->pending = 1;		/* held while loads are sent */
	return b;
}

/* Send the load of page pgi for b if the tier holds it. */
static bool batch_load(struct dt_batch *b, uint64_t pgi)
{
	struct disk *dk = tier_disk(b->d);
	struct disk_key k;
	struct dt_load *l;

	if (!disk_tier_key(b->f, pgi, &k) || !disk_has(dk, &k) ||
	    !(l = malloc(sizeof(*l))))
		return false;
	l->b = b;
	l->page = pgi;
	b->pending++;
	disk_load(dk, &k, tier_loaded, l);
	return true;
}

/* Send loads for the pages [s, e) touches; the pages sent go to *taken. */
static unsigned batch_range(struct dt_batch *b, uint64_t s, uint64_t e,
			    unsigned budget, struct rangeset *taken)
{
	uint32_t ps = cache_page_size(b->d->cache);
	unsigned sent = 0;

	for (uint64_t p = s / ps; p * ps < e && sent < budget; p++) {
		if (!batch_load(b, p))
			continue;
		sent++;
		if (taken)
			rangeset_add(taken, p * ps, (p + 1) * ps);
	}
	return sent;
}

/* Let go of the batch's hold; false if no load was sent (freed). */
static bool batch_release(struct dt_batch *b, unsigned sent)
{
	if (sent == 0) {
		cfile_put(b->d->cache, &b->f);
		free(b);
		return false;
	}
	batch_unhold(b);	/* each may have completed at once (ENOMEM) */
	return true;
}

/* Make b wait, as one more pending count, until the tier has room for
 * the stores its READ's fetches will make (tier_room_wake). */
static void batch_wait_room(struct disk_tier *t, struct dt_batch *b)
{
	b->pending++;
	b->room_next = NULL;
	if (t->room_tail)
		t->room_tail->room_next = b;
	else
		t->room_head = b;
	t->room_tail = b;
	t->room_waits++;
}

bool disk_tier_load(struct daemon *d, struct cfile *f, const struct range *r,
		    size_t n, bool readahead, disk_tier_done_fn *done, void *arg)
{
	struct disk *dk = tier_disk(d);
	struct dt_batch *b;
	unsigned sent = 0;

	if (!dk || !disk_on(dk) || !(b = batch_new(d, f, readahead)))
		return false;
	b->done = done;
	b->arg = arg;
	for (size_t i = 0; i < n; i++)
		sent += batch_range(b, r[i].start, r[i].end, DT_MAX_LOADS - sent,
				    NULL);
	/* What the disk does not hold is fetched once done runs: while the
	 * stores are behind, that waits for room (backpressure, not drops). */
	if (!readahead && tier_congested(d->disk_tier)) {
		batch_wait_room(d->disk_tier, b);
		sent++;
	}
	return batch_release(b, sent);
}

uint64_t disk_tier_store_cap(uint64_t max_pages)
{
	uint64_t cap = max_pages / DISK_TIER_STORE_DIV;

	return max_pages == 0 ? 0 : cap ? cap : 1;
}

bool disk_tier_congested(const struct daemon *d)
{
	return tier_congested(d->disk_tier);
}

void disk_tier_take(struct daemon *d, struct cfile *f, struct rangeset *rest)
{
	struct disk *dk = tier_disk(d);
	struct rangeset taken = RANGESET_INIT;
	const struct range *r;
	struct dt_batch *b;
	unsigned sent = 0;
	size_t n;

	if (!dk || !disk_on(dk) || !(b = batch_new(d, f, true)))
		return;
	r = rangeset_ranges(rest, &n);
	for (size_t i = 0; i < n; i++)
		sent += batch_range(b, r[i].start, r[i].end, DT_MAX_LOADS - sent,
				    &taken);
	r = rangeset_ranges(&taken, &n);
	for (size_t i = 0; i < n; i++)
		rangeset_remove(rest, r[i].start, r[i].end);
	rangeset_clear(&taken);
	batch_release(b, sent);
}

/* Write one counter or gauge line with its HELP and TYPE. */
static void render_one(struct evbuffer *o, const char *name, const char *type,
		       const char *help, uint64_t v)
{
	evbuffer_add_printf(o, "# HELP nfscached_%s %s\n# TYPE nfscached_%s %s\n"
			    "nfscached_%s %" PRIu64 "\n", name, help, name, type,
			    name, v);
}

/* Write the disk I/O latency histogram. */
static void render_latency(struct evbuffer *o, const struct disk_stats *st)
{
	static const uint64_t bound[DISK_LAT_NBUCKETS] = DISK_LAT_BUCKETS_US;
	const char *n = "nfscached_disk_io_duration_seconds";

	evbuffer_add_printf(o, "# HELP %s Time one disk tier operation (a "
			    "load, or a batch of stores) took on its worker "
			    "thread.\n# TYPE %s histogram\n", n, n);
	for (int i = 0; i < DISK_LAT_NBUCKETS; i++)
		evbuffer_add_printf(o, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", n,
				    (double)bound[i] / 1e6, st->lat_bucket[i]);
	evbuffer_add_printf(o, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n"
			    "%s_sum %g\n%s_count %" PRIu64 "\n", n,
			    st->lat_count, n, (double)st->lat_sum_us / 1e6, n,
			    st->lat_count);
}

bool disk_tier_stats(const struct daemon *d, struct disk_stats *st)
{
	const struct disk_tier *t = d->disk_tier;

	memset(st, 0, sizeof(*st));
	if (!t || !t->disk)
		return false;
	disk_stats_get(t->disk, st);
	/* Loads not used are not hits (unused_hit); the disk layer's counts
	 * include them, and only ever grow. */
	st->hits -= t->unused_hits <= st->hits ? t->unused_hits : st->hits;
	st->hit_bytes -= t->unused_hit_bytes <= st->hit_bytes ?
			 t->unused_hit_bytes : st->hit_bytes;
	return true;
}

void disk_tier_render(const struct daemon *d, struct evbuffer *o)
{
	struct disk_stats st;

	if (!disk_tier_stats(d, &st)) {
		render_one(o, "disk_on", "gauge", "1 while the disk tier is in "
			   "use, 0 when off or not configured.", 0);
		return;
	}
#define X(f, name, type, help) render_one(o, name, #type, help, st.f);
	DISK_COUNTERS(X)
#undef X
	render_one(o, "disk_bytes", "gauge", "Bytes of pages the disk tier "
		   "holds (whole slots).", st.bytes_held);
	render_one(o, "disk_budget_bytes", "gauge", "The disk tier's budget "
		   "(disk_cache_size in whole pages).", st.budget_bytes);
	render_one(o, "disk_on", "gauge", "1 while the disk tier is in use, 0 "
		   "when off or not configured.", st.on);
	render_one(o, "disk_store_queued_bytes", "gauge", "Page copies held by "
		   "stores waiting for the disk (lent by the cache: counted in "
		   "nfscached_cache_loan_bytes).",
		   st.store_bufs * cache_page_size(d->cache));
	render_one(o, "disk_load_queued_bytes", "gauge", "Page buffers held by "
		   "loads from the disk not yet filled into the cache (lent "
		   "by the cache too).", st.load_bufs * cache_page_size(d->cache));
	render_one(o, "disk_journal_queued_bytes", "gauge", "Copies of local "
		   "commit's journal records waiting for their transaction "
		   "(not lent by the cache: outside cache_size).",
		   st.journal_queued_bytes);
	render_one(o, "disk_store_queue_limit_bytes", "gauge", "Page copies "
		   "the stores may hold before READs that miss wait for room "
		   "(a quarter of the cache's pages).",
		   d->disk_tier->store_cap * cache_page_size(d->cache));
	render_one(o, "disk_room_waits_total", "counter", "READs that waited "
		   "for the disk's stores to catch up before fetching "
		   "(backpressure instead of dropping stores).",
		   d->disk_tier->room_waits);
	render_one(o, "disk_dirty_records", "gauge", "Journal records of "
		   "locally committed data (commit = \"local\") in cache_dir "
		   "(a full record per page not yet stable upstream, and its "
		   "deltas).", st.journal_records);
	render_one(o, "disk_dirty_bytes", "gauge", "Bytes of those records "
		   "(the locally committed data with its extents).",
		   st.journal_bytes);
	render_one(o, "disk_outage_records", "gauge", "Outage records "
		   "(stale_on_error: root handles, attributes, ACCESS results, "
		   "names, FSINFO/FSSTAT/PATHCONF results) held in cache_dir.",
		   st.outage_records);
	render_one(o, "disk_outage_records_dropped_total", "counter",
		   "Outage records not kept: the writer's queue was full or "
		   "the bound of 65536 records was reached.",
		   st.outage_dropped);
	render_one(o, "disk_outage_checksum_failures_total", "counter",
		   "Outage records that failed their checksum when read at "
		   "the start (deleted, never served).", st.outage_failures);
	render_latency(o, &st);
}

struct disk *disk_tier_disk(const struct daemon *d)
{
	return tier_disk(d);
}

void disk_tier_drain(struct daemon *d)
{
	struct disk *dk = tier_disk(d);

	if (dk) {
		disk_drain(dk);
		tier_room_wake(d->disk_tier, false);
	}
}

void disk_tier_forget(struct daemon *d, const uint8_t *fh, size_t len)
{
	struct disk *dk = tier_disk(d);

	if (dk && disk_on(dk) && len <= UINT8_MAX)
		disk_drop_file(dk, fh, (uint8_t)len);
}

void disk_tier_drop_all(struct daemon *d)
{
	struct disk *dk = tier_disk(d);

	if (dk && disk_on(dk))
		disk_drop_all(dk);
}

int disk_tier_gate(struct daemon *d, enum disk_tier_gate_action a,
		   bool *closed, unsigned *held)
{
	struct disk_tier *t = d->disk_tier;

	if (!t || !t->disk)
		return -1;
	if (a == DISK_TIER_GATE_CLOSE) {
		disk_gate_close(t->disk);
		t->gate_closed = true;
	} else if (a == DISK_TIER_GATE_OPEN) {
		disk_gate_open(t->disk);
		t->gate_closed = false;
	}
	*closed = t->gate_closed;
	*held = disk_gate_waiting(t->disk);
	return 0;
}
