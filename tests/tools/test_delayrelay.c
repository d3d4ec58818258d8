/* SPDX-License-Identifier: MIT */
/*
 * Tests of tests/tools/delayrelay, run as a black box: the real binary
 * (DELAYRELAY_BIN) is started with a 5 ms delay and two pairs, one in front
 * of an echo server (threads in this process), one in front of a plain
 * listener the tests accept from themselves. Loopback sockets only. Suite
 * delayrelay_zero runs the tests of bytes and closes again on a relay with
 * no delay, which splices instead of copying (its own code path).
 *
 * Pinned, as what the relay promises and nothing about its speed: every
 * byte sent comes out the other side, once and in order (small messages
 * one at a time and several in flight at once, and 8 MiB byte-identical);
 * no byte and no close arrives sooner than the delay (a round trip takes
 * at least 2 x 5 ms, the first byte of a bulk transfer too); a close or
 * half-close of either side reaches the other side; the other direction
 * of a half-closed connection keeps working; bad arguments exit 2;
 * SIGTERM exits 0.
 *
 * No test asserts an upper bound on wall-clock time: how much later than
 * the delay a byte arrives depends on the machine's load (a median
 * bound failed on a loaded machine, issue 38), so round-trip times are
 * printed, not asserted. Every lower bound holds under any load: each is
 * measured from a clock read before the send to one after the receive,
 * which can only lengthen it. WAIT_MS is a hang guard (how long before
 * something expected counts as lost), not a timing claim.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"

#define DELAY_MS	5.0	/* suite delayrelay's delay */
#define ROUNDS		20
#define BULK_BYTES	(8u * 1024 * 1024)
#define WAIT_MS		30000	/* hang guard: expected but never came */

static double delay_ms;		/* the running suite's relay's delay */
static pid_t relay_pid = -1;
static int relay_out = -1;		/* read end of the relay's stdout */
static int echo_lfd = -1, plain_lfd = -1;
static uint16_t echo_relay_port, plain_relay_port;

