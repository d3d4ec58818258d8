/* SPDX-License-Identifier: MIT */
/*
 * test_hostile: malformed ONC RPC records against the running proxy.
 *
 * Runs under harness.sh (NFSC_PROXY_NFS_PORT, NFSC_PROXY_MOUNT_PORT,
 * NFSC_METRICS_ADDR, NFSC_PROXY_PID). Every case opens its own TCP
 * connection, sends one hostile record (or byte stream) and asserts the
 * exact outcome: a named RPC error (RFC 5531 section 9), an NFS status
 * (RFC 1813), or that the proxy closed the connection. Each case bumps the
 * count of rejections it should cause by reason; at the end the deltas of
 * nfscached_rpc_rejected_total{reason=...} and
 * nfscached_rpc_records_oversize_total must equal those counts exactly.
 * Every CHECK_EVERY cases a well-behaved client on its own long-lived
 * connection must still get a NULL and a GETATTR of the export root.
 * The MOUNT port answers NFS calls PROG_UNAVAIL (it serves MOUNT only).
 * File names that are paths ("../x", "a/b", "/") get NFS3ERR_ACCES from
 * every procedure that takes a name, none of them reaches the upstream,
 * and nfscached_nfs3_bad_names_total counts them; names over 255 bytes
 * and symlink targets from 4096 bytes are NFS3ERR_NAMETOOLONG. A
 * credential the upstream refuses (uid 4294967295) gets NFS3ERR_ACCES.
 *
 * Random cases use a fixed seed (HOSTILE_SEED, or the environment variable
 * of that name) so failures reproduce.
 *
 * With RAWRPC_DIRECT=1 the same cases go to Ganesha (NFSC_DIRECT_*) and the
 * metrics and proxy-specific checks are skipped: a way to check the client
 * side of this test against a reference server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cunit_main.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"

#define HOSTILE_SEED		0x6e667363u	/* "nfsc" */
#define CLOSE_TIMEOUT_MS	5000
#define CHECK_EVERY		5
#define DEFAULT_MAX_RECORD	1114112u
#define MIN_CASES		200

/* Expected rejection kinds, with their metric reason label and reply. */
enum kind {
	K_RPC_MISMATCH,
	K_PROG_UNAVAIL,
	K_PROG_MISMATCH,
	K_PROC_UNAVAIL,
	K_GARBAGE,
	K_BADCRED,
	K_TOOWEAK,
	K_COUNT
};

static const struct kind_info {
	const char *reason;
	uint32_t stat;		/* MSG_ACCEPTED or MSG_DENIED */
	uint32_t code;		/* accept_stat or reject_stat */
	uint32_t auth;		/* auth_stat for AUTH_ERROR */
} kinds[K_COUNT] = {
	[K_RPC_MISMATCH]  = { "rpc_mismatch", MSG_DENIED, RPC_MISMATCH, 0 },
	[K_PROG_UNAVAIL]  = { "prog_unavail", MSG_ACCEPTED, PROG_UNAVAIL, 0 },
	[K_PROG_MISMATCH] = { "prog_mismatch", MSG_ACCEPTED, PROG_MISMATCH, 0 },
	[K_PROC_UNAVAIL]  = { "proc_unavail", MSG_ACCEPTED, PROC_UNAVAIL, 0 },
	[K_GARBAGE]       = { "garbage_args", MSG_ACCEPTED, GARBAGE_ARGS, 0 },
	[K_BADCRED]       = { "auth_badcred", MSG_DENIED, AUTH_ERROR, AUTH_BADCRED },
	[K_TOOWEAK]       = { "auth_tooweak", MSG_DENIED, AUTH_ERROR, AUTH_TOOWEAK },
};

/* Test-wide state, set up by suite_init. */
static struct {
	bool direct;			/* RAWRPC_DIRECT: Ganesha, no metrics */
	uint16_t nfs_port;
	uint16_t mount_port;
	uint32_t max_record;
	int ok_fd;			/* the well-behaved client */
	uint8_t root[FHSIZE3];
	size_t root_len;
	char *metrics_before;
	unsigned expected[K_COUNT];
	unsigned expected_oversize;
	unsigned bad_names;		/* calls with a name that is not one
					 * component */
	unsigned lookups_sent;		/* LOOKUPs meant to go upstream */
	unsigned cases;
	uint64_t rng;
} T = { .ok_fd = -1 };

/* One formatted assertion (tcheck.h). */
#define EXPECT(ok, ...) tcheck((ok), __FILE__, __LINE__, __VA_ARGS__)

/* Draw the next pseudo-random 64-bit value (xorshift64*). */
static uint64_t rnd(void)
{
	T.rng ^= T.rng >> 12;
	T.rng ^= T.rng << 25;
	T.rng ^= T.rng >> 27;
	return T.rng * 0x2545f4914f6cdd1dull;
}

/* Fill p[0..len) with pseudo-random bytes. */
static void rnd_bytes(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(rnd() >> 32);
}

/* Read max_record_size from the proxy's config file, else the default. */
static uint32_t conf_max_record(void)
{
	const char *path = getenv("NFSC_PROXY_CONF");
	char line[256];
	unsigned long v;
	FILE *f;
	uint32_t max = DEFAULT_MAX_RECORD;

	if (path == NULL || (f = fopen(path, "r")) == NULL)
		return max;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, " max_record_size = %lu", &v) == 1)
			max = (uint32_t)v;
	fclose(f);
	return max;
}

/* Connect to port or record a failure. Returns the fd or -1. */
static int connect_or_fail(uint16_t port, const char *what)
{
	int fd = rawrpc_connect(port);

	EXPECT(fd >= 0, "%s: connect to port %u: %s", what, port,
	       strerror(errno));
	return fd;
}

/* The well-behaved client: a NULL and a GETATTR of the root, both OK. */
static void check_normal_client(const char *after)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply r;
	GETATTR3args a;
	GETATTR3res res;
	enum rawrpc_io io;

	io = rawrpc_call(T.ok_fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3,
			 NFSPROC3_NULL, &root, NULL, NULL, NULL, NULL, &r);
	EXPECT(io == RAWRPC_OK && r.stat == MSG_ACCEPTED && r.accept == SUCCESS,
	       "normal client NULL after %s: io %d stat %u accept %u", after,
	       io, r.stat, r.accept);
	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.object.data.data_len = (u_int)T.root_len;
	a.object.data.data_val = (char *)T.root;
	io = rawrpc_call(T.ok_fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3,
			 NFSPROC3_GETATTR, &root, (xdrproc_t)xdr_GETATTR3args,
			 &a, (xdrproc_t)xdr_GETATTR3res, &res, &r);
	EXPECT(io == RAWRPC_OK && r.stat == MSG_ACCEPTED &&
	       r.accept == SUCCESS && res.status == NFS3_OK &&
	       res.GETATTR3res_u.resok.obj_attributes.type == NF3DIR,
	       "normal client GETATTR(root) after %s: io %d accept %u "
	       "status %d", after, io, r.accept, (int)res.status);
	if (io == RAWRPC_OK)
		xdr_free((xdrproc_t)xdr_GETATTR3res, &res);
}

/* Count one hostile case; every CHECK_EVERY, probe the normal client. */
static void case_done(const char *what)
{
	T.cases++;
	if (T.cases % CHECK_EVERY == 0)
		check_normal_client(what);
}

/* The version a PROG_MISMATCH reply names: 3 unless a test says. */
static uint32_t mismatch_vers = 3;

