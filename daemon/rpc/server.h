/* SPDX-License-Identifier: MIT */
/*
 * server: TCP listeners, client connections and the requests in flight on
 * them (ONC RPC over TCP, RFC 5531 sections 9 and 11).
 *
 * A connection reads records, decodes each call header, rejects what it
 * must (RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH,
 * PROC_UNAVAIL, GARBAGE_ARGS), runs the duplicate request cache for
 * non-idempotent procedures, and hands a struct req to the dispatch row's
 * handler. Many calls may be in flight per connection and replies go out in
 * completion order. Backpressure: reading pauses while the connection has
 * max_requests_per_conn calls in flight or max_reply_buffer bytes of
 * replies unsent, or while all connections together hold the budget
 * (client_buffer_limit: unsent replies, unparsed input and the records of
 * calls in flight) and it holds more than an equal share of it; it
 * resumes below all of them.
 *
 * Connection slots: a client that no export's clients list names (a
 * stranger) may hold a slot while there is room, but when max_connections
 * (or the descriptor limit) is reached and a listed client connects, the
 * oldest stranger's connection is closed to make room (reason
 * "not_listed", logged through the refusal log).
 *
 * Lifetimes: a connection holds one reference for being open and one per
 * request; conn_close() drops the first, and the memory goes when the last
 * request lets go, so a late reply to a closed connection is dropped
 * safely and nothing is freed inside a callback frame still using it.
 */
#ifndef NFSCACHED_DAEMON_SERVER_H
#define NFSCACHED_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <rpc/rpc.h>

#include "proc_table.h"
#include "histogram.h"
#include "loops.h"
#include "nfs3_status.h"
#include "rpcmsg.h"

struct daemon;
struct server;
struct conn;
struct drc_entry;
struct evbuffer;

/* Why a connection closed; each is a metric label. */
#define CONN_CLOSE_REASONS(X) \
	X(CLOSE_EOF, "eof") \
	X(CLOSE_RESET, "reset") \
	X(CLOSE_ERROR, "error") \
	X(CLOSE_OVERSIZE, "oversize") \
	X(CLOSE_BAD_RECORD, "bad_record") \
	X(CLOSE_NOMEM, "nomem") \
	X(CLOSE_HANDLER, "handler") \
	X(CLOSE_SHUTDOWN, "shutdown") \
	X(CLOSE_RECORD_TIMEOUT, "record_timeout") \
	X(CLOSE_IDLE, "idle") \
	X(CLOSE_LIMIT, "limit") \
	X(CLOSE_NOT_LISTED, "not_listed")

enum conn_close_reason {
#define X(e, s) e,
	CONN_CLOSE_REASONS(X)
#undef X
	CLOSE_NREASONS
};

/* Why a call was rejected at the RPC level; each is a metric label. */
#define RPC_REJECT_REASONS(X) \
	X(REJECT_RPC_MISMATCH, "rpc_mismatch") \
	X(REJECT_PROG_UNAVAIL, "prog_unavail") \
	X(REJECT_PROG_MISMATCH, "prog_mismatch") \
	X(REJECT_PROC_UNAVAIL, "proc_unavail") \
	X(REJECT_GARBAGE_ARGS, "garbage_args") \
	X(REJECT_AUTH_BADCRED, "auth_badcred") \
	X(REJECT_AUTH_TOOWEAK, "auth_tooweak") \
	X(REJECT_SYSTEM_ERR, "system_err")

enum rpc_reject_reason {
#define X(e, s) e,
	RPC_REJECT_REASONS(X)
#undef X
	REJECT_NREASONS
};

/* The nfsstat3 values and their labels: proto/nfs3_status.h. */

/*
 * Counters this module owns (server_stats_get), declared once for struct
 * server_stats and for /metrics: X(C type, field, Prometheus type, metric
 * name, help) one value, A(field, length, Prometheus type, metric name,
 * label, label set, help) one series per index (daemon/ctl/metrics.c;
 * HACKING.md "Adding a counter").
 */
