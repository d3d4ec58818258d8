/* SPDX-License-Identifier: MIT */
/*
 * test_wb_attrs: what clients see of a file while the proxy holds its
 * written data (docs/design.md "Write semantics"), and how SETATTR size,
 * REMOVE and CREATE UNCHECKED treat that data.
 *
 * Suites (ctest runs them in two registrations, by name):
 *
 *   attrs_while_dirty  (wbtest_delay.conf: writeback_delay = 600 on the
 *                      proxy's test clock) after an
 *                      extending UNSTABLE WRITE, the WRITE reply and a
 *                      GETATTR through the proxy show the new size at once,
 *                      before any write-back (Ganesha still has size 0);
 *                      the test advances the clock past writeback_delay;
 *                      while write-behind and its COMMIT run, GETATTR
 *                      polled every 20 ms never shows a smaller size or
 *                      another mtime; after the client's COMMIT, size and
 *                      mtime equal those before it.
 *   remove_dirty       (wbtest_delay.conf) a file with a second hard link
 *                      keeps its unwritten data when one name is removed
 *                      (COMMIT through the other name's handle puts it on
 *                      Ganesha); a file with one link loses it: no upstream
 *                      WRITE follows the REMOVE, even after writeback_delay.
 *   truncate_dirty     (wbtest_hold.conf: nothing written back before
 *                      COMMIT) SETATTR size below dirty data drops the
 *                      bytes past the new size: reads through the proxy
 *                      stop there, only the bytes before it go upstream,
 *                      and after COMMIT Ganesha has the new size and those
 *                      bytes; truncate then extend reads zeros in the
 *                      regrown range through the proxy and directly.
 *   file_sync          (wbtest_hold.conf) a FILE_SYNC WRITE is answered
 *                      FILE_SYNC with the proxy's verifier only once its
 *                      bytes are on Ganesha (on disk when the reply comes,
 *                      nothing left unstable), whatever the file's earlier
 *                      UNSTABLE bytes elsewhere do (printed); DATA_SYNC the
 *                      same; a COMMIT then puts those on disk too.
 *   write_permission   (wbtest_hold.conf) a WRITE the upstream would refuse
 *                      (uid 2000 on root's 0644 file: Ganesha answers
 *                      NFS3ERR_ACCES directly) is refused by the proxy too,
 *                      not absorbed: other users never read its bytes, and
 *                      the file keeps its size through the proxy (also after
 *                      a COMMIT by that uid).
 *   create_unchecked   (wbtest_hold.conf) CREATE UNCHECKED with size 0 over
 *                      a file with dirty data drops it: READ returns 0
 *                      bytes, nothing is written upstream, and after COMMIT
 *                      the file is empty on Ganesha.
 *   create_size        (wbtest_hold.conf) CREATE UNCHECKED with size 1000
 *                      over a file holding 8 unwritten bytes at 1,000,000:
 *                      Ganesha 4.3 ignores a non-zero size on an existing
 *                      file, and the proxy must neither drop the bytes nor
 *                      show a size the upstream does not have: it writes
 *                      them back first and adopts the reply's size.
 *   revoke_dirty       (wbtest_hold.conf) a writer's absorbed bytes, then
 *                      root through another connection takes its write
 *                      permission away (chmod 0444; chown to another uid;
 *                      chgrp away from the writer's group): the writer's
 *                      COMMIT succeeds and the bytes are on disk, as
 *                      directly (the Linux client's nfs_setattr writes
 *                      back first too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define COMMIT_MS 60000

static struct wb_conn px, dx;

/* Open a proxy and a direct connection as root. */
static int init_both(void)
{
	return wb_open(&px, "proxy", 0, 0) < 0 || wb_open(&dx, "direct", 0, 0) < 0
		       ? -1 : 0;
}

/* Close both connections. */
static int clean(void)
{
	wb_close(&px);
	wb_close(&dx);
	return 0;
}

/* Create a fresh file through the proxy; its name into name. */
static int fresh(const char *prefix, char *name, size_t n, struct wb_fh *fh)
{
	int st;

	wb_unique_name(name, n, prefix);
	st = wb_create(&px, &px.root, name, UNCHECKED, 0644, 0, fh, NULL);
	WB_STAT(st, NFS3_OK);
	return st == NFS3_OK && fh->len ? 0 : -1;
}

