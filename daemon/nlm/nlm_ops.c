/* SPDX-License-Identifier: MIT */
/*
 * nlm_ops: NLM v4 served and forwarded upstream (see nlm_ops.h for what
 * is forwarded, the coherence points and the state's invariant).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utlist.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "attr.h"
#include "cache.h"
#include "checkobj.h"
#include "daemon.h"
#include "log.h"
#include "mclock.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"
#include "nfs3_status.h"
#include "nlm4_prot.h"
#include "nlm_locks.h"
#include "nlm_msg.h"
#include "nlm_nsm.h"
#include "nlm_ops.h"
#include "nlm_owner.h"
#include "nlm_store.h"
#include "ratelog.h"
#include "rpccall.h"
#include "rpcmsg.h"
#include "server.h"
#include "writeback.h"

#define NLM_WORKERS 4		/* calls to lock managers at once */
#define NLM_OP_MAGIC 0x4e4c4d4fu	/* "NLMO" */

struct nlm_op;

struct nlm {
	struct rpccall_pool *pool;
	int udp_fd;			/* the statd callback's UDP socket, or
					 * -1 (nlm_listen_udp) */
	struct event *udp_ev;
	struct nlm_locks *locks;	/* each client's locks held upstream */
	struct nlm_store *store;	/* their copy in state_dir, or NULL
					 * (nlm_restore) */
	struct nlm_nsm *nsm;		/* upstreams watched, the NSM state */
	struct nlm_op *ops;		/* forwarded calls in flight (utlist) */
	unsigned nops;
	char caller[256];		/* nlm_caller_name, or the host name */
	struct nlm_stats st;
	struct ratelog fail_log;	/* upstream lock managers that failed */
};

/* One forwarded call, r->op, on d->nlm->ops until answered. */
struct nlm_op {
	uint32_t magic;
	struct nlm_op *prev, *next;
	struct daemon *d;
	struct req *r;			/* NULL once its client was answered
					 * (late), and for a _MSG call */
	struct nlm_msg *msg;		/* a _MSG call: answered by its _RES
					 * call (nlm_msg.h); NULL once it was */
	uint32_t proc;			/* the synchronous form: TEST..UNLOCK,
					 * NM_LOCK */
	void *args;			/* r->args, or msg's copy of them */
	xdrproc_t xdr_args;
	struct export_rt *ex;
	struct nfs_cred uc;
	char machine[256];		/* a _MSG call's copy of uc.machine,
					 * which r (freed first) held */
	struct cfile *f;		/* UNLOCK: the file flushed; counted */
	nlm4_stats stat;		/* LOCK: the upstream's answer, replied
					 * after the GETATTR */
	struct event *late;		/* LOCK: upstream_timeout after the
					 * send; then the client is answered
					 * and r let go (r NULL), the call
					 * still waited for */
	struct nlm_held lk;		/* the lock as sent upstream (oh is
					 * this op's oh, not owned): recorded
					 * when granted, unlocked when a late
					 * grant comes */
	size_t oh_len;
	uint8_t oh[NLM_OWNER_MAX];	/* the owner the upstream sees */
	char caller[NLM_STORE_CALLER_MAX + 1]; /* the client's caller name
					 * (its key in the lock table), kept
					 * past r and its arguments */
	int32_t state;			/* LOCK: the client's NSM state, as
					 * its call gave it */
};

/* How much longer than upstream_timeout a LOCK's upstream call is waited
 * for after its client got NLM4_DENIED_NOLOCKS: its late answer says
 * whether a lock the client was refused is held (and is then unlocked). */
#define NLM_LATE_FACTOR 4

/* The argument handle of each forwarded procedure, for
 * nfs3_guard_unwrap (nlm4_netobj has nfs_fh3's layout). */
