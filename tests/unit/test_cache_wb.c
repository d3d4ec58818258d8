/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the cache's holes and write-back state (cache/cache.c):
 * zero blocks and the proxy's own extensions become holes that take no
 * page memory; absorbed writes are DIRTY, leave in coalesced runs of one
 * writer (never across a gap), settle by the upstream verifier, stay
 * pinned until committed, survive another writer's invalidation, and
 * failures are kept for the file.
 */
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cache.h"
#include "cunit_main.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define CHECK(c) CU_ASSERT_TRUE(cache_check(c))

static const struct cache_ac AC = { 3.0, 60.0 };
static const struct nfs_cred U1 = { 1000, 1000, 0, { 0 }, NULL };
static const struct nfs_cred U2 = { 2000, 2000, 0, { 0 }, NULL };
static const struct ctime3 WALL = { 2000000000u, 0 };

/* A cache of budget pages of ps bytes with zero detection at g. */
static struct cache *mk(uint32_t ps, uint64_t pages, uint32_t g)
{
	struct cache_params p = { ps, pages * (ps + cache_page_meta_bytes()), g, 0, false };
	struct cache *c = cache_new(&p);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

/* File number id with attributes of a regular file of size bytes. */
static struct cfile *file(struct cache *c, unsigned id, uint64_t size)
{
	uint8_t fh[4] = { 1, 2, 3, (uint8_t)id };
	struct cfile *f = cache_get(c, fh, sizeof(fh));
	struct cattr a;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.nlink = 1;
	a.size = size;
	a.mtime.sec = a.ctime.sec = 100;
	cfile_attr_observe(c, f, &a, 0, &AC);
	return f;
}

static void test_zero_blocks_of_a_fill_become_holes(void)
{
	struct cache *c = mk(64 * KiB, 64, 4096);
	struct cfile *f = file(c, 1, 256 * KiB);
	uint8_t *data = malloc(64 * KiB), out[8192];
	struct cache_stats st;
	struct range fetch[4];
	uint64_t end, holes;
	size_t n;

	memset(data, 'x', 64 * KiB);
	memset(data + 4096, 0, 8192);	/* blocks 1 and 2 */
	memset(data + 20000, 0, 100);	/* not a whole block */
	cache_fill(c, f, 0, data, 64 * KiB);
	CHECK(c);
	CU_ASSERT_EQUAL(cfile_hole_bytes(f), 8192);
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), 64 * KiB - 8192);
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 4096, 8192, &end, fetch, 4, &n), CACHE_HOLE);
	CU_ASSERT_EQUAL(n, 0);
	memset(out, 0xee, sizeof(out));
	CU_ASSERT_EQUAL(cache_copy_ex(c, f, 0, 8192, out, &holes), 8192);
	CU_ASSERT_EQUAL(holes, 4096);
	CU_ASSERT_EQUAL(out[0], 'x');
	CU_ASSERT_EQUAL(out[4096], 0);
	CU_ASSERT_EQUAL(out[8191], 0);
	/* An all-zero fill of four pages takes no page memory. */
	memset(data, 0, 64 * KiB);
	for (unsigned i = 1; i < 4; i++)
		cache_fill(c, f, (uint64_t)i * 64 * KiB, data, 64 * KiB);
	cache_stats_get(c, &st);
	CU_ASSERT_EQUAL(st.pages, 1);
	CU_ASSERT_EQUAL(st.zero_blocks, 2 + 3 * 16);
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 64 * KiB, 192 * KiB, &end, fetch, 4, &n), CACHE_HOLE);
	CHECK(c);
	free(data);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_hole_add_serves_zeros_and_shrinks_under_writes(void)
{
	struct cache *c = mk(4096, 16, 0);
	struct cfile *f = file(c, 2, 1ull << 30);
	struct range fetch[4];
	uint64_t end;
	size_t n;
	uint8_t buf[100];

	cfile_hole_add(c, f, 0, 1ull << 30);
	CU_ASSERT_EQUAL(cfile_hole_bytes(f), 1ull << 30);
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 5 * MiB, MiB, &end, fetch, 4, &n), CACHE_HOLE);
	CU_ASSERT_EQUAL(end, 6 * MiB);
	memset(buf, 'w', sizeof(buf));
	CU_ASSERT_EQUAL(cache_write_dirty(c, f, 5000, buf, 100, &U1, 1, WALL), 0);
	CU_ASSERT_EQUAL(cfile_hole_bytes(f), (1ull << 30) - 100);
	/* A window of data and zeros is a hit, not a hole. */
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 4096, 4096, &end, fetch, 4, &n), CACHE_HIT);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_write_past_eof_leaves_a_hole_and_shows_size(void)
{
	struct cache *c = mk(4096, 16, 0);
	struct cfile *f = file(c, 3, 1000);
	struct range fetch[4];
	struct cattr before = *cfile_attr(f);
	uint64_t end;
	size_t n;

	CU_ASSERT_EQUAL(cache_write_dirty(c, f, 5ull << 30, (const uint8_t *)"z", 1, &U1, 1, WALL), 0);
	CU_ASSERT_EQUAL(cfile_attr(f)->size, (5ull << 30) + 1);
	CU_ASSERT_TRUE(cfile_is_local(f));
	CU_ASSERT_TRUE(cfile_attr(f)->mtime.sec > before.mtime.sec);
	CU_ASSERT_EQUAL(cfile_hole_bytes(f), (5ull << 30) - 1000);
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 1000, 4 * MiB, &end, fetch, 4, &n), CACHE_HOLE);
	/* [0, 1000) is the upstream's data: it must still be fetched. */
	CU_ASSERT_EQUAL(cache_plan_read(c, f, 0, 4096, &end, fetch, 4, &n), CACHE_PARTIAL);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(fetch[0].start, 0);
	CU_ASSERT_EQUAL(fetch[0].end, 1000);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

