/* SPDX-License-Identifier: MIT */
/*
 * test_cache_semantics: what the page cache promises, seen from a client
 * and /metrics (docs/design.md "Cache model", "Access control"):
 *   - byte-exact valid ranges: reads inside written ranges are hits; a
 *     read over gaps fetches exactly the gaps of the touched page, and
 *     fetched bytes never overwrite written ones;
 *   - no read-modify-write: a small write into an empty page reads nothing;
 *   - valid ranges survive COMMIT;
 *   - concurrent misses on one range wait on one upstream READ;
 *   - a READ of written bytes stays a hit while the proxy's own write-back
 *     of the file completes;
 *   - cached bytes go only to credentials the upstream lets read the file,
 *     an owner reading its own write-only file gets what Ganesha says, and
 *     reads back what it wrote even when the upstream decides the READ;
 *   - the proxy's own LINK, RENAME and REMOVE of a hard-linked file are
 *     not another writer's change: its pages and ACCESS results stay (no
 *     invalidation, no upstream READ or ACCESS), and its attributes show
 *     the new link count and ctime, as Ganesha's.
 *
 * Files are created in the export directory on disk (NFSC_EXPORT_DIR) with
 * known content, then used through the proxy (NFSC_PROXY_URL, page_size
 * 65536: the default, checked) and, for comparisons, directly
 * (NFSC_DIRECT_URL).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define PAGE 65536u
#define OWNER_UID 1000u
#define OTHER_UID 2000u

static struct nfsc *px;		/* root through the proxy */
static struct nfsc *dx;		/* root, directly to Ganesha */

/* Create name on disk with n pattern bytes (seed) and look it up through
 * the proxy into *fh. 0 or -1. */
static int make_file(const char *name, size_t n, uint32_t seed, uint8_t *out,
		     nfs_fh3 *fh)
{
	uint8_t *buf = malloc(n);
	int st;

	if (!buf)
		return -1;
	ct_pattern(buf, n, 0, seed);
	if (out)
		memcpy(out, buf, n);
	st = ct_disk_write(name, buf, n);
	free(buf);
	if (st != 0)
		return -1;
	st = ct_lookup_root(px, name, fh);
	CHECK_MSG(st == NFS3_OK, "LOOKUP %s through the proxy: %s", name,
		  nfsc_stat_name(st));
	return st == NFS3_OK ? 0 : -1;
}

/* Read [off, off+len) through client c and check status, count and bytes. */
static void read_check(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
		       uint32_t len, const uint8_t *want, const char *what)
{
	uint8_t *buf = malloc(len);
	uint32_t count = 0;
	int eof = 0, st;
	size_t d;

	memset(buf, 0xEE, len);
	st = nfsc_read(c, fh, off, len, buf, &count, &eof);
	CHECK_MSG(st == NFS3_OK && count == len,
		  "%s: READ [%llu, %llu): %s count %u", what,
		  (unsigned long long)off, (unsigned long long)(off + len),
		  nfsc_stat_name(st), count);
	if (st == NFS3_OK && count == len) {
		d = ct_first_diff(buf, want, len);
		CHECK_MSG(d == len, "%s: READ [%llu, %llu): byte %llu is "
			  "0x%02x, want 0x%02x", what,
			  (unsigned long long)off,
			  (unsigned long long)(off + len),
			  (unsigned long long)(off + d), d < len ? buf[d] : 0,
			  d < len ? want[d] : 0);
	}
	free(buf);
}

/* WRITE buf[0..len) at off UNSTABLE through the proxy; check the reply. */
static void write_check(const nfs_fh3 *fh, uint64_t off, const uint8_t *buf,
			uint32_t len)
{
	uint32_t count = 0;
	int st = nfsc_write(px, fh, off, buf, len, UNSTABLE, &count, NULL,
			    NULL);

	CHECK_MSG(st == NFS3_OK && count == len,
		  "WRITE [%llu, %llu): %s count %u", (unsigned long long)off,
		  (unsigned long long)(off + len), nfsc_stat_name(st), count);
}

