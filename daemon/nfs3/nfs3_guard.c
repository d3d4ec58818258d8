/* SPDX-License-Identifier: MIT */
/*
 * nfs3_guard: the security boundary (see nfs3_guard.h): handle unwrap and
 * rewrap, client rules, name checks, credential mapping and clamping.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "daemon.h"
#include "proc_table.h"
#include "fh.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_proc.h"
#include "peername.h"
#include "server.h"

/* The nfs_fh3 at offset off inside obj. */
static nfs_fh3 *fh_at(void *obj, size_t off)
{
	return (nfs_fh3 *)((char *)obj + off);
}

/*
 * Whether export id may see handles with a short authenticator: only once
 * its upstream has produced such a long handle itself. Otherwise a client
 * could forge a handle by claiming a 62-byte upstream handle, whose
 * authenticator is empty.
 */
static bool fh_long_ok(struct daemon *d, unsigned id)
{
	struct export_rt *ex = daemon_export(d, id);

	return ex && ex->long_handles;
}

nfsstat3 nfs3_guard_unwrap(struct daemon *d, const struct nfs3_proc *m,
			   void *args, struct export_rt **ex)
{
	unsigned first_id = 0;

	for (unsigned i = 0; i < m->nfh; i++) {
		nfs_fh3 *fh = fh_at(args, m->fh[i]);
		const uint8_t *up;
		size_t up_len;
		unsigned id;

		if (fh_unwrap(&d->fh_key, (const uint8_t *)fh->data.data_val,
			      fh->data.data_len, &id, &up, &up_len) != FH_OK ||
		    (up_len > FH_UP_FULLAUTH && !fh_long_ok(d, id))) {
			nfs3_count_badhandle(d);
			return NFS3ERR_BADHANDLE;
		}
		if (i == 0)
			first_id = id;
		else if (id != first_id)
			return NFS3ERR_XDEV;
		memmove(fh->data.data_val, up, up_len);
		fh->data.data_len = (u_int)up_len;
	}
	*ex = daemon_export(d, first_id);
	if (!*ex) {
		nfs3_count_stale(d);
		return NFS3ERR_STALE;
	}
	return NFS3_OK;
}

nfsstat3 nfs3_guard_client(const struct conf_export *e,
			   const struct sockaddr *peer, const char *name,
			   const char *const *groups, bool privileged,
			   struct conf_access *acc, enum refusal_reason *why)
{
	switch (conf_client_match(e, peer, name, groups, acc)) {
	case CONF_MATCH_NEED_NAME:
		return NFS3ERR_JUKEBOX;
	case CONF_MATCH_NO:
		*why = REFUSAL_NOT_IN_CLIENTS;
		return NFS3ERR_ACCES;
	case CONF_MATCH_YES:
		break;
	}
	if (acc->secure && !privileged) {
		*why = REFUSAL_INSECURE_PORT;
		return NFS3ERR_PERM;
	}
	return NFS3_OK;
}

void nfs3_guard_refused(struct req *r, const struct conf_export *e,
			enum refusal_call call, const char *path,
			enum refusal_reason why, const char *reason)
{
	struct export_rt *ex = e ? daemon_export(r->d, e->id) : NULL;
	char what[128];

	/* Formatted only here: a call that passes pays nothing for it. */
	if (call == REFUSAL_MOUNT)
		snprintf(what, sizeof(what), "MNT %s", path);
	else
		snprintf(what, sizeof(what), "%s on %s", r->ent->name,
			 e ? e->path : "?");
	refusal_note(ex ? &ex->refused : &r->d->refused_other, call, why,
		     daemon_now(), what, req_peer_name(r), reason);
}

nfsstat3 nfs3_guard_request(struct req *r, const struct conf_export *e,
			    enum refusal_call call, const char *path,
			    struct conf_access *acc)
{
	static const char *const reasons[] = {
		[REFUSAL_NOT_IN_CLIENTS] = "not in clients",
		[REFUSAL_INSECURE_PORT] = "insecure source port",
	};
	const struct sockaddr *peer = req_peer(r);
	bool priv = req_peer_privileged(r);
	enum refusal_reason why = REFUSAL_NOT_IN_CLIENTS;
	nfsstat3 st;

