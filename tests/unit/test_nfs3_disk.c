/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_disk: the disk tier in the daemon (daemon/wb/disk_tier.c) with
 * the real READ handler on the fake upstream, and a cache_dir in a fresh
 * directory under $TMPDIR (or /tmp). A "restart" is h_fini then h_init on
 * the same directory with the same toy file (same handle and attributes):
 * RAM is cold, the disk is not. Disk work is waited for with
 * disk_tier_drain (blocking on the store's eventfd), never a sleep.
 *
 * Pinned: a file's known holes are stored as holes and restored into its
 * hole set (a page that is all hole stores no data bytes; a page with a
 * hole round-trips its bytes and its hole; after the restart the file is
 * read with no upstream READ, the hole bytes served as holes); a page with
 * more holes than a record keeps still reads back right with no upstream
 * READ; a file changed upstream after the restart is served new, its old
 * pages and holes dropped. The tier's state is its daemon's
 * (d->disk_tier): a new daemon's counts from 0 with its gate open, and a
 * daemon without cache_dir has none. Issue 42: each queued store's copy
 * is a page lent by the cache (counted exactly, pages and loans within
 * the budget), and a disk slower than the fills makes a READ wait before
 * its fetch instead of a store being dropped.
 */
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk_impl.h"	/* the record's layout, to damage one */
#include "disk_tier.h"
#include "log.h"
#include "nfs3_read.h"

#include "cunit_main.h"
#include "nfs3_harness.h"
#include "stale.h"

#define PS	65536u		/* the default page_size */

static char tdir[256];
static uint32_t page_size = PS;

/* The disk tier in tdir, no readahead (only the READs go upstream). */
static void with_disk(struct conf *c)
{
	free(c->cache_dir);
	c->cache_dir = strdup(tdir);
	c->disk_cache_size = 16;
	c->readahead_max = 0;
	c->page_size = page_size;
}

/* A fresh cache_dir for each test. */
static void setup_dir(void)
{
	page_size = PS;
	h_tmpdir(tdir, sizeof(tdir), "test_nfs3_disk");
}

/* Remove the test's cache_dir. */
static void teardown_dir(void)
{
	h_rmtree(tdir);
}

/* The toy file "f" of 3 pages: page 0 data, page 1 all zeros, page 2
 * zeros then data (its first half a hole). */
static uint64_t add_holey(struct nfs3_h *h)
{
	uint64_t id = toy_add_file(&h->toy, "f", 3 * PS);

	memset(toy_node(&h->toy, id)->data + PS, 0, PS + PS / 2);
	return id;
}

/* READ [off, off + count) of fileid id and check the toy's bytes came. */
static void read_check(struct nfs3_h *h, uint64_t id, uint64_t off,
		       uint32_t count)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = count };
	const struct toy_node *n = toy_node(&h->toy, id);
	READ3res res;
	uint32_t xid;

	h_fh(h, id, &a.file, buf);
	xid = h_call(h, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(res.READ3res_u.resok.data.data_len, count);
	CU_ASSERT_EQUAL(memcmp(res.READ3res_u.resok.data.data_val,
			       n->data + off, count), 0);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
}

/* The cached file of toy file id (a reference; NULL if not cached). */
static struct cfile *up_file(struct nfs3_h *h, uint64_t id)
{
	uint8_t up[8];

	for (int i = 0; i < 8; i++)
		up[i] = (uint8_t)(id >> (56 - 8 * i));
	return cache_find(h->d.cache, up, sizeof(up));
}

/* Assert the cached file of id holds `valid` valid bytes and `holes`
 * hole bytes. */
static void expect_cached(struct nfs3_h *h, uint64_t id, uint64_t valid,
			  uint64_t holes)
{
	struct cfile *f = up_file(h, id);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(cfile_valid_bytes(f), valid);
	CU_ASSERT_EQUAL(cfile_hole_bytes(f), holes);
	cfile_put(h->d.cache, &f);
}

