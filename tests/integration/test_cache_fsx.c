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
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define MAXIO (256u * 1024)
#define HISTORY 24

enum fsx_kind { F_READ, F_WRITE, F_EXTEND_WRITE, F_TRUNCATE, F_COMMIT };

static const char *const kind_name[] = {
	"READ", "WRITE", "WRITE past EOF", "SETATTR size", "COMMIT",
};

struct fsx_op {
	uint64_t n;		/* operation number */
	enum fsx_kind kind;
	uint64_t off;
	uint64_t len;		/* bytes, or the new size for F_TRUNCATE */
	uint64_t size_before;
};

static struct {
	uint64_t seed, nops, check_every;
	uint64_t maxsize;	/* the file never grows past this */
	uint64_t page;		/* the proxy's page size */
	uint8_t *model;		/* maxsize + MAXIO bytes; zeros past size */
	uint64_t size;
	uint8_t *buf, *buf2;	/* MAXIO bytes each */
	struct ct_rng rng;
	struct nfsc *px, *dx;
	nfs_fh3 fh, fhd;
	struct fsx_op hist[HISTORY];
	uint64_t done;		/* operations done */
	uint64_t counts[5];	/* per kind */
	int failed;
} T;

/* Print the last operations and how to reproduce the run. */
static void dump_history(void)
{
	uint64_t first = T.done >= HISTORY ? T.done - HISTORY + 1 : 0;

	fprintf(stderr, "fsx: seed %llu failed at operation %llu; the last "
		"operations:\n", (unsigned long long)T.seed,
		(unsigned long long)T.done);
	for (uint64_t i = first; i <= T.done; i++) {
		const struct fsx_op *o = &T.hist[i % HISTORY];

		fprintf(stderr, "fsx:   #%llu %s off %llu len %llu (size "
			"before %llu)\n", (unsigned long long)o->n,
			kind_name[o->kind], (unsigned long long)o->off,
			(unsigned long long)o->len,
			(unsigned long long)o->size_before);
	}
	fprintf(stderr, "fsx: reproduce with NFSC_FSX_SEED=%llu "
		"NFSC_FSX_OPS=%llu\n", (unsigned long long)T.seed,
		(unsigned long long)T.nops);
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
	CHECK_MSG(0, "fsx op %llu: %s", (unsigned long long)T.done, msg);
	if (!T.failed)
		dump_history();
	T.failed = 1;
}

/* A length from 1 to max, log-uniform so small and large both occur. */
static uint64_t rand_len(uint64_t max)
{
	unsigned bits = (unsigned)ct_rng_below(&T.rng, 19);	/* 2^0..2^18 */
	uint64_t len = (1ull << bits) + ct_rng_below(&T.rng, 1ull << bits);

	if (len > MAXIO)
		len = MAXIO;
	if (len > max)
		len = max;
	return len ? len : 1;
}

/* An offset in [0, limit]: near a page boundary a third of the time. */
static uint64_t rand_off(uint64_t limit)
{
	uint64_t off;

	if (ct_rng_below(&T.rng, 3) == 0) {
		uint64_t pages = limit / T.page + 1;
		uint64_t edge = ct_rng_below(&T.rng, pages) * T.page;

		off = edge + ct_rng_below(&T.rng, 64) - 32;
		if (off > edge + 32)	/* wrapped below 0 */
			off = 0;
	} else {
		off = ct_rng_below(&T.rng, limit + 1);
	}
	return off > limit ? limit : off;
}

/* Fill buf[0..n) with random bytes. */
static void rand_fill(uint8_t *buf, uint64_t n)
{
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
	/* eof: set on a short read; clear when bytes remain past it. */
	if ((count < len && !eof) || (off + count < T.size && eof))
		fail("READ off %llu len %llu: count %u eof %d with size %llu",
		     (unsigned long long)off, (unsigned long long)len, count,
		     eof, (unsigned long long)T.size);
	if (a.size != T.size)
		fail("READ off %llu len %llu: attributes say size %llu, want "
		     "%llu", (unsigned long long)off, (unsigned long long)len,
		     (unsigned long long)a.size, (unsigned long long)T.size);
}

