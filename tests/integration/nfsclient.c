/* SPDX-License-Identifier: MIT */
/*
 * nfsclient: synchronous raw NFSv3 calls for the integration tests.
 *
 * A client owns one libnfs context (mounted with nfs_mount(), so MOUNT and
 * the root handle come from whatever server the URL names) and drives its
 * RPC context with poll()/rpc_service() until a call's callback fires.
 *
 * Each call owns a heap "pending" record that the libnfs callback fills.
 * libnfs frees its decoded reply when the callback returns, so the
 * callback deep-copies it (pointers to handles, names, data) into the
 * caller's result struct. If the caller gave up (timeout), the record is
 * marked orphan and the callback, whenever it comes (reply or cancel at
 * context destruction), frees the record and touches nothing else.
 *
 * CHECK_STAT at the end names NFSv3 statuses in a tcheck() message.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <CUnit/CUnit.h>
#include "nfsclient.h"

/*
 * libnfs 4.0 exports nfs_get_rootfh() without declaring it; its result is
 * the library's private { int len; char *val; } handle.
 */
struct nfs_fh {
	int len;
	char *val;
};
const struct nfs_fh *nfs_get_rootfh(struct nfs_context *nfs);

struct nfsc {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	char *url;
	uint32_t uid;
	uint32_t gid;
	int broken;
	int fail_fast;
	nfs_fh3 root;
	char err[512];
};

struct pending {
	int done;
	int orphan;
	int rpc_status;
	int proc;
	void *res;
	char err[256];
};

typedef int (*send_fn)(struct rpc_context *rpc, rpc_cb cb, void *args,
		       void *priv);

struct proc_desc {
	const char *name;
	size_t res_size;
	send_fn send;
	void (*dup)(void *res);		/* own the borrowed pointers */
	void (*release)(void *res);	/* free what dup allocated */
};

/* Allocate or abort: a test client has no way to go on without memory. */
static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "nfsclient: out of memory\n");
		abort();
	}
	return p;
}

/* Duplicate len bytes (len may be 0; the result is never NULL). */
static char *xmemdup(const char *src, size_t len)
{
	char *p = xmalloc(len + 1);

	if (len)
		memcpy(p, src, len);
	p[len] = '\0';
	return p;
}

uint64_t nfsc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void nfsc_fh_copy(nfs_fh3 *dst, const nfs_fh3 *src)
{
	dst->data.data_len = src->data.data_len;
	dst->data.data_val = xmemdup(src->data.data_val, src->data.data_len);
}

void nfsc_fh_free(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

int nfsc_fh_equal(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val,
		      a->data.data_len) == 0;
}

/* Replace a borrowed handle by an owned copy in place. */
static void fh_own(nfs_fh3 *fh)
{
	nfs_fh3 tmp = *fh;

	nfsc_fh_copy(fh, &tmp);
}

/* Replace a borrowed post_op_fh3 handle by an owned copy in place. */
static void pfh_own(post_op_fh3 *p)
{
	if (p->handle_follows)
		fh_own(&p->post_op_fh3_u.handle);
}

/* Free a post_op_fh3 handle made by pfh_own(). */
static void pfh_release(post_op_fh3 *p)
{
	if (p->handle_follows)
		nfsc_fh_free(&p->post_op_fh3_u.handle);
}

/* Own the LOOKUP reply's handle. */
static void dup_lookup(void *res)
{
	LOOKUP3res *r = res;

	if (r->status == NFS3_OK)
		fh_own(&r->LOOKUP3res_u.resok.object);
}

/* Free the LOOKUP reply's handle. */
static void release_lookup(void *res)
{
	LOOKUP3res *r = res;

	if (r->status == NFS3_OK)
		nfsc_fh_free(&r->LOOKUP3res_u.resok.object);
}

/* Own the READ reply's data. */
static void dup_read(void *res)
{
	READ3res *r = res;

	if (r->status == NFS3_OK)
		r->READ3res_u.resok.data.data_val = xmemdup(
			r->READ3res_u.resok.data.data_val,
			r->READ3res_u.resok.data.data_len);
}

/* Free the READ reply's data. */
static void release_read(void *res)
{
	READ3res *r = res;

	if (r->status == NFS3_OK)
		free(r->READ3res_u.resok.data.data_val);
}

/* Own the READLINK reply's path. */
static void dup_readlink(void *res)
{
	READLINK3res *r = res;
	const char *s = r->READLINK3res_u.resok.data;

	if (r->status == NFS3_OK)
		r->READLINK3res_u.resok.data = xmemdup(s ? s : "",
						       s ? strlen(s) : 0);
}

