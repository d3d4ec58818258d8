/* SPDX-License-Identifier: MIT */
/*
 * nlm_held: one lock the proxy holds upstream for a client, as it was
 * sent there: the record nlm_locks keeps by client and nlm_store writes
 * to state_dir (a type only, shared by the two).
 */
#ifndef NFSCACHED_DAEMON_NLM_HELD_H
#define NFSCACHED_DAEMON_NLM_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NLM_LOCKS_FH_MAX 64		/* NFSv3 handles (RFC 1813 FHSIZE3) */
#define NLM_LOCKS_OH_MAX 1024		/* NLM_OWNER_MAX */

/* One lock held upstream. */
struct nlm_held {
	unsigned export_id;
	uint8_t fh[NLM_LOCKS_FH_MAX];	/* the upstream handle */
	size_t fh_len;
	uint8_t *oh;			/* the wrapped owner, owned */
	size_t oh_len;
	int32_t svid;
	uint64_t off, len;		/* len 0: to the end of the file */
	bool exclusive;
	uint64_t id;			/* its record in the store: the
					 * table's own, ignored in what
					 * callers pass */
	uint64_t grants;		/* times the table was given this
					 * lock (nlm_locks_add) since it holds
					 * it, 1 after a load; in memory only:
					 * the table's own, ignored in what
					 * callers pass */
	struct nlm_held *next;
};

#endif
