/* SPDX-License-Identifier: MIT */
/*
 * metrics: Prometheus exposition of the counters every module owns. Each
 * module declares its counters once, next to its stats struct, in a
 * *_METRICS(X, A) list (name, Prometheus type, help text, the field); the
 * table builder below turns every list into a const table of rows with
 * the field's offset, and metrics_render_rows renders a table over the
 * struct its module's *_stats_get() fills at scrape time. What a row
 * cannot say is rendered by hand here: histograms, the families by
 * dispatch row, values derived from several fields
 * (nfscached_cache_bytes{state}, nfscached_meta_entries), the two-label
 * nfscached_meta_requests_total, per-export state and configuration.
 * Names follow Prometheus conventions: nfscached_ prefix, _total for
 * counters, _seconds and _bytes for units (unit.test_metrics_table).
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "cache.h"
#include "daemon.h"
#include "disk_tier.h"
#include "lcommit.h"
#include "log.h"
#include "looplag.h"
#include "metrics.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_read.h"
#include "nfs3_write.h"
#include "acl_ops.h"
#include "nlm_ops.h"
#include "peername.h"
#include "procstat.h"
#include "reload.h"
#include "server.h"
#include "service.h"
#include "upstream.h"
#include "stale.h"
#include "writeback.h"

struct metrics {
	struct evhttp *http;
	struct accept_guard *guard;	/* EMFILE: pause, log once a second */
	struct daemon *d;
};

/* Write a metric's HELP and TYPE lines. */
static void head(struct evbuffer *o, const char *name, const char *type,
		 const char *help)
{
	evbuffer_add_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help,
			    name, type);
}

/* Write a metric without labels. */
static void scalar(struct evbuffer *o, const char *name, const char *type,
		   const char *help, unsigned long long v)
{
	head(o, name, type, help);
	evbuffer_add_printf(o, "%s %llu\n", name, v);
}

/*
 * The label sets the declarations name (the A rows' label set column):
 * label_SET(i) is index i's label value, NULL for an index not exported.
 */
static const char *label_nfs3_proc(unsigned p)
{
	return p < UPSTREAM_NPROCS ? nfs3_proc_label(p) : NULL;
}

/* The procedures stale_on_error answers (stale.h). */
static const char *label_stale_proc(unsigned p)
{
	switch (p) {
	case NFSPROC3_GETATTR: case NFSPROC3_LOOKUP: case NFSPROC3_ACCESS:
	case NFSPROC3_READ: case NFSPROC3_FSSTAT: case NFSPROC3_FSINFO:
	case NFSPROC3_PATHCONF:
		return label_nfs3_proc(p);
	default:
		return NULL;
	}
}

/* Label of a connection close reason (server.h). */
static const char *label_close_reason(unsigned i)
{
	static const char *const names[] = {
#define X(e, s) s,
		CONN_CLOSE_REASONS(X)
#undef X
	};

	return i < CLOSE_NREASONS ? names[i] : NULL;
}

/* Label of an NFSv3 reply status (server.h). */
static const char *label_nfs3_status(unsigned i)
{
	return nfs3_status_label(i);
}

/* Label of an RPC rejection reason (server.h). */
static const char *label_reject_reason(unsigned i)
{
	static const char *const names[] = {
#define X(e, s) s,
		RPC_REJECT_REASONS(X)
#undef X
	};

	return i < REJECT_NREASONS ? names[i] : NULL;
}

/* Label of a READ's cache outcome (cache.h). */
static const char *label_cache_outcome(unsigned i)
{
	return i < CACHE_NOUTCOMES ?
	       cache_outcome_name((enum cache_outcome)i) : NULL;
}

/* Label of an invalidation cause (cache.h). */
static const char *label_inval_cause(unsigned i)
{
	return i < CACHE_INVAL_NCAUSES ?
	       cache_inval_cause_name((enum cache_inval_cause)i) : NULL;
}

/*
 * The table builder: ROW_X and ROW_A turn a module's X and A declarations
 * into struct metrics_row, for the stats struct named ROW_T. The value's
 * kind comes from the field's own C type, so a row cannot misread it.
 */
#define ROW_VALUE(e) _Generic((e), uint64_t: METRICS_U64, \
			      bool: METRICS_BOOL, double: METRICS_DOUBLE)
#define ROW_X(t, f, k, n, h) \
	{ n, #k, h, offsetof(ROW_T, f), ROW_VALUE(((ROW_T *)0)->f), 0, NULL, \
	  NULL },
