/* SPDX-License-Identifier: MIT */
/*
 * rangeset: sorted, disjoint, maximal byte ranges (see rangeset.h).
 *
 * Storage states and transitions:
 *   inline (cap == 0, n == 0 or 1)  --add of a second separate range,
 *                                      or a remove that splits-->  heap
 *   heap   (cap >= n >= 2)           --any change leaving n <= 1-->  inline
 * The heap array doubles when full and is halved (repeatedly, in one
 * realloc; a failed shrink keeps the bigger array) while no more than a
 * quarter of it is used, so the array stays under 4x what it holds (or 8)
 * and a run of adds and removes costs amortised O(1) reallocations.
 *
 * Invariants (rangeset_check()): start < end; r[i].end < r[i+1].start, so
 * neighbours neither overlap nor touch; cap == 0 iff n <= 1. Every
 * operation finds its place by binary search on the sorted ends or starts,
 * then moves the tail of the array at most once. An operation that must
 * allocate does so before it changes anything, so on ENOMEM the set is
 * untouched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rangeset.h"

_Static_assert(sizeof(struct rangeset) == 24, "struct rangeset is 24 bytes");

#define RANGESET_FIRST_CAP	4u	/* heap array size at the first spill */
#define RANGESET_MIN_SHRINK	8u	/* never halve arrays at or below this */

/* Return the ranges of s, inline or on the heap. */
static struct range *
rs_arr(struct rangeset *s)
{
	return s->cap ? s->u.many : &s->u.one;
}

/* Return the ranges of s, read-only. */
static const struct range *
rs_carr(const struct rangeset *s)
{
	return s->cap ? s->u.many : &s->u.one;
}

