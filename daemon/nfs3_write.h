/* SPDX-License-Identifier: MIT */
/*
 * nfs3_write: the NFSv3 WRITE and COMMIT handlers (RFC 1813 sections
 * 3.3.7 and 3.3.21) with write-back absorption, and their counters.
 */
#ifndef NFSCACHED_DAEMON_NFS3_WRITE_H
#define NFSCACHED_DAEMON_NFS3_WRITE_H

#include <stdint.h>

#include "dispatch.h"

struct req;

/* Counters of WRITE and COMMIT (nfs3_write.c). */
struct nfs3_write_stats {
	uint64_t client_writes;		/* client WRITE calls */
	uint64_t client_write_bytes;
	uint64_t client_commits;	/* client COMMIT calls */
	uint64_t absorbed;		/* WRITEs taken into the cache */
	uint64_t absorbed_bytes;
	uint64_t write_through;		/* WRITEs passed through (no room) */
	uint64_t waited_for_room;	/* WRITEs that waited for write-back
					 * to free cache room */
	uint64_t revalidations;		/* GETATTRs sent before a WRITE */
	uint64_t revalidations_shared;	/* WRITEs that took another WRITE's
					 * GETATTR instead of their own */
	uint64_t errors_reported;	/* WRITE/COMMIT replies with an error */
};

/* Copy the WRITE/COMMIT counters into *st. */
void nfs3_write_stats_get(struct nfs3_write_stats *st);

/* WRITE r (arguments decoded, client handles). OP_PENDING or OP_DONE. */
enum op_status nfs3_op_write(struct req *r);

/* COMMIT r: waits for the file's write-back, or is forwarded when the
 * proxy holds nothing of the file. OP_PENDING or OP_DONE. */
enum op_status nfs3_op_commit(struct req *r);

#endif
