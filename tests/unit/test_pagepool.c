/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cache/pagepool: page buffers carved from 2 MiB chunks.
 * Each case checks the pool's invariants (pagepool_check_why) after every
 * step and its counts against what the case handed out: buffers are
 * aligned and distinct, a chunk fills before another is mapped, empty
 * chunks are kept up to the keep limit (one past it) and unmapped beyond,
 * data stays put while a buffer is out, bad page sizes are refused, and
 * a huge pool's prefault thread keeps the chunks it should ready, faulted
 * in, within the keep limit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cunit_main.h"
#include "pagepool.h"

#define NR(arr) (sizeof(arr) / sizeof((arr)[0]))

static void check(const struct pagepool *pp, uint64_t chunks, uint64_t used)
{
	struct pagepool_stats st;

	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, chunks);
	CU_ASSERT_EQUAL(st.mapped_bytes, chunks * PAGEPOOL_CHUNK);
	CU_ASSERT_EQUAL(st.used, used);
}

static void bad_page_sizes_are_refused(void)
{
	uint32_t bad[] = { 0, 2048, 4095, 65536 + 4096, 2 * PAGEPOOL_CHUNK };

	for (size_t i = 0; i < NR(bad); i++) {
		errno = 0;
		CU_ASSERT_PTR_NULL(pagepool_new(bad[i], 0, false));
		CU_ASSERT_EQUAL(errno, EINVAL);
	}
}

/* 64 KiB pages: 32 per chunk. The 33rd maps a second chunk. */
static void chunk_fills_before_the_next_is_mapped(void)
{
	struct pagepool *pp = pagepool_new(65536, 0, false);
	uint8_t *b[33];

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	check(pp, 0, 0);
	for (int i = 0; i < 32; i++) {
		b[i] = pagepool_get(pp);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b[i]);
		CU_ASSERT_EQUAL((uintptr_t)b[i] % 65536, 0);
		/* In address order within the one chunk. */
		CU_ASSERT_PTR_EQUAL(b[i], b[0] + (size_t)i * 65536);
		memset(b[i], i, 65536);
		check(pp, 1, (uint64_t)i + 1);
	}
	CU_ASSERT_EQUAL((uintptr_t)b[0] % PAGEPOOL_CHUNK, 0);
	b[32] = pagepool_get(pp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b[32]);
	CU_ASSERT_TRUE(b[32] < b[0] || b[32] >= b[0] + PAGEPOOL_CHUNK);
	check(pp, 2, 33);
	for (int i = 0; i < 32; i++)
		CU_ASSERT_TRUE(b[i][0] == i && b[i][65535] == i);
	/* A buffer put back is the next one handed out. */
	pagepool_put(pp, b[7]);
	check(pp, 2, 32);
	CU_ASSERT_PTR_EQUAL(pagepool_get(pp), b[7]);
	check(pp, 2, 33);
	pagepool_free(&pp);
	CU_ASSERT_PTR_NULL(pp);
	pagepool_free(&pp);	/* NULL: nothing */
}

/* Three chunks' worth out, then all back: one chunk stays mapped, the
 * others go as they empty; the kept one serves the next get. */
