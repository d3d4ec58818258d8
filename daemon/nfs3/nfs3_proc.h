/* SPDX-License-Identifier: MIT */
/*
 * nfs3_proc: the per-procedure descriptor of an NFSv3 procedure (RFC 1813
 * section 3.3). Each NFSv3 row of the procedure table (daemon/dispatch.c)
 * points at one: where the procedure's arguments hold handles, names,
 * transfer counts and a symlink target (the security boundary,
 * nfs3_guard.h), the handle its result returns and that object's
 * attributes, whether it changes its first handle's object, where its
 * result carries attributes (post_op_attr, wcc_data) in resok and resfail
 * and for which of the call's files, what an outage may answer from
 * remembered state, and the hooks that learn or present more than the
 * generic code (nfs3_learn.h) does. Offsets are into the rpcgen structs of
 * nfs3_prot.h. Handles and names are counted (nfh, nname); for the
 * optional slots (path, count, res_off, child_attr, present_at) 0 means
 * "none", since none can sit at offset 0: a result starts with its
 * status, and such arguments with a handle.
 */
#ifndef NFSCACHED_DAEMON_NFS3_PROC_H
#define NFSCACHED_DAEMON_NFS3_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "upstream.h"

struct req;
struct export_rt;

/* The new handle a successful result carries. */
enum nfs3_res_fh {
	RES_NONE = 0,
	RES_FH,		/* an nfs_fh3 in resok */
	RES_POSTOP_FH,	/* a post_op_fh3 in resok */
	RES_DIRPLUS,	/* READDIRPLUS entries' name_handle */
};

/* What a result carries about one of the call's files. */
enum nfs3_attr_kind {
	AT_NONE = 0,
	AT_FATTR,	/* an fattr3, resok only: observed */
	AT_POSTOP,	/* a post_op_attr: observed */
	AT_WCC,		/* a wcc_data: closes the file's mutation bracket */
	AT_POSTOP_WCC,	/* a post_op_attr closing the bracket as a wcc_data
			 * without pre-op attributes (LINK's file) */
};

/* Where: offsets into the result for NFS3_OK and for an error. */
struct nfs3_attr_slot {
	enum nfs3_attr_kind kind;
	size_t ok, fail;
};

/* What stale_on_error may answer for the procedure during an outage. */
enum nfs3_stale {
	STALE_NONE = 0,
	STALE_ATTRS,		/* GETATTR: the file's expired attributes */
	STALE_REMEMBER,		/* the last successful answer (stale.h) */
};

/*
 * A forwarded call (nfs3_fwd.c): the export, the identity, and the cached
 * files whose attributes its reply will tell about (the object of the
 * first handle, and RENAME's target directory or LINK's directory), with
 * the generation each had when the call was sent. What the hooks read.
 */
struct nfs3_fwd {
	struct export_rt *ex;
	struct nfs_cred uc;
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
				 * writer (for learn hooks) */
};

/*
 * A learn or present hook: r is the call (arguments already unwrapped to
 * upstream handles), w its forwarding state, res the decoded upstream
 * result (still upstream handles), which a present hook may change.
 */
typedef void nfs3_hook_fn(struct req *r, struct nfs3_fwd *w, void *res);

/*
 * A names hook: what a reply teaches the metadata cache (names, negative
 * names, listings; nfs3_meta.c). cc is the identity the call was made
 * with, dir the cached file of the call's first handle (may be NULL).
 */
typedef void nfs3_names_fn(struct req *r, struct export_rt *ex,
			   const struct nfs_cred *cc, struct cfile *dir,
			   void *res);

/* One NFSv3 procedure. */
struct nfs3_proc {
	unsigned nfh;			/* argument handles (nfs_fh3) */
	size_t fh[2];
	unsigned nname;			/* argument names (filename3) */
	size_t name[2];
	size_t path;			/* argument nfspath3 (SYMLINK) */
	size_t count[2];		/* argument counts clamped to rtmax */
	enum nfs3_res_fh res;		/* a new handle in resok */
	size_t res_off;
	size_t child_attr;		/* resok post_op_attr of that object */
	bool child_first;		/* observed before the call's files */
	bool mutates_first;		/* changes fh[0]'s object */
	struct nfs3_attr_slot attr[2];	/* about fh[0]'s and fh[1]'s files */
	size_t present_at[2];		/* post_op_attr of fh[0]'s file shown
					 * as the proxy sees it: ok, fail */
	enum nfs3_stale stale;
	nfs3_hook_fn *learn;		/* more learning, after the slots */
	nfs3_hook_fn *present;		/* more presenting, before
					 * present_at */
	nfs3_names_fn *names;		/* the metadata cache's learning */
	bool names_fill;		/* names only while dir's generation
					 * is what it was at the call */
};

/* Row-building shorthands for the table (offsets into T). */
#define NFS3_A1(T, f) 1, { offsetof(T, f), 0 }
#define NFS3_A2(T, f, g) 2, { offsetof(T, f), offsetof(T, g) }
#define NFS3_RESOK(T, f) offsetof(T, T##_u.resok.f)
#define NFS3_RESFAIL(T, f) offsetof(T, T##_u.resfail.f)
#define NFS3_SLOT(k, T, okf, failf) \
	{ k, NFS3_RESOK(T, okf), NFS3_RESFAIL(T, failf) }
#define NFS3_BOTH(T, f) { NFS3_RESOK(T, f), NFS3_RESFAIL(T, f) }
#define NFS3_CHILD(T) \
	RES_POSTOP_FH, NFS3_RESOK(T, obj), NFS3_RESOK(T, obj_attributes)
#define NFS3_ATTRS(T, f) NFS3_SLOT(AT_POSTOP, T, f, f)
#define NFS3_DIRWCC(T) NFS3_SLOT(AT_WCC, T, dir_wcc, dir_wcc)

#endif
