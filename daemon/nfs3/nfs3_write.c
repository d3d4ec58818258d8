/* SPDX-License-Identifier: MIT */
/*
 * nfs3_write: NFSv3 WRITE and COMMIT (RFC 1813 sections 3.3.7, 3.3.21)
 * with write-back (docs/design.md "Write semantics").
 *
 * WRITE UNSTABLE: the bytes go into the cache, valid and dirty, and the
 * reply goes at once with the proxy's own write verifier (random at every
 * start). WRITE FILE_SYNC or DATA_SYNC: the same, then the reply waits
 * until these bytes are on the upstream's stable storage (the file's
 * write-back runs FILE_SYNC meanwhile, in offset order, so earlier dirty
 * bytes may go first; nothing promises them). A WRITE is absorbed only for
 * a credential with a positive ACCESS result for MODIFY (EXTEND when it
 * grows the file), asked once; otherwise it goes through and the upstream
 * decides. COMMIT: the reply waits until every byte of the file
 * absorbed before the COMMIT arrived is written and committed upstream
 * (RFC 1813 section 3.3.21), not for later WRITEs; when the proxy holds
 * nothing of the file to commit, a writer's COMMIT is answered at once
 * (commit_local_ok).
 * Either reports a write-back failure kept for the file, once. When the
 * cache has no room for the bytes the WRITE goes through to the upstream as
 * FILE_SYNC and is answered FILE_SYNC with the proxy's verifier.
 *
 * wcc data in replies carries the attributes clients are shown (the
 * upstream's, with the size and times of the proxy's absorbed writes), so
 * a client never sees its file's size go back or its mtime jump when the
 * proxy writes back.
 *
 * Each write_op is in one named step (nfs3_write.h NFS3_WRITE_STEPS for
 * a WRITE, NFS3_COMMIT_STEPS for a COMMIT; entered through write_step()
 * or commit_step(), which count the calls in flight by step and log the
 * transition at debug) and a WRITE remembers the steps it passed
 * (`passed`): it revalidates once, asks ACCESS once and counts one wait
 * for room. A step is entered before the call that may answer it, since
 * some answer before they return; ROOM and JOURNAL only once their wait
 * has started (their answers never come first, and a wait that cannot
 * start sends the WRITE or COMMIT elsewhere).
 *
 * Invariants: a write_op holds its file reference until it replies;
 * fstate.reval_inflight is true exactly while one revalidating GETATTR
 * of the file is upstream, and fstate.reval_waiters lists the other
 * WRITEs that wait for its answer; fstate.access_asks lists exactly the
 * WRITEs whose ACCESS is upstream (at most one per credential), each with
 * the WRITEs of its credential that wait for its answer (access_waiters).
 * A WRITE is on at most one of those lists; an answer resumes the WRITE
 * that asked, then its waiters in arrival order. stats.write_steps[s]
 * (commit_steps[s]) is the number of live WRITE (COMMIT) write_ops whose
 * step is s; a write_op has at most one of step and cstep below its
 * NSTEPS.
 *
 * The counters are the daemon's (d->nfs3_write, made by nfs3_write_start,
 * freed by nfs3_write_stop), touched from the event loop only.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/event.h>

#include "attr.h"
#include "daemon.h"
#include "fstate.h"
#include "lcommit.h"
#include "log.h"
#include "nfs3_fwd.h"
#include "nfs3_guard.h"
#include "nfs3_ops.h"
#include "nfs3_write.h"
#include "server.h"
#include "writeback.h"

#define WRITE_ROOM_WAIT 10.0	/* seconds a WRITE waits for cache room:
				 * long enough for a COMMIT of a quarter
				 * of the cache behind a slow link, well
				 * inside a client's RPC timeout (60 s) */

