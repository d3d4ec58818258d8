/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cache/meta, the metadata cache: name entries (positive,
 * negative with their own timeout), directory stamps (another writer's
 * change drops a directory's entries; the proxy's own change, told with
 * matching pre-operation attributes, keeps them), listings (pages appended
 * in cookie order, served from any cookie handed out, verifier and kind
 * checks) and the byte budget with LRU eviction. meta_check() runs after
 * every step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "meta.h"

#define NR(a)	(sizeof(a) / sizeof((a)[0]))
#define CHECK(m)	CU_ASSERT_TRUE(meta_check(m))
#define S(str)	(const uint8_t *)(str), strlen(str)

static const uint8_t DIR_A[] = { 0xd1, 0x01, 0x02, 0x03 };
static const uint8_t DIR_B[] = { 0xd2, 0x01, 0x02, 0x03, 0x04 };
static const uint8_t FH_X[] = { 0xf1, 0x11, 0x12 };
static const uint8_t FH_Y[] = { 0xf2, 0x21, 0x22, 0x23 };
static const uint8_t VERF1[META_VERF_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t VERF2[META_VERF_SIZE] = { 8, 7, 6, 5, 4, 3, 2, 1 };
static const uint8_t ZERO_VERF[META_VERF_SIZE];

/* A stamp: generation gen, size size, mtime and ctime t seconds. */
static struct meta_stamp stamp(uint64_t gen, uint64_t size, uint32_t t)
{
	struct meta_stamp s;

	memset(&s, 0, sizeof(s));
	s.gen = gen;
	s.wcc.size = size;
	s.wcc.mtime.sec = t;
	s.wcc.ctime.sec = t;
	return s;
}

/* Look up name in dir A as of st, returning what was found. */
static enum meta_found get_a(struct meta *m, const struct meta_stamp *st,
			     const char *name, double now, double neg,
			     uint8_t *fh, size_t *fhlen)
{
	uint8_t tmp[CACHE_FH_MAX];
	size_t tmplen;

	return meta_name_get(m, DIR_A, sizeof(DIR_A), st, S(name), now, neg,
			     fh ? fh : tmp, fhlen ? fhlen : &tmplen);
}

/* ---- names ---- */

static void test_positive_entry_returns_its_handle(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	uint8_t fh[CACHE_FH_MAX];
	size_t fhlen = 0;

	CU_ASSERT_EQUAL(get_a(m, &st, "x", 0, 3, fh, &fhlen), META_UNKNOWN);
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("x"),
				      FH_X, sizeof(FH_X), 10), 0);
	CHECK(m);
	CU_ASSERT_EQUAL(get_a(m, &st, "x", 1000, 3, fh, &fhlen), META_POSITIVE);
	CU_ASSERT_EQUAL(fhlen, sizeof(FH_X));
	CU_ASSERT_EQUAL(memcmp(fh, FH_X, sizeof(FH_X)), 0);
	/* Another directory with the same name knows nothing. */
	CU_ASSERT_EQUAL(meta_name_get(m, DIR_B, sizeof(DIR_B), &st, S("x"), 10,
				      3, fh, &fhlen), META_UNKNOWN);
	/* A name that is a prefix of the cached one is another name. */
	CU_ASSERT_EQUAL(get_a(m, &st, "xx", 10, 3, NULL, NULL), META_UNKNOWN);
	/* Replacing keeps one entry. */
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("x"),
				      FH_Y, sizeof(FH_Y), 11), 0);
	CU_ASSERT_EQUAL(get_a(m, &st, "x", 12, 3, fh, &fhlen), META_POSITIVE);
	CU_ASSERT_EQUAL(fhlen, sizeof(FH_Y));
	CU_ASSERT_EQUAL(memcmp(fh, FH_Y, sizeof(FH_Y)), 0);
	{
		struct meta_stats s;

		meta_stats_get(m, &s);
		CU_ASSERT_EQUAL(s.names, 1);
		CU_ASSERT_EQUAL(s.dirs, 1);
		CU_ASSERT_EQUAL(s.negatives, 0);
	}
	CHECK(m);
	meta_free(&m);
	CU_ASSERT_PTR_NULL(m);
}