/* Data with no zero byte, so that zeros read back mean a hole. */
static void nonzero_pattern(uint8_t *buf, size_t n, uint32_t seed)
{
	wb_pattern(buf, n, 0, seed);
	for (size_t i = 0; i < n; i++)
		buf[i] |= 1;
}

/* True if two NFS times are equal. */
static bool time_eq(const nfstime3 *a, const nfstime3 *b)
{
	return a->seconds == b->seconds && a->nseconds == b->nseconds;
}

/* Check name's size and bytes directly on Ganesha and on disk. */
static void check_direct(const char *name, const uint8_t *want, uint64_t len)
{
	uint8_t *got = malloc(len + 1);
	struct wb_fh fh;
	fattr3 at;

	if (!got)
		return;
	WB_STAT(wb_lookup(&dx, &dx.root, name, &fh, &at), NFS3_OK);
	WB_EQ(at.size, len);
	if (len) {
		WB_EQ(wb_read_all(&dx, &fh, got, len), len);
		WB_EQ(wb_first_diff(got, want, len), len);
		memset(got, 0, len);
	}
	WB_EQ(wb_disk_size(name), len);
	if (len) {
		WB_EQ(wb_disk_read(name, 0, got, len), len);
		WB_EQ(wb_first_diff(got, want, len), len);
	}
	free(got);
}

/* Poll GETATTR through the proxy until write-back of fh is done (nothing
 * dirty, writing or unstable, and wb_writes upstream WRITEs sent since
 * base); every answer must show size >= want_size and mtime want_mtime.
 * Returns the number of GETATTRs made. */
static unsigned watch_writeback(const struct wb_fh *fh, uint64_t want_size,
				const nfstime3 *want_mtime, double base_writes,
				double wb_writes)
{
	uint64_t end = wb_now_ms() + 60000;
	unsigned polls = 0, bad_size = 0, bad_mtime = 0;
	struct wb_snap s;
	bool done = false;
	fattr3 at;

	while (!done && wb_now_ms() < end) {
		WB_STAT(wb_getattr(&px, fh, &at), NFS3_OK);
		polls++;
		if (at.size < want_size)
			bad_size++;
		if (!time_eq(&at.mtime, want_mtime))
			bad_mtime++;
		if (bad_size + bad_mtime == 1)
			fprintf(stderr, "wbtest: GETATTR #%u while writing back: "
				"size %llu mtime %u.%09u (want >= %llu, "
				"%u.%09u)\n", polls,
				(unsigned long long)at.size, at.mtime.seconds,
				at.mtime.nseconds,
				(unsigned long long)want_size,
				want_mtime->seconds, want_mtime->nseconds);
		if (wb_snap_take(&s) == 0) {
			done = wb_snap_get(&s, WB_M_WB_WRITES) - base_writes >=
				       wb_writes &&
			       wb_snap_get(&s, WB_M_DIRTY) == 0 &&
			       wb_snap_get(&s, WB_M_WRITING) == 0 &&
			       wb_snap_get(&s, WB_M_UNSTABLE) == 0;
			wb_snap_free(&s);
		}
		wb_sleep_ms(20);
	}
	WB_CHECK(done, "write-behind wrote and committed the file within "
		 "60 s");
	WB_EQ(bad_size, 0);
	WB_EQ(bad_mtime, 0);
	return polls;
}

/* Extending UNSTABLE WRITEs: the size shows at once and stays; mtime
 * does not move across write-back and COMMIT. */