/* Snapshot /metrics into *m, failing the test if it cannot. */
static int snap(struct ct_metrics *m)
{
	int rc = ct_metrics_read(m);

	CHECK_MSG(rc == 0, "GET /metrics");
	return rc;
}

/*
 * [10,110) and [300,400) written into page 0 of an existing 64 KiB file:
 * reads inside them are hits; [0,500) fetches only page 0's gaps.
 */
static void test_written_ranges_are_byte_exact(void)
{
	uint8_t want[PAGE], w1[100], w2[100];
	struct ct_metrics mw, m0, m1, m2, m3;
	nfs_fh3 fh;

	if (make_file("exact.dat", PAGE, 11, want, &fh) != 0)
		return;
	ct_pattern(w1, sizeof(w1), 10, 12);
	ct_pattern(w2, sizeof(w2), 300, 13);
	if (snap(&mw) != 0)
		goto out;
	write_check(&fh, 10, w1, sizeof(w1));
	write_check(&fh, 300, w2, sizeof(w2));
	memcpy(want + 10, w1, sizeof(w1));
	memcpy(want + 300, w2, sizeof(w2));
	if (snap(&m0) != 0) {
		ct_metrics_free(&mw);
		goto out;
	}
	ct_print_deltas("byte_exact: 2 writes", &mw, &m0);
	/* The proxy's own writes are not another writer's. */
	CHECK_EQ(ct_delta(&mw, &m0, CT_INVALIDATIONS), 0);
	ct_metrics_free(&mw);
	read_check(px, &fh, 10, 100, want + 10, "written [10,110)");
	read_check(px, &fh, 300, 100, want + 300, "written [300,400)");
	if (snap(&m1) != 0)
		goto out0;
	ct_print_deltas("byte_exact: 2 reads inside", &m0, &m1);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HIT), 2);
	/*
	 * [0,500) touches page 0 only; the file is one 64 KiB page, so the
	 * cache fetches the page's missing bytes up to the size: [0,10),
	 * [110,300) and [400,65536). The written ranges split them, so they
	 * cannot merge into one READ (fetched bytes never overwrite valid
	 * ones), and each is far below rtmax: 3 upstream READs.
	 */
	read_check(px, &fh, 0, 500, want, "gaps [0,500)");
	if (snap(&m2) != 0)
		goto out1;
	ct_print_deltas("byte_exact: [0,500)", &m1, &m2);
	CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 3);
	CHECK_EQ(ct_delta(&m1, &m2, CT_READS_PARTIAL), 1);
	printf("\ncachetest: byte_exact: upstream READs for 2 reads inside "
	       "written ranges: %llu; for [0,500) over 3 gaps: %llu\n",
	       (unsigned long long)ct_delta(&m0, &m1, CT_UP_READ),
	       (unsigned long long)ct_delta(&m1, &m2, CT_UP_READ));
	/* The whole page is now valid: written bytes kept, gaps filled. */
	read_check(px, &fh, 0, PAGE, want, "whole page after the gaps");
	if (snap(&m3) == 0) {
		CHECK_EQ(ct_delta(&m2, &m3, CT_UP_READ), 0);
		CHECK_EQ(ct_delta(&m2, &m3, CT_READS_HIT), 1);
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

/* 100 bytes written into a page with nothing valid read nothing upstream. */
static void test_small_write_reads_nothing(void)
{
	uint8_t w[100];
	struct ct_metrics m0, m1, m2;
	nfs_fh3 fh;

	if (make_file("normw.dat", 4 * PAGE, 21, NULL, &fh) != 0)
		return;
	ct_pattern(w, sizeof(w), PAGE + 4464, 22);
	if (snap(&m0) != 0)
		goto out;
	write_check(&fh, PAGE + 4464, w, sizeof(w));
	if (snap(&m1) != 0)
		goto out0;
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	read_check(px, &fh, PAGE + 4464, sizeof(w), w, "the 100 bytes");
	if (snap(&m2) == 0) {
		CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 0);
		CHECK_EQ(ct_delta(&m1, &m2, CT_READS_HIT), 1);
		ct_metrics_free(&m2);
	}
	printf("\ncachetest: no_rmw: upstream READs across a 100-byte write "
	       "into an empty page: %llu\n",
	       (unsigned long long)ct_delta(&m0, &m1, CT_UP_READ));
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
}

