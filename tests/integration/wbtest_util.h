/* SPDX-License-Identifier: MIT */
/*
 * wbtest_util: helpers for the write-back integration tests (test_wb_*.c):
 * a synchronous NFSv3 client over the project's raw RPC client (rawrpc.h,
 * libtirpc, no libnfs), so every WRITE and COMMIT verifier is seen exactly
 * as the server sent it (RFC 1813 sections 3.3.7 and 3.3.21); pipelined
 * WRITEs; /metrics snapshots; the export directory on disk; data patterns;
 * and CUnit checks that print what they compare.
 *
 * A connection (struct wb_conn) is one TCP connection to the proxy or to
 * Ganesha directly (the harness's NFSC_PROXY_* or NFSC_DIRECT_* ports),
 * with the export root handle from MOUNT and one AUTH_SYS credential that
 * the caller may change between calls. Calls return the reply's nfsstat3
 * (>= 0), or a negative WB_ERR_* when no usable reply came.
 */
#ifndef NFSCACHED_TESTS_WBTEST_UTIL_H
#define NFSCACHED_TESTS_WBTEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nfs3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"

/* Outcomes without a usable NFS reply (rawrpc_io values, and one more). */
enum wb_err {
	WB_ERR_CLOSED = RAWRPC_CLOSED,	/* the server closed the connection */
	WB_ERR_TIMEOUT = RAWRPC_TIMEOUT,	/* no reply in time */
	WB_ERR_PROTO = RAWRPC_EPROTO,	/* a reply that does not decode */
	WB_ERR_LOCAL = RAWRPC_ERROR,	/* socket, memory, encoding */
	WB_ERR_REJECTED = -10,		/* MSG_DENIED or accept_stat != SUCCESS */
};

#define WB_TIMEOUT_MS 30000	/* default per-call timeout */
#define WB_KIB 1024u
#define WB_MIB (1024u * 1024u)

/* A file handle (up to NFS3_FHSIZE bytes), held by value. */
struct wb_fh {
	uint32_t len;
	uint8_t data[NFS3_FHSIZE];
};

/* One connection to an NFSv3 server with a credential. */
struct wb_conn {
	int fd;				/* -1 when closed */
	uint16_t nfs_port;
	uint16_t mnt_port;
	struct rawrpc_cred cred;	/* used by every call */
	struct wb_fh root;		/* the export root, from MNT /export */
	int send_err;			/* why the last wb_send failed */
	char name[16];			/* "proxy" or "direct", for messages */
};

/* What a WRITE reply said. */
struct wb_wres {
	int st;				/* nfsstat3 or WB_ERR_* */
	uint32_t count;
	int committed;			/* stable_how */
	uint8_t verf[NFS3_WRITEVERFSIZE];
	bool has_post;
	fattr3 post;			/* file_wcc.after, when has_post */
};

/* One WRITE of a pipelined batch (wb_write_many). */
struct wb_wreq {
	uint64_t off;
	uint32_t len;
	const uint8_t *data;		/* len bytes, the caller's */
	int stable;			/* stable_how */
};

/* ---- connections ---- */

/*
 * Connect to the server named by which, "proxy" (NFSC_PROXY_NFS_PORT,
 * NFSC_PROXY_MOUNT_PORT) or "direct" (NFSC_DIRECT_*), mount /export as
 * root over MOUNT v3 and open the NFS connection as uid/gid. Returns 0, or
 * -1 after printing why (c->fd is then -1).
 */
int wb_open(struct wb_conn *c, const char *which, uint32_t uid, uint32_t gid);

/* Close c's connection (c->fd becomes -1). Safe on a closed c. */
void wb_close(struct wb_conn *c);

/* Close and open again on the same ports (after a server restart); the
 * root handle is fetched again. Returns 0 or -1. */
int wb_reopen(struct wb_conn *c);

/* Use uid/gid (one group) for c's next calls. */
void wb_set_cred(struct wb_conn *c, uint32_t uid, uint32_t gid);

