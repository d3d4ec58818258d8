/* SPDX-License-Identifier: MIT */
/*
 * cache: files, pages, valid byte ranges, attributes, ACCESS results and
 * 2Q eviction (see cache.h for the model and the policy's reason).
 *
 * Ownership: the cache owns every cfile (hash by upstream handle) and every
 * cpage (hash per file by page index, and on exactly one of the queues A1in
 * or Am). Callers hold counted references to files; pages are never handed
 * out. A file is freed when it has no reference, no page and no
 * attributes, or with the cache.
 *
 * Invariants (cache_check): every page is on the queue its `queue` field
 * names and in its file's hash; queue lengths match their counters; pages
 * <= max_pages after every fill; each page's valid set lies inside
 * [0, page_size) and passes rangeset_check; a file's valid_bytes is the sum
 * of its pages' valid bytes; holes and valid bytes never overlap.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "cache.h"

#define CFILE_MAGIC 0x4346494cu
#define OWN_STATES 4		/* own post-states remembered per file */
#define SUSPECTS 8		/* unexplained pre-states awaiting an own post */

enum queue { Q_NONE = 0, Q_A1IN, Q_AM };

struct cpage {
	uint64_t index;			/* page number: offset / page_size */
	struct cfile *file;
	uint8_t *data;			/* page_size bytes */
	struct rangeset valid;		/* page-relative byte ranges */
	uint8_t queue;
	UT_hash_handle hh;		/* in file->pages, key index */
	struct cpage *prev, *next;	/* on A1in or Am, head = newest */
};

/* A remembered A1in eviction (2Q's A1out). */
struct ghost {
	uint64_t key[2];		/* file id, page index */
	UT_hash_handle hh;
	struct ghost *prev, *next;
};

struct access_slot {
	struct ccred cr;
	uint32_t known;			/* bits asked so far */
	uint32_t granted;		/* of those, bits granted */
};

struct cfile {
	uint32_t magic;
	unsigned refs;
	uint64_t id;			/* serial, for ghosts */
	uint8_t key[CACHE_FH_MAX + 1];	/* handle length, handle, zeros */
	bool has_attr;
	struct cattr attr;
	double attr_time;		/* when attr was last confirmed */
	double timeo;			/* current attribute timeout, s */
	unsigned mut_inflight;		/* own mutations in flight */
	uint64_t gen;			/* see cfile_gen */
	void *owner;			/* cfile_owner_slot */
	struct cwcc own[OWN_STATES];	/* recent own post-states */
	unsigned nown;
	struct cwcc suspect[SUSPECTS];	/* pre-states not yet explained */
	unsigned nsuspect;
	bool suspect_overflow;
	struct access_slot *access;	/* CACHE_ACCESS_SLOTS at most */
	unsigned naccess;
	unsigned access_next;		/* round-robin replacement */
	struct cpage *pages;		/* hash by index */
	uint64_t npages;
	uint64_t valid_bytes;
	struct rangeset holes;		/* bytes known to read as zeros */
	UT_hash_handle hh;		/* in cache->files, key fh */
};

struct cache {
	uint32_t page_size;
	unsigned shift;
	uint64_t max_pages;
	uint64_t kin;			/* A1in target, pages */
	uint64_t kout;			/* A1out ghosts kept */
	struct cfile *files;
	struct cpage *a1in, *am;
	uint64_t n_a1in, n_am;
	struct ghost *ghosts;		/* hash */
	struct ghost *ghost_list;	/* head = newest */
	uint64_t nghosts;
	uint64_t next_id;
	struct cache_stats st;
};

static const char *const outcome_names[] = {
#define X(e, s) s,
	CACHE_OUTCOMES(X)
#undef X
};

const char *cache_outcome_name(enum cache_outcome o)
{
	return o < CACHE_NOUTCOMES ? outcome_names[o] : "?";
}

struct cache *cache_new(const struct cache_params *p)
{
	struct cache *c;

