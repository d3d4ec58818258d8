/* SPDX-License-Identifier: MIT */
/*
 * cachetest_util: helpers for the page-cache integration tests
 * (test_cache_*.c): /metrics snapshots and deltas, a pipelined NFSv3
 * client (many raw READ/WRITE calls in flight on one connection), files
 * written behind NFS's back in the export directory, a seeded PRNG and
 * data patterns, and the VmRSS of a process.
 *
 * Synchronous calls come from nfsclient.h; this module only adds what it
 * lacks. Like nfsclient, it never includes <rpc/rpc.h> (libnfs's XDR
 * types clash with libtirpc's).
 */
#ifndef NFSCACHED_TESTS_CACHETEST_UTIL_H
#define NFSCACHED_TESTS_CACHETEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "nfsclient.h"

/* ---- environment ---- */

/*
 * The value of environment variable name, or NULL after printing that it
 * is missing (the harness sets NFSC_*; see tests/integration/harness.sh).
 */
const char *ct_env(const char *name);

/* An unsigned number from environment variable name, or dflt if unset. */
uint64_t ct_env_u64(const char *name, uint64_t dflt);

/* ---- metrics ---- */

/* Series the cache tests read (Prometheus text, exact label sets). */
#define CT_UP_READ	"nfscached_upstream_rpcs_total{procedure=\"read\"}"
#define CT_UP_WRITE	"nfscached_upstream_rpcs_total{procedure=\"write\"}"
#define CT_UP_GETATTR	"nfscached_upstream_rpcs_total{procedure=\"getattr\"}"
#define CT_UP_ACCESS	"nfscached_upstream_rpcs_total{procedure=\"access\"}"
#define CT_UP_COMMIT	"nfscached_upstream_rpcs_total{procedure=\"commit\"}"
#define CT_READS_HIT	"nfscached_reads_total{result=\"hit\"}"
#define CT_READS_PARTIAL "nfscached_reads_total{result=\"partial\"}"
#define CT_READS_MISS	"nfscached_reads_total{result=\"miss\"}"
#define CT_READS_COALESCED "nfscached_reads_total{result=\"coalesced\"}"
#define CT_READS_BYPASS	"nfscached_reads_total{result=\"bypass\"}"
#define CT_BYTES_CACHE	"nfscached_read_bytes_total{source=\"cache\"}"
#define CT_BYTES_UPSTREAM "nfscached_read_bytes_total{source=\"upstream\"}"
#define CT_FETCHES	"nfscached_cache_fetches_total"
#define CT_PAGES	"nfscached_cache_pages"
#define CT_PAGE_BYTES	"nfscached_cache_page_bytes"
#define CT_PAGE_SIZE	"nfscached_cache_page_size_bytes"
#define CT_PAGE_COST	"nfscached_cache_page_cost_bytes"
#define CT_BUDGET	"nfscached_cache_budget_bytes"
#define CT_META_BYTES	"nfscached_cache_metadata_bytes"
#define CT_EVICTIONS	"nfscached_cache_evictions_total"
#define CT_INVALIDATIONS "nfscached_cache_invalidations_total"
#define CT_INVAL_BY(cause) \
	"nfscached_cache_invalidations_by_cause_total{cause=\"" cause "\"}"

/* Returned by ct_metric() for a series the page does not have. */
#define CT_ABSENT UINT64_MAX

/* One GET /metrics of the proxy at NFSC_METRICS_ADDR. */
struct ct_metrics {
	char *text;		/* the body, NUL-terminated; NULL if unread */
};

/*
 * Fetch /metrics into *m (tmetrics_get; overwritten; release with
 * ct_metrics_free). Returns 0, or -1 after recording a failed assertion
 * (m->text is then NULL): a test that cannot read its metrics fails.
 */
int ct_metrics_read(struct ct_metrics *m);

/* Free m->text and set it to NULL. */
void ct_metrics_free(struct ct_metrics *m);

/*
 * The value of series (name and labels exactly as rendered, e.g.
 * CT_UP_READ) in m; CT_ABSENT, after recording a failed assertion, if m
 * holds no page or lacks series (every series is always on the page).
 * Values are integers on this page.
 */
uint64_t ct_metric(const struct ct_metrics *m, const char *series);

/* after - before for series; CT_ABSENT (a failed assertion recorded) if
 * either lacks it. */
uint64_t ct_delta(const struct ct_metrics *before,
		  const struct ct_metrics *after, const char *series);

/* The value of series now (one fetch), or CT_ABSENT. */
uint64_t ct_metric_now(const char *series);

/*
 * Print "cachetest: TAG: SERIES +DELTA (now VALUE)" for every series,
 * counter or gauge, whose value differs between before and after (latency
 * and byte counters left out): the evidence a failing check needs.
 */
void ct_print_deltas(const char *tag, const struct ct_metrics *before,
		     const struct ct_metrics *after);

/* ---- pipelined client ---- */

struct ct_pipe;

/*
 * One call queued on a pipe. The caller owns the struct and, for READ,
 * the destination buffer; both must stay valid until done is set (the
 * reply came or the call failed) or the pipe is closed.
 */
