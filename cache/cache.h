/* SPDX-License-Identifier: MIT */
/*
 * cache: the proxy's file cache (DESIGN.md "Cache model"). Pure: no
 * sockets, no XDR, no libevent, no clock reads; callers pass `now` in
 * seconds of a monotonic clock.
 *
 * A cfile is one upstream file handle: its attributes with their adaptive
 * timeout, per-credential ACCESS results, pages, and (later) holes. A
 * cpage is a page_size-aligned piece of the file with a data buffer and
 * the exact set of byte ranges in it that are valid (several per page,
 * merged when they touch). Valid bytes are never overwritten by fetched
 * data; a write overwrites what it writes.
 *
 * Eviction works on a global byte budget of page data with 2Q (Johnson and
 * Shasha, VLDB 1994): a page enters a FIFO probation queue (A1in, a quarter
 * of the budget); hits there do not promote it (correlated references, a
 * sequential scan touches a page several times in a row). A page pushed out
 * of A1in leaves a ghost entry (A1out); if it is fetched again while its
 * ghost is remembered, it enters the protected LRU (Am). So a scan flows
 * through A1in and never displaces the re-used working set in Am.
 */
#ifndef NFSCACHED_CACHE_CACHE_H
#define NFSCACHED_CACHE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rangeset.h"

struct cache;
struct cfile;

#define CACHE_FH_MAX		64	/* longest upstream handle, bytes */
#define CACHE_PAGE_MIN		4096
#define CACHE_PAGE_MAX		(1024 * 1024)
#define CACHE_MAX_GIDS		16
#define CACHE_ACCESS_SLOTS	8	/* credentials remembered per file */

/* The named outcome of a client READ; also the metric label. */
#define CACHE_OUTCOMES(X) \
	X(CACHE_HIT, "hit") \
	X(CACHE_PARTIAL, "partial") \
	X(CACHE_MISS, "miss") \
	X(CACHE_HOLE, "hole") \
	X(CACHE_COALESCED, "coalesced") \
	X(CACHE_BYPASS, "bypass")

enum cache_outcome {
#define X(e, s) e,
	CACHE_OUTCOMES(X)
#undef X
	CACHE_NOUTCOMES
};

/* Lower-case label of an outcome ("hit", ...). */
const char *cache_outcome_name(enum cache_outcome o);

struct ctime3 {
	uint32_t sec;
	uint32_t nsec;
};

/* File attributes as RFC 1813 fattr3 carries them (plain types). */
struct cattr {
	uint32_t type;		/* ftype3: 1 regular, 2 directory, ... */
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;		/* bytes */
	uint64_t used;		/* bytes */
	uint32_t rdev1, rdev2;
	uint64_t fsid;
	uint64_t fileid;
	struct ctime3 atime, mtime, ctime;
};

/* Pre-operation attributes (RFC 1813 wcc_attr). */
struct cwcc {
	uint64_t size;
	struct ctime3 mtime, ctime;
};

/* Attribute cache timeouts for one file, seconds (acregmin/acregmax or
 * acdirmin/acdirmax, as the Linux client's mount options). 0/0 = noac. */
struct cache_ac {
	double min;
	double max;
};

/* An AUTH_SYS identity, for the per-credential ACCESS cache. */
struct ccred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[CACHE_MAX_GIDS];
};

struct cache_params {
	uint32_t page_size;	/* power of two, CACHE_PAGE_MIN..MAX bytes */
	uint64_t budget;	/* bytes of page data; 0 caches nothing */
};

/* Counters and gauges this module owns (cache_stats_get). */
struct cache_stats {
	uint64_t files;			/* gauge: cfiles held */
	uint64_t pages;			/* gauge: cpages held */
	uint64_t page_bytes;		/* gauge: page data allocated */
	uint64_t valid_bytes;		/* gauge: bytes valid in pages */
	uint64_t meta_bytes;		/* gauge: metadata (cfile, cpage,
					 * range arrays, ghosts) */
	uint64_t budget;		/* configured budget, bytes */
	uint64_t evictions;		/* pages evicted for room */
	uint64_t invalidations;		/* files dropped: another writer */
	uint64_t fill_skipped;		/* fills not stored: no room */
	uint64_t promotions;		/* pages admitted to Am */
};

/*
 * Create a cache. Returns NULL if page_size is not a power of two in
 * [CACHE_PAGE_MIN, CACHE_PAGE_MAX] or on ENOMEM. Free with cache_free.
 */
struct cache *cache_new(const struct cache_params *p);

/* Free *c and everything in it; clears the caller's pointer. */
void cache_free(struct cache **c);

/* The page size, bytes. */
uint32_t cache_page_size(const struct cache *c);

/*
 * The file for upstream handle fh[0..len) (len 1..CACHE_FH_MAX), created
 * if absent. Returns a counted reference the caller drops with cfile_put,
 * or NULL on ENOMEM or a bad length.
 */
struct cfile *cache_get(struct cache *c, const uint8_t *fh, size_t len);

/* The file for fh if the cache has it (a counted reference), else NULL. */
struct cfile *cache_find(struct cache *c, const uint8_t *fh, size_t len);

/*
 * The file's generation: it changes whenever cached state may have been
 * overtaken (an own mutation completed, data dropped or truncated). A
 * caller records it when sending an upstream call and, if it differs when
 * the reply arrives, neither fills nor observes with that reply.
 */
uint64_t cfile_gen(const struct cfile *f);

/*
 * A pointer slot for the cache's user (the daemon keeps its fetches in
 * flight here). The cache never reads it, and keeps the file while the
 * slot is non-NULL.
 */
