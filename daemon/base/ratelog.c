/* SPDX-License-Identifier: MIT */
/*
 * ratelog: rate-limited log lines (see ratelog.h). Invariant: unlogged > 0
 * only while next is later than the line that was last printed, i.e. a
 * held-back line is always reported by the next printed one.
 */
#include <stdarg.h>
#include <stdio.h>

#include "ratelog.h"

bool ratelog_note(struct ratelog *rl, double now, double interval, uint64_t n,
		  uint64_t *suppressed)
{
	if (now < rl->next) {
		rl->unlogged += n;
		return false;
	}
	if (suppressed)
		*suppressed = rl->unlogged;
	rl->unlogged = 0;
	rl->next = now + interval;
	return true;
}

bool ratelog_admit(struct ratelog *rl, double now, double interval,
		   uint64_t *suppressed)
{
	return ratelog_note(rl, now, interval, 1, suppressed);
}

bool ratelog_msg(struct ratelog *rl, double now, double interval,
		 enum log_level level, const char *fmt, ...)
{
	char line[768];
	uint64_t held;
	va_list ap;

	if (!ratelog_admit(rl, now, interval, &held))
		return false;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (held)
		log_msg(level, "%s (and %llu more like it not logged in the "
			"last %.0f s)", line, (unsigned long long)held,
			interval);
	else
		log_msg(level, "%s", line);
	return true;
}
