/* SPDX-License-Identifier: MIT */
/*
 * fake_upstream: a scripted upstream under the real handlers (upcall.h),
 * for unit tests without an NFS server. Every call is counted by
 * procedure and its arguments are kept decoded; a responder the test
 * supplies composes each result (or an upstream_status error). Replies are
 * delivered from the event loop, never inside the call, as upstream_call
 * promises; a test holds a procedure's calls to delay them and releases or
 * fails them when it chooses. Nothing here reads a clock.
 */
#ifndef NFSCACHED_TESTS_FAKE_UPSTREAM_H
#define NFSCACHED_TESTS_FAKE_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upcall.h"

struct event_base;
struct event;
struct fake_up;

/* One call the handlers made. args is a decoded copy (the dispatch row's
 * args struct for proc), valid until the call is answered; it may point
 * into enc, its encoding (a WRITE's data does, as in the server). */
struct fake_call {
	struct fake_up *fu;
	uint32_t proc;
	struct upcall_res res;		/* the daemon's result routine */
	void *args;
	uint8_t *enc;
	struct nfs_cred cred;
	upcall_cb cb;
	void *cb_arg;
	struct fake_call *next;
};

/*
 * Compose the result of call c into res (a zeroed struct of the row's
 * res_size; pointers in it may point at memory the responder keeps alive
 * until it returns, since res is encoded at once and freed shallowly).
 * Return UPSTREAM_OK to reply res, another status to fail the call.
 */
typedef enum upstream_status (*fake_responder)(const struct fake_call *c,
						void *res, void *arg);

struct fake_up {
	struct event_base *base;		/* borrowed */
	enum upstream_state state;		/* DOWN: call() refuses */
	uint32_t rtmax, wtmax;
	double latency_floor;			/* s; 0 (unknown) at init */
	double read_rate;			/* bytes/s; 0 (unknown) at init */
	uint8_t root[64];
	size_t root_len;
	uint64_t calls[UPSTREAM_NPROCS];	/* accepted, by procedure */
	struct nfs_cred last_cred[UPSTREAM_NPROCS]; /* of the last call
					 * (machine not kept) */
	bool hold[UPSTREAM_NPROCS];		/* calls of proc wait */
	fake_responder respond;
	void *respond_arg;
	struct fake_call *held, *ready;		/* FIFO lists */
	struct event *tick;			/* answers ready calls */
};

/* The operations to put in export_rt.upc with impl a struct fake_up *. */
extern const struct upcall_ops fake_upcall_ops;

/* Set up *fu on base, UP, with rtmax = wtmax = max_transfer bytes. */
void fake_up_init(struct fake_up *fu, struct event_base *base,
		  uint32_t max_transfer, fake_responder fn, void *arg);

/* Calls of proc now held (not yet answered). */
size_t fake_up_held(const struct fake_up *fu, uint32_t proc);

/* Answer the held calls of proc through the responder (from the loop). */
void fake_up_release(struct fake_up *fu, uint32_t proc);

/* Complete every held call with status (UPSTREAM_EDOWN: the connection
 * dropped) at once; call it from the test, not from a handler's frame. */
void fake_up_fail_held(struct fake_up *fu, enum upstream_status status);

/* Free what is left (held calls are dropped without a callback). */
void fake_up_destroy(struct fake_up *fu);

#endif
