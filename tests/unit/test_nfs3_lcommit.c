/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_lcommit: write-back failures of locally committed data
 * (commit = "local", daemon/lcommit.c; docs/disk-tier.md "Local commit")
 * on the fake upstream, for the statuses a real server gives only after
 * an operator's change on it: the upstream answers WRITE with ACCES,
 * PERM, DQUOT, NOSPC, ROFS or STALE after the client's COMMIT was
 * answered from cache_dir. Ganesha proves ACCES and STALE too
 * (integration.lcommit); here each cause gets its own test.
 *
 * Pinned, for every cause: the COMMIT is answered NFS3_OK from the
 * journal with no upstream call; the failed write-back is counted under
 * its cause (nfscached_local_writeback_failures_total{cause}); the
 * journal keeps the page's record and the upstream holds nothing of it.
 * For every cause but STALE: once the upstream takes WRITEs again, the
 * retry (LCOMMIT_RETRY seconds of the test clock later) writes the bytes
 * and the record goes. For STALE (the file is gone upstream) the record
 * stays in cache_dir for good.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "disk_tier.h"
#include "lcommit.h"

#include "cunit_main.h"
#include "nfs3_harness.h"

#define LEN 4096u

static char tdir[256];
static nfsstat3 fail_write = NFS3_OK;	/* what the upstream's WRITE says */

/* commit = "local" on a disk tier in tdir; write-back waits an hour
 * unless the test moves the clock. */
static void tune(struct conf *c)
{
	free(c->cache_dir);
	c->cache_dir = strdup(tdir);
	c->disk_cache_size = 16;
	c->readahead_max = 0;
	c->writeback_delay = 3600;
	c->writeback_commit_delay = 3600;
	free(c->exports[0].commit);
	c->exports[0].commit = strdup("local");
}

/* The toy, except that WRITE fails with fail_write while it is set. */
static enum upstream_status respond(const struct fake_call *c, void *res,
				    void *arg)
{
	if (c->proc == NFSPROC3_WRITE && fail_write != NFS3_OK) {
		((WRITE3res *)res)->status = fail_write;
		return UPSTREAM_OK;
	}
	return toy_respond(c, res, arg);
}

/* Journal records held now (after the disk's queued work). */
static uint64_t records(void)
{
	struct disk_stats st;

	disk_tier_drain();
	disk_stats_get(disk_tier_disk(), &st);
	return st.journal_records;
}

/* WRITE LEN bytes of data UNSTABLE at 0 of id, then COMMIT; both OK. */
static void write_commit(struct nfs3_h *h, uint64_t id, uint8_t *data)
{
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args w = { .offset = 0, .count = LEN, .stable = UNSTABLE };
	COMMIT3args c = { .offset = 0, .count = 0 };
	WRITE3res wr;
	COMMIT3res cr;

	h_fh(h, id, &w.file, buf);
	c.file = w.file;
	w.data.data_len = LEN;
	w.data.data_val = (char *)data;
	memset(&wr, 0, sizeof(wr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_WRITE,
		(xdrproc_t)xdr_WRITE3args, &w), (xdrproc_t)xdr_WRITE3res, &wr), 0);
	CU_ASSERT_EQUAL(wr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wr);
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_COMMIT,
		(xdrproc_t)xdr_COMMIT3args, &c), (xdrproc_t)xdr_COMMIT3res, &cr), 0);
	CU_ASSERT_EQUAL(cr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
}

/* Advance in steps until the upstream made a WRITE call more than
 * before (at most 20 steps of step seconds). */
static void advance_to_write(struct nfs3_h *h, uint64_t before, double step)
{
	for (int i = 0; i < 20 && h->fu.calls[NFSPROC3_WRITE] <= before; i++) {
		h_advance(h, step);
		h_turns(h, 20);
	}
}

/* The whole story for one cause. */
static void check_cause(nfsstat3 st, enum lcommit_cause cause)
{
	struct lcommit_stats s0, s1;
	uint8_t data[LEN];
	struct toy_node *n;
	struct nfs3_h h;
	uint64_t id, w0;

	h_tmpdir(tdir, sizeof(tdir), "test_nfs3_lcommit");
	h_init(&h, tune);
	h.fu.respond = respond;
	id = toy_add_file(&h.toy, "f", 0);
	for (unsigned i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 13 + st);
	lcommit_stats_get(&s0);
	write_commit(&h, id, data);
	lcommit_stats_get(&s1);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 1);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], 0);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_COMMIT], 0);
	CU_ASSERT_EQUAL(records(), 1);

	/* Write-back runs into the failure: counted, kept. */
	fail_write = st;
	w0 = h.fu.calls[NFSPROC3_WRITE];
	advance_to_write(&h, w0, 3601);
	lcommit_stats_get(&s1);
	CU_ASSERT(s1.failures[cause] - s0.failures[cause] >= 1);
	for (int c = 0; c < LC_NCAUSES; c++)
		if (c != (int)cause)
			CU_ASSERT_EQUAL(s1.failures[c], s0.failures[c]);
	CU_ASSERT_EQUAL(records(), 1);
	n = toy_node(&h.toy, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	CU_ASSERT_EQUAL(n->size, 0);

	/* The upstream takes WRITEs again: the retry writes the bytes. */
	fail_write = NFS3_OK;
	w0 = h.fu.calls[NFSPROC3_WRITE];
	advance_to_write(&h, w0, 6);
	h_turns(&h, 50);
	if (cause == LC_STALE) {
		/* Gone upstream: no retry, the record stays in cache_dir. */
		CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], w0);
		CU_ASSERT_EQUAL(records(), 1);
		CU_ASSERT_EQUAL(n->size, 0);
	} else {
		CU_ASSERT(h.fu.calls[NFSPROC3_WRITE] > w0);
		/* The record goes once the bytes are COMMITted upstream, after
		 * writeback_commit_delay. */
		CU_ASSERT_EQUAL(records(), 1);
		h_advance(&h, 3601);
		h_turns(&h, 50);
		CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 1);
		CU_ASSERT_EQUAL(n->size, LEN);
		CU_ASSERT_EQUAL(memcmp(n->data, data, LEN), 0);
		CU_ASSERT_EQUAL(records(), 0);
	}
	h_fini(&h);
	h_rmtree(tdir);
}

static void test_acces(void) { check_cause(NFS3ERR_ACCES, LC_ACCES); }
static void test_perm(void) { check_cause(NFS3ERR_PERM, LC_PERM); }
static void test_dquot(void) { check_cause(NFS3ERR_DQUOT, LC_DQUOT); }
static void test_nospc(void) { check_cause(NFS3ERR_NOSPC, LC_NOSPC); }
static void test_rofs(void) { check_cause(NFS3ERR_ROFS, LC_ROFS); }
static void test_stale(void) { check_cause(NFS3ERR_STALE, LC_STALE); }

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_lcommit", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "acces_kept_then_written", test_acces) ||
	    !CU_add_test(s, "perm_kept_then_written", test_perm) ||
	    !CU_add_test(s, "dquot_kept_then_written", test_dquot) ||
	    !CU_add_test(s, "nospc_kept_then_written", test_nospc) ||
	    !CU_add_test(s, "rofs_kept_then_written", test_rofs) ||
	    !CU_add_test(s, "stale_kept_in_cache_dir", test_stale))
		return -1;
	return 0;
}