static void one_empty_chunk_is_kept(void)
{
	struct pagepool *pp = pagepool_new(1024 * 1024, 0, false);	/* 2 a chunk */
	uint8_t *b[6], *again;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	for (int i = 0; i < 6; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(b[i] = pagepool_get(pp));
	check(pp, 3, 6);
	pagepool_put(pp, b[0]);
	pagepool_put(pp, b[1]);		/* first chunk empty: kept */
	check(pp, 3, 4);
	pagepool_put(pp, b[2]);
	pagepool_put(pp, b[3]);		/* second empty: unmapped */
	check(pp, 2, 2);
	pagepool_put(pp, b[5]);
	check(pp, 2, 1);
	/* The half-used chunk serves first, not the spare. */
	again = pagepool_get(pp);
	CU_ASSERT_PTR_EQUAL(again, b[5]);
	check(pp, 2, 2);
	pagepool_put(pp, again);
	pagepool_put(pp, b[4]);
	check(pp, 1, 0);
	CU_ASSERT_PTR_NOT_NULL(again = pagepool_get(pp));
	check(pp, 1, 1);
	pagepool_put(pp, again);
	pagepool_free(&pp);
}

/* A keep limit of 3 chunks: 4 chunks' worth out, then all back, leaves 3
 * mapped; getting 3 chunks' worth again maps none. */
static void empty_chunks_kept_up_to_the_limit(void)
{
	struct pagepool *pp = pagepool_new(1024 * 1024, 3 * PAGEPOOL_CHUNK - 1, false);
	uint8_t *b[8];

	struct pagepool_stats st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	/* Under PAGEPOOL_HUGE_MIN: 4 KiB pages, only what is touched is
	 * resident. */
	pagepool_stats_get(pp, &st);
	CU_ASSERT_FALSE(st.huge);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(b[i] = pagepool_get(pp));
	check(pp, 4, 8);
	for (int i = 0; i < 8; i++)
		pagepool_put(pp, b[i]);
	check(pp, 3, 0);
	for (int i = 0; i < 6; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(b[i] = pagepool_get(pp));
	check(pp, 3, 6);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b[6] = pagepool_get(pp));
	check(pp, 4, 7);
	for (int i = 0; i < 7; i++)
		pagepool_put(pp, b[i]);
	check(pp, 3, 0);
	pagepool_free(&pp);
}

/* A pool kept at PAGEPOOL_HUGE_MIN or more is advised for huge pages. */
static void large_pool_is_huge(void)
{
	struct pagepool *pp = pagepool_new(65536, PAGEPOOL_HUGE_MIN, false);
	struct pagepool_stats st;
	uint8_t *b;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_TRUE(st.huge);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b = pagepool_get(pp));
	memset(b, 1, 65536);
	pagepool_ahead_wait(pp);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 1);
	CU_ASSERT_EQUAL(st.used, 1);
	pagepool_put(pp, b);
	pagepool_free(&pp);
	pp = pagepool_new(65536, PAGEPOOL_HUGE_MIN - 1, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_FALSE(st.huge);
	pagepool_free(&pp);
}

/* Whether the 4 KiB page at p is resident (mincore(2)). */
static bool resident(void *p)
{
	unsigned char v = 0;

	CU_ASSERT_EQUAL_FATAL(mincore(p, 4096, &v), 0);
	return v & 1;
}

/* Whether every 4 KiB of the chunk starting at p is resident. */
static bool chunk_resident(uint8_t *p)
{
	for (size_t off = 0; off < PAGEPOOL_CHUNK; off += 4096)
		if (!resident(p + off))
			return false;
	return true;
}

/* Take one chunk's worth of 64 KiB buffers (32) into b. */
static void take_chunk(struct pagepool *pp, uint8_t **b)
{
	for (int i = 0; i < 32; i++)
		CU_ASSERT_PTR_NOT_NULL_FATAL(b[i] = pagepool_get(pp));
}

/*
 * A huge pool of 256 MiB (128 chunks) keeps an eighth of it, capped at
 * PAGEPOOL_AHEAD_MAX (16) chunks, faulted in before any get: buffers come
 * from those chunks resident before they are written, the pool maps none
 * itself, and the thread refills what was taken.
 */
static void huge_pool_faults_chunks_in_ahead(void)
{
	struct pagepool *pp = pagepool_new(65536, 256ull << 20, false);
	struct pagepool_stats st;
	uint8_t *b[3][32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_ahead_wait(pp);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 0);
	CU_ASSERT_EQUAL(st.ahead, PAGEPOOL_AHEAD_MAX);
	CU_ASSERT_EQUAL(st.mapped_bytes, PAGEPOOL_AHEAD_MAX * PAGEPOOL_CHUNK);
	for (int k = 0; k < 3; k++) {
		take_chunk(pp, b[k]);
		/* Faulted in by the thread: every 4 KiB of the chunk is
		 * resident before the caller writes a byte. */
		CU_ASSERT_FATAL(chunk_resident(b[k][0]));
		CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	}
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 3);
	CU_ASSERT_EQUAL(st.ahead_taken, 3);
	CU_ASSERT_EQUAL(st.inline_maps, 0);
	CU_ASSERT_EQUAL(st.used, 96);
	pagepool_ahead_wait(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.ahead, PAGEPOOL_AHEAD_MAX);
	CU_ASSERT_EQUAL(st.mapped_bytes,
			(3 + PAGEPOOL_AHEAD_MAX) * PAGEPOOL_CHUNK);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 32; i++)
			pagepool_put(pp, b[k][i]);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_free(&pp);	/* joins the thread, unmaps the ready ones */
	CU_ASSERT_PTR_NULL(pp);
}

