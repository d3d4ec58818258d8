/* SPDX-License-Identifier: MIT */
/*
 * nfs3_write: the NFSv3 WRITE and COMMIT handlers (RFC 1813 sections
 * 3.3.7 and 3.3.21) with write-back absorption, and their counters.
 */
#ifndef NFSCACHED_DAEMON_NFS3_WRITE_H
#define NFSCACHED_DAEMON_NFS3_WRITE_H

#include <stdint.h>

#include "proc_table.h"

struct daemon;
struct req;

/* Counters of WRITE and COMMIT (nfs3_write.c), declared once for struct
 * nfs3_write_stats and for /metrics (rows as in NFS3_OPS_METRICS). */
#define NFS3_WRITE_METRICS(X, A) \
	X(uint64_t, client_writes, counter, "nfscached_client_write_calls_total", \
	  "Client WRITE calls.") \
	X(uint64_t, client_write_bytes, counter, \
	  "nfscached_client_write_bytes_total", "Bytes clients asked to WRITE.") \
	X(uint64_t, client_commits, counter, \
	  "nfscached_client_commit_calls_total", "Client COMMIT calls.") \
	X(uint64_t, commits_local, counter, \
	  "nfscached_client_commits_local_total", \
	  "Client COMMITs answered without an upstream call: nothing of the file was dirty, being written or uncommitted upstream.") \
	X(uint64_t, absorbed, counter, "nfscached_writes_absorbed_total", \
	  "Client WRITEs taken into the cache (write-back).") \
	X(uint64_t, write_through, counter, "nfscached_writes_through_total", \
	  "Client WRITEs sent straight upstream FILE_SYNC (no room in the cache).") \
	X(uint64_t, waited_for_room, counter, \
	  "nfscached_writes_waited_for_room_total", \
	  "Client WRITEs that waited for write-back to free cache room.") \
	X(uint64_t, revalidations, counter, "nfscached_writes_revalidated_total", \
	  "Client WRITEs that sent a GETATTR upstream first.") \
	X(uint64_t, revalidations_shared, counter, \
	  "nfscached_writes_revalidation_shared_total", \
	  "Client WRITEs that took another WRITE's GETATTR of the file instead of sending one.") \
	X(uint64_t, errors_reported, counter, \
	  "nfscached_writeback_errors_reported_total", \
	  "WRITE and COMMIT replies with an error status (a kept write-back failure, NFS3ERR_JUKEBOX, ...).")

/*
 * The named steps of a WRITE, in the order one goes through them (a WRITE
 * may skip steps, goes back to ABSORB after ROOM, and may go THROUGH from
 * any step before JOURNAL): GETATTR (revalidating the file's attributes
 * upstream, its own GETATTR or another WRITE's), ACCESS (asking upstream
 * whether this credential may write, or waiting for another WRITE's
 * ACCESS), ABSORB (writing the bytes into the cache), ROOM (waiting for
 * write-back to free cache room), JOURNAL (a FILE_SYNC or DATA_SYNC
 * WRITE's bytes being synced to the local journal, commit = "local"),
 * WRITEBACK (a FILE_SYNC or DATA_SYNC WRITE waiting for write-back to put
 * its bytes on the upstream's stable storage), THROUGH (sent upstream
 * FILE_SYNC, not absorbed), FENCE (written through, waiting until no
 * journal record can bring older bytes back: lcommit_ack_wait) and REPLY
 * (being answered).
 */
#define NFS3_WRITE_STEPS(X) \
	X(GETATTR, "getattr") \
	X(ACCESS, "access") \
	X(ABSORB, "absorb") \
	X(ROOM, "room") \
	X(JOURNAL, "journal") \
	X(WRITEBACK, "writeback") \
	X(THROUGH, "through") \
	X(FENCE, "fence") \
	X(REPLY, "reply")

enum nfs3_write_step {
#define X(s, name) NFS3_WRITE_##s,
	NFS3_WRITE_STEPS(X)
#undef X
	NFS3_WRITE_NSTEPS
};

/*
 * The named steps of a COMMIT of a file the proxy holds something of:
 * JOURNAL (the file's absorbed bytes being synced to the local journal,
 * commit = "local"), WRITEBACK (waiting for write-back to write the file's
 * bytes and COMMIT them upstream) and REPLY (being answered). A COMMIT of
 * a file the proxy holds nothing of, and cannot answer itself, is
 * forwarded (nfs3_fwd.h) and no longer counted here.
 */
#define NFS3_COMMIT_STEPS(X) \
	X(JOURNAL, "journal") \
	X(WRITEBACK, "writeback") \
	X(REPLY, "reply")

enum nfs3_commit_step {
#define X(s, name) NFS3_COMMIT_##s,
	NFS3_COMMIT_STEPS(X)
#undef X
	NFS3_COMMIT_NSTEPS
};

struct nfs3_write_stats {
#define X(t, f, k, n, h) t f;
	NFS3_WRITE_METRICS(X, )
#undef X
	uint64_t absorbed_bytes;	/* not exported */
	/* Not exported either: WRITEs and COMMITs in flight by step (a
	 * gauge, not a counter). */
	uint64_t write_steps[NFS3_WRITE_NSTEPS];
	uint64_t commit_steps[NFS3_COMMIT_NSTEPS];
};

/*
 * Make d->nfs3_write (the counters above), all zero: at start, before
 * the first WRITE. 0, or -1 (ENOMEM; d->nfs3_write stays NULL). Event
 * loop, before serving.
 */
int nfs3_write_start(struct daemon *d);

/* Free d->nfs3_write and clear it: at shutdown, after write-back stopped
 * (its last waits answer WRITEs). No-op when NULL. Event loop. */
void nfs3_write_stop(struct daemon *d);

/* Copy d's WRITE/COMMIT counters into *st (zeros without
 * nfs3_write_start). Event loop (metrics, tests). */
void nfs3_write_stats_get(const struct daemon *d, struct nfs3_write_stats *st);

/* The lower-case name of WRITE step s ("room"), or "?" if out of
 * range. */
const char *nfs3_write_step_name(enum nfs3_write_step s);

/* The lower-case name of COMMIT step s ("writeback"), or "?" if out of
 * range. */
const char *nfs3_commit_step_name(enum nfs3_commit_step s);

/* How many of d's WRITEs are in each step now, into
 * n[0..NFS3_WRITE_NSTEPS) (zeros without nfs3_write_start).
 * From the event loop (for `nfscached cache status`). */
void nfs3_write_steps_inflight(const struct daemon *d,
			       uint64_t n[NFS3_WRITE_NSTEPS]);

/* How many of d's COMMITs are in each step now, into
 * n[0..NFS3_COMMIT_NSTEPS) (zeros without nfs3_write_start).
 * From the event loop (for `nfscached cache status`). */
void nfs3_commit_steps_inflight(const struct daemon *d,
				uint64_t n[NFS3_COMMIT_NSTEPS]);

/* WRITE r (arguments decoded, client handles). OP_PENDING or OP_DONE. */
enum op_status nfs3_op_write(struct req *r);

/* COMMIT r: waits for the file's write-back; answered at once when the
 * proxy holds nothing of the file to commit and knows the credential may
 * write it; else forwarded. OP_PENDING or OP_DONE. */
enum op_status nfs3_op_commit(struct req *r);

#endif
