/* SPDX-License-Identifier: MIT */
/*
 * pagepool: the cache's page buffers (page_size bytes each), carved from
 * 2 MiB chunks mapped once and kept, advised for transparent huge pages
 * (madvise(2) MADV_HUGEPAGE) unless the pool is small (below).
 *
 * Why not malloc: a cold read fills a new page per 64 KiB of file. From
 * malloc each one is fresh memory, faulted in 4 KiB at a time (16 faults
 * per 64 KiB page, each several microseconds on a virtual machine), and
 * a freed page may go back to the kernel and fault again when reused.
 * Here a chunk faults once per huge page when THP is enabled
 * ("madvise" or "always" in /sys/kernel/mm/transparent_hugepage/enabled;
 * with "never" it is 4 KiB pages, as before), and a freed buffer stays
 * mapped for the next page. Measured on W4 (cold sequential 64 KiB
 * READs, bench/run.sh): docs/operations.md, "Memory".
 *
 * Memory: a chunk whose last buffer comes back stays mapped while the
 * pool maps no more than its keep limit (the cache's pages at its budget,
 * rounded up to whole chunks), or when it is the only empty one; past the
 * limit it is unmapped. A cache that evicts to stay within its budget
 * thus reuses mapped chunks instead of unmapping them and zeroing new
 * ones (W3, writing more than the cache holds: 17% of the CPU was the
 * kernel clearing new huge pages). A chunk is mapped only when every
 * mapped one is full, so the pool maps at most (peak buffers in use) /
 * (buffers per chunk) + 1 chunks, and at most the keep limit plus one
 * once that peak is past.
 *
 * Ahead: a huge pool (below) starts one thread that maps chunks and
 * faults them in (madvise MADV_POPULATE_WRITE) before the pool needs
 * them, so the thread that fills pages does not pay for first touching
 * memory: on the benchmark's virtual machine that was 85% of nfscached's
 * CPU on a cold sequential read (kernel clear_page under the copy into a
 * new page), and W4 with one READ in flight went from about 220 to 345
 * MB/s with it done beforehand. The thread keeps up to an eighth of the
 * keep limit ready, at most PAGEPOOL_AHEAD_MAX chunks, and never more
 * than the keep limit minus the chunks mapped: the pool with its ready
 * chunks still maps at most the keep limit plus one. When the thread has
 * none ready (it fell behind, or a map failed) the pool maps its own as
 * before. Ready chunks are resident: they count in the pool's mapped
 * bytes.
 *
 * Preallocate (cache_preallocate): the thread is asked for every chunk
 * up to the keep limit, not an eighth of it, so the whole budget's pages
 * are mapped and resident soon after start, off the loop: no call ever
 * pays for first touching memory, and a budget the machine cannot hold
 * shows at start, not on the first busy day. Calls served meanwhile take
 * ready chunks as they come. On the benchmark's virtual machine a first
 * touch costs about 1.8 ms of CPU per MiB (huge pages; 2.8 ms with 4 KiB
 * pages) against about 0.06 ms for memory touched before: a cold W4 read
 * by a fresh daemon spent 70% of its CPU there (docs/operations.md,
 * "Memory").
 *
 * A small pool (keep limit under PAGEPOOL_HUGE_MIN, i.e. cache_size under
 * about 64 MiB) is not advised for huge pages: a huge page is resident
 * whole, so a 1 MiB cache would hold 2 MiB; with 4 KiB pages only what
 * was touched is resident.
 *
 * Under AddressSanitizer a free slot is poisoned (a use after put is
 * reported), but buffers in use sit next to each other with no red zone:
 * an overflow from one page into a neighbour in use is not reported, as
 * it would be between two malloc'd buffers.
 *
 * Not thread-safe: the cache's one thread owns it (the prefault thread
 * touches only its own ready chunks, under its own lock).
 *
 * Invariants (pagepool_check_why): every chunk's used count is the number
 * of clear bits in its free map (a set bit: the slot is free); a chunk is
 * on the partial list exactly when it has a free slot; the pool's chunk
 * and used counts are the sums over its chunks; at most one chunk has no
 * buffer in use while the pool maps more than its keep limit; the
 * prefault thread is asked for exactly the count above and holds no more
 * ready than that.
 */
