/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/rpcmsg: call header decoding with AUTH_NONE and
 * AUTH_SYS (RFC 5531 section 9 and appendix A), framed reply encoders
 * (decoded back with libtirpc's xdr_replymsg), and argument/result codecs
 * driven by the rpcgen routines of nfs3_prot.x.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <rpc/rpc.h>

#include "cunit_main.h"
#include "nfs3_inline.h"
#include "nfs3_prot.h"
#include "rpcmsg.h"

#define XID	0x01020304u
/* libtirpc declares xdr_void(void); go through void (*)(void) to cast. */
#define XDR_VOID ((xdrproc_t)(void (*)(void))xdr_void)

/* A call record under construction. */
struct wb {
	uint8_t b[4096];
	size_t n;
};

/* Append one 32-bit XDR unit. */
static void
put32(struct wb *w, uint32_t v)
{
	w->b[w->n++] = (uint8_t)(v >> 24);
	w->b[w->n++] = (uint8_t)(v >> 16);
	w->b[w->n++] = (uint8_t)(v >> 8);
	w->b[w->n++] = (uint8_t)v;
}

/* Append variable-length opaque data (length, bytes, zero padding). */
static void
put_opaque(struct wb *w, const void *p, uint32_t n)
{
	put32(w, n);
	memcpy(w->b + w->n, p, n);
	w->n += n;
	while (w->n % 4)
		w->b[w->n++] = 0;
}

/* Build an authsys_parms body with mlen bytes of machine name 'm...'. */
static void
authsys_body(struct wb *w, uint32_t mlen, uint32_t ngids)
{
	char mach[300];

	memset(mach, 'm', sizeof(mach));
	w->n = 0;
	put32(w, 777);			/* stamp */
	put_opaque(w, mach, mlen);
	put32(w, 1000);			/* uid */
	put32(w, 100);			/* gid */
	put32(w, ngids);
	for (uint32_t i = 0; i < ngids; i++)
		put32(w, 2000 + i);
}

/* Build a call header whose credential has flavor and body cred. */
static void
call_with(struct wb *w, uint32_t rpcvers, uint32_t flavor,
	  const struct wb *cred)
{
	w->n = 0;
	put32(w, XID);
	put32(w, CALL);
	put32(w, rpcvers);
	put32(w, NFS_PROGRAM);
	put32(w, NFS_V3);
	put32(w, NFSPROC3_READ);
	put32(w, flavor);
	put_opaque(w, cred->b, (uint32_t)cred->n);
	put32(w, AUTH_NONE);
	put32(w, 0);
}

static void
test_auth_sys_16_gids_ok(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	authsys_body(&cred, 9, 16);
	call_with(&w, 2, AUTH_SYS, &cred);
	put32(&w, 0xdeadbeef);		/* first argument word */
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_OK);
	CU_ASSERT_EQUAL(c.xid, XID);
	CU_ASSERT_EQUAL(c.prog, 100003);
	CU_ASSERT_EQUAL(c.vers, 3);
	CU_ASSERT_EQUAL(c.proc, 6);
	CU_ASSERT_EQUAL(c.flavor, AUTH_SYS);
	CU_ASSERT_EQUAL(c.stamp, 777);
	CU_ASSERT_STRING_EQUAL(c.machine, "mmmmmmmmm");
	CU_ASSERT_EQUAL(c.cred.uid, 1000);
	CU_ASSERT_EQUAL(c.cred.gid, 100);
	CU_ASSERT_EQUAL(c.cred.ngids, 16);
	CU_ASSERT_EQUAL(c.cred.gids[0], 2000);
	CU_ASSERT_EQUAL(c.cred.gids[15], 2015);
	/* 6 words, cred (2 words + 4+4+12+4+4+4+64), verf 2 words. */
	CU_ASSERT_EQUAL(c.args_off, 24 + 8 + 96 + 8);
	CU_ASSERT_EQUAL(c.args_off, w.n - 4);
}

static void
test_auth_sys_17_gids_badcred(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	authsys_body(&cred, 4, 17);
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
	CU_ASSERT_EQUAL(c.xid, XID);
}

static void
test_machine_name_255_ok_256_badcred(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	authsys_body(&cred, 255, 0);
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_OK);
	CU_ASSERT_EQUAL(strlen(c.machine), 255);
	CU_ASSERT_EQUAL(c.cred.ngids, 0);

	authsys_body(&cred, 256, 0);
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
	CU_ASSERT_EQUAL(c.xid, XID);
}

