/* SPDX-License-Identifier: MIT */
/*
 * nfs3_learn: what a forwarded call's upstream reply teaches the cache,
 * and how the reply is shown to the client. The generic code is a loop
 * over the procedure's descriptor (nfs3_proc.h): its attribute slots
 * observe attributes or close the mutation bracket opened when the call
 * was sent (cache.h cfile_mutation_begin/end), the new object's
 * attributes are observed, then the row's learn hook and its names hook
 * (the metadata cache, nfs3_meta.h) run. Presenting shows the proxy's size
 * and times of files it holds writes of (present_at, the present hook).
 *
 * The hooks below are the ones the table's rows name (daemon/dispatch.c).
 * All take the call r (handles unwrapped), its forwarding state w and the
 * decoded upstream result res (upstream handles).
 */
#ifndef NFSCACHED_DAEMON_NFS3_LEARN_H
#define NFSCACHED_DAEMON_NFS3_LEARN_H

#include "cache.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"

struct daemon;
struct req;

/* The cached file of upstream handle fh (a new reference, cache_get), or
 * NULL when the cache has no room. */
struct cfile *nfs3_fh_file(struct daemon *d, const nfs_fh3 *fh);

/* Find the cached files r is about (w->f, w->f2 with their generations)
 * and open their mutation brackets as r's row says. */
void nfs3_learn_begin(struct req *r, struct nfs3_fwd *w);

/* Feed reply res's attributes, data and names into the caches. */
void nfs3_learn_reply(struct req *r, struct nfs3_fwd *w, void *res);

/* No usable reply came: close what nfs3_learn_begin opened (the files'
 * cached data is dropped as after another writer's change). */
void nfs3_learn_failed(struct req *r, struct nfs3_fwd *w);

/* Show the proxy's view of files it holds writes of in res. */
void nfs3_learn_present(struct req *r, struct nfs3_fwd *w, void *res);

/* learn hooks: SETATTR's new size truncates (or extends with zeros) the
 * cache; ACCESS records the credential's answer; a passed-through WRITE's
 * bytes enter the cache. */
nfs3_hook_fn nfs3_learn_setattr, nfs3_learn_access, nfs3_learn_write;

/* present hooks: GETATTR and LOOKUP's child and READDIRPLUS's entries as
 * the proxy sees them; COMMIT under the proxy's write verifier; FSINFO
 * clamped to what the proxy can carry (nfs3_guard_clamp_fsinfo). */
nfs3_hook_fn nfs3_present_getattr, nfs3_present_lookup, nfs3_present_dirplus,
	nfs3_present_commit, nfs3_present_fsinfo;

#endif
