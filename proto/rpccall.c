/* SPDX-License-Identifier: MIT */
/*
 * rpccall: ONC RPC client calls on worker threads (see rpccall.h for the
 * model, the thread rules and the invariants).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <unistd.h>
#include <event2/event.h>
#include <rpc/pmap_clnt.h>
#include <rpc/pmap_prot.h>
#include <rpc/rpc.h>

#include "rpccall.h"
#include "rpcmsg.h"

#define RC_WORKERS_MAX	16
#define RC_CLIENTS	4	/* connections a worker keeps, by peer */

enum rc_list { RC_QUEUED, RC_RUNNING, RC_DONE };

struct rc_job {
	TAILQ_ENTRY(rc_job) link;
	enum rc_list list;
	bool abandoned;			/* the pool stopped while running */
	char *host, *machine;
	unsigned port;
	uint32_t prog, vers, proc;
	struct timeval tv;
	struct nfs_cred cred;		/* AUTH_SYS identity (machine unused) */
	uint8_t *args;			/* the encoded arguments */
	size_t args_len;
	xdrproc_t xres;
	size_t res_size;
	void *res;			/* res_size bytes, decoded by xres */
	enum clnt_stat st;
	rpccall_done_fn done;
	void *arg;
};

TAILQ_HEAD(rc_jobs, rc_job);

/* What the loop and the workers share, under mu. */
struct rc_shared {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rc_jobs queued, running, done;
	unsigned njobs;			/* on the three lists */
	unsigned refs;			/* the loop (until stop) + workers */
	bool stopping;
	int efd;			/* done jobs wake the loop */
};

struct rpccall_pool {
	struct rc_shared *sh;
	struct event *ev;
};

/* One kept connection of a worker. */
struct rc_client {
	char *host;
	unsigned port;
	uint32_t prog, vers;
	CLIENT *clnt;
};

static void rc_job_free(struct rc_job *j)
{
	if (!j)
		return;
	if (j->res && j->xres)
		xdr_free(j->xres, j->res);
	free(j->res);
	free(j->args);
	free(j->host);
	free(j->machine);
	free(j);
}

static void rc_shared_unref(struct rc_shared *sh)
{
	bool last;

	pthread_mutex_lock(&sh->mu);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&sh->mu);
	if (!last)
		return;
	close(sh->efd);
	pthread_cond_destroy(&sh->cv);
	pthread_mutex_destroy(&sh->mu);
	free(sh);
}

static void rc_move(struct rc_shared *sh, struct rc_job *j, enum rc_list to)
{
	struct rc_jobs *l[] = { &sh->queued, &sh->running, &sh->done };

	TAILQ_REMOVE(l[j->list], j, link);
	TAILQ_INSERT_TAIL(l[to], j, link);
	j->list = to;
}

/* XDR routine of a job's arguments: its bytes as they are. */
static bool_t rc_xdr_raw(XDR *x, void *p)
{
	struct rc_job *j = p;

	return x->x_op != XDR_ENCODE ||
	       XDR_PUTBYTES(x, (char *)j->args, (u_int)j->args_len);
}

/* Give c the job's AUTH_SYS identity. 0, or -1 (no memory). */
static int rc_auth(CLIENT *c, const struct rc_job *j)
{
	gid_t gids[NFS_CRED_MAX_GIDS];

	for (uint32_t i = 0; i < j->cred.ngids; i++)
		gids[i] = j->cred.gids[i];
	if (c->cl_auth)
		auth_destroy(c->cl_auth);
	c->cl_auth = authunix_create((char *)j->machine, j->cred.uid,
				     j->cred.gid, (int)j->cred.ngids, gids);
	return c->cl_auth ? 0 : -1;
}

/* A new client to the job's peer, or NULL with *st the reason; its
 * credential is set per call (rc_auth). Worker thread. */
