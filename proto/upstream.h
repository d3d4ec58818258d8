/* SPDX-License-Identifier: MIT */
/*
 * upstream: the NFSv3 client towards the real NFS server, on libnfs 4.0's
 * raw async API driven by the caller's libevent loop. This module (and only
 * this module) includes <nfsc/...>; it meets the rest of the project through
 * plain types: NFSv3 arguments and results cross this interface as XDR
 * bytes (RFC 1813 encodings), so neither side needs the other's structs.
 *
 * States: DOWN -> CONNECTING (a host name's lookup, off the loop; MOUNT
 * MNT of the export path for the root handle, then the NFS connection and
 * an FSINFO) -> UP. Any socket error, a call timeout or a failed step
 * goes back to DOWN and a reconnect is scheduled with exponential
 * backoff (0.1 s doubling to 5 s). Calls in flight when the connection
 * is lost are completed with UPSTREAM_EDOWN.
 * A stalled server (stopped, hung) is found in about 3 s while calls
 * wait: after 1 s with calls waiting and no reply at all, an RPC NULL is
 * sent; no answer to it within 2 s drops the connection as a timeout
 * would (on a link whose smoothed reply latency srtt is longer: 2 x srtt
 * and 4 x srtt). A slow server that answers the NULL keeps its calls
 * their whole call timeout.
 *
 * A call is written to the socket inside upstream_call when the socket
 * takes it (libnfs's send(2), without MSG_NOSIGNAL): the process must
 * ignore SIGPIPE, as nfscached's main does, or a write to a connection
 * the server just closed kills it.
 */
#ifndef NFSCACHED_PROTO_UPSTREAM_H
#define NFSCACHED_PROTO_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cred.h"
#include "histogram.h"

struct event_base;
struct evdns_base;
struct upstream;

#define UPSTREAM_NPROCS		22	/* NFSv3 procedures 0..21 */
#define UPSTREAM_MAX_GIDS	NFS_CRED_MAX_GIDS
#define UPSTREAM_LIBNFS_MAX	(1024 * 1024)	/* libnfs 4.0 data limit */

enum upstream_state {
	UPSTREAM_DOWN = 0,
	UPSTREAM_CONNECTING,
	UPSTREAM_UP,
};

/* Outcome of one call, as passed to upstream_cb. */
enum upstream_status {
	UPSTREAM_OK = 0,	/* the server replied; res holds its result */
	UPSTREAM_EDOWN,		/* connection lost before the reply */
	UPSTREAM_ETIMEDOUT,	/* no reply within the call timeout */
	UPSTREAM_EPROTO,	/* RPC-level failure (denied, garbage, ...) */
};

struct upstream_params {
	const char *server;		/* host name or address */
	struct evdns_base *dns;		/* resolver on the same event base,
					 * borrowed, must outlive the
					 * upstream; may be NULL when server
					 * is an address literal */
	int nfs_port;			/* 0: ask the server's portmapper */
	int mount_port;			/* 0: ask the server's portmapper */
	const char *export_path;	/* upstream MOUNT path, e.g. "/export" */
	uint32_t max_transfer;		/* configured cap, bytes; 0 = 1 MiB */
	double call_timeout;		/* seconds before UPSTREAM_ETIMEDOUT,
					 * also bounds each connection step;
					 * 0 = 30 s */
};

/*
 * Counters this module owns (upstream_stats_get), one set per upstream,
 * declared once for struct upstream_stats and for /metrics: X(C type,
 * field, Prometheus type, metric name, help) one value, A(field, length,
 * Prometheus type, metric name, label, label set, help) one series per
 * index. daemon/ctl/metrics.c sums them over the exports and renders them
 * (HACKING.md "Adding a counter").
 */
#define UPSTREAM_METRICS(X, A) \
	A(calls, UPSTREAM_NPROCS, counter, "nfscached_upstream_rpcs_total", \
	  "procedure", nfs3_proc, \
	  "NFSv3 calls sent to the upstream server, by procedure.") \
	X(uint64_t, errors, counter, "nfscached_upstream_errors_total", \
	  "Upstream calls that got no reply (connection lost, timeout, RPC error).") \
	X(uint64_t, timeouts, counter, "nfscached_upstream_timeouts_total", \
	  "Upstream calls that timed out.") \
	X(uint64_t, probes, counter, "nfscached_upstream_probes_total", \
	  "RPC NULL probes sent because calls waited 1 s (2 x the link latency if longer) with no upstream reply.") \
	X(uint64_t, stalls, counter, "nfscached_upstream_stalls_total", \
	  "Probes unanswered within 2 s (4 x the link latency if longer): the upstream was taken as stalled and its connection dropped.") \
	X(uint64_t, connects, counter, "nfscached_upstream_connects_total", \
	  "Successful upstream (re)connections.") \
	X(uint64_t, disconnects, counter, "nfscached_upstream_disconnects_total", \
	  "Upstream connections lost.") \
	X(uint64_t, idle_closes, counter, \
	  "nfscached_upstream_idle_closes_total", \
	  "Upstream connections the server closed while no call waited, reconnected at once (no outage).") \
	X(uint64_t, bytes_sent, counter, "nfscached_upstream_sent_bytes_total", \
	  "XDR argument bytes sent upstream.") \
	X(uint64_t, bytes_received, counter, \
	  "nfscached_upstream_received_bytes_total", \
	  "XDR result bytes received from upstream.")

