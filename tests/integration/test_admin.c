/* SPDX-License-Identifier: MIT */
/*
 * test_admin: `nfscached cache` over the admin socket against a live proxy
 * and a real Ganesha, with write-back held (wbtest_hold.conf: absorbed
 * writes stay dirty until something flushes them). In order:
 *   - status answers JSON naming the export, its upstream up;
 *   - warm of a 16 MiB file written behind the proxy's back: a client then
 *     reads all of it through the proxy, byte for byte, and the proxy's
 *     nfscached_upstream_read_bytes_total moves by 0;
 *   - forget of that file: the next client read fetches all 16 MiB again;
 *   - drop with absorbed (dirty) data in the cache: the clean bytes go,
 *     the dirty ones stay (nfscached_cache_bytes{state="dirty"} unchanged)
 *     and the export directory does not have them yet;
 *   - flush: exit 0, nothing dirty, writing or unstable left, and the
 *     absorbed bytes are in the file on Ganesha's disk;
 *   - warm of a directory: every regular file under it, recursively;
 *   - flush with the upstream stopped: exit 3 at --timeout, the data
 *     kept; after the upstream restarts, flush writes it;
 *   - bad requests: exit status 2.
 * The socket path is the generated config's admin_socket (scripts/lib.sh).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CUnit/CUnit.h>

#include "cunit_main.h"
#include "nfsclient.h"
#include "tcheck.h"

enum { BIG = 16 << 20, IO = 1 << 20, SMALL = 100000 };

static char sock[512];
static unsigned char *big;	/* the 16 MiB file's bytes */

/* Find admin_socket in $NFSC_PROXY_CONF into sock; 0 or -1. */
static int find_socket(void)
{
	FILE *f = fopen(getenv("NFSC_PROXY_CONF"), "r");
	char line[1024];
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " admin_socket = \"%511[^\"]\"", sock) == 1)
			rc = 0;
	fclose(f);
	return rc;
}

/* Run `nfscached cache --socket SOCK args` (a shell word list); its exit
 * status, and its stdout in *out (malloc'd) when out is not NULL. */
static int cache_cmd(const char *args, char **out)
{
	char cmd[2048], *buf = NULL;
	size_t cap = 0, len = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s cache --socket %s %s", getenv("NFSCACHED_BIN"),
		 sock, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
		}
		size_t n = fread(buf + len, 1, 4096, p);

		if (!n)
			break;
		len += n;
	}
	buf[len] = 0;
	st = pclose(p);
	fprintf(stderr, "$ nfscached cache %s\n%s", args, buf);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of series on the proxy's /metrics now. */
static double metric(const char *series)
{
	char *page = tmetrics_get();
	double v = tmetrics_value(page, series);

	free(page);
	return v;
}

/* Write n bytes of buf to the export directory's file name. */
static void put_file(const char *name, const void *buf, size_t n)
{
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, buf, n) == (ssize_t)n);
	close(fd);
}

/* Read name whole through the proxy and compare it with want[0..n). */
static void read_through_proxy(const char *name, const unsigned char *want, size_t n)
{
	struct nfsc *c = nfsc_connect(getenv("NFSC_PROXY_URL"), 0, 0);
	unsigned char *got = malloc(IO);
	nfs_fh3 fh = { 0 }, dir = { 0 };
	uint64_t off = 0;
	char *copy = strdup(name), *save = NULL;

	CU_ASSERT_FATAL(c != NULL && got != NULL && copy != NULL);
	nfsc_fh_copy(&fh, nfsc_root(c));
	for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		nfsc_fh_free(&dir);
		dir = fh;
		memset(&fh, 0, sizeof(fh));
		CHECK_STAT(nfsc_lookup(c, &dir, t, &fh, NULL), NFS3_OK);
	}
	nfsc_fh_free(&dir);
	free(copy);
	while (off < n) {
		uint32_t count = 0;
		int eof = 0;

		CHECK_STAT(nfsc_read(c, &fh, off, IO, got, &count, &eof), NFS3_OK);
		CHECK_MSG(count > 0 && memcmp(got, want + off, count) == 0,
			  "%s: bytes at %llu differ (count %u)", name,
			  (unsigned long long)off, count);
		if (!count)
			break;
		off += count;
	}
	CHECK_EQ(off, n);
	nfsc_fh_free(&fh);
	free(got);
	nfsc_close(&c);
}

