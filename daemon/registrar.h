/* SPDX-License-Identifier: MIT */
/*
 * registrar: registration of MOUNT v3 and NFSv3 over TCP with the local
 * rpcbind (libtirpc pmap_set / pmap_unset, RFC 1833), so that clients
 * that do not give ports (a plain `mount -t nfs -o vers=3`) find the proxy.
 */
#ifndef NFSCACHED_DAEMON_REGISTRAR_H
#define NFSCACHED_DAEMON_REGISTRAR_H

struct conf;

/*
 * Register NFS 100003 v3 on c->nfs_port and MOUNT 100005 v3 on
 * c->mount_port (or nfs_port when 0), replacing stale mappings of the same
 * program and version. Returns 0, or -1 if rpcbind refused or is absent
 * (logged; the proxy keeps serving clients that give ports).
 */
int registrar_register(const struct conf *c);

/* Remove the registrations made by registrar_register. */
void registrar_unregister(const struct conf *c);

#endif
