/* SPDX-License-Identifier: MIT */
/*
 * nfs3_ops: what every NFSv3 handler shares: sending a call upstream
 * (nfs3_send), the status for a failed upstream call, status-only replies,
 * and the NFSv3 counters of struct nfs3_ops_stats (the boundary's refusals,
 * JUKEBOX replies, ACCESS checks, corrected upstream replies; READ's are
 * in nfs3_read.h). It calls no handler, and no
 * handler module is below it: the forwarding path (nfs3_fwd.h), the
 * security boundary (nfs3_guard.h), the handlers and write-back all call
 * into it.
 */
#ifndef NFSCACHED_DAEMON_NFS3_OPS_H
#define NFSCACHED_DAEMON_NFS3_OPS_H

#include <stdint.h>

#include "cache.h"
#include "proc_table.h"
#include "nfs3_prot.h"
#include "nfs3_status.h"
#include "upcall.h"
#include "upstream.h"

struct daemon;
struct req;
struct export_rt;

/*
 * Counters of the NFSv3 handlers (READ's included), declared once for
 * struct nfs3_ops_stats and for /metrics: X(C type, field, Prometheus
 * type, metric name, help) one value, a name with fixed labels and a NULL
 * help continuing the previous row's family; A(field, length, Prometheus
 * type, metric name, label, label set, help) one series per index
 * (daemon/ctl/metrics.c; HACKING.md "Adding a counter").
 */
#define NFS3_OPS_METRICS(X, A) \
	X(uint64_t, access_checks, counter, "nfscached_access_checks_total", \
	  "ACCESS calls the proxy sent upstream on its own, to authorize serving a READ from cache or taking a WRITE into it.") \
	X(uint64_t, jukebox, counter, "nfscached_nfs3_jukebox_replies_total", \
	  "NFSv3 replies NFS3ERR_JUKEBOX because the upstream could not serve the call.") \
	X(uint64_t, protocol_errors, counter, \
	  "nfscached_upstream_protocol_errors_total", \
	  "Upstream replies that contradicted themselves (a READ's count, eof or status against its own post-op size), corrected.") \
	X(uint64_t, badhandle, counter, "nfscached_nfs3_bad_handles_total", \
	  "Client file handles that failed to decode or authenticate.") \
	X(uint64_t, bad_names, counter, "nfscached_nfs3_bad_names_total", \
	  "NFSv3 calls refused NFS3ERR_ACCES, not forwarded, because a file name held a '/'.")

struct nfs3_ops_stats {
#define X(t, f, k, n, h) t f;
#define A(f, len, k, n, l, ls, h) uint64_t f[len];
	NFS3_OPS_METRICS(X, A)
#undef X
#undef A
	uint64_t stale;		/* handles naming no configured export
				 * (not exported) */
};

/*
 * Make d->nfs3_ops, the counters below, all zero: at start, before the
 * first NFSv3 call. 0, or -1 (ENOMEM; d->nfs3_ops stays NULL). Event
 * loop, before serving.
 */
int nfs3_ops_start(struct daemon *d);

/* Free d->nfs3_ops and clear it (shutdown, after the last NFSv3 reply).
 * No-op when it is NULL. Event loop. */
void nfs3_ops_stop(struct daemon *d);

/* Copy d's counters into *st (zeros without nfs3_ops_start). Event loop
 * (metrics, admin, tests). */
void nfs3_ops_stats_get(const struct daemon *d, struct nfs3_ops_stats *st);

/*
 * The nfsstat3 for a client call whose upstream call came back with st
 * (not UPSTREAM_OK, or UPSTREAM_OK with a reply that did not decode):
 * NFS3ERR_JUKEBOX while the upstream is down or slow (EDOWN, ETIMEDOUT:
 * the client retries), NFS3ERR_ACCES when it refused the call at the RPC
 * level with the connection alive (EPROTO: an AUTH_SYS credential it will
 * not take, such as uid 4294967295; a retry would meet the same refusal),
 * NFS3ERR_SERVERFAULT for a reply that does not decode.
 */
nfsstat3 nfs3_upstream_failure(enum upstream_status st);

/* Reply r with status only (a resfail without attributes); releases r.
 * Counted in r->d's counters as nfs3_note_status does. Event loop. */
enum op_status nfs3_reply_status(struct req *r, nfsstat3 status);

/* nfs3_reply_status for a callback handed its daemon d (r's, r->d):
 * counted in d's counters. */
enum op_status nfs3_reply_status_in(struct daemon *d, struct req *r,
				    nfsstat3 status);

/*
 * Count a reply the proxy itself composes with status (for replies that do
 * not go through nfs3_reply_status, such as WRITE's and COMMIT's wcc_data
 * replies): NFS3ERR_JUKEBOX adds to nfscached_nfs3_jukebox_replies_total.
 */
void nfs3_note_status(struct daemon *d, nfsstat3 status);

/*
 * Send NFSv3 procedure proc with args (an rpcgen struct encoded by xargs)
 * upstream through ex as uc (ex->upc, upcall.h), its result decoded with
 * the routine of proc's row in ex->d->procs. The async contract of
 * upstream_call holds (a proc with no row: -1): -1 (nothing sent, no callback) or 0 and exactly
 * one callback, given the decoded result (freed after it).
 */
int nfs3_send(struct export_rt *ex, uint32_t proc, xdrproc_t xargs,
	      const void *args, const struct nfs_cred *uc,
	      upcall_cb cb, void *arg);

/* Count, in d's counters, a handle that failed to unwrap, one naming no
 * configured export, and a file name refused (nfs3_guard.c). Each needs
 * nfs3_ops_start(d) done; event loop, as the counters below. */
void nfs3_count_badhandle(struct daemon *d);
void nfs3_count_stale(struct daemon *d);
void nfs3_count_bad_name(struct daemon *d);

/* Count an ACCESS sent on behalf of a READ hit's permission check. */
void nfs3_count_access_check(struct daemon *d);

/* Count one upstream reply that contradicted itself or RFC 1813 and was
 * corrected (nfs3_read.c: a READ's count, eof or status against its own
 * post-op size). */
void nfs3_count_protocol_error(struct daemon *d);

#endif
