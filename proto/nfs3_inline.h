/* SPDX-License-Identifier: MIT */
/*
 * nfs3_inline: XDR encoders for the hottest NFSv3 replies written the way
 * rpcgen's own inline mode writes primitive runs (XDR_INLINE, then stores
 * of big-endian words), byte-identical to the generated routines they
 * stand for. A cached READ's reply spent about 1,200 instructions in
 * xdr_READ3res's chain of per-field calls (issue 42's hit-path profile);
 * the same 104 bytes stored directly take about 100.
 *
 * Each is an xdrproc_t: on any other direction (XDR_DECODE, XDR_FREE), on
 * a result it does not cover, or on a stream that gives no inline room
 * (XDR_INLINE returns NULL: a stream other than xdrmem, too little room,
 * or an unaligned buffer) it calls the generated routine, so it can be
 * used wherever that routine is. Pure: no state, any thread.
 */
#ifndef NFSCACHED_PROTO_NFS3_INLINE_H
#define NFSCACHED_PROTO_NFS3_INLINE_H

#include <rpc/rpc.h>

#include "nfs3_prot.h"

/*
 * xdr_READ3res (RFC 1813 section 3.3.6) for x and *res (borrowed; not
 * written when encoding). Encodes inline a READ3resok whose data<> is
 * empty (data_len 0: the form rpcmsg_reply_success_tail takes, the data
 * following by reference); anything else goes to xdr_READ3res. Returns
 * TRUE, or FALSE as xdr_READ3res does (no room, a decode that fails).
 */
bool_t nfs3_inline_xdr_READ3res(XDR *x, READ3res *res);

#endif
