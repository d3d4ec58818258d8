/* SPDX-License-Identifier: MIT */
/*
 * Integration tests of proto/upstream (the libnfs client towards the real
 * server) against the harness's Ganesha: reaching UP, root handle and
 * transfer sizes, NULL/GETATTR/LOOKUP/READ/ACCESS through XDR bytes,
 * per-call credentials, argument checks, upstream_free with calls in
 * flight (also from inside a callback), a server that accepts but never
 * answers (connection-step timeout), a call timeout through a relay that
 * stops forwarding replies, Nagle off on the connection, and the server
 * stopped and started again
 * (EDOWN for calls in flight, refusal while down, back to UP by itself).
 *
 * Environment (harness.sh --no-proxy): NFSC_DIRECT_NFS_PORT,
 * NFSC_DIRECT_MOUNT_PORT, NFSC_EXPORT_DIR, NFSC_UPSTREAMCTL.
 * Arguments and results are encoded and parsed by hand (RFC 1813 section 3
 * and RFC 4506), independently of the code under test.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "cunit_main.h"
#include "upstream.h"
#include "upstream_impl.h"

#define NFS3_OK		0
#define NF3DIR		2
/* RFC 1813 procedure numbers. */
#define PROC_NULL	0
#define PROC_GETATTR	1
#define PROC_SETATTR	2
#define PROC_LOOKUP	3
#define PROC_ACCESS	4
#define PROC_READLINK	5
#define PROC_READ	6
#define PROC_WRITE	7
#define PROC_CREATE	8
#define PROC_MKDIR	9
#define PROC_SYMLINK	10
#define PROC_MKNOD	11
#define PROC_REMOVE	12
#define PROC_RMDIR	13
#define PROC_RENAME	14
#define PROC_LINK	15
#define PROC_READDIR	16
#define PROC_READDIRPLUS 17
#define PROC_FSSTAT	18
#define PROC_FSINFO	19
#define PROC_PATHCONF	20
#define PROC_COMMIT	21
#define NF3FIFO		7
#define FILE_SYNC	2
#define FATTR3_SIZE	84	/* RFC 1813 fattr3, encoded */
#define MiB		(1024u * 1024u)

static int env_nfs_port;
static int env_mount_port;
static const char *env_export_dir;
static const char *env_upstreamctl;

static struct event_base *base;
static struct upstream *up;		/* the main client, shared by tests */

/* State changes seen by state_note. */
struct state_log {
	unsigned n[3];
	enum upstream_state last;
};

static struct state_log main_states;

/* One call's outcome. */
struct result {
	int done;
	enum upstream_status st;
	uint8_t *buf;
	size_t len;
	int cb_in_call;		/* cb ran inside upstream_call: forbidden */
	int state_at_cb;	/* state of `observed` during the cb */
	size_t tail_len;	/* the data passed by reference (READ) */
};

static int in_upstream_call;
static struct upstream *observed;	/* whose state result_cb records */

/* ------------------------------------------------------------ helpers */

/* Record a state change. */
static void state_note(struct upstream *u, enum upstream_state s, void *arg)
{
	struct state_log *log = arg;

	(void)u;
	log->n[s]++;
	log->last = s;
}

/* Keep a copy of a call's outcome (a READ's data, passed by reference,
 * joined to the rest: upstream_result_join). */
static void result_cb(enum upstream_status st, const uint8_t *res,
		      size_t len, const uint8_t *tail, size_t tail_len,
		      void *arg)
{
	struct result *r = arg;

	r->done++;
	r->st = st;
	r->cb_in_call += in_upstream_call;
	r->state_at_cb = observed ? (int)upstream_get_state(observed) : -1;
	free(r->buf);
	r->buf = NULL;
	r->len = 0;
	if (len) {
		r->buf = upstream_result_join(res, len, tail, tail_len, &r->len);
		CU_ASSERT_PTR_NOT_NULL(r->buf);
	}
	r->tail_len = tail ? tail_len : 0;
}

/* Release a result's copy. */
static void result_clear(struct result *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Call upstream_call, noting that we are inside it. */
static int call(struct upstream *u, uint32_t proc, const uint8_t *args,
		size_t len, const struct nfs_cred *cred, struct result *r)
{
	int rc;

	in_upstream_call = 1;
	rc = upstream_call(u, proc, args, len, cred, result_cb, r);
	in_upstream_call = 0;
	return rc;
}

/* Set *flag when the deadline passes. */
static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(int *)arg = 1;
}

typedef bool (*pred_fn)(void *arg);

/* Run the loop until pred(arg) holds or secs pass. Returns pred(arg). */
static bool run_until(pred_fn pred, void *arg, double secs)
{
	int expired = 0;
	struct timeval tv = { (time_t)secs,
			      (suseconds_t)((secs - (time_t)secs) * 1e6) };
	struct event *t = evtimer_new(base, deadline_cb, &expired);

	evtimer_add(t, &tv);
	while (!pred(arg) && !expired)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(t);
	return pred(arg);
}

/* Run the loop for secs whatever happens. */
static bool never(void *arg)
{
	(void)arg;
	return false;
}

/* True if upstream *arg is UP. */
static bool is_up(void *arg)
{
	return upstream_get_state(*(struct upstream **)arg) == UPSTREAM_UP;
}

/* True if result *arg is done. */
static bool is_done(void *arg)
{
	return ((struct result *)arg)->done > 0;
}

struct results {
	struct result *r;
	int n;
};

/* True if every result of the array is done. */
static bool all_done(void *arg)
{
	struct results *rs = arg;
	int i;

	for (i = 0; i < rs->n; i++)
		if (!rs->r[i].done)
			return false;
	return true;
}

/* Parameters for the harness's Ganesha. */
static struct upstream_params params(double timeout)
{
	struct upstream_params p = {
		.server = "127.0.0.1",
		.nfs_port = env_nfs_port,
		.mount_port = env_mount_port,
		.export_path = "/export",
		.max_transfer = 0,
		.call_timeout = timeout,
	};
	return p;
}

/* Create, start and wait for an upstream to be UP. */
static struct upstream *new_up(const struct upstream_params *p,
			       struct state_log *log)
{
	struct upstream *u = upstream_new(base, p, state_note, log);

	if (u == NULL || upstream_start(u) != 0)
		return u;
	run_until(is_up, &u, 10);
	return u;
}

/* The AUTH_SYS identity uid/gid with no groups. */
static struct nfs_cred cred_of(uint32_t uid, uint32_t gid)
{
	struct nfs_cred c = { .uid = uid, .gid = gid, .ngids = 0,
				   .machine = "test" };
	return c;
}

/* XDR writer over a caller's buffer. */
struct xw {
	uint8_t *p;
	size_t off;
};

/* Append a uint32 (RFC 4506 section 4.2). */
static void xw_u32(struct xw *w, uint32_t v)
{
	uint32_t be = htonl(v);

	memcpy(w->p + w->off, &be, 4);
	w->off += 4;
}

/* Append a uint64 (RFC 4506 section 4.5). */
static void xw_u64(struct xw *w, uint64_t v)
{
	xw_u32(w, (uint32_t)(v >> 32));
	xw_u32(w, (uint32_t)v);
}

/* Append variable-length opaque data, zero-padded (RFC 4506 4.10). */
static void xw_opaque(struct xw *w, const void *data, size_t len)
{
	xw_u32(w, (uint32_t)len);
	memcpy(w->p + w->off, data, len);
	w->off += len;
	while (w->off % 4)
		w->p[w->off++] = 0;
}

/* Read the uint32 at byte offset off of r (0 past the end). */
static uint32_t xr_u32(const struct result *r, size_t off)
{
	uint32_t be;

	if (off + 4 > r->len)
		return 0xdeadbeef;
	memcpy(&be, r->buf + off, 4);
	return ntohl(be);
}

/* Skip a post_op_attr at off (RFC 1813 2.6); return the next offset. */
static size_t xr_skip_post_op_attr(const struct result *r, size_t off)
{
	return off + 4 + (xr_u32(r, off) ? FATTR3_SIZE : 0);
}

struct fh {
	uint8_t data[64];
	size_t len;
};

/* The export's root handle from upstream u. */
static struct fh root_fh(struct upstream *u)
{
	struct fh fh = { .len = 0 };
	const uint8_t *p = upstream_root_fh(u, &fh.len);

	if (p && fh.len <= sizeof(fh.data))
		memcpy(fh.data, p, fh.len);
	else
		fh.len = 0;
	return fh;
}

