/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for disk/: the persistent page store. Each test runs on a
 * fresh directory under $TMPDIR (or /tmp) and waits for the store's worker
 * threads with disk_drain (blocking poll on its eventfd, no sleeps). They
 * pin: a store/load round trip keeps bytes, valid ranges, holes and
 * attributes; a reopened directory finds what was stored; a flipped byte
 * in the slab is a counted DISK_CORRUPT and the page is gone; culling keeps
 * bytes under the budget, oldest first, and a loaded page survives a scan;
 * a file drop; a changed page size empties the store; write, sync and read
 * errors (injected, and a real EFBIG from RLIMIT_FSIZE) turn the tier off
 * with one log line and no error to the caller; an unusable directory is
 * refused at open with a reason; the test gate holds disk work while the
 * caller's thread goes on; the page buffers of stores and loads are the
 * caller's, taken and given back on its thread, exactly one per store
 * with data until its completion is polled; a simulated power loss (slab writes not yet
 * fdatasynced reverted, the index as of its last durable commit), cut at
 * every event of a seeded workload, keeps every page stored before it in
 * durable mode and never serves a wrong byte in either mode.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>
#include <stddef.h>

#include "cunit_main.h"
#include "disk.h"
#include "disk_dir.h"
#include "disk_impl.h"	/* the record's layout, for the damage tests */

#define PAGE	4096u

static char tdir[256];
static unsigned nlogs;
static char lastlog[512];

/* Remove one path (nftw callback). */
static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* Make a fresh test directory in tdir. */
static void
setup_dir(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(tdir, sizeof(tdir), "%s/test_disk.XXXXXX", base);
	nlogs = 0;
	lastlog[0] = 0;
	if (!mkdtemp(tdir))
		CU_FAIL_FATAL("mkdtemp");
}

/* Remove the test directory. */
static void
teardown_dir(void)
{
	nftw(tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The log hook: count and keep the line. */
static void
log_hook(void *arg, const char *reason)
{
	(void)arg;
	nlogs++;
	snprintf(lastlog, sizeof(lastlog), "%s", reason);
}

/* Open the test store with budget pages of PAGE bytes. */
static struct disk *
open_store(uint32_t page, uint64_t pages)
{
	char err[256] = "";
	struct disk_params p = {
		.dir = tdir, .page_size = page, .budget_bytes = pages * page,
		.durable = true, .log = log_hook,
	};
	struct disk *d = disk_open(&p, err, sizeof(err));

	if (!d)
		fprintf(stderr, "disk_open: %s\n", err);
	return d;
}

/* The key of page pg of a file named by one byte. */
static struct disk_key
key(uint8_t file, uint64_t pg)
{
	struct disk_key k = { .fh_len = 3, .fh = { 'f', file, 0x99 }, .page = pg };

	return k;
}

/* What a load's callback saw. */
struct got {
	int calls;
	enum disk_result r;
	struct disk_page pg;
	uint8_t data[PAGE];
};

/* The load callback: copy what came. */
static void
got_cb(void *arg, enum disk_result r, const struct disk_page *pg)
{
	struct got *g = arg;

	g->calls++;
	g->r = r;
	if (pg) {
		g->pg = *pg;
		memcpy(g->data, pg->data, PAGE);
		g->pg.data = g->data;
	}
}

/* Load k and wait for the result. */
static void
load_wait(struct disk *d, struct disk_key k, struct got *g)
{
	memset(g, 0, sizeof(*g));
	disk_load(d, &k, got_cb, g);
	disk_drain(d);
	CU_ASSERT_EQUAL(g->calls, 1);
}

/* A page of file `file`, index pg: bytes [100,1100) and [2000,2100) valid,
 * [3000,4096) a hole; the byte at i is a function of file, pg and i. */
static void
make_page(struct disk_page *p, uint8_t *buf, uint8_t file, uint64_t pg)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < PAGE; i++)
		buf[i] = (uint8_t)(file * 31 + pg * 7 + i);
	p->data = buf;
	p->nvalid = 2;
	p->valid[0] = (struct disk_range){ 100, 1000 };
	p->valid[1] = (struct disk_range){ 2000, 100 };
	p->nholes = 1;
	p->holes[0] = (struct disk_range){ 3000, 1096 };
	p->attr = (struct disk_attr){ .size = 1 << 20, .fileid = 42 + file,
		.mtime_sec = 1000, .mtime_nsec = 5, .ctime_sec = 1001,
		.ctime_nsec = 6 };
}

/* Assert g holds make_page(file, pg): ranges, holes, attrs, the valid
 * bytes, and zeros outside them. */
static void
expect_page(const struct got *g, uint8_t file, uint64_t pg)
{
	struct disk_page want;
	uint8_t buf[PAGE];

	make_page(&want, buf, file, pg);
	CU_ASSERT_EQUAL_FATAL(g->r, DISK_HIT);
	CU_ASSERT_EQUAL(g->pg.nvalid, 2);
	CU_ASSERT_EQUAL(g->pg.valid[0].off, 100);
	CU_ASSERT_EQUAL(g->pg.valid[0].len, 1000);
	CU_ASSERT_EQUAL(g->pg.valid[1].off, 2000);
	CU_ASSERT_EQUAL(g->pg.nholes, 1);
	CU_ASSERT_EQUAL(g->pg.holes[0].off, 3000);
	CU_ASSERT_EQUAL(g->pg.holes[0].len, 1096);
	CU_ASSERT_EQUAL(memcmp(&g->pg.attr, &want.attr, sizeof(want.attr)), 0);
	CU_ASSERT_EQUAL(memcmp(g->data + 100, buf + 100, 1000), 0);
	CU_ASSERT_EQUAL(memcmp(g->data + 2000, buf + 2000, 100), 0);
	CU_ASSERT_EQUAL(g->data[99], 0);
	CU_ASSERT_EQUAL(g->data[1100], 0);
	CU_ASSERT_EQUAL(g->data[2100], 0);
}

/* Store make_page(file, pg). */
static void
store_page(struct disk *d, uint8_t file, uint64_t pg)
{
	struct disk_page p;
	uint8_t buf[PAGE];
	struct disk_key k = key(file, pg);

	make_page(&p, buf, file, pg);
	disk_store(d, &k, &p);
}

static void
test_round_trip_keeps_ranges_holes_attrs(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	store_page(d, 1, 5);
	store_page(d, 2, 0);
	disk_drain(d);
	load_wait(d, key(1, 5), &g);
	expect_page(&g, 1, 5);
	load_wait(d, key(2, 0), &g);
	expect_page(&g, 2, 0);
	load_wait(d, key(1, 1), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	{
		struct disk_key k15 = key(1, 5), k11 = key(1, 1);

		CU_ASSERT_TRUE(disk_has(d, &k15));
		CU_ASSERT_FALSE(disk_has(d, &k11));
	}
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.stores, 3);
	CU_ASSERT_EQUAL(st.store_bytes, 3 * 1100);
	CU_ASSERT_EQUAL(st.hits, 2);
	CU_ASSERT_EQUAL(st.hit_bytes, 2 * 1100);
	CU_ASSERT_EQUAL(st.misses, 1);
	CU_ASSERT_EQUAL(st.pages_held, 3);
	CU_ASSERT_EQUAL(st.bytes_held, 3 * PAGE);
	CU_ASSERT_EQUAL(st.budget_bytes, 16 * PAGE);
	CU_ASSERT_TRUE(st.lat_count >= 4);	/* stores may share one batch */
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
	CU_ASSERT_PTR_NULL(d);
}

