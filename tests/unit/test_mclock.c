/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/mclock: the test clock moves mclock_now() and fires
 * exactly the timers due by then, earliest first; the others keep their
 * remaining time; deleted, freed and persistent events are left alone.
 * The test clock is switched on (NFSCACHED_TEST_CLOCK=1) before the first
 * call into the module; one program tests the mode off (mclock_off).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <event2/event.h>

#include "cunit_main.h"
#include "mclock.h"

static int fired[8], nfired;

/* Timer callback: note which timer (arg) fired, in order. */
static void note_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	if (nfired < 8)
		fired[nfired++] = (int)(intptr_t)arg;
}

/* A one-shot timer of base noting id, armed for sec seconds. */
static struct event *arm(struct event_base *base, int id, time_t sec)
{
	struct event *ev = evtimer_new(base, note_cb, (void *)(intptr_t)id);
	struct timeval tv = { sec, 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
	CU_ASSERT_EQUAL(mclock_timer_add(ev, &tv), 0);
	return ev;
}

static void test_advance_moves_now(void)
{
	struct event_base *base = event_base_new();
	double t0 = mclock_now();

	CU_ASSERT_TRUE(mclock_test_enabled());
	CU_ASSERT_EQUAL(mclock_advance(base, 100.0), 0);
	CU_ASSERT_TRUE(mclock_now() - t0 >= 100.0);
	CU_ASSERT_TRUE(mclock_now() - t0 < 160.0);
	CU_ASSERT_EQUAL(mclock_advance(base, 0), -1);
	CU_ASSERT_EQUAL(mclock_advance(base, -1), -1);
	CU_ASSERT_EQUAL(mclock_advance(base, 1e9), -1);
	event_base_free(base);
}

static void test_due_timers_fire_in_order(void)
{
	struct event_base *base = event_base_new();
	struct event *a, *b, *c;

	nfired = 0;
	c = arm(base, 3, 500);
	a = arm(base, 1, 30);
	b = arm(base, 2, 60);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 0);
	CU_ASSERT_EQUAL(mclock_advance(base, 100.0), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 2);
	CU_ASSERT_EQUAL(fired[0], 1);
	CU_ASSERT_EQUAL(fired[1], 2);
	CU_ASSERT_FALSE(event_pending(a, EV_TIMEOUT, NULL));
	CU_ASSERT_TRUE(event_pending(c, EV_TIMEOUT, NULL));
	/* c had 400 s left: not due after 399 more, due after 2 more. */
	CU_ASSERT_EQUAL(mclock_advance(base, 398.0), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 2);
	CU_ASSERT_EQUAL(mclock_advance(base, 2.5), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 3);
	CU_ASSERT_EQUAL(fired[2], 3);
	event_free(a);
	event_free(b);
	event_free(c);
	event_base_free(base);
}

static void test_rearmed_deleted_freed_persistent(void)
{
	struct event_base *base = event_base_new();
	struct event *re, *del, *gone, *per;
	struct timeval tv = { 10000, 0 };	/* never due here */

	nfired = 0;
	re = arm(base, 1, 10);
	del = arm(base, 2, 10);
	gone = arm(base, 3, 10);
	per = event_new(base, -1, EV_PERSIST, note_cb, (void *)(intptr_t)4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(per);
	CU_ASSERT_EQUAL(mclock_timer_add(per, &tv), 0);
	tv.tv_sec = 1000;
	CU_ASSERT_EQUAL(mclock_timer_add(re, &tv), 0);	/* the later arming counts */
	evtimer_del(del);
	event_free(gone);
	CU_ASSERT_EQUAL(mclock_advance(base, 20.0), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 0);
	CU_ASSERT_TRUE(event_pending(re, EV_TIMEOUT, NULL));
	CU_ASSERT_TRUE(event_pending(per, EV_TIMEOUT, NULL));
	CU_ASSERT_EQUAL(mclock_advance(base, 990.0), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 1);
	CU_ASSERT_EQUAL(fired[0], 1);
	event_free(re);
	event_free(del);
	event_free(per);
	event_base_free(base);
}

static void test_many_timers_purged(void)
{
	struct event_base *base = event_base_new();
	struct event *keep = arm(base, 7, 50);

	nfired = 0;
	for (int i = 0; i < 5000; i++)
		event_free(arm(base, 1, 5));	/* recorded, then freed */
	CU_ASSERT_EQUAL(mclock_advance(base, 60.0), 0);
	CU_ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
	CU_ASSERT_EQUAL(nfired, 1);
	CU_ASSERT_EQUAL(fired[0], 7);
	event_free(keep);
	event_base_free(base);
}

/* Mode off: the clock is CLOCK_MONOTONIC and advancing is refused. */
static void test_off(void)
{
	struct event_base *base = event_base_new();
	struct timespec ts;
	double mono;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	CU_ASSERT_FALSE(mclock_test_enabled());
	CU_ASSERT_TRUE(mclock_now() - mono < 5.0);
	CU_ASSERT_EQUAL(mclock_advance(base, 10.0), -1);
	event_base_free(base);
}

int test_register(void)
{
	const char *mode = getenv("MCLOCK_TEST_MODE");
	CU_pSuite s;

	if (mode && strcmp(mode, "off") == 0) {
		unsetenv("NFSCACHED_TEST_CLOCK");
		s = CU_add_suite("mclock_off", NULL, NULL);
		return s && CU_add_test(s, "off", test_off) ? 0 : -1;
	}
	setenv("NFSCACHED_TEST_CLOCK", "1", 1);
	s = CU_add_suite("mclock", NULL, NULL);
	if (!s ||
	    !CU_add_test(s, "advance_moves_now", test_advance_moves_now) ||
	    !CU_add_test(s, "due_timers_fire_in_order", test_due_timers_fire_in_order) ||
	    !CU_add_test(s, "rearmed_deleted_freed_persistent",
			 test_rearmed_deleted_freed_persistent) ||
	    !CU_add_test(s, "many_timers_purged", test_many_timers_purged))
		return -1;
	return 0;
}
