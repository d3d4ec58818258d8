/* SPDX-License-Identifier: MIT */
/*
 * disk outage records: small values the daemon keeps so a restarted
 * proxy can answer while its upstream is away (disk.h "outage records",
 * docs/disk-tier.md "Outage records").
 *
 * A record is stored in the "outage" database under the caller's key as
 * a struct orec header followed by the caller's bytes. rec_sum is the
 * XXH3-64 of the whole value (header with rec_sum 0, then the bytes)
 * seeded with the XXH3-64 of the key, the rule every record of the
 * store follows: a changed byte, length or stamp, or a record copied
 * under another key, fails. Puts run on the writer thread, those queued
 * together (up to DISK_OUTAGE_BATCH) in one transaction; a failed
 * commit turns the tier off like any disk error.
 *
 * An op with key_len 0 (disk_outage_drop_all) empties the database
 * inside the same transaction, in queue order.
 *
 * Invariants: outage_records (in st, atomic access) is the number of
 * records committed (set by disk_outage_count at open, then changed only
 * by the writer's committed transactions and the scan's deletions), and
 * never exceeds DISK_OUTAGE_MAX by a put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "disk_impl.h"

#define OREC_MAGIC	0x4f524331u	/* "ORC1" */

/* The stored header of an outage record; the caller's bytes follow. */
struct orec {
	uint32_t magic;
	uint32_t len;			/* the caller's bytes */
	uint64_t stamp;			/* the caller's */
	uint64_t rec_sum;		/* see the top of this file */
};

/* The seal of value buf[0..len) (its rec_sum 0) under key kb[0..klen). */
static uint64_t
orec_sum(const void *kb, size_t klen, const uint8_t *buf, size_t len)
{
	return XXH3_64bits_withSeed(buf, len, XXH3_64bits(kb, klen));
}

/* True when value v under key k is a sound record; its header in *h. */
static bool
orec_check(const MDB_val *k, const MDB_val *v, struct orec *h, uint8_t *tmp)
{
	uint64_t want;

	if (v->mv_size < sizeof(*h) ||
	    v->mv_size > sizeof(*h) + DISK_OUTAGE_VAL_MAX)
		return false;
	memcpy(tmp, v->mv_data, v->mv_size);
	memcpy(h, tmp, sizeof(*h));
	if (h->magic != OREC_MAGIC || h->len != v->mv_size - sizeof(*h))
		return false;
	want = h->rec_sum;
	memset(tmp + offsetof(struct orec, rec_sum), 0, sizeof(h->rec_sum));
	return orec_sum(k->mv_data, k->mv_size, tmp, v->mv_size) == want;
}

int
disk_outage_count(struct disk *d, MDB_txn *txn)
{
	MDB_stat ms;
	int rc = mdb_stat(txn, d->dbi_outage, &ms);

	if (rc == 0)
		d->st.outage_records = ms.ms_entries;
	return rc;
}

/* Apply one op inside txn: a put (*added +1 for a new key), or with
 * key_len 0 the removal of all (*held and *added then 0). 0 or an LMDB
 * error. */
static int
outage_apply(struct disk *d, MDB_txn *txn, struct disk_op *op,
	     uint64_t *held, int64_t *added)
{
	MDB_val kv = { op->key_len, op->pg.data }, v;
	bool exists;

	if (op->key_len == 0) {
		op->result = DISK_HIT;
		*held = 0;
		*added = 0;
		return mdb_drop(txn, d->dbi_outage, 0);
	}
	exists = mdb_get(txn, d->dbi_outage, &kv, &v) == 0;
	if (!exists && *held + (uint64_t)*added >= DISK_OUTAGE_MAX) {
		op->result = DISK_MISS;
		DISK_COUNT(d, outage_dropped, 1);
		return 0;
	}
	v = (MDB_val){ op->data_len, op->pg.data + op->key_len };
	op->result = DISK_HIT;
	*added += exists ? 0 : 1;
	return mdb_put(txn, d->dbi_outage, &kv, &v, 0);
}

void
disk_run_outage(struct disk *d, struct disk_op **ops, unsigned n)
{
	uint64_t held = __atomic_load_n(&d->st.outage_records, __ATOMIC_RELAXED);
	int64_t added = 0;
	MDB_txn *txn = NULL;
	int rc;

	if (!__atomic_load_n(&d->on, __ATOMIC_RELAXED))
		return;		/* every op stays DISK_OFF */
	rc = mdb_txn_begin(d->env, NULL, 0, &txn);
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = outage_apply(d, txn, ops[i], &held, &added);
	if (rc == 0) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (txn)
		mdb_txn_abort(txn);
	if (rc != 0) {
		for (unsigned i = 0; i < n; i++)
			ops[i]->result = DISK_OFF;
		disk_degrade(d, "outage commit", rc);
		return;
	}
	disk_io_event(d, DISK_IO_INDEX_COMMIT, 0, 0);
	/* Only this thread changes the count while serving. */
	__atomic_store_n(&d->st.outage_records, held + (uint64_t)added,
			 __ATOMIC_RELAXED);
}

