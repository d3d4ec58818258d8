/* SPDX-License-Identifier: MIT */
/*
 * readahead: per-file sequential stream detection and prefetch windows
 * (see readahead.h for the policy).
 *
 * A stream slot is FREE, CANDIDATE (window 0: one READ seen, nothing
 * issued) or SEQUENTIAL (window > 0). Transitions:
 *   FREE/any --READ matching no stream, slot least recently used-->
 *     CANDIDATE, or SEQUENTIAL at once (offset 0, prev_cached)
 *   CANDIDATE --matching READ that moves past next--> SEQUENTIAL
 *   SEQUENTIAL --matching READ past next--> SEQUENTIAL, window grown when
 *     the READ reaches a page the stream had not reached
 * A stream is never demoted: it is replaced when it is the least recently
 * used slot and a READ needs a new one.
 *
 * Per stream: next (end of its last READ), window (bytes, 0 for a
 * candidate), [origin, frontier) the span it issued (both page-aligned;
 * frontier is where its next window starts), trigger (the start of its
 * last window: a READ past it issues the next one at full size), stamp (a
 * per-file use counter for LRU). Invariants (ra_check): origin <= trigger
 * <= frontier; window is 0 or a page multiple <= max_window.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "readahead.h"

struct ra_stream {
	uint64_t next;		/* end of the stream's last READ */
	uint64_t window;	/* bytes; 0 while a candidate */
	uint64_t origin;	/* start of the span issued */
	uint64_t frontier;	/* end of the span issued */
	uint64_t trigger;	/* start of the last window issued */
	uint64_t stamp;		/* last use; 0: slot free */
};

struct ra_state {
	unsigned nslots;	/* streams allocated */
	uint64_t clock;		/* last stamp handed out */
	struct ra_stats stats;
	struct ra_stream st[];
};

/* Return a + b, saturated at UINT64_MAX. */
static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Round x down to a multiple of the page size. */
static uint64_t
page_down(const struct ra_params *p, uint64_t x)
{
	return x & ~(uint64_t)(p->page_size - 1);
}

/* Round x up to a multiple of the page size (saturating at the last). */
static uint64_t
page_up(const struct ra_params *p, uint64_t x)
{
	return page_down(p, sat_add(x, p->page_size - 1));
}

/* Return the smaller of a and b. */
static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Return the larger of a and b. */
static uint64_t
max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void
ra_params_default(struct ra_params *p, uint32_t page_size)
{
	p->max_window = RA_DEFAULT_MAX_WINDOW;
	p->min_window = RA_DEFAULT_MIN_WINDOW;
	p->cache_bytes = 0;
	p->full_window = 0;
	p->page_size = page_size;
	p->max_streams = RA_DEFAULT_STREAMS;
}

bool
ra_params_valid(const struct ra_params *p)
{
	if (p->page_size == 0 || (p->page_size & (p->page_size - 1)))
		return false;
	if (p->max_window % p->page_size || p->min_window > p->max_window)
		return false;
	if (p->full_window % p->page_size || p->full_window > p->max_window)
		return false;
	return p->max_streams >= 1 && p->max_streams <= RA_STREAMS_MAX;
}

/* The full window with the link unknown: RA_BASE_WINDOW, at most the cap. */
static uint64_t
ra_base_window(const struct ra_params *p)
{
	return min_u64(page_up(p, RA_BASE_WINDOW), p->max_window);
}

uint64_t
ra_full_window(const struct ra_params *p)
{
	return p->full_window ? p->full_window : ra_base_window(p);
}

uint64_t
ra_window_size(const struct ra_params *p, double rate, double rtt)
{
	uint64_t base = ra_base_window(p), cap = p->max_window;
	double want = RA_BDP_GAIN * rate * rtt;

	if (p->cache_bytes && p->cache_bytes / RA_CACHE_SHARE < cap)
		cap = page_down(p, p->cache_bytes / RA_CACHE_SHARE);
	/* !(x > 0) also catches NaN. */
	if (!(rate > 0) || !(rtt > 0) || !(want > 0) || cap <= base)
		return base;
	if (!(want < (double)cap))	/* also +inf */
		return cap;
	return max_u64(base, page_up(p, (uint64_t)want));
}

