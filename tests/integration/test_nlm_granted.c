/* SPDX-License-Identifier: MIT */
/*
 * test_nlm_granted: an upstream's GRANTED callback of a blocked lock
 * relayed to the waiting client's lock manager (integration.nlm_granted,
 * run by test_nlm_granted.sh, which sets up the client host and says why
 * it is a network namespace and not the kernel guest).
 *
 * The holder H locks through the proxy from this host; the waiter W, in
 * the namespace (its own address, its caller name that address, its lock
 * manager fake_lockd registered with the namespace's rpcbind), sends a
 * blocking LOCK through the proxy: NLM4_BLOCKED. H unlocks; Ganesha calls
 * the proxy back (GRANTED_MSG, at its caller name 127.0.0.1's rpcbind,
 * where the proxy registered NLM); the proxy calls GRANTED at W's lock
 * manager. Witnesses: fake_lockd's record of each GRANTED (W's own owner,
 * svid, range, the client handle W used, the proxy's caller name and
 * AUTH_UNIX machine), a TEST sent to Ganesha's lock manager directly
 * (NFSC_DIRECT_NLM_PORT, the upstream handle, another owner) for whether
 * the range is held, and the proxy's nfscached_nlm_granted_total{result}.
 *
 * Environment (test_nlm_granted.sh): GRANTED_NS (the namespace),
 * GRANTED_FAKE (fake_lockd's path), GRANTED_HOST_IP (this host's end of
 * the veth pair), GRANTED_PEER_IP (the namespace's), GRANTED_RECORD
 * (fake_lockd's record) and GRANTED_MODE (its answer: "deny" or not).
 *
 * Suite granted, one test per run of this program, in this order (each
 * case's counters start from the previous one's): relayed, refused, sync
 * (the synchronous GRANTED, and a foreign owner), then suite msg's cases
 * but its last, polled (the client's own LOCK granted first), unreachable. Suite
 * upreboot (integration.nlm_upreboot, its own proxy and namespace): an
 * upstream's reboot passed on to W's statd (fake_lockd's NSM side).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpc/pmap_clnt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "nlm4_prot.h"
#include "rawrpc.h"
#include "tcheck.h"
#include "wbtest_util.h"

static struct wb_conn C;	/* to the proxy, from this host */
static struct wb_conn D;	/* to Ganesha directly */

/* One lock owner. */
struct owner {
	const char *caller;
	int svid;
	const char *oh;
};

static const struct owner H = { "127.0.0.6", 4100, "4100@holder" };
static const struct owner T = { "127.0.0.7", 4200, "4200@tester" };

#define W_SVID 77
#define W_OH "77@waiter"

/* s for a field rpcgen declares char * (encoded, never written). */
static char *unconst(const void *s)
{
	char *p;

	memcpy(&p, &s, sizeof(p));
	return p;
}

static void lock_fill(nlm4_lock *lk, const struct owner *o,
		      const struct wb_fh *fh, uint64_t off, uint64_t len)
{
	memset(lk, 0, sizeof(*lk));
	lk->caller_name = unconst(o->caller);
	lk->fh.nlm4_netobj_len = fh->len;
	lk->fh.nlm4_netobj_val = unconst(fh->data);
	lk->oh.nlm4_netobj_len = (u_int)strlen(o->oh);
	lk->oh.nlm4_netobj_val = unconst(o->oh);
	lk->svid = o->svid;
	lk->l_offset = off;
	lk->l_len = len;
}

/* One NLM call with a nlm4_res result on fd: its status, or -1. */
static int nlm_res_call(int fd, uint32_t proc, xdrproc_t xargs,
			const void *args)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_res res;
	int st = -1;

	memset(&res, 0, sizeof(res));
	if (rawrpc_call(fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, proc, &cred,
			xargs, args, (xdrproc_t)xdr_nlm4_res, &res,
			&rep) == RAWRPC_OK &&
	    rep.stat == MSG_ACCEPTED && rep.accept == SUCCESS)
		st = (int)res.stat.stat;
	xdr_free((xdrproc_t)xdr_nlm4_res, (char *)&res);
	return st;
}

/* A non-blocking exclusive LOCK of [0, 10) through the proxy. */
static int do_lock(const struct owner *o, const struct wb_fh *fh)
{
	nlm4_lockargs a;

	memset(&a, 0, sizeof(a));
	a.exclusive = TRUE;
	a.state = 1;
	lock_fill(&a.alock, o, fh, 0, 10);
	return nlm_res_call(C.fd, NLMPROC4_LOCK, (xdrproc_t)xdr_nlm4_lockargs,
			    &a);
}

