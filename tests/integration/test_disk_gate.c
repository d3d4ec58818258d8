/* SPDX-License-Identifier: MIT */
/*
 * test_disk_gate: a stalled disk does not stall RAM hits or metadata
 * calls (issue 17: "Disk I/O never blocks the event loop"). The proxy
 * runs with cache_dir set and NFSCACHED_TEST_CLOCK=1, so its metrics
 * listener serves the disk tier's test gate (/debug/disk/gate,
 * docs/operations.md "Test clock"); test_disk_gate.sh starts and
 * restarts it and runs the two suites:
 *
 *   store  the file "a" (A_SIZE) is read once through the proxy (from the
 *          upstream; its pages are stored on disk asynchronously) and the
 *          test waits until the proxy counts A_SIZE stored bytes
 *          (nfscached_disk_store_bytes_total, bounded at 300 s); the gate
 *          is open and holds nothing.
 *   gate   (after a restart: RAM is cold, a's pages are on disk) "b" is
 *          read, so it is in RAM (and stored: the test waits for that too,
 *          so no store of b is left for the gate to hold). The gate is
 *          closed; it holds nothing yet. A READ of a (1 MiB at 1 MiB) is
 *          sent on a connection of its own and the test polls the gate
 *          until it holds at least one operation (the READ's disk load).
 *          Meanwhile, on another connection, READs of b (RAM hits: each
 *          counted as nfscached_reads_total{result="hit"}, no upstream
 *          READ), GETATTR of a, b and the root and LOOKUP of a and b all
 *          complete with NFS3_OK and the right bytes, while a's READ has
 *          no reply and the gate still holds it. Then the gate is opened:
 *          a's READ completes with NFS3_OK and the export's bytes, counted
 *          as disk hits (at least 1 MiB of nfscached_disk_hit_bytes_total)
 *          and with no upstream READ.
 *
 * If a disk load ran on the event loop, the closed gate would stop the
 * loop: b's READs, the metadata calls and the gate's own status would get
 * no answer within their 30 s timeouts and the test fails. No step waits
 * for a time: each polls a state (metrics, the gate's count) with a long
 * bound.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define A_SIZE		(4u * WB_MIB)
#define B_SIZE		(1u * WB_MIB)
#define A_OFF		(1u * WB_MIB)	/* the held READ of a: [A_OFF, +A_LEN) */
#define A_LEN		(1u * WB_MIB)
#define B_READS		4		/* READs of b while a's is held */
#define STORE_MS	300000		/* stores on a loaded machine */
#define HELD_MS		120000		/* the held READ reaching the gate */

#define M_STORE_BYTES	"nfscached_disk_store_bytes_total"
#define M_DROPPED	"nfscached_disk_stores_dropped_total"
#define M_DISK_BYTES	"nfscached_disk_bytes"
#define M_HIT_BYTES	"nfscached_disk_hit_bytes_total"
#define M_UP_READ	"nfscached_upstream_rpcs_total{procedure=\"read\"}"
#define M_RAM_HITS	"nfscached_reads_total{result=\"hit\"}"

/* Wait until the proxy counts want stored bytes; what for messages. */
static void wait_stored(double want, const char *what)
{
	double got = wb_wait_metric(M_STORE_BYTES, want, STORE_MS);

	WB_CHECK(got >= want, "%s: %.0f bytes stored on disk within %d ms, "
		 "want %.0f (%.0f stores dropped)", what, got, STORE_MS, want,
		 wb_metric(M_DROPPED));
}

/* Read the whole of name through c and compare with the export's copy. */
static void read_compare(struct wb_conn *c, const char *name, uint32_t size)
{
	uint8_t *got = malloc(size), *want = malloc(size);
	struct wb_fh fh;
	fattr3 attr;

	WB_CHECK(got && want, "memory for %s", name);
	if (!got || !want)
		goto out;
	WB_STAT(wb_lookup(c, &c->root, name, &fh, &attr), NFS3_OK);
	WB_EQ(wb_read_all(c, &fh, got, size), size);
	WB_EQ(wb_disk_read(name, 0, want, size), size);
	WB_EQ(wb_first_diff(got, want, size), size);
out:
	free(got);
	free(want);
}