#ifndef NFSCACHED_CACHE_PAGEPOOL_H
#define NFSCACHED_CACHE_PAGEPOOL_H

#include <stdbool.h>
#include <stdint.h>

#define PAGEPOOL_CHUNK (2u * 1024 * 1024)	/* bytes, one x86-64 huge page */
#define PAGEPOOL_HUGE_MIN (64ull << 20)	/* keep limit from which chunks are
					 * advised for huge pages and
					 * faulted in ahead */
#define PAGEPOOL_AHEAD_MAX 16u		/* chunks kept ready: 32 MiB */

struct pagepool;

struct pagepool_stats {
	uint64_t chunks;	/* chunks mapped in the pool */
	uint64_t ahead;		/* chunks faulted in and ready, not in it */
	uint64_t mapped_bytes;	/* (chunks + ahead) * PAGEPOOL_CHUNK */
	uint64_t used;		/* buffers handed out and not returned */
	uint64_t inline_maps;	/* chunks the pool mapped itself (none was
				 * ready) since it was made */
	uint64_t ahead_taken;	/* chunks it took ready since then */
	bool huge;		/* chunks advised MADV_HUGEPAGE, and the
				 * prefault thread runs (it runs too
				 * when preallocating) */
};

/*
 * A pool of page_size buffers that keeps empty chunks while it maps at
 * most keep_bytes (rounded up to whole chunks; 0: one empty chunk only),
 * advised for huge pages when keep_bytes >= PAGEPOOL_HUGE_MIN.
 * page_size: a power of two from 4 KiB to PAGEPOOL_CHUNK bytes. A small
 * pool maps nothing yet; a huge one, or one told to preallocate (with a
 * keep limit above 0), starts its prefault thread, which begins faulting
 * chunks in at once: an eighth of the keep limit ahead (at most
 * PAGEPOOL_AHEAD_MAX chunks), or all of it when preallocating (a pool
 * whose thread cannot start works without it). Returns NULL (errno
 * EINVAL) for another page_size, or on ENOMEM. Free with pagepool_free.
 * Any thread; the pool then belongs to the caller's thread.
 */
struct pagepool *pagepool_new(uint32_t page_size, uint64_t keep_bytes,
			      bool preallocate);

/*
 * A buffer of page_size bytes, aligned to page_size, contents undefined
 * (a reused buffer keeps its last bytes). Owned by the caller until
 * pagepool_put. NULL when a new chunk cannot be mapped (mmap's ENOMEM).
 */
void *pagepool_get(struct pagepool *pp);

/*
 * Return buf (from pagepool_get of this pool; NULL is ignored). A chunk
 * left with no buffer in use is unmapped when the pool maps more than its
 * keep limit and another chunk is empty too. Aborts on a pointer this pool did not hand out (a double put
 * included): that is memory corruption, not an error to report.
 */
void pagepool_put(struct pagepool *pp, void *buf);

/* Stop and join the prefault thread, unmap every chunk (ready ones too)
 * and free the pool (*ppp becomes NULL). Buffers still out become
 * invalid. NULL or *ppp NULL: nothing. */
void pagepool_free(struct pagepool **ppp);

/* The pool's counters. */
void pagepool_stats_get(const struct pagepool *pp, struct pagepool_stats *st);

/*
 * Block until the prefault thread is idle: it holds the chunks the pool
 * wants ready, or its last map failed. Returns at once for a pool without
 * the thread. For tests, which must not sleep and hope; the daemon never
 * waits for it.
 */
void pagepool_ahead_wait(struct pagepool *pp);

/* NULL when the invariants above hold, else the name of the first that
 * does not. */
const char *pagepool_check_why(const struct pagepool *pp);

#endif
