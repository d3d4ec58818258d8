/* SPDX-License-Identifier: MIT */
/*
 * test_nlm_nsm: an upstream's reboot passed on (daemon/nlm/nlm_nsm.h):
 * the status monitor's callback told apart by name (an export's upstream
 * host, case ignored, against the clients' caller names the integration
 * tests use), each upstream host watched once, the NSM state number read
 * odd from state_dir, and a reboot dropping the records of that
 * upstream's exports only (the others' stay, in the table and the store).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "cunit_main.h"
#include "daemon.h"
#include "nlm_locks.h"
#include "nlm_nsm.h"
#include "nlm_store.h"

/* A daemon of two exports: 1 on 127.0.0.1, 2 on Files.Example. */
struct two {
	struct conf_export ce[2];
	struct export_rt ex[2];
	struct export_rt *exs[2];
	struct daemon d;
};

static void two_init(struct two *t)
{
	memset(t, 0, sizeof(*t));
	t->ce[0].id = 1;
	t->ce[0].url.server = (char *)(uintptr_t)"127.0.0.1";
	t->ce[1].id = 2;
	t->ce[1].url.server = (char *)(uintptr_t)"Files.Example";
	for (int i = 0; i < 2; i++) {
		t->ex[i].conf = &t->ce[i];
		t->ex[i].d = &t->d;
		t->exs[i] = &t->ex[i];
	}
	t->d.exports = t->exs;
	t->d.nexports = 2;
}

static void test_upstream_or_client(void)
{
	struct two t;

	two_init(&t);
	CU_ASSERT_TRUE(nlm_nsm_is_upstream(&t.d, "127.0.0.1"));
	CU_ASSERT_TRUE(nlm_nsm_is_upstream(&t.d, "files.example"));
	/* The caller names of test_nlm.c's clients, and near misses. */
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, "client-a.test"));
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, "client-b.test"));
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, "127.0.0.10"));
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, "files.example."));
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, ""));
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, NULL));
	t.d.nexports = 0;
	CU_ASSERT_FALSE(nlm_nsm_is_upstream(&t.d, "127.0.0.1"));
}

