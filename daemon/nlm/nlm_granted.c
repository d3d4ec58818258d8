/* SPDX-License-Identifier: MIT */
/*
 * nlm_granted: an upstream's GRANTED callback relayed to the waiting
 * client's lock manager (see nlm_granted.h for the steps, the answers and
 * the state).
 *
 * A relay (struct granted) goes: made (granted_new: the owner unwrapped,
 * the handles and the client's address copied) -> GETATTR upstream ->
 * recorded and GRANTED called at the client -> answered (granted_finish:
 * the reply to GRANTED, or GRANTED_RES for GRANTED_MSG) and freed. It
 * copies what it needs from the call's arguments, so a GRANTED_MSG's
 * request may be answered at once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "checkobj.h"
#include "conf.h"
#include "daemon.h"
#include "fh.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "nlm4_prot.h"
#include "nlm_granted.h"
#include "nlm_locks.h"
#include "nlm_msg.h"
#include "nlm_ops.h"
#include "nlm_owner.h"
#include "ratelog.h"
#include "rpccall.h"
#include "rpcmsg.h"
#include "server.h"

#define GRANTED_MAGIC 0x4e4c4d47u	/* "NLMG" */

/* One relay in flight. */
struct granted {
	uint32_t magic;
	struct daemon *d;
	struct req *r;			/* GRANTED: answered at the end; NULL
					 * for GRANTED_MSG (answered at once) */
	struct export_rt *ex;
	bool recorded;			/* in the held-locks table */
	bool polled;			/* the client held the lock already
					 * when it was recorded (its own LOCK,
					 * a poll of its blocked lock) */
	uint64_t grants;		/* the record's grants count just
					 * after this relay's own add */
	struct nlm_held lk;		/* the lock as the upstream holds it
					 * (lk.oh is oh below, not owned) */
	uint8_t oh[NLM_OWNER_MAX];	/* the wrapped owner */
	size_t coh_off, coh_len;	/* the client's own oh inside oh */
	uint8_t cfh[FH_SIZE_MAX];	/* the client handle */
	size_t cfh_len;
	char caller[LM_MAXSTRLEN + 1];	/* the client's caller name */
	char host[INET6_ADDRSTRLEN];	/* the client's address */
	char up_host[INET6_ADDRSTRLEN];	/* where a GRANTED_RES goes: the
					 * upstream's address */
	unsigned up_port;		/* its NLM port; 0: its rpcbind */
	uint8_t cookie[MAXNETOBJ_SZ];	/* the upstream's cookie */
	size_t cookie_len;
};

/* The address of sa as bytes (4 for IPv4, IPv4-mapped IPv6 too; 16),
 * into a[16]: its length, or 0 for another family. */
static size_t addr_bytes(const struct sockaddr *sa, uint8_t a[16])
{
	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *v6 =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(v6)) {
			memcpy(a, v6->s6_addr + 12, 4);
			return 4;
		}
		memcpy(a, v6->s6_addr, 16);
		return 16;
	}
	return 0;
}

/* Whether r comes from ex's upstream: its URL's server, when that is an
 * address literal, must be r's peer (a name is not looked up: taken). As
 * Linux's nlmclnt_grant takes a GRANTED only from the lock's server. */
static bool from_upstream(struct req *r, const struct export_rt *ex)
{
	const char *server = ex->conf->url.server;
	uint8_t want[16], got[16];
	size_t n = addr_bytes(req_peer(r), got);

	if (inet_pton(AF_INET, server, want) == 1)
		return n == 4 && memcmp(want, got, 4) == 0;
	if (inet_pton(AF_INET6, server, want) == 1)
		return n == 16 && memcmp(want, got, 16) == 0;
	return true;
}

/* The client's address of owner o as text into g->host: 0, or -1. */
static int owner_host(const struct nlm_owner *o, struct granted *g)
{
	return inet_ntop(o->family, o->addr, g->host, sizeof(g->host)) ? 0 : -1;
}

/* Copy a's lock into g, which o (unwrapped from it) names: 0, or -1 when
 * a handle, a name or an address does not fit. */
