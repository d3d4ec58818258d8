/* SPDX-License-Identifier: MIT */
/*
 * test_conn_limits: hostile and overloaded clients against the running
 * proxy (issue 20, and issue 21 item 5). Runs under harness.sh with a
 * config extra chosen by NFSC_CONNTEST:
 *
 *   timeouts  (conn_timeouts.conf: record_timeout 60, idle_timeout 120;
 *             the proxy on its test clock, NFSCACHED_TEST_CLOCK=1, which
 *             the test advances instead of waiting)
 *     - 200 connections that send a record mark announcing 1,000 bytes and
 *       10 bytes of it are none closed 10 s (proxy's clock) before
 *       record_timeout after their bytes were sent, and all closed 1 s
 *       after it (the sweep runs every 0.5 s);
 *     - 20 connections trickling a 40-byte record one byte every 5 s (its
 *       mark, then its bytes: legal all along) are closed the same way,
 *       counted from their first byte (trickling never restarts the
 *       clock: the last byte is 5 s before the first check);
 *     - 50 idle connections (25 that made one NULL call, 25 that sent
 *       nothing) are none closed 10 s before idle_timeout after their
 *       last reply (or connect), and all 1 s after it;
 *     and nfscached_connections_closed_total{reason=...} moved by exactly
 *     220 (record_timeout), 50 (idle) and 0 (limit).
 *   limits    (conn_limits.conf: max_connections 50, per client 20)
 *     - from 127.0.0.2 20 connections are served and the 21st refused;
 *       127.0.0.3 gets 20, 127.0.0.4 the 9 that reach 50 with the normal
 *       client; then 5 from 127.0.0.5 are refused (max_connections);
 *       the normal client on its existing connection is served throughout;
 *       closed{reason="limit"} moved by exactly 6.
 *     - strangers (addresses the export's clients, 127.0.0.1/32, do not
 *       list) fill all 50 slots; 5 connections from 127.0.0.1 are each
 *       served (MNT, GETATTR, NULL): each closes the oldest stranger's
 *       connection, closed{reason="not_listed"} moves by exactly 5 and
 *       "limit" by 0, 50 stay open; a further stranger is still refused.
 *   emfile    (default config)
 *     - with the proxy's soft RLIMIT_NOFILE lowered (prlimit(2)) to 5 over
 *       what it holds, 40 connections are opened and held 3 s: accept
 *       fails with EMFILE, the proxy logs at most one "accept on" line per
 *       second (plus 2), burns less than half a CPU, and a connection
 *       opened before the lowering is served all along; with the limit
 *       restored, /metrics answers, counts the accept errors, and new
 *       connections are served.
 *
 * Waits are bounded generously (30 s). The timeout bounds are on the
 * proxy's clock, so they hold however busy the machine is, provided the
 * real time between a connection's bytes and the check 10 s before its
 * timeout stays under those 10 s.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"

#define RECORD_TIMEOUT	60.0	/* conn_timeouts.conf */
#define IDLE_TIMEOUT	120.0
#define EARLY_S		10.0	/* checked this long before a timeout */
#define LATE_S		1.0	/* and this long after (> the sweep, 0.5 s) */
#define TRICKLE_S	5.0	/* proxy's seconds between trickled bytes */
#define STALLED		200
#define TRICKLERS	20
#define IDLERS		50
#define WAIT_MAX_S	30.0

static uint16_t nfs_port;

/* Seconds on the monotonic clock. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connect to the proxy's NFS port from source address src (127.x.y.z). */
static int connect_from(const char *src)
{
	struct sockaddr_in sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	inet_pton(AF_INET, src, &sin.sin_addr);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto fail;
	sin.sin_port = htons(nfs_port);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto fail;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return -1;
}

/* One NFS NULL call on fd; true if answered with SUCCESS. */
static bool null_ok(int fd)
{
	struct rawrpc_reply r;

	return rawrpc_call(fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3, NFSPROC3_NULL,
			   NULL, NULL, NULL, NULL, NULL, &r) == RAWRPC_OK &&
	       r.stat == MSG_ACCEPTED && r.accept == SUCCESS;
}

