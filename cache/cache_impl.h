/* SPDX-License-Identifier: MIT */
/*
 * cache_impl: the cache's private structures and the helpers its files
 * share. Included only by cache.c (files, pages, 2Q queues, attributes,
 * ACCESS results, holes), cache_wb.c (write-back extents) and
 * cache_fetch.c (upstream READs in flight);
 * not part of the API: users of the cache include cache.h, where these
 * structures are opaque.
 *
 * The shared helpers keep names of the families they belong to (page_,
 * file_, cred_, wb_, run_), never the public cache_ and cfile_ prefixes.
 * cache_wb.c calls the page helpers of cache.c; cache.c calls into
 * cache_wb.c only where freeing a page, a write-through or a truncation
 * must keep write-back state right.
 */
#ifndef NFSCACHED_CACHE_CACHE_IMPL_H
#define NFSCACHED_CACHE_CACHE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "cache.h"
#include "rangeset.h"
#include "readahead.h"

#define CFILE_MAGIC 0x4346494cu
#define CFETCH_MAGIC 0x43464554u
#define OWN_STATES 16		/* own states remembered per file */
#define SUSPECTS 8		/* unexplained pre-states awaiting an own post */

enum queue { Q_NONE = 0, Q_A1IN, Q_AM, Q_RA };

/* Write-back state of a byte extent inside a page (page-relative). */
struct wbext {
	uint32_t start, end;
	uint32_t seq;			/* WRITING: the write-back run;
					 * UNSTABLE: the COMMIT tag, or 0 */
	uint32_t gen;			/* the file's write generation when a
					 * client wrote it (cfile_wb_mark) */
	uint16_t cred;			/* index into cache.creds */
	uint8_t state;			/* WB_DIRTY, WB_WRITING, WB_UNSTABLE */
	uint64_t verf;			/* UNSTABLE: upstream writeverf3 */
};

#define WB_EPOCHS 8		/* generation spans counted per file */

/* Bytes by write-back state of the extents whose gen is in [lo, hi]. */
struct wbepoch {
	uint32_t lo, hi;
	uint64_t bytes[WB_NSTATES];
};

#define WB_GEN_TIMES 8		/* generation start times kept per file */

/* When a file first absorbed bytes of generation gen (monotonic s). */
struct wbgentime {
	uint32_t gen;
	double at;
};

/* An upstream WRITE in flight over [off, end). */
struct wbrun {
	uint64_t off, end;
	uint32_t seq;
};

/* An upstream READ in flight filling [off, end) of file (cache_fetch.c). */
struct cfetch {
	uint32_t magic;
	struct cfile *file;
	uint64_t off, end;
	uint64_t gen;			/* the file's generation at begin, or
					 * carried past own write-backs that
					 * did not touch [off, end) */
	bool attr_old;			/* carried: its reply's attributes
					 * predate the file's */
	bool ra;			/* a readahead prefetch */
	void *arg;			/* the caller's, borrowed */
	struct cfetch *prev, *next;	/* on file->fetches, oldest first */
};

struct cpage {
	uint64_t index;			/* page number: offset / page_size */
	struct cfile *file;
	uint8_t *data;			/* page_size bytes */
	struct rangeset valid;		/* page-relative byte ranges */
	struct wbext *wb;		/* sorted, disjoint; wb ⊆ valid */
	uint16_t nwb, capwb;		/* nwb > 0: pinned, on no queue */
	uint32_t ra_bytes;		/* prefetched bytes not yet read */
	struct cache_lend *lend;	/* replies referencing data (cache_lend);
					 * NULL: none */
	uint64_t stamp;			/* cache clock when it joined its queue */
	uint8_t queue;
	UT_hash_handle hh;		/* in file->pages, key index */
	struct cpage *prev, *next;	/* on A1in or Am, head = newest */
};

/* A page buffer referenced by replies (cache_lend). */
struct cache_lend {
	struct cache *c;		/* NULL once the cache is freed */
	struct cpage *page;		/* NULL once the page is freed */
	uint8_t *buf;			/* the page's data */
	unsigned refs;			/* lends not yet put */
	struct cache_lend *prev, *next;	/* on cache.detached once page is
					 * NULL */
};

/* A remembered A1in eviction (2Q's A1out). */
struct ghost {
	uint64_t key[2];		/* file id, page index */
	UT_hash_handle hh;
	struct ghost *prev, *next;
};

