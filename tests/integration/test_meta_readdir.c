/* SPDX-License-Identifier: MIT */
/*
 * test_meta_readdir: directory listings served from the metadata cache.
 *
 * A 2,000-entry directory (made on disk) is listed twice with READDIRPLUS
 * through the proxy: the second listing sends nothing upstream and
 * returns the same entries, cookies, handles and attributes. The cookies
 * are the upstream's own (compared with a listing straight from Ganesha),
 * so a client's cookie stays valid when the cache is refilled: a listing
 * resumed from a cookie of the first one after the proxy dropped its
 * copy goes on exactly where Ganesha goes on. A READDIR is answered from
 * the READDIRPLUS listing, with Ganesha's READDIR cookies.
 *
 * Attribute timeouts are 600 s (metatest_ac600.conf), so the children's
 * attributes stay fresh between the listings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "metatest_util.h"

#define NFILES	2000

static struct nfsc *px;		/* through the proxy */
static struct nfsc *dx;		/* straight to Ganesha */

/* Check that a and b hold the same entries in the same order. */
static void same_listing(const struct nfsc_listing *a,
			 const struct nfsc_listing *b, int attrs,
			 const char *what)
{
	size_t bad = 0;

	CHECK_MSG(a->n == b->n, "%s: %zu entries vs %zu", what, a->n, b->n);
	for (size_t i = 0; i < a->n && i < b->n; i++) {
		const struct nfsc_dent *x = &a->e[i], *y = &b->e[i];
		int ok = strcmp(x->name, y->name) == 0 &&
			 x->cookie == y->cookie && x->fileid == y->fileid;

		if (attrs)
			ok = ok && x->has_fh == y->has_fh &&
			     (!x->has_fh || nfsc_fh_equal(&x->fh, &y->fh)) &&
			     x->has_attr == y->has_attr &&
			     (!x->has_attr ||
			      (x->attr.fileid == y->attr.fileid &&
			       x->attr.size == y->attr.size &&
			       x->attr.type == y->attr.type &&
			       x->attr.mtime.seconds == y->attr.mtime.seconds &&
			       x->attr.mtime.nseconds == y->attr.mtime.nseconds));
		if (!ok && bad++ < 5)
			CHECK_MSG(0, "%s: entry %zu: %s cookie %llu vs %s cookie %llu",
				  what, i, x->name, (unsigned long long)x->cookie,
				  y->name, (unsigned long long)y->cookie);
	}
	CHECK_MSG(bad == 0, "%s: %zu entries differ", what, bad);
}

/* The directory "big" with NFILES files, looked up through the proxy
 * into *dir and directly into *ddir. */
static int make_big(nfs_fh3 *dir, nfs_fh3 *ddir)
{
	if (mt_disk_mkdir("big") != 0 || mt_disk_files("big", "entry-", NFILES) != 0)
		return -1;
	if (mt_lookup_path(px, "big", dir) != NFS3_OK ||
	    mt_lookup_path(dx, "big", ddir) != NFS3_OK)
		return -1;
	return 0;
}

