/* SPDX-License-Identifier: MIT */
/*
 * stats_cmd: `nfscached stats` (stats_cmd.h).
 *
 * One pass per refresh: fetch /metrics over a fresh TCP connection
 * (HTTP/1.0, so the body ends when the daemon closes), parse the samples
 * into a struct stats_snap, print. The parser keeps only the sample names
 * listed in the table below and sums over labels it does not need (for
 * example upstream calls over procedures); everything else is skipped, so
 * new metrics never break it. Which nfscached_disk_* samples are there
 * tells the disk tier's state (stats_disk_state): a daemon without
 * cache_dir exports nfscached_disk_on alone, so its disk numbers are
 * printed as "off", never as zeros.
 *
 * --watch keeps the previous snapshot and prints the difference
 * (stats_interval): counters are deltas, gauges (dirty, cached, disk
 * bytes) are the newer values, latency quantiles come from the deltas of the
 * cumulative bucket counts. The interval's length is measured on the
 * monotonic clock between the two fetches, not assumed.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "stats_cmd.h"

#define STATS_DEFAULT_ADDR	"127.0.0.1:9655"
#define STATS_MAX_BODY		(8u << 20)	/* bytes of /metrics read */
#define STATS_IO_TIMEOUT	5		/* seconds per socket call */

/* A sample name (with the labels that select it, if any) -> its field. */
struct stats_field {
	const char *sample;	/* exact, or a prefix when it ends in '{' */
	size_t off;		/* offset of a double in struct stats_snap */
};

#define F(name, field) { name, offsetof(struct stats_snap, field) }
static const struct stats_field fields[] = {
	F("nfscached_start_time_seconds", start_time),
	F("nfscached_reads_total{result=\"hit\"}", reads[CACHE_HIT]),
	F("nfscached_reads_total{result=\"partial\"}", reads[CACHE_PARTIAL]),
	F("nfscached_reads_total{result=\"miss\"}", reads[CACHE_MISS]),
	F("nfscached_reads_total{result=\"hole\"}", reads[CACHE_HOLE]),
	F("nfscached_reads_total{result=\"coalesced\"}", reads[CACHE_COALESCED]),
	F("nfscached_reads_total{result=\"bypass\"}", reads[CACHE_BYPASS]),
	F("nfscached_read_bytes_total{source=\"cache\"}", bytes_cache),
	F("nfscached_read_bytes_total{source=\"upstream\"}", bytes_upstream),
	F("nfscached_read_bytes_total{source=\"hole\"}", bytes_hole),
	F("nfscached_upstream_read_bytes_total", upstream_read_bytes),
	F("nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"write\"}", client_writes),
	F("nfscached_client_rpcs_total{", client_calls),
	F("nfscached_upstream_rpcs_total{procedure=\"write\"}", upstream_writes),
	F("nfscached_upstream_rpcs_total{procedure=\"read\"}", upstream_reads),
	F("nfscached_upstream_rpcs_total{", upstream_calls),
	F("nfscached_upstream_errors_total", upstream_errors),
	F("nfscached_upstream_timeouts_total", upstream_timeouts),
	F("nfscached_upstream_rpc_duration_seconds_sum{", upstream_lat_sum),
	F("nfscached_upstream_rpc_duration_seconds_count{", upstream_lat_count),
	F("nfscached_client_rpcs_total{program=\"nfs3\",procedure=\"read\"}", client_reads),
	F("nfscached_meta_requests_total{", meta_requests),
	F("nfscached_cache_bytes{state=\"dirty\"}", dirty_bytes),
	F("nfscached_cache_bytes{state=\"writing\"}", dirty_bytes),
	F("nfscached_cache_bytes{state=\"unstable\"}", dirty_bytes),
	F("nfscached_cache_bytes{", cached_bytes),
	F("nfscached_cache_budget_bytes", budget_bytes),
	F("nfscached_cache_evictions_total", evictions),
	F("nfscached_nfs3_jukebox_replies_total", jukebox),
	F("nfscached_disk_on", disk_on),
	F("nfscached_disk_hits_total", disk_hits),
	F("nfscached_disk_hit_bytes_total", disk_hit_bytes),
	F("nfscached_disk_checksum_failures_total", disk_checksum_failures),
	F("nfscached_disk_errors_total", disk_errors),
	F("nfscached_disk_bytes", disk_bytes),
	F("nfscached_disk_budget_bytes", disk_budget),
};
#undef F

/* Add v to every field whose sample matches name (exact or prefix). */
static unsigned add_fields(struct stats_snap *s, const char *name, double v)
{
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *f = fields[i].sample;
		size_t len = strlen(f);
		bool prefix = f[len - 1] == '{';

		if (prefix ? strncmp(name, f, len) == 0 : strcmp(name, f) == 0) {
			*(double *)((char *)s + fields[i].off) += v;
			n++;
		}
	}
	return n;
}