struct access_slot {
	struct nfs_cred cr;
	uint32_t known;			/* bits asked so far */
	uint32_t granted;		/* of those, bits granted */
};

/* A kept GETACL reply (cfile_acl_store): the caller's bytes for mask. */
struct acl_reply {
	struct acl_reply *next;		/* on file->acls, newest first */
	uint32_t mask;			/* the GETACL's mask (NFSACL v3) */
	uint32_t len;			/* bytes, 1..CACHE_ACL_MAX */
	uint8_t bytes[];
};

struct cfile {
	uint32_t magic;
	unsigned refs;
	uint64_t id;			/* serial, for ghosts */
	uint8_t key[CACHE_FH_MAX + 1];	/* handle length, handle, zeros */
	bool has_attr;
	struct cattr attr;
	double attr_time;		/* when attr was last confirmed */
	double timeo;			/* current attribute timeout, s */
	double timeo_stamp;		/* when timeo last changed */
	unsigned mut_inflight;		/* own mutations in flight */
	bool own_links;			/* an own call changed the links:
					 * cfile_attr_links_changed */
	uint64_t gen;			/* see cfile_gen */
	struct fstate *owner;		/* cfile_owner_slot: the user's */
	struct cfetch *fetches;		/* upstream READs in flight */
	unsigned nfetches;
	struct ra_state *ra;		/* readahead, cfile_ra */
	uint64_t last_use;		/* cache clock at its last page use */
	uint64_t own_entries;		/* queue entries of its own pages */
	uint64_t own_at_use;		/* own_entries at last_use */
	struct cwcc own[OWN_STATES];	/* recent own post-states */
	unsigned nown;
	struct cwcc suspect[SUSPECTS];	/* pre-states not yet explained */
	unsigned nsuspect;
	bool suspect_overflow;
	struct access_slot *access;	/* CACHE_ACCESS_SLOTS at most */
	unsigned naccess;
	unsigned access_next;		/* round-robin replacement */
	struct acl_reply *acls;		/* GETACL replies, distinct masks */
	unsigned nacl;			/* <= CACHE_ACL_SLOTS */
	uint64_t acl_gen;		/* see cfile_acl_gen */
	struct cpage *pages;		/* hash by index */
	uint64_t npages;
	uint64_t valid_bytes;
	struct rangeset holes;		/* bytes known to read as zeros */
	struct rangeset wbpages;	/* indexes of pages with wb extents */
	uint64_t wbbytes[WB_NSTATES];	/* bytes by write-back state */
	uint32_t wgen;			/* generation of new client writes */
	struct wbepoch epochs[WB_EPOCHS];	/* oldest first, disjoint,
					 * none empty: the same bytes as
					 * wbbytes, by generation */
	unsigned nepochs;
	double dirty_since;		/* when DIRTY bytes last went 0 -> >0 */
	struct wbgentime gen_at[WB_GEN_TIMES];	/* oldest first, gens
					 * increasing: when each generation
					 * from gen on was first absorbed
					 * (cfile_wb_since) */
	unsigned ngen_at;
	int wb_error;			/* first write-back failure, or 0 */
	bool local;			/* shown times are the proxy's own */
	bool adopt_times;		/* take the next upstream times */
	uint64_t local_size;		/* size as the proxy's writes made it */
	struct ctime3 local_mtime, local_ctime;
	struct cattr shown;		/* what clients are told */
	uint64_t wb_cursor;		/* page where the next run search starts */
	uint64_t last_verf;		/* upstream verifier of the last WRITE */
	bool verf_known;
	struct wbrun *runs;		/* upstream WRITEs in flight */
	unsigned nruns, capruns;
	struct cfile *dprev, *dnext;	/* on cache.dirty_files */
	bool on_dirty;
	struct cfile *lprev, *lnext;	/* on cache.lru */
	UT_hash_handle hh;		/* in cache->files, key fh */
};