static const struct nfs3_proc unwrap_test = {
	.nfh = 1, .fh = { offsetof(nlm4_testargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_lock = {
	.nfh = 1, .fh = { offsetof(nlm4_lockargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_cancel = {
	.nfh = 1, .fh = { offsetof(nlm4_cancargs, alock.fh), 0 } };
static const struct nfs3_proc unwrap_unlock = {
	.nfh = 1, .fh = { offsetof(nlm4_unlockargs, alock.fh), 0 } };

/* The lock a forwarded call names, its handle's place and whether it
 * asks for an exclusive lock. */
static nlm4_lock *op_lock(uint32_t proc, void *args,
			  const struct nfs3_proc **m, bool *exclusive)
{
	switch (proc) {
	case NLMPROC4_TEST:
		*m = &unwrap_test;
		*exclusive = ((nlm4_testargs *)args)->exclusive;
		return &((nlm4_testargs *)args)->alock;
	case NLMPROC4_LOCK:
	case NLMPROC4_NM_LOCK:
		*m = &unwrap_lock;
		*exclusive = ((nlm4_lockargs *)args)->exclusive;
		return &((nlm4_lockargs *)args)->alock;
	case NLMPROC4_CANCEL:
		*m = &unwrap_cancel;
		*exclusive = ((nlm4_cancargs *)args)->exclusive;
		return &((nlm4_cancargs *)args)->alock;
	default:
		*m = &unwrap_unlock;
		*exclusive = false;
		return &((nlm4_unlockargs *)args)->alock;
	}
}

/* Reply stat to r, a forwarded procedure's synchronous call, with its
 * own cookie (every argument struct starts with it). */
static enum op_status reply_stat(struct req *r, nlm4_stats stat)
{
	nlm4_netobj *cookie = r->args;

	if (r->ent->proc == NLMPROC4_TEST) {
		nlm4_testres t;

		memset(&t, 0, sizeof(t));
		t.cookie = *cookie;
		t.test_stat.stat = stat;
		return req_reply(r, (xdrproc_t)xdr_nlm4_testres, &t);
	}
	nlm4_res res = { .cookie = *cookie, .stat = { stat } };

	return req_reply(r, (xdrproc_t)xdr_nlm4_res, &res);
}

/* How a _MSG call's _RES call went (nlm_msg_done_fn): counted; one not
 * delivered logged, and the lock a LOCK_RES reported granted, which its
 * client never heard of, taken out of the table and unlocked upstream.
 * A _RES is a message: no reply is due (FreeBSD's and illumos's lock
 * managers send none), so one sent and not answered (RPC_TIMEDOUT: the
 * connection was made and the call written) counts as delivered; only a
 * call that could not be sent is "unreachable". */
static void msg_res_done(struct daemon *d, enum clnt_stat st,
			 const char *caller, const char *host,
			 const struct nlm_held *granted)
{
	struct nlm *n = d->nlm;

	if (!n || st == RPC_INTR)	/* stopping: nothing can be sent */
		return;
	if (st == RPC_SUCCESS || st == RPC_TIMEDOUT) {
		n->st.msg_res_sent++;
		return;
	}
	n->st.msg_res_unreachable++;
	if (ratelog_admit(&n->fail_log, daemon_now(), 10.0, NULL))
		log_warn("nlm: the lock manager of client %s (%s) did not take "
			 "the _RES answer to its asynchronous call: %s%s",
			 caller, host, clnt_sperrno(st), granted ?
			 "; the lock it was granted is released upstream" : "");
	if (!granted)
		return;
	if (caller[0])
		nlm_locks_unlock(n->locks, caller, granted->fh,
				 granted->fh_len, granted->oh, granted->oh_len,
				 granted->off, granted->len);
	nlm_unlock_held(d, granted);
}

/* Answer *m (a _MSG call) stat by its _RES call through d->nlm's pool
 * (holder and granted as nlm_msg_answer); without d->nlm, drop it. */
static void msg_answer(struct daemon *d, struct nlm_msg **m, nlm4_stats stat,
		       const nlm4_holder *holder,
		       const struct nlm_held *granted)
{
	struct nlm *n = d->nlm;
	struct nlm_msg_via via;

	if (!n) {
		nlm_msg_free(m);
		return;
	}
	via.pool = n->pool;
	via.machine = n->caller;
	via.timeout = d->conf->upstream_timeout;
	nlm_msg_answer(m, &via, stat, holder, granted);
}

/* Answer r, a forwarded procedure's call refused before it was sent
 * (lk its lock): the synchronous form in its reply; a _MSG form by its
 * _RES call, after its empty reply. */
static enum op_status refuse(struct req *r, const nlm4_lock *lk,
			     nlm4_stats stat)
{
	struct nlm_msg *m;

	if (!nlm_msg_is_msg(r->ent->proc))
		return reply_stat(r, stat);
	if ((m = nlm_msg_new(r, lk, msg_res_done)))
		msg_answer(r->d, &m, stat, NULL, NULL);
	else
		r->d->nlm->st.msg_res_unreachable++;
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

static void op_free(struct daemon *d, struct nlm_op *op)
{
	CHECK_OBJ(op, NLM_OP_MAGIC);
	if (d->nlm) {
		DL_DELETE(d->nlm->ops, op);
		d->nlm->nops--;
	}
	op->magic = 0;
	if (op->late)
		event_free(op->late);
	if (op->f)
		cfile_put(d->cache, &op->f);
	nlm_msg_free(&op->msg);
	free(op);
}

/* Answer op's call stat (its reply, or its _RES call; a granted LOCK_MSG
 * hands its lock over, released if that is not delivered) and free op. */
static void op_finish(struct nlm_op *op, nlm4_stats stat)
{
	struct req *r = op->r;
	struct daemon *d = op->d;

	if (op->msg)
		msg_answer(d, &op->msg, stat, NULL,
			   op->proc == NLMPROC4_LOCK ? &op->lk : NULL);
	if (r)
		r->op = NULL;
	op_free(d, op);
	if (r)
		reply_stat(r, stat);
}

/* SM_MON answered (or not). */
static void monitor_done(enum clnt_stat st, void *res, void *arg)
{
	struct daemon *d = arg;
	sm_stat_res *sr = res;

	if (!d->nlm || st == RPC_INTR)
		return;
	if (st == RPC_SUCCESS && sr && sr->res_stat == STAT_SUCC) {
		d->nlm->st.monitored++;
		return;
	}
	d->nlm->st.monitor_failures++;
	if (ratelog_admit(&d->nlm->fail_log, daemon_now(), 10.0, NULL))
		log_warn("nlm: the local status monitor (rpc.statd) did not "
			 "take a host to watch: %s; its reboot will not "
			 "be acted on", st == RPC_SUCCESS ?
			 "STAT_FAIL" : clnt_sperrno(st));
}

void nlm_monitor_client(struct daemon *d, const char *caller)
{
	struct nlm *n = d->nlm;
	struct rpccall_spec s = {
		.host = "127.0.0.1", .port = 0, .prog = SM_PROG,
		.vers = SM_VERS, .proc = SM_MON,
		.timeout = d->conf->upstream_timeout, .machine = n->caller,
	};
	char mon_name[SM_MAXSTRLEN + 1], my_name[] = "127.0.0.1";
	sm_mon m;

	snprintf(mon_name, sizeof(mon_name), "%s", caller);
	memset(&m, 0, sizeof(m));
	m.mon_id.mon_name = mon_name;
	m.mon_id.my_id.my_name = my_name;
	m.mon_id.my_id.my_prog = NLM_PROG;
	m.mon_id.my_id.my_vers = NLM4_VERS;
	m.mon_id.my_id.my_proc = NLMPROC4_SM_NOTIFY;
	if (rpccall_submit(n->pool, &s, (xdrproc_t)xdr_sm_mon, &m,
			   (xdrproc_t)xdr_sm_stat_res, sizeof(sm_stat_res),
			   monitor_done, d) != 0)
		n->st.monitor_failures++;
}

/* A forwarded call was granted: a LOCK is recorded under its client (the
 * first one of a client gets it watched), an UNLOCK removes what it
 * covers. NM_LOCK (non-monitored) and TEST record nothing. */
static void note_granted(struct nlm *n, struct nlm_op *op)
{
	bool exclusive;
	const struct nfs3_proc *m;
	nlm4_lock *lk = op_lock(op->proc, op->args, &m, &exclusive);

	if (!lk->caller_name || !lk->caller_name[0])
		return;
	if (op->proc == NLMPROC4_LOCK) {
		if (nlm_locks_add(n->locks, lk->caller_name, &op->lk) == 1)
			nlm_monitor_client(op->d, lk->caller_name);
		/* Its upstream watched too, to pass its reboot on. */
		if (nlm_nsm_watch(n->nsm, op->ex->conf->url.server))
			nlm_monitor_client(op->d, op->ex->conf->url.server);
	} else if (op->proc == NLMPROC4_UNLOCK) {
		nlm_locks_unlock(n->locks, lk->caller_name, op->lk.fh,
				 op->lk.fh_len, op->oh, op->oh_len, op->lk.off,
				 op->lk.len);
	}
}

/* A lock matching peer sa: an AF_INET/AF_INET6 client address that the
 * wrapped owner names (nlm_owner.h). */
static bool owner_from(const struct nlm_held *h, const struct sockaddr *sa)
{
	struct nlm_owner o;
	uint8_t w[NLM_OWNER_MAX];
	size_t n;

	if (nlm_owner_unwrap(h->oh, h->oh_len, &o) != 0)
		return false;
	/* Wrapping the same fields with sa gives the same bytes only when
	 * sa is the owner's address. */
	n = nlm_owner_wrap(o.export_id, sa, o.caller, o.caller_len, o.oh,
			   o.oh_len, w);
	return n == h->oh_len && memcmp(w, h->oh, n) == 0;
}

/* The UNLOCK of a rebooted client's lock came back. */
static void release_done(enum clnt_stat st, void *res, void *arg)
{
	struct daemon *d = arg;
	nlm4_res *nr = res;

	if (!d->nlm || st == RPC_INTR)
		return;
	if (st == RPC_SUCCESS && nr && nr->stat.stat == NLM4_GRANTED)
		d->nlm->st.released++;
	else
		d->nlm->st.failed++;
}

/* The LOCK that gives an owner back what undoing a failed LOCK took
 * (unlock_unanswered) came back: counted failed unless granted. */
static void relock_done(enum clnt_stat st, void *res, void *arg)
{
	struct daemon *d = arg;
	nlm4_res *nr = res;

	if (!d->nlm || st == RPC_INTR)
		return;
	if (st != RPC_SUCCESS || !nr || nr->stat.stat != NLM4_GRANTED)
		d->nlm->st.failed++;
}

/* Send proc upstream, as the proxy, for every lock of list h (freed
 * here): NLMPROC4_UNLOCK (release_done counts the answers), or
 * NLMPROC4_LOCK, not blocking, exclusive as each lock is, with the
 * client's NSM state (Ganesha 4.3 keys a lock's state by it: with
 * another, the LOCK is another state's and DENIED) (relock_done).
 * Returns how many calls were sent. */
static unsigned held_calls(struct daemon *d, struct nlm_held *h,
			   uint32_t proc, int32_t state)
{
	struct nlm *n = d->nlm;
	unsigned sent = 0;

	for (struct nlm_held *r = h; r; r = r->next) {
		struct export_rt *ex = daemon_export(d, r->export_id);
		nlm4_unlockargs ua;
		nlm4_lockargs la;
		nlm4_lock *lk = proc == NLMPROC4_LOCK ? &la.alock : &ua.alock;
		struct rpccall_spec s = {
			.prog = NLM_PROG, .vers = NLM4_VERS, .proc = proc,
			.timeout = d->conf->upstream_timeout,
			.machine = n->caller,
		};

		if (!ex)		/* removed by a reload */
			continue;
		s.host = ex->conf->url.server;
		s.port = (unsigned)ex->conf->url.nlm_port;
		memset(&ua, 0, sizeof(ua));
		memset(&la, 0, sizeof(la));
		lk->caller_name = n->caller;
		lk->fh.nlm4_netobj_val = (char *)r->fh;
		lk->fh.nlm4_netobj_len = (u_int)r->fh_len;
		lk->oh.nlm4_netobj_val = (char *)r->oh;
		lk->oh.nlm4_netobj_len = (u_int)r->oh_len;
		lk->svid = r->svid;
		lk->l_offset = r->off;
		lk->l_len = r->len;
		la.exclusive = r->exclusive;
		la.state = state;
		if ((proc == NLMPROC4_LOCK ?
		     rpccall_submit(n->pool, &s, (xdrproc_t)xdr_nlm4_lockargs,
				    &la, (xdrproc_t)xdr_nlm4_res,
				    sizeof(nlm4_res), relock_done, d) :
		     rpccall_submit(n->pool, &s, (xdrproc_t)xdr_nlm4_unlockargs,
				    &ua, (xdrproc_t)xdr_nlm4_res,
				    sizeof(nlm4_res), release_done, d)) == 0) {
			n->st.forwarded++;
			sent++;
		} else {
			n->st.failed++;
		}
	}
	nlm_held_free_list(h);
	return sent;
}

/* Release upstream every lock of list h (freed here). Returns how many
 * UNLOCKs were sent. */
static unsigned release_locks(struct daemon *d, struct nlm_held *h)
{
	return held_calls(d, h, NLMPROC4_UNLOCK, 0);
}

/* Append to *tail a copy of lk limited to [from, to) (nlm_held_piece):
 * 0, or -1 on ENOMEM. */
static int held_append(struct nlm_held ***tail, const struct nlm_held *lk,
		       uint64_t from, uint64_t to)
{
	struct nlm_held *p = nlm_held_piece(lk, from, to);

	if (!p)
		return -1;
	**tail = p;
	*tail = &p->next;
	return 0;
}

/*
 * Undo upstream what the LOCK op asked for may have granted: its client
 * was told NLM4_DENIED_NOLOCKS (no answer within upstream_timeout) and
 * the upstream granted it late, or its call failed after it may have been
 * sent. So no lock stays held for a client told it has none (as Linux's
 * lockd client unlocks after an interrupted LOCK) -- and none the client
 * held before is taken from it: a lock request that fails leaves the
 * owner's locks as they were (POSIX fcntl), so the ranges the lock table
 * holds for this owner and file are left out of the UNLOCKs, and each of
 * them whose mode differs from the request's (which the upstream may
 * have applied to it: an exclusive lock made shared, or the reverse) is
 * asked for again in its own mode, not blocking.
 * Out of memory the whole range is unlocked, as before. The answers are
 * only counted.
 */
static void unlock_unanswered(struct daemon *d, struct nlm_op *op)
{
	struct nlm_held *held = NULL, *gaps = NULL, **tail = &gaps;
	struct nlm_held *again = NULL, **atail = &again;
	uint64_t at = op->lk.off, end = nlm_held_end(&op->lk);
	bool failed = false;

	if (d->nlm && op->caller[0])
		held = nlm_locks_owned(d->nlm->locks, op->caller, &op->lk,
				       &failed);
	/* held is ordered by start: the gaps between its ranges. */
	for (struct nlm_held *h = held; h && !failed; h = h->next) {
		uint64_t hend = nlm_held_end(h);

		if (h->off > at && held_append(&tail, &op->lk, at, h->off) != 0)
			failed = true;
		if (hend > at)
			at = hend;
		if (h->exclusive != op->lk.exclusive &&
		    held_append(&atail, h, h->off, hend) != 0)
			failed = true;
	}
	if (!failed && at < end && held_append(&tail, &op->lk, at, end) != 0)
		failed = true;
	nlm_held_free_list(held);
	if (failed) {
		nlm_held_free_list(gaps);
		nlm_held_free_list(again);
		nlm_unlock_held(d, &op->lk);
		return;
	}
	held_calls(d, gaps, NLMPROC4_UNLOCK, 0);	/* frees gaps */
	held_calls(d, again, NLMPROC4_LOCK, op->state);	/* frees again */
}

void nlm_unlock_held(struct daemon *d, const struct nlm_held *lk)
{
	struct nlm_held *h = nlm_held_piece(lk, lk->off, nlm_held_end(lk));

	if (!h || !d->nlm) {
		nlm_held_free_list(h);
		return;
	}
	release_locks(d, h);	/* frees h */
}

/* True for a source port below 1024 (a root process's: statd binds
 * one, bindresvport). */
static bool port_privileged(const struct sockaddr *sa)
{
	uint16_t port = 0;

	if (sa->sa_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return port > 0 && port < 1024;
}

/* True for a caller on this host (127.0.0.0/8, ::1, ::ffff:127.x). */
static bool peer_is_local(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

void nlm_observe_getattr(struct daemon *d, struct export_rt *ex,
			 const uint8_t *fh, size_t fh_len,
			 enum upstream_status status, const void *decoded)
{
	const GETATTR3res *res = decoded;
	struct cfile *f = cache_find(d->cache, fh, fh_len);

	if (f && status == UPSTREAM_OK && res && res->status == NFS3_OK) {
		struct cattr a;

		attr_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, &a);
		if (cfile_attr_observe(d->cache, f, &a, daemon_now(),
				       daemon_ac(ex, a.type)) && d->nlm)
			d->nlm->st.revalidated++;
	} else if (f) {
		cfile_attr_expire(f);	/* the next use asks upstream */
	}
	if (f)
		cfile_put(d->cache, &f);
}

/* A granted LOCK's GETATTR came back: if the file changed upstream, the
 * cache drops what it held of it (nlm_observe_getattr); then GRANTED. */
static void lock_getattr_done(enum upstream_status status, void *decoded,
			      void *arg)
{
	struct nlm_op *op = arg;

	nlm_observe_getattr(op->d, op->ex, op->lk.fh, op->lk.fh_len, status,
			    decoded);
	op_finish(op, op->stat);
}

/* Reply a TEST's upstream result res to op's client and free op: a
 * conflicting holder that is a client of the proxy's is shown by its own
 * owner. */
static void test_reply(struct nlm_op *op, void *res)
{
	struct req *r = op->r;
	/* A shallow copy is replied: res stays as decoded, for the pool's
	 * xdr_free. */
	nlm4_testres t = *(nlm4_testres *)res;
	nlm4_holder *h = &t.test_stat.nlm4_testrply_u.holder;
	struct nlm_owner o;

	if (t.test_stat.stat == NLM4_DENIED &&
	    nlm_owner_unwrap((const uint8_t *)h->oh.nlm4_netobj_val,
			     h->oh.nlm4_netobj_len, &o) == 0) {
		/* Its own owner, which the wrapped one ends with. */
		h->oh.nlm4_netobj_val += h->oh.nlm4_netobj_len - o.oh_len;
		h->oh.nlm4_netobj_len = (u_int)o.oh_len;
	}
	t.cookie = *(nlm4_netobj *)op->args;
	if (!r) {		/* TEST_MSG: TEST_RES, with that holder */
		msg_answer(op->d, &op->msg, t.test_stat.stat, h, NULL);
		op_free(op->d, op);
		return;
	}
	r->op = NULL;
	op_free(op->d, op);
	req_reply(r, (xdrproc_t)xdr_nlm4_testres, &t);
}

/* Whether a call that failed with st may have reached the upstream. */
static bool maybe_sent(enum clnt_stat st)
{
	return st == RPC_TIMEDOUT || st == RPC_CANTRECV;
}

/* The upstream lock manager answered op's call (or did not). */
static void fwd_done(enum clnt_stat st, void *res, void *arg)
{
	struct nlm_op *op = arg;

	CHECK_OBJ(op, NLM_OP_MAGIC);
	struct req *r = op->r;
	struct daemon *d = op->d;

	if (!r && !op->msg) {
		/* A LOCK its client was told failed (late_fire): unlock
		 * what the upstream granted since, or may have. */
		if (d->nlm && ((st == RPC_SUCCESS && res &&
				((nlm4_res *)res)->stat.stat == NLM4_GRANTED) ||
			       maybe_sent(st)))
			unlock_unanswered(d, op);
		op_free(d, op);
		return;
	}
	if (op->late) {
		event_free(op->late);
		op->late = NULL;
	}
	if (st != RPC_SUCCESS) {
		if (d->nlm && maybe_sent(st) &&
		    (op->proc == NLMPROC4_LOCK || op->proc == NLMPROC4_NM_LOCK))
			unlock_unanswered(d, op);
		if (st != RPC_INTR && d->nlm) {
			d->nlm->st.failed++;
			if (ratelog_admit(&d->nlm->fail_log, daemon_now(),
					  10.0, NULL))
				log_warn("nlm: the lock manager of %s did not "
					 "answer: %s; clients get "
					 "NLM4_DENIED_NOLOCKS", op->ex->conf->upstream,
					 clnt_sperrno(st));
		}
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	if (op->proc == NLMPROC4_TEST) {
		test_reply(op, res);
		return;
	}
	op->stat = ((nlm4_res *)res)->stat.stat;
	if (op->stat == NLM4_GRANTED && d->nlm)
		note_granted(d->nlm, op);
	if ((op->proc == NLMPROC4_LOCK || op->proc == NLMPROC4_NM_LOCK) &&
	    op->stat == NLM4_GRANTED) {
		GETATTR3args ga;

		ga.object.data.data_val = (char *)op->lk.fh;
		ga.object.data.data_len = (u_int)op->lk.fh_len;
		if (nfs3_send(op->ex, NFSPROC3_GETATTR,
			      (xdrproc_t)xdr_GETATTR3args, &ga, &op->uc,
			      lock_getattr_done, op) == 0)
			return;
		lock_getattr_done(UPSTREAM_EDOWN, NULL, op);
		return;
	}
	op_finish(op, op->stat);
}

/* A LOCK's upstream_timeout passed with no answer: its client hears
 * NLM4_DENIED_NOLOCKS now (as for any call the upstream does not
 * answer), and op, let go of its request, waits for the late answer. */
static void late_fire(evutil_socket_t fd, short what, void *arg)
{
	struct nlm_op *op = arg;
	struct req *r;
	struct daemon *d;

	(void)fd;
	(void)what;
	CHECK_OBJ(op, NLM_OP_MAGIC);
	r = op->r;
	d = op->d;
	op->r = NULL;
	if (r)
		r->op = NULL;
	if (d->nlm) {
		d->nlm->st.failed++;
		if (ratelog_admit(&d->nlm->fail_log, daemon_now(), 10.0, NULL))
			log_warn("nlm: the lock manager of %s did not answer a "
				 "LOCK within upstream_timeout; its client gets "
				 "NLM4_DENIED_NOLOCKS and a late grant is "
				 "unlocked", op->ex->conf->upstream);
	}
	if (r)
		reply_stat(r, NLM4_DENIED_NOLOCKS);
	else		/* LOCK_MSG: its LOCK_RES now, the op waits on */
		msg_answer(d, &op->msg, NLM4_DENIED_NOLOCKS, NULL, NULL);
}

/* Send op's call, its lock rewritten for the upstream. */
static void fwd_send(struct nlm_op *op)
{
	struct daemon *d = op->d;
	struct nlm *n = d->nlm;
	bool exclusive;
	const struct nfs3_proc *m;
	nlm4_lock *lk = op_lock(op->proc, op->args, &m, &exclusive);
	const struct conf_export *e = op->ex->conf;
	struct rpccall_spec s = {
		.host = e->url.server, .port = (unsigned)e->url.nlm_port,
		.prog = NLM_PROG, .vers = NLM4_VERS, .proc = op->proc,
		.timeout = d->conf->upstream_timeout,
		.machine = n ? n->caller : NULL,
	};
	bool test = op->proc == NLMPROC4_TEST;
	nlm4_lock mine = *lk;	/* the decoded fields, freed with them */
	int rc;

	if (!n) {		/* stopped while its write-back ran */
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	/* Encoded by rpccall_submit, then put back: the server frees the
	 * arguments as decoded. */
	if (op->proc == NLMPROC4_LOCK || op->proc == NLMPROC4_NM_LOCK) {
		struct timeval tv = {
			.tv_sec = (time_t)d->conf->upstream_timeout,
			.tv_usec = (suseconds_t)((d->conf->upstream_timeout -
				(double)(time_t)d->conf->upstream_timeout) * 1e6),
		};

		op->late = evtimer_new(d->base, late_fire, op);
		if (op->late && mclock_timer_add(op->late, &tv) == 0)
			s.timeout *= NLM_LATE_FACTOR;
	}
	lk->caller_name = n->caller;
	lk->oh.nlm4_netobj_val = (char *)op->oh;
	lk->oh.nlm4_netobj_len = (u_int)op->oh_len;
	rc = rpccall_submit(n->pool, &s, op->xdr_args, op->args,
			    test ? (xdrproc_t)xdr_nlm4_testres :
				   (xdrproc_t)xdr_nlm4_res,
			    test ? sizeof(nlm4_testres) : sizeof(nlm4_res),
			    fwd_done, op);
	*lk = mine;
	if (rc != 0) {
		n->st.failed++;
		op_finish(op, NLM4_DENIED_NOLOCKS);
		return;
	}
	n->st.forwarded++;
}

/* The file's written bytes are upstream and committed: UNLOCK now. */
static void unlock_flushed(struct daemon *d, nfsstat3 status, void *arg)
{
	struct nlm_op *op = arg;

	if (status != NFS3_OK)
		/* Its write-back failed or timed out: the lock goes anyway
		 * (holding it would not write them), the failure stays the
		 * file's (its next COMMIT reports it). */
		log_info("nlm: UNLOCK forwarded while the file's write-back "
			 "reports %s", nfs3_status_name(status));
	(void)d;
	fwd_send(op);
}

enum op_status nlm_op_null(struct req *r)
{
	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status nlm_op_unavail(struct req *r)
{
	return req_reply_accept_error(r, r->d->nlm ? PROC_UNAVAIL :
						     PROG_UNAVAIL);
}

/* A forwarded call of r (proc its synchronous form, lk its lock, ex and
 * acc as checked) on d->nlm's list, its owner wrapped; NULL with *stat
 * the answer: NLM4_DENIED_NOLOCKS (memory), NLM4_FAILED (an owner too
 * long to wrap, counted). A _MSG call's arguments are copied (op->msg),
 * anything else's stay r's, with r->op the op. */
static struct nlm_op *op_new(struct req *r, uint32_t proc, nlm4_lock *lk,
			     bool exclusive, struct export_rt *ex,
			     const struct conf_access *acc, nlm4_stats *stat)
{
	struct nlm *n = r->d->nlm;
	struct nlm_op *op = calloc(1, sizeof(*op));

	*stat = NLM4_DENIED_NOLOCKS;
	if (!op)
		return NULL;
	op->oh_len = nlm_owner_wrap(ex->conf->id, req_peer(r), lk->caller_name,
				    lk->caller_name ? strlen(lk->caller_name) : 0,
				    (const uint8_t *)lk->oh.nlm4_netobj_val,
				    lk->oh.nlm4_netobj_len, op->oh);
	if (op->oh_len == 0) {
		free(op);
		n->st.refused++;
		*stat = NLM4_FAILED;
		return NULL;
	}
	if (nlm_msg_is_msg(r->ent->proc) &&
	    !(op->msg = nlm_msg_new(r, lk, msg_res_done))) {
		free(op);
		return NULL;
	}
	op->magic = NLM_OP_MAGIC;
	op->d = r->d;
	op->proc = proc;
	op->args = op->msg ? nlm_msg_args(op->msg) : r->args;
	op->xdr_args = r->ent->xdr_args;
	op->ex = ex;
	op->lk.export_id = ex->conf->id;
	op->lk.fh_len = lk->fh.nlm4_netobj_len;	/* unwrapped: FH_UP_MAX */
	memcpy(op->lk.fh, lk->fh.nlm4_netobj_val, op->lk.fh_len);
	op->lk.oh = op->oh;
	op->lk.oh_len = op->oh_len;
	op->lk.svid = lk->svid;
	op->lk.off = lk->l_offset;
	op->lk.len = lk->l_len;
	op->lk.exclusive = exclusive;
	snprintf(op->caller, sizeof(op->caller), "%s",
		 lk->caller_name ? lk->caller_name : "");
	if (proc == NLMPROC4_LOCK || proc == NLMPROC4_NM_LOCK)
		op->state = ((nlm4_lockargs *)op->args)->state;
	nfs3_guard_cred(&r->call, acc, &op->uc);
	if (op->msg && op->uc.machine) {
		snprintf(op->machine, sizeof(op->machine), "%s",
			 op->uc.machine);
		op->uc.machine = op->machine;
	}
	if (!op->msg) {
		op->r = r;
		r->op = op;
	}
	DL_APPEND(n->ops, op);
	n->nops++;
	return op;
}

/* TEST, LOCK, CANCEL, UNLOCK, NM_LOCK and the _MSG forms of the first
 * four: checked, then forwarded (an UNLOCK once the file's written bytes
 * are committed upstream). A _MSG call gets its empty reply now and its
 * answer by its _RES call (nlm_msg.h). */
enum op_status nlm_op_forward(struct req *r)
{
	struct daemon *d = r->d;
	struct nlm *n = d->nlm;
	uint32_t proc = nlm_msg_sync_proc(r->ent->proc);
	bool msg = nlm_msg_is_msg(r->ent->proc);
	struct export_rt *ex = NULL;
	struct conf_access acc;
	const struct nfs3_proc *m;
	struct nlm_op *op;
	struct cfile *f;
	bool exclusive;
	nlm4_lock *lk;
	nlm4_stats stat;
	nfsstat3 st;

	if (!n)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	lk = op_lock(proc, r->args, &m, &exclusive);
	if (nfs3_guard_unwrap(d, m, r->args, &ex) != NFS3_OK ||
	    lk->fh.nlm4_netobj_len > NLM_LOCKS_FH_MAX) {
		n->st.refused++;
		return refuse(r, lk, NLM4_STALE_FH);
	}
	st = nfs3_guard_request(r, ex->conf, REFUSAL_NFS, NULL, &acc);
	if (st == NFS3ERR_JUKEBOX)	/* the caller's name is looked up */
		return refuse(r, lk, NLM4_DENIED_GRACE_PERIOD);
	if (st != NFS3_OK) {
		n->st.refused++;
		return refuse(r, lk, NLM4_FAILED);
	}
	if (acc.read_only && exclusive &&
	    (proc == NLMPROC4_LOCK || proc == NLMPROC4_NM_LOCK)) {
		nfs3_guard_refused(r, ex->conf, REFUSAL_NFS, NULL,
				   REFUSAL_READ_ONLY, "read-only for this client");
		n->st.refused++;
		return refuse(r, lk, NLM4_ROFS);
	}
	if (!(op = op_new(r, proc, lk, exclusive, ex, &acc, &stat)))
		return refuse(r, lk, stat);
	if (proc == NLMPROC4_UNLOCK &&
	    (f = cache_find(d->cache, (const uint8_t *)lk->fh.nlm4_netobj_val,
			    lk->fh.nlm4_netobj_len))) {
		op->f = f;
		if (writeback_wait(d, f, ex, WB_WAIT_ALL, 0, 0, unlock_flushed,
				   op) != 0)
			fwd_send(op);
	} else {
		fwd_send(op);
	}
	return msg ? req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL) :
		     OP_PENDING;
}

enum op_status nlm_op_void(struct req *r)
{
	if (!r->d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/* Host mon_name rebooted (state): an upstream's reboot is passed on to
 * the clients that held locks there (nlm_nsm.h); a client's locks are
 * released upstream. A name that is both is both, the upstream first. */
static void client_rebooted(struct daemon *d, const char *mon_name, int state)
{
	struct nlm_held *h;
	bool known;

	if (nlm_nsm_is_upstream(d, mon_name)) {
		struct nlm_nsm_ctx ctx = {
			.d = d, .pool = d->nlm->pool, .locks = d->nlm->locks,
			.caller = d->nlm->caller,
		};

		nlm_nsm_upstream_rebooted(d->nlm->nsm, &ctx, mon_name, state);
	}
	h = nlm_locks_take(d->nlm->locks, mon_name, &known);
	if (known) {
		d->nlm->st.reboots++;
		log_info("nlm: %s rebooted (state %d): releasing its locks "
			 "upstream", mon_name, state);
	}
	release_locks(d, h);
}

enum op_status nlm_op_sm_notify(struct req *r)
{
	struct daemon *d = r->d;
	nlm_sm_status *a = r->args;

	if (!d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	/* Only the local status monitor calls this, from a privileged
	 * port (as Linux's lockd checks, nlm_privileged_requester): any
	 * other caller could drop another client's locks. */
	if (!peer_is_local(req_peer(r)) || !req_peer_privileged(r)) {
		d->nlm->st.refused++;
		return req_reply_accept_error(r, PROC_UNAVAIL);
	}
	client_rebooted(d, a->mon_name, a->state);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/* Send the reply record in out (framed: its 4-byte record mark dropped,
 * as UDP carries none) to sa. */
static void udp_reply(int fd, struct evbuffer *out, const struct sockaddr *sa,
		      socklen_t sl)
{
	size_t len = evbuffer_get_length(out);
	uint8_t buf[512];

	if (len <= 4 || len > sizeof(buf))
		return;
	evbuffer_remove(out, buf, len);
	if (sendto(fd, buf + 4, len - 4, MSG_DONTWAIT, sa, sl) < 0)
		(void)0;	/* statd sends the callback again */
}

/* A datagram on the callback socket: NULL, or statd's reboot callback
 * (procedure 16), answered; anything else PROC_UNAVAIL or dropped. */
static void udp_read(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct rpcmsg_call call;
	uint8_t rec[4096];
	struct evbuffer *out;
	ssize_t n;

	(void)what;
	n = recvfrom(fd, rec, sizeof(rec), MSG_DONTWAIT,
		     (struct sockaddr *)&ss, &sl);
	if (n <= 0 || !d->nlm || !peer_is_local((struct sockaddr *)&ss) ||
	    !port_privileged((struct sockaddr *)&ss) ||
	    rpcmsg_decode_call(rec, (size_t)n, &call) != RPCMSG_OK)
		return;		/* not a call of this host's root: dropped */
	if (!(out = evbuffer_new()))
		return;
	if (call.prog != NLM_PROG || call.vers != NLM4_VERS) {
		rpcmsg_reply_accept_error(out, call.xid, PROG_UNAVAIL, 0, 0);
	} else if (call.proc == NLMPROC4_NULL) {
		rpcmsg_reply_success(out, call.xid,
				     (xdrproc_t)rpcmsg_xdr_void, NULL);
	} else if (call.proc == NLMPROC4_SM_NOTIFY) {
		nlm_sm_status a;

		memset(&a, 0, sizeof(a));
		if (rpcmsg_decode_args(rec, (size_t)n, call.args_off,
				       (xdrproc_t)xdr_nlm_sm_status, &a) == 0) {
			client_rebooted(d, a.mon_name, a.state);
			rpcmsg_reply_success(out, call.xid,
					     (xdrproc_t)rpcmsg_xdr_void, NULL);
			rpcmsg_free_args((xdrproc_t)xdr_nlm_sm_status, &a);
		} else {
			rpcmsg_reply_accept_error(out, call.xid, GARBAGE_ARGS,
						  0, 0);
		}
	} else {
		rpcmsg_reply_accept_error(out, call.xid, PROC_UNAVAIL, 0, 0);
	}
	udp_reply(fd, out, (struct sockaddr *)&ss, sl);
	evbuffer_free(out);
}

int nlm_listen_udp(struct daemon *d, int port, char *err, size_t len)
{
	struct nlm *n = d->nlm;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	if (!n)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		/* Locks work without it; reboots then do not free them. */
		log_warn("nlm: cannot bind UDP 127.0.0.1:%d for the status "
			 "monitor's callbacks: %s; a client's reboot will not "
			 "release its locks", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	n->udp_ev = event_new(d->base, fd, EV_READ | EV_PERSIST, udp_read, d);
	if (!n->udp_ev || event_add(n->udp_ev, NULL) != 0) {
		snprintf(err, len, "out of memory");
		if (n->udp_ev)
			event_free(n->udp_ev);
		n->udp_ev = NULL;
		close(fd);
		return -1;
	}
	n->udp_fd = fd;
	return 0;
}

/* A record whose owner came from peer arg (owner_from). */
static bool owner_from_peer(const void *arg, const struct nlm_held *h)
{
	return owner_from(h, arg);
}

enum op_status nlm_op_free_all(struct req *r)
{
	struct daemon *d = r->d;
	nlm4_notify *a = r->args;
	struct nlm_held *h;
	bool known;

	if (!d->nlm)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	/* A client frees its own locks only: those whose owner it sent
	 * from its address go, any other stays (one change of the table,
	 * and of its copy in state_dir). */
	h = nlm_locks_take_if(d->nlm->locks, a->name, owner_from_peer,
			      req_peer(r), &known);
	if (release_locks(d, h) > 0)
		d->nlm->st.reboots++;
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/* Reply a SHARE/UNSHARE stat with the call's cookie. */
static enum op_status share_reply(struct req *r, nlm4_stats stat)
{
	nlm4_shareres res;

	memset(&res, 0, sizeof(res));
	res.cookie = ((nlm4_shareargs *)r->args)->cookie;
	res.stat = stat;
	return req_reply(r, (xdrproc_t)xdr_nlm4_shareres, &res);
}

/* The upstream answered a SHARE or UNSHARE (or did not). */
static void share_done(enum clnt_stat st, void *res, void *arg)
{
	struct nlm_op *op = arg;
	struct req *r;
	struct daemon *d;
	nlm4_shareres out;

	CHECK_OBJ(op, NLM_OP_MAGIC);
	r = op->r;
	d = r->d;
	r->op = NULL;
	op_free(d, op);
	if (st != RPC_SUCCESS || !res) {
		if (st != RPC_INTR && d->nlm)
			d->nlm->st.failed++;
		share_reply(r, NLM4_DENIED_NOLOCKS);
		return;
	}
	out = *(nlm4_shareres *)res;	/* shallow: res is the pool's */
	out.cookie = ((nlm4_shareargs *)r->args)->cookie;
	req_reply(r, (xdrproc_t)xdr_nlm4_shareres, &out);
}

/* SHARE/UNSHARE (DOS share reservations, RFC 1813 section 6.2): checked
 * as a lock is, the owner wrapped, forwarded. A read-only client may not
 * reserve write access (NLM4_ROFS). */
enum op_status nlm_op_share(struct req *r)
{
	static const struct nfs3_proc unwrap_share = {
		.nfh = 1, .fh = { offsetof(nlm4_shareargs, share.fh), 0 } };
	struct daemon *d = r->d;
	struct nlm *n = d->nlm;
	nlm4_shareargs *a = r->args, copy;
	struct export_rt *ex = NULL;
	struct conf_access acc;
	struct nlm_op *op;
	nfsstat3 st;
	struct rpccall_spec s = {
		.prog = NLM_PROG, .vers = NLM4_VERS, .proc = r->ent->proc,
	};

	if (!n)
		return req_reply_accept_error(r, PROG_UNAVAIL);
	if (nfs3_guard_unwrap(d, &unwrap_share, r->args, &ex) != NFS3_OK) {
		n->st.refused++;
		return share_reply(r, NLM4_STALE_FH);
	}
	st = nfs3_guard_request(r, ex->conf, REFUSAL_NFS, NULL, &acc);
	if (st == NFS3ERR_JUKEBOX)
		return share_reply(r, NLM4_DENIED_GRACE_PERIOD);
	if (st != NFS3_OK) {
		n->st.refused++;
		return share_reply(r, NLM4_FAILED);
	}
	if (acc.read_only && r->ent->proc == NLMPROC4_SHARE &&
	    (a->share.access == fsa_W || a->share.access == fsa_RW)) {
		n->st.refused++;
		return share_reply(r, NLM4_ROFS);
	}
	op = calloc(1, sizeof(*op));
	if (!op)
		return share_reply(r, NLM4_DENIED_NOLOCKS);
	op->oh_len = nlm_owner_wrap(ex->conf->id, req_peer(r),
				    a->share.caller_name,
				    a->share.caller_name ?
					    strlen(a->share.caller_name) : 0,
				    (const uint8_t *)a->share.oh.nlm4_netobj_val,
				    a->share.oh.nlm4_netobj_len, op->oh);
	if (op->oh_len == 0) {
		free(op);
		n->st.refused++;
		return share_reply(r, NLM4_FAILED);
	}
	op->magic = NLM_OP_MAGIC;
	op->d = d;
	op->r = r;
	op->ex = ex;
	r->op = op;
	DL_APPEND(n->ops, op);
	n->nops++;
	copy = *a;
	copy.share.caller_name = n->caller;
	copy.share.oh.nlm4_netobj_val = (char *)op->oh;
	copy.share.oh.nlm4_netobj_len = (u_int)op->oh_len;
	s.host = ex->conf->url.server;
	s.port = (unsigned)ex->conf->url.nlm_port;
	s.timeout = d->conf->upstream_timeout;
	s.machine = n->caller;
	if (rpccall_submit(n->pool, &s, (xdrproc_t)xdr_nlm4_shareargs, &copy,
			   (xdrproc_t)xdr_nlm4_shareres, sizeof(nlm4_shareres),
			   share_done, op) != 0) {
		r->op = NULL;
		op_free(d, op);
		n->st.failed++;
		return share_reply(r, NLM4_DENIED_NOLOCKS);
	}
	n->st.forwarded++;
	return OP_PENDING;
}

bool nlm_shared_get(struct daemon *d, struct nlm_shared *sh)
{
	struct nlm *n = d->nlm;

	if (!n)
		return false;
	sh->pool = n->pool;
	sh->locks = n->locks;
	sh->caller = n->caller;
	sh->st = &n->st;
	sh->fail_log = &n->fail_log;
	return true;
}

int nlm_start(struct daemon *d)
{
	struct nlm *n;

	if (!d->conf->nlm)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	n->udp_fd = -1;
	if (d->conf->nlm_caller_name[0])
		snprintf(n->caller, sizeof(n->caller), "%s",
			 d->conf->nlm_caller_name);
	else if (gethostname(n->caller, sizeof(n->caller) - 1) != 0)
		snprintf(n->caller, sizeof(n->caller), "nfscached");
	n->pool = rpccall_pool_new(d->base, NLM_WORKERS);
	n->locks = nlm_locks_new();
	n->nsm = nlm_nsm_new(d->conf->state_dir);
	if (!n->pool || !n->locks || !n->nsm) {
		rpccall_pool_stop(&n->pool);
		nlm_locks_free(&n->locks);
		nlm_nsm_free(&n->nsm);
		free(n);
		return -1;
	}
	d->nlm = n;
	return 0;
}

void nlm_stop(struct daemon *d)
{
	struct nlm *n = d->nlm;

	if (!n)
		return;
	/* Pending calls are answered (RPC_INTR: NLM4_DENIED_NOLOCKS) while
	 * d->nlm is still there. */
	rpccall_pool_stop(&n->pool);
	d->nlm = NULL;
	if (n->udp_ev)
		event_free(n->udp_ev);
	if (n->udp_fd >= 0)
		close(n->udp_fd);
	nlm_locks_free(&n->locks);	/* before the store it writes to */
	nlm_store_close(&n->store);	/* the table stays there */
	nlm_nsm_free(&n->nsm);		/* after the pool: no call left */
	free(n);
}

/* A client of the table loaded at start: watched again. */
static void remonitor(void *arg, const char *caller)
{
	nlm_monitor_client(arg, caller);
}

int nlm_restore(struct daemon *d)
{
	struct nlm *n = d->nlm;
	int clients;

	if (!n || n->store)
		return 0;
	if (!(n->store = nlm_store_open(d->conf->state_dir)))
		return -1;
	clients = nlm_locks_load(n->locks, n->store);
	if (clients <= 0)
		return 0;
	n->st.restored = nlm_locks_held(n->locks);
	log_info("nlm: %d clients held %u locks upstream before this start "
		 "(%s/nlm.mdb): asking the status monitor to watch them "
		 "again", clients, nlm_locks_held(n->locks),
		 d->conf->state_dir);
	/* statd may watch them still (harmless) or have lost them (its own
	 * restart, a new /var/lib/nfs/sm): either way a reboot of theirs
	 * then still releases their locks. */
	nlm_locks_each_client(n->locks, remonitor, d);
	/* And the upstreams they were held on, whose reboot drops them. */
	for (size_t i = 0; i < d->nexports; i++) {
		const char *host = d->exports[i]->conf->url.server;

		if (nlm_nsm_watch(n->nsm, host))
			nlm_monitor_client(d, host);
	}
	return 0;
}

bool nlm_udp_listening(const struct daemon *d)
{
	return d->nlm && d->nlm->udp_fd >= 0;
}

const char *nlm_check_why(const struct daemon *d)
{
	const struct nlm *n = d->nlm;
	const struct nlm_op *op;
	const char *why;
	unsigned count = 0;

	if (!n)
		return NULL;
	DL_FOREACH(n->ops, op) {
		if (op->magic != NLM_OP_MAGIC)
			return "nlm: a call's magic number is wrong (freed?)";
		if (op->r ? op->r->op != op : !op->msg && !op->late)
			return "nlm: a call in flight is not its request's, "
			       "nor a _MSG call's, nor a LOCK answered late";
		count++;
	}
	if (count != n->nops)
		return "nlm: nops differs from the calls in flight";
	if ((why = nlm_locks_check_why(n->locks)) ||
	    (why = nlm_nsm_check_why(n->nsm)))
		return why;
	return rpccall_check_why(n->pool);
}

void nlm_stats_get(const struct daemon *d, struct nlm_stats *st)
{
	if (d->nlm) {
		struct nlm_store_stats ss;
		struct nlm_nsm_stats ns;

		*st = d->nlm->st;
		nlm_nsm_stats_get(d->nlm->nsm, &ns);
		st->upstream_reboots = ns.upstream_reboots;
		st->clients_notified = ns.notified;
		st->clients_unreachable = ns.unreachable;
		st->clients = nlm_locks_clients(d->nlm->locks);
		st->held = nlm_locks_held(d->nlm->locks);
		nlm_store_stats_get(d->nlm->store, &ss);
		st->store_failures = ss.write_failures;
		st->store_resets = ss.resets;
	} else {
		memset(st, 0, sizeof(*st));
	}
}
