/* SPDX-License-Identifier: MIT */
/*
 * nlm_ops: the Network Lock Manager, version 4 (RFC 1813 section 6;
 * program 100021), served on the proxy's NFS port and forwarded to each
 * export's upstream lock manager, so that a client mounted without
 * `nolock` locks as it would against the file server.
 *
 * A call's file handle is the client handle the proxy gave out: it is
 * unwrapped and checked like any NFS handle (nfs3_guard_unwrap) and the
 * export's client rules apply (nfs3_guard_request). A read-only client
 * may TEST and take shared locks; an exclusive LOCK of a read-only client
 * gets NLM4_ROFS (knfsd opens the file for writing for one, and a
 * read-only export refuses that). The owner handle is wrapped so the
 * upstream tells the proxy's clients apart (proto/nlm_owner.h), the
 * caller name becomes nlm_caller_name, and the call goes to the
 * upstream's lock manager (its rpcbind, or the URL's nlmport) on a worker
 * of d->nlm's call pool (proto/rpccall.h), never blocking the loop.
 *
 * Coherence, as the Linux client's do_setlk / do_unlk: before an UNLOCK
 * is forwarded the file's bytes written through the proxy are written
 * back and COMMITted upstream (WB_WAIT_ALL), so the next holder reads
 * them from the server, whatever commit says; once a LOCK is granted the
 * file's attributes are fetched upstream (GETATTR) and, if the file
 * changed, its cached data is dropped before the client hears GRANTED.
 *
 * Reboots: the first time a client holds a lock, the local status
 * monitor (rpc.statd, through 127.0.0.1's rpcbind) is asked to watch its
 * caller name (SM_MON) and to call the proxy's NLM procedure 16 (Linux
 * lockd's) when it reboots; that callback, from the local host only, or
 * the client's own FREE_ALL, releases upstream every lock the proxy holds
 * for it (nlm_locks.h), and only those. That table is kept in state_dir
 * (nlm_store.h, nlm_restore) and its clients watched again at start, so
 * a reboot after a restart or a SIGKILL of the proxy releases them too.
 *
 * An upstream's GRANTED and GRANTED_MSG callbacks of blocked locks are
 * relayed to the waiting client's lock manager (nlm_granted.h). A
 * client's TEST_MSG .. UNLOCK_MSG are processed as TEST .. UNLOCK are and
 * answered by the _RES call to its lock manager (nlm_msg.h); the _RES
 * forms a client sends get an empty reply. SHARE and UNSHARE are
 * forwarded as locks are (a read-only client may not reserve write
 * access: NLM4_ROFS).
 *
 * A LOCK the upstream has not answered within upstream_timeout gets
 * NLM4_DENIED_NOLOCKS then (a timer), but its upstream call is waited
 * for NLM_LATE_FACTOR (4) times as long: a late grant is unlocked, so no
 * lock is held upstream for a client told it has none.
 *
 * State: d->nlm (struct nlm, owned; nlm_start/nlm_stop): the call pool,
 * the caller name, the held-lock table and its store (nlm_restore), the
 * forwarded calls in flight and the counters. Loop
 * thread throughout.
 * Invariants (nlm_check_why): every forwarded call in flight is on
 * d->nlm's list, once, with its magic number and its request pointing
 * back at it (r->op), or, a _MSG call, with its copy (nlm_msg.h) and no
 * request, or, a LOCK answered late, with no request and its lock kept
 * to unlock; nops counting them; each has exactly one of a call
 * in the pool, a write-back wait or a GETATTR upstream outstanding.
 */
#ifndef NFSCACHED_DAEMON_NLM_OPS_H
#define NFSCACHED_DAEMON_NLM_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc_table.h"
#include "upstream.h"

struct daemon;
struct export_rt;
struct nlm_held;
struct nlm_locks;
struct ratelog;
struct req;
struct rpccall_pool;

