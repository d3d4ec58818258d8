/* SPDX-License-Identifier: MIT */
/*
 * nfs3_read: NFSv3 READ (RFC 1813 section 3.3.6) served from the cache.
 *
 * A READ goes through these steps:
 *   1. attributes: if the file's are not fresh, GETATTR upstream first
 *      (the adaptive acregmin..acregmax timeout; another writer's change
 *      drops the cached data);
 *   2. permission: a cache hit needs a positive READ result for this
 *      credential; without one the proxy asks ACCESS upstream, and if that
 *      does not grant READ the READ itself is forwarded and the upstream
 *      decides (an owner may read a file whose mode denies it): BYPASS;
 *   3. plan: HIT or HOLE replies from the cache; otherwise the missing
 *      bytes of the touched pages are fetched (PARTIAL or MISS), joining
 *      fetches already in flight for the same bytes (COALESCED when this
 *      READ needed no new upstream READ); a random READ fetches only its
 *      own bytes, 4 KiB aligned (read_fetch_window); missing pieces
 *      split only by a few cached bytes go in one upstream READ
 *      (fetch_pieces);
 *   4. each fetch fills the pages (never over valid bytes) and hands its
 *      bytes straight to the READs waiting on it, so a reply never
 *      depends on the pages surviving eviction.
 * Bytes at or past the size are never served; eof is set exactly when
 * the reply reaches the size (RFC 1813 section 3.3.6).
 *
 * An upstream READ reply is checked against its own post-op attributes,
 * the truth about the size, before anything uses it (read_res_correct):
 * a count past the size is cut, a missing eof at the size is set, and
 * NFS3ERR_INVAL for a READ at or past the size is an empty reply with
 * eof; each correction counts as an upstream protocol error.
 *
 * Fetches in flight are the cache's (cache_fetch_begin): each is a
 * struct cfetch whose arg is this file's struct fetch, the list of READs
 * waiting on it; a READ joins through cache_fetch_join, which offers only
 * fetches sent under the file's current generation, and a reply fills the
 * pages only while that generation holds (cache_fetch_fill).
 *
 * Each read_op is in one named step (nfs3_read.h NFS3_READ_STEPS; entered
 * through read_step(), which counts READs in flight by step and logs the
 * transition at debug) and remembers the steps it passed (`passed`): a
 * READ asks ACCESS once and the disk tier once.
 *
 * Invariants: a struct fetch carries FETCH_MAGIC and a file reference
 * while its cfetch is recorded; each waiting read_op is counted once in
 * its `waiting` per fetch it waits on, and replies when that reaches 0;
 * a read_op's `need` lies inside [off, end); inflight[s] of the
 * daemon's struct nfs3_read is the number of live read_ops whose step
 * is s. nfs3_read_check_why (the invariant sweep) checks, over the
 * daemon's lists of live fetches and READs, that each READ's `waiting`
 * is the number of fetches listing it, that only a READ in its FETCH
 * step waits, and that every waiter a fetch lists is a live READ.
 *
 * The counters and the steps in flight are the daemon's (d->nfs3_read,
 * made by nfs3_read_start, freed by nfs3_read_stop), touched from the
 * event loop only.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "attr.h"
#include "checkobj.h"
#include "daemon.h"
#include "disk_tier.h"
#include "log.h"
#include "nfs3_guard.h"
#include "nfs3_inline.h"
#include "nfs3_ops.h"
#include "nfs3_read.h"
#include "nfs3_read_impl.h"
#include "server.h"
#include "stale.h"

#define READ_MAX_FETCH 64	/* fetch ranges planned per READ */
#define READ_RANDOM_ALIGN 4096	/* a random miss fetches its bytes widened
				 * to this at least: the client's page */
#define READ_LINK_RATE 125e6	/* bytes/s a random miss's unit assumes the
				 * link carries (1 Gb/s) */
#define READ_MERGE_GAP (64 * 1024)	/* cached bytes between two missing
					 * pieces fetched again, to send
					 * them in one READ (fetch_pieces) */
static void read_continue(struct read_op *op);
static void read_bypass(struct read_op *op);

static const char *const read_step_names[] = {
#define X(st, name) name,
	NFS3_READ_STEPS(X)
#undef X
};

const char *nfs3_read_step_name(enum nfs3_read_step s)
{
	return (unsigned)s < NFS3_READ_NSTEPS ? read_step_names[s] : "?";
}

int nfs3_read_start(struct daemon *d)
{
	d->nfs3_read = calloc(1, sizeof(*d->nfs3_read));
	return d->nfs3_read ? 0 : -1;
}

void nfs3_read_stop(struct daemon *d)
{
	free(d->nfs3_read);
	d->nfs3_read = NULL;
}

void nfs3_read_steps_inflight(const struct daemon *d,
			      uint64_t n[NFS3_READ_NSTEPS])
{
	if (d->nfs3_read)
		memcpy(n, d->nfs3_read->inflight,
		       sizeof(d->nfs3_read->inflight));
	else
		memset(n, 0, NFS3_READ_NSTEPS * sizeof(n[0]));
}

/* Move op into step s: count it there, log the transition at debug. */
static void read_step(struct read_op *op, enum nfs3_read_step s)
{
	uint64_t *inflight = op->d->nfs3_read->inflight;

	if (op->step < NFS3_READ_NSTEPS)
		inflight[op->step]--;
	log_debug("READ xid %08x: %s -> %s", op->r->call.xid,
		  op->step < NFS3_READ_NSTEPS ? read_step_names[op->step]
					      : "start", read_step_names[s]);
	op->step = s;
	op->passed |= 1u << s;
	inflight[s]++;
}

/* True if op entered step s before. */
static bool read_passed(const struct read_op *op, enum nfs3_read_step s)
{
	return op->passed & (1u << s);
}

/* The READ arguments of op (the handle is already the upstream one). */
static READ3args *op_args(const struct read_op *op)
{
	return op->r->args;
}

