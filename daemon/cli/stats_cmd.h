/* SPDX-License-Identifier: MIT */
/*
 * stats_cmd: `nfscached stats`, a short human summary of a running
 * daemon. It fetches GET /metrics (plain HTTP/1.0 over TCP), keeps the few
 * Prometheus samples it needs (docs/metrics.md names them) and prints the
 * hit ratio by requests and by bytes, partial and hole hits, the upstream
 * bytes saved, write coalescing, dirty bytes, upstream latency and errors,
 * and the disk tier (on, off, or not configured: never zeros in its place).
 * `--watch [SECS]` samples every SECS seconds like vmstat(8)/nfsiostat(8):
 * one row per interval (rates, hit ratio by bytes, READ latency p50/p99
 * from the histogram's bucket deltas, metadata hit ratio, dirty bytes,
 * disk tier hits per second and bytes held), the first row covering the
 * time since the daemon started; on a terminal the summary is redrawn in
 * place above the row, otherwise a header line is printed once and then
 * the rows; `--json` prints one JSON object per row instead.
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
	double client_reads;		/* client_rpcs_total{procedure=read} */
	double read_lat_cum[HISTOGRAM_NBUCKETS];	/* client READ, cumulative */
	double meta_requests;		/* nfscached_meta_requests_total */
	double meta_hits;		/* ... {result="hit"} */
	double dirty_bytes;		/* nfscached_cache_bytes{state=dirty,
					 * writing, unstable}: not committed */
	double cached_bytes;		/* nfscached_cache_bytes, all states */
	double budget_bytes;
	double evictions;
	double jukebox;
	/* The disk tier (nfscached_disk_*): the values mean something only
	 * when stats_disk_state() is STATS_DISK_ON or STATS_DISK_OFF. */
	double disk_on;			/* nfscached_disk_on, 0 or 1 */
	double disk_hits;		/* nfscached_disk_hits_total */
	double disk_hit_bytes;		/* nfscached_disk_hit_bytes_total */
	double disk_checksum_failures;	/* ..._checksum_failures_total */
	double disk_errors;		/* nfscached_disk_errors_total */
	double disk_bytes;		/* nfscached_disk_bytes */
	double disk_budget;		/* nfscached_disk_budget_bytes */
	bool disk_known;		/* nfscached_disk_on was there */
	bool disk_configured;		/* nfscached_disk_budget_bytes was */
	unsigned samples;		/* samples recognized */
};

/*
 * Parse the Prometheus text exposition text (NUL-terminated) into *s,
 * which it zeroes first. Unknown samples and comments are skipped.
 * Returns 0, or -1 when no nfscached sample was found.
 */
int stats_parse(const char *text, struct stats_snap *s);

/* What the disk tier of a snapshot is (stats_disk_state). */
enum stats_disk {
	STATS_DISK_ABSENT,	/* no nfscached_disk_on: a daemon without a tier */
	STATS_DISK_NONE,	/* nfscached_disk_on alone: no cache_dir */
	STATS_DISK_OFF,		/* configured, turned off by a disk error */
	STATS_DISK_ON		/* configured and in use */
};

/*
 * The disk tier's state in s, from which nfscached_disk_* samples it has
 * (docs/metrics.md, "Disk tier": without cache_dir only nfscached_disk_on
 * is exported, as 0).
 */
enum stats_disk stats_disk_state(const struct stats_snap *s);

/* Lower-case name of a state: "absent", "none", "off", "on". */
const char *stats_disk_name(enum stats_disk d);

/*
 * What happened between two snapshots (stats_interval). Counts are deltas
 * over secs seconds; a ratio or latency is negative when the interval had
 * nothing to measure (no READ bytes, no timed READ, no metadata call), so
 * that it prints "-" and never "0.0%".
 */
struct stats_rates {
	double secs;		/* length of the interval, seconds */
	bool since_start;	/* no usable earlier snapshot: since start */
	double reads;		/* client NFSv3 READs */
	double writes;		/* client NFSv3 WRITEs */
	double upstream_calls;	/* NFSv3 calls sent upstream */
	double read_bytes;	/* bytes returned to READs */
	double hit_ratio;	/* of read_bytes, from cache or holes; 0..1 */
	double read_p50;	/* seconds, client READ arrival to reply */
	double read_p99;
	double meta_requests;	/* GETATTR, LOOKUP, ACCESS, READDIR(PLUS) */
	double meta_hit_ratio;	/* 0..1 */
	double dirty_bytes;	/* gauges at the end of the interval */
	double cached_bytes;
	unsigned exports, exports_up;
	enum stats_disk disk;	/* of the newer snapshot */
	double disk_hits;	/* pages loaded from disk; the disk_* counts */
	double disk_hit_bytes;	/* mean nothing unless disk is ON or OFF */
	double disk_checksum_failures;
	double disk_errors;
	double disk_bytes;	/* gauges at the end of the interval */
	double disk_budget;
};

/*
 * The q-quantile (0 < q < 1) of the observations between two cumulative
 * bucket arrays of HISTOGRAM_NBUCKETS counts (prev may be NULL: all of
 * cur), estimated as PromQL's histogram_quantile() does: linear
 * interpolation inside the bucket that holds the rank, 0 as the lower
 * bound of the first bucket, the highest finite bound (10 s) when the rank
 * falls in +Inf. Seconds, or -1 when there was no observation.
 */
double stats_quantile(const double *cur, const double *prev, double q);

/*
 * Fill *r with the interval from prev to s, secs seconds long. When prev
 * is NULL, comes from another daemon run (another start time) or has a
 * counter larger than s's (a reset), the interval is taken from the
 * daemon's start instead: counts are s's totals and secs becomes
 * now - s->start_time (now: Unix time), as vmstat's first line covers the
 * time since boot; r->since_start says so.
 */
void stats_interval(const struct stats_snap *s, const struct stats_snap *prev,
		    double secs, double now, struct stats_rates *r);

/* Print the column header of stats_row() rows to f. */
void stats_row_header(FILE *f);

/*
 * Print r as one line to f: as text under stats_row_header()'s columns
 * (when: the wall-clock time of the sample, shown as local HH:MM:SS), or
 * with json as one JSON object ("time" is then Unix seconds; a ratio or
 * latency with nothing to measure is null). docs/operations.md lists the
 * columns and keys.
 */
void stats_row(FILE *f, const struct stats_rates *r, double when, bool json);

/*
 * Print the summary of s to f. where names the endpoint ("127.0.0.1:9655");
 * now is the wall-clock time (seconds since the epoch) for the uptime.
 * With prev (an earlier snapshot taken interval seconds before) the
 * header and row of that interval (stats_row) are added.
 */
void stats_print(FILE *f, const struct stats_snap *s,
		 const struct stats_snap *prev, double interval,
		 const char *where, double now);

/*
 * `nfscached stats [--metrics ADDR:PORT | --config FILE] [--watch [SECS]]
 * [--interval SECS] [--count N] [--json]`; argv[0] is "stats". --count
 * is the number of samples (rows) before it exits; without it --watch
 * runs until interrupted. Returns the exit
 * status: 0, 1 when the daemon cannot be reached or answers no metrics,
 * 2 for bad usage.
 */
int stats_main(int argc, char **argv);

#endif
