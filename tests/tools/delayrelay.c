/* SPDX-License-Identifier: MIT */
/*
 * delayrelay: a TCP relay that adds a fixed one-way delay in each
 * direction, standing in for a distant NFS server (HACKING.md, "Testing
 * on these machines": this kernel has no netem).
 *
 * Usage:
 *   delayrelay --delay-ms MS [--rewrite-read MODE]
 *              --pair LISTEN=TARGET [--pair LISTEN=TARGET ...]
 *
 *   MS      one-way delay in milliseconds, fractional allowed (0.5), >= 0;
 *           a round trip through the relay takes at least 2 x MS more.
 *   LISTEN  address:port to listen on (127.0.0.1:5001, [::1]:5001); port 0
 *           picks a free port, reported on stdout.
 *   TARGET  address:port every accepted connection is forwarded to.
 *   MODE    eof, inval, garbage or pad: rewrite the NFSv3 READ replies passing
 *           through the way buggy servers answered (readrewrite.h); the
 *           delay applies to whole RPC records then.
 *
 * One process serves several pairs, so one relay can front both of
 * Ganesha's ports:
 *   delayrelay --delay-ms 2 --pair 127.0.0.1:5001=127.0.0.1:2049 \
 *              --pair 127.0.0.1:5002=127.0.0.1:20048
 * Once every listener is bound it prints, on stdout, one line per pair
 *   listen 127.0.0.1:5001 127.0.0.1:2049
 * (the bound listen address, then the target) and then the line
 *   ready
 * and flushes; scripts wait for that line. SIGTERM or SIGINT closes every
 * connection and exits 0. Errors go to stderr; bad arguments exit 2, a
 * listener that cannot bind exits 1.
 *
 * Per connection there are two directions (client->target and
 * target->client), each a FIFO of chunks stamped with when their bytes
 * were read plus the delay. A timer per direction moves every due chunk to
 * the destination socket's output buffer, so bytes read at time t are
 * handed to the kernel at t + delay or just after, in order. The clock is
 * CLOCK_MONOTONIC and the event base is created with
 * EVENT_BASE_FLAG_PRECISE_TIMER (HACKING.md, "Testing on these
 * machines": libevent's default coarse clock adds ~8 ms per round trip).
 *
 * Direction states: OPEN --source EOF--> an end-of-stream marker is queued
 * like data --marker due and output drained--> SHUT (shutdown(SHUT_WR) on
 * the destination). When both directions are SHUT the connection is freed
 * (both sockets closed). A socket error or reset on either side, or a
 * failed connect to the target, closes both sockets at once (not delayed).
 * Memory: a direction stops reading its source while more than
 * RELAY_QUEUE_MAX bytes are queued or unsent, and resumes below half.
 *
 * Ceiling (issue 16): the relay's cost is per wakeup, not per byte, so it
 * moves as many bytes per wakeup as it can. Each read and each write moves
 * up to RELAY_MAX_IO bytes (libevent's default write is 16 KiB, which held
 * a loaded 2-core host to ~4-8 KiB per wakeup, 11-37 MB/s); with a zero
 * delay data skips the queue (no timer wakeup per read); and a direction's
 * timer fires up to RELAY_SLACK_NS (or delay / 32, the smaller) after its
 * head is due, so one wakeup moves every chunk due in that window instead
 * of one per read. Bytes are never handed on early, only that much late,
 * and always in order. That is the buffered path, which --rewrite-read
 * needs (it reads the records); without it a connection's bytes are
 * spliced through pipes instead (sconn below), never copied, with the same
 * delay, slack, order, memory bound and close rules.
 */
#define _GNU_SOURCE	/* splice, pipe2, F_SETPIPE_SZ */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <unistd.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "readrewrite.h"

#define RELAY_QUEUE_MAX		(64u * 1024 * 1024)	/* bytes per direction */
#define RELAY_WRITE_LOWAT	(1024u * 1024)
#define RELAY_MAX_IO		(1024 * 1024)	/* bytes per read or write */
#define RELAY_SLACK_NS		100000LL	/* timer slack, at most */
#define RELAY_ADDR_MAX		128
#define RELAY_MMAP_THRESHOLD	(4 * 1024 * 1024)	/* bytes, see main() */
#define RELAY_TRIM_THRESHOLD	(256 * 1024 * 1024)	/* bytes, see main() */

struct relay;
struct conn;
struct sconn;

/* Bytes read at one time (buf), or the end-of-stream marker (buf NULL). */
struct chunk {
	TAILQ_ENTRY(chunk) link;
	struct timespec due;
	struct evbuffer *buf;
};

