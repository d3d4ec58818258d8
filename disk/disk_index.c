/* SPDX-License-Identifier: MIT */
/*
 * disk index: opening and closing the cache directory (the LMDB
 * environment "index.mdb" and the slab file "slab"), before the worker
 * threads start and after they stopped. Opening checks the format record,
 * empties a store of another page size, then walks every record once to
 * rebuild the in-memory slot map, dropping what does not hold together:
 * a record that does not decode, names a slot beyond the budget or a slot
 * another record holds, and lru entries without their record. A record
 * whose slot bytes were never written (a crash between the data write and
 * a durable commit is impossible, but a lost write is not) is caught by
 * its checksum at load.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_dir.h"
#include "disk_impl.h"

#define DISK_FORMAT	1u
#define DISK_META_MAGIC	0x4e464344u	/* "NFCD" */

/* The meta DB's one record, key "format". */
struct disk_meta {
	uint32_t magic;
	uint32_t format;
	uint32_t page_size;
};

/* Write "what: reason" into err. */
static void
set_err(char *err, size_t errlen, const char *dir, const char *what, int e)
{
	if (err && errlen)
		snprintf(err, errlen, "cache_dir %s: %s: %s", dir, what,
			 e > 0 ? strerror(e) : mdb_strerror(e));
}

/* Open the LMDB environment and its four databases. 0 or an error. */
static int
env_open(struct disk *d, const char **what)
{
	char path[4096];
	MDB_txn *txn;
	size_t map = (size_t)64 << 20;
	int rc;

	map += (size_t)d->nslots * 4096 + (size_t)d->journal_max * 2;
	snprintf(path, sizeof(path), "%s/index.mdb", d->dir);
	*what = "index open";
	rc = mdb_env_create(&d->env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(d->env, 4);
	if (rc == 0)
		rc = mdb_env_set_mapsize(d->env, map);
	if (rc == 0)
		rc = mdb_env_open(d->env, path, MDB_NOSUBDIR | MDB_NOTLS |
				  (d->durable ? 0 : MDB_NOMETASYNC), 0600);
	if (rc != 0)
		return rc;
	rc = mdb_txn_begin(d->env, NULL, 0, &txn);
	if (rc != 0)
		return rc;
	rc = mdb_dbi_open(txn, "pages", MDB_CREATE, &d->dbi_pages);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "lru", MDB_CREATE, &d->dbi_lru);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &d->dbi_meta);
	if (rc == 0)
		rc = mdb_dbi_open(txn, "journal", MDB_CREATE, &d->dbi_journal);
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	else
		mdb_txn_abort(txn);
	return rc;
}

/* Check the format record; empty the store if it differs. */
static int
meta_check(struct disk *d, MDB_txn *txn, bool *emptied)
{
	struct disk_meta want = { DISK_META_MAGIC, DISK_FORMAT, d->page_size };
	char name[] = "format";
	MDB_val k = { 6, name }, v;
	int rc = mdb_get(txn, d->dbi_meta, &k, &v);

	*emptied = false;
	if (rc == 0 && v.mv_size == sizeof(want) &&
	    memcmp(v.mv_data, &want, sizeof(want)) == 0)
		return 0;
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	*emptied = true;
	rc = mdb_drop(txn, d->dbi_pages, 0);
	if (rc == 0)
		rc = mdb_drop(txn, d->dbi_lru, 0);
	v = (MDB_val){ sizeof(want), &want };
	return rc != 0 ? rc : mdb_put(txn, d->dbi_meta, &k, &v, 0);
}

/* Mark one scanned record's slot used; false if it cannot stay. */
static bool
scan_take(struct disk *d, const MDB_val *v, uint64_t *maxseq)
{
	struct disk_rec rec;

	if (disk_rec_decode(v, d->page_size, d->nslots, &rec, NULL) != 0 ||
	    d->slot_used[rec.slot])
		return false;
	d->slot_used[rec.slot] = 1;
	d->nfree--;
	d->pages_held++;
	if (rec.seq > *maxseq)
		*maxseq = rec.seq;
	return true;
}