/* Absorb len bytes of v at off by cr. */
static void put(struct cache *c, struct cfile *f, uint64_t off, uint64_t len,
		uint8_t v, const struct nfs_cred *cr)
{
	uint8_t *b = malloc(len);

	memset(b, v, len);
	CU_ASSERT_EQUAL(cache_write_dirty(c, f, off, b, len, cr, 1, WALL), 0);
	free(b);
}

static void test_random_order_writes_leave_in_wtmax_runs(void)
{
	struct cache *c = mk(64 * KiB, 1024, 0);
	struct cfile *f = file(c, 4, 0);
	unsigned order[1024];
	uint8_t *buf = malloc(MiB);
	struct cache_wb_run run;
	unsigned runs = 0;
	uint64_t total = 0;

	for (unsigned i = 0; i < 1024; i++)
		order[i] = i;
	srand(7);
	for (unsigned i = 1023; i > 0; i--) {
		unsigned j = (unsigned)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < 1024; i++)
		put(c, f, (uint64_t)order[i] * 4096, 4096, (uint8_t)order[i], &U1);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 4 * MiB);
	while (cache_wb_next(c, f, MiB, buf, &run)) {
		CU_ASSERT_EQUAL(run.len, MiB);
		CU_ASSERT_EQUAL(run.off, (uint64_t)runs * MiB);
		CU_ASSERT_EQUAL(buf[4096], (uint8_t)(run.off / 4096 + 1));
		CU_ASSERT_EQUAL(run.cred.uid, 1000);
		total += run.len;
		runs++;
	}
	CU_ASSERT_EQUAL(runs, 4);
	CU_ASSERT_EQUAL(total, 4 * MiB);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_WRITING), 4 * MiB);
	CHECK(c);
	free(buf);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_runs_never_merge_writers_or_cross_gaps(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 5, 0);
	uint8_t buf[64 * KiB];
	struct cache_wb_run run;
	uint64_t offs[8];
	unsigned n = 0;

	put(c, f, 0, 4096, 'a', &U1);
	put(c, f, 4096, 4096, 'b', &U2);
	put(c, f, 8192, 4096, 'c', &U1);
	put(c, f, 20000, 10, 'd', &U1);	/* after a gap */
	put(c, f, 20010, 10, 'e', &U1);	/* touching: same run */
	while (n < 8 && cache_wb_next(c, f, 64 * KiB, buf, &run)) {
		offs[n++] = run.off;
		if (run.off == 20000) {
			CU_ASSERT_EQUAL(run.len, 20);
			CU_ASSERT_EQUAL(memcmp(buf, "dddddddddddeeeeeeeee", 0), 0);
			CU_ASSERT_EQUAL(buf[9], 'd');
			CU_ASSERT_EQUAL(buf[10], 'e');
		} else {
			CU_ASSERT_EQUAL(run.len, 4096);
		}
		if (run.off == 4096)
			CU_ASSERT_EQUAL(run.cred.uid, 2000);
	}
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_EQUAL(offs[0], 0);
	CU_ASSERT_EQUAL(offs[1], 4096);
	CU_ASSERT_EQUAL(offs[2], 8192);
	CU_ASSERT_EQUAL(offs[3], 20000);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_verifier_settles_or_resends(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 6, 0);
	uint8_t buf[64 * KiB];
	struct cache_wb_run r1, r2;
	uint32_t tag;
	struct cache_stats st;

	put(c, f, 0, 8192, 'a', &U1);
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r1));
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r2));
	CU_ASSERT_FALSE(cfile_range_clean(f, 0, 1, 4096));
	cache_wb_done(c, f, r1.seq, CACHE_WB_UNSTABLE, 111, 0);
	cache_wb_done(c, f, r2.seq, CACHE_WB_UNSTABLE, 111, 0);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_UNSTABLE), 8192);
	tag = cache_commit_begin(c, f);
	CU_ASSERT_NOT_EQUAL(tag, 0);
	/* The upstream restarted: another verifier. Everything is resent. */
	CU_ASSERT_EQUAL(cache_commit_done(c, f, tag, true, 222), 8192);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 8192);
	cache_stats_get(c, &st);
	CU_ASSERT_EQUAL(st.wb_resend_bytes, 8192);
	CU_ASSERT_TRUE(cache_wb_next(c, f, 64 * KiB, buf, &r1));
	CU_ASSERT_EQUAL(r1.len, 8192);
	cache_wb_done(c, f, r1.seq, CACHE_WB_UNSTABLE, 222, 0);
	tag = cache_commit_begin(c, f);
	CU_ASSERT_EQUAL(cache_commit_done(c, f, tag, true, 222), 0);
	CU_ASSERT_TRUE(cfile_range_clean(f, 0, 8192, 4096));
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), 8192);	/* kept, clean */
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

