/* SPDX-License-Identifier: MIT */
/*
 * test_lcommit: commit = "local" (issue 18; docs/disk-tier.md "Local
 * commit") with Ganesha upstream, seen with the project's raw RPC client
 * so every verifier and stable_how is seen as the proxy sent it (RFC 1813
 * sections 3.3.7 and 3.3.21). Run one suite by name from test_lcommit.sh,
 * which starts, kills and restarts the proxy (wbtest_proxy.sh) with
 * writeback_delay = 600, a cache_dir, commit = "local" on the export and
 * the proxy's test clock (write-back starts only when a suite advances
 * it):
 *
 *   ack_before   256 KiB UNSTABLE and COMMIT, then 64 KiB FILE_SYNC: both
 *                answered locally (nfscached_local_commits_total by call),
 *                no upstream WRITE, the file still empty on Ganesha's disk,
 *                GETATTR gives the locally committed size, 5 journal
 *                records; saves the file and the verifier ("lc-ack").
 *   ack_after    after SIGKILL and a restart: 5 records recovered, GETATTR
 *                and READ give the acknowledged size and bytes with no
 *                upstream READ, the WRITE verifier changed; once the clock
 *                passes writeback_delay the bytes are on Ganesha's disk and
 *                the journal is empty. Saves the new verifier.
 *   verf_same    after a SIGTERM restart: the WRITE verifier is the saved
 *                one and nfscached_write_verifier_reused is 1.
 *   verf_new     after cache_dir was removed while the proxy was down: the
 *                verifier differs and nfscached_write_verifier_reused is 0.
 *   down_prep    create a file ("lc-down") for down_write and write its
 *                first 64 KiB UNSTABLE (the proxy learns the caller's
 *                write permission: while the upstream is down it cannot).
 *   down_write   with Ganesha stopped: UNSTABLE + COMMIT and a FILE_SYNC
 *                WRITE answered NFS3_OK, locally; the journal holds them.
 *   down_after   Ganesha started again and `nfscached cache flush` run
 *                (it writes back without waiting for writeback_delay):
 *                the bytes are on Ganesha's disk and the journal empties.
 *   acces        a file made root's and mode 0600 directly on Ganesha
 *                after the proxy cached it as uid 1000's: uid 1000's
 *                COMMIT is answered locally, write-back fails with ACCES
 *                (counted as cause "acces"), the record is kept and
 *                nothing is dropped; once the owner is restored the retry
 *                writes the bytes and the journal empties.
 *   stale        a locally committed file removed on Ganesha: write-back
 *                fails with STALE (cause "stale"), the record stays in
 *                cache_dir (last: it stays for the rest of the run).
 *   crash_work   (the crash loop, Release tree) appends chunks of random
 *                length to the file named by $LC_CRASH_NAME, one in 8 of
 *                them FILE_SYNC, with a COMMIT every 1 to 4 WRITEs, and
 *                after each acknowledgement saves what the client was told
 *                is stable to $LC_CRASH_ACK (the COMMITted length and the
 *                FILE_SYNC ranges since); it ends when the proxy dies (the
 *                loop kills it at a random moment).
 *   crash_check  once the journal is empty: every file named by a
 *                $LC_CRASH_DIR/NAME.ack holds on Ganesha's disk every
 *                byte acknowledged to it, byte-exact.
 *   rb_before    (issue 37, test_lcommit_rollback.sh) 64 KiB of A at 0,
 *                UNSTABLE + COMMIT, answered from the journal (1 record).
 *   rb_full      with cache_dir's filesystem full: 1 MiB more + COMMIT
 *                (the journal's commit fails, the tier turns off, answered
 *                the upstream way once the fence is written), then 64 KiB
 *                of B at 0 + COMMIT; both NFS3_OK, 2 fallbacks counted,
 *                1 fence, B and the 1 MiB on Ganesha's disk; saves how
 *                many records the journal still holds.
 *   rb_after     after a stop (SIGTERM or SIGKILL), the space freed and a
 *                restart: every record left (A's, and any of the 1 MiB
 *                committed before the disk filled) counted superseded,
 *                none recovered,
 *                the journal empties, and READ through the proxy and
 *                Ganesha's disk give B, never A.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define ACK_LEN (256u * WB_KIB)
#define SYNC_LEN (64u * WB_KIB)
#define CHUNK (64u * WB_KIB)
#define PAGE (64u * WB_KIB)		/* the harness's page_size */
#define SEED_ACK 18
#define SEED_DOWN 19
#define SEED_ACCES 20
#define SEED_STALE 21
#define WAIT_MS 120000

