/* SPDX-License-Identifier: MIT */
/*
 * test_restart: the upstream Ganesha restarts (twice) under a client that
 * keeps reading and writing through the proxy.
 *
 * The client writes 4 KiB blocks, each at its own offset with its own
 * bytes, FILE_SYNC, and reads back earlier blocks, with raw calls so that
 * NFS3ERR_JUKEBOX is seen as a status. A call that fails with JUKEBOX, an
 * RPC error or a timeout is retried every 100 ms for at most 60 s. A child
 * process runs `$NFSC_UPSTREAMCTL restart` twice meanwhile (or, with
 * NFSC_RESTART_DOWN_MS, stops it for that long twice). Every FILE_SYNC
 * write the proxy acknowledged is recorded. At the end:
 *   - the proxy (NFSC_PROXY_PID) is the same, still running process and
 *     served at least 100 writes after the last restart;
 *   - reads through the proxy never returned wrong bytes;
 *   - every acknowledged block is in the file read directly from Ganesha
 *     and in the file on disk under NFSC_EXPORT_DIR;
 *   - the proxy counted (nfscached_nfs3_jukebox_replies_total) at least
 *     the JUKEBOX replies this client received, exactly as many when no
 *     call timed out (this client is the proxy's only one); with
 *     NFSC_RESTART_DOWN_MS above the proxy's upstream_timeout, the client
 *     did receive some.
 * Blocks never overlap and no block is written twice with other bytes, so a
 * late retransmission cannot hide a lost write.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "nfsclient.h"
#include "cachetest_util.h"

enum {
	BLK = 4096,
	MAX_BLOCKS = 20000,
	RETRY_MS = 100,
	RETRY_BOUND_MS = 60000,
	CALL_TIMEOUT_MS = 15000,
	AFTER_RESTARTS = 100,	/* writes to do after the last restart */
	RUN_BOUND_MS = 240000,
};

/* Outcomes of the retrying calls besides an nfsstat3 or nfsc_rc. */
enum { WRONG_DATA = -100, SHORT_ACK = -101 };

/* What the calls through the proxy met. */
struct tally {
	unsigned ok;
	unsigned jukebox;
	unsigned rpc_errors;
	unsigned timeouts;
	unsigned broken;
	unsigned retried_ops;
	unsigned read_mismatch;
};

static const char *proxy_url;
static struct nfsc *pc;		/* the client through the proxy */
static nfs_fh3 file_fh;		/* the test file, handle from the proxy */
static char file_name[64];
static unsigned char acked[MAX_BLOCKS];
static struct tally tally;
static int same_server;

/* Fill buf with block i's bytes. */
static void block_bytes(unsigned char *buf, unsigned i)
{
	unsigned k;

	for (k = 0; k < BLK; k++) {
		uint32_t x = (i * 2654435761u) ^ (k * 40503u) ^ (k >> 3);

		buf[k] = (unsigned char)(x ^ x >> 13 ^ x >> 24);
	}
}

/* Sleep ms milliseconds. */
static void sleep_ms(unsigned ms)
{
	usleep(ms * 1000u);
}