/* Copy the value of label key in name's label set into out; 0 or -1. */
static int label_value(const char *name, const char *key, char *out,
		       size_t len)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "%s=\"", key);
	p = strstr(name, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = strchr(p, '"');
	if (!e || (size_t)(e - p) >= len)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = 0;
	return 0;
}

/* Add a latency _bucket sample to the cumulative counts cum[]. */
static void add_bucket(double *cum, const char *name, double v)
{
	char le[32];
	unsigned i;

	if (label_value(name, "le", le, sizeof(le)) != 0)
		return;
	if (strcmp(le, "+Inf") == 0) {
		cum[HISTOGRAM_NBOUNDS] += v;
		return;
	}
	for (i = 0; i < HISTOGRAM_NBOUNDS; i++)
		if (fabs(strtod(le, NULL) - histogram_bound(i)) < 1e-12) {
			cum[i] += v;
			return;
		}
}

/* True when label key of name has the value want. */
static bool label_is(const char *name, const char *key, const char *want)
{
	char v[32];

	return label_value(name, key, v, sizeof(v)) == 0 && strcmp(v, want) == 0;
}

/* Take in the client histogram and metadata samples; 1 if it was one. */
static unsigned parse_client_meta(struct stats_snap *s, const char *name, double v)
{
	if (strncmp(name, "nfscached_client_rpc_duration_seconds_bucket{", 45) == 0) {
		if (label_is(name, "program", "nfs3") &&
		    label_is(name, "procedure", "read"))
			add_bucket(s->read_lat_cum, name, v);
		return 1;
	}
	if (strncmp(name, "nfscached_meta_requests_total{", 30) == 0 &&
	    label_is(name, "result", "hit"))
		s->meta_hits += v;
	return 0;
}

/*
 * name with its export label taken out, into buf ("a{export="/x",b="1"}"
 * becomes "a{b="1"}", "a{export="/x"}" becomes "a"): the families kept
 * per export are summed over the exports. name itself when it has none.
 */
static const char *without_export(const char *name, char *buf, size_t len)
{
	const char *ex = strstr(name, "export=\""), *q, *rest;
	size_t n;

	if (!ex || !(q = strchr(ex + 8, '"')))
		return name;
	rest = q + 1 + (q[1] == ',');
	n = (size_t)snprintf(buf, len, "%.*s%s", (int)(ex - name), name, rest);
	if (n >= len)
		return name;
	if (n >= 2 && buf[n - 1] == '}' && buf[n - 2] == ',')
		buf[n - 2] = '}', buf[n - 1] = 0;
	n = strlen(buf);
	if (n >= 2 && buf[n - 1] == '}' && buf[n - 2] == '{')
		buf[n - 2] = 0;
	return buf;
}

/* Take in one sample line "NAME[{LABELS}] VALUE". */
static void parse_sample(struct stats_snap *s, const char *line, size_t len)
{
	char name[512], plain[512], *sp, *end;
	double v;

	if (len >= sizeof(name))
		return;
	memcpy(name, line, len);
	name[len] = 0;
	sp = strrchr(name, ' ');
	if (!sp)
		return;
	*sp = 0;
	v = strtod(sp + 1, &end);
	if (end == sp + 1)
		return;
	s->samples += add_fields(s, without_export(name, plain, sizeof(plain)),
				 v);
	if (strcmp(name, "nfscached_disk_on") == 0)
		s->disk_known = true;
	else if (strcmp(name, "nfscached_disk_budget_bytes") == 0)
		s->disk_configured = true;
	s->samples += parse_client_meta(s, name, v);
	if (strncmp(name, "nfscached_upstream_rpc_duration_seconds_bucket{", 47) == 0) {
		add_bucket(s->upstream_lat_cum, name, v);
		s->samples++;
	} else if (strncmp(name, "nfscached_upstream_up{", 22) == 0) {
		s->exports++;
		s->exports_up += v == 1;
		s->samples++;
	} else if (strncmp(name, "nfscached_build_info{", 21) == 0) {
		label_value(name, "version", s->version, sizeof(s->version));
		s->samples++;
	}
}

int stats_parse(const char *text, struct stats_snap *s)
{
	const char *p = text;

	memset(s, 0, sizeof(*s));
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len && p[len - 1] == '\r')
			len--;
		if (len && p[0] != '#')
			parse_sample(s, p, len);
		if (!nl)
			break;
		p = nl + 1;
	}
	return s->samples ? 0 : -1;
}

static const char *const disk_names[] = {
	[STATS_DISK_ABSENT] = "absent",
	[STATS_DISK_NONE] = "none",
	[STATS_DISK_OFF] = "off",
	[STATS_DISK_ON] = "on",
};

