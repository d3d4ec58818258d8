/* SPDX-License-Identifier: MIT */
/*
 * test_holes_fsx: a randomized differential test of one file through the
 * proxy, like test_cache_fsx (same in-memory model, checks and history),
 * with the operations that make holes weighted up: SETATTR truncates and
 * extensions, and WRITEs far past EOF (gaps of up to 8 pages), on a file
 * of up to 16 MiB; a sixth of the WRITEs carry zeros. Optionally another
 * writer (the direct client) changes the file between operations, so
 * that the proxy drops what it knew and fetches again, turning zero
 * blocks of fetched data into holes.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define MAXREAD (1024u * 1024)
#define MAXWRITE (256u * 1024)
#define MAXSIZE (16ull * 1024 * 1024)
#define HISTORY 24
#define NAME "holes_fsx.dat"

enum hfsx_kind {
	H_READ, H_WRITE, H_GAP_WRITE, H_TRUNCATE, H_EXTEND, H_COMMIT,
	H_OTHER, H_NKINDS
};

static const char *const kind_name[H_NKINDS] = {
	"READ", "WRITE", "WRITE past EOF", "SETATTR truncate",
	"SETATTR extend", "COMMIT", "other writer",
};

struct hfsx_op {
	uint64_t n;		/* operation number */
	enum hfsx_kind kind;
	uint64_t off;
	uint64_t len;		/* bytes, or the new size for a SETATTR */
	int zeros;		/* WRITE: the data is zeros */
	int setattr;		/* H_OTHER: a SETATTR size, not a WRITE */
	uint64_t size_before;
};

static struct {
	uint64_t seed, nops, check_every;
	uint64_t page;		/* the proxy's page size */
	unsigned weight[H_NKINDS], wsum;
	uint8_t *model;		/* MAXSIZE + MAXREAD bytes; zeros past size */
	uint64_t size;
	uint8_t *buf, *buf2;	/* MAXREAD bytes each */
	struct ct_rng rng;
	struct nfsc *px, *dx;
	nfs_fh3 fh, fhd;
	struct hfsx_op hist[HISTORY];
	uint64_t done;
	uint64_t counts[H_NKINDS];
	int failed;
} T;

/* Print the last operations and how to reproduce the run. */
static void dump_history(void)
{
	uint64_t first = T.done >= HISTORY ? T.done - HISTORY + 1 : 0;

	fprintf(stderr, "hfsx: seed %llu failed at operation %llu; the last "
		"operations:\n", (unsigned long long)T.seed,
		(unsigned long long)T.done);
	for (uint64_t i = first; i <= T.done && i < T.nops; i++) {
		const struct hfsx_op *o = &T.hist[i % HISTORY];

		fprintf(stderr, "hfsx:   #%llu %s%s off %llu len %llu (size "
			"before %llu)\n", (unsigned long long)o->n,
			kind_name[o->kind], o->zeros ? " (zeros)" :
			o->setattr ? " (SETATTR)" : "",
			(unsigned long long)o->off, (unsigned long long)o->len,
			(unsigned long long)o->size_before);
	}
	fprintf(stderr, "hfsx: reproduce with NFSC_FSX_SEED=%llu "
		"NFSC_FSX_OPS=%llu CT_HFSX_WEIGHTS=%u,%u,%u,%u,%u,%u,%u\n",
		(unsigned long long)T.seed, (unsigned long long)T.nops,
		T.weight[0], T.weight[1], T.weight[2], T.weight[3],
		T.weight[4], T.weight[5], T.weight[6]);
}

/* Record a failed check once, with the history. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	CHECK_MSG(0, "hfsx op %llu: %s", (unsigned long long)T.done, msg);
	if (!T.failed)
		dump_history();
	T.failed = 1;
}

/* A length from 1 to min(max, cap), log-uniform. */
static uint64_t rand_len(uint64_t max, uint64_t cap)
{
	unsigned bits = (unsigned)ct_rng_below(&T.rng, 21);	/* 2^0..2^20 */
	uint64_t len = (1ull << bits) + ct_rng_below(&T.rng, 1ull << bits);

	if (len > cap)
		len = cap;
	if (len > max)
		len = max;
	return len ? len : 1;
}

