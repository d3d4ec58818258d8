/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rpcmsg_call: a whole record as a call header (RFC 5531 section 9)
 * through rpcmsg_decode_call, AUTH_NONE and AUTH_SYS credentials and the
 * verifier included. Checked: on RPCMSG_OK the arguments start inside the
 * record, an AUTH_SYS credential has at most 16 gids and a machine name
 * of at most 255 bytes.
 */
#include <assert.h>
#include <string.h>

#include "fuzz.h"
#include "rpcmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rpcmsg_call call;

	memset(&call, 0, sizeof(call));
	if (rpcmsg_decode_call(data, size, &call) == RPCMSG_OK) {
		assert(call.args_off <= size);
		assert(call.args_off % 4 == 0);
		if (call.flavor == AUTH_SYS)
			assert(call.cred.ngids <= RPCMSG_MAX_GIDS &&
			       strlen(call.machine) <= RPCMSG_MAX_MACHINE);
	}
	return 0;
}