/* One direction of a connection: from one socket to the other. */
struct dir {
	struct conn *conn;
	struct bufferevent *from, *to;
	TAILQ_HEAD(, chunk) q;
	size_t queued;		/* data bytes in q */
	struct event *timer;	/* fires when the head of q is due */
	bool eof_read;		/* the source reached EOF; marker queued */
	bool eof_due;		/* the marker left q; shut once output drains */
	bool shut;		/* shutdown(to, SHUT_WR) done */
	bool paused;		/* reading from `from` stopped (memory bound) */
};

/* An accepted connection: side[0] the client, side[1] the target. */
struct conn {
	LIST_ENTRY(conn) link;
	struct relay *relay;
	struct bufferevent *side[2];
	struct dir d[2];	/* d[i] reads side[i], writes side[1 - i] */
	bool connected;		/* side[1]'s connect completed */
	struct readrw rw;	/* --rewrite-read state */
};

/* One listen address and where its connections go. */
struct pair {
	struct sockaddr_storage listen, target;
	int listen_len, target_len;
	struct evconnlistener *lev;
	struct relay *relay;
};

struct relay {
	struct event_base *base;
	struct timespec delay;
	long long slack_ns;	/* timer slack: min(RELAY_SLACK_NS, delay/32) */
	enum readrw_mode rewrite;	/* --rewrite-read, or READRW_NONE */
	struct pair *pairs;
	size_t npairs;
	LIST_HEAD(, conn) conns;
	LIST_HEAD(, sconn) sconns;	/* spliced connections */
};

static void conn_free(struct conn *c);

/* Read CLOCK_MONOTONIC. */
static struct timespec
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts;
}

/* Add two timespecs. */
static struct timespec
ts_add(struct timespec a, struct timespec b)
{
	a.tv_sec += b.tv_sec;
	a.tv_nsec += b.tv_nsec;
	if (a.tv_nsec >= 1000000000L) {
		a.tv_sec++;
		a.tv_nsec -= 1000000000L;
	}
	return a;
}

/* The relative time from now until due plus slack_ns, rounded up to a
 * microsecond; zero when that is past. */
static struct timeval
due_in(struct timespec due, struct timespec now, long long slack_ns)
{
	struct timeval tv = { 0, 0 };
	long long ns = (long long)(due.tv_sec - now.tv_sec) * 1000000000LL +
		       (due.tv_nsec - now.tv_nsec) + slack_ns;

	if (ns > 0) {
		tv.tv_sec = (time_t)(ns / 1000000000LL);
		tv.tv_usec = (suseconds_t)((ns % 1000000000LL + 999) / 1000);
	}
	return tv;
}

