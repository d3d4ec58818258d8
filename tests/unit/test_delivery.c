/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for proto/delivery: the READ delivery rate with given times
 * (no clock is read): a sample is the READ bytes received over one READ's
 * flight, from the last READ reply before it was sent; replies read in a
 * burst after a stall do not make a rate the link never carried; a
 * reader that asks for little lowers nothing; samples expire after one
 * to two windows.
 */
#include <string.h>

#include "cunit_main.h"
#include "delivery.h"

#define MiB (1024.0 * 1024)

/* Four 1 MiB READs sent together at t = 0 on an idle connection, replies
 * 1 ms apart from t = 5 ms (a 5 ms round trip, 1 MiB/ms behind it). */
static void
test_window_of_reads_measures_the_link(void)
{
	struct delivery d = { 0 };
	struct delivery_mark m[4];

	CU_ASSERT_EQUAL(delivery_rate(&d), 0);
	for (int i = 0; i < 4; i++)
		delivery_sent(&d, 0, &m[i]);
	for (int i = 0; i < 4; i++)
		delivery_reply(&d, 0.005 + 0.001 * i, true, (size_t)MiB, &m[i]);
	/* The 4th: 4 MiB over the 8 ms since its mark (the send time: no
	 * reply had come before). */
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), 4 * MiB / 0.008, 1);
	/* The next window, sent while the last replies came: sent at 8 ms
	 * (mark: the reply at 8 ms), replies 1 ms apart from 13 ms. */
	for (int i = 0; i < 4; i++)
		delivery_sent(&d, 0.008, &m[i]);
	for (int i = 0; i < 4; i++)
		delivery_reply(&d, 0.013 + 0.001 * i, true, (size_t)MiB, &m[i]);
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), 4 * MiB / 0.008, 1);
}

/* Replies that piled up while the loop stalled and were read within
 * 10 us of each other: a sample spans the READ's whole flight, so the
 * burst counts as what it is, 8 MiB in 10 ms, not 1 MiB per 10 us. */
static void
test_burst_after_a_stall_is_not_a_fast_link(void)
{
	struct delivery d = { 0 };
	struct delivery_mark m[8];

	for (int i = 0; i < 8; i++)
		delivery_sent(&d, 0, &m[i]);
	for (int i = 0; i < 8; i++)
		delivery_reply(&d, 0.010 + 0.00001 * i, true, (size_t)MiB,
			       &m[i]);
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), 8 * MiB / 0.01007, 1);
}

/* A reader with one 64 KiB READ in flight at a time (app-limited) makes
 * low samples; they do not lower the rate a window measured. Non-READ
 * replies count no bytes and make no sample. */
static void
test_small_reads_lower_nothing(void)
{
	struct delivery d = { 0 };
	struct delivery_mark m[4], one;
	double t = 0.008;

	for (int i = 0; i < 4; i++)
		delivery_sent(&d, 0, &m[i]);
	for (int i = 0; i < 4; i++)
		delivery_reply(&d, 0.005 + 0.001 * i, true, (size_t)MiB, &m[i]);
	for (int i = 0; i < 10; i++) {
		delivery_sent(&d, t, &one);
		t += 0.005;
		delivery_reply(&d, t, true, 65536, &one);
		CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), 4 * MiB / 0.008, 1);
	}
	delivery_sent(&d, t, &one);
	delivery_reply(&d, t + 0.005, false, 100, &one);
	CU_ASSERT_DOUBLE_EQUAL(d.bytes, 4 * MiB + 10 * 65536, 0);
	/* Alone, the small READs' own rate: 64 KiB per 5 ms. */
	memset(&d, 0, sizeof(d));
	delivery_sent(&d, 1, &one);
	delivery_reply(&d, 1.005, true, 65536, &one);
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), 65536 / 0.005, 1e-3);
}

/* A sample spanning under 1 ms (a LAN) is left out; a sample stays one to
 * two windows of 10 s, then the rate is unknown (0) again. */
static void
test_short_spans_and_old_samples_are_dropped(void)
{
	struct delivery d = { 0 };
	struct delivery_mark m;

	delivery_sent(&d, 0, &m);
	delivery_reply(&d, 0.0002, true, (size_t)MiB, &m);
	CU_ASSERT_EQUAL(delivery_rate(&d), 0);
	delivery_sent(&d, 1, &m);		/* mark: the reply at 0.2 ms */
	delivery_reply(&d, 1.0002, true, (size_t)MiB, &m);
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), MiB / 1.0, 1);
	/* Replies moving the windows on: kept through the next window ... */
	delivery_sent(&d, 12, &m);
	delivery_reply(&d, 12.0001, false, 100, &m);
	CU_ASSERT_DOUBLE_EQUAL(delivery_rate(&d), MiB / 1.0, 1);
	/* ... and forgotten after it. */
	delivery_sent(&d, 23, &m);
	delivery_reply(&d, 23.0001, false, 100, &m);
	CU_ASSERT_EQUAL(delivery_rate(&d), 0);
}

int
test_register(void)
{
	CU_pSuite s = CU_add_suite("delivery", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "window_of_reads_measures_the_link",
			 test_window_of_reads_measures_the_link) ||
	    !CU_add_test(s, "burst_after_a_stall_is_not_a_fast_link",
			 test_burst_after_a_stall_is_not_a_fast_link) ||
	    !CU_add_test(s, "small_reads_lower_nothing",
			 test_small_reads_lower_nothing) ||
	    !CU_add_test(s, "short_spans_and_old_samples_are_dropped",
			 test_short_spans_and_old_samples_are_dropped))
		return -1;
	return 0;
}
