/* SPDX-License-Identifier: MIT */
/*
 * cache: files, pages, valid byte ranges, attributes, ACCESS results and
 * 2Q eviction (see cache.h for the model and the policy's reason). The
 * write-back extents of pages are in cache_wb.c; the structures both files
 * use are in cache_impl.h.
 *
 * Ownership: the cache owns every cfile (hash by upstream handle) and every
 * cpage (hash per file by page index, and on exactly one of the queues A1in
 * or Am). Callers hold counted references to files; pages are never handed
 * out (cache_peek lends a page's bytes until the next call into the
 * cache; cache_lend keeps a page's buffer for a reply until it is put).
 * A file is freed when it has no reference, no page and no
 * attributes, or with the cache.
 *
 * Invariants (cache_check): every page is on the queue its `queue` field
 * names and in its file's hash; queue lengths match their counters; pages
 * + loans <= max_pages after every fill and every loan (a lent buffer,
 * cache_loan_get, is charged as a page until cache_loan_put: the pool's
 * buffers in use are the pages plus the loans, so what the pool maps
 * stays within the budget); each page's valid set lies inside
 * [0, page_size) and passes rangeset_check; a file's valid_bytes is the sum
 * of its pages' valid bytes; holes and valid bytes never overlap; a file
 * keeps at most CACHE_ACL_SLOTS GETACL replies (nacl of them), of distinct
 * masks, each 1..CACHE_ACL_MAX bytes, and the replies of all files, each
 * charged acl_charge(), sum to st.acl_bytes <= acl_max; a page's lend
 * (cache_lend) names that page and its buffer and is held at least once;
 * `lends` counts the lent pages plus the lends whose page was freed, whose
 * buffers are counted in `loans`.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>
#include <xxhash.h>

#include "cache.h"
#include "cache_impl.h"
#include "pagepool.h"
#include "readahead.h"

#define RA_IDLE_SLACK 16	/* other files' queue entries past one
				 * window without a use of a file after
				 * which its prefetch counts abandoned
				 * (ra_idle) */

static const char *const outcome_names[] = {
#define X(e, s) s,
	CACHE_OUTCOMES(X)
#undef X
};

static const char *const inval_cause_names[] = {
#define X(e, s) [e] = s,
	CACHE_INVAL_CAUSES(X)
#undef X
};

const char *cache_inval_cause_name(enum cache_inval_cause k)
{
	return k < CACHE_INVAL_NCAUSES ? inval_cause_names[k] : "?";
}

const char *cache_outcome_name(enum cache_outcome o)
{
	return o < CACHE_NOUTCOMES ? outcome_names[o] : "?";
}

#define MALLOC_CHUNK 16	/* glibc's header and rounding per allocation */

/*
 * What a page costs the budget beyond its data (docs/design.md "Cache
 * model": RSS stays within cache_size + 10% at every page size): its cpage
 * and a header's worth for the data buffer (the page pool has none; it
 * stands for a chunk's free slots), a first write-back extent array and
 * the wbpages range naming it (every page may hold uncommitted data), half
 * a ghost (kout is half the pages) and hash buckets for both. At 4 KiB
 * pages this is about 11% of the page (444 bytes on x86-64).
 */
static uint64_t page_overhead(void)
{
	return sizeof(struct cpage) + 2 * MALLOC_CHUNK +
	       4 * sizeof(struct wbext) + MALLOC_CHUNK +
	       2 * sizeof(struct range) +
	       (sizeof(struct ghost) + MALLOC_CHUNK) / 2 +
	       4 * sizeof(void *);
}

struct cache *cache_new(const struct cache_params *p)
{
	struct cache *c;

	if (p->page_size < CACHE_PAGE_MIN || p->page_size > CACHE_PAGE_MAX ||
	    (p->page_size & (p->page_size - 1)) ||
	    (p->hole_granularity & (p->hole_granularity - 1)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->page_size = p->page_size;
	while ((1u << c->shift) < p->page_size)
		c->shift++;
	c->page_cost = p->page_size + page_overhead();
	c->max_pages = p->budget / c->page_cost;
	if (!(c->pool = pagepool_new(p->page_size,
				     c->max_pages * p->page_size,
				     p->preallocate))) {
		free(c);
		return NULL;
	}
	c->kin = c->max_pages / 4 ? c->max_pages / 4 : 1;
	c->kout = c->max_pages / 2 ? c->max_pages / 2 : 1;
	c->st.budget = p->budget;
	c->st.page_cost = c->page_cost;
	c->hole_granularity = p->hole_granularity;
	c->max_files = p->max_files;
	c->acl_max = p->budget / CACHE_ACL_BUDGET_SHARE;
	return c;
}

/* The oldest page on the queue whose newest page is head that no reply
 * holds (cache_lend): the one eviction may take. NULL: none. */
static struct cpage *oldest_unlent(const struct cpage *head)
{
	if (!head)
		return NULL;
	for (const struct cpage *p = head->prev;; p = p->prev) {
		if (!p->lend)
			return (struct cpage *)(uintptr_t)p;
		if (p == head)
			return NULL;
	}
}

bool cache_has_room(const struct cache *c)
{
	return c->st.pages + c->loans < c->max_pages ||
	       oldest_unlent(c->a1in) || oldest_unlent(c->am) ||
	       oldest_unlent(c->ra);
}

uint32_t cache_page_size(const struct cache *c)
{
	return c->page_size;
}

/* ---- pages and queues ---- */

void page_queue_del(struct cache *c, struct cpage *p)
{
	if (p->queue == Q_A1IN) {
		DL_DELETE(c->a1in, p);
		c->n_a1in--;
	} else if (p->queue == Q_AM) {
		DL_DELETE(c->am, p);
		c->n_am--;
	} else if (p->queue == Q_RA) {
		DL_DELETE(c->ra, p);
		c->n_ra--;
	}
	p->queue = Q_NONE;
}

void page_queue_add(struct cache *c, struct cpage *p, enum queue q)
{
	p->queue = (uint8_t)q;
	p->stamp = ++c->clock;
	p->file->own_entries++;
	if (q == Q_A1IN) {
		DL_PREPEND(c->a1in, p);
		c->n_a1in++;
	} else if (q == Q_RA) {
		DL_PREPEND(c->ra, p);
		c->n_ra++;
	} else {
		DL_PREPEND(c->am, p);
		c->n_am++;
	}
}

/* Free one page: off its queue and its file, data released. */
static void page_free(struct cache *c, struct cpage *p)
{
	struct cfile *f = p->file;

	if (p->nwb) {
		wb_account(c, p, -1);
		p->nwb = 0;
		wb_pages_update(c, p);
	}
	free(p->wb);
	c->st.ra_wasted_bytes += p->ra_bytes;
	page_queue_del(c, p);
	HASH_DEL(f->pages, p);
	f->npages--;
	f->valid_bytes -= rangeset_bytes(&p->valid);
	c->st.valid_bytes -= rangeset_bytes(&p->valid);
	rangeset_clear(&p->valid);
	if (p->lend) {
		/* A reply still sends from this buffer: it stays, as a
		 * loan, until the last lend of it is put. */
		p->lend->page = NULL;
		DL_APPEND(c->detached, p->lend);
		c->loans++;
		c->lends_detached++;
		c->st.loan_bytes += c->page_size;
	} else {
		pagepool_put(c->pool, p->data);
	}
	free(p);
	c->st.pages--;
	c->st.page_bytes -= c->page_size;
}

/* Remember an A1in eviction as a ghost, dropping the oldest over kout. */
static void ghost_add(struct cache *c, uint64_t id, uint64_t index)
{
	struct ghost *g = calloc(1, sizeof(*g)), *old;

	if (!g)
		return;
	g->key[0] = id;
	g->key[1] = index;
	HASH_ADD(hh, c->ghosts, key, sizeof(g->key), g);
	DL_PREPEND(c->ghost_list, g);
	c->nghosts++;
	while (c->nghosts > c->kout) {
		old = c->ghost_list->prev;	/* the tail */
		HASH_DEL(c->ghosts, old);
		DL_DELETE(c->ghost_list, old);
		free(old);
		c->nghosts--;
	}
}

/* Consume the ghost of (id, index) if remembered. */
static bool ghost_take(struct cache *c, uint64_t id, uint64_t index)
{
	uint64_t key[2] = { id, index };
	struct ghost *g;

	HASH_FIND(hh, c->ghosts, key, sizeof(key), g);
	if (!g)
		return false;
	HASH_DEL(c->ghosts, g);
	DL_DELETE(c->ghost_list, g);
	free(g);
	c->nghosts--;
	return true;
}

/*
 * Queue entries after which a file's prefetched pages count as abandoned:
 * entries of other files' pages since the file's last use (its own
 * prefetch landing never makes a reader look gone, however many windows
 * land while it waits, as on a busy machine). Another stream's whole
 * window can land between two reads of a live one, so a window never
 * counts; RA_IDLE_SLACK entries more must pass.
 */
static uint64_t ra_idle(const struct cache *c)
{
	uint64_t window = c->ra_params_set ?
			  ra_full_window(&c->ra_params) >> c->shift : 0;

	return window + RA_IDLE_SLACK;
}

/* Queue entries of other files' pages since f's last use. */
static uint64_t others_since_use(const struct cache *c, const struct cfile *f)
{
	return (c->clock - f->last_use) - (f->own_entries - f->own_at_use);
}

/* Evict one page by 2Q. False if nothing can be evicted. */
static bool evict_one(struct cache *c)
{
	/* A page a reply still sends from is passed over: evicting it
	 * would free no room (its buffer stays, as a loan). */
	struct cpage *ra = oldest_unlent(c->ra), *in = oldest_unlent(c->a1in);
	struct cpage *am = oldest_unlent(c->am), *victim;
	bool a1 = in && (c->n_a1in > c->kin || !am);

	/*
	 * Prefetched pages never read go first once their reader has gone
	 * (other files made ra_idle() queue entries since its last use):
	 * an abandoned stream's prefetch goes before any page that was
	 * read. A stream still being read keeps what lies just ahead of its
	 * reader: pages it has passed (A1in) go before, so a stream larger
	 * than the cache drops what is behind it, not what it is about to
	 * read.
	 */
	if (ra && others_since_use(c, ra->file) > ra_idle(c)) {
		victim = ra;
	} else if (a1) {
		victim = in;
		ghost_add(c, victim->file->id, victim->index);
	} else if (am) {
		victim = am;
	} else if (ra) {
		victim = ra;
	} else {
		return false;
	}
	page_free(c, victim);
	c->st.evictions++;
	return true;
}

struct cpage *page_find(const struct cfile *f, uint64_t index)
{
	struct cpage *p;

	HASH_FIND(hh, f->pages, &index, sizeof(index), p);
	return p;
}

struct cpage *page_get(struct cache *c, struct cfile *f,
		       uint64_t index, bool ra)
{
	struct cpage *p = page_find(f, index);

	if (p)
		return p;
	while (c->st.pages + c->loans >= c->max_pages)
		if (!evict_one(c))
			return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->data = pagepool_get(c->pool))) {
		free(p);
		return NULL;
	}
	p->index = index;
	p->file = f;
	rangeset_init(&p->valid);
	HASH_ADD(hh, f->pages, index, sizeof(p->index), p);
	f->npages++;
	c->st.pages++;
	c->st.page_bytes += c->page_size;
	if (ghost_take(c, f->id, index)) {
		page_queue_add(c, p, Q_AM);
		c->st.promotions++;
	} else {
		page_queue_add(c, p, ra ? Q_RA : Q_A1IN);
	}
	return p;
}

