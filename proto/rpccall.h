/* SPDX-License-Identifier: MIT */
/*
 * rpccall: ONC RPC calls (RFC 5531) the daemon makes as a client of
 * programs other than NFS: the upstream's lock manager (NLM) and the
 * clients' lock managers (NLM callbacks). Each call is made with
 * libtirpc's blocking client (clnt_tli_create and clnt_call, TCP; an
 * IPv4 peer's port from its portmapper, pmap_getport, an IPv6 peer's
 * through clnt_create_timed) on one of the pool's worker threads, so that a host
 * name's lookup, an rpcbind query or a slow peer never holds the event
 * loop; its result is handed back to the loop through an eventfd.
 *
 * A call's arguments are encoded on the caller's thread into bytes the job
 * owns (the caller's structs may go away at once); its result is decoded
 * on the worker into a struct the job owns, given to the callback on the
 * loop and freed (xdr_free) after it.
 *
 * Threads: rpccall_pool_new, rpccall_submit and rpccall_pool_stop on the
 * loop that owns the pool; workers touch only jobs they took from the
 * queue and the pool's shared part under its mutex.
 *
 * Invariants (the pool's mutex held): every job is on exactly one of
 * queue (submitted, no worker yet), running (a worker calls it) or done
 * (the result waits for the loop); njobs counts the three; once stopping
 * is set no job is queued and each running job's worker frees it; the
 * shared part is freed by whichever of the loop (stop) and the last
 * worker leaves it last (refs).
 */
#ifndef NFSCACHED_PROTO_RPCCALL_H
#define NFSCACHED_PROTO_RPCCALL_H

#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "cred.h"

struct event_base;
struct rpccall_pool;

/* Where and what one call is. */
struct rpccall_spec {
	const char *host;	/* name or address literal (IPv4, IPv6);
				 * copied */
	unsigned port;		/* TCP port; 0: ask the host's rpcbind */
	uint32_t prog, vers, proc;
	double timeout;		/* seconds for the whole call, > 0 */
	const char *machine;	/* AUTH_SYS machine name; copied */
	const struct nfs_cred *cred;	/* the AUTH_SYS identity (uid, gid,
				 * groups; copied); NULL: root (uid 0,
				 * gid 0) */
};

/*
 * The result of a call, on the loop. st is RPC_SUCCESS with res the
 * decoded result (owned by the pool, valid during the call only; NULL
 * when the result type is void), or the failure: RPC_UNKNOWNHOST (the
 * name does not resolve), RPC_PROGNOTREGISTERED (rpcbind has no such
 * program), RPC_TIMEDOUT, RPC_CANTSEND / RPC_CANTRECV (connection),
 * RPC_PROGUNAVAIL / RPC_PROCUNAVAIL / RPC_PROGVERSMISMATCH (the peer's
 * answer), RPC_CANTDECODERES, RPC_SYSTEMERROR (memory, thread), or
 * RPC_INTR when the pool stopped first (rpccall_pool_stop).
 */
typedef void (*rpccall_done_fn)(enum clnt_stat st, void *res, void *arg);

/*
 * A pool of nworkers (1..16) worker threads whose results come back on
 * base (borrowed; it must outlive the pool's stop). NULL on ENOMEM or
 * when the eventfd, its event or a thread cannot be had. Loop thread.
 */
struct rpccall_pool *rpccall_pool_new(struct event_base *base,
				      unsigned nworkers);

/*
 * Queue a call: args (borrowed for this call only) encoded now by xargs,
 * the result decoded by xres into a zeroed block of res_size bytes
 * (xres NULL and res_size 0 for a void result). done(arg) runs later on
 * the loop, exactly once, never inside rpccall_submit. Returns 0, or -1
 * (done never runs) on ENOMEM, an argument that does not encode, a
 * credential with more than NFS_CRED_MAX_GIDS groups, or a stopped pool.
 * Loop thread.
 */
int rpccall_submit(struct rpccall_pool *p, const struct rpccall_spec *s,
		   xdrproc_t xargs, const void *args, xdrproc_t xres,
		   size_t res_size, rpccall_done_fn done, void *arg);

/*
 * The first broken invariant of p (the header's: each job on the list it
 * names, njobs their count, a queued or done job not abandoned), or NULL;
 * NULL for a NULL p. Takes the pool's mutex. Loop thread (the invariant
 * sweep).
 */
const char *rpccall_check_why(const struct rpccall_pool *p);

/* Calls submitted whose done has not run yet. Loop thread. */
unsigned rpccall_pending(const struct rpccall_pool *p);

/*
 * Stop: every call whose done has not run gets done(RPC_INTR, NULL, arg)
 * now (those a worker is in first, then the rest); the workers finish the calls they are in and
 * exit, never waited for (a call to a silent peer ends at its timeout);
 * the pool is freed and *p cleared. Loop thread; a no-op on NULL.
 */
void rpccall_pool_stop(struct rpccall_pool **p);

#endif
