/* SPDX-License-Identifier: MIT */
/*
 * nlm_store: the held-lock table's copy in state_dir (see nlm_store.h
 * for the records, why MDB_NOSYNC, and what a failure does). States: no
 * environment (in memory only), idle, or a write transaction open
 * (nlm_store_begin to nlm_store_commit), rc holding the first failed
 * step's error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lmdb.h>
#include <xxhash.h>

#include "log.h"
#include "nlm_store.h"

#define STORE_MAGIC	0x4e4c4d53u	/* "NLMS" */
#define STORE_FORMAT	1u
#define STORE_MAP	((size_t)128 << 20)	/* ~100,000 locks */
#define KEY_LEN		16
#define SUM_LEN		8
/* A lock's fixed part: export id, svid, exclusive and 3 zero bytes,
 * offset, length, handle and owner lengths. */
#define LOCK_FIXED	(4 + 4 + 4 + 8 + 8 + 2 + 2)

struct nlm_store {
	char path[4096];		/* dir/nlm.mdb */
	MDB_env *env;			/* NULL: in memory only */
	MDB_dbi dbi;
	MDB_txn *txn;			/* the change being written, or NULL */
	int rc;				/* its first failed step, or 0 */
	bool failing;			/* the last commit failed (logged) */
	struct nlm_store_stats st;
};

/* Put v big-endian at p. */
static void be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The big-endian value at p. */
static uint64_t be64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The key of record (cid, id). */
static void key_make(uint8_t k[KEY_LEN], uint64_t cid, uint64_t id)
{
	be64_put(k, cid);
	be64_put(k + 8, id);
}

/* The checksum of key k and value v's first n bytes (the value's hash
 * seeded with the key's). */
static uint64_t rec_sum(const uint8_t *k, const uint8_t *v, size_t n)
{
	return XXH3_64bits_withSeed(v, n, XXH3_64bits(k, KEY_LEN));
}

/* Write value v (n bytes, then room for its sum) under (cid, id). */
static void put_rec(struct nlm_store *s, uint64_t cid, uint64_t id,
		    uint8_t *v, size_t n)
{
	uint8_t k[KEY_LEN];
	MDB_val kv = { KEY_LEN, k }, vv = { n + SUM_LEN, v };

	if (!s || !s->txn || s->rc)
		return;
	key_make(k, cid, id);
	be64_put(v + n, rec_sum(k, v, n));
	s->rc = mdb_put(s->txn, s->dbi, &kv, &vv, 0);
}

/* MDB_CORRUPTED when the meta page names pages past the end of the
 * file (a file cut short: reading them would fault), else 0. */
static int size_check(MDB_env *env)
{
	MDB_envinfo ei;
	MDB_stat ms;
	struct stat sb;
	int fd, rc;

	if ((rc = mdb_env_info(env, &ei)) != 0 ||
	    (rc = mdb_env_stat(env, &ms)) != 0 ||
	    (rc = mdb_env_get_fd(env, &fd)) != 0)
		return rc;
	if (fstat(fd, &sb) != 0)
		return errno;
	return ((uint64_t)ei.me_last_pgno + 1) * ms.ms_psize >
	       (uint64_t)sb.st_size ? MDB_CORRUPTED : 0;
}

/* Open s->path's environment and database, and check or write its format
 * record. 0 or an LMDB error (the environment closed). */