static void test_attrs_while_dirty(void)
{
	const uint32_t len1 = 100000, len2 = 50000;
	uint8_t *data = malloc(len1 + len2);
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1;
	fattr3 a0, g1, g2, d1;
	struct wb_wres r;
	struct wb_fh fh, dfh;
	unsigned polls;
	char name[64];

	if (!data || fresh("wb-attrs", name, sizeof(name), &fh) < 0)
		goto out;
	wb_pattern(data, len1 + len2, 0, 7);
	WB_STAT(wb_getattr(&px, &fh, &a0), NFS3_OK);
	WB_EQ(a0.size, 0);
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");

	/* Part 1: write-behind (writeback_delay = 600 s) does the work. */
	WB_STAT(wb_write(&px, &fh, 0, data, len1, UNSTABLE, &r), NFS3_OK);
	WB_CHECK(r.has_post, "the WRITE reply has post-op attributes");
	WB_EQ(r.post.size, len1);
	WB_STAT(wb_getattr(&px, &fh, &g1), NFS3_OK);
	WB_EQ(g1.size, len1);
	WB_CHECK(time_eq(&g1.mtime, &r.post.mtime), "GETATTR mtime %u.%09u "
		 "== the WRITE reply's %u.%09u", g1.mtime.seconds,
		 g1.mtime.nseconds, r.post.mtime.seconds, r.post.mtime.nseconds);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), 0);
	WB_STAT(wb_lookup(&dx, &dx.root, name, &dfh, &d1), NFS3_OK);
	WB_EQ(d1.size, 0);
	WB_CHECK(tclock_advance(600) == 0, "advance past writeback_delay");
	polls = watch_writeback(&fh, len1, &g1.mtime,
				wb_snap_get(&s0, WB_M_WB_WRITES), 1);
	fprintf(stderr, "wbtest: attrs: %u GETATTRs during write-behind\n",
		polls);
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	WB_STAT(wb_getattr(&px, &fh, &g2), NFS3_OK);
	WB_EQ(g2.size, g1.size);
	WB_CHECK(time_eq(&g2.mtime, &g1.mtime), "mtime after write-back and "
		 "COMMIT %u.%09u == before %u.%09u", g2.mtime.seconds,
		 g2.mtime.nseconds, g1.mtime.seconds, g1.mtime.nseconds);
	WB_STAT(wb_lookup(&dx, &dx.root, name, &dfh, &d1), NFS3_OK);
	WB_EQ(d1.size, len1);

	/* Part 2: the client's COMMIT does the work at once. */
	WB_STAT(wb_write(&px, &fh, len1, data + len1, len2, UNSTABLE, &r),
		NFS3_OK);
	WB_EQ(r.post.size, len1 + len2);
	WB_STAT(wb_getattr(&px, &fh, &g1), NFS3_OK);
	WB_EQ(g1.size, len1 + len2);
	WB_CHECK(!time_eq(&g1.mtime, &g2.mtime), "the second WRITE moved "
		 "mtime");
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	WB_STAT(wb_getattr(&px, &fh, &g2), NFS3_OK);
	WB_EQ(g2.size, g1.size);
	WB_CHECK(time_eq(&g2.mtime, &g1.mtime), "mtime after COMMIT %u.%09u "
		 "== before %u.%09u", g2.mtime.seconds, g2.mtime.nseconds,
		 g1.mtime.seconds, g1.mtime.nseconds);
	check_direct(name, data, len1 + len2);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
out:
	free(data);
}

/* REMOVE of one of two links keeps the data; of the last link drops it. */
static void test_remove_dirty(void)
{
	const uint32_t len = 128 * WB_KIB;
	uint8_t *data = malloc(len);
	uint8_t verf[NFS3_WRITEVERFSIZE];
	char a[64], b[80], c[64];
	struct wb_snap s0, s1, s2;
	struct wb_fh fa, fb, fc;
	fattr3 at;

	if (!data)
		return;
	wb_pattern(data, len, 0, 11);

	/* Two links. */
	if (fresh("wb-rm2", a, sizeof(a), &fa) < 0)
		goto out;
	snprintf(b, sizeof(b), "%s-link", a);
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_STAT(wb_write(&px, &fa, 0, data, len, UNSTABLE, NULL), NFS3_OK);
	WB_STAT(wb_link(&px, &fa, &px.root, b), NFS3_OK);
	WB_STAT(wb_remove(&px, &px.root, a), NFS3_OK);
	WB_STAT(wb_lookup(&px, &px.root, b, &fb, &at), NFS3_OK);
	WB_EQ(at.nlink, 1);
	WB_EQ(at.size, len);
	WB_STAT(wb_commit(&px, &fb, verf, COMMIT_MS), NFS3_OK);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("remove_dirty, two links", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_WB_BYTES), len);
	check_direct(b, data, len);

	/* One link. */
	if (fresh("wb-rm1", c, sizeof(c), &fc) < 0)
		goto out;
	WB_STAT(wb_write(&px, &fc, 0, data, len, UNSTABLE, NULL), NFS3_OK);
	WB_EQ(wb_metric(WB_M_DIRTY), len);
	WB_STAT(wb_remove(&px, &px.root, c), NFS3_OK);
	wb_snap_free(&s1);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	WB_EQ(wb_snap_get(&s1, WB_M_DIRTY), 0);
	WB_EQ(wb_snap_get(&s1, WB_M_DIRTY_FILES), 0);
	/* Past writeback_delay: the write-back tick runs before the clock's
	 * answer, and would have sent (and counted) a WRITE by now. */
	WB_CHECK(tclock_advance(600) == 0, "advance past writeback_delay");
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("remove_dirty, after REMOVE of the last link", &s1, &s2);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_UP_WRITE), 0);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_UP_COMMIT), 0);
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_ERRORS), 0);
	WB_EQ(wb_snap_get(&s2, WB_M_UNSTABLE), 0);
	WB_EQ(wb_disk_size(c), -1);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
