/* SPDX-License-Identifier: MIT */
/*
 * drc: duplicate request cache (see drc.h). Entries live in a uthash table
 * keyed by (client address and port, xid, procedure) and on a list in
 * insertion order, so the oldest DONE entry is found first for eviction.
 * Invariants (drc_check_why checks them): every entry carries
 * DRC_ENTRY_MAGIC and is in both the table and the list; count counts the
 * entries and ndone the DONE ones, which stay <= max_entries after
 * drc_complete returns; waiters only exist on INPROGRESS entries, at most
 * DRC_MAX_WAITERS; a DONE entry holds its reply.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <uthash.h>
#include <utlist.h>

#include "checkobj.h"
#include "drc.h"

#define DRC_ENTRY_MAGIC 0x44524345u	/* "DRCE" */

struct drc_key {
	uint8_t addr[16];
	uint16_t port;
	uint16_t family;
	uint32_t xid;
	uint32_t proc;
};

struct drc_entry {
	uint32_t magic;		/* DRC_ENTRY_MAGIC; first (drc.h) */
	struct drc_key key;
	uint32_t csum;		/* checksum of the first argument bytes */
	bool done;
	double when;		/* completion time, seconds */
	uint8_t *reply;
	size_t reply_len;
	void *waiters[DRC_MAX_WAITERS];
	unsigned nwaiters;
	UT_hash_handle hh;
	struct drc_entry *prev, *next;
};

struct drc {
	unsigned max_entries;
	double timeout;
	drc_deliver_fn deliver;
	void (*release)(void *waiter);
	struct drc_entry *table;
	struct drc_entry *list;
	unsigned count;
	unsigned ndone;
};

#define DRC_CSUM_BYTES 256

struct drc *drc_new(unsigned max_entries, double timeout,
		    drc_deliver_fn deliver, void (*release)(void *waiter))
{
	struct drc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->max_entries = max_entries;
	d->timeout = timeout;
	d->deliver = deliver;
	d->release = release;
	return d;
}

/* Fill a key from a socket address (v4-mapped v6 folded to v4). */
static void key_fill(struct drc_key *k, const struct sockaddr *sa,
		     uint32_t xid, uint32_t proc)
{
	memset(k, 0, sizeof(*k));
	k->xid = xid;
	k->proc = proc;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		k->family = AF_INET;
		memcpy(k->addr, &in->sin_addr, 4);
		k->port = in->sin_port;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			k->family = AF_INET;
			memcpy(k->addr, &in6->sin6_addr.s6_addr[12], 4);
		} else {
			k->family = AF_INET6;
			memcpy(k->addr, &in6->sin6_addr, 16);
		}
		k->port = in6->sin6_port;
	}
}

/* Checksum the first argument bytes (FNV-1a), as knfsd's nfsd_cache_csum. */
static uint32_t args_csum(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;

	if (len > DRC_CSUM_BYTES)
		len = DRC_CSUM_BYTES;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h ^ (uint32_t)len;
}

/* Unlink and free one entry, releasing parked waiters. */
static void entry_drop(struct drc *d, struct drc_entry *e)
{
	HASH_DEL(d->table, e);
	DL_DELETE(d->list, e);
	for (unsigned i = 0; i < e->nwaiters; i++)
		if (d->release)
			d->release(e->waiters[i]);
	if (e->done)
		d->ndone--;
	d->count--;
	free(e->reply);
	e->magic = 0;
	free(e);
}

/* Drop DONE entries past their timeout, and the oldest over the limit. */
static void expire(struct drc *d, double now, unsigned room)
{
	struct drc_entry *e, *tmp;

	DL_FOREACH_SAFE(d->list, e, tmp) {
		if (!e->done)
			continue;
		if (now - e->when > d->timeout || d->ndone + room > d->max_entries)
			entry_drop(d, e);
		else
			break;
	}
}

