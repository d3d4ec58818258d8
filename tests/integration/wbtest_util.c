/* SPDX-License-Identifier: MIT */
/*
 * wbtest_util: the write-back tests' client, metrics, disk and check
 * helpers (see wbtest_util.h).
 *
 * Calls are encoded with the project's rpcgen routines (nfs3_prot.h) into a
 * rawrpc buffer and sent as one record; replies are read whole, their
 * header checked with rawrpc_parse_reply and their results decoded with
 * the rpcgen routine the caller names. Pipelined WRITEs take consecutive
 * xids, so a reply's xid gives its request's index.
 */
#include "wbtest_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <CUnit/CUnit.h>

#include "httpget.h"

/* ---- connections ---- */

/* The NFS and MOUNT ports of which ("proxy" or "direct"). */
static int ports_of(const char *which, uint16_t *nfs, uint16_t *mnt)
{
	const char *up = strcmp(which, "proxy") == 0 ? "PROXY" : "DIRECT";
	char var[64];

	snprintf(var, sizeof(var), "NFSC_%s_NFS_PORT", up);
	*nfs = rawrpc_env_port(var);
	snprintf(var, sizeof(var), "NFSC_%s_MOUNT_PORT", up);
	*mnt = rawrpc_env_port(var);
	if (!*nfs || !*mnt) {
		fprintf(stderr, "wbtest: NFSC_%s_NFS_PORT/MOUNT_PORT unset "
			"(run under harness.sh)\n", up);
		return -1;
	}
	return 0;
}

/* Mount /export on c->mnt_port and connect c->nfs_port. */
static int conn_up(struct wb_conn *c)
{
	size_t len = 0;
	int fd, rc;

	fd = rawrpc_connect(c->mnt_port);
	if (fd < 0) {
		fprintf(stderr, "wbtest: %s: cannot connect to MOUNT port %u\n",
			c->name, c->mnt_port);
		return -1;
	}
	rc = rawrpc_mnt(fd, rawrpc_xid(), "/export", c->root.data, &len);
	close(fd);
	if (rc != 0) {
		fprintf(stderr, "wbtest: %s: MNT /export failed (%d)\n",
			c->name, rc);
		return -1;
	}
	c->root.len = (uint32_t)len;
	c->fd = rawrpc_connect(c->nfs_port);
	if (c->fd < 0) {
		fprintf(stderr, "wbtest: %s: cannot connect to NFS port %u\n",
			c->name, c->nfs_port);
		return -1;
	}
	return 0;
}

int wb_open(struct wb_conn *c, const char *which, uint32_t uid, uint32_t gid)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	snprintf(c->name, sizeof(c->name), "%s", which);
	c->cred = rawrpc_cred_sys(uid, gid);
	c->cred.machine = "wbtest";
	if (ports_of(which, &c->nfs_port, &c->mnt_port) < 0)
		return -1;
	return conn_up(c);
}