static int env_open(struct nlm_store *s)
{
	uint8_t k[KEY_LEN] = { 0 }, fmt[8 + SUM_LEN];
	MDB_val kv = { KEY_LEN, k }, v;
	MDB_txn *txn = NULL;
	int rc = mdb_env_create(&s->env);

	if (rc != 0)
		return rc;
	/* NOSYNC: nlm_store.h says why. */
	if ((rc = mdb_env_set_mapsize(s->env, STORE_MAP)) == 0 &&
	    (rc = mdb_env_open(s->env, s->path, MDB_NOSUBDIR | MDB_NOTLS |
			       MDB_NOSYNC, 0600)) == 0 &&
	    (rc = size_check(s->env)) == 0 &&
	    (rc = mdb_txn_begin(s->env, NULL, 0, &txn)) == 0 &&
	    (rc = mdb_dbi_open(txn, NULL, 0, &s->dbi)) == 0) {
		be64_put(fmt, (uint64_t)STORE_MAGIC << 32 | STORE_FORMAT);
		be64_put(fmt + 8, rec_sum(k, fmt, 8));
		rc = mdb_get(txn, s->dbi, &kv, &v);
		if (rc == MDB_NOTFOUND) {
			MDB_stat ms;

			/* A new store, or one with records and no format:
			 * not this one's. */
			rc = mdb_stat(txn, s->dbi, &ms);
			if (rc == 0 && ms.ms_entries != 0)
				rc = MDB_INVALID;
			v = (MDB_val){ sizeof(fmt), fmt };
			if (rc == 0)
				rc = mdb_put(txn, s->dbi, &kv, &v, 0);
		} else if (rc == 0 && (v.mv_size != sizeof(fmt) ||
				       memcmp(v.mv_data, fmt, sizeof(fmt)))) {
			rc = MDB_INVALID;
		}
	}
	if (rc == 0)
		rc = mdb_txn_commit(txn);
	else if (txn)
		mdb_txn_abort(txn);
	if (rc != 0) {
		mdb_env_close(s->env);
		s->env = NULL;
	}
	return rc;
}

/* Move s's unreadable file (error rc) aside, logged and counted. */
static void set_aside(struct nlm_store *s, int rc)
{
	char bad[sizeof(s->path) + 8], lock[sizeof(s->path) + 8];

	s->st.resets++;
	snprintf(bad, sizeof(bad), "%s.bad", s->path);
	snprintf(lock, sizeof(lock), "%s-lock", s->path);
	log_warn("nlm: the lock table %s cannot be read (%s): moved to %s; "
		 "starting with no client's locks known, so the reboot of a "
		 "client that held some before will not release them",
		 s->path, mdb_strerror(rc), bad);
	if (rename(s->path, bad) != 0 && errno != ENOENT)
		unlink(s->path);
	unlink(lock);
}

struct nlm_store *nlm_store_open(const char *dir)
{
	struct nlm_store *s = calloc(1, sizeof(*s));
	struct stat sb;
	int rc;