/* The closed-connections counter for reason. */
static double closed_count(const char *reason)
{
	char series[128];

	snprintf(series, sizeof(series),
		 "nfscached_connections_closed_total{reason=\"%s\"}", reason);
	return rawrpc_metric_now(series);
}

/* Snapshot of the three new reasons. */
struct reasons {
	double record, idle, limit;
};

/* Read the three new reasons' counters. */
static struct reasons reasons_now(void)
{
	struct reasons r = { closed_count("record_timeout"),
			     closed_count("idle"), closed_count("limit") };

	CU_ASSERT(r.record >= 0 && r.idle >= 0 && r.limit >= 0);
	return r;
}

/* True when fd has been closed by the peer (EOF or reset), without waiting. */
static bool peer_closed(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* How many of fd[0..n) the peer has closed (EOF or reset), now. */
static int count_closed(const int *fd, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += peer_closed(fd[i]);
	return k;
}

/*
 * Advance the proxy's test clock by secs and return how many of fd[0..n)
 * it has closed once the timers that fired have run: the advance's timers
 * (the timeout sweep among them) run in the proxy's loop turn after its
 * answer, so by the answer to the /metrics read that follows they have
 * run, and a close(2) on loopback has reached our socket by then.
 */
static int advance_then_count(const int *fd, int n, double secs,
			      struct reasons *now)
{
	if (tclock_advance(secs) != 0)
		return -1;
	*now = reasons_now();
	return count_closed(fd, n);
}

/* Close every fd in a. */
static void close_all(int *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] >= 0)
			close(a[i]);
}

/*
 * The two steps every timeout test takes, on the proxy's clock from the
 * moment the clock started for fd[0..n) (their bytes, or connect): at
 * timeout - EARLY_S none of them is closed and reason has not moved; at
 * timeout + LATE_S all n are, each counted once under reason and none
 * under the other two. The real time a busy machine adds to the first
 * step must stay under EARLY_S, the only real-time assumption.
 */
static void check_closed_at_timeout(const int *fd, int n, double timeout,
				    double already, const char *what)
{
	struct reasons before = reasons_now(), mid, after;
	double *want = !strcmp(what, "idle") ? &after.idle : &after.record;
	double *other = !strcmp(what, "idle") ? &after.record : &after.idle;
	double base_want = !strcmp(what, "idle") ? before.idle : before.record;
	double base_other = !strcmp(what, "idle") ? before.record : before.idle;
	int k0, k;

	k0 = advance_then_count(fd, n, timeout - EARLY_S - already, &mid);
	CU_ASSERT_EQUAL(k0, 0);
	CU_ASSERT_EQUAL(mid.record - before.record, 0);
	CU_ASSERT_EQUAL(mid.idle - before.idle, 0);
	k = advance_then_count(fd, n, EARLY_S + LATE_S, &after);
	fprintf(stderr, "%s: %d of %d closed at the timeout - %.0f s, %d at "
		"the timeout + %.1f s (proxy's clock)\n", what, k0, n, EARLY_S,
		k, LATE_S);
	CU_ASSERT_EQUAL(k, n);
	CU_ASSERT_EQUAL(*want - base_want, n);
	CU_ASSERT_EQUAL(*other - base_other, 0);
	CU_ASSERT_EQUAL(after.limit - before.limit, 0);
}

