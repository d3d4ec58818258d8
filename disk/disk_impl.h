/* SPDX-License-Identifier: MIT */
/*
 * disk internals shared by disk.c (the store: index, slab, records, the
 * operations as the worker threads run them) and disk_io.c (queues,
 * threads, completions, the gate). Not for callers of disk.h.
 */
#ifndef NFSCACHED_DISK_DISK_IMPL_H
#define NFSCACHED_DISK_DISK_IMPL_H

#include <pthread.h>
#include <lmdb.h>
#include <uthash.h>

#include "disk.h"

#define DISK_MAGIC		0x4449534bu	/* "DISK" */
#define DISK_NO_SLOT		UINT32_MAX
#define DISK_CULL_BATCH		8	/* pages culled per store, at most */
#define DISK_DROP_BATCH		1024	/* pages dropped per transaction */
#define DISK_STORE_BATCH	32	/* stores sharing one sync and commit */

enum disk_op_kind {
	DISK_OP_LOAD,
	DISK_OP_STORE,
	DISK_OP_DROP_FILE,
	DISK_OP_TOUCH,		/* move a loaded page to the LRU's young end */
	DISK_OP_DROP_IF,	/* drop a corrupt page if it is still the same */
	DISK_OP_OPUT,		/* outage: put a record (disk_outage.c) */
	DISK_OP_JPUT,		/* journal: put a record (disk_journal.c) */
	DISK_OP_JDEL,		/* journal: delete a record */
	DISK_OP_JSYNC		/* journal: report once the above are durable */
};

#define DISK_JOURNAL_BATCH	1024	/* journal ops sharing one commit */
#define DISK_OUTAGE_BATCH	256	/* outage puts sharing one commit */
#define DISK_BATCH_MAX		DISK_JOURNAL_BATCH	/* >= DISK_STORE_BATCH */

/* True for the journal's operations (never refused for a full queue:
 * a lost put or del could leave an older record to be replayed). */
#define DISK_OP_IS_JOURNAL(k) ((k) >= DISK_OP_JPUT)

/* One entry of the presence set: a key's hash and how many keys have it. */
struct disk_present {
	uint64_t h;
	uint32_t n;
	UT_hash_handle hh;
};

/* One queued operation; owned by the queue, then the done list. */
struct disk_op {
	enum disk_op_kind kind;
	enum disk_result result;
	struct disk_key key;
	struct disk_page pg;		/* store: the copy; load: the result */
	disk_load_cb *cb;
	disk_journal_cb *jcb;		/* JSYNC */
	bool jreplace;			/* JPUT: drop the page's others */
	void *arg;
	uint32_t slot;			/* DROP_IF, TOUCH: the record seen */
	uint64_t checksum;
	uint64_t seq;
	uint32_t data_len;		/* store: bytes to write; OPUT: the
					 * value's (key: key_len first) */
	uint32_t key_len;		/* OPUT: bytes of key at data */
	uint64_t valid_bytes;		/* store: bytes in valid ranges */
	bool lent;			/* pg.data is from buf_get: given
					 * back with buf_put by disk_poll */
	struct disk_op *next;
};

/* A FIFO of operations. */
struct disk_queue {
	struct disk_op *head, *tail;
	unsigned len;
};

/* The stored form of a record's fixed part; ranges follow it. */
struct disk_rec {
	uint32_t magic;
	uint32_t slot;
	uint32_t data_len;		/* bytes stored from the slot's start */
	uint16_t nvalid, nholes;
	uint64_t checksum;		/* XXH3-64 of the data, key as seed */
	uint64_t seq;			/* LRU sequence, the lru DB's key */
	struct disk_attr attr;
	uint64_t rec_sum;		/* XXH3-64 of the whole value (this
					 * field 0: the fields above, the
					 * ranges that follow), the record's
					 * own key as seed */
};

struct disk {
	uint32_t magic;
	char *dir;
	uint32_t page_size;
	bool durable;
	disk_log_fn *log;
	void *log_arg;
	/* Page buffers of stores and loads (disk.h disk_buf_get_fn): called
	 * on the caller's thread only; the counts of those out, atomic (the
	 * caller changes them, disk_stats_get reads them on any thread). */
	disk_buf_get_fn *buf_get;
	disk_buf_put_fn *buf_put;
	void *buf_arg;
	uint64_t store_bufs, load_bufs;
	uint64_t journal_queued;	/* bytes of journal records copied by
					 * disk_journal_put and not yet freed
					 * by disk_poll (malloc'd; atomic) */

	long journal_unread;		/* records of a journal in an index
					 * the start could not open and
					 * kept: > 0, -1 unknown, 0 none */
	MDB_env *env;
	MDB_dbi dbi_pages, dbi_lru, dbi_meta, dbi_journal;
	MDB_dbi dbi_outage;		/* disk_outage.c's records */
	uint64_t journal_max;		/* journal bytes the map is sized for */
	unsigned idx_psize;		/* index.mdb's page size */
	MDB_txn *rtxn;			/* the reader's, reset between loads */
	int slab_fd;
	int efd;

	/* Slot map; slot_mu also orders the reader's pin against frees. */
	pthread_mutex_t slot_mu;
	uint32_t nslots;
	uint8_t *slot_used;		/* one byte per slot: 0 free, 1 used */
	uint32_t nfree;
	uint32_t free_hint;
	uint32_t pinned;		/* slot the reader is reading */
	bool pinned_freed;		/* free it when unpinned */
	uint64_t seq;			/* last LRU sequence given out */

