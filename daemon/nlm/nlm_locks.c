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

/* True when [off, off + len) (len 0: to the end) holds r's range whole. */
static bool covers(uint64_t off, uint64_t len, const struct nlm_held *r)
{
	if (r->off < off)
		return false;
	if (len == 0)
		return true;
	if (r->len == 0)
		return false;
	return r->off - off <= len && r->len <= len - (r->off - off);
}

unsigned nlm_locks_unlock(struct nlm_locks *t, const char *caller,
			  const uint8_t *fh, size_t fh_len,
			  const uint8_t *oh, size_t oh_len, uint64_t off,
			  uint64_t len)
{
	struct nlm_client *c = NULL;
	struct nlm_held **p;
	unsigned n = 0;

	if (!t || !caller)
		return 0;
	HASH_FIND_STR(t->clients, caller, c);
	if (!c)
		return 0;
	for (p = &c->held; *p;) {
		struct nlm_held *r = *p;

		if (r->fh_len == fh_len && memcmp(r->fh, fh, fh_len) == 0 &&
		    r->oh_len == oh_len && memcmp(r->oh, oh, oh_len) == 0 &&
		    covers(off, len, r)) {
			*p = r->next;
			r->next = NULL;
			nlm_held_free_list(r);
			t->nheld--;
			n++;
		} else {
			p = &r->next;
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
