/* SPDX-License-Identifier: MIT */
/*
 * nfs3_ops: NFSv3 procedures (RFC 1813 section 3) forwarded upstream.
 *
 * For each call: unwrap and check every client file handle in the
 * arguments (fh.h), check the export's client rules, map the credential
 * (root squash), clamp transfer counts to what the upstream connection can
 * carry, re-encode the arguments and send them through the export's
 * upstream. The reply's handles are wrapped back into client handles and
 * FSINFO is clamped so it never advertises more than the proxy can take.
 * A call the upstream cannot serve now gets NFS3ERR_JUKEBOX so the client
 * retries. The reply teaches the cache the attributes it carries and is
 * shown with the proxy's view of files it holds writes of.
 *
 * The table procs[] is the one place that says, per procedure, where its
 * handles and names sit in the arguments, where its result carries
 * attributes (post_op_attr, wcc_data) in resok and resfail and for which
 * of the call's files, and which hooks learn or present more than that
 * (offsets into the rpcgen structs of nfs3_prot.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "attr.h"
#include "fstate.h"
#include "writeback.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "ops.h"
#include "rpcmsg.h"
#include "server.h"
#include "stale.h"
#include "upstream.h"

enum res_fh {
	RES_NONE = 0,
	RES_FH,		/* an nfs_fh3 in resok */
	RES_POSTOP_FH,	/* a post_op_fh3 in resok */
	RES_DIRPLUS,	/* READDIRPLUS entries' name_handle */
};

/* What a result carries about one of the call's files. */
enum attr_kind {
	AT_NONE = 0,
	AT_FATTR,	/* an fattr3, resok only: observed */
	AT_POSTOP,	/* a post_op_attr: observed */
	AT_WCC,		/* a wcc_data: closes the file's mutation bracket */
	AT_POSTOP_WCC,	/* a post_op_attr closing the bracket as a wcc_data
			 * without pre-op attributes (LINK's file) */
};

/* Where: offsets into the result for NFS3_OK and for an error. */
struct attr_slot {
	enum attr_kind kind;
	size_t ok, fail;
};

struct fwd;
struct req;

/* One NFSv3 procedure as the forwarding code sees it. */
struct nfs3_proc {
	unsigned nfh;			/* argument handles (nfs_fh3) */
	size_t fh[2];
	unsigned nname;			/* argument names (filename3) */
	size_t name[2];
	enum res_fh res;		/* a new handle in resok */
	size_t res_off;
	size_t child_attr;		/* resok post_op_attr of that object */
	bool child_first;		/* observed before the call's files */
	bool mutates_first;		/* changes fh[0]'s object */
	struct attr_slot attr[2];	/* about fh[0]'s and fh[1]'s files */
	size_t present_at[2];		/* post_op_attr of fh[0]'s file shown
					 * as the proxy sees it: ok, fail */
	void (*learn)(struct req *r, struct fwd *w, void *res);
	void (*present)(struct req *r, struct fwd *w, void *res);
};

#define A1(T, f) 1, { offsetof(T, f), 0 }
#define A2(T, f, g) 2, { offsetof(T, f), offsetof(T, g) }
#define RESOK(T, f) offsetof(T, T##_u.resok.f)
#define RESFAIL(T, f) offsetof(T, T##_u.resfail.f)
#define SLOT(k, T, okf, failf) { k, RESOK(T, okf), RESFAIL(T, failf) }
#define BOTH(T, f) { RESOK(T, f), RESFAIL(T, f) }
#define CHILD(T) RES_POSTOP_FH, RESOK(T, obj), RESOK(T, obj_attributes)
#define ATTRS(T, f) SLOT(AT_POSTOP, T, f, f)
#define DIRWCC(T) SLOT(AT_WCC, T, dir_wcc, dir_wcc)

static void learn_setattr(struct req *r, struct fwd *w, void *res);
static void learn_access(struct req *r, struct fwd *w, void *res);
static void learn_write(struct req *r, struct fwd *w, void *res);
static void present_getattr(struct req *r, struct fwd *w, void *res);
static void present_commit(struct req *r, struct fwd *w, void *res);
static void present_lookup(struct req *r, struct fwd *w, void *res);
static void present_dirplus(struct req *r, struct fwd *w, void *res);

