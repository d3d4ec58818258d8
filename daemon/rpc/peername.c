/* SPDX-License-Identifier: MIT */
/*
 * peername: client addresses' host names, looked up off the loop (see
 * peername.h).
 *
 * States of an entry: PENDING (a lookup is queued or running) -> DONE
 * (name set, "" for none; groups the netgroups it is a member of). The
 * table and the entries are touched by the loop thread only. The worker
 * sees only its own request copies: it pops one from `todo`, looks it up
 * and evaluates its netgroups (innetgr, which may block on NIS or LDAP)
 * without the lock, and pushes the answer on `done`, then writes the
 * eventfd; the loop moves answers into the table. An answer whose entry is
 * gone (cleared at reload) is dropped.
 *
 * Invariants: every PENDING entry has exactly one request in todo, in the
 * worker's hands or in done, unless gen moved past it (cleared); count ==
 * HASH_COUNT(table); a struct pn_groups is never changed once made and is
 * freed when refs (the table's one plus one per request holding it, all
 * counted on the loop thread) drops to 0, so the worker reads a request's
 * groups without the lock; a PENDING entry has groups NULL.
 */
#include "peername.h"

#include "conf.h"

#include <arpa/inet.h>
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
	char **groups;		/* owned NULL-terminated netgroup names it
				 * is a member of; NULL for none */
	UT_hash_handle hh;
};

/* The netgroups the configuration names: immutable, shared by the table
 * and the requests (refs counted on the loop thread only). */
struct pn_groups {
	unsigned refs;
	char **names;		/* owned, NULL-terminated */
};

/* A lookup handed to the worker and back. */
struct pn_req {
	struct pn_key key;
	unsigned gen;		/* p->gen when queued */
	struct pn_groups *groups; /* a reference: the groups to evaluate */
	char *name;		/* the answer, owned; "" for none */
	char **member;		/* the answer's netgroups, owned; NULL for
				 * none */
	struct pn_req *next;
};

struct peername {
	struct event_base *base;
	struct pn_entry *table;
	struct pn_groups *groups; /* the configuration's netgroups; NULL none */
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

/* Drop a reference to g (loop thread). */
static void groups_put(struct pn_groups *g)
{
	if (!g || --g->refs > 0)
		return;
	conf_strv_free(g->names);
	free(g);
}

/* Whether the host of k, named host ("" for none), is a member of netgroup
 * group: as mountd tries it, by its name, by its name without the domain,
 * and by its address as text (a triple may name either). Blocking. */
static bool is_member(const char *group, const struct pn_key *k,
		      const char *host)
{
	char a[INET6_ADDRSTRLEN], shortname[NI_MAXHOST];
	const char *dot = strchr(host, '.');

	if (host[0] && innetgr(group, host, NULL, NULL))
		return true;
	if (host[0] && dot && dot > host) {
		snprintf(shortname, sizeof(shortname), "%.*s",
			 (int)(dot - host), host);
		if (innetgr(group, shortname, NULL, NULL))
			return true;
	}
	return inet_ntop(k->family, k->addr, a, sizeof(a)) &&
	       innetgr(group, a, NULL, NULL);
}

/* The netgroups of g that the host of k (named host) is a member of: an
 * owned NULL-terminated vector, or NULL for none (or out of memory: the
 * client then matches no netgroup entry). Blocking. */
static char **members(const struct pn_groups *g, const struct pn_key *k,
		      const char *host)
{
	size_t max = 0, n = 0;
	char **v;

	for (size_t i = 0; g && g->names[i]; i++)
		max++;
	if (max == 0)
		return NULL;
	v = calloc(max + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < max; i++)
		if (is_member(g->names[i], k, host) &&
		    (v[n] = strdup(g->names[i])) != NULL)
			n++;
	if (n == 0) {
		free(v);
		return NULL;
	}
	return v;
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
		if (r->name)
			r->member = members(r->groups, &r->key, r->name);
		pthread_mutex_lock(&p->mu);
		LL_APPEND(p->done, r);
		if (write(p->efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow here; nothing to do. */
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Free a request and drop its reference to its groups (loop thread, or
 * once the worker is joined). */
static void req_free(struct pn_req *r)
{
	groups_put(r->groups);
	conf_strv_free(r->member);
	free(r->name);
	free(r);
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
		e->groups = r->member;
		r->member = NULL;
		if (e->name[0])
			p->st.found++;
		else
			p->st.none++;
	}
	req_free(r);
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

	LL_FOREACH_SAFE(list, r, tmp)
		req_free(r);
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
	groups_put(p->groups);
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
	r->groups = p->groups;
	if (r->groups)
		r->groups->refs++;
	if (!p->started) {
		if (pthread_create(&p->thread, NULL, worker, p) != 0) {
			req_free(r);
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

/* Remove e from the table and free it. */
static void entry_free(struct peername *p, struct pn_entry *e)
{
	HASH_DEL(p->table, e);
	conf_strv_free(e->groups);
	free(e->name);
	free(e);
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
		entry_free(p, e);
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

/* A copy of the NULL-terminated vector v (NULL or empty: NULL). */
static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **c;

	while (v && v[n])
		n++;
	if (n == 0 || !(c = calloc(n + 1, sizeof(*c))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			conf_strv_free(c);
			return NULL;
		}
	return c;
}

const char *const *peername_groups(struct peername *p,
				   const struct sockaddr *sa)
{
	struct pn_entry *e;
	struct pn_key k;

	if (!p || !key_of(sa, &k))
		return NULL;
	HASH_FIND(hh, p->table, &k, sizeof(k), e);
	return e && e->name ? (const char *const *)e->groups : NULL;
}

void peername_set(struct peername *p, const struct sockaddr *sa,
		  const char *name, const char *const *groups)
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
	conf_strv_free(e->groups);
	e->groups = strv_dup(groups);
}

void peername_clear(struct peername *p)
{
	struct pn_entry *e, *tmp;

	if (!p)
		return;
	p->gen++;
	HASH_ITER(hh, p->table, e, tmp)
		entry_free(p, e);
}

int peername_netgroups(struct peername *p, const struct conf *c)
{
	struct pn_groups *g = NULL;
	char **names;

	if (!p)
		return 0;
	peername_clear(p);
	groups_put(p->groups);
	p->groups = NULL;
	names = conf_netgroups(c);
	if (!names)
		return -1;
	if (!names[0]) {
		conf_strv_free(names);
		return 0;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		conf_strv_free(names);
		return -1;
	}
	g->refs = 1;
	g->names = names;
	p->groups = g;
	return 0;
}

void peername_stats_get(const struct peername *p, struct peername_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	*st = p->st;
	st->cached = HASH_COUNT(p->table);
}
