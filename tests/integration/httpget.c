/* SPDX-License-Identifier: MIT */
/* httpget: see httpget.h. */
#define _GNU_SOURCE		/* memmem */
#include "httpget.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Monotonic milliseconds. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Connect a TCP socket to "A.B.C.D:PORT"; an fd or -1. */
static int connect_hostport(const char *hostport)
{
	struct sockaddr_in sin;
	char host[64];
	const char *colon = strrchr(hostport, ':');
	size_t hl;
	int fd;

	if (!colon || (hl = (size_t)(colon - hostport)) >= sizeof(host))
		return -1;
	memcpy(host, hostport, hl);
	host[hl] = '\0';
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send all of buf; 0 or -1. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read fd to EOF within timeout_ms into a malloc'd NUL-terminated string,
 * or NULL. */
static char *recv_all(int fd, int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	size_t have = 0, cap = 65536;
	char *buf = malloc(cap), *nb;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (buf) {
		int64_t left = deadline - mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			goto fail;
		if (have + 1 >= cap) {
			if (!(nb = realloc(buf, cap * 2)))
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + have, cap - have - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	if (buf)
		buf[have] = '\0';
	return buf;
fail:
	free(buf);
	return NULL;
}

/* Send "METHOD path HTTP/1.0" (no body) to hostport; the whole response
 * (malloc'd) or NULL. */
static char *http_request_raw(const char *method, const char *hostport,
			      const char *path, int timeout_ms)
{
	char req[512], *resp = NULL;
	int fd, n;

	fd = connect_hostport(hostport);
	if (fd < 0)
		return NULL;
	n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: %s\r\n"
		     "Content-Length: 0\r\nConnection: close\r\n\r\n", method,
		     path, hostport);
	if (n > 0 && (size_t)n < sizeof(req) &&
	    send_all(fd, req, (size_t)n) == 0)
		resp = recv_all(fd, timeout_ms);
	close(fd);
	return resp;
}

/* The body of resp (malloc'd) if its status is 200, else NULL; frees resp. */
static char *body_if_200(char *resp)
{
	char *body = NULL;
	const char *sep;

	if (!resp)
		return NULL;
	sep = strstr(resp, "\r\n\r\n");
	if (strncmp(resp, "HTTP/1.", 7) == 0 && strncmp(resp + 8, " 200", 4) == 0 &&
	    sep)
		body = strdup(sep + 4);
	free(resp);
	return body;
}

char *http_get_raw(const char *hostport, const char *path, int timeout_ms)
{
	return http_request_raw("GET", hostport, path, timeout_ms);
}

char *http_get(const char *hostport, const char *path, int timeout_ms)
{
	return body_if_200(http_request_raw("GET", hostport, path, timeout_ms));
}

int http_clock_advance(const char *hostport, double seconds)
{
	char path[128], *body;

	snprintf(path, sizeof(path), "/debug/clock/advance?seconds=%.6f", seconds);
	body = body_if_200(http_request_raw("POST", hostport, path,
					    HTTP_GET_TIMEOUT_MS));
	if (!body)
		return -1;
	free(body);
	return 0;
}

int http_disk_gate(const char *hostport, const char *action, unsigned *held)
{
	char path[128], *body;
	double v;
	int rc = -1;

	snprintf(path, sizeof(path), "/debug/disk/gate%s%s",
		 action ? "?action=" : "", action ? action : "");
	body = body_if_200(http_request_raw(action ? "POST" : "GET", hostport,
					    path, HTTP_GET_TIMEOUT_MS));
	/* "gate closed\nheld N\n": a name and a value per line, as the
	 * metrics page. */
	if (body && prom_sample(body, "held", &v) == 0 && v >= 0) {
		*held = (unsigned)v;
		rc = 0;
	}
	free(body);
	return rc;
}

/* True if the series name line[0..len) is want once its export label is
 * taken out ("a{export="/x",b="1"}" is "a{b="1"}", "a{export="/x"}" is
 * "a"). */
static bool same_but_export(const char *line, size_t len, const char *want,
			    size_t wl)
{
	const char *ex = memmem(line, len, "export=\"", 8), *q, *end;
	char buf[1024];
	size_t n = 0, head;

	if (!ex || len >= sizeof(buf))
		return false;
	q = memchr(ex + 8, '"', len - (size_t)(ex + 8 - line));
	if (!q)
		return false;
	end = q + 1;
	if (end < line + len && *end == ',')
		end++;
	head = (size_t)(ex - line);
	memcpy(buf, line, head);
	n = head;
	memcpy(buf + n, end, (size_t)(line + len - end));
	n += (size_t)(line + len - end);
	if (n >= 2 && buf[n - 1] == '}' && buf[n - 2] == ',') {
		buf[n - 2] = '}';
		n--;
	}
	if (n >= 2 && buf[n - 1] == '}' && buf[n - 2] == '{')
		n -= 2;
	return n == wl && memcmp(buf, want, wl) == 0;
}

/* True if the family of the series line[0..sp) is a counter or a
 * histogram's part (_total, _bucket, _sum, _count): what sums over
 * exports. */
static bool summable(const char *line, const char *sp)
{
	static const char *const ends[] = { "_total", "_bucket", "_sum",
					    "_count" };
	const char *b = memchr(line, '{', (size_t)(sp - line));
	size_t n = (size_t)((b ? b : sp) - line);

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t e = strlen(ends[i]);

		if (n >= e && memcmp(line + n - e, ends[i], e) == 0)
			return true;
	}
	return false;
}

int prom_sample(const char *text, const char *series, double *value)
{
	size_t sl = strlen(series);
	const char *line = text, *stop;
	bool by_export = !strstr(series, "export=\""), found = false;
	double sum = 0;
	char *end;

	if (!text)
		return -1;
	/* memchr over a length measured once: strchr from each line would
	 * scan the rest of the page per line under ASan's
	 * strict_string_checks, which made one lookup quadratic in the
	 * page's size (minutes per ct_print_deltas). */
	stop = text + strlen(text);
	while (line < stop) {
		const char *nl = memchr(line, '\n', (size_t)(stop - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(stop - line);
		const char *sp = memchr(line, ' ', len);

		if (len > sl && line[sl] == ' ' && memcmp(line, series, sl) == 0) {
			*value = strtod(line + sl + 1, &end);
			if (end != line + sl + 1)
				return 0;
		}
		/* A counter or histogram series of a family per export,
		 * asked for without the export label: the sum over the
		 * exports. */
		if (by_export && sp && line[0] != '#' && summable(line, sp) &&
		    same_but_export(line, (size_t)(sp - line), series, sl)) {
			double v = strtod(sp + 1, &end);

			if (end != sp + 1) {
				sum += v;
				found = true;
			}
		}
		line += len + 1;
	}
	if (!found)
		return -1;
	*value = sum;
	return 0;
}
