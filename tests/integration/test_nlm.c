/* SPDX-License-Identifier: MIT */
/*
 * test_nlm: NLM v4 through the proxy to a real lock manager (NFS-Ganesha
 * with Enable_NLM, and an rpc.statd, started by the harness's
 * --ganesha-nlm), seen from the wire.
 *
 * Two "clients" are two callers with the same address, the same svid
 * and the same owner handle (each lock manager numbers its own
 * processes: such a collision is normal), told apart only by their
 * caller names: the proxy must keep them apart upstream. Witnesses: the
 * NLM replies (status, the TEST holder mapped back to the holder's own
 * owner), the file on the upstream's disk (NFSC_EXPORT_DIR) when an
 * UNLOCK returns, and /metrics (nfscached_upstream_rpcs_total by
 * procedure, nfscached_nlm_*).
 *
 * The proxy runs with writeback_delay and the attribute timeouts an hour
 * long (nlm_export.conf, nlm_proxy.conf), so that only the lock calls
 * can explain bytes reaching the upstream and a changed file being read
 * anew.
 *
 * Suite nlm_reboot (integration.nlm_reboot: the proxy registers NLM with
 * the host's rpcbind, over TCP and UDP, as a lock manager must for the
 * status monitor to call it back): clients named by addresses (statd
 * resolves no other name here) take locks; the proxy has the host's
 * rpc.statd watch each; an SM_NOTIFY sent to that statd from the
 * "rebooted" client's address makes statd call the proxy back, and the
 * proxy releases that client's locks upstream and no other's. FREE_ALL
 * does the same for the client that sends it, from its own address only.
 * Suite nlm_reboot_restart does it across a SIGKILL of the proxy (its
 * held-lock table kept in state_dir).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rpc/pmap_clnt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "nlm4_prot.h"
#include "rawrpc.h"
#include "tcheck.h"
#include "wbtest_util.h"

#define EXPECT(ok, ...) tcheck((ok), __FILE__, __LINE__, __VA_ARGS__)

static struct wb_conn C;

/* One client's lock owner. */
struct owner {
	const char *caller;
	int svid;
	const char *oh;
};

static const struct owner A = { "client-a.test", 4242, "4242@host" };
static const struct owner B = { "client-b.test", 4242, "4242@host" };

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

static nlm4_netobj cookie(void)
{
	static char c[4] = { 'c', 'k', '0', '1' };

	return (nlm4_netobj){ .nlm4_netobj_len = 4, .nlm4_netobj_val = c };
}

/* One NLM call with a nlm4_res result: its status, or -1. */
static int nlm_res_call(uint32_t proc, xdrproc_t xargs, const void *args)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_res res;
	int st = -1;

	memset(&res, 0, sizeof(res));
	if (rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, proc, &cred,
			xargs, args, (xdrproc_t)xdr_nlm4_res, &res,
			&rep) == RAWRPC_OK &&
	    rep.stat == MSG_ACCEPTED && rep.accept == SUCCESS) {
		st = (int)res.stat.stat;
		EXPECT(res.cookie.nlm4_netobj_len == 4 &&
		       memcmp(res.cookie.nlm4_netobj_val, "ck01", 4) == 0,
		       "the reply carries the call's cookie");
	}
	xdr_free((xdrproc_t)xdr_nlm4_res, (char *)&res);
	return st;
}

static int do_lock(const struct owner *o, const struct wb_fh *fh,
		   bool exclusive, uint64_t off, uint64_t len)
{
	nlm4_lockargs a;

	memset(&a, 0, sizeof(a));
	a.cookie = cookie();
	a.block = FALSE;
	a.exclusive = exclusive;
	a.state = 1;
	lock_fill(&a.alock, o, fh, off, len);
	return nlm_res_call(NLMPROC4_LOCK, (xdrproc_t)xdr_nlm4_lockargs, &a);
}

static int do_unlock(const struct owner *o, const struct wb_fh *fh,
		     uint64_t off, uint64_t len)
{
	nlm4_unlockargs a;

	memset(&a, 0, sizeof(a));
	a.cookie = cookie();
	lock_fill(&a.alock, o, fh, off, len);
	return nlm_res_call(NLMPROC4_UNLOCK, (xdrproc_t)xdr_nlm4_unlockargs,
			    &a);
}

