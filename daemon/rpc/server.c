/* SPDX-License-Identifier: MIT */
/*
 * server: listeners, connections and requests (see server.h).
 *
 * Connection states: OPEN (reading, or paused by backpressure) -> CLOSED
 * (bufferevent freed, socket closed; requests still in flight keep the
 * struct alive through their references) -> freed at the last reference.
 * Invariants: conn.inflight counts the requests that reference the
 * connection; server.inflight is their sum; a paused connection has its
 * read event off and is resumed only through an activation of it, run
 * later in the loop's turn, so a synchronous reply never re-enters the
 * record loop. A client's EOF with
 * calls in flight half-closes the connection (half_closed: reading off,
 * never resumed, a partial record ignored by record_timeout); the release
 * of its last call closes it, and its replies linger out as any closed
 * connection's, but with idle_timeout, not 5 s, for a write to progress.
 *
 * Calls are read in one loop turn: the connection's own read event (rd,
 * not its bufferevent's, which only writes) reads what the socket holds
 * into the connection's buffer (in) with one recv per 256 KiB or more,
 * up to 1 MiB (conn_drain), unless the connection should pause. Records
 * are pulled from in only. libevent's own read would cost an ioctl(FIONREAD)
 * and a 4 KiB read per wake-up before that: on the benchmark's virtual
 * machine a system call costs about 1 us, and a wake-up with 16 cached
 * READs in flight carried 5.6 calls.
 *
 * Replies are written without a loop turn: an open connection keeps its
 * bufferevent's EV_WRITE disabled while its output is empty; a reply
 * added to the output queues the connection (flush_queued, a reference
 * held) on the server's flush event, activated to run in the same loop
 * iteration after the callbacks already due, which writes each queued
 * output at once (one writev for all the replies of that iteration) and
 * enables EV_WRITE only for what the socket did not take. So a reply
 * costs one system call, not an epoll_ctl to watch for room, a wake-up,
 * the write and an epoll_ctl to stop watching. Invariant: an open
 * connection with output and EV_WRITE disabled is queued.
 *
 * Hostile and overloaded clients: a sweep timer closes connections whose
 * current record started (first mark byte read, or bytes waiting) more than
 * record_timeout ago while the proxy was reading (time paused by
 * backpressure does not count), and connections idle (nothing in flight,
 * no partial record, no bytes waiting) for idle_timeout. New connections
 * past max_connections (capped by the descriptor budget) or past
 * max_connections_per_client from one address are refused: accepted and
 * closed at once. A peer_count per client address counts its open
 * connections; it exists exactly while that count is above zero.
 *
 * The budget (server_budget): every connection counts the bytes it holds
 * (out_bytes: its bufferevent's output, kept by an evbuffer callback;
 * in_bytes: its in buffer, counted after each change by conn_in_sync;
 * rec_bytes: the records of its calls in flight) and the server their
 * sum (held). Invariant: out_bytes and in_bytes equal their buffers'
 * lengths between callbacks; held is the sum of the open and
 * lingering connections' three counts plus held_detached, the records in
 * flight of closed connections whose socket is gone. A connection over
 * an equal share of the budget while held is at or over it stops reading
 * (budget_paused); when held falls under BUDGET_RESUME_NUM/DEN of the
 * budget the resume event walks the open connections and resumes those.
 * A closed connection's in buffer is emptied at the close (nothing more
 * is read from it). The total can pass the budget by what the connections
 * under their share read next: a reply each (at most max_transfer and its
 * header) and the replies of calls already in flight. With threads > 1
 * each connection loop reads held without a lock (relaxed atomics), so
 * each may admit one call before it sees another loop's reservation: a
 * reply per connection loop more.
 *
 * Strangers: when a listed client (conn_listed) would be refused for
 * max_connections or the descriptor limit, the oldest open connection
 * from an address no export lists (judged again at that moment, the
 * host name only if already known) is closed instead (CLOSE_NOT_LISTED).
 *
 * Loops (`threads`, docs/design.md): the server has one struct sloop per
 * event loop (daemon/base/loops.h). Listeners, admission (limits, the
 * per-address counts, strangers) and the DRC live on loop 0, which also
 * runs every handler. With threads > 1 each accepted connection is handed
 * to one of loops 1..n-1 in turn and lives there for its life: its
 * bufferevent, records, decoding, replies, timeouts and pauses are that
 * loop's. A decoded call is posted to loop 0 (r->handed); the handler's
 * reply is encoded there into a buffer of its own (a referenced tail
 * copied in, so that no page of the cache is released on another loop)
 * and posted back with the request, which the connection's loop delivers
 * and releases. So a connection's fields are touched by its loop only,
 * but for the immutable peer names the handlers read and the reference
 * count (atomic). Shared by the loops: the held bytes, the calls in
 * flight and the open count (atomics), the per-address counts and the
 * list of every connection (s->mu), the knobs a reload changes (relaxed
 * atomics, server_reconf); each loop's counters are its own, written
 * with relaxed atomic stores and summed by server_stats_get.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <uthash.h>
#include <utlist.h>

#include "daemon.h"
#include "checkobj.h"
#include "drc.h"
#include "log.h"
#include "loops.h"
#include "mclock.h"
#include "nfs3_prot.h"
#include "peername.h"
#include "refusal.h"
#include "rpcrec.h"
#include "server.h"

#define CONN_MAGIC 0x434f4e4eu
#define CONN_IO_CHUNK (1024 * 1024)	/* bytes per socket read or write */
#define CONN_READ_SPACE (256 * 1024)	/* bytes per recv of conn_drain */
#define CONN_OUT_ROOM (16 * 1024 - 128) /* an output chain of 16 KiB, less
					 * libevent's chain header */
#define REQ_MAGIC 0x52455121u
#define SWEEP_MAX_S 0.5		/* longest pause between timeout sweeps */
#define LIMIT_LOG_S 10.0	/* refused connections: one line per */
#define FD_RESERVE_PER_EXPORT 8	/* upstream sockets of one export */
#define BUDGET_RESUME_NUM 3	/* resume budget-paused connections under */
#define BUDGET_RESUME_DEN 4	/* 3/4 of the budget */
#define BUDGET_AUTO_DIV 8	/* automatic budget: cache_size / 8, and at
				 * most memory limit / 8 */

/* Open connections from one client address. */
struct peer_count {
	char host[INET6_ADDRSTRLEN];	/* numeric, the hash key */
	unsigned n;
	UT_hash_handle hh;
};

struct sloop;

struct conn {
	uint32_t magic;
	unsigned refs;			/* atomic: a handed request's DRC
					 * waiter may drop one on loop 0 */
	bool closed;
	bool paused;
	bool half_closed;		/* the client sent EOF with calls in
					 * flight: reading off, closed
					 * once the last is answered */
	bool lingering;			/* closed, flushing its last replies */
	bool budget_paused;		/* paused (also) for the budget */
	bool flush_queued;		/* on sl->flush_list */
	bool doomed;			/* picked to make room (s->mu) */
	enum conn_close_reason close_pending; /* conn_close_deferred's; 0
					 * (CLOSE_EOF, never deferred): none */
	struct conn *flush_next;
	struct server *srv;
	struct sloop *sl;		/* the loop it lives on */
	struct loop_msg msg;		/* its adoption, posted to its loop */
	struct loop_msg room_msg;	/* its close to make room (doomed) */
	evutil_socket_t fd;		/* its socket; bev owns it once
					 * adopted by its loop */
	struct bufferevent *bev;	/* writes only (EV_READ never on) */
	struct event *rd;		/* reads: EV_READ, persistent; pending
					 * exactly while reading is on */
	struct evbuffer *in;		/* read, not yet pulled as records */
	struct sockaddr_storage peer;
	char peer_name[INET6_ADDRSTRLEN + 8];
	char peer_host[INET6_ADDRSTRLEN];
	struct rpcrec *rec;
	unsigned inflight;
	uint32_t only_prog;		/* the one program served; 0: all */
	double rec_start;		/* when the current record began;
					 * 0: between records */
	double last_active;		/* last bytes received or call done */
	uint64_t records;		/* records read so far */
	size_t out_bytes;		/* bytes in bev's output */
	size_t in_bytes;		/* bytes in in */
	size_t rec_bytes;		/* records of calls in flight */
	struct peer_count *pc;		/* this address's count (s->mu) */
	struct conn *prev, *next;	/* its loop's open or lingering list */
	struct conn *gprev, *gnext;	/* s->all (s->mu) */
};

/* One event loop's part of the server: its connections and events. */
struct sloop {
	struct server *srv;
	unsigned idx;			/* the loop's number */
	struct event_base *base;	/* borrowed */
	struct conn *conns;		/* open, on this loop */
	struct conn *lingering;		/* closed, still flushing replies */
	struct event *sweep;		/* timeout sweep timer */
	struct event *flush;		/* writes flush_list's outputs */
	struct conn *flush_list;	/* open connections with replies */
	struct event *resume;		/* resumes budget-paused connections */
	bool budget_waiters;		/* a connection may be budget_paused */
	struct loop_msg resume_msg;	/* another loop's resume, posted */
	bool resume_posted;		/* atomic: resume_msg is posted */
	struct loop_msg drain_msg;	/* server_drain's, posted */
	struct loop_chain *pend;	/* requests for loop k (pend[k]),
					 * posted by handoff; threads > 1 */
	struct event *handoff;		/* posts pend's chains; threads > 1 */
	struct server_stats st;		/* what this loop counted */
};

struct listener {
	struct evconnlistener *l;
	struct server *srv;
	uint32_t only_prog;		/* the one program served; 0: all */
	struct accept_guard *guard;
	struct listener *next;
};

