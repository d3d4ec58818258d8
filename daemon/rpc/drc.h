/* SPDX-License-Identifier: MIT */
/*
 * drc: the duplicate request cache for non-idempotent NFSv3 procedures
 * (SETATTR, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK).
 *
 * A retransmission (same client address and port, xid, procedure and
 * argument checksum, as Linux knfsd's nfsd_cache_lookup matches) must not
 * run twice upstream: while the original is in progress the duplicate
 * waits and gets the original's reply; once done it gets a byte copy of it.
 *
 * Entry states: INPROGRESS -> DONE -> (expired or evicted) freed. Only DONE
 * entries are evicted, oldest first, when the cache is full or their age
 * passes the timeout. An INPROGRESS entry is never freed under its owner.
 */
#ifndef NFSCACHED_DAEMON_DRC_H
#define NFSCACHED_DAEMON_DRC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct drc;
struct drc_entry;	/* opaque; its first field is a uint32_t magic
			 * number, checked where it comes back */

#define DRC_MAX_WAITERS 8

enum drc_result {
	DRC_NEW = 0,	/* not seen: *e is a new INPROGRESS entry, caller
			 * must drc_complete() or drc_abandon() it */
	DRC_INPROGRESS,	/* the original is running: wait on *e */
	DRC_DONE,	/* answered before: reply bytes in *e */
	DRC_DISABLED,	/* the cache is off (size 0) or out of memory:
			 * execute normally, *e is NULL */
};

/* Delivers reply[0..len) (borrowed) to one waiter. */
typedef void (*drc_deliver_fn)(void *waiter, const uint8_t *reply,
			       size_t len);

/*
 * Create a cache of at most max_entries DONE entries kept timeout seconds.
 * deliver is called for each waiter when an entry completes, and release
 * for each waiter dropped without a reply (drc_abandon, drc_free).
 * max_entries 0 gives a cache that always answers DRC_DISABLED.
 */
struct drc *drc_new(unsigned max_entries, double timeout,
		    drc_deliver_fn deliver, void (*release)(void *waiter));

/*
 * Look up or start the call (sa = client address and port, xid, proc,
 * args[0..args_len) for the checksum) at time now (seconds). See enum
 * drc_result. Entries past their timeout are dropped on the way.
 */
enum drc_result drc_begin(struct drc *d, const struct sockaddr *sa,
			  uint32_t xid, uint32_t proc, const uint8_t *args,
			  size_t args_len, double now, struct drc_entry **e);

/* The stored reply of a DONE entry (borrowed until the next drc call). */
const uint8_t *drc_entry_reply(const struct drc_entry *e, size_t *len);

/*
 * Park waiter (an opaque reference the caller handed over) on an
 * INPROGRESS entry. Returns 0, or -1 when DRC_MAX_WAITERS are already
 * parked (the caller then drops the duplicate and keeps its reference).
 */
int drc_add_waiter(struct drc_entry *e, void *waiter);

/*
 * Finish an INPROGRESS entry with reply[0..len) (copied): each waiter gets
 * it through deliver, then the entry becomes DONE. If the copy cannot be
 * made the entry is dropped (waiters still get the reply).
 */
void drc_complete(struct drc *d, struct drc_entry *e, const uint8_t *reply,
		  size_t len, double now);

/* Drop an INPROGRESS entry whose call produced no reply (connection gone). */
void drc_abandon(struct drc *d, struct drc_entry *e);

/*
 * The first of the cache's invariants (drc.c's header) that does not
 * hold, as a sentence naming it, or NULL when all hold. Walks every entry:
 * for the invariant sweep (NFSCACHED_CHECK) and tests. Loop thread.
 */
const char *drc_check_why(const struct drc *d);

/* Number of entries held (both states). */
unsigned drc_count(const struct drc *d);

/* Free *d, releasing parked waiters; clears the caller's pointer. */
void drc_free(struct drc **d);

#endif
