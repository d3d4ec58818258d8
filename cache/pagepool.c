/* SPDX-License-Identifier: MIT */
/*
 * pagepool: see pagepool.h (what it is for, its invariants).
 *
 * A chunk is PAGEPOOL_CHUNK bytes mapped at a PAGEPOOL_CHUNK-aligned
 * address, so a buffer's chunk is its address rounded down; chunks are
 * found by that address in a hash. Each chunk's free slots are a bitmap
 * (at most 512 slots: 2 MiB of 4 KiB pages); a buffer is handed out from
 * the lowest free slot of the first chunk on the partial list, so a chunk
 * fills in address order. Under AddressSanitizer a free slot is poisoned:
 * a use after pagepool_put is reported as it would be after free() (an
 * overflow into a neighbour in use is not: pagepool.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <uthash.h>
#include <utlist.h>

#include "pagepool.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MAP_WORDS ((PAGEPOOL_CHUNK / 4096 + 63) / 64)

struct chunk {
	uint8_t *base;			/* hash key */
	uint32_t used;			/* buffers out */
	uint64_t freemap[MAP_WORDS];	/* set bit: free slot */
	struct chunk *prev, *next;	/* partial list */
	bool partial;			/* on it */
	UT_hash_handle hh;
};

struct pagepool {
	uint32_t page_size;
	uint32_t nslots;		/* per chunk */
	struct chunk *chunks;		/* hash by base */
	struct chunk *partial;		/* chunks with a free slot */
	uint64_t nchunks, used, empty;	/* empty: chunks with used 0 */
	uint64_t keep_chunks;		/* empty ones kept up to this many
					 * chunks mapped in all */
	bool huge;			/* advise MADV_HUGEPAGE */
};

struct pagepool *pagepool_new(uint32_t page_size, uint64_t keep_bytes)
{
	struct pagepool *pp;

	if (page_size < 4096 || page_size > PAGEPOOL_CHUNK ||
	    (page_size & (page_size - 1))) {
		errno = EINVAL;
		return NULL;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	pp->page_size = page_size;
	pp->nslots = PAGEPOOL_CHUNK / page_size;
	pp->keep_chunks = (keep_bytes + PAGEPOOL_CHUNK - 1) / PAGEPOOL_CHUNK;
	pp->huge = keep_bytes >= PAGEPOOL_HUGE_MIN;
	return pp;
}

/* Map a chunk at an aligned address: map twice its size, unmap the ends. */
static uint8_t *chunk_map(bool huge)
{
	uint8_t *p = mmap(NULL, 2 * (size_t)PAGEPOOL_CHUNK,
			  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	uintptr_t a;
	size_t head;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + PAGEPOOL_CHUNK - 1) & ~(uintptr_t)(PAGEPOOL_CHUNK - 1);
	head = a - (uintptr_t)p;
	if (head)
		munmap(p, head);
	munmap((uint8_t *)a + PAGEPOOL_CHUNK, PAGEPOOL_CHUNK - head);
	/* Best effort: EINVAL without THP in the kernel, and "never" in
	 * /sys/kernel/mm/transparent_hugepage/enabled, keep 4 KiB pages. */
#ifdef MADV_HUGEPAGE
	if (huge)
		(void)madvise((void *)a, PAGEPOOL_CHUNK, MADV_HUGEPAGE);
#else
	(void)huge;
#endif
	return (uint8_t *)a;
}

static struct chunk *chunk_new(struct pagepool *pp)
{
	struct chunk *c = calloc(1, sizeof(*c));

