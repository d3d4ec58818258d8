/* SPDX-License-Identifier: MIT */
/* nfs3_status: see nfs3_status.h. */
#include <stddef.h>

#include "nfs3_status.h"

unsigned nfs3_status_index(uint32_t v)
{
	switch (v) {
#define X(s, val) case val: return NFS3_STATUS_##s;
	NFS3_STATUSES(X)
#undef X
	default:
		return NFS3_STATUS_OTHER;
	}
}

const char *nfs3_status_label(unsigned i)
{
	static const char *const names[] = {
#define X(s, v) #s,
		NFS3_STATUSES(X)
#undef X
		"other",
	};

	return i < NFS3_NSTATUSES ? names[i] : NULL;
}

const char *nfs3_status_name(uint32_t v)
{
	unsigned i = nfs3_status_index(v);

	return i == NFS3_STATUS_OTHER ? "an unknown nfsstat3"
				      : nfs3_status_label(i);
}

const char *nfs3_proc_label(uint32_t proc)
{
	static const char *const names[] = {
		"null", "getattr", "setattr", "lookup", "access", "readlink",
		"read", "write", "create", "mkdir", "symlink", "mknod",
		"remove", "rmdir", "rename", "link", "readdir", "readdirplus",
		"fsstat", "fsinfo", "pathconf", "commit",
	};

	return proc < sizeof(names) / sizeof(names[0]) ? names[proc] : NULL;
}
