/* SPDX-License-Identifier: MIT */
/*
 * test_nlm_locks: each client's locks held upstream (daemon/nlm/
 * nlm_locks.h): records by client, one record for a lock granted twice,
 * UNLOCKs that take their range out (removing, shrinking, splitting), a
 * client taken out whole; and the table kept in a store (nlm_store.h):
 * what a restart loads is what the table held, a store that does not
 * read is set aside and the table starts empty, a store that cannot be
 * written (the file size limit) fails no change and catches up whole.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "log.h"
#include "nlm_locks.h"
#include "nlm_store.h"

static struct nlm_held rec(const char *fh, const char *oh, uint64_t off,
			   uint64_t len)
{
	static uint8_t ohbuf[8][64];
	static unsigned k;
	struct nlm_held h;

	memset(&h, 0, sizeof(h));
	h.export_id = 1;
	h.fh_len = strlen(fh);
	memcpy(h.fh, fh, h.fh_len);
	h.oh = ohbuf[k++ % 8];
	h.oh_len = strlen(oh);
	memcpy(h.oh, oh, h.oh_len);
	h.svid = 7;
	h.off = off;
	h.len = len;
	return h;
}

static unsigned list_len(const struct nlm_held *h)
{
	unsigned n = 0;

	for (; h; h = h->next)
		n++;
	return n;
}

static void test_add_and_take(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held a1 = rec("F1", "oA", 0, 10), a2 = rec("F2", "oA", 5, 5);
	struct nlm_held b1 = rec("F1", "oB", 50, 10);
	struct nlm_held *got;
	bool known;

	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a1), 1);	/* new client */
	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a2), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "b", &b1), 1);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	got = nlm_locks_take(t, "a", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_EQUAL(list_len(got), 2);
	/* Copies: the caller's buffers are not kept. */
	CU_ASSERT_PTR_NOT_EQUAL(got->oh, a1.oh);
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	CU_ASSERT_PTR_NULL(nlm_locks_take(t, "nobody", &known));
	CU_ASSERT_FALSE(known);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
	CU_ASSERT_PTR_NULL(t);
}

static void test_unlock_takes_ranges_out(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held r1 = rec("F", "o", 0, 10), r2 = rec("F", "o", 20, 10);
	struct nlm_held r3 = rec("F", "o", 40, 0), r4 = rec("F", "p", 0, 10);
	struct nlm_held r5 = rec("G", "o", 0, 10);
	const uint8_t *F = (const uint8_t *)"F", *G = (const uint8_t *)"G";
	const uint8_t *o = (const uint8_t *)"o", *pp = (const uint8_t *)"p";

	nlm_locks_add(t, "c", &r1);
	nlm_locks_add(t, "c", &r2);
	nlm_locks_add(t, "c", &r3);
	nlm_locks_add(t, "c", &r4);
	nlm_locks_add(t, "c", &r5);
	/* [0,5) off [0,10): [5,10) stays. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 5), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 5);
	/* [0,30) takes [5,10) and [20,30) of owner o on F; not r4 (owner
	 * p), r5 (file G) or r3 (from 40). */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 30), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	/* [40,1040) off [40,end): [1040,end) stays; [30,end) takes it. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 40, 1000), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 3);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 1039, 1), 0);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 30, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 2);
	/* The client stays known with no locks left. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, pp, 1, 0, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", G, 1, o, 1, 0, 0), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "none", G, 1, o, 1, 0, 0), 0);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
}

static void test_split_and_repeat(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held r = rec("F", "o", 0, 100);
	const uint8_t *F = (const uint8_t *)"F", *o = (const uint8_t *)"o";
	struct nlm_held *got;
	bool known;

	/* The same lock granted again is one record, granted twice. */
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &r), 1);
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &r), 0);
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	/* Another client, range or owner is another record. */
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "d", &r), 0);
	{
		struct nlm_held r2 = rec("F", "o", 0, 99);
		struct nlm_held r3 = rec("F", "q", 0, 100);

		CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r2), 0);
		CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r3), 0);
	}
	/* An UNLOCK in the middle splits it: [0,10) and [20,100). */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 10, 10), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 2);
	/* Unlocked: no record of the whole range any more. */
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &r), 0);
	/* Two halves of a lock unlocked in turn leave nothing. */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 0, 10), 1);
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "c", F, 1, o, 1, 20, 40), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	got = nlm_locks_take(t, "c", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	CU_ASSERT_EQUAL(got->off, 60);
	CU_ASSERT_EQUAL(got->len, 40);
	CU_ASSERT_PTR_NULL(got->next);
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
}

