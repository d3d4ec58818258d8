/* SPDX-License-Identifier: MIT */
/*
 * dispatch: the table of procedures nfscached serves, NFSv3 (RFC 1813
 * section 3) and MOUNT v3 (RFC 1813 section 5). Rows are grouped by program
 * and version and ordered by procedure number, so a row's procedure number
 * is its offset from the program's first row.
 */
#include <stddef.h>

#include "dispatch.h"
#include "mount3_prot.h"
#include "nfs3_meta.h"
#include "nfs3_prot.h"
#include "ops.h"

#define NFS(P, name, A, R, h, fl) \
	{ NFS_PROGRAM, NFS_V3, P, "nfs3", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, fl }
#define MNT(P, name, A, R, h) \
	{ MOUNT_PROGRAM, MOUNT_V3, P, "mount3", name, (xdrproc_t)xdr_##A, \
	  (xdrproc_t)xdr_##R, sizeof(A), sizeof(R), h, 0 }

typedef char void_t;
#define xdr_void_t dispatch_xdr_void

#define MUT DISPATCH_MUTATING
#define NONIDEM (DISPATCH_MUTATING | DISPATCH_NONIDEMPOTENT)

static const struct dispatch_entry table[] = {
	NFS(NFSPROC3_NULL, "null", void_t, void_t, nfs3_op_null, 0),
	NFS(NFSPROC3_GETATTR, "getattr", GETATTR3args, GETATTR3res, nfs3_op_getattr, 0),
	NFS(NFSPROC3_SETATTR, "setattr", SETATTR3args, SETATTR3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_LOOKUP, "lookup", LOOKUP3args, LOOKUP3res, nfs3_op_lookup, 0),
	NFS(NFSPROC3_ACCESS, "access", ACCESS3args, ACCESS3res, nfs3_op_access, 0),
	NFS(NFSPROC3_READLINK, "readlink", READLINK3args, READLINK3res, nfs3_op_forward, 0),
	NFS(NFSPROC3_READ, "read", READ3args, READ3res, nfs3_op_read, 0),
	NFS(NFSPROC3_WRITE, "write", WRITE3args, WRITE3res, nfs3_op_write, MUT),
	NFS(NFSPROC3_CREATE, "create", CREATE3args, CREATE3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_MKDIR, "mkdir", MKDIR3args, MKDIR3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_SYMLINK, "symlink", SYMLINK3args, SYMLINK3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_MKNOD, "mknod", MKNOD3args, MKNOD3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_REMOVE, "remove", REMOVE3args, REMOVE3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_RMDIR, "rmdir", RMDIR3args, RMDIR3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_RENAME, "rename", RENAME3args, RENAME3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_LINK, "link", LINK3args, LINK3res, nfs3_op_forward, NONIDEM),
	NFS(NFSPROC3_READDIR, "readdir", READDIR3args, READDIR3res, nfs3_op_readdir, 0),
	NFS(NFSPROC3_READDIRPLUS, "readdirplus", READDIRPLUS3args, READDIRPLUS3res, nfs3_op_readdirplus, 0),
	NFS(NFSPROC3_FSSTAT, "fsstat", FSSTAT3args, FSSTAT3res, nfs3_op_forward, 0),
	NFS(NFSPROC3_FSINFO, "fsinfo", FSINFO3args, FSINFO3res, nfs3_op_forward, 0),
	NFS(NFSPROC3_PATHCONF, "pathconf", PATHCONF3args, PATHCONF3res, nfs3_op_forward, 0),
	NFS(NFSPROC3_COMMIT, "commit", COMMIT3args, COMMIT3res, nfs3_op_commit, MUT),
	MNT(MOUNTPROC3_NULL, "null", void_t, void_t, mount_op_null),
	MNT(MOUNTPROC3_MNT, "mnt", dirpath, mountres3, mount_op_mnt),
	MNT(MOUNTPROC3_DUMP, "dump", void_t, mountlist, mount_op_dump),
	MNT(MOUNTPROC3_UMNT, "umnt", dirpath, void_t, mount_op_umnt),
	MNT(MOUNTPROC3_UMNTALL, "umntall", void_t, void_t, mount_op_umntall),
	MNT(MOUNTPROC3_EXPORT, "export", void_t, exports, mount_op_export),
};

bool_t dispatch_xdr_void(XDR *xdrs, void *unused)
{
	(void)xdrs;
	(void)unused;
	return TRUE;
}

const size_t dispatch_count = sizeof(table) / sizeof(table[0]);
const struct dispatch_entry *const dispatch_rows = table;

/* The programs served, their version and their rows. */
static const struct {
	uint32_t prog, vers;
	size_t first, nprocs;
} programs[] = {
	{ NFS_PROGRAM, NFS_V3, 0, 22 },
	{ MOUNT_PROGRAM, MOUNT_V3, 22, 6 },
};

const struct dispatch_entry *dispatch_find(uint32_t prog, uint32_t vers,
					   uint32_t proc,
					   enum dispatch_miss *miss,
					   uint32_t *low, uint32_t *high)
{
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		if (programs[i].prog != prog)
			continue;
		if (programs[i].vers != vers) {
			*miss = DISPATCH_PROG_MISMATCH;
			*low = *high = programs[i].vers;
			return NULL;
		}
		if (proc >= programs[i].nprocs) {
			*miss = DISPATCH_PROC_UNAVAIL;
			return NULL;
		}
		return &table[programs[i].first + proc];
	}
	*miss = DISPATCH_PROG_UNAVAIL;
	return NULL;
}
