/* SPDX-License-Identifier: MIT */
/*
 * rpcmsg: ONC RPC version 2 call and reply headers (RFC 5531 sections
 * 8-9) and the AUTH_NONE / AUTH_SYS credentials (RFC 5531 appendix A).
 *
 * Call headers are decoded by hand with a bounds-checked reader: nothing
 * is allocated and every length read off the wire is checked against the
 * protocol limit and against the bytes that remain before it is used.
 * Status order follows the header: not a CALL (close), rpcvers (RPC
 * mismatch), a header cut short (GARBAGE_ARGS), then the credential
 * (BADCRED for a malformed one, TOOWEAK for an unsupported flavor).
 *
 * Replies are encoded with libtirpc's xdr_replymsg into one contiguous
 * reservation of the output evbuffer, sized beforehand with xdr_sizeof,
 * and committed together with their record mark only when encoding
 * succeeded: a reply is appended whole or not at all.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <rpc/rpc.h>

#include "rpcmsg.h"

#define RPCMSG_RPCVERS		2u
#define RPCMSG_NOBODY		65534u
#define RPCMSG_MARK_LAST	0x80000000u
#define RPCMSG_MARK_MAXLEN	0x7fffffffu
/* Room for the encoded part of a reply with a tail (a READ3res header is
 * 124 bytes: 24 of reply header, 88 of post_op_attr, 12 more). */
#define RPCMSG_TAIL_HEAD_MAX	1024

/* A bounds-checked big-endian reader over a borrowed byte range. */
struct rd {
	const uint8_t *p;
	size_t len;
	size_t off;
};

/* Read one 32-bit XDR unit; false when fewer than 4 bytes remain. */
static bool
rd_u32(struct rd *r, uint32_t *v)
{
	const uint8_t *q;

	if (r->len - r->off < 4)
		return false;
	q = r->p + r->off;
	*v = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
	    (uint32_t)q[2] << 8 | (uint32_t)q[3];
	r->off += 4;
	return true;
}

/* Borrow n opaque bytes plus their XDR padding; false when cut short. */
static bool
rd_opaque(struct rd *r, uint32_t n, const uint8_t **body)
{
	size_t padded = ((size_t)n + 3) & ~(size_t)3;

	if (r->len - r->off < padded)
		return false;
	*body = r->p + r->off;
	r->off += padded;
	return true;
}

/* Read an opaque_auth (flavor, body<400>); *st says why it failed. */
static bool
rd_auth(struct rd *r, uint32_t *flavor, const uint8_t **body,
	uint32_t *blen, enum rpcmsg_status *st)
{
	*st = RPCMSG_GARBAGE;
	if (!rd_u32(r, flavor) || !rd_u32(r, blen))
		return false;
	if (*blen > RPCMSG_MAX_AUTH_BYTES) {
		*st = RPCMSG_AUTH_BADCRED;
		return false;
	}
	return rd_opaque(r, *blen, body);
}

/* Fill call's identity as the anonymous caller of an AUTH_NONE call. */
static void
cred_set_none(struct rpcmsg_call *call)
{
	memset(&call->cred, 0, sizeof(call->cred));
	call->flavor = AUTH_NONE;
	call->stamp = 0;
	call->machine[0] = '\0';
	call->cred.uid = RPCMSG_NOBODY;
	call->cred.gid = RPCMSG_NOBODY;
}

/* Parse an AUTH_SYS body (authsys_parms, RFC 5531 appendix A). */
static bool
cred_parse_sys(const uint8_t *body, uint32_t blen, struct rpcmsg_call *call)
{
	struct nfs_cred *cred = &call->cred;
	struct rd r = { body, blen, 0 };
	const uint8_t *mach;
	uint32_t mlen, i;

	memset(cred, 0, sizeof(*cred));
	call->flavor = AUTH_SYS;
	if (!rd_u32(&r, &call->stamp) || !rd_u32(&r, &mlen))
		return false;
	if (mlen > RPCMSG_MAX_MACHINE || !rd_opaque(&r, mlen, &mach))
		return false;
	memcpy(call->machine, mach, mlen);
	call->machine[mlen] = '\0';
	if (!rd_u32(&r, &cred->uid) || !rd_u32(&r, &cred->gid) ||
	    !rd_u32(&r, &cred->ngids))
		return false;
	if (cred->ngids > RPCMSG_MAX_GIDS)
		return false;
	for (i = 0; i < cred->ngids; i++)
		if (!rd_u32(&r, &cred->gids[i]))
			return false;
	/* The body must be exactly the structure, nothing after it. */
	return r.off == r.len;
}

