/* SPDX-License-Identifier: MIT */
/*
 * test_holes: byte ranges the proxy knows to read as zeros (holes) are
 * served without upstream READs and without page memory. Each suite is
 * one scenario and can be run alone (argv[1] = suite name):
 *
 *   holes_setattr_1g       CREATE through the proxy, SETATTR size 1 GiB,
 *                          READ all of it (1 MiB READs, CT_HOLES_WINDOW in
 *                          flight): no upstream READ, no page memory,
 *                          every byte zero. Prints the proxy's VmRSS.
 *   holes_write_5g         one UNSTABLE byte at 5 GiB in a new file, then
 *                          READ [0, 5 GiB) in 1 MiB READs: no upstream
 *                          READ; READs over the end return the byte, eof.
 *                          Then four bytes at 2^62: answered, read back,
 *                          the gap zeros with no upstream READ.
 *   holes_truncate_extend  a file of 'X' written on disk and cached through
 *                          the proxy is truncated and extended again with
 *                          SETATTR through the proxy: the bytes past the
 *                          cut read as zeros through the proxy (from its
 *                          cache), directly from Ganesha and on disk.
 *   holes_zero_blocks      32 MiB on disk, every other 64 KiB block zeros,
 *                          READ twice through the proxy: the second pass
 *                          sends nothing upstream, the zero blocks take no
 *                          page memory, the data is byte-identical.
 *   holes_other_writer     another writer grows the file behind the
 *                          proxy's back; the proxy's SETATTR or write past
 *                          its idea of EOF must not turn the other
 *                          writer's bytes into a hole.
 *
 * Exact values are computed from the proxy's page size (read from
 * /metrics) and CT_HOLE_GRAN, the proxy's hole_granularity (default 4096;
 * 0 when the harness config turns zero detection off). CT_AC is the
 * export's acregmax in seconds when the harness config sets it. The default
 * harness config has a 1 GiB cache, so nothing is evicted here.
 *
 * Metric gap: the cache's hole_bytes gauge and zero_blocks counter
 * (cache_stats) are not exported, so holes are asserted through READ
 * outcomes, hole bytes served and page memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define KIB 1024ull
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define CHUNK (1024u * 1024)
#define MAXWIN 32

#define CT_READS_HOLE	"nfscached_reads_total{result=\"hole\"}"
#define CT_BYTES_HOLE	"nfscached_read_bytes_total{source=\"hole\"}"

static struct {
	struct nfsc *px, *dx;
	struct ct_pipe *pipe;
	uint8_t *bufs;		/* win * CHUNK bytes */
	unsigned win;
	pid_t pid;
	uint64_t page;		/* the proxy's page size */
	uint64_t gran;		/* the proxy's hole_granularity */
	uint64_t acregmax;	/* the export's acregmax, s (CT_AC; 0: unknown) */
} T;

/* Checks one finished pipelined READ; 0 if it is right. */
typedef int (*chunk_fn)(const struct ct_op *op, void *arg);

/* True if p[0..n) is all zero bytes (every byte compared). */
static int all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The first offset in p[0..n) whose byte is not zero, or n. */
static size_t first_nonzero(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] == 0)
		i++;
	return i;
}

/*
 * READ [start, end) of fh through the pipe in CHUNK pieces with T.win in
 * flight; fn checks each reply. Returns the number of replies fn
 * rejected, or -1 if the pipe failed or stalled.
 */
static long stream(const nfs_fh3 *fh, uint64_t start, uint64_t end,
		   chunk_fn fn, void *arg)
{
	struct ct_op op[MAXWIN];
	uint64_t next = start;
	long bad = 0;
	unsigned k;

	memset(op, 0, sizeof(op));
	for (k = 0; k < T.win; k++)
		op[k].done = 1;
	for (;;) {
		for (k = 0; k < T.win; k++) {
			uint64_t n = end - next < CHUNK ? end - next : CHUNK;

			if (!op[k].done)
				continue;
			if (op[k].len) {
				bad += fn(&op[k], arg) != 0;
				op[k].len = 0;
			}
			if (next >= end)
				continue;
			op[k].buf = T.bufs + (size_t)k * CHUNK;
			if (ct_pipe_read(T.pipe, fh, next, (uint32_t)n, &op[k]))
				return -1;
			next += n;
		}
		if (next >= end && !ct_pipe_pending(T.pipe))
			return bad;
		if (ct_pipe_wait(T.pipe, ct_pipe_pending(T.pipe) - 1, 30000))
			return -1;
	}
}

