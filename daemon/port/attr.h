/* SPDX-License-Identifier: MIT */
/*
 * attr: conversions between the NFSv3 wire structs (rpcgen, RFC 1813
 * section 2.6) and the cache's plain attribute types, so that cache/ never
 * sees XDR types.
 */
#ifndef NFSCACHED_DAEMON_ATTR_H
#define NFSCACHED_DAEMON_ATTR_H

#include "cache.h"
#include "nfs3_prot.h"
#include "upstream.h"

/* fattr3 -> cattr. */
void attr_from_fattr3(const fattr3 *in, struct cattr *out);

/* cattr -> fattr3. */
void attr_to_fattr3(const struct cattr *in, fattr3 *out);

/* The attributes in p, or NULL when it carries none. *tmp is storage. */
const struct cattr *attr_from_post_op(const post_op_attr *p,
				      struct cattr *tmp);

/* The pre-op attributes in p, or NULL when it carries none. */
const struct cwcc *attr_from_pre_op(const pre_op_attr *p, struct cwcc *tmp);

/* True if a (may be NULL: false) has the same mode, uid and gid as f's
 * cached attributes: an ACCESS answer for a is still an answer for f. */
bool attr_same_perm(const struct cfile *f, const struct cattr *a);

#endif
