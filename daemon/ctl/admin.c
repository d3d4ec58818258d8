/* SPDX-License-Identifier: MIT */
/*
 * admin: the cache-control socket and `nfscached cache` (admin.h).
 *
 * One struct aconn per accepted connection: it reads one request line,
 * runs the command and closes once its last line is written out. States:
 * READING -> (BUSY: an upstream call or the flush timer pending) ->
 * CLOSING (last line queued; freed when the output drains). A client that
 * goes away while BUSY leaves the connection GONE: its bufferevent is
 * freed at once and the command stops, and the connection with it, at
 * the next callback. At most one upstream call per connection is in
 * flight.
 *
 * warm and forget walk a queue of items: a client-visible path is resolved
 * from its export's root handle with one LOOKUP per name (RFC 1813
 * 3.3.3), as the root credential; a directory's entries (READDIRPLUS,
 * 3.3.17) are queued behind it with the handles the listing gave. warm
 * then READs a regular file from offset 0 to EOF in rtmax pieces (3.3.6)
 * and stores what comes back as a cache fill (cache_fill, the attributes
 * with cfile_attr_observe, counted as fetches), so later client READs are
 * hits; forget kicks the file's write-back and drops its clean data and
 * attributes (cfile_invalidate, cfile_attr_expire) and each directory's
 * cached names and listings (nfs3_meta_forget_dir), then waits, as flush
 * does, until the files it found have nothing left to write back and drops
 * what that made clean: dirty bytes are never dropped, only written first.
 * flush PATH walks the same way and waits for the files it found only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <utlist.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "admin.h"
#include "attr.h"
#include "cache.h"
#include "daemon.h"
#include "disk_tier.h"
#include "fstate.h"
#include "lcommit.h"
#include "log.h"
#include "nfs3_meta.h"
#include "nfs3_ops.h"
#include "nfs3_read.h"
#include "nfs3_write.h"
#include "stale.h"
#include "writeback.h"

#define ADMIN_MAX_WORDS		1024	/* words of one request */
#define ADMIN_POLL_US		20000	/* flush: how often to look */
#define ADMIN_DIR_COUNT		65536	/* READDIRPLUS maxcount, bytes */
#define ADMIN_PROGRESS		(8ull << 20) /* warm: a line per this many
					       * bytes of a file */

/* What a walk does: warm, forget, or find the files flush PATH waits for. */
enum walk_mode { WALK_WARM, WALK_FORGET, WALK_FLUSH };

/* A file a walk found, by upstream handle. */
struct fset {
	uint8_t fh[NFS3_FHSIZE];
	size_t len;
};

/* One file or directory to warm or forget. */
struct witem {
	struct witem *next;
	char *path;			/* client-visible, for the lines */
	struct export_rt *ex;
	uint8_t fh[NFS3_FHSIZE];	/* upstream handle reached so far */
	size_t fhlen;
	char **names;			/* names left to LOOKUP (owned) */
	size_t nnames, i;
	uint32_t type;			/* ftype3 once resolved */
	uint64_t cookie;		/* READDIRPLUS position */
	uint8_t verf[NFS3_COOKIEVERFSIZE];
};

struct admin;

struct aconn {
	struct admin *a;		/* NULL once admin_stop let it go */
	struct aconn *prev, *next;
	struct bufferevent *bev;	/* NULL once the client went away */
	bool busy, closing;
	enum walk_mode mode;		/* what the walk does to each file */
	struct fset *set;		/* forget, flush PATH: the files found,
					 * whose write-back is waited for */
	size_t nset, capset;
	struct witem *head, *tail;	/* walk queue; head is current */
	uint64_t off;			/* warm: next READ offset in head */
	unsigned files, failed;
	uint64_t bytes;
	struct event *timer;		/* flush poll */
	double deadline;		/* flush: monotonic seconds */
	struct flush_ctx *fctx;		/* flush: waits handed out */
};

/* What flush's write-back waits call back into; it outlives the
 * connection while waits are out (freed by whichever lets go last). */
struct flush_ctx {
	struct aconn *c;		/* NULL once the connection is gone */
	unsigned pending;		/* writeback_wait calls not yet back */
};

struct admin {
	struct daemon *d;
	struct evconnlistener *lev;
	char *path;
	struct aconn *conns;
};

static void walk_next(struct aconn *c);
static void flush_tick(evutil_socket_t fd, short what, void *arg);
static int set_add(struct aconn *c, const struct witem *w);

/* Seconds on the monotonic clock (real time: flush's deadline). */
static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- connections ---- */

/* Free c's walk queue. */
static void queue_free(struct aconn *c)
{
	while (c->head) {
		struct witem *w = c->head;

		c->head = w->next;
		for (size_t i = 0; i < w->nnames; i++)
			free(w->names[i]);
		free(w->names);
		free(w->path);
		free(w);
	}
	c->tail = NULL;
}

