/* SPDX-License-Identifier: MIT */
/*
 * nfs3_meta: metadata calls answered locally (RFC 1813 GETATTR 3.3.1,
 * LOOKUP 3.3.3, ACCESS 3.3.4, READDIR 3.3.16, READDIRPLUS 3.3.17).
 *
 * Each handler prepares the call (handles unwrapped, client rules,
 * credential mapped) and then either replies from the caches (a hit) or
 * forwards the call through nfs3_forward_prepared() (a miss), whose reply
 * comes back through the procedure's names hook (nfs3_names_*, named by
 * its row in daemon/dispatch.c) to fill the caches. The rules:
 *
 *   GETATTR      the file's attributes while cfile_attr_fresh() holds
 *                (acregmin..acregmax, acdirmin..acdirmax) and their
 *                timeout is within the export's current maximum (a reload
 *                lowering it takes effect at once); never under the
 *                export's `strict` (nfs3_meta_attr_trusted, which
 *                NFSACL's cached GETACL replies share).
 *   ACCESS       the per-credential results of the page cache, when every
 *                bit asked for is known to be granted and the attributes
 *                are fresh.
 *   LOOKUP       a name entry of a directory whose attributes are fresh
 *                and unchanged since the entry was learned, for a
 *                credential known to hold ACCESS3_LOOKUP there; positive
 *                entries also need the child's fresh attributes, negative
 *                ones are kept for the export's negative_timeout.
 *   READDIR(PLUS) a cached listing of an unchanged directory from any
 *                cookie it handed out (the upstream's cookies and
 *                verifier, passed through), for a credential known to
 *                hold ACCESS3_READ; READDIRPLUS entries also need their
 *                child's fresh attributes. Stale directory attributes, or
 *                a listing from cookie 0 under `strict`, are revalidated
 *                with one GETATTR first: unchanged, the listing is served.
 *
 * A page served from a partial listing stops where the listing does,
 * without eof; the next page then misses and its reply extends the
 * listing. Replies carry client handles (fh_wrap) and the attributes
 * clients are shown (cfile_attr, which includes the proxy's absorbed
 * writes).
 *
 * The metadata cache is one per daemon (d->nfs3_meta, with the counters:
 * made by nfs3_meta_start, freed by nfs3_meta_shutdown), created at the
 * first metadata call with the budget meta_cache_size; a reload's new
 * budget applies at the next call. Event loop only.
 */
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "daemon.h"
#include "log.h"
#include "meta.h"
#include "nfs3_fwd.h"
#include "nfs3_guard.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "server.h"
#include "stale.h"

/* XDR sizes (RFC 1813 section 2.5, 2.6): a post_op_attr with attributes,
 * the fixed part of entry3 (value_follows, fileid, name length, cookie). */
#define XDR_POST_OP_ATTR	(4 + 84)
#define XDR_ENTRY_FIXED		(4 + 8 + 4 + 8)
#define XDR_PAD(n)		(((n) + 3u) & ~3u)

/* The metadata handlers' state in the daemon. */
struct nfs3_meta {
	struct meta *mc;		/* owned; NULL before the first call */
	struct nfs3_meta_stats stats;	/* .cache unused: mc's own */
};

static const char *const proc_names[] = {
#define X(e, s) s,
	NFS3_META_PROCS(X)
#undef X
};

const char *nfs3_meta_proc_name(enum nfs3_meta_proc p)
{
	return p < NFS3_META_NPROCS ? proc_names[p] : "?";
}

int nfs3_meta_start(struct daemon *d)
{
	d->nfs3_meta = calloc(1, sizeof(*d->nfs3_meta));
	return d->nfs3_meta ? 0 : -1;
}

void nfs3_meta_stats_get(const struct daemon *d, struct nfs3_meta_stats *st)
{
	const struct nfs3_meta *nm = d->nfs3_meta;

	memset(st, 0, sizeof(*st));
	if (!nm)
		return;
	*st = nm->stats;
	if (nm->mc)
		meta_stats_get(nm->mc, &st->cache);
}

void nfs3_meta_shutdown(struct daemon *d)
{
	if (!d->nfs3_meta)
		return;
	meta_free(&d->nfs3_meta->mc);
	free(d->nfs3_meta);
	d->nfs3_meta = NULL;
}

const char *nfs3_meta_check_why(const struct daemon *d)
{
	const struct meta *mc = d->nfs3_meta ? d->nfs3_meta->mc : NULL;

	return mc ? meta_check_why(mc) : NULL;
}

/* d's metadata counters. */
static struct nfs3_meta_stats *mstats(struct daemon *d)
{
	return &d->nfs3_meta->stats;
}

static struct meta *meta_cache(struct daemon *d);

void nfs3_meta_forget_dir(struct daemon *d, const uint8_t *dir, size_t len)
{
	meta_dir_drop(meta_cache(d), dir, len);
}

/* The metadata cache, created or resized to d's meta_cache_size. */
static struct meta *meta_cache(struct daemon *d)
{
	uint64_t budget = (uint64_t)d->conf->meta_cache_size << 20;
	struct meta **mc = &d->nfs3_meta->mc;

	if (!*mc)
		*mc = meta_new(budget);
	else if (meta_budget(*mc) != budget)
		meta_set_budget(*mc, budget);
	return *mc;
}

/* The upstream handle bytes of an (unwrapped) nfs_fh3. */
static const uint8_t *fh_bytes(const nfs_fh3 *fh)
{
	return (const uint8_t *)fh->data.data_val;
}