struct write_op {
	struct req *r;
	struct export_rt *ex;
	struct nfs_cred uc;
	struct cfile *f;		/* reference, may be NULL */
	struct cattr pre;		/* shown attributes before */
	bool has_pre;
	enum nfs3_write_step step;	/* NFS3_WRITE_NSTEPS before the first
					 * and for a COMMIT */
	enum nfs3_commit_step cstep;	/* NFS3_COMMIT_NSTEPS before the first
					 * and for a WRITE */
	unsigned passed;		/* bit s: WRITE step s was entered */
	bool access_asker;		/* on fstate.access_asks */
	struct write_op *ask_next;	/* on fstate.access_asks */
	struct write_op *access_waiters; /* wait for this one's ACCESS */
	double room_deadline;		/* when waiting for room ends */
	uint64_t gen;			/* file generation at the GETATTR */
	count3 count;
	struct write_op *reval_next;	/* on fstate.reval_waiters */
	struct write_op *access_next;	/* on an asker's access_waiters */
};

/* WRITE and COMMIT's state in the daemon: their counters. */
struct nfs3_write {
	struct nfs3_write_stats stats;
};

int nfs3_write_start(struct daemon *d)
{
	d->nfs3_write = calloc(1, sizeof(*d->nfs3_write));
	return d->nfs3_write ? 0 : -1;
}

void nfs3_write_stop(struct daemon *d)
{
	free(d->nfs3_write);
	d->nfs3_write = NULL;
}

/* d's WRITE/COMMIT counters. */
static struct nfs3_write_stats *wstats(struct daemon *d)
{
	return &d->nfs3_write->stats;
}

static const char *const write_step_names[] = {
#define X(st, name) name,
	NFS3_WRITE_STEPS(X)
#undef X
};

static const char *const commit_step_names[] = {
#define X(st, name) name,
	NFS3_COMMIT_STEPS(X)
#undef X
};

const char *nfs3_write_step_name(enum nfs3_write_step s)
{
	return (unsigned)s < NFS3_WRITE_NSTEPS ? write_step_names[s] : "?";
}

const char *nfs3_commit_step_name(enum nfs3_commit_step s)
{
	return (unsigned)s < NFS3_COMMIT_NSTEPS ? commit_step_names[s] : "?";
}

void nfs3_write_steps_inflight(const struct daemon *d,
			       uint64_t n[NFS3_WRITE_NSTEPS])
{
	if (!d->nfs3_write) {
		memset(n, 0, sizeof(uint64_t) * NFS3_WRITE_NSTEPS);
		return;
	}
	memcpy(n, d->nfs3_write->stats.write_steps,
	       sizeof(d->nfs3_write->stats.write_steps));
}

void nfs3_commit_steps_inflight(const struct daemon *d,
				uint64_t n[NFS3_COMMIT_NSTEPS])
{
	if (!d->nfs3_write) {
		memset(n, 0, sizeof(uint64_t) * NFS3_COMMIT_NSTEPS);
		return;
	}
	memcpy(n, d->nfs3_write->stats.commit_steps,
	       sizeof(d->nfs3_write->stats.commit_steps));
}

/* Move WRITE op into step s: count it there, log the transition at
 * debug. */
static void write_step(struct write_op *op, enum nfs3_write_step s)
{
	if (op->step < NFS3_WRITE_NSTEPS)
		wstats(op->r->d)->write_steps[op->step]--;
	log_debug("WRITE xid %08x: %s -> %s", op->r->call.xid,
		  op->step < NFS3_WRITE_NSTEPS ? write_step_names[op->step]
					       : "start", write_step_names[s]);
	op->step = s;
	op->passed |= 1u << s;
	wstats(op->r->d)->write_steps[s]++;
}

/* True if WRITE op entered step s before. */
static bool write_passed(const struct write_op *op, enum nfs3_write_step s)
{
	return op->passed & (1u << s);
}

/* Move COMMIT op into step s: count it there, log the transition at
 * debug. */
static void commit_step(struct write_op *op, enum nfs3_commit_step s)
{
	if (op->cstep < NFS3_COMMIT_NSTEPS)
		wstats(op->r->d)->commit_steps[op->cstep]--;
	log_debug("COMMIT xid %08x: %s -> %s", op->r->call.xid,
		  op->cstep < NFS3_COMMIT_NSTEPS ? commit_step_names[op->cstep]
						 : "start",
		  commit_step_names[s]);
	op->cstep = s;
	wstats(op->r->d)->commit_steps[s]++;
}

/* Reverse the list of write_ops starting at w, linked through the
 * struct write_op * member at byte offset link; return its new head. */
