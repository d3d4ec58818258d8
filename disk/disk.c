/* SPDX-License-Identifier: MIT */
/*
 * disk store: the LMDB index, the slab file and the operations as the
 * worker threads run them (disk.h says what they promise; docs/disk-tier.md
 * why the layout is what it is and what a crash at each step leaves).
 *
 * Storing a page, in this order:
 *   1. take a free slot (in memory only; culling first if none is free);
 *   2. pwrite the page's bytes [0, data_len) into the slot;
 *   3. fdatasync the slab (durable mode);
 *   4. one LMDB write transaction: put pages[key] = record (slot, length,
 *      checksum, ranges, attributes), lru[seq] = key, delete the key's
 *      previous lru entry, cull the LRU's oldest pages down to a reserve;
 *   5. after the commit, free the replaced record's slot and the culled
 *      ones. A slot is never rewritten while a committed record names it.
 * Stores queued together (up to DISK_STORE_BATCH) share steps 3 and 4.
 * Invariants: a slot is used iff exactly one record names it, or it was
 * taken by a store that has not committed yet; pages_held = used slots;
 * every record has one lru entry with its seq, and the reverse.
 *
 * The reader pins the slot it reads (under slot_mu, with the record's
 * lookup), and a free of the pinned slot waits for the unpin, so a slot is
 * not reused under a read in progress.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "disk_impl.h"


/* Encode key k (the file prefix alone when with_page is false). */
void
disk_key_encode(const struct disk_key *k, bool with_page, struct disk_kbuf *out)
{
	out->b[0] = k->fh_len;
	memcpy(out->b + 1, k->fh, k->fh_len);
	out->len = 1 + (size_t)k->fh_len;
	if (with_page) {
		for (int i = 0; i < 8; i++)
			out->b[out->len + i] = (uint8_t)(k->page >> (56 - 8 * i));
		out->len += 8;
	}
}

/* Encode an LRU sequence as a big-endian key. */
static void
seq_encode(uint64_t seq, uint8_t out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(seq >> (56 - 8 * i));
}

/* Checksum the stored bytes of a page, seeded with its encoded key. */
static uint64_t
page_checksum(const struct disk_kbuf *kb, const uint8_t *data, size_t len)
{
	return XXH3_64bits_withSeed(data, len, XXH3_64bits(kb->b, kb->len));
}

/* The record sum of value buf[0..len) under key kb[0..klen) (rec_sum
 * as stored in buf is taken as 0). */
static uint64_t
rec_sum_of(const void *kb, size_t klen, const uint8_t *buf, size_t len)
{
	uint8_t copy[sizeof(struct disk_rec) + 2 * DISK_MAX_RANGES *
		     sizeof(struct disk_range)];
	const size_t at = offsetof(struct disk_rec, rec_sum);

	if (len > sizeof(copy) || len < at + sizeof(uint64_t))
		return 0;
	memcpy(copy, buf, len);
	memset(copy + at, 0, sizeof(uint64_t));
	return XXH3_64bits_withSeed(copy, len, XXH3_64bits(kb, klen));
}

/* Set rec_sum in an encoded record (disk_impl.h). */
void
disk_rec_seal(const void *kb, size_t klen, uint8_t *buf, size_t len)
{
	uint64_t sum = rec_sum_of(kb, klen, buf, len);

	memcpy(buf + offsetof(struct disk_rec, rec_sum), &sum, sizeof(sum));
}

/* Decode a record value into rec and (if pg) its ranges (disk_impl.h):
 * 0, -1 malformed, -2 its sum does not match. */
