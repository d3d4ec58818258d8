/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_table: the metric declarations every module makes once
 * (the *_METRICS lists next to its stats struct, daemon/ctl/metrics.h), and
 * the renderer that turns them into /metrics text, without a daemon:
 * names follow the Prometheus conventions (nfscached_ prefix, _total on
 * counters and only there, a HELP that ends with '.'), no family is
 * declared twice, continuation rows (NULL help) follow a row of their own
 * family, and a stats struct with known values renders byte for byte as
 * the exposition format wants it (integers, bools as 0/1, double counters
 * to the microsecond, double gauges to the millisecond, skipped labels).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cunit_main.h"
#include "dispatch.h"
#include "metrics.h"
#include "procstat.h"
#include "server.h"
#include "service.h"
#include "stale.h"
#include "writeback.h"

/* Length of row r's family name (its name up to any '{'). */
static size_t family_len(const struct metrics_row *r)
{
	return strcspn(r->name, "{");
}

/* Whether rows a and b belong to one family. */
static bool same_family(const struct metrics_row *a, const struct metrics_row *b)
{
	return family_len(a) == family_len(b) &&
	       strncmp(a->name, b->name, family_len(a)) == 0;
}

/* Check one row against the naming conventions. */
static void check_row(const struct metrics_table *t, size_t i)
{
	const struct metrics_row *r = &t->rows[i];
	size_t fl = family_len(r);
	bool counter = strcmp(r->type, "counter") == 0;
	bool total = fl > 6 && strncmp(r->name + fl - 6, "_total", 6) == 0;

	/* process_*: the Prometheus clients' process metrics (procstat.h). */
	CU_ASSERT(strncmp(r->name, "nfscached_", 10) == 0 ||
		  (strcmp(t->module, "procstat") == 0 &&
		   strncmp(r->name, "process_", 8) == 0));
	CU_ASSERT(counter || strcmp(r->type, "gauge") == 0);
	CU_ASSERT_EQUAL(counter, total);
	if (r->help) {
		size_t hl = strlen(r->help);

		CU_ASSERT(hl > 1 && r->help[hl - 1] == '.');
	} else {
		/* A continuation has labels and follows its family. */
		CU_ASSERT(i > 0 && same_family(&t->rows[i - 1], r));
		CU_ASSERT(r->name[fl] == '{');
	}
	if (r->n)
		CU_ASSERT(r->label && r->label_value && r->value == METRICS_U64);
	if (counter != total || (!r->help && i == 0))
		fprintf(stderr, "bad row %s in %s\n", r->name, t->module);
}

/* Every row of every table: conventions, and each family declared once. */
/* The upstream families' procedure labels (proto's nfs3_proc_label) are
 * the names of the procedure table's NFSv3 rows, procedure by procedure. */
static void test_nfs3_proc_labels_match_the_table(void)
{
	unsigned n = 0;

	for (size_t i = 0; i < dispatch_table.count; i++) {
		const struct dispatch_entry *e = &dispatch_table.rows[i];

		if (e->prog != NFS_PROGRAM)
			continue;
		CU_ASSERT_PTR_NOT_NULL_FATAL(nfs3_proc_label(e->proc));
		CU_ASSERT_STRING_EQUAL(nfs3_proc_label(e->proc), e->name);
		n++;
	}
	CU_ASSERT_EQUAL(n, 22);
	CU_ASSERT_PTR_NULL(nfs3_proc_label(22));
}

