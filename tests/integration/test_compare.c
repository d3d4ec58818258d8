/* SPDX-License-Identifier: MIT */
/*
 * test_compare: differential test of every NFSv3 procedure through the
 * proxy (NFSC_PROXY_URL) against the same procedure sent directly to
 * Ganesha (NFSC_DIRECT_URL).
 *
 * Each test makes a pair of sibling directories under the export root,
 * cmp-p-PID-TAG through the proxy and cmp-d-PID-TAG directly, runs the same
 * raw calls in both and compares what must match: status codes, the
 * attributes type, mode, size, nlink, uid, gid (and rdev for devices),
 * data, directory entry names and counts. Handles used on the proxy path
 * always come from the proxy (its MOUNT root and its replies), never from
 * Ganesha. Side 0 is the proxy, side 1 the direct path.
 *
 * Where RFC 1813 fixes the outcome (GUARDED CREATE of an existing name is
 * EXIST, RMDIR of a non-empty directory NOTEMPTY, ...) the test also asserts
 * that value on both sides. Every check is counted (nfsclient's CHECK
 * macros) and the total is printed at exit.
 *
 * With NFSC_PROXY_URL equal to NFSC_DIRECT_URL (developing against Ganesha
 * alone) the checks of what only the proxy promises are skipped: every
 * byte of a handle authenticated, FSINFO rtpref/wtpref within the maxima.
 * All clients fail fast: after one call times out, later calls on that
 * client fail at once, so a hung proxy costs one timeout, not hundreds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/CUnit.h>
#include "cunit_main.h"
#include "nfsclient.h"

enum { P = 0, D = 1, NSIDES = 2 };

static const char *const side_name[NSIDES] = { "proxy", "direct" };
static const char side_tag[NSIDES] = { 'p', 'd' };

/* Root clients and uid 4242 clients, per side. */
static struct nfsc *cl[NSIDES];
static struct nfsc *cl42[NSIDES];

/*
 * Both URLs name the same server (developing against Ganesha alone):
 * checks of what only the proxy promises are skipped.
 */
static int same_server;

/* A per-test directory on each side. */
struct pair {
	nfs_fh3 dir[NSIDES];
	fattr3 attr[NSIDES];
};

/* The outcome of a call that may yield a handle and attributes. */
struct obj {
	int st;
	int has_fh;
	nfs_fh3 fh;
	int has_attr;
	fattr3 attr;
};

#define BOTH(s) for (int s = 0; s < NSIDES; s++)

/* Check that both sides answered the same status. */
#define SAME_STAT(st, what) same_stat(st, what, __FILE__, __LINE__)

static void same_stat(const int st[NSIDES], const char *what,
		      const char *file, unsigned line)
{
	tcheck(st[P] == st[D], file, line,
	       "%s: proxy %s (%d), direct %s (%d)", what,
	       nfsc_stat_name(st[P]), st[P], nfsc_stat_name(st[D]), st[D]);
}

/* Check that both sides answered want. */
#define BOTH_STAT(st, want, what) both_stat(st, want, what, __FILE__, __LINE__)

static void both_stat(const int st[NSIDES], int want, const char *what,
		      const char *file, unsigned line)
{
	same_stat(st, what, file, line);
	BOTH(s)
		tcheck(st[s] == want, file, line,
		       "%s (%s): got %s, want %s", what, side_name[s],
		       nfsc_stat_name(st[s]), nfsc_stat_name(want));
}

/* Compare one attribute field across the sides. */
#define SAME_FIELD(a, f, what)                                               \
	tcheck((a)[P].f == (a)[D].f, __FILE__, __LINE__,                     \
	       "%s: " #f " proxy %llu, direct %llu", what,                   \
	       (unsigned long long)(a)[P].f, (unsigned long long)(a)[D].f)

/* Check that the attributes that must match do. */
static void same_attr(const fattr3 a[NSIDES], const char *what)
{
	SAME_FIELD(a, type, what);
	SAME_FIELD(a, mode, what);
	SAME_FIELD(a, size, what);
	SAME_FIELD(a, nlink, what);
	SAME_FIELD(a, uid, what);
	SAME_FIELD(a, gid, what);
	if (a[P].type == NF3CHR || a[P].type == NF3BLK) {
		SAME_FIELD(a, rdev.specdata1, what);
		SAME_FIELD(a, rdev.specdata2, what);
	}
}

/* Check that the sides agree on whether attributes came and they match. */
static void same_obj_attr(const struct obj o[NSIDES], const char *what)
{
	fattr3 a[NSIDES];

	CHECK_MSG(o[P].has_attr == o[D].has_attr,
		  "%s: attributes present: proxy %d, direct %d", what,
		  o[P].has_attr, o[D].has_attr);
	if (!o[P].has_attr || !o[D].has_attr)
		return;
	BOTH(s)
		a[s] = o[s].attr;
	same_attr(a, what);
}

/* Release a struct obj's handle. */
static void obj_free(struct obj *o)
{
	if (o->has_fh)
		nfsc_fh_free(&o->fh);
	memset(o, 0, sizeof(*o));
}

/* Take the status, handle and attributes of a create-like reply. */
static void obj_take(struct obj *o, int st, post_op_fh3 *fh,
		     const post_op_attr *pa)
{
	memset(o, 0, sizeof(*o));
	o->st = st;
	if (st != NFS3_OK)
		return;
	if (fh->handle_follows) {
		nfsc_fh_copy(&o->fh, &fh->post_op_fh3_u.handle);
		o->has_fh = 1;
	}
	if (pa->attributes_follow) {
		o->attr = pa->post_op_attr_u.attributes;
		o->has_attr = 1;
	}
}

/* GETATTR on both sides and compare; a[] receives the attributes. */
static void getattr_both(const nfs_fh3 fh[NSIDES], fattr3 a[NSIDES],
			 const char *what)
{
	int st[NSIDES];

	BOTH(s)
		st[s] = nfsc_getattr(cl[s], &fh[s], &a[s]);
	BOTH_STAT(st, NFS3_OK, what);
	if (st[P] == NFS3_OK && st[D] == NFS3_OK)
		same_attr(a, what);
}

/* Make the pair of per-test directories cmp-{p,d}-PID-tag, mode 0755. */
static void pair_make(struct pair *pp, const char *tag)
{
	char name[128];
	int st[NSIDES];

	memset(pp, 0, sizeof(*pp));
	BOTH(s) {
		snprintf(name, sizeof(name), "cmp-%c-%ld-%s", side_tag[s],
			 (long)getpid(), tag);
		st[s] = nfsc_mkdir(cl[s], nfsc_root(cl[s]), name, 0755,
				   &pp->dir[s], &pp->attr[s]);
	}
	BOTH_STAT(st, NFS3_OK, "MKDIR pair directory");
	same_attr(pp->attr, "MKDIR pair directory attributes");
}

/* Release the pair's handles (the directories stay for inspection). */
static void pair_free(struct pair *pp)
{
	BOTH(s)
		nfsc_fh_free(&pp->dir[s]);
}

/* CREATE name in dir with mode (UNCHECKED) on side s. */
static void create_on(int s, const nfs_fh3 *dir, const char *name,
		      uint32_t mode, struct obj *o)
{
	memset(o, 0, sizeof(*o));
	o->st = nfsc_create(cl[s], dir, name, mode, &o->fh, &o->attr);
	o->has_fh = o->st == NFS3_OK && o->fh.data.data_val != NULL;
	o->has_attr = o->st == NFS3_OK && o->attr.type != 0;
}

/* CREATE the same file in both directories and compare. */
static void create_both(const nfs_fh3 dir[NSIDES], const char *name,
			uint32_t mode, struct obj o[NSIDES])
{
	int st[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "CREATE %s", name);
	BOTH(s) {
		create_on(s, &dir[s], name, mode, &o[s]);
		st[s] = o[s].st;
	}
	BOTH_STAT(st, NFS3_OK, what);
	BOTH(s)
		CHECK_MSG(o[s].has_fh, "%s (%s): no handle", what,
			  side_name[s]);
	same_obj_attr(o, what);
}

/* MKDIR the same directory in both and compare. */
static void mkdir_both(const nfs_fh3 dir[NSIDES], const char *name,
		       uint32_t mode, struct obj o[NSIDES])
{
	int st[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "MKDIR %s", name);
	BOTH(s) {
		memset(&o[s], 0, sizeof(o[s]));
		o[s].st = st[s] = nfsc_mkdir(cl[s], &dir[s], name, mode,
					     &o[s].fh, &o[s].attr);
		o[s].has_fh = st[s] == NFS3_OK && o[s].fh.data.data_val != NULL;
		o[s].has_attr = st[s] == NFS3_OK && o[s].attr.type != 0;
	}
	BOTH_STAT(st, NFS3_OK, what);
	same_obj_attr(o, what);
}

/* LOOKUP name on both sides; o[] receives handles and attributes. */
static void lookup_both(const nfs_fh3 dir[NSIDES], const char *name,
			struct obj o[NSIDES], int want)
{
	int st[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "LOOKUP %s", name);
	BOTH(s) {
		memset(&o[s], 0, sizeof(o[s]));
		o[s].st = st[s] = nfsc_lookup(cl[s], &dir[s], name, &o[s].fh,
					      &o[s].attr);
		o[s].has_fh = st[s] == NFS3_OK;
		o[s].has_attr = st[s] == NFS3_OK && o[s].attr.type != 0;
	}
	BOTH_STAT(st, want, what);
	if (want == NFS3_OK)
		same_obj_attr(o, what);
}

/* Fill buf with the test pattern for absolute offsets [off, off+n). */
static void pattern(unsigned char *buf, size_t n, uint64_t off, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull ^ seed;

		x ^= x >> 29;
		buf[i] = (unsigned char)(x * 0xBF58476D1CE4E5B9ull >> 56);
	}
}

