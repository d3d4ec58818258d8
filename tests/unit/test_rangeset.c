/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cache/rangeset: the byte-range sets behind a page's valid
 * and dirty bytes and a file's holes. Hand-written cases pin the edges
 * (touching ranges merge, end is exclusive, offsets up to UINT64_MAX,
 * inline storage for one range); a randomized differential test runs
 * 200,000 operations per window against a plain byte-per-byte bitmap and
 * compares after each one. The seed is fixed, printed, and can be replaced
 * with the environment variable RANGESET_SEED to replay a failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "rangeset.h"

#define R(a, b)		((struct range){ (a), (b) })
#define NR(arr)		(sizeof(arr) / sizeof((arr)[0]))
#define SENTINEL	0xa5a5a5a5a5a5a5a5ull

/* Assert that s holds exactly the n ranges of want and is well formed. */
static void
expect_ranges(const struct rangeset *s, const struct range *want, size_t n)
{
	const struct range *got;
	size_t got_n = 99;

	CU_ASSERT_TRUE(rangeset_check(s));
	got = rangeset_ranges(s, &got_n);
	CU_ASSERT_EQUAL_FATAL(got_n, n);
	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(got[i].start, want[i].start);
		CU_ASSERT_EQUAL(got[i].end, want[i].end);
	}
	/* One range or none: inline, no heap memory. */
	if (n <= 1) {
		CU_ASSERT_EQUAL(rangeset_heap_bytes(s), 0);
	} else {
		CU_ASSERT_TRUE(rangeset_heap_bytes(s) >=
			       n * sizeof(struct range));
	}
}

/* Assert that s is empty. */
static void
expect_empty(const struct rangeset *s)
{
	size_t n = 99;

	CU_ASSERT_TRUE(rangeset_check(s));
	CU_ASSERT_PTR_NULL(rangeset_ranges(s, &n));
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(rangeset_bytes(s), 0);
	CU_ASSERT_EQUAL(rangeset_heap_bytes(s), 0);
}

/* Add [a, b) and assert it succeeded and kept the invariants. */
static void
add(struct rangeset *s, uint64_t a, uint64_t b)
{
	CU_ASSERT_EQUAL(rangeset_add(s, a, b), 0);
	CU_ASSERT_TRUE(rangeset_check(s));
}

/* Remove [a, b) and assert it succeeded and kept the invariants. */
static void
del(struct rangeset *s, uint64_t a, uint64_t b)
{
	CU_ASSERT_EQUAL(rangeset_remove(s, a, b), 0);
	CU_ASSERT_TRUE(rangeset_check(s));
}

/* Truncate at end and assert the invariants. */
static void
trunc_at(struct rangeset *s, uint64_t end)
{
	rangeset_truncate(s, end);
	CU_ASSERT_TRUE(rangeset_check(s));
}

/* Fill out[0..n) with a value the code under test never writes. */
static void
poison(struct range *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = R(SENTINEL, SENTINEL);
}

static void
test_struct_is_24_bytes_and_init_is_empty(void)
{
	struct rangeset a = RANGESET_INIT, b;

	CU_ASSERT_EQUAL(sizeof(struct rangeset), 24);
	memset(&b, 0x5a, sizeof(b));
	rangeset_init(&b);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
	expect_empty(&a);
	expect_empty(&b);
}

static void
test_add_merges_overlapping_ranges(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 0, 10);
	add(&s, 5, 15);
	expect_ranges(&s, (struct range[]){ R(0, 15) }, 1);
	add(&s, 3, 7);		/* inside: no change */
	expect_ranges(&s, (struct range[]){ R(0, 15) }, 1);
	add(&s, 0, 15);		/* the same range again */
	expect_ranges(&s, (struct range[]){ R(0, 15) }, 1);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), 15);
	rangeset_clear(&s);
}

static void
test_add_merges_touching_ranges(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 0, 10);
	add(&s, 10, 20);	/* touches on the right */
	expect_ranges(&s, (struct range[]){ R(0, 20) }, 1);
	add(&s, 30, 40);
	add(&s, 20, 30);	/* fills the gap exactly: both neighbours */
	expect_ranges(&s, (struct range[]){ R(0, 40) }, 1);
	rangeset_clear(&s);
	add(&s, 10, 20);
	add(&s, 5, 10);		/* touches on the left */
	expect_ranges(&s, (struct range[]){ R(5, 20) }, 1);
	rangeset_clear(&s);
}