	st = nfs3_guard_client(e, peer, NULL, NULL, priv, acc, &why);
	if (st == NFS3ERR_JUKEBOX) {
		const char *name = peername_get(r->d->names, peer);

		if (name)
			st = nfs3_guard_client(e, peer, name,
					       peername_groups(r->d->names,
							       peer),
					       priv, acc, &why);
	}
	if (st == NFS3ERR_ACCES || st == NFS3ERR_PERM)
		nfs3_guard_refused(r, e, call, path, why, reasons[why]);
	return st;
}

nfsstat3 nfs3_guard_names(const struct nfs3_proc *m, const void *args)
{
	for (unsigned i = 0; i < m->nname; i++) {
		const char *name = *(char *const *)((const char *)args +
						     m->name[i]);

		if (!name || strchr(name, '/'))
			return NFS3ERR_ACCES;
		if (strlen(name) > NFS3_NAME_MAX)
			return NFS3ERR_NAMETOOLONG;
	}
	if (m->path) {
		const char *t = *(char *const *)((const char *)args + m->path);

		if (t && strlen(t) > NFS3_PATH_MAX)
			return NFS3ERR_NAMETOOLONG;
	}
	return NFS3_OK;
}

void nfs3_guard_cred(const struct rpcmsg_call *call,
		     const struct conf_access *acc, struct nfs_cred *uc)
{
	memset(uc, 0, sizeof(*uc));
	uc->machine = call->machine[0] ? call->machine : "nfscached";
	if (call->flavor != AUTH_SYS || acc->all_squash) {
		uc->uid = acc->anonuid;
		uc->gid = acc->anongid;
		return;
	}
	*uc = call->cred;
	uc->machine = call->machine[0] ? call->machine : "nfscached";
	if (!acc->root_squash)
		return;
	if (uc->uid == 0)
		uc->uid = acc->anonuid;
	if (uc->gid == 0)
		uc->gid = acc->anongid;
	for (uint32_t i = 0; i < uc->ngids; i++)
		if (uc->gids[i] == 0)
			uc->gids[i] = acc->anongid;
}

bool nfs3_guard_changes(const struct dispatch_entry *ent)
{
	return (ent->flags & DISPATCH_MUTATING) ||
	       ent->proc == NFSPROC3_COMMIT;
}

/* Lower a count to max. */
static void clamp(count3 *c, uint32_t max)
{
	if (max && *c > max)
		*c = max;
}

void nfs3_guard_clamp_args(const struct nfs3_proc *m, void *args,
			   uint32_t rtmax)
{
	for (unsigned i = 0; i < 2; i++)
		if (m->count[i])
			clamp((count3 *)((char *)args + m->count[i]), rtmax);
}

int nfs3_guard_wrap_fh(struct daemon *d, struct export_rt *ex,
		       const uint8_t *up, size_t up_len, uint8_t *out,
		       size_t *out_len)
{
	if (fh_wrap(&d->fh_key, ex->conf->id, up, up_len, out, out_len) !=
	    FH_OK) {
		if (!ex->warned_fh_len)
			log_error("export %s: upstream handle of %zu bytes is over %d; it cannot be served",
				  ex->conf->path, up_len, FH_UP_MAX);
		ex->warned_fh_len = true;
		return -1;
	}
	if (up_len > FH_UP_FULLAUTH)
		ex->long_handles = true;
	if (up_len > FH_UP_FULLAUTH && !ex->warned_fh_len) {
		log_warn("export %s: upstream handles of %zu bytes get a %zu-byte authenticator",
			 ex->conf->path, up_len, fh_auth_len(up_len));
		ex->warned_fh_len = true;
	}
	return 0;
}

/* Replace an upstream handle by its client handle. 0, or -1 if too long. */
static int fh_rewrap(struct daemon *d, struct export_rt *ex, nfs_fh3 *fh)
{
	uint8_t out[FH_SIZE_MAX];
	size_t n;
	char *buf;

	if (nfs3_guard_wrap_fh(d, ex, (const uint8_t *)fh->data.data_val,
			       fh->data.data_len, out, &n) != 0)
		return -1;
	buf = realloc(fh->data.data_val, n);
	if (!buf)
		return -1;
	memcpy(buf, out, n);
	fh->data.data_val = buf;
	fh->data.data_len = (u_int)n;
	return 0;
}