/* The cached file of an unwrapped handle, or NULL (a reference). */
static struct cfile *fh_find(struct daemon *d, const nfs_fh3 *fh)
{
	return cache_find(d->cache, fh_bytes(fh), fh->data.data_len);
}

/* The stamp of directory f now. False when f has no attributes. */
static bool dir_stamp(const struct cfile *f, struct meta_stamp *st)
{
	const struct cattr *a;

	if (!f || !cfile_has_attr(f))
		return false;
	a = cfile_attr(f);
	st->gen = cfile_gen(f);
	st->wcc.size = a->size;
	st->wcc.mtime = a->mtime;
	st->wcc.ctime = a->ctime;
	return true;
}

/* The stamp a directory has after an own call whose reply said post. */
static bool post_stamp(const struct cfile *f, const struct cattr *post,
		       struct meta_stamp *st)
{
	if (!f || !post)
		return false;
	st->gen = cfile_gen(f);
	st->wcc.size = post->size;
	st->wcc.mtime = post->mtime;
	st->wcc.ctime = post->ctime;
	return true;
}

/* True if f's attributes may be used now without asking upstream: within
 * their timeout, and that timeout within the export's current maximum (a
 * reload may have lowered acregmax or acdirmax since it was set). */
static bool fresh(const struct export_rt *ex, const struct cfile *f)
{
	return f && cfile_attr_fresh(f, daemon_now()) &&
	       cfile_attr_timeout(f) <= daemon_ac(ex, cfile_attr(f)->type)->max;
}

bool nfs3_meta_attr_trusted(const struct export_rt *ex, const struct cfile *f)
{
	return !ex->conf->strict && fresh(ex, f);
}

/* Fill p with f's shown attributes (none if it has none). */
static void post_op_of(const struct cfile *f, post_op_attr *p)
{
	memset(p, 0, sizeof(*p));
	if (!f || !cfile_has_attr(f))
		return;
	p->attributes_follow = TRUE;
	attr_to_fattr3(cfile_attr(f), &p->post_op_attr_u.attributes);
}

/* Wrap upstream handle up[0..len) of ex into out (FH_SIZE_MAX bytes). */
static bool wrap(struct daemon *d, const struct export_rt *ex,
		 const uint8_t *up, size_t len, uint8_t *out, size_t *n)
{
	return fh_wrap(&d->fh_key, ex->conf->id, up, len, out, n) == FH_OK;
}

