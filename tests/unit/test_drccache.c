/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the duplicate request cache (daemon/rpc/drc.c): a
 * retransmission is answered from the cache, a parked duplicate gets the
 * original's reply, the key is address+port+xid+procedure+arguments,
 * entries expire and the cache stays within its size.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "drc.h"

static int delivered;
static int released;
static uint8_t last_reply[64];
static size_t last_len;

/* Record a delivery. */
static void deliver(void *w, const uint8_t *reply, size_t len)
{
	(void)w;
	delivered++;
	memcpy(last_reply, reply, len < sizeof(last_reply) ? len : sizeof(last_reply));
	last_len = len;
}

/* Record a release. */
static void release(void *w)
{
	(void)w;
	released++;
}

/* Fill an IPv4 address with port. */
static struct sockaddr_in addr4(const char *ip, unsigned port)
{
	struct sockaddr_in in;

	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &in.sin_addr);
	return in;
}

static const uint8_t args_a[] = { 1, 2, 3, 4 };
static const uint8_t args_b[] = { 1, 2, 3, 5 };

static void test_retransmission_after_reply_is_done(void)
{
	struct drc *d = drc_new(16, 120, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct drc_entry *e, *e2;
	const uint8_t *r;
	size_t len;

	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 7, 8, args_a, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"reply", 5, 1);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 7, 8, args_a, 4, 2, &e2), DRC_DONE);
	r = drc_entry_reply(e2, &len);
	CU_ASSERT_EQUAL(len, 5);
	CU_ASSERT_NSTRING_EQUAL(r, "reply", 5);
	CU_ASSERT_EQUAL(drc_count(d), 1);
	drc_free(&d);
	CU_ASSERT_PTR_NULL(d);
}

static void test_duplicate_in_progress_waits_for_reply(void)
{
	struct drc *d = drc_new(16, 120, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct drc_entry *e, *e2;
	int w1, w2;

	delivered = 0;
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 9, 12, args_a, 4, 0, &e), DRC_NEW);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 9, 12, args_a, 4, 0, &e2), DRC_INPROGRESS);
	CU_ASSERT_PTR_EQUAL(e, e2);
	CU_ASSERT_EQUAL(drc_add_waiter(e2, &w1), 0);
	CU_ASSERT_EQUAL(drc_add_waiter(e2, &w2), 0);
	drc_complete(d, e, (const uint8_t *)"abc", 3, 1);
	CU_ASSERT_EQUAL(delivered, 2);
	CU_ASSERT_EQUAL(last_len, 3);
	CU_ASSERT_NSTRING_EQUAL(last_reply, "abc", 3);
	drc_free(&d);
}

static void test_key_includes_port_proc_and_arguments(void)
{
	struct drc *d = drc_new(16, 120, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct sockaddr_in b = addr4("10.0.0.1", 901);
	struct drc_entry *e;

	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 1, 8, args_a, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"x", 1, 0);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&b, 1, 8, args_a, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"y", 1, 0);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 1, 12, args_a, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"z", 1, 0);
	/* Same xid, other arguments: xid reuse, executed again. */
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 1, 8, args_b, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"w", 1, 0);
	CU_ASSERT_EQUAL(drc_count(d), 3);
	drc_free(&d);
}

static void test_entries_expire_and_stay_bounded(void)
{
	struct drc *d = drc_new(4, 10, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct drc_entry *e;

	for (uint32_t x = 0; x < 10; x++) {
		CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, x, 8, args_a, 4, 0, &e), DRC_NEW);
		drc_complete(d, e, (const uint8_t *)"r", 1, 0);
		CU_ASSERT(drc_count(d) <= 4);
	}
	CU_ASSERT_EQUAL(drc_count(d), 4);
	/* The oldest went first: xid 9 is still answered, xid 0 is not. */
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 9, 8, args_a, 4, 1, &e), DRC_DONE);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 0, 8, args_a, 4, 1, &e), DRC_NEW);
	drc_abandon(d, e);
	/* After the timeout every DONE entry is gone. */
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 9, 8, args_a, 4, 11, &e), DRC_NEW);
	CU_ASSERT_EQUAL(drc_count(d), 1);
	drc_free(&d);
}