static void
test_one_byte_gap_keeps_ranges_separate(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 0, 10);
	add(&s, 11, 20);
	expect_ranges(&s, (struct range[]){ R(0, 10), R(11, 20) }, 2);
	add(&s, 10, 11);
	expect_ranges(&s, (struct range[]){ R(0, 20) }, 1);
	rangeset_clear(&s);
}

static void
test_disjoint_adds_stay_separate_and_sorted(void)
{
	static const struct range want[] = {
		R(0, 1), R(2, 3), R(10, 20), R(25, 26), R(100, 200),
		R(1000, 1001),
	};
	static const size_t orders[][6] = {
		{ 0, 1, 2, 3, 4, 5 },
		{ 5, 4, 3, 2, 1, 0 },
		{ 3, 0, 5, 1, 4, 2 },
		{ 2, 5, 0, 4, 1, 3 },
	};
	struct rangeset s = RANGESET_INIT;

	for (size_t o = 0; o < NR(orders); o++) {
		for (size_t k = 0; k < NR(want); k++)
			add(&s, want[orders[o][k]].start, want[orders[o][k]].end);
		expect_ranges(&s, want, NR(want));
		CU_ASSERT_EQUAL(rangeset_bytes(&s), 1 + 1 + 10 + 1 + 100 + 1);
		rangeset_clear(&s);
		expect_empty(&s);
	}
}

static void
test_add_covering_several_ranges_collapses_them(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 10, 20);
	add(&s, 30, 40);
	add(&s, 50, 60);
	add(&s, 70, 80);
	add(&s, 15, 55);	/* starts and ends inside ranges */
	expect_ranges(&s, (struct range[]){ R(10, 60), R(70, 80) }, 2);
	add(&s, 90, 100);
	add(&s, 65, 95);	/* starts in a gap, ends inside a range */
	expect_ranges(&s, (struct range[]){ R(10, 60), R(65, 100) }, 2);
	add(&s, 0, 200);	/* strictly covers everything */
	expect_ranges(&s, (struct range[]){ R(0, 200) }, 1);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), 200);
	rangeset_clear(&s);
}

static void
test_empty_or_inverted_window_changes_nothing(void)
{
	struct rangeset s = RANGESET_INIT;

	CU_ASSERT_EQUAL(rangeset_add(&s, 5, 5), 0);
	CU_ASSERT_EQUAL(rangeset_add(&s, 9, 3), 0);
	expect_empty(&s);
	add(&s, 0, 10);
	CU_ASSERT_EQUAL(rangeset_remove(&s, 5, 5), 0);
	CU_ASSERT_EQUAL(rangeset_remove(&s, 8, 2), 0);
	CU_ASSERT_EQUAL(rangeset_add(&s, 20, 20), 0);
	expect_ranges(&s, (struct range[]){ R(0, 10) }, 1);
	rangeset_clear(&s);
}

static void
test_remove_splits_a_range(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 0, 100);
	del(&s, 40, 60);
	expect_ranges(&s, (struct range[]){ R(0, 40), R(60, 100) }, 2);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), 80);
	del(&s, 10, 11);	/* one byte out of the first piece */
	expect_ranges(&s, (struct range[]){ R(0, 10), R(11, 40), R(60, 100) },
		      3);
	rangeset_clear(&s);
}

static void
test_remove_trims_at_edges_and_ignores_gaps(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 10, 100);
	del(&s, 0, 20);		/* overlaps the start */
	expect_ranges(&s, (struct range[]){ R(20, 100) }, 1);
	del(&s, 90, 200);	/* overlaps the end */
	expect_ranges(&s, (struct range[]){ R(20, 90) }, 1);
	del(&s, 0, 20);		/* ends where the range starts: nothing */
	del(&s, 90, 95);	/* starts where the range ends: nothing */
	expect_ranges(&s, (struct range[]){ R(20, 90) }, 1);
	add(&s, 120, 130);
	del(&s, 95, 115);	/* inside the gap */
	expect_ranges(&s, (struct range[]){ R(20, 90), R(120, 130) }, 2);
	del(&s, 50, 125);	/* across the gap, trimming both */
	expect_ranges(&s, (struct range[]){ R(20, 50), R(125, 130) }, 2);
	rangeset_clear(&s);
}