static void
test_cred_body_over_400_badcred(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	/* 400 bytes of AUTH_SYS is legal only if it parses; 404 never is. */
	memset(cred.b, 0, 404);
	cred.n = 404;
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
	CU_ASSERT_EQUAL(c.xid, XID);
	/* Refused on the length alone, before the body arrives. */
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, 36, &c), RPCMSG_AUTH_BADCRED);
	/* Same for the verifier. */
	cred.n = 0;
	call_with(&w, 2, AUTH_NONE, &cred);
	w.n -= 4;		/* replace the verifier's length */
	put32(&w, 401);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
}

static void
test_auth_sys_body_length_mismatch_badcred(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	/* Declared body shorter than the structure inside it. */
	authsys_body(&cred, 8, 3);
	cred.n -= 4;
	call_with(&w, 2, AUTH_SYS, &cred);
	put32(&w, 0);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
	/* Trailing bytes after the structure. */
	authsys_body(&cred, 8, 3);
	put32(&cred, 0);
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
}

static void
test_auth_none(void)
{
	struct wb cred = { .n = 0 }, w;
	struct rpcmsg_call c;

	call_with(&w, 2, AUTH_NONE, &cred);
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_OK);
	CU_ASSERT_EQUAL(c.flavor, AUTH_NONE);
	CU_ASSERT_EQUAL(c.cred.uid, 65534);
	CU_ASSERT_EQUAL(c.cred.gid, 65534);
	CU_ASSERT_EQUAL(c.cred.ngids, 0);
	CU_ASSERT_EQUAL(c.machine[0], '\0');
	CU_ASSERT_EQUAL(c.args_off, 40);
	/* AUTH_NONE with a body is malformed. */
	put32(&cred, 0);
	call_with(&w, 2, AUTH_NONE, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_BADCRED);
}

static void
test_truncated_header(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;
	size_t cut;

	authsys_body(&cred, 5, 2);
	call_with(&w, 2, AUTH_SYS, &cred);
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_OK);
	for (cut = 0; cut < w.n; cut++) {
		enum rpcmsg_status st = rpcmsg_decode_call(w.b, cut, &c);

		if (cut < 8) {
			/* No xid, or not known to be a CALL: close. */
			CU_ASSERT_EQUAL(st, RPCMSG_NOT_CALL);
		} else {
			CU_ASSERT_EQUAL(st, RPCMSG_GARBAGE);
			CU_ASSERT_EQUAL(c.xid, XID);
		}
	}
}

static void
test_reply_is_not_call(void)
{
	struct wb w = { .n = 0 };
	struct rpcmsg_call c;

	put32(&w, XID);
	put32(&w, REPLY);
	put32(&w, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_NOT_CALL);
	w.n = 4;
	put32(&w, 7);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_NOT_CALL);
}

static void
test_unknown_flavor_tooweak(void)
{
	struct wb cred, w;
	struct rpcmsg_call c;

	memset(cred.b, 0, 16);
	cred.n = 16;
	call_with(&w, 2, 6 /* RPCSEC_GSS */, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_TOOWEAK);
	CU_ASSERT_EQUAL(c.xid, XID);
	call_with(&w, 2, AUTH_SHORT, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_TOOWEAK);
	call_with(&w, 2, AUTH_DES, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_AUTH_TOOWEAK);
}

static void
test_rpcvers_3_rpc_mismatch(void)
{
	struct wb cred = { .n = 0 }, w;
	struct rpcmsg_call c;

	call_with(&w, 3, AUTH_NONE, &cred);
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_RPC_MISMATCH);
	CU_ASSERT_EQUAL(c.xid, XID);
	/* Decided from the version word alone. */
	CU_ASSERT_EQUAL(rpcmsg_decode_call(w.b, 12, &c), RPCMSG_RPC_MISMATCH);
}

/* Take the first framed record out of out into buf; return its length. */
static size_t
take_record(struct evbuffer *out, uint8_t *buf, size_t cap)
{
	uint8_t m[4];
	uint32_t mark;
	size_t n;

	if (evbuffer_remove(out, m, 4) != 4)
		return 0;
	mark = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
	    (uint32_t)m[2] << 8 | m[3];
	CU_ASSERT_EQUAL(mark >> 31, 1);		/* last fragment */
	n = mark & 0x7fffffffu;
	CU_ASSERT_FATAL(n <= cap);
	CU_ASSERT_EQUAL_FATAL(evbuffer_remove(out, buf, n), (int)n);
	return n;
}

