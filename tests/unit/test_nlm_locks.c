/* SPDX-License-Identifier: MIT */
/*
 * test_nlm_locks: each client's locks held upstream (daemon/nlm/
 * nlm_locks.h): records by client, one record for a lock granted twice,
 * UNLOCKs that take their range out (removing, shrinking, splitting), a
 * client taken out whole.
 */
#include <string.h>

#include "cunit_main.h"
#include "nlm_locks.h"

static struct nlm_held rec(const char *fh, const char *oh, uint64_t off,
			   uint64_t len)
{
	static uint8_t ohbuf[8][64];
	static unsigned k;
	struct nlm_held h;

	memset(&h, 0, sizeof(h));
	h.export_id = 1;
	h.fh_len = strlen(fh);
	memcpy(h.fh, fh, h.fh_len);
	h.oh = ohbuf[k++ % 8];
	h.oh_len = strlen(oh);
	memcpy(h.oh, oh, h.oh_len);
	h.svid = 7;
	h.off = off;
	h.len = len;
	return h;
}

static unsigned list_len(const struct nlm_held *h)
{
	unsigned n = 0;

	for (; h; h = h->next)
		n++;
	return n;
}

static void test_add_and_take(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held a1 = rec("F1", "oA", 0, 10), a2 = rec("F2", "oA", 5, 5);
	struct nlm_held b1 = rec("F1", "oB", 50, 10);
	struct nlm_held *got;
	bool known;

	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a1), 1);	/* new client */
	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a2), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "b", &b1), 1);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	got = nlm_locks_take(t, "a", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_EQUAL(list_len(got), 2);
	/* Copies: the caller's buffers are not kept. */
	CU_ASSERT_PTR_NOT_EQUAL(got->oh, a1.oh);
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	CU_ASSERT_PTR_NULL(nlm_locks_take(t, "nobody", &known));
	CU_ASSERT_FALSE(known);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
	CU_ASSERT_PTR_NULL(t);
}

static void test_unlock_takes_ranges_out(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held r1 = rec("F", "o", 0, 10), r2 = rec("F", "o", 20, 10);
	struct nlm_held r3 = rec("F", "o", 40, 0), r4 = rec("F", "p", 0, 10);
	struct nlm_held r5 = rec("G", "o", 0, 10);
	const uint8_t *F = (const uint8_t *)"F", *G = (const uint8_t *)"G";
	const uint8_t *o = (const uint8_t *)"o", *pp = (const uint8_t *)"p";

	nlm_locks_add(t, "c", &r1);
	nlm_locks_add(t, "c", &r2);
	nlm_locks_add(t, "c", &r3);
	nlm_locks_add(t, "c", &r4);
	nlm_locks_add(t, "c", &r5);
	/* [0,5) off [0,10): [5,10) stays. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 5), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 5);
	/* [0,30) takes [5,10) and [20,30) of owner o on F; not r4 (owner
	 * p), r5 (file G) or r3 (from 40). */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 30), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	/* [40,1040) off [40,end): [1040,end) stays; [30,end) takes it. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 40, 1000), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 1039, 1), 0);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 30, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 2);
	/* The client stays known with no locks left. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, pp, 1, 0, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", G, 1, o, 1, 0, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "none", G, 1, o, 1, 0, 0), 0);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
}

static void test_split_and_repeat(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held r = rec("F", "o", 0, 100);
	const uint8_t *F = (const uint8_t *)"F", *o = (const uint8_t *)"o";
	struct nlm_held *got;
	bool known;

	/* The same lock granted again is one record. */
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &r), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &r), 0);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	/* An UNLOCK in the middle splits it: [0,10) and [20,100). */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 10, 10), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 2);
	/* Two halves of a lock unlocked in turn leave nothing. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 10), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 20, 40), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	got = nlm_locks_take(t, "c", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_EQUAL(got->off, 60);
	CU_ASSERT_EQUAL(got->len, 40);
	CU_ASSERT_PTR_NULL(got->next);
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
}

static void test_refused(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held h = rec("F", "o", 0, 1);

	CU_ASSERT_EQUAL(nlm_locks_add(t, "", &h), -1);
	h.fh_len = 0;
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), -1);
	h = rec("F", "o", 0, 1);
	h.oh_len = NLM_LOCKS_OH_MAX + 1;
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), -1);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 0);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	nlm_locks_free(&t);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nlm_locks", NULL, NULL);

	if (!s || !CU_add_test(s, "add_and_take", test_add_and_take) ||
	    !CU_add_test(s, "unlock_takes_ranges_out",
			 test_unlock_takes_ranges_out) ||
	    !CU_add_test(s, "split_and_repeat", test_split_and_repeat) ||
	    !CU_add_test(s, "refused", test_refused))
		return -1;
	return 0;
}