static void test_second_listing_sends_nothing_upstream(void)
{
	struct nfsc_listing l1, l2, ld, r1, rd;
	struct ct_metrics m0, m1, m2;
	nfs_fh3 dir = { 0 }, ddir = { 0 };

	CU_ASSERT_FATAL(make_big(&dir, &ddir) == 0);
	CHECK_STAT(mt_list(px, &dir, 1, &l1), NFS3_OK);
	CHECK_EQ(l1.n, NFILES + 2);	/* with . and .. */
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	CHECK_STAT(mt_list(px, &dir, 1, &l2), NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	printf("\n  READDIRPLUS of %d entries: %u pages, then %u from the "
	       "cache\n", NFILES + 2, l1.pages, l2.pages);
	CHECK_EQ(mt_upstream_total_delta(&m0, &m1), 0);
	CHECK_EQ(ct_delta(&m0, &m1, MT_HIT("readdirplus")), l2.pages);
	CHECK_EQ(ct_delta(&m0, &m1, MT_MISS("readdirplus")), 0);
	CHECK_EQ(ct_metric(&m1, MT_LISTINGS), 1);
	CHECK(ct_metric(&m1, MT_ENTRIES) >= NFILES + 2);
	same_listing(&l1, &l2, 1, "second READDIRPLUS listing");
	/* The cookies are Ganesha's own. */
	CHECK_STAT(mt_list(dx, &ddir, 1, &ld), NFS3_OK);
	same_listing(&l1, &ld, 0, "READDIRPLUS through the proxy vs directly");
	/* A READDIR is answered from the READDIRPLUS listing, with the
	 * cookies Ganesha's READDIR hands out. */
	CHECK_STAT(mt_list(px, &dir, 0, &r1), NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m2) == 0);
	CHECK_EQ(mt_upstream_total_delta(&m1, &m2), 0);
	CHECK_EQ(ct_delta(&m1, &m2, MT_HIT("readdir")), r1.pages);
	CHECK_STAT(mt_list(dx, &ddir, 0, &rd), NFS3_OK);
	same_listing(&r1, &rd, 0, "READDIR from the cache vs directly");
	ct_print_deltas("second listing", &m0, &m1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m2);
	nfsc_listing_free(&l1);
	nfsc_listing_free(&l2);
	nfsc_listing_free(&ld);
	nfsc_listing_free(&r1);
	nfsc_listing_free(&rd);
	nfsc_fh_free(&dir);
	nfsc_fh_free(&ddir);
}

static void test_cookie_survives_a_refill(void)
{
	struct nfsc_listing l1, tail_p, tail_d, l3;
	struct ct_metrics m0, m1;
	nfs_fh3 dir = { 0 }, ddir = { 0 }, fh = { 0 };
	size_t mid;

	CU_ASSERT_FATAL(mt_lookup_path(px, "big", &dir) == NFS3_OK);
	CU_ASSERT_FATAL(mt_lookup_path(dx, "big", &ddir) == NFS3_OK);
	CHECK_STAT(mt_list(px, &dir, 1, &l1), NFS3_OK);
	CU_ASSERT_FATAL(l1.n > 1000);
	mid = l1.n / 2;
	/* A change through the proxy drops its listing. */
	CHECK_STAT(nfsc_create(px, &dir, "zz-new-entry", 0644, &fh, NULL),
		   NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	CHECK_EQ(ct_metric(&m0, MT_LISTINGS), 0);
	/* Resume from the middle of the old listing: the upstream answers
	 * it, as it would have without the proxy. */
	nfsc_list_dir_from(px, &dir, 1, MT_LIST_COUNT, l1.e[mid].cookie,
			   l1.verf, &tail_p);
	nfsc_list_dir_from(dx, &ddir, 1, MT_LIST_COUNT, l1.e[mid].cookie,
			   l1.verf, &tail_d);
	CHECK_STAT(tail_p.st, NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(ct_delta(&m0, &m1, MT_UP("readdirplus")), tail_p.pages);
	same_listing(&tail_p, &tail_d, 0, "listing resumed after a refill");
	/* A fresh listing refills the cache and shows the new name. */
	CHECK_STAT(mt_list(px, &dir, 1, &l3), NFS3_OK);
	CHECK_EQ(l3.n, l1.n + 1);
	CHECK(mt_has_name(&l3, "zz-new-entry"));
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	nfsc_listing_free(&l1);
	nfsc_listing_free(&tail_p);
	nfsc_listing_free(&tail_d);
	nfsc_listing_free(&l3);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&dir);
	nfsc_fh_free(&ddir);
}

/* Connect both clients. */
static int suite_init(void)
{
	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	return px && dx ? 0 : -1;
}

/* Close them. */
static int suite_clean(void)
{
	nfsc_close(&px);
	nfsc_close(&dx);
	return 0;
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("meta_readdir", suite_init, suite_clean);

	tcheck_report_at_exit("test_meta_readdir");
	if (!s ||
	    !CU_add_test(s, "second_listing_sends_nothing_upstream",
			 test_second_listing_sends_nothing_upstream) ||
	    !CU_add_test(s, "cookie_survives_a_refill",
			 test_cookie_survives_a_refill))
		return -1;
	return 0;
}
