/* SPDX-License-Identifier: MIT */
/*
 * rpcrec: ONC RPC record marking over TCP (RFC 5531 section 11).
 *
 * A reassembler is in one of two states:
 *   MARK  waiting for the 4-byte mark of the next fragment;
 *   DATA  copying the current fragment's remaining frag_left bytes.
 * MARK -> DATA when a whole mark has arrived and the running total of the
 * record's announced fragment lengths still fits in max; DATA -> MARK when
 * the fragment is complete (and the record is handed out if that fragment
 * was the last one). Any state -> DEAD on oversize or allocation failure;
 * DEAD is final.
 *
 * Invariants: len <= announced <= max; cap >= len; buf is grown only as
 * data actually arrives (never to the announced size up front), so a peer
 * that announces a large fragment and sends nothing pins no memory.
 * The reassembler owns buf until it hands the record to the caller.
 * A record of one fragment of at most RPCREC_WHOLE_MAX bytes found whole
 * in the buffer, in MARK state with nothing assembled, skips the states:
 * it is taken, mark and all, with one evbuffer_remove (rpcrec_take_whole).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "rpcrec.h"

#define RPCREC_LAST_FRAG	0x80000000u
#define RPCREC_LEN_MASK		0x7fffffffu
#define RPCREC_MIN_CAP		512
/* Largest record taken whole, mark and all, and moved down over its mark:
 * a call's (a READ is about 150 bytes) but not a large WRITE's, where
 * the move would cost more than the second evbuffer_remove it saves. */
#define RPCREC_WHOLE_MAX	4096

struct rpcrec {
	size_t max;		/* largest record payload accepted, bytes */
	uint8_t *buf;		/* record being assembled */
	size_t len;		/* bytes of payload in buf */
	size_t cap;		/* allocated size of buf */
	size_t announced;	/* sum of the record's fragment lengths so far */
	size_t frag_left;	/* bytes of the current fragment still to come */
	bool in_frag;		/* DATA state (else MARK) */
	bool last;		/* current fragment is the record's last */
	bool started;		/* a mark of this record was read */
	enum rpcrec_status dead; /* RPCREC_RECORD while alive */
};

struct rpcrec *
rpcrec_new(size_t max_record)
{
	struct rpcrec *r;

	if (max_record == 0)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->max = max_record;
	r->dead = RPCREC_RECORD;
	return r;
}

void
rpcrec_free(struct rpcrec **r)
{
	if (r == NULL || *r == NULL)
		return;
	free((*r)->buf);
	free(*r);
	*r = NULL;
}

/* Mark the stream unusable with status st and return st. */
static enum rpcrec_status
rpcrec_die(struct rpcrec *r, enum rpcrec_status st)
{
	r->dead = st;
	return st;
}