static void
test_store_replaces_same_key(void)
{
	struct disk *d = open_store(PAGE, 4);
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	store_page(d, 9, 0);	/* other contents... */
	{
		struct disk_page p;
		uint8_t buf[PAGE];
		struct disk_key k = key(1, 0);

		make_page(&p, buf, 7, 0);	/* ...under file 1's key */
		disk_store(d, &k, &p);
	}
	disk_drain(d);
	load_wait(d, key(1, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_HIT);
	CU_ASSERT_EQUAL(g.data[100], (uint8_t)(7 * 31 + 100));
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

static void
test_reopen_finds_pages(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (unsigned i = 0; i < 10; i++)
		store_page(d, 3, i);
	disk_drain(d);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.pages_held, 10);
	CU_ASSERT_TRUE(disk_check(d));
	for (unsigned i = 0; i < 10; i++) {
		struct disk_key k = key(3, i);

		CU_ASSERT_TRUE(disk_has(d, &k));
		load_wait(d, k, &g);
		expect_page(&g, 3, i);
	}
	/* New stores go to free slots, not over the found ones. */
	store_page(d, 4, 0);
	disk_drain(d);
	load_wait(d, key(3, 0), &g);
	expect_page(&g, 3, 0);
	load_wait(d, key(4, 0), &g);
	expect_page(&g, 4, 0);
	disk_close(&d);
}

static void
test_reopen_with_other_page_size_empties(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 3, 0);
	disk_drain(d);
	disk_close(&d);
	d = open_store(2 * PAGE, 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.pages_held, 0);
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

static void
test_reopen_with_smaller_budget_drops_beyond(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;
	unsigned hits = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (unsigned i = 0; i < 12; i++)
		store_page(d, 3, i);
	disk_drain(d);
	disk_close(&d);
	d = open_store(PAGE, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	CU_ASSERT_TRUE(st.pages_held <= 4);
	CU_ASSERT_TRUE(disk_check(d));
	for (unsigned i = 0; i < 12; i++) {
		load_wait(d, key(3, i), &g);
		if (g.r == DISK_HIT) {
			expect_page(&g, 3, i);
			hits++;
		}
	}
	CU_ASSERT_EQUAL(hits, st.pages_held);
	disk_close(&d);
}

/* Flip one byte of the slab file at off. */
static void
flip_slab_byte(off_t off)
{
	char path[512];
	uint8_t b;
	int fd;

	snprintf(path, sizeof(path), "%s/slab", tdir);
	fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

static void
test_flipped_byte_is_corrupt_and_dropped(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 5, 0);	/* the first store takes slot 0 */
	disk_drain(d);
	flip_slab_byte(2050);	/* inside the valid [2000, 2100) */
	load_wait(d, key(5, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_CORRUPT);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.checksum_failures, 1);
	CU_ASSERT_EQUAL(st.hits, 0);
	CU_ASSERT_EQUAL(st.pages_held, 0);	/* dropped */
	{
		struct disk_key k = key(5, 0);

		CU_ASSERT_FALSE(disk_has(d, &k));
	}
	load_wait(d, key(5, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	CU_ASSERT_TRUE(disk_check(d));
	/* The caller refetches and stores it again: served again. */
	store_page(d, 5, 0);
	disk_drain(d);
	load_wait(d, key(5, 0), &g);
	expect_page(&g, 5, 0);
	CU_ASSERT_TRUE(disk_on(d));
	disk_close(&d);
}

static void
test_truncated_slab_is_corrupt(void)
{
	struct disk *d = open_store(PAGE, 16);
	char path[512];
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 5, 0);
	disk_drain(d);
	disk_close(&d);
	/* A lost data write: the record is there, the bytes are not. */
	snprintf(path, sizeof(path), "%s/slab", tdir);
	CU_ASSERT_EQUAL(truncate(path, 0), 0);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	load_wait(d, key(5, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_CORRUPT);
	load_wait(d, key(5, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	disk_close(&d);
}

static void
test_culling_keeps_bytes_under_budget(void)
{
	struct disk *d = open_store(PAGE, 64);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (unsigned i = 0; i < 300; i++) {
		store_page(d, 6, i);
		if (i % 32 == 31)
			disk_drain(d);
		disk_stats_get(d, &st);
		CU_ASSERT_TRUE(st.bytes_held <= 64 * PAGE);
	}
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_TRUE(st.bytes_held <= st.budget_bytes);
	CU_ASSERT_TRUE(st.pages_held >= 60);
	CU_ASSERT_EQUAL(st.stores, 300);
	CU_ASSERT_EQUAL(st.stores_dropped, 0);
	CU_ASSERT_EQUAL(st.culls, 300 - st.pages_held);
	CU_ASSERT_TRUE(disk_check(d));
	/* LRU: the newest are kept, the oldest went. */
	load_wait(d, key(6, 299), &g);
	expect_page(&g, 6, 299);
	load_wait(d, key(6, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	for (unsigned i = 0, has = 0; i <= 300; i++) {
		struct disk_key k = key(6, i);

		has += disk_has(d, &k);
		if (i == 300)
			CU_ASSERT_EQUAL(has, st.pages_held);
	}
	disk_close(&d);
}

static void
test_loaded_old_page_survives_culling(void)
{
	struct disk *d = open_store(PAGE, 64);
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	/* 63 pages: one slot stays free, so nothing is culled yet. */
	for (unsigned i = 0; i < 63; i++)
		store_page(d, 7, i);
	disk_drain(d);
	load_wait(d, key(7, 0), &g);	/* the oldest, now touched */
	CU_ASSERT_EQUAL(g.r, DISK_HIT);
	disk_drain(d);
	for (unsigned i = 0; i < 32; i++)
		store_page(d, 8, i);
	disk_drain(d);
	load_wait(d, key(7, 0), &g);
	expect_page(&g, 7, 0);
	load_wait(d, key(7, 1), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

static void
test_drop_file_drops_only_that_file(void)
{
	struct disk *d = open_store(PAGE, 64);
	struct disk_stats st;
	struct got g;
	struct disk_key k = key(1, 0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (unsigned i = 0; i < 20; i++) {
		store_page(d, 1, i);
		store_page(d, 2, i);
	}
	disk_drain(d);
	disk_drop_file(d, k.fh, k.fh_len);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.drops, 20);
	CU_ASSERT_EQUAL(st.pages_held, 20);
	for (unsigned i = 0; i < 20; i++) {
		struct disk_key k1 = key(1, i), k2 = key(2, i);

		CU_ASSERT_FALSE(disk_has(d, &k1));
		CU_ASSERT_TRUE(disk_has(d, &k2));
		load_wait(d, key(1, i), &g);
		CU_ASSERT_EQUAL(g.r, DISK_MISS);
		load_wait(d, key(2, i), &g);
		CU_ASSERT_EQUAL(g.r, DISK_HIT);
	}
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

/* Inject err into op, store or load, and check the tier went off once. */
static void
expect_degrade(enum disk_fault_op op, int err, const char *what)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	disk_drain(d);
	disk_fault_inject(d, op, err);
	if (op == DISK_FAULT_READ)
		load_wait(d, key(1, 0), &g);
	else
		store_page(d, 1, 1);
	disk_drain(d);
	CU_ASSERT_FALSE(disk_on(d));
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, what));
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, strerror(err)));
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_FALSE(st.on);
	/* Off: loads are DISK_OFF, stores dropped, no further log line. */
	load_wait(d, key(1, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_OFF);
	store_page(d, 1, 2);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_TRUE(st.stores_dropped >= 1);
	CU_ASSERT_EQUAL(nlogs, 1);
	disk_close(&d);
}

static void
test_enospc_on_write_degrades(void)
{
	expect_degrade(DISK_FAULT_WRITE, ENOSPC, "slab write");
}

static void
test_eio_on_sync_degrades(void)
{
	expect_degrade(DISK_FAULT_SYNC, EIO, "slab fdatasync");
}

static void
test_eio_on_read_degrades(void)
{
	expect_degrade(DISK_FAULT_READ, EIO, "slab read");
}

static void
test_file_size_limit_degrades(void)
{
	struct disk *d = open_store(PAGE, 64);
	struct rlimit old, lim;
	struct disk_stats st;
	void (*oldsig)(int);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	disk_drain(d);
	/* A real write error: past RLIMIT_FSIZE, write(2) fails EFBIG. */
	oldsig = signal(SIGXFSZ, SIG_IGN);
	CU_ASSERT_EQUAL(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = PAGE;
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (unsigned i = 1; i < 8; i++)
		store_page(d, 1, i);
	disk_drain(d);
	CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, oldsig);
	CU_ASSERT_FALSE(disk_on(d));
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, strerror(EFBIG)));
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	disk_close(&d);
}

/* cache_dir removed under a running tier (rm -rf): the next store batch
 * finds its slab unlinked and turns the tier off with one log line. */
static void
test_removed_slab_degrades(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	char path[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	disk_drain(d);
	CU_ASSERT_TRUE(disk_on(d));
	snprintf(path, sizeof(path), "%s/slab", tdir);
	CU_ASSERT_EQUAL_FATAL(unlink(path), 0);
	store_page(d, 1, 1);
	disk_drain(d);
	CU_ASSERT_FALSE(disk_on(d));
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "slab removed while in use"));
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(st.stores, 1);
	disk_close(&d);
}

static void
test_unusable_dir_refused_with_reason(void)
{
	char path[512], err[1024] = "", want[1024];
	struct disk_params p = { .page_size = PAGE, .budget_bytes = 16 * PAGE };
	int fd;

	snprintf(path, sizeof(path), "%s/plainfile", tdir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	p.dir = path;
	CU_ASSERT_PTR_NULL(disk_open(&p, err, sizeof(err)));
	CU_ASSERT_EQUAL(errno, ENOTDIR);
	snprintf(want, sizeof(want), "cache_dir %s: Not a directory", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	/* disk_open's reason is disk_dir_check's, the configuration's. */
	CU_ASSERT_EQUAL(disk_dir_check(path, err, sizeof(err)), ENOTDIR);
	CU_ASSERT_STRING_EQUAL(err, want);
	snprintf(path, sizeof(path), "%s/plainfile/sub", tdir);
	CU_ASSERT_PTR_NULL(disk_open(&p, err, sizeof(err)));
	CU_ASSERT_EQUAL(errno, ENOTDIR);
	snprintf(want, sizeof(want), "cache_dir %s: Not a directory", path);
	CU_ASSERT_STRING_EQUAL(err, want);
	/* A missing directory with a writable parent passes the check, which
	 * creates nothing (disk_open does). */
	snprintf(path, sizeof(path), "%s/not-yet", tdir);
	CU_ASSERT_EQUAL(disk_dir_check(path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	p.dir = tdir;
	p.page_size = 5000;
	CU_ASSERT_PTR_NULL(disk_open(&p, err, sizeof(err)));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "page size"));
}

/* A second store on the same directory (a second daemon) is refused while
 * the first is open, and allowed once it is closed. */
static void
test_second_open_of_dir_refused(void)
{
	struct disk *d = open_store(PAGE, 16), *d2;
	struct disk_params p = { .page_size = PAGE, .budget_bytes = 16 * PAGE };
	char err[256] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	p.dir = tdir;
	d2 = disk_open(&p, err, sizeof(err));
	CU_ASSERT_PTR_NULL(d2);
	CU_ASSERT_EQUAL(errno, EBUSY);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "another process"));
	disk_close(&d2);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL(d);
	disk_close(&d);
}

/* True when the store's eventfd has a completion waiting. */
static bool
fd_ready(struct disk *d)
{
	struct pollfd pfd = { .fd = disk_fd(d), .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void
test_gate_holds_disk_work_not_the_caller(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g, g2;
	struct disk_key k = key(1, 0), k2 = key(9, 9);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	disk_drain(d);
	disk_gate_close(d);
	memset(&g, 0, sizeof(g));
	memset(&g2, 0, sizeof(g2));
	disk_load(d, &k, got_cb, &g);
	store_page(d, 1, 1);
	/* Both workers hold their operation at the gate (a condition, not
	 * a time: each is counted before it waits). */
	while (disk_gate_waiting(d) < 2)
		usleep(1000);
	/* Meanwhile the caller's thread goes on: submits, polls, stats. */
	disk_load(d, &k2, got_cb, &g2);
	store_page(d, 2, 0);
	disk_poll(d);
	disk_stats_get(d, &st);
	CU_ASSERT_FALSE(fd_ready(d));
	CU_ASSERT_EQUAL(g.calls, 0);
	CU_ASSERT_EQUAL(g2.calls, 0);
	CU_ASSERT_EQUAL(st.stores, 1);
	CU_ASSERT_EQUAL(disk_gate_waiting(d), 2);
	disk_gate_open(d);
	disk_drain(d);
	CU_ASSERT_EQUAL(g.calls, 1);
	expect_page(&g, 1, 0);
	CU_ASSERT_EQUAL(g2.calls, 1);
	CU_ASSERT_EQUAL(g2.r, DISK_MISS);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.stores, 3);
	CU_ASSERT_EQUAL(disk_gate_waiting(d), 0);
	disk_close(&d);
}

static void
test_close_completes_queued_loads_as_off(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct got g;
	struct disk_key k = key(1, 0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_gate_close(d);
	memset(&g, 0, sizeof(g));
	disk_load(d, &k, got_cb, &g);
	disk_close(&d);
	CU_ASSERT_EQUAL(g.calls, 1);
	CU_ASSERT_EQUAL(g.r, DISK_OFF);
}

/* Store under k a page of no valid byte and holes [0, 1000) and
 * [1500, PAGE), with data NULL. */
static void
store_hole_page(struct disk *d, struct disk_key k)
{
	struct disk_page p;

	memset(&p, 0, sizeof(p));
	p.nholes = 2;
	p.holes[0] = (struct disk_range){ 0, 1000 };
	p.holes[1] = (struct disk_range){ 1500, PAGE - 1500 };
	p.attr = (struct disk_attr){ .size = 1 << 20, .fileid = 77,
		.mtime_sec = 9, .ctime_sec = 10 };
	disk_store(d, &k, &p);
}

/* Assert g is the page store_hole_page stored: no valid range, the two
 * holes, the attributes, and data all zeros. */
static void
expect_hole_page(const struct got *g)
{
	static const uint8_t zeros[PAGE];

	CU_ASSERT_EQUAL_FATAL(g->r, DISK_HIT);
	CU_ASSERT_EQUAL(g->pg.nvalid, 0);
	CU_ASSERT_EQUAL_FATAL(g->pg.nholes, 2);
	CU_ASSERT_EQUAL(g->pg.holes[0].off, 0);
	CU_ASSERT_EQUAL(g->pg.holes[0].len, 1000);
	CU_ASSERT_EQUAL(g->pg.holes[1].off, 1500);
	CU_ASSERT_EQUAL(g->pg.holes[1].len, PAGE - 1500);
	CU_ASSERT_EQUAL(g->pg.attr.fileid, 77);
	CU_ASSERT_EQUAL(g->pg.attr.mtime_sec, 9);
	CU_ASSERT_EQUAL(memcmp(g->data, zeros, PAGE), 0);
}

/* The caller's page buffers (disk_params buf_get/buf_put): at most
 * limit out, each handed out full of 0xee (so a byte the store or load
 * leaves unwritten shows), every call on the thread that made it. */
struct lender {
	unsigned limit, out, gets, puts, refused;
	bool other_thread;
	pthread_t owner;
};

static void *
lend_get(void *arg)
{
	struct lender *l = arg;
	void *b;

	l->other_thread |= !pthread_equal(pthread_self(), l->owner);
	if (l->out == l->limit || !(b = malloc(PAGE))) {
		l->refused++;
		return NULL;
	}
	memset(b, 0xee, PAGE);
	l->out++;
	l->gets++;
	return b;
}

static void
lend_put(void *arg, void *buf)
{
	struct lender *l = arg;

	l->other_thread |= !pthread_equal(pthread_self(), l->owner);
	CU_ASSERT_PTR_NOT_NULL(buf);
	l->out--;
	l->puts++;
	free(buf);
}

/*
 * Issue 42: a queued store's copy and a load's page are the caller's
 * buffers (the daemon lends them out of cache_size), taken by disk_store
 * and disk_load and given back by disk_poll, on the caller's thread
 * only. A store takes one only when it has data (a page all hole takes
 * none) and holds it until its completion is polled: the count is exact
 * while the writer is held. A store that gets none is dropped and
 * counted; a load that gets none completes at once as OFF. The bytes a
 * buffer held before do not reach the slab or a loaded page: the gaps
 * between valid ranges and the page past them read back as zeros.
 */
static void
test_buffers_are_the_callers_and_go_back(void)
{
	struct lender l = { .limit = 3, .owner = pthread_self() };
	char err[256] = "";
	struct disk_params p = {
		.dir = tdir, .page_size = PAGE, .budget_bytes = 16 * PAGE,
		.durable = true, .log = log_hook,
		.buf_get = lend_get, .buf_put = lend_put, .buf_arg = &l,
	};
	struct disk *d = disk_open(&p, err, sizeof(err));
	struct disk_stats st;
	struct disk_key k = key(1, 0);
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_gate_close(d);
	store_page(d, 1, 0);
	store_page(d, 1, 1);
	store_hole_page(d, key(2, 0));		/* no data: no buffer */
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.store_bufs, 2);
	CU_ASSERT_EQUAL(l.out, 2);
	store_page(d, 1, 2);
	store_page(d, 1, 3);			/* the lender has none left */
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.store_bufs, 3);
	CU_ASSERT_EQUAL(l.out, 3);
	CU_ASSERT_EQUAL(l.refused, 1);
	CU_ASSERT_EQUAL(st.stores_dropped, 1);
	memset(&g, 0, sizeof(g));
	disk_load(d, &k, got_cb, &g);		/* none for a load either */
	CU_ASSERT_EQUAL(g.calls, 1);
	CU_ASSERT_EQUAL(g.r, DISK_OFF);
	disk_gate_open(d);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.stores, 4);		/* three pages and the holes */
	CU_ASSERT_EQUAL(st.stores_dropped, 1);
	CU_ASSERT_EQUAL(st.store_bufs, 0);
	CU_ASSERT_EQUAL(l.out, 0);
	CU_ASSERT_EQUAL(l.puts, l.gets);
	/* A load holds its buffer until its callback has run. */
	disk_gate_close(d);
	memset(&g, 0, sizeof(g));
	disk_load(d, &k, got_cb, &g);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.load_bufs, 1);
	CU_ASSERT_EQUAL(l.out, 1);
	disk_gate_open(d);
	disk_drain(d);
	CU_ASSERT_EQUAL(g.calls, 1);
	expect_page(&g, 1, 0);			/* the gaps are zeros */
	CU_ASSERT_EQUAL(g.data[PAGE - 1], 0);	/* and past the last range */
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.load_bufs, 0);
	CU_ASSERT_EQUAL(l.out, 0);
	load_wait(d, key(2, 0), &g);
	expect_hole_page(&g);
	load_wait(d, key(1, 3), &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	CU_ASSERT_EQUAL(l.out, 0);
	/* A journal record's copy is malloc'd, not lent: counted apart
	 * until its completion is polled. */
	disk_gate_close(d);
	CU_ASSERT_EQUAL(disk_journal_put(d, &k, 1, true, "record", 6), 0);
	CU_ASSERT_EQUAL(disk_journal_put(d, &k, 2, false, "rec", 3), 0);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.journal_queued_bytes, 9);
	CU_ASSERT_EQUAL(l.out, 0);
	disk_gate_open(d);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.journal_queued_bytes, 0);
	disk_close(&d);
	CU_ASSERT_EQUAL(l.out, 0);
	CU_ASSERT_FALSE(l.other_thread);
}