static void test_declarations(void)
{
	size_t rows = 0;

	CU_ASSERT(metrics_ntables >= 9);
	for (size_t t = 0; t < metrics_ntables; t++) {
		const struct metrics_table *a = &metrics_tables[t];

		CU_ASSERT(a->nrows > 0);
		for (size_t i = 0; i < a->nrows; i++) {
			check_row(a, i);
			rows++;
			if (!a->rows[i].help)
				continue;
			for (size_t u = t; u < metrics_ntables; u++)
				for (size_t j = u == t ? i + 1 : 0;
				     j < metrics_tables[u].nrows; j++) {
					const struct metrics_row *b = &metrics_tables[u].rows[j];

					if (b->help && same_family(&a->rows[i], b)) {
						fprintf(stderr, "%s declared twice\n",
							a->rows[i].name);
						CU_FAIL("family declared twice");
					}
				}
		}
	}
	CU_ASSERT(rows >= 50);
}

/* The text of rendering table `module` over the stats struct at base. */
static char *render(const char *module, const void *base)
{
	struct evbuffer *o = evbuffer_new();
	char *text = NULL;
	size_t n;

	for (size_t t = 0; t < metrics_ntables; t++)
		if (strcmp(metrics_tables[t].module, module) == 0)
			metrics_render_rows(o, metrics_tables[t].rows,
					    metrics_tables[t].nrows, base);
	n = evbuffer_get_length(o);
	text = calloc(1, n + 1);
	if (text)
		evbuffer_remove(o, text, n);
	evbuffer_free(o);
	return text;
}

/* Doubles, bools and continuation rows render as the format wants. */
static void test_render_service(void)
{
	struct service_stats sv = { .start_time = 1796180000.1234,
		.ready = true, .reloads_ok = 3, .reloads_refused = 1,
		.last_reload_ok = false, .last_reload_time = 0 };
	char *text = render("service", &sv);

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text,
		"# HELP nfscached_start_time_seconds When the daemon started, in seconds since the Unix epoch.\n"
		"# TYPE nfscached_start_time_seconds gauge\n"
		"nfscached_start_time_seconds 1796180000.123\n"
		"# HELP nfscached_ready 1 once the daemon told its service manager it is ready.\n"
		"# TYPE nfscached_ready gauge\n"
		"nfscached_ready 1\n"
		"# HELP nfscached_config_reloads_total Configuration reloads (SIGHUP), by result.\n"
		"# TYPE nfscached_config_reloads_total counter\n"
		"nfscached_config_reloads_total{result=\"ok\"} 3\n"
		"nfscached_config_reloads_total{result=\"refused\"} 1\n"
		"# HELP nfscached_config_last_reload_successful 0 when the last reload was refused (the daemon runs on the previous configuration), else 1.\n"
		"# TYPE nfscached_config_last_reload_successful gauge\n"
		"nfscached_config_last_reload_successful 0\n"
		"# HELP nfscached_config_last_reload_success_timestamp_seconds When a reload last succeeded, in seconds since the Unix epoch; 0 if none.\n"
		"# TYPE nfscached_config_last_reload_success_timestamp_seconds gauge\n"
		"nfscached_config_last_reload_success_timestamp_seconds 0.000\n");
	free(text);
}

/* A double counter is rendered to the microsecond. */
static void test_render_double_counter(void)
{
	struct writeback_stats wb;
	char *text;

	memset(&wb, 0, sizeof(wb));
	wb.room_wait_seconds = 2.5;
	wb.writes = 7;
	text = render("writeback", &wb);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text,
		"# TYPE nfscached_write_room_wait_seconds_total counter\n"
		"nfscached_write_room_wait_seconds_total 2.500000\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nnfscached_upstream_write_calls_total 7\n"));
	free(text);
}

/* An array row gives one series per index its label set names, skipping
 * the others (stale answers exist for seven procedures only). */