/* Write buf at off with stable on both sides and compare the replies. */
static void write_both(const nfs_fh3 fh[NSIDES], uint64_t off,
		       const void *buf, uint32_t len, int stable,
		       char verf[NSIDES][NFS3_WRITEVERFSIZE])
{
	int st[NSIDES], committed[NSIDES];
	uint32_t count[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "WRITE off %llu len %u stable %d",
		 (unsigned long long)off, len, stable);
	BOTH(s)
		st[s] = nfsc_write(cl[s], &fh[s], off, buf, len, stable,
				   &count[s], &committed[s], verf[s]);
	BOTH_STAT(st, NFS3_OK, what);
	BOTH(s) {
		CHECK_MSG(count[s] == len, "%s (%s): count %u", what,
			  side_name[s], count[s]);
		CHECK_MSG(committed[s] >= stable && committed[s] <= FILE_SYNC,
			  "%s (%s): committed %d below asked %d", what,
			  side_name[s], committed[s], stable);
	}
}

/* Read [off, off+len) on both sides; check against want and each other. */
static void read_both(const nfs_fh3 fh[NSIDES], uint64_t off, uint32_t len,
		      const unsigned char *want, uint32_t want_count,
		      int want_eof)
{
	unsigned char *buf[NSIDES];
	uint32_t count[NSIDES];
	int st[NSIDES], eof[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "READ off %llu len %u",
		 (unsigned long long)off, len);
	BOTH(s) {
		buf[s] = calloc(1, len + 1);
		st[s] = nfsc_read(cl[s], &fh[s], off, len, buf[s], &count[s],
				  &eof[s]);
	}
	BOTH_STAT(st, NFS3_OK, what);
	CHECK_MSG(count[P] == count[D], "%s: count proxy %u, direct %u", what,
		  count[P], count[D]);
	CHECK_MSG(eof[P] == eof[D], "%s: eof proxy %d, direct %d", what,
		  eof[P], eof[D]);
	BOTH(s) {
		CHECK_MSG(count[s] == want_count, "%s (%s): count %u, want %u",
			  what, side_name[s], count[s], want_count);
		if (want_eof >= 0)
			CHECK_MSG(eof[s] == want_eof,
				  "%s (%s): eof %d, want %d", what,
				  side_name[s], eof[s], want_eof);
		CHECK_MSG(count[s] != want_count ||
				  memcmp(buf[s], want, want_count) == 0,
			  "%s (%s): data differs", what, side_name[s]);
		free(buf[s]);
	}
}

/* Connect the four clients; a suite without them cannot run. */
static int suite_init(void)
{
	const char *url[NSIDES] = { getenv("NFSC_PROXY_URL"),
				    getenv("NFSC_DIRECT_URL") };

	BOTH(s) {
		if (!url[s]) {
			fprintf(stderr, "test_compare: %s URL not set\n",
				side_name[s]);
			return -1;
		}
	}
	same_server = strcmp(url[P], url[D]) == 0;
	if (same_server)
		printf("\n  NOTE: proxy URL is the direct URL: proxy-only "
		       "checks skipped\n");
	BOTH(s) {
		cl[s] = nfsc_connect(url[s], 0, 0);
		cl42[s] = nfsc_connect(url[s], 4242, 4242);
		if (!cl[s] || !cl42[s])
			return -1;
		nfsc_set_fail_fast(cl[s], 1);
		nfsc_set_fail_fast(cl42[s], 1);
	}
	return 0;
}

/* Close the clients. */
static int suite_cleanup(void)
{
	BOTH(s) {
		nfsc_close(&cl[s]);
		nfsc_close(&cl42[s]);
	}
	return 0;
}

/* NULL answers on both paths; the roots look alike. */
static void test_null_and_root(void)
{
	fattr3 a[NSIDES];
	int st[NSIDES];

	BOTH(s)
		st[s] = nfsc_null(cl[s]);
	BOTH_STAT(st, 0, "NULL");
	BOTH(s)
		st[s] = nfsc_getattr(cl[s], nfsc_root(cl[s]), &a[s]);
	BOTH_STAT(st, NFS3_OK, "GETATTR root");
	SAME_FIELD(a, type, "GETATTR root");
	SAME_FIELD(a, mode, "GETATTR root");
	SAME_FIELD(a, uid, "GETATTR root");
	SAME_FIELD(a, gid, "GETATTR root");
	SAME_FIELD(a, fileid, "GETATTR root");
	CHECK_EQ(a[P].type, NF3DIR);
}

/* GETATTR of a new file with data. */
static void test_getattr(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	fattr3 a[NSIDES];
	char verf[NSIDES][NFS3_WRITEVERFSIZE];
	unsigned char buf[1000];
	nfs_fh3 fh[NSIDES];

	pair_make(&pp, "getattr");
	create_both(pp.dir, "f", 0640, o);
	BOTH(s)
		fh[s] = o[s].fh;
	pattern(buf, sizeof(buf), 0, 1);
	write_both(fh, 0, buf, sizeof(buf), FILE_SYNC, verf);
	getattr_both(fh, a, "GETATTR f");
	CHECK_EQ(a[P].type, NF3REG);
	CHECK_EQ(a[P].mode, 0640);
	CHECK_EQ(a[P].size, 1000);
	CHECK_EQ(a[P].nlink, 1);
	getattr_both(pp.dir, a, "GETATTR pair dir");
	CHECK_EQ(a[P].type, NF3DIR);
	CHECK_EQ(a[P].nlink, 2);
	BOTH(s)
		obj_free(&o[s]);
	pair_free(&pp);
}

/* SETATTR with sa (and a ctime guard when guard) on both; expect want. */
static void setattr_both(const nfs_fh3 fh[NSIDES], const sattr3 *sa,
			 const nfstime3 *guard, int want, const char *what)
{
	SETATTR3res r[NSIDES];
	int st[NSIDES];

	BOTH(s) {
		SETATTR3args a = { .object = fh[s], .new_attributes = *sa };

		if (guard) {
			a.guard.check = 1;
			a.guard.sattrguard3_u.obj_ctime = guard[s];
		}
		st[s] = nfsc_call(cl[s], NFS3_SETATTR, &a, &r[s],
				  NFSC_TIMEOUT_MS);
	}
	BOTH_STAT(st, want, what);
	if (st[P] == NFS3_OK && st[D] == NFS3_OK) {
		const post_op_attr *pa[NSIDES];
		fattr3 a[NSIDES];

		BOTH(s)
			pa[s] = &r[s].SETATTR3res_u.resok.obj_wcc.after;
		CHECK_MSG(pa[P]->attributes_follow == pa[D]->attributes_follow,
			  "%s: wcc after present: proxy %u, direct %u", what,
			  pa[P]->attributes_follow, pa[D]->attributes_follow);
		if (pa[P]->attributes_follow && pa[D]->attributes_follow) {
			BOTH(s)
				a[s] = pa[s]->post_op_attr_u.attributes;
			same_attr(a, what);
		}
	}
}

/* SETATTR that must fail the same way on both sides. */
static void setattr_both_any(const nfs_fh3 fh[NSIDES], const sattr3 *sa,
			     const char *what)
{
	SETATTR3res r;
	int st[NSIDES];

	BOTH(s) {
		SETATTR3args a = { .object = fh[s], .new_attributes = *sa };

		st[s] = nfsc_call(cl[s], NFS3_SETATTR, &a, &r, NFSC_TIMEOUT_MS);
	}
	SAME_STAT(st, what);
	CHECK_MSG(st[P] != NFS3_OK, "%s succeeded", what);
}

/* SETATTR of mode, owner, size, times, and with a ctime guard. */
static void test_setattr(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	fattr3 a[NSIDES];
	nfs_fh3 fh[NSIDES];
	nfstime3 guard[NSIDES];
	sattr3 sa;
	unsigned char buf[200];

	pair_make(&pp, "setattr");
	create_both(pp.dir, "f", 0644, o);
	BOTH(s)
		fh[s] = o[s].fh;

	memset(&sa, 0, sizeof(sa));
	sa.mode.set_it = 1;
	sa.mode.set_mode3_u.mode = 0600;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR mode 0600");
	getattr_both(fh, a, "GETATTR after mode");
	CHECK_EQ(a[P].mode, 0600);
	CHECK_EQ(a[D].mode, 0600);

	memset(&sa, 0, sizeof(sa));
	sa.uid.set_it = 1;
	sa.uid.set_uid3_u.uid = 1234;
	sa.gid.set_it = 1;
	sa.gid.set_gid3_u.gid = 5678;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR uid 1234 gid 5678");
	getattr_both(fh, a, "GETATTR after chown");
	CHECK_EQ(a[P].uid, 1234);
	CHECK_EQ(a[P].gid, 5678);

	memset(&sa, 0, sizeof(sa));
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = 10000;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR size 10000");
	getattr_both(fh, a, "GETATTR after grow");
	CHECK_EQ(a[P].size, 10000);
	sa.size.set_size3_u.size = 100;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR size 100");
	getattr_both(fh, a, "GETATTR after shrink");
	CHECK_EQ(a[P].size, 100);
	memset(buf, 0, sizeof(buf));
	read_both(fh, 0, sizeof(buf), buf, 100, 1);

	memset(&sa, 0, sizeof(sa));
	sa.atime.set_it = SET_TO_CLIENT_TIME;
	sa.atime.set_atime_u.atime.seconds = 1000000000;
	sa.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.mtime.set_mtime_u.mtime.seconds = 1234567890;
	sa.mtime.set_mtime_u.mtime.nseconds = 500;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR client times");
	getattr_both(fh, a, "GETATTR after client times");
	BOTH(s) {
		CHECK_EQ(a[s].atime.seconds, 1000000000);
		CHECK_EQ(a[s].mtime.seconds, 1234567890);
	}
	SAME_FIELD(a, mtime.nseconds, "GETATTR after client times");

	memset(&sa, 0, sizeof(sa));
	sa.mtime.set_it = SET_TO_SERVER_TIME;
	setattr_both(fh, &sa, NULL, NFS3_OK, "SETATTR server mtime");
	getattr_both(fh, a, "GETATTR after server time");
	BOTH(s)
		CHECK_MSG(a[s].mtime.seconds > 1234567890,
			  "server mtime (%s) %u", side_name[s],
			  a[s].mtime.seconds);

	/* A guard with a wrong ctime fails; with the current one it passes. */
	memset(&sa, 0, sizeof(sa));
	sa.mode.set_it = 1;
	sa.mode.set_mode3_u.mode = 0640;
	BOTH(s)
		guard[s] = (nfstime3){ 1, 0 };
	setattr_both(fh, &sa, guard, NFS3ERR_NOT_SYNC, "SETATTR stale guard");
	BOTH(s)
		guard[s] = a[s].ctime;
	setattr_both(fh, &sa, guard, NFS3_OK, "SETATTR current guard");
	getattr_both(fh, a, "GETATTR after guarded mode");
	CHECK_EQ(a[P].mode, 0640);

	sa.mode.set_mode3_u.mode = 0700;
	setattr_both(pp.dir, &sa, NULL, NFS3_OK, "SETATTR dir mode 0700");
	getattr_both(pp.dir, a, "GETATTR dir after mode");
	CHECK_EQ(a[P].mode, 0700);
	BOTH(s)
		obj_free(&o[s]);
	pair_free(&pp);
}