static CLIENT *rc_connect(const struct rc_job *j, enum clnt_stat *st)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	struct netconfig *nc;
	unsigned short port = (unsigned short)j->port;
	CLIENT *c = NULL;

	if (getaddrinfo(j->host, NULL, &hints, &ai) != 0 || !ai) {
		*st = RPC_UNKNOWNHOST;
		return NULL;
	}
	if (port == 0 && ai->ai_family != AF_INET) {
		/* IPv6: rpcbind v3/v4 through libtirpc. */
		struct timeval tv = j->tv;

		freeaddrinfo(ai);
		c = clnt_create_timed(j->host, j->prog, j->vers, "tcp", &tv);
		if (!c)
			*st = rpc_createerr.cf_stat;
		return c;
	}
	if (port == 0) {
		/* IPv4: the portmapper's GETPORT (pmap_getport), which,
		 * unlike libtirpc's rpcbind lookup, leaks nothing. */
		struct sockaddr_in pm = *(struct sockaddr_in *)ai->ai_addr;

		pm.sin_port = htons(PMAPPORT);
		port = pmap_getport(&pm, j->prog, j->vers, IPPROTO_TCP);
		if (port == 0) {
			*st = rpc_createerr.cf_stat == RPC_SUCCESS ?
				      RPC_PROGNOTREGISTERED :
				      rpc_createerr.cf_stat;
			freeaddrinfo(ai);
			return NULL;
		}
	}
	if (ai->ai_family == AF_INET)
		((struct sockaddr_in *)ai->ai_addr)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons(port);
	nc = getnetconfigent(ai->ai_family == AF_INET6 ? "tcp6" : "tcp");
	if (nc) {
		struct netbuf nb = { .maxlen = ai->ai_addrlen,
				     .len = ai->ai_addrlen,
				     .buf = ai->ai_addr };

		c = clnt_tli_create(RPC_ANYFD, nc, &nb, j->prog, j->vers, 0, 0);
		freenetconfigent(nc);
	}
	freeaddrinfo(ai);
	if (!c)
		*st = nc ? rpc_createerr.cf_stat : RPC_SYSTEMERROR;
	return c;
}

static void rc_client_drop(struct rc_client *k)
{
	if (k->clnt) {
		if (k->clnt->cl_auth)
			auth_destroy(k->clnt->cl_auth);
		clnt_destroy(k->clnt);
	}
	free(k->host);
	memset(k, 0, sizeof(*k));
}

/*
 * True if kept client k's connection may still carry a call: an idle
 * connection has nothing to read, so a readable one (the peer closed it:
 * EOF, a reset; or sent what nobody asked for) is given up before a call
 * is sent on it. Without this, the first call to a lock manager that
 * restarted went out on the dead connection and failed as RPC_CANTRECV
 * (the send itself succeeds), which cannot be retried safely; the Linux
 * RPC client likewise reconnects when the socket leaves ESTABLISHED
 * (xs_tcp_state_change).
 */
static bool rc_client_alive(struct rc_client *k)
{
	struct pollfd p = { .events = POLLIN };	/* EOF reads; POLLHUP, POLLERR always */

	if (!clnt_control(k->clnt, CLGET_FD, (char *)&p.fd))
		return false;
	return poll(&p, 1, 0) == 0;
}

/* The worker's kept client for j's peer, made when it has none (the
 * oldest slot given up for it) or when its connection has ended
 * (rc_client_alive). *fresh says it was just made. */
static struct rc_client *rc_client_get(struct rc_client *ks,
				       const struct rc_job *j, bool *fresh,
				       enum clnt_stat *st)
{
	struct rc_client *k = NULL;

