/* SPDX-License-Identifier: MIT */
/*
 * meta: the metadata cache, names and directory listings (RFC 1813
 * LOOKUP, READDIR, READDIRPLUS). Pure like the rest of cache/: no XDR, no
 * clock, no libevent; callers pass `now` in seconds of a monotonic clock.
 *
 * Everything is keyed by the directory's upstream handle. Each directory
 * holds a stamp, the state it was in when its entries were learned: its
 * cfile generation (cfile_gen) and its change evidence (size, mtime,
 * ctime). Callers pass the directory's current stamp on every look-up;
 * when it differs from the recorded one the directory changed (another
 * writer, or a change of the proxy's own meta was not told about): its
 * listing and negative entries are dropped and its positive entries
 * become hints, never answered again but still telling meta_name_peek
 * which file a name last named (so that the proxy's own REMOVE can
 * expire that file's attributes). The proxy's own changes are told
 * through meta_dir_mutated() with the reply's wcc_data: when the
 * pre-operation state is the recorded one, only the proxy changed the
 * directory and its names stay (the caller then updates the changed ones).
 *
 * Name entries map (directory, name) to a child handle (positive) or to
 * "no such name" (negative, valid for the caller's negative timeout from
 * when it was learned). A listing holds a directory's entries in the
 * upstream's order with the upstream's cookies and cookie verifier, as
 * far as the pages seen so far reach, and whether the last page had eof.
 *
 * Memory: one byte budget over every name entry, listing and directory
 * record (including an estimate of allocator overhead), with LRU eviction
 * of name entries and whole listings; a directory record goes with its
 * last entry. A fill that cannot fit is not stored; one listing never
 * takes more than half the budget.
 */
#ifndef NFSCACHED_CACHE_META_H
#define NFSCACHED_CACHE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"

struct meta;

#define META_NAME_MAX		255	/* longer names are not cached */
#define META_VERF_SIZE		8	/* NFS3_COOKIEVERFSIZE */

/* The state of a directory that its cached entries belong to. */
struct meta_stamp {
	uint64_t gen;		/* cfile_gen() of the directory */
	struct cwcc wcc;	/* its size, mtime and ctime */
};

/* What a name look-up found. */
enum meta_found {
	META_UNKNOWN = 0,	/* nothing valid cached */
	META_POSITIVE,		/* the name exists: its handle */
	META_NEGATIVE,		/* the name does not exist (NOENT) */
};

/* One directory entry of a listing (RFC 1813 entry3 / entryplus3). */
struct meta_dirent {
	uint64_t fileid;
	uint64_t cookie;
	const uint8_t *name;	/* namelen bytes; in a listing (not in
				 * what meta_list_put is given) a NUL
				 * follows them */
	const uint8_t *fh;	/* upstream handle, fhlen bytes; NULL if none */
	uint32_t namelen;	/* 1..META_NAME_MAX */
	uint32_t fhlen;		/* 0..CACHE_FH_MAX */
};

/* Where a cached listing continues after a cookie (meta_list_get). */
struct meta_view {
	const struct meta_dirent *e;	/* entries after the cookie */
	size_t n;
	bool complete;			/* e[n - 1] is the last entry */
	uint8_t verf[META_VERF_SIZE];	/* the upstream's cookieverf */
};

/*
 * Counters and gauges this module owns (meta_stats_get), declared once for
 * struct meta_stats and for /metrics: rows as in cache.h's CACHE_METRICS
 * (HACKING.md "Adding a counter"). names and listing_entries are exported
 * summed, as nfscached_meta_entries (daemon/ctl/metrics.c).
 */
#define META_METRICS(X, A) \
	X(uint64_t, negatives, gauge, "nfscached_meta_negative_entries", \
	  "Cached negative name entries (no such name).") \
	X(uint64_t, listings, gauge, "nfscached_meta_listings", \
	  "Cached directory listings.") \
	X(uint64_t, bytes, gauge, "nfscached_meta_bytes", \
	  "Memory held by cached names and listings.") \
	X(uint64_t, budget, gauge, "nfscached_meta_budget_bytes", \
	  "Configured budget for names and listings (meta_cache_size).") \
	X(uint64_t, evictions, counter, "nfscached_meta_evictions_total", \
	  "Names and listings evicted to stay within the budget.") \
	X(uint64_t, dir_drops, counter, "nfscached_meta_invalidations_total", \
	  "Directories whose cached names and listing were dropped because they changed.")

struct meta_stats {
#define X(t, f, k, n, h) t f;
	META_METRICS(X, )
#undef X
	/* Not exported as such: */
	uint64_t dirs;			/* gauge: directory records */
	uint64_t names;			/* gauge: name entries (of those,
					 * negatives are negative) */
	uint64_t stale;			/* gauge: of those, hints only */
	uint64_t listing_entries;	/* gauge: entries in listings */
	uint64_t refused;		/* fills not stored: no room */
};

/*
 * Create a metadata cache with a budget of `budget` bytes (0 stores
 * nothing). Returns NULL on ENOMEM. Free with meta_free.
 */
struct meta *meta_new(uint64_t budget);

/* Free *m and everything in it; clears the caller's pointer. */
void meta_free(struct meta **m);

