/* SPDX-License-Identifier: MIT */
/*
 * service: readiness, status, watchdog, reload and stop notifications
 * (service.h).
 *
 * State (struct service, one per daemon, held by d->svc from service_init
 * to service_shutdown, touched from the event loop only): the phase
 * (STARTING, READY, STOPPING), which exports' upstreams have settled (been
 * up, or failed a first attempt), the two timers and the counters.
 * Invariants: READY=1 is sent at most once outside reloads, never after
 * STOPPING=1; nothing is sent before service_started.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>

#include "daemon.h"
#include "log.h"
#include "mclock.h"
#include "nfs3_read.h"
#include "notify.h"
#include "service.h"

#define STATUS_INTERVAL 10.0	/* seconds between STATUS= updates */

enum svc_phase {
	SVC_NEW = 0,
	SVC_STARTING,
	SVC_READY,
	SVC_STOPPING,
};

struct service {
	struct daemon *d;
	enum svc_phase phase;
	bool *settled;			/* by export id (NFS3_EXPORT_IDS) */
	bool *down_logged;		/* by export index: DOWN logged and
					 * not up since */
	struct event *status_timer;
	struct event *watchdog_timer;
	struct timeval watchdog_tv;
	struct service_stats st;
};

/* Wall-clock time in seconds. */
static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int service_init(struct daemon *d)
{
	struct service *svc = calloc(1, sizeof(*svc));
	char err[256];

	if (!svc)
		return -1;
	d->svc = svc;
	svc->d = d;
	svc->st.start_time = wall_now();
	svc->st.last_reload_ok = true;
	switch (notify_open(err, sizeof(err))) {
	case 1:
		log_debug("service manager notifications on");
		break;
	case -1:
		log_warn("%s; not notifying the service manager", err);
		break;
	}
	return 0;
}

/* Percentage a of b, 0 when b is 0. */
static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* Count the exports whose upstream is up. */
static size_t upstreams_up(const struct daemon *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nexports; i++)
		if (upcall_state(&d->exports[i]->upc) == UPSTREAM_UP)
			n++;
	return n;
}

void service_status(const struct daemon *d, char *buf, size_t len)
{
	struct nfs3_read_stats ns;
	uint64_t reads = 0, hits, bytes, saved;
	size_t up = upstreams_up(d), n = d->nexports;
	int k;

	nfs3_read_stats_get(d, &ns);
	for (int i = 0; i < CACHE_NOUTCOMES; i++)
		reads += ns.reads[i];
	hits = ns.reads[CACHE_HIT] + ns.reads[CACHE_HOLE];
	saved = ns.read_bytes_cache + ns.read_bytes_hole;
	bytes = saved + ns.read_bytes_upstream;
	if (up == n)
		k = snprintf(buf, len, "upstream up");
	else
		k = snprintf(buf, len, "upstream down (%zu of %zu export%s)",
			     n - up, n, n == 1 ? "" : "s");
	if (k < 0 || (size_t)k >= len)
		return;
	snprintf(buf + k, len - (size_t)k,
		 "; %llu reads, %.1f%% hits, %.1f%% of bytes without upstream",
		 (unsigned long long)reads, pct(hits, reads), pct(saved, bytes));
}

/* Send "HEAD\nSTATUS=<status>" (HEAD may be NULL). */
static void send_status(const struct service *svc, const char *head)
{
	char status[256], msg[320];

	service_status(svc->d, status, sizeof(status));
	snprintf(msg, sizeof(msg), "%s%sSTATUS=%s", head ? head : "",
		 head ? "\n" : "", status);
	if (notify_send(msg) != 0)
		log_debug("notify: %s: send failed", head ? head : "STATUS");
}

/* Tell whether the upstreams allow READY=1 now. */
static bool ready_now(const struct service *svc)
{
	const struct conf *c = svc->d->conf;
	size_t n = svc->d->nexports;

	if (upstreams_up(svc->d) == n)
		return true;
	if (!c->start_without_upstream)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!svc->settled[svc->d->exports[i]->conf->id])
			return false;
	return true;
}

/* Send READY=1 once the conditions hold. */
static void maybe_ready(struct service *svc)
{
	char status[256];

	if (svc->phase != SVC_STARTING || !ready_now(svc))
		return;
	svc->phase = SVC_READY;
	svc->st.ready = true;
	send_status(svc, "READY=1");
	service_status(svc->d, status, sizeof(status));
	log_info("ready: %s", status);
}

/* Periodic STATUS= update (arg: the struct service). */
static void status_cb(evutil_socket_t fd, short what, void *arg)
{
	const struct service *svc = arg;

	(void)fd;
	(void)what;
	if (svc->phase == SVC_READY)
		send_status(svc, NULL);
}

/* Periodic WATCHDOG=1. */
static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	notify_send("WATCHDOG=1");
}

/* Arm the status and watchdog timers (only with notifications on). They
 * keep real time, the service manager's, so plain evtimer_add: not the
 * test clock's mclock_timer_add. */
