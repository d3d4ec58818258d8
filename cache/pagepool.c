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
#include <pthread.h>
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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14 */
#endif

/*
 * The prefault thread's side of a huge pool (pagepool.h, "Ahead"). Under
 * mu: ready[0..nready) are chunks mapped and faulted in, not yet in the
 * pool; want is how many the pool asks for (nready <= want always: the
 * pool trims, the thread stops); busy while the thread maps one outside
 * the lock; failed after a map failed, until want changes.
 */
struct ahead {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;		/* the thread: want or stop changed */
	pthread_cond_t idle;		/* pagepool_ahead_wait */
	uint8_t **ready;		/* cap slots */
	uint64_t nready, want, cap;
	bool busy, failed, stop;
};

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
	uint64_t inline_maps;		/* chunks mapped with none ready */
	uint64_t ahead_taken;		/* chunks taken from the thread */
	bool prealloc;			/* the thread fills the keep limit */
	struct ahead *ahead;		/* NULL unless huge or prealloc */
};

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

/* Fault a fresh chunk in: one madvise (Linux 5.14), else a write per
 * 4 KiB page (the memory reads as zeros either way). */
static void chunk_fault_in(uint8_t *p)
{
	if (madvise(p, PAGEPOOL_CHUNK, MADV_POPULATE_WRITE) == 0)
		return;
	for (size_t off = 0; off < PAGEPOOL_CHUNK; off += 4096)
		((volatile uint8_t *)p)[off] = 0;
}

/* The prefault thread: keep want chunks ready, as ahead's comment says. */
static void *ahead_main(void *arg)
{
	struct pagepool *pp = arg;
	struct ahead *a = pp->ahead;
	uint8_t *p;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		if (a->failed || a->nready >= a->want) {
			pthread_cond_broadcast(&a->idle);
			pthread_cond_wait(&a->work, &a->mu);
			continue;
		}
		a->busy = true;
		pthread_mutex_unlock(&a->mu);
		if ((p = chunk_map(pp->huge)))
			chunk_fault_in(p);
		pthread_mutex_lock(&a->mu);
		a->busy = false;
		if (!p) {
			a->failed = true;	/* ENOMEM: the pool maps its own */
		} else if (a->nready < a->want && !a->stop) {
			a->ready[a->nready++] = p;
		} else {
			pthread_mutex_unlock(&a->mu);
			munmap(p, PAGEPOOL_CHUNK);
			pthread_mutex_lock(&a->mu);
		}
	}
	pthread_cond_broadcast(&a->idle);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Chunks the pool asks to have ready: PAGEPOOL_AHEAD_MAX, at most an
 * eighth of the keep limit (the whole keep limit when preallocating),
 * and never past it with the chunks mapped. */
static uint64_t ahead_target(const struct pagepool *pp)
{
	uint64_t room = pp->keep_chunks > pp->nchunks ?
			pp->keep_chunks - pp->nchunks : 0;
	uint64_t cap = pp->keep_chunks / 8;

	if (cap > PAGEPOOL_AHEAD_MAX)
		cap = PAGEPOOL_AHEAD_MAX;
	if (pp->prealloc)
		cap = pp->keep_chunks;
	return room < cap ? room : cap;
}

/* Tell the thread how many chunks to keep ready now; unmap ready ones
 * past that (the pool grew to its keep limit), outside the lock. */
static void ahead_want(struct pagepool *pp)
{
	struct ahead *a = pp->ahead;
	uint64_t want;
	uint8_t *p;

	if (!a)
		return;
	want = ahead_target(pp);
	pthread_mutex_lock(&a->mu);
	if (a->want != want)
		a->failed = false;	/* try mapping again */
	a->want = want;		/* first: the thread adds no more past it */
	while (a->nready > want) {
		p = a->ready[--a->nready];
		pthread_mutex_unlock(&a->mu);
		munmap(p, PAGEPOOL_CHUNK);
		pthread_mutex_lock(&a->mu);
	}
	if (a->nready < want)
		pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
}

