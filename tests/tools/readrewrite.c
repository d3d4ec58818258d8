/* SPDX-License-Identifier: MIT */
/*
 * readrewrite: cut a relayed connection into RPC records and rewrite its
 * NFSv3 READ replies (see readrewrite.h for the modes). A record is
 * parsed only as far as the mode needs, every offset checked against its
 * length; a record that does not parse passes unchanged.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "readrewrite.h"

#define RM_LAST		0x80000000u
#define NFS_PROG	100003u
#define NFSPROC3_READ	6u
#define NFS3ERR_INVAL	22u
#define FATTR3_SIZE	84u

/* The big-endian word at p. */
static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* Store v big-endian at p. */
static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

enum readrw_mode readrw_mode_parse(const char *s)
{
	if (!strcmp(s, "eof"))
		return READRW_EOF;
	if (!strcmp(s, "inval"))
		return READRW_INVAL;
	if (!strcmp(s, "garbage"))
		return READRW_GARBAGE_MODE;
	if (!strcmp(s, "pad"))
		return READRW_PAD;
	return READRW_NONE;
}

int readrw_init(struct readrw *rw, enum readrw_mode mode)
{
	memset(rw, 0, sizeof(*rw));
	rw->mode = mode;
	rw->pending[0] = evbuffer_new();
	rw->pending[1] = evbuffer_new();
	if (!rw->pending[0] || !rw->pending[1]) {
		readrw_fini(rw);
		return -1;
	}
	return 0;
}

void readrw_fini(struct readrw *rw)
{
	for (int i = 0; i < 2; i++)
		if (rw->pending[i])
			evbuffer_free(rw->pending[i]);
	memset(rw, 0, sizeof(*rw));
}

/* Remember a READ call's xid (the oldest is forgotten when full). */
static void xid_add(struct readrw *rw, uint32_t xid)
{
	if (rw->nxids < READRW_XIDS) {
		rw->xids[rw->nxids++] = xid;
		return;
	}
	rw->xids[rw->next] = xid;
	rw->next = (rw->next + 1) % READRW_XIDS;
}

/* Forget xid; true if it was a READ call's. */
static bool xid_take(struct readrw *rw, uint32_t xid)
{
	for (unsigned i = 0; i < rw->nxids; i++) {
		if (rw->xids[i] == xid) {
			rw->xids[i] = rw->xids[--rw->nxids];
			if (rw->next >= rw->nxids)
				rw->next = 0;
			return true;
		}
	}
	return false;
}

/* A call message m[0..n): remember it if it is an NFSv3 READ. */
static void see_call(struct readrw *rw, const uint8_t *m, size_t n)
{
	if (n >= 24 && get32(m + 4) == 0 && get32(m + 12) == NFS_PROG &&
	    get32(m + 16) == 3 && get32(m + 20) == NFSPROC3_READ)
		xid_add(rw, get32(m));
}

/* Where the READ3res of reply m[0..n) starts, or 0 if not a successful
 * accepted reply. */
static size_t reply_body(const uint8_t *m, size_t n)
{
	size_t p;
	uint32_t vlen;

	if (n < 24 || get32(m + 4) != 1 || get32(m + 8) != 0)
		return 0;
	vlen = get32(m + 16);
	if (vlen > 400)
		return 0;
	p = 20 + ((vlen + 3u) & ~3u);
	if (p + 4 > n || get32(m + p) != 0)
		return 0;
	return p + 4;
}

/*
 * Append extra bytes of 0xEE to the data of the READ reply m[0..*n)
 * (capacity cap) whose count is at c, its data dlen bytes padded to
 * padded, counting them in count. True if they fit.
 */
static bool append_garbage(uint8_t *m, size_t *n, size_t cap, size_t c,
			   uint32_t dlen, uint32_t padded, uint32_t extra)
{
	uint32_t npadded = (dlen + extra + 3u) & ~3u;

	if (c + 12 + npadded > cap)
		return false;
	memmove(m + c + 12 + npadded, m + c + 12 + padded,
		*n - (c + 12 + padded));
	memset(m + c + 12 + dlen, 0xEE, extra);
	memset(m + c + 12 + dlen + extra, 0, npadded - dlen - extra);
	put32(m + c, get32(m + c) + extra);
	put32(m + c + 8, dlen + extra);
	*n += npadded - padded;
	return true;
}