/* NFSC_RESTART_DOWN_MS, or 0 when unset. */
static unsigned down_ms_env(void)
{
	const char *v = getenv("NFSC_RESTART_DOWN_MS");

	return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

/* Make sure there is a client; returns 0 when there is one. */
static int ensure_client(void)
{
	if (pc)
		return 0;
	pc = nfsc_connect(proxy_url, 0, 0);
	return pc ? 0 : -1;
}

/* Count st; returns 1 if the call should be retried. */
static int note(int st)
{
	switch (st) {
	case NFS3ERR_JUKEBOX:
		tally.jukebox++;
		return 1;
	case NFSC_ERR_RPC:
	case NFSC_ERR_SEND:
		tally.rpc_errors++;
		return 1;
	case NFSC_ERR_TIMEOUT:
		tally.timeouts++;
		return 1;
	case NFSC_ERR_CONN:
		tally.broken++;
		nfsc_close(&pc);
		return 1;
	default:
		tally.ok++;
		return 0;
	}
}

/*
 * Write block i FILE_SYNC through the proxy, retrying as the brief allows.
 * Returns the final status; NFS3_OK only if the reply acknowledged all
 * bytes as FILE_SYNC.
 */
static int write_block(unsigned i, const unsigned char *buf)
{
	uint64_t deadline = nfsc_now_ms() + RETRY_BOUND_MS;
	int st, tries = 0;

	for (;;) {
		if (ensure_client() == 0) {
			WRITE3args a = { .file = file_fh,
					 .offset = (uint64_t)i * BLK,
					 .count = BLK, .stable = FILE_SYNC };
			WRITE3res r;

			a.data.data_len = BLK;
			a.data.data_val = nfsc_mut((const char *)buf);
			st = nfsc_call(pc, NFS3_WRITE, &a, &r, CALL_TIMEOUT_MS);
			if (!note(st)) {
				const WRITE3resok *ok = &r.WRITE3res_u.resok;

				if (tries)
					tally.retried_ops++;
				if (st == NFS3_OK &&
				    (ok->count != BLK ||
				     ok->committed != FILE_SYNC)) {
					CHECK_MSG(0, "WRITE block %u: count %u "
						  "committed %d", i, ok->count,
						  ok->committed);
					return SHORT_ACK;
				}
				return st;
			}
		}
		tries++;
		if (nfsc_now_ms() >= deadline)
			return NFSC_ERR_TIMEOUT;
		sleep_ms(RETRY_MS);
	}
}

/* Read block i through the proxy with retries; compare with want. */
static int read_block(unsigned i, const unsigned char *want)
{
	uint64_t deadline = nfsc_now_ms() + RETRY_BOUND_MS;
	unsigned char buf[BLK];
	int st, tries = 0;

	for (;;) {
		if (ensure_client() == 0) {
			READ3args a = { .file = file_fh,
					.offset = (uint64_t)i * BLK,
					.count = BLK };
			READ3res r;

			st = nfsc_call(pc, NFS3_READ, &a, &r, CALL_TIMEOUT_MS);
			if (!note(st)) {
				const READ3resok *ok = &r.READ3res_u.resok;
				int good = st == NFS3_OK &&
					   ok->data.data_len == BLK;

				if (good)
					memcpy(buf, ok->data.data_val, BLK);
				nfsc_res_free(NFS3_READ, &r);
				if (tries)
					tally.retried_ops++;
				if (good && memcmp(buf, want, BLK) != 0) {
					tally.read_mismatch++;
					return WRONG_DATA;
				}
				return good ? NFS3_OK : st;
			}
		}
		tries++;
		if (nfsc_now_ms() >= deadline)
			return NFSC_ERR_TIMEOUT;
		sleep_ms(RETRY_MS);
	}
}

/*
 * Fork a child that restarts the upstream twice; returns its pid. With
 * NFSC_RESTART_DOWN_MS set, each restart is a stop, that many milliseconds
 * with no upstream, and a start.
 */
static pid_t start_restarter(void)
{
	const char *ctl = getenv("NFSC_UPSTREAMCTL");
	char restart[1024], stop[1024], start[1024];
	unsigned down_ms = down_ms_env();
	pid_t pid;
	int k;

	if (!ctl)
		return -1;
	snprintf(restart, sizeof(restart), "'%s' restart", ctl);
	snprintf(stop, sizeof(stop), "'%s' stop", ctl);
	snprintf(start, sizeof(start), "'%s' start", ctl);
	pid = fork();
	if (pid != 0)
		return pid;
	sleep_ms(700);
	for (k = 1; k <= 2; k++) {
		if (down_ms == 0) {
			if (system(restart) != 0)
				_exit(k);
		} else {
			if (system(stop) != 0)
				_exit(k);
			sleep_ms(down_ms);
			if (system(start) != 0)
				_exit(k);
		}
		if (k == 1)
			sleep_ms(2000);
	}
	_exit(0);
}

/* Create the test file through the proxy. */
static int make_file(void)
{
	int st;

	snprintf(file_name, sizeof(file_name), "restart-%ld", (long)getpid());
	st = nfsc_create(pc, nfsc_root(pc), file_name, 0644, &file_fh, NULL);
	CHECK_MSG(st == NFS3_OK, "CREATE %s through the proxy: %s", file_name,
		  nfsc_stat_name(st));
	return st == NFS3_OK ? 0 : -1;
}

/* True unless the proxy process is known to be gone. */
static int proxy_alive(void)
{
	const char *pid = getenv("NFSC_PROXY_PID");

	return same_server || !pid || kill((pid_t)atol(pid), 0) == 0;
}

/* Run the write/read loop while the child restarts the upstream. */
static unsigned run_load(pid_t child, int *child_status)
{
	unsigned char buf[BLK];
	uint64_t t0 = nfsc_now_ms();
	unsigned i, after = 0, fails = 0;
	int done = 0;

	for (i = 0; i < MAX_BLOCKS; i++) {
		int st;

		block_bytes(buf, i);
		st = write_block(i, buf);
		if (st == NFS3_OK) {
			acked[i] = 1;
			if (done)
				after++;
		} else if (fails++ < 10) {
			fprintf(stderr, "WRITE block %u: %s (%s)\n", i,
				nfsc_stat_name(st), pc ? nfsc_error(pc) : "");
		}
		if (i > 0 && acked[(i * 7) % i]) {
			block_bytes(buf, (i * 7) % i);
			st = read_block((i * 7) % i, buf);
			CHECK_MSG(st == NFS3_OK, "READ block %u: %s",
				  (i * 7) % i, st == WRONG_DATA
						       ? "wrong data"
						       : nfsc_stat_name(st));
		}
		if (!done && waitpid(child, child_status, WNOHANG) == child)
			done = 1;
		if (done && after >= AFTER_RESTARTS)
			break;
		if (nfsc_now_ms() - t0 > RUN_BOUND_MS || !proxy_alive())
			break;
		sleep_ms(2);
	}
	if (!done)
		waitpid(child, child_status, 0);
	return after;
}

/* Check every acknowledged block in the file read directly from Ganesha. */
static void verify_direct(unsigned nblocks)
{
	const char *url = getenv("NFSC_DIRECT_URL");
	struct nfsc *dc = url ? nfsc_connect(url, 0, 0) : NULL;
	unsigned char want[BLK], got[BLK];
	unsigned i, bad = 0, checked = 0;
	nfs_fh3 fh;
	int st;

	CHECK_MSG(dc != NULL, "connect directly to %s", url ? url : "(unset)");
	if (!dc)
		return;
	st = nfsc_lookup(dc, nfsc_root(dc), file_name, &fh, NULL);
	CHECK_MSG(st == NFS3_OK, "LOOKUP %s directly: %s", file_name,
		  nfsc_stat_name(st));
	for (i = 0; st == NFS3_OK && i < nblocks; i++) {
		uint32_t count = 0;
		int rs;

		if (!acked[i])
			continue;
		checked++;
		block_bytes(want, i);
		rs = nfsc_read(dc, &fh, (uint64_t)i * BLK, BLK, got, &count,
			       NULL);
		if ((rs != NFS3_OK || count != BLK ||
		     memcmp(got, want, BLK) != 0) && bad++ < 5)
			fprintf(stderr, "direct READ of acknowledged block %u: "
				"%s, count %u%s\n", i, nfsc_stat_name(rs),
				count, rs == NFS3_OK && count == BLK
					       ? ", wrong data" : "");
	}
	CHECK_MSG(bad == 0, "%u of %u acknowledged blocks missing or wrong "
		  "when read directly", bad, checked);
	if (st == NFS3_OK)
		nfsc_fh_free(&fh);
	nfsc_close(&dc);
}

/* Check every acknowledged block in the file on disk. */
static void verify_disk(unsigned nblocks)
{
	const char *root = getenv("NFSC_EXPORT_DIR");
	unsigned char want[BLK], got[BLK];
	unsigned i, bad = 0, checked = 0;
	char path[512];
	int fd;

	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/%s", root, file_name);
	fd = open(path, O_RDONLY);
	CHECK_MSG(fd >= 0, "open %s", path);
	if (fd < 0)
		return;
	for (i = 0; i < nblocks; i++) {
		if (!acked[i])
			continue;
		checked++;
		block_bytes(want, i);
		if ((pread(fd, got, BLK, (off_t)i * BLK) != BLK ||
		     memcmp(got, want, BLK) != 0) && bad++ < 5)
			fprintf(stderr, "%s: acknowledged block %u missing or "
				"wrong on disk\n", path, i);
	}
	close(fd);
	CHECK_MSG(bad == 0, "%u of %u acknowledged blocks missing or wrong on "
		  "disk", bad, checked);
}

/*
 * The proxy's count of NFS3ERR_JUKEBOX replies against this client's: a
 * reply to a call the client had given up on (a timeout) is counted by the
 * proxy only, so the two are equal when there was no timeout.
 */
static void check_jukebox_metric(void)
{
	uint64_t m = ct_metric_now("nfscached_nfs3_jukebox_replies_total");

	if (down_ms_env() > 0)
		CHECK_MSG(tally.jukebox > 0, "the upstream was down for %u ms "
			  "twice and no call got NFS3ERR_JUKEBOX", down_ms_env());

	printf("  restart: the proxy counted %llu JUKEBOX replies, the client "
	       "saw %u\n", (unsigned long long)m, tally.jukebox);
	CHECK_MSG(m != CT_ABSENT, "no nfscached_nfs3_jukebox_replies_total "
		  "in the proxy's /metrics");
	if (m == CT_ABSENT)
		return;
	if (tally.timeouts == 0)
		CHECK_MSG(m == tally.jukebox, "the proxy counted %llu JUKEBOX "
			  "replies, the client saw %u", (unsigned long long)m,
			  tally.jukebox);
	else
		CHECK_MSG(m >= tally.jukebox, "the proxy counted %llu JUKEBOX "
			  "replies, the client saw %u", (unsigned long long)m,
			  tally.jukebox);
}

/* Reads and FILE_SYNC writes through the proxy across two restarts. */
static void test_upstream_restart(void)
{
	const char *pid_env = getenv("NFSC_PROXY_PID");
	unsigned after, nacked = 0, i;
	int child_status = -1;
	pid_t child;

	if (ensure_client() != 0 || make_file() != 0) {
		CHECK_MSG(0, "no client through the proxy");
		return;
	}
	child = start_restarter();
	CHECK_MSG(child > 0, "NFSC_UPSTREAMCTL unset or fork failed");
	if (child <= 0)
		return;
	after = run_load(child, &child_status);
	for (i = 0; i < MAX_BLOCKS; i++)
		nacked += acked[i];
	printf("\n  restart: %u blocks acknowledged, %u after the restarts; "
	       "replies %u, JUKEBOX %u, RPC errors %u, timeouts %u, broken "
	       "connections %u, operations retried %u\n", nacked, after,
	       tally.ok, tally.jukebox, tally.rpc_errors, tally.timeouts,
	       tally.broken, tally.retried_ops);
	CHECK_MSG(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
		  "upstream restarts failed (child status 0x%x)", child_status);
	CHECK_MSG(after >= AFTER_RESTARTS, "only %u writes acknowledged after "
		  "the restarts", after);
	CHECK_EQ(tally.read_mismatch, 0);
	if (!same_server) {
		CHECK_MSG(pid_env && kill((pid_t)atol(pid_env), 0) == 0,
			  "the proxy (pid %s) is gone",
			  pid_env ? pid_env : "?");
		/* An unavailable upstream is JUKEBOX, not a drop
		 * (docs/design.md "Tiers and durability"). */
		CHECK_MSG(tally.broken == 0, "the proxy closed the client's "
			  "connection %u times", tally.broken);
		check_jukebox_metric();
	}
	CHECK_MSG(ensure_client() == 0 && nfsc_null(pc) == 0,
		  "NULL through the proxy after the restarts");
	verify_direct(MAX_BLOCKS);
	verify_disk(MAX_BLOCKS);
}

/* Read the URLs; the client connects in the test. */
static int suite_init(void)
{
	const char *direct = getenv("NFSC_DIRECT_URL");

	proxy_url = getenv("NFSC_PROXY_URL");
	if (!proxy_url || !direct) {
		fprintf(stderr, "test_restart: NFSC_PROXY_URL and "
			"NFSC_DIRECT_URL must be set\n");
		return -1;
	}
	same_server = strcmp(proxy_url, direct) == 0;
	if (same_server)
		printf("\n  NOTE: proxy URL is the direct URL: proxy-only "
		       "checks skipped\n");
	return 0;
}

/* Release the handle and the client. */
static int suite_cleanup(void)
{
	nfsc_fh_free(&file_fh);
	nfsc_close(&pc);
	return 0;
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_restart");
	s = CU_add_suite("restart", suite_init, suite_cleanup);
	if (!s || !CU_add_test(s, "upstream_restart", test_upstream_restart))
		return -1;
	return 0;
}
