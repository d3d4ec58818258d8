/* SPDX-License-Identifier: MIT */
/*
 * meta: name entries and directory listings (see meta.h for the model).
 *
 * Ownership: the cache owns every directory record (hash by upstream
 * handle), every name entry (hash by directory serial and name, and on its
 * directory's list) and every listing (one per directory). Name entries
 * and listings are "items" on one LRU list, head = most recently used;
 * directory records are not on it and go when their last item goes.
 * Nothing is handed out but borrowed views (meta_list_get).
 *
 * Invariants (meta_check): `bytes` is the sum of every record's and
 * item's accounted size and stays within the budget after every call;
 * the LRU holds exactly the names and listings; each name is in the hash
 * and on its directory's list, and the counts match; every directory
 * record has at least one item except transiently inside a call; a
 * listing's cookies are unique.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <utlist.h>

#include "meta.h"

#define ALLOC_OVERHEAD	16	/* estimate of malloc's per-block cost */
#define BUCKET_OVERHEAD	16	/* estimate of a hash bucket per item */
#define DIR_KEY_LEN	(CACHE_FH_MAX + 1)

enum item_kind { ITEM_NAME = 1, ITEM_LIST };

struct mdir;

/* A member of the LRU: a name entry or a listing. */
struct item {
	struct item *prev, *next;	/* LRU, head = newest */
	struct mdir *dir;
	size_t bytes;			/* accounted size */
	uint8_t kind;
};

struct mname {
	struct item it;			/* first: an mname is an item */
	UT_hash_handle hh;		/* meta.names, key key[0..keylen) */
	struct mname *dprev, *dnext;	/* the directory's names */
	double learned;			/* negative: when */
	uint16_t keylen;		/* 8 + name length */
	uint8_t fhlen;			/* 0: negative */
	bool stale;			/* learned under an older stamp: only
					 * a hint (meta_name_peek) */
	uint8_t key[];			/* dir serial, name; then the handle */
};

struct mlist {
	struct item it;			/* first: an mlist is an item */
	struct meta_dirent *e;		/* entries; name, NUL and fh in one
					 * block each */
	size_t n, cap;
	size_t hint;			/* index after the last cookie found */
	uint8_t verf[META_VERF_SIZE];
	bool plus;
	bool eof;
};

struct mdir {
	uint8_t key[DIR_KEY_LEN];	/* handle length, handle, zeros */
	uint64_t serial;		/* names' key prefix */
	struct meta_stamp stamp;
	struct mname *names;		/* DL list */
	size_t nnames;
	struct mlist *list;
	UT_hash_handle hh;		/* meta.dirs */
};

struct meta {
	uint64_t budget;
	struct mdir *dirs;
	struct mname *names;
	struct item *lru;
	uint64_t next_serial;
	struct meta_stats st;
};

/* Bytes accounted for one directory record. */
static size_t dir_bytes(void)
{
	return sizeof(struct mdir) + ALLOC_OVERHEAD + BUCKET_OVERHEAD;
}

/* Bytes accounted for a name entry of keylen + fhlen bytes. */
static size_t name_bytes(size_t keylen, size_t fhlen)
{
	return sizeof(struct mname) + keylen + fhlen + ALLOC_OVERHEAD +
	       BUCKET_OVERHEAD;
}

/* Bytes accounted for one listing entry's name and handle block. */
static size_t dirent_bytes(const struct meta_dirent *e)
{
	return e->namelen + 1 + e->fhlen + ALLOC_OVERHEAD;
}

/* Bytes accounted for a listing's fixed part and array of cap entries. */
static size_t list_base_bytes(size_t cap)
{
	return sizeof(struct mlist) + ALLOC_OVERHEAD +
	       (cap ? cap * sizeof(struct meta_dirent) + ALLOC_OVERHEAD : 0);
}

/* Compare two times. */
static bool time_eq(const struct ctime3 *a, const struct ctime3 *b)
{
	return a->sec == b->sec && a->nsec == b->nsec;
}

