/* SPDX-License-Identifier: MIT */
/*
 * nlm_ops: NLM v4 served and forwarded upstream (see nlm_ops.h for what
 * is forwarded, the coherence points and the state's invariant).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "attr.h"
#include "cache.h"
#include "checkobj.h"
#include "daemon.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"
#include "nfs3_status.h"
#include "nlm4_prot.h"
#include "nlm_ops.h"
#include "nlm_owner.h"
#include "ratelog.h"
#include "rpccall.h"
#include "rpcmsg.h"
#include "server.h"
#include "writeback.h"

#define NLM_WORKERS 4		/* calls to lock managers at once */
#define NLM_OP_MAGIC 0x4e4c4d4fu	/* "NLMO" */

struct nlm_op;

struct nlm {
	struct rpccall_pool *pool;
	struct nlm_op *ops;		/* forwarded calls in flight (utlist) */
	unsigned nops;
	char caller[256];		/* nlm_caller_name, or the host name */
	struct nlm_stats st;
	struct ratelog fail_log;	/* upstream lock managers that failed */
};

/* One forwarded call, r->op, on d->nlm->ops until answered. */
struct nlm_op {
	uint32_t magic;
	struct nlm_op *prev, *next;
	struct req *r;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *f;		/* UNLOCK: the file flushed; counted */
	nlm4_stats stat;		/* LOCK: the upstream's answer, replied
					 * after the GETATTR */
	size_t oh_len;
	uint8_t oh[NLM_OWNER_MAX];	/* the owner the upstream sees */
};

/* The argument handle of each forwarded procedure, for
 * nfs3_guard_unwrap (nlm4_netobj has nfs_fh3's layout). */