/* The fragment mark m[0..4) (big-endian). */
static uint32_t
mark_value(const uint8_t m[4])
{
	return (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
	    (uint32_t)m[2] << 8 | (uint32_t)m[3];
}

/* Read the next fragment mark from in and check the running total. */
static enum rpcrec_status
rpcrec_read_mark(struct rpcrec *r, struct evbuffer *in)
{
	uint8_t m[4];
	uint32_t mark;
	size_t flen;

	if (evbuffer_get_length(in) < sizeof(m))
		return RPCREC_NEED_MORE;
	if (evbuffer_remove(in, m, sizeof(m)) != (int)sizeof(m))
		return rpcrec_die(r, RPCREC_ENOMEM);
	mark = mark_value(m);
	flen = mark & RPCREC_LEN_MASK;
	if (flen > r->max - r->announced)
		return rpcrec_die(r, RPCREC_OVERSIZE);
	r->announced += flen;
	r->frag_left = flen;
	r->last = (mark & RPCREC_LAST_FRAG) != 0;
	r->in_frag = true;
	r->started = true;
	return RPCREC_RECORD;
}

/* Grow buf so that it holds at least need bytes (need <= announced). */
static int
rpcrec_reserve(struct rpcrec *r, size_t need)
{
	size_t ncap;
	uint8_t *nbuf;

	if (need <= r->cap)
		return 0;
	ncap = r->cap < RPCREC_MIN_CAP ? RPCREC_MIN_CAP : r->cap;
	while (ncap < need && ncap <= r->announced / 2)
		ncap *= 2;
	if (ncap < need || ncap > r->announced)
		ncap = r->announced;
	nbuf = realloc(r->buf, ncap);
	if (nbuf == NULL)
		return -1;
	r->buf = nbuf;
	r->cap = ncap;
	return 0;
}

/* Copy what is available of the current fragment from in into buf. */
static enum rpcrec_status
rpcrec_read_data(struct rpcrec *r, struct evbuffer *in)
{
	size_t n = evbuffer_get_length(in);

	if (n > r->frag_left)
		n = r->frag_left;
	if (n > INT_MAX)
		n = INT_MAX;
	if (n > 0) {
		if (rpcrec_reserve(r, r->len + n) < 0)
			return rpcrec_die(r, RPCREC_ENOMEM);
		if (evbuffer_remove(in, r->buf + r->len, n) != (int)n)
			return rpcrec_die(r, RPCREC_ENOMEM);
		r->len += n;
		r->frag_left -= n;
	}
	if (r->frag_left > 0)
		return RPCREC_NEED_MORE;
	r->in_frag = false;
	return RPCREC_RECORD;
}

/* Hand the finished record to the caller and reset for the next one. */
static enum rpcrec_status
rpcrec_hand_out(struct rpcrec *r, uint8_t **rec, size_t *len)
{
	if (r->buf == NULL) {
		/* Empty record: still give the caller something to free. */
		r->buf = malloc(1);
		if (r->buf == NULL)
			return rpcrec_die(r, RPCREC_ENOMEM);
	}
	*rec = r->buf;
	*len = r->len;
	r->buf = NULL;
	r->len = 0;
	r->cap = 0;
	r->announced = 0;
	r->last = false;
	r->started = false;
	return RPCREC_RECORD;
}

/*
 * The common case, a small record of one fragment already whole in in
 * (a call arrives in one segment): mark and payload taken by one
 * evbuffer_remove, then the payload moved down over the mark. Each
 * evbuffer_remove drains, and a drain runs the buffer's callbacks; two
 * per call were about 560 instructions of a cached READ's 7,500 (issue
 * 42's profile). RPCREC_NEED_MORE: not that case, nothing taken, the
 * states go on; else as rpcrec_pull.
 */
static enum rpcrec_status
rpcrec_take_whole(struct rpcrec *r, struct evbuffer *in, uint8_t **rec,
		  size_t *len)
{
	uint8_t m[4];
	uint32_t mark;
	size_t flen, have = evbuffer_get_length(in);
	uint8_t *buf;

	if (r->in_frag || r->started || have < sizeof(m) ||
	    evbuffer_copyout(in, m, sizeof(m)) != (ev_ssize_t)sizeof(m))
		return RPCREC_NEED_MORE;
	mark = mark_value(m);
	flen = mark & RPCREC_LEN_MASK;
	if (!(mark & RPCREC_LAST_FRAG) || flen > RPCREC_WHOLE_MAX ||
	    flen > r->max || have - sizeof(m) < flen)
		return RPCREC_NEED_MORE;
	buf = malloc(sizeof(m) + flen);
	if (buf == NULL)
		return rpcrec_die(r, RPCREC_ENOMEM);
	if (evbuffer_remove(in, buf, sizeof(m) + flen) !=
	    (int)(sizeof(m) + flen)) {
		free(buf);
		return rpcrec_die(r, RPCREC_ENOMEM);
	}
	memmove(buf, buf + sizeof(m), flen);
	*rec = buf;
	*len = flen;
	return RPCREC_RECORD;
}

enum rpcrec_status
rpcrec_pull(struct rpcrec *r, struct evbuffer *in, uint8_t **rec,
	    size_t *len)
{
	enum rpcrec_status st;

	if (r->dead != RPCREC_RECORD)
		return r->dead;
	st = rpcrec_take_whole(r, in, rec, len);
	if (st != RPCREC_NEED_MORE)
		return st;
	for (;;) {
		if (!r->in_frag) {
			st = rpcrec_read_mark(r, in);
			if (st != RPCREC_RECORD)
				return st;
		}
		st = rpcrec_read_data(r, in);
		if (st != RPCREC_RECORD)
			return st;
		if (r->last)
			return rpcrec_hand_out(r, rec, len);
	}
}

bool
rpcrec_in_record(const struct rpcrec *r)
{
	return r->started;
}

int
rpcrec_frame(struct evbuffer *out, const void *data, size_t len)
{
	uint8_t m[4];
	uint32_t mark;

	if (len > RPCREC_LEN_MASK)
		return -1;
	mark = RPCREC_LAST_FRAG | (uint32_t)len;
	m[0] = (uint8_t)(mark >> 24);
	m[1] = (uint8_t)(mark >> 16);
	m[2] = (uint8_t)(mark >> 8);
	m[3] = (uint8_t)mark;
	/* Reserve first so that the mark is never appended alone. */
	if (evbuffer_expand(out, sizeof(m) + len) < 0)
		return -1;
	if (evbuffer_add(out, m, sizeof(m)) < 0)
		return -1;
	if (len > 0 && evbuffer_add(out, data, len) < 0)
		return -1;
	return 0;
}
