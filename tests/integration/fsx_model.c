/* SPDX-License-Identifier: MIT */
/*
 * fsx_model: the model of one file for the fsx-style tests, its seeded
 * operations and its checks (see fsx_model.h).
 *
 * Invariants: m->size <= m->maxsize, and model[size, maxsize + io) is all
 * zeros, so a READ past EOF or a comparison compares with zeros and an
 * extension needs no clearing. The model changes only after the server
 * said OK. The struct owns the model, the buffers, both connections and
 * both handles; fsx_close() releases them (the registered model's, as
 * the suite's cleanup).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "fsx_model.h"

int fsx_params(struct fsx_model *m, uint64_t nops_default,
	       const char *check_env, uint64_t check_default)
{
	const char *s = getenv("NFSC_FSX_SEED");

	m->seed = s && *s ? ct_env_u64("NFSC_FSX_SEED", 1)
			  : ct_env_u64("CT_FSX_SEED", 1);
	m->nops = ct_env_u64("NFSC_FSX_OPS", nops_default);
	m->check_every = ct_env_u64(check_env, check_default);
	m->page = ct_metric_now(CT_PAGE_SIZE);
	if (m->page == CT_ABSENT || !m->page || !m->check_every)
		return -1;
	return 0;
}

int fsx_open(struct fsx_model *m)
{
	if (!m->io || (m->io & (m->io - 1)) || !m->maxsize)
		return -1;
	m->model = calloc(m->maxsize + m->io, 1);
	m->buf = malloc(m->io);
	m->buf2 = malloc(m->io);
	if (!m->model || !m->buf || !m->buf2)
		return -1;
	ct_rng_seed(&m->rng, m->seed);
	m->px = nfsc_connect(ct_env("NFSC_PROXY_URL"), 0, 0);
	m->dx = nfsc_connect(ct_env("NFSC_DIRECT_URL"), 0, 0);
	if (!m->px || !m->dx ||
	    nfsc_create(m->px, nfsc_root(m->px), m->name, 0644, &m->fh,
			NULL) != NFS3_OK ||
	    ct_lookup_root(m->dx, m->name, &m->fhd) != NFS3_OK)
		return -1;
	return 0;
}

void fsx_close(struct fsx_model *m)
{
	nfsc_fh_free(&m->fh);
	nfsc_fh_free(&m->fhd);
	nfsc_close(&m->px);
	nfsc_close(&m->dx);
	free(m->model);
	free(m->buf);
	free(m->buf2);
	m->model = m->buf = m->buf2 = NULL;
}

/* The model fsx_register() registered, for the suite's cleanup. */
static struct fsx_model *registered;

/* Release the registered model (the suite's cleanup). */
static int suite_cleanup(void)
{
	fsx_close(registered);
	return 0;
}

int fsx_register(struct fsx_model *m, const char *prog, const char *suite,
		 CU_InitializeFunc init, const char *test, CU_TestFunc fn)
{
	CU_pSuite s;

	registered = m;
	tcheck_report_at_exit(prog);
	s = CU_add_suite(suite, init, suite_cleanup);
	if (!s || !CU_add_test(s, test, fn))
		return -1;
	return 0;
}

/* Print the last operations and how to reproduce the run. */
static void dump_history(const struct fsx_model *m)
{
	uint64_t first = m->done >= FSX_HISTORY ? m->done - FSX_HISTORY + 1 : 0;

	fprintf(stderr, "%s: seed %llu failed at operation %llu; the last "
		"operations:\n", m->tag, (unsigned long long)m->seed,
		(unsigned long long)m->done);
	for (uint64_t i = first; i <= m->done && i < m->nops; i++) {
		const struct fsx_op *o = &m->hist[i % FSX_HISTORY];

		fprintf(stderr, "%s:   #%llu %s%s off %llu len %llu (size "
			"before %llu)\n", m->tag, (unsigned long long)o->n,
			m->kind_name[o->kind], o->zeros ? " (zeros)" :
			o->setattr ? " (SETATTR)" : "",
			(unsigned long long)o->off, (unsigned long long)o->len,
			(unsigned long long)o->size_before);
	}
	fprintf(stderr, "%s: reproduce with NFSC_FSX_SEED=%llu "
		"NFSC_FSX_OPS=%llu%s%s\n", m->tag,
		(unsigned long long)m->seed, (unsigned long long)m->nops,
		m->repro_env ? " " : "", m->repro_env ? m->repro_env : "");
}