/* Check the credential of a well-formed header and fill call's flavor,
 * stamp, machine and cred. */
static enum rpcmsg_status
cred_decode(uint32_t flavor, const uint8_t *body, uint32_t blen,
	    struct rpcmsg_call *call)
{
	switch (flavor) {
	case AUTH_NONE:
		if (blen != 0)
			return RPCMSG_AUTH_BADCRED;
		cred_set_none(call);
		return RPCMSG_OK;
	case AUTH_SYS:
		if (!cred_parse_sys(body, blen, call))
			return RPCMSG_AUTH_BADCRED;
		return RPCMSG_OK;
	default:
		return RPCMSG_AUTH_TOOWEAK;
	}
}

enum rpcmsg_status
rpcmsg_decode_call(const uint8_t *rec, size_t len, struct rpcmsg_call *call)
{
	struct rd r = { rec, len, 0 };
	uint32_t mtype, rpcvers, cflavor, clen, vflavor, vlen;
	const uint8_t *cbody, *vbody;
	enum rpcmsg_status st;

	memset(call, 0, sizeof(*call));
	if (!rd_u32(&r, &call->xid))
		return RPCMSG_NOT_CALL;
	if (!rd_u32(&r, &mtype) || mtype != CALL)
		return RPCMSG_NOT_CALL;
	if (!rd_u32(&r, &rpcvers))
		return RPCMSG_GARBAGE;
	if (rpcvers != RPCMSG_RPCVERS)
		return RPCMSG_RPC_MISMATCH;
	if (!rd_u32(&r, &call->prog) || !rd_u32(&r, &call->vers) ||
	    !rd_u32(&r, &call->proc))
		return RPCMSG_GARBAGE;
	if (!rd_auth(&r, &cflavor, &cbody, &clen, &st))
		return st;
	if (!rd_auth(&r, &vflavor, &vbody, &vlen, &st))
		return st;
	call->args_off = r.off;
	return cred_decode(cflavor, cbody, clen, call);
}

/* Encode msg as one framed record appended whole to out, or not at all. */
static int
reply_append(struct evbuffer *out, struct rpc_msg *msg)
{
	struct evbuffer_iovec v;
	unsigned long sz;
	uint8_t *p;
	XDR x;
	bool ok;

	sz = xdr_sizeof((xdrproc_t)xdr_replymsg, msg);
	if (sz == 0 || sz > RPCMSG_MARK_MAXLEN)
		return -1;
	if (evbuffer_reserve_space(out, (ev_ssize_t)(4 + sz), &v, 1) != 1 ||
	    v.iov_len < 4 + sz)
		return -1;
	p = v.iov_base;
	xdrmem_create(&x, (char *)p + 4, (u_int)sz, XDR_ENCODE);
	ok = xdr_replymsg(&x, msg) && xdr_getpos(&x) == sz;
	xdr_destroy(&x);
	if (!ok)
		return -1;	/* reserved space is simply not committed */
	p[0] = (uint8_t)((RPCMSG_MARK_LAST | sz) >> 24);
	p[1] = (uint8_t)(sz >> 16);
	p[2] = (uint8_t)(sz >> 8);
	p[3] = (uint8_t)sz;
	v.iov_len = 4 + sz;
	return evbuffer_commit_space(out, &v, 1) == 0 ? 0 : -1;
}

#define SUCCESS_HEAD_BYTES 24	/* xid .. accept_stat: 6 words */

/*
 * Store the header of an accepted SUCCESS reply for xid at p (24 bytes):
 * xid, REPLY, MSG_ACCEPTED, an AUTH_NONE verifier (flavor, empty body)
 * and SUCCESS, as xdr_replymsg writes them (RFC 5531 section 9).
 */
static void put_success_head(uint8_t *p, uint32_t xid)
{
	static const uint32_t w[SUCCESS_HEAD_BYTES / 4 - 1] = {
		REPLY, MSG_ACCEPTED, AUTH_NONE, 0, SUCCESS
	};

	p[0] = (uint8_t)(xid >> 24);
	p[1] = (uint8_t)(xid >> 16);
	p[2] = (uint8_t)(xid >> 8);
	p[3] = (uint8_t)xid;
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		p += 4;
		p[0] = (uint8_t)(w[i] >> 24);
		p[1] = (uint8_t)(w[i] >> 16);
		p[2] = (uint8_t)(w[i] >> 8);
		p[3] = (uint8_t)w[i];
	}
}