/* Release op's state (not the request). */
static void op_free(struct read_op *op)
{
	if (op->step < NFS3_READ_NSTEPS)
		op->d->nfs3_read->inflight[op->step]--;
	if (op->f)
		cfile_put(op->d->cache, &op->f);
	DL_DELETE(op->d->nfs3_read->ops, op);
	rangeset_clear(&op->need);
	free(op->buf);
	free(op);
}

/* Reply an error status and finish. */
static void read_fail(struct read_op *op, nfsstat3 st)
{
	struct req *r = op->r;

	read_step(op, NFS3_READ_REPLY);
	op_free(op);
	nfs3_reply_status(r, st);
}

/* Fill in post_op_attr from the cached attributes. */
static void post_op_from_cache(const struct cfile *f, post_op_attr *p)
{
	memset(p, 0, sizeof(*p));
	if (!f || !cfile_has_attr(f))
		return;
	p->attributes_follow = TRUE;
	attr_to_fattr3(cfile_attr(f), &p->post_op_attr_u.attributes);
}

/*
 * The eof flag of a reply of count bytes at off, asked for `asked`, of a
 * file of size bytes: TRUE exactly when the reply reaches the size ("if
 * READ3args.offset plus READ3resok.count is equal to the size of the
 * file", RFC 1813 section 3.3.6). Ganesha 4.3 sets it there, not only on
 * a short read (seen on READs ending exactly at the end of file); the
 * proxy's own windows end at the size, so a short reply from the cache
 * always reaches it. A READ of 0 bytes reads nothing and says FALSE, as
 * Ganesha 4.3 answers it.
 */
static bool eof_flag(uint64_t off, uint32_t asked, uint64_t count,
		     uint64_t size)
{
	return asked > 0 && off + count >= size;
}

/*
 * Correct an upstream reply to a READ at off by its own post-op size: a
 * count past the data or past the size is cut (bytes past the size are
 * never kept or served), eof is set when the reply reaches the size (an
 * empty reply at or past it included; a READ of 0 bytes excepted), and
 * when past_end, NFS3ERR_INVAL for a READ at or past the size becomes an
 * empty reply with eof (a server refusing a READ past the end of a file
 * that shrank behind the proxy, which planned it inside the size it knew;
 * a client's own READ past the end, forwarded, keeps the upstream's
 * answer). Without post-op attributes only the count is checked against
 * the data. Returns true if the reply was corrected.
 */
static bool read_res_correct(READ3res *res, uint64_t off, uint32_t asked,
			     bool past_end)
{
	READ3resok *ok = &res->READ3res_u.resok;
	struct cattr tmp;
	const struct cattr *a;
	bool fixed = false;

	if (res->status == NFS3ERR_INVAL && past_end) {
		a = attr_from_post_op(&res->READ3res_u.resfail.file_attributes,
				      &tmp);
		if (!a || off < a->size)
			return false;
		/* resfail is resok's leading post_op_attr alone. */
		res->status = NFS3_OK;
		ok->count = 0;
		ok->eof = TRUE;
		ok->data.data_len = 0;
		return true;
	}
	if (res->status != NFS3_OK)
		return false;
	if (ok->count > ok->data.data_len) {
		ok->count = ok->data.data_len;
		fixed = true;
	}
	if (!(a = attr_from_post_op(&ok->file_attributes, &tmp)))
		return fixed;
	if (off + ok->count > a->size) {
		ok->count = off < a->size ? (count3)(a->size - off) : 0;
		fixed = true;
	}
	if (ok->data.data_len > ok->count)
		ok->data.data_len = ok->count;
	if (!ok->eof && eof_flag(off, asked, ok->count, a->size)) {
		ok->eof = TRUE;
		fixed = true;
	}
	return fixed;
}

/* Correct an upstream READ reply (NULL: none) for a READ of asked bytes
 * at off; a correction counts in d's counters. */
static READ3res *read_res_check(struct daemon *d, READ3res *res, uint64_t off,
				uint32_t asked, bool past_end)
{
	if (res && read_res_correct(res, off, asked, past_end))
		nfs3_count_protocol_error(d);
	return res;
}

/*
 * What a READ of holes alone is answered from, by reference: READ_ZEROS_MAX
 * zero bytes, never written (in .bss, so reading it maps the kernel's zero
 * page and costs no memory).
 */
#define READ_ZEROS_MAX (1024 * 1024)
static uint8_t read_zeros[READ_ZEROS_MAX];

/* Release callback of reply data from malloc. */
static void read_data_free(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)(uintptr_t)data);
}

/* Release callback of a page's bytes lent by cache_lend: give the lend
 * back. Runs on the loop that owns the cache: after the write, or when the
 * reply is copied or dropped (daemon/rpc/server.c reply_encoded). */
static void read_data_lent(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	cache_lend_put(arg);
}

/* Release callback of data the reply does not own (read_zeros, or a
 * page's bytes lent by cache_peek): nothing to release. */
static void read_data_keep(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	(void)arg;
}

/*
 * Reply data[0..count) of the window, eof as the upstream sets it. release
 * (with arg) runs once the reply no longer needs data: read_data_free for
 * malloc'd data owned by the call (sent without a copy, then freed),
 * read_data_lent for a page's bytes lent by cache_lend (arg: the lend),
 * read_data_keep for data not owned (read_zeros, or at most
 * RPCMSG_TAIL_COPY_MAX bytes lent by cache_peek: copied into the reply
 * before this returns).
 */