/* Free c and everything it holds. */
static void conn_free(struct aconn *c)
{
	if (c->a)
		DL_DELETE(c->a->conns, c);
	if (c->bev)
		bufferevent_free(c->bev);
	if (c->timer)
		event_free(c->timer);
	if (c->fctx) {
		c->fctx->c = NULL;
		if (!c->fctx->pending)
			free(c->fctx);
	}
	queue_free(c);
	free(c->set);
	free(c);
}

/* Queue a line of text to the client (dropped if it went away). */
static void conn_line(struct aconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void conn_line(struct aconn *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->bev)
		return;
	va_start(ap, fmt);
	evbuffer_add_vprintf(bufferevent_get_output(c->bev), fmt, ap);
	va_end(ap);
	evbuffer_add(bufferevent_get_output(c->bev), "\n", 1);
}

/* Write the last line ("ok", or "error STATUS why") and close after it. */
static void conn_finish(struct aconn *c, int status, const char *why)
{
	c->busy = false;
	if (!c->bev || !c->a) {
		conn_free(c);
		return;
	}
	if (status)
		conn_line(c, "error %d %s", status, why);
	else
		conn_line(c, "ok");
	c->closing = true;
}

/* The output drained: close a finished connection. */
static void conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct aconn *c = arg;

	(void)bev;
	if (c->closing)
		conn_free(c);
}

/* EOF or error from the client. */
static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct aconn *c = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	if (!c->busy) {
		conn_free(c);
		return;
	}
	bufferevent_free(c->bev);
	c->bev = NULL;
}

/* ---- request words ---- */

/* Undo %XX escapes in s, in place; -1 on a bad escape. */
static int unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned v;

		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if (sscanf(s + 1, "%2x", &v) != 1 || !s[1] || !s[2] || v == 0)
			return -1;
		*o++ = (char)v;
		s += 2;
	}
	*o = 0;
	return 0;
}

/* Split line into at most max words in place; their count, or -1. */
static int split_words(char *line, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == max || unescape(t) != 0)
			return -1;
		w[n++] = t;
	}
	return n;
}

/* Print s to f as a JSON string, escaped (RFC 8259 section 7). */
static void json_string(struct evbuffer *o, const char *s)
{
	evbuffer_add(o, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			evbuffer_add_printf(o, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			evbuffer_add_printf(o, "\\u%04x", ch);
		else
			evbuffer_add(o, s, 1);
	}
	evbuffer_add(o, "\"", 1);
}

/* ---- path resolution ---- */

/* The export whose path is the longest prefix of path (at a '/'), and
 * where the rest of path starts; NULL if none. */
static struct export_rt *path_export(struct daemon *d, const char *path,
				     const char **rest)
{
	struct export_rt *best = NULL;
	size_t blen = 0;

	for (size_t i = 0; i < d->nexports; i++) {
		const char *ep = d->exports[i]->conf->path;
		size_t n = strlen(ep);

		while (n > 1 && ep[n - 1] == '/')
			n--;
		if (strncmp(path, ep, n) == 0 &&
		    (path[n] == '/' || path[n] == 0 || n == 1) && n >= blen) {
			best = d->exports[i];
			blen = n;
		}
	}
	if (best)
		*rest = path + blen;
	return best;
}

/* A new item for path under ex, starting at handle fh; NULL on ENOMEM. */
static struct witem *item_new(const char *path, struct export_rt *ex,
			      const uint8_t *fh, size_t fhlen)
{
	struct witem *w = calloc(1, sizeof(*w));

	if (!w || !(w->path = strdup(path))) {
		free(w);
		return NULL;
	}
	w->ex = ex;
	memcpy(w->fh, fh, fhlen);
	w->fhlen = fhlen;
	return w;
}

/* Split rest ("/a/b") into w's names; -1 on ENOMEM or a ".." name. */
static int item_names(struct witem *w, const char *rest)
{
	char *copy = strdup(rest), *save = NULL;

	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		char **nn;

		if (strcmp(t, ".") == 0)
			continue;
		if (strcmp(t, "..") == 0 ||
		    !(nn = realloc(w->names, (w->nnames + 1) * sizeof(*nn))) ||
		    !(nn[w->nnames] = strdup(t))) {
			free(copy);
			return -1;
		}
		w->names = nn;
		w->nnames++;
	}
	free(copy);
	return 0;
}

/* Append w to c's queue. */
static void queue_add(struct aconn *c, struct witem *w)
{
	if (c->tail)
		c->tail->next = w;
	else
		c->head = w;
	c->tail = w;
}

/* Queue path (client-visible) on c; -1 after a line saying why not. */
static int queue_path(struct aconn *c, const char *path)
{
	struct daemon *d = c->a->d;
	const char *rest = NULL;
	struct export_rt *ex = path_export(d, path, &rest);
	const uint8_t *root;
	size_t len = 0;
	struct witem *w;

	if (!ex) {
		conn_line(c, "%s: no export holds this path", path);
		return -1;
	}
	root = upcall_root_fh(&ex->upc, &len);
	if (!root || !len || len > NFS3_FHSIZE) {
		conn_line(c, "%s: the export's upstream is not mounted", path);
		return -1;
	}
	if (!(w = item_new(path, ex, root, len)) || item_names(w, rest) != 0) {
		conn_line(c, "%s: bad path (\"..\") or out of memory", path);
		if (w)
			queue_free(&(struct aconn){ .head = w });
		return -1;
	}
	w->type = NF3DIR;	/* the export root, until a LOOKUP says */
	queue_add(c, w);
	return 0;
}