void **cfile_owner_slot(struct cfile *f);

/* Drop a reference and clear the caller's pointer. A file without
 * references, pages or attributes may then be freed. */
void cfile_put(struct cache *c, struct cfile **f);

/* ---- attributes ---- */

/* True once attributes were recorded (and not dropped since). */
bool cfile_has_attr(const struct cfile *f);

/* The cached attributes (valid only if cfile_has_attr). Borrowed. */
const struct cattr *cfile_attr(const struct cfile *f);

/* True while the attributes are within their timeout at now. */
bool cfile_attr_fresh(const struct cfile *f, double now);

/* The current attribute timeout, seconds (adaptive, within ac). */
double cfile_attr_timeout(const struct cfile *f);

/*
 * Record attributes a reply carried for a call that changed nothing
 * (GETATTR, LOOKUP, ACCESS, READ, ...). If size, mtime or ctime differ
 * from the cached ones, another writer changed the file: its cached data,
 * holes and ACCESS results are dropped and the timeout restarts at
 * ac->min; unchanged attributes double the timeout up to ac->max (the
 * Linux client's nfs_refresh_inode / attrtimeo rule). While the proxy's
 * own mutations of this file are in flight, attributes that match none
 * of its own recent states are ignored (the reply may predate or race a
 * mutation). Returns true if cached data was dropped.
 */
bool cfile_attr_observe(struct cache *c, struct cfile *f,
			const struct cattr *a, double now,
			const struct cache_ac *ac);

/* Mark the attributes stale so the next use revalidates them. */
void cfile_attr_expire(struct cfile *f);

/* Count one of the proxy's own mutating calls on f as in flight. */
void cfile_mutation_begin(struct cfile *f);

/*
 * The reply of an own mutation arrived (or failed: pre and post NULL).
 * pre (wcc before, may be NULL when the server sent none) tells whether
 * the file was as the proxy knew it: if pre matches the cached attributes
 * or one of the proxy's own recent post-states, the change is the
 * proxy's own and cached data stays; otherwise (or when pre is absent and
 * the proxy cannot tell) the file's clean data is dropped. post (may be
 * NULL) becomes the cached attributes and is remembered as an own state.
 * Returns true if cached data was dropped.
 */
bool cfile_mutation_end(struct cache *c, struct cfile *f,
			const struct cwcc *pre, const struct cattr *post,
			double now, const struct cache_ac *ac);

/* ---- access ---- */

/*
 * Record an ACCESS result (RFC 1813 section 3.3.4): cr asked for `asked`
 * bits and got `granted`. Kept until the file's attributes change.
 */
void cfile_access_record(struct cfile *f, const struct ccred *cr,
			 uint32_t asked, uint32_t granted);

/* True if cr is known to hold every bit of `bits` on f. */
bool cfile_access_allows(const struct cfile *f, const struct ccred *cr,
			 uint32_t bits);

/* ---- data ---- */

/*
 * Plan a READ of count bytes at off against the cached size (attributes
 * must be present). *end receives the window's end, min(off + count,
 * size) (equal to off when off >= size). Returns CACHE_HIT when every
 * byte of [off, *end) is valid (an empty window is a hit), CACHE_HOLE when
 * every byte is in a hole, else CACHE_PARTIAL or CACHE_MISS (no byte
 * valid) with the ranges to fetch in fetch[0..max): the missing bytes of
 * every page the window touches, clamped at the size, merged across page
 * boundaries, in order. *nfetch receives their total number (may exceed
 * max; the caller then plans again after fetching).
 */
enum cache_outcome cache_plan_read(struct cache *c, struct cfile *f,
				   uint64_t off, uint32_t count,
				   uint64_t *end, struct range *fetch,
				   size_t max, size_t *nfetch);

/*
 * Copy the valid bytes of [off, off + len) into out (len bytes, the
 * caller's; bytes not valid are left as they are) and return how many
 * were copied. Counts as a use of the pages for eviction.
 */
uint64_t cache_copy(struct cache *c, struct cfile *f, uint64_t off,
		    uint64_t len, uint8_t *out);

/*
 * Store fetched data[0..len) at off without overwriting bytes already
 * valid (DESIGN.md: fetched data never overwrites valid bytes). Pages are
 * allocated as needed, evicting others to stay within the budget; what
 * finds no room is not stored (counted). Never fails.
 */
void cache_fill(struct cache *c, struct cfile *f, uint64_t off,
		const uint8_t *data, uint64_t len);

/*
 * Store data a client wrote (and the upstream acknowledged) at off,
 * overwriting, and mark it valid. Like cache_fill for room.
 */
void cache_write(struct cache *c, struct cfile *f, uint64_t off,
		 const uint8_t *data, uint64_t len);

/*
 * The file's size became size (SETATTR, or a truncating CREATE): drop
 * cached bytes at and past it. Attributes are the caller's business.
 */
void cfile_truncate(struct cache *c, struct cfile *f, uint64_t size);

/* Drop the file's cached data, holes and ACCESS results. */
void cfile_invalidate(struct cache *c, struct cfile *f);

/* Bytes valid in the file's pages (for tests). */
uint64_t cfile_valid_bytes(const struct cfile *f);

/* Copy the counters into *st. */
void cache_stats_get(const struct cache *c, struct cache_stats *st);

/* Bytes of metadata per cached page (struct cpage and its hash entry). */
size_t cache_page_meta_bytes(void);

/* Assert every invariant of c (debug builds and tests); true if sound. */
bool cache_check(const struct cache *c);

#endif
