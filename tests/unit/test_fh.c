/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/fh: client handle layout, authenticator checks and
 * the key file (docs/design.md "File handles"). The expected authenticator is
 * recomputed here with OpenSSL's HMAC so the layout is pinned byte by byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cunit_main.h"
#include "fh.h"

/* The two fixed test keys, keyed as the daemon's (fh_key_init). */
static struct fh_key key_a, key_b;
static const struct fh_key *const key = &key_a;
static const struct fh_key *const key2 = &key_b;

/* Fill the two fixed test keys and key their HMAC contexts. */
static int
suite_init(void)
{
	for (int i = 0; i < FH_KEY_LEN; i++) {
		key_a.bytes[i] = (uint8_t)(i * 13 + 1);
		key_b.bytes[i] = (uint8_t)(i * 13 + 2);
	}
	return fh_key_init(&key_a) != 0 || fh_key_init(&key_b) != 0;
}

/* Release the keys' contexts. */
static int
suite_clean(void)
{
	fh_key_fini(&key_a);
	fh_key_fini(&key_b);
	return 0;
}

/* Fill an upstream handle of n bytes. */
static void
upstream(uint8_t *up, size_t n)
{
	for (size_t i = 0; i < n; i++)
		up[i] = (uint8_t)(0x5a ^ (i * 31));
}

/* Build by hand a handle with header byte h0 and a correct authenticator. */
static size_t
forge_with_key(uint8_t h0, const uint8_t *up, size_t l, uint8_t *out)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t alen = fh_auth_len(l);

	out[0] = h0;
	out[1] = (uint8_t)l;
	memcpy(out + 2, up, l);
	HMAC(EVP_sha256(), key->bytes, FH_KEY_LEN, out, 2 + l, md, &mdlen);
	memcpy(out + 2 + l, md, alen);
	return 2 + l + alen;
}

static void
test_auth_len(void)
{
	CU_ASSERT_EQUAL(fh_auth_len(1), 8);
	CU_ASSERT_EQUAL(fh_auth_len(24), 8);
	CU_ASSERT_EQUAL(fh_auth_len(54), 8);
	CU_ASSERT_EQUAL(fh_auth_len(55), 7);
	CU_ASSERT_EQUAL(fh_auth_len(60), 2);
	CU_ASSERT_EQUAL(fh_auth_len(62), 0);
}

static void
test_wrap_unwrap_round_trip(void)
{
	static const size_t lens[] = { 1, 24, 54, 55, 62 };
	static const size_t want_len[] = { 11, 34, 64, 64, 64 };
	uint8_t up[FH_UP_MAX], fh[FH_SIZE_MAX], ref[FH_SIZE_MAX];
	const uint8_t *got;
	size_t i, n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	for (i = 0; i < 5; i++) {
		n = 0;
		CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 7, up, lens[i], fh, &n), FH_OK);
		CU_ASSERT_EQUAL(n, want_len[i]);
		/* Layout: version|export, length, upstream, truncated HMAC. */
		CU_ASSERT_EQUAL(fh[0], (FH_VERSION << 6) | 7);
		CU_ASSERT_EQUAL(fh[1], lens[i]);
		CU_ASSERT_EQUAL(forge_with_key(fh[0], up, lens[i], ref), n);
		CU_ASSERT_EQUAL(memcmp(fh, ref, n), 0);

		exp = 0;
		got = NULL;
		glen = 0;
		CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen), FH_OK);
		CU_ASSERT_EQUAL(exp, 7);
		CU_ASSERT_EQUAL(glen, lens[i]);
		CU_ASSERT_PTR_EQUAL(got, fh + 2);
		CU_ASSERT_EQUAL(memcmp(got, up, lens[i]), 0);
	}
}

/*
 * Flip every bit of handles of 1, 24, 54 and 55 upstream bytes: each is
 * refused, with one exception the contract implies. A 64-byte handle whose
 * length byte says 62 has a 0-byte authenticator (fh.h), so turning 54
 * (0x36) into 62 (0x3e) by one bit yields a handle that is accepted.
 */
