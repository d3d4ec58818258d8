/* SPDX-License-Identifier: MIT */
/*
 * fh: client-visible NFSv3 file handles (docs/design.md "File handles").
 *
 * A client handle wraps one upstream handle: a header byte (format
 * version in the top 2 bits, export id 1..63 in the low 6), the upstream
 * length L (1..62), the upstream bytes, then HMAC-SHA256(key, header,
 * length, upstream) truncated to min(8, 64 - 2 - L) bytes. Invariant of
 * every handle fh_wrap produces and fh_unwrap accepts:
 *   len == 2 + L + fh_auth_len(L) <= FH_SIZE_MAX.
 * The authenticator covers the export id and the length, so a client can
 * neither move a handle to another export nor cut it short. Upstream
 * handles of 55..62 bytes get a shorter authenticator (7..0 bytes); the
 * caller logs that once per export.
 *
 * The key is a FH_KEY_LEN-byte secret in the state directory, created on
 * first start (mode 0600, never overwritten) so handles survive restarts.
 * In memory it is a struct fh_key: the bytes, and from fh_key_init to
 * fh_key_fini a keyed HMAC context that every wrap and unwrap re-starts
 * (the state: NULL, or keyed with bytes), and the memo: FH_MEMO_SLOTS
 * handles, each one this key wrapped or authenticated, in the slot its
 * last byte names (a direct-mapped table; a new one replaces the old).
 * An unwrap of a handle equal, byte for byte, to its slot's needs no MAC:
 * it was authenticated under the same key, which never changes while
 * the process runs. The comparison runs in constant time over the
 * handle's length (same_bytes; a length says nothing of the key) and
 * can only match a handle that authenticates anyway, so its timing
 * tells a client nothing the answer does not. Invariant: every used
 * slot holds a valid handle of this key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "fh.h"

#define FH_AUTH_MAX	8
#define FH_HDR_LEN	2
#define FH_EXPORT_MASK	0x3fu
#define FH_VERSION_SHIFT 6
#define FH_MEMO_SLOTS	256	/* handles remembered as authenticated */

/* One authenticated handle: len 0 for an empty slot. */
struct fh_memo_slot {
	size_t len;
	uint8_t fh[FH_SIZE_MAX];
};

/* The handles authenticated before, and the key's counts. */
struct fh_memo {
	struct fh_memo_slot slot[FH_MEMO_SLOTS];
	uint64_t macs;
	uint64_t hits;
};

size_t
fh_auth_len(size_t up_len)
{
	if (up_len == 0 || up_len > FH_UP_MAX)
		return 0;
	if (up_len <= FH_UP_FULLAUTH)
		return FH_AUTH_MAX;
	return FH_SIZE_MAX - FH_HDR_LEN - up_len;
}

int
fh_key_init(struct fh_key *k)
{
	char digest[] = "SHA256";
	OSSL_PARAM params[2];
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);

	k->mac = mac ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac);	/* the context holds its own reference */
	k->memo = k->mac ? calloc(1, sizeof(*k->memo)) : NULL;
	if (!k->memo) {
		fh_key_fini(k);
		return -1;
	}
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(k->mac, k->bytes, FH_KEY_LEN, params) != 1) {
		fh_key_fini(k);
		return -1;
	}
	return 0;
}

void
fh_key_fini(struct fh_key *k)
{
	EVP_MAC_CTX_free(k->mac);
	k->mac = NULL;
	if (k->memo)
		OPENSSL_cleanse(k->memo, sizeof(*k->memo));
	free(k->memo);
	k->memo = NULL;
}

void
fh_key_counts(const struct fh_key *k, uint64_t *macs, uint64_t *memo_hits)
{
	*macs = k->memo ? k->memo->macs : 0;
	*memo_hits = k->memo ? k->memo->hits : 0;
}

/* The memo slot of handle fh[0..len) (len > 0). */
static struct fh_memo_slot *
memo_slot(const struct fh_key *k, const uint8_t *fh, size_t len)
{
	return &k->memo->slot[fh[len - 1] % FH_MEMO_SLOTS];
}

/*
 * True if a[0..n) equals b[0..n), in a time that depends on n alone: the
 * differences of all the bytes, 8 at a time, or-ed together, with no
 * early exit (as CRYPTO_memcmp, which goes a byte at a time: 250
 * instructions of a cached READ's 6,500 for a 60-byte handle, issue 42).
 */