#define M_COMMITS "nfscached_local_commits_total{call=\"commit\"}"
#define M_SYNCW "nfscached_local_commits_total{call=\"write\"}"
#define M_RECORDS "nfscached_disk_dirty_records"
#define M_DBYTES "nfscached_disk_dirty_bytes"
#define M_RECOVERED "nfscached_local_recovered_records"
#define M_REUSED "nfscached_write_verifier_reused"
#define M_UP_READ "nfscached_upstream_rpcs_total{procedure=\"read\"}"
#define M_FAIL(c) "nfscached_local_writeback_failures_total{cause=\"" c "\"}"

static struct wb_conn px, dx;

static int init_proxy(void)
{
	return wb_open(&px, "proxy", 0, 0);
}

static int init_both(void)
{
	return init_proxy() < 0 || wb_open(&dx, "direct", 0, 0) < 0 ? -1 : 0;
}

static int clean(void)
{
	wb_close(&px);
	wb_close(&dx);
	return 0;
}

/* Write len bytes of pattern seed at off, in CHUNK WRITEs of stable. */
static void write_pattern(const struct wb_fh *fh, uint64_t off, uint32_t len,
			  uint32_t seed, int stable, uint8_t *verf)
{
	uint8_t *buf = malloc(CHUNK);
	struct wb_wres r;

	WB_CHECK(buf != NULL, "malloc");
	for (uint32_t done = 0; buf && done < len; done += CHUNK) {
		uint32_t n = len - done < CHUNK ? len - done : CHUNK;

		wb_pattern(buf, n, off + done, seed);
		WB_STAT(wb_write(&px, fh, off + done, buf, n, stable, &r),
			NFS3_OK);
		WB_EQ(r.count, n);
		WB_EQ(r.committed, stable);
		if (verf)
			memcpy(verf, r.verf, NFS3_WRITEVERFSIZE);
	}
	free(buf);
}

/* Compare [off, off + len) of name on Ganesha's disk with pattern seed. */
static void check_range(const char *name, uint64_t off, uint64_t len,
			uint32_t seed)
{
	uint8_t *got = malloc(len), *want = malloc(len);

	WB_CHECK(got && want, "malloc");
	if (got && want) {
		size_t at, end, zeros = 0;

		wb_pattern(want, len, off, seed);
		WB_EQ(wb_disk_read(name, off, got, len), len);
		at = wb_first_diff(got, want, len);
		for (end = at; end < len && got[end] != want[end]; end++)
			zeros += got[end] == 0;
		WB_CHECK(at == len, "%s: acknowledged bytes [%llu, %llu) differ "
			 "on Ganesha's disk (%zu of them zero)", name,
			 (unsigned long long)(off + at),
			 (unsigned long long)(off + end), zeros);
	}
	free(got);
	free(want);
}

/* Compare [0, len) of name on Ganesha's disk with pattern seed. */
static void check_disk(const char *name, uint64_t len, uint32_t seed)
{
	check_range(name, 0, len, seed);
}

/* Poll series every 20 ms until it is <= want or timeout_ms passes;
 * the last value. */
static double wait_at_most(const char *series, double want, int timeout_ms)
{
	uint64_t end = wb_now_ms() + (uint64_t)timeout_ms;
	double v;

	while ((v = wb_metric(series)) > want && wb_now_ms() < end)
		wb_sleep_ms(20);
	return v;
}

/* Advance the proxy's clock secs seconds, then connect again: the proxy
 * closes connections idle that long. 0 or -1. */
static int advance(double secs)
{
	if (tclock_advance(secs) != 0)
		return -1;
	WB_CHECK(wb_reopen(&px) == 0, "connect to the proxy again");
	return px.fd < 0 ? -1 : 0;
}