/* What disk_tier_describe says of pages 1, 2 and 3 of the holey file. */
static void expect_described(struct nfs3_h *h, uint64_t id)
{
	static uint8_t buf[PS];
	struct cfile *f = up_file(h, id);
	const struct toy_node *n = toy_node(&h->toy, id);
	struct disk_page pg;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	/* All hole: one hole, no valid range, no data bytes. */
	CU_ASSERT_TRUE(disk_tier_describe(h->d.cache, f, 1, 0, NULL, 0,
					  cfile_attr(f), buf, &pg));
	CU_ASSERT_EQUAL(pg.nvalid, 0);
	CU_ASSERT_PTR_NULL(pg.data);
	CU_ASSERT_EQUAL_FATAL(pg.nholes, 1);
	CU_ASSERT_EQUAL(pg.holes[0].off, 0);
	CU_ASSERT_EQUAL(pg.holes[0].len, PS);
	CU_ASSERT_EQUAL(pg.attr.size, 3 * PS);
	/* Half hole: the hole, then the clean bytes. */
	CU_ASSERT_TRUE(disk_tier_describe(h->d.cache, f, 2, 0, NULL, 0,
					  cfile_attr(f), buf, &pg));
	CU_ASSERT_EQUAL_FATAL(pg.nholes, 1);
	CU_ASSERT_EQUAL(pg.holes[0].off, 0);
	CU_ASSERT_EQUAL(pg.holes[0].len, PS / 2);
	CU_ASSERT_EQUAL_FATAL(pg.nvalid, 1);
	CU_ASSERT_EQUAL(pg.valid[0].off, PS / 2);
	CU_ASSERT_EQUAL(pg.valid[0].len, PS / 2);
	CU_ASSERT_PTR_EQUAL(pg.data, buf);
	CU_ASSERT_EQUAL(memcmp(buf + PS / 2, n->data + 2 * PS + PS / 2,
			       PS / 2), 0);
	/* Past the end of file: nothing to store. */
	CU_ASSERT_FALSE(disk_tier_describe(h->d.cache, f, 3, 0, NULL, 0,
					   cfile_attr(f), buf, &pg));
	cfile_put(h->d.cache, &f);
}

/* Read the holey file's 3 pages once, with the tier in tdir, and wait
 * until its stores are done. */
static uint64_t cold_read(struct nfs3_h *h)
{
	struct disk_stats ds;
	uint64_t id;

	h_init(h, with_disk);
	id = add_holey(h);
	for (unsigned p = 0; p < 3; p++)
		read_check(h, id, (uint64_t)p * PS, PS);
	CU_ASSERT_EQUAL(h->fu.calls[NFSPROC3_READ], 3);
	disk_tier_drain(&h->d);
	CU_ASSERT_TRUE_FATAL(disk_tier_stats(&h->d, &ds));
	CU_ASSERT_EQUAL(ds.stores, 3);
	/* Page 0 whole and page 2's second half: the holes hold no bytes. */
	CU_ASSERT_EQUAL(ds.store_bytes, PS + PS / 2);
	return id;
}

static void test_holes_stored_and_restored_after_restart(void)
{
	struct nfs3_read_stats before, after;
	struct disk_stats ds;
	struct nfs3_h h;
	uint64_t id = cold_read(&h);

	expect_cached(&h, id, PS + PS / 2, PS + PS / 2);
	expect_described(&h, id);
	h_fini(&h);

	h_init(&h, with_disk);	/* RAM cold, the disk as it was */
	CU_ASSERT_EQUAL_FATAL(add_holey(&h), id);
	nfs3_read_stats_get(&h.d, &before);
	for (unsigned p = 0; p < 3; p++)
		read_check(&h, id, (uint64_t)p * PS, PS);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	CU_ASSERT_EQUAL(after.read_bytes_hole - before.read_bytes_hole,
			PS + PS / 2);
	CU_ASSERT_EQUAL(after.read_bytes_cache - before.read_bytes_cache,
			PS + PS / 2);
	CU_ASSERT_EQUAL(after.read_bytes_upstream,
			before.read_bytes_upstream);
	CU_ASSERT_EQUAL(after.upstream_read_bytes,
			before.upstream_read_bytes);
	expect_cached(&h, id, PS + PS / 2, PS + PS / 2);
	expect_described(&h, id);	/* as before the restart */
	disk_tier_drain(&h.d);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.hits, 3);
	CU_ASSERT_EQUAL(ds.hit_bytes, PS + PS / 2);
	CU_ASSERT_EQUAL(ds.drops, 0);
	CU_ASSERT_TRUE(cache_check(h.d.cache));
	h_fini(&h);
}

/* A 1 MiB page of 4 KiB blocks, every other one zeros: 128 holes, more
 * than a record keeps (DISK_MAX_RANGES). */
static uint64_t add_striped(struct nfs3_h *h)
{
	uint64_t id = toy_add_file(&h->toy, "s", 1 << 20);
	uint8_t *data = toy_node(&h->toy, id)->data;

	for (unsigned b = 1; b < 256; b += 2)
		memset(data + b * 4096, 0, 4096);
	return id;
}

