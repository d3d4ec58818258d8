/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_read: the real READ handler on the fake upstream. Concurrent
 * misses of one range share one upstream READ; a random miss fetches its
 * own bytes, not whole pages; calls while the upstream
 * is down are answered NFS3ERR_JUKEBOX (RFC 1813 section 2.6) and nothing
 * is sent; a client that half-closes its connection after its calls still
 * gets their replies. The fetch they share is the cache's (cache_fetch_join), and
 * the sampled invariant checks (NFSCACHED_CHECK) run at the end of loop
 * turns and abort on a broken invariant.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "invariant.h"

#include "cunit_main.h"
#include "nfs3_harness.h"
#include "nfs3_read.h"

#define NREADERS 8

/* No readahead: only the misses themselves go upstream. */
static void no_readahead(struct conf *c)
{
	c->readahead_max = 0;
}

/* Wait for the reply to xid and check it holds the toy's bytes. */
static void check_read(struct nfs3_h *h, uint32_t xid, uint64_t id,
		       uint64_t off, uint32_t count)
{
	READ3res res;
	const struct toy_node *n = toy_node(&h->toy, id);

	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(h, xid, (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	CU_ASSERT_EQUAL(res.READ3res_u.resok.count, count);
	CU_ASSERT_EQUAL(res.READ3res_u.resok.data.data_len, count);
	if (res.status == NFS3_OK &&
	    res.READ3res_u.resok.data.data_len == count)
		CU_ASSERT_EQUAL(memcmp(res.READ3res_u.resok.data.data_val,
				       n->data + off, count), 0);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
}

/* The cached file of toy file id (a reference), by its upstream handle:
 * 8 bytes of fileid, big-endian. Created if create, else NULL if not
 * cached. */
static struct cfile *up_file_ex(struct nfs3_h *h, uint64_t id, bool create)
{
	uint8_t up[8];

	for (int i = 0; i < 8; i++)
		up[i] = (uint8_t)(id >> (56 - 8 * i));
	return create ? cache_get(h->d.cache, up, sizeof(up))
		      : cache_find(h->d.cache, up, sizeof(up));
}

/* up_file_ex, never creating. */
static struct cfile *up_file(struct nfs3_h *h, uint64_t id)
{
	return up_file_ex(h, id, false);
}

static void test_concurrent_misses_share_one_read(void)
{
	struct nfs3_h h;
	uint32_t xid[NREADERS];
	uint64_t id;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 40000);
	h.fu.hold[NFSPROC3_READ] = true;
	for (int i = 0; i < NREADERS; i++)
		xid[i] = h_send_read(&h, id, 4096, 8192);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	CU_ASSERT_EQUAL(fake_up_held(&h.fu, NFSPROC3_READ), 1);
	for (int i = 0; i < NREADERS; i++)
		CU_ASSERT_FALSE(h_replied(&h, xid[i]));
	{
		/* The one fetch is recorded in the cache: the touched 64 KiB
		 * page's bytes up to the size, [0, 40000). */
		struct cfile *f = up_file(&h, id);
		struct cfetch *fe;
		uint64_t s, e;

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(cfile_fetches(f), 1);
		fe = cache_fetch_join(f, NULL, 0, 40000);
		CU_ASSERT_PTR_NOT_NULL_FATAL(fe);
		cache_fetch_range(fe, &s, &e);
		CU_ASSERT_EQUAL(s, 0);
		CU_ASSERT_EQUAL(e, 40000);
		CU_ASSERT_PTR_NULL(cache_fetch_join(f, fe, 0, 40000));
		cfile_put(h.d.cache, &f);
	}
	fake_up_release(&h.fu, NFSPROC3_READ);
	for (int i = 0; i < NREADERS; i++)
		check_read(&h, xid[i], id, 4096, 8192);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	{
		struct cfile *f = up_file(&h, id);

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(cfile_fetches(f), 0);
		cfile_put(h.d.cache, &f);
	}
	/* A ninth READ of the range is a hit: nothing more goes upstream. */
	check_read(&h, h_send_read(&h, id, 4096, 8192), id, 4096, 8192);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	h_fini(&h);
}

/* Assert that exactly `want` of d's READs are in flight, all in step `s`. */
static void expect_steps(const struct daemon *d, enum nfs3_read_step s,
			 uint64_t want)
{
	uint64_t n[NFS3_READ_NSTEPS];

	nfs3_read_steps_inflight(d, n);
	for (int i = 0; i < NFS3_READ_NSTEPS; i++) {
		if (n[i] != (i == (int)s ? want : 0))
			fprintf(stderr, "\n  step %s: %llu READs\n",
				nfs3_read_step_name((enum nfs3_read_step)i),
				(unsigned long long)n[i]);
		CU_ASSERT_EQUAL(n[i], i == (int)s ? want : 0);
	}
}

/* A cold READ of a file the proxy never saw goes through GETATTR,
 * ACCESS, PLAN, DISK and FETCH, each step counted while the READ waits
 * there, and nothing is in flight once it is answered. */
static void test_read_steps_are_counted(void)
{
	struct nfs3_h h;
	uint64_t id;
	uint32_t xid;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 40000);
	h.fu.hold[NFSPROC3_GETATTR] = true;
	h.fu.hold[NFSPROC3_ACCESS] = true;
	h.fu.hold[NFSPROC3_READ] = true;
	xid = h_send_read(&h, id, 4096, 8192);
	h_turns(&h, 50);
	expect_steps(&h.d, NFS3_READ_GETATTR, 1);
	fake_up_release(&h.fu, NFSPROC3_GETATTR);
	h_turns(&h, 50);
	expect_steps(&h.d, NFS3_READ_ACCESS, 1);
	fake_up_release(&h.fu, NFSPROC3_ACCESS);
	h_turns(&h, 50);
	expect_steps(&h.d, NFS3_READ_FETCH, 1);
	CU_ASSERT_FALSE(h_replied(&h, xid));
	fake_up_release(&h.fu, NFSPROC3_READ);
	check_read(&h, xid, id, 4096, 8192);
	expect_steps(&h.d, NFS3_READ_REPLY, 0);
	CU_ASSERT_STRING_EQUAL(nfs3_read_step_name(NFS3_READ_DISK), "disk");
	CU_ASSERT_STRING_EQUAL(nfs3_read_step_name(NFS3_READ_NSTEPS), "?");
	h_fini(&h);
}

