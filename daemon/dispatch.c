/* SPDX-License-Identifier: MIT */
/*
 * dispatch: the table of procedures nfscached serves, NFSv3 (RFC 1813
 * section 3), MOUNT v3 (RFC 1813 section 5), NLM v4 (RFC 1813 section
 * 6) and the NFSACL v3 side protocol (acl/acl_ops.h). Rows are grouped by program
 * and version and ordered by procedure number, so a row's procedure number
 * is its offset from the program's first row.
 *
 * An NFSv3 row is everything the procedure does: its XDR routines, its
 * handler, its flags (DISPATCH_MUTATING, DISPATCH_NONIDEMPOTENT for the
 * duplicate request cache) and its descriptor (nfs3_proc.h): argument
 * handles and names, the result's attributes, its learn, present and
 * names hooks. "What CREATE teaches the cache" is the CREATE row plus the
 * hooks it names.
 */
#include <limits.h>
#include <stddef.h>

#include "dispatch.h"
#include "mount3_prot.h"
#include "mount_ops.h"
#include "nfs3_fwd.h"
#include "nfs3_learn.h"
#include "nfs3_meta.h"
#include "nfs3_proc.h"
#include "nfs3_prot.h"
#include "nfs3_read.h"
#include "nfs3_write.h"
#include "acl_ops.h"
#include "nfsacl3_prot.h"
#include "nlm4_prot.h"
#include "nlm_granted.h"
#include "nlm_ops.h"
#include "rpcmsg.h"

/* An NFSv3 row: procedure P named name with arguments A and result R
 * (rpcgen types), handler h, flags fl and the descriptor's fields. */
#define NFS_ROW(P, name, A, R, h, fl, by_arg, arg, ...) \
	{ NFS_PROGRAM, NFS_V3, P, "nfs3", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, fl, \
	  &(const struct nfs3_proc){ __VA_ARGS__ }, by_arg, arg }
#define NFS(P, name, A, R, h, fl, ...) \
	NFS_ROW(P, name, A, R, h, fl, false, 0, __VA_ARGS__)
#define MNT(P, name, A, R, h) \
	{ MOUNT_PROGRAM, MOUNT_V3, P, "mount3", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, 0, NULL, false, 0 }
/* An NFSACL v3 row (acl/acl_ops.h). */
#define ACL(P, name, A, R, h) \
	{ NFSACL_PROGRAM, NFSACL_V3, P, "nfsacl3", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, 0, NULL, false, 0 }
/* An NLM v4 row (nlm/nlm_ops.h says what each handler does). */
#define NLM(P, name, A, R, h) \
	{ NLM_PROG, NLM4_VERS, P, "nlm4", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, 0, NULL, false, 0 }

typedef char void_t;
#define xdr_void_t rpcmsg_xdr_void
/* WRITE's arguments, its handle and data left in the record; READ's and
 * GETATTR's, their handle (dispatch.h). */
typedef WRITE3args WRITE3args_inrec;
#define xdr_WRITE3args_inrec dispatch_xdr_write3args
typedef READ3args READ3args_inrec;
#define xdr_READ3args_inrec dispatch_xdr_read3args
typedef GETATTR3args GETATTR3args_inrec;
#define xdr_GETATTR3args_inrec dispatch_xdr_getattr3args

#define MUT DISPATCH_MUTATING
#define NONIDEM (DISPATCH_MUTATING | DISPATCH_NONIDEMPOTENT)

#define A1 NFS3_A1
#define A2 NFS3_A2
#define RESOK NFS3_RESOK
#define SLOT NFS3_SLOT
#define BOTH NFS3_BOTH
#define CHILD NFS3_CHILD
#define ATTRS NFS3_ATTRS
#define DIRWCC NFS3_DIRWCC