static void test_negative_entry_expires_after_its_timeout(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stats s;

	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("gone"),
				      NULL, 0, 50.0), 0);
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.negatives, 1);
	CU_ASSERT_EQUAL(get_a(m, &st, "gone", 50.0, 3, NULL, NULL), META_NEGATIVE);
	CU_ASSERT_EQUAL(get_a(m, &st, "gone", 52.999, 3, NULL, NULL), META_NEGATIVE);
	/* A timeout of 0 turns negative entries off. */
	CU_ASSERT_EQUAL(get_a(m, &st, "gone", 51.0, 0, NULL, NULL), META_UNKNOWN);
	CHECK(m);
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.names, 0);	/* dropped when found expired */
	CU_ASSERT_EQUAL(s.dirs, 0);
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("gone"),
				      NULL, 0, 60.0), 0);
	CU_ASSERT_EQUAL(get_a(m, &st, "gone", 63.0, 3, NULL, NULL), META_UNKNOWN);
	/* A positive entry does not expire with the negative timeout. */
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("here"),
				      FH_X, sizeof(FH_X), 60.0), 0);
	CU_ASSERT_EQUAL(get_a(m, &st, "here", 1e6, 3, NULL, NULL), META_POSITIVE);
	CHECK(m);
	meta_free(&m);
}

static void test_changed_stamp_drops_the_directory(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stamp gen2 = stamp(2, 4096, 100);
	struct meta_stamp mtime = stamp(1, 4096, 101);
	struct meta_stats s;

	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("a"), FH_X, sizeof(FH_X), 0);
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("b"), NULL, 0, 0);
	meta_name_put(m, DIR_B, sizeof(DIR_B), &st, S("a"), FH_Y, sizeof(FH_Y), 0);
	/* A new generation (the cache saw another writer, or own change). */
	CU_ASSERT_EQUAL(get_a(m, &gen2, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	CU_ASSERT_EQUAL(get_a(m, &gen2, "b", 1, 3, NULL, NULL), META_UNKNOWN);
	/* The old stamp does not bring them back either. */
	CU_ASSERT_EQUAL(get_a(m, &st, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	meta_stats_get(m, &s);
	/* B's entry, and A's positive one as a hint; the negative is gone. */
	CU_ASSERT_EQUAL(s.names, 2);
	CU_ASSERT_EQUAL(s.stale, 1);
	CU_ASSERT_EQUAL(s.negatives, 0);
	CU_ASSERT_EQUAL(s.dir_drops, 2);
	CHECK(m);
	/* Changed attributes with the same generation also drop. */
	CU_ASSERT_EQUAL(meta_name_get(m, DIR_B, sizeof(DIR_B), &mtime, S("a"),
				      1, 3, (uint8_t[CACHE_FH_MAX]){ 0 },
				      &(size_t){ 0 }), META_UNKNOWN);
	/* A put under a new stamp replaces the old entries. */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("a"), FH_X, sizeof(FH_X), 0);
	meta_name_put(m, DIR_A, sizeof(DIR_A), &gen2, S("c"), FH_Y, sizeof(FH_Y), 0);
	CU_ASSERT_EQUAL(get_a(m, &gen2, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	CU_ASSERT_EQUAL(get_a(m, &gen2, "c", 1, 3, NULL, NULL), META_POSITIVE);
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.names, 3);	/* B's hint, A's a (hint) and c */
	CU_ASSERT_EQUAL(s.stale, 2);
	CU_ASSERT_EQUAL(s.dir_drops, 4);
	CHECK(m);
	/* An explicit drop frees everything of the directory. */
	meta_dir_drop(m, DIR_A, sizeof(DIR_A));
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.names, 1);
	CU_ASSERT_EQUAL(s.dirs, 1);
	CHECK(m);
	meta_free(&m);
}

static void test_hints_name_files_but_are_never_answered(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stamp st2 = stamp(2, 4096, 101);
	uint8_t fh[CACHE_FH_MAX];
	size_t fhlen = 0;
	bool current = true;

	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("f"), FH_X, sizeof(FH_X), 0);
	CU_ASSERT_TRUE(meta_name_peek(m, DIR_A, sizeof(DIR_A), S("f"), fh,
				      &fhlen, &current));
	CU_ASSERT_TRUE(current);
	/* An own change without pre-op attributes: the names become hints. */
	CU_ASSERT_FALSE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), NULL, &st2));
	CU_ASSERT_EQUAL(get_a(m, &st2, "f", 1, 3, NULL, NULL), META_UNKNOWN);
	memset(fh, 0, sizeof(fh));
	CU_ASSERT_TRUE(meta_name_peek(m, DIR_A, sizeof(DIR_A), S("f"), fh,
				      &fhlen, &current));
	CU_ASSERT_FALSE(current);
	CU_ASSERT_EQUAL(fhlen, sizeof(FH_X));
	CU_ASSERT_EQUAL(memcmp(fh, FH_X, sizeof(FH_X)), 0);
	/* post became the stamp: the next own change keeps new names. */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st2, S("g"), FH_Y, sizeof(FH_Y), 0);
	CU_ASSERT_EQUAL(get_a(m, &st2, "g", 1, 3, NULL, NULL), META_POSITIVE);
	CU_ASSERT_EQUAL(get_a(m, &st2, "f", 1, 3, NULL, NULL), META_UNKNOWN);
	/* Learning the name again makes it current. */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st2, S("f"), FH_Y, sizeof(FH_Y), 0);
	CU_ASSERT_EQUAL(get_a(m, &st2, "f", 1, 3, fh, &fhlen), META_POSITIVE);
	CU_ASSERT_EQUAL(memcmp(fh, FH_Y, sizeof(FH_Y)), 0);
	CU_ASSERT_TRUE(meta_name_peek(m, DIR_A, sizeof(DIR_A), S("f"), fh,
				      &fhlen, &current));
	CU_ASSERT_TRUE(current);
	CHECK(m);
	meta_free(&m);
}