/* Create name in the export root through the proxy (mode 0644, empty). */
static void create(const char *name, struct wb_fh *fh)
{
	WB_STAT(wb_create(&px, &px.root, name, UNCHECKED, 0644, 0, fh, NULL),
		NFS3_OK);
}

/* The size READDIRPLUS shows for name in the export's root, listing it
 * from the start in pages of up to 32 KiB; -1 if absent or the call fails. */
static long long readdirplus_size(const char *name)
{
	READDIRPLUS3args a;
	READDIRPLUS3res res;
	long long size = -1;
	bool eof = false;

	memset(&a, 0, sizeof(a));
	a.dir.data.data_len = (u_int)px.root.len;
	a.dir.data.data_val = (char *)px.root.data;
	a.dircount = 32768;
	a.maxcount = 32768;
	while (!eof && size < 0) {
		const entryplus3 *e;

		memset(&res, 0, sizeof(res));
		if (wb_call(&px, NFSPROC3_READDIRPLUS,
			    (xdrproc_t)xdr_READDIRPLUS3args, &a,
			    (xdrproc_t)xdr_READDIRPLUS3res, &res,
			    WB_TIMEOUT_MS) != NFS3_OK)
			break;
		e = res.READDIRPLUS3res_u.resok.reply.entries;
		for (; e; e = e->nextentry) {
			if (strcmp(e->name, name) == 0 &&
			    e->name_attributes.attributes_follow)
				size = (long long)e->name_attributes
					       .post_op_attr_u.attributes.size;
			a.cookie = e->cookie;
		}
		memcpy(a.cookieverf, res.READDIRPLUS3res_u.resok.cookieverf,
		       sizeof(a.cookieverf));
		eof = res.READDIRPLUS3res_u.resok.reply.eof;
		xdr_free((xdrproc_t)xdr_READDIRPLUS3res, (char *)&res);
	}
	return size;
}

static void test_ack_before(void)
{
	uint8_t verf[NFS3_WRITEVERFSIZE], cverf[NFS3_WRITEVERFSIZE];
	struct wb_snap a, b;
	char name[64], hv[17];
	struct wb_fh fh;
	fattr3 at;

	wb_unique_name(name, sizeof(name), "lc-ack");
	create(name, &fh);
	if (wb_snap_take(&a) != 0)
		return;
	write_pattern(&fh, 0, ACK_LEN, SEED_ACK, UNSTABLE, verf);
	WB_STAT(wb_commit(&px, &fh, cverf, WB_TIMEOUT_MS), NFS3_OK);
	WB_CHECK(memcmp(verf, cverf, sizeof(verf)) == 0,
		 "the COMMIT verifier is the WRITEs' verifier");
	write_pattern(&fh, ACK_LEN, SYNC_LEN, SEED_ACK, FILE_SYNC, NULL);
	if (wb_snap_take(&b) != 0) {
		wb_snap_free(&a);
		return;
	}
	WB_EQ(wb_snap_delta(&a, &b, M_COMMITS), 1);
	WB_EQ(wb_snap_delta(&a, &b, M_SYNCW), 1);
	WB_EQ(wb_snap_delta(&a, &b, WB_M_UP_WRITE), 0);
	WB_EQ(wb_snap_delta(&a, &b, WB_M_UP_COMMIT), 0);
	WB_EQ(wb_snap_get(&b, M_RECORDS), (ACK_LEN + SYNC_LEN) / PAGE);
	WB_CHECK(wb_snap_get(&b, M_DBYTES) > ACK_LEN + SYNC_LEN,
		 "the journal holds the acknowledged bytes and their extents");
	wb_snap_free(&a);
	wb_snap_free(&b);
	WB_EQ(wb_disk_size(name), 0);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, ACK_LEN + SYNC_LEN);
	/* A listing shows the locally committed size too (issue 18 item 4),
	 * not the upstream's 0. */
	WB_EQ(readdirplus_size(name), ACK_LEN + SYNC_LEN);
	wb_verf_hex(verf, hv);
	wb_state_save("lc-ack", name, hv, &fh);
}

/* The verifier of an UNSTABLE WRITE of fh's first 4 KiB, rewritten with
 * the bytes of pattern seed. */
