#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Writers throttled on a full cache: with cache_size = 4 MiB, a stock
# client (nfs-cp) copies 32 MiB through the proxy. Every cache page soon
# holds bytes not yet committed upstream, so WRITEs must wait for
# write-back to free room (nfscached_writes_waited_for_room_total > 0),
# and the COMMITs the proxy sends while the copy goes on must free it in
# time: no WRITE may give up and go through on its own
# (nfscached_writes_through_total stays 0), the upstream WRITEs stay
# whole (at most bytes / wsize + 2 of them: write-back's wsize is
# writeback_wsize, 256 KiB by default, under Ganesha's 1 MiB wtmax), and
# the file arrives byte for byte. Run under harness.sh with
# --proxy-conf-extra wb_room.conf.
set -euo pipefail
# shellcheck source=../../scripts/lib.sh
. "${NFSC_LIB:?run under harness.sh}"

size=$((32 * 1024 * 1024))
work=$NFSC_TMP/wbroom
mkdir -p "$work"
head -c "$size" /dev/urandom >"$work/orig"

# Fail the test with a message.
fail() {
	echo "test_wb_room: FAIL: $*" >&2
	exit 1
}

# The value of metric sample $1 (it must exist).
metric() {
	nfsc_metric "$NFSC_METRICS_ADDR" "$1" || fail "no metric $1"
}

w0=$(metric 'nfscached_upstream_rpcs_total{procedure="write"}')
timeout 300 nfs-cp "$work/orig" "$(nfsc_url_join "$NFSC_PROXY_URL" big)" ||
	fail "nfs-cp into the proxy"
cmp "$work/orig" "$NFSC_EXPORT_DIR/big" ||
	fail "the file in Ganesha's export differs from what was copied"
waited=$(metric nfscached_writes_waited_for_room_total)
through=$(metric nfscached_writes_through_total)
writes=$(($(metric 'nfscached_upstream_rpcs_total{procedure="write"}') - w0))
echo "test_wb_room: $waited WRITEs waited for room, $through went through," \
	"$writes upstream WRITEs for 32 MiB" >&2
((waited > 0)) || fail "no WRITE waited for room: the cache never filled"
((through == 0)) || fail "$through WRITEs went through, want 0"
wsize=$(metric nfscached_config_writeback_wsize_bytes)
wsize=${wsize%.*}
((wsize > 1048576)) && wsize=1048576
max=$(((size + wsize - 1) / wsize + 2))
((writes <= max)) || fail "$writes upstream WRITEs, want <= $max (wsize $wsize)"
echo "test_wb_room: PASS"
