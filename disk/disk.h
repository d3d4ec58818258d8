/* SPDX-License-Identifier: MIT */
/*
 * disk: the persistent page store behind the RAM cache (issue 17,
 * docs/disk-tier.md). A library of its own: it knows nothing of daemon/,
 * of NFS or of libevent. Its callers hand it pages keyed by (upstream file
 * handle, page index) and get them back later, possibly after a restart.
 *
 * Layout in the cache directory:
 *   index.mdb/   LMDB environment: "pages" (key -> record), "lru"
 *                (sequence -> key), "meta" (format, page size,
 *                the caller's named values), "journal" (key -> the
 *                caller's locally committed data: disk_journal_put)
 *   slab         one file of fixed page_size slots; slot n at n * page_size
 * A record holds the slot, the stored length, the XXH3-64 checksum of the
 * stored bytes (seeded with the key), the page's valid ranges and known
 * holes, and the attributes of the file version the page came from.
 *
 * Threads: every disk access runs on one of two worker threads, never on
 * the caller's: the reader serves loads; the writer serves stores, drops,
 * LRU touches and culls (LMDB has a single writer anyway). Completions are
 * queued and an eventfd (disk_fd) becomes readable; the caller's loop then
 * calls disk_poll(), which runs the callbacks on the caller's thread. So
 * every callback and the log hook run on the thread that calls disk_poll.
 * Memory the caller counts (issue 42): the page buffer of a queued store
 * (its copy) and of a load comes from the caller (disk_params buf_get)
 * on the submitting thread and goes back (buf_put) from disk_poll, so
 * the caller can charge it to its own budget; between the two it is the
 * operation's alone (the caller never touches it, only the worker that
 * runs the operation reads or writes it, the queue's mutex ordering the
 * hand-over both ways). No worker ever reads the caller's memory: a
 * store copies its page on the submitting thread.
 *
 * States: ON -> OFF (one way). Any disk error at run time (ENOSPC, EIO,
 * EFBIG, an LMDB error) turns the tier OFF: the error is counted, the log
 * hook is called once from disk_poll, and from then on loads complete as
 * DISK_OFF and stores are dropped; no caller ever sees an error for it.
 *
 * Never served wrong: a load returns bytes only when the record's checksum
 * matches what was read back from the slot; otherwise the record is
 * dropped and the load completes as DISK_CORRUPT (the caller refetches).
 */
#ifndef NFSCACHED_DISK_DISK_H
#define NFSCACHED_DISK_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct disk;

#define DISK_FH_MAX		64	/* longest upstream handle, bytes */
#define DISK_PAGE_MIN		4096
#define DISK_PAGE_MAX		(1024 * 1024)
#define DISK_MAX_RANGES		64	/* valid or hole ranges kept per page */
#define DISK_MAX_PENDING	1024	/* queued operations, each queue (a
					 * store's or load's page buffer is
					 * the caller's: buf_get) */

/* Identity of one stored page: upstream handle and page index. */
struct disk_key {
	uint8_t fh_len;			/* 1..DISK_FH_MAX */
	uint8_t fh[DISK_FH_MAX];
	uint64_t page;			/* page index: offset / page_size */
};

/* The attributes that identify a file version (RFC 1813 fattr3). */
struct disk_attr {
	uint64_t size;
	uint64_t fileid;
	uint32_t mtime_sec, mtime_nsec;
	uint32_t ctime_sec, ctime_nsec;
};

/* A byte range inside a page: [off, off + len), off + len <= page_size. */
struct disk_range {
	uint32_t off;
	uint32_t len;
};

/*
 * A page as stored or loaded. data is page_size bytes; only the valid
 * ranges of it mean anything (a load zeroes the rest). holes are ranges
 * known to read as zeros (they hold no stored bytes). A store of a page
 * with no valid range (all hole) may give data NULL: it writes no data
 * bytes (its record still takes a slot); a load always gives data.
 */
struct disk_page {
	struct disk_attr attr;
	uint32_t nvalid;
	uint32_t nholes;
	struct disk_range valid[DISK_MAX_RANGES];
	struct disk_range holes[DISK_MAX_RANGES];
	uint8_t *data;
};

/* The outcome of a load; also the metric label. */
#define DISK_RESULTS(X) \
	X(DISK_HIT, "hit") \
	X(DISK_MISS, "miss") \
	X(DISK_CORRUPT, "corrupt") \
	X(DISK_OFF, "off")

enum disk_result {
#define X(e, s) e,
	DISK_RESULTS(X)
#undef X
	DISK_NRESULTS
};