static int granted_fill(struct granted *g, const nlm4_testargs *a,
			const struct nlm_owner *o)
{
	const nlm4_lock *lk = &a->alock;

	if (lk->fh.nlm4_netobj_len == 0 ||
	    lk->fh.nlm4_netobj_len > NLM_LOCKS_FH_MAX ||
	    lk->oh.nlm4_netobj_len > sizeof(g->oh) ||
	    a->cookie.nlm4_netobj_len > sizeof(g->cookie) ||
	    o->caller_len >= sizeof(g->caller) || owner_host(o, g) != 0)
		return -1;
	if (nfs3_guard_wrap_fh(g->d, g->ex,
			       (const uint8_t *)lk->fh.nlm4_netobj_val,
			       lk->fh.nlm4_netobj_len, g->cfh, &g->cfh_len) != 0)
		return -1;
	g->lk.export_id = o->export_id;
	g->lk.fh_len = lk->fh.nlm4_netobj_len;
	memcpy(g->lk.fh, lk->fh.nlm4_netobj_val, g->lk.fh_len);
	memcpy(g->oh, lk->oh.nlm4_netobj_val, lk->oh.nlm4_netobj_len);
	g->lk.oh = g->oh;
	g->lk.oh_len = lk->oh.nlm4_netobj_len;
	g->coh_off = (size_t)(o->oh - (const uint8_t *)lk->oh.nlm4_netobj_val);
	g->coh_len = o->oh_len;
	g->lk.svid = lk->svid;
	g->lk.off = lk->l_offset;
	g->lk.len = lk->l_len;
	g->lk.exclusive = a->exclusive;
	/* An empty netobj or name may come with a NULL pointer. */
	if (o->caller_len)
		memcpy(g->caller, o->caller, o->caller_len);
	g->caller[o->caller_len] = '\0';
	g->cookie_len = a->cookie.nlm4_netobj_len;
	if (g->cookie_len)
		memcpy(g->cookie, a->cookie.nlm4_netobj_val, g->cookie_len);
	return 0;
}

/* A relay of r's lock, or NULL: out of memory, or (counted foreign) its
 * owner is not one the proxy wrapped, its export is gone, r is not from
 * that export's upstream, or its fields do not fit. The upstream's
 * address and NLM port for a GRANTED_RES are taken now. */
static struct granted *granted_new(struct req *r, struct nlm_shared *sh)
{
	const nlm4_testargs *a = r->args;
	struct granted *g;
	struct nlm_owner o;
	struct export_rt *ex;

	if (nlm_owner_unwrap((const uint8_t *)a->alock.oh.nlm4_netobj_val,
			     a->alock.oh.nlm4_netobj_len, &o) != 0 ||
	    !(ex = daemon_export(r->d, o.export_id)) || !from_upstream(r, ex))
		goto foreign;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->magic = GRANTED_MAGIC;
	g->d = r->d;
	g->ex = ex;
	snprintf(g->up_host, sizeof(g->up_host), "%s", req_peer_host(r));
	g->up_port = (unsigned)ex->conf->url.nlm_port;
	if (granted_fill(g, a, &o) == 0)
		return g;
	free(g);
foreign:
	sh->st->granted_foreign++;
	return NULL;
}

/* GRANTED_RES sent to an upstream (or not): nothing more to do. */
static void granted_res_sent(enum clnt_stat st, void *res, void *arg)
{
	(void)st;
	(void)res;
	(void)arg;
}

/* Send GRANTED_RES stat with cookie[0..len) to the lock manager at
 * host:port (0: its rpcbind); its answer is void and not waited for. */
static void send_granted_res(struct daemon *d, struct nlm_shared *sh,
			     const char *host, unsigned port, uint8_t *cookie,
			     size_t len, nlm4_stats stat)
{
	nlm4_res res;
	struct rpccall_spec s = {
		.host = host, .port = port, .prog = NLM_PROG,
		.vers = NLM4_VERS, .proc = NLMPROC4_GRANTED_RES,
		.timeout = d->conf->upstream_timeout, .machine = sh->caller,
	};

	memset(&res, 0, sizeof(res));
	res.cookie.nlm4_netobj_val = (char *)cookie;
	res.cookie.nlm4_netobj_len = (u_int)len;
	res.stat.stat = stat;
	if (rpccall_submit(sh->pool, &s, (xdrproc_t)xdr_nlm4_res, &res, NULL,
			   0, granted_res_sent, NULL) != 0)
		sh->st->failed++;
}

