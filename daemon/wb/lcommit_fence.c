/* SPDX-License-Identifier: MIT */
/*
 * lcommit_fence: see lcommit_fence.h. The block: struct lcf_block, then
 * zeros up to LCF_SIZE; the checksum is XXH3-64 of the whole block with
 * the checksum field 0. A torn write of the block fails the checksum and
 * reads as no fence; the other place then still holds the previous one
 * (they are written one after the other, each synced).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "lcommit_fence.h"

#define LCF_MAGIC	0x31434e46u	/* "FNC1" */

struct lcf_block {
	uint32_t magic;
	uint32_t size;			/* LCF_SIZE */
	uint64_t checksum;
	struct lcommit_fence fz;
};

_Static_assert(sizeof(struct lcf_block) <= LCF_SIZE, "fence block too big");

/* dir/LCF_NAME into buf (PATH_MAX); false when too long. */
static bool fence_path(const char *dir, char *buf)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, LCF_NAME);

	return n > 0 && n < PATH_MAX;
}

/* Write all of buf at off of fd; 0 or -1 with errno. */
static int write_all(int fd, const uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t w = pwrite(fd, buf, len, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		buf += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/* fsync the directory dir. */
static int dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int lcommit_fence_prepare(const char *dir)
{
	static const uint8_t zeros[LCF_SIZE];
	char path[PATH_MAX];
	struct stat sb;
	int fd, e;

	if (!dir || !fence_path(dir, path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size >= LCF_SIZE)
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	/* Real bytes, not fallocate: an overwrite then needs no block. */
	if (write_all(fd, zeros, sizeof(zeros), 0) != 0 || fsync(fd) != 0) {
		e = errno;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	close(fd);
	return dir_sync(dir);
}

/* The checksum of block b (its checksum field taken as 0). */
static uint64_t block_sum(const uint8_t *b)
{
	uint8_t copy[LCF_SIZE];

	memcpy(copy, b, LCF_SIZE);
	memset(copy + offsetof(struct lcf_block, checksum), 0, sizeof(uint64_t));
	return XXH3_64bits(copy, LCF_SIZE);
}

int lcommit_fence_read(const char *dir, uint64_t id, struct lcommit_fence *out)
{
	uint8_t b[LCF_SIZE];
	struct lcf_block h;
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!dir || !fence_path(dir, path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	n = pread(fd, b, sizeof(b), 0);
	close(fd);
	if (n < 0)
		return -1;
	if (n != (ssize_t)sizeof(b))
		return 0;
	memcpy(&h, b, sizeof(h));
	if (h.magic != LCF_MAGIC || h.size != LCF_SIZE ||
	    h.checksum != block_sum(b) || h.fz.id != id ||
	    h.fz.nkeep > LCF_KEEP_MAX)
		return 0;
	for (uint32_t i = 0; i < h.fz.nkeep; i++)
		if (h.fz.keep[i].len == 0 || h.fz.keep[i].len > LCF_FH_MAX)
			return 0;
	*out = h.fz;
	return 1;
}

int lcommit_fence_write(const char *dir, const struct lcommit_fence *fz)
{
	uint8_t b[LCF_SIZE];
	struct lcf_block h;
	char path[PATH_MAX];
	int fd, rc, e;

	if (!dir || !fence_path(dir, path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(b, 0, sizeof(b));
	memset(&h, 0, sizeof(h));
	h.magic = LCF_MAGIC;
	h.size = LCF_SIZE;
	h.fz = *fz;
	memcpy(b, &h, sizeof(h));
	h.checksum = block_sum(b);
	memcpy(b, &h, sizeof(h));
	/* No O_CREAT: only the block lcommit_fence_prepare allocated. */
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	rc = write_all(fd, b, sizeof(b), 0);
	if (rc == 0)
		rc = fdatasync(fd);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

bool lcommit_fence_covers(const struct lcommit_fence *fz, uint64_t seq,
			  const uint8_t *fh, size_t fh_len)
{
	if (seq > fz->hi)
		return false;
	for (uint32_t i = 0; i < fz->nkeep; i++)
		if (fz->keep[i].len == fh_len &&
		    memcmp(fz->keep[i].fh, fh, fh_len) == 0)
			return false;
	return true;
}
