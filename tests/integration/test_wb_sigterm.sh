#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGTERM during a write stream: nfscached exits 0, and everything the
# client had COMMITted, and everything the proxy acknowledged (SIGTERM
# writes back everything), is on Ganesha. Runs under
# `harness.sh --no-proxy` with its own nfscached (wbtest_proxy.sh), whose
# exit status it collects:
#
#   test_wb_sigterm.sh TEST_WB_SHUTDOWN busy|tail|nocommit
#
# With nfscached configured writeback_delay = 600 (only the client's COMMITs
# and the shutdown write anything back), one scenario:
#  busy  `test_wb_shutdown stream` runs flat out; once 32 MiB are committed,
#        SIGTERM;
#  tail  `test_wb_shutdown tail` commits 32 MiB, writes 2.5 MiB more without
#        COMMIT and falls silent; then SIGTERM;
#  nocommit  `test_wb_shutdown nocommit` streams WRITEs and never COMMITs;
#        after 32 MiB, SIGTERM (flush bounded at 5 s).
# nfscached must exit 0, the stream must end (its connection
# closes), and `test_wb_shutdown check` compares the file on disk.
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_SHUTDOWN busy|tail|nocommit}
scenario=${2:?usage: $0 TEST_WB_SHUTDOWN busy|tail|nocommit}
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
	t0=$(date +%s%N)
	wbp_kill TERM
	t1=$(date +%s%N)
	nfsc_say "$1: nfscached took $(((t1 - t0) / 1000000)) ms to exit after SIGTERM"
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

# Wait until field $1 (2: acknowledged, 3: committed) of the stream's
# state reaches 32 MiB, for 60 s at most.
wait_progress() {
	local field=$1 what=$2 v=0 i
	for ((i = 0; i < 600; i++)); do
		if [[ -s "$WB_STREAM_STATE" ]]; then
			v=$(awk -v f="$field" '{ print $f }' "$WB_STREAM_STATE")
			((v >= 32 * 1024 * 1024)) && return 0
		fi
		nfsc_pid_alive "$stream_pid" || break
		sleep 0.1
	done
	nfsc_say "the stream $what only $v bytes in 60 s"
	wbp_log_tail
	return 1
}

# Scenario busy: SIGTERM while the stream runs flat out.
busy() {
	export WB_STREAM_STATE=$NFSC_TMP/wb-busy.state
	export WB_STREAM_MARK=$NFSC_TMP/wb-busy.sigterm
	wbp_setup "$conf"
	wbp_start
	"$prog" stream &
	stream_pid=$!
	wait_progress 3 committed || exit 1
	term_and_check busy
}

# Scenario tail: SIGTERM while 2.5 MiB are acknowledged and not committed,
# and the client is silent: the shutdown flush alone must write them.
tail_() {
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
}

# Scenario nocommit: SIGTERM while the client streams WRITEs and never
# COMMITs.
# The flush is bounded at 5 s here (shutdown_flush_timeout and
# upstream_timeout), so a proxy that keeps taking WRITEs after SIGTERM
# shows as acknowledged bytes missing on disk rather than a long run.
nocommit() {
	export WB_STREAM_STATE=$NFSC_TMP/wb-nocommit.state
	export WB_STREAM_MARK=$NFSC_TMP/wb-nocommit.sigterm
	conf5=$NFSC_TMP/wb-sigterm5.conf
	printf 'writeback_delay = 600\nshutdown_flush_timeout = 5\nupstream_timeout = 5\n' >"$conf5"
	wbp_setup "$conf5"
	wbp_start
	"$prog" nocommit &
	stream_pid=$!
	wait_progress 2 wrote || exit 1
	term_and_check nocommit
}

case $scenario in
busy) busy ;;
tail) tail_ ;;
nocommit) nocommit ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
exit "$status"
