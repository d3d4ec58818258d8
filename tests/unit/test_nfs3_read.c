/* SPDX-License-Identifier: MIT */
/*
 * unit.nfs3_read: the real READ handler on the fake upstream. Concurrent
 * misses of one range share one upstream READ; calls while the upstream
 * is down are answered NFS3ERR_JUKEBOX (RFC 1813 section 2.6) and nothing
 * is sent.
 */
#include <string.h>

#include "cunit_main.h"
#include "nfs3_harness.h"

#define NREADERS 8

/* No readahead: only the misses themselves go upstream. */
static void no_readahead(struct conf *c)
{
	c->readahead_max = 0;
}

/* Send a READ of fileid's [off, off+count). */
static uint32_t send_read(struct nfs3_h *h, uint64_t id, uint64_t off,
			  uint32_t count)
{
	uint8_t buf[FH_SIZE_MAX];
	READ3args a = { .offset = off, .count = count };

	h_fh(h, id, &a.file, buf);
	return h_call(h, NFSPROC3_READ, (xdrproc_t)xdr_READ3args, &a);
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

static void test_concurrent_misses_share_one_read(void)
{
	struct nfs3_h h;
	uint32_t xid[NREADERS];
	uint64_t id;

	h_init(&h, no_readahead);
	id = toy_add_file(&h.toy, "f", 40000);
	h.fu.hold[NFSPROC3_READ] = true;
	for (int i = 0; i < NREADERS; i++)
		xid[i] = send_read(&h, id, 4096, 8192);
	h_turns(&h, 50);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	CU_ASSERT_EQUAL(fake_up_held(&h.fu, NFSPROC3_READ), 1);
	for (int i = 0; i < NREADERS; i++)
		CU_ASSERT_FALSE(h_replied(&h, xid[i]));
	fake_up_release(&h.fu, NFSPROC3_READ);
	for (int i = 0; i < NREADERS; i++)
		check_read(&h, xid[i], id, 4096, 8192);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
	/* A ninth READ of the range is a hit: nothing more goes upstream. */
	check_read(&h, send_read(&h, id, 4096, 8192), id, 4096, 8192);
	CU_ASSERT_EQUAL(h.fu.calls[NFSPROC3_READ], 1);
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
	CU_ASSERT_EQUAL_FATAL(h_wait(&h, send_read(&h, id, 0, 4096),
				     (xdrproc_t)xdr_READ3res, &res), 0);
	CU_ASSERT_EQUAL(res.status, NFS3ERR_JUKEBOX);
	xdr_free((xdrproc_t)xdr_READ3res, (char *)&res);
	for (int p = 0; p < UPSTREAM_NPROCS; p++)
		CU_ASSERT_EQUAL(h.fu.calls[p], 0);
	/* The connection drops with the fetch in flight: JUKEBOX too. */
	h.fu.state = UPSTREAM_UP;
	h.fu.hold[NFSPROC3_READ] = true;
	{
		uint32_t xid = send_read(&h, id, 0, 4096);

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
	check_read(&h, send_read(&h, id, 0, 4096), id, 0, 4096);
	h_fini(&h);
}

int test_register(void)
{
	CU_pSuite s = CU_add_suite("nfs3_read", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "concurrent_misses_share_one_read", test_concurrent_misses_share_one_read);
	CU_add_test(s, "upstream_down_gives_jukebox", test_upstream_down_gives_jukebox);
	return 0;
}