static void
test_remove_of_exact_range_or_superset_empties(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 10, 20);
	del(&s, 10, 20);
	expect_empty(&s);
	add(&s, 10, 20);
	del(&s, 0, 30);
	expect_empty(&s);
	add(&s, 10, 20);
	add(&s, 30, 40);
	add(&s, 50, 60);
	del(&s, 10, 60);	/* exactly from the first start to the last end */
	expect_empty(&s);
	add(&s, 10, 20);
	add(&s, 30, 40);
	del(&s, 30, 40);	/* exact removal of one of two */
	expect_ranges(&s, (struct range[]){ R(10, 20) }, 1);
	rangeset_clear(&s);
}

static void
test_truncate(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 0, 10);
	add(&s, 20, 30);
	add(&s, 40, 50);
	trunc_at(&s, UINT64_MAX);
	trunc_at(&s, 50);
	trunc_at(&s, 60);
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 30), R(40, 50) },
		      3);
	trunc_at(&s, 45);	/* inside the last range */
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 30), R(40, 45) },
		      3);
	trunc_at(&s, 40);	/* at a start: drops that range */
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 30) }, 2);
	trunc_at(&s, 35);	/* in a gap: nothing */
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 30) }, 2);
	trunc_at(&s, 21);
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 21) }, 2);
	trunc_at(&s, 15);	/* down to one range: back inline */
	expect_ranges(&s, (struct range[]){ R(0, 10) }, 1);
	trunc_at(&s, 1);
	expect_ranges(&s, (struct range[]){ R(0, 1) }, 1);
	trunc_at(&s, 0);
	expect_empty(&s);
	trunc_at(&s, 0);	/* on an empty set */
	expect_empty(&s);
	add(&s, 100, 200);
	add(&s, 300, 400);
	trunc_at(&s, 0);	/* everything at once, from the heap */
	expect_empty(&s);
}

static void
test_contains_edges_end_is_exclusive(void)
{
	struct rangeset s = RANGESET_INIT;

	CU_ASSERT_TRUE(rangeset_contains(&s, 0, 0));
	CU_ASSERT_FALSE(rangeset_contains(&s, 0, 1));
	add(&s, 10, 20);
	CU_ASSERT_TRUE(rangeset_contains(&s, 10, 20));
	CU_ASSERT_TRUE(rangeset_contains(&s, 10, 11));
	CU_ASSERT_TRUE(rangeset_contains(&s, 19, 20));
	CU_ASSERT_FALSE(rangeset_contains(&s, 9, 20));
	CU_ASSERT_FALSE(rangeset_contains(&s, 10, 21));
	CU_ASSERT_FALSE(rangeset_contains(&s, 20, 21));
	CU_ASSERT_FALSE(rangeset_contains(&s, 9, 10));
	CU_ASSERT_TRUE(rangeset_contains(&s, 15, 15));	/* empty window */
	CU_ASSERT_TRUE(rangeset_contains(&s, 500, 500));
	add(&s, 21, 30);
	CU_ASSERT_FALSE(rangeset_contains(&s, 10, 30));	/* byte 20 missing */
	CU_ASSERT_FALSE(rangeset_contains(&s, 19, 22));
	CU_ASSERT_TRUE(rangeset_contains(&s, 21, 30));
	CU_ASSERT_FALSE(rangeset_contains(&s, 29, 31));
	rangeset_clear(&s);
}

static void
test_intersects_edges_end_is_exclusive(void)
{
	struct rangeset s = RANGESET_INIT;

	CU_ASSERT_FALSE(rangeset_intersects(&s, 0, 100));
	add(&s, 10, 20);
	CU_ASSERT_FALSE(rangeset_intersects(&s, 0, 10));
	CU_ASSERT_TRUE(rangeset_intersects(&s, 0, 11));
	CU_ASSERT_TRUE(rangeset_intersects(&s, 19, 30));
	CU_ASSERT_FALSE(rangeset_intersects(&s, 20, 30));
	CU_ASSERT_TRUE(rangeset_intersects(&s, 0, 100));
	CU_ASSERT_TRUE(rangeset_intersects(&s, 12, 13));
	CU_ASSERT_FALSE(rangeset_intersects(&s, 15, 15));	/* empty */
	add(&s, 30, 40);
	CU_ASSERT_FALSE(rangeset_intersects(&s, 20, 30));	/* the gap */
	CU_ASSERT_TRUE(rangeset_intersects(&s, 20, 31));
	rangeset_clear(&s);
}

