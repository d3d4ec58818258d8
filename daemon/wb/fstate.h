/* SPDX-License-Identifier: MIT */
/*
 * fstate: the daemon's per-file state, in the cache's one owner slot
 * (cfile_owner_slot). The file's pages, attributes, write-back bytes,
 * write runs and READ fetches in flight are the cache's (struct cfile);
 * what is here is what only the daemon knows, each part owned by one
 * module, which alone reads and writes it:
 *
 *   writeback.c   waits, wb_inflight, wb_inflight_bytes, commit_tag,
 *                 stable, want_commit, last_write, commit_cred,
 *                 commit_ccred, has_commit_cred, commit_retry_at,
 *                 write_retry_at
 *   nfs3_write.c  last_absorb (read by writeback.c), reval_inflight,
 *                 reval_waiters, access_asks
 *   nfs3_ops.c    hold (a truncating SETATTR in flight; read by
 *                 writeback.c)
 *   lcommit.c     lc_pages, lc_stale, lc_map, lc_attr_seq, lc_lost,
 *                 lc_syncs, lc_retry_at
 *   fstate.c      ex, hooks (the owners' parts, fstate_hooks), and the
 *                 state's life
 *
 * Life: created by fstate_get on first need, freed by fstate_release
 * once fstate_idle holds (nothing in flight, waiting or held, and no
 * write-back bytes: cfile_has_wb), or by fstate_free at shutdown.
 * Invariants: a file with an upstream WRITE or COMMIT in flight, or with
 * waiters, has a state; a file with write-back bytes gets one when they
 * are absorbed (nfs3_write.c) or, after ENOMEM there, from the write-back
 * tick; fstate_busy is true for both.
 */
#ifndef NFSCACHED_DAEMON_FSTATE_H
#define NFSCACHED_DAEMON_FSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "rangeset.h"
#include "upstream.h"

struct daemon;
struct export_rt;
struct wb_wait;
struct write_op;
struct lc_page;

/*
 * What the owners above fstate do with their parts of a state, so that
 * fstate calls none of them (copied from d->fstate_hooks by fstate_get;
 * NULL, or a NULL member: nothing). idle: the owner holds nothing in fs
 * (lcommit_fstate_idle). clear: free what the owner holds in fs, in d's
 * owner state (lcommit_fstate_clear). wait_unlink: free waiter w, its
 * successor returned (writeback_wait_unlink). Loop thread.
 */
struct fstate_hooks {
	bool (*idle)(const struct fstate *fs);
	void (*clear)(struct daemon *d, struct fstate *fs);
	struct wb_wait *(*wait_unlink)(struct wb_wait *w);
};

struct fstate {
	struct export_rt *ex;		/* borrowed from the daemon */
	const struct fstate_hooks *hooks; /* borrowed from the daemon */
	struct wb_wait *waits;		/* writeback.c */
	unsigned wb_inflight;		/* upstream WRITEs in flight */
	uint64_t wb_inflight_bytes;	/* their data, bytes */
	uint32_t commit_tag;		/* upstream COMMIT in flight, or 0 */
	double commit_retry_at;		/* a COMMIT failed: none before this
					 * (daemon_now) */
	double write_retry_at;		/* a WRITE got JUKEBOX: none before
					 * this (daemon_now) */
	bool stable;			/* a FILE_SYNC caller waits: runs go
					 * FILE_SYNC */
	bool want_commit;		/* COMMIT upstream once written */
	double last_absorb;		/* when a client WRITE was last absorbed */
	double last_write;		/* when the last write-back WRITE came
					 * back (daemon_now) */
	unsigned hold;			/* > 0: start no write-back (a
					 * truncating SETATTR is in flight) */
	struct nfs_cred commit_cred;	/* a recent writer's */
	bool has_commit_cred;
	bool reval_inflight;		/* a WRITE's revalidating GETATTR is
					 * upstream (nfs3_write.c) */
	struct write_op *reval_waiters;	/* WRITEs that wait for its reply */
	struct write_op *access_asks;	/* WRITEs whose ACCESS is upstream,
					 * one per credential (nfs3_write.c) */
	struct rangeset lc_pages;	/* page indexes with a journal record
					 * (lcommit.c) */
	struct rangeset lc_stale;	/* bytes written since journaled */
	struct lc_page *lc_map;		/* per-page journal state (uthash) */
	uint64_t lc_attr_seq;		/* recovery: the record whose
					 * attributes the file took */
	bool lc_lost;			/* a write's note failed (ENOMEM):
					 * COMMITs wait upstream until f
					 * holds no write-back bytes */
	unsigned lc_syncs;		/* local syncs in flight */
	double lc_retry_at;		/* write-back paused until then after
					 * a failure of local data, or 0 */
};

/*
 * The state of f, created if absent (ex may be NULL only when it exists).
 * Borrowed: valid until fstate_release frees it. NULL on ENOMEM.
 */
struct fstate *fstate_get(struct daemon *d, struct cfile *f,
			  struct export_rt *ex);

/* The state of f if it has one. */
struct fstate *fstate_find(struct cfile *f);

/*
 * The one "busy with write-back" test: f has write-back bytes
 * (cfile_has_wb) or an upstream WRITE or COMMIT of it is in flight.
 * What a SETATTR of size or owner, a COMMIT and a REMOVE wait for.
 */
bool fstate_busy(struct cfile *f);

/* The one "idle" test: f's state (may be NULL) holds nothing in flight,
 * waiting or held, and f has no write-back bytes: it may be freed. */
bool fstate_idle(const struct fstate *fs, const struct cfile *f);

/* Free state fs (NULL: nothing) of a file of d's cache unconditionally,
 * the owners' parts through its hooks (clear gets d); its waiters are
 * dropped unanswered. The one way a state is freed: fstate_release, and
 * daemon_stop for every file (cache_owner_clear, which clears the slot).
 * Loop thread, or daemon_stop. */
void fstate_free(struct daemon *d, struct fstate *fs);

/* Free f's state if fstate_idle (fstate_free) and clear f's owner slot.
 * Loop thread. */
void fstate_release(struct daemon *d, struct cfile *f);

#endif