void *cache_loan_get(struct cache *c)
{
	void *buf;

	while (c->st.pages + c->loans >= c->max_pages)
		if (!evict_one(c))
			return NULL;
	if (!(buf = pagepool_get(c->pool)))
		return NULL;
	c->loans++;
	c->st.loan_bytes += c->page_size;
	return buf;
}

void cache_loan_put(struct cache *c, void *buf)
{
	if (!buf)
		return;
	pagepool_put(c->pool, buf);
	c->loans--;
	c->st.loan_bytes -= c->page_size;
}

/* Note a use of p: Am pages move to the head; A1in pages stay (2Q);
 * prefetched pages read for the first time join A1in. */
static void page_touch(struct cache *c, struct cpage *p)
{
	p->file->last_use = c->clock;
	p->file->own_at_use = p->file->own_entries;
	if (p->ra_bytes) {
		c->st.ra_used_bytes += p->ra_bytes;
		p->ra_bytes = 0;
		if (p->queue == Q_RA) {
			page_queue_del(c, p);
			page_queue_add(c, p, Q_A1IN);
		}
	}
	if (p->queue == Q_AM && c->am != p) {
		DL_DELETE(c->am, p);
		DL_PREPEND(c->am, p);
	}
}

/* ---- files ---- */

/* Build the hash key of a handle. */
static void fh_key(uint8_t *key, const uint8_t *fh, size_t len)
{
	memset(key, 0, CACHE_FH_MAX + 1);
	key[0] = (uint8_t)len;
	memcpy(key + 1, fh, len);
}

/* The hash of a handle's key (fh_key), over its length byte and the
 * handle only, not the zeros after: uthash's own, over all
 * CACHE_FH_MAX + 1 bytes, cost 550 instructions per READ, and still 240
 * over the handle alone (issue 42); XXH3 about a tenth of that. Every
 * add to and lookup in c->files goes through it. */
static unsigned fh_key_hash(const uint8_t *key)
{
	return (unsigned)XXH3_64bits(key, (size_t)key[0] + 1u);
}

static void file_free(struct cache *c, struct cfile *f);
static void acls_free(struct cache *c, struct cfile *f);

/*
 * True if forgetting f loses nothing but cached knowledge: nobody holds
 * it, it has no pages, nothing of its write-back is pending or in flight,
 * no write-back error waits to be reported, no own mutation is in flight.
 */
static bool file_forgettable(const struct cfile *f)
{
	return f->refs == 0 && f->npages == 0 && !f->owner &&
	       !f->nfetches &&
	       !f->mut_inflight && !f->on_dirty && f->nruns == 0 &&
	       !f->wb_error && wb_total(f) == 0;
}

/*
 * While there are more than max_files files, forget forgettable ones from
 * the least recently used end, looking at FILE_TRIM_LOOK at most per call
 * (files with pages lose them to page eviction first and are forgotten on
 * a later call).
 */
#define FILE_TRIM_LOOK 32
static void files_trim(struct cache *c)
{
	struct cfile *f = c->lru ? c->lru->lprev : NULL, *prev;

	for (unsigned look = 0; f && look < FILE_TRIM_LOOK &&
	     c->max_files && c->st.files > c->max_files; look++, f = prev) {
		prev = f == c->lru ? NULL : f->lprev;
		if (file_forgettable(f)) {
			file_free(c, f);
			c->st.files_forgotten++;
		}
	}
}

struct cfile *cache_find(struct cache *c, const uint8_t *fh, size_t len)
{
	struct cfile *f;
	uint8_t key[CACHE_FH_MAX + 1];

	if (len == 0 || len > CACHE_FH_MAX)
		return NULL;
	fh_key(key, fh, len);
	HASH_FIND_BYHASHVALUE(hh, c->files, key, sizeof(key), fh_key_hash(key),
			      f);
	if (f) {
		f->refs++;
		if (c->lru != f) {
			DL_DELETE2(c->lru, f, lprev, lnext);
			DL_PREPEND2(c->lru, f, lprev, lnext);
		}
	}
	return f;
}

struct cfile *cache_get(struct cache *c, const uint8_t *fh, size_t len)
{
	struct cfile *f = cache_find(c, fh, len);