static void
test_covered_counts_window_bytes(void)
{
	struct rangeset s = RANGESET_INIT;

	add(&s, 10, 20);
	add(&s, 30, 40);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 0, 100), 20);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 15, 35), 10);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 20, 30), 0);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 12, 13), 1);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 10, 40), 20);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 35, 35), 0);
	rangeset_clear(&s);
}

static void
test_gaps_in_windows(void)
{
	struct rangeset s = RANGESET_INIT;
	struct range out[4];

	poison(out, NR(out));
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 3, 7, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 3);
	CU_ASSERT_EQUAL(out[0].end, 7);
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 7, 7, out, NR(out)), 0);
	add(&s, 10, 20);
	add(&s, 30, 40);
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 0, 50, out, NR(out)), 3);
	CU_ASSERT_EQUAL(out[0].start, 0);
	CU_ASSERT_EQUAL(out[0].end, 10);
	CU_ASSERT_EQUAL(out[1].start, 20);
	CU_ASSERT_EQUAL(out[1].end, 30);
	CU_ASSERT_EQUAL(out[2].start, 40);
	CU_ASSERT_EQUAL(out[2].end, 50);
	/* Window starting and ending inside ranges. */
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 15, 35, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 20);
	CU_ASSERT_EQUAL(out[0].end, 30);
	/* Window exactly the ranges' outer bounds. */
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 10, 40, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 20);
	CU_ASSERT_EQUAL(out[0].end, 30);
	/* Window starting in a gap, ending inside a range. */
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 5, 15, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 5);
	CU_ASSERT_EQUAL(out[0].end, 10);
	/* Window starting inside a range, ending in a gap. */
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 35, 45, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 40);
	CU_ASSERT_EQUAL(out[0].end, 45);
	/* Window wholly inside a range or a gap. */
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 12, 18, out, NR(out)), 0);
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, 22, 28, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 22);
	CU_ASSERT_EQUAL(out[0].end, 28);
	rangeset_clear(&s);
}

static void
test_gaps_max_truncates_but_returns_total(void)
{
	struct rangeset s = RANGESET_INIT;
	struct range out[3];

	add(&s, 10, 20);
	add(&s, 30, 40);
	poison(out, NR(out));
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 0, 50, out, 1), 3);
	CU_ASSERT_EQUAL(out[0].start, 0);
	CU_ASSERT_EQUAL(out[0].end, 10);
	CU_ASSERT_EQUAL(out[1].start, SENTINEL);	/* not written */
	CU_ASSERT_EQUAL(out[2].start, SENTINEL);
	poison(out, NR(out));
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 0, 50, out, 2), 3);
	CU_ASSERT_EQUAL(out[1].start, 20);
	CU_ASSERT_EQUAL(out[1].end, 30);
	CU_ASSERT_EQUAL(out[2].start, SENTINEL);
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 0, 50, NULL, 0), 3);
	rangeset_clear(&s);
}

