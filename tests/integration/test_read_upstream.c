/* SPDX-License-Identifier: MIT */
/*
 * test_read_upstream: READ replies from an upstream that contradicts
 * itself (issue "what real clients found"), made by delayrelay's
 * --rewrite-read between nfscached and Ganesha (ratest_proxy.sh). The
 * reply's own post-op attributes are the truth about the size (RFC 1813
 * section 3.3.6: eof is TRUE exactly when offset + count reaches it), and
 * every correction counts in nfscached_upstream_protocol_errors_total.
 * One suite per relay mode (argv[1]):
 *
 *   read_eof      (--rewrite-read eof: eof TRUE becomes FALSE) a READ
 *                 ending exactly at the size, and a short one, say eof
 *                 through the proxy (as Ganesha 4.3 itself does directly);
 *                 a READ that stops before the size does not.
 *   read_inval    (--rewrite-read inval, attributes trusted 600 s) after
 *                 the file shrank behind the proxy, a READ past the new
 *                 end that the upstream answers NFS3ERR_INVAL (with its
 *                 new size) is answered as end of file, and so is the
 *                 retry, without asking upstream again.
 *   read_garbage  (--rewrite-read garbage: 16 bytes of 0xEE past the data
 *                 of a reply with eof, counted) the proxy keeps and serves
 *                 only the bytes up to the reply's own size.
 *   read_pad      (--rewrite-read pad, attributes trusted 600 s: a
 *                 past-end reply padded with 4 bytes and eof FALSE) after
 *                 the file shrank behind the proxy, a READ inside the old
 *                 size is answered empty with eof.
 *   read_pad4k    (--rewrite-read pad, as read_pad, with 4 KiB pages) the
 *                 same at 5,000, where the upstream READ starts at the
 *                 page, before the client's offset.
 * Readahead is off (noreadahead.conf) so every upstream READ is the
 * test's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define PROTO_ERRORS "nfscached_upstream_protocol_errors_total"
#define CLEAN_BYTES "nfscached_cache_bytes{state=\"clean\"}"

static struct nfsc *px;		/* root through the proxy (and the relay) */
static struct nfsc *dx;		/* root, directly to Ganesha */

/* Put n pattern bytes (seed) in name on disk, LOOKUP it through the
 * proxy into *fh and its bytes into want (n bytes). 0 or -1. */
static int make_file(const char *name, size_t n, uint32_t seed,
		     uint8_t *want, nfs_fh3 *fh)
{
	ct_pattern(want, n, 0, seed);
	if (ct_disk_write(name, want, n) != 0)
		return -1;
	return ct_lookup_root(px, name, fh) == NFS3_OK ? 0 : -1;
}

/* READ [off, off+len) through c; check status, count and eof. */
static void read_expect(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
			uint32_t len, uint32_t want_count, int want_eof,
			const uint8_t *want)
{
	uint8_t *buf = calloc(1, len ? len : 1);
	uint32_t count = 0;
	int eof = -1, st;

	st = nfsc_read(c, fh, off, len, buf, &count, &eof);
	CHECK_MSG(st == NFS3_OK, "READ [%llu, +%u): %s, want NFS3_OK",
		  (unsigned long long)off, len, nfsc_stat_name(st));
	CHECK_MSG(count == want_count && eof == want_eof,
		  "READ [%llu, +%u): count %u eof %d, want count %u eof %d",
		  (unsigned long long)off, len, count, eof, want_count,
		  want_eof);
	if (want && count == want_count)
		CHECK_MSG(memcmp(buf, want, count) == 0,
			  "READ [%llu, +%u): the bytes differ from the file's",
			  (unsigned long long)off, len);
	free(buf);
}

static void test_eof_at_size(void)
{
	const uint32_t size = 5000;
	uint8_t want[5000];
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, dfh = { 0 };

	CU_ASSERT_FATAL(make_file("eof-at-size", size, 7, want, &fh) == 0);
	/* Directly, Ganesha 4.3 sets eof on a READ ending at the size. */
	CHECK_STAT(ct_lookup_root(dx, "eof-at-size", &dfh), NFS3_OK);
	read_expect(dx, &dfh, 0, size, size, 1, want);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	read_expect(px, &fh, 0, size, size, 1, want);	/* upstream READ */
	read_expect(px, &fh, 0, 8192, size, 1, want);	/* short */
	read_expect(px, &fh, 1000, size - 1000, size - 1000, 1, want + 1000);
	read_expect(px, &fh, 0, 1000, 1000, 0, want);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 1);
	CHECK_EQ(ct_delta(&m0, &m1, PROTO_ERRORS), 1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&dfh);
}

