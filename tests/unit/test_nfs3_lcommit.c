/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_lcommit: write-back failures of locally committed data
 * (commit = "local", daemon/wb/lcommit.c; docs/disk-tier.md "Local commit")
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
 * disk_dirty_limit reached: a COMMIT waits for the upstream (a counted
 * fallback) and local commits resume once the journal empties.
 * For every cause but STALE: once the upstream takes WRITEs again, the
 * retry (LCOMMIT_RETRY seconds of the test clock later) writes the bytes
 * and the record goes. For STALE (the file is gone upstream) the record
 * stays in cache_dir for good. A COMMIT or FILE_SYNC WRITE held at the
 * journal is counted in its JOURNAL step, a written-through WRITE held
 * by its record's rewrite in FENCE. The state is the daemon's: a daemon
 * after a crash starts at zero, the journal left as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <lmdb.h>

#include "disk.h"
#include "disk_tier.h"
#include "lcommit.h"
#include "lcommit_fence.h"
#include "log.h"
#include "nfs3_write.h"

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
	c->idle_timeout = 1e9;		/* the client outlives the advances */
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

/* Journal records held now in h's daemon (after the disk's queued work). */
static uint64_t records(struct nfs3_h *h)
{
	struct disk_stats st;

	disk_tier_drain(&h->d);
	disk_stats_get(disk_tier_disk(&h->d), &st);
	return st.journal_records;
}

/* A fresh cache_dir, the daemon tuned by fn on the toy with its WRITE
 * failing as fail_write says, and an empty toy file "f": its id. */
static uint64_t start(struct nfs3_h *h, h_conf_fn fn)
{
	h_tmpdir(tdir, sizeof(tdir), "test_nfs3_lcommit");
	h_init(h, fn);
	h->fu.respond = respond;
	return toy_add_file(&h->toy, "f", 0);
}

/* Stop everything and remove the cache_dir. */
static void stop(struct nfs3_h *h)
{
	h_fini(h);
	h_rmtree(tdir);
}

/* WRITE len bytes of data UNSTABLE at off of id; NFS3_OK. */
static void write_at(struct nfs3_h *h, uint64_t id, uint64_t off,
		     uint8_t *data, uint32_t len)
{
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args w = { .offset = off, .count = len, .stable = UNSTABLE };
	WRITE3res wr;

	h_fh(h, id, &w.file, buf);
	w.data.data_len = len;
	w.data.data_val = (char *)data;
	memset(&wr, 0, sizeof(wr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_WRITE,
		(xdrproc_t)xdr_WRITE3args, &w), (xdrproc_t)xdr_WRITE3res, &wr), 0);
	CU_ASSERT_EQUAL(wr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wr);
}

/* COMMIT the whole of id; NFS3_OK. */
static void commit(struct nfs3_h *h, uint64_t id)
{
	uint8_t buf[FH_SIZE_MAX];
	COMMIT3args c = { .offset = 0, .count = 0 };
	COMMIT3res cr;

	h_fh(h, id, &c.file, buf);
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_COMMIT,
		(xdrproc_t)xdr_COMMIT3args, &c), (xdrproc_t)xdr_COMMIT3res, &cr), 0);
	CU_ASSERT_EQUAL(cr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
}

/* COMMIT id and run the loop until the reply comes (a COMMIT that waits
 * for write-back, which the waiting COMMIT starts at once), moving the
 * clock by small steps, far from upstream_timeout; NFS3_OK. */
static void commit_upstream_wait(struct nfs3_h *h, uint64_t id)
{
	uint8_t buf[FH_SIZE_MAX];
	COMMIT3args c = { .offset = 0, .count = 0 };
	COMMIT3res cr;
	uint32_t xid;

	h_fh(h, id, &c.file, buf);
	xid = h_call(h, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &c);
	for (int i = 0; i < 200 && !h_replied(h, xid); i++) {
		h_turns(h, 10);
		h_advance(h, 0.05);
	}
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_COMMIT3res, &cr), 0);
	CU_ASSERT_EQUAL(cr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
}

/* WRITE LEN bytes of data UNSTABLE at 0 of id, then COMMIT; both OK. */
static void write_commit(struct nfs3_h *h, uint64_t id, uint8_t *data)
{
	write_at(h, id, 0, data, LEN);
	commit(h, id);
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

	id = start(&h, tune);
	for (unsigned i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 13 + st);
	lcommit_stats_get(&h.d, &s0);
	write_commit(&h, id, data);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 1);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], 0);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_COMMIT], 0);
	CU_ASSERT_EQUAL(records(&h), 1);

	/* Write-back runs into the failure: counted, kept. */
	fail_write = st;
	w0 = h.fu.calls[NFSPROC3_WRITE];
	advance_to_write(&h, w0, 3601);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT(s1.failures[cause] - s0.failures[cause] >= 1);
	for (int c = 0; c < LC_NCAUSES; c++)
		if (c != (int)cause)
			CU_ASSERT_EQUAL(s1.failures[c], s0.failures[c]);
	CU_ASSERT_EQUAL(records(&h), 1);
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
		CU_ASSERT_EQUAL(records(&h), 1);
		CU_ASSERT_EQUAL(n->size, 0);
	} else {
		CU_ASSERT(h.fu.calls[NFSPROC3_WRITE] > w0);
		/* The record goes once the bytes are COMMITted upstream, after
		 * writeback_commit_delay. */
		CU_ASSERT_EQUAL(records(&h), 1);
		h_advance(&h, 3601);
		h_turns(&h, 50);
		CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 1);
		CU_ASSERT_EQUAL(n->size, LEN);
		CU_ASSERT_EQUAL(memcmp(n->data, data, LEN), 0);
		CU_ASSERT_EQUAL(records(&h), 0);
	}
	stop(&h);
}

/* Log lines a test keeps (log_set_sink). */
struct kept_lines {
	unsigned n, named;
};

/* Keep a line about failed write-back of locally committed data. */
static void keep_lc_line(void *arg, enum log_level level, const char *text)
{
	struct kept_lines *l = arg;

	(void)level;
	if (!strstr(text, "write-back of locally committed data failed"))
		return;
	l->n++;
	if (strstr(text, "NFS3ERR_NOSPC"))
		l->named++;
}

/*
 * A failing write-back of locally committed data is retried every 5 s
 * for a minute: a dozen failures, at most one line per 10 s, each naming
 * the status (NFS3ERR_NOSPC, not "error 28").
 */