static struct write_op *write_ops_reverse(struct write_op *w, size_t link)
{
	struct write_op *prev = NULL;

	while (w) {
		struct write_op **np = (struct write_op **)((char *)w + link);
		struct write_op *next = *np;

		*np = prev;
		prev = w;
		w = next;
	}
	return prev;
}

/* Release op (not the request). */
static void op_free(struct write_op *op)
{
	if (op->step < NFS3_WRITE_NSTEPS)
		wstats(op->r->d)->write_steps[op->step]--;
	if (op->cstep < NFS3_COMMIT_NSTEPS)
		wstats(op->r->d)->commit_steps[op->cstep]--;
	if (op->f)
		cfile_put(op->r->d->cache, &op->f);
	free(op);
}

/* Fill a wcc_data from the shown attributes before and now. */
static void wcc_fill(const struct write_op *op, wcc_data *w)
{
	memset(w, 0, sizeof(*w));
	if (op->has_pre) {
		w->before.attributes_follow = TRUE;
		w->before.pre_op_attr_u.attributes.size = op->pre.size;
		w->before.pre_op_attr_u.attributes.mtime.seconds = op->pre.mtime.sec;
		w->before.pre_op_attr_u.attributes.mtime.nseconds = op->pre.mtime.nsec;
		w->before.pre_op_attr_u.attributes.ctime.seconds = op->pre.ctime.sec;
		w->before.pre_op_attr_u.attributes.ctime.nseconds = op->pre.ctime.nsec;
	}
	if (op->f && cfile_has_attr(op->f)) {
		w->after.attributes_follow = TRUE;
		attr_to_fattr3(cfile_attr(op->f), &w->after.post_op_attr_u.attributes);
	}
}

/* Reply a WRITE of d and release op. */
static void write_reply(struct daemon *d, struct write_op *op, nfsstat3 st,
			stable_how how)
{
	struct req *r = op->r;
	WRITE3res res;

	write_step(op, NFS3_WRITE_REPLY);
	memset(&res, 0, sizeof(res));
	res.status = st;
	wcc_fill(op, &res.WRITE3res_u.resok.file_wcc);
	if (st == NFS3_OK) {
		res.WRITE3res_u.resok.count = op->count;
		res.WRITE3res_u.resok.committed = how;
		memcpy(res.WRITE3res_u.resok.verf, writeback_verf(d),
		       NFS3_WRITEVERFSIZE);
	} else {
		wstats(d)->errors_reported++;
		nfs3_note_status(d, st);
	}
	op_free(op);
	req_reply(r, (xdrproc_t)xdr_WRITE3res, &res);
}

/* A FILE_SYNC or DATA_SYNC WRITE's bytes reached stable storage. */
static void write_synced(struct daemon *d, nfsstat3 st, void *arg)
{
	write_reply(d, arg, st, FILE_SYNC);
}

/* A written-through WRITE may be answered (lcommit_ack_wait). */
static void write_through_fenced(struct daemon *d, nfsstat3 st, void *arg)
{
	write_reply(d, arg, st, FILE_SYNC);
}