out:
	free(data);
}

/* Read [0, len) of fh through the proxy; check count, eof, bytes. */
static void check_proxy_read(const struct wb_fh *fh, const uint8_t *want,
			     uint32_t asked, uint32_t len)
{
	uint8_t *got = malloc(asked);
	uint32_t count = 0;
	bool eof = false;

	if (!got)
		return;
	WB_STAT(wb_read(&px, fh, 0, asked, got, &count, &eof), NFS3_OK);
	WB_EQ(count, len);
	WB_CHECK(eof, "READ of [0, %u) with size %u has eof", asked, len);
	if (count == len)
		WB_EQ(wb_first_diff(got, want, len), len);
	free(got);
}

/* SETATTR size below dirty data; then truncate and extend. */
static void test_truncate_dirty(void)
{
	const uint32_t len = 256 * WB_KIB, cut = 100000;
	const uint32_t cut2 = 64 * WB_KIB + 100;
	uint8_t *data = malloc(len), *want = calloc(1, len);
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1;
	struct wb_fh fh;
	fattr3 at;
	char name[64];

	if (!data || !want)
		goto out;
	nonzero_pattern(data, len, 13);

	/* Truncate below dirty data. */
	if (fresh("wb-trunc", name, sizeof(name), &fh) < 0)
		goto out;
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_STAT(wb_write(&px, &fh, 0, data, len, UNSTABLE, NULL), NFS3_OK);
	WB_STAT(wb_setattr(&px, &fh, cut, -1, &at), NFS3_OK);
	WB_EQ(at.size, cut);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, cut);
	check_proxy_read(&fh, data, len, cut);
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("truncate_dirty", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_WB_BYTES), cut);
	WB_EQ(wb_snap_get(&s1, WB_M_DIRTY), 0);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, cut);
	check_direct(name, data, cut);
	wb_snap_free(&s0);
	wb_snap_free(&s1);

	/* Truncate, then extend: the regrown range reads zeros. */
	if (fresh("wb-regrow", name, sizeof(name), &fh) < 0)
		goto out;
	memcpy(want, data, cut2);
	WB_STAT(wb_write(&px, &fh, 0, data, len, UNSTABLE, NULL), NFS3_OK);
	WB_STAT(wb_setattr(&px, &fh, cut2, -1, NULL), NFS3_OK);
	WB_STAT(wb_setattr(&px, &fh, len, -1, &at), NFS3_OK);
	WB_EQ(at.size, len);
	check_proxy_read(&fh, want, len, len);
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	check_proxy_read(&fh, want, len, len);
	check_direct(name, want, len);
out:
	free(data);
	free(want);
}

