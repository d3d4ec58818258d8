/* SPDX-License-Identifier: MIT */
/*
 * test_reload_remove: what becomes of a removed export's clients and of
 * the data they wrote, seen from the wire (issue 41, item 2).
 *
 * Runs under test_reload_remove.sh, which starts the proxy with two
 * exports: "/export" (id 1, Ganesha's export) and "/second" (id 2, its
 * subdirectory NFSC_SECOND_SUBDIR, reached through a delayrelay whose pid
 * is NFSC_RELAY_PID), and saves the configuration without "/second" as
 * NFSC_CONF_WITHOUT. A test removes "/second" by copying that file over
 * NFSC_PROXY_CONF and sending SIGHUP to NFSC_PROXY_PID, then waits for the
 * log's "removed" line. Suites:
 *
 *   stale: a file's handle LOOKed UP through "/second" before the removal
 *     answers NFS3ERR_STALE to GETATTR and READ afterwards, as does the
 *     export's root handle, and MNT of "/second" is refused; on the same
 *     connection "/export"'s handles still answer NFS3_OK with the file's
 *     bytes.
 *   dirty: an UNSTABLE WRITE through "/second" with no COMMIT (the proxy
 *     keeps it dirty: writeback_delay = 600), the relay stopped (SIGSTOP),
 *     "/second" removed: the export waits (nfscached_config_exports_retiring
 *     is 1 before and after "/export" serves a LOOKUP, a GETATTR and an
 *     uncached READ byte for byte); the relay continued, the log's
 *     "retired" line comes and the file in Ganesha's directory holds the
 *     written bytes byte for byte.
 *
 * Before the live-exports commit a reload that removed an export was
 * refused: no "removed" line, and the old handles still answered NFS3_OK.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "cunit_main.h"
#include "wbtest_util.h"

#define LOG_WAIT_MS	30000	/* longest wait for a log line */
#define RETIRE_WAIT_MS	60000	/* longest wait for the retirement */
#define FILE_BYTES	(300u * WB_KIB)
#define M_RETIRING	"nfscached_config_exports_retiring"
#define M_REMOVED	"nfscached_config_export_changes_total{change=\"removed\"}"
#define LINE_REMOVED	"reload: export \"/second\" (id 2) removed"
#define LINE_RETIRED	"reload: export \"/second\" (id 2) retired"

