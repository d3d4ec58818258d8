/* SPDX-License-Identifier: MIT */
/*
 * refusal: counting and rate-limited logging of refused calls (see
 * refusal.h); the pacing is ratelog's, one per call kind and reason.
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
	uint64_t held;

	rc->n[call][why]++;
	if (!ratelog_admit(&rc->log[call][why], now, REFUSAL_LOG_INTERVAL,
			   &held))
		return;
	if (held)
		log_info("%s refused for %s: %s (and %llu more refused for "
			 "this reason, not logged, in the last %.0f s)", what,
			 peer, reason, (unsigned long long)held,
			 REFUSAL_LOG_INTERVAL);
	else
		log_info("%s refused for %s: %s", what, peer, reason);
}
