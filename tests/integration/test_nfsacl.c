/* SPDX-License-Identifier: MIT */
/*
 * test_nfsacl: the NFSACL side protocol (program 100227 v3) through the
 * proxy, seen from the wire.
 *
 * integration.nfsacl (Ganesha with Enable_NFSACL): GETACL
 * and SETACL through the proxy answer exactly what Ganesha answers
 * directly (status, mask, both entry lists), one upstream call each; a
 * handle that does not check is NFS3ERR_BADHANDLE, asked of no one.
 * Debian 12's Ganesha 4.3 lists no entries and cannot set them (its
 * FSAL_VFS is built without POSIX ACLs), so a round trip of real entries
 * is not seen here: the proxy passes the lists through unchanged
 * (kernel.nfsacl_knfsd round-trips real entries against knfsd).
 * (Ganesha 4.3 answers NFSACL on its NFS port whatever Enable_NFSACL
 * says, so an upstream without it is not produced here.)
 *
 * GETACL replies cached with the file's attributes (issue 40), counted
 * exactly (nfscached_nfsacl_forwarded_total: upstream calls,
 * nfscached_nfsacl_cache_hits_total: answered from the cache): a second
 * GETACL of a file and mask is answered from the cache, equal to the
 * first and to Ganesha's; a SETATTR of the mode, a SETACL (failing, on
 * this Ganesha) and another mask each send the next GETACL upstream; a
 * chmod made in the export directory behind the proxy's back is served
 * from the cache until the proxy revalidates the attributes, then sends
 * the next GETACL upstream. The proxy's export trusts attributes for 300 s
 * (nfsacl_export.conf) and runs on its test clock
 * (NFSCACHED_TEST_CLOCK=1): the test advances it past that instead of
 * waiting.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "nfs3_prot.h"
#include "nfsacl3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"
#include "wbtest_util.h"

/* Linux's ACL entry types on the wire (include/linux/nfsacl.h). */
#define T_USER_OBJ	0x01
#define T_USER		0x02
#define T_GROUP_OBJ	0x04
#define T_MASK		0x10
#define T_OTHER		0x20

static struct wb_conn P, D;	/* the proxy, and Ganesha directly */

static int suite_init_both(void)
{
	return wb_open(&P, "proxy", 0, 0) == 0 &&
	       wb_open(&D, "direct", 0, 0) == 0 ? 0 : -1;
}

static int suite_clean(void)
{
	wb_close(&P);
	wb_close(&D);
	return 0;
}

/* path of name in the upstream's export directory. */
static void export_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
}

/* Run a shell command; its exit status. */
__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

#define FWD "nfscached_nfsacl_forwarded_total"
#define HIT "nfscached_nfsacl_cache_hits_total"
#define MASK_ALL (NA_ACL | NA_ACLCNT | NA_DFACL | NA_DFACLCNT)
#define MASK_FILE (NA_ACL | NA_ACLCNT)
#define AC_S 300	/* acregmin = acregmax (nfsacl_export.conf) */

/* GETACL of fh for mask over c; the reply's status, or -1 (no reply);
 * with accept (may be NULL) the RPC accept status. */
static int getacl_mask(struct wb_conn *c, const struct wb_fh *fh,
		       uint32_t mask, GETACL3res *res, uint32_t *accept)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	GETACL3args a;

	memset(&a, 0, sizeof(a));
	memset(res, 0, sizeof(*res));
	a.fh.data.data_len = fh->len;
	a.fh.data.data_val = (char *)(uintptr_t)fh->data;
	a.mask = mask;
	if (rawrpc_call(c->fd, rawrpc_xid(), NFSACL_PROGRAM, NFSACL_V3,
			NFSACLPROC3_GETACL, &cred, (xdrproc_t)xdr_GETACL3args,
			&a, (xdrproc_t)xdr_GETACL3res, res, &rep) != RAWRPC_OK)
		return -1;
	if (accept)
		*accept = rep.accept;

	return rep.accept == SUCCESS ? (int)res->status : -1;
}

/* GETACL of fh for every list and count (what the Linux client asks of
 * a directory). */
static int getacl(struct wb_conn *c, const struct wb_fh *fh, GETACL3res *res,
		  uint32_t *accept)
{
	return getacl_mask(c, fh, MASK_ALL, res, accept);
}

