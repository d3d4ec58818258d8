/* SPDX-License-Identifier: MIT */
/*
 * cache: the proxy's file cache (docs/design.md "Cache model"). Pure: no
 * sockets, no XDR, no libevent, no clock reads; callers pass `now` in
 * seconds of a monotonic clock.
 *
 * A cfile is one upstream file handle: its attributes with their adaptive
 * timeout, per-credential ACCESS results, GETACL replies by mask (NFSACL,
 * opaque bytes, within budget / CACHE_ACL_BUDGET_SHARE), pages and holes. A
 * cpage is a page_size-aligned piece of the file with a data buffer and
 * the exact set of byte ranges in it that are valid (several per page,
 * merged when they touch). Valid bytes are never overwritten by fetched
 * data; a write overwrites what it writes.
 *
 * Eviction works on a global byte budget of pages, each charged its data
 * and its metadata (cache_page_meta_bytes), with 2Q (Johnson and
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

#include "cred.h"
#include "rangeset.h"
#include "readahead.h"

struct cache;
struct cfile;
struct cfetch;
struct fstate;		/* the cache user's per-file state (the daemon's
			 * daemon/wb/fstate.h); opaque to the cache */

#define CACHE_FH_MAX		64	/* longest upstream handle, bytes */
#define CACHE_PAGE_MIN		4096
#define CACHE_PAGE_MAX		(1024 * 1024)
#define CACHE_ACCESS_SLOTS	8	/* credentials remembered per file */
#define CACHE_ACL_SLOTS		4	/* GETACL replies kept per file (one
					 * per mask asked) */
#define CACHE_ACL_MAX		4096	/* bytes: a longer GETACL reply is
					 * not kept */
#define CACHE_ACL_BUDGET_SHARE	64	/* GETACL replies of all files take
					 * at most budget / this */
/*
 * Bytes at or past this offset (2^63 - 1, the largest off_t, which caps a
 * file on every POSIX upstream) are never cached: callers send such READs
 * and WRITEs through, so page and range arithmetic never nears 2^64.
 */
#define CACHE_MAX_OFFSET	((uint64_t)INT64_MAX)

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

/*
 * Why a file's cached data was dropped as another writer's change, and
 * the metric label of each (nfscached_cache_invalidations_by_cause_total):
 * a reply's attributes (GETATTR, LOOKUP, READ, ...) that no own call
 * produced, or an own call's pre-operation attributes (wcc_data) that
 * showed the file changed before it.
 */
#define CACHE_INVAL_CAUSES(X) \
	X(CACHE_INVAL_ATTRIBUTES, "attributes") \
	X(CACHE_INVAL_WCC, "wcc")

enum cache_inval_cause {
#define X(e, s) e,
	CACHE_INVAL_CAUSES(X)
#undef X
	CACHE_INVAL_NCAUSES
};

/* Label of a cause ("attributes", ...). */
const char *cache_inval_cause_name(enum cache_inval_cause k);

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

/* Write-back state of cached bytes (docs/design.md "Write semantics"). */
enum cache_wb_state {
	WB_CLEAN = 0,	/* equal to the upstream's stable copy */
	WB_DIRTY,	/* a client wrote it; not yet sent upstream */
	WB_WRITING,	/* in an upstream WRITE not yet answered */
	WB_UNSTABLE,	/* written upstream UNSTABLE under a verifier,
			 * not yet committed there: pinned */
	WB_NSTATES
};

/* A run of dirty bytes chosen for one upstream WRITE. */
struct cache_wb_run {
	uint64_t off;		/* file offset, bytes */
	uint32_t len;		/* bytes, <= the wtmax asked for */
	uint32_t seq;		/* names the run in cache_wb_done */
	struct nfs_cred cred;	/* the last writer of every byte in it */
};

/* How an upstream WRITE of a run ended. */
enum cache_wb_result {
	CACHE_WB_UNSTABLE,	/* OK, committed UNSTABLE under verf */
	CACHE_WB_STABLE,	/* OK, committed FILE_SYNC or DATA_SYNC */
	CACHE_WB_RETRY,		/* no answer (upstream down, JUKEBOX):
				 * the bytes are dirty again */
	CACHE_WB_FAILED,	/* a hard error (NOSPC, DQUOT, ACCES,
				 * STALE, ...): the bytes are dropped and
				 * the error is kept for the file */
};

struct cache_params {
	uint32_t page_size;	/* power of two, CACHE_PAGE_MIN..MAX bytes */
	uint64_t budget;	/* bytes of pages with their metadata;
				 * 0 caches nothing */
	uint32_t hole_granularity;	/* power of two, bytes: aligned
					 * all-zero blocks of fetched data
					 * become holes; 0 turns it off */
	uint64_t max_files;	/* file records kept: past it, the least
				 * recently used file that has no pages,
				 * no write-back state, no error to report
				 * and no user is forgotten; 0: no limit */
	bool preallocate;	/* fault the budget's page memory in at
				 * start, on the page pool's thread
				 * (pagepool.h, "Preallocate") */
};

