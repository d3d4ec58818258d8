/* SPDX-License-Identifier: MIT */
/*
 * loops: the daemon's event loops (`threads`, docs/design.md "Owners,
 * loops and threads"). Loop 0 is the daemon's own event_base, run by the
 * main thread; loops 1..n-1 each have an event_base of their own run by a
 * pthread this module starts. Work moves between loops only as messages
 * posted to a loop's inbox: a multi-producer list under a mutex and an
 * eventfd the owning loop watches, emptied in one go at each wake-up, each
 * message run on the owning loop in the order it was posted.
 *
 * Invariants: a message is on at most one inbox (its `next` is the list's
 * own); an inbox's eventfd is written only when a post finds the list
 * empty, and each write wakes the loop once (edge-triggered), so a list
 * that is not empty always has a wake-up coming; after loops_stop_threads
 * no thread but the caller's runs any loop, and every inbox is empty.
 */
#ifndef NFSCACHED_DAEMON_LOOPS_H
#define NFSCACHED_DAEMON_LOOPS_H

#include <stddef.h>

struct event_base;
struct loops;
struct loop_msg;

/* What a message does, run on the loop it was posted to; m is the
 * message itself (embedded in its owner's struct: container_of it). */
typedef void (*loop_msg_fn)(struct loop_msg *m);

/* A message: embedded in the object it moves (a request, a connection's
 * socket), so that a post never allocates and never fails. */
struct loop_msg {
	struct loop_msg *next;		/* the inbox's; NULL when not posted */
	loop_msg_fn fn;
};

#define LOOPS_MAX 64	/* `threads`'s upper bound (conf.c) */

/*
 * Make n loops (1 <= n <= LOOPS_MAX): loop 0 is base0 (borrowed; the
 * caller runs it), loops 1..n-1 new bases, whose threads loops_run
 * starts: until then the caller may put events on every base. n == 1
 * makes no inbox: loops_post to loop 0 then runs the message at once.
 * Returns NULL with the reason in err[0..len): out of memory, an eventfd
 * that could not be made. Main thread.
 */
struct loops *loops_new(struct event_base *base0, unsigned n, char *err,
			size_t len);

/*
 * Start the threads of loops 1..n-1, each running its base until
 * loops_stop_threads. Returns 0, or -1 with the reason in err[0..len)
 * (a thread that could not be made; those started are stopped again).
 * Main thread, once, after the events the caller puts on the bases.
 */
int loops_run(struct loops *l, char *err, size_t len);

/* The number of loops (1 when l is NULL). Any thread. */
unsigned loops_count(const struct loops *l);

/* Loop k's event_base (k < loops_count), borrowed for l's life; loop 0's
 * is base0. Any thread (the pointer never changes); only loop k's own
 * thread may use the base while the loops run. */
struct event_base *loops_base(const struct loops *l, unsigned k);

/*
 * Post m to loop k's inbox (k < loops_count): m->fn(m) runs on loop k at
 * its next turn, after the messages posted before it by the same thread.
 * m must not be posted already; it belongs to loop k until its fn runs.
 * Any thread; never fails. With one loop, or after loops_stop_threads, fn
 * runs here at once.
 */
void loops_post(struct loops *l, unsigned k, struct loop_msg *m);

/*
 * A chain of messages for one loop, gathered by its poster and posted at
 * once (loops_post_chain): one lock and at most one wake-up for them all.
 * Zero-initialised is empty. Owned by the thread that gathers it.
 */
struct loop_chain {
	struct loop_msg *head;
	struct loop_msg **tail;		/* NULL while empty */
};

/* Add m to c (m not posted, not in another chain). */
void loop_chain_add(struct loop_chain *c, struct loop_msg *m);

/*
 * Post every message of c to loop k, in the order they were added, as
 * loops_post would one by one; c is empty after. Any thread; never fails.
 */
void loops_post_chain(struct loops *l, unsigned k, struct loop_chain *c);

/*
 * Stop and join the threads of loops 1..n-1 (each finishes the messages
 * already in its inbox first), then run what was posted to any inbox
 * meanwhile, on the calling thread, until every inbox is empty. After it
 * the caller is the only thread of every loop: it may use every base.
 * Main thread (loop 0), once; loops_free after.
 */
void loops_stop_threads(struct loops *l);

/* Free *lp (stopping its threads first if still running) and the bases
 * of loops 1..n-1 (not base0); clears *lp. Main thread, after everything
 * that owns an event on those bases freed it. NULL: nothing. */
void loops_free(struct loops **lp);

#endif