/* Send call as one record on a fresh connection to port; expect kind. */
static void expect_reject(uint16_t port, const struct rawrpc_buf *call,
			  uint32_t xid, enum kind k, const char *what)
{
	const struct kind_info *ki = &kinds[k];
	struct rawrpc_reply r;
	enum rawrpc_io io;
	uint8_t *rec = NULL;
	size_t len = 0;
	int fd;

	fd = connect_or_fail(port, what);
	if (fd < 0)
		goto out;
	io = rawrpc_roundtrip(fd, call, xid, RAWRPC_TIMEOUT_MS, &r, &rec, &len);
	EXPECT(io == RAWRPC_OK, "%s: expected %s reply, got io %d", what,
	       ki->reason, io);
	if (io != RAWRPC_OK)
		goto out_close;
	EXPECT(r.stat == ki->stat, "%s: reply_stat %u, expected %u (%s)", what,
	       r.stat, ki->stat, ki->reason);
	if (r.stat == MSG_ACCEPTED) {
		EXPECT(r.accept == ki->code, "%s: accept_stat %u, expected %u",
		       what, r.accept, ki->code);
		EXPECT(r.res_off == len, "%s: %zu bytes after accept_stat",
		       what, len - r.res_off);
	} else if (r.stat == MSG_DENIED) {
		EXPECT(r.reject == ki->code, "%s: reject_stat %u, expected %u",
		       what, r.reject, ki->code);
		if (r.reject == AUTH_ERROR && ki->code == AUTH_ERROR)
			EXPECT(r.auth == ki->auth, "%s: auth_stat %u, "
			       "expected %u", what, r.auth, ki->auth);
	}
	if (k == K_PROG_MISMATCH && r.stat == MSG_ACCEPTED &&
	    r.accept == PROG_MISMATCH)
		/* NFS, MOUNT and NFSACL are served at version 3, NLM at 4 */
		EXPECT(r.low == mismatch_vers && r.high == mismatch_vers,
		       "%s: PROG_MISMATCH %u..%u, expected %u..%u", what, r.low,
		       r.high, mismatch_vers, mismatch_vers);
	if (k == K_RPC_MISMATCH && r.stat == MSG_DENIED &&
	    r.reject == RPC_MISMATCH)
		EXPECT(r.low == 2 && r.high == 2, "%s: RPC_MISMATCH %u..%u, "
		       "expected 2..2", what, r.low, r.high);
out_close:
	close(fd);
out:
	free(rec);
	T.expected[k]++;
	case_done(what);
}

/*
 * Send bytes[0..len) as they are on a fresh connection; if shut, half-close
 * our side. Expect the proxy to close without a single byte of reply. An
 * oversize case also counts towards nfscached_rpc_records_oversize_total.
 */
static void expect_closed(uint16_t port, const void *bytes, size_t len,
			  bool shut, bool oversize, const char *what)
{
	enum rawrpc_io io;
	int fd;

	fd = connect_or_fail(port, what);
	if (fd >= 0) {
		/* A send that fails because the proxy already closed is fine. */
		(void)rawrpc_send_bytes(fd, bytes, len);
		if (shut)
			shutdown(fd, SHUT_WR);
		io = rawrpc_wait_closed(fd, CLOSE_TIMEOUT_MS);
		EXPECT(io == RAWRPC_CLOSED, "%s: expected the connection "
		       "closed without a reply, got io %d (%s)", what, io,
		       io == RAWRPC_OK ? "bytes arrived" : "still open");
		close(fd);
	}
	if (oversize)
		T.expected_oversize++;
	case_done(what);
}

/* Build a call header into b with AUTH_SYS root. */
static void put_hdr(struct rawrpc_buf *b, uint32_t xid, uint32_t prog,
		    uint32_t vers, uint32_t proc)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);

	rawrpc_put_call(b, xid, prog, vers, proc, &root);
}

/* A call with no arguments to prog/vers/proc on port; expect kind. */
static void call_expect(uint16_t port, uint32_t rpcvers, uint32_t prog,
			uint32_t vers, uint32_t proc, enum kind k,
			const char *what)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid();

	rawrpc_buf_init(&b);
	rawrpc_put_call_v(&b, xid, rpcvers, prog, vers, proc, &root);
	expect_reject(port, &b, xid, k, what);
	rawrpc_buf_free(&b);
}

/* --- suite setup --- */

/* Take a metrics snapshot (proxy mode; tmetrics_get); NULL, a failed
 * assertion recorded, when it cannot be read. */
static char *metrics_snapshot(void)
{
	return tmetrics_get();
}

/* Read the environment, mount the export and snapshot the metrics. */
static int suite_init(void)
{
	const char *seed = getenv("HOSTILE_SEED");
	int fd;

	T.direct = getenv("RAWRPC_DIRECT") != NULL;
	T.nfs_port = rawrpc_env_port(T.direct ? "NFSC_DIRECT_NFS_PORT" :
					       "NFSC_PROXY_NFS_PORT");
	T.mount_port = rawrpc_env_port(T.direct ? "NFSC_DIRECT_MOUNT_PORT" :
						 "NFSC_PROXY_MOUNT_PORT");
	T.max_record = conf_max_record();
	T.rng = seed ? strtoull(seed, NULL, 0) : HOSTILE_SEED;
	if (T.rng == 0)
		T.rng = HOSTILE_SEED;
	fprintf(stderr, "hostile: seed %#llx, nfs port %u, mount port %u, "
		"max record %u%s\n", (unsigned long long)T.rng, T.nfs_port,
		T.mount_port, T.max_record, T.direct ? " (direct)" : "");
	if (T.nfs_port == 0 || T.mount_port == 0)
		return -1;
	fd = rawrpc_connect(T.mount_port);
	if (fd < 0 || rawrpc_mnt(fd, rawrpc_xid(), "/export", T.root,
				 &T.root_len) != 0) {
		fprintf(stderr, "hostile: MNT /export failed\n");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	T.ok_fd = rawrpc_connect(T.nfs_port);
	if (T.ok_fd < 0)
		return -1;
	if (!T.direct) {
		T.metrics_before = metrics_snapshot();
		if (T.metrics_before == NULL) {
			fprintf(stderr, "hostile: cannot read /metrics\n");
			return -1;
		}
	}
	return 0;
}

/* Close the normal client and drop the snapshot. */
static int suite_clean(void)
{
	if (T.ok_fd >= 0)
		close(T.ok_fd);
	free(T.metrics_before);
	return 0;
}

/* --- RPC header: version, program, version of program, procedure --- */

/* rpcvers other than 2 is MSG_DENIED RPC_MISMATCH 2..2 (RFC 5531 s. 9). */
static void test_rpc_version(void)
{
	static const uint32_t bad[] = { 3, 0, 1, 0xffffffffu };
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "rpcvers %u", bad[i]);
		call_expect(T.nfs_port, bad[i], NFS_PROGRAM, NFS_V3,
			    NFSPROC3_NULL, K_RPC_MISMATCH, what);
	}
	call_expect(T.mount_port, 3, MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_NULL,
		    K_RPC_MISMATCH, "mount port: rpcvers 3");
}

/* Programs the proxy does not serve are PROG_UNAVAIL; the side
 * programs it serves on the NFS port (NLM v4 100021, NFSACL v3 100227)
 * are PROG_MISMATCH at other versions, and not on the MOUNT port. */
static void test_unknown_program(void)
{
	static const uint32_t progs[] = { 100004, 0, 0xffffffffu, 100000,
					  395000 };
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		snprintf(what, sizeof(what), "program %u", progs[i]);
		call_expect(T.nfs_port, 2, progs[i], 3, 0, K_PROG_UNAVAIL,
			    what);
	}
	call_expect(T.mount_port, 2, 100004, 3, 0, K_PROG_UNAVAIL,
		    "mount port: program 100004");
	call_expect(T.mount_port, 2, 100021, 4, 0, K_PROG_UNAVAIL,
		    "mount port: program 100021 (NLM)");
	if (T.direct)
		return;
	mismatch_vers = 4;
	call_expect(T.nfs_port, 2, 100021, 3, 0, K_PROG_MISMATCH,
		    "NLM version 3");
	mismatch_vers = 3;
	call_expect(T.nfs_port, 2, 100227, 2, 0, K_PROG_MISMATCH,
		    "NFSACL version 2");
	call_expect(T.mount_port, 2, 100227, 3, 0, K_PROG_UNAVAIL,
		    "mount port: program 100227 (NFSACL)");
	/* mount_port serves MOUNT only: NFS itself is not there. */
	call_expect(T.mount_port, 2, NFS_PROGRAM, NFS_V3, NFSPROC3_NULL,
		    K_PROG_UNAVAIL, "mount port: NFS NULL");
	call_expect(T.mount_port, 2, NFS_PROGRAM, NFS_V3, NFSPROC3_FSINFO,
		    K_PROG_UNAVAIL, "mount port: NFS FSINFO");
}