/* Compare change evidence. */
static bool wcc_eq(const struct cwcc *a, const struct cwcc *b)
{
	return a->size == b->size && time_eq(&a->mtime, &b->mtime) &&
	       time_eq(&a->ctime, &b->ctime);
}

/* Compare stamps. */
static bool stamp_eq(const struct meta_stamp *a, const struct meta_stamp *b)
{
	return a->gen == b->gen && wcc_eq(&a->wcc, &b->wcc);
}

struct meta *meta_new(uint64_t budget)
{
	struct meta *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->budget = budget;
	m->st.budget = budget;
	return m;
}

uint64_t meta_budget(const struct meta *m)
{
	return m->budget;
}

/* ---- items and the LRU ---- */

/* Make it the most recently used item. */
static void item_touch(struct meta *m, struct item *it)
{
	if (m->lru == it)
		return;
	DL_DELETE(m->lru, it);
	DL_PREPEND(m->lru, it);
}

/* Free a listing's entries and the listing (already off the LRU). */
static void list_release(struct mlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free((void *)(uintptr_t)l->e[i].name);
	free(l->e);
	free(l);
}

/* Remove item it from everything and free it. */
static void item_free(struct meta *m, struct item *it)
{
	struct mdir *d = it->dir;

	DL_DELETE(m->lru, it);
	m->st.bytes -= it->bytes;
	if (it->kind == ITEM_NAME) {
		struct mname *n = (struct mname *)it;

		HASH_DEL(m->names, n);
		DL_DELETE2(d->names, n, dprev, dnext);
		d->nnames--;
		m->st.names--;
		if (!n->fhlen)
			m->st.negatives--;
		if (n->stale)
			m->st.stale--;
		free(n);
	} else {
		struct mlist *l = (struct mlist *)it;

		d->list = NULL;
		m->st.listings--;
		m->st.listing_entries -= l->n;
		list_release(l);
	}
}

/* Free directory record d and all of its items. */
static void dir_free(struct meta *m, struct mdir *d)
{
	while (d->names)
		item_free(m, &d->names->it);
	if (d->list)
		item_free(m, &d->list->it);
	HASH_DEL(m->dirs, d);
	m->st.bytes -= dir_bytes();
	m->st.dirs--;
	free(d);
}

/* Free d if nothing is cached under it any more (and it is not keep). */
static void dir_gc(struct meta *m, struct mdir *d, const struct mdir *keep)
{
	if (d && d != keep && !d->names && !d->list)
		dir_free(m, d);
}

/* Evict the least recently used item. */
static void evict_tail(struct meta *m, const struct mdir *keep)
{
	struct item *it = m->lru->prev;
	struct mdir *d = it->dir;

	item_free(m, it);
	m->st.evictions++;
	dir_gc(m, d, keep);
}

/*
 * Evict until need more bytes fit in the budget, sparing item keep_it
 * and directory record keep_dir. Returns true when they fit.
 */
static bool make_room(struct meta *m, size_t need, const struct item *keep_it,
		      const struct mdir *keep_dir)
{
	if (need > m->budget)
		return false;
	while (m->st.bytes + need > m->budget) {
		if (!m->lru || m->lru->prev == keep_it)
			return false;
		evict_tail(m, keep_dir);
	}
	return true;
}

void meta_set_budget(struct meta *m, uint64_t budget)
{
	m->budget = budget;
	m->st.budget = budget;
	while (m->st.bytes > m->budget && m->lru)
		evict_tail(m, NULL);
}

void meta_free(struct meta **mp)
{
	struct meta *m = mp ? *mp : NULL;
	struct mdir *d, *tmp;

	if (!m)
		return;
	HASH_ITER(hh, m->dirs, d, tmp)
		dir_free(m, d);
	free(m);
	*mp = NULL;
}

/* ---- directory records ---- */

/* The hash key of a directory handle. */
static void dir_key(uint8_t *key, const uint8_t *fh, size_t len)
{
	memset(key, 0, DIR_KEY_LEN);
	key[0] = (uint8_t)len;
	memcpy(key + 1, fh, len);
}

