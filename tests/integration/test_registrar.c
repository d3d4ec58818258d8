/* SPDX-License-Identifier: MIT */
/*
 * test_registrar: registrar_map_set / registrar_map_unset against the
 * machine's real rpcbind, on a program number of the user-defined range
 * (RFC 5531 appendix B: 0x20000000..0x3fffffff) made from our pid, so that
 * neither NFS's nor MOUNT's mappings, nor a parallel run's, are touched.
 * "Another server" is played by plain pmap_set calls on another port,
 * with nothing listening there (a stale mapping) or with a thread that
 * answers every call on that port with an accepted, successful empty
 * reply (a live one). Every mapping made is removed at the end
 * (pmap_unset), pass or fail.
 *   - a fresh mapping is made and replaces nothing;
 *   - a stale one to another port is replaced and not put back;
 *   - a live one is kept under "skip", stops the start under "refuse",
 *     and under "replace" is replaced and put back at exit;
 *   - at exit ours is removed;
 *   - at exit a mapping another server made since ours is left alone.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "registrar.h"

#define OURS 41001

static unsigned long test_prog;

/* What rpcbind maps test_prog v1 over TCP to (0: nothing). */
static unsigned short mapped(void)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(PMAPPORT);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return pmap_getport(&sin, test_prog, 1, IPPROTO_TCP);
}

static unsigned short THEIRS;	/* the other server's port: bound by
				 * the test, listening only while live */
static int live_fd = -1;	/* the other server's socket */
static pthread_t live_thread;

/* Read n bytes from fd. 0, or -1 at EOF or error. */
static int read_n(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Answer every call on c with MSG_ACCEPTED SUCCESS and no body (RFC
 * 5531 section 9) until the peer closes. */
static void live_serve(int c)
{
	uint8_t mark[4], body[512];

	while (read_n(c, mark, 4) == 0) {
		uint32_t len = ntohl(*(uint32_t *)mark) & 0x7fffffffu;
		uint32_t reply[7];

		if (len < 4 || len > sizeof(body) || read_n(c, body, len) != 0)
			break;
		reply[0] = htonl(0x80000000u | 24);
		memcpy(&reply[1], body, 4);		/* xid */
		reply[2] = htonl(1);			/* REPLY */
		reply[3] = htonl(0);			/* MSG_ACCEPTED */
		reply[4] = htonl(0);			/* AUTH_NONE */
		reply[5] = htonl(0);			/* verifier length */
		reply[6] = htonl(0);			/* SUCCESS */
		if (write(c, reply, sizeof(reply)) != (ssize_t)sizeof(reply))
			break;
	}
	close(c);
}

/* The live server: accept and serve connections until live_fd closes. */
static void *live_main(void *arg)
{
	int c;

	(void)arg;
	while ((c = accept(live_fd, NULL, NULL)) >= 0)
		live_serve(c);
	return NULL;
}

/* Bind live_fd to a free port of 127.0.0.1, kept in THEIRS; nothing
 * listens there yet, so calls to it are refused. 0 or -1. */
static int theirs_bind(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	live_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (live_fd < 0 || bind(live_fd, (struct sockaddr *)&sin, len) != 0 ||
	    getsockname(live_fd, (struct sockaddr *)&sin, &len) != 0)
		return -1;
	THEIRS = ntohs(sin.sin_port);
	return 0;
}

/* Make the other server live: listen on THEIRS and answer. 0 or -1. */
static int live_start(void)
{
	if (listen(live_fd, 8) != 0 ||
	    pthread_create(&live_thread, NULL, live_main, NULL) != 0)
		return -1;
	return 0;
}

/* Stop the live server; THEIRS is bound again, not listening. */
static void live_stop(void)
{
	shutdown(live_fd, SHUT_RDWR);
	close(live_fd);
	pthread_join(live_thread, NULL);
	live_fd = -1;
	if (theirs_bind() != 0)
		CU_FAIL("cannot bind the other server's port again");
}

static struct registrar_map ours(void)
{
	struct registrar_map m = { .prog = test_prog, .vers = 1,
				   .port = OURS, .name = "test program" };

	return m;
}

static void test_fresh_mapping_is_made_and_removed(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_EQUAL_FATAL(mapped(), 0);
	CU_ASSERT_EQUAL(registrar_map_set(&m, "skip"), REGISTRAR_OK);
	CU_ASSERT_TRUE(m.set);
	CU_ASSERT_EQUAL(m.replaced, 0);
	CU_ASSERT_EQUAL(mapped(), OURS);
	registrar_map_unset(&m);
	CU_ASSERT_FALSE(m.set);
	CU_ASSERT_EQUAL(mapped(), 0);
}

static void test_a_stale_mapping_is_replaced_and_not_put_back(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_FALSE_FATAL(registrar_port_answers(THEIRS, test_prog, 1));
	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, THEIRS));
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	CU_ASSERT_EQUAL(registrar_map_set(&m, "skip"), REGISTRAR_OK);
	CU_ASSERT_EQUAL(m.replaced, 0);
	CU_ASSERT_EQUAL(mapped(), OURS);
	registrar_map_unset(&m);
	CU_ASSERT_EQUAL(mapped(), 0);
}