/* A COMMIT's mark covers the bytes written before it, in every state,
 * and not the ones written after (RFC 1813 section 3.3.21). */
static void test_commit_mark_covers_earlier_writes_only(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 12, 0);
	uint8_t buf[64 * KiB];
	struct cache_wb_run r;
	uint32_t m1, m2, tag;

	put(c, f, 0, 8192, 'a', &U1);
	m1 = cfile_wb_mark(f);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_DIRTY), 8192);
	put(c, f, 16384, 4096, 'b', &U1);	/* after the mark */
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_DIRTY), 8192);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 12288);
	/* The bytes move through WRITING and UNSTABLE in their generation. */
	CU_ASSERT_TRUE(cache_wb_next(c, f, 64 * KiB, buf, &r));
	CU_ASSERT_EQUAL(r.len, 8192);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_WRITING), 8192);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_DIRTY), 0);
	cache_wb_done(c, f, r.seq, CACHE_WB_UNSTABLE, 7, 0);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_UNSTABLE), 8192);
	/* Half of the marked bytes rewritten: the newer data supersedes. */
	put(c, f, 4096, 4096, 'c', &U1);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_UNSTABLE), 4096);
	m2 = cfile_wb_mark(f);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m2, WB_DIRTY), 8192);
	tag = cache_commit_begin(c, f);
	CU_ASSERT_EQUAL(cache_commit_done(c, f, tag, true, 7), 0);
	/* m1 is settled though the file still has DIRTY bytes; m2 is not. */
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_UNSTABLE) +
			cfile_wb_bytes_upto(f, m1, WB_DIRTY) +
			cfile_wb_bytes_upto(f, m1, WB_WRITING), 0);
	CU_ASSERT_FALSE(cfile_has_wb_upto(f, m1));
	CU_ASSERT_TRUE(cfile_has_wb_upto(f, m2));
	CU_ASSERT_TRUE(cfile_has_wb(f));
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m2, WB_DIRTY), 8192);
	CHECK(c);
	/* More marks than counted spans: they merge, never undercount. */
	for (unsigned i = 0; i < 20; i++) {
		put(c, f, 32768 + i * 4096, 100, 'd', &U2);
		cfile_wb_mark(f);
		CHECK(c);
	}
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, m1, WB_DIRTY), 0);
	CU_ASSERT_TRUE(cfile_wb_bytes_upto(f, m2, WB_DIRTY) >= 8192);
	CU_ASSERT_EQUAL(cfile_wb_bytes_upto(f, UINT32_MAX, WB_DIRTY),
			cfile_wb_bytes(f, WB_DIRTY));
	cfile_put(c, &f);
	cache_free(&c);
}