/* A row creating a name: CREATE, MKDIR, SYMLINK, MKNOD. */
#define MAKES(T) .nfh = A1(T##3args, where.dir), \
	.nname = A1(T##3args, where.name), .mutates_first = true, \
	.res = CHILD(T##3res), .attr = { DIRWCC(T##3res) }, \
	.names = nfs3_names_create

static const struct dispatch_entry table[] = {
	NFS(NFSPROC3_NULL, "null", void_t, void_t, nfs3_op_null, 0, .nfh = 0),
	NFS(NFSPROC3_GETATTR, "getattr", GETATTR3args_inrec, GETATTR3res,
	    nfs3_op_getattr, 0, .nfh = A1(GETATTR3args, object),
	    .attr = { { AT_FATTR, RESOK(GETATTR3res, obj_attributes), 0 } },
	    .stale = STALE_ATTRS, .present = nfs3_present_getattr,
	    .names = nfs3_names_getattr),
	NFS(NFSPROC3_SETATTR, "setattr", SETATTR3args, SETATTR3res,
	    nfs3_op_forward, NONIDEM, .nfh = A1(SETATTR3args, object),
	    .mutates_first = true,
	    .attr = { SLOT(AT_WCC, SETATTR3res, obj_wcc, obj_wcc) },
	    .present_at = BOTH(SETATTR3res, obj_wcc.after),
	    .learn = nfs3_learn_setattr,
	    .names = nfs3_names_none),
	NFS(NFSPROC3_LOOKUP, "lookup", LOOKUP3args, LOOKUP3res,
	    nfs3_op_lookup, 0, .nfh = A1(LOOKUP3args, what.dir),
	    .nname = A1(LOOKUP3args, what.name),
	    .res = RES_FH, .res_off = RESOK(LOOKUP3res, object),
	    .child_attr = RESOK(LOOKUP3res, obj_attributes),
	    .child_first = true,
	    .attr = { ATTRS(LOOKUP3res, dir_attributes) },
	    .present = nfs3_present_lookup,
	    .names = nfs3_names_lookup, .names_fill = true),
	NFS(NFSPROC3_ACCESS, "access", ACCESS3args, ACCESS3res,
	    nfs3_op_access, 0, .nfh = A1(ACCESS3args, object),
	    .attr = { ATTRS(ACCESS3res, obj_attributes) },
	    .present_at = BOTH(ACCESS3res, obj_attributes),
	    .learn = nfs3_learn_access,
	    .names = nfs3_names_access),
	NFS(NFSPROC3_READLINK, "readlink", READLINK3args, READLINK3res,
	    nfs3_op_forward, 0, .nfh = A1(READLINK3args, symlink),
	    .attr = { ATTRS(READLINK3res, symlink_attributes) },
	    .names = nfs3_names_none),
	NFS_ROW(NFSPROC3_READ, "read", READ3args_inrec, READ3res, nfs3_op_read,
		0, true, offsetof(READ3args, count),
		.nfh = A1(READ3args, file),
		.count = { offsetof(READ3args, count) },
		.names = nfs3_names_none),
	NFS(NFSPROC3_WRITE, "write", WRITE3args_inrec, WRITE3res, nfs3_op_write, MUT,
	    .nfh = A1(WRITE3args, file), .mutates_first = true,
	    .attr = { SLOT(AT_WCC, WRITE3res, file_wcc, file_wcc) },
	    .learn = nfs3_learn_write,
	    .names = nfs3_names_none),
	NFS(NFSPROC3_CREATE, "create", CREATE3args, CREATE3res,
	    nfs3_op_forward, NONIDEM, MAKES(CREATE)),
	NFS(NFSPROC3_MKDIR, "mkdir", MKDIR3args, MKDIR3res,
	    nfs3_op_forward, NONIDEM, MAKES(MKDIR)),
	NFS(NFSPROC3_SYMLINK, "symlink", SYMLINK3args, SYMLINK3res,
	    nfs3_op_forward, NONIDEM, MAKES(SYMLINK),
	    .path = offsetof(SYMLINK3args, symlink.symlink_data)),
	NFS(NFSPROC3_MKNOD, "mknod", MKNOD3args, MKNOD3res,
	    nfs3_op_forward, NONIDEM, MAKES(MKNOD)),
	NFS(NFSPROC3_REMOVE, "remove", REMOVE3args, REMOVE3res,
	    nfs3_op_forward, NONIDEM, .nfh = A1(REMOVE3args, object.dir),
	    .nname = A1(REMOVE3args, object.name), .mutates_first = true,
	    .attr = { DIRWCC(REMOVE3res) }, .names = nfs3_names_remove),
	NFS(NFSPROC3_RMDIR, "rmdir", RMDIR3args, RMDIR3res,
	    nfs3_op_forward, NONIDEM, .nfh = A1(RMDIR3args, object.dir),
	    .nname = A1(RMDIR3args, object.name), .mutates_first = true,
	    .attr = { DIRWCC(RMDIR3res) }, .names = nfs3_names_remove),
	NFS(NFSPROC3_RENAME, "rename", RENAME3args, RENAME3res,
	    nfs3_op_forward, NONIDEM,
	    .nfh = A2(RENAME3args, from.dir, to.dir),
	    .nname = A2(RENAME3args, from.name, to.name),
	    .mutates_first = true,
	    .attr = { SLOT(AT_WCC, RENAME3res, fromdir_wcc, fromdir_wcc),
		      SLOT(AT_WCC, RENAME3res, todir_wcc, todir_wcc) },
	    .names = nfs3_names_rename),
	NFS(NFSPROC3_LINK, "link", LINK3args, LINK3res,
	    nfs3_op_forward, NONIDEM, .nfh = A2(LINK3args, file, link.dir),
	    .nname = A1(LINK3args, link.name), .mutates_first = true,
	    .attr = { SLOT(AT_POSTOP_WCC, LINK3res, file_attributes,
			   file_attributes),
		      SLOT(AT_WCC, LINK3res, linkdir_wcc, linkdir_wcc) },
	    .names = nfs3_names_link),
	NFS(NFSPROC3_READDIR, "readdir", READDIR3args, READDIR3res,
	    nfs3_op_readdir, 0, .nfh = A1(READDIR3args, dir),
	    .count = { offsetof(READDIR3args, count) },
	    .attr = { ATTRS(READDIR3res, dir_attributes) },
	    .names = nfs3_names_readdir, .names_fill = true),
	NFS(NFSPROC3_READDIRPLUS, "readdirplus", READDIRPLUS3args,
	    READDIRPLUS3res, nfs3_op_readdirplus, 0,
	    .nfh = A1(READDIRPLUS3args, dir),
	    .count = { offsetof(READDIRPLUS3args, dircount),
		       offsetof(READDIRPLUS3args, maxcount) },
	    .res = RES_DIRPLUS,
	    .attr = { ATTRS(READDIRPLUS3res, dir_attributes) },
	    .present = nfs3_present_dirplus,
	    .names = nfs3_names_readdir, .names_fill = true),
	NFS(NFSPROC3_FSSTAT, "fsstat", FSSTAT3args, FSSTAT3res,
	    nfs3_op_forward, 0, .nfh = A1(FSSTAT3args, fsroot),
	    .attr = { ATTRS(FSSTAT3res, obj_attributes) },
	    .stale = STALE_REMEMBER,
	    .names = nfs3_names_none),
	NFS(NFSPROC3_FSINFO, "fsinfo", FSINFO3args, FSINFO3res,
	    nfs3_op_forward, 0, .nfh = A1(FSINFO3args, fsroot),
	    .attr = { ATTRS(FSINFO3res, obj_attributes) },
	    .stale = STALE_REMEMBER, .present = nfs3_present_fsinfo,
	    .names = nfs3_names_none),
	NFS(NFSPROC3_PATHCONF, "pathconf", PATHCONF3args, PATHCONF3res,
	    nfs3_op_forward, 0, .nfh = A1(PATHCONF3args, object),
	    .attr = { ATTRS(PATHCONF3res, obj_attributes) },
	    .stale = STALE_REMEMBER,
	    .names = nfs3_names_none),
	NFS(NFSPROC3_COMMIT, "commit", COMMIT3args, COMMIT3res,
	    nfs3_op_commit, MUT, .nfh = A1(COMMIT3args, file),
	    .attr = { ATTRS(COMMIT3res, file_wcc.after) },
	    .present_at = BOTH(COMMIT3res, file_wcc.after),
	    .present = nfs3_present_commit,
	    .names = nfs3_names_none),
	MNT(MOUNTPROC3_NULL, "null", void_t, void_t, mount_op_null),
	MNT(MOUNTPROC3_MNT, "mnt", dirpath, mountres3, mount_op_mnt),
	MNT(MOUNTPROC3_DUMP, "dump", void_t, mountlist, mount_op_dump),
	MNT(MOUNTPROC3_UMNT, "umnt", dirpath, void_t, mount_op_umnt),
	MNT(MOUNTPROC3_UMNTALL, "umntall", void_t, void_t, mount_op_umntall),
	MNT(MOUNTPROC3_EXPORT, "export", void_t, exports, mount_op_export),
	NLM(NLMPROC4_NULL, "null", void_t, void_t, nlm_op_null),
	NLM(NLMPROC4_TEST, "test", nlm4_testargs, nlm4_testres,
	    nlm_op_forward),
	NLM(NLMPROC4_LOCK, "lock", nlm4_lockargs, nlm4_res, nlm_op_forward),
	NLM(NLMPROC4_CANCEL, "cancel", nlm4_cancargs, nlm4_res,
	    nlm_op_forward),
	NLM(NLMPROC4_UNLOCK, "unlock", nlm4_unlockargs, nlm4_res,
	    nlm_op_forward),
	NLM(NLMPROC4_GRANTED, "granted", nlm4_testargs, nlm4_res,
	    nlm_op_granted),
	/* The _MSG forms: an empty reply, the answer by a _RES call. */
	NLM(NLMPROC4_TEST_MSG, "test_msg", nlm4_testargs, void_t,
	    nlm_op_forward),
	NLM(NLMPROC4_LOCK_MSG, "lock_msg", nlm4_lockargs, void_t,
	    nlm_op_forward),
	NLM(NLMPROC4_CANCEL_MSG, "cancel_msg", nlm4_cancargs, void_t,
	    nlm_op_forward),
	NLM(NLMPROC4_UNLOCK_MSG, "unlock_msg", nlm4_unlockargs, void_t,
	    nlm_op_forward),
	NLM(NLMPROC4_GRANTED_MSG, "granted_msg", nlm4_testargs, void_t,
	    nlm_op_granted_msg),
	NLM(NLMPROC4_TEST_RES, "test_res", nlm4_testres, void_t, nlm_op_void),
	NLM(NLMPROC4_LOCK_RES, "lock_res", nlm4_res, void_t, nlm_op_void),
	NLM(NLMPROC4_CANCEL_RES, "cancel_res", nlm4_res, void_t, nlm_op_void),
	NLM(NLMPROC4_UNLOCK_RES, "unlock_res", nlm4_res, void_t, nlm_op_void),
	NLM(NLMPROC4_GRANTED_RES, "granted_res", nlm4_res, void_t,
	    nlm_op_void),
	/* 16: the local statd's reboot callback (Linux lockd's private
	 * procedure, which SM_MON names); 17..19: not NLM v4's. */
	NLM(NLMPROC4_SM_NOTIFY, "sm_notify", nlm_sm_status, void_t,
	    nlm_op_sm_notify),
	NLM(17, "unused17", void_t, void_t, nlm_op_unavail),
	NLM(18, "unused18", void_t, void_t, nlm_op_unavail),
	NLM(19, "unused19", void_t, void_t, nlm_op_unavail),
	NLM(NLMPROC4_SHARE, "share", nlm4_shareargs, nlm4_shareres,
	    nlm_op_share),
	NLM(NLMPROC4_UNSHARE, "unshare", nlm4_shareargs, nlm4_shareres,
	    nlm_op_share),
	NLM(NLMPROC4_NM_LOCK, "nm_lock", nlm4_lockargs, nlm4_res,
	    nlm_op_forward),
	NLM(NLMPROC4_FREE_ALL, "free_all", nlm4_notify, void_t,
	    nlm_op_free_all),
	ACL(NFSACLPROC3_NULL, "null", void_t, void_t, nfsacl_op_null),
	ACL(NFSACLPROC3_GETACL, "getacl", GETACL3args, GETACL3res,
	    nfsacl_op_forward),
	ACL(NFSACLPROC3_SETACL, "setacl", SETACL3args, SETACL3res,
	    nfsacl_op_forward),
};

/*
 * Decode nfs_fh3 *fh (RFC 1813 section 2.5: opaque<NFS3_FHSIZE>) with its
 * bytes left in the stream's buffer (xdr_inline), or, on XDR_FREE, forget
 * them; FALSE on a handle over NFS3_FHSIZE or a stream that ends early or
 * gives no inline room. A handle decoded the generated way cost a calloc,
 * a free and xdr_bytes's calls on every cached READ (issue 42's profile).
 */
static bool_t fh_inrec(XDR *xdrs, nfs_fh3 *fh)
{
	u_int len;
	char *p = NULL;

	if (xdrs->x_op == XDR_FREE) {
		fh->data.data_val = NULL;	/* the record's, not ours */
		fh->data.data_len = 0;
		return TRUE;
	}
	if (!xdr_u_int(xdrs, &len) || len > NFS3_FHSIZE)
		return FALSE;
	if (len && !(p = (char *)xdr_inline(xdrs, (int)((len + 3) & ~3u))))
		return FALSE;
	fh->data.data_len = len;
	fh->data.data_val = p;
	return TRUE;
}

bool_t dispatch_xdr_read3args(XDR *xdrs, READ3args *a)
{
	if (xdrs->x_op == XDR_ENCODE)
		return xdr_READ3args(xdrs, a);
	return fh_inrec(xdrs, &a->file) && (xdrs->x_op == XDR_FREE ||
	    (xdr_offset3(xdrs, &a->offset) && xdr_count3(xdrs, &a->count)));
}

bool_t dispatch_xdr_getattr3args(XDR *xdrs, GETATTR3args *a)
{
	if (xdrs->x_op == XDR_ENCODE)
		return xdr_GETATTR3args(xdrs, a);
	return fh_inrec(xdrs, &a->object);
}

bool_t dispatch_xdr_write3args(XDR *xdrs, WRITE3args *a)
{
	u_int len;
	char *p = NULL;

	if (xdrs->x_op == XDR_ENCODE)
		return xdr_WRITE3args(xdrs, a);
	if (xdrs->x_op == XDR_FREE) {
		a->data.data_val = NULL;	/* the record's, not ours */
		a->data.data_len = 0;
		return fh_inrec(xdrs, &a->file);
	}
	if (!fh_inrec(xdrs, &a->file) || !xdr_offset3(xdrs, &a->offset) ||
	    !xdr_count3(xdrs, &a->count) ||
	    !xdr_stable_how(xdrs, &a->stable) || !xdr_u_int(xdrs, &len) ||
	    len > INT_MAX - 3)
		return FALSE;
	/* The data and its padding to a multiple of 4 (RFC 4506 4.10). */
	if (len && !(p = (char *)xdr_inline(xdrs, (int)((len + 3) & ~3u))))
		return FALSE;
	a->data.data_len = len;
	a->data.data_val = p;
	return TRUE;
}

const size_t dispatch_count = sizeof(table) / sizeof(table[0]);
const struct dispatch_entry *const dispatch_rows = table;

/* The programs served, their version and their rows. */
static const struct proc_program programs[] = {
	{ NFS_PROGRAM, NFS_V3, 0, 22 },
	{ MOUNT_PROGRAM, MOUNT_V3, 22, 6 },
	{ NLM_PROG, NLM4_VERS, 28, 24 },
	{ NFSACL_PROGRAM, NFSACL_V3, 52, 3 },
};

const struct proc_table dispatch_table = {
	.rows = table,
	.count = sizeof(table) / sizeof(table[0]),
	.programs = programs,
	.nprograms = sizeof(programs) / sizeof(programs[0]),
};

const struct dispatch_entry *dispatch_find(uint32_t prog, uint32_t vers,
					   uint32_t proc,
					   enum dispatch_miss *miss,
					   uint32_t *low, uint32_t *high)
{
	return proc_table_find(&dispatch_table, prog, vers, proc, miss, low,
			       high);
}