/* Print an ACL (a failing comparison's evidence). */
static void acl_print(const char *who, const GETACL3res *r)
{
	const nfsacl_secattr *s = &r->GETACL3res_u.resok.acl;

	fprintf(stderr, "nfsacl: %s: status %d, mask %#x, %u entries:", who,
		(int)r->status, s->mask, s->aclcnt);
	for (u_int i = 0; i < s->aclent.aclent_len; i++)
		fprintf(stderr, " %#x/%u/%o", s->aclent.aclent_val[i].type,
			s->aclent.aclent_val[i].id, s->aclent.aclent_val[i].perm);
	fprintf(stderr, "; %u default\n", s->dfaclcnt);
}

/* Two GETACL results say the same (status, mask, both lists). */
static bool same_acl(const GETACL3res *a, const GETACL3res *b)
{
	const nfsacl_secattr *x = &a->GETACL3res_u.resok.acl;
	const nfsacl_secattr *y = &b->GETACL3res_u.resok.acl;

	if (a->status != b->status)
		return false;
	if (a->status != NFS3_OK)
		return true;
	return x->mask == y->mask && x->aclcnt == y->aclcnt &&
	       x->dfaclcnt == y->dfaclcnt &&
	       x->aclent.aclent_len == y->aclent.aclent_len &&
	       x->dfaclent.dfaclent_len == y->dfaclent.dfaclent_len &&
	       (!x->aclent.aclent_len ||
		memcmp(x->aclent.aclent_val, y->aclent.aclent_val,
		       x->aclent.aclent_len * sizeof(nfsacl_ent)) == 0) &&
	       (!x->dfaclent.dfaclent_len ||
		memcmp(x->dfaclent.dfaclent_val, y->dfaclent.dfaclent_val,
		       x->dfaclent.dfaclent_len * sizeof(nfsacl_ent)) == 0);
}

/* GETACL through the proxy answers what Ganesha answers directly, with
 * one upstream call. (Debian 12's Ganesha 4.3 lists no entries: its
 * FSAL_VFS is built without POSIX ACLs; a server with them lists them,
 * and the proxy passes them as they are.) */
static void test_getacl_as_upstream(void)
{
	char path[4096];
	struct wb_fh pfh, dfh;
	fattr3 at;
	GETACL3res pres, dres;
	double fwd = wb_metric("nfscached_nfsacl_forwarded_total");

	export_path("acl-get", path, sizeof(path));
	CU_ASSERT_EQUAL_FATAL(sh("echo data >'%s'", path), 0);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&P, &P.root, "acl-get", &pfh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, "acl-get", &dfh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL(getacl(&P, &pfh, &pres, NULL), NFS3_OK);
	CU_ASSERT_EQUAL(getacl(&D, &dfh, &dres, NULL), NFS3_OK);
	acl_print("proxy", &pres);
	acl_print("direct", &dres);
	CU_ASSERT_TRUE(same_acl(&pres, &dres));
	CU_ASSERT_EQUAL(pres.GETACL3res_u.resok.acl.mask,
			NA_ACL | NA_ACLCNT | NA_DFACL | NA_DFACLCNT);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nfsacl_forwarded_total") - fwd, 1);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&pres);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&dres);
}

/* SETACL of fh over c: the reply's status, or -1 - the RPC accept status
 * when it is not SUCCESS, or -100 (no reply). */
static int setacl(struct wb_conn *c, const struct wb_fh *fh)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	SETACL3args a;
	SETACL3res res;
	nfsacl_ent ents[5] = {
		{ T_USER_OBJ, 0, 6 }, { T_USER, 4321, 4 },
		{ T_GROUP_OBJ, 0, 4 }, { T_MASK, 0, 4 }, { T_OTHER, 0, 0 },
	};
	int st = -100;

	memset(&a, 0, sizeof(a));
	memset(&res, 0, sizeof(res));
	a.fh.data.data_len = fh->len;
	a.fh.data.data_val = (char *)(uintptr_t)fh->data;
	a.acl.mask = NA_ACL | NA_ACLCNT;
	a.acl.aclcnt = 5;
	a.acl.aclent.aclent_len = 5;
	a.acl.aclent.aclent_val = ents;
	if (rawrpc_call(c->fd, rawrpc_xid(), NFSACL_PROGRAM, NFSACL_V3,
			NFSACLPROC3_SETACL, &cred, (xdrproc_t)xdr_SETACL3args,
			&a, (xdrproc_t)xdr_SETACL3res, &res,
			&rep) == RAWRPC_OK)
		st = rep.accept == SUCCESS ? (int)res.status :
					     -1 - (int)rep.accept;
	xdr_free((xdrproc_t)xdr_SETACL3res, (char *)&res);
	return st;
}