static const struct nfs3_proc procs[UPSTREAM_NPROCS] = {
	[NFSPROC3_GETATTR] = { .nfh = A1(GETATTR3args, object),
		.attr = { { AT_FATTR, RESOK(GETATTR3res, obj_attributes), 0 } },
		.present = present_getattr },
	[NFSPROC3_SETATTR] = { .nfh = A1(SETATTR3args, object),
		.mutates_first = true,
		.attr = { SLOT(AT_WCC, SETATTR3res, obj_wcc, obj_wcc) },
		.present_at = BOTH(SETATTR3res, obj_wcc.after),
		.learn = learn_setattr },
	[NFSPROC3_LOOKUP] = { .nfh = A1(LOOKUP3args, what.dir),
		.nname = A1(LOOKUP3args, what.name),
		.res = RES_FH, .res_off = RESOK(LOOKUP3res, object),
		.child_attr = RESOK(LOOKUP3res, obj_attributes),
		.child_first = true,
		.attr = { ATTRS(LOOKUP3res, dir_attributes) },
		.present = present_lookup },
	[NFSPROC3_ACCESS] = { .nfh = A1(ACCESS3args, object),
		.attr = { ATTRS(ACCESS3res, obj_attributes) },
		.present_at = BOTH(ACCESS3res, obj_attributes),
		.learn = learn_access },
	[NFSPROC3_READLINK] = { .nfh = A1(READLINK3args, symlink),
		.attr = { ATTRS(READLINK3res, symlink_attributes) } },
	[NFSPROC3_READ] = { .nfh = A1(READ3args, file) },
	[NFSPROC3_WRITE] = { .nfh = A1(WRITE3args, file),
		.mutates_first = true,
		.attr = { SLOT(AT_WCC, WRITE3res, file_wcc, file_wcc) },
		.learn = learn_write },
	[NFSPROC3_CREATE] = { .nfh = A1(CREATE3args, where.dir),
		.nname = A1(CREATE3args, where.name), .mutates_first = true,
		.res = CHILD(CREATE3res), .attr = { DIRWCC(CREATE3res) } },
	[NFSPROC3_MKDIR] = { .nfh = A1(MKDIR3args, where.dir),
		.nname = A1(MKDIR3args, where.name), .mutates_first = true,
		.res = CHILD(MKDIR3res), .attr = { DIRWCC(MKDIR3res) } },
	[NFSPROC3_SYMLINK] = { .nfh = A1(SYMLINK3args, where.dir),
		.nname = A1(SYMLINK3args, where.name), .mutates_first = true,
		.res = CHILD(SYMLINK3res), .attr = { DIRWCC(SYMLINK3res) } },
	[NFSPROC3_MKNOD] = { .nfh = A1(MKNOD3args, where.dir),
		.nname = A1(MKNOD3args, where.name), .mutates_first = true,
		.res = CHILD(MKNOD3res), .attr = { DIRWCC(MKNOD3res) } },
	[NFSPROC3_REMOVE] = { .nfh = A1(REMOVE3args, object.dir),
		.nname = A1(REMOVE3args, object.name), .mutates_first = true,
		.attr = { DIRWCC(REMOVE3res) } },
	[NFSPROC3_RMDIR] = { .nfh = A1(RMDIR3args, object.dir),
		.nname = A1(RMDIR3args, object.name), .mutates_first = true,
		.attr = { DIRWCC(RMDIR3res) } },
	[NFSPROC3_RENAME] = { .nfh = A2(RENAME3args, from.dir, to.dir),
		.nname = A2(RENAME3args, from.name, to.name),
		.mutates_first = true,
		.attr = { SLOT(AT_WCC, RENAME3res, fromdir_wcc, fromdir_wcc),
			  SLOT(AT_WCC, RENAME3res, todir_wcc, todir_wcc) } },
	[NFSPROC3_LINK] = { .nfh = A2(LINK3args, file, link.dir),
		.nname = A1(LINK3args, link.name), .mutates_first = true,
		.attr = { SLOT(AT_POSTOP_WCC, LINK3res, file_attributes,
			       file_attributes),
			  SLOT(AT_WCC, LINK3res, linkdir_wcc, linkdir_wcc) } },
	[NFSPROC3_READDIR] = { .nfh = A1(READDIR3args, dir),
		.attr = { ATTRS(READDIR3res, dir_attributes) } },
	[NFSPROC3_READDIRPLUS] = { .nfh = A1(READDIRPLUS3args, dir),
		.res = RES_DIRPLUS,
		.attr = { ATTRS(READDIRPLUS3res, dir_attributes) },
		.present = present_dirplus },
	[NFSPROC3_FSSTAT] = { .nfh = A1(FSSTAT3args, fsroot),
		.attr = { ATTRS(FSSTAT3res, obj_attributes) } },
	[NFSPROC3_FSINFO] = { .nfh = A1(FSINFO3args, fsroot),
		.attr = { ATTRS(FSINFO3res, obj_attributes) } },
	[NFSPROC3_PATHCONF] = { .nfh = A1(PATHCONF3args, object),
		.attr = { ATTRS(PATHCONF3res, obj_attributes) } },
	[NFSPROC3_COMMIT] = { .nfh = A1(COMMIT3args, file),
		.attr = { ATTRS(COMMIT3res, file_wcc.after) },
		.present_at = BOTH(COMMIT3res, file_wcc.after),
		.present = present_commit },
};

