/* SPDX-License-Identifier: MIT */
/*
 * delivery: an upstream connection's READ delivery rate, as TCP BBR
 * estimates its bottleneck bandwidth (Cardwell et al., "BBR:
 * Congestion-Based Congestion Control", ACM Queue 14(5), 2016; Linux
 * net/ipv4/tcp_rate.c), one sample per READ reply instead of per ACK.
 * Pure: no clock reads (the caller passes now, seconds on one monotonic
 * clock), no I/O; upstream.c keeps one per connection (struct upstream)
 * and one mark per call.
 *
 * A call is marked when sent (delivery_sent): the READ reply bytes
 * received so far and when the last READ reply came (the send time if
 * none came yet). Its reply, if a READ's, is one sample: the READ reply
 * bytes received since the mark (its own included) over the time since
 * the mark's last reply. That span holds the call's own round trip, so
 * replies the caller read late and all at once (an event-loop stall)
 * inflate a sample by what piled up over a round trip or more, not
 * without bound as the gap between two replies would; a reader that asks
 * for little makes low samples. The rate is the highest sample of the
 * last DELIVERY_WINDOW to 2 x DELIVERY_WINDOW seconds (two windows, moved
 * on by every reply, as the latency floor's are); samples spanning under
 * DELIVERY_MIN_SPAN are left out (a LAN's: its product is under the base
 * readahead window anyway).
 *
 * Not thread-safe: the connection's event loop owns it.
 */
#ifndef NFSCACHED_PROTO_DELIVERY_H
#define NFSCACHED_PROTO_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>

#define DELIVERY_WINDOW		10.0	/* s per max-filter window */
#define DELIVERY_MIN_SPAN	0.001	/* s a sample spans, at least */

/* One connection's state; zero it (= {0}) to start. */
struct delivery {
	double cur;		/* highest sample, bytes/s, in the window
				 * begun at start (0: none yet) */
	double prev;		/* ... in the window before it */
	double start;		/* s */
	double last;		/* s, the last READ reply (0: none yet) */
	double bytes;		/* READ reply bytes received */
};

/* What a call remembers of the connection when it is sent. */
struct delivery_mark {
	double bytes;		/* delivery.bytes then */
	double at;		/* delivery.last then, or the send time */
};

/* Mark a call sent at now (seconds) on d into *m. Never fails. */
void delivery_sent(const struct delivery *d, double now,
		   struct delivery_mark *m);

/*
 * A reply to the call marked m came at now (seconds, not before the
 * mark's): move the windows on; if read (a READ's reply), count its bytes
 * and take its sample. Never fails.
 */
void delivery_reply(struct delivery *d, double now, bool read, size_t bytes,
		    const struct delivery_mark *m);

/* The rate, bytes per second: the highest sample of the last one to two
 * windows; 0 before any and when none came in that time. */
double delivery_rate(const struct delivery *d);

#endif
