/* SPDX-License-Identifier: MIT */
/*
 * nfs3_ops: what the NFSv3 handlers share (see nfs3_ops.h): the upstream
 * send, failure statuses, status-only replies and the NFSv3 counters.
 * The counters are the daemon's (struct nfs3_ops, d->nfs3_ops, made by
 * nfs3_ops_start and freed by nfs3_ops_stop); like the rest of the
 * daemon's state they are touched from the event loop only.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "server.h"

/* The NFSv3 handlers' shared state: their counters. */
struct nfs3_ops {
	struct nfs3_ops_stats stats;
};

int nfs3_ops_start(struct daemon *d)
{
	d->nfs3_ops = calloc(1, sizeof(*d->nfs3_ops));
	return d->nfs3_ops ? 0 : -1;
}

void nfs3_ops_stop(struct daemon *d)
{
	free(d->nfs3_ops);
	d->nfs3_ops = NULL;
}

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

void nfs3_note_status(struct daemon *d, nfsstat3 status)
{
	if (status == NFS3ERR_JUKEBOX)
		d->nfs3_ops->stats.jukebox++;
}

enum op_status nfs3_reply_status(struct req *r, nfsstat3 status)
{
	return nfs3_reply_status_in(r->d, r, status);
}

/* Reply with status only (resfail with no attributes). */
enum op_status nfs3_reply_status_in(struct daemon *d, struct req *r,
				    nfsstat3 status)
{
	void *res = calloc(1, r->ent->res_size);
	enum op_status st;

	if (!res)
		return req_reply_accept_error(r, SYSTEM_ERR);
	/* Every RFC 1813 result union starts with its nfsstat3 status. */
	*(nfsstat3 *)res = status;
	nfs3_note_status(d, status);
	st = req_reply(r, r->ent->xdr_res, res);
	free(res);
	return st;
}

int nfs3_send(struct export_rt *ex, uint32_t proc, xdrproc_t xargs,
	      const void *args, const struct nfs_cred *uc,
	      upcall_cb cb, void *arg)
{
	const struct dispatch_entry *e =
		proc_table_row(ex->d->procs, NFS_PROGRAM, NFS_V3, proc);

	if (!e)
		return -1;
	return upcall_send(&ex->upc, proc, xargs, args,
			   (struct upcall_res){ e->xdr_res, e->res_size },
			   uc, cb, arg);
}

void nfs3_count_access_check(struct daemon *d)
{
	d->nfs3_ops->stats.access_checks++;
}

void nfs3_count_protocol_error(struct daemon *d)
{
	d->nfs3_ops->stats.protocol_errors++;
}

void nfs3_count_badhandle(struct daemon *d)
{
	d->nfs3_ops->stats.badhandle++;
}

void nfs3_count_stale(struct daemon *d)
{
	d->nfs3_ops->stats.stale++;
}

void nfs3_count_bad_name(struct daemon *d)
{
	d->nfs3_ops->stats.bad_names++;
}

void nfs3_ops_stats_get(const struct daemon *d, struct nfs3_ops_stats *st)
{
	if (d->nfs3_ops)
		*st = d->nfs3_ops->stats;
	else
		memset(st, 0, sizeof(*st));
}