/* READ of fileid's [off, off+count), answered with the toy's bytes; the
 * page-filling bytes fetched meanwhile are returned. */
static uint64_t read_fetched(struct nfs3_h *h, uint64_t id, uint64_t off,
			     uint32_t count)
{
	struct nfs3_read_stats before, after;

	nfs3_read_stats_get(&h->d, &before);
	check_read(h, h_send_read(h, id, off, count), id, off, count);
	h_turns(h, 50);		/* readahead's own fetches come back */
	nfs3_read_stats_get(&h->d, &after);
	return after.fetch_bytes - before.fetch_bytes;
}

/* Random READ misses fetch their own bytes, 4 KiB aligned, not whole
 * 64 KiB pages (wider on a slow link); a stream still gets whole pages
 * and readahead. */
static void test_random_miss_fetches_its_bytes(void)
{
	struct nfs3_read_stats before, after;
	struct nfs3_h h;
	uint64_t id;

	h_init(&h, NULL);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	nfs3_read_stats_get(&h.d, &before);
	/* [300000, 304096) widens to [299008, 307200). */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 300000, 4096), 8192);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 299008, 8192), 0);
	/* Elsewhere, another random one: one 4 KiB block. */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 700416, 4096), 4096);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(after.random_fetches - before.random_fetches, 2);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			12288);
	/* The next READ continues it: still fetched narrow, but its stream
	 * is found and issues its first window (128 KiB); the stream's third
	 * READ is no longer random. */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 704512, 4096),
			4096 + RA_DEFAULT_MIN_WINDOW);
	nfs3_read_stats_get(&h.d, &before);
	CU_ASSERT_TRUE(read_fetched(&h, id, 708608, 4096) > 0);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(after.random_fetches - before.random_fetches, 0);
	h_fini(&h);

	/* From offset 0 a file is read as a stream: its whole page, and the
	 * first window. */
	h_init(&h, NULL);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 0, 4096),
			65536 + RA_DEFAULT_MIN_WINDOW);
	h_fini(&h);

	/* A slow link widens a random miss's unit (read_random_unit): to
	 * 16 KiB at a latency floor of 1 ms, to the whole 64 KiB page from
	 * about 2.1 ms; 0.1 ms keeps 4 KiB. */
	h_init(&h, NULL);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	nfs3_read_stats_get(&h.d, &before);
	h.fu.latency_floor = 0.0001;
	CU_ASSERT_EQUAL(read_fetched(&h, id, 100000, 100), 4096);
	h.fu.latency_floor = 0.001;	/* [688128, 704512) */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 700416, 4096), 16384);
	h.fu.latency_floor = 0.004;	/* the page [262144, 327680) */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 300000, 4096), 65536);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 262144, 65536), 0);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(after.random_fetches - before.random_fetches, 3);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			4096 + 16384 + 65536);
	h_fini(&h);

	/* Readahead off: the pattern is not tracked, whole pages as before. */
	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	nfs3_read_stats_get(&h.d, &before);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 300000, 4096), 65536);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(after.random_fetches - before.random_fetches, 0);
	h_fini(&h);
}