/* Return true when a <= b. */
static bool
ts_le(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec ||
	       (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

/* Arm d's timer for the head of its queue (rounded up to a microsecond). */
static void
dir_arm(struct dir *d, struct timespec now)
{
	struct chunk *h = TAILQ_FIRST(&d->q);
	struct timeval tv;

	if (!h || evtimer_pending(d->timer, NULL))
		return;
	tv = due_in(h->due, now, d->conn->relay->slack_ns);
	evtimer_add(d->timer, &tv);
}

/* Bytes d holds: queued plus not yet written to the destination. */
static size_t
dir_held(const struct dir *d)
{
	return d->queued + evbuffer_get_length(bufferevent_get_output(d->to));
}

/* Stop or resume reading d's source according to the memory bound. */
static void
dir_flow(struct dir *d)
{
	size_t held = dir_held(d);

	if (!d->paused && held > RELAY_QUEUE_MAX) {
		d->paused = true;
		bufferevent_disable(d->from, EV_READ);
	} else if (d->paused && !d->eof_read &&
		   held <= RELAY_QUEUE_MAX / 2) {
		d->paused = false;
		bufferevent_enable(d->from, EV_READ);
	}
}

/*
 * Append a chunk (data, or the EOF marker when buf is NULL) to d's queue.
 * With a zero delay and an empty queue data goes straight to the output
 * (and buf is freed). Returns 0, or -1 out of memory (buf still owned by
 * the caller).
 */
static int
dir_push(struct dir *d, struct evbuffer *buf)
{
	struct timespec now = now_mono();
	struct relay *r = d->conn->relay;
	struct chunk *ch;

	if (buf && TAILQ_EMPTY(&d->q) && r->delay.tv_sec == 0 &&
	    r->delay.tv_nsec == 0) {
		if (evbuffer_add_buffer(bufferevent_get_output(d->to),
					buf) != 0)
			return -1;
		evbuffer_free(buf);
		return 0;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -1;
	ch->due = ts_add(now, d->conn->relay->delay);
	ch->buf = buf;
	if (buf)
		d->queued += evbuffer_get_length(buf);
	TAILQ_INSERT_TAIL(&d->q, ch, link);
	dir_arm(d, now);
	return 0;
}

/* Shut down d's destination for writing once the EOF went out. */
static void
dir_try_shut(struct dir *d)
{
	struct conn *c = d->conn;

	if (!d->eof_due || d->shut)
		return;
	if (d->to == c->side[1] && !c->connected)
		return;
	if (evbuffer_get_length(bufferevent_get_output(d->to)) > 0)
		return;
	d->shut = true;
	shutdown(bufferevent_getfd(d->to), SHUT_WR);
	if (c->d[0].shut && c->d[1].shut)
		conn_free(c);
}

/* Move every due chunk of d to its destination. */
static void
dir_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct dir *d = arg;
	struct timespec now = now_mono();
	struct chunk *h;

	(void)fd;
	(void)what;
	while ((h = TAILQ_FIRST(&d->q)) && ts_le(h->due, now)) {
		TAILQ_REMOVE(&d->q, h, link);
		if (h->buf) {
			d->queued -= evbuffer_get_length(h->buf);
			evbuffer_add_buffer(bufferevent_get_output(d->to),
					    h->buf);
			evbuffer_free(h->buf);
		} else {
			d->eof_due = true;
		}
		free(h);
	}
	dir_arm(d, now);
	dir_flow(d);
	dir_try_shut(d);
}

/* Return the index of bev in c->side[]. */
static int
conn_side(const struct conn *c, const struct bufferevent *bev)
{
	return bev == c->side[0] ? 0 : 1;
}

/*
 * Read what else fd holds, up to RELAY_MAX_IO bytes, onto dst (not the
 * bufferevent's input: libevent freezes its end). libevent 2.1 reads at
 * most EVBUFFER_MAX_READ (4 KiB) per readable event whatever the
 * max_single_read, which made the relay one wakeup per 4 KiB. EOF and
 * errors are left for libevent's next read of fd.
 */
static void
drain_socket(evutil_socket_t fd, struct evbuffer *dst)
{
	size_t total = 0;

	while (total < RELAY_MAX_IO) {
		struct evbuffer_iovec v;
		ssize_t n;

		if (evbuffer_reserve_space(dst, 256 * 1024, &v, 1) < 1)
			return;
		n = recv(fd, v.iov_base, v.iov_len, MSG_DONTWAIT);
		v.iov_len = n > 0 ? (size_t)n : 0;
		evbuffer_commit_space(dst, &v, 1);
		if (n <= 0)
			return;
		total += (size_t)n;
	}
}

/* Queue what d's source delivered. Returns 0, or -1 out of memory. */
static int
dir_take_input(struct dir *d)
{
	struct evbuffer *in = bufferevent_get_input(d->from);
	struct evbuffer *buf;

	if (evbuffer_get_length(in) == 0 && !d->eof_read)
		return 0;
	buf = evbuffer_new();
	if (!buf)
		return -1;
	if (d->conn->relay->rewrite != READRW_NONE) {
		if (readrw_feed(&d->conn->rw, d == &d->conn->d[0] ? 0 : 1, in,
				buf, d->eof_read) != 0) {
			evbuffer_free(buf);
			return -1;
		}
	} else if (evbuffer_add_buffer(buf, in) != 0) {
		evbuffer_free(buf);
		return -1;
	} else if (!d->eof_read) {
		drain_socket(bufferevent_getfd(d->from), buf);
	}
	if (evbuffer_get_length(buf) == 0) {
		evbuffer_free(buf);
		return 0;
	}
	if (dir_push(d, buf) != 0) {
		evbuffer_free(buf);
		return -1;
	}
	dir_flow(d);
	return 0;
}

/* Queue what side bev just delivered. */
static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (dir_take_input(&c->d[conn_side(c, bev)]) != 0) {
		fprintf(stderr, "delayrelay: out of memory, closing\n");
		conn_free(c);
	}
}

/* Output of bev drained (below the low mark): resume or shut. */
static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct dir *d = &c->d[1 - conn_side(c, bev)];

	dir_flow(d);
	dir_try_shut(d);
}

/* Handle connect completion, EOF and errors on either side. */
static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	int i = conn_side(c, bev);

	if (what & BEV_EVENT_CONNECTED) {
		c->connected = true;
		dir_try_shut(&c->d[0]);
		return;
	}
	if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		conn_free(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !c->d[i].eof_read) {
		c->d[i].eof_read = true;
		if (dir_take_input(&c->d[i]) != 0 ||
		    dir_push(&c->d[i], NULL) != 0)
			conn_free(c);
	}
}