/* A ready chunk, or NULL when the thread has none. */
static uint8_t *ahead_take(struct pagepool *pp)
{
	struct ahead *a = pp->ahead;
	uint8_t *p = NULL;

	if (!a)
		return NULL;
	pthread_mutex_lock(&a->mu);
	if (a->nready)
		p = a->ready[--a->nready];
	pthread_mutex_unlock(&a->mu);
	return p;
}

/* Stop and join the thread, unmap what it had ready, free it. */
static void ahead_stop(struct pagepool *pp)
{
	struct ahead *a = pp->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	while (a->nready)
		munmap(a->ready[--a->nready], PAGEPOOL_CHUNK);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->idle);
	pthread_mutex_destroy(&a->mu);
	free(a->ready);
	free(a);
	pp->ahead = NULL;
}

/* Start the prefault thread of a huge (or preallocating) pool, with room
 * for the chunks ahead_target may ask for; without one (no memory, no
 * thread) the pool faults its chunks in itself, as a small pool does. */
static void ahead_start(struct pagepool *pp)
{
	struct ahead *a = calloc(1, sizeof(*a));

	if (!a)
		return;
	a->cap = pp->prealloc ? pp->keep_chunks : PAGEPOOL_AHEAD_MAX;
	if (!(a->ready = calloc(a->cap ? a->cap : 1, sizeof(*a->ready)))) {
		free(a);
		return;
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_cond_init(&a->idle, NULL);
	pp->ahead = a;
	if (pthread_create(&a->thread, NULL, ahead_main, pp) != 0) {
		pthread_cond_destroy(&a->work);
		pthread_cond_destroy(&a->idle);
		pthread_mutex_destroy(&a->mu);
		free(a->ready);
		free(a);
		pp->ahead = NULL;
		return;
	}
	ahead_want(pp);
}

struct pagepool *pagepool_new(uint32_t page_size, uint64_t keep_bytes,
			      bool preallocate)
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
	pp->prealloc = preallocate && pp->keep_chunks > 0;
	if (pp->huge || pp->prealloc)
		ahead_start(pp);
	return pp;
}

static struct chunk *chunk_new(struct pagepool *pp)
{
	struct chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if ((c->base = ahead_take(pp))) {
		pp->ahead_taken++;
	} else if ((c->base = chunk_map(pp->huge))) {
		pp->inline_maps++;
	} else {
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
	ahead_want(pp);
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
	ahead_want(pp);
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
	ahead_stop(pp);
	HASH_ITER(hh, pp->chunks, c, tmp)
		chunk_unmap(pp, c);
	free(pp);
	*ppp = NULL;
}

void pagepool_stats_get(const struct pagepool *pp, struct pagepool_stats *st)
{
	st->chunks = pp->nchunks;
	st->ahead = 0;
	if (pp->ahead) {
		pthread_mutex_lock(&pp->ahead->mu);
		st->ahead = pp->ahead->nready;
		pthread_mutex_unlock(&pp->ahead->mu);
	}
	st->mapped_bytes = (pp->nchunks + st->ahead) * PAGEPOOL_CHUNK;
	st->used = pp->used;
	st->huge = pp->huge;
	st->inline_maps = pp->inline_maps;
	st->ahead_taken = pp->ahead_taken;
}

void pagepool_ahead_wait(struct pagepool *pp)
{
	struct ahead *a = pp->ahead;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	while (!a->stop && (a->busy || (!a->failed && a->nready < a->want)))
		pthread_cond_wait(&a->idle, &a->mu);
	pthread_mutex_unlock(&a->mu);
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
	if (pp->ahead) {
		const char *why = NULL;

		pthread_mutex_lock(&pp->ahead->mu);
		if (pp->ahead->nready > pp->ahead->want ||
		    pp->ahead->want != ahead_target(pp))
			why = "the prefault thread holds more chunks ready than "
			      "the pool wants, or wants a stale count";
		pthread_mutex_unlock(&pp->ahead->mu);
		return why;
	}
	return NULL;
}
