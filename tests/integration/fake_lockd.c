/* SPDX-License-Identifier: MIT */
/*
 * fake_lockd: the two sides of a client host for integration.nlm_granted
 * (test_nlm_granted.sh), run inside that test's network namespace:
 *
 *   fake_lockd serve RECORD MODE READY
 *       a client's lock manager: NLM v4 over TCP (libtirpc svc),
 *       registered with the rpcbind it can reach (the namespace's own),
 *       answering NULL and GRANTED (procedure 5). Each GRANTED is appended
 *       to RECORD as one line (below), then answered NLM4_DENIED when the
 *       file MODE holds "deny", else NLM4_GRANTED; while MODE holds
 *       "hold", a GRANTED waits unanswered (MODE.held made). TEST_RES, LOCK_RES,
 *       CANCEL_RES and UNLOCK_RES (11..14, the answers to the _MSG calls
 *       below) are appended too and answered (void). READY is created
 *       once the registration is made. Also a client's status monitor:
 *       NSM v1 over TCP, registered there too, answering NULL and
 *       SM_NOTIFY (procedure 6), each SM_NOTIFY appended to RECORD as
 *       "SM_NOTIFY mon_name=M state=S". Runs until killed.
 *
 *   fake_lockd lock ADDR PORT FH CALLER SVID OH OFF LEN [reclaim]
 *       a client's blocking LOCK (block = TRUE, exclusive; with
 *       "reclaim", reclaim = TRUE as after the server's reboot) of FH (hex) by
 *       owner OH (text), SVID, CALLER, over [OFF, OFF + LEN), sent to
 *       ADDR:PORT (the proxy) as AUTH_UNIX root of machine CALLER; prints
 *       the nlm4_stats answered and exits 0, or exits 1 with no answer.
 *
 *   fake_lockd msg PROC ADDR PORT FH CALLER SVID OH OFF LEN COOKIE
 *       a client's asynchronous call PROC (6 TEST_MSG, 7 LOCK_MSG (not
 *       blocking), 8 CANCEL_MSG, 9 UNLOCK_MSG; exclusive) of FH by OH as
 *       lock does, with cookie COOKIE (text); prints 0 once its (empty)
 *       reply came and exits 0, or exits 1.
 *
 * Record lines: "GRANTED machine=M uid=U caller=C excl=E svid=S off=O
 * len=L oh=HEX fh=HEX answer=granted|denied"; "TEST_RES machine=M uid=U
 * cookie=HEX stat=N", followed by " excl=E svid=S off=O len=L oh=HEX"
 * (the holder) when N is 1 (NLM4_DENIED); "LOCK_RES|CANCEL_RES|
 * UNLOCK_RES machine=M uid=U cookie=HEX stat=N".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rpc/pmap_clnt.h>
#include <rpc/rpc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nlm4_prot.h"

/* The files serve was given. */
struct served {
	const char *record;
	const char *mode;
};

/* The process's one server's files (svc's dispatch has no argument). */
static struct served S;

/* p[0..n) as lowercase hex into out (2n + 1 bytes). */
static void hex(const void *p, size_t n, char *out)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

