/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for conf/: configuration files read back exactly, every kind
 * of bad input refused with its exact "FILE:LINE: reason", upstream URLs,
 * client networks, the quick-start flags, conf_dump round trips, and the
 * example file and docs kept in step with the directive table.
 *
 * Each test writes its config text to a file in a private temporary
 * directory and loads it with conf_load_file.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "cunit_main.h"

#ifndef EXAMPLE_CONF
#error "EXAMPLE_CONF must name systemd/nfscached.conf.example"
#endif
#ifndef DOCS_CONF
#error "DOCS_CONF must name docs/configuration.md"
#endif

static char tmpdir[64];
static char conf_path[128];

/* Create the temporary directory the tests write configs into. */
static int suite_init(void)
{
	strcpy(tmpdir, "/tmp/test_conf.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/t.conf", tmpdir);
	return 0;
}

/* Remove the temporary directory. */
static int suite_clean(void)
{
	char dump[160];

	snprintf(dump, sizeof(dump), "%s/dump.conf", tmpdir);
	unlink(conf_path);
	unlink(dump);
	return rmdir(tmpdir);
}

/* Write text to path. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* Read a whole file into a malloc'd string. */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Load config text through a file; returns conf_load_file's result. */
static int load(const char *text, struct conf **c, char *err, size_t len)
{
	write_file(conf_path, text);
	err[0] = '\0';
	return conf_load_file(conf_path, c, err, len);
}

/* Load text and return the configuration, failing the test if refused. */
static struct conf *load_ok(const char *text)
{
	struct conf *c = NULL;
	char err[512];

