/* SPDX-License-Identifier: MIT */
/*
 * test_stats_parse: the pieces behind `nfscached stats` and the latency
 * histograms, without a daemon: stats_parse() on a hand-written
 * exposition (CRLF line ends, comments, unknown series, a last line with
 * no newline), stats_print()'s summary lines for it, and the bucket rule
 * of histogram_observe() (Prometheus le: an observation equal to a bound
 * belongs to that bound's bucket).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "histogram.h"
#include "stats_cmd.h"

static const char page[] =
	"# HELP nfscached_build_info Build information.\r\n"
	"# TYPE nfscached_build_info gauge\r\n"
	"nfscached_build_info{version=\"9.8.7\",libevent=\"2.1.12-stable\"} 1\r\n"
	"nfscached_start_time_seconds 1000.5\n"
	"nfscached_reads_total{result=\"hit\"} 90\n"
	"nfscached_reads_total{result=\"partial\"} 4\n"
	"nfscached_reads_total{result=\"miss\"} 2\n"
	"nfscached_reads_total{result=\"hole\"} 3\n"
	"nfscached_reads_total{result=\"coalesced\"} 1\n"
	"nfscached_reads_total{result=\"bypass\"} 0\n"
	"nfscached_read_bytes_total{source=\"cache\"} 3145728\n"
	"nfscached_read_bytes_total{source=\"upstream\"} 786432\n"
	"nfscached_read_bytes_total{source=\"hole\"} 262144\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"read\"} 100\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"write\"} 40\n"
	"nfscached_client_rpcs_total{program=\"mount3\",procedure=\"mnt\"} 1\n"
	"nfscached_upstream_rpcs_total{procedure=\"read\"} 6\n"
	"nfscached_upstream_rpcs_total{procedure=\"write\"} 10\n"
	"nfscached_upstream_rpcs_total{procedure=\"getattr\"} 4\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"read\",le=\"0.001\"} 5\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"read\",le=\"0.0025\"} 6\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"read\",le=\"+Inf\"} 6\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"write\",le=\"0.001\"} 0\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"write\",le=\"0.0025\"} 10\n"
	"nfscached_upstream_rpc_duration_seconds_bucket{procedure=\"write\",le=\"+Inf\"} 10\n"
	"nfscached_upstream_rpc_duration_seconds_sum{procedure=\"read\"} 0.004\n"
	"nfscached_upstream_rpc_duration_seconds_sum{procedure=\"write\"} 0.02\n"
	"nfscached_upstream_rpc_duration_seconds_count{procedure=\"read\"} 6\n"
	"nfscached_upstream_rpc_duration_seconds_count{procedure=\"write\"} 10\n"
	"nfscached_upstream_errors_total 3\n"
	"nfscached_upstream_timeouts_total 1\n"
	"nfscached_upstream_up{export=\"/a\"} 1\n"
	"nfscached_upstream_up{export=\"/b\"} 0\n"
	"nfscached_cache_bytes{state=\"clean\"} 1048576\n"
	"nfscached_cache_bytes{state=\"dirty\"} 2048\n"
	"nfscached_cache_budget_bytes 1073741824\n"
	"nfscached_cache_evictions_total 7\n"
	"nfscached_nfs3_jukebox_replies_total 5\n"
	"nfscached_upstream_read_bytes_total 1572864\n"
	"some_other_metric{x=\"y\"} 12\n"
	"nfscached_cache_pages 16";

/* Every sample the summary needs lands in its field, summed over labels. */
static void test_parse_fields(void)
{
	struct stats_snap s;

	CU_ASSERT_EQUAL_FATAL(stats_parse(page, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.version, "9.8.7");
	CU_ASSERT_DOUBLE_EQUAL(s.start_time, 1000.5, 1e-9);
	CU_ASSERT_EQUAL(s.reads[CACHE_HIT], 90);
	CU_ASSERT_EQUAL(s.reads[CACHE_PARTIAL], 4);
	CU_ASSERT_EQUAL(s.reads[CACHE_MISS], 2);
	CU_ASSERT_EQUAL(s.reads[CACHE_HOLE], 3);
	CU_ASSERT_EQUAL(s.reads[CACHE_COALESCED], 1);
	CU_ASSERT_EQUAL(s.bytes_cache, 3145728);
	CU_ASSERT_EQUAL(s.bytes_upstream, 786432);
	CU_ASSERT_EQUAL(s.bytes_hole, 262144);
	CU_ASSERT_EQUAL(s.client_writes, 40);
	CU_ASSERT_EQUAL(s.client_calls, 141);
	CU_ASSERT_EQUAL(s.upstream_writes, 10);
	CU_ASSERT_EQUAL(s.upstream_reads, 6);
	CU_ASSERT_EQUAL(s.upstream_calls, 20);
	CU_ASSERT_EQUAL(s.upstream_errors, 3);
	CU_ASSERT_EQUAL(s.upstream_timeouts, 1);
	CU_ASSERT_DOUBLE_EQUAL(s.upstream_lat_sum, 0.024, 1e-12);
	CU_ASSERT_EQUAL(s.upstream_lat_count, 16);
	CU_ASSERT_EQUAL(s.upstream_lat_cum[3], 5);	/* le 0.001 */
	CU_ASSERT_EQUAL(s.upstream_lat_cum[4], 16);	/* le 0.0025 */
	CU_ASSERT_EQUAL(s.upstream_lat_cum[HISTOGRAM_NBOUNDS], 16);
	CU_ASSERT_EQUAL(s.exports, 2);
	CU_ASSERT_EQUAL(s.exports_up, 1);
	CU_ASSERT_EQUAL(s.dirty_bytes, 2048);
	CU_ASSERT_EQUAL(s.cached_bytes, 1050624);
	CU_ASSERT_EQUAL(s.budget_bytes, 1073741824);
	CU_ASSERT_EQUAL(s.evictions, 7);
	CU_ASSERT_EQUAL(s.jukebox, 5);
	CU_ASSERT_EQUAL(s.upstream_read_bytes, 1572864);
}

/* A page with no nfscached sample is refused. */
static void test_parse_foreign_page(void)
{
	struct stats_snap s;

	CU_ASSERT_EQUAL(stats_parse("# nothing\ngo_goroutines 12\n", &s), -1);
	CU_ASSERT_EQUAL(stats_parse("", &s), -1);
}

/* The summary states the ratios computed from the page. */
static void test_print_summary(void)
{
	struct stats_snap s, prev;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(stats_parse(page, &s), 0);
	prev = s;
	prev.reads[CACHE_HIT] -= 10;
	prev.reads[CACHE_MISS] -= 10;
	stats_print(f, &s, &prev, 2, "127.0.0.1:9655", 1000.5 + 3725);
	fclose(f);
	/* 93 of 100 READs hit or hole; 3.25 MiB of 4 MiB from the cache, but
	 * readahead fetched 1.5 MiB upstream for them: 2.5 MiB saved. */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "nfscached 9.8.7 at 127.0.0.1:9655, up 1h02m; upstream DOWN (1 of 2 exports up)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "hit ratio   93.0% of 100 READs, 81.2% of 4.0 MiB read\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "  holes      3.0% of READs, 6.2% of bytes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "  partial    4.0% of READs"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "  misses     2.0% of READs; 1.0% waited on another fetch"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "saved      2.5 MiB of reads not fetched from upstream (1.5 MiB fetched)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "writes     40 client WRITEs -> 10 upstream WRITEs (coalescing 4.00x); 2.0 KiB dirty\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "upstream   20 calls, mean 1.50 ms, 99% within 2.50 ms; 3 errors (1 timeouts), 5 JUKEBOX replies\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "last 2s  10.0 READs/s (50.0% hits)"));
	if (CU_get_number_of_failures() > 0)
		fprintf(stderr, "\n%s", out);
	free(out);
}