/* status: JSON with the export and its upstream up. */
static void test_status_json(void)
{
	char *out = NULL;
	struct stat st;

	CU_ASSERT_FATAL(find_socket() == 0);
	/* Only its owner (the daemon's user, root) may talk to it. */
	CHECK_EQ(stat(sock, &st), 0);
	CHECK_MSG(S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
		  "admin socket mode %o, want a socket of mode 0600",
		  (unsigned)st.st_mode);
	CHECK_EQ(cache_cmd("status", &out), 0);
	CHECK_MSG(out && out[0] == '{' && strstr(out, "\"cache_bytes\":") &&
		  strstr(out, "\"dirty_bytes\":0,") &&
		  strstr(out, "\"exports\":[{\"path\":\"/export\",\"id\":1,\"upstream_up\":true}],") &&
		  strstr(out, "\"read_steps\":{\"getattr\":0,\"access\":0,"
			 "\"plan\":0,\"disk\":0,\"fetch\":0,\"bypass\":0,"
			 "\"reply\":0},") &&
		  strstr(out, "\"local_commit\":{\"journal_records\":0,") &&
		  strstr(out, "\"other\":0}}}\n"),
		  "status: %s", out ? out : "(none)");
	free(out);
}

/* warm, then a whole client read costs no upstream READ byte; forget,
 * and the next read fetches it all again. */
static void test_warm_then_forget(void)
{
	char *out = NULL;
	double before;

	big = malloc(BIG);
	CU_ASSERT_FATAL(big != NULL);
	for (size_t i = 0; i < BIG; i++)
		big[i] = (unsigned char)(i * 2654435761u >> 13);
	put_file("warm16.bin", big, BIG);

	before = metric("nfscached_upstream_read_bytes_total");
	CHECK_EQ(cache_cmd("warm /export/warm16.bin", &out), 0);
	CHECK_MSG(out && strstr(out, "warming /export/warm16.bin: 8388608 bytes so far\n") &&
		  strstr(out, "warmed /export/warm16.bin: 16777216 bytes\n"),
		  "warm output (progress at 8 MiB, then the total): %s",
		  out ? out : "(none)");
	free(out);
	CHECK_EQ(metric("nfscached_upstream_read_bytes_total") - before, BIG);

	before = metric("nfscached_upstream_read_bytes_total");
	read_through_proxy("warm16.bin", big, BIG);
	CHECK_EQ(metric("nfscached_upstream_read_bytes_total") - before, 0);

	CHECK_EQ(cache_cmd("forget /export/warm16.bin", &out), 0);
	CHECK_MSG(out && strstr(out, "forgot /export/warm16.bin: 16777216 bytes dropped\n"),
		  "forget output: %s", out ? out : "(none)");
	free(out);
	before = metric("nfscached_upstream_read_bytes_total");
	read_through_proxy("warm16.bin", big, BIG);
	CHECK_EQ(metric("nfscached_upstream_read_bytes_total") - before, BIG);
}

/* Write SMALL bytes UNSTABLE to a new file through the proxy: absorbed,
 * held dirty. Returns the bytes written. */
static unsigned char *absorb(const char *name)
{
	struct nfsc *c = nfsc_connect(getenv("NFSC_PROXY_URL"), 0, 0);
	unsigned char *buf = malloc(SMALL);
	nfs_fh3 fh = { 0 };
	uint32_t count = 0;
	int committed = -1;
	char verf[8];

	CU_ASSERT_FATAL(c != NULL && buf != NULL);
	for (size_t i = 0; i < SMALL; i++)
		buf[i] = (unsigned char)('a' + i % 26);
	CHECK_STAT(nfsc_create(c, nfsc_root(c), name, 0644, &fh, NULL), NFS3_OK);
	CHECK_STAT(nfsc_write(c, &fh, 0, buf, SMALL, UNSTABLE, &count, &committed, verf),
		   NFS3_OK);
	CHECK_EQ(count, SMALL);
	nfsc_fh_free(&fh);
	nfsc_close(&c);
	return buf;
}