static void test_names_too_long_or_empty_are_not_stored(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	char name[META_NAME_MAX + 2];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S(name),
				      FH_X, sizeof(FH_X), 0), -1);
	name[META_NAME_MAX] = '\0';
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S(name),
				      FH_X, sizeof(FH_X), 0), 0);
	CU_ASSERT_EQUAL(get_a(m, &st, name, 0, 3, NULL, NULL), META_POSITIVE);
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S(""),
				      FH_X, sizeof(FH_X), 0), -1);
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("h"),
				      FH_X, 0, 0), -1);
	CHECK(m);
	meta_free(&m);
}

/* ---- the proxy's own changes ---- */

static void test_own_change_with_matching_pre_keeps_names(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stamp post = stamp(2, 4096, 101);
	uint8_t fh[CACHE_FH_MAX];
	size_t fhlen;

	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("old"), FH_X, sizeof(FH_X), 0);
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("new"), NULL, 0, 0);
	/* RENAME old -> new by the proxy: wcc pre is the recorded state. */
	CU_ASSERT_TRUE(meta_name_peek(m, DIR_A, sizeof(DIR_A), S("old"), fh,
				      &fhlen, &(bool){ false }));
	CU_ASSERT_TRUE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), &st.wcc, &post));
	meta_name_put(m, DIR_A, sizeof(DIR_A), &post, S("old"), NULL, 0, 1);
	meta_name_put(m, DIR_A, sizeof(DIR_A), &post, S("new"), fh, fhlen, 1);
	CU_ASSERT_EQUAL(get_a(m, &post, "old", 2, 3, NULL, NULL), META_NEGATIVE);
	CU_ASSERT_EQUAL(get_a(m, &post, "new", 2, 3, fh, &fhlen), META_POSITIVE);
	CU_ASSERT_EQUAL(memcmp(fh, FH_X, sizeof(FH_X)), 0);
	CHECK(m);
	meta_free(&m);
}

static void test_own_change_with_other_pre_drops_names(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stamp post = stamp(2, 4096, 102);
	struct cwcc other = { 4096, { 101, 0 }, { 101, 0 } };
	struct meta_stats s;

	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("a"), FH_X, sizeof(FH_X), 0);
	/* Someone else changed it before the proxy's call did. */
	CU_ASSERT_FALSE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), &other, &post));
	CU_ASSERT_EQUAL(get_a(m, &post, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.stale, 1);
	CU_ASSERT_EQUAL(s.dir_drops, 1);
	/* No pre-operation attributes: the proxy cannot tell. */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("a"), FH_X, sizeof(FH_X), 0);
	CU_ASSERT_FALSE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), NULL, &post));
	CU_ASSERT_EQUAL(get_a(m, &post, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	/* No post-operation attributes: no stamp to go on. */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("a"), FH_X, sizeof(FH_X), 0);
	CU_ASSERT_FALSE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), &st.wcc, NULL));
	CU_ASSERT_EQUAL(get_a(m, &st, "a", 1, 3, NULL, NULL), META_UNKNOWN);
	/* A directory with nothing cached has nothing to keep. */
	CU_ASSERT_FALSE(meta_dir_mutated(m, DIR_B, sizeof(DIR_B), &st.wcc, &post));
	CHECK(m);
	meta_free(&m);
}