void wb_close(struct wb_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int wb_reopen(struct wb_conn *c)
{
	wb_close(c);
	return conn_up(c);
}

void wb_set_cred(struct wb_conn *c, uint32_t uid, uint32_t gid)
{
	c->cred = rawrpc_cred_sys(uid, gid);
	c->cred.machine = "wbtest";
}

/* ---- calls ---- */

/*
 * The call being built, reused from call to call: a fresh buffer per WRITE
 * grew by doubling and, past malloc's mmap threshold (always, under ASan),
 * faulted its pages in each time; that was most of the client's time in
 * integration.wb_coalesce. The programs using this file are
 * single-threaded.
 */
static struct rawrpc_buf send_buf;

uint32_t wb_send(struct wb_conn *c, uint32_t proc, xdrproc_t argp,
		 const void *args)
{
	struct rawrpc_buf *b = &send_buf;
	uint32_t xid = rawrpc_xid();
	int rc;

	c->send_err = WB_ERR_CLOSED;
	if (c->fd < 0)
		return 0;
	rawrpc_buf_reset(b);
	rawrpc_put_call(b, xid, NFS_PROGRAM, NFS_V3, proc, &c->cred);
	if (argp)
		rawrpc_put_xdr(b, argp, args);
	if (b->failed) {
		c->send_err = WB_ERR_LOCAL;
		rc = -1;
	} else {
		/* A send fails when the server closed or reset. */
		rc = rawrpc_send_record(c->fd, b->data, b->len);
	}
	return rc == 0 ? xid : 0;
}

/* Decode a whole reply record for xid into res. */
static int take_reply(const uint8_t *rec, size_t len, uint32_t xid,
		      xdrproc_t resp, void *res)
{
	struct rawrpc_reply r;

	if (rawrpc_parse_reply(rec, len, &r) < 0 || r.xid != xid)
		return WB_ERR_PROTO;
	if (r.stat != MSG_ACCEPTED || r.accept != SUCCESS)
		return WB_ERR_REJECTED;
	if (rawrpc_decode(rec, len, r.res_off, resp, res) < 0)
		return WB_ERR_PROTO;
	return (int)*(nfsstat3 *)res;
}

int wb_recv(struct wb_conn *c, uint32_t xid, xdrproc_t resp, void *res,
	    int timeout_ms)
{
	uint8_t *rec = NULL;
	size_t len = 0;
	enum rawrpc_io io;
	int st;

	if (c->fd < 0)
		return WB_ERR_CLOSED;
	io = rawrpc_recv_record(c->fd, timeout_ms, &rec, &len);
	if (io != RAWRPC_OK)
		return (int)io;
	st = take_reply(rec, len, xid, resp, res);
	free(rec);
	return st;
}

int wb_call(struct wb_conn *c, uint32_t proc, xdrproc_t argp,
	    const void *args, xdrproc_t resp, void *res, int timeout_ms)
{
	uint32_t xid = wb_send(c, proc, argp, args);

	if (!xid)
		return c->send_err;
	return wb_recv(c, xid, resp, res, timeout_ms);
}

/* Point an nfs_fh3 at a wb_fh's bytes (no copy). */
static nfs_fh3 fh3(const struct wb_fh *fh)
{
	nfs_fh3 h;

	h.data.data_len = fh->len;
	h.data.data_val = (char *)(uintptr_t)fh->data;
	return h;
}

/* Copy an nfs_fh3 into a wb_fh (len 0 if it does not fit). */
static void fh_take(struct wb_fh *dst, const nfs_fh3 *src)
{
	memset(dst, 0, sizeof(*dst));
	if (src->data.data_len <= NFS3_FHSIZE) {
		dst->len = src->data.data_len;
		memcpy(dst->data, src->data.data_val, dst->len);
	}
}

/* Copy a post_op_attr into attr (zeroed if absent). */
static bool post_take(fattr3 *attr, const post_op_attr *p)
{
	if (!attr)
		return p->attributes_follow;
	memset(attr, 0, sizeof(*attr));
	if (p->attributes_follow)
		*attr = p->post_op_attr_u.attributes;
	return p->attributes_follow;
}

int wb_getattr(struct wb_conn *c, const struct wb_fh *fh, fattr3 *attr)
{
	GETATTR3args a = { fh3(fh) };
	GETATTR3res res;
	int st;

	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args, &a,
		     (xdrproc_t)xdr_GETATTR3res, &res, WB_TIMEOUT_MS);
	if (attr)
		memset(attr, 0, sizeof(*attr));
	if (st == NFS3_OK && attr)
		*attr = res.GETATTR3res_u.resok.obj_attributes;
	xdr_free((xdrproc_t)xdr_GETATTR3res, &res);
	return st;
}

int wb_lookup(struct wb_conn *c, const struct wb_fh *dir, const char *name,
	      struct wb_fh *fh, fattr3 *attr)
{
	LOOKUP3args a;
	LOOKUP3res res;
	int st;

