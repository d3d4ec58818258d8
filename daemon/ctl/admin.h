/* SPDX-License-Identifier: MIT */
/*
 * admin: cache control over a Unix stream socket (admin_socket, mode
 * 0600), served on the daemon's event loop, and its client,
 * `nfscached cache --socket PATH COMMAND`.
 *
 * The protocol is one request line per connection, words separated by
 * single spaces, each word %XX-escaped for bytes outside [!-~] and for '%'
 * (so paths may hold spaces):
 *
 *   status                    JSON of the cache (one line)
 *   warm PATH...              fetch files (directories recursively)
 *   forget PATH               start write-back, then drop a file's or a
 *                             tree's clean data and expire its attributes
 *   flush TIMEOUT             write back and commit everything, wait at
 *                             most TIMEOUT seconds (PATH: not yet, 2)
 *   drop                      drop every file's clean data
 *
 * PATH is client-visible: an export's path, then names below it
 * ("/export/dir/file"). The daemon answers text lines, then one last line:
 * "ok" or "error STATUS MESSAGE", STATUS being the client's exit status
 * (1 failed, 2 bad request, 3 flush timed out). Dirty data (dirty,
 * writing, unstable) is never dropped by any command.
 */
#ifndef NFSCACHED_DAEMON_ADMIN_H
#define NFSCACHED_DAEMON_ADMIN_H

#include <stddef.h>

struct daemon;
struct admin;

/* Default of `nfscached cache --socket`, and of the admin_socket
 * directive. */
#define ADMIN_DEFAULT_SOCKET	"/run/nfscached/admin.sock"

/* Seconds `flush` waits by default (`nfscached cache flush --timeout`). */
#define ADMIN_FLUSH_TIMEOUT	60

/*
 * Listen on the Unix socket path (absolute) on d's event loop, mode 0600.
 * A stale socket file (nobody accepts on it) is replaced; a live one,
 * another daemon's, is left alone and refused. Returns the listener, or
 * NULL with the reason in err (the caller warns and goes on without).
 */
struct admin *admin_start(struct daemon *d, const char *path, char *err,
			  size_t errlen);

/* Close the listener and every admin connection, remove the socket file,
 * free *a and clear it. NULL is fine. */
void admin_stop(struct admin **a);

/*
 * `nfscached cache [--socket PATH] [--timeout SECS] COMMAND ARGS...`;
 * argv[0] is "cache". Prints the daemon's lines on stdout. Returns the
 * exit status: 0, 1 when the command failed or the daemon cannot be
 * reached, 2 for bad usage, 3 when flush timed out.
 */
int admin_main(int argc, char **argv);

#endif
