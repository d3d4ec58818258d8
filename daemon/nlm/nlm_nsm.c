/* SPDX-License-Identifier: MIT */
/*
 * nlm_nsm: an upstream's reboot passed on to the proxy's clients (see
 * nlm_nsm.h for the steps, the names chosen and the state).
 *
 * A reboot is handled in one loop turn: the table's records of the
 * upstream's exports taken out (each client's list handed to note_client,
 * which keeps each distinct client address once), the state number moved
 * on and written, then one SM_NOTIFY per address submitted to the call
 * pool; each answer is only counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "daemon.h"
#include "log.h"
#include "nlm4_prot.h"
#include "nlm_locks.h"
#include "nlm_nsm.h"
#include "nlm_owner.h"
#include "rpccall.h"

#define NSM_STATE_FILE "nsm_state"
#define NSM_ADDRS_MAX 256	/* client addresses notified per reboot */

struct nlm_nsm {
	char **watched;			/* upstream hosts watched, owned */
	size_t nwatched;
	int32_t state;			/* odd */
	char *path;			/* state_dir/nsm_state, or NULL */
	struct nlm_nsm_stats st;
};

/* One client address to notify. */
struct nsm_addr {
	int family;
	uint8_t addr[16];
};

/* What a reboot collects: the client addresses to notify. */
struct reboot_ctx {
	struct daemon *d;
	const char *host;
	struct nsm_addr addrs[NSM_ADDRS_MAX];
	size_t naddrs;
	bool over;			/* more addresses than addrs holds */
};

/* Read the state number of path: odd, or 1. */
static int32_t state_read(const char *path)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	long v = 1;

	if (!f)
		return 1;
	if (fscanf(f, "%ld", &v) != 1 || v < 1 || v > INT32_MAX - 2)
		v = 1;
	fclose(f);
	return (int32_t)(v | 1);
}

/* Write n's state number to its file (a new file renamed over it). */
static void state_write(const struct nlm_nsm *n)
{
	char tmp[4096];
	FILE *f;

	if (!n->path || snprintf(tmp, sizeof(tmp), "%s.tmp", n->path) >=
			(int)sizeof(tmp))
		return;
	f = fopen(tmp, "we");
	if (f && fprintf(f, "%d\n", n->state) > 0 && fclose(f) == 0) {
		if (rename(tmp, n->path) == 0)
			return;
	} else if (f) {
		fclose(f);
	}
	log_warn("nlm: cannot write the NSM state number to %s: %s; kept "
		 "in memory", n->path, strerror(errno));
	unlink(tmp);
}

struct nlm_nsm *nlm_nsm_new(const char *state_dir)
{
	struct nlm_nsm *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (state_dir && state_dir[0]) {
		size_t len = strlen(state_dir) + sizeof(NSM_STATE_FILE) + 1;

		if (!(n->path = malloc(len))) {
			free(n);
			return NULL;
		}
		snprintf(n->path, len, "%s/%s", state_dir, NSM_STATE_FILE);
	}
	n->state = state_read(n->path);
	return n;
}

void nlm_nsm_free(struct nlm_nsm **pn)
{
	struct nlm_nsm *n = *pn;

	if (!n)
		return;
	for (size_t i = 0; i < n->nwatched; i++)
		free(n->watched[i]);
	free(n->watched);
	free(n->path);
	free(n);
	*pn = NULL;
}

bool nlm_nsm_watch(struct nlm_nsm *n, const char *host)
{
	char **w, *copy;

	if (!n || !host || !host[0])
		return false;
	for (size_t i = 0; i < n->nwatched; i++)
		if (strcasecmp(n->watched[i], host) == 0)
			return false;
	if (!(copy = strdup(host)))
		return false;
	w = realloc(n->watched, (n->nwatched + 1) * sizeof(*w));
	if (!w) {
		free(copy);
		return false;
	}
	w[n->nwatched++] = copy;
	n->watched = w;
	return true;
}

bool nlm_nsm_is_upstream(const struct daemon *d, const char *mon_name)
{
	if (!mon_name || !mon_name[0])
		return false;
	for (size_t i = 0; i < d->nexports; i++) {
		const struct conf_export *c = d->exports[i]->conf;

		if (c->url.server && strcasecmp(c->url.server, mon_name) == 0)
			return true;
	}
	return false;
}

/* A record on an export whose upstream is the rebooted host. */
static bool on_host(const void *arg, const struct nlm_held *h)
{
	const struct reboot_ctx *x = arg;
	const struct export_rt *ex = daemon_export(x->d, h->export_id);

	/* An export a reload removed: its upstream is not known any more,
	 * the record stays (a client's reboot releases it as before). */
	return ex && ex->conf->url.server &&
	       strcasecmp(ex->conf->url.server, x->host) == 0;
}

/* Keep the address of owner o once in x. */
static void note_addr(struct reboot_ctx *x, const struct nlm_owner *o)
{
	size_t alen = o->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < x->naddrs; i++)
		if (x->addrs[i].family == o->family &&
		    memcmp(x->addrs[i].addr, o->addr, alen) == 0)
			return;
	if (x->naddrs == NSM_ADDRS_MAX) {
		x->over = true;
		return;
	}
	x->addrs[x->naddrs].family = o->family;
	memcpy(x->addrs[x->naddrs].addr, o->addr, alen);
	x->naddrs++;
}

