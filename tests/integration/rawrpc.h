/* SPDX-License-Identifier: MIT */
/*
 * rawrpc: a tiny ONC RPC client for integration tests that must put exact
 * (and exactly wrong) bytes on the wire: blocking TCP sockets to 127.0.0.1,
 * record marking (RFC 5531 section 11), call headers with AUTH_NONE or
 * AUTH_SYS (RFC 5531 section 9 and appendix A), reply headers decoded with
 * libtirpc's xdr_replymsg, results decoded with the project's rpcgen
 * routines (nfs3_prot.h, mount3_prot.h). Also a small HTTP GET for
 * /metrics and a Prometheus text lookup.
 *
 * Nothing here includes libnfs. Every receive has a timeout in
 * milliseconds; no call blocks forever.
 */
#ifndef NFSCACHED_TESTS_RAWRPC_H
#define NFSCACHED_TESTS_RAWRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rpc/rpc.h>

#define RAWRPC_TIMEOUT_MS	10000	/* default receive timeout */
#define RAWRPC_REPLY_MAX	(4u << 20) /* largest reply record accepted */
#define RAWRPC_MAX_GIDS		32	/* more than RFC 5531 allows (16),
					 * so tests can send too many */

/* Outcome of a receive or a call. */
enum rawrpc_io {
	RAWRPC_OK = 0,		/* a whole record (or reply) arrived */
	RAWRPC_CLOSED = -1,	/* the peer closed (EOF or reset) */
	RAWRPC_TIMEOUT = -2,	/* nothing complete within the timeout */
	RAWRPC_EPROTO = -3,	/* a reply that does not decode, the wrong
				 * xid, or a record over RAWRPC_REPLY_MAX */
	RAWRPC_ERROR = -4,	/* a local error (socket, memory, encoding) */
};

/* A growable byte buffer that XDR-encodes into itself. Any failure sets
 * failed and later puts do nothing. */
struct rawrpc_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool failed;
};

/* A credential to put in a call header. flavor AUTH_NONE ignores the rest;
 * AUTH_SYS encodes stamp, machine, uid, gid and ngids gids (ngids may
 * exceed 16 on purpose, up to RAWRPC_MAX_GIDS). */
struct rawrpc_cred {
	uint32_t flavor;
	uint32_t stamp;
	const char *machine;
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[RAWRPC_MAX_GIDS];
};

/* A decoded reply header (RFC 5531 section 9, struct reply_body). */
struct rawrpc_reply {
	uint32_t xid;
	uint32_t stat;		/* MSG_ACCEPTED or MSG_DENIED */
	uint32_t accept;	/* accept_stat when MSG_ACCEPTED */
	uint32_t reject;	/* reject_stat when MSG_DENIED */
	uint32_t auth;		/* auth_stat when reject == AUTH_ERROR */
	uint32_t low;		/* PROG_MISMATCH or RPC_MISMATCH range */
	uint32_t high;
	size_t res_off;		/* results start, when accept == SUCCESS */
};

/* --- buffers and encoding --- */

/* Start an empty buffer. */
void rawrpc_buf_init(struct rawrpc_buf *b);

/* Empty b for the next call, keeping its memory (and clearing failed). */
void rawrpc_buf_reset(struct rawrpc_buf *b);
/* Release b's memory and leave it empty. */
void rawrpc_buf_free(struct rawrpc_buf *b);

/* Append one big-endian 32-bit word. */
void rawrpc_put_u32(struct rawrpc_buf *b, uint32_t v);

/* Append one big-endian 64-bit word (XDR hyper). */
void rawrpc_put_u64(struct rawrpc_buf *b, uint64_t v);

/* Append len raw bytes, no length word and no padding. */
void rawrpc_put_raw(struct rawrpc_buf *b, const void *p, size_t len);

/* Append variable-length opaque: a length word, the bytes, zero padding to
 * a multiple of 4 (RFC 4506 section 4.10). */
void rawrpc_put_opaque(struct rawrpc_buf *b, const void *p, size_t len);

/* Append obj encoded with an XDR routine (an rpcgen xdr_* or libtirpc's). */
void rawrpc_put_xdr(struct rawrpc_buf *b, xdrproc_t proc, const void *obj);

/* The AUTH_SYS credential uid/gid with one gid, machine "rawrpc". */
struct rawrpc_cred rawrpc_cred_sys(uint32_t uid, uint32_t gid);

/* The AUTH_NONE credential. */
struct rawrpc_cred rawrpc_cred_none(void);

/*
 * Append a CALL header (RFC 5531 section 9): xid, CALL, rpcvers, prog,
 * vers, proc, the credential cred (NULL means AUTH_NONE) and an AUTH_NONE
 * verifier. rpcvers is normally 2; tests pass other values on purpose.
 */
