/* SPDX-License-Identifier: MIT */
/*
 * test_meta_consistency: how long the metadata cache may hide another
 * writer's change, and that the proxy's own changes show at once
 * (docs/semantics.md "Metadata").
 *
 * The configuration is in the environment, as the ctest entry sets it
 * (metatest_*.conf):
 *   CT_NEG     negative_timeout, seconds (0 turns negative entries off)
 *   CT_ACDIR   acdirmin = acdirmax, seconds
 *   CT_STRICT  1 under `strict`
 * File attributes are trusted 600 s throughout. Time is the proxy's test
 * clock (NFSCACHED_TEST_CLOCK=1): the timeouts are long, so that real time
 * never ends them during a step however slow the machine, and the test
 * advances the clock to half of one (still served from the cache) and then
 * just past it (asked upstream again).
 *
 *   - a name created on disk (another writer) after a LOOKUP found it
 *     missing shows through the proxy once negative_timeout has passed,
 *     and at once when it is 0;
 *   - a RENAME through the proxy shows to another client of the proxy at
 *     once, in LOOKUP and in listings, within and across directories;
 *   - a directory changed on disk is listed anew once acdirmax has
 *     passed, and on every listing under `strict`;
 *   - a RENAME of one hard link onto another name of the same file (a
 *     POSIX no-op, both names stay) leaves both names found through the
 *     proxy, at once.
 * Each step checks the exact upstream calls it cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "metatest_util.h"

static struct nfsc *ca;		/* client A through the proxy */
static struct nfsc *cb;		/* client B through the proxy */
static double neg;		/* CT_NEG */
static double acdir;		/* CT_ACDIR */
static int strict;		/* CT_STRICT */

/* LOOKUP name in dir as c and return the status; count what it cost
 * upstream in *lookups (LOOKUPs sent). */