static void read_reply(struct read_op *op, const uint8_t *data,
		       uint64_t count, uint64_t upstream_bytes,
		       uint64_t hole_bytes, rpcmsg_tail_release release,
		       void *arg)
{
	struct req *r = op->r;
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	post_op_from_cache(op->f, &res.READ3res_u.resok.file_attributes);
	res.READ3res_u.resok.count = (count3)count;
	res.READ3res_u.resok.eof = eof_flag(op->off, op_args(op)->count, count,
					    cfile_attr(op->f)->size);
	/* data<> goes after the rest (req_reply_tail: by reference, or
	 * copied when small). */
	res.READ3res_u.resok.data.data_len = 0;
	res.READ3res_u.resok.data.data_val = NULL;
	read_step(op, NFS3_READ_REPLY);
	nfs3_count_read(op->d, op->ex->conf->id, op->outcome, op->cache_bytes,
			upstream_bytes, hole_bytes);
	op_free(op);
	req_reply_tail(r, (xdrproc_t)nfs3_inline_xdr_READ3res, &res, data,
		       (size_t)count, release, arg);
}

/* Answer a HIT or HOLE straight from the pages and holes: a READ within
 * one page from the page itself (a small one copied into the reply,
 * cache_peek; a larger one sent by reference, cache_lend), any other
 * through a buffer of its own. */
static void read_from_cache(struct read_op *op)
{
	uint64_t n = op->end - op->off, holes = 0;
	const uint8_t *lent;
	struct cache_lend *l;
	uint8_t *data;

	if (op->outcome == CACHE_HOLE && n <= READ_ZEROS_MAX) {
		/* Every byte a hole (cache_plan_read): no copy at all. */
		cache_touch(op->d->cache, op->f, op->off, n);
		op->cache_bytes = 0;
		if (op->stale)
			stale_count(op->d, NFSPROC3_READ);
		read_reply(op, read_zeros, n, 0, n, read_data_keep, NULL);
		return;
	}
	if (n <= RPCMSG_TAIL_COPY_MAX &&
	    (lent = cache_peek(op->d->cache, op->f, op->off, n))) {
		op->cache_bytes = n;
		if (op->stale)
			stale_count(op->d, NFSPROC3_READ);
		read_reply(op, lent, n, 0, 0, read_data_keep, NULL);
		return;
	}
	if (n > RPCMSG_TAIL_COPY_MAX && op->outcome == CACHE_HIT &&
	    (l = cache_lend(op->d->cache, op->f, op->off, n, &lent))) {
		op->cache_bytes = n;
		if (op->stale)
			stale_count(op->d, NFSPROC3_READ);
		read_reply(op, lent, n, 0, 0, read_data_lent, l);
		return;
	}
	data = malloc(n ? n : 1);
	if (!data) {
		read_fail(op, NFS3ERR_SERVERFAULT);
		return;
	}
	op->cache_bytes = cache_copy_ex(op->d->cache, op->f, op->off, n, data,
					&holes);
	if (op->cache_bytes != n) {
		/* The plan said all valid; never reply bytes we do not have. */
		free(data);
		read_bypass(op);
		return;
	}
	op->cache_bytes -= holes;
	if (op->stale)
		stale_count(op->d, NFSPROC3_READ);
	read_reply(op, data, n, 0, holes, read_data_free, NULL);
}

/* Park op on fetch fe. 0, or -1 on ENOMEM. */
static int fetch_wait(struct fetch *fe, struct read_op *op)
{
	if (fe->nwaiters == fe->cap) {
		size_t cap = fe->cap ? fe->cap * 2 : 4;
		struct read_op **w = realloc(fe->waiters, cap * sizeof(*w));

		if (!w)
			return -1;
		fe->waiters = w;
		fe->cap = cap;
	}
	fe->waiters[fe->nwaiters++] = op;
	op->waiting++;
	return 0;
}

/* Hand the fetched bytes [s, s + n) to op where op still needs them. */
static void deliver(struct read_op *op, uint64_t s, const uint8_t *data,
		    uint64_t n)
{
	struct range got[READ_MAX_FETCH];
	size_t k = rangeset_ranges_in(&op->need, s, s + n, got, READ_MAX_FETCH);

	for (size_t i = 0; i < k && i < READ_MAX_FETCH; i++)
		memcpy(op->buf + (got[i].start - op->off), data + (got[i].start - s),
		       got[i].end - got[i].start);
	rangeset_remove(&op->need, s, s + n);
}

/* A waiting READ's fetches are all back: reply, or fall back. */
static void read_finish(struct read_op *op)
{
	uint8_t *buf;

	if (op->err != NFS3_OK) {
		read_fail(op, op->err);
		return;
	}
	if (rangeset_bytes(&op->need) != 0) {
		/* A short read without eof left bytes missing. */
		read_bypass(op);
		return;
	}
	buf = op->buf;
	op->buf = NULL;		/* read_reply owns it now */
	read_reply(op, buf, op->end - op->off,
		   op->end - op->off - op->cache_bytes, 0, read_data_free, NULL);
}

/* The file ended at eof_at: trim op's window and needs. Past the
 * upstream's end, a file the proxy extended with its own writes reads as
 * zeros where the proxy holds nothing. */
static void trim_at_eof(struct read_op *op, uint64_t eof_at)
{
	struct range z[READ_MAX_FETCH];
	size_t k;

	if (eof_at >= op->end)
		return;
	if (cfile_is_local(op->f)) {
		k = rangeset_ranges_in(&op->need, eof_at, op->end, z,
				       READ_MAX_FETCH);
		for (size_t i = 0; i < k && i < READ_MAX_FETCH; i++)
			memset(op->buf + (z[i].start - op->off), 0,
			       z[i].end - z[i].start);
		if (k <= READ_MAX_FETCH)
			rangeset_truncate(&op->need, eof_at);
		return;
	}
	op->end = eof_at > op->off ? eof_at : op->off;
	rangeset_truncate(&op->need, op->end);
}

/* Observe a READ reply's attributes for f, sent under gen; true if its
 * data may then fill the cache. */
static bool read_observe(struct daemon *d, struct export_rt *ex,
			 struct cfile *f, uint64_t gen, READ3resok *ok)
{
	struct cattr tmp;
	const struct cattr *a = attr_from_post_op(&ok->file_attributes, &tmp);

	return cfile_attr_observe_gen(d->cache, f, gen, a, daemon_now(),
				      a ? daemon_ac(ex, a->type) : NULL);
}

