/* SPDX-License-Identifier: MIT */
/*
 * upstream: the NFSv3 client towards the real NFS server (upstream.h), on
 * libnfs 4.0's raw async API driven by the caller's libevent loop. The only
 * translation unit of the project that includes <nfsc/...>.
 *
 * What it owns: at most one libnfs rpc_context at a time (u->rpc), the
 * libevent events that drive it, the calls in flight, the root handle,
 * the effective transfer sizes and the counters.
 *
 * Connection phases (u->phase), each on a fresh context that connects once
 * with rpc_connect_async (raw contexts never reconnect by themselves, and a
 * context whose socket never changes keeps the fd we watch valid):
 *   IDLE --start/retry--> [RESOLVE] -> [PMAP_MNT] -> MNT -> [PMAP_NFS]
 *        -> FSINFO -> UP
 * RESOLVE looks the server's host name up with libevent's asynchronous
 * resolver (the caller's evdns_base, upstream_params.dns) at the start of
 * every attempt, so a reconnect re-resolves; it has no libnfs context, the
 * lookup (u->resolve) is its only resource, cancelled when the attempt
 * ends. The later phases connect to the numeric address it found
 * (u->addr); a server given as an address literal skips RESOLVE. A name
 * that does not resolve is a failed step like any other. PMAP_* ask the
 * server's portmapper (GETPORT, TCP) and run only when the
 * configured port is 0. Any failed step, socket error or phase timeout
 * destroys the context and goes back to IDLE with a retry timer (backoff
 * 0.1 s doubling to 5 s, reset to 0.1 s once UP). Losing the UP context
 * (socket error, server gone, or a call timing out) does the same and
 * completes every call in flight with UPSTREAM_EDOWN, except an idle
 * close (no call waiting, UP for UP_IDLE_UP_MIN or more), which starts a
 * new attempt at once, CONNECTING, without going DOWN. The public state is
 * DOWN for IDLE, CONNECTING for the intermediate phases, UP for UP.
 *
 * Calls: each upstream_call decodes the caller's XDR arguments into the
 * libnfs struct of its procedure (table up_procs), sets the caller's
 * AUTH_SYS credential on the context if it differs from the last one (libnfs
 * 4.0 encodes the credential when a call is queued), queues the call and
 * arms a per-call timer. The reply struct is re-encoded into u->scratch
 * and handed to the caller's callback during libnfs's own callback; a
 * READ's data is not: it goes by reference from libnfs's decoded reply
 * (upstream_cb's tail).
 *
 * Every call is on exactly one list:
 *   calls    sent, no outcome yet
 *   failed   libnfs reported an RPC-level error; completed with EPROTO once
 *            rpc_service returns without a socket error (with one, EDOWN)
 *   zombies  completed (cb called) while libnfs still holds a PDU whose
 *            private_data is the call; freed by that PDU's callback or
 *            when the context is destroyed
 * Invariants: c->done iff c is on zombies (completed calls not held by
 * libnfs are freed at once); calls and failed are empty unless phase UP.
 * upstream_check_why checks each call's magic number, its list and its
 * upstream, done iff on zombies, and ncalls against the calls list.
 *
 * Re-entrancy: libnfs callbacks run inside rpc_service, which runs inside
 * up_io_cb. A user callback may call upstream_call or upstream_free from
 * anywhere. Every entry point from libevent holds u->busy while it runs;
 * upstream_free marks u closed, completes its calls and leaves the freeing
 * (which destroys the libnfs context) to the outermost frame, so libnfs is
 * never destroyed under its own feet. The context is only destroyed from
 * our own frames, never from inside a libnfs callback.
 *
 * The caller's state_cb runs from the event loop only: never synchronously
 * inside upstream_new, upstream_start, upstream_call or upstream_free.
 *
 * Limits inherited from libnfs 4.0: rpc_connect_async resolves whatever
 * it is given with a blocking getaddrinfo, so it is only ever given a
 * numeric address (RESOLVE above), incoming messages over 1 MiB + 4 KiB
 * kill the connection (so
 * transfer sizes are capped at 1 MiB), and libnfs binds a reserved source
 * port (512..1023) when it has the privilege.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-zdr.h>

#include "checkobj.h"
#include "mclock.h"
#include "upstream.h"
#include "upstream_impl.h"

static const char *const up_phase_names[] = {
	[UP_PH_IDLE] = "idle",
	[UP_PH_RESOLVE] = "host name lookup",
	[UP_PH_PMAP_MNT] = "portmapper lookup of MOUNT v3",
	[UP_PH_MNT] = "MOUNT MNT",
	[UP_PH_PMAP_NFS] = "portmapper lookup of NFS v3",
	[UP_PH_FSINFO] = "NFS FSINFO",
	[UP_PH_UP] = "NFS service",
};

/* ---------------------------------------------------------------------
 * The procedure table: one row per NFSv3 procedure (RFC 1813 section 3.3),
 * indexed by procedure number.
 */

typedef int (*up_xdr_fn)(ZDR *z, void *obj);
typedef int (*up_send_fn)(struct rpc_context *rpc, rpc_cb cb, void *args,
			  void *private_data);

struct up_proc {
	const char *name;
	const char *shape;	/* argument layout for up_args_check */
	size_t args_size;	/* sizeof the libnfs args struct, 0 = void */
	size_t res_size;	/* sizeof the libnfs result struct, 0 = void */
	up_xdr_fn args_decode;
	up_xdr_fn res_encode;
	up_send_fn send;
};

/*
 * Define, for procedure NAME (libnfs spelling name), the three adapters of
 * its table row: decode NAME3args, encode NAME3res, queue the call with
 * rpc_nfs3_name_async (libnfs 4.0; >= 6 would say rpc_nfs3_name_task).
 */
#define UP_ADAPTERS(NAME, name)						\
	static int up_dec_##name(ZDR *z, void *obj)			\
	{								\
		return zdr_##NAME##3args(z, obj) != 0;			\
	}								\
	static int up_enc_##name(ZDR *z, void *obj)			\
	{								\
		return zdr_##NAME##3res(z, obj) != 0;			\
	}								\
	static int up_send_##name(struct rpc_context *rpc, rpc_cb cb,	\
				  void *args, void *pd)			\
	{								\
		return rpc_nfs3_##name##_async(rpc, cb, args, pd);	\
	}