/* Free the READLINK reply's path. */
static void release_readlink(void *res)
{
	READLINK3res *r = res;

	if (r->status == NFS3_OK)
		free(r->READLINK3res_u.resok.data);
}

/* Own the handle of a CREATE reply. */
static void dup_create(void *res)
{
	CREATE3res *r = res;

	if (r->status == NFS3_OK)
		pfh_own(&r->CREATE3res_u.resok.obj);
}

/* Free the handle of a CREATE reply. */
static void release_create(void *res)
{
	CREATE3res *r = res;

	if (r->status == NFS3_OK)
		pfh_release(&r->CREATE3res_u.resok.obj);
}

/* Own the handle of a MKDIR reply. */
static void dup_mkdir(void *res)
{
	MKDIR3res *r = res;

	if (r->status == NFS3_OK)
		pfh_own(&r->MKDIR3res_u.resok.obj);
}

/* Free the handle of a MKDIR reply. */
static void release_mkdir(void *res)
{
	MKDIR3res *r = res;

	if (r->status == NFS3_OK)
		pfh_release(&r->MKDIR3res_u.resok.obj);
}

/* Own the handle of a SYMLINK reply. */
static void dup_symlink(void *res)
{
	SYMLINK3res *r = res;

	if (r->status == NFS3_OK)
		pfh_own(&r->SYMLINK3res_u.resok.obj);
}

/* Free the handle of a SYMLINK reply. */
static void release_symlink(void *res)
{
	SYMLINK3res *r = res;

	if (r->status == NFS3_OK)
		pfh_release(&r->SYMLINK3res_u.resok.obj);
}

/* Own the handle of a MKNOD reply. */
static void dup_mknod(void *res)
{
	MKNOD3res *r = res;

	if (r->status == NFS3_OK)
		pfh_own(&r->MKNOD3res_u.resok.obj);
}

/* Free the handle of a MKNOD reply. */
static void release_mknod(void *res)
{
	MKNOD3res *r = res;

	if (r->status == NFS3_OK)
		pfh_release(&r->MKNOD3res_u.resok.obj);
}

/* Own the READDIR reply's entry list and names. */
static void dup_readdir(void *res)
{
	READDIR3res *r = res;
	entry3 **link;

	if (r->status != NFS3_OK)
		return;
	for (link = &r->READDIR3res_u.resok.reply.entries; *link;
	     link = &(*link)->nextentry) {
		entry3 *e = xmalloc(sizeof(*e));

		/* libnfs 4.0 may place entries at 4-byte alignment. */
		memcpy(e, *link, sizeof(*e));
		e->name = xmemdup(e->name, strlen(e->name));
		*link = e;
	}
}

/* Free the READDIR entry list. */
static void release_readdir(void *res)
{
	READDIR3res *r = res;
	entry3 *e, *next;

	if (r->status != NFS3_OK)
		return;
	for (e = r->READDIR3res_u.resok.reply.entries; e; e = next) {
		next = e->nextentry;
		free(e->name);
		free(e);
	}
}

/* Own the READDIRPLUS reply's entry list, names and handles. */
static void dup_readdirplus(void *res)
{
	READDIRPLUS3res *r = res;
	entryplus3 **link;

	if (r->status != NFS3_OK)
		return;
	for (link = &r->READDIRPLUS3res_u.resok.reply.entries; *link;
	     link = &(*link)->nextentry) {
		entryplus3 *e = xmalloc(sizeof(*e));

		memcpy(e, *link, sizeof(*e));	/* may be misaligned */
		e->name = xmemdup(e->name, strlen(e->name));
		pfh_own(&e->name_handle);
		*link = e;
	}
}

/* Free the READDIRPLUS entry list. */
static void release_readdirplus(void *res)
{
	READDIRPLUS3res *r = res;
	entryplus3 *e, *next;

	if (r->status != NFS3_OK)
		return;
	for (e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = next) {
		next = e->nextentry;
		free(e->name);
		pfh_release(&e->name_handle);
		free(e);
	}
}

/* Queue an NFSv3 NULL. */
static int send_null(struct rpc_context *rpc, rpc_cb cb, void *args,
		     void *priv)
{
	(void)args;
	return rpc_nfs3_null_async(rpc, cb, priv);
}