/* The record of directory fh, or NULL. */
static struct mdir *dir_find(const struct meta *m, const uint8_t *fh,
			     size_t len)
{
	uint8_t key[DIR_KEY_LEN];
	struct mdir *d;

	if (len == 0 || len > CACHE_FH_MAX)
		return NULL;
	dir_key(key, fh, len);
	HASH_FIND(hh, m->dirs, key, DIR_KEY_LEN, d);
	return d;
}

/* The directory changed: drop its listing and negative entries, keep
 * positive ones as hints only, and count the drop. */
static void dir_clear(struct meta *m, struct mdir *d)
{
	struct mname *n, *tmp;

	DL_FOREACH_SAFE2(d->names, n, tmp, dnext) {
		if (!n->fhlen) {
			item_free(m, &n->it);
		} else if (!n->stale) {
			n->stale = true;
			m->st.stale++;
		}
	}
	if (d->list)
		item_free(m, &d->list->it);
	m->st.dir_drops++;
}

/* The record of directory fh valid for stamp cur, created if absent
 * (a record of another stamp is emptied first). NULL if no room. */
static struct mdir *dir_get(struct meta *m, const uint8_t *fh, size_t len,
			    const struct meta_stamp *cur)
{
	struct mdir *d = dir_find(m, fh, len);

	if (d) {
		if (!stamp_eq(&d->stamp, cur)) {
			dir_clear(m, d);
			d->stamp = *cur;
		}
		return d;
	}
	if (len == 0 || len > CACHE_FH_MAX ||
	    !make_room(m, dir_bytes(), NULL, NULL))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	dir_key(d->key, fh, len);
	d->serial = ++m->next_serial;
	d->stamp = *cur;
	HASH_ADD(hh, m->dirs, key, DIR_KEY_LEN, d);
	m->st.bytes += dir_bytes();
	m->st.dirs++;
	return d;
}

/* The record of fh, cleared first if its stamp is not cur. */
static struct mdir *dir_valid(struct meta *m, const uint8_t *fh, size_t len,
			      const struct meta_stamp *cur)
{
	struct mdir *d = dir_find(m, fh, len);

	if (d && !stamp_eq(&d->stamp, cur)) {
		dir_clear(m, d);
		d->stamp = *cur;
		dir_gc(m, d, NULL);
		return dir_find(m, fh, len);
	}
	return d;
}

void meta_dir_drop(struct meta *m, const uint8_t *dir, size_t dlen)
{
	struct mdir *d = dir_find(m, dir, dlen);

	if (d) {
		dir_free(m, d);
		m->st.dir_drops++;
	}
}

bool meta_dir_mutated(struct meta *m, const uint8_t *dir, size_t dlen,
		      const struct cwcc *pre, const struct meta_stamp *post)
{
	struct mdir *d = dir_find(m, dir, dlen);

	if (!d)
		return false;
	if (pre && post && wcc_eq(pre, &d->stamp.wcc)) {
		/* Only the proxy changed it since its entries were learned. */
		d->stamp = *post;
		if (d->list && !wcc_eq(pre, &post->wcc))
			item_free(m, &d->list->it);
		dir_gc(m, d, NULL);
		return true;
	}
	dir_clear(m, d);
	if (post)
		d->stamp = *post;
	dir_gc(m, d, NULL);
	return false;
}

/* ---- names ---- */

/* Build the hash key of name under d into key; returns its length. */
static size_t name_key(const struct mdir *d, const uint8_t *name, size_t nlen,
		       uint8_t *key)
{
	memcpy(key, &d->serial, sizeof(d->serial));
	memcpy(key + sizeof(d->serial), name, nlen);
	return sizeof(d->serial) + nlen;
}

/* The entry for name under d, or NULL. */
static struct mname *name_find(const struct meta *m, const struct mdir *d,
			       const uint8_t *name, size_t nlen)
{
	uint8_t key[sizeof(uint64_t) + META_NAME_MAX];
	struct mname *n;
	size_t klen;

	if (nlen == 0 || nlen > META_NAME_MAX)
		return NULL;
	klen = name_key(d, name, nlen, key);
	HASH_FIND(hh, m->names, key, klen, n);
	return n;
}