/* UNLOCK of [0, 10) through the proxy. */
static int do_unlock(const struct owner *o, const struct wb_fh *fh)
{
	nlm4_unlockargs a;

	memset(&a, 0, sizeof(a));
	lock_fill(&a.alock, o, fh, 0, 10);
	return nlm_res_call(C.fd, NLMPROC4_UNLOCK,
			    (xdrproc_t)xdr_nlm4_unlockargs, &a);
}

/* An exclusive TEST of [0, 10) by T, sent to Ganesha's lock manager
 * directly with upstream handle dfh: its status, or -1. */
static int direct_test(const struct wb_fh *dfh)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_testargs a;
	nlm4_testres res;
	int fd = rawrpc_connect(rawrpc_env_port("NFSC_DIRECT_NLM_PORT"));
	int st = -1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.exclusive = TRUE;
	lock_fill(&a.alock, &T, dfh, 0, 10);
	if (rawrpc_call(fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, NLMPROC4_TEST,
			&cred, (xdrproc_t)xdr_nlm4_testargs, &a,
			(xdrproc_t)xdr_nlm4_testres, &res,
			&rep) == RAWRPC_OK && rep.accept == SUCCESS)
		st = (int)res.test_stat.stat;
	xdr_free((xdrproc_t)xdr_nlm4_testres, (char *)&res);
	close(fd);
	return st;
}

/* Poll (a bound for a hang, not a speed goal: 120 s) until direct_test
 * answers want; its last answer. */
static int wait_direct_test(const struct wb_fh *dfh, int want)
{
	int st = -1;

	for (int i = 0; i < 2400; i++) {
		st = direct_test(dfh);
		if (st == want)
			break;
		usleep(50 * 1000);
	}
	return st;
}

/* Wait (120 s at most) until series reaches want; its last value. */
static double wait_metric(const char *series, double want)
{
	double v = -1;

	for (int i = 0; i < 2400; i++) {
		v = wb_metric(series);
		if (v >= want)
			break;
		usleep(50 * 1000);
	}
	return v;
}

/* The lines in fake_lockd's record now. */
static int record_lines(void)
{
	FILE *f = fopen(getenv("GRANTED_RECORD"), "r");
	int n = 0, c;

	while (f && (c = fgetc(f)) != EOF)
		n += c == '\n';
	if (f)
		fclose(f);
	return n;
}

/* Line n (1-based) of fake_lockd's record into buf, waiting (120 s at
 * most) for it: 0, or -1. */
static int wait_record_line(int n, char *buf, size_t len)
{
	const char *path = getenv("GRANTED_RECORD");

	for (int i = 0; i < 2400; i++) {
		FILE *f = fopen(path, "r");
		int got = 0;

		while (f && fgets(buf, (int)len, f))
			if (++got == n)
				break;
		if (f)
			fclose(f);
		if (got == n)
			return 0;
		usleep(50 * 1000);
	}
	return -1;
}

/* fh as lowercase hex into out (2 * 64 + 1 bytes). */
static void fh_hex(const struct wb_fh *fh, char *out)
{
	for (uint32_t i = 0; i < fh->len; i++)
		sprintf(out + 2 * i, "%02x", fh->data[i]);
	out[2 * fh->len] = '\0';
}

/* fake_lockd's what ("lock", or "msg PROC") of [0, 10) of fh (a proxy
 * handle) by svid and oh (W's caller name), with tail after its
 * arguments, run in the namespace: the number it printed, or -1. */
static int ns_call(const char *what, const struct wb_fh *fh, int svid,
		   const char *oh, const char *tail)
{
	char cmd[1024], hex[2 * NFS3_FHSIZE + 1], out[32] = "";
	FILE *p;
	int st = -1;

	fh_hex(fh, hex);
	snprintf(cmd, sizeof(cmd), "ip netns exec %s %s %s %s %u %s %s %d %s "
		 "0 10%s", getenv("GRANTED_NS"), getenv("GRANTED_FAKE"), what,
		 getenv("GRANTED_HOST_IP"),
		 rawrpc_env_port("NFSC_PROXY_NFS_PORT"), hex,
		 getenv("GRANTED_PEER_IP"), svid, oh, tail);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fgets(out, sizeof(out), p))
		st = atoi(out);
	if (pclose(p) != 0)
		st = -1;
	return st;
}

/* W's blocking LOCK of [0, 10) of fh (a proxy handle), sent from the
 * namespace to the proxy (extra: "" or "reclaim"): the status it got, or
 * -1. */
static int waiter_lock_as(const struct wb_fh *fh, const char *extra)
{
	char tail[32];

	snprintf(tail, sizeof(tail), " %s", extra);
	return ns_call("lock", fh, W_SVID, W_OH, tail);
}

static int waiter_lock(const struct wb_fh *fh)
{
	return waiter_lock_as(fh, "");
}

