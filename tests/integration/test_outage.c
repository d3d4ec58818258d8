/* SPDX-License-Identifier: MIT */
/*
 * test_outage: outage mode (docs/semantics.md "Outage mode across a
 * restart"): with stale_on_error and a cache_dir, a proxy restarted while
 * its upstream is down mounts, looks up a path three levels deep and
 * reads a cached file byte for byte. test_outage.sh starts and restarts
 * the proxy (stale_on_error = 600, cache_dir, every attribute timeout 60 s,
 * the test clock) and Ganesha, and runs the suites in this order:
 *
 *   prime    a/b/c/file (FILE_SIZE bytes of a known pattern) is created in
 *            the export directory and read through the proxy as a client
 *            mounting it would: MNT, FSINFO, FSSTAT, PATHCONF, LOOKUP of a,
 *            b, c and file, GETATTR, ACCESS, READ of the whole file. Then
 *            the test waits (bounded, on the proxy's own metrics) until its
 *            pages are on disk and at least MIN_RECORDS outage records are
 *            held (nfscached_disk_outage_records).
 *   live     (Ganesha stopped, same proxy) once nfscached_upstream_up is 0
 *            and the attributes expired (test clock +61 s), a new client
 *            mounts and LOOKUPs the path: four LOOKUPs answered, counted
 *            as stale LOOKUPs, no JUKEBOX.
 *   restart  (the proxy restarted on the same cache_dir, Ganesha still
 *            stopped) a new client: MNT (a stale mount), FSINFO, LOOKUP of
 *            the three levels and the file, GETATTR, ACCESS (READ|LOOKUP
 *            asked, the bits the upstream granted in prime answered: the
 *            LOOKUP bit is not granted on a file), READ of the
 *            whole file: all NFS3_OK, the bytes equal to the pattern, each
 *            counted once in nfscached_stale_answers_total{procedure}, no
 *            JUKEBOX and no upstream READ.
 *   recover  (the file rewritten with another pattern in the export
 *            directory, Ganesha started) once the upstream is up, a new
 *            client's MNT is not stale, and a READ of the whole file goes
 *            upstream and returns the new bytes (the pages of the old
 *            version are never served again); no stale answer.
 *
 * Before the outage records (commit 7eaef7f) the restarted proxy had no
 * root handle: its MNT failed (MNT3ERR_SERVERFAULT), and the live LOOKUPs
 * got JUKEBOX once the names' attributes expired.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define FILE_SIZE	(300u * WB_KIB + 123u)
#define SEED_OLD	41u
#define SEED_NEW	42u
#define MIN_RECORDS	18	/* see wait_kept */
#define WAIT_MS		120000	/* a metric reaching its value */
#define ADVANCE_S	61.0	/* past every attribute timeout (60 s) */

#define M_JUKEBOX	"nfscached_nfs3_jukebox_replies_total"
#define M_UP		"nfscached_upstream_up{export=\"/export\"}"
#define M_UP_READ	"nfscached_upstream_read_bytes_total{export=\"/export\"}"
#define M_RECORDS	"nfscached_disk_outage_records"
#define M_DISK_BYTES	"nfscached_disk_bytes"
#define M_MOUNTS	"nfscached_stale_mounts_total"
#define M_STALE(p)	"nfscached_stale_answers_total{procedure=\"" p "\"}"

static const char *const path[] = { "a", "b", "c", "file" };
#define NPATH	(sizeof(path) / sizeof(path[0]))

/* The file's expected bytes for seed. */
static uint8_t *pattern(uint32_t seed)
{
	uint8_t *b = malloc(FILE_SIZE);

	if (b)
		wb_pattern(b, FILE_SIZE, 0, seed);
	return b;
}

/* Write a/b/c/file in the export directory with seed's pattern. */
static int make_file(uint32_t seed)
{
	const char *dir = wb_env("NFSC_EXPORT_DIR");
	char p[4096];
	uint8_t *b = pattern(seed);
	int fd, rc = -1;

	if (!dir || !b)
		goto out;
	snprintf(p, sizeof(p), "%s/a", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b/c", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b/c/file", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0 && write(fd, b, FILE_SIZE) == (ssize_t)FILE_SIZE &&
	    fsync(fd) == 0)
		rc = 0;
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		fprintf(stderr, "test_outage: write %s: %s\n", p,
			strerror(errno));
out:
	free(b);
	return rc;
}

/* LOOKUP the path from c's root; the file's handle into *fh. */
static void lookup_path(struct wb_conn *c, struct wb_fh *fh)
{
	struct wb_fh dir = c->root;
	fattr3 attr;

	for (size_t i = 0; i < NPATH; i++) {
		int st = wb_lookup(c, &dir, path[i], fh, &attr);

		WB_CHECK(st == NFS3_OK, "LOOKUP %s: %s, want NFS3_OK", path[i],
			 wb_stat_name(st));
		if (st != NFS3_OK) {
			fh->len = 0;
			return;
		}
		WB_EQ(attr.type, i + 1 < NPATH ? NF3DIR : NF3REG);
		dir = *fh;
	}
}