static void test_page_with_more_holes_than_a_record_reads_back(void)
{
	struct nfs3_h h;
	uint64_t id;

	page_size = 1 << 20;
	h_init(&h, with_disk);
	id = add_striped(&h);
	for (unsigned i = 0; i < 16; i++)
		read_check(&h, id, (uint64_t)i * PS, PS);
	expect_cached(&h, id, 512 * 1024, 512 * 1024);
	disk_tier_drain(&h.d);
	h_fini(&h);

	h_init(&h, with_disk);
	CU_ASSERT_EQUAL_FATAL(add_striped(&h), id);
	for (unsigned i = 0; i < 16; i++)
		read_check(&h, id, (uint64_t)i * PS, PS);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	/* The first 63 holes came back as holes; the zeros of the others
	 * were stored as data and are found as zero blocks again. */
	expect_cached(&h, id, 512 * 1024, 512 * 1024);
	CU_ASSERT_TRUE(cache_check(h.d.cache));
	h_fini(&h);
}

static void test_changed_file_is_served_new_not_its_holes(void)
{
	struct nfs3_read_stats before, after;
	struct disk_stats ds;
	struct toy_node *n;
	struct nfs3_h h;
	uint64_t id = cold_read(&h);

	h_fini(&h);
	h_init(&h, with_disk);
	CU_ASSERT_EQUAL_FATAL(add_holey(&h), id);
	/* Another writer filled the holes while the proxy was down. */
	n = toy_node(&h.toy, id);
	for (unsigned i = PS; i < 2 * PS + PS / 2; i++)
		n->data[i] = (uint8_t)(i * 13 + 1);
	n->mtime = ++h.toy.clock;
	nfs3_read_stats_get(&h.d, &before);
	for (unsigned p = 0; p < 3; p++) {
		read_check(&h, id, (uint64_t)p * PS, PS);
		disk_tier_drain(&h.d);	/* the drop is done before the next */
	}
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 3);
	CU_ASSERT_EQUAL(after.read_bytes_hole - before.read_bytes_hole, 0);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			3 * PS);
	expect_cached(&h, id, 3 * PS, 0);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.drops, 3);
	CU_ASSERT_EQUAL(ds.stores, 3);	/* the new version's pages */
	/* The old version's page that was loaded, found changed and
	 * dropped was not served: no hit, no hit bytes. */
	CU_ASSERT_EQUAL(ds.hits, 0);
	CU_ASSERT_EQUAL(ds.hit_bytes, 0);
	h_fini(&h);
}

/* Fill the holey file's holes and move its mtime, as another writer
 * would while the proxy was down: the same steps give the same version. */
static void change_holey(struct nfs3_h *h, uint64_t id)
{
	struct toy_node *n = toy_node(&h->toy, id);

	for (unsigned i = PS; i < 2 * PS + PS / 2; i++)
		n->data[i] = (uint8_t)(i * 13 + 1);
	n->mtime = ++h->toy.clock;
}

/* The tier's state is its daemon's (d->disk_tier): a daemon that stops
 * with unused hits counted and its test gate closed leaves nothing to
 * the next one, whose hits are exactly the pages it serves from disk. */
static void test_new_daemon_tier_starts_fresh(void)
{
	struct disk_stats ds, raw;
	struct nfs3_h h;
	uint64_t id = cold_read(&h);
	unsigned held = 9;
	bool closed = false;

	h_fini(&h);
	h_init(&h, with_disk);	/* v1 on disk, v2 upstream: unused hits */
	CU_ASSERT_EQUAL_FATAL(add_holey(&h), id);
	change_holey(&h, id);
	for (unsigned p = 0; p < 3; p++) {
		read_check(&h, id, (uint64_t)p * PS, PS);
		disk_tier_drain(&h.d);
	}
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.stores, 3);	/* v2's pages */
	CU_ASSERT_EQUAL(ds.hits, 0);
	disk_stats_get(disk_tier_disk(&h.d), &raw);
	CU_ASSERT_TRUE(raw.hits > 0);	/* loaded, counted unused */
	CU_ASSERT_PTR_NOT_NULL(h.d.disk_tier);
	CU_ASSERT_EQUAL(disk_tier_gate(&h.d, DISK_TIER_GATE_CLOSE, &closed,
				       &held), 0);
	CU_ASSERT_TRUE(closed);
	CU_ASSERT_EQUAL(held, 0);
	h_fini(&h);
	CU_ASSERT_PTR_NULL(h.d.disk_tier);

	h_init(&h, with_disk);	/* v2 on disk and upstream */
	CU_ASSERT_EQUAL_FATAL(add_holey(&h), id);
	change_holey(&h, id);
	held = 9;
	CU_ASSERT_EQUAL(disk_tier_gate(&h.d, DISK_TIER_GATE_STATUS, &closed,
				       &held), 0);
	CU_ASSERT_FALSE(closed);
	CU_ASSERT_EQUAL(held, 0);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.hits, 0);
	for (unsigned p = 0; p < 3; p++)
		read_check(&h, id, (uint64_t)p * PS, PS);
	disk_tier_drain(&h.d);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.hits, 3);
	CU_ASSERT_EQUAL(ds.hit_bytes, 3 * PS);
	h_fini(&h);
}