struct ct_op {
	int done;		/* set when the callback ran */
	int st;			/* nfsstat3, or an nfsc_rc (< 0) */
	/* The rest is filled from an NFS3_OK reply only. */
	uint32_t count;		/* READ/WRITE: count in the reply */
	int eof;		/* READ: eof in the reply */
	int committed;		/* WRITE: stable_how in the reply */
	int has_attr;		/* post-op attributes came (READ, WRITE,
				 * COMMIT) */
	fattr3 attr;		/* those attributes */
	uint8_t *buf;		/* READ: receives min(count, len) bytes */
	uint32_t len;		/* READ: bytes asked for / WRITE: sent */
	uint64_t off;		/* the call's offset */
	void *user;		/* the caller's */
};

/*
 * Mount url (nfs://HOST/PATH?nfsport=N&mountport=M) as uid/gid with a
 * fresh libnfs context whose RPC socket carries the pipe's calls. Returns
 * the pipe, or NULL after printing why. Release with ct_pipe_close().
 */
struct ct_pipe *ct_pipe_open(const char *url, uint32_t uid, uint32_t gid);

/*
 * Destroy *pp and set it to NULL. Calls still in flight are cancelled:
 * their ops get done = 1 and st = NFSC_ERR_CONN.
 */
void ct_pipe_close(struct ct_pipe **pp);

/*
 * Queue a READ of len bytes at off of fh into op->buf (the caller sets
 * op->buf to len bytes first). Nothing is sent until ct_pipe_wait()
 * services the socket, so calls queued back to back are all in flight
 * before any reply can come. Returns 0, or -1 if libnfs refused the call
 * (op untouched but for done = 1, st = NFSC_ERR_SEND).
 */
int ct_pipe_read(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		 uint32_t len, struct ct_op *op);

/*
 * Queue a WRITE of buf[0..len) at off with stable_how stable. buf must
 * stay valid until op->done. Returns 0 or -1 as ct_pipe_read().
 */
int ct_pipe_write(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		  const void *buf, uint32_t len, int stable,
		  struct ct_op *op);

/*
 * Queue a COMMIT of [off, off+len) of fh (len 0: to the end). The op gets
 * st and, in attr, the reply's post-op attributes. Returns 0 or -1 as
 * ct_pipe_read().
 */
int ct_pipe_commit(struct ct_pipe *p, const nfs_fh3 *fh, uint64_t off,
		   uint32_t len, struct ct_op *op);

/*
 * Write every queued call to the socket now, corked (TCP_CORK), so that
 * calls queued back to back leave in one TCP segment when they fit and
 * the server reads them all in one go: all are in flight before it can
 * reply to any. Returns 0, or -1 after printing why.
 */
int ct_pipe_send_all(struct ct_pipe *p, int timeout_ms);

/* Calls queued and not yet done. */
unsigned ct_pipe_pending(const struct ct_pipe *p);

/*
 * Service the socket until at most max_pending calls are pending. Returns
 * 0, or -1 after printing why (no progress for timeout_ms, or the
 * connection broke: the pending calls then stay pending until close).
 */
int ct_pipe_wait(struct ct_pipe *p, unsigned max_pending, int timeout_ms);

/* ---- synchronous extras over nfsclient ---- */

/*
 * READ like nfsc_read(), also returning the reply's post-op attributes in
 * *attr (zeroed when absent; may be NULL).
 */
int ct_read(struct nfsc *c, const nfs_fh3 *fh, uint64_t off, uint32_t len,
	    void *buf, uint32_t *count, int *eof, fattr3 *attr);

/* SETATTR of the size alone (truncate or extend), no guard. */
int ct_set_size(struct nfsc *c, const nfs_fh3 *fh, uint64_t size);

/* LOOKUP name in the export root of c; *fh owned by the caller. */
int ct_lookup_root(struct nfsc *c, const char *name, nfs_fh3 *fh);

/* ---- files behind NFS's back ---- */

/* "$NFSC_EXPORT_DIR/name" into out (n bytes). Returns 0 or -1. */
int ct_disk_path(const char *name, char *out, size_t n);

/*
 * Replace file name in the export directory with buf[0..len) (created
 * 0644 if absent, truncated otherwise). Returns 0 or -1 after printing.
 */
int ct_disk_write(const char *name, const void *buf, size_t len);

/* Read up to len bytes of name at off into buf; bytes read, or -1. */
ssize_t ct_disk_read(const char *name, uint64_t off, void *buf, size_t len);

/*
 * Set name's mtime and atime to sec.nsec (ctime moves to now, as the
 * kernel does). Returns 0 or -1.
 */
int ct_disk_set_mtime(const char *name, int64_t sec, long nsec);

/* ---- data ---- */

/* xorshift64* state; seed 0 is replaced by a fixed non-zero value. */
struct ct_rng {
	uint64_t s;
};

/* Seed r. */
void ct_rng_seed(struct ct_rng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t ct_rng_next(struct ct_rng *r);

/* A random number in [0, n) (n > 0). */
uint64_t ct_rng_below(struct ct_rng *r, uint64_t n);

/*
 * Fill buf[0..n) with bytes that depend on the absolute file offset off+i
 * and on seed, so any range can be recomputed from (offset, seed).
 */
void ct_pattern(uint8_t *buf, size_t n, uint64_t off, uint32_t seed);

/* The first offset where a and b differ, or n if equal. */
size_t ct_first_diff(const uint8_t *a, const uint8_t *b, size_t n);

/* ---- processes ---- */

/* The "FIELD: N kB" line field (e.g. "RssAnon") of /proc/PID/status, in
 * KiB, or -1. */
long ct_status_kib(pid_t pid, const char *field);

/* VmRSS of pid in KiB from /proc/PID/status, or -1. */
long ct_vmrss_kib(pid_t pid);

#endif
