/* SPDX-License-Identifier: MIT */
/*
 * cache_wb: write-back extents of the page cache (docs/design.md "Write
 * semantics"; the model is in cache.h, the shared structures in
 * cache_impl.h).
 *
 * Each page keeps, beside its valid ranges, a sorted list of disjoint
 * extents of bytes not yet stable upstream, each with a state and the
 * interned credential of its last writer. States and transitions:
 *   any -> DIRTY          cache_write_dirty absorbs a client write; so
 *                         does a write-through over a WRITE in flight
 *   DIRTY -> WRITING      cache_wb_next hands the bytes out in a run
 *   WRITING -> UNSTABLE   cache_wb_done: written UNSTABLE under a verifier
 *   WRITING -> (clean)    cache_wb_done: written FILE_SYNC or DATA_SYNC
 *   WRITING -> DIRTY      cache_wb_done: no answer, to be retried
 *   WRITING -> (dropped)  cache_wb_done: a hard error, kept for the file
 *   UNSTABLE -> (clean)   cache_commit_done: tagged by cache_commit_begin
 *                         and committed under the same verifier
 *   UNSTABLE -> DIRTY     a WRITE or COMMIT reply under another verifier
 *   any -> (clean)        cache_write: a write-through made them stable
 *   any -> (dropped)      cfile_discard_dirty; cfile_truncate past the size
 *
 * Invariants: extents lie inside the page's valid bytes (wb ⊆ valid); a
 * page with extents is pinned: on no queue, so never evicted (both checked
 * by cache_check), and named in its file's wbpages index; the byte
 * counters of the file and of the cache are the sums of the extents by
 * state; a file with extents is on the cache's dirty_files list. A file's
 * runs are its upstream WRITEs in flight: DIRTY bytes that overlap one are
 * not handed out again until it ends.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "cache.h"
#include "cache_impl.h"

/* The epoch of f counting generation gen, made if absent (the two
 * oldest merge when all are taken: waits then cover a little more). */
static struct wbepoch *epoch_get(struct cfile *f, uint32_t gen)
{
	unsigned at = 0;

	while (at < f->nepochs && f->epochs[at].hi < gen)
		at++;
	if (at < f->nepochs && f->epochs[at].lo <= gen)
		return &f->epochs[at];
	if (f->nepochs == WB_EPOCHS) {
		for (unsigned s = 0; s < WB_NSTATES; s++)
			f->epochs[1].bytes[s] += f->epochs[0].bytes[s];
		f->epochs[1].lo = f->epochs[0].lo;
		memmove(&f->epochs[0], &f->epochs[1],
			--f->nepochs * sizeof(f->epochs[0]));
		return epoch_get(f, gen);
	}
	memmove(&f->epochs[at + 1], &f->epochs[at],
		(f->nepochs - at) * sizeof(f->epochs[0]));
	f->nepochs++;
	memset(&f->epochs[at], 0, sizeof(f->epochs[at]));
	f->epochs[at].lo = f->epochs[at].hi = gen;
	return &f->epochs[at];
}

/* Drop epoch e of f if it counts no byte. */
static void epoch_prune(struct cfile *f, struct wbepoch *e)
{
	unsigned at = (unsigned)(e - f->epochs);

	for (unsigned s = 0; s < WB_NSTATES; s++)
		if (e->bytes[s])
			return;
	memmove(&f->epochs[at], &f->epochs[at + 1],
		(f->nepochs - at - 1) * sizeof(f->epochs[0]));
	f->nepochs--;
}

void wb_account(struct cache *c, struct cpage *p, int sign)
{
	struct cfile *f = p->file;

	for (unsigned i = 0; i < p->nwb; i++) {
		uint64_t n = p->wb[i].end - p->wb[i].start;
		unsigned st = p->wb[i].state;
		struct wbepoch *e = epoch_get(f, p->wb[i].gen);

		if (sign > 0) {
			f->wbbytes[st] += n;
			c->wbbytes[st] += n;
			e->bytes[st] += n;
		} else {
			f->wbbytes[st] -= n;
			c->wbbytes[st] -= n;
			e->bytes[st] -= n;
			epoch_prune(f, e);
		}
	}
}

uint32_t cfile_wb_mark(struct cfile *f)
{
	return f->wgen++;
}