static void test_failures_logged_paced_by_name(void)
{
	struct lcommit_stats s0, s1;
	struct kept_lines l = { 0, 0 };
	uint8_t data[LEN];
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune);
	memset(data, 'N', sizeof(data));
	write_commit(&h, id, data);
	fail_write = NFS3ERR_NOSPC;
	lcommit_stats_get(&h.d, &s0);
	advance_to_write(&h, h.fu.calls[NFSPROC3_WRITE], 3601);
	log_set_level_name("warn");
	log_set_sink(keep_lc_line, &l);
	for (int i = 0; i < 60; i++) {
		h_advance(&h, 1.0);
		h_turns(&h, 20);
	}
	log_set_sink(NULL, NULL);
	log_set_level_name("error");
	fail_write = NFS3_OK;
	lcommit_stats_get(&h.d, &s1);
	fprintf(stderr, "%llu failures, %u lines ",
		(unsigned long long)(s1.failures[LC_NOSPC] -
				     s0.failures[LC_NOSPC]), l.n);
	CU_ASSERT(s1.failures[LC_NOSPC] - s0.failures[LC_NOSPC] >= 10);
	CU_ASSERT(l.n >= 5 && l.n <= 7);
	CU_ASSERT_EQUAL(l.named, l.n);
	stop(&h);
}

static void test_acces(void) { check_cause(NFS3ERR_ACCES, LC_ACCES); }
static void test_perm(void) { check_cause(NFS3ERR_PERM, LC_PERM); }
static void test_dquot(void) { check_cause(NFS3ERR_DQUOT, LC_DQUOT); }
static void test_nospc(void) { check_cause(NFS3ERR_NOSPC, LC_NOSPC); }
static void test_rofs(void) { check_cause(NFS3ERR_ROFS, LC_ROFS); }
static void test_stale(void) { check_cause(NFS3ERR_STALE, LC_STALE); }


/* ---- replay after a crash ---- */

/* What the upstream held of toy file id, kept across a "crash". */
struct up_copy {
	uint64_t size;
	uint8_t *data;
};

/* Crash: stop everything without the clean stop's journaling
 * (lcommit_stop is not called) and start again on the same cache_dir
 * with the upstream file as it was; install the journal (lcommit_start,
 * as main() does). Returns the file's id. */
static uint64_t crash_restart(struct nfs3_h *h, uint64_t id)
{
	struct toy_node *n = toy_node(&h->toy, id);
	struct up_copy up = { n->size, malloc(TOY_MAX_DATA) };
	char err[256];
	uint64_t id2;

	CU_ASSERT_PTR_NOT_NULL_FATAL(up.data);
	memcpy(up.data, n->data, n->size);
	h_fini(h);
	h_init(h, tune);
	h->fu.respond = respond;
	id2 = toy_add_file(&h->toy, "f", up.size);
	CU_ASSERT_EQUAL(id2, id);	/* the same handle */
	memcpy(toy_node(&h->toy, id2)->data, up.data, up.size);
	free(up.data);
	CU_ASSERT_EQUAL_FATAL(lcommit_start(&h->d, err, sizeof(err)), 0);
	return id2;
}

/* READ [off, off + len) of id through the proxy into out; the size the
 * reply's attributes give (or UINT64_MAX). */
static uint64_t read_at(struct nfs3_h *h, uint64_t id, uint64_t off,
			uint32_t len, uint8_t *out)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = len };
	READ3res res;
	uint64_t size = UINT64_MAX;

	h_fh(h, id, &a.file, buf);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_READ,
		(xdrproc_t)xdr_READ3args, &a), (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	if (res.status == NFS3_OK) {
		memset(out, 0, len);
		memcpy(out, res.READ3res_u.resok.data.data_val,
		       res.READ3res_u.resok.data.data_len);
		if (res.READ3res_u.resok.file_attributes.attributes_follow)
			size = res.READ3res_u.resok.file_attributes
				       .post_op_attr_u.attributes.size;
	}
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	return size;
}

/* n bytes of value v. */
static uint8_t *fill(uint8_t *b, uint8_t v, size_t n)
{
	memset(b, v, n);
	return b;
}

/*
 * Bytes made stable upstream, then rewritten and made stable again,
 * while an older record of their page lives on (the page kept other
 * write-back bytes): the next local COMMIT must leave no record that
 * brings the old bytes back. A at [0,100) and X at [1000,1100) are
 * journaled; C overwrites A and is written back with X; while that
 * upstream COMMIT is held, Y rewrites X; the COMMIT then makes C clean
 * with Y still dirty. The client's COMMIT journals; after a crash a
 * READ of [0,100) must give C (the upstream's), never A.
 */
static void test_rewritten_stable_bytes_not_replayed(void)
{
	uint8_t b[100], got[100];
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune);
	write_at(&h, id, 0, fill(b, 'A', 100), 100);
	write_at(&h, id, 1000, fill(b, 'X', 100), 100);
	commit(&h, id);
	CU_ASSERT_EQUAL(records(&h), 1);
	write_at(&h, id, 0, fill(b, 'C', 100), 100);
	/* Write-back sends C and X; their upstream COMMIT is held. */
	h.fu.hold[NFSPROC3_COMMIT] = true;
	for (int i = 0; i < 10 && !fake_up_held(&h.fu, NFSPROC3_COMMIT); i++) {
		h_advance(&h, 3601);
		h_turns(&h, 20);
	}
	CU_ASSERT_EQUAL_FATAL(fake_up_held(&h.fu, NFSPROC3_COMMIT), 1);
	CU_ASSERT_EQUAL(memcmp(toy_node(&h.toy, id)->data, fill(b, 'C', 100),
			       100), 0);
	write_at(&h, id, 1000, fill(b, 'Y', 100), 100);
	fake_up_release(&h.fu, NFSPROC3_COMMIT);
	h_turns(&h, 50);
	commit(&h, id);
	CU_ASSERT(records(&h) >= 1);	/* Y is not upstream yet */

	id = crash_restart(&h, id);
	read_at(&h, id, 0, 100, got);
	CU_ASSERT_EQUAL(memcmp(got, fill(b, 'C', 100), 100), 0);
	read_at(&h, id, 1000, 100, got);
	CU_ASSERT_EQUAL(memcmp(got, fill(b, 'Y', 100), 100), 0);
	stop(&h);
}

/* A truncating SETATTR after a local COMMIT: a crash must not bring the
 * cut bytes, or the old size, back. */
