# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shell functions for write-back tests that stop, kill and restart
# nfscached themselves (test_wb_*.sh). Source it from a script running
# under `harness.sh --no-proxy`: the nfscached these functions start is a
# child of the sourcing shell, so its exit status can be collected, which
# the harness's own proxy (a child of harness.sh) does not allow.
#
#   wbp_setup [EXTRA_CONF [EXPORT_CONF]]
#                           reserve 3 ports, write the config (lib.sh's
#                           nfsc_proxy_config, EXTRA_CONF appended,
#                           EXPORT_CONF inside the export) and
#                           export NFSC_PROXY_URL, NFSC_PROXY_NFS_PORT,
#                           NFSC_PROXY_MOUNT_PORT, NFSC_METRICS_ADDR,
#                           NFSC_PROXY_CONF, NFSC_PROXY_LOG
#   wbp_start               start it (same config, same state_dir); sets
#                           and exports NFSC_PROXY_PID
#   wbp_kill SIG            send SIG, wait until it exits (60 s at most,
#                           then SIGKILL); sets WBP_STATUS to its exit
#                           status (128+N if killed by signal N)
#   wbp_cleanup             stop it if running, release the ports
set -u

: "${NFSC_LIB:?run under harness.sh}"
: "${NFSC_TMP:?run under harness.sh}"
: "${NFSCACHED_BIN:?set NFSCACHED_BIN}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

WBP_PORTS=()
WBP_STATUS=
NFSC_PROXY_PID=

# Reserve ports and write the configuration ($1: extra config file, $2:
# extra lines of the export).
wbp_setup() {
	local extra=${1:-} export_extra=${2:-} dir=$NFSC_TMP/wbproxy
	read -r -a WBP_PORTS <<<"$(nfsc_free_ports 3)" || return 1
	mkdir -p "$dir/state" || return 1
	NFSC_PROXY_NFS_PORT=${WBP_PORTS[0]}
	NFSC_PROXY_MOUNT_PORT=${WBP_PORTS[1]}
	NFSC_METRICS_ADDR=127.0.0.1:${WBP_PORTS[2]}
	NFSC_PROXY_URL="nfs://127.0.0.1/export?version=3&nfsport=${WBP_PORTS[0]}&mountport=${WBP_PORTS[1]}"
	NFSC_PROXY_CONF=$dir/nfscached.conf
	NFSC_PROXY_LOG=$dir/nfscached.log
	export NFSC_PROXY_URL NFSC_PROXY_NFS_PORT NFSC_PROXY_MOUNT_PORT \
		NFSC_METRICS_ADDR NFSC_PROXY_CONF NFSC_PROXY_LOG
	nfsc_proxy_config "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
		"$NFSC_METRICS_ADDR" "$dir/state" "$NFSC_DIRECT_URL" "$extra" \
		"$export_extra" >"$NFSC_PROXY_CONF"
}

# Start nfscached on the configuration written by wbp_setup.
wbp_start() {
	nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
		"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF" ||
		return 1
	export NFSC_PROXY_PID
	nfsc_say "nfscached started, pid $NFSC_PROXY_PID"
}

# Send signal $1 to nfscached and collect its exit status in WBP_STATUS.
wbp_kill() {
	[[ -n "$NFSC_PROXY_PID" ]] || return 1
	kill -"$1" "$NFSC_PROXY_PID" 2>/dev/null || true
	wbp_wait "$1"
}

# Wait (60 s at most, then SIGKILL) for nfscached, sent SIG$1 already, to
# exit; its status in WBP_STATUS.
wbp_wait() {
	local sig=$1 pid=$NFSC_PROXY_PID
	WBP_STATUS=
	[[ -n "$pid" ]] || return 1
	if ! nfsc_wait_gone "$pid" 600; then
		nfsc_say "nfscached pid $pid still runs 60 s after SIG$sig; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	WBP_STATUS=0
	wait "$pid" 2>/dev/null || WBP_STATUS=$?
	NFSC_PROXY_PID=
	nfsc_say "nfscached pid $pid exited with status $WBP_STATUS after SIG$sig"
}

# Stop nfscached if it runs (SIGTERM) and release the ports.
wbp_cleanup() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || true
		NFSC_PROXY_PID=
	fi
	if ((${#WBP_PORTS[@]})); then
		nfsc_release_ports "${WBP_PORTS[@]}"
	fi
	WBP_PORTS=()
}

# Print the last lines of nfscached's log.
wbp_log_tail() {
	[[ -s "${NFSC_PROXY_LOG:-}" ]] || return 0
	echo "----- last 40 lines of $NFSC_PROXY_LOG -----" >&2
	tail -n 40 "$NFSC_PROXY_LOG" >&2
}
