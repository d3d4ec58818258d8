/* SPDX-License-Identifier: MIT */
/*
 * test_wb_shutdown: SIGTERM during a write stream loses nothing the proxy
 * acknowledged (docs/design.md "Write semantics": on SIGTERM nfscached stops
 * accepting work, writes back everything, commits, and exits 0). Driven by
 * test_wb_sigterm.sh, which runs its own nfscached and sends the signal:
 *
 *   stream  through the proxy, sequential 64 KiB UNSTABLE WRITEs to a new
 *           file, one at a time, with a COMMIT after every 16; after each
 *           COMMIT and at the end, the file's name, the bytes acknowledged
 *           (every WRITE answered NFS3_OK), the bytes committed (acknowledged
 *           before a COMMIT answered NFS3_OK) and the WRITEs acknowledged
 *           after the script's marker file appeared (it is created right
 *           before SIGTERM) go to $WB_STREAM_STATE. The stream ends when
 *           the proxy stops answering (the connection closes) or at
 *           WB_STREAM_CAP bytes (default 2 GiB).
 *   tail    the same for 32 MiB, then 40 more WRITEs without a COMMIT
 *           (2.5 MiB acknowledged, not committed); then it writes its state,
 *           creates $WB_STREAM_READY and waits, sending nothing, until the
 *           proxy closes the connection: the SIGTERM flush alone must put
 *           the tail on Ganesha.
 *   nocommit  like stream, but no COMMIT ever: only the SIGTERM flush
 *           (and write-behind past dirty_limit) puts bytes upstream, while
 *           the client keeps writing; nfscached must still stop taking
 *           WRITEs and flush what it acknowledged.
 *   check   after nfscached exited: in the export directory on disk, every
 *           committed byte and every acknowledged byte is the client's
 *           (with WB_CHECK_COMMITTED_ONLY set, the committed bytes only:
 *           the upstream was down at the SIGTERM).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define BS (64u * WB_KIB)
#define COMMIT_EVERY 16
#define SEED 4242
#define TAIL_AFTER (32ull * WB_MIB)
#define TAIL_WRITES 40

/* What the stream reached. */
struct progress {
	char name[64];
	uint64_t acked;
	uint64_t committed;
	uint64_t after_mark;	/* WRITEs acknowledged after the marker */
	int end;		/* the status that ended the stream */
};

/* Write p to the state file (replacing it). */
static void state_save(const struct progress *p)
{
	const char *path = wb_env("WB_STREAM_STATE");
	char tmp[4200];
	FILE *f;

	if (!path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%s %llu %llu %llu %d\n", p->name,
		(unsigned long long)p->acked, (unsigned long long)p->committed,
		(unsigned long long)p->after_mark, p->end);
	fclose(f);
	rename(tmp, path);
}

/* Read the state file into p. Returns 0 or -1. */
static int state_load(struct progress *p)
{
	const char *path = wb_env("WB_STREAM_STATE");
	unsigned long long a, c, m;
	FILE *f;
	int n;

	memset(p, 0, sizeof(*p));
	if (!path || !(f = fopen(path, "r")))
		return -1;
	n = fscanf(f, "%63s %llu %llu %llu %d", p->name, &a, &c, &m, &p->end);
	fclose(f);
	p->acked = a;
	p->committed = c;
	p->after_mark = m;
	return n == 5 ? 0 : -1;
}

/* True once the script's SIGTERM marker exists. */
static bool marked(void)
{
	const char *mark = getenv("WB_STREAM_MARK");

	return mark && access(mark, F_OK) == 0;
}

/* Create the ready file, then wait until the proxy closes c. */
static int idle_until_closed(struct wb_conn *c)
{
	const char *ready = wb_env("WB_STREAM_READY");
	FILE *f = ready ? fopen(ready, "w") : NULL;

	if (f)
		fclose(f);
	return rawrpc_wait_closed(c->fd, 120000) == RAWRPC_CLOSED
		       ? WB_ERR_CLOSED : WB_ERR_TIMEOUT;
}

/* How a stream runs. */
enum mode {
	BUSY,		/* COMMIT every COMMIT_EVERY WRITEs, until cut */
	TAIL,		/* TAIL_AFTER committed, TAIL_WRITES more, silence */
	NOCOMMIT,	/* WRITEs only, until cut */
};