/* LOOKUP of files, missing names, ".", "..", through a file, long names. */
static void test_lookup(void)
{
	struct pair pp;
	struct obj f[NSIDES], o[NSIDES];
	fattr3 root[NSIDES];
	nfs_fh3 fh[NSIDES];
	char longname[300];
	int st[NSIDES];

	pair_make(&pp, "lookup");
	create_both(pp.dir, "file", 0644, f);
	BOTH(s)
		fh[s] = f[s].fh;
	lookup_both(pp.dir, "file", o, NFS3_OK);
	BOTH(s) {
		CHECK_MSG(o[s].attr.fileid == f[s].attr.fileid,
			  "LOOKUP file (%s): fileid %llu, created %llu",
			  side_name[s], (unsigned long long)o[s].attr.fileid,
			  (unsigned long long)f[s].attr.fileid);
		obj_free(&o[s]);
	}
	lookup_both(pp.dir, "missing", o, NFS3ERR_NOENT);
	lookup_both(fh, "x", o, NFS3ERR_NOTDIR);

	lookup_both(pp.dir, ".", o, NFS3_OK);
	BOTH(s) {
		if (o[s].st == NFS3_OK)
			CHECK_MSG(o[s].attr.fileid == pp.attr[s].fileid,
				  "LOOKUP . (%s) is not the directory",
				  side_name[s]);
		obj_free(&o[s]);
	}
	lookup_both(pp.dir, "..", o, NFS3_OK);
	BOTH(s) {
		st[s] = nfsc_getattr(cl[s], nfsc_root(cl[s]), &root[s]);
		if (o[s].st == NFS3_OK && st[s] == NFS3_OK)
			CHECK_MSG(o[s].attr.fileid == root[s].fileid,
				  "LOOKUP .. (%s) is not the root",
				  side_name[s]);
		obj_free(&o[s]);
	}
	/* ".." of the export root: whatever Ganesha says, the same. */
	BOTH(s) {
		st[s] = nfsc_lookup(cl[s], nfsc_root(cl[s]), "..", NULL, NULL);
	}
	SAME_STAT(st, "LOOKUP .. of the export root");

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	BOTH(s)
		st[s] = nfsc_lookup(cl[s], &pp.dir[s], longname, NULL, NULL);
	BOTH_STAT(st, NFS3ERR_NAMETOOLONG, "LOOKUP 299-byte name");
	BOTH(s)
		obj_free(&f[s]);
	pair_free(&pp);
}

/* ACCESS on side s with client c; returns the status, *bits the access. */
static int access_on(struct nfsc *c, const nfs_fh3 *fh, uint32_t *bits)
{
	ACCESS3args a = { .object = *fh, .access = 0x3f };
	ACCESS3res r;
	int st = nfsc_call(c, NFS3_ACCESS, &a, &r, NFSC_TIMEOUT_MS);

	*bits = st == NFS3_OK ? r.ACCESS3res_u.resok.access : 0;
	return st;
}

/* ACCESS of all six bits, as root and as uid 4242. */
static void test_access(void)
{
	struct pair pp;
	struct obj f[NSIDES], d[NSIDES];
	uint32_t bits[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "access");
	create_both(pp.dir, "f", 0644, f);
	mkdir_both(pp.dir, "private", 0700, d);

	BOTH(s)
		st[s] = access_on(cl[s], &f[s].fh, &bits[s]);
	BOTH_STAT(st, NFS3_OK, "ACCESS f as root");
	CHECK_MSG(bits[P] == bits[D],
		  "ACCESS f as root: proxy 0x%x, direct 0x%x", bits[P],
		  bits[D]);
	CHECK(bits[P] & ACCESS3_READ);
	CHECK(bits[P] & ACCESS3_MODIFY);

	BOTH(s)
		st[s] = access_on(cl42[s], &f[s].fh, &bits[s]);
	BOTH_STAT(st, NFS3_OK, "ACCESS f as 4242");
	CHECK_MSG(bits[P] == bits[D],
		  "ACCESS f as 4242: proxy 0x%x, direct 0x%x", bits[P],
		  bits[D]);
	CHECK(bits[P] & ACCESS3_READ);
	CHECK(!(bits[P] & ACCESS3_MODIFY));

	BOTH(s)
		st[s] = access_on(cl42[s], &d[s].fh, &bits[s]);
	BOTH_STAT(st, NFS3_OK, "ACCESS 0700 dir as 4242");
	CHECK_MSG(bits[P] == bits[D],
		  "ACCESS 0700 dir as 4242: proxy 0x%x, direct 0x%x", bits[P],
		  bits[D]);
	CHECK(!(bits[P] & (ACCESS3_LOOKUP | ACCESS3_READ | ACCESS3_MODIFY)));
	BOTH(s) {
		obj_free(&f[s]);
		obj_free(&d[s]);
	}
	pair_free(&pp);
}

/* SYMLINK name -> target on both sides; o[] receives the result. */
static void symlink_both(const nfs_fh3 dir[NSIDES], const char *name,
			 const char *target, int want, struct obj o[NSIDES])
{
	SYMLINK3res r[NSIDES];
	int st[NSIDES];
	char what[160];

	snprintf(what, sizeof(what), "SYMLINK %s -> %s", name, target);
	BOTH(s) {
		SYMLINK3args a = { .where = { .dir = dir[s],
					      .name = nfsc_mut(name) } };

		a.symlink.symlink_attributes.mode.set_it = 1;
		a.symlink.symlink_attributes.mode.set_mode3_u.mode = 0777;
		a.symlink.symlink_data = nfsc_mut(target);
		st[s] = nfsc_call(cl[s], NFS3_SYMLINK, &a, &r[s],
				  NFSC_TIMEOUT_MS);
		obj_take(&o[s], st[s], &r[s].SYMLINK3res_u.resok.obj,
			 &r[s].SYMLINK3res_u.resok.obj_attributes);
		nfsc_res_free(NFS3_SYMLINK, &r[s]);
	}
	BOTH_STAT(st, want, what);
	if (want == NFS3_OK)
		same_obj_attr(o, what);
}

/* READLINK on both sides; returns the proxy's path (caller frees). */
static void readlink_both(const nfs_fh3 fh[NSIDES], int want,
			  const char *target, const char *what)
{
	READLINK3res r[NSIDES];
	int st[NSIDES];

	BOTH(s) {
		READLINK3args a = { .symlink = fh[s] };

		st[s] = nfsc_call(cl[s], NFS3_READLINK, &a, &r[s],
				  NFSC_TIMEOUT_MS);
	}
	BOTH_STAT(st, want, what);
	BOTH(s) {
		if (st[s] == NFS3_OK) {
			const char *got = r[s].READLINK3res_u.resok.data;

			CHECK_MSG(strcmp(got, target) == 0,
				  "%s (%s): \"%s\", want \"%s\"", what,
				  side_name[s], got, target);
		}
		nfsc_res_free(NFS3_READLINK, &r[s]);
	}
}

/* SYMLINK then READLINK; READLINK of a file; SYMLINK on an existing name. */
static void test_symlink_readlink(void)
{
	static const char target[] = "../some/target/path";
	struct pair pp;
	struct obj l[NSIDES], f[NSIDES], dup[NSIDES];
	nfs_fh3 fh[NSIDES];

	pair_make(&pp, "symlink");
	symlink_both(pp.dir, "l", target, NFS3_OK, l);
	BOTH(s) {
		CHECK_MSG(l[s].has_fh, "SYMLINK (%s): no handle", side_name[s]);
		if (l[s].has_attr) {
			CHECK_EQ(l[s].attr.type, NF3LNK);
			CHECK_EQ(l[s].attr.size, strlen(target));
		}
		fh[s] = l[s].fh;
	}
	readlink_both(fh, NFS3_OK, target, "READLINK l");
	symlink_both(pp.dir, "l", "elsewhere", NFS3ERR_EXIST, dup);

	create_both(pp.dir, "f", 0644, f);
	BOTH(s)
		fh[s] = f[s].fh;
	readlink_both(fh, NFS3ERR_INVAL, "", "READLINK of a regular file");
	BOTH(s) {
		obj_free(&l[s]);
		obj_free(&f[s]);
		obj_free(&dup[s]);
	}
	pair_free(&pp);
}

/* LOOKUP the proxy side's pair-dir/name directly (the direct client). */
static int direct_view(const char *tag, const char *name, nfs_fh3 *fh)
{
	char pname[128];
	nfs_fh3 dir;
	int st;

	snprintf(pname, sizeof(pname), "cmp-p-%ld-%s", (long)getpid(), tag);
	st = nfsc_lookup(cl[D], nfsc_root(cl[D]), pname, &dir, NULL);
	if (st != NFS3_OK || !name) {
		if (st == NFS3_OK)
			*fh = dir;
		return st;
	}
	st = nfsc_lookup(cl[D], &dir, name, fh, NULL);
	nfsc_fh_free(&dir);
	return st;
}

/* Check that Ganesha holds want[0, len) in the file fh (direct client). */
static void direct_has(const nfs_fh3 *fh, const unsigned char *want,
		       uint32_t len, const char *what)
{
	unsigned char *buf = malloc(65536);
	uint32_t off, count;
	int st = NFS3_OK, eof;

	for (off = 0; st == NFS3_OK && off < len; off += count) {
		st = nfsc_read(cl[D], fh, off, 65536, buf, &count, &eof);
		if (st != NFS3_OK || count == 0)
			break;
		if (count > len - off || memcmp(buf, want + off, count) != 0)
			break;
	}
	CHECK_MSG(st == NFS3_OK && off == len, "%s: directly, %s at offset "
		  "%u of %u", what, nfsc_stat_name(st), off, len);
	free(buf);
}