/* What a READ of a zero range must look like. */
struct zero_want {
	uint64_t size;		/* the file's size */
	long reported;		/* failures printed so far */
};

/* Check a READ inside zeros: OK, full count, eof at the end, all zero. */
static int check_zero_chunk(const struct ct_op *op, void *arg)
{
	struct zero_want *w = arg;
	int eof_want = op->off + op->len >= w->size;
	size_t nz = op->st == NFS3_OK && op->count == op->len
			    ? first_nonzero(op->buf, op->count) : 0;

	if (op->st == NFS3_OK && op->count == op->len &&
	    op->eof == eof_want && nz == op->count)
		return 0;
	if (w->reported++ < 5)
		CHECK_MSG(0, "READ off %llu len %u: %s count %u eof %d (want "
			  "%u, eof %d), first non-zero byte at +%zu",
			  (unsigned long long)op->off, op->len,
			  nfsc_stat_name(op->st), op->count, op->eof, op->len,
			  eof_want, nz);
	return -1;
}

/* The size in GETATTR of fh through c, or UINT64_MAX. */
static uint64_t size_of(struct nfsc *c, const nfs_fh3 *fh)
{
	fattr3 a;

	return nfsc_getattr(c, fh, &a) == NFS3_OK ? a.size : UINT64_MAX;
}

/* CREATE name in the root through the proxy; 0 or -1. */
static int create_px(const char *name, nfs_fh3 *fh)
{
	int st = nfsc_create(T.px, nfsc_root(T.px), name, 0644, fh, NULL);

	CHECK_STAT(st, NFS3_OK);
	return st == NFS3_OK ? 0 : -1;
}

/* ---- SETATTR to 1 GiB ---- */

/* Grow a new file to 1 GiB with SETATTR and read it all: zeros, locally. */
static void test_setattr_grow_reads_as_hole(void)
{
	const uint64_t size = GIB;
	struct zero_want w = { size, 0 };
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, fhd = { 0 };
	long rss0, rss1, bad;
	uint64_t t0, ms;

	if (create_px("grow1g.dat", &fh) != 0)
		return;
	CHECK_STAT(ct_set_size(T.px, &fh, size), NFS3_OK);
	CHECK_EQ(size_of(T.px, &fh), size);
	if (ct_metrics_read(&m0) != 0)
		goto out;
	rss0 = ct_vmrss_kib(T.pid);
	t0 = nfsc_now_ms();
	bad = stream(&fh, 0, size, check_zero_chunk, &w);
	ms = nfsc_now_ms() - t0;
	rss1 = ct_vmrss_kib(T.pid);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	CHECK_EQ(bad, 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_PAGE_BYTES), 0);
	CHECK_EQ(ct_metric(&m1, CT_PAGES), ct_metric(&m0, CT_PAGES));
	CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HOLE), size / CHUNK);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_HOLE), size);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_CACHE), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_UPSTREAM), 0);
	/* Ganesha agrees on the size. */
	CHECK_STAT(ct_lookup_root(T.dx, "grow1g.dat", &fhd), NFS3_OK);
	CHECK_EQ(size_of(T.dx, &fhd), size);
	printf("\nholes: 1 GiB SETATTR hole read in %llu ms (%llu MiB/s, %u "
	       "in flight); proxy VmRSS before %ld KiB, after %ld KiB; page "
	       "bytes %llu\n", (unsigned long long)ms,
	       (unsigned long long)(ms ? size / MIB * 1000 / ms : 0), T.win,
	       rss0, rss1, (unsigned long long)ct_metric(&m1, CT_PAGE_BYTES));
	ct_print_deltas("setattr_1g", &m0, &m1);
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
}

