/* SPDX-License-Identifier: MIT */
/*
 * stale: see stale.h. The remembered FSINFO, FSSTAT and PATHCONF results
 * are a small table (STALE_SLOTS) of (export id, procedure, upstream
 * handle) -> result XDR with attributes_follow cleared, filled from every
 * successful forwarded reply while stale_on_error > 0 and replaced oldest
 * first. It holds no references to exports or files.
 *
 * Outage records (stale_keep_*, stale_restore): one record per fact,
 * under a key whose first byte says its kind (OK_*, below), its value
 * the fact's bytes and its stamp the wall-clock time it was kept (ns):
 * wall-clock, because the monotonic clock restarts with the machine. A
 * record is put only when its value changed since this process last put
 * it (kept: a set of (key hash, value hash), emptied when it reaches
 * DISK_OUTAGE_MAX entries). The kept roots are a small table
 * (STALE_ROOTS) filled at restore.
 *
 * All of it (slots, kept set, roots, counters) is the daemon's struct
 * stale (d->stale, made by stale_start, freed by stale_forget_all),
 * touched from the loop thread only.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>
#include <xxhash.h>

#include "attr.h"
#include "daemon.h"
#include "disk.h"
#include "disk_tier.h"
#include "log.h"
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

static void keep_proc(const struct daemon *d, const struct export_rt *ex,
		      uint32_t proc, const uint8_t *fh, size_t fhlen,
		      const uint8_t *res, size_t len);

/* A (key hash, value hash) put by this process. */
struct kept {
	uint64_t kh, vh;
	UT_hash_handle hh;
};

/* A root handle kept by an earlier run, by export path. */
struct kept_root {
	char path[256];
	uint8_t fh[NFS3_FHSIZE];
	size_t len;
};

#define STALE_ROOTS	64

/* What stale_on_error keeps for one daemon. */
struct stale {
	struct stale_slot slots[STALE_SLOTS];
	uint64_t clock;			/* stamp of the newest slot */
	struct kept *kept;		/* what this process put (uthash) */
	unsigned nkept;
	struct kept_root roots[STALE_ROOTS];
	struct stale_stats stats;
};

int stale_start(struct daemon *d)
{
	d->stale = calloc(1, sizeof(*d->stale));
	return d->stale ? 0 : -1;
}

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

void stale_count(struct daemon *d, uint32_t proc)
{
	if (proc < UPSTREAM_NPROCS)
		d->stale->stats.answers[proc]++;
}

void stale_count_mount(struct daemon *d)
{
	d->stale->stats.mounts++;
}

/* Whether proc's answers are remembered. */
static bool remembered_proc(uint32_t proc)
{
	return proc == NFSPROC3_FSINFO || proc == NFSPROC3_FSSTAT ||
	       proc == NFSPROC3_PATHCONF;
}

/* The slot of (ex, proc, fh) in sl, or NULL. */
static struct stale_slot *slot_find(struct stale *sl,
				    const struct export_rt *ex, uint32_t proc,
				    const uint8_t *fh, size_t fhlen)
{
	for (unsigned i = 0; i < STALE_SLOTS; i++) {
		struct stale_slot *s = &sl->slots[i];

		if (s->res && s->ex_id == ex->conf->id && s->proc == proc &&
		    s->fhlen == fhlen && memcmp(s->fh, fh, fhlen) == 0)
			return s;
	}
	return NULL;
}

/* The slot of sl to fill for (ex, proc, fh): its own, a free one, or the
 * oldest. */
