/* SPDX-License-Identifier: MIT */
/*
 * test_wb_coalesce: the proxy's write-back coalesces absorbed UNSTABLE
 * client WRITEs into upstream WRITEs of up to the write-back size wsize:
 * the effective wtmax (min(upstream FSINFO wtmax, 1 MiB, max_transfer) =
 * 1 MiB here) capped by writeback_wsize (the default 256 KiB, read from
 * nfscached_config_writeback_wsize_bytes), and never merges bytes of
 * different writers (credentials) into one WRITE.
 *
 * Runs under harness.sh with wbtest_hold.conf: writeback_delay = 600 and
 * dirty_limit (set, so used as given) and cache_size above what the
 * suites write, so nothing is written back before the client's COMMIT and
 * runs are cut by nothing but wsize and the writers.
 *
 *   random_4k       10,240 UNSTABLE WRITEs of 4 KiB in random order over a
 *                   40 MiB region (each byte once), then COMMIT: at most
 *                   ceil(40 MiB / wsize) + 2 upstream WRITEs; the bytes on
 *                   Ganesha (read directly and on disk) are the client's.
 *   sequential_64k  the published pattern, 10,000 WRITEs of 64 KiB, then
 *                   COMMIT: upstream WRITEs are wsize-sized (calls ==
 *                   ceil(bytes / wsize), one more allowed).
 *   two_uids        4 KiB blocks written alternately by uids 1000 and 2000
 *                   (some runs of one uid longer than a block): upstream
 *                   WRITEs == the number of same-uid runs.
 *
 * Witnesses: /metrics deltas (nfscached_upstream_rpcs_total{procedure=
 * "write"} and the write-back counters), Ganesha read directly over NFS
 * (NFSC_DIRECT_*) and the export directory on disk. The coalescing ratios
 * (client WRITEs per upstream WRITE) are printed as "wbtest: ratio ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define COMMIT_MS 300000	/* a COMMIT of 625 MiB may take a while */

static struct {
	struct wb_conn px, dx;
	uint32_t wtmax;		/* effective: min(upstream, 1 MiB) */
	uint32_t wsize;		/* write-back's: min(wtmax, writeback_wsize) */
} T;

/* Open both connections and learn the effective wtmax and wsize. */
static int suite_init(void)
{
	uint32_t up = 0, shown = 0;

	if (wb_open(&T.px, "proxy", 0, 0) < 0 || wb_open(&T.dx, "direct", 0, 0) < 0)
		return -1;
	if (wb_fsinfo(&T.dx, &T.dx.root, &up) != NFS3_OK ||
	    wb_fsinfo(&T.px, &T.px.root, &shown) != NFS3_OK)
		return -1;
	T.wtmax = up < WB_MIB ? up : WB_MIB;
	T.wsize = wb_wsize(T.wtmax);
	fprintf(stderr, "wbtest: upstream FSINFO wtmax %u, proxy's %u, "
		"effective %u, write-back's wsize %u\n", up, shown, T.wtmax,
		T.wsize);
	return T.wsize >= 4096 ? 0 : -1;
}

/* Close both connections. */
static int suite_clean(void)
{
	wb_close(&T.px);
	wb_close(&T.dx);
	return 0;
}

/* Create name in the export root through the proxy, mode 0666. */
static int create_file(const char *name, struct wb_fh *fh)
{
	int st = wb_create(&T.px, &T.px.root, name, UNCHECKED, 0666, 0, fh, NULL);

	WB_STAT(st, NFS3_OK);
	if (st == NFS3_OK) {
		/* The server's umask may have cut the mode: set it again. */
		WB_STAT(wb_setattr(&T.px, fh, -1, 0666, NULL), NFS3_OK);
	}
	return st == NFS3_OK && fh->len ? 0 : -1;
}

/* Check name holds expect[0..len) read directly from Ganesha and on disk. */
static void check_upstream_data(const char *name, const uint8_t *expect,
				uint64_t len)
{
	uint8_t *got = malloc(len + 1);
	struct wb_fh fh;
	fattr3 at;
	int64_t n;
	size_t d;

	WB_CHECK(got != NULL, "malloc %llu", (unsigned long long)len);
	if (!got)
		return;
	WB_STAT(wb_lookup(&T.dx, &T.dx.root, name, &fh, &at), NFS3_OK);
	WB_EQ(at.size, len);
	n = wb_read_all(&T.dx, &fh, got, len);
	WB_EQ(n, len);
	d = wb_first_diff(got, expect, len);
	WB_CHECK(d == len, "%s read directly from Ganesha differs from what "
		 "the client wrote at offset %zu", name, d);
	memset(got, 0, len);
	WB_EQ(wb_disk_size(name), len);
	WB_EQ(wb_disk_read(name, 0, got, len), len);
	d = wb_first_diff(got, expect, len);
	WB_CHECK(d == len, "%s on disk differs from what the client wrote at "
		 "offset %zu", name, d);
	free(got);
}