/*
 * Rewrite the READ reply m[0..*n) (capacity cap) in place by rw's mode.
 * True if it changed.
 */
static bool rewrite_read(const struct readrw *rw, uint8_t *m, size_t *n,
			 size_t cap)
{
	size_t p = reply_body(m, *n), a, c;
	uint32_t count, dlen, padded;

	if (!p || p + 8 > *n || get32(m + p) != 0)
		return false;
	a = p + 4;			/* post_op_attr */
	c = a + 4 + (get32(m + a) ? FATTR3_SIZE : 0);	/* count */
	if (c + 12 > *n)
		return false;
	count = get32(m + c);
	dlen = get32(m + c + 8);
	padded = (dlen + 3u) & ~3u;
	if (get32(m + c + 4) != 1 || c + 12 + padded > *n)
		return false;	/* only replies with eof TRUE */
	switch (rw->mode) {
	case READRW_EOF:
		put32(m + c + 4, 0);
		return true;
	case READRW_INVAL:
		if (count != 0)
			return false;
		put32(m + p, NFS3ERR_INVAL);
		*n = c;		/* resfail: the post_op_attr only */
		return true;
	case READRW_GARBAGE_MODE:
		return append_garbage(m, n, cap, c, dlen, padded,
				      READRW_GARBAGE);
	case READRW_PAD:
		if (count != 0 ||
		    !append_garbage(m, n, cap, c, dlen, padded, READRW_PAD_BYTES))
			return false;
		put32(m + c + 4, 0);
		return true;
	case READRW_NONE:
		break;
	}
	return false;
}

/* Bytes of the first whole message in b (marks included) and its
 * payload length, or 0 while it is incomplete. */
static size_t whole_message(struct evbuffer *b, size_t *payload)
{
	size_t have = evbuffer_get_length(b), at = 0;
	uint8_t mark[4];
	struct evbuffer_ptr ptr;

	*payload = 0;
	while (at + 4 <= have) {
		uint32_t rm;

		if (evbuffer_ptr_set(b, &ptr, at, EVBUFFER_PTR_SET) != 0 ||
		    evbuffer_copyout_from(b, &ptr, mark, 4) != 4)
			return 0;
		rm = get32(mark);
		at += 4 + (rm & ~RM_LAST);
		*payload += rm & ~RM_LAST;
		if (at > have)
			return 0;
		if (rm & RM_LAST)
			return at;
	}
	return 0;
}

/* Move one whole message of b (total bytes, payload bytes) to out as a
 * single fragment, rewritten when it is a READ reply. */
static int pass_message(struct readrw *rw, int dir, struct evbuffer *b,
			size_t total, size_t payload, struct evbuffer *out)
{
	size_t cap = payload + READRW_GARBAGE + 4, n = 0;
	uint8_t *m = malloc(cap + 4), mark[4];
	int rc = 0;

	if (!m)
		return -1;
	while (total > 0) {
		uint32_t len;

		evbuffer_remove(b, mark, 4);
		len = get32(mark) & ~RM_LAST;
		evbuffer_remove(b, m + 4 + n, len);
		n += len;
		total -= 4 + len;
	}
	if (dir == 0)
		see_call(rw, m + 4, n);
	else if (n >= 4 && xid_take(rw, get32(m + 4)) &&
		 rewrite_read(rw, m + 4, &n, cap)) {
		rw->rewritten++;
		fprintf(stderr, "delayrelay: rewrote READ reply %lu (%s)\n",
			rw->rewritten, rw->mode == READRW_EOF ? "eof" :
			rw->mode == READRW_INVAL ? "inval" :
			rw->mode == READRW_PAD ? "pad" : "garbage");
	}
	put32(m, (uint32_t)n | RM_LAST);
	if (evbuffer_add(out, m, n + 4) != 0)
		rc = -1;
	free(m);
	return rc;
}

int readrw_feed(struct readrw *rw, int dir, struct evbuffer *in,
		struct evbuffer *out, int at_eof)
{
	struct evbuffer *b = rw->pending[dir];
	size_t total, payload;

	if (evbuffer_add_buffer(b, in) != 0)
		return -1;
	while ((total = whole_message(b, &payload)) > 0)
		if (pass_message(rw, dir, b, total, payload, out) != 0)
			return -1;
	if (at_eof)
		return evbuffer_add_buffer(out, b);
	return 0;
}
