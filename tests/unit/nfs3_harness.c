/* SPDX-License-Identifier: MIT */
/* nfs3_harness: see nfs3_harness.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event2/event.h>
#include <CUnit/CUnit.h>

#include "fh.h"
#include "invariant.h"
#include "lifecycle.h"
#include "nfs3_meta.h"
#include "log.h"
#include "nfs3_harness.h"
#include "nfs3_meta.h"
#include "rpcmsg.h"
#include "server.h"

#define H_GUARD_S 30	/* real seconds h_wait waits before failing */

/* Append the bytes cfd has to h->in and move whole records to replies. */
static void take_records(struct nfs3_h *h)
{
	for (;;) {
		uint32_t mark, len;
		struct h_reply *r, **pp;

		if (h->in_len < 4)
			return;
		memcpy(&mark, h->in, 4);
		len = ntohl(mark) & 0x7fffffffu;
		if (h->in_len < 4 + (size_t)len)
			return;
		r = calloc(1, sizeof(*r));
		r->rec = malloc(len);
		memcpy(r->rec, h->in + 4, len);
		r->len = len;
		memcpy(&mark, r->rec, 4);
		r->xid = ntohl(mark);
		memmove(h->in, h->in + 4 + len, h->in_len - 4 - len);
		h->in_len -= 4 + len;
		for (pp = &h->replies; *pp; pp = &(*pp)->next)
			;
		*pp = r;
	}
}

/* Loop callback: cfd is readable. */
static void read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct nfs3_h *h = arg;
	uint8_t buf[65536];
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		h->in = realloc(h->in, h->in_len + (size_t)n);
		memcpy(h->in + h->in_len, buf, (size_t)n);
		h->in_len += (size_t)n;
	}
	if (n == 0) {		/* the server closed the connection */
		h->closed = true;
		event_del(h->rd);
	}
	take_records(h);
}

/* The one export, on the fake upstream over the toy. */
static void start_export(struct nfs3_h *h)
{
	const struct conf_export *e = &h->d.conf->exports[0];

	toy_init(&h->toy);
	fake_up_init(&h->fu, h->d.base, 65536, toy_respond, &h->toy);
	memcpy(h->fu.root, "\0\0\0\0\0\0\0\1", 8);
	h->fu.root_len = 8;
	h->ex.d = &h->d;
	h->ex.conf = e;
	h->ex.ac_reg.min = e->acregmin;
	h->ex.ac_reg.max = e->acregmax;
	h->ex.ac_dir.min = e->acdirmin;
	h->ex.ac_dir.max = e->acdirmax;
	h->ex.upc.ops = &fake_upcall_ops;
	h->ex.upc.impl = &h->fu;
	h->exs[0] = &h->ex;
	h->d.exports = h->exs;
	h->d.nexports = 1;
}

/* Connect the client over a socketpair, from 127.0.0.1 port 800. */
static void connect_client(struct nfs3_h *h)
{
	struct sockaddr_in peer = { .sin_family = AF_INET,
				    .sin_port = htons(800) };
	int sv[2];

	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		abort();
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	h->cfd = sv[1];
	if (server_adopt(h->d.server, sv[0], (struct sockaddr *)&peer,
			 sizeof(peer), 0) != 0)
		abort();
	h->rd = event_new(h->d.base, h->cfd, EV_READ | EV_PERSIST, read_cb, h);
	event_add(h->rd, NULL);
}

void h_init(struct nfs3_h *h, h_conf_fn tune)
{
	char err[256];

	memset(h, 0, sizeof(*h));
	setenv("NFSCACHED_TEST_CLOCK", "1", 1);
	if (!getenv("NFS3_TEST_VERBOSE"))
		log_set_level_name("error");
	if (conf_from_flags("nfs://127.0.0.1/export", "127.0.0.1:2049", 0,
			    &h->d.conf, err, sizeof(err)) != 0)
		abort();
	if (tune)
		tune(h->d.conf);
	memset(h->d.fh_key.bytes, 0x5a, sizeof(h->d.fh_key.bytes));
	h->d.base = event_base_new();
	start_export(h);
	/* As main() starts the daemon (the disk tier when the test set
	 * cache_dir, NFSCACHED_CHECK, outage records of an earlier run),
	 * without upstream clients, the journal (a test starts it),
	 * listeners or the lag timer. */
	if (daemon_start(&h->d, 0, err, sizeof(err)) != 0) {
		fprintf(stderr, "nfs3_harness: %s\n", err);
		abort();
	}
	connect_client(h);
	h->next_xid = 0x1000;
	h->uid = h->gid = 1000;
}