	if (f || len == 0 || len > CACHE_FH_MAX)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->magic = CFILE_MAGIC;
	f->refs = 1;
	f->id = ++c->next_id;
	fh_key(f->key, fh, len);
	rangeset_init(&f->holes);
	HASH_ADD_BYHASHVALUE(hh, c->files, key, sizeof(f->key),
			     fh_key_hash(f->key), f);
	DL_PREPEND2(c->lru, f, lprev, lnext);
	c->st.files++;
	files_trim(c);
	return f;
}

/* Free every page of f. */
static void file_drop_pages(struct cache *c, struct cfile *f)
{
	struct cpage *p, *tmp;

	HASH_ITER(hh, f->pages, p, tmp)
		page_free(c, p);
}

/* Free f itself (it must have no pages). */
static void file_free(struct cache *c, struct cfile *f)
{
	HASH_DEL(c->files, f);
	DL_DELETE2(c->lru, f, lprev, lnext);
	if (f->ra) {
		struct ra_stats rs;

		ra_stats_get(f->ra, &rs);
		ra_stats_add(&c->ra_gone, &rs);
		ra_state_free(&f->ra);
	}
	fetch_free_all(f);
	rangeset_clear(&f->holes);
	rangeset_clear(&f->wbpages);
	free(f->runs);
	free(f->access);
	acls_free(c, f);
	f->magic = 0;
	free(f);
	c->st.files--;
}

void cfile_put(struct cache *c, struct cfile **fp)
{
	struct cfile *f = *fp;

	*fp = NULL;
	if (!f || --f->refs > 0)
		return;
	file_free_unused(c, f);
}

void file_free_unused(struct cache *c, struct cfile *f)
{
	if (!f->refs && !f->npages && !f->has_attr && !f->mut_inflight &&
	    !f->owner && !f->nfetches)
		file_free(c, f);
}

void cache_owner_clear(struct cache *c,
		       void (*fn)(struct fstate *owner, void *arg), void *arg)
{
	struct cfile *f, *tmp;

	HASH_ITER(hh, c->files, f, tmp) {
		if (f->owner)
			fn(f->owner, arg);
		f->owner = NULL;
	}
}

void cache_owner_each(struct cache *c,
		      void (*fn)(struct cache *c, struct cfile *f,
				 struct fstate *owner, void *arg),
		      void *arg)
{
	struct cfile *f, *tmp;

	HASH_ITER(hh, c->files, f, tmp)
		if (f->owner)
			fn(c, f, f->owner, arg);
}

uint64_t cfile_gen(const struct cfile *f)
{
	return f->gen;
}

bool cfile_gen_holds(const struct cfile *f, uint64_t gen)
{
	return f->gen == gen;
}

struct fstate **cfile_owner_slot(struct cfile *f)
{
	return &f->owner;
}

void cache_free(struct cache **cp)
{
	struct cache *c = cp ? *cp : NULL;
	struct cfile *f, *ftmp;
	struct ghost *g, *gtmp;
	struct cache_lend *l, *ltmp;

	if (!c)
		return;
	HASH_ITER(hh, c->files, f, ftmp) {
		file_drop_pages(c, f);
		file_free(c, f);
	}
	/* Replies that still hold lends are never written now (the
	 * server is freed first): let them go without the cache. */
	DL_FOREACH_SAFE(c->detached, l, ltmp) {
		DL_DELETE(c->detached, l);
		l->c = NULL;
	}
	DL_FOREACH_SAFE(c->ghost_list, g, gtmp) {
		HASH_DEL(c->ghosts, g);
		DL_DELETE(c->ghost_list, g);
		free(g);
	}
	free(c->creds);
	pagepool_free(&c->pool);
	free(c);
	*cp = NULL;
}

/* ---- attributes ---- */

bool cfile_has_attr(const struct cfile *f)
{
	return f->has_attr;
}

const struct cattr *cfile_attr(const struct cfile *f)
{
	return &f->shown;
}

void file_shown_update(struct cfile *f)
{
	f->shown = f->attr;
	if (f->local) {
		f->shown.size = f->local_size;
		f->shown.mtime = f->local_mtime;
		f->shown.ctime = f->local_ctime;
	}
}

bool cfile_attr_fresh(const struct cfile *f, double now)
{
	return f->has_attr && now < f->attr_time + f->timeo;
}

double cfile_attr_timeout(const struct cfile *f)
{
	return f->timeo;
}

void cfile_attr_expire(struct cfile *f)
{
	f->timeo = 0;
}

void cfile_attr_links_changed(struct cfile *f)
{
	f->timeo = 0;
	f->own_links = true;
}

/* Whether a differs from f's cached attributes at most as an own change
 * of its links does (ctime, nlink, atime). */
static bool links_change_only(const struct cfile *f, const struct cattr *a)
{
	const struct cattr *b = &f->attr;

	return a->type == b->type && a->mode == b->mode && a->uid == b->uid &&
	       a->gid == b->gid && a->size == b->size &&
	       a->mtime.sec == b->mtime.sec && a->mtime.nsec == b->mtime.nsec;
}