	if (load(text, &c, err, sizeof(err)) != 0)
		fprintf(stderr, "\nunexpected error: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(c);
	return c;
}

/* True if the '\n'-separated lines of err include want whole. */
static bool has_line(const char *err, const char *want)
{
	size_t n = strlen(want);

	for (const char *p = err; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, want, n) == 0 && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/* Assert text is refused with the line "FILE:LINE: reason" ("FILE:
 * reason" when line is 0) among its errors (every error of a file is
 * reported, one a line: snippets without an export also get "no export")
 * and *out is left alone. */
static void expect_error(const char *text, int line, const char *reason)
{
	struct conf *sentinel = (struct conf *)&sentinel;
	struct conf *c = sentinel;
	char err[4096], want[1024];

	CU_ASSERT_EQUAL(load(text, &c, err, sizeof(err)), -1);
	CU_ASSERT_PTR_EQUAL(c, sentinel);
	if (line)
		snprintf(want, sizeof(want), "%s:%d: %s", conf_path, line,
			 reason);
	else
		snprintf(want, sizeof(want), "%s: %s", conf_path, reason);
	if (!has_line(err, want))
		fprintf(stderr, "\n  want: %s\n  got:  %s\n", want, err);
	CU_ASSERT_TRUE(has_line(err, want));
}

/* Assert text is refused with exactly these errors: lines[] are
 * "LINE: reason" (or ": reason"), each to be prefixed with the file. */
static void expect_errors(const char *text, const char *const *lines,
			  size_t n)
{
	struct conf *c = NULL;
	char err[CONF_ERR_MAX], want[CONF_ERR_MAX];
	size_t used = 0;

	CU_ASSERT_EQUAL(load(text, &c, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NULL(c);
	want[0] = '\0';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(want + used, sizeof(want) - used,
					 "%s%s%s%s", i ? "\n" : "", conf_path,
					 lines[i][0] == ':' ? "" : ":",
					 lines[i]);
	if (strcmp(err, want) != 0)
		fprintf(stderr, "\n  want: %s\n  got:  %s\n", want, err);
	CU_ASSERT_STRING_EQUAL(err, want);
}

#define EXPORT_A "export \"/a\" {\n id = 1\n upstream = \"nfs://u/a\"\n}\n"

/* ---- good configurations ---- */

static void test_minimal_config_gets_every_default(void)
{
	struct conf *c = load_ok(EXPORT_A);
	const struct conf_export *e;

	if (!c)
		return;
	CU_ASSERT_STRING_EQUAL(c->source, conf_path);
	CU_ASSERT_STRING_EQUAL(c->listen, "0.0.0.0");
	CU_ASSERT_EQUAL(c->nfs_port, 2049);
	CU_ASSERT_EQUAL(c->mount_port, 20048);
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "127.0.0.1:9655");
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/var/lib/nfscached");
	CU_ASSERT_EQUAL(c->max_record_size, 1114112);
	CU_ASSERT_EQUAL(c->max_transfer, 1048576);
	CU_ASSERT_TRUE(c->register_rpcbind);
	CU_ASSERT_EQUAL(c->upstream_timeout, 30.0);
	CU_ASSERT_TRUE(c->start_without_upstream);
	CU_ASSERT_EQUAL(c->max_requests_per_conn, 64);
	CU_ASSERT_EQUAL(c->max_reply_buffer, 8388608);
	CU_ASSERT_EQUAL(c->drc_entries, 4096);
	CU_ASSERT_EQUAL(c->drc_timeout, 120.0);
	CU_ASSERT_EQUAL(c->record_timeout, 30.0);
	CU_ASSERT_EQUAL(c->idle_timeout, 600.0);
	CU_ASSERT_EQUAL(c->max_connections, 4096);
	CU_ASSERT_EQUAL(c->max_connections_per_client, 256);
	CU_ASSERT_STRING_EQUAL(c->log_level, "info");
	CU_ASSERT_EQUAL_FATAL(c->nexports, 1);
	e = &c->exports[0];
	CU_ASSERT_EQUAL(e->id, 1);
	CU_ASSERT_STRING_EQUAL(e->path, "/a");
	CU_ASSERT_STRING_EQUAL(e->upstream, "nfs://u/a");
	CU_ASSERT_STRING_EQUAL(e->url.server, "u");
	CU_ASSERT_STRING_EQUAL(e->url.path, "/a");
	CU_ASSERT_EQUAL(e->url.nfs_port, 0);
	CU_ASSERT_EQUAL(e->url.mount_port, 0);
	CU_ASSERT_EQUAL(e->nclients, 0);
	CU_ASSERT_PTR_NULL(e->clients);
	CU_ASSERT_TRUE(e->root_squash);
	CU_ASSERT_EQUAL(e->anonuid, 65534);
	CU_ASSERT_EQUAL(e->anongid, 65534);
	CU_ASSERT_FALSE(e->secure);
	conf_free(&c);
	CU_ASSERT_PTR_NULL(c);
}

static const char full_config[] =
	"listen = \"::\"\n"
	"nfs_port = 12049\n"
	"mount_port = 0\n"
	"metrics_listen = \"[::1]:19655\"\n"
	"state_dir = \"/tmp/x/state\"\n"
	"max_record_size = 65536\n"
	"max_transfer = 32768\n"
	"register_rpcbind = false\n"
	"upstream_timeout = 2.5\n"
	"start_without_upstream = no\n"
	"max_requests_per_conn = 4096\n"
	"max_reply_buffer = 65536\n"
	"drc_entries = 0\n"
	"drc_timeout = 1.5\n"
	"record_timeout = 0.25\n"
	"idle_timeout = 7.5\n"
	"max_connections = 50\n"
	"max_connections_per_client = 1048576\n"
	"log_level = \"debug\"\n"
	"export \"/srv/one\" {\n"
	"  id = 63\n"
	"  upstream = \"nfs://[::1]/exp/one?version=3&nfsport=2049&mountport=20048\"\n"
	"  clients = {\"10.0.0.0/8\", \"192.168.1.7\",\n"
	"             \"2001:db8::/32\"}\n"
	"  root_squash = false\n"
	"  anonuid = 0\n"
	"  anongid = 4294967295\n"
	"  secure = true\n"
	"}\n"
	"export \"/two\" {\n"
	"  upstream = \"nfs://server.example/two?nfsport=1\"\n"
	"  id = 2\n"
	"}\n";

static void test_every_directive_reads_back_exactly(void)
{
	struct conf *c = load_ok(full_config);
	const struct conf_export *e;
	struct in_addr a4;
	struct in6_addr a6;

	if (!c)
		return;
	CU_ASSERT_STRING_EQUAL(c->listen, "::");
	CU_ASSERT_EQUAL(c->nfs_port, 12049);
	CU_ASSERT_EQUAL(c->mount_port, 0);
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "[::1]:19655");
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/tmp/x/state");
	CU_ASSERT_EQUAL(c->max_record_size, 65536);
	CU_ASSERT_EQUAL(c->max_transfer, 32768);
	CU_ASSERT_FALSE(c->register_rpcbind);
	CU_ASSERT_EQUAL(c->upstream_timeout, 2.5);
	CU_ASSERT_FALSE(c->start_without_upstream);
	CU_ASSERT_EQUAL(c->max_requests_per_conn, 4096);
	CU_ASSERT_EQUAL(c->max_reply_buffer, 65536);
	CU_ASSERT_EQUAL(c->drc_entries, 0);
	CU_ASSERT_EQUAL(c->drc_timeout, 1.5);
	CU_ASSERT_EQUAL(c->record_timeout, 0.25);
	CU_ASSERT_EQUAL(c->idle_timeout, 7.5);
	CU_ASSERT_EQUAL(c->max_connections, 50);
	CU_ASSERT_EQUAL(c->max_connections_per_client, 1048576);
	CU_ASSERT_STRING_EQUAL(c->log_level, "debug");
	CU_ASSERT_EQUAL_FATAL(c->nexports, 2);

	e = &c->exports[0];
	CU_ASSERT_EQUAL(e->id, 63);
	CU_ASSERT_STRING_EQUAL(e->path, "/srv/one");
	CU_ASSERT_STRING_EQUAL(e->url.server, "::1");
	CU_ASSERT_STRING_EQUAL(e->url.path, "/exp/one");
	CU_ASSERT_EQUAL(e->url.nfs_port, 2049);
	CU_ASSERT_EQUAL(e->url.mount_port, 20048);
	CU_ASSERT_EQUAL_FATAL(e->nclients, 3);
	inet_pton(AF_INET, "10.0.0.0", &a4);
	CU_ASSERT_EQUAL(e->clients[0].family, AF_INET);
	CU_ASSERT_EQUAL(e->clients[0].prefix, 8);
	CU_ASSERT_EQUAL(memcmp(e->clients[0].addr, &a4, 4), 0);
	inet_pton(AF_INET, "192.168.1.7", &a4);
	CU_ASSERT_EQUAL(e->clients[1].family, AF_INET);
	CU_ASSERT_EQUAL(e->clients[1].prefix, 32);
	CU_ASSERT_EQUAL(memcmp(e->clients[1].addr, &a4, 4), 0);
	inet_pton(AF_INET6, "2001:db8::", &a6);
	CU_ASSERT_EQUAL(e->clients[2].family, AF_INET6);
	CU_ASSERT_EQUAL(e->clients[2].prefix, 32);
	CU_ASSERT_EQUAL(memcmp(e->clients[2].addr, &a6, 16), 0);
	CU_ASSERT_FALSE(e->root_squash);
	CU_ASSERT_EQUAL(e->anonuid, 0);
	CU_ASSERT_EQUAL(e->anongid, 4294967295u);
	CU_ASSERT_TRUE(e->secure);

	e = &c->exports[1];
	CU_ASSERT_EQUAL(e->id, 2);
	CU_ASSERT_STRING_EQUAL(e->path, "/two");
	CU_ASSERT_STRING_EQUAL(e->url.server, "server.example");
	CU_ASSERT_EQUAL(e->url.nfs_port, 1);
	CU_ASSERT_EQUAL(e->url.mount_port, 0);
	CU_ASSERT_TRUE(e->root_squash);
	conf_free(&c);
}

static void test_harness_style_config_loads(void)
{
	struct conf *c = load_ok(
		"listen = \"127.0.0.1\"\n"
		"nfs_port = 12049\n"
		"mount_port = 12048          # MOUNT v3 is also served on nfs_port\n"
		"metrics_listen = \"127.0.0.1:19655\"\n"
		"state_dir = \"/tmp/x/state\"\n"
		"register_rpcbind = false\n"
		"export \"/export\" {\n"
		"  id = 1\n"
		"  upstream = \"nfs://127.0.0.1/export?nfsport=2049&mountport=20048\"\n"
		"  clients = {\"127.0.0.1/32\"}\n"
		"  root_squash = false\n"
		"  secure = false\n"
		"}\n");

	if (!c)
		return;
	CU_ASSERT_EQUAL(c->mount_port, 12048);
	CU_ASSERT_PTR_NOT_NULL(conf_export_by_path(c, "/export"));
	CU_ASSERT_EQUAL(c->exports[0].clients[0].prefix, 32);
	CU_ASSERT_FALSE(c->exports[0].root_squash);
	conf_free(&c);
}

static void test_comments_keep_line_numbers(void)
{
	/* libconfuse 3.3 alone counts each comment line as three lines. */
	expect_error("# one\n"
		     "// two\n"
		     "/* three\n"
		     "   four */ nfs_port = 1 # five\n"
		     "## six\n"
		     "state_dir = \"/a#b//c\" // seven\n"
		     "listen = \"x\"\n", 7,
		     "listen: \"x\" is not an IPv4 or IPv6 address");
	expect_error("state_dir = \"multi\n"
		     "line\"\n"
		     "nfs_port = 0\n", 3, "nfs_port 0 out of range 1..65535");
}

static void test_comment_markers_inside_strings_are_kept(void)
{
	struct conf *c = load_ok("state_dir = \"/s#1//2/*3*/\"\n" EXPORT_A);

	if (!c)
		return;
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/s#1//2/*3*/");
	conf_free(&c);
}

static void test_suffixes_scale_sizes_and_durations(void)
{
	struct conf *c;

	c = load_ok("cache_size = 4G\nmax_record_size = 1M\n"
		    "readahead_max = 8MiB\nmeta_cache_size = 1.5G\n"
		    "max_reply_buffer = 2M\n"
		    "writeback_delay = 5m\nidle_timeout = 250ms\n"
		    "upstream_timeout = 2s\ndrc_timeout = 1h\n"
		    "stale_on_error = 1d\nrecord_timeout = 1.5\n"
		    "export \"/a\" {\n id = 1\n upstream = \"nfs://u/a\"\n"
		    " acregmax = 2m\n acdirmin = 0.5s\n acdirmax = 30\n}\n");
	if (!c)
		return;
	CU_ASSERT_EQUAL(c->cache_size, 4096);		/* MiB */
	CU_ASSERT_EQUAL(c->max_record_size, 1048576);	/* bytes */
	CU_ASSERT_EQUAL(c->readahead_max, 8388608);
	CU_ASSERT_EQUAL(c->meta_cache_size, 1536);
	CU_ASSERT_EQUAL(c->max_reply_buffer, 2097152);
	CU_ASSERT_EQUAL(c->writeback_delay, 300);
	CU_ASSERT_EQUAL(c->idle_timeout, 0.25);
	CU_ASSERT_EQUAL(c->upstream_timeout, 2);
	CU_ASSERT_EQUAL(c->drc_timeout, 3600);
	CU_ASSERT_EQUAL(c->stale_on_error, 86400);
	CU_ASSERT_EQUAL(c->record_timeout, 1.5);
	CU_ASSERT_EQUAL(c->exports[0].acregmax, 120);
	CU_ASSERT_EQUAL(c->exports[0].acdirmin, 0.5);
	conf_free(&c);
	/* Bare numbers keep each directive's unit; a suffix must make a
	 * whole unit and be one of the documented set. */
	expect_error("cache_size = 512K\n", 1, "cache_size: \"512K\" is not a "
		     "size: a whole number of MiB, or a number with K, M, G or "
		     "T (powers of 1024) making whole MiB");
	expect_error("page_size = 4k\n", 1, "page_size: \"4k\" is not a size: "
		     "a whole number of bytes, or a number with K, M, G or T "
		     "(powers of 1024)");
	expect_error("writeback_delay = 5min\n", 1, "writeback_delay: \"5min\" "
		     "is not a duration: seconds, or a number with ms, s, m, h "
		     "or d");
	expect_error("max_transfer = 2M\n", 1,
		     "max_transfer 2097152 out of range 4096..1048576");
	expect_error("nfs_port = 2K\n", 1, "nfs_port: \"2K\" is not a whole "
		     "number");
}

/* The kinds of errors one file can hold, each reported at its line, in
 * line order; libconfuse reads on past each. */
static void test_every_error_of_a_file_is_reported(void)
{
	static const char *const want[] = {
		"2: cache_size: \"4X\" is not a size: a whole number of MiB, "
		"or a number with K, M, G or T (powers of 1024) making whole "
		"MiB",
		"3: nfs_port given twice: lines 1 and 3 (keep one)",
		"3: nfs_port 70000 out of range 1..65535",
		"4: unknown directive 'fast_mode'",
		"5: max_record_size 16777216 is larger than max_reply_buffer "
		"8388608 (its default)",
		"8: export \"/a\": unknown directive 'rw'",
		"9: export \"/a\": id given twice: lines 7 and 9 (keep one)",
		"12: export \"/b\": missing required directive 'upstream'",
		"13: export \"/b\": id 2 already used by export \"/a\" "
		"(line 9)",
		"14: export \"/b\": acdirmax 1 is below acdirmin 30 (its "
		"default)",
	};

	expect_errors("nfs_port = 2049\n"		/* 1 */
		      "cache_size = 4X\n"		/* 2 */
		      "nfs_port = 70000\n"		/* 3 */
		      "fast_mode = true\n"		/* 4 */
		      "max_record_size = 16777216\n"	/* 5 */
		      "export \"/a\" {\n"		/* 6 */
		      " id = 1\n"			/* 7 */
		      " rw = true\n"			/* 8 */
		      " id = 2\n"			/* 9 */
		      " upstream = \"nfs://u/a\"\n"	/* 10 */
		      "}\n"				/* 11 */
		      "export \"/b\" {\n"		/* 12 */
		      " id = 2\n"			/* 13 */
		      " acdirmax = 1\n"		/* 14 */
		      "}\n", want, sizeof(want) / sizeof(want[0]));
	/* No line: after the others. */
	expect_errors("nfs_port = 0\n", (const char *const[]){
		"1: nfs_port 0 out of range 1..65535",
		": no export: at least one export \"/PATH\" { ... } section is "
		"required" }, 2);
}

/* Habits from ganesha.conf and exports(5) get the nfscached form, and
 * the rest of the file is still read. */
static void test_other_servers_habits_get_a_hint(void)
{
	static const char *const want[] = {
		"1: ';' after a value is ganesha.conf syntax; nfscached ends a "
		"directive at its value: remove the ';'",
		"2: \"EXPORT {\" is ganesha.conf syntax; nfscached's export is "
		"export \"/PATH\" { id = N  upstream = \"nfs://HOST/PATH\" }",
		"6: \"/srv/data 10.0.0.0/8(rw,sync,no_subtree_check)\" looks "
		"like an exports(5) line; nfscached's form is export \"/PATH\" "
		"{ id = N  upstream = \"nfs://HOST/PATH\"  clients = "
		"{\"ADDR/PREFIX\"} }",
		"9: ';' after a value is ganesha.conf syntax; "
		"nfscached ends a directive at its value: remove the ';'",
		"11: mount_port 70000 out of range 0..65535",
	};

	expect_errors("nfs_port = 2049;\n"
		      "EXPORT {\n Export_Id = 1;\n Path = /srv;\n}\n"
		      "/srv/data 10.0.0.0/8(rw,sync,no_subtree_check)\n"
		      "export \"/a\" {\n id = 1\n"
		      " upstream = \"nfs://u/a\" ;\n}\n"
		      "mount_port = 70000\n", want,
		      sizeof(want) / sizeof(want[0]));
}

static void test_suffixed_values_dump_and_load_back_equal(void)
{
	struct conf *c = load_ok("writeback_commit_delay = 1ms\ncache_size = 1T\n"
				 "writeback_delay = 0.1s\n" EXPORT_A);
	struct conf *back = NULL;
	char err[CONF_ERR_MAX];
	FILE *f;

	if (!c)
		return;
	f = fopen(conf_path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	conf_dump(c, f);
	fclose(f);
	CU_ASSERT_EQUAL(conf_load_file(conf_path, &back, err, sizeof(err)), 0);
	if (back)
		CU_ASSERT_TRUE(conf_equal(c, back));
	conf_free(&back);
	conf_free(&c);
}

static void test_lookups_by_id_and_path(void)
{
	struct conf *c = load_ok(full_config);

	if (!c)
		return;
	CU_ASSERT_PTR_EQUAL(conf_export_by_id(c, 63), &c->exports[0]);
	CU_ASSERT_PTR_EQUAL(conf_export_by_id(c, 2), &c->exports[1]);
	CU_ASSERT_PTR_NULL(conf_export_by_id(c, 1));
	CU_ASSERT_PTR_EQUAL(conf_export_by_path(c, "/two"), &c->exports[1]);
	CU_ASSERT_PTR_NULL(conf_export_by_path(c, "/tw"));
	CU_ASSERT_PTR_NULL(conf_export_by_path(c, "/two/"));
	conf_free(&c);
	conf_free(&c);	/* NULL is ignored */
	conf_free(NULL);
}

/* ---- refused configurations, with their lines ---- */

static void test_unknown_directive_is_refused_at_its_line(void)
{
	expect_error("nfs_port = 1\n\nbogus = 3\n" EXPORT_A, 3,
		     "unknown directive 'bogus'");
	expect_error("export \"/a\" {\n id = 1\n\n foo = 1\n}\n", 4,
		     "export \"/a\": unknown directive 'foo'");
}

static void test_wrong_type_is_refused_at_its_line(void)
{
	expect_error("\nnfs_port = \"abc\"\n", 2,
		     "nfs_port: \"abc\" is not a whole number");
	expect_error("nfs_port = 12.5\n", 1,
		     "nfs_port: \"12.5\" is not a whole number");
	expect_error("upstream_timeout = fast\n", 1,
		     "upstream_timeout: \"fast\" is not a duration: seconds, "
		     "or a number with ms, s, m, h or d");
	expect_error("upstream_timeout = nan\n", 1,
		     "upstream_timeout: \"nan\" is not a duration: seconds, "
		     "or a number with ms, s, m, h or d");
	expect_error("export \"/a\" {\n root_squash = maybe\n}\n", 2,
		     "export \"/a\": root_squash: \"maybe\" is not true or false");
	expect_error("listen = {\"0.0.0.0\"}\n", 1, "unexpected token '{'");
}

static void test_out_of_range_is_refused_at_its_line(void)
{
	expect_error("export \"/a\" {\n  upstream = \"nfs://u/a\"\n  id = 70\n}\n",
		     3, "export \"/a\": id 70 out of range 1..63");
	expect_error("export \"/a\" {\n  id = 0\n}\n", 2,
		     "export \"/a\": id 0 out of range 1..63");
	expect_error("nfs_port = 70000\n", 1,
		     "nfs_port 70000 out of range 1..65535");
	expect_error("\n\nmount_port = -1\n", 3,
		     "mount_port -1 out of range 0..65535");
	expect_error("max_record_size = 4095\n", 1,
		     "max_record_size 4095 out of range 4096..16777216");
	expect_error("max_transfer = 2097152\n", 1,
		     "max_transfer 2097152 out of range 4096..1048576");
	expect_error("upstream_timeout = 0.05\n", 1,
		     "upstream_timeout 0.05 out of range 0.1..3600");
	expect_error("max_requests_per_conn = 0\n", 1,
		     "max_requests_per_conn 0 out of range 1..4096");
	expect_error("max_reply_buffer = 1073741825\n", 1,
		     "max_reply_buffer 1073741825 out of range "
		     "65536..1073741824");
	expect_error("drc_entries = 1048577\n", 1,
		     "drc_entries 1048577 out of range 0..1048576");
	expect_error("drc_timeout = 0\n", 1,
		     "drc_timeout 0 out of range 1..86400");
	expect_error("record_timeout = 0.05\n", 1,
		     "record_timeout 0.05 out of range 0.1..3600");
	expect_error("\nrecord_timeout = 3601\n", 2,
		     "record_timeout 3601 out of range 0.1..3600");
	expect_error("idle_timeout = 0\n", 1,
		     "idle_timeout 0 out of range 0.1..86400");
	expect_error("idle_timeout = 86400.5\n", 1,
		     "idle_timeout 86400.5 out of range 0.1..86400");
	expect_error("max_connections = 0\n", 1,
		     "max_connections 0 out of range 1..1048576");
	expect_error("max_connections = 1048577\n", 1,
		     "max_connections 1048577 out of range 1..1048576");
	expect_error("max_connections_per_client = 0\n", 1,
		     "max_connections_per_client 0 out of range 1..1048576");
	expect_error("max_connections_per_client = -3\n", 1,
		     "max_connections_per_client -3 out of range 1..1048576");
	expect_error("export \"/a\" {\n anonuid = 4294967296\n}\n", 2,
		     "export \"/a\": anonuid 4294967296 out of range "
		     "0..4294967295");
}

static void test_bad_strings_are_refused_at_their_line(void)
{
	expect_error("log_level = \"verbose\"\n", 1,
		     "log_level: \"verbose\" is not one of error, warn, info, "
		     "debug");
	expect_error("listen = \"localhost\"\n", 1,
		     "listen: \"localhost\" is not an IPv4 or IPv6 address");
	expect_error("metrics_listen = \"127.0.0.1\"\n", 1,
		     "metrics_listen: \"127.0.0.1\": expected ADDR:PORT or "
		     "[IPV6]:PORT");
	expect_error("metrics_listen = \"::1:9655\"\n", 1,
		     "metrics_listen: \"::1:9655\": write an IPv6 address in "
		     "brackets, [ADDR]:PORT");
	expect_error("metrics_listen = \"127.0.0.1:0\"\n", 1,
		     "metrics_listen: \"127.0.0.1:0\": port must be 1..65535");
	expect_error("state_dir = \"\"\n", 1, "state_dir: must not be empty");
}

static void test_empty_metrics_listen_disables(void)
{
	struct conf *c = load_ok("metrics_listen = \"\"\n" EXPORT_A);

	if (!c)
		return;
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "");
	conf_free(&c);
}

static void test_bad_url_is_refused_at_its_line(void)
{
	expect_error("export \"/a\" {\n id = 1\n upstream = \"nfs://host\"\n}\n",
		     3, "export \"/a\": upstream: \"nfs://host\": missing "
		     "export path (nfs://HOST/PATH)");
	expect_error("export \"/a\" {\n upstream = "
		     "\"nfs://h/p?nfsport=70000\"\n}\n", 2,
		     "export \"/a\": upstream: \"nfs://h/p?nfsport=70000\": "
		     "nfsport must be a port number 0..65535");
}

static void test_bad_network_is_refused_at_its_line(void)
{
	expect_error("export \"/a\" {\n"
		     " clients = {\"10.0.0.0/8\",\n"
		     "            \"10.0.0.0/33\"}\n"
		     "}\n", 3,
		     "export \"/a\": clients: \"10.0.0.0/33\": prefix length "
		     "must be 0..32");
	expect_error("export \"/a\" {\n clients = {\"example.com(rx)\"}\n}\n",
		     2, "export \"/a\": clients: \"example.com(rx)\": unknown "
		     "option \"rx\" (options: rw, ro, root_squash, "
		     "no_root_squash, all_squash, no_all_squash, secure, "
		     "insecure, anonuid=N, anongid=N; accepted and ignored: "
		     "sync, async, subtree_check, no_subtree_check, wdelay, "
		     "no_wdelay, hide, nohide, crossmnt, fsid=ID)");
	expect_error("export \"/a\" {\n clients = {\"a.lab\",\n"
		     " \"10.0.0.0/8(ro;rw)\"}\n}\n", 3,
		     "export \"/a\": clients: \"10.0.0.0/8(ro;rw)\": unknown "
		     "option \"ro;rw\" (options: rw, ro, root_squash, "
		     "no_root_squash, all_squash, no_all_squash, secure, "
		     "insecure, anonuid=N, anongid=N; accepted and ignored: "
		     "sync, async, subtree_check, no_subtree_check, wdelay, "
		     "no_wdelay, hide, nohide, crossmnt, fsid=ID)");
}

static void test_duplicate_id_is_refused_at_the_second_id(void)
{
	expect_error(EXPORT_A
		     "export \"/b\" {\n"
		     " upstream = \"nfs://u/b\"\n"
		     " id = 1\n"
		     "}\n", 7,
		     "export \"/b\": id 1 already used by export \"/a\" "
		     "(line 2)");
}

static void test_duplicate_path_is_refused_at_the_second_export(void)
{
	expect_error(EXPORT_A
		     "\n"
		     "export \"/a\" {\n"
		     " id = 2\n"
		     " upstream = \"nfs://u/b\"\n"
		     "}\n", 6,
		     "export \"/a\": path already used by the export at line 1");
}

static void test_missing_required_is_refused_at_the_export(void)
{
	expect_error("nfs_port = 2049\n"
		     "export \"/a\" {\n"
		     "  upstream = \"nfs://u/a\"\n"
		     "}\n", 2, "export \"/a\": missing required directive 'id'");
	expect_error("\n"
		     "export \"/a\" {\n"
		     "  id = 4\n"
		     "\n"
		     "}\n", 2,
		     "export \"/a\": missing required directive 'upstream'");
	expect_error(EXPORT_A "export \"/b\" {}\n", 5,
		     "export \"/b\": missing required directive 'id'");
}

static void test_bad_export_path_is_refused_at_the_export(void)
{
	expect_error("\nexport \"data\" {\n id = 1\n upstream = \"nfs://u/a\"\n}\n",
		     2, "export \"data\": path must start with '/'");
	expect_error("export \"/a/\" {\n id = 1\n upstream = \"nfs://u/a\"\n}\n",
		     1, "export \"/a/\": path must not end with '/'");
	expect_error("export \"/a//b\" {\n id = 1\n upstream = \"nfs://u/a\"\n}\n",
		     1, "export \"/a//b\": path must not contain '//'");
	expect_error("export \"/a/../b\" {\n id = 1\n upstream = \"nfs://u/a\"\n}\n",
		     1, "export \"/a/../b\": path must not contain '.' or '..'");
}

static void test_no_export_is_refused(void)
{
	expect_error("nfs_port = 2049\n", 0,
		     "no export: at least one export \"/PATH\" { ... } section "
		     "is required");
	expect_error("", 0,
		     "no export: at least one export \"/PATH\" { ... } section "
		     "is required");
}

static void test_reply_buffer_below_record_size_is_refused(void)
{
	expect_error("max_record_size = 131072\n"
		     "max_reply_buffer = 65536\n" EXPORT_A, 2,
		     "max_reply_buffer 65536 is smaller than max_record_size "
		     "131072");
	/* max_reply_buffer kept its default: max_record_size is to blame. */
	expect_error("\nmax_record_size = 16777216\n" EXPORT_A, 2,
		     "max_record_size 16777216 is larger than max_reply_buffer "
		     "8388608 (its default)");
	/* Both set: the later one is to blame. */
	expect_error("max_reply_buffer = 65536\nmax_record_size = 131072\n"
		     EXPORT_A, 2, "max_record_size 131072 is larger than "
		     "max_reply_buffer 65536");
}

static void test_mount_port_equal_to_nfs_port_is_refused(void)
{
	expect_error("nfs_port = 2000\nmount_port = 2000\n" EXPORT_A, 2,
		     "mount_port equals nfs_port 2000; set mount_port = 0 to "
		     "serve MOUNT on nfs_port only");
}

static void test_unusable_cache_dir_is_refused(void)
{
	char conf[512], want[512];

	expect_error("nfs_port = 2049\ncache_dir = \"rel/dir\"\n" EXPORT_A, 2,
		     "cache_dir: \"rel/dir\" is not an absolute path");
	/* disk_dir_check's reasons, at the cache_dir line: a regular file
	 * (the configuration file itself), a path under a regular file (so
	 * refused even as root, who passes every access check) and a
	 * directory that cannot be created. */
	snprintf(conf, sizeof(conf), "\ncache_dir = \"%s\"\n" EXPORT_A,
		 conf_path);
	snprintf(want, sizeof(want), "cache_dir %s: Not a directory", conf_path);
	expect_error(conf, 2, want);
	snprintf(conf, sizeof(conf), "nfs_port = 2049\n\ncache_dir = \"%s/sub\"\n"
		 EXPORT_A, conf_path);
	snprintf(want, sizeof(want), "cache_dir %s/sub: Not a directory",
		 conf_path);
	expect_error(conf, 3, want);
	expect_error("cache_dir = \"/nonexistent-nfscached/a/b\"\n" EXPORT_A, 1,
		     "cache_dir /nonexistent-nfscached/a/b: no writable parent "
		     "directory to create it in (No such file or directory)");
	/* A trailing slash names the same directory: its parent is conf's
	 * directory's parent, writable here, so a missing one passes. */
	{
		char text[512], *slash;
		struct conf *c;

		snprintf(text, sizeof(text), "cache_dir = \"%s", conf_path);
		slash = strrchr(text, '/');
		CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
		snprintf(slash, sizeof(text) - (size_t)(slash - text),
			 "/no-such-dir-yet/\"\n" EXPORT_A);
		c = load_ok(text);
		conf_free(&c);
	}
}

/* commit takes "upstream" or "local"; "local" needs cache_dir, and the
 * error points at the commit line, the directive that is wrong. */
static void test_commit_mode_is_checked(void)
{
	struct conf *c;
	char text[512], *slash;

	expect_error("export \"/a\" {\n id = 1\n upstream = \"nfs://u/a\"\n"
		     " commit = \"lazy\"\n}\n", 4,
		     "export \"/a\": commit: \"lazy\" is not one of upstream, "
		     "local");
	expect_error("export \"/a\" {\n id = 1\n upstream = \"nfs://u/a\"\n"
		     "\n commit = \"local\"\n}\n", 5,
		     "export \"/a\": commit \"local\" needs cache_dir (the data "
		     "is made durable there)");
	c = load_ok(EXPORT_A);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FALSE(conf_commit_local(&c->exports[0]));
	CU_ASSERT_EQUAL(c->disk_dirty_limit, 1024);
	conf_free(&c);
	snprintf(text, sizeof(text), "disk_dirty_limit = 2G\ncache_dir = \"%s",
		 conf_path);
	slash = strrchr(text, '/');
	CU_ASSERT_PTR_NOT_NULL_FATAL(slash);
	snprintf(slash, sizeof(text) - (size_t)(slash - text),
		 "/lc-dir\"\nexport \"/a\" {\n id = 1\n upstream = "
		 "\"nfs://u/a\"\n commit = \"local\"\n}\n");
	c = load_ok(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE(conf_commit_local(&c->exports[0]));
	CU_ASSERT_EQUAL(c->disk_dirty_limit, 2048);
	conf_free(&c);
}

/* The cache_dir line is kept for the disk tier's errors at start; 0 when
 * the file does not set it. A missing directory whose parent is writable
 * passes: the daemon creates it. */
static void test_cache_dir_line_is_kept(void)
{
	char conf[512];
	struct conf *c;

	snprintf(conf, sizeof(conf), "nfs_port = 2049\n# the disk tier\n"
		 "cache_dir = \"%s/not-yet\"\n" EXPORT_A, tmpdir);
	c = load_ok(conf);
	if (c) {
		CU_ASSERT_EQUAL(c->cache_dir_line, 3);
		conf_free(&c);
	}
	c = load_ok(EXPORT_A);
	if (c) {
		CU_ASSERT_EQUAL(c->cache_dir_line, 0);
		conf_free(&c);
	}
}

static void test_attribute_timeouts_in_order(void)
{
	/* Reported at the directive to blame: the later of the two when
	 * both are set, else the one set. */
	expect_error("nfs_port = 1\nexport \"/a\" {\n id = 1\n"
		     " upstream = \"nfs://u/a\"\n acregmin = 100\n"
		     " acregmax = 10\n}\n", 6,
		     "export \"/a\": acregmax 10 is below acregmin 100");
	expect_error(EXPORT_A "export \"/b\" {\n id = 2\n"
		     " upstream = \"nfs://u/b\"\n acdirmin = 61\n}\n", 8,
		     "export \"/b\": acdirmin 61 exceeds acdirmax 60 (its "
		     "default)");
	expect_error(EXPORT_A "export \"/b\" {\n id = 2\n"
		     " upstream = \"nfs://u/b\"\n acregmax = 1\n}\n", 8,
		     "export \"/b\": acregmax 1 is below acregmin 3 (its "
		     "default)");
}

static void test_syntax_errors_carry_a_line(void)
{
	expect_error("nfs_port = 1\nexport \"/a\" {\n id = 1\n", 2,
		     "'{' is never closed");
	expect_error("export \"/a{\" {\n clients = {\"1.2.3.4\"\n}\n", 1,
		     "'{' is never closed");
	expect_error("nfs_port = 1\n}\n", 2, "unexpected closing brace");
	expect_error("nfs_port = 1\nstate_dir = \"/x\n\n", 2,
		     "string is never closed");
	/* An open block comment would swallow the rest: "/b" and the bad
	 * value after it must not pass unseen. */
	expect_error(EXPORT_A "# a\n/* open\nexport \"/b\" {\n id = 2\n}\n"
		     "cache_size = -5\n", 6, "'/*' is never closed");
	/* A closed one keeps the lines after it right. */
	expect_error(EXPORT_A "/* two\nlines */\ncache_size = -5\n", 7,
		     "cache_size -5 out of range 0..1048576");
	expect_error("nfs_port =\n", 2, "premature end of file");
	expect_error("export {\n}\n", 1, "\"export {\" is ganesha.conf "
		     "syntax; nfscached's export is export \"/PATH\" { id = N  "
		     "upstream = \"nfs://HOST/PATH\" }");
}

static void test_unreadable_file_is_refused(void)
{
	char err[512], want[512];
	struct conf *c = NULL;

	CU_ASSERT_EQUAL(conf_load_file("/nonexistent/x.conf", &c, err,
				       sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "/nonexistent/x.conf: cannot read: No "
			       "such file or directory");
	CU_ASSERT_EQUAL(conf_load_file(tmpdir, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory",
		 tmpdir);
	CU_ASSERT_STRING_EQUAL(err, want);
	CU_ASSERT_PTR_NULL(c);
}

/*
 * A file whose path takes most of the caller's buffer: the reason stays
 * whole and the path loses its head; a CONF_ERR_MAX buffer holds it all.
 */
static void test_long_path_keeps_the_reason(void)
{
	static const char reason[] = ":1: nfs_port 70000 out of range 1..65535";
	char dir[1024], path[1100], small[160], whole[CONF_ERR_MAX];
	char *sub[3];
	struct conf *c = NULL;
	size_t n = 0, len;

	n = (size_t)snprintf(dir, sizeof(dir), "%s", tmpdir);
	for (int i = 0; i < 3; i++) {
		dir[n++] = '/';
		memset(dir + n, 'a' + i, 200);
		n += 200;
		dir[n] = '\0';
		sub[i] = strdup(dir);
		CU_ASSERT_FATAL(mkdir(dir, 0700) == 0);
	}
	snprintf(path, sizeof(path), "%s/t.conf", dir);
	write_file(path, "nfs_port = 70000\n" EXPORT_A);

	CU_ASSERT_EQUAL(conf_load_file(path, &c, small, sizeof(small)), -1);
	len = strlen(small);
	CU_ASSERT_EQUAL(len, sizeof(small) - 1);
	CU_ASSERT_NSTRING_EQUAL(small, "...", 3);
	CU_ASSERT(len > sizeof(reason) &&
		  strcmp(small + len - (sizeof(reason) - 1), reason) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(small, "ccc/t.conf:1: "));

	CU_ASSERT_EQUAL(conf_load_file(path, &c, whole, sizeof(whole)), -1);
	CU_ASSERT_EQUAL(strncmp(whole, path, strlen(path)), 0);
	CU_ASSERT_STRING_EQUAL(whole + strlen(path), reason);
	CU_ASSERT_PTR_NULL(c);

	unlink(path);
	for (int i = 2; i >= 0; i--) {
		CU_ASSERT(rmdir(sub[i]) == 0);
		free(sub[i]);
	}
}

/* ---- upstream URLs ---- */

/* Assert url is refused with exactly reason. */
static void expect_url_error(const char *url, const char *reason)
{
	struct conf_upstream_url u;
	char err[512];

	CU_ASSERT_EQUAL(conf_parse_upstream_url(url, &u, err, sizeof(err)), -1);
	if (strcmp(err, reason) != 0)
		fprintf(stderr, "\n  want: %s\n  got:  %s\n", reason, err);
	CU_ASSERT_STRING_EQUAL(err, reason);
	CU_ASSERT_PTR_NULL(u.server);
	CU_ASSERT_PTR_NULL(u.path);
}

static void test_url_parses_server_path_and_ports(void)
{
	struct conf_upstream_url u;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(conf_parse_upstream_url(
		"nfs://127.0.0.1/export?version=3&nfsport=2049&mountport=20048",
		&u, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(u.server, "127.0.0.1");
	CU_ASSERT_STRING_EQUAL(u.path, "/export");
	CU_ASSERT_EQUAL(u.nfs_port, 2049);
	CU_ASSERT_EQUAL(u.mount_port, 20048);
	conf_upstream_url_clear(&u);
	CU_ASSERT_PTR_NULL(u.server);

	CU_ASSERT_EQUAL_FATAL(conf_parse_upstream_url("nfs://files-1.lan/",
						      &u, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(u.server, "files-1.lan");
	CU_ASSERT_STRING_EQUAL(u.path, "/");
	CU_ASSERT_EQUAL(u.nfs_port, 0);
	CU_ASSERT_EQUAL(u.mount_port, 0);
	conf_upstream_url_clear(&u);

	CU_ASSERT_EQUAL_FATAL(conf_parse_upstream_url(
		"nfs://[fe80::1]/a/b?mountport=0&nfsport=65535&x", &u, err,
		sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(u.server, "fe80::1");
	CU_ASSERT_STRING_EQUAL(u.path, "/a/b");
	CU_ASSERT_EQUAL(u.nfs_port, 65535);
	CU_ASSERT_EQUAL(u.mount_port, 0);
	conf_upstream_url_clear(&u);
}

static void test_url_errors_are_refused(void)
{
	expect_url_error("nfs://host", "\"nfs://host\": missing export path "
			 "(nfs://HOST/PATH)");
	expect_url_error("nfs://host?nfsport=1", "\"nfs://host?nfsport=1\": "
			 "missing export path (nfs://HOST/PATH)");
	expect_url_error("nfs:///p", "\"nfs:///p\": missing server name");
	expect_url_error("http://h/p", "\"http://h/p\": URL must start with "
			 "nfs://");
	expect_url_error("nfs://h:2049/p", "\"nfs://h:2049/p\": give ports in "
			 "the query (?nfsport=N&mountport=M), not after the "
			 "server");
	expect_url_error("nfs://h/p?nfsport=65536", "\"nfs://h/p?nfsport=65536\""
			 ": nfsport must be a port number 0..65535");
	expect_url_error("nfs://h/p?mountport=x1", "\"nfs://h/p?mountport=x1\": "
			 "mountport must be a port number 0..65535");
	expect_url_error("nfs://h/p?nfsport=", "\"nfs://h/p?nfsport=\": nfsport "
			 "must be a port number 0..65535");
	expect_url_error("nfs://[::1/p", "\"nfs://[::1/p\": bad IPv6 address "
			 "in brackets");
	expect_url_error("nfs://[host]/p", "\"nfs://[host]/p\": bad IPv6 "
			 "address in brackets");
	expect_url_error("nfs://[::1]", "\"nfs://[::1]\": missing export path "
			 "(nfs://HOST/PATH)");
	expect_url_error("nfs://u@h/p", "\"nfs://u@h/p\": bad server name");
	expect_url_error("nfs://h/a b", "\"nfs://h/a b\": URL contains spaces "
			 "or control characters");
	expect_url_error("nfs://h/a#x", "\"nfs://h/a#x\": '#' fragments are "
			 "not supported");
}

/* ---- client networks ---- */

/* Build an IPv4 socket address. */
static struct sockaddr_in sa4(const char *ip)
{
	struct sockaddr_in s = { .sin_family = AF_INET };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

/* Build an IPv6 socket address. */
static struct sockaddr_in6 sa6(const char *ip)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };

	inet_pton(AF_INET6, ip, &s.sin6_addr);
	return s;
}

/*
 * Match the client at ip (v4 or v6 text) with host name name (NULL: not
 * known) against an export whose clients are the entries nets[0..n) and
 * whose own defaults are def; *acc gets what it may do.
 */
static enum conf_match match_groups(const char *const *nets, size_t n,
				    const char *ip, const char *name,
				    const char *const *groups,
				    const struct conf_export *def,
				    struct conf_access *acc)
{
	struct conf_client list[8];
	struct conf_export e = *def;
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	enum conf_match m;
	char err[256];

	e.clients = list;
	e.nclients = n;
	for (size_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL_FATAL(conf_parse_client(nets[i], &list[i], err,
							sizeof(err)), 0);
	if (strchr(ip, ':')) {
		s6 = sa6(ip);
		m = conf_client_match(&e, (struct sockaddr *)&s6, name,
				      groups, acc);
	} else {
		s4 = sa4(ip);
		m = conf_client_match(&e, (struct sockaddr *)&s4, name,
				      groups, acc);
	}
	for (size_t i = 0; i < n; i++)
		conf_client_clear(&list[i]);
	return m;
}

/* match_groups for a client of no netgroup. */
static enum conf_match match_full(const char *const *nets, size_t n,
				  const char *ip, const char *name,
				  const struct conf_export *def,
				  struct conf_access *acc)
{
	return match_groups(nets, n, ip, name, NULL, def, acc);
}

/* Ask whether ip (v4 or v6 text) may use an export listing nets. */
static bool allowed(const char *const *nets, size_t n, const char *ip)
{
	struct conf_export def = { .root_squash = true };
	struct conf_access acc;

	return match_full(nets, n, ip, "", &def, &acc) == CONF_MATCH_YES;
}

static void test_network_matching(void)
{
	static const char *const ten[] = { "10.0.0.0/8" };
	static const char *const all4[] = { "0.0.0.0/0" };
	static const char *const host[] = { "192.168.1.7" };
	static const char *const v6[] = { "2001:db8::/32", "10.0.0.0/8" };
	static const char *const odd[] = { "172.16.0.0/12" };

	CU_ASSERT_TRUE(allowed(ten, 1, "10.1.2.3"));
	CU_ASSERT_TRUE(allowed(ten, 1, "10.255.255.255"));
	CU_ASSERT_FALSE(allowed(ten, 1, "11.0.0.1"));
	CU_ASSERT_FALSE(allowed(ten, 1, "9.255.255.255"));
	CU_ASSERT_TRUE(allowed(ten, 1, "::ffff:10.1.2.3"));
	CU_ASSERT_FALSE(allowed(ten, 1, "::ffff:11.0.0.1"));
	CU_ASSERT_FALSE(allowed(ten, 1, "::a01:203"));	/* not v4-mapped */
	CU_ASSERT_TRUE(allowed(all4, 1, "1.2.3.4"));
	CU_ASSERT_TRUE(allowed(all4, 1, "255.255.255.255"));
	CU_ASSERT_TRUE(allowed(all4, 1, "::ffff:1.2.3.4"));
	CU_ASSERT_FALSE(allowed(all4, 1, "2001:db8::1"));
	CU_ASSERT_TRUE(allowed(host, 1, "192.168.1.7"));
	CU_ASSERT_FALSE(allowed(host, 1, "192.168.1.6"));
	CU_ASSERT_FALSE(allowed(host, 1, "192.168.1.8"));
	CU_ASSERT_TRUE(allowed(v6, 2, "2001:db8:ffff::5"));
	CU_ASSERT_FALSE(allowed(v6, 2, "2001:db9::1"));
	CU_ASSERT_TRUE(allowed(v6, 2, "10.9.9.9"));
	CU_ASSERT_TRUE(allowed(odd, 1, "172.31.255.255"));
	CU_ASSERT_FALSE(allowed(odd, 1, "172.32.0.0"));
	CU_ASSERT_TRUE(allowed(NULL, 0, "203.0.113.9"));	/* {} = everyone */
	CU_ASSERT_TRUE(allowed(NULL, 0, "2001:db8::1"));
}

static void test_v4_mapped_network_becomes_ipv4(void)
{
	struct conf_net n;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(conf_parse_net("::ffff:10.0.0.0/104", &n, err,
					     sizeof(err)), 0);
	CU_ASSERT_EQUAL(n.family, AF_INET);
	CU_ASSERT_EQUAL(n.prefix, 8);
	CU_ASSERT_EQUAL(n.addr[0], 10);
	CU_ASSERT_EQUAL(n.addr[1], 0);
}

static void test_client_entries_parse_and_format(void)
{
	static const char *const ok[][2] = {
		{ "10.0.0.0/8(ro,all_squash,anonuid=1000,anongid=1001)",
		  "10.0.0.0/8(ro,all_squash,anonuid=1000,anongid=1001)" },
		{ "ws1.lab.example(rw,no_root_squash)",
		  "ws1.lab.example(rw,no_root_squash)" },
		{ "*.lab.example(insecure,ro)", "*.lab.example(ro,insecure)" },
		{ "192.0.2.7", "192.0.2.7" },
		{ "node1", "node1" },
		{ "2001:db8::/32(root_squash,secure,no_all_squash)",
		  "2001:db8::/32(root_squash,no_all_squash,secure)" },
		{ "@group", "@group" },
		{ "@build_hosts.lab-1(no_root_squash,rw)",
		  "@build_hosts.lab-1(rw,no_root_squash)" },
	};
	static const char *const bad[][2] = {
		{ "10.0.0.1(bogus)", "unknown option \"bogus\"" },
		{ "x()", "empty option list" },
		{ "x(ro,,rw)", "empty option between commas" },
		{ "x(anonuid=-1)", "anonuid must be a number 0..4294967295" },
		{ "x(anongid=4294967296)", "anongid must be a number" },
		{ "x(ro", "options go in one pair of parentheses" },
		{ "x(ro)(rw)", "options go in one pair of parentheses" },
		{ "x)", "')' without '('" },
		{ "a b", "one client per entry" },
		{ "-x.lab", "is not an address, a network" },
		{ "10.0.0.0/33(ro)", "prefix length must be 0..32" },
		{ "(ro)", "expected an address" },
		{ "@", "a netgroup is \"@NAME\"" },
		{ "@(ro)", "a netgroup is \"@NAME\"" },
		{ "@lab!x", "a netgroup is \"@NAME\"" },
		{ "@lab(bogus)", "unknown option \"bogus\"" },
	};
	struct conf_client cl, back;
	char err[512], buf[256];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(conf_parse_client(ok[i][0], &cl, err,
							sizeof(err)), 0);
		conf_format_client(&cl, buf, sizeof(buf));
		CU_ASSERT_STRING_EQUAL(buf, ok[i][1]);
		CU_ASSERT_EQUAL_FATAL(conf_parse_client(buf, &back, err,
							sizeof(err)), 0);
		CU_ASSERT_TRUE(conf_client_equal(&cl, &back));
		conf_client_clear(&back);
		conf_client_clear(&cl);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(conf_parse_client(bad[i][0], &cl, err,
						  sizeof(err)), -1);
		if (!strstr(err, bad[i][1]))
			fprintf(stderr, "\n%s: got \"%s\"\n", bad[i][0], err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i][1]));
	}
	CU_ASSERT_EQUAL_FATAL(conf_parse_client("10.0.0.0/8(ro,anonuid=7)",
						&cl, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cl.kind, CONF_CLIENT_NET);
	CU_ASSERT_EQUAL(cl.set, CONF_OPT_READ_ONLY | CONF_OPT_ANONUID);
	CU_ASSERT_TRUE(cl.opt.read_only);
	CU_ASSERT_EQUAL(cl.opt.anonuid, 7);
	conf_client_clear(&cl);
	CU_ASSERT_EQUAL_FATAL(conf_parse_client("@group(ro)", &cl, err,
						sizeof(err)), 0);
	CU_ASSERT_EQUAL(cl.kind, CONF_CLIENT_NETGROUP);
	CU_ASSERT_STRING_EQUAL(cl.name, "@group");
	CU_ASSERT_EQUAL(cl.set, CONF_OPT_READ_ONLY);
	CU_ASSERT_TRUE(cl.opt.read_only);
	CU_ASSERT_EQUAL(cl.naddrs, 0);
	conf_client_clear(&cl);
}

/* exports(5)'s order for netgroups: after single hosts, networks and
 * wildcards, before "*" alone; membership is the caller's answer. */
static void test_netgroup_precedence(void)
{
	static const char *const list[] = {
		"*(ro)", "@lab(rw,no_root_squash)", "10.1.2.3(all_squash)",
		"*.ci.example(anonuid=7)", "@other(anonuid=9)",
	};
	static const char *const lab[] = { "lab", NULL };
	static const char *const both[] = { "other", "lab", NULL };
	static const char *const labs[] = { "Lab", "lab.x", NULL };
	struct conf_export def = { .read_only = true, .root_squash = true,
				   .anonuid = 65534, .anongid = 65534 };
	struct conf_access a;

	/* A member: the netgroup's options, not "*"'s. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.9.9.9", "ws1", lab, &def,
				     &a), CONF_MATCH_YES);
	CU_ASSERT_FALSE(a.read_only);
	CU_ASSERT_FALSE(a.root_squash);
	CU_ASSERT_EQUAL(a.anonuid, 65534);
	/* Not known yet: "*" must not decide before the netgroup can. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.9.9.9", NULL, lab, &def,
				     &a), CONF_MATCH_NEED_NAME);
	/* The host entry beats the netgroup, without the name. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.1.2.3", NULL, NULL, &def,
				     &a), CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.all_squash);
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.1.2.3", "ws1", lab, &def,
				     &a), CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.all_squash);
	CU_ASSERT_TRUE(a.read_only);
	/* A wildcard beats a netgroup. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.9.9.9", "b.ci.example",
				     lab, &def, &a), CONF_MATCH_YES);
	CU_ASSERT_EQUAL(a.anonuid, 7);
	CU_ASSERT_TRUE(a.read_only);
	/* Member of two: the netgroup entry written first wins. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.9.9.9", "ws1", both, &def,
				     &a), CONF_MATCH_YES);
	CU_ASSERT_FALSE(a.read_only);
	/* No membership (names compared exactly): "*" applies; without
	 * "*", no match. */
	CU_ASSERT_EQUAL(match_groups(list, 5, "10.9.9.9", "ws1", labs, &def,
				     &a), CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.read_only);
	CU_ASSERT_EQUAL(a.anonuid, 65534);
	CU_ASSERT_EQUAL(match_groups(list + 1, 1, "10.9.9.9", "ws1", NULL,
				     &def, &a), CONF_MATCH_NO);
	CU_ASSERT_EQUAL(match_groups(list + 1, 1, "10.9.9.9", "", labs,
				     &def, &a), CONF_MATCH_NO);
	CU_ASSERT_EQUAL(match_groups(list + 1, 1, "10.9.9.9", "", lab,
				     &def, &a), CONF_MATCH_YES);
	CU_ASSERT_EQUAL(match_groups(list + 1, 1, "10.9.9.9", NULL, lab,
				     &def, &a), CONF_MATCH_NEED_NAME);
}

/* The netgroups a configuration names, once each, for the daemon to
 * evaluate; a netgroup entry needs the client's name. */
static void test_netgroups_are_collected(void)
{
	struct conf *c = load_ok("export \"/a\" {\n upstream = \"nfs://u/a\"\n"
				 " id = 1\n clients = {\"@lab(rw)\","
				 " \"10.0.0.1\", \"@ci\"}\n}\n"
				 "export \"/b\" {\n upstream = \"nfs://u/b\"\n"
				 " id = 2\n clients = {\"@ci(ro)\"}\n}\n");
	char **v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE(conf_needs_client_names(c));
	v = conf_netgroups(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_STRING_EQUAL(v[0], "lab");
	CU_ASSERT_STRING_EQUAL(v[1], "ci");
	CU_ASSERT_PTR_NULL(v[2]);
	conf_strv_free(v);
	conf_free(&c);
	c = load_ok("export \"/a\" {\n upstream = \"nfs://u/a\"\n id = 1\n"
		    " clients = {\"10.0.0.1\"}\n}\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FALSE(conf_needs_client_names(c));
	v = conf_netgroups(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_PTR_NULL(v[0]);
	conf_strv_free(v);
	conf_free(&c);
}

/* exports(5): a single host beats a network, a network beats a wildcard,
 * whatever the order written; the entry's options override the export's. */
static void test_client_precedence_and_options(void)
{
	static const char *const list[] = {
		"*(ro)", "10.0.0.0/8(all_squash,anonuid=1000)",
		"10.1.2.3(no_root_squash)",
	};
	static const char *const wild[] = { "*.lab.example(rw)",
					    "192.0.2.0/24" };
	struct conf_export def = { .read_only = true, .root_squash = true,
				   .anonuid = 65534, .anongid = 65534 };
	struct conf_access a;

	CU_ASSERT_EQUAL(match_full(list, 3, "10.1.2.3", NULL, &def, &a),
			CONF_MATCH_YES);
	CU_ASSERT_FALSE(a.root_squash);
	CU_ASSERT_FALSE(a.all_squash);
	CU_ASSERT_TRUE(a.read_only);	/* the export's default */
	CU_ASSERT_EQUAL(match_full(list, 3, "10.9.9.9", NULL, &def, &a),
			CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.all_squash);
	CU_ASSERT_TRUE(a.root_squash);
	CU_ASSERT_EQUAL(a.anonuid, 1000);
	CU_ASSERT_EQUAL(a.anongid, 65534);
	CU_ASSERT_EQUAL(match_full(list, 3, "203.0.113.5", NULL, &def, &a),
			CONF_MATCH_YES);	/* "*" needs no name */
	CU_ASSERT_TRUE(a.read_only);
	CU_ASSERT_FALSE(a.all_squash);
	/* A wildcard of names: unknown name, a match, none, another name. */
	CU_ASSERT_EQUAL(match_full(wild, 2, "198.51.100.4", NULL, &def, &a),
			CONF_MATCH_NEED_NAME);
	CU_ASSERT_EQUAL(match_full(wild, 2, "198.51.100.4", "ws1.LAB.example",
				   &def, &a), CONF_MATCH_YES);
	CU_ASSERT_FALSE(a.read_only);
	CU_ASSERT_EQUAL(match_full(wild, 2, "198.51.100.4", "", &def, &a),
			CONF_MATCH_NO);
	CU_ASSERT_EQUAL(match_full(wild, 2, "198.51.100.4", "lab.example.evil",
				   &def, &a), CONF_MATCH_NO);
	/* An address entry decides without the name. */
	CU_ASSERT_EQUAL(match_full(wild, 2, "192.0.2.9", NULL, &def, &a),
			CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.read_only);
}

static char *last_warning;
static unsigned warnings;

/* Keep a warning of conf_clients_warn_ignored. */
static void keep_warning_line(const char *msg)
{
	free(last_warning);
	last_warning = strdup(msg);
	warnings++;
}

/* Keep a warning of conf_clients_resolve (arg: NULL). */
static void keep_warning(void *arg, const char *msg)
{
	(void)arg;
	keep_warning_line(msg);
}

static void test_host_names_resolve_at_load(void)
{
	struct conf *c = load_ok("export \"/a\" {\n"
				 " upstream = \"nfs://u/a\"\n id = 1\n"
				 " clients = {\"localhost(ro)\",\n"
				 "  \"no-such-host.invalid\", \"*.lab\"}\n"
				 "}\n");
	struct conf_access a;
	struct sockaddr_in s4 = sa4("127.0.0.1");
	char want[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE(conf_needs_client_names(c));
	/* Before resolution a host name matches nobody. */
	CU_ASSERT_EQUAL(conf_client_match(&c->exports[0],
					  (struct sockaddr *)&s4, "x", NULL,
					  &a),
			CONF_MATCH_NO);
	warnings = 0;
	CU_ASSERT_EQUAL(conf_clients_resolve(c, keep_warning, NULL), 1);
	CU_ASSERT_EQUAL(warnings, 1);
	/* At the clients directive's line, not the section's (1): for a
	 * list over several lines the line it ends on (5, the entry's own),
	 * as for the other errors of a list. */
	snprintf(want, sizeof(want), "%s:5: clients entry "
		 "\"no-such-host.invalid\": ", conf_path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(last_warning);
	if (strncmp(last_warning, want, strlen(want)) != 0)
		fprintf(stderr, "\nwarning: %s\nwant: %s\n", last_warning, want);
	CU_ASSERT_EQUAL(strncmp(last_warning, want, strlen(want)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(last_warning, "; it matches no client"));
	CU_ASSERT_EQUAL(conf_client_match(&c->exports[0],
					  (struct sockaddr *)&s4, NULL, NULL,
					  &a),
			CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.read_only);
	conf_free(&c);
	c = load_ok("export \"/a\" {\n upstream = \"nfs://u/a\"\n id = 1\n"
		    " clients = {\"*\"}\n read_only = true\n all_squash = true\n"
		    " anonuid = 7\n}\n");
	CU_ASSERT_FALSE(conf_needs_client_names(c));
	/* The export's own options apply to a client whose entry has none. */
	CU_ASSERT_EQUAL(conf_client_match(&c->exports[0],
					  (struct sockaddr *)&s4, NULL, NULL,
					  &a),
			CONF_MATCH_YES);
	CU_ASSERT_TRUE(a.read_only);
	CU_ASSERT_TRUE(a.all_squash);
	CU_ASSERT_EQUAL(a.anonuid, 7);
	conf_free(&c);
	free(last_warning);
	last_warning = NULL;
}

static void test_bad_networks_are_refused(void)
{
	struct conf_net n;
	char err[256];

	CU_ASSERT_EQUAL(conf_parse_net("10.1.0.0/8", &n, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"10.1.0.0/8\": address has bits set "
			       "past the /8 prefix");
	CU_ASSERT_EQUAL(conf_parse_net("::1/129", &n, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"::1/129\": prefix length must be "
			       "0..128");
	CU_ASSERT_EQUAL(conf_parse_net("10.0.0.0/", &n, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"10.0.0.0/\": prefix length must be "
			       "0..32");
	CU_ASSERT_EQUAL(conf_parse_net("", &n, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"\": not an IPv4 or IPv6 address "
			       "(ADDR or ADDR/PREFIX)");
	CU_ASSERT_EQUAL(conf_parse_net("10.0.0/8", &n, err, sizeof(err)), -1);
}

static void test_netmask_form_is_a_prefix(void)
{
	struct conf_net n, p;
	char err[256];

	CU_ASSERT_EQUAL(conf_parse_net("10.0.0.0/255.0.0.0", &n, err,
				       sizeof(err)), 0);
	CU_ASSERT_EQUAL(conf_parse_net("10.0.0.0/8", &p, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(n.prefix, 8);
	CU_ASSERT_EQUAL(memcmp(&n, &p, sizeof(n)), 0);
	CU_ASSERT_EQUAL(conf_parse_net("192.168.4.0/255.255.252.0", &n, err,
				       sizeof(err)), 0);
	CU_ASSERT_EQUAL(n.prefix, 22);
	CU_ASSERT_EQUAL(conf_parse_net("0.0.0.0/0.0.0.0", &n, err,
				       sizeof(err)), 0);
	CU_ASSERT_EQUAL(n.prefix, 0);
	CU_ASSERT_EQUAL(conf_parse_net("1.2.3.4/255.255.255.255", &n, err,
				       sizeof(err)), 0);
	CU_ASSERT_EQUAL(n.prefix, 32);
	CU_ASSERT_EQUAL(conf_parse_net("10.1.0.0/255.0.255.0", &n, err,
				       sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"10.1.0.0/255.0.255.0\": netmask must "
			       "be contiguous ones then zeros, as 255.255.0.0");
	CU_ASSERT_EQUAL(conf_parse_net("10.1.0.0/255.0.0.0", &n, err,
				       sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "\"10.1.0.0/255.0.0.0\": address has bits "
			       "set past the /8 prefix");
}

static void test_exports5_words_are_accepted_with_a_warning(void)
{
	struct conf *c = load_ok("export \"/a\" {\n"
				 " upstream = \"nfs://u/a\"\n id = 1\n"
				 " clients = {\"10.0.0.0/255.0.0.0(rw,sync,"
				 "no_subtree_check)\",\n"
				 "  \"1.2.3.4(async,wdelay,no_wdelay,hide,"
				 "nohide,crossmnt,subtree_check,fsid=7)\"}\n}\n");

	if (!c)
		return;
	CU_ASSERT_EQUAL_FATAL(c->exports[0].nclients, 2);
	CU_ASSERT_EQUAL(c->exports[0].clients[0].prefix, 8);
	CU_ASSERT_EQUAL(c->exports[0].clients[0].set, CONF_OPT_READ_ONLY);
	CU_ASSERT_FALSE(c->exports[0].clients[0].opt.read_only);
	CU_ASSERT_EQUAL(c->exports[0].clients[1].set, 0);
	warnings = 0;
	conf_clients_warn_ignored(c, keep_warning_line);
	CU_ASSERT_EQUAL(warnings, 10);
	CU_ASSERT_STRING_EQUAL(last_warning, "export \"/a\": clients "
			       "\"1.2.3.4\": option fsid=... has no effect: the "
			       "export's id directive numbers it in handles");
	conf_free(&c);
	expect_error("export \"/a\" {\n clients = {\"1.2.3.4(fsid=)\"}\n}\n",
		     2, "export \"/a\": clients: \"1.2.3.4(fsid=)\": unknown "
		     "option \"fsid=\" (options: rw, ro, root_squash, "
		     "no_root_squash, all_squash, no_all_squash, secure, "
		     "insecure, anonuid=N, anongid=N; accepted and ignored: "
		     "sync, async, subtree_check, no_subtree_check, wdelay, "
		     "no_wdelay, hide, nohide, crossmnt, fsid=ID)");
}

static void test_every_bad_clients_entry_is_reported(void)
{
	static const char *const want[] = {
		"4: export \"/a\": clients: \"10.0.0.0/33\": prefix length "
		"must be 0..32",
		"5: export \"/a\": clients: \"a b\": one client per entry, "
		"with no spaces (write {\"A\", \"B(ro)\"})",
		"6: export \"/a\": clients: \"10.1.0.0/255.0.255.0\": netmask "
		"must be contiguous ones then zeros, as 255.255.0.0",
	};

	expect_errors("export \"/a\" {\n id = 1\n upstream = \"nfs://u/a\"\n"
		      " clients = {\"10.0.0.0/33\",\n \"a b\",\n"
		      " \"10.1.0.0/255.0.255.0\", \"1.2.3.4\"}\n}\n", want, 3);
}

static void test_conflicting_duplicate_clients_are_refused(void)
{
	struct conf *c;

	expect_error("export \"/a\" {\n clients = {\"10.0.0.0/8(ro)\",\n"
		     " \"10.0.0.0/255.0.0.0(rw)\"}\n}\n", 3,
		     "export \"/a\": clients: \"10.0.0.0/255.0.0.0(rw)\" names "
		     "the same clients as \"10.0.0.0/8(ro)\" with other "
		     "options; keep one");
	expect_error("export \"/a\" {\n clients = {\"Lab.example\",\n"
		     " \"lab.example(no_root_squash)\"}\n}\n", 3,
		     "export \"/a\": clients: \"lab.example(no_root_squash)\" "
		     "names the same clients as \"Lab.example\" with other "
		     "options; keep one");
	expect_error("export \"/a\" {\n clients = {\"@lab(ro)\",\n"
		     " \"@lab(rw)\"}\n}\n", 3,
		     "export \"/a\": clients: \"@lab(rw)\" names the same "
		     "clients as \"@lab(ro)\" with other options; keep one");
	/* The same entry twice, or one network inside another, is no
	 * conflict: exports(5) precedence decides the second case. */
	c = load_ok("export \"/a\" {\n upstream = \"nfs://u/a\"\n id = 1\n"
		    " clients = {\"10.0.0.0/8(ro)\", \"10.0.0.0/8(ro)\","
		    " \"10.1.0.0/16(rw)\"}\n}\n");
	conf_free(&c);
}

/* ---- quick start and overrides ---- */

static void test_from_flags_builds_one_export(void)
{
	struct conf *c = NULL;
	const struct conf_export *e;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(conf_from_flags(
		"nfs://127.0.0.1/export?version=3&nfsport=2049&mountport=20048",
		"127.0.0.1:12049", 12048, &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c->source, "command line");
	CU_ASSERT_STRING_EQUAL(c->listen, "127.0.0.1");
	CU_ASSERT_EQUAL(c->nfs_port, 12049);
	CU_ASSERT_EQUAL(c->mount_port, 12048);
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "127.0.0.1:9655");
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/var/lib/nfscached");
	CU_ASSERT_EQUAL(c->max_reply_buffer, 8388608);
	CU_ASSERT_EQUAL_FATAL(c->nexports, 1);
	e = &c->exports[0];
	CU_ASSERT_EQUAL(e->id, 1);
	CU_ASSERT_STRING_EQUAL(e->path, "/export");
	CU_ASSERT_STRING_EQUAL(e->url.server, "127.0.0.1");
	CU_ASSERT_EQUAL(e->url.nfs_port, 2049);
	CU_ASSERT_EQUAL(e->url.mount_port, 20048);
	CU_ASSERT_EQUAL(e->nclients, 0);
	CU_ASSERT_TRUE(e->root_squash);
	CU_ASSERT_EQUAL(e->anonuid, 65534);
	CU_ASSERT_PTR_EQUAL(conf_export_by_id(c, 1), e);
	conf_free(&c);

	CU_ASSERT_EQUAL_FATAL(conf_from_flags("nfs://h/x", NULL, 0, &c, err,
					      sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c->listen, "0.0.0.0");
	CU_ASSERT_EQUAL(c->nfs_port, 2049);
	CU_ASSERT_EQUAL(c->mount_port, 20048);
	conf_free(&c);

	CU_ASSERT_EQUAL_FATAL(conf_from_flags("nfs://h/x", "[::]:3049", 0, &c,
					      err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c->listen, "::");
	CU_ASSERT_EQUAL(c->nfs_port, 3049);
	conf_free(&c);
}

static void test_from_flags_refuses_bad_input(void)
{
	struct conf *c = NULL;
	char err[256];

	CU_ASSERT_EQUAL(conf_from_flags("nfs://h", NULL, 0, &c, err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "upstream: \"nfs://h\": missing export "
			       "path (nfs://HOST/PATH)");
	CU_ASSERT_EQUAL(conf_from_flags("nfs://h/x", "127.0.0.1", 0, &c, err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "listen: \"127.0.0.1\": expected "
			       "ADDR:PORT or [IPV6]:PORT");
	CU_ASSERT_EQUAL(conf_from_flags("nfs://h/x", "127.0.0.1:2000", 2000,
					&c, err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "mount_port equals nfs_port 2000; set "
			       "mount_port = 0 to serve MOUNT on nfs_port only");
	CU_ASSERT_EQUAL(conf_from_flags("nfs://h/x", NULL, 70000, &c, err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "mount port 70000 out of range 0..65535");
	CU_ASSERT_EQUAL(conf_from_flags("nfs://h/x/", NULL, 0, &c, err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "upstream \"nfs://h/x/\": export path "
			       "must not end with '/'");
	CU_ASSERT_PTR_NULL(c);
}

static void test_set_global_checks_like_a_file(void)
{
	struct conf *c = NULL;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(conf_from_flags("nfs://h/x", NULL, 0, &c, err,
					      sizeof(err)), 0);
	CU_ASSERT_EQUAL(conf_set_global(c, "state_dir", "/tmp/s", err,
					sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/tmp/s");
	CU_ASSERT_EQUAL(conf_set_global(c, "metrics_listen", "127.0.0.1:19655",
					err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "127.0.0.1:19655");
	CU_ASSERT_EQUAL(conf_set_global(c, "mount_port", "0", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(c->mount_port, 0);
	CU_ASSERT_EQUAL(conf_set_global(c, "register_rpcbind", "off", err,
					sizeof(err)), 0);
	CU_ASSERT_FALSE(c->register_rpcbind);
	CU_ASSERT_EQUAL(conf_set_global(c, "upstream_timeout", "0.5", err,
					sizeof(err)), 0);
	CU_ASSERT_EQUAL(c->upstream_timeout, 0.5);

	CU_ASSERT_EQUAL(conf_set_global(c, "metrics_listen", "nowhere", err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "metrics_listen: \"nowhere\": expected "
			       "ADDR:PORT or [IPV6]:PORT");
	CU_ASSERT_STRING_EQUAL(c->metrics_listen, "127.0.0.1:19655");
	CU_ASSERT_EQUAL(conf_set_global(c, "max_record_size", "16777216", err,
					sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "max_reply_buffer 8388608 is smaller than "
			       "max_record_size 16777216");
	CU_ASSERT_EQUAL(c->max_record_size, 1114112);
	CU_ASSERT_EQUAL(conf_set_global(c, "nfs_port", "x", err, sizeof(err)),
			-1);
	CU_ASSERT_STRING_EQUAL(err, "nfs_port: \"x\" is not a whole number");
	CU_ASSERT_EQUAL(conf_set_global(c, "id", "1", err, sizeof(err)), -1);
	CU_ASSERT_STRING_EQUAL(err, "unknown directive 'id'");
	conf_free(&c);
}

static void test_hostport_parsing(void)
{
	char addr[64], err[256];
	int port = 0;

	CU_ASSERT_EQUAL(conf_parse_hostport("127.0.0.1:9655", addr,
					    sizeof(addr), &port, err,
					    sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(addr, "127.0.0.1");
	CU_ASSERT_EQUAL(port, 9655);
	CU_ASSERT_EQUAL(conf_parse_hostport("[::1]:1", addr, sizeof(addr),
					    &port, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(addr, "::1");
	CU_ASSERT_EQUAL(port, 1);
	CU_ASSERT_EQUAL(conf_parse_hostport("[1.2.3.4]:1", addr, sizeof(addr),
					    &port, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(conf_parse_hostport("1.2.3.4:65536", addr,
					    sizeof(addr), &port, err,
					    sizeof(err)), -1);
	CU_ASSERT_EQUAL(conf_parse_hostport(":80", addr, sizeof(addr), &port,
					    err, sizeof(err)), -1);
}

/* ---- writing: dump round trip, example file, docs ---- */

/* Dump c to a file and load it back. */
static struct conf *dump_and_reload(const struct conf *c)
{
	char path[160], err[512];
	struct conf *back = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/dump.conf", tmpdir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	conf_dump(c, f);
	fclose(f);
	if (conf_load_file(path, &back, err, sizeof(err)) != 0)
		fprintf(stderr, "\nreload of dump failed: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(back);
	return back;
}

static void test_dump_parses_back_to_an_equal_config(void)
{
	struct conf *c = load_ok(full_config);
	struct conf *back;

	if (!c)
		return;
	back = dump_and_reload(c);
	if (back) {
		CU_ASSERT_TRUE(conf_equal(c, back));
		CU_ASSERT_EQUAL(back->upstream_timeout, 2.5);
		CU_ASSERT_EQUAL(back->exports[0].nclients, 3);
		CU_ASSERT_STRING_EQUAL(back->exports[0].upstream,
			"nfs://[::1]/exp/one?version=3&nfsport=2049&mountport=20048");
	}
	conf_free(&back);
	conf_free(&c);
}

static void test_dump_quotes_awkward_strings(void)
{
	struct conf *c = load_ok(
		"state_dir = \"/a \\\"q\\\" \\${HOME} \\\\ b\\tc\"\n"
		"upstream_timeout = 0.1\n"
		"export \"/sp ace/$x\" {\n id = 5\n upstream = \"nfs://u/a\"\n}\n");
	struct conf *back;

	if (!c)
		return;
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/a \"q\" ${HOME} \\ b\tc");
	back = dump_and_reload(c);
	if (back) {
		CU_ASSERT_TRUE(conf_equal(c, back));
		CU_ASSERT_STRING_EQUAL(back->state_dir,
				       "/a \"q\" ${HOME} \\ b\tc");
		CU_ASSERT_STRING_EQUAL(back->exports[0].path, "/sp ace/$x");
		CU_ASSERT_EQUAL(back->upstream_timeout, 0.1);
	}
	conf_free(&back);
	conf_free(&c);
}

static void test_dump_of_flags_config_round_trips(void)
{
	struct conf *c = NULL, *back;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(conf_from_flags("nfs://h/x?nfsport=5", NULL, 0,
					      &c, err, sizeof(err)), 0);
	back = dump_and_reload(c);
	if (back)
		CU_ASSERT_TRUE(conf_equal(c, back));
	conf_free(&back);
	conf_free(&c);
}

static void test_equal_notices_each_difference(void)
{
	struct conf *a = load_ok(full_config), *b = load_ok(full_config);

	if (!a || !b)
		goto out;
	CU_ASSERT_TRUE(conf_equal(a, b));
	b->drc_timeout = 1.25;
	CU_ASSERT_FALSE(conf_equal(a, b));
	b->drc_timeout = a->drc_timeout;
	b->exports[0].clients[1].prefix = 31;
	CU_ASSERT_FALSE(conf_equal(a, b));
	b->exports[0].clients[1].prefix = 32;
	b->exports[1].secure = true;
	CU_ASSERT_FALSE(conf_equal(a, b));
	b->exports[1].secure = false;
	b->exports[1].path[1] = 'T';
	CU_ASSERT_FALSE(conf_equal(a, b));
	b->exports[1].path[1] = 't';
	CU_ASSERT_TRUE(conf_equal(a, b));
out:
	conf_free(&a);
	conf_free(&b);
}

static void test_example_file_is_current_and_loads(void)
{
	char *repo = read_file(EXAMPLE_CONF);
	char *gen = NULL, err[512];
	size_t len = 0;
	struct conf *c = NULL;
	FILE *f = open_memstream(&gen, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	conf_write_example(f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(repo);
	if (!repo || strcmp(repo, gen) != 0) {
		FILE *out = fopen("nfscached.conf.example.generated", "w");

		if (out) {
			fputs(gen, out);
			fclose(out);
		}
		fprintf(stderr, "\n%s is out of date; the current text is in "
			"nfscached.conf.example.generated in the test's "
			"directory\n", EXAMPLE_CONF);
		CU_FAIL("example file out of date");
	}
	CU_ASSERT_EQUAL(conf_load_file(EXAMPLE_CONF, &c, err, sizeof(err)), 0);
	if (c) {
		CU_ASSERT_EQUAL(c->nexports, 1);
		CU_ASSERT_STRING_EQUAL(c->exports[0].path, "/data");
		CU_ASSERT_EQUAL(c->exports[0].nclients, 2);
		CU_ASSERT_EQUAL(c->nfs_port, 2049);
	}
	conf_free(&c);
	free(repo);
	free(gen);
}

static void test_docs_name_every_directive(void)
{
	char *docs = read_file(DOCS_CONF);
	char *gen = NULL, *line, *save = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&gen, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(docs);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	conf_write_example(f);
	fclose(f);
	/* Every "name = value" line of the example names a directive. */
	for (line = strtok_r(gen, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[64], eq[2], want[80];

		if (sscanf(line, " %63[a-z_] %1[=]", name, eq) != 2)
			continue;
		n++;
		snprintf(want, sizeof(want), "`%s`", name);
		if (!strstr(docs, want))
			fprintf(stderr, "\n%s does not document %s\n", DOCS_CONF,
				want);
		CU_ASSERT_PTR_NOT_NULL(strstr(docs, want));
	}
	CU_ASSERT_EQUAL(n, 59);	/* 43 global and 16 export directives */
	free(gen);
	free(docs);
}

/* Add one suite and its tests. */
static int add_suite(const char *name, const CU_TestInfo *tests)
{
	CU_pSuite s = CU_add_suite(name, suite_init, suite_clean);

	if (!s)
		return -1;
	for (; tests->pName; tests++)
		if (!CU_add_test(s, tests->pName, tests->pTestFunc))
			return -1;
	return 0;
}

#define T(f) { #f, f }

int test_register(void)
{
	static CU_TestInfo good[] = {
		T(test_minimal_config_gets_every_default),
		T(test_every_directive_reads_back_exactly),
		T(test_harness_style_config_loads),
		T(test_comments_keep_line_numbers),
		T(test_comment_markers_inside_strings_are_kept),
		T(test_suffixes_scale_sizes_and_durations),
		T(test_suffixed_values_dump_and_load_back_equal),
		T(test_empty_metrics_listen_disables),
		T(test_lookups_by_id_and_path),
		CU_TEST_INFO_NULL,
	};
	static CU_TestInfo bad[] = {
		T(test_unknown_directive_is_refused_at_its_line),
		T(test_every_error_of_a_file_is_reported),
		T(test_other_servers_habits_get_a_hint),
		T(test_wrong_type_is_refused_at_its_line),
		T(test_out_of_range_is_refused_at_its_line),
		T(test_bad_strings_are_refused_at_their_line),
		T(test_bad_url_is_refused_at_its_line),
		T(test_bad_network_is_refused_at_its_line),
		T(test_duplicate_id_is_refused_at_the_second_id),
		T(test_duplicate_path_is_refused_at_the_second_export),
		T(test_missing_required_is_refused_at_the_export),
		T(test_bad_export_path_is_refused_at_the_export),
		T(test_no_export_is_refused),
		T(test_reply_buffer_below_record_size_is_refused),
		T(test_mount_port_equal_to_nfs_port_is_refused),
		T(test_unusable_cache_dir_is_refused),
		T(test_cache_dir_line_is_kept),
		T(test_commit_mode_is_checked),
		T(test_syntax_errors_carry_a_line),
		T(test_attribute_timeouts_in_order),
		T(test_unreadable_file_is_refused),
		T(test_long_path_keeps_the_reason),
		CU_TEST_INFO_NULL,
	};
	static CU_TestInfo parsers[] = {
		T(test_url_parses_server_path_and_ports),
		T(test_url_errors_are_refused),
		T(test_network_matching),
		T(test_v4_mapped_network_becomes_ipv4),
		T(test_bad_networks_are_refused),
		T(test_netmask_form_is_a_prefix),
		T(test_exports5_words_are_accepted_with_a_warning),
		T(test_every_bad_clients_entry_is_reported),
		T(test_conflicting_duplicate_clients_are_refused),
		T(test_client_entries_parse_and_format),
		T(test_client_precedence_and_options),
		T(test_netgroup_precedence),
		T(test_netgroups_are_collected),
		T(test_host_names_resolve_at_load),
		T(test_hostport_parsing),
		CU_TEST_INFO_NULL,
	};
	static CU_TestInfo build[] = {
		T(test_from_flags_builds_one_export),
		T(test_from_flags_refuses_bad_input),
		T(test_set_global_checks_like_a_file),
		T(test_dump_parses_back_to_an_equal_config),
		T(test_dump_quotes_awkward_strings),
		T(test_dump_of_flags_config_round_trips),
		T(test_equal_notices_each_difference),
		T(test_example_file_is_current_and_loads),
		T(test_docs_name_every_directive),
		CU_TEST_INFO_NULL,
	};

	if (add_suite("conf_good", good) || add_suite("conf_errors", bad) ||
	    add_suite("conf_parsers", parsers) || add_suite("conf_build", build))
		return -1;
	return 0;
}