void h_fini(struct nfs3_h *h)
{
	while (h->replies) {
		struct h_reply *r = h->replies;

		h->replies = r->next;
		free(r->rec);
		free(r);
	}
	event_free(h->rd);
	close(h->cfd);
	h_turns(h, 4);
	daemon_stop(&h->d);	/* as main() after its loop */
	fake_up_destroy(&h->fu);	/* frees its calls without answers */
	toy_fini(&h->toy);
	event_base_free(h->d.base);
	free(h->in);
}

void h_fh(struct nfs3_h *h, uint64_t fileid, nfs_fh3 *fh, uint8_t *buf)
{
	uint8_t up[8];
	size_t len;

	for (int i = 0; i < 8; i++)
		up[i] = (uint8_t)(fileid >> (56 - 8 * i));
	if (fh_wrap(&h->d.fh_key, h->ex.conf->id, up, 8, buf, &len) != FH_OK)
		abort();
	fh->data.data_len = (u_int)len;
	fh->data.data_val = (char *)buf;
}

/* Append v big-endian at *p. */
static void put32(uint8_t **p, uint32_t v)
{
	v = htonl(v);
	memcpy(*p, &v, 4);
	*p += 4;
}

uint32_t h_send_read(struct nfs3_h *h, uint64_t id, uint64_t off,
		     uint32_t count)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = count };

	h_fh(h, id, &a.file, buf);
	return h_call(h, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a);
}

uint32_t h_send_write(struct nfs3_h *h, uint64_t id, uint64_t off,
		      uint32_t len, uint8_t v, stable_how how)
{
	static uint8_t data[65536];
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args a = { .offset = off, .count = len, .stable = how };

	memset(data, v, len);
	h_fh(h, id, &a.file, buf);
	a.data.data_len = len;
	a.data.data_val = (char *)data;
	return h_call(h, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a);
}

uint32_t h_send_commit(struct nfs3_h *h, uint64_t id)
{
	uint8_t buf[FH_SIZE_MAX];
	COMMIT3args a = { .offset = 0, .count = 0 };

	h_fh(h, id, &a.file, buf);
	return h_call(h, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &a);
}

uint32_t h_call(struct nfs3_h *h, uint32_t proc, xdrproc_t xargs,
		const void *args)
{
	return h_call_prog(h, NFS_PROGRAM, NFS_V3, proc, xargs, args);
}