/* Start a reply message for xid with the given reply_stat. */
static void
reply_init(struct rpc_msg *msg, uint32_t xid, enum reply_stat rs)
{
	memset(msg, 0, sizeof(*msg));
	msg->rm_xid = xid;
	msg->rm_direction = REPLY;
	msg->rm_reply.rp_stat = rs;
	if (rs == MSG_ACCEPTED) {
		msg->acpted_rply.ar_verf.oa_flavor = AUTH_NONE;
		msg->acpted_rply.ar_verf.oa_base = NULL;
		msg->acpted_rply.ar_verf.oa_length = 0;
	}
}

int
rpcmsg_reply_success(struct evbuffer *out, uint32_t xid, xdrproc_t proc,
		     const void *res)
{
	struct rpc_msg msg;

	if (proc == NULL)
		return -1;
	reply_init(&msg, xid, MSG_ACCEPTED);
	msg.acpted_rply.ar_stat = SUCCESS;
	msg.acpted_rply.ar_results.proc = proc;
	/* xdr routines take non-const pointers; encoding does not write. */
	msg.acpted_rply.ar_results.where = (caddr_t)(uintptr_t)res;
	return reply_append(out, &msg);
}

/*
 * Append head[0..n), tail[0..len) and npad zero bytes to out as one
 * contiguous piece, reserved and then committed (so whole or not at
 * all), and release the tail at once: a small tail costs a copy, not a
 * scratch buffer and a reference chain (issue 42). 0 or -1.
 */
static int
tail_copy(struct evbuffer *out, const uint8_t *head, size_t n,
	  const void *tail, size_t len, size_t npad,
	  rpcmsg_tail_release release, void *arg)
{
	struct evbuffer_iovec v;
	size_t total = n + len + npad;
	uint8_t *p;
	int rc = -1;

	if (evbuffer_reserve_space(out, (ev_ssize_t)total, &v, 1) == 1 &&
	    v.iov_len >= total) {
		p = v.iov_base;
		memcpy(p, head, n);
		if (len)
			memcpy(p + n, tail, len);
		memset(p + n + len, 0, npad);
		v.iov_len = total;
		rc = evbuffer_commit_space(out, &v, 1) == 0 ? 0 : -1;
	}
	release(tail, len, arg);
	return rc;
}

int
rpcmsg_reply_success_tail(struct evbuffer *out, uint32_t xid, xdrproc_t proc,
			  const void *res, const void *tail, size_t len,
			  rpcmsg_tail_release release, void *arg)
{
	static const uint8_t pad[4];
	struct evbuffer *rec = NULL;
	_Alignas(8) uint8_t head[RPCMSG_TAIL_HEAD_MAX];
	unsigned long sz;
	size_t npad = (4 - (len & 3)) & 3, total;
	XDR x;
	bool ok;

	if (proc == NULL)
		goto fail;
	/* One pass: encoded straight into head, whose room is the limit (an
	 * xdr_sizeof pass first cost as much again, issue 42); the fixed
	 * header stored, not run through xdr_replymsg's union walk. */
	put_success_head(head + 4, xid);
	xdrmem_create(&x, (char *)head + 4 + SUCCESS_HEAD_BYTES,
		      (u_int)(sizeof(head) - 4 - SUCCESS_HEAD_BYTES),
		      XDR_ENCODE);
	ok = proc(&x, (void *)(uintptr_t)res);
	sz = ok ? SUCCESS_HEAD_BYTES + xdr_getpos(&x) : 0;
	xdr_destroy(&x);
	if (sz < 4 || len > RPCMSG_MARK_MAXLEN)
		goto fail;
	total = sz + len + npad;
	/* The last word encoded is the empty opaque's length. */
	if (total > RPCMSG_MARK_MAXLEN || memcmp(head + sz, pad, 4) != 0)
		goto fail;
	head[0] = (uint8_t)((RPCMSG_MARK_LAST | total) >> 24);
	head[1] = (uint8_t)(total >> 16);
	head[2] = (uint8_t)(total >> 8);
	head[3] = (uint8_t)total;
	head[sz] = (uint8_t)(len >> 24);
	head[sz + 1] = (uint8_t)(len >> 16);
	head[sz + 2] = (uint8_t)(len >> 8);
	head[sz + 3] = (uint8_t)len;
	if (len <= RPCMSG_TAIL_COPY_MAX)
		return tail_copy(out, head, 4 + sz, tail, len, npad, release,
				 arg);
	/* Built aside and moved in whole: out never holds half a record. */
	rec = evbuffer_new();
	if (!rec || evbuffer_add(rec, head, 4 + sz) != 0)
		goto fail;
	if (len == 0) {
		release(tail, len, arg);
	} else if (evbuffer_add_reference(rec, tail, len, release, arg) != 0) {
		goto fail;
	}
	release = NULL;		/* released, or rec owns tail now */
	if ((npad && evbuffer_add(rec, pad, npad) != 0) ||
	    evbuffer_add_buffer(out, rec) != 0) {
		evbuffer_free(rec);
		return -1;
	}
	evbuffer_free(rec);
	return 0;
fail:
	if (rec)
		evbuffer_free(rec);
	if (release)
		release(tail, len, arg);
	return -1;
}

