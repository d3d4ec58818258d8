/* SPDX-License-Identifier: MIT */
/*
 * test_cache_memory: the page cache keeps to its byte budget. With
 * cache_size = 16 MiB (harness config cachetest_cache16m.conf), a working
 * set four times the budget (4 files of 16 MiB, written in the export
 * directory on disk) is read through the proxy twice, sequentially, in
 * 128 KiB READs with CT_MEM_WINDOW (8) in flight, every byte checked.
 * Meanwhile a thread samples the VmRSS of the nfscached process
 * (NFSC_PROXY_PID) every 5 ms. The largest sample must stay within the
 * budget plus a constant of 24 MiB (the binary, libraries, buffers,
 * metadata), and nfscached_cache_page_bytes within the budget.
 *
 * With CT_PREALLOC=1 (cache_memory_prealloc, cachetest_prealloc.conf:
 * the same budget with cache_preallocate = true) a first case checks the
 * page pool before any READ: it reaches the budget's pages rounded up to
 * 2 MiB chunks (16 MiB) with no call served, and the process's resident
 * anonymous memory (RssAnon) is at least those 16 MiB (a fresh daemon
 * without preallocation holds about 3 MiB); then the streaming case runs
 * as above and no chunk was faulted in by the serving thread.
 *
 * Not registered in sanitizer builds (ASan inflates RSS).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define MIB (1024ull * 1024)
#define BUDGET (16 * MIB)
#define SLACK (24 * MIB)
#define NFILES 4
#define FILE_BYTES (16 * MIB)
#define CHUNK (128u * 1024)
#define MAXWIN 64
#define POOL_BYTES "nfscached_cache_page_pool_bytes"
#define POOL_INLINE "nfscached_cache_page_pool_inline_chunks_total"

static struct {
	pid_t pid;
	volatile int stop;
	long max_kib, first_kib, samples;
	pthread_t thread;
	struct nfsc *px;
	struct ct_pipe *pipe;
	nfs_fh3 fh[NFILES];
	unsigned win;
	uint64_t bad;
	bool prealloc;		/* CT_PREALLOC=1 */
} T;

/*
 * Preallocation: with no READ served, the pool climbs to the budget's
 * pages rounded up to whole chunks (16 MiB) on its own thread; the test
 * waits for that state (a deadline for a stall, not a speed bound) and
 * checks the memory is resident.
 */
static void test_prealloc_pool_fills_before_reads(void)
{
	struct ct_metrics m;
	uint64_t pool = 0, t0 = nfsc_now_ms();
	struct timespec ts = { 0, 20000000 };
	long anon;

	do {
		if (ct_metrics_read(&m) != 0) {
			CHECK_MSG(0, "GET /metrics");
			return;
		}
		pool = ct_metric(&m, POOL_BYTES);
		CHECK_EQ(ct_metric(&m, CT_UP_READ), 0);
		ct_metrics_free(&m);
		if (pool >= BUDGET)
			break;
		nanosleep(&ts, NULL);
	} while (nfsc_now_ms() - t0 < 120000);
	anon = ct_status_kib(T.pid, "RssAnon");
	printf("\ncachetest: prealloc: pool %llu bytes after %llu ms, "
	       "RssAnon %ld KiB\n", (unsigned long long)pool,
	       (unsigned long long)(nfsc_now_ms() - t0), anon);
	CHECK_EQ(pool, BUDGET);
	CHECK_MSG(anon >= (long)(BUDGET / 1024), "RssAnon %ld KiB < %llu KiB",
		  anon, (unsigned long long)(BUDGET / 1024));
}

