/* SPDX-License-Identifier: MIT */
/*
 * nfs3_guard: the security boundary between NFSv3 clients and the
 * upstream. Nothing a client sends reaches the upstream before it passed
 * here, and no upstream handle reaches a client without being wrapped:
 *
 *   - client handles are unwrapped and authenticated (fh.h), must name a
 *     configured export and all one export;
 *   - the export's client rules are checked: its clients entries (an
 *     address, a network, a host name, a wildcard of host names) and
 *     their exports(5) options (`secure`; `ro`, under which every call
 *     that changes a file is NFS3ERR_ROFS); refusals are counted by
 *     reason and logged at a bounded rate (refusal.h);
 *   - file names must be one path component of at most NFS3_NAME_MAX
 *     bytes, a symlink target at most NFS3_PATH_MAX;
 *   - the caller's credential is mapped for upstream (root_squash,
 *     all_squash, anonuid/anongid for AUTH_NONE);
 *   - transfer counts are clamped to what the upstream link carries;
 *   - handles in results are wrapped into client handles, and FSINFO never
 *     advertises more than the proxy can take.
 *
 * Each check is a function of plain values so that it can be tested on its
 * own (unit.nfs3_guard); nfs3_prepare() runs them all for a request. Where
 * a procedure keeps its handles, names, counts and symlink target is its
 * descriptor (nfs3_proc.h).
 */
#ifndef NFSCACHED_DAEMON_NFS3_GUARD_H
#define NFSCACHED_DAEMON_NFS3_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "nfs3_prot.h"
#include "refusal.h"
#include "rpcmsg.h"
#include "upstream.h"

struct conf_export;
struct daemon;
struct export_rt;
struct nfs3_proc;
struct req;
struct sockaddr;

/*
 * The longest name and symlink target passed upstream, bytes: Linux's
 * NAME_MAX and PATH_MAX less its NUL, which every POSIX upstream enforces
 * (NFS3ERR_NAMETOOLONG). Past them libnfs cannot even encode some calls,
 * so they are answered here.
 */
#define NFS3_NAME_MAX 255
#define NFS3_PATH_MAX 4095

/*
 * Unwrap the m->nfh client handles in args (an rpcgen arguments struct of
 * m's procedure) in place: each becomes its upstream handle (same buffer,
 * shorter). A handle whose authenticator does not check, or a short-
 * authenticator handle of an export whose upstream never produced one
 * (export_rt.long_handles), is NFS3ERR_BADHANDLE; handles of two exports
 * NFS3ERR_XDEV; an export id not configured in d NFS3ERR_STALE. On
 * NFS3_OK *ex is the export (borrowed). Some handles may already be
 * unwrapped when it fails.
 */
nfsstat3 nfs3_guard_unwrap(struct daemon *d, const struct nfs3_proc *m,
			   void *args, struct export_rt **ex);

/*
 * Export e's client rules (conf_client_match: its clients entries and
 * their exports(5) options) for a caller at peer with host name name (as
 * peername_get gives it: NULL when not known yet) and netgroups groups (as
 * peername_groups gives them; read only when name is not NULL),
 * privileged when it calls from a port below 1024. NFS3_OK with *acc what
 * the caller may do; NFS3ERR_ACCES when no entry matches (*why
 * REFUSAL_NOT_IN_CLIENTS); NFS3ERR_PERM when the matching entry is
 * `secure` and the port is not (*why REFUSAL_INSECURE_PORT);
 * NFS3ERR_JUKEBOX when a wildcard or netgroup entry decides and name is
 * NULL (the caller retries once the name is known; *why untouched).
 */
nfsstat3 nfs3_guard_client(const struct conf_export *e,
			   const struct sockaddr *peer, const char *name,
			   const char *const *groups, bool privileged,
			   struct conf_access *acc, enum refusal_reason *why);

/*
 * nfs3_guard_client for request r on export e, looking the caller's host
 * name and netgroups up (d->names) only when a wildcard or netgroup entry
 * needs them; a refusal is
 * counted and logged (refusal_note) under call, the log line naming the
 * call "MNT PATH" (path: the MNT's argument) for REFUSAL_MOUNT, "PROC on
 * EXPORT" for REFUSAL_NFS (path unused). Same returns as
 * nfs3_guard_client.
 */
nfsstat3 nfs3_guard_request(struct req *r, const struct conf_export *e,
			    enum refusal_call call, const char *path,
			    struct conf_access *acc);

/* Count and log (refusal_note) refusal why of request r on export e,
 * naming the call as nfs3_guard_request does; reason is the log's. */
void nfs3_guard_refused(struct req *r, const struct conf_export *e,
			enum refusal_call call, const char *path,
			enum refusal_reason why, const char *reason);