#define SEND_FN(lower, UPPER)                                                \
	static int send_##lower(struct rpc_context *rpc, rpc_cb cb,          \
				void *args, void *priv)                      \
	{                                                                    \
		return rpc_nfs3_##lower##_async(rpc, cb, (UPPER##3args *)args,\
						priv);                       \
	}
SEND_FN(getattr, GETATTR)
SEND_FN(setattr, SETATTR)
SEND_FN(lookup, LOOKUP)
SEND_FN(access, ACCESS)
SEND_FN(readlink, READLINK)
SEND_FN(read, READ)
SEND_FN(write, WRITE)
SEND_FN(create, CREATE)
SEND_FN(mkdir, MKDIR)
SEND_FN(symlink, SYMLINK)
SEND_FN(mknod, MKNOD)
SEND_FN(remove, REMOVE)
SEND_FN(rmdir, RMDIR)
SEND_FN(rename, RENAME)
SEND_FN(link, LINK)
SEND_FN(readdir, READDIR)
SEND_FN(readdirplus, READDIRPLUS)
SEND_FN(fsstat, FSSTAT)
SEND_FN(fsinfo, FSINFO)
SEND_FN(pathconf, PATHCONF)
SEND_FN(commit, COMMIT)
#undef SEND_FN

/* The NFSv3 procedures, indexed by procedure number (RFC 1813 3.3). */
static const struct proc_desc procs[] = {
	[NFS3_NULL] = { "NULL", 0, send_null, NULL, NULL },
	[NFS3_GETATTR] = { "GETATTR", sizeof(GETATTR3res), send_getattr,
			   NULL, NULL },
	[NFS3_SETATTR] = { "SETATTR", sizeof(SETATTR3res), send_setattr,
			   NULL, NULL },
	[NFS3_LOOKUP] = { "LOOKUP", sizeof(LOOKUP3res), send_lookup,
			  dup_lookup, release_lookup },
	[NFS3_ACCESS] = { "ACCESS", sizeof(ACCESS3res), send_access,
			  NULL, NULL },
	[NFS3_READLINK] = { "READLINK", sizeof(READLINK3res), send_readlink,
			    dup_readlink, release_readlink },
	[NFS3_READ] = { "READ", sizeof(READ3res), send_read,
			dup_read, release_read },
	[NFS3_WRITE] = { "WRITE", sizeof(WRITE3res), send_write, NULL, NULL },
	[NFS3_CREATE] = { "CREATE", sizeof(CREATE3res), send_create,
			  dup_create, release_create },
	[NFS3_MKDIR] = { "MKDIR", sizeof(MKDIR3res), send_mkdir,
			 dup_mkdir, release_mkdir },
	[NFS3_SYMLINK] = { "SYMLINK", sizeof(SYMLINK3res), send_symlink,
			   dup_symlink, release_symlink },
	[NFS3_MKNOD] = { "MKNOD", sizeof(MKNOD3res), send_mknod,
			 dup_mknod, release_mknod },
	[NFS3_REMOVE] = { "REMOVE", sizeof(REMOVE3res), send_remove,
			  NULL, NULL },
	[NFS3_RMDIR] = { "RMDIR", sizeof(RMDIR3res), send_rmdir, NULL, NULL },
	[NFS3_RENAME] = { "RENAME", sizeof(RENAME3res), send_rename,
			  NULL, NULL },
	[NFS3_LINK] = { "LINK", sizeof(LINK3res), send_link, NULL, NULL },
	[NFS3_READDIR] = { "READDIR", sizeof(READDIR3res), send_readdir,
			   dup_readdir, release_readdir },
	[NFS3_READDIRPLUS] = { "READDIRPLUS", sizeof(READDIRPLUS3res),
			       send_readdirplus, dup_readdirplus,
			       release_readdirplus },
	[NFS3_FSSTAT] = { "FSSTAT", sizeof(FSSTAT3res), send_fsstat,
			  NULL, NULL },
	[NFS3_FSINFO] = { "FSINFO", sizeof(FSINFO3res), send_fsinfo,
			  NULL, NULL },
	[NFS3_PATHCONF] = { "PATHCONF", sizeof(PATHCONF3res), send_pathconf,
			    NULL, NULL },
	[NFS3_COMMIT] = { "COMMIT", sizeof(COMMIT3res), send_commit,
			  NULL, NULL },
};

#define NPROCS ((int)(sizeof(procs) / sizeof(procs[0])))

