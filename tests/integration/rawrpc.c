/* SPDX-License-Identifier: MIT */
/*
 * rawrpc: the raw ONC RPC test client (see rawrpc.h).
 *
 * Sockets are blocking for writes and polled for reads, so every receive is
 * bounded by its timeout. A buffer (struct rawrpc_buf) grows by doubling and
 * turns sticky-failed on the first error, so test code can chain puts and
 * check once. Reply headers are decoded by libtirpc's xdr_replymsg with the
 * verifier body pointed at a stack buffer (nothing is allocated); results
 * by the rpcgen routines the caller names.
 */
#include "rawrpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "httpget.h"
#include "tcheck.h"
#include "mount3_prot.h"

#define LAST_FRAG	0x80000000u

/* --- buffers --- */

void rawrpc_buf_init(struct rawrpc_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void rawrpc_buf_reset(struct rawrpc_buf *b)
{
	b->len = 0;
	b->failed = false;
}

void rawrpc_buf_free(struct rawrpc_buf *b)
{
	free(b->data);
	rawrpc_buf_init(b);
}

/* Make room for n more bytes. Returns 0 or -1 (and marks b failed). */
static int buf_reserve(struct rawrpc_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->failed)
		return -1;
	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL) {
		b->failed = true;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void rawrpc_put_raw(struct rawrpc_buf *b, const void *p, size_t len)
{
	if (len == 0 || buf_reserve(b, len) < 0)
		return;
	memcpy(b->data + b->len, p, len);
	b->len += len;
}

void rawrpc_put_u32(struct rawrpc_buf *b, uint32_t v)
{
	uint32_t be = htonl(v);

	rawrpc_put_raw(b, &be, 4);
}

void rawrpc_put_u64(struct rawrpc_buf *b, uint64_t v)
{
	rawrpc_put_u32(b, (uint32_t)(v >> 32));
	rawrpc_put_u32(b, (uint32_t)v);
}

void rawrpc_put_opaque(struct rawrpc_buf *b, const void *p, size_t len)
{
	static const uint8_t zeros[4];

	rawrpc_put_u32(b, (uint32_t)len);
	rawrpc_put_raw(b, p, len);
	rawrpc_put_raw(b, zeros, (4 - len % 4) % 4);
}

void rawrpc_put_xdr(struct rawrpc_buf *b, xdrproc_t proc, const void *obj)
{
	XDR x;
	size_t room = 1024;

	/* Encode into the tail; on overflow, double the room and retry. */
	for (;;) {
		if (buf_reserve(b, room) < 0)
			return;
		xdrmem_create(&x, (char *)b->data + b->len, (u_int)room,
			      XDR_ENCODE);
		if (proc(&x, (void *)(uintptr_t)obj)) {
			b->len += xdr_getpos(&x);
			xdr_destroy(&x);
			return;
		}
		xdr_destroy(&x);
		if (room >= (64u << 20)) {
			b->failed = true;
			return;
		}
		room *= 2;
	}
}

struct rawrpc_cred rawrpc_cred_none(void)
{
	struct rawrpc_cred c;

	memset(&c, 0, sizeof(c));
	c.flavor = AUTH_NONE;
	return c;
}

struct rawrpc_cred rawrpc_cred_sys(uint32_t uid, uint32_t gid)
{
	struct rawrpc_cred c;

	memset(&c, 0, sizeof(c));
	c.flavor = AUTH_SYS;
	c.stamp = 0x5241575;
	c.machine = "rawrpc";
	c.uid = uid;
	c.gid = gid;
	c.ngids = 1;
	c.gids[0] = gid;
	return c;
}

/* Append an AUTH_SYS credential body as an opaque_auth. */
static void put_cred_sys(struct rawrpc_buf *b, const struct rawrpc_cred *c)
{
	struct rawrpc_buf body;
	uint32_t i;

	rawrpc_buf_init(&body);
	rawrpc_put_u32(&body, c->stamp);
	rawrpc_put_opaque(&body, c->machine ? c->machine : "",
			  c->machine ? strlen(c->machine) : 0);
	rawrpc_put_u32(&body, c->uid);
	rawrpc_put_u32(&body, c->gid);
	rawrpc_put_u32(&body, c->ngids);
	for (i = 0; i < c->ngids && i < RAWRPC_MAX_GIDS; i++)
		rawrpc_put_u32(&body, c->gids[i]);
	if (body.failed)
		b->failed = true;
	rawrpc_put_u32(b, AUTH_SYS);
	rawrpc_put_opaque(b, body.data, body.len);
	rawrpc_buf_free(&body);
}

void rawrpc_put_call_v(struct rawrpc_buf *b, uint32_t xid, uint32_t rpcvers,
		       uint32_t prog, uint32_t vers, uint32_t proc,
		       const struct rawrpc_cred *cred)
{
	rawrpc_put_u32(b, xid);
	rawrpc_put_u32(b, CALL);
	rawrpc_put_u32(b, rpcvers);
	rawrpc_put_u32(b, prog);
	rawrpc_put_u32(b, vers);
	rawrpc_put_u32(b, proc);
	if (cred != NULL && cred->flavor == AUTH_SYS) {
		put_cred_sys(b, cred);
	} else {
		rawrpc_put_u32(b, cred ? cred->flavor : AUTH_NONE);
		rawrpc_put_u32(b, 0);
	}
	rawrpc_put_u32(b, AUTH_NONE);	/* verifier */
	rawrpc_put_u32(b, 0);
}

void rawrpc_put_call(struct rawrpc_buf *b, uint32_t xid, uint32_t prog,
		     uint32_t vers, uint32_t proc,
		     const struct rawrpc_cred *cred)
{
	rawrpc_put_call_v(b, xid, 2, prog, vers, proc, cred);
}

/* --- sockets --- */

int rawrpc_connect(uint16_t port)
{
	struct sockaddr_in sin;
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int rawrpc_send_bytes(int fd, const void *p, size_t len)
{
	const uint8_t *q = p;
	ssize_t n;

	while (len > 0) {
		n = send(fd, q, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		q += n;
		len -= (size_t)n;
	}
	return 0;
}

int rawrpc_send_record(int fd, const void *p, size_t len)
{
	uint32_t mark;

	if (len > 0x7fffffffu)
		return -1;
	mark = htonl(LAST_FRAG | (uint32_t)len);
	if (rawrpc_send_bytes(fd, &mark, 4) < 0)
		return -1;
	return rawrpc_send_bytes(fd, p, len);
}

/* Milliseconds on the monotonic clock. */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read exactly len bytes before deadline (ms). */
static enum rawrpc_io read_full(int fd, void *p, size_t len, int64_t deadline)
{
	uint8_t *q = p;
	struct pollfd pfd;
	ssize_t n;
	int64_t left;
	int rc;

	while (len > 0) {
		left = deadline - now_ms();
		if (left < 0)
			left = 0;
		pfd.fd = fd;
		pfd.events = POLLIN;
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return RAWRPC_ERROR;
		if (rc == 0)
			return RAWRPC_TIMEOUT;
		n = recv(fd, q, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && (errno == ECONNRESET ||
					 errno == EPIPE)))
			return RAWRPC_CLOSED;
		if (n < 0)
			return RAWRPC_ERROR;
		q += n;
		len -= (size_t)n;
	}
	return RAWRPC_OK;
}

enum rawrpc_io rawrpc_recv_record(int fd, int timeout_ms, uint8_t **rec,
				  size_t *len)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint8_t *buf = NULL, *nb;
	size_t have = 0, flen;
	uint32_t mark;
	enum rawrpc_io rc;

	*rec = NULL;
	*len = 0;
	for (;;) {
		rc = read_full(fd, &mark, 4, deadline);
		if (rc != RAWRPC_OK)
			goto fail;
		mark = ntohl(mark);
		flen = mark & ~LAST_FRAG;
		if (have + flen > RAWRPC_REPLY_MAX) {
			rc = RAWRPC_EPROTO;
			goto fail;
		}
		nb = realloc(buf, have + flen + 1);
		if (nb == NULL) {
			rc = RAWRPC_ERROR;
			goto fail;
		}
		buf = nb;
		rc = read_full(fd, buf + have, flen, deadline);
		if (rc != RAWRPC_OK)
			goto fail;
		have += flen;
		if (mark & LAST_FRAG)
			break;
	}
	*rec = buf;
	*len = have;
	return RAWRPC_OK;
fail:
	free(buf);
	return rc;
}

enum rawrpc_io rawrpc_wait_closed(int fd, int timeout_ms)
{
	uint8_t byte;

	return read_full(fd, &byte, 1, now_ms() + timeout_ms);
}

/* --- replies --- */

/* Leave the results where they are (xdr_replymsg's results routine). */
static bool_t skip_results(XDR *x, void *where)
{
	(void)x;
	(void)where;
	return TRUE;
}

int rawrpc_parse_reply(const uint8_t *rec, size_t len, struct rawrpc_reply *r)
{
	char verf[MAX_AUTH_BYTES];
	struct rpc_msg msg;
	XDR x;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	memset(&msg, 0, sizeof(msg));
	msg.acpted_rply.ar_verf.oa_base = verf;
	msg.acpted_rply.ar_results.where = NULL;
	msg.acpted_rply.ar_results.proc = (xdrproc_t)skip_results;
	xdrmem_create(&x, (char *)(uintptr_t)rec, (u_int)len, XDR_DECODE);
	if (!xdr_replymsg(&x, &msg))
		goto out;
	r->xid = msg.rm_xid;
	r->stat = msg.rm_reply.rp_stat;
	if (r->stat == MSG_ACCEPTED) {
		r->accept = msg.acpted_rply.ar_stat;
		if (r->accept == PROG_MISMATCH) {
			r->low = msg.acpted_rply.ar_vers.low;
			r->high = msg.acpted_rply.ar_vers.high;
		}
		r->res_off = xdr_getpos(&x);
	} else {
		r->reject = msg.rjcted_rply.rj_stat;
		if (r->reject == RPC_MISMATCH) {
			r->low = msg.rjcted_rply.rj_vers.low;
			r->high = msg.rjcted_rply.rj_vers.high;
		} else {
			r->auth = msg.rjcted_rply.rj_why;
		}
	}
	rc = 0;
out:
	xdr_destroy(&x);
	return rc;
}

int rawrpc_decode(const uint8_t *rec, size_t len, size_t off, xdrproc_t proc,
		  void *res)
{
	XDR x;
	bool_t ok;

	if (off > len)
		return -1;
	xdrmem_create(&x, (char *)(uintptr_t)rec + off, (u_int)(len - off),
		      XDR_DECODE);
	ok = proc(&x, res);
	xdr_destroy(&x);
	return ok ? 0 : -1;
}

enum rawrpc_io rawrpc_roundtrip(int fd, const struct rawrpc_buf *call,
				uint32_t xid, int timeout_ms,
				struct rawrpc_reply *r, uint8_t **rec,
				size_t *rec_len)
{
	enum rawrpc_io rc;
	uint8_t *reply;
	size_t len;

	if (call->failed)
		return RAWRPC_ERROR;
	if (rawrpc_send_record(fd, call->data, call->len) < 0)
		return RAWRPC_CLOSED;
	rc = rawrpc_recv_record(fd, timeout_ms, &reply, &len);
	if (rc != RAWRPC_OK)
		return rc;
	if (rawrpc_parse_reply(reply, len, r) < 0 || r->xid != xid) {
		free(reply);
		return RAWRPC_EPROTO;
	}
	if (rec != NULL) {
		*rec = reply;
		*rec_len = len;
	} else {
		free(reply);
	}
	return RAWRPC_OK;
}

enum rawrpc_io rawrpc_call(int fd, uint32_t xid, uint32_t prog,
			   uint32_t vers, uint32_t proc,
			   const struct rawrpc_cred *cred, xdrproc_t argp,
			   const void *args, xdrproc_t resp, void *res,
			   struct rawrpc_reply *r)
{
	struct rawrpc_buf b;
	enum rawrpc_io rc;
	uint8_t *rec = NULL;
	size_t len = 0;

	rawrpc_buf_init(&b);
	rawrpc_put_call(&b, xid, prog, vers, proc, cred);
	if (argp != NULL)
		rawrpc_put_xdr(&b, argp, args);
	rc = rawrpc_roundtrip(fd, &b, xid, RAWRPC_TIMEOUT_MS, r, &rec, &len);
	rawrpc_buf_free(&b);
	if (rc != RAWRPC_OK)
		return rc;
	if (resp != NULL && r->stat == MSG_ACCEPTED && r->accept == SUCCESS &&
	    rawrpc_decode(rec, len, r->res_off, resp, res) < 0) {
		xdr_free(resp, res);
		rc = RAWRPC_EPROTO;
	}
	free(rec);
	return rc;
}

int rawrpc_mnt(int fd, uint32_t xid, const char *path, uint8_t *fh,
	       size_t *fh_len)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply r;
	mountres3 res;
	dirpath dp = (char *)(uintptr_t)path;
	int rc = -1;

	enum rawrpc_io io;

	memset(&res, 0, sizeof(res));
	memset(&r, 0, sizeof(r));
	io = rawrpc_call(fd, xid, MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_MNT, &root,
			 (xdrproc_t)xdr_dirpath, &dp, (xdrproc_t)xdr_mountres3,
			 &res, &r);
	if (io != RAWRPC_OK || r.stat != MSG_ACCEPTED || r.accept != SUCCESS) {
		fprintf(stderr, "rawrpc: MNT %s: io %d, reply_stat %u, "
			"accept_stat %u\n", path, io, r.stat, r.accept);
		return -1;
	}
	if (res.fhs_status == MNT3_OK) {
		fhandle3 *h = &res.mountres3_u.mountinfo.fhandle;

		if (h->fhandle3_len <= FHSIZE3) {
			memcpy(fh, h->fhandle3_val, h->fhandle3_len);
			*fh_len = h->fhandle3_len;
			rc = 0;
		} else {
			fprintf(stderr, "rawrpc: MNT %s: handle of %u bytes\n",
				path, h->fhandle3_len);
		}
	} else {
		rc = (int)res.fhs_status;
		fprintf(stderr, "rawrpc: MNT %s: mountstat3 %d\n", path, rc);
	}
	xdr_free((xdrproc_t)xdr_mountres3, &res);
	return rc;
}

uint32_t rawrpc_xid(void)
{
	static uint32_t next;

	if (next == 0)
		next = ((uint32_t)getpid() << 16) ^ (uint32_t)time(NULL) ^ 1u;
	return next++;
}

/* --- environment and metrics --- */

uint16_t rawrpc_env_port(const char *var)
{
	const char *v = getenv(var);
	char *end;
	unsigned long p;

	if (v == NULL || *v == '\0')
		return 0;
	p = strtoul(v, &end, 10);
	if (*end != '\0' || p == 0 || p > 65535)
		return 0;
	return (uint16_t)p;
}

double rawrpc_metric_now(const char *series)
{
	char *text = tmetrics_get();
	double v = tmetrics_value(text, series);

	free(text);
	return v;
}