/*
 * Counters and gauges this module owns (cache_stats_get), declared once
 * for struct cache_stats and for /metrics (HACKING.md "Adding a
 * counter"): X(C type, field, Prometheus type, metric name, help) is one
 * value; A(field, length, Prometheus type, metric name, label, label set,
 * help) an array of uint64_t, one series per index, the label's value
 * named by the label set (daemon/ctl/metrics.c). A name may carry fixed
 * labels ("family{k=\"v\"}"); a row whose help is NULL continues the
 * previous row's family.
 */
#define CACHE_METRICS(X, A) \
	X(uint64_t, hole_bytes, gauge, "nfscached_cache_hole_bytes", \
	  "Bytes recorded as known zeros (holes), held without page memory.") \
	X(uint64_t, zero_blocks, counter, "nfscached_cache_zero_blocks_total", \
	  "All-zero blocks of fetched data recorded as holes instead of stored.") \
	X(uint64_t, wb_pinned_pages, gauge, "nfscached_cache_pinned_pages", \
	  "Pages that hold bytes not yet committed upstream (not evictable).") \
	X(uint64_t, dirty_files, gauge, "nfscached_cache_dirty_files", \
	  "Files holding bytes not yet committed upstream.") \
	X(uint64_t, wb_resend_bytes, counter, \
	  "nfscached_writeback_resent_bytes_total", \
	  "Bytes written upstream again because the upstream's write verifier changed.") \
	X(uint64_t, wb_failed_bytes, counter, \
	  "nfscached_writeback_failed_bytes_total", \
	  "Bytes dropped because their write-back failed.") \
	X(uint64_t, ra_filled_bytes, counter, \
	  "nfscached_readahead_fetched_bytes_total", \
	  "Bytes readahead brought into the cache.") \
	X(uint64_t, ra_used_bytes, counter, "nfscached_readahead_used_bytes_total", \
	  "Prefetched bytes whose page a client READ then used.") \
	X(uint64_t, ra_wasted_bytes, counter, \
	  "nfscached_readahead_wasted_bytes_total", \
	  "Prefetched bytes dropped before any client READ used them.") \
	X(uint64_t, page_bytes, gauge, "nfscached_cache_page_bytes", \
	  "Memory held by page buffers (pages times page_size).") \
	X(uint64_t, loan_bytes, gauge, "nfscached_cache_loan_bytes", \
	  "Page buffers lent out of the budget (the disk tier's queued stores and loads, and the buffers of pages dropped while a reply still referenced them), each charged as a page.") \
	X(uint64_t, lends, counter, "nfscached_cache_page_lends_total", \
	  "READ replies given a page's memory by reference instead of a copy (with threads > 1 copied once to reach the connection's loop).") \
	X(uint64_t, pool_bytes, gauge, "nfscached_cache_page_pool_bytes", \
	  "Memory mapped for page buffers: whole 2 MiB chunks, free slots included.") \
	X(uint64_t, pool_inline_chunks, counter, \
	  "nfscached_cache_page_pool_inline_chunks_total", \
	  "Page pool chunks the serving thread faulted in itself, none being ready ahead.") \
	X(uint64_t, budget, gauge, "nfscached_cache_budget_bytes", \
	  "Configured budget for pages with their metadata (cache_size).") \
	X(uint64_t, page_cost, gauge, "nfscached_cache_page_cost_bytes", \
	  "Bytes each page is charged against the budget: page_size plus its metadata.") \
	X(uint64_t, pages, gauge, "nfscached_cache_pages", "Pages held.") \
	X(uint64_t, files, gauge, "nfscached_cache_files", \
	  "Files the cache knows.") \
	X(uint64_t, files_forgotten, counter, \
	  "nfscached_cache_files_forgotten_total", \
	  "Idle file records freed to stay within max_files.") \
	X(uint64_t, meta_bytes, gauge, "nfscached_cache_metadata_bytes", \
	  "Memory held by cache metadata (files, pages, range sets).") \
	X(uint64_t, evictions, counter, "nfscached_cache_evictions_total", \
	  "Pages evicted to stay within the budget.") \
	X(uint64_t, invalidations, counter, "nfscached_cache_invalidations_total", \
	  "Files whose cached data was dropped because another writer changed them.") \
	A(invalidations_by, CACHE_INVAL_NCAUSES, counter, \
	  "nfscached_cache_invalidations_by_cause_total", "cause", inval_cause, \
	  "The same invalidations, by what showed the other writer's change.") \
	X(uint64_t, fill_skipped, counter, "nfscached_cache_fill_skipped_total", \
	  "Fetched or written bytes not kept for lack of room.") \
	X(uint64_t, acl_bytes, gauge, "nfscached_cache_acl_bytes", \
	  "Memory held by cached NFSACL GETACL replies (part of the metadata bytes).") \
	X(uint64_t, acl_refused, counter, "nfscached_cache_acl_refused_total", \
	  "GETACL replies not kept: longer than 4 KiB, or past the share of cache_size cached ACLs may take.")