/* The record line of a GRANTED of W's lock of fh answered answer. */
static void want_line(const struct wb_fh *fh, const char *answer, char *buf,
		      size_t len)
{
	char hex[2 * NFS3_FHSIZE + 1], oh[2 * sizeof(W_OH) + 1];

	fh_hex(fh, hex);
	for (size_t i = 0; i < strlen(W_OH); i++)
		sprintf(oh + 2 * i, "%02x", (unsigned char)W_OH[i]);
	/* The proxy's caller name (nlm_granted_proxy.conf) as caller and as
	 * the AUTH_UNIX machine, uid 0; W's own owner, svid, range and the
	 * handle W used. */
	snprintf(buf, len, "GRANTED machine=127.0.0.1 uid=0 caller=127.0.0.1 "
		 "excl=1 svid=%d off=0 len=10 oh=%s fh=%s answer=%s\n", W_SVID,
		 oh, hex, answer);
}

/* A file name in the export, looked up through the proxy (fh) and
 * directly (dfh). */
static void make_file(const char *name, struct wb_fh *fh, struct wb_fh *dfh)
{
	char path[4096];
	FILE *f;
	fattr3 at;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("0123456789", f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&C, &C.root, name, fh, &at), NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, name, dfh, &at), NFS3_OK);
}

