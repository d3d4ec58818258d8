/* SPDX-License-Identifier: MIT */
/*
 * conf_client: an export's clients entries, exports(5) style: "SPEC" or
 * "SPEC(OPT,...)", SPEC an address, a network, a host name, a wildcard or
 * a netgroup ("@NAME");
 * their parse, format and comparison, the resolution of host names to
 * addresses (at start and at reload), and the match of one client against
 * a list in exports(5)'s order of precedence (netgroup membership given
 * by the caller: conf/ never calls innetgr). Declared in conf.h.
 *
 * Invariants of a struct conf_client: kind HOST or NET with name NULL has
 * family AF_INET or AF_INET6 and no bit set past prefix; kind HOST with a
 * name has family 0 and its addresses in addrs (none before
 * conf_clients_resolve, or when the name did not resolve); kind WILDCARD
 * has family 0, a name holding '*' or '?', no addrs; kind NETGROUP has
 * family 0, a name "@NAME" (NAME not empty), no addrs; set only has
 * CONF_OPT_* bits.
 */
#define _GNU_SOURCE		/* FNM_CASEFOLD */
#include "conf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <fnmatch.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One option word of an entry: its name, the bit it sets, its value. */
struct opt_word {
	const char *name;
	unsigned bit;
	bool value;		/* for the boolean options */
};

static const struct opt_word opt_words[] = {
	{ "rw", CONF_OPT_READ_ONLY, false },
	{ "ro", CONF_OPT_READ_ONLY, true },
	{ "root_squash", CONF_OPT_ROOT_SQUASH, true },
	{ "no_root_squash", CONF_OPT_ROOT_SQUASH, false },
	{ "all_squash", CONF_OPT_ALL_SQUASH, true },
	{ "no_all_squash", CONF_OPT_ALL_SQUASH, false },
	{ "secure", CONF_OPT_SECURE, true },
	{ "insecure", CONF_OPT_SECURE, false },
};

#define NWORDS (sizeof(opt_words) / sizeof(opt_words[0]))
#define OPT_LIST "rw, ro, root_squash, no_root_squash, all_squash, " \
	"no_all_squash, secure, insecure, anonuid=N, anongid=N; accepted " \
	"and ignored: sync, async, subtree_check, no_subtree_check, " \
	"wdelay, no_wdelay, hide, nohide, crossmnt, fsid=ID"

/*
 * exports(5) words that knfsd takes and nfscached accepts without effect,
 * each with what nfscached does instead (the warning at start and reload).
 * A word ending in '=' takes any non-empty value.
 */
static const struct ignored_word {
	const char *name;
	const char *instead;
} ignored_words[] = {
	{ "sync", "a WRITE is stable when its stable_how or a COMMIT says "
	  "so (upstream, or in the journal with commit = \"local\")" },
	{ "async", "a COMMIT is answered only once its data is durable "
	  "(upstream, or in the journal with commit = \"local\")" },
	{ "subtree_check", "every handle carries its export id and an "
	  "authenticator; there is no subtree check" },
	{ "no_subtree_check", "every handle carries its export id and an "
	  "authenticator; there is no subtree check" },
	{ "wdelay", "write-back is paced by writeback_delay and dirty_limit" },
	{ "no_wdelay", "write-back is paced by writeback_delay and "
	  "dirty_limit" },
	{ "hide", "file systems below the upstream export are served as the "
	  "upstream serves them" },
	{ "nohide", "file systems below the upstream export are served as "
	  "the upstream serves them" },
	{ "crossmnt", "file systems below the upstream export are served as "
	  "the upstream serves them" },
	{ "fsid=", "the export's id directive numbers it in handles" },
};

#define NIGNORED (sizeof(ignored_words) / sizeof(ignored_words[0]))