/* Decode a reply record with libtirpc; results (if any) into res. */
static bool_t
decode_reply(const uint8_t *buf, size_t n, struct rpc_msg *m,
	     char *verfbuf, xdrproc_t proc, void *res)
{
	XDR x;
	bool_t ok;

	memset(m, 0, sizeof(*m));
	m->acpted_rply.ar_verf.oa_base = verfbuf;
	m->acpted_rply.ar_results.where = res;
	m->acpted_rply.ar_results.proc = proc ? proc : XDR_VOID;
	xdrmem_create(&x, (char *)(uintptr_t)buf, (u_int)n, XDR_DECODE);
	ok = xdr_replymsg(&x, m) && xdr_getpos(&x) == n;
	xdr_destroy(&x);
	return ok;
}

static void
test_reply_success_read3res(void)
{
	struct evbuffer *out = evbuffer_new();
	uint8_t buf[4096], data[10] = "0123456789";
	char verf[MAX_AUTH_BYTES];
	READ3res res, got;
	struct rpc_msg m;
	size_t n;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)('0' + i % 43);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
	res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes.size = 10;
	res.READ3res_u.resok.count = 10;
	res.READ3res_u.resok.eof = TRUE;
	res.READ3res_u.resok.data.data_len = 10;
	res.READ3res_u.resok.data.data_val = (char *)data;
	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_success(out, XID,
	    (xdrproc_t)xdr_READ3res, &res), 0);
	n = take_record(out, buf, sizeof(buf));
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	/* header 24 + status 4 + post_op_attr 4+84 + count 4 + eof 4 + 4+12 */
	CU_ASSERT_EQUAL(n, 24 + 4 + 88 + 8 + 16);
	memset(&got, 0, sizeof(got));
	CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf,
	    (xdrproc_t)xdr_READ3res, &got));
	CU_ASSERT_EQUAL(m.rm_xid, XID);
	CU_ASSERT_EQUAL(m.rm_direction, REPLY);
	CU_ASSERT_EQUAL(m.rm_reply.rp_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_verf.oa_flavor, AUTH_NONE);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_verf.oa_length, 0);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_stat, SUCCESS);
	CU_ASSERT_EQUAL(got.status, NFS3_OK);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.file_attributes.attributes_follow, TRUE);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.file_attributes.post_op_attr_u.attributes.size, 10);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.count, 10);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.eof, TRUE);
	CU_ASSERT_EQUAL_FATAL(got.READ3res_u.resok.data.data_len, 10);
	CU_ASSERT_EQUAL(memcmp(got.READ3res_u.resok.data.data_val, data, 10), 0);
	rpcmsg_free_args((xdrproc_t)xdr_READ3res, &got);
	evbuffer_free(out);
}

static void
test_reply_success_void_exact_bytes(void)
{
	static const uint8_t want[] = {
		0x80, 0, 0, 24,
		1, 2, 3, 4,	/* xid */
		0, 0, 0, 1,	/* REPLY */
		0, 0, 0, 0,	/* MSG_ACCEPTED */
		0, 0, 0, 0,	/* verf AUTH_NONE */
		0, 0, 0, 0,	/* verf length */
		0, 0, 0, 0,	/* SUCCESS */
	};
	struct evbuffer *out = evbuffer_new();
	uint8_t got[sizeof(want)];

	CU_ASSERT_EQUAL(rpcmsg_reply_success(out, XID, XDR_VOID,
					     NULL), 0);
	CU_ASSERT_EQUAL_FATAL(evbuffer_get_length(out), sizeof(want));
	evbuffer_copyout(out, got, sizeof(got));
	CU_ASSERT_EQUAL(memcmp(got, want, sizeof(want)), 0);
	evbuffer_free(out);
}

/* An xdrproc that always fails, as a result that cannot be encoded. */
static bool_t
xdr_always_fail(XDR *x, void *p)
{
	(void)x;
	(void)p;
	return FALSE;
}

static void
test_reply_success_failure_appends_nothing(void)
{
	struct evbuffer *out = evbuffer_new();
	uint8_t junk = 1;

	evbuffer_add(out, &junk, 1);
	CU_ASSERT_EQUAL(rpcmsg_reply_success(out, XID,
	    (xdrproc_t)xdr_always_fail, &junk), -1);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 1);
	evbuffer_free(out);
}

/* Release callback for the tail tests: counts calls, checks the bytes. */
struct tail_seen {
	const void *tail;
	size_t len;
	int calls;
};

