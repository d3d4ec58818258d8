/* SPDX-License-Identifier: MIT */
/* fake_upstream: see fake_upstream.h. */
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>

#include "dispatch.h"
#include "fake_upstream.h"
#include "nfs3_prot.h"
#include "rpcmsg.h"

/* The NFSv3 dispatch row of proc. */
static const struct dispatch_entry *row(uint32_t proc)
{
	enum dispatch_miss miss;
	uint32_t lo, hi;

	return dispatch_find(NFS_PROGRAM, NFS_V3, proc, &miss, &lo, &hi);
}

/* Append c to the list at *head. */
static void append(struct fake_call **head, struct fake_call *c)
{
	while (*head)
		head = &(*head)->next;
	c->next = NULL;
	*head = c;
}

/* Free c and its argument copy. */
static void call_free(struct fake_call *c)
{
	const struct dispatch_entry *e = row(c->proc);

	if (c->args) {
		xdr_free(e->xdr_args, c->args);
		free(c->args);
	}
	free(c->enc);
	free(c);
}

/* Answer c: status only, or the responder's result encoded. */
static void answer(struct fake_call *c, enum upstream_status forced)
{
	const struct dispatch_entry *e = row(c->proc);
	enum upstream_status st = forced;
	void *res = calloc(1, e->res_size);
	uint8_t *bytes = NULL;
	size_t len = 0;

	const uint8_t *tail = NULL;
	size_t tail_len = 0;

	if (st == UPSTREAM_OK)
		st = c->fu->respond(c, res, c->fu->respond_arg);
	/* A READ's data by reference, as the libnfs adapter passes it. */
	if (st == UPSTREAM_OK && c->proc == NFSPROC3_READ) {
		READ3res *rd = res;

		if (rd->status == NFS3_OK && rd->READ3res_u.resok.data.data_len) {
			tail = (const uint8_t *)rd->READ3res_u.resok.data.data_val;
			tail_len = rd->READ3res_u.resok.data.data_len;
			rd->READ3res_u.resok.data.data_len = 0;
		}
	}
	if (st == UPSTREAM_OK &&
	    !(bytes = rpcmsg_encode(e->xdr_res, res, &len)))
		st = UPSTREAM_EPROTO;
	free(res);
	upcall_deliver(c->proc, c->res, st, bytes, len, tail, tail_len, c->cb,
		       c->cb_arg);
	free(bytes);
	call_free(c);
}

/* Loop callback: answer every ready call, oldest first. */
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fake_up *fu = arg;

	(void)fd;
	(void)what;
	while (fu->ready) {
		struct fake_call *c = fu->ready;

		fu->ready = c->next;
		answer(c, UPSTREAM_OK);
	}
}

/* upcall_ops.call: copy and count the call, queue it. */
static int fake_call(void *impl, uint32_t proc, xdrproc_t xargs,
		     const void *args, struct upcall_res res,
		     const struct nfs_cred *cred, upcall_cb cb, void *arg)
{
	struct fake_up *fu = impl;
	const struct dispatch_entry *e;
	struct fake_call *c;
	uint8_t *bytes;
	size_t len;

	if (fu->state != UPSTREAM_UP || proc >= UPSTREAM_NPROCS ||
	    !(e = row(proc)) || !(bytes = rpcmsg_encode(xargs, args, &len)))
		return -1;
	c = calloc(1, sizeof(*c));
	c->args = calloc(1, e->args_size);
	if (rpcmsg_decode_args(bytes, len, 0, e->xdr_args, c->args) != 0)
		abort();
	c->enc = bytes;
	c->fu = fu;
	c->proc = proc;
	c->res = res;
	c->cred = *cred;
	c->cred.machine = NULL;
	c->cb = cb;
	c->cb_arg = arg;
	fu->calls[proc]++;
	fu->last_cred[proc] = c->cred;
	append(fu->hold[proc] ? &fu->held : &fu->ready, c);
	if (!fu->hold[proc])
		event_active(fu->tick, EV_TIMEOUT, 0);
	return 0;
}

/* upcall_ops.state. */
static enum upstream_state fake_state(const void *impl)
{
	return ((const struct fake_up *)impl)->state;
}

/* upcall_ops.rtmax. */
static uint32_t fake_rtmax(const void *impl)
{
	return ((const struct fake_up *)impl)->rtmax;
}

/* upcall_ops.wtmax. */
static uint32_t fake_wtmax(const void *impl)
{
	return ((const struct fake_up *)impl)->wtmax;
}

/* upcall_ops.root_fh. */
static const uint8_t *fake_root_fh(const void *impl, size_t *len)
{
	const struct fake_up *fu = impl;

	*len = fu->root_len;
	return fu->root_len ? fu->root : NULL;
}

/* upcall_ops.latency_floor. */
static double fake_latency_floor(const void *impl)
{
	return ((const struct fake_up *)impl)->latency_floor;
}

/* upcall_ops.read_rate. */
static double fake_read_rate(const void *impl)
{
	return ((const struct fake_up *)impl)->read_rate;
}

const struct upcall_ops fake_upcall_ops = {
	.call = fake_call,
	.state = fake_state,
	.rtmax = fake_rtmax,
	.wtmax = fake_wtmax,
	.root_fh = fake_root_fh,
	.latency_floor = fake_latency_floor,
	.read_rate = fake_read_rate,
};

void fake_up_init(struct fake_up *fu, struct event_base *base,
		  uint32_t max_transfer, fake_responder fn, void *arg)
{
	memset(fu, 0, sizeof(*fu));
	fu->base = base;
	fu->state = UPSTREAM_UP;
	fu->rtmax = fu->wtmax = max_transfer;
	fu->respond = fn;
	fu->respond_arg = arg;
	fu->tick = event_new(base, -1, 0, tick_cb, fu);
}

size_t fake_up_held(const struct fake_up *fu, uint32_t proc)
{
	size_t n = 0;

	for (const struct fake_call *c = fu->held; c; c = c->next)
		n += c->proc == proc;
	return n;
}

void fake_up_release(struct fake_up *fu, uint32_t proc)
{
	struct fake_call **pp = &fu->held;

	fu->hold[proc] = false;
	while (*pp) {
		struct fake_call *c = *pp;

		if (c->proc != proc) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		append(&fu->ready, c);
	}
	event_active(fu->tick, EV_TIMEOUT, 0);
}

void fake_up_fail_held(struct fake_up *fu, enum upstream_status status)
{
	while (fu->held) {
		struct fake_call *c = fu->held;

		fu->held = c->next;
		answer(c, status);
	}
}

void fake_up_destroy(struct fake_up *fu)
{
	struct fake_call *lists[2] = { fu->held, fu->ready };

	for (int i = 0; i < 2; i++)
		while (lists[i]) {
			struct fake_call *c = lists[i];

			lists[i] = c->next;
			call_free(c);
		}
	fu->held = fu->ready = NULL;
	if (fu->tick)
		event_free(fu->tick);
	fu->tick = NULL;
}
