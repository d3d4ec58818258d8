/* SPDX-License-Identifier: MIT */
/* tcheck: see tcheck.h. */
#include "tcheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/CUnit.h>

#include "httpget.h"

static unsigned checks_total, checks_failed;
static const char *checks_prog = "test";

void tcheck(bool ok, const char *file, unsigned line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	checks_total++;
	if (ok) {
		CU_assertImplementation(CU_TRUE, line, "", file, "", CU_FALSE);
		return;
	}
	checks_failed++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nFAIL %s:%u: %s\n", file, line, msg);
	CU_assertImplementation(CU_FALSE, line, msg, file, "", CU_FALSE);
}

void tcheck_eq(uint64_t a, uint64_t b, const char *sa, const char *sb,
	       const char *file, unsigned line)
{
	tcheck(a == b, file, line, "%s == %s (%llu != %llu)", sa, sb,
	       (unsigned long long)a, (unsigned long long)b);
}

unsigned tcheck_total(void)
{
	return checks_total;
}

unsigned tcheck_failed(void)
{
	return checks_failed;
}

/* Print the check counts (atexit handler). */
static void checks_report(void)
{
	printf("%s: %u assertions evaluated, %u failed\n", checks_prog,
	       checks_total, checks_failed);
	fflush(stdout);
}

void tcheck_report_at_exit(const char *prog)
{
	checks_prog = prog;
	atexit(checks_report);
}

char *tmetrics_get(void)
{
	const char *addr = getenv("NFSC_METRICS_ADDR");
	const char *env = getenv("NFSC_METRICS_TIMEOUT_MS");
	int ms = env && atoi(env) > 0 ? atoi(env) : TMETRICS_TIMEOUT_MS;
	char *text = addr ? http_get(addr, "/metrics", ms) : NULL;

	if (!addr)
		tcheck(false, __FILE__, __LINE__, "NFSC_METRICS_ADDR is unset");
	else if (!text)
		tcheck(false, __FILE__, __LINE__,
		       "GET http://%s/metrics: no 200 answer within %d ms", addr,
		       ms);
	return text;
}

int tclock_advance(double secs)
{
	const char *addr = getenv("NFSC_METRICS_ADDR");

	if (addr && http_clock_advance(addr, secs) == 0)
		return 0;
	tcheck(false, __FILE__, __LINE__, "advancing the proxy's clock %.3f s "
	       "at %s failed (is NFSCACHED_TEST_CLOCK=1 set?)", secs,
	       addr ? addr : "(NFSC_METRICS_ADDR unset)");
	return -1;
}

int tdisk_gate(const char *action)
{
	const char *addr = getenv("NFSC_METRICS_ADDR");
	unsigned held;

	if (addr && http_disk_gate(addr, action, &held) == 0)
		return (int)held;
	tcheck(false, __FILE__, __LINE__, "%s the proxy's disk gate at %s failed "
	       "(are NFSCACHED_TEST_CLOCK=1 and cache_dir set?)",
	       action ? action : "reading", addr ? addr : "(NFSC_METRICS_ADDR unset)");
	return -1;
}

double tmetrics_value(const char *text, const char *series)
{
	double v;

	if (!text)
		return -1;	/* tmetrics_get recorded the failure */
	if (prom_sample(text, series, &v) == 0)
		return v;
	tcheck(false, __FILE__, __LINE__, "%s is not on the metrics page", series);
	return -1;
}