/*
 * A READ's fetch in flight while write-back of other bytes of the file
 * ends (a COMMIT every few writes) still fills the cache
 * (cfile_wb_write_end): the same bytes read again are a hit, no second
 * upstream READ. One that overlaps the bytes written back is not kept.
 */
static void test_fetch_survives_writeback_of_other_bytes(void)
{
	struct nfs3_read_stats before, after;
	struct nfs3_h h;
	COMMIT3res cr;
	WRITE3res wr;
	uint32_t rx, ox;
	uint64_t id;

	h_init(&h, NULL);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	h.fu.hold[NFSPROC3_READ] = true;
	rx = h_send_read(&h, id, 300000, 4096);		/* [299008, 307200) */
	ox = h_send_read(&h, id, 600000, 4096);		/* [598016, 606208) */
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(fake_up_held(&h.fu, NFSPROC3_READ), 2);
	/* Write [600064, 604160) and COMMIT it: write-back ends. */
	memset(&wr, 0, sizeof(wr));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_send_write(&h, id, 600064, 4096, 'w',
						      UNSTABLE),
				     (xdrproc_t)xdr_WRITE3res, &wr), 0);
	CU_ASSERT_EQUAL(wr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wr);
	memset(&cr, 0, sizeof(cr));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_send_commit(&h, id),
				     (xdrproc_t)xdr_COMMIT3res, &cr), 0);
	CU_ASSERT_EQUAL(cr.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_COMMIT3res, (char *)&cr);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_WRITE], 1);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 2);
	fake_up_release(&h.fu, NFSPROC3_READ);
	check_read(&h, rx, id, 300000, 4096);
	{
		READ3res res;

		memset(&res, 0, sizeof(res));
		CU_ASSERT_EQUAL_FATAL(h_wait(&h, ox, (xdrproc_t)xdr_READ3res,
					     &res), 0);
		CU_ASSERT_EQUAL(res.status, NFS3_OK);
		xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	}
	h.fu.hold[NFSPROC3_READ] = false;
	nfs3_read_stats_get(&h.d, &before);
	/* The first fetch filled: a hit. */
	check_read(&h, h_send_read(&h, id, 299008, 8192), id, 299008, 8192);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 2);
	/* The second one overlapped the WRITE: its bytes before the
	 * written ones, [598016, 600064), are fetched again. */
	check_read(&h, h_send_read(&h, id, 598016, 2048), id, 598016, 2048);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 3);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			2048);
	h_fini(&h);
}

/* One readahead stream per file: a far READ forgets the others. */
static void one_stream(struct conf *c)
{
	c->readahead_streams = 1;
}

/*
 * Issue 16: a READ over missing bytes split by small cached islands is
 * fetched in one upstream READ, not one per piece; the islands come again
 * and are dropped (the reply is the toy's bytes either way).
 */
static void test_fragmented_miss_fetched_in_one_read(void)
{
	struct nfs3_read_stats before, after;
	struct nfs3_h h;
	uint64_t id, reads;

	h_init(&h, one_stream);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	/* Three random 4 KiB READs inside the page [256K, 320K): each
	 * fetches its own 4 KiB (random_miss_fetches_its_bytes). */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 270336, 4096), 4096);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 286720, 4096), 4096);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 303104, 4096), 4096);
	/* A far one replaces their stream: the next READ starts none. */
	CU_ASSERT_EQUAL(read_fetched(&h, id, 921600, 4096), 4096);
	reads = h.fu.calls[NFSPROC3_READ];
	CU_ASSERT_EQUAL(reads, 4);
	/* The whole page: four missing pieces, 4 KiB islands between. */
	nfs3_read_stats_get(&h.d, &before);
	check_read(&h, h_send_read(&h, id, 262144, 65536), id, 262144, 65536);
	h_turns(&h, 50);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ] - reads, 1);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			65536);
	/* And now all of it is cached: a hit. */
	check_read(&h, h_send_read(&h, id, 262144, 65536), id, 262144, 65536);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ] - reads, 1);
	h_fini(&h);
}