const char *stats_disk_name(enum stats_disk d)
{
	return (unsigned)d <= STATS_DISK_ON ? disk_names[d] : "?";
}

enum stats_disk stats_disk_state(const struct stats_snap *s)
{
	if (!s->disk_known)
		return STATS_DISK_ABSENT;
	if (!s->disk_configured)
		return STATS_DISK_NONE;
	return s->disk_on == 1 ? STATS_DISK_ON : STATS_DISK_OFF;
}

/* Format a of b as a percentage padded to w + 1 columns, or "-" (as
 * wide) when b is 0: nothing to measure. */
static const char *pct(double a, double b, int w, char *buf, size_t len)
{
	if (b > 0)
		snprintf(buf, len, "%*.1f%%", w, 100.0 * a / b);
	else
		snprintf(buf, len, "%*s", w + 1, "-");
	return buf;
}

/* Format a byte count as "12.3 MiB" into buf. */
static const char *human_bytes(double b, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;

	while (b >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
	return buf;
}

/* Format seconds as "1.23 ms" / "4.5 s" / "120 us" into buf. */
static const char *human_secs(double t, char *buf, size_t len)
{
	if (t < 0.001)
		snprintf(buf, len, "%.0f us", t * 1e6);
	else if (t < 1)
		snprintf(buf, len, "%.2f ms", t * 1e3);
	else
		snprintf(buf, len, "%.2f s", t);
	return buf;
}

/* Format an uptime as "3d04h", "2h05m", "4m07s" or "12s" into buf. */
static const char *human_uptime(double secs, char *buf, size_t len)
{
	unsigned long t = secs > 0 ? (unsigned long)secs : 0;

	if (t >= 86400)
		snprintf(buf, len, "%lud%02luh", t / 86400, t % 86400 / 3600);
	else if (t >= 3600)
		snprintf(buf, len, "%luh%02lum", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		snprintf(buf, len, "%lum%02lus", t / 60, t % 60);
	else
		snprintf(buf, len, "%lus", t);
	return buf;
}

/* Total client READs in s. */
static double total_reads(const struct stats_snap *s)
{
	double n = 0;

	for (int i = 0; i < CACHE_NOUTCOMES; i++)
		n += s->reads[i];
	return n;
}

/* The smallest bucket bound under which 99% of upstream calls finished,
 * or a negative number when there were none (or only past 10 s). */
static double upstream_p99(const struct stats_snap *s)
{
	double n = s->upstream_lat_cum[HISTOGRAM_NBOUNDS];

	if (n <= 0)
		return -1;
	for (unsigned i = 0; i < HISTOGRAM_NBOUNDS; i++)
		if (s->upstream_lat_cum[i] >= 0.99 * n)
			return histogram_bound(i);
	return -1;
}

/* Print the header, hit ratio and saved-bytes lines. */
static void print_reads(FILE *f, const struct stats_snap *s)
{
	double reads = total_reads(s);
	double hits = s->reads[CACHE_HIT] + s->reads[CACHE_HOLE];
	double local = s->bytes_cache + s->bytes_hole;
	double bytes = local + s->bytes_upstream;
	/* Bytes clients read beyond what crossed the upstream link: bytes a
	 * READ got from the cache after readahead fetched them did cross it. */
	double saved = bytes > s->upstream_read_bytes ?
		       bytes - s->upstream_read_bytes : 0;
	double other = s->reads[CACHE_COALESCED] + s->reads[CACHE_BYPASS];
	char b1[32], b2[32], p1[16], p2[16];

	fprintf(f, "hit ratio  %s of %.0f READs, %s of %s read\n",
		pct(hits, reads, 5, p1, sizeof(p1)), reads,
		pct(local, bytes, 0, p2, sizeof(p2)), human_bytes(bytes, b1, sizeof(b1)));
	fprintf(f, "  hits     %s of READs all from cache\n",
		pct(s->reads[CACHE_HIT], reads, 5, p1, sizeof(p1)));
	fprintf(f, "  holes    %s of READs, %s of bytes (known zeros)\n",
		pct(s->reads[CACHE_HOLE], reads, 5, p1, sizeof(p1)),
		pct(s->bytes_hole, bytes, 0, p2, sizeof(p2)));
	fprintf(f, "  partial  %s of READs (part cache, part upstream)\n",
		pct(s->reads[CACHE_PARTIAL], reads, 5, p1, sizeof(p1)));
	fprintf(f, "  misses   %s of READs", pct(s->reads[CACHE_MISS], reads, 5, p1, sizeof(p1)));
	if (other > 0)
		fprintf(f, "; %.1f%% waited on another fetch or bypassed the cache",
			100.0 * other / reads);
	fprintf(f, "\nsaved      %s of reads not fetched from upstream (%s fetched)\n",
		human_bytes(saved, b1, sizeof(b1)),
		human_bytes(s->upstream_read_bytes, b2, sizeof(b2)));
}

/* Print the writes, upstream and cache lines. */
static void print_rest(FILE *f, const struct stats_snap *s)
{
	char b1[32], b2[32];
	double p99 = upstream_p99(s);

	fprintf(f, "writes     %.0f client WRITEs -> %.0f upstream WRITEs", s->client_writes,
		s->upstream_writes);
	if (s->upstream_writes > 0 && s->client_writes >= s->upstream_writes)
		fprintf(f, " (coalescing %.2fx)", s->client_writes / s->upstream_writes);
	else if (s->upstream_writes > 0 && s->client_writes > 0)
		fprintf(f, " (split: %.2f upstream WRITEs per client WRITE, "
			"writeback_wsize)", s->upstream_writes / s->client_writes);
	fprintf(f, "; %s dirty\n", human_bytes(s->dirty_bytes, b1, sizeof(b1)));
	fprintf(f, "upstream   %.0f calls", s->upstream_calls);
	if (s->upstream_lat_count > 0)
		fprintf(f, ", mean %s", human_secs(s->upstream_lat_sum / s->upstream_lat_count,
						  b1, sizeof(b1)));
	if (p99 > 0)
		fprintf(f, ", 99%% within %s", human_secs(p99, b2, sizeof(b2)));
	fprintf(f, "; %.0f errors (%.0f timeouts), %.0f JUKEBOX replies\n",
		s->upstream_errors, s->upstream_timeouts, s->jukebox);
	fprintf(f, "cache      %s held of %s budget, %.0f evictions\n",
		human_bytes(s->cached_bytes, b1, sizeof(b1)),
		human_bytes(s->budget_bytes, b2, sizeof(b2)), s->evictions);
}

/* Print the disk tier's line: its numbers only when it is configured. */
static void print_disk(FILE *f, const struct stats_snap *s)
{
	enum stats_disk st = stats_disk_state(s);
	char b1[32], b2[32], b3[32];

	if (st == STATS_DISK_ABSENT) {
		fputs("disk       absent (this daemon reports no disk tier)\n", f);
		return;
	}
	if (st == STATS_DISK_NONE) {
		fputs("disk       off (no cache_dir)\n", f);
		return;
	}
	fprintf(f, "disk       %s %s held of %s budget; %.0f hits (%s), "
		"%.0f checksum failures, %.0f errors\n",
		st == STATS_DISK_ON ? "on:" : "OFF after a disk error (the log says why):",
		human_bytes(s->disk_bytes, b1, sizeof(b1)),
		human_bytes(s->disk_budget, b2, sizeof(b2)), s->disk_hits,
		human_bytes(s->disk_hit_bytes, b3, sizeof(b3)),
		s->disk_checksum_failures, s->disk_errors);
}

double stats_quantile(const double *cur, const double *prev, double q)
{
	double n = cur[HISTOGRAM_NBOUNDS] - (prev ? prev[HISTOGRAM_NBOUNDS] : 0);
	double rank = q * n, below = 0;

	if (!(n > 0))
		return -1;
	for (unsigned i = 0; i < HISTOGRAM_NBOUNDS; i++) {
		double c = cur[i] - (prev ? prev[i] : 0);
		double lo = i ? histogram_bound(i - 1) : 0;

		if (c >= rank) {
			if (c <= below)
				return lo;
			return lo + (histogram_bound(i) - lo) * (rank - below) / (c - below);
		}
		below = c;
	}
	return histogram_bound(HISTOGRAM_NBOUNDS - 1);
}

/* True when some counter of s is below prev's (the daemon restarted). */
static bool counters_went_back(const struct stats_snap *s,
			       const struct stats_snap *prev)
{
	return s->start_time != prev->start_time ||
	       s->client_calls < prev->client_calls ||
	       s->upstream_calls < prev->upstream_calls ||
	       s->read_lat_cum[HISTOGRAM_NBOUNDS] < prev->read_lat_cum[HISTOGRAM_NBOUNDS] ||
	       s->meta_requests < prev->meta_requests ||
	       s->disk_hits < prev->disk_hits ||
	       s->bytes_cache + s->bytes_hole + s->bytes_upstream <
	       prev->bytes_cache + prev->bytes_hole + prev->bytes_upstream;
}

/* Ratio a / b, or -1 when b is 0. */
static double ratio(double a, double b)
{
	return b > 0 ? a / b : -1;
}

void stats_interval(const struct stats_snap *s, const struct stats_snap *prev,
		    double secs, double now, struct stats_rates *r)
{
	static const struct stats_snap zero;
	double local;

	memset(r, 0, sizeof(*r));
	if (!prev || counters_went_back(s, prev)) {
		prev = &zero;
		r->since_start = true;
		secs = s->start_time > 0 ? now - s->start_time : 0;
	}
	r->secs = secs > 0 ? secs : 0;
	r->reads = s->client_reads - prev->client_reads;
	r->writes = s->client_writes - prev->client_writes;
	r->upstream_calls = s->upstream_calls - prev->upstream_calls;
	local = s->bytes_cache + s->bytes_hole - prev->bytes_cache - prev->bytes_hole;
	r->read_bytes = local + s->bytes_upstream - prev->bytes_upstream;
	r->hit_ratio = ratio(local, r->read_bytes);
	r->read_p50 = stats_quantile(s->read_lat_cum, prev->read_lat_cum, 0.5);
	r->read_p99 = stats_quantile(s->read_lat_cum, prev->read_lat_cum, 0.99);
	r->meta_requests = s->meta_requests - prev->meta_requests;
	r->meta_hit_ratio = ratio(s->meta_hits - prev->meta_hits, r->meta_requests);
	r->dirty_bytes = s->dirty_bytes;
	r->cached_bytes = s->cached_bytes;
	r->exports = s->exports;
	r->exports_up = s->exports_up;
	r->disk = stats_disk_state(s);
	r->disk_hits = s->disk_hits - prev->disk_hits;
	r->disk_hit_bytes = s->disk_hit_bytes - prev->disk_hit_bytes;
	r->disk_checksum_failures = s->disk_checksum_failures -
				    prev->disk_checksum_failures;
	r->disk_errors = s->disk_errors - prev->disk_errors;
	r->disk_bytes = s->disk_bytes;
	r->disk_budget = s->disk_budget;
}

void stats_row_header(FILE *f)
{
	fprintf(f, "%-8s %9s %9s %9s %6s %8s %8s %6s %8s %8s %7s %8s %5s\n",
		"time", "READ/s", "WRITE/s", "upcalls/s", "hit%", "rd_p50ms",
		"rd_p99ms", "meta%", "dirty", "cached", "disk/s", "diskheld",
		"up");
}

/* Format a byte count in 8 columns or fewer: "980.5M", "12K", "0". */
static const char *short_bytes(double b, char *buf, size_t len)
{
	static const char units[] = "BKMGTP";
	unsigned u = 0;

	while (b >= 1024 && u + 1 < sizeof(units) - 1) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", b, units[u]);
	return buf;
}

/* Format v scaled by mul with prec decimals, or none when v is negative. */
static const char *opt_num(double v, double mul, int prec, const char *none,
			   char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "%s", none);
	else
		snprintf(buf, len, "%.*f", prec, v * mul);
	return buf;
}

/* The disk_* keys of r's JSON object (from its leading comma), into buf:
 * numbers only for a configured tier, null otherwise. */
static const char *disk_json(const struct stats_rates *r, double d, char *buf,
			     size_t len)
{
	bool has = r->disk == STATS_DISK_ON || r->disk == STATS_DISK_OFF;

	if (!has) {
		snprintf(buf, len, ",\"disk\":\"%s\",\"disk_on\":false,"
			 "\"disk_hits\":null,\"disk_hits_per_second\":null,"
			 "\"disk_hit_bytes\":null,\"disk_bytes\":null,"
			 "\"disk_budget_bytes\":null,"
			 "\"disk_checksum_failures\":null,\"disk_errors\":null",
			 stats_disk_name(r->disk));
		return buf;
	}
	snprintf(buf, len, ",\"disk\":\"%s\",\"disk_on\":%s,"
		 "\"disk_hits\":%.0f,\"disk_hits_per_second\":%.3f,"
		 "\"disk_hit_bytes\":%.0f,\"disk_bytes\":%.0f,"
		 "\"disk_budget_bytes\":%.0f,\"disk_checksum_failures\":%.0f,"
		 "\"disk_errors\":%.0f", stats_disk_name(r->disk),
		 r->disk == STATS_DISK_ON ? "true" : "false", r->disk_hits,
		 r->disk_hits / d, r->disk_hit_bytes, r->disk_bytes,
		 r->disk_budget, r->disk_checksum_failures, r->disk_errors);
	return buf;
}

/* Print r as one JSON object on a line. */
static void row_json(FILE *f, const struct stats_rates *r, double when)
{
	char h[24], p50[24], p99[24], m[24], dk[512];
	double d = r->secs > 0 ? r->secs : 1;

	fprintf(f, "{\"time\":%.3f,\"interval_seconds\":%.3f,\"since_start\":%s,"
		"\"reads\":%.0f,\"reads_per_second\":%.3f,"
		"\"writes\":%.0f,\"writes_per_second\":%.3f,"
		"\"upstream_calls\":%.0f,\"upstream_calls_per_second\":%.3f,"
		"\"read_bytes\":%.0f,\"hit_ratio_bytes\":%s,"
		"\"read_p50_seconds\":%s,\"read_p99_seconds\":%s,"
		"\"meta_requests\":%.0f,\"meta_hit_ratio\":%s,"
		"\"dirty_bytes\":%.0f,\"cached_bytes\":%.0f,"
		"\"exports\":%u,\"exports_up\":%u%s}\n",
		when, r->secs, r->since_start ? "true" : "false",
		r->reads, r->reads / d, r->writes, r->writes / d,
		r->upstream_calls, r->upstream_calls / d, r->read_bytes,
		opt_num(r->hit_ratio, 1, 6, "null", h, sizeof(h)),
		opt_num(r->read_p50, 1, 6, "null", p50, sizeof(p50)),
		opt_num(r->read_p99, 1, 6, "null", p99, sizeof(p99)),
		r->meta_requests,
		opt_num(r->meta_hit_ratio, 1, 6, "null", m, sizeof(m)),
		r->dirty_bytes, r->cached_bytes, r->exports, r->exports_up,
		disk_json(r, d, dk, sizeof(dk)));
}

/* Format the disk columns of a text row: hits per second and bytes held,
 * "off" in both when no tier is configured, "OFF" held when it was
 * turned off. */
static void disk_cols(const struct stats_rates *r, double d, char *rate,
		      char *held, size_t len)
{
	if (r->disk != STATS_DISK_ON && r->disk != STATS_DISK_OFF) {
		snprintf(rate, len, "off");
		snprintf(held, len, "off");
		return;
	}
	snprintf(rate, len, "%.1f", r->disk_hits / d);
	if (r->disk == STATS_DISK_OFF)
		snprintf(held, len, "OFF");
	else
		short_bytes(r->disk_bytes, held, len);
}

void stats_row(FILE *f, const struct stats_rates *r, double when, bool json)
{
	char t[16], h[16], p50[16], p99[16], m[16], b1[16], b2[16], up[16];
	char dr[32], dh[32];
	double d = r->secs > 0 ? r->secs : 1;
	time_t tt = (time_t)when;
	struct tm tm;

	if (json) {
		row_json(f, r, when);
		return;
	}
	localtime_r(&tt, &tm);
	strftime(t, sizeof(t), "%H:%M:%S", &tm);
	snprintf(up, sizeof(up), "%u/%u", r->exports_up, r->exports);
	disk_cols(r, d, dr, dh, sizeof(dr));
	fprintf(f, "%-8s %9.1f %9.1f %9.1f %6s %8s %8s %6s %8s %8s %7s %8s %5s\n", t,
		r->reads / d, r->writes / d, r->upstream_calls / d,
		opt_num(r->hit_ratio, 100, 1, "-", h, sizeof(h)),
		opt_num(r->read_p50, 1e3, 3, "-", p50, sizeof(p50)),
		opt_num(r->read_p99, 1e3, 3, "-", p99, sizeof(p99)),
		opt_num(r->meta_hit_ratio, 100, 1, "-", m, sizeof(m)),
		short_bytes(r->dirty_bytes, b1, sizeof(b1)),
		short_bytes(r->cached_bytes, b2, sizeof(b2)), dr, dh, up);
}

void stats_print(FILE *f, const struct stats_snap *s,
		 const struct stats_snap *prev, double interval,
		 const char *where, double now)
{
	char up[32];

	fprintf(f, "nfscached %s at %s", s->version[0] ? s->version : "?", where);
	if (s->start_time > 0)
		fprintf(f, ", up %s", human_uptime(now - s->start_time, up, sizeof(up)));
	if (s->exports)
		fprintf(f, "; upstream %s (%u of %u export%s up)",
			s->exports_up == s->exports ? "up" : "DOWN", s->exports_up,
			s->exports, s->exports == 1 ? "" : "s");
	fputc('\n', f);
	print_reads(f, s);
	print_rest(f, s);
	print_disk(f, s);
	if (prev) {
		struct stats_rates r;

		stats_interval(s, prev, interval, now, &r);
		fputc('\n', f);
		stats_row_header(f);
		stats_row(f, &r, now, false);
	}
}

/* Connect to host:port (numeric) with timeouts; the fd, or -1 with err. */
static int stats_connect(const char *host, int port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct timeval tv = { STATS_IO_TIMEOUT, 0 };
	char ps[8];
	int fd = -1, rc;

	snprintf(ps, sizeof(ps), "%d", port);
	if ((rc = getaddrinfo(host, ps, &hints, &ai)) != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
			snprintf(err, errlen, "cannot connect to %s:%d: %s", host,
				 port, strerror(errno));
			close(fd);
			fd = -1;
		}
	} else {
		snprintf(err, errlen, "socket: %s", strerror(errno));
	}
	freeaddrinfo(ai);
	return fd;
}