/* The disk tier with cache_size 4 MiB: 63 pages of 64 KiB with their
 * metadata, so the tier is congested at 15 store copies. */
static void with_disk_small(struct conf *c)
{
	with_disk(c);
	c->cache_size = 4;
}

/* Send a READ of [off, off + count) of toy file id; its xid. */
static uint32_t read_send(struct nfs3_h *h, uint64_t id, uint64_t off,
			  uint32_t count)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = count };

	h_fh(h, id, &a.file, buf);
	return h_call(h, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a);
}

/* Assert the exact accounting of the store copies: each is a page lent
 * by the cache (cache_size counts it once), the pages and the loans
 * within the budget, no store dropped. */
static void expect_lent(struct nfs3_h *h, uint64_t copies)
{
	struct cache_stats cs;
	struct disk_stats st;

	cache_stats_get(h->d.cache, &cs);
	CU_ASSERT_TRUE(disk_tier_stats(&h->d, &st));
	CU_ASSERT_EQUAL(st.store_bufs, copies);
	CU_ASSERT_EQUAL(cs.loan_bytes, (st.store_bufs + st.load_bufs) * PS);
	CU_ASSERT_TRUE((cs.pages * PS + cs.loan_bytes) / PS * cs.page_cost <=
		       cs.budget);
	CU_ASSERT_EQUAL(st.stores_dropped, 0);
}

/*
 * Issue 42: a queued store's copy counts against cache_size, and a disk
 * slower than the fills slows the fills instead of dropping stores. With
 * the writer held at the gate, each page read holds one copy lent by the
 * cache (nfscached_cache_loan_bytes = the copies, pages + loans within
 * the budget); at 15 copies (a quarter of the cache's 63 pages) the tier
 * is congested and the next READ that misses waits before its fetch (no
 * upstream READ is sent, and RAM hits are still answered). Once the disk
 * catches up the READ is fetched and answered, and every one of the 24
 * pages is stored, none dropped: restarted, the file is read back from
 * the disk with no upstream READ.
 */
static void test_store_copies_count_and_backpressure_not_drops(void)
{
	struct disk_stats st;
	struct nfs3_h h;
	unsigned held;
	bool closed;
	uint64_t id, cap = disk_tier_store_cap(
		(4u << 20) / (PS + cache_page_meta_bytes()));
	uint32_t xid;
	READ3res res;

	CU_ASSERT_EQUAL_FATAL(cap, 15);
	h_init(&h, with_disk_small);
	id = toy_add_file(&h.toy, "f", 24 * PS);
	CU_ASSERT_EQUAL(disk_tier_gate(&h.d, DISK_TIER_GATE_CLOSE, &closed,
				       &held), 0);
	for (unsigned p = 0; p < cap; p++) {
		CU_ASSERT_FALSE(disk_tier_congested(&h.d));
		read_check(&h, id, (uint64_t)p * PS, PS);
		expect_lent(&h, p + 1);
	}
	CU_ASSERT_TRUE(disk_tier_congested(&h.d));
	xid = read_send(&h, id, cap * PS, PS);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], cap);	/* it waits */
	read_check(&h, id, 0, PS);			/* a hit does not */
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], cap);
	expect_lent(&h, cap);
	CU_ASSERT_EQUAL(disk_tier_gate(&h.d, DISK_TIER_GATE_OPEN, &closed,
				       &held), 0);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, xid, (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	CU_ASSERT_EQUAL(memcmp(res.READ3res_u.resok.data.data_val,
			       toy_node(&h.toy, id)->data + cap * PS, PS), 0);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], cap + 1);
	for (unsigned p = cap + 1; p < 24; p++)
		read_check(&h, id, (uint64_t)p * PS, PS);
	disk_tier_drain(&h.d);
	expect_lent(&h, 0);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &st));
	CU_ASSERT_EQUAL(st.stores, 24);
	CU_ASSERT_EQUAL(st.stores_dropped, 0);
	h_fini(&h);

	h_init(&h, with_disk_small);	/* RAM cold, the 24 pages on disk */
	CU_ASSERT_EQUAL_FATAL(toy_add_file(&h.toy, "f", 24 * PS), id);
	for (unsigned p = 0; p < 24; p++)
		read_check(&h, id, (uint64_t)p * PS, PS);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &st));
	CU_ASSERT_EQUAL(st.hits, 24);
	disk_tier_drain(&h.d);
	expect_lent(&h, 0);
	h_fini(&h);
}