/* FILE_SYNC and DATA_SYNC WRITEs reach Ganesha before their reply. */
static void test_file_sync(void)
{
	const uint32_t len = 64 * WB_KIB;
	const uint64_t far = 4 * WB_MIB;
	uint8_t *data = malloc(3 * len), *got = malloc(len);
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1, s2;
	struct wb_wres ru, rs;
	struct wb_fh fh;
	char name[64];

	if (!data || !got || fresh("wb-sync", name, sizeof(name), &fh) < 0)
		goto out;
	wb_pattern(data, 3 * len, 0, 19);
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_STAT(wb_write(&px, &fh, 0, data, len, UNSTABLE, &ru), NFS3_OK);
	WB_EQ(ru.committed, UNSTABLE);
	WB_STAT(wb_write(&px, &fh, far, data + len, len, FILE_SYNC, &rs),
		NFS3_OK);
	WB_EQ(rs.committed, FILE_SYNC);
	WB_EQ(rs.count, len);
	WB_CHECK(memcmp(rs.verf, ru.verf, sizeof(rs.verf)) == 0,
		 "FILE_SYNC and UNSTABLE replies carry the same verifier");
	/* On disk at reply time, without any COMMIT. */
	WB_EQ(wb_disk_read(name, far, got, len), len);
	WB_CHECK(memcmp(got, data + len, len) == 0,
		 "the FILE_SYNC bytes are on disk when the reply comes");
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("file_sync after the FILE_SYNC WRITE", &s0, &s1);
	WB_CHECK(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE) >= 1,
		 "the FILE_SYNC WRITE went upstream");
	WB_EQ(wb_snap_get(&s1, WB_M_UNSTABLE), 0);
	/* Not a contract, but worth seeing: did the file's earlier UNSTABLE
	 * bytes go up with it (FILE_SYNC too, before it: lowest first)? */
	fprintf(stderr, "wbtest: file_sync: %.0f upstream WRITEs (%.0f bytes) "
		"before the FILE_SYNC reply; %.0f bytes still dirty\n",
		wb_snap_delta(&s0, &s1, WB_M_UP_WRITE),
		wb_snap_delta(&s0, &s1, WB_M_WB_BYTES),
		wb_snap_get(&s1, WB_M_DIRTY));

	WB_STAT(wb_write(&px, &fh, far + len, data + 2 * len, len, DATA_SYNC,
			 &rs), NFS3_OK);
	WB_CHECK(rs.committed == DATA_SYNC || rs.committed == FILE_SYNC,
		 "a DATA_SYNC WRITE is answered DATA_SYNC or FILE_SYNC (got %d)",
		 rs.committed);
	WB_EQ(wb_disk_read(name, far + len, got, len), len);
	WB_CHECK(memcmp(got, data + 2 * len, len) == 0,
		 "the DATA_SYNC bytes are on disk when the reply comes");
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	WB_CHECK(wb_snap_delta(&s1, &s2, WB_M_UP_WRITE) >= 1,
		 "the DATA_SYNC WRITE went upstream");
	WB_EQ(wb_snap_get(&s2, WB_M_UNSTABLE), 0);
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	WB_EQ(wb_metric(WB_M_DIRTY), 0);
	WB_EQ(wb_disk_read(name, 0, got, len), len);
	WB_CHECK(memcmp(got, data, len) == 0,
		 "the UNSTABLE bytes are on disk after COMMIT");
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
out:
	free(data);
	free(got);
}

/* A WRITE the upstream refuses must not be absorbed. */
static void test_write_permission(void)
{
	const uint32_t len = 4096;
	uint8_t data[4096], got[4096];
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_fh fh, dfh;
	struct wb_wres r;
	uint32_t count = 0;
	bool eof = false;
	fattr3 at;
	char name[64];
	int st;

	memset(data, 'X', sizeof(data));
	if (fresh("wb-perm", name, sizeof(name), &fh) < 0)
		return;
	WB_STAT(wb_lookup(&dx, &dx.root, name, &dfh, &at), NFS3_OK);
	WB_EQ(at.mode & 0777, 0644);
	WB_EQ(at.uid, 0);
	/* What the upstream says to uid 2000. */
	wb_set_cred(&dx, 2000, 2000);
	st = wb_write(&dx, &dfh, 0, data, len, UNSTABLE, &r);
	wb_set_cred(&dx, 0, 0);
	WB_STAT(st, NFS3ERR_ACCES);
	/* The proxy must say the same, not absorb the bytes. */
	wb_set_cred(&px, 2000, 2000);
	st = wb_write(&px, &fh, 0, data, len, UNSTABLE, &r);
	WB_STAT(st, NFS3ERR_ACCES);
	wb_set_cred(&px, 1000, 1000);
	memset(got, 0, sizeof(got));
	WB_STAT(wb_read(&px, &fh, 0, len, got, &count, &eof), NFS3_OK);
	WB_CHECK(count == 0, "another user reads %u bytes of a refused WRITE "
		 "through the proxy (first byte 0x%02x), want 0", count, got[0]);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, 0);
	/* Whatever the proxy did, after a COMMIT by that uid the file must
	 * look through the proxy as it is on Ganesha: empty. */
	wb_set_cred(&px, 2000, 2000);
	st = wb_commit(&px, &fh, verf, COMMIT_MS);
	fprintf(stderr, "wbtest: write_permission: the COMMIT by uid 2000 "
		"answered %s\n", wb_stat_name(st));
	wb_set_cred(&px, 0, 0);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, 0);
	count = 1;
	WB_STAT(wb_read(&px, &fh, 0, len, got, &count, &eof), NFS3_OK);
	WB_EQ(count, 0);
	WB_EQ(wb_disk_size(name), 0);
}

