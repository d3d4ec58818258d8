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
 * With a store attached (nlm_locks_load, nlm_store.h), each change is
 * written to it in the same step as in memory, one transaction per
 * change: a client by an id, each record by an id (nlm_held.id), both
 * from one counter. A change the store could not take leaves the table
 * "behind": the next change rewrites the store whole. The table in
 * memory is the truth; a failed write never fails the change. No clock;
 * the caller sends the UNLOCKs. Loop thread.
 * Invariants (nlm_locks_check_why): every client in the table has a
 * non-empty name equal to its key; nheld counts the records of all
 * clients; no record has an empty handle or owner; every client and
 * record id is non-zero and below the next one to give (one counter, so
 * unique).
 */
#ifndef NFSCACHED_DAEMON_NLM_LOCKS_H
#define NFSCACHED_DAEMON_NLM_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nlm_held.h"

struct nlm_locks;
struct nlm_store;

/* An empty table, or NULL on ENOMEM. */
struct nlm_locks *nlm_locks_new(void);

/* Free *t and every record; clears the pointer. No-op on NULL. */
void nlm_locks_free(struct nlm_locks **t);

/*
 * Record a granted lock of client caller (NUL-terminated, non-empty;
 * copied) with the given fields (copied); a record of the same file,
 * owner and range already there is not added again (its grants count
 * goes up). Returns 1 when the
 * client was not in the table (the caller asks the status monitor to
 * watch it), 0 when it was, -1 on ENOMEM or a field over its limit
 * (nothing recorded).
 */
int nlm_locks_add(struct nlm_locks *t, const char *caller,
		  const struct nlm_held *h);

/*
 * How many times client caller's record of h's file, owner and range
 * (the one nlm_locks_add would not add again) was given to
 * nlm_locks_add since it is in the table (1 for a loaded one); 0 when
 * there is none (never added, or unlocked since) or on NULL arguments.
 * A caller that added a lock compares the count later to learn whether
 * the same lock was granted again meanwhile (nlm_granted.c: a client's
 * own LOCK granted while its GRANTED callback was relayed).
 */
uint64_t nlm_locks_grants(const struct nlm_locks *t, const char *caller,
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
 * Copies of client caller's records of h's file and owner (fh, oh) that
 * overlap h's range [off, off + len) (len 0: to the end), each cut to
 * that range (len 0 for one reaching the end), ordered by start: a list the
 * caller frees with nlm_held_free_list, or NULL (none, no such client,
 * NULL arguments). Records may overlap one another (one per grant of a
 * distinct range). *failed is set on ENOMEM (the list then misses some).
 * t is not changed. What an owner holds of a range a failed LOCK asked
 * for, which undoing that LOCK upstream must leave held (nlm_ops.c).
 */
struct nlm_held *nlm_locks_owned(const struct nlm_locks *t,
				 const char *caller, const struct nlm_held *h,
				 bool *failed);

/*
 * Take client caller out of the table: its records, as a list the caller
 * frees with nlm_held_free_list, or NULL (none, or no such client).
 * *known says whether the client was in the table.
 */
struct nlm_held *nlm_locks_take(struct nlm_locks *t, const char *caller,
				bool *known);

/*
 * Take out of client caller's records those pick(arg, record) is true
 * for (pick must not change t), as a list the caller frees with
 * nlm_held_free_list, or NULL; the others stay. A client left with none
 * goes from the table. *known says whether the client was in the table.
 * One change (one transaction of the store), as FREE_ALL needs: a
 * client's locks from its own address go, in one step.
 */
struct nlm_held *nlm_locks_take_if(struct nlm_locks *t, const char *caller,
				   bool (*pick)(const void *arg,
						const struct nlm_held *h),
				   const void *arg, bool *known);

/*
 * Take out of every client's records those pick(arg, record) is true for
 * (pick must not change t), handing each client's taken records to
 * fn(arg2, caller, list): caller borrowed for the call, list fn's to free
 * with nlm_held_free_list (fn must not change t). A client left with none
 * goes from the table. One change (one transaction of the store) per
 * client touched. Returns how many records were taken. As an upstream's
 * reboot needs: the locks of its exports are gone there, whoever held
 * them. Loop thread.
 */
unsigned nlm_locks_take_each_if(struct nlm_locks *t,
				bool (*pick)(const void *arg,
					     const struct nlm_held *h),
				const void *arg,
				void (*fn)(void *arg2, const char *caller,
					   struct nlm_held *h),
				void *arg2);

/* Free a list nlm_locks_take returned. */
void nlm_held_free_list(struct nlm_held *h);

/* The end of h's range [off, off + len): UINT64_MAX for len 0 (to the
 * end of the file) and for a range past 2^64. */
uint64_t nlm_held_end(const struct nlm_held *h);

/* A copy of r (its oh copied too, next NULL, id 0) limited to [from, to)
 * (to UINT64_MAX: to the end, len 0), for a list freed with
 * nlm_held_free_list; NULL on ENOMEM. Any thread; no table. */
struct nlm_held *nlm_held_piece(const struct nlm_held *r, uint64_t from,
				uint64_t to);

/*
 * Load the records of store s (nlm_store_load) into t, which must be
 * empty, and attach s: every later change of t is written to s (s is
 * borrowed: it outlives t, or t is freed first). Returns how many
 * clients were loaded, or -1 when s was unreadable (logged and counted
 * there; t stays empty, s attached and emptied) or on ENOMEM (t emptied,
 * s attached and rewritten at the next change). Loop thread, at start.
 */
int nlm_locks_load(struct nlm_locks *t, struct nlm_store *s);

/* Call fn(arg, caller) for each client of t (caller borrowed for the
 * call; fn must not change t). */
void nlm_locks_each_client(const struct nlm_locks *t,
			   void (*fn)(void *arg, const char *caller),
			   void *arg);

/* Clients in the table, and records held by all of them. */
unsigned nlm_locks_clients(const struct nlm_locks *t);
unsigned nlm_locks_held(const struct nlm_locks *t);

/* The first broken invariant (the header's), or NULL. */
const char *nlm_locks_check_why(const struct nlm_locks *t);

#endif
