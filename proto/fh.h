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

/*
 * The proxy's handle key: the secret, and once fh_key_init ran,
 * HMAC-SHA256 keyed with it (an OpenSSL EVP_MAC_CTX, owned), so that a
 * handle costs one MAC and not a key setup: the one-shot HMAC() of
 * OpenSSL 3 fetched the algorithm, built and freed a context and hashed
 * both pads on every call, 20,000 instructions of a cached 1 KiB READ's
 * 37,000 (issue 42, bench/hitprof.sh). A key that was never initialized
 * (mac NULL; the unit tests' and the fuzzer's fixed keys) gives the same
 * handles through the one-shot HMAC. An initialized key also remembers
 * handles it wrapped or authenticated (fh.c's memo), so that unwrapping
 * a handle again, a client's next call on the same file, is a constant
 * time comparison and no MAC. The context and the memo are used by every
 * fh_wrap/fh_unwrap: one thread at a time (the daemon's event loop).
 */
struct fh_key {
	uint8_t bytes[FH_KEY_LEN];
	struct evp_mac_ctx_st *mac;	/* owned; NULL until fh_key_init */
	struct fh_memo *memo;		/* owned, with mac: handles already
					 * authenticated (fh.c) */
};

enum fh_status {
	FH_OK = 0,
	FH_EINVAL,	/* wrap: export id out of range or upstream handle
			 * empty or longer than FH_UP_MAX */
	FH_EBADHANDLE,	/* unwrap: wrong length, version or layout */
	FH_EAUTH,	/* unwrap: authenticator mismatch (forged/corrupt) */
};

/*
 * Key k->mac with k->bytes (set them first): 0, or -1 if OpenSSL cannot
 * (no HMAC or SHA-256 in its providers, out of memory), k->mac left
 * NULL. Call once, before serving, from the thread that will use k;
 * fh_key_fini releases it.
 */
int fh_key_init(struct fh_key *k);

/* Release k->mac and k->memo (NULL afterwards); the bytes are kept.
 * Safe on a key never initialized. */
void fh_key_fini(struct fh_key *k);

/*
 * What an initialized key did: *macs, the HMACs computed (each wrap, each
 * unwrap not answered from the memo); *memo_hits, the unwraps answered
 * by comparing with a handle authenticated before. Both 0 for a key
 * never initialized. For tests.
 */
void fh_key_counts(const struct fh_key *k, uint64_t *macs,
		   uint64_t *memo_hits);

/*
 * Wrap upstream handle up[0..up_len) of export export_id (1..63) into
 * out (FH_SIZE_MAX bytes, caller's) and set *out_len. key: the secret,
 * keyed or not (struct fh_key; its MAC context is used, so one thread
 * at a time). Returns FH_OK, or FH_EINVAL (also if OpenSSL fails). No
 * allocation once the key is initialized.
 */
enum fh_status fh_wrap(const struct fh_key *key, unsigned export_id,
		       const uint8_t *up, size_t up_len,
		       uint8_t *out, size_t *out_len);

/*
 * Check and unwrap client handle fh[0..len) with key (as fh_wrap's). On
 * FH_OK, *export_id is set and *up and *up_len point INTO fh (borrowed
 * for fh's lifetime). Returns FH_OK, FH_EBADHANDLE or FH_EAUTH (also if
 * OpenSSL fails); the authenticator is compared in constant time.
 */
enum fh_status fh_unwrap(const struct fh_key *key, const uint8_t *fh, size_t len,
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
