/* SPDX-License-Identifier: MIT */
/*
 * nlm_msg: the asynchronous forms of a client's NLM v4 calls (RFC 1813
 * section 6.2 and X/Open NLM: TEST_MSG 6, LOCK_MSG 7, CANCEL_MSG 8,
 * UNLOCK_MSG 9) answered with the matching _RES call (TEST_RES 11,
 * LOCK_RES 12, CANCEL_RES 13, UNLOCK_RES 14) to the client's lock
 * manager, as Linux's lockd does (nlm4svc_callback, nlmsvc_callback_exit).
 *
 * The call itself gets its empty reply at once (nlm_ops.c). Its arguments
 * are copied (struct nlm_msg) so that it is processed exactly as the
 * synchronous form is (nlm_ops.c's forwarded call, with the copy as its
 * arguments and no request); where the synchronous form replies, the
 * answer goes to the client's lock manager instead: the procedure + 10,
 * the client's cookie, the result as the synchronous reply has it (a TEST
 * holder unwrapped), at the call's source address through its rpcbind,
 * within upstream_timeout (nlm_call_client, nlm_granted.h).
 *
 * How each _RES call went is handed to the caller's done function
 * (nlm_ops.c: counted in nfscached_nlm_msg_res_total{result}, sent or
 * unreachable, logged; a LOCK_RES saying NLM4_GRANTED that was not
 * delivered leaves nobody knowing the lock is held, so it is released
 * upstream, as the GRANTED relay does for a grant its client refused).
 * This module also holds the call to a client's lock manager that the
 * GRANTED relay makes (nlm_call_client), and calls no other NLM module.
 *
 * State: each struct nlm_msg, owned by its forwarded call until answered,
 * then by its _RES call until that is over. Loop thread throughout; its
 * magic number is checked in the _RES call's callback.
 */
#ifndef NFSCACHED_DAEMON_NLM_MSG_H
#define NFSCACHED_DAEMON_NLM_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nlm4_prot.h"

#include "rpccall.h"

struct daemon;
struct nlm_held;
struct nlm_msg;
struct req;

/* How the proxy calls a client's lock manager: d->nlm's call pool
 * (borrowed), the proxy's host name for AUTH_UNIX, upstream_timeout. */
struct nlm_msg_via {
	struct rpccall_pool *pool;
	const char *machine;
	double timeout;			/* seconds, > 0 */
};

/*
 * How a _RES call went: st RPC_SUCCESS (the client's lock manager
 * answered), RPC_INTR (the pool stopped), or rpccall.h's failures
 * (RPC_SYSTEMERROR: not sent); caller and host the client's caller name
 * and address; granted, borrowed for the call, the lock a LOCK_RES
 * reported NLM4_GRANTED (NULL otherwise). Loop thread.
 */
typedef void (*nlm_msg_done_fn)(struct daemon *d, enum clnt_stat st,
				const char *caller, const char *host,
				const struct nlm_held *granted);

/*
 * Call NLM v4 procedure proc at the lock manager of a client: host (an
 * address literal, copied), port 0 (its rpcbind), as via->machine with
 * AUTH_UNIX root, within via->timeout, as Linux's lockd calls a client
 * back (nlm_async_call: GRANTED, the _RES calls). args (borrowed for
 * this call) encoded now by xargs; the result decoded by xres into
 * res_size bytes (NULL and 0: void). rpccall_submit's contract: 0 and
 * done(arg) later, exactly once, on the loop; or -1 (nothing sent, done
 * never runs). Loop thread.
 */
int nlm_call_client(const struct nlm_msg_via *via, const char *host,
		    uint32_t proc, xdrproc_t xargs, const void *args,
		    xdrproc_t xres, size_t res_size, rpccall_done_fn done,
		    void *arg);

/* Whether proc (an NLM v4 procedure number) is TEST_MSG .. UNLOCK_MSG. */
bool nlm_msg_is_msg(uint32_t proc);

/* The synchronous procedure of proc: TEST_MSG..UNLOCK_MSG give TEST..
 * UNLOCK, any other proc itself. */
uint32_t nlm_msg_sync_proc(uint32_t proc);

/*
 * A copy of r's arguments (r a TEST_MSG..UNLOCK_MSG call whose handle is
 * already unwrapped; lk its lock, inside r->args) with every netobj and
 * string in the copy's own buffers, and r's source address, to answer
 * once the result is known; done hears how the answer went. NULL on
 * ENOMEM or a field larger than the protocol allows. The copy outlives
 * r. Loop thread.
 */
struct nlm_msg *nlm_msg_new(struct req *r, const nlm4_lock *lk,
			    nlm_msg_done_fn done);

/* The copied arguments (an nlm4_testargs, _lockargs, _cancargs or
 * _unlockargs, as the procedure has), owned by m. */
void *nlm_msg_args(struct nlm_msg *m);

/*
 * Answer *m's call with stat (and, for a TEST answered NLM4_DENIED,
 * holder: borrowed, the client's view of the conflicting lock) by its
 * _RES call (the procedure + 10: TEST_RES 11 .. UNLOCK_RES 14) through
 * via, with the call's cookie, and let go of *m (*m becomes NULL; freed
 * once m's done function has heard how it went). granted, for a LOCK
 * answered NLM4_GRANTED (copied; NULL otherwise): the lock as held
 * upstream, handed to done. Loop thread.
 */
void nlm_msg_answer(struct nlm_msg **m, const struct nlm_msg_via *via,
		    nlm4_stats stat, const nlm4_holder *holder,
		    const struct nlm_held *granted);

/* Free *m unanswered (its call stopped) and clear the pointer; NULL is
 * fine. */
void nlm_msg_free(struct nlm_msg **m);

#endif