	a.what.dir = fh3(dir);
	a.what.name = (char *)(uintptr_t)name;
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args, &a,
		     (xdrproc_t)xdr_LOOKUP3res, &res, WB_TIMEOUT_MS);
	if (fh)
		memset(fh, 0, sizeof(*fh));
	if (attr)
		memset(attr, 0, sizeof(*attr));
	if (st == NFS3_OK) {
		if (fh)
			fh_take(fh, &res.LOOKUP3res_u.resok.object);
		post_take(attr, &res.LOOKUP3res_u.resok.obj_attributes);
	}
	xdr_free((xdrproc_t)xdr_LOOKUP3res, &res);
	return st;
}

int wb_create(struct wb_conn *c, const struct wb_fh *dir, const char *name,
	      int how, uint32_t mode, int64_t size, struct wb_fh *fh,
	      fattr3 *attr)
{
	CREATE3args a;
	CREATE3res res;
	sattr3 *s = &a.how.createhow3_u.obj_attributes;
	int st;

	memset(&a, 0, sizeof(a));
	a.where.dir = fh3(dir);
	a.where.name = (char *)(uintptr_t)name;
	a.how.mode = (createmode3)how;
	s->mode.set_it = TRUE;
	s->mode.set_mode3_u.mode = mode;
	if (size >= 0) {
		s->size.set_it = TRUE;
		s->size.set_size3_u.size = (uint64_t)size;
	}
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_CREATE, (xdrproc_t)xdr_CREATE3args, &a,
		     (xdrproc_t)xdr_CREATE3res, &res, WB_TIMEOUT_MS);
	if (fh)
		memset(fh, 0, sizeof(*fh));
	if (attr)
		memset(attr, 0, sizeof(*attr));
	if (st == NFS3_OK) {
		if (fh && res.CREATE3res_u.resok.obj.handle_follows)
			fh_take(fh, &res.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
		post_take(attr, &res.CREATE3res_u.resok.obj_attributes);
	}
	xdr_free((xdrproc_t)xdr_CREATE3res, &res);
	return st;
}

/* Send SETATTR a and wait; *post (if not NULL) gets the wcc after-attrs. */
static int setattr_send(struct wb_conn *c, SETATTR3args *a, fattr3 *post)
{
	SETATTR3res res;
	int st;

	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_SETATTR, (xdrproc_t)xdr_SETATTR3args, a,
		     (xdrproc_t)xdr_SETATTR3res, &res, WB_TIMEOUT_MS);
	if (post) {
		memset(post, 0, sizeof(*post));
		if (st >= 0)
			post_take(post, st == NFS3_OK
				  ? &res.SETATTR3res_u.resok.obj_wcc.after
				  : &res.SETATTR3res_u.resfail.obj_wcc.after);
	}
	xdr_free((xdrproc_t)xdr_SETATTR3res, &res);
	return st;
}

int wb_setattr_owner(struct wb_conn *c, const struct wb_fh *fh, int64_t uid,
		     int64_t gid)
{
	SETATTR3args a;

	memset(&a, 0, sizeof(a));
	a.object = fh3(fh);
	if (uid >= 0) {
		a.new_attributes.uid.set_it = TRUE;
		a.new_attributes.uid.set_uid3_u.uid = (uint32_t)uid;
	}
	if (gid >= 0) {
		a.new_attributes.gid.set_it = TRUE;
		a.new_attributes.gid.set_gid3_u.gid = (uint32_t)gid;
	}
	return setattr_send(c, &a, NULL);
}

int wb_setattr(struct wb_conn *c, const struct wb_fh *fh, int64_t size,
	       int32_t mode, fattr3 *post)
{
	SETATTR3args a;

	memset(&a, 0, sizeof(a));
	a.object = fh3(fh);
	if (size >= 0) {
		a.new_attributes.size.set_it = TRUE;
		a.new_attributes.size.set_size3_u.size = (uint64_t)size;
	}
	if (mode >= 0) {
		a.new_attributes.mode.set_it = TRUE;
		a.new_attributes.mode.set_mode3_u.mode = (uint32_t)mode;
	}
	return setattr_send(c, &a, post);
}