#define UP_ROW(NAME, name, shape)					\
	[NFS3_##NAME] = { #name, shape, sizeof(NAME##3args),		\
			  sizeof(NAME##3res), up_dec_##name, up_enc_##name, \
			  up_send_##name }

UP_ADAPTERS(GETATTR, getattr)
UP_ADAPTERS(SETATTR, setattr)
UP_ADAPTERS(LOOKUP, lookup)
UP_ADAPTERS(ACCESS, access)
UP_ADAPTERS(READLINK, readlink)
UP_ADAPTERS(READ, read)
UP_ADAPTERS(WRITE, write)
UP_ADAPTERS(CREATE, create)
UP_ADAPTERS(MKDIR, mkdir)
UP_ADAPTERS(SYMLINK, symlink)
UP_ADAPTERS(MKNOD, mknod)
UP_ADAPTERS(REMOVE, remove)
UP_ADAPTERS(RMDIR, rmdir)
UP_ADAPTERS(RENAME, rename)
UP_ADAPTERS(LINK, link)
UP_ADAPTERS(READDIR, readdir)
UP_ADAPTERS(READDIRPLUS, readdirplus)
UP_ADAPTERS(FSSTAT, fsstat)
UP_ADAPTERS(FSINFO, fsinfo)
UP_ADAPTERS(PATHCONF, pathconf)
UP_ADAPTERS(COMMIT, commit)

/* Queue NFSv3 NULL, which has no arguments. */
static int up_send_null(struct rpc_context *rpc, rpc_cb cb, void *args,
			void *pd)
{
	(void)args;
	return rpc_nfs3_null_async(rpc, cb, pd);
}

/*
 * Argument shapes (RFC 1813 section 3.3), one letter per field:
 *   F nfs_fh3 (opaque<64>)     S filename3/nfspath3/data (opaque<>)
 *   4 uint32 or enum           8 uint64 or 8-byte verifier
 *   A sattr3                   G sattrguard3
 *   C createhow3               M mknoddata3
 */
static const struct up_proc up_procs[UPSTREAM_NPROCS] = {
	[NFS3_NULL] = { "null", "", 0, 0, NULL, NULL, up_send_null },
	UP_ROW(GETATTR, getattr, "F"),
	UP_ROW(SETATTR, setattr, "FAG"),
	UP_ROW(LOOKUP, lookup, "FS"),
	UP_ROW(ACCESS, access, "F4"),
	UP_ROW(READLINK, readlink, "F"),
	UP_ROW(READ, read, "F84"),
	UP_ROW(WRITE, write, "F844S"),
	UP_ROW(CREATE, create, "FSC"),
	UP_ROW(MKDIR, mkdir, "FSA"),
	UP_ROW(SYMLINK, symlink, "FSAS"),
	UP_ROW(MKNOD, mknod, "FSM"),
	UP_ROW(REMOVE, remove, "FS"),
	UP_ROW(RMDIR, rmdir, "FS"),
	UP_ROW(RENAME, rename, "FSFS"),
	UP_ROW(LINK, link, "FFS"),
	UP_ROW(READDIR, readdir, "F884"),
	UP_ROW(READDIRPLUS, readdirplus, "F8844"),
	UP_ROW(FSSTAT, fsstat, "F"),
	UP_ROW(FSINFO, fsinfo, "F"),
	UP_ROW(PATHCONF, pathconf, "F"),
	UP_ROW(COMMIT, commit, "F84"),
};

/* ---------------------------------------------------------------------
 * Argument check. libnfs 4.0's decoder trusts the length fields it reads
 * (pos + len is computed in 32 bits and wraps), so every length is bounded
 * here first, walking the caller's bytes by the procedure's shape.
 */

/* Bounded reader over the caller's argument bytes. */
struct up_rd {
	const uint8_t *p;
	size_t len;
	size_t off;
};

/* Read one XDR uint32. */
static bool up_rd_u32(struct up_rd *r, uint32_t *v)
{
	if (r->len - r->off < 4)
		return false;
	*v = (uint32_t)r->p[r->off] << 24 | (uint32_t)r->p[r->off + 1] << 16 |
	     (uint32_t)r->p[r->off + 2] << 8 | r->p[r->off + 3];
	r->off += 4;
	return true;
}

/* Skip n bytes. */
static bool up_rd_skip(struct up_rd *r, size_t n)
{
	if (r->len - r->off < n)
		return false;
	r->off += n;
	return true;
}

/* Skip a variable-length opaque of at most max bytes, with its padding. */
static bool up_rd_opaque(struct up_rd *r, uint32_t max)
{
	uint32_t n;

	return up_rd_u32(r, &n) && n <= max &&
	       up_rd_skip(r, ((size_t)n + 3) & ~(size_t)3);
}

/* Skip an optional field: a discriminant, then n bytes if it is arm. */
static bool up_rd_optional(struct up_rd *r, uint32_t arm, size_t n)
{
	uint32_t d;

	return up_rd_u32(r, &d) && (d != arm || up_rd_skip(r, n));
}

/* Skip a sattr3: mode, uid, gid (bool + 4), size (bool + 8), atime and
 * mtime (time_how; SET_TO_CLIENT_TIME = 2 + nfstime3). */
static bool up_rd_sattr3(struct up_rd *r)
{
	return up_rd_optional(r, 1, 4) && up_rd_optional(r, 1, 4) &&
	       up_rd_optional(r, 1, 4) && up_rd_optional(r, 1, 8) &&
	       up_rd_optional(r, 2, 8) && up_rd_optional(r, 2, 8);
}

/* Skip a sattrguard3: FALSE, or TRUE + nfstime3. */
static bool up_rd_guard(struct up_rd *r)
{
	uint32_t d;

	return up_rd_u32(r, &d) && (d == 0 || (d == 1 && up_rd_skip(r, 8)));
}

/* Skip a createhow3: UNCHECKED/GUARDED + sattr3, EXCLUSIVE + verifier. */
static bool up_rd_createhow(struct up_rd *r)
{
	uint32_t d;

	if (!up_rd_u32(r, &d))
		return false;
	if (d == 0 || d == 1)
		return up_rd_sattr3(r);
	return d == 2 && up_rd_skip(r, 8);
}

/* Skip a mknoddata3: CHR/BLK + sattr3 + specdata3, SOCK/FIFO + sattr3. */
static bool up_rd_mknod(struct up_rd *r)
{
	uint32_t d;

	if (!up_rd_u32(r, &d))
		return false;
	if (d == NF3CHR || d == NF3BLK)
		return up_rd_sattr3(r) && up_rd_skip(r, 8);
	if (d == NF3SOCK || d == NF3FIFO)
		return up_rd_sattr3(r);
	return true;
}

/* True if buf[0..len) is exactly one argument of the given shape. */
static bool up_args_check(const char *shape, const uint8_t *buf, size_t len)
{
	struct up_rd r = { buf, len, 0 };
	bool ok = true;

	for (; ok && *shape; shape++) {
		switch (*shape) {
		case 'F':
			ok = up_rd_opaque(&r, UP_FH_MAX);
			break;
		case 'S':
			ok = up_rd_opaque(&r, UINT32_MAX);
			break;
		case '4':
			ok = up_rd_skip(&r, 4);
			break;
		case '8':
			ok = up_rd_skip(&r, 8);
			break;
		case 'A':
			ok = up_rd_sattr3(&r);
			break;
		case 'G':
			ok = up_rd_guard(&r);
			break;
		case 'C':
			ok = up_rd_createhow(&r);
			break;
		case 'M':
			ok = up_rd_mknod(&r);
			break;
		default:
			ok = false;
			break;
		}
	}
	return ok && r.off == len;
}

static void up_io_cb(evutil_socket_t fd, short what, void *arg);
static void up_connect_begin(struct upstream *u);
static void up_connect_failed(struct upstream *u);
static void up_advance(struct upstream *u);
static void up_unbusy(struct upstream *u);
static void up_resolve_cancel(struct upstream *u);
static void up_step_fail(struct upstream *u, const char *what,
			 const char *why);
static void up_phase_enter(struct upstream *u, enum up_phase ph, int port);

/* ---------------------------------------------------------------------
 * Small helpers.
 */

/* Record the reason of the latest failure. */
static void __attribute__((format(printf, 2, 3)))
up_error(struct upstream *u, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->error, sizeof(u->error), fmt, ap);
	va_end(ap);
}

/* Clamp a server's advertised transfer size to what we can carry. */
static uint32_t up_clamp(uint32_t server, uint32_t cap)
{
	uint32_t v = server ? server : UPSTREAM_LIBNFS_MAX;

	if (v > UPSTREAM_LIBNFS_MAX)
		v = UPSTREAM_LIBNFS_MAX;
	if (cap && v > cap)
		v = cap;
	return v;
}

/* Change the public state and tell the caller. The callback may free u. */
static void up_set_state(struct upstream *u, enum upstream_state s)
{
	if (u->state == s)
		return;
	u->state = s;
	if (u->state_cb && !u->closed)
		u->state_cb(u, s, u->state_arg);
}

/* Drop a frame's hold on u; free u if it was closed meanwhile. */
static void up_unbusy(struct upstream *u);

/* ---------------------------------------------------------------------
 * Calls: lists, completion, freeing.
 */

/* Return the list head for list id l. */
static struct up_call_list *up_list_head(struct upstream *u, enum up_list l)
{
	switch (l) {
	case UP_LIST_CALLS:
		return &u->calls;
	case UP_LIST_FAILED:
		return &u->failed;
	case UP_LIST_ZOMBIES:
		return &u->zombies;
	case UP_LIST_NONE:
		break;
	}
	return NULL;
}

/* Move c to list l (or off every list for UP_LIST_NONE). */
static void up_call_move(struct up_call *c, enum up_list l)
{
	struct upstream *u = c->u;

	if (c->list == UP_LIST_CALLS)
		u->ncalls--;
	if (l == UP_LIST_CALLS)
		u->ncalls++;
	if (c->list != UP_LIST_NONE)
		TAILQ_REMOVE(up_list_head(u, c->list), c, link);
	c->list = l;
	if (l != UP_LIST_NONE)
		TAILQ_INSERT_TAIL(up_list_head(u, l), c, link);
}

/* Free a call that is on no list and not held by libnfs. */
static void up_call_free(struct up_call *c)
{
	if (c->ev_timeout)
		event_free(c->ev_timeout);
	c->magic = 0;
	free(c);
}

/* Monotonic time in seconds, for call latency (mclock.h). */
static double up_clock(void)
{
	return mclock_now();
}

/*
 * Note the reply latency lat (seconds) of a call of proc whose reply held
 * bytes bytes, for upstream_latency_floor: the shortest in windows of
 * UP_FLOOR_WINDOW seconds, the last two kept. WRITEs, COMMITs (the
 * server's sync) and replies over UP_FLOOR_BYTES measure the transfer
 * or the disk, not the link, and are left out of the minimum, but every
 * reply moves the windows on: a floor no small call renewed for two
 * windows is forgotten (0) rather than kept however old.
 */
static void up_floor_observe(struct upstream *u, uint32_t proc, size_t bytes,
			     double lat)
{
	if (u->last_reply - u->floor_start >= UP_FLOOR_WINDOW) {
		u->floor_prev = u->floor_cur;
		u->floor_cur = 0;
		u->floor_start = u->last_reply;
	}
	if (proc == NFS3_WRITE || proc == NFS3_COMMIT || bytes > UP_FLOOR_BYTES)
		return;
	if (u->floor_cur == 0 || lat < u->floor_cur) {
		u->floor_cur = lat;
	}
}

/*
 * Complete c with status st: bookkeeping first, then the caller's cb, which
 * may re-enter (upstream_call, upstream_free). The caller holds u->busy.
 */
static void up_complete(struct upstream *u, struct up_call *c,
			enum upstream_status st, const uint8_t *res, size_t len,
			const uint8_t *tail, size_t tail_len)
{
	upstream_cb cb = c->cb;
	void *arg = c->arg;
	uint32_t proc = c->proc;

	if (c->timed_out && st == UPSTREAM_EDOWN)
		st = UPSTREAM_ETIMEDOUT;
	c->done = true;
	if (c->ev_timeout)
		evtimer_del(c->ev_timeout);
	if (st == UPSTREAM_OK) {
		u->last_reply = up_clock();
		u->srtt = u->srtt * 7 / 8 + (u->last_reply - c->sent) / 8;
		up_floor_observe(u, proc, len + tail_len,
				 u->last_reply - c->sent);
		delivery_reply(&u->rate, u->last_reply, proc == NFS3_READ,
			       len + tail_len, &c->mark);
		u->st.replies[proc]++;
		u->st.bytes_received += len + tail_len;
		histogram_observe(&u->st.latency[proc], up_clock() - c->sent);
	} else {
		u->st.errors++;
		if (st == UPSTREAM_ETIMEDOUT)
			u->st.timeouts++;
		res = tail = NULL;
		len = tail_len = 0;
	}
	if (c->in_libnfs) {
		up_call_move(c, UP_LIST_ZOMBIES);
	} else {
		up_call_move(c, UP_LIST_NONE);
		up_call_free(c);
	}
	cb(st, res, len, tail, tail_len, arg);
}

/* Complete every call still waiting (calls, failed) with status st. */
static void up_complete_all(struct upstream *u, enum upstream_status st)
{
	struct up_call *c;

	while ((c = TAILQ_FIRST(&u->failed)) != NULL ||
	       (c = TAILQ_FIRST(&u->calls)) != NULL)
		up_complete(u, c, st, NULL, 0, NULL, 0);
}

/* Complete the calls libnfs failed at the RPC level with EPROTO. */
static void up_complete_failed(struct upstream *u)
{
	struct up_call *c;

	while ((c = TAILQ_FIRST(&u->failed)) != NULL)
		up_complete(u, c, UPSTREAM_EPROTO, NULL, 0, NULL, 0);
}

/* ---------------------------------------------------------------------
 * The libnfs context and its event.
 */

/* (Re)arm the io event for the context's fd and wanted events. */
static void up_io_update(struct upstream *u)
{
	int fd = -1, want_poll;
	short want = 0;

	if (u->rpc && !u->closed) {
		fd = rpc_get_fd(u->rpc);
		if (fd >= 0) {
			want_poll = rpc_which_events(u->rpc);
			if (want_poll & POLLIN)
				want |= EV_READ;
			if (want_poll & POLLOUT)
				want |= EV_WRITE;
		}
	}
	if (u->ev_io && fd == u->io_fd && want == u->io_events)
		return;
	if (u->ev_io) {
		event_free(u->ev_io);
		u->ev_io = NULL;
	}
	/*
	 * A new socket: no Nagle. libnfs 4.0 leaves it on, so a call sent
	 * while an earlier segment waits for its ACK waits for the peer's
	 * delayed ACK: 1.3% of W5's cold random READs (one in flight) took
	 * 2.5-5 ms instead of 0.2. The Linux client does the same for its
	 * RPC transport (xs_tcp_finish_connecting). Best effort: a socket
	 * that refuses it still works.
	 */
	if (fd >= 0 && fd != u->io_fd) {
		int one = 1;

		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	u->io_fd = fd;
	u->io_events = want;
	if (fd < 0 || want == 0)
		return;
	/* On ENOMEM the phase or call timer notices the silence. */
	u->ev_io = event_new(u->base, fd, want | EV_PERSIST, up_io_cb, u);
	if (u->ev_io && event_add(u->ev_io, NULL) != 0) {
		event_free(u->ev_io);
		u->ev_io = NULL;
	}
}

/*
 * Destroy the context (if any). libnfs calls back every PDU it holds with
 * RPC_STATUS_CANCEL from rpc_destroy_context (lib/init.c); those callbacks
 * see tearing_down and only do bookkeeping. Never called from inside a
 * libnfs callback.
 */
static void up_ctx_destroy(struct upstream *u)
{
	struct up_call *c;

	if (u->ev_io) {
		/* Unregister before libnfs closes the fd. */
		event_free(u->ev_io);
		u->ev_io = NULL;
	}
	u->io_fd = -1;
	u->io_events = 0;
	up_resolve_cancel(u);
	if (u->ev_phase)
		evtimer_del(u->ev_phase);
	if (u->ev_probe)
		evtimer_del(u->ev_probe);
	u->probing = false;
	if (u->rpc) {
		u->tearing_down = true;
		rpc_destroy_context(u->rpc);
		u->rpc = NULL;
		u->tearing_down = false;
	}
	u->cred_valid = false;
	/* Whatever libnfs did not call back, it no longer holds. */
	while ((c = TAILQ_FIRST(&u->zombies)) != NULL) {
		up_call_move(c, UP_LIST_NONE);
		up_call_free(c);
	}
	TAILQ_FOREACH(c, &u->calls, link)
		c->in_libnfs = false;
	TAILQ_FOREACH(c, &u->failed, link)
		c->in_libnfs = false;
}

/* Schedule the next connection attempt after the current backoff. */
static void up_schedule_retry(struct upstream *u)
{
	struct timeval tv = mclock_tv(u->backoff);

	mclock_timer_add(u->ev_retry, &tv);
	u->backoff *= 2;
	if (u->backoff > UP_BACKOFF_MAX)
		u->backoff = UP_BACKOFF_MAX;
}

static void up_connect_begin(struct upstream *u);

/*
 * Give up on the UP connection: DOWN (and the caller told so), retry,
 * then every call EDOWN (ETIMEDOUT for the one that timed out). A close
 * with no call waiting, after the connection was UP a while, is the
 * server closing an idle connection (Ganesha does after about 5 minutes):
 * it is reconnected at once, CONNECTING and never DOWN, so it is no
 * outage; only a failed reconnect is one.
 */
static void up_lose(struct upstream *u)
{
	bool idle = TAILQ_EMPTY(&u->calls) && TAILQ_EMPTY(&u->failed) &&
		    up_clock() - u->up_at >= UP_IDLE_UP_MIN;

	u->st.disconnects++;
	up_ctx_destroy(u);
	u->phase = UP_PH_IDLE;
	if (idle && !u->closed) {
		u->st.idle_closes++;
		up_connect_begin(u);
		return;
	}
	up_schedule_retry(u);
	up_set_state(u, UPSTREAM_DOWN);
	if (!u->closed)
		up_complete_all(u, UPSTREAM_EDOWN);
}

/* A connection phase failed: DOWN and retry later. */
static void up_connect_failed(struct upstream *u)
{
	up_ctx_destroy(u);
	u->phase = UP_PH_IDLE;
	up_schedule_retry(u);
	up_set_state(u, UPSTREAM_DOWN);
}

/* ---------------------------------------------------------------------
 * Host name lookup (phase RESOLVE), off the loop's back: evdns sends the
 * queries and reads the answers as events of the same loop.
 */

/* Detach and cancel the lookup in flight, if any (its callback frees it). */
static void up_resolve_cancel(struct upstream *u)
{
	struct up_resolve *r = u->resolve;

	if (r == NULL)
		return;
	u->resolve = NULL;
	r->u = NULL;
	if (r->req)
		evdns_getaddrinfo_cancel(r->req);
}

/* Copy the address to connect to from ai: its first IPv4 address, else its
 * first IPv6 one (a server bound to 127.0.0.1 only is reached by
 * "localhost" whichever order /etc/hosts lists it in). 0, or -1. */
static int up_resolve_pick(struct upstream *u,
			   const struct evutil_addrinfo *ai)
{
	const struct evutil_addrinfo *pick = NULL;
	const void *a;

	for (const struct evutil_addrinfo *p = ai; p; p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			pick = p;
			break;
		}
		if (p->ai_family == AF_INET6 && pick == NULL)
			pick = p;
	}
	if (pick == NULL)
		return -1;
	if (pick->ai_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)
		      pick->ai_addr)->sin_addr;
	else
		a = &((const struct sockaddr_in6 *)(const void *)
		      pick->ai_addr)->sin6_addr;
	return evutil_inet_ntop(pick->ai_family, a, u->addr,
				sizeof(u->addr)) ? 0 : -1;
}