/* Record a call's outcome; copy the reply while libnfs still owns it. */
static void call_cb(struct rpc_context *rpc, int status, void *data,
		    void *priv)
{
	struct pending *p = priv;
	const struct proc_desc *d = &procs[p->proc];

	(void)rpc;
	if (p->orphan) {
		free(p);
		return;
	}
	p->done = 1;
	p->rpc_status = status;
	if (status != RPC_STATUS_SUCCESS) {
		snprintf(p->err, sizeof(p->err), "%s: rpc status %d: %s",
			 d->name, status, data ? (const char *)data : "(none)");
		return;
	}
	if (p->res && d->res_size) {
		memcpy(p->res, data, d->res_size);
		if (d->dup)
			d->dup(p->res);
	}
}

/* Service the socket until p is done, the deadline passes or it breaks. */
static int wait_reply(struct nfsc *c, struct pending *p, uint64_t deadline)
{
	while (!p->done) {
		uint64_t now = nfsc_now_ms();
		struct pollfd pfd;
		int n, slice;

		if (now >= deadline)
			return NFSC_ERR_TIMEOUT;
		slice = deadline - now > 100 ? 100 : (int)(deadline - now);
		pfd.fd = rpc_get_fd(c->rpc);
		pfd.events = (short)rpc_which_events(c->rpc);
		pfd.revents = 0;
		n = poll(&pfd, 1, slice);
		if (n < 0 && errno != EINTR) {
			snprintf(c->err, sizeof(c->err), "poll: %s",
				 strerror(errno));
			return NFSC_ERR_CONN;
		}
		if (rpc_service(c->rpc, n > 0 ? pfd.revents : 0) < 0) {
			snprintf(c->err, sizeof(c->err), "rpc_service: %s",
				 rpc_get_error(c->rpc));
			c->broken = 1;
			return p->done ? 0 : NFSC_ERR_CONN;
		}
	}
	return 0;
}

int nfsc_call(struct nfsc *c, int proc, void *args, void *res, int timeout_ms)
{
	const struct proc_desc *d;
	struct pending *p;
	int rc;

	if (proc < 0 || proc >= NPROCS || !procs[proc].send)
		return NFSC_ERR_SEND;
	d = &procs[proc];
	if (res && d->res_size)
		memset(res, 0, d->res_size);
	if (c->broken) {
		snprintf(c->err, sizeof(c->err), "%s: connection broken",
			 d->name);
		return NFSC_ERR_CONN;
	}
	p = xmalloc(sizeof(*p));
	memset(p, 0, sizeof(*p));
	p->proc = proc;
	p->res = res;
	if (d->send(c->rpc, call_cb, args, p) != 0) {
		snprintf(c->err, sizeof(c->err), "%s: cannot queue: %s",
			 d->name, rpc_get_error(c->rpc));
		free(p);
		return NFSC_ERR_SEND;
	}
	rc = wait_reply(c, p, nfsc_now_ms() + (uint64_t)timeout_ms);
	if (!p->done) {
		/* The callback still owns p: it frees it when it comes. */
		p->orphan = 1;
		if (rc == NFSC_ERR_TIMEOUT) {
			snprintf(c->err, sizeof(c->err),
				 "%s: no reply in %d ms", d->name, timeout_ms);
			fprintf(stderr, "nfsclient: %s: %s\n", c->url, c->err);
			c->broken = c->fail_fast;
		}
		return rc ? rc : NFSC_ERR_CONN;
	}
	if (p->rpc_status != RPC_STATUS_SUCCESS) {
		snprintf(c->err, sizeof(c->err), "%s", p->err);
		free(p);
		return NFSC_ERR_RPC;
	}
	free(p);
	return res && d->res_size ? (int)*(nfsstat3 *)res : 0;
}

void nfsc_res_free(int proc, void *res)
{
	if (proc < 0 || proc >= NPROCS || !res || !procs[proc].release)
		return;
	procs[proc].release(res);
	memset(res, 0, procs[proc].res_size);
}

