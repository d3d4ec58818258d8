/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the bound on file records (cache_params.max_files,
 * cache/cache.c): past it, the least recently used file that holds no
 * pages, no write-back state, no unreported error, no reference and no
 * owner is forgotten; a file used again (cache_find) becomes the most
 * recently used; files that cannot be forgotten are kept whatever the
 * count, and forgotten on a later creation once they can be.
 * cache_check() (which also checks the LRU list against the file table)
 * runs after every step.
 */
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cache.h"
#include "cunit_main.h"

#define KiB 1024u
#define CHECK(c) CU_ASSERT_TRUE(cache_check(c))

static const struct cache_ac AC = { 3.0, 60.0 };
static const struct nfs_cred U1 = { 1000, 1000, 0, { 0 }, NULL };
static const struct ctime3 WALL = { 2000000000u, 0 };

/* A cache of 16 pages of 4 KiB keeping at most max_files files. */
static struct cache *mk(uint64_t max_files)
{
	struct cache_params p = { 4 * KiB, 16 * (4 * KiB + cache_page_meta_bytes()), 4096, max_files, false };
	struct cache *c = cache_new(&p);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	return c;
}

/* Handle of file number id. */
static void fh_of(unsigned id, uint8_t fh[4])
{
	fh[0] = 0xfe;
	fh[1] = (uint8_t)(id >> 16);
	fh[2] = (uint8_t)(id >> 8);
	fh[3] = (uint8_t)id;
}

/* File number id (a counted reference) with attributes of size bytes. */
static struct cfile *open_file(struct cache *c, unsigned id, uint64_t size)
{
	uint8_t fh[4];
	struct cfile *f;
	struct cattr a;

	fh_of(id, fh);
	f = cache_get(c, fh, sizeof(fh));
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(&a, 0, sizeof(a));
	a.type = 1;
	a.nlink = 1;
	a.size = size;
	a.fileid = id;
	a.mtime.sec = a.ctime.sec = 100;
	cfile_attr_observe(c, f, &a, 0, &AC);
	return f;
}

/* Create file id with attributes and drop the reference: an idle file. */
static void touch_file(struct cache *c, unsigned id)
{
	struct cfile *f = open_file(c, id, 1000);

	cfile_put(c, &f);
}

/* True if the cache still knows file id (with its attributes). */
static bool known(struct cache *c, unsigned id)
{
	uint8_t fh[4];
	struct cfile *f;
	bool ok;

	fh_of(id, fh);
	f = cache_find(c, fh, sizeof(fh));
	ok = f && cfile_has_attr(f) && cfile_attr(f)->fileid == id;
	cfile_put(c, &f);
	return ok;
}

static uint64_t nfiles(struct cache *c, uint64_t *forgotten)
{
	struct cache_stats st;

	cache_stats_get(c, &st);
	if (forgotten)
		*forgotten = st.files_forgotten;
	return st.files;
}

static void test_idle_files_past_the_limit_go_oldest_first(void)
{
	struct cache *c = mk(16);
	uint64_t forgotten;

	for (unsigned id = 1; id <= 100; id++) {
		touch_file(c, id);
		CU_ASSERT_TRUE(nfiles(c, NULL) <= 16);
	}
	CHECK(c);
	CU_ASSERT_EQUAL(nfiles(c, &forgotten), 16);
	CU_ASSERT_EQUAL(forgotten, 84);
	/* Exactly the 16 newest remain. */
	for (unsigned id = 1; id <= 84; id++)
		CU_ASSERT_FALSE(known(c, id));
	/* (each miss above made and freed an attribute-less file) */
	for (unsigned id = 85; id <= 100; id++)
		CU_ASSERT_TRUE(known(c, id));
	CHECK(c);
	cache_free(&c);
}

