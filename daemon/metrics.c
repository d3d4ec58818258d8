/* SPDX-License-Identifier: MIT */
/*
 * metrics: Prometheus exposition of the counters every module owns. Each
 * metric is declared once below with its name, type and help text; the
 * values come from server_stats_get, upstream_stats_get, nfs3_ops_stats_get
 * and drc_count at scrape time. Names follow Prometheus conventions:
 * nfscached_ prefix, _total for counters, _seconds and _bytes for units.
 */
#include <sys/queue.h>

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
#include "dispatch.h"
#include "log.h"
#include "metrics.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_write.h"
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

/* Write per-procedure client call counters and latency histograms. */
static void render_client(struct evbuffer *o, const struct server_stats *st)
{
	char labels[96];

	head(o, "nfscached_client_rpcs_total", "counter",
	     "Client RPC calls received, by program and procedure.");
	for (size_t i = 0; i < dispatch_count; i++)
		evbuffer_add_printf(o,
			"nfscached_client_rpcs_total{program=\"%s\",procedure=\"%s\"} %llu\n",
			dispatch_rows[i].program, dispatch_rows[i].name,
			(unsigned long long)st->calls[i]);
	head(o, "nfscached_client_rpc_duration_seconds", "histogram",
	     "Time from a client call's arrival to its reply, by procedure "
	     "(replies from the duplicate request cache are not timed).");
	for (size_t i = 0; i < dispatch_count; i++) {
		snprintf(labels, sizeof(labels), "program=\"%s\",procedure=\"%s\"",
			 dispatch_rows[i].program, dispatch_rows[i].name);
		histogram_lines(o, "nfscached_client_rpc_duration_seconds",
				labels, &st->latency[i]);
	}
}

/* Write connection and RPC-level rejection counters. */
static void render_server(struct evbuffer *o, const struct server_stats *st)
{
	static const char *const close_names[] = {
#define X(e, s) s,
		CONN_CLOSE_REASONS(X)
#undef X
	};
	static const char *const reject_names[] = {
#define X(e, s) s,
		RPC_REJECT_REASONS(X)
#undef X
	};

	scalar(o, "nfscached_connections_accepted_total", "counter",
	       "Client TCP connections accepted.", st->connections_accepted);
	scalar(o, "nfscached_connections_open", "gauge",
	       "Client TCP connections open now.", st->connections_open);
	scalar(o, "nfscached_connections_max", "gauge",
	       "Client connections allowed at once (max_connections, capped by "
	       "the descriptor limit).", st->max_connections);
	scalar(o, "nfscached_accept_errors_total", "counter",
	       "accept() failures on the NFS and MOUNT listeners (EMFILE...).",
	       st->accept_errors);
	head(o, "nfscached_connections_closed_total", "counter",
	     "Client TCP connections closed, by reason.");
	for (int i = 0; i < CLOSE_NREASONS; i++)
		evbuffer_add_printf(o, "nfscached_connections_closed_total{reason=\"%s\"} %llu\n",
				    close_names[i], (unsigned long long)st->closed[i]);
	head(o, "nfscached_rpc_rejected_total", "counter",
	     "Client calls rejected at the RPC level, by reason.");
	for (int i = 0; i < REJECT_NREASONS; i++)
		evbuffer_add_printf(o, "nfscached_rpc_rejected_total{reason=\"%s\"} %llu\n",
				    reject_names[i], (unsigned long long)st->rejected[i]);
	scalar(o, "nfscached_rpc_records_oversize_total", "counter",
	       "Client RPC records over max_record_size (each closed its connection).",
	       st->records_oversize);
	scalar(o, "nfscached_requests_inflight", "gauge",
	       "Client calls being served now.", st->requests_inflight);
	scalar(o, "nfscached_backpressure_pauses_total", "counter",
	       "Times a connection stopped reading because of its limits.",
	       st->reads_paused);
	scalar(o, "nfscached_drc_hits_total", "counter",
	       "Retransmitted non-idempotent calls answered from the duplicate request cache.",
	       st->drc_hits);
}

