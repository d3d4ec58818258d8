/* SPDX-License-Identifier: MIT */
/*
 * upcall: the adapter of the handlers' upstream interface (upcall.h) onto
 * proto/upstream.c: encode the typed arguments, upstream_call, decode the
 * reply once for the callback and free it after.
 */
#include <stdlib.h>

#include "dispatch.h"
#include "nfs3_prot.h"
#include "rpcmsg.h"
#include "upcall.h"

/* One call in flight on the libnfs adapter: whom to tell. */
struct libnfs_call {
	uint32_t proc;
	upcall_cb cb;
	void *arg;
};

void upcall_deliver(uint32_t proc, enum upstream_status status,
		    const uint8_t *xdr, size_t len, upcall_cb cb, void *arg)
{
	enum dispatch_miss miss;
	uint32_t lo, hi;
	const struct dispatch_entry *e =
		dispatch_find(NFS_PROGRAM, NFS_V3, proc, &miss, &lo, &hi);
	void *res = NULL;

	if (status == UPSTREAM_OK && e && (res = calloc(1, e->res_size)) &&
	    rpcmsg_decode_args(xdr, len, 0, e->xdr_res, res) != 0) {
		xdr_free(e->xdr_res, res);
		free(res);
		res = NULL;
	}
	cb(status, res, arg);
	if (res) {
		xdr_free(e->xdr_res, res);
		free(res);
	}
}

/* upstream_cb of the libnfs adapter: decode and hand over. */
static void libnfs_done(enum upstream_status status, const uint8_t *xdr,
			size_t len, void *arg)
{
	struct libnfs_call c = *(struct libnfs_call *)arg;

	free(arg);
	upcall_deliver(c.proc, status, xdr, len, c.cb, c.arg);
}

/* Encode args with xargs and send them on the libnfs upstream impl. */
static int libnfs_call(void *impl, uint32_t proc, xdrproc_t xargs,
		       const void *args, const struct nfs_cred *cred,
		       upcall_cb cb, void *arg)
{
	size_t len;
	uint8_t *bytes = rpcmsg_encode(xargs, args, &len);
	struct libnfs_call *c = malloc(sizeof(*c));
	int rc = -1;

	if (bytes && c) {
		*c = (struct libnfs_call){ .proc = proc, .cb = cb, .arg = arg };
		rc = upstream_call(impl, proc, bytes, len, cred, libnfs_done, c);
	}
	if (rc != 0)
		free(c);
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