/* Whether a name may be cached: not empty, "." or "..", nor too long. */
static bool name_cacheable(const char *name, size_t *len)
{
	*len = name ? strlen(name) : 0;
	return *len > 0 && *len <= META_NAME_MAX && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

/* True when f's expired attributes may answer a call of ex now: its
 * upstream is not up and they expired less than stale_on_error ago. */
static bool stale_usable(struct daemon *d, const struct export_rt *ex,
			 const struct cfile *f)
{
	return stale_now(d, ex) && stale_attrs_usable(d, f, UPSTREAM_EDOWN);
}

/* Count a miss of p and forward r. */
static enum op_status miss(struct req *r, struct export_rt *ex,
			   const struct nfs_cred *uc,
			   enum nfs3_meta_proc p)
{
	mstats(r->d)->misses[p]++;
	return nfs3_forward_prepared(r, ex, uc);
}

/* ---- GETATTR ---- */

enum op_status nfs3_op_getattr(struct req *r)
{
	GETATTR3args *a = r->args;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *f;
	GETATTR3res res;
	nfsstat3 st;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	f = fh_find(r->d, &a->object);
	if (!nfs3_meta_attr_trusted(ex, f)) {
		cfile_put(r->d->cache, &f);
		return miss(r, ex, &uc, NFS3_META_GETATTR);
	}
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	attr_to_fattr3(cfile_attr(f), &res.GETATTR3res_u.resok.obj_attributes);
	cfile_put(r->d->cache, &f);
	mstats(r->d)->hits[NFS3_META_GETATTR]++;
	return req_reply(r, (xdrproc_t)xdr_GETATTR3res, &res);
}

/* ---- ACCESS ---- */

enum op_status nfs3_op_access(struct req *r)
{
	ACCESS3args *a = r->args;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *f;
	ACCESS3res res;
	nfsstat3 st;
	uint32_t granted = a->access;
	bool now;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	f = fh_find(r->d, &a->object);
	now = fresh(ex, f);
	/* Denied bits are not answered locally while the upstream can be
	 * asked (cfile_access_allows: every bit asked granted); during an
	 * outage the upstream's last answer for these bits is, denials
	 * included (a client's open asks for more than a file grants). */
	if (now ? !cfile_access_allows(f, &uc, a->access)
		: !stale_usable(r->d, ex, f) ||
		  !cfile_access_known(f, &uc, a->access, &granted)) {
		cfile_put(r->d->cache, &f);
		return miss(r, ex, &uc, NFS3_META_ACCESS);
	}
	if (!now)
		stale_count(r->d, NFSPROC3_ACCESS);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	post_op_of(f, &res.ACCESS3res_u.resok.obj_attributes);
	res.ACCESS3res_u.resok.access = granted;
	cfile_put(r->d->cache, &f);
	mstats(r->d)->hits[NFS3_META_ACCESS]++;
	return req_reply(r, (xdrproc_t)xdr_ACCESS3res, &res);
}

/* ---- LOOKUP ---- */

/* Reply a cached LOOKUP: child handle up[0..len) (NULL: NOENT).
 * OP_PENDING (nothing sent) if the handle cannot be wrapped. */
static enum op_status lookup_reply(struct req *r, struct export_rt *ex,
				   struct cfile *dir, struct cfile *child,
				   const uint8_t *up, size_t len)
{
	uint8_t out[FH_SIZE_MAX];
	LOOKUP3res res;
	size_t n;

	memset(&res, 0, sizeof(res));
	if (!up) {
		res.status = NFS3ERR_NOENT;
		post_op_of(dir, &res.LOOKUP3res_u.resfail.dir_attributes);
		mstats(r->d)->negative_hits++;
	} else {
		if (!wrap(r->d, ex, up, len, out, &n))
			return OP_PENDING;
		res.status = NFS3_OK;
		res.LOOKUP3res_u.resok.object.data.data_val = (char *)out;
		res.LOOKUP3res_u.resok.object.data.data_len = (u_int)n;
		post_op_of(child, &res.LOOKUP3res_u.resok.obj_attributes);
		post_op_of(dir, &res.LOOKUP3res_u.resok.dir_attributes);
	}
	mstats(r->d)->hits[NFS3_META_LOOKUP]++;
	return req_reply(r, (xdrproc_t)xdr_LOOKUP3res, &res);
}

/* Answer a LOOKUP from the cache if the rules allow: OP_PENDING when
 * they do not (the caller forwards), else the reply's status. */
static enum op_status lookup_local(struct req *r, struct export_rt *ex,
				   const struct nfs_cred *uc,
				   struct cfile *dir)
{
	LOOKUP3args *a = r->args;
	uint8_t fh[CACHE_FH_MAX];
	struct meta_stamp st;
	struct cfile *child = NULL;
	enum meta_found found;
	enum op_status os = OP_PENDING;
	size_t nlen, fhlen = 0;
	struct daemon *d = r->d;
	struct meta *m = meta_cache(d);
	bool stale = !fresh(ex, dir) && stale_usable(d, ex, dir);

	if (!m || !name_cacheable(a->what.name, &nlen) ||
	    (!fresh(ex, dir) && !stale) || cfile_attr(dir)->type != NF3DIR ||
	    !cfile_access_allows(dir, uc, ACCESS3_LOOKUP) ||
	    !dir_stamp(dir, &st))
		return OP_PENDING;
	found = meta_name_get(m, fh_bytes(&a->what.dir),
			      a->what.dir.data.data_len, &st,
			      (const uint8_t *)a->what.name, nlen, daemon_now(),
			      ex->conf->negative_timeout, fh, &fhlen);
	if (found == META_NEGATIVE && !stale)
		return lookup_reply(r, ex, dir, NULL, NULL, 0);
	if (found != META_POSITIVE)
		return OP_PENDING;
	child = cache_find(d->cache, fh, fhlen);
	if (!fresh(ex, child) && stale_usable(d, ex, child))
		stale = true;
	else if (!fresh(ex, child))
		child = (cfile_put(d->cache, &child), NULL);
	if (child && stale)
		stale_count(d, NFSPROC3_LOOKUP);
	if (child)
		os = lookup_reply(r, ex, dir, child, fh, fhlen);
	cfile_put(d->cache, &child);	/* r may be gone: it replied */
	return os;
}

enum op_status nfs3_op_lookup(struct req *r)
{
	LOOKUP3args *a = r->args;
	struct daemon *d = r->d;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *dir;
	enum op_status os;
	nfsstat3 st;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	dir = fh_find(d, &a->what.dir);
	os = lookup_local(r, ex, &uc, dir);
	cfile_put(d->cache, &dir);	/* r may be gone: it replied */
	if (os != OP_PENDING)
		return os;
	return miss(r, ex, &uc, NFS3_META_LOOKUP);
}

/* ---- READDIR and READDIRPLUS ---- */

/* One READDIR(PLUS) on its way: kept across a revalidating GETATTR. */
struct dir_op {
	struct daemon *d;		/* outlives r, which a reply frees */
	struct req *r;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *dir;		/* reference */
	uint64_t gen;			/* dir's generation when sent */
	bool plus;
};

/* The arguments of a READDIR or READDIRPLUS, as one shape. */
struct dir_args {
	nfs_fh3 *dir;
	cookie3 cookie;
	const char *verf;
	uint32_t dircount;		/* READDIR: count */
	uint32_t maxcount;		/* READDIR: count */
};

/* The arguments of op's call. */
static struct dir_args dir_args_of(const struct dir_op *op)
{
	struct dir_args da;

	if (op->plus) {
		READDIRPLUS3args *a = op->r->args;

		da.dir = &a->dir;
		da.cookie = a->cookie;
		da.verf = a->cookieverf;
		da.dircount = a->dircount;
		da.maxcount = a->maxcount;
	} else {
		READDIR3args *a = op->r->args;

		da.dir = &a->dir;
		da.cookie = a->cookie;
		da.verf = a->cookieverf;
		da.dircount = a->count;
		da.maxcount = a->count;
	}
	return da;
}

/* The procedure label of op. */
static enum nfs3_meta_proc dir_proc(const struct dir_op *op)
{
	return op->plus ? NFS3_META_READDIRPLUS : NFS3_META_READDIR;
}

/* Release op (not the request). */
static void dir_op_free(struct dir_op *op)
{
	cfile_put(op->d->cache, &op->dir);
	free(op);
}

/* Forward op's call as a miss and release op. */
static enum op_status dir_forward(struct dir_op *op)
{
	struct req *r = op->r;
	struct export_rt *ex = op->ex;
	struct nfs_cred uc = op->uc;
	enum nfs3_meta_proc p = dir_proc(op);

	dir_op_free(op);
	return miss(r, ex, &uc, p);
}

/* Storage for one page of a reply built from the cache. */
struct page {
	size_t n;			/* entries in the page */
	bool eof;
	entry3 *e;			/* READDIR */
	entryplus3 *ep;			/* READDIRPLUS */
	uint8_t (*fh)[FH_SIZE_MAX];	/* READDIRPLUS: client handles */
	struct cfile **child;		/* READDIRPLUS: references */
	size_t nchild;
};

/* Free what a page holds. */
static void page_free(struct daemon *d, struct page *pg)
{
	for (size_t i = 0; i < pg->nchild; i++)
		cfile_put(d->cache, &pg->child[i]);
	free(pg->child);
	free(pg->fh);
	free(pg->e);
	free(pg->ep);
}

/* Allocate room for up to n entries. 0, or -1 on ENOMEM. */
static int page_alloc(struct page *pg, size_t n, bool plus)
{
	memset(pg, 0, sizeof(*pg));
	n = n ? n : 1;
	if (!plus)
		return (pg->e = calloc(n, sizeof(*pg->e))) ? 0 : -1;
	pg->ep = calloc(n, sizeof(*pg->ep));
	pg->fh = calloc(n, sizeof(*pg->fh));
	pg->child = calloc(n, sizeof(*pg->child));
	return pg->ep && pg->fh && pg->child ? 0 : -1;
}

/*
 * Add cached entry e as a READDIRPLUS entry at pg->n, with its handle and
 * its child's fresh attributes. False when the child's attributes are not
 * fresh (the page must stop before it).
 */
static bool plus_entry(struct dir_op *op, struct page *pg,
		       const struct meta_dirent *e, size_t *bytes)
{
	entryplus3 *x = &pg->ep[pg->n];
	struct cfile *c = NULL;
	size_t n = 0;

	if (e->fhlen) {
		c = cache_find(op->d->cache, e->fh, e->fhlen);
		if (!fresh(op->ex, c) ||
		    !wrap(op->d, op->ex, e->fh, e->fhlen, pg->fh[pg->n], &n)) {
			cfile_put(op->d->cache, &c);
			return false;
		}
		pg->child[pg->nchild++] = c;
		x->name_handle.handle_follows = TRUE;
		x->name_handle.post_op_fh3_u.handle.data.data_val =
			(char *)pg->fh[pg->n];
		x->name_handle.post_op_fh3_u.handle.data.data_len = (u_int)n;
		post_op_of(c, &x->name_attributes);
		*bytes += 4 + XDR_POST_OP_ATTR + 4 + 4 + XDR_PAD(n);
	} else {
		*bytes += 4 + 4;	/* neither attributes nor handle */
	}
	return true;
}

/*
 * Build in pg the page of cached entries v that fits the client's sizes:
 * dircount counts entries' fixed parts and names, maxcount the whole
 * reply. Stops early at a READDIRPLUS entry without fresh attributes.
 */
static void page_build(struct dir_op *op, const struct meta_view *v,
		       const struct dir_args *da, struct page *pg)
{
	size_t total = 4 + XDR_POST_OP_ATTR + NFS3_COOKIEVERFSIZE + 4 + 4;
	size_t dir = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct meta_dirent *e = &v->e[i];
		size_t one = XDR_ENTRY_FIXED + XDR_PAD(e->namelen);
		size_t full = one;

		if (dir + one > da->dircount)
			return;
		if (op->plus) {
			pg->ep[pg->n].fileid = e->fileid;
			pg->ep[pg->n].name = (char *)(uintptr_t)e->name;
			pg->ep[pg->n].cookie = e->cookie;
			if (!plus_entry(op, pg, e, &full))
				return;
			if (total + full > da->maxcount) {
				/* The child reference stays in pg->child
				 * until page_free. */
				memset(&pg->ep[pg->n], 0, sizeof(pg->ep[0]));
				return;
			}
			if (pg->n)
				pg->ep[pg->n - 1].nextentry = &pg->ep[pg->n];
		} else {
			if (total + full > da->maxcount)
				return;
			pg->e[pg->n].fileid = e->fileid;
			pg->e[pg->n].name = (char *)(uintptr_t)e->name;
			pg->e[pg->n].cookie = e->cookie;
			if (pg->n)
				pg->e[pg->n - 1].nextentry = &pg->e[pg->n];
		}
		dir += one;
		total += full;
		pg->n++;
	}
	pg->eof = v->complete;
}