static void test_truncate_not_undone_by_replay(void)
{
	uint8_t b[4000], got[4000];
	uint8_t fh[FH_SIZE_MAX];
	SETATTR3args sa;
	SETATTR3res sr;
	struct nfs3_h h;
	uint64_t id, size;

	id = start(&h, tune);
	/* 4000 bytes in page 0 and 4000 in page 1, journaled. */
	write_at(&h, id, 0, fill(b, 'A', 4000), 4000);
	write_at(&h, id, 65536, fill(b, 'B', 4000), 4000);
	commit(&h, id);
	CU_ASSERT_EQUAL(records(&h), 2);
	memset(&sa, 0, sizeof(sa));
	h_fh(&h, id, &sa.object, fh);
	sa.new_attributes.size.set_it = TRUE;
	sa.new_attributes.size.set_size3_u.size = 100;
	memset(&sr, 0, sizeof(sr));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_call(&h, NFSPROC3_SETATTR,
		(xdrproc_t)xdr_SETATTR3args, &sa), (xdrproc_t)xdr_SETATTR3res, &sr), 0);
	CU_ASSERT_EQUAL(sr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_SETATTR3res, (char *)&sr);
	CU_ASSERT_EQUAL(records(&h), 1);	/* page 1 is gone, page 0 rewritten */

	id = crash_restart(&h, id);
	size = read_at(&h, id, 0, 4000, got);
	CU_ASSERT_EQUAL(size, 100);
	CU_ASSERT_EQUAL(memcmp(got, fill(b, 'A', 100), 100), 0);
	CU_ASSERT_EQUAL(got[100], 0);
	stop(&h);
}

/* REMOVE of the last link drops the file's unwritten data: its journal
 * records go with it. */
/* Add a database no nfscached index holds to cache_dir's index.mdb: the
 * start's check then finds it foreign and keeps it, journal and all. */
static void index_add_foreign_db(void)
{
	char path[sizeof(tdir) + 16], k[] = "hello", v[] = "world";
	MDB_val key = { 5, k }, val = { 5, v };
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;

	snprintf(path, sizeof(path), "%s/index.mdb", tdir);
	CU_ASSERT_EQUAL_FATAL(mdb_env_create(&env), 0);
	CU_ASSERT_EQUAL(mdb_env_set_maxdbs(env, 16), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_env_open(env, path, MDB_NOSUBDIR, 0600), 0);
	CU_ASSERT_EQUAL_FATAL(mdb_txn_begin(env, NULL, 0, &txn), 0);
	CU_ASSERT_EQUAL(mdb_dbi_open(txn, "users", MDB_CREATE, &dbi), 0);
	CU_ASSERT_EQUAL(mdb_put(txn, dbi, &key, &val, 0), 0);
	CU_ASSERT_EQUAL(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/*
 * A crash left a journal record; the next start finds the index damaged
 * (the tier off, the index kept with its journal): it must not serve, or
 * a later start with the index repaired would replay that record over
 * whatever this run acknowledged.
 */
static void test_unreadable_journal_refuses_start(void)
{
	uint8_t b[100];
	char err[2048];
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune);
	write_at(&h, id, 0, fill(b, 'A', 100), 100);
	commit(&h, id);
	CU_ASSERT_EQUAL_FATAL(records(&h), 1);
	h_fini(&h);		/* a crash: the record stays */
	index_add_foreign_db();
	h_init(&h, tune);
	CU_ASSERT_PTR_NOT_NULL_FATAL(disk_tier_disk(&h.d));
	CU_ASSERT_FALSE(disk_on(disk_tier_disk(&h.d)));
	CU_ASSERT_EQUAL(disk_journal_unread(disk_tier_disk(&h.d)), 1);
	CU_ASSERT_EQUAL(lcommit_start(&h.d, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "its journal holds locally "
				      "committed writes not yet written back"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "(1 record(s))"));
	stop(&h);
}

/*
 * Local commit's state is its daemon's (d->lcommit): a daemon stopped
 * without lcommit_stop (a crash) leaves its journal as it was, and the
 * next daemon, before lcommit_start, starts at zero: no counts, no
 * rewrites, no fence due, whatever the last one did.
 */
static void test_fresh_daemon_starts_at_zero(void)
{
	struct lcommit_stats s;
	uint8_t data[LEN];
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune);
	write_commit(&h, id, fill(data, 'Z', LEN));
	lcommit_stats_get(&h.d, &s);
	CU_ASSERT_EQUAL(s.commits, 1);
	CU_ASSERT_EQUAL(s.records_written, 1);
	CU_ASSERT_EQUAL(records(&h), 1);
	h_fini(&h);		/* a crash: no lcommit_stop */
	h_init(&h, tune);	/* the same cache_dir, no lcommit_start */
	CU_ASSERT_EQUAL(records(&h), 1);	/* as the crash left it */
	lcommit_stats_get(&h.d, &s);
	CU_ASSERT_EQUAL(s.commits, 0);
	CU_ASSERT_EQUAL(s.records_written, 0);
	CU_ASSERT_EQUAL(s.bytes_written, 0);
	CU_ASSERT_EQUAL(s.fallbacks, 0);
	CU_ASSERT_EQUAL(lcommit_rewrites(&h.d), 0);
	CU_ASSERT_FALSE(lcommit_fence_due(&h.d));
	stop(&h);
}

static void test_remove_drops_records(void)
{
	uint8_t b[4000], fh[FH_SIZE_MAX];
	char name[] = "f";
	REMOVE3args ra;
	REMOVE3res rr;
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune);
	write_at(&h, id, 0, fill(b, 'A', 4000), 4000);
	commit(&h, id);
	CU_ASSERT_EQUAL(records(&h), 1);
	memset(&ra, 0, sizeof(ra));
	h_fh(&h, TOY_ROOT, &ra.object.dir, fh);
	ra.object.name = name;
	memset(&rr, 0, sizeof(rr));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_call(&h, NFSPROC3_REMOVE,
		(xdrproc_t)xdr_REMOVE3args, &ra), (xdrproc_t)xdr_REMOVE3res, &rr), 0);
	CU_ASSERT_EQUAL(rr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_REMOVE3res, (char *)&rr);
	CU_ASSERT_EQUAL(records(&h), 0);
	stop(&h);
}


/* disk_dirty_limit = 1 MiB: local COMMITs until the journal holds that
 * much, then a COMMIT waits for the upstream (a fallback counted), is
 * answered once the bytes are COMMITted upstream, and local commits
 * resume once write-back has emptied the journal. */
static void tune_small_journal(struct conf *c)
{
	tune(c);
	c->disk_dirty_limit = 1;
	/* A COMMIT that waits upstream gets its upstream COMMIT as soon as
	 * the WRITEs are done (tune holds it an hour). */
	c->writeback_commit_delay = 0;
}

