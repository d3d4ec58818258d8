/* SPDX-License-Identifier: MIT */
/*
 * service: what nfscached tells its service manager (systemd, through
 * notify.h) and its operator about its own life: readiness, a one-line
 * status with the hit ratio, the watchdog, reloads, the stop.
 *
 * Life: NEW --service_started--> STARTING --(every upstream up, or with
 * start_without_upstream every upstream's first attempt settled)-->
 * READY (READY=1 with a STATUS= line) --service_stopping--> STOPPING
 * (STOPPING=1). A reload sends RELOADING=1 and, done or refused, READY=1
 * again (only once READY). STATUS= lines follow every 10 s while
 * notifications are on; WATCHDOG=1 at half of $WATCHDOG_USEC.
 */
#ifndef NFSCACHED_DAEMON_SERVICE_H
#define NFSCACHED_DAEMON_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upstream.h"

struct daemon;
struct export_rt;

/*
 * Counters and gauges this module owns (service_stats_get), declared once
 * for struct service_stats and for /metrics: X(C type, field, Prometheus
 * type, metric name, help); a NULL help continues the previous row's
 * family with other labels. Doubles are seconds: gauges are rendered to
 * the millisecond (daemon/ctl/metrics.c; HACKING.md "Adding a counter").
 */
#define SERVICE_METRICS(X, A) \
	X(double, start_time, gauge, "nfscached_start_time_seconds", \
	  "When the daemon started, in seconds since the Unix epoch.") \
	X(bool, ready, gauge, "nfscached_ready", \
	  "1 once the daemon told its service manager it is ready.") \
	X(uint64_t, reloads_ok, counter, \
	  "nfscached_config_reloads_total{result=\"ok\"}", \
	  "Configuration reloads (SIGHUP), by result.") \
	X(uint64_t, reloads_refused, counter, \
	  "nfscached_config_reloads_total{result=\"refused\"}", NULL) \
	X(bool, last_reload_ok, gauge, "nfscached_config_last_reload_successful", \
	  "0 when the last reload was refused (the daemon runs on the previous configuration), else 1.") \
	X(double, last_reload_time, gauge, \
	  "nfscached_config_last_reload_success_timestamp_seconds", \
	  "When a reload last succeeded, in seconds since the Unix epoch; 0 if none.")

struct service_stats {
#define X(t, f, k, n, h) t f;
	SERVICE_METRICS(X, )
#undef X
};

/*
 * Create d's service state (d->svc, owned by d until service_shutdown)
 * remembering d (borrowed; it outlives the service) and the start time,
 * and open the notification socket ($NOTIFY_SOCKET; a bad value is logged
 * and notifications stay off). Call once, before the upstreams start.
 * Returns 0, or -1 on ENOMEM (nothing made).
 */
int service_init(struct daemon *d);

/*
 * The listeners are open: arm the status and watchdog timers on d's loop
 * and send READY=1 if the upstreams already allow it. After service_init.
 */
void service_started(struct daemon *d);

/* A reload added (or re-pointed) ex, already in d->exports: its upstream
 * is reported up the first time it connects, as at start. Event loop;
 * nothing before service_started. */
void service_export_added(struct daemon *d, const struct export_rt *ex);

/*
 * Export ex of d changed its upstream's state; why is the upstream's last
 * error (borrowed, may be ""). Logs it, once per change between up and
 * down (a failed reconnect attempt after another is logged at debug
 * level), and may send READY=1. Event loop; ignored before
 * service_started and for an export no longer in d->exports.
 */
void service_upstream_state(struct daemon *d, const struct export_rt *ex,
			    enum upstream_state st, const char *why);

/* A reload of d begins: RELOADING=1 (when READY). Event loop. */
void service_reload_begin(struct daemon *d);

/*
 * A reload of d ended: ok, or refused with why (one line, logged by the
 * caller; borrowed). Counts it and sends READY=1 with a STATUS= line (when
 * READY). Event loop.
 */
void service_reload_done(struct daemon *d, bool ok, const char *why);

/* Daemon d is stopping: STOPPING=1 with a STATUS= line. Event loop. */
void service_stopping(struct daemon *d);

/* Cancel the timers, close the notification socket and free d->svc
 * (none: nothing). After the loop stopped. */
void service_shutdown(struct daemon *d);

/* Copy d's counters into *st (zeros before service_init). */
void service_stats_get(const struct daemon *d, struct service_stats *st);

/*
 * Write d's one-line status into buf[0..len): upstream state, reads and
 * the hit ratio by requests and by bytes, e.g. "upstream up; 1200 reads,
 * 91.7% hits, 92.3% of bytes without upstream".
 */
void service_status(const struct daemon *d, char *buf, size_t len);

#endif