/* The lookup's answer (evdns_getaddrinfo_cb): keep the address or fail
 * the step, then move on unless evdns answered inside up_resolve_begin. */
static void up_resolve_cb(int err, struct evutil_addrinfo *ai, void *arg)
{
	struct up_resolve *r = arg;
	struct upstream *u;

	CHECK_OBJ(r, UP_RESOLVE_MAGIC);
	u = r->u;
	if (u && u->resolve == r)
		u->resolve = NULL;
	r->magic = 0;
	free(r);
	if (u == NULL || u->closed) {
		if (ai)
			evutil_freeaddrinfo(ai);
		return;
	}
	if (err != 0)
		up_step_fail(u, u->server, evutil_gai_strerror(err));
	else if (up_resolve_pick(u, ai) != 0)
		up_step_fail(u, u->server, "no IPv4 or IPv6 address");
	else
		u->step = UP_STEP_DONE;
	if (ai)
		evutil_freeaddrinfo(ai);
	if (u->resolving)
		return;
	u->busy++;
	up_advance(u);
	up_unbusy(u);
}

/* Start looking u->server up; the answer may come before this returns
 * (/etc/hosts, a cached or failed lookup), then u->step is set. 0, or -1. */
static int up_resolve_begin(struct upstream *u)
{
	struct evutil_addrinfo hints;
	struct evdns_getaddrinfo_request *req;
	struct up_resolve *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		up_error(u, "%s: out of memory", up_phase_names[u->phase]);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	r->magic = UP_RESOLVE_MAGIC;
	r->u = u;
	u->resolve = r;
	u->resolving = true;
	req = evdns_getaddrinfo(u->dns, u->server, NULL, &hints,
				up_resolve_cb, r);
	u->resolving = false;
	if (u->resolve == r) {	/* no answer yet: r is alive */
		if (req == NULL) {	/* not answered, not pending: none */
			u->resolve = NULL;
			r->magic = 0;
			free(r);
			up_step_fail(u, u->server, "lookup not started");
			return 0;
		}
		r->req = req;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Connection phases.
 */

/* Mark the current phase failed (acted upon after rpc_service). */
static void up_step_fail(struct upstream *u, const char *what,
			 const char *why)
{
	if (u->step == UP_STEP_WAIT)
		up_error(u, "%s: %s: %s", up_phase_names[u->phase], what,
			 why ? why : "cancelled");
	u->step = UP_STEP_FAILED;
}

/* True if a connection-phase callback should be ignored. */
static bool up_phase_stale(struct upstream *u, struct rpc_context *rpc)
{
	return u->closed || u->tearing_down || rpc != u->rpc ||
	       u->step != UP_STEP_WAIT;
}

/* Take a portmapper GETPORT reply (data: uint32_t port). */
static void up_pmap_cb(struct rpc_context *rpc, int status, void *data,
		       void *pd)
{
	struct upstream *u = pd;
	uint32_t port;

	if (up_phase_stale(u, rpc))
		return;
	if (status != RPC_STATUS_SUCCESS) {
		up_step_fail(u, "GETPORT", data);
		return;
	}
	port = *(uint32_t *)data;
	if (port == 0 || port > 65535) {
		up_step_fail(u, "GETPORT", "program not registered");
		return;
	}
	u->found_port = (int)port;
	u->step = UP_STEP_DONE;
}

/* Take a MOUNT v3 MNT reply (data: mountres3 *), keep the root handle. */
static void up_mnt_cb(struct rpc_context *rpc, int status, void *data,
		      void *pd)
{
	struct upstream *u = pd;
	mountres3 *res = data;
	fhandle3 *fh;

	if (up_phase_stale(u, rpc))
		return;
	if (status != RPC_STATUS_SUCCESS) {
		up_step_fail(u, "MNT", data);
		return;
	}
	if (res->fhs_status != MNT3_OK) {
		up_step_fail(u, u->export_path,
			     mountstat3_to_str(res->fhs_status));
		return;
	}
	fh = &res->mountres3_u.mountinfo.fhandle;
	if (fh->fhandle3_len == 0 || fh->fhandle3_len > UP_FH_MAX) {
		up_step_fail(u, "MNT", "bad root handle length");
		return;
	}
	memcpy(u->root_fh, fh->fhandle3_val, fh->fhandle3_len);
	u->root_fh_len = fh->fhandle3_len;
	u->step = UP_STEP_DONE;
}

/* Take the FSINFO reply (data: FSINFO3res *), set the transfer sizes. */
static void up_fsinfo_cb(struct rpc_context *rpc, int status, void *data,
			 void *pd)
{
	struct upstream *u = pd;
	FSINFO3res *res = data;
	FSINFO3resok *ok;

	if (up_phase_stale(u, rpc))
		return;
	if (status != RPC_STATUS_SUCCESS) {
		up_step_fail(u, "FSINFO", data);
		return;
	}
	if (res->status != NFS3_OK) {
		up_step_fail(u, "FSINFO", nfsstat3_to_str(res->status));
		return;
	}
	ok = &res->FSINFO3res_u.resok;
	u->rtmax = up_clamp(ok->rtmax, u->max_transfer);
	u->wtmax = up_clamp(ok->wtmax, u->max_transfer);
	u->step = UP_STEP_DONE;
}

/* Queue the request of the current phase on the fresh connection. */
static int up_phase_send(struct upstream *u)
{
	struct FSINFO3args fa;

	switch (u->phase) {
	case UP_PH_PMAP_MNT:
		return rpc_pmap2_getport_async(u->rpc, MOUNT_PROGRAM, MOUNT_V3,
					       IPPROTO_TCP, up_pmap_cb, u);
	case UP_PH_PMAP_NFS:
		return rpc_pmap2_getport_async(u->rpc, NFS_PROGRAM, NFS_V3,
					       IPPROTO_TCP, up_pmap_cb, u);
	case UP_PH_MNT:
		return rpc_mount3_mnt_async(u->rpc, up_mnt_cb, u->export_path,
					    u);
	case UP_PH_FSINFO:
		memset(&fa, 0, sizeof(fa));
		fa.fsroot.data.data_len = (u_int)u->root_fh_len;
		fa.fsroot.data.data_val = (char *)u->root_fh;
		return rpc_nfs3_fsinfo_async(u->rpc, up_fsinfo_cb, &fa, u);
	case UP_PH_IDLE:
	case UP_PH_RESOLVE:
	case UP_PH_UP:
		break;
	}
	return -1;
}

/* The TCP connection of the current phase is up (or failed). */
static void up_connect_cb(struct rpc_context *rpc, int status, void *data,
			  void *pd)
{
	struct upstream *u = pd;

	if (up_phase_stale(u, rpc))
		return;
	if (status != RPC_STATUS_SUCCESS) {
		up_step_fail(u, "connect", data);
		return;
	}
	if (up_phase_send(u) != 0)
		up_step_fail(u, "send", rpc_get_error(rpc));
}

/* Open a fresh context for phase ph and connect it to port. */
static int up_phase_begin(struct upstream *u, enum up_phase ph, int port)
{
	struct timeval tv = u->call_tv;
	struct AUTH *auth;

	u->phase = ph;
	u->step = UP_STEP_WAIT;
	u->phase_start = up_clock();
	if (ph == UP_PH_RESOLVE) {
		mclock_timer_add(u->ev_phase, &tv);
		return up_resolve_begin(u);
	}
	u->rpc = rpc_init_context();
	if (u->rpc == NULL) {
		up_error(u, "%s: out of memory", up_phase_names[ph]);
		return -1;
	}
	/* The connection steps run as this process (root for MNT). */
	auth = libnfs_authunix_create(UP_DEFAULT_MACHINE, (uint32_t)getuid(),
				      (uint32_t)getgid(), 0, NULL);
	if (auth == NULL) {
		up_error(u, "%s: out of memory", up_phase_names[ph]);
		return -1;
	}
	rpc_set_auth(u->rpc, auth);
	u->cred_valid = false;
	if (rpc_connect_async(u->rpc, u->addr, port, up_connect_cb, u) != 0) {
		up_error(u, "%s: connect to %s port %d: %s",
			 up_phase_names[ph], u->addr, port,
			 rpc_get_error(u->rpc));
		return -1;
	}
	mclock_timer_add(u->ev_phase, &tv);
	up_io_update(u);
	return 0;
}

/* The last phase succeeded: UP. */
static void up_became_up(struct upstream *u)
{
	u->phase = UP_PH_UP;
	u->step = UP_STEP_WAIT;
	evtimer_del(u->ev_phase);
	u->backoff = UP_BACKOFF_MIN;
	u->st.connects++;
	u->error[0] = '\0';
	u->last_reply = up_clock();
	u->up_at = u->last_reply;
	u->srtt = u->last_reply - u->phase_start;
	if (u->ev_probe) {
		struct timeval tv = { 0, UP_PROBE_TICK_US };

		mclock_timer_add(u->ev_probe, &tv);
	}
	up_io_update(u);
	up_set_state(u, UPSTREAM_UP);
}

/* Move on from a finished phase to the next one. */
static void up_advance(struct upstream *u)
{
	enum up_phase next;
	int port;

	if (u->step == UP_STEP_FAILED) {
		up_connect_failed(u);
		return;
	}
	if (u->step != UP_STEP_DONE)
		return;
	switch (u->phase) {
	case UP_PH_RESOLVE:
		next = u->mount_port ? UP_PH_MNT : UP_PH_PMAP_MNT;
		port = u->mount_port ? u->mount_port : UP_PMAP_PORT;
		break;
	case UP_PH_PMAP_MNT:
		next = UP_PH_MNT;
		port = u->found_port;
		break;
	case UP_PH_MNT:
		next = u->nfs_port ? UP_PH_FSINFO : UP_PH_PMAP_NFS;
		port = u->nfs_port ? u->nfs_port : UP_PMAP_PORT;
		break;
	case UP_PH_PMAP_NFS:
		next = UP_PH_FSINFO;
		port = u->found_port;
		break;
	case UP_PH_FSINFO:
		up_became_up(u);
		return;
	case UP_PH_IDLE:
	case UP_PH_UP:
	default:
		return;
	}
	up_ctx_destroy(u);
	up_phase_enter(u, next, port);
}

/* Begin phase ph of an attempt; act at once on a step it already ended
 * (a lookup answered inside up_resolve_begin). */
static void up_phase_enter(struct upstream *u, enum up_phase ph, int port)
{
	if (up_phase_begin(u, ph, port) != 0)
		up_connect_failed(u);
	else if (u->step != UP_STEP_WAIT)
		up_advance(u);
}

/* Start a connection attempt from IDLE. */
static void up_connect_begin(struct upstream *u)
{
	enum up_phase ph = u->mount_port ? UP_PH_MNT : UP_PH_PMAP_MNT;
	int port = u->mount_port ? u->mount_port : UP_PMAP_PORT;

	if (u->closed || u->phase != UP_PH_IDLE)
		return;
	up_set_state(u, UPSTREAM_CONNECTING);
	if (u->closed)
		return;
	if (!u->server_literal)
		ph = UP_PH_RESOLVE;	/* every attempt looks the name up */
	up_phase_enter(u, ph, port);
}

/* ---------------------------------------------------------------------
 * Event callbacks (entry points from the loop; each holds u->busy).
 */

/* Act on what one rpc_service call did. rc < 0: the socket is dead. */
static void up_after_service(struct upstream *u, int rc)
{
	if (rc < 0) {
		up_error(u, "%s: %s", up_phase_names[u->phase],
			 rpc_get_error(u->rpc) ? rpc_get_error(u->rpc)
					       : "connection closed");
		if (u->phase == UP_PH_UP)
			up_lose(u);
		else
			up_connect_failed(u);
		return;
	}
	up_complete_failed(u);
	if (u->closed)
		return;
	if (u->phase != UP_PH_UP) {
		up_advance(u);
		if (u->closed)
			return;
	}
	up_io_update(u);
}

/*
 * Send what libnfs queued now instead of at the next POLLOUT: a call goes
 * out in upstream_call, saving a loop turn and the two epoll_ctl calls
 * that switching the io event to EV_WRITE and back cost (on W5's cold
 * random READs, one call at a time, +3%; W2 +8%). rpc_service with
 * POLLOUT alone on a connected context only writes (libnfs
 * lib/socket.c: rpc_write_to_socket, stopping at EAGAIN) and calls no
 * callback. A write error is not acted on here, so nothing completes
 * inside upstream_call: libnfs has marked the context disconnected with
 * the PDUs queued again, which leaves it wanting POLLOUT; the io event
 * armed for that fires on the next loop turn, and rpc_service fails
 * there and up_after_service loses the connection as it would have.
 */
static void up_write_now(struct upstream *u)
{
	if (!u->rpc || u->closed || u->phase != UP_PH_UP)
		return;
	u->in_service = true;
	(void)rpc_service(u->rpc, POLLOUT);
	u->in_service = false;
}

/* The context's socket is ready: let libnfs work. */
static void up_io_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;
	int revents = 0, rc;

	(void)fd;
	CHECK_OBJ(u, UP_MAGIC);
	if (what & EV_READ)
		revents |= POLLIN;
	if (what & EV_WRITE)
		revents |= POLLOUT;
	u->busy++;
	u->in_service = true;
	rc = rpc_service(u->rpc, revents);
	u->in_service = false;
	if (!u->closed)
		up_after_service(u, rc);
	up_unbusy(u);
}

/* Retry timer: start a connection attempt. */
static void up_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	(void)fd;
	(void)what;
	u->busy++;
	up_connect_begin(u);
	up_unbusy(u);
}