void fsx_fail(struct fsx_model *m, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	CHECK_MSG(0, "%s op %llu: %s", m->tag, (unsigned long long)m->done,
		  msg);
	if (!m->failed)
		dump_history(m);
	m->failed = 1;
}

uint64_t fsx_rand_len(struct fsx_model *m, uint64_t max, uint64_t cap)
{
	unsigned top = (unsigned)__builtin_ctzll(m->io);	/* io = 2^top */
	unsigned bits = (unsigned)ct_rng_below(&m->rng, top + 1);
	uint64_t len = (1ull << bits) + ct_rng_below(&m->rng, 1ull << bits);

	if (len > cap)
		len = cap;
	if (len > max)
		len = max;
	return len ? len : 1;
}

uint64_t fsx_rand_off(struct fsx_model *m, uint64_t limit)
{
	uint64_t off;

	if (ct_rng_below(&m->rng, 3) == 0) {
		uint64_t pages = limit / m->page + 1;
		uint64_t edge = ct_rng_below(&m->rng, pages) * m->page;

		off = edge + ct_rng_below(&m->rng, 64) - 32;
		if (off > edge + 32)	/* wrapped below 0 */
			off = 0;
	} else {
		off = ct_rng_below(&m->rng, limit + 1);
	}
	return off > limit ? limit : off;
}

uint64_t fsx_read_off(struct fsx_model *m)
{
	return ct_rng_below(&m->rng, 8) == 0
		       ? m->size + ct_rng_below(&m->rng, 2 * m->page)
		       : fsx_rand_off(m, m->size);
}

uint64_t fsx_gap_off(struct fsx_model *m, uint64_t span)
{
	uint64_t off = m->size + ct_rng_below(&m->rng, span);

	return off >= m->maxsize ? m->maxsize - 1 : off;
}

void fsx_pick_write(struct fsx_model *m, struct fsx_op *o, uint64_t cap)
{
	o->off = fsx_rand_off(m, m->maxsize - 1);
	o->len = fsx_rand_len(m, m->maxsize - o->off, cap);
}

/* Fill buf[0..n) with random bytes, or zeros. */
static void fill(struct fsx_model *m, uint8_t *buf, uint64_t n, int zeros)
{
	if (zeros) {
		memset(buf, 0, n);
		return;
	}
	for (uint64_t i = 0; i < n; i += 8) {
		uint64_t x = ct_rng_next(&m->rng);

		memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
	}
}

void fsx_read(struct fsx_model *m, uint64_t off, uint64_t len)
{
	uint64_t size = m->size;
	uint64_t want = off >= size ? 0 : size - off < len ? size - off : len;
	uint32_t count = 0;
	int eof = 0, st;
	fattr3 a;
	size_t d;

	memset(m->buf, 0xA5, len);
	st = ct_read(m->px, &m->fh, off, (uint32_t)len, m->buf, &count, &eof,
		     &a);
	if (st != NFS3_OK) {
		fsx_fail(m, "READ off %llu len %llu: %s",
			 (unsigned long long)off, (unsigned long long)len,
			 nfsc_stat_name(st));
		return;
	}
	if (count != want)
		fsx_fail(m, "READ off %llu len %llu: count %u, want %llu "
			 "(size %llu)", (unsigned long long)off,
			 (unsigned long long)len, count,
			 (unsigned long long)want, (unsigned long long)size);
	else if ((d = ct_first_diff(m->buf, m->model + off, count)) != count)
		fsx_fail(m, "READ off %llu len %llu: byte at %llu is 0x%02x, "
			 "want 0x%02x", (unsigned long long)off,
			 (unsigned long long)len, (unsigned long long)(off + d),
			 m->buf[d], m->model[off + d]);
	/* eof: set on a short read; clear when bytes remain past it. */
	if ((count < len && !eof) || (off + count < size && eof))
		fsx_fail(m, "READ off %llu len %llu: count %u eof %d with "
			 "size %llu", (unsigned long long)off,
			 (unsigned long long)len, count, eof,
			 (unsigned long long)size);
	if (a.size != size)
		fsx_fail(m, "READ off %llu len %llu: attributes say size %llu, "
			 "want %llu", (unsigned long long)off,
			 (unsigned long long)len, (unsigned long long)a.size,
			 (unsigned long long)size);
}