static void test_disabled_cache_and_waiter_limit(void)
{
	struct drc *d = drc_new(0, 10, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct drc_entry *e;
	int w[DRC_MAX_WAITERS + 1];

	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 1, 8, args_a, 4, 0, &e), DRC_DISABLED);
	CU_ASSERT_PTR_NULL(e);
	drc_free(&d);

	d = drc_new(4, 10, deliver, release);
	released = 0;
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 1, 8, args_a, 4, 0, &e), DRC_NEW);
	for (int i = 0; i < DRC_MAX_WAITERS; i++)
		CU_ASSERT_EQUAL(drc_add_waiter(e, &w[i]), 0);
	CU_ASSERT_EQUAL(drc_add_waiter(e, &w[DRC_MAX_WAITERS]), -1);
	drc_abandon(d, e);
	CU_ASSERT_EQUAL(released, DRC_MAX_WAITERS);
	CU_ASSERT_EQUAL(drc_count(d), 0);
	drc_free(&d);
}

/* drc_check_why holds through an entry's life and names a broken entry
 * (its magic number, the first field drc.h promises). */
static void test_check_names_broken_entry(void)
{
	struct drc *d = drc_new(2, 120, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct drc_entry *e, *e2;
	uint32_t *magic;
	const char *why;

	CU_ASSERT_PTR_NULL(drc_check_why(d));
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 7, 8, args_a, 4, 0, &e), DRC_NEW);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 9, 8, args_a, 4, 0, &e2), DRC_NEW);
	CU_ASSERT_PTR_NULL(drc_check_why(d));
	magic = (uint32_t *)e;
	*magic ^= 1;
	why = drc_check_why(d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(why);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "magic"));
	*magic ^= 1;
	drc_complete(d, e, (const uint8_t *)"reply", 5, 1);
	CU_ASSERT_PTR_NULL(drc_check_why(d));
	drc_abandon(d, e2);
	CU_ASSERT_PTR_NULL(drc_check_why(d));
	CU_ASSERT_EQUAL(drc_count(d), 1);
	drc_free(&d);
}

static void test_v4_mapped_v6_is_the_same_client(void)
{
	struct drc *d = drc_new(4, 10, deliver, release);
	struct sockaddr_in a = addr4("10.0.0.1", 900);
	struct sockaddr_in6 a6;
	struct drc_entry *e;

	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	a6.sin6_port = htons(900);
	inet_pton(AF_INET6, "::ffff:10.0.0.1", &a6.sin6_addr);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a, 5, 8, args_a, 4, 0, &e), DRC_NEW);
	drc_complete(d, e, (const uint8_t *)"r", 1, 0);
	CU_ASSERT_EQUAL(drc_begin(d, (struct sockaddr *)&a6, 5, 8, args_a, 4, 0, &e), DRC_DONE);
	drc_free(&d);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("drc", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "retransmission_after_reply_is_done", test_retransmission_after_reply_is_done);
	CU_add_test(s, "duplicate_in_progress_waits_for_reply", test_duplicate_in_progress_waits_for_reply);
	CU_add_test(s, "key_includes_port_proc_and_arguments", test_key_includes_port_proc_and_arguments);
	CU_add_test(s, "entries_expire_and_stay_bounded", test_entries_expire_and_stay_bounded);
	CU_add_test(s, "disabled_cache_and_waiter_limit", test_disabled_cache_and_waiter_limit);
	CU_add_test(s, "v4_mapped_v6_is_the_same_client", test_v4_mapped_v6_is_the_same_client);
	CU_add_test(s, "check_names_broken_entry", test_check_names_broken_entry);
	return 0;
}
