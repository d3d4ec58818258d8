/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_meta: the real LOOKUP, CREATE and RENAME handlers and the
 * metadata cache on the fake upstream. NOENT is remembered for
 * negative_timeout and forgotten when the proxy itself creates the name;
 * a RENAME through the proxy teaches the cache both names.
 */
#include <string.h>

#include "cunit_main.h"
#include "nfs3_harness.h"

/* GETATTR of toy fileid id (of the root, as a client does after MOUNT). */
static void getattr(struct nfs3_h *h, uint64_t id)
{
	uint8_t buf[FH_SIZE_MAX];
	GETATTR3args a;
	GETATTR3res res;

	h_fh(h, id, &a.object, buf);
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_GETATTR,
					       (xdrproc_t)xdr_GETATTR3args, &a),
				     (xdrproc_t)xdr_GETATTR3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_GETATTR3res, (char *)&res);
}

/* CREATE name UNCHECKED in the root; returns the status. */
static nfsstat3 create(struct nfs3_h *h, char *name)
{
	uint8_t buf[FH_SIZE_MAX];
	CREATE3args a;
	CREATE3res res;
	nfsstat3 st;

	memset(&a, 0, sizeof(a));
	h_fh(h, TOY_ROOT, &a.where.dir, buf);
	a.where.name = name;
	a.how.mode = UNCHECKED;
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_CREATE,
					       (xdrproc_t)xdr_CREATE3args, &a),
				     (xdrproc_t)xdr_CREATE3res, &res), 0);
	st = res.status;
	xdr_free((xdrproc_t)xdr_CREATE3res, (char *)&res);
	return st;
}

/* RENAME from to to in the root; returns the status. */
static nfsstat3 rename_(struct nfs3_h *h, char *from, char *to)
{
	uint8_t b1[FH_SIZE_MAX], b2[FH_SIZE_MAX];
	RENAME3args a;
	RENAME3res res;
	nfsstat3 st;

	h_fh(h, TOY_ROOT, &a.from.dir, b1);
	h_fh(h, TOY_ROOT, &a.to.dir, b2);
	a.from.name = from;
	a.to.name = to;
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_RENAME,
					       (xdrproc_t)xdr_RENAME3args, &a),
				     (xdrproc_t)xdr_RENAME3res, &res), 0);
	st = res.status;
	xdr_free((xdrproc_t)xdr_RENAME3res, (char *)&res);
	return st;
}

static void test_negative_lookup_is_remembered(void)
{
	char nope[] = "nope";
	struct nfs3_h h;
	uint64_t id = 0;

	h_init(&h, NULL);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_NOENT);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 1);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_NOENT);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 1);
	/* Past negative_timeout the upstream is asked again. */
	h_advance(&h, h.d.conf->exports[0].negative_timeout + 1);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, NULL), NFS3ERR_NOENT);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 2);
	/* A CREATE through the proxy replaces the negative entry. */
	CU_ASSERT_EQUAL(create(&h, nope), NFS3_OK);
	CU_ASSERT_EQUAL(h_lookup(&h, nope, &id), NFS3_OK);
	CU_ASSERT_EQUAL(id, toy_node(&h.toy, 2)->fileid);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 2);
	h_fini(&h);
}

static void test_rename_teaches_both_names(void)
{
	char na[] = "a", nb[] = "b";
	struct nfs3_h h;
	uint64_t a, got = 0;

	h_init(&h, NULL);
	a = toy_add_file(&h.toy, "a", 100);
	getattr(&h, TOY_ROOT);
	CU_ASSERT_EQUAL(h_lookup(&h, na, &got), NFS3_OK);
	CU_ASSERT_EQUAL(got, a);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 1);
	CU_ASSERT_EQUAL(rename_(&h, na, nb), NFS3_OK);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_RENAME], 1);
	/* Neither name needs the upstream: "a" is gone, "b" is a's file
	 * (whose attributes the RENAME expired: its ctime changed). */
	CU_ASSERT_EQUAL(h_lookup(&h, na, NULL), NFS3ERR_NOENT);
	getattr(&h, a);
	got = 0;
	CU_ASSERT_EQUAL(h_lookup(&h, nb, &got), NFS3_OK);
	CU_ASSERT_EQUAL(got, a);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 1);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_meta", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "negative_lookup_is_remembered", test_negative_lookup_is_remembered);
	CU_add_test(s, "rename_teaches_both_names", test_rename_teaches_both_names);
	return 0;
}