/* The pass-through WRITE came back. */
static void write_through_done(enum upstream_status status, void *decoded,
			       void *arg)
{
	struct write_op *op = arg;
	struct daemon *d = op->r->d;
	WRITE3res *res = NULL;
	WRITE3args *a = op->r->args;
	struct cwcc pre_tmp;
	struct cattr post_tmp;
	uint64_t rw0 = lcommit_rewrites(d);
	nfsstat3 st;

	if (status == UPSTREAM_OK)
		res = decoded;
	st = res ? res->status : nfs3_upstream_failure(status);
	if (op->f) {
		cfile_mutation_end(d->cache, op->f,
			res ? attr_from_pre_op(&res->WRITE3res_u.resok.file_wcc.before, &pre_tmp) : NULL,
			res ? attr_from_post_op(&res->WRITE3res_u.resok.file_wcc.after, &post_tmp) : NULL,
			daemon_now(), daemon_ac(op->ex, NF3REG));
		if (st == NFS3_OK) {
			uint32_t n = res->WRITE3res_u.resok.count < op->count
					     ? res->WRITE3res_u.resok.count
					     : op->count;

			cache_write(d->cache, op->f, a->offset,
				    (const uint8_t *)a->data.data_val, n,
				    &op->uc);
			/* Stable upstream now: no journal record may bring
			 * older bytes back over it. */
			if (n)
				lcommit_rewrite(d, op->f, a->offset, n);
		}
	}
	if (st == NFS3_OK && res->WRITE3res_u.resok.count < op->count)
		op->count = res->WRITE3res_u.resok.count;
	/* The upstream let this credential write the file. */
	if (st == NFS3_OK && op->f)
		cfile_access_record(op->f, &op->uc, ACCESS3_MODIFY | ACCESS3_EXTEND,
				    ACCESS3_MODIFY | ACCESS3_EXTEND);
	/* Stable: answered once no journal record can bring older bytes
	 * back: its rewrite durable, no fence due (lcommit_ack_wait). */
	if (st != NFS3_OK) {
		write_reply(d, op, st, FILE_SYNC);
		return;
	}
	write_step(op, NFS3_WRITE_FENCE);
	if (lcommit_ack_wait(d, rw0, write_through_fenced, op) != 0)
		write_reply(d, op, st, FILE_SYNC);
}

/* No room in d's cache: write through to the upstream's stable storage. */
static void write_through(struct daemon *d, struct write_op *op)
{
	WRITE3args a = *(WRITE3args *)op->r->args;

	wstats(d)->write_through++;
	write_step(op, NFS3_WRITE_THROUGH);
	a.stable = FILE_SYNC;
	a.count = op->count;
	if (op->f)
		cfile_mutation_begin(op->f);
	if (nfs3_send(op->ex, NFSPROC3_WRITE, (xdrproc_t)xdr_WRITE3args, &a,
		      &op->uc, write_through_done, op) != 0) {
		if (op->f)
			cfile_mutation_end(d->cache, op->f, NULL, NULL,
					   daemon_now(), daemon_ac(op->ex, NF3REG));
		write_reply(d, op, NFS3ERR_JUKEBOX, FILE_SYNC);
	}
}

/* The proxy's wall clock as an NFS time. */
static struct ctime3 wall_now(void)
{
	struct timespec ts;
	struct ctime3 t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t.sec = (uint32_t)ts.tv_sec;
	t.nsec = (uint32_t)ts.tv_nsec;
	return t;
}

static void write_continue(struct write_op *op);
static void write_revalidate(struct write_op *op);

/* Answer a FILE_SYNC or DATA_SYNC WRITE once its bytes are stable
 * upstream. */
static void write_sync_upstream(struct write_op *op)
{
	WRITE3args *a = op->r->args;

	write_step(op, NFS3_WRITE_WRITEBACK);
	if (lcommit_upstream_wait(op->r->d, op->f, op->ex, WB_WAIT_RANGE,
				  a->offset, op->count, write_synced, op) != 0)
		write_reply(op->r->d, op, NFS3ERR_SERVERFAULT, FILE_SYNC);
}

/* A FILE_SYNC WRITE's local sync (commit = "local") ended. */
static void write_local_done(struct daemon *d, bool durable, void *arg)
{
	struct write_op *op = arg;

	if (!durable) {
		write_sync_upstream(op);
		return;
	}
	lcommit_count(d, false);
	write_reply(d, op, NFS3_OK, FILE_SYNC);
}
static void write_no_room(struct write_op *op);

/* An ACCESS for op's permission check came back (op's own or the one it
 * waited for): go on, or fail as the call did. */
static void write_access_resume(struct write_op *op,
				enum upstream_status status)
{
	if (status != UPSTREAM_OK) {
		write_reply(op->r->d, op, nfs3_upstream_failure(status),
			    UNSTABLE);
		return;
	}
	write_continue(op);
}

/* ACCESS reply for a WRITE's permission check: answers op and every WRITE
 * of its credential that waited for it. */
