/* SPDX-License-Identifier: MIT */
/*
 * test_disk_full: the disk tier's cache_dir fills up (ENOSPC) while
 * clients read, and nobody but the operator notices. Run by
 * test_disk_full.sh, which puts cache_dir on a 4 MiB tmpfs with
 * disk_cache_size = 64 (MiB, more than the tmpfs holds) and cache_size =
 * 8 (MiB, less than the file), then starts nfscached. Here:
 *   - nfscached_disk_on is 1 before any read;
 *   - a 24 MiB file (a pattern written behind Ganesha's back) is read
 *     whole through the proxy with 256 KiB READs, every reply NFS3_OK
 *     with the file's bytes; its fills are stored until the tmpfs is full
 *     and a store fails: the tier turns off (nfscached_disk_on 0, waited
 *     for on the proxy's own gauge with a long bound: the stores are
 *     asynchronous);
 *   - the file is read whole again (most of it is no longer in RAM: the
 *     reads go upstream, the tier being off), every reply NFS3_OK with the
 *     right bytes;
 *   - nfscached_disk_errors_total is exactly 1 and the tier stays off.
 * The script then checks the log has exactly one line about it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define FILE_SIZE	(24u << 20)
#define IO_SIZE		(256u << 10)
#define SEED		17
#define DISK_ON		"nfscached_disk_on"
#define DISK_ERRORS	"nfscached_disk_errors_total"
#define WAIT_MS		300000	/* a loaded machine writes slowly */

static struct nfsc *px;		/* the export's root through the proxy */

/* Read want[0..FILE_SIZE) of fh through the proxy, IO_SIZE at a time:
 * every READ NFS3_OK, full count, eof only at the end, the file's bytes.
 * Returns the number of READs that were not all of that. */
static unsigned read_whole(const nfs_fh3 *fh, const uint8_t *want,
			   const char *pass)
{
	uint8_t *buf = malloc(IO_SIZE);
	unsigned bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (uint64_t off = 0; off < FILE_SIZE; off += IO_SIZE) {
		uint32_t count = 0;
		int eof = -1, st;

		st = nfsc_read(px, fh, off, IO_SIZE, buf, &count, &eof);
		if (st != NFS3_OK || count != IO_SIZE ||
		    eof != (off + IO_SIZE >= FILE_SIZE) ||
		    memcmp(buf, want + off, IO_SIZE) != 0) {
			if (bad++ < 5)
				CHECK_MSG(0, "%s: READ at %llu: %s, count %u, "
					  "eof %d, bytes %s", pass,
					  (unsigned long long)off,
					  nfsc_stat_name(st), count, eof,
					  count == IO_SIZE &&
					  memcmp(buf, want + off, IO_SIZE) == 0 ?
					  "right" : "wrong");
		}
	}
	free(buf);
	CHECK_MSG(bad == 0, "%s: %u of %u READs were not NFS3_OK with the "
		  "file's bytes", pass, bad, FILE_SIZE / IO_SIZE);
	return bad;
}

/* Wait (bounded) until the tier reports off; true if it did. */
static int wait_disk_off(void)
{
	uint64_t t0 = nfsc_now_ms();

	while (nfsc_now_ms() - t0 < WAIT_MS) {
		if (ct_metric_now(DISK_ON) == 0)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

static void test_disk_full_turns_tier_off(void)
{
	uint8_t *want = malloc(FILE_SIZE);
	nfs_fh3 fh = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	ct_pattern(want, FILE_SIZE, 0, SEED);
	CU_ASSERT_EQUAL_FATAL(ct_disk_write("full.bin", want, FILE_SIZE), 0);
	CHECK_EQ(ct_metric_now(DISK_ON), 1);
	CHECK_EQ(ct_metric_now(DISK_ERRORS), 0);
	CHECK_STAT(ct_lookup_root(px, "full.bin", &fh), NFS3_OK);
	read_whole(&fh, want, "first read");
	CHECK_MSG(wait_disk_off(), "nfscached_disk_on still 1 after %d s",
		  WAIT_MS / 1000);
	read_whole(&fh, want, "second read");
	CHECK_EQ(ct_metric_now(DISK_ON), 0);
	CHECK_EQ(ct_metric_now(DISK_ERRORS), 1);
	nfsc_fh_free(&fh);
	free(want);
}

/* Mount the export through the proxy. */
static int suite_init(void)
{
	px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
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
	CU_pSuite s = CU_add_suite("disk_full", suite_init, suite_cleanup);

	tcheck_report_at_exit("test_disk_full");
	if (!s || !CU_add_test(s, "disk_full_turns_tier_off",
			       test_disk_full_turns_tier_off))
		return -1;
	return 0;
}