static void test_refused(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held h = rec("F", "o", 0, 1);

	CU_ASSERT_EQUAL(nlm_locks_add(t, "", &h), -1);
	h.fh_len = 0;
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), -1);
	h = rec("F", "o", 0, 1);
	h.oh_len = NLM_LOCKS_OH_MAX + 1;
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), -1);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 0);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	nlm_locks_free(&t);
}

/* A new empty directory for a store (removed by rm_dir). */
static void tmp_dir(char *dir, size_t len)
{
	snprintf(dir, len, "%s/nlmstore.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

/* Remove dir and the store's files in it. */
static void rm_dir(const char *dir)
{
	static const char *const names[] = { "nlm.mdb", "nlm.mdb-lock",
					     "nlm.mdb.bad" };
	char path[4200];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A table loaded from dir's store (*s opened there): *clients loaded. */
static struct nlm_locks *reopen(const char *dir, struct nlm_store **s,
				int *clients)
{
	struct nlm_locks *t = nlm_locks_new();

	*s = nlm_store_open(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*s);
	CU_ASSERT_TRUE(nlm_store_active(*s));
	*clients = nlm_locks_load(t, *s);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	return t;
}

/* Whether list h has a record of fh, oh, off, len (svid 7, export 1)
 * with exclusive ex. */
static bool has(const struct nlm_held *h, const char *fh, const char *oh,
		uint64_t off, uint64_t len, bool ex)
{
	for (; h; h = h->next)
		if (h->fh_len == strlen(fh) && !memcmp(h->fh, fh, h->fh_len) &&
		    h->oh_len == strlen(oh) && !memcmp(h->oh, oh, h->oh_len) &&
		    h->off == off && h->len == len && h->exclusive == ex &&
		    h->svid == 7 && h->export_id == 1)
			return true;
	return false;
}

/* nlm_locks_owned: the owner's records of the file that overlap the
 * range, cut to it, exclusive as recorded, ordered by start; others,
 * none, or another client's, not; the table unchanged. */
static void test_owned(void)
{
	struct nlm_locks *t = nlm_locks_new();
	struct nlm_held r1 = rec("F", "o", 0, 10), r2 = rec("F", "o", 20, 10);
	struct nlm_held r3 = rec("F", "o", 40, 0), r4 = rec("F", "p", 0, 10);
	struct nlm_held r5 = rec("G", "o", 0, 10), q;
	struct nlm_held *got;
	bool failed = true;

	r2.exclusive = true;
	/* Added out of order: the copies still come by start. */
	nlm_locks_add(t, "c", &r2);
	nlm_locks_add(t, "c", &r3);
	nlm_locks_add(t, "c", &r1);
	nlm_locks_add(t, "c", &r4);
	nlm_locks_add(t, "c", &r5);
	nlm_locks_add(t, "d", &r1);
	/* [5, 45): [5,10), [20,30) exclusive, [40,45). */
	q = rec("F", "o", 5, 40);
	got = nlm_locks_owned(t, "c", &q, &failed);
	CU_ASSERT_FALSE(failed);
	CU_ASSERT_EQUAL(list_len(got), 3);
	CU_ASSERT_TRUE(has(got, "F", "o", 5, 5, false));
	CU_ASSERT_TRUE(has(got, "F", "o", 20, 10, true));
	CU_ASSERT_TRUE(has(got, "F", "o", 40, 5, false));
	/* Ordered by start. */
	CU_ASSERT_EQUAL_FATAL(list_len(got), 3);
	CU_ASSERT_EQUAL(got->off, 5);
	CU_ASSERT_EQUAL(got->next->off, 20);
	CU_ASSERT_EQUAL(got->next->next->off, 40);
	nlm_held_free_list(got);
	/* To the end from 25: [25,30) and [40,end). */
	q = rec("F", "o", 25, 0);
	got = nlm_locks_owned(t, "c", &q, &failed);
	CU_ASSERT_EQUAL(list_len(got), 2);
	CU_ASSERT_TRUE(has(got, "F", "o", 25, 5, true));
	CU_ASSERT_TRUE(has(got, "F", "o", 40, 0, false));
	nlm_held_free_list(got);
	/* A gap; another client; none such. */
	q = rec("F", "o", 10, 10);
	CU_ASSERT_PTR_NULL(nlm_locks_owned(t, "c", &q, &failed));
	CU_ASSERT_FALSE(failed);
	q = rec("F", "o", 20, 10);
	CU_ASSERT_PTR_NULL(nlm_locks_owned(t, "d", &q, &failed));
	CU_ASSERT_PTR_NULL(nlm_locks_owned(t, "e", &q, &failed));
	CU_ASSERT_EQUAL(nlm_locks_held(t), 6);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
}

static void test_store_round_trip(void)
{
	char dir[4096];
	struct nlm_store *s;
	struct nlm_locks *t;
	struct nlm_held a1 = rec("F1", "oA", 0, 100), a2 = rec("F2", "oA", 5, 5);
	struct nlm_held b1 = rec("F1", "oB", 200, 10), c1 = rec("F3", "oC", 0, 0);
	struct nlm_store_stats st;
	struct nlm_held *got;
	bool known;
	int clients;

	tmp_dir(dir, sizeof(dir));
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 0);
	a1.exclusive = true;
	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a1), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "a", &a2), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "b", &b1), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &c1), 1);
	/* a's [0,100) split by an UNLOCK of [40,50); b removed (rebooted). */
	CU_ASSERT_EQUAL(nlm_locks_unlock(t, "a", (const uint8_t *)"F1", 2,
					 (const uint8_t *)"oA", 2, 40, 10), 1);
	got = nlm_locks_take(t, "b", &known);
	CU_ASSERT_TRUE(known);
	nlm_held_free_list(got);
	nlm_locks_free(&t);		/* as a SIGKILL: nothing more written */
	nlm_store_close(&s);

	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 2);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 4);
	got = nlm_locks_take(t, "b", &known);
	CU_ASSERT_FALSE(known);
	CU_ASSERT_PTR_NULL(got);
	/* A loaded lock counts as granted once. */
	CU_ASSERT_EQUAL(nlm_locks_grants(t, "c", &c1), 1);
	/* Ids go on after the loaded ones. */
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &b1), 0);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	got = nlm_locks_take(t, "a", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_EQUAL(list_len(got), 3);
	CU_ASSERT_TRUE(has(got, "F1", "oA", 0, 40, true));
	CU_ASSERT_TRUE(has(got, "F1", "oA", 50, 50, true));
	CU_ASSERT_TRUE(has(got, "F2", "oA", 5, 5, false));
	nlm_held_free_list(got);
	got = nlm_locks_take(t, "c", &known);
	CU_ASSERT_EQUAL(list_len(got), 2);
	CU_ASSERT_TRUE(has(got, "F3", "oC", 0, 0, false));
	CU_ASSERT_TRUE(has(got, "F1", "oB", 200, 10, false));
	nlm_held_free_list(got);
	nlm_store_stats_get(s, &st);
	CU_ASSERT_EQUAL(st.write_failures, 0);
	CU_ASSERT_EQUAL(st.resets, 0);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	/* Both taken: nothing left to load. */
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 0);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 0);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	rm_dir(dir);
}

