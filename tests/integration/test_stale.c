/* SPDX-License-Identifier: MIT */
/*
 * test_stale: a stalled upstream (Ganesha stopped with SIGSTOP: it keeps
 * its sockets but answers nothing) with stale_on_error = 60 (issue 21).
 *
 * Before the stop, through the proxy: a 1 MiB file is written, committed
 * and read (its pages and attributes are cached), a second file made on
 * disk is looked up but never read, and FSINFO, FSSTAT and PATHCONF of
 * the root are asked (their answers are remembered). After SIGSTOP (the
 * test waits until every Ganesha thread is stopped: kill() returns before)
 * and once the cached attributes have expired (acregmax = 60 s, the test
 * clock moved 61 s):
 *   - a READ of the cached file is answered NFS3_OK with the right bytes
 *     within 5 s (the liveness probe finds the stall in about 3 s, not
 *     upstream_timeout = 30 s), counted in
 *     nfscached_stale_answers_total{procedure="read"} and
 *     nfscached_upstream_stalls_total;
 *   - a new MOUNT and FSINFO, FSSTAT, PATHCONF and GETATTR of the root on
 *     a new connection work, FSINFO with the same wtmax as before;
 *   - a READ of the uncached file gets NFS3ERR_JUKEBOX;
 *   - 121 s later (clock moved again), past stale_on_error, a READ of
 *     the cached file gets NFS3ERR_JUKEBOX too.
 * Then SIGCONT (also at exit, so the harness can stop Ganesha) and the
 * upstream comes back: the proxy reconnects and a READ of the uncached
 * file works.
 *
 * Runs under harness.sh through cachetest_proxy.sh with --conf
 * stale_on_error.conf, --export-conf stale_ac60.conf and
 * NFSCACHED_TEST_CLOCK=1.
 *
 * distant_upstream: through ratest_proxy.sh with a relay adding 1.2 s
 * each way, a LOOKUP and a 1 MiB READ (each upstream call 2.4 s, longer
 * than a near server's 2 s probe timeout) succeed with the right bytes,
 * and no stall or disconnect is counted: the probe's times scale with the
 * link's latency, so a slow upstream keeps upstream_timeout.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "httpget.h"
#include "wbtest_util.h"

#define SIZE (1u * WB_MIB)
#define ANSWER_MS 5000		/* issue 21: within 5 s */

static pid_t ganesha;
static bool stopped;

/* Let Ganesha run again (at exit too). */
static void cont(void)
{
	if (stopped && ganesha > 0)
		kill(ganesha, SIGCONT);
	stopped = false;
}

/* Ganesha's pid from the harness's pidfile, or -1. */
static pid_t ganesha_pid(void)
{
	char path[4096];
	long pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ganesha/ganesha.pid",
		 getenv("NFSC_TMP") ? getenv("NFSC_TMP") : ".");
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &pid) != 1)
		pid = -1;
	if (f)
		fclose(f);
	return (pid_t)pid;
}

/*
 * Whether every thread of pid is in the stopped state ('T' in the third
 * field of /proc/PID/task/TID/stat, proc(5)). kill(SIGSTOP) returns once
 * the signal is queued: until the thread chosen to take it runs, the
 * process's other threads keep serving (on a loaded machine, long enough
 * to answer a call sent after kill() returned).
 */
static bool all_threads_stopped(pid_t pid)
{
	char path[320], line[512];
	struct dirent *e;
	bool all = true;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (all && (e = readdir(dir)) != NULL) {
		char *rp;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%s/stat", (long)pid,
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* the thread ended */
		rp = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		all = rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
		n++;
		fclose(f);
	}
	closedir(dir);
	return all && n > 0;
}

/* SIGSTOP pid and wait (up to 60 s) until all its threads have stopped. */
static bool stop_process(pid_t pid)
{
	uint64_t t0 = wb_now_ms();

	if (kill(pid, SIGSTOP) != 0)
		return false;
	while (!all_threads_stopped(pid)) {
		if (wb_now_ms() - t0 > 60000)
			return false;
		usleep(1000);	/* polling a state, not timing the test */
	}
	return true;
}

/* READ the whole file fh into buf with timeout; the status, *ms the time. */
static int timed_read(struct wb_conn *c, const struct wb_fh *fh, uint8_t *buf,
		      uint64_t *ms)
{
	uint32_t count = 0;
	bool eof;
	uint64_t t0 = wb_now_ms();
	int st = wb_read(c, fh, 0, SIZE, buf, &count, &eof);

	*ms = wb_now_ms() - t0;
	if (st == NFS3_OK && count != SIZE)
		return WB_ERR_PROTO;
	return st;
}