/* ---- listings ---- */

/* Entries named e0.. with fileid 100+i, cookie 1000+i, optional handle. */
static void make_entries(struct meta_dirent *e, char names[][24], size_t n,
			 size_t first, bool fh)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], 24, "e%zu", first + i);
		memset(&e[i], 0, sizeof(e[i]));
		e[i].fileid = 100 + first + i;
		e[i].cookie = 1000 + first + i;
		e[i].name = (const uint8_t *)names[i];
		e[i].namelen = (uint32_t)strlen(names[i]);
		if (fh) {
			e[i].fh = FH_X;
			e[i].fhlen = sizeof(FH_X);
		}
	}
}

/* Put entries [first, first+n) of the standard listing as one page. */
static void put_page(struct meta *m, const struct meta_stamp *st, bool plus,
		     uint64_t cookie, const uint8_t *verf, size_t first,
		     size_t n, bool eof)
{
	struct meta_dirent e[64];
	char names[64][24];

	make_entries(e, names, n, first, plus);
	meta_list_put(m, DIR_A, sizeof(DIR_A), st, plus, cookie, verf, e, n, eof);
}

static void test_listing_pages_append_in_cookie_order(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_view v;

	put_page(m, &st, true, 0, VERF1, 0, 10, false);
	CHECK(m);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 10);
	CU_ASSERT_FALSE(v.complete);
	CU_ASSERT_EQUAL(memcmp(v.verf, VERF1, META_VERF_SIZE), 0);
	/* A page from a cookie that is not the last one is not appended. */
	put_page(m, &st, true, 1005, VERF1, 6, 10, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 10);
	/* Nor one under another verifier. */
	put_page(m, &st, true, 1009, VERF2, 10, 10, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 10);
	/* The next page is. */
	put_page(m, &st, true, 1009, VERF1, 10, 5, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 15);
	CU_ASSERT_TRUE(v.complete);
	for (size_t i = 0; i < v.n; i++) {
		char want[24];

		snprintf(want, sizeof(want), "e%zu", i);
		CU_ASSERT_EQUAL(v.e[i].cookie, 1000 + i);
		CU_ASSERT_EQUAL(v.e[i].fileid, 100 + i);
		CU_ASSERT_EQUAL(v.e[i].namelen, strlen(want));
		CU_ASSERT_EQUAL(memcmp(v.e[i].name, want, strlen(want)), 0);
		CU_ASSERT_EQUAL(v.e[i].name[v.e[i].namelen], '\0');
		CU_ASSERT_EQUAL(v.e[i].fhlen, sizeof(FH_X));
		CU_ASSERT_EQUAL(memcmp(v.e[i].fh, FH_X, sizeof(FH_X)), 0);
	}
	/* Nothing after eof is appended. */
	put_page(m, &st, true, 1014, VERF1, 15, 5, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 15);
	CHECK(m);
	meta_free(&m);
}

static void test_listing_continues_after_any_cookie_handed_out(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_view v;

	put_page(m, &st, false, 0, VERF1, 0, 20, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 1007, VERF1, &v));
	CU_ASSERT_EQUAL(v.n, 12);
	CU_ASSERT_EQUAL(v.e[0].cookie, 1008);
	CU_ASSERT_TRUE(v.complete);
	/* Backwards too (a client may restart from an older cookie). */
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 1002, VERF1, &v));
	CU_ASSERT_EQUAL(v.n, 17);
	/* The last cookie: nothing left, complete. */
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 1019, VERF1, &v));
	CU_ASSERT_EQUAL(v.n, 0);
	CU_ASSERT_TRUE(v.complete);
	/* Unknown cookie, or a stale verifier: the cache cannot answer. */
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 999, VERF1, &v));
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 1007, VERF2, &v));
	/* Cookie 0 needs no verifier. */
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 0, VERF2, &v));
	CU_ASSERT_EQUAL(v.n, 20);
	/* READDIRPLUS cannot be served from a READDIR listing. */
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CHECK(m);
	meta_free(&m);
}