/* Absorb 4 KiB of v at off at time now (monotonic seconds). */
static void put_at(struct cache *c, struct cfile *f, uint64_t off, uint8_t v,
		   double now)
{
	uint8_t b[4096];

	memset(b, v, sizeof(b));
	CU_ASSERT_EQUAL(cache_write_dirty(c, f, off, b, sizeof(b), &U1, now,
					  WALL), 0);
}

/*
 * cfile_wb_since: when the oldest bytes not stable upstream were
 * absorbed. A retry does not make them younger; once a generation
 * (cfile_wb_mark) settles, the next one's first time counts; settled
 * entirely it is 0, and a new episode starts at its own time. More
 * generations than kept times: never younger than the truth.
 */
static void test_wb_since_follows_oldest_unsettled_generation(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 13, 0);
	uint8_t buf[64 * KiB];
	struct cache_wb_run r, runs[3];
	unsigned n;
	uint32_t tag;

	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 0, 1e-9);
	put_at(c, f, 0, 'a', 10);
	put_at(c, f, 8192, 'a', 11);		/* same generation: still 10 */
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 10, 1e-9);
	/* Written, no answer, DIRTY again: as old as before. */
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r));
	cache_wb_done(c, f, r.seq, CACHE_WB_RETRY, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 10, 1e-9);
	(void)cfile_wb_mark(f);			/* a client COMMIT came */
	put_at(c, f, 16384, 'b', 20);
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 10, 1e-9);
	/* The first generation written and committed; the second is left. */
	for (n = 0; n < 3 && cache_wb_next(c, f, 4096, buf, &runs[n]); n++)
		;
	CU_ASSERT_EQUAL(n, 3);
	for (unsigned i = 0; i < n; i++)
		cache_wb_done(c, f, runs[i].seq, runs[i].off < 16384 ?
			      CACHE_WB_UNSTABLE : CACHE_WB_RETRY, 5, 0);
	tag = cache_commit_begin(c, f);
	CU_ASSERT_EQUAL(cache_commit_done(c, f, tag, true, 5), 0);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 4096);
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 20, 1e-9);
	/* All stable: 0; the next write starts anew. */
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r));
	cache_wb_done(c, f, r.seq, CACHE_WB_STABLE, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 0, 1e-9);
	put_at(c, f, 0, 'c', 30);
	CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 30, 1e-9);
	/* 20 generations, one write each at 31..50: the oldest is kept. */
	for (unsigned i = 0; i < 20; i++) {
		(void)cfile_wb_mark(f);
		put_at(c, f, 32768 + i * 8192, 'd', 31 + i);
		CU_ASSERT_DOUBLE_EQUAL(cfile_wb_since(f), 30, 1e-9);
	}
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