/* ---- upstream calls ---- */

/* Send proc through w's export as root; 0 or -1 (nothing sent). */
static int admin_send(struct aconn *c, struct witem *w, uint32_t proc,
		      xdrproc_t xargs, const void *args, upcall_cb cb)
{
	static const struct nfs_cred root = { .machine = "nfscached" };

	c->busy = true;
	if (nfs3_send(w->ex, proc, xargs, args, &root, cb, c) == 0)
		return 0;
	c->busy = false;
	return -1;
}

/* Learn attributes a of w's current file into the cache. */
static void learn_attr(struct aconn *c, struct witem *w, const struct cattr *a)
{
	struct daemon *d = c->a->d;
	struct cfile *f = cache_get(d->cache, w->fh, w->fhlen);

	if (!f)
		return;
	cfile_attr_observe(d->cache, f, a, daemon_now(), daemon_ac(w->ex, a->type));
	cfile_put(d->cache, &f);
}

/* The walk item at the head failed: say so and go on with the next. */
static void item_failed(struct aconn *c, const char *what, int status)
{
	if (status >= 0)
		conn_line(c, "%s: %s failed (%s)", c->head->path, what,
			  nfs3_status_name((uint32_t)status));
	else
		conn_line(c, "%s: %s failed: the upstream is down or did not "
			  "answer (error %d); nothing was dropped",
			  c->head->path, what, -status);
	c->failed++;
	walk_next(c);
}

/* A callback found the client gone or the admin stopped: stop here. */
static bool walk_abandoned(struct aconn *c)
{
	c->busy = false;
	if (c->bev && c->a)
		return false;
	conn_free(c);
	return true;
}

/* ---- warm and forget: one step per callback ---- */

static void lookup_step(struct aconn *c);
static void item_start(struct aconn *c);

/* A LOOKUP of the next name came back. */
static void lookup_done(enum upstream_status st, void *res, void *arg)
{
	struct aconn *c = arg;
	struct witem *w = c->head;
	LOOKUP3res *r = res;
	struct cattr tmp;
	const struct cattr *a;

	if (walk_abandoned(c))
		return;
	if (st != UPSTREAM_OK || !r || r->status != NFS3_OK) {
		item_failed(c, "LOOKUP", st != UPSTREAM_OK || !r ? -(int)st : (int)r->status);
		return;
	}
	memcpy(w->fh, r->LOOKUP3res_u.resok.object.data.data_val,
	       r->LOOKUP3res_u.resok.object.data.data_len);
	w->fhlen = r->LOOKUP3res_u.resok.object.data.data_len;
	w->i++;
	if ((a = attr_from_post_op(&r->LOOKUP3res_u.resok.obj_attributes, &tmp))) {
		w->type = a->type;
		learn_attr(c, w, a);
	} else {
		w->type = 0;
	}
	if (w->i < w->nnames)
		lookup_step(c);
	else
		item_start(c);
}

/* LOOKUP the head item's next name. */
static void lookup_step(struct aconn *c)
{
	struct witem *w = c->head;
	LOOKUP3args args;

	if (w->fhlen > NFS3_FHSIZE || w->fhlen == 0) {
		item_failed(c, "LOOKUP", -1);
		return;
	}
	args.what.dir.data.data_len = (u_int)w->fhlen;
	args.what.dir.data.data_val = (char *)w->fh;
	args.what.name = w->names[w->i];
	if (admin_send(c, w, NFSPROC3_LOOKUP, (xdrproc_t)xdr_LOOKUP3args,
		       &args, lookup_done) != 0)
		item_failed(c, "LOOKUP", -1);
}

static void read_step(struct aconn *c);
static void readdir_step(struct aconn *c);

/* Forget the head item's file: kick its write-back, drop the rest. */
static void forget_file(struct aconn *c)
{
	struct daemon *d = c->a->d;
	struct witem *w = c->head;
	struct cfile *f = cache_find(d->cache, w->fh, w->fhlen);
	uint64_t valid, kept;

	disk_tier_forget(d, w->fh, w->fhlen);
	if (w->type == NF3DIR)
		nfs3_meta_forget_dir(d, w->fh, w->fhlen);
	if (!f) {
		conn_line(c, "forgot %s: nothing cached", w->path);
		return;
	}
	writeback_kick(d, f, w->ex, true);
	valid = cfile_valid_bytes(f);
	cfile_invalidate(d->cache, f);
	cfile_attr_expire(f);
	kept = cfile_valid_bytes(f);
	cfile_put(d->cache, &f);
	c->bytes += valid - kept;
	if (kept)
		conn_line(c, "forgot %s: %llu bytes dropped, %llu more once written back",
			  w->path, (unsigned long long)(valid - kept),
			  (unsigned long long)kept);
	else
		conn_line(c, "forgot %s: %llu bytes dropped", w->path,
			  (unsigned long long)valid);
}