/* Lower-case label of a result ("hit", ...). */
const char *disk_result_name(enum disk_result r);

/* Which operation an injected fault hits (disk_fault_inject). */
enum disk_fault_op {
	DISK_FAULT_WRITE,		/* the data write of a store */
	DISK_FAULT_READ,		/* the data read of a load */
	DISK_FAULT_SYNC,		/* the data fsync of a store */
	DISK_FAULT_JOURNAL		/* the commit of a journal batch */
};

/*
 * Called once when the tier turns OFF, from disk_poll: reason is a line
 * such as "slab write: No space left on device", borrowed for the call.
 */
typedef void disk_log_fn(void *arg, const char *reason);

/*
 * The buffers of page_size bytes that queued stores copy their page into
 * and loads read into (disk_params buf_get, buf_put): get returns one
 * (contents undefined) or NULL (the store is dropped and counted, the
 * load completes at once as DISK_OFF); put takes it back. Both are called
 * only on the caller's thread: get from disk_store and disk_load, put from
 * disk_poll (disk_close included), never from a worker. A buffer is the
 * operation's from get to put: the caller never touches it meanwhile, and
 * only the worker running the operation does.
 */
typedef void *disk_buf_get_fn(void *arg);
typedef void disk_buf_put_fn(void *arg, void *buf);

/* What disk_open needs. */
struct disk_params {
	const char *dir;		/* cache directory; created if missing */
	uint32_t page_size;		/* power of two, DISK_PAGE_MIN..MAX */
	uint64_t budget_bytes;		/* >= page_size; slots = budget / page */
	bool durable;			/* fdatasync data + synced commits */
	uint64_t journal_max;		/* bytes of journal records the
					 * index must have room for (its
					 * map grows by twice this); 0:
					 * the journal is not used */
	disk_log_fn *log;		/* may be NULL */
	void *log_arg;
	disk_buf_get_fn *buf_get;	/* NULL (with buf_put): malloc */
	disk_buf_put_fn *buf_put;
	void *buf_arg;
};

/*
 * Counters and gauges this module owns (disk_stats_get), with help text,
 * declared once: X(field, metric name suffix, type, help).
 */
#define DISK_COUNTERS(X) \
	X(hits, "disk_hits_total", counter, "Pages loaded from the disk tier") \
	X(hit_bytes, "disk_hit_bytes_total", counter, \
	  "Valid bytes in pages loaded from the disk tier") \
	X(misses, "disk_misses_total", counter, \
	  "Loads that found no page on disk") \
	X(stores, "disk_stores_total", counter, "Pages written to disk") \
	X(store_bytes, "disk_store_bytes_total", counter, \
	  "Valid bytes in pages written to disk") \
	X(stores_dropped, "disk_stores_dropped_total", counter, \
	  "Stores not done: queue full, tier off or no slot") \
	X(culls, "disk_culls_total", counter, \
	  "Pages removed from disk to stay within the budget") \
	X(checksum_failures, "disk_checksum_failures_total", counter, \
	  "Pages dropped because their record or their bytes failed a " \
	  "checksum, at load or at the start's scan (never served)") \
	X(format_resets, "disk_format_resets_total", counter, \
	  "Starts that found the store in another format or page size " \
	  "and emptied its pages (the journal is kept)") \
	X(errors, "disk_errors_total", counter, \
	  "Disk errors that turned the tier off (a damaged index at the " \
	  "start included)") \
	X(drops, "disk_drops_total", counter, \
	  "Pages dropped because their file changed")

/* Upper bounds of the I/O latency histogram buckets, in microseconds. */
#define DISK_LAT_BUCKETS_US \
	{ 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 1000000 }
#define DISK_LAT_NBUCKETS	11

/* A snapshot of the counters and gauges (disk_stats_get). */
struct disk_stats {
#define X(f, n, t, h) uint64_t f;
	DISK_COUNTERS(X)
#undef X
	uint64_t bytes_held;		/* slots in use * page_size */
	uint64_t budget_bytes;		/* slots * page_size */
	uint64_t pages_held;
	uint64_t journal_records;	/* journal records held */
	uint64_t journal_bytes;		/* their bytes (values) */
	uint64_t outage_records;	/* outage records held */
	uint64_t outage_dropped;	/* outage puts not kept: queue full,
					 * tier off, or DISK_OUTAGE_MAX */
	uint64_t outage_failures;	/* outage records that failed their
					 * checksum at a scan (deleted) */
	uint64_t store_bufs;		/* stores holding a buffer: queued or
					 * running, their completion not yet
					 * polled */
	uint64_t load_bufs;		/* loads holding a buffer, the same */
	uint64_t journal_queued_bytes;	/* journal records copied by
					 * disk_journal_put, not yet freed by
					 * disk_poll (not the caller's
					 * buffers: malloc'd) */
	bool on;
	/* Per-operation latency (queue wait excluded), cumulative buckets. */
	uint64_t lat_bucket[DISK_LAT_NBUCKETS];	/* count <= bound */
	uint64_t lat_count;
	uint64_t lat_sum_us;
};

