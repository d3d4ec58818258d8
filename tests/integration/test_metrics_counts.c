/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_counts: /metrics counts what a scripted workload did, and
 * `nfscached stats` summarizes it.
 *
 * Workload, through the proxy (harness.sh: a fresh nfscached, so every
 * counter starts at zero): a 200000-byte file is written into Ganesha's
 * export directory on disk (behind the proxy's back, so nothing of it is
 * cached), looked up, then
 *   1 READ of 4096 bytes at 0      -> a miss: the proxy fetches the missing
 *                                     bytes of the page it touches, once
 *   100 READs of 4096 bytes at 8192 -> hits in that page
 *   2 FILE_SYNC WRITEs of 1000 bytes to a second file
 * and /metrics, read before and after, must move by exactly:
 *   nfscached_reads_total{result="miss"} +1, {result="hit"} +100,
 *   {result="partial"} +0, nfscached_upstream_rpcs_total{procedure="read"}
 *   +1, nfscached_client_rpcs_total{program="nfs3",procedure="read"} +101,
 *   nfscached_read_bytes_total{source="cache"} +409600 and
 *   {source="upstream"} +4096, the client READ latency histogram's _count
 *   +101 (its +Inf bucket equal to _count, buckets never decreasing), the
 *   upstream READ histogram's _count +1, client WRITEs +2 and upstream
 *   WRITEs between +1 and +2 (coalescing may join them, never add).
 * Then `nfscached stats --metrics ADDR` prints 99.0% of 101 READs, and
 * `--watch --interval 0.2 --count 3` on a pipe prints a header line and
 * three rows (test_stats_watch.sh checks the rows' values);
 * GET /healthz answers 200 "ok".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "httpget.h"
#include "nfsclient.h"

/* Bytes the workload's READs brought over the upstream link (set by the
 * first test, checked in the stats summary). */
static double fetched;

enum {
	FILE_SIZE = 200000,
	IO = 4096,
	HITS = 100,
	HIST_BOUNDS = 16,	/* finite buckets nfscached exposes */
};

/* GET path from NFSC_METRICS_ADDR; a malloc'd NUL-terminated reply
 * (status line, headers and body), or NULL. */
static char *get(const char *path)
{
	const char *addr = getenv("NFSC_METRICS_ADDR");

	return addr ? http_get_raw(addr, path, HTTP_GET_TIMEOUT_MS) : NULL;
}

/* The value of sample series (exact name with labels) in page, or -1. */
static double sample(const char *page, const char *series)
{
	double v;

	return prom_sample(page, series, &v) == 0 ? v : -1;
}

/* Fetch /metrics, or fail the test. */
static char *scrape(void)
{
	char *page = get("/metrics");

	CHECK_MSG(page != NULL, "GET /metrics from %s failed",
		  getenv("NFSC_METRICS_ADDR"));
	return page;
}

/* Check that series moved by exactly want between pages a and b. */
static void check_delta(const char *a, const char *b, const char *series,
			double want)
{
	double va = sample(a, series), vb = sample(b, series);

	CHECK_MSG(va >= 0 && vb >= 0, "%s: not on the metrics page", series);
	CHECK_MSG(vb - va == want, "%s moved by %.0f (%.0f -> %.0f), want %.0f",
		  series, vb - va, va, vb, want);
}

/* Check the histogram series of name{labels}: cumulative buckets never
 * decrease and the +Inf bucket equals _count. */
static void check_histogram(const char *page, const char *name,
			    const char *labels)
{
	static const char *const le[HIST_BOUNDS + 1] = {
		"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
		"0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5",
		"10", "+Inf",
	};
	char s[256];
	double prev = 0, v, count;

	for (int i = 0; i <= HIST_BOUNDS; i++) {
		snprintf(s, sizeof(s), "%s_bucket{%s,le=\"%s\"}", name, labels, le[i]);
		v = sample(page, s);
		CHECK_MSG(v >= prev, "%s is %.0f, below the bucket before (%.0f)",
			  s, v, prev);
		prev = v;
	}
	snprintf(s, sizeof(s), "%s_count{%s}", name, labels);
	count = sample(page, s);
	CHECK_MSG(count == prev, "%s is %.0f but the +Inf bucket %.0f", s,
		  count, prev);
}

/* Write the test file into the export directory on disk. */
static void make_file(const char *name, unsigned char *data)
{
	char path[4096];
	int fd;

	for (int i = 0; i < FILE_SIZE; i++)
		data[i] = (unsigned char)(i * 7 + i / 251);
	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, data, FILE_SIZE) == FILE_SIZE);
	close(fd);
}