/* WRITE len random bytes at off through the proxy; update the model. */
static void do_write(uint64_t off, uint64_t len)
{
	uint32_t count = 0;
	int st;

	rand_fill(T.buf, len);
	st = nfsc_write(T.px, &T.fh, off, T.buf, (uint32_t)len, UNSTABLE,
			&count, NULL, NULL);
	if (st != NFS3_OK || count != len) {
		fail("WRITE off %llu len %llu: %s count %u",
		     (unsigned long long)off, (unsigned long long)len,
		     nfsc_stat_name(st), count);
		return;
	}
	memcpy(T.model + off, T.buf, len);
	if (off + len > T.size)
		T.size = off + len;
}

/* SETATTR the size through the proxy; update the model. */
static void do_truncate(uint64_t size)
{
	int st = ct_set_size(T.px, &T.fh, size);

	if (st != NFS3_OK) {
		fail("SETATTR size %llu: %s", (unsigned long long)size,
		     nfsc_stat_name(st));
		return;
	}
	if (size < T.size)
		memset(T.model + size, 0, T.size - size);
	T.size = size;
}

/* COMMIT the whole file through the proxy. */
static void do_commit(void)
{
	int st = nfsc_commit(T.px, &T.fh, 0, 0, NULL);

	if (st != NFS3_OK)
		fail("COMMIT: %s", nfsc_stat_name(st));
}

/* Pick the next operation from the seeded generator. */
static void pick(struct fsx_op *o)
{
	uint64_t r = ct_rng_below(&T.rng, 100);

	o->size_before = T.size;
	o->off = o->len = 0;
	if (r < 40) {
		o->kind = F_READ;
		/* One read in eight starts at or past EOF. */
		o->off = ct_rng_below(&T.rng, 8) == 0
				 ? T.size + ct_rng_below(&T.rng, 2 * T.page)
				 : rand_off(T.size);
		o->len = rand_len(MAXIO);
	} else if (r < 75) {
		o->kind = F_WRITE;
		o->off = rand_off(T.maxsize - 1);
		o->len = rand_len(T.maxsize - o->off);
	} else if (r < 85) {
		o->kind = F_EXTEND_WRITE;
		o->off = T.size + ct_rng_below(&T.rng, 2 * T.page);
		if (o->off >= T.maxsize)
			o->off = T.maxsize - 1;
		o->len = rand_len(T.maxsize - o->off);
	} else if (r < 97) {
		o->kind = F_TRUNCATE;
		o->len = ct_rng_below(&T.rng, 2) ? rand_off(T.maxsize)
						  : rand_off(T.size);
	} else {
		o->kind = F_COMMIT;
	}
}

/* Run one operation. */
static void run_op(const struct fsx_op *o)
{
	T.counts[o->kind]++;
	switch (o->kind) {
	case F_READ:
		do_read(o->off, o->len);
		break;
	case F_WRITE:
	case F_EXTEND_WRITE:
		do_write(o->off, o->len);
		break;
	case F_TRUNCATE:
		do_truncate(o->len);
		break;
	case F_COMMIT:
		do_commit();
		break;
	}
}