/* TEST; on NLM4_DENIED *h gets the holder (its oh copied into ohbuf). */
static int do_test(const struct owner *o, const struct wb_fh *fh,
		   bool exclusive, uint64_t off, uint64_t len,
		   nlm4_holder *h, char *ohbuf, size_t ohmax)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_testargs a;
	nlm4_testres res;
	int st = -1;

	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.cookie = cookie();
	a.exclusive = exclusive;
	lock_fill(&a.alock, o, fh, off, len);
	if (rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, NLMPROC4_TEST,
			&cred, (xdrproc_t)xdr_nlm4_testargs, &a,
			(xdrproc_t)xdr_nlm4_testres, &res,
			&rep) == RAWRPC_OK &&
	    rep.stat == MSG_ACCEPTED && rep.accept == SUCCESS) {
		st = (int)res.test_stat.stat;
		if (st == NLM4_DENIED && h) {
			*h = res.test_stat.nlm4_testrply_u.holder;
			snprintf(ohbuf, ohmax, "%.*s",
				 (int)h->oh.nlm4_netobj_len,
				 h->oh.nlm4_netobj_val);
			h->oh.nlm4_netobj_val = NULL;
		}
	}
	xdr_free((xdrproc_t)xdr_nlm4_testres, (char *)&res);
	return st;
}

/* Make name in the export with content text, and look it up through the
 * proxy. */
static void make_file(const char *name, const char *text, struct wb_fh *fh)
{
	char path[4096];
	FILE *f;
	fattr3 at;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&C, &C.root, name, fh, &at), NFS3_OK);
}

/* The upstream file's first len bytes into buf (NUL-terminated). */
static void disk_read(const char *name, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static int suite_init(void)
{
	return wb_open(&C, "proxy", 0, 0) == 0 ? 0 : -1;
}

static int suite_clean(void)
{
	wb_close(&C);
	return 0;
}

/* Two owners alike but for their caller names: one's exclusive lock
 * denies the other's, TEST names the holder by its own owner, and the
 * range is the other's once unlocked. */
static void test_owners_kept_apart(void)
{
	struct wb_fh fh;
	nlm4_holder h;
	char oh[256];
	double fwd = wb_metric("nfscached_nlm_forwarded_total");

	make_file("owners", "0123456789", &fh);
	CU_ASSERT_EQUAL(do_lock(&A, &fh, true, 0, 100), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 50, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_test(&B, &fh, false, 0, 10, &h, oh, sizeof(oh)),
			NLM4_DENIED);
	CU_ASSERT_EQUAL(h.svid, A.svid);
	CU_ASSERT_STRING_EQUAL(oh, A.oh);	/* mapped back */
	CU_ASSERT_EQUAL(h.l_offset, 0);
	CU_ASSERT_EQUAL(h.l_len, 100);
	CU_ASSERT_TRUE(h.exclusive);
	/* The holder's own TEST finds no conflict. */
	CU_ASSERT_EQUAL(do_test(&A, &fh, true, 0, 10, NULL, NULL, 0),
			NLM4_GRANTED);
	/* Outside A's range B locks. */
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 200, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 100), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_test(&A, &fh, true, 0, 0, &h, oh, sizeof(oh)),
			NLM4_DENIED);
	CU_ASSERT_STRING_EQUAL(oh, B.oh);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 0, 0), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_test(&A, &fh, true, 0, 0, NULL, NULL, 0),
			NLM4_GRANTED);
	/* 10 calls, every one forwarded. */
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_forwarded_total") - fwd, 10);
	/* Shared locks share. */
	CU_ASSERT_EQUAL(do_lock(&A, &fh, false, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, false, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 0, 10), NLM4_GRANTED);
}

/* Bytes written through the proxy are on the upstream's disk when the
 * UNLOCK returns, and not before (write-back waits an hour). */
