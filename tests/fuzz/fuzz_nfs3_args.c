/* SPDX-License-Identifier: MIT */
/*
 * fuzz_nfs3_args: the argument decoder of every row of the dispatch table
 * (every NFSv3 and MOUNT v3 procedure, RFC 1813), the way the server runs
 * it: the first input byte picks the row (modulo dispatch_count), the rest
 * is the arguments, decoded with the row's xdr_args into a zeroed struct
 * of args_size and always released with xdr_free, decoded or not (a
 * half-decoded struct is freed as server.c frees it). Checked: what
 * decodes re-encodes (rpcmsg_encode), and that encoding decodes again to
 * the same encoding (XDR is canonical).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fuzz.h"
#include "rpcmsg.h"

/* Decode data[0..size) with ent's routine into a fresh struct, or NULL.
 * data must be 4-byte aligned and outlive the struct, as the server's
 * records are (WRITE's data is decoded in place with xdr_inline, which
 * libtirpc refuses on an unaligned buffer). */
static void *decode(const struct dispatch_entry *ent, const uint8_t *data,
		    size_t size)
{
	void *args = calloc(1, ent->args_size ? ent->args_size : 1);

	assert(args);
	if (rpcmsg_decode_args(data, size, 0, ent->xdr_args, args) != 0) {
		xdr_free(ent->xdr_args, args);
		free(args);
		return NULL;
	}
	return args;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct dispatch_entry *ent;
	uint8_t *enc1, *enc2, *in;
	size_t len1, len2;
	void *a1, *a2;

	if (size < 1)
		return 0;
	ent = &dispatch_rows[data[0] % dispatch_count];
	/* An aligned copy that outlives a1, as the server's record does. */
	in = malloc(size - 1 ? size - 1 : 1);
	assert(in);
	memcpy(in, data + 1, size - 1);
	a1 = decode(ent, in, size - 1);
	if (!a1) {
		free(in);
		return 0;
	}
	enc1 = rpcmsg_encode(ent->xdr_args, a1, &len1);
	assert(enc1);
	assert(len1 <= size - 1);
	a2 = decode(ent, enc1, len1);
	assert(a2);
	enc2 = rpcmsg_encode(ent->xdr_args, a2, &len2);
	assert(enc2 && len2 == len1 && memcmp(enc1, enc2, len1) == 0);
	free(enc1);
	free(enc2);
	xdr_free(ent->xdr_args, a1);
	xdr_free(ent->xdr_args, a2);
	free(a1);
	free(a2);
	free(in);
	return 0;
}