/* The budget pays for pages with their metadata: a cache whose every
 * page holds uncommitted bytes, scattered, stays within it. */
static void test_budget_counts_page_metadata(void)
{
	uint64_t budget = 1 * MiB, cost = 4096 + cache_page_meta_bytes();
	struct cache_params p = { 4096, budget, 0, 0, false };
	struct cache *c = cache_new(&p);
	struct cfile *f;
	struct cache_stats st;
	uint8_t b[100];
	uint64_t n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	f = file(c, 13, 0);
	memset(b, 'm', sizeof(b));
	while (cache_write_dirty(c, f, n * 2 * 4096 + 7, b, sizeof(b), &U1, 1,
				 WALL) == 0)
		n++;
	cache_stats_get(c, &st);
	CU_ASSERT_EQUAL(st.page_cost, cost);
	CU_ASSERT_EQUAL(n, budget / cost);
	CU_ASSERT_EQUAL(st.pages, budget / cost);
	CU_ASSERT_TRUE(st.pages < budget / 4096);
	CU_ASSERT_EQUAL(st.wb_pinned_pages, st.pages);
	/* What the structures measure fits inside what was charged. */
	CU_ASSERT_TRUE(st.page_bytes + st.meta_bytes <= budget);
	CU_ASSERT_TRUE(st.pages * st.page_cost <= budget);
	/* An eighth of a 4 KiB page at most, under 1% of a 64 KiB one. */
	CU_ASSERT_TRUE(cache_page_meta_bytes() * 8 <= 4096);
	CU_ASSERT_TRUE(cache_page_meta_bytes() * 100 <= 65536);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_rewrite_while_writing_is_not_lost(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 7, 0);
	uint8_t buf[4096];
	struct cache_wb_run r1, r2;

	put(c, f, 0, 4096, 'a', &U1);
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r1));
	put(c, f, 0, 4096, 'b', &U1);		/* rewritten in flight */
	/* Not sent again while the first WRITE is in flight. */
	CU_ASSERT_FALSE(cache_wb_next(c, f, 4096, buf, &r2));
	cache_wb_done(c, f, r1.seq, CACHE_WB_STABLE, 0, 0);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 4096);
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r2));
	CU_ASSERT_EQUAL(buf[0], 'b');
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_failure_drops_bytes_and_is_kept_once(void)
{
	struct cache *c = mk(4096, 64, 0);
	struct cfile *f = file(c, 8, 0);
	uint8_t buf[4096];
	struct cache_wb_run r;

	put(c, f, 0, 4096, 'a', &U1);
	CU_ASSERT_TRUE(cache_wb_next(c, f, 4096, buf, &r));
	cache_wb_done(c, f, r.seq, CACHE_WB_FAILED, 0, 28 /* NOSPC */);
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), 0);
	CU_ASSERT_TRUE(cfile_range_clean(f, 0, 4096, 4096));
	CU_ASSERT_EQUAL(cfile_wb_error_peek(f), 28);
	CU_ASSERT_EQUAL(cfile_wb_error_take(f), 28);
	CU_ASSERT_EQUAL(cfile_wb_error_take(f), 0);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_dirty_pages_are_pinned(void)
{
	struct cache *c = mk(4096, 4, 0);
	struct cfile *f = file(c, 9, 0);
	uint8_t data[4096];
	struct cache_stats st;

	for (unsigned i = 0; i < 4; i++)
		put(c, f, (uint64_t)i * 4096, 4096, 'p', &U1);
	memset(data, 'q', sizeof(data));
	/* No room: a fill is skipped, an absorbed write is refused. */
	cache_fill(c, f, 10 * 4096, data, 4096);
	CU_ASSERT_EQUAL(cache_write_dirty(c, f, 20 * 4096, data, 4096, &U1, 1, WALL), -1);
	cache_stats_get(c, &st);
	CU_ASSERT_EQUAL(st.evictions, 0);
	CU_ASSERT_EQUAL(st.wb_pinned_pages, 4);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 4 * 4096);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_other_writer_keeps_unwritten_bytes(void)
{
	struct cache *c = mk(4096, 16, 0);
	struct cfile *f = file(c, 10, 8192);
	uint8_t data[8192];
	struct cattr a = *cfile_attr(f);

	memset(data, 'u', sizeof(data));
	cache_fill(c, f, 0, data, 8192);
	put(c, f, 100, 10, 'd', &U1);
	a.mtime.sec = 999;	/* someone else wrote */
	CU_ASSERT_TRUE(cfile_attr_observe(c, f, &a, 10, &AC));
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), 10);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 10);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