/* Learn from a fetch's successful reply: attributes, then the pages.
 * True if the fetch was still current (its data filled the cache). */
static bool fetch_learn(struct fetch *fe, READ3resok *ok)
{
	struct cattr tmp;
	const struct cattr *a;
	uint64_t off, end;

	if (!cache_fetch_current(fe->cf))
		return false;
	a = attr_from_post_op(&ok->file_attributes, &tmp);
	if (a && !cache_fetch_attr_current(fe->cf))
		a = NULL;	/* older than an own write-back since */
	if (a)
		cfile_attr_observe(fe->d->cache, fe->f, a, daemon_now(),
				   daemon_ac(fe->ex, a->type));
	if (!cache_fetch_fill(fe->d->cache, fe->cf,
			      (const uint8_t *)ok->data.data_val, ok->count))
		return false;
	cache_fetch_range(fe->cf, &off, &end);
	disk_tier_filled(fe->d, fe->f, off, (const uint8_t *)ok->data.data_val,
			 ok->count, a);
	return true;
}

/* Free a fetch: its cache record (if still there), reference, waiters. */
static void fetch_free(struct fetch *fe)
{
	cache_fetch_end(fe->d->cache, &fe->cf);
	cfile_put(fe->d->cache, &fe->f);
	DL_DELETE(fe->d->nfs3_read->fetches, fe);
	free(fe->waiters);
	fe->magic = 0;
	free(fe);
}

/* An upstream READ issued to fill pages came back. */
static void fetch_done(enum upstream_status status, void *decoded,
		       void *arg)
{
	struct fetch *fe = arg;
	READ3res *res = NULL;
	nfsstat3 err;
	bool current = false;

	CHECK_OBJ(fe, FETCH_MAGIC);
	/* A fetch always asks for at least one byte. */
	if (status == UPSTREAM_OK &&
	    (res = read_res_check(fe->d, decoded, fe->start, 1, true)))
		err = res->status;
	else
		err = status == UPSTREAM_OK ? NFS3ERR_JUKEBOX
					    : nfs3_upstream_failure(status);
	if (err == NFS3ERR_INVAL)
		cfile_attr_expire(fe->f);	/* a retry asks the size again */
	if (err == NFS3_OK) {
		READ3resok *ok = &res->READ3res_u.resok;

		nfs3_count_fetch(fe->d, fe->ex->conf->id, ok->count);
		current = fetch_learn(fe, ok);
	}
	/* No one joins this fetch any more. */
	cache_fetch_end(fe->d->cache, &fe->cf);
	if (err == NFS3_OK) {
		READ3resok *ok = &res->READ3res_u.resok;

		for (size_t i = 0; i < fe->nwaiters; i++) {
			struct read_op *w = fe->waiters[i];
			uint64_t s = fe->start > w->off ? fe->start : w->off;
			uint64_t e = fe->start + ok->count < w->end
					     ? fe->start + ok->count : w->end;

			deliver(w, fe->start, (const uint8_t *)ok->data.data_val,
				ok->count);
			/* The waiting READ used these pages (prefetched or
			 * not): count it as the page's first use. */
			if (s < e && current)
				cache_touch(fe->d->cache, fe->f, s, e - s);
			if (ok->eof)
				trim_at_eof(w, fe->start + ok->count);
		}
	}
	for (size_t i = 0; i < fe->nwaiters; i++) {
		struct read_op *op = fe->waiters[i];

		if (err != NFS3_OK && op->err == NFS3_OK)
			op->err = err;
		if (--op->waiting == 0)
			read_finish(op);
	}
	fetch_free(fe);
}

/* Send one upstream READ of [s, e) for op's file; op waits on it if it
 * needs any of those bytes. 0, or -1 if it could not be sent. */
static int fetch_start(struct read_op *op, uint64_t s, uint64_t e, bool ra)
{
	struct daemon *d = op->r->d;
	struct fetch *fe = calloc(1, sizeof(*fe));
	READ3args a;

	if (!fe)
		return -1;
	fe->magic = FETCH_MAGIC;
	fe->d = d;
	DL_APPEND(d->nfs3_read->fetches, fe);
	fe->ex = op->ex;
	fe->start = s;
	fe->f = cache_find(d->cache, (const uint8_t *)op_args(op)->file.data.data_val,
			   op_args(op)->file.data.data_len);
	if (!fe->f || !(fe->cf = cache_fetch_begin(d->cache, fe->f, s, e, ra,
						   fe)) ||
	    (!ra && rangeset_intersects(&op->need, s, e) &&
	     fetch_wait(fe, op) != 0)) {
		fetch_free(fe);
		return -1;
	}
	a = *op_args(op);
	a.offset = s;
	a.count = (count3)(e - s);
	if (nfs3_send(op->ex, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a,
		      &op->uc, fetch_done, fe) != 0) {
		if (fe->nwaiters)
			op->waiting--;
		fetch_free(fe);
		return -1;
	}
	return 0;
}

/* Join fetches in flight that cover bytes op needs; return in *rest the
 * parts of [s, e) no joinable fetch covers. */
static void join_inflight(struct read_op *op, uint64_t s, uint64_t e,
			  struct rangeset *rest)
{
	struct cfetch *cf = NULL;
	uint64_t fs, fe_end;

	rangeset_add(rest, s, e);
	while ((cf = cache_fetch_join(op->f, cf, s, e))) {
		struct fetch *fe = cache_fetch_arg(cf);

		cache_fetch_range(cf, &fs, &fe_end);
		rangeset_remove(rest, fs, fe_end);
		if (rangeset_intersects(&op->need, fs, fe_end)) {
			bool already = false;

			for (size_t i = 0; i < fe->nwaiters; i++)
				already |= fe->waiters[i] == op;
			if (!already && fetch_wait(fe, op) != 0)
				op->err = NFS3ERR_SERVERFAULT;
		}
	}
}