/* A record whose owner is arg (a string). */
static bool owner_is(const void *arg, const struct nlm_held *h)
{
	return h->oh_len == strlen(arg) && memcmp(h->oh, arg, h->oh_len) == 0;
}

/* FREE_ALL's take: the picked records go, the others stay, on disk as in
 * memory; a client left with none goes. */
static void test_store_take_if(void)
{
	char dir[4096];
	struct nlm_store *s;
	struct nlm_locks *t;
	struct nlm_held a1 = rec("F1", "oA", 0, 10), a2 = rec("F2", "oA", 0, 10);
	struct nlm_held x1 = rec("F1", "oX", 20, 10);
	struct nlm_held *got;
	bool known;
	int clients;

	tmp_dir(dir, sizeof(dir));
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &a1), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &a2), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &x1), 0);
	got = nlm_locks_take_if(t, "c", owner_is, "oA", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_EQUAL(list_len(got), 2);
	CU_ASSERT_TRUE(has(got, "F1", "oA", 0, 10, false));
	CU_ASSERT_TRUE(has(got, "F2", "oA", 0, 10, false));
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(t));
	nlm_locks_free(&t);
	nlm_store_close(&s);

	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 1);
	got = nlm_locks_take_if(t, "c", owner_is, "oA", &known);
	CU_ASSERT_TRUE(known);
	CU_ASSERT_PTR_NULL(got);
	got = nlm_locks_take_if(t, "c", owner_is, "oX", &known);
	CU_ASSERT_EQUAL(list_len(got), 1);
	CU_ASSERT_TRUE(has(got, "F1", "oX", 20, 10, false));
	nlm_held_free_list(got);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 0);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 0);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	rm_dir(dir);
}