static void write_access_done(enum upstream_status status, void *decoded,
			      void *arg)
{
	struct write_op *op = arg;
	struct fstate *fs = op->access_asker ? fstate_find(op->f) : NULL;
	ACCESS3res *res = NULL;
	struct write_op *w = op->access_waiters, *next, **pp;

	if (status == UPSTREAM_OK)
		res = decoded;
	if (res && res->status == NFS3_OK)
		cfile_access_record(op->f, &op->uc, ACCESS3_MODIFY | ACCESS3_EXTEND,
				    res->ACCESS3res_u.resok.access);
	op->access_waiters = NULL;
	if (fs) {
		for (pp = &fs->access_asks; *pp && *pp != op; pp = &(*pp)->ask_next)
			;
		if (*pp)
			*pp = op->ask_next;
		op->ask_next = NULL;
		op->access_asker = false;
		fstate_release(op->r->d, op->f);
	}
	/* In arrival order: op asked first; waiters were pushed at the
	 * head. Overlapping WRITEs then land as the client sent them. */
	write_access_resume(op, status);
	for (w = write_ops_reverse(w, offsetof(struct write_op, access_next));
	     w; w = next) {
		next = w->access_next;
		w->access_next = NULL;
		write_access_resume(w, status);
	}
}

/*
 * Whether op's caller may have its write absorbed: a positive cached
 * ACCESS result for MODIFY (and EXTEND when the write grows the file). If
 * none is cached, ask ACCESS upstream once (returns false; the reply
 * continues the WRITE), or wait for the ACCESS another WRITE of the same
 * credential has upstream: a client's pipelined WRITEs, read in one loop
 * turn, would otherwise send one each. Without a grant the WRITE goes
 * through to the upstream, which decides (an owner may write a file its
 * mode denies).
 */
static bool write_allowed(struct write_op *op, bool *asked)
{
	WRITE3args *a = op->r->args;
	uint32_t need = ACCESS3_MODIFY;
	struct fstate *fs;
	ACCESS3args aa;

	*asked = false;
	if (a->offset + op->count > cfile_attr(op->f)->size)
		need |= ACCESS3_EXTEND;
	if (cfile_access_allows(op->f, &op->uc, need) ||
	    write_passed(op, NFS3_WRITE_ACCESS))
		return cfile_access_allows(op->f, &op->uc, need);
	write_step(op, NFS3_WRITE_ACCESS);
	fs = fstate_get(op->r->d, op->f, op->ex);
	for (struct write_op *k = fs ? fs->access_asks : NULL; k; k = k->ask_next)
		if (nfs_cred_eq(&k->uc, &op->uc)) {
			op->access_next = k->access_waiters;
			k->access_waiters = op;
			*asked = true;
			return false;
		}
	aa.object = a->file;
	aa.access = ACCESS3_MODIFY | ACCESS3_EXTEND;
	nfs3_count_access_check(op->r->d);
	if (nfs3_send(op->ex, NFSPROC3_ACCESS, (xdrproc_t)xdr_ACCESS3args, &aa,
		      &op->uc, write_access_done, op) != 0) {
		if (fs)
			fstate_release(op->r->d, op->f);
		return false;
	}
	if (fs) {
		op->ask_next = fs->access_asks;
		fs->access_asks = op;
		op->access_asker = true;
	}
	*asked = true;
	return false;
}

/* A room wait ended: try the cache again, or go through. */
static void write_room_cb(struct daemon *d, bool room, void *arg)
{
	struct write_op *op = arg;

	if (room)
		write_continue(op);
	else
		write_through(d, op);
}

/*
 * The cache has no room for the bytes (every page holds data not yet
 * committed upstream). Like the kernel's balance_dirty_pages, the writer
 * waits while write-back frees pages (for at most WRITE_ROOM_WAIT in all),
 * woken as soon as a page can be had; after that, or when nothing is
 * being written back, the WRITE goes through.
 */
static void write_no_room(struct write_op *op)
{
	struct daemon *d = op->r->d;
	double now = daemon_now();

	if (!op->room_deadline)
		op->room_deadline = now + WRITE_ROOM_WAIT;
	if (now < op->room_deadline && !writeback_clean(d) &&
	    writeback_room_wait(d, op->room_deadline, write_room_cb, op) == 0) {
		/* write_room_cb comes after this returns, never before. */
		if (!write_passed(op, NFS3_WRITE_ROOM))
			wstats(d)->waited_for_room++;
		write_step(op, NFS3_WRITE_ROOM);
		return;
	}
	write_through(d, op);
}