/* Check every reply of a batch of UNSTABLE WRITEs: OK, the whole count,
 * UNSTABLE, one verifier (returned in verf). */
static void check_absorbed(const struct wb_wres *res, const struct wb_wreq *req,
			   size_t n, uint8_t *verf)
{
	size_t bad = 0, first = n;

	memcpy(verf, res[0].verf, NFS3_WRITEVERFSIZE);
	for (size_t i = 0; i < n; i++) {
		if (res[i].st != NFS3_OK || res[i].count != req[i].len ||
		    res[i].committed != UNSTABLE ||
		    memcmp(res[i].verf, verf, NFS3_WRITEVERFSIZE) != 0) {
			bad++;
			if (first == n)
				first = i;
		}
	}
	WB_CHECK(bad == 0, "%zu of %zu WRITE replies were not NFS3_OK/full "
		 "count/UNSTABLE/one verifier; the first is #%zu (%s, count "
		 "%u, committed %d)", bad, n, first,
		 first < n ? wb_stat_name(res[first].st) : "-",
		 first < n ? res[first].count : 0,
		 first < n ? res[first].committed : 0);
}

/* Print and return the coalescing ratio. */
static double ratio(const char *what, double client, double upstream)
{
	double r = upstream > 0 ? client / upstream : 0;

	fprintf(stderr, "wbtest: ratio %s: %.0f client WRITEs / %.0f upstream "
		"WRITEs = %.2f\n", what, client, upstream, r);
	return r;
}

/* 10,240 random 4 KiB UNSTABLE WRITEs over 40 MiB, COMMIT. */
static void test_random_4k(void)
{
	const uint64_t size = 40ull * WB_MIB;
	const size_t n = size / (4 * WB_KIB);
	uint8_t *data = malloc(size);
	struct wb_wreq *req = calloc(n, sizeof(*req));
	struct wb_wres *res = calloc(n, sizeof(*res));
	uint8_t verf[NFS3_WRITEVERFSIZE], cverf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1, s2;
	uint64_t seed = 0x40a40a;
	double up_writes, bound;
	unsigned jb = 0;
	struct wb_fh fh;
	char name[64];

	WB_CHECK(data && req && res, "malloc");
	if (!data || !req || !res)
		goto out;
	WB_EQ(n, 10240);
	WB_EQ(T.wtmax, WB_MIB);
	WB_EQ(T.wsize, 256 * WB_KIB);	/* writeback_wsize's default */
	wb_pattern(data, size, 0, 4096);
	for (size_t i = 0; i < n; i++) {
		req[i].off = (uint64_t)i * 4 * WB_KIB;
		req[i].len = 4 * WB_KIB;
		req[i].stable = UNSTABLE;
	}
	for (size_t i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		size_t j = (size_t)(wb_rand(&seed) % (i + 1));
		uint64_t t = req[i].off;

		req[i].off = req[j].off;
		req[j].off = t;
	}
	for (size_t i = 0; i < n; i++)
		req[i].data = data + req[i].off;
	wb_unique_name(name, sizeof(name), "wb-random");
	if (create_file(name, &fh) < 0)
		goto out;

	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_EQ(wb_write_many(&T.px, &fh, req, n, 32, res), 0);
	check_absorbed(res, req, n, verf);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("random_4k after the WRITEs", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_CL_WRITES), n);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_ABSORBED), n);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_THROUGH), 0);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), 0);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_DIRTY), size);
	/* The first WRITEs of the empty file all start past its end, 32 at
	 * once: one GETATTR upstream answers the WRITEs that arrive while it
	 * is out, and every GETATTR sent is one a WRITE counted. The window
	 * leaves corked (wb_write_many), so the proxy reads several of those
	 * WRITEs in the read that brings the first: they arrive while its
	 * GETATTR is out whatever the scheduling (sent one segment each, the
	 * GETATTR's answer could come back between two of them). */
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_GETATTR),
	      wb_snap_delta(&s0, &s1, WB_M_REVAL));
	WB_CHECK(wb_snap_delta(&s0, &s1, WB_M_REVAL_SHARED) >= 1,
		 "WRITEs past the end of file share one GETATTR");

	WB_STAT(wb_commit_retry(&T.px, &fh, cverf, COMMIT_MS, &jb), NFS3_OK);
	WB_CHECK(memcmp(cverf, verf, NFS3_WRITEVERFSIZE) == 0,
		 "the COMMIT verifier is the WRITEs' verifier");
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("random_4k after the COMMIT", &s1, &s2);
	fprintf(stderr, "wbtest: random_4k: the COMMIT got %u JUKEBOX replies "
		"first\n", jb);
	up_writes = wb_snap_delta(&s1, &s2, WB_M_UP_WRITE);
	bound = (double)((size + T.wsize - 1) / T.wsize) + 2;
	ratio("random_4k", (double)n, up_writes);
	WB_CHECK(up_writes <= bound, "upstream WRITEs %.0f <= ceil(40 MiB / "
		 "wsize) + 2 = %.0f", up_writes, bound);
	WB_CHECK(up_writes >= (double)(size / T.wsize), "upstream WRITEs %.0f "
		 ">= 40 MiB / wsize (none is larger than wsize)", up_writes);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_WB_WRITES), up_writes);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_WB_BYTES), size);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_UP_COMMIT), 1);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_RESENT), 0);
	WB_EQ(wb_snap_delta(&s0, &s2, WB_M_DIRTY), 0);
	WB_EQ(wb_snap_get(&s2, WB_M_UNSTABLE), 0);
	WB_EQ(wb_snap_get(&s2, WB_M_WRITING), 0);
	check_upstream_data(name, data, size);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