/* Find the first range whose end is >= x (n if none). */
static size_t
rs_first_end_ge(const struct range *r, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].end >= x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Find the first range whose start is > x (n if none). */
static size_t
rs_first_start_gt(const struct range *r, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start > x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Find the first range with a byte past x, i.e. end > x (n if none). */
static size_t
rs_first_after(const struct range *r, size_t n, uint64_t x)
{
	if (x == UINT64_MAX)
		return n;
	return rs_first_end_ge(r, n, x + 1);
}

/* Make room for need ranges; -1 (ENOMEM) leaves s unchanged. */
static int
rs_reserve(struct rangeset *s, size_t need)
{
	struct range *p;
	size_t cap;

	if (need <= s->cap || (s->cap == 0 && need <= 1))
		return 0;
	cap = s->cap ? (size_t)s->cap * 2 : RANGESET_FIRST_CAP;
	if (cap < need)
		cap = need;
	if (cap > UINT32_MAX || cap > SIZE_MAX / sizeof(*p))
		goto fail;
	if (s->cap == 0) {
		p = malloc(cap * sizeof(*p));
		if (p == NULL)
			goto fail;
		if (s->n == 1)
			p[0] = s->u.one;
	} else {
		p = realloc(s->u.many, cap * sizeof(*p));
		if (p == NULL)
			goto fail;
	}
	s->u.many = p;
	s->cap = (uint32_t)cap;
	return 0;
fail:
	errno = ENOMEM;
	return -1;
}

/* Give memory back after ranges went away: inline at n <= 1, else halve. */
static void
rs_shrink(struct rangeset *s)
{
	struct range one = { 0, 0 }, *p;
	uint32_t cap;

	if (s->cap == 0)
		return;
	if (s->n <= 1) {
		if (s->n == 1)
			one = s->u.many[0];
		free(s->u.many);
		s->u.one = one;
		s->cap = 0;
		return;
	}
	cap = s->cap;
	while (cap > RANGESET_MIN_SHRINK && s->n <= cap / 4)
		cap /= 2;
	if (cap == s->cap)
		return;
	p = realloc(s->u.many, (size_t)cap * sizeof(*p));
	if (p == NULL)
		return;		/* keep the bigger array; nothing is lost */
	s->u.many = p;
	s->cap = cap;
}

/* Delete ranges [from, to) of s, closing the hole in the array. */
static void
rs_delete(struct rangeset *s, size_t from, size_t to)
{
	struct range *r = rs_arr(s);

	if (to <= from)
		return;
	memmove(r + from, r + to, (s->n - to) * sizeof(*r));
	s->n -= (uint32_t)(to - from);
}

/* Insert [start, end) at index at; rs_reserve() made room. */
static void
rs_insert(struct rangeset *s, size_t at, uint64_t start, uint64_t end)
{
	struct range *r = rs_arr(s);

	memmove(r + at + 1, r + at, (s->n - at) * sizeof(*r));
	r[at].start = start;
	r[at].end = end;
	s->n++;
}

void
rangeset_init(struct rangeset *s)
{
	memset(s, 0, sizeof(*s));
}

void
rangeset_clear(struct rangeset *s)
{
	if (s->cap)
		free(s->u.many);
	rangeset_init(s);
}

int
rangeset_add(struct rangeset *s, uint64_t start, uint64_t end)
{
	struct range *r;
	size_t i, j;

	if (start >= end)
		return 0;
	r = rs_arr(s);
	/* Ranges i..j-1 overlap or touch [start, end): they all merge. */
	i = rs_first_end_ge(r, s->n, start);
	j = rs_first_start_gt(r, s->n, end);
	if (i == j) {
		if (rs_reserve(s, (size_t)s->n + 1) != 0)
			return -1;
		rs_insert(s, i, start, end);
		return 0;
	}
	if (r[i].start < start)
		start = r[i].start;
	if (r[j - 1].end > end)
		end = r[j - 1].end;
	r[i].start = start;
	r[i].end = end;
	rs_delete(s, i + 1, j);
	rs_shrink(s);
	return 0;
}

int
rangeset_remove(struct rangeset *s, uint64_t start, uint64_t end)
{
	struct range *r;
	size_t i, j, from, to;
	uint64_t tail;

	if (start >= end)
		return 0;
	r = rs_arr(s);
	/* Ranges i..j-1 share at least one byte with [start, end). */
	i = rs_first_after(r, s->n, start);
	j = rs_first_start_gt(r, s->n, end - 1);
	if (i >= j)
		return 0;
	if (j - i == 1 && r[i].start < start && r[i].end > end) {
		tail = r[i].end;
		if (rs_reserve(s, (size_t)s->n + 1) != 0)
			return -1;
		r = rs_arr(s);
		r[i].end = start;
		rs_insert(s, i + 1, end, tail);
		return 0;
	}
	from = i;
	to = j;
	if (r[i].start < start) {
		r[i].end = start;
		from = i + 1;
	}
	if (r[j - 1].end > end) {
		r[j - 1].start = end;
		to = j - 1;
	}
	rs_delete(s, from, to);
	rs_shrink(s);
	return 0;
}

void
rangeset_truncate(struct rangeset *s, uint64_t end)
{
	struct range *r = rs_arr(s);
	size_t i = rs_first_after(r, s->n, end);

	if (i == s->n)
		return;
	if (r[i].start < end) {
		r[i].end = end;
		i++;
	}
	s->n = (uint32_t)i;
	rs_shrink(s);
}

bool
rangeset_contains(const struct rangeset *s, uint64_t start, uint64_t end)
{
	const struct range *r = rs_carr(s);
	size_t i;

	if (start >= end)
		return true;
	/* Ranges are maximal, so a covered window lies inside one range. */
	i = rs_first_after(r, s->n, start);
	return i < s->n && r[i].start <= start && r[i].end >= end;
}

bool
rangeset_intersects(const struct rangeset *s, uint64_t start, uint64_t end)
{
	const struct range *r = rs_carr(s);
	size_t i;

	if (start >= end)
		return false;
	i = rs_first_after(r, s->n, start);
	return i < s->n && r[i].start < end;
}

uint64_t
rangeset_covered(const struct rangeset *s, uint64_t start, uint64_t end)
{
	const struct range *r = rs_carr(s);
	uint64_t sum = 0, a, b;
	size_t i;

	if (start >= end)
		return 0;
	for (i = rs_first_after(r, s->n, start); i < s->n; i++) {
		if (r[i].start >= end)
			break;
		a = r[i].start > start ? r[i].start : start;
		b = r[i].end < end ? r[i].end : end;
		sum += b - a;
	}
	return sum;
}

/* Store [start, end) as item k of out[] if it fits. */
static void
rs_emit(struct range *out, size_t max, size_t k, uint64_t start,
	uint64_t end)
{
	if (k < max) {
		out[k].start = start;
		out[k].end = end;
	}
}

size_t
rangeset_gaps(const struct rangeset *s, uint64_t start, uint64_t end,
	      struct range *out, size_t max)
{
	const struct range *r = rs_carr(s);
	uint64_t pos = start;
	size_t i, k = 0;

	if (start >= end)
		return 0;
	for (i = rs_first_after(r, s->n, start); i < s->n; i++) {
		if (r[i].start >= end)
			break;
		if (r[i].start > pos)
			rs_emit(out, max, k++, pos, r[i].start);
		pos = r[i].end;
	}
	if (pos < end)
		rs_emit(out, max, k++, pos, end);
	return k;
}

size_t
rangeset_ranges_in(const struct rangeset *s, uint64_t start, uint64_t end,
		   struct range *out, size_t max)
{
	const struct range *r = rs_carr(s);
	uint64_t a, b;
	size_t i, k = 0;

	if (start >= end)
		return 0;
	for (i = rs_first_after(r, s->n, start); i < s->n; i++) {
		if (r[i].start >= end)
			break;
		a = r[i].start > start ? r[i].start : start;
		b = r[i].end < end ? r[i].end : end;
		rs_emit(out, max, k++, a, b);
	}
	return k;
}

const struct range *
rangeset_ranges(const struct rangeset *s, size_t *n)
{
	if (n != NULL)
		*n = s->n;
	return s->n ? rs_carr(s) : NULL;
}

uint64_t
rangeset_bytes(const struct rangeset *s)
{
	const struct range *r = rs_carr(s);
	uint64_t sum = 0;

	for (size_t i = 0; i < s->n; i++)
		sum += r[i].end - r[i].start;
	return sum;
}

size_t
rangeset_heap_bytes(const struct rangeset *s)
{
	return (size_t)s->cap * sizeof(struct range);
}

bool
rangeset_check(const struct rangeset *s)
{
	const struct range *r = rs_carr(s);

	if (s->cap == 0 ? s->n > 1 : (s->n > s->cap || s->n < 2))
		return false;
	if (s->cap != 0 && s->u.many == NULL)
		return false;
	for (size_t i = 0; i < s->n; i++) {
		if (r[i].start >= r[i].end)
			return false;
		if (i > 0 && r[i - 1].end >= r[i].start)
			return false;
	}
	return true;
}
