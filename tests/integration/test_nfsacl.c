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
 * is not seen here: the proxy passes the lists through unchanged.
 * (Ganesha 4.3 answers NFSACL on its NFS port whatever Enable_NFSACL
 * says, so an upstream without it is not produced here.)
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

/* GETACL of fh over c; the reply's status, or -1 (no reply); with
 * accept (may be NULL) the RPC accept status. */
static int getacl(struct wb_conn *c, const struct wb_fh *fh, GETACL3res *res,
		  uint32_t *accept)
{
	struct rawrpc_cred cred = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply rep;
	GETACL3args a;

	memset(&a, 0, sizeof(a));
	memset(res, 0, sizeof(*res));
	a.fh.data.data_len = fh->len;
	a.fh.data.data_val = (char *)(uintptr_t)fh->data;
	a.mask = NA_ACL | NA_ACLCNT | NA_DFACL | NA_DFACLCNT;
	if (rawrpc_call(c->fd, rawrpc_xid(), NFSACL_PROGRAM, NFSACL_V3,
			NFSACLPROC3_GETACL, &cred, (xdrproc_t)xdr_GETACL3args,
			&a, (xdrproc_t)xdr_GETACL3res, res, &rep) != RAWRPC_OK)
		return -1;
	if (accept)
		*accept = rep.accept;

	return rep.accept == SUCCESS ? (int)res->status : -1;
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
	    !CU_add_test(s, "bad_handle", test_bad_handle))
		return -1;
	return 0;
}