/* A daemon without cache_dir has no tier: every call is a no-op. */
static void test_no_cache_dir_no_tier(void)
{
	struct disk_stats ds;
	struct nfs3_h h;
	unsigned held = 9;
	bool closed = true;

	h_init(&h, NULL);
	CU_ASSERT_PTR_NULL(h.d.disk_tier);
	CU_ASSERT_PTR_NULL(disk_tier_disk(&h.d));
	CU_ASSERT_FALSE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.hits, 0);
	CU_ASSERT_EQUAL(disk_tier_gate(&h.d, DISK_TIER_GATE_CLOSE, &closed,
				       &held), -1);
	CU_ASSERT_TRUE(closed);		/* untouched */
	CU_ASSERT_EQUAL(held, 9);
	disk_tier_drain(&h.d);		/* nothing, and returns */
	h_fini(&h);
}

/* Flip bit 15 of the hole offset of the record of page 2 of the holey
 * file (hole [0, PS/2), valid [PS/2, PS)): the hole then claims
 * [32768, 65536), the page's real data (the case, reversed). */
static void flip_page2_hole_offset(void)
{
	char path[512];
	MDB_env *env;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_dbi dbi;
	MDB_val k, v;
	unsigned flipped = 0;

	snprintf(path, sizeof(path), "%s/index.mdb", tdir);
	CU_ASSERT_EQUAL_FATAL(mdb_env_create(&env), 0);
	mdb_env_set_maxdbs(env, 8);
	mdb_env_set_mapsize(env, (size_t)256 << 20);
	CU_ASSERT_EQUAL_FATAL(mdb_env_open(env, path, MDB_NOSUBDIR, 0600), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_dbi_open(txn, "pages", 0, &dbi), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_cursor_open(txn, dbi, &cur), 0);
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		struct disk_rec rec;
		struct disk_range r[2];
		uint8_t buf[sizeof(rec) + sizeof(r)];

		memcpy(&rec, v.mv_data, sizeof(rec));
		if (rec.nvalid != 1 || rec.nholes != 1 ||
		    v.mv_size != sizeof(buf))
			continue;
		memcpy(buf, v.mv_data, sizeof(buf));
		memcpy(r, buf + sizeof(rec), sizeof(r));
		if (r[0].off != PS / 2 || r[1].off != 0)
			continue;
		buf[sizeof(rec) + 8 + 1] ^= 0x80;	/* holes[0].off bit 15 */
		v = (MDB_val){ sizeof(buf), buf };
		CU_ASSERT_EQUAL(mdb_cursor_put(cur, &k, &v, MDB_CURRENT), 0);
		flipped++;
	}
	mdb_cursor_close(cur);
	CU_ASSERT_EQUAL_FATAL(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	CU_ASSERT_EQUAL(flipped, 1);
}

/* Count the lines of file path that contain want. */
static unsigned count_lines(const char *path, const char *want)
{
	char line[2048];
	unsigned n = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, want) != NULL;
	if (f)
		fclose(f);
	return n;
}

static void test_flipped_hole_offset_is_refused_not_zeros(void)
{
	struct disk_stats ds;
	struct nfs3_h h;
	char logp[600];
	int saved = dup(2), fd;
	uint64_t id = cold_read(&h);

	h_fini(&h);
	flip_page2_hole_offset();
	snprintf(logp, sizeof(logp), "%s.log", tdir);
	fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0 && saved >= 0);
	dup2(fd, 2);		/* the daemon's log lines, for a while */
	setenv("NFS3_TEST_VERBOSE", "1", 1);	/* h_init keeps the level */
	log_set_level_name("warn");
	h_init(&h, with_disk);
	CU_ASSERT_EQUAL_FATAL(add_holey(&h), id);
	/* Page 2: its real second half, from the upstream, not zeros. */
	read_check(&h, id, 2 * PS, PS);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	read_check(&h, id, 0, PS);	/* the intact pages still served */
	read_check(&h, id, PS, PS);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	disk_tier_drain(&h.d);
	CU_ASSERT_TRUE(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.checksum_failures, 1);
	CU_ASSERT_TRUE(ds.on);
	fflush(stderr);
	unsetenv("NFS3_TEST_VERBOSE");
	log_set_level_name("error");
	dup2(saved, 2);
	close(saved);
	close(fd);
	CU_ASSERT_EQUAL(count_lines(logp, "failed a checksum"), 1);
	unlink(logp);
	h_fini(&h);
}