	if (p->page_size < CACHE_PAGE_MIN || p->page_size > CACHE_PAGE_MAX ||
	    (p->page_size & (p->page_size - 1)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->page_size = p->page_size;
	while ((1u << c->shift) < p->page_size)
		c->shift++;
	c->max_pages = p->budget / p->page_size;
	c->kin = c->max_pages / 4 ? c->max_pages / 4 : 1;
	c->kout = c->max_pages / 2 ? c->max_pages / 2 : 1;
	c->st.budget = p->budget;
	return c;
}

uint32_t cache_page_size(const struct cache *c)
{
	return c->page_size;
}

/* ---- pages and queues ---- */

/* Take p off its queue. */
static void queue_del(struct cache *c, struct cpage *p)
{
	if (p->queue == Q_A1IN) {
		DL_DELETE(c->a1in, p);
		c->n_a1in--;
	} else if (p->queue == Q_AM) {
		DL_DELETE(c->am, p);
		c->n_am--;
	}
	p->queue = Q_NONE;
}

/* Put p at the head (newest end) of queue q. */
static void queue_add(struct cache *c, struct cpage *p, enum queue q)
{
	p->queue = (uint8_t)q;
	if (q == Q_A1IN) {
		DL_PREPEND(c->a1in, p);
		c->n_a1in++;
	} else {
		DL_PREPEND(c->am, p);
		c->n_am++;
	}
}

/* Free one page: off its queue and its file, data released. */
static void page_free(struct cache *c, struct cpage *p)
{
	struct cfile *f = p->file;

	queue_del(c, p);
	HASH_DEL(f->pages, p);
	f->npages--;
	f->valid_bytes -= rangeset_bytes(&p->valid);
	c->st.valid_bytes -= rangeset_bytes(&p->valid);
	rangeset_clear(&p->valid);
	free(p->data);
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

/* Evict one page by 2Q. False if nothing can be evicted. */
static bool evict_one(struct cache *c)
{
	struct cpage *victim;

	if (c->a1in && (c->n_a1in > c->kin || !c->am)) {
		victim = c->a1in->prev;
		ghost_add(c, victim->file->id, victim->index);
	} else if (c->am) {
		victim = c->am->prev;
	} else {
		return false;
	}
	page_free(c, victim);
	c->st.evictions++;
	return true;
}

/* The page index of f, or NULL. */
static struct cpage *page_find(const struct cfile *f, uint64_t index)
{
	struct cpage *p;

	HASH_FIND(hh, f->pages, &index, sizeof(index), p);
	return p;
}

/* The page index of f, allocated (and admitted by 2Q) if absent. */
static struct cpage *page_get(struct cache *c, struct cfile *f,
			      uint64_t index)
{
	struct cpage *p = page_find(f, index);

	if (p)
		return p;
	while (c->st.pages >= c->max_pages)
		if (!evict_one(c))
			return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->data = malloc(c->page_size))) {
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
		queue_add(c, p, Q_AM);
		c->st.promotions++;
	} else {
		queue_add(c, p, Q_A1IN);
	}
	return p;
}

/* Note a use of p: Am pages move to the head; A1in pages stay (2Q). */
static void page_touch(struct cache *c, struct cpage *p)
{
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

struct cfile *cache_find(struct cache *c, const uint8_t *fh, size_t len)
{
	struct cfile *f;
	uint8_t key[CACHE_FH_MAX + 1];

	if (len == 0 || len > CACHE_FH_MAX)
		return NULL;
	fh_key(key, fh, len);
	HASH_FIND(hh, c->files, key, sizeof(key), f);
	if (f)
		f->refs++;
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
	HASH_ADD(hh, c->files, key, sizeof(f->key), f);
	c->st.files++;
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
	rangeset_clear(&f->holes);
	free(f->access);
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
	if (!f->npages && !f->has_attr && !f->mut_inflight && !f->owner)
		file_free(c, f);
}

uint64_t cfile_gen(const struct cfile *f)
{
	return f->gen;
}

void **cfile_owner_slot(struct cfile *f)
{
	return &f->owner;
}

void cache_free(struct cache **cp)
{
	struct cache *c = cp ? *cp : NULL;
	struct cfile *f, *ftmp;
	struct ghost *g, *gtmp;

	if (!c)
		return;
	HASH_ITER(hh, c->files, f, ftmp) {
		file_drop_pages(c, f);
		file_free(c, f);
	}
	DL_FOREACH_SAFE(c->ghost_list, g, gtmp) {
		HASH_DEL(c->ghosts, g);
		DL_DELETE(c->ghost_list, g);
		free(g);
	}
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
	return &f->attr;
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
	f->gen++;
	file_drop_pages(c, f);
	rangeset_clear(&f->holes);
	free(f->access);
	f->access = NULL;
	f->naccess = 0;
	f->access_next = 0;
}

/* Drop f's data because another writer changed it. */
static void other_writer(struct cache *c, struct cfile *f,
			 const struct cache_ac *ac)
{
	cfile_invalidate(c, f);
	c->st.invalidations++;
	f->timeo = ac->min;
}

/* Set the attributes, confirmed at now. */
static void attr_set(struct cfile *f, const struct cattr *a, double now)
{
	f->attr = *a;
	f->attr_time = now;
	f->has_attr = true;
}

bool cfile_attr_observe(struct cache *c, struct cfile *f,
			const struct cattr *a, double now,
			const struct cache_ac *ac)
{
	struct cwcc w = wcc_of(a), cur;

	if (!f->has_attr) {
		f->timeo = ac->min;
		attr_set(f, a, now);
		return false;
	}
	cur = wcc_of(&f->attr);
	if (wcc_eq(&w, &cur)) {
		/* Unchanged: trust it longer (attrtimeo doubling). */
		f->timeo = f->timeo < ac->min ? ac->min : f->timeo * 2;
		if (f->timeo > ac->max)
			f->timeo = ac->max;
		attr_set(f, a, now);
		return false;
	}
	if (own_state(f, &w)) {
		attr_set(f, a, now);
		return false;
	}
	if (f->mut_inflight > 0)
		return false;	/* may predate or race our own change */
	other_writer(c, f, ac);
	attr_set(f, a, now);
	return true;
}

void cfile_mutation_begin(struct cfile *f)
{
	f->mut_inflight++;
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
		other_writer(c, f, ac);
		return true;
	}
	if (f->nsuspect < SUSPECTS)
		f->suspect[f->nsuspect++] = *pre;
	else
		f->suspect_overflow = true;
	return false;
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
	if (!pre) {
		/* No pre-op attributes: the proxy cannot tell. */
		other_writer(c, f, ac);
		dropped = true;
	} else {
		cur = wcc_of(&f->attr);
		if (!(f->has_attr && wcc_eq(pre, &cur)) && !own_state(f, pre))
			dropped = suspect_add(c, f, pre, ac);
	}
	if (f->mut_inflight == 0 && (f->nsuspect || f->suspect_overflow)) {
		/* Pre-states no own change explained: another writer. */
		f->nsuspect = 0;
		f->suspect_overflow = false;
		other_writer(c, f, ac);
		dropped = true;
	}
	if (post) {
		own_push(f, &w);
		if (!dropped && f->timeo < ac->min)
			f->timeo = ac->min;
		attr_set(f, post, now);
	} else {
		f->timeo = 0;
	}
	return dropped;
}

/* ---- access ---- */

/* Compare credentials. */
static bool cred_eq(const struct ccred *a, const struct ccred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngids == b->ngids &&
	       !memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0]));
}