/* Check that two 8-byte verifiers on side s are equal. */
static void same_verf(const char *a, const char *b, int s, const char *what)
{
	CHECK_MSG(memcmp(a, b, NFS3_WRITEVERFSIZE) == 0,
		  "%s (%s): write verifiers differ", what, side_name[s]);
}

/* WRITE with each stable_how, READ back in pages, COMMIT, small writes. */
static void test_write_read_commit(void)
{
	enum { LEN = 300000, THIRD = 100000, CHUNK = 65536 };
	struct pair pp;
	struct obj o[NSIDES];
	fattr3 a[NSIDES];
	nfs_fh3 fh[NSIDES];
	char v_unst[NSIDES][8], v_data[NSIDES][8], v_file[NSIDES][8];
	char v_commit[NSIDES][8];
	unsigned char *buf = malloc(LEN);
	nfs_fh3 dfh;
	int st[NSIDES];
	uint32_t off;

	pair_make(&pp, "rw");
	create_both(pp.dir, "data", 0644, o);
	BOTH(s)
		fh[s] = o[s].fh;
	pattern(buf, LEN, 0, 7);
	write_both(fh, 0, buf, THIRD, UNSTABLE, v_unst);
	write_both(fh, THIRD, buf + THIRD, THIRD, DATA_SYNC, v_data);
	write_both(fh, 2 * THIRD, buf + 2 * THIRD, THIRD, FILE_SYNC, v_file);
	getattr_both(fh, a, "GETATTR after writes");
	CHECK_EQ(a[P].size, LEN);

	for (off = 0; off < LEN; off += CHUNK) {
		uint32_t n = LEN - off < CHUNK ? LEN - off : CHUNK;

		read_both(fh, off, CHUNK, buf + off, n, off + CHUNK >= LEN);
	}
	/* A read that ends exactly at EOF, and one that starts there. */
	read_both(fh, 2 * THIRD, THIRD, buf + 2 * THIRD, THIRD, -1);
	read_both(fh, LEN, 100, buf, 0, 1);

	BOTH(s)
		st[s] = nfsc_commit(cl[s], &fh[s], 0, 0, v_commit[s]);
	BOTH_STAT(st, NFS3_OK, "COMMIT whole file");
	BOTH(s) {
		same_verf(v_unst[s], v_commit[s], s, "UNSTABLE vs COMMIT");
		same_verf(v_unst[s], v_file[s], s, "UNSTABLE vs FILE_SYNC");
		same_verf(v_unst[s], v_data[s], s, "UNSTABLE vs DATA_SYNC");
	}
	/* After the COMMIT, Ganesha holds what the proxy acknowledged. */
	st[D] = direct_view("rw", "data", &dfh);
	CHECK_MSG(st[D] == NFS3_OK, "LOOKUP proxy's file directly: %s",
		  nfsc_stat_name(st[D]));
	if (st[D] == NFS3_OK) {
		direct_has(&dfh, buf, LEN, "proxy's file after COMMIT");
		nfsc_fh_free(&dfh);
	}

	/* Small writes across a 4 KiB boundary, then inside one page. */
	memcpy(buf + 4093, "ABCDEFG", 7);
	write_both(fh, 4093, "ABCDEFG", 7, UNSTABLE, v_unst);
	read_both(fh, 4090, 20, buf + 4090, 20, 0);
	memcpy(buf + 10, "xy", 2);
	write_both(fh, 10, "xy", 2, FILE_SYNC, v_file);
	read_both(fh, 0, 8192, buf, 8192, 0);
	BOTH(s)
		st[s] = nfsc_commit(cl[s], &fh[s], 4000, 200, v_commit[s]);
	BOTH_STAT(st, NFS3_OK, "COMMIT range");
	getattr_both(fh, a, "GETATTR after small writes");
	CHECK_EQ(a[P].size, LEN);

	/* An extending write past EOF leaves a hole that reads as zeros. */
	write_both(fh, LEN + 5000, "tail", 4, UNSTABLE, v_unst);
	memset(buf, 0, 5000);
	memcpy(buf + 5000, "tail", 4);
	read_both(fh, LEN, 6000, buf, 5004, 1);
	free(buf);
	BOTH(s)
		obj_free(&o[s]);
	pair_free(&pp);
}

/* CREATE name with how on both sides and return the statuses. */
static void create_how_both(const nfs_fh3 dir[NSIDES], const char *name,
			    const createhow3 *how, int st[NSIDES],
			    struct obj o[NSIDES])
{
	CREATE3res r[NSIDES];

	BOTH(s) {
		CREATE3args a = { .where = { .dir = dir[s],
					     .name = nfsc_mut(name) },
				  .how = *how };

		st[s] = nfsc_call(cl[s], NFS3_CREATE, &a, &r[s],
				  NFSC_TIMEOUT_MS);
		obj_take(&o[s], st[s], &r[s].CREATE3res_u.resok.obj,
			 &r[s].CREATE3res_u.resok.obj_attributes);
		nfsc_res_free(NFS3_CREATE, &r[s]);
	}
}

/* Release both sides' objects. */
static void objs_free(struct obj o[NSIDES])
{
	BOTH(s)
		obj_free(&o[s]);
}

/* CREATE UNCHECKED, GUARDED and EXCLUSIVE, new and existing names. */
static void test_create_modes(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	createhow3 how;
	fattr3 a[NSIDES];
	nfs_fh3 fh[NSIDES];
	char verf[NSIDES][8];
	int st[NSIDES];

	pair_make(&pp, "create");
	memset(&how, 0, sizeof(how));
	how.mode = UNCHECKED;
	how.createhow3_u.obj_attributes.mode.set_it = 1;
	how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	create_how_both(pp.dir, "u", &how, st, o);
	BOTH_STAT(st, NFS3_OK, "CREATE UNCHECKED new");
	same_obj_attr(o, "CREATE UNCHECKED new");
	BOTH(s)
		fh[s] = o[s].fh;
	write_both(fh, 0, "0123456789", 10, FILE_SYNC, verf);
	objs_free(o);

	/* UNCHECKED on an existing file succeeds and applies size 0. */
	how.createhow3_u.obj_attributes.size.set_it = 1;
	how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
	create_how_both(pp.dir, "u", &how, st, o);
	BOTH_STAT(st, NFS3_OK, "CREATE UNCHECKED existing");
	same_obj_attr(o, "CREATE UNCHECKED existing");
	BOTH(s)
		fh[s] = o[s].fh;
	getattr_both(fh, a, "GETATTR after UNCHECKED size 0");
	CHECK_EQ(a[P].size, 0);
	objs_free(o);

	how.mode = GUARDED;
	how.createhow3_u.g_obj_attributes.size.set_it = 0;
	create_how_both(pp.dir, "g", &how, st, o);
	BOTH_STAT(st, NFS3_OK, "CREATE GUARDED new");
	same_obj_attr(o, "CREATE GUARDED new");
	objs_free(o);
	create_how_both(pp.dir, "g", &how, st, o);
	BOTH_STAT(st, NFS3ERR_EXIST, "CREATE GUARDED existing");
	objs_free(o);
	create_how_both(pp.dir, "u", &how, st, o);
	BOTH_STAT(st, NFS3ERR_EXIST, "CREATE GUARDED existing (u)");
	objs_free(o);

	memset(&how, 0, sizeof(how));
	how.mode = EXCLUSIVE;
	memcpy(how.createhow3_u.verf, "12345678", 8);
	create_how_both(pp.dir, "e", &how, st, o);
	BOTH_STAT(st, NFS3_OK, "CREATE EXCLUSIVE new");
	BOTH(s)
		CHECK_MSG(o[s].has_fh, "CREATE EXCLUSIVE (%s): no handle",
			  side_name[s]);
	objs_free(o);
	create_how_both(pp.dir, "e", &how, st, o);
	BOTH_STAT(st, NFS3_OK, "CREATE EXCLUSIVE retry, same verifier");
	BOTH(s)
		fh[s] = o[s].fh;
	/* RFC 1813 3.3.8: the client sets the attributes after EXCLUSIVE. */
	BOTH(s)
		st[s] = nfsc_chmod(cl[s], &fh[s], 0640);
	BOTH_STAT(st, NFS3_OK, "SETATTR after EXCLUSIVE");
	getattr_both(fh, a, "GETATTR after EXCLUSIVE");
	CHECK_EQ(a[P].mode, 0640);
	CHECK_EQ(a[P].type, NF3REG);
	objs_free(o);
	memcpy(how.createhow3_u.verf, "abcdefgh", 8);
	create_how_both(pp.dir, "e", &how, st, o);
	BOTH_STAT(st, NFS3ERR_EXIST, "CREATE EXCLUSIVE, other verifier");
	objs_free(o);

	/* CREATE with a file's handle as the directory. */
	lookup_both(pp.dir, "g", o, NFS3_OK);
	BOTH(s)
		fh[s] = o[s].fh;
	memset(&how, 0, sizeof(how));
	how.mode = UNCHECKED;
	create_how_both(fh, "x", &how, st, o);
	BOTH_STAT(st, NFS3ERR_NOTDIR, "CREATE in a regular file");
	objs_free(o);
	pair_free(&pp);
	BOTH(s)
		nfsc_fh_free(&fh[s]);
}