/* Counts the warnings logged. */
static void count_warn(void *arg, enum log_level level, const char *text)
{
	(void)text;
	if (level == LOG_LEVEL_WARN)
		(*(unsigned *)arg)++;
}

/* Change the first byte of needle in file path; true if found. */
static bool flip(const char *path, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r+b");
	size_t n, k = strlen(needle);
	bool done = false;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf), f);
	for (size_t i = 0; i + k <= n && !done; i++)
		if (memcmp(buf + i, needle, k) == 0) {
			fseek(f, (long)i, SEEK_SET);
			fputc(needle[0] ^ 0x20, f);
			done = true;
		}
	fclose(f);
	return done;
}

/* Reopen dir's store after its file was damaged: the load returned
 * want_clients, the file was set aside whole (nlm.mdb.bad, of bad_size
 * bytes unless bad_size is -1), counted once and logged as the
 * want_warns-th warning (*warns); the table starts empty. The table
 * returned and *s are open. */
static struct nlm_locks *reopen_set_aside(const char *dir,
					  struct nlm_store **s,
					  int want_clients,
					  const unsigned *warns,
					  unsigned want_warns, off_t bad_size)
{
	char path[4200];
	struct nlm_store_stats st;
	struct nlm_locks *t;
	struct stat sb;
	int clients;

	t = reopen(dir, s, &clients);
	CU_ASSERT_EQUAL(clients, want_clients);
	CU_ASSERT_EQUAL(nlm_locks_clients(t), 0);
	nlm_store_stats_get(*s, &st);
	CU_ASSERT_EQUAL(st.resets, 1);
	CU_ASSERT_EQUAL(*warns, want_warns);
	snprintf(path, sizeof(path), "%s/nlm.mdb.bad", dir);
	CU_ASSERT_EQUAL(stat(path, &sb), 0);	/* moved aside, not emptied */
	if (bad_size >= 0)
		CU_ASSERT_EQUAL(sb.st_size, bad_size);
	return t;
}

static void test_store_unreadable(void)
{
	char dir[4096], path[4200];
	struct nlm_store *s;
	struct nlm_locks *t;
	struct nlm_held h = rec("F", "o", 0, 1);
	unsigned warns = 0;
	int clients;
	FILE *f;

	log_set_sink(count_warn, &warns);
	/* A record that does not check: the table starts empty. */
	tmp_dir(dir, sizeof(dir));
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "client-name-x", &h), 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	snprintf(path, sizeof(path), "%s/nlm.mdb", dir);
	CU_ASSERT_TRUE_FATAL(flip(path, "client-name-x"));
	t = reopen_set_aside(dir, &s, -1, &warns, 1, -1);
	/* It goes on working, emptied. */
	CU_ASSERT_EQUAL(nlm_locks_add(t, "y", &h), 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	/* Not LMDB at all: set aside, a new store made. */
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (int i = 0; i < 4096; i++)
		fputc('x', f);
	fclose(f);
	t = reopen_set_aside(dir, &s, 0, &warns, 2, 4096);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "z", &h), 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	/* Cut short (as a crash of the host may leave it): its meta page
	 * names pages past the end; set aside, never read. */
	CU_ASSERT_EQUAL_FATAL(truncate(path, 8192), 0);
	t = reopen_set_aside(dir, &s, 0, &warns, 3, 8192);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	/* Random bytes in its data pages: a record fails its checksum; the
	 * file is set aside whole (deleting from its damaged pages aborted
	 * the daemon in LMDB's mdb_node_move, at every start). */
	snprintf(path, sizeof(path), "cp '%s' '%s/nlm.mdb'", NLM_DAMAGED_FIXTURE,
		 dir);
	CU_ASSERT_EQUAL_FATAL(system(path), 0);
	t = reopen_set_aside(dir, &s, -1, &warns, 4, 221184);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "w", &h), 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 1);
	nlm_locks_free(&t);
	nlm_store_close(&s);

	/* Cut to nothing: LMDB would take it for a new store, silently;
	 * it is set aside as any cut file is (a fresh tester's find). */
	snprintf(path, sizeof(path), "%s/nlm.mdb", dir);
	CU_ASSERT_EQUAL_FATAL(truncate(path, 0), 0);
	t = reopen_set_aside(dir, &s, 0, &warns, 5, 0);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	log_set_sink(NULL, NULL);
	rm_dir(dir);
}