struct cache_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	CACHE_METRICS(X, A)
#undef X
#undef A
	/* Not exported as such: */
	uint64_t valid_bytes;		/* gauge: bytes valid in pages (the
					 * nfscached_cache_bytes family) */
	uint64_t wb_bytes[WB_NSTATES];	/* gauges: bytes by wb state (same) */
	uint64_t promotions;		/* pages admitted to Am */
	struct ra_stats ra;		/* readahead windows (all files) */
	uint64_t wb_runs;		/* runs handed out */
	uint64_t wb_run_bytes;
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
 * True if gen (a cfile_gen value taken when a call was sent) still holds:
 * the reply may fill and be observed. The one test handlers use instead
 * of comparing cfile_gen themselves.
 */
bool cfile_gen_holds(const struct cfile *f, uint64_t gen);

/*
 * The one slot for the cache user's per-file state (the daemon's struct
 * fstate: write-back in flight and the calls waiting on it). The cache
 * never reads it, and keeps the file while the slot is non-NULL.
 */
struct fstate **cfile_owner_slot(struct cfile *f);

/* Call fn(owner, arg) on every file's non-NULL owner slot, then clear it
 * (before cache_free, so the owner can free what it hung there; arg is
 * the caller's, passed through). */
void cache_owner_clear(struct cache *c,
		       void (*fn)(struct fstate *owner, void *arg), void *arg);

/* Call fn(c, f, owner, arg) on every file f with a non-NULL owner slot, in
 * no order. fn may invalidate f's data (cfile_invalidate) but must not
 * free files, take or put references, or clear the slot. */
void cache_owner_each(struct cache *c,
		      void (*fn)(struct cache *c, struct cfile *f,
				 struct fstate *owner, void *arg),
		      void *arg);

/* Drop a reference and clear the caller's pointer. A file without
 * references, pages or attributes may then be freed. */
void cfile_put(struct cache *c, struct cfile **f);

/* ---- attributes ---- */

/* True once attributes were recorded (and not dropped since). */
bool cfile_has_attr(const struct cfile *f);

/* The attributes clients are shown (valid only if cfile_has_attr): the
 * upstream's, with the size and times of the proxy's own absorbed writes
 * (cache_write_dirty). Borrowed. */
const struct cattr *cfile_attr(const struct cfile *f);

/* True while the attributes are within their timeout at now. */
bool cfile_attr_fresh(const struct cfile *f, double now);

/* The current attribute timeout, seconds (adaptive, within ac). */
double cfile_attr_timeout(const struct cfile *f);

/*
 * cfile_attr_observe for a reply to a call sent under generation gen
 * (cfile_gen then): a (may be NULL: the reply had none) is observed only
 * while gen holds. Returns cfile_gen_holds(f, gen) afterwards: true when
 * the reply's data may still fill the cache.
 */
bool cfile_attr_observe_gen(struct cache *c, struct cfile *f, uint64_t gen,
			    const struct cattr *a, double now,
			    const struct cache_ac *ac);

/*
 * Record attributes a reply carried for a call that changed nothing
 * (GETATTR, LOOKUP, ACCESS, READ, ...). If size, mtime or ctime differ
 * from the cached ones, another writer changed the file: its cached data,
 * holes, ACCESS results and GETACL replies are dropped and the timeout restarts at
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

/*
 * The proxy's own call (a REMOVE or RENAME of one of f's names, RFC 1813
 * 3.3.12, 3.3.14) changed f's link count and ctime without returning f's
 * attributes. They are expired, and the next attributes observed that
 * differ from the cached ones only in ctime, nlink or atime are taken as
 * that own change: f's data, holes and ACCESS results stay. Any other
 * difference is judged as usual (cfile_attr_observe).
 */
void cfile_attr_links_changed(struct cfile *f);

/* Count one of the proxy's own mutating calls on f as in flight. */
void cfile_mutation_begin(struct cfile *f);

/*
 * The reply of an own mutation arrived (or failed: pre and post NULL).
 * pre (wcc before) tells whether the file was as the proxy knew it: if pre
 * matches the cached attributes or one of the proxy's own recent states
 * (including the state when each own mutation began, so replies may come
 * back in any order), the change is the proxy's own and cached data stays;
 * a pre that matches nothing is another writer's change (judged once no
 * own mutation of f is in flight, since a later own reply may explain it),
 * and the file's clean data is dropped. When pre is absent (pre_op_attr is
 * optional) the proxy cannot tell: it keeps the data and takes post as
 * its own state (a GETATTR would only return that state); the attributes
 * are revalidated at their timeout as usual. post (may be NULL)
 * becomes the cached attributes unless a newer ctime is already cached,
 * and is remembered as an own state; a change of mode, uid or gid drops
 * the ACCESS results and the GETACL replies (so does a mutation that
 * ended without a reply, or of a file that had no attributes to compare
 * with). Returns true if cached data was dropped.
 */