/* Return CLOCK_MONOTONIC in milliseconds. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Open a listening socket on 127.0.0.1, any port; *port gets it. */
static int
listen_any(uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Connect to 127.0.0.1:port with TCP_NODELAY. Returns the fd or -1. */
static int
connect_port(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Wait up to ms for fd to be readable. Returns true when it is. */
static bool
wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/*
 * Receive exactly n bytes within WAIT_MS. Returns n, the bytes received
 * before EOF, or -1 on error or timeout.
 */
static ssize_t
recv_exact(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r;

		if (!wait_readable(fd, WAIT_MS))
			return -1;
		r = recv(fd, (char *)buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Send all n bytes. Returns 0 or -1. */
static int
send_all(int fd, const void *buf, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = send(fd, (const char *)buf + off, n - off,
				 MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Return true when fd reports EOF (recv 0) within WAIT_MS. */
static bool
sees_eof(int fd)
{
	char c;

	return wait_readable(fd, WAIT_MS) && recv(fd, &c, 1, 0) == 0;
}

/* Echo one connection until EOF, then close it. */
static void *
echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[65536];
	ssize_t r;

	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0)
		if (send_all(fd, buf, (size_t)r) != 0)
			break;
	close(fd);
	return NULL;
}

/* Accept echo connections until the listener is shut down. */
static void *
echo_server(void *arg)
{
	int lfd = (int)(intptr_t)arg, fd;

	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, echo_conn,
				   (void *)(intptr_t)fd) != 0) {
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

/* Read one line of the relay's stdout (without the newline), or fail. */
static int
relay_line(char *line, size_t n)
{
	size_t len = 0;

	while (len + 1 < n) {
		char c;

		if (!wait_readable(relay_out, WAIT_MS) ||
		    read(relay_out, &c, 1) != 1)
			return -1;
		if (c == '\n')
			break;
		line[len++] = c;
	}
	line[len] = '\0';
	return 0;
}

/* Exec the relay with a writable copy of argv (in the child). */
static void
exec_relay(const char *const argv[])
{
	char *args[16];
	size_t n = 0;

	for (; argv[n] && n + 1 < 16; n++)
		args[n] = strdup(argv[n]);
	args[n] = NULL;
	execv(DELAYRELAY_BIN, args);
	_exit(127);
}

/* Run the relay with argv; *out gets the read end of its stdout. */
static pid_t
spawn_relay(const char *const argv[], int *out)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		exec_relay(argv);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	*out = p[0];
	return pid;
}

/* Parse "listen 127.0.0.1:PORT TARGET" into *port. Returns 0 or -1. */
static int
parse_listen_line(const char *line, uint16_t *port)
{
	unsigned p;

	if (sscanf(line, "listen 127.0.0.1:%u ", &p) != 1 || p == 0 ||
	    p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

/* Start the echo server, the plain listener and a relay of delay ms. */
static int
suite_init_delay(const char *delay)
{
	static pthread_t echo_thread;
	char a1[64], a2[64], line[256];
	uint16_t echo_port, plain_port;

	delay_ms = atof(delay);
	echo_lfd = listen_any(&echo_port);
	plain_lfd = listen_any(&plain_port);
	if (echo_lfd < 0 || plain_lfd < 0 ||
	    pthread_create(&echo_thread, NULL, echo_server,
			   (void *)(intptr_t)echo_lfd) != 0)
		return -1;
	pthread_detach(echo_thread);
	snprintf(a1, sizeof(a1), "127.0.0.1:0=127.0.0.1:%u", echo_port);
	snprintf(a2, sizeof(a2), "127.0.0.1:0=127.0.0.1:%u", plain_port);
	const char *argv[] = { "delayrelay", "--delay-ms", delay, "--pair", a1,
			 "--pair", a2, NULL };
	relay_pid = spawn_relay(argv, &relay_out);
	if (relay_pid < 0 || relay_line(line, sizeof(line)) != 0 ||
	    parse_listen_line(line, &echo_relay_port) != 0 ||
	    relay_line(line, sizeof(line)) != 0 ||
	    parse_listen_line(line, &plain_relay_port) != 0 ||
	    relay_line(line, sizeof(line)) != 0 || strcmp(line, "ready"))
		return -1;
	return 0;
}

static int
suite_init(void)
{
	return suite_init_delay("5");
}

/* No delay: the spliced path. */
static int
suite_init_zero(void)
{
	return suite_init_delay("0");
}

/* Stop the relay if a test did not, and close the listeners. */
static int
suite_cleanup(void)
{
	if (relay_pid > 0) {
		kill(relay_pid, SIGTERM);
		waitpid(relay_pid, NULL, 0);
	}
	if (relay_out >= 0)
		close(relay_out);
	if (echo_lfd >= 0)
		shutdown(echo_lfd, SHUT_RDWR);
	if (plain_lfd >= 0)
		close(plain_lfd);
	relay_pid = -1;
	relay_out = echo_lfd = plain_lfd = -1;
	return 0;
}

/* Compare two doubles for qsort. */
static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
test_round_trip_takes_twice_the_delay(void)
{
	double rtt[ROUNDS], median;
	char msg[32], back[32];
	int fd = connect_port(echo_relay_port);

	CU_ASSERT_FATAL(fd >= 0);
	for (int i = 0; i < ROUNDS; i++) {
		double t0;

		memset(msg, 'a' + i, sizeof(msg));
		t0 = now_ms();
		CU_ASSERT_EQUAL_FATAL(send_all(fd, msg, sizeof(msg)), 0);
		CU_ASSERT_EQUAL_FATAL(recv_exact(fd, back, sizeof(back)),
				      (ssize_t)sizeof(back));
		rtt[i] = now_ms() - t0;
		CU_ASSERT_EQUAL(memcmp(msg, back, sizeof(msg)), 0);
		/* Never sooner than the delay each way; how much later
		 * depends on the machine's load and is not asserted. */
		CU_ASSERT(rtt[i] >= 2 * DELAY_MS);
	}
	/* Nothing more than was sent comes back. */
	shutdown(fd, SHUT_WR);
	CU_ASSERT_TRUE(sees_eof(fd));
	close(fd);
	qsort(rtt, ROUNDS, sizeof(rtt[0]), cmp_double);
	median = (rtt[ROUNDS / 2 - 1] + rtt[ROUNDS / 2]) / 2;
	printf("\n  rtt min %.3f median %.3f max %.3f ms ", rtt[0], median,
	       rtt[ROUNDS - 1]);
}

#define PIPE_MSGS	40
#define PIPE_LEN	64

/* Byte j of pipelined message k: distinct per message, so a message out
 * of order, lost or repeated shows. */
static uint8_t
pipe_byte(int k, int j)
{
	return (uint8_t)(k * 37 + j);
}

/*
 * Send message *next stamped in sent[]; then receive what came back
 * into got (at *have), stamping in done[] the messages it completed. A
 * wait of wait_ms for data that does not come is not an error while
 * messages are left to send. Returns 0, or -1 on error, EOF or WAIT_MS
 * with nothing.
 */
static int
pipe_step(int fd, int *next, double *sent, double *done, uint8_t *got,
	  size_t *have)
{
	uint8_t msg[PIPE_LEN];
	size_t total = PIPE_MSGS * PIPE_LEN;
	ssize_t r;
	double t;

	if (*next < PIPE_MSGS) {
		for (int j = 0; j < PIPE_LEN; j++)
			msg[j] = pipe_byte(*next, j);
		sent[*next] = now_ms();
		if (send_all(fd, msg, sizeof(msg)) != 0)
			return -1;
		(*next)++;
	}
	if (!wait_readable(fd, *next < PIPE_MSGS ? 1 : WAIT_MS))
		return *next < PIPE_MSGS ? 0 : -1;
	r = recv(fd, got + *have, total - *have, 0);
	if (r <= 0)
		return -1;
	t = now_ms();
	for (size_t k = *have / PIPE_LEN; k < (*have + (size_t)r) / PIPE_LEN;
	     k++)
		done[k] = t;
	*have += (size_t)r;
	return 0;
}

/*
 * Messages sent about a millisecond apart while earlier ones are still
 * in the relay (several chunks queued at once): each comes back whole,
 * once, in the order sent, and no sooner than twice the delay after it
 * was sent.
 */
static void
test_pipelined_messages_in_order_after_the_delay(void)
{
	static uint8_t got[PIPE_MSGS * PIPE_LEN];
	double sent[PIPE_MSGS], done[PIPE_MSGS], least = 1e9;
	int fd = connect_port(echo_relay_port), next = 0, wrong = 0;
	size_t have = 0;

	CU_ASSERT_FATAL(fd >= 0);
	while (have < sizeof(got))
		CU_ASSERT_EQUAL_FATAL(pipe_step(fd, &next, sent, done, got,
						&have), 0);
	for (int k = 0; k < PIPE_MSGS; k++) {
		for (int j = 0; j < PIPE_LEN; j++)
			wrong += got[k * PIPE_LEN + j] != pipe_byte(k, j);
		if (done[k] - sent[k] < least)
			least = done[k] - sent[k];
	}
	printf("\n  pipelined: shortest round trip %.3f ms ", least);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(least >= 2 * delay_ms);
	shutdown(fd, SHUT_WR);
	CU_ASSERT_TRUE(sees_eof(fd));
	close(fd);
}

/* Fill buf with a reproducible pseudo-random pattern. */
static void
fill_pattern(uint8_t *buf, size_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

struct bulk {
	int fd;
	const uint8_t *data;
	int rc;
};

/* Send the bulk data, then half-close. */
static void *
bulk_sender(void *arg)
{
	struct bulk *b = arg;

	b->rc = send_all(b->fd, b->data, BULK_BYTES);
	shutdown(b->fd, SHUT_WR);
	return NULL;
}

static void
test_8mib_pass_byte_identical(void)
{
	uint8_t *out = malloc(BULK_BYTES), *in = malloc(BULK_BYTES);
	struct bulk b = { .fd = connect_port(echo_relay_port), .rc = -1 };
	pthread_t t;
	double t0, first;

	CU_ASSERT_FATAL(out && in && b.fd >= 0);
	fill_pattern(out, BULK_BYTES);
	b.data = out;
	t0 = now_ms();
	CU_ASSERT_FATAL(pthread_create(&t, NULL, bulk_sender, &b) == 0);
	/* The first byte waited out the delay both ways, too. */
	CU_ASSERT_EQUAL(recv_exact(b.fd, in, 1), 1);
	first = now_ms() - t0;
	printf("\n  first byte after %.3f ms ", first);
	CU_ASSERT(first >= 2 * delay_ms);
	CU_ASSERT_EQUAL(recv_exact(b.fd, in + 1, BULK_BYTES - 1),
			(ssize_t)BULK_BYTES - 1);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(b.rc, 0);
	CU_ASSERT_EQUAL(memcmp(in, out, BULK_BYTES), 0);
	/* The echo server closes after our EOF; that close comes back. */
	CU_ASSERT_TRUE(sees_eof(b.fd));
	close(b.fd);
	free(in);
	free(out);
}

/* Connect through the plain pair; *srv gets the accepted socket. */
static int
connect_plain(int *srv)
{
	int fd = connect_port(plain_relay_port);

	*srv = -1;
	if (fd < 0)
		return -1;
	if (wait_readable(plain_lfd, WAIT_MS))
		*srv = accept(plain_lfd, NULL, NULL);
	if (*srv < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
test_one_way_delay_and_client_close(void)
{
	int srv, cli = connect_plain(&srv);
	char c = 0;
	double t0;

	CU_ASSERT_FATAL(cli >= 0);
	t0 = now_ms();
	CU_ASSERT_EQUAL(send_all(cli, "x", 1), 0);
	CU_ASSERT_EQUAL(recv_exact(srv, &c, 1), 1);
	CU_ASSERT(now_ms() - t0 >= delay_ms);
	CU_ASSERT_EQUAL(c, 'x');
	t0 = now_ms();
	close(cli);
	CU_ASSERT_TRUE(sees_eof(srv));
	CU_ASSERT(now_ms() - t0 >= delay_ms);
	close(srv);
}

static void
test_server_close_reaches_client(void)
{
	int srv, cli = connect_plain(&srv);
	double t0;

	CU_ASSERT_FATAL(cli >= 0);
	t0 = now_ms();
	close(srv);
	CU_ASSERT_TRUE(sees_eof(cli));
	CU_ASSERT(now_ms() - t0 >= delay_ms);
	close(cli);
}

static void
test_half_close_keeps_other_direction(void)
{
	int srv, cli = connect_plain(&srv);
	char buf[8] = { 0 };

	CU_ASSERT_FATAL(cli >= 0);
	CU_ASSERT_EQUAL(send_all(cli, "req", 3), 0);
	shutdown(cli, SHUT_WR);
	CU_ASSERT_EQUAL(recv_exact(srv, buf, 4), 3);	/* then EOF */
	CU_ASSERT_EQUAL(memcmp(buf, "req", 3), 0);
	CU_ASSERT_EQUAL(send_all(srv, "late", 4), 0);
	CU_ASSERT_EQUAL(recv_exact(cli, buf, 4), 4);
	CU_ASSERT_EQUAL(memcmp(buf, "late", 4), 0);
	close(srv);
	CU_ASSERT_TRUE(sees_eof(cli));
	close(cli);
}

/* Number of open descriptors of process pid, or -1. */
static int
count_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dir = opendir(path)))
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * Many small writes while earlier ones wait out the delay: the relay takes
 * a new pipe only when the last one is full, so its descriptors stay
 * bounded (a pipe per read wakeup ran a relay out of descriptors and
 * dropped connections), and every byte arrives in order.
 */
static void
test_small_writes_keep_descriptors_bounded(void)
{
	enum { MSGS = 2000, LEN = 16 };
	int srv, cli = connect_plain(&srv);
	int base = count_fds(relay_pid), peak = base;
	static char got[MSGS * LEN];
	char msg[LEN];

	CU_ASSERT_FATAL(cli >= 0);
	CU_ASSERT_FATAL(base > 0);
	for (int i = 0; i < MSGS; i++) {
		int n;

		memset(msg, 'a' + i % 26, sizeof(msg));
		CU_ASSERT_EQUAL_FATAL(send_all(cli, msg, sizeof(msg)), 0);
		usleep(20);
		if (i % 50 == 0 && (n = count_fds(relay_pid)) > peak)
			peak = n;
	}
	CU_ASSERT_EQUAL(recv_exact(srv, got, sizeof(got)), (ssize_t)sizeof(got));
	for (int i = 0; i < MSGS; i++)
		CU_ASSERT_EQUAL_FATAL(got[i * LEN], 'a' + i % 26);
	/* This connection's pipes: one in use and a few spares per direction. */
	CU_ASSERT(peak - base <= 2 * 2 * 6);
	close(cli);
	close(srv);
}

/* Run the relay with argv and return its exit status, or -1. */
static int
relay_exit_status(const char *const argv[])
{
	int out, st;
	pid_t pid = spawn_relay(argv, &out);

	if (pid < 0)
		return -1;
	close(out);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void
test_bad_arguments_exit_2(void)
{
	const char *neg[] = { "delayrelay", "--delay-ms", "-1", "--pair",
			"127.0.0.1:0=127.0.0.1:1", NULL };
	const char *nopair[] = { "delayrelay", "--delay-ms", "1", NULL };
	const char *badpair[] = { "delayrelay", "--delay-ms", "1", "--pair",
			    "127.0.0.1:0", NULL };

	CU_ASSERT_EQUAL(relay_exit_status(neg), 2);
	CU_ASSERT_EQUAL(relay_exit_status(nopair), 2);
	CU_ASSERT_EQUAL(relay_exit_status(badpair), 2);
}

static void
test_sigterm_exits_0(void)
{
	int st = -1;
	int srv, cli = connect_plain(&srv);	/* a live connection too */

	CU_ASSERT_FATAL(cli >= 0);
	CU_ASSERT_EQUAL_FATAL(kill(relay_pid, SIGTERM), 0);
	CU_ASSERT_EQUAL(waitpid(relay_pid, &st, 0), relay_pid);
	relay_pid = -1;
	CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CU_ASSERT_TRUE(sees_eof(srv));
	close(srv);
	close(cli);
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite("delayrelay", suite_init, suite_cleanup);

	if (!s ||
	    !CU_add_test(s, "round_trip_takes_twice_the_delay",
			 test_round_trip_takes_twice_the_delay) ||
	    !CU_add_test(s, "pipelined_messages_in_order_after_the_delay",
			 test_pipelined_messages_in_order_after_the_delay) ||
	    !CU_add_test(s, "8mib_pass_byte_identical",
			 test_8mib_pass_byte_identical) ||
	    !CU_add_test(s, "one_way_delay_and_client_close",
			 test_one_way_delay_and_client_close) ||
	    !CU_add_test(s, "server_close_reaches_client",
			 test_server_close_reaches_client) ||
	    !CU_add_test(s, "half_close_keeps_other_direction",
			 test_half_close_keeps_other_direction) ||
	    !CU_add_test(s, "small_writes_keep_descriptors_bounded",
			 test_small_writes_keep_descriptors_bounded) ||
	    !CU_add_test(s, "bad_arguments_exit_2",
			 test_bad_arguments_exit_2) ||
	    !CU_add_test(s, "sigterm_exits_0", test_sigterm_exits_0))
		return -1;
	s = CU_add_suite("delayrelay_zero", suite_init_zero, suite_cleanup);
	if (!s ||
	    !CU_add_test(s, "pipelined_messages_in_order",
			 test_pipelined_messages_in_order_after_the_delay) ||
	    !CU_add_test(s, "8mib_pass_byte_identical",
			 test_8mib_pass_byte_identical) ||
	    !CU_add_test(s, "client_close_reaches_server",
			 test_one_way_delay_and_client_close) ||
	    !CU_add_test(s, "server_close_reaches_client",
			 test_server_close_reaches_client) ||
	    !CU_add_test(s, "half_close_keeps_other_direction",
			 test_half_close_keeps_other_direction))
		return -1;
	return 0;
}
