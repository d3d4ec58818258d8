/* SPDX-License-Identifier: MIT */
/*
 * Backpressure: a client that sends thousands of 1 MiB READs and never
 * reads its replies cannot grow the proxy's memory without bound. The
 * proxy stops reading that connection at max_requests_per_conn calls in
 * flight or max_reply_buffer bytes of unsent replies, keeps serving other
 * clients meanwhile, and lets go of everything when the greedy client
 * leaves; replies are written at once and wait only for a full socket.
 * The metrics listener refuses a request with huge headers without
 * holding them.
 *
 * With NFSC_BPTEST=budget (budget.conf: client_buffer_limit 32 MiB) it
 * runs the flood of issue 37 instead: FLOODERS connections each pipeline
 * FLOOD_CALLS READs of 1 MiB and read nothing (NFSC_BP_FLOOD_CALLS sets
 * fewer: 8 in the ThreadSanitizer tree, where 3.8 GiB of replies took
 * over 8 minutes; with 4 the kernel's socket buffers, up to tcp_wmem's
 * 4 MiB per connection, took every reply and the proxy held none). The
 * proxy's resident memory grows by at most the budget, one reply per
 * connection and a fixed margin (before the budget: about
 * max_reply_buffer per connection, near 1 GiB),
 * nfscached_client_buffer_bytes stays within the budget and
 * one reply per connection, the budget's pauses are counted, and a new
 * client is answered correctly meanwhile; then every flooder reads all its
 * replies and each is the file's exact bytes.
 * Runs under harness.sh (raw RPC over TCP, libtirpc XDR).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "rawrpc.h"

#define FILE_SIZE (1u << 20)
#define CALLS 4000
#define FLOODERS 120
#define FLOOD_CALLS 32		/* per flooder, and the most NFSC_BP_FLOOD_CALLS
				 * may ask */
#define BUDGET_MIB 32		/* budget.conf's client_buffer_limit */
#define REPLY_MAX_KIB (1024 + 4)	/* a 1 MiB READ reply and its header */
#define RSS_MARGIN_KIB (64 * 1024)	/* malloc's and libevent's slack */
#define WAIT_MS 60000

static uint8_t root[64], fh[64];
static size_t root_len, fh_len;
static int flood_calls = FLOOD_CALLS;	/* READs per flooder */

/* The proxy's resident memory, KiB. */
static long proxy_rss_kib(void)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/status", getenv("NFSC_PROXY_PID"));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Make the test file on disk and get its handle through the proxy. */
static int setup(int fd)
{
	char path[4096];
	uint8_t *data = malloc(FILE_SIZE);
	char name[] = "bp.bin";
	LOOKUP3args la;
	LOOKUP3res lr;
	struct rawrpc_reply r;
	struct rawrpc_cred cr = rawrpc_cred_sys(0, 0);
	FILE *f;
	int rc = -1;

	for (unsigned i = 0; i < FILE_SIZE; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	snprintf(path, sizeof(path), "%s/bp.bin", getenv("NFSC_EXPORT_DIR"));
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, FILE_SIZE, f) != FILE_SIZE)
		goto out;
	fclose(f);
	f = NULL;
	if (rawrpc_mnt(fd, rawrpc_xid(), "/export", root, &root_len) != 0)
		goto out;
	memset(&la, 0, sizeof(la));
	la.what.dir.data.data_len = (u_int)root_len;
	la.what.dir.data.data_val = (char *)root;
	la.what.name = name;
	memset(&lr, 0, sizeof(lr));
	if (rawrpc_call(fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3, NFSPROC3_LOOKUP, &cr,
			(xdrproc_t)xdr_LOOKUP3args, &la, (xdrproc_t)xdr_LOOKUP3res,
			&lr, &r) != RAWRPC_OK || lr.status != NFS3_OK)
		goto out;
	fh_len = lr.LOOKUP3res_u.resok.object.data.data_len;
	memcpy(fh, lr.LOOKUP3res_u.resok.object.data.data_val, fh_len);
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&lr);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(data);
	return rc;
}