bool cfile_mutation_end(struct cache *c, struct cfile *f,
			const struct cwcc *pre, const struct cattr *post,
			double now, const struct cache_ac *ac);

/*
 * cfile_mutation_end for the reply (or failure) of the proxy's own
 * write-back WRITE of [off, end) of f. The file's generation moves as
 * there, but when no data was dropped the fetches in flight that do not
 * overlap [off, end) stay current (fetch_carry): the WRITE changed no byte
 * they asked for, so their data may still fill; their attributes, which
 * may predate the WRITE's, are no longer observed. With COMMITs every few
 * writes, write-back ends all the time, and a READ fetch (a round trip or
 * more) almost always spans one: without this its data was thrown away.
 * Returns what cfile_mutation_end returns.
 */
bool cfile_wb_write_end(struct cache *c, struct cfile *f, uint64_t off,
			uint64_t end, const struct cwcc *pre,
			const struct cattr *post, double now,
			const struct cache_ac *ac);

/* ---- access ---- */

/*
 * Record an ACCESS result (RFC 1813 section 3.3.4): cr asked for `asked`
 * bits and got `granted`. Kept until the file's attributes change.
 */
void cfile_access_record(struct cfile *f, const struct nfs_cred *cr,
			 uint32_t asked, uint32_t granted);

/* True if cr is known to hold every bit of `bits` on f. */
bool cfile_access_allows(const struct cfile *f, const struct nfs_cred *cr,
			 uint32_t bits);

/* True if the upstream's answer is known for every bit of `bits` for cr
 * on f (granted or denied); *granted then gets the granted ones of bits.
 * For answers from stale state only: denied bits are not otherwise
 * answered from the cache. */
bool cfile_access_known(const struct cfile *f, const struct nfs_cred *cr,
			uint32_t bits, uint32_t *granted);

/* ---- ACL replies (NFSACL GETACL) ---- */

/*
 * The file's ACL generation: it changes whenever the file's cached GETACL
 * replies are dropped (cfile_acl_drop, another writer's change, an own
 * mutation that changed mode, uid or gid or whose outcome is unknown). A
 * caller records it when sending a GETACL upstream and stores the reply
 * only while cfile_acl_gen_holds: a reply that may predate a drop is not
 * kept.
 */
uint64_t cfile_acl_gen(const struct cfile *f);

/* True if gen (a cfile_acl_gen value taken when a GETACL was sent) still
 * holds: its reply may be stored. */
bool cfile_acl_gen_holds(const struct cfile *f, uint64_t gen);

/*
 * Keep reply[0..len) (opaque to the cache: the caller's encoding of a
 * GETACL3res, NFSACL v3) as f's reply for mask, replacing one kept for
 * mask, else the oldest when CACHE_ACL_SLOTS are kept. The bytes are
 * copied (reply may be NULL when len is over CACHE_ACL_MAX: nothing is
 * read, the refusal is counted). Returns false (nothing kept, counted in acl_refused) when len is
 * 0 or over CACHE_ACL_MAX, when the cache's replies would pass budget /
 * CACHE_ACL_BUDGET_SHARE, or on ENOMEM. Kept until cfile_acl_drop, until
 * the file's attributes show another writer's change (cfile_attr_observe,
 * cfile_mutation_end), until an own mutation changes mode, uid or gid
 * (or ends without a reply, or finds no attributes to compare with), or
 * until the file is freed.
 */
bool cfile_acl_store(struct cache *c, struct cfile *f, uint32_t mask,
		     const void *reply, size_t len);

/* f's kept reply for mask (borrowed, valid until f's next ACL store or
 * drop, or its attributes' next observation), its length in *len; NULL
 * if none is kept. Whether the attributes are still trusted is the
 * caller's test. */
const void *cfile_acl_find(const struct cfile *f, uint32_t mask, size_t *len);

/* Drop f's kept GETACL replies (a SETACL of f; the ACL changed or may
 * have) and move its ACL generation. */
void cfile_acl_drop(struct cache *c, struct cfile *f);

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
 * cache_fill for readahead (readahead true): new pages wait on a queue of
 * their own and are evicted first while no client has read them; their
 * bytes count as used when a client reads the page, as wasted when the
 * page goes unread.
 */
void cache_fill_ex(struct cache *c, struct cfile *f, uint64_t off,
		   const uint8_t *data, uint64_t len, bool readahead);

/* The readahead state of f, created on first use with p (NULL when p is
 * invalid or disables readahead, when the cache has no page budget, or on
 * ENOMEM). Owned by the cache, freed with the file; another writer's
 * change resets it. p is also kept as the cache's parameters, which
 * decide when prefetched pages count as abandoned: the last given (a
 * miss's, or a READ's of a file with a stream; cached READs of other files
 * do not call this, nfs3_read.c read_ahead). */
