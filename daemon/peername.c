/* SPDX-License-Identifier: MIT */
/*
 * peername: client addresses' host names, looked up off the loop (see
 * peername.h).
 *
 * States of an entry: PENDING (a lookup is queued or running) -> DONE
 * (name set, "" for none). The table and the entries are touched by the
 * loop thread only. The worker sees only its own request copies: it pops
 * one from `todo`, looks it up without the lock, and pushes the answer on
 * `done`, then writes the eventfd; the loop moves answers into the table.
 * An answer whose entry is gone (cleared at reload) is dropped.
 *
 * Invariants: every PENDING entry has exactly one request in todo, in the
 * worker's hands or in done, unless gen moved past it (cleared); count ==
 * HASH_COUNT(table).
 */
#include "peername.h"

#include "conf.h"

#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uthash.h>
#include <utlist.h>

struct pn_key {
	int family;
	uint8_t addr[16];
};

struct pn_entry {
	struct pn_key key;
	char *name;		/* owned; NULL while PENDING */
	UT_hash_handle hh;
};

/* A lookup handed to the worker and back. */
struct pn_req {
	struct pn_key key;
	unsigned gen;		/* p->gen when queued */
	char *name;		/* the answer, owned; "" for none */
	struct pn_req *next;
};

struct peername {
	struct event_base *base;
	struct pn_entry *table;
	unsigned gen;		/* bumped by peername_clear */
	struct peername_stats st;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pn_req *todo, *done;
	bool stop, started;
	pthread_t thread;
	int efd;
	struct event *ev;
};

/* The key of sa; false for another family. */
static bool key_of(const struct sockaddr *sa, struct pn_key *k)
{
	const uint8_t *addr;

	memset(k, 0, sizeof(*k));
	k->family = conf_sockaddr_ip(sa, &addr);
	if (!k->family)
		return false;
	memcpy(k->addr, addr, k->family == AF_INET ? 4 : 16);
	return true;
}

/* Look the name of k up (blocking): the name, or "" for none. Owned. */
static char *lookup(const struct pn_key *k)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char host[NI_MAXHOST];

	memset(&ss, 0, sizeof(ss));
	if (k->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, k->addr, 4);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, k->addr, 16);
		len = sizeof(*in6);
	}
	if (getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), NULL,
			0, NI_NAMEREQD) != 0)
		host[0] = '\0';
	return strdup(host);
}

/* The worker: answer requests until told to stop. */
static void *worker(void *arg)
{
	struct peername *p = arg;
	struct pn_req *r;
	uint64_t one = 1;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		if (!p->todo) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		r = p->todo;
		LL_DELETE(p->todo, r);
		pthread_mutex_unlock(&p->mu);
		r->name = lookup(&r->key);
		pthread_mutex_lock(&p->mu);
		LL_APPEND(p->done, r);
		if (write(p->efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow here; nothing to do. */
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Move one answer into the table. */
static void answer(struct peername *p, struct pn_req *r)
{
	struct pn_entry *e = NULL;

	if (r->gen == p->gen)
		HASH_FIND(hh, p->table, &r->key, sizeof(r->key), e);
	if (e && !e->name && r->name) {
		e->name = r->name;
		r->name = NULL;
		if (e->name[0])
			p->st.found++;
		else
			p->st.none++;
	}
	free(r->name);
	free(r);
}

/* The eventfd fired: take the worker's answers. */
static void done_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peername *p = arg;
	struct pn_req *list, *r, *tmp;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another callback took the count. */
	}
	pthread_mutex_lock(&p->mu);
	list = p->done;
	p->done = NULL;
	pthread_mutex_unlock(&p->mu);
	LL_FOREACH_SAFE(list, r, tmp)
		answer(p, r);
}

struct peername *peername_new(struct event_base *base)
{
	struct peername *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->base = base;
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0)
		goto fail;
	p->ev = event_new(base, p->efd, EV_READ | EV_PERSIST, done_cb, p);
	if (!p->ev || event_add(p->ev, NULL) != 0)
		goto fail;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	return p;
fail:
	if (p->ev)
		event_free(p->ev);
	if (p->efd >= 0)
		close(p->efd);
	free(p);
	return NULL;
}

/* Free a list of requests. */
static void reqs_free(struct pn_req *list)
{
	struct pn_req *r, *tmp;

	LL_FOREACH_SAFE(list, r, tmp) {
		free(r->name);
		free(r);
	}
}

void peername_free(struct peername **pp)
{
	struct peername *p = *pp;

	if (!p)
		return;
	*pp = NULL;
	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	reqs_free(p->todo);
	reqs_free(p->done);
	peername_clear(p);
	event_free(p->ev);
	close(p->efd);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Queue a lookup of k; false when it cannot be queued. */
static bool queue(struct peername *p, const struct pn_key *k)
{
	struct pn_req *r = calloc(1, sizeof(*r));

	if (!r)
		return false;
	r->key = *k;
	r->gen = p->gen;
	if (!p->started) {
		if (pthread_create(&p->thread, NULL, worker, p) != 0) {
			free(r);
			return false;
		}
		p->started = true;
	}
	pthread_mutex_lock(&p->mu);
	LL_APPEND(p->todo, r);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return true;
}

/* Forget the answered entries when the table is full. */
static void trim(struct peername *p)
{
	struct pn_entry *e, *tmp;

	if (HASH_COUNT(p->table) < PEERNAME_MAX)
		return;
	HASH_ITER(hh, p->table, e, tmp) {
		if (!e->name)
			continue;
		HASH_DEL(p->table, e);
		free(e->name);
		free(e);
	}
}

const char *peername_get(struct peername *p, const struct sockaddr *sa)
{
	struct pn_entry *e;
	struct pn_key k;

	if (!p || !key_of(sa, &k))
		return "";
	HASH_FIND(hh, p->table, &k, sizeof(k), e);
	if (e)
		return e->name;
	trim(p);
	e = calloc(1, sizeof(*e));
	if (!e)
		return "";
	e->key = k;
	if (!queue(p, &k)) {
		free(e);
		return "";
	}
	HASH_ADD(hh, p->table, key, sizeof(e->key), e);
	return NULL;
}

void peername_set(struct peername *p, const struct sockaddr *sa,
		  const char *name)
{
	struct pn_entry *e;
	struct pn_key k;

	if (!p || !key_of(sa, &k))
		return;
	HASH_FIND(hh, p->table, &k, sizeof(k), e);
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->key = k;
		HASH_ADD(hh, p->table, key, sizeof(e->key), e);
	}
	free(e->name);
	e->name = strdup(name);
}

void peername_clear(struct peername *p)
{
	struct pn_entry *e, *tmp;

	if (!p)
		return;
	p->gen++;
	HASH_ITER(hh, p->table, e, tmp) {
		HASH_DEL(p->table, e);
		free(e->name);
		free(e);
	}
}

void peername_stats_get(const struct peername *p, struct peername_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	*st = p->st;
	st->cached = HASH_COUNT(p->table);
}
