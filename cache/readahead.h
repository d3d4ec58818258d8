/* SPDX-License-Identifier: MIT */
/*
 * readahead: the per-file readahead state machine (docs/design.md "What
 * makes it more than a pass-through", lesson 4: readahead that recovers).
 * Pure: no clock, no I/O, no libevent. The caller reports every client
 * READ of a file (hits included: that is how a stream crosses its
 * trigger) and gets back the byte ranges to prefetch now; it fetches the
 * parts of them the cache lacks.
 *
 * Streams. A file has up to max_streams sequential streams, each known by
 * where its last READ ended (`next`); there is no open/close in NFSv3. A
 * READ at [off, off + len) belongs to the stream whose `next` is within
 * page_size of off (a candidate's: within max(len, 4 KiB), at most
 * page_size), or whose issued prefetch already covers off (a reader
 * that skips ahead, or parallel READs that arrive out of order). A READ
 * that belongs to no stream replaces the least recently used one as a
 * candidate: one READ is no evidence, so a candidate prefetches nothing
 * and random READs issue nothing. A candidate becomes sequential on its
 * next READ, or at once when the READ starts at offset 0 (reading a file
 * from its start) or when it missed and the caller says the bytes just
 * before it are cached (prev_cached: a stream whose state was lost, for
 * example pushed out by more than max_streams interleaved readers, picks
 * up where its prefetched data ends; see ra_prev_range()).
 *
 * Full window. What a stream grows to is sized by the link (issue 42):
 * its bandwidth-delay product, the upstream's delivery rate times its
 * latency floor, x RA_BDP_GAIN, so that the one to two windows a stream
 * keeps in flight (see Issue) hold at least one link's worth of bytes
 * even while the last window drains: with less, each window's round trip
 * leaves the pipe idle. The caller measures both numbers and passes them
 * (ra_window_size); this module never reads a clock. The full window is
 * at least the base, min(RA_BASE_WINDOW, max_window), the fixed window of
 * before issue 42 (a LAN's product is well under it, and smaller windows
 * only add READs), and at most max_window (readahead_max: the cap) and
 * 1/RA_CACHE_SHARE of the cache budget (cache_bytes), so that a stream's
 * two windows ahead take at most an eighth of the cache: readahead cannot
 * push out what readers use. With the link unknown (no rate or floor
 * measured yet) it is the base. A max_window at or under RA_BASE_WINDOW
 * therefore pins the window there, as before.
 *
 * Window. A stream that turns sequential starts with
 *   init = max(min_window, 2 x len rounded up to pages), at most the full
 *   window
 * and grows when the reader consumes it: on each following sequential
 * READ that reaches a page the stream had not reached (the kernel's
 * readahead, too, runs per page: a READ inside a page already read never
 * reaches it), x4 while below a quarter of the full window, then x2, up to
 * the full window. With the defaults (128 KiB, base 4 MiB) a stream of
 * READs of a page each issues windows of 128K, 512K, 2M, 4M, 4M...: full
 * size at its 4th sequential READ; sixteen 1 KiB READs inside one 64 KiB
 * page issue the first window only (issue 16: they had prefetched 4 MiB).
 * When the full window grows (the link measured faster) a full-size
 * stream grows again the same way; when it shrinks, a stream's next
 * window is the new size. A stream's window depends only on how far it
 * has read and on the link, never on the file's history: a sequential
 * phase after a random one ramps exactly like a fresh stream (the 2.6.x
 * bug fixed in 2004 kept an average over random reads and ramped slowly).
 *
 * Issue. While growing, every READ that grows the window issues it; at full
 * size a window is issued when a READ reaches the trigger, the start of
 * the last window issued (the kernel's PG_readahead mark). Windows are
 * contiguous from the stream's `frontier` (never before the reader: every
 * prefetched byte lies past the READ's end), so the next window is in
 * flight while the reader is still a whole window before the end of the
 * current one: between one and two windows are ahead of the reader.
 * Ranges start page-aligned and end page-aligned or at file_size; parts
 * that another stream of the file issued ahead of its own reader are left
 * out. The caller still fetches only what the cache lacks: a stream that
 * was forgotten and found again may ask for bytes already cached.
 *
 * Counters: windows and bytes issued here. Whether prefetched bytes were
 * used or wasted (evicted unread) is known only to the cache, which counts
 * it.
 *
 * Not thread-safe: the owner of the file serialises calls.
 */