static void
test_ranges_in_clips_to_window(void)
{
	struct rangeset s = RANGESET_INIT;
	struct range out[4];

	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 0, 100, out, NR(out)), 0);
	add(&s, 10, 20);
	add(&s, 30, 40);
	CU_ASSERT_EQUAL_FATAL(rangeset_ranges_in(&s, 0, 50, out, NR(out)), 2);
	CU_ASSERT_EQUAL(out[0].start, 10);
	CU_ASSERT_EQUAL(out[0].end, 20);
	CU_ASSERT_EQUAL(out[1].start, 30);
	CU_ASSERT_EQUAL(out[1].end, 40);
	CU_ASSERT_EQUAL_FATAL(rangeset_ranges_in(&s, 15, 35, out, NR(out)), 2);
	CU_ASSERT_EQUAL(out[0].start, 15);
	CU_ASSERT_EQUAL(out[0].end, 20);
	CU_ASSERT_EQUAL(out[1].start, 30);
	CU_ASSERT_EQUAL(out[1].end, 35);
	CU_ASSERT_EQUAL_FATAL(rangeset_ranges_in(&s, 12, 18, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, 12);
	CU_ASSERT_EQUAL(out[0].end, 18);
	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 20, 30, out, NR(out)), 0);
	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 40, 41, out, NR(out)), 0);
	CU_ASSERT_EQUAL_FATAL(rangeset_ranges_in(&s, 19, 31, out, NR(out)), 2);
	CU_ASSERT_EQUAL(out[0].start, 19);
	CU_ASSERT_EQUAL(out[0].end, 20);
	CU_ASSERT_EQUAL(out[1].start, 30);
	CU_ASSERT_EQUAL(out[1].end, 31);
	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 25, 25, out, NR(out)), 0);
	/* max truncation: total returned, only max written. */
	poison(out, NR(out));
	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 0, 50, out, 1), 2);
	CU_ASSERT_EQUAL(out[0].start, 10);
	CU_ASSERT_EQUAL(out[0].end, 20);
	CU_ASSERT_EQUAL(out[1].start, SENTINEL);
	CU_ASSERT_EQUAL(rangeset_ranges_in(&s, 0, 50, NULL, 0), 2);
	rangeset_clear(&s);
}

static void
test_offsets_near_uint64_max(void)
{
	const uint64_t M = UINT64_MAX;
	struct rangeset s = RANGESET_INIT;
	struct range out[4];

	add(&s, M - 10, M);
	CU_ASSERT_TRUE(rangeset_contains(&s, M - 1, M));
	CU_ASSERT_TRUE(rangeset_contains(&s, M - 10, M));
	CU_ASSERT_FALSE(rangeset_contains(&s, M - 11, M));
	CU_ASSERT_TRUE(rangeset_intersects(&s, M - 1, M));
	CU_ASSERT_FALSE(rangeset_intersects(&s, M - 20, M - 10));
	add(&s, M - 20, M - 10);	/* touches from below */
	expect_ranges(&s, (struct range[]){ R(M - 20, M) }, 1);
	CU_ASSERT_EQUAL(rangeset_covered(&s, M - 30, M), 20);
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, M - 30, M, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, M - 30);
	CU_ASSERT_EQUAL(out[0].end, M - 20);
	del(&s, M - 15, M - 5);
	expect_ranges(&s, (struct range[]){ R(M - 20, M - 15), R(M - 5, M) },
		      2);
	CU_ASSERT_EQUAL_FATAL(rangeset_gaps(&s, M - 20, M, out, NR(out)), 1);
	CU_ASSERT_EQUAL(out[0].start, M - 15);
	CU_ASSERT_EQUAL(out[0].end, M - 5);
	trunc_at(&s, M);		/* nothing lies at or past M */
	expect_ranges(&s, (struct range[]){ R(M - 20, M - 15), R(M - 5, M) },
		      2);
	trunc_at(&s, M - 1);
	expect_ranges(&s, (struct range[]){ R(M - 20, M - 15), R(M - 5, M - 1) },
		      2);
	del(&s, M - 5, M);
	expect_ranges(&s, (struct range[]){ R(M - 20, M - 15) }, 1);
	add(&s, 0, M);			/* the largest representable range */
	expect_ranges(&s, (struct range[]){ R(0, M) }, 1);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), M);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 0, M), M);
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 0, M, out, NR(out)), 0);
	del(&s, 1, M - 1);
	expect_ranges(&s, (struct range[]){ R(0, 1), R(M - 1, M) }, 2);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), 2);
	rangeset_clear(&s);
	expect_empty(&s);
}

