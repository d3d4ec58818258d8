/* SPDX-License-Identifier: MIT */
/*
 * ratelog: see ratelog.h. Invariant: unlogged > 0 only while now < next
 * at the last event noted.
 */
#include "ratelog.h"

bool ratelog_note(struct ratelog *rl, double now, double interval, uint64_t n,
		  uint64_t *skipped)
{
	if (rl->started && now < rl->next) {
		rl->unlogged += n;
		return false;
	}
	*skipped = rl->unlogged;
	rl->unlogged = 0;
	rl->started = true;
	rl->next = now + interval;
	return true;
}