struct upstream_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	UPSTREAM_METRICS(X, A)
#undef X
#undef A
	/* Not exported as such: */
	uint64_t replies[UPSTREAM_NPROCS];	/* UPSTREAM_OK, by procedure */
	struct histogram latency[UPSTREAM_NPROCS];	/* seconds from send
					 * to reply, UPSTREAM_OK only
					 * (nfscached_upstream_rpc_duration_seconds) */
};

/*
 * Called with res_xdr[0..res_len) the upstream's XDR-encoded result
 * (status UPSTREAM_OK) or NULL/0 (other statuses). For a successful READ
 * with data, tail[0..tail_len) is that data, passed by reference from the
 * reply libnfs decoded (issue 16: it had been copied three times more),
 * and res_xdr encodes it as an empty opaque, its last field: the whole
 * result is res_xdr less its last 4 bytes, then the XDR opaque of tail
 * (upstream_result_join); otherwise tail is NULL and tail_len 0.
 * res_xdr and tail are borrowed: valid only during the callback. arg is
 * the caller's.
 */
typedef void (*upstream_cb)(enum upstream_status status,
			    const uint8_t *res_xdr, size_t res_len,
			    const uint8_t *tail, size_t tail_len, void *arg);

/*
 * The whole XDR result of a callback given (res_xdr, res_len, tail,
 * tail_len) as upstream_cb describes, in a new malloc'd buffer of *len
 * bytes the caller frees; a copy of res_xdr when tail is NULL. NULL on
 * ENOMEM, or EINVAL when tail is given and res_xdr does not end in an
 * empty opaque (4 zero bytes) or tail_len exceeds UINT32_MAX.
 */
uint8_t *upstream_result_join(const uint8_t *res_xdr, size_t res_len,
			      const uint8_t *tail, size_t tail_len,
			      size_t *len);

/*
 * Called on every state change; arg is the one given to upstream_new.
 * Always from the event loop: never synchronously inside upstream_new,
 * upstream_start, upstream_call or upstream_free (which changes no state
 * the caller is told about). It may call upstream_free.
 */
typedef void (*upstream_state_cb)(struct upstream *u,
				  enum upstream_state state, void *arg);

/*
 * Create an upstream client on base (borrowed; must outlive it). p is
 * copied. state_cb may be NULL. Nothing is sent until upstream_start.
 * Returns NULL on ENOMEM or a bad parameter (no server, an export path not
 * starting with '/', a port outside 0..65535, a negative call_timeout, a
 * host name without a dns resolver). A host name is looked up with
 * evdns_getaddrinfo on p->dns at the start of every connection attempt,
 * never with a blocking call; a name that does not resolve fails the
 * attempt (DOWN, retried with the backoff, the reason in
 * upstream_last_error); an address literal is used as given.
 * Allocates a 1 MiB + 64 KiB reply buffer.
 */
struct upstream *upstream_new(struct event_base *base,
			      const struct upstream_params *p,
			      upstream_state_cb state_cb, void *arg);

/*
 * Begin connecting (and keep reconnecting): the first attempt starts from
 * the event loop at once. Returns 0 (also if already started) or -1.
 */
int upstream_start(struct upstream *u);

/* Current state. */
enum upstream_state upstream_get_state(const struct upstream *u);

/*
 * The export's root handle as MOUNT returned it, or NULL before the first
 * successful mount. Borrowed; valid until the next reconnect completes.
 */
const uint8_t *upstream_root_fh(const struct upstream *u, size_t *len);

/*
 * The upstream's latency floor, seconds: the shortest reply latency (call
 * sent to reply received) of the small calls (no WRITE or COMMIT, a reply
 * of 16 KiB at most) answered in the last 10 to 20 s: the round trip of
 * the link and the server's fastest answer, without the queueing and
 * transfer times of the moment (as TCP BBR's windowed min_rtt). 0 before
 * any such reply and when none came in the last 10 to 20 s (so a random
 * READ miss fetches 4 KiB again and measures anew). Never fails.
 */