/* Written ranges are still hits after a COMMIT. */
static void test_valid_ranges_survive_commit(void)
{
	static const struct { uint64_t off; uint32_t len; } r[] = {
		{ 1000, 500 }, { 70000, 2000 }, { 100000, 1 },
	};
	uint8_t w[3][2000];
	struct ct_metrics mc, m0, m1;
	nfs_fh3 fh;
	int st;

	if (make_file("commit.dat", 2 * PAGE, 31, NULL, &fh) != 0)
		return;
	for (size_t i = 0; i < 3; i++) {
		ct_pattern(w[i], r[i].len, r[i].off, 32);
		write_check(&fh, r[i].off, w[i], r[i].len);
	}
	if (snap(&mc) != 0)
		goto out;
	st = nfsc_commit(px, &fh, 0, 0, NULL);
	CHECK_STAT(st, NFS3_OK);
	if (snap(&m0) != 0) {
		ct_metrics_free(&mc);
		goto out;
	}
	/* COMMIT drops nothing: no invalidation, the same pages. */
	CHECK_EQ(ct_delta(&mc, &m0, CT_INVALIDATIONS), 0);
	CHECK_EQ(ct_delta(&mc, &m0, CT_PAGES), 0);
	ct_metrics_free(&mc);
	for (size_t i = 0; i < 3; i++)
		read_check(px, &fh, r[i].off, r[i].len, w[i],
			   "written before COMMIT");
	if (snap(&m1) == 0) {
		ct_print_deltas("commit: 3 reads", &m0, &m1);
		CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
		CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HIT), 3);
		printf("\ncachetest: commit: upstream READs for 3 written "
		       "ranges after COMMIT: %llu\n",
		       (unsigned long long)ct_delta(&m0, &m1, CT_UP_READ));
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
}

#define NCONC 8

/*
 * NCONC READs of one uncached range inside page 1, queued and then sent
 * in one TCP segment (so all are in flight before any reply and the proxy
 * decodes them in one go), wait on one upstream READ. Attributes and the
 * ACCESS result are warmed first by a read of the last page on the same
 * connection, so every READ plans at once; nothing is sequential, so
 * readahead fetches nothing (page 1 follows no cached byte).
 */
static void test_concurrent_misses_share_one_read(void)
{
	static uint8_t want[4 * PAGE], got[NCONC][3000];
	struct ct_op op[NCONC], warm;
	uint8_t wbuf[100];
	struct ct_metrics m0, m1;
	struct ct_pipe *p;
	nfs_fh3 fh;
	const uint64_t off = PAGE + 1000;

	if (make_file("coal.dat", sizeof(want), 41, want, &fh) != 0)
		return;
	p = ct_pipe_open(ct_env("NFSC_PROXY_URL"), 0, 0);
	CHECK(p != NULL);
	if (!p)
		goto out;
	memset(&warm, 0, sizeof(warm));
	warm.buf = wbuf;
	ct_pipe_read(p, &fh, sizeof(want) - PAGE, sizeof(wbuf), &warm);
	CHECK(ct_pipe_wait(p, 0, NFSC_TIMEOUT_MS) == 0);
	CHECK_STAT(warm.st, NFS3_OK);
	if (snap(&m0) != 0)
		goto out_pipe;
	for (int i = 0; i < NCONC; i++) {
		memset(&op[i], 0, sizeof(op[i]));
		op[i].buf = got[i];
		CHECK(ct_pipe_read(p, &fh, off, sizeof(got[i]), &op[i]) == 0);
	}
	CHECK_EQ(ct_pipe_pending(p), NCONC);
	CHECK(ct_pipe_send_all(p, NFSC_TIMEOUT_MS) == 0);
	CHECK(ct_pipe_wait(p, 0, NFSC_TIMEOUT_MS) == 0);
	for (int i = 0; i < NCONC; i++) {
		CHECK_MSG(op[i].done && op[i].st == NFS3_OK &&
				  op[i].count == sizeof(got[i]),
			  "READ %d of %d: %s count %u", i, NCONC,
			  nfsc_stat_name(op[i].st), op[i].count);
		CHECK_MSG(memcmp(got[i], want + off, sizeof(got[i])) == 0,
			  "READ %d of %d: wrong bytes", i, NCONC);
	}
	if (snap(&m1) == 0) {
		ct_print_deltas("coalesce", &m0, &m1);
		CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 1);
		CHECK_EQ(ct_delta(&m0, &m1, CT_READS_COALESCED), NCONC - 1);
		CHECK_EQ(ct_delta(&m0, &m1, CT_READS_MISS), 1);
		printf("\ncachetest: coalesce: %d concurrent READs of one "
		       "uncached range: %llu upstream READ(s), %llu coalesced\n",
		       NCONC, (unsigned long long)ct_delta(&m0, &m1, CT_UP_READ),
		       (unsigned long long)ct_delta(&m0, &m1,
						    CT_READS_COALESCED));
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
out_pipe:
	ct_pipe_close(&p);
out:
	nfsc_fh_free(&fh);
}