/* Fill the WRITE arguments for buf[0..len) at off. */
static void write_args(WRITE3args *a, const struct wb_fh *fh, uint64_t off,
		       const void *buf, uint32_t len, int stable)
{
	memset(a, 0, sizeof(*a));
	a->file = fh3(fh);
	a->offset = off;
	a->count = len;
	a->stable = (stable_how)stable;
	a->data.data_len = len;
	a->data.data_val = (char *)(uintptr_t)buf;
}

/* Copy a WRITE reply into r. */
static void wres_take(struct wb_wres *r, int st, const WRITE3res *res)
{
	memset(r, 0, sizeof(*r));
	r->st = st;
	if (st < 0)
		return;
	if (st == NFS3_OK) {
		r->count = res->WRITE3res_u.resok.count;
		r->committed = (int)res->WRITE3res_u.resok.committed;
		memcpy(r->verf, res->WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
		r->has_post = post_take(&r->post,
					&res->WRITE3res_u.resok.file_wcc.after);
	} else {
		r->has_post = post_take(&r->post,
					&res->WRITE3res_u.resfail.file_wcc.after);
	}
}

int wb_write(struct wb_conn *c, const struct wb_fh *fh, uint64_t off,
	     const void *buf, uint32_t len, int stable, struct wb_wres *r)
{
	WRITE3args a;
	WRITE3res res;
	struct wb_wres tmp;
	int st;

	write_args(&a, fh, off, buf, len, stable);
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a,
		     (xdrproc_t)xdr_WRITE3res, &res, WB_TIMEOUT_MS);
	wres_take(r ? r : &tmp, st, &res);
	xdr_free((xdrproc_t)xdr_WRITE3res, &res);
	return st;
}

uint32_t wb_commit_send(struct wb_conn *c, const struct wb_fh *fh)
{
	COMMIT3args a;

	memset(&a, 0, sizeof(a));
	a.file = fh3(fh);
	return wb_send(c, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &a);
}

int wb_commit_recv(struct wb_conn *c, uint32_t xid, uint8_t *verf,
		   int timeout_ms)
{
	COMMIT3res res;
	int st;

	memset(&res, 0, sizeof(res));
	if (verf)
		memset(verf, 0, NFS3_WRITEVERFSIZE);
	st = wb_recv(c, xid, (xdrproc_t)xdr_COMMIT3res, &res, timeout_ms);
	if (st == NFS3_OK && verf)
		memcpy(verf, res.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	xdr_free((xdrproc_t)xdr_COMMIT3res, &res);
	return st;
}

int wb_commit(struct wb_conn *c, const struct wb_fh *fh, uint8_t *verf,
	      int timeout_ms)
{
	uint32_t xid = wb_commit_send(c, fh);

	if (!xid)
		return c->send_err;
	return wb_commit_recv(c, xid, verf, timeout_ms);
}

int wb_commit_retry(struct wb_conn *c, const struct wb_fh *fh, uint8_t *verf,
		    int total_ms, unsigned *jukeboxes)
{
	uint64_t end = wb_now_ms() + (uint64_t)total_ms;
	int st;

	if (jukeboxes)
		*jukeboxes = 0;
	for (;;) {
		st = wb_commit(c, fh, verf, total_ms);
		if (st != NFS3ERR_JUKEBOX || wb_now_ms() >= end)
			return st;
		if (jukeboxes)
			(*jukeboxes)++;
		wb_sleep_ms(100);
	}
}

int wb_read(struct wb_conn *c, const struct wb_fh *fh, uint64_t off,
	    uint32_t len, void *buf, uint32_t *count, bool *eof)
{
	READ3args a;
	READ3res res;
	int st;

	memset(&a, 0, sizeof(a));
	a.file = fh3(fh);
	a.offset = off;
	a.count = len;
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a,
		     (xdrproc_t)xdr_READ3res, &res, WB_TIMEOUT_MS);
	if (count)
		*count = 0;
	if (eof)
		*eof = false;
	if (st == NFS3_OK) {
		READ3resok *ok = &res.READ3res_u.resok;
		uint32_t n = ok->data.data_len < len ? ok->data.data_len : len;

		if (n)
			memcpy(buf, ok->data.data_val, n);
		if (count)
			*count = ok->count;
		if (eof)
			*eof = ok->eof;
	}
	xdr_free((xdrproc_t)xdr_READ3res, &res);
	return st;
}

