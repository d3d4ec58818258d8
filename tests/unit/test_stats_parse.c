/* SPDX-License-Identifier: MIT */
/*
 * test_stats_parse: the pieces behind `nfscached stats` and the latency
 * histograms, without a daemon: stats_parse() on a hand-written
 * exposition (CRLF line ends, comments, unknown series, a last line with
 * no newline), stats_print()'s summary lines for it, the bucket rule
 * of histogram_observe() (Prometheus le: an observation equal to a bound
 * belongs to that bound's bucket), and `--watch`'s interval arithmetic
 * (stats_interval, stats_quantile, stats_row) on two recorded scrapes,
 * with the disk tier on, turned off by an error, not configured and not
 * reported at all.
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
	"nfscached_cache_bytes{state=\"writing\"} 1024\n"
	"nfscached_cache_bytes{state=\"unstable\"} 1024\n"
	"nfscached_cache_budget_bytes 1073741824\n"
	"nfscached_cache_evictions_total 7\n"
	"nfscached_nfs3_jukebox_replies_total 5\n"
	"nfscached_upstream_read_bytes_total 1572864\n"
	"nfscached_disk_hits_total 12\n"
	"nfscached_disk_hit_bytes_total 786432\n"
	"nfscached_disk_misses_total 3\n"
	"nfscached_disk_checksum_failures_total 1\n"
	"nfscached_disk_errors_total 0\n"
	"nfscached_disk_bytes 1048576\n"
	"nfscached_disk_budget_bytes 4194304\n"
	"nfscached_disk_on 1\n"
	"nfscached_disk_io_duration_seconds_bucket{le=\"0.001\"} 9\n"
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
	CU_ASSERT_EQUAL(s.dirty_bytes, 4096);	/* dirty + writing + unstable */
	CU_ASSERT_EQUAL(s.cached_bytes, 1052672);
	CU_ASSERT_EQUAL(s.client_reads, 100);
	CU_ASSERT_EQUAL(s.budget_bytes, 1073741824);
	CU_ASSERT_EQUAL(s.evictions, 7);
	CU_ASSERT_EQUAL(s.jukebox, 5);
	CU_ASSERT_EQUAL(s.upstream_read_bytes, 1572864);
	CU_ASSERT_TRUE(s.disk_known);
	CU_ASSERT_TRUE(s.disk_configured);
	CU_ASSERT_EQUAL(stats_disk_state(&s), STATS_DISK_ON);
	CU_ASSERT_EQUAL(s.disk_on, 1);
	CU_ASSERT_EQUAL(s.disk_hits, 12);
	CU_ASSERT_EQUAL(s.disk_hit_bytes, 786432);
	CU_ASSERT_EQUAL(s.disk_checksum_failures, 1);
	CU_ASSERT_EQUAL(s.disk_errors, 0);
	CU_ASSERT_EQUAL(s.disk_bytes, 1048576);
	CU_ASSERT_EQUAL(s.disk_budget, 4194304);
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
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "writes     40 client WRITEs -> 10 upstream WRITEs (coalescing 4.00x); 4.0 KiB dirty\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "upstream   20 calls, mean 1.50 ms, 99% within 2.50 ms; 3 errors (1 timeouts), 5 JUKEBOX replies\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ndisk       on: 1.0 MiB held of 4.0 MiB budget; 12 hits (768.0 KiB), 1 checksum failures, 0 errors\n"));
	/* The interval row: no client READ counter moved, so 0 READs/s and no
	 * hit ratio, no latency, no metadata ratio: "-", never "0.0". */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ntime        READ/s   WRITE/s upcalls/s   hit%"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " diskheld    up\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "       0.0       0.0       0.0      -        -        -      -     4.0K     1.0M     0.0     1.0M   1/2\n"));
	if (CU_get_number_of_failures() > 0)
		fprintf(stderr, "\n%s", out);
	free(out);
}