/* The index of the ignored word w[0..n) in ignored_words, or -1. */
static int ignored_find(const char *w, size_t n)
{
	for (size_t i = 0; i < NIGNORED; i++) {
		size_t k = strlen(ignored_words[i].name);

		if (ignored_words[i].name[k - 1] == '='
		    ? n > k && memcmp(w, ignored_words[i].name, k) == 0
		    : n == k && memcmp(w, ignored_words[i].name, k) == 0)
			return (int)i;
	}
	return -1;
}

/* The boolean field of a that bit names. */
static bool *opt_field(struct conf_access *a, unsigned bit)
{
	switch (bit) {
	case CONF_OPT_READ_ONLY:
		return &a->read_only;
	case CONF_OPT_ROOT_SQUASH:
		return &a->root_squash;
	case CONF_OPT_ALL_SQUASH:
		return &a->all_squash;
	default:
		return &a->secure;
	}
}

/* The value of the boolean option bit in a. */
static bool opt_get(const struct conf_access *a, unsigned bit)
{
	switch (bit) {
	case CONF_OPT_READ_ONLY:
		return a->read_only;
	case CONF_OPT_ROOT_SQUASH:
		return a->root_squash;
	case CONF_OPT_ALL_SQUASH:
		return a->all_squash;
	default:
		return a->secure;
	}
}

/* Parse N of "anonuid=N" (1..10 digits, at most 2^32 - 1). */
static int parse_id(const char *s, size_t n, uint32_t *out)
{
	unsigned long long v = 0;

	if (n == 0 || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 4294967295ull)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Apply the option word w[0..n) of entry s to cl. */
static int parse_opt(const char *s, const char *w, size_t n,
		     struct conf_client *cl, char *err, size_t errlen)
{
	for (size_t i = 0; i < NWORDS; i++)
		if (strlen(opt_words[i].name) == n &&
		    memcmp(opt_words[i].name, w, n) == 0) {
			cl->set |= opt_words[i].bit;
			*opt_field(&cl->opt, opt_words[i].bit) =
				opt_words[i].value;
			return 0;
		}
	if (n > 8 && (memcmp(w, "anonuid=", 8) == 0 ||
		      memcmp(w, "anongid=", 8) == 0)) {
		bool uid = w[4] == 'u';

		if (parse_id(w + 8, n - 8, uid ? &cl->opt.anonuid
					       : &cl->opt.anongid) != 0) {
			snprintf(err, errlen, "\"%s\": %.*s must be a number "
				 "0..4294967295", s, 7, w);
			return -1;
		}
		cl->set |= uid ? CONF_OPT_ANONUID : CONF_OPT_ANONGID;
		return 0;
	}
	if (ignored_find(w, n) >= 0) {
		cl->ignored |= 1u << ignored_find(w, n);
		return 0;
	}
	snprintf(err, errlen, "\"%s\": unknown option \"%.*s\" (options: "
		 OPT_LIST ")", s, (int)n, w);
	return -1;
}

/* Parse the options o (the text between the parentheses) of entry s. */
static int parse_opts(const char *s, const char *o, size_t olen,
		      struct conf_client *cl, char *err, size_t errlen)
{
	size_t i = 0;

	if (olen == 0) {
		snprintf(err, errlen, "\"%s\": empty option list; write the "
			 "entry without parentheses", s);
		return -1;
	}
	while (i <= olen) {
		size_t n = 0;

		while (i + n < olen && o[i + n] != ',')
			n++;
		if (n == 0) {
			snprintf(err, errlen, "\"%s\": empty option between "
				 "commas", s);
			return -1;
		}
		if (parse_opt(s, o + i, n, cl, err, errlen) != 0)
			return -1;
		i += n + 1;
	}
	return 0;
}

/* True if c may appear in a host name or, with wild, in a pattern. */
static bool name_char(char c, bool wild)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' ||
	       c == '_' || (wild && (c == '*' || c == '?'));
}

/* Store the netgroup SPEC buf[0..n) ("@name") of entry s into cl. */
static int parse_netgroup(const char *s, const char *buf, size_t n,
			  struct conf_client *cl, char *err, size_t errlen)
{
	size_t i;

