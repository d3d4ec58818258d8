/* SPDX-License-Identifier: MIT */
/*
 * test_offsets: 64-bit offsets and EOF reporting, through the proxy
 * (NFSC_PROXY_URL) and directly (NFSC_DIRECT_URL), compared.
 *
 * Each side works on its own file in its own directory (off-p-PID and
 * off-d-PID under the export root); what reached Ganesha is also read back
 * from the export directory on disk (NFSC_EXPORT_DIR) after a FILE_SYNC
 * write or a COMMIT. Every read is done twice, so a caching proxy answers
 * the second from its cache and must give the same count, eof and bytes.
 * Offsets next to 2^63 and 2^64 get the same refusals and EOF answers as
 * Ganesha gives directly.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "nfsclient.h"

enum { P = 0, D = 1, NSIDES = 2 };

#define GIB (1024ull * 1024 * 1024)

static const char *const side_name[NSIDES] = { "proxy", "direct" };
static struct nfsc *cl[NSIDES];
static nfs_fh3 dir[NSIDES];
static char dir_name[NSIDES][64];

#define BOTH(s) for (int s = 0; s < NSIDES; s++)

/* Fill buf with bytes that depend on the absolute offset and a seed. */
static void pattern(unsigned char *buf, size_t n, uint64_t off, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull ^ seed;

		x ^= x >> 31;
		buf[i] = (unsigned char)(x * 0x94D049BB133111EBull >> 56);
	}
}

/* Create file name in each side's directory; fh[] receives the handles. */
static void create_both(const char *name, nfs_fh3 fh[NSIDES])
{
	BOTH(s) {
		int st = nfsc_create(cl[s], &dir[s], name, 0644, &fh[s], NULL);

		CHECK_MSG(st == NFS3_OK, "CREATE %s (%s): %s", name,
			  side_name[s], nfsc_stat_name(st));
	}
}

/* WRITE len bytes at off with stable on both sides; check the replies. */
static void write_both(const nfs_fh3 fh[NSIDES], uint64_t off,
		       const void *buf, uint32_t len, int stable)
{
	BOTH(s) {
		uint32_t count = 0;
		int committed = -1;
		char verf[8];
		int st = nfsc_write(cl[s], &fh[s], off, buf, len, stable,
				    &count, &committed, verf);

		CHECK_MSG(st == NFS3_OK && count == len && committed >= stable,
			  "WRITE off %llu len %u (%s): %s count %u "
			  "committed %d",
			  (unsigned long long)off, len, side_name[s],
			  nfsc_stat_name(st), count, committed);
	}
}

/*
 * READ [off, off+len) twice on both sides. Check status, count and eof
 * against the wanted values (want_eof -1: only that the sides agree) and
 * the bytes against want.
 */
static void read_both(const nfs_fh3 fh[NSIDES], uint64_t off, uint32_t len,
		      const unsigned char *want, uint32_t want_count,
		      int want_eof)
{
	unsigned char *buf = malloc(len + 1);
	int eof[NSIDES][2], st;
	uint32_t count;

	BOTH(s) {
		for (int pass = 0; pass < 2; pass++) {
			memset(buf, 0xee, len);
			st = nfsc_read(cl[s], &fh[s], off, len, buf, &count,
				       &eof[s][pass]);
			CHECK_MSG(st == NFS3_OK && count == want_count &&
					  (want_eof < 0 ||
					   eof[s][pass] == want_eof),
				  "READ off %llu len %u (%s, pass %d): %s "
				  "count %u eof %d, want count %u eof %d",
				  (unsigned long long)off, len, side_name[s],
				  pass, nfsc_stat_name(st), count,
				  eof[s][pass], want_count, want_eof);
			CHECK_MSG(count != want_count ||
					  memcmp(buf, want, count) == 0,
				  "READ off %llu len %u (%s, pass %d): data "
				  "differs", (unsigned long long)off, len,
				  side_name[s], pass);
		}
	}
	CHECK_MSG(eof[P][0] == eof[D][0] && eof[P][1] == eof[D][1],
		  "READ off %llu len %u: eof proxy %d/%d, direct %d/%d",
		  (unsigned long long)off, len, eof[P][0], eof[P][1],
		  eof[D][0], eof[D][1]);
	free(buf);
}

/* GETATTR both sides and check the size. */
static void size_both(const nfs_fh3 fh[NSIDES], uint64_t want)
{
	BOTH(s) {
		fattr3 a;
		int st = nfsc_getattr(cl[s], &fh[s], &a);

		CHECK_MSG(st == NFS3_OK && a.size == want,
			  "GETATTR (%s): %s size %llu, want %llu", side_name[s],
			  nfsc_stat_name(st), (unsigned long long)a.size,
			  (unsigned long long)want);
	}
}