/* Mount c->url with c's credential into a fresh libnfs context. */
static int client_mount(struct nfsc *c)
{
	struct nfs_url *u;
	const struct nfs_fh *root;

	c->nfs = nfs_init_context();
	if (!c->nfs) {
		snprintf(c->err, sizeof(c->err), "nfs_init_context failed");
		return -1;
	}
	u = nfs_parse_url_dir(c->nfs, c->url);
	if (!u) {
		snprintf(c->err, sizeof(c->err), "bad url %s: %s", c->url,
			 nfs_get_error(c->nfs));
		return -1;
	}
	if (getenv("NFSC_LIBNFS_DEBUG"))
		nfs_set_debug(c->nfs, atoi(getenv("NFSC_LIBNFS_DEBUG")));
	nfs_set_uid(c->nfs, (int)c->uid);
	nfs_set_gid(c->nfs, (int)c->gid);
	nfs_set_timeout(c->nfs, NFSC_TIMEOUT_MS);
	if (nfs_mount(c->nfs, u->server, u->path) != 0) {
		snprintf(c->err, sizeof(c->err), "mount %s: %s", c->url,
			 nfs_get_error(c->nfs));
		nfs_destroy_url(u);
		return -1;
	}
	nfs_destroy_url(u);
	root = nfs_get_rootfh(c->nfs);
	c->root.data.data_len = (u_int)root->len;
	c->root.data.data_val = xmemdup(root->val, (size_t)root->len);
	c->rpc = nfs_get_rpc_context(c->nfs);
	c->broken = 0;
	return 0;
}

/* Tear down c's libnfs context, keeping the URL and credential. */
static void client_unmount(struct nfsc *c)
{
	if (c->nfs)
		nfs_destroy_context(c->nfs);
	c->nfs = NULL;
	c->rpc = NULL;
	nfsc_fh_free(&c->root);
}

struct nfsc *nfsc_connect(const char *url, uint32_t uid, uint32_t gid)
{
	struct nfsc *c = xmalloc(sizeof(*c));

	memset(c, 0, sizeof(*c));
	c->url = xmemdup(url, strlen(url));
	c->uid = uid;
	c->gid = gid;
	if (client_mount(c) != 0) {
		fprintf(stderr, "nfsclient: %s\n", c->err);
		nfsc_close(&c);
		return NULL;
	}
	return c;
}

void nfsc_close(struct nfsc **cp)
{
	struct nfsc *c = *cp;

	if (!c)
		return;
	client_unmount(c);
	free(c->url);
	free(c);
	*cp = NULL;
}

void nfsc_set_fail_fast(struct nfsc *c, int on)
{
	c->fail_fast = on;
}

const nfs_fh3 *nfsc_root(const struct nfsc *c)
{
	return &c->root;
}

const char *nfsc_error(const struct nfsc *c)
{
	return c->err;
}

/* Status names, RFC 1813 section 2.6. */
static const struct {
	int st;
	const char *name;
} stat_names[] = {
	{ NFS3_OK, "NFS3_OK" },
	{ NFS3ERR_PERM, "NFS3ERR_PERM" },
	{ NFS3ERR_NOENT, "NFS3ERR_NOENT" },
	{ NFS3ERR_IO, "NFS3ERR_IO" },
	{ NFS3ERR_NXIO, "NFS3ERR_NXIO" },
	{ NFS3ERR_ACCES, "NFS3ERR_ACCES" },
	{ NFS3ERR_EXIST, "NFS3ERR_EXIST" },
	{ NFS3ERR_XDEV, "NFS3ERR_XDEV" },
	{ NFS3ERR_NODEV, "NFS3ERR_NODEV" },
	{ NFS3ERR_NOTDIR, "NFS3ERR_NOTDIR" },
	{ NFS3ERR_ISDIR, "NFS3ERR_ISDIR" },
	{ NFS3ERR_INVAL, "NFS3ERR_INVAL" },
	{ NFS3ERR_FBIG, "NFS3ERR_FBIG" },
	{ NFS3ERR_NOSPC, "NFS3ERR_NOSPC" },
	{ NFS3ERR_ROFS, "NFS3ERR_ROFS" },
	{ NFS3ERR_MLINK, "NFS3ERR_MLINK" },
	{ NFS3ERR_NAMETOOLONG, "NFS3ERR_NAMETOOLONG" },
	{ NFS3ERR_NOTEMPTY, "NFS3ERR_NOTEMPTY" },
	{ NFS3ERR_DQUOT, "NFS3ERR_DQUOT" },
	{ NFS3ERR_STALE, "NFS3ERR_STALE" },
	{ NFS3ERR_REMOTE, "NFS3ERR_REMOTE" },
	{ NFS3ERR_BADHANDLE, "NFS3ERR_BADHANDLE" },
	{ NFS3ERR_NOT_SYNC, "NFS3ERR_NOT_SYNC" },
	{ NFS3ERR_BAD_COOKIE, "NFS3ERR_BAD_COOKIE" },
	{ NFS3ERR_NOTSUPP, "NFS3ERR_NOTSUPP" },
	{ NFS3ERR_TOOSMALL, "NFS3ERR_TOOSMALL" },
	{ NFS3ERR_SERVERFAULT, "NFS3ERR_SERVERFAULT" },
	{ NFS3ERR_BADTYPE, "NFS3ERR_BADTYPE" },
	{ NFS3ERR_JUKEBOX, "NFS3ERR_JUKEBOX" },
	{ NFSC_ERR_SEND, "(call not queued)" },
	{ NFSC_ERR_RPC, "(RPC error)" },
	{ NFSC_ERR_TIMEOUT, "(timeout)" },
	{ NFSC_ERR_CONN, "(connection broken)" },
};

