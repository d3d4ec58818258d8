/* SPDX-License-Identifier: MIT */
/*
 * invariant: the cache's and the metadata cache's invariants checked
 * while the daemon runs, sampled so a test suite stays fast. The
 * environment variable NFSCACHED_CHECK enables it: unset, empty or 0
 * checks nothing (the loop is plain event_base_dispatch); N > 0 runs
 * cache_check_why (every file's and fetch's magic number, pages, queues,
 * write-back extents and counters), meta_check_why, lcommit_check_why
 * server_check_why (connections' flush and read states, the DRC's
 * drc_check_why) and upstream_check_why (each upstream connection's
 * call lists) at the end of
 * every Nth event-loop turn, when no handler is half-way through a
 * change. A broken invariant is logged, naming it and the turn, and the
 * daemon aborts (a core, or the sanitizer's report, shows where).
 */
#ifndef NFSCACHED_DAEMON_INVARIANT_H
#define NFSCACHED_DAEMON_INVARIANT_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;

/* Read NFSCACHED_CHECK (see above) into d and zero d's turn and check
 * counters. Returns 0, or -1 when it is not a decimal number (checks then
 * stay off). Call before invariant_turn, outside the loop. */
int invariant_init(struct daemon *d);

/* d's checks run every this many turns; 0: off. */
unsigned invariant_every(const struct daemon *d);

/* Checks run so far on d since invariant_init (for tests). */
uint64_t invariant_checks(const struct daemon *d);

/* One event-loop turn ended: on every Nth, check d's cache and the
 * metadata cache; abort with the broken invariant's name. */
void invariant_turn(struct daemon *d);

/* Run d's event loop until event_base_loopexit (as event_base_dispatch),
 * calling invariant_turn after each turn when checks are on. Returns
 * what event_base_dispatch returns: 0, 1 (no events left) or -1. */
int invariant_loop(struct daemon *d);

#endif