/* The slot of cr, or NULL. */
static struct access_slot *access_find(const struct cfile *f,
				       const struct ccred *cr)
{
	for (unsigned i = 0; i < f->naccess; i++)
		if (cred_eq(&f->access[i].cr, cr))
			return &f->access[i];
	return NULL;
}

void cfile_access_record(struct cfile *f, const struct ccred *cr,
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
		if (s->cr.ngids > CACHE_MAX_GIDS)
			s->cr.ngids = CACHE_MAX_GIDS;
	}
	s->known |= asked;
	s->granted = (s->granted & ~asked) | (granted & asked);
}

bool cfile_access_allows(const struct cfile *f, const struct ccred *cr,
			 uint32_t bits)
{
	const struct access_slot *s = access_find(f, cr);

	return s && (s->known & bits) == bits && (s->granted & bits) == bits;
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

/* Append [s, e) to fetch, merging with the last range when they touch. */
static void fetch_push(struct range *fetch, size_t max, size_t *n,
		       uint64_t s, uint64_t e)
{
	if (*n && *n <= max && fetch[*n - 1].end == s) {
		fetch[*n - 1].end = e;
		return;
	}
	if (*n < max) {
		fetch[*n].start = s;
		fetch[*n].end = e;
	}
	(*n)++;
}

enum cache_outcome cache_plan_read(struct cache *c, struct cfile *f,
				   uint64_t off, uint32_t count,
				   uint64_t *end, struct range *fetch,
				   size_t max, size_t *nfetch)
{
	uint64_t size = f->attr.size, covered = 0, e;
	struct range gaps[16];

	*nfetch = 0;
	e = off + count < off ? UINT64_MAX : off + count;
	if (e > size)
		e = size;
	*end = off < size ? e : off;
	if (off >= size)
		return CACHE_HIT;
	if (rangeset_contains(&f->holes, off, e))
		return CACHE_HOLE;
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
					fetch_push(fetch, max, nfetch,
						   gaps[i].start, gaps[i].end);
				if (k <= 16)
					break;
				at = gaps[15].end;
			}
		} else {
			fetch_push(fetch, max, nfetch, ps, pe);
		}
		rangeset_clear(&have);
	}
	if (covered == e - off)
		return CACHE_HIT;
	return covered ? CACHE_PARTIAL : CACHE_MISS;
}

uint64_t cache_copy(struct cache *c, struct cfile *f, uint64_t off,
		    uint64_t len, uint8_t *out)
{
	uint64_t e = off + len, copied = 0;
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
		}
		if (k <= 8)
			break;
		at = r[7].end;
	}
	return copied;
}

