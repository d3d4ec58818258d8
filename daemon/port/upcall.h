/* SPDX-License-Identifier: MIT */
/*
 * upcall: the upstream as the NFSv3 and MOUNT handlers see it. Handlers
 * never call proto/upstream.c directly: they go through the export's
 * struct upcall (export_rt.upc), so that a unit test can put a scripted
 * fake (tests/unit/fake_upstream.c) under the real handlers. One adapter,
 * upcall_libnfs, maps these calls onto proto/upstream.c.
 *
 * Arguments cross this interface typed: an rpcgen struct and the XDR
 * routine that encodes it (nfs3_prot.h, RFC 1813 section 3.3). The result
 * comes back decoded, once, into the rpcgen struct of the procedure's
 * dispatch row (READ3res for READ, ...), and is freed after the callback.
 */
#ifndef NFSCACHED_DAEMON_UPCALL_H
#define NFSCACHED_DAEMON_UPCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "upstream.h"

/*
 * The outcome of one call. status as upstream_cb's (upstream.h). res is
 * the decoded result when status is UPSTREAM_OK, NULL otherwise, and also
 * NULL with UPSTREAM_OK when the reply did not decode (the caller answers
 * NFS3ERR_SERVERFAULT: nfs3_upstream_failure). res belongs to the
 * adapter, which frees it (xdr_free) when the callback returns: the
 * callback may change it in place (handles rewrapped) but keeps no
 * pointer into it. arg is the caller's.
 */
typedef void (*upcall_cb)(enum upstream_status status, void *res, void *arg);

/*
 * One upstream implementation. impl is the implementation's own object
 * (for upcall_libnfs a struct upcall_lanes *), borrowed from export_rt.
 *
 * call: send NFSv3 procedure proc (0..21) with args (encoded by xargs) as
 * cred (required). Returns -1 when it cannot be sent now (nothing is sent
 * and cb is never called) or 0, and then cb is called exactly once, never
 * from inside call itself (upstream_call's async contract).
 * state, rtmax, wtmax, root_fh, latency_floor: as upstream_get_state,
 * upstream_rtmax, upstream_wtmax, upstream_root_fh and
 * upstream_latency_floor.
 * read_rate: the export's READ delivery rate, bytes/s (0: unknown), as
 * upstream_read_rate summed over the export's connections.
 */
/* What a call's result decodes into: the XDR routine of the result
 * (xdr_READ3res) and the size of its rpcgen struct, given by the caller
 * as it gives the arguments' routine (the procedure table's row). */
struct upcall_res {
	xdrproc_t xdr;
	size_t size;
};

struct upcall_ops {
	int (*call)(void *impl, uint32_t proc, xdrproc_t xargs,
		    const void *args, struct upcall_res res,
		    const struct nfs_cred *cred, upcall_cb cb, void *arg);
	enum upstream_state (*state)(const void *impl);
	uint32_t (*rtmax)(const void *impl);
	uint32_t (*wtmax)(const void *impl);
	const uint8_t *(*root_fh)(const void *impl, size_t *len);
	double (*latency_floor)(const void *impl);
	double (*read_rate)(const void *impl);
};

/* An export's upstream: the operations and their object (both borrowed). */
struct upcall {
	const struct upcall_ops *ops;
	void *impl;
};

/*
 * For adapters: decode the XDR result xdr[0..len) of NFSv3 procedure proc
 * with rs (when status is UPSTREAM_OK; borrowed), call cb(status, res, arg) and
 * free res after it. tail[0..tail_len) (borrowed, NULL/0 for none) is a
 * READ's data passed by reference, as upstream_cb gives it: res's data
 * then points into it, copied by no one (a result that does not hold the
 * empty opaque it stands for is a decoding failure: res NULL). Returns
 * nothing; cb is called exactly once.
 */
void upcall_deliver(uint32_t proc, struct upcall_res rs,
		    enum upstream_status status,
		    const uint8_t *xdr, size_t len, const uint8_t *tail,
		    size_t tail_len, upcall_cb cb, void *arg);