/*
 * A READ of written bytes stays a hit when the proxy's own write-back of
 * the file completes while the READ waits for its permission check: a
 * COMMIT (which writes the dirty range back) and the READ leave in one
 * TCP segment, so the upstream WRITE is in flight while the READ asks
 * ACCESS for a credential with no cached result. The write-back is the
 * proxy's own change, so nothing it knew is stale: no upstream READ.
 */
static void test_hit_while_own_writeback_completes(void)
{
	uint8_t w[1000], got[1000];
	struct ct_op wop, cop, rop;
	struct ct_metrics m0, m1;
	struct ct_pipe *p;
	nfs_fh3 fh;

	if (make_file("race.dat", PAGE, 71, NULL, &fh) != 0)
		return;
	p = ct_pipe_open(ct_env("NFSC_PROXY_URL"), 0, 0);
	CHECK(p != NULL);
	if (!p)
		goto out;
	ct_pattern(w, sizeof(w), 100, 72);
	memset(&wop, 0, sizeof(wop));
	ct_pipe_write(p, &fh, 100, w, sizeof(w), UNSTABLE, &wop);
	CHECK(ct_pipe_wait(p, 0, NFSC_TIMEOUT_MS) == 0);
	CHECK_STAT(wop.st, NFS3_OK);
	if (snap(&m0) != 0)
		goto out_pipe;
	memset(&cop, 0, sizeof(cop));
	memset(&rop, 0, sizeof(rop));
	rop.buf = got;
	CHECK(ct_pipe_commit(p, &fh, 0, 0, &cop) == 0);
	CHECK(ct_pipe_read(p, &fh, 100, sizeof(got), &rop) == 0);
	CHECK(ct_pipe_send_all(p, NFSC_TIMEOUT_MS) == 0);
	CHECK(ct_pipe_wait(p, 0, NFSC_TIMEOUT_MS) == 0);
	CHECK_STAT(cop.st, NFS3_OK);
	CHECK_STAT(rop.st, NFS3_OK);
	CHECK(rop.count == sizeof(got) && memcmp(got, w, sizeof(w)) == 0);
	if (snap(&m1) == 0) {
		ct_print_deltas("writeback race", &m0, &m1);
		CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
		CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HIT), 1);
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
out_pipe:
	ct_pipe_close(&p);
out:
	nfsc_fh_free(&fh);
}

/* Make name on disk (n pattern bytes, seed) owned by OWNER_UID with mode. */
static int make_owned(const char *name, size_t n, uint32_t seed,
		      uint32_t mode, uint8_t *out)
{
	char path[4096];

	ct_pattern(out, n, 0, seed);
	if (ct_disk_write(name, out, n) != 0 ||
	    ct_disk_path(name, path, sizeof(path)) != 0 ||
	    chown(path, OWNER_UID, OWNER_UID) != 0 ||
	    chmod(path, mode) != 0) {
		CHECK_MSG(0, "cannot create %s owned by %u mode %o", name,
			  OWNER_UID, mode);
		return -1;
	}
	return 0;
}

/* Connect as uid/gid to url; fails the test when it cannot. */
static struct nfsc *connect_as(const char *var, uint32_t uid)
{
	struct nfsc *c = nfsc_connect(ct_env(var), uid, uid);