	for (i = 1; i < n && name_char(buf[i], false); i++)
		;
	if (n < 2 || i < n) {
		snprintf(err, errlen, "\"%s\": a netgroup is \"@NAME\", NAME "
			 "of letters, digits, '.', '-' and '_'", s);
		return -1;
	}
	cl->name = strdup(buf);
	if (!cl->name) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cl->kind = CONF_CLIENT_NETGROUP;
	return 0;
}

/* Classify and store the SPEC spec[0..n) of entry s into cl. */
static int parse_spec(const char *s, const char *spec, size_t n,
		      struct conf_client *cl, char *err, size_t errlen)
{
	char buf[256];
	struct conf_net net;
	bool wild;
	size_t i;

	if (n == 0 || n >= sizeof(buf)) {
		snprintf(err, errlen, "\"%s\": expected an address, "
			 "ADDR/PREFIX, a host name or a wildcard", s);
		return -1;
	}
	memcpy(buf, spec, n);
	buf[n] = '\0';
	wild = strpbrk(buf, "*?") != NULL;
	if (!wild && (strpbrk(buf, ":/") ||
		      strspn(buf, "0123456789.") == n)) {
		if (conf_parse_net(buf, &net, err, errlen) != 0)
			return -1;
		cl->family = net.family;
		memcpy(cl->addr, net.addr, sizeof(cl->addr));
		cl->prefix = net.prefix;
		cl->kind = net.prefix == (net.family == AF_INET ? 32u : 128u)
			   ? CONF_CLIENT_HOST : CONF_CLIENT_NET;
		return 0;
	}
	if (buf[0] == '@')
		return parse_netgroup(s, buf, n, cl, err, errlen);
	for (i = 0; i < n && name_char(buf[i], wild); i++)
		;
	if (i < n || buf[0] == '-' || buf[0] == '.') {
		snprintf(err, errlen, "\"%s\": \"%s\" is not an address, a "
			 "network, a host name or a wildcard", s, buf);
		return -1;
	}
	cl->name = strdup(buf);
	if (!cl->name) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cl->kind = wild ? CONF_CLIENT_WILDCARD : CONF_CLIENT_HOST;
	return 0;
}

int conf_parse_client(const char *s, struct conf_client *cl, char *err,
		      size_t errlen)
{
	const char *open = strchr(s, '(');
	size_t len = strlen(s);

	memset(cl, 0, sizeof(*cl));
	if (open && (len < 2 || s[len - 1] != ')' ||
		     memchr(open + 1, '(', (size_t)(s + len - 1 - open - 1)) ||
		     memchr(open + 1, ')', (size_t)(s + len - 1 - open - 1)))) {
		snprintf(err, errlen, "\"%s\": options go in one pair of "
			 "parentheses at the end, SPEC(OPT,...)", s);
		return -1;
	}
	if (!open && strchr(s, ')')) {
		snprintf(err, errlen, "\"%s\": ')' without '('", s);
		return -1;
	}
	if (strpbrk(s, " \t")) {
		snprintf(err, errlen, "\"%s\": one client per entry, with no "
			 "spaces (write {\"A\", \"B(ro)\"})", s);
		return -1;
	}
	if (parse_spec(s, s, open ? (size_t)(open - s) : len, cl, err,
		       errlen) != 0)
		return -1;
	if (open && parse_opts(s, open + 1, (size_t)(s + len - 1 - open - 1),
			       cl, err, errlen) != 0) {
		conf_client_clear(cl);
		return -1;
	}
	return 0;
}

