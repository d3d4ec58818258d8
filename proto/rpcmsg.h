/* SPDX-License-Identifier: MIT */
/*
 * rpcmsg: ONC RPC version 2 call headers and reply headers (RFC 5531
 * sections 8-9), AUTH_NONE and AUTH_SYS credentials (RFC 5531 appendix A).
 *
 * Decoding is bounded: credential and verifier bodies are at most 400 bytes,
 * AUTH_SYS machine names at most 255 bytes and at most 16 groups. Reply
 * encoders append a whole framed record (record mark included, see rpcrec)
 * to an evbuffer, so a reply can be copied byte for byte (the duplicate
 * request cache keeps such copies).
 */
#ifndef NFSCACHED_PROTO_RPCMSG_H
#define NFSCACHED_PROTO_RPCMSG_H

#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#include "cred.h"

struct evbuffer;

#define RPCMSG_MAX_GIDS		NFS_CRED_MAX_GIDS
#define RPCMSG_MAX_MACHINE	255
#define RPCMSG_MAX_AUTH_BYTES	400

/* A decoded call header. args_off is where the procedure's arguments start
 * inside the record that was decoded. The caller's identity is cred
 * (AUTH_NONE: uid and gid 65534, no groups; cred.machine is left NULL: the
 * machine name the header carried is machine). */
struct rpcmsg_call {
	uint32_t xid;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	uint32_t flavor;			/* AUTH_NONE or AUTH_SYS */
	uint32_t stamp;				/* AUTH_SYS stamp */
	struct nfs_cred cred;
	char machine[RPCMSG_MAX_MACHINE + 1];	/* NUL-terminated */
	size_t args_off;
};

enum rpcmsg_status {
	RPCMSG_OK = 0,
	RPCMSG_NOT_CALL,	/* too short, not a CALL, or undecodable
				 * header before the xid is known: close */
	RPCMSG_GARBAGE,		/* header cut short after the xid: reply
				 * GARBAGE_ARGS */
	RPCMSG_RPC_MISMATCH,	/* rpcvers != 2: reply MSG_DENIED RPC_MISMATCH */
	RPCMSG_AUTH_BADCRED,	/* malformed credential or verifier: AUTH_BADCRED */
	RPCMSG_AUTH_TOOWEAK,	/* flavor other than AUTH_NONE/AUTH_SYS */
};

/*
 * Decode the call header at the start of rec[0..len). On any status other
 * than RPCMSG_NOT_CALL, call->xid is set so the caller can reply. Nothing
 * is allocated. Follows RFC 5531 section 9 (call_body) and appendix A.
 */
enum rpcmsg_status rpcmsg_decode_call(const uint8_t *rec, size_t len,
				      struct rpcmsg_call *call);

/*
 * Append a framed MSG_ACCEPTED SUCCESS reply for xid whose results are
 * encoded by proc from res (borrowed). Verifier is AUTH_NONE.
 * Returns 0, or -1 if encoding failed (nothing is appended then).
 */
int rpcmsg_reply_success(struct evbuffer *out, uint32_t xid,
			 xdrproc_t proc, const void *res);

/*
 * Release callback of rpcmsg_reply_success_tail: called once with the
 * tail, its length and the caller's argument when the reply no longer
 * needs the bytes (written to the socket, the buffer freed, or at once on
 * failure). Matches libevent's evbuffer_ref_cleanup_cb.
 */
typedef void (*rpcmsg_tail_release)(const void *tail, size_t len, void *arg);

/* A tail up to this many bytes is copied into the record before
 * rpcmsg_reply_success_tail returns, never referenced. */
#define RPCMSG_TAIL_COPY_MAX	4096

/*
 * rpcmsg_reply_success for a result whose last field is a variable-length
 * opaque (READ3resok's data, RFC 1813 section 3.3.6), with that opaque's
 * bytes not copied: res must encode it as empty (data_len 0); its content
 * is tail[0..len), appended to out by reference (evbuffer_add_reference)
 * after the encoded part, whose final length word is set to len, and
 * followed by the XDR padding (RFC 4506 section 4.10). One record (a
 * record mark's 31-bit length at most), appended whole or not at all.
 * A tail of at most RPCMSG_TAIL_COPY_MAX bytes is copied instead, with
 * the rest of the record into one piece of out, and released before the
 * return: for a small READ a copy costs less than the scratch buffer and
 * the reference, and such a tail may be memory the caller only borrows
 * for the call (with a release that does nothing).
 * Ownership of tail passes to the call: release(tail, len, arg) runs once,
 * when out no longer needs it, also on failure (before the return).
 * release must not be NULL. Returns 0, or -1 when encoding failed, res's
 * last word was not an empty opaque's length, the encoded part exceeds
 * 1 KiB, the record is too long, or memory ran out.
 */
int rpcmsg_reply_success_tail(struct evbuffer *out, uint32_t xid,
			      xdrproc_t proc, const void *res,
			      const void *tail, size_t len,
			      rpcmsg_tail_release release, void *arg);

/*
 * Append a framed MSG_ACCEPTED reply with accept_stat stat (PROG_UNAVAIL,
 * PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR); for PROG_MISMATCH, low and high
 * give the supported version range (ignored otherwise). Returns 0 or -1.
 */
int rpcmsg_reply_accept_error(struct evbuffer *out, uint32_t xid,
			      enum accept_stat stat, uint32_t low,
			      uint32_t high);

/* Append a framed MSG_DENIED RPC_MISMATCH reply (low = high = 2). 0 or -1. */
int rpcmsg_reply_rpc_mismatch(struct evbuffer *out, uint32_t xid);

/* Append a framed MSG_DENIED AUTH_ERROR reply with stat. 0 or -1. */
int rpcmsg_reply_auth_error(struct evbuffer *out, uint32_t xid,
			    enum auth_stat stat);

/*
 * Decode XDR arguments from rec[off..len) with proc into args (caller
 * zeroes it first). Returns 0, or -1 when they do not decode
 * (GARBAGE_ARGS); trailing bytes are ignored, as most servers do. Whatever proc allocated must be released with
 * rpcmsg_free_args(proc, args) in both cases.
 */
int rpcmsg_decode_args(const uint8_t *rec, size_t len, size_t off,
		       xdrproc_t proc, void *args);

/*
 * The XDR routine of an empty body (RFC 4506 "void"): encodes and decodes
 * nothing and succeeds. libtirpc's xdr_void takes no arguments, so it
 * cannot be cast to xdrproc_t under -Wcast-function-type; this one has
 * the xdrproc_t shape. Any thread.
 */
bool_t rpcmsg_xdr_void(XDR *xdrs, void *unused);

/* Release what a decode with proc allocated inside obj (not obj itself). */
void rpcmsg_free_args(xdrproc_t proc, void *obj);

/*
 * Encode obj with proc into a malloc'd buffer of *len bytes that the caller
 * owns. Returns NULL on failure.
 */
uint8_t *rpcmsg_encode(xdrproc_t proc, const void *obj, size_t *len);

#endif
