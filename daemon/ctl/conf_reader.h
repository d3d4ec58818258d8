/* SPDX-License-Identifier: MIT */
/*
 * conf_reader: a configuration file read and its clients' host names
 * resolved on a worker thread, the result handed to the daemon's event
 * loop, so that a slow or silent resolver at SIGHUP never stops the
 * clients the loop serves (getaddrinfo blocks for as long as the
 * resolver takes).
 *
 * One read at a time per daemon. Its state is d->conf_reader (owned; made
 * on the first conf_reader_start, freed by conf_reader_stop). A read is a
 * job the worker and the loop share under the job's mutex: the worker
 * fills it (conf_load_file, conf_clients_resolve) and wakes the loop
 * through the job's eventfd; the loop takes the result and calls back.
 * At stop a job still in the worker is abandoned: the worker frees it
 * when it returns, the loop never waits for it.
 *
 * Invariants: d->conf_reader->job is the one job in flight or NULL; a
 * job is freed by exactly one side: the loop once it took the result, or
 * the worker when it finds the job abandoned.
 */
#ifndef NFSCACHED_DAEMON_CONF_READER_H
#define NFSCACHED_DAEMON_CONF_READER_H

#include <stdbool.h>
#include <stddef.h>

struct conf;
struct daemon;

/*
 * What a read gives the loop: next, the configuration (owned by the
 * callee, NULL when the file was refused: err then holds
 * "FILE:LINE: reason" lines); warns, the lines of names that did not
 * resolve (nwarn of them, borrowed for the call); again, another
 * conf_reader_start came while it was read (the file may have changed
 * since: read it again). Loop thread.
 */
typedef void (*conf_reader_fn)(struct daemon *d, struct conf *next,
			       const char *err, char *const *warns,
			       size_t nwarn, bool again);

/*
 * Read config file path (copied) on a new worker thread and call done on
 * d's loop with the result. Returns 0 when started; 1 when a read is
 * already in flight (this one is not started: the caller may ask again
 * once done has run, and done's `again` says so); -1 when memory, the eventfd or the thread could not
 * be had (done is never called). Loop thread.
 */
int conf_reader_start(struct daemon *d, const char *path,
		      conf_reader_fn done);

/* True while a read is in flight (started, done not yet called). */
bool conf_reader_busy(const struct daemon *d);

/* Abandon a read in flight (its done is never called; the worker frees
 * the job when getaddrinfo returns) and free d->conf_reader. Loop
 * thread, at stop; a no-op without one. */
void conf_reader_stop(struct daemon *d);

#endif
