/* SPDX-License-Identifier: MIT */
/*
 * disk_dir: the cache_dir check (disk_dir.h). Stateless; it reads the
 * file system and changes nothing, so `--check-config` may run it on a
 * path the daemon will create later.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_dir.h"

/* Write "cache_dir DIR: why" into err, if any; return e. */
static int dir_fail(char *err, size_t errlen, const char *dir, const char *why,
		    int e)
{
	if (err && errlen)
		snprintf(err, errlen, "cache_dir %s: %s", dir, why);
	return e;
}

/* Check the parent of a missing dir: a directory we may write and search
 * ("/a/b/" is a child of "/a" as "/a/b" is). 0 or an errno value. */
static int parent_check(const char *dir)
{
	char parent[PATH_MAX];
	struct stat sb;
	size_t n;
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
		return ENAMETOOLONG;
	for (n = strlen(parent); n > 1 && parent[n - 1] == '/'; n--)
		parent[n - 1] = '\0';
	slash = strrchr(parent, '/');
	if (!slash)
		return ENOENT;
	*(slash == parent ? slash + 1 : slash) = '\0';
	if (stat(parent, &sb) != 0)
		return errno;
	if (!S_ISDIR(sb.st_mode))
		return ENOTDIR;
	return access(parent, W_OK | X_OK) == 0 ? 0 : errno;
}

int disk_dir_check(const char *dir, char *err, size_t errlen)
{
	struct stat sb;
	int e;

	if (stat(dir, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return dir_fail(err, errlen, dir, strerror(ENOTDIR), ENOTDIR);
		if (access(dir, R_OK | W_OK | X_OK) != 0)
			return dir_fail(err, errlen, dir, strerror(errno), errno);
		return 0;
	}
	e = errno;
	if (e != ENOENT)
		return dir_fail(err, errlen, dir, strerror(e), e);
	e = parent_check(dir);
	if (e != 0) {
		char why[128];

		snprintf(why, sizeof(why), "no writable parent directory to "
			 "create it in (%s)", strerror(e));
		return dir_fail(err, errlen, dir, why, e);
	}
	return 0;
}