struct ra_state *
ra_state_new(const struct ra_params *p)
{
	struct ra_state *s;

	if (!ra_params_valid(p)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s) + p->max_streams * sizeof(s->st[0]));
	if (!s)
		return NULL;
	s->nslots = p->max_streams;
	return s;
}

void
ra_state_free(struct ra_state **s)
{
	free(*s);
	*s = NULL;
}

/* Number of slots usable under p. */
static unsigned
ra_slots(const struct ra_state *s, const struct ra_params *p)
{
	return p->max_streams < s->nslots ? p->max_streams : s->nslots;
}

/* The first window of a stream whose READs are len bytes. */
static uint64_t
ra_init_window(const struct ra_params *p, uint32_t len)
{
	uint64_t w = max_u64(p->min_window, 2 * page_up(p, len));

	return min_u64(page_up(p, w), ra_full_window(p));
}

/* The window after w: x4 while below a quarter of the full window, then
 * x2, up to the full window. */
static uint64_t
ra_grow_window(const struct ra_params *p, uint64_t w)
{
	uint64_t full = ra_full_window(p);
	uint64_t next = w < full / 4 ? 4 * w : 2 * w;

	return min_u64(next, full);
}

/*
 * How near a candidate's next a READ of len bytes (0: unknown) must start
 * to continue it: within one READ (a READ skipped, as parallel READs
 * arriving out of order do), at least 4 KiB (a client page: the kernel's
 * own test is index - prev_index <= 1), at most page_size, which a
 * sequential stream keeps. A candidate has one READ of evidence: with
 * page_size of slack, random 4 KiB READs landing within 64 KiB after an
 * earlier one's end started false streams (18 over 10,000 READs of
 * 256 MiB, 6.6% of the bytes read fetched ahead for nothing).
 */
static uint64_t
ra_candidate_slack(const struct ra_params *p, uint32_t len)
{
	uint64_t slack = len ? max_u64(len, 4096) : p->page_size;

	return min_u64(slack, p->page_size);
}

/* Find the stream a READ of len bytes (0: unknown) at off belongs to, or
 * NULL. */
static struct ra_stream *
ra_match(struct ra_state *s, const struct ra_params *p, uint64_t off,
	 uint32_t len)
{
	struct ra_stream *best = NULL;
	uint64_t best_d = UINT64_MAX;

	for (unsigned i = 0; i < ra_slots(s, p); i++) {
		struct ra_stream *t = &s->st[i];
		uint64_t d = off > t->next ? off - t->next : t->next - off;
		uint64_t slack = t->window ? p->page_size
					   : ra_candidate_slack(p, len);
		/* Inside what the stream issued ahead of its reader (a
		 * candidate issued nothing: its frontier only rounds next up
		 * to a page). */
		bool ahead = t->window && off > t->next && off < t->frontier;

		if (!t->stamp)
			continue;
		if (d > slack && !ahead)
			continue;
		if (d < best_d) {
			best = t;
			best_d = d;
		}
	}
	return best;
}

bool ra_in_stream(struct ra_state *s, const struct ra_params *p,
		  uint64_t off)
{
	struct ra_stream *t;

	if (!ra_params_valid(p) || !p->max_window)
		return false;
	t = ra_match(s, p, off, 0);
	return t && t->window > 0;
}

bool ra_streaming(const struct ra_state *s)
{
	if (!s)
		return false;
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->st[i].stamp && s->st[i].window > 0)
			return true;
	return false;
}