static void arm_timers(struct service *svc)
{
	struct timeval st = { (time_t)STATUS_INTERVAL, 0 };
	double wd = notify_watchdog_interval() / 2;

	if (!notify_enabled())
		return;
	svc->status_timer = event_new(svc->d->base, -1, EV_PERSIST, status_cb,
				 svc);
	if (svc->status_timer)
		evtimer_add(svc->status_timer, &st);
	if (wd > 0) {
		svc->watchdog_tv = mclock_tv(wd);
		svc->watchdog_timer = event_new(svc->d->base, -1, EV_PERSIST,
					       watchdog_cb, NULL);
		if (svc->watchdog_timer)
			evtimer_add(svc->watchdog_timer, &svc->watchdog_tv);
		log_info("watchdog: pinging the service manager every %.3f s", wd);
	}
}

void service_started(struct daemon *d)
{
	struct service *svc = d->svc;
	size_t n = NFS3_EXPORT_IDS;

	svc->settled = calloc(n, sizeof(bool));
	svc->down_logged = calloc(n, sizeof(bool));
	if (!svc->settled || !svc->down_logged)
		fatal("out of memory");
	svc->phase = SVC_STARTING;
	arm_timers(svc);
	if (!svc->d->conf->start_without_upstream)
		log_info("start_without_upstream is false: ready once every upstream is up");
	maybe_ready(svc);
}

/* Log export ex's (id i) upstream going up (the first time, or after it was
 * reported down) or down (repeated failures, quiet reconnects: debug). */
static void log_upstream(struct service *svc, const struct export_rt *ex,
			 size_t i,
			 enum upstream_state st, const char *why)
{
	const char *sep = why && why[0] ? ": " : "";

	if (st == UPSTREAM_UP && (svc->down_logged[i] || !svc->settled[i])) {
		log_info("export %s: upstream %s is up", ex->conf->path,
			 ex->conf->upstream);
		svc->down_logged[i] = false;
	} else if (st == UPSTREAM_UP) {
		/* Back after an idle close, never reported down. */
		log_debug("export %s: upstream reconnected", ex->conf->path);
	} else if (st == UPSTREAM_DOWN && !svc->down_logged[i]) {
		log_warn("export %s: upstream %s is down%s%s (clients get "
			 "NFS3ERR_JUKEBOX until it is back)", ex->conf->path,
			 ex->conf->upstream, sep, why ? why : "");
		svc->down_logged[i] = true;
	} else if (st == UPSTREAM_DOWN) {
		log_debug("export %s: upstream still down%s%s", ex->conf->path,
			  sep, why ? why : "");
	}
}

void service_upstream_state(struct daemon *d, const struct export_rt *ex,
			    enum upstream_state st, const char *why)
{
	struct service *svc = d->svc;
	size_t i = ex->conf->id;

	/* A retired export (reload.c) closing its connections says nothing. */
	if (!svc || !svc->settled || i >= NFS3_EXPORT_IDS ||
	    daemon_export(svc->d, ex->conf->id) != ex)
		return;
	log_upstream(svc, ex, i, st, why);
	if (st == UPSTREAM_UP || st == UPSTREAM_DOWN)
		svc->settled[i] = true;
	maybe_ready(svc);
}

void service_export_added(struct daemon *d, const struct export_rt *ex)
{
	struct service *svc = d->svc;

	if (!svc || !svc->settled || ex->conf->id >= NFS3_EXPORT_IDS)
		return;
	svc->settled[ex->conf->id] = false;
	svc->down_logged[ex->conf->id] = false;
}

void service_reload_begin(struct daemon *d)
{
	const struct service *svc = d->svc;

	if (svc->phase == SVC_READY)
		notify_send("RELOADING=1");
}

void service_reload_done(struct daemon *d, bool ok, const char *why)
{
	struct service *svc = d->svc;
	char msg[CONF_ERR_MAX + 128];

	if (ok) {
		svc->st.reloads_ok++;
		svc->st.last_reload_time = wall_now();
	} else {
		svc->st.reloads_refused++;
	}
	svc->st.last_reload_ok = ok;
	if (svc->phase != SVC_READY)
		return;
	if (ok) {
		send_status(svc, "READY=1");
		return;
	}
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=reload refused, running on the previous configuration: %s",
		 why);
	notify_send(msg);
}

void service_stopping(struct daemon *d)
{
	struct service *svc = d->svc;

	if (svc->phase == SVC_STOPPING)
		return;
	svc->phase = SVC_STOPPING;
	notify_send("STOPPING=1\nSTATUS=stopping: finishing calls in flight");
}

void service_shutdown(struct daemon *d)
{
	struct service *svc = d->svc;

	if (!svc)
		return;
	if (svc->status_timer)
		event_free(svc->status_timer);
	if (svc->watchdog_timer)
		event_free(svc->watchdog_timer);
	svc->status_timer = svc->watchdog_timer = NULL;
	free(svc->settled);
	free(svc->down_logged);
	free(svc);
	d->svc = NULL;
	notify_close();
}

void service_stats_get(const struct daemon *d, struct service_stats *st)
{
	if (d->svc)
		*st = d->svc->st;
	else
		memset(st, 0, sizeof(*st));
}