static void
test_one_range_is_inline_and_heap_comes_back(void)
{
	struct rangeset s = RANGESET_INIT;
	size_t heap;

	add(&s, 0, 10);
	CU_ASSERT_EQUAL(rangeset_heap_bytes(&s), 0);
	add(&s, 20, 30);
	heap = rangeset_heap_bytes(&s);
	CU_ASSERT_TRUE(heap >= 2 * sizeof(struct range));
	CU_ASSERT_EQUAL(heap, (size_t)s.cap * sizeof(struct range));
	add(&s, 10, 20);	/* merge back to one: inline again */
	expect_ranges(&s, (struct range[]){ R(0, 30) }, 1);
	CU_ASSERT_EQUAL(s.cap, 0);
	del(&s, 10, 20);	/* split: heap */
	CU_ASSERT_TRUE(rangeset_heap_bytes(&s) >= 2 * sizeof(struct range));
	del(&s, 20, 30);	/* remove one side: inline */
	expect_ranges(&s, (struct range[]){ R(0, 10) }, 1);
	add(&s, 40, 50);
	trunc_at(&s, 45);	/* truncate keeps two: still heap */
	expect_ranges(&s, (struct range[]){ R(0, 10), R(40, 45) }, 2);
	trunc_at(&s, 10);	/* down to one: inline */
	expect_ranges(&s, (struct range[]){ R(0, 10) }, 1);
	rangeset_clear(&s);
	expect_empty(&s);
	add(&s, 0, 1);		/* reusable after clear */
	expect_ranges(&s, (struct range[]){ R(0, 1) }, 1);
	rangeset_clear(&s);
}

static void
test_thousands_of_ranges_grow_and_shrink(void)
{
	enum { N = 10000 };
	struct rangeset s = RANGESET_INIT;
	size_t heap, n;
	uint64_t k;
	bool ok = true;

	/* Every other 10-byte slot, added from the top down (worst case). */
	for (k = N; k-- > 0;)
		ok &= rangeset_add(&s, k * 20, k * 20 + 10) == 0;
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_TRUE(rangeset_check(&s));
	rangeset_ranges(&s, &n);
	CU_ASSERT_EQUAL(n, N);
	CU_ASSERT_EQUAL(rangeset_bytes(&s), (uint64_t)N * 10);
	heap = rangeset_heap_bytes(&s);
	/* Geometric growth: at least N, less than twice N, ranges. */
	CU_ASSERT_TRUE(heap >= N * sizeof(struct range));
	CU_ASSERT_TRUE(heap < 2 * N * sizeof(struct range));
	for (k = 0; k < N; k++) {
		ok &= rangeset_contains(&s, k * 20, k * 20 + 10);
		ok &= !rangeset_intersects(&s, k * 20 + 10, k * 20 + 20);
	}
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_EQUAL(rangeset_gaps(&s, 0, N * 20, NULL, 0), N);
	CU_ASSERT_EQUAL(rangeset_covered(&s, 5, N * 20 - 15), N * 10 - 10);
	/* Remove most: the array shrinks, then goes inline at one range. */
	del(&s, 40, N * 20);
	expect_ranges(&s, (struct range[]){ R(0, 10), R(20, 30) }, 2);
	CU_ASSERT_TRUE(rangeset_heap_bytes(&s) < 64 * sizeof(struct range));
	del(&s, 20, 30);
	expect_ranges(&s, (struct range[]){ R(0, 10) }, 1);
	/* Fill the gaps of a full set: collapses to one range. */
	for (k = 1; k < N; k++)
		ok &= rangeset_add(&s, k * 20, k * 20 + 10) == 0;
	ok &= rangeset_add(&s, 0, N * 20) == 0;
	CU_ASSERT_TRUE(ok);
	expect_ranges(&s, (struct range[]){ R(0, N * 20) }, 1);
	rangeset_clear(&s);
}

/* Differential test ------------------------------------------------------- */

#define WIN		4096u		/* bytes modelled */
#define RANDOM_OPS	200000u		/* operations per window */