/* with_disk and stale_on_error = 600. */
static void with_disk_stale(struct conf *c)
{
	with_disk(c);
	c->stale_on_error = 600;
}

/* GETATTR (or ACCESS of ACCESS3_READ when access) of toy file id:
 * the reply's status. */
static nfsstat3 attr_call(struct nfs3_h *h, uint64_t id, bool access)
{
	uint8_t buf[FH_SIZE_MAX];
	GETATTR3args g;
	ACCESS3args a = { .access = ACCESS3_READ };
	GETATTR3res gr;
	ACCESS3res ar;
	nfsstat3 st;
	uint32_t xid;

	h_fh(h, id, access ? &a.object : &g.object, buf);
	if (!access) {
		xid = h_call(h, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args, &g);
		memset(&gr, 0, sizeof(gr));
		CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_GETATTR3res,
					     &gr), 0);
		st = gr.status;
		if (st == NFS3_OK)
			CU_ASSERT_EQUAL(gr.GETATTR3res_u.resok.obj_attributes.fileid, id);
		xdr_free((xdrproc_t)xdr_GETATTR3res, (char *)&gr);
		return st;
	}
	xid = h_call(h, NFSPROC3_ACCESS, (xdrproc_t)xdr_ACCESS3args, &a);
	memset(&ar, 0, sizeof(ar));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_ACCESS3res, &ar), 0);
	st = ar.status;
	if (st == NFS3_OK)
		CU_ASSERT_EQUAL(ar.ACCESS3res_u.resok.access, ACCESS3_READ);
	xdr_free((xdrproc_t)xdr_ACCESS3res, (char *)&ar);
	return st;
}

/* The stale answers d counted for proc since *before. */
static uint64_t stale_since(const struct daemon *d,
			    const struct stale_stats *before, uint32_t proc)
{
	struct stale_stats now;

	stale_stats_get(d, &now);
	return now.answers[proc] - before->answers[proc];
}

/* Outage mode across a restart: a file looked up, ACCESSed and read with
 * stale_on_error and a cache_dir; the proxy restarted with the upstream
 * down answers LOOKUP by name, GETATTR, ACCESS and READ of every byte
 * from what cache_dir kept, each counted stale, no upstream call. */
static void test_outage_restart_serves_lookup_attrs_access_read(void)
{
	char fname[] = "f";
	struct stale_stats before;
	struct disk_stats ds;
	struct nfs3_h h;
	uint64_t id, got = 0;

	h_init(&h, with_disk_stale);
	id = toy_add_file(&h.toy, "f", 2 * PS);
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	CU_ASSERT_EQUAL(attr_call(&h, id, true), NFS3_OK);
	read_check(&h, id, 0, PS);
	read_check(&h, id, PS, PS);
	disk_tier_drain(&h.d);
	CU_ASSERT_TRUE_FATAL(disk_tier_stats(&h.d, &ds));
	/* dir and file attributes, the name, two ACCESS answers */
	CU_ASSERT(ds.outage_records >= 5);
	h_fini(&h);

	h_init(&h, with_disk_stale);	/* RAM cold, the upstream down */
	CU_ASSERT_EQUAL_FATAL(toy_add_file(&h.toy, "f", 2 * PS), id);
	h.fu.state = UPSTREAM_DOWN;
	stale_stats_get(&h.d, &before);
	got = 0;
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	CU_ASSERT_EQUAL(got, id);
	CU_ASSERT_EQUAL(attr_call(&h, id, false), NFS3_OK);
	CU_ASSERT_EQUAL(attr_call(&h, id, true), NFS3_OK);
	read_check(&h, id, 0, PS);
	read_check(&h, id, PS, PS);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_LOOKUP), 1);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_GETATTR), 1);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_ACCESS), 1);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_READ), 2);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 0);
	h_fini(&h);
}

/* Without a restart: once the upstream is down and the file's attributes
 * expired, a LOOKUP of its cached name is answered stale (it was
 * NFS3ERR_JUKEBOX). */
