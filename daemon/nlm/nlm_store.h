/* SPDX-License-Identifier: MIT */
/*
 * nlm_store: the held-lock table (nlm_locks.h) kept in state_dir, so
 * that after a restart or a SIGKILL of the proxy a client's reboot
 * still releases the locks the proxy holds upstream for it. An LMDB
 * environment, STATE_DIR/nlm.mdb (and its lock file nlm.mdb-lock), one
 * database of 16-byte keys, big-endian so a client's records follow it:
 *
 *   (0, 0)            the format record: "NLMS", version 1
 *   (client id, 0)    a client: its caller name (the name statd reports
 *                     its reboot by, the table's key)
 *   (client id, id)   one lock of that client as it went upstream: export
 *                     id, svid, exclusive, offset, length, upstream file
 *                     handle, wrapped owner (nlm_owner.h: it names the
 *                     client's address, which FREE_ALL checks)
 *
 * every value ending with an XXH3-64 of its key and the rest of it.
 *
 * Opened with MDB_NOSYNC: a commit writes the changed pages into the
 * page cache and returns, no fsync (which would also stall the event
 * loop on the disk at every LOCK and UNLOCK). What the table must
 * survive is a restart or a SIGKILL of the proxy, and both keep the page
 * cache. A crash of the proxy's host is the lock manager's other case:
 * the host's statd tells the upstream on the way up (SM_NOTIFY) and the
 * upstream's lock manager drops all of the host's locks, which makes the
 * table moot, so an fsync per lock would buy nothing there. That needs
 * the host's statd to watch the upstream (sm-notify tells only the hosts
 * it watches), which the proxy asks of it at the first lock on each
 * upstream (nlm_nsm; docs/semantics.md, "The file server restarting").
 * A host crash can still lose the table's last changes: a file cut short
 * (to nothing too), or a record that fails its checksum, is moved aside
 * (below), and a lock
 * recorded then and lost is one its client's reboot will not release, as
 * before this table existed. Damage that neither LMDB's checks nor the
 * records' checksums see (page links LMDB follows only when writing) is
 * not caught here.
 *
 * Writes are grouped in a transaction (nlm_store_begin ... commit): one
 * per change of the table, in the same step as the change in memory. A
 * step or commit that fails (disk full, EIO, the map full) aborts the
 * transaction, is counted (write_failures), logged at the first failure
 * after a success, and never reaches the client: the table in memory is
 * the truth, the store a copy (nlm_locks rewrites it whole at its next
 * change). A store that does not open, whose format record is not this
 * one, or a record that does not decode or check: logged, counted
 * (resets), the file moved aside to nlm.mdb.bad and a new one made, and
 * the table starts empty; if no store can be made (a state_dir not
 * writable) that is counted too and the table is kept in memory only.
 * Never fatal.
 *
 * Loop thread (a commit is page-cache writes: the loop does not wait on
 * the disk). Invariants: with env NULL (in memory only) nothing is
 * written; a transaction is open only between nlm_store_begin and
 * nlm_store_commit; rc is 0 outside one.
 */
#ifndef NFSCACHED_DAEMON_NLM_STORE_H
#define NFSCACHED_DAEMON_NLM_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "nlm_held.h"

struct nlm_store;

/* The store's counters (nlm_stats_get shows them). */
struct nlm_store_stats {
	uint64_t write_failures;	/* transactions not written */
	uint64_t resets;		/* stores unreadable or not opened:
					 * started empty */
};

/*
 * Open (create) dir/nlm.mdb, dir an existing directory (state_dir,
 * made by main()). One that cannot be read (not LMDB, another format)
 * is moved to dir/nlm.mdb.bad, counted and replaced. Returns the store
 * (the caller frees it with nlm_store_close), in memory only when even a
 * new one cannot be made (logged), or NULL on ENOMEM. Loop thread, at
 * start.
 */
struct nlm_store *nlm_store_open(const char *dir);

/* Close *s and free it; clears the pointer. No-op on NULL. */
void nlm_store_close(struct nlm_store **s);

/* True when the store keeps the table (false: in memory only). */
bool nlm_store_active(const struct nlm_store *s);

/* Each client record: its id (> 0) and caller name (NUL-terminated,
 * borrowed for the call). Returns 0, or -1 to stop (ENOMEM). */
typedef int (*nlm_store_client_fn)(void *arg, uint64_t cid,
				   const char *caller);
/* Each lock record, after its client's: ids, and the lock (h->oh and
 * h itself borrowed for the call; h->next NULL). 0, or -1 to stop. */
typedef int (*nlm_store_lock_fn)(void *arg, uint64_t cid, uint64_t id,
				 const struct nlm_held *h);

/*
 * Read every record, in key order (a client before its locks), into
 * client and lock. Returns 0, or -1 when a record does not decode or
 * check, the read fails or a callback stops it: the store is then
 * logged, counted (resets), moved aside to nlm.mdb.bad and made anew
 * (empty; never emptied in place: LMDB aborts deleting from damaged
 * pages), and the caller drops what it loaded. Without a store, 0 and no
 * calls. Loop thread, at start.
 */
int nlm_store_load(struct nlm_store *s, nlm_store_client_fn client,
		   nlm_store_lock_fn lock, void *arg);

/*
 * Begin one change: returns true when a transaction was opened (the
 * steps below are then written by nlm_store_commit), false without a
 * store, or when LMDB refuses one (then counted and logged as a failed
 * write: the change is not kept).
 */
bool nlm_store_begin(struct nlm_store *s);

/* The steps of a change, each a no-op outside a transaction or after a
 * failed step: write client cid (caller: NUL-terminated, 1 to
 * NLM_STORE_CALLER_MAX bytes), write lock id of client cid (h: as
 * nlm_locks_add takes it), delete lock id of client cid, delete client
 * cid and all its locks, delete every client. */
void nlm_store_put_client(struct nlm_store *s, uint64_t cid,
			  const char *caller);
void nlm_store_put_lock(struct nlm_store *s, uint64_t cid, uint64_t id,
			const struct nlm_held *h);
void nlm_store_del_lock(struct nlm_store *s, uint64_t cid, uint64_t id);
void nlm_store_del_client(struct nlm_store *s, uint64_t cid);
void nlm_store_clear(struct nlm_store *s);

/*
 * Commit the change nlm_store_begin opened (no-op returning 0 without
 * one). Returns 0, or -1 when a step or the commit failed: nothing of it
 * written, counted (write_failures), logged at the first failure since a
 * success.
 */
int nlm_store_commit(struct nlm_store *s);

/* The counters (zero without a store). */
void nlm_store_stats_get(const struct nlm_store *s,
			 struct nlm_store_stats *st);

#define NLM_STORE_CALLER_MAX 1024	/* LM_MAXSTRLEN */

#endif
