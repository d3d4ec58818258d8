/* SPDX-License-Identifier: MIT */
/*
 * dispatch: the procedure table. One row per (program, version, procedure)
 * the proxy serves: XDR routines for arguments and results, the handler,
 * flags, the row's index into per-procedure counters and, for NFSv3, the
 * procedure's descriptor (nfs3_proc.h), so that what one procedure does
 * is its one row.
 */
#ifndef NFSCACHED_DAEMON_DISPATCH_H
#define NFSCACHED_DAEMON_DISPATCH_H

#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "nfs3_prot.h"
#include "proc_table.h"

/*
 * The WRITE row's argument routine: xdr_WRITE3args (RFC 1813 section
 * 3.3.7), except that XDR_DECODE leaves a->data.data_val and the file
 * handle's bytes (a->file.data.data_val) pointing into the stream's own
 * buffer (xdr_inline) instead of copying them into new allocations, and
 * XDR_FREE frees nothing (it forgets the pointers). So decode only
 * from an xdrmem stream over a 4-byte aligned buffer that outlives *a
 * (libtirpc's xdr_inline returns NULL on an unaligned one, and the
 * decode then fails): the server decodes from the request's record
 * (malloc'd, arguments at a multiple of 4), freed after its arguments
 * (req_release). XDR_ENCODE is xdr_WRITE3args. Returns FALSE, as
 * xdr_WRITE3args, when the stream ends early; data of over INT_MAX bytes
 * is refused too.
 */
bool_t dispatch_xdr_write3args(XDR *xdrs, WRITE3args *a);

/*
 * The READ and GETATTR rows' argument routines: xdr_READ3args and
 * xdr_GETATTR3args (RFC 1813 sections 3.3.6, 3.3.1) with the file
 * handle's bytes left in the stream's buffer as dispatch_xdr_write3args
 * leaves them, under the same rules (an aligned xdrmem buffer that
 * outlives *a; XDR_FREE forgets the pointer; XDR_ENCODE is the generated
 * routine). FALSE on a handle over NFS3_FHSIZE bytes or a stream that
 * ends early. Any thread (pure).
 */
bool_t dispatch_xdr_read3args(XDR *xdrs, READ3args *a);
bool_t dispatch_xdr_getattr3args(XDR *xdrs, GETATTR3args *a);

/* The table the daemon serves (d->procs): its rows and programs. */
extern const struct proc_table dispatch_table;

/* The rows, dispatch_count of them. */
extern const struct dispatch_entry *const dispatch_rows;
extern const size_t dispatch_count;

/* The row's position in dispatch_rows: the index of per-row counters. */
static inline size_t dispatch_index(const struct dispatch_entry *e)
{
	return (size_t)(e - dispatch_rows);
}

/*
 * Find the row for prog/vers/proc. Returns it, or NULL with *miss set (and
 * *low and *high for PROG_MISMATCH) as RFC 5531 section 9 asks.
 */
const struct dispatch_entry *dispatch_find(uint32_t prog, uint32_t vers,
					   uint32_t proc,
					   enum dispatch_miss *miss,
					   uint32_t *low, uint32_t *high);

#endif