/* Take the free or least recently used slot for a stream ending at end. */
static struct ra_stream *
ra_replace(struct ra_state *s, const struct ra_params *p, uint64_t end)
{
	struct ra_stream *victim = &s->st[0];

	for (unsigned i = 1; i < ra_slots(s, p); i++)
		if (s->st[i].stamp < victim->stamp)
			victim = &s->st[i];
	memset(victim, 0, sizeof(*victim));
	victim->next = end;
	victim->origin = victim->frontier = victim->trigger = page_up(p, end);
	return victim;
}

/* Pull every stream's span back under a file that shrank to file_size. */
static void
ra_clamp_spans(struct ra_state *s, const struct ra_params *p,
	       uint64_t file_size)
{
	uint64_t limit = page_up(p, file_size);

	for (unsigned i = 0; i < ra_slots(s, p); i++) {
		struct ra_stream *t = &s->st[i];

		t->frontier = min_u64(t->frontier, limit);
		t->origin = min_u64(t->origin, t->frontier);
		t->trigger = min_u64(t->trigger, t->frontier);
	}
}

/*
 * Remove [a, b) from the sorted disjoint pieces r[0..n) (room for one
 * more: only one piece can be split in two); return the new count.
 */
static size_t
ra_subtract(struct range *r, size_t n, uint64_t a, uint64_t b)
{
	struct range tmp[RA_RANGES_MAX];
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (b <= r[i].start || a >= r[i].end) {
			tmp[k++] = r[i];
			continue;
		}
		if (r[i].start < a)
			tmp[k++] = (struct range){ r[i].start, a };
		if (b < r[i].end)
			tmp[k++] = (struct range){ b, r[i].end };
	}
	memcpy(r, tmp, k * sizeof(*r));
	return k;
}

/*
 * Split the window [start, end) of stream t into the pieces no other
 * stream issued ahead of its reader (what lies behind a reader was used
 * and may be gone); return their number (at most RA_RANGES_MAX).
 */
static size_t
ra_pieces(const struct ra_state *s, const struct ra_params *p,
	  const struct ra_stream *t, uint64_t start, uint64_t end,
	  struct range *r)
{
	size_t n = 1;

	r[0].start = start;
	r[0].end = end;
	for (unsigned i = 0; i < ra_slots(s, p) && n > 0; i++) {
		const struct ra_stream *o = &s->st[i];
		uint64_t lo = max_u64(o->origin, page_down(p, o->next));

		if (o != t && o->stamp && lo < o->frontier)
			n = ra_subtract(r, n, lo, o->frontier);
	}
	return n;
}

/*
 * Issue stream t's next window for a READ ending at end: copy its pieces
 * to out (at most max), advance the span, count. Returns the count.
 */
static size_t
ra_issue(struct ra_state *s, const struct ra_params *p, struct ra_stream *t,
	 uint64_t end, uint64_t file_size, struct range *out, size_t max)
{
	struct range r[RA_RANGES_MAX];
	uint64_t start = max_u64(t->frontier, page_up(p, end));
	uint64_t wend = min_u64(sat_add(start, t->window), file_size);
	size_t n, k;

	if (start >= wend)
		return 0;
	n = ra_pieces(s, p, t, start, wend, r);
	k = n < max ? n : max;
	if (k < n)
		wend = r[k].start;	/* page-aligned: the next piece */
	if (start > t->frontier)
		t->origin = start;	/* the reader outran the old span */
	t->trigger = start;
	t->frontier = page_up(p, wend);
	for (size_t i = 0; i < k; i++) {
		out[i] = r[i];
		s->stats.bytes += r[i].end - r[i].start;
	}
	if (k > 0)
		s->stats.windows++;
	return k;
}

/* Move stream t over a READ ending at end; say whether it issues now. A
 * growing window grows only when the READ reaches a page the stream had
 * not reached (consumption, not the count of READs). */