/* The size of name in the export directory on disk (-1 if absent). */
static long long disk_size(const char *name)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", getenv("NFSC_EXPORT_DIR"), name);
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* drop keeps dirty data; flush then writes it upstream. */
static void test_drop_keeps_dirty_flush_writes(void)
{
	unsigned char *buf = absorb("absorbed.bin"), *disk = malloc(SMALL);
	char *out = NULL, path[1024];
	double dirty = metric("nfscached_cache_bytes{state=\"dirty\"}");
	int fd;

	CHECK_EQ(dirty, SMALL);
	CHECK_MSG(metric("nfscached_cache_bytes{state=\"clean\"}") > 0,
		  "no clean bytes to drop (the re-read 16 MiB file)");
	CHECK_EQ(disk_size("absorbed.bin"), 0);

	CHECK_EQ(cache_cmd("drop", &out), 0);
	CHECK_MSG(out && strstr(out, "; 100000 bytes kept until written back\n"),
		  "drop output: %s", out ? out : "(none)");
	free(out);
	CHECK_EQ(metric("nfscached_cache_bytes{state=\"clean\"}"), 0);
	CHECK_EQ(metric("nfscached_cache_bytes{state=\"dirty\"}"), SMALL);
	CHECK_EQ(disk_size("absorbed.bin"), 0);

	CHECK_EQ(cache_cmd("--timeout 120 flush", &out), 0);
	CHECK_MSG(out && strstr(out, "flushed: nothing left to write back\n"),
		  "flush output: %s", out ? out : "(none)");
	free(out);
	CHECK_EQ(metric("nfscached_cache_bytes{state=\"dirty\"}") +
		 metric("nfscached_cache_bytes{state=\"writing\"}") +
		 metric("nfscached_cache_bytes{state=\"unstable\"}"), 0);
	CHECK_EQ(disk_size("absorbed.bin"), SMALL);
	snprintf(path, sizeof(path), "%s/absorbed.bin", getenv("NFSC_EXPORT_DIR"));
	fd = open(path, O_RDONLY);
	CHECK_MSG(fd >= 0 && read(fd, disk, SMALL) == SMALL && memcmp(disk, buf, SMALL) == 0,
		  "the flushed bytes on disk differ");
	if (fd >= 0)
		close(fd);
	free(disk);
	free(buf);
}

/* warm of a directory warms every regular file under it. */
static void test_warm_tree(void)
{
	char dir[1024], *out = NULL;
	double before;

	snprintf(dir, sizeof(dir), "%s/tree", getenv("NFSC_EXPORT_DIR"));
	CU_ASSERT_FATAL(mkdir(dir, 0755) == 0);
	snprintf(dir, sizeof(dir), "%s/tree/sub", getenv("NFSC_EXPORT_DIR"));
	CU_ASSERT_FATAL(mkdir(dir, 0755) == 0);
	put_file("tree/a.bin", big, 300000);
	put_file("tree/sub/b.bin", big + 1, 200000);

	CHECK_EQ(cache_cmd("warm /export/tree", &out), 0);
	CHECK_MSG(out && strstr(out, "warmed /export/tree/a.bin: 300000 bytes\n") &&
		  strstr(out, "warmed /export/tree/sub/b.bin: 200000 bytes\n") &&
		  strstr(out, "warmed 2 files, 500000 bytes\n"),
		  "warm tree output: %s", out ? out : "(none)");
	free(out);
	before = metric("nfscached_upstream_read_bytes_total");
	read_through_proxy("tree/a.bin", big, 300000);
	CHECK_EQ(metric("nfscached_upstream_read_bytes_total") - before, 0);
}

/* Bytes the proxy holds not yet committed upstream. */
static double not_committed(void)
{
	return metric("nfscached_cache_bytes{state=\"dirty\"}") +
	       metric("nfscached_cache_bytes{state=\"writing\"}") +
	       metric("nfscached_cache_bytes{state=\"unstable\"}");
}

/* flush PATH writes back that file only; forget of a dirty file writes it
 * back first, then drops it: the next read fetches it all again. */
static void test_flush_path_and_forget_dirty(void)
{
	unsigned char *a = absorb("fa.bin"), *b = absorb("fb.bin");
	char *out = NULL;
	double before;

	CHECK_EQ(not_committed(), 2 * SMALL);
	CHECK_EQ(cache_cmd("--timeout 120 flush /export/fa.bin", &out), 0);
	CHECK_MSG(out && strstr(out, "flushed 1 files: nothing left to write back\n"),
		  "flush PATH output: %s", out ? out : "(none)");
	free(out);
	CHECK_EQ(disk_size("fa.bin"), SMALL);
	CHECK_EQ(disk_size("fb.bin"), 0);
	CHECK_EQ(not_committed(), SMALL);

	CHECK_EQ(cache_cmd("--timeout 120 forget /export/fb.bin", &out), 0);
	CHECK_MSG(out && strstr(out, "forgot 1 files, 100000 bytes\n"),
		  "forget of a dirty file: %s", out ? out : "(none)");
	free(out);
	CHECK_EQ(disk_size("fb.bin"), SMALL);
	CHECK_EQ(not_committed(), 0);
	before = metric("nfscached_upstream_read_bytes_total");
	read_through_proxy("fb.bin", b, SMALL);
	CHECK_EQ(metric("nfscached_upstream_read_bytes_total") - before, SMALL);
	free(a);
	free(b);
}