struct server {
	struct daemon *d;
	const struct proc_table *procs;	/* d->procs: the rows it serves */
	struct loops *loops;		/* d->loops, borrowed; NULL: one */
	unsigned nloops;
	struct sloop *sl;		/* nloops of them; owned */
	unsigned nsl;			/* of sl[] made (server_new) */
	uint32_t max_reply_buffer;	/* fixed at start */
	uint32_t max_transfer;		/* fixed at start */
	unsigned next_sl;		/* the loop the next connection gets */
	struct listener *listeners;	/* loop 0 */
	bool draining;			/* atomic: stopping, read no calls */
	unsigned drained;		/* atomic: loops that ran server_drain's
					 * message */
	unsigned inflight;		/* atomic */
	uint64_t connections_open;	/* atomic */
	struct drc *drc;		/* loop 0 */
	pthread_mutex_t mu;		/* guards peers, all, c->pc, doomed */
	struct peer_count *peers;	/* uthash by host */
	struct conn *all;		/* every open connection, oldest first */
	uint32_t fd_cap;		/* connections the descriptors allow */
	double limit_logged;		/* last "refusing" line, daemon_now */
	uint64_t limit_unlogged;	/* refusals since that line */
	uint64_t held;			/* atomic: bytes held, all connections */
	uint64_t held_detached;		/* atomic: records in flight of closed
					 * connections without a socket */
	uint64_t mem_limit;		/* bytes the process may use; 0: none
					 * known */
	uint64_t budget_waiting;	/* atomic: bit k, loop k's
					 * budget_waiters */
	/* The knobs the loops read (relaxed atomics; server_reconf): */
	uint64_t budget;		/* server_budget's */
	double idle_timeout, record_timeout;
	uint32_t max_requests_per_conn;
	uint32_t refused[SERVER_REFUSED_MAX]; /* programs turned off: every
					 * call PROG_UNAVAIL */
	unsigned nrefused;		/* of refused[] in use */
};

/* A counter of a loop's own stats: written by that loop only, read by
 * server_stats_get on loop 0 (relaxed: a sum, no order). */
#define STAT_ADD(field, n) \
	__atomic_store_n(&(field), \
			 __atomic_load_n(&(field), __ATOMIC_RELAXED) + (n), \
			 __ATOMIC_RELAXED)
#define STAT_INC(field) STAT_ADD(field, 1)
#define RLOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RSTORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* A knob of seconds: written by loop 0, read by every loop (relaxed). */
static double dload(const double *p)
{
	double v;

	__atomic_load(p, &v, __ATOMIC_RELAXED);
	return v;
}

static void dstore(double *p, double v)
{
	__atomic_store(p, &v, __ATOMIC_RELAXED);
}

static void conn_pump(struct conn *c);
static void conn_output_cb(struct evbuffer *out,
			   const struct evbuffer_cb_info *info, void *arg);

/* Run loop sl's resume: posted by another loop (resume_msg). */
static void resume_msg_fn(struct loop_msg *m);
static void resume_cb(evutil_socket_t fd, short what, void *arg);

/* Post m to loop k (at once when there is one loop). */
static void sl_post(struct server *s, unsigned k, struct loop_msg *m)
{
	if (s->nloops == 1) {
		m->next = NULL;
		m->fn(m);
		return;
	}
	loops_post(s->loops, k, m);
}

/* The handoff event: post each gathered chain of requests to its loop,
 * one lock and at most one wake-up each. Active once something was
 * gathered, it runs after the callbacks already due in this loop turn,
 * so the calls (or replies) of one turn go together. */
static void handoff_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sloop *sl = arg;

	(void)fd;
	(void)what;
	for (unsigned k = 0; k < sl->srv->nloops; k++)
		loops_post_chain(sl->srv->loops, k, &sl->pend[k]);
}

/* Post request message m from loop from to loop k with the others of
 * this turn (handoff_cb); at once when there is one loop. */
static void sl_post_batched(struct sloop *from, unsigned k,
			    struct loop_msg *m)
{
	if (from->srv->nloops == 1) {
		sl_post(from->srv, k, m);
		return;
	}
	loop_chain_add(&from->pend[k], m);
	event_active(from->handoff, 0, 0);
}

/* Wake the loops whose connections wait for the budget: own's at once,
 * the others' through their inboxes (once until it runs). */
static void budget_wake(struct server *s, struct sloop *own)
{
	uint64_t mask = RLOAD(s->budget_waiting);

	for (unsigned k = 0; mask && k < s->nloops; k++) {
		struct sloop *sl = &s->sl[k];

		if (!(mask & (1ull << k)))
			continue;
		if (sl == own)
			event_active(sl->resume, 0, 0);
		else if (!__atomic_exchange_n(&sl->resume_posted, true,
					      __ATOMIC_ACQ_REL))
			sl_post(s, k, &sl->resume_msg);
	}
}

/* Change one of c's held-byte counts, *field, by +add -sub, and the
 * server's total; wake the budget's waiters when it fell low enough. */
static void held_change(struct conn *c, size_t *field, size_t add,
			size_t sub)
{
	struct server *s = c->srv;
	uint64_t held;

	*field = *field + add - sub;
	held = __atomic_add_fetch(&s->held, (uint64_t)add - sub,
				  __ATOMIC_RELAXED);
	if (sub > add && RLOAD(s->budget_waiting) &&
	    held < RLOAD(s->budget) / BUDGET_RESUME_DEN * BUDGET_RESUME_NUM)
		budget_wake(s, c->sl);
}

/* Count what c's in buffer holds now (in_bytes, and the server's held):
 * after every change to it, which only c's own code makes (reads, pulled
 * records, a close's drain). Not an evbuffer callback: with one per
 * pulled record, libevent's callback machinery cost more than the count. */
static void conn_in_sync(struct conn *c)
{
	size_t n = evbuffer_get_length(c->in);

	if (n != c->in_bytes)
		held_change(c, &c->in_bytes, n, c->in_bytes);
}

/* Drop c's share of its address's connection count, and c from the list
 * of every connection. */
static void peer_release(struct server *s, struct conn *c)
{
	struct peer_count *pc;

	pthread_mutex_lock(&s->mu);
	pc = c->pc;
	c->pc = NULL;
	if (pc && --pc->n == 0) {
		HASH_DEL(s->peers, pc);
		free(pc);
	}
	if (pc)
		DL_DELETE2(s->all, c, gprev, gnext);
	pthread_mutex_unlock(&s->mu);
}

/* Take a reference on c. */
static void conn_get(struct conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

/* Drop a reference; free c at the last one. */
static void conn_put(struct conn **cp)
{
	struct conn *c = *cp;

	*cp = NULL;
	if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	rpcrec_free(&c->rec);
	if (c->in)
		evbuffer_free(c->in);
	c->magic = 0;
	free(c);
}

/* Reading on or off: c's read event watches its socket or not. */
static void conn_read_on(struct conn *c)
{
	event_add(c->rd, NULL);
}

static void conn_read_off(struct conn *c)
{
	event_del(c->rd);
}

/* Free c's socket and drop the reference that being open held. */
static void conn_release_socket(struct conn *c)
{
	struct server *s = c->srv;

	if (c->lingering)
		DL_DELETE(c->sl->lingering, c);
	c->lingering = false;
	evbuffer_remove_cb(bufferevent_get_output(c->bev), conn_output_cb, c);
	held_change(c, &c->out_bytes, 0, c->out_bytes);
	__atomic_add_fetch(&s->held_detached, c->rec_bytes, __ATOMIC_RELAXED);
	event_free(c->rd);
	c->rd = NULL;
	bufferevent_free(c->bev);
	c->bev = NULL;
	conn_put(&c);
}

/* A lingering connection flushed its replies, failed or timed out. */
static void conn_linger_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	CHECK_OBJ(c, CONN_MAGIC);
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_release_socket(c);
}

/* A lingering connection's error, EOF or write timeout. */
static void conn_linger_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	CHECK_OBJ(c, CONN_MAGIC);
	(void)bev;
	(void)what;
	conn_release_socket(c);
}

/*
 * On a loop that hands its calls to loop 0, a close for what the client
 * sent (a bad or oversized record, one never finished) waits for the
 * calls read before it: their replies go out first, in the order one
 * loop would have sent them, since one loop answers a call it can answer
 * at once before it reads the next record. Reading stops now; the
 * release of the last call closes c (req_release). True if deferred.
 */
static bool conn_close_deferred(struct conn *c,
				enum conn_close_reason reason)
{
	if (c->sl->idx == 0 || c->inflight == 0 ||
	    (reason != CLOSE_BAD_RECORD && reason != CLOSE_OVERSIZE &&
	     reason != CLOSE_RECORD_TIMEOUT))
		return false;
	if (!c->close_pending) {
		c->close_pending = reason;
		c->paused = true;
		conn_read_off(c);
		evbuffer_drain(c->in, evbuffer_get_length(c->in));
		conn_in_sync(c);
	}
	return true;
}

/*
 * Close c for reason. Replies already queued are still sent (the socket
 * lingers with reading off while its writes progress at least every 5 s,
 * or idle_timeout for a half-closed one) unless the socket failed or the
 * daemon is stopping; requests still in flight keep the struct alive and
 * their replies are dropped. c's loop.
 */
static void conn_close(struct conn *c, enum conn_close_reason reason)
{
	static const char *const names[] = {
#define X(e, s) s,
		CONN_CLOSE_REASONS(X)
#undef X
	};
	struct server *s = c->srv;
	/* A half-closed client asked for its replies (shutdown(SHUT_WR) then
	 * reads): a reader that pauses keeps them for idle_timeout, not 5 s. */
	struct timeval tv = mclock_tv(c->half_closed ? dload(&s->idle_timeout)
						   : 5.0);

	if (c->closed)
		return;
	if (conn_close_deferred(c, reason))
		return;
	c->closed = true;
	STAT_INC(c->sl->st.closed[reason]);
	__atomic_sub_fetch(&s->connections_open, 1, __ATOMIC_RELAXED);
	log_debug("connection %s closed: %s", c->peer_name, names[reason]);
	DL_DELETE(c->sl->conns, c);
	peer_release(s, c);
	evbuffer_drain(c->in, evbuffer_get_length(c->in));  /* never parsed */
	conn_in_sync(c);
	if (reason == CLOSE_ERROR || reason == CLOSE_SHUTDOWN ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		conn_release_socket(c);
		return;
	}
	c->lingering = true;
	DL_APPEND(c->sl->lingering, c);
	conn_read_off(c);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_setcb(c->bev, NULL, conn_linger_write_cb,
			  conn_linger_event_cb, c);
	bufferevent_set_timeouts(c->bev, NULL, &tv);
	bufferevent_enable(c->bev, EV_WRITE);
}

/*
 * True when the connections together hold the budget and c's replies and
 * calls in flight are over an equal share of it (its unparsed input
 * counts in the total only: a record on its way is not cut short).
 */
static bool conn_over_budget(const struct conn *c)
{
	struct server *s = c->srv;
	uint64_t budget = RLOAD(s->budget);
	uint64_t open = RLOAD(s->connections_open);

	if (!open)
		open = 1;
	return RLOAD(s->held) >= budget &&
	       c->out_bytes + c->rec_bytes > budget / open;
}

