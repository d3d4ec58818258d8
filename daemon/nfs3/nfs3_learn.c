/* SPDX-License-Identifier: MIT */
/*
 * nfs3_learn: learning from forwarded replies and presenting them (see
 * nfs3_learn.h), a loop over the procedure's descriptor plus its hooks.
 */
#include <string.h>

#include "attr.h"
#include "daemon.h"
#include "nfs3_guard.h"
#include "nfs3_learn.h"
#include "nfs3_proc.h"
#include "server.h"
#include "lcommit.h"
#include "writeback.h"

/* The nfs_fh3 at offset off inside obj. */
static nfs_fh3 *fh_at(void *obj, size_t off)
{
	return (nfs_fh3 *)((char *)obj + off);
}

struct cfile *nfs3_fh_file(struct daemon *d, const nfs_fh3 *fh)
{
	return cache_get(d->cache, (const uint8_t *)fh->data.data_val,
			 fh->data.data_len);
}

void nfs3_learn_begin(struct req *r, struct nfs3_fwd *w)
{
	const struct nfs3_proc *m = r->ent->nfs3;

	w->f = nfs3_fh_file(r->d, fh_at(r->args, m->fh[0]));
	if (m->nfh > 1) {
		w->f2 = nfs3_fh_file(r->d, fh_at(r->args, m->fh[1]));
		if (w->f2 == w->f)
			cfile_put(r->d->cache, &w->f2);
	}
	if (w->f) {
		w->gen = cfile_gen(w->f);
		if (m->mutates_first)
			cfile_mutation_begin(w->f);
	}
	if (w->f2) {
		w->gen2 = cfile_gen(w->f2);
		cfile_mutation_begin(w->f2);
	}
}

/* Observe attributes for f if its generation is still gen. */
static void observe(struct req *r, struct nfs3_fwd *w, struct cfile *f,
		    uint64_t gen, const post_op_attr *p)
{
	struct cattr tmp;
	const struct cattr *a;

	if (!f || !(a = attr_from_post_op(p, &tmp)))
		return;
	cfile_attr_observe_gen(r->d->cache, f, gen, a, daemon_now(),
			       daemon_ac(w->ex, a->type));
}

/* Close the mutation bracket of f with wcc (NULL: the call failed).
 * True when the reply showed another writer (cached data dropped). */
static bool mutated(struct req *r, struct nfs3_fwd *w, struct cfile *f,
		    const wcc_data *wcc)
{
	struct cwcc pre_tmp;
	struct cattr post_tmp;
	const struct cwcc *pre = NULL;
	const struct cattr *post = NULL;

	if (!f)
		return false;
	if (wcc) {
		pre = attr_from_pre_op(&wcc->before, &pre_tmp);
		post = attr_from_post_op(&wcc->after, &post_tmp);
	}
	return cfile_mutation_end(r->d->cache, f, pre, post, daemon_now(),
				  daemon_ac(w->ex, post ? post->type : NF3REG));
}

/* Observe a new or looked-up child's attributes by its handle. */
static void observe_child(struct req *r, struct nfs3_fwd *w, const nfs_fh3 *fh,
			  const post_op_attr *p)
{
	struct cfile *c = nfs3_fh_file(r->d, fh);

	if (c) {
		observe(r, w, c, cfile_gen(c), p);
		cfile_put(r->d->cache, &c);
	}
}

/*
 * Replace attributes in a reply by what clients are shown when the proxy
 * holds writes of that file (its size and times), so a client never sees
 * its file shrink or its mtime jump because of the proxy's write-back.
 */
static void present(struct cfile *f, post_op_attr *p)
{
	if (!f || !p->attributes_follow || !cfile_has_attr(f) ||
	    !cfile_is_local(f))
		return;
	attr_to_fattr3(cfile_attr(f), &p->post_op_attr_u.attributes);
}

/* present() for a child named by its upstream handle. */
static void present_child(struct daemon *d, const nfs_fh3 *fh, post_op_attr *p)
{
	struct cfile *c;

	if (!p->attributes_follow || !cache_wb_file_first(d->cache))
		return;
	c = cache_find(d->cache, (const uint8_t *)fh->data.data_val,
		       fh->data.data_len);
	if (c) {
		present(c, p);
		cfile_put(d->cache, &c);
	}
}