/* One readahead stream per file, windows pinned at 4 MiB (readahead_max
 * 4 MiB: the link's measure cannot change them). */
static void one_stream_4m(struct conf *c)
{
	c->readahead_streams = 1;
	c->readahead_max = 4u << 20;
}

/* Read fileid's [0, size) in 64 KiB READs, one at a time, each answered
 * with the toy's bytes after the loop ran its fetches. */
static void read_through(struct nfs3_h *h, uint64_t id, uint64_t size)
{
	for (uint64_t off = 0; off < size; off += 65536) {
		check_read(h, h_send_read(h, id, off, 65536), id, off, 65536);
		h_turns(h, 50);
	}
}

/*
 * Issue 42: readahead windows over missing pieces a little over rtmax
 * (1 MiB) long, split by 4 KiB cached islands, go in READs of rtmax
 * each, islands included: 11 upstream READs for the 8 MiB file, where
 * a piece that did not fit whole in the READ before it began a READ of
 * its own (15, two of them of 60 KiB).
 * The windows of a stream from 0 (readahead_max 4 MiB) are [0, 64K)
 * (the first READ's page), [64K, 192K), [192K, 704K), [704K, 2752K),
 * [2752K, 6848K), [6848K, 8M): 1 + 1 + 1 + 2 + 4 + 2 READs, every byte
 * fetched once but the islands inside them (all 7: 8 MiB in all).
 */
static void test_fragmented_window_fetched_in_few_large_reads(void)
{
	struct nfs3_read_stats before, after;
	const struct toy_node *n;
	struct nfs3_h h;
	struct cfile *f;
	uint64_t id, reads;

	h_init(&h, one_stream_4m);
	h.fu.rtmax = 1u << 20;
	id = toy_add_file(&h.toy, "f", 8u << 20);
	n = toy_node(&h.toy, id);
	f = up_file_ex(&h, id, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	/* Islands at 1088 KiB, 2176 KiB, ... 7616 KiB. */
	for (uint64_t o = 1088 << 10; o < (8u << 20); o += 1088 << 10)
		cache_fill(h.d.cache, f, o, n->data + o, 4096);
	cfile_put(h.d.cache, &f);
	reads = h.fu.calls[NFSPROC3_READ];
	nfs3_read_stats_get(&h.d, &before);
	read_through(&h, id, 8u << 20);
	nfs3_read_stats_get(&h.d, &after);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ] - reads, 11);
	CU_ASSERT_EQUAL(after.upstream_read_bytes - before.upstream_read_bytes,
			8u << 20);
	h_fini(&h);
}

/*
 * Issue 42: the full window follows the export's link, delivery rate x
 * latency floor x 2: at 1 GiB/s and 1/256 s, 8 MiB, so a stream from 0
 * issues 128K, 512K, 2M, 4M and then 8 MiB windows (readahead_max's
 * default 64 MiB is the cap); with the rate unknown, 4 MiB as before.
 */
static void test_window_sized_by_the_link(void)
{
	struct ra_params rp;
	struct cache_stats cs;
	struct nfs3_h h;
	uint64_t id;

	h_init(&h, one_stream);
	nfs3_read_ra_params(&h.d, &h.ex.upc, &rp);
	CU_ASSERT_EQUAL(rp.full_window, 4u << 20);
	h.fu.rtmax = 1u << 20;
	h.fu.read_rate = 1073741824.0;
	h.fu.latency_floor = 1.0 / 256;
	nfs3_read_ra_params(&h.d, &h.ex.upc, &rp);
	CU_ASSERT_EQUAL(rp.full_window, 8u << 20);
	CU_ASSERT_EQUAL(rp.max_window, 64u << 20);
	id = toy_add_file(&h.toy, "f", 16u << 20);
	/* READs at 0, 64K, 128K, 192K, 256K: the page [0, 64K), then the
	 * windows up to [2752K, 6848K) and [6848K, 15040K). */
	read_through(&h, id, 5 * 65536);
	cache_stats_get(h.d.cache, &cs);
	CU_ASSERT_EQUAL(cs.ra.windows, 5);
	CU_ASSERT_EQUAL(cs.ra.bytes, (15040u << 10) - 65536);
	h_fini(&h);
}

/* The toy's answers, a READ of more than 4 KiB cut to 4 KiB without eof
 * (a short read, RFC 1813 section 3.3.6). */
