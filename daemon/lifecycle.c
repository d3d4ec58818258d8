/* SPDX-License-Identifier: MIT */
/*
 * lifecycle: daemon_start, daemon_announce and daemon_stop (lifecycle.h).
 * It holds no state of its own: what it made hangs off struct daemon, and
 * d->start_flags says which optional parts daemon_stop must undo.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <event2/dns.h>
#include <event2/event.h>

#include "admin.h"
#include "conf_reader.h"
#include "daemon.h"
#include "disk_tier.h"
#include "dispatch.h"
#include "fstate.h"
#include "invariant.h"
#include "lcommit.h"
#include "lifecycle.h"
#include "log.h"
#include "acl_ops.h"
#include "looplag.h"
#include "loops.h"
#include "nlm4_prot.h"
#include "nlm_ops.h"
#include "metrics.h"
#include "mount3_prot.h"
#include "mount_ops.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_read.h"
#include "nfs3_write.h"
#include "peername.h"
#include "registrar.h"
#include "reload.h"
#include "server.h"
#include "service.h"
#include "stale.h"
#include "writeback.h"

/* cache_owner_clear's callback: free one file's state (arg: its daemon). */
static void free_fstate(struct fstate *fs, void *arg)
{
	fstate_free(arg, fs);
}

/* Client host names, and with the flags the resolver and the lag timer. */
static int start_loop_helpers(struct daemon *d, unsigned flags, char *err,
			      size_t len)
{
	bool lag_failed = false;

	d->names = peername_new(d->base);
	/* Upstream host names: /etc/resolv.conf and /etc/hosts, read now. */
	if ((flags & DAEMON_UPSTREAMS) &&
	    !(d->dns = evdns_base_new(d->base,
				      EVDNS_BASE_INITIALIZE_NAMESERVERS))) {
		snprintf(err, len, "cannot create the resolver (/etc/resolv.conf)");
		return -1;
	}
	if (!(d->loops = loops_new(d->base, d->conf->threads, err, len)))
		return -1;
	/* One lag timer per loop, on its base before its thread runs. */
	for (unsigned k = 0; (flags & DAEMON_LOOPLAG) &&
	     k < loops_count(d->loops); k++)
		lag_failed |= !(d->lag[k] = looplag_new(loops_base(d->loops, k),
							k));
	if (!d->names || lag_failed ||
	    peername_netgroups(d->names, d->conf) != 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	return 0;
}

/* The disk tier (cache_dir), its failure said as "FILE:LINE: reason" at
 * the cache_dir line, as --check-config says it. */
static int start_disk_tier(struct daemon *d, char *err, size_t len)
{
	char why[1024];

	if (disk_tier_start(d, why, sizeof(why)) == 0)
		return 0;
	conf_error(err, len, d->conf->source, d->conf->cache_dir_line, "%s",
		   why);
	return -1;
}

/* An upstream client per export of d->conf, into d->exports. */
static int start_upstreams(struct daemon *d, char *err, size_t len)
{
	const struct conf *c = d->conf;

	d->nexports = c->nexports;
	d->exports = calloc(c->nexports + 1, sizeof(*d->exports));
	if (!d->exports) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < c->nexports; i++) {
		d->exports[i] = reload_export_start(d, &c->exports[i]);
		if (!d->exports[i]) {
			snprintf(err, len, "export %s: cannot start the "
				 "upstream client", c->exports[i].path);
			return -1;
		}
	}
	return 0;
}

/* Open the NFS and MOUNT listeners, the metrics endpoint and the admin
 * socket on d->server. */
static int start_listeners(struct daemon *d, char *err, size_t len)
{
	const struct conf *c = d->conf;

	if (server_listen(d->server, c->listen, c->nfs_port, 0, err, len))
		return -1;
	if (c->mount_port && c->mount_port != c->nfs_port &&
	    server_listen(d->server, c->listen, c->mount_port,
			  MOUNT_PROGRAM, err, len))
		return -1;
	if (nlm_listen_udp(d, c->nfs_port, err, len) != 0)
		return -1;
	if (c->metrics_listen[0] &&
	    !(d->metrics = metrics_start(d, c->metrics_listen, err, len)))
		return -1;
	/* Cache control is a convenience: without it the daemon still serves. */
	if (c->admin_socket[0] &&
	    !(d->admin = admin_start(d, c->admin_socket, err, len)))
		log_warn("admin socket %s: %s; `nfscached cache` is off",
			 c->admin_socket, err);
	log_info("nfscached %s serving NFS v3 on %s:%d, MOUNT v3 on port %d, "
		 "metrics on %s", NFSCACHED_VERSION,
		 c->listen, c->nfs_port, c->mount_port ? c->mount_port : c->nfs_port,
		 c->metrics_listen[0] ? c->metrics_listen : "(off)");
	return 0;
}