/* ---- calls (each returns nfsstat3 >= 0 or a WB_ERR_*) ---- */

/*
 * Send NFSv3 procedure proc with args (encoded by argp) and wait up to
 * timeout_ms for its reply; decode the results into res with resp (the
 * caller zeroes res first: XDR decodes into what its pointers point to;
 * release with xdr_free(resp, res) whatever the outcome). Returns
 * the results' leading nfsstat3.
 */
int wb_call(struct wb_conn *c, uint32_t proc, xdrproc_t argp,
	    const void *args, xdrproc_t resp, void *res, int timeout_ms);

/* Send the call only; returns its xid, or 0 if it could not be sent
 * (c->send_err then says why: WB_ERR_CLOSED or WB_ERR_LOCAL). */
uint32_t wb_send(struct wb_conn *c, uint32_t proc, xdrproc_t argp,
		 const void *args);

/* Receive the reply to xid (the next record must be it) as wb_call. */
int wb_recv(struct wb_conn *c, uint32_t xid, xdrproc_t resp, void *res,
	    int timeout_ms);

int wb_getattr(struct wb_conn *c, const struct wb_fh *fh, fattr3 *attr);
int wb_lookup(struct wb_conn *c, const struct wb_fh *dir, const char *name,
	      struct wb_fh *fh, fattr3 *attr);
/*
 * CREATE name in dir with createmode how (UNCHECKED or GUARDED), mode, and
 * size unless size < 0. *fh receives the new handle (len 0 if the reply
 * had none); *attr its attributes (zeroed if none).
 */
int wb_create(struct wb_conn *c, const struct wb_fh *dir, const char *name,
	      int how, uint32_t mode, int64_t size, struct wb_fh *fh,
	      fattr3 *attr);
/* SETATTR of the size (size >= 0) and/or the mode (mode >= 0), no guard;
 * *post receives obj_wcc.after (zeroed if none; may be NULL). */
int wb_setattr(struct wb_conn *c, const struct wb_fh *fh, int64_t size,
	       int32_t mode, fattr3 *post);
/* SETATTR of the owner (uid >= 0) and/or the group (gid >= 0), no guard. */
int wb_setattr_owner(struct wb_conn *c, const struct wb_fh *fh, int64_t uid,
		     int64_t gid);
/* WRITE buf[0..len) at off with stable_how stable; r (may be NULL) gets
 * the reply's count, committed, verifier and post-op attributes. */
int wb_write(struct wb_conn *c, const struct wb_fh *fh, uint64_t off,
	     const void *buf, uint32_t len, int stable, struct wb_wres *r);
/* COMMIT the whole file (offset 0, count 0) within timeout_ms; verf (8
 * bytes, may be NULL) receives the reply's verifier. */
int wb_commit(struct wb_conn *c, const struct wb_fh *fh, uint8_t *verf,
	      int timeout_ms);
/* Send a COMMIT of the whole file without waiting; the xid or 0. */
uint32_t wb_commit_send(struct wb_conn *c, const struct wb_fh *fh);
/* Receive the reply of the COMMIT sent as xid. */
int wb_commit_recv(struct wb_conn *c, uint32_t xid, uint8_t *verf,
		   int timeout_ms);
/*
 * COMMIT the whole file, calling again while the reply is NFS3ERR_JUKEBOX
 * (the proxy's wait for its upstream timed out), for up to total_ms in
 * all; *jukeboxes (may be NULL) counts those replies. Returns the last
 * status.
 */
int wb_commit_retry(struct wb_conn *c, const struct wb_fh *fh, uint8_t *verf,
		    int total_ms, unsigned *jukeboxes);
/* READ up to len bytes at off into buf; *count and *eof from the reply. */
int wb_read(struct wb_conn *c, const struct wb_fh *fh, uint64_t off,
	    uint32_t len, void *buf, uint32_t *count, bool *eof);
int wb_remove(struct wb_conn *c, const struct wb_fh *dir, const char *name);
/* LINK file as name in dir. */
int wb_link(struct wb_conn *c, const struct wb_fh *file,
	    const struct wb_fh *dir, const char *name);