uint64_t cfile_wb_bytes_upto(const struct cfile *f, uint32_t mark,
			     enum cache_wb_state st)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < f->nepochs && f->epochs[i].lo <= mark; i++)
		n += st < WB_NSTATES ? f->epochs[i].bytes[st] : 0;
	return n;
}

uint64_t wb_total(const struct cfile *f)
{
	return f->wbbytes[WB_DIRTY] + f->wbbytes[WB_WRITING] +
	       f->wbbytes[WB_UNSTABLE];
}

void wb_pages_update(struct cache *c, struct cpage *p)
{
	struct cfile *f = p->file;

	if (p->nwb) {
		if (p->queue != Q_NONE) {
			page_queue_del(c, p);
			c->st.wb_pinned_pages++;
		}
		rangeset_add(&f->wbpages, p->index, p->index + 1);
	} else {
		if (p->queue == Q_NONE) {
			page_queue_add(c, p, Q_A1IN);
			c->st.wb_pinned_pages--;
		}
		rangeset_remove(&f->wbpages, p->index, p->index + 1);
	}
	if (wb_total(f) && !f->on_dirty) {
		DL_APPEND2(c->dirty_files, f, dprev, dnext);
		f->on_dirty = true;
		c->st.dirty_files++;
	} else if (!wb_total(f) && f->on_dirty) {
		DL_DELETE2(c->dirty_files, f, dprev, dnext);
		f->dprev = f->dnext = NULL;
		f->on_dirty = false;
		c->st.dirty_files--;
	}
}

/* Make room for n more extents in p. */
static int wb_reserve(struct cpage *p, unsigned n)
{
	struct wbext *w;
	unsigned cap;

	if (p->nwb + n <= p->capwb)
		return 0;
	cap = p->capwb ? p->capwb * 2 : 4;
	while (cap < p->nwb + n)
		cap *= 2;
	if (cap > UINT16_MAX)
		return -1;
	w = realloc(p->wb, cap * sizeof(*w));
	if (!w)
		return -1;
	p->wb = w;
	p->capwb = (uint16_t)cap;
	return 0;
}

/* Two extents that may merge when they touch. */
static bool wb_same(const struct wbext *a, const struct wbext *b)
{
	return a->state == b->state && a->cred == b->cred && a->seq == b->seq &&
	       a->verf == b->verf && a->gen == b->gen;
}

/* Merge touching identical neighbours (extents are sorted, disjoint). */
static void wb_normalize(struct cpage *p)
{
	unsigned out = 0;

	for (unsigned i = 0; i < p->nwb; i++) {
		if (out && p->wb[out - 1].end == p->wb[i].start &&
		    wb_same(&p->wb[out - 1], &p->wb[i]))
			p->wb[out - 1].end = p->wb[i].end;
		else
			p->wb[out++] = p->wb[i];
	}
	p->nwb = (uint16_t)out;
}

int wb_replace(struct cache *c, struct cpage *p, uint32_t s,
	       uint32_t e, const struct wbext *ne)
{
	unsigned out = 0, at = 0;
	struct wbext *w;

	if (wb_reserve(p, 2) != 0)
		return -1;
	w = malloc((p->nwb + 2) * sizeof(*w));
	if (!w)
		return -1;
	wb_account(c, p, -1);
	for (unsigned i = 0; i < p->nwb; i++) {
		struct wbext x = p->wb[i];

		if (x.end <= s || x.start >= e) {
			if (x.start >= e && ne && at == 0) {
				w[out++] = *ne;
				at = 1;
			}
			w[out++] = x;
			continue;
		}
		if (x.start < s) {
			w[out] = x;
			w[out++].end = s;
		}
		if (ne && at == 0) {
			w[out++] = *ne;
			at = 1;
		}
		if (x.end > e) {
			w[out] = x;
			w[out++].start = e;
		}
	}
	if (ne && at == 0)
		w[out++] = *ne;
	memcpy(p->wb, w, out * sizeof(*w));
	free(w);
	p->nwb = (uint16_t)out;
	wb_normalize(p);
	wb_account(c, p, 1);
	wb_pages_update(c, p);
	return 0;
}

