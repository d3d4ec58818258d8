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
#include "server.h"
#include "upstream.h"

/* One entry of the mount list DUMP reports. */
struct mount_rec {
	char *host;
	char *path;
	struct mount_rec *next;
};

static struct mount_rec *mounts;

/* A MNT waiting for its upstream's first mount. */
struct mnt_wait {
	struct req *r;
	struct export_rt *ex;
	struct event *timer;
	double deadline;
};

/* Remember that host mounted path (once). */
static void mount_list_add(const char *host, const char *path)
{
	struct mount_rec *m;

	LL_FOREACH(mounts, m)
		if (!strcmp(m->host, host) && !strcmp(m->path, path))
			return;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->host = strdup(host)) || !(m->path = strdup(path))) {
		if (m)
			free(m->host);
		free(m);
		return;
	}
	LL_APPEND(mounts, m);
}

/* Forget host's mounts of path, or all of host's when path is NULL. */
static void mount_list_del(const char *host, const char *path)
{
	struct mount_rec *m, *tmp;

	LL_FOREACH_SAFE(mounts, m, tmp) {
		if (strcmp(m->host, host) || (path && strcmp(m->path, path)))
			continue;
		LL_DELETE(mounts, m);
		free(m->host);
		free(m->path);
		free(m);
	}
}

void mount_list_clear(void)
{
	struct mount_rec *m, *tmp;

	LL_FOREACH_SAFE(mounts, m, tmp) {
		LL_DELETE(mounts, m);
		free(m->host);
		free(m->path);
		free(m);
	}
}

enum op_status mount_op_null(struct req *r)
{
	return req_reply(r, (xdrproc_t)dispatch_xdr_void, NULL);
}

/* Reply a mountres3 with status only. */
static enum op_status mnt_fail(struct req *r, mountstat3 st)
{
	mountres3 res;

	memset(&res, 0, sizeof(res));
	res.fhs_status = st;
	return req_reply(r, (xdrproc_t)xdr_mountres3, &res);
}

/* Reply MNT3_OK with the export's wrapped root handle, or fail. */
static enum op_status mnt_answer(struct req *r, struct export_rt *ex)
{
	const uint8_t *root;
	size_t root_len, n;
	uint8_t fh[FH_SIZE_MAX];
	int flavors[1] = { AUTH_SYS };
	mountres3 res;

	root = upcall_root_fh(&ex->upc, &root_len);
	if (!root) {
		log_warn("MNT %s from %s: upstream not mounted", ex->conf->path,
			 req_peer_name(r));
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	if (fh_wrap(r->d->fh_key, ex->conf->id, root, root_len, fh, &n) != FH_OK) {
		log_error("export %s: upstream root handle of %zu bytes cannot be wrapped",
			  ex->conf->path, root_len);
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	if (root_len > FH_UP_FULLAUTH)
		ex->long_handles = true;
	mount_list_add(req_peer_host(r), ex->conf->path);
	memset(&res, 0, sizeof(res));
	res.fhs_status = MNT3_OK;
	res.mountres3_u.mountinfo.fhandle.fhandle3_len = (u_int)n;
	res.mountres3_u.mountinfo.fhandle.fhandle3_val = (char *)fh;
	res.mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 1;
	res.mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
	log_debug("MNT %s from %s", ex->conf->path, req_peer_name(r));
	return req_reply(r, (xdrproc_t)xdr_mountres3, &res);
}

/* Poll a waiting MNT. */
static void mnt_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct mnt_wait *w = arg;
	struct timeval tv = { 0, 100000 };

	(void)fd;
	(void)what;
	if (!upcall_root_fh(&w->ex->upc, &(size_t){ 0 }) &&
	    daemon_now() < w->deadline && !w->r->d->stopping) {
		mclock_timer_add(w->timer, &tv);
		return;
	}
	mnt_answer(w->r, w->ex);
	event_free(w->timer);
	free(w);
}

enum op_status mount_op_mnt(struct req *r)
{
	const char *path = *(char **)r->args;
	const struct conf_export *e = conf_export_by_path(r->d->conf, path);
	struct export_rt *ex;
	struct mnt_wait *w;
	struct timeval tv = { 0, 100000 };

	if (!e)
		return mnt_fail(r, MNT3ERR_NOENT);
	if (!conf_client_allowed(e, req_peer(r))) {
		log_info("MNT %s refused for %s: not in clients", path,
			 req_peer_name(r));
		return mnt_fail(r, MNT3ERR_ACCES);
	}
	if (e->secure && !req_peer_privileged(r)) {
		log_info("MNT %s refused for %s: insecure source port", path,
			 req_peer_name(r));
		return mnt_fail(r, MNT3ERR_PERM);
	}
	ex = daemon_export(r->d, e->id);
	if (upcall_root_fh(&ex->upc, &(size_t){ 0 }))
		return mnt_answer(r, ex);
	w = calloc(1, sizeof(*w));
	if (!w || !(w->timer = evtimer_new(r->d->base, mnt_wait_cb, w))) {
		free(w);
		return mnt_fail(r, MNT3ERR_SERVERFAULT);
	}
	w->r = r;
	w->ex = ex;
	w->deadline = daemon_now() + r->d->conf->upstream_timeout;
	mclock_timer_add(w->timer, &tv);
	return OP_PENDING;
}

enum op_status mount_op_dump(struct req *r)
{
	struct mount_rec *m;
	mountlist head = NULL, *tail = &head;
	enum op_status st;

	LL_FOREACH(mounts, m) {
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
	mount_list_del(req_peer_host(r), *(char **)r->args);
	return req_reply(r, (xdrproc_t)dispatch_xdr_void, NULL);
}

enum op_status mount_op_umntall(struct req *r)
{
	mount_list_del(req_peer_host(r), NULL);
	return req_reply(r, (xdrproc_t)dispatch_xdr_void, NULL);
}

/* Format a client network as "ADDR/PREFIX" into buf. */
static void net_format(const struct conf_net *n, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(n->family, n->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, n->prefix);
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
			char buf[INET6_ADDRSTRLEN + 8];

			if (!g)
				break;
			net_format(&e->clients[j], buf, sizeof(buf));
			g->gr_name = strdup(buf);
			*gt = g;
			gt = &g->gr_next;
		}
	}
	st = req_reply(r, (xdrproc_t)xdr_exports, &head);
	exports_free(head);
	return st;
}
