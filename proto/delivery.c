/* SPDX-License-Identifier: MIT */
/*
 * delivery: a connection's READ delivery rate (see delivery.h for the
 * estimator and its sources).
 *
 * State: two max-filter windows (cur begun at start, prev the one before);
 * a reply at or past start + DELIVERY_WINDOW moves them on (prev = cur,
 * cur = 0). Invariants: cur, prev >= 0; bytes only grows; last only
 * moves forward with the caller's clock.
 */
#include "delivery.h"

void delivery_sent(const struct delivery *d, double now,
		   struct delivery_mark *m)
{
	m->bytes = d->bytes;
	m->at = d->last > 0 ? d->last : now;
}

void delivery_reply(struct delivery *d, double now, bool read, size_t bytes,
		    const struct delivery_mark *m)
{
	double span = now - m->at, rate;

	if (now - d->start >= DELIVERY_WINDOW) {
		d->prev = d->cur;
		d->cur = 0;
		d->start = now;
	}
	if (!read)
		return;
	d->bytes += (double)bytes;
	d->last = now;
	if (span < DELIVERY_MIN_SPAN)
		return;
	rate = (d->bytes - m->bytes) / span;
	if (rate > d->cur)
		d->cur = rate;
}

double delivery_rate(const struct delivery *d)
{
	return d->prev > d->cur ? d->prev : d->cur;
}