static void test_unlock_writes_back(void)
{
	struct wb_fh fh;
	struct wb_wres w;
	char buf[64];
	double writes = wb_metric("nfscached_upstream_rpcs_total{procedure=\"write\"}");
	double commits = wb_metric("nfscached_upstream_rpcs_total{procedure=\"commit\"}");

	make_file("flushed", "..........", &fh);
	CU_ASSERT_EQUAL(do_lock(&A, &fh, true, 0, 0), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_write(&C, &fh, 0, "hello", 5, UNSTABLE, &w), NFS3_OK);
	CU_ASSERT_EQUAL(wb_metric("nfscached_upstream_rpcs_total{procedure=\"write\"}"),
			writes);
	disk_read("flushed", buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "..........");
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 0), NLM4_GRANTED);
	disk_read("flushed", buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "hello.....");
	CU_ASSERT_EQUAL(wb_metric("nfscached_upstream_rpcs_total{procedure=\"write\"}") - writes, 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_upstream_rpcs_total{procedure=\"commit\"}") - commits, 1);
}

/* A file changed upstream while the proxy held its data (attributes
 * cached for an hour): READ still gives the old bytes, but once a LOCK is
 * granted the proxy has asked upstream and READ gives the new ones. */
static void test_lock_revalidates(void)
{
	struct wb_fh fh;
	char buf[64], path[4096];
	uint32_t count;
	bool eof;
	FILE *f;
	double reval = wb_metric("nfscached_nlm_revalidations_total");

	make_file("changed", "old-bytes!", &fh);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(wb_read(&C, &fh, 0, 10, buf, &count, &eof), NFS3_OK);
	CU_ASSERT_STRING_EQUAL(buf, "old-bytes!");
	snprintf(path, sizeof(path), "%s/changed", getenv("NFSC_EXPORT_DIR"));
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("new-bytes-longer", f);
	fclose(f);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(wb_read(&C, &fh, 0, 10, buf, &count, &eof), NFS3_OK);
	CU_ASSERT_STRING_EQUAL(buf, "old-bytes!");	/* cached, as set */
	CU_ASSERT_EQUAL(do_lock(&A, &fh, false, 0, 0), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_revalidations_total") - reval, 1);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(wb_read(&C, &fh, 0, 16, buf, &count, &eof), NFS3_OK);
	CU_ASSERT_STRING_EQUAL(buf, "new-bytes-longer");
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 0), NLM4_GRANTED);
}

/* SHARE or UNSHARE of fh by owner o: the reply's status, or -1. */
static int do_share_on(int fd, uint32_t proc, const struct owner *o,
		       const struct wb_fh *fh, fsh4_mode mode,
		       fsh4_access access)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_shareargs a;
	nlm4_shareres res;
	int st = -1;

	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.cookie = cookie();
	a.share.caller_name = unconst(o->caller);
	a.share.fh.nlm4_netobj_len = fh->len;
	a.share.fh.nlm4_netobj_val = unconst(fh->data);
	a.share.oh.nlm4_netobj_len = (u_int)strlen(o->oh);
	a.share.oh.nlm4_netobj_val = unconst(o->oh);
	a.share.mode = mode;
	a.share.access = access;
	if (rawrpc_call(fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, proc, &cred,
			(xdrproc_t)xdr_nlm4_shareargs, &a,
			(xdrproc_t)xdr_nlm4_shareres, &res,
			&rep) == RAWRPC_OK && rep.accept == SUCCESS)
		st = (int)res.stat;
	xdr_free((xdrproc_t)xdr_nlm4_shareres, (char *)&res);
	return st;
}

/* DOS share reservations go upstream with the owners kept apart, and
 * answer as Ganesha's lock manager answers the same calls directly (the
 * control: its NLM port, the upstream handle, the same owners). */