/* Tell whether c must stop reading for now. */
static bool conn_should_pause(const struct conn *c)
{
	struct server *s = c->srv;

	return RLOAD(s->draining) || c->close_pending ||
	       c->inflight >= RLOAD(s->max_requests_per_conn) ||
	       evbuffer_get_length(bufferevent_get_output(c->bev)) >=
		       s->max_reply_buffer ||
	       conn_over_budget(c);
}

/* Resume a paused connection once it is under its limits. */
static void conn_maybe_resume(struct conn *c)
{
	if (c->closed || !c->paused || c->half_closed || conn_should_pause(c))
		return;
	c->paused = false;
	c->budget_paused = false;
	if (c->rec_start > 0)
		c->rec_start = daemon_now();	/* our pause is not theirs */
	conn_read_on(c);
	if (evbuffer_get_length(c->in) > 0)
		event_active(c->rd, EV_READ, 0);	/* later in this turn */
}

/* Release a request: its record, arguments and connection reference.
 * The connection's loop (a DRC entry still held: loop 0's too, so a
 * handed request has given it up before it came back). */
static void req_release(struct req *r)
{
	struct conn *c;
	struct server *s;

	CHECK_OBJ(r, REQ_MAGIC);
	c = r->conn;
	s = c->srv;
	if (r->drc)
		drc_abandon(s->drc, r->drc);
	if (r->args)
		xdr_free(r->ent->xdr_args, r->args);	/* in r's block */
	if (r->reply)
		evbuffer_free(r->reply);
	free(r->rec);
	held_change(c, &c->rec_bytes, 0, r->rec_len);
	if (!c->bev)
		__atomic_sub_fetch(&s->held_detached, r->rec_len,
				   __ATOMIC_RELAXED);
	r->magic = 0;
	free(r);
	c->last_active = daemon_now();
	c->inflight--;
	__atomic_sub_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
	if (c->half_closed && c->inflight == 0 && !c->closed)
		conn_close(c, CLOSE_EOF);	/* its replies linger out */
	if (c->close_pending && c->inflight == 0 && !c->closed)
		conn_close(c, c->close_pending);	/* likewise */
	conn_maybe_resume(c);
	conn_put(&c);
}

/*
 * The nfs3_status_index of r's reply res (NULL for an RPC-level error),
 * or -1 when it is not counted by status. Every NFSv3 result but NULL's
 * is an rpcgen union whose first member is its nfsstat3 discriminant
 * (RFC 1813 s3.3), counted by value.
 */
static int reply_status_idx(const struct req *r, const void *res)
{
	uint32_t status;

	if (!res || r->ent->prog != NFS_PROGRAM || r->ent->vers != NFS_V3 ||
	    r->ent->proc == NFSPROC3_NULL)
		return -1;
	memcpy(&status, res, sizeof(status));
	return (int)nfs3_status_index(status);
}

/* Account on r's connection's loop for its finished call, whose reply had
 * status index idx (reply_status_idx). */
static void count_reply(struct req *r, int idx)
{
	struct server_stats *st = &r->conn->sl->st;
	unsigned row;

	if (!r->ent)
		return;
	row = proc_table_index(r->conn->srv->procs, r->ent);
	if (idx >= 0)
		STAT_INC(st->nfs3_replies[idx]);
	STAT_INC(st->replies[row]);
	histogram_observe_relaxed(&st->latency[row], daemon_now() - r->start);
}

/* Note r's reply for counting: now on the connection's loop, else when it
 * comes back (req_back_fn). */
static void note_reply(struct req *r, const void *res)
{
	int idx = reply_status_idx(r, res);

	if (!r->handed) {
		count_reply(r, idx);
		return;
	}
	r->counted = true;
	r->status_idx = idx;
}

/* Back on the connection's loop: deliver a handed request's reply (or
 * close for the handler), count it and release it. */
static void req_back_fn(struct loop_msg *m)
{
	struct req *r = (struct req *)((char *)m - offsetof(struct req, msg));
	struct conn *c = r->conn;

	CHECK_OBJ(r, REQ_MAGIC);
	r->handed = false;
	held_change(c, &c->rec_bytes, 0, r->reserved);
	if (!c->bev)	/* closed meanwhile: counted as detached */
		__atomic_sub_fetch(&c->srv->held_detached, r->reserved,
				   __ATOMIC_RELAXED);
	r->reserved = 0;
	if (r->counted)
		count_reply(r, r->status_idx);
	if (r->reply && !c->closed)
		evbuffer_add_buffer(bufferevent_get_output(c->bev), r->reply);
	if (r->close)
		conn_close(c, CLOSE_HANDLER);
	req_release(r);
}

/* On loop 0: hand r (answered, or to be closed or dropped) back to its
 * connection's loop. */
static void req_hand_back(struct req *r)
{
	if (r->drc) {	/* unanswered: the DRC is loop 0's */
		drc_abandon(r->conn->srv->drc, r->drc);
		r->drc = NULL;
	}
	r->msg.fn = req_back_fn;
	sl_post_batched(&r->conn->srv->sl[0], r->conn->sl->idx, &r->msg);
}

static void req_finish_unanswered(struct req *r, struct evbuffer *reply);

/* Finish r once its reply is in reply (owned by the call, or NULL): to
 * the DRC if tracked, then to the client; r is released. */
static void req_deliver(struct req *r, struct evbuffer *reply)
{
	struct conn *c = r->conn;

	if (r->drc) {
		size_t len = evbuffer_get_length(reply);
		const uint8_t *bytes = evbuffer_pullup(reply, -1);

		drc_complete(c->srv->drc, r->drc, bytes, len, daemon_now());
		r->drc = NULL;
	}
	if (r->handed) {
		r->reply = reply;
		req_hand_back(r);
		return;
	}
	if (!c->closed)
		evbuffer_add_buffer(bufferevent_get_output(c->bev), reply);
	evbuffer_free(reply);
	req_release(r);
}

/* The buffer a reply for r should be encoded into: the connection's
 * output, or a scratch buffer when the DRC needs a copy or r is handed
 * (the connection is another loop's). NULL if unwanted. */
static struct evbuffer *reply_target(struct req *r, bool *scratch)
{
	struct evbuffer *out;

	CHECK_OBJ(r, REQ_MAGIC);
	*scratch = r->drc != NULL || r->handed;
	if (*scratch)
		return evbuffer_new();
	if (r->conn->closed)
		return NULL;
	out = bufferevent_get_output(r->conn->bev);
	/* Other calls of the connection (in flight, or read and not yet
	 * pulled) will answer before the flush: room for their replies in
	 * one chain, made while out is empty (libevent otherwise makes a
	 * chain just large enough for each reply, and copies the last one's
	 * bytes over: a new chain every second cached READ, issue 42's
	 * profile). A failure only leaves it to libevent. */
	if ((r->conn->inflight > 1 || evbuffer_get_length(r->conn->in) > 0) &&
	    evbuffer_get_length(out) == 0)
		(void)evbuffer_expand(out, CONN_OUT_ROOM);
	return out;
}

/* After encoding a success reply into out (rc: the encoder's 0 or -1):
 * SYSTEM_ERR instead if it failed, the scratch buffer delivered; r is
 * released. */
static enum op_status reply_encoded(struct req *r, struct evbuffer *out,
				    bool scratch, int rc)
{
	if (rc != 0) {
		log_warn("cannot encode reply to %s xid %08x",
			 r->conn->peer_name, r->call.xid);
		rpcmsg_reply_accept_error(out, r->call.xid, SYSTEM_ERR, 0, 0);
	}
	if (scratch) {
		/* A tail referenced from the cache is copied in here, on
		 * the loop that owns the page, which releases it now; out
		 * of memory for the copy, the reply is dropped here (the
		 * page with it) and the client resends. */
		if (r->handed && !evbuffer_pullup(out, -1) &&
		    evbuffer_get_length(out) > 0) {
			evbuffer_free(out);
			req_finish_unanswered(r, NULL);
			return OP_DONE;
		}
		req_deliver(r, out);
		return OP_DONE;
	}
	req_release(r);
	return OP_DONE;
}

/* No buffer for r's reply (reply_target: closed, or out of memory):
 * released, on its connection's loop when handed. */
static enum op_status reply_dropped(struct req *r)
{
	if (r->handed)
		req_finish_unanswered(r, NULL);
	else
		req_release(r);
	return OP_DONE;
}

enum op_status req_reply(struct req *r, xdrproc_t proc, const void *res)
{
	bool scratch;
	struct evbuffer *out = reply_target(r, &scratch);

	note_reply(r, res);
	if (!out)
		return reply_dropped(r);
	return reply_encoded(r, out, scratch,
			     rpcmsg_reply_success(out, r->call.xid, proc, res));
}

enum op_status req_reply_tail(struct req *r, xdrproc_t proc, const void *res,
			      const void *tail, size_t len,
			      rpcmsg_tail_release release, void *arg)
{
	bool scratch;
	struct evbuffer *out = reply_target(r, &scratch);

	note_reply(r, res);
	if (!out) {
		release(tail, len, arg);
		return reply_dropped(r);
	}
	return reply_encoded(r, out, scratch,
			     rpcmsg_reply_success_tail(out, r->call.xid, proc,
						       res, tail, len, release,
						       arg));
}

enum op_status req_reply_accept_error(struct req *r, enum accept_stat stat)
{
	bool scratch;
	struct evbuffer *out = reply_target(r, &scratch);

	note_reply(r, NULL);
	if (!out)
		return reply_dropped(r);
	rpcmsg_reply_accept_error(out, r->call.xid, stat, 0, 0);
	if (scratch) {
		req_deliver(r, out);
		return OP_DONE;
	}
	req_release(r);
	return OP_DONE;
}

/* A DRC reply on its way to a parked duplicate on another loop. */
struct drc_out {
	struct loop_msg msg;
	struct conn *c;			/* a reference */
	struct evbuffer *buf;		/* owned */
};

/* On the duplicate's loop: queue the DRC's reply, drop the reference. */
static void drc_out_fn(struct loop_msg *m)
{
	struct drc_out *o = (struct drc_out *)m;

	if (!o->c->closed)
		evbuffer_add_buffer(bufferevent_get_output(o->c->bev), o->buf);
	evbuffer_free(o->buf);
	conn_put(&o->c);
	free(o);
}

/* Deliver a DRC reply to a parked duplicate (a connection reference).
 * Loop 0; the connection may be another loop's. */