static void test_dirty_limit_falls_back_to_upstream(void)
{
	static uint8_t data[64 * 1024];
	struct lcommit_stats s0, s1;
	struct nfs3_h h;
	uint64_t id;

	id = start(&h, tune_small_journal);
	memset(data, 'D', sizeof(data));
	lcommit_stats_get(&h.d, &s0);
	for (unsigned i = 0; i < 20; i++)	/* 1.25 MiB */
		write_at(&h, id, (uint64_t)i * sizeof(data), data, sizeof(data));
	commit(&h, id);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 1);
	CU_ASSERT_EQUAL(s1.fallbacks, s0.fallbacks);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_COMMIT], 0);
	CU_ASSERT_EQUAL(records(&h), 20);
	/* Over the bound: the next COMMIT waits for the upstream (its
	 * write-back runs on the test clock). */
	write_at(&h, id, 20 * sizeof(data), data, 4096);
	commit_upstream_wait(&h, id);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 1);
	CU_ASSERT_EQUAL(s1.fallbacks - s0.fallbacks, 1);
	CU_ASSERT(h.fu.calls[NFSPROC3_COMMIT] >= 1);
	CU_ASSERT_EQUAL(toy_node(&h.toy, id)->size, 20 * sizeof(data) + 4096);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(records(&h), 0);
	/* Room again: answered locally. */
	write_at(&h, id, 0, data, 4096);
	commit(&h, id);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 2);
	stop(&h);
}

/* ---- the tier turned off with records outstanding (issue 37) ---- */

static char sdir[256];		/* state_dir of the fence tests */

/* tune, and state_dir in its own directory (the fence's second place). */
static void tune_fence(struct conf *c)
{
	tune(c);
	free(c->state_dir);
	c->state_dir = strdup(sdir);
	/* A COMMIT answered the upstream way gets its upstream COMMIT as
	 * soon as the WRITEs are done. */
	c->writeback_commit_delay = 0;
}

/* A fresh cache_dir and state_dir, the daemon started as main() does
 * (lcommit_start: the journal's identity and the fence files), an empty
 * toy file "f": its id. */
static uint64_t start_fence(struct nfs3_h *h)
{
	char err[256];

	h_tmpdir(sdir, sizeof(sdir), "test_nfs3_lcommit_state");
	h_tmpdir(tdir, sizeof(tdir), "test_nfs3_lcommit");
	h_init(h, tune_fence);
	h->fu.respond = respond;
	CU_ASSERT_EQUAL_FATAL(lcommit_start(&h->d, err, sizeof(err)), 0);
	return toy_add_file(&h->toy, "f", 0);
}

/* Restart on the same cache_dir and state_dir with the upstream file as
 * it was: after lcommit_stop when clean (SIGTERM), without it (SIGKILL)
 * otherwise; lcommit_start as main() does. The file's id. */
static uint64_t fence_restart(struct nfs3_h *h, uint64_t id, bool clean)
{
	struct toy_node *n = toy_node(&h->toy, id);
	struct up_copy up = { n->size, malloc(TOY_MAX_DATA) };
	char err[256];
	uint64_t id2;

	CU_ASSERT_PTR_NOT_NULL_FATAL(up.data);
	memcpy(up.data, n->data, n->size);
	if (clean)
		lcommit_stop(&h->d);
	h_fini(h);
	h_init(h, tune_fence);
	h->fu.respond = respond;
	id2 = toy_add_file(&h->toy, "f", up.size);
	CU_ASSERT_EQUAL(id2, id);
	memcpy(toy_node(&h->toy, id2)->data, up.data, up.size);
	free(up.data);
	CU_ASSERT_EQUAL_FATAL(lcommit_start(&h->d, err, sizeof(err)), 0);
	return id2;
}

/* Run the loop, moving the test clock 50 ms a step (20 s at most),
 * until xid is answered; the fence's thread is real time, so each step
 * waits for a fence write in flight before the clock moves on. */
static void turns_until_replied(struct nfs3_h *h, uint32_t xid)
{
	for (int i = 0; i < 400 && !h_replied(h, xid); i++) {
		h_turns(h, 10);
		lcommit_fence_drain(&h->d);
		h_advance(h, 0.05);
	}
}

/* COMMIT id, moving the clock in small steps until answered; its
 * status. */
static nfsstat3 commit_status(struct nfs3_h *h, uint64_t id)
{
	uint8_t buf[FH_SIZE_MAX];
	COMMIT3args c = { .offset = 0, .count = 0 };
	COMMIT3res cr;
	uint32_t xid;
	nfsstat3 st;

	h_fh(h, id, &c.file, buf);
	xid = h_call(h, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &c);
	turns_until_replied(h, xid);
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_COMMIT3res, &cr), 0);
	st = cr.status;
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
	return st;
}

#define BIG (64u * 1024)

/*
 * The minimal case: WRITE 64 KiB of A at 0 + COMMIT (journaled);
 * the journal's commit fails with ENOSPC; WRITE more + COMMIT (the tier
 * turns off, answered the upstream way); WRITE 64 KiB of B at 0 + COMMIT
 * (answered); stop, restart on the same cache_dir with the fault gone:
 * the upstream must hold B, and the record of A must not be replayed.
 */
