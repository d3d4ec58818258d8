/* SPDX-License-Identifier: MIT */
/*
 * nlm_locks: each client's locks held upstream (see nlm_locks.h for the
 * model and the invariants). The clients are a uthash table by name.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "nlm_locks.h"
#include "nlm_store.h"

struct nlm_client {
	char *caller;			/* the key, owned */
	uint64_t id;			/* its record in the store */
	struct nlm_held *held;		/* its records, owned */
	UT_hash_handle hh;
};

struct nlm_locks {
	struct nlm_client *clients;	/* uthash head */
	unsigned nheld;
	uint64_t next_id;		/* the next client or record id */
	struct nlm_store *store;	/* borrowed, or NULL: memory only */
	bool writing;			/* a change's transaction is open */
	bool behind;			/* the store missed a change */
};

/* Begin writing a change to t's store: incremental steps follow only
 * when it is up to date. */
static void store_begin(struct nlm_locks *t)
{
	t->writing = false;
	if (!t->store || t->behind)
		return;
	t->writing = nlm_store_begin(t->store);
	if (!t->writing && nlm_store_active(t->store))
		t->behind = true;
}

/* Rewrite t's store whole (it missed a change). */
static void store_rewrite(struct nlm_locks *t)
{
	struct nlm_client *c, *tmp;

	if (!nlm_store_begin(t->store))
		return;
	nlm_store_clear(t->store);
	HASH_ITER(hh, t->clients, c, tmp) {
		nlm_store_put_client(t->store, c->id, c->caller);
		for (const struct nlm_held *r = c->held; r; r = r->next)
			nlm_store_put_lock(t->store, c->id, r->id, r);
	}
	if (nlm_store_commit(t->store) == 0)
		t->behind = false;
}

/* End a change begun by store_begin: commit its steps, or rewrite a store
 * that is behind. */
static void store_end(struct nlm_locks *t)
{
	if (t->writing) {
		t->writing = false;
		if (nlm_store_commit(t->store) != 0)
			t->behind = true;
	} else if (t->store && t->behind && nlm_store_active(t->store)) {
		store_rewrite(t);
	}
}

/* The steps of a change, when its transaction is open. */
static void store_put(struct nlm_locks *t, const struct nlm_client *c,
		      const struct nlm_held *r)
{
	if (t->writing)
		nlm_store_put_lock(t->store, c->id, r->id, r);
}

static void store_del(struct nlm_locks *t, const struct nlm_client *c,
		      const struct nlm_held *r)
{
	if (t->writing)
		nlm_store_del_lock(t->store, c->id, r->id);
}

struct nlm_locks *nlm_locks_new(void)
{
	struct nlm_locks *t = calloc(1, sizeof(struct nlm_locks));

	if (t)
		t->next_id = 1;
	return t;
}

void nlm_held_free_list(struct nlm_held *h)
{
	while (h) {
		struct nlm_held *next = h->next;

		free(h->oh);
		free(h);
		h = next;
	}
}

static void client_free(struct nlm_client *c)
{
	nlm_held_free_list(c->held);
	free(c->caller);
	free(c);
}

void nlm_locks_free(struct nlm_locks **tp)
{
	struct nlm_locks *t = tp ? *tp : NULL;
	struct nlm_client *c, *tmp;

	if (!t)
		return;
	HASH_ITER(hh, t->clients, c, tmp) {
		HASH_DEL(t->clients, c);
		client_free(c);
	}
	free(t);
	*tp = NULL;
}

/* c's record of h's file, owner and range, or NULL. */
static struct nlm_held *same_held(const struct nlm_client *c,
				  const struct nlm_held *h)
{
	for (struct nlm_held *q = c->held; q; q = q->next)
		if (q->fh_len == h->fh_len &&
		    memcmp(q->fh, h->fh, h->fh_len) == 0 &&
		    q->oh_len == h->oh_len &&
		    memcmp(q->oh, h->oh, h->oh_len) == 0 &&
		    q->off == h->off && q->len == h->len)
			return q;
	return NULL;
}

uint64_t nlm_locks_grants(const struct nlm_locks *t, const char *caller,
			  const struct nlm_held *h)
{
	struct nlm_client *c = NULL;
	const struct nlm_held *q;

	if (!t || !caller || !h)
		return 0;
	HASH_FIND_STR(t->clients, caller, c);
	q = c ? same_held(c, h) : NULL;
	return q ? q->grants : 0;
}