/* Compare two times. */
static bool time_eq(const struct ctime3 *a, const struct ctime3 *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

/* The change evidence of attributes. */
static struct cwcc wcc_of(const struct cattr *a)
{
	struct cwcc w = { a->size, a->mtime, a->ctime };

	return w;
}

/* Compare change evidence. */
static bool wcc_eq(const struct cwcc *a, const struct cwcc *b)
{
	return a->size == b->size && time_eq(&a->mtime, &b->mtime) &&
	       time_eq(&a->ctime, &b->ctime);
}

/* True if w is one of the proxy's own recent post-states of f. */
static bool own_state(const struct cfile *f, const struct cwcc *w)
{
	for (unsigned i = 0; i < f->nown; i++)
		if (wcc_eq(&f->own[i], w))
			return true;
	return false;
}

/* Remember w as an own post-state (newest first). */
static void own_push(struct cfile *f, const struct cwcc *w)
{
	if (f->nown < OWN_STATES)
		f->nown++;
	memmove(&f->own[1], &f->own[0], (f->nown - 1) * sizeof(f->own[0]));
	f->own[0] = *w;
}

void cfile_invalidate(struct cache *c, struct cfile *f)
{
	struct cpage *p, *tmp;

	f->gen++;
	if (f->ra && c->ra_params_set)
		ra_invalidate(f->ra, &c->ra_params);
	HASH_ITER(hh, f->pages, p, tmp) {
		uint64_t before = rangeset_bytes(&p->valid);

		if (!p->nwb) {
			page_free(c, p);
			continue;
		}
		/* Keep only the bytes still to be written upstream. */
		rangeset_clear(&p->valid);
		for (unsigned i = 0; i < p->nwb; i++)
			rangeset_add(&p->valid, p->wb[i].start, p->wb[i].end);
		f->valid_bytes -= before - rangeset_bytes(&p->valid);
		c->st.valid_bytes -= before - rangeset_bytes(&p->valid);
	}
	if (f->local && !f->on_dirty)
		f->local = false;
	else if (f->local)
		f->adopt_times = true;
	rangeset_clear(&f->holes);
	free(f->access);
	f->access = NULL;
	f->naccess = 0;
	f->access_next = 0;
	cfile_acl_drop(c, f);
}

uint64_t cache_drop_clean(struct cache *c)
{
	uint64_t before = c->st.valid_bytes;
	struct cfile *f;

	DL_FOREACH2(c->lru, f, lnext) {
		cfile_invalidate(c, f);
		cfile_attr_expire(f);
	}
	return before - c->st.valid_bytes;
}

/* Drop f's data because another writer changed it (seen by why). */
static void other_writer(struct cache *c, struct cfile *f,
			 const struct cache_ac *ac, enum cache_inval_cause why)
{
	cfile_invalidate(c, f);
	c->st.invalidations++;
	c->st.invalidations_by[why]++;
	f->timeo = ac->min;
	f->timeo_stamp = f->attr_time;
}

/* Set the attributes, confirmed at now. */
static void attr_set(struct cfile *f, const struct cattr *a, double now)
{
	if (f->adopt_times) {
		f->adopt_times = false;
		f->local_mtime = a->mtime;
		f->local_ctime = a->ctime;
		if (a->size > f->local_size)
			f->local_size = a->size;
	}
	f->attr = *a;
	f->attr_time = now;
	f->has_attr = true;
	file_shown_update(f);
}

bool cfile_attr_observe(struct cache *c, struct cfile *f,
			const struct cattr *a, double now,
			const struct cache_ac *ac)
{
	struct cwcc w = wcc_of(a), cur;

	if (!f->has_attr) {
		f->timeo = ac->min;
		f->timeo_stamp = now;
		attr_set(f, a, now);
		return false;
	}
	cur = wcc_of(&f->attr);
	if (wcc_eq(&w, &cur)) {
		/* Unchanged: trust it longer, doubling the timeout only once
		 * a whole timeout has passed since it last changed (the Linux
		 * client's attrtimeo and attrtimeo_timestamp), not at every
		 * reply: the several replies of one client read must not
		 * take acregmin to acregmax. */
		if (f->timeo < ac->min) {
			f->timeo = ac->min;
			f->timeo_stamp = now;
		} else if (now >= f->timeo_stamp + f->timeo) {
			f->timeo *= 2;
			f->timeo_stamp = now;
		}
		if (f->timeo > ac->max)
			f->timeo = ac->max;
		attr_set(f, a, now);
		return false;
	}
	if (own_state(f, &w)) {
		attr_set(f, a, now);
		return false;
	}
	if (f->own_links && links_change_only(f, a)) {
		f->own_links = false;
		own_push(f, &w);
		attr_set(f, a, now);
		return false;
	}
	if (f->mut_inflight > 0)
		return false;	/* may predate or race our own change */
	other_writer(c, f, ac, CACHE_INVAL_ATTRIBUTES);
	attr_set(f, a, now);
	return true;
}

bool cfile_attr_observe_gen(struct cache *c, struct cfile *f, uint64_t gen,
			    const struct cattr *a, double now,
			    const struct cache_ac *ac)
{
	if (a && f->gen == gen)
		cfile_attr_observe(c, f, a, now, ac);
	return f->gen == gen;
}

void cfile_mutation_begin(struct cfile *f)
{
	struct cwcc w;

	f->mut_inflight++;
	/* The state now is the pre-state of this mutation, whatever order
	 * the replies come back in. */
	if (f->has_attr) {
		w = wcc_of(&f->attr);
		if (!own_state(f, &w))
			own_push(f, &w);
	}
}

/* Whether b is not older than a, by ctime. */
static bool time_ge(const struct ctime3 *b, const struct ctime3 *a)
{
	return b->sec > a->sec || (b->sec == a->sec && b->nsec >= a->nsec);
}

/* Remove a suspect explained by an own post-state. */
static void suspect_explain(struct cfile *f, const struct cwcc *post)
{
	for (unsigned i = 0; i < f->nsuspect; i++) {
		if (wcc_eq(&f->suspect[i], post)) {
			f->suspect[i] = f->suspect[--f->nsuspect];
			return;
		}
	}
}

/* Judge an unexplained pre-state: ours later, or another writer now. */
static bool suspect_add(struct cache *c, struct cfile *f,
			const struct cwcc *pre, const struct cache_ac *ac)
{
	if (f->mut_inflight == 0) {
		other_writer(c, f, ac, CACHE_INVAL_WCC);
		return true;
	}
	if (f->nsuspect < SUSPECTS)
		f->suspect[f->nsuspect++] = *pre;
	else
		f->suspect_overflow = true;
	return false;
}

/* Before own post-state post is set: if it changed the mode, uid or gid,
 * drop the ACCESS results and the GETACL replies (the ACL's entries
 * follow the mode's bits); with no attributes to compare, the replies. */
static void perms_forget(struct cache *c, struct cfile *f,
			 const struct cattr *post)
{
	if (f->has_attr && post->mode == f->attr.mode &&
	    post->uid == f->attr.uid && post->gid == f->attr.gid)
		return;
	if (f->has_attr) {
		free(f->access);
		f->access = NULL;
		f->naccess = 0;
		f->access_next = 0;
	}
	cfile_acl_drop(c, f);
}

bool cfile_mutation_end(struct cache *c, struct cfile *f,
			const struct cwcc *pre, const struct cattr *post,
			double now, const struct cache_ac *ac)
{
	struct cwcc cur, w;
	bool dropped = false;

	if (f->mut_inflight)
		f->mut_inflight--;
	f->gen++;
	if (post) {
		w = wcc_of(post);
		suspect_explain(f, &w);
	}
	if (!pre && !post) {
		/* No reply: the change may or may not have happened. */
		f->timeo = 0;
	} else if (!pre) {
		/* No pre-op attributes (pre_op_attr is optional; Ganesha's
		 * WRITE replies never carry it): the reply is of the proxy's
		 * own call, its post-state becomes an own state. A GETATTR
		 * now would only return that state, so nothing is gained by
		 * expiring the attributes: they are revalidated at their
		 * timeout as usual, where another writer's later change shows
		 * as a state the proxy did not produce. */
	} else {
		cur = wcc_of(&f->attr);
		if (!(f->has_attr && wcc_eq(pre, &cur)) && !own_state(f, pre))
			dropped = suspect_add(c, f, pre, ac);
	}
	if (f->mut_inflight == 0 && (f->nsuspect || f->suspect_overflow)) {
		/* Pre-states no own change explained: another writer. */
		f->nsuspect = 0;
		f->suspect_overflow = false;
		if (!dropped)
			other_writer(c, f, ac, CACHE_INVAL_WCC);
		dropped = true;
	}
	if (post) {
		own_push(f, &w);
		if (!dropped && f->timeo < ac->min)
			f->timeo = ac->min;
		perms_forget(c, f, post);
		/* A reply overtaken by a later one must not set older
		 * attributes. */
		if (dropped || !f->has_attr || time_ge(&post->ctime, &f->attr.ctime))
			attr_set(f, post, now);
	} else {
		f->timeo = 0;
		cfile_acl_drop(c, f);	/* it may have changed the mode */
	}
	return dropped;
}

bool cfile_wb_write_end(struct cache *c, struct cfile *f, uint64_t off,
			uint64_t end, const struct cwcc *pre,
			const struct cattr *post, double now,
			const struct cache_ac *ac)
{
	uint64_t gen = f->gen;
	bool dropped = cfile_mutation_end(c, f, pre, post, now, ac);

	if (!dropped && f->gen == gen + 1)
		fetch_carry(f, gen, off, end);
	return dropped;
}

/* ---- ACL replies ---- */

/* What a kept reply of len bytes is charged (its allocation). */
static uint64_t acl_charge(uint32_t len)
{
	return sizeof(struct acl_reply) + len + MALLOC_CHUNK;
}

/* Free r, one of f's replies, uncharged. */
static void acl_free_one(struct cache *c, struct cfile *f,
			 struct acl_reply *r)
{
	LL_DELETE(f->acls, r);
	f->nacl--;
	c->st.acl_bytes -= acl_charge(r->len);
	free(r);
}

/* Free every reply of f (the ACL generation stays). */
static void acls_free(struct cache *c, struct cfile *f)
{
	while (f->acls)
		acl_free_one(c, f, f->acls);
}

uint64_t cfile_acl_gen(const struct cfile *f)
{
	return f->acl_gen;
}

bool cfile_acl_gen_holds(const struct cfile *f, uint64_t gen)
{
	return f->acl_gen == gen;
}

void cfile_acl_drop(struct cache *c, struct cfile *f)
{
	acls_free(c, f);
	f->acl_gen++;
}

/* f's reply for mask, or NULL. */
static struct acl_reply *acl_find(const struct cfile *f, uint32_t mask)
{
	struct acl_reply *r;

	LL_FOREACH(f->acls, r)
		if (r->mask == mask)
			return r;
	return NULL;
}

/* The reply a new one for mask replaces: the one for mask, else the
 * oldest when every slot is taken, else NULL. */
static struct acl_reply *acl_victim(const struct cfile *f, uint32_t mask)
{
	struct acl_reply *r = acl_find(f, mask);

	if (r || f->nacl < CACHE_ACL_SLOTS)
		return r;
	for (r = f->acls; r && r->next; r = r->next)
		;
	return r;
}

bool cfile_acl_store(struct cache *c, struct cfile *f, uint32_t mask,
		     const void *reply, size_t len)
{
	struct acl_reply *old = acl_victim(f, mask), *r;
	uint64_t freed = old ? acl_charge(old->len) : 0;

	if (len == 0 || len > CACHE_ACL_MAX ||
	    c->st.acl_bytes - freed + acl_charge((uint32_t)len) > c->acl_max ||
	    !(r = malloc(sizeof(*r) + len))) {
		c->st.acl_refused++;
		return false;
	}
	if (old)
		acl_free_one(c, f, old);
	r->mask = mask;
	r->len = (uint32_t)len;
	memcpy(r->bytes, reply, len);
	LL_PREPEND(f->acls, r);
	f->nacl++;
	c->st.acl_bytes += acl_charge(r->len);
	return true;
}

const void *cfile_acl_find(const struct cfile *f, uint32_t mask, size_t *len)
{
	const struct acl_reply *r = acl_find(f, mask);

	if (!r)
		return NULL;
	*len = r->len;
	return r->bytes;
}

/* ---- access ---- */

/* The slot of cr, or NULL. */
static struct access_slot *access_find(const struct cfile *f,
				       const struct nfs_cred *cr)
{
	for (unsigned i = 0; i < f->naccess; i++)
		if (nfs_cred_eq(&f->access[i].cr, cr))
			return &f->access[i];
	return NULL;
}

void cfile_access_record(struct cfile *f, const struct nfs_cred *cr,
			 uint32_t asked, uint32_t granted)
{
	struct access_slot *s = access_find(f, cr);

	if (!s) {
		if (!f->access) {
			f->access = calloc(CACHE_ACCESS_SLOTS, sizeof(*f->access));
			if (!f->access)
				return;
		}
		if (f->naccess < CACHE_ACCESS_SLOTS) {
			s = &f->access[f->naccess++];
		} else {
			s = &f->access[f->access_next];
			f->access_next = (f->access_next + 1) % CACHE_ACCESS_SLOTS;
		}
		memset(s, 0, sizeof(*s));
		s->cr = *cr;
		s->cr.machine = NULL;	/* borrowed by the caller */
		if (s->cr.ngids > NFS_CRED_MAX_GIDS)
			s->cr.ngids = NFS_CRED_MAX_GIDS;
	}
	s->known |= asked;
	s->granted = (s->granted & ~asked) | (granted & asked);
}

bool cfile_access_allows(const struct cfile *f, const struct nfs_cred *cr,
			 uint32_t bits)
{
	const struct access_slot *s = access_find(f, cr);

	return s && (s->known & bits) == bits && (s->granted & bits) == bits;
}

bool cfile_access_known(const struct cfile *f, const struct nfs_cred *cr,
			uint32_t bits, uint32_t *granted)
{
	const struct access_slot *s = access_find(f, cr);

	if (!s || (s->known & bits) != bits)
		return false;
	*granted = s->granted & bits;
	return true;
}

/* ---- data ---- */

/*
 * What f already has in page p's span [ps, pe) (absolute offsets): its
 * valid bytes and the holes there, as one set in *have (caller clears).
 * Returns 0, or -1 on ENOMEM.
 */
static int page_have(const struct cache *c, const struct cfile *f,
		     const struct cpage *p, uint64_t ps, uint64_t pe,
		     struct rangeset *have)
{
	struct range hb[8];
	size_t n;
	const struct range *v;

	(void)c;
	if (p) {
		v = rangeset_ranges(&p->valid, &n);
		for (size_t i = 0; i < n; i++)
			if (rangeset_add(have, ps + v[i].start, ps + v[i].end))
				return -1;
	}
	for (uint64_t at = ps; at < pe;) {
		size_t k = rangeset_ranges_in(&f->holes, at, pe, hb, 8);
		size_t m = k < 8 ? k : 8;

		for (size_t i = 0; i < m; i++)
			if (rangeset_add(have, hb[i].start, hb[i].end))
				return -1;
		if (k <= 8)
			break;
		at = hb[7].end;
	}
	return 0;
}

/* Ranges to fetch, as cache_plan_read collects them. */
struct fetchlist {
	struct range *r;
	size_t max;
	size_t n;		/* total, may exceed max */
	uint64_t last_end;	/* end of the last range, counted or stored */
};

/* Append [s, e) to the list, merging with the last range when they touch. */
static void fetch_push(struct fetchlist *fl, uint64_t s, uint64_t e)
{
	if (fl->n && fl->last_end == s) {
		if (fl->n <= fl->max)
			fl->r[fl->n - 1].end = e;
		fl->last_end = e;
		return;
	}
	if (fl->n < fl->max) {
		fl->r[fl->n].start = s;
		fl->r[fl->n].end = e;
	}
	fl->n++;
	fl->last_end = e;
}

/* True when every byte of [off, e) (e > off) is valid in f's pages: the
 * common hit, planned without building each page's set of what it has
 * (page_have allocated and merged one range per valid run: 2,700
 * instructions of a cached 1 KiB READ in a page of scattered writes,
 * issue 42). */
static bool plan_all_valid(const struct cache *c, const struct cfile *f,
			   uint64_t off, uint64_t e)
{
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		const struct cpage *p = page_find(f, idx);
		uint64_t ps = idx << c->shift;
		uint64_t ws = off > ps ? off - ps : 0;
		uint64_t we = e - ps < c->page_size ? e - ps : c->page_size;

		if (!p || !rangeset_contains(&p->valid, ws, we))
			return false;
	}
	return true;
}

