/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cache/readahead: stream detection and window growth.
 * A small simulator stands in for the cache: it remembers every byte read
 * or prefetched in a rangeset and computes prev_cached from it as the
 * header asks (a miss whose ra_prev_range is cached), so the random-read
 * bound counts the misdetections a real cache would cause. Defaults: 4 KiB pages, 128 KiB first window,
 * the 4 MiB base full window (the link unknown; a 64 MiB cap), 8
 * streams. The full window sized by the link (ra_window_size) is checked
 * with given rates and round trips, never measured ones. Random offsets come from a fixed-seed
 * xorshift, so every run is the same.
 */
#include <stdio.h>
#include <string.h>

#include "cunit_main.h"
#include "readahead.h"

#define KiB		(1024ull)
#define MiB		(1024ull * 1024)
#define GiB		(1024ull * 1024 * 1024)
#define MAXW		(4 * MiB)

/* A file under readahead, with the bytes a cache would hold. */
struct sim {
	struct ra_params p;
	struct ra_state *s;
	struct rangeset cached;
	uint64_t size;
	uint64_t read_bytes, pf_bytes;
	struct range out[RA_RANGES_MAX];
	size_t n;		/* ranges the last READ issued */
};

/* Start a simulation of a file of size bytes with default params. */
static void
sim_init(struct sim *m, uint64_t size)
{
	memset(m, 0, sizeof(*m));
	ra_params_default(&m->p, 4096);
	m->s = ra_state_new(&m->p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->s);
	rangeset_init(&m->cached);
	m->size = size;
}

/* Free the simulation. */
static void
sim_fini(struct sim *m)
{
	ra_state_free(&m->s);
	CU_ASSERT_PTR_NULL(m->s);
	rangeset_clear(&m->cached);
}

/* Read [off, off + len): report it, remember what it and the prefetch
 * cached; return the number of ranges issued (also in m->out). */
static size_t
sim_read(struct sim *m, uint64_t off, uint32_t len)
{
	struct range pr = ra_prev_range(&m->p, off, len);
	bool prev = !rangeset_contains(&m->cached, off, off + len) &&
		    pr.start < pr.end &&
		    rangeset_contains(&m->cached, pr.start, pr.end);

	m->n = ra_on_read(m->s, &m->p, off, len, m->size, prev, m->out,
			  RA_RANGES_MAX);
	CU_ASSERT_TRUE(ra_check(m->s, &m->p));
	rangeset_add(&m->cached, off, off + len);
	m->read_bytes += len;
	for (size_t i = 0; i < m->n; i++) {
		CU_ASSERT_TRUE(m->out[i].start < m->out[i].end);
		rangeset_add(&m->cached, m->out[i].start, m->out[i].end);
		m->pf_bytes += m->out[i].end - m->out[i].start;
	}
	return m->n;
}

/* Bytes the last READ issued. */
static uint64_t
sim_issued(const struct sim *m)
{
	uint64_t b = 0;

	for (size_t i = 0; i < m->n; i++)
		b += m->out[i].end - m->out[i].start;
	return b;
}

/* Assert that the last READ issued exactly the one range [a, b). */
static void
expect_one(const struct sim *m, uint64_t a, uint64_t b)
{
	CU_ASSERT_EQUAL_FATAL(m->n, 1);
	CU_ASSERT_EQUAL(m->out[0].start, a);
	CU_ASSERT_EQUAL(m->out[0].end, b);
}

/* Next value of a xorshift64 generator. */
static uint64_t
xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void
test_cold_sequential_reaches_max_in_4_reads(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	/* Windows 128K, 512K, 2M, 4M, each from where the last ended. */
	sim_read(&m, 0, 64 * KiB);
	expect_one(&m, 64 * KiB, 192 * KiB);
	sim_read(&m, 64 * KiB, 64 * KiB);
	expect_one(&m, 192 * KiB, 704 * KiB);
	sim_read(&m, 128 * KiB, 64 * KiB);
	expect_one(&m, 704 * KiB, 704 * KiB + 2 * MiB);
	sim_read(&m, 192 * KiB, 64 * KiB);
	expect_one(&m, 704 * KiB + 2 * MiB, 704 * KiB + 6 * MiB);
	/* From then on: full windows, every byte past the reader. */
	for (uint64_t off = 256 * KiB; off < 256 * MiB; off += 64 * KiB) {
		sim_read(&m, off, 64 * KiB);
		for (size_t i = 0; i < m.n; i++) {
			CU_ASSERT(m.out[i].start >= off + 64 * KiB);
			CU_ASSERT_EQUAL(m.out[i].end - m.out[i].start, MAXW);
		}
	}
	sim_fini(&m);
}