static bool
same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t diff = 0, x, y;
	size_t i = 0;

	for (; i + sizeof(x) <= n; i += sizeof(x)) {
		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, b + i, sizeof(y));
		diff |= x ^ y;
	}
	for (; i < n; i++)
		diff |= (uint64_t)(a[i] ^ b[i]);
	return diff == 0;
}

/* True if fh[0..len) is its slot's handle (constant time). */
static bool
memo_holds(const struct fh_key *k, const uint8_t *fh, size_t len)
{
	struct fh_memo_slot *s;

	if (!k->memo)
		return false;
	s = memo_slot(k, fh, len);
	if (s->len != len || !same_bytes(s->fh, fh, len))
		return false;
	k->memo->hits++;
	return true;
}

/* Remember fh[0..len), authenticated under k. */
static void
memo_put(const struct fh_key *k, const uint8_t *fh, size_t len)
{
	struct fh_memo_slot *s;

	if (!k->memo)
		return;
	s = memo_slot(k, fh, len);
	memcpy(s->fh, fh, len);
	s->len = len;
}

/* Compute the full HMAC-SHA256 of fh[0..n) into md; 0 or -1. A keyed
 * context starts again from its kept pads (EVP_MAC_init without a key). */
static int
fh_mac(const struct fh_key *k, const uint8_t *fh, size_t n,
       uint8_t md[EVP_MAX_MD_SIZE])
{
	unsigned int len = 0;
	size_t mdlen = 0;

	if (!k->mac) {
		if (HMAC(EVP_sha256(), k->bytes, FH_KEY_LEN, fh, n, md,
			 &len) == NULL)
			return -1;
		return len >= FH_AUTH_MAX ? 0 : -1;
	}
	k->memo->macs++;
	if (EVP_MAC_init(k->mac, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(k->mac, fh, n) != 1 ||
	    EVP_MAC_final(k->mac, md, &mdlen, EVP_MAX_MD_SIZE) != 1)
		return -1;
	return mdlen >= FH_AUTH_MAX ? 0 : -1;
}

enum fh_status
fh_wrap(const struct fh_key *key, unsigned export_id, const uint8_t *up,
	size_t up_len, uint8_t *out, size_t *out_len)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	size_t alen = fh_auth_len(up_len);
	size_t n = FH_HDR_LEN + up_len;

	if (export_id == 0 || export_id > FH_EXPORT_MAX)
		return FH_EINVAL;
	if (up_len == 0 || up_len > FH_UP_MAX)
		return FH_EINVAL;
	out[0] = (uint8_t)(FH_VERSION << FH_VERSION_SHIFT | export_id);
	out[1] = (uint8_t)up_len;
	memcpy(out + FH_HDR_LEN, up, up_len);
	if (fh_mac(key, out, n, md) < 0)
		return FH_EINVAL;
	memcpy(out + n, md, alen);
	OPENSSL_cleanse(md, sizeof(md));
	*out_len = n + alen;
	memo_put(key, out, n + alen);
	return FH_OK;
}

enum fh_status
fh_unwrap(const struct fh_key *key, const uint8_t *fh, size_t len,
	  unsigned *export_id, const uint8_t **up, size_t *up_len)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	size_t l, alen, n;
	int diff;

	if (len < FH_HDR_LEN + 1 || len > FH_SIZE_MAX)
		return FH_EBADHANDLE;
	if (fh[0] >> FH_VERSION_SHIFT != FH_VERSION ||
	    (fh[0] & FH_EXPORT_MASK) == 0)
		return FH_EBADHANDLE;
	l = fh[1];
	alen = fh_auth_len(l);
	n = FH_HDR_LEN + l;
	if (l == 0 || l > FH_UP_MAX || len != n + alen)
		return FH_EBADHANDLE;
	if (!memo_holds(key, fh, len)) {
		if (fh_mac(key, fh, n, md) < 0)
			return FH_EAUTH;
		diff = CRYPTO_memcmp(md, fh + n, alen);
		OPENSSL_cleanse(md, sizeof(md));
		if (diff != 0)
			return FH_EAUTH;
		memo_put(key, fh, len);
	}
	*export_id = fh[0] & FH_EXPORT_MASK;
	*up = fh + FH_HDR_LEN;
	*up_len = l;
	return FH_OK;
}

