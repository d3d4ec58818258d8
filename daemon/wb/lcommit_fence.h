/* SPDX-License-Identifier: MIT */
/*
 * lcommit_fence: the journal's fence (commit = "local", lcommit.c;
 * docs/disk-tier.md "Local commit", "The tier turned off at run time").
 * A fence says "every journal record of journal `id` with a sequence
 * number <= hi is superseded, except the records of the files listed
 * in keep": their bytes were made stable upstream, and later bytes
 * acknowledged, after the journal could no longer delete them. A start
 * skips and deletes the records a fence covers instead of replaying
 * them over newer data.
 *
 * A fence is one block of LCF_SIZE bytes, with an XXH3-64 checksum, at
 * offset 0 of a file named LCF_NAME, kept in two places: cache_dir and
 * state_dir (often another filesystem; it survives a read-only or full
 * cache_dir). Each file is created and filled with real zero bytes at
 * start (lcommit_fence_prepare), so that writing a fence later only
 * overwrites allocated blocks and works on a full filesystem.
 */
#ifndef NFSCACHED_DAEMON_LCOMMIT_FENCE_H
#define NFSCACHED_DAEMON_LCOMMIT_FENCE_H

#include <stdbool.h>
#include <stdint.h>

#define LCF_NAME	"journal.fence"
#define LCF_SIZE	4096		/* bytes of the file and the block */
#define LCF_KEEP_MAX	48		/* files a fence can leave out */
#define LCF_FH_MAX	64		/* DISK_FH_MAX */

/* A file whose records a fence leaves out (its upstream handle). */
struct lcommit_fence_fh {
	uint8_t len;			/* 1..LCF_FH_MAX */
	uint8_t fh[LCF_FH_MAX];
};

/* What a fence asserts (in memory; the block adds magic and checksum). */
struct lcommit_fence {
	uint64_t id;			/* the journal's identity (meta db) */
	uint64_t hi;			/* records with seq <= hi superseded */
	uint32_t nkeep;
	struct lcommit_fence_fh keep[LCF_KEEP_MAX];
};

/*
 * Create dir/LCF_NAME if absent (mode 0600), filled with LCF_SIZE zero
 * bytes and fsynced, the directory fsynced too; an existing file is left
 * as it is. Start only (blocks on the disk). 0, or -1 with errno.
 */
int lcommit_fence_prepare(const char *dir);

/*
 * Read dir/LCF_NAME into *out. 1 when it holds a valid fence (magic,
 * checksum, bounds) of journal id, 0 when none (absent, zeros, another
 * journal's, damaged), -1 with errno when it cannot be read. Start only.
 */
int lcommit_fence_read(const char *dir, uint64_t id,
		       struct lcommit_fence *out);

/*
 * Overwrite dir/LCF_NAME's block with fz in place (pwrite of LCF_SIZE
 * bytes at 0, fdatasync; the file must exist: no new block is needed).
 * Blocks on the disk for one write and one fdatasync. 0, or -1 with
 * errno.
 */
int lcommit_fence_write(const char *dir, const struct lcommit_fence *fz);

/* True when fz covers record seq of the file fh (fh_len bytes). */
bool lcommit_fence_covers(const struct lcommit_fence *fz, uint64_t seq,
			  const uint8_t *fh, size_t fh_len);

#endif
