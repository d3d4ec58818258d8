/* SPDX-License-Identifier: MIT */
/* fstate: per-file daemon state on the cache's owner slot (see fstate.h). */
#include <stdlib.h>

#include "daemon.h"
#include "fstate.h"
#include "writeback.h"

struct fstate *fstate_find(struct cfile *f)
{
	return *cfile_owner_slot(f);
}

struct fstate *fstate_get(struct daemon *d, struct cfile *f,
			  struct export_rt *ex)
{
	struct fstate *fs = fstate_find(f);

	(void)d;
	if (!fs) {
		fs = calloc(1, sizeof(*fs));
		if (!fs)
			return NULL;
		*cfile_owner_slot(f) = fs;
	}
	if (ex && !fs->ex)
		fs->ex = ex;
	return fs;
}

void fstate_free(void *p)
{
	struct fstate *fs = p;

	while (fs && fs->waits) {
		struct wb_wait *w = fs->waits;

		fs->waits = writeback_wait_unlink(w);
	}
	free(fs);
}

void fstate_release(struct daemon *d, struct cfile *f)
{
	struct fstate *fs = fstate_find(f);

	(void)d;
	if (!fs || fs->fetches || fs->waits || fs->wb_inflight || fs->hold ||
	    fs->reval_inflight ||
	    fs->commit_tag || cfile_wb_bytes(f, WB_DIRTY) ||
	    cfile_wb_bytes(f, WB_WRITING) || cfile_wb_bytes(f, WB_UNSTABLE))
		return;
	free(fs);
	*cfile_owner_slot(f) = NULL;
}