/* An owner of 1000 bytes numbered i (so records fill pages fast). */
static struct nlm_held big(unsigned i, uint8_t *oh)
{
	struct nlm_held h = rec("F", "o", (uint64_t)i * 10, 10);

	memset(oh, 'a' + (int)(i % 26), 1000);
	h.oh = oh;
	h.oh_len = 1000;
	return h;
}

static void test_store_write_fails(void)
{
	char dir[4096], path[4200];
	uint8_t oh[1000];
	struct nlm_store *s;
	struct nlm_locks *t;
	struct nlm_store_stats st;
	struct rlimit old, lim;
	struct nlm_held h, *got;
	struct stat sb;
	unsigned warns = 0, first_fail = 0;
	bool known;
	int clients;

	tmp_dir(dir, sizeof(dir));
	t = reopen(dir, &s, &clients);
	h = big(0, oh);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), 1);
	snprintf(path, sizeof(path), "%s/nlm.mdb", dir);
	CU_ASSERT_EQUAL_FATAL(stat(path, &sb), 0);
	/* The file may not grow: a write past its end fails (EFBIG). */
	signal(SIGXFSZ, SIG_IGN);
	CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)sb.st_size;
	CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
	log_set_sink(count_warn, &warns);
	for (unsigned i = 1; i < 64; i++) {
		h = big(i, oh);
		CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), 0);
		nlm_store_stats_get(s, &st);
		if (!first_fail && st.write_failures)
			first_fail = i;
	}
	setrlimit(RLIMIT_FSIZE, &old);
	/* Every change from the first failed one on was not written (each
	 * counted), logged once; the table has them all. */
	CU_ASSERT_FATAL(first_fail > 0);
	nlm_store_stats_get(s, &st);
	CU_ASSERT_EQUAL(st.write_failures, 64 - first_fail);
	CU_ASSERT_EQUAL(warns, 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 64);
	/* The next change writes the table whole. */
	h = big(64, oh);
	CU_ASSERT_EQUAL(nlm_locks_add(t, "c", &h), 0);
	nlm_store_stats_get(s, &st);
	CU_ASSERT_EQUAL(st.write_failures, 64 - first_fail);
	log_set_sink(NULL, NULL);
	signal(SIGXFSZ, SIG_DFL);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	t = reopen(dir, &s, &clients);
	CU_ASSERT_EQUAL(clients, 1);
	CU_ASSERT_EQUAL(nlm_locks_held(t), 65);
	got = nlm_locks_take(t, "c", &known);
	for (unsigned i = 0; i <= 64; i++) {
		const struct nlm_held *r = got;

		h = big(i, oh);
		while (r && !(r->off == h.off && r->len == h.len &&
			      r->oh_len == h.oh_len &&
			      memcmp(r->oh, h.oh, h.oh_len) == 0))
			r = r->next;
		CU_ASSERT_PTR_NOT_NULL(r);
	}
	nlm_held_free_list(got);
	nlm_locks_free(&t);
	nlm_store_close(&s);
	rm_dir(dir);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nlm_locks", NULL, NULL);

	if (!s || !CU_add_test(s, "add_and_take", test_add_and_take) ||
	    !CU_add_test(s, "unlock_takes_ranges_out",
			 test_unlock_takes_ranges_out) ||
	    !CU_add_test(s, "split_and_repeat", test_split_and_repeat) ||
	    !CU_add_test(s, "refused", test_refused) ||
	    !CU_add_test(s, "owned", test_owned) ||
	    !CU_add_test(s, "store_round_trip", test_store_round_trip) ||
	    !CU_add_test(s, "store_take_if", test_store_take_if) ||
	    !CU_add_test(s, "store_unreadable", test_store_unreadable) ||
	    !CU_add_test(s, "store_write_fails", test_store_write_fails))
		return -1;
	return 0;
}
