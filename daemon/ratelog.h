/* SPDX-License-Identifier: MIT */
/*
 * ratelog: the pacing of a log line that an event repeated in a loop
 * would otherwise write at its own rate: at most one line per interval,
 * the next line saying how many were not logged in between. Used by
 * refusal (refused calls) and disk_tier (checksum failures). Loop thread
 * of its owner; no locking.
 */
#ifndef NFSCACHED_DAEMON_RATELOG_H
#define NFSCACHED_DAEMON_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

/* One paced line. Zero-initialised is ready (the first event logs). */
struct ratelog {
	double next;			/* monotonic seconds: next line allowed */
	uint64_t unlogged;		/* events since the last line */
	bool started;
};

/*
 * Note n events (n >= 1) at now (monotonic seconds, daemon_now()): true
 * when a line may be written now, with *skipped set to the events noted
 * and not logged since the last line (the caller says so in its line);
 * then the next line waits interval seconds. False: only counted.
 */
bool ratelog_note(struct ratelog *rl, double now, double interval, uint64_t n,
		  uint64_t *skipped);

#endif