static void test_plus_listing_serves_readdir_and_is_kept(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_view v;

	put_page(m, &st, true, 0, VERF1, 0, 8, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 8);
	/* A READDIR page from cookie 0 does not replace it. */
	put_page(m, &st, false, 0, VERF2, 0, 3, false);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 8);
	CU_ASSERT_TRUE(v.complete);
	/* A READDIRPLUS page from cookie 0 replaces a READDIR listing. */
	meta_dir_drop(m, DIR_A, sizeof(DIR_A));
	put_page(m, &st, false, 0, VERF2, 0, 3, false);
	put_page(m, &st, true, 0, VERF1, 0, 4, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 4);
	CHECK(m);
	meta_free(&m);
}

static void test_listing_goes_with_any_directory_change(void)
{
	struct meta *m = meta_new(1 << 20);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stamp same = stamp(2, 4096, 100);
	struct meta_stamp changed = stamp(3, 4096, 101);
	struct meta_view v;

	put_page(m, &st, false, 0, VERF1, 0, 5, true);
	/* A failed own call (post equal to pre) keeps the listing. */
	CU_ASSERT_TRUE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), &st.wcc, &same));
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &same, false, 0, ZERO_VERF, &v));
	/* An own change keeps names but not the listing (new cookies). */
	meta_name_put(m, DIR_A, sizeof(DIR_A), &same, S("n"), FH_X, sizeof(FH_X), 0);
	CU_ASSERT_TRUE(meta_dir_mutated(m, DIR_A, sizeof(DIR_A), &same.wcc, &changed));
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &changed, false, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(get_a(m, &changed, "n", 0, 3, NULL, NULL), META_POSITIVE);
	/* Another writer: a stale stamp loses everything. */
	put_page(m, &changed, false, 0, VERF1, 0, 5, true);
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, false, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(get_a(m, &changed, "n", 0, 3, NULL, NULL), META_UNKNOWN);
	CHECK(m);
	meta_free(&m);
}

/* ---- budget ---- */

static void test_budget_evicts_least_recently_used_names(void)
{
	const uint64_t budget = 64 * 1024;
	struct meta *m = meta_new(budget);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_stats s;
	char name[32];
	int misses = 0;

	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "name-%06d", i);
		CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st,
					      S(name), NULL, 0, 0), 0);
		/* name-000000 is used all the time: it stays. */
		if (get_a(m, &st, "name-000000", 1, 3, NULL, NULL) != META_NEGATIVE)
			misses++;
		meta_stats_get(m, &s);
		if (s.bytes > budget)
			break;
	}
	CU_ASSERT_EQUAL(misses, 0);
	meta_stats_get(m, &s);
	CU_ASSERT_TRUE(s.bytes <= budget);
	CU_ASSERT_TRUE(s.bytes > budget / 2);
	CU_ASSERT_TRUE(s.names > 100 && s.names < 20000);
	CU_ASSERT_EQUAL(s.evictions, 20000 - s.names);
	CU_ASSERT_EQUAL(s.negatives, s.names);
	/* The oldest others are gone, the newest are there. */
	CU_ASSERT_EQUAL(get_a(m, &st, "name-000001", 1, 3, NULL, NULL), META_UNKNOWN);
	CU_ASSERT_EQUAL(get_a(m, &st, "name-019999", 1, 3, NULL, NULL), META_NEGATIVE);
	CHECK(m);
	/* Shrinking the budget evicts at once; 0 keeps nothing. */
	meta_set_budget(m, budget / 4);
	meta_stats_get(m, &s);
	CU_ASSERT_TRUE(s.bytes <= budget / 4);
	CU_ASSERT_EQUAL(get_a(m, &st, "name-019999", 1, 3, NULL, NULL), META_NEGATIVE);
	CHECK(m);
	meta_set_budget(m, 0);
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.bytes, 0);
	CU_ASSERT_EQUAL(s.dirs, 0);
	CU_ASSERT_EQUAL(meta_name_put(m, DIR_A, sizeof(DIR_A), &st, S("x"),
				      NULL, 0, 0), -1);
	CHECK(m);
	meta_free(&m);
}

