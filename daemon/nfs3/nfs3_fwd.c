/* SPDX-License-Identifier: MIT */
/*
 * nfs3_fwd: forwarding NFSv3 calls upstream (see nfs3_fwd.h), with the
 * write-back coordination a forwarded call needs: a SETATTR changing a
 * file's size or permissions, a CREATE truncating an existing file and a
 * REMOVE of its last link wait for, or drop, the proxy's unwritten data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "daemon.h"
#include "fstate.h"
#include "log.h"
#include "nfs3_fwd.h"
#include "nfs3_guard.h"
#include "nfs3_learn.h"
#include "nfs3_ops.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"
#include "rpcmsg.h"
#include "server.h"
#include "stale.h"
#include "lcommit.h"
#include "writeback.h"

/* Release a forwarded call's state. */
static void fwd_free(struct daemon *d, struct nfs3_fwd *w)
{
	struct fstate *fs;

	if (w->held && w->f && (fs = fstate_find(w->f))) {
		fs->hold--;
		writeback_kick(d, w->f, w->ex, false);
	}
	if (w->victim_held && w->victim && (fs = fstate_find(w->victim))) {
		fs->hold--;
		writeback_kick(d, w->victim, w->ex, false);
	}
	cfile_put(d->cache, &w->victim);
	cfile_put(d->cache, &w->f);
	cfile_put(d->cache, &w->f2);
	free(w);
}

/*
 * A CREATE UNCHECKED with a size reached an existing file that held
 * unwritten data. Size 0: its cached and unwritten bytes are gone. Any
 * other size was written back first (fwd_written), and the upstream may
 * ignore the size (Ganesha 4.3 keeps an existing file's): the reply's
 * size is the truth, and without one the attributes are asked for again.
 */
static void create_adopt_size(struct req *r, struct nfs3_fwd *w, CREATE3res *x)
{
	CREATE3args *ca = r->args;
	const post_op_attr *p = &x->CREATE3res_u.resok.obj_attributes;
	uint64_t size;

	if (!w->written) {
		size = ca->how.createhow3_u.obj_attributes.size.set_size3_u.size;
		cfile_truncate(r->d->cache, w->victim, size);
		lcommit_rewrite(r->d, w->victim, size, 0);
		return;
	}
	if (!p->attributes_follow) {
		cfile_attr_expire(w->victim);
		return;
	}
	size = p->post_op_attr_u.attributes.size;
	if (cfile_has_attr(w->victim) && size < cfile_attr(w->victim)->size) {
		cfile_truncate(r->d->cache, w->victim, size);
		lcommit_rewrite(r->d, w->victim, size, 0);
	}
}

/* Upstream reply for a forwarded call. */
static void forward_done(enum upstream_status status, void *decoded,
			 void *arg);

/* Answer GETATTR r from f's expired attributes (stale_on_error). */
static void stale_getattr(struct req *r, const struct cfile *f)
{
	GETATTR3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	attr_to_fattr3(cfile_attr(f), &res.GETATTR3res_u.resok.obj_attributes);
	req_reply(r, (xdrproc_t)xdr_GETATTR3res, &res);
}

/*
 * The upstream call of forwarded r ended with st: answer from stale state
 * if stale_on_error allows (GETATTR from expired attributes, FSINFO,
 * FSSTAT and PATHCONF from their last answer). True if answered (w is
 * then released or taken over).
 */