static int lookup_counted(struct nfsc *c, const nfs_fh3 *dir,
			  const char *name, nfs_fh3 *fh, uint64_t *lookups)
{
	struct ct_metrics m0, m1;
	nfs_fh3 tmp = { 0 };
	int st;

	*lookups = CT_ABSENT;
	if (ct_metrics_read(&m0) != 0)
		return NFSC_ERR_RPC;
	st = nfsc_lookup(c, dir, name, fh ? fh : &tmp, NULL);
	if (ct_metrics_read(&m1) == 0) {
		*lookups = ct_delta(&m0, &m1, MT_UP("lookup"));
		CHECK_EQ(mt_upstream_total_delta(&m0, &m1), *lookups);
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
	nfsc_fh_free(&tmp);
	return st;
}

static void test_name_created_elsewhere_shows_after_negative_timeout(void)
{
	struct ct_metrics m0, m1;
	nfs_fh3 dir = { 0 }, fh = { 0 };
	uint64_t n = 0;

	CU_ASSERT_FATAL(mt_disk_mkdir("neg-dir") == 0);
	CU_ASSERT_FATAL(mt_lookup_path(ca, "neg-dir", &dir) == NFS3_OK);
	CHECK_STAT(lookup_counted(ca, &dir, "late", NULL, &n), NFS3ERR_NOENT);
	CHECK_EQ(n, 1);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	CHECK_STAT(lookup_counted(ca, &dir, "late", NULL, &n), NFS3ERR_NOENT);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(n, neg > 0 ? 0 : 1);
	CHECK_EQ(ct_delta(&m0, &m1, MT_NEG_HITS), neg > 0 ? 1 : 0);
	/* Another writer creates it on the server. */
	CU_ASSERT_FATAL(mt_disk_touch("neg-dir/late") == 0);
	if (neg > 0) {
		CHECK_STAT(lookup_counted(ca, &dir, "late", NULL, &n),
			   NFS3ERR_NOENT);
		CHECK_EQ(n, 0);
		CU_ASSERT_FATAL(tclock_advance(neg / 2) == 0);
		ct_metrics_free(&m0);
		ct_metrics_free(&m1);
		CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
		CHECK_STAT(lookup_counted(ca, &dir, "late", NULL, &n),
			   NFS3ERR_NOENT);
		CHECK_EQ(n, 0);
		CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
		CHECK_EQ(ct_delta(&m0, &m1, MT_NEG_HITS), 1);
		CU_ASSERT_FATAL(tclock_advance(neg / 2 + 0.1) == 0);
	}
	CHECK_STAT(lookup_counted(ca, &dir, "late", &fh, &n), NFS3_OK);
	CHECK_EQ(n, 1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&dir);
}

static void test_rename_shows_to_another_client_at_once(void)
{
	nfs_fh3 da = { 0 }, db = { 0 }, d2 = { 0 }, d2b = { 0 };
	nfs_fh3 f = { 0 }, seen = { 0 };
	struct nfsc_listing l;
	uint64_t n = 0;
	RENAME3args ra;
	RENAME3res rr;

	CHECK_STAT(nfsc_mkdir(ca, nfsc_root(ca), "ren", 0755, &da, NULL), NFS3_OK);
	CHECK_STAT(nfsc_mkdir(ca, nfsc_root(ca), "ren2", 0755, &d2, NULL), NFS3_OK);
	CHECK_STAT(nfsc_create(ca, &da, "old", 0644, &f, NULL), NFS3_OK);
	CU_ASSERT_FATAL(mt_lookup_path(cb, "ren", &db) == NFS3_OK);
	CU_ASSERT_FATAL(mt_lookup_path(cb, "ren2", &d2b) == NFS3_OK);
	/* B knows "old" and that "new" does not exist. */
	CHECK_STAT(nfsc_lookup(cb, &db, "old", &seen, NULL), NFS3_OK);
	nfsc_fh_free(&seen);
	CHECK_STAT(nfsc_lookup(cb, &db, "new", &seen, NULL), NFS3ERR_NOENT);
	CHECK_STAT(mt_list(cb, &db, 1, &l), NFS3_OK);
	CHECK(mt_has_name(&l, "old") && !mt_has_name(&l, "new"));
	nfsc_listing_free(&l);
	/* A renames it. */
	memset(&ra, 0, sizeof(ra));
	ra.from.dir = da;
	ra.from.name = nfsc_mut("old");
	ra.to.dir = da;
	ra.to.name = nfsc_mut("new");
	CHECK_STAT(nfsc_call(ca, NFS3_RENAME, &ra, &rr, NFSC_TIMEOUT_MS), NFS3_OK);
	nfsc_res_free(NFS3_RENAME, &rr);
	/* B sees it at once: "old" is known gone (a negative entry, or
	 * asked upstream when those are off), "new" is the same file (its
	 * attributes are asked for again: a rename changes its ctime). */
	CHECK_STAT(lookup_counted(cb, &db, "old", NULL, &n), NFS3ERR_NOENT);
	CHECK_EQ(n, neg > 0 ? 0 : 1);
	CHECK_STAT(lookup_counted(cb, &db, "new", &seen, &n), NFS3_OK);
	CHECK_EQ(n, 1);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	CHECK_STAT(mt_list(cb, &db, 1, &l), NFS3_OK);
	CHECK(!mt_has_name(&l, "old") && mt_has_name(&l, "new"));
	nfsc_listing_free(&l);
	/* Across directories. */
	ra.from.name = nfsc_mut("new");
	ra.to.dir = d2;
	ra.to.name = nfsc_mut("moved");
	CHECK_STAT(nfsc_call(ca, NFS3_RENAME, &ra, &rr, NFSC_TIMEOUT_MS), NFS3_OK);
	nfsc_res_free(NFS3_RENAME, &rr);
	CHECK_STAT(lookup_counted(cb, &db, "new", NULL, &n), NFS3ERR_NOENT);
	CHECK_EQ(n, neg > 0 ? 0 : 1);
	CHECK_STAT(lookup_counted(cb, &d2b, "moved", &seen, &n), NFS3_OK);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	nfsc_fh_free(&f);
	nfsc_fh_free(&da);
	nfsc_fh_free(&db);
	nfsc_fh_free(&d2);
	nfsc_fh_free(&d2b);
}

/* List dir through B and return in *readdirs the READDIRPLUS calls and
 * in *getattrs the GETATTRs that cost upstream (nothing else is sent). */
static void list_counted(const nfs_fh3 *dir, struct nfsc_listing *l,
			 uint64_t *readdirs, uint64_t *getattrs)
{
	struct ct_metrics m0, m1;

	*readdirs = *getattrs = CT_ABSENT;
	if (ct_metrics_read(&m0) != 0)
		return;
	CHECK_STAT(mt_list(cb, dir, 1, l), NFS3_OK);
	if (ct_metrics_read(&m1) == 0) {
		*readdirs = ct_delta(&m0, &m1, MT_UP("readdirplus"));
		*getattrs = ct_delta(&m0, &m1, MT_UP("getattr"));
		CHECK_EQ(mt_upstream_total_delta(&m0, &m1), *readdirs + *getattrs);
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
}

static void test_directory_changed_elsewhere_is_listed_anew(void)
{
	struct nfsc_listing l;
	nfs_fh3 dir = { 0 };
	uint64_t rd = 0, ga = 0;

	CU_ASSERT_FATAL(mt_disk_mkdir("chg") == 0);
	CU_ASSERT_FATAL(mt_disk_files("chg", "f-", 10) == 0);
	CU_ASSERT_FATAL(mt_lookup_path(cb, "chg", &dir) == NFS3_OK);
	list_counted(&dir, &l, &rd, &ga);
	CHECK_EQ(l.n, 12);
	CHECK_EQ(rd, 1);
	nfsc_listing_free(&l);
	/* Unchanged: from the cache (revalidated first under strict). */
	list_counted(&dir, &l, &rd, &ga);
	CHECK_EQ(rd, 0);
	CHECK_EQ(ga, strict ? 1 : 0);
	nfsc_listing_free(&l);
	/* Another writer adds a name. */
	CU_ASSERT_FATAL(mt_disk_touch("chg/added") == 0);
	list_counted(&dir, &l, &rd, &ga);
	if (strict) {
		CHECK_EQ(ga, 1);
		CHECK_EQ(rd, 1);
		CHECK_EQ(l.n, 13);
		CHECK(mt_has_name(&l, "added"));
	} else {
		/* Within acdirmax the proxy trusts what it has. */
		CHECK_EQ(ga, 0);
		CHECK_EQ(rd, 0);
		CHECK_EQ(l.n, 12);
		CHECK(!mt_has_name(&l, "added"));
		nfsc_listing_free(&l);
		CU_ASSERT_FATAL(tclock_advance(acdir / 2) == 0);
		list_counted(&dir, &l, &rd, &ga);
		CHECK_EQ(ga, 0);
		CHECK_EQ(rd, 0);
		CHECK(!mt_has_name(&l, "added"));
		nfsc_listing_free(&l);
		CU_ASSERT_FATAL(tclock_advance(acdir / 2 + 0.1) == 0);
		list_counted(&dir, &l, &rd, &ga);
		CHECK_EQ(ga, 1);
		CHECK_EQ(rd, 1);
		CHECK_EQ(l.n, 13);
		CHECK(mt_has_name(&l, "added"));
	}
	nfsc_listing_free(&l);
	nfsc_fh_free(&dir);
}

/* Read the configuration and connect both clients. */
static int suite_init(void)
{
	neg = (double)ct_env_u64("CT_NEG", 3);
	acdir = (double)ct_env_u64("CT_ACDIR", 600);
	strict = (int)ct_env_u64("CT_STRICT", 0);
	ca = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	cb = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	return ca && cb ? 0 : -1;
}

/* Close them. */
static int suite_clean(void)
{
	nfsc_close(&ca);
	nfsc_close(&cb);
	return 0;
}

/* link(2) from to to, both relative to the export directory on disk. */
static int disk_link(const char *from, const char *to)
{
	const char *root = getenv("NFSC_EXPORT_DIR");
	char a[4096], b[4096];

	if (!root)
		return -1;
	snprintf(a, sizeof(a), "%s/%s", root, from);
	snprintf(b, sizeof(b), "%s/%s", root, to);
	return link(a, b);
}

/* RENAME d/BAR onto d/DIR/BAR, both links to one file: a no-op. */
static void test_rename_onto_own_hard_link_keeps_both_names(void)
{
	nfs_fh3 d = { 0 }, sub = { 0 }, f = { 0 }, seen = { 0 };
	LINK3args la;
	LINK3res lr;
	RENAME3args ra;
	RENAME3res rr;

	CHECK_STAT(nfsc_mkdir(ca, nfsc_root(ca), "hl", 0755, &d, NULL), NFS3_OK);
	CHECK_STAT(nfsc_mkdir(ca, &d, "DIR", 0755, &sub, NULL), NFS3_OK);
	CHECK_STAT(nfsc_create(ca, &sub, "BAR", 0644, &f, NULL), NFS3_OK);
	memset(&la, 0, sizeof(la));
	la.file = f;
	la.link.dir = d;
	la.link.name = nfsc_mut("BAR");
	CHECK_STAT(nfsc_call(ca, NFS3_LINK, &la, &lr, NFSC_TIMEOUT_MS), NFS3_OK);
	nfsc_res_free(NFS3_LINK, &lr);
	/* Both names known to the proxy, as a client's stat would make them. */
	CHECK_STAT(nfsc_lookup(ca, &d, "BAR", &seen, NULL), NFS3_OK);
	nfsc_fh_free(&seen);
	CHECK_STAT(nfsc_lookup(ca, &sub, "BAR", &seen, NULL), NFS3_OK);
	nfsc_fh_free(&seen);
	memset(&ra, 0, sizeof(ra));
	ra.from.dir = d;
	ra.from.name = nfsc_mut("BAR");
	ra.to.dir = sub;
	ra.to.name = nfsc_mut("BAR");
	CHECK_STAT(nfsc_call(ca, NFS3_RENAME, &ra, &rr, NFSC_TIMEOUT_MS), NFS3_OK);
	nfsc_res_free(NFS3_RENAME, &rr);
	/* Directly both names stay (POSIX rename(2): "If oldpath and newpath
	 * are existing hard links referring to the same file, then rename()
	 * does nothing"); through the proxy, for both clients, at once. */
	CHECK_STAT(nfsc_lookup(ca, &d, "BAR", &seen, NULL), NFS3_OK);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	CHECK_STAT(nfsc_lookup(ca, &sub, "BAR", &seen, NULL), NFS3_OK);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	CHECK_STAT(mt_lookup_path(cb, "hl/BAR", &seen), NFS3_OK);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	nfsc_fh_free(&f);
	/* The target linked by another writer, unknown to the proxy: the
	 * source name must not be cached absent either. */
	CHECK_STAT(nfsc_create(ca, &d, "Q", 0644, &f, NULL), NFS3_OK);
	CHECK(disk_link("hl/Q", "hl/DIR/Q") == 0);
	ra.from.name = nfsc_mut("Q");
	ra.to.name = nfsc_mut("Q");
	CHECK_STAT(nfsc_call(ca, NFS3_RENAME, &ra, &rr, NFSC_TIMEOUT_MS), NFS3_OK);
	nfsc_res_free(NFS3_RENAME, &rr);
	CHECK_STAT(nfsc_lookup(ca, &d, "Q", &seen, NULL), NFS3_OK);
	CHECK(nfsc_fh_equal(&seen, &f));
	nfsc_fh_free(&seen);
	nfsc_fh_free(&f);
	nfsc_fh_free(&sub);
	nfsc_fh_free(&d);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("meta_consistency", suite_init, suite_clean);

	tcheck_report_at_exit("test_meta_consistency");
	if (!s ||
	    !CU_add_test(s, "name_created_elsewhere_shows_after_negative_timeout",
			 test_name_created_elsewhere_shows_after_negative_timeout) ||
	    !CU_add_test(s, "rename_shows_to_another_client_at_once",
			 test_rename_shows_to_another_client_at_once) ||
	    !CU_add_test(s, "directory_changed_elsewhere_is_listed_anew",
			 test_directory_changed_elsewhere_is_listed_anew) ||
	    !CU_add_test(s, "rename_onto_own_hard_link_keeps_both_names",
			 test_rename_onto_own_hard_link_keeps_both_names))
		return -1;
	return 0;
}
