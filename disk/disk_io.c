/* SPDX-License-Identifier: MIT */
/*
 * disk I/O: the two worker threads, their queues, the completion list and
 * its eventfd, the test gate, fault and I/O hooks, and the OFF transition.
 *
 * An operation is owned by exactly one place at a time: the reader queue
 * (loads), the journal queue (journal ops, which the writer takes first),
 * the writer queue (everything else), a worker while it runs, or
 * the done list until disk_poll runs its callback and frees it. inflight
 * counts operations not yet freed, so disk_drain knows when all are done.
 * Submitting takes only mu, never slot_mu or an LMDB lock, so a stalled
 * disk cannot stall the submitter. A store's or load's page buffer
 * (lent: buf_get) goes with its operation: taken on the submitting
 * thread before the op is queued, given back by disk_poll after its
 * callback, so the caller's allocator is only ever called on its own
 * thread; store_bufs and load_bufs count those out.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkobj.h"
#include "disk_impl.h"

static const char *const result_names[] = {
#define X(e, s) s,
	DISK_RESULTS(X)
#undef X
};

/* Lower-case label of a result. */
const char *
disk_result_name(enum disk_result r)
{
	return (unsigned)r < DISK_NRESULTS ? result_names[r] : "?";
}

/* Append op to q. */
static void
queue_push(struct disk_queue *q, struct disk_op *op)
{
	op->next = NULL;
	if (q->tail)
		q->tail->next = op;
	else
		q->head = op;
	q->tail = op;
	q->len++;
}

/* Take q's first op, or NULL. */
static struct disk_op *
queue_pop(struct disk_queue *q)
{
	struct disk_op *op = q->head;

	if (op) {
		q->head = op->next;
		if (!q->head)
			q->tail = NULL;
		q->len--;
	}
	return op;
}

/* Signal the eventfd. */
static void
efd_kick(struct disk *d)
{
	uint64_t one = 1;
	ssize_t w = write(d->efd, &one, sizeof(one));

	(void)w;	/* EAGAIN: the counter is already non-zero */
}

/* Move op to the done list (mu held) and wake the poller. */
static void
complete_locked(struct disk *d, struct disk_op *op)
{
	queue_push(&d->done, op);
	efd_kick(d);
}

