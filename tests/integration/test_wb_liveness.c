/* SPDX-License-Identifier: MIT */
/*
 * test_wb_liveness: write-back calls finish while other clients keep
 * writing (issue 21).
 *
 *   commit_under_load  A writer process keeps 64 UNSTABLE WRITEs of 64 KiB
 *                      in flight over [1 MiB, 17 MiB) of a file, pass after
 *                      pass. Meanwhile a second client writes [0, 1 MiB)
 *                      with its own pattern and COMMITs the file, three
 *                      times: each COMMIT is answered NFS3_OK within 2 s
 *                      with the proxy's write verifier (the one its WRITEs
 *                      got), and its 1 MiB is on Ganesha's disk when the
 *                      answer comes (RFC 1813 section 3.3.21: a COMMIT
 *                      covers the writes acknowledged before it, not the
 *                      ones after). The writer's WRITEs all succeed; once
 *                      it stops, a last COMMIT puts its last pass on disk
 *                      byte for byte.
 *   room_scattered     With wb_room.conf (cache_size = 4 MiB: 64 pages of
 *                      64 KiB), 4,096 WRITEs of 4 KiB in random order over
 *                      16 MiB (every page gets a 4 KiB piece, so every page
 *                      holds uncommitted data), 64 in flight: WRITEs wait
 *                      for room (nfscached_write_room_waits_total > 0), no
 *                      wait reaches its limit (..._timeouts_total == 0, no
 *                      WRITE goes through), waits are woken rather than
 *                      polled (at most 4 waits per WRITE), and after the
 *                      COMMIT the 16 MiB are on disk as written.
 *
 * Runs under harness.sh: commit_under_load through ratest_proxy.sh with
 * the upstream behind a 5 ms delay relay (write-back then cannot keep up
 * with the writer, as with a distant server; on bare loopback the file
 * goes quiet now and then and the old behaviour hid), room_scattered with
 * --proxy-conf-extra wb_room.conf.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define BLOCK (64u * WB_KIB)
#define OWN (1u * WB_MIB)		/* the committing client's bytes */
#define REGION (16u * WB_MIB)		/* the writer's bytes, after OWN */
#define WINDOW 64
#define COMMIT_LIMIT_MS 2000		/* issue 21: within 2 s (the
					 * environment's WB_COMMIT_LIMIT_MS
					 * in sanitizer builds) */
#define ROUNDS 3

static struct wb_conn px;

/* Open the proxy connection. */
static int suite_init(void)
{
	return wb_open(&px, "proxy", 0, 0);
}

/* Close it. */
static int suite_clean(void)
{
	wb_close(&px);
	return 0;
}

/* Create name through the proxy, mode 0666. */
static int create_file(const char *name, struct wb_fh *fh)
{
	int st = wb_create(&px, &px.root, name, UNCHECKED, 0666, 0, fh, NULL);

	WB_STAT(st, NFS3_OK);
	return st == NFS3_OK && fh->len ? 0 : -1;
}

/* Writer process: rounds of two passes over the region (seeds 1 and 2)
 * with WINDOW WRITEs always in flight, until stop_fd reads EOF; writes
 * the rounds done (or a negative error) to out_fd. */
static void writer_main(const struct wb_fh *fh, int stop_fd, int out_fd)
{
	struct wb_conn c;
	size_t n = REGION / BLOCK;
	struct wb_wreq *reqs = calloc(2 * n, sizeof(*reqs));
	uint8_t *buf = malloc(2 * (size_t)REGION);
	int32_t rounds;

	if (!reqs || !buf || wb_open(&c, "proxy", 0, 0) != 0)
		_exit(2);
	for (size_t i = 0; i < 2 * n; i++) {
		size_t pass = i / n, j = i % n;

		if (j == 0)
			wb_pattern(buf + pass * REGION, REGION, OWN,
				   (uint32_t)pass + 1);
		reqs[i].off = OWN + j * BLOCK;
		reqs[i].len = BLOCK;
		reqs[i].data = buf + pass * REGION + j * BLOCK;
		reqs[i].stable = UNSTABLE;
	}
	rounds = (int32_t)wb_write_stream(&c, fh, reqs, 2 * n, WINDOW, stop_fd);
	if (rounds < 0)
		fprintf(stderr, "writer: %s\n", rounds <= -100 ?
			"a WRITE failed" : wb_stat_name(rounds));
	if (write(out_fd, &rounds, sizeof(rounds)) != sizeof(rounds))
		_exit(3);
	_exit(0);
}