static void test_shares(void)
{
	static const struct {
		uint32_t proc;
		const struct owner *o;
		fsh4_mode mode;
		fsh4_access access;
		int want;	/* the answer both must give; -2: whatever the
				 * control gives */
	} seq[] = {
		{ NLMPROC4_SHARE, &A, fsm_DW, fsa_R, NLM4_GRANTED },
		{ NLMPROC4_SHARE, &B, fsm_DN, fsa_W, NLM4_DENIED },
		{ NLMPROC4_SHARE, &B, fsm_DN, fsa_R, NLM4_GRANTED },
		{ NLMPROC4_UNSHARE, &B, fsm_DN, fsa_R, NLM4_GRANTED },
		{ NLMPROC4_UNSHARE, &A, fsm_DW, fsa_R, NLM4_GRANTED },
		{ NLMPROC4_SHARE, &B, fsm_DN, fsa_W, -2 },
		{ NLMPROC4_UNSHARE, &B, fsm_DN, fsa_W, -2 },
	};
	struct wb_conn D;
	struct wb_fh fh, dfh;
	fattr3 at;
	int dfd;

	make_file("shares", "0123456789", &fh);
	make_file("shares-direct", "0123456789", &dfh);
	CU_ASSERT_EQUAL_FATAL(wb_open(&D, "direct", 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, "shares-direct", &dfh,
					&at), NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&C, &C.root, "shares", &fh, &at),
			      NFS3_OK);
	dfd = rawrpc_connect(rawrpc_env_port("NFSC_DIRECT_NLM_PORT"));
	CU_ASSERT_FATAL(dfd >= 0);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		int p = do_share_on(C.fd, seq[i].proc, seq[i].o, &fh,
				    seq[i].mode, seq[i].access);
		int d = do_share_on(dfd, seq[i].proc, seq[i].o, &dfh,
				    seq[i].mode, seq[i].access);

		fprintf(stderr, "nlm: share step %zu: proxy %d, direct %d\n",
			i, p, d);
		CU_ASSERT_EQUAL(p, d);
		if (seq[i].want != -2)
			CU_ASSERT_EQUAL(p, seq[i].want);
	}
	close(dfd);
	wb_close(&D);
}

/* A handle that does not check is NLM4_STALE_FH, asked of no one. */
static void test_bad_handle(void)
{
	struct wb_fh fh = { .len = 32 };
	double fwd = wb_metric("nfscached_nlm_forwarded_total");
	double refused = wb_metric("nfscached_nlm_refused_total");

	memset(fh.data, 0x5a, fh.len);
	CU_ASSERT_EQUAL(do_lock(&A, &fh, true, 0, 1), NLM4_STALE_FH);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_forwarded_total"), fwd);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_refused_total") - refused, 1);
}

/* NULL answers; an unused procedure is PROC_UNAVAIL; NLM v1 is
 * PROG_MISMATCH 4..4. */
static void test_rpc_level(void)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;

	CU_ASSERT_EQUAL(rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, 0,
				    &cred, NULL, NULL, NULL, NULL, &rep),
			RAWRPC_OK);
	CU_ASSERT_EQUAL(rep.accept, SUCCESS);
	CU_ASSERT_EQUAL(rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, 17,
				    &cred, NULL, NULL, NULL, NULL, &rep),
			RAWRPC_OK);
	CU_ASSERT_EQUAL(rep.accept, PROC_UNAVAIL);
	CU_ASSERT_EQUAL(rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, 1, 0, &cred,
				    NULL, NULL, NULL, NULL, &rep),
			RAWRPC_OK);
	CU_ASSERT_EQUAL(rep.accept, PROG_MISMATCH);
}

/* A TCP connection from src (an address of 127.0.0.0/8) to
 * 127.0.0.1:port, or -1. */
static int connect_from(const char *src, unsigned short port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, src, &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		goto fail;
	a.sin_port = htons(port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		goto fail;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Wait (a bound for a hang, not a speed goal: 120 s) until metric
 * series reaches want; its last value. */
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

static const struct owner RA = { "127.0.0.3", 1001, "1001@ra" };
static const struct owner RB = { "127.0.0.4", 1001, "1001@rb" };
static const struct owner RC = { "127.0.0.5", 1001, "1001@rc" };

/* A FREE_ALL of name, sent from address src. */
static void free_all_from(const char *src, const char *name)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm4_notify a = { .name = unconst(name), .state = 5 };
	int fd = connect_from(src, rawrpc_env_port("NFSC_PROXY_NFS_PORT"));

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rawrpc_call(fd, rawrpc_xid(), NLM_PROG, NLM4_VERS,
				    NLMPROC4_FREE_ALL, &cred,
				    (xdrproc_t)xdr_nlm4_notify, &a, NULL, NULL,
				    &rep), RAWRPC_OK);
	CU_ASSERT_EQUAL(rep.accept, SUCCESS);
	close(fd);
}