static void test_inval_past_new_end(void)
{
	const uint32_t size = 131072;
	uint8_t *want = malloc(size);
	struct ct_metrics m0, m1, m2;
	char path[4096];
	nfs_fh3 fh = { 0 };
	fattr3 a;

	CU_ASSERT_FATAL(want && make_file("inval-past-end", size, 9, want, &fh) == 0);
	read_expect(px, &fh, 0, 4096, 4096, 0, want);
	/* Another writer shrinks it; the proxy still trusts size 128 KiB. */
	CU_ASSERT_FATAL(ct_disk_path("inval-past-end", path, sizeof(path)) == 0);
	CU_ASSERT_FATAL(truncate(path, 1000) == 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	read_expect(px, &fh, 70000, 100, 0, 1, NULL);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	read_expect(px, &fh, 70000, 100, 0, 1, NULL);
	CU_ASSERT_FATAL(ct_metrics_read(&m2) == 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 1);
	CHECK_EQ(ct_delta(&m0, &m1, PROTO_ERRORS), 1);
	CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 0);
	CHECK_STAT(nfsc_getattr(px, &fh, &a), NFS3_OK);
	CHECK_EQ(a.size, 1000);
	read_expect(px, &fh, 0, 4096, 1000, 1, want);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m2);
	nfsc_fh_free(&fh);
	free(want);
}

static void test_garbage_past_size(void)
{
	const uint32_t size = 100;
	uint8_t want[100];
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 };

	CU_ASSERT_FATAL(make_file("garbage-past-size", size, 11, want, &fh) == 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	read_expect(px, &fh, 0, 4096, size, 1, want);
	read_expect(px, &fh, 0, 4096, size, 1, want);	/* from the cache */
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 1);
	CHECK_EQ(ct_delta(&m0, &m1, CLEAN_BYTES), size);
	CHECK_EQ(ct_delta(&m0, &m1, PROTO_ERRORS), 1);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	nfsc_fh_free(&fh);
}

/*
 * The file shrank behind the proxy (200,000 -> 1,000 bytes) while it
 * trusted the old size; a READ of 4096 bytes at off, inside the size it
 * knew, is answered by an upstream that pads the past-end reply with 4
 * bytes and eof FALSE. Cut to the reply's own size, the reply is empty,
 * and an empty reply at or past the size must say eof (RFC 1813 section
 * 3.3.6), or a client that trusts it reads again forever. name: the
 * file's, one per test.
 */
static void padded_past_new_end(const char *name, uint64_t off)
{
	const uint32_t size = 200000;
	uint8_t *want = malloc(size);
	struct ct_metrics m0, m1;
	char path[4096];
	nfs_fh3 fh = { 0 };
	fattr3 a;

	CU_ASSERT_FATAL(want && make_file(name, size, 13, want, &fh) == 0);
	read_expect(px, &fh, 0, 4096, 4096, 0, want);
	CU_ASSERT_FATAL(ct_disk_path(name, path, sizeof(path)) == 0);
	CU_ASSERT_FATAL(truncate(path, 1000) == 0);
	CU_ASSERT_FATAL(ct_metrics_read(&m0) == 0);
	read_expect(px, &fh, off, 4096, 0, 1, NULL);
	CU_ASSERT_FATAL(ct_metrics_read(&m1) == 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 1);
	CHECK_EQ(ct_delta(&m0, &m1, PROTO_ERRORS), 1);
	/* The reply's own size is now the proxy's. */
	CHECK_STAT(nfsc_getattr(px, &fh, &a), NFS3_OK);
	CHECK_EQ(a.size, 1000);
	read_expect(px, &fh, 0, 4096, 1000, 1, want);
	ct_metrics_free(&m0);
	ct_metrics_free(&m1);
	nfsc_fh_free(&fh);
	free(want);
}

/* Page-aligned: the upstream READ starts at the client's offset. */
static void test_padded_past_new_end(void)
{
	padded_past_new_end("pad-past-end", 131072);
}

/* With 4 KiB pages (read_pad4k's page_size), a READ at 5,000: the
 * upstream READ starts at 4,096, before the client's offset, and both
 * are past the new end. */
static void test_padded_past_new_end_4k(void)
{
	padded_past_new_end("pad-past-end-4k", 5000);
}

/* Mount the proxy and Ganesha as root. */
static int suite_init(void)
{
	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	return px && dx ? 0 : -1;
}

/* Unmount both. */
static int suite_cleanup(void)
{
	nfsc_close(&px);
	nfsc_close(&dx);
	return 0;
}

int test_register(void)
{
	static const struct {
		const char *suite, *test;
		CU_TestFunc fn;
	} t[] = {
		{ "read_eof", "eof_at_size", test_eof_at_size },
		{ "read_inval", "inval_past_new_end", test_inval_past_new_end },
		{ "read_garbage", "garbage_past_size", test_garbage_past_size },
		{ "read_pad", "padded_past_new_end", test_padded_past_new_end },
		{ "read_pad4k", "padded_past_new_end_4k",
		  test_padded_past_new_end_4k },
	};

	tcheck_report_at_exit("test_read_upstream");
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CU_pSuite s = CU_add_suite(t[i].suite, suite_init, suite_cleanup);

		if (!s || !CU_add_test(s, t[i].test, t[i].fn))
			return -1;
	}
	return 0;
}