/* NFS versions other than 3 and MOUNT versions other than 3 are
 * PROG_MISMATCH with low = high = 3. */
static void test_program_version(void)
{
	static const uint32_t nfsv[] = { 2, 4, 0, 1, 5, 0xffffffffu };
	static const uint32_t mntv[] = { 1, 2, 4 };
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(nfsv) / sizeof(nfsv[0]); i++) {
		snprintf(what, sizeof(what), "NFS version %u", nfsv[i]);
		call_expect(T.nfs_port, 2, NFS_PROGRAM, nfsv[i], 0,
			    K_PROG_MISMATCH, what);
	}
	for (i = 0; i < sizeof(mntv) / sizeof(mntv[0]); i++) {
		snprintf(what, sizeof(what), "MOUNT version %u", mntv[i]);
		call_expect(T.mount_port, 2, MOUNT_PROGRAM, mntv[i], 0,
			    K_PROG_MISMATCH, what);
		snprintf(what, sizeof(what), "MOUNT version %u on the NFS "
			 "port", mntv[i]);
		call_expect(T.nfs_port, 2, MOUNT_PROGRAM, mntv[i], 0,
			    K_PROG_MISMATCH, what);
	}
}

/* Procedures past the last one are PROC_UNAVAIL. */
static void test_unknown_procedure(void)
{
	static const uint32_t nfsp[] = { 22, 23, 1000, 0xffffffffu };
	static const uint32_t mntp[] = { 6, 7, 0xffffffffu };
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(nfsp) / sizeof(nfsp[0]); i++) {
		snprintf(what, sizeof(what), "NFS procedure %u", nfsp[i]);
		call_expect(T.nfs_port, 2, NFS_PROGRAM, NFS_V3, nfsp[i],
			    K_PROC_UNAVAIL, what);
	}
	for (i = 0; i < sizeof(mntp) / sizeof(mntp[0]); i++) {
		snprintf(what, sizeof(what), "MOUNT procedure %u", mntp[i]);
		call_expect(T.mount_port, 2, MOUNT_PROGRAM, MOUNT_V3, mntp[i],
			    K_PROC_UNAVAIL, what);
	}
	call_expect(T.nfs_port, 2, MOUNT_PROGRAM, MOUNT_V3, 6, K_PROC_UNAVAIL,
		    "MOUNT procedure 6 on the NFS port");
}

/* --- credentials --- */

/* A GETATTR(root) call whose credential is flavor + body as given. */
static void put_getattr_rawcred(struct rawrpc_buf *b, uint32_t xid,
				uint32_t flavor, const struct rawrpc_buf *body)
{
	rawrpc_put_u32(b, xid);
	rawrpc_put_u32(b, CALL);
	rawrpc_put_u32(b, 2);
	rawrpc_put_u32(b, NFS_PROGRAM);
	rawrpc_put_u32(b, NFS_V3);
	rawrpc_put_u32(b, NFSPROC3_GETATTR);
	rawrpc_put_u32(b, flavor);
	rawrpc_put_opaque(b, body->data, body->len);
	rawrpc_put_u32(b, AUTH_NONE);
	rawrpc_put_u32(b, 0);
	rawrpc_put_opaque(b, T.root, T.root_len);
}

/* Send GETATTR(root) with credential flavor/body; expect kind. */
static void cred_expect(uint32_t flavor, const struct rawrpc_buf *body,
			enum kind k, const char *what)
{
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid();

	rawrpc_buf_init(&b);
	put_getattr_rawcred(&b, xid, flavor, body);
	expect_reject(T.nfs_port, &b, xid, k, what);
	rawrpc_buf_free(&b);
}

/* Append an AUTH_SYS body: stamp, machine, uid 0, gid 0, ngids, gids. */
static void put_sys_body(struct rawrpc_buf *b, size_t machine_len,
			 uint32_t ngids, uint32_t gids_present)
{
	char machine[512];
	uint32_t i;

	memset(machine, 'm', sizeof(machine));
	rawrpc_put_u32(b, 42);
	rawrpc_put_opaque(b, machine, machine_len);
	rawrpc_put_u32(b, 0);
	rawrpc_put_u32(b, 0);
	rawrpc_put_u32(b, ngids);
	for (i = 0; i < gids_present; i++)
		rawrpc_put_u32(b, 1000 + i);
}

/* Malformed AUTH_SYS credentials are AUTH_ERROR AUTH_BADCRED (RFC 5531
 * appendix A: gids<16>, machinename<255>, opaque_auth body<400>). */
static void test_auth_sys_badcred(void)
{
	static const struct {
		size_t machine;
		uint32_t ngids, present;
		size_t cut;		/* body bytes kept, 0 = all */
		size_t junk;		/* bytes appended after */
		const char *what;
	} c[] = {
		{ 6, 17, 17, 0, 0, "AUTH_SYS with 17 gids" },
		{ 6, 32, 32, 0, 0, "AUTH_SYS with 32 gids" },
		{ 6, 0xffffffffu, 2, 0, 0, "AUTH_SYS ngids 0xffffffff" },
		{ 256, 1, 1, 0, 0, "AUTH_SYS machine name of 256 bytes" },
		{ 6, 3, 1, 0, 0, "AUTH_SYS ngids 3, 1 gid present" },
		{ 6, 1, 1, 4, 0, "AUTH_SYS body cut after the stamp" },
		{ 12, 1, 1, 12, 0, "AUTH_SYS body cut inside the machine" },
		{ 6, 1, 1, 20, 0, "AUTH_SYS body cut after the uid" },
		{ 6, 1, 1, 24, 0, "AUTH_SYS body cut before ngids" },
		{ 6, 0, 0, 2, 0, "AUTH_SYS body of 2 bytes" },
		{ 255, 16, 16, 0, 64, "AUTH_SYS body of 404 bytes" },
	};
	struct rawrpc_buf body;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rawrpc_buf_init(&body);
		put_sys_body(&body, c[i].machine, c[i].ngids, c[i].present);
		if (c[i].cut != 0 && c[i].cut < body.len)
			body.len = c[i].cut;
		while (c[i].junk > 0 && body.len < 404)
			rawrpc_put_u32(&body, 0);
		cred_expect(AUTH_SYS, &body, K_BADCRED, c[i].what);
		rawrpc_buf_free(&body);
	}
	rawrpc_buf_init(&body);
	cred_expect(AUTH_SYS, &body, K_BADCRED, "AUTH_SYS empty body");
	rawrpc_buf_free(&body);
}

/* A MNT with 17 gids on the MOUNT port: AUTH_BADCRED there too. */
static void test_auth_sys_badcred_mount(void)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid(), i;

	cred.ngids = 17;
	for (i = 0; i < cred.ngids; i++)
		cred.gids[i] = i;
	rawrpc_buf_init(&b);
	rawrpc_put_call(&b, xid, MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_MNT, &cred);
	rawrpc_put_opaque(&b, "/export", 7);
	expect_reject(T.mount_port, &b, xid, K_BADCRED,
		      "mount port: MNT with 17 gids");
	rawrpc_buf_free(&b);
}

/*
 * Flavors other than AUTH_NONE and AUTH_SYS: AUTH_ERROR AUTH_TOOWEAK, the
 * ONC RPC server's answer to a flavor the service will not accept
 * (svcerr_weakauth; RFC 2623 section 2.3 uses it for NFS flavor policy).
 */
static void test_auth_tooweak(void)
{
	static const uint32_t flavors[] = { RPCSEC_GSS, 3 /* AUTH_DH */,
					    2 /* AUTH_SHORT */, 0x12345678u };
	struct rawrpc_buf body;
	char what[96];
	size_t i;

	for (i = 0; i < sizeof(flavors) / sizeof(flavors[0]); i++) {
		rawrpc_buf_init(&body);
		/* An RPCSEC_GSS-shaped body (RFC 2203 5.3.1): version 1,
		 * RPCSEC_GSS_DATA, seq, service none, a handle. */
		rawrpc_put_u32(&body, 1);
		rawrpc_put_u32(&body, 0);
		rawrpc_put_u32(&body, 7);
		rawrpc_put_u32(&body, 1);
		rawrpc_put_opaque(&body, "handle!!", 8);
		snprintf(what, sizeof(what), "credential flavor %u",
			 flavors[i]);
		cred_expect(flavors[i], &body, K_TOOWEAK, what);
		rawrpc_buf_free(&body);
	}
}