void rawrpc_put_call_v(struct rawrpc_buf *b, uint32_t xid, uint32_t rpcvers,
		       uint32_t prog, uint32_t vers, uint32_t proc,
		       const struct rawrpc_cred *cred);

/* rawrpc_put_call_v with rpcvers 2. */
void rawrpc_put_call(struct rawrpc_buf *b, uint32_t xid, uint32_t prog,
		     uint32_t vers, uint32_t proc,
		     const struct rawrpc_cred *cred);

/* --- sockets and records --- */

/* Connect a TCP socket to 127.0.0.1:port. Returns the fd, or -1. */
int rawrpc_connect(uint16_t port);

/* Write all len bytes as they are (no record mark). 0 or -1 (also on
 * EPIPE/ECONNRESET: SIGPIPE is never raised). */
int rawrpc_send_bytes(int fd, const void *p, size_t len);

/* Write p[0..len) as one record: a single last fragment (RFC 5531 s. 11). */
int rawrpc_send_record(int fd, const void *p, size_t len);

/*
 * Read one whole record (joining fragments) within timeout_ms. On RAWRPC_OK
 * *rec is a malloc'd buffer of *len bytes the caller frees. Returns
 * RAWRPC_CLOSED if the peer closed or reset (even mid-record), RAWRPC_TIMEOUT,
 * RAWRPC_EPROTO for a record over RAWRPC_REPLY_MAX, RAWRPC_ERROR.
 */
enum rawrpc_io rawrpc_recv_record(int fd, int timeout_ms, uint8_t **rec,
				  size_t *len);

/*
 * Wait until the peer closes fd, discarding nothing: returns RAWRPC_CLOSED
 * if it closed (or reset) without sending a single byte, RAWRPC_OK if bytes
 * arrived instead (the peer answered), RAWRPC_TIMEOUT if it stayed open.
 */
enum rawrpc_io rawrpc_wait_closed(int fd, int timeout_ms);

/* --- replies --- */

/* Decode the reply header of rec[0..len) into r with xdr_replymsg.
 * Returns 0, or -1 if it is not a well-formed reply. */
int rawrpc_parse_reply(const uint8_t *rec, size_t len,
		       struct rawrpc_reply *r);

/* Decode results at rec[off..len) with proc into res (zeroed here first;
 * release with xdr_free(proc, res)). Returns 0 or -1. */
int rawrpc_decode(const uint8_t *rec, size_t len, size_t off,
		  xdrproc_t proc, void *res);

/*
 * Send record call[0..len) and read the reply for xid within timeout_ms.
 * On RAWRPC_OK, r holds the header and, if rec is non-NULL, *rec and
 * *rec_len the malloc'd reply record (caller frees). A reply with another xid is
 * RAWRPC_EPROTO.
 */
enum rawrpc_io rawrpc_roundtrip(int fd, const struct rawrpc_buf *call,
				uint32_t xid, int timeout_ms,
				struct rawrpc_reply *r, uint8_t **rec,
				size_t *rec_len);

/*
 * A well-formed call: header (cred NULL = AUTH_NONE), args encoded with
 * argp (NULL = no arguments), reply read within RAWRPC_TIMEOUT_MS. If the
 * reply is MSG_ACCEPTED SUCCESS and resp is non-NULL, results are decoded
 * into res (release with xdr_free); results that do not decode give
 * RAWRPC_EPROTO.
 */
enum rawrpc_io rawrpc_call(int fd, uint32_t xid, uint32_t prog,
			   uint32_t vers, uint32_t proc,
			   const struct rawrpc_cred *cred, xdrproc_t argp,
			   const void *args, xdrproc_t resp, void *res,
			   struct rawrpc_reply *r);

/*
 * MOUNT v3 MNT of path over fd (RFC 1813 section 5.2.1) as AUTH_SYS root.
 * On success copies the handle into fh (64 bytes, caller's), sets *fh_len
 * and returns 0 (MNT3_OK). Returns the mountstat3 (> 0) when the server
 * refused, or -1 when no usable reply came (the reason is on stderr).
 */
int rawrpc_mnt(int fd, uint32_t xid, const char *path, uint8_t *fh,
	       size_t *fh_len);

/* A fresh xid: random start at first use, then increasing. */
uint32_t rawrpc_xid(void);

/* --- environment and metrics --- */

/* The port in environment variable var, or 0 if unset or invalid. */
uint16_t rawrpc_env_port(const char *var);

/* Fetch NFSC_METRICS_ADDR's /metrics (tmetrics_get) and return series'
 * value; -1, after recording a failed assertion, if the fetch failed or
 * the page lacks series. */
double rawrpc_metric_now(const char *series);

#endif
