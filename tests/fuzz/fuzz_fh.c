/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fh: the client file handle unwrap (fh_unwrap, the layout in
 * docs/design.md "File handles"). The first input byte chooses whether the
 * rest is taken as is (a forged handle: with the fixed key here, the
 * authenticator almost never matches) or first wrapped with fh_wrap (so
 * unwrap sees handles that authenticate) and then has one byte flipped
 * when the second byte says so. Checked: an unwrapped handle's upstream
 * part lies inside the input, its export id is 1..63, and re-wrapping it
 * gives the input back; a wrapped handle unwraps to what was wrapped; a
 * flipped byte never authenticates when the authenticator is full length.
 */
#include <assert.h>
#include <string.h>

#include "fh.h"
#include "fuzz.h"

/* Never keyed (fh_key_init): the one-shot HMAC, same handles. */
static const struct fh_key fuzz_key = {
	.bytes = "nfscached fuzz key, 32 bytes...",
};
static const struct fh_key *const key = &fuzz_key;

/* Unwrap fh[0..len) and check what comes out; the status. */
static enum fh_status check_unwrap(const uint8_t *fh, size_t len)
{
	unsigned id = 0;
	const uint8_t *up = NULL;
	size_t up_len = 0, len2 = 0;

	uint8_t again[FH_SIZE_MAX];
	enum fh_status st = fh_unwrap(key, fh, len, &id, &up, &up_len);

	if (st != FH_OK)
		return st;
	assert(up >= fh && up + up_len <= fh + len);
	assert(id >= 1 && id <= 63);
	assert(fh_wrap(key, id, up, up_len, again, &len2) == FH_OK);
	assert(len2 == len && memcmp(again, fh, len) == 0);
	return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t fh[FH_SIZE_MAX];
	size_t len = 0;

	if (size < 3)
		return 0;
	if (!(data[0] & 1)) {
		check_unwrap(data + 1, size - 1);
		return 0;
	}
	/* data[1]: export id and flip position; data[2..]: upstream handle */
	if (fh_wrap(key, (data[1] % 63) + 1, data + 2, size - 2, fh, &len) !=
	    FH_OK)
		return 0;
	assert(check_unwrap(fh, len) == FH_OK);
	/* Only a full-length authenticator makes a forgery hopeless; 55..62
	 * byte upstream handles get 7..0 bytes of it (fh.h). */
	if ((data[0] & 2) && fh_auth_len(size - 2) == 8) {
		fh[data[1] % len] ^= 0x5a;
		assert(check_unwrap(fh, len) != FH_OK);
	}
	return 0;
}
