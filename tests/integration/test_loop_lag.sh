#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# integration.loop_lag: nfscached_loop_lag_seconds{loop="0"}. Under
# harness.sh with the proxy on its test clock (NFSCACHED_TEST_CLOCK=1,
# which serves POST /debug/loop/stall): the histogram's _count grows
# between two scrapes (the timer runs on the real clock, whatever the test
# clock does), and a stall of the loop of 600 ms shows as an observation
# over 0.25 s: the timer is due at most 100 ms after its last firing, so
# a 600 ms stall makes it at least 500 ms late. Conditions, not sleeps:
# each wait polls with a generous limit.
set -euo pipefail
: "${NFSC_METRICS_ADDR:?run under harness.sh}"
m=http://$NFSC_METRICS_ADDR

fail() { echo "loop_lag: FAIL: $*" >&2; exit 1; }

# Print the value of series $1 (exact text before the value) in a scrape.
sample() {
	curl -sf "$m/metrics" | awk -v s="$1" '$1 == s { print $2 }'
}

count() { sample 'nfscached_loop_lag_seconds_count{loop="0"}'; }
over() {	# observations over 0.25 s
	local c b
	c=$(count)
	b=$(sample 'nfscached_loop_lag_seconds_bucket{loop="0",le="0.25"}')
	echo $((c - b))
}

c1=$(count)
[[ -n "$c1" ]] || fail "no nfscached_loop_lag_seconds_count{loop=\"0\"}"
for ((i = 0; i < 600; i++)); do
	[[ $(count) -gt $c1 ]] && break
	sleep 0.1
done
[[ $(count) -gt $c1 ]] || fail "_count stayed at $c1"
echo "count grew from $c1 to $(count)"

o1=$(over)
curl -sf -X POST "$m/debug/loop/stall?ms=600" | grep -qx 'stalled 600' ||
	fail "POST /debug/loop/stall"
for ((i = 0; i < 600; i++)); do
	[[ $(over) -gt $o1 ]] && break
	sleep 0.1
done
o2=$(over)
[[ $o2 -gt $o1 ]] || fail "no observation over 0.25 s after a 600 ms stall ($o1 -> $o2)"
# Out of range is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$m/debug/loop/stall?ms=0")
[[ $code == 400 ]] || fail "ms=0 answered $code, not 400"
echo "loop_lag: ok (observations over 0.25 s: $o1 -> $o2)"