/* Write OWN bytes at 0 with seed; verf receives the WRITEs' verifier. */
static void own_write(const struct wb_fh *fh, uint32_t seed, uint8_t *buf,
		      uint8_t *verf)
{
	struct wb_wreq reqs[OWN / BLOCK];
	struct wb_wres res[OWN / BLOCK];

	wb_pattern(buf, OWN, 0, seed);
	for (size_t i = 0; i < OWN / BLOCK; i++) {
		reqs[i].off = i * BLOCK;
		reqs[i].len = BLOCK;
		reqs[i].data = buf + i * BLOCK;
		reqs[i].stable = UNSTABLE;
	}
	WB_EQ(wb_write_many(&px, fh, reqs, OWN / BLOCK, 16, res), 0);
	for (size_t i = 0; i < OWN / BLOCK; i++)
		WB_STAT(res[i].st, NFS3_OK);
	memcpy(verf, res[0].verf, NFS3_WRITEVERFSIZE);
}

/* Check $NFSC_EXPORT_DIR/name holds want[0..len) at off. */
static void check_disk(const char *name, uint64_t off, const uint8_t *want,
		       size_t len)
{
	uint8_t *got = malloc(len);

	WB_CHECK(got && wb_disk_read(name, off, got, len) == (ssize_t)len,
		 "read %zu bytes of %s on disk at %llu", len, name,
		 (unsigned long long)off);
	if (got)
		WB_EQ(wb_first_diff(got, want, len), len);
	free(got);
}

/* One round: own bytes, then a COMMIT timed and checked. */
static void commit_round(const char *name, const struct wb_fh *fh,
			 uint32_t seed, uint8_t *buf)
{
	uint8_t wverf[NFS3_WRITEVERFSIZE], cverf[NFS3_WRITEVERFSIZE];
	double w0 = wb_metric(WB_M_CL_WRITES), w1;
	uint64_t t0;
	int st;

	const char *lim = getenv("WB_COMMIT_LIMIT_MS");
	uint64_t limit = lim && atoi(lim) > 0 ? (uint64_t)atoi(lim)
					      : COMMIT_LIMIT_MS;

	own_write(fh, seed, buf, wverf);
	t0 = wb_now_ms();
	st = wb_commit(&px, fh, cverf, WB_TIMEOUT_MS + 10000);
	t0 = wb_now_ms() - t0;
	w1 = wb_metric(WB_M_CL_WRITES);
	fprintf(stderr, "wbtest: COMMIT under load: %s in %llu ms, %.0f client "
		"WRITEs meanwhile\n", wb_stat_name(st), (unsigned long long)t0,
		w1 - w0);
	WB_STAT(st, NFS3_OK);
	WB_CHECK(t0 <= limit, "COMMIT took %llu ms, want <= %llu",
		 (unsigned long long)t0, (unsigned long long)limit);
	WB_EQ(memcmp(cverf, wverf, NFS3_WRITEVERFSIZE), 0);
	/* The writer really was writing around it. */
	WB_CHECK(w1 - w0 > OWN / BLOCK, "%.0f client WRITEs, want > %u",
		 w1 - w0, OWN / BLOCK);
	check_disk(name, 0, buf, OWN);
}

/* A COMMIT of a file another client keeps writing completes. */
static void test_commit_under_load(void)
{
	char name[64];
	struct wb_fh fh;
	int stop[2], out[2];
	uint8_t *buf = malloc(REGION);
	int32_t last = -1;
	pid_t pid;
	int status;
	double c0 = wb_metric(WB_M_UP_COMMIT);

	wb_unique_name(name, sizeof(name), "liveness");
	if (!buf || create_file(name, &fh) != 0 || pipe(stop) || pipe(out)) {
		WB_CHECK(false, "setup");
		free(buf);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(stop[1]);
		close(out[0]);
		writer_main(&fh, stop[0], out[1]);
	}
	close(stop[0]);
	close(out[1]);
	/* Let the writer get going: its first pass is absorbed. */
	WB_CHECK(wb_wait_metric(WB_M_CL_WRITES, REGION / BLOCK, 60000) >=
		 REGION / BLOCK, "the writer's first pass");
	for (uint32_t i = 0; i < ROUNDS; i++)
		commit_round(name, &fh, 1000 + i, buf);
	close(stop[1]);
	WB_CHECK(read(out[0], &last, sizeof(last)) == sizeof(last),
		 "the writer's report");
	close(out[0]);
	WB_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		 WEXITSTATUS(status) == 0, "the writer exited 0");
	WB_CHECK(last > 0, "the writer's WRITEs all succeeded (%d rounds)",
		 (int)last);
	WB_CHECK(wb_metric(WB_M_UP_COMMIT) - c0 >= ROUNDS,
		 "at least one upstream COMMIT per client COMMIT");
	if (last > 0) {
		uint8_t v[NFS3_WRITEVERFSIZE];

		WB_STAT(wb_commit(&px, &fh, v, WB_TIMEOUT_MS), NFS3_OK);
		wb_pattern(buf, REGION, OWN, 2);	/* a round ends with seed 2 */
		check_disk(name, OWN, buf, REGION);
	}
	free(buf);
}

