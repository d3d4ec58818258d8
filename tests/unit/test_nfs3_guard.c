/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_guard: the security boundary in front of the upstream
 * (nfs3_prepare): client handles that do not unwrap, name no export or
 * cross exports, names holding a '/' or too long, and root squashing.
 * Each refused call is answered without any upstream call.
 */
#include <string.h>

#include "cunit_main.h"
#include "fh.h"
#include "nfs3_harness.h"

/* Every upstream call the fake took. */
static uint64_t upstream_calls(const struct nfs3_h *h)
{
	uint64_t n = 0;

	for (int p = 0; p < UPSTREAM_NPROCS; p++)
		n += h->fu.calls[p];
	return n;
}

/* GETATTR of handle fh; returns the status. */
static nfsstat3 getattr_fh(struct nfs3_h *h, const nfs_fh3 *fh)
{
	GETATTR3args a = { .object = *fh };
	GETATTR3res res;
	nfsstat3 st;

	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, h_call(h, NFSPROC3_GETATTR,
					       (xdrproc_t)xdr_GETATTR3args, &a),
				     (xdrproc_t)xdr_GETATTR3res, &res), 0);
	st = res.status;
	xdr_free((xdrproc_t)xdr_GETATTR3res, (char *)&res);
	return st;
}

static void test_bad_handles_never_reach_upstream(void)
{
	uint8_t buf[FH_SIZE_MAX], up[8] = { 0, 0, 0, 0, 0, 0, 0, 1 };
	struct nfs3_h h;
	nfs_fh3 fh;
	size_t len;

	h_init(&h, NULL);
	/* A forged authenticator. */
	h_fh(&h, TOY_ROOT, &fh, buf);
	buf[fh.data.data_len - 1] ^= 1;
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3ERR_BADHANDLE);
	/* Not a handle of this proxy at all. */
	fh.data.data_len = 8;
	memcpy(buf, up, 8);
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3ERR_BADHANDLE);
	/* A good handle of an export that is not configured. */
	CU_ASSERT_EQUAL_FATAL(fh_wrap(h.d.fh_key, 7, up, 8, buf, &len), FH_OK);
	fh.data.data_len = (u_int)len;
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3ERR_STALE);
	CU_ASSERT_EQUAL(upstream_calls(&h), 0);
	/* The real one is served. */
	h_fh(&h, TOY_ROOT, &fh, buf);
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3_OK);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_GETATTR], 1);
	h_fini(&h);
}

static void test_names_are_one_component(void)
{
	char slash[] = "../../etc", dotdot[] = "..", longname[300];
	struct nfs3_h h;

	h_init(&h, NULL);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CU_ASSERT_EQUAL(h_lookup(&h, slash, NULL), NFS3ERR_ACCES);
	CU_ASSERT_EQUAL(h_lookup(&h, longname, NULL), NFS3ERR_NAMETOOLONG);
	CU_ASSERT_EQUAL(upstream_calls(&h), 0);
	/* ".." stays the upstream's to judge. */
	h_lookup(&h, dotdot, NULL);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_LOOKUP], 1);
	h_fini(&h);
}

static void test_root_is_squashed(void)
{
	uint8_t buf[FH_SIZE_MAX];
	const struct conf_export *e;
	struct nfs3_h h;
	nfs_fh3 fh;

	h_init(&h, NULL);
	e = &h.d.conf->exports[0];
	CU_ASSERT_TRUE_FATAL(e->root_squash);
	h_fh(&h, TOY_ROOT, &fh, buf);
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3_OK);
	CU_ASSERT_EQUAL(h.fu.last_cred[NFSPROC3_GETATTR].uid, 1000);
	CU_ASSERT_EQUAL(h.fu.last_cred[NFSPROC3_GETATTR].gid, 1000);
	h.uid = h.gid = 0;
	/* Another file, whose attributes are not cached: GETATTR goes. */
	h_fh(&h, toy_add_file(&h.toy, "f", 10), &fh, buf);
	CU_ASSERT_EQUAL(getattr_fh(&h, &fh), NFS3_OK);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_GETATTR], 2);
	CU_ASSERT_EQUAL(h.fu.last_cred[NFSPROC3_GETATTR].uid, e->anonuid);
	CU_ASSERT_EQUAL(h.fu.last_cred[NFSPROC3_GETATTR].gid, e->anongid);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_guard", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "bad_handles_never_reach_upstream", test_bad_handles_never_reach_upstream);
	CU_add_test(s, "names_are_one_component", test_names_are_one_component);
	CU_add_test(s, "root_is_squashed", test_root_is_squashed);
	return 0;
}