#define ROW_A(f, len, k, n, l, ls, h) \
	{ n, #k, h, offsetof(ROW_T, f), METRICS_U64, len, l, label_##ls },
#define ROWS(name, list) \
	static const struct metrics_row name[] = { list(ROW_X, ROW_A) }

#define ROW_T struct procstat
ROWS(procstat_rows, PROCSTAT_METRICS);
#undef ROW_T
#define ROW_T struct service_stats
ROWS(service_rows, SERVICE_METRICS);
#undef ROW_T
#define ROW_T struct server_stats
ROWS(server_rows, SERVER_METRICS);
#undef ROW_T
#define ROW_T struct upstream_stats
ROWS(upstream_rows, UPSTREAM_METRICS);
#undef ROW_T
#define ROW_T struct cache_stats
ROWS(cache_rows, CACHE_METRICS);
#undef ROW_T
#define ROW_T struct ra_stats
ROWS(ra_rows, RA_METRICS);
#undef ROW_T
#define ROW_T struct writeback_stats
ROWS(writeback_rows, WRITEBACK_METRICS);
ROWS(wb_room_rows, WRITEBACK_ROOM_METRICS);
ROWS(wb_export_rows, WRITEBACK_EXPORT_METRICS);
#undef ROW_T
#define ROW_T struct stale_stats
ROWS(stale_rows, STALE_METRICS);
#undef ROW_T
#define ROW_T struct nfs3_meta_stats
ROWS(nfs3_meta_rows, NFS3_META_METRICS);
#undef ROW_T
#define ROW_T struct meta_stats
ROWS(meta_rows, META_METRICS);
#undef ROW_T
#define ROW_T struct nfs3_read_stats
ROWS(nfs3_read_rows, NFS3_READ_METRICS);
#undef ROW_T
#define ROW_T struct nfs3_ops_stats
ROWS(nfs3_ops_rows, NFS3_OPS_METRICS);
#undef ROW_T
#define ROW_T struct nfs3_write_stats
ROWS(nfs3_write_rows, NFS3_WRITE_METRICS);
#undef ROW_T
#define ROW_T struct nlm_stats
ROWS(nlm_rows, NLM_METRICS);
#undef ROW_T
#define ROW_T struct nfsacl_stats
ROWS(nfsacl_rows, NFSACL_METRICS);
#undef ROW_T

#define NROWS(a) (sizeof(a) / sizeof((a)[0]))
#define TABLE(m, rows) { m, rows, NROWS(rows) }

const struct metrics_table metrics_tables[] = {
	TABLE("procstat", procstat_rows),
	TABLE("service", service_rows),
	TABLE("server", server_rows),
	TABLE("upstream", upstream_rows),
	TABLE("nfs3_read", nfs3_read_rows),
	TABLE("nfs3_ops", nfs3_ops_rows),
	TABLE("cache", cache_rows),
	TABLE("nfs3_write", nfs3_write_rows),
	TABLE("writeback", writeback_rows),
	TABLE("stale", stale_rows),
	TABLE("readahead", ra_rows),
	TABLE("nfs3_meta", nfs3_meta_rows),
	TABLE("meta", meta_rows),
	TABLE("nlm", nlm_rows),
	TABLE("nfsacl", nfsacl_rows),
};
const size_t metrics_ntables = NROWS(metrics_tables);

/*
 * Write row r's series name with export's label (NULL: none) and the
 * label pair extra ("" for none) into buf: name, name{...} or the row's
 * own name{labels} with them put first.
 */
static void series_name(const struct metrics_row *r, const char *export,
			const char *extra, char *buf, size_t len)
{
	int flen = (int)strcspn(r->name, "{");
	const char *own = r->name[flen] ? r->name + flen + 1 : "";
	char ex[300] = "";

	if (export)
		snprintf(ex, sizeof(ex), "export=\"%s\"", export);
	if (!*ex && !*extra && !*own) {
		snprintf(buf, len, "%s", r->name);
		return;
	}
	snprintf(buf, len, "%.*s{%s%s%s%s%s", flen, r->name, ex,
		 *ex && (*extra || *own) ? "," : "", extra,
		 *extra && *own ? "," : "", *own ? own : "}");
}

/* Write row r's value(s), read from the stats struct at base, with the
 * label export="..." first when export is not NULL. */
static void row_values(struct evbuffer *o, const struct metrics_row *r,
		       const void *base, const char *export)
{
	const char *p = (const char *)base + r->offset;
	char name[512], lab[160];
	uint64_t u;
	double v;
	bool b;

	for (unsigned i = 0; i < r->n; i++) {
		const char *lv = r->label_value(i);
		uint64_t x;

		memcpy(&x, p + i * sizeof(x), sizeof(x));
		if (!lv)
			continue;
		snprintf(lab, sizeof(lab), "%s=\"%s\"", r->label, lv);
		series_name(r, export, lab, name, sizeof(name));
		evbuffer_add_printf(o, "%s %llu\n", name, (unsigned long long)x);
	}
	if (r->n)
		return;
	series_name(r, export, "", name, sizeof(name));
	switch (r->value) {
	case METRICS_U64:
		memcpy(&u, p, sizeof(u));
		evbuffer_add_printf(o, "%s %llu\n", name, (unsigned long long)u);
		break;
	case METRICS_BOOL:
		memcpy(&b, p, sizeof(b));
		evbuffer_add_printf(o, "%s %d\n", name, b ? 1 : 0);
		break;
	case METRICS_DOUBLE:
		memcpy(&v, p, sizeof(v));
		evbuffer_add_printf(o, strcmp(r->type, "counter") == 0 ?
				    "%s %.6f\n" : "%s %.3f\n", name, v);
		break;
	}
}

/* Write row r's HELP and TYPE lines, if it is its family's first row. */
static void row_head(struct evbuffer *o, const struct metrics_row *r)
{
	int flen = (int)strcspn(r->name, "{");

	if (r->help)
		evbuffer_add_printf(o, "# HELP %.*s %s\n# TYPE %.*s %s\n",
				    flen, r->name, r->help, flen, r->name,
				    r->type);
}

void metrics_render_rows(struct evbuffer *o, const struct metrics_row *rows,
			 size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		row_head(o, &rows[i]);
		row_values(o, &rows[i], base, NULL);
	}
}

void metrics_render_rows_by_export(struct evbuffer *o,
				   const struct metrics_row *rows, size_t n,
				   const void *const *bases,
				   const char *const *exports, size_t nexp)
{
	for (size_t i = 0; i < n; i++) {
		row_head(o, &rows[i]);
		for (size_t k = 0; k < nexp; k++)
			row_values(o, &rows[i], bases[k], exports[k]);
	}
}

void metrics_add_rows(const struct metrics_row *rows, size_t n, void *dst,
		      const void *src)
{
	for (size_t i = 0; i < n; i++) {
		const struct metrics_row *r = &rows[i];
		char *d = (char *)dst + r->offset;
		const char *s = (const char *)src + r->offset;
		uint64_t a, b;
		double x, y;

		if (r->value == METRICS_DOUBLE) {
			memcpy(&x, d, sizeof(x));
			memcpy(&y, s, sizeof(y));
			x += y;
			memcpy(d, &x, sizeof(x));
			continue;
		}
		if (r->value == METRICS_BOOL)
			continue;
		for (unsigned k = 0; k < (r->n ? r->n : 1); k++) {
			memcpy(&a, d + k * sizeof(a), sizeof(a));
			memcpy(&b, s + k * sizeof(b), sizeof(b));
			a += b;
			memcpy(d + k * sizeof(a), &a, sizeof(a));
		}
	}
}

