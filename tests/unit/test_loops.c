/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the event loops (daemon/base/loops.c): a message posted
 * to loop k runs on loop k's thread, each producer's messages in the order
 * it posted them, none lost when several threads post at once; one loop
 * runs a post at once; stopping the threads runs what is still posted on
 * the caller. The ThreadSanitizer tree runs it (tsan label).
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include <event2/event.h>

#include "cunit_main.h"
#include "loops.h"

#define PRODUCERS 3
#define PER_PRODUCER 20000

/* One posted message: who sent it and its rank in its sender's order. */
struct tmsg {
	struct loop_msg m;
	unsigned producer;
	unsigned seq;
};

/* What a loop saw, written only by the loop that runs the messages. */
struct seen {
	unsigned next[PRODUCERS];	/* the seq each producer must send next */
	unsigned runs;
	unsigned out_of_order;
	unsigned wrong_thread;
	pthread_t thread;		/* the loop's thread, set by its first
					 * message (a marker) */
	int have_thread;
};

static struct seen seen_at[2];

/* Record a message that ran on loop 1. */
static void count_fn(struct loop_msg *m)
{
	struct tmsg *t = (struct tmsg *)m;
	struct seen *s = &seen_at[1];

	if (!s->have_thread) {
		s->thread = pthread_self();
		s->have_thread = 1;
	}
	if (!pthread_equal(s->thread, pthread_self()))
		s->wrong_thread++;
	if (t->seq != s->next[t->producer])
		s->out_of_order++;
	s->next[t->producer] = t->seq + 1;
	s->runs++;
}

struct producer {
	struct loops *l;
	unsigned idx;
	struct tmsg *msgs;		/* PER_PRODUCER of them */
};

/* Post every message of one producer to loop 1. */
static void *produce(void *arg)
{
	struct producer *p = arg;

	for (unsigned i = 0; i < PER_PRODUCER; i++) {
		p->msgs[i].m.fn = count_fn;
		p->msgs[i].producer = p->idx;
		p->msgs[i].seq = i;
		loops_post(p->l, 1, &p->msgs[i].m);
	}
	return NULL;
}

/* Several threads post to loop 1 at once: every message runs once, on
 * loop 1's thread (never the main one), in each producer's order. */
static void test_posts_from_threads_run_in_order_on_the_loop(void)
{
	char err[128];
	struct event_base *base0 = event_base_new();
	struct loops *l = loops_new(base0, 2, err, sizeof(err));
	static struct tmsg msgs[PRODUCERS][PER_PRODUCER];
	struct producer pr[PRODUCERS];
	pthread_t thr[PRODUCERS];

	CU_ASSERT_FATAL(l != NULL);
	CU_ASSERT_EQUAL(loops_count(l), 2);
	CU_ASSERT_PTR_EQUAL(loops_base(l, 0), base0);
	CU_ASSERT_PTR_NOT_EQUAL(loops_base(l, 1), base0);
	memset(&seen_at, 0, sizeof(seen_at));
	CU_ASSERT_EQUAL_FATAL(loops_run(l, err, sizeof(err)), 0);
	for (unsigned i = 0; i < PRODUCERS; i++) {
		pr[i] = (struct producer){ l, i, msgs[i] };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&thr[i], NULL, produce,
						     &pr[i]), 0);
	}
	for (unsigned i = 0; i < PRODUCERS; i++)
		pthread_join(thr[i], NULL);
	/* The stop joins loop 1 after it ran what was posted before it. */
	loops_stop_threads(l);
	CU_ASSERT_EQUAL(seen_at[1].runs, PRODUCERS * PER_PRODUCER);
	CU_ASSERT_EQUAL(seen_at[1].out_of_order, 0);
	CU_ASSERT_EQUAL(seen_at[1].wrong_thread, 0);
	for (unsigned i = 0; i < PRODUCERS; i++)
		CU_ASSERT_EQUAL(seen_at[1].next[i], PER_PRODUCER);
	CU_ASSERT(seen_at[1].have_thread &&
		  !pthread_equal(seen_at[1].thread, pthread_self()));
	loops_free(&l);
	CU_ASSERT_PTR_NULL(l);
	event_base_free(base0);
}

static unsigned inline_runs;

/* Count a message run. */
static void inline_fn(struct loop_msg *m)
{
	(void)m;
	inline_runs++;
}

/* One loop: a post runs at once, on the caller. After the threads stop,
 * a post to any loop runs at once too. */