/* H holds [0, 10) of name; W's blocking LOCK waits; H unlocks. */
static void hold_block_release(const char *name, struct wb_fh *fh,
			       struct wb_fh *dfh)
{
	make_file(name, fh, dfh);
	CU_ASSERT_EQUAL_FATAL(do_lock(&H, fh), NLM4_GRANTED);
	CU_ASSERT_EQUAL_FATAL(waiter_lock(fh), NLM4_BLOCKED);
	CU_ASSERT_EQUAL(direct_test(dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL_FATAL(do_unlock(&H, fh), NLM4_GRANTED);
}

#define RELAYED "nfscached_nlm_granted_total{result=\"relayed\"}"
#define REFUSED "nfscached_nlm_granted_total{result=\"refused\"}"
#define UNREACHABLE "nfscached_nlm_granted_total{result=\"unreachable\"}"
#define FOREIGN "nfscached_nlm_granted_total{result=\"foreign\"}"

/* (a) W's lock manager takes the lock: GRANTED with W's own fields, the
 * range held upstream, recorded under W, counted relayed. */
static void test_relayed(void)
{
	struct wb_fh fh, dfh;
	char got[4096], want[4096];

	hold_block_release("relayed", &fh, &dfh);
	CU_ASSERT_EQUAL_FATAL(wait_record_line(1, got, sizeof(got)), 0);
	want_line(&fh, "granted", want, sizeof(want));
	CU_ASSERT_STRING_EQUAL(got, want);
	CU_ASSERT_EQUAL(wait_metric(RELAYED, 1), 1);
	CU_ASSERT_EQUAL(wb_metric(REFUSED), 0);
	CU_ASSERT_EQUAL(wb_metric(UNREACHABLE), 0);
	CU_ASSERT_EQUAL(wb_metric(FOREIGN), 0);
	/* Held upstream for W: another owner is refused, directly. */
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	/* H's record went with its UNLOCK; W's is the one left. */
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
}

/* The mode fake_lockd reads (GRANTED_MODE) set to m, replaced whole by
 * a rename: fake_lockd polls the file, and a truncate-then-write would
 * let it read an empty mode (answer "granted") in between. */
static void set_mode(const char *m)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", getenv("GRANTED_MODE"));
	f = fopen(tmp, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(m, f);
	CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
	CU_ASSERT_EQUAL_FATAL(rename(tmp, getenv("GRANTED_MODE")), 0);
}

/* (b) W's lock manager answers DENIED (no longer waiting): the upstream
 * is told NLM4_DENIED and releases the range; no record stays. */
static void test_refused(void)
{
	struct wb_fh fh, dfh;
	char got[4096], want[4096];

	set_mode("deny\n");
	hold_block_release("refused", &fh, &dfh);
	CU_ASSERT_EQUAL_FATAL(wait_record_line(2, got, sizeof(got)), 0);
	want_line(&fh, "denied", want, sizeof(want));
	CU_ASSERT_STRING_EQUAL(got, want);
	CU_ASSERT_EQUAL(wait_metric(REFUSED, 1), 1);
	CU_ASSERT_EQUAL(wait_direct_test(&dfh, NLM4_GRANTED), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric(RELAYED), 1);
	CU_ASSERT_EQUAL(wb_metric(UNREACHABLE), 0);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
}

/* A GRANTED (procedure 5, answered in its reply) of [0, 10) of upstream
 * handle dfh for owner oh[0..oh_len), sent to the proxy from this host
 * (the export's upstream address, 127.0.0.1): its answer, or -1. */
static int granted_call(const struct wb_fh *dfh, const uint8_t *oh,
			size_t oh_len)
{
	nlm4_testargs a;

	memset(&a, 0, sizeof(a));
	a.exclusive = TRUE;
	a.alock.caller_name = unconst("127.0.0.1");
	a.alock.fh.nlm4_netobj_len = dfh->len;
	a.alock.fh.nlm4_netobj_val = unconst(dfh->data);
	a.alock.oh.nlm4_netobj_len = (u_int)oh_len;
	a.alock.oh.nlm4_netobj_val = unconst(oh);
	a.alock.svid = W_SVID;
	a.alock.l_offset = 0;
	a.alock.l_len = 10;
	return nlm_res_call(C.fd, NLMPROC4_GRANTED,
			    (xdrproc_t)xdr_nlm4_testargs, &a);
}

/* W's owner as the proxy wraps it for export 1 (proto/nlm_owner.h's
 * layout, written out here): "NCO1", the export id, family 4 and W's
 * address, its caller name's length (big-endian) and bytes, its own oh.
 * Its length. */
static size_t wrap_w(uint8_t *out)
{
	const char *caller = getenv("GRANTED_PEER_IP");
	size_t cl = strlen(caller), n = 0;

	memcpy(out, "NCO1", 4);
	out[4] = 1;
	out[5] = 4;
	CU_ASSERT_FATAL(inet_pton(AF_INET, caller, out + 6) == 1);
	out[10] = (uint8_t)(cl >> 8);
	out[11] = (uint8_t)cl;
	memcpy(out + 12, caller, cl);
	n = 12 + cl;
	memcpy(out + n, W_OH, strlen(W_OH));
	return n + strlen(W_OH);
}

/* The synchronous GRANTED (Ganesha sends GRANTED_MSG): answered GRANTED
 * in its reply once W's lock manager took it, with W's own fields and the
 * client handle; an owner the proxy did not wrap is NLM4_DENIED at once,
 * counted foreign, and reaches no one. */
static void test_sync(void)
{
	struct wb_fh fh, dfh;
	char got[4096], want[4096];
	uint8_t oh[512];
	size_t n;

	set_mode("");		/* empty: answer GRANTED */
	make_file("sync", &fh, &dfh);
	n = wrap_w(oh);
	CU_ASSERT_EQUAL(granted_call(&dfh, oh, n), NLM4_GRANTED);
	CU_ASSERT_EQUAL_FATAL(wait_record_line(3, got, sizeof(got)), 0);
	want_line(&fh, "granted", want, sizeof(want));
	CU_ASSERT_STRING_EQUAL(got, want);
	CU_ASSERT_EQUAL(wb_metric(RELAYED), 2);
	/* Recorded under W, as a granted LOCK is. */
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 2);
	CU_ASSERT_EQUAL(granted_call(&dfh, (const uint8_t *)W_OH,
				     strlen(W_OH)), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric(FOREIGN), 1);
	CU_ASSERT_EQUAL(wb_metric(RELAYED), 2);
}

#define POLLED "nfscached_nlm_granted_total{result=\"polled\"}"


/* GRANTED as granted_call sends it, its answer read later
 * (granted_answer): 0, or -1 (not sent). */
static int granted_send(const struct wb_fh *dfh, const uint8_t *oh,
			size_t oh_len, uint32_t xid)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_buf b;
	nlm4_testargs a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.exclusive = TRUE;
	a.alock.caller_name = unconst("127.0.0.1");
	a.alock.fh.nlm4_netobj_len = dfh->len;
	a.alock.fh.nlm4_netobj_val = unconst(dfh->data);
	a.alock.oh.nlm4_netobj_len = (u_int)oh_len;
	a.alock.oh.nlm4_netobj_val = unconst(oh);
	a.alock.svid = W_SVID;
	a.alock.l_offset = 0;
	a.alock.l_len = 10;
	rawrpc_buf_init(&b);
	rawrpc_put_call(&b, xid, NLM_PROG, NLM4_VERS, NLMPROC4_GRANTED, &cred);
	rawrpc_put_xdr(&b, (xdrproc_t)xdr_nlm4_testargs, &a);
	rc = rawrpc_send_record(C.fd, b.data, b.len);
	rawrpc_buf_free(&b);
	return rc;
}

/* The answer to granted_send's call xid (waiting 120 s at most, a bound
 * for a hang): its status, or -1. */