/* CREATE UNCHECKED size 0 over a file with dirty data. */
static void test_create_unchecked(void)
{
	const uint32_t len = 128 * WB_KIB;
	uint8_t *data = malloc(len), buf[4096];
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_snap s0, s1;
	struct wb_fh fh, fh2;
	uint32_t count = 1;
	bool eof = false;
	fattr3 at;
	char name[64];

	if (!data || fresh("wb-recreate", name, sizeof(name), &fh) < 0)
		goto out;
	wb_pattern(data, len, 0, 17);
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_STAT(wb_write(&px, &fh, 0, data, len, UNSTABLE, NULL), NFS3_OK);
	WB_STAT(wb_create(&px, &px.root, name, UNCHECKED, 0644, 0, &fh2, &at),
		NFS3_OK);
	WB_CHECK(fh2.len == fh.len && memcmp(fh2.data, fh.data, fh.len) == 0,
		 "CREATE UNCHECKED of an existing name returns its handle");
	WB_EQ(at.size, 0);
	WB_STAT(wb_read(&px, &fh, 0, sizeof(buf), buf, &count, &eof), NFS3_OK);
	WB_EQ(count, 0);
	WB_CHECK(eof, "READ at 0 of the recreated file has eof");
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, 0);
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("create_unchecked", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_WB_BYTES), 0);
	WB_EQ(wb_snap_get(&s1, WB_M_DIRTY), 0);
	WB_EQ(wb_snap_get(&s1, WB_M_DIRTY_FILES), 0);
	check_direct(name, data, 0);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
out:
	free(data);
}

/* CREATE UNCHECKED size 1000 over a file with 8 dirty bytes past it. */
static void test_create_size(void)
{
	const uint64_t off = 1000000;
	uint8_t data[8] = "ABCDEFGH", got[16];
	uint8_t verf[NFS3_WRITEVERFSIZE];
	struct wb_fh fh, fh2, dfh;
	uint32_t count = 0;
	bool eof = false;
	fattr3 at, dat;
	char name[64];

	if (fresh("wb-create-size", name, sizeof(name), &fh) < 0)
		return;
	WB_STAT(wb_write(&px, &fh, off, data, sizeof(data), UNSTABLE, NULL),
		NFS3_OK);
	WB_STAT(wb_create(&px, &px.root, name, UNCHECKED, 0644, 1000, &fh2, &at),
		NFS3_OK);
	WB_STAT(wb_lookup(&dx, &dx.root, name, &dfh, &dat), NFS3_OK);
	fprintf(stderr, "wbtest: create_size: the reply says size %llu, "
		"Ganesha %llu\n", (unsigned long long)at.size,
		(unsigned long long)dat.size);
	/* What Ganesha 4.3 does: the size of an existing file is kept. */
	WB_EQ(dat.size, off + sizeof(data));
	WB_EQ(at.size, dat.size);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, dat.size);
	memset(got, 0, sizeof(got));
	WB_STAT(wb_read(&px, &fh, off, sizeof(got), got, &count, &eof), NFS3_OK);
	WB_EQ(count, sizeof(data));
	WB_CHECK(memcmp(got, data, sizeof(data)) == 0,
		 "the acknowledged bytes read back through the proxy");
	WB_STAT(wb_commit(&px, &fh, verf, COMMIT_MS), NFS3_OK);
	memset(got, 0, sizeof(got));
	WB_EQ(wb_disk_read(name, off, got, sizeof(data)), sizeof(data));
	WB_CHECK(memcmp(got, data, sizeof(data)) == 0,
		 "the acknowledged bytes are on disk");
	WB_EQ(wb_disk_size(name), off + sizeof(data));
}