/* Whether MODE's first line starts with word. */
static bool mode_is(const char *word)
{
	char buf[16] = "";
	FILE *f = fopen(S.mode, "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strncmp(buf, word, strlen(word)) == 0;
}

/* Whether MODE says to refuse. */
static bool mode_deny(void)
{
	return mode_is("deny");
}

/* MODE "hold": a GRANTED is held unanswered (a lock manager behind a
 * firewall, or slow) until the test writes another mode; MODE.held is
 * made once it is, so the test knows the call arrived. */
static void hold_while_asked(void)
{
	char held[4096];
	const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
	FILE *f;

	if (!mode_is("hold"))
		return;
	snprintf(held, sizeof(held), "%s.held", S.mode);
	f = fopen(held, "w");
	if (f)
		fclose(f);
	while (mode_is("hold"))
		nanosleep(&tick, NULL);
}

/* XDR of no data (NULL's arguments and result). */
static bool_t xdr_nothing(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

/* rq's AUTH_SYS machine name and uid into *machine, *uid ("-" and -1
 * for another flavour). */
static void caller_of(struct svc_req *rq, const char **machine, unsigned *uid)
{
	*machine = "-";
	*uid = (unsigned)-1;
	if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred) {
		const struct authunix_parms *p = rq->rq_clntcred;

		*machine = p->aup_machname;
		*uid = (unsigned)p->aup_uid;
	}
}

/* Append line[0..n) to RECORD. */
static void append(const char *line, size_t n)
{
	int fd = open(S.record, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd < 0 || write(fd, line, n) != (ssize_t)n)
		fprintf(stderr, "fake_lockd: cannot append to %s: %s\n",
			S.record, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* Append GRANTED's arguments a, called with rq's credential, to RECORD. */
static void record(struct svc_req *rq, const nlm4_testargs *a, bool deny)
{
	char oh[2 * MAXNETOBJ_SZ + 1], fh[2 * MAXNETOBJ_SZ + 1], line[8192];
	const char *machine;
	unsigned uid;

	caller_of(rq, &machine, &uid);
	hex(a->alock.oh.nlm4_netobj_val, a->alock.oh.nlm4_netobj_len, oh);
	hex(a->alock.fh.nlm4_netobj_val, a->alock.fh.nlm4_netobj_len, fh);
	append(line, (size_t)snprintf(line, sizeof(line),
		     "GRANTED machine=%s uid=%u caller=%s excl=%d svid=%d "
		     "off=%llu len=%llu oh=%s fh=%s answer=%s\n", machine, uid,
		     a->alock.caller_name, (int)a->exclusive, a->alock.svid,
		     (unsigned long long)a->alock.l_offset,
		     (unsigned long long)a->alock.l_len, oh, fh,
		     deny ? "denied" : "granted"));
}

/* A _RES call (11..14): decoded, appended to RECORD, answered. */
static void record_res(struct svc_req *rq, SVCXPRT *xprt)
{
	static const char *const names[] = { "TEST_RES", "LOCK_RES",
					     "CANCEL_RES", "UNLOCK_RES" };
	char cookie[2 * MAXNETOBJ_SZ + 1], oh[2 * MAXNETOBJ_SZ + 1];
	char line[8192];
	const char *machine;
	unsigned uid;
	bool test = rq->rq_proc == NLMPROC4_TEST_RES;
	xdrproc_t x = test ? (xdrproc_t)xdr_nlm4_testres :
			     (xdrproc_t)xdr_nlm4_res;
	union { nlm4_testres t; nlm4_res r; } a;
	int n;

	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xprt, x, (char *)&a)) {
		svcerr_decode(xprt);
		return;
	}
	caller_of(rq, &machine, &uid);
	/* Both results start with the cookie, then the stat. */
	hex(a.r.cookie.nlm4_netobj_val, a.r.cookie.nlm4_netobj_len, cookie);
	n = snprintf(line, sizeof(line), "%s machine=%s uid=%u cookie=%s "
		     "stat=%d", names[rq->rq_proc - NLMPROC4_TEST_RES],
		     machine, uid, cookie, test ? (int)a.t.test_stat.stat :
						  (int)a.r.stat.stat);
	if (test && a.t.test_stat.stat == NLM4_DENIED) {
		const nlm4_holder *h = &a.t.test_stat.nlm4_testrply_u.holder;

		hex(h->oh.nlm4_netobj_val, h->oh.nlm4_netobj_len, oh);
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      " excl=%d svid=%d off=%llu len=%llu oh=%s",
			      (int)h->exclusive, h->svid,
			      (unsigned long long)h->l_offset,
			      (unsigned long long)h->l_len, oh);
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	append(line, (size_t)n);
	/* FAKE_LOCKD_NO_RES_REPLY: no reply, as FreeBSD's and illumos's lock
	 * managers send none to a _RES (a message). */
	if (!getenv("FAKE_LOCKD_NO_RES_REPLY"))
		svc_sendreply(xprt, (xdrproc_t)xdr_nothing, NULL);
	svc_freeargs(xprt, x, (char *)&a);
}

/* The NLM v4 program's dispatch: NULL, GRANTED and the _RES calls. */
static void dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	nlm4_testargs a;
	nlm4_res res;
	bool deny;

	if (rq->rq_proc == NLMPROC4_NULL) {
		svc_sendreply(xprt, (xdrproc_t)xdr_nothing, NULL);
		return;
	}
	if (rq->rq_proc >= NLMPROC4_TEST_RES &&
	    rq->rq_proc <= NLMPROC4_UNLOCK_RES) {
		record_res(rq, xprt);
		return;
	}
	if (rq->rq_proc != NLMPROC4_GRANTED) {
		svcerr_noproc(xprt);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xprt, (xdrproc_t)xdr_nlm4_testargs, (char *)&a)) {
		svcerr_decode(xprt);
		return;
	}
	hold_while_asked();
	deny = mode_deny();
	record(rq, &a, deny);
	memset(&res, 0, sizeof(res));
	res.cookie = a.cookie;
	res.stat.stat = deny ? NLM4_DENIED : NLM4_GRANTED;
	svc_sendreply(xprt, (xdrproc_t)xdr_nlm4_res, (char *)&res);
	svc_freeargs(xprt, (xdrproc_t)xdr_nlm4_testargs, (char *)&a);
}

