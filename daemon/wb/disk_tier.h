/* SPDX-License-Identifier: MIT */
/*
 * disk_tier: the daemon's use of the disk page store (disk/disk.h,
 * docs/disk-tier.md): opening it from cache_dir, watching its completion
 * eventfd on the event loop, the hooks of the READ path (a fill from the
 * upstream is stored; a RAM miss or a readahead window looks on disk
 * first), and its metrics. One tier per daemon, its state owned by
 * struct daemon (d->disk_tier: made by disk_tier_start, freed by
 * disk_tier_stop); every call is a no-op while no tier is open. Every
 * function here is called from the daemon's event loop only. The store's
 * page buffers are lent by the cache (cache_loan_get: queued store copies
 * and loads count against cache_size); the store's worker threads touch
 * only those, never a cache page (disk_tier.c, "Memory").
 */
#ifndef NFSCACHED_DAEMON_DISK_TIER_H
#define NFSCACHED_DAEMON_DISK_TIER_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "disk.h"

struct daemon;
struct evbuffer;

/*
 * Open the tier in d->conf->cache_dir (nothing when it is ""), with
 * disk_cache_size and page_size, and watch it on d->base: d->disk_tier,
 * owned by d until disk_tier_stop, counting from 0 with its test gate
 * open. d->cache must exist (its page size sizes the tier's page buffer).
 * 0 (d->disk_tier set, or left NULL without cache_dir), or -1 with a
 * reason in err[0..len) and d->disk_tier left NULL (the caller refuses to
 * start): the store did not open (disk_open's reason), its eventfd could
 * not be watched, or out of memory. d->tier_off and d->tier_kept
 * (daemon.h) are called when set: set them before. Loop thread, before
 * serving (lifecycle.c's daemon_start).
 */
int disk_tier_start(struct daemon *d, char *err, size_t len);

/* Close d's tier and free d->disk_tier (NULL after; nothing when none):
 * loads still queued complete first as misses, with every disk_tier_*
 * call from their callbacks seeing no tier. The fence waiters of local
 * commit are answered first by the caller (lcommit_fence_stop). Loop
 * thread, once the loop no longer serves (daemon_stop). */
void disk_tier_stop(struct daemon *d);

/*
 * The upstream returned data[0..len) of f at off with post-operation
 * attributes a (the version those bytes belong to), and the cache has
 * taken them in: store each page they touch as disk_tier_describe
 * describes it (so a page completed by a second READ is stored whole, and
 * known holes are stored as holes, without data bytes). Called while f's
 * generation holds. Each page's copy is a page lent by the cache (it may
 * evict a clean page); a store is dropped (counted) only when the cache
 * has nothing to lend.
 */
void disk_tier_filled(struct daemon *d, struct cfile *f, uint64_t off,
		      const uint8_t *data, uint64_t len, const struct cattr *a);

/*
 * Describe page pgi of f for the disk, as the cache knows it at version a
 * (a READ reply's post-operation attributes): the valid ranges are the
 * page's clean bytes in RAM (cfile_page_clean) and the part of data[0..len)
 * at off inside the page (a reply's bytes, which may have found no room in
 * RAM; len 0 for none), less f's known holes there (cfile_holes_in), which
 * are the holes; all clipped to the page and to a->size, page-relative.
 * Holes beyond the first DISK_MAX_RANGES - 1 are described as valid
 * zeros instead, and valid ranges beyond the first DISK_MAX_RANGES are
 * left out (a subset of the valid bytes is still valid). The valid bytes are
 * copied into buf (page_size bytes, the caller's); pg->data is buf, or
 * NULL when no byte is valid: a page that is all hole stores no data
 * bytes. pg->attr is a's version. Returns false when the page has nothing
 * to store (no valid byte, no hole: past a->size, or unknown). Never fails
 * otherwise; on ENOMEM fewer ranges are described (never a wrong one).
 * disk_tier_load's fill is the inverse: holes into f's hole set
 * (cfile_hole_add), valid bytes into the page.
 */
bool disk_tier_describe(const struct cache *c, const struct cfile *f,
			uint64_t pgi, uint64_t off, const uint8_t *data,
			uint64_t len, const struct cattr *a, uint8_t *buf,
			struct disk_page *pg);

/*
 * Wait (blocking) until every disk operation submitted so far to d's tier
 * is done and its callback ran (disk_drain); nothing when no tier is
 * open. For tests only, on the thread of d's loop, never from a serving
 * loop.
 */
void disk_tier_drain(struct daemon *d);

/* d's store, borrowed until disk_tier_stop, or NULL without a disk tier
 * (and while disk_tier_stop closes it). lcommit.c uses its journal and
 * stale.c its outage records. */
