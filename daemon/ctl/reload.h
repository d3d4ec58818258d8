/* SPDX-License-Identifier: MIT */
/*
 * reload: swap a newly loaded configuration into the running daemon
 * (SIGHUP). What a reload changes, and what it cannot:
 *
 *   applied at once   per export (matched by id): clients, root_squash,
 *                     anonuid, anongid, secure, acregmin, acregmax,
 *                     acdirmin, acdirmax, negative_timeout, strict;
 *                     globally: log_level, max_requests_per_conn,
 *                     meta_cache_size, writeback_delay, dirty_limit,
 *                     writeback_wsize, writeback_commit_delay,
 *                     shutdown_flush_timeout
 *   kept, with a      listen, nfs_port, mount_port, metrics_listen,
 *   warning           state_dir, register_rpcbind, upstream_timeout,
 *                     start_without_upstream, max_record_size,
 *                     max_reply_buffer, max_transfer, drc_entries,
 *                     drc_timeout, page_size, cache_size,
 *                     hole_granularity, readahead_max, readahead_streams:
 *                     fixed at start, the running value stays until a
 *                     restart
 *   exports           added: served at once (its upstream connected,
 *                     its metrics series appear); removed: its handles
 *                     get NFS3ERR_STALE and MNT of its path
 *                     MNT3ERR_NOENT at once, what it holds unwritten is
 *                     written back (and committed) to its upstream before
 *                     its connection closes, then the files it wrote are
 *                     dropped from the cache; re-pointed (same id and
 *                     path, another upstream): as removed and added, the
 *                     old upstream getting the old write-back; other
 *                     exports' connections and cache untouched
 *   refused           an export whose id or path changed (clients'
 *                     handles carry the id): nothing is applied, the old
 *                     configuration stays whole
 */
#ifndef NFSCACHED_DAEMON_RELOAD_H
#define NFSCACHED_DAEMON_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

struct conf;
struct conf_export;
struct daemon;
struct export_rt;

/*
 * Tell whether next can replace cur without a restart: every export of
 * next with the id of one of cur has its path, and every path of cur kept
 * in next has its id (exports may come, go and change upstream). Returns
 * 0, or -1 with one line "FILE:LINE: reason" (next's file and the line of
 * the export that differs) saying what differs and why in err[0..errlen)
 * (CONF_ERR_MAX holds it whole).
 */
int reload_check(const struct conf *cur, const struct conf *next, char *err,
		 size_t errlen);

/*
 * Make *next d's configuration (reload_check must have passed): directives
 * fixed at start are copied over from the running configuration (each
 * change logged as needing a restart), kept exports are pointed at next's
 * entries and their attribute timeouts updated, added and re-pointed ones
 * started, removed and re-pointed ones retired (reload.c: written back,
 * then closed), each export change logged, the log level applied. On
 * success returns 0, sets *kept to the number of directives kept for a
 * restart, takes ownership of *next (clears the caller's pointer) and
 * frees or keeps (for retired exports) the old configuration. Returns -1
 * with the reason in err[0..errlen) when a new export's upstream client
 * cannot be made (ENOMEM): nothing changed, *next still the caller's.
 * Event loop only.
 */
int reload_apply(struct daemon *d, struct conf **next, unsigned *kept,
		 char *err, size_t errlen);

/*
 * Make the runtime state of export e (borrowed: e must outlive it, in
 * d->conf or a conf_hold): its attribute timeouts and its
 * upstream_connections connections to e's upstream, started (state changes
 * go to service_upstream_state). Returns it (owned by the caller until put
 * in d->exports) or NULL (ENOMEM, libnfs). Event loop only.
 */
struct export_rt *reload_export_start(struct daemon *d,
				      const struct conf_export *e);

/* True while a call sent on a live or retired export's connection awaits
 * its answer (the stop waits for these). */
bool reload_exports_busy(const struct daemon *d);

/* Retired exports not closed yet: still writing back to their upstream. */
size_t reload_retiring(const struct daemon *d);

/* Free every export (live and retired; connections closed), the kept
 * configurations and the retirement timer (daemon exit). */
void reload_exports_free(struct daemon *d);

#endif