static void
test_flipped_byte_anywhere_is_refused(void)
{
	static const size_t lens[] = { 1, 24, 54, 55 };
	uint8_t up[FH_UP_MAX], fh[FH_SIZE_MAX];
	const uint8_t *got;
	size_t i, pos, n, glen;
	unsigned exp, bit, ok = 0, bad = 0, ok_into_62 = 0;
	enum fh_status st;

	upstream(up, sizeof(up));
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 3, up, lens[i], fh, &n), FH_OK);
		for (pos = 0; pos < n; pos++) {
			for (bit = 0; bit < 8; bit++) {
				fh[pos] ^= (uint8_t)(1u << bit);
				st = fh_unwrap(key, fh, n, &exp, &got, &glen);
				if (st == FH_EAUTH || st == FH_EBADHANDLE)
					bad++;
				else if (pos == 1 && fh[1] == 62)
					ok_into_62++;
				else
					ok++;
				fh[pos] ^= (uint8_t)(1u << bit);
			}
		}
	}
	CU_ASSERT_EQUAL(ok, 0);
	CU_ASSERT_EQUAL(ok_into_62, 1);
	CU_ASSERT_EQUAL(bad, 8 * (11 + 34 + 64 + 64) - 1);
}

/*
 * The contract (fh.h) gives a 62-byte upstream handle no authenticator at
 * all: nothing detects a changed upstream byte or a changed export id.
 * Pinned here so that a change of FH_UP_MAX or of the layout is noticed.
 */
static void
test_62_byte_upstream_handle_is_unauthenticated(void)
{
	uint8_t up[FH_UP_MAX], fh[FH_SIZE_MAX];
	const uint8_t *got;
	size_t n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 3, up, 62, fh, &n), FH_OK);
	CU_ASSERT_EQUAL(n, 64);
	fh[40] ^= 1;
	fh[0] = (uint8_t)((FH_VERSION << 6) | 4);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen), FH_OK);
	CU_ASSERT_EQUAL(exp, 4);
	CU_ASSERT_EQUAL(got[38], up[38] ^ 1);
}

static void
test_wrong_key_is_eauth(void)
{
	uint8_t up[24], fh[FH_SIZE_MAX];
	const uint8_t *got;
	size_t n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 1, up, 24, fh, &n), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(key2, fh, n, &exp, &got, &glen), FH_EAUTH);
}

static void
test_moved_to_other_export_is_eauth(void)
{
	uint8_t up[24], fh[FH_SIZE_MAX];
	const uint8_t *got;
	size_t n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 1, up, 24, fh, &n), FH_OK);
	fh[0] = (uint8_t)((FH_VERSION << 6) | 2);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen), FH_EAUTH);
}

static void
test_upstream_length_limits(void)
{
	uint8_t up[64], fh[FH_SIZE_MAX];
	size_t n = 12345;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL(fh_wrap(key, 1, up, 63, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL(fh_wrap(key, 1, up, 64, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL(fh_wrap(key, 1, up, 0, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL(n, 12345);
	CU_ASSERT_EQUAL(fh_wrap(key, 1, up, 62, fh, &n), FH_OK);
	CU_ASSERT_EQUAL(n, 64);
}

static void
test_export_id_range(void)
{
	uint8_t up[24], fh[FH_SIZE_MAX];
	const uint8_t *got;
	size_t n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL(fh_wrap(key, 0, up, 24, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL(fh_wrap(key, 64, up, 24, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL(fh_wrap(key, 1000, up, 24, fh, &n), FH_EINVAL);
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 63, up, 24, fh, &n), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen), FH_OK);
	CU_ASSERT_EQUAL(exp, 63);
	/* Export id 0 is refused even with a valid authenticator. */
	n = forge_with_key((uint8_t)(FH_VERSION << 6), up, 24, fh);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen),
			FH_EBADHANDLE);
	/* So is another format version. */
	n = forge_with_key((uint8_t)((2 << 6) | 1), up, 24, fh);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n, &exp, &got, &glen),
			FH_EBADHANDLE);
}

static void
test_bad_layouts_are_ebadhandle(void)
{
	uint8_t up[FH_UP_MAX], fh[FH_SIZE_MAX + 8];
	const uint8_t *got;
	size_t n, glen;
	unsigned exp;

	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 5, up, 24, fh, &n), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 0, &exp, &got, &glen), FH_EBADHANDLE);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 1, &exp, &got, &glen), FH_EBADHANDLE);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 2, &exp, &got, &glen), FH_EBADHANDLE);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n - 1, &exp, &got, &glen),
			FH_EBADHANDLE);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, n + 1, &exp, &got, &glen),
			FH_EBADHANDLE);
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 65, &exp, &got, &glen),
			FH_EBADHANDLE);
	/* Declared upstream length 0 and 63. */
	fh[1] = 0;
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 10, &exp, &got, &glen),
			FH_EBADHANDLE);
	fh[1] = 63;
	CU_ASSERT_EQUAL(fh_unwrap(key, fh, 65, &exp, &got, &glen),
			FH_EBADHANDLE);
}

