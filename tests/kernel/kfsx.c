/* SPDX-License-Identifier: MIT */
/*
 * kfsx: the project's fsx model (tests/integration/fsx_model.c) driven
 * through the Linux kernel's NFS client. It runs in the QEMU guest
 * (tests/kernel/vm.sh) on a file of the NFS mount, with system calls
 * instead of NFS calls: pread, pwrite (also past EOF, leaving a gap),
 * ftruncate (down and up), reads and writes through a shared mmap (msync
 * on one in four), fsync, and close + open (close-to-open). Every
 * read is checked against the model (count and bytes); every KFSX_CHECK
 * (1000) operations and at the end the file is fsync'ed, its clean pages
 * dropped from the guest's page cache (POSIX_FADV_DONTNEED, so they are
 * read from the server again) and the whole file compared with the model,
 * its size with fstat.
 *
 * The model's seeded generator picks the operations, their offsets and
 * lengths and the written bytes, so a run is fixed by its seed and
 * operation count. With KFSX_REPLAY=PATH the program does no I/O at all:
 * it replays the same run on the model alone and writes the model's final
 * contents to PATH. The host (tests/kernel/ktest.sh) compares that with
 * the file in the upstream's export directory: what the guest's kernel
 * wrote must be what the server stored, byte for byte.
 *
 * Environment: KFSX_FILE the file (created or truncated; not with
 * KFSX_REPLAY), NFSC_FSX_SEED (1), NFSC_FSX_OPS (20000), KFSX_CHECK
 * (1000). The seed and count are printed first; on the first mismatch the
 * last operations are printed (fsx_fail) and the run stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"
#include "cunit_main.h"
#include "fsx_model.h"

#define KFSX_IO (128u * 1024)		/* the largest read or write */
#define KFSX_MAXSIZE (4u << 20)		/* the file never grows past this */
#define KFSX_PAGE 4096u			/* the guest's page size */

enum kfsx_kind {
	K_READ, K_WRITE, K_EXTEND, K_TRUNCATE, K_MAPREAD, K_MAPWRITE,
	K_FSYNC, K_REOPEN, K_NKINDS
};
_Static_assert(K_NKINDS <= FSX_KINDS_MAX, "kinds fit fsx_model's counts");

static const char *const kind_name[] = {
	"pread", "pwrite", "pwrite past EOF", "ftruncate", "mmap read",
	"mmap write", "fsync", "close+open",
};

static struct fsx_model M = {
	.tag = "kfsx",
	.name = "(KFSX_FILE)",
	.kind_name = kind_name,
	.io = KFSX_IO,
	.maxsize = KFSX_MAXSIZE,
};

static const char *path;	/* KFSX_FILE */
static const char *replay;	/* KFSX_REPLAY, or NULL */
static int fd = -1;
static uint64_t kind_us[K_NKINDS];	/* time spent per kind */

/* Microseconds on the monotonic clock. */
static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Pick the next operation from the seeded generator. */
static void pick(struct fsx_model *m, struct fsx_op *o)
{
	uint64_t r = ct_rng_below(&m->rng, 100);

	if (r < 32) {
		o->kind = K_READ;
		o->off = fsx_read_off(m);
		o->len = fsx_rand_len(m, KFSX_IO, KFSX_IO);
	} else if (r < 62) {
		o->kind = K_WRITE;
		fsx_pick_write(m, o, KFSX_IO);
	} else if (r < 70) {
		o->kind = K_EXTEND;
		o->off = fsx_gap_off(m, 2 * m->page);
		o->len = fsx_rand_len(m, m->maxsize - o->off, KFSX_IO);
	} else if (r < 74) {
		o->kind = K_TRUNCATE;
		o->len = ct_rng_below(&m->rng, 2) ? fsx_rand_off(m, m->maxsize)
						   : fsx_rand_off(m, m->size);
	} else if (r < 96) {
		/* A mapping cannot extend the file: stay inside it. */
		o->kind = r < 85 ? K_MAPREAD : K_MAPWRITE;
		o->off = m->size ? fsx_rand_off(m, m->size - 1) : 0;
		o->len = m->size ? fsx_rand_len(m, m->size - o->off, KFSX_IO) : 0;
	} else if (r < 98) {
		o->kind = K_FSYNC;
	} else {
		o->kind = K_REOPEN;
	}
}

/* Fill m->buf[0..n) from the generator (the same in a replay). */
static void fill(struct fsx_model *m, uint64_t n)
{
	for (uint64_t i = 0; i < n; i += 8) {
		uint64_t x = ct_rng_next(&m->rng);

		memcpy(m->buf + i, &x, n - i < 8 ? n - i : 8);
	}
}

/* Apply a write of m->buf[0..len) at off to the model. */
static void model_write(struct fsx_model *m, uint64_t off, uint64_t len)
{
	memcpy(m->model + off, m->buf, len);
	if (off + len > m->size)
		m->size = off + len;
}