static void
tail_release(const void *tail, size_t len, void *arg)
{
	struct tail_seen *t = arg;

	CU_ASSERT_PTR_EQUAL(tail, t->tail);
	CU_ASSERT_EQUAL(len, t->len);
	t->calls++;
}

/* A READ3res of len data bytes encoded with the tail by reference is
 * byte-identical to the copying encoder's, and the tail is released once:
 * a tail over 4 KiB only when the buffer lets go of it, a smaller one
 * (copied) at once. */
static void
tail_matches_copy_with(size_t len, xdrproc_t proc)
{
	static uint8_t data[5000];
	static uint8_t a[6000], b[6000];
	struct evbuffer *want = evbuffer_new(), *out = evbuffer_new();
	struct tail_seen seen = { data, len, 0 };
	READ3res res;
	size_t na, nb;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)('0' + i % 43);
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
	res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes.size = 99;
	res.READ3res_u.resok.count = (count3)len;
	res.READ3res_u.resok.eof = TRUE;
	res.READ3res_u.resok.data.data_len = (u_int)len;
	res.READ3res_u.resok.data.data_val = (char *)(uintptr_t)data;
	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_success(want, XID,
	    (xdrproc_t)xdr_READ3res, &res), 0);
	res.READ3res_u.resok.data.data_len = 0;
	res.READ3res_u.resok.data.data_val = NULL;
	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_success_tail(out, XID,
	    proc, &res, data, len, tail_release, &seen), 0);
	/* Referenced, not copied: released only when drained. */
	CU_ASSERT_EQUAL(seen.calls, len > 4096 ? 0 : 1);
	na = evbuffer_get_length(want);
	nb = evbuffer_get_length(out);
	CU_ASSERT_EQUAL_FATAL(na, nb);
	CU_ASSERT_EQUAL_FATAL(na % 4, 0);
	evbuffer_remove(want, a, sizeof(a));
	evbuffer_remove(out, b, sizeof(b));
	CU_ASSERT_EQUAL(memcmp(a, b, na), 0);
	CU_ASSERT_EQUAL(seen.calls, 1);
	evbuffer_free(want);
	evbuffer_free(out);
	CU_ASSERT_EQUAL(seen.calls, 1);
}

/* tail_matches_copy_with the generated encoder and the inline one. */
static void
tail_matches_copy(size_t len)
{
	tail_matches_copy_with(len, (xdrproc_t)xdr_READ3res);
	tail_matches_copy_with(len, (xdrproc_t)nfs3_inline_xdr_READ3res);
}

static void
test_reply_success_tail_same_bytes(void)
{
	tail_matches_copy(10);	/* 2 bytes of padding */
	tail_matches_copy(12);	/* none */
	tail_matches_copy(13);	/* 3 */
	tail_matches_copy(0);	/* an empty tail */
	tail_matches_copy(4096);	/* the longest copied */
	tail_matches_copy(4097);	/* referenced, 3 bytes of padding */
	tail_matches_copy(5000);
}

/* On failure nothing is appended and the tail is released at once. */
static void
test_reply_success_tail_failure(void)
{
	static const uint8_t data[4] = "abcd";
	struct evbuffer *out = evbuffer_new();
	struct tail_seen seen = { data, 4, 0 };
	uint8_t junk = 1;
	READ3res res;

	evbuffer_add(out, &junk, 1);
	CU_ASSERT_EQUAL(rpcmsg_reply_success_tail(out, XID,
	    (xdrproc_t)xdr_always_fail, &junk, data, 4, tail_release, &seen),
	    -1);
	CU_ASSERT_EQUAL(seen.calls, 1);
	/* A result whose last field is not an empty opaque. */
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.data.data_len = 4;
	res.READ3res_u.resok.data.data_val = (char *)(uintptr_t)data;
	CU_ASSERT_EQUAL(rpcmsg_reply_success_tail(out, XID,
	    (xdrproc_t)xdr_READ3res, &res, data, 4, tail_release, &seen), -1);
	CU_ASSERT_EQUAL(seen.calls, 2);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 1);
	evbuffer_free(out);
}

/* Times xdr_counted_read3res ran (this test program's only). */
static unsigned counted_passes;

/* xdr_READ3res, counting its passes. */
static bool_t
xdr_counted_read3res(XDR *x, void *res)
{
	counted_passes++;
	return xdr_READ3res(x, res);
}

/* A reply with a tail encodes its results once: no sizing pass before
 * the encoding (issue 42); results past 1 KiB fail whole,
 * the tail released once and nothing appended. */