/* ---- one byte at 5 GiB ---- */

/* A write far past EOF leaves a hole that reads locally; the byte too. */
static void test_write_past_eof_gap_reads_as_hole(void)
{
	const uint64_t at = 5 * GIB, size = at + 1;
	const uint8_t byte = 0x5A;
	struct zero_want w = { size, 0 };
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, fhd = { 0 };
	uint8_t *buf = malloc(CHUNK), two[2];
	uint32_t count = 0;
	int eof = 0, committed = -1;
	uint64_t t0, ms;
	long bad;

	if (!buf || create_px("write5g.dat", &fh) != 0)
		goto out;
	CHECK_STAT(nfsc_write(T.px, &fh, at, &byte, 1, UNSTABLE, &count,
			      &committed, NULL), NFS3_OK);
	CHECK_EQ(count, 1);
	CHECK_EQ(committed, UNSTABLE);
	CHECK_EQ(size_of(T.px, &fh), size);
	if (ct_metrics_read(&m0) != 0)
		goto out;
	t0 = nfsc_now_ms();
	bad = stream(&fh, 0, at, check_zero_chunk, &w);
	ms = nfsc_now_ms() - t0;
	CHECK_EQ(bad, 0);
	/* A READ over the end: 1 MiB - 1 zeros, the byte, eof. */
	memset(buf, 0xA5, CHUNK);
	count = 0;
	CHECK_STAT(nfsc_read(T.px, &fh, size - CHUNK, CHUNK, buf, &count,
			     &eof), NFS3_OK);
	CHECK_EQ(count, CHUNK);
	CHECK_EQ(eof, 1);
	CHECK_EQ(first_nonzero(buf, CHUNK), CHUNK - 1);
	CHECK_EQ(buf[CHUNK - 1], byte);
	/* A READ at the byte: the byte alone, eof. */
	memset(buf, 0xA5, CHUNK);
	count = 0;
	eof = 0;
	CHECK_STAT(nfsc_read(T.px, &fh, at, CHUNK, buf, &count, &eof), NFS3_OK);
	CHECK_EQ(count, 1);
	CHECK_EQ(eof, 1);
	CHECK_EQ(buf[0], byte);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HOLE), at / CHUNK);
	CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HIT), 2);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_HOLE), at + CHUNK - 1);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_CACHE), 2);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_UPSTREAM), 0);
	/* The gap takes no pages: at most the byte's page, still held. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_PAGE_BYTES), 0);
	printf("\nholes: 5 GiB gap read in %llu ms (%llu MiB/s, %u in "
	       "flight)\n", (unsigned long long)ms,
	       (unsigned long long)(ms ? at / MIB * 1000 / ms : 0), T.win);
	ct_print_deltas("write_5g", &m0, &m1);
	ct_metrics_free(&m1);
	/* Committed, Ganesha has the byte at 5 GiB and zeros before it. */
	CHECK_STAT(nfsc_commit(T.px, &fh, 0, 0, NULL), NFS3_OK);
	CHECK_STAT(ct_lookup_root(T.dx, "write5g.dat", &fhd), NFS3_OK);
	count = 0;
	eof = 0;
	memset(two, 0xA5, sizeof(two));
	CHECK_STAT(nfsc_read(T.dx, &fhd, at - 1, 2, two, &count, &eof),
		   NFS3_OK);
	CHECK_EQ(count, 2);
	CHECK_EQ(eof, 1);
	CHECK_EQ(two[0], 0);
	CHECK_EQ(two[1], byte);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
	free(buf);
}

/* ---- truncate, then extend ---- */

/*
 * Check that buf[0..n) (file bytes from offset 0) is fill up to cut and
 * zeros after it; who names the path for the message.
 */