/* An offset in [0, limit]: near a page boundary a third of the time. */
static uint64_t rand_off(uint64_t limit)
{
	uint64_t off;

	if (ct_rng_below(&T.rng, 3) == 0) {
		uint64_t edge = ct_rng_below(&T.rng, limit / T.page + 1) * T.page;

		off = edge + ct_rng_below(&T.rng, 64) - 32;
		if (off > edge + 32)	/* wrapped below 0 */
			off = 0;
	} else {
		off = ct_rng_below(&T.rng, limit + 1);
	}
	return off > limit ? limit : off;
}

/* Fill buf[0..n) with random bytes, or zeros. */
static void fill(uint8_t *buf, uint64_t n, int zeros)
{
	if (zeros) {
		memset(buf, 0, n);
		return;
	}
	for (uint64_t i = 0; i < n; i += 8) {
		uint64_t x = ct_rng_next(&T.rng);

		memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* READ [off, off+len) through the proxy and check it against the model. */
static void do_read(uint64_t off, uint64_t len)
{
	uint64_t want = off >= T.size ? 0 : T.size - off < len ? T.size - off
							       : len;
	uint32_t count = 0;
	int eof = 0, st;
	fattr3 a;
	size_t d;

	memset(T.buf, 0xA5, len);
	st = ct_read(T.px, &T.fh, off, (uint32_t)len, T.buf, &count, &eof, &a);
	if (st != NFS3_OK) {
		fail("READ off %llu len %llu: %s", (unsigned long long)off,
		     (unsigned long long)len, nfsc_stat_name(st));
		return;
	}
	if (count != want)
		fail("READ off %llu len %llu: count %u, want %llu (size %llu)",
		     (unsigned long long)off, (unsigned long long)len, count,
		     (unsigned long long)want, (unsigned long long)T.size);
	else if ((d = ct_first_diff(T.buf, T.model + off, count)) != count)
		fail("READ off %llu len %llu: byte at %llu is 0x%02x, want "
		     "0x%02x", (unsigned long long)off, (unsigned long long)len,
		     (unsigned long long)(off + d), T.buf[d], T.model[off + d]);
	if ((count < len && !eof) || (off + count < T.size && eof))
		fail("READ off %llu len %llu: count %u eof %d with size %llu",
		     (unsigned long long)off, (unsigned long long)len, count,
		     eof, (unsigned long long)T.size);
	if (a.size != T.size)
		fail("READ off %llu len %llu: attributes say size %llu, want "
		     "%llu", (unsigned long long)off, (unsigned long long)len,
		     (unsigned long long)a.size, (unsigned long long)T.size);
}

/* Apply a write of T.buf[0..len) at off to the model. */
static void model_write(uint64_t off, uint64_t len)
{
	memcpy(T.model + off, T.buf, len);
	if (off + len > T.size)
		T.size = off + len;
}

/* Apply a size change to the model (bytes past the size stay zero). */
static void model_size(uint64_t size)
{
	if (size < T.size)
		memset(T.model + size, 0, T.size - size);
	T.size = size;
}

/* WRITE through c (UNSTABLE through the proxy, FILE_SYNC directly). */
static void do_write(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
		     uint64_t len, int zeros)
{
	uint32_t count = 0;
	int st;

	fill(T.buf, len, zeros);
	st = nfsc_write(c, fh, off, T.buf, (uint32_t)len,
			c == T.px ? UNSTABLE : FILE_SYNC, &count, NULL, NULL);
	if (st != NFS3_OK || count != len) {
		fail("WRITE off %llu len %llu%s: %s count %u",
		     (unsigned long long)off, (unsigned long long)len,
		     c == T.px ? "" : " (direct)", nfsc_stat_name(st), count);
		return;
	}
	model_write(off, len);
}

/* SETATTR the size through c. */
static void do_set_size(struct nfsc *c, const nfs_fh3 *fh, uint64_t size)
{
	int st = ct_set_size(c, fh, size);

	if (st != NFS3_OK) {
		fail("SETATTR size %llu%s: %s", (unsigned long long)size,
		     c == T.px ? "" : " (direct)", nfsc_stat_name(st));
		return;
	}
	model_size(size);
}

/* COMMIT the whole file through the proxy. */
static void do_commit(void)
{
	int st = nfsc_commit(T.px, &T.fh, 0, 0, NULL);

	if (st != NFS3_OK)
		fail("COMMIT: %s", nfsc_stat_name(st));
}

/*
 * Another writer: COMMIT through the proxy, wait, change the file
 * directly, then GETATTR through the proxy (as a client opening the file
 * would): with acregmax 0 it revalidates, sees the change and must show
 * the new size.
 */
static void do_other(const struct hfsx_op *o)
{
	struct timespec ts = { 0, 20000000 };
	fattr3 a;
	int st;

	do_commit();
	nanosleep(&ts, NULL);
	if (o->setattr)
		do_set_size(T.dx, &T.fhd, o->len);
	else
		do_write(T.dx, &T.fhd, o->off, o->len, o->zeros);
	st = nfsc_getattr(T.px, &T.fh, &a);
	if (st != NFS3_OK || a.size != T.size)
		fail("GETATTR after another writer: %s size %llu, want %llu",
		     nfsc_stat_name(st), (unsigned long long)a.size,
		     (unsigned long long)T.size);
}

/* The kind for a draw r in [0, wsum). */
static enum hfsx_kind kind_of(uint64_t r)
{
	unsigned k = 0;

	while (r >= T.weight[k]) {
		r -= T.weight[k];
		k++;
	}
	return (enum hfsx_kind)k;
}

/* A new size past the current one: up to 8 pages more, or the maximum. */
static uint64_t grown_size(void)
{
	uint64_t s = ct_rng_below(&T.rng, 8) == 0
			     ? MAXSIZE
			     : T.size + 1 + ct_rng_below(&T.rng, 8 * T.page);

	return s > MAXSIZE ? MAXSIZE : s;
}

/* A WRITE anywhere in the file's range; one in zero_one_in carries zeros. */
static void pick_write(struct hfsx_op *o, unsigned zero_one_in)
{
	o->off = rand_off(MAXSIZE - 1);
	o->len = rand_len(MAXSIZE - o->off, MAXWRITE);
	o->zeros = ct_rng_below(&T.rng, zero_one_in) == 0;
}

/* Pick the next operation from the seeded generator. */
static void pick(struct hfsx_op *o)
{
	o->kind = kind_of(ct_rng_below(&T.rng, T.wsum));
	o->size_before = T.size;
	o->off = o->len = 0;
	o->zeros = o->setattr = 0;
	switch (o->kind) {
	case H_READ:
		o->off = ct_rng_below(&T.rng, 8) == 0
				 ? T.size + ct_rng_below(&T.rng, 2 * T.page)
				 : rand_off(T.size);
		o->len = rand_len(MAXREAD, MAXREAD);
		break;
	case H_OTHER:
		if (ct_rng_below(&T.rng, 4) == 0) {
			o->setattr = 1;
			o->len = ct_rng_below(&T.rng, 2) ? grown_size()
							  : rand_off(T.size);
			break;
		}
		pick_write(o, 3);
		break;
	case H_WRITE:
		pick_write(o, 6);
		break;
	case H_GAP_WRITE:
		o->off = T.size + ct_rng_below(&T.rng, 8 * T.page);
		if (o->off >= MAXSIZE)
			o->off = MAXSIZE - 1;
		o->len = rand_len(MAXSIZE - o->off, MAXWRITE);
		break;
	case H_TRUNCATE:
		o->len = rand_off(T.size);
		break;
	case H_EXTEND:
		o->len = grown_size();
		break;
	default:
		break;
	}
}

/* Run one operation. */
static void run_op(const struct hfsx_op *o)
{
	T.counts[o->kind]++;
	switch (o->kind) {
	case H_READ:
		do_read(o->off, o->len);
		break;
	case H_WRITE:
	case H_GAP_WRITE:
		do_write(T.px, &T.fh, o->off, o->len, o->zeros);
		break;
	case H_TRUNCATE:
	case H_EXTEND:
		do_set_size(T.px, &T.fh, o->len);
		break;
	case H_COMMIT:
		do_commit();
		break;
	default:
		do_other(o);
		break;
	}
}

/* Read the whole file through c; compare with the model. */
static void compare_via(struct nfsc *c, const nfs_fh3 *fh, const char *who)
{
	fattr3 a;
	int st = nfsc_getattr(c, fh, &a);

	if (st != NFS3_OK || a.size != T.size) {
		fail("%s: GETATTR %s size %llu, model %llu", who,
		     nfsc_stat_name(st), (unsigned long long)a.size,
		     (unsigned long long)T.size);
		return;
	}
	for (uint64_t off = 0; off < T.size; off += MAXREAD) {
		uint64_t n = T.size - off < MAXREAD ? T.size - off : MAXREAD;
		uint32_t count = 0;
		size_t d;

		st = nfsc_read(c, fh, off, (uint32_t)n, T.buf2, &count, NULL);
		if (st != NFS3_OK || count != n) {
			fail("%s: READ off %llu len %llu: %s count %u", who,
			     (unsigned long long)off, (unsigned long long)n,
			     nfsc_stat_name(st), count);
			return;
		}
		if ((d = ct_first_diff(T.buf2, T.model + off, n)) != n) {
			fail("%s: byte %llu is 0x%02x, model 0x%02x", who,
			     (unsigned long long)(off + d), T.buf2[d],
			     T.model[off + d]);
			return;
		}
	}
}

/* Compare the file on disk with the model. */
static void compare_disk(void)
{
	uint8_t *disk = malloc(MAXSIZE + 1);
	ssize_t n = disk ? ct_disk_read(NAME, 0, disk, MAXSIZE + 1) : -1;
	size_t d;

	if (n != (ssize_t)T.size)
		fail("disk: %zd bytes, model %llu", n,
		     (unsigned long long)T.size);
	else if ((d = ct_first_diff(disk, T.model, T.size)) != T.size)
		fail("disk: byte %zu is 0x%02x, model 0x%02x", d, disk[d],
		     T.model[d]);
	free(disk);
}

/* COMMIT, then compare Ganesha's copy and the disk with the model. */
static void checkpoint(const char *when)
{
	char who[64];

	do_commit();
	snprintf(who, sizeof(who), "direct, %s", when);
	compare_via(T.dx, &T.fhd, who);
	compare_disk();
}

/* Print the run's summary line. */
static void summary(uint64_t ms)
{
	printf("\nhfsx: seed %llu: %llu operations (%llu reads, %llu writes, "
	       "%llu writes past EOF, %llu truncates, %llu extensions, %llu "
	       "commits, %llu other writes) in %llu ms, page %llu, final "
	       "size %llu: %s\n", (unsigned long long)T.seed,
	       (unsigned long long)T.done,
	       (unsigned long long)T.counts[H_READ],
	       (unsigned long long)T.counts[H_WRITE],
	       (unsigned long long)T.counts[H_GAP_WRITE],
	       (unsigned long long)T.counts[H_TRUNCATE],
	       (unsigned long long)T.counts[H_EXTEND],
	       (unsigned long long)T.counts[H_COMMIT],
	       (unsigned long long)T.counts[H_OTHER], (unsigned long long)ms,
	       (unsigned long long)T.page, (unsigned long long)T.size,
	       T.failed ? "FAILED" : "ok");
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
	for (T.done = 0; T.done < T.nops && !T.failed; T.done++) {
		struct hfsx_op *o = &T.hist[T.done % HISTORY];

		o->n = T.done;
		pick(o);
		run_op(o);
		if ((T.done + 1) % T.check_every == 0 && !T.failed)
			checkpoint("at a checkpoint");
	}
	if (!T.failed) {
		T.done = T.nops;
		do_commit();
		compare_via(T.px, &T.fh, "proxy, at the end");
		checkpoint("at the end");
	}
	CHECK_MSG(!T.failed, "hfsx: seed %llu failed", (unsigned long long)T.seed);
	CHECK_EQ(T.done, T.nops);
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
	if (!T.weight[H_OTHER])
		CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	ct_metrics_free(&m1);
	ct_metrics_free(&m0);
}

/* Parse CT_HFSX_WEIGHTS into T.weight; 0 or -1. */
static int parse_weights(void)
{
	const char *s = getenv("CT_HFSX_WEIGHTS");
	unsigned w[H_NKINDS];

	if (!s || !*s)
		s = "30,14,12,17,17,5,0";
	if (sscanf(s, "%u,%u,%u,%u,%u,%u,%u", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6]) != H_NKINDS) {
		fprintf(stderr, "hfsx: CT_HFSX_WEIGHTS=%s: want 7 numbers\n", s);
		return -1;
	}
	T.wsum = 0;
	for (unsigned k = 0; k < H_NKINDS; k++) {
		T.weight[k] = w[k];
		T.wsum += w[k];
	}
	return T.wsum ? 0 : -1;
}

/* Read the parameters, create the file through the proxy, find it
 * directly. */
static int suite_init(void)
{
	const char *s = getenv("NFSC_FSX_SEED");

	T.seed = s && *s ? ct_env_u64("NFSC_FSX_SEED", 1)
			 : ct_env_u64("CT_FSX_SEED", 1);
	T.nops = ct_env_u64("NFSC_FSX_OPS", 8000);
	T.check_every = ct_env_u64("CT_HFSX_CHECK_EVERY", 500);
	T.page = ct_metric_now(CT_PAGE_SIZE);
	if (T.page == CT_ABSENT || !T.page || !T.check_every ||
	    parse_weights() != 0)
		return -1;
	T.model = calloc(MAXSIZE + MAXREAD, 1);
	T.buf = malloc(MAXREAD);
	T.buf2 = malloc(MAXREAD);
	if (!T.model || !T.buf || !T.buf2)
		return -1;
	ct_rng_seed(&T.rng, T.seed);
	printf("hfsx: seed %llu, %llu operations, page %llu, file up to %llu "
	       "bytes, weights %s\n", (unsigned long long)T.seed,
	       (unsigned long long)T.nops, (unsigned long long)T.page,
	       (unsigned long long)MAXSIZE,
	       getenv("CT_HFSX_WEIGHTS") ? getenv("CT_HFSX_WEIGHTS")
					 : "default");
	T.px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	T.dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	if (!T.px || !T.dx ||
	    nfsc_create(T.px, nfsc_root(T.px), NAME, 0644, &T.fh, NULL) !=
		    NFS3_OK ||
	    ct_lookup_root(T.dx, NAME, &T.fhd) != NFS3_OK)
		return -1;
	return 0;
}

/* Release everything. */
static int suite_cleanup(void)
{
	nfsc_fh_free(&T.fh);
	nfsc_fh_free(&T.fhd);
	nfsc_close(&T.px);
	nfsc_close(&T.dx);
	free(T.model);
	free(T.buf);
	free(T.buf2);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	nfsc_checks_report_at_exit("test_holes_fsx");
	s = CU_add_suite("holes_fsx", suite_init, suite_cleanup);
	if (!s || !CU_add_test(s, "random_hole_ops_match_the_model",
			       test_random_hole_ops_match_the_model))
		return -1;
	return 0;
}