enum meta_found meta_name_get(struct meta *m, const uint8_t *dir,
			      size_t dlen, const struct meta_stamp *cur,
			      const uint8_t *name, size_t nlen, double now,
			      double neg_timeout, uint8_t *fh, size_t *fhlen)
{
	struct mdir *d = dir_valid(m, dir, dlen, cur);
	struct mname *n = d ? name_find(m, d, name, nlen) : NULL;

	if (!n || n->stale)
		return META_UNKNOWN;
	if (!n->fhlen) {
		if (!(now < n->learned + neg_timeout)) {
			item_free(m, &n->it);
			dir_gc(m, d, NULL);
			return META_UNKNOWN;
		}
		item_touch(m, &n->it);
		return META_NEGATIVE;
	}
	memcpy(fh, n->key + n->keylen, n->fhlen);
	*fhlen = n->fhlen;
	item_touch(m, &n->it);
	return META_POSITIVE;
}

bool meta_name_peek(const struct meta *m, const uint8_t *dir, size_t dlen,
		    const uint8_t *name, size_t nlen, uint8_t *fh,
		    size_t *fhlen, bool *current)
{
	struct mdir *d = dir_find(m, dir, dlen);
	struct mname *n = d ? name_find(m, d, name, nlen) : NULL;

	if (!n || !n->fhlen)
		return false;
	memcpy(fh, n->key + n->keylen, n->fhlen);
	*fhlen = n->fhlen;
	*current = !n->stale;
	return true;
}

int meta_name_put(struct meta *m, const uint8_t *dir, size_t dlen,
		  const struct meta_stamp *cur, const uint8_t *name,
		  size_t nlen, const uint8_t *fh, size_t fhlen, double now)
{
	size_t keylen = sizeof(uint64_t) + nlen, size;
	struct mname *n;
	struct mdir *d;

	if (nlen == 0 || nlen > META_NAME_MAX || fhlen > CACHE_FH_MAX ||
	    (fh && !fhlen))
		return -1;
	if (!fh)
		fhlen = 0;
	size = name_bytes(keylen, fhlen);
	if (!(d = dir_get(m, dir, dlen, cur)))
		goto refused;
	if ((n = name_find(m, d, name, nlen)))
		item_free(m, &n->it);
	if (!make_room(m, size, NULL, d) ||
	    !(n = calloc(1, sizeof(*n) + keylen + fhlen)))
		goto refused;
	n->it.kind = ITEM_NAME;
	n->it.dir = d;
	n->it.bytes = size;
	n->learned = now;
	n->keylen = (uint16_t)keylen;
	n->fhlen = (uint8_t)fhlen;
	name_key(d, name, nlen, n->key);
	if (fhlen)
		memcpy(n->key + keylen, fh, fhlen);
	HASH_ADD(hh, m->names, key, keylen, n);
	DL_APPEND2(d->names, n, dprev, dnext);
	d->nnames++;
	DL_PREPEND(m->lru, &n->it);
	m->st.bytes += size;
	m->st.names++;
	if (!fhlen)
		m->st.negatives++;
	return 0;
refused:
	m->st.refused++;
	dir_gc(m, d, NULL);
	return -1;
}

void meta_name_forget(struct meta *m, const uint8_t *dir, size_t dlen,
		      const uint8_t *name, size_t nlen)
{
	struct mdir *d = dir_find(m, dir, dlen);
	struct mname *n = d ? name_find(m, d, name, nlen) : NULL;

	if (n) {
		item_free(m, &n->it);
		dir_gc(m, d, NULL);
	}
}

/* ---- listings ---- */

/* A new, empty listing of d. NULL if no room. */
static struct mlist *list_new(struct meta *m, struct mdir *d, bool plus,
			      const uint8_t *verf)
{
	struct mlist *l;

	if (!make_room(m, list_base_bytes(0), NULL, d) ||
	    !(l = calloc(1, sizeof(*l))))
		return NULL;
	l->it.kind = ITEM_LIST;
	l->it.dir = d;
	l->it.bytes = list_base_bytes(0);
	l->plus = plus;
	memcpy(l->verf, verf, META_VERF_SIZE);
	d->list = l;
	DL_PREPEND(m->lru, &l->it);
	m->st.bytes += l->it.bytes;
	m->st.listings++;
	return l;
}

