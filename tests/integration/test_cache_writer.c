/* SPDX-License-Identifier: MIT */
/*
 * test_cache_writer: another writer changes files on the upstream behind
 * the proxy's back (docs/design.md "Consistency with other writers"). Files are
 * changed directly in Ganesha's export directory (NFSC_EXPORT_DIR; the
 * harness runs Ganesha with Attr_Expiration_Time = 0, so Ganesha itself
 * shows the change at once). The proxy caches a file's attributes for
 * acregmin..acregmax; once that has passed it must see the change, drop
 * the file's cached pages (nfscached_cache_invalidations_total) and serve
 * the new bytes.
 *
 * Runs under cachetest_proxy.sh, whose nfscached has acregmin = acregmax =
 * CT_AC seconds in its export (300, or 0 for the `noac` behaviour: every
 * READ revalidates first, so a change shows at once). With a timeout the
 * proxy runs on its test clock (NFSCACHED_TEST_CLOCK=1): within the
 * timeout it serves its copy without asking upstream; the test then
 * advances the clock CT_AC + 1 s and reads again.
 *
 * Each change keeps or changes the size, and sets the mtime to a value the
 * file never had, so a change within one timestamp tick is still seen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define MAXLEN (256u * 1024)

static struct nfsc *px;
static unsigned ac;		/* acregmin = acregmax, seconds */
static int64_t next_mtime = 1000000000;	/* 2001-09-09, then +1 s each */

/* Write n pattern bytes (seed) as name on disk with a fresh old mtime. */
static int disk_change(const char *name, size_t n, uint32_t seed,
		       uint8_t *out)
{
	ct_pattern(out, n, 0, seed);
	if (ct_disk_write(name, out, n) != 0 ||
	    ct_disk_set_mtime(name, next_mtime++, 0) != 0) {
		CHECK_MSG(0, "cannot change %s on disk", name);
		return -1;
	}
	return 0;
}

/* Read [0, MAXLEN) through the proxy: the status, and n bytes, eof. */
static int read_all(const nfs_fh3 *fh, uint8_t *buf, uint32_t *n, int *eof)
{
	int st = nfsc_read(px, fh, 0, MAXLEN, buf, n, eof);

	CHECK_STAT(st, NFS3_OK);
	return st;
}

/* Check a read returned exactly want[0..len) and eof. */
static void check_data(const char *what, const uint8_t *got, uint32_t n,
		       int eof, const uint8_t *want, uint32_t len)
{
	size_t d = n == len ? ct_first_diff(got, want, len) : 0;

	CHECK_MSG(n == len && eof && d == len,
		  "%s: count %u eof %d, want count %u eof 1; first differing "
		  "byte %zu", what, n, eof, len, d);
}

/*
 * Read name (len0 bytes, seed 1) twice through the proxy (the second is
 * served from the cache: no upstream READ), change it on disk to len1
 * bytes of seed 2, read (with a timeout: the old bytes, from the cache),
 * advance past the attribute timeout, read again: the new bytes, and the
 * cache was invalidated once.
 */
static void change_and_read(const char *name, uint32_t len0, uint32_t len1)
{
	static uint8_t want0[MAXLEN], want1[MAXLEN], got[MAXLEN];
	struct ct_metrics m0, m1, m2, m3;
	uint32_t n;
	int eof;
	nfs_fh3 fh;

	if (disk_change(name, len0, 1, want0) != 0)
		return;
	if (ct_lookup_root(px, name, &fh) != NFS3_OK) {
		CHECK_MSG(0, "LOOKUP %s", name);
		return;
	}
	if (read_all(&fh, got, &n, &eof) == NFS3_OK)
		check_data("first read", got, n, eof, want0, len0);
	if (ct_metrics_read(&m0) != 0)
		goto out;
	if (read_all(&fh, got, &n, &eof) == NFS3_OK)
		check_data("second read", got, n, eof, want0, len0);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	/* The data is cached; with noac the attributes are revalidated,
	 * with a timeout (far from over) they are not. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_GETATTR), ac ? 0 : 1);
	if (disk_change(name, len1, 2, want1) != 0)
		goto out1;
	if (ac) {
		/* Within the timeout the proxy serves its copy. */
		if (read_all(&fh, got, &n, &eof) == NFS3_OK)
			check_data("read within the timeout", got, n, eof, want0,
				   len0);
		CU_ASSERT_FATAL(tclock_advance(ac + 1) == 0);
	}
	if (ct_metrics_read(&m2) != 0)
		goto out1;
	if (read_all(&fh, got, &n, &eof) == NFS3_OK)
		check_data("read after the change", got, n, eof, want1, len1);
	if (ct_metrics_read(&m3) == 0) {
		CHECK_EQ(ct_delta(&m2, &m3, CT_INVALIDATIONS), 1);
		ct_print_deltas(name, &m2, &m3);
		ct_metrics_free(&m3);
	}
	ct_metrics_free(&m2);
out1:
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
}

/* Same size, other bytes. */
static void test_same_size_change_is_seen(void)
{
	change_and_read("same.dat", 65536, 65536);
}

/* The file grows. */
static void test_growing_change_is_seen(void)
{
	change_and_read("grow.dat", 65536, 200000);
}

/* The file shrinks. */
static void test_shrinking_change_is_seen(void)
{
	change_and_read("shrink.dat", 200000, 10000);
}

/* Mount the proxy and read the timeout this run was configured with. */
static int suite_init(void)
{
	ac = (unsigned)ct_env_u64("CT_AC", 1);
	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	printf("cachetest: writer: acregmin = acregmax = %u s\n", ac);
	return px ? 0 : -1;
}

/* Unmount. */
static int suite_cleanup(void)
{
	nfsc_close(&px);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_cache_writer");
	s = CU_add_suite("cache_writer", suite_init, suite_cleanup);
	if (!s ||
	    !CU_add_test(s, "same_size_change_is_seen",
			 test_same_size_change_is_seen) ||
	    !CU_add_test(s, "growing_change_is_seen",
			 test_growing_change_is_seen) ||
	    !CU_add_test(s, "shrinking_change_is_seen",
			 test_shrinking_change_is_seen))
		return -1;
	return 0;
}