/* Render module table rows (a static array) from the stats struct *st. */
#define RENDER(o, rows, st) metrics_render_rows(o, rows, NROWS(rows), st)

/*
 * Write the series of histogram h of metric name: cumulative _bucket lines
 * (le = each bound, then +Inf), _sum and _count. labels is the label list
 * without braces, e.g. procedure="read".
 */
static void histogram_lines(struct evbuffer *o, const char *name,
			    const char *labels, const struct histogram *h)
{
	unsigned long long cum = 0;

	for (unsigned i = 0; i < HISTOGRAM_NBUCKETS; i++) {
		cum += h->buckets[i];
		if (i < HISTOGRAM_NBOUNDS)
			evbuffer_add_printf(o, "%s_bucket{%s,le=\"%g\"} %llu\n",
					    name, labels, histogram_bound(i), cum);
		else
			evbuffer_add_printf(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n",
					    name, labels, cum);
	}
	evbuffer_add_printf(o, "%s_sum{%s} %.9f\n%s_count{%s} %llu\n", name,
			    labels, h->sum, name, labels,
			    (unsigned long long)h->count);
}

/* Write per-procedure client call counters and latency histograms (by
 * dispatch row, a length known at run time: rendered by hand). */
static void render_client(struct evbuffer *o, const struct proc_table *t,
			  const struct server_stats *st)
{
	const struct dispatch_entry *rows = t->rows;
	char labels[96];

	head(o, "nfscached_client_rpcs_total", "counter",
	     "Client RPC calls received, by program and procedure.");
	for (size_t i = 0; i < t->count; i++)
		evbuffer_add_printf(o,
			"nfscached_client_rpcs_total{program=\"%s\",procedure=\"%s\"} %llu\n",
			rows[i].program, rows[i].name,
			(unsigned long long)st->calls[i]);
	head(o, "nfscached_client_rpc_duration_seconds", "histogram",
	     "Time from a client call's arrival to its reply, by procedure "
	     "(replies from the duplicate request cache are not timed).");
	for (size_t i = 0; i < t->count; i++) {
		snprintf(labels, sizeof(labels), "program=\"%s\",procedure=\"%s\"",
			 rows[i].program, rows[i].name);
		histogram_lines(o, "nfscached_client_rpc_duration_seconds",
				labels, &st->latency[i]);
	}
}

/* Write the upstream call latency histograms, by export and procedure. */
static void render_upstream_latency(struct evbuffer *o, struct daemon *d,
				    const struct upstream_stats *st)
{
	char labels[384];

	head(o, "nfscached_upstream_rpc_duration_seconds", "histogram",
	     "Time from sending an NFSv3 call upstream to its reply, by "
	     "export and procedure (calls that got no reply are not timed).");
	for (size_t i = 0; i < d->nexports; i++)
		for (int p = 0; p < UPSTREAM_NPROCS; p++) {
			snprintf(labels, sizeof(labels),
				 "export=\"%s\",procedure=\"%s\"",
				 d->exports[i]->conf->path,
				 nfs3_proc_label((uint32_t)p));
			histogram_lines(o, "nfscached_upstream_rpc_duration_seconds",
					labels, &st[i].latency[p]);
		}
}

/* Write the event loop's lag histogram (looplag.h), labelled by loop. */
static void render_loop_lag(struct evbuffer *o, struct daemon *d)
{
	char labels[32];

	head(o, "nfscached_loop_lag_seconds", "histogram",
	     "How late the event loop ran a timer due every 100 ms: time "
	     "spent in other work, or blocked, before it got to it, by loop.");
	for (unsigned k = 0; k < LOOPS_MAX && d->lag[k]; k++) {
		struct histogram h;

		looplag_read(d->lag[k], &h);
		snprintf(labels, sizeof(labels), "loop=\"%u\"",
			 looplag_loop(d->lag[k]));
		histogram_lines(o, "nfscached_loop_lag_seconds", labels, &h);
	}
}

/* The exports' paths and their stats structs (n of size sz at st) as the
 * arrays metrics_render_rows_by_export takes; false when out of memory. */
static bool by_export(struct daemon *d, const void *st, size_t sz,
		      const void ***bases, const char ***paths)
{
	*bases = calloc(d->nexports + 1, sizeof(**bases));
	*paths = calloc(d->nexports + 1, sizeof(**paths));
	if (!*bases || !*paths) {
		free(*bases);
		free(*paths);
		return false;
	}
	for (size_t i = 0; i < d->nexports; i++) {
		(*bases)[i] = (const char *)st + i * sz;
		(*paths)[i] = d->exports[i]->conf->path;
	}
	return true;
}

/* Render rows per export from the n stats structs of size sz at st. */
static void render_exports(struct evbuffer *o, struct daemon *d,
			   const struct metrics_row *rows, size_t n,
			   const void *st, size_t sz)
{
	const void **bases;
	const char **paths;

	if (!by_export(d, st, sz, &bases, &paths))
		return;
	metrics_render_rows_by_export(o, rows, n, bases, paths, d->nexports);
	free(bases);
	free(paths);
}

/* Write what the proxy measured of each export's link: its latency
 * floor and READ delivery rate (upstream.h), and the readahead window
 * they size (nfs3_read_ra_params). */