/* Wrap a post_op_fh3, dropping it if it cannot be wrapped. */
static void postop_rewrap(struct daemon *d, struct export_rt *ex,
			  post_op_fh3 *p)
{
	if (p->handle_follows &&
	    fh_rewrap(d, ex, &p->post_op_fh3_u.handle) != 0) {
		xdr_free((xdrproc_t)xdr_nfs_fh3, (char *)&p->post_op_fh3_u.handle);
		p->handle_follows = FALSE;
	}
}

nfsstat3 nfs3_guard_rewrap(struct daemon *d, struct export_rt *ex,
			   const struct nfs3_proc *m, void *res)
{
	entryplus3 *e;

	if (*(nfsstat3 *)res != NFS3_OK)
		return NFS3_OK;
	switch (m->res) {
	case RES_FH:
		if (fh_rewrap(d, ex, fh_at(res, m->res_off)) != 0)
			return NFS3ERR_SERVERFAULT;
		break;
	case RES_POSTOP_FH:
		postop_rewrap(d, ex, (post_op_fh3 *)((char *)res + m->res_off));
		break;
	case RES_DIRPLUS:
		e = ((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok.reply.entries;
		for (; e; e = e->nextentry)
			postop_rewrap(d, ex, &e->name_handle);
		break;
	case RES_NONE:
		break;
	}
	return NFS3_OK;
}

void nfs3_guard_clamp_fsinfo(FSINFO3res *res, uint32_t rtmax, uint32_t wtmax,
			     uint32_t max_record)
{
	FSINFO3resok *ok = &res->FSINFO3res_u.resok;
	uint32_t rec_w = max_record > 8192 ? (max_record - 4096) & ~4095u
					   : 4096;

	if (res->status != NFS3_OK)
		return;
	if (rec_w < wtmax || !wtmax)
		wtmax = rec_w;
	clamp(&ok->rtmax, rtmax);
	clamp(&ok->rtpref, ok->rtmax);
	clamp(&ok->wtmax, wtmax);
	clamp(&ok->wtpref, ok->wtmax);
	clamp(&ok->dtpref, ok->rtmax);
}

nfsstat3 nfs3_prepare(struct req *r, struct export_rt **ex,
		      struct nfs_cred *uc)
{
	const struct nfs3_proc *m = r->ent->nfs3;
	struct conf_access acc;
	nfsstat3 st;

	*ex = NULL;
	if ((st = nfs3_guard_unwrap(r->d, m, r->args, ex)) != NFS3_OK)
		return st;
	if ((st = nfs3_guard_request(r, (*ex)->conf, REFUSAL_NFS, NULL,
				     &acc)) != NFS3_OK)
		return st;
	if (acc.read_only && nfs3_guard_changes(r->ent)) {
		nfs3_guard_refused(r, (*ex)->conf, REFUSAL_NFS, NULL,
				   REFUSAL_READ_ONLY,
				   "read-only for this client");
		return NFS3ERR_ROFS;
	}
	if (acc.read_only && r->ent->proc == NFSPROC3_ACCESS)
		/* Never granted to a read-only client, as knfsd's nfsd_access
		 * answers on an ro export: asked of no one, so the reply (the
		 * cache's or the upstream's) leaves them out. */
		((ACCESS3args *)r->args)->access &=
			~(uint32_t)(ACCESS3_MODIFY | ACCESS3_EXTEND |
				    ACCESS3_DELETE);
	if ((st = nfs3_guard_names(m, r->args)) != NFS3_OK) {
		if (st == NFS3ERR_ACCES)
			nfs3_count_bad_name(r->d);
		return st;
	}
	nfs3_guard_clamp_args(m, r->args, upcall_rtmax(&(*ex)->upc));
	nfs3_guard_cred(&r->call, &acc, uc);
	return NFS3_OK;
}