/* The head item is resolved: walk a directory, warm or forget a file. */
static void item_start(struct aconn *c)
{
	struct witem *w = c->head;

	if (w->type == NF3DIR) {
		if (c->mode == WALK_FORGET)
			forget_file(c);	/* its attributes, names, listings */
		w->cookie = 0;
		memset(w->verf, 0, sizeof(w->verf));
		readdir_step(c);
		return;
	}
	if (w->type != NF3REG) {
		walk_next(c);	/* symlinks, devices: nothing to cache */
		return;
	}
	c->files++;
	if (c->mode != WALK_WARM) {
		if (set_add(c, w) != 0)
			c->failed++;
		if (c->mode == WALK_FORGET)
			forget_file(c);
		walk_next(c);
		return;
	}
	c->off = 0;
	read_step(c);
}

/* Queue a directory entry found by READDIRPLUS behind the walk. */
static void queue_entry(struct aconn *c, const entryplus3 *e)
{
	struct witem *w = c->head, *n;
	const post_op_fh3 *h = &e->name_handle;
	const char *sep = w->path[strlen(w->path) - 1] == '/' ? "" : "/";
	struct cattr tmp;
	const struct cattr *a = attr_from_post_op(&e->name_attributes, &tmp);
	char *path;
	size_t len;

	if (strcmp(e->name, ".") == 0 || strcmp(e->name, "..") == 0)
		return;
	if (!h->handle_follows || !a || h->post_op_fh3_u.handle.data.data_len > NFS3_FHSIZE ||
	    (a->type != NF3REG && a->type != NF3DIR))
		return;
	len = strlen(w->path) + strlen(sep) + strlen(e->name) + 1;
	if (!(path = malloc(len)))
		return;
	snprintf(path, len, "%s%s%s", w->path, sep, e->name);
	n = item_new(path, w->ex, (const uint8_t *)h->post_op_fh3_u.handle.data.data_val,
		     h->post_op_fh3_u.handle.data.data_len);
	free(path);
	if (!n)
		return;
	n->type = a->type;
	learn_attr(c, n, a);
	queue_add(c, n);
}

/* A READDIRPLUS of the head directory came back. */
static void readdir_done(enum upstream_status st, void *res, void *arg)
{
	struct aconn *c = arg;
	struct witem *w = c->head;
	READDIRPLUS3res *r = res;
	const entryplus3 *e;

	if (walk_abandoned(c))
		return;
	if (st != UPSTREAM_OK || !r || r->status != NFS3_OK) {
		item_failed(c, "READDIRPLUS", st != UPSTREAM_OK || !r ? -(int)st : (int)r->status);
		return;
	}
	for (e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		queue_entry(c, e);
		w->cookie = e->cookie;
	}
	memcpy(w->verf, r->READDIRPLUS3res_u.resok.cookieverf, sizeof(w->verf));
	if (r->READDIRPLUS3res_u.resok.reply.eof ||
	    !r->READDIRPLUS3res_u.resok.reply.entries)
		walk_next(c);
	else
		readdir_step(c);
}

/* List the head directory from its cookie on. */
static void readdir_step(struct aconn *c)
{
	struct witem *w = c->head;
	READDIRPLUS3args args;

	memset(&args, 0, sizeof(args));
	args.dir.data.data_len = (u_int)w->fhlen;
	args.dir.data.data_val = (char *)w->fh;
	args.cookie = w->cookie;
	memcpy(args.cookieverf, w->verf, sizeof(args.cookieverf));
	args.dircount = ADMIN_DIR_COUNT;
	args.maxcount = ADMIN_DIR_COUNT;
	if (admin_send(c, w, NFSPROC3_READDIRPLUS, (xdrproc_t)xdr_READDIRPLUS3args,
		       &args, readdir_done) != 0)
		item_failed(c, "READDIRPLUS", -1);
}

/* Store a READ's reply for the head file; false if the file is done. */
static bool read_learn(struct aconn *c, READ3resok *ok)
{
	struct daemon *d = c->a->d;
	struct witem *w = c->head;
	struct cfile *f = cache_get(d->cache, w->fh, w->fhlen);
	struct cattr tmp;
	const struct cattr *a = attr_from_post_op(&ok->file_attributes, &tmp);

	/* Never more bytes than the reply carries (a count past its data
	 * is the upstream's error). */
	if (ok->count > ok->data.data_len)
		ok->count = ok->data.data_len;
	if (f) {
		uint64_t gen = cfile_gen(f);

		if (a)
			cfile_attr_observe(d->cache, f, a, daemon_now(),
					   daemon_ac(w->ex, a->type));
		if (cfile_gen_holds(f, gen)) {
			cache_fill(d->cache, f, c->off,
				   (const uint8_t *)ok->data.data_val, ok->count);
			/* Warmed pages reach the disk tier as fetched ones do. */
			disk_tier_filled(d, f, c->off,
					 (const uint8_t *)ok->data.data_val,
					 ok->count, a);
		}
		cfile_put(d->cache, &f);
	}
	nfs3_count_fetch(d, w->ex->conf->id, ok->count);
	c->off += ok->count;
	c->bytes += ok->count;
	return !ok->eof && ok->count > 0 && !(a && c->off >= a->size);
}