static enum upstream_status short_respond(const struct fake_call *c,
					  void *res, void *arg)
{
	enum upstream_status st = toy_respond(c, res, arg);
	READ3res *r = res;

	if (st == UPSTREAM_OK && c->proc == NFSPROC3_READ &&
	    r->status == NFS3_OK && r->READ3res_u.resok.count > 4096) {
		r->READ3res_u.resok.count = 4096;
		r->READ3res_u.resok.data.data_len = 4096;
		r->READ3res_u.resok.eof = FALSE;
	}
	return st;
}

/*
 * A file the proxy holds writes of, whose fetches come back short: the
 * READ is forwarded, planned once more from the cache (its first plan's
 * buffer and needs freed: the ASan tree's leak check sees it), and then
 * answered with the upstream's short read.
 */
static void test_short_fetch_of_local_file(void)
{
	static uint8_t one[100] = { 1 };
	uint8_t buf[FH_SIZE_MAX];
	WRITE3args w = { .offset = 0, .count = sizeof(one), .stable = UNSTABLE };
	const struct toy_node *n;
	struct nfs3_h h;
	struct cfile *f;
	WRITE3res wres;
	READ3res res;
	uint64_t id, reads;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	n = toy_node(&h.toy, id);
	h.fu.hold[NFSPROC3_WRITE] = true;	/* the write stays here */
	h_fh(&h, id, &w.file, buf);
	w.data.data_len = sizeof(one);
	w.data.data_val = (char *)one;
	memset(&wres, 0, sizeof(wres));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_call(&h, NFSPROC3_WRITE,
						(xdrproc_t)xdr_WRITE3args, &w),
				     (xdrproc_t)xdr_WRITE3res, &wres), 0);
	CU_ASSERT_EQUAL(wres.status, NFS3_OK);
	xdr_free((xdrproc_t)xdr_WRITE3res, (char *)&wres);
	f = up_file(&h, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_TRUE(cfile_is_local(f));
	cfile_put(h.d.cache, &f);
	h.fu.respond = short_respond;
	reads = h.fu.calls[NFSPROC3_READ];
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_send_read(&h, id, 65536, 16384),
				     (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3_OK);
	CU_ASSERT_EQUAL(res.READ3res_u.resok.count, 4096);
	CU_ASSERT_FALSE(res.READ3res_u.resok.eof);
	if (res.status == NFS3_OK && res.READ3res_u.resok.data.data_len == 4096)
		CU_ASSERT_EQUAL(memcmp(res.READ3res_u.resok.data.data_val,
				       n->data + 65536, 4096), 0);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	/* Fetch, forward, fetch again, forward again. */
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ] - reads, 4);
	h_fini(&h);
}

/*
 * A readahead window whose first page has more missing ranges than one
 * plan holds (READ_MAX_FETCH, 64): 164 cached islands of 100 bytes in
 * [64K, 128K). The prefetch planned that page again and again, forever,
 * with the event loop stuck (found in review). Now it goes on at the next
 * page: the READ is answered and [128K, 192K) is prefetched. alarm() only
 * turns a hang into a quick failure; nothing here is timed.
 */
static void test_prefetch_over_crowded_page_ends(void)
{
	const struct toy_node *n;
	struct nfs3_h h;
	struct cfile *f;
	uint64_t id;

	h_init(&h, NULL);
	id = toy_add_file(&h.toy, "f", 1u << 20);
	n = toy_node(&h.toy, id);
	CU_ASSERT_EQUAL(read_fetched(&h, id, 921600, 4096), 4096);
	f = up_file(&h, id);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (uint64_t o = 65536 + 256; o + 100 < 131072; o += 400)
		cache_fill(h.d.cache, f, o, n->data + o, 100);
	alarm(300);
	/* From offset 0: a stream at once, its window [64K, 192K). */
	check_read(&h, h_send_read(&h, id, 0, 65536), id, 0, 65536);
	h_turns(&h, 50);
	alarm(0);
	CU_ASSERT_TRUE(cfile_range_cached(h.d.cache, f, 131072, 196608));
	cfile_put(h.d.cache, &f);
	h_fini(&h);
}