static void render_upstream_link(struct evbuffer *o, struct daemon *d)
{
	head(o, "nfscached_upstream_latency_floor_seconds", "gauge",
	     "Shortest small-call reply latency of the last 10 to 20 s; 0 unknown.");
	for (size_t i = 0; i < d->nexports; i++)
		evbuffer_add_printf(o, "nfscached_upstream_latency_floor_seconds{export=\"%s\"} %.9g\n",
				    d->exports[i]->conf->path,
				    upcall_latency_floor(&d->exports[i]->upc));
	head(o, "nfscached_upstream_read_rate_bytes_per_second", "gauge",
	     "READ bytes received per second over a READ's flight, highest of the last 10 to 20 s; 0 unknown.");
	for (size_t i = 0; i < d->nexports; i++)
		evbuffer_add_printf(o, "nfscached_upstream_read_rate_bytes_per_second{export=\"%s\"} %.9g\n",
				    d->exports[i]->conf->path,
				    upcall_read_rate(&d->exports[i]->upc));
	head(o, "nfscached_readahead_window_bytes", "gauge",
	     "Readahead window a stream grows to now, sized by the link.");
	for (size_t i = 0; i < d->nexports; i++) {
		struct ra_params rp;

		nfs3_read_ra_params(d, &d->exports[i]->upc, &rp);
		evbuffer_add_printf(o, "nfscached_readahead_window_bytes{export=\"%s\"} %llu\n",
				    d->exports[i]->conf->path,
				    (unsigned long long)(rp.max_window ?
					ra_full_window(&rp) : 0));
	}
}

/* Write the upstream counters per export (its connections summed), and
 * per-export state. */
static void render_upstream(struct evbuffer *o, struct daemon *d)
{
	struct upstream_stats *st = calloc(d->nexports + 1, sizeof(*st));
	struct upstream_stats one;

	if (!st)
		return;
	for (size_t i = 0; i < d->nexports; i++)
		for (unsigned k = 0; k < d->exports[i]->lanes.n; k++) {
			upstream_stats_get(d->exports[i]->lanes.lane[k], &one);
			metrics_add_rows(upstream_rows, NROWS(upstream_rows),
					 &st[i], &one);
			for (int p = 0; p < UPSTREAM_NPROCS; p++)
				histogram_merge(&st[i].latency[p],
						&one.latency[p]);
		}
	render_exports(o, d, upstream_rows, NROWS(upstream_rows), st,
		       sizeof(*st));
	render_upstream_latency(o, d, st);
	free(st);
	head(o, "nfscached_upstream_up", "gauge",
	     "1 when the export's upstream connection is up.");
	for (size_t i = 0; i < d->nexports; i++)
		evbuffer_add_printf(o, "nfscached_upstream_up{export=\"%s\"} %d\n",
				    d->exports[i]->conf->path,
				    upcall_state(&d->exports[i]->upc) == UPSTREAM_UP);
	render_upstream_link(o, d);
}

/*
 * Write the page cache's families: the bytes by write-back state (derived
 * from valid_bytes and wb_bytes[], by hand), the declared rows, readahead
 * and the page size (a parameter, not a counter).
 */
static void render_cache(struct evbuffer *o, struct daemon *d)
{
	struct cache_stats cs;

	cache_stats_get(d->cache, &cs);
	head(o, "nfscached_cache_bytes", "gauge",
	     "Valid bytes held in cache pages, by state.");
	evbuffer_add_printf(o, "nfscached_cache_bytes{state=\"clean\"} %llu\n"
			    "nfscached_cache_bytes{state=\"dirty\"} %llu\n"
			    "nfscached_cache_bytes{state=\"writing\"} %llu\n"
			    "nfscached_cache_bytes{state=\"unstable\"} %llu\n",
			    (unsigned long long)(cs.valid_bytes -
				cs.wb_bytes[WB_DIRTY] - cs.wb_bytes[WB_WRITING] -
				cs.wb_bytes[WB_UNSTABLE]),
			    (unsigned long long)cs.wb_bytes[WB_DIRTY],
			    (unsigned long long)cs.wb_bytes[WB_WRITING],
			    (unsigned long long)cs.wb_bytes[WB_UNSTABLE]);
	RENDER(o, cache_rows, &cs);
	RENDER(o, ra_rows, &cs.ra);
	scalar(o, "nfscached_cache_page_size_bytes", "gauge",
	       "Configured page size.", cache_page_size(d->cache));
}

/* Write a gauge holding a double. */
static void gauge_f(struct evbuffer *o, const char *name, const char *help,
		    double v)
{
	head(o, name, "gauge", help);
	evbuffer_add_printf(o, "%s %.9g\n", name, v);
}