static void
test_small_reads_reach_max_in_4_reads(void)
{
	uint64_t want[] = { 128 * KiB, 512 * KiB, 2 * MiB, 4 * MiB };
	struct sim m;

	sim_init(&m, 1 * GiB);
	for (unsigned i = 0; i < 4; i++) {
		sim_read(&m, i * 4 * KiB, 4 * KiB);
		CU_ASSERT_EQUAL(sim_issued(&m), want[i]);
		CU_ASSERT(m.out[0].start >= (i + 1) * 4 * KiB);
	}
	sim_fini(&m);
}

/*
 * Issue 16: sixteen sequential 1 KiB READs inside one 64 KiB page consumed
 * 16 KiB of the first window; they issue that window only (they had
 * prefetched over 6 MiB). The window grows when the reader reaches the
 * next page, and again at each page after it.
 */
static void
test_window_grows_by_consumption_not_by_reads(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	ra_state_free(&m.s);
	ra_params_default(&m.p, 64 * KiB);
	m.s = ra_state_new(&m.p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.s);
	sim_read(&m, 0, 1 * KiB);
	expect_one(&m, 64 * KiB, 192 * KiB);
	for (uint64_t off = 1 * KiB; off < 16 * KiB; off += 1 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 1 * KiB), 0);
	CU_ASSERT_EQUAL(m.pf_bytes, 128 * KiB);
	/* The rest of page 0: still nothing. */
	for (uint64_t off = 16 * KiB; off < 64 * KiB; off += 1 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 1 * KiB), 0);
	CU_ASSERT_EQUAL(m.pf_bytes, 128 * KiB);
	/* Page 1's first READ: x4 from the frontier. */
	sim_read(&m, 64 * KiB, 1 * KiB);
	expect_one(&m, 192 * KiB, 704 * KiB);
	CU_ASSERT_EQUAL(sim_read(&m, 65 * KiB, 1 * KiB), 0);
	/* Page 2's first READ: 2 MiB; page 3's: the full 4 MiB. */
	sim_read(&m, 128 * KiB, 1 * KiB);
	expect_one(&m, 704 * KiB, 704 * KiB + 2 * MiB);
	sim_read(&m, 192 * KiB, 1 * KiB);
	expect_one(&m, 704 * KiB + 2 * MiB, 704 * KiB + 6 * MiB);
	sim_fini(&m);
}

static void
test_next_window_in_flight_before_reader_needs_it(void)
{
	struct sim m;
	uint64_t frontier = 0, trigger = 0, windows = 0, bytes = 0;
	struct ra_stats st;

	sim_init(&m, 1 * GiB);
	for (uint64_t off = 0; off < 512 * MiB; off += 64 * KiB) {
		uint64_t end = off + 64 * KiB;

		sim_read(&m, off, 64 * KiB);
		if (m.n) {
			windows++;
			bytes += sim_issued(&m);
			/* Issued when the reader entered the last window. */
			if (off >= 256 * KiB)
				CU_ASSERT(end > trigger && off <= trigger);
			CU_ASSERT_EQUAL(m.out[0].start, frontier ? frontier :
					end);
			trigger = m.out[0].start;
			frontier = m.out[m.n - 1].end;
		}
		/* At least one full window ahead, at most two. */
		if (off >= 192 * KiB) {
			CU_ASSERT(frontier - end >= MAXW);
			CU_ASSERT(frontier - end <= 2 * MAXW);
		}
	}
	ra_stats_get(m.s, &st);
	CU_ASSERT_EQUAL(st.windows, windows);
	CU_ASSERT_EQUAL(st.bytes, bytes);
	CU_ASSERT_EQUAL(st.streams, 1);
	/* 4 ramp windows, then one per 4 MiB read: 128 in 512 MiB. */
	CU_ASSERT_EQUAL(windows, 4 + (512 * MiB - 704 * KiB - 2 * MiB) / MAXW
			+ 1);
	sim_fini(&m);
}