/* Whether listing l may grow by delta bytes: no listing takes more than
 * half the budget, so one huge directory cannot flush every name. */
static bool list_may_grow(const struct meta *m, const struct mlist *l,
			  size_t delta)
{
	return l->it.bytes + delta <= m->budget / 2;
}

/* Account delta more bytes to listing l (room already made). */
static void list_grow_bytes(struct meta *m, struct mlist *l, size_t delta)
{
	l->it.bytes += delta;
	m->st.bytes += delta;
}

/* Make the entry array of l hold want entries. 0, or -1 if no room. */
static int list_reserve(struct meta *m, struct mlist *l, size_t want)
{
	size_t cap = l->cap ? l->cap : 16;
	struct meta_dirent *e;
	size_t delta;

	if (want <= l->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	delta = list_base_bytes(cap) - list_base_bytes(l->cap);
	if (!list_may_grow(m, l, delta) ||
	    !make_room(m, delta, &l->it, l->it.dir) ||
	    !(e = realloc(l->e, cap * sizeof(*e))))
		return -1;
	l->e = e;
	l->cap = cap;
	list_grow_bytes(m, l, delta);
	return 0;
}

/* Append a copy of entry src to l. 0, or -1 if no room. */
static int list_append(struct meta *m, struct mlist *l,
		       const struct meta_dirent *src)
{
	struct meta_dirent *e;
	uint8_t *blk;

	if (src->namelen == 0 || src->namelen > META_NAME_MAX ||
	    src->fhlen > CACHE_FH_MAX || list_reserve(m, l, l->n + 1) != 0 ||
	    !list_may_grow(m, l, dirent_bytes(src)) ||
	    !make_room(m, dirent_bytes(src), &l->it, l->it.dir) ||
	    !(blk = malloc(src->namelen + 1 + src->fhlen)))
		return -1;
	memcpy(blk, src->name, src->namelen);
	blk[src->namelen] = '\0';
	if (src->fhlen)
		memcpy(blk + src->namelen + 1, src->fh, src->fhlen);
	e = &l->e[l->n++];
	*e = *src;
	e->name = blk;
	e->fh = src->fhlen ? blk + src->namelen + 1 : NULL;
	list_grow_bytes(m, l, dirent_bytes(src));
	m->st.listing_entries++;
	return 0;
}

/* The listing of d a page at cookie may be added to, or NULL. */
static struct mlist *list_for_page(struct meta *m, struct mdir *d, bool plus,
				   uint64_t cookie, const uint8_t *verf)
{
	struct mlist *l = d->list;

	if (cookie == 0) {
		if (l && l->plus && !plus)
			return NULL;	/* keep the richer listing */
		if (l)
			item_free(m, &l->it);
		return list_new(m, d, plus, verf);
	}
	if (!l || l->plus != plus || l->eof || l->n == 0 ||
	    l->e[l->n - 1].cookie != cookie ||
	    memcmp(l->verf, verf, META_VERF_SIZE) != 0)
		return NULL;
	return l;
}

void meta_list_put(struct meta *m, const uint8_t *dir, size_t dlen,
		   const struct meta_stamp *cur, bool plus, uint64_t cookie,
		   const uint8_t *verf, const struct meta_dirent *e, size_t n,
		   bool eof)
{
	struct mdir *d = m->budget ? dir_get(m, dir, dlen, cur) : NULL;
	struct mlist *l = d ? list_for_page(m, d, plus, cookie, verf) : NULL;

	if (!l) {
		dir_gc(m, d, NULL);
		return;
	}
	item_touch(m, &l->it);
	for (size_t i = 0; i < n; i++) {
		if (list_append(m, l, &e[i]) != 0) {
			/* Over half the budget: keep none of it rather than
			 * a head that every later page would miss past. */
			m->st.refused++;
			item_free(m, &l->it);
			dir_gc(m, d, NULL);
			return;
		}
	}
	l->eof = eof;
}

/* The index of the entry with cookie in l, searching from the hint. */
static bool list_find_cookie(struct mlist *l, uint64_t cookie, size_t *at)
{
	for (size_t k = 0; k < l->n; k++) {
		size_t i = (l->hint + k) % l->n;

		if (l->e[i].cookie == cookie) {
			*at = i;
			return true;
		}
	}
	return false;
}

bool meta_list_get(struct meta *m, const uint8_t *dir, size_t dlen,
		   const struct meta_stamp *cur, bool plus, uint64_t cookie,
		   const uint8_t *verf, struct meta_view *v)
{
	struct mdir *d = dir_valid(m, dir, dlen, cur);
	struct mlist *l = d ? d->list : NULL;
	size_t start = 0;

	if (!l || (plus && !l->plus))
		return false;
	if (cookie != 0) {
		if (memcmp(verf, l->verf, META_VERF_SIZE) != 0 ||
		    !list_find_cookie(l, cookie, &start))
			return false;
		start++;
	}
	l->hint = start < l->n ? start : 0;
	v->e = l->e + start;
	v->n = l->n - start;
	v->complete = l->eof;
	memcpy(v->verf, l->verf, META_VERF_SIZE);
	item_touch(m, &l->it);
	return true;
}

/* ---- bookkeeping ---- */

void meta_stats_get(const struct meta *m, struct meta_stats *st)
{
	*st = m->st;
}

/* Check one directory record; adds its bytes and items to the sums. */
static bool dir_check(const struct meta *m, const struct mdir *d,
		      uint64_t *bytes, uint64_t *items, uint64_t *entries,
		      uint64_t *stale)
{
	const struct mname *n;
	size_t count = 0;
	bool ok = d->names || d->list;

	*bytes += dir_bytes();
	DL_FOREACH2(d->names, n, dnext) {
		const struct mname *found;

		HASH_FIND(hh, m->names, n->key, n->keylen, found);
		ok &= found == n && n->it.dir == d && n->it.kind == ITEM_NAME &&
		      n->it.bytes == name_bytes(n->keylen, n->fhlen);
		ok &= !n->stale || n->fhlen;
		*stale += n->stale;
		*bytes += n->it.bytes;
		count++;
	}
	ok &= count == d->nnames;
	*items += count;
	if (d->list) {
		const struct mlist *l = d->list;
		size_t b = list_base_bytes(l->cap);

		for (size_t i = 0; i < l->n; i++) {
			b += dirent_bytes(&l->e[i]);
			for (size_t j = i + 1; j < l->n; j++)
				ok &= l->e[i].cookie != l->e[j].cookie;
		}
		ok &= l->it.bytes == b && l->it.dir == d && l->n <= l->cap;
		*bytes += b;
		*entries += l->n;
		(*items)++;
	}
	return ok;
}

const char *meta_check_why(const struct meta *m)
{
	uint64_t bytes = 0, items = 0, entries = 0, lru = 0, stale = 0;
	const struct mdir *d;
	const struct item *it;

	for (d = m->dirs; d; d = d->hh.next)
		if (!dir_check(m, d, &bytes, &items, &entries, &stale))
			return "a directory record, its names or its listing "
			       "is unsound";
	DL_FOREACH(m->lru, it)
		lru++;
	if (bytes != m->st.bytes || bytes > m->budget)
		return "accounted bytes differ from the records or pass the "
		       "budget";
	if (lru != items || items != m->st.names + m->st.listings)
		return "the LRU does not hold exactly the names and listings";
	if (entries != m->st.listing_entries || stale != m->st.stale)
		return "listing entry or stale counts differ from the records";
	if (HASH_COUNT(m->names) != m->st.names ||
	    HASH_COUNT(m->dirs) != m->st.dirs)
		return "the name or directory hash differs from its count";
	return NULL;
}

bool meta_check(const struct meta *m)
{
	return meta_check_why(m) == NULL;
}
