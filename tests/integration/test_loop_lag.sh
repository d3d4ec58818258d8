#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# integration.loop_lag: nfscached_loop_lag_seconds{loop="0"}. Under
# harness.sh with the proxy on its test clock (NFSCACHED_TEST_CLOCK=1,
# which serves POST /debug/loop/stall, and which this test never moves):
# a stall of the loop of 600 ms shows as one observation over 0.5 s, and
# the histogram's _count grows across it (the timer runs on the real
# clock, whatever the test clock does).
#
# Why over 0.5 s: the timer is always pending, due 100 ms after its last
# firing (looplag.c), and that firing was before the stall began, so the
# timer is at least 500 ms late when the loop gets to it.
#
# Why no polling: the POST's reply is written by the loop after the
# stall callback returns, in a later loop turn, and the timer, overdue
# by then, fires no later than that turn; a scrape sent after curl got
# the reply is read in a turn after that. So the first scrape after the
# POST holds the observation: an order, not a time.
#
# Every value compared comes from one scrape: the timer fires every
# 100 ms, and on a loaded machine one scrape takes longer than that, so
# _count and a _bucket read from two scrapes disagree by a few firings.
set -euo pipefail
: "${NFSC_METRICS_ADDR:?run under harness.sh}"
m=http://$NFSC_METRICS_ADDR

fail() { echo "loop_lag: FAIL: $*" >&2; exit 1; }

# Print, from one scrape, loop 0's _count and the observations over
# 0.5 s (_count minus the le="0.5" bucket), as "COUNT OVER".
scrape() {
	local out
	out=$(curl -sf "$m/metrics") || fail "GET /metrics"
	awk '
		$1 == "nfscached_loop_lag_seconds_count{loop=\"0\"}" { c = $2 }
		$1 == "nfscached_loop_lag_seconds_bucket{loop=\"0\",le=\"0.5\"}" { b = $2 }
		END {
			if (c == "" || b == "")
				exit 1
			print c, c - b
		}' <<<"$out" || fail "no _count or le=\"0.5\" bucket of loop 0"
}

s1=$(scrape)
curl -sf -X POST "$m/debug/loop/stall?ms=600" | grep -qx 'stalled 600' ||
	fail "POST /debug/loop/stall"
s2=$(scrape)
read -r c1 o1 <<<"$s1"
read -r c2 o2 <<<"$s2"
echo "count $c1 -> $c2, observations over 0.5 s $o1 -> $o2"
((c2 > c1)) || fail "_count stayed at $c1 across a 600 ms stall"
((o2 > o1)) || fail "no observation over 0.5 s after a 600 ms stall ($o1 -> $o2)"
# One series per event loop: threads = NFSC_PROXY_THREADS (1 unless the
# harness set it: integration.loop_lag.t4 runs 4), numbered from 0.
want=${NFSC_PROXY_THREADS:-1}
loops=$(curl -sf "$m/metrics" |
	grep -o '^nfscached_loop_lag_seconds_count{loop="[0-9]*"}' | sort -u) ||
	fail "GET /metrics"
expect=$(for ((k = 0; k < want; k++)); do
	echo "nfscached_loop_lag_seconds_count{loop=\"$k\"}"; done | sort -u)
[[ "$loops" == "$expect" ]] ||
	fail "lag series $(echo $loops) are not loops 0..$((want - 1))"
# Out of range is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$m/debug/loop/stall?ms=0")
[[ $code == 400 ]] || fail "ms=0 answered $code, not 400"
echo "loop_lag: ok"