/* MKDIR new and existing names; nlink of parent and child. */
static void test_mkdir(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	fattr3 a[NSIDES];
	nfs_fh3 fh[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "mkdir");
	mkdir_both(pp.dir, "d", 0751, o);
	BOTH(s)
		fh[s] = o[s].fh;
	getattr_both(fh, a, "GETATTR new dir");
	CHECK_EQ(a[P].type, NF3DIR);
	CHECK_EQ(a[P].mode, 0751);
	CHECK_EQ(a[P].nlink, 2);
	getattr_both(pp.dir, a, "GETATTR parent after MKDIR");
	CHECK_EQ(a[P].nlink, 3);
	BOTH(s)
		st[s] = nfsc_mkdir(cl[s], &pp.dir[s], "d", 0755, NULL, NULL);
	BOTH_STAT(st, NFS3ERR_EXIST, "MKDIR existing");
	BOTH(s)
		st[s] = nfsc_mkdir(cl[s], &fh[s], "sub", 0755, NULL, NULL);
	BOTH_STAT(st, NFS3_OK, "MKDIR in subdirectory");
	BOTH(s)
		st[s] = nfsc_mkdir(cl[s], &pp.dir[s], "", 0755, NULL, NULL);
	SAME_STAT(st, "MKDIR empty name");
	CHECK_MSG(st[P] != NFS3_OK, "MKDIR empty name succeeded");
	objs_free(o);
	pair_free(&pp);
}

/* MKNOD type on both sides; o[] receives the result. */
static void mknod_both(const nfs_fh3 dir[NSIDES], const char *name,
		       ftype3 type, uint32_t major, uint32_t minor,
		       int st[NSIDES], struct obj o[NSIDES])
{
	MKNOD3res r[NSIDES];

	BOTH(s) {
		MKNOD3args a = { .where = { .dir = dir[s],
					    .name = nfsc_mut(name) } };
		sattr3 *sa;

		a.what.type = type;
		if (type == NF3CHR || type == NF3BLK) {
			devicedata3 *dd = &a.what.mknoddata3_u.chr_device;

			dd->spec.specdata1 = major;
			dd->spec.specdata2 = minor;
			sa = &dd->dev_attributes;
		} else {
			sa = &a.what.mknoddata3_u.pipe_attributes;
		}
		sa->mode.set_it = 1;
		sa->mode.set_mode3_u.mode = 0640;
		st[s] = nfsc_call(cl[s], NFS3_MKNOD, &a, &r[s],
				  NFSC_TIMEOUT_MS);
		obj_take(&o[s], st[s], &r[s].MKNOD3res_u.resok.obj,
			 &r[s].MKNOD3res_u.resok.obj_attributes);
		nfsc_res_free(NFS3_MKNOD, &r[s]);
	}
}

/* MKNOD of FIFO, CHR, BLK, SOCK; REG is BADTYPE; existing is EXIST. */
static void test_mknod(void)
{
	static const struct {
		const char *name;
		ftype3 type;
		uint32_t major, minor;
	} nodes[] = {
		{ "fifo", NF3FIFO, 0, 0 },
		{ "chr", NF3CHR, 1, 3 },
		{ "blk", NF3BLK, 7, 2 },
		{ "sock", NF3SOCK, 0, 0 },
	};
	struct pair pp;
	struct obj o[NSIDES];
	fattr3 a[NSIDES];
	nfs_fh3 fh[NSIDES];
	int st[NSIDES];
	size_t i;

	pair_make(&pp, "mknod");
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		mknod_both(pp.dir, nodes[i].name, nodes[i].type,
			   nodes[i].major, nodes[i].minor, st, o);
		BOTH_STAT(st, NFS3_OK, nodes[i].name);
		same_obj_attr(o, nodes[i].name);
		BOTH(s)
			fh[s] = o[s].fh;
		getattr_both(fh, a, nodes[i].name);
		BOTH(s) {
			CHECK_EQ(a[s].type, nodes[i].type);
			CHECK_EQ(a[s].mode, 0640);
			CHECK_EQ(a[s].rdev.specdata1, nodes[i].major);
			CHECK_EQ(a[s].rdev.specdata2, nodes[i].minor);
		}
		objs_free(o);
	}
	mknod_both(pp.dir, "fifo", NF3FIFO, 0, 0, st, o);
	BOTH_STAT(st, NFS3ERR_EXIST, "MKNOD existing name");
	objs_free(o);
	mknod_both(pp.dir, "reg", NF3REG, 0, 0, st, o);
	BOTH_STAT(st, NFS3ERR_BADTYPE, "MKNOD NF3REG");
	objs_free(o);
	pair_free(&pp);
}

/* REMOVE a file, a missing name, a directory. */
static void test_remove(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "remove");
	create_both(pp.dir, "f", 0644, o);
	objs_free(o);
	mkdir_both(pp.dir, "d", 0755, o);
	objs_free(o);
	BOTH(s)
		st[s] = nfsc_remove(cl[s], &pp.dir[s], "f");
	BOTH_STAT(st, NFS3_OK, "REMOVE f");
	lookup_both(pp.dir, "f", o, NFS3ERR_NOENT);
	BOTH(s)
		st[s] = nfsc_remove(cl[s], &pp.dir[s], "f");
	BOTH_STAT(st, NFS3ERR_NOENT, "REMOVE f again");
	BOTH(s)
		st[s] = nfsc_remove(cl[s], &pp.dir[s], "d");
	SAME_STAT(st, "REMOVE of a directory");
	CHECK_MSG(st[P] != NFS3_OK, "REMOVE of a directory succeeded");
	lookup_both(pp.dir, "d", o, NFS3_OK);
	objs_free(o);
	pair_free(&pp);
}

/* RMDIR non-empty, of a file, empty, missing. */
static void test_rmdir(void)
{
	struct pair pp;
	struct obj d[NSIDES], o[NSIDES];
	fattr3 a[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "rmdir");
	mkdir_both(pp.dir, "d", 0755, d);
	BOTH(s)
		st[s] = nfsc_create(cl[s], &d[s].fh, "inner", 0644, NULL, NULL);
	BOTH_STAT(st, NFS3_OK, "CREATE d/inner");
	create_both(pp.dir, "f", 0644, o);
	objs_free(o);
	BOTH(s)
		st[s] = nfsc_rmdir(cl[s], &pp.dir[s], "d");
	BOTH_STAT(st, NFS3ERR_NOTEMPTY, "RMDIR non-empty");
	BOTH(s)
		st[s] = nfsc_rmdir(cl[s], &pp.dir[s], "f");
	BOTH_STAT(st, NFS3ERR_NOTDIR, "RMDIR of a file");
	BOTH(s)
		st[s] = nfsc_remove(cl[s], &d[s].fh, "inner");
	BOTH_STAT(st, NFS3_OK, "REMOVE d/inner");
	BOTH(s)
		st[s] = nfsc_rmdir(cl[s], &pp.dir[s], "d");
	BOTH_STAT(st, NFS3_OK, "RMDIR empty");
	BOTH(s)
		st[s] = nfsc_rmdir(cl[s], &pp.dir[s], "d");
	BOTH_STAT(st, NFS3ERR_NOENT, "RMDIR missing");
	getattr_both(pp.dir, a, "GETATTR parent after RMDIR");
	CHECK_EQ(a[P].nlink, 2);
	objs_free(d);
	pair_free(&pp);
}

/* RENAME from/to (relative to dirs) on both sides; return statuses. */
static void rename_both(const nfs_fh3 from[NSIDES], const char *fname,
			const nfs_fh3 to[NSIDES], const char *tname,
			int st[NSIDES])
{
	RENAME3res r;

	BOTH(s) {
		RENAME3args a = {
			.from = { .dir = from[s], .name = nfsc_mut(fname) },
			.to = { .dir = to[s], .name = nfsc_mut(tname) },
		};

		st[s] = nfsc_call(cl[s], NFS3_RENAME, &a, &r, NFSC_TIMEOUT_MS);
	}
}

/* RENAME of files and directories, over others, into itself, missing. */
static void test_rename(void)
{
	struct pair pp;
	struct obj f[NSIDES], d1[NSIDES], d2[NSIDES], o[NSIDES];
	nfs_fh3 dd1[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "rename");
	create_both(pp.dir, "a", 0644, f);
	mkdir_both(pp.dir, "d1", 0755, d1);
	mkdir_both(pp.dir, "d2", 0755, d2);
	BOTH(s) {
		dd1[s] = d1[s].fh;
		st[s] = nfsc_create(cl[s], &d2[s].fh, "x", 0644, NULL, NULL);
	}
	BOTH_STAT(st, NFS3_OK, "CREATE d2/x");

	rename_both(pp.dir, "a", pp.dir, "b", st);
	BOTH_STAT(st, NFS3_OK, "RENAME a b");
	lookup_both(pp.dir, "a", o, NFS3ERR_NOENT);
	lookup_both(pp.dir, "b", o, NFS3_OK);
	BOTH(s)
		CHECK_MSG(o[s].attr.fileid == f[s].attr.fileid,
			  "RENAME a b (%s): b is another file", side_name[s]);
	objs_free(o);
	rename_both(pp.dir, "missing", pp.dir, "c", st);
	BOTH_STAT(st, NFS3ERR_NOENT, "RENAME missing");
	rename_both(pp.dir, "d1", pp.dir, "d2", st);
	SAME_STAT(st, "RENAME dir over non-empty dir");
	BOTH(s)
		CHECK_MSG(st[s] == NFS3ERR_EXIST || st[s] == NFS3ERR_NOTEMPTY,
			  "RENAME dir over non-empty dir (%s): %s",
			  side_name[s], nfsc_stat_name(st[s]));
	rename_both(pp.dir, "b", pp.dir, "d1", st);
	SAME_STAT(st, "RENAME file over dir");
	CHECK_MSG(st[P] != NFS3_OK, "RENAME file over dir succeeded");
	rename_both(pp.dir, "d1", dd1, "inside", st);
	BOTH_STAT(st, NFS3ERR_INVAL, "RENAME dir into itself");
	rename_both(pp.dir, "b", dd1, "b", st);
	BOTH_STAT(st, NFS3_OK, "RENAME b d1/b");
	lookup_both(dd1, "b", o, NFS3_OK);
	objs_free(o);
	lookup_both(pp.dir, "b", o, NFS3ERR_NOENT);
	objs_free(f);
	objs_free(d1);
	objs_free(d2);
	pair_free(&pp);
}