static void check_cut(const char *who, const uint8_t *buf, size_t n,
		      size_t cut, uint8_t fill)
{
	size_t i = 0;

	while (i < cut && i < n && buf[i] == fill)
		i++;
	CHECK_MSG(i == (cut < n ? cut : n), "%s: byte %zu is 0x%02x, want "
		  "0x%02x", who, i, i < n ? buf[i] : 0, fill);
	i = cut + first_nonzero(buf + cut, n - cut);
	CHECK_MSG(i == n, "%s: byte %zu is 0x%02x past the cut at %zu, want "
		  "0", who, i, i < n ? buf[i] : 0, cut);
}

/* READ all of fh through c in one call; check size, eof and bytes. */
static void check_cut_via(struct nfsc *c, const nfs_fh3 *fh, const char *who,
			  size_t size, size_t cut, uint8_t fill)
{
	uint8_t *buf = malloc(size + 1);
	uint32_t count = 0;
	int eof = 0;

	if (!buf)
		return;
	memset(buf, 0xA5, size + 1);
	CHECK_STAT(nfsc_read(c, fh, 0, (uint32_t)size + 1, buf, &count, &eof),
		   NFS3_OK);
	CHECK_MSG(count == size && eof == 1, "%s: READ count %u eof %d, want "
		  "%zu, 1", who, count, eof, size);
	check_cut(who, buf, count, cut, fill);
	free(buf);
}

/*
 * A file of len bytes of fill on disk, cached through the proxy, cut to
 * cut and grown to grow with SETATTR through the proxy: zeros past the
 * cut through the proxy (with no upstream READ), directly and on disk.
 */