int nlm_locks_add(struct nlm_locks *t, const char *caller,
		  const struct nlm_held *h)
{
	struct nlm_client *c = NULL;
	struct nlm_held *r, *q;
	int fresh = 0;

	if (!t || !caller || !caller[0] || !h || !h->fh_len ||
	    h->fh_len > NLM_LOCKS_FH_MAX || !h->oh_len ||
	    h->oh_len > NLM_LOCKS_OH_MAX)
		return -1;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	*r = *h;
	r->next = NULL;
	r->oh = malloc(h->oh_len);
	if (!r->oh) {
		free(r);
		return -1;
	}
	memcpy(r->oh, h->oh, h->oh_len);
	HASH_FIND_STR(t->clients, caller, c);
	if (c && (q = same_held(c, h))) {
		/* The same lock again (a retry, an upgrade or downgrade, a
		 * poll and a relayed GRANTED): one record. */
		q->grants++;
		nlm_held_free_list(r);
		return 0;
	}
	store_begin(t);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || !(c->caller = strdup(caller))) {
			free(c);
			nlm_held_free_list(r);
			store_end(t);
			return -1;
		}
		c->id = t->next_id++;
		HASH_ADD_KEYPTR(hh, t->clients, c->caller, strlen(c->caller),
				c);
		if (t->writing)
			nlm_store_put_client(t->store, c->id, c->caller);
		fresh = 1;
	}
	r->id = t->next_id++;
	r->grants = 1;
	r->next = c->held;
	c->held = r;
	t->nheld++;
	store_put(t, c, r);
	store_end(t);
	return fresh;
}

/* The end of [off, off + len), len 0 (to the end of the file) as
 * UINT64_MAX; a range past 2^64 ends there too. */