out:
	free(data);
	free(req);
	free(res);
}

/* Fill buf with the sequential suite's bytes for [off, off + len). */
static void seq_bytes(uint8_t *buf, uint64_t off, size_t len)
{
	wb_pattern(buf, len, off, 6464);
}

/* Compare the sequential file on disk with what was written, 1 MiB at a
 * time. */
static void check_seq_disk(const char *name, uint64_t size)
{
	uint8_t *got = malloc(WB_MIB), *want = malloc(WB_MIB);
	uint64_t off, bad = UINT64_MAX;

	WB_CHECK(got && want, "malloc");
	if (!got || !want)
		goto out;
	WB_EQ(wb_disk_size(name), size);
	for (off = 0; off < size && bad == UINT64_MAX; off += WB_MIB) {
		size_t len = size - off < WB_MIB ? (size_t)(size - off) : WB_MIB;
		ssize_t n = wb_disk_read(name, off, got, len);
		size_t d;

		seq_bytes(want, off, len);
		if (n != (ssize_t)len)
			bad = off;
		else if ((d = wb_first_diff(got, want, len)) != len)
			bad = off + d;
	}
	WB_CHECK(bad == UINT64_MAX, "%s on disk differs from what the client "
		 "wrote at offset %llu", name, (unsigned long long)bad);
out:
	free(got);
	free(want);
}