struct ra_state *cfile_ra(struct cache *c, struct cfile *f,
			  const struct ra_params *p);

/* f's readahead state if cfile_ra made one, else NULL; creates nothing.
 * Borrowed, as cfile_ra's. */
const struct ra_state *cfile_ra_peek(const struct cfile *f);

/* True if every byte of [start, end) of f is valid or a hole (clamped at
 * the shown size). */
bool cfile_range_cached(struct cache *c, struct cfile *f, uint64_t start,
			uint64_t end);

/* Count a client's use of the pages of [off, off + len) (as cache_copy
 * does): a READ served straight from a fetch's reply used them. */
void cache_touch(struct cache *c, struct cfile *f, uint64_t off, uint64_t len);

/* cache_copy, also telling how many of the copied bytes were holes. */
uint64_t cache_copy_ex(struct cache *c, struct cfile *f, uint64_t off,
		       uint64_t len, uint8_t *out, uint64_t *hole_bytes);

/*
 * The bytes [off, off + len) of f in place, when they lie in one page and
 * are all valid there: a pointer into that page, and the page counted as
 * read (as cache_copy). Borrowed: it stays valid only until the next call
 * into the cache (a fill, a write or an eviction may change or free the
 * page), so the caller copies them before that, on the same loop. NULL
 * when len is 0, the range crosses a page, or any byte of it is not valid
 * in the page (missing, or a hole): use cache_copy_ex then. A cached
 * READ's reply is copied from here straight into the connection's output
 * (nfs3_read.c), not through a buffer of its own (issue 42).
 */
const uint8_t *cache_peek(struct cache *c, struct cfile *f, uint64_t off,
			  uint64_t len);

/*
 * Record [start, end) of f as known to read as zeros (a hole): the
 * proxy's own SETATTR grew the file, or a write past EOF left a gap.
 * Clean cached bytes there are dropped (pages left empty are freed);
 * bytes in write-back state stay data. A hole costs no page memory.
 */
void cfile_hole_add(struct cache *c, struct cfile *f, uint64_t start,
		    uint64_t end);

/* Bytes of f recorded as holes (for tests and metrics). */
uint64_t cfile_hole_bytes(const struct cfile *f);

/*
 * f's holes inside [start, end), clipped to it, in offset order (absolute
 * offsets): the first min(total, max) go to out[] (NULL when max is 0);
 * returns the total, which may exceed max (rangeset_ranges_in). Used to
 * describe a page for the disk tier.
 */
size_t cfile_holes_in(const struct cfile *f, uint64_t start, uint64_t end,
		      struct range *out, size_t max);

/*
 * The clean bytes of page idx of f (valid and in no write-back state:
 * what the upstream holds, as far as the cache knows): their ranges,
 * page-relative, are added to *out (the caller's set) and their bytes
 * copied to buf at the same page offsets (buf: page_size bytes, the
 * caller's; other bytes untouched). Nothing when f holds no page idx.
 * Returns 0, or -1 on ENOMEM (*out then holds a subset, each range in it
 * copied). Not a use of the page for eviction. Used to describe a page
 * for the disk tier.
 */
int cfile_page_clean(const struct cache *c, const struct cfile *f,
		     uint64_t idx, uint8_t *buf, struct rangeset *out);

/* One extent of a page's write-back bytes (cfile_page_wb). */
struct cache_wb_extent {
	uint32_t off, len;		/* page-relative bytes */
	struct nfs_cred cred;		/* its last writer (machine NULL) */
};

/*
 * The bytes of f's page idx not yet stable upstream (DIRTY, WRITING or
 * UNSTABLE): their extents, in offset order, go to out (max entries;
 * touching extents of the same writer are one), their bytes are copied
 * to buf at the same page offsets (buf: page_size bytes, the caller's;
 * other bytes untouched; NULL: nothing copied, see cfile_page_bytes). Returns the number of extents (0 when f holds
 * no page idx or it has none), or max + 1 when there are more than max
 * (out then holds the first max). Not a use of the page. Used to make a
 * page's locally committed bytes durable (daemon/wb/lcommit.c).
 */
size_t cfile_page_wb(const struct cache *c, const struct cfile *f,
		     uint64_t idx, uint8_t *buf, struct cache_wb_extent *out,
		     size_t max);

/* The bytes of f's page idx (page_size of them, page-relative; only the
 * valid ones mean anything), or NULL when f holds no page idx. Borrowed:
 * valid until the cache next changes (read them at once). */
const uint8_t *cfile_page_bytes(const struct cfile *f, uint64_t idx);

/*
 * The page indexes in [start, end) of f whose pages hold no write-back
 * bytes (DIRTY, WRITING or UNSTABLE), as maximal ranges in order:
 * rangeset_gaps's out[]/max/return convention. Borrows nothing.
 */