/* Write the upstream call latency histograms, by procedure. */
static void render_upstream_latency(struct evbuffer *o,
				    const struct upstream_stats *sum)
{
	char labels[64];

	head(o, "nfscached_upstream_rpc_duration_seconds", "histogram",
	     "Time from sending an NFSv3 call upstream to its reply, by "
	     "procedure (calls that got no reply are not timed).");
	for (int p = 0; p < UPSTREAM_NPROCS; p++) {
		snprintf(labels, sizeof(labels), "procedure=\"%s\"",
			 dispatch_rows[p].name);
		histogram_lines(o, "nfscached_upstream_rpc_duration_seconds",
				labels, &sum->latency[p]);
	}
}

/* Write the upstream counters summed over exports, and per-export state. */
static void render_upstream(struct evbuffer *o, struct daemon *d)
{
	struct upstream_stats sum, one;

	memset(&sum, 0, sizeof(sum));
	for (size_t i = 0; i < d->nexports; i++) {
		upstream_stats_get(d->exports[i].up, &one);
		for (int p = 0; p < UPSTREAM_NPROCS; p++) {
			sum.calls[p] += one.calls[p];
			sum.replies[p] += one.replies[p];
			histogram_merge(&sum.latency[p], &one.latency[p]);
		}
		sum.errors += one.errors;
		sum.timeouts += one.timeouts;
		sum.probes += one.probes;
		sum.stalls += one.stalls;
		sum.connects += one.connects;
		sum.disconnects += one.disconnects;
		sum.bytes_sent += one.bytes_sent;
		sum.bytes_received += one.bytes_received;
	}
	head(o, "nfscached_upstream_rpcs_total", "counter",
	     "NFSv3 calls sent to the upstream server, by procedure.");
	for (int p = 0; p < UPSTREAM_NPROCS; p++)
		evbuffer_add_printf(o, "nfscached_upstream_rpcs_total{procedure=\"%s\"} %llu\n",
				    dispatch_rows[p].name, (unsigned long long)sum.calls[p]);
	render_upstream_latency(o, &sum);
	scalar(o, "nfscached_upstream_errors_total", "counter",
	       "Upstream calls that got no reply (connection lost, timeout, RPC error).",
	       sum.errors);
	scalar(o, "nfscached_upstream_timeouts_total", "counter",
	       "Upstream calls that timed out.", sum.timeouts);
	scalar(o, "nfscached_upstream_probes_total", "counter",
	       "RPC NULL probes sent because calls waited 1 s (2 x the link latency if longer) with no upstream reply.",
	       sum.probes);
	scalar(o, "nfscached_upstream_stalls_total", "counter",
	       "Probes unanswered within 2 s (4 x the link latency if longer): the upstream was taken as stalled and its connection dropped.",
	       sum.stalls);
	scalar(o, "nfscached_upstream_connects_total", "counter",
	       "Successful upstream (re)connections.", sum.connects);
	scalar(o, "nfscached_upstream_disconnects_total", "counter",
	       "Upstream connections lost.", sum.disconnects);
	scalar(o, "nfscached_upstream_sent_bytes_total", "counter",
	       "XDR argument bytes sent upstream.", sum.bytes_sent);
	scalar(o, "nfscached_upstream_received_bytes_total", "counter",
	       "XDR result bytes received from upstream.", sum.bytes_received);
	head(o, "nfscached_upstream_up", "gauge",
	     "1 when the export's upstream connection is up.");
	for (size_t i = 0; i < d->nexports; i++)
		evbuffer_add_printf(o, "nfscached_upstream_up{export=\"%s\"} %d\n",
				    d->exports[i].conf->path,
				    upcall_state(&d->exports[i].upc) == UPSTREAM_UP);
}

/* Write the answers given from stale state (stale_on_error). */
static void render_stale(struct evbuffer *o)
{
	static const uint32_t procs[] = { NFSPROC3_READ, NFSPROC3_GETATTR,
		NFSPROC3_FSINFO, NFSPROC3_FSSTAT, NFSPROC3_PATHCONF };
	struct stale_stats st;

	stale_stats_get(&st);
	head(o, "nfscached_stale_answers_total", "counter",
	     "Calls answered from expired cached state while the upstream was unreachable (stale_on_error), by procedure.");
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		evbuffer_add_printf(o, "nfscached_stale_answers_total{procedure=\"%s\"} %llu\n",
				    dispatch_rows[procs[i]].name,
				    (unsigned long long)st.answers[procs[i]]);
}

