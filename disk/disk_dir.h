/* SPDX-License-Identifier: MIT */
/*
 * disk_dir: whether a path can be the disk tier's cache_dir. The one
 * check behind both the configuration's (conf_load_file, so
 * `nfscached --check-config` and every start and reload) and the store's
 * own at disk_open, so the two never disagree. No LMDB, no threads: the
 * configuration links it alone.
 */
#ifndef NFSCACHED_DISK_DIR_H
#define NFSCACHED_DISK_DIR_H

#include <stddef.h>

/*
 * Check that dir (a NUL-terminated absolute path) is a directory this
 * process may read, write and search, or does not exist yet and its
 * parent is a directory it may write and search (disk_open creates it,
 * mode 0700). Creates and changes nothing: stat(2) and access(2) only.
 * Returns 0, or an errno value with the reason in err[0..errlen) (may be
 * NULL): "cache_dir DIR: Not a directory" (ENOTDIR: dir, or a component
 * of its path, is not a directory), "cache_dir DIR: Permission denied"
 * (EACCES) and the like for what stat(2) or access(2) refuse,
 * "cache_dir DIR: no writable parent directory to create it in" (ENOENT,
 * or the parent's access(2) error) when dir is missing and its parent is
 * missing or not writable.
 */
int disk_dir_check(const char *dir, char *err, size_t errlen);

#endif