static void test_listing_larger_than_budget_is_not_kept(void)
{
	struct meta *m = meta_new(8 * 1024);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_view v;
	struct meta_stats s;

	meta_name_put(m, DIR_B, sizeof(DIR_B), &st, S("keep"), FH_Y, sizeof(FH_Y), 0);
	for (size_t first = 0; first < 640; first += 64)
		put_page(m, &st, true, first ? 1000 + first - 1 : 0, VERF1,
			 first, 64, first + 64 == 640);
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	meta_stats_get(m, &s);
	CU_ASSERT_EQUAL(s.refused, 1);
	CU_ASSERT_EQUAL(s.listings, 0);
	CU_ASSERT_TRUE(s.bytes <= 8 * 1024);
	/* It took at most half the budget: the name was never evicted. */
	CU_ASSERT_EQUAL(s.evictions, 0);
	CU_ASSERT_EQUAL(meta_name_get(m, DIR_B, sizeof(DIR_B), &st, S("keep"), 0,
				      3, (uint8_t[CACHE_FH_MAX]){ 0 },
				      &(size_t){ 0 }), META_POSITIVE);
	CHECK(m);
	/* A small listing fits beside a name. */
	put_page(m, &st, true, 0, VERF1, 0, 10, true);
	CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	CU_ASSERT_EQUAL(v.n, 10);
	CHECK(m);
	meta_free(&m);
}

static void test_listing_and_names_share_one_lru(void)
{
	struct meta *m = meta_new(16 * 1024);
	struct meta_stamp st = stamp(1, 4096, 100);
	struct meta_view v;
	char name[32];

	put_page(m, &st, true, 0, VERF1, 0, 10, true);
	/* Names in B push the unused listing out. */
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "b-%04d", i);
		meta_name_put(m, DIR_B, sizeof(DIR_B), &st, S(name), FH_Y,
			      sizeof(FH_Y), 0);
		CU_ASSERT_TRUE(meta_check(m));
	}
	CU_ASSERT_FALSE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true, 0, ZERO_VERF, &v));
	/* A listing in use stays while names come and go. */
	put_page(m, &st, true, 0, VERF1, 0, 10, true);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "c-%04d", i);
		meta_name_put(m, DIR_B, sizeof(DIR_B), &st, S(name), FH_Y,
			      sizeof(FH_Y), 0);
		CU_ASSERT_TRUE(meta_list_get(m, DIR_A, sizeof(DIR_A), &st, true,
					     0, ZERO_VERF, &v));
	}
	CHECK(m);
	meta_free(&m);
}

#define T(f) { #f, f }

struct tcase {
	const char *name;
	void (*fn)(void);
};

static const struct tcase name_tests[] = {
	T(test_positive_entry_returns_its_handle),
	T(test_negative_entry_expires_after_its_timeout),
	T(test_changed_stamp_drops_the_directory),
	T(test_names_too_long_or_empty_are_not_stored),
	T(test_hints_name_files_but_are_never_answered),
	T(test_own_change_with_matching_pre_keeps_names),
	T(test_own_change_with_other_pre_drops_names),
};

static const struct tcase list_tests[] = {
	T(test_listing_pages_append_in_cookie_order),
	T(test_listing_continues_after_any_cookie_handed_out),
	T(test_plus_listing_serves_readdir_and_is_kept),
	T(test_listing_goes_with_any_directory_change),
};

static const struct tcase budget_tests[] = {
	T(test_budget_evicts_least_recently_used_names),
	T(test_listing_larger_than_budget_is_not_kept),
	T(test_listing_and_names_share_one_lru),
};

/* Add suite name with its n tests. */
static int add_suite(const char *name, const struct tcase *t, size_t n)
{
	CU_pSuite s = CU_add_suite(name, NULL, NULL);

	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!CU_add_test(s, t[i].name, t[i].fn))
			return -1;
	return 0;
}

int test_register(void)
{
	if (add_suite("meta_names", name_tests, NR(name_tests)) ||
	    add_suite("meta_listings", list_tests, NR(list_tests)) ||
	    add_suite("meta_budget", budget_tests, NR(budget_tests)))
		return -1;
	return 0;
}