static void test_truncate_and_discard_drop_dirty_bytes(void)
{
	struct cache *c = mk(4096, 16, 0);
	struct cfile *f = file(c, 11, 0);

	put(c, f, 0, 12000, 't', &U1);
	cfile_truncate(c, f, 5000);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 5000);
	CU_ASSERT_EQUAL(cfile_attr(f)->size, 5000);
	CU_ASSERT_TRUE(cfile_has_wb(f));
	cfile_discard_dirty(c, f);
	CU_ASSERT_EQUAL(cfile_wb_bytes(f, WB_DIRTY), 0);
	CU_ASSERT_FALSE(cfile_has_wb(f));
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), 0);
	CHECK(c);
	cfile_put(c, &f);
	cache_free(&c);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("cache_holes_writeback", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "zero_blocks_of_a_fill_become_holes", test_zero_blocks_of_a_fill_become_holes);
	CU_add_test(s, "hole_add_serves_zeros_and_shrinks_under_writes", test_hole_add_serves_zeros_and_shrinks_under_writes);
	CU_add_test(s, "write_past_eof_leaves_a_hole_and_shows_size", test_write_past_eof_leaves_a_hole_and_shows_size);
	CU_add_test(s, "random_order_writes_leave_in_wtmax_runs", test_random_order_writes_leave_in_wtmax_runs);
	CU_add_test(s, "runs_never_merge_writers_or_cross_gaps", test_runs_never_merge_writers_or_cross_gaps);
	CU_add_test(s, "verifier_settles_or_resends", test_verifier_settles_or_resends);
	CU_add_test(s, "commit_mark_covers_earlier_writes_only", test_commit_mark_covers_earlier_writes_only);
	CU_add_test(s, "budget_counts_page_metadata", test_budget_counts_page_metadata);
	CU_add_test(s, "rewrite_while_writing_is_not_lost", test_rewrite_while_writing_is_not_lost);
	CU_add_test(s, "wb_since_follows_oldest_unsettled_generation", test_wb_since_follows_oldest_unsettled_generation);
	CU_add_test(s, "failure_drops_bytes_and_is_kept_once", test_failure_drops_bytes_and_is_kept_once);
	CU_add_test(s, "dirty_pages_are_pinned", test_dirty_pages_are_pinned);
	CU_add_test(s, "other_writer_keeps_unwritten_bytes", test_other_writer_keeps_unwritten_bytes);
	CU_add_test(s, "truncate_and_discard_drop_dirty_bytes", test_truncate_and_discard_drop_dirty_bytes);
	return 0;
}
