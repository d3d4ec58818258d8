/* SPDX-License-Identifier: MIT */
/*
 * rangeset: an exact set of byte ranges, the building block of the page
 * cache (a page's `valid` and `dirty` bytes) and of a file's hole map
 * (byte ranges known to read as zeros).
 *
 * Units: every offset is a byte offset, every range is half-open
 * [start, end) with start < end, and end may be UINT64_MAX (the byte at
 * offset UINT64_MAX itself cannot be represented; no file reaches it).
 *
 * Shape: the ranges are kept sorted, disjoint and maximal: two ranges that
 * would overlap or touch ([0,10) and [10,20)) are one range [0,20), so
 * every two neighbours are separated by at least one byte not in the set.
 * The representation is therefore canonical: equal sets have equal range
 * lists.
 *
 * Storage: struct rangeset is caller-allocated (24 bytes, embedded in pages
 * and files). An empty set or a set of one range uses no heap memory (the
 * range is inline, cap == 0); from two ranges on, the ranges live in one
 * malloc'd array owned by the set, grown geometrically and given back when
 * the set drops to one range again. Lookups are binary searches, so sets of
 * thousands of ranges stay cheap. rangeset_clear() frees the array; a set
 * that goes out of scope without it leaks.
 *
 * Errors: only rangeset_add() and rangeset_remove() can allocate; they
 * return -1 with errno ENOMEM and leave the set exactly as it was. Nothing
 * else fails. An empty or inverted window (start >= end) is accepted
 * everywhere and means "no bytes".
 *
 * Not thread-safe: the owner of the page or file serialises access.
 */
#ifndef NFSCACHED_CACHE_RANGESET_H
#define NFSCACHED_CACHE_RANGESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One byte range [start, end), end > start. */
struct range {
	uint64_t start, end;
};

/* A set of byte ranges; treat the fields as private outside rangeset.c. */
struct rangeset {
	uint32_t n;		/* number of ranges */
	uint32_t cap;		/* 0: the one range (if n == 1) is inline */
	union {
		struct range one;	/* cap == 0 */
		struct range *many;	/* cap > 0: array of cap, n used */
	} u;
};

/* Static initialiser for an empty set (same as rangeset_init()). */
#define RANGESET_INIT { 0, 0, { { 0, 0 } } }

/* Make *s an empty set that holds no memory. */
void rangeset_init(struct rangeset *s);

/* Free the memory held by s and leave it empty (and reusable). */
void rangeset_clear(struct rangeset *s);

/*
 * Add the bytes [start, end) to s (set union). Ranges that overlap or touch
 * the new one merge with it into one range. start >= end adds nothing.
 * Returns 0, or -1 with errno ENOMEM when the array could not grow; s is
 * then unchanged. Only an add that creates a new separate range allocates.
 */
int rangeset_add(struct rangeset *s, uint64_t start, uint64_t end);

/*
 * Remove the bytes [start, end) from s (set difference). Removing from the
 * middle of a range splits it in two, which may need memory: returns 0, or
 * -1 with errno ENOMEM, s unchanged. start >= end removes nothing.
 */
int rangeset_remove(struct rangeset *s, uint64_t start, uint64_t end);

/*
 * Remove every byte at or past end, i.e. [end, UINT64_MAX): what a file
 * truncation does to its pages and holes. Never fails (it never splits).
 */
void rangeset_truncate(struct rangeset *s, uint64_t end);

/* True when every byte of [start, end) is in s; an empty window is true. */
bool rangeset_contains(const struct rangeset *s, uint64_t start,
		       uint64_t end);

/* True when some byte of [start, end) is in s; an empty window is false. */
bool rangeset_intersects(const struct rangeset *s, uint64_t start,
			 uint64_t end);

/* Number of bytes of [start, end) that are in s. */
uint64_t rangeset_covered(const struct rangeset *s, uint64_t start,
			  uint64_t end);

/*
 * The gaps of s inside the window: the maximal sub-ranges of [start, end)
 * that are NOT in s, in offset order (what a READ must still fetch).
 * Writes the first min(total, max) of them to out[] (out may be NULL when
 * max is 0) and returns the total number, which may exceed max: call again
 * with a bigger out[] or work through the window in steps.
 */
size_t rangeset_gaps(const struct rangeset *s, uint64_t start, uint64_t end,
		     struct range *out, size_t max);

/*
 * The parts of s inside the window [start, end), clipped to it, in offset
 * order. Same out[]/max/return convention as rangeset_gaps().
 */
size_t rangeset_ranges_in(const struct rangeset *s, uint64_t start,
			  uint64_t end, struct range *out, size_t max);

/*
 * All ranges of s in offset order; *n (if n is not NULL) gets their number.
 * The array is borrowed: it belongs to s and is valid until the next call
 * that changes s. Returns NULL for an empty set.
 */
const struct range *rangeset_ranges(const struct rangeset *s, size_t *n);

/* Total number of bytes in s. */
uint64_t rangeset_bytes(const struct rangeset *s);

/*
 * Heap memory held by s, in bytes (the array's requested size, allocator
 * overhead not counted); 0 while the set has at most one range.
 */
size_t rangeset_heap_bytes(const struct rangeset *s);

/*
 * Check the invariants: n <= cap, or cap == 0 and n <= 1; a heap array only
 * from two ranges on; start < end in every range; sorted; every two
 * neighbours separated by a gap of at least one byte. Returns true when all
 * hold. Called by the tests after every operation.
 */
bool rangeset_check(const struct rangeset *s);

#endif