static bool fwd_stale(struct req *r, struct nfs3_fwd *w, enum upstream_status st)
{
	const nfs_fh3 *fh = r->args;	/* every such call's first member */
	struct cache *c = r->d->cache;
	const uint8_t *res;
	struct cfile *f;
	size_t len;

	if (r->ent->nfs3->stale == STALE_ATTRS) {
		f = cache_find(c, (const uint8_t *)fh->data.data_val,
			       fh->data.data_len);
		if (!stale_attrs_usable(r->d, f, st)) {
			cfile_put(c, &f);
			return false;
		}
		stale_count(r->d, r->call.proc);
		fwd_free(r->d, w);
		stale_getattr(r, f);	/* r is gone after the reply */
		cfile_put(c, &f);
		return true;
	}
	if (r->ent->nfs3->stale != STALE_REMEMBER)
		return false;
	res = stale_recall(r->d, w->ex, r->call.proc,
			   (const uint8_t *)fh->data.data_val, fh->data.data_len,
			   st, &len);
	if (!res)
		return false;
	stale_count(r->d, r->call.proc);
	w->stale = true;
	upcall_deliver(r->call.proc,
		       (struct upcall_res){ r->ent->xdr_res, r->ent->res_size },
		       UPSTREAM_OK, res, len, NULL, 0, forward_done, r);
	return true;
}

/* Remember a successful FSINFO, FSSTAT or PATHCONF result res (as the
 * upstream sent it: before nfs3_guard_rewrap and FSINFO's clamp) for
 * outages. */
static void fwd_remember(struct req *r, struct nfs3_fwd *w, const void *res)
{
	const nfs_fh3 *fh = r->args;
	uint8_t *bytes;
	size_t len;

	if (r->d->conf->stale_on_error <= 0 ||
	    r->ent->nfs3->stale != STALE_REMEMBER ||
	    *(const nfsstat3 *)res != NFS3_OK ||
	    !(bytes = rpcmsg_encode(r->ent->xdr_res, res, &len)))
		return;
	stale_remember(r->d, w->ex, r->call.proc,
		       (const uint8_t *)fh->data.data_val, fh->data.data_len,
		       bytes, len);
	free(bytes);
}

/* A reply kept encoded until the journal's rewrites are durable. */
struct fwd_held {
	struct req *r;
	uint8_t *buf;			/* the encoded result, owned */
	size_t len;
};

/* XDR routine of a held reply: its bytes as they were encoded (a
 * multiple of 4 bytes, so xdr_opaque adds no padding). */
static bool_t fwd_xdr_held(XDR *xdrs, void *p)
{
	struct fwd_held *h = p;

	return xdr_opaque(xdrs, (char *)h->buf, (u_int)h->len);
}

/* The held reply's rewrites are durable (or the fence is): answer. */
static void fwd_held_done(struct daemon *d, nfsstat3 st, void *arg)
{
	struct fwd_held *h = arg;

	if (st == NFS3_OK)
		req_reply(h->r, (xdrproc_t)fwd_xdr_held, h);
	else
		nfs3_reply_status_in(d, h->r, st);
	free(h->buf);
	free(h);
}

/*
 * The call queued journal rewrites (a truncation, a REMOVE of a file
 * with locally committed data): answer res only once they are durable,
 * or a crash right after the reply would replay the older records over
 * what it acknowledged (lcommit_ack_wait; rw0: lcommit_rewrites() before
 * the call's learning). res is encoded now (the
 * decoded reply lives only during this callback) and sent as it is
 * later. 0, or -1 when it could not be held (the caller answers now).
 */
static int fwd_reply_journaled(struct req *r, void *res, uint64_t rw0)
{
	struct fwd_held *h = calloc(1, sizeof(*h));

	if (!h || !(h->buf = rpcmsg_encode(r->ent->xdr_res, res, &h->len))) {
		free(h);
		return -1;
	}
	h->r = r;
	if (lcommit_ack_wait(r->d, rw0, fwd_held_done, h) != 0) {
		free(h->buf);
		free(h);
		return -1;
	}
	return 0;
}