/* How many times needle occurs in the proxy's log; -1 if unreadable. */
static long log_count(const char *needle)
{
	const char *path = getenv("NFSC_PROXY_LOG");
	FILE *f = path ? fopen(path, "r") : NULL;
	char *text = NULL, *p;
	size_t cap = 0, len = 0, got;
	long n = 0;

	if (!f)
		return -1;
	do {
		if (len + 65536 > cap) {
			char *t = realloc(text, cap = len + 65536 + 1);

			if (!t) {
				free(text);
				fclose(f);
				return -1;
			}
			text = t;
		}
		got = fread(text + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	fclose(f);
	text[len] = '\0';
	for (p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(text);
	return n;
}

/* Wait up to ms for more than before occurrences of needle in the log. */
static bool log_wait(const char *needle, long before, int ms)
{
	uint64_t end = wb_now_ms() + (uint64_t)ms;

	do {
		if (log_count(needle) > before)
			return true;
		wb_sleep_ms(20);
	} while (wb_now_ms() < end);
	return false;
}

/* Copy file from over file to; 0 or -1. */
static int copy_file(const char *from, const char *to)
{
	char buf[8192];
	int in = open(from, O_RDONLY), out;
	ssize_t n = 0;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_TRUNC);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

/* Remove "/second": the configuration without it, SIGHUP, its log line. */
static void remove_second(void)
{
	const char *without = getenv("NFSC_CONF_WITHOUT");
	const char *conf = getenv("NFSC_PROXY_CONF");
	const char *pid = getenv("NFSC_PROXY_PID");
	long before = log_count(LINE_REMOVED);

	WB_CHECK(without && conf && pid, "NFSC_CONF_WITHOUT, NFSC_PROXY_CONF "
		 "and NFSC_PROXY_PID are set");
	if (!without || !conf || !pid)
		return;
	WB_CHECK(copy_file(without, conf) == 0, "rewrite %s: %s", conf,
		 strerror(errno));
	WB_CHECK(kill((pid_t)atol(pid), SIGHUP) == 0, "SIGHUP to %s", pid);
	WB_CHECK(log_wait(LINE_REMOVED, before, LOG_WAIT_MS),
		 "the log says \"%s\" within %d ms", LINE_REMOVED, LOG_WAIT_MS);
	WB_EQ(wb_metric(M_REMOVED), 1);
}

/* MNT path over the proxy's MOUNT port: 0 and *fh, or the mountstat3. */
static int mnt(const struct wb_conn *c, const char *path, struct wb_fh *fh)
{
	size_t len = 0;
	int fd = rawrpc_connect(c->mnt_port), rc;

	if (fd < 0)
		return -1;
	rc = rawrpc_mnt(fd, rawrpc_xid(), path, fh->data, &len);
	close(fd);
	fh->len = (uint32_t)len;
	return rc;
}

/* Send SIGSTOP or SIGCONT to the relay in front of "/second"'s upstream. */
static void relay_signal(int sig)
{
	const char *pid = getenv("NFSC_RELAY_PID");

	WB_CHECK(pid && kill((pid_t)atol(pid), sig) == 0,
		 "signal %d to the relay (NFSC_RELAY_PID=%s)", sig,
		 pid ? pid : "unset");
}

/* name under "/second"'s directory on Ganesha's disk, in out. */
static void second_path(char *out, size_t n, const char *name)
{
	const char *sub = getenv("NFSC_SECOND_SUBDIR");

	snprintf(out, n, "%s/%s", sub ? sub : "second", name);
}

/* Write a pattern file of FILE_BYTES as name in Ganesha's directory. */
static void disk_file(const char *name, uint32_t seed, uint8_t *buf)
{
	const char *dir = getenv("NFSC_EXPORT_DIR");
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	WB_CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	wb_pattern(buf, FILE_BYTES, 0, seed);
	WB_CHECK(wb_disk_write(name, 0, buf, FILE_BYTES) == 0, "write %s", name);
}

/* LOOKUP name in dir and READ it whole: its bytes must be want's. */
static void read_matches(struct wb_conn *c, const struct wb_fh *dir,
			 const char *name, const uint8_t *want,
			 struct wb_fh *fh)
{
	uint8_t *got = malloc(FILE_BYTES);
	fattr3 a;

	WB_STAT(wb_lookup(c, dir, name, fh, &a), NFS3_OK);
	WB_CHECK(got && wb_read_all(c, fh, got, FILE_BYTES) == FILE_BYTES,
		 "READ %s whole", name);
	if (got)
		WB_EQ(wb_first_diff(got, want, FILE_BYTES), FILE_BYTES);
	free(got);
}

/* A removed export's handles answer NFS3ERR_STALE; the other's serve. */
static void test_stale(void)
{
	static uint8_t a[FILE_BYTES], b[FILE_BYTES], buf[4096];
	struct wb_conn c;
	struct wb_fh root2, fh1, fh2, again;
	char name[128];
	fattr3 attr;
	uint32_t count;
	bool eof;

	second_path(name, sizeof(name), "s.bin");
	disk_file(name, 21, a);
	disk_file("first.bin", 11, b);
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(0, "connect to the proxy");
		return;
	}
	WB_EQ(mnt(&c, "/second", &root2), 0);
	read_matches(&c, &root2, "s.bin", a, &fh2);
	read_matches(&c, &c.root, "first.bin", b, &fh1);

	remove_second();
	WB_STAT(wb_getattr(&c, &fh2, &attr), NFS3ERR_STALE);
	WB_STAT(wb_read(&c, &fh2, 0, sizeof(buf), buf, &count, &eof),
		NFS3ERR_STALE);
	WB_STAT(wb_getattr(&c, &root2, &attr), NFS3ERR_STALE);
	WB_STAT(wb_lookup(&c, &root2, "s.bin", &again, &attr), NFS3ERR_STALE);
	WB_CHECK(mnt(&c, "/second", &again) > 0, "MNT /second is refused");
	/* The other export, on the same connection, with its old handles. */
	WB_STAT(wb_getattr(&c, &fh1, &attr), NFS3_OK);
	WB_EQ(attr.size, FILE_BYTES);
	read_matches(&c, &c.root, "first.bin", b, &fh1);
	wb_close(&c);
}

/* UNSTABLE WRITE, no COMMIT, through "/second"; checks it stayed dirty. */
static void write_dirty(struct wb_conn *c, const struct wb_fh *root2,
			const char *disk_name, const uint8_t *data)
{
	struct wb_fh fh;
	struct wb_wres r;
	uint8_t on_disk[64];
	fattr3 a;

	WB_STAT(wb_create(c, root2, "d.bin", UNCHECKED, 0644, -1, &fh, &a),
		NFS3_OK);
	for (uint32_t off = 0, len; off < FILE_BYTES; off += len) {
		len = FILE_BYTES - off < 64 * WB_KIB ? FILE_BYTES - off
						      : 64 * WB_KIB;
		WB_STAT(wb_write(c, &fh, off, data + off, len, UNSTABLE, &r),
			NFS3_OK);
		WB_EQ(r.committed, UNSTABLE);
	}
	/* The proxy keeps it (writeback_delay = 600): Ganesha has none of it. */
	WB_EQ(wb_disk_read(disk_name, 0, on_disk, sizeof(on_disk)), 0);
	WB_EQ(wb_metric(WB_M_UP_WRITE), 0);
}

/* Dirty data of a removed export reaches its upstream before it closes,
 * and the other export serves while it waits. */
static void test_dirty(void)
{
	static uint8_t data[FILE_BYTES], other[FILE_BYTES], got[FILE_BYTES];
	struct wb_conn c;
	struct wb_fh root2, fh1;
	char name[128], other_name[128];
	fattr3 attr;
	long retired;

	second_path(name, sizeof(name), "d.bin");
	wb_unique_name(other_name, sizeof(other_name), "other");
	wb_pattern(data, FILE_BYTES, 0, 31);
	if (wb_open(&c, "proxy", 0, 0) != 0) {
		WB_CHECK(0, "connect to the proxy");
		return;
	}
	WB_EQ(mnt(&c, "/second", &root2), 0);
	write_dirty(&c, &root2, name, data);

	relay_signal(SIGSTOP);
	retired = log_count(LINE_RETIRED);
	remove_second();
	WB_EQ(wb_metric(M_RETIRING), 1);
	/* While it waits, "/export" serves, even what it has not cached. */
	disk_file(other_name, 41, other);
	read_matches(&c, &c.root, other_name, other, &fh1);
	WB_STAT(wb_getattr(&c, &fh1, &attr), NFS3_OK);
	WB_EQ(wb_metric(M_RETIRING), 1);
	WB_EQ(wb_disk_read(name, 0, got, 64), 0);

	relay_signal(SIGCONT);
	WB_CHECK(log_wait(LINE_RETIRED, retired, RETIRE_WAIT_MS),
		 "the log says \"%s\" within %d ms", LINE_RETIRED,
		 RETIRE_WAIT_MS);
	WB_EQ(wb_metric(M_RETIRING), 0);
	WB_EQ(wb_disk_read(name, 0, got, FILE_BYTES), FILE_BYTES);
	WB_EQ(wb_first_diff(got, data, FILE_BYTES), FILE_BYTES);
	wb_close(&c);
}

int test_register(void)
{
	CU_pSuite s;

	s = CU_add_suite("stale", NULL, NULL);
	if (!s || !CU_add_test(s, "removed_handles_stale", test_stale))
		return -1;
	s = CU_add_suite("dirty", NULL, NULL);
	if (!s || !CU_add_test(s, "written_back_before_close", test_dirty))
		return -1;
	return 0;
}