/* Issue n random aligned 4 KiB reads over m's file, skipping [lo, hi). */
static void
random_reads(struct sim *m, unsigned n, uint64_t lo, uint64_t hi)
{
	uint64_t x = 0x243f6a8885a308d3ull;

	for (unsigned i = 0; i < n;) {
		uint64_t off = (xorshift(&x) % (m->size / 4096)) * 4096;

		if (off + 4096 > lo && off < hi)
			continue;
		sim_read(m, off, 4096);
		i++;
	}
}

static void
test_random_reads_issue_under_5_percent(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	random_reads(&m, 10000, 0, 0);
	printf("\n  random: read %llu, prefetched %llu bytes ",
	       (unsigned long long)m.read_bytes,
	       (unsigned long long)m.pf_bytes);
	CU_ASSERT_EQUAL(m.read_bytes, 10000 * 4096);
	CU_ASSERT(m.pf_bytes * 20 <= m.read_bytes);
	sim_fini(&m);
}

static void
test_random_unaligned_reads_issue_under_5_percent(void)
{
	struct sim m;
	uint64_t x = 0x13198a2e03707344ull;

	sim_init(&m, 1 * GiB);
	for (unsigned i = 0; i < 10000; i++)
		sim_read(&m, xorshift(&x) % (m.size - 4096), 4096);
	CU_ASSERT(m.pf_bytes * 20 <= m.read_bytes);
	sim_fini(&m);
}

/* Read 40 x 64 KiB from off; record per READ the ranges relative to off. */
static void
sequential_phase(struct sim *m, uint64_t off, struct range rel[40][2],
		 size_t n[40])
{
	for (unsigned i = 0; i < 40; i++) {
		sim_read(m, off + i * 64 * KiB, 64 * KiB);
		CU_ASSERT_FATAL(m->n <= 2);
		n[i] = m->n;
		for (size_t k = 0; k < m->n; k++) {
			rel[i][k].start = m->out[k].start - off;
			rel[i][k].end = m->out[k].end - off;
		}
	}
}

static void
test_sequential_after_random_ramps_like_fresh(void)
{
	struct range fresh[40][2], after[40][2];
	size_t nf[40], na[40];
	uint64_t x0 = 512 * MiB;
	struct sim a, b;

	sim_init(&a, 1 * GiB);
	random_reads(&a, 10000, x0 - 8 * MiB, x0 + 64 * MiB);
	sequential_phase(&a, x0, after, na);
	sim_init(&b, 1 * GiB);
	sequential_phase(&b, x0, fresh, nf);
	for (unsigned i = 0; i < 40; i++) {
		CU_ASSERT_EQUAL(na[i], nf[i]);
		for (size_t k = 0; k < na[i] && k < nf[i]; k++) {
			CU_ASSERT_EQUAL(after[i][k].start, fresh[i][k].start);
			CU_ASSERT_EQUAL(after[i][k].end, fresh[i][k].end);
		}
	}
	/* One READ is no evidence; the next four reach the full window. */
	CU_ASSERT_EQUAL(na[0], 0);
	CU_ASSERT_EQUAL(after[1][0].end - after[1][0].start, 128 * KiB);
	CU_ASSERT_EQUAL(after[2][0].end - after[2][0].start, 512 * KiB);
	CU_ASSERT_EQUAL(after[3][0].end - after[3][0].start, 2 * MiB);
	CU_ASSERT_EQUAL(after[4][0].end - after[4][0].start, MAXW);
	sim_fini(&a);
	sim_fini(&b);
}

static void
test_interleaved_streams_both_ramp(void)
{
	uint64_t want[] = { 128 * KiB, 512 * KiB, 2 * MiB, 4 * MiB };
	uint64_t b0 = 512 * MiB;
	struct ra_stats st;
	struct sim m;

	sim_init(&m, 1 * GiB);
	for (unsigned i = 0; i < 5; i++) {
		sim_read(&m, i * 64 * KiB, 64 * KiB);		/* A */
		if (i < 4)
			CU_ASSERT_EQUAL(sim_issued(&m), want[i]);
		sim_read(&m, b0 + i * 64 * KiB, 64 * KiB);	/* B */
		if (i == 0) {
			CU_ASSERT_EQUAL(m.n, 0);	/* a candidate */
		} else {
			CU_ASSERT_EQUAL(sim_issued(&m), want[i - 1]);
			CU_ASSERT(m.out[0].start >= b0 + (i + 1) * 64 * KiB);
		}
	}
	ra_stats_get(m.s, &st);
	CU_ASSERT_EQUAL(st.streams, 2);
	sim_fini(&m);
}