/*
 * At the keep limit the thread holds nothing ready: a 64 MiB pool (32
 * chunks, 4 ready) filled chunk by chunk never maps past 32 with what is
 * ready, takes every chunk up to the limit from the thread, and maps the
 * 33rd itself.
 */
static void ahead_stays_within_the_keep_limit(void)
{
	struct pagepool *pp = pagepool_new(65536, PAGEPOOL_HUGE_MIN, false);
	struct pagepool_stats st;
	uint8_t *(*b)[32] = calloc(33, sizeof(*b));

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	for (uint64_t k = 0; k < 32; k++) {
		pagepool_ahead_wait(pp);
		pagepool_stats_get(pp, &st);
		CU_ASSERT_EQUAL(st.chunks, k);
		CU_ASSERT_EQUAL(st.ahead, 32 - k < 4 ? 32 - k : 4);
		CU_ASSERT(st.chunks + st.ahead <= 32);
		take_chunk(pp, b[k]);
		CU_ASSERT_PTR_NULL_FATAL(pagepool_check_why(pp));
	}
	pagepool_ahead_wait(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 32);
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_EQUAL(st.ahead_taken, 32);
	CU_ASSERT_EQUAL(st.inline_maps, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b[32][0] = pagepool_get(pp));
	pagepool_ahead_wait(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 33);
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_EQUAL(st.inline_maps, 1);
	pagepool_put(pp, b[32][0]);
	for (int k = 0; k < 32; k++)
		for (int i = 0; i < 32; i++)
			pagepool_put(pp, b[k][i]);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 32);	/* the empty 33rd went */
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	free(b);
	pagepool_free(&pp);
}

/* A small pool has no prefault thread: it maps every chunk itself. */
static void small_pool_maps_its_own(void)
{
	struct pagepool *pp = pagepool_new(65536, PAGEPOOL_HUGE_MIN - 1, false);
	struct pagepool_stats st;
	uint8_t *b[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_ahead_wait(pp);	/* no thread: returns at once */
	take_chunk(pp, b);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_EQUAL(st.ahead_taken, 0);
	CU_ASSERT_EQUAL(st.inline_maps, 1);
	CU_ASSERT_EQUAL(st.mapped_bytes, PAGEPOOL_CHUNK);
	for (int i = 0; i < 32; i++)
		pagepool_put(pp, b[i]);
	pagepool_free(&pp);
}

/* A random mix of gets and puts against a list of what is out: the
 * counts and the invariants hold after every step, buffers never
 * overlap, and each keeps the bytes written into it. */
static void random_gets_and_puts_match_a_model(void)
{
	enum { N = 2000, STEPS = 20000 };
	struct pagepool *pp = pagepool_new(16384, 0, false);
	uint8_t **out = calloc(N, sizeof(*out));
	uint32_t *tag = calloc(N, sizeof(*tag));
	unsigned n = 0, peak = 0, seed = 16;
	uint64_t max_chunks = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tag);
	for (uint32_t step = 1; step <= STEPS; step++) {
		struct pagepool_stats st;

		if (n < N && (n == 0 || rand_r(&seed) % 100 < 55)) {
			out[n] = pagepool_get(pp);
			CU_ASSERT_PTR_NOT_NULL_FATAL(out[n]);
			tag[n] = step;
			memcpy(out[n], &step, sizeof(step));
			memcpy(out[n] + 16380, &step, sizeof(step));
			n++;
			if (n > peak)
				peak = n;
		} else {
			unsigned k = (unsigned)rand_r(&seed) % n;
			uint32_t h, t;

			memcpy(&h, out[k], sizeof(h));
			memcpy(&t, out[k] + 16380, sizeof(t));
			CU_ASSERT_EQUAL(h, tag[k]);
			CU_ASSERT_EQUAL(t, tag[k]);
			pagepool_put(pp, out[k]);
			out[k] = out[--n];
			tag[k] = tag[n];
		}
		CU_ASSERT_PTR_NULL_FATAL(pagepool_check_why(pp));
		pagepool_stats_get(pp, &st);
		CU_ASSERT_EQUAL_FATAL(st.used, n);
		/* A chunk is mapped only when every mapped one is full: never
		 * more than the peak of buffers out fills (16 KiB pages, 128
		 * a chunk), plus the one being filled. */
		CU_ASSERT_FATAL(st.chunks <= (uint64_t)peak / 128 + 1);
		/* And enough to hold what is out. */
		CU_ASSERT_FATAL(st.chunks >= ((uint64_t)n + 127) / 128);
		if (st.chunks > max_chunks)
			max_chunks = st.chunks;
	}
	/* The walk went past a thousand buffers out (8 chunks' worth). */
	CU_ASSERT(peak >= 1000);
	CU_ASSERT(max_chunks >= ((uint64_t)peak + 127) / 128);
	while (n)
		pagepool_put(pp, out[--n]);
	check(pp, 1, 0);
	free(out);
	free(tag);
	pagepool_free(&pp);
}