/* READ len at off and compare with data; true if the bytes match. */
static int read_ok(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
		   const unsigned char *data)
{
	unsigned char buf[IO];
	uint32_t count = 0;
	int eof = 0;
	int st = nfsc_read(c, fh, off, IO, buf, &count, &eof);

	return st == NFS3_OK && count == IO && memcmp(buf, data + off, IO) == 0;
}

/* The workload and its counters. */
static void test_counters_match_workload(void)
{
	static unsigned char data[FILE_SIZE];
	struct nfsc *c = nfsc_connect(getenv("NFSC_PROXY_URL"), 0, 0);
	nfs_fh3 fh = { 0 }, wfh = { 0 };
	char *before, *after, wbuf[1000];
	unsigned bad = 0;

	CU_ASSERT_FATAL(c != NULL);
	make_file("metrics_counts.bin", data);
	CHECK_STAT(nfsc_lookup(c, nfsc_root(c), "metrics_counts.bin", &fh, NULL), NFS3_OK);
	CHECK_STAT(nfsc_create(c, nfsc_root(c), "metrics_writes.bin", 0644, &wfh, NULL), NFS3_OK);
	before = scrape();
	CU_ASSERT_FATAL(before != NULL);
	CHECK_MSG(read_ok(c, &fh, 0, data), "the first READ returned wrong bytes");
	for (int i = 0; i < HITS; i++)
		bad += !read_ok(c, &fh, 8192, data);
	CHECK_EQ(bad, 0);
	memset(wbuf, 'w', sizeof(wbuf));
	for (int i = 0; i < 2; i++)
		CHECK_STAT(nfsc_write(c, &wfh, (uint64_t)i * sizeof(wbuf), wbuf,
				      sizeof(wbuf), FILE_SYNC, NULL, NULL, NULL), NFS3_OK);
	after = scrape();
	CU_ASSERT_FATAL(after != NULL);

	check_delta(before, after, "nfscached_reads_total{result=\"miss\"}", 1);
	check_delta(before, after, "nfscached_reads_total{result=\"hit\"}", HITS);
	check_delta(before, after, "nfscached_reads_total{result=\"partial\"}", 0);
	check_delta(before, after, "nfscached_upstream_rpcs_total{procedure=\"read\"}", 1);
	check_delta(before, after,
		    "nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"read\"}", HITS + 1);
	check_delta(before, after, "nfscached_read_bytes_total{source=\"cache\"}", HITS * IO);
	check_delta(before, after, "nfscached_read_bytes_total{source=\"upstream\"}", IO);
	/* The miss fetched the missing bytes of its page: the upstream link
	 * carried exactly what the cache fetched. */
	{
		const char *f = "nfscached_cache_fetch_bytes_total";
		const char *u = "nfscached_upstream_read_bytes_total";
		double df = sample(after, f) - sample(before, f);
		double du = sample(after, u) - sample(before, u);

		CHECK_MSG(df >= IO, "%s moved by %.0f, want at least %d", f,
			  df, IO);
		CHECK_MSG(du == df, "%s moved by %.0f, %s by %.0f", u, du, f,
			  df);
		fetched = du;
	}
	check_delta(before, after,
		    "nfscached_client_rpc_duration_seconds_count{program=\"nfs3\",procedure=\"read\"}",
		    HITS + 1);
	check_delta(before, after,
		    "nfscached_upstream_rpc_duration_seconds_count{procedure=\"read\"}", 1);
	check_delta(before, after,
		    "nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"write\"}", 2);
	{
		const char *s = "nfscached_upstream_rpcs_total{procedure=\"write\"}";
		double d = sample(after, s) - sample(before, s);

		CHECK_MSG(d >= 1 && d <= 2, "%s moved by %.0f, want 1 or 2", s, d);
	}
	check_histogram(after, "nfscached_client_rpc_duration_seconds",
			"program=\"nfs3\",procedure=\"read\"");
	check_histogram(after, "nfscached_upstream_rpc_duration_seconds",
			"procedure=\"read\"");
	free(before);
	free(after);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&wfh);
	nfsc_close(&c);
}

