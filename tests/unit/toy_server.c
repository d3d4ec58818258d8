/* SPDX-License-Identifier: MIT */
/*
 * toy_server: the fake upstream's responder in nfs3_harness.h, a toy
 * in-memory NFSv3 server (RFC 1813 section 3.3) of one directory.
 */
#include <stdlib.h>
#include <string.h>

#include "nfs3_harness.h"

struct toy_node *toy_node(struct toy *t, uint64_t fileid)
{
	for (int i = 0; i < TOY_MAX_NODES; i++)
		if (t->nodes[i].present && t->nodes[i].fileid == fileid)
			return &t->nodes[i];
	return NULL;
}

/* The node a handle names (NULL if none). */
static struct toy_node *by_fh(struct toy *t, const nfs_fh3 *fh)
{
	uint64_t id = 0;

	if (fh->data.data_len != 8)
		return NULL;
	for (int i = 0; i < 8; i++)
		id = id << 8 | (uint8_t)fh->data.data_val[i];
	return toy_node(t, id);
}

/* Point fh at n's handle bytes. */
static void set_fh(struct toy *t, struct toy_node *n, nfs_fh3 *fh)
{
	uint8_t *b = t->fh[n - t->nodes];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(n->fileid >> (56 - 8 * i));
	fh->data.data_len = 8;
	fh->data.data_val = (char *)b;
}

/* The child of dir named name (NULL if none). */
static struct toy_node *child(struct toy *t, uint64_t dir, const char *name)
{
	for (int i = 0; i < TOY_MAX_NODES; i++)
		if (t->nodes[i].present && t->nodes[i].parent == dir &&
		    t->nodes[i].fileid != dir &&
		    strcmp(t->nodes[i].name, name) == 0)
			return &t->nodes[i];
	return NULL;
}

/* A free node slot, set up as fileid next_id of type (NULL if full). */
static struct toy_node *node_new(struct toy *t, ftype3 type, uint64_t parent,
				 const char *name)
{
	for (int i = 0; i < TOY_MAX_NODES; i++) {
		struct toy_node *n = &t->nodes[i];

		if (n->present)
			continue;
		free(n->data);
		memset(n, 0, sizeof(*n));
		n->present = true;
		n->fileid = t->next_id++;
		n->type = type;
		n->parent = parent;
		snprintf(n->name, sizeof(n->name), "%s", name);
		n->mtime = ++t->clock;
		if (type == NF3REG)
			n->data = calloc(1, TOY_MAX_DATA);
		return n;
	}
	return NULL;
}

uint64_t toy_add_file(struct toy *t, const char *name, uint64_t size)
{
	struct toy_node *n = node_new(t, NF3REG, TOY_ROOT, name);

	n->size = size;
	for (uint64_t i = 0; i < size; i++)
		n->data[i] = (uint8_t)(i * 7 + n->fileid);
	return n->fileid;
}

/* n's attributes. */
static void attrs(const struct toy_node *n, fattr3 *a)
{
	memset(a, 0, sizeof(*a));
	a->type = n->type;
	a->mode = n->type == NF3DIR ? 0777 : 0666;
	a->nlink = n->type == NF3DIR ? 2 : 1;
	a->uid = a->gid = 1000;
	a->size = a->used = n->size;
	a->fsid = 1;
	a->fileid = n->fileid;
	a->mtime.seconds = a->ctime.seconds = n->mtime;
	a->atime = a->mtime;
}

/* A post_op_attr of n (absent when n is NULL). */
static void post(const struct toy_node *n, post_op_attr *p)
{
	p->attributes_follow = n != NULL;
	if (n)
		attrs(n, &p->post_op_attr_u.attributes);
}

/* The after part of a wcc_data; the before part stays as snap() left it
 * (absent unless snapped: res starts zeroed). */
static void wcc(const struct toy_node *n, wcc_data *w)
{
	post(n, &w->after);
}

/* Record n's pre-operation attributes into w (before it changes). */
static void snap(const struct toy_node *n, wcc_data *w)
{
	wcc_attr *b = &w->before.pre_op_attr_u.attributes;

	if (!n)
		return;
	w->before.attributes_follow = TRUE;
	b->size = n->size;
	b->mtime.seconds = b->ctime.seconds = n->mtime;
}

/* n changed: bump its change counter. */
static void touch(struct toy *t, struct toy_node *n)
{
	n->mtime = ++t->clock;
}