/* GETATTR: the proxy's size and times of a file it holds writes of. */
void nfs3_present_getattr(struct req *r, struct nfs3_fwd *w, void *res)
{
	post_op_attr p;

	(void)r;
	if (*(nfsstat3 *)res != NFS3_OK || !w->f || !cfile_is_local(w->f))
		return;
	p.attributes_follow = TRUE;
	present(w->f, &p);
	((GETATTR3res *)res)->GETATTR3res_u.resok.obj_attributes =
		p.post_op_attr_u.attributes;
}

/* COMMIT: forwarded only when the proxy holds nothing unwritten for the
 * file: what it acknowledged is committed, under its own verifier (the
 * upstream's would make clients resend). */
void nfs3_present_commit(struct req *r, struct nfs3_fwd *w, void *res)
{
	(void)w;
	if (*(nfsstat3 *)res == NFS3_OK)
		memcpy(((COMMIT3res *)res)->COMMIT3res_u.resok.verf,
		       writeback_verf(r->d), NFS3_WRITEVERFSIZE);
}

/* LOOKUP: the child as the proxy sees it. */
void nfs3_present_lookup(struct req *r, struct nfs3_fwd *w, void *res)
{
	LOOKUP3resok *ok = &((LOOKUP3res *)res)->LOOKUP3res_u.resok;

	(void)w;
	if (*(nfsstat3 *)res == NFS3_OK)
		present_child(r->d, &ok->object, &ok->obj_attributes);
}

