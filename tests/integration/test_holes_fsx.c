/* SPDX-License-Identifier: MIT */
/*
 * test_holes_fsx: a randomized differential test of one file through the
 * proxy, like test_cache_fsx (the same in-memory model, checks and
 * history, in fsx_model.c), with the operations that make holes weighted
 * up: SETATTR truncates and extensions, and WRITEs far past EOF (gaps of
 * up to 8 pages), on a file of up to 16 MiB; a sixth of the WRITEs carry
 * zeros. Optionally another writer (the direct client) changes the file
 * between operations, so that the proxy drops what it knew and fetches
 * again, turning zero blocks of fetched data into holes.
 *
 * Every READ reply is checked against the model (status, count, eof,
 * bytes, the size in its attributes). Every CT_HFSX_CHECK_EVERY (500)
 * operations and at the end, after a COMMIT through the proxy, the whole
 * file is compared with what Ganesha returns directly and with the file
 * on disk. With no other writer, every byte the proxy serves is one it
 * wrote or a range it knows to be zeros, so the run must send no READ
 * upstream at all (asserted; the proxy's cache budget of 1 GiB holds the
 * whole file).
 *
 * Weights (relative) come from CT_HFSX_WEIGHTS, seven numbers separated
 * by commas for READ, WRITE, WRITE past EOF, truncate, extend, COMMIT and
 * another writer (default "30,14,12,17,17,5,0"). The run is fixed by its
 * seed: NFSC_FSX_SEED if set, else CT_FSX_SEED, else 1; NFSC_FSX_OPS sets
 * the number of operations (default 8000). The other-writer operation
 * needs an export with acregmin = acregmax = 0 (cachetest_noac.conf via
 * cachetest_proxy.sh), so that the proxy revalidates on every use; it
 * first COMMITs through the proxy and waits 20 ms so that the change moves
 * the file's ctime past anything the proxy saw, and after the change it
 * GETATTRs through the proxy, as a client opening the file would, and
 * checks the size (close-to-open: what a client may rely on).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"
#include "fsx_model.h"

#define MAXREAD (1024u * 1024)
#define MAXWRITE (256u * 1024)
#define MAXSIZE (16ull * 1024 * 1024)

enum hfsx_kind {
	H_READ, H_WRITE, H_GAP_WRITE, H_TRUNCATE, H_EXTEND, H_COMMIT,
	H_OTHER, H_NKINDS
};

static const char *const kind_name[H_NKINDS] = {
	"READ", "WRITE", "WRITE past EOF", "SETATTR truncate",
	"SETATTR extend", "COMMIT", "other writer",
};

_Static_assert(H_NKINDS <= FSX_KINDS_MAX, "kinds fit fsx_model's counts");

static struct fsx_model M = {
	.tag = "hfsx",
	.name = "holes_fsx.dat",
	.kind_name = kind_name,
	.io = MAXREAD,
	.maxsize = MAXSIZE,
};

static struct {
	unsigned weight[H_NKINDS], wsum;
	char repro[128];	/* "CT_HFSX_WEIGHTS=...", M.repro_env */
} W;

/*
 * Another writer: COMMIT through the proxy, wait, change the file
 * directly, then GETATTR through the proxy (as a client opening the file
 * would): with acregmax 0 it revalidates, sees the change and must show
 * the new size.
 */
static void do_other(struct fsx_model *m, const struct fsx_op *o)
{
	struct timespec ts = { 0, 20000000 };
	fattr3 a;
	int st;

	fsx_commit(m);
	nanosleep(&ts, NULL);
	if (o->setattr)
		fsx_set_size(m, m->dx, &m->fhd, o->len);
	else
		fsx_write(m, m->dx, &m->fhd, o->off, o->len, o->zeros);
	st = nfsc_getattr(m->px, &m->fh, &a);
	if (st != NFS3_OK || a.size != m->size)
		fsx_fail(m, "GETATTR after another writer: %s size %llu, want "
			 "%llu", nfsc_stat_name(st), (unsigned long long)a.size,
			 (unsigned long long)m->size);
}

/* The kind for a draw r in [0, wsum). */
static enum hfsx_kind kind_of(uint64_t r)
{
	unsigned k = 0;

	while (r >= W.weight[k]) {
		r -= W.weight[k];
		k++;
	}
	return (enum hfsx_kind)k;
}

/* A new size past the current one: up to 8 pages more, or the maximum. */
static uint64_t grown_size(struct fsx_model *m)
{
	uint64_t s = ct_rng_below(&m->rng, 8) == 0
			     ? MAXSIZE
			     : m->size + 1 + ct_rng_below(&m->rng, 8 * m->page);

	return s > MAXSIZE ? MAXSIZE : s;
}

/* A WRITE anywhere in the file's range; one in zero_one_in carries zeros. */
static void pick_write(struct fsx_model *m, struct fsx_op *o,
		       unsigned zero_one_in)
{
	fsx_pick_write(m, o, MAXWRITE);
	o->zeros = ct_rng_below(&m->rng, zero_one_in) == 0;
}

/* Pick the next operation from the seeded generator. */
static void pick(struct fsx_model *m, struct fsx_op *o)
{
	o->kind = kind_of(ct_rng_below(&m->rng, W.wsum));
	switch (o->kind) {
	case H_READ:
		o->off = fsx_read_off(m);
		o->len = fsx_rand_len(m, MAXREAD, MAXREAD);
		break;
	case H_OTHER:
		if (ct_rng_below(&m->rng, 4) == 0) {
			o->setattr = 1;
			o->len = ct_rng_below(&m->rng, 2)
					 ? grown_size(m)
					 : fsx_rand_off(m, m->size);
			break;
		}
		pick_write(m, o, 3);
		break;
	case H_WRITE:
		pick_write(m, o, 6);
		break;
	case H_GAP_WRITE:
		o->off = fsx_gap_off(m, 8 * m->page);
		o->len = fsx_rand_len(m, MAXSIZE - o->off, MAXWRITE);
		break;
	case H_TRUNCATE:
		o->len = fsx_rand_off(m, m->size);
		break;
	case H_EXTEND:
		o->len = grown_size(m);
		break;
	default:
		break;
	}
}