/* Grow or shrink file n to size (zeros beyond the old end). */
static void resize(struct toy_node *n, uint64_t size)
{
	if (size > TOY_MAX_DATA)
		size = TOY_MAX_DATA;
	if (size > n->size)
		memset(n->data + n->size, 0, size - n->size);
	n->size = size;
}

/* GETATTR (section 3.3.1). */
static void do_getattr(struct toy *t, const GETATTR3args *a, GETATTR3res *r)
{
	struct toy_node *n = by_fh(t, &a->object);

	r->status = n ? NFS3_OK : NFS3ERR_STALE;
	if (n)
		attrs(n, &r->GETATTR3res_u.resok.obj_attributes);
}

/* SETATTR (section 3.3.2): only the size is applied. */
static void do_setattr(struct toy *t, const SETATTR3args *a, SETATTR3res *r)
{
	struct toy_node *n = by_fh(t, &a->object);
	const set_size3 *sz = &a->new_attributes.size;

	r->status = n ? NFS3_OK : NFS3ERR_STALE;
	snap(n, &r->SETATTR3res_u.resok.obj_wcc);
	if (n && sz->set_it && n->type == NF3REG)
		resize(n, sz->set_size3_u.size);
	if (n)
		touch(t, n);
	wcc(n, &r->SETATTR3res_u.resok.obj_wcc);
}

/* LOOKUP (section 3.3.3). */
static void do_lookup(struct toy *t, const LOOKUP3args *a, LOOKUP3res *r)
{
	struct toy_node *d = by_fh(t, &a->what.dir);
	struct toy_node *n = d ? child(t, d->fileid, a->what.name) : NULL;

	if (!n) {
		r->status = d ? NFS3ERR_NOENT : NFS3ERR_STALE;
		post(d, &r->LOOKUP3res_u.resfail.dir_attributes);
		return;
	}
	r->status = NFS3_OK;
	set_fh(t, n, &r->LOOKUP3res_u.resok.object);
	post(n, &r->LOOKUP3res_u.resok.obj_attributes);
	post(d, &r->LOOKUP3res_u.resok.dir_attributes);
}

/* ACCESS (section 3.3.4): everything asked for is granted but the bits
 * of t->access_deny. */
static void do_access(struct toy *t, const ACCESS3args *a, ACCESS3res *r)
{
	struct toy_node *n = by_fh(t, &a->object);

	r->status = n ? NFS3_OK : NFS3ERR_STALE;
	post(n, &r->ACCESS3res_u.resok.obj_attributes);
	r->ACCESS3res_u.resok.access = a->access & ~t->access_deny;
}

/* READ (section 3.3.6). */
static void do_read(struct toy *t, const READ3args *a, READ3res *r)
{
	struct toy_node *n = by_fh(t, &a->file);
	READ3resok *ok = &r->READ3res_u.resok;
	uint64_t end;

	r->status = n ? NFS3_OK : NFS3ERR_STALE;
	post(n, &ok->file_attributes);
	if (!n)
		return;
	end = a->offset + a->count < n->size ? a->offset + a->count : n->size;
	ok->count = a->offset < end ? (count3)(end - a->offset) : 0;
	ok->eof = end >= n->size;
	ok->data.data_len = ok->count;
	ok->data.data_val = (char *)n->data + (ok->count ? a->offset : 0);
}

/* WRITE (section 3.3.7): committed as asked, with the toy's verifier. */
static void do_write(struct toy *t, const WRITE3args *a, WRITE3res *r)
{
	struct toy_node *n = by_fh(t, &a->file);
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	uint64_t end = a->offset + a->data.data_len;

	if (!n || end > TOY_MAX_DATA) {
		r->status = n ? NFS3ERR_FBIG : NFS3ERR_STALE;
		wcc(n, &r->WRITE3res_u.resfail.file_wcc);
		return;
	}
	snap(n, &ok->file_wcc);
	memcpy(n->data + a->offset, a->data.data_val, a->data.data_len);
	if (end > n->size)
		n->size = end;
	touch(t, n);
	r->status = NFS3_OK;
	wcc(n, &ok->file_wcc);
	ok->count = a->data.data_len;
	ok->committed = a->stable;
	memcpy(ok->verf, t->verf, sizeof(ok->verf));
}

/* COMMIT (section 3.3.21). */
static void do_commit(struct toy *t, const COMMIT3args *a, COMMIT3res *r)
{
	struct toy_node *n = by_fh(t, &a->file);

	r->status = n ? NFS3_OK : NFS3ERR_STALE;
	wcc(n, &r->COMMIT3res_u.resok.file_wcc);
	memcpy(r->COMMIT3res_u.resok.verf, t->verf, NFS3_WRITEVERFSIZE);
}