static void
test_reply_success_tail_one_pass(void)
{
	static uint8_t big[1024];	/* the 1 KiB limit rpcmsg.h states */
	static const uint8_t data[4] = "abcd";
	struct evbuffer *out = evbuffer_new();
	struct tail_seen seen = { data, 4, 0 };
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.count = 4;
	counted_passes = 0;
	CU_ASSERT_EQUAL(rpcmsg_reply_success_tail(out, XID,
	    (xdrproc_t)xdr_counted_read3res, &res, data, 4, tail_release,
	    &seen), 0);
	CU_ASSERT_EQUAL(counted_passes, 1);
	evbuffer_drain(out, evbuffer_get_length(out));
	CU_ASSERT_EQUAL(seen.calls, 1);
	/* The same result with 1 KiB inline. */
	res.READ3res_u.resok.data.data_len = sizeof(big);
	res.READ3res_u.resok.data.data_val = (char *)big;
	CU_ASSERT_EQUAL(rpcmsg_reply_success_tail(out, XID,
	    (xdrproc_t)xdr_READ3res, &res, data, 4, tail_release, &seen), -1);
	CU_ASSERT_EQUAL(seen.calls, 2);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	evbuffer_free(out);
}

/* Encode res with proc into buf[0..cap) at offset skew; the length
 * encoded, or -1 when proc failed. */
static long
encode_read3res(xdrproc_t proc, READ3res *res, uint8_t *buf, size_t cap,
		size_t skew)
{
	XDR x;
	long n;

	memset(buf, 0xa5, cap);
	xdrmem_create(&x, (char *)buf + skew, (u_int)(cap - skew), XDR_ENCODE);
	n = proc(&x, res) ? (long)xdr_getpos(&x) : -1;
	xdr_destroy(&x);
	return n;
}

/* nfs3_inline_xdr_READ3res writes what xdr_READ3res writes, byte for
 * byte and length for length, on a buffer of cap bytes at skew. */
static void
inline_matches(READ3res *res, size_t cap, size_t skew)
{
	_Alignas(8) static uint8_t a[256], b[256];
	long na, nb;

	CU_ASSERT_FATAL(cap <= sizeof(a));
	na = encode_read3res((xdrproc_t)xdr_READ3res, res, a, cap, skew);
	nb = encode_read3res((xdrproc_t)nfs3_inline_xdr_READ3res, res, b,
			     cap, skew);
	CU_ASSERT_EQUAL(na, nb);
	if (na > 0)
		CU_ASSERT_EQUAL(memcmp(a, b, cap), 0);
}

/* The inline READ3res encoder (issue 42's hit path): every field at its
 * place with its full width, booleans as 0/1, and the forms it does not
 * cover (an error, data inline, no room, an unaligned buffer) exactly as
 * the generated routine writes them; decoding goes to it too. */