int wb_remove(struct wb_conn *c, const struct wb_fh *dir, const char *name)
{
	REMOVE3args a;
	REMOVE3res res;
	int st;

	a.object.dir = fh3(dir);
	a.object.name = (char *)(uintptr_t)name;
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_REMOVE, (xdrproc_t)xdr_REMOVE3args, &a,
		     (xdrproc_t)xdr_REMOVE3res, &res, WB_TIMEOUT_MS);
	xdr_free((xdrproc_t)xdr_REMOVE3res, &res);
	return st;
}

int wb_link(struct wb_conn *c, const struct wb_fh *file,
	    const struct wb_fh *dir, const char *name)
{
	LINK3args a;
	LINK3res res;
	int st;

	a.file = fh3(file);
	a.link.dir = fh3(dir);
	a.link.name = (char *)(uintptr_t)name;
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_LINK, (xdrproc_t)xdr_LINK3args, &a,
		     (xdrproc_t)xdr_LINK3res, &res, WB_TIMEOUT_MS);
	xdr_free((xdrproc_t)xdr_LINK3res, &res);
	return st;
}

int wb_fsinfo(struct wb_conn *c, const struct wb_fh *fh, uint32_t *wtmax)
{
	FSINFO3args a = { fh3(fh) };
	FSINFO3res res;
	int st;

	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_FSINFO, (xdrproc_t)xdr_FSINFO3args, &a,
		     (xdrproc_t)xdr_FSINFO3res, &res, WB_TIMEOUT_MS);
	if (wtmax)
		*wtmax = st == NFS3_OK ? res.FSINFO3res_u.resok.wtmax : 0;
	xdr_free((xdrproc_t)xdr_FSINFO3res, &res);
	return st;
}

/* Receive one pipelined WRITE reply and store it by its xid. */
static int many_recv_one(struct wb_conn *c, uint32_t base, size_t sent,
			 struct wb_wres *res)
{
	uint8_t *rec = NULL;
	size_t len = 0;
	struct rawrpc_reply r;
	WRITE3res wr;
	enum rawrpc_io io;
	int st;
	size_t i;

	io = rawrpc_recv_record(c->fd, WB_TIMEOUT_MS, &rec, &len);
	if (io != RAWRPC_OK)
		return (int)io;
	if (rawrpc_parse_reply(rec, len, &r) < 0 ||
	    (i = (size_t)(r.xid - base)) >= sent || res[i].st != WB_ERR_TIMEOUT) {
		free(rec);
		return WB_ERR_PROTO;
	}
	memset(&wr, 0, sizeof(wr));
	st = take_reply(rec, len, r.xid, (xdrproc_t)xdr_WRITE3res, &wr);
	wres_take(&res[i], st, &wr);
	xdr_free((xdrproc_t)xdr_WRITE3res, &wr);
	free(rec);
	return 0;
}

/* Hold (on) or push out (off) c's partial segments: TCP_CORK, tcp(7). */
static void wb_cork(struct wb_conn *c, bool on)
{
	int v = on;

	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &v, sizeof(v));
}

int wb_write_many(struct wb_conn *c, const struct wb_fh *fh,
		  const struct wb_wreq *reqs, size_t n, unsigned window,
		  struct wb_wres *res)
{
	size_t sent = 0, got = 0;
	uint32_t base = 0, xid;
	WRITE3args a;
	int rc;

	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].st = WB_ERR_TIMEOUT;	/* no reply yet */
	}
	while (got < n) {
		wb_cork(c, true);
		while (sent < n && sent - got < window) {
			write_args(&a, fh, reqs[sent].off, reqs[sent].data,
				   reqs[sent].len, reqs[sent].stable);
			xid = wb_send(c, NFSPROC3_WRITE,
				      (xdrproc_t)xdr_WRITE3args, &a);
			if (!xid)
				return c->send_err;
			if (sent == 0)
				base = xid;
			if (xid != base + (uint32_t)sent)
				return WB_ERR_LOCAL;
			sent++;
		}
		wb_cork(c, false);
		if ((rc = many_recv_one(c, base, sent, res)) != 0)
			return rc;
		got++;
	}
	return 0;
}

