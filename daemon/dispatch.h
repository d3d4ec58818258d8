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
 * 3.3.7), except that XDR_DECODE leaves a->data.data_val pointing into
 * the stream's own buffer (xdr_inline) instead of copying the data into a
 * new allocation, and XDR_FREE frees only the file handle. So decode only
 * from an xdrmem stream over a 4-byte aligned buffer that outlives *a
 * (libtirpc's xdr_inline returns NULL on an unaligned one, and the
 * decode then fails): the server decodes from the request's record
 * (malloc'd, arguments at a multiple of 4), freed after its arguments
 * (req_release). XDR_ENCODE is xdr_WRITE3args. Returns FALSE, as
 * xdr_WRITE3args, when the stream ends early; data of over INT_MAX bytes
 * is refused too.
 */
bool_t dispatch_xdr_write3args(XDR *xdrs, WRITE3args *a);

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