static void
test_inline_read3res_same_bytes(void)
{
	_Alignas(8) uint8_t buf[256];
	READ3res res, got;
	fattr3 *a = &res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes;
	static const char data[5] = "abcde";
	long n;
	XDR x;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
	a->type = NF3REG;
	a->mode = 0100644;
	a->nlink = 0x01020304;
	a->uid = 0xfffffffe;
	a->gid = 0x80000001;
	a->size = 0x0102030405060708ull;
	a->used = 0xf1f2f3f4f5f6f7f8ull;
	a->rdev.specdata1 = 11;
	a->rdev.specdata2 = 0xdeadbeef;
	a->fsid = 0x1122334455667788ull;
	a->fileid = 0x99aabbccddeeff00ull;
	a->atime.seconds = 1;
	a->atime.nseconds = 999999999;
	a->mtime.seconds = 0x7fffffff;
	a->mtime.nseconds = 2;
	a->ctime.seconds = 0x80000000u;
	a->ctime.nseconds = 3;
	res.READ3res_u.resok.count = 1048576;
	res.READ3res_u.resok.eof = TRUE;
	inline_matches(&res, sizeof(buf), 0);
	/* 4 + 4 + 84 + 4 + 4 + 4 */
	CU_ASSERT_EQUAL(encode_read3res((xdrproc_t)nfs3_inline_xdr_READ3res,
					&res, buf, sizeof(buf), 0), 104);
	res.READ3res_u.resok.eof = 7;		/* any non-zero: TRUE */
	inline_matches(&res, sizeof(buf), 0);
	/* A discriminant neither TRUE nor FALSE: refused by both. */
	res.READ3res_u.resok.file_attributes.attributes_follow = 5;
	inline_matches(&res, sizeof(buf), 0);
	CU_ASSERT_EQUAL(encode_read3res((xdrproc_t)nfs3_inline_xdr_READ3res,
					&res, buf, sizeof(buf), 0), -1);
	res.READ3res_u.resok.file_attributes.attributes_follow = FALSE;
	res.READ3res_u.resok.eof = FALSE;
	inline_matches(&res, sizeof(buf), 0);
	CU_ASSERT_EQUAL(encode_read3res((xdrproc_t)nfs3_inline_xdr_READ3res,
					&res, buf, sizeof(buf), 0), 20);
	res.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
	inline_matches(&res, 103, 0);		/* one byte short: both fail */
	inline_matches(&res, 104, 0);		/* exactly room */
	inline_matches(&res, sizeof(buf), 1);	/* unaligned */
	res.READ3res_u.resok.data.data_len = 5;	/* data inline */
	res.READ3res_u.resok.data.data_val = (char *)(uintptr_t)data;
	inline_matches(&res, sizeof(buf), 0);
	res.READ3res_u.resok.data.data_len = 0;
	res.READ3res_u.resok.data.data_val = NULL;
	res.status = NFS3ERR_IO;		/* resfail */
	res.READ3res_u.resfail.file_attributes.attributes_follow = FALSE;
	inline_matches(&res, sizeof(buf), 0);
	/* Decoding: the generated routine's. */
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = TRUE;
	res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes = *a;
	n = encode_read3res((xdrproc_t)nfs3_inline_xdr_READ3res, &res, buf,
			    sizeof(buf), 0);
	CU_ASSERT_EQUAL_FATAL(n, 104);
	memset(&got, 0, sizeof(got));
	xdrmem_create(&x, (char *)buf, (u_int)n, XDR_DECODE);
	CU_ASSERT_FATAL(nfs3_inline_xdr_READ3res(&x, &got));
	xdr_destroy(&x);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.file_attributes.post_op_attr_u.attributes.fileid,
			0x99aabbccddeeff00ull);
	CU_ASSERT_EQUAL(got.READ3res_u.resok.count, 1048576);
	rpcmsg_free_args((xdrproc_t)nfs3_inline_xdr_READ3res, &got);
}

static void
test_reply_prog_mismatch(void)
{
	struct evbuffer *out = evbuffer_new();
	char verf[MAX_AUTH_BYTES];
	uint8_t buf[256];
	struct rpc_msg m;
	size_t n;

	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_accept_error(out, XID,
	    PROG_MISMATCH, 3, 3), 0);
	n = take_record(out, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 32);
	CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf, NULL, NULL));
	CU_ASSERT_EQUAL(m.rm_xid, XID);
	CU_ASSERT_EQUAL(m.rm_direction, REPLY);
	CU_ASSERT_EQUAL(m.rm_reply.rp_stat, MSG_ACCEPTED);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_verf.oa_flavor, AUTH_NONE);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_stat, PROG_MISMATCH);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_vers.low, 3);
	CU_ASSERT_EQUAL(m.acpted_rply.ar_vers.high, 3);
	evbuffer_free(out);
}

static void
test_reply_accept_errors(void)
{
	static const enum accept_stat stats[] = {
		PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR,
	};
	struct evbuffer *out = evbuffer_new();
	char verf[MAX_AUTH_BYTES];
	uint8_t buf[256];
	struct rpc_msg m;
	size_t i, n;

	/* All four back to back: each is its own framed record. */
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(rpcmsg_reply_accept_error(out, XID + (uint32_t)i,
		    stats[i], 9, 9), 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 4 * (4 + 24));
	for (i = 0; i < 4; i++) {
		n = take_record(out, buf, sizeof(buf));
		CU_ASSERT_EQUAL(n, 24);
		CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf, NULL, NULL));
		CU_ASSERT_EQUAL(m.rm_xid, XID + i);
		CU_ASSERT_EQUAL(m.rm_direction, REPLY);
		CU_ASSERT_EQUAL(m.rm_reply.rp_stat, MSG_ACCEPTED);
		CU_ASSERT_EQUAL(m.acpted_rply.ar_verf.oa_flavor, AUTH_NONE);
		CU_ASSERT_EQUAL(m.acpted_rply.ar_verf.oa_length, 0);
		CU_ASSERT_EQUAL(m.acpted_rply.ar_stat, stats[i]);
	}
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	/* SUCCESS needs results: refused here, nothing appended. */
	CU_ASSERT_EQUAL(rpcmsg_reply_accept_error(out, XID, SUCCESS, 0, 0), -1);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 0);
	evbuffer_free(out);
}