/* Read everything from fd into a new NUL-terminated buffer; NULL on error. */
static char *read_all(int fd, size_t *lenp, char *err, size_t errlen)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t n;

	while (buf && (n = read(fd, buf + len, cap - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "reading the reply: %s", strerror(errno));
			goto fail;
		}
		len += (size_t)n;
		if (len == cap) {
			if (cap >= STATS_MAX_BODY) {
				snprintf(err, errlen, "reply over %u bytes", STATS_MAX_BODY);
				goto fail;
			}
			cap *= 2;
			if (!(nb = realloc(buf, cap + 1)))
				goto fail;
			buf = nb;
		}
	}
	if (!buf)
		return NULL;
	buf[len] = 0;
	*lenp = len;
	return buf;
fail:
	free(buf);
	return NULL;
}

/*
 * GET /metrics from host:port. Returns the body (caller frees), or NULL
 * with a reason in err.
 */
static char *stats_fetch(const char *host, int port, char *err, size_t errlen)
{
	char req[300], *buf, *body;
	size_t len = 0;
	int fd = stats_connect(host, port, err, errlen);

	if (fd < 0)
		return NULL;
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: %s\r\n"
		 "Connection: close\r\n\r\n", host);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		snprintf(err, errlen, "sending the request: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	buf = read_all(fd, &len, err, errlen);
	close(fd);
	if (!buf)
		return NULL;
	if (strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 8, " 200", 4) != 0 ||
	    !(body = strstr(buf, "\r\n\r\n"))) {
		snprintf(err, errlen, "%s:%d answered no metrics (%.40s)", host,
			 port, buf);
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, len - (size_t)(body + 4 - buf) + 1);
	return buf;
}