static int key_fail(int e, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Write a reason into err (if any), set errno to e and return -1. */
static int
key_fail(int e, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

/* Refuse key file path of mode mode when others may read or write it. */
static int
key_mode_check(const char *path, mode_t mode, char *err, size_t errlen)
{
	if (!(mode & 077))
		return 0;
	return key_fail(EPERM, err, errlen,
			"handle key %s has mode %04o: other users can read "
			"(or replace) it and forge file handles; if none may "
			"have, chmod 600 %s, else remove it so a new key is "
			"made at the next start (clients then get stale "
			"handles and remount)", path,
			(unsigned)(mode & 07777), path);
}

/* Read exactly FH_KEY_LEN bytes from the open key file fd. */
static int
key_read(int fd, const char *path, uint8_t *key, char *err, size_t errlen)
{
	struct stat st;
	ssize_t got;

	if (fstat(fd, &st) < 0)
		return key_fail(errno, err, errlen, "%s: %s", path,
				strerror(errno));
	if (!S_ISREG(st.st_mode))
		return key_fail(EINVAL, err, errlen,
				"%s: not a regular file", path);
	if (key_mode_check(path, st.st_mode, err, errlen) != 0)
		return -1;
	if (st.st_size != FH_KEY_LEN)
		return key_fail(EINVAL, err, errlen,
				"%s: %lld bytes, expected %d; remove it to "
				"create a new key (clients then get stale "
				"handles)", path, (long long)st.st_size,
				FH_KEY_LEN);
	got = pread(fd, key, FH_KEY_LEN, 0);
	if (got < 0)
		return key_fail(errno, err, errlen, "%s: %s", path,
				strerror(errno));
	if (got != FH_KEY_LEN)
		return key_fail(EIO, err, errlen, "%s: short read", path);
	return 0;
}

/* Fill key with fresh random bytes and write them to the new file fd. */
static int
key_create(int fd, const char *path, uint8_t *key, char *err, size_t errlen)
{
	ssize_t put;

	if (fchmod(fd, 0600) < 0)
		return key_fail(errno, err, errlen, "%s: chmod: %s", path,
				strerror(errno));
	if (RAND_bytes(key, FH_KEY_LEN) != 1)
		return key_fail(EIO, err, errlen,
				"%s: RAND_bytes failed", path);
	put = write(fd, key, FH_KEY_LEN);
	if (put < 0)
		return key_fail(errno, err, errlen, "%s: write: %s", path,
				strerror(errno));
	if (put != FH_KEY_LEN)
		return key_fail(ENOSPC, err, errlen, "%s: short write", path);
	if (fsync(fd) < 0)
		return key_fail(errno, err, errlen, "%s: fsync: %s", path,
				strerror(errno));
	return 0;
}

/* Create the key file at path; EEXIST means another process won. */
static int
key_load_new(const char *path, uint8_t *key, char *err, size_t errlen)
{
	int fd, rc, e;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return key_fail(errno, err, errlen, "%s: create: %s", path,
				strerror(errno));
	rc = key_create(fd, path, key, err, errlen);
	e = errno;
	close(fd);
	if (rc < 0) {
		unlink(path);	/* never leave a short key behind */
		OPENSSL_cleanse(key, FH_KEY_LEN);
		errno = e;
	}
	return rc;
}

int
fh_key_load(const char *path, uint8_t *key, char *err, size_t errlen)
{
	int fd, rc, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		rc = key_load_new(path, key, err, errlen);
		if (rc == 0 || errno != EEXIST)
			return rc;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return key_fail(errno, err, errlen, "%s: open: %s", path,
				strerror(errno));
	rc = key_read(fd, path, key, err, errlen);
	e = errno;
	close(fd);
	if (rc < 0) {
		OPENSSL_cleanse(key, FH_KEY_LEN);
		errno = e;
	}
	return rc;
}

int
fh_state_dir_check(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) != 0)
		return errno == ENOENT || errno == EACCES ? 0
		       : key_fail(errno, err, errlen, "state_dir %s: %s", dir,
				  strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return key_fail(ENOTDIR, err, errlen,
				"state_dir %s: not a directory", dir);
	if (!(st.st_mode & 022))
		return 0;
	return key_fail(EPERM, err, errlen,
			"state_dir %s has mode %04o: other users can replace "
			"the handle key in it and forge file handles; chmod "
			"700 %s", dir, (unsigned)(st.st_mode & 07777), dir);
}

int
fh_key_check(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return 0;	/* absent (made at start) or not ours to see */
	return key_mode_check(path, st.st_mode, err, errlen);
}
