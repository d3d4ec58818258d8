/* SPDX-License-Identifier: MIT */
/*
 * test_submount: MOUNT v3 MNT of a path below the export (RFC 1813
 * section 5.2.1), through the proxy to the real Ganesha, under harness.sh
 * (NFSC_EXPORT_DIR, NFSC_PROXY_NFS_PORT, NFSC_PROXY_MOUNT_PORT).
 *
 * suite_init builds, in the export's backing directory, sub/dir/data.bin
 * (DATA_LEN bytes of a fixed pattern), sub/file.txt and the symlinks
 * sub/link -> dir and sub/out -> /tmp. Then: MNT /export/sub/dir gives the
 * same client handle as LOOKUP sub, dir from the root's handle; data.bin
 * read through that handle is byte-identical; "..", "." and symlink
 * components are MNT3ERR_ACCES, a file MNT3ERR_NOTDIR, a missing name
 * MNT3ERR_NOENT, a path that only shares a prefix with the export
 * ("/exportx") MNT3ERR_NOENT; EXPORT lists /export.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cunit_main.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "rawrpc.h"
#include "tcheck.h"

#define EXPECT(ok, ...) tcheck((ok), __FILE__, __LINE__, __VA_ARGS__)
#define DATA_LEN	(300u * 1024 + 17)	/* several READs, odd tail */
#define READ_CHUNK	(64u * 1024)

static struct {
	uint16_t nfs_port;
	uint16_t mount_port;
	int nfs_fd;
} T;

/* The byte at offset i of data.bin. */
static uint8_t pattern(size_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13);
}