static void drc_deliver(void *waiter, const uint8_t *reply, size_t len)
{
	struct conn *c = waiter;
	struct drc_out *o;

	if (c->sl->idx == 0) {
		if (!c->closed)
			evbuffer_add(bufferevent_get_output(c->bev), reply,
				     len);
		conn_put(&c);
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o || !(o->buf = evbuffer_new()) ||
	    evbuffer_add(o->buf, reply, len) != 0) {
		if (o && o->buf)
			evbuffer_free(o->buf);
		free(o);
		conn_put(&c);	/* the duplicate goes unanswered */
		return;
	}
	o->c = c;
	o->msg.fn = drc_out_fn;
	sl_post(c->srv, c->sl->idx, &o->msg);
}

/* Drop a parked duplicate without a reply. */
static void drc_release(void *waiter)
{
	struct conn *c = waiter;

	conn_put(&c);
}

/* Reject a call at the RPC level: count it and queue the reply. */
static void conn_reject(struct conn *c, const struct rpcmsg_call *call,
			enum rpc_reject_reason why, uint32_t low, uint32_t high)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	STAT_INC(c->sl->st.rejected[why]);
	switch (why) {
	case REJECT_RPC_MISMATCH:
		rpcmsg_reply_rpc_mismatch(out, call->xid);
		break;
	case REJECT_AUTH_BADCRED:
		rpcmsg_reply_auth_error(out, call->xid, AUTH_BADCRED);
		break;
	case REJECT_AUTH_TOOWEAK:
		rpcmsg_reply_auth_error(out, call->xid, AUTH_TOOWEAK);
		break;
	case REJECT_PROG_UNAVAIL:
		rpcmsg_reply_accept_error(out, call->xid, PROG_UNAVAIL, 0, 0);
		break;
	case REJECT_PROG_MISMATCH:
		rpcmsg_reply_accept_error(out, call->xid, PROG_MISMATCH, low, high);
		break;
	case REJECT_PROC_UNAVAIL:
		rpcmsg_reply_accept_error(out, call->xid, PROC_UNAVAIL, 0, 0);
		break;
	case REJECT_GARBAGE_ARGS:
		rpcmsg_reply_accept_error(out, call->xid, GARBAGE_ARGS, 0, 0);
		break;
	default:
		rpcmsg_reply_accept_error(out, call->xid, SYSTEM_ERR, 0, 0);
		break;
	}
}

/* Whether program prog is turned off (server_refuse_program; set before
 * the loops serve, read-only after). */
static bool prog_refused(const struct server *s, uint32_t prog)
{
	for (unsigned i = 0; i < s->nrefused; i++)
		if (s->refused[i] == prog)
			return true;
	return false;
}
/* Find the dispatch row for call, or reject it (a refused program:
 * PROG_UNAVAIL, miss's initial value). */
static const struct dispatch_entry *conn_route(struct conn *c,
					       const struct rpcmsg_call *call)
{
	static const enum rpc_reject_reason by_miss[] = {
		[DISPATCH_PROG_UNAVAIL] = REJECT_PROG_UNAVAIL,
		[DISPATCH_PROG_MISMATCH] = REJECT_PROG_MISMATCH,
		[DISPATCH_PROC_UNAVAIL] = REJECT_PROC_UNAVAIL,
	};
	enum dispatch_miss miss = DISPATCH_PROG_UNAVAIL;
	uint32_t low = 0, high = 0;
	const struct dispatch_entry *ent = NULL;

	if ((!c->only_prog || call->prog == c->only_prog) &&
	    !prog_refused(c->srv, call->prog))
		ent = proc_table_find(c->srv->procs, call->prog, call->vers,
				      call->proc, &miss, &low, &high);
	if (!ent)
		conn_reject(c, call, by_miss[miss], low, high);
	return ent;
}

/* Decode the header of rec; reject or close as it says. True to go on. */
static bool conn_check_header(struct conn *c, const uint8_t *rec, size_t len,
			      struct rpcmsg_call *call)
{
	switch (rpcmsg_decode_call(rec, len, call)) {
	case RPCMSG_OK:
		return true;
	case RPCMSG_NOT_CALL:
		conn_close(c, CLOSE_BAD_RECORD);
		return false;
	case RPCMSG_GARBAGE:
		conn_reject(c, call, REJECT_GARBAGE_ARGS, 0, 0);
		return false;
	case RPCMSG_RPC_MISMATCH:
		conn_reject(c, call, REJECT_RPC_MISMATCH, 2, 2);
		return false;
	case RPCMSG_AUTH_BADCRED:
		conn_reject(c, call, REJECT_AUTH_BADCRED, 0, 0);
		return false;
	case RPCMSG_AUTH_TOOWEAK:
		conn_reject(c, call, REJECT_AUTH_TOOWEAK, 0, 0);
		return false;
	}
	return false;
}

/* Bytes of a struct req rounded up to any type's alignment: where its
 * arguments start in the same block. */
#define REQ_ARGS_OFF ((sizeof(struct req) + _Alignof(max_align_t) - 1) / \
		      _Alignof(max_align_t) * _Alignof(max_align_t))

/* Make a request for a routed call; takes ownership of rec. Its zeroed
 * arguments (ent->args_size) come in the same allocation: one allocation
 * and one free per call, not two. malloc, not calloc: glibc 2.36's calloc
 * never takes a block from the thread cache (issue 42's profile: 170
 * instructions a call more); the request is set whole below and only
 * the arguments are zeroed. */
static struct req *req_new(struct conn *c, const struct rpcmsg_call *call,
			   uint8_t *rec, size_t len,
			   const struct dispatch_entry *ent)
{
	struct server *s = c->srv;
	struct req *r = malloc(REQ_ARGS_OFF + (ent->args_size ?
					       ent->args_size : 1));

	if (!r) {
		free(rec);
		return NULL;
	}
	*r = (struct req){
		.magic = REQ_MAGIC,
		.d = s->d,
		.conn = c,
		.call = *call,
		.rec = rec,
		.rec_len = len,
		.ent = ent,
		.args = (char *)r + REQ_ARGS_OFF,
		.start = daemon_now(),
		.status_idx = -1,
	};
	memset(r->args, 0, ent->args_size ? ent->args_size : 1);
	conn_get(c);
	held_change(c, &c->rec_bytes, len, 0);
	c->inflight++;
	__atomic_add_fetch(&s->inflight, 1, __ATOMIC_RELAXED);
	STAT_INC(c->sl->st.calls[proc_table_index(s->procs, ent)]);
	return r;
}

/* r is done on loop 0 without a reply of its own (answered from the DRC
 * into reply, or none): release it, on its connection's loop. */
static void req_finish_unanswered(struct req *r, struct evbuffer *reply)
{
	if (r->handed) {
		r->reply = reply;
		req_hand_back(r);
		return;
	}
	if (reply) {
		if (!r->conn->closed)
			evbuffer_add_buffer(
				bufferevent_get_output(r->conn->bev), reply);
		evbuffer_free(reply);
	}
	req_release(r);
}

/* Bytes a handed call's reply is reserved beside its data: the RPC and
 * NFS headers and attributes of a READ reply, with room to spare. */
#define REPLY_RESERVE_HEAD 256

/*
 * Hold r's likely reply in the budget while r is handed to loop 0 (its
 * record's bytes count already): the data its row's reply_by_arg bounds,
 * at most max_transfer, and a header. One loop reads no record while a
 * connection is over its share, and a reply it can give at once is
 * queued before the next record is read; a loop that hands its calls
 * reads on, so without this a burst of READs would all be read before
 * their replies counted (integration.buffer_budget.t4). Released when
 * the reply is back (req_back_fn).
 */
static void req_reserve(struct req *r)
{
	const struct dispatch_entry *ent = r->ent;
	uint32_t n = 0;

	if (ent->reply_by_arg)
		memcpy(&n, (const char *)r->args + ent->reply_arg, sizeof(n));
	if (n > r->conn->srv->max_transfer)
		n = r->conn->srv->max_transfer;
	r->reserved = (size_t)n + REPLY_RESERVE_HEAD;
	held_change(r->conn, &r->conn->rec_bytes, r->reserved, 0);
}

/* Run the duplicate request cache for r (loop 0). True if r was answered
 * from it. */
static bool req_check_drc(struct req *r)
{
	struct conn *c = r->conn;
	struct server *s = c->srv;
	struct drc_entry *e;
	struct evbuffer *copy;
	const uint8_t *reply;
	size_t len;

	switch (drc_begin(s->drc, req_peer(r), r->call.xid, r->call.proc,
			  r->rec + r->call.args_off,
			  r->rec_len - r->call.args_off, daemon_now(), &e)) {
	case DRC_NEW:
		r->drc = e;
		return false;
	case DRC_DONE:
		STAT_INC(s->sl[0].st.drc_hits);
		reply = drc_entry_reply(e, &len);
		if (!r->handed) {	/* its connection is this loop's */
			if (!c->closed)
				evbuffer_add(bufferevent_get_output(c->bev),
					     reply, len);
			req_release(r);
			return true;
		}
		copy = evbuffer_new();
		if (copy && evbuffer_add(copy, reply, len) != 0) {
			evbuffer_free(copy);
			copy = NULL;	/* out of memory: the client resends */
		}
		req_finish_unanswered(r, copy);
		return true;
	case DRC_INPROGRESS:
		STAT_INC(s->sl[0].st.drc_hits);
		conn_get(c);
		if (drc_add_waiter(e, c) != 0)
			conn_put(&c);
		req_finish_unanswered(r, NULL);
		return true;
	case DRC_DISABLED:
		return false;
	}
	return false;
}

/* Run r's handler (loop 0), after the DRC for a non-idempotent call. */
static void req_run(struct req *r)
{
	if ((r->ent->flags & DISPATCH_NONIDEMPOTENT) && req_check_drc(r))
		return;
	if (r->ent->handler(r) != OP_CLOSE)
		return;
	if (r->handed) {
		r->close = true;
		req_hand_back(r);
		return;
	}
	conn_close(r->conn, CLOSE_HANDLER);
	req_release(r);
}

/* On loop 0: a call handed from its connection's loop. */
static void req_run_fn(struct loop_msg *m)
{
	struct req *r = (struct req *)((char *)m - offsetof(struct req, msg));

	CHECK_OBJ(r, REQ_MAGIC);
	req_run(r);
}

