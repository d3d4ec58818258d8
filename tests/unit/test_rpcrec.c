/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/rpcrec: RPC record marking (RFC 5531 section 11).
 * Streams are built byte by byte here and fed to the reassembler through
 * a libevent evbuffer, whole or in small pieces.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cunit_main.h"
#include "rpcrec.h"

#define LAST	1
#define MORE	0

/* A byte stream under construction. */
struct stream {
	uint8_t b[8192];
	size_t n;
};

/* Append one fragment (mark + payload) to s. */
static void
put_frag(struct stream *s, int last, const uint8_t *data, uint32_t len)
{
	uint32_t mark = (last ? 0x80000000u : 0) | len;

	s->b[s->n++] = (uint8_t)(mark >> 24);
	s->b[s->n++] = (uint8_t)(mark >> 16);
	s->b[s->n++] = (uint8_t)(mark >> 8);
	s->b[s->n++] = (uint8_t)mark;
	if (len > 0 && data != NULL)
		memcpy(s->b + s->n, data, len);
	s->n += len;
}

/* Fill p[0..n) with a pattern that starts at seed. */
static void
pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void
test_new_refuses_zero_max(void)
{
	struct rpcrec *r = rpcrec_new(0);

	CU_ASSERT_PTR_NULL(r);
	rpcrec_free(&r);	/* NULL is ignored */
	r = rpcrec_new(1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	rpcrec_free(&r);
	CU_ASSERT_PTR_NULL(r);
}

static void
test_single_fragment_record(void)
{
	struct rpcrec *r = rpcrec_new(1000);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t data[100], *rec = NULL;
	size_t len = 0;

	pattern(data, sizeof(data), 3);
	put_frag(&s, LAST, data, sizeof(data));
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rec);
	CU_ASSERT_EQUAL(memcmp(rec, data, 100), 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);
	free(rec);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_in_record_spans_mark_to_hand_out(void)
{
	struct rpcrec *r = rpcrec_new(1000);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t data[10] = { 0 }, *rec = NULL;
	size_t len = 0;

	CU_ASSERT_FALSE(rpcrec_in_record(r));
	put_frag(&s, MORE, data, 0);	/* an empty fragment starts it */
	put_frag(&s, LAST, data, sizeof(data));
	evbuffer_add(in, s.b, 3);	/* part of the first mark: not seen */
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	CU_ASSERT_FALSE(rpcrec_in_record(r));
	evbuffer_add(in, s.b + 3, 1 + 4 + 5);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	CU_ASSERT_TRUE(rpcrec_in_record(r));
	evbuffer_add(in, s.b + 13, s.n - 13);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, sizeof(data));
	CU_ASSERT_FALSE(rpcrec_in_record(r));
	free(rec);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_fragments_split_across_many_pulls(void)
{
	struct rpcrec *r = rpcrec_new(4096);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t data[1000], *rec = NULL;
	size_t len = 0, i;
	enum rpcrec_status st;

	pattern(data, sizeof(data), 11);
	put_frag(&s, MORE, data, 300);
	put_frag(&s, MORE, data + 300, 1);
	put_frag(&s, MORE, data + 301, 0);
	put_frag(&s, LAST, data + 301, 699);
	/* One byte per pull: every pull but the last needs more. */
	for (i = 0; i < s.n - 1; i++) {
		evbuffer_add(in, s.b + i, 1);
		st = rpcrec_pull(r, in, &rec, &len);
		CU_ASSERT_EQUAL(st, RPCREC_NEED_MORE);
		if (st != RPCREC_NEED_MORE)
			break;
	}
	evbuffer_add(in, s.b + s.n - 1, 1);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 1000);
	CU_ASSERT_EQUAL(memcmp(rec, data, 1000), 0);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);
	free(rec);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_several_records_in_one_buffer(void)
{
	struct rpcrec *r = rpcrec_new(4096);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t a[40], b[12], c[7], *rec = NULL;
	size_t len = 0;

	pattern(a, sizeof(a), 1);
	pattern(b, sizeof(b), 50);
	pattern(c, sizeof(c), 99);
	put_frag(&s, LAST, a, sizeof(a));
	put_frag(&s, MORE, b, 5);
	put_frag(&s, LAST, b + 5, 7);
	put_frag(&s, LAST, c, sizeof(c));
	put_frag(&s, MORE, a, 10);		/* start of a fourth record */
	evbuffer_add(in, s.b, s.n);

	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 40);
	CU_ASSERT_EQUAL(memcmp(rec, a, 40), 0);
	free(rec);
	/* The next records stay in the buffer until asked for. */
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 4 + 5 + 4 + 7 + 4 + 7 + 4 + 10);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 12);
	CU_ASSERT_EQUAL(memcmp(rec, b, 12), 0);
	free(rec);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 7);
	CU_ASSERT_EQUAL(memcmp(rec, c, 7), 0);
	free(rec);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);

	/* Finish the fourth record. */
	s.n = 0;
	put_frag(&s, LAST, a + 10, 30);
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 40);
	CU_ASSERT_EQUAL(memcmp(rec, a, 40), 0);
	free(rec);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_zero_length_fragments(void)
{
	struct rpcrec *r = rpcrec_new(64);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t d[3] = { 0xaa, 0xbb, 0xcc }, *rec = NULL;
	size_t len = 99;

	/* An empty record made of one empty last fragment. */
	put_frag(&s, LAST, NULL, 0);
	/* Empty fragments before, between and as the last fragment. */
	put_frag(&s, MORE, NULL, 0);
	put_frag(&s, MORE, d, 1);
	put_frag(&s, MORE, NULL, 0);
	put_frag(&s, MORE, d + 1, 2);
	put_frag(&s, LAST, NULL, 0);
	evbuffer_add(in, s.b, s.n);

	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_PTR_NOT_NULL(rec);
	free(rec);
	rec = NULL;
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_EQUAL(memcmp(rec, d, 3), 0);
	free(rec);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_record_of_exactly_max_is_accepted(void)
{
	struct rpcrec *r = rpcrec_new(100);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t d[100], *rec = NULL;
	size_t len = 0;

	pattern(d, sizeof(d), 5);
	put_frag(&s, MORE, d, 60);
	put_frag(&s, LAST, d + 60, 40);
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 100);
	CU_ASSERT_EQUAL(memcmp(rec, d, 100), 0);
	free(rec);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_oversize_single_fragment_before_data(void)
{
	struct rpcrec *r = rpcrec_new(100);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t d[101], *rec = NULL;
	size_t len = 0;

	pattern(d, sizeof(d), 9);
	put_frag(&s, LAST, d, 101);
	/* Only the mark and 10 bytes have arrived: refuse already. */
	evbuffer_add(in, s.b, 4 + 10);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	/* The data was not consumed (not buffered). */
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 10);
	/* The stream stays dead. */
	evbuffer_add(in, s.b + 14, s.n - 14);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 101);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_oversize_huge_mark(void)
{
	struct rpcrec *r = rpcrec_new(1 << 20);
	struct evbuffer *in = evbuffer_new();
	uint8_t mark[4] = { 0xff, 0xff, 0xff, 0xff }, *rec = NULL;
	size_t len = 0;

	evbuffer_add(in, mark, 4);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_oversize_over_several_fragments(void)
{
	struct rpcrec *r = rpcrec_new(100);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t d[101], *rec = NULL;
	size_t len = 0;

	pattern(d, sizeof(d), 2);
	put_frag(&s, MORE, d, 60);
	put_frag(&s, MORE, NULL, 0);
	put_frag(&s, LAST, d + 60, 41);
	evbuffer_add(in, s.b, 4 + 60 + 4);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	/* The third mark takes the total to 101: refused before its data. */
	evbuffer_add(in, s.b + 68, s.n - 68);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 41);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_truncated_mark_then_rest(void)
{
	struct rpcrec *r = rpcrec_new(100);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t d[20], *rec = NULL;
	size_t len = 0;

	pattern(d, sizeof(d), 77);
	put_frag(&s, LAST, d, 20);
	evbuffer_add(in, s.b, 2);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 2);
	evbuffer_add(in, s.b + 2, 2 + 19);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_NEED_MORE);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);
	evbuffer_add(in, s.b + 23, 1);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, in, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 20);
	CU_ASSERT_EQUAL(memcmp(rec, d, 20), 0);
	free(rec);
	evbuffer_free(in);
	rpcrec_free(&r);
}