/* --- arguments --- */

/* Well-formed argument layouts per procedure, one letter per XDR item:
 * F handle, N name, P "/export", H hyper, W word, V 8-byte verifier,
 * S sattr3 with nothing set (6 words), D opaque data (8 bytes). */
static const struct proc_args {
	uint32_t prog;
	uint32_t proc;
	const char *name;
	const char *layout;
} proc_args[] = {
	{ NFS_PROGRAM, NFSPROC3_GETATTR, "GETATTR", "F" },
	{ NFS_PROGRAM, NFSPROC3_SETATTR, "SETATTR", "FSW" },
	{ NFS_PROGRAM, NFSPROC3_LOOKUP, "LOOKUP", "FN" },
	{ NFS_PROGRAM, NFSPROC3_ACCESS, "ACCESS", "FW" },
	{ NFS_PROGRAM, NFSPROC3_READLINK, "READLINK", "F" },
	{ NFS_PROGRAM, NFSPROC3_READ, "READ", "FHW" },
	{ NFS_PROGRAM, NFSPROC3_WRITE, "WRITE", "FHWWD" },
	{ NFS_PROGRAM, NFSPROC3_CREATE, "CREATE", "FNWS" },
	{ NFS_PROGRAM, NFSPROC3_MKDIR, "MKDIR", "FNS" },
	{ NFS_PROGRAM, NFSPROC3_SYMLINK, "SYMLINK", "FNSN" },
	{ NFS_PROGRAM, NFSPROC3_MKNOD, "MKNOD", "FNW" },
	{ NFS_PROGRAM, NFSPROC3_REMOVE, "REMOVE", "FN" },
	{ NFS_PROGRAM, NFSPROC3_RMDIR, "RMDIR", "FN" },
	{ NFS_PROGRAM, NFSPROC3_RENAME, "RENAME", "FNFN" },
	{ NFS_PROGRAM, NFSPROC3_LINK, "LINK", "FFN" },
	{ NFS_PROGRAM, NFSPROC3_READDIR, "READDIR", "FHVW" },
	{ NFS_PROGRAM, NFSPROC3_READDIRPLUS, "READDIRPLUS", "FHVWW" },
	{ NFS_PROGRAM, NFSPROC3_FSSTAT, "FSSTAT", "F" },
	{ NFS_PROGRAM, NFSPROC3_FSINFO, "FSINFO", "F" },
	{ NFS_PROGRAM, NFSPROC3_PATHCONF, "PATHCONF", "F" },
	{ NFS_PROGRAM, NFSPROC3_COMMIT, "COMMIT", "FHW" },
	{ MOUNT_PROGRAM, MOUNTPROC3_MNT, "MNT", "P" },
	{ MOUNT_PROGRAM, MOUNTPROC3_UMNT, "UMNT", "P" },
};

/* Append arguments following layout (see proc_args). */
static void put_layout(struct rawrpc_buf *b, const char *layout)
{
	static const uint8_t zeros[8];
	int i;

	for (; *layout != '\0'; layout++) {
		switch (*layout) {
		case 'F': rawrpc_put_opaque(b, T.root, T.root_len); break;
		case 'N': rawrpc_put_opaque(b, "rawrpc-name", 11); break;
		case 'P': rawrpc_put_opaque(b, "/export", 7); break;
		case 'H': rawrpc_put_u64(b, 0); break;
		case 'W': rawrpc_put_u32(b, 0); break;
		case 'V': rawrpc_put_raw(b, zeros, 8); break;
		case 'D': rawrpc_put_opaque(b, "12345678", 8); break;
		case 'S':
			for (i = 0; i < 6; i++)
				rawrpc_put_u32(b, 0);
			break;
		}
	}
}

/* The port serving prog. */
static uint16_t port_of(uint32_t prog)
{
	return prog == MOUNT_PROGRAM ? T.mount_port : T.nfs_port;
}

/* Every strict prefix of well-formed arguments fails to decode, so each
 * is GARBAGE_ARGS: cut at 0, 4, the middle, 4 and 1 bytes short. */
static void test_truncated_args(void)
{
	struct rawrpc_buf args, b;
	size_t i, j, cuts[5], hdr;
	char what[128];
	uint32_t xid;

	for (i = 0; i < sizeof(proc_args) / sizeof(proc_args[0]); i++) {
		const struct proc_args *p = &proc_args[i];

		rawrpc_buf_init(&args);
		put_layout(&args, p->layout);
		cuts[0] = 0;
		cuts[1] = 4;
		cuts[2] = (args.len / 2) & ~(size_t)3;
		cuts[3] = args.len - 4;
		cuts[4] = args.len - 1;
		for (j = 0; j < 5; j++) {
			if ((j > 0 && cuts[j] <= cuts[j - 1]) ||
			    cuts[j] >= args.len)
				continue;
			xid = rawrpc_xid();
			rawrpc_buf_init(&b);
			put_hdr(&b, xid, p->prog, 3, p->proc);
			hdr = b.len;
			rawrpc_put_raw(&b, args.data, cuts[j]);
			snprintf(what, sizeof(what), "%s args cut to %zu of "
				 "%zu bytes", p->name, b.len - hdr, args.len);
			expect_reject(port_of(p->prog), &b, xid, K_GARBAGE,
				      what);
			rawrpc_buf_free(&b);
		}
		rawrpc_buf_free(&args);
	}
}

/* A call header cut short after msg_type CALL: GARBAGE_ARGS, as
 * proto/rpcmsg.h specifies (RPCMSG_GARBAGE, "cut short after the xid"). */
static void test_truncated_header(void)
{
	struct rawrpc_buf b;
	size_t cut;
	char what[96];
	uint32_t xid;

	for (cut = 12; cut <= 36; cut += 8) {
		xid = rawrpc_xid();
		rawrpc_buf_init(&b);
		put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_GETATTR);
		b.len = cut;
		snprintf(what, sizeof(what), "call header cut to %zu bytes",
			 cut);
		expect_reject(T.nfs_port, &b, xid, K_GARBAGE, what);
		rawrpc_buf_free(&b);
	}
}

/* Start a GARBAGE_ARGS case: header for prog/proc into b. */
static uint32_t start_case(struct rawrpc_buf *b, uint32_t prog, uint32_t proc)
{
	uint32_t xid = rawrpc_xid();

	rawrpc_buf_init(b);
	put_hdr(b, xid, prog, 3, proc);
	return xid;
}

/* Finish a GARBAGE_ARGS case started with start_case. */
static void finish_case(struct rawrpc_buf *b, uint32_t xid, uint32_t prog,
			const char *what)
{
	expect_reject(port_of(prog), b, xid, K_GARBAGE, what);
	rawrpc_buf_free(b);
}

