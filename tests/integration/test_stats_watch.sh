#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `nfscached stats --watch` against a live proxy, bounded by --count so
# that nothing depends on timing. A known workload runs first: a 1 MiB
# file written behind Ganesha's back, read twice through the proxy with
# nfs-cat (the first read fetches it, the second is served from the
# cache). Then:
#   - `--watch 1 --count 2 --json` prints two JSON objects: the first
#     covers the time since the daemon started and shows the workload's
#     2 MiB of READ bytes with a byte hit ratio of exactly 0.5; the second
#     is an interval with no READ: 0 READs and null (not 0) hit ratio and
#     latencies;
#   - `--watch 0.2 --count 3` on a pipe prints one header line and three
#     rows of 11 columns, the idle rows with "-" as hit% and latency.
# Run under harness.sh.
set -euo pipefail
# shellcheck source=../../scripts/lib.sh
. "${NFSC_LIB:?run under harness.sh}"

bin=${NFSCACHED_BIN:?}
size=$((1024 * 1024))
fails=0

# Record a check: $1 is the description, the rest the test command.
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what" >&2
		fails=$((fails + 1))
	fi
}

head -c "$size" /dev/urandom >"$NFSC_EXPORT_DIR/watched.bin"
for i in 1 2; do
	nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" watched.bin)" >"$NFSC_TMP/read$i" ||
		{ echo "FAIL: nfs-cat $i" >&2; exit 1; }
	cmp "$NFSC_TMP/read$i" "$NFSC_EXPORT_DIR/watched.bin"
done

json=$("$bin" stats --metrics "$NFSC_METRICS_ADDR" --watch 1 --count 2 --json)
echo "$json"
check "two JSON lines" test "$(jq -c . <<<"$json" | wc -l)" -eq 2
first=$(sed -n 1p <<<"$json")
second=$(sed -n 2p <<<"$json")
check "first row covers the daemon's run" \
	test "$(jq .since_start <<<"$first")" = true
check "first row: the 2 MiB the workload read" \
	test "$(jq .read_bytes <<<"$first")" -eq $((2 * size))
check "first row: half of it from the cache" \
	test "$(jq .hit_ratio_bytes <<<"$first")" = 0.5
check "first row: READs timed" \
	jq -e '.reads >= 2 and .read_p50_seconds > 0 and .read_p99_seconds >= .read_p50_seconds' <<<"$first"
check "first row: 1 of 1 export up" \
	jq -e '.exports == 1 and .exports_up == 1' <<<"$first"
check "second row: an interval, not since start" \
	jq -e '.since_start == false and .interval_seconds > 0' <<<"$second"
check "second row: no READ, so no ratio and no latency" \
	jq -e '.reads == 0 and .read_bytes == 0 and .hit_ratio_bytes == null and .read_p50_seconds == null and .read_p99_seconds == null' <<<"$second"
check "second row: nothing dirty" jq -e '.dirty_bytes == 0' <<<"$second"

text=$("$bin" stats --metrics "$NFSC_METRICS_ADDR" --watch 0.2 --count 3)
echo "$text"
check "text: a header and three rows" test "$(wc -l <<<"$text")" -eq 4
check "text: the header" \
	test "$(sed -n 1p <<<"$text" | awk '{print $1, $2, $5, $6, $10}')" = "time READ/s hit% rd_p50ms cached"
check "text: 11 columns in every row" \
	test "$(sed -n '2,4p' <<<"$text" | awk 'NF != 11' | wc -l)" -eq 0
check "text: the first row's hit ratio is 50.0%" \
	test "$(sed -n 2p <<<"$text" | awk '{print $5}')" = 50.0
check "text: idle rows print - for hit% and latency" \
	test "$(sed -n '3,4p' <<<"$text" | awk '{print $2, $5, $6, $7}' | sort -u)" = "0.0 - - -"
echo "test_stats_watch: $fails failure(s)"
((fails == 0))