/* 10,000 sequential 64 KiB UNSTABLE WRITEs, COMMIT. */
static void test_sequential_64k(void)
{
	const size_t n = 10000;
	const uint32_t bs = 64 * WB_KIB;
	const uint64_t size = (uint64_t)n * bs;
	uint8_t *data = malloc(size);
	struct wb_wreq *req = calloc(n, sizeof(*req));
	struct wb_wres *res = calloc(n, sizeof(*res));
	uint8_t verf[NFS3_WRITEVERFSIZE], cverf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1, s2;
	double calls, bytes, want;
	uint64_t t0;
	unsigned jb = 0;
	struct wb_fh fh;
	char name[64];

	WB_CHECK(data && req && res, "malloc %llu", (unsigned long long)size);
	if (!data || !req || !res)
		goto out;
	WB_EQ(size, 655360000);
	seq_bytes(data, 0, size);
	for (size_t i = 0; i < n; i++) {
		req[i].off = (uint64_t)i * bs;
		req[i].len = bs;
		req[i].data = data + req[i].off;
		req[i].stable = UNSTABLE;
	}
	wb_unique_name(name, sizeof(name), "wb-seq");
	if (create_file(name, &fh) < 0)
		goto out;
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	t0 = wb_now_ms();
	WB_EQ(wb_write_many(&T.px, &fh, req, n, 16, res), 0);
	check_absorbed(res, req, n, verf);
	fprintf(stderr, "wbtest: sequential_64k: %zu WRITEs in %llu ms\n", n,
		(unsigned long long)(wb_now_ms() - t0));
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("sequential_64k after the WRITEs", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_ABSORBED), n);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_THROUGH), 0);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), 0);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_DIRTY), size);
	free(data);
	data = NULL;

	t0 = wb_now_ms();
	WB_STAT(wb_commit_retry(&T.px, &fh, cverf, COMMIT_MS, &jb), NFS3_OK);
	fprintf(stderr, "wbtest: sequential_64k: COMMIT in %llu ms (%u "
		"JUKEBOX replies first)\n",
		(unsigned long long)(wb_now_ms() - t0), jb);
	WB_CHECK(memcmp(cverf, verf, NFS3_WRITEVERFSIZE) == 0,
		 "the COMMIT verifier is the WRITEs' verifier");
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("sequential_64k after the COMMIT", &s1, &s2);
	calls = wb_snap_delta(&s1, &s2, WB_M_UP_WRITE);
	bytes = wb_snap_delta(&s1, &s2, WB_M_WB_BYTES);
	want = (double)((size + T.wsize - 1) / T.wsize);
	ratio("sequential_64k", (double)n, calls);
	fprintf(stderr, "wbtest: sequential_64k: %.0f bytes in %.0f upstream "
		"WRITEs = %.0f bytes each\n", bytes, calls,
		calls > 0 ? bytes / calls : 0);
	WB_EQ(bytes, size);
	WB_CHECK(calls >= want && calls <= want + 1, "upstream WRITEs %.0f in "
		 "[ceil(bytes / wsize), +1] = [%.0f, %.0f]: all but at most "
		 "one are wsize bytes", calls, want, want + 1);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_WB_WRITES), calls);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_RESENT), 0);
	WB_EQ(wb_snap_get(&s2, WB_M_UNSTABLE), 0);
	check_seq_disk(name, size);
	/* Leave the disk for later suites. */
	WB_STAT(wb_remove(&T.px, &T.px.root, name), NFS3_OK);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
out:
	free(data);
	free(req);
	free(res);
}

/* 4 KiB blocks by alternating writers: one upstream WRITE per run. */
static void test_two_uids(void)
{
	/* The writer of each 4 KiB block, in file order: 7 runs. */
	static const uint32_t who[] = {
		1000, 2000, 1000, 1000, 2000, 2000, 2000, 1000, 2000, 1000,
		1000, 1000,
	};
	const size_t n = sizeof(who) / sizeof(who[0]);
	const uint32_t bs = 4 * WB_KIB;
	uint8_t data[sizeof(who) / sizeof(who[0]) * 4 * 1024];
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1, s2;
	struct wb_wres r;
	size_t runs = 1, bad = 0;
	double calls;
	struct wb_fh fh;
	char name[64];

	for (size_t i = 1; i < n; i++)
		runs += who[i] != who[i - 1];
	WB_EQ(runs, 7);
	wb_pattern(data, sizeof(data), 0, 2000);
	wb_unique_name(name, sizeof(name), "wb-uids");
	if (create_file(name, &fh) < 0)
		return;
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	/* Write the blocks in an interleaved order: evens, then odds. */
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = pass; i < n; i += 2) {
			wb_set_cred(&T.px, who[i], who[i]);
			if (wb_write(&T.px, &fh, i * bs, data + i * bs, bs,
				     UNSTABLE, &r) != NFS3_OK ||
			    r.count != bs || r.committed != UNSTABLE)
				bad++;
		}
	}
	WB_EQ(bad, 0);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_ABSORBED), n);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), 0);
	wb_set_cred(&T.px, 1000, 1000);
	WB_STAT(wb_commit_retry(&T.px, &fh, verf, COMMIT_MS, NULL), NFS3_OK);
	wb_set_cred(&T.px, 0, 0);
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("two_uids after the COMMIT", &s1, &s2);
	calls = wb_snap_delta(&s1, &s2, WB_M_UP_WRITE);
	ratio("two_uids", (double)n, calls);
	WB_EQ(calls, runs);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_WB_BYTES), sizeof(data));
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_ERRORS), 0);
	check_upstream_data(name, data, sizeof(data));
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
}

int test_register(void)
{
	CU_pSuite s;

	s = CU_add_suite("random_4k", suite_init, suite_clean);
	if (!s || !CU_add_test(s, "coalesce", test_random_4k))
		return -1;
	s = CU_add_suite("sequential_64k", suite_init, suite_clean);
	if (!s || !CU_add_test(s, "wsize_sized", test_sequential_64k))
		return -1;
	s = CU_add_suite("two_uids", suite_init, suite_clean);
	if (!s || !CU_add_test(s, "never_merged", test_two_uids))
		return -1;
	return 0;
}