/* Run one call to completion; return its status (or -1 if not sent). */
static int call_sync(struct upstream *u, uint32_t proc, const uint8_t *args,
		     size_t len, const struct nfs_cred *cred,
		     struct result *r)
{
	result_clear(r);
	if (call(u, proc, args, len, cred, r) != 0)
		return -1;
	CU_ASSERT_EQUAL(r->done, 0);
	if (!run_until(is_done, r, 10))
		return -2;
	CU_ASSERT_EQUAL(r->done, 1);
	CU_ASSERT_EQUAL(r->cb_in_call, 0);
	return (int)r->st;
}

/* LOOKUP name in dir as cred; fills *out. Returns the NFS status. */
static uint32_t lookup(struct upstream *u, const struct fh *dir,
		       const char *name, const struct nfs_cred *cred,
		       struct fh *out)
{
	uint8_t args[512];
	struct xw w = { args, 0 };
	struct result r = { 0 };
	uint32_t status, len;

	xw_opaque(&w, dir->data, dir->len);
	xw_opaque(&w, name, strlen(name));
	if (call_sync(u, PROC_LOOKUP, args, w.off, cred, &r) != UPSTREAM_OK)
		return 0xffffffff;
	status = xr_u32(&r, 0);
	len = xr_u32(&r, 4);
	if (status == NFS3_OK && len <= sizeof(out->data) && 8 + len <= r.len) {
		memcpy(out->data, r.buf + 8, len);
		out->len = len;
	}
	result_clear(&r);
	return status;
}

/* Encode GETATTR3args for fh into args; return the length. */
static size_t getattr_args(uint8_t *args, const struct fh *fh)
{
	struct xw w = { args, 0 };

	xw_opaque(&w, fh->data, fh->len);
	return w.off;
}

/* Encode ACCESS3args (fh, mask) into args; return the length. */
static size_t access_args(uint8_t *args, const struct fh *fh, uint32_t mask)
{
	struct xw w = { args, 0 };

	xw_opaque(&w, fh->data, fh->len);
	xw_u32(&w, mask);
	return w.off;
}

/* Parse ACCESS3res: NFS status in *status, the access bits returned. */
static uint32_t access_bits(const struct result *r, uint32_t *status)
{
	*status = xr_u32(r, 0);
	return xr_u32(r, xr_skip_post_op_attr(r, 4));
}

/* Append a sattr3 setting mode (if >= 0) and size (if >= 0) only. */
static void xw_sattr(struct xw *w, int mode, int64_t size)
{
	xw_u32(w, mode >= 0);
	if (mode >= 0)
		xw_u32(w, (uint32_t)mode);
	xw_u32(w, 0);			/* uid */
	xw_u32(w, 0);			/* gid */
	xw_u32(w, size >= 0);
	if (size >= 0)
		xw_u64(w, (uint64_t)size);
	xw_u32(w, 0);			/* atime: DONT_CHANGE */
	xw_u32(w, 0);			/* mtime: DONT_CHANGE */
}

/* Skip a wcc_data at off (RFC 1813 2.6); return the next offset. */
static size_t xr_skip_wcc(const struct result *r, size_t off)
{
	off += 4 + (xr_u32(r, off) ? 24 : 0);
	return xr_skip_post_op_attr(r, off);
}

/* Parse the post_op_fh3 at off into *fh; return the next offset. */
static size_t xr_post_op_fh(const struct result *r, size_t off, struct fh *fh)
{
	uint32_t len;

	fh->len = 0;
	if (!xr_u32(r, off))
		return off + 4;
	len = xr_u32(r, off + 4);
	if (len <= sizeof(fh->data) && off + 8 + len <= r->len) {
		memcpy(fh->data, r->buf + off + 8, len);
		fh->len = len;
	}
	return off + 8 + ((len + 3) & ~3u);
}

/* True if r's bytes contain the string needle. */
static bool xr_contains(const struct result *r, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; i + n <= r->len; i++)
		if (memcmp(r->buf + i, needle, n) == 0)
			return true;
	return false;
}

/* Encode diropargs3 (dir, name). */
static void xw_dirop(struct xw *w, const struct fh *dir, const char *name)
{
	xw_opaque(w, dir->data, dir->len);
	xw_opaque(w, name, strlen(name));
}

/* Run a shell command line; return its exit status. */
static int sh(const char *verb)
{
	char cmd[1024];
	int rc;

	snprintf(cmd, sizeof(cmd), "'%s' %s", env_upstreamctl, verb);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* -------------------------------------------------------------- tests */

static void test_reaches_up_with_root_handle_and_sizes(void)
{
	struct upstream_params p = params(10);
	struct upstream_stats st;
	size_t len = 99;

	memset(&main_states, 0, sizeof(main_states));
	up = upstream_new(base, &p, state_note, &main_states);
	CU_ASSERT_PTR_NOT_NULL_FATAL(up);
	CU_ASSERT_EQUAL(upstream_get_state(up), UPSTREAM_DOWN);
	CU_ASSERT_PTR_NULL(upstream_root_fh(up, &len));
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_EQUAL(upstream_rtmax(up), 0);
	CU_ASSERT_EQUAL(upstream_start(up), 0);
	/* The first attempt starts from the loop, not inside start. */
	CU_ASSERT_EQUAL(main_states.n[UPSTREAM_CONNECTING], 0);
	CU_ASSERT_EQUAL(upstream_get_state(up), UPSTREAM_DOWN);
	CU_ASSERT_FATAL(run_until(is_up, &up, 10));
	CU_ASSERT_EQUAL(main_states.n[UPSTREAM_CONNECTING], 1);
	CU_ASSERT_EQUAL(main_states.n[UPSTREAM_UP], 1);
	CU_ASSERT_EQUAL(main_states.n[UPSTREAM_DOWN], 0);
	CU_ASSERT_PTR_NOT_NULL(upstream_root_fh(up, &len));
	CU_ASSERT(len > 0 && len <= 64);
	CU_ASSERT_EQUAL(upstream_rtmax(up), MiB);
	CU_ASSERT_EQUAL(upstream_wtmax(up), MiB);
	CU_ASSERT_STRING_EQUAL(upstream_last_error(up), "");
	upstream_stats_get(up, &st);
	CU_ASSERT_EQUAL(st.connects, 1);
	CU_ASSERT_EQUAL(st.disconnects, 0);
}

static void test_max_transfer_caps_sizes(void)
{
	struct upstream_params p = params(10);
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream *u;

	p.max_transfer = 65536;
	u = new_up(&p, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	CU_ASSERT_EQUAL(upstream_rtmax(u), 65536);
	CU_ASSERT_EQUAL(upstream_wtmax(u), 65536);
	upstream_free(&u);
	CU_ASSERT_PTR_NULL(u);
}

static void test_null_call_answers(void)
{
	struct nfs_cred c = cred_of(0, 0);
	struct upstream_stats st0, st1;
	struct result r = { 0 };

	upstream_stats_get(up, &st0);
	CU_ASSERT_EQUAL(call_sync(up, PROC_NULL, NULL, 0, &c, &r), UPSTREAM_OK);
	CU_ASSERT_EQUAL(r.len, 0);
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(st1.calls[PROC_NULL], st0.calls[PROC_NULL] + 1);
	CU_ASSERT_EQUAL(st1.replies[PROC_NULL], st0.replies[PROC_NULL] + 1);
	result_clear(&r);
}

static void test_getattr_root_is_directory(void)
{
	struct nfs_cred c = cred_of(0, 0);
	struct fh root = root_fh(up);
	struct upstream_stats st0, st1;
	uint8_t args[128];
	size_t alen = getattr_args(args, &root);
	struct result r = { 0 };

	upstream_stats_get(up, &st0);
	CU_ASSERT_EQUAL_FATAL(call_sync(up, PROC_GETATTR, args, alen, &c, &r),
			      UPSTREAM_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, 0), NFS3_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, 4), NF3DIR);
	CU_ASSERT_EQUAL(r.len, 4 + FATTR3_SIZE);
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(st1.calls[PROC_GETATTR], st0.calls[PROC_GETATTR] + 1);
	CU_ASSERT_EQUAL(st1.replies[PROC_GETATTR],
			st0.replies[PROC_GETATTR] + 1);
	CU_ASSERT_EQUAL(st1.bytes_sent, st0.bytes_sent + alen);
	CU_ASSERT_EQUAL(st1.bytes_received, st0.bytes_received + r.len);
	result_clear(&r);
}

