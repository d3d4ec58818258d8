/* SPDX-License-Identifier: MIT */
/*
 * registrar: registration of MOUNT v3 and NFSv3 over TCP with the local
 * rpcbind (libtirpc pmap_set / pmap_unset / pmap_getport, RFC 1833), so
 * that clients that do not give ports (a plain `mount -t nfs -o vers=3`)
 * find the proxy. A mapping another server holds is taken only if that
 * server does not answer a NULL call (a stale mapping), or if
 * rpcbind_conflict says "replace", and then it is put back at exit;
 * "skip" (the default) keeps it and "refuse" stops the start. At exit
 * only the mappings this process set, and that still point at its ports,
 * are removed: a server that registered after it keeps its mapping.
 * Called from the main thread only, at start and at shutdown; the calls
 * block (on rpcbind, and up to 2 s on a mapped server's NULL reply).
 */
#ifndef NFSCACHED_DAEMON_REGISTRAR_H
#define NFSCACHED_DAEMON_REGISTRAR_H

#include <stdbool.h>
#include <sys/socket.h>

struct conf;

/* One program version over TCP this process maps in rpcbind. */
struct registrar_map {
	unsigned long prog, vers;	/* RPC program and version */
	unsigned proto;			/* IPPROTO_TCP, or IPPROTO_UDP */
	unsigned short port;		/* TCP port this process serves */
	const char *name;		/* for logs: "NFS v3" */
	bool set;			/* registrar_map_set made it */
	unsigned short replaced;	/* the port of a live server's mapping
					 * it replaced, put back at unset; 0
					 * if none */
};

/* What the daemon maps: NFS v3, MOUNT v3 and, with nlm, NLM v4 over TCP
 * and over UDP (the status monitor's callback, nlm_listen_udp) (struct
 * daemon owns one; a map with prog 0 is not served). */
struct registrar {
	struct registrar_map maps[4];
};

/* Results of registrar_map_set. */
enum {
	REGISTRAR_OK = 0,	/* mapped (m->set) */
	REGISTRAR_FAILED = -1,	/* rpcbind refused or is absent (logged) */
	REGISTRAR_SKIPPED = 1,	/* a live server's mapping kept ("skip") */
	REGISTRAR_REFUSED = -2,	/* a live server's mapping, "refuse" */
};

/*
 * A NULL call (procedure 0) to prog/vers over TCP at sa (IPv4 or IPv6,
 * len bytes), connecting and answering within secs seconds each. 0 when
 * it succeeded; -1 with errno (connect's, ETIMEDOUT, ECONNREFUSED when no
 * RPC client could be made, EPROTO when the call failed). Blocks: only
 * outside the event loop (start, --check-config).
 */
int registrar_null_call(const struct sockaddr *sa, socklen_t len,
			unsigned long prog, unsigned long vers, double secs);

/*
 * True if a NULL call (procedure 0) to prog/vers over TCP at
 * 127.0.0.1:port is answered with success within 2 s. Blocks.
 */
bool registrar_port_answers(unsigned short port, unsigned long prog,
			    unsigned long vers);

/*
 * Map m->prog/m->vers over TCP to m->port in the local rpcbind. A mapping
 * of the same program and version to another port is probed with
 * registrar_port_answers: a stale one (no answer) is replaced, with a
 * warning; a live one is handled by policy ("skip", "refuse" or
 * "replace", the rpcbind_conflict directive; logged either way), and when
 * replaced its port is kept in m->replaced. rpcbind refuses a SET while a
 * mapping exists, and pmap_unset removes every transport of that version
 * (UDP too; only TCP is put back). Returns REGISTRAR_OK (m->set),
 * REGISTRAR_SKIPPED, REGISTRAR_REFUSED or REGISTRAR_FAILED.
 */
int registrar_map_set(struct registrar_map *m, const char *policy);

/*
 * Remove m's mapping if registrar_map_set made it and rpcbind still maps
 * m->prog/m->vers over TCP to m->port, then put back the live server's
 * mapping it replaced, if any; otherwise (another server registered
 * since) leave rpcbind alone, logged at info. Clears m->set.
 */
void registrar_map_unset(struct registrar_map *m);

/*
 * Register NFS 100003 v3 on c->nfs_port and MOUNT 100005 v3 on
 * c->mount_port (or nfs_port when 0) into rg, and with c->nlm NLM 100021
 * v4 on nfs_port over TCP, and over UDP when nlm_udp (the status
 * monitor's callback socket is bound), as registrar_map_set does under
 * c->rpcbind_conflict. Returns 0; 1 if a mapping was skipped or
 * rpcbind refused or is absent (logged; the proxy serves clients that
 * give ports); -1 if rpcbind_conflict = "refuse" met a live server's
 * mapping (logged; what was registered is undone, the caller must not
 * start).
 */
int registrar_register(struct registrar *rg, const struct conf *c,
		       bool nlm_udp);

/* Remove the registrations registrar_register made into rg, as
 * registrar_map_unset does. */
void registrar_unregister(struct registrar *rg);

#endif
