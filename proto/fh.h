/* SPDX-License-Identifier: MIT */
/*
 * fh: client-visible NFSv3 file handles (docs/design.md "File handles").
 *
 * Layout, at most NFS3_FHSIZE (64) bytes:
 *   byte 0      format version (top 2 bits, FH_VERSION) | export id (low 6)
 *   byte 1      upstream handle length L (1..62)
 *   bytes 2..   the upstream handle (L bytes)
 *   then        HMAC-SHA256 over bytes [0, 2+L), truncated to
 *               min(8, 64 - 2 - L) bytes, keyed by the proxy's secret.
 * Upstream handles up to 54 bytes carry the full 8-byte authenticator.
 */
#ifndef NFSCACHED_PROTO_FH_H
#define NFSCACHED_PROTO_FH_H

#include <stddef.h>
#include <stdint.h>

#define FH_SIZE_MAX	64	/* NFS3_FHSIZE, RFC 1813 section 2.4 */
#define FH_KEY_LEN	32	/* secret length, bytes */
#define FH_VERSION	1
#define FH_EXPORT_MAX	63	/* export ids are 1..63 */
#define FH_UP_MAX	62	/* longest upstream handle we can wrap */
#define FH_UP_FULLAUTH	54	/* longest with the full 8-byte authenticator */

enum fh_status {
	FH_OK = 0,
	FH_EINVAL,	/* wrap: export id out of range or upstream handle
			 * empty or longer than FH_UP_MAX */
	FH_EBADHANDLE,	/* unwrap: wrong length, version or layout */
	FH_EAUTH,	/* unwrap: authenticator mismatch (forged/corrupt) */
};

/*
 * Wrap upstream handle up[0..up_len) of export export_id (1..63) into
 * out (FH_SIZE_MAX bytes, caller's) and set *out_len. key is FH_KEY_LEN
 * bytes. Returns FH_OK or FH_EINVAL. Pure; no allocation.
 */
enum fh_status fh_wrap(const uint8_t *key, unsigned export_id,
		       const uint8_t *up, size_t up_len,
		       uint8_t *out, size_t *out_len);

/*
 * Check and unwrap client handle fh[0..len). On FH_OK, *export_id is set and
 * *up and *up_len point INTO fh (borrowed for fh's lifetime). Returns FH_OK,
 * FH_EBADHANDLE or FH_EAUTH; the authenticator is compared in constant time.
 */
enum fh_status fh_unwrap(const uint8_t *key, const uint8_t *fh, size_t len,
			 unsigned *export_id, const uint8_t **up,
			 size_t *up_len);

/* Authenticator length in bytes for an upstream handle of up_len bytes. */
size_t fh_auth_len(size_t up_len);

/*
 * Load the secret from path (exactly FH_KEY_LEN bytes), or create it with
 * OpenSSL RAND_bytes and mode 0600 if the file does not exist. key receives
 * FH_KEY_LEN bytes. Returns 0, or -1 with errno set and a reason in
 * err[0..errlen) (unreadable file, wrong size, RAND failure, write error;
 * EPERM for a file group or others may read or write, mode & 077: the
 * reason names it, its mode and the fix, chmod 600 or a new key).
 */
int fh_key_load(const char *path, uint8_t *key, char *err, size_t errlen);

/*
 * The key file's mode check alone, creating and reading nothing (for
 * --check-config, which may run as another user): 0 when path is absent,
 * cannot be seen, or has no group/other bits; else -1, errno EPERM, and
 * fh_key_load's reason in err[0..errlen).
 */
int fh_key_check(const char *path, char *err, size_t errlen);

/*
 * Refuse a state directory that group or others may write (mode & 022:
 * they could replace the key, handle.key, with one they know). 0 when dir
 * is absent (the daemon makes it 0700) or cannot be seen by the caller,
 * or is fine; -1 with errno (EPERM, ENOTDIR, stat's) and a reason naming
 * dir, its mode and the fix (chmod 700) in err[0..errlen). Creates nothing.
 */
int fh_state_dir_check(const char *dir, char *err, size_t errlen);

#endif