size_t cfile_wb_page_gaps(const struct cfile *f, uint64_t start, uint64_t end,
			  struct range *out, size_t max);

/*
 * Store fetched data[0..len) at off without overwriting bytes already
 * valid (docs/design.md "Cache model": fetched data never overwrites valid
 * bytes). Aligned blocks of hole_granularity bytes that are all zeros are
 * recorded as holes instead of stored. Pages are allocated as needed,
 * evicting others to stay within the budget; what finds no room is not
 * stored (counted). Never fails.
 */
void cache_fill(struct cache *c, struct cfile *f, uint64_t off,
		const uint8_t *data, uint64_t len);

/*
 * Store data a client wrote and the upstream acknowledged as stable at
 * off (write-through), overwriting, and mark it valid and clean; bytes an
 * older write-back of which is still in flight become DIRTY again (by cr)
 * so the newest data lands last. Like cache_fill for room.
 */
void cache_write(struct cache *c, struct cfile *f, uint64_t off,
		 const uint8_t *data, uint64_t len, const struct nfs_cred *cr);

/*
 * The file's size became size (SETATTR, or a truncating CREATE): drop
 * cached bytes at and past it, write-back state included (the caller
 * waits for WRITEs in flight first). The shown size becomes size.
 */
void cfile_truncate(struct cache *c, struct cfile *f, uint64_t size);

/* Drop the file's clean cached data, holes, ACCESS results and GETACL
 * replies; bytes in write-back state stay (they are still to be written
 * upstream). */
void cfile_invalidate(struct cache *c, struct cfile *f);

/* cfile_invalidate() and cfile_attr_expire() on every file the cache
 * holds (`nfscached cache drop`): clean data goes, bytes in write-back
 * state stay. Returns the valid bytes dropped. Not counted as an
 * invalidation (nfscached_cache_invalidations_total). */
uint64_t cache_drop_clean(struct cache *c);

/* ---- upstream READs in flight (concurrent misses share one) ---- */

/*
 * Record an upstream READ of [off, end) of f about to be sent (readahead:
 * a prefetch, filled as by cache_fill_ex), under f's current generation.
 * arg is the caller's (its waiters), handed back by cache_fetch_arg. The
 * file is kept while the fetch is recorded. Returns the fetch, owned by
 * the cache until cache_fetch_end, or NULL if off >= end or on ENOMEM.
 * Source: nginx's proxy_cache_lock; the Linux client's page lock that
 * makes a second reader wait for the first one's READ.
 */
struct cfetch *cache_fetch_begin(struct cache *c, struct cfile *f,
				 uint64_t off, uint64_t end, bool readahead,
				 void *arg);

/*
 * The first fetch of f after `after` (NULL: from the oldest) that a READ
 * of [s, e) may join: it overlaps [s, e) and was begun under the current
 * generation (an older one's data may be overtaken). NULL when none.
 * Borrowed: valid until cache_fetch_end.
 */
struct cfetch *cache_fetch_join(const struct cfile *f,
				const struct cfetch *after, uint64_t s,
				uint64_t e);

/* The caller's arg given to cache_fetch_begin. */
void *cache_fetch_arg(const struct cfetch *fe);

/* The bytes [*off, *end) fe asked for. */
void cache_fetch_range(const struct cfetch *fe, uint64_t *off, uint64_t *end);

/* True while fe's generation holds: its reply may fill (and, unless
 * cache_fetch_attr_current says otherwise, be observed). */
bool cache_fetch_current(const struct cfetch *fe);

/* True while fe's reply's attributes may be observed: it is current and
 * was not carried past an own write-back (cfile_wb_write_end). */
bool cache_fetch_attr_current(const struct cfetch *fe);

/*
 * fe's reply carried data[0..len) from its start: stored as cache_fill_ex
 * stores it, if fe is still current (returns true), else not (false).
 */
bool cache_fetch_fill(struct cache *c, struct cfetch *fe,
		      const uint8_t *data, uint64_t len);

/* fe's reply arrived or failed: no one joins it any more. Frees it and
 * clears the caller's pointer. */
void cache_fetch_end(struct cache *c, struct cfetch **fe);

/* Upstream READs of f recorded in flight. */
unsigned cfile_fetches(const struct cfile *f);

/* ---- write-back (docs/design.md "Write semantics") ---- */

/*
 * Absorb a client write of data[0..len) at off by credential cr: the bytes
 * become valid and DIRTY (the last writer of each byte is remembered), the
 * file's shown size grows to cover them and its shown mtime and ctime
 * become wall (the proxy's own clock, strictly after the previous shown
 * times), so clients see their write and no later jump when the data
 * reaches the upstream. now (monotonic seconds) starts the dirty age.
 * Holes under the write shrink. No byte is read upstream. Returns 0, or -1
 * when pages could not be had within the budget or the write ends past
 * CACHE_MAX_OFFSET (nothing changed; the caller writes through instead).
 */
