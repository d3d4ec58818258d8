/* SPDX-License-Identifier: MIT */
/*
 * invariant: sampled invariant checks at the end of event-loop turns
 * (see invariant.h). State, in the daemon it checks (struct daemon's
 * check_*): the sampling period, read at start, and the turn and check
 * counters; no other module reads them.
 */
#include <errno.h>
#include <stdlib.h>
#include <event2/event.h>

#include "acl_ops.h"
#include "daemon.h"
#include "invariant.h"
#include "lcommit.h"
#include "log.h"
#include "nfs3_meta.h"
#include "nfs3_read.h"
#include "nlm_ops.h"
#include "server.h"
#include "upstream.h"
#include "writeback.h"

int invariant_init(struct daemon *d)
{
	const char *v = getenv("NFSCACHED_CHECK");
	char *end;
	unsigned long n;

	d->check_every = 0;
	d->check_turns = d->checks = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > 1000000000ul)
		return -1;
	d->check_every = (unsigned)n;
	return 0;
}

unsigned invariant_every(const struct daemon *d)
{
	return d->check_every;
}

uint64_t invariant_checks(const struct daemon *d)
{
	return d->checks;
}

/* The call lists of every live export's upstream connections. */
static const char *upstreams_check_why(const struct daemon *d)
{
	const char *why;

	for (size_t i = 0; i < d->nexports; i++) {
		const struct upcall_lanes *l = &d->exports[i]->lanes;

		for (unsigned k = 0; k < l->n; k++)
			if ((why = upstream_check_why(l->lane[k])))
				return why;
	}
	return NULL;
}

void invariant_turn(struct daemon *d)
{
	const char *why = NULL, *what = "cache";

	if (!d->check_every || ++d->check_turns % d->check_every)
		return;
	d->checks++;
	if (d->cache)
		why = cache_check_why(d->cache);
	if (!why) {
		what = "metadata cache";
		why = nfs3_meta_check_why(d);
	}
	if (!why) {
		what = "READs in flight";
		why = nfs3_read_check_why(d);
	}
	if (!why) {
		what = "write-back";
		why = writeback_check_why(d);
	}
	if (!why) {
		what = "local commit";
		why = lcommit_check_why(d);
	}
	if (!why) {
		what = "lock manager";
		why = nlm_check_why(d);
	}
	if (!why) {
		what = "NFSACL calls";
		why = nfsacl_check_why(d);
	}
	if (!why && d->server) {
		what = "server";
		why = server_check_why(d->server);
	}
	if (!why) {
		what = "upstream calls";
		why = upstreams_check_why(d);
	}
	if (!why)
		return;
	log_error("invariant broken after event-loop turn %llu: %s: %s",
		  (unsigned long long)d->check_turns, what, why);
	abort();
}

int invariant_loop(struct daemon *d)
{
	int rc;

	if (!d->check_every)
		return event_base_dispatch(d->base);
	do {
		rc = event_base_loop(d->base, EVLOOP_ONCE);
		invariant_turn(d);
	} while (rc == 0 && !event_base_got_exit(d->base) &&
		 !event_base_got_break(d->base));
	return rc;
}