const char *nfsc_stat_name(int st)
{
	size_t i;

	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++)
		if (stat_names[i].st == st)
			return stat_names[i].name;
	return "(unknown status)";
}

/* Copy the attributes of a post_op_attr, or zero them when absent. */
static void take_attr(fattr3 *out, const post_op_attr *pa)
{
	if (!out)
		return;
	if (pa->attributes_follow)
		*out = pa->post_op_attr_u.attributes;
	else
		memset(out, 0, sizeof(*out));
}

/* Hand a post_op_fh3 handle to *out (moved, not copied). */
static void take_fh(nfs_fh3 *out, post_op_fh3 *p)
{
	if (!out || !p->handle_follows)
		return;
	*out = p->post_op_fh3_u.handle;
	p->handle_follows = 0;
	memset(&p->post_op_fh3_u.handle, 0, sizeof(p->post_op_fh3_u.handle));
}

int nfsc_null(struct nfsc *c)
{
	return nfsc_call(c, NFS3_NULL, NULL, NULL, NFSC_TIMEOUT_MS);
}

int nfsc_getattr(struct nfsc *c, const nfs_fh3 *fh, fattr3 *attr)
{
	GETATTR3args a = { .object = *fh };
	GETATTR3res r;
	int st = nfsc_call(c, NFS3_GETATTR, &a, &r, NFSC_TIMEOUT_MS);

	if (attr) {
		if (st == NFS3_OK)
			*attr = r.GETATTR3res_u.resok.obj_attributes;
		else
			memset(attr, 0, sizeof(*attr));
	}
	return st;
}

int nfsc_lookup(struct nfsc *c, const nfs_fh3 *dir, const char *name,
		nfs_fh3 *fh, fattr3 *attr)
{
	LOOKUP3args a = { .what = { .dir = *dir, .name = nfsc_mut(name) } };
	LOOKUP3res r;
	int st;

	if (fh)
		memset(fh, 0, sizeof(*fh));
	st = nfsc_call(c, NFS3_LOOKUP, &a, &r, NFSC_TIMEOUT_MS);
	if (st != NFS3_OK) {
		take_attr(attr, &(post_op_attr){ 0 });
		return st;
	}
	take_attr(attr, &r.LOOKUP3res_u.resok.obj_attributes);
	if (fh)
		nfsc_fh_copy(fh, &r.LOOKUP3res_u.resok.object);
	nfsc_res_free(NFS3_LOOKUP, &r);
	return st;
}

/* Fill a sattr3 that sets the mode alone. */
static void sattr_mode(sattr3 *s, uint32_t mode)
{
	memset(s, 0, sizeof(*s));
	s->mode.set_it = 1;
	s->mode.set_mode3_u.mode = mode;
}

int nfsc_mkdir(struct nfsc *c, const nfs_fh3 *dir, const char *name,
	       uint32_t mode, nfs_fh3 *fh, fattr3 *attr)
{
	MKDIR3args a = { .where = { .dir = *dir, .name = nfsc_mut(name) } };
	MKDIR3res r;
	int st;

	if (fh)
		memset(fh, 0, sizeof(*fh));
	sattr_mode(&a.attributes, mode);
	st = nfsc_call(c, NFS3_MKDIR, &a, &r, NFSC_TIMEOUT_MS);
	if (st != NFS3_OK) {
		take_attr(attr, &(post_op_attr){ 0 });
		return st;
	}
	take_attr(attr, &r.MKDIR3res_u.resok.obj_attributes);
	take_fh(fh, &r.MKDIR3res_u.resok.obj);
	nfsc_res_free(NFS3_MKDIR, &r);
	return st;
}