int cred_intern(struct cache *c, const struct nfs_cred *cr)
{
	struct nfs_cred *t;

	for (unsigned i = 0; i < c->ncreds; i++)
		if (nfs_cred_eq(&c->creds[i], cr))
			return (int)i;
	if (c->ncreds >= UINT16_MAX)
		return -1;
	t = realloc(c->creds, (c->ncreds + 1) * sizeof(*t));
	if (!t)
		return -1;
	c->creds = t;
	c->creds[c->ncreds] = *cr;
	c->creds[c->ncreds].machine = NULL;	/* borrowed by the caller */
	if (c->creds[c->ncreds].ngids > NFS_CRED_MAX_GIDS)
		c->creds[c->ncreds].ngids = NFS_CRED_MAX_GIDS;
	return (int)c->ncreds++;
}

/* Note that f got DIRTY bytes at now (0: due at once). */
static void dirty_mark(struct cfile *f, uint64_t dirty_before, double now)
{
	if (!dirty_before && f->wbbytes[WB_DIRTY])
		f->dirty_since = now;
	else if (now == 0)
		f->dirty_since = 0;
}

/*
 * Note that f absorbed bytes of its current generation at now (> 0; 0,
 * unknown, notes nothing); had_wb: f had write-back bytes before. Keeps
 * the first time per generation, drops the times no byte's generation
 * needs any more, and when all WB_GEN_TIMES are taken merges the second
 * oldest into the oldest (its time, older, then covers both: an age too
 * high, never too low).
 */
static void gen_time_note(struct cfile *f, bool had_wb, double now)
{
	uint32_t lo = f->nepochs ? f->epochs[0].lo : f->wgen;
	unsigned n = had_wb ? f->ngen_at : 0;

	if (now <= 0) {
		f->ngen_at = n;
		return;
	}
	if (n && f->gen_at[n - 1].gen == f->wgen)
		return;
	while (n >= 2 && f->gen_at[1].gen <= lo)
		memmove(&f->gen_at[0], &f->gen_at[1], --n * sizeof(f->gen_at[0]));
	if (n == WB_GEN_TIMES)
		memmove(&f->gen_at[1], &f->gen_at[2], (--n - 1) * sizeof(f->gen_at[0]));
	f->gen_at[n].gen = f->wgen;
	f->gen_at[n].at = now;
	f->ngen_at = n + 1;
}

/* A strictly later time than t. */
static struct ctime3 time_after(struct ctime3 wall, struct ctime3 t)
{
	if (wall.sec > t.sec || (wall.sec == t.sec && wall.nsec > t.nsec))
		return wall;
	if (++t.nsec >= 1000000000u) {
		t.nsec = 0;
		t.sec++;
	}
	return t;
}

/* Put back on a queue the pages [from, to) pinned early with no extent. */
static void wb_unpin_range(struct cache *c, struct cfile *f, uint64_t from,
			   uint64_t to)
{
	for (uint64_t idx = from; idx < to; idx++) {
		struct cpage *p = page_find(f, idx);

		if (p && !p->nwb && p->queue == Q_NONE) {
			page_queue_add(c, p, Q_A1IN);
			c->st.wb_pinned_pages--;
		}
	}
}

