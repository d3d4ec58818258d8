/* SPDX-License-Identifier: MIT */
/* nfs3_inline: see nfs3_inline.h. */
#include "nfs3_inline.h"

#include <stdint.h>

/* Store v big-endian at p (RFC 4506 section 4.1); the next word. */
static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

/* A hyper: the high word first (RFC 4506 section 4.5). */
static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

/* A bool as xdr_bool writes it: 1 for any non-zero value. */
static uint8_t *put_bool(uint8_t *p, bool_t b)
{
	return put32(p, b ? 1 : 0);
}

#define FATTR3_BYTES 84		/* RFC 1813 section 2.6: 13 fields */

/* fattr3 in RFC 1813 section 2.6's order. */
static uint8_t *put_fattr3(uint8_t *p, const fattr3 *a)
{
	p = put32(p, (uint32_t)a->type);
	p = put32(p, a->mode);
	p = put32(p, a->nlink);
	p = put32(p, a->uid);
	p = put32(p, a->gid);
	p = put64(p, a->size);
	p = put64(p, a->used);
	p = put32(p, a->rdev.specdata1);
	p = put32(p, a->rdev.specdata2);
	p = put64(p, a->fsid);
	p = put64(p, a->fileid);
	p = put32(p, a->atime.seconds);
	p = put32(p, a->atime.nseconds);
	p = put32(p, a->mtime.seconds);
	p = put32(p, a->mtime.nseconds);
	p = put32(p, a->ctime.seconds);
	return put32(p, a->ctime.nseconds);
}

bool_t nfs3_inline_xdr_READ3res(XDR *x, READ3res *res)
{
	const READ3resok *ok = &res->READ3res_u.resok;
	const post_op_attr *pa = &ok->file_attributes;
	/* status, attributes_follow, [fattr3], count, eof, data's length */
	u_int n = 4 + 4 + (pa->attributes_follow ? FATTR3_BYTES : 0) + 12;
	uint8_t *p;

	/* attributes_follow is a union's discriminant: the generated code
	 * refuses a value other than TRUE and FALSE, and so do we, by
	 * letting it answer. */
	if (x->x_op != XDR_ENCODE || res->status != NFS3_OK ||
	    ok->data.data_len != 0 ||
	    (pa->attributes_follow != TRUE && pa->attributes_follow != FALSE))
		return xdr_READ3res(x, res);
	p = (uint8_t *)XDR_INLINE(x, n);
	if (!p)
		return xdr_READ3res(x, res);
	p = put32(p, (uint32_t)NFS3_OK);
	p = put_bool(p, pa->attributes_follow);
	if (pa->attributes_follow)
		p = put_fattr3(p, &pa->post_op_attr_u.attributes);
	p = put32(p, ok->count);
	p = put_bool(p, ok->eof);
	put32(p, 0);		/* data<>: empty */
	return TRUE;
}