	*fresh = false;
	for (size_t i = 0; i < RC_CLIENTS; i++)
		if (ks[i].clnt && ks[i].port == j->port &&
		    ks[i].prog == j->prog && ks[i].vers == j->vers &&
		    strcmp(ks[i].host, j->host) == 0) {
			if (rc_client_alive(&ks[i]))
				return &ks[i];
			rc_client_drop(&ks[i]);
			k = &ks[i];
			break;
		}
	for (size_t i = 0; i < RC_CLIENTS && !k; i++)
		if (!ks[i].clnt)
			k = &ks[i];
	if (!k) {
		rc_client_drop(&ks[RC_CLIENTS - 1]);
		memmove(&ks[1], &ks[0], (RC_CLIENTS - 1) * sizeof(*ks));
		memset(&ks[0], 0, sizeof(*ks));
		k = &ks[0];
	}
	k->host = strdup(j->host);
	if (!k->host) {
		*st = RPC_SYSTEMERROR;
		return NULL;
	}
	k->clnt = rc_connect(j, st);
	if (!k->clnt) {
		rc_client_drop(k);
		return NULL;
	}
	k->port = j->port;
	k->prog = j->prog;
	k->vers = j->vers;
	*fresh = true;
	return k;
}

/* Make j's call; j->st and j->res are its outcome. Worker thread. */
static void rc_call(struct rc_client *ks, struct rc_job *j)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		bool fresh;
		struct rc_client *k = rc_client_get(ks, j, &fresh, &j->st);

		if (!k)
			return;
		if (rc_auth(k->clnt, j) != 0) {
			j->st = RPC_SYSTEMERROR;
			return;
		}
		j->st = clnt_call(k->clnt, j->proc, (xdrproc_t)rc_xdr_raw,
				  (char *)j, j->xres ? j->xres :
				  (xdrproc_t)rpcmsg_xdr_void, j->res, j->tv);
		if (j->st == RPC_SUCCESS)
			return;
		if (j->st == RPC_CANTSEND || j->st == RPC_CANTRECV ||
		    j->st == RPC_TIMEDOUT || j->st == RPC_CANTDECODERES)
			rc_client_drop(k);
		/* Only a send that failed on a kept connection (the peer
		 * closed it while idle) is tried again: the call was not
		 * made. */
		if (fresh || j->st != RPC_CANTSEND)
			return;
		if (j->res && j->xres)
			xdr_free(j->xres, j->res);
	}
}

static void *rc_worker(void *p)
{
	struct rc_shared *sh = p;
	struct rc_client ks[RC_CLIENTS];

	memset(ks, 0, sizeof(ks));
	for (;;) {
		struct rc_job *j;

		pthread_mutex_lock(&sh->mu);
		while (!sh->stopping && TAILQ_EMPTY(&sh->queued))
			pthread_cond_wait(&sh->cv, &sh->mu);
		if (sh->stopping) {
			pthread_mutex_unlock(&sh->mu);
			break;
		}
		j = TAILQ_FIRST(&sh->queued);
		rc_move(sh, j, RC_RUNNING);
		pthread_mutex_unlock(&sh->mu);

		rc_call(ks, j);

		pthread_mutex_lock(&sh->mu);
		if (j->abandoned) {
			TAILQ_REMOVE(&sh->running, j, link);
			sh->njobs--;
			pthread_mutex_unlock(&sh->mu);
			rc_job_free(j);
			continue;
		}
		rc_move(sh, j, RC_DONE);
		{
			uint64_t one = 1;

			/* An eventfd's counter cannot overflow here. */
			if (write(sh->efd, &one, sizeof(one)) < 0)
				(void)0;
		}
		pthread_mutex_unlock(&sh->mu);
	}
	for (size_t i = 0; i < RC_CLIENTS; i++)
		rc_client_drop(&ks[i]);
	rc_shared_unref(sh);
	return NULL;
}