/* Copy data[s - off, t - off) into page p at page offset s - ps; valid. */
static void page_store(struct cache *c, struct cfile *f, struct cpage *p,
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

void cache_fill(struct cache *c, struct cfile *f, uint64_t off,
		const uint8_t *data, uint64_t len)
{
	uint64_t e = off + len;
	struct range gaps[16];

	if (!len)
		return;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		uint64_t s = off > ps ? off : ps, t = e < pe ? e : pe;
		struct cpage *p = page_find(f, idx);
		struct rangeset have = RANGESET_INIT;
		size_t k;

		if (page_have(c, f, p, ps, pe, &have) != 0 ||
		    rangeset_contains(&have, s, t)) {
			rangeset_clear(&have);
			continue;
		}
		if (!p && !(p = page_get(c, f, idx))) {
			c->st.fill_skipped++;
			rangeset_clear(&have);
			continue;
		}
		for (uint64_t at = s; at < t;) {
			k = rangeset_gaps(&have, at, t, gaps, 16);
			for (size_t i = 0; i < k && i < 16; i++)
				page_store(c, f, p, ps, gaps[i].start,
					   gaps[i].end, off, data);
			if (k <= 16)
				break;
			at = gaps[15].end;
		}
		rangeset_clear(&have);
	}
}

void cache_write(struct cache *c, struct cfile *f, uint64_t off,
		 const uint8_t *data, uint64_t len)
{
	uint64_t e = off + len;

	if (!len)
		return;
	rangeset_remove(&f->holes, off, e);
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		uint64_t s = off > ps ? off : ps, t = e < pe ? e : pe;
		struct cpage *p = page_get(c, f, idx);

		if (!p) {
			c->st.fill_skipped++;
			continue;
		}
		page_store(c, f, p, ps, s, t, off, data);
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
		before = rangeset_bytes(&p->valid);
		rangeset_truncate(&p->valid, size - ps);
		f->valid_bytes -= before - rangeset_bytes(&p->valid);
		c->st.valid_bytes -= before - rangeset_bytes(&p->valid);
	}
	rangeset_truncate(&f->holes, size);
}

uint64_t cfile_valid_bytes(const struct cfile *f)
{
	return f->valid_bytes;
}

size_t cache_page_meta_bytes(void)
{
	return sizeof(struct cpage);
}

void cache_stats_get(const struct cache *c, struct cache_stats *st)
{
	const struct cfile *f, *ftmp;
	const struct cpage *p, *ptmp;
	uint64_t meta = 0;

	*st = c->st;
	HASH_ITER(hh, c->files, f, ftmp) {
		meta += sizeof(*f) + rangeset_heap_bytes(&f->holes);
		if (f->access)
			meta += CACHE_ACCESS_SLOTS * sizeof(*f->access);
		HASH_ITER(hh, f->pages, p, ptmp)
			meta += sizeof(*p) + rangeset_heap_bytes(&p->valid);
	}
	meta += c->nghosts * sizeof(struct ghost);
	st->meta_bytes = meta;
}

bool cache_check(const struct cache *c)
{
	const struct cfile *f, *ftmp;
	const struct cpage *p, *ptmp;
	uint64_t n_a1in = 0, n_am = 0, pages = 0, valid = 0;

	DL_FOREACH(c->a1in, p) {
		if (p->queue != Q_A1IN)
			return false;
		n_a1in++;
	}
	DL_FOREACH(c->am, p) {
		if (p->queue != Q_AM)
			return false;
		n_am++;
	}
	if (n_a1in != c->n_a1in || n_am != c->n_am || c->st.pages > c->max_pages)
		return false;
	HASH_ITER(hh, c->files, f, ftmp) {
		uint64_t fv = 0, fp = 0;

		if (f->magic != CFILE_MAGIC || !rangeset_check(&f->holes))
			return false;
		HASH_ITER(hh, f->pages, p, ptmp) {
			size_t n;
			const struct range *v = rangeset_ranges(&p->valid, &n);

			if (p->file != f || !rangeset_check(&p->valid) ||
			    (n && v[n - 1].end > c->page_size))
				return false;
			for (size_t i = 0; i < n; i++)
				if (rangeset_intersects(&f->holes,
					(p->index << c->shift) + v[i].start,
					(p->index << c->shift) + v[i].end))
					return false;
			fv += rangeset_bytes(&p->valid);
			fp++;
		}
		if (fv != f->valid_bytes || fp != f->npages)
			return false;
		pages += fp;
		valid += fv;
	}
	return pages == c->st.pages && pages == n_a1in + n_am &&
	       valid == c->st.valid_bytes;
}
