/* SPDX-License-Identifier: MIT */
/*
 * upcall: the adapter of the handlers' upstream interface (upcall.h) onto
 * proto/upstream.c: encode the typed arguments, then upstream_call.
 */
#include <stdlib.h>

#include "rpcmsg.h"
#include "upcall.h"

/* Encode args with xargs and send them on the libnfs upstream impl. */
static int libnfs_call(void *impl, uint32_t proc, xdrproc_t xargs,
		       const void *args, const struct upstream_cred *cred,
		       upstream_cb cb, void *arg)
{
	size_t len;
	uint8_t *bytes = rpcmsg_encode(xargs, args, &len);
	int rc;

	if (!bytes)
		return -1;
	rc = upstream_call(impl, proc, bytes, len, cred, cb, arg);
	free(bytes);
	return rc;
}

/* upstream_get_state on impl. */
static enum upstream_state libnfs_state(const void *impl)
{
	return upstream_get_state(impl);
}

/* upstream_rtmax on impl. */
static uint32_t libnfs_rtmax(const void *impl)
{
	return upstream_rtmax(impl);
}

/* upstream_wtmax on impl. */
static uint32_t libnfs_wtmax(const void *impl)
{
	return upstream_wtmax(impl);
}

/* upstream_root_fh on impl. */
static const uint8_t *libnfs_root_fh(const void *impl, size_t *len)
{
	return upstream_root_fh(impl, len);
}

const struct upcall_ops upcall_libnfs = {
	.call = libnfs_call,
	.state = libnfs_state,
	.rtmax = libnfs_rtmax,
	.wtmax = libnfs_wtmax,
	.root_fh = libnfs_root_fh,
};