/* Walk the pages DB: rebuild the slot map, delete what cannot stay. */
static int
scan_pages(struct disk *d, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t maxseq = 0;
	int rc = mdb_cursor_open(txn, d->dbi_pages, &cur);

	if (rc != 0)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		if (!scan_take(d, &v, &maxseq)) {
			rc = mdb_cursor_del(cur, 0);
			if (rc != 0)
				break;
		} else {
			disk_present_adjust(d, disk_key_hash(k.mv_data, k.mv_size), 1);
		}
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	d->seq = maxseq;
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Walk the lru DB: delete entries whose record is gone or moved on. */
static int
scan_lru(struct disk *d, MDB_txn *txn)
{
	MDB_cursor *cur;
	MDB_val k, v, rv;
	struct disk_rec rec;
	int rc = mdb_cursor_open(txn, d->dbi_lru, &cur);

	if (rc != 0)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (rc == 0) {
		uint64_t seq = 0;
		bool keep = false;

		for (size_t i = 0; i < k.mv_size && i < 8; i++)
			seq = seq << 8 | ((const uint8_t *)k.mv_data)[i];
		if (k.mv_size == 8 && mdb_get(txn, d->dbi_pages, &v, &rv) == 0 &&
		    disk_rec_decode(&rv, d->page_size, d->nslots, &rec, NULL) == 0)
			keep = rec.seq == seq;
		if (!keep && (rc = mdb_cursor_del(cur, 0)) != 0)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Check the format, rebuild the slot map, trim the slab. 0 or error. */
static int
index_load(struct disk *d, const char **what)
{
	MDB_txn *txn;
	struct stat sb;
	bool emptied;
	int rc;

	*what = "index load";
	rc = mdb_txn_begin(d->env, NULL, 0, &txn);
	if (rc != 0)
		return rc;
	rc = meta_check(d, txn, &emptied);
	if (rc == 0)
		rc = scan_pages(d, txn);
	if (rc == 0)
		rc = scan_lru(d, txn);
	if (rc == 0)
		rc = disk_journal_count(d, txn);
	if (rc != 0) {
		mdb_txn_abort(txn);
		disk_present_clear(d);
		return rc;
	}
	rc = mdb_txn_commit(txn);
	if (rc != 0)
		return rc;
	*what = "slab truncate";
	if (fstat(d->slab_fd, &sb) != 0)
		return errno;
	if (emptied || sb.st_size > (off_t)d->nslots * d->page_size) {
		if (ftruncate(d->slab_fd, emptied ? 0 :
			      (off_t)d->nslots * d->page_size) != 0)
			return errno;
	}
	return 0;
}

/*
 * Open the directory, slab, index and eventfd of d (d->dir, page_size,
 * nslots, durable set). 0, or -1 with errno set and err filled.
 */
int
disk_store_open(struct disk *d, char *err, size_t errlen)
{
	char path[4096];
	const char *what;
	int rc;

	d->slab_fd = d->efd = -1;
	/* The check --check-config runs too (disk_dir.h); then create it. */
	rc = disk_dir_check(d->dir, err, errlen);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	what = "create";
	if (mkdir(d->dir, 0700) != 0 && errno != EEXIST)
		rc = errno;
	if (rc == 0) {
		what = "slab open";
		snprintf(path, sizeof(path), "%s/slab", d->dir);
		d->slab_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		rc = d->slab_fd < 0 ? errno : 0;
	}
	/* One process per cache_dir: a second daemon on the same directory
	 * would overwrite the first one's slots (flock(2), released when the
	 * slab is closed, also by a crash). */
	if (rc == 0 && flock(d->slab_fd, LOCK_EX | LOCK_NB) != 0) {
		what = "in use by another process (slab locked)";
		rc = errno == EWOULDBLOCK ? EBUSY : errno;
	}
	if (rc == 0)
		rc = env_open(d, &what);
	if (rc == 0)
		rc = index_load(d, &what);
	if (rc == 0) {
		what = "index reader";
		rc = mdb_txn_begin(d->env, NULL, MDB_RDONLY, &d->rtxn);
		if (rc == 0)
			mdb_txn_reset(d->rtxn);
	}
	if (rc == 0) {
		what = "eventfd";
		d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		rc = d->efd < 0 ? errno : 0;
	}
	if (rc == 0)
		return 0;
	set_err(err, errlen, d->dir, what, rc);
	disk_store_close(d);
	errno = rc > 0 ? rc : EIO;
	return -1;
}

/* Close what disk_store_open opened (any part of it). */
void
disk_store_close(struct disk *d)
{
	if (d->rtxn)
		mdb_txn_abort(d->rtxn);
	d->rtxn = NULL;
	if (d->env) {
		mdb_env_sync(d->env, 1);
		mdb_env_close(d->env);
	}
	d->env = NULL;
	if (d->slab_fd >= 0) {
		fdatasync(d->slab_fd);
		close(d->slab_fd);
	}
	if (d->efd >= 0)
		close(d->efd);
	d->slab_fd = d->efd = -1;
}