/* The disk tier's stores caught up (or it stopped): READ on. */
static void read_room(void *arg)
{
	struct aconn *c = arg;

	if (walk_abandoned(c))
		return;
	read_step(c);
}

/*
 * While the disk tier's stores are behind (disk_tier_congested), wait
 * for room before the head file's next READ, as a client READ does: the
 * pages warm fills are stored too, their copies lent out of cache_size,
 * so warming no faster than the disk keeps them from being dropped.
 * True when waiting (c busy until read_room).
 */
static bool read_wait_room(struct aconn *c)
{
	struct daemon *d = c->a->d;
	struct witem *w = c->head;
	struct cfile *f;
	bool waits;

	if (!disk_tier_congested(d) ||
	    !(f = cache_find(d->cache, w->fh, w->fhlen)))
		return false;
	c->busy = true;
	waits = disk_tier_load(d, f, NULL, 0, false, read_room, c);
	c->busy = waits;
	cfile_put(d->cache, &f);
	return waits;
}

/* A READ of the head file came back. */
static void read_done(enum upstream_status st, void *res, void *arg)
{
	struct aconn *c = arg;
	READ3res *r = res;

	if (walk_abandoned(c))
		return;
	if (st != UPSTREAM_OK || !r || r->status != NFS3_OK) {
		item_failed(c, "READ", st != UPSTREAM_OK || !r ? -(int)st : (int)r->status);
		return;
	}
	if (read_learn(c, &r->READ3res_u.resok)) {
		/* Progress through a large file: a line per ADMIN_PROGRESS. */
		if (c->off / ADMIN_PROGRESS !=
		    (c->off - r->READ3res_u.resok.count) / ADMIN_PROGRESS)
			conn_line(c, "warming %s: %llu bytes so far",
				  c->head->path, (unsigned long long)c->off);
		if (!read_wait_room(c))
			read_step(c);
		return;
	}
	conn_line(c, "warmed %s: %llu bytes", c->head->path, (unsigned long long)c->off);
	walk_next(c);
}

/* READ the head file's next piece. */
static void read_step(struct aconn *c)
{
	struct witem *w = c->head;
	uint32_t rt = upcall_rtmax(&w->ex->upc);
	READ3args args;

	args.file.data.data_len = (u_int)w->fhlen;
	args.file.data.data_val = (char *)w->fh;
	args.offset = c->off;
	args.count = rt && rt < (1u << 20) ? rt : (1u << 20);
	if (admin_send(c, w, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &args,
		       read_done) != 0)
		item_failed(c, "READ", -1);
}

/* Done with the head item: start the next one, or finish. */
static void walk_next(struct aconn *c)
{
	struct witem *w = c->head;
	char why[96];

	if (w) {
		c->head = w->next;
		if (!c->head)
			c->tail = NULL;
		w->next = NULL;
		queue_free(&(struct aconn){ .head = w });
	}
	if (!c->head) {
		if (c->mode != WALK_WARM) {
			flush_tick(-1, 0, c);	/* the files found */
			return;
		}
		conn_line(c, "warmed %u files, %llu bytes%s", c->files,
			  (unsigned long long)c->bytes,
			  c->failed ? "; some paths failed" : "");
		snprintf(why, sizeof(why), "%u paths failed", c->failed);
		conn_finish(c, c->failed ? 1 : 0, why);
		return;
	}
	if (c->head->i < c->head->nnames)
		lookup_step(c);
	else
		item_start(c);
}

/* warm PATH... / forget TIMEOUT PATH / flush TIMEOUT PATH (the walk part):
 * queue the paths w[first..n) and walk them. */
static void cmd_walk(struct aconn *c, char **w, int n, int first)
{
	if (n <= first || (c->mode != WALK_WARM && n != first + 1)) {
		conn_finish(c, 2, c->mode == WALK_FORGET ? "usage: forget TIMEOUT PATH"
							 : "usage: warm PATH...");
		return;
	}
	for (int i = first; i < n; i++)
		if (queue_path(c, w[i]) != 0)
			c->failed++;
	c->busy = true;
	if (!c->head) {
		conn_finish(c, 1, "no path could be resolved");
		return;
	}
	if (c->head->nnames)
		lookup_step(c);
	else
		item_start(c);
}

/* ---- flush, drop, status ---- */