#ifndef NFSCACHED_CACHE_READAHEAD_H
#define NFSCACHED_CACHE_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rangeset.h"

#define RA_STREAMS_MAX		32	/* upper bound of max_streams */
#define RA_DEFAULT_MAX_WINDOW	(64u * 1024 * 1024)
#define RA_DEFAULT_MIN_WINDOW	(128u * 1024)
#define RA_BASE_WINDOW		(4u * 1024 * 1024)	/* full window with
							 * the link unknown */
#define RA_BDP_GAIN		2	/* full window / bandwidth-delay product */
#define RA_CACHE_SHARE		16	/* full window <= cache_bytes / this */
#define RA_DEFAULT_STREAMS	8
/* Most ranges one ra_on_read() can return (a window minus the spans of
 * the other streams). */
#define RA_RANGES_MAX		(RA_STREAMS_MAX + 1)

/* Tunables, shared by all files (from the configuration), and the full
 * window of the moment (set by the caller per call, from ra_window_size). */
struct ra_params {
	uint64_t max_window;	/* bytes, the cap of every window; 0
				 * disables */
	uint64_t min_window;	/* bytes, the smallest first window */
	uint64_t cache_bytes;	/* bytes, the cache's data budget: the full
				 * window is at most 1/RA_CACHE_SHARE of it
				 * (0: no such cap) */
	uint64_t full_window;	/* bytes, what streams grow to now: 0 (the
				 * base) or a page multiple <= max_window */
	uint32_t page_size;	/* bytes, power of two: alignment, slack */
	unsigned max_streams;	/* streams per file, 1..RA_STREAMS_MAX */
};

/*
 * Counters kept per file, folded by the caller (ra_stats_add), declared
 * once for struct ra_stats and for /metrics: X(C type, field, Prometheus
 * type, metric name, help). The names follow docs/design.md "Metrics";
 * daemon/ctl/metrics.c renders the list (HACKING.md "Adding a counter"). A is
 * the list's array row (none here).
 */
#define RA_METRICS(X, A) \
	X(uint64_t, windows, counter, "nfscached_readahead_windows_total", \
	  "Readahead windows issued.") \
	X(uint64_t, bytes, counter, "nfscached_readahead_issued_bytes_total", \
	  "Bytes asked for by readahead (before the cache drops what it has).") \
	X(uint64_t, streams, counter, "nfscached_readahead_streams_total", \
	  "Sequential streams detected.")

struct ra_stats {
#define X(t, f, k, n, h) t f;
	RA_METRICS(X, )
#undef X
};

/* Per-file state; opaque. */
struct ra_state;

/*
 * Fill *p with the defaults: 64 MiB max window (the cap), 128 KiB min
 * window, no cache budget cap, the base full window, 8 streams, the given
 * page size (a power of two).
 */
void ra_params_default(struct ra_params *p, uint32_t page_size);

/*
 * True when p is usable: page_size a power of two; max_window 0 or a
 * multiple of page_size; min_window <= max_window; full_window 0 or a
 * multiple of page_size up to max_window; max_streams in
 * 1..RA_STREAMS_MAX. Every other function requires valid params.
 */
bool ra_params_valid(const struct ra_params *p);

/*
 * The full window, bytes, for a link that delivers rate bytes per second
 * (0: unknown) with a latency floor of rtt seconds (0: unknown): the
 * bandwidth-delay product rate x rtt x RA_BDP_GAIN rounded up to pages,
 * at least the base min(RA_BASE_WINDOW, max_window), at most max_window
 * and cache_bytes / RA_CACHE_SHARE (rounded down to pages; never below
 * the base). The base when either number is unknown, not finite or not
 * positive. A page multiple; p valid; the result is what the caller puts
 * in p->full_window (a copy per call). Pure: any thread. Source: TCP
 * BBR's cwnd = cwnd_gain x BtlBw x RTprop (cwnd_gain 2), with the
 * readahead window as the congestion window.
 */
uint64_t ra_window_size(const struct ra_params *p, double rate, double rtt);

/* The full window p sets, bytes: p->full_window, or the base
 * min(RA_BASE_WINDOW, max_window) when that is 0. p valid. */
