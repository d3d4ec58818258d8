/* SPDX-License-Identifier: MIT */
/*
 * nfs3_ops: what the NFSv3 handlers share (see nfs3_ops.h): the upstream
 * send, failure statuses, status-only replies and the NFSv3 counters.
 */
#include <stdlib.h>

#include "daemon.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "server.h"

static struct nfs3_ops_stats stats;

nfsstat3 nfs3_upstream_failure(enum upstream_status st)
{
	switch (st) {
	case UPSTREAM_OK:
		return NFS3ERR_SERVERFAULT;
	case UPSTREAM_EPROTO:
		return NFS3ERR_ACCES;
	default:
		return NFS3ERR_JUKEBOX;
	}
}

void nfs3_note_status(nfsstat3 status)
{
	if (status == NFS3ERR_JUKEBOX)
		stats.jukebox++;
}

/* Reply with status only (resfail with no attributes). */
enum op_status nfs3_reply_status(struct req *r, nfsstat3 status)
{
	void *res = calloc(1, r->ent->res_size);
	enum op_status st;

	if (!res)
		return req_reply_accept_error(r, SYSTEM_ERR);
	/* Every RFC 1813 result union starts with its nfsstat3 status. */
	*(nfsstat3 *)res = status;
	nfs3_note_status(status);
	st = req_reply(r, r->ent->xdr_res, res);
	free(res);
	return st;
}

int nfs3_send(struct export_rt *ex, uint32_t proc, xdrproc_t xargs,
	      const void *args, const struct nfs_cred *uc,
	      upcall_cb cb, void *arg)
{
	return upcall_send(&ex->upc, proc, xargs, args, uc, cb, arg);
}

void nfs3_count_access_check(void)
{
	stats.access_checks++;
}

void nfs3_count_protocol_error(void)
{
	stats.protocol_errors++;
}

void nfs3_count_badhandle(void)
{
	stats.badhandle++;
}

void nfs3_count_stale(void)
{
	stats.stale++;
}

void nfs3_count_bad_name(void)
{
	stats.bad_names++;
}

void nfs3_ops_stats_get(struct nfs3_ops_stats *st)
{
	*st = stats;
}
