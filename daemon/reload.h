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
 *   refused           an export added or removed, or one whose path or
 *                     upstream changed: nothing is applied, the old
 *                     configuration stays whole, a restart is needed
 */
#ifndef NFSCACHED_DAEMON_RELOAD_H
#define NFSCACHED_DAEMON_RELOAD_H

#include <stddef.h>

struct conf;
struct daemon;

/*
 * Tell whether next can replace cur without a restart: the same exports
 * (by id) with the same client paths and upstream URLs. Returns 0, or -1
 * with one line "FILE:LINE: reason" (next's file and the line of the export
 * that differs; "FILE: reason" for an export that is gone) saying what
 * differs and that a restart is needed in err[0..errlen) (CONF_ERR_MAX
 * holds it whole).
 */
int reload_check(const struct conf *cur, const struct conf *next, char *err,
		 size_t errlen);

/*
 * Make *next d's configuration (reload_check must have passed): directives
 * fixed at start are copied over from the running configuration (each
 * change logged as needing a restart), the exports' runtime state is
 * pointed at next's exports and their attribute timeouts updated, the log
 * level applied. Takes ownership of *next (clears the caller's pointer) and
 * frees the old configuration. Returns the number of directives kept for a
 * restart.
 */
unsigned reload_apply(struct daemon *d, struct conf **next);

#endif
