/* SPDX-License-Identifier: MIT */
/*
 * acl_ops: NFSACL v3 forwarded upstream (see acl_ops.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "acl_ops.h"
#include "attr.h"
#include "cache.h"
#include "checkobj.h"
#include "daemon.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_meta.h"
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
	struct cfile *f;		/* GETACL: the file, held (NULL: its
					 * reply is not kept) */
	uint64_t gen;			/* cfile_gen(f) when sent */
	uint64_t acl_gen;		/* cfile_acl_gen(f) when sent */
};

/* A kept GETACL reply: its XDR bytes, sent as they are. */
struct acl_kept {
	const void *bytes;
	size_t len;
};

static const struct nfs3_proc unwrap_get = {
	.nfh = 1, .fh = { offsetof(GETACL3args, fh), 0 } };
static const struct nfs3_proc unwrap_set = {
	.nfh = 1, .fh = { offsetof(SETACL3args, fh), 0 } };

static bool is_set(const struct req *r)
{
	return r->ent->proc == NFSACLPROC3_SETACL;
}

/* The (unwrapped) upstream handle of r's call, its length in *len. */
static const uint8_t *call_fh(const struct req *r, size_t *len)
{
	const nfs_fh3 *fh = is_set(r) ? &((const SETACL3args *)r->args)->fh :
					&((const GETACL3args *)r->args)->fh;

	*len = fh->data.data_len;
	return (const uint8_t *)fh->data.data_val;
}

/* Encode a kept GETACL reply: its bytes are already XDR. */
static bool_t acl_kept_xdr(XDR *x, const struct acl_kept *k)
{
	return xdr_opaque(x, (caddr_t)(uintptr_t)k->bytes, (u_int)k->len);
}

/* Answer GETACL r from the reply kept with its file for its mask, while
 * the file's attributes are trusted as for a GETATTR (*st: the reply's
 * status). False: none kept or not trusted, nothing sent. */
static bool getacl_hit(struct req *r, const struct export_rt *ex,
		       enum op_status *st)
{
	struct daemon *d = r->d;
	const GETACL3args *a = r->args;
	struct acl_kept k = { NULL, 0 };
	size_t len;
	const uint8_t *fh = call_fh(r, &len);
	struct cfile *f = cache_find(d->cache, fh, len);

	if (nfs3_meta_attr_trusted(ex, f))
		k.bytes = cfile_acl_find(f, a->mask, &k.len);
	if (k.bytes) {
		d->nfsacl->st.cache_hits++;
		*st = req_reply(r, (xdrproc_t)acl_kept_xdr, &k);
	}
	cfile_put(d->cache, &f);
	return k.bytes != NULL;
}

/* Drop the GETACL replies kept for SETACL r's file (sent, or answered in
 * any way); expire its attributes too when the upstream took it. */
static void setacl_drop(struct daemon *d, const struct req *r, bool took)
{
	size_t len;
	const uint8_t *fh = call_fh(r, &len);
	struct cfile *f = cache_find(d->cache, fh, len);

	if (!f)
		return;
	cfile_acl_drop(d->cache, f);
	if (took)	/* its mode follows the ACL's mask */
		cfile_attr_expire(f);
	cfile_put(d->cache, &f);
}

/* Observe the attributes of op's GETACL reply res (under the file's
 * generation when it was sent), then keep res (its attributes already
 * cleared) for the call's mask if no drop came since it was sent. */