/* The NLM counters (nlm_stats_get), declared once for struct nlm_stats
 * and /metrics (HACKING.md "Adding a counter"). */
#define NLM_METRICS(X, A) \
	X(uint64_t, forwarded, counter, "nfscached_nlm_forwarded_total", \
	  "NLM calls sent to an upstream lock manager: the clients' TEST, LOCK, CANCEL, UNLOCK, NM_LOCK, SHARE and UNSHARE (and their _MSG forms), and the proxy's own UNLOCKs releasing a rebooted client's locks or undoing a late grant, and LOCKs giving an owner back its mode after one.") \
	X(uint64_t, failed, counter, "nfscached_nlm_failures_total", \
	  "Calls to an upstream lock manager that could not be sent or were not answered (down, timeout, not registered): a client's call got NLM4_DENIED_NOLOCKS; also a release UNLOCK or a GRANTED_RES that could not be sent, and a LOCK giving an owner back its mode after a late grant that was not granted.") \
	X(uint64_t, refused, counter, "nfscached_nlm_refused_total", \
	  "NLM calls answered by the proxy itself: a handle that does not check, the client rules, an exclusive lock of a read-only client, an owner too long to wrap; and reboot notices (procedure 16) not from the local status monitor on a privileged port.") \
	X(uint64_t, revalidated, counter, "nfscached_nlm_revalidations_total", \
	  "Granted LOCKs whose file had changed upstream: its cached data was dropped before the client heard GRANTED.") \
	X(uint64_t, monitored, counter, "nfscached_nlm_monitors_total", \
	  "Hosts the local status monitor (rpc.statd) agreed to watch (SM_MON): a client when it first held a lock, an export's upstream host when a lock was first held there, and at start the clients of the lock table in state_dir and (when it had locks) every export's upstream host.") \
	X(uint64_t, monitor_failures, counter, "nfscached_nlm_monitor_failures_total", \
	  "SM_MON calls the local status monitor refused or did not answer: that client's reboot will not release its locks.") \
	X(uint64_t, reboots, counter, "nfscached_nlm_client_reboots_total", \
	  "Reboots of known clients (the local statd's callback) and FREE_ALLs that released some of a client's locks upstream.") \
	X(uint64_t, released, counter, "nfscached_nlm_released_total", \
	  "Locks released upstream without their client's UNLOCK (UNLOCKs the upstream lock manager granted): a client rebooted or sent FREE_ALL, or a LOCK's answer was lost.") \
	X(uint64_t, restored, counter, "nfscached_nlm_restored_total", \
	  "Locks loaded at start from the lock table in state_dir (nlm.mdb): held upstream for clients before the restart, released when such a client reboots.") \
	X(uint64_t, store_failures, counter, "nfscached_nlm_store_failures_total", \
	  "Changes of the lock table that could not be written to state_dir (disk full, I/O error): locks work on, kept in memory; the table is written whole at the next change that can be.") \
	X(uint64_t, store_resets, counter, "nfscached_nlm_store_resets_total", \
	  "Lock tables in state_dir found unreadable at start (moved to nlm.mdb.bad, or a record that does not check), or that could not be opened: the proxy started with no client's locks known.") \
	X(uint64_t, granted_relayed, counter, \
	  "nfscached_nlm_granted_total{result=\"relayed\"}", \
	  "Upstream GRANTED callbacks of blocked locks, by what became of them: relayed (the client's lock manager took the lock), refused (it answered DENIED: not waiting), unreachable (no answer within upstream_timeout, not registered), polled (refused or unreachable, but the client's own LOCK of that range was granted meanwhile: answered NLM4_GRANTED and kept), foreign (not an owner the proxy wrapped, its export gone, or not from its upstream). Refused, unreachable and foreign are answered NLM4_DENIED, so the upstream releases the lock.") \
	X(uint64_t, granted_refused, counter, \
	  "nfscached_nlm_granted_total{result=\"refused\"}", NULL) \
	X(uint64_t, granted_unreachable, counter, \
	  "nfscached_nlm_granted_total{result=\"unreachable\"}", NULL) \
	X(uint64_t, granted_polled, counter, \
	  "nfscached_nlm_granted_total{result=\"polled\"}", NULL) \
	X(uint64_t, granted_foreign, counter, \
	  "nfscached_nlm_granted_total{result=\"foreign\"}", NULL) \
	X(uint64_t, upstream_reboots, counter, \
	  "nfscached_nlm_upstream_reboots_total", \
	  "Reboots of an export's upstream host (the local statd's callback naming it): the locks the proxy held there left its table, and the clients that held them were sent SM_NOTIFY to reclaim them.") \
	X(uint64_t, clients_notified, counter, \
	  "nfscached_nlm_clients_notified_total{result=\"notified\"}", \
	  "SM_NOTIFYs sent to clients' status monitors after an upstream's reboot, by result: notified (the client's statd answered; its lock manager reclaims), unreachable (no answer within upstream_timeout, statd not registered, or not sent).") \
	X(uint64_t, clients_unreachable, counter, \
	  "nfscached_nlm_clients_notified_total{result=\"unreachable\"}", NULL) \
	X(uint64_t, msg_res_sent, counter, \
	  "nfscached_nlm_msg_res_total{result=\"sent\"}", \
	  "Answers to clients' asynchronous calls (TEST_MSG, LOCK_MSG, CANCEL_MSG, UNLOCK_MSG) sent as the matching _RES call to the client's lock manager, by outcome: sent (written to it; a _RES is a message, answered or not), unreachable (not sent: its rpcbind did not answer, not registered, the connection refused). A LOCK_RES saying granted that is not delivered has its lock unlocked upstream.") \
	X(uint64_t, msg_res_unreachable, counter, \
	  "nfscached_nlm_msg_res_total{result=\"unreachable\"}", NULL) \
	X(uint64_t, clients, gauge, "nfscached_nlm_clients", \
	  "Clients known to hold or to have held locks through the proxy (watched for reboots).") \
	X(uint64_t, held, gauge, "nfscached_nlm_locks_held", \
	  "Locks granted upstream on clients' behalf and not unlocked since, as ranges by owner and file.")

