/* SPDX-License-Identifier: MIT */
/*
 * looplag: how late the event loop runs. A timer due every
 * LOOPLAG_PERIOD_MS of the real monotonic clock (CLOCK_MONOTONIC read
 * directly, never the test clock of mclock.h) observes, each time it
 * fires, how long after its due time it ran: the time the loop spent in
 * other callbacks (or blocked in one) before it got to the timer. The
 * observations go to one histogram (proto/histogram.h) per loop,
 * rendered by /metrics as nfscached_loop_lag_seconds{loop="N"}
 * (docs/metrics.md; what to alert on: docs/operations.md).
 *
 * The daemon's base has no EVENT_BASE_FLAG_PRECISE_TIMER (main.c says
 * why), so libevent schedules timers on a coarse clock: an idle loop's
 * lag is that clock's step, a few milliseconds, not zero.
 */
#ifndef NFSCACHED_DAEMON_LOOPLAG_H
#define NFSCACHED_DAEMON_LOOPLAG_H

#include "histogram.h"

struct event_base;
struct looplag;

#define LOOPLAG_PERIOD_MS	100	/* ms between a firing and the next
					 * due time */

/*
 * Start measuring base's loop, numbered loop (its label). Returns NULL
 * when out of memory. Call from the thread that runs base, or before it
 * runs; free with looplag_free from that thread, or once it stopped.
 */
struct looplag *looplag_new(struct event_base *base, unsigned loop);

/* Stop the timer and free *lp; clears *lp. NULL or *lp NULL: nothing. */
void looplag_free(struct looplag **lp);

/* The loop's number. Any thread. */
unsigned looplag_loop(const struct looplag *l);

/* Copy the loop's observations so far into *out (relaxed atomic loads:
 * any thread may read another loop's, missing at most the observation
 * under way). */
void looplag_read(const struct looplag *l, struct histogram *out);

/*
 * Block the calling loop for ms milliseconds of the real clock
 * (nanosleep until then, as a blocking call would): the test of the lag
 * metric only (/debug/loop/stall, test clock on). ms <= 10000.
 */
void looplag_stall(unsigned ms);

#endif