/* Lengths inside arguments that exceed their bound or the record. */
static void test_huge_lengths(void)
{
	static uint8_t bytes[1100];
	struct rawrpc_buf b;
	uint32_t xid;

	memset(bytes, 'a', sizeof(bytes));
	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_GETATTR);
	rawrpc_put_opaque(&b, bytes, 65);
	finish_case(&b, xid, NFS_PROGRAM, "GETATTR handle of 65 bytes");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_GETATTR);
	rawrpc_put_u32(&b, 0xffffffffu);
	rawrpc_put_raw(&b, bytes, 64);
	finish_case(&b, xid, NFS_PROGRAM, "GETATTR handle length 0xffffffff");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_LOOKUP);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_u32(&b, 0x7fffffffu);
	rawrpc_put_raw(&b, bytes, 16);
	finish_case(&b, xid, NFS_PROGRAM, "LOOKUP name length 0x7fffffff");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_LOOKUP);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_u32(&b, 0xffffffffu);
	finish_case(&b, xid, NFS_PROGRAM, "LOOKUP name length 0xffffffff");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_WRITE);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_u64(&b, 0);
	rawrpc_put_u32(&b, 0xffffffffu);
	rawrpc_put_u32(&b, FILE_SYNC);
	rawrpc_put_u32(&b, 0xffffffffu);
	rawrpc_put_raw(&b, bytes, 256);
	finish_case(&b, xid, NFS_PROGRAM, "WRITE data length 0xffffffff");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_WRITE);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_u64(&b, 0);
	rawrpc_put_u32(&b, 4096);
	rawrpc_put_u32(&b, UNSTABLE);
	rawrpc_put_u32(&b, T.max_record);
	rawrpc_put_raw(&b, bytes, 1024);
	finish_case(&b, xid, NFS_PROGRAM, "WRITE data length max_record");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_SYMLINK);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_opaque(&b, "l", 1);
	put_layout(&b, "S");
	rawrpc_put_u32(&b, 0xfffffff0u);
	finish_case(&b, xid, NFS_PROGRAM, "SYMLINK path length 0xfffffff0");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_RENAME);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_opaque(&b, "a", 1);
	rawrpc_put_u32(&b, 0x80000000u);
	finish_case(&b, xid, NFS_PROGRAM, "RENAME second handle 2^31 bytes");

	xid = start_case(&b, NFS_PROGRAM, NFSPROC3_CREATE);
	rawrpc_put_opaque(&b, T.root, T.root_len);
	rawrpc_put_opaque(&b, "c", 1);
	rawrpc_put_u32(&b, 3);
	rawrpc_put_raw(&b, bytes, 8);
	finish_case(&b, xid, NFS_PROGRAM, "CREATE createmode 3 (no such arm)");

	xid = start_case(&b, MOUNT_PROGRAM, MOUNTPROC3_MNT);
	rawrpc_put_opaque(&b, bytes, MNTPATHLEN + 1);
	finish_case(&b, xid, MOUNT_PROGRAM, "MNT path of 1025 bytes");

	xid = start_case(&b, MOUNT_PROGRAM, MOUNTPROC3_MNT);
	rawrpc_put_u32(&b, 0xffffffffu);
	rawrpc_put_raw(&b, bytes, 8);
	finish_case(&b, xid, MOUNT_PROGRAM, "MNT path length 0xffffffff");
}

/* --- random records --- */

/* Send call (xid) on a fresh connection and return the nfsstat3 of its
 * NFS reply, or -1 (counted as a failure) if no NFS reply came. */
static int call_status(const struct rawrpc_buf *call, uint32_t xid,
		       const char *what)
{
	struct rawrpc_reply r;
	enum rawrpc_io io;
	uint8_t *rec = NULL;
	size_t len = 0;
	nfsstat3 st = NFS3_OK;
	int fd, ret = -1;

	fd = connect_or_fail(T.nfs_port, what);
	if (fd < 0)
		return -1;
	io = rawrpc_roundtrip(fd, call, xid, RAWRPC_TIMEOUT_MS, &r, &rec, &len);
	EXPECT(io == RAWRPC_OK && r.stat == MSG_ACCEPTED && r.accept == SUCCESS,
	       "%s: expected an NFS reply, got io %d stat %u accept %u", what,
	       io, r.stat, r.accept);
	if (io == RAWRPC_OK && r.stat == MSG_ACCEPTED && r.accept == SUCCESS) {
		EXPECT(rawrpc_decode(rec, len, r.res_off, (xdrproc_t)xdr_nfsstat3,
				     &st) == 0, "%s: no nfsstat3", what);
		ret = (int)st;
	}
	close(fd);
	free(rec);
	return ret;
}

/* Send call; expect an accepted reply whose nfsstat3 is BADHANDLE or
 * STALE (RFC 1813 section 2.6: a handle the server cannot use). */
static void expect_badfh(const struct rawrpc_buf *call, uint32_t xid,
			 const char *what)
{
	int st = call_status(call, xid, what);

	if (st >= 0)
		EXPECT(st == NFS3ERR_BADHANDLE || st == NFS3ERR_STALE,
		       "%s: status %d, expected BADHANDLE or STALE", what, st);
	case_done(what);
}

/* Framed records of random bytes that are not CALLs: the proxy closes. */
static void test_random_records(void)
{
	uint8_t buf[4 + 128];
	uint32_t mark, mtype;
	size_t len;
	char what[96];
	int i;

	for (i = 0; i < 25; i++) {
		do {
			len = (size_t)(rnd() % 128);
			rnd_bytes(buf + 4, len);
			memcpy(&mtype, buf + 8, 4);
		} while (len >= 8 && mtype == 0);	/* CALL: redraw */
		mark = htonl(0x80000000u | (uint32_t)len);
		memcpy(buf, &mark, 4);
		snprintf(what, sizeof(what), "random record #%d of %zu bytes",
			 i, len);
		expect_closed(T.nfs_port, buf, 4 + len, false, false, what);
	}
}

/* GETATTR with random argument bytes: GARBAGE_ARGS when they do not
 * decode as an nfs_fh3, else a handle the proxy never issued. */
static void test_random_getattr_args(void)
{
	uint8_t args[96];
	struct rawrpc_buf b;
	uint32_t xid, hl;
	size_t n;
	char what[96];
	int i;

	for (i = 0; i < 25; i++) {
		n = (size_t)(rnd() % 80);
		rnd_bytes(args, n);
		if (n >= 4 && (rnd() & 1)) {
			hl = htonl((uint32_t)(rnd() % 72));
			memcpy(args, &hl, 4);
		}
		memcpy(&hl, args, 4);
		hl = ntohl(hl);
		xid = rawrpc_xid();
		rawrpc_buf_init(&b);
		put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_GETATTR);
		rawrpc_put_raw(&b, args, n);
		snprintf(what, sizeof(what), "random GETATTR args #%d (%zu "
			 "bytes, length word %u)", i, n, n >= 4 ? hl : 0);
		if (n < 4 || hl > NFS3_FHSIZE || 4 + ((hl + 3) & ~3u) > n)
			expect_reject(T.nfs_port, &b, xid, K_GARBAGE, what);
		else
			expect_badfh(&b, xid, what);
		rawrpc_buf_free(&b);
	}
}

/* Draw a record mark whose length exceeds max_record. */
static uint32_t oversize_mark(void)
{
	uint32_t m = (uint32_t)rnd();

	if ((m & 0x7fffffffu) <= T.max_record)
		m |= 0x40000000u;
	return m;
}

/* Unframed random bytes whose first word is an oversize mark, alone and
 * after a good NULL call: the proxy answers the NULL, then closes. */
static void test_random_streams(void)
{
	struct rawrpc_buf b;
	struct rawrpc_reply r;
	uint8_t junk[64], *rec;
	uint32_t mark, xid;
	size_t n, len;
	enum rawrpc_io io;
	char what[96];
	int i, fd;

	for (i = 0; i < 20; i++) {
		n = 4 + (size_t)(rnd() % 60);
		rnd_bytes(junk, n);
		mark = htonl(oversize_mark());
		memcpy(junk, &mark, 4);
		snprintf(what, sizeof(what), "random stream #%d, mark %#x", i,
			 ntohl(mark));
		expect_closed(i % 4 == 3 ? T.mount_port : T.nfs_port, junk, n,
			      false, true, what);
	}
	for (i = 0; i < 10; i++) {
		n = 4 + (size_t)(rnd() % 60);
		rnd_bytes(junk, n);
		mark = htonl(oversize_mark());
		memcpy(junk, &mark, 4);
		snprintf(what, sizeof(what), "NULL then random stream #%d", i);
		xid = rawrpc_xid();
		rawrpc_buf_init(&b);
		put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_NULL);
		fd = connect_or_fail(T.nfs_port, what);
		if (fd >= 0) {
			uint32_t m = htonl(0x80000000u | (uint32_t)b.len);

			rawrpc_send_bytes(fd, &m, 4);
			rawrpc_send_bytes(fd, b.data, b.len);
			rawrpc_send_bytes(fd, junk, n);
			io = rawrpc_recv_record(fd, RAWRPC_TIMEOUT_MS, &rec,
						&len);
			EXPECT(io == RAWRPC_OK &&
			       rawrpc_parse_reply(rec, len, &r) == 0 &&
			       r.xid == xid && r.stat == MSG_ACCEPTED &&
			       r.accept == SUCCESS, "%s: NULL reply io %d",
			       what, io);
			if (io == RAWRPC_OK)
				free(rec);
			io = rawrpc_wait_closed(fd, CLOSE_TIMEOUT_MS);
			EXPECT(io == RAWRPC_CLOSED, "%s: expected close, "
			       "got io %d", what, io);
			close(fd);
		}
		rawrpc_buf_free(&b);
		T.expected_oversize++;
		case_done(what);
	}
}

