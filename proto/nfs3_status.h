/* SPDX-License-Identifier: MIT */
/*
 * nfs3_status: the nfsstat3 values of RFC 1813 s2.6 by name, one table
 * for the reply counters' status label (rpc/server.c, ctl/metrics.c) and
 * for log lines (write-back, local commit, the NFSv3 and MOUNT handlers).
 * Constant tables only: any thread.
 */
#ifndef NFSCACHED_PROTO_NFS3_STATUS_H
#define NFSCACHED_PROTO_NFS3_STATUS_H

#include <stdint.h>

/*
 * The nfsstat3 values of RFC 1813 s2.6, X(name, value); the names are the
 * status label of nfscached_nfs3_replies_total. A reply whose status is
 * none of them counts as NFS3_STATUS_OTHER ("other").
 */
#define NFS3_STATUSES(X) \
	X(NFS3_OK, 0) X(NFS3ERR_PERM, 1) X(NFS3ERR_NOENT, 2) X(NFS3ERR_IO, 5) \
	X(NFS3ERR_NXIO, 6) X(NFS3ERR_ACCES, 13) X(NFS3ERR_EXIST, 17) \
	X(NFS3ERR_XDEV, 18) X(NFS3ERR_NODEV, 19) X(NFS3ERR_NOTDIR, 20) \
	X(NFS3ERR_ISDIR, 21) X(NFS3ERR_INVAL, 22) X(NFS3ERR_FBIG, 27) \
	X(NFS3ERR_NOSPC, 28) X(NFS3ERR_ROFS, 30) X(NFS3ERR_MLINK, 31) \
	X(NFS3ERR_NAMETOOLONG, 63) X(NFS3ERR_NOTEMPTY, 66) \
	X(NFS3ERR_DQUOT, 69) X(NFS3ERR_STALE, 70) X(NFS3ERR_REMOTE, 71) \
	X(NFS3ERR_BADHANDLE, 10001) X(NFS3ERR_NOT_SYNC, 10002) \
	X(NFS3ERR_BAD_COOKIE, 10003) X(NFS3ERR_NOTSUPP, 10004) \
	X(NFS3ERR_TOOSMALL, 10005) X(NFS3ERR_SERVERFAULT, 10006) \
	X(NFS3ERR_BADTYPE, 10007) X(NFS3ERR_JUKEBOX, 10008)

enum nfs3_status_index {
#define X(s, v) NFS3_STATUS_##s,
	NFS3_STATUSES(X)
#undef X
	NFS3_STATUS_OTHER,
	NFS3_NSTATUSES
};

/* The enum nfs3_status_index of nfsstat3 value v (NFS3_STATUS_OTHER if
 * RFC 1813 s2.6 lists no such value). */
unsigned nfs3_status_index(uint32_t v);

/* The status label of index i ("NFS3_OK", "NFS3ERR_NOENT", ..., "other"),
 * NULL past the end. Static storage. */
const char *nfs3_status_label(unsigned i);

/*
 * The RFC 1813 s2.6 name of nfsstat3 value v ("NFS3ERR_NOSPC"), for log
 * lines; a value the RFC does not list is "an unknown nfsstat3". Static
 * storage.
 */
const char *nfs3_status_name(uint32_t v);

/*
 * The lower-case name of NFSv3 procedure proc (RFC 1813 section 3:
 * "getattr", "readdirplus"), the procedure label of the upstream metric
 * families; NULL past COMMIT (21). Static storage. The procedure table's
 * NFSv3 rows carry the same names (unit.metrics_table checks it).
 */
const char *nfs3_proc_label(uint32_t proc);

#endif