/* Write the write-back counters (client side, upstream side, resends). */
static void render_writeback(struct evbuffer *o, const struct cache_stats *cs)
{
	struct nfs3_write_stats ws;
	struct writeback_stats wb;

	nfs3_write_stats_get(&ws);
	writeback_stats_get(&wb);
	scalar(o, "nfscached_client_write_calls_total", "counter",
	       "Client WRITE calls.", ws.client_writes);
	scalar(o, "nfscached_client_write_bytes_total", "counter",
	       "Bytes clients asked to WRITE.", ws.client_write_bytes);
	scalar(o, "nfscached_client_commit_calls_total", "counter",
	       "Client COMMIT calls.", ws.client_commits);
	scalar(o, "nfscached_writes_absorbed_total", "counter",
	       "Client WRITEs taken into the cache (write-back).", ws.absorbed);
	scalar(o, "nfscached_writes_through_total", "counter",
	       "Client WRITEs sent straight upstream FILE_SYNC (no room in the cache).",
	       ws.write_through);
	scalar(o, "nfscached_writes_waited_for_room_total", "counter",
	       "Client WRITEs that waited for write-back to free cache room.",
	       ws.waited_for_room);
	scalar(o, "nfscached_write_room_waits_total", "counter",
	       "Waits of client WRITEs for cache room that ended (woken or timed out).",
	       wb.room_waits);
	scalar(o, "nfscached_write_room_wait_timeouts_total", "counter",
	       "Of those, waits that reached their 10 s limit (the WRITE then went through).",
	       wb.room_timeouts);
	head(o, "nfscached_write_room_wait_seconds_total", "counter",
	     "Total time client WRITEs spent waiting for cache room.");
	evbuffer_add_printf(o, "nfscached_write_room_wait_seconds_total %.6f\n",
			    wb.room_wait_seconds);
	scalar(o, "nfscached_writes_revalidated_total", "counter",
	       "Client WRITEs that sent a GETATTR upstream first.",
	       ws.revalidations);
	scalar(o, "nfscached_writes_revalidation_shared_total", "counter",
	       "Client WRITEs that took another WRITE's GETATTR of the file instead of sending one.",
	       ws.revalidations_shared);
	scalar(o, "nfscached_upstream_write_calls_total", "counter",
	       "Upstream WRITEs sent by write-back.", wb.writes);
	scalar(o, "nfscached_upstream_write_bytes_total", "counter",
	       "Bytes written upstream by write-back.", wb.write_bytes);
	scalar(o, "nfscached_upstream_commit_calls_total", "counter",
	       "Upstream COMMITs sent by write-back.", wb.commits);
	scalar(o, "nfscached_writeback_resent_bytes_total", "counter",
	       "Bytes written upstream again because the upstream's write verifier changed.",
	       cs->wb_resend_bytes);
	scalar(o, "nfscached_writeback_retries_total", "counter",
	       "Write-back WRITEs that got no answer and were made dirty again.",
	       wb.retries);
	scalar(o, "nfscached_writeback_errors_total", "counter",
	       "Write-back failures kept for the file and reported to its next WRITE or COMMIT.",
	       wb.errors);
	scalar(o, "nfscached_writeback_failed_bytes_total", "counter",
	       "Bytes dropped because their write-back failed.", cs->wb_failed_bytes);
	scalar(o, "nfscached_writeback_errors_reported_total", "counter",
	       "WRITE and COMMIT replies with an error status (a kept write-back failure, NFS3ERR_JUKEBOX, ...).",
	       ws.errors_reported);
}

/* Write the readahead counters: windows issued, bytes fetched, used and
 * wasted (prefetched pages that went unread). */
static void render_readahead(struct evbuffer *o, const struct cache_stats *cs)
{
#define X(f, name, help) scalar(o, name, "counter", help ".", cs->ra.f);
	RA_COUNTERS(X)
#undef X
	scalar(o, "nfscached_readahead_fetched_bytes_total", "counter",
	       "Bytes readahead brought into the cache.", cs->ra_filled_bytes);
	scalar(o, "nfscached_readahead_used_bytes_total", "counter",
	       "Prefetched bytes whose page a client READ then used.",
	       cs->ra_used_bytes);
	scalar(o, "nfscached_readahead_wasted_bytes_total", "counter",
	       "Prefetched bytes dropped before any client READ used them.",
	       cs->ra_wasted_bytes);
}

