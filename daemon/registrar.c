/* SPDX-License-Identifier: MIT */
/*
 * registrar: rpcbind registration (see registrar.h). The calls are
 * synchronous and made only at start and at shutdown.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "registrar.h"

static struct registrar_map maps[2] = {
	{ .prog = NFS_PROGRAM, .vers = NFS_V3, .name = "NFS v3" },
	{ .prog = MOUNT_PROGRAM, .vers = MOUNT_V3, .name = "MOUNT v3" },
};

/* The TCP port rpcbind maps prog/vers to, or 0 (none, or no rpcbind). */
static unsigned short mapped_port(unsigned long prog, unsigned long vers)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(PMAPPORT);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return pmap_getport(&sin, prog, vers, IPPROTO_TCP);
}

int registrar_map_set(struct registrar_map *m)
{
	unsigned short old = mapped_port(m->prog, m->vers);

	m->set = false;
	m->replaced = 0;
	if (old && old != m->port) {
		log_warn("rpcbind: replacing the %s mapping to tcp/%u (another "
			 "server's, or a stale one) with tcp/%u",
			 m->name, old, m->port);
		m->replaced = old;
	}
	pmap_unset(m->prog, m->vers);
	if (!pmap_set(m->prog, m->vers, IPPROTO_TCP, m->port)) {
		log_warn("rpcbind: cannot register %s on port %u", m->name,
			 m->port);
		return -1;
	}
	m->set = true;
	return 0;
}

void registrar_map_unset(struct registrar_map *m)
{
	unsigned short now;

	if (!m->set)
		return;
	m->set = false;
	now = mapped_port(m->prog, m->vers);
	if (now != m->port) {
		log_info("rpcbind: %s is now mapped to tcp/%u, not ours "
			 "(tcp/%u): left alone", m->name, now, m->port);
		return;
	}
	pmap_unset(m->prog, m->vers);
}

int registrar_register(const struct conf *c)
{
	int rc = 0;

	maps[0].port = (unsigned short)c->nfs_port;
	maps[1].port = (unsigned short)(c->mount_port ? c->mount_port :
					c->nfs_port);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (registrar_map_set(&maps[i]) != 0)
			rc = -1;
	if (rc == 0)
		log_info("registered with rpcbind: NFS v3 tcp/%u, MOUNT v3 "
			 "tcp/%u", maps[0].port, maps[1].port);
	return rc;
}

void registrar_unregister(const struct conf *c)
{
	(void)c;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		registrar_map_unset(&maps[i]);
}