static void check_no_rollback(bool clean)
{
	static uint8_t b[BIG], got[BIG];
	struct lcommit_stats s0, s1;
	struct nfs3_h h;
	uint64_t id;

	id = start_fence(&h);
	lcommit_stats_get(&h.d, &s0);
	write_at(&h, id, 0, fill(b, 'A', BIG), BIG);
	commit(&h, id);
	CU_ASSERT_EQUAL(records(&h), 1);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], 0);

	disk_fault_inject(disk_tier_disk(&h.d), DISK_FAULT_JOURNAL, ENOSPC);
	write_at(&h, id, BIG, fill(b, 'M', BIG), BIG);
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3_OK);
	CU_ASSERT_FALSE(disk_on(disk_tier_disk(&h.d)));
	CU_ASSERT_EQUAL(records(&h), 1);		/* A's record stays on disk */
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.fence_writes, 1);

	write_at(&h, id, 0, fill(b, 'B', BIG), BIG);
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3_OK);
	lcommit_stats_get(&h.d, &s1);
	/* Both COMMITs went the upstream way; each counted once. */
	CU_ASSERT_EQUAL(s1.fallbacks - s0.fallbacks, 2);
	CU_ASSERT_EQUAL(s1.commits - s0.commits, 1);
	CU_ASSERT_EQUAL(memcmp(toy_node(&h.toy, id)->data, fill(b, 'B', BIG),
			       BIG), 0);

	id = fence_restart(&h, id, clean);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.superseded_records, 1);
	CU_ASSERT_EQUAL(s1.recovered_records, 0);
	CU_ASSERT_EQUAL(records(&h), 0);		/* deleted, the disk working */
	/* Nothing to write back: whatever write-back runs, B stays. */
	h_advance(&h, 3601);
	h_turns(&h, 50);
	h_advance(&h, 3601);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(memcmp(toy_node(&h.toy, id)->data, fill(b, 'B', BIG),
			       BIG), 0);
	read_at(&h, id, 0, BIG, got);
	CU_ASSERT_EQUAL(memcmp(got, fill(b, 'B', BIG), BIG), 0);
	/* New records after the fence are replayed, not superseded. */
	write_at(&h, id, 0, fill(b, 'C', BIG), BIG);
	commit(&h, id);
	CU_ASSERT_EQUAL(records(&h), 1);
	id = fence_restart(&h, id, false);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.superseded_records, 0);
	CU_ASSERT_EQUAL(s1.recovered_records, 1);
	read_at(&h, id, 0, BIG, got);
	CU_ASSERT_EQUAL(memcmp(got, fill(b, 'C', BIG), BIG), 0);
	stop(&h);
	h_rmtree(sdir);
}

static void test_no_rollback_clean_stop(void) { check_no_rollback(true); }
static void test_no_rollback_kill(void) { check_no_rollback(false); }

/* The fence path of dir. */
static void fence_file(const char *dir, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", dir, LCF_NAME);
}

/*
 * cache_dir cannot take the fence (its file gone, as on a read-only or
 * broken cache_dir): state_dir's alone is enough. Neither can: the COMMIT
 * waiting for it is answered NFS3ERR_JUKEBOX, never NFS3_OK, and the
 * fence is retried; once state_dir works again it is written and the
 * next COMMIT is answered.
 */
static void test_fence_in_state_dir_else_jukebox(void)
{
	static uint8_t b[BIG];
	struct lcommit_stats s1;
	char cpath[512], spath[512];
	struct nfs3_h h;
	uint64_t id;

	id = start_fence(&h);
	fence_file(tdir, cpath, sizeof(cpath));
	fence_file(sdir, spath, sizeof(spath));
	write_at(&h, id, 0, fill(b, 'A', BIG), BIG);
	commit(&h, id);
	CU_ASSERT_EQUAL_FATAL(unlink(cpath), 0);
	CU_ASSERT_EQUAL_FATAL(unlink(spath), 0);
	disk_fault_inject(disk_tier_disk(&h.d), DISK_FAULT_JOURNAL, EIO);
	write_at(&h, id, 0, fill(b, 'B', BIG), BIG);
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3ERR_JUKEBOX);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.fence_writes, 0);
	CU_ASSERT(s1.fence_failures >= 1);
	/* The bytes are upstream; only the fence was missing. */
	CU_ASSERT_EQUAL(memcmp(toy_node(&h.toy, id)->data, fill(b, 'B', BIG),
			       BIG), 0);
	CU_ASSERT_EQUAL_FATAL(lcommit_fence_prepare(sdir), 0);
	h_advance(&h, 6);
	h_turns(&h, 20);
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3_OK);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.fence_writes, 1);

	id = fence_restart(&h, id, false);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.superseded_records, 1);
	CU_ASSERT_EQUAL(s1.recovered_records, 0);
	stop(&h);
	h_rmtree(sdir);
}

/* Send a SETATTR of id's size to size: its xid. */
static uint32_t setattr_size(struct nfs3_h *h, uint64_t id, uint64_t size)
{
	uint8_t fh[FH_SIZE_MAX];
	SETATTR3args sa;

	memset(&sa, 0, sizeof(sa));
	h_fh(h, id, &sa.object, fh);
	sa.new_attributes.size.set_it = TRUE;
	sa.new_attributes.size.set_size3_u.size = size;
	return h_call(h, NFSPROC3_SETATTR, (xdrproc_t)xdr_SETATTR3args, &sa);
}

/* The status of SETATTR xid's reply. */
static nfsstat3 setattr_status(struct nfs3_h *h, uint32_t xid)
{
	SETATTR3res sr;
	nfsstat3 st;

	memset(&sr, 0, sizeof(sr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_SETATTR3res, &sr), 0);
	st = sr.status;
	xdr_free((xdrproc_t)xdr_SETATTR3res, (char *)&sr);
	return st;
}

/*
 * With the tier on, a truncating SETATTR of a file with journal records
 * rewrites them; its reply waits until that rewrite is durable, or a
 * crash right after it would replay the old bytes and size over the
 * truncation (found by an independent run: SIGKILL after the reply
 * brought 256 KiB back). The disk's gate holds the journal's writer.
 */
static void test_truncate_answered_once_rewrite_durable(void)
{
	uint8_t b[4000];
	struct nfs3_h h;
	uint64_t id;
	uint32_t xid;

	id = start(&h, tune);
	write_at(&h, id, 0, fill(b, 'A', 4000), 4000);
	commit(&h, id);
	CU_ASSERT_EQUAL_FATAL(records(&h), 1);
	disk_gate_close(disk_tier_disk(&h.d));
	xid = setattr_size(&h, id, 10);
	for (int i = 0; i < 50; i++)
		h_turns(&h, 10);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_SETATTR], 1);
	CU_ASSERT_FALSE(h_replied(&h, xid));
	disk_gate_open(disk_tier_disk(&h.d));
	CU_ASSERT_EQUAL(setattr_status(&h, xid), NFS3_OK);
	CU_ASSERT_EQUAL(toy_node(&h.toy, id)->size, 10);
	stop(&h);
}

/* Run the loop until WRITE xid is answered; its status, and its
 * stable_how in *how. */
static nfsstat3 write_status(struct nfs3_h *h, uint32_t xid, stable_how *how)
{
	WRITE3res wr;
	nfsstat3 st;

	turns_until_replied(h, xid);
	memset(&wr, 0, sizeof(wr));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_WRITE3res, &wr), 0);
	st = wr.status;
	*how = wr.WRITE3res_u.resok.committed;
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wr);
	return st;
}