/*
 * The keyed context (kept pads, restarted per handle) and the one-shot
 * HMAC of a key never initialized make the same handles, for every
 * upstream length, and a refused handle between two does not disturb the
 * context: the next one still authenticates (issue 42).
 */
static void
test_keyed_and_one_shot_agree(void)
{
	struct fh_key plain = { .mac = NULL };
	uint8_t up[FH_UP_MAX], a[FH_SIZE_MAX], b[FH_SIZE_MAX];
	const uint8_t *got;
	size_t na, nb, glen;
	unsigned exp;

	CU_ASSERT_PTR_NOT_NULL_FATAL(key->mac);
	memcpy(plain.bytes, key->bytes, FH_KEY_LEN);
	upstream(up, sizeof(up));
	for (size_t l = 1; l <= FH_UP_MAX; l++) {
		CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 9, up, l, a, &na), FH_OK);
		CU_ASSERT_EQUAL_FATAL(fh_wrap(&plain, 9, up, l, b, &nb), FH_OK);
		CU_ASSERT_EQUAL_FATAL(na, nb);
		CU_ASSERT_EQUAL(memcmp(a, b, na), 0);
		CU_ASSERT_EQUAL(fh_unwrap(&plain, a, na, &exp, &got, &glen),
				FH_OK);
		if (fh_auth_len(l) == 8)
			CU_ASSERT_EQUAL(fh_unwrap(key2, a, na, &exp, &got,
						  &glen), FH_EAUTH);
		CU_ASSERT_EQUAL(fh_unwrap(key, b, nb, &exp, &got, &glen),
				FH_OK);
		CU_ASSERT_EQUAL(glen, l);
	}
}

/*
 * An initialized key computes one MAC per handle it has not seen: a
 * wrapped handle unwraps from the memo, as does one authenticated once;
 * a forged one costs a MAC every time and is never remembered; two
 * handles in one memo slot both still unwrap (issue 42).
 */
static void
test_memo_counts_macs(void)
{
	struct fh_key k = { .mac = NULL };
	uint8_t up[24], fh[FH_SIZE_MAX], bad[FH_SIZE_MAX], other[FH_SIZE_MAX];
	const uint8_t *got;
	size_t n, no, glen;
	unsigned exp;
	uint64_t macs, hits;

	memcpy(k.bytes, key->bytes, FH_KEY_LEN);
	CU_ASSERT_EQUAL_FATAL(fh_key_init(&k), 0);
	upstream(up, sizeof(up));
	CU_ASSERT_EQUAL_FATAL(fh_wrap(&k, 4, up, 24, fh, &n), FH_OK);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(fh_unwrap(&k, fh, n, &exp, &got, &glen), FH_OK);
	fh_key_counts(&k, &macs, &hits);
	CU_ASSERT_EQUAL(macs, 1);
	CU_ASSERT_EQUAL(hits, 3);
	memcpy(bad, fh, n);
	bad[n - 2] ^= 1;	/* same slot (the last byte), wrong MAC */
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL(fh_unwrap(&k, bad, n, &exp, &got, &glen),
				FH_EAUTH);
	fh_key_counts(&k, &macs, &hits);
	CU_ASSERT_EQUAL(macs, 3);
	CU_ASSERT_EQUAL(hits, 3);
	/* One bit off at any byte but the last (so in the remembered
	 * handle's slot): never taken from the memo. */
	for (size_t i = 0; i + 1 < n; i++) {
		memcpy(bad, fh, n);
		bad[i] ^= 0x80;
		CU_ASSERT_NOT_EQUAL(fh_unwrap(&k, bad, n, &exp, &got, &glen),
				    FH_OK);
	}
	fh_key_counts(&k, &macs, &hits);
	CU_ASSERT_EQUAL(hits, 3);
	CU_ASSERT_EQUAL(fh_unwrap(&k, fh, n, &exp, &got, &glen), FH_OK);
	fh_key_counts(&k, &macs, &hits);
	CU_ASSERT_EQUAL(hits, 4);
	/* A handle made elsewhere (the unkeyed path) is checked once. */
	up[0] ^= 0xff;
	CU_ASSERT_EQUAL_FATAL(fh_wrap(key, 4, up, 24, other, &no), FH_OK);
	fh_key_fini(&k);
	CU_ASSERT_EQUAL_FATAL(fh_key_init(&k), 0);
	CU_ASSERT_EQUAL(fh_unwrap(&k, other, no, &exp, &got, &glen), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(&k, other, no, &exp, &got, &glen), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(&k, fh, n, &exp, &got, &glen), FH_OK);
	CU_ASSERT_EQUAL(fh_unwrap(&k, other, no, &exp, &got, &glen), FH_OK);
	fh_key_counts(&k, &macs, &hits);
	CU_ASSERT_EQUAL(macs, other[no - 1] == fh[n - 1] ? 3 : 2);
	CU_ASSERT_EQUAL(hits, other[no - 1] == fh[n - 1] ? 1 : 2);
	fh_key_fini(&k);
}

