/* SPDX-License-Identifier: MIT */
/*
 * metrics: the HTTP endpoint (libevent evhttp) serving GET /metrics in the
 * Prometheus text format (version 0.0.4) and GET /healthz. Counters are
 * pulled from each module's *_stats_get() at scrape time. With the test
 * clock on (mclock.h) it also serves POST /debug/clock/advance.
 */
#ifndef NFSCACHED_DAEMON_METRICS_H
#define NFSCACHED_DAEMON_METRICS_H

#include <stddef.h>

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

/* Stop listening, free *m and clear the caller's pointer. */
void metrics_free(struct metrics **m);

#endif