/*
 * Held by the disk's gate: a COMMIT and a FILE_SYNC WRITE wait in their
 * JOURNAL step while the journal's writer is held; a WRITE the upstream
 * must decide (ACCESS grants nothing) goes THROUGH and then waits in
 * FENCE until the rewrite of its page's record is durable. Nothing is
 * in flight once each is answered.
 */
static void test_journal_and_fence_steps_counted(void)
{
	uint8_t b[LEN];
	uint8_t fh[FH_SIZE_MAX];
	COMMIT3args c = { .offset = 0, .count = 0 };
	COMMIT3res cr;
	stable_how how;
	struct nfs3_h h;
	uint64_t id;
	uint32_t xid;

	id = start(&h, tune);
	write_at(&h, id, 0, fill(b, 'A', LEN), LEN);
	h_expect_steps(&h, NFS3_WRITE_NSTEPS, 0, NFS3_COMMIT_NSTEPS, 0);
	disk_gate_close(disk_tier_disk(&h.d));
	h_fh(&h, id, &c.file, fh);
	xid = h_call(&h, NFSPROC3_COMMIT, (xdrproc_t)xdr_COMMIT3args, &c);
	for (int i = 0; i < 20; i++)
		h_turns(&h, 10);
	h_expect_steps(&h, NFS3_WRITE_NSTEPS, 0, NFS3_COMMIT_JOURNAL, 1);
	CU_ASSERT_FALSE(h_replied(&h, xid));
	disk_gate_open(disk_tier_disk(&h.d));
	turns_until_replied(&h, xid);
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, xid, (xdrproc_t)xdr_COMMIT3res,
				     &cr), 0);
	CU_ASSERT_EQUAL(cr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_COMMIT], 0);
	h_expect_steps(&h, NFS3_WRITE_NSTEPS, 0, NFS3_COMMIT_NSTEPS, 0);

	disk_gate_close(disk_tier_disk(&h.d));
	xid = h_send_write(&h, id, 0, LEN, 'B', FILE_SYNC);
	for (int i = 0; i < 20; i++)
		h_turns(&h, 10);
	h_expect_steps(&h, NFS3_WRITE_JOURNAL, 1, NFS3_COMMIT_NSTEPS, 0);
	disk_gate_open(disk_tier_disk(&h.d));
	CU_ASSERT_EQUAL(write_status(&h, xid, &how), NFS3_OK);
	CU_ASSERT_EQUAL(how, FILE_SYNC);
	h_expect_steps(&h, NFS3_WRITE_NSTEPS, 0, NFS3_COMMIT_NSTEPS, 0);

	/* A credential ACCESS grants nothing: through, then the fence. */
	CU_ASSERT_TRUE_FATAL(records(&h) >= 1);	/* the page's, to rewrite */
	h.toy.access_deny = ACCESS3_MODIFY | ACCESS3_EXTEND;
	h.uid = h.gid = 1001;
	disk_gate_close(disk_tier_disk(&h.d));
	xid = h_send_write(&h, id, 0, LEN, 'C', UNSTABLE);
	for (int i = 0; i < 20; i++)
		h_turns(&h, 10);
	h_expect_steps(&h, NFS3_WRITE_FENCE, 1, NFS3_COMMIT_NSTEPS, 0);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], 1);
	CU_ASSERT_FALSE(h_replied(&h, xid));
	disk_gate_open(disk_tier_disk(&h.d));
	CU_ASSERT_EQUAL(write_status(&h, xid, &how), NFS3_OK);
	CU_ASSERT_EQUAL(how, FILE_SYNC);
	h_expect_steps(&h, NFS3_WRITE_NSTEPS, 0, NFS3_COMMIT_NSTEPS, 0);
	stop(&h);
}

/*
 * While a fence is due and cannot be written, a truncating SETATTR does
 * not reach the upstream (a crash before the fence would replay the old
 * bytes and size over it): it waits, then gets JUKEBOX; once the fence
 * can be written it goes through.
 */
static void test_truncate_waits_for_the_fence(void)
{
	static uint8_t b[BIG];
	char cpath[512], spath[512];
	struct nfs3_h h;
	uint64_t id;
	unsigned setattrs;
	uint32_t xid;

	id = start_fence(&h);
	fence_file(tdir, cpath, sizeof(cpath));
	fence_file(sdir, spath, sizeof(spath));
	write_at(&h, id, 0, fill(b, 'A', BIG), BIG);
	commit(&h, id);
	CU_ASSERT_EQUAL_FATAL(unlink(cpath), 0);
	CU_ASSERT_EQUAL_FATAL(unlink(spath), 0);
	disk_fault_inject(disk_tier_disk(&h.d), DISK_FAULT_JOURNAL, EIO);
	write_at(&h, id, 0, fill(b, 'B', BIG), BIG);
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3ERR_JUKEBOX);
	CU_ASSERT_TRUE_FATAL(lcommit_fence_due(&h.d));
	setattrs = h.fu.calls[NFSPROC3_SETATTR];
	xid = setattr_size(&h, id, 10);
	h_turns(&h, 50);
	CU_ASSERT_FALSE(h_replied(&h, xid));
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_SETATTR], setattrs);
	h_advance(&h, 6);
	h_turns(&h, 20);
	CU_ASSERT_EQUAL(setattr_status(&h, xid), NFS3ERR_JUKEBOX);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_SETATTR], setattrs);
	CU_ASSERT_EQUAL(toy_node(&h.toy, id)->size, BIG);

	/* The fence's thread is real time: no attempt in flight when
	 * state_dir is made usable, and the next one done before the
	 * clock moves on. */
	lcommit_fence_drain(&h.d);
	CU_ASSERT_EQUAL_FATAL(lcommit_fence_prepare(sdir), 0);
	h_advance(&h, 6);
	h_turns(&h, 20);
	lcommit_fence_drain(&h.d);
	h_turns(&h, 20);
	CU_ASSERT_FALSE(lcommit_fence_due(&h.d));
	CU_ASSERT_EQUAL(commit_status(&h, id), NFS3_OK);
	xid = setattr_size(&h, id, 10);
	CU_ASSERT_EQUAL(setattr_status(&h, xid), NFS3_OK);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_SETATTR], setattrs + 1);
	CU_ASSERT_EQUAL(toy_node(&h.toy, id)->size, 10);
	stop(&h);
	h_rmtree(sdir);
}

/*
 * A file gone upstream (STALE) keeps its records, also through a fence:
 * g's write-back fails STALE (its record kept), f's record is then
 * superseded after the tier turned off; after a restart only f's record
 * is skipped, g's is found again and installed.
 */