/* Write the client READ counters and the reads they caused upstream. */
static void render_reads(struct evbuffer *o, const struct nfs3_ops_stats *ns)
{
	head(o, "nfscached_reads_total", "counter",
	     "Client READs by cache result.");
	for (int i = 0; i < CACHE_NOUTCOMES; i++)
		evbuffer_add_printf(o, "nfscached_reads_total{result=\"%s\"} %llu\n",
				    cache_outcome_name((enum cache_outcome)i),
				    (unsigned long long)ns->reads[i]);
	head(o, "nfscached_read_bytes_total", "counter",
	     "Bytes returned to client READs, by where they came from.");
	evbuffer_add_printf(o, "nfscached_read_bytes_total{source=\"cache\"} %llu\n"
			    "nfscached_read_bytes_total{source=\"upstream\"} %llu\n"
			    "nfscached_read_bytes_total{source=\"hole\"} %llu\n",
			    (unsigned long long)ns->read_bytes_cache,
			    (unsigned long long)ns->read_bytes_upstream,
			    (unsigned long long)ns->read_bytes_hole);
	scalar(o, "nfscached_cache_fetches_total", "counter",
	       "Upstream READs sent to fill cache pages.", ns->fetches);
	scalar(o, "nfscached_cache_fetch_bytes_total", "counter",
	       "Bytes the page-filling upstream READs returned.", ns->fetch_bytes);
	scalar(o, "nfscached_upstream_read_bytes_total", "counter",
	       "Bytes every upstream READ returned (cache fills, readahead "
	       "and bypassed READs): the read traffic on the upstream link.",
	       ns->upstream_read_bytes);
	scalar(o, "nfscached_access_checks_total", "counter",
	       "ACCESS calls the proxy sent upstream on its own, to authorize "
	       "serving a READ from cache or taking a WRITE into it.",
	       ns->access_checks);
}

/* Write the cache's read outcomes, byte sources and memory. */
static void render_cache(struct evbuffer *o, struct daemon *d,
			 const struct nfs3_ops_stats *ns)
{
	struct cache_stats cs;

	render_reads(o, ns);
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
	scalar(o, "nfscached_cache_hole_bytes", "gauge",
	       "Bytes recorded as known zeros (holes), held without page memory.",
	       cs.hole_bytes);
	scalar(o, "nfscached_cache_zero_blocks_total", "counter",
	       "All-zero blocks of fetched data recorded as holes instead of stored.",
	       cs.zero_blocks);
	scalar(o, "nfscached_cache_pinned_pages", "gauge",
	       "Pages that hold bytes not yet committed upstream (not evictable).",
	       cs.wb_pinned_pages);
	scalar(o, "nfscached_cache_dirty_files", "gauge",
	       "Files holding bytes not yet committed upstream.", cs.dirty_files);
	render_writeback(o, &cs);
	render_stale(o);
	render_readahead(o, &cs);
	scalar(o, "nfscached_cache_page_bytes", "gauge",
	       "Memory held by page buffers (pages times page_size).", cs.page_bytes);
	scalar(o, "nfscached_cache_budget_bytes", "gauge",
	       "Configured budget for pages with their metadata (cache_size).",
	       cs.budget);
	scalar(o, "nfscached_cache_page_cost_bytes", "gauge",
	       "Bytes each page is charged against the budget: page_size plus its metadata.",
	       cs.page_cost);
	scalar(o, "nfscached_cache_pages", "gauge", "Pages held.", cs.pages);
	scalar(o, "nfscached_cache_files", "gauge", "Files the cache knows.", cs.files);
	scalar(o, "nfscached_cache_files_forgotten_total", "counter",
	       "Idle file records freed to stay within max_files.",
	       cs.files_forgotten);
	scalar(o, "nfscached_cache_metadata_bytes", "gauge",
	       "Memory held by cache metadata (files, pages, range sets).",
	       cs.meta_bytes);
	scalar(o, "nfscached_cache_page_size_bytes", "gauge",
	       "Configured page size.", cache_page_size(d->cache));
	scalar(o, "nfscached_cache_evictions_total", "counter",
	       "Pages evicted to stay within the budget.", cs.evictions);
	scalar(o, "nfscached_cache_invalidations_total", "counter",
	       "Files whose cached data was dropped because another writer changed them.",
	       cs.invalidations);
	head(o, "nfscached_cache_invalidations_by_cause_total", "counter",
	     "The same invalidations, by what showed the other writer's change.");
	for (unsigned k = 0; k < CACHE_INVAL_NCAUSES; k++)
		evbuffer_add_printf(o, "nfscached_cache_invalidations_by_cause_total{cause=\"%s\"} %llu\n",
				    cache_inval_cause_name(k),
				    (unsigned long long)cs.invalidations_by[k]);
	scalar(o, "nfscached_cache_fill_skipped_total", "counter",
	       "Fetched or written bytes not kept for lack of room.", cs.fill_skipped);
}