int
disk_outage_drop_all(struct disk *d)
{
	struct disk_op *op = calloc(1, sizeof(*op));

	if (!op) {
		errno = ENOMEM;
		return -1;
	}
	op->kind = DISK_OP_OPUT;	/* key_len 0: remove all */
	if (!disk_submit_outage(d, op)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

int
disk_outage_put(struct disk *d, const void *key, size_t klen,
		const void *val, size_t vlen, uint64_t stamp)
{
	struct orec h = { OREC_MAGIC, (uint32_t)vlen, stamp, 0 };
	struct disk_op *op;
	uint8_t *b;

	if (klen == 0 || klen > DISK_OUTAGE_KEY_MAX || vlen == 0 ||
	    vlen > DISK_OUTAGE_VAL_MAX) {
		errno = EINVAL;
		return -1;
	}
	op = calloc(1, sizeof(*op));
	if (!op || !(op->pg.data = malloc(klen + sizeof(h) + vlen))) {
		free(op);
		errno = ENOMEM;
		return -1;
	}
	op->kind = DISK_OP_OPUT;
	op->key_len = (uint32_t)klen;
	op->data_len = (uint32_t)(sizeof(h) + vlen);
	b = op->pg.data;
	memcpy(b, key, klen);
	memcpy(b + klen, &h, sizeof(h));
	memcpy(b + klen + sizeof(h), val, vlen);
	h.rec_sum = orec_sum(key, klen, b + klen, op->data_len);
	memcpy(b + klen + offsetof(struct orec, rec_sum), &h.rec_sum,
	       sizeof(h.rec_sum));
	if (!disk_submit_outage(d, op)) {
		DISK_COUNT(d, outage_dropped, 1);
		errno = EIO;
		return -1;
	}
	return 0;
}

/* Delete the records of keys bad[0..n) (failed their check). */
static void
outage_delete(struct disk *d, MDB_val *bad, size_t n)
{
	MDB_txn *txn;
	size_t gone = 0;

	if (!n || !disk_on(d) || mdb_txn_begin(d->env, NULL, 0, &txn) != 0)
		return;
	for (size_t i = 0; i < n; i++)
		gone += mdb_del(txn, d->dbi_outage, &bad[i], NULL) == 0;
	if (mdb_txn_commit(txn) == 0)
		__atomic_fetch_sub(&d->st.outage_records, (uint64_t)gone,
				   __ATOMIC_RELAXED);
}

/* Remember key k of a failed record in (*bad)[*n]; false on ENOMEM. */
static bool
bad_add(MDB_val **bad, size_t *n, const MDB_val *k)
{
	MDB_val *nb = realloc(*bad, (*n + 1) * sizeof(**bad));
	void *copy = malloc(k->mv_size);

	if (!nb || !copy) {
		free(copy);
		if (nb)
			*bad = nb;
		return false;
	}
	*bad = nb;
	memcpy(copy, k->mv_data, k->mv_size);
	nb[*n] = (MDB_val){ k->mv_size, copy };
	(*n)++;
	return true;
}

long
disk_outage_scan(struct disk *d, disk_outage_fn *fn, void *arg)
{
	uint8_t *tmp = malloc(sizeof(struct orec) + DISK_OUTAGE_VAL_MAX);
	MDB_val kv, v, *bad = NULL;
	size_t nbad = 0;
	long n = 0, stop = 0;
	bool first = true;
	MDB_cursor *cur;
	struct orec h;
	MDB_txn *txn;
	int rc = d->env && tmp ? mdb_txn_begin(d->env, NULL, MDB_RDONLY, &txn)
			       : EIO;

	if (rc == 0 && (rc = mdb_cursor_open(txn, d->dbi_outage, &cur)) != 0)
		mdb_txn_abort(txn);
	if (rc != 0) {
		free(tmp);
		errno = tmp ? EIO : ENOMEM;
		return -1;
	}
	while (!stop && (rc = mdb_cursor_get(cur, &kv, &v, first ? MDB_FIRST
							   : MDB_NEXT)) == 0) {
		first = false;
		if (!orec_check(&kv, &v, &h, tmp)) {
			DISK_COUNT(d, outage_failures, 1);
			bad_add(&bad, &nbad, &kv);
			continue;
		}
		n++;
		stop = fn(arg, kv.mv_data, kv.mv_size, tmp + sizeof(h), h.len,
			  h.stamp);
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	free(tmp);
	outage_delete(d, bad, nbad);
	for (size_t i = 0; i < nbad; i++)
		free(bad[i].mv_data);
	free(bad);
	if (stop)
		return stop;
	if (rc != MDB_NOTFOUND) {
		errno = EIO;
		return -1;
	}
	return n;
}
