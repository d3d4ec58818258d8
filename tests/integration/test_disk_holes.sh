#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The disk tier keeps a file's known holes (issue 17: "known holes ... are
# stored with the data"), with the real Ganesha upstream. Under
# harness.sh --proxy-may-exit: the harness's nfscached is replaced by one
# with cache_dir in the test's temp dir, on the same ports, and with
# acregmin = acregmax = 0 in its export (every READ revalidates, so a
# change on the upstream is seen on the next READ, with no waiting).
#
# The file: 1 MiB of data, a 32 MiB hole, 1 MiB of data, written sparse in
# the export directory. NFSv3 has no READ_PLUS or SEEK_HOLE, so Ganesha
# returns the hole's zeros and the proxy records its all-zero blocks
# (hole_granularity, 4096 by default) as holes (as in test_holes.c's
# holes_zero_blocks). Read through the proxy:
#   1. cold: 34 MiB fetched upstream, 32 MiB recorded as holes; the disk
#      stores 544 pages (64 KiB) holding exactly 2 MiB of data bytes (the
#      hole pages store none);
#   2. after SIGTERM and a restart (RAM cold): 0 upstream READs and 0
#      upstream READ bytes, 32 MiB served from holes, 2 MiB from the cache
#      (544 disk hits, 2 MiB of them data);
#   3. rewritten in place on the upstream (the hole filled with data), read
#      again by the same process: the new bytes, 34 MiB fetched upstream,
#      none served as holes, the old disk pages dropped.
# Every read byte-identical to the file in the export directory. The
# upstream counts are the proxy's own (docs/metrics.md):
# nfscached_upstream_read_bytes_total and
# nfscached_upstream_rpcs_total{procedure="read"}.
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_TMP:?}" "${NFSC_LIB:?}"
: "${NFSCACHED_BIN:?}" "${NFSC_EXPORT_DIR:?}" "${NFSC_PROXY_URL:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

MIB=$((1 << 20))
PAGE=65536		# the default page_size
SIZE=$((34 * MIB))
PAGES=$((SIZE / PAGE))

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

conf=$NFSC_TMP/disk_holes.conf
log=$NFSC_TMP/disk_holes.log
# The harness's config, acregmin/acregmax 0 inside the export section.
sed '/^export "\/export" {$/a\
\tacregmin = 0\
\tacregmax = 0' "$NFSC_PROXY_CONF" >"$conf"
grep -q 'acregmax = 0' "$conf" || { echo "no export section in $NFSC_PROXY_CONF"; exit 1; }
cat >>"$conf" <<EOF
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

metric() {
	nfsc_metric "$NFSC_METRICS_ADDR" "$1"
}

# Assert metric $2 (of this process) equals $3 ($1 says what).
expect() {
	local what=$1 name=$2 want=$3 got
	got=$(metric "$name") || got=missing
	if [[ "$got" == "$want" ]]; then
		pass "$what: $name = $want"
	else
		fail "$what: $name = $got (want $want)"
	fi
}

# Assert that metric $2 grew by exactly $3 since value $4.
expect_delta() {
	local what=$1 name=$2 want=$3 before=$4 got
	got=$(metric "$name") || got=0
	if ((got - before == want)); then
		pass "$what: $name grew by $want"
	else
		fail "$what: $name grew by $((got - before)) (want $want)"
	fi
}

# Read the file through the proxy and compare it with the export's copy.
read_check() {
	local what=$1 out=$NFSC_TMP/out
	rm -f "$out"
	nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" sparse)" >"$out"
	if cmp -s "$out" "$NFSC_EXPORT_DIR/sparse"; then
		pass "$what: byte-identical"
	else
		fail "$what: contents differ"
	fi
}

# 1 MiB of data, a 32 MiB hole, 1 MiB of data (sparse on the export's
# filesystem: the hole takes no blocks there either).
f=$NFSC_EXPORT_DIR/sparse
head -c "$MIB" /dev/urandom >"$f"
truncate -s $((33 * MIB)) "$f"
head -c "$MIB" /dev/urandom >>"$f"
(($(stat -c %s "$f") == SIZE)) || { echo "sparse file has the wrong size"; exit 1; }

start
read_check "cold read"
expect "cold read" nfscached_upstream_read_bytes_total "$SIZE"
expect "cold read" nfscached_cache_hole_bytes $((32 * MIB))
# The stores are asynchronous: wait until all pages are on disk (a
# condition on the proxy's own count, not a time; bounded at 300 s so a
# busy machine still passes).
for ((i = 0; i < 3000; i++)); do
	stored=$(metric nfscached_disk_stores_total)
	((stored >= PAGES)) && break
	sleep 0.1
done
expect "cold read" nfscached_disk_stores_total "$PAGES"
expect "cold read, data bytes stored (the hole pages store none)" \
	nfscached_disk_store_bytes_total $((2 * MIB))
expect "cold read" nfscached_disk_stores_dropped_total 0
expect "cold read" nfscached_disk_bytes $((PAGES * PAGE))

nfsc_proxy_stop "$NFSC_PROXY_PID" 60 && pass "SIGTERM: exit 0" || fail "SIGTERM: exit $NFSC_PROXY_STATUS"
start
read_check "after SIGTERM + restart"
expect "after restart" 'nfscached_upstream_rpcs_total{procedure="read"}' 0
expect "after restart" nfscached_upstream_read_bytes_total 0
expect "after restart" 'nfscached_read_bytes_total{source="hole"}' $((32 * MIB))
expect "after restart" 'nfscached_read_bytes_total{source="cache"}' $((2 * MIB))
expect "after restart" 'nfscached_read_bytes_total{source="upstream"}' 0
expect "after restart" nfscached_disk_hits_total "$PAGES"
expect "after restart" nfscached_disk_hit_bytes_total $((2 * MIB))
expect "after restart" nfscached_cache_hole_bytes $((32 * MIB))

# Rewritten in place on the upstream (same inode, so the same file
# handle), the hole now data, while this proxy runs: served new.
head -c "$SIZE" /dev/urandom >"$NFSC_TMP/sparse.new"
cat "$NFSC_TMP/sparse.new" >"$f"
up0=$(metric nfscached_upstream_read_bytes_total)
hole0=$(metric 'nfscached_read_bytes_total{source="hole"}')
read_check "rewritten on the upstream"
expect_delta "rewritten" nfscached_upstream_read_bytes_total "$SIZE" "$up0"
expect_delta "rewritten" 'nfscached_read_bytes_total{source="hole"}' 0 "$hole0"
expect "rewritten" nfscached_cache_hole_bytes 0
drops=$(metric nfscached_disk_drops_total)
((drops >= PAGES)) && pass "rewritten: old pages dropped ($drops)" ||
	fail "rewritten: $drops pages dropped (want at least $PAGES)"

nfsc_proxy_stop "$NFSC_PROXY_PID" 60 && pass "final SIGTERM: exit 0" || fail "final SIGTERM: exit $NFSC_PROXY_STATUS"
echo "$fails failure(s)"
((fails == 0))