/* READDIRPLUS: each entry as the proxy sees it. */
void nfs3_present_dirplus(struct req *r, struct nfs3_fwd *w, void *res)
{
	entryplus3 *e;

	(void)w;
	if (*(nfsstat3 *)res != NFS3_OK)
		return;
	e = ((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok.reply.entries;
	for (; e; e = e->nextentry)
		if (e->name_handle.handle_follows)
			present_child(r->d, &e->name_handle.post_op_fh3_u.handle,
				      &e->name_attributes);
}

void nfs3_learn_present(struct req *r, struct nfs3_fwd *w, void *res)
{
	const struct nfs3_proc *m = r->ent->nfs3;
	size_t at = m->present_at[*(nfsstat3 *)res == NFS3_OK ? 0 : 1];

	if (m->present)
		m->present(r, w, res);
	if (at)
		present(w->f, (post_op_attr *)((char *)res + at));
}

/* SETATTR: a new size truncates (or extends with zeros) the cache. */
void nfs3_learn_setattr(struct req *r, struct nfs3_fwd *w, void *res)
{
	SETATTR3res *x = res;
	SETATTR3args *a = r->args;
	struct cwcc pre_tmp;
	const struct cwcc *pre = attr_from_pre_op(
		&x->SETATTR3res_u.resok.obj_wcc.before, &pre_tmp);
	uint64_t size = a->new_attributes.size.set_size3_u.size;
	bool ok = x->status == NFS3_OK;

	if (ok && a->new_attributes.size.set_it && w->f) {
		cfile_truncate(r->d->cache, w->f, size);
		lcommit_rewrite(r->d, w->f, size, 0);
		/* Growing the file: the new bytes read as zeros. Trusted
		 * only when the pre-op attributes show the file as the
		 * proxy knew it (no other writer). */
		if (pre && !w->other && pre->size < size)
			cfile_hole_add(r->d->cache, w->f, pre->size, size);
	}
	if (ok && w->f && (a->new_attributes.mtime.set_it ||
			   a->new_attributes.size.set_it))
		cfile_adopt_times(w->f);
}

/* ACCESS: record the credential's answer. */
void nfs3_learn_access(struct req *r, struct nfs3_fwd *w, void *res)
{
	ACCESS3res *x = res;
	ACCESS3args *a = r->args;

	if (x->status == NFS3_OK && w->f && cfile_gen_holds(w->f, w->gen))
		cfile_access_record(w->f, &w->uc, a->access,
				    x->ACCESS3res_u.resok.access);
}

/* WRITE (passed through): the written bytes enter the cache. */
void nfs3_learn_write(struct req *r, struct nfs3_fwd *w, void *res)
{
	WRITE3res *x = res;
	WRITE3args *a = r->args;

	if (x->status == NFS3_OK && w->f)
		cache_write(r->d->cache, w->f, a->offset,
			    (const uint8_t *)a->data.data_val,
			    x->WRITE3res_u.resok.count < a->data.data_len
				    ? x->WRITE3res_u.resok.count
				    : a->data.data_len, &w->uc);
}

/* Apply attribute slot i of a reply to the call's file i. */
static void learn_slot(struct req *r, struct nfs3_fwd *w, unsigned i, void *res)
{
	const struct nfs3_attr_slot *s = &r->ent->nfs3->attr[i];
	bool ok = *(nfsstat3 *)res == NFS3_OK;
	struct cfile *f = i ? w->f2 : w->f;
	void *at = (char *)res + (ok ? s->ok : s->fail);
	post_op_attr p;
	wcc_data wcc;

	if (s->kind == AT_NONE || (s->kind == AT_FATTR && !ok))
		return;
	switch (s->kind) {
	case AT_FATTR:
		p.attributes_follow = TRUE;
		p.post_op_attr_u.attributes = *(fattr3 *)at;
		observe(r, w, f, w->gen, &p);
		break;
	case AT_POSTOP:
		observe(r, w, f, w->gen, at);
		break;
	case AT_WCC:
		w->other = mutated(r, w, f, at);
		break;
	case AT_POSTOP_WCC:
		/* The file's new nlink and ctime are the proxy's own
		 * change: its post-op attributes, without pre-op ones. */
		wcc.before.attributes_follow = FALSE;
		wcc.after = *(post_op_attr *)at;
		mutated(r, w, f, &wcc);
		break;
	case AT_NONE:
		break;
	}
}

/* Observe the attributes of the object a successful reply names. */
static void learn_child(struct req *r, struct nfs3_fwd *w, void *res)
{
	const struct nfs3_proc *m = r->ent->nfs3;
	const post_op_attr *p = (const post_op_attr *)((char *)res +
						       m->child_attr);
	const post_op_fh3 *pf = (const post_op_fh3 *)((char *)res + m->res_off);

	if (*(nfsstat3 *)res != NFS3_OK || !m->child_attr)
		return;
	if (m->res == RES_FH)
		observe_child(r, w, (const nfs_fh3 *)pf, p);
	else if (m->res == RES_POSTOP_FH && pf->handle_follows)
		observe_child(r, w, &pf->post_op_fh3_u.handle, p);
}

void nfs3_learn_reply(struct req *r, struct nfs3_fwd *w, void *res)
{
	const struct nfs3_proc *m = r->ent->nfs3;

	if (m->child_first)
		learn_child(r, w, res);
	for (unsigned i = 0; i < 2; i++)
		learn_slot(r, w, i, res);
	if (!m->child_first)
		learn_child(r, w, res);
	if (m->learn)
		m->learn(r, w, res);
	/* Names and listings: the metadata cache learns (nfs3_meta.c),
	 * called after the page cache has seen the reply. A reply filling
	 * the cache counts only if the directory did not change meanwhile. */
	if (m->names && (!m->names_fill || (w->f && cfile_gen_holds(w->f, w->gen))))
		m->names(r, w->ex, &w->uc, w->f, res);
}

void nfs3_learn_failed(struct req *r, struct nfs3_fwd *w)
{
	if (w->f && r->ent->nfs3->mutates_first)
		mutated(r, w, w->f, NULL);
	if (w->f2)
		mutated(r, w, w->f2, NULL);
}


void nfs3_present_fsinfo(struct req *r, struct nfs3_fwd *w, void *res)
{
	nfs3_guard_clamp_fsinfo(res, upcall_rtmax(&w->ex->upc),
				upcall_wtmax(&w->ex->upc),
				r->d->conf->max_record_size);
}