/* 1 MiB client WRITEs written back as 256 KiB ones are a split, not a
 * coalescing of 0.25x. */
static void test_split_writes_are_not_coalescing(void)
{
	struct stats_snap s;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(&s, 0, sizeof(s));
	s.client_writes = 10;
	s.upstream_writes = 40;
	stats_print(f, &s, NULL, 0, "127.0.0.1:9655", 1000);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "writes     10 client WRITEs -> 40 "
				      "upstream WRITEs (split: 4.00 upstream "
				      "WRITEs per client WRITE, "
				      "writeback_wsize); 0 B dirty\n"));
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

/* A daemon that served no READ yet shows "-" for its hit ratios. */
static void test_summary_without_reads_prints_dash(void)
{
	struct stats_snap s;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(stats_parse("nfscached_start_time_seconds 7\n"
					  "nfscached_reads_total{result=\"hit\"} 0\n", &s), 0);
	stats_print(f, &s, NULL, 0, "x:1", 8);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "hit ratio       - of 0 READs, - of 0 B read\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "  misses        - of READs\n"));
	CU_ASSERT_PTR_NULL(strstr(out, "0.0%"));
	if (CU_get_number_of_failures() > 0)
		fprintf(stderr, "\n%s", out);
	free(out);
}

/*
 * Two scrapes 2 s apart, as the daemon renders them (trimmed to the
 * series --watch reads, plus some it must ignore). Between them: 100
 * client READs (60 in (0.25 ms, 0.5 ms], 38 in (0.5 ms, 1 ms], 2 in
 * (5 ms, 10 ms]), 20 WRITEs, 30 upstream calls, 3 MiB read from cache and
 * 1 MiB from upstream, 40 metadata calls of which 30 hits, 20 pages
 * (64 KiB) loaded from disk, one checksum failure and one disk error that
 * turned the tier off.
 */
static const char scrape_a[] =
	"nfscached_start_time_seconds 5000\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"read\"} 10\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"write\"} 5\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.00025\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.0005\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.001\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.005\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.01\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"+Inf\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"write\",le=\"+Inf\"} 5\n"
	"nfscached_upstream_rpcs_total{procedure=\"read\"} 2\n"
	"nfscached_read_bytes_total{source=\"cache\"} 1000\n"
	"nfscached_read_bytes_total{source=\"upstream\"} 0\n"
	"nfscached_read_bytes_total{source=\"hole\"} 0\n"
	"nfscached_meta_requests_total{procedure=\"getattr\",result=\"hit\"} 10\n"
	"nfscached_meta_requests_total{procedure=\"getattr\",result=\"miss\"} 5\n"
	"nfscached_meta_requests_total{procedure=\"lookup\",result=\"hit\"} 3\n"
	"nfscached_meta_requests_total{procedure=\"lookup\",result=\"miss\"} 2\n"
	"nfscached_cache_bytes{state=\"clean\"} 0\n"
	"nfscached_cache_bytes{state=\"dirty\"} 0\n"
	"nfscached_disk_on 1\n"
	"nfscached_disk_hits_total 4\n"
	"nfscached_disk_hit_bytes_total 16384\n"
	"nfscached_disk_checksum_failures_total 0\n"
	"nfscached_disk_errors_total 0\n"
	"nfscached_disk_bytes 65536\n"
	"nfscached_disk_budget_bytes 1048576\n"
	"nfscached_upstream_up{export=\"/export\"} 1\n";