/* Handle one whole record; takes ownership of rec. c's loop. */
static void conn_handle_record(struct conn *c, uint8_t *rec, size_t len)
{
	struct rpcmsg_call call;
	const struct dispatch_entry *ent;
	struct req *r;

	c->records++;
	if (!conn_check_header(c, rec, len, &call) ||
	    !(ent = conn_route(c, &call))) {
		free(rec);
		return;
	}
	r = req_new(c, &call, rec, len, ent);
	if (!r) {
		conn_close(c, CLOSE_NOMEM);
		return;
	}
	if (rpcmsg_decode_args(rec, len, call.args_off, ent->xdr_args, r->args)) {
		STAT_INC(c->sl->st.rejected[REJECT_GARBAGE_ARGS]);
		req_reply_accept_error(r, GARBAGE_ARGS);
		return;
	}
	if (c->sl->idx == 0) {
		req_run(r);
		return;
	}
	req_reserve(r);
	r->handed = true;
	r->msg.fn = req_run_fn;
	sl_post_batched(c->sl, 0, &r->msg);
}

/* Read and dispatch whole records until input runs dry or limits hit. */
static void conn_pump(struct conn *c)
{
	enum rpcrec_status st;
	uint8_t *rec;
	size_t len;

	while (!c->closed) {
		if (conn_should_pause(c)) {
			c->paused = true;
			STAT_INC(c->sl->st.reads_paused);
			if (conn_over_budget(c)) {
				c->budget_paused = true;
				c->sl->budget_waiters = true;
				__atomic_or_fetch(&c->srv->budget_waiting,
						  1ull << c->sl->idx,
						  __ATOMIC_RELAXED);
				STAT_INC(c->sl->st.budget_pauses);
			}
			conn_read_off(c);
			return;
		}
		st = rpcrec_pull(c->rec, c->in, &rec, &len);
		conn_in_sync(c);
		switch (st) {
		case RPCREC_RECORD:
			conn_handle_record(c, rec, len);
			break;
		case RPCREC_NEED_MORE:
			return;
		case RPCREC_OVERSIZE:
			STAT_INC(c->sl->st.records_oversize);
			log_debug("client %s sent a record over max_record_size; closing",
				  c->peer_name);
			conn_close(c, CLOSE_OVERSIZE);
			return;
		case RPCREC_ENOMEM:
			conn_close(c, CLOSE_NOMEM);
			return;
		}
	}
}

/* Note after a read whether a record is under way, and since when. */
static void conn_note_record(struct conn *c, uint64_t records_before)
{
	double now = daemon_now();

	c->last_active = now;
	if (c->closed)
		return;
	if (!rpcrec_in_record(c->rec) &&
	    evbuffer_get_length(c->in) == 0)
		c->rec_start = 0;
	else if (c->rec_start == 0 || c->records != records_before)
		c->rec_start = now;	/* a record began in this read */
}

/*
 * Read what c's socket holds, up to CONN_IO_CHUNK bytes, onto c->in: one
 * recv per buffer space reserved (at least CONN_READ_SPACE), until a
 * short read (the socket is empty for now). True when the client's EOF was read (recv returned 0; it recurs
 * while the socket stays readable). An error closes c: CLOSE_RESET for
 * ECONNRESET or EPIPE, CLOSE_ERROR otherwise, CLOSE_NOMEM when no buffer
 * space can be had. c's loop.
 */
static bool conn_drain(struct conn *c)
{
	size_t total = 0;

	while (total < CONN_IO_CHUNK) {
		struct evbuffer_iovec v;
		size_t room;
		ssize_t n;
		int err;

		if (evbuffer_reserve_space(c->in, CONN_READ_SPACE, &v, 1) < 1) {
			conn_close(c, CLOSE_NOMEM);
			return false;
		}
		room = v.iov_len;	/* at least CONN_READ_SPACE */
		n = recv(c->fd, v.iov_base, room, MSG_DONTWAIT);
		err = errno;	/* before the commit can change it */
		v.iov_len = n > 0 ? (size_t)n : 0;
		evbuffer_commit_space(c->in, &v, 1);
		conn_in_sync(c);
		if (n > 0 && (size_t)n == room) {
			total += (size_t)n;
			continue;
		}
		if (n < 0 && err == EINTR)
			continue;
		if (n < 0 && err != EAGAIN && err != EWOULDBLOCK)
			conn_close(c, err == ECONNRESET || err == EPIPE
				      ? CLOSE_RESET : CLOSE_ERROR);
		return n == 0;
	}
	return false;
}

/*
 * The client's EOF (a recv returned 0) with every record before it
 * pulled. With calls in flight the connection is half-closed
 * (shutdown(SHUT_WR), RFC 9293 3.6): the client still reads the replies
 * of the calls it sent. Reading stops (there is nothing more to read);
 * req_release closes the connection after the last reply, which then
 * lingers out. Without, it is closed.
 */
static void conn_eof(struct conn *c)
{
	if (c->closed)
		return;
	if (c->inflight == 0) {
		conn_close(c, CLOSE_EOF);
		return;
	}
	c->half_closed = true;
	conn_read_off(c);
	log_debug("connection %s half-closed with %u calls in flight",
		  c->peer_name, c->inflight);
}

/*
 * c's read event: its socket is readable, or a resume made it active to
 * pull the records c->in already holds. Reads (conn_drain) unless c
 * should pause, pulls records, and takes an EOF once every record before
 * it is pulled and c is not paused (a paused connection sees it again
 * when resumed: the socket stays readable). c's loop.
 */
static void conn_readable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	uint64_t records;
	bool eof = false;

	(void)fd;
	(void)what;
	CHECK_OBJ(c, CONN_MAGIC);
	records = c->records;
	conn_get(c);
	if (!c->closed && !c->half_closed && !conn_should_pause(c))
		eof = conn_drain(c);
	if (!c->closed)
		conn_pump(c);
	if (eof && !c->closed && !c->paused)
		conn_eof(c);
	conn_note_record(c, records);
	conn_put(&c);
}

/* Bufferevent write callback: output drained under the low mark. Once
 * empty, the connection's replies are written directly again. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	CHECK_OBJ(c, CONN_MAGIC);
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_disable(bev, EV_WRITE);
	conn_get(c);
	conn_maybe_resume(c);
	conn_put(&c);
}

/* Bufferevent event callback: a write's error, or an EOF libevent saw
 * when a write returned 0 (reading is c->rd's, conn_readable). */
static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	int err = EVUTIL_SOCKET_ERROR();

	CHECK_OBJ(c, CONN_MAGIC);
	(void)bev;
	if (what & BEV_EVENT_EOF)
		conn_eof(c);
	else if ((what & BEV_EVENT_ERROR) &&
		 (err == ECONNRESET || err == EPIPE))
		conn_close(c, CLOSE_RESET);	/* the client went away */
	else if (what & BEV_EVENT_ERROR)
		conn_close(c, CLOSE_ERROR);
}