static void test_lookup_and_read_file(void)
{
	static const char text[] = "hello, upstream\n";	/* 16 bytes */
	struct nfs_cred c = cred_of(0, 0);
	struct fh root = root_fh(up), file = { .len = 0 };
	char path[512];
	uint8_t args[256];
	struct xw w = { args, 0 };
	struct result r = { 0 };
	FILE *f;
	size_t off;

	snprintf(path, sizeof(path), "%s/hello.txt", env_export_dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(lookup(up, &root, "hello.txt", &c, &file),
			      NFS3_OK);
	CU_ASSERT(file.len > 0);

	/* READ3args: file, offset 7, count 8 -> "upstream", not eof. */
	xw_opaque(&w, file.data, file.len);
	xw_u64(&w, 7);
	xw_u32(&w, 8);
	CU_ASSERT_EQUAL_FATAL(call_sync(up, PROC_READ, args, w.off, &c, &r),
			      UPSTREAM_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, 0), NFS3_OK);
	off = xr_skip_post_op_attr(&r, 4);
	CU_ASSERT_EQUAL(xr_u32(&r, off), 8);		/* count */
	CU_ASSERT_EQUAL(xr_u32(&r, off + 4), 0);	/* eof */
	CU_ASSERT_EQUAL(xr_u32(&r, off + 8), 8);	/* data length */
	CU_ASSERT_EQUAL(r.len, off + 12 + 8);
	CU_ASSERT(r.len >= off + 20 && memcmp(r.buf + off + 12, "upstream", 8) == 0);
	CU_ASSERT_EQUAL(r.tail_len, 8);		/* the data by reference */

	/* Offset 0, count 4096: the whole 16 bytes and eof. */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_u64(&w, 0);
	xw_u32(&w, 4096);
	CU_ASSERT_EQUAL_FATAL(call_sync(up, PROC_READ, args, w.off, &c, &r),
			      UPSTREAM_OK);
	off = xr_skip_post_op_attr(&r, 4);
	CU_ASSERT_EQUAL(xr_u32(&r, off), 16);
	CU_ASSERT_EQUAL(xr_u32(&r, off + 4), 1);
	CU_ASSERT_EQUAL(r.len, off + 12 + 16);
	CU_ASSERT(r.len >= off + 28 && memcmp(r.buf + off + 12, text, 16) == 0);
	CU_ASSERT_EQUAL(r.tail_len, 16);

	/* An odd length: 3 bytes of data and one byte of zero padding. */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_u64(&w, 0);
	xw_u32(&w, 3);
	CU_ASSERT_EQUAL_FATAL(call_sync(up, PROC_READ, args, w.off, &c, &r),
			      UPSTREAM_OK);
	off = xr_skip_post_op_attr(&r, 4);
	CU_ASSERT_EQUAL(xr_u32(&r, off + 8), 3);
	CU_ASSERT_EQUAL(r.len, off + 12 + 4);
	CU_ASSERT(r.len == off + 16 && memcmp(r.buf + off + 12, "hel\0", 4) == 0);
	CU_ASSERT_EQUAL(r.tail_len, 3);
	result_clear(&r);
}

/* upstream_result_join: the whole result from a head and a tail, the
 * tail's XDR padding zero; a head that does not end in an empty opaque is
 * refused with EINVAL; no tail: a copy. */
static void test_result_join(void)
{
	static const uint8_t head[8] = { 0, 0, 0, 7, 0, 0, 0, 0 };
	static const uint8_t bad[8] = { 0, 0, 0, 7, 0, 0, 0, 1 };
	static const uint8_t want[16] = { 0, 0, 0, 7, 0, 0, 0, 5,
					  'h', 'e', 'l', 'l', 'o', 0, 0, 0 };
	uint8_t *out;
	size_t len = 0;

	out = upstream_result_join(head, sizeof(head), (const uint8_t *)"hello",
				   5, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(len, sizeof(want));
	CU_ASSERT_EQUAL(memcmp(out, want, sizeof(want)), 0);
	free(out);
	out = upstream_result_join(head, sizeof(head), NULL, 0, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(len, sizeof(head));
	CU_ASSERT_EQUAL(memcmp(out, head, sizeof(head)), 0);
	free(out);
	errno = 0;
	CU_ASSERT_PTR_NULL(upstream_result_join(bad, sizeof(bad),
						(const uint8_t *)"x", 1, &len));
	CU_ASSERT_EQUAL(errno, EINVAL);
	errno = 0;
	CU_ASSERT_PTR_NULL(upstream_result_join(head, 3, (const uint8_t *)"x",
						1, &len));
	CU_ASSERT_EQUAL(errno, EINVAL);
}

static void test_access_follows_credential(void)
{
	struct nfs_cred root = cred_of(0, 0), other = cred_of(4242, 4242);
	struct fh dir = root_fh(up), priv = { .len = 0 };
	struct result r[3] = { { 0 } };
	struct results rs = { r, 3 };
	struct upstream_stats st0, st1;
	uint8_t args[128];
	size_t alen;
	char path[512];
	uint32_t status, bits[3];
	int i;

	snprintf(path, sizeof(path), "%s/private", env_export_dir);
	CU_ASSERT_FATAL(mkdir(path, 0700) == 0 || errno == EEXIST);
	CU_ASSERT_FATAL(chmod(path, 0700) == 0);
	CU_ASSERT_FATAL(chown(path, 0, 0) == 0);
	CU_ASSERT_EQUAL_FATAL(lookup(up, &dir, "private", &root, &priv),
			      NFS3_OK);
	alen = access_args(args, &priv, 0x1f);	/* READ..DELETE */

	/* Three calls in flight at once, credentials alternating: each is
	 * encoded with its own credential when queued. */
	upstream_stats_get(up, &st0);
	CU_ASSERT_EQUAL(call(up, PROC_ACCESS, args, alen, &root, &r[0]), 0);
	CU_ASSERT_EQUAL(call(up, PROC_ACCESS, args, alen, &other, &r[1]), 0);
	CU_ASSERT_EQUAL(call(up, PROC_ACCESS, args, alen, &root, &r[2]), 0);
	CU_ASSERT_FATAL(run_until(all_done, &rs, 10));
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(r[i].done, 1);
		CU_ASSERT_EQUAL(r[i].cb_in_call, 0);
		CU_ASSERT_EQUAL_FATAL(r[i].st, UPSTREAM_OK);
		bits[i] = access_bits(&r[i], &status);
		CU_ASSERT_EQUAL(status, NFS3_OK);
	}
	/* Root owns the 0700 directory: read, lookup, modify, extend,
	 * delete. uid 4242 is "other" with no bits. */
	CU_ASSERT_EQUAL(bits[0], 0x1f);
	CU_ASSERT_EQUAL(bits[1], 0);
	CU_ASSERT_EQUAL(bits[2], 0x1f);
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(st1.calls[PROC_ACCESS], st0.calls[PROC_ACCESS] + 3);
	CU_ASSERT_EQUAL(st1.replies[PROC_ACCESS], st0.replies[PROC_ACCESS] + 3);
	for (i = 0; i < 3; i++)
		result_clear(&r[i]);
}

/* Send proc with w's bytes as root, synchronously; 0 if NFS3_OK. */
static uint32_t nfs_sync(uint32_t proc, const struct xw *w, struct result *r)
{
	struct nfs_cred c = cred_of(0, 0);

	if (call_sync(up, proc, w->p, w->off, &c, r) != UPSTREAM_OK)
		return 0xffffffff;
	return xr_u32(r, 0);
}

/* Build the path of name in the export directory. */
static const char *export_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", env_export_dir, name);
	return buf;
}

