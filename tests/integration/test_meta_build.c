/* SPDX-License-Identifier: MIT */
/*
 * test_meta_build: the metadata calls of a build, through the proxy. A
 * build looks up and stats the same files over and over; each of those
 * calls must reach the upstream at most once while the attributes are
 * trusted (docs/semantics.md "Metadata").
 *
 * The loop: 20 passes, each a LOOKUP and a GETATTR of the same 50 names
 * in each of 5 directories (250 names), all made on disk beforehand and
 * within the attribute timeouts the configuration sets (600 s). With the
 * cache (CT_META_CACHE=1) the first pass's LOOKUPs go upstream and
 * nothing else: 250 LOOKUPs, 0 GETATTRs for 10,000 client calls. Without
 * it (CT_META_CACHE=0: meta_cache_size = 0 and strict, see
 * metatest_nocache*.conf) every call goes upstream: 5,000 and 5,000. The
 * test prints both counts for the record.
 *
 * Also: ACCESS results are kept per credential, for directories too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "metatest_util.h"

#define NDIRS	5
#define NNAMES	50
#define PASSES	20
#define OTHER_UID 4242u

static struct nfsc *px;
static int cached;		/* CT_META_CACHE: the cache is on */

/* Make build-dN/src-nnnn on disk and look the directories up. */
static int make_tree(nfs_fh3 *dirs)
{
	char name[64];

	for (int d = 0; d < NDIRS; d++) {
		snprintf(name, sizeof(name), "build-d%d", d);
		if (mt_disk_mkdir(name) != 0 ||
		    mt_disk_files(name, "src-", NNAMES) != 0)
			return -1;
		if (mt_lookup_path(px, name, &dirs[d]) != NFS3_OK)
			return -1;
	}
	return 0;
}

/* One pass: LOOKUP and GETATTR of every name; checks what comes back. */
static void build_pass(const nfs_fh3 *dirs, int pass)
{
	char name[64];

	for (int d = 0; d < NDIRS; d++) {
		for (int i = 0; i < NNAMES; i++) {
			fattr3 la, ga;
			nfs_fh3 fh;
			int st;

			snprintf(name, sizeof(name), "src-%04d", i);
			st = nfsc_lookup(px, &dirs[d], name, &fh, &la);
			if (st != NFS3_OK) {
				CHECK_MSG(0, "pass %d: LOOKUP build-d%d/%s: %s", pass,
					  d, name, nfsc_stat_name(st));
				nfsc_fh_free(&fh);
				continue;
			}
			st = nfsc_getattr(px, &fh, &ga);
			if (st != NFS3_OK || la.fileid != ga.fileid ||
			    ga.type != NF3REG || ga.size != 0)
				CHECK_MSG(0, "pass %d: GETATTR build-d%d/%s: %s, "
					  "fileid %llu vs %llu", pass, d, name,
					  nfsc_stat_name(st),
					  (unsigned long long)la.fileid,
					  (unsigned long long)ga.fileid);
			nfsc_fh_free(&fh);
		}
	}
}