static const struct nfs3_proc unwrap_test = {
	.nfh = 1, .fh = { offsetof(nlm4_testargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_lock = {
	.nfh = 1, .fh = { offsetof(nlm4_lockargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_cancel = {
	.nfh = 1, .fh = { offsetof(nlm4_cancargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_unlock = {
	.nfh = 1, .fh = { offsetof(nlm4_unlockargs, alock.fh), 0 } };

/* The lock a forwarded call names, its handle's place and whether it
 * asks for an exclusive lock. */
static nlm4_lock *op_lock(struct req *r, const struct nfs3_proc **m,
			  bool *exclusive)
{
	switch (r->ent->proc) {
	case NLMPROC4_TEST:
		*m = &unwrap_test;
		*exclusive = ((nlm4_testargs *)r->args)->exclusive;
		return &((nlm4_testargs *)r->args)->alock;
	case NLMPROC4_LOCK:
	case NLMPROC4_NM_LOCK:
		*m = &unwrap_lock;
		*exclusive = ((nlm4_lockargs *)r->args)->exclusive;
		return &((nlm4_lockargs *)r->args)->alock;
	case NLMPROC4_CANCEL:
		*m = &unwrap_cancel;
		*exclusive = ((nlm4_cancargs *)r->args)->exclusive;
		return &((nlm4_cancargs *)r->args)->alock;
	default:
		*m = &unwrap_unlock;
		*exclusive = false;
		return &((nlm4_unlockargs *)r->args)->alock;
	}
}

/* Reply stat to r, a forwarded procedure's call, with its own cookie
 * (every argument struct starts with it). */
static enum op_status reply_stat(struct req *r, nlm4_stats stat)
{
	nlm4_netobj *cookie = r->args;

	if (r->ent->proc == NLMPROC4_TEST) {
		nlm4_testres t;

		memset(&t, 0, sizeof(t));
		t.cookie = *cookie;
		t.test_stat.stat = stat;
		return req_reply(r, (xdrproc_t)xdr_nlm4_testres, &t);
	}
	nlm4_res res = { .cookie = *cookie, .stat = { stat } };

	return req_reply(r, (xdrproc_t)xdr_nlm4_res, &res);
}

static void op_free(struct daemon *d, struct nlm_op *op)
{
	CHECK_OBJ(op, NLM_OP_MAGIC);
	if (d->nlm) {
		DL_DELETE(d->nlm->ops, op);
		d->nlm->nops--;
	}
	op->magic = 0;
	if (op->f)
		cfile_put(d->cache, &op->f);
	free(op);
}

/* Answer op's call stat and free op. */
static void op_finish(struct nlm_op *op, nlm4_stats stat)
{
	struct req *r = op->r;
	struct daemon *d = r->d;

	r->op = NULL;
	op_free(d, op);
	reply_stat(r, stat);
}

/* A granted LOCK's GETATTR came back: if the file changed upstream, the
 * cache drops what it held of it (cfile_attr_observe); then GRANTED. */
static void lock_getattr_done(enum upstream_status status, void *decoded,
			      void *arg)
{
	struct nlm_op *op = arg;
	struct daemon *d = op->r->d;
	GETATTR3res *res = decoded;
	bool exclusive;
	const struct nfs3_proc *m;
	nlm4_lock *lk = op_lock(op->r, &m, &exclusive);
	struct cfile *f = cache_find(d->cache, (const uint8_t *)lk->fh.nlm4_netobj_val,
				     lk->fh.nlm4_netobj_len);

	if (f && status == UPSTREAM_OK && res && res->status == NFS3_OK) {
		struct cattr a;

		attr_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, &a);
		if (cfile_attr_observe(d->cache, f, &a, daemon_now(),
				       daemon_ac(op->ex, a.type)))
			d->nlm->st.revalidated++;
	} else if (f) {
		cfile_attr_expire(f);	/* the next use asks upstream */
	}
	if (f)
		cfile_put(d->cache, &f);
	op_finish(op, op->stat);
}

/* The upstream lock manager answered op's call (or did not). */
static void fwd_done(enum clnt_stat st, void *res, void *arg)
{
	struct nlm_op *op = arg;

	CHECK_OBJ(op, NLM_OP_MAGIC);
	struct req *r = op->r;
	struct daemon *d = r->d;

	if (st != RPC_SUCCESS) {
		if (st != RPC_INTR && d->nlm) {
			d->nlm->st.failed++;
			if (ratelog_admit(&d->nlm->fail_log, daemon_now(),
					  10.0, NULL))
				log_warn("nlm: the lock manager of %s did not "
					 "answer: %s; clients get "
					 "NLM4_DENIED_NOLOCKS", op->ex->conf->upstream,
					 clnt_sperrno(st));
		}
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	if (r->ent->proc == NLMPROC4_TEST) {
		/* A shallow copy is replied: res stays as decoded, for the
		 * pool's xdr_free. */
		nlm4_testres t = *(nlm4_testres *)res;
		nlm4_holder *h = &t.test_stat.nlm4_testrply_u.holder;
		struct nlm_owner o;

		if (t.test_stat.stat == NLM4_DENIED &&
		    nlm_owner_unwrap((const uint8_t *)h->oh.nlm4_netobj_val,
				     h->oh.nlm4_netobj_len, &o) == 0) {
			/* A client of the proxy's holds it: its own owner,
			 * which the wrapped one ends with. */
			h->oh.nlm4_netobj_val +=
				h->oh.nlm4_netobj_len - o.oh_len;
			h->oh.nlm4_netobj_len = (u_int)o.oh_len;
		}
		t.cookie = *(nlm4_netobj *)r->args;
		r->op = NULL;
		op_free(d, op);
		req_reply(r, (xdrproc_t)xdr_nlm4_testres, &t);
		return;
	}
	op->stat = ((nlm4_res *)res)->stat.stat;
	if ((r->ent->proc == NLMPROC4_LOCK || r->ent->proc == NLMPROC4_NM_LOCK) &&
	    op->stat == NLM4_GRANTED) {
		bool exclusive;
		const struct nfs3_proc *m;
		nlm4_lock *lk = op_lock(r, &m, &exclusive);
		GETATTR3args ga;

		ga.object.data.data_val = lk->fh.nlm4_netobj_val;
		ga.object.data.data_len = lk->fh.nlm4_netobj_len;
		if (nfs3_send(op->ex, NFSPROC3_GETATTR,
			      (xdrproc_t)xdr_GETATTR3args, &ga, &op->uc,
			      lock_getattr_done, op) == 0)
			return;
		lock_getattr_done(UPSTREAM_EDOWN, NULL, op);
		return;
	}
	op_finish(op, op->stat);
}

/* Send op's call, its lock rewritten for the upstream. */
static void fwd_send(struct nlm_op *op)
{
	struct req *r = op->r;
	struct daemon *d = r->d;
	struct nlm *n = d->nlm;
	bool exclusive;
	const struct nfs3_proc *m;
	nlm4_lock *lk = op_lock(r, &m, &exclusive);
	const struct conf_export *e = op->ex->conf;
	struct rpccall_spec s = {
		.host = e->url.server, .port = (unsigned)e->url.nlm_port,
		.prog = NLM_PROG, .vers = NLM4_VERS, .proc = r->ent->proc,
		.timeout = d->conf->upstream_timeout,
		.machine = n ? n->caller : NULL,
	};
	bool test = r->ent->proc == NLMPROC4_TEST;
	nlm4_lock mine = *lk;	/* the decoded fields, freed with r */
	int rc;

	if (!n) {		/* stopped while its write-back ran */
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	/* Encoded by rpccall_submit, then put back: the server frees the
	 * arguments as decoded. */
	lk->caller_name = n->caller;
	lk->oh.nlm4_netobj_val = (char *)op->oh;
	lk->oh.nlm4_netobj_len = (u_int)op->oh_len;
	rc = rpccall_submit(n->pool, &s, r->ent->xdr_args, r->args,
			    test ? (xdrproc_t)xdr_nlm4_testres :
				   (xdrproc_t)xdr_nlm4_res,
			    test ? sizeof(nlm4_testres) : sizeof(nlm4_res),
			    fwd_done, op);
	*lk = mine;
	if (rc != 0) {
		n->st.failed++;
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	n->st.forwarded++;
}

/* The file's written bytes are upstream and committed: UNLOCK now. */
static void unlock_flushed(struct daemon *d, nfsstat3 status, void *arg)
{
	struct nlm_op *op = arg;

	if (status != NFS3_OK)
		/* Its write-back failed or timed out: the lock goes anyway
		 * (holding it would not write them), the failure stays the
		 * file's (its next COMMIT reports it). */
		log_info("nlm: UNLOCK forwarded while the file's write-back "
			 "reports %s", nfs3_status_name(status));
	(void)d;
	fwd_send(op);
}

enum op_status nlm_op_null(struct req *r)
{
	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status nlm_op_unavail(struct req *r)
{
	return req_reply_accept_error(r, r->d->nlm ? PROC_UNAVAIL :
						     PROG_UNAVAIL);
}

enum op_status nlm_op_forward(struct req *r)
{
	struct daemon *d = r->d;
	struct nlm *n = d->nlm;
	struct export_rt *ex = NULL;
	struct conf_access acc;
	const struct nfs3_proc *m;
	struct nlm_op *op;
	struct cfile *f;
	bool exclusive;
	nlm4_lock *lk;
	nfsstat3 st;

	if (!n)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	lk = op_lock(r, &m, &exclusive);
	if (nfs3_guard_unwrap(d, m, r->args, &ex) != NFS3_OK) {
		n->st.refused++;
		return reply_stat(r, NLM4_STALE_FH);
	}
	st = nfs3_guard_request(r, ex->conf, REFUSAL_NFS, NULL, &acc);
	if (st == NFS3ERR_JUKEBOX)	/* the caller's name is looked up */
		return reply_stat(r, NLM4_DENIED_GRACE_PERIOD);
	if (st != NFS3_OK) {
		n->st.refused++;
		return reply_stat(r, NLM4_FAILED);
	}
	if (acc.read_only && exclusive &&
	    (r->ent->proc == NLMPROC4_LOCK || r->ent->proc == NLMPROC4_NM_LOCK)) {
		nfs3_guard_refused(r, ex->conf, REFUSAL_NFS, NULL,
				   REFUSAL_READ_ONLY, "read-only for this client");
		n->st.refused++;
		return reply_stat(r, NLM4_ROFS);
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return reply_stat(r, NLM4_DENIED_NOLOCKS);
	op->oh_len = nlm_owner_wrap(ex->conf->id, req_peer(r), lk->caller_name,
				    lk->caller_name ? strlen(lk->caller_name) : 0,
				    (const uint8_t *)lk->oh.nlm4_netobj_val,
				    lk->oh.nlm4_netobj_len, op->oh);
	if (op->oh_len == 0) {
		free(op);
		n->st.refused++;
		return reply_stat(r, NLM4_FAILED);
	}
	op->magic = NLM_OP_MAGIC;
	op->r = r;
	op->ex = ex;
	nfs3_guard_cred(&r->call, &acc, &op->uc);
	r->op = op;
	DL_APPEND(n->ops, op);
	n->nops++;
	if (r->ent->proc == NLMPROC4_UNLOCK &&
	    (f = cache_find(d->cache, (const uint8_t *)lk->fh.nlm4_netobj_val,
			    lk->fh.nlm4_netobj_len))) {
		op->f = f;
		if (writeback_wait(d, f, ex, WB_WAIT_ALL, 0, 0, unlock_flushed,
				   op) == 0)
			return OP_PENDING;
	}
	fwd_send(op);
	return OP_PENDING;
}

enum op_status nlm_op_granted(struct req *r)
{
	nlm4_res res;

	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	/* Not relayed yet: "not waiting for it", so the upstream releases
	 * the lock (RFC 1813 section 6.2 GRANTED; the client's lock manager
	 * asks again at its next poll). */
	memset(&res, 0, sizeof(res));
	res.cookie = ((nlm4_testargs *)r->args)->cookie;
	res.stat.stat = NLM4_DENIED;
	return req_reply(r, (xdrproc_t)xdr_nlm4_res, &res);
}

/* GRANTED_RES sent to an upstream (or not): nothing more to do. */
static void granted_res_sent(enum clnt_stat st, void *res, void *arg)
{
	(void)st;
	(void)res;
	(void)arg;
}

enum op_status nlm_op_granted_msg(struct req *r)
{
	struct nlm *n = r->d->nlm;
	nlm4_res res;
	struct rpccall_spec s = {
		.host = req_peer_host(r), .port = 0, .prog = NLM_PROG,
		.vers = NLM4_VERS, .proc = NLMPROC4_GRANTED_RES,
		.timeout = r->d->conf->upstream_timeout,
	};

	if (!n)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	s.machine = n->caller;
	memset(&res, 0, sizeof(res));
	res.cookie = ((nlm4_testargs *)r->args)->cookie;
	res.stat.stat = NLM4_DENIED;	/* as nlm_op_granted */
	if (rpccall_submit(n->pool, &s, (xdrproc_t)xdr_nlm4_res, &res, NULL,
			   0, granted_res_sent, NULL) != 0)
		n->st.failed++;
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status nlm_op_void(struct req *r)
{
	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status nlm_op_share(struct req *r)
{
	nlm4_shareres res;

	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	memset(&res, 0, sizeof(res));
	res.cookie = ((nlm4_shareargs *)r->args)->cookie;
	res.stat = NLM4_DENIED_NOLOCKS;
	return req_reply(r, (xdrproc_t)xdr_nlm4_shareres, &res);
}

int nlm_start(struct daemon *d)
{
	struct nlm *n;

	if (!d->conf->nlm)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	if (d->conf->nlm_caller_name[0])
		snprintf(n->caller, sizeof(n->caller), "%s",
			 d->conf->nlm_caller_name);
	else if (gethostname(n->caller, sizeof(n->caller) - 1) != 0)
		snprintf(n->caller, sizeof(n->caller), "nfscached");
	n->pool = rpccall_pool_new(d->base, NLM_WORKERS);
	if (!n->pool) {
		free(n);
		return -1;
	}
	d->nlm = n;
	return 0;
}

void nlm_stop(struct daemon *d)
{
	struct nlm *n = d->nlm;

	if (!n)
		return;
	/* Pending calls are answered (RPC_INTR: NLM4_DENIED_NOLOCKS) while
	 * d->nlm is still there. */
	rpccall_pool_stop(&n->pool);
	d->nlm = NULL;
	free(n);
}

const char *nlm_check_why(const struct daemon *d)
{
	const struct nlm *n = d->nlm;
	const struct nlm_op *op;
	unsigned count = 0;

	if (!n)
		return NULL;
	DL_FOREACH(n->ops, op) {
		if (op->magic != NLM_OP_MAGIC)
			return "nlm: a call's magic number is wrong (freed?)";
		if (!op->r || op->r->op != op)
			return "nlm: a call in flight is not its request's";
		count++;
	}
	if (count != n->nops)
		return "nlm: nops differs from the calls in flight";
	return rpccall_check_why(n->pool);
}

void nlm_stats_get(const struct daemon *d, struct nlm_stats *st)
{
	if (d->nlm)
		*st = d->nlm->st;
	else
		memset(st, 0, sizeof(*st));
}