static void test_every_procedure_round_trips(void)
{
	struct fh root = root_fh(up), file = { .len = 0 }, lnk = { .len = 0 };
	struct nfs_cred me = cred_of(0, 0);
	struct upstream_stats st;
	uint8_t args[1024];
	struct xw w = { args, 0 };
	struct result r = { 0 };
	char path[512], buf[64];
	struct stat sb;
	size_t off;
	uint32_t p;
	FILE *f;

	/* CREATE made.txt, mode 0644. */
	xw_dirop(&w, &root, "made.txt");
	xw_u32(&w, 0);				/* UNCHECKED */
	xw_sattr(&w, 0644, -1);
	CU_ASSERT_EQUAL_FATAL(nfs_sync(PROC_CREATE, &w, &r), NFS3_OK);
	xr_post_op_fh(&r, 4, &file);
	CU_ASSERT_FATAL(file.len > 0);
	CU_ASSERT_EQUAL(stat(export_path(path, sizeof(path), "made.txt"), &sb), 0);
	CU_ASSERT_EQUAL(sb.st_mode & 07777, 0644);

	/* WRITE "abcde" FILE_SYNC, then COMMIT. */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_u64(&w, 0);
	xw_u32(&w, 5);
	xw_u32(&w, FILE_SYNC);
	xw_opaque(&w, "abcde", 5);
	CU_ASSERT_EQUAL_FATAL(nfs_sync(PROC_WRITE, &w, &r), NFS3_OK);
	off = xr_skip_wcc(&r, 4);
	CU_ASSERT_EQUAL(xr_u32(&r, off), 5);		/* count */
	CU_ASSERT_EQUAL(xr_u32(&r, off + 4), FILE_SYNC);
	CU_ASSERT_EQUAL(r.len, off + 16);		/* + verifier */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_u64(&w, 0);
	xw_u32(&w, 0);
	CU_ASSERT_EQUAL(nfs_sync(PROC_COMMIT, &w, &r), NFS3_OK);

	/* SETATTR size 3 (no guard), GETATTR sees it, and so does the disk. */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_sattr(&w, -1, 3);
	xw_u32(&w, 0);				/* guard: FALSE */
	CU_ASSERT_EQUAL(nfs_sync(PROC_SETATTR, &w, &r), NFS3_OK);
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	CU_ASSERT_EQUAL(nfs_sync(PROC_GETATTR, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, 24), 0);		/* size, high */
	CU_ASSERT_EQUAL(xr_u32(&r, 28), 3);		/* size, low */
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(fread(buf, 1, sizeof(buf), f), 3);
	CU_ASSERT_STRING_EQUAL(buf, "abc");
	fclose(f);

	/* MKDIR made.d 0755. */
	w.off = 0;
	xw_dirop(&w, &root, "made.d");
	xw_sattr(&w, 0755, -1);
	CU_ASSERT_EQUAL(nfs_sync(PROC_MKDIR, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(stat(export_path(path, sizeof(path), "made.d"), &sb), 0);
	CU_ASSERT(S_ISDIR(sb.st_mode) && (sb.st_mode & 07777) == 0755);

	/* SYMLINK made.lnk -> made.txt; LOOKUP it; READLINK. */
	w.off = 0;
	xw_dirop(&w, &root, "made.lnk");
	xw_sattr(&w, -1, -1);
	xw_opaque(&w, "made.txt", 8);
	CU_ASSERT_EQUAL(nfs_sync(PROC_SYMLINK, &w, &r), NFS3_OK);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(readlink(export_path(path, sizeof(path), "made.lnk"),
				 buf, sizeof(buf) - 1), 8);
	CU_ASSERT_STRING_EQUAL(buf, "made.txt");
	CU_ASSERT_EQUAL(lookup(up, &root, "made.lnk", &me, &lnk), NFS3_OK);
	w.off = 0;
	xw_opaque(&w, lnk.data, lnk.len);
	CU_ASSERT_EQUAL(nfs_sync(PROC_READLINK, &w, &r), NFS3_OK);
	off = xr_skip_post_op_attr(&r, 4);
	CU_ASSERT_EQUAL(xr_u32(&r, off), 8);
	CU_ASSERT(r.len == off + 12 && memcmp(r.buf + off + 4, "made.txt", 8) == 0);

	/* MKNOD made.fifo. */
	w.off = 0;
	xw_dirop(&w, &root, "made.fifo");
	xw_u32(&w, NF3FIFO);
	xw_sattr(&w, 0644, -1);
	CU_ASSERT_EQUAL(nfs_sync(PROC_MKNOD, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(lstat(export_path(path, sizeof(path), "made.fifo"), &sb), 0);
	CU_ASSERT(S_ISFIFO(sb.st_mode));

	/* LINK made.hard to made.txt; RENAME made.txt to moved.txt. */
	w.off = 0;
	xw_opaque(&w, file.data, file.len);
	xw_dirop(&w, &root, "made.hard");
	CU_ASSERT_EQUAL(nfs_sync(PROC_LINK, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(stat(export_path(path, sizeof(path), "made.hard"), &sb), 0);
	CU_ASSERT_EQUAL(sb.st_nlink, 2);
	w.off = 0;
	xw_dirop(&w, &root, "made.txt");
	xw_dirop(&w, &root, "moved.txt");
	CU_ASSERT_EQUAL(nfs_sync(PROC_RENAME, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(access(export_path(path, sizeof(path), "moved.txt"), F_OK), 0);
	CU_ASSERT_NOT_EQUAL(access(export_path(path, sizeof(path), "made.txt"), F_OK), 0);

	/* READDIR and READDIRPLUS list the new names. */
	w.off = 0;
	xw_opaque(&w, root.data, root.len);
	xw_u64(&w, 0);
	xw_u64(&w, 0);				/* cookieverf */
	xw_u32(&w, 8192);
	CU_ASSERT_EQUAL(nfs_sync(PROC_READDIR, &w, &r), NFS3_OK);
	CU_ASSERT(xr_contains(&r, "moved.txt"));
	CU_ASSERT(xr_contains(&r, "made.fifo"));
	xw_u32(&w, 32768);			/* maxcount */
	CU_ASSERT_EQUAL(nfs_sync(PROC_READDIRPLUS, &w, &r), NFS3_OK);
	CU_ASSERT(xr_contains(&r, "made.d"));
	CU_ASSERT(xr_contains(&r, "made.hard"));

	/* FSSTAT, FSINFO (rtmax as the upstream sees it), PATHCONF. */
	w.off = 0;
	xw_opaque(&w, root.data, root.len);
	CU_ASSERT_EQUAL(nfs_sync(PROC_FSSTAT, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(nfs_sync(PROC_FSINFO, &w, &r), NFS3_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, xr_skip_post_op_attr(&r, 4)), MiB);
	CU_ASSERT_EQUAL(nfs_sync(PROC_PATHCONF, &w, &r), NFS3_OK);

	/* REMOVE the files, RMDIR the directory. */
	w.off = 0;
	xw_dirop(&w, &root, "moved.txt");
	CU_ASSERT_EQUAL(nfs_sync(PROC_REMOVE, &w, &r), NFS3_OK);
	w.off = 0;
	xw_dirop(&w, &root, "made.hard");
	CU_ASSERT_EQUAL(nfs_sync(PROC_REMOVE, &w, &r), NFS3_OK);
	w.off = 0;
	xw_dirop(&w, &root, "made.lnk");
	CU_ASSERT_EQUAL(nfs_sync(PROC_REMOVE, &w, &r), NFS3_OK);
	w.off = 0;
	xw_dirop(&w, &root, "made.fifo");
	CU_ASSERT_EQUAL(nfs_sync(PROC_REMOVE, &w, &r), NFS3_OK);
	w.off = 0;
	xw_dirop(&w, &root, "made.d");
	CU_ASSERT_EQUAL(nfs_sync(PROC_RMDIR, &w, &r), NFS3_OK);
	CU_ASSERT_NOT_EQUAL(access(export_path(path, sizeof(path), "made.d"), F_OK), 0);
	CU_ASSERT_NOT_EQUAL(access(export_path(path, sizeof(path), "moved.txt"), F_OK), 0);

	/* Every procedure was sent and answered at least once by now. */
	upstream_stats_get(up, &st);
	for (p = 0; p < UPSTREAM_NPROCS; p++) {
		CU_ASSERT(st.calls[p] >= 1);
		CU_ASSERT(st.replies[p] >= 1);
	}
	result_clear(&r);
}

static void test_bad_calls_are_refused_without_callback(void)
{
	struct nfs_cred c = cred_of(0, 0), many = cred_of(0, 0);
	struct fh root = root_fh(up);
	struct upstream_stats st0, st1;
	uint8_t args[256];
	size_t alen = getattr_args(args, &root);
	struct result r = { 0 };
	uint8_t bad_len[8] = { 0, 0, 0, 100, 1, 2, 3, 4 };

	many.ngids = UPSTREAM_MAX_GIDS + 1;
	upstream_stats_get(up, &st0);
	CU_ASSERT_EQUAL(call(up, UPSTREAM_NPROCS, args, alen, &c, &r), -1);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, 2, &c, &r), -1);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, bad_len, sizeof(bad_len), &c,
			     &r), -1);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, alen, NULL, &r), -1);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, alen, &many, &r), -1);
	CU_ASSERT_EQUAL(upstream_call(up, PROC_GETATTR, args, alen, &c, NULL,
				      &r), -1);
	/* A length that wraps libnfs's 32-bit bounds check. */
	memcpy(bad_len, "\xff\xff\xff\xfc\x01\x02\x03\x04", 8);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, bad_len, sizeof(bad_len), &c,
			     &r), -1);
	/* Trailing bytes after the arguments. */
	memset(args + alen, 0, 4);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, alen + 4, &c, &r), -1);
	/* A 65-byte handle (RFC 1813: at most 64). */
	memset(args, 0, sizeof(args));
	args[3] = 65;
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, 4 + 68, &c, &r), -1);
	/* NULL takes no arguments. */
	CU_ASSERT_EQUAL(call(up, PROC_NULL, args, 4, &c, &r), -1);
	run_until(never, NULL, 0.2);
	CU_ASSERT_EQUAL(r.done, 0);
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(memcmp(st0.calls, st1.calls, sizeof(st0.calls)), 0);
	CU_ASSERT_EQUAL(st1.errors, st0.errors);
	CU_ASSERT_EQUAL(upstream_get_state(up), UPSTREAM_UP);
}