/* The loop's side: results of done jobs, their callbacks. */
static void rc_wake(evutil_socket_t fd, short what, void *arg)
{
	struct rpccall_pool *p = arg;
	struct rc_shared *sh = p->sh;
	struct rc_jobs got = TAILQ_HEAD_INITIALIZER(got);
	struct rc_job *j;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0)
		(void)0;	/* EAGAIN: another wake took it */
	pthread_mutex_lock(&sh->mu);
	TAILQ_CONCAT(&got, &sh->done, link);
	TAILQ_FOREACH(j, &got, link)
		sh->njobs--;
	pthread_mutex_unlock(&sh->mu);
	while ((j = TAILQ_FIRST(&got))) {
		TAILQ_REMOVE(&got, j, link);
		j->done(j->st, j->st == RPC_SUCCESS && j->xres ? j->res : NULL,
			j->arg);
		rc_job_free(j);
	}
}

struct rpccall_pool *rpccall_pool_new(struct event_base *base,
				      unsigned nworkers)
{
	struct rpccall_pool *p;
	struct rc_shared *sh;
	unsigned started = 0;

	if (nworkers < 1 || nworkers > RC_WORKERS_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	sh = calloc(1, sizeof(*sh));
	if (!p || !sh)
		goto fail;
	sh->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sh->efd < 0)
		goto fail;
	pthread_mutex_init(&sh->mu, NULL);
	pthread_cond_init(&sh->cv, NULL);
	TAILQ_INIT(&sh->queued);
	TAILQ_INIT(&sh->running);
	TAILQ_INIT(&sh->done);
	sh->refs = 1;
	p->sh = sh;
	p->ev = event_new(base, sh->efd, EV_READ | EV_PERSIST, rc_wake, p);
	if (!p->ev || event_add(p->ev, NULL) != 0)
		goto fail_stop;
	for (; started < nworkers; started++) {
		pthread_attr_t at;
		pthread_t t;
		int rc;

		pthread_mutex_lock(&sh->mu);
		sh->refs++;
		pthread_mutex_unlock(&sh->mu);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&t, &at, rc_worker, sh);
		pthread_attr_destroy(&at);
		if (rc != 0) {
			pthread_mutex_lock(&sh->mu);
			sh->refs--;
			pthread_mutex_unlock(&sh->mu);
			goto fail_stop;
		}
	}
	return p;
fail_stop:
	rpccall_pool_stop(&p);
	return NULL;
fail:
	if (sh && sh->efd > 0)
		close(sh->efd);
	free(sh);
	free(p);
	return NULL;
}

int rpccall_submit(struct rpccall_pool *p, const struct rpccall_spec *s,
		   xdrproc_t xargs, const void *args, xdrproc_t xres,
		   size_t res_size, rpccall_done_fn done, void *arg)
{
	struct rc_job *j;
	unsigned long len;
	void *a;	/* args: the XDR routines take no const */
	XDR x;

	if (!p || !s || !s->host || !done || !(s->timeout > 0) ||
	    (xres && !res_size) || (!xres && res_size) ||
	    (s->cred && s->cred->ngids > NFS_CRED_MAX_GIDS))
		return -1;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -1;
	j->host = strdup(s->host);
	j->machine = strdup(s->machine ? s->machine : "nfscached");
	memcpy(&a, &args, sizeof(a));
	len = xargs ? xdr_sizeof(xargs, a) : 0;
	j->args = malloc(len ? len : 1);
	j->res = res_size ? calloc(1, res_size) : NULL;
	if (!j->host || !j->machine || !j->args || (res_size && !j->res) ||
	    (xargs && len == 0))
		goto fail;
	if (xargs) {
		xdrmem_create(&x, (char *)j->args, (u_int)len, XDR_ENCODE);
		if (!xargs(&x, a)) {
			xdr_destroy(&x);
			goto fail;
		}
		j->args_len = xdr_getpos(&x);
		xdr_destroy(&x);
	}
	if (s->cred) {
		j->cred = *s->cred;
		j->cred.machine = NULL;
	}
	j->port = s->port;
	j->prog = s->prog;
	j->vers = s->vers;
	j->proc = s->proc;
	j->tv.tv_sec = (time_t)s->timeout;
	j->tv.tv_usec = (suseconds_t)((s->timeout - (double)j->tv.tv_sec) *
				      1e6);
	j->xres = xres;
	j->res_size = res_size;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&p->sh->mu);
	if (p->sh->stopping) {
		pthread_mutex_unlock(&p->sh->mu);
		goto fail;
	}
	j->list = RC_QUEUED;
	TAILQ_INSERT_TAIL(&p->sh->queued, j, link);
	p->sh->njobs++;
	pthread_cond_signal(&p->sh->cv);
	pthread_mutex_unlock(&p->sh->mu);
	return 0;