/* Write one per-export configuration value with an extra label. */
static void export_value(struct evbuffer *o, const char *name,
			 const char *export, const char *label, double v)
{
	evbuffer_add_printf(o, "%s{export=\"%s\"%s} %.9g\n", name, export,
			    label, v);
}
/* Write the configuration in force as gauges. */
static void render_config(struct evbuffer *o, const struct conf *c)
{
	static const char *const ac[] = { "acregmin", "acregmax", "acdirmin",
					  "acdirmax" };
	char lab[48];

	scalar(o, "nfscached_config_exports", "gauge", "Exports configured.",
	       c->nexports);
	scalar(o, "nfscached_config_max_transfer_bytes", "gauge",
	       "Configured cap on READ and WRITE sizes (max_transfer).",
	       c->max_transfer);
	scalar(o, "nfscached_config_writeback_wsize_bytes", "gauge",
	       "Largest upstream WRITE write-back sends (writeback_wsize).",
	       c->writeback_wsize);
	gauge_f(o, "nfscached_config_upstream_timeout_seconds",
		"Time an upstream call may take (upstream_timeout).",
		c->upstream_timeout);
	scalar(o, "nfscached_config_start_without_upstream", "gauge",
	       "1 when clients are served (JUKEBOX) while the upstream is down.",
	       c->start_without_upstream);
	scalar(o, "nfscached_config_drc_entries", "gauge",
	       "Capacity of the duplicate request cache (drc_entries).",
	       c->drc_entries);
	scalar(o, "nfscached_config_max_requests_per_conn", "gauge",
	       "Calls in flight per connection before its reads pause.",
	       c->max_requests_per_conn);
	head(o, "nfscached_config_export_info", "gauge",
	     "One series per export: its id and upstream URL.");
	for (size_t i = 0; i < c->nexports; i++)
		evbuffer_add_printf(o, "nfscached_config_export_info{export=\"%s\",id=\"%u\",upstream=\"%s\"} 1\n",
				    c->exports[i].path, c->exports[i].id,
				    c->exports[i].upstream);
	head(o, "nfscached_config_export_clients", "gauge",
	     "Entries of the export's clients list (0 = everyone may mount it).");
	for (size_t i = 0; i < c->nexports; i++)
		export_value(o, "nfscached_config_export_clients", c->exports[i].path,
			     "", (double)c->exports[i].nclients);
	head(o, "nfscached_config_export_root_squash", "gauge",
	     "1 when the export maps uid 0 to anonuid.");
	for (size_t i = 0; i < c->nexports; i++)
		export_value(o, "nfscached_config_export_root_squash",
			     c->exports[i].path, "", c->exports[i].root_squash);
	head(o, "nfscached_config_attr_cache_seconds", "gauge",
	     "Attribute cache timeouts of the export, by setting.");
	for (size_t i = 0; i < c->nexports; i++) {
		const double v[] = { c->exports[i].acregmin, c->exports[i].acregmax,
				     c->exports[i].acdirmin, c->exports[i].acdirmax };

		for (int k = 0; k < 4; k++) {
			snprintf(lab, sizeof(lab), ",setting=\"%s\"", ac[k]);
			export_value(o, "nfscached_config_attr_cache_seconds",
				     c->exports[i].path, lab, v[k]);
		}
	}
}

/* Write what reloads did to the exports (reload.c). */
static void render_export_changes(struct evbuffer *o, const struct daemon *d)
{
	head(o, "nfscached_config_export_changes_total", "counter",
	     "Exports added, removed and re-pointed by reloads.");
	evbuffer_add_printf(o, "nfscached_config_export_changes_total{change=\"added\"} %llu\n"
			    "nfscached_config_export_changes_total{change=\"removed\"} %llu\n"
			    "nfscached_config_export_changes_total{change=\"repointed\"} %llu\n",
			    (unsigned long long)d->exports_added,
			    (unsigned long long)d->exports_removed,
			    (unsigned long long)d->exports_repointed);
	scalar(o, "nfscached_config_exports_retiring", "gauge",
	       "Exports a reload removed or re-pointed still writing back to "
	       "their old upstream.", reload_retiring(d));
}

/* Write the metadata cache's hits and misses (one family with two labels,
 * by hand), entries and memory. */
static void render_meta(struct evbuffer *o, const struct daemon *d)
{
	struct nfs3_meta_stats ms;

	nfs3_meta_stats_get(d, &ms);
	head(o, "nfscached_meta_requests_total", "counter",
	     "Metadata calls answered from the cache (hit) or forwarded "
	     "upstream (miss), by procedure.");
	for (int p = 0; p < NFS3_META_NPROCS; p++)
		evbuffer_add_printf(o,
			"nfscached_meta_requests_total{procedure=\"%s\",result=\"hit\"} %llu\n"
			"nfscached_meta_requests_total{procedure=\"%s\",result=\"miss\"} %llu\n",
			nfs3_meta_proc_name((enum nfs3_meta_proc)p),
			(unsigned long long)ms.hits[p],
			nfs3_meta_proc_name((enum nfs3_meta_proc)p),
			(unsigned long long)ms.misses[p]);
	RENDER(o, nfs3_meta_rows, &ms);
	scalar(o, "nfscached_meta_entries", "gauge",
	       "Cached name entries plus entries of cached listings.",
	       ms.cache.names + ms.cache.listing_entries);
	RENDER(o, meta_rows, &ms.cache);
}

/* Write the refusals of one export's client rules (export "" for MNTs of
 * paths under no export: reason no_export only). */
static void render_refusals_of(struct evbuffer *o, const char *export,
			       const struct refusal_counts *rc)
{
	for (int c = 0; c < REFUSAL_NCALLS; c++)
		for (int r = 0; r < REFUSAL_NREASONS; r++) {
			bool other = !*export;

			if (other != (r == REFUSAL_NO_EXPORT) ||
			    (other && c != REFUSAL_MOUNT))
				continue;
			evbuffer_add_printf(o, "nfscached_client_refusals_total{export=\"%s\",call=\"%s\",reason=\"%s\"} %llu\n",
					    export, refusal_call_name(c),
					    refusal_reason_name(r),
					    (unsigned long long)rc->n[c][r]);
		}
}

/* Write the client rules' refusals and the host-name lookups. */
static void render_refusals(struct evbuffer *o, struct daemon *d)
{
	struct peername_stats pn;

	head(o, "nfscached_client_refusals_total", "counter",
	     "MNTs and NFS calls refused by an export's client rules, by reason.");
	for (size_t i = 0; i < d->nexports; i++)
		render_refusals_of(o, d->exports[i]->conf->path,
				   &d->exports[i]->refused);
	render_refusals_of(o, "", &d->refused_other);
	peername_stats_get(d->names, &pn);
	head(o, "nfscached_client_name_lookups_total", "counter",
	     "Host names of client addresses looked up for wildcard clients entries, by result.");
	evbuffer_add_printf(o, "nfscached_client_name_lookups_total{result=\"found\"} %llu\n"
			    "nfscached_client_name_lookups_total{result=\"none\"} %llu\n",
			    (unsigned long long)pn.found,
			    (unsigned long long)pn.none);
	scalar(o, "nfscached_client_names_cached", "gauge",
	       "Client addresses whose host name is known or being looked up.",
	       pn.cached);
}