static void test_build_loop_reaches_upstream_at_most_once(void)
{
	nfs_fh3 dirs[NDIRS];
	struct ct_metrics m0, m1;
	uint64_t lookups, getattrs;

	memset(dirs, 0, sizeof(dirs));
	CU_ASSERT_FATAL(make_tree(dirs) == 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	for (int pass = 0; pass < PASSES; pass++)
		build_pass(dirs, pass);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	lookups = ct_delta(&m0, &m1, MT_UP("lookup"));
	getattrs = ct_delta(&m0, &m1, MT_UP("getattr"));
	printf("\n  build loop (%s): %d client LOOKUPs and %d GETATTRs sent "
	       "%llu LOOKUPs and %llu GETATTRs upstream (%llu calls in all)\n",
	       cached ? "cache" : "no cache", PASSES * NDIRS * NNAMES,
	       PASSES * NDIRS * NNAMES, (unsigned long long)lookups,
	       (unsigned long long)getattrs,
	       (unsigned long long)mt_upstream_total_delta(&m0, &m1));
	if (cached) {
		/* Each name once; its attributes came with the LOOKUP. */
		CHECK_EQ(lookups, NDIRS * NNAMES);
		CHECK_EQ(getattrs, 0);
		CHECK_EQ(mt_upstream_total_delta(&m0, &m1), NDIRS * NNAMES);
		CHECK_EQ(ct_delta(&m0, &m1, MT_HIT("lookup")),
			 (PASSES - 1) * NDIRS * NNAMES);
		CHECK_EQ(ct_delta(&m0, &m1, MT_MISS("lookup")), NDIRS * NNAMES);
		CHECK_EQ(ct_delta(&m0, &m1, MT_HIT("getattr")),
			 PASSES * NDIRS * NNAMES);
		CHECK_EQ(ct_delta(&m0, &m1, MT_NEG_HITS), 0);
	} else {
		CHECK_EQ(lookups, PASSES * NDIRS * NNAMES);
		CHECK_EQ(getattrs, PASSES * NDIRS * NNAMES);
		CHECK_EQ(mt_upstream_total_delta(&m0, &m1),
			 2 * PASSES * NDIRS * NNAMES);
		CHECK_EQ(ct_delta(&m0, &m1, MT_HIT("lookup")), 0);
		CHECK_EQ(ct_delta(&m0, &m1, MT_HIT("getattr")), 0);
	}
	ct_print_deltas("build", &m0, &m1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	for (int d = 0; d < NDIRS; d++)
		nfsc_fh_free(&dirs[d]);
}

/* ACCESS on fh as c: the call's status and granted bits. */
static int access_of(struct nfsc *c, const nfs_fh3 *fh, uint32_t want,
		     uint32_t *granted)
{
	ACCESS3args a = { .object = *fh, .access = want };
	ACCESS3res r;
	int st = nfsc_call(c, NFS3_ACCESS, &a, &r, NFSC_TIMEOUT_MS);

	*granted = st == NFS3_OK ? r.ACCESS3res_u.resok.access : 0;
	if (st >= 0)
		nfsc_res_free(NFS3_ACCESS, &r);
	return st;
}

static void test_access_is_kept_per_credential_for_directories(void)
{
	const uint32_t want = ACCESS3_READ | ACCESS3_LOOKUP;
	struct nfsc *other = nfsc_connect(ct_env("NFSC_PROXY_URL"), OTHER_UID,
					  OTHER_UID);
	struct ct_metrics m0, m1, m2;
	uint32_t g0 = 0, g1 = 0, g2 = 0;
	nfs_fh3 dir = { 0 };

	CU_ASSERT_FATAL(other != NULL);
	CU_ASSERT_FATAL(mt_disk_mkdir("access-dir") == 0);
	CU_ASSERT_FATAL(mt_lookup_path(px, "access-dir", &dir) == NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	CHECK_STAT(access_of(px, &dir, want, &g0), NFS3_OK);
	CHECK_STAT(access_of(px, &dir, want, &g1), NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(g0, want);
	CHECK_EQ(g1, want);
	/* The first asks upstream; the second is answered locally. */
	CHECK_EQ(ct_delta(&m0, &m1, MT_UP("access")), 1);
	/* Another credential is asked about on its own. */
	CHECK_STAT(access_of(other, &dir, want, &g2), NFS3_OK);
	CU_ASSERT_FATAL(ct_metrics_read(&m2) == 0);
	CHECK_EQ(g2, want);	/* 0755: read and search for everyone */
	CHECK_EQ(ct_delta(&m1, &m2, MT_UP("access")), 1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m2);
	nfsc_fh_free(&dir);
	nfsc_close(&other);
}

/* Connect the client. */
static int suite_init(void)
{
	cached = (int)ct_env_u64("CT_META_CACHE", 1);
	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	return px ? 0 : -1;
}

/* Close it. */
static int suite_clean(void)
{
	nfsc_close(&px);
	return 0;
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("meta_build", suite_init, suite_clean);

	tcheck_report_at_exit("test_meta_build");
	if (!s ||
	    !CU_add_test(s, "build_loop_reaches_upstream_at_most_once",
			 test_build_loop_reaches_upstream_at_most_once) ||
	    !CU_add_test(s, "access_is_kept_per_credential_for_directories",
			 test_access_is_kept_per_credential_for_directories))
		return -1;
	return 0;
}