/* Read the whole file through c in MAXIO pieces; compare with the model. */
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
	for (uint64_t off = 0; off < T.size; off += MAXIO) {
		uint64_t n = T.size - off < MAXIO ? T.size - off : MAXIO;
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

/* Compare the file on disk (what Ganesha stored) with the model. */
static void compare_disk(void)
{
	uint8_t *disk = malloc(T.maxsize + 1);
	ssize_t n = disk ? ct_disk_read("fsx.dat", 0, disk, T.maxsize + 1) : -1;
	size_t d;

	if (n != (ssize_t)T.size)
		fail("disk: %zd bytes, model %llu", n,
		     (unsigned long long)T.size);
	else if ((d = ct_first_diff(disk, T.model, T.size)) != T.size)
		fail("disk: byte %zu is 0x%02x, model 0x%02x", d, disk[d],
		     T.model[d]);
	free(disk);
}

/* The randomized run. */
static void test_random_ops_match_the_model(void)
{
	struct ct_metrics m0, m1;
	uint64_t t0 = nfsc_now_ms();
	int have_m = ct_metrics_read(&m0) == 0;

	for (T.done = 0; T.done < T.nops && !T.failed; T.done++) {
		struct fsx_op *o = &T.hist[T.done % HISTORY];

		o->n = T.done;
		pick(o);
		run_op(o);
		if ((T.done + 1) % T.check_every == 0 && !T.failed) {
			/* With write-back, Ganesha holds what the proxy
			 * acknowledged once a COMMIT returns. */
			do_commit();
			compare_via(T.dx, &T.fhd, "direct");
			compare_disk();
		}
	}
	if (!T.failed) {
		T.done = T.nops;
		do_commit();
		compare_via(T.px, &T.fh, "proxy, at the end");
		compare_via(T.dx, &T.fhd, "direct, at the end");
		compare_disk();
	}
	CHECK_MSG(!T.failed, "fsx: seed %llu failed", (unsigned long long)T.seed);
	CHECK_EQ(T.done, T.nops);
	printf("\nfsx: seed %llu: %llu operations (%llu reads, %llu writes, "
	       "%llu writes past EOF, %llu size changes, %llu commits) in "
	       "%llu ms, page %llu, final size %llu: %s\n",
	       (unsigned long long)T.seed, (unsigned long long)T.done,
	       (unsigned long long)T.counts[F_READ],
	       (unsigned long long)T.counts[F_WRITE],
	       (unsigned long long)T.counts[F_EXTEND_WRITE],
	       (unsigned long long)T.counts[F_TRUNCATE],
	       (unsigned long long)T.counts[F_COMMIT],
	       (unsigned long long)(nfsc_now_ms() - t0),
	       (unsigned long long)T.page, (unsigned long long)T.size,
	       T.failed ? "FAILED" : "ok");
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
	const char *s = getenv("NFSC_FSX_SEED");

	T.seed = s && *s ? ct_env_u64("NFSC_FSX_SEED", 1)
			 : ct_env_u64("CT_FSX_SEED", 1);
	T.nops = ct_env_u64("NFSC_FSX_OPS", 15000);
	T.check_every = ct_env_u64("CT_FSX_CHECK_EVERY", 1000);
	T.page = ct_metric_now(CT_PAGE_SIZE);
	if (T.page == CT_ABSENT || !T.check_every)
		return -1;
	/* Room for a few pages of the largest size, and at least 4 MiB. */
	T.maxsize = 6 * T.page > (4u << 20) ? 6 * T.page : (4u << 20);
	T.model = calloc(T.maxsize + MAXIO, 1);
	T.buf = malloc(MAXIO);
	T.buf2 = malloc(MAXIO);
	if (!T.model || !T.buf || !T.buf2)
		return -1;
	ct_rng_seed(&T.rng, T.seed);
	printf("fsx: seed %llu, %llu operations, page %llu, file up to %llu "
	       "bytes (reproduce: NFSC_FSX_SEED=%llu NFSC_FSX_OPS=%llu)\n",
	       (unsigned long long)T.seed, (unsigned long long)T.nops,
	       (unsigned long long)T.page, (unsigned long long)T.maxsize,
	       (unsigned long long)T.seed, (unsigned long long)T.nops);
	T.px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	T.dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	if (!T.px || !T.dx ||
	    nfsc_create(T.px, nfsc_root(T.px), "fsx.dat", 0644, &T.fh,
			NULL) != NFS3_OK ||
	    ct_lookup_root(T.dx, "fsx.dat", &T.fhd) != NFS3_OK)
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

	nfsc_checks_report_at_exit("test_cache_fsx");
	s = CU_add_suite("cache_fsx", suite_init, suite_cleanup);
	if (!s || !CU_add_test(s, "random_ops_match_the_model",
			       test_random_ops_match_the_model))
		return -1;
	return 0;
}