static void current_verf(const struct wb_fh *fh, uint32_t seed, char *hv)
{
	uint8_t buf[4096];
	struct wb_wres r;

	wb_pattern(buf, sizeof(buf), 0, seed);
	WB_STAT(wb_write(&px, fh, 0, buf, sizeof(buf), UNSTABLE, &r), NFS3_OK);
	wb_verf_hex(r.verf, hv);
}

static void test_ack_after(void)
{
	const uint64_t len = ACK_LEN + SYNC_LEN;
	char name[64], hv0[17], hv1[17];
	uint8_t *got = malloc(len), *want = malloc(len);
	struct wb_snap a, b;
	struct wb_fh fh;
	fattr3 at;

	WB_CHECK(got && want, "malloc");
	WB_CHECK(wb_state_load("lc-ack", name, hv0, &fh) == 0,
		 "read what ack_before saved");
	if (!got || !want || !fh.len || wb_snap_take(&a) != 0)
		goto out;
	WB_EQ(wb_snap_get(&a, M_RECOVERED), len / PAGE);
	WB_EQ(wb_disk_size(name), 0);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, len);
	wb_pattern(want, len, 0, SEED_ACK);
	WB_EQ(wb_read_all(&px, &fh, got, len), len);
	WB_EQ(wb_first_diff(got, want, len), len);
	if (wb_snap_take(&b) == 0) {
		WB_EQ(wb_snap_delta(&a, &b, M_UP_READ), 0);
		wb_snap_free(&b);
	}
	wb_snap_free(&a);
	current_verf(&fh, SEED_ACK, hv1);
	fprintf(stderr, "lctest: verifier before SIGKILL %s, after %s\n", hv0,
		hv1);
	WB_CHECK(strcmp(hv0, hv1) != 0, "the verifier changed across SIGKILL");
	if (advance(601) != 0)
		goto out;
	WB_EQ(wait_at_most(M_RECORDS, 0, WAIT_MS), 0);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	check_disk(name, len, SEED_ACK);
	wb_state_save("lc-ack", name, hv1, &fh);
out:
	free(got);
	free(want);
}

/* The verifier after a restart: same (after a clean stop) or not. */
static void verf_check(bool same)
{
	char name[64], hv0[17], hv1[17];
	struct wb_fh fh;

	WB_CHECK(wb_state_load("lc-ack", name, hv0, &fh) == 0,
		 "read what ack_after saved");
	if (!fh.len)
		return;
	current_verf(&fh, SEED_ACK, hv1);
	fprintf(stderr, "lctest: verifier before the restart %s, after %s\n",
		hv0, hv1);
	WB_CHECK((strcmp(hv0, hv1) == 0) == same, "the verifier is %s",
		 same ? "the same" : "new");
	WB_EQ(wb_metric(M_REUSED), same ? 1 : 0);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
}

static void test_verf_same(void)
{
	verf_check(true);
}

static void test_verf_new(void)
{
	verf_check(false);
}

static void test_down_prep(void)
{
	char name[64];
	struct wb_fh fh;

	fattr3 at;

	wb_unique_name(name, sizeof(name), "lc-down");
	create(name, &fh);
	/* Attributes cached for acregmin (600 s) and the caller's write
	 * permission learned (one upstream ACCESS): the WRITEs of down_write
	 * need nothing from the upstream. */
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	write_pattern(&fh, 0, CHUNK, SEED_DOWN, UNSTABLE, NULL);
	wb_state_save("lc-down", name, "0000000000000000", &fh);
}

static void test_down_write(void)
{
	char name[64], hv[17];
	struct wb_snap a, b;
	struct wb_fh fh;

	WB_CHECK(wb_state_load("lc-down", name, hv, &fh) == 0,
		 "read what down_prep saved");
	if (!fh.len || wb_snap_take(&a) != 0)
		return;
	write_pattern(&fh, 0, ACK_LEN, SEED_DOWN, UNSTABLE, NULL);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	write_pattern(&fh, ACK_LEN, SYNC_LEN, SEED_DOWN, FILE_SYNC, NULL);
	if (wb_snap_take(&b) == 0) {
		WB_EQ(wb_snap_delta(&a, &b, M_COMMITS), 1);
		WB_EQ(wb_snap_delta(&a, &b, M_SYNCW), 1);
		WB_EQ(wb_snap_get(&b, M_RECORDS), (ACK_LEN + SYNC_LEN) / PAGE);
		wb_snap_free(&b);
	}
	wb_snap_free(&a);
}