static void test_reboot_releases_that_client(void)
{
	struct sockaddr_in pm = { .sin_family = AF_INET,
				  .sin_port = htons(111) };
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	sm_stat_chge chg = { .mon_name = unconst(RA.caller), .state = 3 };
	struct wb_fh fh;
	nlm4_holder h;
	char oh[256];
	unsigned short sm_port;
	int fd;

	make_file("reboot", "0123456789", &fh);
	CU_ASSERT_EQUAL(do_lock(&RA, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&RA, &fh, true, 100, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&RB, &fh, true, 50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 3);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_clients"), 2);
	/* statd agreed to watch both, and the upstream (127.0.0.1) at the
	 * first lock on it (asked off the loop, after GRANTED). */
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_monitors_total", 3), 3);
	CU_ASSERT_EQUAL(do_lock(&RC, &fh, true, 0, 10), NLM4_DENIED);

	/* RA "reboots": its statd's SM_NOTIFY, from its address. */
	inet_pton(AF_INET, "127.0.0.1", &pm.sin_addr);
	sm_port = pmap_getport(&pm, SM_PROG, SM_VERS, IPPROTO_TCP);
	CU_ASSERT_FATAL(sm_port != 0);
	fd = connect_from(RA.caller, sm_port);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rawrpc_call(fd, rawrpc_xid(), SM_PROG, SM_VERS,
				    SM_NOTIFY, &cred,
				    (xdrproc_t)xdr_sm_stat_chge, &chg, NULL,
				    NULL, &rep), RAWRPC_OK);
	close(fd);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total", 2), 2);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_client_reboots_total"), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
	/* RA's ranges are free upstream, RB's is not. */
	CU_ASSERT_EQUAL(do_lock(&RC, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&RC, &fh, true, 100, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_test(&RC, &fh, true, 50, 10, &h, oh, sizeof(oh)),
			NLM4_DENIED);
	CU_ASSERT_STRING_EQUAL(oh, RB.oh);

	/* A FREE_ALL naming RC from another address frees nothing; RB's
	 * own frees its lock. */
	free_all_from("127.0.0.9", RC.caller);
	CU_ASSERT_EQUAL(do_test(&RB, &fh, true, 0, 10, NULL, NULL, 0),
			NLM4_DENIED);
	free_all_from("127.0.0.1", RB.caller);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total", 3), 3);
	CU_ASSERT_EQUAL(do_lock(&RC, &fh, true, 50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&RC, &fh, 0, 0), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 0);
}

/* Suite nlm_restart (test_nlm_restart.sh): a lock taken before the
 * proxy's SIGKILL is still held upstream after its restart, in its
 * owner's name, and its owner's UNLOCK through the new process frees it. */
static void test_restart_before(void)
{
	struct wb_fh fh;

	make_file("restart", "0123456789", &fh);
	CU_ASSERT_EQUAL(do_lock(&A, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_DENIED);
}

static void test_restart_after(void)
{
	struct wb_fh fh;
	fattr3 at;
	nlm4_holder h;
	char oh[256];

	CU_ASSERT_EQUAL_FATAL(wb_lookup(&C, &C.root, "restart", &fh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_test(&B, &fh, true, 0, 10, &h, oh, sizeof(oh)),
			NLM4_DENIED);
	CU_ASSERT_STRING_EQUAL(oh, A.oh);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 0, 10), NLM4_GRANTED);
}

/* Suite nlm_reboot_restart (test_nlm_reboot_restart.sh): the proxy's
 * held-lock table outlives a SIGKILL (state_dir's nlm.mdb). Before it,
 * RA and RB lock; after the restart the table is loaded, both watched
 * again, and RA's reboot (its SM_NOTIFY to the host's statd, which calls
 * the new proxy back) releases RA's lock upstream and not RB's. The
 * upstream's own view is the witness: a TEST sent to Ganesha's lock
 * manager directly (its NLM port, the upstream handle). */
#define RR_FILE "reboot-restart"

/* A TEST of [off, off + len), exclusive, as RC, sent to Ganesha's lock
 * manager directly: its status, or -1. */