/* Run a shell command; its stdout (malloc'd), or NULL. */
static char *run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = calloc(1, 65536);
	size_t n = 0;

	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, 65535, p);
	buf[n] = 0;
	CHECK_MSG(pclose(p) == 0, "'%s' failed; it printed:\n%s", cmd, buf);
	return buf;
}

/* Count the occurrences of needle in hay. */
static unsigned occurrences(const char *hay, const char *needle)
{
	unsigned n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* `nfscached stats` after the workload (this test runs second). */
static void test_stats_summary(void)
{
	char cmd[1024], *out;

	snprintf(cmd, sizeof(cmd), "%s stats --metrics %s", getenv("NFSCACHED_BIN"),
		 getenv("NFSC_METRICS_ADDR"));
	out = run(cmd);
	CU_ASSERT_FATAL(out != NULL);
	printf("%s", out);
	CHECK_MSG(strstr(out, "hit ratio   99.0% of 101 READs, 99.0% of 404.0 KiB read") != NULL,
		  "no '99.0%% of 101 READs, 99.0%% of 404.0 KiB' hit ratio line");
	CHECK_MSG(strstr(out, "  partial    0.0% of READs") != NULL, "no partial line");
	CHECK_MSG(strstr(out, "  holes      0.0% of READs") != NULL, "no holes line");
	{
		/* 404 KiB read, of which only what the miss fetched crossed
		 * the link to the upstream. */
		char want[128];

		snprintf(want, sizeof(want), "saved      %.1f KiB of reads not "
			 "fetched from upstream (%.1f KiB fetched)",
			 (double)(HITS + 1) * IO / 1024 - fetched / 1024,
			 fetched / 1024);
		CHECK_MSG(strstr(out, want) != NULL, "no '%s' line", want);
	}
	CHECK_MSG(strstr(out, "writes     2 client WRITEs -> ") != NULL, "no writes line");
	CHECK_MSG(strstr(out, "; 0 errors (0 timeouts)") != NULL, "no upstream errors line");
	CHECK_MSG(strstr(out, "(1 of 1 export up)") != NULL, "no upstream state");
	free(out);

	snprintf(cmd, sizeof(cmd), "%s stats --metrics %s --watch --interval 0.2 --count 3",
		 getenv("NFSCACHED_BIN"), getenv("NFSC_METRICS_ADDR"));
	out = run(cmd);
	CU_ASSERT_FATAL(out != NULL);
	CHECK_EQ(occurrences(out, "hit ratio "), 0);
	CHECK_EQ(occurrences(out, "READ/s"), 1);
	CHECK_EQ(occurrences(out, "\n"), 4);
	free(out);

	snprintf(cmd, sizeof(cmd), "%s stats --metrics 127.0.0.1:1 2>&1 >/dev/null",
		 getenv("NFSCACHED_BIN"));
	CHECK_MSG(system(cmd) != 0, "stats against a closed port exited 0");
}

/* GET /healthz with the upstream up. */
static void test_healthz_up(void)
{
	char *r = get("/healthz");

	CU_ASSERT_FATAL(r != NULL);
	CHECK_MSG(strncmp(r, "HTTP/1.1 200", 12) == 0 || strncmp(r, "HTTP/1.0 200", 12) == 0,
		  "/healthz: %.30s", r);
	CHECK_MSG(strstr(r, "\r\n\r\nok\n") != NULL, "/healthz body is not ok");
	free(r);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("metrics_counts", NULL, NULL);

	tcheck_report_at_exit("test_metrics_counts");
	if (!s ||
	    !CU_add_test(s, "counters_match_workload", test_counters_match_workload) ||
	    !CU_add_test(s, "stats_summary", test_stats_summary) ||
	    !CU_add_test(s, "healthz_up", test_healthz_up))
		return -1;
	return 0;
}