static void test_down_after(void)
{
	char name[64], hv[17];
	struct wb_fh fh;

	WB_CHECK(wb_state_load("lc-down", name, hv, &fh) == 0,
		 "read what down_prep saved");
	if (!fh.len)
		return;
	/* test_lcommit.sh ran `nfscached cache flush`, which returned. */
	WB_EQ(wait_at_most(M_RECORDS, 0, WAIT_MS), 0);
	WB_EQ(wb_disk_size(name), ACK_LEN + SYNC_LEN);
	check_disk(name, ACK_LEN + SYNC_LEN, SEED_DOWN);
}

/* Create name as root, give it to uid 1000 through the proxy, and switch
 * px to uid 1000. */
static void create_as_user(const char *name, struct wb_fh *fh)
{
	create(name, fh);
	WB_STAT(wb_setattr_owner(&px, fh, 1000, 1000), NFS3_OK);
	wb_set_cred(&px, 1000, 1000);
}

/* Advance the clock in steps past the retry interval until the journal
 * holds at most want records; the last value. */
static double advance_until(double want)
{
	double v = wb_metric(M_RECORDS);

	for (int i = 0; i < 40 && v > want; i++) {
		if (advance(6) != 0)
			break;
		v = wait_at_most(M_RECORDS, want, 1000);
	}
	return v;
}

static void test_acces(void)
{
	struct wb_fh fh, dfh;
	double fails0;
	char name[64];

	wb_unique_name(name, sizeof(name), "lc-acces");
	create_as_user(name, &fh);
	/* The proxy learns uid 1000 may write (ACCESS upstream once). */
	write_pattern(&fh, 0, CHUNK, SEED_ACCES, UNSTABLE, NULL);
	/* Behind the proxy's back: root's, 0600. */
	WB_STAT(wb_lookup(&dx, &dx.root, name, &dfh, NULL), NFS3_OK);
	WB_STAT(wb_setattr_owner(&dx, &dfh, 0, 0), NFS3_OK);
	WB_STAT(wb_setattr(&dx, &dfh, -1, 0600, NULL), NFS3_OK);
	fails0 = wb_metric(M_FAIL("acces"));
	write_pattern(&fh, CHUNK, CHUNK, SEED_ACCES, UNSTABLE, NULL);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	WB_EQ(wb_metric(M_RECORDS), 2);
	if (advance(601) != 0)
		return;
	WB_CHECK(wb_wait_metric(M_FAIL("acces"), fails0 + 1, WAIT_MS) >=
			 fails0 + 1, "a write-back failure of cause acces");
	/* Kept: the records stay and a later retry fails again. */
	WB_EQ(wb_metric(M_RECORDS), 2);
	WB_EQ(wb_disk_size(name), 0);
	WB_STAT(wb_setattr_owner(&dx, &dfh, 1000, 1000), NFS3_OK);
	WB_STAT(wb_setattr(&dx, &dfh, -1, 0644, NULL), NFS3_OK);
	WB_EQ(advance_until(0), 0);
	check_disk(name, 2 * CHUNK, SEED_ACCES);
	wb_set_cred(&px, 0, 0);
}

static void test_stale(void)
{
	double fails0, recs;
	struct wb_fh fh;
	char name[64];

	wb_unique_name(name, sizeof(name), "lc-stale");
	create(name, &fh);
	fails0 = wb_metric(M_FAIL("stale"));
	write_pattern(&fh, 0, CHUNK, SEED_STALE, UNSTABLE, NULL);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	recs = wb_metric(M_RECORDS);
	WB_EQ(recs, 1);
	WB_STAT(wb_remove(&dx, &dx.root, name), NFS3_OK);
	if (advance(601) != 0)
		return;
	WB_CHECK(wb_wait_metric(M_FAIL("stale"), fails0 + 1, WAIT_MS) >=
			 fails0 + 1, "a write-back failure of cause stale");
	/* The record stays in cache_dir for the operator (and the next
	 * start). */
	WB_EQ(wb_metric(M_RECORDS), recs);
}