/* Render rows per export from stats structs of size sz that get fills
 * for an export id. */
static void render_by_id(struct evbuffer *o, struct daemon *d,
			 const struct metrics_row *rows, size_t n, size_t sz,
			 void (*get)(const struct daemon *d, unsigned id,
				     void *st))
{
	char *st = calloc(d->nexports + 1, sz);

	if (!st)
		return;
	for (size_t i = 0; i < d->nexports; i++)
		get(d, d->exports[i]->conf->id, st + i * sz);
	render_exports(o, d, rows, n, st, sz);
	free(st);
}

/* Render d's READ counters per export (nfs3_read_stats_export). */
static void render_read(struct evbuffer *o, struct daemon *d)
{
	struct nfs3_read_stats *st = calloc(d->nexports + 1, sizeof(*st));

	if (!st)
		return;
	for (size_t i = 0; i < d->nexports; i++)
		nfs3_read_stats_export(d, d->exports[i]->conf->id, &st[i]);
	render_exports(o, d, nfs3_read_rows, NROWS(nfs3_read_rows), st,
		       sizeof(*st));
	free(st);
}

/* writeback_stats_export for render_by_id. */
static void get_writeback(const struct daemon *d, unsigned id, void *st)
{
	writeback_stats_export(d, id, st);
}

void metrics_render(struct daemon *d, struct evbuffer *o)
{
	struct server_stats st;
	struct service_stats sv;
	struct writeback_stats wb;
	struct stale_stats ss;
	struct nlm_stats ls;
	struct nfsacl_stats as;
	struct nfs3_ops_stats ns;
	struct nfs3_write_stats ws;
	struct procstat ps;

	head(o, "nfscached_build_info", "gauge", "Build information.");
	evbuffer_add_printf(o, "nfscached_build_info{version=\"%s\",libevent=\"%s\"} 1\n",
			    NFSCACHED_VERSION, event_get_version());
	procstat_get(&ps);
	RENDER(o, procstat_rows, &ps);
	service_stats_get(d, &sv);
	RENDER(o, service_rows, &sv);
	render_config(o, d->conf);
	render_export_changes(o, d);
	render_refusals(o, d);
	if (server_stats_get(d->server, &st) == 0) {
		render_client(o, d->procs, &st);
		RENDER(o, server_rows, &st);
		server_stats_release(&st);
	}
	render_loop_lag(o, d);
	render_upstream(o, d);
	nfs3_ops_stats_get(d, &ns);
	render_read(o, d);
	RENDER(o, nfs3_ops_rows, &ns);
	render_cache(o, d);
	disk_tier_render(d, o);
	lcommit_render(d, o);
	nfs3_write_stats_get(d, &ws);
	RENDER(o, nfs3_write_rows, &ws);
	writeback_stats_get(d, &wb);
	RENDER(o, wb_room_rows, &wb);
	render_by_id(o, d, wb_export_rows, NROWS(wb_export_rows),
		     sizeof(struct writeback_stats), get_writeback);
	head(o, "nfscached_writeback_oldest_dirty_age_seconds", "gauge",
	     "Age of the oldest bytes written by clients and not yet stable upstream (0 when none).");
	evbuffer_add_printf(o, "nfscached_writeback_oldest_dirty_age_seconds %.3f\n",
			    writeback_oldest_dirty_age(d, daemon_now()));
	stale_stats_get(d, &ss);
	RENDER(o, stale_rows, &ss);
	render_meta(o, d);
	nlm_stats_get(d, &ls);
	RENDER(o, nlm_rows, &ls);
	nfsacl_stats_get(d, &as);
	RENDER(o, nfsacl_rows, &as);
}

/*
 * Send body as req's reply with code and reason. A HEAD request gets the
 * headers a GET would (Content-Length included) and no body, as RFC 9110
 * s9.3.2 asks; evhttp itself would send the body.
 */
static void http_reply(struct evhttp_request *req, int code, const char *reason,
		       struct evbuffer *body)
{
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		char len[32];

		snprintf(len, sizeof(len), "%zu", evbuffer_get_length(body));
		evhttp_add_header(evhttp_request_get_output_headers(req),
				  "Content-Length", len);
		evbuffer_drain(body, evbuffer_get_length(body));
	}
	evhttp_send_reply(req, code, reason, body);
}

/* True (after answering 501, as evhttp does for a method it does not
 * allow) unless req is a GET or a HEAD. */
static bool refuse_method(struct evhttp_request *req)
{
	enum evhttp_cmd_type c = evhttp_request_get_command(req);

	if (c == EVHTTP_REQ_GET || c == EVHTTP_REQ_HEAD)
		return false;
	evhttp_send_error(req, HTTP_NOTIMPLEMENTED, NULL);
	return true;
}

/* GET or HEAD /metrics. */
static void metrics_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evbuffer *out;

	if (refuse_method(req))
		return;
	if (!(out = evbuffer_new())) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	metrics_render(m->d, out);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; version=0.0.4; charset=utf-8");
	http_reply(req, HTTP_OK, "OK", out);
	evbuffer_free(out);
}

/* The export whose client path is path, or NULL. Borrowed. */
static const struct export_rt *export_by_path(const struct daemon *d,
					      const char *path)
{
	for (size_t i = 0; i < d->nexports; i++)
		if (strcmp(d->exports[i]->conf->path, path) == 0)
			return d->exports[i];
	return NULL;
}

/* Add "upstream down" and why its first connection last failed, on one
 * line (control characters of the reason made spaces), to o. */
static void down_reason(struct evbuffer *o, const struct export_rt *ex)
{
	const char *why = ex->lanes.n ? upstream_last_error(ex->lanes.lane[0]) : "";
	char line[256];

	snprintf(line, sizeof(line), "%s", why ? why : "");
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	evbuffer_add_printf(o, line[0] ? "upstream down: %s\n" : "upstream down\n",
			    line);
}

