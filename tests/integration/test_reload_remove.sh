#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_reload_remove.sh: run test_reload_remove (its header says what each
# suite asserts) against a proxy started here with two exports:
#
#   harness.sh --no-proxy -- test_reload_remove.sh RELAY_BIN PROG SUITE
#
# "/export" (id 1) is Ganesha's export; "/second" (id 2) is its
# subdirectory "second", its NFS port reached through delayrelay (no
# delay) so the test can stall that export's upstream alone (SIGSTOP to
# the relay). Write-back waits 600 s (wb_hold), so only the removal
# writes the dirty data back. PROG runs with the harness's variables and
# NFSC_PROXY_* of this proxy, NFSC_RELAY_PID, NFSC_SECOND_SUBDIR and
# NFSC_CONF_WITHOUT (the configuration without "/second"). Exit status:
# PROG's, or 1 if the proxy did not exit 0 on SIGTERM.
set -euo pipefail

: "${NFSCACHED_BIN:?}" "${NFSC_LIB:?}" "${NFSC_TMP:?}" "${NFSC_EXPORT_DIR:?}"
: "${NFSC_DIRECT_NFS_PORT:?}" "${NFSC_DIRECT_MOUNT_PORT:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

(($# == 3)) || { echo "usage: $0 RELAY_BIN PROG SUITE" >&2; exit 2; }
relay_bin=$1 prog=$2 suite=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$NFSC_TMP/reload-remove
mkdir -p "$dir/state" "$NFSC_EXPORT_DIR/second"
read -r -a ports <<<"$(nfsc_free_ports 3)"
relay_pid=
NFSC_PROXY_PID=

# Stop the proxy and the relay (continued first: a stopped process does
# not act on SIGTERM), free the ports.
finish() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" || true
		NFSC_PROXY_PID=
	fi
	if [[ -n "$relay_pid" ]]; then
		kill -CONT "$relay_pid" 2>/dev/null || true
		kill -TERM "$relay_pid" 2>/dev/null || true
		wait "$relay_pid" 2>/dev/null || true
		relay_pid=
	fi
	nfsc_release_ports "${ports[@]}"
}
trap finish EXIT

"$relay_bin" --delay-ms 0 --pair "127.0.0.1:0=127.0.0.1:$NFSC_DIRECT_NFS_PORT" \
	>"$dir/relay.out" 2>"$dir/relay.log" </dev/null &
relay_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -qx ready "$dir/relay.out" 2>/dev/null && break
	nfsc_pid_alive "$relay_pid" || break
	sleep 0.05
done
grep -qx ready "$dir/relay.out" 2>/dev/null || {
	nfsc_say "delayrelay did not start:"; cat "$dir/relay.out" "$dir/relay.log" >&2; exit 1; }
relay_port=$(sed -n 's/^listen 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$dir/relay.out")
[[ -n "$relay_port" ]] || { nfsc_say "no relay port in $(cat "$dir/relay.out")"; exit 1; }

export NFSC_PROXY_NFS_PORT=${ports[0]} NFSC_PROXY_MOUNT_PORT=${ports[1]}
export NFSC_METRICS_ADDR=127.0.0.1:${ports[2]}
export NFSC_PROXY_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[0]}&mountport=${ports[1]}"
export NFSC_PROXY_CONF=$dir/nfscached.conf NFSC_PROXY_LOG=$dir/nfscached.log
export NFSC_CONF_WITHOUT=$dir/without-second.conf NFSC_RELAY_PID=$relay_pid
export NFSC_SECOND_SUBDIR=second
direct="nfs://127.0.0.1/export?version=3&nfsport=$NFSC_DIRECT_NFS_PORT&mountport=$NFSC_DIRECT_MOUNT_PORT"
second="nfs://127.0.0.1/export/second?version=3&nfsport=$relay_port&mountport=$NFSC_DIRECT_MOUNT_PORT"
nfsc_proxy_config "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
	"$NFSC_METRICS_ADDR" "$dir/state" "$direct" "$here/wbtest_hold.conf" \
	>"$NFSC_CONF_WITHOUT"
cp "$NFSC_CONF_WITHOUT" "$NFSC_PROXY_CONF"
printf 'export "/second" {\n\tid = 2\n\tupstream = "%s"\n\tclients = {"127.0.0.1/32"}\n\troot_squash = false\n\tsecure = false\n}\n' \
	"$second" >>"$NFSC_PROXY_CONF"
nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
	"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF"
export NFSC_PROXY_PID
for ((i = 0; i < 200; i++)); do
	up=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_up{export="/second"}' 2>/dev/null) || up=
	[[ "$up" == 1 ]] && break
	sleep 0.05
done
[[ "$up" == 1 ]] || { nfsc_say "/second's upstream (through the relay) is not up after 10 s"; exit 1; }

st=0
"$prog" "$suite" || st=$?
if ! nfsc_proxy_stop "$NFSC_PROXY_PID"; then
	nfsc_say "nfscached exited with status $NFSC_PROXY_STATUS on SIGTERM; its log:"
	tail -n 60 "$NFSC_PROXY_LOG" >&2
	((st)) || st=1
fi
NFSC_PROXY_PID=
exit "$st"