/* Check that the file's bytes on disk at off are want. */
static void disk_has(int s, const char *name, uint64_t off,
		     const unsigned char *want, size_t len)
{
	const char *root = getenv("NFSC_EXPORT_DIR");
	char path[512];
	unsigned char *buf;
	ssize_t n = -1;
	int fd;

	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/%s/%s", root, dir_name[s], name);
	buf = malloc(len);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = pread(fd, buf, len, (off_t)off);
		close(fd);
	}
	CHECK_MSG(n == (ssize_t)len && memcmp(buf, want, len) == 0,
		  "%s on disk at %llu: read %zd of %zu bytes%s", path,
		  (unsigned long long)off, n, len,
		  n == (ssize_t)len ? ", data differs" : "");
	free(buf);
}

/* COMMIT the whole file on both sides. */
static void commit_both(const nfs_fh3 fh[NSIDES])
{
	BOTH(s) {
		char verf[8];
		int st = nfsc_commit(cl[s], &fh[s], 0, 0, verf);

		CHECK_MSG(st == NFS3_OK, "COMMIT (%s): %s", side_name[s],
			  nfsc_stat_name(st));
	}
}

/* Release both handles. */
static void fh_free_both(nfs_fh3 fh[NSIDES])
{
	BOTH(s)
		nfsc_fh_free(&fh[s]);
}

/* A write at 5 GiB, another across 4 GiB; the hole below reads as zeros. */
static void test_write_at_5gib(void)
{
	enum { LEN = 10000 };
	const uint64_t off5 = 5 * GIB, off4 = 4 * GIB - 100;
	unsigned char data[LEN], across[200], zeros[LEN];
	nfs_fh3 fh[NSIDES];

	create_both("big", fh);
	pattern(data, LEN, off5, 1);
	pattern(across, sizeof(across), off4, 2);
	memset(zeros, 0, sizeof(zeros));

	write_both(fh, off5, data, LEN, FILE_SYNC);
	size_both(fh, off5 + LEN);
	read_both(fh, off5, LEN, data, LEN, 1);
	read_both(fh, off5 + 1234, 4096, data + 1234, 4096, 0);
	BOTH(s)
		disk_has(s, "big", off5, data, LEN);

	write_both(fh, off4, across, sizeof(across), UNSTABLE);
	read_both(fh, off4, sizeof(across), across, sizeof(across), 0);
	read_both(fh, 4 * GIB, 100, across + 100, 100, 0);
	commit_both(fh);
	BOTH(s)
		disk_has(s, "big", off4, across, sizeof(across));

	read_both(fh, GIB, LEN, zeros, LEN, 0);
	memcpy(zeros + 500, data, 500);
	read_both(fh, off5 - 500, 1000, zeros, 1000, 0);
	size_both(fh, off5 + LEN);
	fh_free_both(fh);
}

/* READs at EOF and past it return nothing with eof set. */
static void test_read_at_and_past_eof(void)
{
	enum { LEN = 10000 };
	unsigned char data[LEN];
	nfs_fh3 fh[NSIDES];

	create_both("eof", fh);
	read_both(fh, 0, 100, data, 0, 1);	/* empty file */
	pattern(data, LEN, 0, 3);
	write_both(fh, 0, data, LEN, UNSTABLE);
	read_both(fh, LEN, 100, data, 0, 1);
	read_both(fh, LEN + 1, 100, data, 0, 1);
	read_both(fh, 20000, 4096, data, 0, 1);
	read_both(fh, 5 * GIB, 4096, data, 0, 1);
	read_both(fh, LEN, 0, data, 0, -1);
	commit_both(fh);
	read_both(fh, LEN, 100, data, 0, 1);
	fh_free_both(fh);
}

/* Short reads that reach EOF; the sides agree on count and eof. */
static void test_short_read_sets_eof(void)
{
	enum { LEN = 10000 };
	unsigned char data[LEN + 100];
	nfs_fh3 fh[NSIDES];

	create_both("short", fh);
	pattern(data, LEN + 100, 0, 4);
	write_both(fh, 0, data, LEN, FILE_SYNC);
	read_both(fh, 9000, 4096, data + 9000, 1000, 1);
	read_both(fh, 0, LEN + 1, data, LEN, 1);
	read_both(fh, 8192, 8192, data + 8192, LEN - 8192, 1);
	read_both(fh, LEN - 1, 2, data + LEN - 1, 1, 1);
	/* A read that ends exactly at EOF: the sides must agree on eof. */
	read_both(fh, 0, LEN, data, LEN, -1);
	read_both(fh, 5000, 5000, data + 5000, 5000, -1);
	read_both(fh, 0, 4096, data, 4096, 0);

	/* Extend by 100 bytes: the old EOF is no longer one. */
	write_both(fh, LEN, data + LEN, 100, UNSTABLE);
	read_both(fh, 9000, 4096, data + 9000, 1100, 1);
	read_both(fh, 9000, 1000, data + 9000, 1000, 0);
	size_both(fh, LEN + 100);
	fh_free_both(fh);
}

/* WRITE len bytes at off on both sides; the statuses must be equal and
 * not NFS3_OK (want, if not 0, names the one both must give). */
