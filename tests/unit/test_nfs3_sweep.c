/* SPDX-License-Identifier: MIT */
/*
 * test_nfs3_sweep: the invariant sweep (daemon/ctl/invariant.h) over the
 * state with asynchronous lifetimes, on the fake upstream: write-back's
 * calls in flight against each file's counts and commit tag
 * (writeback_check_why), and READs against the fetches they wait on
 * (nfs3_read_check_why). Each check holds with calls held upstream, and
 * names the broken field once the test breaks it; the test mends what it
 * broke before the loop turns again (the harness sweeps after every turn
 * under NFSCACHED_CHECK=1 and would abort).
 */
#include <string.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "daemon.h"
#include "fstate.h"
#include "nfs3_harness.h"
#include "nfs3_read.h"
#include "nfs3_read_impl.h"
#include "writeback.h"

/* Nothing written back or read ahead unless a client asks; a client's
 * COMMIT goes upstream as soon as its bytes are written. */
static void tune(struct conf *c)
{
	c->readahead_max = 0;
	c->writeback_delay = 3600;
	c->writeback_commit_delay = 0;
	c->idle_timeout = 1e9;
}

/* The cache's file of toy fileid id (a reference: cfile_put it). */
static struct cfile *file_of(struct nfs3_h *h, uint64_t id)
{
	uint8_t fh[8];

	for (int i = 0; i < 8; i++)
		fh[i] = (uint8_t)(id >> (56 - 8 * i));
	return cache_find(h->d.cache, fh, sizeof(fh));
}

/* True if the sweep's sentence names want. */
static bool names(const char *why, const char *want)
{
	return why && strstr(why, want);
}

static void test_writeback_sweep(void)
{
	struct nfs3_h h;
	struct cfile *f;
	struct fstate *fs;
	uint64_t id;
	uint32_t xid;
	COMMIT3res res;
	WRITE3res wres;

	h_init(&h, tune);
	id = toy_add_file(&h.toy, "a", 0);
	xid = h_send_write(&h, id, 0, 4096, 'a', UNSTABLE);
	memset(&wres, 0, sizeof(wres));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, xid, (xdrproc_t)xdr_WRITE3res, &wres), 0);
	CU_ASSERT_EQUAL(wres.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wres);
	/* A client COMMIT sends the WRITE; the upstream holds it. */
	h.fu.hold[NFSPROC3_WRITE] = true;
	h.fu.hold[NFSPROC3_COMMIT] = true;
	xid = h_send_commit(&h, id);
	h_turns(&h, 20);
	CU_ASSERT_EQUAL_FATAL(fake_up_held(&h.fu, NFSPROC3_WRITE), 1);
	f = file_of(&h, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fs = fstate_find(f);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fs);
	CU_ASSERT_EQUAL(fs->wb_inflight, 1);
	CU_ASSERT_PTR_NULL(writeback_check_why(&h.d));

	fs->wb_inflight_bytes++;
	CU_ASSERT(names(writeback_check_why(&h.d), "wb_inflight_bytes"));
	fs->wb_inflight_bytes--;
	fs->wb_inflight++;
	CU_ASSERT(names(writeback_check_why(&h.d), "wb_inflight is not"));
	fs->wb_inflight--;
	fs->commit_tag = 7;
	CU_ASSERT(names(writeback_check_why(&h.d), "commit_tag"));
	fs->commit_tag = 0;
	CU_ASSERT_PTR_NULL(writeback_check_why(&h.d));

	/* Written: the COMMIT goes and is held; its tag is the file's. */
	fake_up_release(&h.fu, NFSPROC3_WRITE);
	h_turns(&h, 20);
	CU_ASSERT_EQUAL_FATAL(fake_up_held(&h.fu, NFSPROC3_COMMIT), 1);
	CU_ASSERT_NOT_EQUAL(fs->commit_tag, 0);
	CU_ASSERT_PTR_NULL(writeback_check_why(&h.d));
	fs->commit_tag++;
	CU_ASSERT(names(writeback_check_why(&h.d), "commit_tag"));
	fs->commit_tag--;
	CU_ASSERT_PTR_NULL(writeback_check_why(&h.d));

	fake_up_release(&h.fu, NFSPROC3_COMMIT);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL(h_wait(&h, xid, (xdrproc_t)xdr_COMMIT3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&res);
	CU_ASSERT_TRUE(writeback_clean(&h.d));
	CU_ASSERT_PTR_NULL(writeback_check_why(&h.d));
	cfile_put(h.d.cache, &f);
	h_fini(&h);
}

