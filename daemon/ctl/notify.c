/* SPDX-License-Identifier: MIT */
/*
 * notify: sd_notify(3)'s datagram protocol without libsystemd (notify.h).
 *
 * State: one process-wide socket, closed (fd -1) or open towards the
 * address parsed from $NOTIFY_SOCKET at notify_open. The socket is
 * non-blocking and close-on-exec; messages are sent with sendto so the
 * socket needs no connect and survives the receiver restarting.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

static int notify_fd = -1;
static struct sockaddr_un notify_addr;
static socklen_t notify_addr_len;

/* Parse a $NOTIFY_SOCKET value into the address. 0, or -1 with err. */
static int notify_parse(const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);

	memset(&notify_addr, 0, sizeof(notify_addr));
	notify_addr.sun_family = AF_UNIX;
	if ((v[0] != '/' && v[0] != '@') || n < 2) {
		snprintf(err, errlen, "NOTIFY_SOCKET=%s is neither a path nor @name", v);
		return -1;
	}
	if (n > sizeof(notify_addr.sun_path) ||
	    (v[0] == '/' && n == sizeof(notify_addr.sun_path))) {
		snprintf(err, errlen, "NOTIFY_SOCKET=%s is too long", v);
		return -1;
	}
	memcpy(notify_addr.sun_path, v, n);
	if (v[0] == '@')
		notify_addr.sun_path[0] = 0;	/* abstract namespace */
	notify_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				      n + (v[0] == '/'));
	return 0;
}

int notify_open(char *err, size_t errlen)
{
	const char *v = getenv("NOTIFY_SOCKET");

	notify_close();
	if (!v || !v[0])
		return 0;
	if (notify_parse(v, err, errlen) != 0)
		return -1;
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (notify_fd < 0) {
		snprintf(err, errlen, "cannot create the notification socket: %s",
			 strerror(errno));
		return -1;
	}
	return 1;
}

bool notify_enabled(void)
{
	return notify_fd >= 0;
}

int notify_send(const char *msg)
{
	ssize_t n;

	if (notify_fd < 0)
		return 0;
	n = sendto(notify_fd, msg, strlen(msg), MSG_NOSIGNAL,
		   (const struct sockaddr *)&notify_addr, notify_addr_len);
	return n < 0 ? -1 : 0;
}

double notify_watchdog_interval(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long us;

	if (!usec || !usec[0])
		return 0;
	if (pid && pid[0] && strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	us = strtoull(usec, &end, 10);
	if (*end || us == 0)
		return 0;
	return (double)us / 1e6;
}

void notify_close(void)
{
	if (notify_fd >= 0)
		close(notify_fd);
	notify_fd = -1;
}