static int granted_answer(uint32_t xid)
{
	struct rawrpc_reply rep;
	nlm4_res res;
	uint8_t *rec = NULL;
	size_t len = 0;
	int st = -1;

	memset(&res, 0, sizeof(res));
	if (rawrpc_recv_record(C.fd, 120000, &rec, &len) == RAWRPC_OK &&
	    rawrpc_parse_reply(rec, len, &rep) == 0 && rep.xid == xid &&
	    rep.stat == MSG_ACCEPTED && rep.accept == SUCCESS &&
	    rawrpc_decode(rec, len, rep.res_off, (xdrproc_t)xdr_nlm4_res,
			  &res) == 0) {
		st = (int)res.stat.stat;
		xdr_free((xdrproc_t)xdr_nlm4_res, (char *)&res);
	}
	free(rec);
	return st;
}

/* The file fake_lockd makes once it holds a GRANTED (mode "hold"),
 * waited for (120 s at most): 0, or -1. */
static int wait_held(void)
{
	char held[4096];

	snprintf(held, sizeof(held), "%s.held", getenv("GRANTED_MODE"));
	for (int i = 0; i < 2400; i++) {
		if (access(held, F_OK) == 0)
			return 0;
		usleep(50 * 1000);
	}
	return -1;
}

/* (d) W holds the lock by its own LOCK (its lock manager polls a blocked
 * lock) before the callback comes, or while the relay waits at its lock
 * manager: the lock manager's refusal ("no such wait") must not release
 * it. The upstream hears GRANTED, the record stays, counted polled; the
 * range stays held upstream (Ganesha directly). Without the check, both
 * are answered DENIED and the records removed. */
static void test_polled(void)
{
	struct wb_fh fh, dfh, fh2, dfh2;
	uint8_t oh[512];
	size_t n = wrap_w(oh);
	double held0 = wb_metric("nfscached_nlm_locks_held");
	uint32_t xid = rawrpc_xid();

	set_mode("deny\n");
	/* Before: W's own LOCK granted, then the callback. */
	make_file("polled", &fh, &dfh);
	CU_ASSERT_EQUAL_FATAL(waiter_lock(&fh), NLM4_GRANTED);
	CU_ASSERT_EQUAL(granted_call(&dfh, oh, n), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric(POLLED), 1);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), held0 + 1);
	/* During: the relay waits at W's lock manager while W's LOCK is
	 * granted; then W's lock manager refuses. */
	set_mode("hold\n");
	make_file("polled2", &fh2, &dfh2);
	CU_ASSERT_EQUAL_FATAL(granted_send(&dfh2, oh, n, xid), 0);
	CU_ASSERT_EQUAL_FATAL(wait_held(), 0);
	CU_ASSERT_EQUAL(waiter_lock(&fh2), NLM4_GRANTED);
	set_mode("deny\n");
	CU_ASSERT_EQUAL(granted_answer(xid), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric(POLLED), 2);
	CU_ASSERT_EQUAL(direct_test(&dfh2), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), held0 + 2);
	CU_ASSERT_EQUAL(wb_metric(REFUSED), 1);
	CU_ASSERT_EQUAL(wb_metric(RELAYED), 2);
	CU_ASSERT_EQUAL(wb_metric(UNREACHABLE), 0);
}

/* (c) W's lock manager is gone (test_nlm_granted.sh killed it): the
 * GRANTED finds no one, the upstream releases the range. */
static void test_unreachable(void)
{
	struct wb_fh fh, dfh;

	hold_block_release("unreachable", &fh, &dfh);
	CU_ASSERT_EQUAL(wait_metric(UNREACHABLE, 1), 1);
	CU_ASSERT_EQUAL(wait_direct_test(&dfh, NLM4_GRANTED), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric(RELAYED), 2);
	CU_ASSERT_EQUAL(wb_metric(REFUSED), 1);
	CU_ASSERT_EQUAL(wb_metric(FOREIGN), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 4);
	CU_ASSERT_EQUAL(wb_metric(POLLED), 2);
	/* What the earlier cases relayed (3), the msg suite's _RES calls
	 * (5) and polled's two GRANTEDs, and nothing since. */
	CU_ASSERT_EQUAL(record_lines(), 10);
}

/* Suite msg: a client's asynchronous calls, sent from the namespace (W's
 * address and caller name), answered by _RES calls to its lock manager;
 * run after granted sync (record lines 4..8 theirs, 2 locks held before)
 * and, msg unreachable, after granted unreachable. */
#define O_SVID 78
#define O_OH "78@other"
#define SENT "nfscached_nlm_msg_res_total{result=\"sent\"}"
#define MSG_UNREACHABLE "nfscached_nlm_msg_res_total{result=\"unreachable\"}"

/* text s as lowercase hex into out (2 strlen(s) + 1 bytes). */
static void text_hex(const char *s, char *out)
{
	for (size_t i = 0; s[i]; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)s[i]);
	out[2 * strlen(s)] = '\0';
}