/*
 * The answer of /healthz?export=path, one line in o: 200 "ok" while the
 * export's upstream is up; 200 "ok stale: ..." while it is not but
 * stale_on_error > 0 (cached files are answered from expired state,
 * stale.h); 503 "upstream down[: why]" otherwise; 404 "no export PATH"
 * for a path no export has (exact match of the client path).
 */
static int healthz_export(const struct daemon *d, const char *path,
			  struct evbuffer *o)
{
	const struct export_rt *ex = export_by_path(d, path);

	if (!ex) {
		evbuffer_add_printf(o, "no export %.*s\n", 1024, path);
		return HTTP_NOTFOUND;
	}
	if (upcall_state(&ex->upc) == UPSTREAM_UP) {
		evbuffer_add_printf(o, "ok\n");
		return HTTP_OK;
	}
	if (d->conf->stale_on_error > 0) {
		evbuffer_add_printf(o, "ok stale: upstream down, cached data "
				    "served for %g s past expiry (stale_on_error)\n",
				    d->conf->stale_on_error);
		return HTTP_OK;
	}
	down_reason(o, ex);
	return 503;
}

/* The answer of /healthz, one line in o: 200 "ok" while every export's
 * upstream is up, else 503 "upstream down". */
static int healthz_all(const struct daemon *d, struct evbuffer *o)
{
	for (size_t i = 0; i < d->nexports; i++)
		if (upcall_state(&d->exports[i]->upc) != UPSTREAM_UP) {
			evbuffer_add_printf(o, "upstream down\n");
			return 503;
		}
	evbuffer_add_printf(o, "ok\n");
	return HTTP_OK;
}

/*
 * GET or HEAD /healthz (every export) or /healthz?export=PATH (that
 * export only; the value URL-decoded, '+' a space): healthz_all,
 * healthz_export. Other query parameters are ignored; a query string
 * evhttp cannot parse (a key without '=') gets 400. docs/operations.md
 * "Health checks".
 */
static void healthz_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	const char *qs = strchr(evhttp_request_get_uri(req), '?'), *path = NULL;
	struct evkeyvalq q;
	struct evbuffer *out;
	int code;

	if (refuse_method(req))
		return;
	if (!(out = evbuffer_new())) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	TAILQ_INIT(&q);
	if (qs && evhttp_parse_query_str(qs + 1, &q) != 0) {
		evbuffer_add_printf(out, "bad query string: want export=PATH\n");
		code = HTTP_BADREQUEST;
	} else if ((path = evhttp_find_header(&q, "export")))
		code = healthz_export(m->d, path, out);
	else
		code = healthz_all(m->d, out);
	evhttp_clear_headers(&q);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; charset=utf-8");
	http_reply(req, code, code == HTTP_OK ? "OK" : code == HTTP_NOTFOUND ?
		   "Not Found" : code == HTTP_BADREQUEST ? "Bad Request" :
		   "Service Unavailable", out);
	evbuffer_free(out);
}

/* True if req came from a loopback address (127.0.0.0/8 or ::1). */
static bool from_loopback(struct evhttp_request *req)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	char *host = NULL;	/* borrowed from c */
	ev_uint16_t port;

	if (c)
		evhttp_connection_get_peer(c, &host, &port);
	return host && (strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0);
}

/*
 * Send 405 unless req's method is one of methods, then 403 unless it came
 * from loopback: true when req may go on (else the error was sent).
 */
static bool debug_allowed(struct evhttp_request *req, int methods)
{
	if (!(evhttp_request_get_command(req) & methods)) {
		evhttp_send_error(req, 405, NULL);
		return false;
	}
	if (!from_loopback(req)) {
		evhttp_send_error(req, 403, NULL);
		return false;
	}
	return true;
}

/* Copy query parameter key of req's URI to out; false if absent or long. */
static bool query_arg(struct evhttp_request *req, const char *key, char *out,
		      size_t outlen)
{
	struct evkeyvalq q;
	const char *qs = strchr(evhttp_request_get_uri(req), '?'), *v;
	bool ok = false;

	TAILQ_INIT(&q);
	if (qs && evhttp_parse_query_str(qs + 1, &q) == 0 &&
	    (v = evhttp_find_header(&q, key)) && strlen(v) < outlen) {
		strcpy(out, v);
		ok = true;
	}
	evhttp_clear_headers(&q);
	return ok;
}

/* Send 200 with the text of out, or 500 when out is NULL; frees out. */
static void debug_reply(struct evhttp_request *req, struct evbuffer *out)
{
	if (!out) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evhttp_send_reply(req, HTTP_OK, "OK", out);
	evbuffer_free(out);
}

/*
 * POST /debug/clock/advance?seconds=S, test clock only (mclock.h; the
 * path exists only then): move the daemon's clock forward by S seconds,
 * fire the timers due by then, answer 200 "now SECONDS\n". 403 unless
 * from loopback, 400 for a missing or out-of-range S, 405 for another
 * method. docs/operations.md, "Test clock".
 */
static void clock_advance_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evbuffer *out;
	char v[64], *end;
	double s = 0;
	bool ok = false;

	if (!debug_allowed(req, EVHTTP_REQ_POST))
		return;
	if (query_arg(req, "seconds", v, sizeof(v))) {
		s = strtod(v, &end);
		ok = end != v && !*end;
	}
	if (ok)		/* what the other loops were sent until now */
		server_catch_up_loops(m->d->server);
	if (!ok || mclock_advance(m->d->base, s) != 0) {
		evhttp_send_error(req, HTTP_BADREQUEST, NULL);
		return;
	}
	server_sweep_loops(m->d->server);	/* the other loops' timeouts */
	if ((out = evbuffer_new()))
		evbuffer_add_printf(out, "now %.6f\n", mclock_now());
	debug_reply(req, out);
}