/* Answer g's upstream stat (GRANTED's reply, or a GRANTED_RES) and free
 * g. */
static void granted_finish(struct granted *g, nlm4_stats stat)
{
	struct nlm_shared sh;
	struct req *r = g->r;

	g->magic = 0;
	if (r) {
		nlm4_res res;

		r->op = NULL;
		memset(&res, 0, sizeof(res));
		res.cookie = ((nlm4_testargs *)r->args)->cookie;
		res.stat.stat = stat;
		req_reply(r, (xdrproc_t)xdr_nlm4_res, &res);
	} else if (nlm_shared_get(g->d, &sh)) {
		send_granted_res(g->d, &sh, g->up_host, g->up_port, g->cookie,
				 g->cookie_len, stat);
	}
	free(g);
}

/* Take g's record out of the held-locks table: the upstream releases the
 * lock its client did not take. */
static void granted_unrecord(struct granted *g, struct nlm_shared *sh)
{
	if (g->recorded)
		nlm_locks_unlock(sh->locks, g->caller, g->lk.fh, g->lk.fh_len,
				 g->oh, g->lk.oh_len, g->lk.off, g->lk.len);
	g->recorded = false;
}

/*
 * g's relay failed (refused, unreachable, not sent): does its client hold
 * the lock anyway? Its lock manager polls a blocked lock (Linux's every
 * 30 s); a poll granted before the relay recorded the lock, or while it
 * was under way (the record's grants count went up), makes the client
 * answer GRANTED "not waiting" or leaves it silent behind a firewall, yet
 * it holds the lock. Then the upstream hears NLM4_GRANTED, the record
 * stays, and this returns true (g answered and freed); else false.
 */
static bool client_holds(struct granted *g, struct nlm_shared *sh)
{
	if (!g->recorded ||
	    (!g->polled &&
	     nlm_locks_grants(sh->locks, g->caller, &g->lk) <= g->grants))
		return false;
	sh->st->granted_polled++;
	granted_finish(g, NLM4_GRANTED);
	return true;
}

/* The client's lock manager answered GRANTED (or did not). */
static void relay_done(enum clnt_stat st, void *res, void *arg)
{
	struct granted *g = arg;
	struct nlm_shared sh;
	const nlm4_res *nr = res;

	CHECK_OBJ(g, GRANTED_MAGIC);
	if (!nlm_shared_get(g->d, &sh) || st == RPC_INTR) {
		/* Stopping (the pool is going: no GRANTED_RES can be sent;
		 * the upstream's own wait for one ends it). */
		if (g->r) {
			granted_finish(g, NLM4_DENIED);
		} else {
			g->magic = 0;
			free(g);
		}
		return;
	}
	if (st == RPC_SUCCESS && nr && nr->stat.stat == NLM4_GRANTED) {
		sh.st->granted_relayed++;
		granted_finish(g, NLM4_GRANTED);
		return;
	}
	if (client_holds(g, &sh))
		return;
	if (st == RPC_SUCCESS) {
		sh.st->granted_refused++;
	} else {
		sh.st->granted_unreachable++;
		if (ratelog_admit(sh.fail_log, daemon_now(), 10.0, NULL))
			log_warn("nlm: the lock manager of client %s (%s) did "
				 "not take a granted lock: %s; the upstream is "
				 "told NLM4_DENIED and releases it", g->caller,
				 g->host, clnt_sperrno(st));
	}
	granted_unrecord(g, &sh);
	granted_finish(g, NLM4_DENIED);
}

/* Call GRANTED at g's client with its own owner and handle: 0, or -1
 * (nothing sent). */