static void write_refused_both(const nfs_fh3 fh[NSIDES], uint64_t off,
			       const void *buf, uint32_t len, int stable,
			       int want)
{
	int st[NSIDES];

	BOTH(s) {
		uint32_t count = 0;
		int committed = -1;
		char verf[8];

		st[s] = nfsc_write(cl[s], &fh[s], off, buf, len, stable, &count,
				   &committed, verf);
	}
	CHECK_MSG(st[P] == st[D] && st[P] != NFS3_OK &&
			  (want == 0 || st[P] == want),
		  "WRITE off %llu len %u stable %d: proxy %s, direct %s",
		  (unsigned long long)off, len, stable, nfsc_stat_name(st[P]),
		  nfsc_stat_name(st[D]));
}

/* READ len bytes at off on both sides: the same status, and when it is
 * NFS3_OK the same count and eof. */
static void read_same_both(const nfs_fh3 fh[NSIDES], uint64_t off,
			   uint32_t len)
{
	unsigned char buf[256];
	uint32_t count[NSIDES] = { 0, 0 };
	int st[NSIDES], eof[NSIDES] = { -1, -1 };

	BOTH(s)
		st[s] = nfsc_read(cl[s], &fh[s], off, len < sizeof(buf) ?
				  len : sizeof(buf), buf, &count[s], &eof[s]);
	CHECK_MSG(st[P] == st[D] && (st[P] != NFS3_OK ||
				     (count[P] == count[D] && eof[P] == eof[D])),
		  "READ off %llu len %u: proxy %s count %u eof %d, direct %s "
		  "count %u eof %d", (unsigned long long)off, len,
		  nfsc_stat_name(st[P]), count[P], eof[P],
		  nfsc_stat_name(st[D]), count[D], eof[D]);
}

/*
 * Offsets next to 2^63 and 2^64, which no file reaches: WRITEs that end
 * past 2^64 are NFS3ERR_INVAL, WRITEs and READs past the largest off_t get
 * the upstream's own answer (Ganesha: NFS3ERR_FBIG or NFS3ERR_INVAL). The
 * proxy caches none of it (a page at 2^64 - 4 KiB used to wrap its end to
 * 0), and the file stays as it was.
 */
static void test_offsets_near_2_64(void)
{
	const uint64_t top = UINT64_MAX;
	unsigned char data[100];
	nfs_fh3 fh[NSIDES];

	create_both("edge", fh);
	pattern(data, sizeof(data), 0, 5);
	write_both(fh, 0, data, sizeof(data), FILE_SYNC);
	write_refused_both(fh, top - 4, data, 100, FILE_SYNC, NFS3ERR_INVAL);
	write_refused_both(fh, top - 4, data, 100, UNSTABLE, NFS3ERR_INVAL);
	write_refused_both(fh, top - 4095, data, 100, UNSTABLE, 0);
	write_refused_both(fh, top - 4095, data, 100, FILE_SYNC, 0);
	write_refused_both(fh, (uint64_t)INT64_MAX - 50, data, 100, UNSTABLE, 0);
	read_same_both(fh, top - 300000, 100);
	read_same_both(fh, top - 99, 100);
	read_same_both(fh, top - 49, 100);
	read_same_both(fh, (uint64_t)INT64_MAX - 50, 100);
	size_both(fh, sizeof(data));
	read_both(fh, 0, sizeof(data), data, sizeof(data), 1);
	commit_both(fh);
	fh_free_both(fh);
}

/* Connect both clients and make the per-side directories. */
static int suite_init(void)
{
	const char *url[NSIDES] = { getenv("NFSC_PROXY_URL"),
				    getenv("NFSC_DIRECT_URL") };

	BOTH(s) {
		int st;

		if (!url[s]) {
			fprintf(stderr, "test_offsets: %s URL not set\n",
				side_name[s]);
			return -1;
		}
		cl[s] = nfsc_connect(url[s], 0, 0);
		if (!cl[s])
			return -1;
		nfsc_set_fail_fast(cl[s], 1);
		snprintf(dir_name[s], sizeof(dir_name[s]), "off-%c-%ld",
			 "pd"[s], (long)getpid());
		st = nfsc_mkdir(cl[s], nfsc_root(cl[s]), dir_name[s], 0755,
				&dir[s], NULL);
		if (st != NFS3_OK) {
			fprintf(stderr, "test_offsets: MKDIR %s (%s): %s\n",
				dir_name[s], side_name[s], nfsc_stat_name(st));
			return -1;
		}
	}
	return 0;
}

/* Release the directories' handles and the clients. */
static int suite_cleanup(void)
{
	BOTH(s) {
		nfsc_fh_free(&dir[s]);
		nfsc_close(&cl[s]);
	}
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_offsets");
	s = CU_add_suite("offsets", suite_init, suite_cleanup);
	if (!s ||
	    !CU_add_test(s, "write_at_5gib", test_write_at_5gib) ||
	    !CU_add_test(s, "read_at_and_past_eof",
			 test_read_at_and_past_eof) ||
	    !CU_add_test(s, "short_read_sets_eof", test_short_read_sets_eof) ||
	    !CU_add_test(s, "offsets_near_2_64", test_offsets_near_2_64))
		return -1;
	return 0;
}
