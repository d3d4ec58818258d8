/* SPDX-License-Identifier: MIT */
/*
 * test_wb_nospc: a write-back failure reaches the client. Driven by
 * test_wb_nospc.sh, which exports a 4 MiB tmpfs from Ganesha and runs an
 * nfscached with writeback_delay = 600 in front of it.
 *
 * The client writes 16 MiB UNSTABLE through the proxy in 64 KiB WRITEs:
 * all are absorbed (NFS3_OK, UNSTABLE, nothing sent upstream). Its COMMIT
 * makes the proxy write them back; the upstream runs out of space, and the
 * COMMIT answers exactly NFS3ERR_NOSPC; nfscached_writeback_errors_total
 * moved and nfscached_writeback_errors_reported_total moved by exactly
 * one. Each failure is reported once: runs in flight with the first may
 * fail too and answer the next COMMITs NOSPC (each counted once), then a
 * COMMIT answers NFS3_OK and nothing is left in write-back state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define TOTAL (16u * WB_MIB)
#define BS (64u * WB_KIB)

/* 16 MiB absorbed, then COMMIT: NFS3ERR_NOSPC. */
static void test_nospc(void)
{
	const size_t n = TOTAL / BS;
	uint8_t *data = malloc(TOTAL);
	struct wb_wreq *req = calloc(n, sizeof(*req));
	struct wb_wres *res = calloc(n, sizeof(*res));
	struct wb_snap s0, s1, s2, s3;
	uint8_t verf[NFS3_WRITEVERFSIZE];
	size_t bad = 0;
	unsigned more = 0;
	struct wb_conn c;
	struct wb_fh fh;
	char name[64];
	int st;

	if (!data || !req || !res || wb_open(&c, "proxy", 0, 0) < 0) {
		WB_CHECK(false, "set up");
		goto out;
	}
	wb_pattern(data, TOTAL, 0, 28);
	for (size_t i = 0; i < n; i++) {
		req[i].off = (uint64_t)i * BS;
		req[i].len = BS;
		req[i].data = data + req[i].off;
		req[i].stable = UNSTABLE;
	}
	wb_unique_name(name, sizeof(name), "wb-nospc");
	WB_STAT(wb_create(&c, &c.root, name, UNCHECKED, 0644, 0, &fh, NULL),
		NFS3_OK);
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_EQ(wb_write_many(&c, &fh, req, n, 16, res), 0);
	for (size_t i = 0; i < n; i++)
		bad += res[i].st != NFS3_OK || res[i].count != BS ||
		       res[i].committed != UNSTABLE;
	WB_EQ(bad, 0);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_ABSORBED), n);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), 0);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_DIRTY), TOTAL);

	st = wb_commit(&c, &fh, verf, 60000);
	WB_STAT(st, NFS3ERR_NOSPC);
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("nospc after the COMMIT", &s1, &s2);
	WB_CHECK(wb_snap_delta(&s1, &s2, WB_M_ERRORS) >= 1,
		 "nfscached_writeback_errors_total moved (by %.0f)",
		 wb_snap_delta(&s1, &s2, WB_M_ERRORS));
	WB_EQ(wb_snap_delta(&s1, &s2, WB_M_REPORTED), 1);

	/* Runs still in flight when the first failure came may fail too,
	 * each reported once; then the file settles and COMMIT succeeds. */
	do {
		st = wb_commit(&c, &fh, verf, 60000);
		more += st == NFS3ERR_NOSPC;
	} while (st == NFS3ERR_NOSPC && more < 32);
	WB_STAT(st, NFS3_OK);
	WB_CHECK(wb_snap_take(&s3) == 0, "metrics");
	wb_snap_print("nospc after the last COMMIT", &s2, &s3);
	fprintf(stderr, "wbtest: nospc: %u more COMMITs answered NOSPC before "
		"one answered NFS3_OK\n", more);
	WB_EQ(wb_snap_delta(&s2, &s3, WB_M_REPORTED), more);
	WB_CHECK(wb_snap_delta(&s1, &s3, WB_M_ERRORS) >=
		 wb_snap_delta(&s1, &s3, WB_M_REPORTED), "no more errors "
		 "reported (%.0f) than kept (%.0f)",
		 wb_snap_delta(&s1, &s3, WB_M_REPORTED),
		 wb_snap_delta(&s1, &s3, WB_M_ERRORS));
	WB_EQ(wb_snap_get(&s3, WB_M_DIRTY), 0);
	WB_EQ(wb_snap_get(&s3, WB_M_WRITING), 0);
	WB_EQ(wb_snap_get(&s3, WB_M_UNSTABLE), 0);
	WB_EQ(wb_snap_get(&s3, WB_M_DIRTY_FILES), 0);
	fprintf(stderr, "wbtest: nospc: %lld bytes of the file reached the "
		"4 MiB tmpfs\n", (long long)wb_disk_size(name));
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
	wb_snap_free(&s3);
	wb_close(&c);
out:
	free(data);
	free(req);
	free(res);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nospc", NULL, NULL);

	if (!s || !CU_add_test(s, "commit_reports_nospc", test_nospc))
		return -1;
	return 0;
}
