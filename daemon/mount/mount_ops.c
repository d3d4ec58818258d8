/* SPDX-License-Identifier: MIT */
/*
 * mount_ops: MOUNT v3 (RFC 1813 section 5) answered by the proxy itself
 * from its configuration: MNT hands out the export's root handle (the
 * upstream's, wrapped), DUMP/UMNT/UMNTALL keep the advisory list of
 * mounts (per client host and path), EXPORT lists the exports with their
 * allowed client networks. The only flavor offered is AUTH_SYS.
 *
 * A MNT that arrives before the export's upstream has been mounted once
 * waits (polled every 100 ms) until it is, or until upstream_timeout, and
 * then gets MNT3ERR_SERVERFAULT.
 *
 * MNT of a path below an export ("/export/sub/dir", as knfsd's mountd and
 * Ganesha allow) is resolved upstream with one LOOKUP (RFC 1813 section
 * 3.3.3) per component from the export's root, asynchronously, sent as
 * root (uid 0, as mountd resolves the path). "." and ".." components and
 * symlinks (NF3LNK, never followed) are refused with MNT3ERR_ACCES, a
 * non-directory with MNT3ERR_NOTDIR, a missing component with
 * MNT3ERR_NOENT, a LOOKUP the upstream failed (down, I/O, JUKEBOX,
 * SERVERFAULT, no attributes) with MNT3ERR_SERVERFAULT, any other LOOKUP
 * error with MNT3ERR_ACCES (mountd's mapping of stat(2) errors other than
 * ENOENT). docs/operations.md has the table.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/event.h>
#include <utlist.h>

#include "daemon.h"
#include "log.h"
#include "mount3_prot.h"
#include "mount_ops.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_prot.h"
#include "rpcmsg.h"
#include "server.h"
#include "stale.h"
#include "upstream.h"

/* One entry of the mount list DUMP reports. */
struct mount_rec {
	char *host;
	char *path;
	struct mount_rec *next;
};

/* A MNT waiting for its upstream's first mount, or for the caller's host
 * name (a wildcard clients entry needs it): it is checked again from the
 * start each time the timer fires. */
struct mnt_wait {
	struct req *r;
	struct event *timer;
	double deadline;
};

/* A MNT of a subdirectory being resolved upstream, one LOOKUP at a time.
 * next points into the MNT's argument at the components still to look up;
 * fh is the handle (upstream's) of the directory reached so far. */
struct mnt_walk {
	struct req *r;
	struct export_rt *ex;
	const char *next;
	char name[256];			/* the component being looked up */
	uint8_t fh[NFS3_FHSIZE];
	size_t fh_len;
};

/* Remember that host mounted path (once), in d's list. */
static void mount_list_add(struct daemon *d, const char *host,
			   const char *path)
{
	struct mount_rec *m;

	LL_FOREACH(d->mounts, m)
		if (!strcmp(m->host, host) && !strcmp(m->path, path))
			return;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->host = strdup(host)) || !(m->path = strdup(path))) {
		if (m)
			free(m->host);
		free(m);
		return;
	}
	LL_APPEND(d->mounts, m);
}

/* Forget host's mounts of path, or all of host's when path is NULL. */
static void mount_list_del(struct daemon *d, const char *host,
			   const char *path)
{
	struct mount_rec *m, *tmp;

	LL_FOREACH_SAFE(d->mounts, m, tmp) {
		if (strcmp(m->host, host) || (path && strcmp(m->path, path)))
			continue;
		LL_DELETE(d->mounts, m);
		free(m->host);
		free(m->path);
		free(m);
	}
}

void mount_list_clear(struct daemon *d)
{
	struct mount_rec *m, *tmp;

	LL_FOREACH_SAFE(d->mounts, m, tmp) {
		LL_DELETE(d->mounts, m);
		free(m->host);
		free(m->path);
		free(m);
	}
}

enum op_status mount_op_null(struct req *r)
{
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/* Reply a mountres3 with status only. */
static enum op_status mnt_fail(struct req *r, mountstat3 st)
{
	mountres3 res;

