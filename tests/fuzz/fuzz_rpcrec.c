/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rpcrec: record marking (RFC 5531 section 11) through rpcrec_pull.
 * Input: 2 bytes of max record size (big-endian, 0 becomes 1), 1 byte of
 * chunk size (0 becomes 1), then the byte stream, fed in chunks the way a
 * socket delivers it. Checked: every record handed out is within the
 * maximum, the reassembler never hands out more bytes than were fed, and
 * rpcrec_in_record is false right after a record is handed out.
 */
#include <assert.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "fuzz.h"
#include "rpcrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in;
	struct rpcrec *r;
	size_t max, chunk, off = 3, out = 0;

	if (size < 3)
		return 0;
	max = ((size_t)data[0] << 8 | data[1]) ?: 1;
	chunk = data[2] ?: 1;
	in = evbuffer_new();
	r = rpcrec_new(max);
	assert(in && r);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		enum rpcrec_status st;
		uint8_t *rec;
		size_t len;

		evbuffer_add(in, data + off, n);
		off += n;
		while ((st = rpcrec_pull(r, in, &rec, &len)) == RPCREC_RECORD) {
			assert(len <= max);
			out += len;
			assert(out <= off - 3);
			assert(!rpcrec_in_record(r));
			free(rec);
		}
		if (st != RPCREC_NEED_MORE)
			break;	/* dead: the caller closes */
	}
	rpcrec_free(&r);
	evbuffer_free(in);
	return 0;
}