/* Turn the tier off (once), counting the error and keeping the reason. */
void
disk_degrade(struct disk *d, const char *what, int err)
{
	bool was = true;

	if (!__atomic_compare_exchange_n(&d->on, &was, false, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	DISK_COUNT(d, errors, 1);
	pthread_mutex_lock(&d->mu);
	snprintf(d->off_reason, sizeof(d->off_reason),
		 "disk tier off: %s: %s: %s", d->dir, what,
		 err > 0 ? strerror(err) : mdb_strerror(err));
	efd_kick(d);
	pthread_mutex_unlock(&d->mu);
}

/* Turn the tier off (once) for the reason line msg. */
void
disk_degrade_msg(struct disk *d, const char *msg)
{
	bool was = true;

	if (!__atomic_compare_exchange_n(&d->on, &was, false, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	DISK_COUNT(d, errors, 1);
	pthread_mutex_lock(&d->mu);
	snprintf(d->off_reason, sizeof(d->off_reason), "%s", msg);
	if (d->efd >= 0)
		efd_kick(d);
	pthread_mutex_unlock(&d->mu);
}

/* The injected error for op (0 if none), consumed. */
int
disk_fault_take(struct disk *d, enum disk_fault_op op)
{
	int e;

	pthread_mutex_lock(&d->mu);
	e = d->fault[op];
	d->fault[op] = 0;
	pthread_mutex_unlock(&d->mu);
	return e;
}

/* Make the next operation of kind op fail with err (test hook). */
void
disk_fault_inject(struct disk *d, enum disk_fault_op op, int err)
{
	pthread_mutex_lock(&d->mu);
	d->fault[op] = err;
	pthread_mutex_unlock(&d->mu);
}

/* Set the test's I/O hook (disk.h). */
void
disk_io_hook(struct disk *d, disk_io_hook_fn *fn, void *arg)
{
	pthread_mutex_lock(&d->mu);
	d->io_hook = fn;
	d->io_hook_arg = arg;
	pthread_mutex_unlock(&d->mu);
}

/* Report ev to the I/O hook (writer thread; set while idle, so no lock). */
void
disk_io_event(struct disk *d, enum disk_io_event ev, uint64_t off,
	      size_t len)
{
	if (d->io_hook)
		d->io_hook(d->io_hook_arg, ev, off, len);
}

/* Record one operation's latency in the histogram. */
void
disk_lat_record(struct disk *d, uint64_t us)
{
	static const uint64_t bound[DISK_LAT_NBUCKETS] = DISK_LAT_BUCKETS_US;

	for (int i = 0; i < DISK_LAT_NBUCKETS; i++)
		if (us <= bound[i])
			DISK_COUNT(d, lat_bucket[i], 1);
	DISK_COUNT(d, lat_count, 1);
	DISK_COUNT(d, lat_sum_us, us);
}

/* Microseconds of the monotonic clock. */
static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Run ops[0..n) on this worker thread: n stores as one batch, or one
 * other operation. */
static void
run_ops(struct disk *d, struct disk_op **ops, unsigned n)
{
	uint64_t t0 = now_us();
	struct disk_op *op = ops[0];

	switch (op->kind) {
	case DISK_OP_LOAD:	disk_run_load(d, op); break;
	case DISK_OP_STORE:	disk_run_stores(d, ops, n); break;
	case DISK_OP_DROP_FILE:	disk_run_drop_file(d, op); break;
	case DISK_OP_TOUCH:	disk_run_touch(d, op); break;
	case DISK_OP_DROP_IF:	disk_run_drop_if(d, op); break;
	case DISK_OP_OPUT:	disk_run_outage(d, ops, n); break;
	case DISK_OP_JPUT:
	case DISK_OP_JDEL:
	case DISK_OP_JSYNC:	disk_run_journal(d, ops, n); break;
	}
	disk_lat_record(d, now_us() - t0);
}

/*
 * Before a worker touches the index's map: true when it may. A file
 * truncated under the map (found by its size against the newest meta
 * page) turns the tier off instead of a SIGBUS at the next read.
 */
static bool
index_check(struct disk *d)
{
	char why[600], msg[700];

	if (!disk_on(d) || disk_index_intact(d, why, sizeof(why)))
		return true;
	snprintf(msg, sizeof(msg), "disk tier off: %s", why);
	disk_degrade_msg(d, msg);
	return false;
}

/* Take q's next op, and the stores queued right behind a store, the
 * outage puts right behind an outage put, or the journal ops right
 * behind a journal op (mu held). */
static unsigned
take_ops(struct disk_queue *q, struct disk_op **ops)
{
	unsigned n = 0;

	ops[n++] = queue_pop(q);
	while (ops[0]->kind == DISK_OP_STORE && n < DISK_STORE_BATCH &&
	       q->head && q->head->kind == DISK_OP_STORE)
		ops[n++] = queue_pop(q);
	while (ops[0]->kind == DISK_OP_OPUT && n < DISK_OUTAGE_BATCH &&
	       q->head && q->head->kind == DISK_OP_OPUT)
		ops[n++] = queue_pop(q);
	while (DISK_OP_IS_JOURNAL(ops[0]->kind) && n < DISK_JOURNAL_BATCH &&
	       q->head && DISK_OP_IS_JOURNAL(q->head->kind))
		ops[n++] = queue_pop(q);
	return n;
}

/* A worker: take ops from first (when not NULL and not empty: a COMMIT
 * waiting on the journal does not wait behind page stores) or q, hold
 * them at the gate, run, complete. */
static void *
worker(struct disk *d, struct disk_queue *first, struct disk_queue *q)
{
	struct disk_op *ops[DISK_BATCH_MAX];

	pthread_mutex_lock(&d->mu);
	for (;;) {
		unsigned n;
		bool stopping;

		while (!d->stopping && !q->head && !(first && first->head))
			pthread_cond_wait(&d->cv_work, &d->mu);
		if (d->stopping)
			break;
		n = take_ops(first && first->head ? first : q, ops);
		while (d->gate_closed && !d->stopping) {
			d->gate_waiting++;
			pthread_cond_broadcast(&d->cv_gate);
			pthread_cond_wait(&d->cv_gate, &d->mu);
			d->gate_waiting--;
		}
		stopping = d->stopping;	/* read under mu: disk_close sets it */
		pthread_mutex_unlock(&d->mu);
		for (unsigned i = 0; i < n; i++)
			ops[i]->result = DISK_OFF;
		if (!stopping && index_check(d))
			run_ops(d, ops, n);
		pthread_mutex_lock(&d->mu);
		for (unsigned i = 0; i < n; i++)
			complete_locked(d, ops[i]);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* The reader thread's body. */
static void *
reader_main(void *arg)
{
	struct disk *d = arg;

	return worker(d, NULL, &d->rq);
}

/* The writer thread's body. */
static void *
writer_main(void *arg)
{
	struct disk *d = arg;

	return worker(d, &d->jq, &d->wq);
}

/*
 * Queue op on q, or complete it at once as DISK_OFF when the tier is off,
 * stopping or the queue is full (then *dropped is set).
 */
static void
submit(struct disk *d, struct disk_queue *q, struct disk_op *op, bool *dropped)
{
	pthread_mutex_lock(&d->mu);
	d->inflight++;
	*dropped = !__atomic_load_n(&d->on, __ATOMIC_RELAXED) || d->stopping ||
		   (q->len >= DISK_MAX_PENDING && !DISK_OP_IS_JOURNAL(op->kind));
	if (*dropped) {
		op->result = DISK_OFF;
		complete_locked(d, op);
	} else {
		queue_push(q, op);
		pthread_cond_broadcast(&d->cv_work);
	}
	pthread_mutex_unlock(&d->mu);
}

/* Queue an internal op for the writer (from the reader thread). */
void
disk_submit_internal(struct disk *d, struct disk_op *op)
{
	bool dropped;

	submit(d, &d->wq, op, &dropped);
}

/* Queue a journal op for the writer (disk_journal.c): 0, or -1 (EIO)
 * when it could not be queued (it then completes as DISK_OFF). */
int
disk_submit_journal(struct disk *d, struct disk_op *op)
{
	bool dropped;

	submit(d, &d->jq, op, &dropped);
	if (dropped)
		errno = EIO;
	return dropped ? -1 : 0;
}

/* Queue an outage put for the writer (disk_outage.c): false when it
 * was dropped (queue full, tier off). */
bool
disk_submit_outage(struct disk *d, struct disk_op *op)
{
	bool dropped;

	submit(d, &d->wq, op, &dropped);
	return !dropped;
}

/* A page buffer for a store or a load (disk.h disk_buf_get_fn), counted
 * in store_bufs or load_bufs; NULL when none. The caller's thread. */
static uint8_t *
buf_take(struct disk *d, enum disk_op_kind kind)
{
	uint8_t *b = d->buf_get ? d->buf_get(d->buf_arg)
				: malloc(d->page_size);

	if (b)
		__atomic_fetch_add(kind == DISK_OP_STORE ? &d->store_bufs
							  : &d->load_bufs,
				   1, __ATOMIC_RELAXED);
	return b;
}

/* Free op and its data (a lent buffer given back: the caller's thread,
 * from disk_poll). */
static void
op_free(struct disk *d, struct disk_op *op)
{
	if (op->lent) {
		__atomic_fetch_sub(op->kind == DISK_OP_STORE ? &d->store_bufs
							      : &d->load_bufs,
				   1, __ATOMIC_RELAXED);
		if (d->buf_put)
			d->buf_put(d->buf_arg, op->pg.data);
		else
			free(op->pg.data);
	} else {
		if (op->kind == DISK_OP_JPUT)
			__atomic_fetch_sub(&d->journal_queued,
					   (uint64_t)op->data_len,
					   __ATOMIC_RELAXED);
		free(op->pg.data);
	}
	free(op);
}

/* Run the callbacks of completed operations (disk.h). */
void
disk_poll(struct disk *d)
{
	struct disk_queue done;
	uint64_t v;
	char reason[sizeof(d->off_reason)] = "";
	ssize_t r;

	CHECK_OBJ(d, DISK_MAGIC);
	r = read(d->efd, &v, sizeof(v));

	(void)r;
	pthread_mutex_lock(&d->mu);
	done = d->done;
	d->done = (struct disk_queue){ 0 };
	if (d->off_reason[0] && !d->off_logged) {
		d->off_logged = true;
		memcpy(reason, d->off_reason, sizeof(reason));
	}
	pthread_mutex_unlock(&d->mu);
	if (reason[0] && d->log)
		d->log(d->log_arg, reason);
	for (struct disk_op *op = queue_pop(&done); op; op = queue_pop(&done)) {
		if (op->kind == DISK_OP_LOAD)
			op->cb(op->arg, op->result,
			       op->result == DISK_HIT ? &op->pg : NULL);
		else if (op->kind == DISK_OP_JSYNC && op->jcb)
			op->jcb(op->arg, op->result == DISK_HIT);
		op_free(d, op);
		pthread_mutex_lock(&d->mu);
		d->inflight--;
		pthread_mutex_unlock(&d->mu);
	}
}

/* Wait until nothing is in flight (disk.h; tests and shutdown only). */
void
disk_drain(struct disk *d)
{
	for (;;) {
		struct pollfd pfd = { .fd = d->efd, .events = POLLIN };
		unsigned n;

		disk_poll(d);
		pthread_mutex_lock(&d->mu);
		n = d->inflight;
		pthread_mutex_unlock(&d->mu);
		if (n == 0)
			return;
		poll(&pfd, 1, -1);
	}
}

/* Free d's memory and locks (threads stopped, store closed). */
static void
disk_free(struct disk *d)
{
	disk_present_clear(d);
	pthread_mutex_destroy(&d->pres_mu);
	pthread_mutex_destroy(&d->mu);
	pthread_mutex_destroy(&d->slot_mu);
	pthread_cond_destroy(&d->cv_work);
	pthread_cond_destroy(&d->cv_gate);
	free(d->slot_used);
	free(d->dir);
	d->magic = 0;
	free(d);
}

/* Check p; 0 or EINVAL with err filled. */
static int
params_check(const struct disk_params *p, char *err, size_t errlen)
{
	const char *why = NULL;

	if (!p->dir || !p->dir[0])
		why = "no directory";
	else if (p->page_size < DISK_PAGE_MIN || p->page_size > DISK_PAGE_MAX ||
		 (p->page_size & (p->page_size - 1)))
		why = "page size not a power of two in 4 KiB..1 MiB";
	else if (p->budget_bytes < p->page_size ||
		 p->budget_bytes / p->page_size >= DISK_NO_SLOT)
		why = "budget below one page or above 2^32 pages";
	if (!why)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "cache_dir %s: %s", p->dir ? p->dir : "",
			 why);
	return EINVAL;
}

/* Tell the workers to stop (under mu, which they read stopping under)
 * and wake them wherever they wait. */
static void
threads_stop(struct disk *d)
{
	pthread_mutex_lock(&d->mu);
	d->stopping = true;
	pthread_cond_broadcast(&d->cv_work);
	pthread_cond_broadcast(&d->cv_gate);
	pthread_mutex_unlock(&d->mu);
}

/* Open the store and start its threads (disk.h). */
struct disk *
disk_open(const struct disk_params *p, char *err, size_t errlen)
{
	struct disk *d;
	int e = params_check(p, err, errlen);

	if (e != 0 || !(d = calloc(1, sizeof(*d)))) {
		errno = e ? e : ENOMEM;
		return NULL;
	}
	d->magic = DISK_MAGIC;
	d->page_size = p->page_size;
	d->durable = p->durable;
	d->journal_max = p->journal_max;
	d->log = p->log;
	d->log_arg = p->log_arg;
	d->buf_get = p->buf_get;
	d->buf_put = p->buf_put;
	d->buf_arg = p->buf_arg;
	d->nslots = (uint32_t)(p->budget_bytes / p->page_size);
	d->nfree = d->nslots;
	d->pinned = DISK_NO_SLOT;
	d->on = true;
	pthread_mutex_init(&d->mu, NULL);
	pthread_mutex_init(&d->slot_mu, NULL);
	pthread_mutex_init(&d->pres_mu, NULL);
	pthread_cond_init(&d->cv_work, NULL);
	pthread_cond_init(&d->cv_gate, NULL);
	d->dir = strdup(p->dir);
	d->slot_used = calloc(d->nslots, 1);
	if (!d->dir || !d->slot_used) {
		disk_free(d);
		errno = ENOMEM;
		return NULL;
	}
	if (disk_store_open(d, err, errlen) != 0) {
		e = errno;
		disk_free(d);
		errno = e;
		return NULL;
	}
	if (pthread_create(&d->reader, NULL, reader_main, d) != 0 ||
	    (d->threads_started = true,
	     pthread_create(&d->writer, NULL, writer_main, d) != 0)) {
		snprintf(err, errlen, "cache_dir %s: cannot start threads", p->dir);
		if (d->threads_started) {
			threads_stop(d);
			pthread_join(d->reader, NULL);
		}
		disk_store_close(d);
		disk_free(d);
		errno = EAGAIN;
		return NULL;
	}
	return d;
}

/* Stop the threads, complete what is queued as OFF, close (disk.h). */
void
disk_close(struct disk **dp)
{
	struct disk *d = *dp;
	struct disk_op *op;

	if (!d)
		return;
	*dp = NULL;
	threads_stop(d);
	pthread_join(d->reader, NULL);
	pthread_join(d->writer, NULL);
	pthread_mutex_lock(&d->mu);
	while ((op = queue_pop(&d->rq)) || (op = queue_pop(&d->wq)) ||
	       (op = queue_pop(&d->jq))) {
		op->result = DISK_OFF;
		complete_locked(d, op);
	}
	pthread_mutex_unlock(&d->mu);
	disk_poll(d);
	disk_store_close(d);
	disk_free(d);
}

/* The completion eventfd. */
int
disk_fd(const struct disk *d)
{
	return d->efd;
}

/* True while the tier is on. */
bool
disk_on(const struct disk *d)
{
	return __atomic_load_n(&d->on, __ATOMIC_RELAXED);
}

long
disk_journal_unread(const struct disk *d)
{
	return d->journal_unread;
}

/* A new op of kind for key k, or NULL (counted by the caller); with buf,
 * its page buffer (buf_take). */
static struct disk_op *
op_new(struct disk *d, enum disk_op_kind kind, const struct disk_key *k,
       bool buf)
{
	struct disk_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->kind = kind;
	if (k)
		op->key = *k;
	if (buf && !(op->pg.data = buf_take(d, kind))) {
		free(op);
		return NULL;
	}
	op->lent = buf;
	return op;
}

/* True when r is a range of a page of d. */
static bool
range_ok(const struct disk *d, struct disk_range r)
{
	return r.off < d->page_size && r.len && r.len <= d->page_size - r.off;
}

/* True when pg has a valid range to copy (among the first
 * DISK_MAX_RANGES): its store needs a buffer. */
static bool
store_has_data(const struct disk *d, const struct disk_page *pg)
{
	for (uint32_t i = 0; i < pg->nvalid && i < DISK_MAX_RANGES; i++)
		if (range_ok(d, pg->valid[i]))
			return true;
	return false;
}

/* Copy pg's valid bytes and ranges (the first DISK_MAX_RANGES) into op;
 * the bytes between them, up to the last one's end, are zeroed (the
 * slab's bytes outside the valid ranges are zeros: docs/disk-tier.md). */
static void
store_copy(struct disk *d, struct disk_op *op, const struct disk_page *pg)
{
	uint32_t nv = pg->nvalid < DISK_MAX_RANGES ? pg->nvalid : DISK_MAX_RANGES;
	uint32_t nh = pg->nholes < DISK_MAX_RANGES ? pg->nholes : DISK_MAX_RANGES;

	op->pg.attr = pg->attr;
	for (uint32_t i = 0; i < nv; i++) {
		struct disk_range r = pg->valid[i];

		if (!range_ok(d, r))
			continue;
		op->pg.valid[op->pg.nvalid++] = r;
		if (r.off + r.len > op->data_len)
			op->data_len = r.off + r.len;
		op->valid_bytes += r.len;
	}
	if (op->data_len)
		memset(op->pg.data, 0, op->data_len);
	for (uint32_t i = 0; i < op->pg.nvalid; i++)
		memcpy(op->pg.data + op->pg.valid[i].off,
		       pg->data + op->pg.valid[i].off, op->pg.valid[i].len);
	for (uint32_t i = 0; i < nh; i++) {
		struct disk_range r = pg->holes[i];

		if (r.off < d->page_size && r.len && r.len <= d->page_size - r.off)
			op->pg.holes[op->pg.nholes++] = r;
	}
}

/* Store a page asynchronously (disk.h). */
void
disk_store(struct disk *d, const struct disk_key *k, const struct disk_page *pg)
{
	struct disk_op *op;
	bool dropped;

	CHECK_OBJ(d, DISK_MAGIC);
	if (!disk_on(d) || k->fh_len == 0 || k->fh_len > DISK_FH_MAX ||
	    !(op = op_new(d, DISK_OP_STORE, k, store_has_data(d, pg)))) {
		DISK_COUNT(d, stores_dropped, 1);
		return;
	}
	store_copy(d, op, pg);
	submit(d, &d->wq, op, &dropped);
	if (dropped)
		DISK_COUNT(d, stores_dropped, 1);
}

/* Load a page asynchronously (disk.h). */
void
disk_load(struct disk *d, const struct disk_key *k, disk_load_cb *cb, void *arg)
{
	struct disk_op *op;
	bool dropped;

	CHECK_OBJ(d, DISK_MAGIC);
	op = op_new(d, DISK_OP_LOAD, k, true);

	if (!op) {
		cb(arg, DISK_OFF, NULL);	/* no memory or buffer: at once */
		return;
	}
	op->cb = cb;
	op->arg = arg;
	if (k->fh_len == 0 || k->fh_len > DISK_FH_MAX) {
		pthread_mutex_lock(&d->mu);
		d->inflight++;
		op->result = DISK_MISS;
		complete_locked(d, op);
		pthread_mutex_unlock(&d->mu);
		return;
	}
	submit(d, &d->rq, op, &dropped);
}

/* Drop every page of a file asynchronously (disk.h). */
void
disk_drop_file(struct disk *d, const uint8_t *fh, uint8_t fh_len)
{
	struct disk_key k = { .fh_len = fh_len };
	struct disk_op *op;
	bool dropped;

	if (fh_len == 0 || fh_len > DISK_FH_MAX)
		return;
	memcpy(k.fh, fh, fh_len);
	op = op_new(d, DISK_OP_DROP_FILE, &k, false);
	if (op)
		submit(d, &d->wq, op, &dropped);
}

/* Drop every page of every file asynchronously (disk.h). */
void
disk_drop_all(struct disk *d)
{
	struct disk_key k = { .fh_len = 0 };
	struct disk_op *op = op_new(d, DISK_OP_DROP_FILE, &k, false);
	bool dropped;

	if (op)
		submit(d, &d->wq, op, &dropped);
}

/* Close the test gate. */
void
disk_gate_close(struct disk *d)
{
	pthread_mutex_lock(&d->mu);
	d->gate_closed = true;
	pthread_mutex_unlock(&d->mu);
}

/* Open the test gate, releasing held operations. */
void
disk_gate_open(struct disk *d)
{
	pthread_mutex_lock(&d->mu);
	d->gate_closed = false;
	pthread_cond_broadcast(&d->cv_gate);
	pthread_mutex_unlock(&d->mu);
}

/* How many operations the gate holds now. */
unsigned
disk_gate_waiting(struct disk *d)
{
	unsigned n;

	pthread_mutex_lock(&d->mu);
	n = d->gate_waiting;
	pthread_mutex_unlock(&d->mu);
	return n;
}

/* Snapshot the counters and gauges (disk.h). */
void
disk_stats_get(const struct disk *d, struct disk_stats *st)
{
#define X(f, n, t, h) st->f = __atomic_load_n(&d->st.f, __ATOMIC_RELAXED);
	DISK_COUNTERS(X)
#undef X
	for (int i = 0; i < DISK_LAT_NBUCKETS; i++)
		st->lat_bucket[i] = __atomic_load_n(&d->st.lat_bucket[i],
						    __ATOMIC_RELAXED);
	st->lat_count = __atomic_load_n(&d->st.lat_count, __ATOMIC_RELAXED);
	st->lat_sum_us = __atomic_load_n(&d->st.lat_sum_us, __ATOMIC_RELAXED);
	st->pages_held = __atomic_load_n(&d->pages_held, __ATOMIC_RELAXED);
	st->bytes_held = st->pages_held * d->page_size;
	st->budget_bytes = (uint64_t)d->nslots * d->page_size;
	st->journal_records = __atomic_load_n(&d->st.journal_records,
					      __ATOMIC_RELAXED);
	st->journal_bytes = __atomic_load_n(&d->st.journal_bytes,
					    __ATOMIC_RELAXED);
	st->outage_records = __atomic_load_n(&d->st.outage_records,
					     __ATOMIC_RELAXED);
	st->outage_dropped = __atomic_load_n(&d->st.outage_dropped,
					     __ATOMIC_RELAXED);
	st->outage_failures = __atomic_load_n(&d->st.outage_failures,
					      __ATOMIC_RELAXED);
	st->store_bufs = __atomic_load_n(&d->store_bufs, __ATOMIC_RELAXED);
	st->load_bufs = __atomic_load_n(&d->load_bufs, __ATOMIC_RELAXED);
	st->journal_queued_bytes = __atomic_load_n(&d->journal_queued,
						   __ATOMIC_RELAXED);
	st->on = disk_on(d);
}

/* Check the slot map against the held count and the index (disk.h). */
bool
disk_check(struct disk *d)
{
	uint32_t used = 0;
	MDB_txn *txn;
	MDB_stat ps, ls;
	bool ok;

	pthread_mutex_lock(&d->slot_mu);
	for (uint32_t i = 0; i < d->nslots; i++)
		used += d->slot_used[i];
	ok = used + d->nfree == d->nslots &&
	     used == __atomic_load_n(&d->pages_held, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&d->slot_mu);
	if (!d->env)	/* a damaged index, not opened: nothing held */
		return ok && used == 0;
	if (mdb_txn_begin(d->env, NULL, MDB_RDONLY, &txn) != 0)
		return false;
	ok = ok && mdb_stat(txn, d->dbi_pages, &ps) == 0 &&
	     mdb_stat(txn, d->dbi_lru, &ls) == 0 &&
	     ps.ms_entries == ls.ms_entries &&
	     (!disk_on(d) || ps.ms_entries == used);
	mdb_txn_abort(txn);
	return ok;
}