int daemon_start(struct daemon *d, unsigned flags, char *err, size_t len)
{
	d->start_flags = flags;
	/* What local commit adds to write-back and file state, and what the
	 * disk tier calls above it: set before the cache exists. */
	d->wb_hooks = &lcommit_wb_hooks;
	d->fstate_hooks = &lcommit_fstate_hooks;
	d->tier_off = lcommit_tier_off;
	d->tier_kept = stale_keep_attr;
	if (fh_key_init(&d->fh_key) != 0) {
		snprintf(err, len, "cannot key HMAC-SHA256 with the handle key "
			 "(OpenSSL)");
		return -1;
	}
	if (start_loop_helpers(d, flags, err, len) != 0 ||
	    daemon_cache_start(d, err, len) != 0)
		return -1;
	if (nfs3_ops_start(d) != 0 || nfs3_meta_start(d) != 0 ||
	    nfs3_read_start(d) != 0 || nfs3_write_start(d) != 0 ||
	    stale_start(d) != 0 || lcommit_new(d) != 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	if (writeback_start(d) != 0) {
		snprintf(err, len, "cannot create the write verifier (RAND_bytes)");
		return -1;
	}
	if (start_disk_tier(d, err, len) != 0)
		return -1;
	if (invariant_init(d) != 0) {
		snprintf(err, len, "NFSCACHED_CHECK must be 0 (off) or N "
			 "(every Nth turn)");
		return -1;
	}
	if (service_init(d) != 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	if ((flags & DAEMON_UPSTREAMS) && start_upstreams(d, err, len) != 0)
		return -1;
	if ((flags & DAEMON_JOURNAL) && lcommit_start(d, err, len) != 0)
		return -1;
	if (nlm_start(d) != 0 || nfsacl_start(d) != 0) {
		snprintf(err, len, "cannot start the lock manager's or "
			 "NFSACL's call workers (memory, threads)");
		return -1;
	}
	if ((flags & DAEMON_NLM_STATE) && nlm_restore(d) != 0) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	stale_restore(d, nfs3_meta_restore_name);	/* outage records */
	d->procs = &dispatch_table;
	d->server = server_new(d);
	if (!d->server) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	/* nlm = false: the program refused whole (PROG_UNAVAIL), as if the
	 * table had no NLM rows. */
	if (!d->conf->nlm && server_refuse_program(d->server, NLM_PROG) != 0) {
		snprintf(err, len, "cannot turn NLM off");
		return -1;
	}
	if ((flags & DAEMON_LISTENERS) && start_listeners(d, err, len) != 0)
		return -1;
	/* The other loops' threads, once the server's events are on their
	 * bases. */
	return loops_run(d->loops, err, len);
}

int daemon_announce(struct daemon *d, char *err, size_t len)
{
	if ((d->start_flags & DAEMON_LISTENERS) && d->conf->register_rpcbind) {
		d->rpcb = calloc(1, sizeof(*d->rpcb));
		if (!d->rpcb) {
			snprintf(err, len, "out of memory");
			return -1;
		}
		if (registrar_register(d->rpcb, d->conf,
				       nlm_udp_listening(d)) < 0) {
			snprintf(err, len, "rpcbind: a live server holds a "
				 "mapping nfscached needs (rpcbind_conflict "
				 "= \"refuse\")");
			return -1;
		}
	}
	service_started(d);
	return 0;
}

void daemon_stop(struct daemon *d)
{
	admin_stop(&d->admin);
	conf_reader_stop(d);	/* a reload's read in flight let go */
	lcommit_fence_stop(d);	/* fence waiters answered JUKEBOX */
	disk_tier_stop(d);	/* its last callbacks may still fetch */
	nlm_stop(d);		/* its pending calls answered */
	nfsacl_stop(d);
	metrics_free(&d->metrics);
	loops_stop_threads(d->loops);	/* this thread runs every loop now */
	server_free(&d->server);
	if (d->start_flags & DAEMON_UPSTREAMS)
		reload_exports_free(d);
	mount_list_clear(d);
	writeback_stop(d);
	nfs3_meta_shutdown(d);
	cache_owner_clear(d->cache, free_fstate, d);
	cache_free(&d->cache);
	lcommit_free(d);	/* after the files' states: they count in it */
	stale_forget_all(d);
	nfs3_read_stop(d);
	nfs3_write_stop(d);
	nfs3_ops_stop(d);
	peername_free(&d->names);
	for (unsigned k = 0; k < LOOPS_MAX; k++)
		looplag_free(&d->lag[k]);	/* their loops stopped */
	loops_free(&d->loops);	/* after every event on their bases */
	service_shutdown(d);
	free(d->rpcb);		/* unregistered by the orderly stop */
	d->rpcb = NULL;
	conf_free(&d->conf);
	if (d->dns)
		evdns_base_free(d->dns, 1);	/* after the upstreams' cancels */
	d->dns = NULL;
	fh_key_fini(&d->fh_key);
}