/* True when the cached bytes [b, e) between two missing pieces of op's
 * file may be fetched again to join the pieces in one READ: at most
 * READ_MERGE_GAP of them, all valid and clean (fetch_pieces). */
static bool gap_joinable(const struct read_op *op, uint64_t b, uint64_t e)
{
	return e - b <= READ_MERGE_GAP &&
	       cfile_range_cached(op->d->cache, op->f, b, e) &&
	       cfile_range_clean(op->f, b, e - b,
				 cache_page_size(op->d->cache));
}

/*
 * Send the upstream READs of the pieces of rest (bytes op's file lacks
 * that no fetch in flight covers), at most rtmax bytes each; ra: for
 * readahead (op waits on none of them). Pieces separated by at most
 * READ_MERGE_GAP bytes, all valid in the cache and clean (the disk tier
 * stores a reply's bytes as the upstream's: not over bytes a client
 * wrote), form one run, sent as READs of rtmax bytes each (the last one
 * shorter), each starting at a missing byte and ending at one: a
 * fragmented window costs about as many READs as a whole one (issue 16:
 * a window over scattered cached bytes was sent as one READ per gap;
 * issue 42: a piece that did not fit whole in the READ before it began a
 * new READ, so pieces a little over rtmax went as two READs each, one of
 * them small). A fill never overwrites valid bytes (cache_fill), so a
 * gap's bytes come again and are dropped. A READ that cannot be
 * sent stops a client's fetch (op->err = NFS3ERR_JUKEBOX); readahead
 * goes on. Returns the READs sent; *lost gets the bytes not sent.
 */
static unsigned fetch_pieces(struct read_op *op, const struct rangeset *rest,
			     uint32_t rtmax, bool ra, uint64_t *lost)
{
	size_t n, i = 0;
	const struct range *pc = rangeset_ranges(rest, &n);
	uint64_t a = n ? pc[0].start : 0, b;
	unsigned sent = 0;

	*lost = 0;
	while (i < n && (ra || op->err == NFS3_OK)) {
		/* Never past a piece's end, even next to 2^64. */
		b = pc[i].end - a > rtmax ? a + rtmax : pc[i].end;
		/* Join the next pieces while this READ has room left. */
		while (b == pc[i].end && i + 1 < n &&
		       pc[i + 1].start - a < rtmax &&
		       gap_joinable(op, b, pc[i + 1].start)) {
			i++;
			b = pc[i].end - a > rtmax ? a + rtmax : pc[i].end;
		}
		if (fetch_start(op, a, b, ra) == 0) {
			sent++;
		} else {
			*lost += b - a;
			if (!ra)
				op->err = NFS3ERR_JUKEBOX;
		}
		if (b == pc[i].end && ++i < n)
			a = pc[i].start;
		else
			a = b;
	}
	return sent;
}

/* Prefetch [s, e) of op's file: the bytes the cache lacks and no fetch
 * in flight covers (fetch_pieces). Returns the bytes that could not be
 * sent. */
static uint64_t prefetch(struct read_op *op, uint64_t s, uint64_t e,
			 uint32_t rtmax)
{
	struct range miss[READ_MAX_FETCH];
	struct rangeset rest = RANGESET_INIT;
	uint64_t end, lost, next, ps = cache_page_size(op->d->cache);
	size_t n;
	enum cache_outcome o;

	if (e - s > UINT32_MAX)
		return e - s;
	for (;;) {
		o = cache_plan_read(op->d->cache, op->f, s, (uint32_t)(e - s),
				    &end, miss, READ_MAX_FETCH, &n);
		if (o == CACHE_HIT || o == CACHE_HOLE)
			break;
		for (size_t i = 0; i < n && i < READ_MAX_FETCH; i++)
			join_inflight(op, miss[i].start, miss[i].end, &rest);
		/* More missing ranges than planned: plan the rest too. A
		 * plan covers whole pages, so its ranges may all lie before
		 * s in s's page: then go on at the next page (what is left of
		 * this one is not prefetched). */
		if (n <= READ_MAX_FETCH)
			break;
		next = miss[READ_MAX_FETCH - 1].end;
		if (next <= s)
			next = (s / ps + 1) * ps;
		if (next <= s || next >= e)	/* <= s: past 2^64 */
			break;
		s = next;
	}
	disk_tier_take(op->d, op->f, &rest);
	/* While the disk tier's stores are behind, readahead fills nothing
	 * from the upstream (its stores would outrun the disk: client READs
	 * wait for room instead, disk_tier_load). */
	if (disk_tier_congested(op->d))
		lost = rangeset_bytes(&rest);
	else
		fetch_pieces(op, &rest, rtmax, true, &lost);
	rangeset_clear(&rest);
	return lost;
}

/*
 * The readahead parameters for a READ of op's export now: the
 * configuration's (d->ra_params) with the full window sized by the
 * export's link, its READ delivery rate times its latency floor
 * (ra_window_size; the base window while either is unknown).
 */
void nfs3_read_ra_params(const struct daemon *d, const struct upcall *upc,
			 struct ra_params *p)
{
	*p = d->ra_params;
	if (p->max_window)
		p->full_window = ra_window_size(p, upcall_read_rate(upc),
						upcall_latency_floor(upc));
}

/*
 * Tell the file's readahead about this READ (hits included: that is how
 * a stream crosses its trigger) and prefetch what it asks for. A miss
 * counts as sequential when the bytes just before it are cached.
 */
