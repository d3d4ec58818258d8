/* SPDX-License-Identifier: MIT */
/* attr: wire <-> cache attribute conversions (see attr.h). */
#include <string.h>

#include "attr.h"

void attr_from_fattr3(const fattr3 *in, struct cattr *out)
{
	out->type = (uint32_t)in->type;
	out->mode = in->mode;
	out->nlink = in->nlink;
	out->uid = in->uid;
	out->gid = in->gid;
	out->size = in->size;
	out->used = in->used;
	out->rdev1 = in->rdev.specdata1;
	out->rdev2 = in->rdev.specdata2;
	out->fsid = in->fsid;
	out->fileid = in->fileid;
	out->atime.sec = in->atime.seconds;
	out->atime.nsec = in->atime.nseconds;
	out->mtime.sec = in->mtime.seconds;
	out->mtime.nsec = in->mtime.nseconds;
	out->ctime.sec = in->ctime.seconds;
	out->ctime.nsec = in->ctime.nseconds;
}

void attr_to_fattr3(const struct cattr *in, fattr3 *out)
{
	out->type = (ftype3)in->type;
	out->mode = in->mode;
	out->nlink = in->nlink;
	out->uid = in->uid;
	out->gid = in->gid;
	out->size = in->size;
	out->used = in->used;
	out->rdev.specdata1 = in->rdev1;
	out->rdev.specdata2 = in->rdev2;
	out->fsid = in->fsid;
	out->fileid = in->fileid;
	out->atime.seconds = in->atime.sec;
	out->atime.nseconds = in->atime.nsec;
	out->mtime.seconds = in->mtime.sec;
	out->mtime.nseconds = in->mtime.nsec;
	out->ctime.seconds = in->ctime.sec;
	out->ctime.nseconds = in->ctime.nsec;
}

const struct cattr *attr_from_post_op(const post_op_attr *p,
				      struct cattr *tmp)
{
	if (!p->attributes_follow)
		return NULL;
	attr_from_fattr3(&p->post_op_attr_u.attributes, tmp);
	return tmp;
}

const struct cwcc *attr_from_pre_op(const pre_op_attr *p, struct cwcc *tmp)
{
	const wcc_attr *w = &p->pre_op_attr_u.attributes;

	if (!p->attributes_follow)
		return NULL;
	tmp->size = w->size;
	tmp->mtime.sec = w->mtime.seconds;
	tmp->mtime.nsec = w->mtime.nseconds;
	tmp->ctime.sec = w->ctime.seconds;
	tmp->ctime.nsec = w->ctime.nseconds;
	return tmp;
}

bool attr_same_perm(const struct cfile *f, const struct cattr *a)
{
	const struct cattr *c;

	if (!a || !f || !cfile_has_attr(f))
		return false;
	c = cfile_attr(f);
	return c->mode == a->mode && c->uid == a->uid && c->gid == a->gid;
}