static void test_a_live_servers_mapping_is_kept_under_skip(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_FATAL(live_start() == 0);
	CU_ASSERT_TRUE(registrar_port_answers(THEIRS, test_prog, 1));
	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, THEIRS));
	CU_ASSERT_EQUAL(registrar_map_set(&m, "skip"), REGISTRAR_SKIPPED);
	CU_ASSERT_FALSE(m.set);
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	registrar_map_unset(&m);
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	CU_ASSERT_EQUAL(registrar_map_set(&m, "refuse"), REGISTRAR_REFUSED);
	CU_ASSERT_FALSE(m.set);
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	pmap_unset(test_prog, 1);
	live_stop();
}

static void test_a_live_servers_mapping_replaced_is_put_back(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_FATAL(live_start() == 0);
	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, THEIRS));
	CU_ASSERT_EQUAL(registrar_map_set(&m, "replace"), REGISTRAR_OK);
	CU_ASSERT_TRUE(m.set);
	CU_ASSERT_EQUAL(m.replaced, THEIRS);
	CU_ASSERT_EQUAL(mapped(), OURS);
	registrar_map_unset(&m);
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	CU_ASSERT_EQUAL(m.replaced, 0);
	pmap_unset(test_prog, 1);
	live_stop();
}

static void test_a_later_servers_mapping_survives_our_exit(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_EQUAL(registrar_map_set(&m, "skip"), REGISTRAR_OK);
	/* Another server starts after us and takes the program over. */
	pmap_unset(test_prog, 1);
	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, THEIRS));
	registrar_map_unset(&m);
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	pmap_unset(test_prog, 1);
	CU_ASSERT_EQUAL(mapped(), 0);
}

static void test_unset_without_set_touches_nothing(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, OURS));
	registrar_map_unset(&m);	/* never set by us: not ours */
	CU_ASSERT_EQUAL(mapped(), OURS);
	pmap_unset(test_prog, 1);
}

static int suite_init(void)
{
	test_prog = 0x2a5c0000UL + ((unsigned long)getpid() & 0xffff);
	pmap_unset(test_prog, 1);
	return theirs_bind();
}

static int suite_clean(void)
{
	pmap_unset(test_prog, 1);
	if (live_fd >= 0)
		close(live_fd);
	return 0;
}

#define T(f) { #f, f }

int test_register(void)
{
	static CU_TestInfo tests[] = {
		T(test_fresh_mapping_is_made_and_removed),
		T(test_a_stale_mapping_is_replaced_and_not_put_back),
		T(test_a_live_servers_mapping_is_kept_under_skip),
		T(test_a_live_servers_mapping_replaced_is_put_back),
		T(test_a_later_servers_mapping_survives_our_exit),
		T(test_unset_without_set_touches_nothing),
		CU_TEST_INFO_NULL,
	};
	CU_pSuite s = CU_add_suite("registrar", suite_init, suite_clean);

	if (!s)
		return -1;
	for (CU_TestInfo *t = tests; t->pName; t++)
		if (!CU_add_test(s, t->pName, t->pTestFunc))
			return -1;
	return 0;
}