/* Remember the file of walk item w for the wait at the walk's end. */
static int set_add(struct aconn *c, const struct witem *w)
{
	if (c->nset == c->capset) {
		size_t cap = c->capset ? 2 * c->capset : 16;
		struct fset *s = realloc(c->set, cap * sizeof(*s));

		if (!s)
			return -1;
		c->set = s;
		c->capset = cap;
	}
	memcpy(c->set[c->nset].fh, w->fh, w->fhlen);
	c->set[c->nset++].len = w->fhlen;
	return 0;
}

/* Bytes of f not yet committed upstream. */
static uint64_t file_left(const struct cfile *f)
{
	uint64_t n = 0;

	for (int s = WB_DIRTY; s < WB_NSTATES; s++)
		n += cfile_wb_bytes(f, (enum cache_wb_state)s);
	return n;
}

/* Bytes not yet committed upstream: anywhere, or (a walk's wait) in the
 * files the walk found. */
static uint64_t flush_left(struct aconn *c)
{
	struct daemon *d = c->a->d;
	uint64_t n = 0;

	if (c->mode == WALK_WARM) {
		for (int s = WB_DIRTY; s < WB_NSTATES; s++)
			n += cache_wb_bytes(d->cache, (enum cache_wb_state)s);
		return n;
	}
	for (size_t i = 0; i < c->nset; i++) {
		struct cfile *f = cache_find(d->cache, c->set[i].fh,
					     c->set[i].len);

		if (f)
			n += file_left(f);
		cfile_put(d->cache, &f);
	}
	return n;
}

/* forget's last step: drop what write-back made clean in the files. */
static void forget_written(struct aconn *c)
{
	struct daemon *d = c->a->d;

	for (size_t i = 0; i < c->nset; i++) {
		struct cfile *f = cache_find(d->cache, c->set[i].fh,
					     c->set[i].len);
		uint64_t valid;

		if (!f)
			continue;
		valid = cfile_valid_bytes(f);
		cfile_invalidate(d->cache, f);
		c->bytes += valid - cfile_valid_bytes(f);
		cfile_put(d->cache, &f);
	}
}

/* One of flush's write-back waits ended (its status is not needed: the
 * poll looks at what is left). */
static void flush_wait_done(struct daemon *d, nfsstat3 status, void *arg)
{
	struct flush_ctx *x = arg;

	(void)d;
	(void)status;
	x->pending--;
	if (!x->c && !x->pending)
		free(x);
}

/* Ask write-back to write and commit every file with bytes not yet
 * committed, as a client COMMIT does (writeback_wait WB_WAIT_ALL: no
 * background delays). */
static void flush_kick(struct aconn *c)
{
	struct daemon *d = c->a->d;
	struct cfile *f, *next;

	for (f = cache_wb_file_first(d->cache); f; f = next) {
		struct fstate *fs = fstate_find(f);
		bool mine = c->mode == WALK_WARM;

		next = cache_wb_file_next(d->cache, f);
		for (size_t i = 0; !mine && i < c->nset; i++) {
			size_t len;
			const uint8_t *fh = cfile_fh(f, &len);

			mine = len == c->set[i].len &&
			       memcmp(fh, c->set[i].fh, len) == 0;
		}
		if (mine && fs && fs->ex &&
		    writeback_wait(d, f, fs->ex, WB_WAIT_ALL, 0, 0, flush_wait_done,
				   c->fctx) == 0)
			c->fctx->pending++;
	}
}

/* Nothing is left to write back: say so and end the command. */
static void flush_finish(struct aconn *c)
{
	char why[64];

	if (c->mode == WALK_FORGET) {
		forget_written(c);
		conn_line(c, "forgot %u files, %llu bytes%s", c->files,
			  (unsigned long long)c->bytes,
			  c->failed ? "; some paths failed" : "");
	} else if (c->mode == WALK_FLUSH) {
		conn_line(c, "flushed %u files: nothing left to write back%s",
			  c->files, c->failed ? "; some paths failed" : "");
	} else {
		conn_line(c, "flushed: nothing left to write back");
	}
	snprintf(why, sizeof(why), "%u paths failed", c->failed);
	conn_finish(c, c->failed ? 1 : 0, why);
}

/* The flush poll: done, timed out, or (when its waits ended) wait again. */
static void flush_tick(evutil_socket_t fd, short what, void *arg)
{
	struct aconn *c = arg;
	struct timeval tv = { 0, ADMIN_POLL_US };
	uint64_t left = flush_left(c);
	char why[160];

	(void)fd;
	(void)what;
	if (!c->bev) {
		c->busy = false;
		conn_free(c);
		return;
	}
	if (!left) {
		flush_finish(c);
		return;
	}
	if (mono() >= c->deadline) {
		snprintf(why, sizeof(why), "%s timed out: %llu bytes not yet committed upstream%s",
			 c->mode == WALK_FORGET ? "forget" : "flush",
			 (unsigned long long)left,
			 c->mode == WALK_FORGET ? " (kept)" : "");
		conn_finish(c, 3, why);
		return;
	}
	if (!c->fctx->pending)
		flush_kick(c);
	evtimer_add(c->timer, &tv);
}