/* Stream WRITEs (and COMMITs) as mode says until the proxy goes away. */
static void stream(enum mode mode)
{
	uint64_t cap = 2ull << 30;
	const char *cap_env = getenv("WB_STREAM_CAP");
	struct progress p;
	struct wb_conn c;
	struct wb_fh fh;
	uint8_t *buf = malloc(BS);
	uint64_t n = 0;
	int st = NFS3_OK;

	memset(&p, 0, sizeof(p));
	if (cap_env)
		cap = strtoull(cap_env, NULL, 10);
	if (mode == TAIL)
		cap = TAIL_AFTER + TAIL_WRITES * BS;
	WB_CHECK(buf != NULL, "malloc");
	if (!buf || wb_open(&c, "proxy", 0, 0) < 0) {
		WB_CHECK(false, "connect to the proxy");
		free(buf);
		return;
	}
	wb_unique_name(p.name, sizeof(p.name), "wb-stream");
	WB_STAT(wb_create(&c, &c.root, p.name, UNCHECKED, 0644, 0, &fh, NULL),
		NFS3_OK);
	state_save(&p);
	while (p.acked < cap) {
		wb_pattern(buf, BS, p.acked, SEED);
		st = wb_write(&c, &fh, p.acked, buf, BS, UNSTABLE, NULL);
		if (st != NFS3_OK)
			break;
		p.acked += BS;
		if (marked())
			p.after_mark++;
		if (++n % COMMIT_EVERY)
			continue;
		if (mode == NOCOMMIT || (mode == TAIL && p.acked > TAIL_AFTER)) {
			state_save(&p);
			continue;
		}
		st = wb_commit(&c, &fh, NULL, WB_TIMEOUT_MS);
		if (st != NFS3_OK)
			break;
		p.committed = p.acked;
		state_save(&p);
	}
	if (mode == TAIL && st == NFS3_OK) {
		state_save(&p);
		st = idle_until_closed(&c);
	}
	p.end = st;
	state_save(&p);
	fprintf(stderr, "wbtest: stream: %llu WRITEs, %llu bytes acknowledged, "
		"%llu committed, %llu WRITEs acknowledged after SIGTERM; ended "
		"by %s\n", (unsigned long long)n, (unsigned long long)p.acked,
		(unsigned long long)p.committed,
		(unsigned long long)p.after_mark, wb_stat_name(st));
	if (mode == TAIL) {
		WB_EQ(p.acked, cap);
		WB_EQ(p.committed, TAIL_AFTER);
	} else {
		WB_CHECK(mode == NOCOMMIT || p.committed > 0,
			 "some bytes were committed");
		WB_CHECK(p.acked < cap, "the stream was cut by the proxy's "
			 "exit, not by its cap of %llu bytes",
			 (unsigned long long)cap);
	}
	WB_CHECK(st == WB_ERR_CLOSED || st == NFS3ERR_JUKEBOX ||
		 st == WB_ERR_TIMEOUT, "the stream ended with the proxy's "
		 "stop (got %s)", wb_stat_name(st));
	wb_close(&c);
	free(buf);
}

/* The busy stream. */
static void test_stream(void)
{
	stream(BUSY);
}

/* The stream with an uncommitted tail, then silence. */
static void test_tail(void)
{
	stream(TAIL);
}

/* WRITEs without COMMITs until the proxy goes away. */
static void test_nocommit(void)
{
	stream(NOCOMMIT);
}

/* Check [0, end) of the stream file on disk; the first bad offset or
 * UINT64_MAX. */
static uint64_t disk_mismatch(const char *name, uint64_t end)
{
	uint8_t *got = malloc(WB_MIB), *want = malloc(WB_MIB);
	uint64_t off, bad = UINT64_MAX;

	if (!got || !want) {
		free(got);
		free(want);
		return 0;
	}
	for (off = 0; off < end && bad == UINT64_MAX; off += WB_MIB) {
		size_t len = end - off < WB_MIB ? (size_t)(end - off) : WB_MIB;
		ssize_t n = wb_disk_read(name, off, got, len);
		size_t d;

		wb_pattern(want, len, off, SEED);
		if (n < 0)
			bad = off;
		else if ((d = wb_first_diff(got, want, (size_t)n)) != (size_t)n)
			bad = off + d;
		else if ((size_t)n < len)
			bad = off + (uint64_t)n;
	}
	free(got);
	free(want);
	return bad;
}

/* After the proxy's exit: every committed and acknowledged byte is on
 * Ganesha. */
static void test_check(void)
{
	struct progress p;
	uint64_t bad;
	int64_t size;

	WB_CHECK(state_load(&p) == 0, "read the stream's state");
	if (!p.name[0])
		return;
	size = wb_disk_size(p.name);
	fprintf(stderr, "wbtest: check: %s on disk has %lld bytes; the client "
		"had %llu acknowledged, %llu committed\n", p.name,
		(long long)size, (unsigned long long)p.acked,
		(unsigned long long)p.committed);
	bad = disk_mismatch(p.name, p.committed);
	WB_CHECK(bad == UINT64_MAX, "every COMMITted byte is on Ganesha "
		 "(first missing or wrong at offset %llu of %llu)",
		 (unsigned long long)bad, (unsigned long long)p.committed);
	if (getenv("WB_CHECK_COMMITTED_ONLY"))
		return;
	WB_CHECK(size >= 0 && (uint64_t)size >= p.acked, "the file on disk "
		 "(%lld bytes) holds every acknowledged byte (%llu)",
		 (long long)size, (unsigned long long)p.acked);
	bad = disk_mismatch(p.name, p.acked);
	WB_CHECK(bad == UINT64_MAX, "every acknowledged byte is on Ganesha "
		 "(first missing or wrong at offset %llu of %llu)",
		 (unsigned long long)bad, (unsigned long long)p.acked);
}

int test_register(void)
{
	CU_pSuite s;

	s = CU_add_suite("stream", NULL, NULL);
	if (!s || !CU_add_test(s, "until_sigterm", test_stream))
		return -1;
	s = CU_add_suite("tail", NULL, NULL);
	if (!s || !CU_add_test(s, "then_sigterm", test_tail))
		return -1;
	s = CU_add_suite("nocommit", NULL, NULL);
	if (!s || !CU_add_test(s, "until_sigterm", test_nocommit))
		return -1;
	s = CU_add_suite("check", NULL, NULL);
	if (!s || !CU_add_test(s, "acknowledged_on_disk", test_check))
		return -1;
	return 0;
}