int cache_write_dirty(struct cache *c, struct cfile *f, uint64_t off,
		      const uint8_t *data, uint64_t len, const struct nfs_cred *cr,
		      double now, struct ctime3 wall)
{
	uint64_t e, dirty_before = f->wbbytes[WB_DIRTY];
	bool had_wb = wb_total(f) > 0;
	struct wbext ne;
	int id = cred_intern(c, cr);

	if (!len)
		return 0;
	if (id < 0 || off > CACHE_MAX_OFFSET || len > CACHE_MAX_OFFSET - off)
		return -1;
	e = off + len;
	/* The gap between the old end of file and the write reads as
	 * zeros (docs/design.md "Cache model": a WRITE extends the size;
	 * the gap is a hole). Before pages are taken: it may free empty
	 * pages. */
	if (f->has_attr && off > f->shown.size)
		cfile_hole_add(c, f, f->shown.size, off);
	/* Get every page first so a failure changes nothing. */
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		struct cpage *p = page_get(c, f, idx, false);

		if (!p || wb_reserve(p, 2) != 0) {
			c->st.fill_skipped++;
			wb_unpin_range(c, f, off >> c->shift, idx);
			return -1;
		}
		if (!p->nwb) {	/* pin it now so later pages cannot evict it */
			page_queue_del(c, p);
			c->st.wb_pinned_pages++;
		}
	}
	rangeset_remove(&f->holes, off, e);
	memset(&ne, 0, sizeof(ne));
	ne.state = WB_DIRTY;
	ne.cred = (uint16_t)id;
	ne.gen = f->wgen;
	for (uint64_t idx = off >> c->shift; idx <= (e - 1) >> c->shift; idx++) {
		uint64_t ps = idx << c->shift, pe = ps + c->page_size;
		uint64_t s = off > ps ? off : ps, t = e < pe ? e : pe;
		struct cpage *p = page_find(f, idx);

		page_store(c, f, p, ps, s, t, off, data);
		ne.start = (uint32_t)(s - ps);
		ne.end = (uint32_t)(t - ps);
		if (!p->nwb) {	/* undo the early pin; wb_replace re-pins */
			page_queue_add(c, p, Q_A1IN);
			c->st.wb_pinned_pages--;
		}
		wb_replace(c, p, ne.start, ne.end, &ne);
	}
	dirty_mark(f, dirty_before, now);
	gen_time_note(f, had_wb, now);
	if (!f->local) {
		f->local = true;
		f->local_size = f->attr.size;
		f->local_mtime = f->attr.mtime;
		f->local_ctime = f->attr.ctime;
	}
	if (e > f->local_size)
		f->local_size = e;
	f->local_mtime = time_after(wall, f->local_mtime);
	f->local_ctime = f->local_mtime;
	file_shown_update(f);
	return 0;
}

bool run_overlaps(const struct cfile *f, uint64_t s, uint64_t e)
{
	for (unsigned i = 0; i < f->nruns; i++)
		if (f->runs[i].off < e && s < f->runs[i].end)
			return true;
	return false;
}

/* The extent of p holding page offset po, or NULL. */
static struct wbext *ext_at(struct cpage *p, uint64_t po)
{
	for (unsigned i = 0; i < p->nwb; i++)
		if (p->wb[i].start <= po && po < p->wb[i].end)
			return &p->wb[i];
	return NULL;
}

/* Bytes of touching DIRTY extents of writer cred from off, at most max,
 * stopping at a gap, another writer or a WRITE in flight. */
static uint64_t run_measure(struct cache *c, struct cfile *f, uint64_t off,
			    uint16_t cred, uint64_t max)
{
	uint64_t at = off;
	struct cpage *p;

	while (at - off < max && (p = page_find(f, at >> c->shift))) {
		uint64_t ps = (at >> c->shift) << c->shift;
		struct wbext *x = ext_at(p, at - ps);

		if (!x || x->state != WB_DIRTY || x->cred != cred ||
		    run_overlaps(f, at, ps + x->end))
			break;
		at = ps + x->end;
		if (at - ps < c->page_size)
			break;	/* the extent ends inside the page: a gap */
	}
	return at - off < max ? at - off : max;
}

/* True if the DIRTY extent x of page p continues one of the same writer
 * ending at the previous page's end (so a run would not start there). */
static bool run_continues(struct cache *c, struct cfile *f, struct cpage *p,
			  const struct wbext *x)
{
	struct cpage *q;
	struct wbext *y;

	if (x->start != 0 || p->index == 0 ||
	    !(q = page_find(f, p->index - 1)) || !q->nwb)
		return false;
	y = &q->wb[q->nwb - 1];
	return y->end == c->page_size && y->state == WB_DIRTY &&
	       y->cred == x->cred &&
	       !run_overlaps(f, (q->index << c->shift) + y->start,
			     (q->index << c->shift) + y->end);
}

/* The first run head in pages [lo, hi): *off and *cred. With keep_tail,
 * a run shorter than wtmax that ends at the end of file is passed over. */
