/* SPDX-License-Identifier: MIT */
/*
 * rpcrec: ONC RPC record marking over TCP (RFC 5531 section 11).
 *
 * A record is one or more fragments, each preceded by a 4-byte big-endian
 * mark: the top bit says "last fragment", the low 31 bits give its length.
 * The reassembler pulls bytes from a libevent evbuffer, joins fragments and
 * hands out whole records; it refuses a record whose total length would
 * exceed the configured maximum before buffering it.
 */
#ifndef NFSCACHED_PROTO_RPCREC_H
#define NFSCACHED_PROTO_RPCREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct rpcrec;

enum rpcrec_status {
	RPCREC_RECORD = 0,	/* a whole record was returned */
	RPCREC_NEED_MORE,	/* not enough bytes yet; call again later */
	RPCREC_OVERSIZE,	/* record longer than the maximum: close */
	RPCREC_ENOMEM,		/* allocation failed: close */
};

/*
 * Create a reassembler refusing records over max_record bytes (payload
 * bytes, marks not counted; 0 is refused). Returns NULL on ENOMEM or a bad
 * argument. The caller owns it and frees it with rpcrec_free().
 */
struct rpcrec *rpcrec_new(size_t max_record);

/* Free *r and clear the caller's pointer; NULL is ignored. */
void rpcrec_free(struct rpcrec **r);

/*
 * Drain bytes from in and return the next whole record, if any.
 * On RPCREC_RECORD, *rec is a malloc'd buffer of *len bytes that the caller
 * owns and frees (len may be 0 for an empty record). Fragments of zero
 * length are legal. Partial data stays inside r between calls. After
 * RPCREC_OVERSIZE or RPCREC_ENOMEM the stream is unusable: close it.
 */
enum rpcrec_status rpcrec_pull(struct rpcrec *r, struct evbuffer *in,
			       uint8_t **rec, size_t *len);

/*
 * True between the first fragment mark of a record that rpcrec_pull
 * consumed and the record being handed out (also across empty non-last
 * fragments). Bytes still in the caller's evbuffer are not seen here.
 * Used for the record timeout (nfscached's record_timeout).
 */
bool rpcrec_in_record(const struct rpcrec *r);

/*
 * Append len bytes as one record (a single last fragment) to out.
 * Returns 0, or -1 when len does not fit in 31 bits or evbuffer fails.
 */
int rpcrec_frame(struct evbuffer *out, const void *data, size_t len);

#endif