static void test_watch_once(void)
{
	struct nlm_nsm *n = nlm_nsm_new(NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(nlm_nsm_state(n), 1);
	CU_ASSERT_TRUE(nlm_nsm_watch(n, "127.0.0.1"));
	CU_ASSERT_FALSE(nlm_nsm_watch(n, "127.0.0.1"));
	CU_ASSERT_TRUE(nlm_nsm_watch(n, "Files.Example"));
	CU_ASSERT_FALSE(nlm_nsm_watch(n, "files.example"));
	CU_ASSERT_FALSE(nlm_nsm_watch(n, ""));
	CU_ASSERT_FALSE(nlm_nsm_watch(n, NULL));
	CU_ASSERT_PTR_NULL(nlm_nsm_check_why(n));
	nlm_nsm_free(&n);
	CU_ASSERT_PTR_NULL(n);
}

/* A new empty directory. */
static void tmp_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/test_nlm_nsm.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

/* Write text to dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* The state number nlm_nsm_new reads from dir. */
static int32_t state_of(const char *dir)
{
	struct nlm_nsm *n = nlm_nsm_new(dir);
	int32_t s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	s = nlm_nsm_state(n);
	nlm_nsm_free(&n);
	return s;
}

static void test_state_file(void)
{
	char dir[64], path[4200];

	tmp_dir(dir, sizeof(dir));
	CU_ASSERT_EQUAL(state_of(dir), 1);	/* none yet */
	put(dir, "nsm_state", "7\n");
	CU_ASSERT_EQUAL(state_of(dir), 7);
	put(dir, "nsm_state", "8\n");		/* even: made odd */
	CU_ASSERT_EQUAL(state_of(dir), 9);
	put(dir, "nsm_state", "garbage\n");
	CU_ASSERT_EQUAL(state_of(dir), 1);
	put(dir, "nsm_state", "-5\n");
	CU_ASSERT_EQUAL(state_of(dir), 1);
	snprintf(path, sizeof(path), "%s/nsm_state", dir);
	unlink(path);
	rmdir(dir);
}

static struct nlm_held rec(unsigned export_id, const char *fh)
{
	static uint8_t oh[] = "plain-owner";	/* not wrapped: no address */
	struct nlm_held h;

	memset(&h, 0, sizeof(h));
	h.export_id = export_id;
	h.fh_len = strlen(fh);
	memcpy(h.fh, fh, h.fh_len);
	h.oh = oh;
	h.oh_len = sizeof(oh) - 1;
	h.len = 10;
	return h;
}

static void test_reboot_drops_that_upstream(void)
{
	char dir[64];
	struct two t;
	struct nlm_store *s;
	struct nlm_locks *l = nlm_locks_new();
	struct nlm_nsm *n = nlm_nsm_new(NULL);
	struct nlm_nsm_stats st;
	struct nlm_held a1 = rec(1, "FA1"), a2 = rec(2, "FA2");
	struct nlm_held b1 = rec(1, "FB1"), c2 = rec(2, "FC2");
	struct nlm_nsm_ctx ctx;

	two_init(&t);
	tmp_dir(dir, sizeof(dir));
	s = nlm_store_open(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(nlm_locks_load(l, s), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(l, "a", &a1), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(l, "a", &a2), 0);
	CU_ASSERT_EQUAL(nlm_locks_add(l, "b", &b1), 1);
	CU_ASSERT_EQUAL(nlm_locks_add(l, "c", &c2), 1);
	ctx = (struct nlm_nsm_ctx){ .d = &t.d, .pool = NULL, .locks = l,
				    .caller = "proxy" };
	/* Export 1's upstream: a's FA1 and b's FB1 go, b with them. */
	nlm_nsm_upstream_rebooted(n, &ctx, "127.0.0.1", 3);
	CU_ASSERT_EQUAL(nlm_locks_held(l), 2);
	CU_ASSERT_EQUAL(nlm_locks_clients(l), 2);
	CU_ASSERT_PTR_NULL(nlm_locks_check_why(l));
	nlm_nsm_stats_get(n, &st);
	CU_ASSERT_EQUAL(st.upstream_reboots, 1);
	CU_ASSERT_EQUAL(st.notified, 0);
	CU_ASSERT_EQUAL(st.unreachable, 0);
	/* No client address to notify: the state number stays. */
	CU_ASSERT_EQUAL(nlm_nsm_state(n), 1);
	nlm_locks_free(&l);
	nlm_store_close(&s);

	/* The store holds what the table held: a's FA2 and c's FC2. */
	s = nlm_store_open(dir);
	l = nlm_locks_new();
	CU_ASSERT_EQUAL(nlm_locks_load(l, s), 2);
	CU_ASSERT_EQUAL(nlm_locks_held(l), 2);
	/* An upstream no export has: nothing goes. */
	ctx.locks = l;
	nlm_nsm_upstream_rebooted(n, &ctx, "other.example", 3);
	CU_ASSERT_EQUAL(nlm_locks_held(l), 2);
	/* Export 2's, named in other case: the rest goes. */
	nlm_nsm_upstream_rebooted(n, &ctx, "FILES.example", 5);
	CU_ASSERT_EQUAL(nlm_locks_held(l), 0);
	CU_ASSERT_EQUAL(nlm_locks_clients(l), 0);
	nlm_nsm_stats_get(n, &st);
	CU_ASSERT_EQUAL(st.upstream_reboots, 3);
	nlm_locks_free(&l);
	nlm_store_close(&s);
	nlm_nsm_free(&n);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CU_ASSERT_EQUAL(system(cmd), 0);
	}
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nlm_nsm", NULL, NULL);

	if (!s || !CU_add_test(s, "upstream_or_client",
			       test_upstream_or_client) ||
	    !CU_add_test(s, "watch_once", test_watch_once) ||
	    !CU_add_test(s, "state_file", test_state_file) ||
	    !CU_add_test(s, "reboot_drops_that_upstream",
			 test_reboot_drops_that_upstream))
		return -1;
	return 0;
}