/* Initialise direction d of c, reading from `from` and writing to `to`. */
static int
dir_init(struct dir *d, struct conn *c, struct bufferevent *from,
	 struct bufferevent *to)
{
	d->conn = c;
	d->from = from;
	d->to = to;
	TAILQ_INIT(&d->q);
	d->timer = evtimer_new(c->relay->base, dir_timer_cb, d);
	return d->timer ? 0 : -1;
}

/* Free d's queue and timer. */
static void
dir_fini(struct dir *d)
{
	struct chunk *h;

	while ((h = TAILQ_FIRST(&d->q))) {
		TAILQ_REMOVE(&d->q, h, link);
		if (h->buf)
			evbuffer_free(h->buf);
		free(h);
	}
	if (d->timer)
		event_free(d->timer);
	d->timer = NULL;
}

/* Close both sockets of c and free it. */
static void
conn_free(struct conn *c)
{
	LIST_REMOVE(c, link);
	readrw_fini(&c->rw);
	for (int i = 0; i < 2; i++) {
		dir_fini(&c->d[i]);
		if (c->side[i])
			bufferevent_free(c->side[i]);
	}
	free(c);
}

/* Set up the bufferevent of one side of c. */
static void
conn_setup_side(struct conn *c, struct bufferevent *bev)
{
	bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(bev, EV_WRITE, RELAY_WRITE_LOWAT, 0);
	bufferevent_set_max_single_read(bev, RELAY_MAX_IO);
	bufferevent_set_max_single_write(bev, RELAY_MAX_IO);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* Turn off Nagle's algorithm on fd. */
static void
set_nodelay(evutil_socket_t fd)
{
	int one = 1;

	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Without --rewrite-read a connection's bytes never enter the relay: each
 * direction splices (splice(2)) what its source delivers into pipes and,
 * once due, from the pipes to its destination. The buffered path above
 * copied every byte in and out, and one stream's ceiling (1.6-1.7 GB/s
 * at 0 ms, 1.3-1.6 at 2 ms) was under 3x the benchmark's fastest path.
 *
 * Per direction: a FIFO of pipes in use (bytes enter the last, leave the
 * first) and of chunks (the bytes one read moved, due at read time plus
 * the delay; or the EOF marker), and a few spare pipes. A new pipe is
 * taken only when the last one is full (of bytes, or of its slots: many
 * small reads fill a pipe's 256 slots with few bytes). Reading stops
 * while more than RELAY_QUEUE_MAX bytes or SPLICE_PIPES_MAX pipes are
 * held and resumes below half of both, or when no new pipe can be had;
 * the timer fires up to the slack after the head chunk is due and moves
 * every due chunk, waiting for room (EV_WRITE) when the destination is
 * full. With no delay a read is written out at once. The EOF marker
 * becomes shutdown(SHUT_WR) of the destination; both directions shut,
 * the connection is freed; an error on either socket closes both.
 */
#define SPLICE_PIPE_SIZE	(1024 * 1024)	/* asked; 64 KiB if refused */
#define SPLICE_TURN_MAX		(4 * 1024 * 1024) /* bytes per wakeup */
#define SPLICE_SPARE_PIPES	4		/* kept per direction */
#define SPLICE_PIPES_MAX	64		/* in use per direction */

struct spipe {
	TAILQ_ENTRY(spipe) link;
	int fd[2];
	size_t held;		/* bytes in it */
	bool full;		/* its slots are: it takes no more until empty */
};

TAILQ_HEAD(spipe_list, spipe);

struct schunk {
	TAILQ_ENTRY(schunk) link;
	struct timespec due;
	struct spipe *pipe;	/* NULL: the EOF marker */
	size_t bytes;		/* not yet written */
};

struct sdir {
	struct sconn *conn;
	int from, to;		/* borrowed from the connection */
	struct spipe_list pipes;	/* in use, oldest first */
	struct spipe_list spare;
	unsigned nspare;
	unsigned npipes;	/* in use */
	TAILQ_HEAD(, schunk) q;
	size_t held;		/* bytes in the pipes */
	struct event *rd;	/* from readable */
	struct event *wr;	/* to writable: pending while a due chunk waits */
	struct event *timer;	/* the head chunk is due */
	bool eof_read, paused, shut;
};

struct sconn {
	LIST_ENTRY(sconn) link;
	struct relay *relay;
	int fd[2];		/* 0 the client, 1 the target */
	struct sdir d[2];	/* d[i] reads fd[i], writes fd[1 - i] */
	struct event *connect;	/* the target's connect completing */
};

static void
spipe_close(struct spipe *p)
{
	close(p->fd[0]);
	close(p->fd[1]);
	free(p);
}

static void
sconn_free(struct sconn *c)
{
	LIST_REMOVE(c, link);
	if (c->connect)
		event_free(c->connect);
	for (int i = 0; i < 2; i++) {
		struct sdir *d = &c->d[i];
		struct schunk *h;
		struct spipe *p;

		if (d->rd)
			event_free(d->rd);
		if (d->wr)
			event_free(d->wr);
		if (d->timer)
			event_free(d->timer);
		while ((h = TAILQ_FIRST(&d->q))) {
			TAILQ_REMOVE(&d->q, h, link);
			free(h);
		}
		while ((p = TAILQ_FIRST(&d->pipes))) {
			TAILQ_REMOVE(&d->pipes, p, link);
			spipe_close(p);
		}
		while ((p = TAILQ_FIRST(&d->spare))) {
			TAILQ_REMOVE(&d->spare, p, link);
			spipe_close(p);
		}
		if (c->fd[i] >= 0)
			close(c->fd[i]);
	}
	free(c);
}

/* A new pipe at the end of d's pipes in use (a spare one first), or NULL. */
static struct spipe *
sdir_new_pipe(struct sdir *d)
{
	struct spipe *p = TAILQ_FIRST(&d->spare);

	if (p) {
		TAILQ_REMOVE(&d->spare, p, link);
		d->nspare--;
	} else {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		if (pipe2(p->fd, O_CLOEXEC | O_NONBLOCK) != 0) {
			free(p);
			return NULL;
		}
		(void)fcntl(p->fd[1], F_SETPIPE_SZ, SPLICE_PIPE_SIZE);
	}
	TAILQ_INSERT_TAIL(&d->pipes, p, link);
	d->npipes++;
	return p;
}

/* Queue a chunk of n bytes in pipe p (NULL: the EOF marker). */
static int
sdir_push(struct sdir *d, struct spipe *p, size_t n)
{
	struct schunk *ch = calloc(1, sizeof(*ch));
	struct relay *r = d->conn->relay;

	if (!ch)
		return -1;
	ch->due = ts_add(now_mono(), r->delay);
	ch->pipe = p;
	ch->bytes = n;
	TAILQ_INSERT_TAIL(&d->q, ch, link);
	return 0;
}

/* Arm d's timer for its head chunk unless it is armed or waits for room. */
static void
sdir_arm(struct sdir *d)
{
	struct schunk *h = TAILQ_FIRST(&d->q);
	struct timespec now = now_mono();
	struct timeval tv;

	if (!h || evtimer_pending(d->timer, NULL) ||
	    event_pending(d->wr, EV_WRITE, NULL))
		return;
	tv = due_in(h->due, now, d->conn->relay->slack_ns);
	evtimer_add(d->timer, &tv);
}

/* Stop reading d's source until sdir_flow resumes it. */
static void
sdir_pause(struct sdir *d)
{
	d->paused = true;
	event_del(d->rd);
}

/* Resume or stop reading d's source by what it holds. */
static void
sdir_flow(struct sdir *d)
{
	if (!d->paused && (d->held > RELAY_QUEUE_MAX ||
			   d->npipes >= SPLICE_PIPES_MAX)) {
		sdir_pause(d);
	} else if (d->paused && d->held <= RELAY_QUEUE_MAX / 2 &&
		   d->npipes <= SPLICE_PIPES_MAX / 2) {
		d->paused = false;
		if (!d->eof_read)
			event_add(d->rd, NULL);
	}
}

/*
 * Write every due chunk of d to its destination. Returns 0, or -1 when the
 * connection must close (an error, or both directions shut).
 */
static int
sdir_write(struct sdir *d)
{
	struct timespec now = now_mono();
	struct schunk *h;

	while ((h = TAILQ_FIRST(&d->q)) && ts_le(h->due, now)) {
		struct spipe *p = h->pipe;
		ssize_t n;

		if (!p) {
			TAILQ_REMOVE(&d->q, h, link);
			free(h);
			d->shut = true;
			shutdown(d->to, SHUT_WR);
			if (d->conn->d[0].shut && d->conn->d[1].shut)
				return -1;
			continue;
		}
		n = splice(p->fd[0], NULL, d->to, NULL, h->bytes,
			   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			event_add(d->wr, NULL);
			return 0;
		}
		if (n <= 0)
			return -1;
		h->bytes -= (size_t)n;
		p->held -= (size_t)n;
		d->held -= (size_t)n;
		if (h->bytes > 0)
			continue;
		TAILQ_REMOVE(&d->q, h, link);
		free(h);
		if (p->held == 0)
			p->full = false;
		if (p->held == 0 && p != TAILQ_LAST(&d->pipes, spipe_list)) {
			TAILQ_REMOVE(&d->pipes, p, link);
			d->npipes--;
			if (d->nspare < SPLICE_SPARE_PIPES) {
				TAILQ_INSERT_TAIL(&d->spare, p, link);
				d->nspare++;
			} else {
				spipe_close(p);
			}
		}
	}
	event_del(d->wr);
	sdir_flow(d);
	sdir_arm(d);
	return 0;
}

/*
 * Read what d's source holds into its pipes, up to SPLICE_TURN_MAX, as
 * chunks. Returns 0, or -1 on an error.
 */
static int
sdir_read(struct sdir *d)
{
	size_t moved = 0;
	bool fresh = false;	/* the last pipe was empty when tried */
	int unread;

	while (!d->eof_read && !d->paused && moved < SPLICE_TURN_MAX) {
		struct spipe *p = TAILQ_LAST(&d->pipes, spipe_list);
		ssize_t n;

		if (!p || p->full || p->held >= SPLICE_PIPE_SIZE) {
			if (d->npipes >= SPLICE_PIPES_MAX ||
			    !(p = sdir_new_pipe(d))) {
				if (!TAILQ_EMPTY(&d->q)) {
					sdir_pause(d);	/* writes free pipes */
					break;
				}
				return -1;	/* nothing would resume it */
			}
		}
		fresh = p->held == 0;
		n = splice(d->from, NULL, p->fd[1], NULL, SPLICE_PIPE_SIZE,
			   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0) {
			p->held += (size_t)n;
			d->held += (size_t)n;
			moved += (size_t)n;
			if (sdir_push(d, p, (size_t)n) != 0)
				return -1;
			sdir_flow(d);
			continue;
		}
		if (n == 0) {
			d->eof_read = true;
			event_del(d->rd);
			if (sdir_push(d, NULL, 0) != 0)
				return -1;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		/* EAGAIN: the socket is empty, or the pipe is full (its
		 * slots, not its bytes): an empty pipe, or the socket's
		 * count of unread bytes, tells which. */
		if (fresh || ioctl(d->from, FIONREAD, &unread) != 0 ||
		    unread <= 0)
			break;
		p->full = true;		/* the loop's top takes a new one */
	}
	return 0;
}

/* d's source is readable: read, then write what is due. */
static void
sdir_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sdir *d = arg;

	(void)fd;
	(void)what;
	if (sdir_read(d) != 0 || sdir_write(d) != 0)
		sconn_free(d->conn);
}

/* d's head is due, or its destination has room: write. */
static void
sdir_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sdir *d = arg;

	(void)fd;
	(void)what;
	if (sdir_write(d) != 0)
		sconn_free(d->conn);
}

/* The target's connect finished: start both directions, or close. */
static void
sconn_connected_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sconn *c = arg;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)what;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
		sconn_free(c);
		return;
	}
	for (int i = 0; i < 2; i++)
		event_add(c->d[i].rd, NULL);
}