struct nlm_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	NLM_METRICS(X, A)
#undef X
#undef A
};

/*
 * Make d->nlm from d->conf (nlm, nlm_caller_name; the host name when
 * that is ""): a call pool of 4 workers on d->base. Returns 0 (also when
 * nlm is off: d->nlm stays NULL and every NLM call is PROG_UNAVAIL), or
 * -1 on ENOMEM or no thread. Loop thread, at start.
 */
int nlm_start(struct daemon *d);

/*
 * Keep d->nlm's held-lock table in d->conf's state_dir (an existing
 * directory; nlm_store.h: STATE_DIR/nlm.mdb, written at every change):
 * load what an earlier run left there (counted in restored) and ask the
 * local status monitor to watch each of its clients again (SM_MON), so
 * that the reboot of a client that took locks before this start still
 * releases them upstream. A store that cannot be read or written is
 * logged and counted, never fatal. Returns 0 (also without d->nlm), or
 * -1 on ENOMEM. Loop thread, at start, after nlm_start (main() only: the
 * unit-test harness keeps the table in memory).
 */
int nlm_restore(struct daemon *d);

/*
 * Bind UDP 127.0.0.1:port (the NFS port) for the local status monitor's
 * reboot callback: rpc.statd calls a lock manager back over UDP only
 * (nfs-utils' rmtcall.c), after asking rpcbind for its UDP port. Only
 * NULL and procedure 16 are answered there, only from this host. Returns
 * 0 (also without d->nlm, and when the port is taken: logged, locks
 * work, reboots then free nothing), or -1 with the reason in err[0..len)
 * (memory). Loop thread, at start (the listeners).
 */