/* Attributes known: absorb the write. */
static void write_continue(struct write_op *op)
{
	struct daemon *d = op->r->d;
	WRITE3args *a = op->r->args;
	struct fstate *fs;
	bool asked;
	int err;

	if (cfile_attr(op->f)->type != NF3REG) {
		write_through(d, op);
		return;
	}
	/* A write past the end leaves a gap the cache will call a hole:
	 * take the size from the upstream now, so bytes another writer put
	 * there are seen (WRITE replies carry no pre-op size to check). */
	if (a->offset > cfile_attr(op->f)->size &&
	    !write_passed(op, NFS3_WRITE_GETATTR)) {
		write_revalidate(op);
		return;
	}
	if (!write_allowed(op, &asked)) {
		if (!asked)
			write_through(d, op);
		return;
	}
	err = cfile_wb_error_take(op->f);

	op->pre = *cfile_attr(op->f);
	op->has_pre = true;
	if (err) {
		write_reply(d, op, (nfsstat3)err, UNSTABLE);
		return;
	}
	write_step(op, NFS3_WRITE_ABSORB);
	if (cache_write_dirty(d->cache, op->f, a->offset,
			      (const uint8_t *)a->data.data_val, op->count,
			      &op->uc, daemon_now(), wall_now()) != 0) {
		write_no_room(op);
		return;
	}
	wstats(d)->absorbed++;
	wstats(d)->absorbed_bytes += op->count;
	if (!(fs = fstate_get(d, op->f, op->ex))) {
		write_reply(d, op, NFS3ERR_SERVERFAULT, UNSTABLE);
		return;
	}
	fs->last_absorb = daemon_now();
	lcommit_note_write(op->f, a->offset, op->count);
	if (a->stable == UNSTABLE) {
		write_reply(d, op, NFS3_OK, UNSTABLE);
		return;
	}
	/* write_local_done comes after lcommit_sync returns, never before. */
	if (lcommit_on(d, op->ex) &&
	    lcommit_sync(d, op->f, op->ex, a->offset, op->count,
			 write_local_done, op) == 0) {
		write_step(op, NFS3_WRITE_JOURNAL);
		return;
	}
	write_sync_upstream(op);
}

/* A revalidation answered: go on with the WRITE, or (ok false) let the
 * upstream's WRITE tell what is wrong. */
static void write_resume(struct write_op *op, bool ok)
{
	if (ok)
		write_continue(op);
	else
		write_through(op->r->d, op);
}

/* The revalidating GETATTR of write_revalidate came back: answers op and
 * every WRITE that waited for it. */
static void write_getattr_done(enum upstream_status status, void *decoded,
			       void *arg)
{
	struct write_op *op = arg;
	struct fstate *fs = fstate_find(op->f);
	GETATTR3res *res = NULL;
	struct write_op *w, *next;
	struct cattr at;
	bool ok;

	if (status == UPSTREAM_OK)
		res = decoded;
	ok = res && res->status == NFS3_OK;
	if (ok) {
		attr_from_fattr3(&res->GETATTR3res_u.resok.obj_attributes, &at);
		cfile_attr_observe_gen(op->r->d->cache, op->f, op->gen, &at,
				       daemon_now(), daemon_ac(op->ex, at.type));
	}
	/* The WRITEs that arrived while it was upstream take this answer
	 * too: it is no older than one of their own would have been when
	 * they arrived. */
	w = fs ? fs->reval_waiters : NULL;
	if (fs) {
		fs->reval_waiters = NULL;
		fs->reval_inflight = false;
		/* A state made only for the GETATTR goes now. */
		fstate_release(op->r->d, op->f);
	}
	/* In arrival order, as for the ACCESS waiters. */
	write_resume(op, ok);
	for (w = write_ops_reverse(w, offsetof(struct write_op, reval_next));
	     w; w = next) {
		next = w->reval_next;
		w->reval_next = NULL;
		write_resume(w, ok);
	}
}