static void
test_frame_writes_last_fragment_mark(void)
{
	struct evbuffer *out = evbuffer_new();
	struct rpcrec *r = rpcrec_new(100);
	const uint8_t d[5] = { 1, 2, 3, 4, 5 };
	const uint8_t want[9] = { 0x80, 0, 0, 5, 1, 2, 3, 4, 5 };
	uint8_t got[9], *rec = NULL;
	size_t len = 0;

	CU_ASSERT_EQUAL(rpcrec_frame(out, d, sizeof(d)), 0);
	CU_ASSERT_EQUAL(rpcrec_frame(out, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(evbuffer_get_length(out), 9 + 4);
	CU_ASSERT_EQUAL(evbuffer_copyout(out, got, 9), 9);
	CU_ASSERT_EQUAL(memcmp(got, want, 9), 0);
	/* Too long for 31 bits: refused before data is touched. */
	CU_ASSERT_EQUAL(rpcrec_frame(out, d, (size_t)0x80000000u), -1);
	CU_ASSERT_EQUAL(evbuffer_get_length(out), 13);
	/* What frame writes, pull reads back. */
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, out, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 5);
	CU_ASSERT_EQUAL(memcmp(rec, d, 5), 0);
	free(rec);
	CU_ASSERT_EQUAL_FATAL(rpcrec_pull(r, out, &rec, &len), RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, 0);
	free(rec);
	evbuffer_free(out);
	rpcrec_free(&r);
}

static void
test_large_record_in_random_pieces(void)
{
	enum { N = 200000 };
	struct rpcrec *r = rpcrec_new(N);
	struct evbuffer *in = evbuffer_new();
	uint8_t *d = malloc(N), *st = malloc(N + 64), *rec = NULL;
	size_t sn = 0, off = 0, len = 0, piece = 1, chunks[] = { 70000, 1, 0, 129999 };
	enum rpcrec_status s = RPCREC_NEED_MORE;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	pattern(d, N, 42);
	for (size_t i = 0, dpos = 0; i < 4; i++) {
		uint32_t mark = (i == 3 ? 0x80000000u : 0) | (uint32_t)chunks[i];

		st[sn++] = (uint8_t)(mark >> 24);
		st[sn++] = (uint8_t)(mark >> 16);
		st[sn++] = (uint8_t)(mark >> 8);
		st[sn++] = (uint8_t)mark;
		memcpy(st + sn, d + dpos, chunks[i]);
		sn += chunks[i];
		dpos += chunks[i];
	}
	while (off < sn) {
		size_t n = piece < sn - off ? piece : sn - off;

		evbuffer_add(in, st + off, n);
		off += n;
		piece = piece * 3 + 1;
		s = rpcrec_pull(r, in, &rec, &len);
		if (off < sn)
			CU_ASSERT_EQUAL(s, RPCREC_NEED_MORE);
	}
	CU_ASSERT_EQUAL_FATAL(s, RPCREC_RECORD);
	CU_ASSERT_EQUAL(len, N);
	CU_ASSERT_EQUAL(memcmp(rec, d, N), 0);
	free(rec);
	free(d);
	free(st);
	evbuffer_free(in);
	rpcrec_free(&r);
}

/* evbuffer callback: count the drains of a buffer (arg: a size_t). */
static void
count_drains(struct evbuffer *b, const struct evbuffer_cb_info *info,
	     void *arg)
{
	(void)b;
	if (info->n_deleted > 0)
		(*(size_t *)arg)++;
}

/* Pull one record from in, counting in's drains: its status, and the
 * record checked against want[0..want_len) and freed. */
static enum rpcrec_status
pull_counted(struct rpcrec *r, struct evbuffer *in, size_t *drains,
	     const uint8_t *want, size_t want_len)
{
	uint8_t *rec = NULL;
	size_t len = 0;
	enum rpcrec_status st;

	*drains = 0;
	st = rpcrec_pull(r, in, &rec, &len);
	if (st == RPCREC_RECORD) {
		CU_ASSERT_EQUAL(len, want_len);
		CU_ASSERT_PTR_NOT_NULL(rec);
		if (len == want_len && want_len > 0)
			CU_ASSERT_EQUAL(memcmp(rec, want, len), 0);
		free(rec);
	}
	return st;
}

/* A small record of one fragment found whole is taken with one drain
 * (mark and payload together), across evbuffer chains too; an empty one
 * as well; a record over 4096 bytes, one of several fragments or one not
 * yet whole takes the mark and the data apart, and comes out the same. */
static void
test_whole_record_taken_in_one_drain(void)
{
	struct rpcrec *r = rpcrec_new(8000);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t data[5000];
	size_t drains = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	evbuffer_add_cb(in, count_drains, &drains);
	pattern(data, sizeof(data), 5);
	/* 150 bytes, whole, followed by 2 bytes of the next mark. */
	put_frag(&s, LAST, data, 150);
	evbuffer_add(in, s.b, s.n);
	evbuffer_add(in, "\x80\x00", 2);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 150), RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 1);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 2);
	CU_ASSERT_FALSE(rpcrec_in_record(r));
	/* The rest of that mark (a 4096-byte record), its data in 3 chains. */
	evbuffer_add(in, "\x10\x00", 2);
	evbuffer_add(in, data, 1000);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 4096),
			RPCREC_NEED_MORE);
	/* Not whole: the states took the mark and the 1000 bytes. */
	CU_ASSERT_EQUAL(drains, 2);
	CU_ASSERT_TRUE(rpcrec_in_record(r));
	evbuffer_add(in, data + 1000, 3096);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 4096),
			RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 1);
	/* 4096 bytes whole, its mark split over two chains. */
	s.n = 0;
	put_frag(&s, LAST, data, 4096);
	evbuffer_add(in, s.b, 3);
	evbuffer_add(in, s.b + 3, s.n - 3);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 4096),
			RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 1);
	/* An empty record. */
	s.n = 0;
	put_frag(&s, LAST, NULL, 0);
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 0), RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 1);
	/* 4097 bytes: mark and data apart. */
	s.n = 0;
	put_frag(&s, LAST, data, 4097);
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 4097),
			RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 2);
	/* Two fragments, each whole: two marks, two data. */
	s.n = 0;
	put_frag(&s, MORE, data, 20);
	put_frag(&s, LAST, data + 20, 30);
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL(pull_counted(r, in, &drains, data, 50), RPCREC_RECORD);
	CU_ASSERT_EQUAL(drains, 4);
	CU_ASSERT_EQUAL(evbuffer_get_length(in), 0);
	evbuffer_free(in);
	rpcrec_free(&r);
}