/* LINK file into dir/name on both sides; return statuses and attrs. */
static void link_both(const nfs_fh3 file[NSIDES], const nfs_fh3 dir[NSIDES],
		      const char *name, int st[NSIDES], struct obj o[NSIDES])
{
	LINK3res r;

	BOTH(s) {
		LINK3args a = { .file = file[s],
				.link = { .dir = dir[s],
					  .name = nfsc_mut(name) } };
		const post_op_attr *pa = &r.LINK3res_u.resok.file_attributes;

		st[s] = nfsc_call(cl[s], NFS3_LINK, &a, &r, NFSC_TIMEOUT_MS);
		memset(&o[s], 0, sizeof(o[s]));
		o[s].st = st[s];
		if (st[s] == NFS3_OK && pa->attributes_follow) {
			o[s].has_attr = 1;
			o[s].attr = pa->post_op_attr_u.attributes;
		}
	}
}

/* LINK new, existing, of a directory, into a file. */
static void test_link(void)
{
	struct pair pp;
	struct obj f[NSIDES], d[NSIDES], o[NSIDES];
	fattr3 a[NSIDES];
	nfs_fh3 ff[NSIDES], fd[NSIDES];
	int st[NSIDES];

	pair_make(&pp, "link");
	create_both(pp.dir, "f", 0644, f);
	mkdir_both(pp.dir, "d", 0755, d);
	BOTH(s) {
		ff[s] = f[s].fh;
		fd[s] = d[s].fh;
	}
	link_both(ff, pp.dir, "h", st, o);
	BOTH_STAT(st, NFS3_OK, "LINK f h");
	same_obj_attr(o, "LINK f h file attributes");
	getattr_both(ff, a, "GETATTR after LINK");
	CHECK_EQ(a[P].nlink, 2);
	lookup_both(pp.dir, "h", o, NFS3_OK);
	BOTH(s)
		CHECK_MSG(o[s].attr.fileid == f[s].attr.fileid,
			  "LINK (%s): h is another file", side_name[s]);
	objs_free(o);
	link_both(ff, pp.dir, "h", st, o);
	BOTH_STAT(st, NFS3ERR_EXIST, "LINK onto existing name");
	link_both(fd, pp.dir, "dlink", st, o);
	SAME_STAT(st, "LINK of a directory");
	CHECK_MSG(st[P] != NFS3_OK, "LINK of a directory succeeded");
	link_both(ff, ff, "x", st, o);
	BOTH_STAT(st, NFS3ERR_NOTDIR, "LINK into a regular file");
	BOTH(s)
		st[s] = nfsc_remove(cl[s], &pp.dir[s], "f");
	BOTH_STAT(st, NFS3_OK, "REMOVE f (h remains)");
	getattr_both(ff, a, "GETATTR after REMOVE of one link");
	CHECK_EQ(a[P].nlink, 1);
	objs_free(f);
	objs_free(d);
	pair_free(&pp);
}

/* Check a listing completed, sort it, and check names are unique. */
static void listing_check(struct nfsc_listing *l, const char *what)
{
	size_t i, dups = 0;

	CHECK_MSG(l->st == NFS3_OK, "%s: page %u failed: %s", what, l->pages,
		  nfsc_stat_name(l->st));
	CHECK_MSG(!l->stuck, "%s: page %u had no entries and no eof", what,
		  l->pages);
	CHECK_MSG(l->pages < NFSC_LIST_MAX_PAGES, "%s: no eof after %u pages",
		  what, l->pages);
	nfsc_listing_sort(l);
	for (i = 1; i < l->n; i++)
		if (strcmp(l->e[i - 1].name, l->e[i].name) == 0)
			dups++;
	CHECK_MSG(dups == 0, "%s: %zu duplicate names", what, dups);
}

/* Check two sorted listings hold the same names (and fileids if asked). */
static void same_names(const struct nfsc_listing *a,
		       const struct nfsc_listing *b,
		       int fileids, const char *what)
{
	size_t i, name_diff = 0, id_diff = 0;

	CHECK_MSG(a->n == b->n, "%s: %zu entries vs %zu", what, a->n, b->n);
	for (i = 0; i < a->n && i < b->n; i++) {
		if (strcmp(a->e[i].name, b->e[i].name) != 0) {
			if (name_diff++ == 0)
				fprintf(stderr, "%s: first name difference "
					"at %zu: %s vs %s\n", what, i,
					a->e[i].name, b->e[i].name);
		} else if (fileids && a->e[i].fileid != b->e[i].fileid) {
			if (id_diff++ == 0)
				fprintf(stderr, "%s: %s fileid %llu vs %llu\n",
					what, a->e[i].name,
					(unsigned long long)a->e[i].fileid,
					(unsigned long long)b->e[i].fileid);
		}
	}
	CHECK_MSG(name_diff == 0, "%s: %zu names differ", what, name_diff);
	if (fileids)
		CHECK_MSG(id_diff == 0, "%s: %zu fileids differ", what,
			  id_diff);
}

/* Check READDIRPLUS attributes agree with entry fileids and a's types. */
static void plus_consistent(const struct nfsc_listing *l, const char *what)
{
	size_t i, bad = 0, attrs = 0;

	for (i = 0; i < l->n; i++) {
		if (!l->e[i].has_attr)
			continue;
		attrs++;
		if (l->e[i].attr.fileid != l->e[i].fileid && bad++ == 0)
			fprintf(stderr, "%s: %s entry fileid %llu, attr %llu\n",
				what, l->e[i].name,
				(unsigned long long)l->e[i].fileid,
				(unsigned long long)l->e[i].attr.fileid);
	}
	CHECK_MSG(bad == 0, "%s: %zu entries whose attributes name another "
		  "fileid", what, bad);
	CHECK_MSG(attrs + 2 >= l->n, "%s: only %zu of %zu entries have "
		  "attributes", what, attrs, l->n);
}

/* Check per name that two READDIRPLUS listings agree on attrs and handles. */
static void same_plus(const struct nfsc_listing *a,
		      const struct nfsc_listing *b,
		      const char *what)
{
	size_t i, bad = 0;

	for (i = 0; i < a->n && i < b->n; i++) {
		const struct nfsc_dent *x = &a->e[i], *y = &b->e[i];

		if (strcmp(x->name, y->name) != 0)
			continue;
		if (x->has_attr != y->has_attr || x->has_fh != y->has_fh ||
		    (x->has_attr && y->has_attr &&
		     (x->attr.type != y->attr.type ||
		      x->attr.mode != y->attr.mode ||
		      x->attr.size != y->attr.size ||
		      x->attr.nlink != y->attr.nlink))) {
			if (bad++ == 0)
				fprintf(stderr, "%s: %s differs (attr %d/%d, "
					"fh %d/%d, type %u/%u, mode %o/%o)\n",
					what, x->name, x->has_attr,
					y->has_attr, x->has_fh, y->has_fh,
					x->attr.type, y->attr.type,
					x->attr.mode, y->attr.mode);
		}
	}
	CHECK_MSG(bad == 0, "%s: %zu entries differ in attributes or handles",
		  what, bad);
}

/* Check that handles from a READDIRPLUS listing work on client c. */
static void plus_handles_work(struct nfsc *c, const struct nfsc_listing *l,
			      size_t step, const char *what)
{
	size_t i, bad = 0, tried = 0;

	for (i = 0; i < l->n; i += step) {
		fattr3 a;
		int st;

		if (!l->e[i].has_fh || l->e[i].name[0] == '.')
			continue;
		tried++;
		st = nfsc_getattr(c, &l->e[i].fh, &a);
		if ((st != NFS3_OK || a.fileid != l->e[i].fileid) &&
		    bad++ == 0)
			fprintf(stderr, "%s: GETATTR of %s's handle: %s, "
				"fileid %llu (entry %llu)\n", what,
				l->e[i].name, nfsc_stat_name(st),
				(unsigned long long)a.fileid,
				(unsigned long long)l->e[i].fileid);
	}
	CHECK_MSG(tried > 0, "%s: no handles to try", what);
	CHECK_MSG(bad == 0, "%s: %zu of %zu handles failed", what, bad, tried);
}

/* A small directory of each type: READDIR and READDIRPLUS agree. */
static void test_readdir_small(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	struct nfsc_listing rd[NSIDES], rdp[NSIDES];
	int st[NSIDES];
	size_t i;

	pair_make(&pp, "rdsmall");
	create_both(pp.dir, "a", 0644, o);
	objs_free(o);
	create_both(pp.dir, "b", 0600, o);
	objs_free(o);
	mkdir_both(pp.dir, "sub", 0755, o);
	objs_free(o);
	symlink_both(pp.dir, "link", "a", NFS3_OK, o);
	objs_free(o);
	mknod_both(pp.dir, "fifo", NF3FIFO, 0, 0, st, o);
	objs_free(o);
	BOTH(s) {
		nfsc_list_dir(cl[s], &pp.dir[s], 0, 8192, &rd[s]);
		listing_check(&rd[s], side_name[s]);
		nfsc_list_dir(cl[s], &pp.dir[s], 1, 8192, &rdp[s]);
		listing_check(&rdp[s], side_name[s]);
		CHECK_EQ(rd[s].n, 7);
		plus_consistent(&rdp[s], "READDIRPLUS small");
		same_names(&rd[s], &rdp[s], 1, "READDIR vs READDIRPLUS small");
	}
	same_names(&rd[P], &rd[D], 0, "READDIR small proxy vs direct");
	same_names(&rdp[P], &rdp[D], 0, "READDIRPLUS small proxy vs direct");
	same_plus(&rdp[P], &rdp[D], "READDIRPLUS small proxy vs direct");
	BOTH(s)
		plus_handles_work(cl[s], &rdp[s], 1, side_name[s]);
	for (i = 0; i < rd[P].n && i < 7; i++)
		CHECK_MSG(strcmp(rd[P].e[i].name,
				 (const char *[]){ ".", "..", "a", "b", "fifo",
						   "link", "sub" }[i]) == 0,
			  "READDIR small: entry %zu is %s", i, rd[P].e[i].name);
	BOTH(s) {
		nfsc_listing_free(&rd[s]);
		nfsc_listing_free(&rdp[s]);
	}
	pair_free(&pp);
}

/* Fill dir on side s with n files f0000..; return the failures. */
static unsigned fill_dir(int s, const nfs_fh3 *dir, unsigned n)
{
	unsigned i, bad = 0;
	char name[32];

	for (i = 0; i < n && bad < 10; i++) {
		snprintf(name, sizeof(name), "f%04u", i);
		if (nfsc_create(cl[s], dir, name, 0644, NULL, NULL) != NFS3_OK)
			bad++;
	}
	return bad;
}