enum cache_outcome cache_plan_read(struct cache *c, struct cfile *f,
				   uint64_t off, uint32_t count,
				   uint64_t *end, struct range *fetch,
				   size_t max, size_t *nfetch)
{
	uint64_t size = f->shown.size, covered = 0, e;
	struct range gaps[16];
	struct fetchlist fl = { fetch, max, 0, 0 };

	*nfetch = 0;
	e = off + count < off ? UINT64_MAX : off + count;
	if (e > size)
		e = size;
	*end = off < size ? e : off;
	if (off >= size || e == off)
		return CACHE_HIT;
	if (rangeset_contains(&f->holes, off, e))
		return CACHE_HOLE;
	if (plan_all_valid(c, f, off, e))
		return CACHE_HIT;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		struct rangeset have = RANGESET_INIT;
		size_t k;

		if (pe > size)
			pe = size;
		if (page_have(c, f, page_find(f, idx), ps, pe, &have) == 0) {
			covered += rangeset_covered(&have, off > ps ? off : ps,
						    e < pe ? e : pe);
			for (uint64_t at = ps; at < pe;) {
				k = rangeset_gaps(&have, at, pe, gaps, 16);
				for (size_t i = 0; i < k && i < 16; i++)
					fetch_push(&fl, gaps[i].start, gaps[i].end);
				if (k <= 16)
					break;
				at = gaps[15].end;
			}
		} else {
			fetch_push(&fl, ps, pe);
		}
		rangeset_clear(&have);
	}
	if (covered == e - off)
		return CACHE_HIT;
	*nfetch = fl.n;
	return covered ? CACHE_PARTIAL : CACHE_MISS;
}