static uint64_t range_end(uint64_t off, uint64_t len)
{
	return len == 0 || len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

uint64_t nlm_held_end(const struct nlm_held *h)
{
	return range_end(h->off, h->len);
}

struct nlm_held *nlm_held_piece(const struct nlm_held *r, uint64_t from,
				uint64_t to)
{
	struct nlm_held *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	*p = *r;
	p->next = NULL;
	p->oh = malloc(r->oh_len ? r->oh_len : 1);
	if (!p->oh) {
		free(p);
		return NULL;
	}
	memcpy(p->oh, r->oh, r->oh_len);
	p->off = from;
	p->len = to == UINT64_MAX ? 0 : to - from;
	p->id = 0;		/* numbered when it goes in */
	return p;
}

/* Put piece q (numbered now) of client c's records in at *p; the place
 * after it. */
static struct nlm_held **put_piece(struct nlm_locks *t,
				   const struct nlm_client *c,
				   struct nlm_held **p, struct nlm_held *q)
{
	q->id = t->next_id++;
	q->next = *p;
	*p = q;
	t->nheld++;
	store_put(t, c, q);
	return &q->next;
}

/* Take [off, uend) out of record *p of client c, which it overlaps:
 * what it leaves of the record, the bytes before and after, as POSIX
 * splits a lock, replaces it. Out of memory the record stays whole
 * (released later for more than is held: harmless). The place after what
 * replaced it; *n counts a record touched. */
static struct nlm_held **cut(struct nlm_locks *t, const struct nlm_client *c,
			     struct nlm_held **p, uint64_t off, uint64_t uend,
			     unsigned *n)
{
	struct nlm_held *r = *p, *left = NULL, *right = NULL;
	uint64_t rend = range_end(r->off, r->len);

	if (r->off < off && !(left = nlm_held_piece(r, r->off, off)))
		return &r->next;
	if (uend < rend && !(right = nlm_held_piece(r, uend, rend))) {
		nlm_held_free_list(left);
		return &r->next;
	}
	*p = r->next;
	r->next = NULL;
	store_del(t, c, r);
	nlm_held_free_list(r);
	t->nheld--;
	(*n)++;
	if (right)
		p = put_piece(t, c, p, right);
	if (left)
		p = put_piece(t, c, p, left);
	return p;
}

unsigned nlm_locks_unlock(struct nlm_locks *t, const char *caller,
			  const uint8_t *fh, size_t fh_len,
			  const uint8_t *oh, size_t oh_len, uint64_t off,
			  uint64_t len)
{
	struct nlm_client *c = NULL;
	struct nlm_held **p;
	uint64_t uend = range_end(off, len);
	unsigned n = 0;

	if (!t || !caller)
		return 0;
	HASH_FIND_STR(t->clients, caller, c);
	if (!c)
		return 0;
	store_begin(t);
	for (p = &c->held; *p;) {
		struct nlm_held *r = *p;

		if (r->fh_len != fh_len || memcmp(r->fh, fh, fh_len) != 0 ||
		    r->oh_len != oh_len || memcmp(r->oh, oh, oh_len) != 0 ||
		    range_end(r->off, r->len) <= off || uend <= r->off) {
			p = &r->next;
			continue;
		}
		p = cut(t, c, p, off, uend, &n);
	}
	store_end(t);
	return n;
}

struct nlm_held *nlm_locks_owned(const struct nlm_locks *t,
				 const char *caller, const struct nlm_held *h,
				 bool *failed)
{
	struct nlm_client *c = NULL;
	struct nlm_held *out = NULL, *q;
	uint64_t off, uend;

	*failed = false;
	if (!t || !caller || !h)
		return NULL;
	HASH_FIND_STR(t->clients, caller, c);
	if (!c)
		return NULL;
	off = h->off;
	uend = range_end(h->off, h->len);
	for (struct nlm_held *r = c->held; r; r = r->next) {
		uint64_t rend = range_end(r->off, r->len);
		struct nlm_held **at = &out;

		if (r->fh_len != h->fh_len ||
		    memcmp(r->fh, h->fh, h->fh_len) != 0 ||
		    r->oh_len != h->oh_len ||
		    memcmp(r->oh, h->oh, h->oh_len) != 0 ||
		    rend <= off || uend <= r->off)
			continue;
		q = nlm_held_piece(r, r->off > off ? r->off : off,
				   rend < uend ? rend : uend);
		if (!q) {
			*failed = true;
			break;
		}
		while (*at && (*at)->off <= q->off)	/* by start */
			at = &(*at)->next;
		q->next = *at;
		*at = q;
	}
	return out;
}

/*
 * Take c's records that pick(arg, r) chooses out of t (and its store, in
 * one transaction); *n counts them. c leaves the table when it has none
 * left, and is then the caller's to free (client_free) once it no longer
 * reads c->caller. Returns the records taken, a list the caller owns.
 */
static struct nlm_held *take_from(struct nlm_locks *t, struct nlm_client *c,
				  bool (*pick)(const void *arg,
					       const struct nlm_held *h),
				  const void *arg, unsigned *n)
{
	struct nlm_held *out = NULL, **p;

	store_begin(t);
	for (p = &c->held; *p;) {
		struct nlm_held *r = *p;

		if (!pick(arg, r)) {
			p = &r->next;
			continue;
		}
		*p = r->next;
		store_del(t, c, r);
		r->next = out;
		out = r;
		t->nheld--;
		(*n)++;
	}
	if (!c->held) {		/* out of the table before a rewrite */
		HASH_DEL(t->clients, c);
		if (t->writing)	/* its records went with it above */
			nlm_store_del_client(t->store, c->id);
	}
	store_end(t);
	return out;
}

struct nlm_held *nlm_locks_take_if(struct nlm_locks *t, const char *caller,
				   bool (*pick)(const void *arg,
						const struct nlm_held *h),
				   const void *arg, bool *known)
{
	struct nlm_client *c = NULL;
	struct nlm_held *out;
	unsigned n = 0;

	*known = false;
	if (!t || !caller)
		return NULL;
	HASH_FIND_STR(t->clients, caller, c);
	if (!c)
		return NULL;
	*known = true;
	out = take_from(t, c, pick, arg, &n);
	if (!c->held)
		client_free(c);
	return out;
}

unsigned nlm_locks_take_each_if(struct nlm_locks *t,
					bool (*pick)(const void *arg,
						     const struct nlm_held *h),
					const void *arg,
					void (*fn)(void *arg2,
						   const char *caller,
						   struct nlm_held *h),
					void *arg2)
{
	struct nlm_client *c, *tmp;
	unsigned taken = 0;

	if (!t)
		return 0;
	HASH_ITER(hh, t->clients, c, tmp) {
		struct nlm_held *out = take_from(t, c, pick, arg, &taken);

		if (out)
			fn(arg2, c->caller, out);
		if (!c->held)
			client_free(c);
	}
	return taken;
}

/* Every record. */
static bool pick_all(const void *arg, const struct nlm_held *h)
{
	(void)arg;
	(void)h;
	return true;
}

struct nlm_held *nlm_locks_take(struct nlm_locks *t, const char *caller,
				bool *known)
{
	return nlm_locks_take_if(t, caller, pick_all, NULL, known);
}

/* What nlm_locks_load fills: the table, the client read last, the count. */
struct load_ctx {
	struct nlm_locks *t;
	struct nlm_client *c;
	int clients;
};

/* A client record of the store: into the table. */
static int load_client(void *arg, uint64_t cid, const char *caller)
{
	struct load_ctx *x = arg;
	struct nlm_client *c = NULL;

	HASH_FIND_STR(x->t->clients, caller, c);
	if (c)		/* one name twice: not a table this wrote */
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->caller = strdup(caller))) {
		free(c);
		return -1;
	}
	c->id = cid;
	HASH_ADD_KEYPTR(hh, x->t->clients, c->caller, strlen(c->caller), c);
	if (cid >= x->t->next_id)
		x->t->next_id = cid + 1;
	x->c = c;
	x->clients++;
	return 0;
}