/* Write a gauge holding a double. */
static void gauge_f(struct evbuffer *o, const char *name, const char *help,
		    double v)
{
	head(o, name, "gauge", help);
	evbuffer_add_printf(o, "%s %.9g\n", name, v);
}

/* Write a gauge holding seconds since the Unix epoch, to the millisecond
 * (%g's 9 digits would round today's times to 10 s). */
static void gauge_time(struct evbuffer *o, const char *name, const char *help,
		       double v)
{
	head(o, name, "gauge", help);
	evbuffer_add_printf(o, "%s %.3f\n", name, v);
}

/* Write the process's start, readiness and reload counters. */
static void render_service(struct evbuffer *o)
{
	struct service_stats sv;

	service_stats_get(&sv);
	gauge_time(o, "nfscached_start_time_seconds",
		   "When the daemon started, in seconds since the Unix epoch.",
		   sv.start_time);
	scalar(o, "nfscached_ready", "gauge",
	       "1 once the daemon told its service manager it is ready.", sv.ready);
	head(o, "nfscached_config_reloads_total", "counter",
	     "Configuration reloads (SIGHUP), by result.");
	evbuffer_add_printf(o, "nfscached_config_reloads_total{result=\"ok\"} %llu\n"
			    "nfscached_config_reloads_total{result=\"refused\"} %llu\n",
			    (unsigned long long)sv.reloads_ok,
			    (unsigned long long)sv.reloads_refused);
	scalar(o, "nfscached_config_last_reload_successful", "gauge",
	       "0 when the last reload was refused (the daemon runs on the "
	       "previous configuration), else 1.", sv.last_reload_ok);
	gauge_time(o, "nfscached_config_last_reload_success_timestamp_seconds",
		   "When a reload last succeeded, in seconds since the Unix "
		   "epoch; 0 if none.", sv.last_reload_time);
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
	     "Client networks allowed to mount the export (0 = everyone).");
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

/* Write the metadata cache's hits and misses, entries and memory. */
static void render_meta(struct evbuffer *o)
{
	struct nfs3_meta_stats ms;

	nfs3_meta_stats_get(&ms);
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
	scalar(o, "nfscached_meta_negative_hits_total", "counter",
	       "LOOKUPs answered NFS3ERR_NOENT from a cached negative entry "
	       "(also counted as lookup hits).", ms.negative_hits);
	scalar(o, "nfscached_meta_revalidations_total", "counter",
	       "GETATTRs sent to revalidate a directory before serving its "
	       "cached listing.", ms.revalidations);
	scalar(o, "nfscached_meta_entries", "gauge",
	       "Cached name entries plus entries of cached listings.",
	       ms.cache.names + ms.cache.listing_entries);
	scalar(o, "nfscached_meta_negative_entries", "gauge",
	       "Cached negative name entries (no such name).",
	       ms.cache.negatives);
	scalar(o, "nfscached_meta_listings", "gauge",
	       "Cached directory listings.", ms.cache.listings);
	scalar(o, "nfscached_meta_bytes", "gauge",
	       "Memory held by cached names and listings.", ms.cache.bytes);
	scalar(o, "nfscached_meta_budget_bytes", "gauge",
	       "Configured budget for names and listings (meta_cache_size).",
	       ms.cache.budget);
	scalar(o, "nfscached_meta_evictions_total", "counter",
	       "Names and listings evicted to stay within the budget.",
	       ms.cache.evictions);
	scalar(o, "nfscached_meta_invalidations_total", "counter",
	       "Directories whose cached names and listing were dropped "
	       "because they changed.", ms.cache.dir_drops);
}

