/* SPDX-License-Identifier: MIT */
/*
 * test_cache_partial: the published partial-page workload, scaled
 * (docs/design.md "What makes it more than a pass-through", lesson 1: the
 * kernel's nfs_is_partially_uptodate, sysbench 2K random read/write on
 * 4K pages). On a 64 MiB file, CT_NIO (8,000) random writes of
 * CT_IO_SIZE bytes (1 KiB) aligned to their size go through the proxy,
 * then CT_NIO random reads of the same size at offsets that were written.
 * Every byte a read asks for was written through the proxy, so the read
 * phase must send no READ upstream at all, whatever the page size: the
 * delta of nfscached_upstream_rpcs_total{procedure="read"} across it is
 * exactly 0, and every read returns the bytes last written there. The
 * write phase must not read either (no read-modify-write).
 *
 * The proxy's page size comes from the harness config; CT_PAGE_SIZE says
 * which one this run expects (checked on /metrics), so the same program
 * covers 1 KiB I/O on 64 KiB pages and 2 KiB I/O on 4 KiB and 64 KiB
 * pages. Calls are pipelined on one connection: CT_WRITE_WINDOW writes
 * (default 1: each WRITE's reply comes before the next is sent, as a
 * sysbench thread does) and CT_READ_WINDOW reads (default 16) in flight;
 * writes in flight never overlap, so the upstream's order is the client's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"

#define FILE_SIZE (64ull << 20)
#define WAIT_MS 30000

struct slot {
	struct ct_op op;
	uint64_t block;
	uint32_t seed;
	int busy;
	uint8_t *buf;
};

static struct {
	uint32_t io;		/* bytes per call */
	uint64_t nio;		/* calls per phase */
	uint64_t nblocks;	/* FILE_SIZE / io */
	unsigned wwin, rwin;	/* calls in flight */
	uint32_t *version;	/* per block: seed of the last write, 0 none */
	uint8_t *inflight;	/* per block: a write is in flight */
	uint64_t *written;	/* distinct blocks written */
	uint64_t nwritten;
	uint64_t bad;		/* calls that failed or returned wrong bytes */
	struct ct_rng rng;
	struct nfsc *px;
	struct ct_pipe *pipe;
	nfs_fh3 fh;
} T;

/* Check a finished WRITE and record its block as written. */
static void write_done(struct slot *s)
{
	if (s->op.st != NFS3_OK || s->op.count != T.io) {
		if (T.bad++ < 5)
			CHECK_MSG(0, "WRITE block %llu: %s count %u",
				  (unsigned long long)s->block,
				  nfsc_stat_name(s->op.st), s->op.count);
	}
	if (!T.version[s->block])
		T.written[T.nwritten++] = s->block;
	T.version[s->block] = s->seed;
	T.inflight[s->block] = 0;
}

/* Check a finished READ against the last write of its block. */
static void read_done(struct slot *s)
{
	uint8_t *want = s->buf + T.io;
	size_t d;

	ct_pattern(want, T.io, s->block * T.io, T.version[s->block]);
	d = s->op.st == NFS3_OK && s->op.count == T.io
		    ? ct_first_diff(s->buf, want, T.io) : 0;
	if ((s->op.st != NFS3_OK || s->op.count != T.io || d != T.io) &&
	    T.bad++ < 5)
		CHECK_MSG(0, "READ block %llu (written with seed %u): %s count "
			  "%u, first wrong byte %zu", (unsigned long long)s->block,
			  T.version[s->block], nfsc_stat_name(s->op.st),
			  s->op.count, d);
}

/* A free slot of n, harvesting finished calls; waits while all are busy. */
static struct slot *slot_free(struct slot *sl, unsigned n, int writing)
{
	for (;;) {
		for (unsigned i = 0; i < n; i++) {
			if (sl[i].busy && sl[i].op.done) {
				if (writing)
					write_done(&sl[i]);
				else
					read_done(&sl[i]);
				sl[i].busy = 0;
			}
			if (!sl[i].busy)
				return &sl[i];
		}
		if (ct_pipe_wait(T.pipe, ct_pipe_pending(T.pipe) - 1, WAIT_MS))
			return NULL;
	}
}

/* Wait for every call in sl and harvest it. 0 or -1. */
static int slots_drain(struct slot *sl, unsigned n, int writing)
{
	if (ct_pipe_wait(T.pipe, 0, WAIT_MS) != 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		if (sl[i].busy && writing)
			write_done(&sl[i]);
		else if (sl[i].busy)
			read_done(&sl[i]);
		sl[i].busy = 0;
	}
	return 0;
}

