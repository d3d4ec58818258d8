/* SPDX-License-Identifier: MIT */
/*
 * test_drc: the proxy's duplicate request cache, seen from the wire.
 *
 * Runs under harness.sh. A retransmission is the same call (xid, procedure
 * and arguments) from the same client address AND port, as Linux knfsd's
 * DRC keys on the whole sockaddr (nfsd_cache_lookup); the proxy must then
 * answer every copy with the byte-identical reply and run the call upstream
 * once, whether the copy arrives while the original is in progress (back
 * to back) or after its reply (RFC 1813 section 4.4 explains why
 * non-idempotent NFS procedures need this). The same xid from another
 * connection, with another procedure, or with other arguments is a new
 * call and runs again.
 *
 * Witnesses: the reply bytes; the export directory on disk (NFSC_EXPORT_DIR);
 * and /metrics deltas of nfscached_upstream_rpcs_total{procedure="create"},
 * {procedure="remove"} and nfscached_drc_hits_total.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"

#define M_CREATE "nfscached_upstream_rpcs_total{procedure=\"create\"}"
#define M_REMOVE "nfscached_upstream_rpcs_total{procedure=\"remove\"}"
#define M_HITS	 "nfscached_drc_hits_total"

/* Test-wide state, set up by suite_init. */
static struct {
	uint16_t nfs_port;
	const char *export_dir;
	uint8_t root[NFS3_FHSIZE];
	size_t root_len;
} T;

/* Counter values at one moment. */
struct counts {
	double create;
	double remove;
	double hits;
};

/* One formatted assertion (tcheck.h). */
#define EXPECT(ok, ...) tcheck((ok), __FILE__, __LINE__, __VA_ARGS__)

/* Read the three counters in one /metrics fetch. Returns 0 or -1. */
static int counts_get(struct counts *c)
{
	char *text = tmetrics_get();

	memset(c, 0, sizeof(*c));
	if (text == NULL)
		return -1;
	c->create = tmetrics_value(text, M_CREATE);
	c->remove = tmetrics_value(text, M_REMOVE);
	c->hits = tmetrics_value(text, M_HITS);
	free(text);
	return c->create < 0 || c->remove < 0 || c->hits < 0 ? -1 : 0;
}

/* Assert the counters moved by exactly the given amounts since before. */
static void expect_moved(const struct counts *before, double create,
			 double remove, double hits, const char *what)
{
	struct counts now;

	EXPECT(counts_get(&now) == 0, "%s: cannot read /metrics", what);
	fprintf(stderr, "drc: %s: create +%g, remove +%g, drc hits +%g\n",
		what, now.create - before->create, now.remove - before->remove,
		now.hits - before->hits);
	EXPECT(now.create - before->create == create, "%s: upstream creates "
	       "moved by %g, expected %g", what, now.create - before->create,
	       create);
	EXPECT(now.remove - before->remove == remove, "%s: upstream removes "
	       "moved by %g, expected %g", what, now.remove - before->remove,
	       remove);
	EXPECT(now.hits - before->hits == hits, "%s: drc hits moved by %g, "
	       "expected %g", what, now.hits - before->hits, hits);
}

/* Tell whether name exists in the export directory on disk. */
static bool on_disk(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", T.export_dir, name);
	return stat(path, &st) == 0;
}

/* Encode a CREATE(root, name, EXCLUSIVE, verf) call with xid into b. */
static void put_create(struct rawrpc_buf *b, uint32_t xid, const char *name,
		       const char *verf8)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	a.where.dir.data.data_len = (u_int)T.root_len;
	a.where.dir.data.data_val = (char *)T.root;
	a.where.name = (char *)(uintptr_t)name;
	a.how.mode = EXCLUSIVE;
	memcpy(a.how.createhow3_u.verf, verf8, NFS3_CREATEVERFSIZE);
	rawrpc_buf_init(b);
	rawrpc_put_call(b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_CREATE, &cred);
	rawrpc_put_xdr(b, (xdrproc_t)xdr_CREATE3args, &a);
}

/* Encode a REMOVE(root, name) call with xid into b. */
static void put_remove(struct rawrpc_buf *b, uint32_t xid, const char *name)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	REMOVE3args a;

	memset(&a, 0, sizeof(a));
	a.object.dir.data.data_len = (u_int)T.root_len;
	a.object.dir.data.data_val = (char *)T.root;
	a.object.name = (char *)(uintptr_t)name;
	rawrpc_buf_init(b);
	rawrpc_put_call(b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_REMOVE, &cred);
	rawrpc_put_xdr(b, (xdrproc_t)xdr_REMOVE3args, &a);
}

