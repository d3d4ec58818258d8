#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run a readahead test against an nfscached whose upstream sits behind a
# delay relay (tests/tools/delayrelay.c): a distant server on loopback
# (HACKING.md, "Testing on these machines"). Runs under harness.sh,
# normally with --no-proxy (the harness's Ganesha is the upstream; this
# script starts the proxy):
#
#   harness.sh --no-proxy -- ratest_proxy.sh --relay BIN --delay-ms MS \
#                [--relay-preload LIB] [--relay-arg ARG ...] [--conf FILE] \
#                [--export-conf FILE] -- CMD ARGS...
#
#   --relay BIN     the delayrelay binary
#   --relay-preload LIB  run the relay with LD_PRELOAD=LIB (the
#                   ratest_nodelay shim: TCP_NODELAY, see its header)
#   --delay-ms MS   one-way delay the relay adds in each direction
#   --relay-arg ARG one more argument for the relay (repeatable), e.g.
#                   --relay-arg --rewrite-read --relay-arg eof
#   --conf FILE     global directives appended to the proxy's config
#                   (cache_size, readahead_max, ...)
#   --export-conf FILE  directives added inside its export section
#                   (acregmin, ...)
#
# One relay process fronts both of Ganesha's ports (NFS and MOUNT) on
# ports it picks; the proxy's export upstream is the relay. CMD runs with
#   NFSC_PROXY_URL, NFSC_PROXY_NFS_PORT, NFSC_PROXY_MOUNT_PORT,
#   NFSC_METRICS_ADDR, NFSC_PROXY_PID, NFSC_PROXY_CONF, NFSC_PROXY_LOG
#                   the proxy, as harness.sh would set them
#   NFSC_RELAY_URL  Ganesha through the relay, without the proxy (the
#                   same path and delay the proxy's upstream calls take)
#   NFSC_RELAY_DELAY_MS  MS
# Exit status: CMD's, or 1 if CMD passed but this nfscached did not exit
# 0 on SIGTERM, or the relay died.
set -euo pipefail

: "${NFSC_LIB:?run under harness.sh}"
: "${NFSC_TMP:?run under harness.sh}"
: "${NFSC_DIRECT_NFS_PORT:?run under harness.sh}"
: "${NFSCACHED_BIN:?set NFSCACHED_BIN}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

usage() {
	echo "usage: $0 --relay BIN --delay-ms MS [--relay-preload LIB]" \
		"[--conf F] -- CMD ARGS..." >&2
	exit 2
}

relay_bin=
relay_preload=
delay=
conf_extra=
export_extra=
relay_args=()
while (($#)); do
	case $1 in
	--relay) relay_bin=${2:?}; shift ;;
	--relay-preload) relay_preload=$(realpath "${2:?}"); shift ;;
	--delay-ms) delay=${2:?}; shift ;;
	--relay-arg) relay_args+=("${2:?}"); shift ;;
	--conf) conf_extra=$(realpath "${2:?}"); shift ;;
	--export-conf) export_extra=$(realpath "${2:?}"); shift ;;
	--) shift; break ;;
	*) usage ;;
	esac
	shift
done
(($#)) && [[ -n "$relay_bin" && -n "$delay" ]] || usage
[[ -x "$relay_bin" ]] || { nfsc_say "delayrelay '$relay_bin' is not executable"; exit 2; }

dir=$NFSC_TMP/raproxy
mkdir -p "$dir/state"
read -r -a ports <<<"$(nfsc_free_ports 5)"
relay_pid=
NFSC_PROXY_PID=

# Stop this script's nfscached and relay (if still running), free ports.
finish() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" || true
		NFSC_PROXY_PID=
	fi
	if [[ -n "$relay_pid" ]]; then
		kill -TERM "$relay_pid" 2>/dev/null || true
		wait "$relay_pid" 2>/dev/null || true
		relay_pid=
	fi
	nfsc_release_ports "${ports[@]}"
}
trap finish EXIT

# Start the relay on our reserved ports and wait for its "ready" line.
# (A sanitizer build's relay would refuse a preload ahead of its runtime.)
LD_PRELOAD=$relay_preload ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
	"$relay_bin" --delay-ms "$delay" "${relay_args[@]}" \
	--pair "127.0.0.1:${ports[3]}=127.0.0.1:$NFSC_DIRECT_NFS_PORT" \
	--pair "127.0.0.1:${ports[4]}=127.0.0.1:$NFSC_DIRECT_MOUNT_PORT" \
	>"$dir/relay.out" 2>"$dir/relay.log" </dev/null &
relay_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -qx ready "$dir/relay.out" 2>/dev/null && break
	nfsc_pid_alive "$relay_pid" || break
	sleep 0.05
done
if ! grep -qx ready "$dir/relay.out" 2>/dev/null; then
	nfsc_say "delayrelay did not start; its output:"
	cat "$dir/relay.out" "$dir/relay.log" >&2 || true
	exit 1
fi

NFSC_RELAY_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[3]}&mountport=${ports[4]}"
NFSC_RELAY_DELAY_MS=$delay
NFSC_PROXY_NFS_PORT=${ports[0]}
NFSC_PROXY_MOUNT_PORT=${ports[1]}
NFSC_METRICS_ADDR=127.0.0.1:${ports[2]}
NFSC_PROXY_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[0]}&mountport=${ports[1]}"
NFSC_PROXY_CONF=$dir/nfscached.conf
NFSC_PROXY_LOG=$dir/nfscached.log
nfsc_proxy_config "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
	"$NFSC_METRICS_ADDR" "$dir/state" "$NFSC_RELAY_URL" "$conf_extra" \
	"$export_extra" >"$NFSC_PROXY_CONF"
nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
	"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF"
# Behind the relay the proxy's upstream session (MOUNT, FSINFO) takes a
# few delayed round trips; until it is up, calls get NFS3ERR_JUKEBOX.
for ((i = 0; i < 200; i++)); do
	up=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_up{export="/export"}' 2>/dev/null) || up=
	[[ "$up" == 1 ]] && break
	sleep 0.05
done
if [[ "$up" != 1 ]]; then
	nfsc_say "nfscached's upstream (through the relay) is not up after 10 s"
	exit 1
fi
export NFSC_PROXY_URL NFSC_PROXY_NFS_PORT NFSC_PROXY_MOUNT_PORT \
	NFSC_METRICS_ADDR NFSC_PROXY_PID NFSC_PROXY_CONF NFSC_PROXY_LOG \
	NFSC_RELAY_URL NFSC_RELAY_DELAY_MS

status=0
"$@" || status=$?
if ((status != 0)); then
	echo "----- last 60 lines of the readahead test's nfscached log ($NFSC_PROXY_LOG) -----" >&2
	tail -n 60 "$NFSC_PROXY_LOG" >&2 || true
fi
proxy_status=0
nfsc_proxy_stop "$NFSC_PROXY_PID" || proxy_status=$?
NFSC_PROXY_PID=
if ((status == 0 && proxy_status != 0)); then
	nfsc_say "the readahead test's nfscached exited with status $proxy_status on SIGTERM (want 0)"
	tail -n 60 "$NFSC_PROXY_LOG" >&2 || true
	status=1
fi
if ! nfsc_pid_alive "$relay_pid"; then
	nfsc_say "delayrelay died during the test; its log:"
	cat "$dir/relay.log" >&2 || true
	((status != 0)) || status=1
fi
exit "$status"