static void cut_and_grow(const char *name, size_t len, uint8_t fill,
			 size_t cut, size_t grow)
{
	uint8_t *buf = malloc(len > grow ? len : grow);
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, fhd = { 0 };
	char who[96];
	ssize_t n;

	if (!buf)
		return;
	memset(buf, fill, len);
	if (ct_disk_write(name, buf, len) != 0 ||
	    ct_lookup_root(T.px, name, &fh) != NFS3_OK ||
	    ct_lookup_root(T.dx, name, &fhd) != NFS3_OK) {
		CHECK_MSG(0, "%s: setup", name);
		goto out;
	}
	/* Cached: the second READ is answered without upstream I/O. */
	snprintf(who, sizeof(who), "%s before the cut", name);
	check_cut_via(T.px, &fh, who, len, len, fill);
	if (ct_metrics_read(&m0) != 0)
		goto out;
	check_cut_via(T.px, &fh, who, len, len, fill);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	ct_metrics_free(&m0);
	m0 = m1;
	CHECK_STAT(ct_set_size(T.px, &fh, cut), NFS3_OK);
	CHECK_STAT(ct_set_size(T.px, &fh, grow), NFS3_OK);
	snprintf(who, sizeof(who), "%s through the proxy", name);
	check_cut_via(T.px, &fh, who, grow, cut, fill);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	/* The bytes before the cut are still cached, the rest is a hole. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_READS_HIT), 1);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_CACHE), cut);
	CHECK_EQ(ct_delta(&m0, &m1, CT_BYTES_HOLE), grow - cut);
	ct_print_deltas(name, &m0, &m1);
	ct_metrics_free(&m1);
	snprintf(who, sizeof(who), "%s directly from Ganesha", name);
	check_cut_via(T.dx, &fhd, who, grow, cut, fill);
	memset(buf, 0xA5, grow);
	n = ct_disk_read(name, 0, buf, grow);
	CHECK_MSG(n == (ssize_t)grow, "%s on disk: %zd bytes, want %zu", name,
		  n, grow);
	if (n == (ssize_t)grow) {
		snprintf(who, sizeof(who), "%s on disk", name);
		check_cut(who, buf, grow, cut, fill);
	}
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
	free(buf);
}

/* Truncate a cached 64 KiB file to 100 bytes, extend it back to 64 KiB. */
static void test_truncate_then_extend_reads_zeros(void)
{
	cut_and_grow("cut64k.dat", 64 * KIB, 'X', 100, 64 * KIB);
}

/* The same across pages: 256 KiB cut inside a page, grown past the end. */
static void test_truncate_then_extend_across_pages(void)
{
	cut_and_grow("cut256k.dat", 256 * KIB, 'Y', 70000, 300000);
}

/* ---- zero blocks of fetched data ---- */

#define ZB_FILE (32 * MIB)
#define ZB_BLOCK (64 * KIB)

/* The expected contents of the zero-block file. */
static uint8_t *zb_data;

/* Check a READ of the zero-block file against zb_data. */
static int check_zb_chunk(const struct ct_op *op, void *arg)
{
	long *reported = arg;
	size_t d = op->st == NFS3_OK && op->count == op->len
			   ? ct_first_diff(op->buf, zb_data + op->off, op->count)
			   : 0;

	if (op->st == NFS3_OK && op->count == op->len && d == op->count &&
	    op->eof == (op->off + op->len >= ZB_FILE))
		return 0;
	if ((*reported)++ < 5)
		CHECK_MSG(0, "READ off %llu len %u: %s count %u eof %d, first "
			  "difference at +%zu", (unsigned long long)op->off,
			  op->len, nfsc_stat_name(op->st), op->count, op->eof,
			  d);
	return -1;
}

/*
 * Page bytes the proxy needs for zb_data: every page but those made only
 * of aligned all-zero blocks of T.gran bytes (all pages when T.gran is 0).
 */
static uint64_t zb_page_bytes(void)
{
	uint64_t pages = 0;

	for (uint64_t ps = 0; ps < ZB_FILE; ps += T.page) {
		int need = T.gran == 0;

		for (uint64_t b = ps; !need && b < ps + T.page; b += T.gran)
			need = !all_zero(zb_data + b, T.gran);
		pages += need;
	}
	return pages * T.page;
}

/* Read a file with zero blocks twice: pass 2 is local, zeros cost no pages. */
static void test_zero_blocks_are_holes(void)
{
	struct ct_rng r;
	struct ct_metrics m0, m1, m2;
	nfs_fh3 fh = { 0 };
	uint64_t want_pages, zero_bytes = 0;
	long bad, reported = 0;

	zb_data = calloc(ZB_FILE, 1);
	if (!zb_data)
		return;
	ct_rng_seed(&r, 0x401e5);
	for (uint64_t b = 0; b < ZB_FILE; b += ZB_BLOCK) {
		if ((b / ZB_BLOCK) % 2) {
			zero_bytes += ZB_BLOCK;
			continue;
		}
		for (uint64_t i = 0; i < ZB_BLOCK; i += 8) {
			uint64_t x = ct_rng_next(&r);

			memcpy(zb_data + b + i, &x, 8);
		}
	}
	want_pages = zb_page_bytes();
	if (ct_disk_write("zeroblocks.dat", zb_data, ZB_FILE) != 0 ||
	    ct_lookup_root(T.px, "zeroblocks.dat", &fh) != NFS3_OK ||
	    ct_metrics_read(&m0) != 0) {
		CHECK_MSG(0, "setup");
		goto out;
	}
	bad = stream(&fh, 0, ZB_FILE, check_zb_chunk, &reported);
	CHECK_MSG(bad == 0, "pass 1: %ld bad READs", bad);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	bad = stream(&fh, 0, ZB_FILE, check_zb_chunk, &reported);
	CHECK_MSG(bad == 0, "pass 2: %ld bad READs", bad);
	if (ct_metrics_read(&m2) != 0)
		goto out1;
	printf("\nholes: zero blocks: page %llu, hole_granularity %llu, %llu "
	       "of %llu bytes zero; page bytes after pass 1 %llu (want %llu)\n",
	       (unsigned long long)T.page, (unsigned long long)T.gran,
	       (unsigned long long)zero_bytes, (unsigned long long)ZB_FILE,
	       (unsigned long long)ct_delta(&m0, &m1, CT_PAGE_BYTES),
	       (unsigned long long)want_pages);
	ct_print_deltas("zero_blocks pass 1", &m0, &m1);
	ct_print_deltas("zero_blocks pass 2", &m1, &m2);
	/* Pass 1 fetched it; the zero blocks took no page memory. */
	CHECK(ct_delta(&m0, &m1, CT_UP_READ) > 0);
	CHECK_EQ(ct_delta(&m0, &m1, CT_PAGE_BYTES), want_pages);
	CHECK_EQ(ct_delta(&m0, &m1, CT_PAGES), want_pages / T.page);
	/* Pass 2: nothing upstream; zeros from holes, the rest from pages. */
	CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m1, &m2, CT_BYTES_UPSTREAM), 0);
	CHECK_EQ(ct_delta(&m1, &m2, CT_BYTES_HOLE),
		 T.gran ? zero_bytes : 0);
	CHECK_EQ(ct_delta(&m1, &m2, CT_BYTES_CACHE),
		 T.gran ? ZB_FILE - zero_bytes : ZB_FILE);
	CHECK_EQ(ct_delta(&m1, &m2, CT_READS_HIT), ZB_FILE / CHUNK);
	CHECK_EQ(ct_delta(&m1, &m2, CT_PAGE_BYTES), 0);
	ct_metrics_free(&m2);