/* ---- the crash loop ---- */

/* What a client was told is stable: [0, committed) by its last COMMIT,
 * and the FILE_SYNC WRITEs since (RFC 1813 3.3.7: a FILE_SYNC reply
 * covers that WRITE's bytes only). */
struct acked {
	uint64_t committed;
	unsigned n;
	uint64_t off[8], len[8];
};

/* Save a to path (replacing it atomically): "OFF LEN" lines. */
static void ack_save(const char *path, const struct acked *a)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "0 %llu\n", (unsigned long long)a->committed);
	for (unsigned i = 0; i < a->n; i++)
		fprintf(f, "%llu %llu\n", (unsigned long long)a->off[i],
			(unsigned long long)a->len[i]);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static void test_crash_work(void)
{
	const char *name = wb_env("LC_CRASH_NAME");
	const char *ackp = wb_env("LC_CRASH_ACK");
	const bool trace = getenv("LC_CRASH_TRACE") != NULL;
	uint64_t rs = (uint64_t)getpid() * 2654435761u + 1, off = 0;
	uint8_t *buf = malloc(CHUNK);
	struct acked ack = { 0 };
	struct wb_wres r;
	struct wb_fh fh;
	unsigned since = 0;

	if (!name || !ackp || !buf) {
		WB_CHECK(0, "LC_CRASH_NAME and LC_CRASH_ACK set, memory");
		free(buf);
		return;
	}
	create(name, &fh);
	ack_save(ackp, &ack);
	/* Until the proxy dies: every error ends the work, not the test.
	 * A COMMIT at most every 4 WRITEs, so at most 4 FILE_SYNC ranges
	 * are acknowledged past the last COMMIT. */
	for (;;) {
		uint32_t n = 1 + (uint32_t)(wb_rand(&rs) % CHUNK);
		bool sync = wb_rand(&rs) % 8 == 0;

		wb_pattern(buf, n, off, SEED_ACK);
		if (wb_write(&px, &fh, off, buf, n, sync ? FILE_SYNC : UNSTABLE,
			     &r) != NFS3_OK || r.count != n)
			break;
		if (trace)
			fprintf(stderr, "W %llu %u %d\n",
				(unsigned long long)off, n, sync);
		if (sync && r.committed == FILE_SYNC && ack.n < 8) {
			ack.off[ack.n] = off;
			ack.len[ack.n++] = n;
			ack_save(ackp, &ack);
		}
		off += n;
		if (++since >= 1 + wb_rand(&rs) % 4) {
			if (wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS) != NFS3_OK)
				break;
			if (trace)
				fprintf(stderr, "C %llu\n",
					(unsigned long long)off);
			ack = (struct acked){ .committed = off };
			ack_save(ackp, &ack);
			since = 0;
		}
	}
	fprintf(stderr, "lctest: crash_work wrote %llu bytes of %s\n",
		(unsigned long long)off, name);
	free(buf);
}

/* Check one .ack file (path) against file name on Ganesha's disk. */
static void ack_check(const char *path, const char *name)
{
	unsigned long long off, len, ranges = 0, bytes = 0;
	FILE *f = fopen(path, "r");

	WB_CHECK(f != NULL, "open %s", path);
	if (!f)
		return;
	while (fscanf(f, "%llu %llu", &off, &len) == 2) {
		WB_CHECK(wb_disk_size(name) >= (int64_t)(off + len),
			 "%s: %lld bytes on Ganesha's disk, [%llu, %llu) "
			 "acknowledged", name, (long long)wb_disk_size(name),
			 off, off + len);
		if (len)
			check_range(name, off, len, SEED_ACK);
		ranges++;
		bytes += len;
	}
	fclose(f);
	WB_CHECK(ranges > 0, "%s holds the committed length", path);
	fprintf(stderr, "lctest: %s: %llu acknowledged bytes in %llu ranges "
		"verified\n", name, bytes, ranges);
}