void fsx_write(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
	       uint64_t off, uint64_t len, int zeros)
{
	uint32_t count = 0;
	int st;

	fill(m, m->buf, len, zeros);
	st = nfsc_write(c, fh, off, m->buf, (uint32_t)len,
			c == m->px ? UNSTABLE : FILE_SYNC, &count, NULL, NULL);
	if (st != NFS3_OK || count != len) {
		fsx_fail(m, "WRITE off %llu len %llu%s: %s count %u",
			 (unsigned long long)off, (unsigned long long)len,
			 c == m->px ? "" : " (direct)", nfsc_stat_name(st),
			 count);
		return;
	}
	memcpy(m->model + off, m->buf, len);
	if (off + len > m->size)
		m->size = off + len;
}

void fsx_set_size(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
		  uint64_t size)
{
	int st = ct_set_size(c, fh, size);

	if (st != NFS3_OK) {
		fsx_fail(m, "SETATTR size %llu%s: %s", (unsigned long long)size,
			 c == m->px ? "" : " (direct)", nfsc_stat_name(st));
		return;
	}
	if (size < m->size)
		memset(m->model + size, 0, m->size - size);
	m->size = size;
}

void fsx_commit(struct fsx_model *m)
{
	int st = nfsc_commit(m->px, &m->fh, 0, 0, NULL);

	if (st != NFS3_OK)
		fsx_fail(m, "COMMIT: %s", nfsc_stat_name(st));
}

void fsx_compare_via(struct fsx_model *m, struct nfsc *c, const nfs_fh3 *fh,
		     const char *who)
{
	fattr3 a;
	int st = nfsc_getattr(c, fh, &a);

	if (st != NFS3_OK || a.size != m->size) {
		fsx_fail(m, "%s: GETATTR %s size %llu, model %llu", who,
			 nfsc_stat_name(st), (unsigned long long)a.size,
			 (unsigned long long)m->size);
		return;
	}
	for (uint64_t off = 0; off < m->size; off += m->io) {
		uint64_t n = m->size - off < m->io ? m->size - off : m->io;
		uint32_t count = 0;
		size_t d;

		st = nfsc_read(c, fh, off, (uint32_t)n, m->buf2, &count, NULL);
		if (st != NFS3_OK || count != n) {
			fsx_fail(m, "%s: READ off %llu len %llu: %s count %u",
				 who, (unsigned long long)off,
				 (unsigned long long)n, nfsc_stat_name(st),
				 count);
			return;
		}
		if ((d = ct_first_diff(m->buf2, m->model + off, n)) != n) {
			fsx_fail(m, "%s: byte %llu is 0x%02x, model 0x%02x",
				 who, (unsigned long long)(off + d),
				 m->buf2[d], m->model[off + d]);
			return;
		}
	}
}

void fsx_compare_disk(struct fsx_model *m)
{
	uint8_t *disk = malloc(m->maxsize + 1);
	ssize_t n = disk ? ct_disk_read(m->name, 0, disk, m->maxsize + 1) : -1;
	size_t d;

	if (n != (ssize_t)m->size)
		fsx_fail(m, "disk: %zd bytes, model %llu", n,
			 (unsigned long long)m->size);
	else if ((d = ct_first_diff(disk, m->model, m->size)) != m->size)
		fsx_fail(m, "disk: byte %zu is 0x%02x, model 0x%02x", d,
			 disk[d], m->model[d]);
	free(disk);
}

void fsx_checkpoint(struct fsx_model *m, const char *who)
{
	fsx_commit(m);
	fsx_compare_via(m, m->dx, &m->fhd, who);
	fsx_compare_disk(m);
}

void fsx_run(struct fsx_model *m,
	     void (*pick)(struct fsx_model *m, struct fsx_op *o),
	     void (*run)(struct fsx_model *m, const struct fsx_op *o),
	     const char *who)
{
	for (m->done = 0; m->done < m->nops && !m->failed; m->done++) {
		struct fsx_op *o = &m->hist[m->done % FSX_HISTORY];

		memset(o, 0, sizeof(*o));
		o->n = m->done;
		o->size_before = m->size;
		pick(m, o);
		m->counts[o->kind]++;
		run(m, o);
		if ((m->done + 1) % m->check_every == 0 && !m->failed)
			fsx_checkpoint(m, who);
	}
}
