/* SPDX-License-Identifier: MIT */
/*
 * metrics: the HTTP endpoint (libevent evhttp) serving GET /metrics in the
 * Prometheus text format (version 0.0.4) and GET /healthz (every export,
 * or ?export=PATH for one: docs/operations.md "Health checks"). Counters are
 * pulled from each module's *_stats_get() at scrape time. With the test
 * clock on (mclock.h) it also serves POST /debug/clock/advance and
 * /debug/disk/gate (the disk tier's test gate, disk_tier.h).
 */
#ifndef NFSCACHED_DAEMON_METRICS_H
#define NFSCACHED_DAEMON_METRICS_H

#include <stddef.h>

/*
 * One row of a module's metric declarations (the *_METRICS(X, A) lists
 * next to each stats struct: cache.h, meta.h, readahead.h, upstream.h,
 * server.h, service.h, stale.h, writeback.h, nfs3_meta.h, nfs3_ops.h,
 * procstat.h), made by metrics.c's table builder. HACKING.md "Adding a
 * counter".
 */
enum metrics_value {
	METRICS_U64,		/* uint64_t, printed as an integer */
	METRICS_BOOL,		/* bool, printed 0 or 1 */
	METRICS_DOUBLE,		/* double seconds: a counter to the
				 * microsecond, a gauge to the millisecond */
};

struct metrics_row {
	const char *name;	/* sample name: "family" or "family{k=\"v\"}" */
	const char *type;	/* Prometheus type: "counter" or "gauge" */
	const char *help;	/* NULL: more series of the previous row's
				 * family (no HELP/TYPE lines of its own) */
	size_t offset;		/* of the value in the module's stats struct */
	enum metrics_value value;
	unsigned n;		/* 0: one value; else an array of n
				 * uint64_t, one series per index ... */
	const char *label;	/* ... labelled label="label_value(i)" */
	const char *(*label_value)(unsigned i);	/* NULL skips index i */
};

/* A module's declared rows and its name (for tests and error texts). */
struct metrics_table {
	const char *module;	/* e.g. "cache" */
	const struct metrics_row *rows;
	size_t nrows;
};

/* Every module's table, in the order /metrics renders them. */
extern const struct metrics_table metrics_tables[];
extern const size_t metrics_ntables;

struct daemon;
struct metrics;
struct evbuffer;

/*
 * Listen on listen ("ADDR:PORT", IPv6 as "[ADDR]:PORT") on d's loop.
 * Returns the endpoint (free with metrics_free), or NULL with a reason in
 * err[0..errlen).
 */
struct metrics *metrics_start(struct daemon *d, const char *listen, char *err,
			      size_t errlen);

/* Append the whole exposition of d's metrics to out. */
void metrics_render(struct daemon *d, struct evbuffer *out);

/*
 * Append the series of rows[0..n) to out, their values read from the
 * stats struct at base (the struct the rows were declared for): HELP and
 * TYPE before each family's first row, then one line per value in the
 * text format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats).
 */
void metrics_render_rows(struct evbuffer *out, const struct metrics_row *rows,
			 size_t n, const void *base);

/*
 * metrics_render_rows for a family per export: each row's HELP and TYPE
 * once, then its series for each of the nexp exports, the export's path
 * as the first label (`nfscached_reads_total{export="/data",result="hit"}`),
 * the values of export i read from the stats struct at bases[i].
 */
void metrics_render_rows_by_export(struct evbuffer *out,
				   const struct metrics_row *rows, size_t n,
				   const void *const *bases,
				   const char *const *exports, size_t nexp);

/* Add every value rows[0..n) declare in src's stats struct to dst's. */
void metrics_add_rows(const struct metrics_row *rows, size_t n, void *dst,
		      const void *src);

/* Stop listening, free *m and clear the caller's pointer. */
void metrics_free(struct metrics **m);

#endif