/* The budget, bytes. */
uint64_t meta_budget(const struct meta *m);

/* Change the budget, evicting least recently used items to fit. */
void meta_set_budget(struct meta *m, uint64_t budget);

/* ---- names ---- */

/*
 * Look up name[0..nlen) in directory dir[0..dlen) whose current state is
 * cur (its attributes fresh: the caller checks). If the recorded stamp
 * differs, the directory's entries are dropped (or made hints) first,
 * and cur becomes the stamp. A negative entry
 * counts only while now < learned + neg_timeout (expired ones are
 * dropped). On META_POSITIVE the child handle is copied to fh
 * (CACHE_FH_MAX bytes, the caller's) and *fhlen. A hit is a use (LRU).
 */
enum meta_found meta_name_get(struct meta *m, const uint8_t *dir,
			      size_t dlen, const struct meta_stamp *cur,
			      const uint8_t *name, size_t nlen, double now,
			      double neg_timeout, uint8_t *fh, size_t *fhlen);

/*
 * The handle cached for name under dir whatever the stamp, hints
 * included (for the proxy's own REMOVE and RENAME, before
 * meta_dir_mutated judges the directory). Returns true and fills
 * fh/fhlen when a positive entry exists; *current tells whether it was
 * valid under the recorded stamp (false: a hint).
 */
bool meta_name_peek(const struct meta *m, const uint8_t *dir, size_t dlen,
		    const uint8_t *name, size_t nlen, uint8_t *fh,
		    size_t *fhlen, bool *current);

/*
 * Record that name exists in dir as handle fh[0..fhlen) (fhlen 1..
 * CACHE_FH_MAX), or, with fh NULL, that it does not exist (learned at
 * now), as of the directory state cur. If dir's recorded stamp differs,
 * its old entries are dropped and cur becomes the stamp. Replaces an
 * entry for the same name. Returns 0, or -1 when not stored (a name over
 * META_NAME_MAX, no room within the budget, ENOMEM).
 */
int meta_name_put(struct meta *m, const uint8_t *dir, size_t dlen,
		  const struct meta_stamp *cur, const uint8_t *name,
		  size_t nlen, const uint8_t *fh, size_t fhlen, double now);

/* Forget the entry for name in dir, if any. */
void meta_name_forget(struct meta *m, const uint8_t *dir, size_t dlen,
		      const uint8_t *name, size_t nlen);

/* ---- directories ---- */

/*
 * The proxy's own call changed (or tried to change) dir; its reply's
 * wcc_data said pre (NULL when absent) before and post (NULL when absent;
 * gen already the directory's generation after the reply) after. When
 * pre is the recorded state, only the proxy changed the directory: its
 * names stay and post becomes the stamp (the caller updates the names
 * the call changed); the listing goes unless post shows no change. In
 * every other case the directory is treated as changed (its entries
 * dropped or made hints, as for a changed stamp) and post, if given,
 * becomes the stamp. Returns true when the names were kept.
 */
bool meta_dir_mutated(struct meta *m, const uint8_t *dir, size_t dlen,
		      const struct cwcc *pre, const struct meta_stamp *post);

/* Drop everything cached under dir. */
void meta_dir_drop(struct meta *m, const uint8_t *dir, size_t dlen);

/* ---- listings ---- */

/*
 * Record a page e[0..n) of dir's listing that the upstream returned for a
 * READDIR (plus false) or READDIRPLUS (plus true) at cookie with the
 * reply's cookie verifier verf and eof flag, as of directory state cur
 * (a changed stamp drops the old entries first). A page at cookie 0
 * starts a new listing (a READDIR page does not replace a READDIRPLUS
 * listing); a later page is appended only when cookie is the listing's
 * last cookie, the verifier and kind match, and it has no eof yet. Other
 * pages are ignored. Entry bytes are copied. A listing that would take
 * more than half the budget is dropped (counted as refused).
 */
void meta_list_put(struct meta *m, const uint8_t *dir, size_t dlen,
		   const struct meta_stamp *cur, bool plus, uint64_t cookie,
		   const uint8_t *verf, const struct meta_dirent *e, size_t n,
		   bool eof);

/*
 * Find where dir's listing continues after cookie for a READDIR (plus
 * false: any listing serves) or READDIRPLUS (plus true: only a READDIRPLUS
 * listing), as of directory state cur. Cookie 0 is the start; any other
 * cookie must be one the listing handed out, with the listing's verifier
 * verf. Returns true and *v (borrowed until the next call into m that
 * changes anything), or false when the cache cannot answer. A hit is a
 * use (LRU).
 */
bool meta_list_get(struct meta *m, const uint8_t *dir, size_t dlen,
		   const struct meta_stamp *cur, bool plus, uint64_t cookie,
		   const uint8_t *verf, struct meta_view *v);

/* ---- bookkeeping ---- */

/* Copy the counters into *st. */
void meta_stats_get(const struct meta *m, struct meta_stats *st);

/* Check every invariant of m (the list at the top of meta.c); true if
 * sound. */
bool meta_check(const struct meta *m);

/* meta_check, naming what is broken: NULL when sound, else a static
 * string naming the first invariant found broken (for an abort message). */
const char *meta_check_why(const struct meta *m);

#endif