/* The _MSG call proc of [0, 10) of file (made or rewritten) by svid/oh
 * with cookie, from the namespace; fh and dfh its handles. Its empty
 * reply must come. */
static void msg_call(const char *file, uint32_t proc, int svid,
		     const char *oh, const char *cookie, struct wb_fh *fh,
		     struct wb_fh *dfh)
{
	char what[32], tail[64];

	make_file(file, fh, dfh);
	snprintf(what, sizeof(what), "msg %u", proc);
	snprintf(tail, sizeof(tail), " %s", cookie);
	CU_ASSERT_EQUAL_FATAL(ns_call(what, fh, svid, oh, tail), 0);
}

/* Record line n must come and be name's for cookie and stat, with rest
 * (a TEST_RES's holder, or "") after them: the proxy's caller name as the
 * AUTH_UNIX machine, uid 0. */
static void want_res(int n, const char *name, const char *cookie, int stat,
		     const char *rest)
{
	char got[4096], want[4096], hc[64];

	text_hex(cookie, hc);
	snprintf(want, sizeof(want), "%s machine=127.0.0.1 uid=0 cookie=%s "
		 "stat=%d%s\n", name, hc, stat, rest);
	CU_ASSERT_EQUAL_FATAL(wait_record_line(n, got, sizeof(got)), 0);
	CU_ASSERT_STRING_EQUAL(got, want);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "record line %d: %swanted: %s", n, got, want);
}

/* TEST_MSG of a free range: TEST_RES granted with W's cookie. */
static void test_msg_test(void)
{
	struct wb_fh fh, dfh;

	msg_call("msg", NLMPROC4_TEST_MSG, W_SVID, W_OH, "t1", &fh, &dfh);
	want_res(4, "TEST_RES", "t1", NLM4_GRANTED, "");
	CU_ASSERT_EQUAL(wait_metric(SENT, 1), 1);
	CU_ASSERT_EQUAL(wb_metric(MSG_UNREACHABLE), 0);
}

/* LOCK_MSG: LOCK_RES granted; held upstream (directly) and recorded. */
static void test_msg_lock(void)
{
	struct wb_fh fh, dfh;

	msg_call("msg", NLMPROC4_LOCK_MSG, W_SVID, W_OH, "l1", &fh, &dfh);
	want_res(5, "LOCK_RES", "l1", NLM4_GRANTED, "");
	CU_ASSERT_EQUAL(wait_metric(SENT, 2), 2);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 3);
}

/* Mode nores: W's lock manager sends no reply to a _RES call (a
 * message; FreeBSD's and illumos's send none). The LOCK_RES granted it
 * got counts as delivered once the call times out (upstream_timeout 5 s
 * here), and the lock stays held upstream: W believes it holds it. */
static void test_msg_lock_nores(void)
{
	struct wb_fh fh, dfh;

	msg_call("msg", NLMPROC4_LOCK_MSG, W_SVID, W_OH, "l1", &fh, &dfh);
	want_res(1, "LOCK_RES", "l1", NLM4_GRANTED, "");
	CU_ASSERT_EQUAL(wait_metric(SENT, 1), 1);
	CU_ASSERT_EQUAL(wb_metric(MSG_UNREACHABLE), 0);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_released_total"), 0);
}

/* TEST_MSG of another owner: TEST_RES denied, W's lock shown by W's own
 * owner, svid and range. */
static void test_msg_test_denied(void)
{
	struct wb_fh fh, dfh;
	char oh[2 * sizeof(W_OH) + 1], rest[256];

	msg_call("msg", NLMPROC4_TEST_MSG, O_SVID, O_OH, "t2", &fh, &dfh);
	text_hex(W_OH, oh);
	snprintf(rest, sizeof(rest), " excl=1 svid=%d off=0 len=10 oh=%s",
		 W_SVID, oh);
	want_res(6, "TEST_RES", "t2", NLM4_DENIED, rest);
	CU_ASSERT_EQUAL(wait_metric(SENT, 3), 3);
}

/* UNLOCK_MSG: UNLOCK_RES granted, the range free upstream, the record
 * gone. */
static void test_msg_unlock(void)
{
	struct wb_fh fh, dfh;

	msg_call("msg", NLMPROC4_UNLOCK_MSG, W_SVID, W_OH, "u1", &fh, &dfh);
	want_res(7, "UNLOCK_RES", "u1", NLM4_GRANTED, "");
	CU_ASSERT_EQUAL(wait_metric(SENT, 4), 4);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 2);
}

/* CANCEL_MSG of a lock nobody waits for: CANCEL_RES with the upstream's
 * answer (Ganesha 4.3's to a CANCEL that finds no blocked lock:
 * NLM4_GRANTED, as Linux's nlmsvc_cancel_blocked answers). */
