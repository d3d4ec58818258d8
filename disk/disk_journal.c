/* SPDX-License-Identifier: MIT */
/*
 * disk journal: locally committed write-back data (disk.h "The journal";
 * issue 18, docs/disk-tier.md "Local commit").
 *
 * A record is the caller's bytes under its page's encoded key
 * (disk_key_encode) followed by the caller's 64-bit sequence, big-endian,
 * in the "journal" database: a page's records are adjacent, in sequence
 * order, so a page's deletion is one cursor walk. The writer thread runs the journal's
 * operations as they were queued, those queued together (up to
 * DISK_JOURNAL_BATCH) in one write transaction, and completes a JSYNC
 * only after that transaction committed. LMDB's commit writes the data
 * pages, fdatasyncs, then writes and syncs the meta page (durable mode:
 * no MDB_NOMETASYNC), so a committed record survives a crash or a power
 * loss whole, and an uncommitted one leaves the previous state whole.
 *
 * Invariants: journal_records and journal_bytes (in st, atomic access)
 * are the number and total value size of the records committed (set by
 * disk_journal_count at open, then changed only by the writer's
 * committed transactions).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "disk_impl.h"

/* Adjust the gauges by the committed deltas. */
static void
journal_gauge(struct disk *d, int64_t drec, int64_t dbytes)
{
	__atomic_fetch_add(&d->st.journal_records, (uint64_t)drec,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->st.journal_bytes, (uint64_t)dbytes,
			   __ATOMIC_RELAXED);
}

/* The journal key of (k, seq): k's encoded page key, then seq big-endian. */
static void
journal_key(const struct disk_key *k, uint64_t seq, struct disk_kbuf *kb)
{
	disk_key_encode(k, true, kb);
	for (int i = 0; i < 8; i++)
		kb->b[kb->len + i] = (uint8_t)(seq >> (56 - 8 * i));
	kb->len += 8;
}

/* Delete every record of k's page (any sequence) inside txn, adding the
 * gauge deltas. 0 or an LMDB error. */