/*
 * The longest name and symlink target passed upstream, bytes: Linux's
 * NAME_MAX and PATH_MAX less its NUL, which every POSIX upstream enforces
 * (NFS3ERR_NAMETOOLONG). Past them libnfs cannot even encode some calls,
 * so they are answered here.
 */
#define NFS3_NAME_MAX 255
#define NFS3_PATH_MAX 4095

static struct nfs3_ops_stats stats;

/* The nfs_fh3 at offset off inside obj. */
static nfs_fh3 *fh_at(void *obj, size_t off)
{
	return (nfs_fh3 *)((char *)obj + off);
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

/* Unwrap the argument handles in place; set *ex. 0 or an nfsstat3. */
static nfsstat3 unwrap_args(struct req *r, struct export_rt **ex)
{
	const struct nfs3_proc *m = &procs[r->call.proc];
	unsigned first_id = 0;

	for (unsigned i = 0; i < m->nfh; i++) {
		nfs_fh3 *fh = fh_at(r->args, m->fh[i]);
		const uint8_t *up;
		size_t up_len;
		unsigned id;

		if (fh_unwrap(r->d->fh_key, (const uint8_t *)fh->data.data_val,
			      fh->data.data_len, &id, &up, &up_len) != FH_OK) {
			stats.badhandle++;
			return NFS3ERR_BADHANDLE;
		}
		if (up_len > FH_UP_FULLAUTH && !fh_long_ok(r->d, id)) {
			stats.badhandle++;
			return NFS3ERR_BADHANDLE;
		}
		if (i == 0)
			first_id = id;
		else if (id != first_id)
			return NFS3ERR_XDEV;
		memmove(fh->data.data_val, up, up_len);
		fh->data.data_len = (u_int)up_len;
	}
	*ex = daemon_export(r->d, first_id);
	if (!*ex) {
		stats.stale++;
		return NFS3ERR_STALE;
	}
	return NFS3_OK;
}

/* Check the export's client rules for this caller. */
static nfsstat3 check_client(struct req *r, const struct conf_export *e)
{
	if (!conf_client_allowed(e, req_peer(r)))
		return NFS3ERR_ACCES;
	if (e->secure && !req_peer_privileged(r))
		return NFS3ERR_PERM;
	return NFS3_OK;
}

/*
 * Refuse a call whose file name (filename3, RFC 1813 s2.6) holds a '/': a
 * name is one path component. Forwarding a '/' would hand the upstream a
 * path, and NFS-Ganesha 4.3's FSAL_VFS resolves one: a CREATE of "../../x"
 * in the export's root makes x two directories above the export. Linux's
 * knfsd refuses such a name with NFS3ERR_ACCES (the -EACCES of
 * lookup_one_len), and so does the proxy, without asking upstream. A name
 * over NFS3_NAME_MAX bytes, or a SYMLINK target over NFS3_PATH_MAX, is
 * NFS3ERR_NAMETOOLONG, as the upstream would answer. Other odd names
 * (empty, ".", "..") stay the upstream's to judge: they cannot leave the
 * directory.
 */
static nfsstat3 check_names(const struct req *r)
{
	uint32_t proc = r->call.proc;

	if (proc >= UPSTREAM_NPROCS)
		return NFS3_OK;
	for (unsigned i = 0; i < procs[proc].nname; i++) {
		const char *name = *(char *const *)((const char *)r->args +
						     procs[proc].name[i]);

		if (!name || strchr(name, '/')) {
			stats.bad_names++;
			return NFS3ERR_ACCES;
		}
		if (strlen(name) > NFS3_NAME_MAX)
			return NFS3ERR_NAMETOOLONG;
	}
	if (proc == NFSPROC3_SYMLINK) {
		const SYMLINK3args *sa = r->args;
		const char *t = sa->symlink.symlink_data;

		if (t && strlen(t) > NFS3_PATH_MAX)
			return NFS3ERR_NAMETOOLONG;
	}
	return NFS3_OK;
}

/* Map the caller's credential for upstream, squashing root if asked. */
static void cred_map(const struct req *r, const struct conf_export *e,
		     struct upstream_cred *uc)
{
	const struct rpcmsg_cred *c = &r->call.cred;

	memset(uc, 0, sizeof(*uc));
	uc->machine = c->machine[0] ? c->machine : "nfscached";
	if (c->flavor != AUTH_SYS) {
		uc->uid = e->anonuid;
		uc->gid = e->anongid;
		return;
	}
	uc->uid = c->uid;
	uc->gid = c->gid;
	uc->ngids = c->ngids;
	memcpy(uc->gids, c->gids, c->ngids * sizeof(c->gids[0]));
	if (!e->root_squash)
		return;
	if (uc->uid == 0)
		uc->uid = e->anonuid;
	if (uc->gid == 0)
		uc->gid = e->anongid;
	for (uint32_t i = 0; i < uc->ngids; i++)
		if (uc->gids[i] == 0)
			uc->gids[i] = e->anongid;
}

/* Lower a count to max. */
static void clamp(count3 *c, uint32_t max)
{
	if (max && *c > max)
		*c = max;
}

/* Clamp transfer counts in the arguments to the upstream's rtmax. */
static void clamp_args(struct req *r, const struct export_rt *ex)
{
	uint32_t rtmax = upcall_rtmax(&ex->upc);

	switch (r->call.proc) {
	case NFSPROC3_READ:
		clamp(&((READ3args *)r->args)->count, rtmax);
		break;
	case NFSPROC3_READDIR:
		clamp(&((READDIR3args *)r->args)->count, rtmax);
		break;
	case NFSPROC3_READDIRPLUS:
		clamp(&((READDIRPLUS3args *)r->args)->dircount, rtmax);
		clamp(&((READDIRPLUS3args *)r->args)->maxcount, rtmax);
		break;
	default:
		break;
	}
}

/* Replace an upstream handle by its client handle. 0, or -1 if too long. */
static int fh_rewrap(struct daemon *d, struct export_rt *ex, nfs_fh3 *fh)
{
	uint8_t out[FH_SIZE_MAX];
	size_t n;
	char *buf;

	if (fh_wrap(d->fh_key, ex->conf->id, (const uint8_t *)fh->data.data_val,
		    fh->data.data_len, out, &n) != FH_OK) {
		if (!ex->warned_fh_len)
			log_error("export %s: upstream handle of %u bytes is over %d; it cannot be served",
				  ex->conf->path, fh->data.data_len, FH_UP_MAX);
		ex->warned_fh_len = true;
		return -1;
	}
	if (fh->data.data_len > FH_UP_FULLAUTH)
		ex->long_handles = true;
	if (fh->data.data_len > FH_UP_FULLAUTH && !ex->warned_fh_len) {
		log_warn("export %s: upstream handles of %u bytes get a %zu-byte authenticator",
			 ex->conf->path, fh->data.data_len,
			 fh_auth_len(fh->data.data_len));
		ex->warned_fh_len = true;
	}
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

/* Wrap the handles in a successful result. 0, or an nfsstat3. */
static nfsstat3 rewrap_res(struct req *r, struct export_rt *ex, void *res)
{
	const struct nfs3_proc *m = &procs[r->call.proc];
	entryplus3 *e;

	if (*(nfsstat3 *)res != NFS3_OK)
		return NFS3_OK;
	switch (m->res) {
	case RES_FH:
		if (fh_rewrap(r->d, ex, fh_at(res, m->res_off)) != 0)
			return NFS3ERR_SERVERFAULT;
		break;
	case RES_POSTOP_FH:
		postop_rewrap(r->d, ex, (post_op_fh3 *)((char *)res + m->res_off));
		break;
	case RES_DIRPLUS:
		e = ((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok.reply.entries;
		for (; e; e = e->nextentry)
			postop_rewrap(r->d, ex, &e->name_handle);
		break;
	case RES_NONE:
		break;
	}
	return NFS3_OK;
}

/* Never advertise more than the upstream link or our records can carry. */
static void clamp_fsinfo(struct req *r, const struct export_rt *ex,
			 FSINFO3res *res)
{
	FSINFO3resok *ok = &res->FSINFO3res_u.resok;
	uint32_t rmax = upcall_rtmax(&ex->upc);
	uint32_t wmax = upcall_wtmax(&ex->upc);
	uint32_t rec = r->d->conf->max_record_size;
	uint32_t rec_w = rec > 8192 ? (rec - 4096) & ~4095u : 4096;

	if (res->status != NFS3_OK)
		return;
	if (rec_w < wmax || !wmax)
		wmax = rec_w;
	clamp(&ok->rtmax, rmax);
	clamp(&ok->rtpref, ok->rtmax);
	clamp(&ok->wtmax, wmax);
	clamp(&ok->wtpref, ok->wtmax);
	clamp(&ok->dtpref, ok->rtmax);
}

nfsstat3 nfs3_prepare(struct req *r, struct export_rt **ex,
		      struct upstream_cred *uc)
{
	nfsstat3 st;

	*ex = NULL;
	if ((st = unwrap_args(r, ex)) != NFS3_OK ||
	    (st = check_client(r, (*ex)->conf)) != NFS3_OK ||
	    (st = check_names(r)) != NFS3_OK)
		return st;
	clamp_args(r, *ex);
	cred_map(r, (*ex)->conf, uc);
	return NFS3_OK;
}

int nfs3_send(struct export_rt *ex, uint32_t proc, xdrproc_t xargs,
	      const void *args, const struct upstream_cred *uc,
	      upcall_cb cb, void *arg)
{
	return ex->upc.ops->call(ex->upc.impl, proc, xargs, args, uc, cb, arg);
}

void nfs3_count_read(enum cache_outcome o, uint64_t cache_bytes,
		     uint64_t upstream_bytes, uint64_t hole_bytes)
{
	stats.reads[o]++;
	stats.read_bytes_cache += cache_bytes;
	stats.read_bytes_upstream += upstream_bytes;
	stats.read_bytes_hole += hole_bytes;
	/* A bypassed READ's bytes came straight from its own upstream READ;
	 * every other outcome's came through a fetch, counted there. */
	if (o == CACHE_BYPASS)
		stats.upstream_read_bytes += upstream_bytes;
}

void nfs3_count_fetch(uint64_t bytes)
{
	stats.fetches++;
	stats.fetch_bytes += bytes;
	stats.upstream_read_bytes += bytes;
}

void nfs3_count_access_check(void)
{
	stats.access_checks++;
}

void nfs3_count_protocol_error(void)
{
	stats.protocol_errors++;
}

/*
 * A forwarded call: the export, the identity, and the cached files whose
 * attributes its reply will tell about (the object of the first handle,
 * and RENAME's target directory or LINK's directory), with the generation
 * each had when the call was sent.
 */
struct fwd {
	struct export_rt *ex;
	struct upstream_cred uc;
	struct cfile *f;
	struct cfile *f2;
	uint64_t gen;
	uint64_t gen2;
	bool held;		/* holds write-back of f (truncating SETATTR) */
	struct cfile *victim;	/* REMOVE: the last link's dirty file;
				 * CREATE UNCHECKED with a size: the
				 * existing file it truncates */
	bool victim_held;	/* holds the victim's write-back */
	bool written;		/* the file's dirty data was written back
				 * before this call (fwd_written) */
	bool stale;		/* answered from remembered state */
	bool other;		/* the last wcc_data learned showed another
				 * writer (learn_slot, for learn hooks) */
};

/* The upstream handle in an nfs_fh3 (already unwrapped). */
static struct cfile *fh_file(struct daemon *d, const nfs_fh3 *fh)
{
	return cache_get(d->cache, (const uint8_t *)fh->data.data_val,
			 fh->data.data_len);
}

/* Find the cached files a call is about and open their mutation brackets. */
static void fwd_begin(struct req *r, struct fwd *w)
{
	const struct nfs3_proc *m = &procs[r->call.proc];

	w->f = fh_file(r->d, fh_at(r->args, m->fh[0]));
	if (m->nfh > 1) {
		w->f2 = fh_file(r->d, fh_at(r->args, m->fh[1]));
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
static void observe(struct req *r, struct fwd *w, struct cfile *f,
		    uint64_t gen, const post_op_attr *p)
{
	struct cattr tmp;
	const struct cattr *a;

	if (!f || cfile_gen(f) != gen || !(a = attr_from_post_op(p, &tmp)))
		return;
	cfile_attr_observe(r->d->cache, f, a, daemon_now(),
			   daemon_ac(w->ex, a->type));
}

/* Close the mutation bracket of f with wcc (NULL: the call failed).
 * True when the reply showed another writer (cached data dropped). */
static bool mutated(struct req *r, struct fwd *w, struct cfile *f,
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
static void observe_child(struct req *r, struct fwd *w, const nfs_fh3 *fh,
			  const post_op_attr *p)
{
	struct cfile *c = fh_file(r->d, fh);

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
static void present_getattr(struct req *r, struct fwd *w, void *res)
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
static void present_commit(struct req *r, struct fwd *w, void *res)
{
	(void)w;
	if (*(nfsstat3 *)res == NFS3_OK)
		memcpy(((COMMIT3res *)res)->COMMIT3res_u.resok.verf,
		       writeback_verf(r->d), NFS3_WRITEVERFSIZE);
}

/* LOOKUP: the child as the proxy sees it. */
static void present_lookup(struct req *r, struct fwd *w, void *res)
{
	LOOKUP3resok *ok = &((LOOKUP3res *)res)->LOOKUP3res_u.resok;

	(void)w;
	if (*(nfsstat3 *)res == NFS3_OK)
		present_child(r->d, &ok->object, &ok->obj_attributes);
}

/* READDIRPLUS: each entry as the proxy sees it. */
static void present_dirplus(struct req *r, struct fwd *w, void *res)
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

/* Show the proxy's view of local files in a reply (see present). */
static void fwd_present(struct req *r, struct fwd *w, void *res)
{
	const struct nfs3_proc *m = &procs[r->call.proc];
	size_t at = m->present_at[*(nfsstat3 *)res == NFS3_OK ? 0 : 1];

	if (m->present)
		m->present(r, w, res);
	if (at)
		present(w->f, (post_op_attr *)((char *)res + at));
}

/* SETATTR: a new size truncates (or extends with zeros) the cache. */
static void learn_setattr(struct req *r, struct fwd *w, void *res)
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
static void learn_access(struct req *r, struct fwd *w, void *res)
{
	ACCESS3res *x = res;
	ACCESS3args *a = r->args;
	struct ccred cc;

	if (x->status == NFS3_OK && w->f && cfile_gen(w->f) == w->gen) {
		attr_cred(&w->uc, &cc);
		cfile_access_record(w->f, &cc, a->access,
				    x->ACCESS3res_u.resok.access);
	}
}

/* WRITE (passed through): the written bytes enter the cache. */
static void learn_write(struct req *r, struct fwd *w, void *res)
{
	WRITE3res *x = res;
	WRITE3args *a = r->args;
	struct ccred cc;

	attr_cred(&w->uc, &cc);
	if (x->status == NFS3_OK && w->f)
		cache_write(r->d->cache, w->f, a->offset,
			    (const uint8_t *)a->data.data_val,
			    x->WRITE3res_u.resok.count < a->data.data_len
				    ? x->WRITE3res_u.resok.count
				    : a->data.data_len, &cc);
}

/* Apply attribute slot i of a reply to the call's file i. */
static void learn_slot(struct req *r, struct fwd *w, unsigned i, void *res)
{
	const struct attr_slot *s = &procs[r->call.proc].attr[i];
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
static void learn_child(struct req *r, struct fwd *w, void *res)
{
	const struct nfs3_proc *m = &procs[r->call.proc];
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

/* Feed an upstream reply's attributes and data into the cache: the
 * procedure's row says where they are and which hook learns more. */
static void fwd_learn(struct req *r, struct fwd *w, void *res)
{
	const struct nfs3_proc *m = &procs[r->call.proc];

	if (m->child_first)
		learn_child(r, w, res);
	for (unsigned i = 0; i < 2; i++)
		learn_slot(r, w, i, res);
	if (!m->child_first)
		learn_child(r, w, res);
	if (m->learn)
		m->learn(r, w, res);
	/* Names and listings: the metadata cache learns (nfs3_meta.c). */
	nfs3_meta_learn(r, w->ex, &w->uc, w->f, w->gen, res);
}

/* Close what fwd_begin opened when no usable reply came. */
static void fwd_failed(struct req *r, struct fwd *w)
{
	if (w->f && procs[r->call.proc].mutates_first)
		mutated(r, w, w->f, NULL);
	if (w->f2)
		mutated(r, w, w->f2, NULL);
}

/* Release a forwarded call's state. */
static void fwd_free(struct daemon *d, struct fwd *w)
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
static void create_adopt_size(struct req *r, struct fwd *w, CREATE3res *x)
{
	CREATE3args *ca = r->args;
	const post_op_attr *p = &x->CREATE3res_u.resok.obj_attributes;
	uint64_t size;

	if (!w->written) {
		cfile_truncate(r->d->cache, w->victim, ca->how.createhow3_u
			       .obj_attributes.size.set_size3_u.size);
		return;
	}
	if (!p->attributes_follow) {
		cfile_attr_expire(w->victim);
		return;
	}
	size = p->post_op_attr_u.attributes.size;
	if (cfile_has_attr(w->victim) && size < cfile_attr(w->victim)->size)
		cfile_truncate(r->d->cache, w->victim, size);
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
static bool fwd_stale(struct req *r, struct fwd *w, enum upstream_status st)
{
	const nfs_fh3 *fh = r->args;	/* every such call's first member */
	struct cache *c = r->d->cache;
	const uint8_t *res;
	struct cfile *f;
	size_t len;

	if (r->call.proc == NFSPROC3_GETATTR) {
		f = cache_find(c, (const uint8_t *)fh->data.data_val,
			       fh->data.data_len);
		if (!stale_attrs_usable(r->d, f, st)) {
			cfile_put(c, &f);
			return false;
		}
		stale_count(r->call.proc);
		fwd_free(r->d, w);
		stale_getattr(r, f);	/* r is gone after the reply */
		cfile_put(c, &f);
		return true;
	}
	if (r->call.proc != NFSPROC3_FSINFO && r->call.proc != NFSPROC3_FSSTAT &&
	    r->call.proc != NFSPROC3_PATHCONF)
		return false;
	res = stale_recall(r->d, w->ex, r->call.proc,
			   (const uint8_t *)fh->data.data_val, fh->data.data_len,
			   st, &len);
	if (!res)
		return false;
	stale_count(r->call.proc);
	w->stale = true;
	upcall_deliver(r->call.proc, UPSTREAM_OK, res, len, forward_done, r);
	return true;
}

/* Remember a successful FSINFO, FSSTAT or PATHCONF result res (as the
 * upstream sent it: before rewrap_res and clamp_fsinfo) for outages. */
static void fwd_remember(struct req *r, struct fwd *w, const void *res)
{
	const nfs_fh3 *fh = r->args;
	uint8_t *bytes;
	size_t len;

	if (r->d->conf->stale_on_error <= 0 ||
	    (r->call.proc != NFSPROC3_FSINFO &&
	     r->call.proc != NFSPROC3_FSSTAT &&
	     r->call.proc != NFSPROC3_PATHCONF) ||
	    *(const nfsstat3 *)res != NFS3_OK ||
	    !(bytes = rpcmsg_encode(r->ent->xdr_res, res, &len)))
		return;
	stale_remember(r->d, w->ex, r->call.proc,
		       (const uint8_t *)fh->data.data_val, fh->data.data_len,
		       bytes, len);
	free(bytes);
}

static void forward_done(enum upstream_status status, void *decoded,
			 void *arg)
{
	struct req *r = arg;
	struct fwd *w = r->op;
	struct daemon *d = r->d;
	const struct dispatch_entry *ent = r->ent;
	void *res = NULL;
	nfsstat3 err;

	if (status != UPSTREAM_OK && fwd_stale(r, w, status))
		return;
	if (status == UPSTREAM_OK && decoded && !w->stale)
		fwd_remember(r, w, decoded);
	if (status != UPSTREAM_OK || !(res = decoded)) {
		if (status == UPSTREAM_OK)
			log_warn("upstream %s reply does not decode", r->ent->name);
		fwd_failed(r, w);
		fwd_free(d, w);
		nfs3_reply_status(r, nfs3_upstream_failure(status));
		return;
	}
	fwd_learn(r, w, res);
	fwd_present(r, w, res);
	if (r->call.proc == NFSPROC3_REMOVE && *(nfsstat3 *)res == NFS3_OK &&
	    w->victim) {
		log_debug("REMOVE of the last link: dropping its unwritten data");
		cfile_discard_dirty(d->cache, w->victim);
		fstate_release(d, w->victim);
	}
	if (r->call.proc == NFSPROC3_CREATE && *(nfsstat3 *)res == NFS3_OK &&
	    w->victim)
		create_adopt_size(r, w, res);
	err = rewrap_res(r, w->ex, res);
	if (r->call.proc == NFSPROC3_FSINFO)
		clamp_fsinfo(r, w->ex, res);
	fwd_free(d, w);
	if (err != NFS3_OK)
		nfs3_reply_status(r, err);
	else
		req_reply(r, ent->xdr_res, res);
}

enum op_status nfs3_op_null(struct req *r)
{
	return req_reply(r, (xdrproc_t)dispatch_xdr_void, NULL);
}

/*
 * The status for a forwarded call nfs3_send could not send. While the
 * upstream is not up: NFS3ERR_JUKEBOX, the client retries. Otherwise the
 * call could not be encoded: libnfs 4.0 builds every call but WRITE in
 * about 4 KiB, which only a long name or symlink target overflows, so
 * NFS3ERR_NAMETOOLONG for the procedures that carry one and
 * NFS3ERR_SERVERFAULT for the rest; a retry could never succeed.
 */
static nfsstat3 send_failure(const struct export_rt *ex, uint32_t proc)
{
	if (upcall_state(&ex->upc) != UPSTREAM_UP)
		return NFS3ERR_JUKEBOX;
	if (proc < UPSTREAM_NPROCS && procs[proc].nname > 0)
		return NFS3ERR_NAMETOOLONG;
	return NFS3ERR_SERVERFAULT;
}

/* Send a prepared forwarded call upstream (or reply send_failure). */
static enum op_status fwd_send(struct req *r)
{
	struct fwd *w = r->op;

	if (nfs3_send(w->ex, r->call.proc, r->ent->xdr_args, r->args, &w->uc,
		      forward_done, r) != 0) {
		nfsstat3 st = send_failure(w->ex, r->call.proc);

		if (fwd_stale(r, w, stale_refused(w->ex)))
			return OP_PENDING;

		fwd_failed(r, w);
		fwd_free(r->d, w);
		return nfs3_reply_status(r, st);
	}
	return OP_PENDING;
}

/* A truncating SETATTR's file has no write-back in flight any more. */
static void fwd_idle(struct daemon *d, nfsstat3 st, void *arg)
{
	struct req *r = arg;
	struct fwd *w = r->op;

	(void)d;
	if (st != NFS3_OK) {
		fwd_failed(r, w);
		fwd_free(r->d, w);
		nfs3_reply_status(r, st);
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
	struct fwd *w = r->op;
	struct cfile *f = r->call.proc == NFSPROC3_CREATE ? w->victim : w->f;

	(void)d;
	if (st == NFS3ERR_JUKEBOX) {
		fwd_failed(r, w);
		fwd_free(r->d, w);
		nfs3_reply_status(r, st);
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

/* Whether f has write-back state or WRITEs in flight. */
static bool wb_busy(struct cfile *f)
{
	struct fstate *fs = fstate_find(f);

	return cfile_wb_bytes(f, WB_DIRTY) || cfile_wb_bytes(f, WB_WRITING) ||
	       cfile_wb_bytes(f, WB_UNSTABLE) ||
	       (fs && (fs->wb_inflight || fs->commit_tag));
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
	struct fwd *w = r->op;
	LOOKUP3res *res = NULL;
	post_op_attr *pa;
	struct fstate *fs;

	if (status == UPSTREAM_OK)
		res = decoded;
	if (res && res->status == NFS3_OK) {
		pa = &res->LOOKUP3res_u.resok.obj_attributes;
		w->victim = fh_file(r->d, &res->LOOKUP3res_u.resok.object);
		if (w->victim && (!wb_busy(w->victim) ||
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
static bool setattr_revokes(struct req *r, struct fwd *w)
{
	SETATTR3args *a = r->args;

	return r->call.proc == NFSPROC3_SETATTR && w->f && !w->written &&
	       (a->new_attributes.mode.set_it || a->new_attributes.uid.set_it ||
		a->new_attributes.gid.set_it) && wb_busy(w->f);
}

/* Whether a SETATTR changes the size of a file with write-back state. */
static bool setattr_needs_idle(struct req *r, struct fwd *w)
{
	SETATTR3args *a = r->args;
	struct fstate *fs;

	return r->call.proc == NFSPROC3_SETATTR && w->f &&
	       a->new_attributes.size.set_it && (fs = fstate_find(w->f)) &&
	       (fs->wb_inflight || fs->commit_tag ||
		cfile_wb_bytes(w->f, WB_DIRTY) ||
		cfile_wb_bytes(w->f, WB_UNSTABLE));
}

enum op_status nfs3_op_forward(struct req *r)
{
	struct export_rt *ex;
	struct upstream_cred uc;
	nfsstat3 st;

	if ((st = nfs3_prepare(r, &ex, &uc)) != NFS3_OK)
		return nfs3_reply_status(r, st);
	return nfs3_forward_prepared(r, ex, &uc);
}

enum op_status nfs3_forward_prepared(struct req *r, struct export_rt *ex,
				     const struct upstream_cred *uc)
{
	struct fwd *w = calloc(1, sizeof(*w));

	if (!w)
		return nfs3_reply_status(r, NFS3ERR_SERVERFAULT);
	w->ex = ex;
	w->uc = *uc;
	fwd_begin(r, w);
	r->op = w;
	return fwd_start(r);
}

/* Wait for what the call needs written back or idle, then send it. */
static enum op_status fwd_start(struct req *r)
{
	struct fwd *w = r->op;

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

void nfs3_ops_stats_get(struct nfs3_ops_stats *st)
{
	*st = stats;
}
