/* SPDX-License-Identifier: MIT */
/*
 * fsx_model: the in-memory model of one file that the fsx-style
 * randomized tests (test_cache_fsx.c, test_holes_fsx.c) drive through the
 * proxy, and the operations and checks they share: seeded offsets and
 * lengths, READ checked against the model, WRITE and SETATTR size applied
 * to it, COMMIT, whole-file comparisons (through a client and on disk),
 * the history of the last operations and the failure report.
 *
 * A test owns one struct fsx_model (static storage: it is zeroed), fills
 * in the fields marked "set by the test", registers its suite with
 * fsx_register() and calls fsx_params() and fsx_open() from its suite
 * init; the suite's cleanup is fsx_close().
 * Its own operation kinds (an enum starting at 0, below FSX_KINDS_MAX),
 * their mix and any extra checks stay in the test: it passes a pick and a
 * run function to fsx_run().
 *
 * Failed checks go through fsx_fail(): one CUnit assertion each, and the
 * first also prints the history and how to reproduce the run. Nothing
 * here asserts on success, so a passing run's assertion count is the
 * test's own.
 */
#ifndef NFSCACHED_TESTS_FSX_MODEL_H
#define NFSCACHED_TESTS_FSX_MODEL_H

#include <stdint.h>
#include <CUnit/CUnit.h>
#include "cachetest_util.h"

/* Operations kept for the failure report. */
#define FSX_HISTORY 24
/* Room for a test's operation kinds (counts[], kind_name[]). */
#define FSX_KINDS_MAX 8

/* One operation, as picked and as reported. */
struct fsx_op {
	uint64_t n;		/* operation number, from 0 */
	unsigned kind;		/* the test's kind, < FSX_KINDS_MAX */
	uint64_t off;		/* bytes */
	uint64_t len;		/* bytes, or the new size for a SETATTR */
	int zeros;		/* a WRITE of zeros */
	int setattr;		/* another writer's SETATTR, not a WRITE */
	uint64_t size_before;	/* the model's size when picked */
};

struct fsx_model {
	/* Set by the test before fsx_params(). */
	const char *tag;	/* message prefix, e.g. "fsx" */
	const char *name;	/* the file, in the export's root */
	const char *const *kind_name;	/* each kind's name, for reports */
	const char *repro_env;	/* more VAR=value to reproduce, or NULL */
	uint64_t io;		/* bytes: the largest READ and WRITE, the
				 * buffers, the comparison chunk; a power
				 * of two */
	/* Set by the test before fsx_open(). */
	uint64_t maxsize;	/* bytes: the file never grows past this */

	/* Set by fsx_params(). */
	uint64_t seed, nops, check_every;
	uint64_t page;		/* the proxy's page size, bytes */

	/* Set by fsx_open(), released by fsx_close(). */
	uint8_t *model;		/* maxsize + io bytes; zeros past size */
	uint8_t *buf, *buf2;	/* io bytes each */
	struct nfsc *px, *dx;	/* through the proxy; Ganesha directly */
	nfs_fh3 fh, fhd;	/* the file, through px and dx */

	/* The run. */
	uint64_t size;		/* the model's size, bytes */
	struct ct_rng rng;
	struct fsx_op hist[FSX_HISTORY];	/* op n at [n % FSX_HISTORY] */
	uint64_t done;		/* operations done */
	uint64_t counts[FSX_KINDS_MAX];	/* operations per kind */
	int failed;		/* a check failed; the run stops */
};

/*
 * Read the run's parameters into m: the seed (NFSC_FSX_SEED if set, else
 * CT_FSX_SEED, else 1), the number of operations (NFSC_FSX_OPS, else
 * nops_default), the checkpoint interval in operations (environment
 * variable check_env, else check_default) and the proxy's page size from
 * /metrics. Returns 0, or -1 if the page size is missing or either
 * number is 0.
 */
int fsx_params(struct fsx_model *m, uint64_t nops_default,
	       const char *check_env, uint64_t check_default);