static const char scrape_b[] =
	"nfscached_start_time_seconds 5000\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"read\"} 110\n"
	"nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"write\"} 25\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.00025\"} 10\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.0005\"} 70\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.001\"} 108\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.005\"} 108\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"0.01\"} 110\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"read\",le=\"+Inf\"} 110\n"
	"nfscached_client_rpc_duration_seconds_bucket{program=\"nfs3\",procedure=\"write\",le=\"+Inf\"} 25\n"
	"nfscached_upstream_rpcs_total{procedure=\"read\"} 22\n"
	"nfscached_upstream_rpcs_total{procedure=\"commit\"} 10\n"
	"nfscached_read_bytes_total{source=\"cache\"} 3146728\n"
	"nfscached_read_bytes_total{source=\"upstream\"} 1048576\n"
	"nfscached_read_bytes_total{source=\"hole\"} 0\n"
	"nfscached_meta_requests_total{procedure=\"getattr\",result=\"hit\"} 40\n"
	"nfscached_meta_requests_total{procedure=\"getattr\",result=\"miss\"} 5\n"
	"nfscached_meta_requests_total{procedure=\"lookup\",result=\"hit\"} 3\n"
	"nfscached_meta_requests_total{procedure=\"lookup\",result=\"miss\"} 12\n"
	"nfscached_cache_bytes{state=\"clean\"} 1048576\n"
	"nfscached_cache_bytes{state=\"dirty\"} 4096\n"
	"nfscached_cache_bytes{state=\"writing\"} 8192\n"
	"nfscached_cache_bytes{state=\"unstable\"} 16384\n"
	"nfscached_disk_on 0\n"
	"nfscached_disk_hits_total 24\n"
	"nfscached_disk_hit_bytes_total 81920\n"
	"nfscached_disk_checksum_failures_total 1\n"
	"nfscached_disk_errors_total 1\n"
	"nfscached_disk_bytes 131072\n"
	"nfscached_disk_budget_bytes 1048576\n"
	"nfscached_upstream_up{export=\"/export\"} 1\n";

/* The interval between the two scrapes: deltas, ratios, quantiles. */
static void test_interval_between_scrapes(void)
{
	struct stats_snap a, b;
	struct stats_rates r;

	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_a, &a), 0);
	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_b, &b), 0);
	stats_interval(&b, &a, 2, 9999, &r);
	CU_ASSERT_FALSE(r.since_start);
	CU_ASSERT_DOUBLE_EQUAL(r.secs, 2, 0);
	CU_ASSERT_EQUAL(r.reads, 100);
	CU_ASSERT_EQUAL(r.writes, 20);
	CU_ASSERT_EQUAL(r.upstream_calls, 30);
	CU_ASSERT_EQUAL(r.read_bytes, 4194304);
	CU_ASSERT_DOUBLE_EQUAL(r.hit_ratio, 0.75, 1e-12);
	/* p50: rank 50 of 100, in (0.25 ms, 0.5 ms] holding 60: 0.25 ms +
	 * 0.25 ms * 50/60. p99: rank 99, 98 at or below 1 ms (and 5 ms),
	 * the last 2 in (5 ms, 10 ms]: 5 ms + 5 ms * 1/2. */
	CU_ASSERT_DOUBLE_EQUAL(r.read_p50, 0.00025 + 0.00025 * 50 / 60, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(r.read_p99, 0.0075, 1e-12);
	CU_ASSERT_EQUAL(r.meta_requests, 40);
	CU_ASSERT_DOUBLE_EQUAL(r.meta_hit_ratio, 0.75, 1e-12);
	CU_ASSERT_EQUAL(r.dirty_bytes, 28672);
	CU_ASSERT_EQUAL(r.cached_bytes, 1048576 + 28672);
	CU_ASSERT_EQUAL(r.exports, 1);
	CU_ASSERT_EQUAL(r.exports_up, 1);
	CU_ASSERT_EQUAL(r.disk, STATS_DISK_OFF);
	CU_ASSERT_EQUAL(r.disk_hits, 20);
	CU_ASSERT_EQUAL(r.disk_hit_bytes, 65536);
	CU_ASSERT_EQUAL(r.disk_checksum_failures, 1);
	CU_ASSERT_EQUAL(r.disk_errors, 1);
	CU_ASSERT_EQUAL(r.disk_bytes, 131072);
	CU_ASSERT_EQUAL(r.disk_budget, 1048576);
}