/* Set up direction i of c. Returns 0 or -1. */
static int
sdir_init(struct relay *r, struct sconn *c, int i)
{
	struct sdir *d = &c->d[i];

	d->conn = c;
	d->from = c->fd[i];
	d->to = c->fd[1 - i];
	TAILQ_INIT(&d->pipes);
	TAILQ_INIT(&d->spare);
	TAILQ_INIT(&d->q);
	d->rd = event_new(r->base, d->from, EV_READ | EV_PERSIST,
			  sdir_read_cb, d);
	d->wr = event_new(r->base, d->to, EV_WRITE | EV_PERSIST,
			  sdir_write_cb, d);
	d->timer = evtimer_new(r->base, sdir_write_cb, d);
	return d->rd && d->wr && d->timer ? 0 : -1;
}

/* Relay the accepted client fd to pair p's target through pipes. */
static void
sconn_accept(struct pair *p, evutil_socket_t fd)
{
	struct relay *r = p->relay;
	struct sconn *c = calloc(1, sizeof(*c));

	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	LIST_INSERT_HEAD(&r->sconns, c, link);
	c->relay = r;
	c->fd[0] = fd;
	c->fd[1] = socket(p->target.ss_family,
			  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd[1] < 0 || evutil_make_socket_nonblocking(fd) != 0 ||
	    sdir_init(r, c, 0) != 0 || sdir_init(r, c, 1) != 0)
		goto fail;
	/* No Nagle, as on the buffered path. */
	set_nodelay(fd);
	set_nodelay(c->fd[1]);
	if (connect(c->fd[1], (struct sockaddr *)&p->target,
		    (socklen_t)p->target_len) != 0 && errno != EINPROGRESS) {
		sconn_free(c);	/* refused: the client sees its socket close */
		return;
	}
	c->connect = event_new(r->base, c->fd[1], EV_WRITE, sconn_connected_cb,
			       c);
	if (c->connect && event_add(c->connect, NULL) == 0)
		return;
fail:
	fprintf(stderr, "delayrelay: cannot set up a connection\n");
	sconn_free(c);
}