/*
 * Allocate the model and buffers (m->maxsize and m->io set), seed the
 * generator with m->seed, connect to NFSC_PROXY_URL and NFSC_DIRECT_URL,
 * create m->name (0644) through the proxy and look it up directly.
 * Returns 0, or -1 (m->io not a power of two, m->maxsize 0, or a step
 * failed) with whatever was made left for fsx_close().
 */
int fsx_open(struct fsx_model *m);

/* Release what fsx_open() made (safe on a partial open). */
void fsx_close(struct fsx_model *m);

/*
 * Register CUnit suite `suite` of the one test `test` (function fn), with
 * init as the suite's init and fsx_close(m) as its cleanup, and have
 * program prog print its assertion count at exit. One model per program:
 * m must outlive the run. Returns 0, or -1 if CUnit refused.
 */
int fsx_register(struct fsx_model *m, const char *prog, const char *suite,
		 CU_InitializeFunc init, const char *test, CU_TestFunc fn);

/*
 * Record a failed check: one CUnit assertion (printf-style message,
 * prefixed with the tag and operation number), the history and the
 * reproduce line on the first failure, and m->failed set.
 */
void fsx_fail(struct fsx_model *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- the seeded generator ---- */

/*
 * A length in bytes from 1 to min(max, cap), log-uniform (2^0 .. m->io)
 * so that small and large both occur.
 */
uint64_t fsx_rand_len(struct fsx_model *m, uint64_t max, uint64_t cap);

/* An offset in [0, limit]: within 32 bytes of a page boundary a third of
 * the time. */
uint64_t fsx_rand_off(struct fsx_model *m, uint64_t limit);

/* A READ offset: one in eight at or up to two pages past EOF, else
 * fsx_rand_off(m->size). */
uint64_t fsx_read_off(struct fsx_model *m);

/* A WRITE offset past EOF by less than span bytes, below m->maxsize. */
uint64_t fsx_gap_off(struct fsx_model *m, uint64_t span);

/* Set o->off and o->len for a WRITE anywhere below m->maxsize, of at
 * most cap bytes. */
void fsx_pick_write(struct fsx_model *m, struct fsx_op *o, uint64_t cap);

/* ---- operations, checked and applied to the model ---- */

/*
 * READ [off, off+len) through the proxy (len <= m->io) and check the
 * status, count, eof, bytes and the size in the reply's attributes
 * against the model.
 */
void fsx_read(struct fsx_model *m, uint64_t off, uint64_t len);

/*
 * WRITE len bytes (random from the generator, or zeros) at off through c
 * (UNSTABLE through m->px, FILE_SYNC otherwise) to the file fh; on
 * success apply it to the model. off + len <= m->maxsize.
 */
void fsx_write(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
	       uint64_t off, uint64_t len, int zeros);

/* SETATTR the size (bytes, <= m->maxsize) through c; on success apply it
 * to the model (bytes past the size stay zero). */
void fsx_set_size(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
		  uint64_t size);

/* COMMIT the whole file through the proxy. */
void fsx_commit(struct fsx_model *m);

/* ---- whole-file checks ---- */

/* Read the whole file through c (GETATTR, then READs of m->io bytes) and
 * compare it with the model; who names the reader in messages. */
void fsx_compare_via(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
		     const char *who);

/* Compare the file in the export directory (what Ganesha stored) with the
 * model. */
void fsx_compare_disk(struct fsx_model *m);

/* COMMIT through the proxy (Ganesha then holds all the proxy
 * acknowledged), compare what Ganesha returns directly (who) and the
 * disk with the model. */
void fsx_checkpoint(struct fsx_model *m, const char *who);

/* ---- the run ---- */

/*
 * Run m->nops operations or until a check fails: for each, pick(m, o)
 * fills the history slot o (o->n set, the rest zeroed), its kind is
 * counted, run(m, o) does it; every m->check_every operations
 * fsx_checkpoint(m, who). The final checks are the caller's.
 */
void fsx_run(struct fsx_model *m,
	     void (*pick)(struct fsx_model *m, struct fsx_op *o),
	     void (*run)(struct fsx_model *m, const struct fsx_op *o),
	     const char *who);

#endif