/*
 * Open (creating if needed) the store in p->dir and start its threads.
 * What was stored before is found again; a store written with another
 * page_size is emptied; records beyond a smaller budget are dropped.
 * Runs synchronously (before serving). p->dir is checked first with
 * disk_dir_check (disk_dir.h: the configuration's check too), then
 * created (0700) if missing. Returns the store, or NULL with
 * errno set and a reason ("cache_dir /x: Not a directory") written to
 * err (errlen bytes, may be NULL): EINVAL bad parameters, ENOTDIR,
 * EACCES, EROFS..., EBUSY when another process has p->dir open (flock(2)
 * on its slab), or an LMDB failure as EIO.
 */
struct disk *disk_open(const struct disk_params *p, char *err, size_t errlen);

/*
 * Stop the threads (operations still queued complete as DISK_OFF at the
 * next disk_poll, which disk_close runs once), sync and close. *dp is
 * set to NULL. NULL is fine.
 */
void disk_close(struct disk **dp);

/* The eventfd that becomes readable when completions wait for disk_poll. */
int disk_fd(const struct disk *d);

/* Run the callbacks of completed operations (on this thread). */
void disk_poll(struct disk *d);

/* True while the tier is ON. */
bool disk_on(const struct disk *d);

/*
 * The journal records (commit = "local") of an index that disk_open found
 * damaged and kept as it is, unread: > 0 their number, -1 if the journal
 * itself could not be read, 0 if none (or the index opened). Any thread.
 */
long disk_journal_unread(const struct disk *d);

/*
 * Store a page asynchronously, replacing any page under the same key.
 * The page is copied now into a buffer of disk_params' buf_get, held
 * until the store's completion is polled (only its valid ranges, the
 * gaps between them zeroed; at most DISK_MAX_RANGES valid and hole
 * ranges are kept, the first ones: a subset of the valid bytes is still
 * valid); a page that is all hole takes no buffer. Never blocks and
 * never fails to the caller: a store that cannot be queued (no buffer,
 * queue full, tier off) is counted as dropped. Culling to the budget
 * happens on the writer thread, a bounded number of pages per store.
 * The thread that calls disk_poll.
 */
void disk_store(struct disk *d, const struct disk_key *k,
		const struct disk_page *pg);

/*
 * A load's callback: r is the result; pg (valid only for DISK_HIT) and
 * its data are borrowed for the duration of the call.
 */
typedef void disk_load_cb(void *arg, enum disk_result r,
			  const struct disk_page *pg);

/*
 * Load a page asynchronously. cb is called exactly once, from disk_poll:
 * DISK_HIT with the page, DISK_MISS (absent), DISK_CORRUPT (checksum or
 * length did not match: counted, dropped; the caller fetches it again),
 * DISK_OFF (tier off, or the queue was full); only when memory for the
 * operation cannot be allocated (or buf_get gives no buffer) is cb called
 * at once, with DISK_OFF. The thread that calls disk_poll. A key
 * with fh_len 0 or over DISK_FH_MAX is a DISK_MISS. There is no cancel: a caller
 * whose object died must keep arg valid or make it a handle it checks.
 */
void disk_load(struct disk *d, const struct disk_key *k,
	       disk_load_cb *cb, void *arg);

/*
 * True when a page under k is believed stored (a committed record, from
 * an in-memory set of key hashes rebuilt at open): a hint that a load is
 * worth its round trip, never a promise (the load may still miss, or find
 * the page corrupt). False while OFF. Never touches the disk; any thread.
 * Memory: about 64 bytes per stored page.
 */
bool disk_has(struct disk *d, const struct disk_key *k);

/*
 * Drop every page of the file fh (fh_len bytes) asynchronously: the
 * caller found the file changed (its fresh attributes differ from those a
 * loaded page recorded). Pages stored after this call are kept.
 */
void disk_drop_file(struct disk *d, const uint8_t *fh, uint8_t fh_len);