/* SETACL through the proxy gets what Ganesha answers directly, and the
 * ACL then reads back through the proxy as directly. */
static void test_setacl_as_upstream(void)
{
	char path[4096];
	struct wb_fh pfh, dfh;
	fattr3 at;
	GETACL3res pres, dres;
	int pst, dst;

	export_path("acl-set-p", path, sizeof(path));
	CU_ASSERT_EQUAL_FATAL(sh("echo data >'%s'", path), 0);
	export_path("acl-set-d", path, sizeof(path));
	CU_ASSERT_EQUAL_FATAL(sh("echo data >'%s'", path), 0);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&P, &P.root, "acl-set-p", &pfh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, "acl-set-d", &dfh, &at),
			      NFS3_OK);
	pst = setacl(&P, &pfh);
	dst = setacl(&D, &dfh);
	fprintf(stderr, "nfsacl: SETACL through the proxy %d, directly %d\n",
		pst, dst);
	CU_ASSERT_NOT_EQUAL(pst, -100);
	CU_ASSERT_EQUAL(pst, dst);
	CU_ASSERT_EQUAL(getacl(&P, &pfh, &pres, NULL), getacl(&D, &dfh, &dres,
							       NULL));
	CU_ASSERT_TRUE(same_acl(&pres, &dres));
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&pres);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&dres);
}

/* The proxy's upstream GETACLs and cache hits since (*fwd, *hit) are
 * want_fwd and want_hit (what: the step, for the log); then (*fwd, *hit)
 * become the counts now. */
static void expect_counts(const char *what, double *fwd, double *hit,
			  double want_fwd, double want_hit)
{
	double f = wb_metric(FWD), h = wb_metric(HIT);

	fprintf(stderr, "nfsacl: %s: %.0f upstream, %.0f from the cache "
		"(want %.0f, %.0f)\n", what, f - *fwd, h - *hit, want_fwd,
		want_hit);
	CU_ASSERT_EQUAL(f - *fwd, want_fwd);
	CU_ASSERT_EQUAL(h - *hit, want_hit);
	*fwd = f;
	*hit = h;
}

/* GETACL of fh for mask through the proxy answers NFS3_OK what first
 * (may be NULL) answered. */
static void getacl_same(const struct wb_fh *fh, uint32_t mask,
			const GETACL3res *first)
{
	GETACL3res res;

	CU_ASSERT_EQUAL(getacl_mask(&P, fh, mask, &res, NULL), NFS3_OK);
	CU_ASSERT_EQUAL(res.GETACL3res_u.resok.acl.mask, mask);
	if (first && !same_acl(&res, first)) {
		acl_print("proxy, again", &res);
		acl_print("proxy, first", first);
		CU_FAIL("a GETACL through the proxy changed its answer");
	}
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&res);
}

/* Create name in the export directory (mode 0644) and look it up through
 * the proxy (its attributes then cached) into *fh. */
static int make_file(const char *name, struct wb_fh *fh)
{
	char path[4096];
	fattr3 at;

	export_path(name, path, sizeof(path));
	if (sh("echo data >'%s' && chmod 644 '%s'", path, path) != 0)
		return -1;
	return wb_lookup(&P, &P.root, name, fh, &at) == NFS3_OK ? 0 : -1;
}

/* A second GETACL of a file and mask is answered from the cache, equal
 * to the first and to Ganesha's own; a SETATTR of the mode, a SETACL
 * (failing or not) and another mask each send the next GETACL upstream,
 * whose reply is then cached again. */