out1:
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	free(zb_data);
	zb_data = NULL;
}

/* ---- another writer ---- */

#define OW_BLOCK 4096u

/* Fill want[0..n) with what the other-writer files must hold: 'A' at 0,
 * 'B' at 2 blocks, 'C' at c_at (0: none), zeros elsewhere. */
static void ow_expect(uint8_t *want, size_t n, size_t c_at)
{
	memset(want, 0, n);
	memset(want, 'A', OW_BLOCK);
	memset(want + 2 * OW_BLOCK, 'B', OW_BLOCK);
	if (c_at)
		memset(want + c_at, 'C', OW_BLOCK);
}

/* Write name on disk as one block of 'A' and cache it through the
 * proxy. 0 or -1. */
static int ow_cache(const char *name, nfs_fh3 *fh, nfs_fh3 *fhd)
{
	uint8_t blk[OW_BLOCK];
	uint32_t count = 0;
	int eof = 0;

	memset(blk, 'A', sizeof(blk));
	if (ct_disk_write(name, blk, sizeof(blk)) == 0 &&
	    ct_lookup_root(T.px, name, fh) == NFS3_OK &&
	    ct_lookup_root(T.dx, name, fhd) == NFS3_OK &&
	    nfsc_read(T.px, fh, 0, OW_BLOCK, blk, &count, &eof) == NFS3_OK &&
	    count == OW_BLOCK)
		return 0;
	CHECK_MSG(0, "%s: setup", name);
	return -1;
}

/* Another writer: a block of 'B' at 2 blocks, directly to Ganesha (the
 * proxy still believes the size is one block). */
static void ow_other_write(const nfs_fh3 *fhd)
{
	uint8_t blk[OW_BLOCK];
	uint32_t count = 0;

	memset(blk, 'B', sizeof(blk));
	CHECK_STAT(nfsc_write(T.dx, fhd, 2 * OW_BLOCK, blk, OW_BLOCK, FILE_SYNC,
			      &count, NULL, NULL), NFS3_OK);
	CHECK_EQ(size_of(T.dx, fhd), 3 * OW_BLOCK);
}

/* READ all of fh through c (size bytes); compare with want. */
static void ow_check(struct nfsc *c, const nfs_fh3 *fh, const char *who,
		     const uint8_t *want, size_t size)
{
	uint8_t *buf = malloc(size + 1);
	uint32_t count = 0;
	int eof = 0;
	size_t d;

	if (!buf)
		return;
	memset(buf, 0xA5, size + 1);
	CHECK_STAT(nfsc_read(c, fh, 0, (uint32_t)size + 1, buf, &count, &eof),
		   NFS3_OK);
	CHECK_MSG(count == size && eof == 1, "%s: READ count %u eof %d, want "
		  "%zu, 1", who, count, eof, size);
	d = ct_first_diff(buf, want, count < size ? count : size);
	CHECK_MSG(d == (count < size ? count : size), "%s: byte %zu is 0x%02x, "
		  "want 0x%02x", who, d, buf[d], d < size ? want[d] : 0);
	free(buf);
}