	CHECK_MSG(c != NULL, "mount %s as uid %u", var, uid);
	return c;
}

/*
 * The owner's read fills the cache; another uid then gets NFS3ERR_ACCES
 * through the proxy, exactly as directly, and never the cached bytes.
 */
static void test_cached_bytes_need_permission(void)
{
	static uint8_t want[PAGE];
	uint8_t buf[4096];
	struct nfsc *own = NULL, *oth = NULL, *othd = NULL;
	struct ct_metrics m0, m1, m2;
	nfs_fh3 fh, fhd = { 0 };
	uint32_t count;
	int eof, stp, std;

	if (make_owned("secret.dat", PAGE, 51, 0600, want) != 0)
		return;
	if (ct_lookup_root(px, "secret.dat", &fh) != NFS3_OK) {
		CHECK_MSG(0, "LOOKUP secret.dat through the proxy");
		return;
	}
	CHECK_STAT(ct_lookup_root(dx, "secret.dat", &fhd), NFS3_OK);
	own = connect_as("NFSC_PROXY_URL", OWNER_UID);
	oth = connect_as("NFSC_PROXY_URL", OTHER_UID);
	othd = connect_as("NFSC_DIRECT_URL", OTHER_UID);
	if (!own || !oth || !othd)
		goto out;
	read_check(own, &fh, 0, PAGE, want, "owner, first read");
	if (snap(&m0) != 0)
		goto out;
	read_check(own, &fh, 0, PAGE, want, "owner, second read");
	if (snap(&m1) != 0)
		goto out0;
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	memset(buf, 0, sizeof(buf));
	stp = nfsc_read(oth, &fh, 0, sizeof(buf), buf, &count, &eof);
	std = nfsc_read(othd, &fhd, 0, sizeof(buf), NULL, NULL, NULL);
	CHECK_STAT(stp, NFS3ERR_ACCES);
	CHECK_STAT(std, NFS3ERR_ACCES);
	CHECK_MSG(stp == std, "uid %u: proxy says %s, Ganesha says %s",
		  OTHER_UID, nfsc_stat_name(stp), nfsc_stat_name(std));
	CHECK_MSG(memcmp(buf, want, 16) != 0,
		  "uid %u received the cached bytes", OTHER_UID);
	if (snap(&m2) == 0) {
		/* The upstream decided: one forwarded READ, no cache hit. */
		CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 1);
		CHECK_EQ(ct_delta(&m1, &m2, CT_READS_HIT), 0);
		CHECK_EQ(ct_delta(&m1, &m2, CT_READS_BYPASS), 1);
		ct_metrics_free(&m2);
	}
	printf("\ncachetest: access: uid %u on a cached 0600 file: proxy %s, "
	       "direct %s\n", OTHER_UID, nfsc_stat_name(stp),
	       nfsc_stat_name(std));
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_close(&own);
	nfsc_close(&oth);
	nfsc_close(&othd);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
}

/* The owner reading its own mode 0200 file: the proxy answers as Ganesha,
 * the first time and again once the proxy could have cached something. */
