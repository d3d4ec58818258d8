/* SPDX-License-Identifier: MIT */
/*
 * registrar: rpcbind registration (see registrar.h). The calls are
 * synchronous and made only at start and at shutdown, before the loop
 * serves and after it stopped.
 *
 * State: each map is unset (set false) until registrar_map_set made its
 * mapping, then set until registrar_map_unset; replaced is non-zero only
 * while set and only for a live server's mapping taken under "replace",
 * and is put back at unset.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "nlm4_prot.h"
#include "registrar.h"
#include "rpcmsg.h"

#define REGISTRAR_PROBE_SECONDS 2	/* a NULL call to a mapped server */


/* 127.0.0.1:port as a sockaddr_in. */
static struct sockaddr_in loopback(unsigned short port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/* The port rpcbind maps prog/vers over proto (IPPROTO_TCP or
 * IPPROTO_UDP) to, or 0 (none, or no rpcbind). */
static unsigned short mapped_port(unsigned long prog, unsigned long vers,
				  unsigned proto)
{
	struct sockaddr_in sin = loopback(PMAPPORT);

	return pmap_getport(&sin, prog, vers, proto);
}

/* "tcp" or "udp", for logs. */
static const char *proto_name(const struct registrar_map *m)
{
	return m->proto == IPPROTO_UDP ? "udp" : "tcp";
}

/* A TCP connection to sa, made within secs seconds: its descriptor
 * (blocking), or -1 with errno. */
static int connect_within(const struct sockaddr *sa, socklen_t len,
			  double secs)
{
	struct pollfd p = { .events = POLLOUT };
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
				       SOCK_CLOEXEC, 0), e = 0;
	socklen_t elen = sizeof(e);

	if (fd < 0)
		return -1;
	p.fd = fd;
	if (connect(fd, sa, len) != 0 && errno != EINPROGRESS)
		goto fail;
	if (poll(&p, 1, (int)(secs * 1000)) != 1) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0 || e) {
		errno = e ? e : errno;
		goto fail;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		goto fail;
	return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int registrar_null_call(const struct sockaddr *sa, socklen_t len,
			unsigned long prog, unsigned long vers, double secs)
{
	struct timeval tv = { .tv_sec = (time_t)secs,
			      .tv_usec = (suseconds_t)((secs - (time_t)secs) *
						       1e6) };
	struct sockaddr_storage copy;	/* netbuf's buf is not const */
	struct netbuf nb = { .maxlen = len, .len = len, .buf = &copy };
	enum clnt_stat st;
	CLIENT *cl;
	int fd;

	if (len > sizeof(copy)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&copy, sa, len);
	fd = connect_within(sa, len, secs);
	if (fd < 0)
		return -1;
	cl = clnt_vc_create(fd, &nb, prog, vers, 0, 0);
	if (!cl) {
		close(fd);
		errno = ECONNREFUSED;
		return -1;
	}
	(void)clnt_control(cl, CLSET_FD_CLOSE, NULL);
	st = clnt_call(cl, NULLPROC, (xdrproc_t)rpcmsg_xdr_void, NULL,
		       (xdrproc_t)rpcmsg_xdr_void, NULL, tv);
	clnt_destroy(cl);	/* closes fd (CLSET_FD_CLOSE) */
	if (st == RPC_SUCCESS)
		return 0;
	errno = st == RPC_TIMEDOUT ? ETIMEDOUT : EPROTO;
	return -1;
}

bool registrar_port_answers(unsigned short port, unsigned long prog,
			    unsigned long vers)
{
	struct sockaddr_in sin = loopback(port);

	return registrar_null_call((const struct sockaddr *)&sin, sizeof(sin),
				   prog, vers, REGISTRAR_PROBE_SECONDS) == 0;
}

/* Decide, by policy, what to do with a live server's mapping of m to
 * old: 0 take it (replace), 1 keep it (skip), -1 refuse to start. */
static int live_mapping(struct registrar_map *m, unsigned short old,
			const char *policy)
{
	if (strcmp(policy, "replace") == 0) {
		log_warn("rpcbind: replacing the %s mapping to %s/%u (a live "
			 "server's) with %s/%u; it is put back at exit "
			 "(rpcbind_conflict = \"replace\")", m->name,
			 proto_name(m), old, proto_name(m), m->port);
		m->replaced = old;
		return 0;
	}
	if (strcmp(policy, "refuse") == 0) {
		log_error("rpcbind: %s is mapped to %s/%u, where a live server "
			  "answers; not starting (rpcbind_conflict = "
			  "\"refuse\"; \"skip\" keeps its mapping and starts, "
			  "register_rpcbind = false or --no-rpcbind registers "
			  "nothing)", m->name, proto_name(m), old);
		return -1;
	}
	log_warn("rpcbind: %s is mapped to %s/%u, where a live server "
		 "answers: its mapping is kept and nfscached's %s/%u is not "
		 "registered; clients give the port (rpcbind_conflict = "
		 "\"skip\")", m->name, proto_name(m), old, proto_name(m),
		 m->port);
	return 1;
}

int registrar_map_set(struct registrar_map *m, const char *policy)
{
	unsigned short old;

	if (!m->proto)
		m->proto = IPPROTO_TCP;
	old = mapped_port(m->prog, m->vers, m->proto);
	m->set = false;
	m->replaced = 0;
	if (old && old != m->port) {
		/* A UDP server cannot be probed with a TCP NULL call: its
		 * mapping is taken as live. */
		if (m->proto == IPPROTO_UDP ||
		    registrar_port_answers(old, m->prog, m->vers)) {
			int r = live_mapping(m, old, policy);

			if (r != 0)
				return r < 0 ? REGISTRAR_REFUSED
					     : REGISTRAR_SKIPPED;
		} else {
			log_warn("rpcbind: replacing the stale %s mapping to "
				 "tcp/%u (nothing answers there) with tcp/%u",
				 m->name, old, m->port);
		}
	}
	/* pmap_unset clears every protocol's mapping of prog/vers: the UDP
	 * map comes after its TCP twin, whose unset cleared it. */
	if (m->proto == IPPROTO_TCP)
		pmap_unset(m->prog, m->vers);
	else if (old && old != m->port)
		pmap_unset(m->prog, m->vers);
	if (!pmap_set(m->prog, m->vers, m->proto, m->port)) {
		log_warn("rpcbind: cannot register %s on %s port %u", m->name,
			 proto_name(m), m->port);
		m->replaced = 0;
		return REGISTRAR_FAILED;
	}
	m->set = true;
	return REGISTRAR_OK;
}

void registrar_map_unset(struct registrar_map *m)
{
	unsigned short now;

	if (!m->set)
		return;
	m->set = false;
	now = mapped_port(m->prog, m->vers, m->proto);
	if (now == 0 && m->proto == IPPROTO_UDP) {
		/* Its TCP twin's unset cleared it: put the other back. */
		if (m->replaced &&
		    pmap_set(m->prog, m->vers, IPPROTO_UDP, m->replaced))
			log_info("rpcbind: %s mapping to udp/%u put back",
				 m->name, m->replaced);
		m->replaced = 0;
		return;
	}
	if (now != m->port) {
		log_info("rpcbind: %s is now mapped to %s/%u, not ours "
			 "(%s/%u): left alone", m->name, proto_name(m), now,
			 proto_name(m), m->port);
		return;
	}
	pmap_unset(m->prog, m->vers);
	if (!m->replaced)
		return;
	if (pmap_set(m->prog, m->vers, m->proto, m->replaced))
		log_info("rpcbind: %s mapping to %s/%u put back", m->name,
			 proto_name(m), m->replaced);
	else
		log_warn("rpcbind: cannot put back the %s mapping to %s/%u",
			 m->name, proto_name(m), m->replaced);
	m->replaced = 0;
}

int registrar_register(struct registrar *rg, const struct conf *c,
		       bool nlm_udp)
{
	struct registrar_map *m = rg->maps;
	int rc = 0;

	memset(rg, 0, sizeof(*rg));
	m[0] = (struct registrar_map){ .prog = NFS_PROGRAM, .vers = NFS_V3,
				       .name = "NFS v3", .proto = IPPROTO_TCP,
				       .port = (unsigned short)c->nfs_port };
	m[1] = (struct registrar_map){
		.prog = MOUNT_PROGRAM, .vers = MOUNT_V3, .name = "MOUNT v3",
		.proto = IPPROTO_TCP,
		.port = (unsigned short)(c->mount_port ? c->mount_port
						       : c->nfs_port) };
	if (c->nlm) {
		m[2] = (struct registrar_map){
			.prog = NLM_PROG, .vers = NLM4_VERS, .name = "NLM v4",
			.proto = IPPROTO_TCP,
			.port = (unsigned short)c->nfs_port };
		if (nlm_udp) {
			m[3] = m[2];
			m[3].proto = IPPROTO_UDP;	/* statd's callbacks */
		}
	}
	for (size_t i = 0; i < sizeof(rg->maps) / sizeof(rg->maps[0]); i++) {
		int r;

		if (!m[i].prog)
			continue;	/* not served */
		r = registrar_map_set(&m[i], c->rpcbind_conflict);

		if (r == REGISTRAR_REFUSED) {
			registrar_unregister(rg);
			return -1;
		}
		if (r != REGISTRAR_OK)
			rc = 1;
	}
	if (rc == 0)
		log_info("registered with rpcbind: NFS v3 tcp/%u, MOUNT v3 "
			 "tcp/%u%s", m[0].port, m[1].port,
			 m[2].prog ? ", NLM v4 on the NFS port" : "");
	return rc;
}

void registrar_unregister(struct registrar *rg)
{
	for (size_t i = 0; i < sizeof(rg->maps) / sizeof(rg->maps[0]); i++)
		registrar_map_unset(&rg->maps[i]);
}