/* Accept a client on pair p: connect to the target and start relaying. */
static void
pair_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
	       struct sockaddr *sa, int salen, void *arg)
{
	struct pair *p = arg;
	struct relay *r = p->relay;
	struct conn *c = calloc(1, sizeof(*c));
	int opts = BEV_OPT_CLOSE_ON_FREE;

	(void)lev;
	(void)sa;
	(void)salen;
	if (r->rewrite == READRW_NONE) {
		free(c);
		sconn_accept(p, fd);
		return;
	}
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	c->relay = r;
	LIST_INSERT_HEAD(&r->conns, c, link);
	c->side[0] = bufferevent_socket_new(r->base, fd, opts);
	if (!c->side[0])
		evutil_closesocket(fd);
	c->side[1] = bufferevent_socket_new(r->base, -1, opts);
	if (!c->side[0] || !c->side[1] ||
	    (r->rewrite != READRW_NONE &&
	     readrw_init(&c->rw, r->rewrite) != 0) ||
	    dir_init(&c->d[0], c, c->side[0], c->side[1]) != 0 ||
	    dir_init(&c->d[1], c, c->side[1], c->side[0]) != 0)
		goto fail;
	conn_setup_side(c, c->side[0]);
	conn_setup_side(c, c->side[1]);
	if (bufferevent_socket_connect(c->side[1],
				       (struct sockaddr *)&p->target,
				       p->target_len) != 0)
		goto fail;
	/* No Nagle: a relay must not hold back a small segment waiting for
	 * an ACK the far side delays (a 40 ms stall per round trip). */
	set_nodelay(fd);
	set_nodelay(bufferevent_getfd(c->side[1]));
	return;
fail:
	fprintf(stderr, "delayrelay: cannot set up a connection\n");
	conn_free(c);
}