#define SERVER_METRICS(X, A) \
	X(uint64_t, connections_accepted, counter, \
	  "nfscached_connections_accepted_total", \
	  "Client TCP connections accepted.") \
	X(uint64_t, connections_open, gauge, "nfscached_connections_open", \
	  "Client TCP connections open now.") \
	X(uint64_t, max_connections, gauge, "nfscached_connections_max", \
	  "Client connections allowed at once (max_connections, capped by the descriptor limit).") \
	X(uint64_t, accept_errors, counter, "nfscached_accept_errors_total", \
	  "accept() failures on the NFS and MOUNT listeners (EMFILE...).") \
	A(closed, CLOSE_NREASONS, counter, "nfscached_connections_closed_total", \
	  "reason", close_reason, "Client TCP connections closed, by reason.") \
	A(rejected, REJECT_NREASONS, counter, "nfscached_rpc_rejected_total", \
	  "reason", reject_reason, \
	  "Client calls rejected at the RPC level, by reason.") \
	X(uint64_t, records_oversize, counter, \
	  "nfscached_rpc_records_oversize_total", \
	  "Client RPC records over max_record_size (each closed its connection).") \
	X(uint64_t, requests_inflight, gauge, "nfscached_requests_inflight", \
	  "Client calls being served now.") \
	X(uint64_t, reads_paused, counter, "nfscached_backpressure_pauses_total", \
	  "Times a connection stopped reading because of its limits.") \
	X(uint64_t, budget_pauses, counter, \
	  "nfscached_backpressure_budget_pauses_total", \
	  "Times a connection stopped reading because all connections together held client_buffer_limit and it held more than an equal share.") \
	X(uint64_t, buffer_bytes, gauge, "nfscached_client_buffer_bytes", \
	  "Bytes held for client connections now: unsent replies, unparsed input and the records of calls in flight.") \
	X(uint64_t, buffer_limit, gauge, "nfscached_client_buffer_limit_bytes", \
	  "The budget of nfscached_client_buffer_bytes (client_buffer_limit, or its automatic value).") \
	X(uint64_t, reply_waits, counter, "nfscached_reply_write_waits_total", \
	  "Times a connection's replies did not fit its socket at once and waited for room.") \
	A(nfs3_replies, NFS3_NSTATUSES, counter, "nfscached_nfs3_replies_total", \
	  "status", nfs3_status, \
	  "NFSv3 replies sent to clients (the NULL procedure and retransmissions answered from the duplicate request cache aside), by NFS status.") \
	X(uint64_t, drc_hits, counter, "nfscached_drc_hits_total", \
	  "Retransmitted non-idempotent calls answered from the duplicate request cache.") \
	X(uint64_t, drc_entries, gauge, "nfscached_drc_entries", \
	  "Entries in the duplicate request cache.")

struct server_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	SERVER_METRICS(X, A)
#undef X
#undef A
	/* By dispatch row, rendered by daemon/ctl/metrics.c as
	 * nfscached_client_rpcs_total and
	 * nfscached_client_rpc_duration_seconds: */
	uint64_t *calls;
	uint64_t *replies;			/* not exported */
	struct histogram *latency;		/* arrival to reply, seconds */
};

/* One call in flight. Handlers read these fields; the server owns it. */
struct req {
	uint32_t magic;
	struct daemon *d;
	struct conn *conn;			/* counted reference */
	struct rpcmsg_call call;
	uint8_t *rec;				/* the whole record, owned */
	size_t rec_len;
	const struct dispatch_entry *ent;
	void *args;				/* decoded by ent->xdr_args; in
					 * the same block as r */
	struct drc_entry *drc;			/* non-NULL when tracked */
	double start;				/* daemon_now() at arrival */
	void *op;				/* the handler's own state */
	/* The hand-off between the connection's loop and loop 0, which
	 * runs every handler (threads > 1; server.c): */
	struct loop_msg msg;			/* posted to loop 0, then back */
	bool handed;				/* on loop 0, its connection on
						 * another loop */
	bool close;				/* the handler said OP_CLOSE */
	bool counted;				/* reply to count at delivery */
	size_t reserved;			/* budget bytes held for its
						 * reply while handed */
	int status_idx;				/* nfs3_status_index of the
						 * reply, or -1 */
	struct evbuffer *reply;			/* the framed reply handed
						 * back, owned; NULL: none */
};