static int relay_send(struct granted *g, struct nlm_shared *sh)
{
	struct nlm_msg_via via = {
		.pool = sh->pool, .machine = sh->caller,
		.timeout = g->d->conf->upstream_timeout,
	};
	nlm4_testargs a;

	memset(&a, 0, sizeof(a));
	a.cookie.nlm4_netobj_val = (char *)g->cookie;
	a.cookie.nlm4_netobj_len = (u_int)g->cookie_len;
	a.exclusive = g->lk.exclusive;
	a.alock.caller_name = sh->caller;
	a.alock.fh.nlm4_netobj_val = (char *)g->cfh;
	a.alock.fh.nlm4_netobj_len = (u_int)g->cfh_len;
	a.alock.oh.nlm4_netobj_val = (char *)g->oh + g->coh_off;
	a.alock.oh.nlm4_netobj_len = (u_int)g->coh_len;
	a.alock.svid = g->lk.svid;
	a.alock.l_offset = g->lk.off;
	a.alock.l_len = g->lk.len;
	return nlm_call_client(&via, g->host, NLMPROC4_GRANTED,
			       (xdrproc_t)xdr_nlm4_testargs, &a,
			       (xdrproc_t)xdr_nlm4_res, sizeof(nlm4_res),
			       relay_done, g);
}

/* The granted file's GETATTR came back: the cache observes it, the lock
 * is recorded (its client watched if it is its first), then relayed. */
static void granted_getattr_done(enum upstream_status status, void *decoded,
				 void *arg)
{
	struct granted *g = arg;
	struct nlm_shared sh;
	int rc;

	CHECK_OBJ(g, GRANTED_MAGIC);
	nlm_observe_getattr(g->d, g->ex, g->lk.fh, g->lk.fh_len, status,
			    decoded);
	if (!nlm_shared_get(g->d, &sh)) {
		granted_finish(g, NLM4_DENIED);	/* stopped meanwhile */
		return;
	}
	if (g->caller[0]) {
		g->polled = nlm_locks_grants(sh.locks, g->caller, &g->lk) > 0;
		rc = nlm_locks_add(sh.locks, g->caller, &g->lk);
		g->recorded = rc >= 0;
		g->grants = nlm_locks_grants(sh.locks, g->caller, &g->lk);
		if (rc == 1)
			nlm_monitor_client(g->d, g->caller);
	}
	if (relay_send(g, &sh) == 0)
		return;
	if (client_holds(g, &sh))
		return;
	sh.st->granted_unreachable++;
	granted_unrecord(g, &sh);
	granted_finish(g, NLM4_DENIED);
}

/* Start g: its file's GETATTR upstream (as the proxy's root). */
static void granted_start(struct granted *g, struct nlm_shared *sh)
{
	struct nfs_cred uc = { .uid = 0, .gid = 0, .machine = sh->caller };
	GETATTR3args ga;

	ga.object.data.data_val = (char *)g->lk.fh;
	ga.object.data.data_len = (u_int)g->lk.fh_len;
	if (nfs3_send(g->ex, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args,
		      &ga, &uc, granted_getattr_done, g) != 0)
		granted_getattr_done(UPSTREAM_EDOWN, NULL, g);
}

enum op_status nlm_op_granted(struct req *r)
{
	struct nlm_shared sh;
	struct granted *g;
	nlm4_res res;

	if (!nlm_shared_get(r->d, &sh))
		return req_reply_accept_error(r, PROG_UNAVAIL);
	g = granted_new(r, &sh);
	if (!g) {
		/* "Not waiting for it": the upstream releases the lock. */
		memset(&res, 0, sizeof(res));
		res.cookie = ((nlm4_testargs *)r->args)->cookie;
		res.stat.stat = NLM4_DENIED;
		return req_reply(r, (xdrproc_t)xdr_nlm4_res, &res);
	}
	g->r = r;
	r->op = g;
	granted_start(g, &sh);
	return OP_PENDING;
}

enum op_status nlm_op_granted_msg(struct req *r)
{
	struct nlm_shared sh;
	struct granted *g;
	const nlm4_testargs *a = r->args;

	if (!nlm_shared_get(r->d, &sh))
		return req_reply_accept_error(r, PROG_UNAVAIL);
	g = granted_new(r, &sh);
	if (g)
		granted_start(g, &sh);
	else		/* as nlm_op_granted: back to the caller's rpcbind */
		send_granted_res(r->d, &sh, req_peer_host(r), 0,
				 (uint8_t *)a->cookie.nlm4_netobj_val,
				 a->cookie.nlm4_netobj_len, NLM4_DENIED);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}
