/* SPDX-License-Identifier: MIT */
/*
 * test_wb_verifier: the write verifiers behind write-back (RFC 1813
 * sections 3.3.7 and 3.3.21; docs/design.md "Write semantics"), seen with the
 * project's raw RPC client (libnfs's sync API ignores verifiers).
 *
 * Suites (run one by name: test_wb_verifier SUITE):
 *
 *   upstream_loss  Under harness.sh with wbtest_commitdelay.conf
 *                  (writeback_commit_delay = 600, writeback_delay = 600)
 *                  and the proxy's test clock: the client writes 1 MiB
 *                  UNSTABLE and sends COMMIT; the proxy WRITEs it upstream
 *                  and then waits 600 s before its upstream COMMIT. In
 *                  that window the test stops Ganesha, overwrites those
 *                  bytes in the export directory (the loss of unstable
 *                  data made real), starts Ganesha again (a new upstream
 *                  verifier) and advances the proxy's clock 600 s, which
 *                  ends the window whatever the machine's speed. When the client's
 *                  COMMIT returns: NFS3_OK with the proxy's verifier, the
 *                  same as its WRITEs' (the proxy did not restart); the
 *                  upstream holds the client's bytes (directly and on
 *                  disk); nfscached_writeback_resent_bytes_total moved by
 *                  exactly 1 MiB, with 2 x (1 MiB / wsize) upstream WRITEs
 *                  (write-back's size: writeback_wsize, capped by wtmax)
 *                  and 2 COMMITs.
 *   kill_before    (test_wb_kill.sh) write 64 KiB UNSTABLE (absorbed, not
 *                  committed) and save the file handle, the name and the
 *                  WRITE verifier to $NFSC_TMP/wb-kill.state.
 *   kill_after     (test_wb_kill.sh, after SIGKILL and a restart with the
 *                  same state_dir) the saved handle still works (GETATTR,
 *                  WRITE, COMMIT, READ); the WRITE verifier differs from
 *                  the saved one; the absorbed bytes never reached Ganesha
 *                  (the file is empty on disk) and, resent by the client
 *                  as a client would on the verifier change, are on disk
 *                  after COMMIT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define LOSS_LEN (1u * WB_MIB)
#define LOSS_CHUNK (256u * WB_KIB)
#define KILL_LEN (64u * WB_KIB)

static struct wb_conn px, dx;

/* Open a proxy connection as root. */
static int init_proxy(void)
{
	return wb_open(&px, "proxy", 0, 0);
}

/* Open a proxy and a direct connection as root. */
static int init_both(void)
{
	return init_proxy() < 0 || wb_open(&dx, "direct", 0, 0) < 0 ? -1 : 0;
}

/* Close the connections. */
static int clean(void)
{
	wb_close(&px);
	wb_close(&dx);
	return 0;
}

/* Run "$NFSC_UPSTREAMCTL verb"; true on exit status 0. */
static bool upstreamctl(const char *verb)
{
	const char *ctl = wb_env("NFSC_UPSTREAMCTL");
	char cmd[4200];
	uint64_t t0 = wb_now_ms();
	int rc;

	if (!ctl)
		return false;
	snprintf(cmd, sizeof(cmd), "'%s' %s", ctl, verb);
	rc = system(cmd);
	fprintf(stderr, "wbtest: upstream %s: status %d in %llu ms\n", verb, rc,
		(unsigned long long)(wb_now_ms() - t0));
	return rc == 0;
}

/* Ganesha's current write verifier, from an UNSTABLE WRITE of one byte to
 * a scratch file of its own. */
static int ganesha_verf(uint8_t *verf)
{
	static const uint8_t one = 1;
	struct wb_wres r;
	struct wb_fh fh;
	int st;

	st = wb_create(&dx, &dx.root, "wb-ganesha-verf", UNCHECKED, 0644, -1,
		       &fh, NULL);
	if (st != NFS3_OK)
		return st;
	st = wb_write(&dx, &fh, 0, &one, 1, UNSTABLE, &r);
	memcpy(verf, r.verf, NFS3_WRITEVERFSIZE);
	return st;
}