/* CREATE (section 3.3.8): UNCHECKED and GUARDED. */
static void do_create(struct toy *t, const CREATE3args *a, CREATE3res *r)
{
	struct toy_node *d = by_fh(t, &a->where.dir);
	struct toy_node *n = d ? child(t, d->fileid, a->where.name) : NULL;
	CREATE3resok *ok = &r->CREATE3res_u.resok;

	if (!d || (n && a->how.mode != UNCHECKED)) {
		r->status = d ? NFS3ERR_EXIST : NFS3ERR_STALE;
		wcc(d, &r->CREATE3res_u.resfail.dir_wcc);
		return;
	}
	snap(d, &ok->dir_wcc);
	if (!n)
		n = node_new(t, NF3REG, d->fileid, a->where.name);
	touch(t, d);
	r->status = NFS3_OK;
	ok->obj.handle_follows = TRUE;
	set_fh(t, n, &ok->obj.post_op_fh3_u.handle);
	post(n, &ok->obj_attributes);
	wcc(d, &ok->dir_wcc);
}

/* REMOVE (section 3.3.12). */
static void do_remove(struct toy *t, const REMOVE3args *a, REMOVE3res *r)
{
	struct toy_node *d = by_fh(t, &a->object.dir);
	struct toy_node *n = d ? child(t, d->fileid, a->object.name) : NULL;

	r->status = n ? NFS3_OK : d ? NFS3ERR_NOENT : NFS3ERR_STALE;
	if (n)
		snap(d, &r->REMOVE3res_u.resok.dir_wcc);
	if (n)
		n->present = false;
	if (n)
		touch(t, d);
	wcc(d, &r->REMOVE3res_u.resok.dir_wcc);
}

/* RENAME (section 3.3.14), within the root. */
static void do_rename(struct toy *t, const RENAME3args *a, RENAME3res *r)
{
	struct toy_node *d = by_fh(t, &a->from.dir);
	struct toy_node *n = d ? child(t, d->fileid, a->from.name) : NULL;
	struct toy_node *old = d ? child(t, d->fileid, a->to.name) : NULL;

	r->status = n ? NFS3_OK : d ? NFS3ERR_NOENT : NFS3ERR_STALE;
	if (n) {
		snap(d, &r->RENAME3res_u.resok.fromdir_wcc);
		snap(d, &r->RENAME3res_u.resok.todir_wcc);
		if (old && old != n)
			old->present = false;
		snprintf(n->name, sizeof(n->name), "%s", a->to.name);
		touch(t, d);
	}
	wcc(d, &r->RENAME3res_u.resok.fromdir_wcc);
	wcc(d, &r->RENAME3res_u.resok.todir_wcc);
}

/* The fake upstream's responder: arg is the struct toy. */
enum upstream_status toy_respond(const struct fake_call *c, void *res,
				 void *arg)
{
	struct toy *t = arg;

	switch (c->proc) {
	case NFSPROC3_GETATTR: do_getattr(t, c->args, res); break;
	case NFSPROC3_SETATTR: do_setattr(t, c->args, res); break;
	case NFSPROC3_LOOKUP: do_lookup(t, c->args, res); break;
	case NFSPROC3_ACCESS: do_access(t, c->args, res); break;
	case NFSPROC3_READ: do_read(t, c->args, res); break;
	case NFSPROC3_WRITE: do_write(t, c->args, res); break;
	case NFSPROC3_CREATE: do_create(t, c->args, res); break;
	case NFSPROC3_REMOVE: do_remove(t, c->args, res); break;
	case NFSPROC3_RENAME: do_rename(t, c->args, res); break;
	case NFSPROC3_COMMIT: do_commit(t, c->args, res); break;
	default: *(nfsstat3 *)res = NFS3ERR_NOTSUPP; break;
	}
	return UPSTREAM_OK;
}

/* Start t with the root directory only. */
void toy_init(struct toy *t)
{
	memset(t, 0, sizeof(*t));
	t->next_id = TOY_ROOT;
	node_new(t, NF3DIR, TOY_ROOT, "");
	memcpy(t->verf, "verf0001", NFS3_WRITEVERFSIZE);
}

/* Free t's file data. */
void toy_fini(struct toy *t)
{
	for (int i = 0; i < TOY_MAX_NODES; i++)
		free(t->nodes[i].data);
}