/* Phase timer: the server did not finish a connection phase in time. */
static void up_phase_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;

	(void)fd;
	(void)what;
	u->busy++;
	if (!u->closed && u->phase != UP_PH_IDLE && u->phase != UP_PH_UP) {
		up_error(u, "%s: timed out", up_phase_names[u->phase]);
		up_connect_failed(u);
	}
	up_unbusy(u);
}

/* Seconds without a reply, while calls wait, before a probe. */
static double up_probe_after(const struct upstream *u)
{
	return u->srtt * 2 > UP_PROBE_AFTER ? u->srtt * 2 : UP_PROBE_AFTER;
}

/* Seconds a probe may take. */
static double up_probe_timeout(const struct upstream *u)
{
	return u->srtt * 4 > UP_PROBE_TIMEOUT ? u->srtt * 4 : UP_PROBE_TIMEOUT;
}

/* Call timer: ETIMEDOUT, and the connection is presumed dead. */
static void up_call_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct up_call *c = arg;
	struct upstream *u;

	CHECK_OBJ(c, UP_CALL_MAGIC);
	u = c->u;
	CHECK_OBJ(u, UP_MAGIC);

	(void)fd;
	(void)what;
	u->busy++;
	if (c->probe) {
		u->st.stalls++;
		up_error(u, "stalled: no reply to a NULL probe within %.1f s "
			 "while calls waited", up_probe_timeout(u));
	} else {
		up_error(u, "%s: no reply within %.3f s", up_procs[c->proc].name,
			 (double)u->call_tv.tv_sec +
				 (double)u->call_tv.tv_usec / 1e6);
	}
	/* State DOWN before any callback runs; c then completes with the
	 * others, as ETIMEDOUT (also if the state callback frees u). */
	c->timed_out = true;
	if (u->phase == UP_PH_UP)
		up_lose(u);
	else
		up_complete(u, c, UPSTREAM_ETIMEDOUT, NULL, 0, NULL, 0);
	up_unbusy(u);
}