/* A lock record of the store: under its client (loaded just before). */
static int load_lock(void *arg, uint64_t cid, uint64_t id,
		     const struct nlm_held *h)
{
	struct load_ctx *x = arg;
	struct nlm_held *r;

	if (!x->c || x->c->id != cid || !(r = nlm_held_piece(h, h->off,
						     range_end(h->off, h->len))))
		return -1;
	r->id = id;
	r->grants = 1;
	r->next = x->c->held;
	x->c->held = r;
	x->t->nheld++;
	if (id >= x->t->next_id)
		x->t->next_id = id + 1;
	return 0;
}

int nlm_locks_load(struct nlm_locks *t, struct nlm_store *s)
{
	struct load_ctx x = { .t = t };
	struct nlm_client *c, *tmp;

	if (!t || t->clients)
		return -1;
	t->store = s;
	t->behind = false;
	if (nlm_store_load(s, load_client, load_lock, &x) == 0)
		return x.clients;
	HASH_ITER(hh, t->clients, c, tmp) {
		HASH_DEL(t->clients, c);
		client_free(c);
	}
	t->nheld = 0;
	/* Unreadable: emptied there. Out of memory: rewritten (empty, then
	 * as the table grows) at the next change. */
	t->behind = nlm_store_active(s);
	return -1;
}

void nlm_locks_each_client(const struct nlm_locks *t,
			   void (*fn)(void *arg, const char *caller),
			   void *arg)
{
	const struct nlm_client *c, *tmp;

	if (!t)
		return;
	HASH_ITER(hh, t->clients, c, tmp)
		fn(arg, c->caller);
}

unsigned nlm_locks_clients(const struct nlm_locks *t)
{
	return t ? HASH_COUNT(t->clients) : 0;
}

unsigned nlm_locks_held(const struct nlm_locks *t)
{
	return t ? t->nheld : 0;
}

const char *nlm_locks_check_why(const struct nlm_locks *t)
{
	const struct nlm_client *c, *tmp;
	unsigned n = 0;

	if (!t)
		return NULL;
	HASH_ITER(hh, t->clients, c, tmp) {
		if (!c->caller || !c->caller[0] ||
		    c->hh.keylen != strlen(c->caller))
			return "nlm_locks: a client's name is not its key";
		if (!c->id || c->id >= t->next_id)
			return "nlm_locks: a client's id is 0 or not yet given";
		for (const struct nlm_held *r = c->held; r; r = r->next) {
			if (!r->fh_len || !r->oh_len || !r->oh)
				return "nlm_locks: a record has no handle or "
				       "owner";
			if (!r->id || r->id >= t->next_id)
				return "nlm_locks: a record's id is 0 or not "
				       "yet given";
			n++;
		}
	}
	if (n != t->nheld)
		return "nlm_locks: nheld differs from the records";
	return NULL;
}