/* Run one operation. */
static void run_op(struct fsx_model *m, const struct fsx_op *o)
{
	switch (o->kind) {
	case H_READ:
		fsx_read(m, o->off, o->len);
		break;
	case H_WRITE:
	case H_GAP_WRITE:
		fsx_write(m, m->px, &m->fh, o->off, o->len, o->zeros);
		break;
	case H_TRUNCATE:
	case H_EXTEND:
		fsx_set_size(m, m->px, &m->fh, o->len);
		break;
	case H_COMMIT:
		fsx_commit(m);
		break;
	default:
		do_other(m, o);
		break;
	}
}

/* Print the run's summary line. */
static void summary(uint64_t ms)
{
	printf("\nhfsx: seed %llu: %llu operations (%llu reads, %llu writes, "
	       "%llu writes past EOF, %llu truncates, %llu extensions, %llu "
	       "commits, %llu other writes) in %llu ms, page %llu, final "
	       "size %llu: %s\n", (unsigned long long)M.seed,
	       (unsigned long long)M.done,
	       (unsigned long long)M.counts[H_READ],
	       (unsigned long long)M.counts[H_WRITE],
	       (unsigned long long)M.counts[H_GAP_WRITE],
	       (unsigned long long)M.counts[H_TRUNCATE],
	       (unsigned long long)M.counts[H_EXTEND],
	       (unsigned long long)M.counts[H_COMMIT],
	       (unsigned long long)M.counts[H_OTHER], (unsigned long long)ms,
	       (unsigned long long)M.page, (unsigned long long)M.size,
	       M.failed ? "FAILED" : "ok");
}

/* The randomized run. */
static void test_random_hole_ops_match_the_model(void)
{
	struct ct_metrics m0, m1;
	uint64_t t0 = nfsc_now_ms();

	if (ct_metrics_read(&m0) != 0) {
		CHECK_MSG(0, "GET /metrics");
		return;
	}
	fsx_run(&M, pick, run_op, "direct, at a checkpoint");
	if (!M.failed) {
		fsx_commit(&M);
		fsx_compare_via(&M, M.px, &M.fh, "proxy, at the end");
		fsx_checkpoint(&M, "direct, at the end");
	}
	CHECK_MSG(!M.failed, "hfsx: seed %llu failed", (unsigned long long)M.seed);
	CHECK_EQ(M.done, M.nops);
	summary(nfsc_now_ms() - t0);
	if (ct_metrics_read(&m1) != 0) {
		CHECK_MSG(0, "GET /metrics");
		ct_metrics_free(&m0);
		return;
	}
	ct_print_deltas("hfsx", &m0, &m1);
	printf("hfsx: hole bytes served %llu, cache bytes %llu, upstream "
	       "bytes %llu\n",
	       (unsigned long long)ct_delta(&m0, &m1,
		       "nfscached_read_bytes_total{source=\"hole\"}"),
	       (unsigned long long)ct_delta(&m0, &m1, CT_BYTES_CACHE),
	       (unsigned long long)ct_delta(&m0, &m1, CT_BYTES_UPSTREAM));
	/* Holes were served at all. */
	CHECK(ct_delta(&m0, &m1, "nfscached_reads_total{result=\"hole\"}") > 0);
	/* Alone, the proxy knows every byte: nothing to READ upstream. */
	if (!W.weight[H_OTHER])
		CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m0);
}

/* Parse CT_HFSX_WEIGHTS into W.weight and W.repro; 0 or -1. */
static int parse_weights(void)
{
	const char *s = getenv("CT_HFSX_WEIGHTS");
	unsigned *w = W.weight;

	if (!s || !*s)
		s = "30,14,12,17,17,5,0";
	if (sscanf(s, "%u,%u,%u,%u,%u,%u,%u", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6]) != H_NKINDS) {
		fprintf(stderr, "hfsx: CT_HFSX_WEIGHTS=%s: want 7 numbers\n", s);
		return -1;
	}
	W.wsum = 0;
	for (unsigned k = 0; k < H_NKINDS; k++)
		W.wsum += w[k];
	snprintf(W.repro, sizeof(W.repro),
		 "CT_HFSX_WEIGHTS=%u,%u,%u,%u,%u,%u,%u", w[0], w[1], w[2],
		 w[3], w[4], w[5], w[6]);
	M.repro_env = W.repro;
	return W.wsum ? 0 : -1;
}

/* Read the parameters, create the file through the proxy, find it
 * directly. */
static int suite_init(void)
{
	if (fsx_params(&M, 8000, "CT_HFSX_CHECK_EVERY", 500) != 0 ||
	    parse_weights() != 0)
		return -1;
	printf("hfsx: seed %llu, %llu operations, page %llu, file up to %llu "
	       "bytes, weights %s\n", (unsigned long long)M.seed,
	       (unsigned long long)M.nops, (unsigned long long)M.page,
	       (unsigned long long)MAXSIZE,
	       getenv("CT_HFSX_WEIGHTS") ? getenv("CT_HFSX_WEIGHTS")
					 : "default");
	return fsx_open(&M);
}

int test_register(void)
{
	return fsx_register(&M, "test_holes_fsx", "holes_fsx", suite_init,
			    "random_hole_ops_match_the_model",
			    test_random_hole_ops_match_the_model);
}