/* Copy the entries after position idx (listing order) into tail. */
static void listing_tail(const struct nfsc_listing *unsorted, size_t idx,
			 struct nfsc_listing *tail)
{
	size_t i;

	memset(tail, 0, sizeof(*tail));
	for (i = idx + 1; i < unsorted->n; i++)
		nfsc_listing_add(tail, unsorted->e[i].name,
				 unsorted->e[i].fileid, unsorted->e[i].cookie);
}

/* READDIR of 2,000 entries through many small pages, resumed mid-way. */
static void test_readdir_big(void)
{
	enum { N = 2000 };
	struct pair pp;
	struct nfsc_listing rd[NSIDES], rdp[NSIDES], via_d, rest[NSIDES];
	struct nfsc_listing tail[NSIDES];
	struct obj pdir;
	cookie3 mid[NSIDES];
	unsigned bad;

	pair_make(&pp, "rdbig");
	BOTH(s) {
		bad = fill_dir(s, &pp.dir[s], N);
		CHECK_MSG(bad == 0, "CREATE of %u files (%s): %u failed", N,
			  side_name[s], bad);
	}
	BOTH(s) {
		nfsc_list_dir(cl[s], &pp.dir[s], 0, 1024, &rd[s]);
		/* Keep a cookie from the middle and what follows it. */
		mid[s] = rd[s].n > N / 2 ? rd[s].e[N / 2].cookie : 0;
		listing_tail(&rd[s], N / 2, &tail[s]);
		listing_check(&rd[s], "READDIR big");
		CHECK_EQ(rd[s].n, N + 2);
		CHECK_MSG(rd[s].pages >= 20, "READDIR big (%s): %u pages",
			  side_name[s], rd[s].pages);
		nfsc_list_dir(cl[s], &pp.dir[s], 1, 2048, &rdp[s]);
		listing_check(&rdp[s], "READDIRPLUS big");
		CHECK_EQ(rdp[s].n, N + 2);
		CHECK_MSG(rdp[s].pages >= 40, "READDIRPLUS big (%s): %u pages",
			  side_name[s], rdp[s].pages);
		plus_consistent(&rdp[s], "READDIRPLUS big");
		same_names(&rd[s], &rdp[s], 1, "READDIR vs READDIRPLUS big");
	}
	printf("\n  READDIR big: %u/%u pages (proxy/direct), READDIRPLUS "
	       "%u/%u pages\n", rd[P].pages, rd[D].pages, rdp[P].pages,
	       rdp[D].pages);
	same_names(&rd[P], &rd[D], 0, "READDIR big proxy vs direct");
	same_names(&rdp[P], &rdp[D], 0, "READDIRPLUS big proxy vs direct");
	same_plus(&rdp[P], &rdp[D], "READDIRPLUS big proxy vs direct");
	BOTH(s)
		plus_handles_work(cl[s], &rdp[s], 97, side_name[s]);

	/* The proxy's directory seen directly: same names and fileids. */
	memset(&pdir, 0, sizeof(pdir));
	pdir.st = direct_view("rdbig", NULL, &pdir.fh);
	CHECK_STAT(pdir.st, NFS3_OK);
	if (pdir.st == NFS3_OK) {
		nfsc_list_dir(cl[D], &pdir.fh, 0, 1024, &via_d);
		listing_check(&via_d, "READDIR big of the proxy's dir, direct");
		same_names(&rd[P], &via_d, 1,
			   "READDIR big: proxy vs direct on the same dir");
		nfsc_listing_free(&via_d);
		nfsc_fh_free(&pdir.fh);
	}

	/* Resume from the cookie of entry N/2 with the last cookieverf. */
	BOTH(s) {
		nfsc_list_dir_from(cl[s], &pp.dir[s], 0, 1024, mid[s],
				   rd[s].verf, &rest[s]);
		listing_check(&rest[s], "READDIR big resumed");
		CHECK_MSG(rest[s].n == N + 2 - (N / 2 + 1),
			  "READDIR big resumed (%s): %zu entries", side_name[s],
			  rest[s].n);
		nfsc_listing_sort(&tail[s]);
		same_names(&tail[s], &rest[s], 1,
			   "READDIR resumed vs first pass");
	}
	BOTH(s) {
		nfsc_listing_free(&rd[s]);
		nfsc_listing_free(&rdp[s]);
		nfsc_listing_free(&rest[s]);
		nfsc_listing_free(&tail[s]);
	}
	pair_free(&pp);
}

/* FSSTAT of the root: same filesystem totals. */
static void test_fsstat(void)
{
	FSSTAT3res r[NSIDES];
	int st[NSIDES];

	BOTH(s) {
		FSSTAT3args a = { .fsroot = *nfsc_root(cl[s]) };

		st[s] = nfsc_call(cl[s], NFS3_FSSTAT, &a, &r[s],
				  NFSC_TIMEOUT_MS);
	}
	BOTH_STAT(st, NFS3_OK, "FSSTAT");
	if (st[P] != NFS3_OK || st[D] != NFS3_OK)
		return;
	{
		FSSTAT3resok ok[NSIDES] = { r[P].FSSTAT3res_u.resok,
					    r[D].FSSTAT3res_u.resok };

		SAME_FIELD(ok, tbytes, "FSSTAT");
		SAME_FIELD(ok, tfiles, "FSSTAT");
		BOTH(s) {
			CHECK(ok[s].tbytes > 0);
			CHECK(ok[s].fbytes <= ok[s].tbytes);
			CHECK(ok[s].abytes <= ok[s].fbytes);
			CHECK(ok[s].ffiles <= ok[s].tfiles);
		}
	}
}

/* FSINFO of the root: limits no larger than Ganesha's or 1 MiB. */
static void test_fsinfo(void)
{
	FSINFO3res r[NSIDES];
	FSINFO3resok ok[NSIDES];
	int st[NSIDES];

	BOTH(s) {
		FSINFO3args a = { .fsroot = *nfsc_root(cl[s]) };

		st[s] = nfsc_call(cl[s], NFS3_FSINFO, &a, &r[s],
				  NFSC_TIMEOUT_MS);
		ok[s] = r[s].FSINFO3res_u.resok;
	}
	BOTH_STAT(st, NFS3_OK, "FSINFO");
	if (st[P] != NFS3_OK || st[D] != NFS3_OK)
		return;
	printf("\n  FSINFO proxy rtmax %u rtpref %u wtmax %u wtpref %u "
	       "dtpref %u; direct rtmax %u wtmax %u\n", ok[P].rtmax,
	       ok[P].rtpref, ok[P].wtmax, ok[P].wtpref, ok[P].dtpref,
	       ok[D].rtmax, ok[D].wtmax);
	CHECK_MSG(ok[P].rtmax <= ok[D].rtmax && ok[P].rtmax <= 1048576,
		  "FSINFO rtmax: proxy %u, direct %u", ok[P].rtmax,
		  ok[D].rtmax);
	CHECK_MSG(ok[P].wtmax <= ok[D].wtmax && ok[P].wtmax <= 1048576,
		  "FSINFO wtmax: proxy %u, direct %u", ok[P].wtmax,
		  ok[D].wtmax);
	CHECK(ok[P].rtmax >= 4096);
	CHECK(ok[P].wtmax >= 4096);
	CHECK(ok[P].rtmult > 0 && ok[P].wtmult > 0);
	/* Ganesha 4.3 says rtpref 64 MiB above rtmax 1 MiB; the proxy
	 * must not invite transfers it cannot serve. */
	if (!same_server) {
		CHECK(ok[P].rtpref > 0 && ok[P].rtpref <= ok[P].rtmax);
		CHECK(ok[P].wtpref > 0 && ok[P].wtpref <= ok[P].wtmax);
	}
	CHECK(ok[P].dtpref > 0);
	SAME_FIELD(ok, maxfilesize, "FSINFO");
	SAME_FIELD(ok, time_delta.seconds, "FSINFO");
	SAME_FIELD(ok, time_delta.nseconds, "FSINFO");
	SAME_FIELD(ok, properties, "FSINFO");
}

/* PATHCONF of the root and of a file: every field the same. */
static void test_pathconf(void)
{
	PATHCONF3res r[NSIDES];
	PATHCONF3resok ok[NSIDES];
	int st[NSIDES];

	BOTH(s) {
		PATHCONF3args a = { .object = *nfsc_root(cl[s]) };

		st[s] = nfsc_call(cl[s], NFS3_PATHCONF, &a, &r[s],
				  NFSC_TIMEOUT_MS);
		ok[s] = r[s].PATHCONF3res_u.resok;
	}
	BOTH_STAT(st, NFS3_OK, "PATHCONF");
	if (st[P] != NFS3_OK || st[D] != NFS3_OK)
		return;
	SAME_FIELD(ok, linkmax, "PATHCONF");
	SAME_FIELD(ok, name_max, "PATHCONF");
	SAME_FIELD(ok, no_trunc, "PATHCONF");
	SAME_FIELD(ok, chown_restricted, "PATHCONF");
	SAME_FIELD(ok, case_insensitive, "PATHCONF");
	SAME_FIELD(ok, case_preserving, "PATHCONF");
	CHECK(ok[P].name_max >= 255);
}

/* COMMIT of a file with nothing to commit, and of a directory. */
static void test_commit_idle(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	char verf[NSIDES][NFS3_WRITEVERFSIZE];
	int st[NSIDES];

	pair_make(&pp, "commit");
	create_both(pp.dir, "f", 0644, o);
	BOTH(s)
		st[s] = nfsc_commit(cl[s], &o[s].fh, 0, 0, verf[s]);
	BOTH_STAT(st, NFS3_OK, "COMMIT without writes");
	BOTH(s)
		st[s] = nfsc_commit(cl[s], &pp.dir[s], 0, 0, verf[s]);
	SAME_STAT(st, "COMMIT of a directory");
	objs_free(o);
	pair_free(&pp);
}