/* Allocate n slots with buffers of 2 * io bytes (data, expected). */
static struct slot *slots_new(unsigned n)
{
	struct slot *sl = calloc(n, sizeof(*sl));

	for (unsigned i = 0; sl && i < n; i++)
		if (!(sl[i].buf = malloc(2 * (size_t)T.io)))
			return NULL;	/* a test program: leaked on ENOMEM */
	return sl;
}

/* Free slots made by slots_new. */
static void slots_free(struct slot *sl, unsigned n)
{
	for (unsigned i = 0; sl && i < n; i++)
		free(sl[i].buf);
	free(sl);
}

/* The write phase: nio random aligned writes, never two in flight on one
 * block. 0 or -1. */
static int write_phase(void)
{
	struct slot *sl = slots_new(T.wwin), *s;
	int rc = -1;

	if (!sl)
		return -1;
	for (uint64_t i = 0; i < T.nio; i++) {
		uint64_t b;

		if (!(s = slot_free(sl, T.wwin, 1)))
			goto out;
		do
			b = ct_rng_below(&T.rng, T.nblocks);
		while (T.inflight[b]);
		s->block = b;
		s->seed = (uint32_t)i + 1;
		s->busy = 1;
		T.inflight[b] = 1;
		ct_pattern(s->buf, T.io, b * T.io, s->seed);
		if (ct_pipe_write(T.pipe, &T.fh, b * T.io, s->buf, T.io,
				  UNSTABLE, &s->op) != 0)
			goto out;
	}
	rc = slots_drain(sl, T.wwin, 1);
out:
	slots_free(sl, T.wwin);
	return rc;
}

/* The read phase: nio reads of random written blocks. 0 or -1. */
static int read_phase(void)
{
	struct slot *sl = slots_new(T.rwin), *s;
	int rc = -1;

	if (!sl)
		return -1;
	for (uint64_t i = 0; i < T.nio; i++) {
		if (!(s = slot_free(sl, T.rwin, 0)))
			goto out;
		s->block = T.written[ct_rng_below(&T.rng, T.nwritten)];
		s->busy = 1;
		s->op.buf = s->buf;
		if (ct_pipe_read(T.pipe, &T.fh, s->block * T.io, T.io,
				 &s->op) != 0)
			goto out;
	}
	rc = slots_drain(sl, T.rwin, 0);
out:
	slots_free(sl, T.rwin);
	return rc;
}

/* Print the deltas that tell the story of a phase. */
static void phase_report(const char *what, const struct ct_metrics *a,
			 const struct ct_metrics *b, uint64_t ms)
{
	printf("\ncachetest: partial: io %u, page %llu: %s: %llu calls in %llu "
	       "ms (%.0f/s); upstream READ %llu, WRITE %llu, GETATTR %llu, "
	       "ACCESS %llu; reads hit %llu partial %llu miss %llu; "
	       "invalidations %llu\n", T.io,
	       (unsigned long long)ct_metric(b, CT_PAGE_SIZE), what,
	       (unsigned long long)T.nio, (unsigned long long)ms,
	       ms ? 1000.0 * (double)T.nio / (double)ms : 0.0,
	       (unsigned long long)ct_delta(a, b, CT_UP_READ),
	       (unsigned long long)ct_delta(a, b, CT_UP_WRITE),
	       (unsigned long long)ct_delta(a, b, CT_UP_GETATTR),
	       (unsigned long long)ct_delta(a, b, CT_UP_ACCESS),
	       (unsigned long long)ct_delta(a, b, CT_READS_HIT),
	       (unsigned long long)ct_delta(a, b, CT_READS_PARTIAL),
	       (unsigned long long)ct_delta(a, b, CT_READS_MISS),
	       (unsigned long long)ct_delta(a, b, CT_INVALIDATIONS));
}

/* Print metadata per page and the page memory after the run. */
static void memory_report(const struct ct_metrics *m)
{
	uint64_t pages = ct_metric(m, CT_PAGES);

	printf("cachetest: partial: io %u: %llu pages, %llu page bytes, "
	       "%llu metadata bytes (%.1f per page)\n", T.io,
	       (unsigned long long)pages,
	       (unsigned long long)ct_metric(m, CT_PAGE_BYTES),
	       (unsigned long long)ct_metric(m, CT_META_BYTES),
	       pages ? (double)ct_metric(m, CT_META_BYTES) / (double)pages : 0);
}