/* Check name holds want[0..len) directly from Ganesha and on disk. */
static void check_direct(const char *name, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len);
	struct wb_fh fh;
	fattr3 at;
	size_t d;

	if (!got)
		return;
	WB_STAT(wb_lookup(&dx, &dx.root, name, &fh, &at), NFS3_OK);
	WB_EQ(at.size, len);
	WB_EQ(wb_read_all(&dx, &fh, got, len), len);
	d = wb_first_diff(got, want, len);
	WB_CHECK(d == len, "%s read directly differs from the client's bytes "
		 "at offset %zu", name, d);
	memset(got, 0, len);
	WB_EQ(wb_disk_read(name, 0, got, len), len);
	d = wb_first_diff(got, want, len);
	WB_CHECK(d == len, "%s on disk differs from the client's bytes at "
		 "offset %zu", name, d);
	free(got);
}

/* The upstream loses written-but-uncommitted bytes and restarts between
 * the proxy's WRITE and its COMMIT: the proxy writes them again. */
static void test_upstream_loss(void)
{
	uint8_t *data = malloc(LOSS_LEN), *junk = malloc(LOSS_LEN);
	uint8_t verf[NFS3_WRITEVERFSIZE], wv[NFS3_WRITEVERFSIZE];
	uint8_t cverf[NFS3_WRITEVERFSIZE];
	uint8_t gv0[NFS3_WRITEVERFSIZE], gv1[NFS3_WRITEVERFSIZE];
	char h1[17], h2[17];
	struct wb_snap s0, s1, s2;
	struct wb_wres r;
	struct wb_fh fh;
	uint32_t xid;
	double unstable, nw;
	uint32_t wsize = wb_wsize(WB_MIB);
	char name[64];
	int st;

	WB_CHECK(wsize >= 4096, "write-back's wsize from the metrics");
	if (!data || !junk || wsize < 4096)
		goto out;
	/* Upstream WRITEs per writing of the 1 MiB: write-back's size cuts
	 * it (writeback_wsize, 256 KiB by default). */
	nw = (double)((LOSS_LEN + wsize - 1) / wsize);
	wb_pattern(data, LOSS_LEN, 0, 31337);
	memset(junk, 0xEE, LOSS_LEN);
	wb_unique_name(name, sizeof(name), "wb-loss");
	WB_STAT(wb_create(&px, &px.root, name, UNCHECKED, 0644, 0, &fh, NULL),
		NFS3_OK);
	for (uint32_t off = 0; off < LOSS_LEN; off += LOSS_CHUNK) {
		WB_STAT(wb_write(&px, &fh, off, data + off, LOSS_CHUNK,
				 UNSTABLE, &r), NFS3_OK);
		WB_EQ(r.committed, UNSTABLE);
		if (off == 0)
			memcpy(wv, r.verf, sizeof(wv));
		WB_CHECK(memcmp(wv, r.verf, sizeof(wv)) == 0,
			 "one WRITE verifier for every WRITE");
	}
	WB_CHECK(wb_snap_take(&s0) == 0, "metrics");
	WB_EQ(wb_snap_get(&s0, WB_M_DIRTY), LOSS_LEN);

	/* The client's COMMIT starts the write-back; its reply waits. */
	xid = wb_commit_send(&px, &fh);
	WB_CHECK(xid != 0, "COMMIT sent");
	/* Written upstream (UNSTABLE there), not yet committed. */
	unstable = wb_wait_metric(WB_M_UNSTABLE, LOSS_LEN, 10000);
	WB_EQ(unstable, LOSS_LEN);
	WB_CHECK(wb_snap_take(&s1) == 0, "metrics");
	wb_snap_print("upstream_loss after the proxy's WRITE", &s0, &s1);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_WRITE), nw);
	WB_EQ(wb_snap_delta(&s0, &s1, WB_M_UP_COMMIT), 0);
	memset(junk, 0, 16);
	WB_EQ(wb_disk_read(name, 0, junk, 16), 16);
	WB_CHECK(memcmp(junk, data, 16) == 0, "Ganesha got the proxy's WRITE");
	memset(junk, 0xEE, LOSS_LEN);

	/* Lose the unstable bytes for real, and restart: new verifier. */
	WB_STAT(ganesha_verf(gv0), NFS3_OK);
	WB_CHECK(upstreamctl("stop"), "Ganesha stopped");
	WB_CHECK(wb_disk_write(name, 0, junk, LOSS_LEN) == 0,
		 "overwrite the bytes on disk behind Ganesha's back");
	/* Ganesha's write verifier is its start time in whole seconds: a
	 * restart within the same second would keep it. */
	wb_sleep_ms(1100);
	WB_CHECK(upstreamctl("start"), "Ganesha started");
	WB_EQ(wb_metric(WB_M_UP_COMMIT) - wb_snap_get(&s0, WB_M_UP_COMMIT), 0);
	/* End the proxy's commit delay: its COMMIT finds the new verifier
	 * and it writes the bytes again (WRITE sent, then UNSTABLE once
	 * answered); end the delay of that second write too. */
	WB_CHECK(tclock_advance(600) == 0, "advance the proxy's clock");
	WB_EQ(wb_wait_metric(WB_M_WB_WRITES,
			     wb_snap_get(&s0, WB_M_WB_WRITES) + 2 * nw, 60000),
	      wb_snap_get(&s0, WB_M_WB_WRITES) + 2 * nw);
	WB_EQ(wb_wait_metric(WB_M_UNSTABLE, LOSS_LEN, 60000), LOSS_LEN);
	WB_CHECK(tclock_advance(600) == 0, "advance the proxy's clock");
	WB_CHECK(wb_reopen(&dx) == 0, "reconnect to Ganesha");
	WB_STAT(ganesha_verf(gv1), NFS3_OK);
	wb_verf_hex(gv0, h1);
	wb_verf_hex(gv1, h2);
	fprintf(stderr, "wbtest: Ganesha's write verifier before the restart "
		"%s, after %s\n", h1, h2);
	WB_CHECK(memcmp(gv0, gv1, sizeof(gv0)) != 0, "precondition: Ganesha's "
		 "write verifier changed across its restart (%s vs %s)", h1, h2);

	st = wb_commit_recv(&px, xid, cverf, 120000);
	WB_STAT(st, NFS3_OK);
	wb_verf_hex(wv, h1);
	wb_verf_hex(cverf, h2);
	fprintf(stderr, "wbtest: WRITE verifier %s, COMMIT verifier %s\n", h1,
		h2);
	WB_CHECK(memcmp(cverf, wv, sizeof(wv)) == 0, "the COMMIT verifier "
		 "(%s) equals the WRITE verifier (%s): the proxy did not "
		 "restart", h2, h1);
	WB_CHECK(wb_snap_take(&s2) == 0, "metrics");
	wb_snap_print("upstream_loss after the client's COMMIT", &s0, &s2);
	WB_EQ(wb_snap_delta(&s0, &s2, WB_M_RESENT), LOSS_LEN);
	WB_EQ(wb_snap_delta(&s0, &s2, WB_M_UP_WRITE), 2 * nw);
	WB_EQ(wb_snap_delta(&s0, &s2, WB_M_UP_COMMIT), 2);
	WB_EQ(wb_snap_delta(&s0, &s2, WB_M_WB_BYTES), 2 * LOSS_LEN);
	WB_EQ(wb_snap_get(&s2, WB_M_UNSTABLE), 0);
	WB_EQ(wb_snap_get(&s2, WB_M_DIRTY), 0);
	check_direct(name, data, LOSS_LEN);

	/* Still the same proxy: the same verifier on a new WRITE. */
	WB_STAT(wb_write(&px, &fh, 0, data, 4096, UNSTABLE, &r), NFS3_OK);
	WB_CHECK(memcmp(r.verf, wv, sizeof(wv)) == 0,
		 "a later WRITE has the same verifier");
	xid = wb_commit_send(&px, &fh);
	WB_CHECK(xid != 0, "COMMIT sent");
	WB_EQ(wb_wait_metric(WB_M_UNSTABLE, 4096, 60000), 4096);
	WB_CHECK(tclock_advance(600) == 0, "advance the proxy's clock");
	WB_STAT(wb_commit_recv(&px, xid, verf, 120000), NFS3_OK);
	WB_CHECK(memcmp(verf, wv, sizeof(wv)) == 0,
		 "a later COMMIT has the same verifier");
	wb_snap_free(&s0);
	wb_snap_free(&s1);
	wb_snap_free(&s2);