static int direct_test(uint64_t off, uint64_t len)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	struct wb_conn D;
	struct wb_fh dfh;
	nlm4_testargs a;
	nlm4_testres res;
	fattr3 at;
	int fd, st = -1;

	CU_ASSERT_EQUAL_FATAL(wb_open(&D, "direct", 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, RR_FILE, &dfh, &at),
			      NFS3_OK);
	fd = rawrpc_connect(rawrpc_env_port("NFSC_DIRECT_NLM_PORT"));
	CU_ASSERT_FATAL(fd >= 0);
	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.cookie = cookie();
	a.exclusive = TRUE;
	lock_fill(&a.alock, &RC, &dfh, off, len);
	if (rawrpc_call(fd, rawrpc_xid(), NLM_PROG, NLM4_VERS, NLMPROC4_TEST,
			&cred, (xdrproc_t)xdr_nlm4_testargs, &a,
			(xdrproc_t)xdr_nlm4_testres, &res,
			&rep) == RAWRPC_OK && rep.accept == SUCCESS)
		st = (int)res.test_stat.stat;
	xdr_free((xdrproc_t)xdr_nlm4_testres, (char *)&res);
	close(fd);
	wb_close(&D);
	return st;
}

/* Client o "reboots": its statd's SM_NOTIFY to the host's statd, sent
 * from its address (its caller name is one). */
static void sm_notify_from(const struct owner *o, int state)
{
	struct sockaddr_in pm = { .sin_family = AF_INET,
				  .sin_port = htons(111) };
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	sm_stat_chge chg = { .mon_name = unconst(o->caller), .state = state };
	unsigned short sm_port;
	int fd;

	inet_pton(AF_INET, "127.0.0.1", &pm.sin_addr);
	sm_port = pmap_getport(&pm, SM_PROG, SM_VERS, IPPROTO_TCP);
	CU_ASSERT_FATAL(sm_port != 0);
	fd = connect_from(o->caller, sm_port);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rawrpc_call(fd, rawrpc_xid(), SM_PROG, SM_VERS,
				    SM_NOTIFY, &cred,
				    (xdrproc_t)xdr_sm_stat_chge, &chg, NULL,
				    NULL, &rep), RAWRPC_OK);
	close(fd);
}

static void test_reboot_restart_before(void)
{
	struct wb_fh fh;

	make_file(RR_FILE, "0123456789", &fh);
	CU_ASSERT_EQUAL(do_lock(&RA, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&RB, &fh, true, 50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 2);
	/* RA, RB and the upstream (127.0.0.1). */
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_monitors_total", 3), 3);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_store_failures_total"), 0);
	CU_ASSERT_EQUAL(direct_test(0, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(direct_test(50, 10), NLM4_DENIED);
}

static void test_reboot_restart_after(void)
{
	struct wb_fh fh;
	fattr3 at;

	/* The table of before the SIGKILL, its clients and the export's
	 * upstream watched again. */
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_restored_total"), 2);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 2);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_clients"), 2);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_store_resets_total"), 0);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_monitors_total", 3), 3);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_monitor_failures_total"), 0);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_released_total"), 0);
	CU_ASSERT_EQUAL(direct_test(0, 10), NLM4_DENIED);

	sm_notify_from(&RA, 7);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total", 1), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_client_reboots_total"), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 1);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_clients"), 1);
	/* Upstream: RA's range is free, RB's is not. */
	CU_ASSERT_EQUAL(direct_test(0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(direct_test(50, 10), NLM4_DENIED);

	CU_ASSERT_EQUAL_FATAL(wb_lookup(&C, &C.root, RR_FILE, &fh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL(do_unlock(&RB, &fh, 50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_locks_held"), 0);
	CU_ASSERT_EQUAL(direct_test(50, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_store_failures_total"), 0);
}

/* The statd callback (procedure 16) over TCP from a port above 1023 is
 * refused: only the local statd, from a privileged port, may say a
 * client rebooted. */
static void test_sm_notify_needs_statd(void)
{
	struct wb_fh fh;
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	nlm_sm_status a;
	double refused = wb_metric("nfscached_nlm_refused_total");

	make_file("forged-reboot", "0123456789", &fh);
	CU_ASSERT_EQUAL(do_lock(&A, &fh, true, 0, 10), NLM4_GRANTED);
	memset(&a, 0, sizeof(a));
	a.mon_name = unconst(A.caller);
	a.state = 3;
	CU_ASSERT_EQUAL(rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG, NLM4_VERS,
				    NLMPROC4_SM_NOTIFY, &cred,
				    (xdrproc_t)xdr_nlm_sm_status, &a, NULL,
				    NULL, &rep), RAWRPC_OK);
	CU_ASSERT_EQUAL(rep.accept, PROC_UNAVAIL);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_refused_total") - refused, 1);
	/* A's lock is still held. */
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 10), NLM4_GRANTED);
}

/* Ganesha's pid (its pid file in the harness's directory). */
static int ganesha_pid(void)
{
	char path[4096];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/ganesha/ganesha.pid",
		 getenv("NFSC_TMP"));
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(fscanf(f, "%d", &pid), 1);
	fclose(f);
	return pid;
}

/* o's LOCK of [off, off + len) of fh sent while Ganesha (pid) is stopped,
 * then Ganesha continued: the LOCK's answer (NLM4_DENIED_NOLOCKS after
 * upstream_timeout); its upstream call is still waited for. */
static int lock_while_stopped(int pid, const struct owner *o,
			      const struct wb_fh *fh, bool exclusive,
			      uint64_t off, uint64_t len)
{
	int st;

	CU_ASSERT_EQUAL_FATAL(kill(pid, SIGSTOP), 0);
	st = do_lock(o, fh, exclusive, off, len);
	CU_ASSERT_EQUAL_FATAL(kill(pid, SIGCONT), 0);
	return st;
}

/* Suite nlm_lost (integration.nlm_lost, upstream_timeout 5 s): a LOCK
 * the upstream did not answer in time is refused to its client
 * (NLM4_DENIED_NOLOCKS) and, once the upstream answers again, unlocked
 * there, so the range is free for the next client. Ganesha is stopped
 * (SIGSTOP) while the LOCK waits and continued at once after its
 * refusal; the UNLOCK waits for it. */
static void test_lost_lock_unlocked(void)
{
	struct wb_fh fh;
	double released = wb_metric("nfscached_nlm_released_total");

	make_file("lost", "0123456789", &fh);
	CU_ASSERT_EQUAL(lock_while_stopped(ganesha_pid(), &A, &fh, true, 0, 10),
			NLM4_DENIED_NOLOCKS);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total",
				    released + 1), released + 1);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 0, 10), NLM4_GRANTED);
}

