/* SPDX-License-Identifier: MIT */
/*
 * nlm_nsm: the proxy as a lock manager's client of its upstreams (a file
 * server's reboot passed on to the proxy's clients), as a Linux NFS
 * client is of its server (nsm_monitor at the first lock, nlm_host_rebooted
 * on SM_NOTIFY) and a server is to its clients (sm-notify at boot).
 *
 *   1. The first LOCK granted on an export whose upstream host is not
 *      watched yet gets that host watched: nlm_ops asks the local statd
 *      (SM_MON, mon_name the URL's host as written, the callback the
 *      proxy's NLM procedure 16, as for a client) once per host
 *      (nlm_nsm_watch says when).
 *   2. statd's callback names a host (mon_name). nlm_nsm_is_upstream
 *      tells an upstream from a client: a name equal (ASCII case ignored)
 *      to an export's upstream host is an upstream's; anything else a
 *      client's caller name. A name that is both is handled as both (the
 *      upstream first).
 *   3. An upstream's reboot (nlm_nsm_upstream_rebooted): the upstream's
 *      lock manager holds none of the proxy's locks any more. The records
 *      of every export whose upstream is that host leave the held-lock
 *      table and its store (nlm_locks_take_each_if); the proxy's NSM state
 *      number goes up by 2 (odd: "up", NSM section 11.1), is written to
 *      state_dir/nsm_state, and each client address that held one of
 *      those locks (read out of the wrapped owner, nlm_owner.h) gets one
 *      SM_NOTIFY (NSM v1 procedure 6, stat_chge { mon_name, state }) at
 *      its rpcbind, as sm-notify sends them (nfs-utils utils/statd/sm-notify.c).
 *      mon_name is the proxy's own address as that client reaches it: the
 *      source address this host routes to the client from (a connected
 *      UDP socket's name, no packet sent), which is what a client mounted
 *      by address monitors; when that is not found, the proxy's caller
 *      name (nlm_caller_name or the host name). The client's statd calls
 *      its lockd, which reclaims its locks (LOCK, reclaim = TRUE), which
 *      the proxy forwards as any LOCK, in the upstream's grace period.
 *
 * Counted: nfscached_nlm_upstream_reboots_total,
 * nfscached_nlm_clients_notified_total{result="notified"|"unreachable"}.
 *
 * State (struct nlm_nsm, owned by d->nlm): the upstream hosts watched
 * (strings, owned), the NSM state number and its file, the counters. Loop
 * thread throughout. Invariants: the state number is odd; no host is in
 * the watched list twice (case ignored).
 */
#ifndef NFSCACHED_DAEMON_NLM_NSM_H
#define NFSCACHED_DAEMON_NLM_NSM_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct nlm_locks;
struct nlm_nsm;
struct rpccall_pool;

/* The counters nlm_stats_get copies into struct nlm_stats. */
struct nlm_nsm_stats {
	uint64_t upstream_reboots;	/* upstream reboots that dropped
					 * locks, or had none */
	uint64_t notified;		/* SM_NOTIFYs a client's statd took */
	uint64_t unreachable;		/* SM_NOTIFYs not answered, not
					 * registered, or not sent */
};

/*
 * What nlm_nsm borrows of d->nlm for an upstream's reboot (nlm_ops fills
 * it; each pointer lives while d->nlm does).
 */
struct nlm_nsm_ctx {
	struct daemon *d;
	struct rpccall_pool *pool;
	struct nlm_locks *locks;
	const char *caller;		/* the proxy's caller name */
};

/*
 * A new state: the NSM state number read from state_dir/nsm_state (a
 * decimal int; missing or unreadable: 1; an even one made odd by adding
 * 1), or 1 when state_dir is NULL (kept in memory only). NULL on ENOMEM.
 * Loop thread, at start (reads one small file).
 */
struct nlm_nsm *nlm_nsm_new(const char *state_dir);

/* Free *n; clears the pointer. No-op on NULL. Calls it made must have
 * ended first (the pool stopped: rpccall_pool_stop). */
void nlm_nsm_free(struct nlm_nsm **n);

/*
 * Note that a lock is held on an upstream at host (NUL-terminated;
 * copied). True when host was not watched yet: the caller asks statd to
 * watch it (SM_MON) now; false when it was (or on ENOMEM: the next lock
 * asks again). Loop thread.
 */
bool nlm_nsm_watch(struct nlm_nsm *n, const char *host);

/*
 * Whether mon_name (NUL-terminated, or NULL: false) is the upstream host
 * of a live export of d (its URL's host, ASCII case ignored). Pure on d's
 * configuration. Loop thread.
 */
bool nlm_nsm_is_upstream(const struct daemon *d, const char *mon_name);

/*
 * Upstream host rebooted (statd's callback, state its new NSM state): the
 * steps 3 above. Counted; never fails (a client not reached is counted
 * unreachable: it learns of the lost lock at its next use of it). Loop
 * thread.
 */
void nlm_nsm_upstream_rebooted(struct nlm_nsm *n,
			       const struct nlm_nsm_ctx *ctx,
			       const char *host, int state);

/* The proxy's current NSM state number (odd). */
int32_t nlm_nsm_state(const struct nlm_nsm *n);

/* Copy the counters into *st (zeros for a NULL n). */
void nlm_nsm_stats_get(const struct nlm_nsm *n, struct nlm_nsm_stats *st);

/* The first broken invariant (the header's), or NULL. */
const char *nlm_nsm_check_why(const struct nlm_nsm *n);

#endif
