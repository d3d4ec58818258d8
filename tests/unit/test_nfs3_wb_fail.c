/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_wb_fail: what write-back says when the upstream refuses its
 * WRITEs or COMMITs, on the fake upstream and the test clock. The lines
 * are paced (one per WB_LOG_INTERVAL, 10 s, per export, call and status,
 * the next saying how many were held back), name the status
 * ("NFS3ERR_NOSPC", never its number); a refused COMMIT and a WRITE
 * answered JUKEBOX are tried again a second later, not once per round
 * trip, and the COMMIT's lines are paced too.
 */
#include <stdio.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "log.h"
#include "nfs3_harness.h"
#include "writeback.h"

/* The warn lines the daemon printed during a test. */
struct lines {
	unsigned n;
	char text[64][512];		/* the first 64 */
};

/* The log sink: keep warn and error lines. */
static void keep_line(void *arg, enum log_level level, const char *text)
{
	struct lines *l = arg;

	if (level > LOG_LEVEL_WARN)
		return;
	if (l->n < 64)
		snprintf(l->text[l->n], sizeof(l->text[0]), "%s", text);
	l->n++;
}

static uint32_t fail_write, fail_commit;	/* nfsstat3, or NFS3_OK */

/* The toy, except that WRITE and COMMIT fail as set. */
static enum upstream_status respond(const struct fake_call *c, void *res,
				    void *arg)
{
	if (c->proc == NFSPROC3_WRITE && fail_write != NFS3_OK) {
		((WRITE3res *)res)->status = (nfsstat3)fail_write;
		return UPSTREAM_OK;
	}
	if (c->proc == NFSPROC3_COMMIT && fail_commit != NFS3_OK) {
		((COMMIT3res *)res)->status = (nfsstat3)fail_commit;
		return UPSTREAM_OK;
	}
	return toy_respond(c, res, arg);
}

/* Write-back one second after a WRITE, COMMITs as soon as written. */
static void tune(struct conf *c)
{
	c->readahead_max = 0;
	c->writeback_delay = 1;
	c->writeback_commit_delay = 0;
	c->idle_timeout = 1e9;		/* the client outlives the advances */
}

/* WRITE 4 KiB UNSTABLE at off of id; its status. */
static nfsstat3 write_4k(struct nfs3_h *h, uint64_t id, uint64_t off)
{
	WRITE3res res;
	nfsstat3 st;

	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_send_write(h, id, off, 4096, 'w',
		UNSTABLE), (xdrproc_t)xdr_WRITE3res, &res), 0);
	st = res.status;
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&res);
	return st;
}

/* Sum what the lines say happened: one each, plus the held back count
 * of "(and N more like it ...)". */
static uint64_t lines_cover(const struct lines *l)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < l->n && i < 64; i++) {
		const char *p = strstr(l->text[i], "(and ");
		unsigned long long more = 0;

		if (p)
			sscanf(p, "(and %llu more", &more);
		sum += 1 + more;
	}
	return sum;
}

/*
 * 50 s of test clock, each second 8 separate 4 KiB WRITEs absorbed and
 * written back, every upstream WRITE refused with NFS3ERR_NOSPC: hundreds
 * of failures, at most one line per 10 s (6 in 50 s), each naming
 * NFS3ERR_NOSPC and the export, and the later ones counting what was held
 * back. Before the pacing: one line per failed WRITE, "error 28".
 */
static void test_write_failures_logged_paced_by_name(void)
{
	static struct lines l;
	struct nfs3_h h;
	uint64_t id, failed;

	memset(&l, 0, sizeof(l));
	h_init(&h, tune);
	h.fu.respond = respond;
	fail_write = NFS3ERR_NOSPC;
	fail_commit = NFS3_OK;
	id = toy_add_file(&h.toy, "f", 0);
	log_set_level_name("warn");
	log_set_sink(keep_line, &l);
	for (int round = 0; round < 50; round++) {
		for (uint64_t k = 0; k < 8; k++)
			(void)write_4k(&h, id, k * 8192);
		h_advance(&h, 1.0);
		h_turns(&h, 20);
	}
	log_set_sink(NULL, NULL);
	log_set_level_name("error");
	failed = h.fu.calls[NFSPROC3_WRITE];
	fprintf(stderr, "%llu WRITEs refused, %u lines\n",
		(unsigned long long)failed, l.n);
	CU_ASSERT(failed >= 200);
	CU_ASSERT(l.n >= 2 && l.n <= 6);
	for (unsigned i = 0; i < l.n && i < 64; i++) {
		CU_ASSERT_PTR_NOT_NULL(strstr(l.text[i], "NFS3ERR_NOSPC"));
		CU_ASSERT_PTR_NOT_NULL(strstr(l.text[i], "write-back to /"));
		CU_ASSERT_PTR_NULL(strstr(l.text[i], "error 28"));
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(l.text[1], "more like it not logged"));
	/* Every failure is either a line or counted in a later one, except
	 * those after the last line. */
	CU_ASSERT(lines_cover(&l) <= failed);
	CU_ASSERT(lines_cover(&l) + 8 * 10 >= failed);
	fail_write = NFS3_OK;
	h_fini(&h);
}

