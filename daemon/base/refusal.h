/* SPDX-License-Identifier: MIT */
/*
 * refusal: calls and mounts refused by an export's client rules, counted
 * by reason (nfscached_client_refusals_total) and logged at most once per
 * REFUSAL_LOG_INTERVAL seconds per export, kind of call and reason, the
 * next line saying how many were not logged in between: a client retrying
 * a refused call in a loop costs the journal one line per interval.
 */
#ifndef NFSCACHED_DAEMON_REFUSAL_H
#define NFSCACHED_DAEMON_REFUSAL_H

#include <stdint.h>

#include "ratelog.h"

/* Seconds between two log lines of one export, call kind and reason. */
#define REFUSAL_LOG_INTERVAL 10.0

/* What was refused: a MNT, or an NFSv3 call. */
enum refusal_call { REFUSAL_MOUNT, REFUSAL_NFS, REFUSAL_NCALLS };

/* Why, with its metric label. */
#define REFUSAL_REASONS(X)                                                  \
	X(NOT_IN_CLIENTS, "not_in_clients") /* no clients entry matches */  \
	X(INSECURE_PORT, "insecure_port")   /* secure, port >= 1024 */      \
	X(READ_ONLY, "read_only")	    /* a change on a ro client */   \
	X(DOT_PATH, "dot_path")		    /* MNT path with . or .. */     \
	X(PATH, "path")			    /* MNT path not a directory of  \
					     * the export, or leaves it */  \
	X(NO_EXPORT, "no_export")	    /* MNT path under no export */

enum refusal_reason {
#define REFUSAL_ENUM(id, label) REFUSAL_##id,
	REFUSAL_REASONS(REFUSAL_ENUM)
#undef REFUSAL_ENUM
	REFUSAL_NREASONS
};

/* The counts and log pacing of one export (or of refusals no export
 * claims). Zero-initialised is ready. */
struct refusal_counts {
	uint64_t n[REFUSAL_NCALLS][REFUSAL_NREASONS];
	struct ratelog log[REFUSAL_NCALLS][REFUSAL_NREASONS];
};

/* The metric label of a reason and of a call kind. */
const char *refusal_reason_name(enum refusal_reason why);
const char *refusal_call_name(enum refusal_call call);

/*
 * Count one refusal in rc and log it at info level as "WHAT refused for
 * PEER: REASON" (what: the call and path, e.g. "MNT /data" or "WRITE on
 * /data"), unless a line of the same call kind and reason was logged less
 * than REFUSAL_LOG_INTERVAL seconds before now (monotonic seconds,
 * daemon_now()); then it is only counted, and the next line logged says
 * how many were not.
 */
void refusal_note(struct refusal_counts *rc, enum refusal_call call,
		  enum refusal_reason why, double now, const char *what,
		  const char *peer, const char *reason);

#endif