/* One READ call record of the whole file. */
static void put_read(struct rawrpc_buf *b, uint32_t xid)
{
	struct rawrpc_cred cr = rawrpc_cred_sys(0, 0);
	READ3args a;

	memset(&a, 0, sizeof(a));
	a.file.data.data_len = (u_int)fh_len;
	a.file.data.data_val = (char *)fh;
	a.offset = 0;
	a.count = FILE_SIZE;
	rawrpc_buf_init(b);
	rawrpc_put_u32(b, 0);	/* record mark, set below */
	rawrpc_put_call(b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_READ, &cr);
	rawrpc_put_xdr(b, (xdrproc_t)xdr_READ3args, &a);
	b->data[0] = 0x80 | (uint8_t)((b->len - 4) >> 24);
	b->data[1] = (uint8_t)((b->len - 4) >> 16);
	b->data[2] = (uint8_t)((b->len - 4) >> 8);
	b->data[3] = (uint8_t)(b->len - 4);
}

/* A GETATTR of the root on fd answers NFS3_OK. */
static int getattr_ok(int fd)
{
	struct rawrpc_cred cr = rawrpc_cred_sys(0, 0);
	GETATTR3args a;
	GETATTR3res res;
	struct rawrpc_reply r;
	int ok;

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

/* n GETATTRs of the root on fd, each answered NFS3_OK. */
static void getattrs_ok(int fd, int n)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT(getattr_ok(fd));
}

/*
 * A reply is written in the loop turn that made it, and only what the
 * socket does not take waits for room (server.c): a client that reads
 * each reply before its next call never makes one wait; 32 pipelined
 * READs of 1 MiB (32 MiB, more than the loopback socket buffers hold
 * while the client reads nothing) do; and once the client has read them
 * all, replies are again written at once.
 */
static void test_replies_wait_only_for_a_full_socket(void)
{
	uint16_t port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	const char *m = "nfscached_reply_write_waits_total";
	int fd = rawrpc_connect(port);
	uint32_t xids[32];
	double w0, w1, w2, w3;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(setup(fd) == 0);
	w0 = rawrpc_metric_now(m);
	getattrs_ok(fd, 20);
	w1 = rawrpc_metric_now(m);
	CU_ASSERT_EQUAL(w1, w0);
	for (unsigned i = 0; i < 32; i++) {
		struct rawrpc_buf b;

		xids[i] = rawrpc_xid();
		put_read(&b, xids[i]);
		CU_ASSERT_FATAL(rawrpc_send_bytes(fd, b.data, b.len) == 0);
		rawrpc_buf_free(&b);
	}
	for (unsigned i = 0; i < 32; i++) {
		struct rawrpc_reply r;
		uint8_t *rec = NULL;
		size_t len;

		CU_ASSERT_FATAL(rawrpc_recv_record(fd, RAWRPC_TIMEOUT_MS, &rec,
						   &len) == RAWRPC_OK);
		unsigned j = 0;

		CU_ASSERT_FATAL(rawrpc_parse_reply(rec, len, &r) == 0);
		while (j < 32 && xids[j] != r.xid)
			j++;	/* replies come in any order (RFC 5531) */
		CU_ASSERT(j < 32);
		if (j < 32)
			xids[j] = 0;	/* each answered once */
		CU_ASSERT(len > FILE_SIZE);
		free(rec);
	}
	w2 = rawrpc_metric_now(m);
	CU_ASSERT(w2 > w1);
	getattrs_ok(fd, 20);
	w3 = rawrpc_metric_now(m);
	CU_ASSERT_EQUAL(w3, w2);
	printf("\nreply write waits: 20 GETATTRs +%.0f, 32 MiB pipelined +%.0f, "
	       "20 GETATTRs after +%.0f\n", w1 - w0, w2 - w1, w3 - w2);
	close(fd);
}