void cache_touch(struct cache *c, struct cfile *f, uint64_t off, uint64_t len)
{
	uint64_t e = off + len;

	if (!len)
		return;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		struct cpage *p = page_find(f, idx);

		if (p)
			page_touch(c, p);
	}
}

uint64_t cache_copy(struct cache *c, struct cfile *f, uint64_t off,
		    uint64_t len, uint8_t *out)
{
	return cache_copy_ex(c, f, off, len, out, NULL);
}

uint64_t cache_copy_ex(struct cache *c, struct cfile *f, uint64_t off,
		       uint64_t len, uint8_t *out, uint64_t *hole_bytes)
{
	uint64_t e = off + len, copied = 0, holes = 0;
	struct range r[8];

	if (!len)
		return 0;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		struct cpage *p = page_find(f, idx);
		uint64_t ps = idx << c->shift;
		uint64_t ws = off > ps ? off - ps : 0;
		uint64_t we = e - ps < c->page_size ? e - ps : c->page_size;
		size_t n;
		const struct range *v;

		if (!p)
			continue;
		v = rangeset_ranges(&p->valid, &n);
		for (size_t i = 0; i < n; i++) {
			uint64_t s = v[i].start > ws ? v[i].start : ws;
			uint64_t t = v[i].end < we ? v[i].end : we;

			if (s >= t)
				continue;
			memcpy(out + (ps + s - off), p->data + s, t - s);
			copied += t - s;
		}
		page_touch(c, p);
	}
	for (uint64_t at = off; at < e;) {
		size_t k = rangeset_ranges_in(&f->holes, at, e, r, 8);

		for (size_t i = 0; i < k && i < 8; i++) {
			memset(out + (r[i].start - off), 0, r[i].end - r[i].start);
			copied += r[i].end - r[i].start;
			holes += r[i].end - r[i].start;
		}
		if (k <= 8)
			break;
		at = r[7].end;
	}
	if (hole_bytes)
		*hole_bytes = holes;
	return copied;
}

/* The page holding all of [off, off + len) of f, every byte of it valid
 * there (valid bytes are never holes: nothing to zero); NULL when len is
 * 0, the range crosses a page, or any byte is missing. cache_peek's and
 * cache_lend's test. */
static struct cpage *page_valid_range(const struct cache *c,
				      const struct cfile *f, uint64_t off,
				      uint64_t len)
{
	uint64_t idx = off >> c->shift, ps = idx << c->shift;
	struct cpage *p;

	if (!len || off + len < off || (off + len - 1) >> c->shift != idx ||
	    !(p = page_find(f, idx)) ||
	    !rangeset_contains(&p->valid, off - ps, off - ps + len))
		return NULL;
	return p;
}

const uint8_t *cache_peek(struct cache *c, struct cfile *f, uint64_t off,
			  uint64_t len)
{
	struct cpage *p = page_valid_range(c, f, off, len);

	if (!p)
		return NULL;
	page_touch(c, p);
	return p->data + (off - ((off >> c->shift) << c->shift));
}

struct cache_lend *cache_lend(struct cache *c, struct cfile *f, uint64_t off,
			      uint64_t len, const uint8_t **data)
{
	struct cpage *p = page_valid_range(c, f, off, len);

	if (!p)
		return NULL;
	if (!p->lend) {
		if (!(p->lend = malloc(sizeof(*p->lend))))
			return NULL;
		*p->lend = (struct cache_lend){ .c = c, .page = p,
						.buf = p->data };
		c->lends++;
	}
	p->lend->refs++;
	c->st.lends++;
	page_touch(c, p);
	*data = p->data + (off - ((off >> c->shift) << c->shift));
	return p->lend;
}

void cache_lend_put(struct cache_lend *l)
{
	struct cache *c;

	if (!l || --l->refs > 0)
		return;
	c = l->c;
	if (!c) {
		/* The cache went first (a reply dropped after cache_free
		 * at shutdown, never written): nothing to give back. */
		free(l);
		return;
	}
	c->lends--;
	if (l->page) {
		l->page->lend = NULL;
	} else {
		DL_DELETE(c->detached, l);
		c->lends_detached--;
		cache_loan_put(c, l->buf);
	}
	free(l);
}

void page_store(struct cache *c, struct cfile *f, struct cpage *p,
		uint64_t ps, uint64_t s, uint64_t t, uint64_t off,
		const uint8_t *data)
{
	uint64_t before = rangeset_bytes(&p->valid), after;

	memcpy(p->data + (s - ps), data + (s - off), t - s);
	if (rangeset_add(&p->valid, s - ps, t - ps))
		return;	/* ENOMEM: the bytes stay invalid, nothing lost */
	after = rangeset_bytes(&p->valid);
	f->valid_bytes += after - before;
	c->st.valid_bytes += after - before;
}

/* True if p[0..n) is all zero bytes. */
static bool is_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* True if any byte of [s, e) is valid in f's pages. */
static bool any_valid(const struct cache *c, const struct cfile *f,
		      uint64_t s, uint64_t e)
{
	for (uint64_t idx = s >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		const struct cpage *p = page_find(f, idx);
		uint64_t ps = idx << c->shift;

		if (p && rangeset_intersects(&p->valid, s > ps ? s - ps : 0,
					     e - ps < c->page_size ? e - ps
								   : c->page_size))
			return true;
	}
	return false;
}

/* Record the all-zero blocks of fetched data as holes instead of data. */
static void fill_zero_blocks(struct cache *c, struct cfile *f, uint64_t off,
			     const uint8_t *data, uint64_t len)
{
	uint64_t g = c->hole_granularity, e = off + len;

	if (!g)
		return;
	for (uint64_t b = (off + g - 1) / g * g; b + g <= e; b += g) {
		if (!is_zero(data + (b - off), g) || any_valid(c, f, b, b + g))
			continue;
		if (rangeset_add(&f->holes, b, b + g) == 0)
			c->st.zero_blocks++;
	}
}

void cache_fill(struct cache *c, struct cfile *f, uint64_t off,
		const uint8_t *data, uint64_t len)
{
	cache_fill_ex(c, f, off, data, len, false);
}

void cache_fill_ex(struct cache *c, struct cfile *f, uint64_t off,
		   const uint8_t *data, uint64_t len, bool readahead)
{
	uint64_t e = off + len;
	struct range gaps[16];

	if (!len)
		return;
	fill_zero_blocks(c, f, off, data, len);
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		uint64_t s = off > ps ? off : ps, t = e < pe ? e : pe, before;
		struct cpage *p = page_find(f, idx);
		struct rangeset have = RANGESET_INIT;
		size_t k;

		if (page_have(c, f, p, ps, pe, &have) != 0 ||
		    rangeset_contains(&have, s, t)) {
			rangeset_clear(&have);
			continue;
		}
		if (!p && !(p = page_get(c, f, idx, readahead))) {
			c->st.fill_skipped += t - s;
			rangeset_clear(&have);
			continue;
		}
		before = rangeset_bytes(&p->valid);
		for (uint64_t at = s; at < t;) {
			k = rangeset_gaps(&have, at, t, gaps, 16);
			for (size_t i = 0; i < k && i < 16; i++)
				page_store(c, f, p, ps, gaps[i].start,
					   gaps[i].end, off, data);
			if (k <= 16)
				break;
			at = gaps[15].end;
		}
		if (readahead) {
			uint64_t n = rangeset_bytes(&p->valid) - before;

			p->ra_bytes += (uint32_t)n;
			c->st.ra_filled_bytes += n;
		}
		rangeset_clear(&have);
	}
}

/*
 * The pages of f that hold bytes of [start, end) (end > start), in a new
 * array the caller frees (*n of them; NULL with *n 0 if none or on
 * ENOMEM). Walks whichever is smaller: the page indexes of the range or
 * the file's pages, so a range of terabytes (a SETATTR or a WRITE far
 * past the end of file) costs what the file holds, not what it spans.
 */