/*
 * Create the server for d (borrowed), serving the procedures of d->procs
 * (required: the table the root hands down; the server never names the
 * table's owner). Raises the soft RLIMIT_NOFILE to the
 * hard limit (setrlimit(2)) and caps client connections at that limit less
 * a reserve (SERVER_FD_RESERVE + 8 per export) for the upstreams, the
 * metrics listener, the log and rpcbind; d->conf's max_connections applies
 * below that cap. Starts the timer that closes connections stalled inside
 * a record (record_timeout) or idle (idle_timeout). Returns NULL on ENOMEM.
 */
struct server *server_new(struct daemon *d);

#define SERVER_FD_RESERVE 64	/* descriptors kept from client connections */

/*
 * Answer every call to program prog (any version, any procedure, its
 * arguments unread) with PROG_UNAVAIL, as for a program the table does
 * not have: a program the configuration turns off (nlm = false), which
 * the table still lists. At most SERVER_REFUSED_MAX programs. Returns 0
 * (also when prog is refused already), or -1 when all slots are taken.
 * Loop thread, before the listeners start.
 */
int server_refuse_program(struct server *s, uint32_t prog);

#define SERVER_REFUSED_MAX 4

struct accept_guard;
struct evconnlistener;
struct event_base;

/*
 * Guard listener l (borrowed; it must outlive the guard) against accept(2)
 * failing for want of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM): instead
 * of libevent retrying at once (a busy loop that floods the log), l is
 * disabled for ACCEPT_PAUSE_MS and re-enabled by a timer on base, and the
 * failure is logged at most once per second with the count since the last
 * line ("what" names the listener). Other errors are logged the same way
 * without pausing. *errors (may be NULL) counts every failure. Returns
 * NULL on ENOMEM; free with accept_guard_free.
 */
struct accept_guard *accept_guard_new(struct event_base *base,
				      struct evconnlistener *l,
				      const char *what, uint64_t *errors);

#define ACCEPT_PAUSE_MS 250

/* Free *g (stops its timer; l is left as it is); clears the pointer. */
void accept_guard_free(struct accept_guard **g);

/*
 * Listen on addr:port (TCP). only_prog 0 serves every program; otherwise
 * calls to any other program on connections accepted there get
 * PROG_UNAVAIL (a MOUNT-only port: only_prog = MOUNT_PROGRAM). Returns 0,
 * or -1 with a reason in err.
 */
int server_listen(struct server *s, const char *addr, int port,
		  uint32_t only_prog, char *err, size_t errlen);

/*
 * Serve a connected socket fd (taken: closed on failure and with the
 * connection) as a client connection from sa (salen bytes, copied) that
 * only_prog (0: any program) may call; it is made non-blocking. The
 * listeners' accept path; unit tests hand it one end of a socketpair(2).
 * Returns 0, or -1 when a
 * connection limit refused it or memory ran out (logged).
 */
int server_adopt(struct server *s, int fd, const struct sockaddr *sa,
		 socklen_t salen, uint32_t only_prog);

/* Stop accepting new connections (shutdown); open ones keep working. */
void server_stop_accepting(struct server *s);

/* Stop reading calls from every connection (shutdown): calls already read
 * are answered, no new work is accepted. With threads > 1 each loop stops
 * at its next turn (a message): server_drained says when all have. */
void server_drain(struct server *s);

/*
 * True once every loop has stopped reading after server_drain: from then
 * on server_inflight only falls, so 0 means no call is left anywhere
 * (with threads > 1 a loop may be reading a call while server_drain is
 * posted). Loop 0.
 */
bool server_drained(const struct server *s);

/*
 * NULL when the invariants at the top of server.c hold for s's open and
 * lingering connections (an open connection with replies to write and
 * EV_WRITE disabled is queued for the flush; a paused one has EV_READ
 * disabled; their requests in flight are at most the server's count,
 * which also counts closed connections' requests; each connection's
 * counts of held bytes match its buffers, and their sum plus the records
 * of closed connections' calls is the server's total; the duplicate
 * request cache's, drc_check_why), else the name of the first that does
 * not. For invariant_turn (NFSCACHED_CHECK), at the end
 * of a loop turn: in the middle of one the flush may still be due.
 */
