/* SPDX-License-Identifier: MIT */
/*
 * tcheck: the integration tests' one formatted assertion and their one
 * reader of the proxy's /metrics. CUnit and libc only, so that every test
 * program can use it (libnfs's nfsclient.h and libtirpc's rawrpc.h do not
 * mix). CHECK*, WB_* and EXPECT in the other helpers expand to these.
 */
#ifndef NFSCACHED_TESTS_TCHECK_H
#define NFSCACHED_TESTS_TCHECK_H

#include <stdbool.h>
#include <stdint.h>

/* Milliseconds tmetrics_get gives one GET /metrics, unless
 * NFSC_METRICS_TIMEOUT_MS says otherwise (the ThreadSanitizer tree: one
 * loop turn of integration.buffer_budget's flood takes 25-30 s there). A
 * hang guard, not a speed claim. */
#define TMETRICS_TIMEOUT_MS 30000

/*
 * Record one CUnit assertion at file:line: passed if ok, else failed with
 * the printf-style message, which is also printed to stderr as
 * "FAIL file:line: message" (CUnit prints its failures only at the end).
 */
void tcheck(bool ok, const char *file, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* tcheck(a == b) with both expressions (sa, sb) and values in the message. */
void tcheck_eq(uint64_t a, uint64_t b, const char *sa, const char *sb,
	       const char *file, unsigned line);

/* Assertions recorded so far by tcheck, and how many failed. */
unsigned tcheck_total(void);
unsigned tcheck_failed(void);

/* Print "PROG: N assertions evaluated, F failed" at exit (prog is kept,
 * not copied). */
void tcheck_report_at_exit(const char *prog);

/*
 * GET http://$NFSC_METRICS_ADDR/metrics: the body (malloc'd, NUL-terminated;
 * the caller frees it), or NULL after recording a failed assertion that
 * says why (NFSC_METRICS_ADDR unset, no 200 answer within
 * TMETRICS_TIMEOUT_MS or NFSC_METRICS_TIMEOUT_MS). A test that cannot read
 * the metrics fails.
 */
char *tmetrics_get(void);

/*
 * Advance the proxy's test clock by secs seconds and fire its timers due
 * by then (http_clock_advance on NFSC_METRICS_ADDR; the proxy runs with
 * NFSCACHED_TEST_CLOCK=1, which the ctest entry sets). Returns 0, or -1
 * after recording a failed assertion.
 */
int tclock_advance(double secs);

/*
 * Close ("close"), open ("open") or only read (NULL) the proxy's disk-tier
 * test gate (http_disk_gate on NFSC_METRICS_ADDR; the proxy runs with
 * NFSCACHED_TEST_CLOCK=1 and a cache_dir). Returns how many of its worker
 * threads hold disk work at the gate now (0..2), or -1 after recording a
 * failed assertion.
 */
int tdisk_gate(const char *action);

/*
 * The value of series (name and labels exactly as rendered) in text (a
 * tmetrics_get body). -1 if text is NULL, or (after recording a failed
 * assertion naming it) if the page lacks series. Every series nfscached exports is
 * always on the page (0 until it counts), so an absent one is a test bug.
 */
double tmetrics_value(const char *text, const char *series);

#endif