static bool wb_find(struct cache *c, struct cfile *f, uint64_t lo, uint64_t hi,
		    bool keep_tail, uint32_t wtmax, uint64_t *off,
		    uint16_t *cred)
{
	size_t n;
	const struct range *r = rangeset_ranges(&f->wbpages, &n);

	for (size_t k = 0; k < n; k++) {
		uint64_t a = r[k].start > lo ? r[k].start : lo;
		uint64_t b = r[k].end < hi ? r[k].end : hi;

		for (uint64_t idx = a; idx < b; idx++) {
			struct cpage *p = page_find(f, idx);
			uint64_t ps = idx << c->shift, len;

			for (unsigned i = 0; p && i < p->nwb; i++) {
				struct wbext *x = &p->wb[i];

				if (x->state != WB_DIRTY ||
				    run_overlaps(f, ps + x->start, ps + x->end) ||
				    run_continues(c, f, p, x))
					continue;
				len = run_measure(c, f, ps + x->start, x->cred,
						  wtmax);
				if (keep_tail && len < wtmax &&
				    ps + x->start + len >= f->shown.size)
					continue;
				*off = ps + x->start;
				*cred = x->cred;
				return true;
			}
		}
	}
	return false;
}

/* Remember a run in flight. */
static int run_add(struct cfile *f, uint64_t off, uint64_t end, uint32_t seq)
{
	if (f->nruns == f->capruns) {
		unsigned cap = f->capruns ? f->capruns * 2 : 4;
		struct wbrun *r = realloc(f->runs, cap * sizeof(*r));

		if (!r)
			return -1;
		f->runs = r;
		f->capruns = cap;
	}
	f->runs[f->nruns].off = off;
	f->runs[f->nruns].end = end;
	f->runs[f->nruns].seq = seq;
	f->nruns++;
	return 0;
}

bool cache_wb_next(struct cache *c, struct cfile *f, uint32_t wtmax,
		   uint8_t *buf, struct cache_wb_run *run)
{
	return cache_wb_next_ex(c, f, wtmax, false, buf, run);
}

bool cache_wb_next_ex(struct cache *c, struct cfile *f, uint32_t wtmax,
		      bool keep_tail, uint8_t *buf, struct cache_wb_run *run)
{
	uint64_t off, at, limit;
	uint16_t cred;
	struct cpage *p;
	struct wbext w;
	uint32_t len = 0;

	/* Search from where the last run ended, then from the start, so a
	 * file with many runs is not rescanned from its head each time. */
	if (!wtmax || (!wb_find(c, f, f->wb_cursor, UINT64_MAX, keep_tail,
				wtmax, &off, &cred) &&
		       !wb_find(c, f, 0, f->wb_cursor, keep_tail, wtmax, &off,
				&cred)))
		return false;
	limit = run_measure(c, f, off, cred, wtmax);
	at = off;
	memset(&w, 0, sizeof(w));
	w.state = WB_WRITING;
	w.cred = cred;
	w.seq = ++c->next_seq ? c->next_seq : ++c->next_seq;
	if (run_add(f, off, off, w.seq) != 0)
		return false;
	/* Mark the measured run WRITING and copy it out, across pages. */
	while (len < limit && (p = page_find(f, at >> c->shift))) {
		uint64_t ps = (at >> c->shift) << c->shift;
		struct wbext *x = ext_at(p, at - ps);
		uint32_t take;

		if (!x)
			break;
		take = (uint32_t)(ps + x->end - at);
		if (take > limit - len)
			take = (uint32_t)(limit - len);
		memcpy(buf + len, p->data + (at - ps), take);
		w.start = (uint32_t)(at - ps);
		w.end = w.start + take;
		w.gen = x->gen;
		if (wb_replace(c, p, w.start, w.end, &w) != 0)
			break;
		len += take;
		at += take;
	}
	f->runs[f->nruns - 1].end = at;
	if (!len) {
		f->nruns--;
		return false;
	}
	f->wb_cursor = at >> c->shift;
	run->off = off;
	run->len = len;
	run->seq = w.seq;
	run->cred = c->creds[cred];
	c->st.wb_runs++;
	c->st.wb_run_bytes += len;
	return true;
}

/* A copy of f's page index ranges (the caller frees it): walking pages
 * while their extents change changes the index. NULL with *n > 0 on
 * ENOMEM. */
static struct range *wbpages_copy(const struct cfile *f, size_t *n)
{
	const struct range *r = rangeset_ranges(&f->wbpages, n);
	struct range *copy = *n ? malloc(*n * sizeof(*copy)) : NULL;