/*
 * Preallocating: the thread faults in every chunk up to the keep limit
 * before any get, not PAGEPOOL_AHEAD_MAX: a 96 MiB pool (48 chunks) has
 * all 48 ready and resident, the pool maps none itself however many it
 * takes, and the 49th chunk (past the limit) is the pool's own. A small
 * pool (4 MiB: under PAGEPOOL_HUGE_MIN, no thread otherwise) gets the
 * thread and its 2 chunks too, not advised for huge pages.
 */
static void preallocated_pool_faults_the_keep_limit_in(void)
{
	const uint64_t keep = 48;
	struct pagepool *pp = pagepool_new(65536, keep * PAGEPOOL_CHUNK, true);
	struct pagepool_stats st;
	uint8_t *(*b)[32] = calloc(keep + 1, sizeof(*b));

	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	pagepool_ahead_wait(pp);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, 0);
	CU_ASSERT_EQUAL(st.ahead, keep);
	CU_ASSERT_EQUAL(st.mapped_bytes, keep * PAGEPOOL_CHUNK);
	for (uint64_t k = 0; k < keep; k++) {
		take_chunk(pp, b[k]);
		CU_ASSERT_FATAL(chunk_resident(b[k][0]));
	}
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.chunks, keep);
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_EQUAL(st.ahead_taken, keep);
	CU_ASSERT_EQUAL(st.inline_maps, 0);
	take_chunk(pp, b[keep]);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.inline_maps, 1);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	for (uint64_t k = 0; k <= keep; k++)
		for (int i = 0; i < 32; i++)
			pagepool_put(pp, b[k][i]);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_free(&pp);
	free(b);

	pp = pagepool_new(65536, 2 * PAGEPOOL_CHUNK, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_ahead_wait(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_FALSE(st.huge);
	CU_ASSERT_EQUAL(st.ahead, 2);
	CU_ASSERT_PTR_NULL(pagepool_check_why(pp));
	pagepool_free(&pp);
	/* A keep limit of 0 has nothing to preallocate: no thread. */
	pp = pagepool_new(65536, 0, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pp);
	pagepool_ahead_wait(pp);
	pagepool_stats_get(pp, &st);
	CU_ASSERT_EQUAL(st.ahead, 0);
	CU_ASSERT_EQUAL(st.mapped_bytes, 0);
	pagepool_free(&pp);
}

int test_register(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
#define T(f) { #f, f }
		T(bad_page_sizes_are_refused),
		T(chunk_fills_before_the_next_is_mapped),
		T(one_empty_chunk_is_kept),
		T(empty_chunks_kept_up_to_the_limit),
		T(large_pool_is_huge),
		T(huge_pool_faults_chunks_in_ahead),
		T(ahead_stays_within_the_keep_limit),
		T(small_pool_maps_its_own),
		T(preallocated_pool_faults_the_keep_limit_in),
		T(random_gets_and_puts_match_a_model),
#undef T
	};
	CU_pSuite s = CU_add_suite("pagepool", NULL, NULL);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < NR(tests); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