/* Fill the printable peer names of c. */
static void conn_name(struct conn *c, socklen_t len)
{
	char port[8];

	if (getnameinfo((struct sockaddr *)&c->peer, len, c->peer_host,
			sizeof(c->peer_host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		strcpy(c->peer_host, "?");
		strcpy(port, "?");
	}
	snprintf(c->peer_name, sizeof(c->peer_name), "%s:%s", c->peer_host,
		 port);
}

/* Refuse a new connection past a limit: close it, count it, log a line
 * at most every LIMIT_LOG_S seconds. Loop 0. */
static void conn_refuse(struct server *s, evutil_socket_t fd,
			const char *host, const char *limit)
{
	double now = daemon_now();

	evutil_closesocket(fd);
	STAT_INC(s->sl[0].st.connections_accepted);
	STAT_INC(s->sl[0].st.closed[CLOSE_LIMIT]);
	s->limit_unlogged++;
	if (s->limit_logged == 0 || now - s->limit_logged >= LIMIT_LOG_S) {
		log_warn("refused a connection from %s: %s reached (%llu "
			 "refused since the last such line)", host, limit,
			 (unsigned long long)s->limit_unlogged);
		s->limit_logged = now;
		s->limit_unlogged = 0;
	}
}

/* Client connections allowed now: max_connections (as last loaded)
 * capped by the descriptor budget. */
static uint32_t conn_cap(const struct server *s)
{
	uint32_t max = s->d->conf->max_connections;

	return max < s->fd_cap ? max : s->fd_cap;
}

/* The limit a new connection from host would break, or NULL; *pcp is
 * host's count (NULL if it has none open). room: a connection was
 * picked to make room, so the global cap does not count. Loop 0, s->mu
 * held. */
static const char *conn_limit_hit(struct server *s, const char *host,
				  struct peer_count **pcp, bool room)
{
	const struct conf *cf = s->d->conf;
	uint32_t cap = conn_cap(s);

	HASH_FIND_STR(s->peers, host, *pcp);
	if (!room && RLOAD(s->connections_open) >= cap)
		return cap == cf->max_connections ? "max_connections"
			: "the descriptor limit";
	if (*pcp && (*pcp)->n >= cf->max_connections_per_client)
		return "max_connections_per_client";
	return NULL;
}

/* Whether a client address is named by some export's clients list. */
enum conn_listing { LISTED_NO, LISTED_YES, LISTED_UNKNOWN };

/* Judge sa against every export's clients (conf_client_match), with its
 * host name when a wildcard needs it and it is known (else UNKNOWN: the
 * lookup has been started, peername_get). */
static enum conn_listing conn_listed(const struct server *s,
				     const struct sockaddr *sa)
{
	const struct daemon *d = s->d;
	const char *name = NULL;
	bool unknown = false;

	for (size_t i = 0; i < d->nexports; i++) {
		const struct conf_export *e = d->exports[i]->conf;
		struct conf_access acc;
		enum conf_match m = conf_client_match(e, sa, NULL, NULL, &acc);

		if (m == CONF_MATCH_NEED_NAME && !name)
			name = peername_get(d->names, sa);
		if (m == CONF_MATCH_NEED_NAME && name)
			m = conf_client_match(e, sa, name,
					      peername_groups(d->names, sa),
					      &acc);
		if (m == CONF_MATCH_YES)
			return LISTED_YES;
		unknown |= m == CONF_MATCH_NEED_NAME;
	}
	return unknown ? LISTED_UNKNOWN : LISTED_NO;
}

/* On c's loop: close c to make room (conn_make_room's message). */
static void conn_room_fn(struct loop_msg *m)
{
	struct conn *c = (struct conn *)((char *)m -
					 offsetof(struct conn, room_msg));

	CHECK_OBJ(c, CONN_MAGIC);
	conn_close(c, CLOSE_NOT_LISTED);
	conn_put(&c);
}

/*
 * Make room for a new connection from sa (not yet counted) that a global
 * limit refuses: if sa is listed (or may be), close the oldest open
 * connection from an address no export lists (on its loop: at once on
 * loop 0, else through its inbox; it counts as gone from now). True if
 * one was picked. Loop 0, s->mu held.
 */
static bool conn_make_room(struct server *s, const struct sockaddr *sa)
{
	struct conn *c;

	if (conn_listed(s, sa) == LISTED_NO)
		return false;
	DL_FOREACH2(s->all, c, gnext)
		if (!c->doomed &&
		    conn_listed(s, (const struct sockaddr *)&c->peer) ==
		    LISTED_NO)
			break;
	if (!c)
		return false;
	refusal_note(&s->d->refused_other, REFUSAL_NFS,
		     REFUSAL_NOT_IN_CLIENTS, daemon_now(), "connection",
		     c->peer_name, "not in any export's clients; closed to "
		     "make room for a listed client");
	c->doomed = true;
	conn_get(c);
	c->room_msg.fn = conn_room_fn;
	pthread_mutex_unlock(&s->mu);	/* loop 0's close takes it */
	sl_post(s, c->sl->idx, &c->room_msg);
	pthread_mutex_lock(&s->mu);
	return true;
}

/* Count c against its address, creating the address's record, and
 * list it with every connection. s->mu held. */
static int peer_take(struct server *s, struct conn *c, struct peer_count *pc)
{
	if (!pc) {
		pc = calloc(1, sizeof(*pc));
		if (!pc)
			return -1;
		snprintf(pc->host, sizeof(pc->host), "%s", c->peer_host);
		HASH_ADD_STR(s->peers, host, pc);
	}
	pc->n++;
	c->pc = pc;
	DL_APPEND2(s->all, c, gprev, gnext);
	return 0;
}

/*
 * Write c's output now, as far as the socket takes it; what it does not
 * take (or a failure) is left to the bufferevent's EV_WRITE, which reports
 * a failure through conn_event_cb.
 */
static void conn_flush(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (bufferevent_get_enabled(c->bev) & EV_WRITE)
		return;		/* already waiting for room */
	if (evbuffer_get_length(out) > 0) {
		/* A socket bufferevent keeps its output's front frozen
		 * outside its own write callback; thaw it as that does. */
		evbuffer_unfreeze(out, 1);
		evbuffer_write_atmost(out, bufferevent_getfd(c->bev), -1);
		evbuffer_freeze(out, 1);
	}
	if (evbuffer_get_length(out) > 0) {
		STAT_INC(c->sl->st.reply_waits);
		bufferevent_enable(c->bev, EV_WRITE);
	} else {
		conn_maybe_resume(c);
	}
}

/* The flush event: write every queued connection's output. */
static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sloop *sl = arg;

	(void)fd;
	(void)what;
	while (sl->flush_list) {
		struct conn *c = sl->flush_list;

		sl->flush_list = c->flush_next;
		c->flush_next = NULL;
		c->flush_queued = false;
		if (!c->closed)
			conn_flush(c);
		conn_put(&c);
	}
}

/* Output callback: a reply was added; queue c for the flush event. */
static void conn_output_cb(struct evbuffer *out, const struct evbuffer_cb_info *info,
			   void *arg)
{
	struct conn *c = arg;
	struct sloop *sl;

	CHECK_OBJ(c, CONN_MAGIC);
	sl = c->sl;
	(void)out;
	held_change(c, &c->out_bytes, info->n_added, info->n_deleted);
	if (info->n_added == 0 || c->flush_queued || c->closed)
		return;
	c->flush_queued = true;
	conn_get(c);
	c->flush_next = sl->flush_list;
	sl->flush_list = c;
	event_active(sl->flush, 0, 0);
}

/* Set up c's bufferevent callbacks, limits and socket options. */
static void conn_setup_io(struct conn *c, evutil_socket_t fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	bufferevent_setcb(c->bev, NULL, conn_write_cb, conn_event_cb, c);
	/* libevent's default of 16 KiB per write would split a 1 MiB READ
	 * reply into 64 writes with a loop turn between each. */
	bufferevent_set_max_single_write(c->bev, CONN_IO_CHUNK);
	bufferevent_setwatermark(c->bev, EV_WRITE, c->srv->max_reply_buffer / 2,
				 0);
	evbuffer_add_cb(bufferevent_get_output(c->bev), conn_output_cb, c);
	bufferevent_disable(c->bev, EV_WRITE);	/* a new one has it enabled */
	conn_read_on(c);
}

/* On the connection's loop: make its bufferevent and start reading. */
static void conn_adopt_fn(struct loop_msg *m)
{
	struct conn *c = (struct conn *)((char *)m - offsetof(struct conn, msg));
	struct sloop *sl = c->sl;

	CHECK_OBJ(c, CONN_MAGIC);
	c->bev = bufferevent_socket_new(sl->base, c->fd, BEV_OPT_CLOSE_ON_FREE);
	c->rd = c->bev ? event_new(sl->base, c->fd, EV_READ | EV_PERSIST,
				   conn_readable, c)
		       : NULL;
	if (!c->rd) {
		if (c->bev)
			bufferevent_free(c->bev);	/* closes c->fd */
		else
			evutil_closesocket(c->fd);
		c->bev = NULL;
		log_warn("out of memory accepting a connection");
		STAT_INC(sl->st.closed[CLOSE_NOMEM]);
		__atomic_sub_fetch(&c->srv->connections_open, 1,
				   __ATOMIC_RELAXED);
		peer_release(c->srv, c);
		c->closed = true;
		conn_put(&c);
		return;
	}
	c->last_active = daemon_now();
	conn_setup_io(c, c->fd);
	DL_APPEND(sl->conns, c);
}

/* Admit a new connection from sa (loop 0, s->mu held): c, or NULL when a
 * limit refused it (fd closed, logged) or memory ran out. */
static struct conn *conn_admit(struct server *s, int fd,
			       const struct sockaddr *sa, socklen_t salen)
{
	const struct conf *cf = s->d->conf;
	struct peer_count *pc = NULL;
	const char *limit;
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	memcpy(&c->peer, sa, (size_t)salen < sizeof(c->peer)
		? (size_t)salen : sizeof(c->peer));
	conn_name(c, (socklen_t)salen);
	limit = conn_limit_hit(s, c->peer_host, &pc, false);
	if (limit && (!pc || pc->n < cf->max_connections_per_client) &&
	    conn_make_room(s, sa))
		limit = conn_limit_hit(s, c->peer_host, &pc, true);
	if (limit) {
		conn_refuse(s, fd, c->peer_name, limit);
		free(c);
		errno = 0;
		return NULL;
	}
	if (!(c->rec = rpcrec_new(cf->max_record_size)) ||
	    !(c->in = evbuffer_new()) || peer_take(s, c, pc) != 0) {
		rpcrec_free(&c->rec);
		if (c->in)
			evbuffer_free(c->in);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

int server_adopt(struct server *s, int fd, const struct sockaddr *sa,
		 socklen_t salen, uint32_t only_prog)
{
	struct conn *c;

	pthread_mutex_lock(&s->mu);
	c = conn_admit(s, fd, sa, salen);
	pthread_mutex_unlock(&s->mu);
	if (!c) {
		if (errno == ENOMEM) {
			log_warn("out of memory accepting a connection");
			evutil_closesocket(fd);
		}
		return -1;
	}
	/* The accept path's sockets are already; a socketpair end is not,
	 * and a blocking socket would stall the loop on a full buffer. */
	(void)evutil_make_socket_nonblocking(fd);
	c->magic = CONN_MAGIC;
	c->refs = 1;
	c->srv = s;
	c->fd = fd;
	c->only_prog = only_prog;
	c->last_active = daemon_now();
	/* One loop: loop 0. More: loops 1..n-1 in turn, loop 0 keeping to
	 * the handlers. */
	c->sl = &s->sl[s->nloops == 1 ? 0 : 1 + s->next_sl++ % (s->nloops - 1)];
	STAT_INC(s->sl[0].st.connections_accepted);
	__atomic_add_fetch(&s->connections_open, 1, __ATOMIC_RELAXED);
	log_debug("connection from %s", c->peer_name);
	/* Start looking its host name up now, so that a wildcard clients
	 * entry can usually judge its first call without a wait. */
	if (conf_needs_client_names(s->d->conf))
		peername_get(s->d->names, (const struct sockaddr *)&c->peer);
	c->msg.fn = conn_adopt_fn;
	sl_post(s, c->sl->idx, &c->msg);
	return 0;
}

/* Listener callback: a new client connection. */
static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	struct listener *li = arg;

	(void)l;
	server_adopt(li->srv, fd, sa, (socklen_t)salen, li->only_prog);
}

/* Seconds between sweeps: a quarter of the shorter timeout, at most
 * SWEEP_MAX_S (read each time, so a reload applies). */
static double sweep_period(struct server *s)
{
	double idle = dload(&s->idle_timeout), rec = dload(&s->record_timeout);
	double t = rec < idle ? rec : idle;

	return t / 4 < SWEEP_MAX_S ? t / 4 : SWEEP_MAX_S;
}

/* Arm loop sl's sweep timer: loop 0's on the test clock's timers
 * (mclock.h), the other loops' on libevent's own (the test clock's list
 * is loop 0's): their sweeps still judge by daemon_now(). */
static void sweep_arm(struct sloop *sl)
{
	struct timeval tv = mclock_tv(sweep_period(sl->srv));

	if (sl->idx == 0)
		mclock_timer_add(sl->sweep, &tv);
	else
		evtimer_add(sl->sweep, &tv);
}

/* The reason c must be closed for now, or CLOSE_NREASONS. */
static enum conn_close_reason conn_overdue(const struct conn *c, double now)
{
	struct server *s = c->srv;

	if (c->inflight == 0 && (c->rec_start == 0 || c->paused) &&
	    now - c->last_active >= dload(&s->idle_timeout))
		return CLOSE_IDLE;	/* also when paused on unread replies */
	/* Paused: we are not reading. Half-closed: a partial record can
	 * never complete and is ignored; the calls in flight are answered. */
	if (c->rec_start > 0 && !c->paused && !c->half_closed &&
	    now - c->rec_start >= dload(&s->record_timeout))
		return CLOSE_RECORD_TIMEOUT;
	return CLOSE_NREASONS;
}

/* Close loop sl's stalled and idle connections. */
static void sweep_once(struct sloop *sl)
{
	struct conn *c, *tmp;
	enum conn_close_reason why;
	double now = daemon_now();

	if (!RLOAD(sl->srv->draining))
		DL_FOREACH_SAFE(sl->conns, c, tmp)
			if ((why = conn_overdue(c, now)) != CLOSE_NREASONS)
				conn_close(c, why);
}

/* Sweep timer: close stalled and idle connections, re-arm. */
static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sloop *sl = arg;

	(void)fd;
	(void)what;
	sweep_once(sl);
	sweep_arm(sl);
}

/* A step run on every loop 1..n-1 while loop 0 waits (run_on_loops):
 * the message to one loop, and what the wait is on. */
struct loop_wait {
	struct loop_msg msg;
	struct sloop *sl;
	void (*step)(struct sloop *sl);
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	unsigned *left;
};

/* On loop k: its step now; tell the waiting loop 0. */
static void loop_wait_fn(struct loop_msg *m)
{
	struct loop_wait *w = (struct loop_wait *)m;

	w->step(w->sl);
	pthread_mutex_lock(w->mu);
	if (--*w->left == 0)
		pthread_cond_signal(w->cv);
	pthread_mutex_unlock(w->mu);
}

/* Run step on each of loops 1..n-1 and wait until all have (loop 0;
 * they never wait for loop 0, so this cannot deadlock). */
static void run_on_loops(struct server *s, void (*step)(struct sloop *sl))
{
	struct loop_wait w[LOOPS_MAX];
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	unsigned left = s->nloops - 1;

	for (unsigned k = 1; k < s->nloops; k++) {
		w[k] = (struct loop_wait){ .msg.fn = loop_wait_fn,
					   .sl = &s->sl[k], .step = step,
					   .mu = &mu, .cv = &cv, .left = &left };
		sl_post(s, k, &w[k].msg);
	}
	pthread_mutex_lock(&mu);
	while (left > 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&cv);
	pthread_mutex_destroy(&mu);
}

/* Read now what loop sl's open connections' sockets hold (as their read
 * events would, without their pause check: paused and half-closed ones
 * are skipped), and handle its records; an EOF read here is left to the
 * read event, which sees it again. */
static void catch_up(struct sloop *sl)
{
	struct conn *c, *tmp;

	DL_FOREACH_SAFE(sl->conns, c, tmp) {
		uint64_t records = c->records;
		size_t had = evbuffer_get_length(c->in);

		if (c->paused || c->half_closed)
			continue;
		conn_get(c);
		conn_drain(c);
		/* Nothing new: not active (idle_timeout counts on). */
		if (!c->closed && evbuffer_get_length(c->in) != had) {
			conn_pump(c);
			conn_note_record(c, records);
		}
		conn_put(&c);
	}
}

void server_catch_up_loops(struct server *s)
{
	run_on_loops(s, catch_up);
}

void server_sweep_loops(struct server *s)
{
	run_on_loops(s, sweep_once);
}

/* The resume event: held fell under the resume mark; resume the open
 * connections of this loop that the budget paused and no other limit
 * holds. */
static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sloop *sl = arg;
	struct conn *c;

	(void)fd;
	(void)what;
	sl->budget_waiters = false;
	DL_FOREACH(sl->conns, c) {
		if (!c->budget_paused)
			continue;
		conn_maybe_resume(c);	/* defers its reading: c stays open */
		if (c->budget_paused && !conn_over_budget(c))
			c->budget_paused = false; /* paused for another limit */
		sl->budget_waiters |= c->budget_paused;
	}
	if (!sl->budget_waiters)
		__atomic_and_fetch(&sl->srv->budget_waiting,
				   ~(1ull << sl->idx), __ATOMIC_RELAXED);
}

