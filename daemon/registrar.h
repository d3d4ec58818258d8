/* SPDX-License-Identifier: MIT */
/*
 * registrar: registration of MOUNT v3 and NFSv3 over TCP with the local
 * rpcbind (libtirpc pmap_set / pmap_unset / pmap_getport, RFC 1833), so
 * that clients that do not give ports (a plain `mount -t nfs -o vers=3`)
 * find the proxy. At exit only the mappings this process set, and that
 * still point at its ports, are removed: a server that registered after
 * it (or that it replaced and that came back) keeps its mapping.
 */
#ifndef NFSCACHED_DAEMON_REGISTRAR_H
#define NFSCACHED_DAEMON_REGISTRAR_H

#include <stdbool.h>

struct conf;

/* One program version over TCP this process maps in rpcbind. */
struct registrar_map {
	unsigned long prog, vers;	/* RPC program and version */
	unsigned short port;		/* TCP port this process serves */
	const char *name;		/* for logs: "NFS v3" */
	bool set;			/* registrar_map_set made it */
	unsigned short replaced;	/* the port of the mapping it replaced
					 * (another server's), or 0 */
};

/*
 * Map m->prog/m->vers over TCP to m->port in the local rpcbind. A mapping
 * of the same program and version to another port (another server's, or a
 * crashed run's) is replaced, with a warning naming its port, which is
 * kept in m->replaced; rpcbind refuses a SET while one exists, and
 * pmap_unset removes every transport of that version (UDP too). Returns 0
 * (m->set), or -1 if rpcbind refused or is absent (logged).
 */
int registrar_map_set(struct registrar_map *m);

/*
 * Remove m's mapping if registrar_map_set made it and rpcbind still maps
 * m->prog/m->vers over TCP to m->port; otherwise (another server
 * registered since) leave rpcbind alone, logged at info. Clears m->set.
 */
void registrar_map_unset(struct registrar_map *m);

/*
 * Register NFS 100003 v3 on c->nfs_port and MOUNT 100005 v3 on
 * c->mount_port (or nfs_port when 0), as registrar_map_set does. Returns
 * 0, or -1 if rpcbind refused or is absent (logged; the proxy keeps
 * serving clients that give ports).
 */
int registrar_register(const struct conf *c);

/* Remove the registrations registrar_register made, as
 * registrar_map_unset does. */
void registrar_unregister(const struct conf *c);

#endif