static void test_greedy_client_cannot_grow_memory(void)
{
	uint16_t port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	int fd = rawrpc_connect(port), greedy, small = 4096;
	double pauses0, pauses1;
	long rss0, rss_max = 0;
	size_t sent_calls = 0;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(setup(fd) == 0);
	/* Warm the cache so the READs are served at full speed. */
	{
		struct rawrpc_buf b;
		struct rawrpc_reply r;
		uint8_t *rec = NULL;
		size_t len;
		uint32_t xid = rawrpc_xid();

		put_read(&b, xid);
		CU_ASSERT(rawrpc_send_bytes(fd, b.data, b.len) == 0);
		CU_ASSERT(rawrpc_recv_record(fd, RAWRPC_TIMEOUT_MS, &rec, &len) == RAWRPC_OK);
		CU_ASSERT(rec && rawrpc_parse_reply(rec, len, &r) == 0 && r.xid == xid);
		free(rec);
		rawrpc_buf_free(&b);
	}
	rss0 = proxy_rss_kib();
	pauses0 = rawrpc_metric_now("nfscached_backpressure_pauses_total");
	greedy = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(greedy, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	close(greedy);
	greedy = rawrpc_connect(port);
	CU_ASSERT_FATAL(greedy >= 0);
	setsockopt(greedy, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fcntl(greedy, F_SETFL, O_NONBLOCK);
	/* Send CALLS READs of 1 MiB (4000 MiB of replies) and read nothing,
	 * for at most 5 s: once the proxy stops reading, sends block. */
	for (int t = 0; t < 50 && sent_calls < CALLS; t++) {
		while (sent_calls < CALLS) {
			struct rawrpc_buf b;
			ssize_t n;

			put_read(&b, rawrpc_xid());
			n = send(greedy, b.data, b.len, MSG_NOSIGNAL);
			rawrpc_buf_free(&b);
			if (n < 0)
				break;	/* EAGAIN: the proxy stopped reading */
			sent_calls++;
		}
		poll(NULL, 0, 100);
		if (proxy_rss_kib() > rss_max)
			rss_max = proxy_rss_kib();
	}
	/* Another client is served meanwhile. */
	CU_ASSERT(getattr_ok(fd));
	for (int i = 0; i < 10; i++) {
		poll(NULL, 0, 100);
		if (proxy_rss_kib() > rss_max)
			rss_max = proxy_rss_kib();
	}
	pauses1 = rawrpc_metric_now("nfscached_backpressure_pauses_total");
	printf("\nbackpressure: %zu READs of 1 MiB sent unread; proxy RSS %ld KiB "
	       "-> max %ld KiB; pauses +%.0f\n", sent_calls, rss0, rss_max,
	       pauses1 - pauses0);
	CU_ASSERT(pauses1 - pauses0 >= 1);
	/* Bounded: max_reply_buffer (8 MiB) + 64 calls in flight of 1 MiB
	 * each + slack, far below the 4 GiB the calls asked for. */
	CU_ASSERT(rss_max - rss0 < 160 * 1024);
	close(greedy);
	poll(NULL, 0, 500);
	CU_ASSERT(getattr_ok(fd));
	close(fd);
}

/* Byte i of the test file (setup). */
static uint8_t file_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/* Read one reply on fd; true if it is a READ of the whole file with its
 * exact bytes. *xid gets its xid. */
static bool read_reply_ok(int fd, uint32_t *xid)
{
	struct rawrpc_reply r;
	READ3res res;
	uint8_t *rec = NULL;
	size_t len;
	bool ok = false;

	enum rawrpc_io io;

	memset(&res, 0, sizeof(res));
	io = rawrpc_recv_record(fd, WAIT_MS, &rec, &len);
	if (io != RAWRPC_OK ||
	    rawrpc_parse_reply(rec, len, &r) != 0 || r.stat != MSG_ACCEPTED ||
	    r.accept != SUCCESS ||
	    rawrpc_decode(rec, len, r.res_off, (xdrproc_t)xdr_READ3res,
			  &res) != 0) {
		free(rec);
		return false;
	}
	*xid = r.xid;
	if (res.status == NFS3_OK &&
	    res.READ3res_u.resok.data.data_len == FILE_SIZE) {
		const uint8_t *d = (const uint8_t *)res.READ3res_u.resok.data.data_val;

		ok = true;
		for (size_t i = 0; i < FILE_SIZE && ok; i++)
			ok = d[i] == file_byte(i);
	}
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	free(rec);
	return ok;
}

/* Send one READ of the whole file on fd and check its reply. */
static bool read_once_ok(int fd)
{
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid(), got = 0;
	bool ok;

	put_read(&b, xid);
	ok = rawrpc_send_bytes(fd, b.data, b.len) == 0 && read_reply_ok(fd, &got) &&
	     got == xid;
	rawrpc_buf_free(&b);
	return ok;
}

/* Open a flooder: a small receive buffer, flood_calls READs sent, their
 * xids in xids. The buffer is kept over loopback's MSS (64 KiB): under it
 * the receiver never announces an opened window and the proxy's writes
 * wait for TCP's backed-off zero-window probes (seconds each) once the
 * flooder reads. */
static int flooder_open(uint16_t port, uint32_t *xids)
{
	int fd = rawrpc_connect(port), small = 128 * 1024;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	for (int i = 0; i < flood_calls; i++) {
		struct rawrpc_buf b;

		xids[i] = rawrpc_xid();
		put_read(&b, xids[i]);
		if (rawrpc_send_bytes(fd, b.data, b.len) != 0) {
			rawrpc_buf_free(&b);
			close(fd);
			return -1;
		}
		rawrpc_buf_free(&b);
	}
	return fd;
}

/* Wait (WAIT_MS at most) until the proxy holds at least the budget. */
static double wait_budget_reached(void)
{
	double held = 0;

	for (int t = 0; t < WAIT_MS / 100; t++) {
		held = rawrpc_metric_now("nfscached_client_buffer_bytes");
		if (held >= (double)BUDGET_MIB * 1048576)
			break;
		poll(NULL, 0, 100);
	}
	return held;
}

/* Every flooder reads all its replies: each once, each the file's bytes. */
static void flooders_read_all(int *fds, uint32_t (*xids)[FLOOD_CALLS])
{
	unsigned bad = 0;

	for (int f = 0; f < FLOODERS; f++)
		for (int i = 0; i < flood_calls; i++) {
			uint32_t xid = 0;
			int j = 0;

			if (!read_reply_ok(fds[f], &xid)) {
				if (!bad)
					printf("\nflooder %d: reply %d of %d missing "
					       "(held %.0f, in flight %.0f)\n",
					       f, i, flood_calls,
					       rawrpc_metric_now("nfscached_client_buffer_bytes"),
					       rawrpc_metric_now("nfscached_requests_inflight"));
				bad++;
				continue;
			}
			while (j < flood_calls && xids[f][j] != xid)
				j++;
			if (j == flood_calls)
				bad++;
			else
				xids[f][j] = 0;	/* answered once */
		}
	CU_ASSERT_EQUAL(bad, 0);
}

/* The flood of issue 37 against client_buffer_limit (budget.conf). */
static void test_flood_stays_within_the_budget(void)
{
	uint16_t port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	static uint32_t xids[FLOODERS][FLOOD_CALLS];
	static int fds[FLOODERS];
	int fd = rawrpc_connect(port), fresh;
	double p0, p1, held, limit;
	long rss0, rss_max = 0, bound;
	int loops;
	const char *calls = getenv("NFSC_BP_FLOOD_CALLS");

	if (calls)
		flood_calls = atoi(calls);
	CU_ASSERT_FATAL(flood_calls >= 1 && flood_calls <= FLOOD_CALLS);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(setup(fd) == 0);
	CU_ASSERT_FATAL(read_once_ok(fd));	/* cached from now on */
	limit = rawrpc_metric_now("nfscached_client_buffer_limit_bytes");
	CU_ASSERT_EQUAL(limit, (double)BUDGET_MIB * 1048576);
	rss0 = proxy_rss_kib();
	p0 = rawrpc_metric_now("nfscached_backpressure_budget_pauses_total");
	for (int f = 0; f < FLOODERS; f++)
		CU_ASSERT_FATAL((fds[f] = flooder_open(port, xids[f])) >= 0);
	held = wait_budget_reached();
	for (int t = 0; t < 10; t++) {
		long rss = proxy_rss_kib();

		rss_max = rss > rss_max ? rss : rss_max;
		poll(NULL, 0, 100);
	}
	held = rawrpc_metric_now("nfscached_client_buffer_bytes");
	p1 = rawrpc_metric_now("nfscached_backpressure_budget_pauses_total");
	/* A new client is served, with the right bytes, all along. */
	fresh = rawrpc_connect(port);
	CU_ASSERT_FATAL(fresh >= 0);
	CU_ASSERT(getattr_ok(fresh));
	CU_ASSERT(read_once_ok(fresh));
	CU_ASSERT(read_once_ok(fd));
	/* One reply per connection past the budget; with threads = N
	 * (NFSC_PROXY_THREADS) the N - 1 loops that read connections check
	 * the held bytes without a lock, so each may admit one call before
	 * it sees another loop's reservation: one reply each more
	 * (daemon/rpc/server.c, "The budget"). */
	loops = getenv("NFSC_PROXY_THREADS") ? atoi(getenv("NFSC_PROXY_THREADS"))
					     : 1;
	bound = BUDGET_MIB * 1024L +
		(FLOODERS + (loops > 1 ? loops - 1 : 0)) * (long)REPLY_MAX_KIB;
	printf("\nflood: %d connections x %d READs of 1 MiB unread: held %.0f "
	       "KiB (bound %ld KiB), RSS %ld -> max %ld KiB (bound +%ld KiB), "
	       "budget pauses +%.0f\n", FLOODERS, flood_calls, held / 1024,
	       bound, rss0, rss_max, bound + RSS_MARGIN_KIB, p1 - p0);
	CU_ASSERT(held <= (double)bound * 1024);
	/* Under ASan freed memory stays in its quarantine (256 MiB by
	 * default) and RSS says nothing of what the daemon holds: the
	 * held-bytes bound above is the check there, RSS the Release
	 * tree's. */
	if (!getenv("NFSC_SANITIZED"))
		CU_ASSERT(rss_max - rss0 <= bound + RSS_MARGIN_KIB);
	CU_ASSERT(p1 - p0 >= 1);
	flooders_read_all(fds, xids);
	for (int f = 0; f < FLOODERS; f++)
		close(fds[f]);
	close(fresh);
	close(fd);
}

/*
 * GET /metrics with 50 MB of header lines: the proxy answers an error or
 * closes once the headers pass its limit, and does not hold them (its
 * resident memory grows by less than 8 MiB; without the limit it kept
 * them all).
 */
static void test_metrics_huge_headers_refused(void)
{
	const char *addr = getenv("NFSC_METRICS_ADDR");
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	char line[1024];
	size_t sent = 0;
	long rss0 = proxy_rss_kib(), rss1;
	struct timeval tv = { 30, 0 };
	int fd;

	CU_ASSERT_FATAL(colon != NULL);
	fd = rawrpc_connect((uint16_t)atoi(colon + 1));
	CU_ASSERT_FATAL(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(line, 'a', sizeof(line));
	memcpy(line, "X-Big: ", 7);
	line[sizeof(line) - 2] = '\r';
	line[sizeof(line) - 1] = '\n';
	CU_ASSERT(send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) ==
		  (ssize_t)sizeof(get) - 1);
	while (sent < 50u * 1000 * 1000 &&
	       send(fd, line, sizeof(line), MSG_NOSIGNAL) == (ssize_t)sizeof(line))
		sent += sizeof(line);
	rss1 = proxy_rss_kib();
	printf("\nmetrics: %zu bytes of headers taken before the proxy stopped; "
	       "RSS %ld -> %ld KiB\n", sent, rss0, rss1);
	CU_ASSERT(sent < 50u * 1000 * 1000);	/* refused before the end */
	CU_ASSERT(rss1 - rss0 < 8 * 1024);
	close(fd);
	/* The listener still answers. */
	CU_ASSERT(rawrpc_metric_now("nfscached_connections_open") >= 0);
}

int test_register(void)
{
	const char *mode = getenv("NFSC_BPTEST");
	CU_pSuite s = CU_add_suite("backpressure", NULL, NULL);

	if (s && mode && strcmp(mode, "budget") == 0)
		return CU_add_test(s, "flood_stays_within_the_budget",
				   test_flood_stays_within_the_budget) ? 0 : -1;
	if (!s || !CU_add_test(s, "metrics_huge_headers_refused",
			       test_metrics_huge_headers_refused) || !CU_add_test(s, "replies_wait_only_for_a_full_socket",
			       test_replies_wait_only_for_a_full_socket) ||
	    !CU_add_test(s, "greedy_client_cannot_grow_memory",
			 test_greedy_client_cannot_grow_memory))
		return -1;
	return 0;
}