int
rpcmsg_reply_accept_error(struct evbuffer *out, uint32_t xid,
			  enum accept_stat stat, uint32_t low, uint32_t high)
{
	struct rpc_msg msg;

	if (stat == SUCCESS)
		return -1;	/* a success carries results: reply_success */
	reply_init(&msg, xid, MSG_ACCEPTED);
	msg.acpted_rply.ar_stat = stat;
	if (stat == PROG_MISMATCH) {
		msg.acpted_rply.ar_vers.low = low;
		msg.acpted_rply.ar_vers.high = high;
	}
	return reply_append(out, &msg);
}

int
rpcmsg_reply_rpc_mismatch(struct evbuffer *out, uint32_t xid)
{
	struct rpc_msg msg;

	reply_init(&msg, xid, MSG_DENIED);
	msg.rjcted_rply.rj_stat = RPC_MISMATCH;
	msg.rjcted_rply.rj_vers.low = RPCMSG_RPCVERS;
	msg.rjcted_rply.rj_vers.high = RPCMSG_RPCVERS;
	return reply_append(out, &msg);
}

int
rpcmsg_reply_auth_error(struct evbuffer *out, uint32_t xid,
			enum auth_stat stat)
{
	struct rpc_msg msg;

	reply_init(&msg, xid, MSG_DENIED);
	msg.rjcted_rply.rj_stat = AUTH_ERROR;
	msg.rjcted_rply.rj_why = stat;
	return reply_append(out, &msg);
}

int
rpcmsg_decode_args(const uint8_t *rec, size_t len, size_t off,
		   xdrproc_t proc, void *args)
{
	XDR x;
	bool ok;

	if (proc == NULL || off > len || len - off > UINT_MAX)
		return -1;
	/* XDR_DECODE only reads the buffer; xdrmem_create wants char *. */
	xdrmem_create(&x, (char *)(uintptr_t)(rec + off), (u_int)(len - off),
		      XDR_DECODE);
	ok = proc(&x, args);
	xdr_destroy(&x);
	return ok ? 0 : -1;
}

void
rpcmsg_free_args(xdrproc_t proc, void *obj)
{
	if (proc != NULL && obj != NULL)
		xdr_free(proc, obj);
}

uint8_t *
rpcmsg_encode(xdrproc_t proc, const void *obj, size_t *len)
{
	void *where = (void *)(uintptr_t)obj;
	unsigned long sz;
	uint8_t *buf;
	XDR x;
	bool ok;

	if (proc == NULL)
		return NULL;
	sz = xdr_sizeof(proc, where);
	if (sz > UINT_MAX)
		return NULL;
	buf = malloc(sz > 0 ? sz : 1);
	if (buf == NULL)
		return NULL;
	xdrmem_create(&x, (char *)buf, (u_int)sz, XDR_ENCODE);
	ok = proc(&x, where) && xdr_getpos(&x) == sz;
	xdr_destroy(&x);
	if (!ok) {
		free(buf);
		return NULL;
	}
	*len = sz;
	return buf;
}

bool_t rpcmsg_xdr_void(XDR *xdrs, void *unused)
{
	(void)xdrs;
	(void)unused;
	return TRUE;
}
