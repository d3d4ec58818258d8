/* SPDX-License-Identifier: MIT */
/*
 * admin: cache control over a Unix stream socket (admin_socket, mode
 * 0600), served on the daemon's event loop; its client, `nfscached
 * cache`, is cli/cache_cmd.c.
 *
 * The protocol: admin_proto.h.
 */
#ifndef NFSCACHED_DAEMON_ADMIN_H
#define NFSCACHED_DAEMON_ADMIN_H

#include <stddef.h>

#include "admin_proto.h"

struct daemon;
struct admin;

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

#endif