/* splitmix64: a fixed, libc-independent generator. */
static uint64_t
rnd_next(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Read the seed from RANGESET_SEED, or use the fixed default. */
static uint64_t
random_seed(void)
{
	const char *e = getenv("RANGESET_SEED");

	if (e != NULL && *e != '\0')
		return strtoull(e, NULL, 0);
	return 20240601;
}

/*
 * How random operations are drawn; the run cycles through these regimes
 * so that it both fragments the set into hundreds of ranges and keeps
 * collapsing it back to one range or none.
 */
struct regime {
	const char *name;
	uint32_t add, remove;	/* per 1000 operations; the rest truncate */
	uint32_t tiny, mid;	/* per 64 windows: 0..8 and 0..64 bytes long;
				   the rest anything up to WIN */
};

static const struct regime regimes[] = {
	{ "fragment", 499, 500, 56, 8 },
	{ "fill", 560, 439, 40, 22 },
	{ "mixed", 480, 500, 16, 40 },
	{ "coarse", 400, 400, 0, 32 },
};

#define REGIME_OPS	2500u	/* operations before switching regime */

/* A window [a, b) inside [0, WIN), its length drawn as g says. */
static void
rnd_window(const struct regime *g, uint64_t *st, uint32_t *a, uint32_t *b)
{
	uint32_t len, kind = (uint32_t)(rnd_next(st) % 64);

	*a = (uint32_t)(rnd_next(st) % (WIN + 1));
	if (kind < g->tiny)
		len = (uint32_t)(rnd_next(st) % 9);
	else if (kind < g->tiny + g->mid)
		len = (uint32_t)(rnd_next(st) % 65);
	else
		len = (uint32_t)(rnd_next(st) % (WIN + 1));
	*b = *a + len > WIN ? WIN : *a + len;
}

/* Collect the runs of value v (0 or 1) of model[a, b), shifted by base. */
static size_t
model_runs(const uint8_t *model, uint32_t a, uint32_t b, int v,
	   uint64_t base, struct range *out)
{
	size_t k = 0;
	const uint8_t *p;
	uint32_t end;

	while (a < b) {
		p = memchr(model + a, v, b - a);
		if (p == NULL)
			break;
		a = (uint32_t)(p - model);
		p = memchr(model + a, !v, b - a);
		end = p ? (uint32_t)(p - model) : b;
		out[k++] = R(base + a, base + end);
		a = end;
	}
	return k;
}

/* Compare two range lists. */
static bool
same_ranges(const struct range *x, size_t nx, const struct range *y,
	    size_t ny)
{
	return nx == ny && (nx == 0 || memcmp(x, y, nx * sizeof(*x)) == 0);
}

/* Check s against model byte by byte and as range lists; true if equal. */
static bool
matches_model(const struct rangeset *s, const uint8_t *model, uint64_t base)
{
	static struct range want[WIN / 2 + 1];
	static uint8_t seen[WIN];
	const struct range *r;
	size_t n, nw;
	uint64_t bytes = 0;

	if (!rangeset_check(s))
		return false;
	r = rangeset_ranges(s, &n);
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < n; i++) {
		if (r[i].start < base || r[i].end > base + WIN)
			return false;
		memset(seen + (r[i].start - base), 1, r[i].end - r[i].start);
		bytes += r[i].end - r[i].start;
	}
	if (memcmp(seen, model, WIN) != 0)
		return false;
	nw = model_runs(model, 0, WIN, 1, base, want);
	if (!same_ranges(r, n, want, nw) || rangeset_bytes(s) != bytes)
		return false;
	return (n <= 1) == (rangeset_heap_bytes(s) == 0);
}

/* Check every query on window [a, b) against model; true if all agree. */
static bool
queries_match_model(const struct rangeset *s, const uint8_t *model,
		    uint64_t base, uint32_t a, uint32_t b)
{
	static struct range want[WIN / 2 + 1], got[WIN / 2 + 1];
	size_t nw, ng, nw0;
	uint64_t cov = 0;

	nw = model_runs(model, a, b, 1, base, want);
	ng = rangeset_ranges_in(s, base + a, base + b, got, NR(got));
	if (!same_ranges(got, ng, want, nw))
		return false;
	for (size_t i = 0; i < nw; i++)
		cov += want[i].end - want[i].start;
	if (rangeset_covered(s, base + a, base + b) != cov)
		return false;
	if (rangeset_intersects(s, base + a, base + b) != (nw > 0))
		return false;
	nw0 = model_runs(model, a, b, 0, base, want);
	ng = rangeset_gaps(s, base + a, base + b, got, NR(got));
	if (!same_ranges(got, ng, want, nw0))
		return false;
	return rangeset_contains(s, base + a, base + b) == (nw0 == 0);
}

