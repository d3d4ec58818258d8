/* SPDX-License-Identifier: MIT */
/*
 * acl_ops: NFSACL v3 forwarded upstream (see acl_ops.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "acl_ops.h"
#include "cache.h"
#include "checkobj.h"
#include "daemon.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"
#include "nfsacl3_prot.h"
#include "ratelog.h"
#include "rpccall.h"
#include "rpcmsg.h"
#include "server.h"

#define NFSACL_WORKERS 2
#define ACL_OP_MAGIC 0x41434c4fu	/* "ACLO" */

struct nfsacl {
	struct rpccall_pool *pool;
	struct nfsacl_stats st;
	struct ratelog fail_log;
};

/* One forwarded call, r->op. */
struct acl_op {
	uint32_t magic;
	struct req *r;
	struct export_rt *ex;
};

static const struct nfs3_proc unwrap_get = {
	.nfh = 1, .fh = { offsetof(GETACL3args, fh), 0 } };
static const struct nfs3_proc unwrap_set = {
	.nfh = 1, .fh = { offsetof(SETACL3args, fh), 0 } };

static bool is_set(const struct req *r)
{
	return r->ent->proc == NFSACLPROC3_SETACL;
}

/* Reply status (not NFS3_OK) with no attributes. */
static enum op_status reply_status(struct req *r, nfsstat3 status)
{
	if (is_set(r)) {
		SETACL3res res;

		memset(&res, 0, sizeof(res));
		res.status = status;
		return req_reply(r, (xdrproc_t)xdr_SETACL3res, &res);
	}
	GETACL3res res;

	memset(&res, 0, sizeof(res));
	res.status = status;
	return req_reply(r, (xdrproc_t)xdr_GETACL3res, &res);
}

/* The upstream answered (or not). */
static void fwd_done(enum clnt_stat st, void *res, void *arg)
{
	struct acl_op *op = arg;
	struct req *r;
	struct daemon *d;
	struct nfsacl *n;

	CHECK_OBJ(op, ACL_OP_MAGIC);
	r = op->r;
	d = r->d;
	n = d->nfsacl;
	op->magic = 0;
	r->op = NULL;
	if (st == RPC_PROGUNAVAIL || st == RPC_PROGNOTREGISTERED ||
	    st == RPC_PROGVERSMISMATCH || st == RPC_PROCUNAVAIL) {
		/* As the upstream answers: the client uses the mode bits. */
		if (n)
			n->st.unserved++;
		free(op);
		req_reply_accept_error(r, PROG_UNAVAIL);
		return;
	}
	if (st == RPC_CANTDECODEARGS) {
		/* The upstream's own answer to these arguments. */
		free(op);
		req_reply_accept_error(r, GARBAGE_ARGS);
		return;
	}
	if (st != RPC_SUCCESS || !res) {
		if (n && st != RPC_INTR) {
			n->st.failed++;
			if (ratelog_admit(&n->fail_log, daemon_now(), 10.0, NULL))
				log_warn("nfsacl: %s did not answer: %s; clients "
					 "get NFS3ERR_JUKEBOX",
					 op->ex->conf->upstream,
					 clnt_sperrno(st));
		}
		free(op);
		reply_status(r, NFS3ERR_JUKEBOX);
		return;
	}
	if (is_set(r) && ((SETACL3res *)res)->status == NFS3_OK) {
		SETACL3args *a = r->args;
		struct cfile *f = cache_find(d->cache,
					     (const uint8_t *)a->fh.data.data_val,
					     a->fh.data.data_len);

		if (f) {	/* its mode follows the ACL's mask */
			cfile_attr_expire(f);
			cfile_put(d->cache, &f);
		}
	}
	free(op);
	/* The upstream's attributes know nothing of the bytes the proxy
	 * holds for the file (write-back): none are passed on, so a client
	 * never takes a stale size or mtime from them. */
	if (is_set(r)) {
		SETACL3res *sr = res;

		sr->SETACL3res_u.resok.attr.attributes_follow = FALSE;
		sr->SETACL3res_u.resfail.attr.attributes_follow = FALSE;
	} else {
		GETACL3res *gr = res;

		gr->GETACL3res_u.resok.attr.attributes_follow = FALSE;
		gr->GETACL3res_u.resfail.attr.attributes_follow = FALSE;
	}
	req_reply(r, is_set(r) ? (xdrproc_t)xdr_SETACL3res :
				 (xdrproc_t)xdr_GETACL3res, res);
}

enum op_status nfsacl_op_null(struct req *r)
{
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status nfsacl_op_forward(struct req *r)
{
	struct daemon *d = r->d;
	struct nfsacl *n = d->nfsacl;
	struct export_rt *ex = NULL;
	struct conf_access acc;
	struct nfs_cred uc;
	struct acl_op *op;
	nfsstat3 st;
	struct rpccall_spec s = {
		.prog = NFSACL_PROGRAM, .vers = NFSACL_V3,
		.proc = r->ent->proc, .timeout = d->conf->upstream_timeout,
	};

	if (!n)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	st = nfs3_guard_unwrap(d, is_set(r) ? &unwrap_set : &unwrap_get,
			       r->args, &ex);
	if (st != NFS3_OK)
		return reply_status(r, st);
	st = nfs3_guard_request(r, ex->conf, REFUSAL_NFS, NULL, &acc);
	if (st != NFS3_OK)
		return reply_status(r, st);
	if (acc.read_only && is_set(r)) {
		nfs3_guard_refused(r, ex->conf, REFUSAL_NFS, NULL,
				   REFUSAL_READ_ONLY, "read-only for this client");
		return reply_status(r, NFS3ERR_ROFS);
	}
	nfs3_guard_cred(&r->call, &acc, &uc);
	op = calloc(1, sizeof(*op));
	if (!op)
		return reply_status(r, NFS3ERR_JUKEBOX);
	op->magic = ACL_OP_MAGIC;
	op->r = r;
	op->ex = ex;
	r->op = op;
	s.host = ex->conf->url.server;
	s.port = (unsigned)ex->conf->url.nfs_port;
	s.machine = uc.machine;
	s.cred = &uc;
	if (rpccall_submit(n->pool, &s, r->ent->xdr_args, r->args,
			   r->ent->xdr_res, r->ent->res_size, fwd_done,
			   op) != 0) {
		op->magic = 0;
		r->op = NULL;
		free(op);
		n->st.failed++;
		return reply_status(r, NFS3ERR_JUKEBOX);
	}
	n->st.forwarded++;
	return OP_PENDING;
}

int nfsacl_start(struct daemon *d)
{
	struct nfsacl *n = calloc(1, sizeof(*n));

	if (!n)
		return -1;
	n->pool = rpccall_pool_new(d->base, NFSACL_WORKERS);
	if (!n->pool) {
		free(n);
		return -1;
	}
	d->nfsacl = n;
	return 0;
}

void nfsacl_stop(struct daemon *d)
{
	struct nfsacl *n = d->nfsacl;

	if (!n)
		return;
	rpccall_pool_stop(&n->pool);	/* pending: NFS3ERR_JUKEBOX */
	d->nfsacl = NULL;
	free(n);
}

void nfsacl_stats_get(const struct daemon *d, struct nfsacl_stats *st)
{
	if (d->nfsacl)
		*st = d->nfsacl->st;
	else
		memset(st, 0, sizeof(*st));
}

const char *nfsacl_check_why(const struct daemon *d)
{
	return d->nfsacl ? rpccall_check_why(d->nfsacl->pool) : NULL;
}