	if (copy)
		memcpy(copy, r, *n * sizeof(*copy));
	return copy;
}

/* Apply fn to every extent of f's pages [lo, hi) (fn returns the new
 * state, 0 = clean). */
static void wb_each_pages(struct cache *c, struct cfile *f, uint64_t lo,
			  uint64_t hi, unsigned (*fn)(struct wbext *x, void *arg),
			  void *arg)
{
	size_t n;
	struct range *copy = wbpages_copy(f, &n);

	if (n && !copy)
		return;
	for (size_t k = 0; k < n; k++) {
		uint64_t a = copy[k].start > lo ? copy[k].start : lo;
		uint64_t b = copy[k].end < hi ? copy[k].end : hi;

		for (uint64_t idx = a; idx < b; idx++) {
			struct cpage *p = page_find(f, idx);
			unsigned out = 0;

			if (!p)
				continue;
			wb_account(c, p, -1);
			for (unsigned i = 0; i < p->nwb; i++) {
				unsigned st = fn(&p->wb[i], arg);

				if (st == WB_CLEAN)
					continue;
				p->wb[i].state = (uint8_t)st;
				p->wb[out++] = p->wb[i];
			}
			p->nwb = (uint16_t)out;
			wb_normalize(p);
			wb_account(c, p, 1);
			wb_pages_update(c, p);
		}
	}
	free(copy);
}

/* Apply fn to every extent of f. */
static void wb_each(struct cache *c, struct cfile *f,
		    unsigned (*fn)(struct wbext *x, void *arg), void *arg)
{
	wb_each_pages(c, f, 0, UINT64_MAX, fn, arg);
}

struct wb_done_arg {
	uint32_t seq;
	enum cache_wb_result res;
	uint64_t verf;
	uint64_t resent;
	struct cache *c;
	struct cfile *f;
	uint64_t page;		/* set per page by wb_each callers */
};

/* Transition for a finished run. */
static unsigned wb_done_fn(struct wbext *x, void *arg)
{
	struct wb_done_arg *a = arg;

	if (x->state != WB_WRITING || x->seq != a->seq)
		return x->state;
	switch (a->res) {
	case CACHE_WB_UNSTABLE:
		x->verf = a->verf;
		x->seq = 0;
		return WB_UNSTABLE;
	case CACHE_WB_STABLE:
		return WB_CLEAN;
	case CACHE_WB_RETRY:
		x->seq = 0;
		return WB_DIRTY;
	case CACHE_WB_FAILED:
		x->seq = UINT32_MAX;	/* marks bytes to drop, see below */
		return WB_DIRTY;
	}
	return x->state;
}

/* UNSTABLE bytes written under another verifier than verf go DIRTY. */
static unsigned wb_reverf_fn(struct wbext *x, void *arg)
{
	struct wb_done_arg *a = arg;

	if (x->state == WB_UNSTABLE && x->verf != a->verf) {
		a->resent += x->end - x->start;
		x->seq = 0;
		return WB_DIRTY;
	}
	return x->state;
}

/* Drop the extents marked failed and their bytes' validity. */
static void wb_drop_failed(struct cache *c, struct cfile *f)
{
	size_t n;
	struct range *copy = wbpages_copy(f, &n);

	if (n && !copy)
		return;
	for (size_t k = 0; k < n; k++) {
		for (uint64_t idx = copy[k].start; idx < copy[k].end; idx++) {
			struct cpage *p = page_find(f, idx);

			for (unsigned i = 0; p && i < p->nwb;) {
				struct wbext x = p->wb[i];
				uint64_t before = rangeset_bytes(&p->valid);

				if (x.state != WB_DIRTY || x.seq != UINT32_MAX) {
					i++;
					continue;
				}
				c->st.wb_failed_bytes += x.end - x.start;
				wb_replace(c, p, x.start, x.end, NULL);
				rangeset_remove(&p->valid, x.start, x.end);
				f->valid_bytes -= before - rangeset_bytes(&p->valid);
				c->st.valid_bytes -= before - rangeset_bytes(&p->valid);
				i = 0;
			}
		}
	}
	free(copy);
}

