/* SPDX-License-Identifier: MIT */
/*
 * stale: see stale.h. The remembered FSINFO, FSSTAT and PATHCONF results
 * are a small table (STALE_SLOTS) of (export id, procedure, upstream
 * handle) -> result XDR with attributes_follow cleared, filled from every
 * successful forwarded reply while stale_on_error > 0 and replaced oldest
 * first. It holds no references to exports or files.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "nfs3_prot.h"
#include "stale.h"

#define STALE_SLOTS 32
#define FATTR3_XDR 84		/* RFC 1813 fattr3: 13 fields, 84 bytes */

struct stale_slot {
	unsigned ex_id;
	uint32_t proc;
	uint8_t fh[NFS3_FHSIZE];
	size_t fhlen;
	uint8_t *res;		/* malloc'd; NULL = free slot */
	size_t len;
	uint64_t stamp;
};

static struct stale_slot slots[STALE_SLOTS];
static uint64_t clock_;
static struct stale_stats stats;

enum upstream_status stale_refused(const struct export_rt *ex)
{
	return upcall_state(&ex->upc) == UPSTREAM_UP ? UPSTREAM_EPROTO
						     : UPSTREAM_EDOWN;
}

/* Whether st says the upstream could not be reached. */
static bool unreachable(const struct daemon *d, enum upstream_status st)
{
	return d->conf->stale_on_error > 0 &&
	       (st == UPSTREAM_EDOWN || st == UPSTREAM_ETIMEDOUT);
}

bool stale_attrs_usable(const struct daemon *d, const struct cfile *f,
			enum upstream_status st)
{
	return f && unreachable(d, st) &&
	       cfile_attr_fresh(f, daemon_now() - d->conf->stale_on_error);
}

void stale_count(uint32_t proc)
{
	if (proc < UPSTREAM_NPROCS)
		stats.answers[proc]++;
}

/* Whether proc's answers are remembered. */
static bool remembered_proc(uint32_t proc)
{
	return proc == NFSPROC3_FSINFO || proc == NFSPROC3_FSSTAT ||
	       proc == NFSPROC3_PATHCONF;
}

/* The slot of (ex, proc, fh), or NULL. */
static struct stale_slot *slot_find(const struct export_rt *ex, uint32_t proc,
				    const uint8_t *fh, size_t fhlen)
{
	for (unsigned i = 0; i < STALE_SLOTS; i++) {
		struct stale_slot *s = &slots[i];

		if (s->res && s->ex_id == ex->conf->id && s->proc == proc &&
		    s->fhlen == fhlen && memcmp(s->fh, fh, fhlen) == 0)
			return s;
	}
	return NULL;
}

/* The slot to fill for (ex, proc, fh): its own, a free one, or the
 * oldest. */
static struct stale_slot *slot_take(const struct export_rt *ex, uint32_t proc,
				    const uint8_t *fh, size_t fhlen)
{
	struct stale_slot *s = slot_find(ex, proc, fh, fhlen), *old = &slots[0];

	for (unsigned i = 0; !s && i < STALE_SLOTS; i++) {
		if (!slots[i].res)
			s = &slots[i];
		else if (slots[i].stamp < old->stamp)
			old = &slots[i];
	}
	return s ? s : old;
}

void stale_remember(const struct daemon *d, const struct export_rt *ex,
		    uint32_t proc, const uint8_t *fh, size_t fhlen,
		    const uint8_t *res, size_t len)
{
	struct stale_slot *s;
	uint8_t *copy;
	uint32_t follows;

	/* status, attributes_follow, then (when TRUE) the fattr3. */
	if (d->conf->stale_on_error <= 0 || !remembered_proc(proc) ||
	    fhlen > NFS3_FHSIZE || len < 8)
		return;
	memcpy(&follows, res + 4, 4);
	if (follows && len < 8 + FATTR3_XDR)
		return;
	copy = malloc(len);
	if (!copy)
		return;
	memcpy(copy, res, 8);
	memset(copy + 4, 0, 4);
	if (follows) {
		memcpy(copy + 8, res + 8 + FATTR3_XDR, len - 8 - FATTR3_XDR);
		len -= FATTR3_XDR;
	} else {
		memcpy(copy + 8, res + 8, len - 8);
	}
	s = slot_take(ex, proc, fh, fhlen);
	free(s->res);
	s->ex_id = ex->conf->id;
	s->proc = proc;
	memcpy(s->fh, fh, fhlen);
	s->fhlen = fhlen;
	s->res = copy;
	s->len = len;
	s->stamp = ++clock_;
}

const uint8_t *stale_recall(const struct daemon *d, const struct export_rt *ex,
			    uint32_t proc, const uint8_t *fh, size_t fhlen,
			    enum upstream_status st, size_t *len)
{
	const struct stale_slot *s;

	if (!unreachable(d, st) || !remembered_proc(proc) ||
	    !(s = slot_find(ex, proc, fh, fhlen)))
		return NULL;
	*len = s->len;
	return s->res;
}

void stale_forget_all(void)
{
	for (unsigned i = 0; i < STALE_SLOTS; i++) {
		free(slots[i].res);
		slots[i].res = NULL;
	}
}

void stale_stats_get(struct stale_stats *st)
{
	*st = stats;
}
