/* SPDX-License-Identifier: MIT */
/*
 * httpget: the tests' HTTP/1.0 client for nfscached's metrics listener and
 * a lookup of one sample in the Prometheus text it serves. Plain sockets
 * and libc only, so any test program can use it (rawrpc.h's libtirpc and
 * nfsclient.h's libnfs headers do not mix).
 */
#ifndef NFSCACHED_TESTS_HTTPGET_H
#define NFSCACHED_TESTS_HTTPGET_H

/* Milliseconds the tests give one GET. */
#define HTTP_GET_TIMEOUT_MS 10000

/*
 * GET http://hostport/path (hostport "A.B.C.D:PORT") with HTTP/1.0 and
 * return the whole response (status line, headers, body) as a malloc'd
 * NUL-terminated string the caller frees, read until the server closes.
 * NULL if hostport does not parse, the connection fails, or the response
 * is not complete within timeout_ms milliseconds.
 */
char *http_get_raw(const char *hostport, const char *path, int timeout_ms);

/* As http_get_raw, but the body alone (malloc'd), and NULL as well when
 * the status is not 200. */
char *http_get(const char *hostport, const char *path, int timeout_ms);

/*
 * Move the proxy's test clock forward by seconds and fire its timers due by
 * then (POST /debug/clock/advance?seconds=S; the proxy must run with
 * NFSCACHED_TEST_CLOCK=1, docs/operations.md "Test clock"). The timers have
 * run when this returns; what they started (upstream calls) may still be in
 * flight. 0, or -1 if the proxy did not answer 200 within
 * HTTP_GET_TIMEOUT_MS.
 */
int http_clock_advance(const char *hostport, double seconds);

/*
 * The proxy's disk-tier test gate (/debug/disk/gate; the proxy must run
 * with NFSCACHED_TEST_CLOCK=1 and a cache_dir, docs/operations.md "Test
 * clock"): action "close" or "open" is POSTed, NULL only GETs the state.
 * Stores in *held the "held N" the answer gives (worker threads holding
 * disk work at the gate, 0..2). 0, or -1 if the proxy did not answer 200
 * within HTTP_GET_TIMEOUT_MS or the answer has no "held" line.
 */
int http_disk_gate(const char *hostport, const char *action, unsigned *held);

/*
 * Find series (a metric name with its labels exactly as rendered, e.g.
 * nfscached_upstream_rpcs_total{procedure="create"}) at the start of a line
 * of Prometheus text and store its value. A counter or histogram series
 * asked for without an export label that the page has per export (reads,
 * upstream calls, write-back) is the sum over the exports. Returns 0, or
 * -1 if the series is absent.
 */
int prom_sample(const char *text, const char *series, double *value);

#endif
