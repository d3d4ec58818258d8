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
#     rows of 13 columns, the idle rows with "-" as hit% and latency;
#   - the harness's proxy has no cache_dir: the summary says "disk off (no
#     cache_dir)", the rows print "off" as disk columns and the JSON has
#     "disk": "none" with null disk numbers, never zeros.
# Then the proxy is replaced by one with a disk tier (cache_dir in the
# test's temp dir): the file is read, stored on disk (waited for on the
# proxy's own nfscached_disk_bytes, bounded), dropped from RAM with
# `nfscached cache drop` and read again, so every page of the second read
# comes from disk; the summary, a row and the JSON then show the tier on,
# 1 MiB held, disk hits > 0 with exactly 1 MiB of hit bytes, no checksum
# failure and no error. A --watch left running across that restart says
# once that the daemon does not answer, and prints rows again after it.
# Run under harness.sh --proxy-may-exit.
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
check "text: 13 columns in every row" \
	test "$(sed -n '2,4p' <<<"$text" | awk 'NF != 13' | wc -l)" -eq 0
check "text: the disk columns' header" \
	test "$(sed -n 1p <<<"$text" | awk '{print $11, $12}')" = "disk/s diskheld"
check "text: no cache_dir, so the disk columns say off" \
	test "$(sed -n '2,4p' <<<"$text" | awk '{print $11, $12}' | sort -u)" = "off off"
check "JSON: no cache_dir, so disk none and no disk numbers" \
	jq -e '.disk == "none" and .disk_on == false and .disk_hits == null and .disk_bytes == null and .disk_errors == null' <<<"$first"
summary=$("$bin" stats --metrics "$NFSC_METRICS_ADDR")
echo "$summary"
check "summary: disk off (no cache_dir)" \
	grep -qx 'disk       off (no cache_dir)' <<<"$summary"
check "text: the first row's hit ratio is 50.0%" \
	test "$(sed -n 2p <<<"$text" | awk '{print $5}')" = 50.0
check "text: idle rows print - for hit% and latency" \
	test "$(sed -n '3,4p' <<<"$text" | awk '{print $2, $5, $6, $7}' | sort -u)" = "0.0 - - -"

# ---- the same proxy with a disk tier ----
conf=$NFSC_TMP/stats_disk.conf
# Its admin socket in a directory that does not exist yet: the daemon
# makes it (as RuntimeDirectory= does under systemd), and `nfscached
# cache --config` finds the socket through the file.
sed "s|^admin_socket = .*|admin_socket = \"$NFSC_TMP/adm/admin.sock\"|" \
	"$NFSC_PROXY_CONF" >"$conf"
cat >>"$conf" <<EOF
cache_dir = "$NFSC_TMP/diskcache"
disk_cache_size = 64
EOF
# The harness's proxy is not this shell's child: stop it by its pid.
kill -TERM "$NFSC_PROXY_PID"
nfsc_wait_gone "$NFSC_PROXY_PID" 600 || { echo "FAIL: the harness proxy did not stop" >&2; exit 1; }
nfsc_proxy_start "$NFSC_TMP/stats_disk.log" "$NFSC_PROXY_NFS_PORT" \
	"$NFSC_PROXY_MOUNT_PORT" "$bin" --config "$conf" || exit 1
nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" watched.bin)" >"$NFSC_TMP/read3"
check "the log names the version at start" \
	grep -qE "info: nfscached [0-9][^ ]* serving NFS v3" "$NFSC_TMP/stats_disk.log"
check "the admin socket's directory was made, mode 0700" \
	test "$(stat -c %a "$NFSC_TMP/adm")" = 700
check "cache --config finds the admin socket" \
	"$bin" cache --config "$conf" status
check "disk tier: the first read is right" cmp -s "$NFSC_TMP/read3" "$NFSC_EXPORT_DIR/watched.bin"
# The stores are asynchronous: wait for the proxy's own count, bounded at
# 300 s so that a busy machine still passes.
for ((i = 0; i < 3000; i++)); do
	held=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_bytes)
	((held >= size)) && break
	sleep 0.1
done
check "disk tier: the file is on disk ($held bytes)" test "$held" -eq "$size"
# Wait (bounded at 300 s) until file $1 has more than $2 lines.
wait_lines() {
	local i
	for ((i = 0; i < 3000; i++)); do
		(($(wc -l <"$1") > $2)) && return 0
		sleep 0.1
	done
	return 1
}