/* What root does to a file before and after the writer writes. */
enum revoke { REVOKE_MODE, REVOKE_OWNER, REVOKE_GROUP };

/* Writer wuid/wgid writes, root takes the permission away, writer commits. */
static void revoke_case(enum revoke how, uint32_t wuid, uint32_t wgid)
{
	static const uint32_t mode0[] = { 0666, 0600, 0660 };
	const uint8_t data[7] = "revoked";
	uint8_t got[7], verf[NFS3_WRITEVERFSIZE];
	struct wb_conn pw;
	struct wb_fh fh;
	char name[64];
	int st;

	if (fresh("wb-revoke", name, sizeof(name), &fh) < 0)
		return;
	WB_STAT(wb_setattr(&px, &fh, -1, (int32_t)mode0[how], NULL), NFS3_OK);
	if (how == REVOKE_OWNER)
		WB_STAT(wb_setattr_owner(&px, &fh, wuid, -1), NFS3_OK);
	if (how == REVOKE_GROUP)
		WB_STAT(wb_setattr_owner(&px, &fh, -1, wgid), NFS3_OK);
	if (wb_open(&pw, "proxy", wuid, wgid) < 0) {
		WB_CHECK(false, "a connection as uid %u", wuid);
		return;
	}
	WB_STAT(wb_write(&pw, &fh, 0, data, sizeof(data), UNSTABLE, NULL),
		NFS3_OK);
	/* Root, through its own connection to the proxy. */
	if (how == REVOKE_MODE)
		WB_STAT(wb_setattr(&px, &fh, -1, 0444, NULL), NFS3_OK);
	else if (how == REVOKE_OWNER)
		WB_STAT(wb_setattr_owner(&px, &fh, 2000, -1), NFS3_OK);
	else
		WB_STAT(wb_setattr_owner(&px, &fh, -1, 0), NFS3_OK);
	st = wb_commit(&pw, &fh, verf, COMMIT_MS);
	WB_STAT(st, NFS3_OK);
	memset(got, 0, sizeof(got));
	WB_EQ(wb_disk_read(name, 0, got, sizeof(got)), sizeof(data));
	WB_CHECK(memcmp(got, data, sizeof(data)) == 0,
		 "the writer's acknowledged bytes are on disk");
	wb_close(&pw);
}

static void test_revoke_mode(void)
{
	revoke_case(REVOKE_MODE, 1000, 1000);
}

static void test_revoke_owner(void)
{
	revoke_case(REVOKE_OWNER, 1000, 1000);
}

static void test_revoke_group(void)
{
	revoke_case(REVOKE_GROUP, 1001, 1000);
}

int test_register(void)
{
	static const struct {
		const char *suite;
		const char *test;
		CU_TestFunc fn;
	} t[] = {
		{ "attrs_while_dirty", "size_and_mtime", test_attrs_while_dirty },
		{ "remove_dirty", "links", test_remove_dirty },
		{ "truncate_dirty", "drop_and_regrow", test_truncate_dirty },
		{ "file_sync", "stable_before_reply", test_file_sync },
		{ "write_permission", "refused_not_absorbed",
		  test_write_permission },
		{ "create_unchecked", "size0_drops", test_create_unchecked },
		{ "create_size", "size_kept_bytes_kept", test_create_size },
		{ "revoke_dirty", "chmod", test_revoke_mode },
		{ "revoke_dirty", "chown", test_revoke_owner },
		{ "revoke_dirty", "chgrp", test_revoke_group },
	};
	CU_pSuite s;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		s = CU_get_suite(t[i].suite);
		if (!s)
			s = CU_add_suite(t[i].suite, init_both, clean);
		if (!s || !CU_add_test(s, t[i].test, t[i].fn))
			return -1;
	}
	return 0;
}
