/* SPDX-License-Identifier: MIT */
/*
 * looplag: the lateness of one event loop's timer (looplag.h).
 *
 * State: one one-shot timer, always pending while the object lives, and
 * due, the CLOCK_MONOTONIC time it should fire at. Each firing observes
 * now - due (0 if early) and re-arms LOOPLAG_PERIOD_MS from now, so one
 * long stall is one large observation, not a burst of catch-up firings.
 * Invariant: lag.count == firings so far. Owned by struct daemon (one
 * per loop); touched from that loop only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "checkobj.h"
#include "looplag.h"

#define LOOPLAG_MAGIC	0x6c6c6167u	/* "llag" */
#define LOOPLAG_STALL_MAX_MS	10000u

struct looplag {
	uint32_t magic;
	unsigned loop;
	struct event *ev;
	double due;			/* s, CLOCK_MONOTONIC */
	struct histogram lag;
};

/* Read CLOCK_MONOTONIC in seconds. */
static double looplag_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Arm the timer LOOPLAG_PERIOD_MS from now. */
static void looplag_arm(struct looplag *l)
{
	struct timeval tv = { 0, LOOPLAG_PERIOD_MS * 1000 };

	l->due = looplag_clock() + LOOPLAG_PERIOD_MS / 1000.0;
	/* Real time on purpose: not mclock_timer_add (the test clock). */
	evtimer_add(l->ev, &tv);
}

/* The timer fired: observe how late, re-arm. */
static void looplag_cb(evutil_socket_t fd, short what, void *arg)
{
	struct looplag *l = arg;

	(void)fd;
	(void)what;
	CHECK_OBJ(l, LOOPLAG_MAGIC);
	/* Relaxed: loop 0's /metrics reads another loop's (looplag_read). */
	histogram_observe_relaxed(&l->lag, looplag_clock() - l->due);
	looplag_arm(l);
}

struct looplag *looplag_new(struct event_base *base, unsigned loop)
{
	struct looplag *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->magic = LOOPLAG_MAGIC;
	l->loop = loop;
	l->ev = evtimer_new(base, looplag_cb, l);
	if (l->ev == NULL) {
		free(l);
		return NULL;
	}
	looplag_arm(l);
	return l;
}

void looplag_free(struct looplag **lp)
{
	struct looplag *l = lp ? *lp : NULL;

	if (l == NULL)
		return;
	event_free(l->ev);
	l->magic = 0;
	free(l);
	*lp = NULL;
}

unsigned looplag_loop(const struct looplag *l)
{
	return l->loop;
}

void looplag_read(const struct looplag *l, struct histogram *out)
{
	*out = (struct histogram){ .sum = 0 };
	histogram_merge_relaxed(out, &l->lag);
}

void looplag_stall(unsigned ms)
{
	double end;
	struct timespec ts;

	if (ms > LOOPLAG_STALL_MAX_MS)
		ms = LOOPLAG_STALL_MAX_MS;
	end = looplag_clock() + ms / 1000.0;
	for (double now = looplag_clock(); now < end; now = looplag_clock()) {
		double left = end - now;

		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
}