enum op_status nfs3_op_write(struct req *r)
{
	struct write_op *op = calloc(1, sizeof(*op));
	WRITE3args *a = r->args;
	nfsstat3 st;

	if (!op)
		return nfs3_reply_status(r, NFS3ERR_SERVERFAULT);
	op->r = r;
	op->step = NFS3_WRITE_NSTEPS;
	op->cstep = NFS3_COMMIT_NSTEPS;
	if ((st = nfs3_prepare(r, &op->ex, &op->uc)) != NFS3_OK) {
		free(op);
		return nfs3_reply_status(r, st);
	}
	op->count = a->count < a->data.data_len ? a->count : a->data.data_len;
	wstats(r->d)->client_writes++;
	wstats(r->d)->client_write_bytes += op->count;
	/* Bytes past 2^64 exist nowhere (Ganesha answers NFS3ERR_INVAL too);
	 * bytes past the largest off_t go through, for the upstream to
	 * refuse (NFS3ERR_FBIG) or take. */
	if (a->offset > UINT64_MAX - op->count) {
		write_reply(r->d, op, NFS3ERR_INVAL, UNSTABLE);
		return OP_PENDING;
	}
	if (a->offset + op->count > CACHE_MAX_OFFSET) {
		write_through(r->d, op);
		return OP_PENDING;
	}
	op->f = cache_get(r->d->cache, (const uint8_t *)a->file.data.data_val,
			  a->file.data.data_len);
	if (!op->f) {
		write_through(r->d, op);
		return OP_PENDING;
	}
	/* Fresh attributes first: another writer's change must be seen. */
	if (cfile_attr_fresh(op->f, daemon_now()))
		write_continue(op);
	else
		write_revalidate(op);
	return OP_PENDING;
}

/*
 * GETATTR the WRITE's file, then continue. While one WRITE's GETATTR is
 * upstream, other WRITEs of the file wait for its answer instead of
 * sending their own (many writers in flight past the end of file would
 * otherwise send one each).
 */
static void write_revalidate(struct write_op *op)
{
	struct fstate *fs = fstate_get(op->r->d, op->f, op->ex);
	GETATTR3args ga;

	write_step(op, NFS3_WRITE_GETATTR);
	if (fs && fs->reval_inflight) {
		op->reval_next = fs->reval_waiters;
		fs->reval_waiters = op;
		wstats(op->r->d)->revalidations_shared++;
		return;
	}
	wstats(op->r->d)->revalidations++;
	ga.object = ((WRITE3args *)op->r->args)->file;
	op->gen = cfile_gen(op->f);
	if (nfs3_send(op->ex, NFSPROC3_GETATTR, (xdrproc_t)xdr_GETATTR3args, &ga,
		      &op->uc, write_getattr_done, op) != 0) {
		write_reply(op->r->d, op, NFS3ERR_JUKEBOX, UNSTABLE);
		return;
	}
	if (fs)
		fs->reval_inflight = true;
}

/* Reply a COMMIT of d and release op. */
static void commit_reply(struct daemon *d, struct write_op *op, nfsstat3 st)
{
	struct req *r = op->r;
	COMMIT3res res;

	commit_step(op, NFS3_COMMIT_REPLY);
	memset(&res, 0, sizeof(res));
	res.status = st;
	if (op->f && cfile_has_attr(op->f)) {
		op->pre = *cfile_attr(op->f);
		op->has_pre = true;
	}
	wcc_fill(op, &res.COMMIT3res_u.resok.file_wcc);
	if (st == NFS3_OK)
		memcpy(res.COMMIT3res_u.resok.verf, writeback_verf(d),
		       NFS3_WRITEVERFSIZE);
	else {
		wstats(d)->errors_reported++;
		nfs3_note_status(d, st);
	}
	op_free(op);
	req_reply(r, (xdrproc_t)xdr_COMMIT3res, &res);
}

/* Everything the file held is committed upstream (or failed). */
static void commit_done(struct daemon *d, nfsstat3 st, void *arg)
{
	commit_reply(d, arg, st);
}