int nfsc_create(struct nfsc *c, const nfs_fh3 *dir, const char *name,
		uint32_t mode, nfs_fh3 *fh, fattr3 *attr)
{
	CREATE3args a = { .where = { .dir = *dir, .name = nfsc_mut(name) } };
	CREATE3res r;
	int st;

	if (fh)
		memset(fh, 0, sizeof(*fh));
	a.how.mode = UNCHECKED;
	sattr_mode(&a.how.createhow3_u.obj_attributes, mode);
	st = nfsc_call(c, NFS3_CREATE, &a, &r, NFSC_TIMEOUT_MS);
	if (st != NFS3_OK) {
		take_attr(attr, &(post_op_attr){ 0 });
		return st;
	}
	take_attr(attr, &r.CREATE3res_u.resok.obj_attributes);
	take_fh(fh, &r.CREATE3res_u.resok.obj);
	nfsc_res_free(NFS3_CREATE, &r);
	return st;
}

int nfsc_remove(struct nfsc *c, const nfs_fh3 *dir, const char *name)
{
	REMOVE3args a = { .object = { .dir = *dir, .name = nfsc_mut(name) } };
	REMOVE3res r;

	return nfsc_call(c, NFS3_REMOVE, &a, &r, NFSC_TIMEOUT_MS);
}

int nfsc_rmdir(struct nfsc *c, const nfs_fh3 *dir, const char *name)
{
	RMDIR3args a = { .object = { .dir = *dir, .name = nfsc_mut(name) } };
	RMDIR3res r;

	return nfsc_call(c, NFS3_RMDIR, &a, &r, NFSC_TIMEOUT_MS);
}

int nfsc_chmod(struct nfsc *c, const nfs_fh3 *fh, uint32_t mode)
{
	SETATTR3args a = { .object = *fh };
	SETATTR3res r;

	sattr_mode(&a.new_attributes, mode);
	return nfsc_call(c, NFS3_SETATTR, &a, &r, NFSC_TIMEOUT_MS);
}

int nfsc_write(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
	       const void *buf, uint32_t len, int stable, uint32_t *count,
	       int *committed, char *verf)
{
	WRITE3args a = { .file = *fh, .offset = off, .count = len,
			 .stable = (stable_how)stable };
	WRITE3res r;
	int st;

	a.data.data_len = len;
	a.data.data_val = nfsc_mut(buf);
	st = nfsc_call(c, NFS3_WRITE, &a, &r, NFSC_TIMEOUT_MS);
	if (count)
		*count = st == NFS3_OK ? r.WRITE3res_u.resok.count : 0;
	if (committed)
		*committed = st == NFS3_OK ? (int)r.WRITE3res_u.resok.committed
					   : -1;
	if (verf && st == NFS3_OK)
		memcpy(verf, r.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	return st;
}

int nfsc_read(struct nfsc *c, const nfs_fh3 *fh, uint64_t off, uint32_t len,
	      void *buf, uint32_t *count, int *eof)
{
	READ3args a = { .file = *fh, .offset = off, .count = len };
	READ3res r;
	const READ3resok *ok = &r.READ3res_u.resok;
	int st = nfsc_call(c, NFS3_READ, &a, &r, NFSC_TIMEOUT_MS);
	uint32_t n;

	if (count)
		*count = 0;
	if (eof)
		*eof = 0;
	if (st != NFS3_OK)
		return st;
	n = ok->data.data_len < len ? ok->data.data_len : len;
	if (buf && n)
		memcpy(buf, ok->data.data_val, n);
	if (count)
		*count = ok->count;
	if (eof)
		*eof = ok->eof ? 1 : 0;
	nfsc_res_free(NFS3_READ, &r);
	return st;
}

int nfsc_commit(struct nfsc *c, const nfs_fh3 *fh, uint64_t off,
		uint32_t len, char *verf)
{
	COMMIT3args a = { .file = *fh, .offset = off, .count = len };
	COMMIT3res r;
	int st = nfsc_call(c, NFS3_COMMIT, &a, &r, NFSC_TIMEOUT_MS);

	if (verf && st == NFS3_OK)
		memcpy(verf, r.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
	return st;
}

struct nfsc_dent *nfsc_listing_add(struct nfsc_listing *l, const char *name,
				   uint64_t fileid, uint64_t cookie)
{
	struct nfsc_dent *d;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
		if (!l->e) {
			fprintf(stderr, "nfsclient: out of memory\n");
			abort();
		}
	}
	d = &l->e[l->n++];
	memset(d, 0, sizeof(*d));
	d->name = xmemdup(name, strlen(name));
	d->fileid = fileid;
	d->cookie = cookie;
	return d;
}

void nfsc_listing_free(struct nfsc_listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->e[i].name);
		if (l->e[i].has_fh)
			nfsc_fh_free(&l->e[i].fh);
	}
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* Read one READDIR page at *cookie; advance cookie and verifier. */
static int readdir_page(struct nfsc *c, const nfs_fh3 *dir, uint32_t count,
			cookie3 *cookie, char *verf, struct nfsc_listing *l,
			int *eof)
{
	READDIR3args a = { .dir = *dir, .cookie = *cookie, .count = count };
	READDIR3res r;
	const entry3 *e;
	int st;

	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	st = nfsc_call(c, NFS3_READDIR, &a, &r, NFSC_TIMEOUT_MS);
	if (st != NFS3_OK)
		return st;
	memcpy(verf, r.READDIR3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
	for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
		nfsc_listing_add(l, e->name, e->fileid, e->cookie);
		*cookie = e->cookie;
	}
	*eof = r.READDIR3res_u.resok.reply.eof ? 1 : 0;
	nfsc_res_free(NFS3_READDIR, &r);
	return st;
}