/* flush TIMEOUT [PATH] and forget TIMEOUT PATH: set up the wait (until
 * TIMEOUT, w[1]), then flush at once, or walk PATH first. */
static void cmd_flush(struct aconn *c, char **w, int n, enum walk_mode mode)
{
	char *end;
	double t = n >= 2 ? strtod(w[1], &end) : -1;

	if (n < 2 || n > 3 || end == w[1] || *end || !(t >= 0) || t > 86400 ||
	    (mode == WALK_FORGET && n != 3)) {
		conn_finish(c, 2, mode == WALK_FORGET ? "usage: forget TIMEOUT PATH"
						      : "usage: flush TIMEOUT [PATH]");
		return;
	}
	c->timer = evtimer_new(c->a->d->base, flush_tick, c);
	c->fctx = calloc(1, sizeof(*c->fctx));
	if (!c->timer || !c->fctx) {
		conn_finish(c, 1, "out of memory");
		return;
	}
	c->fctx->c = c;
	c->deadline = mono() + t;
	c->busy = true;
	c->mode = n == 3 ? mode : WALK_WARM;
	if (n == 3)
		cmd_walk(c, w, n, 2);
	else
		flush_tick(-1, 0, c);
}

/* drop: every file's clean data, in RAM and in the disk tier, and the
 * outage records. */
static void cmd_drop(struct aconn *c)
{
	struct daemon *d = c->a->d;
	uint64_t n = cache_drop_clean(d->cache);

	disk_tier_drop_all(d);
	stale_drop_kept(d);
	conn_line(c, "dropped %llu bytes; %llu bytes kept until written back",
		  (unsigned long long)n,
		  (unsigned long long)(cache_wb_bytes(d->cache, WB_DIRTY) +
				       cache_wb_bytes(d->cache, WB_WRITING) +
				       cache_wb_bytes(d->cache, WB_UNSTABLE)));
	conn_finish(c, 0, NULL);
}

/* Append "read_steps":{"getattr":N,...}, d's READs in flight by step. */
static void status_read_steps(const struct daemon *d, struct evbuffer *o)
{
	uint64_t n[NFS3_READ_NSTEPS];

	nfs3_read_steps_inflight(d, n);
	evbuffer_add_printf(o, "\"read_steps\":{");
	for (int i = 0; i < NFS3_READ_NSTEPS; i++)
		evbuffer_add_printf(o, "%s\"%s\":%llu", i ? "," : "",
				    nfs3_read_step_name((enum nfs3_read_step)i),
				    (unsigned long long)n[i]);
	evbuffer_add_printf(o, "},");
}

/* Append "write_steps":{"getattr":N,...},"commit_steps":{...}, the WRITEs
 * and COMMITs in flight by step. */
static void status_write_steps(const struct daemon *d, struct evbuffer *o)
{
	uint64_t w[NFS3_WRITE_NSTEPS], c[NFS3_COMMIT_NSTEPS];

	nfs3_write_steps_inflight(d, w);
	nfs3_commit_steps_inflight(d, c);
	evbuffer_add_printf(o, "\"write_steps\":{");
	for (enum nfs3_write_step i = 0; i < NFS3_WRITE_NSTEPS; i++)
		evbuffer_add_printf(o, "%s\"%s\":%llu", i ? "," : "",
				    nfs3_write_step_name(i),
				    (unsigned long long)w[i]);
	evbuffer_add_printf(o, "},\"commit_steps\":{");
	for (enum nfs3_commit_step i = 0; i < NFS3_COMMIT_NSTEPS; i++)
		evbuffer_add_printf(o, "%s\"%s\":%llu", i ? "," : "",
				    nfs3_commit_step_name(i),
				    (unsigned long long)c[i]);
	evbuffer_add_printf(o, "},");
}

/* status: one JSON object. */
static void cmd_status(struct aconn *c)
{
	struct daemon *d = c->a->d;
	struct evbuffer *o = bufferevent_get_output(c->bev);
	struct cache_stats st;

	cache_stats_get(d->cache, &st);
	evbuffer_add_printf(o, "{\"cache_bytes\":%llu,\"budget_bytes\":%llu,"
			    "\"dirty_bytes\":%llu,\"writing_bytes\":%llu,"
			    "\"unstable_bytes\":%llu,\"hole_bytes\":%llu,"
			    "\"pages\":%llu,\"files\":%llu,\"dirty_files\":%llu,"
			    "\"exports\":[",
			    (unsigned long long)st.valid_bytes, (unsigned long long)st.budget,
			    (unsigned long long)st.wb_bytes[WB_DIRTY],
			    (unsigned long long)st.wb_bytes[WB_WRITING],
			    (unsigned long long)st.wb_bytes[WB_UNSTABLE],
			    (unsigned long long)st.hole_bytes, (unsigned long long)st.pages,
			    (unsigned long long)st.files, (unsigned long long)st.dirty_files);
	for (size_t i = 0; i < d->nexports; i++) {
		evbuffer_add_printf(o, "%s{\"path\":", i ? "," : "");
		json_string(o, d->exports[i]->conf->path);
		evbuffer_add_printf(o, ",\"id\":%u,\"upstream_up\":%s}",
				    d->exports[i]->conf->id,
				    upcall_state(&d->exports[i]->upc) == UPSTREAM_UP ?
				    "true" : "false");
	}
	evbuffer_add_printf(o, "],");
	status_read_steps(d, o);
	status_write_steps(d, o);
	lcommit_status_json(d, o);
	evbuffer_add_printf(o, "}\n");
	conn_finish(c, 0, NULL);
}