/* forget of a tree drops the names cached under it: the next LOOKUP in
 * it goes upstream. */
static void test_forget_tree_drops_names(void)
{
	const char *series = "nfscached_meta_requests_total{procedure=\"lookup\",result=\"miss\"}";
	struct nfsc *c = nfsc_connect(getenv("NFSC_PROXY_URL"), 0, 0);
	nfs_fh3 dir = { 0 }, fh = { 0 };
	double before;

	CU_ASSERT_FATAL(c != NULL);
	CHECK_STAT(nfsc_lookup(c, nfsc_root(c), "tree", &dir, NULL), NFS3_OK);
	CHECK_STAT(nfsc_lookup(c, &dir, "a.bin", &fh, NULL), NFS3_OK);
	nfsc_fh_free(&fh);
	before = metric(series);
	CHECK_STAT(nfsc_lookup(c, &dir, "a.bin", &fh, NULL), NFS3_OK);
	nfsc_fh_free(&fh);
	CHECK_EQ(metric(series) - before, 0);	/* a hit: the name is cached */
	CHECK_EQ(cache_cmd("forget /export/tree", NULL), 0);
	before = metric(series);
	CHECK_STAT(nfsc_lookup(c, &dir, "a.bin", &fh, NULL), NFS3_OK);
	nfsc_fh_free(&fh);
	CHECK_EQ(metric(series) - before, 1);
	nfsc_fh_free(&dir);
	nfsc_close(&c);
}

/* With the upstream stopped, flush gives up at its timeout with status
 * 3 and keeps the data; once the upstream is back, flush writes it. */
static void test_flush_times_out_with_upstream_down(void)
{
	unsigned char *buf = absorb("held.bin");
	char cmd[1024];

	CHECK_EQ(metric("nfscached_cache_bytes{state=\"dirty\"}"), SMALL);
	snprintf(cmd, sizeof(cmd), "%s stop", getenv("NFSC_UPSTREAMCTL"));
	CU_ASSERT_FATAL(system(cmd) == 0);
	CHECK_EQ(cache_cmd("--timeout 1 flush", NULL), 3);
	CHECK_EQ(metric("nfscached_cache_bytes{state=\"dirty\"}") +
		 metric("nfscached_cache_bytes{state=\"writing\"}") +
		 metric("nfscached_cache_bytes{state=\"unstable\"}"), SMALL);
	CHECK_EQ(disk_size("held.bin"), 0);
	snprintf(cmd, sizeof(cmd), "%s start", getenv("NFSC_UPSTREAMCTL"));
	CU_ASSERT_FATAL(system(cmd) == 0);
	CHECK_EQ(cache_cmd("--timeout 120 flush", NULL), 0);
	CHECK_EQ(disk_size("held.bin"), SMALL);
	free(buf);
}

/* Bad requests exit 2; a path no export holds exits 1. */
static void test_bad_requests(void)
{
	CHECK_EQ(cache_cmd("frobnicate", NULL), 2);
	CHECK_EQ(cache_cmd("forget", NULL), 2);
	CHECK_EQ(cache_cmd("status extra", NULL), 2);
	CHECK_EQ(cache_cmd("--timeout x flush", NULL), 2);
	CHECK_EQ(cache_cmd("warm /elsewhere/f", NULL), 1);
	CHECK_EQ(cache_cmd("warm /export/no-such-file", NULL), 1);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("admin", NULL, NULL);

	tcheck_report_at_exit("test_admin");
	if (!s ||
	    !CU_add_test(s, "status_json", test_status_json) ||
	    !CU_add_test(s, "warm_then_forget", test_warm_then_forget) ||
	    !CU_add_test(s, "drop_keeps_dirty_flush_writes", test_drop_keeps_dirty_flush_writes) ||
	    !CU_add_test(s, "warm_tree", test_warm_tree) ||
	    !CU_add_test(s, "flush_path_and_forget_dirty", test_flush_path_and_forget_dirty) ||
	    !CU_add_test(s, "forget_tree_drops_names", test_forget_tree_drops_names) ||
	    !CU_add_test(s, "flush_times_out_with_upstream_down",
			 test_flush_times_out_with_upstream_down) ||
	    !CU_add_test(s, "bad_requests", test_bad_requests))
		return -1;
	return 0;
}