/* Run 10 interleaved readers of 100 x 64 KiB with max_streams slots;
 * misses[k] gets the READs of reader k that were not full hits. */
static void
ten_readers(unsigned max_streams, unsigned misses[10])
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	ra_state_free(&m.s);
	m.p.max_streams = max_streams;
	m.s = ra_state_new(&m.p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.s);
	for (unsigned i = 0; i < 100; i++) {
		for (unsigned k = 0; k < 10; k++) {
			uint64_t off = k * 64 * MiB + i * 64 * KiB;

			if (!rangeset_contains(&m.cached, off, off + 64 * KiB))
				misses[k]++;
			sim_read(&m, off, 64 * KiB);
		}
	}
	sim_fini(&m);
}

static void
test_more_readers_than_streams_recover_by_prev_cached(void)
{
	unsigned enough[10] = { 0 }, few[10] = { 0 };

	/* With a slot each: one miss for the reader at offset 0, two for
	 * the others (the READ that made the candidate, the one that
	 * started it); then the windows stay ahead. */
	ten_readers(16, enough);
	CU_ASSERT_EQUAL(enough[0], 1);
	for (unsigned k = 1; k < 10; k++)
		CU_ASSERT_EQUAL(enough[k], 2);
	/* With 8 slots every stream is forgotten between its READs. A miss
	 * with 4 READs' worth cached before it restarts a stream at the
	 * first window (2 READs ahead), so every third READ misses instead
	 * of all of them: READs 1, 4, ..., 100 of the reader at offset 0
	 * (the file's start counts as cached history); READs 1-5 (4 READs
	 * of history needed), then 8, 11, ..., 98 of the others. */
	ten_readers(8, few);
	for (unsigned k = 0; k < 10; k++)
		CU_ASSERT_EQUAL(few[k], k == 0 ? 34 : 5 + 31);
}

static void
test_reads_near_eof_clamp(void)
{
	struct sim m;

	sim_init(&m, 300 * KiB + 100);
	sim_read(&m, 0, 64 * KiB);
	expect_one(&m, 64 * KiB, 192 * KiB);
	sim_read(&m, 64 * KiB, 64 * KiB);
	expect_one(&m, 192 * KiB, 300 * KiB + 100);	/* at EOF */
	/* Up to EOF and past it (short reads): nothing more. */
	for (uint64_t off = 128 * KiB; off < 448 * KiB; off += 64 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 64 * KiB), 0);
	/* The file grows (appended to): the stream goes on past the READ. */
	m.size = 10 * MiB;
	sim_read(&m, 448 * KiB, 64 * KiB);
	expect_one(&m, 512 * KiB, 512 * KiB + MAXW);
	/* It shrinks: nothing past the new EOF. */
	m.size = 500 * KiB;
	CU_ASSERT_EQUAL(sim_read(&m, 512 * KiB, 64 * KiB), 0);
	CU_ASSERT_TRUE(ra_check(m.s, &m.p));
	sim_fini(&m);
}

static void
test_backwards_jump_starts_new_stream(void)
{
	struct ra_stats st;
	struct sim m;

	sim_init(&m, 1 * GiB);
	for (uint64_t off = 0; off < 10 * MiB; off += 64 * KiB)
		sim_read(&m, off, 64 * KiB);
	/* Back to 5 MiB (a hit: no prev_cached): a candidate, nothing
	 * issued; its next READ starts a fresh stream at the first window. */
	CU_ASSERT_EQUAL(sim_read(&m, 5 * MiB, 64 * KiB), 0);
	sim_read(&m, 5 * MiB + 64 * KiB, 64 * KiB);
	expect_one(&m, 5 * MiB + 128 * KiB, 5 * MiB + 256 * KiB);
	ra_stats_get(m.s, &st);
	CU_ASSERT_EQUAL(st.streams, 2);
	/* The old stream is still known: at its trigger (10944K, the start
	 * of its last window) it issues a full window at its frontier. */
	for (uint64_t off = 10 * MiB; off < 10944 * KiB; off += 64 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 64 * KiB), 0);
	sim_read(&m, 10944 * KiB, 64 * KiB);
	expect_one(&m, 15040 * KiB, 15040 * KiB + MAXW);
	ra_stats_get(m.s, &st);
	CU_ASSERT_EQUAL(st.streams, 2);
	sim_fini(&m);
}