static void
test_reply_rpc_mismatch(void)
{
	struct evbuffer *out = evbuffer_new();
	char verf[MAX_AUTH_BYTES];
	uint8_t buf[256];
	struct rpc_msg m;
	size_t n;

	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_rpc_mismatch(out, XID), 0);
	n = take_record(out, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 24);
	CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf, NULL, NULL));
	CU_ASSERT_EQUAL(m.rm_xid, XID);
	CU_ASSERT_EQUAL(m.rm_direction, REPLY);
	CU_ASSERT_EQUAL(m.rm_reply.rp_stat, MSG_DENIED);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_stat, RPC_MISMATCH);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_vers.low, 2);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_vers.high, 2);
	evbuffer_free(out);
}

static void
test_reply_auth_error(void)
{
	struct evbuffer *out = evbuffer_new();
	char verf[MAX_AUTH_BYTES];
	uint8_t buf[256];
	struct rpc_msg m;
	size_t n;

	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_auth_error(out, XID, AUTH_TOOWEAK), 0);
	CU_ASSERT_EQUAL_FATAL(rpcmsg_reply_auth_error(out, XID + 1, AUTH_BADCRED), 0);
	n = take_record(out, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 20);
	CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf, NULL, NULL));
	CU_ASSERT_EQUAL(m.rm_xid, XID);
	CU_ASSERT_EQUAL(m.rm_direction, REPLY);
	CU_ASSERT_EQUAL(m.rm_reply.rp_stat, MSG_DENIED);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_stat, AUTH_ERROR);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_why, AUTH_TOOWEAK);
	n = take_record(out, buf, sizeof(buf));
	CU_ASSERT_EQUAL(n, 20);
	CU_ASSERT_FATAL(decode_reply(buf, n, &m, verf, NULL, NULL));
	CU_ASSERT_EQUAL(m.rm_xid, XID + 1);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_stat, AUTH_ERROR);
	CU_ASSERT_EQUAL(m.rjcted_rply.rj_why, AUTH_BADCRED);
	evbuffer_free(out);
}

static void
test_decode_args_after_header(void)
{
	uint8_t fh[24], *enc;
	struct wb cred = { .n = 0 }, w;
	struct rpcmsg_call c;
	READ3args a, got;
	size_t elen = 0;

	for (size_t i = 0; i < sizeof(fh); i++)
		fh[i] = (uint8_t)(0xa0 + i);
	memset(&a, 0, sizeof(a));
	a.file.data.data_len = sizeof(fh);
	a.file.data.data_val = (char *)fh;
	a.offset = 0x100000000ull + 5;
	a.count = 65536;
	enc = rpcmsg_encode((xdrproc_t)xdr_READ3args, &a, &elen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(enc);
	CU_ASSERT_EQUAL(elen, 4 + 24 + 8 + 4);

	call_with(&w, 2, AUTH_NONE, &cred);
	memcpy(w.b + w.n, enc, elen);
	w.n += elen;
	free(enc);
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_call(w.b, w.n, &c), RPCMSG_OK);
	memset(&got, 0, sizeof(got));
	CU_ASSERT_EQUAL_FATAL(rpcmsg_decode_args(w.b, w.n, c.args_off,
	    (xdrproc_t)xdr_READ3args, &got), 0);
	CU_ASSERT_EQUAL(got.file.data.data_len, 24);
	CU_ASSERT_EQUAL(memcmp(got.file.data.data_val, fh, 24), 0);
	CU_ASSERT_EQUAL(got.offset, 0x100000005ull);
	CU_ASSERT_EQUAL(got.count, 65536);
	rpcmsg_free_args((xdrproc_t)xdr_READ3args, &got);
	CU_ASSERT_PTR_NULL(got.file.data.data_val);

	/* Cut short inside the arguments: GARBAGE_ARGS, and free is safe. */
	memset(&got, 0, sizeof(got));
	CU_ASSERT_EQUAL(rpcmsg_decode_args(w.b, w.n - 1, c.args_off,
	    (xdrproc_t)xdr_READ3args, &got), -1);
	rpcmsg_free_args((xdrproc_t)xdr_READ3args, &got);
	/* Offset past the end. */
	CU_ASSERT_EQUAL(rpcmsg_decode_args(w.b, 10, 11,
	    (xdrproc_t)xdr_READ3args, &got), -1);
}

