/* SPDX-License-Identifier: MIT */
/*
 * peername: the host names of client addresses, for the wildcard entries
 * of exports' clients lists ("*.lab.example", exports(5)), and their
 * netgroup membership, for the "@group" entries. A name is looked up once
 * per address (getnameinfo with NI_NAMEREQD, as mountd's reverse lookup)
 * on a worker thread, never on the event loop; on the same thread, for
 * each netgroup the configuration names (peername_netgroups), innetgr(3)
 * says whether the host is a member, by its name, its name without the
 * domain or its address as text. Both are kept until the next reload
 * (peername_netgroups, peername_clear) or until the table holds
 * PEERNAME_MAX addresses (then every answered entry is forgotten at once).
 */
#ifndef NFSCACHED_DAEMON_PEERNAME_H
#define NFSCACHED_DAEMON_PEERNAME_H

#include <stdint.h>

struct conf;
struct event_base;
struct sockaddr;
struct peername;

/* Addresses kept at most. */
#define PEERNAME_MAX 4096

/* Counters (for /metrics). */
struct peername_stats {
	uint64_t found;		/* lookups that gave a name */
	uint64_t none;		/* lookups that gave none */
	uint64_t cached;	/* addresses held now */
};

/*
 * A table of names on base's loop. The worker thread starts at the first
 * lookup. Returns NULL when out of memory. Free with peername_free, which
 * joins the worker (a lookup in progress is waited for).
 */
struct peername *peername_new(struct event_base *base);
void peername_free(struct peername **p);

/*
 * The host name of sa (AF_INET or AF_INET6; v4-mapped v6 as v4): the name,
 * "" when its address has none (or it cannot be looked up), or NULL when it
 * is not known yet: then a lookup has been started (once per address) and
 * a later call gives the answer. The string is borrowed until the next
 * peername_clear or peername_free. p NULL gives "".
 */
const char *peername_get(struct peername *p, const struct sockaddr *sa);

/*
 * The netgroups (names without '@', NULL-terminated) that sa's host is a
 * member of, once peername_get gives its name; NULL when it is a member of
 * none or its name is not known yet. Borrowed like peername_get's name.
 * Loop thread.
 */
const char *const *peername_groups(struct peername *p,
				   const struct sockaddr *sa);

/* Record name and groups (NULL-terminated, may be NULL) as the answer for
 * sa, as a finished lookup would (tests). */
void peername_set(struct peername *p, const struct sockaddr *sa,
		  const char *name, const char *const *groups);

/*
 * Take the netgroups c's clients entries name (conf_netgroups) as the ones
 * to evaluate for each address from now on, and forget every answer (as
 * peername_clear): at start, before the first lookup, and at each reload.
 * Loop thread. 0, or -1 when out of memory (then no netgroup is
 * evaluated: every client is a member of none).
 */
int peername_netgroups(struct peername *p, const struct conf *c);

/* Forget every answer (at reload: names are looked up again). Lookups in
 * progress are dropped when they finish. */
void peername_clear(struct peername *p);

void peername_stats_get(const struct peername *p, struct peername_stats *st);

#endif