/* Receive one streamed WRITE reply: its index into reqs, or < 0. */
static long stream_recv_one(struct wb_conn *c, uint32_t base, uint64_t sent,
			    size_t n)
{
	uint8_t *rec = NULL;
	size_t len = 0;
	struct rawrpc_reply r;
	WRITE3res wr;
	enum rawrpc_io io;
	int st;
	uint64_t k;

	io = rawrpc_recv_record(c->fd, WB_TIMEOUT_MS, &rec, &len);
	if (io != RAWRPC_OK)
		return (long)io;
	if (rawrpc_parse_reply(rec, len, &r) < 0 ||
	    (k = (uint32_t)(r.xid - base)) >= sent) {
		free(rec);
		return WB_ERR_PROTO;
	}
	memset(&wr, 0, sizeof(wr));
	st = take_reply(rec, len, r.xid, (xdrproc_t)xdr_WRITE3res, &wr);
	xdr_free((xdrproc_t)xdr_WRITE3res, &wr);
	free(rec);
	return st == NFS3_OK ? (long)(k % n) : -100 - (long)(k % n);
}

long wb_write_stream(struct wb_conn *c, const struct wb_fh *fh,
		     const struct wb_wreq *reqs, size_t n, unsigned window,
		     int stop_fd)
{
	uint64_t sent = 0, got = 0;
	uint32_t base = 0, xid;
	struct pollfd pf = { stop_fd, POLLIN, 0 };
	bool stop = false;
	WRITE3args a;
	long rc;

	while (!stop || got < sent) {
		while (!stop && sent - got < window) {
			const struct wb_wreq *q = &reqs[sent % n];

			write_args(&a, fh, q->off, q->data, q->len, q->stable);
			xid = wb_send(c, NFSPROC3_WRITE,
				      (xdrproc_t)xdr_WRITE3args, &a);
			if (!xid)
				return c->send_err;
			if (sent == 0)
				base = xid;
			if (xid != base + (uint32_t)sent)
				return WB_ERR_LOCAL;
			sent++;
			if (sent % n == 0 && poll(&pf, 1, 0) != 0)
				stop = true;
		}
		if ((rc = stream_recv_one(c, base, sent, n)) < 0)
			return rc;
		got++;
	}
	return (long)(sent / n);
}

int64_t wb_read_all(struct wb_conn *c, const struct wb_fh *fh, uint8_t *buf,
		    uint64_t len)
{
	uint64_t off = 0;
	uint32_t count, want;
	bool eof = false;
	int st;

	while (off < len && !eof) {
		want = len - off > WB_MIB ? WB_MIB : (uint32_t)(len - off);
		st = wb_read(c, fh, off, want, buf + off, &count, &eof);
		if (st != NFS3_OK) {
			fprintf(stderr, "wbtest: %s: READ at %llu: %s\n",
				c->name, (unsigned long long)off,
				wb_stat_name(st));
			return -1;
		}
		if (count == 0)
			break;
		off += count;
	}
	return (int64_t)off;
}