/* Options of the subcommand. */
struct stats_opts {
	const char *metrics;
	const char *config;
	bool watch;
	bool json;
	double interval;
	long count;
};

/* Print the subcommand's usage to f. */
static void stats_usage(FILE *f)
{
	fprintf(f, "usage: nfscached stats [--metrics ADDR:PORT | --config FILE]\n"
		   "                       [--watch [SECS]] [--interval SECS] [--count N] [--json]\n");
}

/* Parse s whole as a number into *v; false if it is not one. */
static bool whole_number(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end;
}

/* Take --watch's optional SECS: "--watch=S", or a number as the next word. */
static int watch_arg(int argc, char **argv, struct stats_opts *o)
{
	o->watch = true;
	if (optarg)
		return whole_number(optarg, &o->interval) ? 0 : -1;
	if (optind < argc && whole_number(argv[optind], &o->interval))
		optind++;
	return 0;
}

/* Parse the subcommand's flags; -1 on bad usage. */
static int stats_flags(int argc, char **argv, struct stats_opts *o)
{
	static const struct option longopts[] = {
		{ "metrics", required_argument, NULL, 'M' },
		{ "config", required_argument, NULL, 'c' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "interval", required_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->interval = 2;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+c:n:wh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'M': o->metrics = optarg; break;
		case 'c': o->config = optarg; break;
		case 'w':
			if (watch_arg(argc, argv, o) != 0)
				return -1;
			break;
		case 'j': o->json = true; break;
		case 'n':
			if (!whole_number(optarg, &o->interval))
				return -1;
			break;
		case 'k':
			/* A count of SAMPLES, 1 or more. */
			if (!whole_number(optarg, &v) || v < 1 || v > 1e9 ||
			    v != (double)(long)v)
				return -1;
			o->count = (long)v;
			break;
		case 'h': stats_usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc || (o->metrics && o->config) || !(o->interval >= 0.1))
		return -1;
	return 0;
}

/*
 * Work out where the metrics are: --metrics, the --config file's
 * metrics_listen, the default config file's, or 127.0.0.1:9655. A
 * wildcard address becomes loopback. 0, or -1 with err.
 */
static int stats_target(const struct stats_opts *o, char *host, size_t hlen,
			int *port, char *err, size_t errlen)
{
	const char *cfile = o->config;
	struct conf *c = NULL;
	struct stat st;
	int rc;

	if (!o->metrics && !cfile && stat(CONF_DEFAULT_PATH, &st) == 0)
		cfile = CONF_DEFAULT_PATH;
	if (!o->metrics && cfile) {
		if (conf_load_file(cfile, &c, err, errlen) != 0)
			return -1;
		if (!c->metrics_listen[0]) {
			snprintf(err, errlen, "%s: metrics_listen is \"\": the metrics endpoint is off",
				 cfile);
			conf_free(&c);
			return -1;
		}
	}
	rc = conf_parse_hostport(o->metrics ? o->metrics :
				 c ? c->metrics_listen : STATS_DEFAULT_ADDR,
				 host, hlen, port, err, errlen);
	conf_free(&c);
	if (rc == 0 && strcmp(host, "0.0.0.0") == 0)
		snprintf(host, hlen, "127.0.0.1");
	else if (rc == 0 && strcmp(host, "::") == 0)
		snprintf(host, hlen, "::1");
	return rc;
}

/* Unix time in seconds, with fractions. */
static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds on the monotonic clock. */
static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep until the monotonic clock reads t (fractions allowed). */
static void sleep_until(double t)
{
	double secs = t - mono_now();
	struct timespec ts;

	if (secs <= 0)
		return;
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Fetch and parse one snapshot into *s; 0, or 1 with the reason on stderr. */
static int stats_sample(const char *host, int port, struct stats_snap *s)
{
	char err[600];
	char *body = stats_fetch(host, port, err, sizeof(err));

	if (!body || stats_parse(body, s) != 0) {
		fprintf(stderr, "nfscached stats: %s\n",
			body ? "the endpoint serves no nfscached metrics" : err);
		free(body);
		return 1;
	}
	free(body);
	return 0;
}

/* Print one --watch sample: the redrawn summary and its row on a terminal,
 * else the row alone (the header before the first text row). */
static void watch_print(const struct stats_opts *o, bool tty, const char *where,
			const struct stats_snap *s, const struct stats_snap *prev,
			double secs, long i)
{
	struct stats_rates r;
	double now = wall_now();

	stats_interval(s, prev, secs, now, &r);
	if (tty && !o->json) {
		/* Home, redraw, clear what the last frame left below: the
		 * screen is never blanked, so it does not flicker. */
		fputs("\033[H", stdout);
		stats_print(stdout, s, NULL, 0, where, now);
		fputc('\n', stdout);
		stats_row_header(stdout);
	} else if (i == 0 && !o->json) {
		stats_row_header(stdout);
	}
	stats_row(stdout, &r, now, o->json);
	if (tty && !o->json)
		fputs("\033[J", stdout);
	fflush(stdout);
}

/*
 * Take a sample for --watch into *cur; while the daemon does not answer
 * (restarting, say), say so once on stderr and try again every interval,
 * up to the samples left. True once one came; *gap is then set when it
 * came after a failure, so the next row counts from the daemon's start.
 */
static bool watch_sample(const struct stats_opts *o, const char *host,
			 int port, long *i, struct stats_snap *cur, bool *gap)
{
	bool said = false;

	*gap = false;
	for (;;) {
		if (stats_sample(host, port, cur) == 0)
			return true;
		if (!said)
			fprintf(stderr, "nfscached stats: no answer; trying "
				"again every %g s\n", o->interval);
		said = *gap = true;
		if (o->count > 0 && ++*i >= o->count)
			return false;
		sleep_until(mono_now() + o->interval);
	}
}

/* Sample every o->interval seconds until o->count samples (or forever). */
static int stats_watch(const struct stats_opts *o, const char *host, int port,
		       const char *where)
{
	struct stats_snap cur, prev;
	bool tty = isatty(1), gap;
	double t0, t1;
	long i = 0;

	if (tty && !o->json)
		fputs("\033[H\033[2J", stdout);	/* once, at the start */
	t0 = mono_now();
	if (stats_sample(host, port, &cur) != 0)
		return 1;
	watch_print(o, tty, where, &cur, NULL, 0, 0);
	for (i = 1; o->count <= 0 || i < o->count; i++) {
		prev = cur;
		sleep_until(t0 + o->interval);
		if (!watch_sample(o, host, port, &i, &cur, &gap))
			return 1;
		t1 = mono_now();
		watch_print(o, tty, where, &cur, gap ? NULL : &prev, t1 - t0, i);
		t0 = t1;
	}
	return 0;
}

int stats_main(int argc, char **argv)
{
	struct stats_opts o;
	struct stats_snap cur;
	char host[64], err[600], where[300];
	int port;

	if (stats_flags(argc, argv, &o) != 0) {
		stats_usage(stderr);
		return 2;
	}
	if (stats_target(&o, host, sizeof(host), &port, err, sizeof(err)) != 0) {
		fprintf(stderr, "nfscached stats: %s\n", err);
		return 1;
	}
	snprintf(where, sizeof(where), strchr(host, ':') ? "[%s]:%d" : "%s:%d",
		 host, port);
	if (o.json && !o.watch)
		o.count = 1;
	if (o.watch || o.json)
		return stats_watch(&o, host, port, where);
	if (stats_sample(host, port, &cur) != 0)
		return 1;
	stats_print(stdout, &cur, NULL, 0, where, (double)time(NULL));
	return 0;
}