static struct cpage **pages_in(const struct cache *c, const struct cfile *f,
			       uint64_t start, uint64_t end, size_t *n)
{
	uint64_t lo = start >> c->shift, hi = (end - 1) >> c->shift;
	struct cpage **v, *p, *tmp;

	*n = 0;
	if (!f->npages ||
	    !(v = malloc((size_t)(f->npages < hi - lo + 1 ? f->npages
							   : hi - lo + 1) *
			 sizeof(*v))))
		return NULL;
	if (hi - lo + 1 <= f->npages) {
		for (uint64_t idx = lo; idx <= hi; idx++)
			if ((p = page_find(f, idx)))
				v[(*n)++] = p;
	} else {
		HASH_ITER(hh, f->pages, p, tmp)
			if (p->index >= lo && p->index <= hi)
				v[(*n)++] = p;
	}
	return v;
}

void cfile_hole_add(struct cache *c, struct cfile *f, uint64_t start,
		    uint64_t end)
{
	struct rangeset z = RANGESET_INIT;
	struct cpage **pages;
	const struct range *r;
	size_t n, np;

	if (start >= end || rangeset_add(&z, start, end) != 0)
		return;
	pages = pages_in(c, f, start, end, &np);
	if (f->npages && !pages) {
		rangeset_clear(&z);	/* ENOMEM: record no hole */
		return;
	}
	/* Bytes still to be written upstream are data, never holes. */
	for (size_t j = 0; j < np; j++) {
		struct cpage *p = pages[j];
		uint64_t ps = p->index << c->shift;

		for (unsigned i = 0; i < p->nwb; i++)
			rangeset_remove(&z, ps + p->wb[i].start, ps + p->wb[i].end);
	}
	r = rangeset_ranges(&z, &n);
	/* Clean bytes there are stale: zeros replace them. */
	for (size_t j = 0; j < np; j++) {
		struct cpage *p = pages[j];
		uint64_t ps = p->index << c->shift, pe = ps + c->page_size;
		uint64_t before = rangeset_bytes(&p->valid);

		for (size_t k = 0; k < n; k++) {
			if (r[k].end <= ps || r[k].start >= pe)
				continue;
			rangeset_remove(&p->valid,
					r[k].start > ps ? r[k].start - ps : 0,
					r[k].end < pe ? r[k].end - ps : c->page_size);
		}
		f->valid_bytes -= before - rangeset_bytes(&p->valid);
		c->st.valid_bytes -= before - rangeset_bytes(&p->valid);
		if (!rangeset_bytes(&p->valid) && !p->nwb)
			page_free(c, p);
	}
	for (size_t k = 0; k < n; k++)
		rangeset_add(&f->holes, r[k].start, r[k].end);
	free(pages);
	rangeset_clear(&z);
}

void cache_write(struct cache *c, struct cfile *f, uint64_t off,
		 const uint8_t *data, uint64_t len, const struct nfs_cred *cr)
{
	uint64_t e = off + len;
	struct wbext ne;

	if (!len)
		return;
	rangeset_remove(&f->holes, off, e);
	memset(&ne, 0, sizeof(ne));
	ne.state = WB_DIRTY;
	ne.gen = f->wgen;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		uint64_t s = off > ps ? off : ps, t = e < pe ? e : pe;
		struct cpage *p = page_get(c, f, idx, false);
		int id;

		if (!p) {
			c->st.fill_skipped += t - s;
			continue;
		}
		page_store(c, f, p, ps, s, t, off, data);
		if (f->local && t > f->local_size) {
			f->local_size = t;
			file_shown_update(f);
		}
		if (!p->nwb && !run_overlaps(f, s, t))
			continue;
		/* These bytes are on the upstream now: clean, unless an older
		 * write-back of them is still in flight and could land after
		 * this one; then they are written again. */
		wb_replace(c, p, (uint32_t)(s - ps), (uint32_t)(t - ps), NULL);
		if (run_overlaps(f, s, t) &&
		    (id = cred_intern(c, cr ? cr : &(struct nfs_cred){ 0 })) >= 0) {
			ne.cred = (uint16_t)id;
			ne.start = (uint32_t)(s - ps);
			ne.end = (uint32_t)(t - ps);
			wb_replace(c, p, ne.start, ne.end, &ne);
			f->dirty_since = 0;
		}
	}
}

void cfile_truncate(struct cache *c, struct cfile *f, uint64_t size)
{
	struct cpage *p, *tmp;

	f->gen++;
	HASH_ITER(hh, f->pages, p, tmp) {
		uint64_t ps = p->index << c->shift;
		uint64_t before;

		if (ps >= size) {
			page_free(c, p);
			continue;
		}
		if (ps + c->page_size <= size)
			continue;
		if (p->nwb)
			wb_replace(c, p, (uint32_t)(size - ps), c->page_size, NULL);
		before = rangeset_bytes(&p->valid);
		rangeset_truncate(&p->valid, size - ps);
		f->valid_bytes -= before - rangeset_bytes(&p->valid);
		c->st.valid_bytes -= before - rangeset_bytes(&p->valid);
	}
	rangeset_truncate(&f->holes, size);
	f->local_size = size;
	file_shown_update(f);
}

const uint8_t *cfile_fh(const struct cfile *f, size_t *len)
{
	*len = f->key[0];
	return f->key + 1;
}

struct ra_state *cfile_ra(struct cache *c, struct cfile *f,
			  const struct ra_params *p)
{
	/* Without a page budget prefetched data could not be kept: fetching
	 * it would only double what goes upstream. */
	if (!f->ra && ra_params_valid(p) && p->max_window && c->max_pages)
		f->ra = ra_state_new(p);
	c->ra_params = *p;
	c->ra_params_set = true;
	return f->ra;
}

const struct ra_state *cfile_ra_peek(const struct cfile *f)
{
	return f->ra;
}

bool cfile_range_cached(struct cache *c, struct cfile *f, uint64_t start,
			uint64_t end)
{
	struct range none[1];
	uint64_t got;
	size_t n;
	enum cache_outcome o;

	if (start >= end)
		return true;
	if (end - start > UINT32_MAX)
		return false;
	o = cache_plan_read(c, f, start, (uint32_t)(end - start), &got, none, 0,
			    &n);
	return o == CACHE_HIT || o == CACHE_HOLE;
}

uint64_t cfile_hole_bytes(const struct cfile *f)
{
	return rangeset_bytes(&f->holes);
}

size_t cfile_holes_in(const struct cfile *f, uint64_t start, uint64_t end,
		      struct range *out, size_t max)
{
	return rangeset_ranges_in(&f->holes, start, end, out, max);
}

int cfile_page_clean(const struct cache *c, const struct cfile *f,
		     uint64_t idx, uint8_t *buf, struct rangeset *out)
{
	const struct cpage *p = page_find(f, idx);
	const struct range *v;
	unsigned w = 0;
	size_t n;

	(void)c;
	if (!p)
		return 0;
	v = rangeset_ranges(&p->valid, &n);
	/* wb is sorted, disjoint and inside valid: cut it out in one pass. */
	for (size_t i = 0; i < n; i++) {
		for (uint64_t s = v[i].start, t; s < v[i].end; s = t) {
			while (w < p->nwb && p->wb[w].end <= s)
				w++;
			t = v[i].end;
			if (w < p->nwb && p->wb[w].start <= s) {
				t = p->wb[w].end;	/* not clean: skip it */
				continue;
			}
			if (w < p->nwb && p->wb[w].start < t)
				t = p->wb[w].start;
			if (rangeset_add(out, s, t) != 0)
				return -1;
			memcpy(buf + s, p->data + s, t - s);
		}
	}
	return 0;
}

uint64_t cfile_valid_bytes(const struct cfile *f)
{
	return f->valid_bytes;
}

size_t cache_page_meta_bytes(void)
{
	return (size_t)page_overhead();
}

