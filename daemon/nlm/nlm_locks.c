/* SPDX-License-Identifier: MIT */
/*
 * nlm_locks: each client's locks held upstream (see nlm_locks.h for the
 * model and the invariants). The clients are a uthash table by name.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "nlm_locks.h"

struct nlm_client {
	char *caller;			/* the key, owned */
	struct nlm_held *held;		/* its records, owned */
	UT_hash_handle hh;
};

struct nlm_locks {
	struct nlm_client *clients;	/* uthash head */
	unsigned nheld;
};

struct nlm_locks *nlm_locks_new(void)
{
	return calloc(1, sizeof(struct nlm_locks));
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

int nlm_locks_add(struct nlm_locks *t, const char *caller,
		  const struct nlm_held *h)
{
	struct nlm_client *c = NULL;
	struct nlm_held *r;
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
	if (c) {
		for (const struct nlm_held *q = c->held; q; q = q->next)
			if (q->fh_len == h->fh_len &&
			    memcmp(q->fh, h->fh, h->fh_len) == 0 &&
			    q->oh_len == h->oh_len &&
			    memcmp(q->oh, h->oh, h->oh_len) == 0 &&
			    q->off == h->off && q->len == h->len) {
				/* The same lock again (a retry, an upgrade
				 * or downgrade): one record. */
				nlm_held_free_list(r);
				return 0;
			}
	}
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || !(c->caller = strdup(caller))) {
			free(c);
			nlm_held_free_list(r);
			return -1;
		}
		HASH_ADD_KEYPTR(hh, t->clients, c->caller, strlen(c->caller),
				c);
		fresh = 1;
	}
	r->next = c->held;
	c->held = r;
	t->nheld++;
	return fresh;
}

/* The end of [off, off + len), len 0 (to the end of the file) as
 * UINT64_MAX; a range past 2^64 ends there too. */
static uint64_t range_end(uint64_t off, uint64_t len)
{
	return len == 0 || len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

/* A copy of r limited to [from, to) (to UINT64_MAX: to the end), or
 * NULL on ENOMEM. */
static struct nlm_held *piece(const struct nlm_held *r, uint64_t from,
			      uint64_t to)
{
	struct nlm_held *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	*p = *r;
	p->next = NULL;
	p->oh = malloc(r->oh_len);
	if (!p->oh) {
		free(p);
		return NULL;
	}
	memcpy(p->oh, r->oh, r->oh_len);
	p->off = from;
	p->len = to == UINT64_MAX ? 0 : to - from;
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
	for (p = &c->held; *p;) {
		struct nlm_held *r = *p, *left = NULL, *right = NULL;
		uint64_t rend = range_end(r->off, r->len);

		if (r->fh_len != fh_len || memcmp(r->fh, fh, fh_len) != 0 ||
		    r->oh_len != oh_len || memcmp(r->oh, oh, oh_len) != 0 ||
		    rend <= off || uend <= r->off) {
			p = &r->next;
			continue;
		}
		/* What the UNLOCK leaves of r: the bytes before and after
		 * it, as POSIX splits a lock. Out of memory, r stays whole
		 * (released later for more than is held: harmless). */
		if (r->off < off && !(left = piece(r, r->off, off))) {
			p = &r->next;
			continue;
		}
		if (uend < rend && !(right = piece(r, uend, rend))) {
			nlm_held_free_list(left);
			p = &r->next;
			continue;
		}
		*p = r->next;
		r->next = NULL;
		nlm_held_free_list(r);
		t->nheld--;
		n++;
		if (right) {
			right->next = *p;
			*p = right;
			t->nheld++;
			p = &right->next;
		}
		if (left) {
			left->next = *p;
			*p = left;
			t->nheld++;
			p = &left->next;
		}
	}
	return n;
}

struct nlm_held *nlm_locks_take(struct nlm_locks *t, const char *caller,
				bool *known)
{
	struct nlm_client *c = NULL;
	struct nlm_held *h;

	*known = false;
	if (!t || !caller)
		return NULL;
	HASH_FIND_STR(t->clients, caller, c);
	if (!c)
		return NULL;
	*known = true;
	HASH_DEL(t->clients, c);
	h = c->held;
	c->held = NULL;
	for (const struct nlm_held *r = h; r; r = r->next)
		t->nheld--;
	client_free(c);
	return h;
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
		for (const struct nlm_held *r = c->held; r; r = r->next) {
			if (!r->fh_len || !r->oh_len || !r->oh)
				return "nlm_locks: a record has no handle or "
				       "owner";
			n++;
		}
	}
	if (n != t->nheld)
		return "nlm_locks: nheld differs from the records";
	return NULL;
}
