/* SPDX-License-Identifier: MIT */
/*
 * nfsclient: a small synchronous NFSv3 client for the integration tests,
 * built on libnfs 4.0's raw async API, plus CUnit checks that print the
 * values they compare.
 *
 * A client (struct nfsc) is one libnfs context mounted at a URL with one
 * AUTH_SYS credential. nfsc_call() queues one raw NFSv3 call on the
 * context's RPC socket and runs a poll() loop on it until the reply comes
 * or the timeout passes. The reply is deep-copied into the caller's result
 * struct (the libnfs type, e.g. READ3res), so it stays valid after the call;
 * release it with nfsc_res_free(). Status codes and attributes are seen
 * exactly as the server sent them: NFS3ERR_JUKEBOX is a status, not errno.
 *
 * The library never includes <rpc/rpc.h>: libnfs's XDR types clash with
 * libtirpc's.
 */
#ifndef NFSCACHED_TESTS_NFSCLIENT_H
#define NFSCACHED_TESTS_NFSCLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-mount.h>

#include "tcheck.h"

/* Default per-call timeout, in milliseconds. */
#define NFSC_TIMEOUT_MS 20000

/*
 * Outcomes of a call that did not produce an NFS reply. Calls that got a
 * reply return its nfsstat3 (>= 0) instead.
 */
enum nfsc_rc {
	NFSC_ERR_SEND = -1,	/* libnfs refused to queue the call */
	NFSC_ERR_RPC = -2,	/* RPC-level error (rejected, decode, socket) */
	NFSC_ERR_TIMEOUT = -3,	/* no reply within the timeout */
	NFSC_ERR_CONN = -4,	/* the connection is broken; reconnect */
};

struct nfsc;

/*
 * Mount URL (nfs://HOST/PATH?nfsport=N&mountport=M...) as uid/gid with a
 * fresh libnfs context. Returns the client, or NULL after printing why to
 * stderr. The caller owns it; release with nfsc_close().
 */
struct nfsc *nfsc_connect(const char *url, uint32_t uid, uint32_t gid);

/* Destroy *cp (pending calls are cancelled) and set *cp to NULL. */
void nfsc_close(struct nfsc **cp);

/*
 * After a call times out, treat the connection as broken: later calls fail
 * at once with NFSC_ERR_CONN instead of each waiting out its timeout (for
 * tests that should stop quickly against a server that hangs).
 */
void nfsc_set_fail_fast(struct nfsc *c, int on);

/* The export's root handle as MOUNT returned it; owned by the client. */
const nfs_fh3 *nfsc_root(const struct nfsc *c);

/* The last error text (RPC error or timeout); owned by the client. */
const char *nfsc_error(const struct nfsc *c);

/*
 * Call NFSv3 procedure proc (NFS3_NULL..NFS3_COMMIT, RFC 1813 section 3.3)
 * with args (the libnfs XXX3args type; ignored for NULL) and wait up to
 * timeout_ms. On a reply, *res (the libnfs XXX3res type; may be NULL for
 * NULL) receives a deep copy that the caller releases with nfsc_res_free(),
 * and the reply's nfsstat3 is returned (0 for NULL). Otherwise returns an
 * nfsc_rc, *res is zeroed and nfsc_error() says why. A call that timed out
 * stays queued: its late reply is discarded.
 */
int nfsc_call(struct nfsc *c, int proc, void *args, void *res, int timeout_ms);

/* Release what nfsc_call() allocated inside *res (not res itself). */
void nfsc_res_free(int proc, void *res);

/* "NFS3ERR_NOENT" etc. for a status or an nfsc_rc; a static string. */
const char *nfsc_stat_name(int st);

/* Copy a handle into dst (which it overwrites); release with nfsc_fh_free. */
void nfsc_fh_copy(nfs_fh3 *dst, const nfs_fh3 *src);
void nfsc_fh_free(nfs_fh3 *fh);
int nfsc_fh_equal(const nfs_fh3 *a, const nfs_fh3 *b);

/* A const pointer as libnfs's non-const argument fields want it. */
static inline char *nfsc_mut(const char *p)
{
	return (char *)(uintptr_t)p;
}

/*
 * Conveniences over nfsc_call(). Each returns the reply's nfsstat3 or an
 * nfsc_rc. Out-parameters may be NULL. A handle written to *fh is owned by
 * the caller (nfsc_fh_free); *fh is left empty (length 0, NULL) when the
 * call failed or the reply carried no handle, so freeing it is always
 * safe. Attributes are zeroed when the reply carried none.
 */