static void resume_msg_fn(struct loop_msg *m)
{
	struct sloop *sl = (struct sloop *)((char *)m -
					    offsetof(struct sloop, resume_msg));

	__atomic_store_n(&sl->resume_posted, false, __ATOMIC_RELEASE);
	resume_cb(-1, 0, sl);
}

/* The budget of all connections' held bytes from d->conf (see
 * server_budget). */
static uint64_t budget_of(const struct server *s)
{
	const struct conf *cf = s->d->conf;
	uint64_t b;

	if (cf->client_buffer_limit)
		return (uint64_t)cf->client_buffer_limit << 20;
	b = ((uint64_t)cf->cache_size << 20) / BUDGET_AUTO_DIV;
	if (b < SERVER_BUDGET_MIN)
		b = SERVER_BUDGET_MIN;
	if (s->mem_limit && b > s->mem_limit / BUDGET_AUTO_DIV)
		b = s->mem_limit / BUDGET_AUTO_DIV;
	return b < SERVER_BUDGET_FLOOR ? SERVER_BUDGET_FLOOR : b;
}

uint64_t server_budget(const struct server *s)
{
	return RLOAD(s->budget);
}

void server_reconf(struct server *s)
{
	const struct conf *cf = s->d->conf;

	RSTORE(s->budget, budget_of(s));
	dstore(&s->idle_timeout, cf->idle_timeout);
	dstore(&s->record_timeout, cf->record_timeout);
	RSTORE(s->max_requests_per_conn, cf->max_requests_per_conn);
}

/* Raise the soft descriptor limit to the hard one; set s->fd_cap. */
static void server_fd_budget(struct server *s)
{
	struct rlimit rl;
	uint64_t reserve = SERVER_FD_RESERVE +
			   FD_RESERVE_PER_EXPORT * (uint64_t)s->d->nexports;
	uint64_t lim;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		s->fd_cap = s->d->conf->max_connections;
		return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = { rl.rlim_max, rl.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl = want;
		else
			log_warn("cannot raise the descriptor limit to %llu: %s",
				 (unsigned long long)rl.rlim_max, strerror(errno));
	}
	lim = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
	lim = lim > 2 * reserve ? lim - reserve : lim / 2;
	s->fd_cap = lim > UINT32_MAX ? UINT32_MAX : (uint32_t)lim;
	log_info("descriptor limit %llu, %llu kept in reserve: at most %u "
		 "client connections (max_connections %u)",
		 (unsigned long long)rl.rlim_cur, (unsigned long long)reserve,
		 (unsigned)conn_cap(s), s->d->conf->max_connections);
}

/* server_drain's message: stop reading on this loop's connections. */
static void drain_fn(struct loop_msg *m)
{
	struct sloop *sl = (struct sloop *)((char *)m -
					    offsetof(struct sloop, drain_msg));
	struct conn *c;

	DL_FOREACH(sl->conns, c) {
		if (!c->paused) {
			c->paused = true;
			conn_read_off(c);
		}
	}
	/* The calls this loop read are counted in inflight and on their
	 * way to loop 0; it reads no more (draining pauses every
	 * connection): server_drained may now count it. */
	if (sl->handoff)
		handoff_cb(-1, 0, sl);
	__atomic_add_fetch(&sl->srv->drained, 1, __ATOMIC_RELEASE);
}

/* Make loop k's part of s on base. */
static int sloop_init(struct server *s, unsigned k, struct event_base *base)
{
	struct sloop *sl = &s->sl[k];
	size_t n = s->procs->count;

	sl->srv = s;
	sl->idx = k;
	sl->base = base;
	sl->resume_msg.fn = resume_msg_fn;
	sl->drain_msg.fn = drain_fn;
	sl->st.calls = calloc(n, sizeof(uint64_t));
	sl->st.replies = calloc(n, sizeof(uint64_t));
	sl->st.latency = calloc(n, sizeof(struct histogram));
	sl->sweep = evtimer_new(base, sweep_cb, sl);
	sl->flush = event_new(base, -1, 0, flush_cb, sl);
	sl->resume = event_new(base, -1, 0, resume_cb, sl);
	if (!sl->st.calls || !sl->st.replies || !sl->st.latency ||
	    !sl->sweep || !sl->flush || !sl->resume)
		return -1;
	if (s->nloops > 1 &&
	    (!(sl->pend = calloc(s->nloops, sizeof(*sl->pend))) ||
	     !(sl->handoff = event_new(base, -1, 0, handoff_cb, sl))))
		return -1;
	sweep_arm(sl);	/* before loop k runs: its thread sees it armed */
	return 0;
}

struct server *server_new(struct daemon *d)
{
	struct server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->d = d;
	s->procs = d->procs;
	s->loops = d->loops;
	s->nloops = loops_count(d->loops);
	s->max_reply_buffer = d->conf->max_reply_buffer;
	s->max_transfer = d->conf->max_transfer;
	pthread_mutex_init(&s->mu, NULL);
	s->mem_limit = daemon_mem_limit();
	server_reconf(s);
	s->sl = calloc(s->nloops, sizeof(*s->sl));
	s->drc = drc_new(d->conf->drc_entries, d->conf->drc_timeout,
			 drc_deliver, drc_release);
	if (!s->sl || !s->drc) {
		server_free(&s);
		return NULL;
	}
	s->nsl = s->nloops;
	for (unsigned k = 0; k < s->nloops; k++)
		if (sloop_init(s, k, d->loops ? loops_base(d->loops, k)
					       : d->base) != 0) {
			server_free(&s);
			return NULL;
		}
	server_fd_budget(s);
	log_info("client buffers: at most %llu MiB held for all connections "
		 "together (client_buffer_limit%s)",
		 (unsigned long long)(server_budget(s) >> 20),
		 d->conf->client_buffer_limit ? "" : " automatic");
	return s;
}

int server_listen(struct server *s, const char *addr, int port,
		  uint32_t only_prog, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	int sslen = sizeof(ss);
	char spec[300];
	struct listener *li;

	if (strchr(addr, ':'))
		snprintf(spec, sizeof(spec), "[%s]:%d", addr, port);
	else
		snprintf(spec, sizeof(spec), "%s:%d", addr, port);
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &sslen)) {
		snprintf(err, errlen, "bad listen address %s", spec);
		return -1;
	}
	li = calloc(1, sizeof(*li));
	if (!li) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	li->srv = s;
	li->only_prog = only_prog;
	li->l = evconnlistener_new_bind(s->d->base, accept_cb, li,
					LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE,
					-1, (struct sockaddr *)&ss, sslen);
	if (!li->l) {
		snprintf(err, errlen, "cannot listen on %s: %s", spec,
			 strerror(errno));
		free(li);
		return -1;
	}
	li->guard = accept_guard_new(s->d->base, li->l, spec,
				     &s->sl[0].st.accept_errors);
	if (!li->guard) {
		snprintf(err, errlen, "out of memory");
		evconnlistener_free(li->l);
		free(li);
		return -1;
	}
	LL_PREPEND(s->listeners, li);
	return 0;
}

void server_stop_accepting(struct server *s)
{
	struct listener *li, *tmp;

	LL_FOREACH_SAFE(s->listeners, li, tmp) {
		accept_guard_free(&li->guard);
		evconnlistener_free(li->l);
		LL_DELETE(s->listeners, li);
		free(li);
	}
}

