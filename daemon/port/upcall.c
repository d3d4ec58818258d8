/* SPDX-License-Identifier: MIT */
/*
 * upcall: the adapter of the handlers' upstream interface (upcall.h) onto
 * proto/upstream.c: encode the typed arguments, upstream_call, decode the
 * reply once for the callback and free it after.
 */
#include <stdlib.h>

#include "nfs3_prot.h"
#include "rpcmsg.h"
#include "upcall.h"

/* One call in flight on the libnfs adapter: whom to tell. */
struct libnfs_call {
	uint32_t proc;
	struct upcall_res res;
	upcall_cb cb;
	void *arg;
};

void upcall_deliver(uint32_t proc, struct upcall_res rs,
		    enum upstream_status status,
		    const uint8_t *xdr, size_t len, const uint8_t *tail,
		    size_t tail_len, upcall_cb cb, void *arg)
{
	void *res = NULL;
	READ3resok *ok = NULL;

	if (status == UPSTREAM_OK && rs.xdr && (res = calloc(1, rs.size)) &&
	    rpcmsg_decode_args(xdr, len, 0, rs.xdr, res) != 0) {
		xdr_free(rs.xdr, res);
		free(res);
		res = NULL;
	}
	if (res && tail) {
		READ3res *rd = res;

		/* The data by reference (upstream_cb): only where the result
		 * holds the empty opaque the tail stands for. */
		if (proc != NFSPROC3_READ || rd->status != NFS3_OK ||
		    rd->READ3res_u.resok.data.data_len != 0 ||
		    tail_len > UINT32_MAX) {
			xdr_free(rs.xdr, res);
			free(res);
			res = NULL;
		} else {
			ok = &rd->READ3res_u.resok;
			free(ok->data.data_val);
			ok->data.data_val = (char *)(uintptr_t)tail;
			ok->data.data_len = (u_int)tail_len;
		}
	}
	cb(status, res, arg);
	if (res) {
		if (ok) {	/* borrowed, not ours to free */
			ok->data.data_val = NULL;
			ok->data.data_len = 0;
		}
		xdr_free(rs.xdr, res);
		free(res);
	}
}

/* upstream_cb of the libnfs adapter: decode and hand over. */
static void libnfs_done(enum upstream_status status, const uint8_t *xdr,
			size_t len, const uint8_t *tail, size_t tail_len,
			void *arg)
{
	struct libnfs_call c = *(struct libnfs_call *)arg;

	free(arg);
	upcall_deliver(c.proc, c.res, status, xdr, len, tail, tail_len, c.cb,
		       c.arg);
}

/* Encode args with xargs and send them on the libnfs upstream impl. */
static int libnfs_call(void *impl, uint32_t proc, xdrproc_t xargs,
		       const void *args, struct upcall_res res,
		       const struct nfs_cred *cred,
		       upcall_cb cb, void *arg)
{
	size_t len;
	uint8_t *bytes = rpcmsg_encode(xargs, args, &len);
	struct libnfs_call *c = malloc(sizeof(*c));
	int rc = -1;

	if (bytes && c) {
		*c = (struct libnfs_call){ .proc = proc, .res = res, .cb = cb,
					   .arg = arg };
		rc = upstream_call(upcall_lanes_pick(impl), proc, bytes, len,
				   cred, libnfs_done, c);
	}
	if (rc != 0)
		free(c);
	free(bytes);
	return rc;
}

struct upstream *upcall_lanes_pick(const struct upcall_lanes *l)
{
	struct upstream *best = l->lane[0];
	unsigned least = upstream_inflight(best);

	for (unsigned i = 1; i < l->n && least; i++) {
		unsigned k = upstream_inflight(l->lane[i]);

		if (k < least && upstream_get_state(l->lane[i]) == UPSTREAM_UP) {
			best = l->lane[i];
			least = k;
		}
	}
	return best;
}

/* The first lane of impl (a struct upcall_lanes). */
static const struct upstream *lane0(const void *impl)
{
	return ((const struct upcall_lanes *)impl)->lane[0];
}

