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