void server_drain(struct server *s)
{
	RSTORE(s->draining, true);
	for (unsigned k = 0; k < s->nloops; k++)
		sl_post(s, k, &s->sl[k].drain_msg);
}

bool server_drained(const struct server *s)
{
	return __atomic_load_n(&s->drained, __ATOMIC_ACQUIRE) >= s->nloops;
}

/* NULL when c's held-byte counts match its buffers, else why not. */
static const char *conn_check_held(const struct conn *c)
{
	if (c->bev && c->out_bytes !=
	    evbuffer_get_length(bufferevent_get_output(c->bev)))
		return "a connection's out_bytes is not its output's length";
	if (c->in_bytes != evbuffer_get_length(c->in))
		return "a connection's in_bytes is not its input's length";
	if (c->closed && c->in_bytes)
		return "a closed connection holds unparsed input";
	return NULL;
}

/* The checks of loop sl's open connections; adds their calls in flight
 * and held bytes to *inflight and *held. */
static const char *sloop_check_open(const struct sloop *sl,
				    unsigned *inflight, uint64_t *held)
{
	const struct conn *c;
	const char *why;

	DL_FOREACH(sl->conns, c) {
		short en;

		if (c->closed)
			return "a closed connection is on the open list";
		en = bufferevent_get_enabled(c->bev);
		if (en & EV_READ)
			return "an open connection's bufferevent reads";
		if (event_pending(c->rd, EV_READ, NULL))
			en |= EV_READ;
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) &&
		    !(en & EV_WRITE) && !c->flush_queued)
			return "an open connection has replies to write, EV_WRITE "
			       "disabled and is not queued for the flush";
		if (c->paused && (en & EV_READ))
			return "a paused connection still reads";
		if (c->half_closed && (en & EV_READ))
			return "a half-closed connection still reads";
		if (c->budget_paused && !c->paused)
			return "a budget-paused connection is not paused";
		if (c->budget_paused && !sl->budget_waiters)
			return "a budget-paused connection has no resume";
		if ((why = conn_check_held(c)))
			return why;
		*inflight += c->inflight;
		*held += c->out_bytes + c->in_bytes + c->rec_bytes;
	}
	return NULL;
}

/* The checks of loop sl's connections (sloop_check_open and the
 * lingering ones). */
static const char *sloop_check(const struct sloop *sl, unsigned *inflight,
			       uint64_t *held)
{
	const struct conn *c;
	const char *why = sloop_check_open(sl, inflight, held);

	if (why)
		return why;
	DL_FOREACH(sl->lingering, c) {
		if (!c->lingering)
			return "a connection on the lingering list is not "
			       "marked lingering";
		if ((why = conn_check_held(c)))
			return why;
		*inflight += c->inflight;
		*held += c->out_bytes + c->in_bytes + c->rec_bytes;
	}
	return NULL;
}

const char *server_check_why(const struct server *s)
{
	unsigned inflight = 0;
	uint64_t held = RLOAD(s->held_detached);
	const char *why;

	/* With more loops, the others' connections are theirs to read:
	 * loop 0's alone (it holds none), and the sums are not checked. */
	if ((why = sloop_check(&s->sl[0], &inflight, &held)))
		return why;
	if (s->nloops == 1 && inflight > RLOAD(s->inflight))
		return "the connections' requests in flight exceed the "
		       "server's count";
	if (s->nloops == 1 && held != RLOAD(s->held))
		return "the connections' held bytes do not sum to the "
		       "server's total";
	return s->drc ? drc_check_why(s->drc) : NULL;
}

unsigned server_inflight(const struct server *s)
{
	return RLOAD(s->inflight);
}

void server_close_all(struct server *s)
{
	for (unsigned k = 0; k < s->nsl; k++) {
		struct sloop *sl = &s->sl[k];

		while (sl->conns)
			conn_close(sl->conns, CLOSE_SHUTDOWN);
		while (sl->lingering)
			conn_release_socket(sl->lingering);
	}
}

/* Add loop sl's counters to *st (relaxed loads: each is one loop's). */
static void sloop_sum(const struct server *s, const struct sloop *sl,
		      struct server_stats *st)
{
	const struct server_stats *o = &sl->st;

#define X(t, f, k, n, h) st->f += RLOAD(o->f);
#define A(f, len, k, n, l, ls, h) \
	for (unsigned i = 0; i < (len); i++) \
		st->f[i] += RLOAD(o->f[i]);
	SERVER_METRICS(X, A)
#undef X
#undef A
	for (size_t i = 0; i < s->procs->count; i++) {
		st->calls[i] += RLOAD(o->calls[i]);
		st->replies[i] += RLOAD(o->replies[i]);
		histogram_merge_relaxed(&st->latency[i], &o->latency[i]);
	}
}

int server_stats_get(const struct server *s, struct server_stats *st)
{
	size_t n = s->procs->count;

	memset(st, 0, sizeof(*st));
	st->calls = calloc(n, sizeof(uint64_t));
	st->replies = calloc(n, sizeof(uint64_t));
	st->latency = calloc(n, sizeof(struct histogram));
	if (!st->calls || !st->replies || !st->latency) {
		server_stats_release(st);
		return -1;
	}
	for (unsigned k = 0; k < s->nsl; k++)
		sloop_sum(s, &s->sl[k], st);
	st->connections_open = RLOAD(s->connections_open);
	st->requests_inflight = server_inflight(s);
	st->max_connections = conn_cap(s);	/* follows a reload */
	st->drc_entries = drc_count(s->drc);
	st->buffer_bytes = RLOAD(s->held);
	st->buffer_limit = server_budget(s);
	return 0;
}

void server_stats_release(struct server_stats *st)
{
	free(st->calls);
	free(st->replies);
	free(st->latency);
	st->calls = st->replies = NULL;
	st->latency = NULL;
}

int server_refuse_program(struct server *s, uint32_t prog)
{
	if (prog_refused(s, prog))
		return 0;
	if (s->nrefused == SERVER_REFUSED_MAX)
		return -1;
	s->refused[s->nrefused++] = prog;
	return 0;
}

/* Release the requests still gathered in loop sl's chains (the loops
 * stopped with calls in flight): their handlers are not run now. */
static void sloop_drop_pending(struct sloop *sl)
{
	for (unsigned k = 0; sl->pend && k < sl->srv->nloops; k++) {
		struct loop_msg *m = sl->pend[k].head;

		sl->pend[k] = (struct loop_chain){ NULL, NULL };
		while (m) {
			struct loop_msg *next = m->next;

			req_release((struct req *)((char *)m -
						   offsetof(struct req, msg)));
			m = next;
		}
	}
}

/* Free loop sl's part (its connections closed already). */
static void sloop_free(struct sloop *sl)
{
	sloop_drop_pending(sl);
	if (sl->handoff)
		event_free(sl->handoff);
	free(sl->pend);
	if (sl->sweep)
		event_free(sl->sweep);
	if (sl->flush) {
		flush_cb(-1, 0, sl);	/* drops the queue's references */
		event_free(sl->flush);
	}
	if (sl->resume)
		event_free(sl->resume);
	free(sl->st.calls);
	free(sl->st.replies);
	free(sl->st.latency);
}

void server_free(struct server **sp)
{
	struct server *s = sp ? *sp : NULL;

	if (!s)
		return;
	server_stop_accepting(s);
	if (s->sl) {
		server_close_all(s);
		for (unsigned k = 0; k < s->nsl; k++)
			sloop_free(&s->sl[k]);
	}
	free(s->sl);
	drc_free(&s->drc);
	pthread_mutex_destroy(&s->mu);
	free(s);
	*sp = NULL;
}

const struct sockaddr *req_peer(const struct req *r)
{
	return (const struct sockaddr *)&r->conn->peer;
}

bool req_peer_privileged(const struct req *r)
{
	const struct sockaddr *sa = req_peer(r);
	unsigned port = 65535;

	if (sa->sa_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return port < 1024;
}

const char *req_peer_name(const struct req *r)
{
	return r->conn->peer_name;
}

const char *req_peer_host(const struct req *r)
{
	return r->conn->peer_host;
}

/* ---- accept guard ---- */

struct accept_guard {
	struct evconnlistener *l;
	struct event *resume;		/* re-enables l after a pause */
	char what[320];
	uint64_t *errors;
	uint64_t unlogged;		/* failures since the last line */
	double logged;			/* daemon_now of that line; 0: none */
	struct accept_guard *next;
};

/* Every guard: an error callback gets the listener's own argument (for
 * evhttp's listener, evhttp's), so it finds its guard by listener. */
static struct accept_guard *guards;

/* Pause timer: accept again. */
static void guard_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct accept_guard *g = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(g->l);
}

/* evconnlistener error callback: pause on a lack of resources, and log
 * at most once a second. */
static void guard_error_cb(struct evconnlistener *l, void *arg)
{
	struct accept_guard *g;
	int err = EVUTIL_SOCKET_ERROR();
	bool starved = err == EMFILE || err == ENFILE || err == ENOBUFS ||
		       err == ENOMEM;
	double now = daemon_now();

	(void)arg;
	LL_SEARCH_SCALAR(guards, g, l, l);
	if (!g)
		return;
	if (g->errors)
		(*g->errors)++;
	g->unlogged++;
	if (starved) {
		struct timeval tv = { 0, ACCEPT_PAUSE_MS * 1000 };

		evconnlistener_disable(l);
		mclock_timer_add(g->resume, &tv);
	}
	if (g->logged == 0 || now - g->logged >= 1.0) {
		log_warn("accept on %s failed: %s (%llu failures since the last "
			 "such line)%s", g->what, evutil_socket_error_to_string(err),
			 (unsigned long long)g->unlogged,
			 starved ? "; pausing it" : "");
		g->logged = now;
		g->unlogged = 0;
	}
}

struct accept_guard *accept_guard_new(struct event_base *base,
				      struct evconnlistener *l,
				      const char *what, uint64_t *errors)
{
	struct accept_guard *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->l = l;
	g->errors = errors;
	snprintf(g->what, sizeof(g->what), "%s", what);
	g->resume = evtimer_new(base, guard_resume_cb, g);
	if (!g->resume) {
		free(g);
		return NULL;
	}
	evconnlistener_set_error_cb(l, guard_error_cb);
	LL_PREPEND(guards, g);
	return g;
}

void accept_guard_free(struct accept_guard **gp)
{
	struct accept_guard *g = gp ? *gp : NULL;

	if (!g)
		return;
	LL_DELETE(guards, g);
	event_free(g->resume);
	free(g);
	*gp = NULL;
}