/*
 * Refuse a call whose file name (filename3, RFC 1813 s2.6) holds a '/': a
 * name is one path component. Forwarding a '/' would hand the upstream a
 * path, and NFS-Ganesha 4.3's FSAL_VFS resolves one: a CREATE of "../../x"
 * in the export's root makes x two directories above the export. Linux's
 * knfsd refuses such a name with NFS3ERR_ACCES (the -EACCES of
 * lookup_one_len), and so does the proxy, without asking upstream. A name
 * over NFS3_NAME_MAX bytes, or a SYMLINK target over NFS3_PATH_MAX, is
 * NFS3ERR_NAMETOOLONG, as the upstream would answer. Other odd names
 * (empty, ".", "..") stay the upstream's to judge: they cannot leave the
 * directory. args is m's procedure's arguments struct. Counts nothing:
 * nfs3_prepare counts an NFS3ERR_ACCES (nfs3_count_bad_name). Any thread.
 */
nfsstat3 nfs3_guard_names(const struct nfs3_proc *m, const void *args);

/*
 * Map the credential of call (a decoded call header) for upstream under
 * the caller's access acc (nfs3_guard_client) into *uc, as knfsd's
 * nfsd_setuser: AUTH_SYS keeps uid, gid and groups, except that under
 * all_squash every one becomes anonuid/anongid (no groups) and under
 * root_squash uid 0, gid 0 and group 0 do; anything other than AUTH_SYS
 * becomes anonuid/anongid without groups. uc->machine borrows
 * call->machine, or is "nfscached" when the call has none.
 */
void nfs3_guard_cred(const struct rpcmsg_call *call,
		     const struct conf_access *acc, struct nfs_cred *uc);

struct dispatch_entry;

/* True if the procedure of ent changes files (a DISPATCH_MUTATING row,
 * or COMMIT): what a read-only client is refused with NFS3ERR_ROFS, as
 * knfsd refuses it on an `ro` export. */
bool nfs3_guard_changes(const struct dispatch_entry *ent);

/* Lower the transfer counts in args (m->count) to rtmax bytes (0: no
 * limit known yet, left alone). */
void nfs3_guard_clamp_args(const struct nfs3_proc *m, void *args,
			   uint32_t rtmax);

/*
 * Wrap the upstream handles in a successful result res of m's procedure
 * into client handles of export ex (d's key), in place. A post_op_fh3 that
 * cannot be wrapped (an upstream handle over FH_UP_MAX bytes) is dropped;
 * LOOKUP's nfs_fh3 then gives NFS3ERR_SERVERFAULT, else NFS3_OK. Logs the
 * first over-long or long-authenticator handle of the export once.
 */
nfsstat3 nfs3_guard_rewrap(struct daemon *d, struct export_rt *ex,
			   const struct nfs3_proc *m, void *res);

/*
 * Wrap upstream handle up[0..up_len) of export ex into its client handle
 * out[0..FH_SIZE_MAX) (fh_wrap with d's key), *out_len its length: the
 * handle every reply of ex gives clients for that file, so a callback
 * naming the file (NLM GRANTED) carries the bytes the client knows. 0, or
 * -1 for a handle over FH_UP_MAX bytes (logged once per export, as
 * nfs3_guard_rewrap does). Loop thread (the key's MAC context).
 */
int nfs3_guard_wrap_fh(struct daemon *d, struct export_rt *ex,
		       const uint8_t *up, size_t up_len, uint8_t *out,
		       size_t *out_len);

/*
 * Never advertise more than the upstream link (rtmax, wtmax bytes; 0:
 * unknown) or the proxy's records (max_record bytes: writes up to the
 * record less 4 KiB, in 4 KiB units) can carry: clamps rtmax, wtmax and
 * the preferred sizes of a successful FSINFO result (RFC 1813 s3.3.19).
 */
void nfs3_guard_clamp_fsinfo(FSINFO3res *res, uint32_t rtmax, uint32_t wtmax,
			     uint32_t max_record);

/*
 * Unwrap r's argument handles in place (they become upstream handles),
 * check the export's client rules and the file names in the arguments
 * (one holding a '/': NFS3ERR_ACCES, as knfsd answers), clamp counts and
 * map the credential. Returns NFS3_OK with *ex and *uc set, or the
 * nfsstat3 to reply (NFS3ERR_BADHANDLE, NFS3ERR_XDEV, NFS3ERR_STALE,
 * NFS3ERR_ACCES, NFS3ERR_PERM, NFS3ERR_NAMETOOLONG; NFS3ERR_ROFS for a
 * call that changes a file from a read-only client; NFS3ERR_JUKEBOX while
 * the caller's host name, which a wildcard entry needs, is looked up).
 */
nfsstat3 nfs3_prepare(struct req *r, struct export_rt **ex,
		      struct nfs_cred *uc);

#endif