/* The nfsstat3 of an accepted reply record with xid, or -1. */
static int reply_status(const uint8_t *rec, size_t len, uint32_t xid)
{
	struct rawrpc_reply r;
	nfsstat3 st;

	if (rawrpc_parse_reply(rec, len, &r) < 0 || r.xid != xid ||
	    r.stat != MSG_ACCEPTED || r.accept != SUCCESS ||
	    rawrpc_decode(rec, len, r.res_off, (xdrproc_t)xdr_nfsstat3,
			  &st) < 0)
		return -1;
	return (int)st;
}

/* Receive one reply record into rec/len or record a failure. */
static bool recv_reply(int fd, uint8_t **rec, size_t *len, const char *what)
{
	enum rawrpc_io io = rawrpc_recv_record(fd, RAWRPC_TIMEOUT_MS, rec, len);

	EXPECT(io == RAWRPC_OK, "%s: no reply (io %d)", what, io);
	return io == RAWRPC_OK;
}

/*
 * On one connection send call twice back to back (one write), read both
 * replies, then send it a third time and read that reply. All three must
 * be byte-identical with nfsstat3 want. Returns the number of copies sent
 * beyond the first (the duplicates), for the drc hit count.
 */
static unsigned send_thrice(int fd, const struct rawrpc_buf *call,
			    uint32_t xid, int want, const char *what)
{
	struct rawrpc_buf two;
	uint8_t *rec[3] = { NULL, NULL, NULL };
	size_t len[3] = { 0, 0, 0 };
	char step[160];
	int i, st;

	rawrpc_buf_init(&two);
	for (i = 0; i < 2; i++) {
		rawrpc_put_u32(&two, 0x80000000u | (uint32_t)call->len);
		rawrpc_put_raw(&two, call->data, call->len);
	}
	EXPECT(!two.failed && rawrpc_send_bytes(fd, two.data, two.len) == 0,
	       "%s: send two copies", what);
	rawrpc_buf_free(&two);
	for (i = 0; i < 2; i++) {
		snprintf(step, sizeof(step), "%s, back-to-back copy %d", what,
			 i + 1);
		if (!recv_reply(fd, &rec[i], &len[i], step))
			goto out;
	}
	EXPECT(rawrpc_send_record(fd, call->data, call->len) == 0,
	       "%s: send the third copy", what);
	snprintf(step, sizeof(step), "%s, copy after the reply", what);
	if (!recv_reply(fd, &rec[2], &len[2], step))
		goto out;
	for (i = 0; i < 3; i++) {
		st = reply_status(rec[i], len[i], xid);
		EXPECT(st == want, "%s: copy %d status %d, expected %d", what,
		       i + 1, st, want);
	}
	for (i = 1; i < 3; i++)
		EXPECT(len[i] == len[0] && memcmp(rec[i], rec[0], len[0]) == 0,
		       "%s: reply to copy %d (%zu bytes) differs from the "
		       "first (%zu bytes)", what, i + 1, len[i], len[0]);
out:
	for (i = 0; i < 3; i++)
		free(rec[i]);
	return 2;
}

/* Send call once on fd and return its nfsstat3 (or -1). */
static int send_once(int fd, const struct rawrpc_buf *call, uint32_t xid,
		     const char *what)
{
	struct rawrpc_reply r;
	enum rawrpc_io io;
	uint8_t *rec = NULL;
	size_t len = 0;
	int st;

	io = rawrpc_roundtrip(fd, call, xid, RAWRPC_TIMEOUT_MS, &r, &rec, &len);
	EXPECT(io == RAWRPC_OK, "%s: no reply (io %d)", what, io);
	if (io != RAWRPC_OK)
		return -1;
	st = reply_status(rec, len, xid);
	free(rec);
	return st;
}

/* Retransmitted CREATE and REMOVE run upstream once; every copy gets the
 * same bytes. */
static void test_retransmissions_run_once(void)
{
	struct rawrpc_buf call;
	struct counts before;
	char name[64];
	uint32_t xid;
	unsigned dups = 0;
	int fd;

	snprintf(name, sizeof(name), "drc-once-%d", (int)getpid());
	EXPECT(counts_get(&before) == 0, "cannot read /metrics");
	fd = rawrpc_connect(T.nfs_port);
	EXPECT(fd >= 0, "connect: %s", strerror(errno));
	if (fd < 0)
		return;
	xid = rawrpc_xid();
	put_create(&call, xid, name, "drcverf1");
	dups += send_thrice(fd, &call, xid, NFS3_OK, "CREATE EXCLUSIVE");
	rawrpc_buf_free(&call);
	EXPECT(on_disk(name), "CREATE: %s not in the export directory", name);

	xid = rawrpc_xid();
	put_remove(&call, xid, name);
	dups += send_thrice(fd, &call, xid, NFS3_OK, "REMOVE");
	rawrpc_buf_free(&call);
	EXPECT(!on_disk(name), "REMOVE: %s still in the export directory",
	       name);
	close(fd);
	expect_moved(&before, 1, 1, dups, "retransmissions");
}