int
disk_rec_decode(const MDB_val *k, const MDB_val *v, uint32_t page_size,
		uint32_t nslots, struct disk_rec *rec, struct disk_page *pg)
{
	const struct disk_range *r;

	if (v->mv_size < sizeof(*rec))
		return -1;
	memcpy(rec, v->mv_data, sizeof(*rec));
	if (rec->magic != DISK_REC_MAGIC || rec->slot >= nslots ||
	    rec->data_len > page_size || rec->nvalid > DISK_MAX_RANGES ||
	    rec->nholes > DISK_MAX_RANGES ||
	    v->mv_size != sizeof(*rec) + sizeof(*r) *
	    ((size_t)rec->nvalid + rec->nholes))
		return -1;
	if (rec_sum_of(k->mv_data, k->mv_size, v->mv_data, v->mv_size) !=
	    rec->rec_sum)
		return -2;
	if (!pg)
		return 0;
	r = (const struct disk_range *)((const uint8_t *)v->mv_data + sizeof(*rec));
	pg->attr = rec->attr;
	pg->nvalid = rec->nvalid;
	pg->nholes = rec->nholes;
	memcpy(pg->valid, r, sizeof(*r) * rec->nvalid);
	memcpy(pg->holes, r + rec->nvalid, sizeof(*r) * rec->nholes);
	return 0;
}

/* The presence hash of an encoded pages key. */
uint64_t
disk_key_hash(const void *kb, size_t len)
{
	return XXH3_64bits(kb, len);
}

/* Add (+1) or remove (-1) hash h in the presence set. */
void
disk_present_adjust(struct disk *d, uint64_t h, int delta)
{
	struct disk_present *p;

	pthread_mutex_lock(&d->pres_mu);
	HASH_FIND(hh, d->present, &h, sizeof(h), p);
	if (!p && delta > 0 && (p = calloc(1, sizeof(*p)))) {
		p->h = h;
		HASH_ADD(hh, d->present, h, sizeof(p->h), p);
	}
	if (p && delta > 0)
		p->n++;
	if (p && delta < 0 && --p->n == 0) {
		HASH_DEL(d->present, p);
		free(p);
	}
	pthread_mutex_unlock(&d->pres_mu);
}

/* Empty the presence set. */
void
disk_present_clear(struct disk *d)
{
	struct disk_present *p, *tmp;

	pthread_mutex_lock(&d->pres_mu);
	HASH_ITER(hh, d->present, p, tmp) {
		HASH_DEL(d->present, p);
		free(p);
	}
	pthread_mutex_unlock(&d->pres_mu);
}

/* True when a record for k was committed (disk.h). */
bool
disk_has(struct disk *d, const struct disk_key *k)
{
	struct disk_kbuf kb;
	struct disk_present *p;
	uint64_t h;

	if (!disk_on(d) || k->fh_len == 0 || k->fh_len > DISK_FH_MAX)
		return false;
	disk_key_encode(k, true, &kb);
	h = disk_key_hash(kb.b, kb.len);
	pthread_mutex_lock(&d->pres_mu);
	HASH_FIND(hh, d->present, &h, sizeof(h), p);
	pthread_mutex_unlock(&d->pres_mu);
	return p != NULL;
}

/* Commit txn and report it to the I/O hook. 0 or an LMDB error. */
static int
index_commit(struct disk *d, MDB_txn *txn)
{
	int rc = mdb_txn_commit(txn);

	if (rc == 0)
		disk_io_event(d, DISK_IO_INDEX_COMMIT, 0, 0);
	return rc;
}