enum drc_result drc_begin(struct drc *d, const struct sockaddr *sa,
			  uint32_t xid, uint32_t proc, const uint8_t *args,
			  size_t args_len, double now, struct drc_entry **e)
{
	struct drc_key k;
	struct drc_entry *f;
	uint32_t csum = args_csum(args, args_len);

	*e = NULL;
	if (d->max_entries == 0)
		return DRC_DISABLED;
	expire(d, now, 0);
	key_fill(&k, sa, xid, proc);
	HASH_FIND(hh, d->table, &k, sizeof(k), f);
	if (f && f->csum == csum) {
		*e = f;
		return f->done ? DRC_DONE : DRC_INPROGRESS;
	}
	if (f) {
		/* Same xid, other arguments: a new call after xid reuse. */
		if (!f->done)
			return DRC_DISABLED;
		entry_drop(d, f);
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return DRC_DISABLED;
	f->magic = DRC_ENTRY_MAGIC;
	f->key = k;
	f->csum = csum;
	HASH_ADD(hh, d->table, key, sizeof(f->key), f);
	DL_APPEND(d->list, f);
	d->count++;
	*e = f;
	return DRC_NEW;
}

const uint8_t *drc_entry_reply(const struct drc_entry *e, size_t *len)
{
	*len = e->reply_len;
	return e->reply;
}

int drc_add_waiter(struct drc_entry *e, void *waiter)
{
	if (e->done || e->nwaiters >= DRC_MAX_WAITERS)
		return -1;
	e->waiters[e->nwaiters++] = waiter;
	return 0;
}

void drc_complete(struct drc *d, struct drc_entry *e, const uint8_t *reply,
		  size_t len, double now)
{
	CHECK_OBJ(e, DRC_ENTRY_MAGIC);
	for (unsigned i = 0; i < e->nwaiters; i++)
		d->deliver(e->waiters[i], reply, len);
	e->nwaiters = 0;
	e->reply = malloc(len ? len : 1);
	if (!e->reply) {
		entry_drop(d, e);
		return;
	}
	memcpy(e->reply, reply, len);
	e->reply_len = len;
	e->done = true;
	e->when = now;
	/* Move to the tail: the list stays in completion order. */
	DL_DELETE(d->list, e);
	DL_APPEND(d->list, e);
	d->ndone++;
	expire(d, now, 0);
}

void drc_abandon(struct drc *d, struct drc_entry *e)
{
	CHECK_OBJ(e, DRC_ENTRY_MAGIC);
	entry_drop(d, e);
}

/* One entry's invariants, or NULL. */
static const char *entry_check_why(const struct drc *d,
				   const struct drc_entry *e)
{
	const struct drc_entry *f;

	if (e->magic != DRC_ENTRY_MAGIC)
		return "DRC: an entry's magic number is wrong (freed?)";
	HASH_FIND(hh, d->table, &e->key, sizeof(e->key), f);
	if (f != e)
		return "DRC: an entry on the list is not in the table";
	if (e->nwaiters > DRC_MAX_WAITERS || (e->done && e->nwaiters))
		return "DRC: waiters on a DONE entry, or too many";
	if (e->done && !e->reply)
		return "DRC: a DONE entry has no reply";
	return NULL;
}

const char *drc_check_why(const struct drc *d)
{
	const struct drc_entry *e;
	const char *why;
	unsigned n = 0, done = 0;

	DL_FOREACH(d->list, e) {
		if ((why = entry_check_why(d, e)))
			return why;
		n++;
		done += e->done;
	}
	if (n != d->count || HASH_COUNT(d->table) != n)
		return "DRC: count differs from the entries on the list";
	if (done != d->ndone)
		return "DRC: ndone differs from the DONE entries";
	if (d->max_entries && d->ndone > d->max_entries)
		return "DRC: more DONE entries than max_entries";
	return NULL;
}

unsigned drc_count(const struct drc *d)
{
	return d->count;
}

void drc_free(struct drc **dp)
{
	struct drc *d = dp ? *dp : NULL;
	struct drc_entry *e, *tmp;

	if (!d)
		return;
	DL_FOREACH_SAFE(d->list, e, tmp)
		entry_drop(d, e);
	free(d);
	*dp = NULL;
}
