/* SPDX-License-Identifier: MIT */
/*
 * fstate: the daemon's per-file state, hung on the cache's owner slot
 * (cfile_owner_slot): the export the file belongs to, READ fetches in
 * flight, write-back in flight and the client calls waiting on it. It
 * lives while any of those exist or the file has bytes in write-back
 * state, and is freed by fstate_release when idle.
 */
#ifndef NFSCACHED_DAEMON_FSTATE_H
#define NFSCACHED_DAEMON_FSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "upstream.h"

struct daemon;
struct export_rt;
struct fetch;
struct wb_wait;
struct write_op;

struct fstate {
	struct export_rt *ex;		/* borrowed from the daemon */
	struct fetch *fetches;		/* nfs3_read.c */
	struct wb_wait *waits;		/* writeback.c */
	unsigned wb_inflight;		/* upstream WRITEs in flight */
	uint64_t wb_inflight_bytes;	/* their data, bytes */
	uint32_t commit_tag;		/* upstream COMMIT in flight, or 0 */
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
};

/*
 * The state of f, created if absent (ex may be NULL only when it exists).
 * Borrowed: valid until fstate_release frees it. NULL on ENOMEM.
 */
struct fstate *fstate_get(struct daemon *d, struct cfile *f,
			  struct export_rt *ex);

/* The state of f if it has one. */
struct fstate *fstate_find(struct cfile *f);

/* Free a state unconditionally (shutdown: cache_owner_clear's callback;
 * its waiters are dropped unanswered). */
void fstate_free(void *fs);

/* Free f's state if nothing is in flight, waiting or dirty. */
void fstate_release(struct daemon *d, struct cfile *f);

#endif