const char *server_check_why(const struct server *s);

/*
 * The budget of bytes held for all client connections together:
 * client_buffer_limit MiB, or when it is 0 an eighth of cache_size, at
 * least SERVER_BUDGET_MIN, at most an eighth of the process's memory
 * limit (the lower of RLIMIT_AS and the cgroup v2 memory.max, read at
 * server_new) but never below SERVER_BUDGET_FLOOR. Taken from the
 * configuration at server_new and server_reconf. Any loop.
 */
uint64_t server_budget(const struct server *s);

#define SERVER_BUDGET_MIN (64ull << 20)
#define SERVER_BUDGET_FLOOR (16ull << 20)

/* Calls in flight across all connections. */
unsigned server_inflight(const struct server *s);

/* Close every connection with reason CLOSE_SHUTDOWN. */
void server_close_all(struct server *s);

/*
 * Sum every loop's counters into *st (its by-row arrays allocated here:
 * free them with server_stats_release). Returns 0, or -1 out of memory
 * (*st then holds nothing to release). Loop 0; the other loops' counters
 * are read with relaxed atomic loads, so a sum may miss a call they are
 * counting at that moment.
 */
int server_stats_get(const struct server *s, struct server_stats *st);

/*
 * The test clock's advance (POST /debug/clock/advance) with threads > 1,
 * whose order one loop gives for free. server_catch_up_loops, before the
 * clock moves: each of loops 1..n-1 reads what its connections' sockets
 * hold now and handles those records, so bytes a client sent before it
 * asked to move the clock are read at the old time. server_sweep_loops,
 * after: each runs its timeout sweep, so the answer comes after every
 * close the move causes (loop 0's own sweep runs from the test clock's
 * timers). Both wait until every loop has; loop 0; at once with one loop.
 */
void server_catch_up_loops(struct server *s);
void server_sweep_loops(struct server *s);

/* Free what server_stats_get allocated in *st. */
void server_stats_release(struct server_stats *st);

/*
 * Take the directives a reload may change that the connections' loops
 * read (idle_timeout, record_timeout, max_requests_per_conn, the budget:
 * client_buffer_limit) from s->d->conf. Loop 0, after d->conf changed.
 */
void server_reconf(struct server *s);

/* Free *s (closes listeners and connections); clears the pointer. */
void server_free(struct server **s);

/* The client's address and port. Borrowed for the request's lifetime. */
const struct sockaddr *req_peer(const struct req *r);

/* True when the client's source port is below 1024. */
bool req_peer_privileged(const struct req *r);

/* "ADDR:PORT" of the client, for logs and MOUNT's DUMP list. */
const char *req_peer_name(const struct req *r);

/* The client's address without port, e.g. "127.0.0.1". */
const char *req_peer_host(const struct req *r);

/*
 * Reply MSG_ACCEPTED SUCCESS with res (borrowed) encoded by proc, and
 * release r (the caller's pointer becomes invalid). If encoding fails the
 * client gets SYSTEM_ERR. Returns OP_DONE for the handler to pass on.
 */
enum op_status req_reply(struct req *r, xdrproc_t proc, const void *res);

/*
 * req_reply for a result ending in a variable-length opaque whose bytes
 * are not copied into the reply (READ3resok's data): res encodes it empty,
 * tail[0..len) is its content, as rpcmsg_reply_success_tail. Ownership of
 * tail passes to the call: release(tail, len, arg) runs once the reply no
 * longer needs it (after the write, or at once when the connection is
 * gone or encoding failed; the client then gets SYSTEM_ERR). Releases r;
 * returns OP_DONE.
 */
enum op_status req_reply_tail(struct req *r, xdrproc_t proc, const void *res,
			      const void *tail, size_t len,
			      rpcmsg_tail_release release, void *arg);

/* Reply MSG_ACCEPTED with stat and release r. Returns OP_DONE. */
enum op_status req_reply_accept_error(struct req *r, enum accept_stat stat);

#endif