void cache_stats_get(const struct cache *c, struct cache_stats *st)
{
	const struct cfile *f, *ftmp;
	const struct cpage *p, *ptmp;
	uint64_t meta = 0;
	struct pagepool_stats ps;

	*st = c->st;
	pagepool_stats_get(c->pool, &ps);
	st->pool_bytes = ps.mapped_bytes;
	st->pool_inline_chunks = ps.inline_maps;
	memcpy(st->wb_bytes, c->wbbytes, sizeof(st->wb_bytes));
	st->ra = c->ra_gone;
	HASH_ITER(hh, c->files, f, ftmp) {
		meta += sizeof(*f) + rangeset_heap_bytes(&f->holes);
		if (f->ra) {
			struct ra_stats rs;

			ra_stats_get(f->ra, &rs);
			ra_stats_add(&st->ra, &rs);
		}
		st->hole_bytes += rangeset_bytes(&f->holes);
		if (f->access)
			meta += CACHE_ACCESS_SLOTS * sizeof(*f->access);
		HASH_ITER(hh, f->pages, p, ptmp)
			meta += sizeof(*p) + rangeset_heap_bytes(&p->valid) +
				p->capwb * sizeof(struct wbext);
		meta += rangeset_heap_bytes(&f->wbpages) +
			f->capruns * sizeof(struct wbrun);
	}
	meta += c->nghosts * sizeof(struct ghost) + c->st.acl_bytes;
	st->meta_bytes = meta;
}

/* f's epochs: ordered, disjoint, none empty, summing to its wbbytes. */
static bool file_epochs_check(const struct cfile *f)
{
	uint64_t sum[WB_NSTATES] = { 0 };

	for (unsigned i = 0; i < f->nepochs; i++) {
		const struct wbepoch *e = &f->epochs[i];
		uint64_t any = 0;

		if (e->lo > e->hi || (i && f->epochs[i - 1].hi >= e->lo))
			return false;
		for (unsigned s = 0; s < WB_NSTATES; s++) {
			sum[s] += e->bytes[s];
			any |= e->bytes[s];
		}
		if (!any)
			return false;
	}
	return memcmp(sum, f->wbbytes, sizeof(sum)) == 0;
}

/* Why f's GETACL replies break an invariant, or NULL; their charge is
 * added to *sum. */
static const char *acl_check_why(const struct cfile *f, uint64_t *sum)
{
	const struct acl_reply *r, *q;
	unsigned n = 0;

	LL_FOREACH(f->acls, r) {
		if (r->len == 0 || r->len > CACHE_ACL_MAX)
			return "a kept GETACL reply is empty or over CACHE_ACL_MAX";
		for (q = r->next; q; q = q->next)
			if (q->mask == r->mask)
				return "a file keeps two GETACL replies for one mask";
		*sum += acl_charge(r->len);
		n++;
	}
	if (n != f->nacl || n > CACHE_ACL_SLOTS)
		return "a file's GETACL replies differ from nacl or exceed "
		       "CACHE_ACL_SLOTS";
	return NULL;
}

/* Why page p of f breaks an invariant, or NULL. */
static const char *page_check_why(const struct cache *c, const struct cfile *f,
				  const struct cpage *p)
{
	size_t n;
	const struct range *v = rangeset_ranges(&p->valid, &n);

	if (p->file != f || !rangeset_check(&p->valid) ||
	    (n && v[n - 1].end > c->page_size))
		return "a page is not its file's, or its valid set is unsound";
	for (unsigned i = 0; i < p->nwb; i++) {
		const struct wbext *x = &p->wb[i];

		if (x->start >= x->end || x->end > c->page_size ||
		    (i && p->wb[i - 1].end > x->start) ||
		    !rangeset_contains(&p->valid, x->start, x->end))
			return "a write-back extent is unordered or not valid";
	}
	if ((p->nwb != 0) != (p->queue == Q_NONE))
		return "a page with write-back extents is on a queue, or "
		       "one without is on none";
	for (size_t i = 0; i < n; i++)
		if (rangeset_intersects(&f->holes,
					(p->index << c->shift) + v[i].start,
					(p->index << c->shift) + v[i].end))
			return "holes and valid bytes overlap";
	return NULL;
}

/* Why the queues break an invariant, or NULL. */
static const char *queues_check_why(const struct cache *c)
{
	const struct cpage *p;
	uint64_t n_a1in = 0, n_am = 0, n_ra = 0;

	DL_FOREACH(c->a1in, p) {
		if (p->queue != Q_A1IN)
			return "a page on A1in names another queue";
		n_a1in++;
	}
	DL_FOREACH(c->am, p) {
		if (p->queue != Q_AM)
			return "a page on Am names another queue";
		n_am++;
	}
	DL_FOREACH(c->ra, p) {
		if (p->queue != Q_RA)
			return "a page on the readahead queue names another queue";
		n_ra++;
	}
	if (n_a1in != c->n_a1in || n_am != c->n_am || n_ra != c->n_ra ||
	    c->st.pages + c->loans > c->max_pages ||
	    c->st.loan_bytes != c->loans * c->page_size)
		return "queue lengths differ from their counters, or pages "
		       "and loans exceed max_pages";
	return NULL;
}

const char *cache_check_why(const struct cache *c)
{
	const struct cfile *f, *ftmp;
	const struct cpage *p, *ptmp;
	uint64_t pages = 0, valid = 0, pinned = 0, nfiles = 0, acl = 0;
	uint64_t lent = 0, detached = 0;
	const struct cache_lend *l;
	const char *why;
	struct pagepool_stats ps;

	if ((why = queues_check_why(c)) || (why = pagepool_check_why(c->pool)))
		return why;
	pagepool_stats_get(c->pool, &ps);
	if (ps.used != c->st.pages + c->loans)
		return "the page pool's buffers in use differ from the pages "
		       "and loans";
	DL_FOREACH2(c->lru, f, lnext) {
		if (f->magic != CFILE_MAGIC)
			return "a file on the LRU list has a bad magic number";
		nfiles++;
	}
	if (nfiles != c->st.files || nfiles != HASH_COUNT(c->files))
		return "the LRU list, the file hash and the file count differ";
	HASH_ITER(hh, c->files, f, ftmp) {
		uint64_t fv = 0, fp = 0;

		if (f->magic != CFILE_MAGIC || !rangeset_check(&f->holes))
			return "a file has a bad magic number or hole set";
		if ((why = fetch_check(f)) || (why = acl_check_why(f, &acl)))
			return why;
		HASH_ITER(hh, f->pages, p, ptmp) {
			if ((why = page_check_why(c, f, p)))
				return why;
			if (p->lend && (p->lend->page != p ||
					p->lend->buf != p->data ||
					p->lend->refs == 0))
				return "a page's lend is not its own";
			lent += p->lend != NULL;
			pinned += p->nwb != 0;
			fv += rangeset_bytes(&p->valid);
			fp++;
		}
		if (fv != f->valid_bytes || fp != f->npages ||
		    !file_epochs_check(f))
			return "a file's valid_bytes, npages or write-back "
			       "epochs differ from its pages";
		pages += fp;
		valid += fv;
	}
	if (pages != c->st.pages ||
	    pages != c->n_a1in + c->n_am + c->n_ra + pinned ||
	    pinned != c->st.wb_pinned_pages || valid != c->st.valid_bytes)
		return "page, pinned or valid byte counts differ from the pages";
	DL_FOREACH(c->detached, l) {
		if (l->page || l->c != c || l->refs == 0)
			return "a detached lend has a page, another cache or "
			       "no holder";
		detached++;
	}
	if (detached != c->lends_detached ||
	    lent + c->lends_detached != c->lends ||
	    c->lends_detached > c->loans)
		return "the lends differ from the lent pages and the loans";
	if (acl != c->st.acl_bytes || acl > c->acl_max)
		return "the GETACL replies' charges differ from acl_bytes or "
		       "exceed acl_max";
	return NULL;
}

bool cache_check(const struct cache *c)
{
	return cache_check_why(c) == NULL;
}
