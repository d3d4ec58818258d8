/* SPDX-License-Identifier: MIT */
/*
 * test_registrar: registrar_map_set / registrar_map_unset against the
 * machine's real rpcbind, on a program number of the user-defined range
 * (RFC 5531 appendix B: 0x20000000..0x3fffffff) made from our pid, so that
 * neither NFS's nor MOUNT's mappings, nor a parallel run's, are touched.
 * "Another server" is played by plain pmap_set calls on another port.
 * Every mapping made is removed at the end (pmap_unset), pass or fail.
 *   - a fresh mapping is made and replaces nothing;
 *   - one to another port is replaced, and its port is reported;
 *   - at exit ours is removed;
 *   - at exit a mapping another server made since ours is left alone.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "registrar.h"

#define OURS 41001
#define THEIRS 41002

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
	CU_ASSERT_EQUAL(registrar_map_set(&m), 0);
	CU_ASSERT_TRUE(m.set);
	CU_ASSERT_EQUAL(m.replaced, 0);
	CU_ASSERT_EQUAL(mapped(), OURS);
	registrar_map_unset(&m);
	CU_ASSERT_FALSE(m.set);
	CU_ASSERT_EQUAL(mapped(), 0);
}

static void test_another_servers_mapping_is_replaced_with_its_port(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_TRUE_FATAL(pmap_set(test_prog, 1, IPPROTO_TCP, THEIRS));
	CU_ASSERT_EQUAL(mapped(), THEIRS);
	CU_ASSERT_EQUAL(registrar_map_set(&m), 0);
	CU_ASSERT_EQUAL(m.replaced, THEIRS);
	CU_ASSERT_EQUAL(mapped(), OURS);
	registrar_map_unset(&m);
	CU_ASSERT_EQUAL(mapped(), 0);
}

static void test_a_later_servers_mapping_survives_our_exit(void)
{
	struct registrar_map m = ours();

	CU_ASSERT_EQUAL(registrar_map_set(&m), 0);
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
	return 0;
}

static int suite_clean(void)
{
	pmap_unset(test_prog, 1);
	return 0;
}

#define T(f) { #f, f }

int test_register(void)
{
	static CU_TestInfo tests[] = {
		T(test_fresh_mapping_is_made_and_removed),
		T(test_another_servers_mapping_is_replaced_with_its_port),
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