void metrics_render(struct daemon *d, struct evbuffer *o)
{
	struct server_stats st;
	struct nfs3_ops_stats ns;

	head(o, "nfscached_build_info", "gauge", "Build information.");
	evbuffer_add_printf(o, "nfscached_build_info{version=\"%s\",libevent=\"%s\"} 1\n",
			    NFSCACHED_VERSION, event_get_version());
	render_service(o);
	render_config(o, d->conf);
	server_stats_get(d->server, &st);
	render_client(o, &st);
	render_server(o, &st);
	render_upstream(o, d);
	nfs3_ops_stats_get(&ns);
	render_cache(o, d, &ns);
	scalar(o, "nfscached_nfs3_jukebox_replies_total", "counter",
	       "NFSv3 replies NFS3ERR_JUKEBOX because the upstream could not serve the call.",
	       ns.jukebox);
	scalar(o, "nfscached_upstream_protocol_errors_total", "counter",
	       "Upstream replies that contradicted themselves (a READ's count, "
	       "eof or status against its own post-op size), corrected.",
	       ns.protocol_errors);
	scalar(o, "nfscached_nfs3_bad_handles_total", "counter",
	       "Client file handles that failed to decode or authenticate.",
	       ns.badhandle);
	scalar(o, "nfscached_nfs3_bad_names_total", "counter",
	       "NFSv3 calls refused NFS3ERR_ACCES, not forwarded, because a "
	       "file name held a '/'.", ns.bad_names);
	scalar(o, "nfscached_drc_entries", "gauge",
	       "Entries in the duplicate request cache.", st.drc_entries);
	render_meta(o);
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

/* GET or HEAD /healthz: 200 when every upstream is up, else 503. */
static void healthz_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evbuffer *out;
	int up = 1;

	if (refuse_method(req))
		return;
	if (!(out = evbuffer_new())) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	for (size_t i = 0; i < m->d->nexports; i++)
		if (upcall_state(&m->d->exports[i].upc) != UPSTREAM_UP)
			up = 0;
	evbuffer_add_printf(out, up ? "ok\n" : "upstream down\n");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; charset=utf-8");
	http_reply(req, up ? HTTP_OK : 503, up ? "OK" : "Service Unavailable", out);
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
 * POST /debug/clock/advance?seconds=S, test clock only (mclock.h; the
 * path exists only then): move the daemon's clock forward by S seconds,
 * fire the timers due by then, answer 200 "now SECONDS\n". 403 unless
 * from loopback, 400 for a missing or out-of-range S, 405 for another
 * method. docs/operations.md, "Test clock".
 */
static void clock_advance_cb(struct evhttp_request *req, void *arg)
{
	struct metrics *m = arg;
	struct evkeyvalq q;
	const char *uri = evhttp_request_get_uri(req), *qs, *v;
	struct evbuffer *out;
	char *end;
	double s = 0;
	bool ok = false;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		evhttp_send_error(req, 405, NULL);
		return;
	}
	if (!from_loopback(req)) {
		evhttp_send_error(req, 403, NULL);
		return;
	}
	TAILQ_INIT(&q);
	qs = strchr(uri, '?');
	if (qs && evhttp_parse_query_str(qs + 1, &q) == 0 &&
	    (v = evhttp_find_header(&q, "seconds"))) {
		s = strtod(v, &end);
		ok = end != v && !*end;
	}
	evhttp_clear_headers(&q);
	if (!ok || mclock_advance(m->d->base, s) != 0 ||
	    !(out = evbuffer_new())) {
		evhttp_send_error(req, HTTP_BADREQUEST, NULL);
		return;
	}
	evbuffer_add_printf(out, "now %.6f\n", mclock_now());
	evhttp_send_reply(req, HTTP_OK, "OK", out);
	evbuffer_free(out);
}

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
		snprintf(err, errlen, "cannot listen for metrics on %s", listen);
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
	evhttp_set_cb(m->http, "/metrics", metrics_cb, m);
	evhttp_set_cb(m->http, "/healthz", healthz_cb, m);
	if (mclock_test_enabled()) {
		evhttp_set_cb(m->http, "/debug/clock/advance", clock_advance_cb, m);
		log_warn("NFSCACHED_TEST_CLOCK=1: test clock on; POST "
			 "/debug/clock/advance moves time (tests only)");
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