static void
test_prev_cached_starts_a_stream_at_once(void)
{
	struct sim m;
	struct range pr;

	sim_init(&m, 1 * GiB);
	pr = ra_prev_range(&m.p, 100 * MiB, 64 * KiB);	/* 4 READs' worth */
	CU_ASSERT_EQUAL(pr.start, 100 * MiB - 256 * KiB);
	CU_ASSERT_EQUAL(pr.end, 100 * MiB);
	pr = ra_prev_range(&m.p, 100 * MiB, 2 * MiB);	/* max_window */
	CU_ASSERT_EQUAL(pr.start, 96 * MiB);
	pr = ra_prev_range(&m.p, 4096, 1000);		/* clipped at 0 */
	CU_ASSERT_EQUAL(pr.start, 0);
	CU_ASSERT_EQUAL(pr.end, 4096);
	pr = ra_prev_range(&m.p, 0, 1000);
	CU_ASSERT_EQUAL(pr.start, 0);
	CU_ASSERT_EQUAL(pr.end, 0);
	CU_ASSERT_EQUAL(ra_on_read(m.s, &m.p, 100 * MiB, 64 * KiB, m.size,
				   true, m.out, RA_RANGES_MAX), 1);
	CU_ASSERT_EQUAL(m.out[0].start, 100 * MiB + 64 * KiB);
	CU_ASSERT_EQUAL(m.out[0].end, 100 * MiB + 192 * KiB);
	CU_ASSERT_EQUAL(ra_on_read(m.s, &m.p, 200 * MiB, 64 * KiB, m.size,
				   false, m.out, RA_RANGES_MAX), 0);
	sim_fini(&m);
}

static void
test_other_streams_span_is_left_out(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	sim_read(&m, 0, 64 * KiB);			/* A: [64K,192K) */
	sim_read(&m, 200 * KiB, 64 * KiB);		/* B: candidate */
	sim_read(&m, 264 * KiB, 64 * KiB);		/* B: [328K,456K) */
	expect_one(&m, 328 * KiB, 456 * KiB);
	sim_read(&m, 64 * KiB, 64 * KiB);		/* A: 512K window */
	CU_ASSERT_EQUAL_FATAL(m.n, 2);
	CU_ASSERT_EQUAL(m.out[0].start, 192 * KiB);
	CU_ASSERT_EQUAL(m.out[0].end, 328 * KiB);	/* B's span */
	CU_ASSERT_EQUAL(m.out[1].start, 456 * KiB);
	CU_ASSERT_EQUAL(m.out[1].end, 704 * KiB);
	sim_fini(&m);
}

static void
test_window_cut_by_max_is_issued_later(void)
{
	struct sim m;
	struct range one;

	sim_init(&m, 1 * GiB);
	sim_read(&m, 0, 64 * KiB);
	sim_read(&m, 200 * KiB, 64 * KiB);
	sim_read(&m, 264 * KiB, 64 * KiB);		/* B: [328K,456K) */
	CU_ASSERT_EQUAL(ra_on_read(m.s, &m.p, 64 * KiB, 64 * KiB, m.size,
				   false, &one, 1), 1);
	CU_ASSERT_EQUAL(one.start, 192 * KiB);
	CU_ASSERT_EQUAL(one.end, 328 * KiB);
	/* A's next window starts where the cut was made, past B's span. */
	sim_read(&m, 128 * KiB, 64 * KiB);
	expect_one(&m, 456 * KiB, 456 * KiB + 2 * MiB);
	sim_fini(&m);
}