	memset(&res, 0, sizeof(res));
	res.fhs_status = st;
	return req_reply(r, (xdrproc_t)xdr_mountres3, &res);
}

/* Reply MNT3_OK with upstream handle root[0..root_len) of export ex
 * wrapped (proto/fh.h), or fail. The mount list records the MNT's path. */
static enum op_status mnt_reply_fh(struct req *r, struct export_rt *ex,
				   const uint8_t *root, size_t root_len)
{
	const char *path = *(char **)r->args;
	size_t n;
	uint8_t fh[FH_SIZE_MAX];
	int flavors[1] = { AUTH_SYS };
	mountres3 res;

	if (fh_wrap(&r->d->fh_key, ex->conf->id, root, root_len, fh, &n) != FH_OK) {
		log_error("export %s: upstream root handle of %zu bytes cannot be wrapped",
			  ex->conf->path, root_len);
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	if (root_len > FH_UP_FULLAUTH)
		ex->long_handles = true;
	mount_list_add(r->d, req_peer_host(r), path);
	memset(&res, 0, sizeof(res));
	res.fhs_status = MNT3_OK;
	res.mountres3_u.mountinfo.fhandle.fhandle3_len = (u_int)n;
	res.mountres3_u.mountinfo.fhandle.fhandle3_val = (char *)fh;
	res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 1;
	res.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
	log_debug("MNT %s from %s", path, req_peer_name(r));
	return req_reply(r, (xdrproc_t)xdr_mountres3, &res);
}

/* Refuse the MNT being resolved and free its walk. */
static enum op_status walk_fail(struct mnt_walk *w, mountstat3 st,
				const char *why)
{
	struct req *r = w->r;

	if (st == MNT3ERR_SERVERFAULT)
		log_info("MNT %s failed for %s: %s", *(char **)r->args,
			 req_peer_name(r), why);
	else
		nfs3_guard_refused(r, w->ex->conf, REFUSAL_MOUNT,
				   *(char **)r->args, REFUSAL_PATH, why);
	free(w);
	return mnt_fail(r, st);
}

/* Copy the next component of w->next into w->name and advance past it.
 * Returns 1 with a name, 0 at the end, -1 for a name over 255 bytes. */
static int walk_component(struct mnt_walk *w)
{
	size_t len;

	while (*w->next == '/')
		w->next++;
	if (!*w->next)
		return 0;
	len = strcspn(w->next, "/");
	if (len >= 256)
		return -1;
	memcpy(w->name, w->next, len);
	w->name[len] = '\0';
	w->next += len;
	return 1;
}

static void walk_lookup_done(enum upstream_status status, void *res, void *arg);

/* LOOKUP the next component, or answer with the handle reached. */
static enum op_status walk_step(struct mnt_walk *w)
{
	static const struct nfs_cred root = { .machine = "nfscached" };
	LOOKUP3args a;
	int c = walk_component(w);

	if (c < 0)
		return walk_fail(w, MNT3ERR_NAMETOOLONG, "component too long");
	if (c == 0) {
		struct req *r = w->r;
		enum op_status st = mnt_reply_fh(r, w->ex, w->fh, w->fh_len);

		free(w);
		return st;
	}
	a.what.dir.data.data_len = (u_int)w->fh_len;
	a.what.dir.data.data_val = (char *)w->fh;
	a.what.name = w->name;
	if (nfs3_send(w->ex, NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args, &a,
		      &root, walk_lookup_done, w) != 0)
		return walk_fail(w, MNT3ERR_SERVERFAULT, "upstream down");
	return OP_PENDING;
}

/* The MNT status for a LOOKUP error (mountd: ENOENT, else EACCES). */
static mountstat3 walk_status(nfsstat3 st)
{
	switch (st) {
	case NFS3ERR_NOENT:
		return MNT3ERR_NOENT;
	case NFS3ERR_NOTDIR:
		return MNT3ERR_NOTDIR;
	case NFS3ERR_NAMETOOLONG:
		return MNT3ERR_NAMETOOLONG;
	case NFS3ERR_JUKEBOX:
	case NFS3ERR_SERVERFAULT:
	case NFS3ERR_IO:
		return MNT3ERR_SERVERFAULT;
	default:
		return MNT3ERR_ACCES;
	}
}

/* One component's LOOKUP came back: refuse, or descend into it. */
static void walk_lookup_done(enum upstream_status status, void *res, void *arg)
{
	struct mnt_walk *w = arg;
	LOOKUP3res *lr = res;
	LOOKUP3resok *ok;
	char why[320];

	if (status != UPSTREAM_OK || !lr) {
		walk_fail(w, MNT3ERR_SERVERFAULT, "upstream LOOKUP failed");
		return;
	}
	if (lr->status != NFS3_OK) {
		snprintf(why, sizeof(why), "LOOKUP %s: %s", w->name,
			 nfs3_status_name(lr->status));
		walk_fail(w, walk_status(lr->status), why);
		return;
	}
	ok = &lr->LOOKUP3res_u.resok;
	if (!ok->obj_attributes.attributes_follow) {
		walk_fail(w, MNT3ERR_SERVERFAULT, "LOOKUP without attributes");
		return;
	}
	switch (ok->obj_attributes.post_op_attr_u.attributes.type) {
	case NF3DIR:
		break;
	case NF3LNK:
		snprintf(why, sizeof(why), "%s is a symlink", w->name);
		walk_fail(w, MNT3ERR_ACCES, why);
		return;
	default:
		snprintf(why, sizeof(why), "%s is not a directory", w->name);
		walk_fail(w, MNT3ERR_NOTDIR, why);
		return;
	}
	if (ok->object.data.data_len > sizeof(w->fh)) {
		walk_fail(w, MNT3ERR_SERVERFAULT, "upstream handle too long");
		return;
	}
	memcpy(w->fh, ok->object.data.data_val, ok->object.data.data_len);
	w->fh_len = ok->object.data.data_len;
	walk_step(w);
}

/* Answer a MNT of export ex (its upstream mounted or not): the root's
 * handle when sub is "", else start resolving sub below it. */
static enum op_status mnt_answer(struct req *r, struct export_rt *ex,
				 const char *sub)
{
	const uint8_t *root;
	size_t root_len;
	struct mnt_walk *w;
	bool kept = false;

	root = upcall_root_fh(&ex->upc, &root_len);
	if (root)
		stale_keep_root(r->d, ex, root, root_len);
	else
		kept = (root = stale_root(r->d, ex, &root_len)) != NULL;
	if (!root) {
		log_warn("MNT %s from %s: upstream not mounted", ex->conf->path,
			 req_peer_name(r));
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	if (!*sub) {
		if (kept)	/* an outage: the root an earlier run kept */
			stale_count_mount(r->d);
		return mnt_reply_fh(r, ex, root, root_len);
	}
	if (root_len > NFS3_FHSIZE || !(w = calloc(1, sizeof(*w))))
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	w->r = r;
	w->ex = ex;
	w->next = sub;
	memcpy(w->fh, root, root_len);
	w->fh_len = root_len;
	return walk_step(w);
}

/*
 * The export path is a prefix of, at a component boundary: the export with
 * the longest such path, and *sub set to the rest of path ("" for the
 * export itself, else what follows the export path). NULL when none is.
 */
static const struct conf_export *export_below(const struct conf *c,
					      const char *path,
					      const char **sub)
{
	const struct conf_export *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < c->nexports; i++) {
		const char *ep = c->exports[i].path;
		size_t n = strlen(ep);

		while (n > 1 && ep[n - 1] == '/')
			n--;
		if (strncmp(path, ep, n) != 0 ||
		    (path[n] && path[n] != '/' && !(n == 1 && ep[0] == '/')))
			continue;
		if (!best || n > best_len) {
			best = &c->exports[i];
			best_len = n;
		}
	}
	if (best)
		*sub = path + best_len;
	return best;
}

/* Whether sub (a path below an export) has a "." or ".." component. */
static bool sub_has_dots(const char *sub)
{
	while (*sub) {
		size_t len;

		while (*sub == '/')
			sub++;
		len = strcspn(sub, "/");
		if ((len == 1 && sub[0] == '.') ||
		    (len == 2 && sub[0] == '.' && sub[1] == '.'))
			return true;
		sub += len;
	}
	return false;
}

/*
 * Check MNT r and answer it, or return OP_PENDING (*wait true) when it
 * must wait: for its upstream's first mount, or for the caller's host
 * name, unless past deadline (then answered as things stand).
 */
static enum op_status mnt_check(struct req *r, double deadline, bool *wait)
{
	const char *path = *(char **)r->args;
	const char *sub = "";
	const struct conf_export *e = export_below(r->d->conf, path, &sub);
	bool late = daemon_now() >= deadline || r->d->stopping;
	struct conf_access acc;
	struct export_rt *ex;
	nfsstat3 st;

	*wait = false;
	if (!e) {
		nfs3_guard_refused(r, NULL, REFUSAL_MOUNT, path,
				   REFUSAL_NO_EXPORT, "no export holds it");
		return mnt_fail(r, MNT3ERR_NOENT);
	}
	ex = daemon_export(r->d, e->id);
	st = nfs3_guard_request(r, e, REFUSAL_MOUNT, path, &acc);
	if (st == NFS3ERR_JUKEBOX && late)
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	if (st == NFS3ERR_JUKEBOX)
		return *wait = true, OP_PENDING;
	if (st != NFS3_OK)
		return mnt_fail(r, st == NFS3ERR_PERM ? MNT3ERR_PERM
						      : MNT3ERR_ACCES);
	if (sub_has_dots(sub)) {
		nfs3_guard_refused(r, e, REFUSAL_MOUNT, path, REFUSAL_DOT_PATH,
				   ". or .. component");
		return mnt_fail(r, MNT3ERR_ACCES);
	}
	if (upcall_root_fh(&ex->upc, &(size_t){ 0 }) || late ||
	    stale_root(r->d, ex, &(size_t){ 0 }))
		return mnt_answer(r, ex, sub);
	return *wait = true, OP_PENDING;
}

/* Check a waiting MNT again. */
static void mnt_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mnt_wait *w = arg;
	struct timeval tv = { 0, 100000 };
	bool wait;

	(void)fd;
	(void)what;
	mnt_check(w->r, w->deadline, &wait);
	if (wait) {
		mclock_timer_add(w->timer, &tv);
		return;
	}
	event_free(w->timer);
	free(w);
}

enum op_status mount_op_mnt(struct req *r)
{
	double deadline = daemon_now() + r->d->conf->upstream_timeout;
	struct timeval tv = { 0, 100000 };
	struct mnt_wait *w;
	enum op_status st;
	bool wait;

