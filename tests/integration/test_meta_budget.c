/* SPDX-License-Identifier: MIT */
/*
 * test_meta_budget: the metadata cache stays within meta_cache_size while
 * 30,000 names are looked up through the proxy (metatest_budget*.conf:
 * a 1 MiB budget, negative entries kept 600 s). One name in 50 exists
 * (made on disk), the others do not. Every 2,000 look-ups the cache's
 * accounted memory is read from /metrics and must be within the budget;
 * at the end every name looked up is either still cached or was evicted
 * (entries + evictions add up), the most recent names are answered
 * locally and the oldest go upstream again (least recently used first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "metatest_util.h"

#define NAMES		30000
#define EXIST_EVERY	50
#define SAMPLE_EVERY	2000
#define BUDGET		(1024u * 1024u)

static struct nfsc *px;

/* The name of look-up i. */
static void name_of(unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "name-%06u", i);
}

/* Make the directory with every EXIST_EVERY-th name on disk. */
static int make_dir(nfs_fh3 *dir)
{
	char rel[64], name[32];

	if (mt_disk_mkdir("many") != 0)
		return -1;
	for (unsigned i = 0; i < NAMES; i += EXIST_EVERY) {
		name_of(i, name, sizeof(name));
		snprintf(rel, sizeof(rel), "many/%s", name);
		if (mt_disk_touch(rel) != 0)
			return -1;
	}
	return mt_lookup_path(px, "many", dir) == NFS3_OK ? 0 : -1;
}

/* Check the accounted memory against the budget now. */
static void sample(unsigned done, uint64_t *peak)
{
	uint64_t bytes = ct_metric_now(MT_BYTES);

	if (bytes != CT_ABSENT && (bytes > *peak || *peak == CT_ABSENT))
		*peak = bytes;
	CHECK_MSG(bytes != CT_ABSENT && bytes <= BUDGET,
		  "after %u look-ups: nfscached_meta_bytes %llu, budget %u",
		  done, (unsigned long long)bytes, BUDGET);
}

/* LOOKUP name i in dir; check its status against what is on disk. */
static void lookup_one(const nfs_fh3 *dir, unsigned i)
{
	char name[32];
	int st, want = i % EXIST_EVERY == 0 ? NFS3_OK : NFS3ERR_NOENT;
	nfs_fh3 fh;

	name_of(i, name, sizeof(name));
	st = nfsc_lookup(px, dir, name, &fh, NULL);
	nfsc_fh_free(&fh);
	if (st != want)
		CHECK_MSG(0, "LOOKUP %s: %s, want %s", name, nfsc_stat_name(st),
			  nfsc_stat_name(want));
}

static void test_memory_stays_within_budget(void)
{
	struct ct_metrics m0, m1, m2, m3;
	uint64_t peak = CT_ABSENT, e0, e1;
	nfs_fh3 dir = { 0 };

	CU_ASSERT_FATAL(make_dir(&dir) == 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	CHECK_EQ(ct_metric(&m0, MT_BUDGET), BUDGET);
	for (unsigned i = 0; i < NAMES; i++) {
		lookup_one(&dir, i);
		if ((i + 1) % SAMPLE_EVERY == 0)
			sample(i + 1, &peak);
	}
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	e0 = ct_metric(&m0, MT_ENTRIES);
	e1 = ct_metric(&m1, MT_ENTRIES);
	printf("\n  %u look-ups: %llu entries cached, %llu evicted, peak %llu "
	       "bytes of %u\n", NAMES, (unsigned long long)e1,
	       (unsigned long long)ct_delta(&m0, &m1, MT_EVICTIONS),
	       (unsigned long long)peak, BUDGET);
	CHECK_EQ(ct_delta(&m0, &m1, MT_UP("lookup")), NAMES);
	CHECK(e1 > 1000 && e1 < NAMES);
	CHECK(peak > BUDGET / 2 && peak <= BUDGET);
	CHECK_EQ(e1 + ct_delta(&m0, &m1, MT_EVICTIONS), e0 + NAMES);
	/* The newest names are answered locally (one missing, one not)... */
	lookup_one(&dir, NAMES - 1);
	lookup_one(&dir, NAMES - EXIST_EVERY);
	CU_ASSERT_FATAL(ct_metrics_read(&m2) == 0);
	CHECK_EQ(ct_delta(&m1, &m2, MT_UP("lookup")), 0);
	CHECK_EQ(ct_delta(&m1, &m2, MT_NEG_HITS), 1);
	/* ... the oldest were evicted first. */
	lookup_one(&dir, 1);
	lookup_one(&dir, 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m3) == 0);
	CHECK_EQ(ct_delta(&m2, &m3, MT_UP("lookup")), 2);
	CHECK(ct_metric(&m3, MT_BYTES) <= BUDGET);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m2);
	ct_metrics_free(&m3);
	nfsc_fh_free(&dir);
}

/* Connect the client. */
static int suite_init(void)
{
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
	CU_pSuite s = CU_add_suite("meta_budget", suite_init, suite_clean);

	tcheck_report_at_exit("test_meta_budget");
	if (!s || !CU_add_test(s, "memory_stays_within_budget",
			       test_memory_stays_within_budget))
		return -1;
	return 0;
}