static void test_upstream_down_gives_jukebox(void)
{
	struct nfs3_h h;
	READ3res res;
	uint64_t id;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 10000);
	h.fu.state = UPSTREAM_DOWN;
	memset(&res, 0, sizeof(res));
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, h_send_read(&h, id, 0, 4096),
				     (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3ERR_JUKEBOX);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	for (int p = 0; p < UPSTREAM_NPROCS; p++)
		CU_ASSERT_EQUAL(h.fu.calls[p], 0);
	/* The connection drops with the fetch in flight: JUKEBOX too. */
	h.fu.state = UPSTREAM_UP;
	h.fu.hold[NFSPROC3_READ] = true;
	{
		uint32_t xid = h_send_read(&h, id, 0, 4096);

		h_turns(&h, 50);
		CU_ASSERT_EQUAL(fake_up_held(&h.fu, NFSPROC3_READ), 1);
		h.fu.state = UPSTREAM_DOWN;
		fake_up_fail_held(&h.fu, UPSTREAM_EDOWN);
		memset(&res, 0, sizeof(res));
		CU_ASSERT_EQUAL_FATAL(h_wait(&h, xid, (xdrproc_t)xdr_READ3res,
					     &res), 0);
		CU_ASSERT_EQUAL(res.status, NFS3ERR_JUKEBOX);
		xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	}
	/* Back up: the same READ is served. */
	h.fu.state = UPSTREAM_UP;
	h.fu.hold[NFSPROC3_READ] = false;
	check_read(&h, h_send_read(&h, id, 0, 4096), id, 0, 4096);
	h_fini(&h);
}

/*
 * A client that shuts down its sending side (shutdown(SHUT_WR)) after its
 * calls still reads their replies: the server sees EOF while both READs
 * wait for the upstream (held), answers both once it replies, and only
 * then closes the connection. Before, EOF closed it at once and the
 * replies were dropped.
 */
static void test_half_closed_client_gets_its_replies(void)
{
	struct nfs3_h h;
	uint64_t id;
	uint32_t x1, x2;
	char b;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 200000);
	h.fu.hold[NFSPROC3_READ] = true;
	x1 = h_send_read(&h, id, 0, 4096);
	x2 = h_send_read(&h, id, 131072, 4096);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(fake_up_held(&h.fu, NFSPROC3_READ), 2);
	CU_ASSERT_EQUAL_FATAL(shutdown(h.cfd, SHUT_WR), 0);
	h_turns(&h, 50);		/* the server reads the EOF */
	CU_ASSERT_FALSE(h.closed);
	CU_ASSERT_FALSE(h_replied(&h, x1) || h_replied(&h, x2));
	h.fu.hold[NFSPROC3_READ] = false;
	fake_up_release(&h.fu, NFSPROC3_READ);
	check_read(&h, x2, id, 131072, 4096);
	check_read(&h, x1, id, 0, 4096);
	/* Then the server closes its side: the client reads EOF. */
	h_turns(&h, 50);
	CU_ASSERT_TRUE(h.closed);
	CU_ASSERT_EQUAL(recv(h.cfd, &b, 1, MSG_DONTWAIT), 0);
	h_fini(&h);
}

/*
 * A half-closed client that does not read for a while still gets all its
 * replies: once the last call is answered the connection lingers with
 * idle_timeout for its writes to progress, not the 5 s of other closed
 * connections. Eight 64 KiB replies (more than the socketpair holds) wait
 * while the client reads nothing for 6 s of real time (the linger timer
 * is libevent's, on the real clock), then all arrive.
 */
static void test_half_closed_slow_reader_gets_everything(void)
{
	struct timespec pause = { 6, 0 };
	struct nfs3_h h;
	uint32_t x[8];
	uint64_t id;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 1 << 20);
	h.fu.hold[NFSPROC3_READ] = true;
	for (int i = 0; i < 8; i++)
		x[i] = h_send_read(&h, id, (uint64_t)i * 65536, 65536);
	h_turns(&h, 50);
	event_del(h.rd);		/* the client stops reading */
	CU_ASSERT_EQUAL_FATAL(shutdown(h.cfd, SHUT_WR), 0);
	h_turns(&h, 50);
	h.fu.hold[NFSPROC3_READ] = false;
	fake_up_release(&h.fu, NFSPROC3_READ);
	h_turns(&h, 200);		/* answered: the rest waits on the socket */
	while (nanosleep(&pause, &pause) != 0)
		;
	h_turns(&h, 50);		/* a 5 s linger timer would fire here */
	event_add(h.rd, NULL);
	for (int i = 0; i < 8; i++)
		check_read(&h, x[i], id, (uint64_t)i * 65536, 65536);
	h_fini(&h);
}

/* The cache's counters now. */
static struct cache_stats cstats(struct nfs3_h *h)
{
	struct cache_stats st;

	cache_stats_get(h->d.cache, &st);
	return st;
}

