/* SPDX-License-Identifier: MIT */
/*
 * admin_proto: the cache-control socket's protocol, shared by its server
 * (ctl/admin.c) and its client (cli/cache_cmd.c). Header only.
 *
 * The protocol is one request line per connection, words separated by
 * single spaces, each word %XX-escaped for bytes outside [!-~] and for '%'
 * (so paths may hold spaces):
 *
 *   status                    JSON of the cache (one line)
 *   warm PATH...              fetch files (directories recursively)
 *   forget PATH               start write-back, then drop a file's or a
 *                             tree's clean data and expire its attributes
 *   flush TIMEOUT [PATH]      write back and commit everything (or the
 *                             files under PATH), wait at most TIMEOUT
 *                             seconds
 *   drop                      drop every file's clean data
 *
 * PATH is client-visible: an export's path, then names below it
 * ("/export/dir/file"). The daemon answers text lines, then one last line:
 * "ok" or "error STATUS MESSAGE", STATUS being the client's exit status
 * (1 failed, 2 bad request, 3 flush timed out). Dirty data (dirty,
 * writing, unstable) is never dropped by any command.
 */
#ifndef NFSCACHED_DAEMON_ADMIN_PROTO_H
#define NFSCACHED_DAEMON_ADMIN_PROTO_H

/* Default of `nfscached cache --socket`, and of the admin_socket
 * directive. */
#define ADMIN_DEFAULT_SOCKET	"/run/nfscached/admin.sock"

/* Seconds `flush` waits by default (`nfscached cache flush --timeout`). */
#define ADMIN_FLUSH_TIMEOUT	60

/* Bytes of one request line at most. */
#define ADMIN_MAX_LINE		65536

#endif