static bool
ra_advance(struct ra_state *s, const struct ra_params *p,
	   struct ra_stream *t, uint32_t len, uint64_t end, bool start_now)
{
	bool new_page = page_up(p, end) > page_up(p, t->next);
	uint64_t full = ra_full_window(p);

	t->next = end;
	if (t->window == 0) {
		if (!start_now)
			return false;
		t->window = ra_init_window(p, len);
		s->stats.streams++;
		return true;
	}
	if (t->window > full)
		t->window = full;	/* the link got slower */
	if (t->window < full) {
		if (!new_page)
			return false;
		t->window = ra_grow_window(p, t->window);
		return true;
	}
	return end > t->trigger;
}

size_t
ra_on_read(struct ra_state *s, const struct ra_params *p, uint64_t off,
	   uint32_t len, uint64_t file_size, bool prev_cached,
	   struct range *out, size_t max)
{
	uint64_t end = sat_add(off, len);
	struct ra_stream *t;
	bool issue;

	if (len == 0 || p->max_window == 0)
		return 0;
	ra_clamp_spans(s, p, file_size);
	t = ra_match(s, p, off, len);
	if (t && end <= t->next) {
		t->stamp = ++s->clock;	/* behind the stream: no progress */
		return 0;
	}
	if (t) {
		issue = ra_advance(s, p, t, len, end, true);
	} else {
		t = ra_replace(s, p, end);
		issue = ra_advance(s, p, t, len, end, off == 0 || prev_cached);
	}
	t->stamp = ++s->clock;
	return issue ? ra_issue(s, p, t, end, file_size, out, max) : 0;
}

struct range
ra_prev_range(const struct ra_params *p, uint64_t off, uint32_t len)
{
	uint64_t one = page_up(p, len);
	uint64_t want = max_u64(one, min_u64(4 * one, ra_full_window(p)));
	struct range r = { off - min_u64(off, want), off };

	return r;
}

void
ra_cancel(struct ra_state *s, const struct ra_params *p,
	  const struct range *r)
{
	if (r->start >= r->end)
		return;
	for (unsigned i = 0; i < s->nslots; i++) {
		struct ra_stream *t = &s->st[i];

		if (!t->stamp || r->start < t->origin ||
		    r->start >= t->frontier ||
		    t->frontier > page_up(p, r->end))
			continue;
		t->frontier = page_down(p, r->start);
		t->trigger = min_u64(t->trigger, t->frontier);
		t->origin = min_u64(t->origin, t->frontier);
	}
}

void
ra_invalidate(struct ra_state *s, const struct ra_params *p)
{
	for (unsigned i = 0; i < s->nslots; i++) {
		struct ra_stream *t = &s->st[i];

		t->origin = t->frontier = t->trigger = page_up(p, t->next);
	}
}

void
ra_stats_get(const struct ra_state *s, struct ra_stats *st)
{
	*st = s->stats;
}

void
ra_stats_add(struct ra_stats *sum, const struct ra_stats *x)
{
#define X(t, f, k, n, h) sum->f += x->f;
	RA_METRICS(X, )
#undef X
}

/* Check one stream's invariants. */
static bool
ra_stream_check(const struct ra_state *s, const struct ra_params *p,
		const struct ra_stream *t)
{
	if (!t->stamp)
		return true;
	if (t->stamp > s->clock)
		return false;
	if (t->origin % p->page_size || t->frontier % p->page_size)
		return false;
	if (t->origin > t->trigger || t->trigger > t->frontier)
		return false;
	return t->window % p->page_size == 0 && t->window <= p->max_window;
}

bool
ra_check(const struct ra_state *s, const struct ra_params *p)
{
	if (!ra_params_valid(p))
		return false;
	for (unsigned i = 0; i < s->nslots; i++) {
		if (i >= ra_slots(s, p) && s->st[i].stamp)
			return false;
		if (!ra_stream_check(s, p, &s->st[i]))
			return false;
	}
	return true;
}