/*
 * A cached 64 KiB READ is sent from its page by reference (cache_lend):
 * while the client does not read, the replies wait in the connection's
 * output; `cache drop` then frees the pages, whose buffers stay as loans;
 * another file's READs fill the cache meanwhile (reusing whatever buffers
 * the pool has free); once the client reads, every reply carries the
 * first file's bytes, and the loans are gone.
 */
static void test_hit_sent_from_its_page_outlives_a_drop(void)
{
	struct nfs3_h h;
	uint32_t xa[8], xb[8];
	uint64_t a, b, lends;

	h_init(&h, no_readahead);
	a = toy_add_file(&h.toy, "a", 1 << 20);
	b = toy_add_file(&h.toy, "b", 1 << 20);
	for (int i = 0; i < 8; i++)
		check_read(&h, h_send_read(&h, a, (uint64_t)i * 65536, 65536), a,
			   (uint64_t)i * 65536, 65536);
	lends = cstats(&h).lends;
	event_del(h.rd);		/* the client stops reading */
	for (int i = 0; i < 8; i++)
		xa[i] = h_send_read(&h, a, (uint64_t)i * 65536, 65536);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(cstats(&h).lends, lends + 8);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 8);	/* hits */
	CU_ASSERT(cache_drop_clean(h.d.cache) >= 8 * 65536);
	CU_ASSERT(cstats(&h).loan_bytes > 0);	/* replies not yet written */
	for (int i = 0; i < 8; i++)
		xb[i] = h_send_read(&h, b, (uint64_t)i * 65536, 65536);
	h_turns(&h, 50);
	event_add(h.rd, NULL);
	for (int i = 0; i < 8; i++)
		check_read(&h, xa[i], a, (uint64_t)i * 65536, 65536);
	for (int i = 0; i < 8; i++)
		check_read(&h, xb[i], b, (uint64_t)i * 65536, 65536);
	h_turns(&h, 10);
	CU_ASSERT_EQUAL(cstats(&h).loan_bytes, 0);
	h_fini(&h);
}

/*
 * A half-closed connection with part of a record buffered is not closed
 * by record_timeout: that record can never complete, and the call already
 * in flight is still answered.
 */
static void test_half_closed_partial_record_is_ignored(void)
{
	struct nfs3_h h;
	uint32_t mark = htonl(0x80000000u | 200), x;
	uint8_t part[24] = { 0 };
	uint64_t id;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 100000);
	h.fu.hold[NFSPROC3_READ] = true;
	x = h_send_read(&h, id, 0, 4096);
	h_turns(&h, 50);
	memcpy(part, &mark, 4);		/* 20 of the 200 bytes it announces */
	CU_ASSERT_EQUAL_FATAL(write(h.cfd, part, sizeof(part)),
			      (ssize_t)sizeof(part));
	CU_ASSERT_EQUAL_FATAL(shutdown(h.cfd, SHUT_WR), 0);
	h_turns(&h, 50);
	h_advance(&h, h.d.conf->record_timeout + 1);
	CU_ASSERT_FALSE(h.closed);
	h.fu.hold[NFSPROC3_READ] = false;
	fake_up_release(&h.fu, NFSPROC3_READ);
	check_read(&h, x, id, 0, 4096);
	h_turns(&h, 50);
	CU_ASSERT_TRUE(h.closed);
	h_fini(&h);
}

/* With NFSCACHED_CHECK=1 the checks run at the end of every loop turn
 * and pass while READs miss, join and fill. */
static void test_checks_run_every_turn(void)
{
	const char *was = getenv("NFSCACHED_CHECK");
	char *saved = was ? strdup(was) : NULL;
	struct nfs3_h h;
	struct daemon bare;	/* only the checks' state */
	uint64_t id, before;

	setenv("NFSCACHED_CHECK", "1", 1);
	h_init(&h, no_readahead);
	CU_ASSERT_EQUAL(invariant_every(&h.d), 1);
	before = invariant_checks(&h.d);
	id = toy_add_file(&h.toy, "f", 40000);
	check_read(&h, h_send_read(&h, id, 0, 20000), id, 0, 20000);
	h_turns(&h, 10);
	CU_ASSERT_TRUE(invariant_checks(&h.d) >= before + 10);
	h_fini(&h);
	memset(&bare, 0, sizeof(bare));
	setenv("NFSCACHED_CHECK", "0", 1);
	CU_ASSERT_EQUAL(invariant_init(&bare), 0);
	CU_ASSERT_EQUAL(invariant_every(&bare), 0);
	setenv("NFSCACHED_CHECK", "x", 1);
	CU_ASSERT_EQUAL(invariant_init(&bare), -1);
	CU_ASSERT_EQUAL(invariant_every(&bare), 0);
	if (saved)	/* as ctest set it, for the next tests */
		setenv("NFSCACHED_CHECK", saved, 1);
	else
		unsetenv("NFSCACHED_CHECK");
	free(saved);
}

