/* SPDX-License-Identifier: MIT */
/*
 * fstate: per-file daemon state in the cache's owner slot (see fstate.h
 * for which module owns which part). Invariants: the slot holds a state
 * or NULL; a state is freed only when fstate_idle (or at shutdown).
 */
#include <stdlib.h>

#include "daemon.h"
#include "fstate.h"

struct fstate *fstate_find(struct cfile *f)
{
	return *cfile_owner_slot(f);
}

struct fstate *fstate_get(struct daemon *d, struct cfile *f,
			  struct export_rt *ex)
{
	struct fstate *fs = fstate_find(f);

	if (!fs) {
		fs = calloc(1, sizeof(*fs));
		if (!fs)
			return NULL;
		fs->hooks = d->fstate_hooks;
		*cfile_owner_slot(f) = fs;
	}
	if (ex && !fs->ex)
		fs->ex = ex;
	return fs;
}

bool fstate_busy(struct cfile *f)
{
	const struct fstate *fs = fstate_find(f);

	return cfile_has_wb(f) || (fs && (fs->wb_inflight || fs->commit_tag));
}

bool fstate_idle(const struct fstate *fs, const struct cfile *f)
{
	return !cfile_has_wb(f) &&
	       (!fs || (!fs->waits && !fs->wb_inflight && !fs->hold &&
			!fs->reval_inflight && !fs->access_asks &&
			!fs->commit_tag &&
			(!fs->hooks || !fs->hooks->idle ||
			 fs->hooks->idle(fs))));
}

void fstate_free(struct daemon *d, struct fstate *fs)
{
	const struct fstate_hooks *h = fs ? fs->hooks : NULL;

	while (h && h->wait_unlink && fs->waits)
		fs->waits = h->wait_unlink(fs->waits);
	if (h && h->clear)
		h->clear(d, fs);
	free(fs);
}

void fstate_release(struct daemon *d, struct cfile *f)
{
	struct fstate *fs = fstate_find(f);

	if (!fs || !fstate_idle(fs, f))
		return;
	/* Idle: the hooks find nothing to free, but a state has one
	 * teardown path. */
	fstate_free(d, fs);
	*cfile_owner_slot(f) = NULL;
}
