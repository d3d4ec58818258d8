/* SPDX-License-Identifier: MIT */
/*
 * cred: the one credential type. An AUTH_SYS identity (RFC 5531 appendix
 * A): what a client call carried (rpcmsg.h, after the call header's
 * decoding), what an upstream call is made as (upstream.h), and the key of
 * the cache's per-credential ACCESS results and write-back runs (cache.h).
 * Header only, no XDR, so that cache/ may include it.
 */
#ifndef NFSCACHED_PROTO_CRED_H
#define NFSCACHED_PROTO_CRED_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define NFS_CRED_MAX_GIDS	16	/* AUTH_SYS carries at most 16 */

struct nfs_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;				/* <= NFS_CRED_MAX_GIDS */
	uint32_t gids[NFS_CRED_MAX_GIDS];
	const char *machine;	/* AUTH_SYS machine name for an upstream
				 * call, borrowed for the call (NULL:
				 * "nfscached"); not part of the identity:
				 * nfs_cred_eq ignores it and the cache
				 * never keeps it */
};

/* Whether a and b are the same identity (uid, gid and groups in order;
 * the machine name does not count). */
static inline bool nfs_cred_eq(const struct nfs_cred *a,
			       const struct nfs_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->ngids == b->ngids &&
	       !memcmp(a->gids, b->gids, a->ngids * sizeof(a->gids[0]));
}

#endif