/*
 * Every upstream COMMIT refused with NFS3ERR_NOSPC: write-back COMMITs
 * again at once (the bytes stay UNSTABLE), and the lines stay paced: at
 * most 3 in 25 s of test clock, naming the status.
 */
static void test_commit_failures_logged_paced_by_name(void)
{
	static struct lines l;
	struct nfs3_h h;
	uint64_t id;

	memset(&l, 0, sizeof(l));
	h_init(&h, tune);
	h.fu.respond = respond;
	fail_write = NFS3_OK;
	fail_commit = NFS3ERR_NOSPC;
	id = toy_add_file(&h.toy, "f", 0);
	CU_ASSERT_EQUAL(write_4k(&h, id, 0), NFS3_OK);
	log_set_level_name("warn");
	log_set_sink(keep_line, &l);
	for (int i = 0; i < 25; i++) {
		h_advance(&h, 1.0);
		h_turns(&h, 20);
	}
	log_set_sink(NULL, NULL);
	log_set_level_name("error");
	fprintf(stderr, "%llu COMMITs refused, %u lines\n",
		(unsigned long long)h.fu.calls[NFSPROC3_COMMIT], l.n);
	CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 25);
	CU_ASSERT(l.n >= 1 && l.n <= 3);
	for (unsigned i = 0; i < l.n && i < 64; i++) {
		CU_ASSERT_PTR_NOT_NULL(strstr(l.text[i], "COMMIT"));
		CU_ASSERT_PTR_NOT_NULL(strstr(l.text[i], "NFS3ERR_NOSPC"));
	}
	/* The upstream takes it again: committed, clean. */
	fail_commit = NFS3_OK;
	h_advance(&h, 1.0);
	h_turns(&h, 20);
	CU_ASSERT_TRUE(writeback_clean(&h.d));
	h_fini(&h);
}

/*
 * Every upstream WRITE answered NFS3ERR_JUKEBOX ("try again later") for
 * 10 s of test clock: write-back tries again once a second, not once per
 * round trip (before, the fake upstream spun forever), counts each in
 * nfscached_writeback_retries_total, and writes and commits the bytes
 * once the upstream takes them.
 */
static void test_jukebox_write_retried_after_a_pause(void)
{
	struct writeback_stats st;
	struct nfs3_h h;
	uint64_t id;

	h_init(&h, tune);
	h.fu.respond = respond;
	fail_write = NFS3ERR_JUKEBOX;
	fail_commit = NFS3_OK;
	id = toy_add_file(&h.toy, "f", 0);
	CU_ASSERT_EQUAL(write_4k(&h, id, 0), NFS3_OK);
	for (int i = 0; i < 10; i++) {
		h_advance(&h, 1.0);
		h_turns(&h, 20);
	}
	fprintf(stderr, "%llu WRITEs answered JUKEBOX in 10 s\n",
		(unsigned long long)h.fu.calls[NFSPROC3_WRITE]);
	CU_ASSERT(h.fu.calls[NFSPROC3_WRITE] >= 5);
	CU_ASSERT(h.fu.calls[NFSPROC3_WRITE] <= 11);
	writeback_stats_get(&h.d, &st);
	CU_ASSERT_EQUAL(st.retries, h.fu.calls[NFSPROC3_WRITE]);
	CU_ASSERT_FALSE(writeback_clean(&h.d));
	fail_write = NFS3_OK;
	h_advance(&h, 1.0);
	h_turns(&h, 20);
	CU_ASSERT_TRUE(writeback_clean(&h.d));
	CU_ASSERT_EQUAL(toy_node(&h.toy, id)->size, 4096);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_wb_fail", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "write_failures_logged_paced_by_name",
			 test_write_failures_logged_paced_by_name) ||
	    !CU_add_test(s, "commit_failures_logged_paced_by_name",
			 test_commit_failures_logged_paced_by_name) ||
	    !CU_add_test(s, "jukebox_write_retried_after_a_pause",
			 test_jukebox_write_retried_after_a_pause))
		return -1;
	return 0;
}