/* Format sa as address:port into out. */
static void
format_addr(const struct sockaddr_storage *sa, char *out, size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		evutil_inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, n, "%s:%d", host, port);
	} else {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)sa;

		evutil_inet_ntop(AF_INET6, &in6->sin6_addr, host,
				 sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, n, "[%s]:%d", host, port);
	}
}

/*
 * Parse "a.b.c.d:port" or "[v6]:port" into ss (port 0 allowed, which
 * libevent's parser refuses). Returns the address length, or -1.
 */
static int
parse_addr(char *s, struct sockaddr_storage *ss)
{
	char *colon = strrchr(s, ':'), *end;
	unsigned long port;

	if (!colon || colon == s)
		return -1;
	*colon = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[' && colon[-1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		colon[-1] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, s + 1, &in6->sin6_addr) != 1)
			return -1;
		return (int)sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, s, &in->sin_addr) != 1)
			return -1;
		return (int)sizeof(*in);
	}
}

/* Return the port of an AF_INET or AF_INET6 address. */
static int
addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* Parse "LISTEN=TARGET" into p. Returns 0, or -1 on a malformed pair. */
static int
pair_parse(struct pair *p, const char *arg)
{
	char buf[2 * RELAY_ADDR_MAX];
	char *eq;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	eq = strchr(buf, '=');
	if (!eq)
		return -1;
	*eq = '\0';
	p->listen_len = parse_addr(buf, &p->listen);
	p->target_len = parse_addr(eq + 1, &p->target);
	if (p->listen_len < 0 || p->target_len < 0)
		return -1;
	return addr_port(&p->target) == 0 ? -1 : 0;
}

/* Bind pair p's listener and print its line. Returns 0 or -1. */
static int
pair_listen(struct relay *r, struct pair *p)
{
	unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char la[RELAY_ADDR_MAX], ta[RELAY_ADDR_MAX];

	p->relay = r;
	p->lev = evconnlistener_new_bind(r->base, pair_accept_cb, p, flags,
					 128, (struct sockaddr *)&p->listen,
					 p->listen_len);
	if (!p->lev)
		goto fail;
	if (getsockname(evconnlistener_get_fd(p->lev),
			(struct sockaddr *)&bound, &blen) != 0)
		goto fail;
	format_addr(&bound, la, sizeof(la));
	format_addr(&p->target, ta, sizeof(ta));
	printf("listen %s %s\n", la, ta);
	return 0;
fail:
	format_addr(&p->listen, la, sizeof(la));
	fprintf(stderr, "delayrelay: cannot listen on %s: %s\n", la,
		strerror(errno));
	return -1;
}

/* Stop the loop on SIGTERM or SIGINT. */
static void
relay_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct relay *r = arg;

	(void)sig;
	(void)what;
	event_base_loopexit(r->base, NULL);
}