const char *wb_stat_name(int st)
{
	static char other[32];

	switch (st) {
	case NFS3_OK: return "NFS3_OK";
	case NFS3ERR_PERM: return "NFS3ERR_PERM";
	case NFS3ERR_NOENT: return "NFS3ERR_NOENT";
	case NFS3ERR_IO: return "NFS3ERR_IO";
	case NFS3ERR_ACCES: return "NFS3ERR_ACCES";
	case NFS3ERR_EXIST: return "NFS3ERR_EXIST";
	case NFS3ERR_FBIG: return "NFS3ERR_FBIG";
	case NFS3ERR_NOSPC: return "NFS3ERR_NOSPC";
	case NFS3ERR_DQUOT: return "NFS3ERR_DQUOT";
	case NFS3ERR_STALE: return "NFS3ERR_STALE";
	case NFS3ERR_BADHANDLE: return "NFS3ERR_BADHANDLE";
	case NFS3ERR_SERVERFAULT: return "NFS3ERR_SERVERFAULT";
	case NFS3ERR_JUKEBOX: return "NFS3ERR_JUKEBOX";
	case WB_ERR_CLOSED: return "WB_ERR_CLOSED";
	case WB_ERR_TIMEOUT: return "WB_ERR_TIMEOUT";
	case WB_ERR_PROTO: return "WB_ERR_PROTO";
	case WB_ERR_LOCAL: return "WB_ERR_LOCAL";
	case WB_ERR_REJECTED: return "WB_ERR_REJECTED";
	default:
		snprintf(other, sizeof(other), "status %d", st);
		return other;
	}
}

/* ---- metrics ---- */

int wb_snap_take(struct wb_snap *s)
{
	s->text = tmetrics_get();
	return s->text ? 0 : -1;
}

void wb_snap_free(struct wb_snap *s)
{
	free(s->text);
	s->text = NULL;
}

double wb_snap_get(const struct wb_snap *s, const char *series)
{
	return tmetrics_value(s->text, series);
}

double wb_snap_delta(const struct wb_snap *before, const struct wb_snap *after,
		     const char *series)
{
	double a = wb_snap_get(before, series), b = wb_snap_get(after, series);

	return a < 0 || b < 0 ? WB_ABSENT : b - a;
}

double wb_metric(const char *series)
{
	struct wb_snap s;
	double v;

	if (wb_snap_take(&s) < 0)
		return -1;
	v = wb_snap_get(&s, series);
	wb_snap_free(&s);
	return v;
}

uint32_t wb_wsize(uint32_t wtmax)
{
	double ws = wb_metric("nfscached_config_writeback_wsize_bytes");

	if (ws < 1)
		return 0;
	return ws < wtmax ? (uint32_t)ws : wtmax;
}

void wb_snap_print(const char *tag, const struct wb_snap *before,
		   const struct wb_snap *after)
{
	static const char *const series[] = {
		WB_M_CL_WRITES, WB_M_CL_COMMITS, WB_M_ABSORBED, WB_M_THROUGH,
		WB_M_UP_WRITE, WB_M_UP_COMMIT, WB_M_WB_WRITES, WB_M_WB_BYTES,
		WB_M_WB_COMMITS, WB_M_RESENT, WB_M_RETRIES, WB_M_ERRORS,
		WB_M_REPORTED, WB_M_DIRTY, WB_M_WRITING, WB_M_UNSTABLE,
		WB_M_DIRTY_FILES, WB_M_PINNED, WB_M_UP_GETATTR, WB_M_REVAL,
		WB_M_REVAL_SHARED,
	};

	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		double d = wb_snap_delta(before, after, series[i]);

		if (d != 0)
			fprintf(stderr, "wbtest: %s: %s %+.0f (now %.0f)\n",
				tag, series[i], d, wb_snap_get(after, series[i]));
	}
}

double wb_wait_metric(const char *series, double want, int timeout_ms)
{
	uint64_t end = wb_now_ms() + (uint64_t)timeout_ms;
	double v;

	for (;;) {
		v = wb_metric(series);
		if (v >= want || wb_now_ms() >= end)
			return v;
		wb_sleep_ms(20);
	}
}

/* ---- disk ---- */

/* "$NFSC_EXPORT_DIR/name" into out. */
static int disk_path(const char *name, char *out, size_t n)
{
	const char *dir = wb_env("NFSC_EXPORT_DIR");

	if (!dir)
		return -1;
	if ((size_t)snprintf(out, n, "%s/%s", dir, name) >= n)
		return -1;
	return 0;
}