static void read_ahead(struct read_op *op, bool hit)
{
	struct daemon *d = op->d;
	struct ra_params rp;
	struct ra_state *ra;
	READ3args *a = op_args(op);
	struct range out[RA_RANGES_MAX], pr;
	bool prev_cached = false;
	uint32_t rtmax = upcall_rtmax(&op->ex->upc);
	size_t n;

	/* A hit only advances a stream already sequential: cached data
	 * read at random must not start readahead. Most hits are of files
	 * with no such stream: answered before the parameters are made. */
	if (hit && !ra_streaming(cfile_ra_peek(op->f)))
		return;
	nfs3_read_ra_params(d, &op->ex->upc, &rp);
	ra = cfile_ra(d->cache, op->f, &rp);
	if (!ra || !rtmax)
		return;
	if (hit && !ra_in_stream(ra, &rp, a->offset))
		return;
	if (!hit) {
		pr = ra_prev_range(&rp, a->offset, a->count);
		prev_cached = pr.start < pr.end &&
			      cfile_range_cached(d->cache, op->f, pr.start, pr.end);
	}
	n = ra_on_read(ra, &rp, a->offset, a->count,
		       cfile_attr(op->f)->size, prev_cached, out, RA_RANGES_MAX);
	for (size_t i = 0; i < n; i++)
		if (prefetch(op, out[i].start, out[i].end, rtmax))
			ra_cancel(ra, &rp, &out[i]);
}

/*
 * The unit a random miss of op fetches, bytes: what the link carries
 * (READ_LINK_RATE) in a quarter of the upstream's latency floor
 * (upstream_latency_floor), so that the wider fetch adds at most about a
 * quarter to the miss's wait, as a power of two from READ_RANDOM_ALIGN up
 * to the cache's page. On a LAN (a floor of 0.1 ms) that is 4 KiB, at
 * 1 ms 16 KiB, and from about 2.1 ms (a WAN) a whole 64 KiB page, whose
 * other bytes a later READ then finds cached for next to nothing.
 */
static uint64_t read_random_unit(const struct read_op *op)
{
	double want = upcall_latency_floor(&op->ex->upc) / 4 * READ_LINK_RATE;
	uint64_t unit = READ_RANDOM_ALIGN, ps = cache_page_size(op->d->cache);

	while (unit * 2 <= ps && (double)(unit * 2) <= want)
		unit *= 2;
	return unit;
}

/*
 * The bytes a miss of op fetches: its whole pages ([0, UINT64_MAX)) when
 * it may be part of a stream, else (a random READ) only the bytes asked,
 * widened to read_random_unit() (issue 16: on a LAN a cold 4 KiB random
 * READ cost a 64 KiB page at 16x the bytes). Random: readahead is on for
 * the file (with it off the pattern is unknown and whole pages are kept),
 * the READ does not start at 0, belongs to no sequential stream
 * (ra_in_stream), and the bytes just before it are not cached
 * (ra_prev_range): exactly the
 * READs that ra_on_read() will not start a stream for at once. A random
 * READ that turns out to be a stream's second one is fetched narrow; its
 * stream's window, issued by read_ahead(), covers what follows.
 */
static struct range read_fetch_window(struct read_op *op)
{
	struct daemon *d = op->d;
	struct ra_params rp;
	struct ra_state *ra;
	struct range all = { 0, UINT64_MAX }, w, pr;
	uint64_t mask;

	nfs3_read_ra_params(d, &op->ex->upc, &rp);
	ra = cfile_ra(d->cache, op->f, &rp);
	if (!ra || op->off == 0 || ra_in_stream(ra, &rp, op->off))
		return all;
	pr = ra_prev_range(&rp, op->off, op_args(op)->count);
	if (pr.start < pr.end &&
	    cfile_range_cached(d->cache, op->f, pr.start, pr.end))
		return all;
	mask = read_random_unit(op) - 1;
	w.start = op->off & ~mask;
	w.end = op->end > UINT64_MAX - mask ? UINT64_MAX : (op->end + mask) & ~mask;
	d->nfs3_read->stats[op->ex->conf->id % NFS3_EXPORT_IDS]
		.random_fetches++;
	return w;
}

/* Issue the fetches of a PARTIAL or MISS plan. */
static void read_fetch(struct read_op *op, const struct range *fetch,
		       size_t n)
{
	uint32_t rtmax = upcall_rtmax(&op->ex->upc);
	struct rangeset rest = RANGESET_INIT;
	unsigned issued = 0;
	uint64_t lost;
	struct range w;

	if (!rtmax)
		rtmax = 65536;
	read_step(op, NFS3_READ_FETCH);
	op->buf = malloc(op->end - op->off);
	if (!op->buf) {
		read_fail(op, NFS3ERR_SERVERFAULT);
		return;
	}
	op->cache_bytes = cache_copy(op->r->d->cache, op->f, op->off,
				     op->end - op->off, op->buf);
	for (size_t i = 0; i < n; i++) {
		uint64_t s = fetch[i].start > op->off ? fetch[i].start : op->off;
		uint64_t e = fetch[i].end < op->end ? fetch[i].end : op->end;

		if (s < e)
			rangeset_add(&op->need, s, e);
	}
	op->waiting = 1;	/* hold op while fetches are issued */
	w = read_fetch_window(op);
	for (size_t i = 0; i < n; i++) {
		uint64_t fs = fetch[i].start > w.start ? fetch[i].start : w.start;
		uint64_t fe = fetch[i].end < w.end ? fetch[i].end : w.end;

		if (fs < fe)
			join_inflight(op, fs, fe, &rest);
	}
	if (op->err == NFS3_OK)
		issued = fetch_pieces(op, &rest, rtmax, false, &lost);
	rangeset_clear(&rest);
	if (!issued && op->outcome != CACHE_HIT)
		op->outcome = CACHE_COALESCED;
	read_ahead(op, false);
	if (--op->waiting == 0)
		read_finish(op);
}

static void read_plan(struct read_op *op);

/* The disk tier's loads for op are back: plan again (RAM has them now). */
static void read_disk_done(void *arg)
{
	read_plan(arg);
}