/* Forget run seq of f; *off and *end receive its span (0, 0 if none). */
static void run_del(struct cfile *f, uint32_t seq, uint64_t *off,
		    uint64_t *end)
{
	*off = *end = 0;
	for (unsigned i = 0; i < f->nruns; i++) {
		if (f->runs[i].seq == seq) {
			*off = f->runs[i].off;
			*end = f->runs[i].end;
			f->runs[i] = f->runs[--f->nruns];
			return;
		}
	}
}

void cache_wb_done(struct cache *c, struct cfile *f, uint32_t seq,
		   enum cache_wb_result res, uint64_t verf, int error)
{
	struct wb_done_arg a = { seq, res, verf, 0, c, f, 0 };
	uint64_t dirty_before = f->wbbytes[WB_DIRTY], off, end;

	/* Only the run's own pages change: a file with thousands of dirty
	 * pages must not be walked whole at every reply. */
	run_del(f, seq, &off, &end);
	if (end > off)
		wb_each_pages(c, f, off >> c->shift, ((end - 1) >> c->shift) + 1,
			      wb_done_fn, &a);
	/* A new upstream verifier: bytes written under an older one may be
	 * lost (RFC 1813 section 3.3.7) and are written again. */
	if (res == CACHE_WB_UNSTABLE && f->verf_known && verf != f->last_verf)
		wb_each(c, f, wb_reverf_fn, &a);
	if (res == CACHE_WB_UNSTABLE) {
		f->last_verf = verf;
		f->verf_known = true;
	}
	if (res == CACHE_WB_FAILED) {
		wb_drop_failed(c, f);
		if (!f->wb_error)
			f->wb_error = error;
		f->gen++;
		if (!wb_total(f)) {
			/* Nothing of the proxy's own is left: show the
			 * upstream's file again, revalidated. */
			f->local = false;
			f->timeo = 0;
			file_shown_update(f);
		}
	}
	c->st.wb_resend_bytes += a.resent;
	if (f->wbbytes[WB_DIRTY] > dirty_before)
		f->dirty_since = 0;
}

struct commit_arg {
	uint32_t tag;
	bool ok;
	uint64_t verf;
	uint64_t redirtied;
	bool tagging;
	bool any;
};

/* Tag UNSTABLE bytes, or settle them when the COMMIT came back. */
static unsigned commit_fn(struct wbext *x, void *arg)
{
	struct commit_arg *a = arg;

	if (x->state != WB_UNSTABLE)
		return x->state;
	if (a->tagging) {
		x->seq = a->tag;
		a->any = true;
		return WB_UNSTABLE;
	}
	if (a->ok && x->verf != a->verf) {
		a->redirtied += x->end - x->start;
		x->seq = 0;
		return WB_DIRTY;
	}
	if (x->seq != a->tag)
		return WB_UNSTABLE;
	if (!a->ok) {
		x->seq = 0;
		return WB_UNSTABLE;
	}
	return WB_CLEAN;
}

uint32_t cache_commit_begin(struct cache *c, struct cfile *f)
{
	struct commit_arg a = { 0, false, 0, 0, true, false };

	if (!f->wbbytes[WB_UNSTABLE])
		return 0;
	a.tag = ++c->next_seq ? c->next_seq : ++c->next_seq;
	wb_each(c, f, commit_fn, &a);
	return a.any ? a.tag : 0;
}

uint64_t cache_commit_done(struct cache *c, struct cfile *f, uint32_t tag,
			   bool ok, uint64_t verf)
{
	struct commit_arg a = { tag, ok, verf, 0, false, false };

	wb_each(c, f, commit_fn, &a);
	if (ok) {
		f->last_verf = verf;
		f->verf_known = true;
	}
	c->st.wb_resend_bytes += a.redirtied;
	if (a.redirtied)
		f->dirty_since = 0;
	return a.redirtied;
}

/* Mark every extent for dropping. */
static unsigned discard_fn(struct wbext *x, void *arg)
{
	(void)arg;
	x->seq = UINT32_MAX;
	return WB_DIRTY;
}

void cfile_discard_dirty(struct cache *c, struct cfile *f)
{
	uint64_t failed = c->st.wb_failed_bytes;

	wb_each(c, f, discard_fn, NULL);
	wb_drop_failed(c, f);
	c->st.wb_failed_bytes = failed;
	f->nruns = 0;
	f->gen++;
}