/* Observations land in the bucket of the first bound >= them. */
static void test_histogram_buckets(void)
{
	struct histogram h, m;

	memset(&h, 0, sizeof(h));
	histogram_observe(&h, 0.0001);		/* on the first bound */
	histogram_observe(&h, -1);		/* clock step: counts as 0 */
	histogram_observe(&h, 0.00010001);	/* just over: next bucket */
	histogram_observe(&h, 10);		/* the last finite bound */
	histogram_observe(&h, 10.5);		/* +Inf */
	CU_ASSERT_EQUAL(h.buckets[0], 2);
	CU_ASSERT_EQUAL(h.buckets[1], 1);
	CU_ASSERT_EQUAL(h.buckets[HISTOGRAM_NBOUNDS - 1], 1);
	CU_ASSERT_EQUAL(h.buckets[HISTOGRAM_NBOUNDS], 1);
	CU_ASSERT_EQUAL(h.count, 5);
	CU_ASSERT_DOUBLE_EQUAL(h.sum, 0.0001 + 0.00010001 + 10 + 10.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(histogram_bound(0), 0.0001, 0);
	CU_ASSERT_DOUBLE_EQUAL(histogram_bound(HISTOGRAM_NBOUNDS - 1), 10, 0);
	memset(&m, 0, sizeof(m));
	histogram_merge(&m, &h);
	histogram_merge(&m, &h);
	CU_ASSERT_EQUAL(m.buckets[0], 4);
	CU_ASSERT_EQUAL(m.count, 10);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("stats_parse", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "parse_fields", test_parse_fields) ||
	    !CU_add_test(s, "parse_foreign_page", test_parse_foreign_page) ||
	    !CU_add_test(s, "print_summary", test_print_summary) ||
	    !CU_add_test(s, "histogram_buckets", test_histogram_buckets))
		return -1;
	return 0;
}