static void forward_done(enum upstream_status status, void *decoded,
			 void *arg)
{
	struct req *r = arg;
	struct nfs3_fwd *w = r->op;
	struct daemon *d = r->d;
	const struct dispatch_entry *ent = r->ent;
	void *res = NULL;
	uint64_t rw0;
	nfsstat3 err;

	if (status != UPSTREAM_OK && fwd_stale(r, w, status))
		return;
	if (status == UPSTREAM_OK && decoded && !w->stale)
		fwd_remember(r, w, decoded);
	if (status != UPSTREAM_OK || !(res = decoded)) {
		if (status == UPSTREAM_OK)
			log_warn("upstream %s reply does not decode", r->ent->name);
		nfs3_learn_failed(r, w);
		fwd_free(d, w);
		nfs3_reply_status(r, nfs3_upstream_failure(status));
		return;
	}
	rw0 = lcommit_rewrites(d);
	nfs3_learn_reply(r, w, res);
	nfs3_learn_present(r, w, res);
	if (r->call.proc == NFSPROC3_REMOVE && *(nfsstat3 *)res == NFS3_OK &&
	    w->victim) {
		log_debug("REMOVE of the last link: dropping its unwritten data");
		cfile_discard_dirty(d->cache, w->victim);
		lcommit_settle(d, w->victim);	/* its records go too */
		fstate_release(d, w->victim);
	}
	if (r->call.proc == NFSPROC3_CREATE && *(nfsstat3 *)res == NFS3_OK &&
	    w->victim)
		create_adopt_size(r, w, res);
	err = nfs3_guard_rewrap(d, w->ex, r->ent->nfs3, res);
	fwd_free(d, w);
	r->op = NULL;
	if (err != NFS3_OK)
		nfs3_reply_status(r, err);
	else if (lcommit_rewrites(d) == rw0 ||
		 fwd_reply_journaled(r, res, rw0) != 0)
		req_reply(r, ent->xdr_res, res);
}

enum op_status nfs3_op_null(struct req *r)
{
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/*
 * The status for a forwarded call nfs3_send could not send. While the
 * upstream is not up: NFS3ERR_JUKEBOX, the client retries. Otherwise the
 * call could not be encoded: libnfs 4.0 builds every call but WRITE in
 * about 4 KiB, which only a long name or symlink target overflows, so
 * NFS3ERR_NAMETOOLONG for the procedures that carry one and
 * NFS3ERR_SERVERFAULT for the rest; a retry could never succeed.
 */
static nfsstat3 send_failure(const struct export_rt *ex,
			     const struct nfs3_proc *m)
{
	if (upcall_state(&ex->upc) != UPSTREAM_UP)
		return NFS3ERR_JUKEBOX;
	if (m->nname > 0)
		return NFS3ERR_NAMETOOLONG;
	return NFS3ERR_SERVERFAULT;
}

/* Send a prepared forwarded call upstream (or reply send_failure). */
static enum op_status fwd_send_now(struct req *r)
{
	struct nfs3_fwd *w = r->op;