/*
 * SETATTR grows a file another writer grew first: its pre-op attributes
 * do not match what the proxy knew, so the new range is not a hole and
 * the other writer's bytes show through the proxy.
 */
static void test_setattr_after_other_writer_keeps_their_data(void)
{
	const size_t size = 64 * KIB;
	uint8_t *want = malloc(size);
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, fhd = { 0 };

	if (!want || ow_cache("other_setattr.dat", &fh, &fhd) != 0 ||
	    ct_metrics_read(&m0) != 0)
		goto out;
	ow_other_write(&fhd);
	CHECK_STAT(ct_set_size(T.px, &fh, size), NFS3_OK);
	ow_expect(want, size, 0);
	ow_check(T.px, &fh, "other_setattr.dat through the proxy", want, size);
	ow_check(T.dx, &fhd, "other_setattr.dat directly", want, size);
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	/* The SETATTR reply gave the other writer away. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_INVALIDATIONS), 1);
	ct_print_deltas("other_setattr", &m0, &m1);
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
	free(want);
}

/*
 * An absorbed write far past the end the proxy knew, after another
 * writer grew the file: once COMMIT returns, and again past acregmax
 * (CT_AC seconds, when the harness config sets it), the proxy serves
 * what Ganesha has: the other writer's bytes, not an invented hole.
 */
static void test_write_gap_after_other_writer_shows_their_data(void)
{
	const size_t c_at = 8 * OW_BLOCK, size = c_at + OW_BLOCK;
	uint8_t *want = malloc(size), blk[OW_BLOCK];
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 }, fhd = { 0 };
	uint32_t count = 0;

	if (!want || ow_cache("other_write.dat", &fh, &fhd) != 0 ||
	    ct_metrics_read(&m0) != 0)
		goto out;
	ow_other_write(&fhd);
	memset(blk, 'C', sizeof(blk));
	CHECK_STAT(nfsc_write(T.px, &fh, c_at, blk, OW_BLOCK, UNSTABLE, &count,
			      NULL, NULL), NFS3_OK);
	CHECK_STAT(nfsc_commit(T.px, &fh, 0, 0, NULL), NFS3_OK);
	ow_expect(want, size, c_at);
	ow_check(T.dx, &fhd, "other_write.dat directly", want, size);
	ow_check(T.px, &fh, "other_write.dat through the proxy after COMMIT",
		 want, size);
	if (T.acregmax) {
		/* Past the attribute timeout (the proxy's test clock,
		 * advanced) the proxy has revalidated. */
		CU_ASSERT_FATAL(tclock_advance((double)T.acregmax + 0.5) == 0);
		ow_check(T.px, &fh, "other_write.dat through the proxy past "
			 "acregmax", want, size);
	}
	if (ct_metrics_read(&m1) != 0)
		goto out0;
	ct_print_deltas("other_write", &m0, &m1);
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
out:
	nfsc_fh_free(&fh);
	nfsc_fh_free(&fhd);
	free(want);
}

/* ---- four bytes at 2^62 ---- */

/*
 * A WRITE near the largest offset: absorbing it records a gap of 4 EiB
 * as a hole, which must cost what the file holds, not what the gap spans
 * (the proxy of 392bb98 walked every page index of the gap and never
 * answered, nor anyone else). The bytes read back, the gap reads as zeros
 * with no upstream READ, and a SETATTR to size 0 drops the dirty bytes
 * (Ganesha's ext4 export could not take them).
 */