/* Reply page pg of op's directory with verifier verf. */
static enum op_status page_reply(struct dir_op *op, struct page *pg,
				 const uint8_t *verf)
{
	struct req *r = op->r;
	READDIRPLUS3res rp;
	READDIR3res rd;

	mstats(op->d)->hits[dir_proc(op)]++;
	if (op->plus) {
		memset(&rp, 0, sizeof(rp));
		rp.status = NFS3_OK;
		post_op_of(op->dir, &rp.READDIRPLUS3res_u.resok.dir_attributes);
		memcpy(rp.READDIRPLUS3res_u.resok.cookieverf, verf,
		       NFS3_COOKIEVERFSIZE);
		rp.READDIRPLUS3res_u.resok.reply.entries = pg->n ? pg->ep : NULL;
		rp.READDIRPLUS3res_u.resok.reply.eof = pg->eof;
		return req_reply(r, (xdrproc_t)xdr_READDIRPLUS3res, &rp);
	}
	memset(&rd, 0, sizeof(rd));
	rd.status = NFS3_OK;
	post_op_of(op->dir, &rd.READDIR3res_u.resok.dir_attributes);
	memcpy(rd.READDIR3res_u.resok.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	rd.READDIR3res_u.resok.reply.entries = pg->n ? pg->e : NULL;
	rd.READDIR3res_u.resok.reply.eof = pg->eof;
	return req_reply(r, (xdrproc_t)xdr_READDIR3res, &rd);
}

/*
 * Serve op's page from the cached listing if the rules allow (the
 * directory's attributes fresh: the caller checks). Returns true when it
 * replied (op is then freed), false when the call must be forwarded.
 */
static bool dir_serve(struct dir_op *op, enum op_status *os)
{
	struct dir_args da = dir_args_of(op);
	struct meta *m = meta_cache(op->d);
	struct meta_stamp st;
	struct meta_view v;
	struct page pg;
	uint8_t verf[META_VERF_SIZE];

	if (!m || !dir_stamp(op->dir, &st) ||
	    !meta_list_get(m, fh_bytes(da.dir), da.dir->data.data_len, &st,
			   op->plus, da.cookie, (const uint8_t *)da.verf, &v))
		return false;
	if (page_alloc(&pg, v.n, op->plus) != 0) {
		page_free(op->d, &pg);
		return false;
	}
	memcpy(verf, v.verf, sizeof(verf));
	page_build(op, &v, &da, &pg);
	/* Nothing to say: past the listing's end without eof, a first
	 * entry too big for the client, or one without fresh attributes. */
	if (pg.n == 0 && !pg.eof) {
		page_free(op->d, &pg);
		return false;
	}
	*os = page_reply(op, &pg, verf);	/* frees op->r */
	page_free(op->d, &pg);
	dir_op_free(op);
	return true;
}

/* Serve op from the cache or forward it (attributes now judged). */
static enum op_status dir_continue(struct dir_op *op)
{
	enum op_status os;

	if (fresh(op->ex, op->dir) && dir_serve(op, &os))
		return os;
	return dir_forward(op);
}

/* GETATTR reply revalidating a directory before its listing is served. */
static void dir_revalidated(enum upstream_status status, void *decoded,
			    void *arg)
{
	struct dir_op *op = arg;
	GETATTR3res *res = NULL;
	struct cattr a;

	if (status == UPSTREAM_OK)
		res = decoded;
	if (res && res->status == NFS3_OK) {
		attr_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, &a);
		cfile_attr_observe_gen(op->d->cache, op->dir, op->gen, &a,
				       daemon_now(), daemon_ac(op->ex, a.type));
	}
	/* A failed GETATTR leaves the attributes stale: the call is
	 * forwarded and the upstream tells the client what is wrong (or
	 * the client gets NFS3ERR_JUKEBOX while it is down). */
	dir_continue(op);
}