struct cache {
	struct pagepool *pool;		/* page buffers (pagepool.h) */
	uint32_t page_size;
	unsigned shift;
	uint64_t page_cost;		/* page_size + page_overhead() */
	uint64_t max_pages;		/* budget / page_cost */
	uint64_t loans;			/* buffers lent (cache_loan_get) and
					 * not returned, and buffers of pages
					 * freed while a cache_lend held them:
					 * charged as pages */
	uint64_t lends;			/* struct cache_lend not yet put */
	uint64_t lends_detached;	/* of those, whose page is gone (its
					 * buffer counted in loans) */
	struct cache_lend *detached;	/* those (utlist) */
	uint64_t kin;			/* A1in target, pages */
	uint64_t kout;			/* A1out ghosts kept */
	uint64_t hole_granularity;	/* bytes; 0: no zero detection */
	struct cfile *files;
	struct cfile *lru;		/* every cfile, newest first (utlist:
					 * lru->lprev is the oldest) */
	uint64_t max_files;		/* 0: no limit */
	struct cpage *a1in, *am, *ra;	/* ra: prefetched, never read */
	uint64_t clock;			/* queue-entry stamps */
	uint64_t n_a1in, n_am, n_ra;
	struct ra_stats ra_gone;	/* readahead counters of freed files */
	struct ra_params ra_params;	/* the last given to cfile_ra */
	bool ra_params_set;
	struct ghost *ghosts;		/* hash */
	struct ghost *ghost_list;	/* head = newest */
	uint64_t nghosts;
	uint64_t next_id;
	struct nfs_cred *creds;		/* interned write-back credentials */
	unsigned ncreds;
	uint32_t next_seq;
	uint64_t wbbytes[WB_NSTATES];
	struct cfile *dirty_files;	/* files with wb extents */
	uint64_t acl_max;		/* bytes GETACL replies may take:
					 * budget / CACHE_ACL_BUDGET_SHARE
					 * (st.acl_bytes counts them) */
	struct cache_stats st;
};

/* ---- pages and queues (cache.c) ---- */

/* Take p off its queue. */
void page_queue_del(struct cache *c, struct cpage *p);

/* Put p at the head (newest end) of queue q. */
void page_queue_add(struct cache *c, struct cpage *p, enum queue q);

/* The page index of f, or NULL. */
struct cpage *page_find(const struct cfile *f, uint64_t index);

/* The page index of f, allocated (and admitted by 2Q) if absent. */
struct cpage *page_get(struct cache *c, struct cfile *f,
		       uint64_t index, bool ra);

/* Copy data[s - off, t - off) into page p at page offset s - ps; valid. */
void page_store(struct cache *c, struct cfile *f, struct cpage *p,
		uint64_t ps, uint64_t s, uint64_t t, uint64_t off,
		const uint8_t *data);

/* Free f if nothing keeps it: no reference, page, attributes, own
 * mutation, owner state or fetch in flight. */
void file_free_unused(struct cache *c, struct cfile *f);

/* ---- attributes and credentials (cache.c) ---- */

/* Recompute what clients are shown from the upstream's attributes and
 * the proxy's own writes: the size never goes below bytes still to be
 * written, and the proxy's own times hide its write-back from clients. */
void file_shown_update(struct cfile *f);


/* ---- write-back (cache_wb.c) ---- */

/* Add (sign 1) or remove (sign -1) p's extents from the byte counters. */
void wb_account(struct cache *c, struct cpage *p, int sign);

/* Total write-back bytes of f. */
uint64_t wb_total(const struct cfile *f);

/* After p's extents changed: pin or unpin it, keep f's page index and the
 * dirty-file list in step. */
void wb_pages_update(struct cache *c, struct cpage *p);

/*
 * Replace whatever extents cover [s, e) of p (page-relative) by ne (or by
 * nothing: clean), keeping counters, pinning and indexes right.
 * Returns 0, or -1 on ENOMEM (p unchanged).
 */
int wb_replace(struct cache *c, struct cpage *p, uint32_t s,
	       uint32_t e, const struct wbext *ne);

/* The index of credential cr in the cache's table, interned. */
int cred_intern(struct cache *c, const struct nfs_cred *cr);

/* ---- fetches in flight (cache_fetch.c) ---- */

/* Free every fetch of f still in flight (the file is being freed). */
void fetch_free_all(struct cfile *f);

/* After f's generation moved from gen to gen + 1 for the proxy's own
 * write-back WRITE of [off, end): the fetches current at gen that do not
 * overlap [off, end) are carried to gen + 1, their attributes marked old
 * (cfile_wb_write_end). */
void fetch_carry(struct cfile *f, uint64_t gen, uint64_t off, uint64_t end);

/* Why f's fetch list breaks an invariant, or NULL when it is sound. */
const char *fetch_check(const struct cfile *f);

/* True if [s, e) overlaps an upstream WRITE of f in flight. */
bool run_overlaps(const struct cfile *f, uint64_t s, uint64_t e);

#endif