static void
test_cancel_issues_again(void)
{
	struct sim m;
	struct range r;

	sim_init(&m, 1 * GiB);
	sim_read(&m, 0, 64 * KiB);
	sim_read(&m, 64 * KiB, 64 * KiB);
	r = m.out[0];					/* [192K, 704K) */
	ra_cancel(m.s, &m.p, &r);
	CU_ASSERT_TRUE(ra_check(m.s, &m.p));
	sim_read(&m, 128 * KiB, 64 * KiB);		/* 2M from 192K */
	expect_one(&m, 192 * KiB, 192 * KiB + 2 * MiB);
	/* A range that is not a span's tail changes nothing. */
	r.start = 256 * KiB;
	r.end = 512 * KiB;
	ra_cancel(m.s, &m.p, &r);
	sim_read(&m, 192 * KiB, 64 * KiB);
	expect_one(&m, 192 * KiB + 2 * MiB, 192 * KiB + 6 * MiB);
	sim_fini(&m);
}

static void
test_invalidate_issues_from_the_reader(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	for (uint64_t off = 0; off < 8 * MiB; off += 64 * KiB)
		sim_read(&m, off, 64 * KiB);
	ra_invalidate(m.s, &m.p);
	CU_ASSERT_TRUE(ra_check(m.s, &m.p));
	sim_read(&m, 8 * MiB, 64 * KiB);
	expect_one(&m, 8 * MiB + 64 * KiB, 8 * MiB + 64 * KiB + MAXW);
	sim_fini(&m);
}

static void
test_behind_and_empty_reads_change_nothing(void)
{
	struct sim m;

	sim_init(&m, 1 * GiB);
	sim_read(&m, 0, 64 * KiB);
	CU_ASSERT_EQUAL(sim_read(&m, 32 * KiB, 32 * KiB), 0);	/* behind */
	CU_ASSERT_EQUAL(sim_read(&m, 64 * KiB, 0), 0);		/* empty */
	sim_read(&m, 64 * KiB, 64 * KiB);	/* still the 2nd window */
	expect_one(&m, 192 * KiB, 704 * KiB);
	sim_fini(&m);
}

