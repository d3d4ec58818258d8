/* SPDX-License-Identifier: MIT */
/*
 * daemon: the state one nfscached process shares between its listeners,
 * op handlers and drivers. Everything here is touched from loop 0 only
 * (d->base, the main thread): the other loops (`threads`, loops.h) run
 * client connections, and meet loop 0 only inside the server
 * (rpc/server.c).
 */
#ifndef NFSCACHED_DAEMON_DAEMON_H
#define NFSCACHED_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "conf.h"
#include "fh.h"
#include "loops.h"
#include "mclock.h"
#include "refusal.h"
#include "upcall.h"

struct event_base;
struct evdns_base;
struct looplag;
struct peername;
struct registrar;
struct upstream;
struct server;
struct metrics;
struct proc_table;
struct writeback_hooks;
struct writeback;
struct fstate_hooks;

/* Export ids are 1..63 (conf_export.id, the handle's export byte):
 * counters by id. */
#define NFS3_EXPORT_IDS 64
struct nfs3_ops;
struct nfs3_meta;
struct nfs3_read;
struct nfs3_write;
struct stale;
struct disk_tier;
struct lcommit;
struct admin;
struct mount_rec;
struct service;
struct conf_reader;

/*
 * One configured export and its upstream connection. Allocated one by one
 * (daemon_export_new) and never moved: requests, cfiles' fstate and
 * upstream callbacks keep pointers to it across callbacks. An export a
 * reload removes or re-points is retired (reload.c): out of d->exports, so
 * no new call finds it, kept in d->retired until its write-back is done,
 * then its connections are closed; the struct itself lives until exit.
 */
struct export_rt {
	struct daemon *d;		/* its daemon, borrowed (the upstream's
					 * state callback gets only the export) */
	const struct conf_export *conf;	/* borrowed from daemon.conf, or for
					 * a retired export from its hold */
	struct upcall_lanes lanes;	/* its upstream connections, owned
					 * (none under a unit test) */
	struct upcall upc;		/* what the handlers call: upcall_libnfs
					 * on up, or a test's fake */
	bool warned_fh_len;		/* long upstream handle logged once */
	struct cache_ac ac_reg;		/* acregmin..acregmax, seconds */
	struct cache_ac ac_dir;		/* acdirmin..acdirmax, seconds */
	bool long_handles;		/* upstream gave a handle over
					 * FH_UP_FULLAUTH bytes: only then are
					 * client handles with a short
					 * authenticator accepted */
	struct refusal_counts refused;	/* its client rules' refusals */
	struct conf_hold *hold;		/* retired: the superseded
					 * configuration conf points into */
	bool closed;			/* retired and its connections closed */
	unsigned retire_waits;		/* retired: its write-back waits not
					 * yet called back (reload.c) */
};

/* A superseded configuration kept for the retired exports pointing into
 * it; freed with the daemon (reload.c). */
struct conf_hold {
	struct conf *conf;		/* owned */
	struct conf_hold *next;
};

