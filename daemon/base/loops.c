/* SPDX-License-Identifier: MIT */
/* loops: see loops.h. */
#include "loops.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <event2/event.h>

#include "checkobj.h"

#define LOOP_MAGIC 0x4c4f4f50u

/* One loop: its base, its inbox and (for k >= 1) its thread. */
struct loop {
	uint32_t magic;
	unsigned idx;
	struct event_base *base;	/* loop 0: borrowed; else owned */
	pthread_t thr;
	bool thr_started;
	int efd;			/* the inbox's wake-up; -1: none */
	struct event *ev;		/* efd readable, on base */
	pthread_mutex_t mu;		/* guards head and tail */
	struct loop_msg *head;
	struct loop_msg **tail;
	struct loop_msg exit_msg;	/* loops_stop_threads's */
};

struct loops {
	unsigned n;
	bool stopped;			/* only the main thread runs now */
	struct loop loop[];		/* n of them */
};

/* Take loop p's whole inbox, in posting order. */
static struct loop_msg *inbox_take(struct loop *p)
{
	struct loop_msg *m;

	pthread_mutex_lock(&p->mu);
	m = p->head;
	p->head = NULL;
	p->tail = &p->head;
	pthread_mutex_unlock(&p->mu);
	return m;
}

/* Run a taken list of messages; true if there was one. */
static bool inbox_run(struct loop_msg *m)
{
	bool any = m != NULL;

	while (m) {
		struct loop_msg *next = m->next;

		m->next = NULL;
		m->fn(m);
		m = next;
	}
	return any;
}

/* The inbox's eventfd was written: run what was posted. The eventfd is
 * watched edge-triggered (each write(2) to an eventfd wakes its epoll
 * watchers, readable or not), so its count is never read back: a system
 * call less per wake-up; it would take 2^64 - 2 writes to fill. */
static void inbox_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loop *p = arg;

	CHECK_OBJ(p, LOOP_MAGIC);
	(void)fd;
	(void)what;
	inbox_run(inbox_take(p));
}

/* loops_stop_threads's message: end this loop's event_base_loop. */
static void exit_msg_fn(struct loop_msg *m)
{
	struct loop *p = (struct loop *)((char *)m -
					 offsetof(struct loop, exit_msg));

	CHECK_OBJ(p, LOOP_MAGIC);
	event_base_loopbreak(p->base);
}

/* A loop thread: run its base until the exit message. */
static void *loop_main(void *arg)
{
	struct loop *p = arg;

	event_base_loop(p->base, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

/* Make p's inbox on its base. */
static int inbox_init(struct loop *p, char *err, size_t len)
{
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0) {
		snprintf(err, len, "eventfd: %s", strerror(errno));
		return -1;
	}
	p->ev = event_new(p->base, p->efd, EV_READ | EV_PERSIST | EV_ET,
			  inbox_cb, p);
	if (!p->ev || event_add(p->ev, NULL) != 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	return 0;
}

struct loops *loops_new(struct event_base *base0, unsigned n, char *err,
			size_t len)
{
	struct loops *l;

	if (n < 1 || n > LOOPS_MAX) {
		snprintf(err, len, "threads must be 1..%d", LOOPS_MAX);
		return NULL;
	}
	l = calloc(1, sizeof(*l) + n * sizeof(l->loop[0]));
	if (!l) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	l->n = n;
	for (unsigned k = 0; k < n; k++) {
		struct loop *p = &l->loop[k];

		p->magic = LOOP_MAGIC;
		p->idx = k;
		p->efd = -1;
		p->tail = &p->head;
		p->exit_msg.fn = exit_msg_fn;
		pthread_mutex_init(&p->mu, NULL);
	}
	l->loop[0].base = base0;
	for (unsigned k = 0; n > 1 && k < n; k++) {
		struct loop *p = &l->loop[k];

		if (k > 0 && !(p->base = event_base_new())) {
			snprintf(err, len, "cannot create event loop %u", k);
			loops_free(&l);
			return NULL;
		}
		if (inbox_init(p, err, len) != 0) {
			loops_free(&l);
			return NULL;
		}
	}
	return l;
}

int loops_run(struct loops *l, char *err, size_t len)
{
	for (unsigned k = 1; k < l->n; k++) {
		struct loop *p = &l->loop[k];
		int rc = pthread_create(&p->thr, NULL, loop_main, p);

		if (rc != 0) {
			snprintf(err, len, "cannot start loop thread %u: %s", k,
				 strerror(rc));
			loops_stop_threads(l);
			return -1;
		}
		p->thr_started = true;
	}
	return 0;
}

unsigned loops_count(const struct loops *l)
{
	return l ? l->n : 1;
}

struct event_base *loops_base(const struct loops *l, unsigned k)
{
	return l->loop[k].base;
}

/* Append the chain head..*tail to loop p's inbox. */
static void inbox_put(struct loops *l, struct loop *p, struct loop_msg *head,
		      struct loop_msg **tail)
{
	bool was_empty;
	uint64_t one = 1;

	CHECK_OBJ(p, LOOP_MAGIC);
	if (p->efd < 0 || l->stopped) {
		inbox_run(head);
		return;
	}
	pthread_mutex_lock(&p->mu);
	was_empty = p->head == NULL;
	*p->tail = head;
	p->tail = tail;
	pthread_mutex_unlock(&p->mu);
	/* Written only by the post that found the list empty: the loop
	 * reads the count before it takes the list, so a later post either
	 * joins what it takes or writes again. */
	if (was_empty && write(p->efd, &one, sizeof(one)) != sizeof(one))
		abort();	/* an eventfd write fails only past 2^64-2 */
}

void loops_post(struct loops *l, unsigned k, struct loop_msg *m)
{
	m->next = NULL;
	inbox_put(l, &l->loop[k], m, &m->next);
}

void loop_chain_add(struct loop_chain *c, struct loop_msg *m)
{
	m->next = NULL;
	if (!c->tail)
		c->tail = &c->head;
	*c->tail = m;
	c->tail = &m->next;
}

void loops_post_chain(struct loops *l, unsigned k, struct loop_chain *c)
{
	struct loop_msg *head = c->head;
	struct loop_msg **tail = c->tail;

	c->head = NULL;
	c->tail = NULL;
	if (head)
		inbox_put(l, &l->loop[k], head, tail);
}

void loops_stop_threads(struct loops *l)
{
	bool any;

	if (!l || l->stopped)
		return;
	for (unsigned k = 1; k < l->n; k++) {
		struct loop *p = &l->loop[k];

		if (!p->thr_started)
			continue;
		loops_post(l, k, &p->exit_msg);
		pthread_join(p->thr, NULL);
		p->thr_started = false;
	}
	l->stopped = true;
	do {
		any = false;
		for (unsigned k = 0; k < l->n; k++)
			any |= inbox_run(inbox_take(&l->loop[k]));
	} while (any);
}

void loops_free(struct loops **lp)
{
	struct loops *l = lp ? *lp : NULL;

	if (!l)
		return;
	/* A start that failed half way: stop what did start. */
	loops_stop_threads(l);
	for (unsigned k = 0; k < l->n; k++) {
		struct loop *p = &l->loop[k];

		if (p->ev)
			event_free(p->ev);
		if (p->efd >= 0)
			close(p->efd);
		if (k > 0 && p->base)
			event_base_free(p->base);
		pthread_mutex_destroy(&p->mu);
		p->magic = 0;
	}
	free(l);
	*lp = NULL;
}