/* Apply a size change to the model (bytes past the size stay zero). */
static void model_truncate(struct fsx_model *m, uint64_t size)
{
	if (size < m->size)
		memset(m->model + size, 0, m->size - size);
	m->size = size;
}

/* Compare got[0..n) read at off with the model; what names the read. */
static void compare(struct fsx_model *m, const uint8_t *got, uint64_t off,
		    uint64_t n, const char *what)
{
	size_t d = ct_first_diff(got, m->model + off, n);

	if (d != n)
		fsx_fail(m, "%s off %llu len %llu: byte at %llu is 0x%02x, "
			 "model 0x%02x", what, (unsigned long long)off,
			 (unsigned long long)n, (unsigned long long)(off + d),
			 got[d], m->model[off + d]);
}

/* pread [off, off+len) and check the count and bytes. */
static void do_read(struct fsx_model *m, uint64_t off, uint64_t len)
{
	uint64_t want = off >= m->size ? 0 : m->size - off < len ? m->size - off
								    : len;
	ssize_t n = pread(fd, m->buf2, len, (off_t)off);

	if (n < 0 || (uint64_t)n != want) {
		fsx_fail(m, "pread off %llu len %llu: %zd (%s), want %llu",
			 (unsigned long long)off, (unsigned long long)len, n,
			 n < 0 ? strerror(errno) : "short", (unsigned long long)want);
		return;
	}
	compare(m, m->buf2, off, want, "pread");
}

/* pwrite m->buf[0..len) at off. True if all was written. */
static int do_write(struct fsx_model *m, uint64_t off, uint64_t len)
{
	ssize_t n = pwrite(fd, m->buf, len, (off_t)off);

	if (n < 0 || (uint64_t)n != len) {
		fsx_fail(m, "pwrite off %llu len %llu: %zd (%s)",
			 (unsigned long long)off, (unsigned long long)len, n,
			 n < 0 ? strerror(errno) : "short");
		return 0;
	}
	return 1;
}

/* Map [off, off+len) of the file shared (PROT_READ, or also PROT_WRITE):
 * the mapping, with *skew set to off's distance from its page start. */
static uint8_t *map(struct fsx_model *m, uint64_t off, uint64_t len,
		    int writable, uint64_t *skew)
{
	uint64_t start = off & ~(uint64_t)(KFSX_PAGE - 1);
	void *p;

	*skew = off - start;
	p = mmap(NULL, len + *skew, PROT_READ | (writable ? PROT_WRITE : 0),
		 MAP_SHARED, fd, (off_t)start);
	if (p == MAP_FAILED) {
		fsx_fail(m, "mmap off %llu len %llu: %s", (unsigned long long)off,
			 (unsigned long long)len, strerror(errno));
		return NULL;
	}
	return p;
}

/* Read or write [o->off, +o->len) through a mapping; one write in four
 * is msync'ed (MS_SYNC: written and committed before it returns). */
static void do_map(struct fsx_model *m, const struct fsx_op *o)
{
	uint64_t skew;
	uint8_t *p;

	if (!o->len)
		return;
	if (!(p = map(m, o->off, o->len, o->kind == K_MAPWRITE, &skew)))
		return;
	if (o->kind == K_MAPREAD) {
		compare(m, p + skew, o->off, o->len, "mmap read");
	} else {
		memcpy(p + skew, m->buf, o->len);
		if (o->n % 4 == 0 && msync(p, o->len + skew, MS_SYNC) != 0)
			fsx_fail(m, "msync: %s", strerror(errno));
	}
	munmap(p, o->len + skew);
}

/* Run one operation on the file (not in a replay). */
static void run_io(struct fsx_model *m, const struct fsx_op *o)
{
	switch (o->kind) {
	case K_READ:
		do_read(m, o->off, o->len);
		break;
	case K_WRITE:
	case K_EXTEND:
		do_write(m, o->off, o->len);
		break;
	case K_TRUNCATE:
		if (ftruncate(fd, (off_t)o->len) != 0)
			fsx_fail(m, "ftruncate %llu: %s",
				 (unsigned long long)o->len, strerror(errno));
		break;
	case K_MAPREAD:
	case K_MAPWRITE:
		do_map(m, o);
		break;
	case K_FSYNC:
		if (fsync(fd) != 0)
			fsx_fail(m, "fsync: %s", strerror(errno));
		break;
	case K_REOPEN:
		close(fd);
		if ((fd = open(path, O_RDWR)) < 0)
			fsx_fail(m, "open %s: %s", path, strerror(errno));
		break;
	}
}