/* Read one READDIRPLUS page at *cookie; advance cookie and verifier. */
static int readdirplus_page(struct nfsc *c, const nfs_fh3 *dir,
			    uint32_t count, cookie3 *cookie, char *verf,
			    struct nfsc_listing *l, int *eof)
{
	READDIRPLUS3args a = { .dir = *dir, .cookie = *cookie,
			       .dircount = count / 4, .maxcount = count };
	READDIRPLUS3res r;
	entryplus3 *e;
	int st;

	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	st = nfsc_call(c, NFS3_READDIRPLUS, &a, &r, NFSC_TIMEOUT_MS);
	if (st != NFS3_OK)
		return st;
	memcpy(verf, r.READDIRPLUS3res_u.resok.cookieverf,
	       NFS3_COOKIEVERFSIZE);
	for (e = r.READDIRPLUS3res_u.resok.reply.entries; e;
	     e = e->nextentry) {
		struct nfsc_dent *d;

		d = nfsc_listing_add(l, e->name, e->fileid, e->cookie);

		if (e->name_attributes.attributes_follow) {
			d->has_attr = 1;
			d->attr = e->name_attributes.post_op_attr_u.attributes;
		}
		if (e->name_handle.handle_follows) {
			d->has_fh = 1;
			d->fh = e->name_handle.post_op_fh3_u.handle;
			e->name_handle.handle_follows = 0;	/* moved */
		}
		*cookie = e->cookie;
	}
	*eof = r.READDIRPLUS3res_u.resok.reply.eof ? 1 : 0;
	nfsc_res_free(NFS3_READDIRPLUS, &r);
	return st;
}

void nfsc_list_dir_from(struct nfsc *c, const nfs_fh3 *dir, int plus,
			uint32_t count, cookie3 start, const char *verf0,
			struct nfsc_listing *l)
{
	char verf[NFS3_COOKIEVERFSIZE];
	cookie3 cookie = start;
	int eof = 0;

	memset(l, 0, sizeof(*l));
	memcpy(verf, verf0, sizeof(verf));
	while (!eof && l->pages < NFSC_LIST_MAX_PAGES) {
		size_t before = l->n;

		l->st = plus ? readdirplus_page(c, dir, count, &cookie, verf,
						l, &eof)
			     : readdir_page(c, dir, count, &cookie, verf, l,
					    &eof);
		l->pages++;
		if (l->st != NFS3_OK)
			return;
		if (!eof && l->n == before) {
			l->stuck = 1;
			return;
		}
	}
	memcpy(l->verf, verf, sizeof(verf));
}

void nfsc_list_dir(struct nfsc *c, const nfs_fh3 *dir, int plus,
		   uint32_t count, struct nfsc_listing *l)
{
	static const char zero[NFS3_COOKIEVERFSIZE];

	nfsc_list_dir_from(c, dir, plus, count, 0, zero, l);
}

/* Order entries by name. */
static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nfsc_dent *)a)->name,
		      ((const struct nfsc_dent *)b)->name);
}

void nfsc_listing_sort(struct nfsc_listing *l)
{
	if (l->n > 1)
		qsort(l->e, l->n, sizeof(*l->e), dent_cmp);
}


void nfsc_check_stat(int got, int want, const char *what, const char *file,
		     unsigned line)
{
	tcheck(got == want, file, line, "%s: got %s (%d), want %s (%d)",
	       what, nfsc_stat_name(got), got, nfsc_stat_name(want), want);
}
