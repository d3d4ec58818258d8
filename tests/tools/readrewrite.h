/* SPDX-License-Identifier: MIT */
/*
 * readrewrite: rewrite the NFSv3 READ replies (RFC 1813 section 3.3.6)
 * of one TCP connection the way buggy servers answered, for delayrelay's
 * --rewrite-read mode (a fault NFS-Ganesha will not produce; docs/design.md
 * "Libraries": a scripted fake only for faults Ganesha cannot produce).
 *
 * The connection's two byte streams are cut into RPC records (RFC 5531
 * section 11, record marking; a message of several fragments is passed on
 * as one). Calls from the client side to NFS v3 procedure READ have their
 * xid remembered; the accepted, successful reply with that xid has its
 * READ3res rewritten by the mode:
 *
 *   eof      a reply with eof TRUE says eof FALSE (a reply that ends at
 *            the file's size, or a READ at or past it, claims more).
 *   inval    a reply with count 0 and eof TRUE (a READ at or past the
 *            end) becomes NFS3ERR_INVAL with the same post-op attributes.
 *   garbage  a reply with eof TRUE gets READRW_GARBAGE more bytes of
 *            0xEE past its data, counted in count: more than the post-op
 *            size allows.
 *   pad      a reply with count 0 and eof TRUE (a READ at or past the
 *            end) gets READRW_PAD_BYTES bytes of 0xEE and eof FALSE, as a
 *            server that pads a past-end reply answers.
 *
 * Everything else passes unchanged, in order. Not thread-safe; one
 * struct readrw per relayed connection.
 */
#ifndef NFSCACHED_TESTS_READREWRITE_H
#define NFSCACHED_TESTS_READREWRITE_H

#include <stdint.h>

#include <event2/buffer.h>

#define READRW_GARBAGE	16u	/* bytes the garbage mode appends */
#define READRW_PAD_BYTES 4u	/* bytes the pad mode appends */
#define READRW_XIDS	256u	/* READ calls remembered per connection */

enum readrw_mode {
	READRW_NONE = 0,
	READRW_EOF,
	READRW_INVAL,
	READRW_GARBAGE_MODE,
	READRW_PAD,
};

/* The rewriting state of one connection. */
struct readrw {
	enum readrw_mode mode;
	struct evbuffer *pending[2];	/* partial records, by direction */
	uint32_t xids[READRW_XIDS];	/* READ calls awaiting their reply */
	unsigned nxids, next;		/* entries used; next slot to reuse */
	unsigned long rewritten;	/* replies rewritten so far */
};

/* "eof", "inval" or "garbage" to a mode; READRW_NONE if unknown. */
enum readrw_mode readrw_mode_parse(const char *s);

/* Set up rw for mode. 0, or -1 on ENOMEM (rw is then cleared). */
int readrw_init(struct readrw *rw, enum readrw_mode mode);

/* Free what rw holds (safe on a cleared rw). */
void readrw_fini(struct readrw *rw);

/*
 * Take the bytes of in (drained) that direction dir carried (0: client to
 * server, 1: server to client), and add to out every whole record they
 * complete, rewritten as the mode says; a partial record waits for more.
 * At_eof flushes a partial record as it is. 0, or -1 on ENOMEM.
 */
int readrw_feed(struct readrw *rw, int dir, struct evbuffer *in,
		struct evbuffer *out, int at_eof);

#endif
