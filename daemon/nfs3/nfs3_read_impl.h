/* SPDX-License-Identifier: MIT */
/*
 * nfs3_read_impl: the objects of nfs3_read.c (its state in the daemon, a
 * fetch, a READ in flight), for nfs3_read.c and for the unit test that
 * breaks them on purpose to see the invariant sweep name what it broke
 * (tests/unit/test_nfs3_sweep.c). No other module includes it; the
 * invariants are nfs3_read.c's (the top of that file).
 */
#ifndef NFSCACHED_DAEMON_NFS3_READ_IMPL_H
#define NFSCACHED_DAEMON_NFS3_READ_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "daemon.h"
#include "nfs3_read.h"
#include "rangeset.h"

/* READ's state in the daemon: its counters and the READs in flight. */
struct nfs3_read {
	/* READ's counters, by export id (1..NFS3_EXPORT_IDS - 1). */
	struct nfs3_read_stats stats[NFS3_EXPORT_IDS];
	/* READs in flight by step. */
	uint64_t inflight[NFS3_READ_NSTEPS];
	struct fetch *fetches;		/* every fetch, fetch_start to
					 * fetch_free */
	struct read_op *ops;		/* every READ from nfs3_op_read to
					 * op_free */
};

#define FETCH_MAGIC 0x46455443u

struct read_op;

struct fetch {
	uint32_t magic;
	struct daemon *d;
	struct export_rt *ex;
	struct cfile *f;		/* reference */
	struct cfetch *cf;		/* the cache's record, until the reply */
	uint64_t start;			/* first byte asked for */
	struct read_op **waiters;
	size_t nwaiters, cap;
	struct fetch *prev, *next;	/* nfs3_read.fetches */
};

struct read_op {
	struct daemon *d;
	struct req *r;
	struct export_rt *ex;
	struct cfile *f;		/* reference */
	struct nfs_cred uc;
	uint64_t off, end;		/* the window, end clamped at size */
	uint8_t *buf;			/* end - off bytes */
	struct rangeset need;		/* absolute bytes still missing */
	unsigned waiting;		/* fetches this READ waits on */
	enum cache_outcome outcome;
	nfsstat3 err;
	uint64_t cache_bytes;		/* bytes of the reply from pages */
	uint64_t gen;			/* file generation when checked */
	enum nfs3_read_step step;	/* NFS3_READ_NSTEPS before the first */
	unsigned passed;		/* bit s: step s was entered */
	bool bypassed_local;		/* planned again after a BYPASS found
					 * local writes */
	bool stale;			/* on expired attributes: the upstream
					 * is unreachable (stale_on_error) */
	struct read_op *prev, *next;	/* nfs3_read.ops */
};

#endif