static void test_fence_leaves_stale_files_out(void)
{
	static uint8_t b[BIG];
	struct lcommit_stats s1;
	struct nfs3_h h;
	uint64_t f, g;

	f = start_fence(&h);
	g = toy_add_file(&h.toy, "g", 0);
	write_at(&h, g, 0, fill(b, 'G', 4096), 4096);
	commit(&h, g);
	fail_write = NFS3ERR_STALE;
	advance_to_write(&h, h.fu.calls[NFSPROC3_WRITE], 3601);
	fail_write = NFS3_OK;
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.failures[LC_STALE], 1);
	write_at(&h, f, 0, fill(b, 'A', BIG), BIG);
	commit(&h, f);
	CU_ASSERT_EQUAL(records(&h), 2);
	disk_fault_inject(disk_tier_disk(&h.d), DISK_FAULT_JOURNAL, ENOSPC);
	write_at(&h, f, 0, fill(b, 'B', BIG), BIG);
	CU_ASSERT_EQUAL(commit_status(&h, f), NFS3_OK);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.fence_writes, 1);

	f = fence_restart(&h, f, false);
	lcommit_stats_get(&h.d, &s1);
	CU_ASSERT_EQUAL(s1.superseded_records, 1);	/* f's */
	CU_ASSERT_EQUAL(s1.recovered_records + s1.kept_records, 1); /* g's */
	CU_ASSERT_EQUAL(records(&h), 1);
	stop(&h);
	h_rmtree(sdir);
}

/* ---- many writers, a disk fault at a random moment (issue 37) ---- */

#define MW_FILES 4		/* writers, one file each */
#define MW_BLOCK 4096u
#define MW_BLOCKS 48		/* per file: 192 KiB, 3 pages */
#define MW_ROUNDS 12
#define MW_RUNS 6		/* seeds per test */

/* What each writer was last told is stable, per block (0: never). */
struct mw_state {
	uint64_t id[MW_FILES];
	uint32_t acked[MW_FILES][MW_BLOCKS];
	uint32_t written[MW_FILES][MW_BLOCKS];	/* sent, maybe not acked */
	uint64_t rnd;
};

/* The next pseudo-random number of s (xorshift64*). */
static uint64_t mw_rand(struct mw_state *s)
{
	s->rnd ^= s->rnd >> 12;
	s->rnd ^= s->rnd << 25;
	s->rnd ^= s->rnd >> 27;
	return s->rnd * 2685821657736338717ull;
}

/* Block b of writer w at version v: every 4 bytes (w, b, v). */
static void mw_block(uint8_t *out, unsigned w, unsigned b, uint32_t v)
{
	uint32_t word = (uint32_t)w << 28 | (uint32_t)b << 20 | v;

	for (unsigned i = 0; i < MW_BLOCK; i += 4)
		memcpy(out + i, &word, 4);
}

/* WRITE with stable how; its status. */
static nfsstat3 mw_write(struct nfs3_h *h, uint64_t id, uint64_t off,
			 uint8_t *data, uint32_t len, stable_how how)
{
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args a = { .offset = off, .count = len, .stable = how };
	WRITE3res r;
	uint32_t xid;
	nfsstat3 st;

	h_fh(h, id, &a.file, buf);
	a.data.data_len = len;
	a.data.data_val = (char *)data;
	xid = h_call(h, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a);
	turns_until_replied(h, xid);
	memset(&r, 0, sizeof(r));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_WRITE3res, &r), 0);
	st = r.status;
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&r);
	return st;
}

/* Writer w's turn: 1 to 6 blocks at new versions, UNSTABLE then a
 * COMMIT, or one block FILE_SYNC; acknowledged versions recorded when
 * answered NFS3_OK (a JUKEBOX is retried, as a client does). */
static void mw_turn(struct nfs3_h *h, struct mw_state *s, unsigned w,
		    uint32_t version)
{
	uint8_t data[MW_BLOCK];
	unsigned n = 1 + (unsigned)(mw_rand(s) % 6);
	bool sync = mw_rand(s) % 4 == 0;
	nfsstat3 st;

	for (unsigned i = 0; i < (sync ? 1 : n); i++) {
		unsigned b = (unsigned)(mw_rand(s) % MW_BLOCKS);

		mw_block(data, w, b, version);
		for (int t = 0; t < 5; t++) {
			st = mw_write(h, s->id[w], (uint64_t)b * MW_BLOCK, data,
				      MW_BLOCK, sync ? FILE_SYNC : UNSTABLE);
			if (st != NFS3ERR_JUKEBOX)
				break;
		}
		if (st != NFS3_OK)
			fprintf(stderr, "writer %u: WRITE (%s) of block %u: "
				"status %d\n", w, sync ? "FILE_SYNC" : "UNSTABLE",
				b, (int)st);
		CU_ASSERT_EQUAL(st, NFS3_OK);
		s->written[w][b] = version;
		if (sync && st == NFS3_OK)
			s->acked[w][b] = version;
	}
	if (sync)
		return;
	for (int t = 0; t < 5; t++)
		if ((st = commit_status(h, s->id[w])) != NFS3ERR_JUKEBOX)
			break;
	CU_ASSERT_EQUAL(st, NFS3_OK);
	if (st == NFS3_OK)
		memcpy(s->acked[w], s->written[w], sizeof(s->acked[w]));
}

/* Restart with every writer's upstream file as it was (lcommit_stop
 * first when clean). */
static void mw_restart(struct nfs3_h *h, struct mw_state *s, bool clean)
{
	static uint8_t copy[MW_FILES][MW_BLOCKS * MW_BLOCK];
	uint64_t size[MW_FILES];
	char err[256], name[16];

	for (unsigned w = 0; w < MW_FILES; w++) {
		struct toy_node *n = toy_node(&h->toy, s->id[w]);

		size[w] = n->size;
		memcpy(copy[w], n->data, n->size);
	}
	if (clean)
		lcommit_stop(&h->d);
	h_fini(h);
	h_init(h, tune_fence);
	h->fu.respond = respond;
	(void)toy_add_file(&h->toy, "f", 0);	/* as start_fence made it */
	for (unsigned w = 0; w < MW_FILES; w++) {
		snprintf(name, sizeof(name), "w%u", w);
		CU_ASSERT_EQUAL_FATAL(toy_add_file(&h->toy, name, size[w]),
				      s->id[w]);
		memcpy(toy_node(&h->toy, s->id[w])->data, copy[w], size[w]);
	}
	CU_ASSERT_EQUAL_FATAL(lcommit_start(&h->d, err, sizeof(err)), 0);
}