static void
test_decode_args_bad_lengths(void)
{
	struct wb w = { .n = 0 };
	WRITE3args got;

	/* A handle longer than NFS3_FHSIZE. */
	put32(&w, 65);
	memset(w.b + w.n, 0, 68);
	w.n += 68;
	memset(&got, 0, sizeof(got));
	CU_ASSERT_EQUAL(rpcmsg_decode_args(w.b, w.n, 0,
	    (xdrproc_t)xdr_WRITE3args, &got), -1);
	rpcmsg_free_args((xdrproc_t)xdr_WRITE3args, &got);

	/* Data length far beyond the record. */
	w.n = 0;
	put32(&w, 4);
	put32(&w, 0x11223344);
	put32(&w, 0);
	put32(&w, 0);		/* offset */
	put32(&w, 8);		/* count */
	put32(&w, UNSTABLE);
	put32(&w, 0x7ffffff0u);	/* data length */
	put32(&w, 0);
	memset(&got, 0, sizeof(got));
	CU_ASSERT_EQUAL(rpcmsg_decode_args(w.b, w.n, 0,
	    (xdrproc_t)xdr_WRITE3args, &got), -1);
	rpcmsg_free_args((xdrproc_t)xdr_WRITE3args, &got);
	CU_ASSERT_PTR_NULL(got.data.data_val);
}

static void
test_encode_void_and_failure(void)
{
	size_t len = 99;
	uint8_t *p = rpcmsg_encode(XDR_VOID, NULL, &len);
	uint8_t junk = 0;

	CU_ASSERT_PTR_NOT_NULL(p);
	CU_ASSERT_EQUAL(len, 0);
	free(p);
	CU_ASSERT_PTR_NULL(rpcmsg_encode((xdrproc_t)xdr_always_fail, &junk,
					 &len));
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite("rpcmsg", NULL, NULL);

	if (s == NULL)
		return -1;
	if (!CU_add_test(s, "auth_sys_16_gids_ok", test_auth_sys_16_gids_ok) ||
	    !CU_add_test(s, "auth_sys_17_gids_badcred",
			 test_auth_sys_17_gids_badcred) ||
	    !CU_add_test(s, "machine_name_255_ok_256_badcred",
			 test_machine_name_255_ok_256_badcred) ||
	    !CU_add_test(s, "cred_body_over_400_badcred",
			 test_cred_body_over_400_badcred) ||
	    !CU_add_test(s, "auth_sys_body_length_mismatch_badcred",
			 test_auth_sys_body_length_mismatch_badcred) ||
	    !CU_add_test(s, "auth_none", test_auth_none) ||
	    !CU_add_test(s, "truncated_header", test_truncated_header) ||
	    !CU_add_test(s, "reply_is_not_call", test_reply_is_not_call) ||
	    !CU_add_test(s, "unknown_flavor_tooweak",
			 test_unknown_flavor_tooweak) ||
	    !CU_add_test(s, "rpcvers_3_rpc_mismatch",
			 test_rpcvers_3_rpc_mismatch) ||
	    !CU_add_test(s, "reply_success_read3res",
			 test_reply_success_read3res) ||
	    !CU_add_test(s, "reply_success_void_exact_bytes",
			 test_reply_success_void_exact_bytes) ||
	    !CU_add_test(s, "reply_success_failure_appends_nothing",
			 test_reply_success_failure_appends_nothing) ||
	    !CU_add_test(s, "reply_success_tail_same_bytes",
			 test_reply_success_tail_same_bytes) ||
	    !CU_add_test(s, "reply_success_tail_failure",
			 test_reply_success_tail_failure) ||
	    !CU_add_test(s, "reply_success_tail_one_pass",
			 test_reply_success_tail_one_pass) ||
	    !CU_add_test(s, "inline_read3res_same_bytes",
			 test_inline_read3res_same_bytes) ||
	    !CU_add_test(s, "reply_prog_mismatch", test_reply_prog_mismatch) ||
	    !CU_add_test(s, "reply_accept_errors", test_reply_accept_errors) ||
	    !CU_add_test(s, "reply_rpc_mismatch", test_reply_rpc_mismatch) ||
	    !CU_add_test(s, "reply_auth_error", test_reply_auth_error) ||
	    !CU_add_test(s, "decode_args_after_header",
			 test_decode_args_after_header) ||
	    !CU_add_test(s, "decode_args_bad_lengths",
			 test_decode_args_bad_lengths) ||
	    !CU_add_test(s, "encode_void_and_failure",
			 test_encode_void_and_failure))
		return -1;
	return 0;
}