static void
test_hole_page_stores_no_bytes_and_survives_reopen(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct stat sb;
	char slab[300];
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_hole_page(d, key(5, 0));
	disk_drain(d);
	load_wait(d, key(5, 0), &g);
	expect_hole_page(&g);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.stores, 1);
	CU_ASSERT_EQUAL(st.store_bytes, 0);
	CU_ASSERT_EQUAL(st.hits, 1);
	CU_ASSERT_EQUAL(st.hit_bytes, 0);
	CU_ASSERT_EQUAL(st.pages_held, 1);	/* the record holds a slot */
	/* No data byte was written: the slab is still empty. */
	snprintf(slab, sizeof(slab), "%s/slab", tdir);
	CU_ASSERT_EQUAL_FATAL(stat(slab, &sb), 0);
	CU_ASSERT_EQUAL(sb.st_size, 0);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	load_wait(d, key(5, 0), &g);
	expect_hole_page(&g);
	/* Beside a page with data, after a second reopen. */
	store_page(d, 5, 1);
	disk_drain(d);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	load_wait(d, key(5, 0), &g);
	expect_hole_page(&g);
	load_wait(d, key(5, 1), &g);
	expect_page(&g, 5, 1);
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

/*
 * Power loss (issue 17). A hook on the store's writer thread
 * (disk_io_hook) keeps an undo record of every slab write since the last
 * slab fdatasync and a copy of the index file after every commit. At the
 * cut, chosen as an event of the workload, the hook builds the directory
 * a power loss would leave in a second place (img/): the slab with its
 * unsynced writes reverted (to the bytes they replaced, to garbage, or
 * each one at random kept, reverted or garbage) and the index as of its
 * last durable commit (in non-durable mode, MDB_NOMETASYNC, the last one
 * or the one before). The live store goes on and is thrown away; img/ is
 * opened as after a reboot and every key is loaded.
 */