	if (nfs3_send(w->ex, r->call.proc, r->ent->xdr_args, r->args, &w->uc,
		      forward_done, r) != 0) {
		nfsstat3 st = send_failure(w->ex, r->ent->nfs3);

		if (fwd_stale(r, w, stale_refused(w->ex)))
			return OP_PENDING;

		nfs3_learn_failed(r, w);
		fwd_free(r->d, w);
		return nfs3_reply_status(r, st);
	}
	return OP_PENDING;
}

/* The fence a changing call waited for is durable (or could not be). */
static void fwd_fenced(struct daemon *d, nfsstat3 st, void *arg)
{
	struct req *r = arg;
	struct nfs3_fwd *w = r->op;

	if (st != NFS3_OK) {
		nfs3_learn_failed(r, w);
		fwd_free(d, w);
		nfs3_reply_status_in(d, r, st);
		return;
	}
	fwd_send_now(r);
}

/*
 * Send a prepared forwarded call, once no journal record can be replayed
 * over what it changes: while a fence is due (the disk tier turned off
 * with records outstanding), a call that changes a file upstream (a
 * truncating SETATTR, a REMOVE, a CREATE over a file) waits for it, or a
 * replay at the next start could bring older bytes or an older size back
 * over what it acknowledged (lcommit.h).
 */
static enum op_status fwd_send(struct req *r)
{
	if ((r->ent->flags & DISPATCH_MUTATING) && lcommit_fence_due(r->d)) {
		if (lcommit_fence_wait(r->d, fwd_fenced, r) != 0) {
			struct nfs3_fwd *w = r->op;

			nfs3_learn_failed(r, w);
			fwd_free(r->d, w);
			return nfs3_reply_status(r, NFS3ERR_JUKEBOX);
		}
		return OP_PENDING;
	}
	return fwd_send_now(r);
}

/* A truncating SETATTR's file has no write-back in flight any more. */
static void fwd_idle(struct daemon *d, nfsstat3 st, void *arg)
{
	struct req *r = arg;
	struct nfs3_fwd *w = r->op;

	if (st != NFS3_OK) {
		nfs3_learn_failed(r, w);
		fwd_free(d, w);
		nfs3_reply_status_in(d, r, st);
		return;
	}
	fwd_send(r);
}

static enum op_status fwd_start(struct req *r);

/*
 * The file's dirty data is written back and committed (or could not be):
 * go on with the call. A write-back error belongs to the file's writers
 * (their next WRITE or COMMIT), so it is put back, and the call goes on;
 * a wait that timed out answers NFS3ERR_JUKEBOX and the client retries.
 */
static void fwd_written(struct daemon *d, nfsstat3 st, void *arg)
{
	struct req *r = arg;
	struct nfs3_fwd *w = r->op;
	struct cfile *f = r->call.proc == NFSPROC3_CREATE ? w->victim : w->f;

	if (st == NFS3ERR_JUKEBOX) {
		nfs3_learn_failed(r, w);
		fwd_free(d, w);
		nfs3_reply_status_in(d, r, st);
		return;
	}
	if (st != NFS3_OK)
		cfile_wb_error_restore(f, (int)st);
	w->written = true;
	if (r->call.proc == NFSPROC3_CREATE)
		fwd_send(r);
	else
		fwd_start(r);
}

/* Whether a CREATE would truncate an existing file (UNCHECKED, size set). */
static bool create_truncates(struct req *r)
{
	CREATE3args *a = r->args;

	return r->call.proc == NFSPROC3_CREATE && a->how.mode == UNCHECKED &&
	       a->how.createhow3_u.obj_attributes.size.set_it;
}

/* Whether a CREATE UNCHECKED sets a size other than 0. */
static bool create_sized(struct req *r)
{
	CREATE3args *a = r->args;

	return create_truncates(r) &&
	       a->how.createhow3_u.obj_attributes.size.set_size3_u.size > 0;
}

/*
 * LOOKUP before a REMOVE or a truncating CREATE while the proxy holds
 * unwritten data: which file does the name reach? A REMOVE of its last
 * link (nlink 1, fresh from this LOOKUP) discards the file's unwritten
 * data; with another link the data keeps going to the file. A CREATE that
 * truncates it waits for its write-back in flight and holds the rest
 * until the reply, which truncates the cache.
 */
static void fwd_victim_lookup_done(enum upstream_status status,
				   void *decoded, void *arg)
{
	struct req *r = arg;
	struct nfs3_fwd *w = r->op;
	LOOKUP3res *res = NULL;
	post_op_attr *pa;
	struct fstate *fs;

	if (status == UPSTREAM_OK)
		res = decoded;
	if (res && res->status == NFS3_OK) {
		pa = &res->LOOKUP3res_u.resok.obj_attributes;
		w->victim = nfs3_fh_file(r->d, &res->LOOKUP3res_u.resok.object);
		if (w->victim && (!fstate_busy(w->victim) ||
				  (r->call.proc == NFSPROC3_REMOVE &&
				   (!pa->attributes_follow ||
				    pa->post_op_attr_u.attributes.nlink > 1))))
			cfile_put(r->d->cache, &w->victim);
	}
	if (w->victim && create_sized(r)) {
		/* Write it back first: the upstream may keep the file's
		 * size, and its acknowledged bytes with it. */
		if (writeback_wait(r->d, w->victim, w->ex, WB_WAIT_ALL, 0, 0,
				   fwd_written, r) == 0)
			return;
		cfile_put(r->d->cache, &w->victim);	/* ENOMEM: sent as is,
							 * nothing dropped */
	} else if (r->call.proc == NFSPROC3_CREATE && w->victim &&
	    (fs = fstate_get(r->d, w->victim, w->ex))) {
		fs->hold++;
		w->victim_held = true;
		if (writeback_wait(r->d, w->victim, w->ex, WB_WAIT_IDLE, 0, 0,
				   fwd_idle, r) == 0)
			return;
	}
	fwd_send(r);
}

/*
 * Whether a SETATTR may take write permission away from the writers of a
 * file whose data the proxy still holds (mode, owner or group). Their
 * bytes go upstream first, under their credentials, as the Linux client's
 * nfs_setattr writes back (nfs_sync_inode) before it sends one.
 */
static bool setattr_revokes(struct req *r, struct nfs3_fwd *w)
{
	SETATTR3args *a = r->args;

	return r->call.proc == NFSPROC3_SETATTR && w->f && !w->written &&
	       (a->new_attributes.mode.set_it || a->new_attributes.uid.set_it ||
		a->new_attributes.gid.set_it) && fstate_busy(w->f);
}

/* Whether a SETATTR changes the size of a file with write-back state. */
static bool setattr_needs_idle(struct req *r, struct nfs3_fwd *w)
{
	SETATTR3args *a = r->args;

	return r->call.proc == NFSPROC3_SETATTR && w->f &&
	       a->new_attributes.size.set_it && fstate_busy(w->f);
}

enum op_status nfs3_op_forward(struct req *r)
{
	struct export_rt *ex;
	struct nfs_cred uc;
	nfsstat3 st;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	return nfs3_forward_prepared(r, ex, &uc);
}

enum op_status nfs3_forward_prepared(struct req *r, struct export_rt *ex,
				     const struct nfs_cred *uc)
{
	struct nfs3_fwd *w = calloc(1, sizeof(*w));

	if (!w)
		return nfs3_reply_status(r, NFS3ERR_SERVERFAULT);
	w->ex = ex;
	w->uc = *uc;
	nfs3_learn_begin(r, w);
	r->op = w;
	return fwd_start(r);
}

/* Wait for what the call needs written back or idle, then send it. */
static enum op_status fwd_start(struct req *r)
{
	struct nfs3_fwd *w = r->op;

	if (setattr_revokes(r, w)) {
		if (writeback_wait(r->d, w->f, w->ex, WB_WAIT_ALL, 0, 0,
				   fwd_written, r) != 0)
			return fwd_send(r);
		return OP_PENDING;
	}
	if (setattr_needs_idle(r, w)) {
		/* Upstream WRITEs past the new size landing after it would
		 * grow the file again: hold write-back until the reply. */
		fstate_find(w->f)->hold++;
		w->held = true;
		if (writeback_wait(r->d, w->f, w->ex, WB_WAIT_IDLE, 0, 0,
				   fwd_idle, r) != 0)
			return fwd_send(r);
		return OP_PENDING;
	}
	if ((r->call.proc == NFSPROC3_REMOVE || create_truncates(r)) &&
	    cache_wb_file_first(r->d->cache)) {
		LOOKUP3args la;

		la.what = r->call.proc == NFSPROC3_REMOVE
				  ? ((REMOVE3args *)r->args)->object
				  : ((CREATE3args *)r->args)->where;
		if (nfs3_send(w->ex, NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args,
			      &la, &w->uc, fwd_victim_lookup_done, r) == 0)
			return OP_PENDING;
	}
	return fwd_send(r);
}