/*
 * /debug/disk/gate, test clock only (the path exists only then): the disk
 * tier's test gate (disk_tier_gate). POST ?action=close makes the tier's
 * worker threads hold the disk work they take before touching the disk;
 * POST ?action=open releases it; GET (or HEAD), without an action,
 * changes nothing. Each answers 200 "gate closed\nheld N\n" (or "gate
 * open"), N the workers holding work at the gate now (0..2). 403 unless
 * from loopback, 400 for a POST without action=close or action=open, 404
 * when no disk tier is open (cache_dir unset), 405 for another method or
 * a GET with an action. docs/operations.md, "Test clock".
 */
static void disk_gate_cb(struct evhttp_request *req, void *arg)
{
	enum disk_tier_gate_action a = DISK_TIER_GATE_STATUS;
	bool post = evhttp_request_get_command(req) == EVHTTP_REQ_POST;
	struct evbuffer *out;
	struct metrics *m = arg;
	bool has = false, closed;
	unsigned held;
	char v[16];

	if (!debug_allowed(req, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST))
		return;
	has = query_arg(req, "action", v, sizeof(v));
	if (post && has && strcmp(v, "close") == 0)
		a = DISK_TIER_GATE_CLOSE;
	else if (post && has && strcmp(v, "open") == 0)
		a = DISK_TIER_GATE_OPEN;
	else if (post || has) {
		evhttp_send_error(req, post ? HTTP_BADREQUEST : 405, NULL);
		return;
	}
	if (disk_tier_gate(m->d, a, &closed, &held) != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, "no disk tier");
		return;
	}
	if ((out = evbuffer_new()))
		evbuffer_add_printf(out, "gate %s\nheld %u\n",
				    closed ? "closed" : "open", held);
	debug_reply(req, out);
}

/*
 * POST /debug/loop/stall?ms=N, test clock only (the path exists only
 * then): block the event loop for N ms of the real clock (1..10000), as a
 * blocking call on the loop would, then answer 200 "stalled N\n": the
 * test of nfscached_loop_lag_seconds. 403 unless from loopback, 400 for a
 * missing or out-of-range N, 405 for another method. docs/operations.md,
 * "Test clock".
 */
static void loop_stall_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out;
	char v[16], *end;
	unsigned long ms = 0;
	bool ok = false;

	(void)arg;
	if (!debug_allowed(req, EVHTTP_REQ_POST))
		return;
	if (query_arg(req, "ms", v, sizeof(v))) {
		ms = strtoul(v, &end, 10);
		ok = end != v && !*end && ms >= 1 && ms <= 10000;
	}
	if (!ok) {
		evhttp_send_error(req, HTTP_BADREQUEST, NULL);
		return;
	}
	looplag_stall((unsigned)ms);
	if ((out = evbuffer_new()))
		evbuffer_add_printf(out, "stalled %lu\n", ms);
	debug_reply(req, out);
}

/* Limits of one metrics request: its header lines (a scraper sends a few
 * hundred bytes), its body (only the test clock's POSTs have one, a few
 * bytes), and the seconds a connection may take to send or read one. */
#define METRICS_MAX_HEADERS 8192
#define METRICS_MAX_BODY 4096
#define METRICS_TIMEOUT_S 30

struct metrics *metrics_start(struct daemon *d, const char *listen, char *err,
			      size_t errlen)
{
	struct metrics *m = calloc(1, sizeof(*m));
	char host[256];
	const char *colon = strrchr(listen, ':');
	struct evhttp_bound_socket *bound;
	size_t hl;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!colon || colon == listen || (hl = (size_t)(colon - listen)) >= sizeof(host)) {
		snprintf(err, errlen, "metrics_listen \"%s\" is not ADDR:PORT", listen);
		goto fail;
	}
	memcpy(host, listen, hl);
	host[hl] = 0;
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	m->d = d;
	m->http = evhttp_new(d->base);
	if (!m->http ||
	    !(bound = evhttp_bind_socket_with_handle(m->http, host,
						     (ev_uint16_t)atoi(colon + 1)))) {
		snprintf(err, errlen, "cannot listen for metrics on %s: %s",
			 listen, strerror(errno));
		goto fail;
	}
	m->guard = accept_guard_new(d->base,
				    evhttp_bound_socket_get_listener(bound),
				    "the metrics listener", NULL);
	if (!m->guard) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
				   (mclock_test_enabled() ? EVHTTP_REQ_POST : 0));
	/* Any local user can connect: bound what one request may make us
	 * hold (evhttp buffers headers and body whole, unbounded by
	 * default) and how long a connection may take. */
	evhttp_set_max_headers_size(m->http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(m->http, METRICS_MAX_BODY);
	evhttp_set_timeout(m->http, METRICS_TIMEOUT_S);
	evhttp_set_cb(m->http, "/metrics", metrics_cb, m);
	evhttp_set_cb(m->http, "/healthz", healthz_cb, m);
	if (mclock_test_enabled()) {
		evhttp_set_cb(m->http, "/debug/clock/advance", clock_advance_cb, m);
		evhttp_set_cb(m->http, "/debug/disk/gate", disk_gate_cb, m);
		evhttp_set_cb(m->http, "/debug/loop/stall", loop_stall_cb, m);
		log_warn("NFSCACHED_TEST_CLOCK=1: test clock on; POST "
			 "/debug/clock/advance moves time, POST "
			 "/debug/disk/gate holds disk work, POST "
			 "/debug/loop/stall blocks the loop (tests only)");
	}
	return m;
fail:
	accept_guard_free(&m->guard);
	if (m->http)
		evhttp_free(m->http);
	free(m);
	return NULL;
}

void metrics_free(struct metrics **mp)
{
	struct metrics *m = mp ? *mp : NULL;

	if (!m)
		return;
	accept_guard_free(&m->guard);
	evhttp_free(m->http);
	free(m);
	*mp = NULL;
}
