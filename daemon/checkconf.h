/* SPDX-License-Identifier: MIT */
/*
 * checkconf: what `nfscached --check-config` checks beyond the file's own
 * syntax and values (conf_load_file): that the start would get past the
 * state directory and its key, and, as warnings, whether each export's
 * upstream resolves and answers now. With --user it runs as the service's
 * user, so a cache_dir or state_dir that user cannot use fails here and
 * not only at the service's start. Main thread, before any loop exists;
 * the calls block (name lookups, a 2 s probe per upstream).
 */
#ifndef NFSCACHED_DAEMON_CHECKCONF_H
#define NFSCACHED_DAEMON_CHECKCONF_H

#include <stdbool.h>
#include <stddef.h>

struct conf;

/*
 * Become user (a name from the password database): its groups, group and
 * user id, as the systemd unit's User= does. Only root may. 0, or -1 with
 * the reason in err[0..len) (no such user, not root, a setuid failure).
 */
int checkconf_as_user(const char *user, char *err, size_t len);

/*
 * Refuse (-1, the reason in err[0..len)) what would stop the start: a
 * state_dir that is missing under a parent that is missing or not a
 * directory (the daemon makes state_dir itself, not its parents), a
 * state_dir group or others may write, a handle key group or others may
 * read or write (fh.h). 0 when the start would get past them.
 */
int checkconf_state_dir(const struct conf *c, char *err, size_t len);

/*
 * Warn, through warn (one line each, no trailing newline), about each
 * export whose upstream host name does not resolve now, or whose address
 * does not answer an RPC NULL call within 2 s (the NFS program on its
 * nfsport, or the portmapper on port 111 when the URL gives none): the
 * daemon would start and answer NFS3ERR_JUKEBOX until it does. With nlm,
 * also about an upstream lock manager (NLM v4: nlmport, or the
 * upstream's portmapper) that is not registered or does not answer
 * (clients' locks would get ENOLCK), and about no rpc.statd registered
 * on this host (a client's reboot would not free its locks). Returns the
 * number of warnings. Blocks up to 2 s per probe.
 */
unsigned checkconf_probe_upstreams(const struct conf *c,
				   void (*warn)(const char *msg));

#endif