static void test_render_arrays(void)
{
	struct stale_stats ss;
	struct server_stats st;
	char *text;

	memset(&ss, 0, sizeof(ss));
	ss.answers[6] = 4;	/* NFSPROC3_READ */
	ss.answers[3] = 2;	/* LOOKUP: outage mode */
	ss.answers[7] = 9;	/* WRITE: never answered stale, not exported */
	ss.mounts = 5;
	text = render("stale", &ss);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_stale_answers_total{procedure=\"read\"} 4\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_stale_answers_total{procedure=\"getattr\"} 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_stale_answers_total{procedure=\"lookup\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_stale_answers_total{procedure=\"access\"} 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_stale_mounts_total 5\n"));
	CU_ASSERT_PTR_NULL(strstr(text, "write"));
	CU_ASSERT_PTR_NULL(strstr(text, " 9\n"));
	free(text);
	memset(&st, 0, sizeof(st));
	st.closed[CLOSE_IDLE] = 5;
	st.rejected[REJECT_SYSTEM_ERR] = 2;
	text = render("server", &st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_connections_closed_total{reason=\"idle\"} 5\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "nfscached_rpc_rejected_total{reason=\"system_err\"} 2\n"));
	free(text);
}

/* metrics_add_rows sums every declared value, arrays and doubles too. */
static void test_add_rows(void)
{
	struct writeback_stats a, b;
	struct server_stats s, t;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.writes = 2;
	b.writes = 3;
	a.room_wait_seconds = 0.25;
	b.room_wait_seconds = 0.5;
	for (size_t i = 0; i < metrics_ntables; i++)
		if (strcmp(metrics_tables[i].module, "writeback") == 0)
			metrics_add_rows(metrics_tables[i].rows,
					 metrics_tables[i].nrows, &a, &b);
	CU_ASSERT_EQUAL(a.writes, 5);
	CU_ASSERT_DOUBLE_EQUAL(a.room_wait_seconds, 0.75, 1e-12);
	memset(&s, 0, sizeof(s));
	memset(&t, 0, sizeof(t));
	s.closed[CLOSE_LIMIT] = 1;
	t.closed[CLOSE_LIMIT] = 2;
	for (size_t i = 0; i < metrics_ntables; i++)
		if (strcmp(metrics_tables[i].module, "server") == 0)
			metrics_add_rows(metrics_tables[i].rows,
					 metrics_tables[i].nrows, &s, &t);
	CU_ASSERT_EQUAL(s.closed[CLOSE_LIMIT], 3);
}

/* procstat_get reads this process: an fd opened shows in open_fds, the
 * soft RLIMIT_NOFILE is max_fds, the start time is before now and after
 * boot, memory is non-zero. */
static void test_procstat(void)
{
	struct procstat a, b;
	struct rlimit rl;
	int fd;

	CU_ASSERT_EQUAL_FATAL(procstat_get(&a), 0);
	fd = open("/dev/null", O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(procstat_get(&b), 0);
	CU_ASSERT_EQUAL(b.open_fds, a.open_fds + 1);
	close(fd);
	CU_ASSERT(a.open_fds >= 3);
	CU_ASSERT_EQUAL(getrlimit(RLIMIT_NOFILE, &rl), 0);
	CU_ASSERT_EQUAL(a.max_fds, (uint64_t)rl.rlim_cur);
	CU_ASSERT(a.resident_memory_bytes > 0);
	CU_ASSERT(a.virtual_memory_bytes >= a.resident_memory_bytes);
	CU_ASSERT(a.cpu_seconds >= 0 && b.cpu_seconds >= a.cpu_seconds);
	CU_ASSERT(a.start_time <= (double)time(NULL) + 1);
	CU_ASSERT(a.start_time > 1.5e9);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("metrics_table", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "declarations", test_declarations) ||
	    !CU_add_test(s, "nfs3_proc_labels_match_the_table",
			 test_nfs3_proc_labels_match_the_table) ||
	    !CU_add_test(s, "render_service", test_render_service) ||
	    !CU_add_test(s, "render_double_counter", test_render_double_counter) ||
	    !CU_add_test(s, "render_arrays", test_render_arrays) ||
	    !CU_add_test(s, "add_rows", test_add_rows) ||
	    !CU_add_test(s, "procstat", test_procstat))
		return -1;
	return 0;
}
