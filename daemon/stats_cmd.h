/* SPDX-License-Identifier: MIT */
/*
 * stats_cmd: `nfscached stats`, a short human summary of a running
 * daemon. It fetches GET /metrics (plain HTTP/1.0 over TCP), keeps the few
 * Prometheus samples it needs (docs/metrics.md names them) and prints the
 * hit ratio by requests and by bytes, partial and hole hits, the upstream
 * bytes saved, write coalescing, dirty bytes, upstream latency and errors.
 * `--watch` redraws it in place every few seconds with the rates of the
 * last interval.
 */
#ifndef NFSCACHED_DAEMON_STATS_CMD_H
#define NFSCACHED_DAEMON_STATS_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cache.h"
#include "histogram.h"

/* The samples the summary uses, summed over the labels it ignores. */
struct stats_snap {
	char version[32];		/* nfscached_build_info{version} */
	double start_time;		/* nfscached_start_time_seconds */
	double reads[CACHE_NOUTCOMES];	/* nfscached_reads_total{result} */
	double bytes_cache;		/* nfscached_read_bytes_total{source} */
	double bytes_upstream;
	double bytes_hole;
	double upstream_read_bytes;	/* nfscached_upstream_read_bytes_total */
	double client_writes;		/* client_rpcs_total{procedure=write} */
	double client_calls;		/* all client calls */
	double upstream_writes;		/* upstream_rpcs_total{procedure=write} */
	double upstream_reads;
	double upstream_calls;
	double upstream_errors;
	double upstream_timeouts;
	double upstream_lat_sum;	/* seconds, all procedures */
	double upstream_lat_count;
	double upstream_lat_cum[HISTOGRAM_NBUCKETS];	/* cumulative */
	unsigned exports;		/* nfscached_upstream_up samples */
	unsigned exports_up;
	double dirty_bytes;		/* nfscached_cache_bytes{state=dirty} */
	double cached_bytes;		/* nfscached_cache_bytes, all states */
	double budget_bytes;
	double evictions;
	double jukebox;
	unsigned samples;		/* samples recognized */
};

/*
 * Parse the Prometheus text exposition text (NUL-terminated) into *s,
 * which it zeroes first. Unknown samples and comments are skipped.
 * Returns 0, or -1 when no nfscached sample was found.
 */
int stats_parse(const char *text, struct stats_snap *s);

/*
 * Print the summary of s to f. where names the endpoint ("127.0.0.1:9655");
 * now is the wall-clock time (seconds since the epoch) for the uptime.
 * With prev (an earlier snapshot taken interval seconds before) a line of
 * rates over that interval is added.
 */
void stats_print(FILE *f, const struct stats_snap *s,
		 const struct stats_snap *prev, double interval,
		 const char *where, double now);

/*
 * `nfscached stats [--metrics ADDR:PORT | --config FILE] [--watch]
 * [--interval SECS] [--count N]`; argv[0] is "stats". Returns the exit
 * status: 0, 1 when the daemon cannot be reached or answers no metrics,
 * 2 for bad usage.
 */
int stats_main(int argc, char **argv);

#endif