static void getacl_learn(struct daemon *d, struct acl_op *op,
			 GETACL3res *res, const post_op_attr *pa)
{
	const GETACL3args *a = op->r->args;
	bool keep = res->status == NFS3_OK &&
		    cfile_acl_gen_holds(op->f, op->acl_gen);
	struct cattr tmp;
	const struct cattr *at = attr_from_post_op(pa, &tmp);
	uint8_t buf[CACHE_ACL_MAX];
	unsigned long n;
	XDR x;

	if (at)
		cfile_attr_observe_gen(d->cache, op->f, op->gen, at,
				       daemon_now(), daemon_ac(op->ex, at->type));
	if (!keep)
		return;
	res->GETACL3res_u.resok.attr.attributes_follow = FALSE;
	n = xdr_sizeof((xdrproc_t)xdr_GETACL3res, res);
	if (n > sizeof(buf)) {	/* refused and counted, nothing read */
		cfile_acl_store(d->cache, op->f, a->mask, NULL, n);
		return;
	}
	xdrmem_create(&x, (char *)buf, sizeof(buf), XDR_ENCODE);
	if (xdr_GETACL3res(&x, res))
		cfile_acl_store(d->cache, op->f, a->mask, buf, xdr_getpos(&x));
	xdr_destroy(&x);
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

/* Learn from the upstream's answer (st, res) to op: a SETACL, however
 * answered, drops the file's kept GETACL replies; a GETACL's reply is
 * observed and kept. Lets go of op's file. */
static void fwd_learn(struct daemon *d, struct acl_op *op,
		      enum clnt_stat st, void *res)
{
	struct req *r = op->r;

	if (is_set(r)) {
		setacl_drop(d, r, st == RPC_SUCCESS && res &&
			    ((SETACL3res *)res)->status == NFS3_OK);
	} else if (op->f && st == RPC_SUCCESS && res) {
		GETACL3res *gr = res;

		getacl_learn(d, op, gr, gr->status == NFS3_OK ?
				&gr->GETACL3res_u.resok.attr :
				&gr->GETACL3res_u.resfail.attr);
	}
	cfile_put(d->cache, &op->f);
}

/* Clear the attributes of reply res: the upstream's attributes know
 * nothing of the bytes the proxy holds for the file (write-back), so
 * none are passed on and a client never takes a stale size or mtime
 * from them. */
static void strip_attrs(const struct req *r, void *res)
{
	if (is_set(r)) {
		SETACL3res *sr = res;

		sr->SETACL3res_u.resok.attr.attributes_follow = FALSE;
		sr->SETACL3res_u.resfail.attr.attributes_follow = FALSE;
	} else {
		GETACL3res *gr = res;

		gr->GETACL3res_u.resok.attr.attributes_follow = FALSE;
		gr->GETACL3res_u.resfail.attr.attributes_follow = FALSE;
	}
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
	fwd_learn(d, op, st, res);
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
	free(op);
	strip_attrs(r, res);
	req_reply(r, is_set(r) ? (xdrproc_t)xdr_SETACL3res :
				 (xdrproc_t)xdr_GETACL3res, res);
}

/* Before op is sent: a SETACL drops its file's kept GETACL replies (no
 * GETACL is answered from one kept before it, and a GETACL in flight
 * keeps nothing); a GETACL holds its file and notes its generations, so
 * that its reply may be kept. */
static void op_track(struct daemon *d, struct acl_op *op)
{
	size_t len;
	const uint8_t *fh = call_fh(op->r, &len);

	if (is_set(op->r)) {
		setacl_drop(d, op->r, false);
		return;
	}
	op->f = cache_get(d->cache, fh, len);
	if (op->f) {
		op->gen = cfile_gen(op->f);
		op->acl_gen = cfile_acl_gen(op->f);
	}
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
	enum op_status rs = OP_DONE;
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
	if (!is_set(r) && getacl_hit(r, ex, &rs))
		return rs;
	op = calloc(1, sizeof(*op));
	if (!op)
		return reply_status(r, NFS3ERR_JUKEBOX);
	op->magic = ACL_OP_MAGIC;
	op->r = r;
	op->ex = ex;
	r->op = op;
	op_track(d, op);
	s.host = ex->conf->url.server;
	s.port = (unsigned)ex->conf->url.nfs_port;
	s.machine = uc.machine;
	s.cred = &uc;
	if (rpccall_submit(n->pool, &s, r->ent->xdr_args, r->args,
			   r->ent->xdr_res, r->ent->res_size, fwd_done,
			   op) != 0) {
		op->magic = 0;
		r->op = NULL;
		cfile_put(d->cache, &op->f);
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
