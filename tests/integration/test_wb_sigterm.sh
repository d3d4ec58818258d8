#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGTERM during a write stream: nfscached exits 0, and everything the
# client had COMMITted, and everything the proxy acknowledged (SIGTERM
# writes back everything), is on Ganesha. Runs under
# `harness.sh --no-proxy` with its own nfscached (wbtest_proxy.sh), whose
# exit status it collects:
#
#   test_wb_sigterm.sh TEST_WB_SHUTDOWN
#
# Twice, with nfscached configured writeback_delay = 600 (only the client's
# COMMITs and the shutdown write anything back):
#  busy  `test_wb_shutdown stream` runs flat out; once 32 MiB are committed,
#        SIGTERM;
#  tail  `test_wb_shutdown tail` commits 32 MiB, writes 2.5 MiB more without
#        COMMIT and falls silent; then SIGTERM.
# Each time nfscached must exit 0, the stream must end (its connection
# closes), and `test_wb_shutdown check` compares the file on disk.
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_SHUTDOWN}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"

stream_pid=
# Stop what this script started.
finish() {
	if [[ -n "$stream_pid" ]] && nfsc_pid_alive "$stream_pid"; then
		kill -TERM "$stream_pid" 2>/dev/null || true
		wait "$stream_pid" 2>/dev/null || true
	fi
	wbp_cleanup
}
trap finish EXIT

conf=$NFSC_TMP/wb-sigterm.conf
echo "writeback_delay = 600" >"$conf"
status=0

# Send SIGTERM to nfscached (marker first), collect both exit statuses,
# run the check. Adds to status on failure.
term_and_check() {
	local t0 t1 stream_status=0
	touch "$WB_STREAM_MARK"
	t0=$(date +%s.%N)
	wbp_kill TERM
	t1=$(date +%s.%N)
	nfsc_say "$1: nfscached took $(echo "$t1 - $t0" | bc) s to exit after SIGTERM"
	wait "$stream_pid" || stream_status=$?
	stream_pid=
	grep -E 'stopping|not committed' "$NFSC_PROXY_LOG" >&2 || true
	if [[ "$WBP_STATUS" != 0 ]]; then
		nfsc_say "$1: nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
		wbp_log_tail
		status=1
	fi
	if ((stream_status != 0)); then
		nfsc_say "$1: the stream failed (status $stream_status)"
		status=1
	fi
	"$prog" check || status=1
}

# Scenario 1: SIGTERM while the stream runs flat out.
export WB_STREAM_STATE=$NFSC_TMP/wb-busy.state
export WB_STREAM_MARK=$NFSC_TMP/wb-busy.sigterm
wbp_setup "$conf"
wbp_start
"$prog" stream &
stream_pid=$!
committed=0
for ((i = 0; i < 600; i++)); do
	if [[ -s "$WB_STREAM_STATE" ]]; then
		read -r _ _ committed _ _ <"$WB_STREAM_STATE" || committed=0
		((committed >= 32 * 1024 * 1024)) && break
	fi
	nfsc_pid_alive "$stream_pid" || break
	sleep 0.1
done
if ((committed < 32 * 1024 * 1024)); then
	nfsc_say "busy: the stream committed only $committed bytes in 60 s"
	wbp_log_tail
	exit 1
fi
term_and_check busy
wbp_cleanup

# Scenario 2: SIGTERM while 2.5 MiB are acknowledged and not committed,
# and the client is silent: the shutdown flush alone must write them.
export WB_STREAM_STATE=$NFSC_TMP/wb-tail.state
export WB_STREAM_MARK=$NFSC_TMP/wb-tail.sigterm
export WB_STREAM_READY=$NFSC_TMP/wb-tail.ready
wbp_setup "$conf"
wbp_start
"$prog" tail &
stream_pid=$!
for ((i = 0; i < 600; i++)); do
	[[ -e "$WB_STREAM_READY" ]] && break
	nfsc_pid_alive "$stream_pid" || break
	sleep 0.1
done
if [[ ! -e "$WB_STREAM_READY" ]]; then
	nfsc_say "tail: the stream did not get ready in 60 s"
	wbp_log_tail
	exit 1
fi
nfsc_say "tail: before SIGTERM: $(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_cache_bytes{state="dirty"}') dirty bytes"
term_and_check tail
exit "$status"