uint32_t h_call_prog(struct nfs3_h *h, uint32_t prog, uint32_t vers,
		     uint32_t proc, xdrproc_t xargs, const void *args)
{
	size_t alen;
	uint8_t *a = rpcmsg_encode(xargs, args, &alen);
	uint8_t *rec = malloc(alen + 128), *p = rec + 4;
	uint32_t xid = h->next_xid++;
	size_t len, off = 0;

	put32(&p, xid);
	put32(&p, 0);			/* CALL */
	put32(&p, 2);			/* RPC version */
	put32(&p, prog);
	put32(&p, vers);
	put32(&p, proc);
	put32(&p, AUTH_SYS);
	put32(&p, 24);			/* stamp, "test", uid, gid, 0 gids */
	put32(&p, 1);
	put32(&p, 4);
	memcpy(p, "test", 4);
	p += 4;
	put32(&p, h->uid);
	put32(&p, h->gid);
	put32(&p, 0);
	put32(&p, AUTH_NONE);
	put32(&p, 0);
	memcpy(p, a, alen);
	p += alen;
	len = (size_t)(p - rec);
	p = rec;
	put32(&p, 0x80000000u | (uint32_t)(len - 4));
	while (off < len) {
		ssize_t n = write(h->cfd, rec + off, len - off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	free(a);
	free(rec);
	return xid;
}

bool h_replied(struct nfs3_h *h, uint32_t xid)
{
	for (struct h_reply *r = h->replies; r; r = r->next)
		if (r->xid == xid)
			return true;
	return false;
}

/* Take the reply to xid off the list (NULL if not there). */
static struct h_reply *take(struct nfs3_h *h, uint32_t xid)
{
	for (struct h_reply **pp = &h->replies; *pp; pp = &(*pp)->next) {
		struct h_reply *r = *pp;

		if (r->xid == xid) {
			*pp = r->next;
			return r;
		}
	}
	return NULL;
}

/* Decode an accepted SUCCESS reply's results (RFC 5531 section 9). */
static int decode_reply(const struct h_reply *r, xdrproc_t xres, void *res)
{
	uint32_t w[6], vlen;

	if (r->len < 24)
		return -1;
	memcpy(w, r->rec, sizeof(w));
	vlen = (ntohl(w[4]) + 3) & ~3u;
	if (ntohl(w[1]) != 1 || ntohl(w[2]) != 0 || r->len < 24 + vlen)
		return -1;
	memcpy(&w[5], r->rec + 20 + vlen, 4);
	if (ntohl(w[5]) != SUCCESS)
		return -1;
	return rpcmsg_decode_args(r->rec, r->len, 24 + vlen, xres, res);
}

/* Timer callback: the hang guard ran out. */
static void guard_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(bool *)arg = true;
}

int h_wait(struct nfs3_h *h, uint32_t xid, xdrproc_t xres, void *res)
{
	struct timeval tv = { H_GUARD_S, 0 };
	bool out = false;
	struct event *guard = evtimer_new(h->d.base, guard_cb, &out);
	struct h_reply *r;
	int rc;

	evtimer_add(guard, &tv);
	while (!h_replied(h, xid) && !out && !h->closed) {
		event_base_loop(h->d.base, EVLOOP_ONCE);
		invariant_turn(&h->d);
	}
	event_free(guard);
	if (!(r = take(h, xid)))
		return -1;
	rc = decode_reply(r, xres, res);
	free(r->rec);
	free(r);
	return rc;
}

void h_turns(struct nfs3_h *h, int n)
{
	for (int i = 0; i < n; i++) {
		event_base_loop(h->d.base, EVLOOP_NONBLOCK);
		invariant_turn(&h->d);
	}
}

void h_advance(struct nfs3_h *h, double seconds)
{
	if (mclock_advance(h->d.base, seconds) != 0)
		abort();
	h_turns(h, 8);
}

nfsstat3 h_lookup(struct nfs3_h *h, char *name, uint64_t *fileid)
{
	uint8_t buf[FH_SIZE_MAX];
	const post_op_attr *p;
	LOOKUP3args a;
	LOOKUP3res res;
	nfsstat3 st;

	h_fh(h, TOY_ROOT, &a.what.dir, buf);
	a.what.name = name;
	memset(&res, 0, sizeof(res));
	if (h_wait(h, h_call(h, NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args,
			     &a), (xdrproc_t)xdr_LOOKUP3res, &res) != 0)
		return H_NO_REPLY;
	st = res.status;
	if (st == NFS3_OK && fileid) {
		p = &res.LOOKUP3res_u.resok.obj_attributes;
		*fileid = p->attributes_follow ?
			  p->post_op_attr_u.attributes.fileid : UINT64_MAX;
	}
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&res);
	return st;
}

/* Remove one path (nftw callback). */
static int rm_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

void h_tmpdir(char *out, size_t n, const char *tag)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(out, n, "%s/%s.XXXXXX", base, tag);
	if (!mkdtemp(out))
		CU_FAIL_FATAL("mkdtemp");
}

void h_rmtree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void h_expect_steps(const struct nfs3_h *h, enum nfs3_write_step ws,
		    uint64_t wn, enum nfs3_commit_step cs, uint64_t cn)
{
	uint64_t w[NFS3_WRITE_NSTEPS], c[NFS3_COMMIT_NSTEPS];

	nfs3_write_steps_inflight(&h->d, w);
	nfs3_commit_steps_inflight(&h->d, c);
	for (enum nfs3_write_step i = 0; i < NFS3_WRITE_NSTEPS; i++) {
		if (w[i] != (i == ws ? wn : 0))
			fprintf(stderr, "\n  WRITE step %s: %llu\n",
				nfs3_write_step_name(i),
				(unsigned long long)w[i]);
		CU_ASSERT_EQUAL(w[i], i == ws ? wn : 0);
	}
	for (enum nfs3_commit_step i = 0; i < NFS3_COMMIT_NSTEPS; i++) {
		if (c[i] != (i == cs ? cn : 0))
			fprintf(stderr, "\n  COMMIT step %s: %llu\n",
				nfs3_commit_step_name(i),
				(unsigned long long)c[i]);
		CU_ASSERT_EQUAL(c[i], i == cs ? cn : 0);
	}
}