static void test_crash_check(void)
{
	const char *dir = wb_env("LC_CRASH_DIR");
	unsigned files = 0;
	struct dirent *e;
	DIR *dp;

	if (!dir || !(dp = opendir(dir))) {
		WB_CHECK(0, "LC_CRASH_DIR names a directory");
		return;
	}
	/* What the last start recovered is written back first. */
	WB_EQ(wait_at_most(M_RECORDS, 0, WAIT_MS), 0);
	while ((e = readdir(dp)) != NULL) {
		char path[4200], fname[300];
		size_t l = strlen(e->d_name);

		if (l < 5 || strcmp(e->d_name + l - 4, ".ack") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(fname, sizeof(fname), "%.*s", (int)(l - 4), e->d_name);
		ack_check(path, fname);
		files++;
	}
	closedir(dp);
	fprintf(stderr, "lctest: crash_check verified %u files\n", files);
	WB_CHECK(files > 0, "the crash loop left files to check");
}

/* ---- the tier turned off with records outstanding (issue 37) ---- */

#define SEED_RB_A 37
#define SEED_RB_M 38
#define SEED_RB_B 39
#define RB_LEN (64u * WB_KIB)
#define RB_MORE (1024u * WB_KIB)	/* grows the journal's file */
#define M_FALLBACKS "nfscached_local_commit_fallbacks_total"
#define M_SUPERSEDED "nfscached_local_superseded_records"
#define M_FENCES "nfscached_local_journal_fence_writes_total"
#define M_DISK_ON "nfscached_disk_on"

/* 64 KiB of A at 0, UNSTABLE + COMMIT: answered from the journal. */
static void test_rb_before(void)
{
	struct wb_snap a, b;
	char name[64];
	struct wb_fh fh;

	wb_unique_name(name, sizeof(name), "lc-rb");
	create(name, &fh);
	if (wb_snap_take(&a) != 0)
		return;
	write_pattern(&fh, 0, RB_LEN, SEED_RB_A, UNSTABLE, NULL);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	if (wb_snap_take(&b) == 0) {
		WB_EQ(wb_snap_delta(&a, &b, M_COMMITS), 1);
		WB_EQ(wb_snap_get(&b, M_RECORDS), 1);
		WB_EQ(wb_snap_get(&b, M_DISK_ON), 1);
		wb_snap_free(&b);
	}
	wb_snap_free(&a);
	WB_EQ(wb_disk_size(name), 0);
	wb_state_save("lc-rb", name, "0", &fh);
}

/* cache_dir's filesystem is full now: 1 MiB more + COMMIT turns the tier
 * off and is answered the upstream way; then 64 KiB of B at 0 + COMMIT.
 * Both NFS3_OK, B on Ganesha's disk, the fence written. */
static void test_rb_full(void)
{
	struct wb_snap a, b;
	char name[64], hv[17];
	struct wb_fh fh;

	WB_CHECK(wb_state_load("lc-rb", name, hv, &fh) == 0, "rb_before ran");
	if (wb_snap_take(&a) != 0)
		return;
	write_pattern(&fh, RB_LEN, RB_MORE, SEED_RB_M, UNSTABLE, NULL);
	WB_STAT(wb_commit_retry(&px, &fh, NULL, WAIT_MS, NULL), NFS3_OK);
	WB_EQ(wb_metric(M_DISK_ON), 0);
	write_pattern(&fh, 0, RB_LEN, SEED_RB_B, UNSTABLE, NULL);
	WB_STAT(wb_commit_retry(&px, &fh, NULL, WAIT_MS, NULL), NFS3_OK);
	if (wb_snap_take(&b) == 0) {
		WB_EQ(wb_snap_delta(&a, &b, M_COMMITS), 0);
		WB_EQ(wb_snap_delta(&a, &b, M_FALLBACKS), 2);
		WB_EQ(wb_snap_get(&b, M_FENCES), 1);
		/* A's (and any of the 1 MiB committed before the disk
		 * filled) stay: the journal cannot delete now. */
		WB_CHECK(wb_snap_get(&b, M_RECORDS) >= 1, "records stay");
		/* rb_after: the next start finds exactly these. */
		snprintf(hv, sizeof(hv), "%.0f", wb_snap_get(&b, M_RECORDS));
		wb_state_save("lc-rb", name, hv, &fh);
		wb_snap_free(&b);
	}
	wb_snap_free(&a);
	check_range(name, 0, RB_LEN, SEED_RB_B);
	check_range(name, RB_LEN, RB_MORE, SEED_RB_M);
}

/* Restarted with room again: A's record is superseded, not replayed;
 * the upstream and the proxy give B. */
static void test_rb_after(void)
{
	uint8_t *got = malloc(RB_LEN), *want = malloc(RB_LEN);
	char name[64], hv[17];
	struct wb_fh fh;

	WB_CHECK(got && want, "malloc");
	WB_CHECK(wb_state_load("lc-rb", name, hv, &fh) == 0, "rb_before ran");
	/* Every record left on disk is superseded, none replayed. */
	WB_CHECK(atoi(hv) >= 1, "rb_full saved the records left");
	WB_EQ(wb_metric(M_SUPERSEDED), atoi(hv));
	WB_EQ(wb_metric(M_RECOVERED), 0);
	WB_EQ(wait_at_most(M_RECORDS, 0, WAIT_MS), 0);
	if (got && want) {
		wb_pattern(want, RB_LEN, 0, SEED_RB_B);
		WB_EQ(wb_read_all(&px, &fh, got, RB_LEN), RB_LEN);
		WB_EQ(wb_first_diff(got, want, RB_LEN), RB_LEN);
	}
	check_range(name, 0, RB_LEN, SEED_RB_B);
	check_range(name, RB_LEN, RB_MORE, SEED_RB_M);
	free(got);
	free(want);
}

/* ---- a truncation acknowledged, then SIGKILL at once ----
 * tr_kill: 256 KiB of A + COMMIT (journaled, tier on), SETATTR size 0
 * (NFS3_OK), then SIGKILL to $NFSC_PROXY_PID right after the reply.
 * tr_check (after a restart and a flush): the upstream file is still
 * size 0: the journal's rewrite was durable before the reply, so no
 * older record replays over the truncation. */
static void test_tr_kill(void)
{
	const char *pid = wb_env("NFSC_PROXY_PID");
	char name[64];
	struct wb_fh fh;

	wb_unique_name(name, sizeof(name), "lc-tr");
	create(name, &fh);
	write_pattern(&fh, 0, 4 * RB_LEN, SEED_RB_A, UNSTABLE, NULL);
	WB_STAT(wb_commit(&px, &fh, NULL, WB_TIMEOUT_MS), NFS3_OK);
	WB_STAT(wb_setattr(&px, &fh, 0, -1, NULL), NFS3_OK);
	if (pid)
		kill((pid_t)atoi(pid), SIGKILL);
	wb_state_save("lc-tr", name, "0", &fh);
}

static void test_tr_check(void)
{
	char name[64], hv[17];
	struct wb_fh fh;
	fattr3 at;

	WB_CHECK(wb_state_load("lc-tr", name, hv, &fh) == 0, "tr_kill ran");
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.size, 0);
	WB_EQ(wb_disk_size(name), 0);
}

int test_register(void)
{
	static const struct {
		const char *name;
		int (*init)(void);
		void (*fn)(void);
	} t[] = {
		{ "ack_before", init_proxy, test_ack_before },
		{ "ack_after", init_proxy, test_ack_after },
		{ "verf_same", init_proxy, test_verf_same },
		{ "verf_new", init_proxy, test_verf_new },
		{ "down_prep", init_proxy, test_down_prep },
		{ "down_write", init_proxy, test_down_write },
		{ "down_after", init_proxy, test_down_after },
		{ "acces", init_both, test_acces },
		{ "stale", init_both, test_stale },
		{ "crash_work", init_proxy, test_crash_work },
		{ "crash_check", init_proxy, test_crash_check },
		{ "rb_before", init_proxy, test_rb_before },
		{ "rb_full", init_proxy, test_rb_full },
		{ "rb_after", init_proxy, test_rb_after },
		{ "tr_kill", init_proxy, test_tr_kill },
		{ "tr_check", init_proxy, test_tr_check },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CU_pSuite s = CU_add_suite(t[i].name, t[i].init, clean);

		if (!s || !CU_add_test(s, t[i].name, t[i].fn))
			return -1;
	}
	return 0;
}
