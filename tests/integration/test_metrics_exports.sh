#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_metrics_exports: the families kept per export carry an export label
# and count each export's own work. The harness's proxy is restarted with
# a second export, "/export2" (id 2), on the same upstream; a 1 MiB file is
# read through /export2 only, twice. Then, on /metrics:
#   - /export2's reads (miss, then hit), bytes by source, upstream READs,
#     cache fetches and upstream READ bytes moved by what was read;
#   - /export's did not move at all;
#   - every series of those families names its export.
set -euo pipefail
: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
: "${NFSC_EXPORT_DIR:?}" "${NFSCACHED_BIN:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
fail() { echo "test_metrics_exports: FAILED: $*" >&2; fails=$((fails + 1)); }
pass() { echo "test_metrics_exports: ok: $*"; }

conf=$NFSC_PROXY_CONF
upstream=$(awk -F'"' '/^[[:space:]]*upstream = / { print $2; exit }' "$conf")
[[ -n "$upstream" ]] || { echo "no upstream in $conf" >&2; exit 1; }
printf 'export "/export2" {\n\tid = 2\n\tupstream = "%s"\n\tclients = {"127.0.0.1/32"}\n\troot_squash = false\n}\n' \
	"$upstream" >>"$conf"
# The harness's proxy is not this shell's child: stop it by its pid.
kill -TERM "$NFSC_PROXY_PID"
nfsc_wait_gone "$NFSC_PROXY_PID" 600 || { echo "the harness proxy did not stop" >&2; exit 1; }
nfsc_proxy_start "$NFSC_TMP/exports2.log" "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
	"$NFSCACHED_BIN" --config "$conf" || { cat "$NFSC_TMP/exports2.log" >&2; exit 1; }
url2=${NFSC_PROXY_URL/\/export\?/\/export2?}

size=$((1024 * 1024))
head -c "$size" /dev/urandom >"$NFSC_EXPORT_DIR/two.bin"
m() { nfsc_metric "$NFSC_METRICS_ADDR" "$1" || echo absent; }

# Sample each series of both exports.
series=(
	'nfscached_reads_total{export="%s",result="miss"}'
	'nfscached_reads_total{export="%s",result="hit"}'
	'nfscached_read_bytes_total{export="%s",source="cache"}'
	'nfscached_read_bytes_total{export="%s",source="upstream"}'
	'nfscached_upstream_rpcs_total{export="%s",procedure="read"}'
	'nfscached_cache_fetch_bytes_total{export="%s"}'
	'nfscached_upstream_read_bytes_total{export="%s"}'
)
declare -A before
for e in /export /export2; do
	for s in "${series[@]}"; do
		# shellcheck disable=SC2059
		name=$(printf "$s" "$e")
		before[$name]=$(m "$name")
	done
done
for i in 1 2; do
	nfs-cat "$(nfsc_url_join "$url2" two.bin)" >"$NFSC_TMP/two.$i"
	cmp -s "$NFSC_TMP/two.$i" "$NFSC_EXPORT_DIR/two.bin" && pass "read $i through /export2 is right" ||
		fail "read $i through /export2 differs"
done
delta() {
	local a b
	a=${before[$1]} b=$(m "$1")
	[[ "$a" =~ ^[0-9.]+$ && "$b" =~ ^[0-9.]+$ ]] || { echo "absent"; return; }
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", b - a }'
}
for s in "${series[@]}"; do
	# shellcheck disable=SC2059
	one=$(printf "$s" /export) two=$(printf "$s" /export2)
	d1=$(delta "$one") d2=$(delta "$two")
	[[ "$d1" == 0 ]] && pass "$one did not move" || fail "$one moved by $d1"
	[[ "$d2" =~ ^[0-9]+$ ]] && ((d2 > 0)) && pass "$two moved by $d2" || fail "$two moved by $d2, want > 0"
done
# The bytes: both reads' 1 MiB, the first from upstream, the second from the cache.
d=$(delta 'nfscached_read_bytes_total{export="/export2",source="upstream"}')
[[ "$d" == "$size" ]] && pass "/export2 upstream bytes $d" || fail "/export2 upstream bytes $d, want $size"
d=$(delta 'nfscached_read_bytes_total{export="/export2",source="cache"}')
[[ "$d" == "$size" ]] && pass "/export2 cache bytes $d" || fail "/export2 cache bytes $d, want $size"
# No series of a per-export family without its export label.
bare=$(curl -sf "http://$NFSC_METRICS_ADDR/metrics" |
	grep -E '^nfscached_(reads_total|read_bytes_total|upstream_rpcs_total|upstream_rpc_duration_seconds_(bucket|sum|count)|upstream_write_calls_total|upstream_commit_calls_total|writeback_errors_total|cache_fetches_total)[{ ]' |
	grep -vc 'export="' || true)
[[ "$bare" == 0 ]] && pass "every per-export series names its export" || fail "$bare series without an export label"
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || fail "the proxy exited $NFSC_PROXY_STATUS"
((fails == 0)) || { echo "test_metrics_exports: $fails check(s) failed" >&2; exit 1; }
echo "test_metrics_exports: all checks passed"