#define PL_SEED		0x5eed0017u
#define PL_STORES	24		/* stores in the workload */
#define PL_FILES	3
#define PL_PAGES	4		/* 12 keys: pages are replaced */
#define PL_SLOTS	16		/* slots are reused, never culled */
#define PL_CUTS		21		/* cut after N = 0..20 slab writes */

enum pl_revert { PL_OLD, PL_GARBAGE, PL_MIXED };

/* A slab write since the last fdatasync and the bytes it replaced. */
struct pl_write {
	uint64_t off;
	size_t len, oldlen;
	uint8_t old[PAGE];
};

/* One power-loss run: the case, what the hook recorded, the cut. */
struct pl {
	bool durable;
	enum pl_revert revert;
	enum disk_io_event cut_ev;	/* cut at the first such event ... */
	unsigned cut_after;		/* ... after this many slab writes */
	struct disk *d;
	int slab;			/* read-only view of the live slab */
	char run[300], img[300], snap[2][300];
	unsigned writes, nsnap, npend;
	uint64_t synced_size;
	struct pl_write pend[PL_STORES];
	bool cut, io_err;
	uint64_t completed;		/* stores counted done at the cut */
	unsigned started;		/* slab writes issued at the cut */
	uint64_t rnd;
};

/* What a set of runs saw. */
struct pl_tally {
	unsigned runs, hits, done_hits, inflight_hits, corrupt, misses;
	unsigned inflight_cuts;
};

/* splitmix64. */
static uint64_t
pl_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The key store i writes (file, page), a function of the seed. */
static struct disk_key
pl_key(unsigned i)
{
	uint64_t s = PL_SEED + i;
	uint64_t r = pl_rand(&s);

	return key((uint8_t)(r % PL_FILES), (r >> 8) % PL_PAGES);
}

/* The page store i writes: 1..3 valid ranges, maybe a hole, bytes and
 * attributes (mtime_nsec = i) of its own. */
static void
pl_page(unsigned i, struct disk_page *p, uint8_t *buf)
{
	uint64_t s = PL_SEED ^ ((uint64_t)i << 32);
	struct disk_key k = pl_key(i);

	memset(p, 0, sizeof(*p));
	for (unsigned b = 0; b < PAGE; b += 8) {
		uint64_t r = pl_rand(&s);

		memcpy(buf + b, &r, 8);
	}
	p->data = buf;
	p->nvalid = 1 + pl_rand(&s) % 3;
	for (uint32_t j = 0; j < p->nvalid; j++)
		p->valid[j] = (struct disk_range){
			(uint32_t)(j * 1365 + pl_rand(&s) % 500),
			(uint32_t)(1 + pl_rand(&s) % 800) };
	p->nholes = pl_rand(&s) % 2;
	p->holes[0] = (struct disk_range){ 4032, 64 };
	p->attr = (struct disk_attr){ .size = 1 << 20, .fileid = k.fh[1],
		.mtime_sec = 2000, .mtime_nsec = i, .ctime_sec = 2001,
		.ctime_nsec = (uint32_t)k.page };
}