/* Run the request line. */
static void conn_run(struct aconn *c, char *line)
{
	char *w[ADMIN_MAX_WORDS];
	int n = split_words(line, w, ADMIN_MAX_WORDS);

	if (n <= 0)
		conn_finish(c, 2, "bad request");
	else if (strcmp(w[0], "status") == 0 && n == 1)
		cmd_status(c);
	else if (strcmp(w[0], "drop") == 0 && n == 1)
		cmd_drop(c);
	else if (strcmp(w[0], "flush") == 0)
		cmd_flush(c, w, n, WALK_FLUSH);
	else if (strcmp(w[0], "warm") == 0)
		cmd_walk(c, w, n, 1);
	else if (strcmp(w[0], "forget") == 0)
		cmd_flush(c, w, n, WALK_FORGET);
	else
		conn_finish(c, 2, "unknown command (status, warm, forget, flush, drop)");
}

/* The request line arrived (or part of it). */
static void conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct aconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n = 0;
	char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);

	if (!line) {
		if (evbuffer_get_length(in) > ADMIN_MAX_LINE) {
			bufferevent_disable(bev, EV_READ);
			conn_finish(c, 2, "request line too long");
		}
		return;
	}
	bufferevent_disable(bev, EV_READ);
	conn_run(c, line);
	free(line);
}

/* A client connected. */
static void admin_accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
			    struct sockaddr *sa, int salen, void *arg)
{
	struct admin *a = arg;
	struct aconn *c = calloc(1, sizeof(*c));

	(void)lev;
	(void)sa;
	(void)salen;
	if (!c || !(c->bev = bufferevent_socket_new(a->d->base, fd,
						     BEV_OPT_CLOSE_ON_FREE))) {
		free(c);
		close(fd);
		return;
	}
	c->a = a;
	DL_APPEND(a->conns, c);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_enable(c->bev, EV_READ);
}

/* ---- the listener ---- */

/* Remove a stale socket at path; -1 with err if a daemon answers there. */
static int clear_stale(const struct sockaddr_un *sun, char *err, size_t errlen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc;

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "%s: another process answers on it", sun->sun_path);
		return -1;
	}
	if (errno == ECONNREFUSED)
		unlink(sun->sun_path);
	return 0;
}

/* Bind and listen on sun with mode 0600; the fd, or -1 with err. */
static int bind_0600(const struct sockaddr_un *sun, char *err, size_t errlen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old;
	int rc;

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0177);
	rc = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
	umask(old);
	if (rc != 0 || chmod(sun->sun_path, 0600) != 0 || listen(fd, 16) != 0) {
		snprintf(err, errlen, "%s: %s", sun->sun_path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Create the directory that holds path (mode 0700) when it is missing and
 * its own parent exists, as systemd's RuntimeDirectory= does for the
 * unit: a daemon run by hand then gets /run/nfscached too. 0, or -1 with
 * the reason in err.
 */
static int make_parent(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	snprintf(err, errlen, "%s: %s", dir, strerror(errno));
	return -1;
}

struct admin *admin_start(struct daemon *d, const char *path, char *err,
			  size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct admin *a;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "%s: path too long for a Unix socket", path);
		return NULL;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (make_parent(path, err, errlen) != 0 ||
	    clear_stale(&sun, err, errlen) != 0 ||
	    (fd = bind_0600(&sun, err, errlen)) < 0)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path)) ||
	    !(a->lev = evconnlistener_new(d->base, admin_accept_cb, a,
					  LEV_OPT_CLOSE_ON_FREE, -1, fd))) {
		snprintf(err, errlen, "%s: out of memory", path);
		if (a)
			free(a->path);
		free(a);
		close(fd);
		unlink(path);
		return NULL;
	}
	a->d = d;
	return a;
}

void admin_stop(struct admin **ap)
{
	struct admin *a = *ap;
	struct aconn *c, *tmp;

	if (!a)
		return;
	evconnlistener_free(a->lev);
	DL_FOREACH_SAFE(a->conns, c, tmp) {
		DL_DELETE(a->conns, c);
		c->a = NULL;
		if (c->timer || !c->busy) {
			conn_free(c);
			continue;
		}
		/* An upstream call is out: its callback frees c. */
		bufferevent_free(c->bev);
		c->bev = NULL;
	}
	unlink(a->path);
	free(a->path);
	free(a);
	*ap = NULL;
}