/* Quantiles: empty is -1, a rank in +Inf is the last finite bound, an
 * exact bucket edge is that bound. */
static void test_quantile_edges(void)
{
	double none[HISTOGRAM_NBUCKETS] = { 0 }, inf[HISTOGRAM_NBUCKETS] = { 0 };
	double edge[HISTOGRAM_NBUCKETS] = { 0 };

	CU_ASSERT_EQUAL(stats_quantile(none, NULL, 0.5), -1);
	CU_ASSERT_EQUAL(stats_quantile(none, none, 0.99), -1);
	inf[HISTOGRAM_NBOUNDS] = 4;	/* all four slower than 10 s */
	CU_ASSERT_DOUBLE_EQUAL(stats_quantile(inf, NULL, 0.5), 10, 0);
	for (unsigned i = 0; i < HISTOGRAM_NBUCKETS; i++)
		edge[i] = i >= 3 ? 2 : i >= 2 ? 1 : 0;	/* 1 in (.25,.5] ms, 1 in (.5,1] ms */
	CU_ASSERT_DOUBLE_EQUAL(stats_quantile(edge, NULL, 0.5), 0.0005, 1e-15);
	CU_ASSERT_DOUBLE_EQUAL(stats_quantile(edge, NULL, 0.99),
			       0.0005 + 0.0005 * 0.98, 1e-15);
}

/* An interval with no READ and no metadata call has no ratio and no
 * latency: "-" in text, null in JSON, never 0. */
static void test_idle_interval_prints_dash(void)
{
	struct stats_snap b;
	struct stats_rates r;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_b, &b), 0);
	stats_interval(&b, &b, 1, 9999, &r);
	CU_ASSERT_EQUAL(r.reads, 0);
	CU_ASSERT(r.hit_ratio < 0 && r.read_p50 < 0 && r.read_p99 < 0 &&
		  r.meta_hit_ratio < 0);
	f = open_memstream(&out, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	stats_row(f, &r, 0, false);
	stats_row(f, &r, 1234.5, true);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "       0.0       0.0       0.0      -        -        -      -    28.0K     1.0M     0.0      OFF   1/1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n{\"time\":1234.500,\"interval_seconds\":1.000,\"since_start\":false,"
		"\"reads\":0,\"reads_per_second\":0.000,\"writes\":0,\"writes_per_second\":0.000,"
		"\"upstream_calls\":0,\"upstream_calls_per_second\":0.000,\"read_bytes\":0,"
		"\"hit_ratio_bytes\":null,\"read_p50_seconds\":null,\"read_p99_seconds\":null,"
		"\"meta_requests\":0,\"meta_hit_ratio\":null,\"dirty_bytes\":28672,"
		"\"cached_bytes\":1077248,\"exports\":1,\"exports_up\":1,"
		"\"disk\":\"off\",\"disk_on\":false,\"disk_hits\":0,"
		"\"disk_hits_per_second\":0.000,\"disk_hit_bytes\":0,"
		"\"disk_bytes\":131072,\"disk_budget_bytes\":1048576,"
		"\"disk_checksum_failures\":0,\"disk_errors\":0}\n"));
	if (CU_get_number_of_failures() > 0)
		fprintf(stderr, "\n%s", out);
	free(out);
}

/* Print s's summary and its since-start row (text, then JSON) into a
 * new string (the caller frees it). */
static char *print_all(const struct stats_snap *s)
{
	struct stats_rates r;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	stats_print(f, s, NULL, 0, "x:1", 8);
	stats_interval(s, NULL, 0, 8, &r);
	stats_row(f, &r, 8, false);
	stats_row(f, &r, 8, true);
	fclose(f);
	return out;
}

/* A disk tier turned off by an error keeps its numbers, marked OFF; no
 * cache_dir (nfscached_disk_on alone) or no disk metrics at all say so
 * and print no disk number: "off" / null, never zeros. */