struct disk *disk_tier_disk(const struct daemon *d);

/* The disk key of page pg of f; false if f's handle does not fit
 * (DISK_FH_MAX). */
struct disk_key;
bool disk_tier_key(const struct cfile *f, uint64_t pg, struct disk_key *k);

/*
 * Drop every page d's disk tier holds of the file with upstream handle
 * fh[0..len) (borrowed for the call; `nfscached cache forget`, a reload's
 * retired export); asynchronous, nothing when there is no tier, it is
 * off, or len is over 255. The pages are clean copies: nothing is lost.
 */
void disk_tier_forget(struct daemon *d, const uint8_t *fh, size_t len);

/* Drop every page d's disk tier holds (`nfscached cache drop`);
 * asynchronous, nothing when there is no tier or it is off. Locally
 * committed data (commit = "local", its journal) is kept. */
void disk_tier_drop_all(struct daemon *d);

/* Called once when the disk loads of a disk_tier_load are all back. */
typedef void disk_tier_done_fn(void *arg);

/*
 * Look on disk for the pages of f that the n ranges cover and that the
 * tier holds; each page found whose stored attributes equal f's current
 * ones is filled into the cache (readahead: as a prefetch), its holes
 * into f's hole set. A page whose
 * attributes differ means the file changed: all its disk pages are
 * dropped. Unless readahead is set, while the tier is congested
 * (disk_tier_congested) the call also waits for room: until the stores
 * holding a copy fall below disk_tier_store_cap (then every READ waiting
 * is let go, oldest first), so that the fetch the caller
 * makes next does not outrun the disk (backpressure: a store is never
 * dropped for it). Returns true when loads were sent or the call waits
 * for room: done(arg) is then called once, from the loop, when they are
 * all back and the room has come (f's generation may have changed
 * meanwhile: then nothing is filled). false: nothing to load or wait for,
 * done is never called.
 */
bool disk_tier_load(struct daemon *d, struct cfile *f, const struct range *r,
		    size_t n, bool readahead, disk_tier_done_fn *done, void *arg);

/*
 * The number of stores holding a copy of their page (each lent by the
 * cache: cache_loan_get) at which the tier is congested, for a cache of
 * max_pages pages: a quarter of them, at least 1; 0 (never congested)
 * for a cache of no page, whose stores find no buffer and are dropped.
 */
uint64_t disk_tier_store_cap(uint64_t max_pages);

/*
 * True while d's tier is on and its stores hold disk_tier_store_cap
 * copies or more (the disk is slower than the fills): a READ's fetch
 * waits for room in disk_tier_load, and readahead should fetch nothing
 * from the upstream meanwhile (its stores would have to wait too).
 */
bool disk_tier_congested(const struct daemon *d);

/*
 * For readahead: load from disk the pages of f in *rest that the tier
 * holds (as disk_tier_load, no callback) and remove them from *rest, so
 * only the others are fetched upstream.
 */
void disk_tier_take(struct daemon *d, struct cfile *f, struct rangeset *rest);

/* Fill *st with d's tier's counters and gauges (disk_stats_get, hits
 * counting only the pages used); false, with *st zeroed, when no tier is
 * open. */
bool disk_tier_stats(const struct daemon *d, struct disk_stats *st);

/* What disk_tier_gate does to the test gate. */
enum disk_tier_gate_action {
	DISK_TIER_GATE_STATUS,		/* nothing: read the state */
	DISK_TIER_GATE_CLOSE,		/* disk_gate_close */
	DISK_TIER_GATE_OPEN		/* disk_gate_open */
};

/*
 * Tests only (POST /debug/disk/gate, metrics.c, with the test clock on):
 * act on the tier's test gate (disk.h: while closed, each worker thread
 * holds the operation it took, or its batch of up to 32 stores, before it
 * touches the disk; opening releases them), then store in *closed whether
 * the gate is closed and in *held how many workers hold work at it now
 * (0..2: the reader's one load, the writer's one batch). Closing a closed
 * gate or opening an open one changes nothing. The gate's state is d's
 * tier's and lasts until it is stopped, which releases what it holds (a
 * tier that turned OFF keeps its gate; a new tier's is open). 0, or -1
 * (nothing done, *closed and *held untouched) when d has no tier open.
 */
int disk_tier_gate(struct daemon *d, enum disk_tier_gate_action a,
		   bool *closed, unsigned *held);

/* Append d's tier's metrics to o (docs/metrics.md, "Disk tier"; only
 * nfscached_disk_on 0 without a tier). */
void disk_tier_render(const struct daemon *d, struct evbuffer *o);

#endif