	st = mnt_check(r, deadline, &wait);
	if (!wait)
		return st;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->timer = evtimer_new(r->d->base, mnt_wait_cb, w))) {
		free(w);
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	w->r = r;
	w->deadline = deadline;
	mclock_timer_add(w->timer, &tv);
	return OP_PENDING;
}

enum op_status mount_op_dump(struct req *r)
{
	struct mount_rec *m;
	mountlist head = NULL, *tail = &head;
	enum op_status st;

	LL_FOREACH(r->d->mounts, m) {
		struct mountbody *b = calloc(1, sizeof(*b));
		if (!b)
			break;
		b->ml_hostname = m->host;
		b->ml_directory = m->path;
		*tail = b;
		tail = &b->ml_next;
	}
	st = req_reply(r, (xdrproc_t)xdr_mountlist, &head);
	while (head) {
		struct mountbody *next = head->ml_next;
		free(head);
		head = next;
	}
	return st;
}

enum op_status mount_op_umnt(struct req *r)
{
	mount_list_del(r->d, req_peer_host(r), *(char **)r->args);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

enum op_status mount_op_umntall(struct req *r)
{
	mount_list_del(r->d, req_peer_host(r), NULL);
	return req_reply(r, (xdrproc_t)rpcmsg_xdr_void, NULL);
}

/* Format a clients entry as EXPORT shows it (showmount -e): its SPEC
 * without options, an address with its prefix. */
static void client_format(const struct conf_client *cl, char *buf,
			  size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (cl->name) {
		snprintf(buf, len, "%s", cl->name);
		return;
	}
	inet_ntop(cl->family, cl->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, cl->prefix);
}

/* Free an exports list built by mount_op_export. */
static void exports_free(exports ex)
{
	while (ex) {
		exports next = ex->ex_next;
		groups g = ex->ex_groups;

		while (g) {
			groups gn = g->gr_next;
			free(g->gr_name);
			free(g);
			g = gn;
		}
		free(ex);
		ex = next;
	}
}

enum op_status mount_op_export(struct req *r)
{
	const struct conf *c = r->d->conf;
	exports head = NULL, *tail = &head;
	enum op_status st;

	for (size_t i = 0; i < c->nexports; i++) {
		const struct conf_export *e = &c->exports[i];
		struct exportnode *n = calloc(1, sizeof(*n));
		groups *gt;

		if (!n)
			break;
		n->ex_dir = e->path;
		*tail = n;
		tail = &n->ex_next;
		gt = &n->ex_groups;
		for (size_t j = 0; j < e->nclients; j++) {
			struct groupnode *g = calloc(1, sizeof(*g));
			char buf[256];

			if (!g)
				break;
			client_format(&e->clients[j], buf, sizeof(buf));
			g->gr_name = strdup(buf);
			*gt = g;
			gt = &g->gr_next;
		}
	}
	st = req_reply(r, (xdrproc_t)xdr_exports, &head);
	exports_free(head);
	return st;
}