static void
test_disabled_and_invalid_params(void)
{
	struct ra_params p;
	struct ra_state *s;
	struct range r;

	ra_params_default(&p, 4096);
	CU_ASSERT_TRUE(ra_params_valid(&p));
	CU_ASSERT_EQUAL(p.max_window, 64 * MiB);
	CU_ASSERT_EQUAL(p.min_window, 128 * KiB);
	CU_ASSERT_EQUAL(p.max_streams, 8);
	CU_ASSERT_EQUAL(p.full_window, 0);
	CU_ASSERT_EQUAL(ra_full_window(&p), 4 * MiB);
	p.full_window = 4 * MiB + 100;		/* not a page multiple */
	CU_ASSERT_FALSE(ra_params_valid(&p));
	p.full_window = 128 * MiB;		/* over the cap */
	CU_ASSERT_FALSE(ra_params_valid(&p));
	ra_params_default(&p, 4096);
	p.page_size = 3000;
	CU_ASSERT_FALSE(ra_params_valid(&p));
	CU_ASSERT_PTR_NULL(ra_state_new(&p));
	ra_params_default(&p, 4096);
	p.max_streams = RA_STREAMS_MAX + 1;
	CU_ASSERT_FALSE(ra_params_valid(&p));
	ra_params_default(&p, 4096);
	p.min_window = 128 * MiB;
	CU_ASSERT_FALSE(ra_params_valid(&p));
	p.min_window = 0;
	p.max_window = 0;			/* readahead off */
	CU_ASSERT_TRUE(ra_params_valid(&p));
	s = ra_state_new(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(ra_on_read(s, &p, 0, 65536, GiB, false, &r, 1), 0);
	CU_ASSERT_EQUAL(ra_on_read(s, &p, 65536, 65536, GiB, false, &r, 1),
			0);
	ra_state_free(&s);
}

static void
test_stats_add_folds_every_counter(void)
{
	struct ra_stats a = { .windows = 1, .bytes = 2, .streams = 3 };
	struct ra_stats b = { .windows = 10, .bytes = 20, .streams = 30 };

	ra_stats_add(&a, &b);
	CU_ASSERT_EQUAL(a.windows, 11);
	CU_ASSERT_EQUAL(a.bytes, 22);
	CU_ASSERT_EQUAL(a.streams, 33);
}

/*
 * With 64 KiB pages a candidate is continued only by a READ starting
 * within one READ (at least 4 KiB) of its end, not anywhere in the next
 * page: random 4 KiB READs a few blocks apart start no stream, a READ
 * that skips one READ still does; a sequential stream keeps page_size.
 */
static void
test_candidate_slack_is_one_read_not_a_page(void)
{
	struct sim m;

	sim_init(&m, GiB);
	ra_state_free(&m.s);
	ra_params_default(&m.p, 65536);
	m.s = ra_state_new(&m.p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m.s);
	CU_ASSERT_EQUAL(sim_read(&m, 1 * MiB, 4096), 0);
	/* 8 KiB past the candidate's end: another candidate. */
	CU_ASSERT_EQUAL(sim_read(&m, 1 * MiB + 12 * KiB, 4096), 0);
	/* One 4 KiB READ skipped after the second: a stream. */
	CU_ASSERT_TRUE(sim_read(&m, 1 * MiB + 20 * KiB, 4096) > 0);
	/* 64 KiB READs: one READ skipped is 64 KiB, still continued. */
	CU_ASSERT_EQUAL(sim_read(&m, 512 * MiB, 65536), 0);
	CU_ASSERT_TRUE(sim_read(&m, 512 * MiB + 128 * KiB, 65536) > 0);
	sim_fini(&m);
}

/*
 * Issue 42: the full window is the bandwidth-delay product x 2, rounded
 * up to pages, at least the 4 MiB base, at most readahead_max and a
 * sixteenth of the cache; the base while the link is unknown.
 */
static void
test_window_size_is_twice_the_bdp_within_bounds(void)
{
	struct ra_params p;

	ra_params_default(&p, 65536);
	p.cache_bytes = GiB;
	/* Unknown rate or round trip, or nonsense: the base. */
	CU_ASSERT_EQUAL(ra_window_size(&p, 0, 0.004), 4 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0), 4 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, -1e9, 0.004), 4 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 0.0 / 0.0, 0.004), 4 * MiB);
	/* A LAN's product (1 Gb/s x 0.1 ms = 12.5 KB) and 1 GB/s x 2 ms
	 * (2 x 2 MB, just under 4 MiB): the base. */
	CU_ASSERT_EQUAL(ra_window_size(&p, 125e6, 0.0001), 4 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.002), 4 * MiB);
	/* 1 GB/s x 4 ms x 2 = 8,000,000 bytes: 123 pages of 64 KiB. */
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.004), 123 * 65536);
	/* 1 GiB/s x 1/256 s x 2: exactly 8 MiB. */
	CU_ASSERT_EQUAL(ra_window_size(&p, 1073741824.0, 1.0 / 256), 8 * MiB);
	/* A long fat link: the cap, readahead_max (64 MiB) = 1 GiB / 16. */
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 64 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 1.0 / 0.0, 0.004), 64 * MiB);
	/* A 256 MiB cache caps it at 16 MiB, below readahead_max. */
	p.cache_bytes = 256 * MiB;
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 16 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.004), 123 * 65536);
	/* A 16 MiB cache: a sixteenth is under the base, which stays. */
	p.cache_bytes = 16 * MiB;
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 4 * MiB);
	/* No cache budget given: readahead_max alone. */
	p.cache_bytes = 0;
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 64 * MiB);
	/* readahead_max at or under 4 MiB pins the window there. */
	p.max_window = 4 * MiB;
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 4 * MiB);
	p.max_window = 1 * MiB;
	p.min_window = 128 * KiB;
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.1), 1 * MiB);
	CU_ASSERT_EQUAL(ra_window_size(&p, 0, 0), 1 * MiB);
	/* 4 KiB pages round up to 4 KiB: 1954 pages. */
	ra_params_default(&p, 4096);
	CU_ASSERT_EQUAL(ra_window_size(&p, 1e9, 0.004), 1954 * 4096);
	p.full_window = ra_window_size(&p, 1e9, 0.004);
	CU_ASSERT_TRUE(ra_params_valid(&p));
}

/*
 * A stream grows to the full window of the moment: x4 then x2 up to
 * 8 MiB on a link whose product asks for it; when the link is unknown
 * again the next window is the 4 MiB base, and when it comes back the
 * stream grows again at its next READ.
 */