/* --- record marking --- */

/* Send a fragment mark (last or not) announcing len. */
static void put_mark(struct rawrpc_buf *b, bool last, uint32_t len)
{
	rawrpc_put_u32(b, (last ? 0x80000000u : 0) | len);
}

/* A NULL call record of exactly len bytes (header, then zero padding,
 * which NULL ignores; len must not cut the 72-byte header) split into
 * nfrag fragments; expect a NULL reply. */
static void expect_null_of_size(size_t len, int nfrag, const char *what)
{
	struct rawrpc_buf b, wire;
	struct rawrpc_reply r;
	enum rawrpc_io io;
	uint8_t *rec;
	size_t rlen, off = 0, part;
	uint32_t xid = rawrpc_xid();
	int fd, i;

	rawrpc_buf_init(&b);
	rawrpc_buf_init(&wire);
	put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_NULL);
	EXPECT(b.len <= len, "%s: %zu bytes cut the header", what, len);
	while (b.len < len)
		rawrpc_put_u32(&b, 0);
	b.len = len;
	for (i = 0; i < nfrag; i++) {
		part = i == nfrag - 1 ? len - off : len / (size_t)nfrag;
		put_mark(&wire, i == nfrag - 1, (uint32_t)part);
		rawrpc_put_raw(&wire, b.data + off, part);
		off += part;
	}
	fd = connect_or_fail(T.nfs_port, what);
	if (fd >= 0) {
		rawrpc_send_bytes(fd, wire.data, wire.len);
		io = rawrpc_recv_record(fd, RAWRPC_TIMEOUT_MS, &rec, &rlen);
		EXPECT(io == RAWRPC_OK && rawrpc_parse_reply(rec, rlen, &r) == 0
		       && r.xid == xid && r.stat == MSG_ACCEPTED &&
		       r.accept == SUCCESS, "%s: expected a NULL reply, io %d",
		       what, io);
		if (io == RAWRPC_OK)
			free(rec);
		close(fd);
	}
	rawrpc_buf_free(&b);
	rawrpc_buf_free(&wire);
}

/* Records longer than max_record_size: the proxy closes at the mark. */
static void test_oversize_marks(void)
{
	const uint32_t max = T.max_record;
	const struct {
		uint16_t port;
		uint32_t mark;
		const char *what;
	} c[] = {
		{ T.nfs_port, 0x80000000u | (max + 1), "mark max+1, last" },
		{ T.nfs_port, max + 1, "mark max+1, not last" },
		{ T.nfs_port, 0x7fffffffu, "mark 0x7fffffff" },
		{ T.nfs_port, 0xffffffffu, "mark 0xffffffff" },
		{ T.mount_port, 0x80000000u | (max + 1), "mount port: mark max+1" },
		{ T.mount_port, 0xffffffffu, "mount port: mark 0xffffffff" },
	};
	struct rawrpc_buf b;
	size_t i;
	int k;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rawrpc_buf_init(&b);
		rawrpc_put_u32(&b, c[i].mark);
		expect_closed(c[i].port, b.data, b.len, false, true, c[i].what);
		rawrpc_buf_free(&b);
	}
	/* Two fragments that only together exceed the maximum. */
	rawrpc_buf_init(&b);
	put_mark(&b, false, max - 100);
	put_hdr(&b, 1, NFS_PROGRAM, NFS_V3, NFSPROC3_NULL);
	while (b.len < 4 + (size_t)max - 100)
		rawrpc_put_u32(&b, 0);
	b.len = 4 + (size_t)max - 100;
	put_mark(&b, true, 101);
	expect_closed(T.nfs_port, b.data, b.len, false, true,
		      "fragments of max-100 and 101 bytes");
	rawrpc_buf_free(&b);
	/* A thousand empty fragments, then one that is too long. */
	rawrpc_buf_init(&b);
	for (k = 0; k < 1000; k++)
		put_mark(&b, false, 0);
	put_mark(&b, true, max + 1);
	expect_closed(T.nfs_port, b.data, b.len, false, true,
		      "1000 empty fragments then max+1");
	rawrpc_buf_free(&b);
}

/* The boundary: records of exactly max_record bytes are served, in one
 * fragment or several; empty fragments are legal (RFC 5531 s. 11). */
static void test_record_boundary(void)
{
	struct rawrpc_buf b;
	struct rawrpc_reply r;
	uint32_t xid = rawrpc_xid();
	enum rawrpc_io io;
	int k, fd;

	if (T.direct)
		return;
	expect_null_of_size(T.max_record, 1, "NULL record of max bytes");
	expect_null_of_size(T.max_record, 2, "NULL record of max bytes in 2 "
			    "fragments");
	expect_null_of_size(96, 24, "NULL record of 96 bytes in 24 fragments");
	rawrpc_buf_init(&b);
	fd = connect_or_fail(T.nfs_port, "empty fragments then NULL");
	if (fd >= 0) {
		for (k = 0; k < 1000; k++)
			put_mark(&b, false, 0);
		rawrpc_send_bytes(fd, b.data, b.len);
		rawrpc_buf_free(&b);
		put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, NFSPROC3_NULL);
		io = rawrpc_roundtrip(fd, &b, xid, RAWRPC_TIMEOUT_MS, &r, NULL,
				      NULL);
		EXPECT(io == RAWRPC_OK && r.accept == SUCCESS, "1000 empty "
		       "fragments then NULL: io %d", io);
		close(fd);
	}
	rawrpc_buf_free(&b);
}

/* Marks announcing more than we send, then our half-close: no reply,
 * and the proxy closes its side too. */
static void test_short_records(void)
{
	struct rawrpc_buf hdr, b;
	size_t i;
	const struct {
		uint16_t port;
		uint32_t mark;
		size_t send;	/* header bytes sent after the mark */
		const char *what;
	} c[] = {
		{ T.nfs_port, 0x80000000u | 100, 0, "mark 100, no data" },
		{ T.nfs_port, 0x80000000u | 100, 20, "mark 100, 20 bytes" },
		{ T.nfs_port, 0x80000000u | 1000, 40, "mark 1000, 40 bytes" },
		{ T.nfs_port, 0x80000000u | T.max_record, 40,
		  "mark max, 40 bytes" },
		{ T.nfs_port, 40, 40, "whole non-last fragment, no next mark" },
		{ T.mount_port, 0x80000000u | 50, 10,
		  "mount port: mark 50, 10 bytes" },
	};

	rawrpc_buf_init(&hdr);
	put_hdr(&hdr, rawrpc_xid(), NFS_PROGRAM, NFS_V3, NFSPROC3_NULL);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rawrpc_buf_init(&b);
		rawrpc_put_u32(&b, c[i].mark);
		rawrpc_put_raw(&b, hdr.data, c[i].send);
		expect_closed(c[i].port, b.data, b.len, true, false, c[i].what);
		rawrpc_buf_free(&b);
	}
	rawrpc_buf_init(&b);
	rawrpc_put_u32(&b, 0x80000000u);
	expect_closed(T.nfs_port, b.data, 2, true, false,
		      "half a record mark");
	expect_closed(T.nfs_port, b.data, 4, false, false,
		      "empty record (not a call)");
	rawrpc_buf_free(&b);
	rawrpc_buf_init(&b);
	put_mark(&b, true, 3);
	rawrpc_put_raw(&b, "abc", 3);
	expect_closed(T.nfs_port, b.data, b.len, false, false,
		      "record of 3 bytes");
	rawrpc_buf_free(&b);
	rawrpc_buf_free(&hdr);
}

/* --- file handles --- */