static void test_write_at_2_62_is_answered(void)
{
	const uint64_t at = 1ull << 62;
	const uint8_t four[4] = { 'e', 'd', 'g', 'e' };
	struct ct_metrics m0, m1;
	nfs_fh3 fh = { 0 };
	uint8_t got[4096];
	uint32_t count = 0;
	int eof = 0, committed = -1;

	if (create_px("write2p62.dat", &fh) != 0 || ct_metrics_read(&m0) != 0)
		goto out;
	CHECK_STAT(nfsc_write(T.px, &fh, at, four, 4, UNSTABLE, &count,
			      &committed, NULL), NFS3_OK);
	CHECK_EQ(count, 4);
	CHECK_EQ(size_of(T.px, &fh), at + 4);
	CHECK_STAT(nfsc_read(T.px, &fh, at, 4, got, &count, &eof), NFS3_OK);
	CHECK_EQ(count, 4);
	CHECK(memcmp(got, four, 4) == 0);
	CHECK_STAT(nfsc_read(T.px, &fh, at - sizeof(got), sizeof(got), got,
			     &count, &eof), NFS3_OK);
	CHECK_EQ(count, sizeof(got));
	CHECK(got[0] == 0 && memcmp(got, got + 1, sizeof(got) - 1) == 0);
	if (ct_metrics_read(&m1) == 0) {
		CHECK_EQ(ct_metric(&m1, CT_UP_READ) - ct_metric(&m0, CT_UP_READ), 0);
		ct_metrics_free(&m1);
	}
	ct_metrics_free(&m0);
	CHECK_STAT(ct_set_size(T.px, &fh, 0), NFS3_OK);
	CHECK_EQ(size_of(T.px, &fh), 0);
out:
	nfsc_fh_free(&fh);
}

/* ---- suites ---- */

/* Connect both clients and the pipe; read the page size. */
static int suite_init(void)
{
	T.pid = (pid_t)ct_env_u64("NFSC_PROXY_PID", 0);
	T.win = (unsigned)ct_env_u64("CT_HOLES_WINDOW", 8);
	T.gran = ct_env_u64("CT_HOLE_GRAN", 4096);
	T.acregmax = ct_env_u64("CT_AC", 0);
	T.page = ct_metric_now(CT_PAGE_SIZE);
	if (!T.pid || !T.win || T.win > MAXWIN || T.page == CT_ABSENT ||
	    !T.page || (T.gran && T.page % T.gran))
		return -1;
	T.bufs = malloc((size_t)T.win * CHUNK);
	T.px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	T.dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	T.pipe = ct_pipe_open(ct_env("NFSC_PROXY_URL"), 0, 0);
	return T.bufs && T.px && T.dx && T.pipe ? 0 : -1;
}

/* Release what suite_init made. */
static int suite_cleanup(void)
{
	ct_pipe_close(&T.pipe);
	nfsc_close(&T.px);
	nfsc_close(&T.dx);
	free(T.bufs);
	T.bufs = NULL;
	return 0;
}

/* Add suite name with one or two tests. */
static int add(const char *name, const char *t1, CU_TestFunc f1,
	       const char *t2, CU_TestFunc f2)
{
	CU_pSuite s = CU_add_suite(name, suite_init, suite_cleanup);

	if (!s || !CU_add_test(s, t1, f1))
		return -1;
	return t2 && !CU_add_test(s, t2, f2) ? -1 : 0;
}

int test_register(void)
{
	tcheck_report_at_exit("test_holes");
	if (add("holes_setattr_1g", "setattr_grow_reads_as_hole",
		test_setattr_grow_reads_as_hole, NULL, NULL) ||
	    add("holes_write_5g", "write_past_eof_gap_reads_as_hole",
		test_write_past_eof_gap_reads_as_hole, "write_at_2_62_is_answered",
		test_write_at_2_62_is_answered) ||
	    add("holes_truncate_extend", "truncate_then_extend_reads_zeros",
		test_truncate_then_extend_reads_zeros,
		"truncate_then_extend_across_pages",
		test_truncate_then_extend_across_pages) ||
	    add("holes_zero_blocks", "zero_blocks_are_holes",
		test_zero_blocks_are_holes, NULL, NULL) ||
	    add("holes_other_writer",
		"setattr_after_other_writer_keeps_their_data",
		test_setattr_after_other_writer_keeps_their_data,
		"write_gap_after_other_writer_shows_their_data",
		test_write_gap_after_other_writer_shows_their_data))
		return -1;
	return 0;
}