	if (!c || !(c->base = chunk_map(pp->huge))) {
		free(c);
		return NULL;
	}
	POISON(c->base, PAGEPOOL_CHUNK);
	for (uint32_t i = 0; i < pp->nslots; i++)
		c->freemap[i / 64] |= 1ull << (i % 64);
	HASH_ADD_PTR(pp->chunks, base, c);
	DL_PREPEND(pp->partial, c);
	c->partial = true;
	pp->nchunks++;
	pp->empty++;
	return c;
}

static void chunk_unmap(struct pagepool *pp, struct chunk *c)
{
	if (c->partial)
		DL_DELETE(pp->partial, c);
	HASH_DEL(pp->chunks, c);
	UNPOISON(c->base, PAGEPOOL_CHUNK);
	munmap(c->base, PAGEPOOL_CHUNK);
	pp->nchunks--;
	if (!c->used)
		pp->empty--;
	free(c);
}

void *pagepool_get(struct pagepool *pp)
{
	struct chunk *c = pp->partial;
	uint32_t slot = 0;
	uint8_t *buf;

	if (!c && !(c = chunk_new(pp)))
		return NULL;
	for (unsigned w = 0; w < MAP_WORDS; w++)
		if (c->freemap[w]) {
			slot = w * 64 + (uint32_t)__builtin_ctzll(c->freemap[w]);
			break;
		}
	c->freemap[slot / 64] &= ~(1ull << (slot % 64));
	if (!c->used++)
		pp->empty--;
	pp->used++;
	if (c->used == pp->nslots) {
		DL_DELETE(pp->partial, c);
		c->partial = false;
	}
	buf = c->base + (size_t)slot * pp->page_size;
	UNPOISON(buf, pp->page_size);
	return buf;
}

void pagepool_put(struct pagepool *pp, void *buf)
{
	uint8_t *base, *b = buf;
	struct chunk *c;
	size_t off;
	uint32_t slot;

	if (!buf)
		return;
	base = (uint8_t *)((uintptr_t)b & ~(uintptr_t)(PAGEPOOL_CHUNK - 1));
	HASH_FIND_PTR(pp->chunks, &base, c);
	off = (size_t)(b - base);
	slot = (uint32_t)(off / pp->page_size);
	if (!c || off % pp->page_size ||
	    (c->freemap[slot / 64] & (1ull << (slot % 64))))
		abort();	/* not ours, or put twice */
	POISON(b, pp->page_size);
	c->freemap[slot / 64] |= 1ull << (slot % 64);
	pp->used--;
	if (!c->partial) {
		/* It was full: first in line for the next get. */
		DL_PREPEND(pp->partial, c);
		c->partial = true;
	}
	if (--c->used)
		return;
	if (++pp->empty > 1 && pp->nchunks > pp->keep_chunks) {
		chunk_unmap(pp, c);
		return;
	}
	/* Kept: last in line, so buffers come from chunks in use and this
	 * one stays whole for when they are full. */
	DL_DELETE(pp->partial, c);
	DL_APPEND(pp->partial, c);
}

void pagepool_free(struct pagepool **ppp)
{
	struct pagepool *pp = ppp ? *ppp : NULL;
	struct chunk *c, *tmp;

	if (!pp)
		return;
	HASH_ITER(hh, pp->chunks, c, tmp)
		chunk_unmap(pp, c);
	free(pp);
	*ppp = NULL;
}

void pagepool_stats_get(const struct pagepool *pp, struct pagepool_stats *st)
{
	st->chunks = pp->nchunks;
	st->mapped_bytes = pp->nchunks * PAGEPOOL_CHUNK;
	st->used = pp->used;
	st->huge = pp->huge;
}

const char *pagepool_check_why(const struct pagepool *pp)
{
	const struct chunk *c, *tmp;
	uint64_t n = 0, used = 0, empty = 0, partial = 0;

	HASH_ITER(hh, pp->chunks, c, tmp) {
		uint32_t free_slots = 0;

		for (unsigned w = 0; w < MAP_WORDS; w++)
			free_slots += (uint32_t)__builtin_popcountll(c->freemap[w]);
		if (c->used + free_slots != pp->nslots)
			return "a chunk's used count differs from its free map";
		if (c->partial != (free_slots > 0))
			return "a chunk with a free slot is not on the partial "
			       "list, or a full one is";
		n++;
		used += c->used;
		empty += c->used == 0;
		partial += c->partial;
	}
	DL_FOREACH(pp->partial, c)
		partial--;
	if (partial)
		return "the partial list differs from the chunks marked on it";
	if (n != pp->nchunks || used != pp->used || empty != pp->empty)
		return "the pool's counts differ from its chunks";
	if (empty > 1 && n > pp->keep_chunks + 1)
		return "more than one chunk has no buffer in use past the keep "
		       "limit";
	return NULL;
}
