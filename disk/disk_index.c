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
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "disk_dir.h"
#include "disk_impl.h"

/* 2: records carry rec_sum (their fields, ranges and key checksummed). */
#define DISK_FORMAT	2u
#define DISK_META_MAGIC	0x4e464344u	/* "NFCD" */

/* The meta DB's one record, key "format". */
struct disk_meta {
	uint32_t magic;
	uint32_t format;
	uint32_t page_size;
	uint32_t pad;			/* 0 */
	uint64_t sum;			/* XXH3-64 of the fields above */
};

/* Write "what: reason" into err. */
static void
set_err(char *err, size_t errlen, const char *dir, const char *what, int e)
{
	if (err && errlen)
		snprintf(err, errlen, "cache_dir %s: %s: %s", dir, what,
			 e > 0 ? strerror(e) : mdb_strerror(e));
}

/* Open the LMDB environment and its five databases. 0 or an error. */
static int
env_open(struct disk *d, const char **what)
{
	char path[4096];
	MDB_txn *txn;
	MDB_stat ms;
	size_t map = (size_t)64 << 20;
	int rc;

	map += (size_t)d->nslots * 4096 + (size_t)d->journal_max * 2 +
	       (size_t)DISK_OUTAGE_MAX * 2048;
	snprintf(path, sizeof(path), "%s/index.mdb", d->dir);
	*what = "index open";
	rc = mdb_env_create(&d->env);
	if (rc == 0)
		rc = mdb_env_set_maxdbs(d->env, 5);
	if (rc == 0)
		rc = mdb_env_set_mapsize(d->env, map);
	if (rc == 0)
		rc = mdb_env_open(d->env, path, MDB_NOSUBDIR | MDB_NOTLS |
				  (d->durable ? 0 : MDB_NOMETASYNC), 0600);
	if (rc == 0)
		rc = mdb_env_stat(d->env, &ms);
	if (rc != 0)
		return rc;
	d->idx_psize = ms.ms_psize;
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
		rc = mdb_dbi_open(txn, "outage", MDB_CREATE, &d->dbi_outage);
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
	struct disk_meta want = { DISK_META_MAGIC, DISK_FORMAT, d->page_size,
				  0, 0 };
	char name[] = "format";
	MDB_val k = { 6, name }, v;
	int rc = mdb_get(txn, d->dbi_meta, &k, &v);

	want.sum = XXH3_64bits(&want, offsetof(struct disk_meta, sum));
	*emptied = false;
	if (rc == 0 && v.mv_size == sizeof(want) &&
	    memcmp(v.mv_data, &want, sizeof(want)) == 0)
		return 0;
	if (rc != 0 && rc != MDB_NOTFOUND)
		return rc;
	*emptied = true;
	if (rc == 0)	/* a store of another format, page size, or damaged */
		d->st.format_resets++;
	rc = mdb_drop(txn, d->dbi_pages, 0);
	if (rc == 0)
		rc = mdb_drop(txn, d->dbi_lru, 0);
	v = (MDB_val){ sizeof(want), &want };
	return rc != 0 ? rc : mdb_put(txn, d->dbi_meta, &k, &v, 0);
}