/* Ask upstream for the directory's attributes, then continue. */
static enum op_status dir_revalidate(struct dir_op *op)
{
	GETATTR3args ga;

	ga.object = *dir_args_of(op).dir;
	op->gen = cfile_gen(op->dir);
	mstats(op->d)->revalidations++;
	if (nfs3_send(op->ex, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args,
		      &ga, &op->uc, dir_revalidated, op) != 0)
		return dir_forward(op);
	return OP_PENDING;
}

/* READDIR or READDIRPLUS. */
static enum op_status op_readdir(struct req *r, bool plus)
{
	struct dir_op *op;
	struct dir_args da;
	struct export_rt *ex;
	struct nfs_cred uc;
	nfsstat3 st;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	if (!(op = calloc(1, sizeof(*op))))
		return miss(r, ex, &uc, plus ? NFS3_META_READDIRPLUS
					     : NFS3_META_READDIR);
	op->d = r->d;
	op->r = r;
	op->ex = ex;
	op->uc = uc;
	op->plus = plus;
	da = dir_args_of(op);
	op->dir = fh_find(r->d, da.dir);
	if (!op->dir || !cfile_has_attr(op->dir) ||
	    cfile_attr(op->dir)->type != NF3DIR ||
	    !cfile_access_allows(op->dir, &uc, ACCESS3_READ) ||
	    !meta_cache(r->d))
		return dir_forward(op);
	if (!fresh(op->ex, op->dir) || (ex->conf->strict && da.cookie == 0))
		return dir_revalidate(op);
	return dir_continue(op);
}

enum op_status nfs3_op_readdir(struct req *r)
{
	return op_readdir(r, false);
}

enum op_status nfs3_op_readdirplus(struct req *r)
{
	return op_readdir(r, true);
}

/* ---- learning from forwarded replies ---- */

/* Keep what a LOOKUP taught for an outage: the directory's attributes,
 * the name, the child's attributes (observed before the names hook). */
static void keep_lookup(struct daemon *d, const struct cfile *dir,
			const LOOKUP3args *a, const nfs_fh3 *obj)
{
	struct cfile *child;

	stale_keep_attr(d, dir);
	stale_keep_name(d, fh_bytes(&a->what.dir), a->what.dir.data.data_len,
			(const uint8_t *)a->what.name, strlen(a->what.name),
			fh_bytes(obj), obj->data.data_len);
	child = cache_find(d->cache, fh_bytes(obj), obj->data.data_len);
	stale_keep_attr(d, child);
	cfile_put(d->cache, &child);
}

void nfs3_names_getattr(struct req *r, struct export_rt *ex,
			const struct nfs_cred *cc, struct cfile *f, void *res)
{
	nfs3_names_none(r, ex, cc, f, res);
	if (*(const nfsstat3 *)res == NFS3_OK)
		stale_keep_attr(r->d, f);
}