/* FSINFO of fh: *wtmax (may be NULL) from the reply. */
int wb_fsinfo(struct wb_conn *c, const struct wb_fh *fh, uint32_t *wtmax);

/*
 * Send the n WRITEs of reqs with at most window in flight on c (replies
 * may come in any order) and store each reply in res[i]. The WRITEs that
 * fill the window leave corked (TCP_CORK), in as few segments as the
 * socket allows, so the server reads a full window's first WRITEs in one
 * read, however the test and the server are scheduled. Returns 0 when
 * every call got a reply (whatever its status), or a WB_ERR_* when the
 * connection failed (res[i].st is WB_ERR_* for calls without a reply).
 */
int wb_write_many(struct wb_conn *c, const struct wb_fh *fh,
		  const struct wb_wreq *reqs, size_t n, unsigned window,
		  struct wb_wres *res);

/*
 * Send the n WRITEs of reqs over and over, in order, keeping window in
 * flight all the time (no drain between rounds), until stop_fd is readable
 * (or at EOF) at the end of a round; then wait for the replies. Returns
 * the number of whole rounds sent (>= 1), or a WB_ERR_* when the
 * connection failed, or -100 - i when WRITE reqs[i] did not get NFS3_OK.
 */
long wb_write_stream(struct wb_conn *c, const struct wb_fh *fh,
		     const struct wb_wreq *reqs, size_t n, unsigned window,
		     int stop_fd);

/*
 * Read [0, len) of fh into buf in READs of at most 1 MiB. Returns the
 * bytes read (fewer at EOF), or -1 after printing a failed READ.
 */
int64_t wb_read_all(struct wb_conn *c, const struct wb_fh *fh, uint8_t *buf,
		    uint64_t len);

/* "NFS3ERR_NOSPC", "WB_ERR_TIMEOUT", ... for a status; static string. */
const char *wb_stat_name(int st);

/* ---- metrics (the proxy at NFSC_METRICS_ADDR) ---- */

#define WB_M_UP_WRITE	"nfscached_upstream_rpcs_total{procedure=\"write\"}"
#define WB_M_UP_COMMIT	"nfscached_upstream_rpcs_total{procedure=\"commit\"}"
#define WB_M_UP_GETATTR	"nfscached_upstream_rpcs_total{procedure=\"getattr\"}"
#define WB_M_REVAL	"nfscached_writes_revalidated_total"
#define WB_M_REVAL_SHARED "nfscached_writes_revalidation_shared_total"
#define WB_M_CL_WRITES	"nfscached_client_write_calls_total"
#define WB_M_CL_COMMITS	"nfscached_client_commit_calls_total"
#define WB_M_ABSORBED	"nfscached_writes_absorbed_total"
#define WB_M_THROUGH	"nfscached_writes_through_total"
#define WB_M_WB_WRITES	"nfscached_upstream_write_calls_total"
#define WB_M_WB_BYTES	"nfscached_upstream_write_bytes_total"
#define WB_M_WB_COMMITS	"nfscached_upstream_commit_calls_total"
#define WB_M_RESENT	"nfscached_writeback_resent_bytes_total"
#define WB_M_RETRIES	"nfscached_writeback_retries_total"
#define WB_M_ERRORS	"nfscached_writeback_errors_total"
#define WB_M_REPORTED	"nfscached_writeback_errors_reported_total"
#define WB_M_DIRTY	"nfscached_cache_bytes{state=\"dirty\"}"
#define WB_M_WRITING	"nfscached_cache_bytes{state=\"writing\"}"
#define WB_M_UNSTABLE	"nfscached_cache_bytes{state=\"unstable\"}"
#define WB_M_DIRTY_FILES "nfscached_cache_dirty_files"
#define WB_M_PINNED	"nfscached_cache_pinned_pages"

/* One GET /metrics. */
struct wb_snap {
	char *text;		/* NULL if the fetch failed */
};

/* What wb_snap_delta returns for a series it could not read: no count a
 * test expects. */