/* Append the option words of cl to buf[used..len). */
static void format_opts(const struct conf_client *cl, char *buf, size_t len)
{
	size_t used = strlen(buf);
	const char *sep = "(";

	for (size_t i = 0; i < NWORDS; i += 2) {
		unsigned bit = opt_words[i].bit;
		bool v = opt_get(&cl->opt, bit);

		if (!(cl->set & bit) || used >= len)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", sep,
					 opt_words[opt_words[i].value == v
						   ? i : i + 1].name);
		sep = ",";
	}
	if ((cl->set & CONF_OPT_ANONUID) && used < len) {
		used += (size_t)snprintf(buf + used, len - used, "%sanonuid=%u",
					 sep, cl->opt.anonuid);
		sep = ",";
	}
	if ((cl->set & CONF_OPT_ANONGID) && used < len) {
		used += (size_t)snprintf(buf + used, len - used, "%sanongid=%u",
					 sep, cl->opt.anongid);
		sep = ",";
	}
	if (cl->set && used < len)
		snprintf(buf + used, len - used, ")");
}

void conf_format_client(const struct conf_client *cl, char *buf, size_t len)
{
	struct conf_net n = { .family = cl->family, .prefix = cl->prefix };

	if (len == 0)
		return;
	if (cl->name) {
		snprintf(buf, len, "%s", cl->name);
	} else {
		memcpy(n.addr, cl->addr, sizeof(n.addr));
		conf_format_net(&n, buf, len);
	}
	format_opts(cl, buf, len);
}

bool conf_client_same_spec(const struct conf_client *a,
			   const struct conf_client *b)
{
	return a->kind == b->kind && a->family == b->family &&
	       a->prefix == b->prefix &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0 &&
	       !a->name == !b->name &&
	       (!a->name || (a->kind == CONF_CLIENT_NETGROUP
			     ? strcmp(a->name, b->name)
			     : strcasecmp(a->name, b->name)) == 0);
}

bool conf_client_equal(const struct conf_client *a,
		       const struct conf_client *b)
{
	unsigned s = a->set;

	if (!conf_client_same_spec(a, b) || a->set != b->set)
		return false;
	return (!(s & CONF_OPT_READ_ONLY) ||
		a->opt.read_only == b->opt.read_only) &&
	       (!(s & CONF_OPT_ROOT_SQUASH) ||
		a->opt.root_squash == b->opt.root_squash) &&
	       (!(s & CONF_OPT_ALL_SQUASH) ||
		a->opt.all_squash == b->opt.all_squash) &&
	       (!(s & CONF_OPT_SECURE) || a->opt.secure == b->opt.secure) &&
	       (!(s & CONF_OPT_ANONUID) || a->opt.anonuid == b->opt.anonuid) &&
	       (!(s & CONF_OPT_ANONGID) || a->opt.anongid == b->opt.anongid);
}

void conf_client_clear(struct conf_client *cl)
{
	free(cl->name);
	free(cl->addrs);
	memset(cl, 0, sizeof(*cl));
}

/* True if the first prefix bits of a and b are equal. */
static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

int conf_sockaddr_ip(const struct sockaddr *sa, const uint8_t **addr)
{
	if (sa && sa->sa_family == AF_INET) {
		*addr = (const uint8_t *)
			&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		return AF_INET;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 =
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			*addr = a6->s6_addr + 12;
			return AF_INET;
		}
		*addr = a6->s6_addr;
		return AF_INET6;
	}
	return 0;
}

/* True if the address family/addr is one cl names (HOST or NET). */
static bool addr_matches(const struct conf_client *cl, int family,
			 const uint8_t *addr)
{
	if (!cl->name)
		return cl->family == family &&
		       prefix_match(cl->addr, addr, cl->prefix);
	for (size_t i = 0; i < cl->naddrs; i++)
		if (cl->addrs[i].family == family &&
		    prefix_match(cl->addrs[i].addr, addr, cl->addrs[i].prefix))
			return true;
	return false;
}