static void test_outage_lookup_of_cached_name_answered(void)
{
	char fname[] = "f", nope[] = "nope";
	struct stale_stats before;
	struct nfs3_h h;
	uint64_t id, got = 0;

	h_init(&h, with_disk_stale);
	id = toy_add_file(&h.toy, "f", PS);
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	h.fu.state = UPSTREAM_DOWN;
	h_advance(&h, 120);		/* past acregmax and acdirmax */
	stale_stats_get(&h.d, &before);
	got = 0;
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	CU_ASSERT_EQUAL(got, id);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_LOOKUP), 1);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_JUKEBOX);
	h_fini(&h);
}

/* ACCESS of bits id's toy file: the status, the bits granted in *granted. */
static nfsstat3 access_bits(struct nfs3_h *h, uint64_t id, uint32_t bits,
			    uint32_t *granted)
{
	uint8_t buf[FH_SIZE_MAX];
	ACCESS3args a = { .access = bits };
	ACCESS3res ar;
	nfsstat3 st;
	uint32_t xid;

	h_fh(h, id, &a.object, buf);
	xid = h_call(h, NFSPROC3_ACCESS, (xdrproc_t)xdr_ACCESS3args, &a);
	memset(&ar, 0, sizeof(ar));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_ACCESS3res, &ar), 0);
	st = ar.status;
	*granted = st == NFS3_OK ? ar.ACCESS3res_u.resok.access : 0;
	xdr_free((xdrproc_t)xdr_ACCESS3res, (char *)&ar);
	return st;
}

/* During an outage an ACCESS whose every bit has a known answer gets the
 * upstream's last answer, a denied bit included (a client's open asks
 * READ|LOOKUP|... of a file); one with a bit never asked gets JUKEBOX.
 * It was JUKEBOX whenever a bit asked had been denied. */
static void test_outage_access_answers_known_denials(void)
{
	struct stale_stats before;
	struct nfs3_h h;
	uint32_t granted = 0;
	uint64_t id;

	h_init(&h, with_disk_stale);
	h.toy.access_deny = ACCESS3_LOOKUP;
	id = toy_add_file(&h.toy, "f", PS);
	CU_ASSERT_EQUAL(access_bits(&h, id, ACCESS3_READ | ACCESS3_LOOKUP,
				    &granted), NFS3_OK);
	CU_ASSERT_EQUAL(granted, ACCESS3_READ);
	h.fu.state = UPSTREAM_DOWN;
	h_advance(&h, 120);		/* past acregmax */
	stale_stats_get(&h.d, &before);
	granted = 0;
	CU_ASSERT_EQUAL(access_bits(&h, id, ACCESS3_READ | ACCESS3_LOOKUP,
				    &granted), NFS3_OK);
	CU_ASSERT_EQUAL(granted, ACCESS3_READ);
	CU_ASSERT_EQUAL(access_bits(&h, id, ACCESS3_READ, &granted), NFS3_OK);
	CU_ASSERT_EQUAL(granted, ACCESS3_READ);
	CU_ASSERT_EQUAL(access_bits(&h, id, ACCESS3_READ | ACCESS3_MODIFY,
				    &granted), NFS3ERR_JUKEBOX);
	CU_ASSERT_EQUAL(stale_since(&h.d, &before, NFSPROC3_ACCESS), 2);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_ACCESS], 1);
	h_fini(&h);
}

/* `nfscached cache drop` (stale_drop_kept) removes the outage records: a
 * proxy restarted with the upstream down has no name to answer from. */
static void test_outage_records_dropped_by_cache_drop(void)
{
	char fname[] = "f";
	struct disk_stats ds;
	struct nfs3_h h;
	uint64_t id, got = 0;

	h_init(&h, with_disk_stale);
	id = toy_add_file(&h.toy, "f", PS);
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	disk_tier_drain(&h.d);
	CU_ASSERT_TRUE_FATAL(disk_tier_stats(&h.d, &ds));
	CU_ASSERT(ds.outage_records >= 3);
	stale_drop_kept(&h.d);
	disk_tier_drain(&h.d);
	CU_ASSERT_TRUE_FATAL(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.outage_records, 0);
	h_fini(&h);

	h_init(&h, with_disk_stale);
	CU_ASSERT_EQUAL_FATAL(toy_add_file(&h.toy, "f", PS), id);
	h.fu.state = UPSTREAM_DOWN;
	CU_ASSERT_TRUE_FATAL(disk_tier_stats(&h.d, &ds));
	CU_ASSERT_EQUAL(ds.outage_records, 0);
	CU_ASSERT_EQUAL(h_lookup(&h, fname, NULL), NFS3ERR_JUKEBOX);
	h_fini(&h);
}

