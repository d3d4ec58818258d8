/* SPDX-License-Identifier: MIT */
/*
 * test_nfs3_replies: nfscached_nfs3_replies_total{status} on the fake
 * upstream (nfs3_harness.h): every NFSv3 reply the server sends is
 * counted once under its nfsstat3 name (RFC 1813 s2.6), the NULL
 * procedure aside: a LOOKUP that finds its name, one that does not (from
 * the upstream, then from the negative entry), and one answered
 * NFS3ERR_JUKEBOX with the upstream down.
 */
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "nfs3_harness.h"
#include "server.h"

/* The count of status index i in h's server. */
static uint64_t replies(struct nfs3_h *h, unsigned i)
{
	struct server_stats st;

	uint64_t n;

	CU_ASSERT_FATAL(server_stats_get(h->d.server, &st) == 0);
	n = st.nfs3_replies[i];
	server_stats_release(&st);
	return n;
}

static void test_replies_counted_by_status(void)
{
	char f[] = "f", nope[] = "nope", other[] = "other";
	struct nfs3_h h;
	uint64_t total = 0;

	h_init(&h, NULL);
	toy_add_file(&h.toy, "f", 100);
	CU_ASSERT_EQUAL(h_lookup(&h, f, NULL), NFS3_OK);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_NOENT);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_NOENT);
	h.fu.state = UPSTREAM_DOWN;
	CU_ASSERT_EQUAL(h_lookup(&h, other, NULL), NFS3ERR_JUKEBOX);
	CU_ASSERT_EQUAL(replies(&h, NFS3_STATUS_NFS3_OK), 1);
	CU_ASSERT_EQUAL(replies(&h, NFS3_STATUS_NFS3ERR_NOENT), 2);
	CU_ASSERT_EQUAL(replies(&h, NFS3_STATUS_NFS3ERR_JUKEBOX), 1);
	for (unsigned i = 0; i < NFS3_NSTATUSES; i++)
		total += replies(&h, i);
	CU_ASSERT_EQUAL(total, 4);
	h_fini(&h);
}

/* The status index and its label agree with RFC 1813's values. */
static void test_status_names(void)
{
	CU_ASSERT_EQUAL(nfs3_status_index(NFS3ERR_JUKEBOX),
			NFS3_STATUS_NFS3ERR_JUKEBOX);
	CU_ASSERT_STRING_EQUAL(nfs3_status_label(
		nfs3_status_index(NFS3ERR_NOENT)), "NFS3ERR_NOENT");
	CU_ASSERT_STRING_EQUAL(nfs3_status_label(
		nfs3_status_index(12345)), "other");
	CU_ASSERT_PTR_NULL(nfs3_status_label(NFS3_NSTATUSES));
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_replies", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "replies_counted_by_status", test_replies_counted_by_status) ||
	    !CU_add_test(s, "status_names", test_status_names))
		return -1;
	return 0;
}
