/* SPDX-License-Identifier: MIT */
/*
 * lifecycle: the order in which a daemon's parts start and stop, written
 * once for main() and for the unit-test harness (tests/unit/nfs3_harness.c).
 *
 * The caller makes d->conf (owned by d from then on), d->fh_key's bytes
 * and the event loop d->base, then calls daemon_start with the parts it wants
 * beyond the core; main() also calls daemon_announce once its signal
 * handlers are in place, and daemon_stop after the loop ended. The core
 * is: client host names (peername), the RAM cache and readahead
 * parameters, local commit's state (lcommit_new: counters, sequence
 * numbers, the fence; its journal is DAEMON_JOURNAL's), write-back (the
 * write verifier), the disk tier (cache_dir), the invariant sweep's
 * period (NFSCACHED_CHECK), the service state, the outage records of an
 * earlier run (stale_restore) and the RPC server object d->server
 * (without listeners: a test adopts its own socket).
 *
 * Start order: the handle key's HMAC context (fh_key_init), names,
 * resolver, loop lag, cache, local commit's state, write-back, disk tier, invariant, service, upstreams, journal, the lock
 * manager (and its held-lock table), outage records, server, listeners, metrics, admin socket. Stop order: admin
 * socket, fence waiters, disk tier (its last callbacks may still fetch),
 * metrics, server, upstreams, mount list, write-back, metadata cache, the
 * files' states, cache, local commit's state (whether or not lcommit_stop
 * ran), outage records, names, loop lag, service, configuration,
 * resolver, the handle key's context. The event loop is the caller's.
 */
#ifndef NFSCACHED_DAEMON_LIFECYCLE_H
#define NFSCACHED_DAEMON_LIFECYCLE_H

#include <stddef.h>

struct daemon;

/* What daemon_start starts beyond the core (flags, or-ed). */
enum daemon_part {
	/* The resolver (d->dns, /etc/resolv.conf) and an upstream client
	 * per export of d->conf into d->exports (owned by d). Without it
	 * the caller fills d->exports and d->nexports (a test's fakes) and
	 * keeps owning them. */
	DAEMON_UPSTREAMS = 1u << 0,
	/* The loop's lag timer (d->lag). */
	DAEMON_LOOPLAG = 1u << 1,
	/* Local commit's journal (lcommit_start): the write verifier of a
	 * clean stop, the journal's records installed as dirty data. */
	DAEMON_JOURNAL = 1u << 2,
	/* The NFS and MOUNT listeners (d->conf's listen, nfs_port,
	 * mount_port), the metrics endpoint (metrics_listen) and the admin
	 * socket (admin_socket; a failure there is only logged); with it
	 * daemon_announce registers with rpcbind when register_rpcbind. */
	DAEMON_LISTENERS = 1u << 3,
	/* The lock manager's held-lock table kept in state_dir (nlm_restore:
	 * loaded, its clients watched again). Without it the table is in
	 * memory only. */
	DAEMON_NLM_STATE = 1u << 4,
	/* Everything: what main() starts. */
	DAEMON_ALL = DAEMON_UPSTREAMS | DAEMON_LOOPLAG | DAEMON_JOURNAL |
		     DAEMON_LISTENERS | DAEMON_NLM_STATE,
};

/*
 * Start d's core and the parts in flags (enum daemon_part), in the order
 * above, on d->base; remembers flags for daemon_stop. d is zeroed but for
 * conf, fh_key, base and (without DAEMON_UPSTREAMS) exports/nexports.
 * Outside the loop. Returns 0, or -1 with the reason in err[0..len) (one
 * line, as main() logs it before exiting: "out of memory", the cache's,
 * the disk tier's as "FILE:LINE: reason" at the cache_dir line, a bad
 * NFSCACHED_CHECK, OpenSSL refusing the handle key's HMAC, an export whose upstream client cannot start, the
 * journal's, a listener's); what was started is then not undone: the
 * caller exits.
 */
int daemon_start(struct daemon *d, unsigned flags, char *err, size_t len);

/*
 * d serves: register with rpcbind (when started with DAEMON_LISTENERS and
 * d->conf's register_rpcbind) and tell the service manager (READY=1 once
 * the upstreams allow it). Call once after daemon_start, before the loop
 * runs. Returns 0, or -1 with the reason in err[0..len) when a live
 * server holds a mapping nfscached needs (rpcbind_conflict = "refuse").
 */
int daemon_announce(struct daemon *d, char *err, size_t len);

/*
 * Stop and free everything daemon_start made, in the order above, and
 * d->conf; the event loop d->base stays (the caller frees it last). Call
 * once, after the loop stopped serving (main: after the orderly stop's
 * final write-back; a test: when its calls are answered).
 */
void daemon_stop(struct daemon *d);

#endif