/* Mark one scanned record's slot used; false if it cannot stay. */
static bool
scan_take(struct disk *d, const MDB_val *k, const MDB_val *v,
	  uint64_t *maxseq)
{
	struct disk_rec rec;

	if (disk_rec_decode(k, v, d->page_size, d->nslots, &rec, NULL) != 0 ||
	    d->slot_used[rec.slot]) {
		d->st.checksum_failures++;
		return false;
	}
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
		if (!scan_take(d, &k, &v, &maxseq)) {
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
		    disk_rec_decode(&v, &rv, d->page_size, d->nslots, &rec,
				    NULL) == 0)
			keep = rec.seq == seq;
		if (!keep && (rc = mdb_cursor_del(cur, 0)) != 0)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* In txn: check the format, rebuild the slot map, drop what cannot
 * stay, count the journal and the outage records; *emptied when the format differed. */
static int
index_scan(struct disk *d, MDB_txn *txn, bool *emptied)
{
	int rc = meta_check(d, txn, emptied);

	if (rc == 0)
		rc = scan_pages(d, txn);
	if (rc == 0)
		rc = scan_lru(d, txn);
	if (rc == 0)
		rc = disk_journal_count(d, txn);
	if (rc == 0)
		rc = disk_outage_count(d, txn);
	return rc;
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
	rc = index_scan(d, txn, &emptied);
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

/* True when index.mdb holds every page its newest meta page names
 * (disk_impl.h). */
bool
disk_index_intact(struct disk *d, char *why, size_t len)
{
	struct stat sb;
	MDB_envinfo info;
	MDB_stat ms;
	int fd;
	uint64_t need;

	if (!d->env || mdb_env_get_fd(d->env, &fd) != 0 || fstat(fd, &sb) != 0)
		return true;	/* nothing mapped, or nothing to tell */
	/* The meta pages are the file's first two: check before reading. */
	if ((uint64_t)sb.st_size < 2 * (uint64_t)d->idx_psize) {
		snprintf(why, len, "%s/index.mdb: truncated to %lld bytes",
			 d->dir, (long long)sb.st_size);
		return false;
	}
	if (mdb_env_info(d->env, &info) != 0 || mdb_env_stat(d->env, &ms) != 0)
		return true;
	need = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	/* The size again, after the meta: the writer thread may commit (a
	 * newer meta, a longer file) between the two reads, and the file
	 * only grows, so a size read after the meta covers what it names
	 * unless the file was cut (the other order saw a grown meta with
	 * the older size: a false "truncated" that turned the tier off). */
	if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size >= need)
		return true;
	snprintf(why, len, "%s/index.mdb: truncated to %lld bytes, its pages "
		 "need %llu", d->dir, (long long)sb.st_size,
		 (unsigned long long)need);
	return false;
}

/* Read every key and value of dbi in txn (a damaged page faults here, in
 * the check process). 0 or an LMDB error. */
static int
walk_db(MDB_txn *txn, MDB_dbi dbi, uint64_t *sum, uint64_t *count)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_cursor_open(txn, dbi, &cur);
	MDB_cursor_op op = MDB_FIRST;

	if (rc != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
		*sum += XXH3_64bits(k.mv_data, k.mv_size) ^
			XXH3_64bits(v.mv_data, v.mv_size);
		(*count)++;
		op = MDB_NEXT;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Write the check process's report line "tag text\n" to fd. */
static void
probe_say(int fd, char tag, const char *text)
{
	char line[600];
	int n = snprintf(line, sizeof(line), "%c %.580s\n", tag, text);

	if (n > 0 && write(fd, line, (size_t)n) < 0)
		_exit(3);
}

/* Walk the main DB: a name that is none of ours makes the file foreign. */
static int
walk_main(MDB_txn *txn, int fd)
{
	static const char *const ours[] = { "pages", "lru", "meta", "journal",
					    "outage" };
	MDB_cursor *cur;
	MDB_val k, v;
	MDB_dbi dbi;
	int rc = mdb_dbi_open(txn, NULL, 0, &dbi);

	if (rc == 0)
		rc = mdb_cursor_open(txn, dbi, &cur);
	if (rc != 0)
		return rc;
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		bool known = false;

		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			known |= k.mv_size == strlen(ours[i]) &&
				 memcmp(k.mv_data, ours[i], k.mv_size) == 0;
		if (!known) {
			probe_say(fd, 'E', "not an nfscached index (it "
				  "holds other data)");
			_exit(1);
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Exit the check process for LMDB error rc during step what. */
static void
probe_fail(int fd, const char *what, int rc)
{
	char line[400];

	snprintf(line, sizeof(line), "%s: %s", what, rc > 0 ? strerror(rc) :
		 mdb_strerror(rc));
	probe_say(fd, 'E', line);
	_exit(1);
}

/*
 * The check process: open the index as the daemon will, read the journal
 * (report how many records it holds: "J n"), every other database, the
 * free list and the main DB's names, check the file's size, then run the
 * start's whole scan in a write transaction and abort it. Exits 0 when
 * all of it went through.
 */
static void
probe_child(struct disk *d, int fd)
{
	const char *what;
	uint64_t sum = 0, n = 0;
	char why[512], num[32];
	MDB_txn *txn;
	bool emptied;
	int rc;

	/* A damaged index's crash is this process's answer: die by the
	 * signal, so the parent names it, under a sanitizer too (whose own
	 * handler would report the fault as its finding and exit). */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	if ((rc = env_open(d, &what)) != 0)
		probe_fail(fd, what, rc);
	if ((rc = mdb_txn_begin(d->env, NULL, MDB_RDONLY, &txn)) != 0)
		probe_fail(fd, "index read", rc);
	if ((rc = walk_db(txn, d->dbi_journal, &sum, &n)) != 0)
		probe_fail(fd, "journal read", rc);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)n);
	probe_say(fd, 'J', num);
	if (!disk_index_intact(d, why, sizeof(why))) {
		probe_say(fd, 'E', why);
		_exit(1);
	}
	rc = walk_main(txn, fd);
	if (rc == 0)
		rc = walk_db(txn, 0, &sum, &n);		/* the free list */
	if (rc == 0)
		rc = walk_db(txn, d->dbi_pages, &sum, &n);
	if (rc == 0)
		rc = walk_db(txn, d->dbi_lru, &sum, &n);
	if (rc == 0)
		rc = walk_db(txn, d->dbi_meta, &sum, &n);
	if (rc != 0)
		probe_fail(fd, "index read", rc);
	mdb_txn_abort(txn);
	if ((rc = mdb_txn_begin(d->env, NULL, 0, &txn)) != 0 ||
	    (rc = index_scan(d, txn, &emptied)) != 0)
		probe_fail(fd, "index load", rc);
	mdb_txn_abort(txn);
	mdb_env_close(d->env);
	_exit(0);
}

/* What the check process found. */
struct probe {
	bool ok;
	long journal;			/* records read, -1: not known */
	char why[600];
};

/* Read the check process's lines from fd into pr until EOF. */
static void
probe_read(int fd, struct probe *pr)
{
	char buf[2048];
	size_t got = 0;
	ssize_t r;

	while (got < sizeof(buf) - 1 &&
	       ((r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0 ||
		(r < 0 && errno == EINTR)))
		got += r > 0 ? (size_t)r : 0;
	buf[got] = '\0';
	for (char *l = buf, *e; l && *l; l = e ? e + 1 : NULL) {
		if ((e = strchr(l, '\n')))
			*e = '\0';
		if (l[0] == 'J')
			pr->journal = strtol(l + 2, NULL, 10);
		else if (l[0] == 'E')
			snprintf(pr->why, sizeof(pr->why), "%s", l + 2);
	}
}

/*
 * Check the index in a child process before this one maps it: LMDB has
 * no page checksums, and a damaged page, a truncated file or a bad lock
 * file crash the process that reads them (SIGSEGV, SIGBUS). Whatever
 * crashes, crashes there. Before the disk threads exist.
 */
static void
index_probe(struct disk *d, struct probe *pr)
{
	int pfd[2], st = 0;
	pid_t pid;

	*pr = (struct probe){ .ok = false, .journal = -1 };
	if (pipe(pfd) != 0) {
		snprintf(pr->why, sizeof(pr->why), "check: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		probe_child(d, pfd[1]);
	}
	close(pfd[1]);
	if (pid > 0)
		probe_read(pfd[0], pr);
	close(pfd[0]);
	if (pid < 0) {
		snprintf(pr->why, sizeof(pr->why), "check: fork: %s",
			 strerror(errno));
		return;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pr->ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (WIFSIGNALED(st))
		snprintf(pr->why, sizeof(pr->why), "damaged: reading it "
			 "crashed the check process (%s)",
			 strsignal(WTERMSIG(st)));
	else if (!pr->ok && !pr->why[0])
		snprintf(pr->why, sizeof(pr->why), "damaged: the check process "
			 "failed (exit %d)", WEXITSTATUS(st));
}

/*
 * The index failed its check (pr): keep serving without the tier. With
 * no journal record in it, move index.mdb aside (and drop its lock file)
 * so the next start makes a fresh one; otherwise leave it as it is, the
 * records are never thrown away silently. One line says all of it.
 */
static void
index_damaged(struct disk *d, const struct probe *pr)
{
	char path[4096], aside[4200], stamp[32], msg[2048], fate[1200];
	time_t now = time(NULL);
	struct tm tm;

	snprintf(path, sizeof(path), "%s/index.mdb", d->dir);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S",
		 gmtime_r(&now, &tm));
	snprintf(aside, sizeof(aside), "%s.damaged-%s", path, stamp);
	if (pr->journal == 0 && rename(path, aside) == 0) {
		snprintf(path, sizeof(path), "%s/index.mdb-lock", d->dir);
		(void)unlink(path);
		snprintf(fate, sizeof(fate), "it held no journal record; moved "
			 "aside to %.1000s, a fresh index is made at the next "
			 "start", aside);
	} else if (pr->journal == 0) {
		snprintf(fate, sizeof(fate), "it held no journal record; it "
			 "cannot be moved aside (%s): remove it to start afresh",
			 strerror(errno));
	} else if (pr->journal > 0) {
		d->journal_unread = pr->journal;
		snprintf(fate, sizeof(fate), "it holds %ld journal record(s) "
			 "of locally committed data that are not replayed from "
			 "a damaged index: the file is kept as it is; removing "
			 "it loses those writes", pr->journal);
	} else {
		d->journal_unread = -1;
		snprintf(fate, sizeof(fate), "its journal of locally committed "
			 "data could not be read: the file is kept as it is; "
			 "removing it loses any writes it holds");
	}
	snprintf(msg, sizeof(msg), "disk tier off: %.200s/index.mdb: %.500s; "
		 "%.1200s", d->dir, pr->why, fate);
	disk_degrade_msg(d, msg);
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
	struct probe pr;
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
		index_probe(d, &pr);
	if (rc == 0 && !pr.ok) {
		index_damaged(d, &pr);		/* the tier starts OFF */
	} else if (rc == 0) {
		rc = env_open(d, &what);
		if (rc == 0)
			rc = index_load(d, &what);
	}
	if (rc == 0 && d->env) {
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
	if (rc == 0) {
		uint64_t one = 1;

		/* Off from the start: the first disk_poll logs the line. */
		if (!disk_on(d) && write(d->efd, &one, sizeof(one)) < 0)
			return 0;	/* EAGAIN: already readable */
		return 0;
	}
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