/* GETATTR of fh[0..len) (or proc with layout tail) must say BADHANDLE or
 * STALE. */
static void handle_case(uint32_t proc, const uint8_t *fh, size_t len,
			const char *tail, const char *what)
{
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid();

	rawrpc_buf_init(&b);
	put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, proc);
	rawrpc_put_opaque(&b, fh, len);
	put_layout(&b, tail);
	expect_badfh(&b, xid, what);
	rawrpc_buf_free(&b);
}

/* Every byte of the root handle flipped in turn, and mangled lengths. */
static void test_flipped_handles(void)
{
	static const uint8_t masks[] = { 0xff, 0x01 };
	static const struct {
		uint32_t proc;
		const char *tail;
		const char *name;
	} procs[] = {
		{ NFSPROC3_ACCESS, "W", "ACCESS" },
		{ NFSPROC3_LOOKUP, "N", "LOOKUP" },
		{ NFSPROC3_READDIR, "HVW", "READDIR" },
		{ NFSPROC3_FSINFO, "", "FSINFO" },
		{ NFSPROC3_FSSTAT, "", "FSSTAT" },
		{ NFSPROC3_PATHCONF, "", "PATHCONF" },
		{ NFSPROC3_SETATTR, "SW", "SETATTR" },
	};
	uint8_t fh[FHSIZE3 + 1];
	char what[96];
	size_t i, m;

	for (m = 0; m < sizeof(masks); m++) {
		for (i = 0; i < T.root_len; i++) {
			memcpy(fh, T.root, T.root_len);
			fh[i] ^= masks[m];
			snprintf(what, sizeof(what), "root handle byte %zu ^ "
				 "%#x", i, masks[m]);
			handle_case(NFSPROC3_GETATTR, fh, T.root_len, "", what);
		}
	}
	for (i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		memcpy(fh, T.root, T.root_len);
		fh[T.root_len - 1] ^= 0x10;
		snprintf(what, sizeof(what), "%s with the last handle byte "
			 "flipped", procs[i].name);
		handle_case(procs[i].proc, fh, T.root_len, procs[i].tail,
			    what);
	}
	memcpy(fh, T.root, T.root_len);
	handle_case(NFSPROC3_GETATTR, fh, T.root_len - 1, "",
		    "root handle less its last byte");
	fh[T.root_len] = 0;
	if (T.root_len < FHSIZE3)
		handle_case(NFSPROC3_GETATTR, fh, T.root_len + 1, "",
			    "root handle plus a zero byte");
	handle_case(NFSPROC3_GETATTR, fh, 0, "", "empty handle");
	memset(fh, 0, sizeof(fh));
	handle_case(NFSPROC3_GETATTR, fh, FHSIZE3, "", "64 zero bytes");
	memcpy(fh, T.root, T.root_len);
	memset(fh + T.root_len - 8, 0, 8);
	handle_case(NFSPROC3_GETATTR, fh, T.root_len, "",
		    "root handle with its last 8 bytes zeroed");
}

/* --- file names --- */

/* The diropargs3 (the export root, nm); nm is borrowed. */
static diropargs3 root_dirop(char *nm)
{
	diropargs3 d;

	d.dir.data.data_len = (u_int)T.root_len;
	d.dir.data.data_val = (char *)T.root;
	d.name = nm;
	return d;
}

/* Send proc with args (encoded by xargs) and expect status want, and
 * nothing named hostile-escape next to the export directory. */
static void expect_name_status(uint32_t proc, xdrproc_t xargs,
			       const void *args, nfsstat3 want,
			       const char *what)
{
	const char *exp_dir = getenv("NFSC_EXPORT_DIR");
	struct rawrpc_buf b;
	uint32_t xid = rawrpc_xid();
	char esc[4096];
	int st;

	rawrpc_buf_init(&b);
	put_hdr(&b, xid, NFS_PROGRAM, NFS_V3, proc);
	rawrpc_put_xdr(&b, xargs, args);
	st = call_status(&b, xid, what);
	if (st >= 0)
		EXPECT(st == (int)want, "%s: status %d, expected %d", what, st,
		       (int)want);
	rawrpc_buf_free(&b);
	EXPECT(exp_dir != NULL, "NFSC_EXPORT_DIR is not set");
	if (exp_dir) {
		snprintf(esc, sizeof(esc), "%s/../hostile-escape", exp_dir);
		EXPECT(access(esc, F_OK) != 0 && errno == ENOENT,
		       "%s: %s exists: the name escaped the export", what, esc);
	}
	if (want == NFS3ERR_ACCES)
		T.bad_names++;
	case_done(what);
}

/*
 * Names that are paths (with a '/') are refused NFS3ERR_ACCES by every
 * procedure that takes a name, as knfsd does, without reaching the
 * upstream: Ganesha 4.3 would resolve "../x" and create x outside its
 * export. Nothing appears above the export directory.
 */
static void test_path_names_are_acces(void)
{
	static const char *const bad[] = { "../hostile-escape", "a/b", "/" };
	char what[96], n[32], ok[] = "ok", target[] = "target";
	size_t i;

	if (T.direct) {
		/* Ganesha itself takes these names; nothing to compare. */
		fprintf(stderr, "hostile: file names: proxy only\n");
		return;
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(n, sizeof(n), "%s", bad[i]);
		LOOKUP3args lk = { .what = root_dirop(n) };
		CREATE3args cr = { .where = root_dirop(n) };
		MKDIR3args mk = { .where = root_dirop(n) };
		SYMLINK3args sl = { .where = root_dirop(n) };
		MKNOD3args mn = { .where = root_dirop(n) };
		REMOVE3args rm = { .object = root_dirop(n) };
		RMDIR3args rd = { .object = root_dirop(n) };
		RENAME3args rn1 = { .from = root_dirop(n), .to = root_dirop(ok) };
		RENAME3args rn2 = { .from = root_dirop(ok), .to = root_dirop(n) };
		LINK3args ln = { .link = root_dirop(n) };

		cr.how.mode = UNCHECKED;
		sl.symlink.symlink_data = target;
		mn.what.type = NF3FIFO;
		ln.file.data.data_len = (u_int)T.root_len;
		ln.file.data.data_val = (char *)T.root;
#define NAME_CASE(proc, xdr, args, label)                                   \
	do {                                                                \
		snprintf(what, sizeof(what), label " of \"%s\"", n);      \
		expect_name_status(proc, (xdrproc_t)xdr, &args,            \
				   NFS3ERR_ACCES, what);                    \
	} while (0)
		NAME_CASE(NFSPROC3_LOOKUP, xdr_LOOKUP3args, lk, "LOOKUP");
		NAME_CASE(NFSPROC3_CREATE, xdr_CREATE3args, cr, "CREATE");
		NAME_CASE(NFSPROC3_MKDIR, xdr_MKDIR3args, mk, "MKDIR");
		NAME_CASE(NFSPROC3_SYMLINK, xdr_SYMLINK3args, sl, "SYMLINK");
		NAME_CASE(NFSPROC3_MKNOD, xdr_MKNOD3args, mn, "MKNOD");
		NAME_CASE(NFSPROC3_REMOVE, xdr_REMOVE3args, rm, "REMOVE");
		NAME_CASE(NFSPROC3_RMDIR, xdr_RMDIR3args, rd, "RMDIR");
		NAME_CASE(NFSPROC3_RENAME, xdr_RENAME3args, rn1, "RENAME from");
		NAME_CASE(NFSPROC3_RENAME, xdr_RENAME3args, rn2, "RENAME to");
		NAME_CASE(NFSPROC3_LINK, xdr_LINK3args, ln, "LINK");
#undef NAME_CASE
	}
}

/*
 * Names over 255 bytes and symlink targets of 4096 bytes or more are
 * NFS3ERR_NAMETOOLONG, as Ganesha answers them. Past about 3.9 KiB libnfs
 * cannot even encode the upstream call (a 4000-byte target), and the proxy
 * used to answer NFS3ERR_JUKEBOX, which has a client retry forever; it
 * answers NFS3ERR_NAMETOOLONG too.
 */