/* Over max (100), a small record found whole is still refused. */
static void
test_whole_record_over_max_refused(void)
{
	struct rpcrec *r = rpcrec_new(100);
	struct evbuffer *in = evbuffer_new();
	struct stream s = { .n = 0 };
	uint8_t data[101] = { 0 }, *rec = NULL;
	size_t len = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	put_frag(&s, LAST, data, sizeof(data));
	evbuffer_add(in, s.b, s.n);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	CU_ASSERT_PTR_NULL(rec);
	CU_ASSERT_EQUAL(rpcrec_pull(r, in, &rec, &len), RPCREC_OVERSIZE);
	evbuffer_free(in);
	rpcrec_free(&r);
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite("rpcrec", NULL, NULL);

	if (s == NULL)
		return -1;
	if (!CU_add_test(s, "new_refuses_zero_max", test_new_refuses_zero_max) ||
	    !CU_add_test(s, "single_fragment_record", test_single_fragment_record) ||
	    !CU_add_test(s, "in_record_spans_mark_to_hand_out",
			 test_in_record_spans_mark_to_hand_out) ||
	    !CU_add_test(s, "fragments_split_across_many_pulls",
			 test_fragments_split_across_many_pulls) ||
	    !CU_add_test(s, "several_records_in_one_buffer",
			 test_several_records_in_one_buffer) ||
	    !CU_add_test(s, "zero_length_fragments", test_zero_length_fragments) ||
	    !CU_add_test(s, "record_of_exactly_max_is_accepted",
			 test_record_of_exactly_max_is_accepted) ||
	    !CU_add_test(s, "oversize_single_fragment_before_data",
			 test_oversize_single_fragment_before_data) ||
	    !CU_add_test(s, "oversize_huge_mark", test_oversize_huge_mark) ||
	    !CU_add_test(s, "oversize_over_several_fragments",
			 test_oversize_over_several_fragments) ||
	    !CU_add_test(s, "truncated_mark_then_rest",
			 test_truncated_mark_then_rest) ||
	    !CU_add_test(s, "frame_writes_last_fragment_mark",
			 test_frame_writes_last_fragment_mark) ||
	    !CU_add_test(s, "large_record_in_random_pieces",
			 test_large_record_in_random_pieces) ||
	    !CU_add_test(s, "whole_record_taken_in_one_drain",
			 test_whole_record_taken_in_one_drain) ||
	    !CU_add_test(s, "whole_record_over_max_refused",
			 test_whole_record_over_max_refused))
		return -1;
	return 0;
}
