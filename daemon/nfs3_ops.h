/* SPDX-License-Identifier: MIT */
/* nfs3_ops: counters of the NFSv3 handlers (handlers are in ops.h). */
#ifndef NFSCACHED_DAEMON_NFS3_OPS_H
#define NFSCACHED_DAEMON_NFS3_OPS_H

#include <stdint.h>

struct nfs3_ops_stats {
	uint64_t jukebox;	/* NFS3ERR_JUKEBOX replies (upstream unable) */
	uint64_t badhandle;	/* handles that failed to unwrap */
	uint64_t stale;		/* handles naming no configured export */
};

/* Copy the counters into *st. */
void nfs3_ops_stats_get(struct nfs3_ops_stats *st);

#endif