/* The root's FSSTAT and PATHCONF over c: both statuses NFS3_OK? */
static bool fsstat_pathconf_ok(struct wb_conn *c)
{
	FSSTAT3args fa = { { { c->root.len, (char *)c->root.data } } };
	PATHCONF3args pa = { { { c->root.len, (char *)c->root.data } } };
	FSSTAT3res fr;
	PATHCONF3res pr;
	int a, b;

	memset(&fr, 0, sizeof(fr));
	memset(&pr, 0, sizeof(pr));

	a = wb_call(c, NFSPROC3_FSSTAT, (xdrproc_t)xdr_FSSTAT3args, &fa,
		    (xdrproc_t)xdr_FSSTAT3res, &fr, WB_TIMEOUT_MS);
	xdr_free((xdrproc_t)xdr_FSSTAT3res, (char *)&fr);
	b = wb_call(c, NFSPROC3_PATHCONF, (xdrproc_t)xdr_PATHCONF3args, &pa,
		    (xdrproc_t)xdr_PATHCONF3res, &pr, WB_TIMEOUT_MS);
	xdr_free((xdrproc_t)xdr_PATHCONF3res, (char *)&pr);
	WB_STAT(a, NFS3_OK);
	WB_STAT(b, NFS3_OK);
	return a == NFS3_OK && b == NFS3_OK;
}