/* Sample the proxy's VmRSS every 5 ms until told to stop. */
static void *sampler(void *arg)
{
	struct timespec ts = { 0, 5000000 };

	(void)arg;
	while (!T.stop) {
		long kib = ct_vmrss_kib(T.pid);

		if (kib > T.max_kib)
			T.max_kib = kib;
		T.samples++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Check one finished chunk read of file i at off. */
static void chunk_check(const struct ct_op *op, unsigned i, uint8_t *want)
{
	ct_pattern(want, CHUNK, op->off, 100 + i);
	if ((op->st != NFS3_OK || op->count != CHUNK ||
	     memcmp(op->buf, want, CHUNK) != 0) && T.bad++ < 5)
		CHECK_MSG(0, "READ file %u off %llu: %s count %u%s", i,
			  (unsigned long long)op->off, nfsc_stat_name(op->st),
			  op->count, op->st == NFS3_OK ? ", wrong bytes" : "");
}

/* Read file i sequentially with win READs in flight. 0 or -1. */
static int stream_file(unsigned i, uint8_t *bufs, uint8_t *want)
{
	struct ct_op op[MAXWIN];
	uint64_t next = 0;
	unsigned k;

	memset(op, 0, sizeof(op));
	for (k = 0; k < T.win; k++)
		op[k].done = 1;
	while (next < FILE_BYTES || ct_pipe_pending(T.pipe)) {
		for (k = 0; k < T.win && next < FILE_BYTES; k++) {
			if (!op[k].done)
				continue;
			if (op[k].len)
				chunk_check(&op[k], i, want);
			op[k].buf = bufs + (size_t)k * CHUNK;
			if (ct_pipe_read(T.pipe, &T.fh[i], next, CHUNK, &op[k]))
				return -1;
			next += CHUNK;
		}
		if (ct_pipe_wait(T.pipe, ct_pipe_pending(T.pipe) ?
				 ct_pipe_pending(T.pipe) - 1 : 0, 30000))
			return -1;
	}
	for (k = 0; k < T.win; k++)
		if (op[k].len)
			chunk_check(&op[k], i, want);
	return 0;
}

/* Stream the working set twice while sampling RSS; check the bounds. */
static void test_rss_stays_within_budget(void)
{
	uint8_t *bufs = malloc((size_t)T.win * CHUNK), *want = malloc(CHUNK);
	struct ct_metrics m0, m1;
	uint64_t pages, meta, page_bytes, t0 = nfsc_now_ms();

	if (!bufs || !want || ct_metrics_read(&m0) != 0) {
		CHECK_MSG(0, "setup");
		goto out;
	}
	T.first_kib = ct_vmrss_kib(T.pid);
	T.max_kib = T.first_kib;
	CHECK(pthread_create(&T.thread, NULL, sampler, NULL) == 0);
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < NFILES; i++)
			CHECK_MSG(stream_file(i, bufs, want) == 0,
				  "pass %d file %u stalled", pass, i);
	T.stop = 1;
	pthread_join(T.thread, NULL);
	if (ct_metrics_read(&m1) != 0) {
		CHECK_MSG(0, "GET /metrics");
		goto out0;
	}
	pages = ct_metric(&m1, CT_PAGES);
	meta = ct_metric(&m1, CT_META_BYTES);
	page_bytes = ct_metric(&m1, CT_PAGE_BYTES);
	printf("\ncachetest: memory: streamed %llu MiB twice in %llu ms; "
	       "VmRSS before %ld KiB, max %ld KiB over %ld samples, limit "
	       "%llu KiB; page bytes %llu (budget %llu), %llu pages, "
	       "metadata %llu bytes (%.1f per page), evictions %llu, upstream "
	       "READs %llu\n",
	       (unsigned long long)(NFILES * FILE_BYTES / MIB),
	       (unsigned long long)(nfsc_now_ms() - t0), T.first_kib,
	       T.max_kib, T.samples,
	       (unsigned long long)((BUDGET + SLACK) / 1024),
	       (unsigned long long)page_bytes,
	       (unsigned long long)ct_metric(&m1, CT_BUDGET),
	       (unsigned long long)pages, (unsigned long long)meta,
	       pages ? (double)meta / (double)pages : 0.0,
	       (unsigned long long)ct_delta(&m0, &m1, CT_EVICTIONS),
	       (unsigned long long)ct_delta(&m0, &m1, CT_UP_READ));
	CHECK_EQ(T.bad, 0);
	CHECK(T.max_kib > 0);
	CHECK_MSG((uint64_t)T.max_kib * 1024 <= BUDGET + SLACK,
		  "max VmRSS %ld KiB > budget %llu KiB + %llu KiB", T.max_kib,
		  (unsigned long long)(BUDGET / 1024),
		  (unsigned long long)(SLACK / 1024));
	CHECK_EQ(ct_metric(&m1, CT_BUDGET), BUDGET);
	CHECK_MSG(page_bytes <= BUDGET, "page bytes %llu > budget %llu",
		  (unsigned long long)page_bytes, (unsigned long long)BUDGET);
	/* Four times the budget went through: pages were evicted. */
	CHECK(ct_delta(&m0, &m1, CT_EVICTIONS) > 0);
	/* Preallocated: the serving thread never faulted a chunk in, and
	 * the pool stayed within the budget's chunks plus one. */
	if (T.prealloc) {
		CHECK_EQ(ct_metric(&m1, POOL_INLINE), 0);
		CHECK(ct_metric(&m1, POOL_BYTES) <= BUDGET + 2 * MIB);
	}
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	free(bufs);
	free(want);
}

/* Write the files on disk, look them up, open the pipe. */
static int suite_init(void)
{
	uint8_t *buf = malloc(FILE_BYTES);
	char name[32];
	int rc = -1;

	T.pid = (pid_t)ct_env_u64("NFSC_PROXY_PID", 0);
	T.win = (unsigned)ct_env_u64("CT_MEM_WINDOW", 8);
	T.prealloc = ct_env_u64("CT_PREALLOC", 0) == 1;
	if (!buf || !T.pid || !T.win || T.win > MAXWIN)
		goto out;
	T.px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	if (!T.px)
		goto out;
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "stream%u.dat", i);
		ct_pattern(buf, FILE_BYTES, 0, 100 + i);
		if (ct_disk_write(name, buf, FILE_BYTES) != 0 ||
		    ct_lookup_root(T.px, name, &T.fh[i]) != NFS3_OK)
			goto out;
	}
	T.pipe = ct_pipe_open(ct_env("NFSC_PROXY_URL"), 0, 0);
	rc = T.pipe ? 0 : -1;
out:
	free(buf);
	return rc;
}

/* Release everything. */
static int suite_cleanup(void)
{
	ct_pipe_close(&T.pipe);
	for (unsigned i = 0; i < NFILES; i++)
		nfsc_fh_free(&T.fh[i]);
	nfsc_close(&T.px);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_cache_memory");
	s = CU_add_suite("cache_memory", suite_init, suite_cleanup);
	if (s && ct_env_u64("CT_PREALLOC", 0) == 1 &&
	    !CU_add_test(s, "prealloc_pool_fills_before_reads",
			 test_prealloc_pool_fills_before_reads))
		return -1;
	if (!s || !CU_add_test(s, "rss_stays_within_budget",
			       test_rss_stays_within_budget))
		return -1;
	return 0;
}