static int
journal_del_page(struct disk *d, MDB_txn *txn, const struct disk_key *k,
		 int64_t *drec, int64_t *dbytes)
{
	struct disk_kbuf kb;
	MDB_cursor *cur;
	MDB_val kv, v;
	size_t plen;
	int rc;

	journal_key(k, 0, &kb);
	plen = kb.len - 8;		/* the page's prefix */
	if ((rc = mdb_cursor_open(txn, d->dbi_journal, &cur)) != 0)
		return rc;
	kv = (MDB_val){ kb.len, kb.b };
	rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
	while (rc == 0 && kv.mv_size == plen + 8 &&
	       memcmp(kv.mv_data, kb.b, plen) == 0) {
		*drec -= 1;
		*dbytes -= (int64_t)v.mv_size;
		if ((rc = mdb_cursor_del(cur, 0)) != 0)
			break;
		/* After a del, MDB_NEXT gives the record that followed. */
		rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND || rc == 0 ? 0 : rc;
}

/* Apply one op inside txn, adding its gauge deltas. 0 or an LMDB error. */
static int
journal_apply(struct disk *d, MDB_txn *txn, struct disk_op *op,
	      int64_t *drec, int64_t *dbytes)
{
	struct disk_kbuf kb;
	MDB_val kv, v;
	int rc;

	if (op->kind == DISK_OP_JSYNC)
		return 0;
	if ((op->kind == DISK_OP_JDEL || op->jreplace) &&
	    (rc = journal_del_page(d, txn, &op->key, drec, dbytes)) != 0)
		return rc;
	if (op->kind == DISK_OP_JDEL)
		return 0;
	journal_key(&op->key, op->seq, &kb);
	kv = (MDB_val){ kb.len, kb.b };
	if (mdb_get(txn, d->dbi_journal, &kv, &v) == 0) {
		*drec -= 1;
		*dbytes -= (int64_t)v.mv_size;
	}
	v = (MDB_val){ op->data_len, op->pg.data };
	rc = mdb_put(txn, d->dbi_journal, &kv, &v, 0);
	*drec += 1;
	*dbytes += (int64_t)op->data_len;
	return rc;
}

/* The slack a commit needs beyond its records' bytes (LMDB's branch,
 * meta and freelist pages), bytes. */
#define JOURNAL_COMMIT_SLACK	(1024 * 1024)

/* The error a failed commit of about want bytes reports: LMDB turns a
 * short write (what a full filesystem gives: the write stops where the
 * free blocks end) into EIO; when cache_dir's filesystem has less room
 * than the commit needed, it is ENOSPC. */
static int
journal_error(struct disk *d, int rc, int64_t want)
{
	struct statvfs sv;
	uint64_t need = JOURNAL_COMMIT_SLACK + (want > 0 ? (uint64_t)want : 0);

	if (rc == EIO && statvfs(d->dir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < need)
		return ENOSPC;
	return rc;
}

void
disk_run_journal(struct disk *d, struct disk_op **ops, unsigned n)
{
	int64_t drec = 0, dbytes = 0;
	MDB_txn *txn = NULL;
	int rc = 0;

	if (!__atomic_load_n(&d->on, __ATOMIC_RELAXED))
		return;		/* every op stays DISK_OFF */
	rc = disk_fault_take(d, DISK_FAULT_JOURNAL);
	if (rc == 0)
		rc = mdb_txn_begin(d->env, NULL, 0, &txn);
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = journal_apply(d, txn, ops[i], &drec, &dbytes);
	if (rc == 0) {
		rc = mdb_txn_commit(txn);
		txn = NULL;
	}
	if (txn)
		mdb_txn_abort(txn);
	if (rc != 0) {
		disk_degrade(d, "journal commit", journal_error(d, rc, dbytes));
		return;
	}
	disk_io_event(d, DISK_IO_INDEX_COMMIT, 0, 0);
	journal_gauge(d, drec, dbytes);
	for (unsigned i = 0; i < n; i++)
		ops[i]->result = DISK_HIT;
}

int
disk_journal_count(struct disk *d, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t nrec = 0, bytes = 0;
	int rc = mdb_cursor_open(txn, d->dbi_journal, &cur);

	if (rc != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, nrec ? MDB_NEXT : MDB_FIRST)) == 0) {
		nrec++;
		bytes += v.mv_size;
	}
	mdb_cursor_close(cur);
	d->st.journal_records = nrec;
	d->st.journal_bytes = bytes;
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Queue a journal op of kind for k with len bytes of rec. */
static int
journal_submit(struct disk *d, enum disk_op_kind kind, const struct disk_key *k,
	       uint64_t seq, bool replace, const void *rec, size_t len,
	       disk_journal_cb *cb, void *arg)
{
	struct disk_op *op;

	if (kind != DISK_OP_JSYNC &&
	    (!k || k->fh_len == 0 || k->fh_len > DISK_FH_MAX ||
	     (kind == DISK_OP_JPUT && (len == 0 || len > DISK_JOURNAL_MAX)))) {
		errno = EINVAL;
		return -1;
	}
	if (!disk_on(d)) {
		errno = EIO;
		return -1;
	}
	op = calloc(1, sizeof(*op));
	if (!op || (len && !(op->pg.data = malloc(len)))) {
		free(op);
		errno = ENOMEM;
		return -1;
	}
	op->kind = kind;
	if (k)
		op->key = *k;
	op->seq = seq;
	op->jreplace = replace;
	if (len)
		memcpy(op->pg.data, rec, len);
	op->data_len = (uint32_t)len;
	/* Counted until disk_poll frees it (disk_io.c op_free). */
	__atomic_fetch_add(&d->journal_queued, (uint64_t)len, __ATOMIC_RELAXED);
	op->jcb = cb;
	op->arg = arg;
	/* An op the tier turned OFF under (after the check above) is not
	 * queued but still completes, as DISK_OFF: a sync's callback then
	 * runs (durable false), so for a sync that is not a failure to
	 * report (its caller would free what the callback uses). */
	if (disk_submit_journal(d, op) != 0 && kind != DISK_OP_JSYNC)
		return -1;
	return 0;
}

int
disk_journal_put(struct disk *d, const struct disk_key *k, uint64_t seq,
		 bool replace, const void *rec, size_t len)
{
	return journal_submit(d, DISK_OP_JPUT, k, seq, replace, rec, len,
			      NULL, NULL);
}

int
disk_journal_del(struct disk *d, const struct disk_key *k)
{
	return journal_submit(d, DISK_OP_JDEL, k, 0, false, NULL, 0, NULL,
			      NULL);
}

int
disk_journal_sync(struct disk *d, disk_journal_cb *cb, void *arg)
{
	return journal_submit(d, DISK_OP_JSYNC, NULL, 0, false, NULL, 0, cb,
			      arg);
}

/* Decode a journal key back (journal_key's inverse); false if bad. */
static bool
key_decode(const MDB_val *kv, struct disk_key *k, uint64_t *seq)
{
	const uint8_t *b = kv->mv_data;

	if (kv->mv_size < 1 + 16 || b[0] == 0 || b[0] > DISK_FH_MAX ||
	    kv->mv_size != 1 + (size_t)b[0] + 16)
		return false;
	memset(k, 0, sizeof(*k));
	k->fh_len = b[0];
	memcpy(k->fh, b + 1, b[0]);
	*seq = 0;
	for (int i = 0; i < 8; i++) {
		k->page = (k->page << 8) | b[1 + b[0] + i];
		*seq = (*seq << 8) | b[9 + b[0] + i];
	}
	return true;
}

long
disk_journal_scan(struct disk *d, disk_journal_fn *fn, void *arg)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val kv, v;
	struct disk_key k;
	uint64_t seq;
	void *copy;
	long n = 0, stop = 0;
	int rc = d->env ? mdb_txn_begin(d->env, NULL, MDB_RDONLY, &txn)
			: EIO;	/* a damaged index is not opened */

	if (rc == 0 && (rc = mdb_cursor_open(txn, d->dbi_journal, &cur)) != 0)
		mdb_txn_abort(txn);
	if (rc != 0) {
		errno = EIO;
		return -1;
	}
	/* LMDB values are only 2-byte aligned: each record is handed over
	 * as an aligned copy, so callers may read it as their structs. */
	if (!(copy = malloc(DISK_JOURNAL_MAX))) {
		mdb_cursor_close(cur);
		mdb_txn_abort(txn);
		errno = ENOMEM;
		return -1;
	}
	while (!stop && (rc = mdb_cursor_get(cur, &kv, &v,
					     n ? MDB_NEXT : MDB_FIRST)) == 0) {
		n++;
		if (v.mv_size <= DISK_JOURNAL_MAX && key_decode(&kv, &k, &seq)) {
			memcpy(copy, v.mv_data, v.mv_size);
			stop = fn(arg, &k, seq, copy, v.mv_size);
		}
	}
	free(copy);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (stop)
		return stop;
	if (rc != MDB_NOTFOUND) {
		errno = EIO;
		return -1;
	}
	return n;
}