/* Make $NFSC_EXPORT_DIR/name holding data[0..SIZE) behind NFS's back. */
static int disk_create(const char *name, const uint8_t *data)
{
	char path[4096];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	rc = fwrite(data, 1, SIZE, f) == SIZE ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

/* The file's name, handle and pattern in the cache before the stop. */
static int setup(struct wb_conn *c, struct wb_fh *cached, struct wb_fh *cold,
		 uint8_t *want, uint32_t *wtmax)
{
	char name[64], cold_name[64];
	uint8_t *got = malloc(SIZE), v[NFS3_WRITEVERFSIZE];
	uint64_t ms;
	int st;

	wb_unique_name(name, sizeof(name), "stale");
	wb_unique_name(cold_name, sizeof(cold_name), "cold");
	wb_pattern(want, SIZE, 0, 42);
	if (!got || disk_create(cold_name, want) != 0 ||
	    wb_create(c, &c->root, name, UNCHECKED, 0666, 0, cached, NULL) !=
		    NFS3_OK ||
	    wb_write(c, cached, 0, want, SIZE, UNSTABLE, NULL) != NFS3_OK ||
	    wb_commit(c, cached, v, WB_TIMEOUT_MS) != NFS3_OK ||
	    wb_lookup(c, &c->root, cold_name, cold, NULL) != NFS3_OK) {
		free(got);
		return -1;
	}
	st = timed_read(c, cached, got, &ms);
	WB_STAT(st, NFS3_OK);
	WB_STAT(wb_fsinfo(c, &c->root, wtmax), NFS3_OK);
	fsstat_pathconf_ok(c);
	st = st == NFS3_OK && memcmp(got, want, SIZE) == 0 ? 0 : -1;
	free(got);
	return st;
}

/* With the upstream stopped: cached READ, new mount, uncached READ. */
static void during_outage(const struct wb_fh *cached, const struct wb_fh *cold,
			  const uint8_t *want, uint32_t wtmax)
{
	struct wb_conn c, m;
	uint8_t *got = calloc(1, SIZE);
	uint32_t wt = 0;
	fattr3 at;
	uint64_t ms;
	int st;

	WB_CHECK(got && wb_open(&c, "proxy", 0, 0) == 0, "connect");
	st = timed_read(&c, cached, got, &ms);
	fprintf(stderr, "wbtest: cached READ with the upstream stopped: %s "
		"in %llu ms\n", wb_stat_name(st), (unsigned long long)ms);
	WB_STAT(st, NFS3_OK);
	WB_CHECK(ms <= ANSWER_MS, "answered in %llu ms, want <= %u",
		 (unsigned long long)ms, ANSWER_MS);
	WB_EQ(wb_first_diff(got, want, SIZE), SIZE);
	/* A client mounting now: MNT, FSINFO, FSSTAT, PATHCONF, GETATTR. */
	WB_CHECK(wb_open(&m, "proxy", 0, 0) == 0, "MOUNT during the outage");
	WB_STAT(wb_fsinfo(&m, &m.root, &wt), NFS3_OK);
	WB_EQ(wt, wtmax);
	fsstat_pathconf_ok(&m);
	WB_STAT(wb_getattr(&m, &m.root, &at), NFS3_OK);
	wb_close(&m);
	/* Bytes the proxy never had cannot be served. */
	st = timed_read(&c, cold, got, &ms);
	fprintf(stderr, "wbtest: uncached READ: %s in %llu ms\n",
		wb_stat_name(st), (unsigned long long)ms);
	WB_STAT(st, NFS3ERR_JUKEBOX);
	wb_close(&c);
	free(got);
}

static void test_stalled_upstream(void)
{
	struct wb_conn c;
	struct wb_fh cached, cold;
	uint8_t *want = malloc(SIZE), *got = malloc(SIZE);
	uint32_t wtmax = 0;
	uint64_t ms;
	double stalls, reads, fsinfo;

	ganesha = ganesha_pid();
	if (!want || !got || ganesha <= 0 || wb_open(&c, "proxy", 0, 0) != 0 ||
	    setup(&c, &cached, &cold, want, &wtmax) != 0) {
		WB_CHECK(false, "setup (Ganesha pid %ld)", (long)ganesha);
		goto out;
	}
	wb_close(&c);
	stalls = wb_metric("nfscached_upstream_stalls_total");
	reads = wb_metric("nfscached_stale_answers_total{procedure=\"read\"}");
	fsinfo = wb_metric("nfscached_stale_answers_total{procedure=\"fsinfo\"}");
	stopped = true;
	WB_CHECK(stop_process(ganesha), "SIGSTOP Ganesha, all threads stopped");
	/* The cached attributes (acregmax = 60 s) expired 1 s ago. */
	WB_CHECK(http_clock_advance(getenv("NFSC_METRICS_ADDR"), 61) == 0,
		 "advance the proxy's clock");
	during_outage(&cached, &cold, want, wtmax);
	/* Past stale_on_error = 60 after their expiry, even if a reply read
	 * after the first advance refreshed them. */
	WB_CHECK(http_clock_advance(getenv("NFSC_METRICS_ADDR"), 121) == 0,
		 "advance the proxy's clock");
	WB_CHECK(wb_open(&c, "proxy", 0, 0) == 0, "connect");
	WB_STAT(timed_read(&c, &cached, got, &ms), NFS3ERR_JUKEBOX);
	wb_close(&c);
	WB_CHECK(wb_metric("nfscached_upstream_stalls_total") >= stalls + 1,
		 "the stall was detected by the probe");
	WB_CHECK(wb_metric("nfscached_stale_answers_total{procedure=\"read\"}") >=
		 reads + 1, "the READ counted as stale");
	WB_CHECK(wb_metric("nfscached_stale_answers_total{procedure=\"fsinfo\"}") >=
		 fsinfo + 1, "the FSINFO counted as stale");
	cont();
	/* The upstream is back: the proxy reconnects by itself. */
	WB_CHECK(wb_wait_metric("nfscached_upstream_up{export=\"/export\"}", 1,
				60000) == 1, "upstream up again");
	WB_CHECK(wb_open(&c, "proxy", 0, 0) == 0, "connect after");
	WB_STAT(timed_read(&c, &cold, got, &ms), NFS3_OK);
	WB_EQ(wb_first_diff(got, want, SIZE), SIZE);
	wb_close(&c);
out:
	cont();
	free(want);
	free(got);
}

/* A distant upstream (a relay adds 1.2 s each way, so a reply takes
 * longer than the 2 s a probe gets on a near one) is slow, not stalled:
 * its calls complete and the connection is never given up on. */
static void test_distant_upstream(void)
{
	struct wb_conn c;
	struct wb_fh fh;
	char name[64];
	uint8_t *want = malloc(SIZE), *got = malloc(SIZE);
	double s0 = wb_metric("nfscached_upstream_stalls_total");
	double d0 = wb_metric("nfscached_upstream_disconnects_total");
	uint64_t ms;
	int st;

	wb_unique_name(name, sizeof(name), "far");
	if (!want || !got || (wb_pattern(want, SIZE, 0, 9), 0) ||
	    disk_create(name, want) != 0 || wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(false, "setup");
		goto out;
	}
	WB_STAT(wb_lookup(&c, &c.root, name, &fh, NULL), NFS3_OK);
	st = timed_read(&c, &fh, got, &ms);
	fprintf(stderr, "wbtest: READ through a 1.2 s relay: %s in %llu ms\n",
		wb_stat_name(st), (unsigned long long)ms);
	WB_STAT(st, NFS3_OK);
	WB_EQ(wb_first_diff(got, want, SIZE), SIZE);
	WB_EQ(wb_metric("nfscached_upstream_stalls_total") - s0, 0);
	WB_EQ(wb_metric("nfscached_upstream_disconnects_total") - d0, 0);
	wb_close(&c);
out:
	free(want);
	free(got);
}

int test_register(void)
{
	CU_pSuite s;

	atexit(cont);
	s = CU_add_suite("stale_on_error", NULL, NULL);
	if (!s || !CU_add_test(s, "stalled_upstream", test_stalled_upstream))
		return -1;
	s = CU_add_suite("distant_upstream", NULL, NULL);
	if (!s || !CU_add_test(s, "slow_is_not_stalled", test_distant_upstream))
		return -1;
	return 0;
}