# A restart empties RAM; the disk tier keeps the file. A watch running
# across it says the daemon does not answer and goes on when it is back.
"$bin" stats --metrics "$NFSC_METRICS_ADDR" --watch 0.1 --count 100000 \
	>"$NFSC_TMP/watch.out" 2>"$NFSC_TMP/watch.err" &
wpid=$!
wait_lines "$NFSC_TMP/watch.out" 1 || echo "FAIL: the watch printed no row" >&2
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || { echo "FAIL: disk proxy: exit $NFSC_PROXY_STATUS" >&2; fails=$((fails + 1)); }
wait_lines "$NFSC_TMP/watch.err" 0 || true
check "watch: says the daemon does not answer" \
	grep -q "no answer; trying again every 0.1 s" "$NFSC_TMP/watch.err"
rows=$(wc -l <"$NFSC_TMP/watch.out")
nfsc_proxy_start "$NFSC_TMP/stats_disk2.log" "$NFSC_PROXY_NFS_PORT" \
	"$NFSC_PROXY_MOUNT_PORT" "$bin" --config "$conf" || exit 1
check "watch: prints rows again once the daemon is back" \
	wait_lines "$NFSC_TMP/watch.out" "$rows"
check "watch: still running across the restart" kill -0 "$wpid"
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" watched.bin)" >"$NFSC_TMP/read4"
check "disk tier: the read from disk is right" cmp -s "$NFSC_TMP/read4" "$NFSC_EXPORT_DIR/watched.bin"

dj=$("$bin" stats --metrics "$NFSC_METRICS_ADDR" --json)
echo "$dj"
check "JSON: disk on, 1 MiB held of 64 MiB" \
	jq -e --argjson n "$size" '.disk == "on" and .disk_on == true and .disk_bytes == $n and .disk_budget_bytes == 64 * 1048576' <<<"$dj"
check "JSON: the second read hit disk: hits > 0, 1 MiB of hit bytes" \
	jq -e --argjson n "$size" '.disk_hits > 0 and .disk_hit_bytes == $n and .disk_hits_per_second > 0' <<<"$dj"
check "JSON: no checksum failure, no disk error" \
	jq -e '.disk_checksum_failures == 0 and .disk_errors == 0' <<<"$dj"
hits=$(jq .disk_hits <<<"$dj")
summary=$("$bin" stats --metrics "$NFSC_METRICS_ADDR")
echo "$summary"
check "summary: the disk line" \
	grep -qx "disk       on: 1.0 MiB held of 64.0 MiB budget; $hits hits (1.0 MiB), 0 checksum failures, 0 errors" <<<"$summary"
text=$("$bin" stats --metrics "$NFSC_METRICS_ADDR" --watch 0.2 --count 2)
echo "$text"
check "text: since start, disk hits per second > 0 and 1.0M held" \
	awk 'NR == 2 { exit !($11 > 0 && $12 == "1.0M") }' <<<"$text"
check "text: an idle interval, 0.0 disk hits per second" \
	awk 'NR == 3 { exit !($11 == "0.0" && $12 == "1.0M") }' <<<"$text"
# cache drop empties the disk tier too: nothing held, and the next read
# fetches the whole file upstream.
"$bin" cache --config "$conf" drop
for ((i = 0; i < 3000; i++)); do
	held=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_bytes)
	((held == 0)) && break
	sleep 0.1
done
check "drop: the disk tier holds nothing ($held bytes)" test "$held" -eq 0
up0=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_upstream_read_bytes_total)
nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" watched.bin)" >"$NFSC_TMP/read5"
up1=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_upstream_read_bytes_total)
check "drop: the next read is right" cmp -s "$NFSC_TMP/read5" "$NFSC_EXPORT_DIR/watched.bin"
check "drop: the next read fetched the whole file upstream ($((up1 - up0)) bytes)" \
	test $((up1 - up0)) -eq "$size"
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || { echo "FAIL: disk proxy: exit $NFSC_PROXY_STATUS" >&2; fails=$((fails + 1)); }
echo "test_stats_watch: $fails failure(s)"
((fails == 0))