void nfs3_names_access(struct req *r, struct export_rt *ex,
		       const struct nfs_cred *cc, struct cfile *f, void *res)
{
	const ACCESS3res *x = res;
	const ACCESS3args *a = r->args;

	nfs3_names_none(r, ex, cc, f, res);
	if (x->status != NFS3_OK)
		return;
	stale_keep_attr(r->d, f);
	stale_keep_access(r->d, f, cc, a->access, x->ACCESS3res_u.resok.access);
}

void nfs3_meta_restore_name(struct daemon *d, const uint8_t *dir, size_t dlen,
			    const uint8_t *name, size_t nlen, const uint8_t *fh,
			    size_t fhlen, double now)
{
	struct cfile *f = cache_find(d->cache, dir, dlen);
	struct meta *m = meta_cache(d);
	struct meta_stamp st;

	if (m && dir_stamp(f, &st) && cfile_attr(f)->type == NF3DIR)
		meta_name_put(m, dir, dlen, &st, name, nlen, fh, fhlen, now);
	cfile_put(d->cache, &f);
}

/* A LOOKUP reply: the name's entry and the caller's LOOKUP right. */
void nfs3_names_lookup(struct req *r, struct export_rt *ex,
		       const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	const LOOKUP3args *a = r->args;
	const LOOKUP3res *x = res;
	const nfs_fh3 *obj = &x->LOOKUP3res_u.resok.object;
	struct meta_stamp st;
	struct meta *mc;
	size_t nlen;

	if (!(mc = meta_cache(r->d)) ||
	    (x->status != NFS3_OK && x->status != NFS3ERR_NOENT))
		return;
	/* The upstream searched the directory for this caller. */
	cfile_access_record(dir, cc, ACCESS3_LOOKUP, ACCESS3_LOOKUP);
	stale_keep_access(r->d, dir, cc, ACCESS3_LOOKUP, ACCESS3_LOOKUP);
	if (!name_cacheable(a->what.name, &nlen) || !dir_stamp(dir, &st) ||
	    cfile_attr(dir)->type != NF3DIR)
		return;
	if (x->status == NFS3_OK) {
		meta_name_put(mc, fh_bytes(&a->what.dir), a->what.dir.data.data_len,
			      &st, (const uint8_t *)a->what.name, nlen,
			      fh_bytes(obj), obj->data.data_len, daemon_now());
		keep_lookup(r->d, dir, a, obj);
	} else if (ex->conf->negative_timeout > 0)
		meta_name_put(mc, fh_bytes(&a->what.dir), a->what.dir.data.data_len,
			      &st, (const uint8_t *)a->what.name, nlen, NULL, 0,
			      daemon_now());
}

/* Observe a READDIRPLUS entry's attributes for its child. */
static void observe_entry(struct daemon *d, struct export_rt *ex,
			  const entryplus3 *e)
{
	const nfs_fh3 *fh = &e->name_handle.post_op_fh3_u.handle;
	struct cattr tmp;
	const struct cattr *a;
	struct cfile *c;

	if (!e->name_handle.handle_follows ||
	    !(a = attr_from_post_op(&e->name_attributes, &tmp)))
		return;
	c = cache_get(d->cache, fh_bytes(fh), fh->data.data_len);
	if (c)
		cfile_attr_observe(d->cache, c, a, daemon_now(),
				   daemon_ac(ex, a->type));
	cfile_put(d->cache, &c);
}

/* Count the entries of a READDIR(PLUS) reply. */
static size_t count_entries(const void *first, bool plus)
{
	size_t n = 0;

	if (plus)
		for (const entryplus3 *e = first; e; e = e->nextentry)
			n++;
	else
		for (const entry3 *e = first; e; e = e->nextentry)
			n++;
	return n;
}

/* Convert the entries of a reply into meta entries (names borrowed). */
static struct meta_dirent *reply_entries(const void *first, bool plus,
					 size_t n)
{
	struct meta_dirent *v = calloc(n ? n : 1, sizeof(*v));
	size_t i = 0;

	if (!v)
		return NULL;
	if (plus) {
		for (const entryplus3 *e = first; e; e = e->nextentry, i++) {
			const nfs_fh3 *fh = &e->name_handle.post_op_fh3_u.handle;

			v[i].fileid = e->fileid;
			v[i].cookie = e->cookie;
			v[i].name = (const uint8_t *)e->name;
			v[i].namelen = (uint32_t)strlen(e->name);
			if (e->name_handle.handle_follows) {
				v[i].fh = fh_bytes(fh);
				v[i].fhlen = fh->data.data_len;
			}
		}
		return v;
	}
	for (const entry3 *e = first; e; e = e->nextentry, i++) {
		v[i].fileid = e->fileid;
		v[i].cookie = e->cookie;
		v[i].name = (const uint8_t *)e->name;
		v[i].namelen = (uint32_t)strlen(e->name);
	}
	return v;
}

/* A READDIR or READDIRPLUS reply: a page of the listing, the caller's
 * READ right, and (READDIRPLUS) the children's attributes. */