/* A broken invariant (a fetch's magic number) aborts the next checked
 * turn: the child dies of SIGABRT; every 3rd turn is checked. */
static void test_broken_invariant_aborts(void)
{
	pid_t pid;
	int status = 0;

	pid = fork();
	CU_ASSERT_TRUE_FATAL(pid >= 0);
	if (pid == 0) {
		struct nfs3_h h;
		struct cfile *f;
		struct cfetch *fe;

		setenv("NFSCACHED_CHECK", "3", 1);
		h_init(&h, no_readahead);
		h_turns(&h, 6);		/* sound: no abort */
		f = up_file_ex(&h, TOY_ROOT, true);
		fe = cache_fetch_begin(h.d.cache, f, 0, 1, false, NULL);
		*(uint32_t *)fe ^= 1;	/* its magic, the first field */
		h_turns(&h, 3);
		_exit(0);		/* not reached */
	}
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		CU_ASSERT_EQUAL(WTERMSIG(status), SIGABRT);
}

/* A fetch's reply reaching a fetch whose magic is wrong (freed, or not a
 * fetch) aborts at CHECK_OBJ in fetch_done, in release builds too, with
 * a line naming it: the child dies of SIGABRT. */
static void test_reply_to_a_broken_fetch_aborts(void)
{
	pid_t pid;
	int status = 0;

	pid = fork();
	CU_ASSERT_TRUE_FATAL(pid >= 0);
	if (pid == 0) {
		struct nfs3_h h;
		struct cfile *f;
		struct cfetch *cf;
		uint64_t id;

		h_init(&h, no_readahead);
		id = toy_add_file(&h.toy, "f", 40000);
		h.fu.hold[NFSPROC3_READ] = true;
		(void)h_send_read(&h, id, 0, 4096);
		h_turns(&h, 50);
		f = up_file(&h, id);
		cf = f ? cache_fetch_join(f, NULL, 0, 4096) : NULL;
		if (!cf)
			_exit(2);
		*(uint32_t *)cache_fetch_arg(cf) ^= 1;	/* its magic */
		fake_up_release(&h.fu, NFSPROC3_READ);
		h_turns(&h, 50);
		_exit(0);		/* not reached */
	}
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		CU_ASSERT_EQUAL(WTERMSIG(status), SIGABRT);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_read", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "concurrent_misses_share_one_read", test_concurrent_misses_share_one_read);
	CU_add_test(s, "random_miss_fetches_its_bytes", test_random_miss_fetches_its_bytes);
	CU_add_test(s, "fetch_survives_writeback_of_other_bytes",
		    test_fetch_survives_writeback_of_other_bytes);
	CU_add_test(s, "fragmented_miss_fetched_in_one_read", test_fragmented_miss_fetched_in_one_read);
	CU_add_test(s, "fragmented_window_fetched_in_few_large_reads",
		    test_fragmented_window_fetched_in_few_large_reads);
	CU_add_test(s, "window_sized_by_the_link", test_window_sized_by_the_link);
	CU_add_test(s, "short_fetch_of_local_file", test_short_fetch_of_local_file);
	CU_add_test(s, "prefetch_over_crowded_page_ends", test_prefetch_over_crowded_page_ends);
	CU_add_test(s, "upstream_down_gives_jukebox", test_upstream_down_gives_jukebox);
	CU_add_test(s, "half_closed_client_gets_its_replies",
		    test_half_closed_client_gets_its_replies);
	CU_add_test(s, "half_closed_slow_reader_gets_everything",
		    test_half_closed_slow_reader_gets_everything);
	CU_add_test(s, "half_closed_partial_record_is_ignored",
		    test_half_closed_partial_record_is_ignored);
	CU_add_test(s, "hit_sent_from_its_page_outlives_a_drop",
		    test_hit_sent_from_its_page_outlives_a_drop);
	CU_add_test(s, "read_steps_are_counted", test_read_steps_are_counted);
	CU_add_test(s, "checks_run_every_turn", test_checks_run_every_turn);
	CU_add_test(s, "broken_invariant_aborts", test_broken_invariant_aborts);
	CU_add_test(s, "reply_to_a_broken_fetch_aborts",
		    test_reply_to_a_broken_fetch_aborts);
	return 0;
}