/* A client's records taken out: its addresses noted, the list freed. */
static void note_client(void *arg, const char *caller, struct nlm_held *h)
{
	struct reboot_ctx *x = arg;

	(void)caller;
	for (const struct nlm_held *r = h; r; r = r->next) {
		struct nlm_owner o;

		if (nlm_owner_unwrap(r->oh, r->oh_len, &o) == 0 &&
		    (o.family == AF_INET || o.family == AF_INET6))
			note_addr(x, &o);
	}
	nlm_held_free_list(h);
}

/* The source address this host would send to a from, as text into
 * out[len]: 0, or -1 (no route, no socket). No packet is sent. */
static int local_addr_for(const struct nsm_addr *a, char *out, size_t len)
{
	struct sockaddr_storage ss, me;
	socklen_t sl, ml = sizeof(me);
	int fd, rc = -1;

	memset(&ss, 0, sizeof(ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(111);
		memcpy(&s4->sin_addr, a->addr, 4);
		sl = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(111);
		memcpy(&s6->sin6_addr, a->addr, 16);
		sl = sizeof(*s6);
	}
	fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0 &&
	    getsockname(fd, (struct sockaddr *)&me, &ml) == 0) {
		const void *p = me.ss_family == AF_INET ?
			(const void *)&((struct sockaddr_in *)&me)->sin_addr :
			(const void *)&((struct sockaddr_in6 *)&me)->sin6_addr;

		if (inet_ntop(me.ss_family, p, out, (socklen_t)len))
			rc = 0;
	}
	close(fd);
	return rc;
}

/* An SM_NOTIFY answered (or not). */
static void notify_done(enum clnt_stat st, void *res, void *arg)
{
	struct nlm_nsm *n = arg;

	(void)res;
	if (st == RPC_INTR)
		return;
	if (st == RPC_SUCCESS)
		n->st.notified++;
	else
		n->st.unreachable++;
}

/* Send SM_NOTIFY (state) to the statd of client address a. */
static void notify_client(struct nlm_nsm *n, const struct nlm_nsm_ctx *ctx,
			  const struct nsm_addr *a)
{
	char host[INET6_ADDRSTRLEN], me[INET6_ADDRSTRLEN];
	struct rpccall_spec s = {
		.host = host, .port = 0, .prog = SM_PROG, .vers = SM_VERS,
		.proc = SM_NOTIFY,
		.timeout = ctx->d->conf->upstream_timeout,
		.machine = ctx->caller,
	};
	sm_stat_chge chg;

	if (!inet_ntop(a->family, a->addr, host, sizeof(host))) {
		n->st.unreachable++;
		return;
	}
	memset(&chg, 0, sizeof(chg));
	chg.mon_name = local_addr_for(a, me, sizeof(me)) == 0 ?
		me : (char *)(uintptr_t)ctx->caller;
	chg.state = n->state;
	log_info("nlm: telling %s that %s rebooted (state %d): its lock "
		 "manager reclaims its locks", host, chg.mon_name, chg.state);
	if (rpccall_submit(ctx->pool, &s, (xdrproc_t)xdr_sm_stat_chge, &chg,
			   NULL, 0, notify_done, n) != 0)
		n->st.unreachable++;
}

/* Move the state number on by 2, staying odd and positive. */
static void state_bump(struct nlm_nsm *n)
{
	n->state = n->state > INT32_MAX - 2 ? 1 : n->state + 2;
	state_write(n);
}

void nlm_nsm_upstream_rebooted(struct nlm_nsm *n,
			       const struct nlm_nsm_ctx *ctx,
			       const char *host, int state)
{
	struct reboot_ctx *x = calloc(1, sizeof(*x));
	unsigned dropped;

	if (!x) {
		log_warn("nlm: out of memory handling %s's reboot", host);
		return;
	}
	x->d = ctx->d;
	x->host = host;
	dropped = nlm_locks_take_each_if(ctx->locks, on_host, x, note_client,
					 x);
	n->st.upstream_reboots++;
	log_info("nlm: upstream %s rebooted (state %d): its lock manager lost "
		 "the %u locks the proxy held there; notifying %zu client "
		 "addresses", host, state, dropped, x->naddrs);
	if (x->naddrs)
		state_bump(n);
	for (size_t i = 0; i < x->naddrs; i++)
		notify_client(n, ctx, &x->addrs[i]);
	if (x->over)
		log_warn("nlm: more than %d client addresses held locks on %s: "
			 "the others are not notified", NSM_ADDRS_MAX, host);
	free(x);
}

int32_t nlm_nsm_state(const struct nlm_nsm *n)
{
	return n->state;
}

void nlm_nsm_stats_get(const struct nlm_nsm *n, struct nlm_nsm_stats *st)
{
	if (n)
		*st = n->st;
	else
		memset(st, 0, sizeof(*st));
}

const char *nlm_nsm_check_why(const struct nlm_nsm *n)
{
	if (!n)
		return NULL;
	if (!(n->state & 1))
		return "nlm_nsm: the NSM state number is even";
	for (size_t i = 0; i < n->nwatched; i++)
		for (size_t j = i + 1; j < n->nwatched; j++)
			if (strcasecmp(n->watched[i], n->watched[j]) == 0)
				return "nlm_nsm: an upstream host watched twice";
	return NULL;
}