/* READ one toy file's [off, off + count) and check the reply: NFS3_OK,
 * count bytes (the toy's files read as zeros where never written). */
static void read_ok(struct nfs3_h *h, uint32_t xid, uint32_t count)
{
	READ3res res;

	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	CU_ASSERT_EQUAL(res.READ3res_u.resok.count, count);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
}

static void test_read_waiters_sweep(void)
{
	struct nfs3_h h;
	struct nfs3_read *rd;
	struct read_op *op, *kept;
	struct fetch *fe;
	uint64_t id;
	uint32_t xid[2];
	unsigned nops = 0;

	h_init(&h, tune);
	rd = h.d.nfs3_read;
	id = toy_add_file(&h.toy, "r", 40000);
	h.fu.hold[NFSPROC3_READ] = true;
	xid[0] = h_send_read(&h, id, 4096, 8192);
	xid[1] = h_send_read(&h, id, 8192, 8192);	/* joins the fetch */
	h_turns(&h, 50);
	CU_ASSERT_EQUAL_FATAL(fake_up_held(&h.fu, NFSPROC3_READ), 1);
	fe = rd->fetches;
	CU_ASSERT_PTR_NOT_NULL_FATAL(fe);
	CU_ASSERT_PTR_NULL(fe->next);
	CU_ASSERT_EQUAL_FATAL(fe->nwaiters, 2);
	for (op = rd->ops; op; op = op->next) {
		CU_ASSERT_EQUAL(op->waiting, 1);
		CU_ASSERT_EQUAL(op->step, NFS3_READ_FETCH);
		nops++;
	}
	CU_ASSERT_EQUAL_FATAL(nops, 2);
	CU_ASSERT_PTR_NULL(nfs3_read_check_why(&h.d));

	op = rd->ops;
	op->waiting++;			/* a wake-up that never comes */
	CU_ASSERT(names(nfs3_read_check_why(&h.d), "waiting count"));
	op->waiting--;
	op->step = NFS3_READ_PLAN;
	CU_ASSERT(names(nfs3_read_check_why(&h.d), "outside its FETCH"));
	op->step = NFS3_READ_FETCH;
	kept = fe->waiters[1];
	fe->waiters[1] = (struct read_op *)&h;	/* no READ in flight */
	CU_ASSERT(names(nfs3_read_check_why(&h.d), "not a READ in flight"));
	fe->waiters[1] = kept;
	fe->magic = 0;
	CU_ASSERT(names(nfs3_read_check_why(&h.d), "not live"));
	fe->magic = FETCH_MAGIC;
	CU_ASSERT_PTR_NULL(nfs3_read_check_why(&h.d));

	fake_up_release(&h.fu, NFSPROC3_READ);
	read_ok(&h, xid[0], 8192);
	read_ok(&h, xid[1], 8192);
	CU_ASSERT_PTR_NULL(rd->fetches);
	CU_ASSERT_PTR_NULL(rd->ops);
	CU_ASSERT_PTR_NULL(nfs3_read_check_why(&h.d));
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_sweep", NULL, NULL);

	if (!s || !CU_add_test(s, "writeback_sweep", test_writeback_sweep) ||
	    !CU_add_test(s, "read_waiters_sweep", test_read_waiters_sweep))
		return -1;
	return 0;
}
