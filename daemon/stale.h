/* SPDX-License-Identifier: MIT */
/*
 * stale: answering from the cache while an export's upstream is
 * unreachable (the stale_on_error directive, docs/semantics.md "The
 * upstream going away"). Attributes that expired less than stale_on_error
 * seconds ago stand in for the upstream's (READ of cached bytes,
 * GETATTR), and the last FSINFO, FSSTAT and PATHCONF answers per handle
 * are remembered so a mount works during an outage. Every answer given
 * this way is counted by procedure. Unreachable means the call failed
 * with the connection lost or timed out (a stalled upstream included), or
 * could not be sent because the upstream is not UP; an upstream that
 * answers, even with an error, is never second-guessed.
 */
#ifndef NFSCACHED_DAEMON_STALE_H
#define NFSCACHED_DAEMON_STALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "upstream.h"

struct daemon;
struct export_rt;

/*
 * Counters this module owns, declared once for struct stale_stats and for
 * /metrics (rows as in server.h's SERVER_METRICS): answers given from
 * stale state, by NFSv3 procedure number; the label set stale_proc names
 * only the procedures stale_on_error answers (daemon/metrics.c).
 */
#define STALE_METRICS(X, A) \
	A(answers, UPSTREAM_NPROCS, counter, "nfscached_stale_answers_total", \
	  "procedure", stale_proc, \
	  "Calls answered from expired cached state while the upstream was unreachable (stale_on_error), by procedure.")

struct stale_stats {
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	STALE_METRICS(, A)
#undef A
};

/* The status to judge a call nfs3_send refused by: UPSTREAM_EDOWN when
 * ex's upstream is not UP (unreachable), else UPSTREAM_EPROTO. */
enum upstream_status stale_refused(const struct export_rt *ex);

/*
 * True if f's cached attributes may be used now for a call whose upstream
 * call ended with st: stale_on_error > 0, st is UPSTREAM_EDOWN or
 * UPSTREAM_ETIMEDOUT, and f has attributes that expired less than
 * stale_on_error seconds ago (daemon_now()). f may be NULL (false).
 */
bool stale_attrs_usable(const struct daemon *d, const struct cfile *f,
			enum upstream_status st);

/* Count one answer of NFSv3 procedure proc given from stale state. */
void stale_count(uint32_t proc);

/*
 * Remember the upstream's result XDR res[0..len) of proc (FSINFO, FSSTAT
 * or PATHCONF; others are ignored) for upstream handle fh[0..fhlen) of
 * export ex, with its post_op_attr dropped (old attributes must not be
 * taken for new ones). Copied; the oldest of STALE_SLOTS is replaced.
 * Only while stale_on_error > 0. ENOMEM forgets it.
 */
void stale_remember(const struct daemon *d, const struct export_rt *ex,
		    uint32_t proc, const uint8_t *fh, size_t fhlen,
		    const uint8_t *res, size_t len);

/*
 * The remembered result of proc for fh of ex, *len bytes of XDR (borrowed
 * until the next stale_remember), if stale_on_error > 0 and st says the
 * upstream is unreachable; else NULL.
 */
const uint8_t *stale_recall(const struct daemon *d, const struct export_rt *ex,
			    uint32_t proc, const uint8_t *fh, size_t fhlen,
			    enum upstream_status st, size_t *len);

/* Free what stale_remember kept (shutdown). */
void stale_forget_all(void);

/* Copy the counters into *st. */
void stale_stats_get(struct stale_stats *st);

#endif