static struct stale_slot *slot_take(struct stale *sl,
				    const struct export_rt *ex, uint32_t proc,
				    const uint8_t *fh, size_t fhlen)
{
	struct stale_slot *s = slot_find(sl, ex, proc, fh, fhlen);
	struct stale_slot *old = &sl->slots[0];

	for (unsigned i = 0; !s && i < STALE_SLOTS; i++) {
		if (!sl->slots[i].res)
			s = &sl->slots[i];
		else if (sl->slots[i].stamp < old->stamp)
			old = &sl->slots[i];
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
	s = slot_take(d->stale, ex, proc, fh, fhlen);
	free(s->res);
	s->ex_id = ex->conf->id;
	s->proc = proc;
	memcpy(s->fh, fh, fhlen);
	s->fhlen = fhlen;
	s->res = copy;
	s->len = len;
	s->stamp = ++d->stale->clock;
	keep_proc(d, ex, proc, fh, fhlen, copy, len);
}

const uint8_t *stale_recall(const struct daemon *d, const struct export_rt *ex,
			    uint32_t proc, const uint8_t *fh, size_t fhlen,
			    enum upstream_status st, size_t *len)
{
	const struct stale_slot *s;

	if (!unreachable(d, st) || !remembered_proc(proc) ||
	    !(s = slot_find(d->stale, ex, proc, fh, fhlen)))
		return NULL;
	*len = s->len;
	return s->res;
}

/* ---- outage records ---- */

/* Record kinds: the key's first byte. */
#define OK_ATTR		'A'	/* fh -> fattr3 XDR */
#define OK_ACCESS	'C'	/* fh len, fh, asked, cred -> asked, granted */
#define OK_NAME		'N'	/* dir len, dir, name -> child fh */
#define OK_PROC		'P'	/* export id (4), proc (1), fh -> result */
#define OK_ROOT		'R'	/* export path -> root fh */

#define NS		1000000000.0

/* The disk tier, when outage records are kept. */
static struct disk *keeper(const struct daemon *d)
{
	return d->conf->stale_on_error > 0 ? disk_tier_disk(d) : NULL;
}

/* Wall-clock now, ns. */
static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Forget what sl's process put (the dedupe set). */
static void kept_clear(struct stale *sl)
{
	struct kept *k, *tmp;

	HASH_ITER(hh, sl->kept, k, tmp) {
		HASH_DEL(sl->kept, k);
		free(k);
	}
	sl->nkept = 0;
}

/* Put key -> val unless this process already put that value. */
static void keep(const struct daemon *d, const uint8_t *key, size_t klen,
		 const void *val, size_t vlen)
{
	struct disk *dk = keeper(d);
	struct stale *sl = d->stale;
	uint64_t kh, vh;
	struct kept *k;

	if (!dk || !disk_on(dk))
		return;
	kh = XXH3_64bits(key, klen);
	vh = XXH3_64bits(val, vlen);
	HASH_FIND(hh, sl->kept, &kh, sizeof(kh), k);
	if (k && k->vh == vh)
		return;
	if (disk_outage_put(dk, key, klen, val, vlen, wall_ns()) != 0)
		return;
	if (!k) {
		if (sl->nkept >= DISK_OUTAGE_MAX)
			kept_clear(sl);
		if (!(k = calloc(1, sizeof(*k))))
			return;
		k->kh = kh;
		HASH_ADD(hh, sl->kept, kh, sizeof(k->kh), k);
		sl->nkept++;
	}
	k->vh = vh;
}

void stale_keep_attr(const struct daemon *d, const struct cfile *f)
{
	uint8_t key[1 + NFS3_FHSIZE], val[128];
	const uint8_t *fh;
	fattr3 fa;
	size_t len;
	XDR x;

	if (!keeper(d) || !f || !cfile_has_attr(f) ||
	    !(fh = cfile_fh(f, &len)) || len == 0 || len > NFS3_FHSIZE)
		return;
	key[0] = OK_ATTR;
	memcpy(key + 1, fh, len);
	attr_to_fattr3(cfile_attr(f), &fa);
	xdrmem_create(&x, (char *)val, sizeof(val), XDR_ENCODE);
	if (xdr_fattr3(&x, &fa))
		keep(d, key, 1 + len, val, xdr_getpos(&x));
	xdr_destroy(&x);
}

/* Encode cr into b after its fh; the bytes written. */
static size_t cred_bytes(const struct nfs_cred *cr, uint8_t *b)
{
	uint32_t n = cr->ngids <= NFS_CRED_MAX_GIDS ? cr->ngids : 0;

	memcpy(b, &cr->uid, 4);
	memcpy(b + 4, &cr->gid, 4);
	memcpy(b + 8, &n, 4);
	memcpy(b + 12, cr->gids, n * 4);
	return 12 + n * 4;
}

void stale_keep_access(const struct daemon *d, const struct cfile *f,
		       const struct nfs_cred *cr, uint32_t asked,
		       uint32_t granted)
{
	uint8_t key[6 + NFS3_FHSIZE + 12 + 4 * NFS_CRED_MAX_GIDS];
	uint32_t val[2] = { asked, granted };
	const uint8_t *fh;
	size_t len;

	if (!keeper(d) || !f || !(fh = cfile_fh(f, &len)) || len == 0 ||
	    len > NFS3_FHSIZE)
		return;
	key[0] = OK_ACCESS;
	key[1] = (uint8_t)len;
	memcpy(key + 2, fh, len);
	memcpy(key + 2 + len, &asked, 4);	/* one record per question */
	keep(d, key, 6 + len + cred_bytes(cr, key + 6 + len), val, sizeof(val));
}

void stale_keep_name(const struct daemon *d, const uint8_t *dir, size_t dlen,
		     const uint8_t *name, size_t nlen, const uint8_t *fh,
		     size_t fhlen)
{
	uint8_t key[DISK_OUTAGE_KEY_MAX];

	if (!keeper(d) || dlen == 0 || dlen > NFS3_FHSIZE || fhlen == 0 ||
	    fhlen > NFS3_FHSIZE || 2 + dlen + nlen > sizeof(key))
		return;
	key[0] = OK_NAME;
	key[1] = (uint8_t)dlen;
	memcpy(key + 2, dir, dlen);
	memcpy(key + 2 + dlen, name, nlen);
	keep(d, key, 2 + dlen + nlen, fh, fhlen);
}

void stale_keep_root(const struct daemon *d, const struct export_rt *ex,
		     const uint8_t *root, size_t len)
{
	uint8_t key[1 + sizeof(((struct kept_root *)0)->path)];
	size_t plen = strlen(ex->conf->path);

	if (!keeper(d) || plen >= sizeof(key) - 1 || len == 0 ||
	    len > NFS3_FHSIZE)
		return;
	key[0] = OK_ROOT;
	memcpy(key + 1, ex->conf->path, plen);
	keep(d, key, 1 + plen, root, len);
}

/* Keep a remembered FSINFO, FSSTAT or PATHCONF result (stale_remember). */
static void keep_proc(const struct daemon *d, const struct export_rt *ex,
		      uint32_t proc, const uint8_t *fh, size_t fhlen,
		      const uint8_t *res, size_t len)
{
	uint8_t key[6 + NFS3_FHSIZE];
	uint32_t id = ex->conf->id;

	if (len > DISK_OUTAGE_VAL_MAX)
		return;
	key[0] = OK_PROC;
	memcpy(key + 1, &id, 4);
	key[5] = (uint8_t)proc;
	memcpy(key + 6, fh, fhlen);
	keep(d, key, 6 + fhlen, res, len);
}

bool stale_now(const struct daemon *d, const struct export_rt *ex)
{
	return d->conf->stale_on_error > 0 &&
	       upcall_state(&ex->upc) != UPSTREAM_UP;
}

const uint8_t *stale_root(const struct daemon *d, const struct export_rt *ex,
			  size_t *len)
{
	const struct kept_root *roots = d->stale->roots;

	if (!stale_now(d, ex))
		return NULL;
	for (unsigned i = 0; i < STALE_ROOTS; i++)
		if (roots[i].len && strcmp(roots[i].path, ex->conf->path) == 0) {
			*len = roots[i].len;
			return roots[i].fh;
		}
	return NULL;
}

/* What stale_restore passes its scan. */
struct restore {
	struct daemon *d;
	stale_name_fn *name_fn;
	double now;			/* daemon_now() */
	uint64_t wall;			/* wall_ns() */
	long installed;
};

/* When a record stamped at wall-clock stamp was learned, on daemon_now's
 * clock. */
static double learned_at(const struct restore *rs, uint64_t stamp)
{
	return rs->now - (stamp < rs->wall ? (double)(rs->wall - stamp) / NS
					   : 0.0);
}

/* Install kept attributes val into fh's file unless it has some. */
static bool restore_attr(struct restore *rs, const uint8_t *fh, size_t len,
			 const void *val, size_t vlen, double at)
{
	static const struct cache_ac none = { 0, 0 };
	struct cfile *f;
	struct cattr a;
	fattr3 fa;
	XDR x;
	bool ok;

	memset(&fa, 0, sizeof(fa));
	xdrmem_create(&x, (char *)(uintptr_t)val, (u_int)vlen, XDR_DECODE);
	ok = xdr_fattr3(&x, &fa);
	xdr_destroy(&x);
	if (!ok || !(f = cache_get(rs->d->cache, fh, len)))
		return false;
	ok = !cfile_has_attr(f);
	if (ok) {
		attr_from_fattr3(&fa, &a);
		cfile_attr_observe(rs->d->cache, f, &a, at, &none);
		cfile_attr_expire(f);	/* the upstream is asked first */
	}
	cfile_put(rs->d->cache, &f);
	return ok;
}

/* Install a kept ACCESS result (key: fh length, fh, cred). */
static bool restore_access(struct restore *rs, const uint8_t *k, size_t klen,
			   const void *val, size_t vlen)
{
	struct nfs_cred cr = { 0 };
	uint32_t v[2], n;
	struct cfile *f;
	size_t fl;

	if (klen < 1 || (fl = k[0]) == 0 || klen < 1 + fl + 16 || vlen != 8)
		return false;
	fl += 4;			/* the handle, then asked */
	memcpy(&cr.uid, k + 1 + fl, 4);
	memcpy(&cr.gid, k + 5 + fl, 4);
	memcpy(&n, k + 9 + fl, 4);
	if (n > NFS_CRED_MAX_GIDS || klen != 1 + fl + 12 + 4 * (size_t)n)
		return false;
	cr.ngids = n;
	memcpy(cr.gids, k + 13 + fl, 4 * (size_t)n);
	fl -= 4;
	memcpy(v, val, 8);
	f = cache_find(rs->d->cache, k + 1, fl);
	if (!f)
		return false;
	cfile_access_record(f, &cr, v[0], v[1]);
	cfile_put(rs->d->cache, &f);
	return true;
}

/* Install a kept root handle of the export path k[0..klen). */
static bool restore_root(struct restore *rs, const uint8_t *k, size_t klen,
			 const void *val, size_t vlen)
{
	struct kept_root *roots = rs->d->stale->roots;

	for (unsigned i = 0; i < STALE_ROOTS; i++) {
		if (roots[i].len)
			continue;
		if (klen >= sizeof(roots[i].path) || vlen > NFS3_FHSIZE)
			return false;
		memcpy(roots[i].path, k, klen);
		roots[i].path[klen] = 0;
		memcpy(roots[i].fh, val, vlen);
		roots[i].len = vlen;
		return true;
	}
	return false;
}

/* Install a kept FSINFO, FSSTAT or PATHCONF result. */
static bool restore_proc(struct restore *rs, const uint8_t *k, size_t klen,
			 const void *val, size_t vlen)
{
	struct export_rt *ex;
	uint32_t id;

	if (klen < 6 || klen - 6 > NFS3_FHSIZE)
		return false;
	memcpy(&id, k + 1, 4);
	ex = daemon_export(rs->d, id);
	if (!ex || !remembered_proc(k[5]))
		return false;
	stale_remember(rs->d, ex, k[5], k + 6, klen - 6, val, vlen);
	return true;
}

/* Install one kept record (disk_outage_scan's callback). */
static int restore_one(void *arg, const uint8_t *k, size_t klen,
		       const void *val, size_t vlen, uint64_t stamp)
{
	struct restore *rs = arg;
	double at = learned_at(rs, stamp);
	bool ok = false;

	switch (k[0]) {
	case OK_ATTR:
		ok = klen > 1 && klen - 1 <= NFS3_FHSIZE &&
		     restore_attr(rs, k + 1, klen - 1, val, vlen, at);
		break;
	case OK_ACCESS:
		ok = restore_access(rs, k + 1, klen - 1, val, vlen);
		break;
	case OK_NAME:
		ok = klen > 2 && (size_t)k[1] + 2 < klen && rs->name_fn;
		if (ok)
			rs->name_fn(rs->d, k + 2, k[1], k + 2 + k[1],
				    klen - 2 - k[1], val, vlen, at);
		break;
	case OK_PROC:
		ok = restore_proc(rs, k, klen, val, vlen);
		break;
	case OK_ROOT:
		ok = restore_root(rs, k + 1, klen - 1, val, vlen);
		break;
	}
	rs->installed += ok;
	return 0;
}

long stale_restore(struct daemon *d, stale_name_fn *name_fn)
{
	struct restore rs = { d, name_fn, daemon_now(), wall_ns(), 0 };
	struct disk *dk = keeper(d);
	long n;

	if (!dk)
		return 0;
	n = disk_outage_scan(dk, restore_one, &rs);
	if (n < 0)
		log_warn("outage records of %s: cannot be read",
			 d->conf->cache_dir);
	else if (n > 0)
		log_info("outage records: %ld kept, %ld installed", n,
			 rs.installed);
	return rs.installed;
}

void stale_drop_kept(const struct daemon *d)
{
	struct disk *dk = keeper(d);

	if (!dk)
		return;
	if (disk_on(dk) && disk_outage_drop_all(dk) != 0)
		log_warn("outage records of %s: their removal could not be "
			 "queued", d->conf->cache_dir);
	kept_clear(d->stale);
	memset(d->stale->roots, 0, sizeof(d->stale->roots));
}

void stale_forget_all(struct daemon *d)
{
	struct stale *sl = d->stale;

	if (!sl)
		return;
	kept_clear(sl);
	for (unsigned i = 0; i < STALE_SLOTS; i++)
		free(sl->slots[i].res);
	free(sl);
	d->stale = NULL;
}

void stale_stats_get(const struct daemon *d, struct stale_stats *st)
{
	if (d->stale)
		*st = d->stale->stats;
	else
		memset(st, 0, sizeof(*st));
}
