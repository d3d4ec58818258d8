/* SPDX-License-Identifier: MIT */
/*
 * test_nfs3_dirty_age: nfscached_writeback_oldest_dirty_age_seconds
 * (writeback_oldest_dirty_age) on the fake upstream, on the test clock:
 * 0 with nothing dirty, the age of the first absorbed WRITE's bytes as
 * time passes, unchanged by a later WRITE to another file or by the
 * bytes being written upstream, and 0 again only once they are COMMITted
 * there. While write-back fails (no answer, a refused COMMIT) it keeps
 * growing with the clock.
 */
#include <stdio.h>
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "daemon.h"
#include "nfs3_harness.h"
#include "writeback.h"

/* Write-back waits an hour unless the test moves the clock. */
static void tune(struct conf *c)
{
	c->readahead_max = 0;
	c->writeback_delay = 3600;
	c->writeback_commit_delay = 3600;
}

/* WRITE 4096 bytes UNSTABLE at offset 0 of toy file id; wait for NFS3_OK. */
static void write_one(struct nfs3_h *h, uint64_t id)
{
	static uint8_t data[4096];
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args a = { .offset = 0, .count = sizeof(data), .stable = UNSTABLE };
	WRITE3res res;

	h_fh(h, id, &a.file, buf);
	a.data.data_len = sizeof(data);
	a.data.data_val = (char *)data;
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_WRITE,
		(xdrproc_t)xdr_WRITE3args, &a), (xdrproc_t)xdr_WRITE3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&res);
}

/* Check that the gauge is the age of bytes written between t0 and t1
 * (daemon_now() before the WRITE was sent and after its reply came):
 * the clock also runs in real time, so the bounds hold at any speed. */
static void check_age(struct nfs3_h *h, double t0, double t1)
{
	double now = daemon_now();
	double age = writeback_oldest_dirty_age(&h->d, now);

	CU_ASSERT(age >= now - t1 - 1e-9 && age <= now - t0 + 1e-9);
	if (!(age >= now - t1 - 1e-9 && age <= now - t0 + 1e-9))
		fprintf(stderr, "age %.6f not in [%.6f, %.6f]\n", age, now - t1,
			now - t0);
}

static void test_oldest_dirty_age_follows_first_write(void)
{
	struct nfs3_h h;
	uint64_t a, b;
	double t0, t1;

	h_init(&h, tune);
	a = toy_add_file(&h.toy, "a", 0);
	b = toy_add_file(&h.toy, "b", 0);
	CU_ASSERT_DOUBLE_EQUAL(writeback_oldest_dirty_age(&h.d, daemon_now()), 0, 1e-9);
	t0 = daemon_now();
	write_one(&h, a);
	t1 = daemon_now();
	check_age(&h, t0, t1);
	h_advance(&h, 5);
	check_age(&h, t0, t1);
	CU_ASSERT(writeback_oldest_dirty_age(&h.d, daemon_now()) >= 5);
	write_one(&h, b);		/* younger: the gauge still shows a's */
	h_advance(&h, 2);
	check_age(&h, t0, t1);
	CU_ASSERT(writeback_oldest_dirty_age(&h.d, daemon_now()) >= 7);
	/* Past the delay write-back sends both (held upstream: WRITING):
	 * not stable upstream yet, still aged. */
	h.fu.hold[NFSPROC3_WRITE] = true;
	h_advance(&h, 3600);
	h_turns(&h, 50);
	CU_ASSERT(h.fu.calls[NFSPROC3_WRITE] >= 1);
	check_age(&h, t0, t1);
	/* Written UNSTABLE, the COMMIT an hour away: still aged. */
	fake_up_release(&h.fu, NFSPROC3_WRITE);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_COMMIT], 0);
	check_age(&h, t0, t1);
	CU_ASSERT(writeback_oldest_dirty_age(&h.d, daemon_now()) >= 3607);
	/* COMMITted: every byte stable upstream. */
	h_advance(&h, 3600);
	h_turns(&h, 50);
	CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 1);
	CU_ASSERT_TRUE(writeback_clean(&h.d));
	CU_ASSERT_DOUBLE_EQUAL(writeback_oldest_dirty_age(&h.d, daemon_now()), 0, 1e-9);
	h_fini(&h);
}

