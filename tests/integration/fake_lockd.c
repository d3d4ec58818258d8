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
 *       file MODE holds "deny", else NLM4_GRANTED. READY is created once
 *       the registration is made. Also a client's status monitor: NSM
 *       v1 over TCP, registered there too, answering NULL and SM_NOTIFY
 *       (procedure 6), each SM_NOTIFY appended to RECORD as
 *       "SM_NOTIFY mon_name=M state=S". Runs until killed.
 *
 *   fake_lockd lock ADDR PORT FH CALLER SVID OH OFF LEN [reclaim]
 *       a client's blocking LOCK (block = TRUE, exclusive; with
 *       "reclaim", reclaim = TRUE as after the server's reboot) of FH (hex) by
 *       owner OH (text), SVID, CALLER, over [OFF, OFF + LEN), sent to
 *       ADDR:PORT (the proxy) as AUTH_UNIX root of machine CALLER; prints
 *       the nlm4_stats answered and exits 0, or exits 1 with no answer.
 *
 * A record line: "GRANTED machine=M uid=U caller=C excl=E svid=S off=O
 * len=L oh=HEX fh=HEX answer=granted|denied".
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

/* Whether MODE says to refuse. */
static bool mode_deny(void)
{
	char buf[16] = "";
	FILE *f = fopen(S.mode, "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strncmp(buf, "deny", 4) == 0;
}

/* Append GRANTED's arguments a, called with rq's credential, to RECORD. */
static void record(struct svc_req *rq, const nlm4_testargs *a, bool deny)
{
	char oh[2 * MAXNETOBJ_SZ + 1], fh[2 * MAXNETOBJ_SZ + 1], line[8192];
	const char *machine = "-";
	unsigned uid = (unsigned)-1;
	int fd, n;

	if (rq->rq_cred.oa_flavor == AUTH_SYS && rq->rq_clntcred) {
		const struct authunix_parms *p = rq->rq_clntcred;

		machine = p->aup_machname;
		uid = (unsigned)p->aup_uid;
	}
	hex(a->alock.oh.nlm4_netobj_val, a->alock.oh.nlm4_netobj_len, oh);
	hex(a->alock.fh.nlm4_netobj_val, a->alock.fh.nlm4_netobj_len, fh);
	n = snprintf(line, sizeof(line),
		     "GRANTED machine=%s uid=%u caller=%s excl=%d svid=%d "
		     "off=%llu len=%llu oh=%s fh=%s answer=%s\n", machine, uid,
		     a->alock.caller_name, (int)a->exclusive, a->alock.svid,
		     (unsigned long long)a->alock.l_offset,
		     (unsigned long long)a->alock.l_len, oh, fh,
		     deny ? "denied" : "granted");
	fd = open(S.record, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		fprintf(stderr, "fake_lockd: cannot append to %s: %s\n",
			S.record, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* XDR of no data (NULL's arguments and result). */
static bool_t xdr_nothing(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return TRUE;
}

/* The NLM v4 program's dispatch: NULL and GRANTED. */
static void dispatch(struct svc_req *rq, SVCXPRT *xprt)
{
	nlm4_testargs a;
	nlm4_res res;
	bool deny;

	if (rq->rq_proc == NLMPROC4_NULL) {
		svc_sendreply(xprt, (xdrproc_t)xdr_nothing, NULL);
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
	deny = mode_deny();
	record(rq, &a, deny);
	memset(&res, 0, sizeof(res));
	res.cookie = a.cookie;
	res.stat.stat = deny ? NLM4_DENIED : NLM4_GRANTED;
	svc_sendreply(xprt, (xdrproc_t)xdr_nlm4_res, (char *)&res);
	svc_freeargs(xprt, (xdrproc_t)xdr_nlm4_testargs, (char *)&a);
}

/* Append line to RECORD. */
static void append(const char *line, size_t n)
{
	int fd = open(S.record, O_WRONLY | O_APPEND | O_CREAT, 0644);

	if (fd < 0 || write(fd, line, n) != (ssize_t)n)
		fprintf(stderr, "fake_lockd: cannot append to %s: %s\n",
			S.record, strerror(errno));
	if (fd >= 0)
		close(fd);
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

static int lock(char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct timeval tv = { 60, 0 };
	unsigned char fh[MAXNETOBJ_SZ];
	char cookie[] = "w1";
	int sock = RPC_ANYSOCK, fhlen, rc = 0;
	nlm4_lockargs a;
	nlm4_res res;
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
	a.cookie.nlm4_netobj_len = 2;
	a.block = TRUE;
	a.reclaim = argv[8] && strcmp(argv[8], "reclaim") == 0;
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
	if (clnt_call(c, NLMPROC4_LOCK, (xdrproc_t)xdr_nlm4_lockargs,
		      (char *)&a, (xdrproc_t)xdr_nlm4_res, (char *)&res,
		      tv) != RPC_SUCCESS) {
		clnt_perror(c, "fake_lockd: lock");
		rc = 1;
	} else {
		printf("%d\n", (int)res.stat.stat);
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
	if ((argc == 10 || argc == 11) && strcmp(argv[1], "lock") == 0)
		return lock(argv + 2);
	fprintf(stderr, "usage: fake_lockd serve RECORD MODE READY\n"
			"       fake_lockd lock ADDR PORT FH CALLER SVID OH OFF "
			"LEN [reclaim]\n");
	return 2;
}