static void test_msg_cancel(void)
{
	struct wb_fh fh, dfh;

	msg_call("msg", NLMPROC4_CANCEL_MSG, W_SVID, W_OH, "c1", &fh, &dfh);
	want_res(8, "CANCEL_RES", "c1", NLM4_GRANTED, "");
	CU_ASSERT_EQUAL(wait_metric(SENT, 5), 5);
	CU_ASSERT_EQUAL(wb_metric(MSG_UNREACHABLE), 0);
}

/* W's lock manager is gone: a LOCK_MSG's LOCK_RES (granted) finds no
 * one, so the lock is unlocked upstream and its record dropped. */
static void test_msg_unreachable(void)
{
	struct wb_fh fh, dfh;

	msg_call("msgun", NLMPROC4_LOCK_MSG, W_SVID, W_OH, "l2", &fh, &dfh);
	CU_ASSERT_EQUAL(wait_metric(MSG_UNREACHABLE, 1), 1);
	CU_ASSERT_EQUAL(wait_direct_test(&dfh, NLM4_GRANTED), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 4);
	CU_ASSERT_EQUAL(wb_metric(SENT), 5);
	CU_ASSERT_EQUAL(record_lines(), 10);
}

/* The upstream's statd tells this host's statd that the upstream
 * (127.0.0.1, the export's URL host) rebooted with state: SM_NOTIFY sent
 * from 127.0.0.1, as the file server's sm-notify would. 0, or -1. */
static int upstream_sm_notify(int state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	sm_stat_chge chg = { .mon_name = unconst("127.0.0.1"), .state = state };
	unsigned short port;
	int fd, rc = -1;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	a.sin_port = htons(111);
	port = pmap_getport(&a, SM_PROG, SM_VERS, IPPROTO_TCP);
	if (port == 0)
		return -1;
	a.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    rawrpc_call(fd, rawrpc_xid(), SM_PROG, SM_VERS, SM_NOTIFY, &cred,
			(xdrproc_t)xdr_sm_stat_chge, &chg, NULL, NULL,
			&rep) == RAWRPC_OK && rep.accept == SUCCESS)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Point NLM v4 in this host's rpcbind at the proxy again (TCP and UDP,
 * its NFS port), as its own registration did: the restarted Ganesha
 * registered its lock manager over it, and statd calls back whoever
 * holds that mapping. On separate hosts the file server's restart does
 * not touch the proxy host's rpcbind. True when both were set. */
static bool nlm_mapping_to_proxy(void)
{
	unsigned short port =
		(unsigned short)rawrpc_env_port("NFSC_PROXY_NFS_PORT");

	pmap_unset(NLM_PROG, NLM4_VERS);
	return pmap_set(NLM_PROG, NLM4_VERS, IPPROTO_TCP, port) &&
	       pmap_set(NLM_PROG, NLM4_VERS, IPPROTO_UDP, port);
}

/* Ask the host's statd to watch the upstream (127.0.0.1) for the
 * proxy again, as the proxy did (its callback: NLM v4 procedure 16 of
 * 127.0.0.1). Here the restarted Ganesha shares the proxy's statd and,
 * starting, unmonitors everything of its lock manager's identity (SM_UNMON_ALL of
 * its host name, which resolves to 127.0.0.1, with NLM's callback), the
 * proxy's watches with it; a file server on its own host has its own
 * statd. True when statd agreed. */
static bool rewatch_upstream(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	sm_mon m;
	sm_stat_res res;
	unsigned short port;
	int fd;
	bool ok = false;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	a.sin_port = htons(111);
	port = pmap_getport(&a, SM_PROG, SM_VERS, IPPROTO_TCP);
	if (port == 0)
		return false;
	a.sin_port = htons(port);
	memset(&m, 0, sizeof(m));
	memset(&res, 0, sizeof(res));
	m.mon_id.mon_name = unconst("127.0.0.1");
	m.mon_id.my_id.my_name = unconst("127.0.0.1");
	m.mon_id.my_id.my_prog = NLM_PROG;
	m.mon_id.my_id.my_vers = NLM4_VERS;
	m.mon_id.my_id.my_proc = NLMPROC4_SM_NOTIFY;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    rawrpc_call(fd, rawrpc_xid(), SM_PROG, SM_VERS, SM_MON, &cred,
			(xdrproc_t)xdr_sm_mon, &m, (xdrproc_t)xdr_sm_stat_res,
			&res, &rep) == RAWRPC_OK && rep.accept == SUCCESS)
		ok = res.res_stat == STAT_SUCC;
	if (fd >= 0)
		close(fd);
	return ok;
}

#define NOTIFIED "nfscached_nlm_clients_notified_total{result=\"notified\"}"
#define NOTIFY_UNREACHABLE \
	"nfscached_nlm_clients_notified_total{result=\"unreachable\"}"