/* Plan the READ against the cache and serve or fetch. */
static void read_plan(struct read_op *op)
{
	READ3args *a = op_args(op);
	struct range fetch[READ_MAX_FETCH];
	size_t n;

	/* Planned again after a bypass (a local file's short READ): what
	 * the first plan kept goes, before a hit's readahead could park op
	 * on a fetch by needs it no longer has (join_inflight). */
	read_step(op, NFS3_READ_PLAN);
	free(op->buf);
	op->buf = NULL;
	rangeset_clear(&op->need);
	op->off = a->offset;
	op->outcome = cache_plan_read(op->r->d->cache, op->f, a->offset,
				      a->count, &op->end, fetch,
				      READ_MAX_FETCH, &n);
	if (op->outcome == CACHE_HIT || op->outcome == CACHE_HOLE) {
		read_ahead(op, true);
		read_from_cache(op);
		return;
	}
	if (n > READ_MAX_FETCH) {
		read_bypass(op);
		return;
	}
	if (!read_passed(op, NFS3_READ_DISK)) {
		read_step(op, NFS3_READ_DISK);
		if (disk_tier_load(op->d, op->f, fetch, n, false, read_disk_done,
				   op))
			return;
	}
	read_fetch(op, fetch, n);
}

/* ACCESS reply for a READ's permission check. */
static void read_access_done(enum upstream_status status, void *decoded,
			     void *arg)
{
	struct read_op *op = arg;
	ACCESS3res *res = NULL;
	struct cattr tmp;
	const struct cattr *a;

	if (status != UPSTREAM_OK) {
		read_fail(op, nfs3_upstream_failure(status));
		return;
	}
	res = decoded;
	if (res && res->status == NFS3_OK) {
		a = attr_from_post_op(&res->ACCESS3res_u.resok.obj_attributes, &tmp);
		/* The proxy's own writes meanwhile do not make the answer
		 * stale; a change of owner or mode does. */
		if (cfile_attr_observe_gen(op->d->cache, op->f, op->gen, a,
					   daemon_now(),
					   a ? daemon_ac(op->ex, a->type) : NULL) ||
		    attr_same_perm(op->f, a))
			cfile_access_record(op->f, &op->uc, ACCESS3_READ,
					    res->ACCESS3res_u.resok.access);
	}
	read_continue(op);
}

/* GETATTR reply revalidating a READ's file attributes. */
static void read_getattr_done(enum upstream_status status, void *decoded,
			      void *arg)
{
	struct read_op *op = arg;
	GETATTR3res *res;
	struct cattr a;

	if (status != UPSTREAM_OK && stale_attrs_usable(op->d, op->f, status)) {
		op->stale = true;
		read_continue(op);
		return;
	}
	if (status != UPSTREAM_OK) {
		read_fail(op, nfs3_upstream_failure(status));
		return;
	}
	res = decoded;
	if (!res || res->status != NFS3_OK) {
		/* Let the READ itself tell the client what is wrong. */
		read_bypass(op);
		return;
	}
	attr_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, &a);
	cfile_attr_observe_gen(op->d->cache, op->f, op->gen, &a, daemon_now(),
			       daemon_ac(op->ex, a.type));
	read_continue(op);
}

/* Forwarded READ came back: learn from it and reply it as it is. */
static void read_bypass_done(enum upstream_status status, void *decoded,
			     void *arg)
{
	struct read_op *op = arg;
	const struct dispatch_entry *ent = op->r->ent;	/* the READ row */
	READ3res *res;

	if (status != UPSTREAM_OK ||
	    !(res = read_res_check(op->d, decoded, op_args(op)->offset,
				   op_args(op)->count, false))) {
		read_fail(op, nfs3_upstream_failure(status));
		return;
	}
	if (res->status == NFS3ERR_INVAL && op->f)
		cfile_attr_expire(op->f);	/* a retry asks the size again */
	if (res->status == NFS3_OK && op->f && cfile_is_local(op->f) &&
	    !op->bypassed_local) {
		/* The upstream let this credential read, but the proxy holds
		 * writes of the file it has not written back: its bytes are
		 * newer than the upstream's. Serve the READ from the cache. */
		op->bypassed_local = true;
		cfile_access_record(op->f, &op->uc, ACCESS3_READ, ACCESS3_READ);
		read_plan(op);
		return;
	}
	nfs3_count_read(op->d, op->ex->conf->id, CACHE_BYPASS, 0,
			res->status == NFS3_OK ? res->READ3res_u.resok.count
					       : 0, 0);
	if (res->status == NFS3_OK && op->f) {
		READ3resok *ok = &res->READ3res_u.resok;
		struct cattr tmp;

		/* The upstream let this credential read the file. */
		if (cfile_gen_holds(op->f, op->gen) ||
		    attr_same_perm(op->f, attr_from_post_op(&ok->file_attributes, &tmp)))
			cfile_access_record(op->f, &op->uc, ACCESS3_READ,
					    ACCESS3_READ);
		if (read_observe(op->d, op->ex, op->f, op->gen, ok))
			cache_fill(op->d->cache, op->f, op_args(op)->offset,
				   (const uint8_t *)ok->data.data_val, ok->count);
	}
	read_step(op, NFS3_READ_REPLY);
	req_reply(op->r, ent->xdr_res, res);
	op_free(op);
}

/* Forward the READ as the client sent it; the upstream decides. */
static void read_bypass(struct read_op *op)
{
	read_step(op, NFS3_READ_BYPASS);
	if (nfs3_send(op->ex, NFSPROC3_READ, (xdrproc_t)xdr_READ3args,
		      op_args(op), &op->uc, read_bypass_done, op) != 0)
		read_fail(op, NFS3ERR_JUKEBOX);
}

/* After attributes are fresh: check permission, then plan. */
static void read_continue(struct read_op *op)
{
	const struct cattr *a = cfile_attr(op->f);
	ACCESS3args aa;

	op->gen = cfile_gen(op->f);
	if (!cfile_has_attr(op->f) || a->type != NF3REG) {
		read_bypass(op);
		return;
	}
	if (cfile_access_allows(op->f, &op->uc, ACCESS3_READ)) {
		read_plan(op);
		return;
	}
	if (read_passed(op, NFS3_READ_ACCESS)) {
		read_bypass(op);
		return;
	}
	/* Ask once; if READ is not granted the upstream's READ decides. */
	read_step(op, NFS3_READ_ACCESS);
	aa.object = op_args(op)->file;
	aa.access = ACCESS3_READ;
	nfs3_count_access_check(op->d);
	if (nfs3_send(op->ex, NFSPROC3_ACCESS, (xdrproc_t)xdr_ACCESS3args, &aa,
		      &op->uc, read_access_done, op) != 0)
		read_fail(op, NFS3ERR_JUKEBOX);
}