static void test_owner_write_only_file_as_upstream(void)
{
	uint8_t want[4096], bp[4096], bd[4096];
	struct nfsc *ownp = NULL, *ownd = NULL;
	nfs_fh3 fh, fhd = { 0 };
	uint32_t cp, cd;
	int ep, ed, stp, std;

	if (make_owned("wronly.dat", sizeof(want), 61, 0200, want) != 0)
		return;
	if (ct_lookup_root(px, "wronly.dat", &fh) != NFS3_OK) {
		CHECK_MSG(0, "LOOKUP wronly.dat through the proxy");
		return;
	}
	CHECK_STAT(ct_lookup_root(dx, "wronly.dat", &fhd), NFS3_OK);
	ownp = connect_as("NFSC_PROXY_URL", OWNER_UID);
	ownd = connect_as("NFSC_DIRECT_URL", OWNER_UID);
	if (!ownp || !ownd)
		goto out;
	for (int pass = 0; pass < 2; pass++) {
		memset(bp, 0, sizeof(bp));
		memset(bd, 0, sizeof(bd));
		cp = cd = 0;
		ep = ed = 0;
		stp = nfsc_read(ownp, &fh, 0, sizeof(bp), bp, &cp, &ep);
		std = nfsc_read(ownd, &fhd, 0, sizeof(bd), bd, &cd, &ed);
		CHECK_MSG(stp == std && cp == cd && ep == ed &&
				  memcmp(bp, bd, cd) == 0,
			  "pass %d: proxy %s count %u eof %d, Ganesha %s "
			  "count %u eof %d", pass, nfsc_stat_name(stp), cp,
			  ep, nfsc_stat_name(std), cd, ed);
		if (std == NFS3_OK)
			CHECK(memcmp(bp, want, sizeof(want)) == 0);
		printf("\ncachetest: access: owner reading its 0200 file, pass "
		       "%d: proxy %s, direct %s\n", pass, nfsc_stat_name(stp),
		       nfsc_stat_name(std));
	}
out:
	nfsc_close(&ownp);
	nfsc_close(&ownd);
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
}

/*
 * The owner of a mode 0200 file writes to it through the proxy and reads
 * back what it wrote: ACCESS does not grant READ, so the proxy lets the
 * upstream decide on the READ, but the reply must still show the owner's
 * acknowledged writes (RFC 1813 gives no way to lose them), as reading
 * Ganesha directly after the same WRITE does.
 */
static void test_owner_reads_back_its_write_to_write_only_file(void)
{
	uint8_t want[4096], w[100], bp[4096];
	struct nfsc *ownp = NULL;
	nfs_fh3 fh;
	uint32_t cp = 0, count = 0;
	int ep = 0, st;
	size_t d;

	if (make_owned("wronly2.dat", sizeof(want), 81, 0200, want) != 0)
		return;
	if (ct_lookup_root(px, "wronly2.dat", &fh) != NFS3_OK) {
		CHECK_MSG(0, "LOOKUP wronly2.dat through the proxy");
		return;
	}
	ownp = connect_as("NFSC_PROXY_URL", OWNER_UID);
	if (!ownp)
		goto out;
	ct_pattern(w, sizeof(w), 0, 82);
	memcpy(want, w, sizeof(w));
	st = nfsc_write(ownp, &fh, 0, w, sizeof(w), UNSTABLE, &count, NULL,
			NULL);
	CHECK_MSG(st == NFS3_OK && count == sizeof(w), "owner WRITE: %s",
		  nfsc_stat_name(st));
	memset(bp, 0, sizeof(bp));
	st = nfsc_read(ownp, &fh, 0, sizeof(bp), bp, &cp, &ep);
	CHECK_STAT(st, NFS3_OK);
	d = cp == sizeof(bp) ? ct_first_diff(bp, want, sizeof(bp)) : 0;
	CHECK_MSG(cp == sizeof(bp) && d == sizeof(bp),
		  "owner reads back its 0200 file: count %u, byte %zu is 0x%02x, "
		  "want 0x%02x (%s)", cp, d, d < sizeof(bp) ? bp[d] : 0,
		  d < sizeof(bp) ? want[d] : 0,
		  d < sizeof(w) ? "inside the bytes it wrote" : "elsewhere");
out:
	nfsc_close(&ownp);
	nfsc_fh_free(&fh);
}

/* LINK fh as name in the export root through the proxy. */
static int link_root(const nfs_fh3 *fh, const char *name)
{
	LINK3args a;
	LINK3res r;
	int st;

	memset(&a, 0, sizeof(a));
	a.file = *fh;
	a.link.dir = *nfsc_root(px);
	a.link.name = nfsc_mut(name);
	st = nfsc_call(px, NFS3_LINK, &a, &r, NFSC_TIMEOUT_MS);
	nfsc_res_free(NFS3_LINK, &r);
	return st;
}