uint64_t ra_full_window(const struct ra_params *p);

/*
 * Allocate the state of one file with room for p->max_streams streams and
 * no stream yet. Returns NULL with errno ENOMEM (the caller then does no
 * readahead for the file) or EINVAL (invalid p). Free with ra_state_free.
 */
struct ra_state *ra_state_new(const struct ra_params *p);

/* Free *s (NULL allowed) and clear the caller's pointer. */
void ra_state_free(struct ra_state **s);

/*
 * Report a client READ of [off, off + len) on a file of file_size bytes
 * and get the ranges to prefetch now, in offset order, in out[0..n) (at
 * most max; out may be NULL when max is 0). Returns n. The stream counts
 * what it returns as issued: fetch it, or hand back what could not be
 * fetched with ra_cancel(). A window cut short by max is cut at the first
 * range left out, which a later READ issues again.
 *
 * prev_cached: the READ is not a full hit (some of its bytes had to be
 * fetched) and every byte of ra_prev_range(p, off, len) is in cache
 * (valid or a known hole); it may start a stream at once (see the top of
 * this file). Hits never pass it: a random READ that lands inside data
 * prefetched for someone else must not look sequential. Call for every
 * READ, hits included; a READ of 0 bytes changes nothing. Never fails. Source: the idea of the Linux on-demand
 * readahead (mm/readahead.c, ondemand_readahead(), PG_readahead).
 */
size_t ra_on_read(struct ra_state *s, const struct ra_params *p,
		  uint64_t off, uint32_t len, uint64_t file_size,
		  bool prev_cached, struct range *out, size_t max);

/*
 * The bytes the caller checks for ra_on_read()'s prev_cached: the
 * 4 x len bytes (len rounded up to pages; at most the full window, at least
 * len) just before off, clipped at 0. Empty ({off, off}) when off is 0.
 * Four READs' worth, because one or two cached pages before a random
 * READ are common (10,000 random 4 KiB READs over 1 GiB: with 2 x len,
 * 1-5% of the bytes read were prefetched for nothing; with 4 x len, under
 * 1%), while a sequential reader always has its own past READs behind it.
 */
/*
 * True if a READ at off belongs to a stream already found sequential (not
 * a candidate). Callers use it to report cache hits only to such streams:
 * a hit is no evidence of a new stream, so random reads of cached data
 * never start readahead, while a stream reading what it prefetched still
 * crosses its trigger.
 */
bool ra_in_stream(struct ra_state *s, const struct ra_params *p,
		  uint64_t off);

/*
 * True if s (NULL: none) has a stream found sequential in any slot,
 * whatever the parameters: false means ra_in_stream is false for every
 * offset and parameters. A cached READ's check before the parameters are
 * computed (nfs3_read.c read_ahead). Pure; any thread that owns s.
 */
bool ra_streaming(const struct ra_state *s);

struct range ra_prev_range(const struct ra_params *p, uint64_t off,
			   uint32_t len);

/*
 * The caller could not issue r (one of the ranges ra_on_read returned:
 * no memory, upstream error). A stream whose issued span ends inside or
 * at the end of r moves its frontier back to r.start, so a later READ
 * issues those bytes again; a range in the middle of a span is forgotten
 * (the READ path fetches it on demand).
 */
void ra_cancel(struct ra_state *s, const struct ra_params *p,
	       const struct range *r);

/*
 * The file's cached data was dropped (another writer changed it): every
 * stream keeps its window size but forgets what it issued, so its next
 * sequential READ issues a full window from the reader's position.
 */
void ra_invalidate(struct ra_state *s, const struct ra_params *p);

/* Copy s's counters into *st. */
void ra_stats_get(const struct ra_state *s, struct ra_stats *st);

/* Add every counter of x to *sum (folding files into totals). */
void ra_stats_add(struct ra_stats *sum, const struct ra_stats *x);

/*
 * Check the invariants of s under p: at most min(allocated, max_streams)
 * streams in use; per stream origin <= frontier, both page-aligned,
 * trigger in [origin, frontier], window 0 or a multiple of page_size up to
 * max_window (a stream above a full window that shrank comes down at its
 * next READ), no use stamp from the future. True when all hold.
 */
bool ra_check(const struct ra_state *s, const struct ra_params *p);

#endif