/* B's TEST (exclusive or shared) of [off, off + len) of fh until it
 * answers want (at most 120 s, a bound for a hang): the last answer. */
static int wait_test(const struct wb_fh *fh, bool exclusive, uint64_t off,
		     uint64_t len, int want)
{
	int st = -1;

	for (int i = 0; i < 2400; i++) {
		st = do_test(&B, fh, exclusive, off, len, NULL, NULL, 0);
		if (st == want)
			break;
		usleep(50 * 1000);
	}
	return st;
}

/* A LOCK refused for want of an answer (the upstream stopped) and granted
 * late over a range its owner already holds part of: undoing the late
 * grant leaves what A held as it was (POSIX: a failed lock request
 * changes none of the owner's locks). An exclusive [0, 100) over A's
 * exclusive [0, 10): only [10, 100) is unlocked. A shared [0, 100) over
 * A's exclusive [200, 210): [200, 210) is exclusive again (the late grant
 * made it shared) and the rest unlocked. Before the fix the UNLOCK of the
 * whole range freed A's [0, 10) for B while A held it. */
static void test_lost_lock_keeps_held(void)
{
	int pid = ganesha_pid();
	struct wb_fh fh;
	double released = wb_metric("nfscached_nlm_released_total");

	make_file("lost-held", "0123456789", &fh);
	CU_ASSERT_EQUAL_FATAL(do_lock(&A, &fh, true, 0, 10), NLM4_GRANTED);
	CU_ASSERT_EQUAL(lock_while_stopped(pid, &A, &fh, true, 0, 100),
			NLM4_DENIED_NOLOCKS);
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total",
				    released + 1), released + 1);
	CU_ASSERT_EQUAL(do_test(&B, &fh, true, 0, 10, NULL, NULL, 0),
			NLM4_DENIED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 0, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 10, 90), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 10, 90), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 0, 10), NLM4_GRANTED);

	CU_ASSERT_EQUAL_FATAL(do_lock(&A, &fh, true, 200, 10), NLM4_GRANTED);
	released = wb_metric("nfscached_nlm_released_total");
	CU_ASSERT_EQUAL(lock_while_stopped(pid, &A, &fh, false, 150, 100),
			NLM4_DENIED_NOLOCKS);
	/* [150, 200) and [210, 250) unlocked, [200, 210) locked again. */
	CU_ASSERT_EQUAL(wait_metric("nfscached_nlm_released_total",
				    released + 2), released + 2);
	/* A shared TEST: denied once [200, 210) is exclusive again. */
	CU_ASSERT_EQUAL(wait_test(&fh, false, 200, 10, NLM4_DENIED),
			NLM4_DENIED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, false, 200, 10), NLM4_DENIED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 150, 50), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_lock(&B, &fh, true, 210, 40), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&B, &fh, 150, 100), NLM4_GRANTED);
	CU_ASSERT_EQUAL(do_unlock(&A, &fh, 200, 10), NLM4_GRANTED);
}