/* READ of count bytes at off of toy file id: the status; *old_bytes true
 * when NFS3_OK and the data equal old[off..off+count). */
static nfsstat3 read_status(struct nfs3_h *h, uint64_t id, uint64_t off,
			    uint32_t count, const uint8_t *old, bool *old_bytes)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = count };
	READ3res res;
	nfsstat3 st;
	uint32_t xid;

	h_fh(h, id, &a.file, buf);
	xid = h_call(h, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_READ3res, &res), 0);
	st = res.status;
	*old_bytes = st == NFS3_OK &&
		     res.READ3res_u.resok.data.data_len == count &&
		     memcmp(res.READ3res_u.resok.data.data_val, old + off,
			    count) == 0;
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	return st;
}

/* A file changed upstream while the proxy was down: once the proxy has
 * seen its new attributes, neither the same process nor one restarted
 * during an outage ever serves the old version's bytes kept on disk
 * (JUKEBOX), and the attributes an outage shows are the new ones. */
static void test_outage_never_serves_an_older_version(void)
{
	static uint8_t old[2 * PS];
	char fname[] = "f";
	struct toy_node *n;
	struct nfs3_h h;
	uint64_t id, got = 0;
	uint32_t mtime;
	bool stale_bytes = true;

	h_init(&h, with_disk_stale);
	id = toy_add_file(&h.toy, "f", 2 * PS);
	CU_ASSERT_EQUAL(h_lookup(&h, fname, &got), NFS3_OK);
	read_check(&h, id, 0, PS);
	read_check(&h, id, PS, PS);
	memcpy(old, toy_node(&h.toy, id)->data, sizeof(old));
	disk_tier_drain(&h.d);
	h_fini(&h);

	h_init(&h, with_disk_stale);	/* the file changed meanwhile */
	CU_ASSERT_EQUAL_FATAL(toy_add_file(&h.toy, "f", 2 * PS), id);
	n = toy_node(&h.toy, id);
	for (unsigned i = 0; i < 2 * PS; i++)
		n->data[i] = (uint8_t)(i * 7 + 3);
	mtime = n->mtime = h.toy.clock += 5;
	CU_ASSERT_EQUAL(attr_call(&h, id, false), NFS3_OK);	/* upstream */
	h.fu.state = UPSTREAM_DOWN;
	CU_ASSERT_EQUAL(read_status(&h, id, 0, PS, old, &stale_bytes),
			NFS3ERR_JUKEBOX);
	CU_ASSERT_FALSE(stale_bytes);
	disk_tier_drain(&h.d);
	h_fini(&h);

	h_init(&h, with_disk_stale);	/* restarted during the outage */
	CU_ASSERT_EQUAL_FATAL(toy_add_file(&h.toy, "f", 2 * PS), id);
	h.fu.state = UPSTREAM_DOWN;
	{
		struct cfile *f = up_file(&h, id);

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(cfile_attr(f)->mtime.sec, mtime);
		cfile_put(h.d.cache, &f);
	}
	for (unsigned p = 0; p < 2; p++) {
		stale_bytes = true;
		CU_ASSERT_NOT_EQUAL(read_status(&h, id, (uint64_t)p * PS, PS,
						old, &stale_bytes), NFS3_OK);
		CU_ASSERT_FALSE(stale_bytes);
	}
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 0);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite_with_setup_and_teardown("nfs3_disk", NULL,
		NULL, setup_dir, teardown_dir);

	if (!s)
		return -1;
#define T(f) if (!CU_add_test(s, #f, f)) return -1
	T(test_holes_stored_and_restored_after_restart);
	T(test_outage_restart_serves_lookup_attrs_access_read);
	T(test_outage_lookup_of_cached_name_answered);
	T(test_outage_access_answers_known_denials);
	T(test_outage_records_dropped_by_cache_drop);
	T(test_outage_never_serves_an_older_version);
	T(test_page_with_more_holes_than_a_record_reads_back);
	T(test_changed_file_is_served_new_not_its_holes);
	T(test_flipped_hole_offset_is_refused_not_zeros);
	T(test_new_daemon_tier_starts_fresh);
	T(test_no_cache_dir_no_tier);
	T(test_store_copies_count_and_backpressure_not_drops);
#undef T
	return 0;
}