static void test_long_names_are_nametoolong(void)
{
	static char lname[5001], target[5001];
	static const size_t name_lens[] = { 256, 4096, 5000 };
	static const size_t target_lens[] = { 4000, 4096, 5000 };
	char what[96], ok[] = "ok";

	for (size_t i = 0; i < sizeof(name_lens) / sizeof(name_lens[0]); i++) {
		LOOKUP3args lk;
		MKDIR3args mk;

		memset(lname, 'n', name_lens[i]);
		lname[name_lens[i]] = '\0';
		lk = (LOOKUP3args){ .what = root_dirop(lname) };
		mk = (MKDIR3args){ .where = root_dirop(lname) };
		snprintf(what, sizeof(what), "LOOKUP of a %zu-byte name",
			 name_lens[i]);
		expect_name_status(NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args,
				   &lk, NFS3ERR_NAMETOOLONG, what);
		snprintf(what, sizeof(what), "MKDIR of a %zu-byte name",
			 name_lens[i]);
		expect_name_status(NFSPROC3_MKDIR, (xdrproc_t)xdr_MKDIR3args,
				   &mk, NFS3ERR_NAMETOOLONG, what);
	}
	for (size_t i = 0; i < sizeof(target_lens) / sizeof(target_lens[0]); i++) {
		SYMLINK3args sl = { .where = root_dirop(ok) };

		memset(target, 't', target_lens[i]);
		target[target_lens[i]] = '\0';
		sl.symlink.symlink_data = target;
		snprintf(what, sizeof(what), "SYMLINK to a %zu-byte target",
			 target_lens[i]);
		expect_name_status(NFSPROC3_SYMLINK, (xdrproc_t)xdr_SYMLINK3args,
				   &sl, NFS3ERR_NAMETOOLONG, what);
	}
}

/* --- credentials the upstream refuses --- */

/*
 * Ganesha refuses an AUTH_SYS credential with uid, gid or a group of
 * 4294967295 at the RPC level. The proxy takes it (RFC 5531 puts no limit
 * on ids), so its upstream call fails with the connection alive: that is
 * NFS3ERR_ACCES for the client, every time, not NFS3ERR_JUKEBOX, which
 * would have it retry forever.
 */
static void test_refused_credentials_are_acces(void)
{
	static const struct {
		uint32_t uid, gid, group;
		const char *what;
	} creds[] = {
		{ 0xffffffffu, 0, 0, "uid 4294967295" },
		{ 0, 0xffffffffu, 0, "gid 4294967295" },
		{ 0, 0, 0xffffffffu, "group 4294967295" },
	};
	char what[96], hello[] = "no-such-name";

	if (T.direct)
		return;
	for (size_t i = 0; i < sizeof(creds) / sizeof(creds[0]); i++) {
		struct rawrpc_cred cr = rawrpc_cred_sys(creds[i].uid,
						       creds[i].gid);
		LOOKUP3args lk = { .what = root_dirop(hello) };
		ACCESS3args ac;

		if (creds[i].group) {
			cr.ngids = 1;
			cr.gids[0] = creds[i].group;
		}
		ac.object.data.data_len = (u_int)T.root_len;
		ac.object.data.data_val = (char *)T.root;
		ac.access = 0x3f;
		for (int k = 0; k < 2; k++) {
			struct rawrpc_buf b;
			uint32_t xid = rawrpc_xid();
			int st;

			rawrpc_buf_init(&b);
			rawrpc_put_call(&b, xid, NFS_PROGRAM, NFS_V3,
					k ? NFSPROC3_LOOKUP : NFSPROC3_ACCESS, &cr);
			if (k)
				rawrpc_put_xdr(&b, (xdrproc_t)xdr_LOOKUP3args, &lk);
			else
				rawrpc_put_xdr(&b, (xdrproc_t)xdr_ACCESS3args, &ac);
			snprintf(what, sizeof(what), "%s as %s",
				 k ? "LOOKUP" : "ACCESS", creds[i].what);
			st = call_status(&b, xid, what);
			if (st >= 0)
				EXPECT(st == NFS3ERR_ACCES, "%s: status %d, "
				       "expected ACCES", what, st);
			T.lookups_sent += k;
			rawrpc_buf_free(&b);
			case_done(what);
		}
	}
}

/* --- the end --- */

/* Print and assert delta == want for series between two snapshots. */
static void expect_delta(const char *before, const char *after,
			 const char *series, unsigned want)
{
	double b = tmetrics_value(before, series), a = tmetrics_value(after, series);

	fprintf(stderr, "hostile: %s %g -> %g (want +%u)\n", series, b, a,
		want);
	EXPECT(a - b == (double)want, "%s moved by %g, expected %u", series,
	       a - b, want);
}

/* Upstream procedures that take a name; this test forwards none but the
 * LOOKUPs of test_refused_credentials_are_acces. */
static const char *const name_procs[] = {
	"lookup", "create", "mkdir", "symlink", "mknod", "remove", "rmdir",
	"rename", "link",
};

/* The proxy is alive, still serves, and counted exactly what we caused. */
static void test_proxy_survived(void)
{
	const char *pid = getenv("NFSC_PROXY_PID");
	char series[128], *after;
	int k;

	fprintf(stderr, "hostile: %u hostile cases sent\n", T.cases);
	EXPECT(T.cases >= MIN_CASES, "only %u hostile cases", T.cases);
	check_normal_client("all cases");
	if (T.direct)
		return;
	EXPECT(pid != NULL && kill((pid_t)atol(pid), 0) == 0,
	       "proxy pid %s is gone", pid ? pid : "(unset)");
	after = metrics_snapshot();
	EXPECT(after != NULL, "cannot read /metrics at the end");
	if (after == NULL)
		return;
	for (k = 0; k < K_COUNT; k++) {
		snprintf(series, sizeof(series),
			 "nfscached_rpc_rejected_total{reason=\"%s\"}",
			 kinds[k].reason);
		expect_delta(T.metrics_before, after, series, T.expected[k]);
	}
	expect_delta(T.metrics_before, after,
		     "nfscached_rpc_records_oversize_total",
		     T.expected_oversize);
	expect_delta(T.metrics_before, after, "nfscached_nfs3_bad_names_total",
		     T.bad_names);
	for (k = 0; k < (int)(sizeof(name_procs) / sizeof(name_procs[0])); k++) {
		snprintf(series, sizeof(series),
			 "nfscached_upstream_rpcs_total{procedure=\"%s\"}",
			 name_procs[k]);
		expect_delta(T.metrics_before, after, series,
			     strcmp(name_procs[k], "lookup") == 0 ?
			     T.lookups_sent : 0);
	}
	free(after);
}

int test_register(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "rpc_version_is_rpc_mismatch", test_rpc_version },
		{ "unknown_program_is_prog_unavail", test_unknown_program },
		{ "other_versions_are_prog_mismatch_3_3", test_program_version },
		{ "unknown_procedure_is_proc_unavail", test_unknown_procedure },
		{ "malformed_auth_sys_is_badcred", test_auth_sys_badcred },
		{ "malformed_auth_sys_on_mount_is_badcred",
		  test_auth_sys_badcred_mount },
		{ "other_flavors_are_tooweak", test_auth_tooweak },
		{ "truncated_args_are_garbage", test_truncated_args },
		{ "truncated_header_is_garbage", test_truncated_header },
		{ "huge_lengths_are_garbage", test_huge_lengths },
		{ "random_records_close", test_random_records },
		{ "random_getattr_args", test_random_getattr_args },
		{ "random_streams_close_as_oversize", test_random_streams },
		{ "oversize_marks_close", test_oversize_marks },
		{ "records_of_max_size_are_served", test_record_boundary },
		{ "short_records_then_eof_close", test_short_records },
		{ "flipped_handles_are_badhandle", test_flipped_handles },
		{ "path_names_are_acces", test_path_names_are_acces },
		{ "long_names_are_nametoolong", test_long_names_are_nametoolong },
		{ "refused_credentials_are_acces",
		  test_refused_credentials_are_acces },
		{ "proxy_survived_and_counted", test_proxy_survived },
	};
	CU_pSuite s;
	size_t i;

	s = CU_add_suite("hostile", suite_init, suite_clean);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