out:
	free(data);
	free(junk);
}

/* Before SIGKILL: absorb 64 KiB, save what kill_after needs. */
static void test_kill_before(void)
{
	uint8_t data[KILL_LEN];
	char hv[17], name[64];
	struct wb_wres r;
	struct wb_fh fh;

	wb_pattern(data, sizeof(data), 0, 99);
	wb_unique_name(name, sizeof(name), "wb-kill");
	WB_STAT(wb_create(&px, &px.root, name, UNCHECKED, 0644, 0, &fh, NULL),
		NFS3_OK);
	WB_STAT(wb_write(&px, &fh, 0, data, KILL_LEN, UNSTABLE, &r), NFS3_OK);
	WB_EQ(r.committed, UNSTABLE);
	WB_EQ(wb_metric(WB_M_DIRTY), KILL_LEN);
	WB_EQ(wb_metric(WB_M_UP_WRITE), 0);
	wb_verf_hex(r.verf, hv);
	if (wb_state_save("wb-kill", name, hv, &fh) != 0)
		return;
	fprintf(stderr, "wbtest: before the kill: WRITE verifier %s\n", hv);
}

/* After SIGKILL and a restart: the handle works, the verifier changed. */
static void test_kill_after(void)
{
	uint8_t data[KILL_LEN], got[KILL_LEN];
	uint8_t cverf[NFS3_WRITEVERFSIZE];
	char name[64], hv_before[17], hv_after[17];
	struct wb_wres r;
	struct wb_fh fh;
	uint32_t count;
	bool eof;
	fattr3 at;

	WB_CHECK(wb_state_load("wb-kill", name, hv_before, &fh) == 0,
		 "read the state kill_before saved");
	if (!fh.len)
		return;
	wb_pattern(data, sizeof(data), 0, 99);
	/* SIGKILL lost the absorbed bytes: Ganesha never saw them. */
	WB_EQ(wb_disk_size(name), 0);
	WB_STAT(wb_getattr(&px, &fh, &at), NFS3_OK);
	WB_EQ(at.type, NF3REG);
	/* The client sees a new verifier and resends what it had not
	 * committed. */
	WB_STAT(wb_write(&px, &fh, 0, data, KILL_LEN, UNSTABLE, &r), NFS3_OK);
	wb_verf_hex(r.verf, hv_after);
	fprintf(stderr, "wbtest: WRITE verifier before the kill %s, after the "
		"restart %s\n", hv_before, hv_after);
	WB_CHECK(strcmp(hv_before, hv_after) != 0, "the WRITE verifier changed "
		 "across SIGKILL and restart (%s vs %s)", hv_before, hv_after);
	WB_STAT(wb_commit(&px, &fh, cverf, 120000), NFS3_OK);
	WB_CHECK(memcmp(cverf, r.verf, sizeof(cverf)) == 0,
		 "the COMMIT verifier is the new WRITE verifier");
	WB_STAT(wb_read(&px, &fh, 0, KILL_LEN, got, &count, &eof), NFS3_OK);
	WB_EQ(count, KILL_LEN);
	WB_CHECK(memcmp(got, data, KILL_LEN) == 0,
		 "READ through the old handle returns the resent bytes");
	WB_EQ(wb_disk_size(name), KILL_LEN);
	memset(got, 0, sizeof(got));
	WB_EQ(wb_disk_read(name, 0, got, KILL_LEN), KILL_LEN);
	WB_CHECK(memcmp(got, data, KILL_LEN) == 0,
		 "the resent bytes are on disk after COMMIT");
}

int test_register(void)
{
	CU_pSuite s;

	s = CU_add_suite("upstream_loss", init_both, clean);
	if (!s || !CU_add_test(s, "resend_after_verifier_change",
			       test_upstream_loss))
		return -1;
	s = CU_add_suite("kill_before", init_proxy, clean);
	if (!s || !CU_add_test(s, "absorb_and_save", test_kill_before))
		return -1;
	s = CU_add_suite("kill_after", init_proxy, clean);
	if (!s || !CU_add_test(s, "new_verifier_same_handle", test_kill_after))
		return -1;
	return 0;
}