	/* Keys with a committed record, by hash (disk_has); under pres_mu. */
	pthread_mutex_t pres_mu;
	struct disk_present *present;

	/* Queues, completions, the gate, shutdown: under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_gate;
	struct disk_queue rq, wq, done;
	struct disk_queue jq;		/* journal ops: the writer takes
					 * them before wq's */
	unsigned inflight;
	bool stopping;
	bool gate_closed;
	unsigned gate_waiting;
	int fault[4];			/* by enum disk_fault_op */
	disk_io_hook_fn *io_hook;	/* test hook: set while idle */
	void *io_hook_arg;
	char off_reason[2048];
	bool off_logged;
	pthread_t reader, writer;
	bool threads_started;

	bool on;			/* atomic access */
	uint64_t pages_held;		/* atomic access */
	struct disk_stats st;		/* counters: atomic access */
};

/* Add n to a counter (any thread). */
#define DISK_COUNT(d, f, n) \
	__atomic_fetch_add(&(d)->st.f, (uint64_t)(n), __ATOMIC_RELAXED)

/* disk.c: run one operation on a worker thread. */
void disk_run_load(struct disk *d, struct disk_op *op);
void disk_run_stores(struct disk *d, struct disk_op **ops, unsigned n);
void disk_run_drop_file(struct disk *d, struct disk_op *op);
void disk_run_touch(struct disk *d, struct disk_op *op);
void disk_run_drop_if(struct disk *d, struct disk_op *op);
/* disk_journal.c: run n journal operations in one transaction. */
void disk_run_journal(struct disk *d, struct disk_op **ops, unsigned n);
/* disk_journal.c: count the journal's records and bytes at open. */
int disk_journal_count(struct disk *d, MDB_txn *txn);
/* disk_outage.c: run n outage puts in one transaction. */
void disk_run_outage(struct disk *d, struct disk_op **ops, unsigned n);
/* disk_outage.c: count the outage records at open. */
int disk_outage_count(struct disk *d, MDB_txn *txn);


#define DISK_REC_MAGIC		0x52504432u	/* "RPD2" */

/*
 * disk.c: decode the record value v stored under the pages key k into
 * rec and, when pg is not NULL, its ranges and attributes. 0; -1 when it
 * is malformed or names a slot at or past nslots; -2 when its rec_sum
 * does not match (a changed field, range, attribute or key).
 */
int disk_rec_decode(const MDB_val *k, const MDB_val *v, uint32_t page_size,
		    uint32_t nslots, struct disk_rec *rec,
		    struct disk_page *pg);

/* disk.c: set rec_sum in the encoded record value buf[0..len) (rec_sum
 * 0 on entry) for the pages key kb[0..klen). */
void disk_rec_seal(const void *kb, size_t klen, uint8_t *buf, size_t len);

/* An encoded pages-DB (or journal) key: length, handle, page index
 * big-endian. */
struct disk_kbuf {
	uint8_t b[1 + DISK_FH_MAX + 8];
	size_t len;
};

/* disk.c: encode key k (the file prefix alone when with_page is false). */
void disk_key_encode(const struct disk_key *k, bool with_page,
		     struct disk_kbuf *out);

/* disk.c: the presence hash of an encoded pages key. */
uint64_t disk_key_hash(const void *kb, size_t len);
/* disk.c: add (+1) or remove (-1) the key hash h in the presence set. */
void disk_present_adjust(struct disk *d, uint64_t h, int delta);
/* disk.c: empty the presence set. */
void disk_present_clear(struct disk *d);

/* disk.c: open and close the index and slab (no threads). */
int disk_store_open(struct disk *d, char *err, size_t errlen);
void disk_store_close(struct disk *d);

/* disk_io.c: turn the tier off for reason what: strerror(err). */
void disk_degrade(struct disk *d, const char *what, int err);
/* disk_io.c: turn the tier off for the reason line msg (the dir and
 * "disk tier off: " are not added). */
void disk_degrade_msg(struct disk *d, const char *msg);
/*
 * disk_index.c: true when index.mdb still holds every page its newest
 * meta page names (a file truncated under the map would raise SIGBUS at
 * the next read); otherwise a reason in why. Any worker thread.
 */
bool disk_index_intact(struct disk *d, char *why, size_t len);
/* disk_io.c: the error injected for op (0 if none), consumed. */
int disk_fault_take(struct disk *d, enum disk_fault_op op);
/* disk_io.c: report an event to the test's I/O hook, if one is set. */
void disk_io_event(struct disk *d, enum disk_io_event ev, uint64_t off,
		   size_t len);
/* disk_io.c: queue a journal operation for the writer: 0, or -1 (EIO)
 * when refused (the op then completes as DISK_OFF at the next poll). */
int disk_submit_journal(struct disk *d, struct disk_op *op);
/* disk_io.c: queue an outage put for the writer: false when dropped
 * (it then completes as DISK_OFF at the next poll). */
bool disk_submit_outage(struct disk *d, struct disk_op *op);
/* disk_io.c: queue an internal operation for the writer (reader side). */
void disk_submit_internal(struct disk *d, struct disk_op *op);
/* disk_io.c: record one operation's latency, microseconds. */
void disk_lat_record(struct disk *d, uint64_t us);

#endif