/* ---------------------------------------------------------------------
 * Replies.
 */

/* Encode a reply struct into scratch and complete c with it; a READ's
 * data goes by reference (upstream_cb's tail). */
static void up_deliver(struct upstream *u, struct up_call *c, void *res)
{
	const struct up_proc *p = &up_procs[c->proc];
	READ3res *rd = c->proc == NFS3_READ ? res : NULL;
	const uint8_t *tail = NULL;
	size_t tail_len = 0;
	ZDR z;
	size_t len = 0;

	if (rd && rd->status == NFS3_OK && rd->READ3res_u.resok.data.data_len) {
		tail = (const uint8_t *)rd->READ3res_u.resok.data.data_val;
		tail_len = rd->READ3res_u.resok.data.data_len;
		rd->READ3res_u.resok.data.data_len = 0;	/* encoded empty */
	} else {
		rd = NULL;
	}
	if (p->res_encode) {
		zdrmem_create(&z, (caddr_t)u->scratch, UP_SCRATCH_SIZE,
			      ZDR_ENCODE);
		if (!p->res_encode(&z, res)) {
			zdr_destroy(&z);
			if (rd)
				rd->READ3res_u.resok.data.data_len = tail_len;
			memset(u->scratch, 0, UP_SCRATCH_SIZE);
			up_error(u, "%s: reply does not re-encode", p->name);
			up_call_move(c, UP_LIST_FAILED);
			return;
		}
		len = zdr_getpos(&z);
		zdr_destroy(&z);
	}
	if (rd)		/* libnfs frees what it decoded by its own lengths */
		rd->READ3res_u.resok.data.data_len = tail_len;
	up_complete(u, c, UPSTREAM_OK, u->scratch, len, tail, tail_len);
	/* libnfs's encoder does not write XDR padding: keep it zero. */
	memset(u->scratch, 0, len);
}