static void test_disk_off_or_absent_says_so(void)
{
	static const char *const nulls = "\"disk_hits\":null,"
		"\"disk_hits_per_second\":null,\"disk_hit_bytes\":null,"
		"\"disk_bytes\":null,\"disk_budget_bytes\":null,"
		"\"disk_checksum_failures\":null,\"disk_errors\":null}";
	struct stats_snap s;
	char *out;

	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_b, &s), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out = print_all(&s));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ndisk       OFF after a disk error (the log says why): 128.0 KiB held of 1.0 MiB budget; 24 hits (80.0 KiB), 1 checksum failures, 1 errors\n"));
	free(out);
	CU_ASSERT_EQUAL_FATAL(stats_parse("nfscached_start_time_seconds 7\n"
					  "nfscached_disk_on 0\n", &s), 0);
	CU_ASSERT_EQUAL(stats_disk_state(&s), STATS_DISK_NONE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out = print_all(&s));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ndisk       off (no cache_dir)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "       0B       0B     off      off   0/0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"disk\":\"none\",\"disk_on\":false,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, nulls));
	if (CU_get_number_of_failures() > 0)
		fprintf(stderr, "\n%s", out);
	free(out);
	CU_ASSERT_EQUAL_FATAL(stats_parse("nfscached_start_time_seconds 7\n", &s), 0);
	CU_ASSERT_EQUAL(stats_disk_state(&s), STATS_DISK_ABSENT);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out = print_all(&s));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ndisk       absent (this daemon reports no disk tier)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "     off      off   0/0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"disk\":\"absent\",\"disk_on\":false,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, nulls));
	free(out);
}

/* No earlier snapshot, or one from before a restart (counters went back):
 * the row covers the time since the daemon started. */
static void test_first_and_after_restart_cover_since_start(void)
{
	struct stats_snap a, b;
	struct stats_rates r;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_a, &a), 0);
	CU_ASSERT_EQUAL_FATAL(stats_parse(scrape_b, &b), 0);
	stats_interval(&a, NULL, 0, 5010, &r);
	CU_ASSERT_TRUE(r.since_start);
	CU_ASSERT_DOUBLE_EQUAL(r.secs, 10, 0);
	CU_ASSERT_EQUAL(r.reads, 10);
	CU_ASSERT_DOUBLE_EQUAL(r.hit_ratio, 1, 0);
	CU_ASSERT_DOUBLE_EQUAL(r.meta_hit_ratio, 13.0 / 20, 1e-12);
	stats_interval(&a, &b, 2, 5010, &r);	/* b is "older": went back */
	CU_ASSERT_TRUE(r.since_start);
	CU_ASSERT_EQUAL(r.reads, 10);
	f = open_memstream(&out, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	stats_row(f, &r, 0, true);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"interval_seconds\":10.000,\"since_start\":true,"
		"\"reads\":10,\"reads_per_second\":1.000,"));
	free(out);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("stats_parse", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "parse_fields", test_parse_fields) ||
	    !CU_add_test(s, "parse_foreign_page", test_parse_foreign_page) ||
	    !CU_add_test(s, "print_summary", test_print_summary) ||
	    !CU_add_test(s, "split_writes_are_not_coalescing",
			 test_split_writes_are_not_coalescing) ||
	    !CU_add_test(s, "histogram_buckets", test_histogram_buckets) ||
	    !CU_add_test(s, "summary_without_reads_prints_dash",
			 test_summary_without_reads_prints_dash) ||
	    !CU_add_test(s, "interval_between_scrapes", test_interval_between_scrapes) ||
	    !CU_add_test(s, "quantile_edges", test_quantile_edges) ||
	    !CU_add_test(s, "idle_interval_prints_dash", test_idle_interval_prints_dash) ||
	    !CU_add_test(s, "disk_off_or_absent_says_so", test_disk_off_or_absent_says_so) ||
	    !CU_add_test(s, "first_and_after_restart_cover_since_start",
			 test_first_and_after_restart_cover_since_start))
		return -1;
	return 0;
}
