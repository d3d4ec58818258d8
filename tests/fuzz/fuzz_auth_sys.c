/* SPDX-License-Identifier: MIT */
/*
 * fuzz_auth_sys: AUTH_SYS credential bodies (authsys_parms, RFC 5531
 * appendix A). The input is the credential body; the target frames it in
 * a valid call header (NFS v3 NULL, flavor AUTH_SYS, the input's length
 * as the body length, then an AUTH_NONE verifier) so every byte reaches
 * the credential parser. Checked: on RPCMSG_OK the credential is AUTH_SYS
 * with at most RPCMSG_MAX_GIDS gids and a terminated machine name of at
 * most RPCMSG_MAX_MACHINE bytes, and the arguments start after the
 * verifier; a body over 400 bytes (RFC 5531's opaque_auth limit) is never
 * accepted.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rpcmsg.h"

/* Append the big-endian word v at p. */
static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pad = (4 - size % 4) % 4, len = 8 * 4 + size + pad + 8;
	uint8_t *rec, *p;
	struct rpcmsg_call call;
	enum rpcmsg_status st;

	if (size > 4096)
		return 0;
	rec = calloc(1, len);
	assert(rec);
	p = put32(rec, 0x12345678);	/* xid */
	p = put32(p, 0);		/* CALL */
	p = put32(p, 2);		/* rpcvers */
	p = put32(p, 100003);		/* NFS */
	p = put32(p, 3);
	p = put32(p, 0);		/* NULL */
	p = put32(p, 1);		/* AUTH_SYS */
	p = put32(p, (uint32_t)size);
	memcpy(p, data, size);
	p += size + pad;
	p = put32(p, 0);		/* verifier AUTH_NONE */
	p = put32(p, 0);
	assert((size_t)(p - rec) == len);
	memset(&call, 0, sizeof(call));
	st = rpcmsg_decode_call(rec, len, &call);
	if (st == RPCMSG_OK) {
		assert(size <= 400);
		assert(call.flavor == AUTH_SYS);
		assert(call.cred.ngids <= RPCMSG_MAX_GIDS);
		assert(strlen(call.machine) <= RPCMSG_MAX_MACHINE);
		assert(call.args_off == len);
	}
	free(rec);
	return 0;
}
