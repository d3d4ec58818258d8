/* SPDX-License-Identifier: MIT */
/*
 * conf_net: the address, network and URL syntax of nfscached's
 * configuration: IP literals, "ADDR:PORT" and "[IPV6]:PORT", client
 * networks "ADDR[/PREFIX]" and the match of a client address against them,
 * and upstream URLs "nfs://HOST/PATH?nfsport=N&mountport=M". conf.c's
 * directive checks call these; so does the daemon (client checks, the
 * metrics listener). Declared in conf.h.
 */
#include "conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int conf_parse_ip(const char *s, uint8_t addr[16])
{
	if (inet_pton(AF_INET, s, addr) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, addr) == 1)
		return AF_INET6;
	return -1;
}

/* Parse a port number of 1..5 digits within min..65535. */
static int parse_port(const char *s, size_t n, int min, int *out)
{
	int v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < min || v > 65535)
		return -1;
	*out = v;
	return 0;
}

int conf_parse_hostport(const char *s, char *addr, size_t addrlen,
			int *port, char *err, size_t errlen)
{
	const char *a = s, *colon;
	uint8_t bytes[16];
	size_t alen;
	int fam;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			goto bad_form;
		a = s + 1;
		alen = (size_t)(close - a);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad_form;
		alen = (size_t)(colon - s);
		if (memchr(s, ':', alen)) {
			snprintf(err, errlen, "\"%s\": write an IPv6 address "
				 "in brackets, [ADDR]:PORT", s);
			return -1;
		}
	}
	if (alen == 0 || alen >= addrlen || alen >= INET6_ADDRSTRLEN)
		goto bad_addr;
	memcpy(addr, a, alen);
	addr[alen] = '\0';
	fam = conf_parse_ip(addr, bytes);
	if (fam < 0 || (a != s && fam != AF_INET6))
		goto bad_addr;
	if (parse_port(colon + 1, strlen(colon + 1), 1, port) != 0) {
		snprintf(err, errlen, "\"%s\": port must be 1..65535", s);
		return -1;
	}
	return 0;
bad_form:
	snprintf(err, errlen, "\"%s\": expected ADDR:PORT or [IPV6]:PORT", s);
	return -1;
bad_addr:
	snprintf(err, errlen, "\"%s\": not an IPv4 or IPv6 address and port",
		 s);
	return -1;
}

/* True if addr has a bit set past the first prefix of its bits. */
static bool host_bits_set(const uint8_t *addr, unsigned prefix,
			  unsigned bits)
{
	for (unsigned i = prefix; i < bits; i++)
		if (addr[i / 8] & (0x80 >> (i % 8)))
			return true;
	return false;
}

/* The prefix length of the IPv4 netmask m ("255.255.0.0": 16), or -1 if
 * m is not an address or its ones are not contiguous (exports(5)'s
 * "address/netmask" form). */
static int netmask_prefix(const char *m, int *prefix)
{
	uint8_t b[16];
	uint32_t v;
	int ones = 0;

	if (inet_pton(AF_INET, m, b) != 1)
		return -1;
	v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | b[3];
	while (ones < 32 && (v & (0x80000000u >> ones)))
		ones++;
	if (ones < 32 && (v << ones) != 0)
		return -1;
	*prefix = ones;
	return 0;
}

int conf_parse_net(const char *s, struct conf_net *n, char *err,
		   size_t errlen)
{
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	char buf[INET6_ADDRSTRLEN];
	unsigned bits;
	int prefix;

	memset(n, 0, sizeof(*n));
	if (alen == 0 || alen >= sizeof(buf))
		goto bad_addr;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	n->family = conf_parse_ip(buf, n->addr);
	if (n->family < 0)
		goto bad_addr;
	bits = n->family == AF_INET ? 32 : 128;
	prefix = (int)bits;
	if (slash && n->family == AF_INET && strchr(slash + 1, '.')) {
		if (netmask_prefix(slash + 1, &prefix) != 0) {
			snprintf(err, errlen, "\"%s\": netmask must be "
				 "contiguous ones then zeros, as 255.255.0.0",
				 s);
			return -1;
		}
	} else if (slash && (parse_port(slash + 1, strlen(slash + 1), 0,
					&prefix) || prefix > (int)bits)) {
		snprintf(err, errlen, "\"%s\": prefix length must be 0..%u", s,
			 bits);
		return -1;
	}
	n->prefix = (unsigned)prefix;
	if (host_bits_set(n->addr, n->prefix, bits)) {
		snprintf(err, errlen, "\"%s\": address has bits set past the "
			 "/%u prefix", s, n->prefix);
		return -1;
	}
	if (n->family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)n->addr) &&
	    n->prefix >= 96) {
		/* ::ffff:a.b.c.d/p is the IPv4 network a.b.c.d/(p - 96). */
		memmove(n->addr, n->addr + 12, 4);
		memset(n->addr + 4, 0, 12);
		n->family = AF_INET;
		n->prefix -= 96;
	}
	return 0;