/* Make a fresh temporary directory; its path goes into dir. */
static void
make_tmpdir(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/test_fh.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
}

/* Remove the key file and the directory made by make_tmpdir. */
static void
remove_tmpdir(const char *dir, const char *path)
{
	unlink(path);
	rmdir(dir);
}

static void
test_key_created_0600_and_reloaded(void)
{
	char dir[64], path[128], err[256] = "";
	uint8_t k1[FH_KEY_LEN], k2[FH_KEY_LEN], zero[FH_KEY_LEN] = { 0 };
	struct stat st;
	mode_t old;

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fh.key", dir);
	/* Even under a restrictive umask the file ends up exactly 0600. */
	old = umask(0277);
	CU_ASSERT_EQUAL(fh_key_load(path, k1, err, sizeof(err)), 0);
	umask(old);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	CU_ASSERT_EQUAL(st.st_size, FH_KEY_LEN);
	CU_ASSERT_NOT_EQUAL(memcmp(k1, zero, FH_KEY_LEN), 0);
	CU_ASSERT_EQUAL(fh_key_load(path, k2, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(memcmp(k1, k2, FH_KEY_LEN), 0);
	remove_tmpdir(dir, path);
}

static void
test_two_installations_get_different_keys(void)
{
	char d1[64], d2[64], p1[128], p2[128];
	uint8_t k1[FH_KEY_LEN], k2[FH_KEY_LEN];

	make_tmpdir(d1, sizeof(d1));
	make_tmpdir(d2, sizeof(d2));
	snprintf(p1, sizeof(p1), "%s/k", d1);
	snprintf(p2, sizeof(p2), "%s/k", d2);
	CU_ASSERT_EQUAL(fh_key_load(p1, k1, NULL, 0), 0);
	CU_ASSERT_EQUAL(fh_key_load(p2, k2, NULL, 0), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(k1, k2, FH_KEY_LEN), 0);
	remove_tmpdir(d1, p1);
	remove_tmpdir(d2, p2);
}

/* Write n bytes of 0x11 to path. */
static void
write_file(const char *path, size_t n)
{
	uint8_t b[64];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CU_ASSERT_FATAL(fd >= 0);
	memset(b, 0x11, sizeof(b));
	CU_ASSERT_EQUAL(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static void
test_wrong_size_key_file_refused(void)
{
	static const size_t sizes[] = { 0, 31, 33 };
	char dir[64], path[128], err[256];
	uint8_t k[FH_KEY_LEN];
	struct stat st;

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fh.key", dir);
	for (size_t i = 0; i < 3; i++) {
		write_file(path, sizes[i]);
		err[0] = '\0';
		errno = 0;
		CU_ASSERT_EQUAL(fh_key_load(path, k, err, sizeof(err)), -1);
		CU_ASSERT_EQUAL(errno, EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected 32"));
		/* The file is left alone for the operator to look at. */
		CU_ASSERT_EQUAL(stat(path, &st), 0);
		CU_ASSERT_EQUAL(st.st_size, (off_t)sizes[i]);
	}
	/* A key of the right size is accepted as is. */
	write_file(path, FH_KEY_LEN);
	CU_ASSERT_EQUAL(fh_key_load(path, k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(k[0], 0x11);
	CU_ASSERT_EQUAL(k[FH_KEY_LEN - 1], 0x11);
	remove_tmpdir(dir, path);
}

/* A key others may read (mode & 077) is refused, by the load and by the
 * check alike, naming the mode and the fix; 0600 loads. A state_dir
 * others may write is refused; 0700 and 0755 pass. */
static void
test_key_or_dir_others_may_use_refused(void)
{
	static const mode_t bad[] = { 0644, 0666, 0640, 0604, 0610 };
	char dir[64], path[128], err[512];
	uint8_t k[FH_KEY_LEN];

	make_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/handle.key", dir);
	write_file(path, FH_KEY_LEN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(chmod(path, bad[i]), 0);
		err[0] = '\0';
		errno = 0;
		CU_ASSERT_EQUAL(fh_key_load(path, k, err, sizeof(err)), -1);
		CU_ASSERT_EQUAL(errno, EPERM);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "chmod 600"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
		CU_ASSERT_EQUAL(fh_key_check(path, err, sizeof(err)), -1);
	}
	CU_ASSERT_EQUAL_FATAL(chmod(path, 0600), 0);
	CU_ASSERT_EQUAL(fh_key_load(path, k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(fh_key_check(path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(fh_state_dir_check(dir, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(chmod(dir, 0777), 0);
	CU_ASSERT_EQUAL(fh_state_dir_check(dir, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "mode 0777"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "chmod 700"));
	CU_ASSERT_EQUAL_FATAL(chmod(dir, 0755), 0);
	CU_ASSERT_EQUAL(fh_state_dir_check(dir, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(fh_state_dir_check("/nonexistent-nfscached-dir", err,
					   sizeof(err)), 0);
	CU_ASSERT_EQUAL(fh_key_check("/nonexistent-nfscached-dir/k", err,
				     sizeof(err)), 0);
	remove_tmpdir(dir, path);
}

static void
test_key_in_missing_directory_fails(void)
{
	char err[256] = "";
	uint8_t k[FH_KEY_LEN];

	errno = 0;
	CU_ASSERT_EQUAL(fh_key_load("/nonexistent-nfscached-dir/fh.key", k,
				    err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CU_ASSERT_NOT_EQUAL(err[0], '\0');
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite("fh", suite_init, suite_clean);

	if (s == NULL)
		return -1;
	if (!CU_add_test(s, "auth_len", test_auth_len) ||
	    !CU_add_test(s, "wrap_unwrap_round_trip",
			 test_wrap_unwrap_round_trip) ||
	    !CU_add_test(s, "flipped_byte_anywhere_is_refused",
			 test_flipped_byte_anywhere_is_refused) ||
	    !CU_add_test(s, "62_byte_upstream_handle_is_unauthenticated",
			 test_62_byte_upstream_handle_is_unauthenticated) ||
	    !CU_add_test(s, "wrong_key_is_eauth", test_wrong_key_is_eauth) ||
	    !CU_add_test(s, "keyed_and_one_shot_agree",
			 test_keyed_and_one_shot_agree) ||
	    !CU_add_test(s, "memo_counts_macs", test_memo_counts_macs) ||
	    !CU_add_test(s, "moved_to_other_export_is_eauth",
			 test_moved_to_other_export_is_eauth) ||
	    !CU_add_test(s, "upstream_length_limits",
			 test_upstream_length_limits) ||
	    !CU_add_test(s, "export_id_range", test_export_id_range) ||
	    !CU_add_test(s, "bad_layouts_are_ebadhandle",
			 test_bad_layouts_are_ebadhandle) ||
	    !CU_add_test(s, "key_created_0600_and_reloaded",
			 test_key_created_0600_and_reloaded) ||
	    !CU_add_test(s, "two_installations_get_different_keys",
			 test_two_installations_get_different_keys) ||
	    !CU_add_test(s, "wrong_size_key_file_refused",
			 test_wrong_size_key_file_refused) ||
	    !CU_add_test(s, "key_or_dir_others_may_use_refused",
			 test_key_or_dir_others_may_use_refused) ||
	    !CU_add_test(s, "key_in_missing_directory_fails",
			 test_key_in_missing_directory_fails))
		return -1;
	return 0;
}
