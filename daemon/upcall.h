/* SPDX-License-Identifier: MIT */
/*
 * upcall: the upstream as the NFSv3 and MOUNT handlers see it. Handlers
 * never call proto/upstream.c directly: they go through the export's
 * struct upcall (export_rt.upc), so that a unit test can put a scripted
 * fake (tests/unit/fake_upstream.c) under the real handlers. One adapter,
 * upcall_libnfs, maps these calls onto proto/upstream.c.
 *
 * Arguments cross this interface typed: an rpcgen struct and the XDR
 * routine that encodes it (nfs3_prot.h, RFC 1813 section 3.3). Results come
 * back as the upstream's XDR bytes, under upstream_cb's contract
 * (upstream.h): borrowed, valid only during the callback.
 */
#ifndef NFSCACHED_DAEMON_UPCALL_H
#define NFSCACHED_DAEMON_UPCALL_H

#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "upstream.h"

/*
 * One upstream implementation. impl is the implementation's own object
 * (for upcall_libnfs a struct upstream *), borrowed from export_rt.
 *
 * call: send NFSv3 procedure proc (0..21) with args (encoded by xargs) as
 * cred (required). Returns -1 when it cannot be sent now (nothing is sent
 * and cb is never called) or 0, and then cb is called exactly once, never
 * from inside call itself (upstream_call's async contract).
 * state, rtmax, wtmax, root_fh: as upstream_get_state, upstream_rtmax,
 * upstream_wtmax and upstream_root_fh.
 */
struct upcall_ops {
	int (*call)(void *impl, uint32_t proc, xdrproc_t xargs,
		    const void *args, const struct upstream_cred *cred,
		    upstream_cb cb, void *arg);
	enum upstream_state (*state)(const void *impl);
	uint32_t (*rtmax)(const void *impl);
	uint32_t (*wtmax)(const void *impl);
	const uint8_t *(*root_fh)(const void *impl, size_t *len);
};

/* An export's upstream: the operations and their object (both borrowed). */
struct upcall {
	const struct upcall_ops *ops;
	void *impl;
};

/* The adapter onto proto/upstream.c: impl is a struct upstream *. */
extern const struct upcall_ops upcall_libnfs;

/* Shorthands over u->ops (u must have been set: export_rt.upc). */
static inline enum upstream_state upcall_state(const struct upcall *u)
{
	return u->ops->state(u->impl);
}

static inline uint32_t upcall_rtmax(const struct upcall *u)
{
	return u->ops->rtmax(u->impl);
}

static inline uint32_t upcall_wtmax(const struct upcall *u)
{
	return u->ops->wtmax(u->impl);
}

static inline const uint8_t *upcall_root_fh(const struct upcall *u,
					    size_t *len)
{
	return u->ops->root_fh(u->impl, len);
}

#endif