/* e's defaults with cl's options (cl may be NULL) applied, into *acc. */
static void access_of(const struct conf_export *e,
		      const struct conf_client *cl, struct conf_access *acc)
{
	acc->read_only = e->read_only;
	acc->root_squash = e->root_squash;
	acc->all_squash = e->all_squash;
	acc->secure = e->secure;
	acc->anonuid = e->anonuid;
	acc->anongid = e->anongid;
	if (!cl)
		return;
	for (size_t i = 0; i < NWORDS; i += 2)
		if (cl->set & opt_words[i].bit)
			*opt_field(acc, opt_words[i].bit) =
				opt_get(&cl->opt, opt_words[i].bit);
	if (cl->set & CONF_OPT_ANONUID)
		acc->anonuid = cl->opt.anonuid;
	if (cl->set & CONF_OPT_ANONGID)
		acc->anongid = cl->opt.anongid;
}

/* The passes of conf_client_match, in exports(5)'s precedence: single
 * hosts, networks, wildcards, netgroups, then "*" alone (anonymous). */
enum match_pass {
	PASS_HOST,
	PASS_NET,
	PASS_WILDCARD,
	PASS_NETGROUP,
	PASS_ANYONE,
	PASS_COUNT
};

/* The pass in which cl is tried. */
static enum match_pass pass_of(const struct conf_client *cl)
{
	switch (cl->kind) {
	case CONF_CLIENT_HOST:
		return PASS_HOST;
	case CONF_CLIENT_NET:
		return PASS_NET;
	case CONF_CLIENT_NETGROUP:
		return PASS_NETGROUP;
	default:
		return strcmp(cl->name, "*") == 0 ? PASS_ANYONE
						  : PASS_WILDCARD;
	}
}

/* True if groups (NULL-terminated, may be NULL) holds the netgroup of
 * "@group". */
static bool in_groups(const char *const *groups, const char *at_group)
{
	for (; groups && *groups; groups++)
		if (strcmp(*groups, at_group + 1) == 0)
			return true;
	return false;
}

/* Whether cl matches the client (family/addr, name, groups): 1 yes, 0 no,
 * -1 not known yet (cl needs the name, or the membership, and name is
 * NULL). */
static int entry_hits(const struct conf_client *cl, int family,
		      const uint8_t *addr, const char *name,
		      const char *const *groups)
{
	switch (pass_of(cl)) {
	case PASS_HOST:
	case PASS_NET:
		return addr_matches(cl, family, addr);
	case PASS_ANYONE:
		return 1;
	case PASS_WILDCARD:
		if (!name)
			return -1;
		return fnmatch(cl->name, name, FNM_CASEFOLD) == 0;
	default:
		if (!name)
			return -1;
		return in_groups(groups, cl->name);
	}
}

enum conf_match conf_client_match(const struct conf_export *e,
				  const struct sockaddr *sa, const char *name,
				  const char *const *groups,
				  struct conf_access *acc)
{
	const uint8_t *addr = NULL;
	int family = conf_sockaddr_ip(sa, &addr);
	bool need_name = false;

	if (e->nclients == 0) {
		access_of(e, NULL, acc);
		return CONF_MATCH_YES;
	}
	if (!family)
		return CONF_MATCH_NO;
	for (int pass = PASS_HOST; pass < PASS_COUNT; pass++)
		for (size_t i = 0; i < e->nclients; i++) {
			const struct conf_client *cl = &e->clients[i];
			int hit;

			if ((int)pass_of(cl) != pass)
				continue;
			hit = entry_hits(cl, family, addr, name, groups);
			if (hit < 0)
				need_name = true;
			/* An entry before it that is not decided yet may be
			 * the one that applies. */
			if (hit > 0 && need_name)
				return CONF_MATCH_NEED_NAME;
			if (hit > 0) {
				access_of(e, cl, acc);
				return CONF_MATCH_YES;
			}
		}
	return need_name ? CONF_MATCH_NEED_NAME : CONF_MATCH_NO;
}

bool conf_needs_client_names(const struct conf *c)
{
	for (size_t i = 0; i < c->nexports; i++)
		for (size_t j = 0; j < c->exports[i].nclients; j++) {
			const struct conf_client *cl = &c->exports[i].clients[j];

			if (cl->kind == CONF_CLIENT_NETGROUP ||
			    (cl->kind == CONF_CLIENT_WILDCARD &&
			     strcmp(cl->name, "*") != 0))
				return true;
		}
	return false;
}