/* READ, WRITE and SETATTR size on a directory. */
static void test_err_isdir(void)
{
	struct pair pp;
	char verf[8];
	int st[NSIDES], committed;
	uint32_t count;
	sattr3 sa;

	pair_make(&pp, "isdir");
	BOTH(s)
		st[s] = nfsc_read(cl[s], &pp.dir[s], 0, 100, NULL, NULL, NULL);
	BOTH_STAT(st, NFS3ERR_ISDIR, "READ of a directory");
	BOTH(s)
		st[s] = nfsc_write(cl[s], &pp.dir[s], 0, "x", 1, FILE_SYNC,
				   &count, &committed, verf);
	BOTH_STAT(st, NFS3ERR_ISDIR, "WRITE to a directory");
	memset(&sa, 0, sizeof(sa));
	sa.size.set_it = 1;
	sa.size.set_size3_u.size = 0;
	setattr_both_any(pp.dir, &sa, "SETATTR size of a dir");
	pair_free(&pp);
}

/* uid 4242 inside a root-owned 0700 directory and on 0600 files. */
static void test_err_acces(void)
{
	struct pair pp;
	struct obj priv[NSIDES], secret[NSIDES], rootf[NSIDES];
	struct nfsc_listing l;
	char verf[8], buf[64];
	unsigned char data[16];
	uint32_t count;
	int st[NSIDES], committed;

	pair_make(&pp, "acces");
	mkdir_both(pp.dir, "private", 0700, priv);
	BOTH(s)
		create_on(s, &priv[s].fh, "secret", 0600, &secret[s]);
	create_both(pp.dir, "rootfile", 0600, rootf);
	pattern(data, sizeof(data), 0, 3);
	BOTH(s)
		st[s] = nfsc_write(cl[s], &rootf[s].fh, 0, data, sizeof(data),
				   FILE_SYNC, &count, &committed, verf);
	BOTH_STAT(st, NFS3_OK, "WRITE rootfile as root");
	/* Root reads first, so a caching proxy holds the bytes. */
	BOTH(s)
		st[s] = nfsc_read(cl[s], &rootf[s].fh, 0, 16, buf, NULL, NULL);
	BOTH_STAT(st, NFS3_OK, "READ rootfile as root");

	BOTH(s)
		st[s] = nfsc_lookup(cl42[s], &priv[s].fh, "secret", NULL, NULL);
	BOTH_STAT(st, NFS3ERR_ACCES, "LOOKUP in 0700 dir as 4242");
	BOTH(s)
		st[s] = nfsc_create(cl42[s], &priv[s].fh, "new", 0644, NULL,
				    NULL);
	BOTH_STAT(st, NFS3ERR_ACCES, "CREATE in 0700 dir as 4242");
	BOTH(s)
		st[s] = nfsc_mkdir(cl42[s], &priv[s].fh, "newdir", 0755, NULL,
				   NULL);
	BOTH_STAT(st, NFS3ERR_ACCES, "MKDIR in 0700 dir as 4242");
	BOTH(s) {
		nfsc_list_dir(cl42[s], &priv[s].fh, 0, 4096, &l);
		st[s] = l.st;
		nfsc_listing_free(&l);
	}
	BOTH_STAT(st, NFS3ERR_ACCES, "READDIR of 0700 dir as 4242");
	BOTH(s)
		st[s] = nfsc_read(cl42[s], &rootf[s].fh, 0, 16, buf, NULL,
				  NULL);
	BOTH_STAT(st, NFS3ERR_ACCES, "READ 0600 root file as 4242");
	BOTH(s)
		st[s] = nfsc_write(cl42[s], &rootf[s].fh, 0, "evil", 4,
				   FILE_SYNC, &count, &committed, verf);
	BOTH_STAT(st, NFS3ERR_ACCES, "WRITE 0600 root file as 4242");
	BOTH(s)
		st[s] = nfsc_chmod(cl42[s], &rootf[s].fh, 0666);
	BOTH_STAT(st, NFS3ERR_PERM, "SETATTR mode of root file as 4242");
	BOTH(s)
		st[s] = nfsc_remove(cl42[s], &pp.dir[s], "rootfile");
	BOTH_STAT(st, NFS3ERR_ACCES, "REMOVE in root's 0755 dir as 4242");
	/* The data is untouched. */
	BOTH(s) {
		memset(buf, 0, sizeof(buf));
		st[s] = nfsc_read(cl[s], &rootf[s].fh, 0, 16, buf, &count,
				  NULL);
		CHECK_MSG(count == 16 && memcmp(buf, data, 16) == 0,
			  "rootfile (%s) changed", side_name[s]);
	}
	BOTH_STAT(st, NFS3_OK, "READ rootfile as root again");
	objs_free(priv);
	objs_free(secret);
	objs_free(rootf);
	pair_free(&pp);
}

/* Send GETATTR, LOOKUP, READ, WRITE, READDIR, CREATE with handle fh. */
static void bad_handle_calls(struct nfsc *c, const nfs_fh3 *fh, int st[6])
{
	char verf[8];
	uint32_t count;
	int committed;
	struct nfsc_listing l;

	st[0] = nfsc_getattr(c, fh, NULL);
	st[1] = nfsc_lookup(c, fh, "x", NULL, NULL);
	st[2] = nfsc_read(c, fh, 0, 10, NULL, NULL, NULL);
	st[3] = nfsc_write(c, fh, 0, "x", 1, FILE_SYNC, &count, &committed,
			   verf);
	nfsc_list_dir(c, fh, 0, 4096, &l);
	st[4] = l.st;
	nfsc_listing_free(&l);
	st[5] = nfsc_create(c, fh, "y", 0644, NULL, NULL);
}

/* Check that every call was refused as BADHANDLE or STALE. */
static void check_refused(const int st[6], const char *what, size_t pos)
{
	static const char *const procs6[6] = { "GETATTR", "LOOKUP", "READ",
					       "WRITE", "READDIR", "CREATE" };
	int i;

	for (i = 0; i < 6; i++)
		CHECK_MSG(st[i] == NFS3ERR_BADHANDLE || st[i] == NFS3ERR_STALE,
			  "%s (byte %zu) %s: %s", what, pos, procs6[i],
			  nfsc_stat_name(st[i]));
}

/* Flipped, truncated and made-up handles are refused; nothing crashes. */
static void test_err_badhandle(void)
{
	struct pair pp;
	struct obj o[NSIDES];
	nfs_fh3 bad;
	unsigned char junk[64];
	const char *pid = getenv("NFSC_PROXY_PID");
	int st[6], stn[NSIDES];
	size_t i;

	pair_make(&pp, "badhandle");
	create_both(pp.dir, "f", 0644, o);
	nfsc_fh_copy(&bad, &o[P].fh);
	/* Ganesha ignores some handle bytes; the proxy authenticates all. */
	for (i = 0; !same_server && i < bad.data.data_len; i++) {
		bad.data.data_val[i] ^= 0x5a;
		bad_handle_calls(cl[P], &bad, st);
		check_refused(st, "proxy, flipped byte", i);
		bad.data.data_val[i] ^= 0x5a;
	}
	bad.data.data_len--;
	bad_handle_calls(cl[P], &bad, st);
	check_refused(st, "proxy, truncated handle", bad.data.data_len);
	bad.data.data_len = 0;
	bad_handle_calls(cl[P], &bad, st);
	check_refused(st, "proxy, empty handle", 0);
	nfsc_fh_free(&bad);
	pattern(junk, sizeof(junk), 0, 99);
	bad.data.data_len = sizeof(junk);
	bad.data.data_val = (char *)junk;
	bad_handle_calls(cl[P], &bad, st);
	check_refused(st, "proxy, 64 junk bytes", 0);

	/* Directly, a flipped byte in Ganesha's handle. */
	nfsc_fh_copy(&bad, &o[D].fh);
	bad.data.data_val[bad.data.data_len / 2] ^= 0x5a;
	bad_handle_calls(cl[D], &bad, st);
	check_refused(st, "direct, flipped byte", bad.data.data_len / 2);
	nfsc_fh_free(&bad);

	/* Both still serve, and the proxy process is alive. */
	BOTH(s)
		stn[s] = nfsc_getattr(cl[s], &o[s].fh, NULL);
	BOTH_STAT(stn, NFS3_OK, "GETATTR of the good handle after bad ones");
	BOTH(s)
		stn[s] = nfsc_null(cl[s]);
	BOTH_STAT(stn, 0, "NULL after bad handles");
	if (pid)
		CHECK_MSG(kill((pid_t)atol(pid), 0) == 0,
			  "proxy pid %s is gone", pid);
	objs_free(o);
	pair_free(&pp);
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} procedure_tests[] = {
	{ "null_and_root", test_null_and_root },
	{ "getattr", test_getattr },
	{ "setattr", test_setattr },
	{ "lookup", test_lookup },
	{ "access", test_access },
	{ "symlink_readlink", test_symlink_readlink },
	{ "write_read_commit", test_write_read_commit },
	{ "create_modes", test_create_modes },
	{ "mkdir", test_mkdir },
	{ "mknod", test_mknod },
	{ "remove", test_remove },
	{ "rmdir", test_rmdir },
	{ "rename", test_rename },
	{ "link", test_link },
	{ "readdir_small", test_readdir_small },
	{ "readdir_big", test_readdir_big },
	{ "fsstat", test_fsstat },
	{ "fsinfo", test_fsinfo },
	{ "pathconf", test_pathconf },
	{ "commit_idle", test_commit_idle },
}, error_tests[] = {
	{ "isdir", test_err_isdir },
	{ "acces", test_err_acces },
	{ "badhandle", test_err_badhandle },
};

#define NTESTS(t) (sizeof(t) / sizeof((t)[0]))

int test_register(void)
{
	CU_pSuite procs, errs;
	size_t i;

	tcheck_report_at_exit("test_compare");
	procs = CU_add_suite("compare_procedures", suite_init, suite_cleanup);
	errs = CU_add_suite("compare_errors", suite_init, suite_cleanup);
	if (!procs || !errs)
		return -1;
	for (i = 0; i < NTESTS(procedure_tests); i++)
		if (!CU_add_test(procs, procedure_tests[i].name,
				 procedure_tests[i].fn))
			return -1;
	for (i = 0; i < NTESTS(error_tests); i++)
		if (!CU_add_test(errs, error_tests[i].name, error_tests[i].fn))
			return -1;
	return 0;
}
