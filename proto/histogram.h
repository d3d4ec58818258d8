/* SPDX-License-Identifier: MIT */
/*
 * histogram: a fixed-bucket latency histogram in the shape Prometheus
 * exposes (_bucket{le=...}, _sum, _count). Header only and free of
 * dependencies, so that every layer that times calls (the upstream client
 * in proto/, the server in daemon/) shares one set of bucket bounds.
 *
 * Buckets are stored non-cumulative: buckets[i] counts observations v with
 * bound(i-1) < v <= bound(i); the last bucket (index HISTOGRAM_NBOUNDS) is
 * +Inf. A renderer sums them up to get Prometheus's cumulative counts.
 * Invariant: count == sum of buckets[].
 */
#ifndef NFSCACHED_PROTO_HISTOGRAM_H
#define NFSCACHED_PROTO_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_NBOUNDS	16			/* finite bounds */
#define HISTOGRAM_NBUCKETS	(HISTOGRAM_NBOUNDS + 1)	/* and +Inf */

struct histogram {
	uint64_t buckets[HISTOGRAM_NBUCKETS];	/* non-cumulative */
	uint64_t count;				/* observations */
	double sum;				/* seconds */
};

/*
 * Upper bound of bucket i in seconds, 100 us to 10 s in 1-2.5-5 steps;
 * i >= HISTOGRAM_NBOUNDS is +Inf (returned as a negative number, which no
 * observation compares to: callers test i against HISTOGRAM_NBOUNDS).
 */
static inline double histogram_bound(unsigned i)
{
	static const double bounds[HISTOGRAM_NBOUNDS] = {
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
		0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	};

	return i < HISTOGRAM_NBOUNDS ? bounds[i] : -1;
}

/* Record one observation of secs seconds (negative counts as 0). */
static inline void histogram_observe(struct histogram *h, double secs)
{
	unsigned i = 0;

	if (!(secs > 0))
		secs = 0;
	while (i < HISTOGRAM_NBOUNDS && secs > histogram_bound(i))
		i++;
	h->buckets[i]++;
	h->count++;
	h->sum += secs;
}

/*
 * histogram_observe for a histogram that one thread writes and others
 * read (relaxed atomic stores of each field: a reader's sum may lag by
 * the observation under way, never tear). Only its writer's thread.
 */
static inline void histogram_observe_relaxed(struct histogram *h,
					     double secs)
{
	unsigned i = 0;
	double sum;

	if (!(secs > 0))
		secs = 0;
	while (i < HISTOGRAM_NBOUNDS && secs > histogram_bound(i))
		i++;
	__atomic_store_n(&h->buckets[i],
			 __atomic_load_n(&h->buckets[i], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->count,
			 __atomic_load_n(&h->count, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	__atomic_load(&h->sum, &sum, __ATOMIC_RELAXED);
	sum += secs;
	__atomic_store(&h->sum, &sum, __ATOMIC_RELAXED);
}

/* Add the observations of src, which another thread writes with
 * histogram_observe_relaxed, to dst (relaxed atomic loads). Any thread. */
static inline void histogram_merge_relaxed(struct histogram *dst,
					   const struct histogram *src)
{
	double sum;

	for (unsigned i = 0; i < HISTOGRAM_NBUCKETS; i++)
		dst->buckets[i] += __atomic_load_n(&src->buckets[i],
						   __ATOMIC_RELAXED);
	dst->count += __atomic_load_n(&src->count, __ATOMIC_RELAXED);
	__atomic_load(&src->sum, &sum, __ATOMIC_RELAXED);
	dst->sum += sum;
}

/* Add src's observations to dst. */
static inline void histogram_merge(struct histogram *dst,
				   const struct histogram *src)
{
	for (unsigned i = 0; i < HISTOGRAM_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
}

#endif
