/* SPDX-License-Identifier: MIT */
/*
 * notify: the service manager notification protocol of sd_notify(3),
 * spoken directly (no libsystemd): one datagram per message, newline-
 * separated VAR=value assignments (READY=1, STATUS=..., STOPPING=1,
 * RELOADING=1, WATCHDOG=1), sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 * Without $NOTIFY_SOCKET every call is a successful no-op, so the daemon
 * runs the same under systemd, in a test, or in a terminal.
 */
#ifndef NFSCACHED_DAEMON_NOTIFY_H
#define NFSCACHED_DAEMON_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Read $NOTIFY_SOCKET and open a datagram socket towards it. Returns 1
 * when notifications are on, 0 when the variable is unset or empty, -1
 * with a reason in err[0..errlen) when it is set but unusable (bad form,
 * too long, no socket): notifications then stay off.
 */
int notify_open(char *err, size_t errlen);

/* True between a successful notify_open and notify_close. */
bool notify_enabled(void);

/*
 * Send msg (e.g. "READY=1\nSTATUS=serving") as one datagram. Returns 0
 * (also when notifications are off), or -1 with errno set. Never blocks:
 * a full receiver loses the message (EAGAIN), as with sd_notify.
 */
int notify_send(const char *msg);

/*
 * The watchdog interval the manager asked for, in seconds: $WATCHDOG_USEC
 * when $WATCHDOG_PID is unset or names this process, else 0 (no watchdog).
 * The daemon should send WATCHDOG=1 at half this interval.
 */
double notify_watchdog_interval(void);

/* Close the socket; later sends are no-ops. */
void notify_close(void);

#endif