double upstream_latency_floor(const struct upstream *u);

/*
 * The upstream's READ delivery rate, bytes per second: the highest of the
 * samples of the last 10 to 20 s, one per READ reply, each the READ reply
 * bytes received while that READ was in flight (from the last READ reply
 * before it was sent to its own) over that time, at least 1 ms (as TCP
 * BBR's windowed max delivery rate; the latency floor is its min_rtt).
 * What the link and the server carried while kept busy: a reader that
 * asks for little makes low samples, which the maximum ignores; replies
 * read late and at once after an event-loop stall inflate a sample by at
 * most what piled up over its span (a round trip or more). 0 for NULL,
 * before the first sample and when none came in the last 10 to 20 s. The
 * rate of this one connection: the handlers' export sums its lanes
 * (upcall_libnfs). Event loop thread only, as every upstream_* call;
 * never fails. Source: TCP BBR's delivery rate (Cardwell et al., "BBR:
 * Congestion-Based Congestion Control", ACM Queue 14(5), 2016; Linux
 * net/ipv4/tcp_rate.c, its ack_elapsed), per reply instead of per ACK.
 */
double upstream_read_rate(const struct upstream *u);

/*
 * Effective transfer sizes in bytes: min(upstream FSINFO rtmax/wtmax,
 * UPSTREAM_LIBNFS_MAX, max_transfer). 0 before the first FSINFO.
 */
uint32_t upstream_rtmax(const struct upstream *u);
uint32_t upstream_wtmax(const struct upstream *u);

/*
 * Send NFSv3 procedure proc (0..21) with XDR-encoded arguments
 * args_xdr[0..args_len) (borrowed; copied before return) as the AUTH_SYS
 * identity cred (required; cred->machine NULL means "nfscached"; longer
 * than 255 bytes is cut).
 * Async contract: returns -1 when the call cannot be sent now (state not
 * UP, proc out of range, arguments that do not decode, a call libnfs 4.0
 * cannot encode, about 4 KiB for every procedure but WRITE, ENOMEM) and
 * then never calls back; otherwise returns 0 and calls cb exactly once, never
 * from inside upstream_call itself. There is no cancel: a caller that loses
 * interest keeps arg alive until cb runs. cb may call upstream_call and
 * upstream_free, but must not run the event loop itself.
 * A call that times out is completed with UPSTREAM_ETIMEDOUT and the
 * connection is dropped (the other calls in flight get UPSTREAM_EDOWN).
 * An RPC-level failure with the connection alive (PROC_UNAVAIL, AUTH_ERROR,
 * a reply that does not decode) gives UPSTREAM_EPROTO.
 * args_xdr must already have passed the caller's own bounded XDR decoder
 * (libnfs 4.0's decoder trusts the length fields it reads).
 */
int upstream_call(struct upstream *u, uint32_t proc,
		  const uint8_t *args_xdr, size_t args_len,
		  const struct nfs_cred *cred,
		  upstream_cb cb, void *arg);

/*
 * Why the last connection attempt, the connection or a call's RPC
 * exchange failed, for logs ("" if none since the last successful
 * connect; a call libnfs could not encode is not recorded). Borrowed;
 * valid until the next call into this module.
 */
const char *upstream_last_error(const struct upstream *u);

/* Copy the counters into *st. */
void upstream_stats_get(const struct upstream *u, struct upstream_stats *st);

/* True while a call sent on u waits for its reply or its timeout (a call
 * upstream_call refused never counts). NULL is idle. */
bool upstream_busy(const struct upstream *u);

/* Calls sent (or queued to send) on u and not yet answered: what a pool
 * of connections (upstream_connections) balances on. 0 for NULL. */
unsigned upstream_inflight(const struct upstream *u);

/*
 * The first of u's call-list invariants (upstream.c's header) that does
 * not hold, as a sentence naming it, or NULL when all hold (NULL u too).
 * Walks every call: for the invariant sweep (NFSCACHED_CHECK) and tests.
 * Loop thread, not from inside an upstream callback.
 */
const char *upstream_check_why(const struct upstream *u);

/*
 * Disconnect, complete every call in flight with UPSTREAM_EDOWN (before it
 * returns), free *u and clear the caller's pointer. NULL is ignored. Safe
 * from inside an upstream_cb or upstream_state_cb: the memory and the
 * libnfs context are then released when that callback's frame unwinds.
 */
void upstream_free(struct upstream **u);

#endif
