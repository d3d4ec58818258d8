/* SPDX-License-Identifier: MIT */
/*
 * checkconf: see checkconf.h. No state: every call looks at the system
 * now.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <rpc/pmap_prot.h>

#include "checkconf.h"
#include "conf.h"
#include "fh.h"
#include "nfs3_prot.h"
#include "nlm4_prot.h"
#include "registrar.h"

#define CHECKCONF_PROBE_SECONDS 2.0

int checkconf_as_user(const char *user, char *err, size_t len)
{
	struct passwd *pw = getpwnam(user);

	if (!pw) {
		snprintf(err, len, "--user %s: no such user", user);
		return -1;
	}
	if (geteuid() != 0) {
		snprintf(err, len, "--user %s: only root may check as another "
			 "user", user);
		return -1;
	}
	if (initgroups(pw->pw_name, pw->pw_gid) != 0 ||
	    setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
		snprintf(err, len, "--user %s: %s", user, strerror(errno));
		return -1;
	}
	return 0;
}

/* Refuse a missing state_dir whose parent is missing or not a directory:
 * the start makes state_dir with mkdir(2), not its parents. */
static int state_dir_parent(const char *dir, char *err, size_t len)
{
	char parent[PATH_MAX];
	struct stat st;
	char *slash;

	if (stat(dir, &st) == 0 || errno != ENOENT)
		return 0;
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (!slash)
		return 0;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	snprintf(err, len, "state_dir %s: its parent %s %s: the start would "
		 "fail (the daemon makes state_dir itself, not its parents; "
		 "create %s, or choose a state_dir in an existing directory)",
		 dir, parent, stat(parent, &st) == 0 ? "is not a directory"
						     : "does not exist",
		 parent);
	return -1;
}

int checkconf_state_dir(const struct conf *c, char *err, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/handle.key", c->state_dir);
	if (state_dir_parent(c->state_dir, err, len) != 0 ||
	    fh_state_dir_check(c->state_dir, err, len) != 0 ||
	    fh_key_check(path, err, len) != 0)
		return -1;
	return 0;
}

/* Probe export e's upstream; a warning line into msg[0..len) if it does
 * not resolve or answer, else "". */
static void probe_one(const struct conf_export *e, char *msg, size_t len)
{
	const struct conf_upstream_url *u = &e->url;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	bool nfs = u->nfs_port != 0;
	int port = nfs ? u->nfs_port : PMAPPORT, rc;
	char where[300];

	msg[0] = '\0';
	rc = getaddrinfo(u->server, NULL, &hints, &ai);
	if (rc != 0) {
		snprintf(msg, len, "export \"%s\": upstream host %s does not "
			 "resolve now (%s): the daemon would start and answer "
			 "NFS3ERR_JUKEBOX until it does", e->path, u->server,
			 gai_strerror(rc));
		return;
	}
	if (ai->ai_family == AF_INET)
		((struct sockaddr_in *)ai->ai_addr)->sin_port = htons(port);
	else if (ai->ai_family == AF_INET6)
		((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons(port);
	snprintf(where, sizeof(where), "%s port %d (%s)", u->server, port,
		 nfs ? "NFS v3" : "portmapper");
	if (registrar_null_call(ai->ai_addr, ai->ai_addrlen,
				nfs ? NFS_PROGRAM : PMAPPROG,
				nfs ? NFS_V3 : PMAPVERS,
				CHECKCONF_PROBE_SECONDS) != 0)
		snprintf(msg, len, "export \"%s\": upstream %s does not answer "
			 "an RPC NULL call within %.0f s (%s): the daemon would "
			 "start and answer NFS3ERR_JUKEBOX until it does "
			 "(--no-probe skips this check)", e->path, where,
			 CHECKCONF_PROBE_SECONDS, strerror(errno));
	freeaddrinfo(ai);
}

/* Probe export e's upstream lock manager (NLM v4: the URL's nlmport, or
 * the upstream's portmapper); a warning line into msg[0..len) if it is
 * not registered or does not answer, else "". An IPv6 upstream without
 * nlmport is not probed (the portmapper query here speaks IPv4). */
static void probe_nlm(const struct conf_export *e, char *msg, size_t len)
{
	const struct conf_upstream_url *u = &e->url;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	unsigned short port = (unsigned short)u->nlm_port;

	msg[0] = '\0';
	if (getaddrinfo(u->server, NULL, &hints, &ai) != 0)
		return;		/* probe_one said so */
	if (!port && ai->ai_family == AF_INET) {
		struct sockaddr_in pm = *(struct sockaddr_in *)ai->ai_addr;

		pm.sin_port = htons(PMAPPORT);
		port = pmap_getport(&pm, NLM_PROG, NLM4_VERS, IPPROTO_TCP);
		if (!port)
			snprintf(msg, len, "export \"%s\": upstream %s has no "
				 "lock manager (NLM v4 over TCP) registered with "
				 "its portmapper: clients' locks would fail with "
				 "ENOLCK (give nlmport, start the server's lock "
				 "manager, or nlm = false and nolock mounts)",
				 e->path, u->server);
	}
	if (port && !msg[0]) {
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)ai->ai_addr)->sin_port =
				htons(port);
		else if (ai->ai_family == AF_INET6)
			((struct sockaddr_in6 *)ai->ai_addr)->sin6_port =
				htons(port);
		if (registrar_null_call(ai->ai_addr, ai->ai_addrlen, NLM_PROG,
					NLM4_VERS, CHECKCONF_PROBE_SECONDS) != 0)
			snprintf(msg, len, "export \"%s\": upstream %s's lock "
				 "manager (NLM v4, port %u) does not answer an "
				 "RPC NULL call within %.0f s (%s): clients' "
				 "locks would fail with ENOLCK", e->path,
				 u->server, port, CHECKCONF_PROBE_SECONDS,
				 strerror(errno));
	}
	freeaddrinfo(ai);
}

unsigned checkconf_probe_upstreams(const struct conf *c,
				   void (*warn)(const char *msg))
{
	char msg[1024];
	unsigned n = 0;
	struct sockaddr_in lo = { .sin_family = AF_INET,
				  .sin_port = htons(PMAPPORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (size_t i = 0; i < c->nexports; i++) {
		probe_one(&c->exports[i], msg, sizeof(msg));
		if (!msg[0] && c->nlm)
			probe_nlm(&c->exports[i], msg, sizeof(msg));
		if (msg[0]) {
			warn(msg);
			n++;
		}
	}
	if (c->nlm && c->nexports &&
	    !pmap_getport(&lo, SM_PROG, SM_VERS, IPPROTO_TCP)) {
		warn("no status monitor (rpc.statd) is registered with this "
		     "host's rpcbind: locks work, but a client's reboot will "
		     "not release its locks upstream (start rpc-statd)");
		n++;
	}
	return n;
}