/* Take a free slot, or DISK_NO_SLOT. */
static uint32_t
slot_alloc(struct disk *d)
{
	uint32_t s = DISK_NO_SLOT;

	pthread_mutex_lock(&d->slot_mu);
	for (uint32_t i = 0; d->nfree > 0 && i < d->nslots; i++) {
		uint32_t c = (d->free_hint + i) % d->nslots;

		if (!d->slot_used[c]) {
			s = c;
			d->slot_used[c] = 1;
			d->nfree--;
			d->free_hint = (c + 1) % d->nslots;
			__atomic_fetch_add(&d->pages_held, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_mutex_unlock(&d->slot_mu);
	return s;
}

/* Free slot s (after the transaction that unnamed it committed). */
static void
slot_free_locked(struct disk *d, uint32_t s)
{
	if (s == d->pinned) {
		d->pinned_freed = true;
		return;
	}
	if (d->slot_used[s]) {
		d->slot_used[s] = 0;
		d->nfree++;
		__atomic_fetch_sub(&d->pages_held, 1, __ATOMIC_RELAXED);
	}
}

/* Free the n slots in s. */
static void
slots_free(struct disk *d, const uint32_t *s, unsigned n)
{
	pthread_mutex_lock(&d->slot_mu);
	for (unsigned i = 0; i < n; i++)
		if (s[i] != DISK_NO_SLOT)
			slot_free_locked(d, s[i]);
	pthread_mutex_unlock(&d->slot_mu);
}

/* Unpin the reader's slot, freeing it if a free waited for that. */
static void
slot_unpin(struct disk *d)
{
	uint32_t s;

	pthread_mutex_lock(&d->slot_mu);
	s = d->pinned;
	d->pinned = DISK_NO_SLOT;
	if (d->pinned_freed && s != DISK_NO_SLOT)
		slot_free_locked(d, s);
	d->pinned_freed = false;
	pthread_mutex_unlock(&d->slot_mu);
}

/* Delete the record under key kv (value rv) and its lru entry in txn. */
static int
rec_delete(struct disk *d, MDB_txn *txn, MDB_val *kv, const struct disk_rec *rec)
{
	uint8_t sk[8];
	MDB_val skv = { sizeof(sk), sk };
	int rc;

	seq_encode(rec->seq, sk);
	rc = mdb_del(txn, d->dbi_lru, &skv, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	disk_present_adjust(d, disk_key_hash(kv->mv_data, kv->mv_size), -1);
	rc = mdb_del(txn, d->dbi_pages, kv, NULL);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Cull the LRU's oldest page in txn, keeping the page whose seq is keep;
 * its slot goes to *slot. 0, MDB_NOTFOUND when nothing can go, or an
 * LMDB error.
 */
static int
cull_one(struct disk *d, MDB_txn *txn, uint64_t keep, uint32_t *slot)
{
	MDB_cursor *cur;
	MDB_val sk, pk, rv;
	struct disk_rec rec;
	struct disk_kbuf kb;
	uint8_t sk8[8], skb[8];
	int rc;

	rc = mdb_cursor_open(txn, d->dbi_lru, &cur);
	if (rc != 0)
		return rc;
	rc = mdb_cursor_get(cur, &sk, &pk, MDB_FIRST);
	mdb_cursor_close(cur);
	if (rc != 0)
		return rc;
	/* Copies: a write in txn invalidates pointers into the map. */
	if (pk.mv_size > sizeof(kb.b) || sk.mv_size != 8)
		return EIO;
	memcpy(kb.b, pk.mv_data, pk.mv_size);
	pk.mv_data = kb.b;
	memcpy(skb, sk.mv_data, 8);
	sk.mv_data = skb;
	rc = mdb_get(txn, d->dbi_pages, &pk, &rv);
	if (rc != 0)
		return rc == MDB_NOTFOUND ? mdb_del(txn, d->dbi_lru, &sk, NULL) : rc;
	if (disk_rec_decode(&pk, &rv, d->page_size, d->nslots, &rec, NULL) != 0) {
		/* A damaged record: its slot cannot be trusted, so it stays
		 * taken until the next start's scan; the record goes. */
		*slot = DISK_NO_SLOT;
		DISK_COUNT(d, checksum_failures, 1);
		disk_present_adjust(d, disk_key_hash(pk.mv_data, pk.mv_size), -1);
		rc = mdb_del(txn, d->dbi_pages, &pk, NULL);
		return rc != 0 ? rc : mdb_del(txn, d->dbi_lru, &sk, NULL);
	}
	if (rec.seq == keep)
		return MDB_NOTFOUND;
	seq_encode(rec.seq, sk8);
	if (memcmp(skb, sk8, 8) != 0) {
		*slot = DISK_NO_SLOT;	/* a stale lru entry: drop it alone */
		return mdb_del(txn, d->dbi_lru, &sk, NULL);
	}
	*slot = rec.slot;
	DISK_COUNT(d, culls, 1);
	return rec_delete(d, txn, &pk, &rec);
}

/* The number of free slots culling keeps in reserve. */
static uint32_t
cull_reserve(const struct disk *d)
{
	return d->nslots / 64 > 1 ? d->nslots / 64 : 1;
}

/*
 * In txn, cull up to DISK_CULL_BATCH oldest pages while fewer than
 * `want` slots would be free; their slots go to out (*n of them).
 */
static int
cull_batch(struct disk *d, MDB_txn *txn, uint32_t want, uint64_t keep,
	   uint32_t *out, unsigned *n)
{
	uint32_t nfree;
	unsigned limit = *n + DISK_CULL_BATCH;
	int rc = 0;

	pthread_mutex_lock(&d->slot_mu);
	nfree = d->nfree;
	pthread_mutex_unlock(&d->slot_mu);
	while (*n < limit && nfree + *n < want) {
		rc = cull_one(d, txn, keep, &out[*n]);
		if (rc == MDB_NOTFOUND)
			return 0;
		if (rc != 0)
			return rc;
		(*n)++;
	}
	return rc;
}

/* Cull in a transaction of its own, so a store finds a free slot. */
static void
cull_now(struct disk *d)
{
	uint32_t slots[DISK_CULL_BATCH];
	unsigned n = 0;
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(d->env, NULL, 0, &txn);
	if (rc == 0)
		rc = cull_batch(d, txn, cull_reserve(d), UINT64_MAX, slots, &n);
	if (rc == 0)
		rc = index_commit(d, txn);
	else
		mdb_txn_abort(txn);
	if (rc != 0) {
		disk_degrade(d, "index cull", rc == EIO ? EIO : rc);
		return;
	}
	slots_free(d, slots, n);
}

/* Write all len bytes of buf at off. 0 or an errno. */
static int
pwrite_all(int fd, const uint8_t *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t w = pwrite(fd, buf, len, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		buf += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Build the record value of a store into buf (room for the maximum). */
static size_t
store_value(const struct disk_op *op, uint32_t slot,
	    uint64_t seq, const struct disk_kbuf *kb, uint8_t *buf)
{
	struct disk_rec rec = {
		.magic = DISK_REC_MAGIC, .slot = slot,
		.data_len = op->data_len,
		.nvalid = (uint16_t)op->pg.nvalid,
		.nholes = (uint16_t)op->pg.nholes,
		.seq = seq, .attr = op->pg.attr,
	};
	size_t n = sizeof(rec);

	rec.checksum = page_checksum(kb, op->pg.data, rec.data_len);
	memcpy(buf, &rec, sizeof(rec));
	memcpy(buf + n, op->pg.valid, sizeof(op->pg.valid[0]) * rec.nvalid);
	n += sizeof(op->pg.valid[0]) * rec.nvalid;
	memcpy(buf + n, op->pg.holes, sizeof(op->pg.holes[0]) * rec.nholes);
	return n + sizeof(op->pg.holes[0]) * rec.nholes;
}

/*
 * In txn: replace key's record by the new one, add its lru entry, cull
 * down to the reserve. Slots to free after the commit go to freed (*n).
 */
static int
store_index(struct disk *d, MDB_txn *txn, const struct disk_op *op,
	    uint32_t slot, uint32_t *freed, unsigned *n)
{
	uint8_t vbuf[sizeof(struct disk_rec) + 2 * DISK_MAX_RANGES *
		     sizeof(struct disk_range)];
	struct disk_kbuf kb;
	struct disk_rec old;
	uint8_t sk[8];
	MDB_val kv, vv, skv = { sizeof(sk), sk };
	uint64_t seq = __atomic_add_fetch(&d->seq, 1, __ATOMIC_RELAXED);
	int rc;

	disk_key_encode(&op->key, true, &kb);
	kv = (MDB_val){ kb.len, kb.b };
	rc = mdb_get(txn, d->dbi_pages, &kv, &vv);
	if (rc == 0 && disk_rec_decode(&kv, &vv, d->page_size, d->nslots, &old,
				       NULL) == 0) {
		freed[(*n)++] = old.slot;
		rc = rec_delete(d, txn, &kv, &old);
	} else if (rc == 0) {
		/* A damaged record, replaced below (its slot: see cull_one). */
		DISK_COUNT(d, checksum_failures, 1);
		disk_present_adjust(d, disk_key_hash(kb.b, kb.len), -1);
	} else if (rc == MDB_NOTFOUND) {
		rc = 0;
	}
	if (rc != 0)
		return rc;
	vv = (MDB_val){ store_value(op, slot, seq, &kb, vbuf), vbuf };
	disk_rec_seal(kb.b, kb.len, vbuf, vv.mv_size);
	rc = mdb_put(txn, d->dbi_pages, &kv, &vv, 0);
	seq_encode(seq, sk);
	if (rc == 0)
		rc = mdb_put(txn, d->dbi_lru, &skv, &kv, 0);
	if (rc == 0)
		disk_present_adjust(d, disk_key_hash(kb.b, kb.len), 1);
	if (rc == 0)
		rc = cull_batch(d, txn, cull_reserve(d), seq, freed, n);
	return rc;
}

/* Take a slot for op and write its bytes there (op->slot, or NO_SLOT
 * when none is free: dropped). 0 or an errno with *what. */
static int
store_one_data(struct disk *d, struct disk_op *op, const char **what)
{
	int err;

	op->slot = slot_alloc(d);
	if (op->slot == DISK_NO_SLOT) {
		cull_now(d);
		op->slot = slot_alloc(d);
	}
	if (op->slot == DISK_NO_SLOT)
		return 0;
	*what = "slab write";
	err = disk_fault_take(d, DISK_FAULT_WRITE);
	if (err == 0)
		disk_io_event(d, DISK_IO_SLAB_WRITE,
			      (uint64_t)op->slot * d->page_size, op->data_len);
	if (err == 0)
		err = pwrite_all(d->slab_fd, op->pg.data, op->data_len,
				 (off_t)op->slot * d->page_size);
	return err;
}

/* Sync the slab (durable mode). 0 or an errno. */
static int
store_sync(struct disk *d)
{
	int err;

	if (!d->durable)
		return 0;
	err = disk_fault_take(d, DISK_FAULT_SYNC);
	if (err == 0 && fdatasync(d->slab_fd) != 0)
		err = errno;
	if (err == 0)
		disk_io_event(d, DISK_IO_SLAB_SYNC, 0, 0);
	return err;
}

/* Index the stores of ops that got a slot, in one transaction. */
static int
store_commit(struct disk *d, struct disk_op **ops, unsigned n,
	     uint32_t *freed, unsigned *nfreed)
{
	MDB_txn *txn;
	int err = mdb_txn_begin(d->env, NULL, 0, &txn);

	for (unsigned i = 0; i < n && err == 0; i++)
		if (ops[i]->slot != DISK_NO_SLOT)
			err = store_index(d, txn, ops[i], ops[i]->slot, freed,
					  nfreed);
	if (err == 0)
		return index_commit(d, txn);
	if (txn)
		mdb_txn_abort(txn);
	return err;
}

/*
 * Run n stores (at most DISK_STORE_BATCH) as one: take slots and write
 * the data of each, one fdatasync, one transaction, then the frees (the
 * module comment's steps, batched so a commit's syncs are shared).
 */
/*
 * True when the slab was unlinked under us (cache_dir removed while the
 * daemon runs: st_nlink 0). Stores would go on into a file no restart
 * finds, whose space is freed only at exit, and whose lock no longer
 * keeps a second daemon out of a directory made again at that path.
 */
static bool
slab_removed(struct disk *d)
{
	struct stat sb;

	return fstat(d->slab_fd, &sb) == 0 && sb.st_nlink == 0;
}

void
disk_run_stores(struct disk *d, struct disk_op **ops, unsigned n)
{
	uint32_t freed[DISK_STORE_BATCH * (DISK_CULL_BATCH + 1)];
	unsigned nfreed = 0, nstored = 0;
	const char *what = "slab write";
	int err = 0;

	for (unsigned i = 0; i < n; i++)
		ops[i]->slot = DISK_NO_SLOT;
	if (slab_removed(d)) {
		what = "slab removed while in use";
		err = ENOENT;
	}
	for (unsigned i = 0; i < n && err == 0; i++) {
		if (!__atomic_load_n(&d->on, __ATOMIC_RELAXED))
			break;
		err = store_one_data(d, ops[i], &what);
	}
	if (err == 0) {
		what = "slab fdatasync";
		err = store_sync(d);
	}
	if (err == 0) {
		what = "index commit";
		err = store_commit(d, ops, n, freed, &nfreed);
	}
	for (unsigned i = 0; i < n; i++) {
		if (err != 0 && ops[i]->slot != DISK_NO_SLOT)
			slots_free(d, &ops[i]->slot, 1);
		if (err != 0 || ops[i]->slot == DISK_NO_SLOT)
			continue;
		nstored++;
		DISK_COUNT(d, store_bytes, ops[i]->valid_bytes);
	}
	if (err != 0)
		disk_degrade(d, what, err);
	else
		slots_free(d, freed, nfreed);
	DISK_COUNT(d, stores, nstored);
	DISK_COUNT(d, stores_dropped, n - nstored);
}

/* load_lookup's answer for a record that does not decode or whose sum
 * does not match (LMDB's codes are below -30000, errno values positive). */
#define LOAD_BAD_RECORD	(-1)

/* Look up key's record and pin its slot. 0, MDB_NOTFOUND,
 * LOAD_BAD_RECORD or an error. */
static int
load_lookup(struct disk *d, struct disk_kbuf *kb, struct disk_rec *rec,
	    struct disk_page *pg)
{
	MDB_val kv = { kb->len, kb->b }, vv;
	int rc;

	pthread_mutex_lock(&d->slot_mu);
	rc = mdb_txn_renew(d->rtxn);
	if (rc == 0) {
		rc = mdb_get(d->rtxn, d->dbi_pages, &kv, &vv);
		if (rc == 0 && disk_rec_decode(&kv, &vv, d->page_size,
					       d->nslots, rec, pg) != 0)
			rc = LOAD_BAD_RECORD;
		if (rc == 0)
			d->pinned = rec->slot;
		mdb_txn_reset(d->rtxn);
	}
	pthread_mutex_unlock(&d->slot_mu);
	return rc;
}

/* Read rec's bytes into data. 0, -1 when short (corrupt), or an errno. */
static int
load_data(struct disk *d, const struct disk_rec *rec, uint8_t *data)
{
	size_t got = 0;
	int err = disk_fault_take(d, DISK_FAULT_READ);

	if (err != 0)
		return err;
	while (got < rec->data_len) {
		ssize_t r = pread(d->slab_fd, data + got, rec->data_len - got,
				  (off_t)rec->slot * d->page_size + (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		if (r == 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Queue a drop of the corrupt record rec unless it was replaced (rec
 * NULL: the record itself failed; drop it while it still fails). */
static void
load_drop_corrupt(struct disk *d, const struct disk_op *op,
		  const struct disk_rec *rec)
{
	struct disk_op *drop = calloc(1, sizeof(*drop));

	DISK_COUNT(d, checksum_failures, 1);
	if (!drop)
		return;
	drop->kind = DISK_OP_DROP_IF;
	drop->key = op->key;
	drop->slot = rec ? rec->slot : DISK_NO_SLOT;
	drop->checksum = rec ? rec->checksum : 0;
	disk_submit_internal(d, drop);
}

/* Queue an LRU touch of rec when it is in the older part of the LRU. */
static void
load_touch(struct disk *d, const struct disk_op *op, const struct disk_rec *rec)
{
	struct disk_op *t;

	if (__atomic_load_n(&d->seq, __ATOMIC_RELAXED) - rec->seq <= d->nslots / 4)
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	t->kind = DISK_OP_TOUCH;
	t->key = op->key;
	t->slot = rec->slot;
	t->seq = rec->seq;
	disk_submit_internal(d, t);
}

/* Run a load (disk.h disk_load). */
void
disk_run_load(struct disk *d, struct disk_op *op)
{
	struct disk_kbuf kb;
	struct disk_rec rec;
	int rc;

	op->result = DISK_OFF;
	if (!__atomic_load_n(&d->on, __ATOMIC_RELAXED))
		return;
	disk_key_encode(&op->key, true, &kb);
	rc = load_lookup(d, &kb, &rec, &op->pg);
	if (rc == MDB_NOTFOUND) {
		op->result = DISK_MISS;
		DISK_COUNT(d, misses, 1);
		return;
	}
	if (rc == LOAD_BAD_RECORD) {
		memset(&op->pg, 0, offsetof(struct disk_page, data));
		op->result = DISK_CORRUPT;
		load_drop_corrupt(d, op, NULL);
		return;
	}
	if (rc != 0) {
		disk_degrade(d, "index read", rc);
		return;
	}
	rc = load_data(d, &rec, op->pg.data);
	if (rc > 0) {
		slot_unpin(d);
		disk_degrade(d, "slab read", rc);
		return;
	}
	slot_unpin(d);
	if (rc < 0 || page_checksum(&kb, op->pg.data, rec.data_len) != rec.checksum) {
		memset(op->pg.data, 0, d->page_size);
		op->result = DISK_CORRUPT;
		load_drop_corrupt(d, op, &rec);
		return;
	}
	/* The buffer is the caller's (buf_get): not zeroed (disk.h). */
	memset(op->pg.data + rec.data_len, 0, d->page_size - rec.data_len);
	op->result = DISK_HIT;
	DISK_COUNT(d, hits, 1);
	for (uint32_t i = 0; i < op->pg.nvalid; i++)
		DISK_COUNT(d, hit_bytes, op->pg.valid[i].len);
	load_touch(d, op, &rec);
}

/*
 * Run fn(d, txn, op, freed, &n) in a write transaction and free the slots
 * it reports after the commit; degrade on an error.
 */
static void
run_write(struct disk *d, struct disk_op *op, const char *what,
	  int (*fn)(struct disk *, MDB_txn *, struct disk_op *, uint32_t *,
		    unsigned *, bool *))
{
	uint32_t *freed = malloc(sizeof(*freed) * DISK_DROP_BATCH);
	bool more = true;
	MDB_txn *txn;
	unsigned n;
	int rc = 0;

	if (!freed)
		return;
	while (more && rc == 0 && __atomic_load_n(&d->on, __ATOMIC_RELAXED)) {
		n = 0;
		more = false;
		rc = mdb_txn_begin(d->env, NULL, 0, &txn);
		if (rc != 0)
			break;
		rc = fn(d, txn, op, freed, &n, &more);
		if (rc == 0)
			rc = index_commit(d, txn);
		else
			mdb_txn_abort(txn);
		if (rc == 0)
			slots_free(d, freed, n);
	}
	free(freed);
	if (rc != 0)
		disk_degrade(d, what, rc);
}

/* Drop up to DISK_DROP_BATCH pages of op's file (of every file when its
 * key's fh_len is 0); *more if some remain. */
static int
drop_file_txn(struct disk *d, MDB_txn *txn, struct disk_op *op,
	      uint32_t *freed, unsigned *n, bool *more)
{
	bool all = op->key.fh_len == 0;
	MDB_cursor_op first = all ? MDB_FIRST : MDB_SET_RANGE;
	struct disk_kbuf pre;
	struct disk_rec rec;
	MDB_cursor *cur;
	MDB_val kv, vv;
	int rc;

	disk_key_encode(&op->key, false, &pre);
	rc = mdb_cursor_open(txn, d->dbi_pages, &cur);
	if (rc != 0)
		return rc;
	kv = (MDB_val){ pre.len, pre.b };
	rc = mdb_cursor_get(cur, &kv, &vv, first);
	while (rc == 0 && (all || (kv.mv_size == pre.len + 8 &&
				   memcmp(kv.mv_data, pre.b, pre.len) == 0))) {
		if (*n == DISK_DROP_BATCH) {
			*more = true;
			break;
		}
		if (disk_rec_decode(&kv, &vv, d->page_size, d->nslots, &rec,
				    NULL) == 0) {
			uint8_t sk[8];
			MDB_val skv = { sizeof(sk), sk };

			seq_encode(rec.seq, sk);
			mdb_del(txn, d->dbi_lru, &skv, NULL);
			freed[(*n)++] = rec.slot;
		}
		disk_present_adjust(d, disk_key_hash(kv.mv_data, kv.mv_size), -1);
		rc = mdb_cursor_del(cur, 0);
		kv = (MDB_val){ pre.len, pre.b };
		if (rc == 0)
			rc = mdb_cursor_get(cur, &kv, &vv, first);
	}
	mdb_cursor_close(cur);
	DISK_COUNT(d, drops, *n);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Run a file drop (disk.h disk_drop_file). */
void
disk_run_drop_file(struct disk *d, struct disk_op *op)
{
	run_write(d, op, "index drop", drop_file_txn);
}

/* Look up op's key; 0 with rec when it still names op->slot/checksum. */
static int
same_rec(struct disk *d, MDB_txn *txn, const struct disk_op *op,
	 MDB_val *kv, struct disk_kbuf *kb, struct disk_rec *rec)
{
	MDB_val vv;
	int rc;

	disk_key_encode(&op->key, true, kb);
	*kv = (MDB_val){ kb->len, kb->b };
	rc = mdb_get(txn, d->dbi_pages, kv, &vv);
	if (rc != 0)
		return rc;
	rc = disk_rec_decode(kv, &vv, d->page_size, d->nslots, rec, NULL);
	if (op->kind == DISK_OP_DROP_IF && op->slot == DISK_NO_SLOT)
		return rc != 0 ? 0 : MDB_NOTFOUND;	/* still damaged */
	if (rc != 0 || rec->slot != op->slot ||
	    (op->kind == DISK_OP_DROP_IF && rec->checksum != op->checksum) ||
	    (op->kind == DISK_OP_TOUCH && rec->seq != op->seq))
		return MDB_NOTFOUND;
	return 0;
}

/* Drop op's corrupt record if it is still the one the reader saw. */
static int
drop_if_txn(struct disk *d, MDB_txn *txn, struct disk_op *op,
	    uint32_t *freed, unsigned *n, bool *more)
{
	struct disk_kbuf kb;
	struct disk_rec rec;
	MDB_val kv;
	int rc = same_rec(d, txn, op, &kv, &kb, &rec);

	(void)more;
	if (rc != 0)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if (op->slot == DISK_NO_SLOT) {
		/* The record failed its own sum: its seq and slot cannot be
		 * trusted (slot kept until the next start's scan, stale lru
		 * entry dropped by culling). */
		disk_present_adjust(d, disk_key_hash(kv.mv_data, kv.mv_size), -1);
		return mdb_del(txn, d->dbi_pages, &kv, NULL);
	}
	freed[(*n)++] = rec.slot;
	return rec_delete(d, txn, &kv, &rec);
}

/* Run a corrupt-page drop. */
void
disk_run_drop_if(struct disk *d, struct disk_op *op)
{
	run_write(d, op, "index drop", drop_if_txn);
}

/* Give op's record a new LRU sequence (young end). */
static int
touch_txn(struct disk *d, MDB_txn *txn, struct disk_op *op,
	  uint32_t *freed, unsigned *n, bool *more)
{
	struct disk_kbuf kb;
	struct disk_rec rec;
	uint8_t sk[8];
	MDB_val kv, vv, skv = { sizeof(sk), sk };
	int rc = same_rec(d, txn, op, &kv, &kb, &rec);

	(void)freed, (void)n, (void)more;
	if (rc != 0)
		return rc == MDB_NOTFOUND ? 0 : rc;
	seq_encode(rec.seq, sk);
	rc = mdb_del(txn, d->dbi_lru, &skv, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	rc = mdb_get(txn, d->dbi_pages, &kv, &vv);
	if (rc != 0)
		return rc;
	/* Rewrite the value with the new sequence (a copy: vv is the map's). */
	{
		uint8_t buf[sizeof(rec) + 2 * DISK_MAX_RANGES * sizeof(struct disk_range)];
		MDB_val nv = { vv.mv_size, buf };

		memcpy(buf, vv.mv_data, vv.mv_size);
		rec.seq = __atomic_add_fetch(&d->seq, 1, __ATOMIC_RELAXED);
		rec.rec_sum = 0;
		memcpy(buf, &rec, sizeof(rec));
		disk_rec_seal(kv.mv_data, kv.mv_size, buf, nv.mv_size);
		rc = mdb_put(txn, d->dbi_pages, &kv, &nv, 0);
	}
	seq_encode(rec.seq, sk);
	return rc != 0 ? rc : mdb_put(txn, d->dbi_lru, &skv, &kv, 0);
}

/* Run an LRU touch. */
void
disk_run_touch(struct disk *d, struct disk_op *op)
{
	run_write(d, op, "index touch", touch_txn);
}
