/* SPDX-License-Identifier: MIT */
/*
 * cache_fetch: the upstream READs in flight that fill a file's pages, so
 * that concurrent misses of the same bytes wait on one fetch (CONVENTIONS:
 * "Concurrent misses on the same range wait on one upstream fetch"). The
 * cache only records them; the caller sends the READ, parks its waiters
 * on the fetch's arg and ends it when the reply comes.
 *
 * States: a fetch is recorded by cache_fetch_begin, joinable while the
 * file's generation is the one it began under (cache_fetch_join), and
 * freed by cache_fetch_end (or with its file at cache_free). Its reply
 * fills the pages only while it is current (cache_fetch_fill). The
 * proxy's own write-back WRITE ending moves the file's generation, but a
 * fetch not overlapping the bytes it wrote is carried to the new one
 * (fetch_carry): its data still holds, its attributes (older than the
 * WRITE's) are not observed (cache_fetch_attr_current).
 *
 * Invariants (fetch_check, run by cache_check): every fetch on a file's
 * list carries CFETCH_MAGIC, names that file, asks off < end; the list's
 * length is the file's nfetches; a file with fetches is never freed.
 */
#include <stdlib.h>
#include <utlist.h>

#include "cache.h"
#include "cache_impl.h"

struct cfetch *cache_fetch_begin(struct cache *c, struct cfile *f,
				 uint64_t off, uint64_t end, bool readahead,
				 void *arg)
{
	struct cfetch *fe;

	(void)c;
	if (off >= end || !(fe = calloc(1, sizeof(*fe))))
		return NULL;
	fe->magic = CFETCH_MAGIC;
	fe->file = f;
	fe->off = off;
	fe->end = end;
	fe->gen = f->gen;
	fe->ra = readahead;
	fe->arg = arg;
	DL_APPEND(f->fetches, fe);
	f->nfetches++;
	return fe;
}

struct cfetch *cache_fetch_join(const struct cfile *f,
				const struct cfetch *after, uint64_t s,
				uint64_t e)
{
	struct cfetch *fe = after ? after->next : f->fetches;

	for (; fe; fe = fe->next)
		if (fe->gen == f->gen && fe->off < e && s < fe->end)
			return fe;
	return NULL;
}

void *cache_fetch_arg(const struct cfetch *fe)
{
	return fe->arg;
}

void cache_fetch_range(const struct cfetch *fe, uint64_t *off, uint64_t *end)
{
	*off = fe->off;
	*end = fe->end;
}

bool cache_fetch_current(const struct cfetch *fe)
{
	return fe->gen == fe->file->gen;
}

bool cache_fetch_attr_current(const struct cfetch *fe)
{
	return cache_fetch_current(fe) && !fe->attr_old;
}

bool cache_fetch_fill(struct cache *c, struct cfetch *fe,
		      const uint8_t *data, uint64_t len)
{
	if (!cache_fetch_current(fe))
		return false;
	cache_fill_ex(c, fe->file, fe->off, data, len, fe->ra);
	return true;
}

void cache_fetch_end(struct cache *c, struct cfetch **fep)
{
	struct cfetch *fe = *fep;
	struct cfile *f;

	*fep = NULL;
	if (!fe)
		return;
	f = fe->file;
	DL_DELETE(f->fetches, fe);
	f->nfetches--;
	fe->magic = 0;
	free(fe);
	file_free_unused(c, f);
}

unsigned cfile_fetches(const struct cfile *f)
{
	return f->nfetches;
}

void fetch_carry(struct cfile *f, uint64_t gen, uint64_t off, uint64_t end)
{
	struct cfetch *fe;

	DL_FOREACH(f->fetches, fe) {
		if (fe->gen != gen || (fe->off < end && off < fe->end))
			continue;
		fe->gen = gen + 1;
		fe->attr_old = true;
	}
}

void fetch_free_all(struct cfile *f)
{
	struct cfetch *fe, *tmp;

	DL_FOREACH_SAFE(f->fetches, fe, tmp) {
		DL_DELETE(f->fetches, fe);
		fe->magic = 0;
		free(fe);
	}
	f->nfetches = 0;
}

const char *fetch_check(const struct cfile *f)
{
	const struct cfetch *fe;
	unsigned n = 0;

	DL_FOREACH(f->fetches, fe) {
		if (fe->magic != CFETCH_MAGIC || fe->file != f ||
		    fe->off >= fe->end)
			return "a fetch in flight has a bad magic number, "
			       "another file or an empty range";
		n++;
	}
	return n == f->nfetches ? NULL
				: "a file's fetch count differs from its list";
}