/* The same xid on another connection (another source port), with another
 * procedure, or with other arguments is a new call. */
static void test_same_xid_other_call_runs_again(void)
{
	struct rawrpc_buf call;
	struct counts before;
	char n2[64], n3[64], n4[64];
	uint32_t x2, y2;
	int a, b, st;

	snprintf(n2, sizeof(n2), "drc-two-%d", (int)getpid());
	snprintf(n3, sizeof(n3), "drc-three-%d", (int)getpid());
	snprintf(n4, sizeof(n4), "drc-four-%d", (int)getpid());
	EXPECT(counts_get(&before) == 0, "cannot read /metrics");
	a = rawrpc_connect(T.nfs_port);
	b = rawrpc_connect(T.nfs_port);
	EXPECT(a >= 0 && b >= 0, "connect: %s", strerror(errno));
	if (a < 0 || b < 0)
		goto out;
	x2 = rawrpc_xid();
	y2 = rawrpc_xid();

	/* CREATE n2 with x2 on A, then the same bytes on B: runs twice. */
	put_create(&call, x2, n2, "drcverf2");
	st = send_once(a, &call, x2, "CREATE on A");
	EXPECT(st == NFS3_OK, "CREATE on A: status %d", st);
	st = send_once(b, &call, x2, "same CREATE on B");
	EXPECT(st == NFS3_OK, "same CREATE (same verifier) on B: status %d, "
	       "expected NFS3_OK (RFC 1813 3.3.8)", st);
	rawrpc_buf_free(&call);

	/* REMOVE n2 with y2 on A (OK), the same bytes on B: runs, NOENT. */
	put_remove(&call, y2, n2);
	st = send_once(a, &call, y2, "REMOVE on A");
	EXPECT(st == NFS3_OK, "REMOVE on A: status %d", st);
	st = send_once(b, &call, y2, "same REMOVE on B");
	EXPECT(st == NFS3ERR_NOENT, "same REMOVE on B: status %d, expected "
	       "NOENT: it must run again, not be answered from A's entry", st);
	rawrpc_buf_free(&call);
	EXPECT(!on_disk(n2), "%s still on disk", n2);

	/* On A, y2 with CREATE (y2 was a REMOVE): another procedure. */
	put_create(&call, y2, n3, "drcverf3");
	st = send_once(a, &call, y2, "CREATE reusing a REMOVE's xid");
	EXPECT(st == NFS3_OK, "CREATE reusing a REMOVE's xid: status %d", st);
	rawrpc_buf_free(&call);
	EXPECT(on_disk(n3), "%s not on disk", n3);

	/* On A, x2 with CREATE of another name: other arguments. */
	put_create(&call, x2, n4, "drcverf4");
	st = send_once(a, &call, x2, "CREATE reusing an xid, other name");
	EXPECT(st == NFS3_OK, "CREATE reusing an xid with another name: "
	       "status %d", st);
	rawrpc_buf_free(&call);
	EXPECT(on_disk(n4), "%s not on disk: answered from the DRC entry of "
	       "another call", n4);

	/* Clean up with fresh xids. */
	x2 = rawrpc_xid();
	put_remove(&call, x2, n3);
	st = send_once(a, &call, x2, "REMOVE n3");
	EXPECT(st == NFS3_OK, "REMOVE %s: status %d", n3, st);
	rawrpc_buf_free(&call);
	x2 = rawrpc_xid();
	put_remove(&call, x2, n4);
	st = send_once(a, &call, x2, "REMOVE n4");
	EXPECT(st == NFS3_OK, "REMOVE %s: status %d", n4, st);
	rawrpc_buf_free(&call);
	expect_moved(&before, 4, 4, 0, "same xid, other call");
out:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
}

/* Read the environment and mount the export through the proxy. */
static int suite_init(void)
{
	uint16_t mport = rawrpc_env_port("NFSC_PROXY_MOUNT_PORT");
	int fd;

	T.nfs_port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	T.export_dir = getenv("NFSC_EXPORT_DIR");
	if (T.nfs_port == 0 || mport == 0 || T.export_dir == NULL) {
		fprintf(stderr, "drc: run me under harness.sh\n");
		return -1;
	}
	fd = rawrpc_connect(mport);
	if (fd < 0 || rawrpc_mnt(fd, rawrpc_xid(), "/export", T.root,
				 &T.root_len) != 0) {
		fprintf(stderr, "drc: MNT /export through the proxy failed\n");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("drc", suite_init, NULL);

	if (s == NULL ||
	    CU_add_test(s, "retransmissions_run_once",
			test_retransmissions_run_once) == NULL ||
	    CU_add_test(s, "same_xid_other_call_runs_again",
			test_same_xid_other_call_runs_again) == NULL)
		return -1;
	return 0;
}
