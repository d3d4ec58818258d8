/* SPDX-License-Identifier: MIT */
/*
 * nlm_locks: the locks the proxy holds upstream on behalf of each client,
 * by the client's caller name (the name its status monitor reports a
 * reboot by), so that a client's reboot (NSM, SM_NOTIFY through the local
 * statd) or its FREE_ALL releases that client's locks upstream, and only
 * that client's.
 *
 * A record is a granted LOCK as it went upstream: export, upstream
 * handle, wrapped owner (nlm_owner.h), svid and range; the same lock
 * granted again is one record. An UNLOCK takes its range out of the
 * owner's records of that file, splitting one it cuts in the middle, as
 * POSIX locks split (out of memory a record stays whole: releasing it
 * later unlocks bytes that may already be free, which a lock manager
 * answers GRANTED; over-approximating is safe, forgetting is not).
 *
 * No I/O, no clock: the caller sends the UNLOCKs. Loop thread.
 * Invariants (nlm_locks_check_why): every client in the table has a
 * non-empty name equal to its key; nheld counts the records of all
 * clients; no record has an empty handle or owner.
 */
#ifndef NFSCACHED_DAEMON_NLM_LOCKS_H
#define NFSCACHED_DAEMON_NLM_LOCKS_H

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
	struct nlm_held *next;
};

struct nlm_locks;

/* An empty table, or NULL on ENOMEM. */
struct nlm_locks *nlm_locks_new(void);

/* Free *t and every record; clears the pointer. No-op on NULL. */
void nlm_locks_free(struct nlm_locks **t);

/*
 * Record a granted lock of client caller (NUL-terminated, non-empty;
 * copied) with the given fields (copied); a record of the same file,
 * owner and range already there is not added again. Returns 1 when the
 * client was not in the table (the caller asks the status monitor to
 * watch it), 0 when it was, -1 on ENOMEM or a field over its limit
 * (nothing recorded).
 */
int nlm_locks_add(struct nlm_locks *t, const char *caller,
		  const struct nlm_held *h);

/*
 * An UNLOCK of [off, off + len) (len 0: to the end) by owner oh of file
 * fh of client caller was granted upstream: the range is taken out of
 * that owner's records of fh (a record inside it goes, one it overlaps
 * shrinks, one it cuts in the middle becomes two). Returns how many
 * records it touched. A client left with none stays in the table (it is
 * still monitored).
 */
unsigned nlm_locks_unlock(struct nlm_locks *t, const char *caller,
			  const uint8_t *fh, size_t fh_len,
			  const uint8_t *oh, size_t oh_len, uint64_t off,
			  uint64_t len);

/*
 * Take client caller out of the table: its records, as a list the caller
 * frees with nlm_held_free_list, or NULL (none, or no such client).
 * *known says whether the client was in the table.
 */
struct nlm_held *nlm_locks_take(struct nlm_locks *t, const char *caller,
				bool *known);

/* Free a list nlm_locks_take returned. */
void nlm_held_free_list(struct nlm_held *h);

/* Clients in the table, and records held by all of them. */
unsigned nlm_locks_clients(const struct nlm_locks *t);
unsigned nlm_locks_held(const struct nlm_locks *t);

/* The first broken invariant (the header's), or NULL. */
const char *nlm_locks_check_why(const struct nlm_locks *t);

#endif