/* The meta key for name, or false when name is not allowed. */
static bool
meta_key(const char *name, MDB_val *k)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 32 || strcmp(name, "format") == 0)
		return false;
	k->mv_size = n;
	memcpy(&k->mv_data, &name, sizeof(name));	/* LMDB reads it only */
	return true;
}

long
disk_meta_get(struct disk *d, const char *name, void *buf, size_t len)
{
	MDB_txn *txn;
	MDB_val k, v;
	long got;
	int rc;

	if (!meta_key(name, &k)) {
		errno = EINVAL;
		return -1;
	}
	if (!d->env || (rc = mdb_txn_begin(d->env, NULL, MDB_RDONLY, &txn)) != 0) {
		errno = EIO;
		return -1;
	}
	rc = mdb_get(txn, d->dbi_meta, &k, &v);
	got = rc == 0 ? (long)v.mv_size : 0;
	if (rc == 0)
		memcpy(buf, v.mv_data, v.mv_size < len ? v.mv_size : len);
	mdb_txn_abort(txn);
	if (rc != 0 && rc != MDB_NOTFOUND) {
		errno = EIO;
		return -1;
	}
	return got;
}

int
disk_meta_put(struct disk *d, const char *name, const void *val, size_t len)
{
	MDB_txn *txn;
	MDB_val k, v = { len, NULL };
	int rc;

	memcpy(&v.mv_data, &val, sizeof(val));	/* LMDB reads it only */
	if (!meta_key(name, &k)) {
		errno = EINVAL;
		return -1;
	}
	if (!disk_on(d) || mdb_txn_begin(d->env, NULL, 0, &txn) != 0) {
		errno = EIO;
		return -1;
	}
	rc = mdb_put(txn, d->dbi_meta, &k, &v, 0);
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	else
		mdb_txn_abort(txn);
	if (rc != 0) {
		errno = EIO;
		return -1;
	}
	return 0;
}