	if (!s)
		return NULL;
	snprintf(s->path, sizeof(s->path), "%s/nlm.mdb", dir);
	/* A file cut to nothing (a crash of the host, a mistake) would be
	 * taken by LMDB for a new store, with no word of what was lost. */
	if (stat(s->path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0)
		set_aside(s, MDB_INVALID);
	rc = env_open(s);
	if (rc == MDB_INVALID || rc == MDB_CORRUPTED ||
	    rc == MDB_VERSION_MISMATCH || rc == MDB_PAGE_NOTFOUND ||
	    rc == MDB_BAD_TXN) {
		set_aside(s, rc);	/* counted there */
		rc = env_open(s);
	} else if (rc != 0) {
		s->st.resets++;
	}
	if (rc != 0)
		log_warn("nlm: cannot keep the lock table in %s (%s): kept in "
			 "memory only, so after a restart a client's reboot "
			 "will not release the locks it held before",
			 s->path, mdb_strerror(rc));
	return s;
}

void nlm_store_close(struct nlm_store **sp)
{
	struct nlm_store *s = sp ? *sp : NULL;

	if (!s)
		return;
	if (s->txn)
		mdb_txn_abort(s->txn);
	if (s->env)
		mdb_env_close(s->env);
	free(s);
	*sp = NULL;
}

bool nlm_store_active(const struct nlm_store *s)
{
	return s && s->env;
}

/* Decode lock value v (n bytes, its sum checked already) into h (oh
 * pointing into v). 0, or -1 when it does not hold together. */
static int lock_decode(const uint8_t *v, size_t n, struct nlm_held *h)
{
	uint64_t w;

	if (n < LOCK_FIXED)
		return -1;
	memset(h, 0, sizeof(*h));
	w = be64_get(v);
	h->export_id = (unsigned)(w >> 32);
	h->svid = (int32_t)(uint32_t)w;
	h->exclusive = v[8] != 0;
	h->off = be64_get(v + 12);
	h->len = be64_get(v + 20);
	h->fh_len = (size_t)v[28] << 8 | v[29];
	h->oh_len = (size_t)v[30] << 8 | v[31];
	if (v[8] > 1 || !h->fh_len || h->fh_len > NLM_LOCKS_FH_MAX ||
	    !h->oh_len || h->oh_len > NLM_LOCKS_OH_MAX ||
	    n != LOCK_FIXED + h->fh_len + h->oh_len)
		return -1;
	memcpy(h->fh, v + LOCK_FIXED, h->fh_len);
	/* Borrowed for the callback only, never written. */
	memcpy(&h->oh, &(const uint8_t *){ v + LOCK_FIXED + h->fh_len },
	       sizeof(h->oh));
	return 0;
}

/* Hand record (k, v) to the callbacks; *cur is the client being read.
 * 0, or -1 when it does not hold together or a callback stops. */
static int load_rec(const MDB_val *k, const MDB_val *v, uint64_t *cur,
		    nlm_store_client_fn client, nlm_store_lock_fn lock,
		    void *arg)
{
	const uint8_t *kb = k->mv_data, *vb = v->mv_data;
	uint64_t cid, id;
	size_t n;

	if (k->mv_size != KEY_LEN || v->mv_size < SUM_LEN)
		return -1;
	n = v->mv_size - SUM_LEN;
	if (be64_get(vb + n) != rec_sum(kb, vb, n))
		return -1;
	cid = be64_get(kb);
	id = be64_get(kb + 8);
	if (cid == 0)		/* the format record, checked at open */
		return id == 0 ? 0 : -1;
	if (id == 0) {
		char name[NLM_STORE_CALLER_MAX + 1];

		if (n == 0 || n > NLM_STORE_CALLER_MAX || memchr(vb, 0, n))
			return -1;
		memcpy(name, vb, n);
		name[n] = '\0';
		*cur = cid;
		return client(arg, cid, name);
	}
	struct nlm_held h;

	if (cid != *cur || lock_decode(vb, n, &h) != 0)
		return -1;
	return lock(arg, cid, id, &h);
}

int nlm_store_load(struct nlm_store *s, nlm_store_client_fn client,
		   nlm_store_lock_fn lock, void *arg)
{
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	uint64_t now_client = 0;
	int rc, bad = 0;

	if (!nlm_store_active(s))
		return 0;
	rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
	if (rc == 0)
		rc = mdb_cursor_open(txn, s->dbi, &cur);
	while (rc == 0 && (rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
		if (load_rec(&k, &v, &now_client, client, lock, arg) != 0) {
			bad = 1;
			break;
		}
	if (cur)
		mdb_cursor_close(cur);
	if (txn)
		mdb_txn_abort(txn);
	if (!bad && rc == MDB_NOTFOUND)
		return 0;
	/* Moved aside and made anew, never emptied in place: LMDB does not
	 * survive deleting from its own damaged pages (a record that failed
	 * its checksum, then mdb_cursor_del, aborted the daemon at every
	 * start). */
	mdb_env_close(s->env);
	s->env = NULL;
	set_aside(s, bad ? MDB_CORRUPTED : rc);	/* logged, counted */
	rc = env_open(s);
	if (rc != 0)
		log_warn("nlm: cannot keep the lock table in %s (%s): kept in "
			 "memory only", s->path, mdb_strerror(rc));
	return -1;
}

bool nlm_store_begin(struct nlm_store *s)
{
	int rc;

	if (!nlm_store_active(s) || s->txn)
		return false;
	s->rc = 0;
	rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
	if (rc == 0)
		return true;
	s->txn = NULL;
	s->rc = rc;
	nlm_store_commit(s);	/* counted and logged as a failed write */
	return false;
}

void nlm_store_put_client(struct nlm_store *s, uint64_t cid,
			  const char *caller)
{
	uint8_t v[NLM_STORE_CALLER_MAX + SUM_LEN];
	size_t n = caller ? strlen(caller) : 0;

	if (n == 0 || n > NLM_STORE_CALLER_MAX) {
		if (s && s->txn && !s->rc)
			s->rc = EINVAL;
		return;
	}
	memcpy(v, caller, n);
	put_rec(s, cid, 0, v, n);
}

void nlm_store_put_lock(struct nlm_store *s, uint64_t cid, uint64_t id,
			const struct nlm_held *h)
{
	uint8_t v[LOCK_FIXED + NLM_LOCKS_FH_MAX + NLM_LOCKS_OH_MAX + SUM_LEN];

	if (!h || !h->fh_len || h->fh_len > NLM_LOCKS_FH_MAX ||
	    !h->oh_len || h->oh_len > NLM_LOCKS_OH_MAX) {
		if (s && s->txn && !s->rc)
			s->rc = EINVAL;
		return;
	}
	memset(v, 0, LOCK_FIXED);
	be64_put(v, (uint64_t)h->export_id << 32 | (uint32_t)h->svid);
	v[8] = h->exclusive ? 1 : 0;
	be64_put(v + 12, h->off);
	be64_put(v + 20, h->len);
	v[28] = (uint8_t)(h->fh_len >> 8);
	v[29] = (uint8_t)h->fh_len;
	v[30] = (uint8_t)(h->oh_len >> 8);
	v[31] = (uint8_t)h->oh_len;
	memcpy(v + LOCK_FIXED, h->fh, h->fh_len);
	memcpy(v + LOCK_FIXED + h->fh_len, h->oh, h->oh_len);
	put_rec(s, cid, id, v, LOCK_FIXED + h->fh_len + h->oh_len);
}

void nlm_store_del_lock(struct nlm_store *s, uint64_t cid, uint64_t id)
{
	uint8_t k[KEY_LEN];
	MDB_val kv = { KEY_LEN, k };
	int rc;

	if (!s || !s->txn || s->rc)
		return;
	key_make(k, cid, id);
	rc = mdb_del(s->txn, s->dbi, &kv, NULL);
	if (rc != 0 && rc != MDB_NOTFOUND)
		s->rc = rc;
}

/* Delete the records of clients first to last (inclusive), in order. */
static void del_range(struct nlm_store *s, uint64_t first, uint64_t last)
{
	uint8_t k[KEY_LEN];
	MDB_val kv = { KEY_LEN, k }, v;
	MDB_cursor *cur;
	int rc;

	if (!s || !s->txn || s->rc)
		return;
	if ((rc = mdb_cursor_open(s->txn, s->dbi, &cur)) != 0) {
		s->rc = rc;
		return;
	}
	key_make(k, first, 0);
	rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE);
	while (rc == 0 && kv.mv_size == KEY_LEN &&
	       be64_get(kv.mv_data) <= last) {
		rc = mdb_cursor_del(cur, 0);
		if (rc == 0)
			rc = mdb_cursor_get(cur, &kv, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		s->rc = rc;
}

void nlm_store_del_client(struct nlm_store *s, uint64_t cid)
{
	if (cid)
		del_range(s, cid, cid);
}

void nlm_store_clear(struct nlm_store *s)
{
	del_range(s, 1, UINT64_MAX);
}

int nlm_store_commit(struct nlm_store *s)
{
	int rc;

	if (!s || (!s->txn && !s->rc))
		return 0;
	rc = s->rc;
	if (s->txn && rc == 0)
		rc = mdb_txn_commit(s->txn);
	else if (s->txn)
		mdb_txn_abort(s->txn);
	s->txn = NULL;
	s->rc = 0;
	if (rc == 0) {
		if (s->failing)
			log_info("nlm: the lock table %s is written again",
				 s->path);
		s->failing = false;
		return 0;
	}
	s->st.write_failures++;
	if (!s->failing)
		log_warn("nlm: cannot write the lock table %s (%s): locks work "
			 "on, kept in memory; written again at the next change "
			 "that can be", s->path, rc == EINVAL ?
			 "a field over its limit" : mdb_strerror(rc));
	s->failing = true;
	return -1;
}

void nlm_store_stats_get(const struct nlm_store *s,
			 struct nlm_store_stats *st)
{
	if (s)
		*st = s->st;
	else
		memset(st, 0, sizeof(*st));
}