/* Answer a COMMIT once what it covers is committed upstream. */
static void commit_upstream(struct write_op *op)
{
	commit_step(op, NFS3_COMMIT_WRITEBACK);
	if (lcommit_upstream_wait(op->r->d, op->f, op->ex, WB_WAIT_ALL, 0, 0,
				  commit_done, op) != 0)
		commit_reply(op->r->d, op, NFS3ERR_SERVERFAULT);
}

/* A COMMIT's local sync (commit = "local") ended. */
static void commit_local_done(struct daemon *d, bool durable, void *arg)
{
	struct write_op *op = arg;

	if (!durable) {
		commit_upstream(op);
		return;
	}
	lcommit_count(d, true);
	commit_reply(d, op, NFS3_OK);
}

/*
 * Whether a COMMIT of f by cr can be answered here with the proxy's
 * verifier, with no upstream call (issue 16): f is a regular file with
 * fresh attributes, cr is known to may MODIFY it (an ACCESS or WRITE
 * result), and the proxy holds nothing of it to commit: no byte dirty,
 * being written or UNSTABLE upstream, no WRITE or COMMIT of it in flight
 * (fstate_busy) and no write-back failure to report. Every byte a client
 * wrote through the proxy is then on the upstream's stable storage: WRITEs
 * that are not absorbed go FILE_SYNC, and an absorbed byte leaves
 * UNSTABLE only when a COMMIT upstream returned the verifier its WRITE
 * did (writeback.c). What the COMMIT covers (RFC 1813 section 3.3.21,
 * the writes acknowledged before it) is therefore stable. f may be NULL.
 */
static bool commit_local_ok(struct cfile *f, const struct nfs_cred *cr)
{
	return f && cfile_has_attr(f) && cfile_attr(f)->type == NF3REG &&
	       cfile_attr_fresh(f, daemon_now()) && !fstate_busy(f) &&
	       !cfile_wb_error_peek(f) &&
	       cfile_access_allows(f, cr, ACCESS3_MODIFY);
}

enum op_status nfs3_op_commit(struct req *r)
{
	struct write_op *op = calloc(1, sizeof(*op));
	COMMIT3args *a = r->args;
	nfsstat3 st;
	int err;

	if (!op)
		return nfs3_reply_status(r, NFS3ERR_SERVERFAULT);
	op->r = r;
	op->step = NFS3_WRITE_NSTEPS;
	op->cstep = NFS3_COMMIT_NSTEPS;
	if ((st = nfs3_prepare(r, &op->ex, &op->uc)) != NFS3_OK) {
		free(op);
		return nfs3_reply_status(r, st);
	}
	wstats(r->d)->client_commits++;
	op->f = cache_find(r->d->cache, (const uint8_t *)a->file.data.data_val,
			   a->file.data.data_len);
	if (commit_local_ok(op->f, &op->uc)) {
		wstats(r->d)->commits_local++;
		commit_reply(r->d, op, NFS3_OK);
		return OP_PENDING;
	}
	if (!op->f || (!cfile_wb_error_peek(op->f) && !cfile_has_wb(op->f))) {
		/* Nothing held for it, but not known to be a file this
		 * credential may write: the upstream answers (directories,
		 * stale handles, permissions), under the proxy's verifier. */
		struct export_rt *ex = op->ex;
		struct nfs_cred uc = op->uc;

		log_debug("COMMIT xid %08x: start -> forwarded", r->call.xid);
		op_free(op);
		return nfs3_forward_prepared(r, ex, &uc);
	}
	if ((err = cfile_wb_error_take(op->f)) != 0) {
		commit_reply(r->d, op, (nfsstat3)err);
		return OP_PENDING;
	}
	/* commit_local_done comes after lcommit_sync returns, never before. */
	if (lcommit_on(r->d, op->ex) &&
	    lcommit_sync(r->d, op->f, op->ex, 0, 0, commit_local_done,
			 op) == 0) {
		commit_step(op, NFS3_COMMIT_JOURNAL);
		return OP_PENDING;
	}
	commit_upstream(op);
	return OP_PENDING;
}

void nfs3_write_stats_get(const struct daemon *d, struct nfs3_write_stats *st)
{
	if (d->nfs3_write)
		*st = d->nfs3_write->stats;
	else
		memset(st, 0, sizeof(*st));
}