bad_addr:
	snprintf(err, errlen, "\"%s\": not an IPv4 or IPv6 address "
		 "(ADDR or ADDR/PREFIX)", s);
	return -1;
}

void conf_format_net(const struct conf_net *n, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	unsigned bits = n->family == AF_INET ? 32 : 128;

	inet_ntop(n->family, n->addr, a, sizeof(a));
	if (n->prefix == bits)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s/%u", a, n->prefix);
}

/* True if c may appear in a host name. */
static bool host_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* Parse the query of an upstream URL: nfsport, mountport and nlmport
 * (the upstream's lock manager, NLM v4), others ignored. */
static int url_query(const char *url, const char *q,
		     struct conf_upstream_url *u, char *err, size_t errlen)
{
	while (*q) {
		size_t n = strcspn(q, "&");
		const char *eq = memchr(q, '=', n);
		int *port = NULL;

		if (eq && (size_t)(eq - q) == 7 && strncmp(q, "nfsport", 7) == 0)
			port = &u->nfs_port;
		if (eq && (size_t)(eq - q) == 9 &&
		    strncmp(q, "mountport", 9) == 0)
			port = &u->mount_port;
		if (eq && (size_t)(eq - q) == 7 && strncmp(q, "nlmport", 7) == 0)
			port = &u->nlm_port;
		if (port && parse_port(eq + 1, n - (size_t)(eq + 1 - q), 0,
				       port) != 0) {
			snprintf(err, errlen, "\"%s\": %.*s must be a port "
				 "number 0..65535", url, (int)(eq - q), q);
			return -1;
		}
		q += n;
		if (*q == '&')
			q++;
	}
	return 0;
}

/* Check the character set of an upstream URL. */
static int url_chars(const char *url, char *err, size_t errlen)
{
	for (const char *p = url; *p; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			snprintf(err, errlen, "\"%s\": URL contains spaces or "
				 "control characters", url);
			return -1;
		}
		if (*p == '#') {
			snprintf(err, errlen, "\"%s\": '#' fragments are not "
				 "supported", url);
			return -1;
		}
	}
	if (strncmp(url, "nfs://", 6) != 0) {
		snprintf(err, errlen, "\"%s\": URL must start with nfs://", url);
		return -1;
	}
	return 0;
}

/* Split the server of an upstream URL off at p; return what follows. */
static const char *url_server(const char *url, const char *p,
			      struct conf_upstream_url *u, char *err,
			      size_t errlen)
{
	const char *host = p;
	uint8_t addr[16];
	size_t n;

	if (*p == '[') {
		const char *close = strchr(p, ']');

		host = p + 1;
		n = close ? (size_t)(close - host) : 0;
		u->server = close ? strndup(host, n) : NULL;
		if (!u->server || inet_pton(AF_INET6, u->server, addr) != 1) {
			snprintf(err, errlen, "\"%s\": bad IPv6 address in "
				 "brackets", url);
			return NULL;
		}
		return close + 1;
	}
	for (n = 0; host_char(host[n]); n++)
		;
	if (n == 0 && strchr("/?", host[0])) {	/* also matches '\0' */
		snprintf(err, errlen, "\"%s\": missing server name", url);
		return NULL;
	}
	if (n == 0 || !strchr("/?:", host[n])) {
		snprintf(err, errlen, "\"%s\": bad server name", url);
		return NULL;
	}
	u->server = strndup(host, n);
	if (!u->server) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return host + n;
}

int conf_parse_upstream_url(const char *url, struct conf_upstream_url *u,
			    char *err, size_t errlen)
{
	const char *p;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (url_chars(url, err, errlen) != 0)
		return -1;
	p = url_server(url, url + 6, u, err, errlen);
	if (!p)
		goto fail;
	if (*p == ':') {
		snprintf(err, errlen, "\"%s\": give ports in the query "
			 "(?nfsport=N&mountport=M), not after the server", url);
		goto fail;
	}
	if (*p != '/') {
		snprintf(err, errlen, "\"%s\": missing export path "
			 "(nfs://HOST/PATH)", url);
		goto fail;
	}
	n = strcspn(p, "?");
	u->path = strndup(p, n);
	if (!u->path) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (p[n] == '?' && url_query(url, p + n + 1, u, err, errlen) != 0)
		goto fail;
	return 0;
fail:
	conf_upstream_url_clear(u);
	return -1;
}

void conf_upstream_url_clear(struct conf_upstream_url *u)
{
	free(u->server);
	free(u->path);
	memset(u, 0, sizeof(*u));
}