static void test_one_loop_and_stopped_loops_run_at_once(void)
{
	char err[128];
	struct event_base *base0 = event_base_new();
	struct loops *one = loops_new(base0, 1, err, sizeof(err));
	struct loops *two = loops_new(base0, 2, err, sizeof(err));
	struct loop_msg m = { .fn = inline_fn };

	CU_ASSERT_FATAL(one != NULL && two != NULL);
	inline_runs = 0;
	loops_post(one, 0, &m);
	CU_ASSERT_EQUAL(inline_runs, 1);
	CU_ASSERT_EQUAL(loops_run(two, err, sizeof(err)), 0);
	loops_stop_threads(two);
	loops_post(two, 1, &m);
	CU_ASSERT_EQUAL(inline_runs, 2);
	loops_free(&one);
	loops_free(&two);
	event_base_free(base0);
}

/* A message posted to loop 0 before it runs waits for its base's turn;
 * one posted to a loop whose thread never started runs at the stop. */
static void test_posted_messages_wait_for_their_loop(void)
{
	char err[128];
	struct event_base *base0 = event_base_new();
	struct loops *l = loops_new(base0, 3, err, sizeof(err));
	struct loop_msg a = { .fn = inline_fn }, b = { .fn = inline_fn };

	CU_ASSERT_FATAL(l != NULL);
	inline_runs = 0;
	loops_post(l, 0, &a);
	loops_post(l, 2, &b);
	CU_ASSERT_EQUAL(inline_runs, 0);
	event_base_loop(base0, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	CU_ASSERT_EQUAL(inline_runs, 1);	/* a, on loop 0's turn */
	loops_stop_threads(l);			/* no thread ran: b here */
	CU_ASSERT_EQUAL(inline_runs, 2);
	loops_free(&l);
	event_base_free(base0);
}

static unsigned chain_seen[4], chain_n;

/* Record which message ran, in order. */
static void chain_fn(struct loop_msg *m)
{
	struct tmsg *t = (struct tmsg *)m;

	chain_seen[chain_n++] = t->seq;
}

/* A chain gathered on one thread runs on its loop in the order it was
 * gathered, after what was posted before it; the chain is empty after. */
static void test_chain_runs_in_order(void)
{
	char err[128];
	struct event_base *base0 = event_base_new();
	struct loops *l = loops_new(base0, 2, err, sizeof(err));
	struct tmsg t[4] = {
		{ .m.fn = chain_fn, .seq = 0 }, { .m.fn = chain_fn, .seq = 1 },
		{ .m.fn = chain_fn, .seq = 2 }, { .m.fn = chain_fn, .seq = 3 },
	};
	struct loop_chain c = { 0 };

	CU_ASSERT_FATAL(l != NULL);
	chain_n = 0;
	loops_post(l, 1, &t[0].m);
	for (unsigned i = 1; i < 4; i++)
		loop_chain_add(&c, &t[i].m);
	loops_post_chain(l, 1, &c);
	CU_ASSERT_PTR_NULL(c.head);
	loops_post_chain(l, 1, &c);		/* empty: nothing */
	CU_ASSERT_EQUAL(chain_n, 0);		/* loop 1 never ran yet */
	CU_ASSERT_EQUAL_FATAL(loops_run(l, err, sizeof(err)), 0);
	loops_stop_threads(l);
	CU_ASSERT_EQUAL(chain_n, 4);
	for (unsigned i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(chain_seen[i], i);
	loops_free(&l);
	event_base_free(base0);
}

/* Out of range: refused with a reason. */
static void test_thread_count_bounds(void)
{
	char err[128] = "";
	struct event_base *base0 = event_base_new();

	CU_ASSERT_PTR_NULL(loops_new(base0, 0, err, sizeof(err)));
	CU_ASSERT(strstr(err, "threads must be 1..64") != NULL);
	CU_ASSERT_PTR_NULL(loops_new(base0, LOOPS_MAX + 1, err, sizeof(err)));
	CU_ASSERT_EQUAL(loops_count(NULL), 1);
	event_base_free(base0);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("loops", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "posts_from_threads_run_in_order_on_the_loop",
		    test_posts_from_threads_run_in_order_on_the_loop);
	CU_add_test(s, "one_loop_and_stopped_loops_run_at_once",
		    test_one_loop_and_stopped_loops_run_at_once);
	CU_add_test(s, "posted_messages_wait_for_their_loop",
		    test_posted_messages_wait_for_their_loop);
	CU_add_test(s, "chain_runs_in_order", test_chain_runs_in_order);
	CU_add_test(s, "thread_count_bounds", test_thread_count_bounds);
	return 0;
}