void nfs3_names_readdir(struct req *r, struct export_rt *ex,
			const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	bool plus = r->call.proc == NFSPROC3_READDIRPLUS;
	const nfs_fh3 *dfh;
	const void *first;
	const char *verf;
	struct meta_dirent *v;
	struct meta_stamp st;
	cookie3 cookie;
	struct meta *mc;
	bool eof;
	size_t n;

	if (!(mc = meta_cache(r->d)) || *(nfsstat3 *)res != NFS3_OK)
		return;
	cfile_access_record(dir, cc, ACCESS3_READ, ACCESS3_READ);
	if (plus) {
		READDIRPLUS3resok *ok = &((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok;

		dfh = &((READDIRPLUS3args *)r->args)->dir;
		cookie = ((READDIRPLUS3args *)r->args)->cookie;
		first = ok->reply.entries;
		verf = ok->cookieverf;
		eof = ok->reply.eof;
		for (const entryplus3 *e = first; e; e = e->nextentry)
			observe_entry(r->d, ex, e);
	} else {
		READDIR3resok *ok = &((READDIR3res *)res)->READDIR3res_u.resok;

		dfh = &((READDIR3args *)r->args)->dir;
		cookie = ((READDIR3args *)r->args)->cookie;
		first = ok->reply.entries;
		verf = ok->cookieverf;
		eof = ok->reply.eof;
	}
	if (!dir_stamp(dir, &st) || cfile_attr(dir)->type != NF3DIR)
		return;
	n = count_entries(first, plus);
	if (!(v = reply_entries(first, plus, n)))
		return;
	meta_list_put(mc, fh_bytes(dfh), dfh->data.data_len, &st, plus, cookie,
		      (const uint8_t *)verf, v, n, eof);
	free(v);
}

/* The pre- and post-operation attributes of a wcc_data (NULL if absent). */
static void wcc_of(const wcc_data *w, struct cwcc *pre_tmp,
		   struct cattr *post_tmp, const struct cwcc **pre,
		   const struct cattr **post)
{
	*pre = w ? attr_from_pre_op(&w->before, pre_tmp) : NULL;
	*post = w ? attr_from_post_op(&w->after, post_tmp) : NULL;
}

/*
 * An own call changed directory dfh with wcc w: judge it (meta.h,
 * meta_dir_mutated; *kept, if not NULL, tells whether its names were
 * kept) and return in *st the stamp new entries go under (false when
 * there is none: no post attributes or no cached file).
 */
static bool dir_changed(struct daemon *d, const nfs_fh3 *dfh,
			const wcc_data *w, struct meta_stamp *st, bool *kept)
{
	struct cwcc pre_tmp;
	struct cattr post_tmp;
	const struct cwcc *pre;
	const struct cattr *post;
	struct cfile *f = fh_find(d, dfh);
	bool have, k;

	wcc_of(w, &pre_tmp, &post_tmp, &pre, &post);
	have = post_stamp(f, post, st);
	k = meta_dir_mutated(d->nfs3_meta->mc, fh_bytes(dfh), dfh->data.data_len, pre,
			     have ? st : NULL);
	if (kept)
		*kept = k;
	cfile_put(d->cache, &f);
	return have;
}

/* Record in mc name in dfh as handle fh (NULL: no such name) under stamp
 * st. */
static void set_name(struct meta *mc, struct export_rt *ex, const nfs_fh3 *dfh,
		     const char *name, const struct meta_stamp *st,
		     const uint8_t *fh, size_t fhlen)
{
	size_t nlen;

	if (!name_cacheable(name, &nlen))
		return;
	if (fh || ex->conf->negative_timeout > 0)
		meta_name_put(mc, fh_bytes(dfh), dfh->data.data_len, st,
			      (const uint8_t *)name, nlen, fh, fhlen,
			      daemon_now());
	else
		meta_name_forget(mc, fh_bytes(dfh), dfh->data.data_len,
				 (const uint8_t *)name, nlen);
}

/* Forget name in dfh from mc. */
static void forget_name(struct meta *mc, const nfs_fh3 *dfh, const char *name)
{
	size_t nlen;

	if (name_cacheable(name, &nlen))
		meta_name_forget(mc, fh_bytes(dfh), dfh->data.data_len,
				 (const uint8_t *)name, nlen);
}

/* Expire the attributes of the file with handle fh[0..len), if cached:
 * the proxy's own call changed its link count and ctime, which the next
 * GETATTR shows without that being another writer's change. */
static void expire_child(struct daemon *d, const uint8_t *fh, size_t len)
{
	struct cfile *c = cache_find(d->cache, fh, len);

	if (c)
		cfile_attr_links_changed(c);
	cfile_put(d->cache, &c);
}

/* CREATE, MKDIR, SYMLINK or MKNOD: the new name (results share one
 * layout, and each call's arguments start with its diropargs3). */
void nfs3_names_create(struct req *r, struct export_rt *ex,
		       const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	const diropargs3 *where = r->args;
	CREATE3res *x = res;
	const post_op_fh3 *obj = &x->CREATE3res_u.resok.obj;
	struct meta_stamp st;
	struct meta *mc;

	(void)cc;
	(void)dir;
	if (!(mc = meta_cache(r->d)) || !dir_changed(r->d, &where->dir, x->status == NFS3_OK
			 ? &x->CREATE3res_u.resok.dir_wcc
			 : &x->CREATE3res_u.resfail.dir_wcc, &st, NULL) ||
	    x->status != NFS3_OK)
		return;
	if (obj->handle_follows)
		set_name(mc, ex, &where->dir, where->name, &st,
			 fh_bytes(&obj->post_op_fh3_u.handle),
			 obj->post_op_fh3_u.handle.data.data_len);
	else
		forget_name(mc, &where->dir, where->name);
}

/* REMOVE or RMDIR: the name is gone (same layouts). */
void nfs3_names_remove(struct req *r, struct export_rt *ex,
		       const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	const diropargs3 *obj = r->args;
	REMOVE3res *x = res;
	uint8_t fh[CACHE_FH_MAX];
	struct meta_stamp st;
	size_t fhlen = 0, nlen;
	bool cur;
	struct meta *mc = meta_cache(r->d);
	/* Even a hint names the file whose link count the call changes. */
	bool had = mc && name_cacheable(obj->name, &nlen) &&
		   meta_name_peek(mc, fh_bytes(&obj->dir), obj->dir.data.data_len,
				  (const uint8_t *)obj->name, nlen, fh, &fhlen,
				  &cur);

	(void)cc;
	(void)dir;
	if (!mc || !dir_changed(r->d, &obj->dir, x->status == NFS3_OK
			 ? &x->REMOVE3res_u.resok.dir_wcc
			 : &x->REMOVE3res_u.resfail.dir_wcc, &st, NULL) ||
	    x->status != NFS3_OK)
		return;
	set_name(mc, ex, &obj->dir, obj->name, &st, NULL, 0);
	if (had)
		expire_child(r->d, fh, fhlen);
}

/* Whether two unwrapped handles are the same. */
static bool fh_same(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val, a->data.data_len) == 0;
}

/* Whether wcc w shows its directory unchanged (pre and post present,
 * same mtime and ctime). */
static bool dir_untouched(const wcc_data *w)
{
	const wcc_attr *b = &w->before.pre_op_attr_u.attributes;
	const fattr3 *a = &w->after.post_op_attr_u.attributes;

	return w->before.attributes_follow && w->after.attributes_follow &&
	       b->mtime.seconds == a->mtime.seconds &&
	       b->mtime.nseconds == a->mtime.nseconds &&
	       b->ctime.seconds == a->ctime.seconds &&
	       b->ctime.nseconds == a->ctime.nseconds;
}

/* RENAME: the old name is gone, the new one is the moved object; a
 * RENAME between two links of one file changes nothing. */
void nfs3_names_rename(struct req *r, struct export_rt *ex,
		       const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	const RENAME3args *a = r->args;
	RENAME3res *x = res;
	bool ok = x->status == NFS3_OK, same = fh_same(&a->from.dir, &a->to.dir);
	const wcc_data *fw = ok ? &x->RENAME3res_u.resok.fromdir_wcc
				: &x->RENAME3res_u.resfail.fromdir_wcc;
	const wcc_data *tw = ok ? &x->RENAME3res_u.resok.todir_wcc
				: &x->RENAME3res_u.resfail.todir_wcc;
	uint8_t fh[CACHE_FH_MAX], old[CACHE_FH_MAX];
	size_t fhlen = 0, oldlen = 0, nlen;
	struct meta_stamp fst, tst;
	bool moved, replaced, fhave, thave, fkept, known = false, cur;
	struct meta *mc;

	(void)cc;
	(void)dir;
	if (!(mc = meta_cache(r->d)))
		return;
	moved = name_cacheable(a->from.name, &nlen) &&
		meta_name_peek(mc, fh_bytes(&a->from.dir), a->from.dir.data.data_len,
			       (const uint8_t *)a->from.name, nlen, fh, &fhlen,
			       &known);
	replaced = name_cacheable(a->to.name, &nlen) &&
		   meta_name_peek(mc, fh_bytes(&a->to.dir), a->to.dir.data.data_len,
				  (const uint8_t *)a->to.name, nlen, old, &oldlen,
				  &cur);
	fhave = dir_changed(r->d, &a->from.dir, fw, &fst, &fkept);
	thave = same ? fhave : dir_changed(r->d, &a->to.dir, tw, &tst, NULL);
	if (same)
		tst = fst;
	if (!ok)
		return;
	if (moved && replaced && fhlen == oldlen && !memcmp(fh, old, fhlen)) {
		/* Two links of one file (rename(2): "does nothing"). */
		if (!(known && cur && fkept)) {
			forget_name(mc, &a->from.dir, a->from.name);
			forget_name(mc, &a->to.dir, a->to.name);
		}
		return;
	}
	/* The old name is known gone only if the call changed its
	 * directory: an unknown new name may have been a link of the same
	 * file, and such a RENAME changes nothing. */
	if (fhave && !dir_untouched(fw))
		set_name(mc, ex, &a->from.dir, a->from.name, &fst, NULL, 0);
	else
		forget_name(mc, &a->from.dir, a->from.name);
	/* The new name is the moved file only if the old name's entry was
	 * current and the source directory was as the proxy knew it. */
	if (thave && moved && known && fkept)
		set_name(mc, ex, &a->to.dir, a->to.name, &tst, fh, fhlen);
	else
		forget_name(mc, &a->to.dir, a->to.name);
	if (moved)
		expire_child(r->d, fh, fhlen);
	if (replaced)
		expire_child(r->d, old, oldlen);
}

/* LINK: the new name is the file. */
void nfs3_names_link(struct req *r, struct export_rt *ex,
		     const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	const LINK3args *a = r->args;
	LINK3res *x = res;
	struct meta_stamp st;
	struct meta *mc;

	(void)cc;
	(void)dir;
	if (!(mc = meta_cache(r->d)) || !dir_changed(r->d, &a->link.dir, x->status == NFS3_OK
			 ? &x->LINK3res_u.resok.linkdir_wcc
			 : &x->LINK3res_u.resfail.linkdir_wcc, &st, NULL) ||
	    x->status != NFS3_OK)
		return;
	set_name(mc, ex, &a->link.dir, a->link.name, &st, fh_bytes(&a->file),
		 a->file.data.data_len);
}

void nfs3_names_none(struct req *r, struct export_rt *ex,
		     const struct nfs_cred *cc, struct cfile *dir, void *res)
{
	(void)ex;
	(void)cc;
	(void)dir;
	(void)res;
	meta_cache(r->d);
}