static void
test_stream_follows_the_full_window(void)
{
	/* 128K, 512K, 2M (x4 while under 2 MiB), 4M, 8M (x2). */
	static const uint64_t w[] = { 128 * KiB, 512 * KiB, 2 * MiB, 4 * MiB,
				      8 * MiB };
	struct sim m;
	uint64_t off = 0, f = 64 * KiB;

	sim_init(&m, 1 * GiB);
	m.p.full_window = ra_window_size(&m.p, 1073741824.0, 1.0 / 256);
	CU_ASSERT_EQUAL_FATAL(m.p.full_window, 8 * MiB);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		sim_read(&m, off, 64 * KiB);
		expect_one(&m, f, f + w[i]);
		f += w[i];
		off += 64 * KiB;
	}
	/* Full size: the next window when the reader reaches the start of
	 * the last one (f - 8 MiB). */
	for (; off < f - 8 * MiB; off += 64 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 64 * KiB), 0);
	sim_read(&m, off, 64 * KiB);
	expect_one(&m, f, f + 8 * MiB);
	f += 8 * MiB;
	off += 64 * KiB;
	/* The link unknown: back to the base; its next window is 4 MiB. */
	m.p.full_window = ra_window_size(&m.p, 0, 0);
	CU_ASSERT_EQUAL(m.p.full_window, 4 * MiB);
	for (; off < f - 8 * MiB; off += 64 * KiB)
		CU_ASSERT_EQUAL(sim_read(&m, off, 64 * KiB), 0);
	sim_read(&m, off, 64 * KiB);
	expect_one(&m, f, f + 4 * MiB);
	f += 4 * MiB;
	off += 64 * KiB;
	/* The link measured again: the next READ grows it to 8 MiB. */
	m.p.full_window = 8 * MiB;
	sim_read(&m, off, 64 * KiB);
	expect_one(&m, f, f + 8 * MiB);
	sim_fini(&m);
}

/*
 * ra_streaming, the cached READ's check made before the parameters: false
 * for no state and a fresh one; whenever ra_in_stream holds at an offset
 * it holds too; true once a sequential reader has its stream.
 */
static void
test_streaming_is_implied_by_in_stream(void)
{
	struct sim m;

	CU_ASSERT_FALSE(ra_streaming(NULL));
	sim_init(&m, 1 * GiB);
	CU_ASSERT_FALSE(ra_streaming(m.s));
	CU_ASSERT_FALSE(ra_in_stream(m.s, &m.p, 0));
	for (uint64_t off = 0; off < 8 * 64 * KiB; off += 64 * KiB) {
		sim_read(&m, off, 64 * KiB);
		if (ra_in_stream(m.s, &m.p, off + 64 * KiB))
			CU_ASSERT_TRUE(ra_streaming(m.s));
	}
	CU_ASSERT_TRUE(ra_in_stream(m.s, &m.p, 8 * 64 * KiB));
	CU_ASSERT_TRUE(ra_streaming(m.s));
	sim_fini(&m);
}

int
test_register(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
#define T(f) { #f, f }
		T(test_cold_sequential_reaches_max_in_4_reads),
		T(test_small_reads_reach_max_in_4_reads),
		T(test_window_grows_by_consumption_not_by_reads),
		T(test_next_window_in_flight_before_reader_needs_it),
		T(test_random_reads_issue_under_5_percent),
		T(test_random_unaligned_reads_issue_under_5_percent),
		T(test_sequential_after_random_ramps_like_fresh),
		T(test_interleaved_streams_both_ramp),
		T(test_more_readers_than_streams_recover_by_prev_cached),
		T(test_reads_near_eof_clamp),
		T(test_backwards_jump_starts_new_stream),
		T(test_prev_cached_starts_a_stream_at_once),
		T(test_other_streams_span_is_left_out),
		T(test_window_cut_by_max_is_issued_later),
		T(test_cancel_issues_again),
		T(test_invalidate_issues_from_the_reader),
		T(test_behind_and_empty_reads_change_nothing),
		T(test_disabled_and_invalid_params),
		T(test_stats_add_folds_every_counter),
		T(test_candidate_slack_is_one_read_not_a_page),
		T(test_window_size_is_twice_the_bdp_within_bounds),
		T(test_stream_follows_the_full_window),
		T(test_streaming_is_implied_by_in_stream),
#undef T
	};
	CU_pSuite s = CU_add_suite("readahead", NULL, NULL);

	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return -1;
	return 0;
}