static void test_bad_params_are_refused(void)
{
	struct upstream_params p = params(10);

	p.export_path = "export";
	CU_ASSERT_PTR_NULL(upstream_new(base, &p, NULL, NULL));
	p = params(10);
	p.server = "";
	CU_ASSERT_PTR_NULL(upstream_new(base, &p, NULL, NULL));
	p = params(10);
	p.nfs_port = 70000;
	CU_ASSERT_PTR_NULL(upstream_new(base, &p, NULL, NULL));
	p = params(-1);
	CU_ASSERT_PTR_NULL(upstream_new(base, &p, NULL, NULL));
	p = params(10);
	CU_ASSERT_PTR_NULL(upstream_new(NULL, &p, NULL, NULL));
	p = params(10);
	p.server = "localhost";		/* a name needs a resolver */
	CU_ASSERT_PTR_NULL(upstream_new(base, &p, NULL, NULL));
}

/* The invariant sweep (upstream_check_why) names each list fault the
 * test makes on u's calls in flight, and holds again once it is mended. */
static void check_sweep_sees_broken_lists(struct upstream *u)
{
	struct up_call *c = TAILQ_FIRST(&u->calls);
	const char *why;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	u->ncalls++;
	why = upstream_check_why(u);
	CU_ASSERT(why && strstr(why, "ncalls"));
	u->ncalls--;
	c->list = UP_LIST_FAILED;
	why = upstream_check_why(u);
	CU_ASSERT(why && strstr(why, "does not name"));
	c->list = UP_LIST_CALLS;
	c->magic = 0;
	why = upstream_check_why(u);
	CU_ASSERT(why && strstr(why, "magic"));
	c->magic = UP_CALL_MAGIC;
	c->done = true;
	why = upstream_check_why(u);
	CU_ASSERT(why && strstr(why, "zombie"));
	c->done = false;
	CU_ASSERT_PTR_NULL(upstream_check_why(u));
}

static void test_free_completes_calls_in_flight(void)
{
	struct upstream_params p = params(10);
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct result r[3] = { { 0 } };
	struct upstream *u = new_up(&p, &log);
	struct fh root;
	uint8_t args[128];
	size_t alen;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL_FATAL(upstream_get_state(u), UPSTREAM_UP);
	root = root_fh(u);
	alen = getattr_args(args, &root);
	for (i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(call(u, PROC_GETATTR, args, alen, &c, &r[i]), 0);
	CU_ASSERT_EQUAL(upstream_inflight(u), 3);
	CU_ASSERT_PTR_NULL(upstream_check_why(u));
	check_sweep_sees_broken_lists(u);
	upstream_free(&u);
	CU_ASSERT_PTR_NULL(u);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(r[i].done, 1);
		CU_ASSERT_EQUAL(r[i].st, UPSTREAM_EDOWN);
		CU_ASSERT_EQUAL(r[i].len, 0);
	}
	/* Nothing more after free returned, even when replies arrive. */
	run_until(never, NULL, 0.3);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(r[i].done, 1);
		result_clear(&r[i]);
	}
	upstream_free(&u);	/* NULL is ignored */
}

/* The upstream freed from inside free_in_cb. */
static struct upstream *victim;

/* Keep the result, then free the upstream that called us. */
static void free_in_cb(enum upstream_status st, const uint8_t *res,
		       size_t len, const uint8_t *tail, size_t tail_len,
		       void *arg)
{
	result_cb(st, res, len, tail, tail_len, arg);
	upstream_free(&victim);
}

static void test_free_from_inside_callback(void)
{
	struct upstream_params p = params(10);
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct result r[2] = { { 0 } };
	struct results rs = { r, 2 };
	struct fh root;
	uint8_t args[128];
	size_t alen;

	victim = new_up(&p, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(victim);
	CU_ASSERT_EQUAL_FATAL(upstream_get_state(victim), UPSTREAM_UP);
	root = root_fh(victim);
	alen = getattr_args(args, &root);
	/* Both callbacks free the upstream: the server (Ganesha, several
	 * worker threads) may answer the two calls in either order, and
	 * with Nagle off they reach it together. */
	CU_ASSERT_EQUAL(upstream_call(victim, PROC_GETATTR, args, alen, &c,
				      free_in_cb, &r[0]), 0);
	CU_ASSERT_EQUAL(upstream_call(victim, PROC_GETATTR, args, alen, &c,
				      free_in_cb, &r[1]), 0);
	CU_ASSERT_FATAL(run_until(all_done, &rs, 10));
	CU_ASSERT_PTR_NULL(victim);
	/* The first reply's callback freed it; the other call, whose reply
	 * may have been read in the same rpc_service turn, was completed by
	 * that free (its callback's free of NULL does nothing). */
	CU_ASSERT((r[0].st == UPSTREAM_OK && r[1].st == UPSTREAM_EDOWN) ||
		  (r[1].st == UPSTREAM_OK && r[0].st == UPSTREAM_EDOWN));
	run_until(never, NULL, 0.3);
	CU_ASSERT_EQUAL(r[0].done, 1);
	CU_ASSERT_EQUAL(r[1].done, 1);
	result_clear(&r[0]);
	result_clear(&r[1]);
}

/* Count DOWN->CONNECTING cycles of log *arg. */
static bool two_failed_attempts(void *arg)
{
	struct state_log *log = arg;

	return log->n[UPSTREAM_DOWN] >= 2 && log->n[UPSTREAM_CONNECTING] >= 3;
}

static void test_silent_server_times_out_connecting(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream_params p = params(0.3);
	struct upstream_stats st;
	struct upstream *u;
	int s;

	/* Accepts connections (the kernel does) but never answers. */
	s = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(s >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_FATAL(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(s, 16) == 0);
	CU_ASSERT_FATAL(getsockname(s, (struct sockaddr *)&sa, &salen) == 0);
	p.mount_port = ntohs(sa.sin_port);
	u = upstream_new(base, &p, state_note, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(upstream_start(u), 0);
	/* 0.3 s step timeout, then 0.1 s and 0.2 s backoff. */
	CU_ASSERT(run_until(two_failed_attempts, &log, 3));
	CU_ASSERT_EQUAL(log.n[UPSTREAM_UP], 0);
	CU_ASSERT_NOT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	CU_ASSERT_PTR_NOT_NULL(strstr(upstream_last_error(u), "timed out"));
	CU_ASSERT_PTR_NULL(upstream_root_fh(u, NULL));
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.connects, 0);
	upstream_free(&u);
	close(s);
}

/* A TCP relay in the test's own loop whose server-to-client direction can
 * be frozen, to make a live connection go silent. */
struct relay {
	struct evconnlistener *l;
	int port;		/* where the relay listens */
	int target;		/* where it connects */
	bool frozen;		/* drop server bytes */
	bool proc_unavail;	/* rewrite replies to PROC_UNAVAIL */
	struct relay_pair *last;	/* the pair accepted last */
};

struct relay_pair {
	struct relay *rl;
	struct bufferevent *cli, *srv;
};

/* Free both halves of a relayed connection. */
static void relay_pair_free(struct relay_pair *rp)
{
	bufferevent_free(rp->cli);
	bufferevent_free(rp->srv);
	free(rp);
}

/* Copy client bytes to the server. */
static void relay_cli_read(struct bufferevent *bev, void *arg)
{
	struct relay_pair *rp = arg;

	bufferevent_write_buffer(rp->srv, bufferevent_get_input(bev));
}

/*
 * Replace each whole reply record in `in` by the same reply with
 * accept_stat PROC_UNAVAIL and no results (RFC 5531 section 9: xid,
 * REPLY, MSG_ACCEPTED, verifier AUTH_NONE of length 0, accept_stat).
 */
static void relay_rewrite(struct evbuffer *in, struct bufferevent *cli)
{
	uint8_t rec[28];
	uint32_t mark, len;

	while (evbuffer_get_length(in) >= 4) {
		evbuffer_copyout(in, &mark, 4);
		len = ntohl(mark) & 0x7fffffff;
		if (evbuffer_get_length(in) < 4 + (size_t)len)
			return;
		evbuffer_copyout(in, rec, sizeof(rec));
		evbuffer_drain(in, 4 + (size_t)len);
		mark = htonl(0x80000000u | 24);
		memcpy(rec, &mark, 4);
		rec[24] = rec[25] = rec[26] = 0;
		rec[27] = 3;				/* PROC_UNAVAIL */
		bufferevent_write(cli, rec, sizeof(rec));
	}
}

/* Copy server bytes to the client unless frozen (then drop them). */
static void relay_srv_read(struct bufferevent *bev, void *arg)
{
	struct relay_pair *rp = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (rp->rl->frozen)
		evbuffer_drain(in, evbuffer_get_length(in));
	else if (rp->rl->proc_unavail)
		relay_rewrite(in, rp->cli);
	else
		bufferevent_write_buffer(rp->cli, in);
}

/* Close the pair when either side ends. */
static void relay_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		struct relay_pair *rp = arg;

		if (rp->rl->last == rp)
			rp->rl->last = NULL;
		relay_pair_free(rp);
	}
}

