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
 * caller's thread goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "disk.h"
#include "disk_dir.h"

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
	T(test_unusable_dir_refused_with_reason);
	T(test_second_open_of_dir_refused);
	T(test_gate_holds_disk_work_not_the_caller);
	T(test_close_completes_queued_loads_as_off);
#undef T
	return 0;
}
