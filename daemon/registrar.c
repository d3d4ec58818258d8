/* SPDX-License-Identifier: MIT */
/*
 * registrar: rpcbind registration (see registrar.h). The calls are
 * synchronous and made only at start and at shutdown.
 */
#include <netinet/in.h>
#include <rpc/rpc.h>
#include <rpc/pmap_clnt.h>

#include "conf.h"
#include "log.h"
#include "mount3_prot.h"
#include "nfs3_prot.h"
#include "registrar.h"

/* The port MOUNT is served on. */
static int mount_port(const struct conf *c)
{
	return c->mount_port ? c->mount_port : c->nfs_port;
}

int registrar_register(const struct conf *c)
{
	int rc = 0;

	pmap_unset(NFS_PROGRAM, NFS_V3);
	pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
	if (!pmap_set(NFS_PROGRAM, NFS_V3, IPPROTO_TCP, (unsigned short)c->nfs_port)) {
		log_warn("rpcbind: cannot register NFS v3 on port %d", c->nfs_port);
		rc = -1;
	}
	if (!pmap_set(MOUNT_PROGRAM, MOUNT_V3, IPPROTO_TCP,
		      (unsigned short)mount_port(c))) {
		log_warn("rpcbind: cannot register MOUNT v3 on port %d", mount_port(c));
		rc = -1;
	}
	if (rc == 0)
		log_info("registered with rpcbind: NFS v3 tcp/%d, MOUNT v3 tcp/%d",
			 c->nfs_port, mount_port(c));
	return rc;
}

void registrar_unregister(const struct conf *c)
{
	(void)c;
	pmap_unset(NFS_PROGRAM, NFS_V3);
	pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
}
