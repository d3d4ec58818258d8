/* SPDX-License-Identifier: MIT */
/*
 * ratelog: a log line that repeats (a refused call, a failing write-back,
 * a damaged record) printed at most once per interval; the lines in
 * between are counted, and the next line printed says how many were not:
 * a client or an upstream failing in a loop costs the journal one line
 * per interval, and the count still tells how often it happened.
 */
#ifndef NFSCACHED_DAEMON_RATELOG_H
#define NFSCACHED_DAEMON_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "log.h"

/* The pacing of one kind of line. Zero-initialised is ready (its first
 * line is printed). Owned by whoever owns the kind of event. */
struct ratelog {
	double next;		/* monotonic seconds: lines before it are
				 * counted, not printed */
	uint64_t unlogged;	/* lines not printed since the last one */
};

/*
 * Whether a line of rl may be printed at now (monotonic seconds, as
 * daemon_now()). True: print it; *suppressed (may be NULL) is set to the
 * lines not printed since the previous one, and the next line is due
 * interval seconds after now. False: the line is only counted. Any loop
 * or thread that owns rl.
 */
bool ratelog_admit(struct ratelog *rl, double now, double interval,
		   uint64_t *suppressed);

/*
 * ratelog_admit for n events (n >= 1) noted at once (n checksum failures
 * found by one look): true when a line may be printed now, with
 * *suppressed (may be NULL) the events noted and not logged since the
 * previous line, which the caller's line then reports; false: the n
 * events are only counted.
 */
bool ratelog_note(struct ratelog *rl, double now, double interval, uint64_t n,
		  uint64_t *suppressed);

/*
 * Print one line at level (fmt printf-style, no newline) if
 * ratelog_admit(rl, now, interval) allows it, with " (and N more like it
 * not logged in the last S s)" appended when lines were held back. True
 * when the line was printed (whatever the log level lets through).
 */
bool ratelog_msg(struct ratelog *rl, double now, double interval,
		 enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