/* Scattered 4 KiB WRITEs over more pages than the cache has: room waits
 * are woken and bounded. */
static void test_room_scattered(void)
{
	enum { BS = 4096, N = REGION / BS };
	char name[64];
	struct wb_fh fh;
	struct wb_wreq *reqs = calloc(N, sizeof(*reqs));
	struct wb_wres *res = calloc(N, sizeof(*res));
	uint32_t *order = calloc(N, sizeof(*order));
	uint8_t *buf = malloc(REGION), v[NFS3_WRITEVERFSIZE];
	uint64_t rnd = 21;
	struct wb_snap a, b;
	double waits, timeouts, secs, through, waited;

	wb_unique_name(name, sizeof(name), "scatter");
	if (!reqs || !res || !order || !buf || create_file(name, &fh) != 0 ||
	    wb_snap_take(&a) != 0) {
		WB_CHECK(false, "setup");
		goto out;
	}
	wb_pattern(buf, REGION, 0, 77);
	for (uint32_t i = 0; i < N; i++)
		order[i] = i;
	for (uint32_t i = N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(wb_rand(&rnd) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; i < N; i++) {
		reqs[i].off = (uint64_t)order[i] * BS;
		reqs[i].len = BS;
		reqs[i].data = buf + reqs[i].off;
		reqs[i].stable = UNSTABLE;
	}
	WB_EQ(wb_write_many(&px, &fh, reqs, N, WINDOW, res), 0);
	for (uint32_t i = 0; i < N; i++)
		if (res[i].st != NFS3_OK || res[i].committed != UNSTABLE) {
			WB_STAT(res[i].st, NFS3_OK);
			WB_EQ(res[i].committed, UNSTABLE);
			break;
		}
	WB_STAT(wb_commit(&px, &fh, v, WB_TIMEOUT_MS), NFS3_OK);
	if (wb_snap_take(&b) != 0) {
		WB_CHECK(false, "metrics");
		wb_snap_free(&a);
		goto out;
	}
	waits = wb_snap_delta(&a, &b, "nfscached_write_room_waits_total");
	timeouts = wb_snap_delta(&a, &b, "nfscached_write_room_wait_timeouts_total");
	secs = wb_snap_delta(&a, &b, "nfscached_write_room_wait_seconds_total");
	waited = wb_snap_delta(&a, &b, "nfscached_writes_waited_for_room_total");
	through = wb_snap_delta(&a, &b, WB_M_THROUGH);
	fprintf(stderr, "wbtest: scattered: %.0f WRITEs waited, %.0f waits, "
		"%.3f s in all (%.1f ms mean), %.0f timed out, %.0f through\n",
		waited, waits, secs, waits ? secs * 1000 / waits : 0, timeouts,
		through);
	WB_CHECK(waits > 0, "no WRITE waited for room: the cache never filled");
	WB_EQ(timeouts, 0);
	WB_EQ(through, 0);
	WB_CHECK(waited <= N && waits <= 4.0 * waited,
		 "%.0f waits for %.0f waiting WRITEs: woken in vain", waits,
		 waited);
	check_disk(name, 0, buf, REGION);
	wb_snap_free(&a);
	wb_snap_free(&b);
out:
	free(reqs);
	free(res);
	free(order);
	free(buf);
}

int test_register(void)
{
	CU_pSuite s;

	signal(SIGPIPE, SIG_IGN);
	s = CU_add_suite("commit_under_load", suite_init, suite_clean);
	if (!s || !CU_add_test(s, "commit_covers_earlier_writes",
			       test_commit_under_load))
		return -1;
	s = CU_add_suite("room_scattered", suite_init, suite_clean);
	if (!s || !CU_add_test(s, "room_waits_woken", test_room_scattered))
		return -1;
	return 0;
}