/* The NSM v1 program's dispatch: NULL and SM_NOTIFY, recorded. */
static void nsm_dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	sm_stat_chge a;
	char line[2048];
	int n;

	if (rq->rq_proc == 0) {
		svc_sendreply(xprt, (xdrproc_t)xdr_nothing, NULL);
		return;
	}
	if (rq->rq_proc != SM_NOTIFY) {
		svcerr_noproc(xprt);
		return;
	}
	memset(&a, 0, sizeof(a));
	if (!svc_getargs(xprt, (xdrproc_t)xdr_sm_stat_chge, (char *)&a)) {
		svcerr_decode(xprt);
		return;
	}
	n = snprintf(line, sizeof(line), "SM_NOTIFY mon_name=%s state=%d\n",
		     a.mon_name, a.state);
	if (n > 0 && (size_t)n < sizeof(line))
		append(line, (size_t)n);
	svc_sendreply(xprt, (xdrproc_t)xdr_nothing, NULL);
	svc_freeargs(xprt, (xdrproc_t)xdr_sm_stat_chge, (char *)&a);
}

static int serve(char **argv)
{
	SVCXPRT *x;
	int fd;

	S.record = argv[0];
	S.mode = argv[1];
	x = svctcp_create(RPC_ANYSOCK, 0, 0);
	if (!x) {
		fprintf(stderr, "fake_lockd: svctcp_create failed\n");
		return 1;
	}
	pmap_unset(NLM_PROG, NLM4_VERS);
	if (!svc_register(x, NLM_PROG, NLM4_VERS, dispatch, IPPROTO_TCP)) {
		fprintf(stderr, "fake_lockd: cannot register NLM v4 with "
			"rpcbind\n");
		return 1;
	}
	pmap_unset(SM_PROG, SM_VERS);
	if (!svc_register(x, SM_PROG, SM_VERS, nsm_dispatch, IPPROTO_TCP)) {
		fprintf(stderr, "fake_lockd: cannot register NSM v1 with "
			"rpcbind\n");
		return 1;
	}
	fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return 1;
	close(fd);
	svc_run();
	return 1;
}

/* hex text s into out (at most max bytes): its length, or -1. */
static int unhex(const char *s, unsigned char *out, size_t max)
{
	size_t n = strlen(s) / 2;

	if (strlen(s) % 2 || n > max)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return (int)n;
}

/* The arguments' XDR routine of LOCK or a _MSG form. */
static xdrproc_t xargs_of(u_long proc)
{
	switch (proc) {
	case NLMPROC4_TEST_MSG:
		return (xdrproc_t)xdr_nlm4_testargs;
	case NLMPROC4_CANCEL_MSG:
		return (xdrproc_t)xdr_nlm4_cancargs;
	case NLMPROC4_UNLOCK_MSG:
		return (xdrproc_t)xdr_nlm4_unlockargs;
	default:
		return (xdrproc_t)xdr_nlm4_lockargs;
	}
}