static void test_a_file_used_again_is_kept(void)
{
	struct cache *c = mk(16);

	for (unsigned id = 1; id <= 16; id++)
		touch_file(c, id);
	/* File 1 is used again: file 2 is now the oldest. */
	CU_ASSERT_TRUE(known(c, 1));
	touch_file(c, 17);
	CU_ASSERT_TRUE(known(c, 1));
	CU_ASSERT_FALSE(known(c, 2));
	CU_ASSERT_TRUE(known(c, 3));
	CU_ASSERT_TRUE(known(c, 17));
	CU_ASSERT_EQUAL(nfiles(c, NULL), 16);
	CHECK(c);
	cache_free(&c);
}

static void test_busy_files_are_kept_then_forgotten_when_idle(void)
{
	struct cache *c = mk(16);
	struct cfile *held = open_file(c, 1, 1000);	/* a reference */
	struct cfile *paged = open_file(c, 2, 8192);	/* clean pages */
	struct cfile *dirty = open_file(c, 3, 0);	/* dirty bytes */
	uint8_t data[4096];
	uint64_t forgotten;

	memset(data, 'p', sizeof(data));
	cache_fill(c, paged, 0, data, sizeof(data));
	cfile_put(c, &paged);
	CU_ASSERT_EQUAL(cache_write_dirty(c, dirty, 0, data, 100, &U1, 1.0, WALL), 0);
	cfile_put(c, &dirty);
	for (unsigned id = 10; id < 200; id++)
		touch_file(c, id);
	CHECK(c);
	/* 16 files in all: the three busy ones and the 13 newest idle. */
	CU_ASSERT_EQUAL(nfiles(c, &forgotten), 16);
	CU_ASSERT_EQUAL(forgotten, 190 - 13);
	CU_ASSERT_TRUE(known(c, 1));
	CU_ASSERT_TRUE(known(c, 2));
	CU_ASSERT_TRUE(known(c, 3));
	CU_ASSERT_FALSE(known(c, 186));
	CU_ASSERT_TRUE(known(c, 187));

	/* The reference goes: file 1 becomes forgettable. Sixteen new files
	 * push every idle file out from the oldest end, 1 among them; 2
	 * and 3 stay while they hold pages (3's discarded dirty bytes leave
	 * an empty page that page eviction, not this bound, takes). */
	cfile_put(c, &held);
	{
		uint8_t fh[4];
		struct cfile *f;

		fh_of(3, fh);
		f = cache_find(c, fh, sizeof(fh));
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		cfile_discard_dirty(c, f);
		cfile_put(c, &f);
	}
	for (unsigned id = 200; id < 216; id++)
		touch_file(c, id);
	CHECK(c);
	CU_ASSERT_FALSE(known(c, 1));
	CU_ASSERT_TRUE(known(c, 2));
	CU_ASSERT_TRUE(known(c, 3));
	/* 188..199, 1, 187, 200 and 201 went (16 for 16 new files). */
	CU_ASSERT_FALSE(known(c, 187));
	CU_ASSERT_FALSE(known(c, 201));
	CU_ASSERT_TRUE(known(c, 202));
	CU_ASSERT_EQUAL(nfiles(c, NULL), 16);
	CU_ASSERT_TRUE(nfiles(c, NULL) <= 16);
	CHECK(c);
	cache_free(&c);
}

static void test_no_limit_keeps_every_file(void)
{
	struct cache *c = mk(0);
	uint64_t forgotten;

	for (unsigned id = 1; id <= 500; id++)
		touch_file(c, id);
	CU_ASSERT_EQUAL(nfiles(c, &forgotten), 500);
	CU_ASSERT_EQUAL(forgotten, 0);
	CU_ASSERT_TRUE(known(c, 1));
	CHECK(c);
	cache_free(&c);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("cache_files", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "idle_files_past_the_limit_go_oldest_first", test_idle_files_past_the_limit_go_oldest_first);
	CU_add_test(s, "a_file_used_again_is_kept", test_a_file_used_again_is_kept);
	CU_add_test(s, "busy_files_are_kept_then_forgotten_when_idle", test_busy_files_are_kept_then_forgotten_when_idle);
	CU_add_test(s, "no_limit_keeps_every_file", test_no_limit_keeps_every_file);
	return 0;
}