/* Run one operation: the generator's bytes, the I/O, then the model. */
static void run_op(struct fsx_model *m, const struct fsx_op *o)
{
	int writes = o->kind == K_WRITE || o->kind == K_EXTEND ||
		     o->kind == K_MAPWRITE;

	if (writes)
		fill(m, o->len);
	if (!replay)
		run_io(m, o);
	if (m->failed)
		return;
	if (writes)
		model_write(m, o->off, o->len);
	else if (o->kind == K_TRUNCATE)
		model_truncate(m, o->len);
}

/* fsync, drop the file's pages from the guest's cache, compare all. */
static void checkpoint(struct fsx_model *m, const char *when)
{
	struct stat st;
	uint64_t off;

	if (fsync(fd) != 0)
		fsx_fail(m, "%s: fsync: %s", when, strerror(errno));
	/* Clean pages only: the fsync made them all clean. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != m->size) {
		fsx_fail(m, "%s: fstat size %lld, model %llu", when,
			 (long long)st.st_size, (unsigned long long)m->size);
		return;
	}
	for (off = 0; off < m->size && !m->failed; off += KFSX_IO)
		do_read(m, off, KFSX_IO);
}

/* Write the model's contents to the replay file. True on success. */
static int write_replay(const struct fsx_model *m)
{
	FILE *f = fopen(replay, "wb");
	int ok = f && fwrite(m->model, 1, m->size, f) == m->size;

	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		fprintf(stderr, "kfsx: cannot write %s: %s\n", replay,
			strerror(errno));
	return ok;
}

/* The run (or its replay). */
static void test_kernel_client_matches_the_model(void)
{
	uint64_t t0 = nfsc_now_ms(), t;

	for (M.done = 0; M.done < M.nops && !M.failed; M.done++) {
		struct fsx_op *o = &M.hist[M.done % FSX_HISTORY];

		memset(o, 0, sizeof(*o));
		o->n = M.done;
		o->size_before = M.size;
		pick(&M, o);
		M.counts[o->kind]++;
		t = now_us();
		run_op(&M, o);
		kind_us[o->kind] += now_us() - t;
		if (!replay && (M.done + 1) % M.check_every == 0 && !M.failed)
			checkpoint(&M, "checkpoint");
	}
	if (!replay && !M.failed) {
		checkpoint(&M, "at the end");
		if (close(fd) != 0)
			fsx_fail(&M, "close: %s", strerror(errno));
		fd = -1;
	}
	CHECK_MSG(!M.failed, "kfsx: seed %llu failed", (unsigned long long)M.seed);
	CHECK_EQ(M.done, M.nops);
	if (replay)
		CHECK(write_replay(&M));
	printf("\nkfsx: seed %llu: %llu operations (", (unsigned long long)M.seed,
	       (unsigned long long)M.done);
	for (unsigned k = 0; k < K_NKINDS; k++)
		printf("%s%llu %s %llu ms", k ? ", " : "",
		       (unsigned long long)M.counts[k], kind_name[k],
		       (unsigned long long)(kind_us[k] / 1000));
	printf(") in %llu ms, final size %llu%s: %s\n",
	       (unsigned long long)(nfsc_now_ms() - t0), (unsigned long long)M.size,
	       replay ? " (replay)" : "", M.failed ? "FAILED" : "ok");
}

/* Read the parameters; open the file and allocate the model. */
static int suite_init(void)
{
	const char *s = getenv("NFSC_FSX_SEED");

	M.seed = s && *s ? ct_env_u64("NFSC_FSX_SEED", 1) : 1;
	M.nops = ct_env_u64("NFSC_FSX_OPS", 20000);
	M.check_every = ct_env_u64("KFSX_CHECK", 1000);
	M.page = KFSX_PAGE;
	replay = getenv("KFSX_REPLAY");
	path = getenv("KFSX_FILE");
	if (!M.nops || !M.check_every || (!replay && !path)) {
		fprintf(stderr, "kfsx: set KFSX_FILE (or KFSX_REPLAY), and "
			"non-zero NFSC_FSX_OPS and KFSX_CHECK\n");
		return -1;
	}
	M.model = calloc(M.maxsize + M.io, 1);
	M.buf = malloc(M.io);
	M.buf2 = malloc(M.io);
	if (!M.model || !M.buf || !M.buf2)
		return -1;
	ct_rng_seed(&M.rng, M.seed);
	printf("kfsx: seed %llu, %llu operations, file up to %llu bytes, %s "
	       "(reproduce: NFSC_FSX_SEED=%llu NFSC_FSX_OPS=%llu)\n",
	       (unsigned long long)M.seed, (unsigned long long)M.nops,
	       (unsigned long long)M.maxsize, replay ? replay : path,
	       (unsigned long long)M.seed, (unsigned long long)M.nops);
	if (!replay && (fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) {
		fprintf(stderr, "kfsx: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int test_register(void)
{
	return fsx_register(&M, "kfsx", "kernel_fsx", suite_init,
			    "kernel_client_matches_the_model",
			    test_kernel_client_matches_the_model);
}