/*
 * Drop every page of every file asynchronously (`nfscached cache drop`),
 * in batches of DISK_DROP_BATCH per transaction; the journal of
 * commit = "local" is not touched. Pages stored after this call are kept.
 */
void disk_drop_all(struct disk *d);

/*
 * Wait (blocking poll(2) on disk_fd, no timeout) until every operation
 * submitted so far has completed and its callback ran. For tests and
 * shutdown only; never from a serving event loop.
 */
void disk_drain(struct disk *d);

/* Fill *st with the counters and gauges. Any thread. */
void disk_stats_get(const struct disk *d, struct disk_stats *st);

/*
 * Test gate: while closed, the worker threads hold each operation before
 * touching the disk. disk_gate_waiting tells how many are held now.
 */
void disk_gate_close(struct disk *d);
void disk_gate_open(struct disk *d);
unsigned disk_gate_waiting(struct disk *d);

/* Test hook: make the next operation of kind op fail with error err. */
void disk_fault_inject(struct disk *d, enum disk_fault_op op, int err);

/* What the store just did, or is about to do, to its files (disk_io_hook). */
enum disk_io_event {
	DISK_IO_SLAB_WRITE,	/* about to pwrite slab bytes [off, off+len) */
	DISK_IO_SLAB_SYNC,	/* an fdatasync of the slab returned 0 */
	DISK_IO_INDEX_COMMIT	/* an LMDB write transaction committed */
};

/*
 * Called on the writer thread, synchronously, at each event: off and len
 * are bytes of the slab for DISK_IO_SLAB_WRITE, 0 otherwise. The store's
 * files may be read (not written) from the hook; it must not call back
 * into the store except disk_stats_get.
 */
typedef void disk_io_hook_fn(void *arg, enum disk_io_event ev, uint64_t off,
			     size_t len);

/*
 * Test hook (power-loss simulation, docs/disk-tier.md): call fn(arg, ...)
 * at every slab write, slab fdatasync and index commit from now on; fn
 * NULL removes it. Events of disk_open and disk_close are not reported.
 * Set it only while nothing is in flight (after disk_open or disk_drain).
 */
void disk_io_hook(struct disk *d, disk_io_hook_fn *fn, void *arg);

/*
 * The journal (issue 18, docs/disk-tier.md "Local commit"): records the
 * caller gives as opaque bytes, keyed like pages, kept in their own LMDB
 * database ("journal") of the same environment. They are never culled,
 * never dropped by disk_drop_file or a page_size change, and are found
 * again by disk_journal_scan after a restart or a crash. A page may hold
 * several records, told apart by the caller's sequence number. Puts,
 * dels and syncs run on the writer thread in the order submitted (a put
 * after a del of the same page wins); the ones queued together share one
 * transaction, whose commit (durable mode: synced, RFC 1813's "stable
 * storage") is what disk_journal_sync waits for. They are never refused
 * for a full queue (a lost del could leave an older record to be
 * replayed); they are refused only while the tier is OFF. A failed
 * commit turns the tier OFF like any disk error: the records already
 * committed stay as they are.
 */
#define DISK_JOURNAL_MAX	(DISK_PAGE_MAX + 64 * 1024)	/* bytes */

/*
 * Queue a put of record rec[0..len) (copied now) as record seq of k's
 * page, replacing a record under the same (k, seq); with replace, every
 * other record of k's page goes in the same transaction (one step: a
 * crash leaves either the old records or the new one). A page's records
 * are found by disk_journal_scan in ascending seq. 0, or -1 with errno:
 * EINVAL (len 0 or over DISK_JOURNAL_MAX, fh_len 0 or over DISK_FH_MAX),
 * ENOMEM, EIO (tier OFF). Durable only once a later disk_journal_sync
 * says so.
 */
int disk_journal_put(struct disk *d, const struct disk_key *k, uint64_t seq,
		     bool replace, const void *rec, size_t len);

/* Queue a delete of every record of k's page (none is fine). 0, or -1
 * with errno as disk_journal_put. */
int disk_journal_del(struct disk *d, const struct disk_key *k);

/* A sync's callback: durable is true when every journal put and del
 * submitted before the sync is committed; false when the tier turned
 * OFF first (some of them may be lost). */
typedef void disk_journal_cb(void *arg, bool durable);

/*
 * Call cb(arg, durable) once, from disk_poll, after every journal put and
 * del submitted before this call has been committed (durable true) or
 * could not be (false). 0, or -1 with errno ENOMEM or EIO (tier OFF):
 * cb is then never called. A tier that turns OFF while the sync is being
 * queued gives 0 and cb(arg, false).
 */