ssize_t wb_disk_read(const char *name, uint64_t off, void *buf, size_t len)
{
	char path[4096];
	size_t got = 0;
	ssize_t n;
	int fd;

	if (disk_path(name, path, sizeof(path)) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got < len) {
		n = pread(fd, (uint8_t *)buf + got, len - got,
			  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)got;
}

int wb_disk_write(const char *name, uint64_t off, const void *buf,
		  size_t len)
{
	char path[4096];
	size_t put = 0;
	ssize_t n;
	int fd;

	if (disk_path(name, path, sizeof(path)) < 0)
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "wbtest: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (put < len) {
		n = pwrite(fd, (const uint8_t *)buf + put, len - put,
			   (off_t)(off + put));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "wbtest: pwrite %s: %s\n", path,
				strerror(errno));
			close(fd);
			return -1;
		}
		put += (size_t)n;
	}
	if (fsync(fd) < 0) {
		fprintf(stderr, "wbtest: fsync %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int64_t wb_disk_size(const char *name)
{
	char path[4096];
	struct stat st;

	if (disk_path(name, path, sizeof(path)) < 0 || stat(path, &st) < 0)
		return -1;
	return (int64_t)st.st_size;
}

/* ---- data ---- */

void wb_pattern(uint8_t *buf, size_t n, uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9e3779b97f4a7c15ull ^
			     ((uint64_t)seed << 17 | seed);

		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		buf[i] = (uint8_t)(x >> 56);
	}
}

size_t wb_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i = 0;

	/* Skip equal 4 KiB blocks quickly, then find the byte. */
	while (i + 4096 <= n && memcmp(a + i, b + i, 4096) == 0)
		i += 4096;
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

uint64_t wb_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x2545f4914f6cdd1dull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t wb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void wb_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const char *wb_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "wbtest: %s is not set (run under harness.sh)\n",
			name);
		return NULL;
	}
	return v;
}

void wb_unique_name(char *out, size_t n, const char *prefix)
{
	static unsigned seq;

	snprintf(out, n, "%s-%ld-%u", prefix, (long)getpid(), seq++);
}

/* ---- state ---- */

void wb_verf_hex(const uint8_t *v, char *out)
{
	for (int i = 0; i < NFS3_WRITEVERFSIZE; i++)
		sprintf(out + 2 * i, "%02x", v[i]);
}

/* $NFSC_TMP/TAG.state into out (room for 4096). */
static void state_path(const char *tag, char *out)
{
	const char *tmp = wb_env("NFSC_TMP");

	snprintf(out, 4096, "%s/%s.state", tmp ? tmp : "/tmp", tag);
}

int wb_state_save(const char *tag, const char *name, const char *hv,
		  const struct wb_fh *fh)
{
	char path[4096];
	FILE *f;

	state_path(tag, path);
	f = fopen(path, "w");
	WB_CHECK(f != NULL, "create %s", path);
	if (!f)
		return -1;
	fprintf(f, "%s %s ", name, hv);
	for (uint32_t i = 0; i < fh->len; i++)
		fprintf(f, "%02x", fh->data[i]);
	fprintf(f, "\n");
	return fclose(f) == 0 ? 0 : -1;
}

int wb_state_load(const char *tag, char *name, char *hv, struct wb_fh *fh)
{
	char hexfh[2 * NFS3_FHSIZE + 1], path[4096];
	unsigned byte;
	FILE *f;
	int n;

	state_path(tag, path);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%63s %16s %128s", name, hv, hexfh);
	fclose(f);
	if (n != 3)
		return -1;
	memset(fh, 0, sizeof(*fh));
	fh->len = (uint32_t)strlen(hexfh) / 2;
	for (uint32_t i = 0; i < fh->len; i++) {
		if (sscanf(hexfh + 2 * i, "%2x", &byte) != 1)
			return -1;
		fh->data[i] = (uint8_t)byte;
	}
	return 0;
}

/* ---- checks ---- */

void wb_check_stat(int got, int want, const char *what, const char *file,
		   unsigned line)
{
	char w[32];

	snprintf(w, sizeof(w), "%s", wb_stat_name(want));
	tcheck(got == want, file, line, "%s: got %s, want %s", what,
	       wb_stat_name(got), w);
}