int nfsc_null(struct nfsc *c);
int nfsc_getattr(struct nfsc *c, const nfs_fh3 *fh, fattr3 *attr);
int nfsc_lookup(struct nfsc *c, const nfs_fh3 *dir, const char *name,
		nfs_fh3 *fh, fattr3 *attr);
int nfsc_mkdir(struct nfsc *c, const nfs_fh3 *dir, const char *name,
	       uint32_t mode, nfs_fh3 *fh, fattr3 *attr);
/* CREATE with createmode UNCHECKED and the given mode. */
int nfsc_create(struct nfsc *c, const nfs_fh3 *dir, const char *name,
		uint32_t mode, nfs_fh3 *fh, fattr3 *attr);
int nfsc_remove(struct nfsc *c, const nfs_fh3 *dir, const char *name);
int nfsc_rmdir(struct nfsc *c, const nfs_fh3 *dir, const char *name);
/* SETATTR of the mode alone, without a guard. */
int nfsc_chmod(struct nfsc *c, const nfs_fh3 *fh, uint32_t mode);
/*
 * WRITE len bytes of buf at off with stable_how; *count and *committed
 * receive the reply's, verf (8 bytes) its write verifier.
 */
int nfsc_write(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
	       const void *buf, uint32_t len, int stable, uint32_t *count,
	       int *committed, char *verf);
/* READ up to len bytes at off into buf; *count and *eof from the reply. */
int nfsc_read(struct nfsc *c, const nfs_fh3 *fh, uint64_t off, uint32_t len,
	      void *buf, uint32_t *count, int *eof);
/* COMMIT [off, off+len); verf (8 bytes) receives the verifier. */
int nfsc_commit(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
		uint32_t len, char *verf);

/* One directory entry as a listing saw it (READDIRPLUS fills attr, fh). */
struct nfsc_dent {
	char *name;
	uint64_t fileid;
	uint64_t cookie;
	int has_attr;
	fattr3 attr;
	int has_fh;
	nfs_fh3 fh;
};

/* A directory read page by page with READDIR or READDIRPLUS. */
struct nfsc_listing {
	int st;			/* NFS3_OK, or the failing page's status */
	int stuck;		/* a page had no entries and no eof */
	unsigned pages;		/* pages asked for */
	size_t n, cap;		/* entries in e[], in the order received */
	struct nfsc_dent *e;
	char verf[NFS3_COOKIEVERFSIZE];	/* the last page's cookieverf */
};

/* Pages nfsc_list_dir_from() reads at most before giving up. */
#define NFSC_LIST_MAX_PAGES 20000

/*
 * Read directory dir from cookie start (with cookieverf verf0, 8 bytes)
 * to eof, following each page's last cookie and cookieverf (RFC 1813
 * 3.3.16, 3.3.17). plus selects READDIRPLUS, with dircount count/4 and
 * maxcount count; READDIR uses count. *l is overwritten; the caller
 * releases it with nfsc_listing_free() whatever the outcome, which is in
 * l->st and l->stuck.
 */
void nfsc_list_dir_from(struct nfsc *c, const nfs_fh3 *dir, int plus,
			uint32_t count, cookie3 start, const char *verf0,
			struct nfsc_listing *l);
/* The same from cookie 0 with a zero verifier. */
void nfsc_list_dir(struct nfsc *c, const nfs_fh3 *dir, int plus,
		   uint32_t count, struct nfsc_listing *l);
/* Append an entry (name copied); returns it for the caller to complete. */
struct nfsc_dent *nfsc_listing_add(struct nfsc_listing *l, const char *name,
				   uint64_t fileid, uint64_t cookie);
/* Sort the entries by name. */
void nfsc_listing_sort(struct nfsc_listing *l);
/* Free the entries, names and handles; *l is zeroed. */
void nfsc_listing_free(struct nfsc_listing *l);

/*
 * CUnit checks (tcheck.h) that count themselves and print the compared
 * values on failure; CHECK_STAT names NFSv3 statuses.
 */
void nfsc_check_stat(int got, int want, const char *what, const char *file,
		     unsigned line);

#define CHECK(cond) tcheck(!!(cond), __FILE__, __LINE__, "%s", #cond)
#define CHECK_MSG(cond, ...) \
	tcheck(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ(a, b) \
	tcheck_eq((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_STAT(got, want) \
	nfsc_check_stat((got), (want), #got, __FILE__, __LINE__)

/* Milliseconds on the monotonic clock. */
uint64_t nfsc_now_ms(void);

#endif