/* Every block on the upstream holds its last acknowledged version (or
 * zeros when never acknowledged: nothing older can be there). */
static void mw_check(struct nfs3_h *h, struct mw_state *s, uint64_t seed)
{
	uint8_t want[MW_BLOCK];
	unsigned bad = 0;

	for (unsigned w = 0; w < MW_FILES; w++) {
		struct toy_node *n = toy_node(&h->toy, s->id[w]);

		for (unsigned b = 0; b < MW_BLOCKS; b++) {
			if (s->acked[w][b] == 0)
				continue;
			mw_block(want, w, b, s->acked[w][b]);
			if (n->size < (uint64_t)(b + 1) * MW_BLOCK ||
			    memcmp(n->data + (size_t)b * MW_BLOCK, want,
				   MW_BLOCK) != 0)
				bad++;
		}
	}
	if (bad)
		fprintf(stderr, "many writers, seed %" PRIu64 ": %u block(s) "
			"differ from their last acknowledged version\n", seed,
			bad);
	CU_ASSERT_EQUAL(bad, 0);
}

/*
 * 4 writers, MW_ROUNDS rounds each of a few blocks + COMMIT or a
 * FILE_SYNC WRITE, write-back moving on at random (the test clock), one
 * disk fault (the journal's commit with ENOSPC or EIO, or a slab write
 * or sync) injected at a random moment; then a restart (clean or not),
 * write-back to the end, and every block checked on the upstream against
 * its last acknowledged version. One run of seed.
 */
static void many_writers_run(bool clean, uint64_t seed)
{
	static const struct { enum disk_fault_op op; int err; } faults[] = {
		{ DISK_FAULT_JOURNAL, ENOSPC }, { DISK_FAULT_JOURNAL, EIO },
		{ DISK_FAULT_WRITE, ENOSPC }, { DISK_FAULT_SYNC, EIO },
	};
	struct mw_state *s = calloc(1, sizeof(*s));
	struct nfs3_h h;
	unsigned fault_at, fk;
	char name[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	fprintf(stderr, "many writers (%s): seed %" PRIu64 " (LC_SEED)\n",
		clean ? "clean stop" : "kill", seed);
	s->rnd = seed * 2 + 1;
	fault_at = (unsigned)(mw_rand(s) % (MW_ROUNDS * MW_FILES));
	fk = (unsigned)(mw_rand(s) % 4);
	(void)start_fence(&h);		/* its "f" is not used */
	for (unsigned w = 0; w < MW_FILES; w++) {
		snprintf(name, sizeof(name), "w%u", w);
		s->id[w] = toy_add_file(&h.toy, name, 0);
	}
	for (unsigned r = 0; r < MW_ROUNDS; r++)
		for (unsigned w = 0; w < MW_FILES; w++) {
			if (r * MW_FILES + w == fault_at)
				disk_fault_inject(disk_tier_disk(&h.d),
						  faults[fk].op, faults[fk].err);
			mw_turn(&h, s, w, r + 1);
			if (mw_rand(s) % 3 == 0) {
				h_advance(&h, 1.0 + (double)(mw_rand(s) % 4000));
				h_turns(&h, 20);
			}
		}
	mw_restart(&h, s, clean);
	for (int i = 0; i < 6; i++) {
		h_advance(&h, 3601);
		h_turns(&h, 50);
	}
	mw_check(&h, s, seed);
	stop(&h);
	h_rmtree(sdir);
	free(s);
}

/* MW_RUNS runs, from the seed LC_SEED gives or the time. */
static void check_many_writers(bool clean)
{
	const char *env = getenv("LC_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);

	for (unsigned i = 0; i < (env ? 1 : MW_RUNS); i++)
		many_writers_run(clean, seed + i);
}

static void test_many_writers_clean(void) { check_many_writers(true); }
static void test_many_writers_kill(void) { check_many_writers(false); }

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_lcommit", NULL, NULL);

	/* A restart closes the client's end with replies possibly queued,
	 * as a crash does: the daemon ignores SIGPIPE, so does this test. */
	signal(SIGPIPE, SIG_IGN);

	if (!s ||
	    !CU_add_test(s, "acces_kept_then_written", test_acces) ||
	    !CU_add_test(s, "perm_kept_then_written", test_perm) ||
	    !CU_add_test(s, "dquot_kept_then_written", test_dquot) ||
	    !CU_add_test(s, "nospc_kept_then_written", test_nospc) ||
	    !CU_add_test(s, "rofs_kept_then_written", test_rofs) ||
	    !CU_add_test(s, "stale_kept_in_cache_dir", test_stale) ||
	    !CU_add_test(s, "rewritten_stable_bytes_not_replayed",
			 test_rewritten_stable_bytes_not_replayed) ||
	    !CU_add_test(s, "truncate_not_undone_by_replay",
			 test_truncate_not_undone_by_replay) ||
	    !CU_add_test(s, "remove_drops_records", test_remove_drops_records) ||
	    !CU_add_test(s, "fresh_daemon_starts_at_zero",
			 test_fresh_daemon_starts_at_zero) ||
	    !CU_add_test(s, "failures_logged_paced_by_name",
			 test_failures_logged_paced_by_name) ||
	    !CU_add_test(s, "unreadable_journal_refuses_start",
			 test_unreadable_journal_refuses_start) ||
	    !CU_add_test(s, "dirty_limit_falls_back_to_upstream",
			 test_dirty_limit_falls_back_to_upstream) ||
	    !CU_add_test(s, "no_rollback_after_tier_off_clean_stop",
			 test_no_rollback_clean_stop) ||
	    !CU_add_test(s, "no_rollback_after_tier_off_kill",
			 test_no_rollback_kill) ||
	    !CU_add_test(s, "fence_in_state_dir_else_jukebox",
			 test_fence_in_state_dir_else_jukebox) ||
	    !CU_add_test(s, "truncate_answered_once_rewrite_durable",
			 test_truncate_answered_once_rewrite_durable) ||
	    !CU_add_test(s, "journal_and_fence_steps_counted",
			 test_journal_and_fence_steps_counted) ||
	    !CU_add_test(s, "truncate_waits_for_the_fence",
			 test_truncate_waits_for_the_fence) ||
	    !CU_add_test(s, "fence_leaves_stale_files_out",
			 test_fence_leaves_stale_files_out) ||
	    !CU_add_test(s, "many_writers_random_fault_clean_stop",
			 test_many_writers_clean) ||
	    !CU_add_test(s, "many_writers_random_fault_kill",
			 test_many_writers_kill))
		return -1;
	return 0;
}