/* "dir/name" into out. */
static void
pl_path(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* Copy file src to dst (replacing it). false on an error. */
static bool
pl_copy(const char *src, const char *dst)
{
	uint8_t buf[65536];
	int in = open(src, O_RDONLY), out;
	ssize_t r = 0;
	bool ok;

	if (in < 0)
		return false;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ok = out >= 0;
	while (ok && (r = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t)r) == r;
	ok = ok && r == 0;
	close(in);
	if (out >= 0)
		close(out);
	return ok;
}

/* Size of the file open as fd. */
static uint64_t
pl_size(int fd)
{
	struct stat sb;

	return fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* The index copy a power loss leaves: the last commit's, or in
 * non-durable mode maybe the one before (its metapage was not synced). */
static const char *
pl_durable_index(struct pl *pl)
{
	bool last = pl->durable || pl->nsnap == 0 || pl_rand(&pl->rnd) % 2;

	return pl->snap[(pl->nsnap + (last ? 0 : 1)) % 2];
}

/* Undo the unsynced slab writes in the image slab fd, newest first. */
static bool
pl_revert_slab(struct pl *pl, int fd)
{
	uint8_t junk[PAGE], zero[PAGE] = { 0 };
	bool ok = true;

	for (unsigned i = pl->npend; i-- > 0;) {
		const struct pl_write *w = &pl->pend[i];
		unsigned how = pl->revert == PL_MIXED ? pl_rand(&pl->rnd) % 3 :
			       pl->revert == PL_OLD ? 1 : 2;

		for (unsigned b = 0; b < PAGE; b += 8) {
			uint64_t r = pl_rand(&pl->rnd);

			memcpy(junk + b, &r, 8);
		}
		if (how == 1)	/* the old bytes, zeros where there were none */
			ok = ok && pwrite(fd, zero, w->len, (off_t)w->off) ==
				   (ssize_t)w->len &&
			     pwrite(fd, w->old, w->oldlen, (off_t)w->off) ==
				   (ssize_t)w->oldlen;
		else if (how == 2)
			ok = ok && pwrite(fd, junk, w->len, (off_t)w->off) ==
				   (ssize_t)w->len;
	}
	if (pl->revert == PL_OLD)	/* the size as of the last sync, too */
		ok = ok && ftruncate(fd, (off_t)pl->synced_size) == 0;
	return ok;
}

/* Cut the power: build img/ as the disk would hold it now. */
static void
pl_cut(struct pl *pl)
{
	struct disk_stats st;
	char from[320], to[320];
	int fd;

	pl->cut = true;
	disk_stats_get(pl->d, &st);
	pl->completed = st.stores;
	pl->started = pl->writes;
	if (mkdir(pl->img, 0700) != 0)
		pl->io_err = true;
	pl_path(from, sizeof(from), pl->run, "slab");
	pl_path(to, sizeof(to), pl->img, "slab");
	if (!pl_copy(from, to) || (fd = open(to, O_RDWR)) < 0) {
		pl->io_err = true;
		return;
	}
	if (!pl_revert_slab(pl, fd))
		pl->io_err = true;
	close(fd);
	pl_path(to, sizeof(to), pl->img, "index.mdb");
	if (!pl_copy(pl_durable_index(pl), to))
		pl->io_err = true;
	pl_path(from, sizeof(from), pl->run, "index.mdb-lock");
	pl_path(to, sizeof(to), pl->img, "index.mdb-lock");
	if (!pl_copy(from, to))		/* stale, as after a reboot */
		pl->io_err = true;
}

/* Copy the live index after a commit (alternating two copies). */
static void
pl_snapshot(struct pl *pl)
{
	char from[320];

	pl_path(from, sizeof(from), pl->run, "index.mdb");
	pl->nsnap++;
	if (!pl_copy(from, pl->snap[pl->nsnap % 2]))
		pl->io_err = true;
}

/* Keep the bytes a slab write is about to replace. */
static void
pl_record_write(struct pl *pl, uint64_t off, size_t len)
{
	struct pl_write *w;
	ssize_t r;

	if (pl->npend == PL_STORES || len > PAGE) {
		pl->io_err = true;
		return;
	}
	w = &pl->pend[pl->npend++];
	w->off = off;
	w->len = len;
	r = pread(pl->slab, w->old, len, (off_t)off);
	w->oldlen = r > 0 ? (size_t)r : 0;
}

/* The I/O hook (writer thread): record, and cut at the chosen event. */
static void
pl_hook(void *arg, enum disk_io_event ev, uint64_t off, size_t len)
{
	struct pl *pl = arg;
	bool at = !pl->cut && ev == pl->cut_ev && pl->writes >= pl->cut_after;

	if (ev == DISK_IO_SLAB_WRITE) {
		if (at)		/* before this write reaches the disk */
			pl_cut(pl);
		pl_record_write(pl, off, len);
		pl->writes++;
		return;
	}
	if (ev == DISK_IO_SLAB_SYNC) {
		pl->npend = 0;
		pl->synced_size = pl_size(pl->slab);
	} else {
		pl_snapshot(pl);
	}
	if (at)			/* right after the sync or commit returned */
		pl_cut(pl);
}

/* A fresh live store in run/, recorded from its first operation. */
static bool
pl_begin(struct pl *pl)
{
	char err[256] = "", path[320];
	struct disk_params p = {
		.dir = pl->run, .page_size = PAGE,
		.budget_bytes = (uint64_t)PL_SLOTS * PAGE,
		.durable = pl->durable, .log = log_hook,
	};

	nftw(pl->run, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	nftw(pl->img, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	pl->d = disk_open(&p, err, sizeof(err));
	if (!pl->d)
		return false;
	pl_path(path, sizeof(path), pl->run, "slab");
	pl->slab = open(path, O_RDONLY);
	pl->synced_size = pl_size(pl->slab);
	pl->nsnap = pl->writes = pl->npend = 0;
	pl->cut = pl->io_err = false;
	pl_path(path, sizeof(path), pl->run, "index.mdb");
	if (pl->slab < 0 || !pl_copy(path, pl->snap[0]))
		return false;
	disk_io_hook(pl->d, pl_hook, pl);
	return true;
}

/* Store the workload's page i. */
static void
pl_store(struct pl *pl, unsigned i)
{
	struct disk_page p;
	uint8_t buf[PAGE];
	struct disk_key k = pl_key(i);

	pl_page(i, &p, buf);
	disk_store(pl->d, &k, &p);
}

/*
 * Store the workload in rounds of 1..4 pages: the first page of a round
 * alone, the others as one batch queued while the gate holds the writer
 * on the first (a condition, not a time), so every run sees the same
 * batches, the same events and so the same cut points. Then cut (if the
 * event never came) and close.
 */
static void
pl_workload(struct pl *pl)
{
	uint64_t s = PL_SEED;
	struct disk_stats st;
	unsigned i = 0;

	while (i < PL_STORES) {
		unsigned n = (unsigned)(pl_rand(&s) % 4);

		disk_gate_close(pl->d);
		pl_store(pl, i++);
		while (disk_gate_waiting(pl->d) < 1)
			usleep(1000);
		for (; n > 0 && i < PL_STORES; n--)
			pl_store(pl, i++);
		disk_gate_open(pl->d);
		disk_drain(pl->d);
	}
	if (!pl->cut)		/* the event never came: cut when idle */
		pl_cut(pl);
	disk_io_hook(pl->d, NULL, NULL);
	disk_stats_get(pl->d, &st);
	/* The model's premises: every store done, none culled. */
	CU_ASSERT_EQUAL(st.stores, PL_STORES);
	CU_ASSERT_EQUAL(st.stores_dropped, 0);
	CU_ASSERT_EQUAL(st.culls, 0);
	disk_close(&pl->d);
	close(pl->slab);
}

/* The case, for a failure message (key -1/-1: not about one key). */
static void
pl_say(const struct pl *pl, const char *what, int f, int pg)
{
	static const char *const rev[] = { "old", "garbage", "mixed" };
	static const char *const ev[] = { "write", "sync", "commit" };

	fprintf(stderr, "power loss %s, revert %s, cut at %s after %u writes"
		" (%u issued, %llu done), key %d/%d: %s\n",
		pl->durable ? "durable" : "non-durable", rev[pl->revert],
		ev[pl->cut_ev], pl->cut_after, pl->started,
		(unsigned long long)pl->completed, f, pg, what);
}

#define PL_CHECK(pl, c, f, pg) do { \
	if (!(c)) \
		pl_say(pl, #c, (int)(f), (int)(pg)); \
	CU_ASSERT(c); \
} while (0)

/* The last store of key k counted done at the cut, or -1. */
static int
pl_last_done(const struct pl *pl, struct disk_key k)
{
	int last = -1;

	for (unsigned i = 0; i < pl->completed && i < PL_STORES; i++) {
		struct disk_key ki = pl_key(i);

		if (memcmp(&ki, &k, sizeof(k)) == 0)
			last = (int)i;
	}
	return last;
}

/* True when g is exactly what store v wrote under key k: key, ranges,
 * holes, attributes, the valid bytes and zeros elsewhere. */
static bool
pl_is_store(const struct got *g, unsigned v, struct disk_key k)
{
	struct disk_key kv = pl_key(v);
	struct disk_page want;
	uint8_t buf[PAGE], exp[PAGE] = { 0 };

	if (v >= PL_STORES || memcmp(&kv, &k, sizeof(k)) != 0)
		return false;
	pl_page(v, &want, buf);
	for (uint32_t j = 0; j < want.nvalid; j++)
		memcpy(exp + want.valid[j].off, buf + want.valid[j].off,
		       want.valid[j].len);
	return g->pg.nvalid == want.nvalid && g->pg.nholes == want.nholes &&
	       memcmp(g->pg.valid, want.valid,
		      sizeof(want.valid[0]) * want.nvalid) == 0 &&
	       memcmp(g->pg.holes, want.holes,
		      sizeof(want.holes[0]) * want.nholes) == 0 &&
	       memcmp(&g->pg.attr, &want.attr, sizeof(want.attr)) == 0 &&
	       memcmp(g->data, exp, PAGE) == 0;
}

/* Load key (f, pg) from the image and check what came against the cut. */
static void
pl_check_key(struct pl *pl, struct disk *d, unsigned f, unsigned pg,
	     struct pl_tally *t)
{
	struct disk_key k = key((uint8_t)f, pg);
	int done = pl_last_done(pl, k);
	unsigned v;
	struct got g;

	load_wait(d, k, &g);
	switch (g.r) {
	case DISK_HIT:
		v = g.pg.attr.mtime_nsec;
		t->hits++;
		t->done_hits += (int)v == done;
		t->inflight_hits += v >= pl->completed;
		/* Exactly one store's page, issued before the cut; durable:
		 * the last one done, or a later one in flight. */
		PL_CHECK(pl, v < pl->started && pl_is_store(&g, v, k), f, pg);
		PL_CHECK(pl, !pl->durable || (int)v >= done, f, pg);
		break;
	case DISK_MISS:
		t->misses++;
		PL_CHECK(pl, !pl->durable || done < 0, f, pg);
		break;
	case DISK_CORRUPT:
		t->corrupt++;
		PL_CHECK(pl, !pl->durable, f, pg);
		load_wait(d, k, &g);	/* dropped: gone now */
		PL_CHECK(pl, g.r == DISK_MISS, f, pg);
		break;
	default:
		PL_CHECK(pl, g.r != DISK_OFF, f, pg);
	}
}

/* Open img/ as after the reboot, check every key, store again. */
static void
pl_verify(struct pl *pl, struct pl_tally *t)
{
	char err[256] = "";
	struct disk_params p = {
		.dir = pl->img, .page_size = PAGE,
		.budget_bytes = (uint64_t)PL_SLOTS * PAGE,
		.durable = pl->durable, .log = log_hook,
	};
	struct disk *d = disk_open(&p, err, sizeof(err));
	unsigned corrupt = t->corrupt;
	struct disk_stats st;
	struct disk_page pg;
	uint8_t buf[PAGE];
	struct disk_key k = pl_key(PL_STORES - 1);
	struct got g;

	PL_CHECK(pl, d != NULL, -1, -1);
	if (!d)
		return;
	for (unsigned f = 0; f < PL_FILES; f++)
		for (unsigned i = 0; i < PL_PAGES; i++)
			pl_check_key(pl, d, f, i, t);
	disk_drain(d);
	disk_stats_get(d, &st);
	PL_CHECK(pl, st.checksum_failures == t->corrupt - corrupt, -1, -1);
	PL_CHECK(pl, st.on && disk_check(d), -1, -1);
	pl_page(PL_STORES - 1, &pg, buf);	/* and it stores again */
	disk_store(d, &k, &pg);
	disk_drain(d);
	load_wait(d, k, &g);
	PL_CHECK(pl, g.r == DISK_HIT && pl_is_store(&g, PL_STORES - 1, k), -1, -1);
	disk_close(&d);
}

/* One power-loss run: the workload, a cut, the reboot, the checks. */
static void
pl_run(struct pl *pl, enum disk_io_event ev, unsigned after,
       struct pl_tally *t)
{
	pl->cut_ev = ev;
	pl->cut_after = after;
	pl->rnd = PL_SEED ^ ((uint64_t)pl->revert << 40) ^
		  ((uint64_t)ev << 32) ^ after;
	CU_ASSERT_FATAL(pl_begin(pl));
	pl_workload(pl);
	PL_CHECK(pl, !pl->io_err, -1, -1);
	t->runs++;
	t->inflight_cuts += pl->completed < pl->started;
	pl_verify(pl, t);
}

/*
 * Cut at each kind of event after N = 0..PL_CUTS-1 slab writes, for one
 * durability setting; the revert mode turns with N and the event, so each
 * mode meets each event at 7 cut points (every combination would take
 * three times as many fdatasyncs for little more).
 */
static void
pl_sweep(bool durable, struct pl_tally *t)
{
	static const enum disk_io_event evs[] = { DISK_IO_SLAB_WRITE,
		DISK_IO_SLAB_SYNC, DISK_IO_INDEX_COMMIT };
	struct pl *pl = calloc(1, sizeof(*pl));

	CU_ASSERT_PTR_NOT_NULL_FATAL(pl);
	pl->durable = durable;
	pl_path(pl->run, sizeof(pl->run), tdir, "run");
	pl_path(pl->img, sizeof(pl->img), tdir, "img");
	pl_path(pl->snap[0], sizeof(pl->snap[0]), tdir, "snap0");
	pl_path(pl->snap[1], sizeof(pl->snap[1]), tdir, "snap1");
	for (unsigned n = 0; n < PL_CUTS; n++)
		for (unsigned e = 0; e < 3; e++) {
			if (!durable && evs[e] == DISK_IO_SLAB_SYNC)
				continue;	/* the slab is never synced */
			pl->revert = (enum pl_revert)((n + e) % 3);
			pl_run(pl, evs[e], n, t);
		}
	free(pl);
}

static void
test_power_loss_durable_keeps_every_completed_page(void)
{
	struct pl_tally t = { 0 };

	pl_sweep(true, &t);
	CU_ASSERT_EQUAL(t.runs, 3 * PL_CUTS);
	/* Nothing committed is ever corrupt; stores done before the cut
	 * were found, and stores in flight at it too (committed, not yet
	 * counted): the cuts did fall in the middle of batches. */
	CU_ASSERT_EQUAL(t.corrupt, 0);
	CU_ASSERT(t.done_hits > 0);
	CU_ASSERT(t.inflight_hits > 0);
	CU_ASSERT(t.inflight_cuts > 0);
	CU_ASSERT_EQUAL(nlogs, 0);
}

static void
test_power_loss_nondurable_loses_pages_never_serves_wrong(void)
{
	struct pl_tally t = { 0 };

	pl_sweep(false, &t);
	CU_ASSERT_EQUAL(t.runs, 2 * PL_CUTS);
	/* Records whose slab bytes were lost were caught by the checksum,
	 * and pages whose writes happened to reach the disk were served. */
	CU_ASSERT(t.corrupt > 0);
	CU_ASSERT(t.hits > 0);
	CU_ASSERT(t.misses > 0);
	CU_ASSERT_EQUAL(nlogs, 0);
}


/* ---- the journal ---- */

/* What a journal scan saw: "FILE:PAGE:SEQ:VALUE" tokens in order. */
struct jseen {
	char log[512];
	long n;
};

static int
jscan_cb(void *arg, const struct disk_key *k, uint64_t seq, const void *rec,
	 size_t len)
{
	struct jseen *js = arg;
	size_t o = strlen(js->log);

	snprintf(js->log + o, sizeof(js->log) - o, "%s%u:%llu:%llu:%.*s",
		 o ? " " : "", k->fh[1], (unsigned long long)k->page,
		 (unsigned long long)seq, (int)len, (const char *)rec);
	js->n++;
	return 0;
}

/* The sync callback: durable into *(int *)arg (1 or -1). */
static void
jsync_cb(void *arg, bool durable)
{
	*(int *)arg = durable ? 1 : -1;
}

/* Sync d's journal and wait for the callback; its value. */
static int
jsync(struct disk *d)
{
	int done = 0;

	CU_ASSERT_EQUAL_FATAL(disk_journal_sync(d, jsync_cb, &done), 0);
	disk_drain(d);
	return done;
}

static void
jput(struct disk *d, uint8_t file, uint64_t pg, uint64_t seq, bool replace,
     const char *val)
{
	struct disk_key k = key(file, pg);

	CU_ASSERT_EQUAL(disk_journal_put(d, &k, seq, replace, val, strlen(val)), 0);
}

/* A page's records come back in sequence order after a reopen; a
 * replacing put leaves only itself on its page; a del removes every
 * record of its page and no other; the gauges follow. */
static void
test_journal_pages_sequences_replace_del(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_key k;
	struct disk_stats st;
	struct jseen js;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	jput(d, 1, 5, 2, false, "b");
	jput(d, 1, 5, 1, false, "a");
	jput(d, 1, 6, 3, false, "c");
	jput(d, 2, 5, 4, false, "d");
	CU_ASSERT_EQUAL(jsync(d), 1);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.journal_records, 4);
	CU_ASSERT_EQUAL(st.journal_bytes, 4);
	disk_close(&d);

	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memset(&js, 0, sizeof(js));
	CU_ASSERT_EQUAL(disk_journal_scan(d, jscan_cb, &js), 4);
	CU_ASSERT_STRING_EQUAL(js.log, "1:5:1:a 1:5:2:b 1:6:3:c 2:5:4:d");
	/* Replace page (1, 5) by one record; delete page (1, 6). */
	jput(d, 1, 5, 7, true, "full");
	k = key(1, 6);
	CU_ASSERT_EQUAL(disk_journal_del(d, &k), 0);
	k = key(3, 0);
	CU_ASSERT_EQUAL(disk_journal_del(d, &k), 0);	/* none: fine */
	CU_ASSERT_EQUAL(jsync(d), 1);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.journal_records, 2);
	CU_ASSERT_EQUAL(st.journal_bytes, 5);
	disk_close(&d);

	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memset(&js, 0, sizeof(js));
	CU_ASSERT_EQUAL(disk_journal_scan(d, jscan_cb, &js), 2);
	CU_ASSERT_STRING_EQUAL(js.log, "1:5:7:full 2:5:4:d");
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.journal_records, 2);
	CU_ASSERT_EQUAL(st.journal_bytes, 5);
	/* A put after a del of the same page, queued together, wins. */
	k = key(2, 5);
	CU_ASSERT_EQUAL(disk_journal_del(d, &k), 0);
	jput(d, 2, 5, 8, false, "e");
	CU_ASSERT_EQUAL(jsync(d), 1);
	memset(&js, 0, sizeof(js));
	CU_ASSERT_EQUAL(disk_journal_scan(d, jscan_cb, &js), 2);
	CU_ASSERT_STRING_EQUAL(js.log, "1:5:7:full 2:5:8:e");
	CU_ASSERT_EQUAL(nlogs, 0);
	disk_close(&d);
}

/* ---- a damaged index (issue 37, items 2 and 3) ---- */

/* Open tdir's index.mdb with LMDB directly (the store closed). */
static MDB_env *
idx_env(void)
{
	char path[512];
	MDB_env *env = NULL;

	snprintf(path, sizeof(path), "%s/index.mdb", tdir);
	CU_ASSERT_EQUAL_FATAL(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 8);
	mdb_env_set_mapsize(env, (size_t)64 << 20);
	CU_ASSERT_EQUAL_FATAL(mdb_env_open(env, path, MDB_NOSUBDIR, 0600), 0);
	return env;
}

/* The encoded pages key of k (as disk.c encodes it). */
static size_t
enc_key(struct disk_key k, uint8_t *b)
{
	b[0] = k.fh_len;
	memcpy(b + 1, k.fh, k.fh_len);
	for (int i = 0; i < 8; i++)
		b[1 + k.fh_len + i] = (uint8_t)(k.page >> (56 - 8 * i));
	return 1 + (size_t)k.fh_len + 8;
}

/*
 * In the closed store: flip bit `bit` of byte `at` of k's record value
 * (at < 0: none), then, when to is not k, move the record under `to`.
 */
static void
idx_edit_record(struct disk_key k, long at, int bit, struct disk_key to)
{
	MDB_env *env = idx_env();
	MDB_txn *txn;
	MDB_dbi dbi;
	uint8_t kb[80], tb[80], buf[4096];
	MDB_val kv = { enc_key(k, kb), kb }, tv = { enc_key(to, tb), tb }, v;

	CU_ASSERT_EQUAL_FATAL(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_dbi_open(txn, "pages", 0, &dbi), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_get(txn, dbi, &kv, &v), 0);
	CU_ASSERT_FATAL(v.mv_size <= sizeof(buf) && at < (long)v.mv_size);
	memcpy(buf, v.mv_data, v.mv_size);
	v.mv_data = buf;
	if (at >= 0)
		buf[at] ^= (uint8_t)(1u << bit);
	if (tv.mv_size != kv.mv_size || memcmp(tb, kb, kv.mv_size) != 0)
		CU_ASSERT_EQUAL(mdb_del(txn, dbi, &kv, NULL), 0);
	CU_ASSERT_EQUAL(mdb_put(txn, dbi, &tv, &v, 0), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* One field of a stored record: where it is. */
struct rec_field {
	const char *name;
	long at;
};

/* The fields of make_page's record: every fixed field, each range's
 * offset and length (valid ranges first, then the hole). */
static const struct rec_field rec_fields[] = {
	{ "magic", offsetof(struct disk_rec, magic) },
	{ "slot", offsetof(struct disk_rec, slot) },
	{ "data_len", offsetof(struct disk_rec, data_len) },
	{ "nvalid", offsetof(struct disk_rec, nvalid) },
	{ "nholes", offsetof(struct disk_rec, nholes) },
	{ "checksum", offsetof(struct disk_rec, checksum) },
	{ "seq", offsetof(struct disk_rec, seq) },
	{ "attr.size", offsetof(struct disk_rec, attr.size) + 2 },
	{ "attr.fileid", offsetof(struct disk_rec, attr.fileid) },
	{ "attr.mtime_sec", offsetof(struct disk_rec, attr.mtime_sec) },
	{ "attr.mtime_nsec", offsetof(struct disk_rec, attr.mtime_nsec) },
	{ "attr.ctime_sec", offsetof(struct disk_rec, attr.ctime_sec) },
	{ "attr.ctime_nsec", offsetof(struct disk_rec, attr.ctime_nsec) },
	{ "rec_sum", offsetof(struct disk_rec, rec_sum) },
	{ "valid[0].off", sizeof(struct disk_rec) + 0 },
	{ "valid[0].len", sizeof(struct disk_rec) + 4 },
	{ "valid[1].off", sizeof(struct disk_rec) + 8 },
	{ "valid[1].len", sizeof(struct disk_rec) + 12 },
	{ "holes[0].off", sizeof(struct disk_rec) + 16 + 1 },	/* 3000 ->
								 * 3000^256 */
	{ "holes[0].len", sizeof(struct disk_rec) + 20 },
};

/* After an edit: the store opens ON, counts one failure, and k loads as a
 * miss (the record was dropped at the scan); the other page is intact. */
static void
expect_refused(struct disk_key k, const char *field)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	if (st.checksum_failures != 1)
		fprintf(stderr, "field %s: %llu failures\n", field,
			(unsigned long long)st.checksum_failures);
	CU_ASSERT_EQUAL(st.checksum_failures, 1);
	CU_ASSERT_TRUE(disk_on(d));
	CU_ASSERT_EQUAL(st.pages_held, 1);
	load_wait(d, k, &g);
	CU_ASSERT_EQUAL(g.r, DISK_MISS);
	load_wait(d, key(1, 1), &g);
	expect_page(&g, 1, 1);
	CU_ASSERT_TRUE(disk_check(d));
	/* Store the page again for the next field. */
	store_page(d, 1, 0);
	disk_drain(d);
	disk_close(&d);
}

static void
test_every_record_field_is_checksummed(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	store_page(d, 1, 0);
	store_page(d, 1, 1);
	disk_drain(d);
	disk_close(&d);
	for (size_t i = 0; i < sizeof(rec_fields) / sizeof(rec_fields[0]); i++) {
		idx_edit_record(key(1, 0), rec_fields[i].at, 0, key(1, 0));
		expect_refused(key(1, 0), rec_fields[i].name);
	}
	/* The key: a record moved under another page's key. */
	idx_edit_record(key(1, 0), -1, 0, key(1, 7));
	expect_refused(key(1, 7), "key");
	/* A data byte: the record passes, its bytes do not (at load). */
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	load_wait(d, key(1, 0), &g);
	expect_page(&g, 1, 0);
	disk_close(&d);
	idx_edit_record(key(1, 0), -1, 0, key(1, 0));	/* unchanged */
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.checksum_failures, 0);
	disk_close(&d);
}

/* Copy file a to b. */
static void
copy_file(const char *a, const char *b)
{
	char buf[65536];
	int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC,
					       0600);
	ssize_t n;

	CU_ASSERT_FATAL(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CU_ASSERT_EQUAL(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* The path of name in tdir. */
static const char *
tpath(const char *name)
{
	static char p[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", tdir, name);
	return p[i];
}

/* How many entries of tdir match the pattern pat; remove them if rm. */
static unsigned
count_named(const char *pat, bool rm)
{
	glob_t g;
	unsigned n = 0;

	if (glob(tpath(pat), 0, NULL, &g) != 0)
		return 0;
	n = (unsigned)g.gl_pathc;
	for (size_t i = 0; rm && i < g.gl_pathc; i++)
		unlink(g.gl_pathv[i]);
	globfree(&g);
	return n;
}

/* After a damaged index: the store opened OFF, one log line naming
 * index.mdb and containing want, nothing served, nothing crashed. */
static void
expect_off_at_open(struct disk *d, const char *want)
{
	struct disk_stats st;
	struct got g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_FALSE(disk_on(d));
	load_wait(d, key(1, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_OFF);
	store_page(d, 1, 0);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(st.pages_held, 0);
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "index.mdb"));
	if (!strstr(lastlog, want))
		fprintf(stderr, "log: %s (want %s)\n", lastlog, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, want));
	CU_ASSERT_EQUAL(disk_journal_scan(d, NULL, NULL), -1);
	CU_ASSERT_TRUE(disk_check(d));
	disk_close(&d);
}

/* Store 40 pages of file 1, each in its own transaction (drained one by
 * one: how the writer batches queued stores depends on timing, and so
 * would index.mdb's layout, which the flipped-byte test's seeded offsets
 * fall in), and close. */
static void
fill_and_close(void)
{
	struct disk *d = open_store(PAGE, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (unsigned i = 0; i < 40; i++) {
		store_page(d, 1, i);
		disk_drain(d);
	}
	disk_close(&d);
}

static void
test_flipped_index_bytes_never_crash_or_serve_wrong(void)
{
	struct stat sb;
	unsigned seed = 37, off = 0, on = 0;

	fill_and_close();
	copy_file(tpath("index.mdb"), tpath("clean.mdb"));
	CU_ASSERT_EQUAL_FATAL(stat(tpath("index.mdb"), &sb), 0);
	for (int run = 0; run < 24; run++) {
		struct disk *d;
		int fd;

		copy_file(tpath("clean.mdb"), tpath("index.mdb"));
		unlink(tpath("index.mdb-lock"));
		fd = open(tpath("index.mdb"), O_RDWR);
		CU_ASSERT_FATAL(fd >= 0);
		for (int i = 0; i < 8; i++) {	/* 8 bytes, seeded places */
			uint8_t b = (uint8_t)rand_r(&seed);
			off_t at = (off_t)(rand_r(&seed) % sb.st_size);

			CU_ASSERT_EQUAL(pwrite(fd, &b, 1, at), 1);
		}
		close(fd);
		nlogs = 0;
		d = open_store(PAGE, 64);
		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		disk_poll(d);
		on += disk_on(d);
		off += !disk_on(d);
		CU_ASSERT_EQUAL(nlogs, disk_on(d) ? 0u : 1u);
		for (unsigned i = 0; i < 40; i++) {	/* never a wrong byte */
			struct got g;

			load_wait(d, key(1, i), &g);
			if (g.r == DISK_HIT)
				expect_page(&g, 1, i);
		}
		disk_close(&d);
		count_named("index.mdb.damaged-*", true);
	}
	fprintf(stderr, "flipped index: %u runs off, %u on\n", off, on);
	CU_ASSERT_TRUE(off > 0);
}

static void
test_truncated_index_before_start_is_off(void)
{
	struct stat sb;

	fill_and_close();
	CU_ASSERT_EQUAL_FATAL(stat(tpath("index.mdb"), &sb), 0);
	CU_ASSERT_EQUAL(truncate(tpath("index.mdb"), sb.st_size / 2), 0);
	nlogs = 0;
	expect_off_at_open(open_store(PAGE, 64), "index.mdb: ");
	/* Whatever it says of the journal, the file is still somewhere. */
	CU_ASSERT_EQUAL(count_named("index.mdb", false) +
			count_named("index.mdb.damaged-*", false), 1);
}

static void
test_index_truncated_while_running_turns_off(void)
{
	struct disk *d;
	struct disk_stats st;
	struct got g;

	fill_and_close();
	d = open_store(PAGE, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	load_wait(d, key(1, 3), &g);
	expect_page(&g, 1, 3);
	/* Under the map: the next read would be a SIGBUS. */
	CU_ASSERT_EQUAL(truncate(tpath("index.mdb"), 3 * 4096), 0);
	for (unsigned i = 0; i < 40; i++) {
		load_wait(d, key(1, i), &g);
		CU_ASSERT_EQUAL(g.r, DISK_OFF);
	}
	store_page(d, 1, 50);
	disk_drain(d);
	CU_ASSERT_FALSE(disk_on(d));
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "index.mdb: truncated"));
	disk_close(&d);
	/* Truncated to nothing: caught by the meta pages' check. */
	unlink(tpath("index.mdb"));
	unlink(tpath("index.mdb-lock"));
	fill_and_close();
	nlogs = 0;
	d = open_store(PAGE, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(truncate(tpath("index.mdb"), 0), 0);
	load_wait(d, key(1, 0), &g);
	CU_ASSERT_EQUAL(g.r, DISK_OFF);
	CU_ASSERT_EQUAL(nlogs, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "truncated to 0 bytes"));
	disk_close(&d);
}

static void
test_foreign_random_index_is_off_and_kept(void)
{
	uint8_t junk[65536];
	unsigned seed = 7;
	int fd;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand_r(&seed);
	fd = open(tpath("index.mdb"), O_WRONLY | O_CREAT, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	expect_off_at_open(open_store(PAGE, 64), "could not be read");
	CU_ASSERT_EQUAL(count_named("index.mdb", false), 1);	/* kept */
}

/* Make tdir/index.mdb another program's LMDB environment. */
static void
make_foreign_env(bool with_journal_record)
{
	MDB_env *env = idx_env();
	MDB_txn *txn;
	MDB_dbi dbi;
	char hello[] = "hello", world[] = "world";
	MDB_val k = { 5, hello }, v = { 5, world };

	CU_ASSERT_EQUAL_FATAL(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CU_ASSERT_EQUAL(mdb_dbi_open(txn, "users", MDB_CREATE, &dbi), 0);
	CU_ASSERT_EQUAL(mdb_put(txn, dbi, &k, &v, 0), 0);
	if (with_journal_record) {
		CU_ASSERT_EQUAL(mdb_dbi_open(txn, "journal", MDB_CREATE, &dbi),
				0);
		CU_ASSERT_EQUAL(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	CU_ASSERT_EQUAL(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void
test_foreign_lmdb_index_moved_aside_then_fresh(void)
{
	struct disk *d;

	make_foreign_env(false);
	expect_off_at_open(open_store(PAGE, 64), "moved aside");
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "not an nfscached index"));
	CU_ASSERT_EQUAL(count_named("index.mdb.damaged-*", false), 1);
	CU_ASSERT_EQUAL(count_named("index.mdb", false), 0);
	/* The next start makes a fresh index and the tier is on. */
	nlogs = 0;
	d = open_store(PAGE, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_TRUE(disk_on(d));
	store_page(d, 1, 0);
	disk_drain(d);
	{
		struct got g;

		load_wait(d, key(1, 0), &g);
		expect_page(&g, 1, 0);
	}
	CU_ASSERT_EQUAL(nlogs, 0);
	disk_close(&d);
}

static void
test_damaged_index_with_journal_records_is_kept(void)
{
	struct stat before, after;

	make_foreign_env(true);
	CU_ASSERT_EQUAL_FATAL(stat(tpath("index.mdb"), &before), 0);
	expect_off_at_open(open_store(PAGE, 64), "holds 1 journal record");
	CU_ASSERT_PTR_NOT_NULL(strstr(lastlog, "kept as it is"));
	CU_ASSERT_EQUAL(count_named("index.mdb.damaged-*", false), 0);
	CU_ASSERT_EQUAL_FATAL(stat(tpath("index.mdb"), &after), 0);
	CU_ASSERT_EQUAL(before.st_ino, after.st_ino);
}

static void
test_unusable_index_lock_is_off_not_a_crash(void)
{
	struct disk *d;

	fill_and_close();
	/* A lock file too short for LMDB's reader table, that the store
	 * may not grow: a directory bind is not at hand, so a read-only
	 * 1-byte file that another opener holds. */
	CU_ASSERT_EQUAL(truncate(tpath("index.mdb-lock"), 1), 0);
	CU_ASSERT_EQUAL(chmod(tpath("index.mdb-lock"), 0400), 0);
	nlogs = 0;
	d = open_store(PAGE, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_poll(d);
	if (disk_on(d)) {	/* LMDB grew it (root ignores the mode) */
		struct got g;

		load_wait(d, key(1, 0), &g);
		expect_page(&g, 1, 0);
		disk_close(&d);
	} else {
		expect_off_at_open(d, "index.mdb: ");
	}
}

/* What an outage scan saw. */
struct oseen {
	int n;
	char keys[8][16];
	char vals[8][16];
	uint64_t stamps[8];
};

/* The outage scan callback: copy what came. */
static int
oseen_cb(void *arg, const uint8_t *k, size_t klen, const void *v, size_t vlen,
	 uint64_t stamp)
{
	struct oseen *o = arg;

	if (o->n < 8 && klen < 16 && vlen < 16) {
		memcpy(o->keys[o->n], k, klen);
		o->keys[o->n][klen] = 0;
		memcpy(o->vals[o->n], v, vlen);
		o->vals[o->n][vlen] = 0;
		o->stamps[o->n] = stamp;
	}
	o->n++;
	return 0;
}

/* Change the outage record under key: flip byte at (at >= 0) of its value,
 * or (at < 0) copy it under key to. */
static void
outage_edit(const char *key, int at, const char *to)
{
	char path[512];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { strlen(key), (void *)(uintptr_t)key }, v, t;
	uint8_t buf[2048];

	snprintf(path, sizeof(path), "%s/index.mdb", tdir);
	CU_ASSERT_FATAL(mdb_env_create(&env) == 0);
	mdb_env_set_maxdbs(env, 8);
	mdb_env_set_mapsize(env, (size_t)256 << 20);
	CU_ASSERT_FATAL(mdb_env_open(env, path, MDB_NOSUBDIR, 0600) == 0);
	CU_ASSERT_FATAL(mdb_txn_begin(env, NULL, 0, &txn) == 0);
	CU_ASSERT_FATAL(mdb_dbi_open(txn, "outage", 0, &dbi) == 0);
	CU_ASSERT_FATAL(mdb_get(txn, dbi, &k, &v) == 0);
	CU_ASSERT_FATAL(v.mv_size <= sizeof(buf));
	memcpy(buf, v.mv_data, v.mv_size);
	v.mv_data = buf;
	if (at >= 0) {
		buf[at] ^= 0x01;
		CU_ASSERT(mdb_put(txn, dbi, &k, &v, 0) == 0);
	} else {
		t = (MDB_val){ strlen(to), (void *)(uintptr_t)to };
		CU_ASSERT(mdb_put(txn, dbi, &t, &v, 0) == 0);
	}
	CU_ASSERT(mdb_txn_commit(txn) == 0);
	mdb_env_close(env);
}

/* Outage records: put, replaced, found again after a reopen in key order
 * with their stamps; a flipped value byte, a flipped stamp and a record
 * copied under another key are refused (not handed over, deleted,
 * counted). */
static void
test_outage_records_round_trip_and_checksummed(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct oseen o = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A1", 2, "old", 3, 7), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "N1", 2, "name", 4, 9), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A2", 2, "two", 3, 8), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A1", 2, "new", 3, 10), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A3", 2, "x", 0, 1), -1);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_records, 3);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(disk_outage_scan(d, oseen_cb, &o), 3);
	CU_ASSERT_EQUAL(o.n, 3);
	CU_ASSERT_STRING_EQUAL(o.keys[0], "A1");
	CU_ASSERT_STRING_EQUAL(o.vals[0], "new");
	CU_ASSERT_EQUAL(o.stamps[0], 10);
	CU_ASSERT_STRING_EQUAL(o.keys[1], "A2");
	CU_ASSERT_STRING_EQUAL(o.vals[1], "two");
	CU_ASSERT_STRING_EQUAL(o.keys[2], "N1");
	CU_ASSERT_EQUAL(o.stamps[2], 9);
	disk_close(&d);
	outage_edit("A2", 24, NULL);	/* a byte of the value */
	outage_edit("N1", 8, NULL);	/* a byte of the stamp */
	outage_edit("A1", -1, "A9");	/* A1's record under another key */
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	memset(&o, 0, sizeof(o));
	CU_ASSERT_EQUAL(disk_outage_scan(d, oseen_cb, &o), 1);
	CU_ASSERT_EQUAL(o.n, 1);
	CU_ASSERT_STRING_EQUAL(o.keys[0], "A1");
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_failures, 3);
	CU_ASSERT_EQUAL(st.outage_records, 1);
	memset(&o, 0, sizeof(o));
	CU_ASSERT_EQUAL(disk_outage_scan(d, oseen_cb, &o), 1);	/* deleted */
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_failures, 3);
	disk_close(&d);
}

/* Outage records are bounded: past DISK_OUTAGE_MAX a new key is dropped
 * and counted, an existing key is still replaced. */
static void
test_outage_records_bounded(void)
{
	char err[256] = "";
	struct disk_params p = {
		.dir = tdir, .page_size = PAGE, .budget_bytes = 16 * PAGE,
		.durable = false, .log = log_hook,
	};
	struct disk *d = disk_open(&p, err, sizeof(err));
	struct disk_stats st;
	uint32_t k;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (k = 0; k < DISK_OUTAGE_MAX + 10; k++) {
		uint32_t be = htonl(k);

		CU_ASSERT_EQUAL_FATAL(disk_outage_put(d, &be, 4, "v", 1, 1), 0);
		if (k % 512 == 511)
			disk_drain(d);
	}
	k = htonl(5);
	CU_ASSERT_EQUAL(disk_outage_put(d, &k, 4, "w", 1, 2), 0);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_records, DISK_OUTAGE_MAX);
	CU_ASSERT_EQUAL(st.outage_dropped, 10);
	CU_ASSERT(st.on);
	disk_close(&d);
}

/* disk_outage_drop_all removes the records put before it, in queue
 * order, keeps a put queued after it, and the removal is committed (a
 * reopen finds only that one); its pages are not touched. */
static void
test_outage_records_drop_all(void)
{
	struct disk *d = open_store(PAGE, 16);
	struct disk_stats st;
	struct oseen o = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A1", 2, "one", 3, 1), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A2", 2, "two", 3, 2), 0);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_records, 2);
	CU_ASSERT_EQUAL(disk_outage_put(d, "A3", 2, "three", 5, 3), 0);
	CU_ASSERT_EQUAL(disk_outage_drop_all(d), 0);
	CU_ASSERT_EQUAL(disk_outage_put(d, "N1", 2, "after", 5, 4), 0);
	disk_drain(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_records, 1);
	CU_ASSERT_EQUAL(st.outage_dropped, 0);
	CU_ASSERT(st.on);
	disk_close(&d);
	d = open_store(PAGE, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	disk_stats_get(d, &st);
	CU_ASSERT_EQUAL(st.outage_records, 1);
	CU_ASSERT_EQUAL(disk_outage_scan(d, oseen_cb, &o), 1);
	CU_ASSERT_STRING_EQUAL(o.keys[0], "N1");
	CU_ASSERT_STRING_EQUAL(o.vals[0], "after");
	disk_close(&d);
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite_with_setup_and_teardown("disk", NULL, NULL,
		setup_dir, teardown_dir);

	if (!s)
		return -1;
#define T(f) if (!CU_add_test(s, #f, f)) return -1
	T(test_round_trip_keeps_ranges_holes_attrs);
	T(test_store_replaces_same_key);
	T(test_reopen_finds_pages);
	T(test_hole_page_stores_no_bytes_and_survives_reopen);
	T(test_reopen_with_other_page_size_empties);
	T(test_reopen_with_smaller_budget_drops_beyond);
	T(test_flipped_byte_is_corrupt_and_dropped);
	T(test_truncated_slab_is_corrupt);
	T(test_culling_keeps_bytes_under_budget);
	T(test_loaded_old_page_survives_culling);
	T(test_drop_file_drops_only_that_file);
	T(test_enospc_on_write_degrades);
	T(test_eio_on_sync_degrades);
	T(test_eio_on_read_degrades);
	T(test_file_size_limit_degrades);
	T(test_removed_slab_degrades);
	T(test_unusable_dir_refused_with_reason);
	T(test_second_open_of_dir_refused);
	T(test_gate_holds_disk_work_not_the_caller);
	T(test_buffers_are_the_callers_and_go_back);
	T(test_close_completes_queued_loads_as_off);
	T(test_power_loss_durable_keeps_every_completed_page);
	T(test_power_loss_nondurable_loses_pages_never_serves_wrong);
	T(test_journal_pages_sequences_replace_del);
	T(test_every_record_field_is_checksummed);
	T(test_flipped_index_bytes_never_crash_or_serve_wrong);
	T(test_truncated_index_before_start_is_off);
	T(test_index_truncated_while_running_turns_off);
	T(test_foreign_random_index_is_off_and_kept);
	T(test_foreign_lmdb_index_moved_aside_then_fresh);
	T(test_damaged_index_with_journal_records_is_kept);
	T(test_unusable_index_lock_is_off_not_a_crash);
	T(test_outage_records_round_trip_and_checksummed);
	T(test_outage_records_bounded);
	T(test_outage_records_drop_all);
#undef T
	return 0;
}