/* Write path with len bytes of pattern(); 0 or -1 (errno on stderr). */
static int write_file(const char *path, size_t len)
{
	FILE *f = fopen(path, "wb");
	size_t i;

	if (!f) {
		fprintf(stderr, "submount: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < len; i++)
		fputc(pattern(i), f);
	return fclose(f) == 0 ? 0 : -1;
}

static int suite_init(void)
{
	const char *dir = getenv("NFSC_EXPORT_DIR");
	char p[4096];

	T.nfs_port = rawrpc_env_port("NFSC_PROXY_NFS_PORT");
	T.mount_port = rawrpc_env_port("NFSC_PROXY_MOUNT_PORT");
	if (!dir || !T.nfs_port || !T.mount_port)
		return -1;
	snprintf(p, sizeof(p), "%s/sub", dir);
	if (mkdir(p, 0755) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub/dir", dir);
	if (mkdir(p, 0755) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub/dir/data.bin", dir);
	if (write_file(p, DATA_LEN) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub/file.txt", dir);
	if (write_file(p, 10) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub/link", dir);
	if (symlink("dir", p) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/sub/out", dir);
	if (symlink("/tmp", p) != 0)
		return -1;
	T.nfs_fd = rawrpc_connect(T.nfs_port);
	return T.nfs_fd < 0 ? -1 : 0;
}

static int suite_clean(void)
{
	if (T.nfs_fd >= 0)
		close(T.nfs_fd);
	return 0;
}

/* MNT path on a fresh connection: 0 with fh set, the mountstat3, or -1. */
static int mnt(const char *path, uint8_t *fh, size_t *fh_len)
{
	int fd = rawrpc_connect(T.mount_port);
	int st;

	if (fd < 0)
		return -1;
	st = rawrpc_mnt(fd, rawrpc_xid(), path, fh, fh_len);
	close(fd);
	return st;
}

/* LOOKUP nm in dir; 0 with out set (and *type), or the nfsstat3/-1. */
static int lookup(const uint8_t *dir, size_t dir_len, const char *nm,
		  uint8_t *out, size_t *out_len, ftype3 *type)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply r;
	LOOKUP3args a;
	LOOKUP3res res;
	int st;

	a.what.dir.data.data_len = (u_int)dir_len;
	a.what.dir.data.data_val = (char *)(uintptr_t)dir;
	a.what.name = (char *)(uintptr_t)nm;
	memset(&res, 0, sizeof(res));
	if (rawrpc_call(T.nfs_fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3,
			NFSPROC3_LOOKUP, &root, (xdrproc_t)xdr_LOOKUP3args, &a,
			(xdrproc_t)xdr_LOOKUP3res, &res, &r) != RAWRPC_OK ||
	    r.stat != MSG_ACCEPTED || r.accept != SUCCESS)
		return -1;
	st = (int)res.status;
	if (st == NFS3_OK) {
		LOOKUP3resok *ok = &res.LOOKUP3res_u.resok;

		*out_len = ok->object.data.data_len;
		memcpy(out, ok->object.data.data_val, *out_len);
		*type = ok->obj_attributes.attributes_follow
				? ok->obj_attributes.post_op_attr_u.attributes.type
				: 0;
	}
	xdr_free((xdrproc_t)xdr_LOOKUP3res, (char *)&res);
	return st;
}

/* READ count bytes at off of fh into buf; bytes read, or -1. */
static long read_at(const uint8_t *fh, size_t fh_len, uint64_t off,
		    uint32_t count, uint8_t *buf, bool *eof)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply r;
	READ3args a;
	READ3res res;
	long n = -1;

	a.file.data.data_len = (u_int)fh_len;
	a.file.data.data_val = (char *)(uintptr_t)fh;
	a.offset = off;
	a.count = count;
	memset(&res, 0, sizeof(res));
	if (rawrpc_call(T.nfs_fd, rawrpc_xid(), NFS_PROGRAM, NFS_V3,
			NFSPROC3_READ, &root, (xdrproc_t)xdr_READ3args, &a,
			(xdrproc_t)xdr_READ3res, &res, &r) != RAWRPC_OK ||
	    r.stat != MSG_ACCEPTED || r.accept != SUCCESS)
		return -1;
	if (res.status == NFS3_OK) {
		READ3resok *ok = &res.READ3res_u.resok;

		n = ok->data.data_len;
		memcpy(buf, ok->data.data_val, (size_t)n);
		*eof = ok->eof;
	}
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	return n;
}

/* The subdirectory's handle is the one LOOKUPs from the root give. */
static void test_mnt_subdir_handle(void)
{
	uint8_t root[64], sub[64], dir[64], m[64];
	size_t root_len, sub_len, dir_len, m_len;
	ftype3 t;

	EXPECT(mnt("/export", root, &root_len) == 0, "MNT /export");
	EXPECT(lookup(root, root_len, "sub", sub, &sub_len, &t) == 0 &&
	       t == NF3DIR, "LOOKUP sub");
	EXPECT(lookup(sub, sub_len, "dir", dir, &dir_len, &t) == 0 &&
	       t == NF3DIR, "LOOKUP sub/dir");
	EXPECT(mnt("/export/sub/dir", m, &m_len) == 0, "MNT /export/sub/dir");
	EXPECT(m_len == dir_len && memcmp(m, dir, dir_len) == 0,
	       "MNT /export/sub/dir handle (%zu bytes) is LOOKUP's (%zu)",
	       m_len, dir_len);
	EXPECT(mnt("/export//sub/dir/", m, &m_len) == 0 && m_len == dir_len &&
	       memcmp(m, dir, dir_len) == 0, "MNT /export//sub/dir/ same handle");
}

/* data.bin read through the MNT handle is byte-identical. */
static void test_read_through_subdir(void)
{
	uint8_t d[64], f[64];
	size_t d_len, f_len, off = 0, bad = 0;
	uint8_t *buf = malloc(READ_CHUNK);
	bool eof = false;
	ftype3 t;

	EXPECT(buf != NULL, "malloc");
	if (!buf)
		return;
	EXPECT(mnt("/export/sub/dir", d, &d_len) == 0, "MNT /export/sub/dir");
	EXPECT(lookup(d, d_len, "data.bin", f, &f_len, &t) == 0 && t == NF3REG,
	       "LOOKUP data.bin in the mounted subdirectory");
	while (!eof && off < DATA_LEN + READ_CHUNK) {
		long n = read_at(f, f_len, off, READ_CHUNK, buf, &eof);

		if (n < 0) {
			EXPECT(false, "READ at %zu failed", off);
			break;
		}
		for (long i = 0; i < n; i++)
			if (buf[i] != pattern(off + (size_t)i))
				bad++;
		off += (size_t)n;
		if (n == 0)
			break;
	}
	EXPECT(off == DATA_LEN && eof && bad == 0,
	       "read %zu of %u bytes, eof %d, %zu differ", off, DATA_LEN,
	       eof, bad);
	free(buf);
}

/* Refusals, each with its exact mountstat3. */
static void test_refusals(void)
{
	static const struct {
		const char *path;
		int st;
	} cases[] = {
		{ "/export/sub/..", MNT3ERR_ACCES },
		{ "/export/sub/../sub/dir", MNT3ERR_ACCES },
		{ "/export/..", MNT3ERR_ACCES },
		{ "/export/./sub", MNT3ERR_ACCES },
		{ "/export/sub/link", MNT3ERR_ACCES },
		{ "/export/sub/link/", MNT3ERR_ACCES },
		{ "/export/sub/out", MNT3ERR_ACCES },
		{ "/export/sub/file.txt", MNT3ERR_NOTDIR },
		{ "/export/sub/file.txt/x", MNT3ERR_NOTDIR },
		{ "/export/sub/dir/data.bin", MNT3ERR_NOTDIR },
		{ "/export/sub/missing", MNT3ERR_NOENT },
		{ "/export/missing/dir", MNT3ERR_NOENT },
		{ "/exportx", MNT3ERR_NOENT },
		{ "/exp", MNT3ERR_NOENT },
	};
	uint8_t fh[64];
	size_t fh_len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = mnt(cases[i].path, fh, &fh_len);

		EXPECT(st == cases[i].st, "MNT %s: status %d, want %d",
		       cases[i].path, st, cases[i].st);
	}
}

/* EXPORT lists the configured export (and only it). */
static void test_export_lists(void)
{
	struct rawrpc_cred root = rawrpc_cred_sys(0, 0);
	struct rawrpc_reply r;
	exports res = NULL;
	int fd = rawrpc_connect(T.mount_port);
	enum rawrpc_io io;

	EXPECT(fd >= 0, "connect to the MOUNT port");
	if (fd < 0)
		return;
	io = rawrpc_call(fd, rawrpc_xid(), MOUNT_PROGRAM, MOUNT_V3,
			 MOUNTPROC3_EXPORT, &root, NULL, NULL,
			 (xdrproc_t)xdr_exports, &res, &r);
	EXPECT(io == RAWRPC_OK && res && !strcmp(res->ex_dir, "/export") &&
	       !res->ex_next, "EXPORT lists /export alone (io %d)", io);
	xdr_free((xdrproc_t)xdr_exports, (char *)&res);
	close(fd);
}

int test_register(void)
{
	static const struct {
		const char *name;
		CU_TestFunc fn;
	} tests[] = {
		{ "mnt_subdir_handle_is_lookups", test_mnt_subdir_handle },
		{ "read_through_subdir_is_identical", test_read_through_subdir },
		{ "dots_symlinks_files_missing_refused", test_refusals },
		{ "export_lists_exports", test_export_lists },
	};
	CU_pSuite s = CU_add_suite("submount", suite_init, suite_clean);

	if (s == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			return -1;
	return 0;
}