struct daemon {
	struct event_base *base;	/* loop 0's (loops.h) */
	struct loops *loops;		/* the `threads` event loops; owned,
					 * made by daemon_start */
	struct conf *conf;		/* owned */
	struct fh_key fh_key;		/* keyed in daemon_start */
	struct export_rt **exports;	/* the live exports, conf->nexports:
					 * an owned array of owned pointers,
					 * in d->conf's order */
	size_t nexports;
	struct export_rt **retired;	/* removed or re-pointed by a reload;
					 * owned array of owned pointers */
	size_t nretired;
	struct conf_hold *holds;	/* what retired exports point into */
	struct event *retire_timer;	/* reload.c's retirement poll */
	uint64_t exports_added;		/* by reloads (reload.c) */
	uint64_t exports_removed;
	uint64_t exports_repointed;
	struct server *server;
	struct cache *cache;		/* owned; shared by all exports */
	struct ra_params ra_params;	/* readahead window and streams */
	struct metrics *metrics;
	struct admin *admin;		/* the admin socket; owned, NULL when
					 * off */
	struct peername *names;		/* clients' host names, for wildcard
					 * clients entries; owned, may be
					 * NULL (no names: "") */
	struct refusal_counts refused_other; /* MNTs of paths under no
					      * export */
	struct registrar *rpcb;		/* rpcbind mappings made at start
					 * (daemon_announce); owned, NULL when
					 * not registering */
	struct mount_rec *mounts;	/* the mount list MOUNT's DUMP reports
					 * (mount_ops.c); owned */
	struct evdns_base *dns;		/* upstream host name lookups on
					 * base (evdns); owned */
	struct service *svc;		/* readiness and reload notices
					 * (service.c); owned, NULL before
					 * service_init */
	struct conf_reader *conf_reader; /* a reload's file read off the
					 * loop (ctl/conf_reader.c); owned,
					 * NULL before the first reload */
	struct looplag *lag[LOOPS_MAX];	/* each loop's lag timer, by loop;
					 * owned, NULL past the last loop or
					 * when not measured */
	struct nfs3_ops *nfs3_ops;	/* the NFSv3 handlers' shared
					 * counters (nfs3_ops.c); owned */
	struct nfs3_meta *nfs3_meta;	/* the metadata cache and its
					 * counters (nfs3_meta.c); owned */
	struct nfs3_read *nfs3_read;	/* READ's counters and steps in
					 * flight (nfs3_read.c); owned */
	struct nfs3_write *nfs3_write;	/* WRITE/COMMIT's counters
					 * (nfs3_write.c); owned */
	struct nfsacl *nfsacl;		/* NFSACL's call pool and counters
					 * (acl/acl_ops.c); owned */
	struct nlm *nlm;		/* the lock manager's call pool and
					 * counters (nlm/nlm_ops.c); owned,
					 * NULL when nlm is off */
	struct writeback *wb;		/* write-back's counters, room
					 * waiters, verifier and tick
					 * (writeback.c); owned, made by
					 * writeback_start */
	struct stale *stale;		/* stale_on_error's remembered
					 * results, outage records and
					 * counters (stale.c); owned */
	struct disk_tier *disk_tier;	/* the disk tier's store, event and
					 * counters (wb/disk_tier.c); owned,
					 * made by disk_tier_start, freed by
					 * disk_tier_stop; NULL without
					 * cache_dir */
	struct lcommit *lcommit;	/* local commit's counters, sequence
					 * numbers and fence (wb/lcommit.c):
					 * owned, made by lcommit_new in
					 * daemon_start's core, freed by
					 * lcommit_free in daemon_stop */
	const struct proc_table *procs;	/* the procedure table served
					 * (dispatch.c's, set by the
					 * lifecycle); static storage */
	bool stopping;
	/* What the disk tier (wb/disk_tier.c) calls in the layers above
	 * it, set by main() and the unit harness; NULL: nothing. Loop
	 * thread. tier_off: the tier turned off at run time
	 * (lcommit_tier_off). tier_kept: f's pages were stored, or dropped
	 * for a newer version (stale_keep_attr). */
	void (*tier_off)(struct daemon *d);
	void (*tier_kept)(const struct daemon *d, const struct cfile *f);
	/* What local commit adds to write-back (writeback.h), borrowed;
	 * NULL: nothing. Set before daemon_cache_start. */
	const struct writeback_hooks *wb_hooks;
	/* The owners' hooks each new struct fstate gets (fstate.h),
	 * borrowed; NULL: nothing. Set before daemon_cache_start. */
	const struct fstate_hooks *fstate_hooks;
	unsigned start_flags;		/* daemon_start's (lifecycle.h) */
	unsigned check_every;		/* invariant.c: check every Nth loop
					 * turn (NFSCACHED_CHECK); 0: off */
	uint64_t check_turns;		/* loop turns counted since */
	uint64_t checks;		/* invariant checks run since */
};

/* The live export with id, or NULL (none, or removed by a reload: its
 * handles are then NFS3ERR_STALE). Borrowed. */
struct export_rt *daemon_export(struct daemon *d, unsigned id);

/* The attribute timeouts of ex for a file of type (ftype3). */
const struct cache_ac *daemon_ac(const struct export_rt *ex, uint32_t type);

/* Monotonic time in seconds: mclock_now() (CLOCK_MONOTONIC; the test clock
 * of mclock.h when enabled). Arm the daemon's one-shot timers with
 * mclock_timer_add(), not evtimer_add(), so that the test clock moves them. */
double daemon_now(void);

/*
 * The memory the process may use, bytes: the lower of RLIMIT_AS and the
 * memory.max of its cgroup v2 (/proc/self/cgroup); 0 when neither is set
 * or readable. Reads /proc and /sys each call: at start and reload only.
 * Any thread.
 */
uint64_t daemon_mem_limit(void);

/*
 * Create d's RAM cache and readahead parameters from d->conf (page_size,
 * cache_size in MiB, hole_granularity, max_files, readahead_max,
 * readahead_streams, cache_preallocate: not past 7/8 of
 * daemon_mem_limit(), with a warning): the first step of daemon_start
 * (lifecycle.h).
 * Returns 0, or -1 with the reason in err[0..len): the cache could not be
 * made, or readahead_max is not a multiple of page_size.
 */
int daemon_cache_start(struct daemon *d, char *err, size_t len);

#endif