/* 200 connections stalled 10 bytes into a record of 1,000. */
static void test_stalled_records_close_after_record_timeout(void)
{
	static int fd[STALLED];
	uint8_t part[14] = { 0x80, 0, 0x03, 0xe8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

	for (int i = 0; i < STALLED; i++) {
		fd[i] = rawrpc_connect(nfs_port);
		CU_ASSERT_FATAL(fd[i] >= 0);
	}
	for (int i = 0; i < STALLED; i++)
		CU_ASSERT(rawrpc_send_bytes(fd[i], part, sizeof(part)) == 0);
	check_closed_at_timeout(fd, STALLED, RECORD_TIMEOUT, 0,
				"stalled records");
	close_all(fd, STALLED);
}

/* 20 connections sending one byte of a record every TRICKLE_S of the
 * proxy's clock: trickling never restarts the record's clock. */
static void test_one_byte_a_second_closes_after_record_timeout(void)
{
	static const uint8_t rec[44] = { 0x80, 0, 0, 40 };
	int fd[TRICKLERS];
	double gone = 0;
	struct reasons now;

	for (int i = 0; i < TRICKLERS; i++) {
		fd[i] = rawrpc_connect(nfs_port);
		CU_ASSERT_FATAL(fd[i] >= 0);
		CU_ASSERT(rawrpc_send_bytes(fd[i], rec, 1) == 0);
	}
	/* The rest of the mark of a 40-byte record, then its bytes: a record
	 * that stays legal byte by byte. */
	for (unsigned b = 1; gone + TRICKLE_S < RECORD_TIMEOUT - EARLY_S;
	     b++) {
		CU_ASSERT_EQUAL(advance_then_count(fd, TRICKLERS, TRICKLE_S,
						   &now), 0);
		gone += TRICKLE_S;
		for (int i = 0; i < TRICKLERS; i++)
			CU_ASSERT(rawrpc_send_bytes(fd[i], &rec[b], 1) == 0);
	}
	check_closed_at_timeout(fd, TRICKLERS, RECORD_TIMEOUT, gone,
				"record_timeout");
	close_all(fd, TRICKLERS);
}

/* 50 idle connections: half made one call, half sent nothing. */
static void test_idle_connections_close_after_idle_timeout(void)
{
	int fd[IDLERS];

	for (int i = 0; i < IDLERS; i++) {
		fd[i] = rawrpc_connect(nfs_port);
		CU_ASSERT_FATAL(fd[i] >= 0);
		if (i % 2)
			CU_ASSERT(null_ok(fd[i]));
	}
	check_closed_at_timeout(fd, IDLERS, IDLE_TIMEOUT, 0, "idle");
	close_all(fd, IDLERS);
}

/* Open n connections from src; each must be served (a NULL call). */
static void open_served(const char *src, int *fd, int n)
{
	for (int i = 0; i < n; i++) {
		fd[i] = connect_from(src);
		CU_ASSERT_FATAL(fd[i] >= 0);
		CU_ASSERT(null_ok(fd[i]));
	}
}

/* A connection from src must be refused: closed without an answer. */
static void expect_refused(const char *src)
{
	int fd = connect_from(src);

	CU_ASSERT_FATAL(fd >= 0);
	/* The proxy closes a refused connection at once; a NULL sent now
	 * gets no reply. */
	(void)rawrpc_send_record(fd, "", 0);
	CU_ASSERT_EQUAL(rawrpc_wait_closed(fd, (int)(WAIT_MAX_S * 1000)),
			RAWRPC_CLOSED);
	close(fd);
}

/* max_connections 50, max_connections_per_client 20. */
static void test_connections_past_limits_are_refused(void)
{
	static int a[20], b[20], c[9];
	struct reasons before = reasons_now(), after;
	int normal = connect_from("127.0.0.1");

	CU_ASSERT_FATAL(normal >= 0);
	CU_ASSERT(null_ok(normal));
	open_served("127.0.0.2", a, 20);
	expect_refused("127.0.0.2");		/* per client */
	CU_ASSERT(null_ok(normal));
	open_served("127.0.0.3", b, 20);
	open_served("127.0.0.4", c, 9);		/* 50 open now */
	CU_ASSERT_EQUAL(rawrpc_metric_now("nfscached_connections_open"), 50);
	for (int i = 0; i < 5; i++) {
		expect_refused("127.0.0.5");	/* max_connections */
		CU_ASSERT(null_ok(normal));
	}
	for (int i = 0; i < 20; i++)
		CU_ASSERT(null_ok(a[i]) && null_ok(b[i]));
	after = reasons_now();
	CU_ASSERT_EQUAL(after.limit - before.limit, 6);
	CU_ASSERT_EQUAL(after.record - before.record, 0);
	CU_ASSERT_EQUAL(after.idle - before.idle, 0);
	close_all(a, 20);
	close_all(b, 20);
	close_all(c, 9);
	/* Room again: a new connection from the refused address is served. */
	{
		int fd = -1;
		double t0 = now_s();

		while (now_s() - t0 < WAIT_MAX_S) {
			fd = connect_from("127.0.0.5");
			if (fd >= 0 && null_ok(fd))
				break;
			if (fd >= 0)
				close(fd);
			fd = -1;
			usleep(100 * 1000);
		}
		CU_ASSERT(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	close(normal);
}

/* Wait (WAIT_MAX_S at most) until the proxy has n connections open. */
static bool wait_open(double n)
{
	double t0 = now_s();

	while (now_s() - t0 < WAIT_MAX_S) {
		if (rawrpc_metric_now("nfscached_connections_open") == n)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/* A MNT of /export and a GETATTR of its root on fd both succeed. */
static bool mnt_getattr_ok(int fd)
{
	struct rawrpc_cred cr = rawrpc_cred_sys(0, 0);
	uint8_t root[64];
	size_t root_len = 0;
	GETATTR3args a;
	GETATTR3res res;
	struct rawrpc_reply r;
	bool ok;

	if (rawrpc_mnt(fd, rawrpc_xid(), "/export", root, &root_len) != 0)
		return false;
	a.object.data.data_len = (u_int)root_len;
	a.object.data.data_val = (char *)root;
	memset(&res, 0, sizeof(res));
	ok = rawrpc_call(fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3, NFSPROC3_GETATTR,
			 &cr, (xdrproc_t)xdr_GETATTR3args, &a,
			 (xdrproc_t)xdr_GETATTR3res, &res, &r) == RAWRPC_OK &&
	     res.status == NFS3_OK;
	xdr_free((xdrproc_t)xdr_GETATTR3res, (char *)&res);
	return ok;
}

/* Strangers hold every slot: a listed client still connects and is
 * served, each time in place of the oldest stranger's connection. */
static void test_listed_clients_take_strangers_slots(void)
{
	static int a[20], b[20], c[10], listed[5];
	double nl0, lim0;

	CU_ASSERT_FATAL(wait_open(0));	/* the test before closed its own */
	open_served("127.0.0.2", a, 20);
	open_served("127.0.0.3", b, 20);
	open_served("127.0.0.6", c, 10);
	CU_ASSERT_FATAL(wait_open(50));
	nl0 = closed_count("not_listed");
	lim0 = closed_count("limit");
	for (int i = 0; i < 5; i++) {
		listed[i] = connect_from("127.0.0.1");
		CU_ASSERT_FATAL(listed[i] >= 0);
		CU_ASSERT(mnt_getattr_ok(listed[i]));
		CU_ASSERT(null_ok(listed[i]));
		/* The oldest stranger's connection went for it. */
		CU_ASSERT_EQUAL(rawrpc_wait_closed(a[i], (int)(WAIT_MAX_S * 1000)),
				RAWRPC_CLOSED);
	}
	CU_ASSERT(null_ok(a[5]) && null_ok(c[9]));	/* the rest are served */
	CU_ASSERT_EQUAL(closed_count("not_listed") - nl0, 5);
	CU_ASSERT_EQUAL(closed_count("limit") - lim0, 0);
	CU_ASSERT_EQUAL(rawrpc_metric_now("nfscached_connections_open"), 50);
	expect_refused("127.0.0.7");	/* a stranger does not evict one */
	CU_ASSERT_EQUAL(closed_count("limit") - lim0, 1);
	close_all(a, 20);
	close_all(b, 20);
	close_all(c, 10);
	close_all(listed, 5);
}

/* Descriptors open in process pid. */
static int fds_of(pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* User plus system CPU seconds of pid. */
static double cpu_of(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Lines of file path containing needle. */
static int count_lines(const char *path, const char *needle)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

/* Out of descriptors: pause, log boundedly, keep serving, recover. */
static void test_emfile_pauses_accepting_and_logs_boundedly(void)
{
	const char *pids = getenv("NFSC_PROXY_PID");
	const char *logp = getenv("NFSC_PROXY_LOG");
	pid_t pid = pids ? (pid_t)atoi(pids) : 0;
	struct rlimit old, low;
	int held[40], existing, lines0, lines1, nfd;
	double cpu0, cpu1, t0, t1, errs;

	CU_ASSERT_FATAL(pid > 0 && logp);
	existing = rawrpc_connect(nfs_port);
	CU_ASSERT_FATAL(existing >= 0);
	CU_ASSERT(null_ok(existing));
	nfd = fds_of(pid);
	CU_ASSERT_FATAL(nfd > 0);
	CU_ASSERT_FATAL(prlimit(pid, RLIMIT_NOFILE, NULL, &old) == 0);
	low = old;
	low.rlim_cur = (rlim_t)nfd + 5;
	lines0 = count_lines(logp, "accept on");
	CU_ASSERT_FATAL(prlimit(pid, RLIMIT_NOFILE, &low, NULL) == 0);
	cpu0 = cpu_of(pid);
	t0 = now_s();
	for (int i = 0; i < 40; i++) {
		held[i] = rawrpc_connect(nfs_port);	/* the backlog takes it */
		CU_ASSERT(held[i] >= 0);
	}
	while (now_s() - t0 < 3.0) {
		CU_ASSERT(null_ok(existing));	/* served all along */
		usleep(200 * 1000);
	}
	t1 = now_s();
	cpu1 = cpu_of(pid);
	lines1 = count_lines(logp, "accept on");
	CU_ASSERT_FATAL(prlimit(pid, RLIMIT_NOFILE, &old, NULL) == 0);
	fprintf(stderr, "emfile: %d log lines in %.1f s, %.2f CPU s\n",
		lines1 - lines0, t1 - t0, cpu1 - cpu0);
	CU_ASSERT(lines1 - lines0 >= 1);	/* it did hit EMFILE */
	CU_ASSERT(lines1 - lines0 <= (int)(t1 - t0) + 2);
	CU_ASSERT(cpu1 - cpu0 < 0.5 * (t1 - t0));
	errs = rawrpc_metric_now("nfscached_accept_errors_total");
	CU_ASSERT(errs >= 1);
	for (int i = 0; i < 40; i++)
		if (held[i] >= 0)
			CU_ASSERT(null_ok(held[i]));	/* accepted at last */
	CU_ASSERT(rawrpc_metric_now("nfscached_connections_open") >= 41);
	close_all(held, 40);
	close(existing);
}

/* Read the environment. */
static int suite_init(void)
{
	nfs_port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	return nfs_port ? 0 : -1;
}

int test_register(void)
{
	static CU_TestInfo timeouts[] = {
		{ "test_stalled_records_close_after_record_timeout",
		  test_stalled_records_close_after_record_timeout },
		{ "test_one_byte_a_second_closes_after_record_timeout",
		  test_one_byte_a_second_closes_after_record_timeout },
		{ "test_idle_connections_close_after_idle_timeout",
		  test_idle_connections_close_after_idle_timeout },
		CU_TEST_INFO_NULL,
	};
	static CU_TestInfo limits[] = {
		{ "test_connections_past_limits_are_refused",
		  test_connections_past_limits_are_refused },
		{ "test_listed_clients_take_strangers_slots",
		  test_listed_clients_take_strangers_slots },
		CU_TEST_INFO_NULL,
	};
	static CU_TestInfo emfile[] = {
		{ "test_emfile_pauses_accepting_and_logs_boundedly",
		  test_emfile_pauses_accepting_and_logs_boundedly },
		CU_TEST_INFO_NULL,
	};
	const char *mode = getenv("NFSC_CONNTEST");
	CU_TestInfo *t = !mode ? NULL : !strcmp(mode, "timeouts") ? timeouts :
			 !strcmp(mode, "limits") ? limits :
			 !strcmp(mode, "emfile") ? emfile : NULL;
	CU_pSuite s;

	if (!t) {
		fprintf(stderr, "set NFSC_CONNTEST to timeouts, limits or emfile\n");
		return -1;
	}
	s = CU_add_suite(mode, suite_init, NULL);
	if (!s)
		return -1;
	for (; t->pName; t++)
		if (!CU_add_test(s, t->pName, t->pTestFunc))
			return -1;
	return 0;
}
