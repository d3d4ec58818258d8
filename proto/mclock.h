/* SPDX-License-Identifier: MIT */
/*
 * mclock: the daemon's monotonic clock and its one-shot libevent timers,
 * with a test-only way to move both forward.
 *
 * Every monotonic time read of the daemon and of the upstream client is
 * mclock_now(), and every one-shot timer they arm is armed with
 * mclock_timer_add(). Normally these are CLOCK_MONOTONIC and evtimer_add().
 *
 * Test clock: when the environment variable NFSCACHED_TEST_CLOCK is "1" at
 * the first call into this module, mclock_now() is CLOCK_MONOTONIC plus an
 * offset that only mclock_advance() changes, and mclock_timer_add() also
 * records each timer's due time on that clock, so that mclock_advance(S)
 * fires (activates, in due order) every recorded timer that is due by
 * now + S and re-arms the others for what is left of their time. Time keeps
 * running in real time as well; a test advances it instead of sleeping.
 * The daemon exposes mclock_advance() as POST /debug/clock/advance on its
 * loopback metrics listener, only in this mode (docs/operations.md, "Test
 * clock"). Never set NFSCACHED_TEST_CLOCK in production.
 *
 * The event loop is single-threaded; so is this module.
 */
#ifndef NFSCACHED_PROTO_MCLOCK_H
#define NFSCACHED_PROTO_MCLOCK_H

#include <stdbool.h>
#include <sys/time.h>

struct event;
struct event_base;

/* Monotonic time in seconds: CLOCK_MONOTONIC, plus the test offset. */
double mclock_now(void);

/*
 * Arm the one-shot (not EV_PERSIST) timer ev to fire after tv (relative;
 * a libevent common-timeout value is accepted), as evtimer_add(ev, tv)
 * does, and return what it returns (0, or -1). ev stays the caller's: free
 * or delete it as usual. In test-clock mode the due time is also recorded
 * for mclock_advance(); a persistent event is armed but not recorded.
 */
int mclock_timer_add(struct event *ev, const struct timeval *tv);

/* secs (finite, >= 0) as the relative timeval timers take, to the
 * microsecond below. */
struct timeval mclock_tv(double secs);

/* True when the test clock is enabled (NFSCACHED_TEST_CLOCK=1). */
bool mclock_test_enabled(void);

/*
 * Test clock only: move the clock forward by seconds (finite, 0 < seconds
 * <= 86400) and, among the timers on base armed with mclock_timer_add and
 * still pending, activate those due by the new now (earliest first; they
 * run in this event-loop turn, after the caller's callback returns) and
 * re-arm the others for their remaining time. Returns 0; -1 (nothing
 * changed) when the test clock is off or seconds is out of range.
 */
int mclock_advance(struct event_base *base, double seconds);

#endif