/* Suite nlm_off (integration.nlm_off, nlm = false): every NLM call is
 * PROG_UNAVAIL, whatever its version, procedure or arguments (before,
 * an unknown procedure got PROC_UNAVAIL and a procedure with empty
 * arguments GARBAGE_ARGS); NFS is served beside it. */
static void test_off_prog_unavail(void)
{
	static const uint32_t calls[][2] = {
		{ NLM4_VERS, 0 }, { NLM4_VERS, NLMPROC4_TEST },
		{ NLM4_VERS, NLMPROC4_LOCK }, { NLM4_VERS, NLMPROC4_FREE_ALL },
		{ NLM4_VERS, 99 }, { 1, 1 }, { 3, 20 }, { 5, 0 },
	};
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	struct wb_fh fh;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		memset(&rep, 0, sizeof(rep));
		CU_ASSERT_EQUAL_FATAL(rawrpc_call(C.fd, rawrpc_xid(), NLM_PROG,
						  calls[i][0], calls[i][1],
						  &cred, NULL, NULL, NULL,
						  NULL, &rep),
				      RAWRPC_OK);
		CU_ASSERT_EQUAL(rep.stat, MSG_ACCEPTED);
		CU_ASSERT_EQUAL(rep.accept, PROG_UNAVAIL);
	}
	make_file("off", "0123456789", &fh);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nlm_forwarded_total"), 0);
}

int test_register(void)
{
	CU_pSuite off = CU_add_suite("nlm_off", suite_init, suite_clean);

	if (off == NULL ||
	    CU_add_test(off, "prog_unavail", test_off_prog_unavail) == NULL)
		return -1;

	CU_pSuite lost = CU_add_suite("nlm_lost", suite_init, suite_clean);

	if (lost == NULL ||
	    CU_add_test(lost, "lost_lock_unlocked",
			test_lost_lock_unlocked) == NULL ||
	    CU_add_test(lost, "lost_lock_keeps_held",
			test_lost_lock_keeps_held) == NULL)
		return -1;

	CU_pSuite rs = CU_add_suite("nlm_restart", suite_init, suite_clean);

	if (rs == NULL ||
	    CU_add_test(rs, "before", test_restart_before) == NULL ||
	    CU_add_test(rs, "after", test_restart_after) == NULL)
		return -1;

	CU_pSuite rr = CU_add_suite("nlm_reboot_restart", suite_init,
				    suite_clean);

	if (rr == NULL ||
	    CU_add_test(rr, "before", test_reboot_restart_before) == NULL ||
	    CU_add_test(rr, "after", test_reboot_restart_after) == NULL)
		return -1;

	CU_pSuite r = CU_add_suite("nlm_reboot", suite_init, suite_clean);
	CU_pSuite s = CU_add_suite("nlm", suite_init, suite_clean);

	if (r == NULL ||
	    CU_add_test(r, "releases_that_client",
			test_reboot_releases_that_client) == NULL)
		return -1;

	if (s == NULL ||
	    CU_add_test(s, "rpc_level", test_rpc_level) == NULL ||
	    CU_add_test(s, "owners_kept_apart", test_owners_kept_apart) == NULL ||
	    CU_add_test(s, "unlock_writes_back", test_unlock_writes_back) == NULL ||
	    CU_add_test(s, "lock_revalidates", test_lock_revalidates) == NULL ||
	    CU_add_test(s, "shares", test_shares) == NULL ||
	    CU_add_test(s, "sm_notify_needs_statd",
			test_sm_notify_needs_statd) == NULL ||
	    CU_add_test(s, "bad_handle", test_bad_handle) == NULL)
		return -1;
	return 0;
}
