/* SPDX-License-Identifier: MIT */
/*
 * nfs3_read: the NFSv3 READ handler (RFC 1813 section 3.3.6), served from
 * the cache with joined fetches and readahead, and its counters.
 */
#ifndef NFSCACHED_DAEMON_NFS3_READ_H
#define NFSCACHED_DAEMON_NFS3_READ_H

#include <stdint.h>

#include "cache.h"
#include "proc_table.h"

struct daemon;
struct req;

/* Counters of READ (nfs3_read.c), declared once for struct nfs3_read_stats
 * and for /metrics (rows as in NFS3_OPS_METRICS, nfs3_ops.h). */
#define NFS3_READ_METRICS(X, A) \
	A(reads, CACHE_NOUTCOMES, counter, "nfscached_reads_total", "result", \
	  cache_outcome, "Client READs by cache result.") \
	X(uint64_t, read_bytes_cache, counter, \
	  "nfscached_read_bytes_total{source=\"cache\"}", \
	  "Bytes returned to client READs, by where they came from.") \
	X(uint64_t, read_bytes_upstream, counter, \
	  "nfscached_read_bytes_total{source=\"upstream\"}", NULL) \
	X(uint64_t, read_bytes_hole, counter, \
	  "nfscached_read_bytes_total{source=\"hole\"}", NULL) \
	X(uint64_t, fetches, counter, "nfscached_cache_fetches_total", \
	  "Upstream READs sent to fill cache pages.") \
	X(uint64_t, fetch_bytes, counter, "nfscached_cache_fetch_bytes_total", \
	  "Bytes the page-filling upstream READs returned.") \
	X(uint64_t, random_fetches, counter, \
	  "nfscached_read_random_fetches_total", \
	  "Client READ misses judged random whose fetch was cut to the bytes asked, 4 KiB aligned, instead of whole pages.") \
	X(uint64_t, upstream_read_bytes, counter, \
	  "nfscached_upstream_read_bytes_total", \
	  "Bytes every upstream READ returned (cache fills, readahead and bypassed READs): the read traffic on the upstream link.")

struct nfs3_read_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	NFS3_READ_METRICS(X, A)
#undef X
#undef A
};

/*
 * Make d->nfs3_read (READ's counters and the READs in flight by step),
 * all zero: at start, before the first READ. 0, or -1 (ENOMEM;
 * d->nfs3_read stays NULL). Event loop, before serving.
 */
int nfs3_read_start(struct daemon *d);

/* Free d->nfs3_read and clear it: at shutdown, once no READ is in flight
 * (after the server and the upstreams are gone). No-op when NULL. */
void nfs3_read_stop(struct daemon *d);

/* Copy d's READ counters, summed over every export, into *st (zeros
 * without nfs3_read_start). Event loop (metrics, service, tests). */
void nfs3_read_stats_get(const struct daemon *d, struct nfs3_read_stats *st);

/* Copy d's READ counters of export id into *st (zeros without
 * nfs3_read_start). Event loop. */
void nfs3_read_stats_export(const struct daemon *d, unsigned id,
			    struct nfs3_read_stats *st);

/* Count, in d's counters, one client READ of export id by outcome and
 * where its bytes came from (bytes). Needs nfs3_read_start(d). Event
 * loop. */
void nfs3_count_read(struct daemon *d, unsigned id, enum cache_outcome o,
		     uint64_t cache_bytes, uint64_t upstream_bytes,
		     uint64_t hole_bytes);

/* Count, in d's counters, one upstream READ of export id sent to fill
 * pages, returning bytes. Needs nfs3_read_start(d). Event loop. */
void nfs3_count_fetch(struct daemon *d, unsigned id, uint64_t bytes);

/*
 * The named steps of a READ, in the order one goes through them (a READ
 * may skip steps, and goes back to PLAN after DISK and after a BYPASS of
 * a file with local writes): GETATTR (revalidating the file's attributes
 * upstream), ACCESS (asking upstream whether this credential may read),
 * PLAN (against the cache), DISK (loading pages from the disk tier),
 * FETCH (waiting for upstream READs that fill pages), BYPASS (forwarded
 * as the client sent it) and REPLY (being answered).
 */
#define NFS3_READ_STEPS(X) \
	X(GETATTR, "getattr") \
	X(ACCESS, "access") \
	X(PLAN, "plan") \
	X(DISK, "disk") \
	X(FETCH, "fetch") \
	X(BYPASS, "bypass") \
	X(REPLY, "reply")

enum nfs3_read_step {
#define X(s, name) NFS3_READ_##s,
	NFS3_READ_STEPS(X)
#undef X
	NFS3_READ_NSTEPS
};

/* The lower-case name of step s ("fetch"), or "?" if out of range. */
const char *nfs3_read_step_name(enum nfs3_read_step s);

/* How many of d's READs are in each step now, into
 * n[0..NFS3_READ_NSTEPS) (zeros without nfs3_read_start). From the event
 * loop (for `nfscached cache status`). */
void nfs3_read_steps_inflight(const struct daemon *d,
			      uint64_t n[NFS3_READ_NSTEPS]);

/*
 * Check READ's invariants on d (the top of nfs3_read.c): each READ in
 * flight waits on exactly the fetches that list it, only in its FETCH
 * step, and every fetch is live and lists only READs in flight. Returns
 * NULL, or a static sentence naming the broken one. Loop thread, between
 * turns (invariant.c); O(fetches x waiters x READs), for the sampled
 * sweep only.
 */
const char *nfs3_read_check_why(const struct daemon *d);

struct upcall;

/*
 * Fill *p with the readahead parameters a READ through upc (an export's
 * upstream, borrowed) uses now: d->ra_params (the configuration's cap,
 * minimum, streams, cache budget) with p->full_window set by
 * ra_window_size from upc's READ delivery rate (bytes/s) and latency
 * floor (s), both as measured at this moment; the base window while
 * either is unknown. With readahead off (max_window 0) p is d's as is.
 * Never fails. Event loop only (the upstream's numbers are the loop's).
 * Also what /metrics shows as nfscached_readahead_window_bytes.
 */
void nfs3_read_ra_params(const struct daemon *d, const struct upcall *upc,
			 struct ra_params *p);

/* READ r (arguments decoded, client handles). OP_PENDING or OP_DONE. */
enum op_status nfs3_op_read(struct req *r);

#endif
