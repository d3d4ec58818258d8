/* SPDX-License-Identifier: MIT */
/*
 * metatest_util: helpers for the metadata cache integration tests (see
 * metatest_util.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "metatest_util.h"

/* The NFSv3 procedures as the upstream counter labels them. */
static const char *const procs[] = {
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read",
	"write", "create", "mkdir", "symlink", "mknod", "remove", "rmdir",
	"rename", "link", "readdir", "readdirplus", "fsstat", "fsinfo",
	"pathconf", "commit",
};

uint64_t mt_upstream_total(const struct ct_metrics *m)
{
	char series[96];
	uint64_t sum = 0, v;

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		snprintf(series, sizeof(series),
			 "nfscached_upstream_rpcs_total{procedure=\"%s\"}", procs[i]);
		if ((v = ct_metric(m, series)) == CT_ABSENT)
			return CT_ABSENT;
		sum += v;
	}
	return sum;
}

uint64_t mt_upstream_total_delta(const struct ct_metrics *before,
				 const struct ct_metrics *after)
{
	uint64_t a = mt_upstream_total(before), b = mt_upstream_total(after);

	return a == CT_ABSENT || b == CT_ABSENT ? CT_ABSENT : b - a;
}

int mt_disk_mkdir(const char *rel)
{
	char path[4096];

	if (ct_disk_path(rel, path, sizeof(path)) != 0)
		return -1;
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "metatest: mkdir %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int mt_disk_touch(const char *rel)
{
	return ct_disk_write(rel, "", 0);
}

int mt_disk_files(const char *dir, const char *prefix, unsigned n)
{
	char rel[1024];

	for (unsigned i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/%s%04u", dir, prefix, i);
		if (mt_disk_touch(rel) != 0)
			return -1;
	}
	return 0;
}

int mt_lookup_path(struct nfsc *c, const char *path, nfs_fh3 *fh)
{
	char comp[1024];
	nfs_fh3 cur, next;
	const char *p = path;
	int st = NFS3ERR_INVAL;

	nfsc_fh_copy(&cur, nfsc_root(c));
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || n >= sizeof(comp))
			break;
		memcpy(comp, p, n);
		comp[n] = '\0';
		st = nfsc_lookup(c, &cur, comp, &next, NULL);
		nfsc_fh_free(&cur);
		cur = next;
		if (st != NFS3_OK)
			break;
		p += n;
		p += *p == '/';
	}
	*fh = cur;
	return st;
}

int mt_list(struct nfsc *c, const nfs_fh3 *dir, int plus,
	    struct nfsc_listing *l)
{
	nfsc_list_dir(c, dir, plus, MT_LIST_COUNT, l);
	if (l->st == NFS3_OK && l->stuck)
		return NFSC_ERR_RPC;
	return l->st;
}

int mt_has_name(const struct nfsc_listing *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->e[i].name, name) == 0)
			return 1;
	return 0;
}