#define WB_ABSENT 1e18

/* Fetch /metrics into *s (tmetrics_get); 0, or -1 after recording a
 * failed assertion. */
int wb_snap_take(struct wb_snap *s);
void wb_snap_free(struct wb_snap *s);
/* The value of series in s; -1 if s holds no page or (a failed assertion
 * recorded) lacks series: every series is always on the page. */
double wb_snap_get(const struct wb_snap *s, const char *series);
/* after - before for series; WB_ABSENT (a failed assertion recorded) if
 * either lacks it. */
double wb_snap_delta(const struct wb_snap *before, const struct wb_snap *after,
		     const char *series);
/* The value of series now (one fetch), or -1 as wb_snap_get. */
double wb_metric(const char *series);
/* Write-back's upstream WRITE size, bytes: the proxy's writeback_wsize
 * (nfscached_config_writeback_wsize_bytes) capped by wtmax; 0 when the
 * metric cannot be read. */
uint32_t wb_wsize(uint32_t wtmax);
/* Print every write-back series' change between before and after. */
void wb_snap_print(const char *tag, const struct wb_snap *before,
		   const struct wb_snap *after);

/*
 * Poll series every 20 ms until it is >= want or timeout_ms passes.
 * Returns the last value read.
 */
double wb_wait_metric(const char *series, double want, int timeout_ms);

/* ---- the export directory on disk ---- */

/* Read up to len bytes of $NFSC_EXPORT_DIR/name at off; bytes or -1. */
ssize_t wb_disk_read(const char *name, uint64_t off, void *buf, size_t len);
/* Write len bytes at off of $NFSC_EXPORT_DIR/name (no truncation) and
 * fsync; 0 or -1 after printing why. */
int wb_disk_write(const char *name, uint64_t off, const void *buf,
		  size_t len);
/* The size of $NFSC_EXPORT_DIR/name, or -1. */
int64_t wb_disk_size(const char *name);

/* ---- data ---- */

/* Fill buf[0..n) with bytes depending on file offset off+i and seed. */
void wb_pattern(uint8_t *buf, size_t n, uint64_t off, uint32_t seed);
/* The first offset where a and b differ, or n if equal. */
size_t wb_first_diff(const uint8_t *a, const uint8_t *b, size_t n);
/* xorshift64*: the next value of *s (seeded non-zero). */
uint64_t wb_rand(uint64_t *s);
/* Milliseconds on the monotonic clock. */
uint64_t wb_now_ms(void);
/* Sleep ms milliseconds. */
void wb_sleep_ms(unsigned ms);
/* The value of environment variable name, or NULL after printing. */
const char *wb_env(const char *name);
/* A name unique to this process: prefix-PID-N. */
void wb_unique_name(char *out, size_t n, const char *prefix);

/* ---- state kept across a proxy restart (test_wb_kill.sh, ...) ---- */

/* The verifier v (NFS3_WRITEVERFSIZE bytes) as 16 hex digits in out
 * (room for 17). */
void wb_verf_hex(const uint8_t *v, char *out);
/*
 * Save a file's name (no blanks, < 64 bytes), a verifier as hex (16
 * digits) and its handle to $NFSC_TMP/TAG.state, replacing it. Returns 0,
 * or -1 after recording a failed assertion.
 */
int wb_state_save(const char *tag, const char *name, const char *hv,
		  const struct wb_fh *fh);
/* Load what wb_state_save saved under tag: name (room for 64), hv (room
 * for 17), *fh. Returns 0, or -1 (a missing or malformed file). */
int wb_state_load(const char *tag, char *name, char *hv, struct wb_fh *fh);

/* ---- checks (CUnit assertions that print their values) ---- */

void wb_check_stat(int got, int want, const char *what, const char *file,
		   unsigned line);

#define WB_CHECK(cond, ...) tcheck(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define WB_EQ(a, b) \
	tcheck_eq((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
#define WB_STAT(got, want) \
	wb_check_stat((got), (want), #got, __FILE__, __LINE__)

#endif