/* Apply one random operation to s and model; return its name. */
static const char *
random_op(struct rangeset *s, uint8_t *model, uint64_t base,
	  const struct regime *g, uint64_t *st, int *rc)
{
	uint32_t a, b, pick = (uint32_t)(rnd_next(st) % 1000);

	rnd_window(g, st, &a, &b);
	*rc = 0;
	if (pick < g->add) {
		*rc = rangeset_add(s, base + a, base + b);
		if (a < b)
			memset(model + a, 1, b - a);
		return "add";
	}
	if (pick < g->add + g->remove) {
		*rc = rangeset_remove(s, base + a, base + b);
		if (a < b)
			memset(model + a, 0, b - a);
		return "remove";
	}
	rangeset_truncate(s, base + a);
	memset(model + a, 0, WIN - a);
	return "truncate";
}

/* Run RANDOM_OPS operations on [base, base + WIN) against a bitmap. */
static void
run_differential(uint64_t base)
{
	static uint8_t model[WIN];
	struct rangeset s = RANGESET_INIT;
	uint64_t seed = random_seed(), st = seed;
	size_t max_n = 0, n, prev_n = 0, to_inline = 0;
	uint32_t qa, qb;
	const struct regime *g;
	const char *op;
	int rc;

	printf("\n  RANGESET_SEED=%" PRIu64 " base=%#" PRIx64 " ", seed, base);
	memset(model, 0, sizeof(model));
	for (uint32_t i = 0; i < RANDOM_OPS; i++) {
		g = &regimes[(i / REGIME_OPS) % NR(regimes)];
		op = random_op(&s, model, base, g, &st, &rc);
		rnd_window(g, &st, &qa, &qb);
		if (rc != 0 || !matches_model(&s, model, base) ||
		    !queries_match_model(&s, model, base, qa, qb)) {
			printf("\n  mismatch after op %u (%s, %s), seed %" PRIu64
			       ", base %#" PRIx64 "\n", i, op, g->name, seed,
			       base);
			CU_FAIL("rangeset differs from the bitmap model");
			break;
		}
		rangeset_ranges(&s, &n);
		if (n > max_n)
			max_n = n;
		if (prev_n >= 2 && n <= 1)
			to_inline++;
		prev_n = n;
	}
	/* The run must reach big arrays and come back inline to mean much. */
	CU_ASSERT_TRUE(max_n >= 200);
	CU_ASSERT_TRUE(to_inline >= 10);
	printf("(max %zu ranges, %zu returns to inline) ", max_n, to_inline);
	rangeset_clear(&s);
}

static void
test_random_ops_match_bitmap_model(void)
{
	run_differential(0);
}

static void
test_random_ops_match_bitmap_model_near_2_40(void)
{
	run_differential((UINT64_C(1) << 40) - WIN / 2);
}

static void
test_random_ops_match_bitmap_model_at_uint64_max(void)
{
	run_differential(UINT64_MAX - WIN);
}

int
test_register(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
#define T(f)	{ #f, test_##f }
		T(struct_is_24_bytes_and_init_is_empty),
		T(add_merges_overlapping_ranges),
		T(add_merges_touching_ranges),
		T(one_byte_gap_keeps_ranges_separate),
		T(disjoint_adds_stay_separate_and_sorted),
		T(add_covering_several_ranges_collapses_them),
		T(empty_or_inverted_window_changes_nothing),
		T(remove_splits_a_range),
		T(remove_trims_at_edges_and_ignores_gaps),
		T(remove_of_exact_range_or_superset_empties),
		T(truncate),
		T(contains_edges_end_is_exclusive),
		T(intersects_edges_end_is_exclusive),
		T(covered_counts_window_bytes),
		T(gaps_in_windows),
		T(gaps_max_truncates_but_returns_total),
		T(ranges_in_clips_to_window),
		T(offsets_near_uint64_max),
		T(one_range_is_inline_and_heap_comes_back),
		T(thousands_of_ranges_grow_and_shrink),
		T(random_ops_match_bitmap_model),
		T(random_ops_match_bitmap_model_near_2_40),
		T(random_ops_match_bitmap_model_at_uint64_max),
#undef T
	};
	CU_pSuite s = CU_add_suite("rangeset", NULL, NULL);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < NR(tests); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