/* Call proc (FSSTAT or PATHCONF: a handle only) on fh; its status. */
static int fh_call(struct wb_conn *c, uint32_t proc, const struct wb_fh *fh)
{
	nfs_fh3 a = { { fh->len, (char *)(uintptr_t)fh->data } };
	union { FSSTAT3res fs; PATHCONF3res pc; } res;
	xdrproc_t resp = proc == NFSPROC3_FSSTAT ? (xdrproc_t)xdr_FSSTAT3res
						 : (xdrproc_t)xdr_PATHCONF3res;
	int st;

	memset(&res, 0, sizeof(res));
	st = wb_call(c, proc, (xdrproc_t)xdr_nfs_fh3, &a, resp, &res,
		     WB_TIMEOUT_MS);
	xdr_free(resp, (char *)&res);
	return st;
}

/* ACCESS of READ|LOOKUP on fh; the bits granted into *granted. */
static int access_call(struct wb_conn *c, const struct wb_fh *fh,
		       uint32_t *granted)
{
	ACCESS3args a;
	ACCESS3res res;
	int st;

	memset(&a, 0, sizeof(a));
	a.object.data.data_len = fh->len;
	a.object.data.data_val = (char *)(uintptr_t)fh->data;
	a.access = ACCESS3_READ | ACCESS3_LOOKUP;
	memset(&res, 0, sizeof(res));
	st = wb_call(c, NFSPROC3_ACCESS, (xdrproc_t)xdr_ACCESS3args, &a,
		     (xdrproc_t)xdr_ACCESS3res, &res, WB_TIMEOUT_MS);
	*granted = st == NFS3_OK ? res.ACCESS3res_u.resok.access : 0;
	xdr_free((xdrproc_t)xdr_ACCESS3res, &res);
	return st;
}

/* Read the whole file fh through c and compare it with seed's pattern. */
static void read_compare(struct wb_conn *c, const struct wb_fh *fh,
			 uint32_t seed)
{
	uint8_t *want = pattern(seed), *got = malloc(FILE_SIZE + 1);

	WB_CHECK(want && got, "memory");
	if (want && got) {
		WB_EQ(wb_read_all(c, fh, got, FILE_SIZE + 1), FILE_SIZE);
		WB_EQ(wb_first_diff(got, want, FILE_SIZE), FILE_SIZE);
	}
	free(want);
	free(got);
}

/* The ACCESS bits the upstream granted in suite prime, kept in a file of
 * the test's temp dir across the suites: save (want < 0) or compare. */
static void access_granted(int64_t want, uint32_t granted)
{
	const char *tmp = wb_env("NFSC_TMP");
	char p[4096];
	unsigned v = 0;
	FILE *fp;

	snprintf(p, sizeof(p), "%s/outage-access", tmp ? tmp : ".");
	fp = fopen(p, want < 0 ? "w" : "r");
	WB_CHECK(fp != NULL, "open %s", p);
	if (!fp)
		return;
	if (want < 0)
		fprintf(fp, "%u\n", granted);
	else
		WB_CHECK(fscanf(fp, "%u", &v) == 1 && v == granted,
			 "ACCESS granted %#x, the upstream granted %#x", granted,
			 v);
	fclose(fp);
}

/* What a client mounting and opening the file does; its handle in *fh.
 * The ACCESS asked for READ and LOOKUP on a file (a client's open asks
 * for more than a file grants): saved (prime) or compared. */
static void mount_and_read(struct wb_conn *c, struct wb_fh *fh, uint32_t seed,
			   bool prime)
{
	fattr3 attr;
	uint32_t granted = 0;

	WB_STAT(wb_fsinfo(c, &c->root, NULL), NFS3_OK);
	lookup_path(c, fh);
	if (fh->len == 0)
		return;
	WB_STAT(wb_getattr(c, fh, &attr), NFS3_OK);
	WB_EQ(attr.size, FILE_SIZE);
	WB_STAT(access_call(c, fh, &granted), NFS3_OK);
	WB_EQ(granted & ACCESS3_READ, ACCESS3_READ);
	access_granted(prime ? -1 : 0, granted);
	read_compare(c, fh, seed);
}

/*
 * Wait until the file's pages and the outage records are on disk. The
 * records a mount and the walk keep: the root handle (1), FSINFO, FSSTAT
 * and PATHCONF (3), four names (4), the attributes of the root, a, b, c
 * and file (5), the file's ACCESS (1) and the LOOKUP permission of the
 * four directories (4): 18 (MIN_RECORDS).
 */
static void wait_kept(void)
{
	double bytes = wb_wait_metric(M_DISK_BYTES, FILE_SIZE, WAIT_MS);
	double recs = wb_wait_metric(M_RECORDS, MIN_RECORDS, WAIT_MS);

	WB_CHECK(bytes >= FILE_SIZE, "%.0f bytes of pages on disk, want >= %u",
		 bytes, FILE_SIZE);
	WB_CHECK(recs >= MIN_RECORDS, "%.0f outage records held, want >= %d",
		 recs, MIN_RECORDS);
	WB_EQ(wb_metric("nfscached_disk_outage_records_dropped_total"), 0);
	WB_EQ(wb_metric("nfscached_disk_outage_checksum_failures_total"), 0);
}

