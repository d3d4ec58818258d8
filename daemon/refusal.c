/* SPDX-License-Identifier: MIT */
/*
 * refusal: counting and rate-limited logging of refused calls (see
 * refusal.h). Invariant: unlogged[c][r] > 0 only while next_log[c][r] is
 * in the future of the refusal that was last logged.
 */
#include "refusal.h"

#include "log.h"

static const char *const reason_names[] = {
#define REFUSAL_NAME(id, label) [REFUSAL_##id] = label,
	REFUSAL_REASONS(REFUSAL_NAME)
#undef REFUSAL_NAME
};

static const char *const call_names[] = {
	[REFUSAL_MOUNT] = "mount",
	[REFUSAL_NFS] = "nfs",
};

const char *refusal_reason_name(enum refusal_reason why)
{
	return reason_names[why];
}

const char *refusal_call_name(enum refusal_call call)
{
	return call_names[call];
}

void refusal_note(struct refusal_counts *rc, enum refusal_call call,
		  enum refusal_reason why, double now, const char *what,
		  const char *peer, const char *reason)
{
	rc->n[call][why]++;
	if (rc->n[call][why] > 1 && now < rc->next_log[call][why]) {
		rc->unlogged[call][why]++;
		return;
	}
	if (rc->unlogged[call][why])
		log_info("%s refused for %s: %s (and %llu more refused for "
			 "this reason, not logged, in the last %.0f s)", what,
			 peer, reason,
			 (unsigned long long)rc->unlogged[call][why],
			 REFUSAL_LOG_INTERVAL);
	else
		log_info("%s refused for %s: %s", what, peer, reason);
	rc->unlogged[call][why] = 0;
	rc->next_log[call][why] = now + REFUSAL_LOG_INTERVAL;
}