static void test_getacl_cached(void)
{
	struct wb_fh pfh, dfh;
	fattr3 at;
	GETACL3res first, dres;
	double fwd = wb_metric(FWD), hit = wb_metric(HIT);
	int pst;

	CU_ASSERT_EQUAL_FATAL(make_file("acl-cache", &pfh), 0);
	CU_ASSERT_EQUAL_FATAL(wb_lookup(&D, &D.root, "acl-cache", &dfh, &at),
			      NFS3_OK);
	CU_ASSERT_EQUAL_FATAL(getacl(&P, &pfh, &first, NULL), NFS3_OK);
	expect_counts("first GETACL", &fwd, &hit, 1, 0);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("second GETACL", &fwd, &hit, 0, 1);
	CU_ASSERT_EQUAL(getacl(&D, &dfh, &dres, NULL), NFS3_OK);
	CU_ASSERT_TRUE(same_acl(&first, &dres));
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&dres);

	/* A SETATTR of the mode through the proxy drops it. */
	CU_ASSERT_EQUAL(wb_setattr(&P, &pfh, -1, 0600, NULL), NFS3_OK);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL after SETATTR mode", &fwd, &hit, 1, 0);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL again", &fwd, &hit, 0, 1);

	/* So does a SETACL through the proxy, whatever it answers (this
	 * Ganesha: GARBAGE_ARGS); it is one upstream call itself. */
	pst = setacl(&P, &pfh);
	fprintf(stderr, "nfsacl: SETACL through the proxy: %d\n", pst);
	CU_ASSERT_NOT_EQUAL(pst, -100);
	expect_counts("SETACL", &fwd, &hit, 1, 0);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL after SETACL", &fwd, &hit, 1, 0);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL again", &fwd, &hit, 0, 1);

	/* Another mask is another reply: upstream once, then cached; the
	 * first mask's reply stays. */
	getacl_same(&pfh, MASK_FILE, NULL);
	expect_counts("GETACL of another mask", &fwd, &hit, 1, 0);
	getacl_same(&pfh, MASK_FILE, NULL);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("both masks again", &fwd, &hit, 0, 2);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&first);
}

/* A chmod in the export directory behind the proxy's back: the cached
 * reply is served while the proxy trusts the file's attributes; once a
 * GETATTR past acregmax shows the new ctime it is dropped and the next
 * GETACL goes upstream. Attributes revalidated unchanged keep it. */
static void test_getacl_after_change_behind(void)
{
	char path[4096];
	struct wb_fh pfh;
	fattr3 at;
	GETACL3res first;
	double fwd = wb_metric(FWD), hit = wb_metric(HIT);

	CU_ASSERT_EQUAL_FATAL(make_file("acl-behind", &pfh), 0);
	CU_ASSERT_EQUAL_FATAL(getacl(&P, &pfh, &first, NULL), NFS3_OK);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL twice", &fwd, &hit, 1, 1);

	export_path("acl-behind", path, sizeof(path));
	CU_ASSERT_EQUAL_FATAL(sh("chmod 600 '%s'", path), 0);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL within acregmax of the chmod", &fwd, &hit, 0, 1);

	CU_ASSERT_FATAL(tclock_advance(AC_S + 1) == 0);
	CU_ASSERT_EQUAL(wb_getattr(&P, &pfh, &at), NFS3_OK);
	CU_ASSERT_EQUAL(at.mode & 07777, 0600);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL once the chmod was seen", &fwd, &hit, 1, 0);

	CU_ASSERT_FATAL(tclock_advance(AC_S + 1) == 0);
	CU_ASSERT_EQUAL(wb_getattr(&P, &pfh, &at), NFS3_OK);
	getacl_same(&pfh, MASK_ALL, &first);
	expect_counts("GETACL after unchanged attributes", &fwd, &hit, 0, 1);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&first);
}

static void test_bad_handle(void)
{
	struct wb_fh fh = { .len = 32 };
	GETACL3res g;
	double fwd = wb_metric("nfscached_nfsacl_forwarded_total");

	memset(fh.data, 0x5a, fh.len);
	CU_ASSERT_EQUAL(getacl(&P, &fh, &g, NULL), NFS3ERR_BADHANDLE);
	CU_ASSERT_EQUAL(wb_metric("nfscached_nfsacl_forwarded_total"), fwd);
	xdr_free((xdrproc_t)xdr_GETACL3res, (char *)&g);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfsacl", suite_init_both, suite_clean);
	if (!s ||
	    !CU_add_test(s, "getacl_as_upstream", test_getacl_as_upstream) ||
	    !CU_add_test(s, "setacl_as_upstream", test_setacl_as_upstream) ||
	    !CU_add_test(s, "bad_handle", test_bad_handle) ||
	    !CU_add_test(s, "getacl_cached", test_getacl_cached) ||
	    !CU_add_test(s, "getacl_after_change_behind",
			 test_getacl_after_change_behind))
		return -1;
	return 0;
}