/* Send proc (LOCK, blocking, or a _MSG form; not blocking) of argv's
 * lock ("ADDR PORT FH CALLER SVID OH OFF LEN", as lock) with cookie to
 * the proxy; print the nlm4_stats answered (0 for a _MSG call's empty
 * reply): 0, or 1 with no answer. */
static int call(char **argv, u_long proc, char *cookie)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct timeval tv = { 60, 0 };
	unsigned char fh[MAXNETOBJ_SZ];
	int sock = RPC_ANYSOCK, fhlen, rc = 0;
	nlm4_lockargs a;	/* the others' fields copied from it */
	nlm4_testargs t;
	nlm4_cancargs k;
	nlm4_unlockargs u;
	nlm4_res res;
	bool msg = proc != NLMPROC4_LOCK;
	CLIENT *c;

	if (inet_pton(AF_INET, argv[0], &sin.sin_addr) != 1 ||
	    (fhlen = unhex(argv[2], fh, sizeof(fh))) <= 0)
		return 1;
	sin.sin_port = htons((unsigned short)atoi(argv[1]));
	c = clnttcp_create(&sin, NLM_PROG, NLM4_VERS, &sock, 0, 0);
	if (!c) {
		clnt_pcreateerror("fake_lockd: lock");
		return 1;
	}
	c->cl_auth = authunix_create(argv[3], 0, 0, 0, NULL);
	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.cookie.nlm4_netobj_val = cookie;
	a.cookie.nlm4_netobj_len = (u_int)strlen(cookie);
	a.block = !msg;
	a.reclaim = !msg && argv[8] && strcmp(argv[8], "reclaim") == 0;
	a.exclusive = TRUE;
	a.state = 1;
	a.alock.caller_name = argv[3];
	a.alock.fh.nlm4_netobj_val = (char *)fh;
	a.alock.fh.nlm4_netobj_len = (u_int)fhlen;
	a.alock.svid = atoi(argv[4]);
	a.alock.oh.nlm4_netobj_val = argv[5];
	a.alock.oh.nlm4_netobj_len = (u_int)strlen(argv[5]);
	a.alock.l_offset = strtoull(argv[6], NULL, 10);
	a.alock.l_len = strtoull(argv[7], NULL, 10);
	t.cookie = u.cookie = k.cookie = a.cookie;
	t.alock = u.alock = k.alock = a.alock;
	t.exclusive = k.exclusive = a.exclusive;
	k.block = a.block;
	if (clnt_call(c, proc, xargs_of(proc),
		      proc == NLMPROC4_TEST_MSG ? (char *)&t :
		      proc == NLMPROC4_CANCEL_MSG ? (char *)&k :
		      proc == NLMPROC4_UNLOCK_MSG ? (char *)&u : (char *)&a,
		      msg ? (xdrproc_t)xdr_nothing : (xdrproc_t)xdr_nlm4_res,
		      (char *)&res, tv) != RPC_SUCCESS) {
		clnt_perror(c, "fake_lockd: lock");
		rc = 1;
	} else {
		printf("%d\n", msg ? 0 : (int)res.stat.stat);
		if (!msg)
			xdr_free((xdrproc_t)xdr_nlm4_res, (char *)&res);
	}
	auth_destroy(c->cl_auth);
	clnt_destroy(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "serve") == 0)
		return serve(argv + 2);
	if ((argc == 10 || argc == 11) && strcmp(argv[1], "lock") == 0) {
		char cookie[] = "w1";

		return call(argv + 2, NLMPROC4_LOCK, cookie);
	}
	if (argc == 12 && strcmp(argv[1], "msg") == 0) {
		u_long proc = strtoul(argv[2], NULL, 10);

		return call(argv + 3, proc, argv[11]);
	}
	fprintf(stderr, "usage: fake_lockd serve RECORD MODE READY\n"
			"       fake_lockd lock ADDR PORT FH CALLER SVID OH OFF "
			"LEN [reclaim]\n"
			"       fake_lockd msg PROC ADDR PORT FH CALLER SVID OH "
			"OFF LEN COOKIE\n");
	return 2;
}