/* Accept a client and connect to the target. */
static void relay_accept(struct evconnlistener *l, evutil_socket_t fd,
			 struct sockaddr *sa, int salen, void *arg)
{
	struct relay *rl = arg;
	struct relay_pair *rp = calloc(1, sizeof(*rp));
	struct sockaddr_in to = { .sin_family = AF_INET };

	(void)l;
	(void)sa;
	(void)salen;
	rp->rl = rl;
	rl->last = rp;
	rp->cli = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	rp->srv = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons((uint16_t)rl->target);
	bufferevent_setcb(rp->cli, relay_cli_read, NULL, relay_event, rp);
	bufferevent_setcb(rp->srv, relay_srv_read, NULL, relay_event, rp);
	bufferevent_enable(rp->cli, EV_READ);
	bufferevent_enable(rp->srv, EV_READ);
	bufferevent_socket_connect(rp->srv, (struct sockaddr *)&to, sizeof(to));
}

/* Start a relay to target on a free loopback port. */
static int relay_start(struct relay *rl, int target)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rl->target = target;
	rl->frozen = false;
	rl->proc_unavail = false;
	rl->last = NULL;
	rl->l = evconnlistener_new_bind(base, relay_accept, rl,
					LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
					16, (struct sockaddr *)&sa, sizeof(sa));
	if (rl->l == NULL)
		return -1;
	getsockname(evconnlistener_get_fd(rl->l), (struct sockaddr *)&sa,
		    &salen);
	rl->port = ntohs(sa.sin_port);
	return 0;
}

/* An upstream with call timeout secs whose NFS connection goes through
 * relay rl (started here), UP; args and *alen: a GETATTR of its root. */
static struct upstream *relayed_up(struct relay *rl, double secs,
				   struct state_log *log, uint8_t *args,
				   size_t *alen)
{
	struct upstream_params p = params(secs);
	struct upstream *u;
	struct fh root;

	CU_ASSERT_EQUAL_FATAL(relay_start(rl, env_nfs_port), 0);
	p.nfs_port = rl->port;
	u = new_up(&p, log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL_FATAL(upstream_get_state(u), UPSTREAM_UP);
	root = root_fh(u);
	*alen = getattr_args(args, &root);
	return u;
}

/*
 * A call is on the wire when upstream_call returns, not at the loop's next
 * turn (up_write_now): the relay's socket towards nfscached becomes
 * readable while the loop does not run. Without the immediate write the
 * bytes wait in libnfs's queue and poll times out (the bound only limits
 * how long a failure takes to show).
 */
static void test_call_is_sent_before_the_loop_turns(void)
{
	struct relay rl;
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct result r = { 0 };
	struct upstream *u;
	struct pollfd pfd;
	uint8_t args[128];
	size_t alen;

	u = relayed_up(&rl, 5, &log, args, &alen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rl.last);
	/* Nothing pending from the connection's own calls. */
	CU_ASSERT_EQUAL(evbuffer_get_length(bufferevent_get_input(rl.last->cli)), 0);
	pfd.fd = bufferevent_getfd(rl.last->cli);
	pfd.events = POLLIN;
	pfd.revents = 0;
	CU_ASSERT_EQUAL(poll(&pfd, 1, 0), 0);
	CU_ASSERT_EQUAL(call(u, PROC_GETATTR, args, alen, &c, &r), 0);
	CU_ASSERT_EQUAL(poll(&pfd, 1, 30000), 1);
	CU_ASSERT(pfd.revents & POLLIN);
	CU_ASSERT_EQUAL(r.done, 0);
	/* The loop then relays it and the reply comes back. */
	CU_ASSERT(run_until(is_done, &r, 10));
	CU_ASSERT_EQUAL(r.st, UPSTREAM_OK);
	CU_ASSERT_EQUAL(r.cb_in_call, 0);
	upstream_free(&u);
	evconnlistener_free(rl.l);
	result_clear(&r);
	run_until(never, NULL, 0.1);	/* let the relay pairs close */
}

/*
 * The NFS connection has Nagle off (TCP_NODELAY), as the Linux client's
 * RPC transport: libnfs leaves it on, and a call written while an earlier
 * segment waited for its ACK then waited for the peer's delayed ACK (1.3%
 * of W5's cold random READs took 2.5-5 ms instead of 0.2). The socket is
 * found among this process's descriptors by its peer, the relay's port.
 */
static void test_connection_has_nagle_off(void)
{
	struct relay rl;
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream *u;
	uint8_t args[128];
	size_t alen;
	int found = 0, nodelay = -1;

	u = relayed_up(&rl, 5, &log, args, &alen);
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int v = 0;
		socklen_t vlen = sizeof(v);

		if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0 ||
		    peer.sin_family != AF_INET ||
		    ntohs(peer.sin_port) != rl.port)
			continue;
		found++;
		CU_ASSERT_EQUAL(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v,
					   &vlen), 0);
		nodelay = v;
	}
	CU_ASSERT_EQUAL(found, 1);
	CU_ASSERT_EQUAL(nodelay, 1);
	upstream_free(&u);
	evconnlistener_free(rl.l);
	run_until(never, NULL, 0.1);	/* let the relay pairs close */
}

static void test_call_timeout_drops_connection(void)
{
	struct relay rl;
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct result r[2] = { { 0 } };
	struct results rs = { r, 2 };
	struct upstream_stats st;
	struct upstream *u;
	uint8_t args[128];
	size_t alen;

	u = relayed_up(&rl, 0.5, &log, args, &alen);

	rl.frozen = true;
	observed = u;
	CU_ASSERT_EQUAL(call(u, PROC_GETATTR, args, alen, &c, &r[0]), 0);
	CU_ASSERT_EQUAL(call(u, PROC_GETATTR, args, alen, &c, &r[1]), 0);
	CU_ASSERT_FATAL(run_until(all_done, &rs, 5));
	observed = NULL;
	/* The first to time out reports it; the connection is dropped and
	 * the other call in flight is lost with it. Both callbacks already
	 * see the state DOWN. */
	CU_ASSERT_EQUAL(r[0].st, UPSTREAM_ETIMEDOUT);
	CU_ASSERT_EQUAL(r[1].st, UPSTREAM_EDOWN);
	CU_ASSERT_EQUAL(r[0].state_at_cb, UPSTREAM_DOWN);
	CU_ASSERT_EQUAL(r[1].state_at_cb, UPSTREAM_DOWN);
	CU_ASSERT_EQUAL(r[0].done, 1);
	CU_ASSERT_EQUAL(r[1].done, 1);
	CU_ASSERT_NOT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.timeouts, 1);
	CU_ASSERT_EQUAL(st.errors, 2);
	CU_ASSERT_EQUAL(st.disconnects, 1);
	CU_ASSERT(log.n[UPSTREAM_DOWN] >= 1);

	rl.frozen = false;
	CU_ASSERT(run_until(is_up, &u, 10));
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.connects, 2);
	CU_ASSERT_EQUAL(call_sync(u, PROC_GETATTR, args, alen, &c, &r[0]),
			UPSTREAM_OK);
	CU_ASSERT_EQUAL(r[0].done, 1);
	upstream_free(&u);
	evconnlistener_free(rl.l);
	result_clear(&r[0]);
	result_clear(&r[1]);
	run_until(never, NULL, 0.1);	/* let the relay pairs close */
}

