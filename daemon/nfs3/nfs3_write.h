/* SPDX-License-Identifier: MIT */
/*
 * nfs3_write: the NFSv3 WRITE and COMMIT handlers (RFC 1813 sections
 * 3.3.7 and 3.3.21) with write-back absorption, and their counters.
 */
#ifndef NFSCACHED_DAEMON_NFS3_WRITE_H
#define NFSCACHED_DAEMON_NFS3_WRITE_H

#include <stdint.h>

#include "dispatch.h"

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

struct nfs3_write_stats {
#define X(t, f, k, n, h) t f;
	NFS3_WRITE_METRICS(X, )
#undef X
	uint64_t absorbed_bytes;	/* not exported */
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

/* WRITE r (arguments decoded, client handles). OP_PENDING or OP_DONE. */
enum op_status nfs3_op_write(struct req *r);

/* COMMIT r: waits for the file's write-back; answered at once when the
 * proxy holds nothing of the file to commit and knows the credential may
 * write it; else forwarded. OP_PENDING or OP_DONE. */
enum op_status nfs3_op_commit(struct req *r);

#endif