/* Suite upreboot: W holds a lock through the proxy; the upstream
 * restarts (its lock manager forgets it) and its reboot reaches the
 * proxy through the host's statd; the proxy forgets the lock and sends
 * W's statd one SM_NOTIFY naming the proxy by the address W reaches it
 * at, with an odd state; W's reclaim reaches the restarted upstream. */
static void test_upreboot_notify(void)
{
	char want[256], line[512];
	struct wb_fh fh, dfh;
	char cmd[4200];

	make_file("upreboot", &fh, &dfh);
	CU_ASSERT_EQUAL_FATAL(waiter_lock(&fh), NLM4_GRANTED);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
	/* W and the upstream watched. */
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_monitors_total", 2), 2);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_monitor_failures_total"), 0);

	/* The upstream restarts: its lock manager holds nothing now. */
	snprintf(cmd, sizeof(cmd), "'%s' restart", getenv("NFSC_UPSTREAMCTL"));
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	CU_ASSERT_EQUAL(wait_direct_test(&dfh, NLM4_GRANTED), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_upstream_reboots_total"), 0);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
	CU_ASSERT_TRUE_FATAL(nlm_mapping_to_proxy());
	CU_ASSERT_TRUE_FATAL(rewatch_upstream());

	/* The host's statd outlives tests and ignores a state it last saw
	 * for that host: a new odd one each run. */
	CU_ASSERT_EQUAL_FATAL(upstream_sm_notify(
		(int)(((unsigned)time(NULL) % 100000000u) * 2u + 1u)), 0);
	CU_ASSERT_EQUAL(wait_metric(NOTIFIED, 1), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_upstream_reboots_total"), 1);
	CU_ASSERT_EQUAL(wb_metric(NOTIFY_UNREACHABLE), 0);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 0);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_clients"), 0);
	/* No UNLOCK was sent for the lost lock: nothing released. */
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_released_total"), 0);
	/* Exactly one SM_NOTIFY: the proxy as W reaches it (this host's end
	 * of the veth pair), state 3 (the first after a fresh state_dir's
	 * 1: odd). */
	snprintf(want, sizeof(want), "SM_NOTIFY mon_name=%s state=3\n",
		 getenv("GRANTED_HOST_IP"));
	CU_ASSERT_EQUAL_FATAL(wait_record_line(1, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, want);
	CU_ASSERT_EQUAL(record_lines(), 1);

	/* W's lockd reclaims: the LOCK with reclaim = TRUE reaches the
	 * restarted lock manager (on a new connection: the proxy's kept one
	 * died with the old Ganesha) and gets its answer. This harness's
	 * Ganesha runs Graceless (no grace period), so it refuses a reclaim
	 * as any server outside its grace period does:
	 * NLM4_DENIED_GRACE_PERIOD, the range left free. A new LOCK then
	 * takes it. */
	CU_ASSERT_EQUAL(waiter_lock_as(&fh, "reclaim"), NLM4_DENIED_GRACE_PERIOD);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_GRANTED);
	CU_ASSERT_EQUAL(waiter_lock(&fh), NLM4_GRANTED);
	CU_ASSERT_EQUAL(direct_test(&dfh), NLM4_DENIED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_failures_total"), 0);
}

static int suite_init(void)
{
	if (wb_open(&C, "proxy", 0, 0) != 0)
		return -1;
	return wb_open(&D, "direct", 0, 0) == 0 ? 0 : -1;
}

static int suite_clean(void)
{
	wb_close(&C);
	wb_close(&D);
	return 0;
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("granted", suite_init, suite_clean);
	CU_pSuite u = CU_add_suite("upreboot", suite_init, suite_clean);
	CU_pSuite m = CU_add_suite("msg", suite_init, suite_clean);

	return s && u && m && CU_add_test(u, "notify", test_upreboot_notify) &&
	       CU_add_test(s, "relayed", test_relayed) &&
	       CU_add_test(s, "refused", test_refused) &&
	       CU_add_test(s, "sync", test_sync) &&
	       CU_add_test(s, "polled", test_polled) &&
	       CU_add_test(s, "unreachable", test_unreachable) &&
	       CU_add_test(m, "test", test_msg_test) &&
	       CU_add_test(m, "lock", test_msg_lock) &&
	       CU_add_test(m, "lock_nores", test_msg_lock_nores) &&
	       CU_add_test(m, "test_denied", test_msg_test_denied) &&
	       CU_add_test(m, "unlock", test_msg_unlock) &&
	       CU_add_test(m, "cancel", test_msg_cancel) &&
	       CU_add_test(m, "unreachable", test_msg_unreachable) ? 0 : -1;
}
