#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_nconnect: upstream_connections = 4 (nconnect.conf). The proxy opens
# four TCP connections to Ganesha's NFS port (counted by ss(8) for the
# daemon's pid, and by nfscached_upstream_connects_total), calls spread
# over them (more than one connection carried calls: its byte counters
# moved), and data written and read by four clients at once comes back
# byte for byte, on Ganesha's disk too. Run under harness.sh.
set -euo pipefail
# shellcheck source=../../scripts/lib.sh
. "${NFSC_LIB:?run under harness.sh}"
: "${NFSC_PROXY_PID:?}" "${NFSC_DIRECT_NFS_PORT:?}" "${NFSC_METRICS_ADDR:?}"

fails=0
fail() {
	echo "test_nconnect: FAILED: $*" >&2
	fails=$((fails + 1))
}
pass() {
	echo "test_nconnect: ok: $*"
}

# Established TCP connections from the daemon to Ganesha's NFS port, with
# the bytes each has sent ("bytes_acked:N" of ss -i), one line each.
upstream_conns() {
	ss -tnpi state established "( dport = :$NFSC_DIRECT_NFS_PORT )" 2>/dev/null |
		awk -v pid="pid=$NFSC_PROXY_PID," '
			index($0, pid) { want = 1; next }
			want { if (match($0, /bytes_acked:[0-9]+/))
				print substr($0, RSTART + 12, RLENGTH - 12)
			       else print 0
			       want = 0 }'
}

work=$NFSC_TMP/nconnect
mkdir -p "$work"
for i in 1 2 3 4; do
	head -c $((6 * 1024 * 1024 + i * 4097)) /dev/urandom >"$work/src$i"
done
# Four clients at once, in and back out.
pids=()
for i in 1 2 3 4; do
	(nfs-cp "$work/src$i" "$(nfsc_url_join "$NFSC_PROXY_URL" "nc$i")" &&
		nfs-cp "$(nfsc_url_join "$NFSC_PROXY_URL" "nc$i")" "$work/back$i") &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a client's copy failed"
done
for i in 1 2 3 4; do
	cmp -s "$work/src$i" "$work/back$i" && pass "client $i: read back byte for byte" ||
		fail "client $i: the copy read back differs"
	cmp -s "$work/src$i" "$NFSC_EXPORT_DIR/nc$i" && pass "client $i: on Ganesha's disk" ||
		fail "client $i: Ganesha's copy differs"
done

mapfile -t acked < <(upstream_conns)
((${#acked[@]} == 4)) && pass "4 connections to the upstream" ||
	fail "${#acked[@]} connections to the upstream, want 4"
busy=0
for b in "${acked[@]}"; do
	((b > 1048576)) && busy=$((busy + 1))
done
((busy >= 2)) && pass "$busy connections carried more than 1 MiB each (${acked[*]})" ||
	fail "only $busy connection(s) carried more than 1 MiB (${acked[*]})"
v=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_upstream_connects_total) || v=absent
[[ "$v" == 4 ]] && pass "nfscached_upstream_connects_total 4" ||
	fail "nfscached_upstream_connects_total $v, want 4"

((fails == 0)) || { echo "test_nconnect: $fails check(s) failed" >&2; exit 1; }
echo "test_nconnect: all checks passed"