/* upstream_get_state of impl's lane 0. */
static enum upstream_state libnfs_state(const void *impl)
{
	return upstream_get_state(lane0(impl));
}

/* upstream_rtmax of impl's lane 0. */
static uint32_t libnfs_rtmax(const void *impl)
{
	return upstream_rtmax(lane0(impl));
}

/* upstream_wtmax of impl's lane 0. */
static uint32_t libnfs_wtmax(const void *impl)
{
	return upstream_wtmax(lane0(impl));
}

/* upstream_root_fh of impl's lane 0. */
static const uint8_t *libnfs_root_fh(const void *impl, size_t *len)
{
	return upstream_root_fh(lane0(impl), len);
}

/* upstream_latency_floor of impl's lane 0. */
static double libnfs_latency_floor(const void *impl)
{
	return upstream_latency_floor(lane0(impl));
}

/* upstream_read_rate summed over impl's lanes that are up: lanes share
 * the export's READs (upcall_lanes_pick), each measuring its share. */
static double libnfs_read_rate(const void *impl)
{
	const struct upcall_lanes *l = impl;
	double sum = 0;

	for (unsigned k = 0; k < l->n; k++)
		if (upstream_get_state(l->lane[k]) == UPSTREAM_UP)
			sum += upstream_read_rate(l->lane[k]);
	return sum;
}

const struct upcall_ops upcall_libnfs = {
	.call = libnfs_call,
	.state = libnfs_state,
	.rtmax = libnfs_rtmax,
	.wtmax = libnfs_wtmax,
	.root_fh = libnfs_root_fh,
	.latency_floor = libnfs_latency_floor,
	.read_rate = libnfs_read_rate,
};

int upcall_lanes_start(struct upcall_lanes *l, unsigned n,
		       struct event_base *base, const struct upstream_params *p,
		       upstream_state_cb state_cb, void *arg)
{
	l->n = n;
	for (unsigned k = 0; k < n; k++) {
		l->lane[k] = upstream_new(base, p, k ? NULL : state_cb, arg);
		if (!l->lane[k] || upstream_start(l->lane[k]) != 0) {
			upcall_lanes_close(l);
			return -1;
		}
	}
	return 0;
}

bool upcall_lanes_busy(const struct upcall_lanes *l)
{
	for (unsigned k = 0; k < l->n; k++)
		if (upstream_busy(l->lane[k]))
			return true;
	return false;
}

void upcall_lanes_close(struct upcall_lanes *l)
{
	for (unsigned k = 0; k < l->n; k++)
		upstream_free(&l->lane[k]);
	l->n = 0;
}

/* A closed export's call: refused now, never called back. */
static int closed_call(void *impl, uint32_t proc, xdrproc_t xargs,
		       const void *args, struct upcall_res res,
		       const struct nfs_cred *cred, upcall_cb cb, void *arg)
{
	(void)impl, (void)proc, (void)xargs, (void)args, (void)res, (void)cred;
	(void)cb, (void)arg;
	return -1;
}

/* A closed export's state: down. */
static enum upstream_state closed_state(const void *impl)
{
	(void)impl;
	return UPSTREAM_DOWN;
}

/* A closed export's transfer size: a small one no loop divides by zero. */
static uint32_t closed_size(const void *impl)
{
	(void)impl;
	return 4096;
}

/* A closed export's root handle: none. */
static const uint8_t *closed_root_fh(const void *impl, size_t *len)
{
	(void)impl;
	*len = 0;
	return NULL;
}

/* A closed export's latency floor: unknown. */
static double closed_latency_floor(const void *impl)
{
	(void)impl;
	return 0;
}

/* A closed export's delivery rate: unknown. */
static double closed_read_rate(const void *impl)
{
	(void)impl;
	return 0;
}

const struct upcall_ops upcall_closed = {
	.call = closed_call,
	.state = closed_state,
	.rtmax = closed_size,
	.wtmax = closed_size,
	.root_fh = closed_root_fh,
	.latency_floor = closed_latency_floor,
	.read_rate = closed_read_rate,
};