int disk_journal_sync(struct disk *d, disk_journal_cb *cb, void *arg);

/* One journal record found by disk_journal_scan (its page k and seq):
 * borrowed for the call. Return 0 to go on, non-zero to stop the scan
 * with that value. */
typedef int disk_journal_fn(void *arg, const struct disk_key *k, uint64_t seq,
			    const void *rec, size_t len);

/*
 * Call fn for every journal record, in key order (by file handle, page,
 * then seq), on this thread
 * (synchronously: at start, before serving, while nothing is in flight).
 * Each record is an aligned copy (malloc alignment), valid for the call.
 * Returns the number of records seen, fn's non-zero value when it
 * stopped the scan, or -1 (errno EIO when the index cannot be read,
 * ENOMEM).
 */
long disk_journal_scan(struct disk *d, disk_journal_fn *fn, void *arg);

/*
 * A small named value in the meta database (name: up to 32 bytes; not
 * "format"), read or written synchronously (at start or stop, not from
 * a serving loop: a put waits for the writer's transaction). get copies
 * up to len bytes into buf and returns the value's length, 0 when absent,
 * -1 (errno EIO) on an index error; put returns 0 or -1 (errno EINVAL,
 * EIO; EIO also while the tier is OFF) once the value is committed.
 */
long disk_meta_get(struct disk *d, const char *name, void *buf, size_t len);
int disk_meta_put(struct disk *d, const char *name, const void *val,
		  size_t len);

/*
 * The outage records (docs/disk-tier.md "Outage records"): small values
 * the caller keeps so it can answer while its upstream is away after a
 * restart (attributes, names, FSINFO results...), opaque here, under the
 * caller's keys, in their own LMDB database ("outage") of the same
 * environment. Each is stored with the caller's 64-bit stamp and a
 * checksum over the whole value, the stamp and its length, seeded with
 * the XXH3 of its key: a damaged record, or one copied under another
 * key, is never handed back. Bounded: at most DISK_OUTAGE_MAX records; a
 * put of a new key beyond that is dropped (an existing key is still
 * replaced). Not culled, not dropped by disk_drop_file, a page_size
 * change or disk_drop_all: a record describes a file, not its bytes, and
 * the caller replaces it when it learns something newer;
 * disk_outage_drop_all removes them all.
 */
#define DISK_OUTAGE_MAX		65536	/* records */
#define DISK_OUTAGE_KEY_MAX	400	/* bytes (LMDB keys: <= 511) */
#define DISK_OUTAGE_VAL_MAX	1024	/* bytes */

/*
 * Queue a put of val[0..vlen) with stamp under key[0..klen) (both copied
 * now), replacing the record under the same key. Never blocks. Puts
 * queued together share one transaction (and one sync). 0, or -1 with
 * errno: EINVAL (klen or vlen 0 or over their maximum), ENOMEM, EIO
 * (tier off, or the writer's queue is full: counted in outage_dropped).
 * Any thread that may submit.
 */
int disk_outage_put(struct disk *d, const void *key, size_t klen,
		    const void *val, size_t vlen, uint64_t stamp);

/*
 * Queue the removal of every outage record, in order with the puts
 * queued before it (those are removed, later ones kept). Never blocks.
 * 0, or -1 with errno ENOMEM, or EIO (tier off or the writer's queue
 * full: nothing removed). Any thread that may submit.
 */
int disk_outage_drop_all(struct disk *d);

/* One outage record found by disk_outage_scan, borrowed for the call
 * (val is aligned). Return 0 to go on, non-zero to stop with it. */
typedef int disk_outage_fn(void *arg, const uint8_t *key, size_t klen,
			   const void *val, size_t vlen, uint64_t stamp);

/*
 * Call fn for every outage record in key order, on this thread
 * (synchronously: at start, before serving). A record that fails its
 * checksum or is malformed is not handed over: it is deleted and counted
 * in outage_failures. Returns the number of records handed over, fn's
 * non-zero value when it stopped, or -1 (errno EIO, ENOMEM).
 */
long disk_outage_scan(struct disk *d, disk_outage_fn *fn, void *arg);

/*
 * Check the store's invariants: the slot map agrees with the held count,
 * and (while ON) with the index's record count; every record has its lru
 * entry. Only meaningful when nothing is in flight (after disk_drain).
 */
bool disk_check(struct disk *d);

#endif