/* True if the first n entries of names hold name. */
static bool names_hold(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

char **conf_netgroups(const struct conf *c)
{
	size_t n = 0, max = 0;
	char **names;

	for (size_t i = 0; i < c->nexports; i++)
		max += c->exports[i].nclients;
	names = calloc(max + 1, sizeof(*names));
	if (!names)
		return NULL;
	for (size_t i = 0; i < c->nexports; i++)
		for (size_t j = 0; j < c->exports[i].nclients; j++) {
			const struct conf_client *cl = &c->exports[i].clients[j];

			if (cl->kind != CONF_CLIENT_NETGROUP ||
			    names_hold(names, n, cl->name + 1))
				continue;
			names[n] = strdup(cl->name + 1);
			if (!names[n]) {
				conf_strv_free(names);
				return NULL;
			}
			n++;
		}
	return names;
}

void conf_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Resolve cl's host name into cl->addrs. 0, or an EAI_* error. */
static int resolve_one(struct conf_client *cl)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL, *ai;
	size_t n = 0;
	int rc;

	free(cl->addrs);
	cl->addrs = NULL;
	cl->naddrs = 0;
	rc = getaddrinfo(cl->name, NULL, &hints, &res);
	if (rc != 0)
		return rc;
	for (ai = res; ai; ai = ai->ai_next)
		n++;
	cl->addrs = calloc(n ? n : 1, sizeof(*cl->addrs));
	if (!cl->addrs) {
		freeaddrinfo(res);
		return EAI_MEMORY;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct conf_net *a = &cl->addrs[cl->naddrs];
		const uint8_t *bytes;

		a->family = conf_sockaddr_ip(ai->ai_addr, &bytes);
		if (!a->family)
			continue;
		a->prefix = a->family == AF_INET ? 32 : 128;
		memcpy(a->addr, bytes, a->family == AF_INET ? 4 : 16);
		cl->naddrs++;
	}
	freeaddrinfo(res);
	return cl->naddrs ? 0 : EAI_NONAME;
}

unsigned conf_clients_resolve(struct conf *c,
			      void (*warn)(void *arg, const char *msg),
			      void *arg)
{
	unsigned bad = 0;
	char msg[CONF_ERR_MAX];

	for (size_t i = 0; i < c->nexports; i++)
		for (size_t j = 0; j < c->exports[i].nclients; j++) {
			struct conf_client *cl = &c->exports[i].clients[j];
			int rc;

			if (cl->kind != CONF_CLIENT_HOST || !cl->name)
				continue;
			rc = resolve_one(cl);
			if (rc == 0)
				continue;
			bad++;
			conf_error(msg, sizeof(msg), c->source,
				   c->exports[i].clients_line ?
				   c->exports[i].clients_line : c->exports[i].line,
				   "clients entry \"%s\": "
				   "%s; it matches no client", cl->name,
				   gai_strerror(rc));
			if (warn)
				warn(arg, msg);
		}
	return bad;
}

void conf_clients_warn_ignored(const struct conf *c,
			       void (*warn)(const char *msg))
{
	char msg[512], spec[128];

	for (size_t e = 0; e < c->nexports; e++)
		for (size_t i = 0; i < c->exports[e].nclients; i++) {
			const struct conf_client *cl = &c->exports[e].clients[i];

			for (size_t w = 0; w < NIGNORED; w++) {
				if (!(cl->ignored & (1u << w)))
					continue;
				conf_format_client(cl, spec, sizeof(spec));
				snprintf(msg, sizeof(msg), "export \"%s\": "
					 "clients \"%s\": option %s%s has no "
					 "effect: %s", c->exports[e].path, spec,
					 ignored_words[w].name,
					 ignored_words[w].name[strlen(
					 ignored_words[w].name) - 1] == '='
					 ? "..." : "", ignored_words[w].instead);
				warn(msg);
			}
		}
}
