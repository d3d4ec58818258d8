/* SPDX-License-Identifier: MIT */
/* mclock: see mclock.h. */
#include "mclock.h"

#include <math.h>	/* isfinite */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#define MCLOCK_USEC_MASK	0x000fffff	/* libevent's MICROSECONDS_MASK */
#define MCLOCK_MAX_ADVANCE	86400.0		/* seconds, one call */

/* One timer armed through mclock_timer_add in test-clock mode. */
struct mtimer {
	struct event *ev;
	event_callback_fn cb;	/* with arg: tells a reused ev address apart */
	void *arg;
	double due;		/* mclock_now() seconds */
	uint64_t seq;		/* order of arming: the latest counts */
};

/* A live event of the base, as event_base_foreach_event saw it. */
struct mlive {
	struct event *ev;
	event_callback_fn cb;
	void *arg;
};

static int enabled = -1;	/* -1: environment not read yet */
static double offset;		/* seconds added to CLOCK_MONOTONIC */
static struct mtimer *timers;
static size_t ntimers, captimers, purge_at = 64;
static uint64_t seq;

/* The test clock's offset: moved by loop 0 (mclock_advance), read by
 * every loop's mclock_now (relaxed: a loop may see the move late). */
static double mclock_offset(void)
{
	double o;

	__atomic_load(&offset, &o, __ATOMIC_RELAXED);
	return o;
}

bool mclock_test_enabled(void)
{
	if (enabled < 0) {
		const char *v = getenv("NFSCACHED_TEST_CLOCK");

		enabled = v && strcmp(v, "1") == 0;
	}
	return enabled == 1;
}

struct timeval mclock_tv(double secs)
{
	struct timeval tv = { (time_t)secs, 0 };

	tv.tv_usec = (suseconds_t)((secs - (double)tv.tv_sec) * 1e6);
	return tv;
}

double mclock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 +
	       (mclock_test_enabled() ? mclock_offset() : 0.0);
}

/* Order by event address, then by arming order. */
static int mtimer_cmp(const void *a, const void *b)
{
	const struct mtimer *x = a, *y = b;

	if (x->ev != y->ev)
		return (uintptr_t)x->ev < (uintptr_t)y->ev ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Order by due time. */
static int mtimer_due_cmp(const void *a, const void *b)
{
	const struct mtimer *x = a, *y = b;

	return x->due < y->due ? -1 : x->due > y->due;
}

/* Order by event address. */
static int mlive_cmp(const void *a, const void *b)
{
	const struct mlive *x = a, *y = b;

	return (uintptr_t)x->ev < (uintptr_t)y->ev ? -1 : (uintptr_t)x->ev > (uintptr_t)y->ev;
}

/* A growable array of live events, filled by collect_cb. */
struct mlive_set {
	struct mlive *v;
	size_t n, cap;
	int oom;
};

/* event_base_foreach_event callback: note one live event. */
static int collect_cb(const struct event_base *base, const struct event *ev,
		      void *arg)
{
	struct mlive_set *s = arg;
	struct mlive *nv;

	(void)base;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		if (!(nv = realloc(s->v, s->cap * sizeof(*nv)))) {
			s->oom = 1;
			return -1;
		}
		s->v = nv;
	}
	s->v[s->n++] = (struct mlive){ (struct event *)(uintptr_t)ev, event_get_callback(ev),
				       event_get_callback_arg(ev) };
	return 0;
}

/*
 * Keep, of the recorded timers on base, the latest arming of each event
 * that is still alive (same callback and argument) and pending; drop the
 * rest (fired, deleted, freed). An event is only touched once
 * event_base_foreach_event has shown it alive. -1 on allocation failure.
 */
static int purge(struct event_base *base)
{
	struct mlive_set live = { 0 };
	size_t keep = 0;

	if (event_base_foreach_event(base, collect_cb, &live) != 0 || live.oom) {
		free(live.v);
		return -1;
	}
	if (live.n > 1)
		qsort(live.v, live.n, sizeof(*live.v), mlive_cmp);
	if (ntimers > 1)
		qsort(timers, ntimers, sizeof(*timers), mtimer_cmp);
	for (size_t i = 0; i < ntimers; i++) {
		struct mtimer *t = &timers[i];
		struct mlive key = { t->ev, NULL, NULL }, *l;

		if (i + 1 < ntimers && timers[i + 1].ev == t->ev)
			continue;	/* a later arming of the same event */
		l = live.n ? bsearch(&key, live.v, live.n, sizeof(*live.v),
				     mlive_cmp) : NULL;
		if (!l || l->cb != t->cb || l->arg != t->arg ||
		    event_get_base(t->ev) != base ||
		    !event_pending(t->ev, EV_TIMEOUT, NULL))
			continue;
		timers[keep++] = *t;
	}
	ntimers = keep;
	purge_at = keep * 2 + 64;
	free(live.v);
	return 0;
}

/* Record ev's due time; on failure the timer still runs in real time. */
static void record(struct event *ev, const struct timeval *tv)
{
	struct mtimer *nt;

	if (ntimers >= purge_at)
		(void)purge(event_get_base(ev));
	if (ntimers == captimers) {
		size_t cap = captimers ? captimers * 2 : 64;

		if (!(nt = realloc(timers, cap * sizeof(*nt))))
			return;
		timers = nt;
		captimers = cap;
	}
	timers[ntimers++] = (struct mtimer){
		ev, event_get_callback(ev), event_get_callback_arg(ev),
		mclock_now() + (double)tv->tv_sec +
			(double)(tv->tv_usec & MCLOCK_USEC_MASK) / 1e6,
		seq++
	};
}

int mclock_timer_add(struct event *ev, const struct timeval *tv)
{
	int rc = evtimer_add(ev, tv);

	if (rc == 0 && tv && mclock_test_enabled() &&
	    !(event_get_events(ev) & EV_PERSIST))
		record(ev, tv);
	return rc;
}

int mclock_advance(struct event_base *base, double seconds)
{
	double now, moved;
	size_t keep = 0;

	if (!mclock_test_enabled() || !isfinite(seconds) || seconds <= 0 ||
	    seconds > MCLOCK_MAX_ADVANCE)
		return -1;
	moved = mclock_offset() + seconds;
	__atomic_store(&offset, &moved, __ATOMIC_RELAXED);
	if (purge(base) != 0)
		return 0;	/* the clock moved; timers keep real time */
	if (ntimers > 1)
		qsort(timers, ntimers, sizeof(*timers), mtimer_due_cmp);
	now = mclock_now();
	for (size_t i = 0; i < ntimers; i++) {
		struct mtimer *t = &timers[i];
		double left = t->due - now;
		struct timeval tv;

		if (left <= 0) {
			event_active(t->ev, EV_TIMEOUT, 1);
			continue;
		}
		tv = mclock_tv(left);
		evtimer_add(t->ev, &tv);
		timers[keep++] = *t;
	}
	ntimers = keep;
	return 0;
}