/* RENAME from to to in the export root through the proxy. */
static int rename_root(const char *from, const char *to)
{
	RENAME3args a;
	RENAME3res r;
	int st;

	memset(&a, 0, sizeof(a));
	a.from.dir = *nfsc_root(px);
	a.from.name = nfsc_mut(from);
	a.to.dir = *nfsc_root(px);
	a.to.name = nfsc_mut(to);
	st = nfsc_call(px, NFS3_RENAME, &a, &r, NFSC_TIMEOUT_MS);
	nfsc_res_free(NFS3_RENAME, &r);
	return st;
}

/* The proxy's own link changes keep a hard-linked file's cache. */
static void test_own_link_rename_remove_keep_cache(void)
{
	const uint32_t len = 2 * PAGE;
	uint8_t *want = malloc(len);
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, dfh = { 0 };
	fattr3 pa, da;

	if (!want || make_file("own-links", len, 5150, want, &fh) != 0)
		goto out;
	read_check(px, &fh, 0, len, want, "fill");
	if (snap(&m0) != 0)
		goto out;
	CHECK_STAT(link_root(&fh, "own-links-2"), NFS3_OK);
	CHECK_STAT(rename_root("own-links-2", "own-links-3"), NFS3_OK);
	CHECK_STAT(link_root(&fh, "own-links-4"), NFS3_OK);
	CHECK_STAT(nfsc_remove(px, nfsc_root(px), "own-links-3"), NFS3_OK);
	CHECK_STAT(nfsc_remove(px, nfsc_root(px), "own-links"), NFS3_OK);
	CHECK_STAT(nfsc_getattr(px, &fh, &pa), NFS3_OK);
	read_check(px, &fh, 0, len, want, "after own links");
	if (snap(&m1) != 0)
		goto out0;
	CHECK_EQ(ct_delta(&m0, &m1, CT_INVALIDATIONS), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_INVAL_BY("attributes")), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_INVAL_BY("wcc")), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_ACCESS), 0);
	/* The attributes shown are the upstream's: nlink and ctime moved. */
	CHECK_STAT(ct_lookup_root(dx, "own-links-4", &dfh), NFS3_OK);
	CHECK_STAT(nfsc_getattr(dx, &dfh, &da), NFS3_OK);
	CHECK_EQ(pa.nlink, 1);
	CHECK_EQ(pa.nlink, da.nlink);
	CHECK_EQ(pa.ctime.seconds, da.ctime.seconds);
	CHECK_EQ(pa.ctime.nseconds, da.ctime.nseconds);
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&dfh);
	nfsc_fh_free(&fh);
	free(want);
}

/* Mount both sides as root and check the proxy's page size. */
static int suite_init(void)
{
	uint64_t ps;

	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	if (!px || !dx)
		return -1;
	ps = ct_metric_now(CT_PAGE_SIZE);
	if (ps != PAGE) {
		fprintf(stderr, "cachetest: page size %llu, want %u\n",
			(unsigned long long)ps, PAGE);
		return -1;
	}
	return 0;
}

/* Unmount both sides. */
static int suite_cleanup(void)
{
	nfsc_close(&px);
	nfsc_close(&dx);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_cache_semantics");
	s = CU_add_suite("cache_semantics", suite_init, suite_cleanup);
	if (!s ||
	    !CU_add_test(s, "written_ranges_are_byte_exact",
			 test_written_ranges_are_byte_exact) ||
	    !CU_add_test(s, "small_write_reads_nothing",
			 test_small_write_reads_nothing) ||
	    !CU_add_test(s, "valid_ranges_survive_commit",
			 test_valid_ranges_survive_commit) ||
	    !CU_add_test(s, "concurrent_misses_share_one_read",
			 test_concurrent_misses_share_one_read) ||
	    !CU_add_test(s, "hit_while_own_writeback_completes",
			 test_hit_while_own_writeback_completes) ||
	    !CU_add_test(s, "cached_bytes_need_permission",
			 test_cached_bytes_need_permission) ||
	    !CU_add_test(s, "owner_write_only_file_as_upstream",
			 test_owner_write_only_file_as_upstream) ||
	    !CU_add_test(s, "owner_reads_back_its_write_to_write_only_file",
			 test_owner_reads_back_its_write_to_write_only_file) ||
	    !CU_add_test(s, "own_link_rename_remove_keep_cache",
			 test_own_link_rename_remove_keep_cache))
		return -1;
	return 0;
}