int cache_write_dirty(struct cache *c, struct cfile *f, uint64_t off,
		      const uint8_t *data, uint64_t len, const struct nfs_cred *cr,
		      double now, struct ctime3 wall);

/*
 * Choose the next upstream WRITE for f: the lowest DIRTY bytes that do not
 * overlap a WRITE still in flight, extended over touching DIRTY bytes of
 * the same credential, across pages, up to wtmax bytes; never over a gap
 * (no byte no client wrote). The bytes become WRITING and are copied into
 * buf (wtmax bytes, the caller's). Returns false when nothing is eligible.
 * Source: the batching of writepages / nfs_pageio_add_request.
 */
bool cache_wb_next(struct cache *c, struct cfile *f, uint32_t wtmax,
		   uint8_t *buf, struct cache_wb_run *run);

/*
 * cache_wb_next; with keep_tail, a run shorter than wtmax that ends at
 * the end of file is left for later (background write-back does not cut
 * the growing tail of a stream of appends, so its upstream WRITEs stay
 * wtmax-sized).
 */
bool cache_wb_next_ex(struct cache *c, struct cfile *f, uint32_t wtmax,
		      bool keep_tail, uint8_t *buf, struct cache_wb_run *run);

/*
 * The upstream WRITE of run seq ended with res (verf: the reply's
 * writeverf3 for CACHE_WB_UNSTABLE; error: the nfsstat3 for
 * CACHE_WB_FAILED). Bytes rewritten by a client meanwhile stay DIRTY. On
 * UNSTABLE, any UNSTABLE bytes of f under another verifier become DIRTY
 * again (the upstream restarted: RFC 1813 section 3.3.7), counted as
 * resent.
 */
void cache_wb_done(struct cache *c, struct cfile *f, uint32_t seq,
		   enum cache_wb_result res, uint64_t verf, int error);

/*
 * Tag f's UNSTABLE bytes for an upstream COMMIT about to be sent. Returns
 * the tag, or 0 when f has no UNSTABLE bytes.
 */
uint32_t cache_commit_begin(struct cache *c, struct cfile *f);

/*
 * The upstream COMMIT tagged tag came back: ok with verf, or failed. On
 * success, tagged bytes written under verf become CLEAN, and UNSTABLE bytes
 * under any other verifier become DIRTY (resent). On failure the tagged
 * bytes stay UNSTABLE. Returns the bytes made DIRTY again.
 */
uint64_t cache_commit_done(struct cache *c, struct cfile *f, uint32_t tag,
			   bool ok, uint64_t verf);

/* Drop f's write-back state (DIRTY and UNSTABLE bytes become invalid):
 * the file was removed and no other link reaches it. */
void cfile_discard_dirty(struct cache *c, struct cfile *f);

/* Take (and clear) the first write-back failure of f, or 0. */
int cfile_wb_error_take(struct cfile *f);

/* The first write-back failure of f, or 0, left in place. */
int cfile_wb_error_peek(const struct cfile *f);

/*
 * Put back error err (a positive nfsstat3) taken with cfile_wb_error_take
 * by a call it does not belong to, so the file's next WRITE or COMMIT
 * still gets it; an error already pending is kept instead.
 */
void cfile_wb_error_restore(struct cfile *f, int err);

/* Bytes of f in write-back state st. */
uint64_t cfile_wb_bytes(const struct cfile *f, enum cache_wb_state st);

/* True if f has bytes DIRTY, WRITING or UNSTABLE: the one "has write-back
 * bytes" test (what is in flight upstream is the daemon's: fstate_busy). */
bool cfile_has_wb(const struct cfile *f);

/*
 * Mark the point a COMMIT arrived at (RFC 1813 section 3.3.21: it covers
 * the writes acknowledged before it): returns f's write generation, which
 * every byte a client wrote so far carries, and starts a new one for later
 * writes. Bytes rewritten after the mark carry the new generation (the
 * newer data supersedes them). A file has at most WB_EPOCHS generation
 * spans counted apart; past that the oldest two merge, so a mark may
 * cover a little more than it needs, never less.
 */
uint32_t cfile_wb_mark(struct cfile *f);

/* Bytes of f in write-back state st written at or before mark (a value
 * of cfile_wb_mark). */
uint64_t cfile_wb_bytes_upto(const struct cfile *f, uint32_t mark,
			     enum cache_wb_state st);

/* cfile_has_wb for the bytes written at or before mark: what a COMMIT
 * that arrived at mark waits for. */
bool cfile_has_wb_upto(const struct cfile *f, uint32_t mark);

/* True if no byte of [off, off + len) of f is DIRTY, WRITING or UNSTABLE. */
bool cfile_range_clean(const struct cfile *f, uint64_t off, uint64_t len,
		       uint32_t page_size);

/* When f's DIRTY bytes appeared (monotonic seconds); 0 when re-dirtied by
 * a retry or resend (due at once). Meaningful while it has DIRTY bytes. */