/* The most upstream connections of one export (upstream_connections). */
#define UPCALL_LANES_MAX 16

/*
 * The upstream connections of one export, as the Linux client's nconnect
 * option: n struct upstream (owned by export_rt), each its own TCP
 * connection, the same server and export. Lane 0 decides the export's
 * state, its transfer sizes and root handle; a call goes to the lane that
 * is up with the fewest calls in flight (lane 0 when no other is up).
 * Order across lanes needs nothing more: the proxy sends a COMMIT only
 * for bytes whose WRITE replies came back (writeback.c), and waits for
 * write-back before a SETATTR of size or a REMOVE of the last link.
 */
struct upcall_lanes {
	struct upstream *lane[UPCALL_LANES_MAX];
	unsigned n;			/* 1..UPCALL_LANES_MAX */
};

/* The lane upcall_libnfs sends the next call on: the one up with the
 * fewest calls in flight, lane 0 on ties and when no other is up. */
struct upstream *upcall_lanes_pick(const struct upcall_lanes *l);

/* The adapter onto proto/upstream.c: impl is a struct upcall_lanes *. */
extern const struct upcall_ops upcall_libnfs;

/*
 * The adapter of an export whose connections a reload closed (reload.c):
 * every call fails now (-1, no callback), state UPSTREAM_DOWN, no root
 * handle, transfer sizes 4096. impl is ignored. What a handler that still
 * held the retired export after its connections closed meets.
 */
extern const struct upcall_ops upcall_closed;

/*
 * Start n (1..UPCALL_LANES_MAX) connections of one export into *l with p
 * (upstream_new, upstream_start); lane 0 reports its state changes to
 * state_cb(arg) (may be NULL). Returns 0, or -1 (ENOMEM, libnfs could not
 * make a context) with every lane made so far freed and l->n 0. Event
 * loop only.
 */
int upcall_lanes_start(struct upcall_lanes *l, unsigned n,
		       struct event_base *base, const struct upstream_params *p,
		       upstream_state_cb state_cb, void *arg);

/* True while a call sent on one of l's lanes awaits its answer. */
bool upcall_lanes_busy(const struct upcall_lanes *l);

/* Close and free every lane of l (upstream_free: calls in flight complete
 * with UPSTREAM_EDOWN first); l->n becomes 0. Event loop only. */
void upcall_lanes_close(struct upcall_lanes *l);

/* Shorthands over u->ops (u must have been set: export_rt.upc). */
static inline enum upstream_state upcall_state(const struct upcall *u)
{
	return u->ops->state(u->impl);
}

static inline uint32_t upcall_rtmax(const struct upcall *u)
{
	return u->ops->rtmax(u->impl);
}

static inline double upcall_latency_floor(const struct upcall *u)
{
	return u->ops->latency_floor(u->impl);
}

/* The export's READ delivery rate, bytes/s, 0 when unknown (upcall_ops
 * read_rate). Event loop only. */
static inline double upcall_read_rate(const struct upcall *u)
{
	return u->ops->read_rate(u->impl);
}

static inline uint32_t upcall_wtmax(const struct upcall *u)
{
	return u->ops->wtmax(u->impl);
}

/*
 * Send NFSv3 procedure proc with args (an rpcgen struct encoded by xargs)
 * upstream through u as uc (required); its result is decoded with res. The async contract of
 * upstream_call holds: -1 (nothing sent, no callback) or 0 and exactly
 * one callback cb(status, res, arg), given the decoded result (freed
 * after it). Event loop only.
 */
static inline int upcall_send(const struct upcall *u, uint32_t proc,
			      xdrproc_t xargs, const void *args,
			      struct upcall_res res,
			      const struct nfs_cred *uc, upcall_cb cb,
			      void *arg)
{
	return u->ops->call(u->impl, proc, xargs, args, res, uc, cb, arg);
}

static inline const uint8_t *upcall_root_fh(const struct upcall *u,
					    size_t *len)
{
	return u->ops->root_fh(u->impl, len);
}

#endif