enum op_status nfs3_op_read(struct req *r)
{
	/* malloc and a whole assignment, not calloc (daemon/rpc/server.c
	 * req_new says why). */
	struct read_op *op = malloc(sizeof(*op));
	READ3args *a = r->args;
	GETATTR3args ga;
	nfsstat3 st;

	if (!op)
		return nfs3_reply_status(r, NFS3ERR_SERVERFAULT);
	*op = (struct read_op){
		.d = r->d,
		.r = r,
		.err = NFS3_OK,
		.outcome = CACHE_MISS,
		.step = NFS3_READ_NSTEPS,
	};
	rangeset_init(&op->need);
	if ((st = nfs3_prepare(r, &op->ex, &op->uc)) != NFS3_OK) {
		free(op);
		return nfs3_reply_status(r, st);
	}
	r->op = op;
	DL_APPEND(r->d->nfs3_read->ops, op);
	/* Offsets no upstream file reaches are the upstream's to answer. */
	if (a->offset >= CACHE_MAX_OFFSET ||
	    a->count > CACHE_MAX_OFFSET - a->offset) {
		read_bypass(op);
		return OP_PENDING;
	}
	op->f = cache_get(r->d->cache, (const uint8_t *)a->file.data.data_val,
			  a->file.data.data_len);
	if (!op->f) {
		read_bypass(op);
		return OP_PENDING;
	}
	if (cfile_attr_fresh(op->f, daemon_now())) {
		read_continue(op);
		return OP_PENDING;
	}
	op->gen = cfile_gen(op->f);
	read_step(op, NFS3_READ_GETATTR);
	ga.object = a->file;
	if (nfs3_send(op->ex, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args, &ga,
		      &op->uc, read_getattr_done, op) != 0) {
		if (stale_attrs_usable(r->d, op->f, stale_refused(op->ex))) {
			op->stale = true;
			read_continue(op);
		} else {
			read_fail(op, NFS3ERR_JUKEBOX);
		}
	}
	return OP_PENDING;
}

void nfs3_count_read(struct daemon *d, unsigned id, enum cache_outcome o,
		     uint64_t cache_bytes, uint64_t upstream_bytes,
		     uint64_t hole_bytes)
{
	struct nfs3_read_stats *s = &d->nfs3_read->stats[id % NFS3_EXPORT_IDS];

	s->reads[o]++;
	s->read_bytes_cache += cache_bytes;
	s->read_bytes_upstream += upstream_bytes;
	s->read_bytes_hole += hole_bytes;
	/* A bypassed READ's bytes came straight from its own upstream READ;
	 * every other outcome's came through a fetch, counted there. */
	if (o == CACHE_BYPASS)
		s->upstream_read_bytes += upstream_bytes;
}

void nfs3_count_fetch(struct daemon *d, unsigned id, uint64_t bytes)
{
	struct nfs3_read_stats *s = &d->nfs3_read->stats[id % NFS3_EXPORT_IDS];

	s->fetches++;
	s->fetch_bytes += bytes;
	s->upstream_read_bytes += bytes;
}

void nfs3_read_stats_export(const struct daemon *d, unsigned id,
			    struct nfs3_read_stats *st)
{
	if (d->nfs3_read)
		*st = d->nfs3_read->stats[id % NFS3_EXPORT_IDS];
	else
		memset(st, 0, sizeof(*st));
}

void nfs3_read_stats_get(const struct daemon *d, struct nfs3_read_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned id = 0; d->nfs3_read && id < NFS3_EXPORT_IDS; id++) {
		const struct nfs3_read_stats *s = &d->nfs3_read->stats[id];

#define X(t, f, k, n, h) st->f += s->f;
#define A(f, len, k, n, l, ls, h) \
		for (unsigned i = 0; i < (len); i++) \
			st->f[i] += s->f[i];
		NFS3_READ_METRICS(X, A)
#undef X
#undef A
	}
}

/* Times op is listed among the waiters of d's fetches. */
static unsigned op_listed(const struct nfs3_read *rd, const struct read_op *op)
{
	const struct fetch *fe;
	unsigned n = 0;

	DL_FOREACH(rd->fetches, fe)
		for (size_t i = 0; i < fe->nwaiters; i++)
			n += fe->waiters[i] == op;
	return n;
}

/* True if op is a READ in flight (on rd's list). */
static bool op_live(const struct nfs3_read *rd, const struct read_op *op)
{
	const struct read_op *o;

	DL_FOREACH(rd->ops, o)
		if (o == op)
			return true;
	return false;
}

const char *nfs3_read_check_why(const struct daemon *d)
{
	const struct nfs3_read *rd = d->nfs3_read;
	const struct read_op *op;
	const struct fetch *fe;

	if (!rd)
		return NULL;
	DL_FOREACH(rd->fetches, fe) {
		if (fe->magic != FETCH_MAGIC)
			return "READ: a fetch on the list is not live (magic)";
		for (size_t i = 0; i < fe->nwaiters; i++)
			if (!op_live(rd, fe->waiters[i]))
				return "READ: a fetch lists a waiter that is "
				       "not a READ in flight";
	}
	DL_FOREACH(rd->ops, op) {
		if (op_listed(rd, op) != op->waiting)
			return "READ: a READ's waiting count is not the "
			       "number of fetches that list it";
		if (op->waiting && op->step != NFS3_READ_FETCH)
			return "READ: a READ waits on fetches outside its "
			       "FETCH step";
	}
	return NULL;
}