/* True once the logged state went UP a second time. */
static bool up_again(void *arg)
{
	const struct state_log *log = arg;

	return log->n[UPSTREAM_UP] >= 2 && log->last == UPSTREAM_UP;
}

/* True once the logged state went DOWN. */
static bool went_down(void *arg)
{
	return ((const struct state_log *)arg)->n[UPSTREAM_DOWN] > 0;
}

/*
 * The server closes a connection no call waits on (as Ganesha does after
 * about 5 idle minutes): the upstream reconnects at once, CONNECTING and
 * back UP, never DOWN, counted as an idle close. Closed again while the
 * reconnect cannot get through, it is an outage: DOWN.
 */
static void test_idle_close_reconnects_without_going_down(void)
{
	struct relay rl;
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct upstream_stats st;
	struct result r = { 0 };
	struct upstream *u;
	uint8_t args[128];
	size_t alen;

	u = relayed_up(&rl, 5, &log, args, &alen);
	/* Up long enough for a close to count as an idle one. */
	run_until(never, NULL, 1.2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rl.last);
	relay_pair_free(rl.last);
	rl.last = NULL;
	CU_ASSERT_FATAL(run_until(up_again, &log, 10));
	CU_ASSERT_EQUAL(log.n[UPSTREAM_DOWN], 0);
	CU_ASSERT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.idle_closes, 1);
	CU_ASSERT_EQUAL(st.disconnects, 1);
	CU_ASSERT_EQUAL(st.connects, 2);
	CU_ASSERT_EQUAL(call_sync(u, PROC_GETATTR, args, alen, &c, &r),
			UPSTREAM_OK);
	result_clear(&r);

	/* Now the relay takes no new connection: the reconnect fails. */
	run_until(never, NULL, 1.2);
	evconnlistener_free(rl.l);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rl.last);
	relay_pair_free(rl.last);
	rl.last = NULL;
	CU_ASSERT(run_until(went_down, &log, 10));
	CU_ASSERT(log.n[UPSTREAM_DOWN] >= 1);
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.idle_closes, 2);
	upstream_free(&u);
	run_until(never, NULL, 0.1);	/* let the relay pairs close */
}

/* The upstream freed by free_on_down. */
static struct upstream *victim2;

/* Free victim2 when it goes DOWN. */
static void free_on_down(struct upstream *u, enum upstream_state s,
			 void *arg)
{
	(void)u;
	(void)arg;
	if (s == UPSTREAM_DOWN)
		upstream_free(&victim2);
}

static void test_free_from_state_callback_on_timeout(void)
{
	struct relay rl;
	struct upstream_params p = params(0.3);
	struct nfs_cred c = cred_of(0, 0);
	struct result r[2] = { { 0 } };
	struct results rs = { r, 2 };
	struct fh root;
	uint8_t args[128];
	size_t alen;

	CU_ASSERT_EQUAL_FATAL(relay_start(&rl, env_nfs_port), 0);
	p.nfs_port = rl.port;
	victim2 = upstream_new(base, &p, free_on_down, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(victim2);
	CU_ASSERT_EQUAL(upstream_start(victim2), 0);
	CU_ASSERT_FATAL(run_until(is_up, &victim2, 10));
	root = root_fh(victim2);
	alen = getattr_args(args, &root);
	rl.frozen = true;
	CU_ASSERT_EQUAL(call(victim2, PROC_GETATTR, args, alen, &c, &r[0]), 0);
	CU_ASSERT_EQUAL(call(victim2, PROC_GETATTR, args, alen, &c, &r[1]), 0);
	CU_ASSERT_FATAL(run_until(all_done, &rs, 5));
	CU_ASSERT_PTR_NULL(victim2);
	CU_ASSERT_EQUAL(r[0].st, UPSTREAM_ETIMEDOUT);
	CU_ASSERT_EQUAL(r[1].st, UPSTREAM_EDOWN);
	run_until(never, NULL, 0.5);
	CU_ASSERT_EQUAL(r[0].done, 1);
	CU_ASSERT_EQUAL(r[1].done, 1);
	evconnlistener_free(rl.l);
	result_clear(&r[0]);
	result_clear(&r[1]);
	run_until(never, NULL, 0.1);
}

static void test_rpc_failure_is_eproto_and_keeps_connection(void)
{
	struct relay rl;
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct nfs_cred c = cred_of(0, 0);
	struct result r = { 0 };
	struct upstream_stats st;
	struct upstream *u;
	uint8_t args[128];
	size_t alen;

	u = relayed_up(&rl, 10, &log, args, &alen);

	rl.proc_unavail = true;
	CU_ASSERT_EQUAL(call_sync(u, PROC_GETATTR, args, alen, &c, &r),
			UPSTREAM_EPROTO);
	CU_ASSERT_EQUAL(r.len, 0);
	CU_ASSERT_PTR_NULL(r.buf);
	CU_ASSERT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	rl.proc_unavail = false;
	/* Same connection, next call fine. */
	CU_ASSERT_EQUAL(call_sync(u, PROC_GETATTR, args, alen, &c, &r),
			UPSTREAM_OK);
	CU_ASSERT_EQUAL(xr_u32(&r, 0), NFS3_OK);
	upstream_stats_get(u, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	CU_ASSERT_EQUAL(st.timeouts, 0);
	CU_ASSERT_EQUAL(st.connects, 1);
	CU_ASSERT_EQUAL(st.disconnects, 0);
	CU_ASSERT_EQUAL(st.calls[PROC_GETATTR], 2);
	CU_ASSERT_EQUAL(st.replies[PROC_GETATTR], 1);
	CU_ASSERT_EQUAL(log.n[UPSTREAM_DOWN], 0);
	upstream_free(&u);
	evconnlistener_free(rl.l);
	result_clear(&r);
	run_until(never, NULL, 0.1);	/* let the relay pairs close */
}

static void test_server_stop_gives_edown_then_recovers(void)
{
	struct nfs_cred c = cred_of(0, 0);
	struct fh root = root_fh(up);
	struct result r[4] = { { 0 } }, again = { 0 };
	struct results rs = { r, 4 };
	struct upstream_stats st0, st1;
	uint8_t args[128];
	size_t alen = getattr_args(args, &root);
	int i;

	CU_ASSERT_EQUAL_FATAL(upstream_get_state(up), UPSTREAM_UP);
	upstream_stats_get(up, &st0);
	memset(&main_states, 0, sizeof(main_states));
	/* The server goes first; the loop does not run, so the connection
	 * still looks UP and the calls are taken. They are written into the
	 * closed connection at once (up_write_now): the first may be taken
	 * by the kernel, later ones fail (EPIPE), and the failure is acted
	 * on by the loop, never inside upstream_call. */
	CU_ASSERT_EQUAL_FATAL(sh("stop"), 0);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, alen, &c, &r[i]),
				0);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(r[i].done, 0);
	CU_ASSERT_FATAL(run_until(all_done, &rs, 10));
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(r[i].done, 1);
		CU_ASSERT_EQUAL(r[i].st, UPSTREAM_EDOWN);
		CU_ASSERT_EQUAL(r[i].cb_in_call, 0);
	}
	CU_ASSERT_NOT_EQUAL(upstream_get_state(up), UPSTREAM_UP);
	CU_ASSERT(main_states.n[UPSTREAM_DOWN] >= 1);
	CU_ASSERT_EQUAL(call(up, PROC_GETATTR, args, alen, &c, &again), -1);
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(st1.disconnects, st0.disconnects + 1);
	CU_ASSERT_EQUAL(st1.errors, st0.errors + 4);
	CU_ASSERT_EQUAL(st1.calls[PROC_GETATTR], st0.calls[PROC_GETATTR] + 4);
	CU_ASSERT_EQUAL(st1.replies[PROC_GETATTR], st0.replies[PROC_GETATTR]);

	/* Still down a while later (retries fail), and refusing calls. */
	run_until(never, NULL, 1.0);
	CU_ASSERT_NOT_EQUAL(upstream_get_state(up), UPSTREAM_UP);
	CU_ASSERT_EQUAL(call(up, PROC_NULL, NULL, 0, &c, &again), -1);
	CU_ASSERT(strlen(upstream_last_error(up)) > 0);

	CU_ASSERT_EQUAL_FATAL(sh("start"), 0);
	/* Backoff is at most 5 s. */
	CU_ASSERT_FATAL(run_until(is_up, &up, 15));
	upstream_stats_get(up, &st1);
	CU_ASSERT_EQUAL(st1.connects, st0.connects + 1);
	CU_ASSERT_EQUAL(main_states.last, UPSTREAM_UP);
	CU_ASSERT_EQUAL(upstream_rtmax(up), MiB);
	root = root_fh(up);
	alen = getattr_args(args, &root);
	CU_ASSERT_EQUAL(call_sync(up, PROC_GETATTR, args, alen, &c, &again),
			UPSTREAM_OK);
	CU_ASSERT_EQUAL(xr_u32(&again, 0), NFS3_OK);
	CU_ASSERT_EQUAL(xr_u32(&again, 4), NF3DIR);
	result_clear(&again);
	for (i = 0; i < 4; i++)
		result_clear(&r[i]);
}