int cfile_wb_error_take(struct cfile *f)
{
	int e = f->wb_error;

	f->wb_error = 0;
	return e;
}

void cfile_wb_error_restore(struct cfile *f, int err)
{
	if (!f->wb_error)
		f->wb_error = err;
}

int cfile_wb_error_peek(const struct cfile *f)
{
	return f->wb_error;
}

uint64_t cfile_wb_bytes(const struct cfile *f, enum cache_wb_state st)
{
	return st < WB_NSTATES ? f->wbbytes[st] : 0;
}

bool cfile_has_wb(const struct cfile *f)
{
	return wb_total(f) != 0;
}

bool cfile_has_wb_upto(const struct cfile *f, uint32_t mark)
{
	return cfile_wb_bytes_upto(f, mark, WB_DIRTY) ||
	       cfile_wb_bytes_upto(f, mark, WB_WRITING) ||
	       cfile_wb_bytes_upto(f, mark, WB_UNSTABLE);
}

bool cfile_range_clean(const struct cfile *f, uint64_t off, uint64_t len,
		       uint32_t page_size)
{
	uint64_t e = off + len;
	unsigned shift = 0;

	if (!len || !wb_total(f))
		return true;
	while ((1u << shift) < page_size)
		shift++;
	for (uint64_t idx = off >> shift; idx <= (e - 1) >> shift; idx++) {
		const struct cpage *p = page_find(f, idx);
		uint64_t ps = idx << shift;

		for (unsigned i = 0; p && i < p->nwb; i++)
			if (ps + p->wb[i].start < e && off < ps + p->wb[i].end)
				return false;
	}
	return true;
}

double cfile_wb_since(const struct cfile *f)
{
	uint32_t lo;
	double at;

	if (!wb_total(f) || !f->nepochs || !f->ngen_at)
		return 0;
	lo = f->epochs[0].lo;
	at = f->gen_at[0].at;
	for (unsigned i = 1; i < f->ngen_at && f->gen_at[i].gen <= lo; i++)
		at = f->gen_at[i].at;
	return at;
}

double cfile_dirty_since(const struct cfile *f)
{
	return f->dirty_since;
}

uint64_t cache_wb_bytes(const struct cache *c, enum cache_wb_state st)
{
	return st < WB_NSTATES ? c->wbbytes[st] : 0;
}

struct cfile *cache_wb_file_first(struct cache *c)
{
	return c->dirty_files;
}

struct cfile *cache_wb_file_next(struct cache *c, struct cfile *f)
{
	(void)c;
	return f->dnext;
}

bool cfile_is_local(const struct cfile *f)
{
	return f->local;
}

void cfile_adopt_times(struct cfile *f)
{
	if (!f->local)
		return;
	f->local_mtime = f->attr.mtime;
	f->local_ctime = f->attr.ctime;
	file_shown_update(f);
}

size_t cfile_page_wb(const struct cache *c, const struct cfile *f,
		     uint64_t idx, uint8_t *buf, struct cache_wb_extent *out,
		     size_t max)
{
	const struct cpage *p = page_find(f, idx);
	size_t n = 0;

	if (!p)
		return 0;
	for (unsigned i = 0; i < p->nwb; i++) {
		const struct wbext *x = &p->wb[i];
		const struct nfs_cred *cr = &c->creds[x->cred];

		if (buf)
			memcpy(buf + x->start, p->data + x->start,
			       x->end - x->start);
		if (n && out[n - 1].off + out[n - 1].len == x->start &&
		    nfs_cred_eq(&out[n - 1].cred, cr)) {
			out[n - 1].len += x->end - x->start;
			continue;
		}
		if (n == max)
			return max + 1;
		out[n].off = x->start;
		out[n].len = x->end - x->start;
		out[n].cred = *cr;
		out[n].cred.machine = NULL;
		n++;
	}
	return n;
}

const uint8_t *cfile_page_bytes(const struct cfile *f, uint64_t idx)
{
	const struct cpage *p = page_find(f, idx);

	return p ? p->data : NULL;
}

size_t cfile_wb_page_gaps(const struct cfile *f, uint64_t start, uint64_t end,
			  struct range *out, size_t max)
{
	return rangeset_gaps(&f->wbpages, start, end, out, max);
}