/* Parse a delay in milliseconds into r->delay. Returns 0 or -1. */
static int
parse_delay(struct relay *r, const char *arg)
{
	char *end;
	double ms;
	long long ns;

	errno = 0;
	ms = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(ms) || ms < 0 ||
	    ms > 3600e3)
		return -1;
	ns = llround(ms * 1e6);
	r->delay.tv_sec = (time_t)(ns / 1000000000LL);
	r->delay.tv_nsec = (long)(ns % 1000000000LL);
	r->slack_ns = ns / 32 < RELAY_SLACK_NS ? ns / 32 : RELAY_SLACK_NS;
	return 0;
}

/* Print the usage line to f. */
static void
usage(FILE *f)
{
	fprintf(f, "usage: delayrelay --delay-ms MS [--rewrite-read "
		   "eof|inval|garbage|pad] --pair LISTEN=TARGET "
		   "[--pair LISTEN=TARGET ...]\n");
}

/* Parse the command line into r. Returns 0, or -1 after printing why. */
static int
parse_args(struct relay *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delay-ms", required_argument, NULL, 'd' },
		{ "pair", required_argument, NULL, 'p' },
		{ "rewrite-read", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_delay = false;
	int ch;

	r->pairs = calloc((size_t)argc, sizeof(*r->pairs));
	if (!r->pairs)
		return -1;
	while ((ch = getopt_long(argc, argv, "d:p:r:h", opts, NULL)) != -1) {
		if (ch == 'r' &&
		    (r->rewrite = readrw_mode_parse(optarg)) != READRW_NONE) {
			continue;
		} else if (ch == 'd' && parse_delay(r, optarg) == 0) {
			have_delay = true;
		} else if (ch == 'p' &&
			   pair_parse(&r->pairs[r->npairs], optarg) == 0) {
			r->npairs++;
		} else if (ch == 'h') {
			usage(stdout);
			exit(0);
		} else {
			if (ch == 'd' || ch == 'p' || ch == 'r')
				fprintf(stderr, "delayrelay: bad value "
					"'%s'\n", optarg);
			usage(stderr);
			return -1;
		}
	}
	if (!have_delay || r->npairs == 0 || optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* Create the event base with the precise timer. Returns NULL on failure. */
static struct event_base *
make_base(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base;

	if (!cfg)
		return NULL;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base;
}

/* Free everything r holds. */
static void
relay_free(struct relay *r)
{
	while (!LIST_EMPTY(&r->conns))
		conn_free(LIST_FIRST(&r->conns));
	while (!LIST_EMPTY(&r->sconns))
		sconn_free(LIST_FIRST(&r->sconns));
	for (size_t i = 0; i < r->npairs; i++)
		if (r->pairs[i].lev)
			evconnlistener_free(r->pairs[i].lev);
	free(r->pairs);
	if (r->base)
		event_base_free(r->base);
}

int
main(int argc, char **argv)
{
	struct relay r = { 0 };
	struct event *sigs[2] = { NULL, NULL };
	int rc = 1;

	LIST_INIT(&r.conns);
	LIST_INIT(&r.sconns);
	if (parse_args(&r, argc, argv) != 0) {
		free(r.pairs);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/*
	 * Keep the buffers the relay cycles through (256 KiB reads, a delay's
	 * worth of queued chunks) in the heap and never give them back: each
	 * freed buffer glibc unmapped (above its mmap threshold) or trimmed
	 * (at the heap's top) came back as new pages that fault in on the
	 * next read into them, as nfscached's malloc_tune() describes. One
	 * stream's ceiling (bench/relay_ceiling.py, 512 MiB, 2 ms) went from
	 * 550-650 MB/s to 1,250-1,380 MB/s. The heap is bounded by
	 * RELAY_QUEUE_MAX per direction.
	 */
	mallopt(M_MMAP_THRESHOLD, RELAY_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, RELAY_TRIM_THRESHOLD);
	r.base = make_base();
	if (!r.base)
		goto fail;
	sigs[0] = evsignal_new(r.base, SIGTERM, relay_signal_cb, &r);
	sigs[1] = evsignal_new(r.base, SIGINT, relay_signal_cb, &r);
	if (!sigs[0] || !sigs[1] || evsignal_add(sigs[0], NULL) != 0 ||
	    evsignal_add(sigs[1], NULL) != 0)
		goto fail;
	for (size_t i = 0; i < r.npairs; i++)
		if (pair_listen(&r, &r.pairs[i]) != 0)
			goto fail;
	printf("ready\n");
	fflush(stdout);
	rc = event_base_dispatch(r.base) < 0 ? 1 : 0;
fail:
	for (int i = 0; i < 2; i++)
		if (sigs[i])
			event_free(sigs[i]);
	relay_free(&r);
	return rc;
}