fail:
	j->xres = NULL;		/* nothing decoded to free */
	rc_job_free(j);
	return -1;
}

/* The first broken invariant of list l's jobs, or NULL; *n counts them.
 * The pool's mutex held. */
static const char *rc_list_check_why(const struct rc_jobs *head,
				     enum rc_list l, unsigned *n)
{
	const struct rc_job *j;

	TAILQ_FOREACH(j, head, link) {
		if (j->list != l)
			return "rpccall: a job is on a list it does not name";
		if (j->abandoned && l != RC_RUNNING)
			return "rpccall: an abandoned job is not running";
		if (!j->done)
			return "rpccall: a job has no callback";
		(*n)++;
	}
	return NULL;
}

const char *rpccall_check_why(const struct rpccall_pool *p)
{
	const char *why;
	unsigned n = 0;

	if (!p)
		return NULL;
	pthread_mutex_lock(&p->sh->mu);
	if (!(why = rc_list_check_why(&p->sh->queued, RC_QUEUED, &n)) &&
	    !(why = rc_list_check_why(&p->sh->running, RC_RUNNING, &n)) &&
	    !(why = rc_list_check_why(&p->sh->done, RC_DONE, &n)) &&
	    n != p->sh->njobs)
		why = "rpccall: njobs differs from the jobs on the lists";
	if (!why && p->sh->stopping)
		why = "rpccall: a pool in use is stopping";
	pthread_mutex_unlock(&p->sh->mu);
	return why;
}

unsigned rpccall_pending(const struct rpccall_pool *p)
{
	unsigned n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->sh->mu);
	n = p->sh->njobs;
	pthread_mutex_unlock(&p->sh->mu);
	return n;
}

void rpccall_pool_stop(struct rpccall_pool **pp)
{
	struct rpccall_pool *p = pp ? *pp : NULL;
	struct rc_jobs gone = TAILQ_HEAD_INITIALIZER(gone);
	struct rc_job *j;
	struct {
		rpccall_done_fn done;
		void *arg;
	} *running = NULL;
	size_t nrunning = 0, i = 0;

	if (!p)
		return;
	*pp = NULL;
	if (p->ev)
		event_free(p->ev);
	pthread_mutex_lock(&p->sh->mu);
	p->sh->stopping = true;
	TAILQ_FOREACH(j, &p->sh->running, link)
		nrunning++;
	running = calloc(nrunning ? nrunning : 1, sizeof(*running));
	TAILQ_FOREACH(j, &p->sh->running, link) {
		j->abandoned = true;
		if (running) {
			running[i].done = j->done;
			running[i].arg = j->arg;
			i++;
		}
	}
	TAILQ_CONCAT(&gone, &p->sh->done, link);
	TAILQ_CONCAT(&gone, &p->sh->queued, link);
	TAILQ_FOREACH(j, &gone, link)
		p->sh->njobs--;
	pthread_cond_broadcast(&p->sh->cv);
	pthread_mutex_unlock(&p->sh->mu);
	for (i = 0; running && i < nrunning; i++)
		running[i].done(RPC_INTR, NULL, running[i].arg);
	free(running);
	while ((j = TAILQ_FIRST(&gone))) {
		TAILQ_REMOVE(&gone, j, link);
		j->done(RPC_INTR, NULL, j->arg);
		rc_job_free(j);
	}
	rc_shared_unref(p->sh);
	free(p);
}