/* Writes then reads of written offsets: no upstream READ, right bytes. */
static void test_reads_of_written_offsets_never_go_upstream(void)
{
	struct ct_metrics m0, m1, m2;
	uint64_t t0, t1, t2;

	if (ct_metrics_read(&m0) != 0) {
		CHECK_MSG(0, "GET /metrics");
		return;
	}
	t0 = nfsc_now_ms();
	CHECK_MSG(write_phase() == 0, "write phase stalled");
	t1 = nfsc_now_ms();
	if (ct_metrics_read(&m1) != 0) {
		CHECK_MSG(0, "GET /metrics");
		goto out0;
	}
	CHECK_MSG(read_phase() == 0, "read phase stalled");
	t2 = nfsc_now_ms();
	if (ct_metrics_read(&m2) != 0) {
		CHECK_MSG(0, "GET /metrics");
		goto out1;
	}
	phase_report("write phase", &m0, &m1, t1 - t0);
	phase_report("read phase", &m1, &m2, t2 - t1);
	memory_report(&m2);
	printf("cachetest: partial: %llu distinct blocks written, %llu bad "
	       "calls\n", (unsigned long long)T.nwritten,
	       (unsigned long long)T.bad);
	CHECK_EQ(T.bad, 0);
	/* No read-modify-write: writes never read upstream. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_UP_READ), 0);
	/* The proxy's own writes never drop what it cached. */
	CHECK_EQ(ct_delta(&m0, &m1, CT_INVALIDATIONS), 0);
	/* Every byte read was written through the proxy: all hits. */
	CHECK_EQ(ct_delta(&m1, &m2, CT_UP_READ), 0);
	CHECK_EQ(ct_delta(&m1, &m2, CT_READS_HIT), T.nio);
	ct_print_deltas("partial: read phase", &m1, &m2);
	ct_metrics_free(&m2);
out1:
	ct_metrics_free(&m1);
out0:
	ct_metrics_free(&m0);
}

/* Create the sparse 64 MiB file on disk and set everything up. */
static int suite_init(void)
{
	char path[4096];
	uint64_t want_page = ct_env_u64("CT_PAGE_SIZE", 65536), page;
	int fd;

	T.io = (uint32_t)ct_env_u64("CT_IO_SIZE", 1024);
	T.nio = ct_env_u64("CT_NIO", 8000);
	T.wwin = (unsigned)ct_env_u64("CT_WRITE_WINDOW", 1);
	T.rwin = (unsigned)ct_env_u64("CT_READ_WINDOW", 16);
	if (T.io == 0 || FILE_SIZE % T.io || !T.wwin || !T.rwin)
		return -1;
	T.nblocks = FILE_SIZE / T.io;
	ct_rng_seed(&T.rng, ct_env_u64("CT_SEED", 2009));
	T.version = calloc(T.nblocks, sizeof(*T.version));
	T.inflight = calloc(T.nblocks, 1);
	T.written = calloc(T.nblocks, sizeof(*T.written));
	if (!T.version || !T.inflight || !T.written)
		return -1;
	page = ct_metric_now(CT_PAGE_SIZE);
	if (page != want_page) {
		fprintf(stderr, "cachetest: the proxy's page size is %llu, this "
			"run wants %llu (CT_PAGE_SIZE)\n",
			(unsigned long long)page, (unsigned long long)want_page);
		return -1;
	}
	if (ct_disk_path("partial.dat", path, sizeof(path)) != 0 ||
	    (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
	    ftruncate(fd, (off_t)FILE_SIZE) != 0 || close(fd) != 0) {
		fprintf(stderr, "cachetest: cannot make %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	T.px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	if (!T.px || ct_lookup_root(T.px, "partial.dat", &T.fh) != NFS3_OK)
		return -1;
	T.pipe = ct_pipe_open(ct_env("NFSC_PROXY_URL"), 0, 0);
	printf("cachetest: partial: %llu writes then %llu reads of %u bytes, "
	       "page %llu, windows %u/%u\n", (unsigned long long)T.nio,
	       (unsigned long long)T.nio, T.io, (unsigned long long)page,
	       T.wwin, T.rwin);
	return T.pipe ? 0 : -1;
}

/* Release everything. */
static int suite_cleanup(void)
{
	ct_pipe_close(&T.pipe);
	nfsc_fh_free(&T.fh);
	nfsc_close(&T.px);
	free(T.version);
	free(T.inflight);
	free(T.written);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_cache_partial");
	s = CU_add_suite("cache_partial", suite_init, suite_cleanup);
	if (!s || !CU_add_test(s, "reads_of_written_offsets_never_go_upstream",
			       test_reads_of_written_offsets_never_go_upstream))
		return -1;
	return 0;
}