/* Suite prime: the file read through the proxy and kept on disk. */
static void test_prime(void)
{
	struct wb_conn c;
	struct wb_fh fh;

	WB_CHECK(make_file(SEED_OLD) == 0, "create a/b/c/file");
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(false, "mount through the proxy");
		return;
	}
	WB_STAT(fh_call(&c, NFSPROC3_FSSTAT, &c.root), NFS3_OK);
	WB_STAT(fh_call(&c, NFSPROC3_PATHCONF, &c.root), NFS3_OK);
	mount_and_read(&c, &fh, SEED_OLD, true);
	wb_close(&c);
	wait_kept();
}

/* Wait until the proxy's upstream gauge is want; false after WAIT_MS. */
static bool wait_up(double want)
{
	uint64_t end = wb_now_ms() + WAIT_MS;
	double v;

	while ((v = wb_metric(M_UP)) != want && wb_now_ms() < end)
		wb_sleep_ms(20);
	WB_CHECK(v == want, "%s is %.0f, want %.0f", M_UP, v, want);
	return v == want;
}

/* Suite live: LOOKUPs of the cached path answered during the outage. */
static void test_live(void)
{
	double jb = wb_metric(M_JUKEBOX), lk = wb_metric(M_STALE("lookup"));
	struct wb_conn c;
	struct wb_fh fh;

	if (!wait_up(0))
		return;
	WB_EQ(tclock_advance(ADVANCE_S), 0);
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(false, "mount through the proxy during the outage");
		return;
	}
	lookup_path(&c, &fh);
	wb_close(&c);
	WB_EQ(wb_metric(M_STALE("lookup")) - lk, NPATH);
	WB_EQ(wb_metric(M_JUKEBOX) - jb, 0);
}

/* Suite restart: the restarted proxy serves the file while Ganesha is
 * stopped. Every counter starts at 0 in the new process. */
static void test_restart(void)
{
	static const char *const once[] = { "fsinfo", "getattr", "access",
					    "read" };
	char series[128];
	struct wb_conn c;
	struct wb_fh fh;

	WB_EQ(wb_metric(M_UP), 0);
	WB_CHECK(wb_metric(M_RECORDS) >= MIN_RECORDS, "%.0f outage records "
		 "found at the restart", wb_metric(M_RECORDS));
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(false, "MNT through the restarted proxy, upstream down");
		return;
	}
	WB_EQ(wb_metric(M_MOUNTS), 1);
	mount_and_read(&c, &fh, SEED_OLD, false);
	wb_close(&c);
	WB_EQ(wb_metric(M_STALE("lookup")), NPATH);
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
		snprintf(series, sizeof(series),
			 "nfscached_stale_answers_total{procedure=\"%s\"}",
			 once[i]);
		WB_CHECK(wb_metric(series) == 1, "%s is %.0f, want 1", series,
			 wb_metric(series));
	}
	WB_EQ(wb_metric(M_JUKEBOX), 0);
	WB_EQ(wb_metric(M_UP_READ), 0);
}

/* Suite recover: the upstream back, the new version read from it. */
static void test_recover(void)
{
	struct wb_conn c;
	struct wb_fh fh;
	double up_read, stale_read = wb_metric(M_STALE("read"));
	double mounts = wb_metric(M_MOUNTS);

	if (!wait_up(1))
		return;
	up_read = wb_metric(M_UP_READ);
	WB_EQ(tclock_advance(ADVANCE_S), 0);
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(false, "mount through the proxy, upstream back");
		return;
	}
	WB_EQ(wb_metric(M_MOUNTS) - mounts, 0);
	lookup_path(&c, &fh);
	if (fh.len)
		read_compare(&c, &fh, SEED_NEW);
	wb_close(&c);
	WB_CHECK(wb_metric(M_UP_READ) - up_read >= FILE_SIZE, "%.0f bytes read "
		 "upstream, want >= %u", wb_metric(M_UP_READ) - up_read,
		 FILE_SIZE);
	WB_EQ(wb_metric(M_STALE("read")) - stale_read, 0);
	WB_EQ(wb_metric(M_JUKEBOX), 0);
}

/* Suite rewrite (no proxy call): the file changed behind the upstream. */
static void test_rewrite(void)
{
	WB_CHECK(make_file(SEED_NEW) == 0, "rewrite a/b/c/file");
}

int test_register(void)
{
	static const struct { const char *name; CU_TestFunc fn; } suites[] = {
		{ "prime", test_prime }, { "live", test_live },
		{ "restart", test_restart }, { "rewrite", test_rewrite },
		{ "recover", test_recover },
	};
	CU_pSuite s;

	tcheck_report_at_exit("test_outage");
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		s = CU_add_suite(suites[i].name, NULL, NULL);
		if (!s || !CU_add_test(s, suites[i].name, suites[i].fn))
			return -1;
	}
	return 0;
}