uint8_t *upstream_result_join(const uint8_t *res_xdr, size_t res_len,
			      const uint8_t *tail, size_t tail_len,
			      size_t *len)
{
	static const uint8_t zero[4];
	size_t pad = (4 - tail_len % 4) % 4, n;
	uint32_t be;
	uint8_t *out;

	if (!tail) {
		if (!(out = malloc(res_len ? res_len : 1)))
			return NULL;
		memcpy(out, res_xdr, res_len);
		*len = res_len;
		return out;
	}
	if (res_len < 4 || memcmp(res_xdr + res_len - 4, zero, 4) != 0 ||
	    tail_len > UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	n = res_len + tail_len + pad;
	if (!(out = calloc(1, n)))
		return NULL;
	memcpy(out, res_xdr, res_len - 4);
	be = htonl((uint32_t)tail_len);
	memcpy(out + res_len - 4, &be, 4);
	memcpy(out + res_len, tail, tail_len);
	*len = n;
	return out;
}

/* libnfs's callback for a user call. */
static void up_call_cb(struct rpc_context *rpc, int status, void *data,
		       void *pd)
{
	struct up_call *c = pd;
	struct upstream *u;

	(void)rpc;
	CHECK_OBJ(c, UP_CALL_MAGIC);
	u = c->u;
	c->in_libnfs = false;
	if (c->done) {
		up_call_move(c, UP_LIST_NONE);
		up_call_free(c);
		return;
	}
	if (u->tearing_down || u->closed)
		return;		/* EDOWN follows from our own frame */
	switch (status) {
	case RPC_STATUS_SUCCESS:
		up_deliver(u, c, data);
		break;
	case RPC_STATUS_ERROR:
		/* RPC-level failure, or every PDU errored because the
		 * socket died: rpc_service's return value tells which. */
		up_error(u, "%s: %s", up_procs[c->proc].name,
			 data ? (const char *)data : "RPC error");
		up_call_move(c, UP_LIST_FAILED);
		break;
	default:
		break;		/* CANCEL/TIMEOUT: only at teardown */
	}
}

/* ---------------------------------------------------------------------
 * Credentials.
 */

/* Set cred as the context's AUTH_SYS credential unless it already is. */
static int up_set_cred(struct upstream *u, const struct nfs_cred *cred)
{
	const char *m = cred->machine ? cred->machine : UP_DEFAULT_MACHINE;
	size_t mlen = strnlen(m, UP_MACHINE_MAX);
	struct AUTH *auth;

	if (u->cred_valid && nfs_cred_eq(&u->cred, cred) &&
	    strlen(u->cred_machine) == mlen &&
	    memcmp(u->cred_machine, m, mlen) == 0)
		return 0;
	u->cred = *cred;
	memcpy(u->cred_machine, m, mlen);
	u->cred_machine[mlen] = '\0';
	u->cred.machine = u->cred_machine;
	u->cred_valid = false;
	auth = libnfs_authunix_create(u->cred_machine, u->cred.uid,
				      u->cred.gid, u->cred.ngids,
				      u->cred.gids);
	if (auth == NULL)
		return -1;
	rpc_set_auth(u->rpc, auth);	/* frees the previous AUTH */
	u->cred_valid = true;
	return 0;
}

/* ---------------------------------------------------------------------
 * Freeing.
 */

/* Free u and everything it owns; nothing may be busy with it. */
static void up_destroy(struct upstream *u)
{
	up_ctx_destroy(u);
	if (u->ev_retry)
		event_free(u->ev_retry);
	if (u->ev_phase)
		event_free(u->ev_phase);
	if (u->ev_probe)
		event_free(u->ev_probe);
	free(u->scratch);
	free(u->server);
	free(u->export_path);
	u->magic = 0;
	free(u);
}

static void up_unbusy(struct upstream *u)
{
	if (--u->busy == 0 && u->closed)
		up_destroy(u);
}

/* ---------------------------------------------------------------------
 * Public API.
 */

/* Check the parameters upstream_new accepts. */
static bool up_params_ok(const struct upstream_params *p)
{
	return p && p->server && p->server[0] && p->export_path &&
	       p->export_path[0] == '/' && p->nfs_port >= 0 &&
	       p->nfs_port <= 65535 && p->mount_port >= 0 &&
	       p->mount_port <= 65535 && isfinite(p->call_timeout) &&
	       p->call_timeout >= 0 && p->call_timeout < 86400;
}

/* True if server is an IPv4 or IPv6 address literal (no lookup). */
static bool up_is_literal(const char *server)
{
	struct in6_addr a6;
	struct in_addr a4;

	return evutil_inet_pton(AF_INET, server, &a4) == 1 ||
	       evutil_inet_pton(AF_INET6, server, &a6) == 1;
}

/* The NULL probe came back: the server is alive, however slow. */
static void up_probe_cb(enum upstream_status status, const uint8_t *res,
			size_t len, const uint8_t *tail, size_t tail_len,
			void *arg)
{
	struct upstream *u = arg;

	(void)status;
	(void)res;
	(void)len;
	(void)tail;
	(void)tail_len;
	u->probing = false;
}

/* Whether calls have waited up_probe_after() with no reply at all. */
static bool up_probe_due(const struct upstream *u, double now)
{
	const struct up_call *c = TAILQ_FIRST(&u->calls);
	double after = up_probe_after(u);

	if (!c || u->probing || u->phase != UP_PH_UP || u->closed)
		return false;
	return now - c->sent > after && now - u->last_reply > after;
}

/* Send the NULL probe with its short timeout. */
static void up_probe_send(struct upstream *u)
{
	struct nfs_cred root = { 0, 0, 0, { 0 }, NULL };
	struct timeval tv = mclock_tv(up_probe_timeout(u));
	struct up_call *c;

	if (upstream_call(u, NFS3_NULL, NULL, 0, &root, up_probe_cb, u) != 0)
		return;
	c = TAILQ_LAST(&u->calls, up_call_list);
	c->probe = true;
	mclock_timer_add(c->ev_timeout, &tv);
	u->probing = true;
	u->st.probes++;
}

/*
 * Liveness tick while UP: a server that answers nothing for
 * up_probe_after() while calls wait is sent an RPC NULL; if that gets no
 * reply within up_probe_timeout() the connection is given up on (a
 * stopped server) instead of waiting call_timeout. Both scale with the
 * link's smoothed latency, so a distant server is not taken for a
 * stalled one. A slow server answers the NULL, or some other call, and
 * its calls keep their whole call_timeout. Only when call_timeout is
 * longer than the probe would take.
 */
static void up_probe_tick(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *u = arg;
	struct timeval tv = { 0, UP_PROBE_TICK_US };
	double call = (double)u->call_tv.tv_sec + u->call_tv.tv_usec / 1e6;

	(void)fd;
	(void)what;
	if (u->phase != UP_PH_UP || u->closed)
		return;
	u->busy++;
	if (call > up_probe_after(u) + up_probe_timeout(u) &&
	    up_probe_due(u, up_clock()))
		up_probe_send(u);
	if (u->phase == UP_PH_UP && !u->closed)
		mclock_timer_add(u->ev_probe, &tv);
	up_unbusy(u);
}

struct upstream *upstream_new(struct event_base *base,
			      const struct upstream_params *p,
			      upstream_state_cb state_cb, void *arg)
{
	struct upstream *u;
	double secs;
	bool literal;

	if (base == NULL || !up_params_ok(p))
		return NULL;
	literal = up_is_literal(p->server);
	if (!literal && p->dns == NULL)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->magic = UP_MAGIC;
	u->base = base;
	u->dns = p->dns;
	u->server = strdup(p->server);
	u->export_path = strdup(p->export_path);
	u->scratch = calloc(1, UP_SCRATCH_SIZE);
	u->ev_retry = evtimer_new(base, up_retry_cb, u);
	u->ev_phase = evtimer_new(base, up_phase_timeout_cb, u);
	u->ev_probe = evtimer_new(base, up_probe_tick, u);
	if (!u->server || !u->export_path || !u->scratch || !u->ev_retry ||
	    !u->ev_phase || !u->ev_probe)
		goto fail;
	u->server_literal = literal;
	if (literal)
		snprintf(u->addr, sizeof(u->addr), "%s", p->server);
	u->nfs_port = p->nfs_port;
	u->mount_port = p->mount_port;
	u->max_transfer = p->max_transfer ? p->max_transfer
					  : UPSTREAM_LIBNFS_MAX;
	secs = p->call_timeout > 0 ? p->call_timeout : UP_DEFAULT_TIMEOUT;
	u->call_tv = mclock_tv(secs);
	/* Many calls share one duration: O(1) timer queue (libevent). */
	u->call_tv_common = event_base_init_common_timeout(base, &u->call_tv);
	if (u->call_tv_common == NULL)
		u->call_tv_common = &u->call_tv;
	u->state_cb = state_cb;
	u->state_arg = arg;
	u->state = UPSTREAM_DOWN;
	u->phase = UP_PH_IDLE;
	u->backoff = UP_BACKOFF_MIN;
	u->io_fd = -1;
	TAILQ_INIT(&u->calls);
	TAILQ_INIT(&u->failed);
	TAILQ_INIT(&u->zombies);
	return u;
fail:
	up_destroy(u);
	return NULL;
}

int upstream_start(struct upstream *u)
{
	struct timeval now = { 0, 0 };

	if (u == NULL || u->closed)
		return -1;
	if (u->started)
		return 0;
	if (mclock_timer_add(u->ev_retry, &now) != 0)
		return -1;
	u->started = true;
	return 0;
}

enum upstream_state upstream_get_state(const struct upstream *u)
{
	return u ? u->state : UPSTREAM_DOWN;
}

const uint8_t *upstream_root_fh(const struct upstream *u, size_t *len)
{
	if (u == NULL || u->root_fh_len == 0) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = u->root_fh_len;
	return u->root_fh;
}

double upstream_latency_floor(const struct upstream *u)
{
	if (u->floor_prev > 0 &&
	    (u->floor_cur == 0 || u->floor_prev < u->floor_cur))
		return u->floor_prev;
	return u->floor_cur;
}

double upstream_read_rate(const struct upstream *u)
{
	return u ? delivery_rate(&u->rate) : 0;
}

uint32_t upstream_rtmax(const struct upstream *u)
{
	return u ? u->rtmax : 0;
}

uint32_t upstream_wtmax(const struct upstream *u)
{
	return u ? u->wtmax : 0;
}

const char *upstream_last_error(const struct upstream *u)
{
	return u ? u->error : "";
}

/* Decode args_xdr for p into a fresh libnfs struct; z owns its pieces. */
static void *up_decode_args(const struct up_proc *p, ZDR *z,
			    const uint8_t *args_xdr, size_t args_len)
{
	void *args;

	/* libnfs decodes from the buffer without writing to it. */
	zdrmem_create(z, (caddr_t)(uintptr_t)args_xdr, (uint32_t)args_len,
		      ZDR_DECODE);
	if (p->args_size == 0)
		return NULL;
	args = calloc(1, p->args_size);
	if (args == NULL)
		return NULL;
	/* Both readers must agree on where the arguments end. */
	if (!p->args_decode(z, args) || zdr_getpos(z) != args_len) {
		free(args);
		return NULL;
	}
	return args;
}

int upstream_call(struct upstream *u, uint32_t proc,
		  const uint8_t *args_xdr, size_t args_len,
		  const struct nfs_cred *cred,
		  upstream_cb cb, void *arg)
{
	const struct up_proc *p;
	struct up_call *c = NULL;
	void *args = NULL;
	ZDR z;

	if (u == NULL || u->closed || u->state != UPSTREAM_UP || !u->rpc ||
	    proc >= UPSTREAM_NPROCS || cb == NULL || cred == NULL ||
	    cred->ngids > UPSTREAM_MAX_GIDS || (args_len && !args_xdr) ||
	    args_len > UP_SCRATCH_SIZE)
		return -1;
	p = &up_procs[proc];
	if (!up_args_check(p->shape, args_xdr, args_len))
		return -1;
	args = up_decode_args(p, &z, args_xdr, args_len);
	if (args == NULL && p->args_size != 0)
		goto fail;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto fail;
	c->magic = UP_CALL_MAGIC;
	c->u = u;
	c->proc = proc;
	c->cb = cb;
	c->arg = arg;
	c->ev_timeout = evtimer_new(u->base, up_call_timeout_cb, c);
	if (c->ev_timeout == NULL || up_set_cred(u, cred) != 0)
		goto fail;
	/* libnfs encodes args (and the credential) into its PDU here. A
	 * call it cannot encode (too long) says nothing about the
	 * connection: it is the caller's to answer, not u->error's. */
	if (p->send(u->rpc, up_call_cb, args, c) != 0)
		goto fail;
	c->in_libnfs = true;
	c->sent = up_clock();
	delivery_sent(&u->rate, c->sent, &c->mark);
	up_call_move(c, UP_LIST_CALLS);
	mclock_timer_add(c->ev_timeout, u->call_tv_common);
	u->st.calls[proc]++;
	u->st.bytes_sent += args_len;
	zdr_destroy(&z);
	free(args);
	if (!u->in_service) {		/* in service: written on return */
		up_write_now(u);
		up_io_update(u);
	}
	return 0;
fail:
	if (c)
		up_call_free(c);
	zdr_destroy(&z);
	free(args);
	return -1;
}

/* The first broken invariant of list l's calls, or NULL; *n counts them. */
static const char *up_list_check_why(const struct upstream *u,
				     const struct up_call_list *head,
				     enum up_list l, unsigned *n)
{
	const struct up_call *c;

	*n = 0;
	TAILQ_FOREACH(c, head, link) {
		if (c->magic != UP_CALL_MAGIC)
			return "upstream: a call's magic number is wrong (freed?)";
		if (c->u != u || c->list != l)
			return "upstream: a call is on a list it does not name";
		if (c->done != (l == UP_LIST_ZOMBIES))
			return "upstream: a call is done but not a zombie, or a "
			       "zombie is not done";
		(*n)++;
	}
	return NULL;
}

const char *upstream_check_why(const struct upstream *u)
{
	const char *why;
	unsigned n;

	if (!u)
		return NULL;
	if (u->magic != UP_MAGIC)
		return "upstream: its magic number is wrong (freed?)";
	if ((why = up_list_check_why(u, &u->calls, UP_LIST_CALLS, &n)))
		return why;
	if (n != u->ncalls)
		return "upstream: ncalls differs from the calls list";
	if ((why = up_list_check_why(u, &u->failed, UP_LIST_FAILED, &n)) ||
	    (why = up_list_check_why(u, &u->zombies, UP_LIST_ZOMBIES, &n)))
		return why;
	return NULL;
}

unsigned upstream_inflight(const struct upstream *u)
{
	return u ? u->ncalls : 0;
}

bool upstream_busy(const struct upstream *u)
{
	return u && (!TAILQ_EMPTY(&u->calls) || !TAILQ_EMPTY(&u->failed));
}

void upstream_stats_get(const struct upstream *u, struct upstream_stats *st)
{
	if (st == NULL)
		return;
	if (u == NULL) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = u->st;
}

void upstream_free(struct upstream **up)
{
	struct upstream *u;

	if (up == NULL || *up == NULL)
		return;
	u = *up;
	*up = NULL;
	if (u->closed)
		return;
	u->closed = true;
	u->busy++;
	evtimer_del(u->ev_retry);
	evtimer_del(u->ev_phase);
	evtimer_del(u->ev_probe);
	u->state = UPSTREAM_DOWN;
	up_complete_all(u, UPSTREAM_EDOWN);
	up_unbusy(u);
}