static nfsstat3 fail_commit;	/* NFS3_OK, or the upstream COMMIT's */

/* The toy, except that COMMIT fails with fail_commit while it is set. */
static enum upstream_status respond(const struct fake_call *c, void *res,
				    void *arg)
{
	if (c->proc == NFSPROC3_COMMIT && fail_commit != NFS3_OK) {
		((COMMIT3res *)res)->status = fail_commit;
		return UPSTREAM_OK;
	}
	return toy_respond(c, res, arg);
}

/* Write-back one second after a WRITE, COMMIT as soon as written. */
static void tune_prompt(struct conf *c)
{
	c->readahead_max = 0;
	c->writeback_delay = 1;
	c->writeback_commit_delay = 0;
	c->idle_timeout = 1e9;		/* the client outlives the advances */
}

/*
 * Write-back keeps failing: its WRITE gets no answer (the upstream went
 * away: the bytes are DIRTY again), then, the upstream back, every COMMIT
 * is refused with NFS3ERR_NOSPC (the bytes stay UNSTABLE). The gauge
 * grows with the clock all along, from the client's WRITE, and drops to 0
 * only once a COMMIT succeeds. Before: 0 as soon as the retry made the
 * bytes dirty again, and 0 for UNSTABLE bytes.
 */
static void test_oldest_dirty_age_grows_while_writeback_fails(void)
{
	struct nfs3_h h;
	uint64_t id;
	double t0, t1;

	h_init(&h, tune_prompt);
	h.fu.respond = respond;
	fail_commit = NFS3_OK;
	id = toy_add_file(&h.toy, "f", 0);
	t0 = daemon_now();
	write_one(&h, id);
	t1 = daemon_now();
	/* Write-back's WRITE goes, and the upstream drops it unanswered. */
	h.fu.hold[NFSPROC3_WRITE] = true;
	h_advance(&h, 2);
	h_turns(&h, 20);
	CU_ASSERT_EQUAL_FATAL(fake_up_held(&h.fu, NFSPROC3_WRITE), 1);
	h.fu.state = UPSTREAM_DOWN;
	fake_up_fail_held(&h.fu, UPSTREAM_EDOWN);
	h_turns(&h, 20);
	CU_ASSERT(cfile_wb_bytes(cache_wb_file_first(h.d.cache), WB_DIRTY) > 0);
	for (int i = 0; i < 6; i++)
		h_advance(&h, 10);
	check_age(&h, t0, t1);
	CU_ASSERT(writeback_oldest_dirty_age(&h.d, daemon_now()) >= 62);
	/* Back up: written, but every COMMIT refused. */
	h.fu.hold[NFSPROC3_WRITE] = false;
	h.fu.state = UPSTREAM_UP;
	fail_commit = NFS3ERR_NOSPC;
	for (int i = 0; i < 30; i++)
		h_advance(&h, 1);
	h_turns(&h, 20);
	CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 10);
	CU_ASSERT_EQUAL(cfile_wb_bytes(cache_wb_file_first(h.d.cache), WB_DIRTY), 0);
	check_age(&h, t0, t1);
	CU_ASSERT(writeback_oldest_dirty_age(&h.d, daemon_now()) >= 92);
	/* The upstream takes the COMMIT: stable, 0. */
	fail_commit = NFS3_OK;
	h_advance(&h, 2);
	h_turns(&h, 20);
	CU_ASSERT_TRUE(writeback_clean(&h.d));
	CU_ASSERT_DOUBLE_EQUAL(writeback_oldest_dirty_age(&h.d, daemon_now()), 0, 1e-9);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_dirty_age", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "oldest_dirty_age_follows_first_write",
			 test_oldest_dirty_age_follows_first_write) ||
	    !CU_add_test(s, "oldest_dirty_age_grows_while_writeback_fails",
			 test_oldest_dirty_age_grows_while_writeback_fails))
		return -1;
	return 0;
}
