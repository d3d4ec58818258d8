/* SPDX-License-Identifier: MIT */
/*
 * test_cache_fsx: a randomized differential test of one file through the
 * proxy, in the spirit of fsx (the file system exerciser): thousands of
 * random READs, WRITEs, extending WRITEs, truncates and extensions
 * (SETATTR size) and COMMITs, with offsets and lengths from 1 byte to
 * 256 KiB, some past EOF and many across page boundaries. Every reply is
 * checked against an in-memory model of the file (status, count, eof,
 * bytes, the size in the reply's attributes). Every CT_FSX_CHECK_EVERY
 * (1000) operations and at the end, after a COMMIT through the proxy (the
 * upstream owes a client its UNSTABLE writes only once committed), the
 * whole file is compared with what Ganesha returns directly
 * (NFSC_DIRECT_URL) and with the export directory on disk.
 *
 * The run is fixed by its seed: NFSC_FSX_SEED if set (to reproduce a run
 * from the command line), else CT_FSX_SEED (the CI seed ctest passes),
 * else 1; NFSC_FSX_OPS sets the number of operations (default 15000). The
 * seed and operation count are printed first; on the first mismatch the
 * last operations are printed and the run stops. The page size is the
 * proxy's (harness config), read from /metrics.
 *
 * The model, the operations and the checks are fsx_model.c's (shared with
 * test_holes_fsx); this file has the mix of operations and the summary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"
#include "fsx_model.h"

#define MAXIO (256u * 1024)

enum fsx_kind { F_READ, F_WRITE, F_EXTEND_WRITE, F_TRUNCATE, F_COMMIT };

static const char *const kind_name[] = {
	"READ", "WRITE", "WRITE past EOF", "SETATTR size", "COMMIT",
};

static struct fsx_model M = {
	.tag = "fsx",
	.name = "fsx.dat",
	.kind_name = kind_name,
	.io = MAXIO,
};

/* Pick the next operation from the seeded generator. */
static void pick(struct fsx_model *m, struct fsx_op *o)
{
	uint64_t r = ct_rng_below(&m->rng, 100);

	if (r < 40) {
		o->kind = F_READ;
		/* One read in eight starts at or past EOF. */
		o->off = fsx_read_off(m);
		o->len = fsx_rand_len(m, MAXIO, MAXIO);
	} else if (r < 75) {
		o->kind = F_WRITE;
		fsx_pick_write(m, o, MAXIO);
	} else if (r < 85) {
		o->kind = F_EXTEND_WRITE;
		o->off = fsx_gap_off(m, 2 * m->page);
		o->len = fsx_rand_len(m, m->maxsize - o->off, MAXIO);
	} else if (r < 97) {
		o->kind = F_TRUNCATE;
		o->len = ct_rng_below(&m->rng, 2) ? fsx_rand_off(m, m->maxsize)
						   : fsx_rand_off(m, m->size);
	} else {
		o->kind = F_COMMIT;
	}
}

/* Run one operation. */
static void run_op(struct fsx_model *m, const struct fsx_op *o)
{
	switch (o->kind) {
	case F_READ:
		fsx_read(m, o->off, o->len);
		break;
	case F_WRITE:
	case F_EXTEND_WRITE:
		fsx_write(m, m->px, &m->fh, o->off, o->len, 0);
		break;
	case F_TRUNCATE:
		fsx_set_size(m, m->px, &m->fh, o->len);
		break;
	case F_COMMIT:
		fsx_commit(m);
		break;
	}
}

/* The randomized run. */
static void test_random_ops_match_the_model(void)
{
	struct ct_metrics m0, m1;
	uint64_t t0 = nfsc_now_ms();
	int have_m = ct_metrics_read(&m0) == 0;

	/* With write-back, Ganesha holds what the proxy acknowledged once a
	 * COMMIT returns: each checkpoint COMMITs first. */
	fsx_run(&M, pick, run_op, "direct");
	if (!M.failed) {
		fsx_commit(&M);
		fsx_compare_via(&M, M.px, &M.fh, "proxy, at the end");
		fsx_compare_via(&M, M.dx, &M.fhd, "direct, at the end");
		fsx_compare_disk(&M);
	}
	CHECK_MSG(!M.failed, "fsx: seed %llu failed", (unsigned long long)M.seed);
	CHECK_EQ(M.done, M.nops);
	printf("\nfsx: seed %llu: %llu operations (%llu reads, %llu writes, "
	       "%llu writes past EOF, %llu size changes, %llu commits) in "
	       "%llu ms, page %llu, final size %llu: %s\n",
	       (unsigned long long)M.seed, (unsigned long long)M.done,
	       (unsigned long long)M.counts[F_READ],
	       (unsigned long long)M.counts[F_WRITE],
	       (unsigned long long)M.counts[F_EXTEND_WRITE],
	       (unsigned long long)M.counts[F_TRUNCATE],
	       (unsigned long long)M.counts[F_COMMIT],
	       (unsigned long long)(nfsc_now_ms() - t0),
	       (unsigned long long)M.page, (unsigned long long)M.size,
	       M.failed ? "FAILED" : "ok");
	if (have_m && ct_metrics_read(&m1) == 0) {
		ct_print_deltas("fsx", &m0, &m1);
		ct_metrics_free(&m1);
	}
	if (have_m)
		ct_metrics_free(&m0);
}

/* Read the parameters, create the file through the proxy, find it
 * directly. */
static int suite_init(void)
{
	if (fsx_params(&M, 15000, "CT_FSX_CHECK_EVERY", 1000) != 0)
		return -1;
	/* Room for a few pages of the largest size, and at least 4 MiB. */
	M.maxsize = 6 * M.page > (4u << 20) ? 6 * M.page : (4u << 20);
	printf("fsx: seed %llu, %llu operations, page %llu, file up to %llu "
	       "bytes (reproduce: NFSC_FSX_SEED=%llu NFSC_FSX_OPS=%llu)\n",
	       (unsigned long long)M.seed, (unsigned long long)M.nops,
	       (unsigned long long)M.page, (unsigned long long)M.maxsize,
	       (unsigned long long)M.seed, (unsigned long long)M.nops);
	return fsx_open(&M);
}

int test_register(void)
{
	return fsx_register(&M, "test_cache_fsx", "cache_fsx", suite_init,
			    "random_ops_match_the_model",
			    test_random_ops_match_the_model);
}