int nlm_listen_udp(struct daemon *d, int port, char *err, size_t len);

/* True when nlm_listen_udp bound its socket (NLM is then registered over
 * UDP too). */
bool nlm_udp_listening(const struct daemon *d);

/* Stop d->nlm's calls (the pending ones answered NLM4_DENIED_NOLOCKS)
 * and free it. Before the server is freed. No-op without one. */
void nlm_stop(struct daemon *d);

/* The first broken invariant of d->nlm (every forwarded call in flight
 * on its list, with its magic, its request's r->op; the count; the call
 * pool's, rpccall_check_why), or NULL. Loop thread (the sweep). */
const char *nlm_check_why(const struct daemon *d);

/* d's counters (zero without d->nlm). */
void nlm_stats_get(const struct daemon *d, struct nlm_stats *st);

/* The handlers of the dispatch table's NLM v4 rows (RFC 1813 section
 * 6.2): NULL; TEST, LOCK, CANCEL, UNLOCK, NM_LOCK, SHARE and UNSHARE
 * forwarded; statd's reboot callback; FREE_ALL; the rest as the header
 * says (GRANTED and GRANTED_MSG from an upstream: nlm_granted.h). */
enum op_status nlm_op_null(struct req *r);
enum op_status nlm_op_forward(struct req *r);
enum op_status nlm_op_void(struct req *r);
enum op_status nlm_op_share(struct req *r);
enum op_status nlm_op_sm_notify(struct req *r);
enum op_status nlm_op_free_all(struct req *r);
enum op_status nlm_op_unavail(struct req *r);

/*
 * What the other modules of daemon/nlm (nlm_granted.c) share of d->nlm,
 * borrowed while d->nlm lives (nlm_stop frees it): the call pool, the
 * held-locks table, the caller name, the counters and the failure log.
 */
struct nlm_shared {
	struct rpccall_pool *pool;
	struct nlm_locks *locks;
	char *caller;			/* d->nlm's own buffer */
	struct nlm_stats *st;
	struct ratelog *fail_log;
};

/* Fill *sh from d->nlm: true, or false (untouched) without one. Loop
 * thread. */
bool nlm_shared_get(struct daemon *d, struct nlm_shared *sh);

/*
 * Unlock upstream lock lk (borrowed; as held: its export, upstream handle,
 * wrapped owner, range), as the proxy's host, for a lock nobody knows is
 * held: a LOCK answered late, a LOCK_RES not delivered. The answer is
 * only counted (nfscached_nlm_released_total). As Linux's lockd client
 * unlocks after an interrupted LOCK. No-op without d->nlm. Loop thread.
 */
void nlm_unlock_held(struct daemon *d, const struct nlm_held *lk);

/*
 * Ask the local statd (127.0.0.1's rpcbind, SM_MON) to watch client caller
 * (NUL-terminated, copied) and call NLM procedure 16 of this host when it
 * reboots, as Linux's lockd does (nsm_monitor); the answer is only counted
 * (nfscached_nlm_monitors_total, _monitor_failures_total). d->nlm
 * required. Loop thread.
 */
void nlm_monitor_client(struct daemon *d, const char *caller);

/*
 * A granted lock's GETATTR of upstream handle fh[0..fh_len) of export ex
 * came back with status and decoded (a GETATTR3res, or NULL): if the file
 * changed upstream the cache drops what it held of it (cfile_attr_observe,
 * counted in nfscached_nlm_revalidations_total); if the call failed its
 * attributes expire, so the next use asks upstream (the Linux client's
 * revalidation after a lock, nfs_revalidate_inode in do_setlk). Loop
 * thread.
 */
void nlm_observe_getattr(struct daemon *d, struct export_rt *ex,
			 const uint8_t *fh, size_t fh_len,
			 enum upstream_status status, const void *decoded);

#endif