static void test_free_main(void)
{
	upstream_free(&up);
	CU_ASSERT_PTR_NULL(up);
}

/* ------------------------------------------------------ host names */

/* A resolver on base that sends no query anywhere: /etc/hosts only (no
 * nameserver: this machine's resolv.conf names a non-loopback one). */
static struct evdns_base *hosts_only_dns(void)
{
	struct evdns_base *dns = evdns_base_new(base, 0);

	if (dns && evdns_base_load_hosts(dns, "/etc/hosts") != 0) {
		evdns_base_free(dns, 0);
		return NULL;
	}
	return dns;
}

/* A server given as a name /etc/hosts resolves (localhost) still gets UP,
 * and reconnects (which look it up again) too. */
static void test_host_name_connects(void)
{
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream_params p = params(10);
	struct evdns_base *dns = hosts_only_dns();
	struct upstream *u;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dns);
	p.server = "localhost";
	p.dns = dns;
	u = new_up(&p, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(upstream_get_state(u), UPSTREAM_UP);
	CU_ASSERT_PTR_NOT_NULL(upstream_root_fh(u, NULL));
	CU_ASSERT_STRING_EQUAL(upstream_last_error(u), "");
	upstream_free(&u);
	evdns_base_free(dns, 0);
}

/* A name nothing resolves (here: no nameserver, so the lookup waits
 * until the step's timeout) fails each attempt: DOWN, retried, and the
 * reason names the lookup. */
static void test_unresolvable_name_is_down_with_reason(void)
{
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream_params p = params(0.3);
	struct evdns_base *dns = hosts_only_dns();
	struct upstream *u;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dns);
	p.server = "no-such-host.invalid";
	p.dns = dns;
	u = upstream_new(base, &p, state_note, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(upstream_start(u), 0);
	CU_ASSERT(run_until(two_failed_attempts, &log, 10));
	CU_ASSERT_EQUAL(log.n[UPSTREAM_UP], 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(upstream_last_error(u),
				      "host name lookup: timed out"));
	upstream_free(&u);
	evdns_base_free(dns, 0);
}

/* True once the UDP socket *arg has a datagram waiting. */
static bool has_datagram(void *arg)
{
	struct pollfd pfd = { .fd = *(int *)arg, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * A lookup the resolver never answers leaves the upstream CONNECTING
 * without blocking the loop (the test's own timer keeps running), and
 * freeing the upstream then cancels it: evdns's late cancel callback
 * finds nothing freed (ASan tree).
 */
static void test_held_lookup_blocks_nothing_and_cancels(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	struct state_log log = { { 0 }, UPSTREAM_DOWN };
	struct upstream_params p = params(30);
	struct evdns_base *dns = evdns_base_new(base, 0);
	struct upstream *u;
	char ns[64];
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(dns);
	CU_ASSERT_FATAL(s >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CU_ASSERT_FATAL(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(getsockname(s, (struct sockaddr *)&sa, &salen) == 0);
	snprintf(ns, sizeof(ns), "127.0.0.1:%u", ntohs(sa.sin_port));
	CU_ASSERT_FATAL(evdns_base_nameserver_ip_add(dns, ns) == 0);
	p.server = "silent.example";
	p.dns = dns;
	u = upstream_new(base, &p, state_note, &log);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(upstream_start(u), 0);
	/* The query reached the silent resolver while the loop ran on. */
	CU_ASSERT_FATAL(run_until(has_datagram, &s, 10));
	CU_ASSERT_EQUAL(upstream_get_state(u), UPSTREAM_CONNECTING);
	CU_ASSERT_EQUAL(log.n[UPSTREAM_UP], 0);
	upstream_free(&u);
	/* Let evdns deliver the cancellation. */
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	evdns_base_free(dns, 0);
	close(s);
}

/* ------------------------------------------------------------ registry */

/* Create the event base (precise timers, as the daemon uses). */
static int suite_init(void)
{
	struct event_config *cfg = event_config_new();

	if (cfg == NULL)
		return -1;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base ? 0 : -1;
}

/* Free the event base. */
static int suite_clean(void)
{
	upstream_free(&up);
	event_base_free(base);
	base = NULL;
	return 0;
}

/* Read a required environment variable; NULL (and a message) if unset. */
static const char *need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0')
		fprintf(stderr, "test_upstream: %s is not set (run under "
			"tests/integration/harness.sh --no-proxy)\n", name);
	return v;
}

int test_register(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "reaches_up_with_root_handle_and_sizes",
		  test_reaches_up_with_root_handle_and_sizes },
		{ "max_transfer_caps_sizes", test_max_transfer_caps_sizes },
		{ "null_call_answers", test_null_call_answers },
		{ "getattr_root_is_directory", test_getattr_root_is_directory },
		{ "lookup_and_read_file", test_lookup_and_read_file },
		{ "result_join", test_result_join },
		{ "access_follows_credential",
		  test_access_follows_credential },
		{ "every_procedure_round_trips",
		  test_every_procedure_round_trips },
		{ "bad_calls_are_refused_without_callback",
		  test_bad_calls_are_refused_without_callback },
		{ "bad_params_are_refused", test_bad_params_are_refused },
		{ "free_completes_calls_in_flight",
		  test_free_completes_calls_in_flight },
		{ "free_from_inside_callback", test_free_from_inside_callback },
		{ "silent_server_times_out_connecting",
		  test_silent_server_times_out_connecting },
		{ "call_timeout_drops_connection",
		  test_call_timeout_drops_connection },
		{ "idle_close_reconnects_without_going_down",
		  test_idle_close_reconnects_without_going_down },
		{ "call_is_sent_before_the_loop_turns",
		  test_call_is_sent_before_the_loop_turns },
		{ "connection_has_nagle_off", test_connection_has_nagle_off },
		{ "free_from_state_callback_on_timeout",
		  test_free_from_state_callback_on_timeout },
		{ "rpc_failure_is_eproto_and_keeps_connection",
		  test_rpc_failure_is_eproto_and_keeps_connection },
		{ "server_stop_gives_edown_then_recovers",
		  test_server_stop_gives_edown_then_recovers },
		{ "host_name_connects", test_host_name_connects },
		{ "unresolvable_name_is_down_with_reason",
		  test_unresolvable_name_is_down_with_reason },
		{ "held_lookup_blocks_nothing_and_cancels",
		  test_held_lookup_blocks_nothing_and_cancels },
		{ "free_main", test_free_main },
	};
	const char *nfs = need_env("NFSC_DIRECT_NFS_PORT");
	const char *mnt = need_env("NFSC_DIRECT_MOUNT_PORT");
	CU_pSuite s;
	size_t i;

	signal(SIGPIPE, SIG_IGN);	/* as nfscached's main (upstream.h) */
	env_export_dir = need_env("NFSC_EXPORT_DIR");
	env_upstreamctl = need_env("NFSC_UPSTREAMCTL");
	if (!nfs || !mnt || !env_export_dir || !env_upstreamctl)
		return -1;
	env_nfs_port = atoi(nfs);
	env_mount_port = atoi(mnt);
	s = CU_add_suite("upstream", suite_init, suite_clean);
	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