double cfile_dirty_since(const struct cfile *f);

/*
 * When the oldest bytes of f not yet stable upstream (DIRTY, WRITING or
 * UNSTABLE) were absorbed (monotonic seconds, cache_write_dirty's now),
 * or 0 when it has none or that time is unknown. Retries, verifier
 * changes and failed COMMITs do not make bytes younger. Precise to the
 * file's write-back generation (cfile_wb_mark): the time is that of the
 * first byte absorbed in the oldest generation that still has bytes, so
 * it can be older than the oldest byte, never younger (but for bytes
 * absorbed with no time, now 0, which take the next known one).
 */
double cfile_wb_since(const struct cfile *f);

/* Bytes of the whole cache in write-back state st. */
uint64_t cache_wb_bytes(const struct cache *c, enum cache_wb_state st);

/* The files with write-back state, in the order they first got it; iterate
 * with cache_wb_file_next. Borrowed: no reference is taken. */
struct cfile *cache_wb_file_first(struct cache *c);
struct cfile *cache_wb_file_next(struct cache *c, struct cfile *f);

/* True while clients are shown the proxy's own size and times for f
 * (it absorbed a client write; see cache_write_dirty). */
bool cfile_is_local(const struct cfile *f);

/* Take the upstream's current times as the shown ones (after the client
 * itself set them with SETATTR). */
void cfile_adopt_times(struct cfile *f);

/* The file's upstream handle (borrowed for the file's lifetime). */
const uint8_t *cfile_fh(const struct cfile *f, size_t *len);

/* Bytes valid in the file's pages (for tests). */
uint64_t cfile_valid_bytes(const struct cfile *f);

/* Copy the counters into *st. */
void cache_stats_get(const struct cache *c, struct cache_stats *st);

/* Bytes of metadata and allocator overhead a cached page is charged
 * beyond its data (struct cpage, allocation headers, a write-back extent
 * array, a share of the ghosts and hash buckets): the budget holds
 * budget / (page_size + this) pages. */
size_t cache_page_meta_bytes(void);

/* Check every invariant of c (the list at the top of cache.c, cache_wb.c
 * and cache_fetch.c, magic numbers included); true if sound. */
bool cache_check(const struct cache *c);

/* cache_check, naming what is broken: NULL when sound, else a static
 * string naming the first invariant found broken (for an abort message). */
const char *cache_check_why(const struct cache *c);

/* True if a page can be had now: the budget has room, or a page on a
 * queue (clean, not pinned by write-back, not lent to a reply by
 * cache_lend) can be evicted. */
bool cache_has_room(const struct cache *c);

/*
 * Lend a page buffer (page_size bytes, contents undefined) out of the
 * budget: it is charged as one page (cache_page_meta_bytes included)
 * until cache_loan_put, evicting by 2Q to make room like a new page. For
 * memory held for the cache outside its pages (the disk tier's copies of
 * pages waiting for the disk, and its loads), so that it counts against
 * the budget once and comes from the same pool. NULL when no page can be
 * evicted (every one pinned by write-back, or the budget all lent) or on
 * ENOMEM. The cache never touches a lent buffer: its borrower may hand
 * it to another thread until it is returned.
 */
void *cache_loan_get(struct cache *c);

/* Return a buffer from cache_loan_get of c (NULL: nothing). */
void cache_loan_put(struct cache *c, void *buf);

/*
 * Lend the bytes [off, off + len) of f in place for a reply that sends
 * them by reference (a READ reply's data, nfs3_read.c), when they lie in
 * one page and are all valid there: *data points into the page, which is
 * counted as read (as cache_peek), and the lend is the caller's until
 * cache_lend_put. Until then the page's buffer is never freed or reused:
 * eviction passes the page over (evicting it would free no room), and a
 * page dropped meanwhile (invalidated, truncated, its file forgotten,
 * `cache drop`) leaves its buffer to the lend, charged against the budget
 * as a loan (nfscached_cache_loan_bytes) until the last lend of it is put.
 * The bytes stay the page's: a WRITE or fill into the page before the
 * reply is written changes what it sends, as knfsd's spliced READ
 * replies from the page cache (nfsd_splice_read) may carry a later
 * write's bytes. Several lends of one page share one record. NULL when len
 * is 0, the range crosses a page or is not all valid (use cache_copy_ex
 * then), or on ENOMEM. A lend may be put after cache_free (a reply
 * dropped at shutdown after the cache, never written): it is then only
 * freed, its buffer gone with the cache's pool. The loop that owns c,
 * only.
 */
struct cache_lend *cache_lend(struct cache *c, struct cfile *f, uint64_t off,
			      uint64_t len, const uint8_t **data);

/* Give back a lend of cache_lend (NULL: nothing); the buffer of a page
 * dropped meanwhile returns to the pool with the last lend of it. */
void cache_lend_put(struct cache_lend *l);

#endif