/* Suite store: a is read once and its pages stored on disk. */
static void test_store(void)
{
	struct wb_conn c;

	if (wb_open(&c, "proxy", 0, 0) < 0) {
		WB_CHECK(false, "connect to the proxy");
		return;
	}
	WB_EQ(tdisk_gate(NULL), 0);
	read_compare(&c, "a", A_SIZE);
	wait_stored(A_SIZE, "a");
	wb_close(&c);
}

/* Poll the gate until it holds at least one operation (HELD_MS bound). */
static int wait_held(void)
{
	uint64_t end = wb_now_ms() + HELD_MS;
	int held;

	while ((held = tdisk_gate(NULL)) == 0 && wb_now_ms() < end)
		wb_sleep_ms(20);
	WB_CHECK(held >= 1, "the gate holds %d operations after a READ that "
		 "needs the disk (want >= 1 within %d ms)", held, HELD_MS);
	return held;
}

/* True when c has a reply (or EOF) waiting to be read. */
static bool reply_waiting(const struct wb_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

/* READs of b (RAM hits), GETATTR and LOOKUP on c: all NFS3_OK. */
static void served_meanwhile(struct wb_conn *c, const struct wb_fh *a,
			     const struct wb_fh *b, const uint8_t *bdata)
{
	static uint8_t buf[B_SIZE / B_READS];
	const uint32_t len = B_SIZE / B_READS;
	struct wb_fh fh;
	fattr3 attr;
	uint32_t count;
	bool eof;

	for (uint32_t i = 0; i < B_READS; i++) {
		WB_STAT(wb_read(c, b, (uint64_t)i * len, len, buf, &count, &eof),
			NFS3_OK);
		WB_EQ(count, len);
		WB_EQ(wb_first_diff(buf, bdata + (size_t)i * len, len), len);
	}
	WB_STAT(wb_getattr(c, a, &attr), NFS3_OK);
	WB_EQ(attr.size, A_SIZE);
	WB_STAT(wb_getattr(c, b, &attr), NFS3_OK);
	WB_EQ(attr.size, B_SIZE);
	WB_STAT(wb_getattr(c, &c->root, &attr), NFS3_OK);
	WB_STAT(wb_lookup(c, &c->root, "a", &fh, &attr), NFS3_OK);
	WB_CHECK(fh.len == a->len && memcmp(fh.data, a->data, fh.len) == 0,
		 "LOOKUP a gives a's handle");
	WB_STAT(wb_lookup(c, &c->root, "b", &fh, &attr), NFS3_OK);
	WB_CHECK(fh.len == b->len && memcmp(fh.data, b->data, fh.len) == 0,
		 "LOOKUP b gives b's handle");
}

/* Send the READ of a on ca; its xid, or 0. */
static uint32_t send_read_a(struct wb_conn *ca, const struct wb_fh *a)
{
	READ3args args;

	memset(&args, 0, sizeof(args));
	args.file.data.data_len = a->len;
	args.file.data.data_val = (char *)(uintptr_t)a->data;
	args.offset = A_OFF;
	args.count = A_LEN;
	return wb_send(ca, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &args);
}

/* Receive the held READ of a and check its bytes against the export's. */
static void recv_read_a(struct wb_conn *ca, uint32_t xid)
{
	static uint8_t want[A_LEN];
	READ3res res;
	int st;

	memset(&res, 0, sizeof(res));	/* decoding fills what it points to */
	st = wb_recv(ca, xid, (xdrproc_t)xdr_READ3res, &res, WB_TIMEOUT_MS);
	WB_STAT(st, NFS3_OK);
	WB_EQ(wb_disk_read("a", A_OFF, want, A_LEN), A_LEN);
	if (st == NFS3_OK) {
		READ3resok *ok = &res.READ3res_u.resok;

		WB_EQ(ok->count, A_LEN);
		WB_EQ(ok->data.data_len, A_LEN);
		if (ok->data.data_len == A_LEN)
			WB_EQ(wb_first_diff((const uint8_t *)ok->data.data_val,
					    want, A_LEN), A_LEN);
	}
	xdr_free((xdrproc_t)xdr_READ3res, &res);
}

/* The part of test_gate while the gate is closed. */
static void gated(struct wb_conn *c, struct wb_conn *ca, const struct wb_fh *a,
		  const struct wb_fh *b, const uint8_t *bdata)
{
	struct wb_snap s0, s1;
	uint32_t xid;

	WB_EQ(tdisk_gate("close"), 0);
	wb_snap_take(&s0);
	xid = send_read_a(ca, a);
	WB_CHECK(xid != 0, "send the READ of a");
	if (xid && wait_held() >= 1) {
		served_meanwhile(c, a, b, bdata);
		wb_snap_take(&s1);
		WB_EQ(wb_snap_delta(&s0, &s1, M_UP_READ), 0);
		WB_EQ(wb_snap_delta(&s0, &s1, M_RAM_HITS), B_READS);
		WB_CHECK(!reply_waiting(ca), "a's READ is still pending while "
			 "b's READs, GETATTR and LOOKUP were answered");
		WB_CHECK(tdisk_gate(NULL) >= 1, "the gate still holds a's load");
		wb_snap_free(&s1);
	}
	tdisk_gate("open");	/* what it holds is released: no count */
	if (xid)
		recv_read_a(ca, xid);
	wb_snap_take(&s1);
	WB_CHECK(wb_snap_delta(&s0, &s1, M_HIT_BYTES) >= A_LEN,
		 "a's READ loaded %.0f bytes from disk, want >= %u",
		 wb_snap_delta(&s0, &s1, M_HIT_BYTES), A_LEN);
	WB_EQ(wb_snap_delta(&s0, &s1, M_UP_READ), 0);
	wb_snap_free(&s0);
	wb_snap_free(&s1);
}

/* Suite gate: RAM hits and metadata calls while a disk load is held. */
static void test_gate(void)
{
	static uint8_t bdata[B_SIZE];
	struct wb_conn c = { .fd = -1 }, ca = { .fd = -1 };
	struct wb_fh a, b;
	fattr3 attr;

	if (wb_open(&c, "proxy", 0, 0) < 0 || wb_open(&ca, "proxy", 0, 0) < 0) {
		WB_CHECK(false, "connect to the proxy twice");
		wb_close(&c);
		return;
	}
	WB_CHECK(wb_metric(M_DISK_BYTES) >= A_SIZE, "a's pages are on disk "
		 "after the restart (%.0f bytes held)", wb_metric(M_DISK_BYTES));
	WB_STAT(wb_lookup(&c, &c.root, "a", &a, &attr), NFS3_OK);
	WB_STAT(wb_lookup(&c, &c.root, "b", &b, &attr), NFS3_OK);
	WB_EQ(wb_disk_read("b", 0, bdata, B_SIZE), B_SIZE);
	read_compare(&c, "b", B_SIZE);
	/* b's stores done: none is left for the gate to hold. */
	wait_stored(B_SIZE, "b");
	gated(&c, &ca, &a, &b, bdata);
	wb_close(&ca);
	wb_close(&c);
}

int test_register(void)
{
	CU_pSuite s;

	tcheck_report_at_exit("test_disk_gate");
	s = CU_add_suite("store", NULL, NULL);
	if (!s || !CU_add_test(s, "a_stored_on_disk", test_store))
		return -1;
	s = CU_add_suite("gate", NULL, NULL);
	if (!s || !CU_add_test(s, "ram_hits_while_disk_held", test_gate))
		return -1;
	return 0;
}
