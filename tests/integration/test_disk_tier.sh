#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The disk tier with the real Ganesha upstream (issue 17). Under
# harness.sh --proxy-may-exit: the harness's nfscached is replaced by one
# with cache_size = 16 (MiB), cache_dir in the test's temp dir and
# disk_cache_size = 1024, on the same ports. A 64 MiB file is read once
# (cold: from the upstream, and stored on disk), then read again:
#   1. by the same process: at most 1 MiB fetched upstream (RAM holds 16);
#   2. after SIGTERM and a restart: at most 1 MiB fetched upstream;
#   3. after SIGKILL and a restart: the same;
#   4. after a byte of the slab was flipped while the proxy was down: the
#      page fails its checksum (counted) and is fetched again;
#   5. after the file was rewritten on the upstream while the proxy was
#      down: the new contents are served (the stored pages are dropped);
# every read byte-identical to the file in the export directory. The
# fetched bytes are nfscached_cache_fetch_bytes_total (upstream READs that
# fill pages, readahead included) of the process that served the read.
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_TMP:?}" "${NFSC_LIB:?}"
: "${NFSCACHED_BIN:?}" "${NFSC_EXPORT_DIR:?}" "${NFSC_PROXY_URL:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

conf=$NFSC_TMP/disk_tier.conf
log=$NFSC_TMP/disk_tier.log
cp "$NFSC_PROXY_CONF" "$conf"
cat >>"$conf" <<EOF
cache_size = 16
cache_dir = "$NFSC_TMP/diskcache"
disk_cache_size = 1024
EOF

# Replace the harness's proxy by ours (same ports).
kill -TERM "$NFSC_PROXY_PID"
nfsc_wait_gone "$NFSC_PROXY_PID" 600 || { echo "harness proxy did not stop"; exit 1; }

start() {
	nfsc_proxy_start "$log" "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
		"$NFSCACHED_BIN" --config "$conf"
}

fetched() {
	nfsc_metric "$NFSC_METRICS_ADDR" nfscached_cache_fetch_bytes_total
}

# Read the file through the proxy and compare it with the export's copy.
read_check() {
	local what=$1 out=$NFSC_TMP/out
	local t0 t1
	rm -f "$out"
	t0=$(date +%s%N)
	nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" big)" >"$out"
	t1=$(date +%s%N)
	# Information only (no assertion depends on speed).
	echo "INFO: $what: $((64 * 1000000000 / (t1 - t0 + 1))) MiB/s"
	if cmp -s "$out" "$NFSC_EXPORT_DIR/big"; then
		pass "$what: byte-identical"
	else
		fail "$what: contents differ"
	fi
}

# Assert the bytes fetched upstream by this process are at most $2.
expect_fetched_at_most() {
	local what=$1 max=$2 got
	got=$(fetched)
	if ((got <= max)); then
		pass "$what: $got bytes fetched upstream (at most $max)"
	else
		fail "$what: $got bytes fetched upstream (more than $max)"
	fi
}

head -c $((64 << 20)) /dev/urandom >"$NFSC_EXPORT_DIR/big"
start
read_check "cold read"
cold=$(fetched)
if ((cold >= 64 << 20)); then
	pass "cold read fetched the file upstream ($cold bytes)"
else
	fail "cold read fetched only $cold bytes"
fi
# The stores are asynchronous: wait until all 1024 pages are on disk (a
# condition on the proxy's own count, not a time; bounded at 300 s so a
# busy machine still passes).
for ((i = 0; i < 3000; i++)); do
	held=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_bytes)
	((held >= 64 << 20)) && break
	sleep 0.1
done
((held >= 64 << 20)) && pass "disk holds $held bytes" ||
	fail "disk holds only $held bytes ($(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_stores_dropped_total) stores dropped)"

read_check "warm read, same process"
expect_fetched_at_most "warm read, same process" $((cold + (1 << 20)))
hits=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_hits_total)
((hits > 0)) && pass "disk hits: $hits" || fail "no disk hits"

nfsc_proxy_stop "$NFSC_PROXY_PID" 60 && pass "SIGTERM: exit 0" || fail "SIGTERM: exit $NFSC_PROXY_STATUS"
start
read_check "after SIGTERM + restart"
expect_fetched_at_most "after SIGTERM + restart" $((1 << 20))

kill -KILL "$NFSC_PROXY_PID"
wait "$NFSC_PROXY_PID" 2>/dev/null || true
start
read_check "after SIGKILL + restart"
expect_fetched_at_most "after SIGKILL + restart" $((1 << 20))

# A corrupted page on disk (one byte flipped in the first slot, while the
# proxy is down) is detected by its checksum and fetched again.
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || fail "SIGTERM: exit $NFSC_PROXY_STATUS"
printf '\x5a' | dd of="$NFSC_TMP/diskcache/slab" bs=1 seek=100 conv=notrunc status=none
start
read_check "after a corrupted slab byte"
bad=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_checksum_failures_total)
((bad == 1)) && pass "checksum failures: 1" || fail "checksum failures: $bad (want 1)"
expect_fetched_at_most "after a corrupted slab byte" $((1 << 20))

# Rewritten on the upstream while the proxy is down: served new.
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || fail "SIGTERM: exit $NFSC_PROXY_STATUS"
# In place (same inode, so the same file handle), behind Ganesha's back.
head -c $((64 << 20)) /dev/urandom >"$NFSC_TMP/big.new"
cat "$NFSC_TMP/big.new" >"$NFSC_EXPORT_DIR/big"
start
read_check "rewritten while down"
drops=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_disk_drops_total)
((drops > 0)) && pass "old pages dropped: $drops" || fail "no pages dropped"

nfsc_proxy_stop "$NFSC_PROXY_PID" 60 && pass "final SIGTERM: exit 0" || fail "final SIGTERM: exit $NFSC_PROXY_STATUS"
echo "$fails failure(s)"
((fails == 0))
