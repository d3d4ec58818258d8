#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGTERM during a write stream: nfscached exits 0, and everything the
# client had COMMITted, and everything the proxy acknowledged (SIGTERM
# writes back everything), is on Ganesha. Runs under
# `harness.sh --no-proxy` with its own nfscached (wbtest_proxy.sh), whose
# exit status it collects:
#
#   test_wb_sigterm.sh TEST_WB_SHUTDOWN busy|tail|nocommit|down
#
# With nfscached configured writeback_delay = 600 (only the client's COMMITs
# and the shutdown write anything back), one scenario:
#  busy  `test_wb_shutdown stream` runs flat out; once 32 MiB are committed,
#        SIGTERM;
#  tail  `test_wb_shutdown tail` commits 32 MiB, writes 2.5 MiB more without
#        COMMIT and falls silent; then SIGTERM;
#  nocommit  `test_wb_shutdown nocommit` streams WRITEs and never COMMITs;
#        after 32 MiB, SIGTERM (flush bounded at 5 s).
#  down  as tail, but Ganesha is stopped before the SIGTERM, with
#        shutdown_flush_timeout = 30 and upstream_timeout = 40, the proxy
#        on its test clock (NFSCACHED_TEST_CLOCK=1): it still runs when it
#        logs that it is stopping; its clock is then advanced 31 s, and as
#        no call is in flight it must exit within 20 s of real time (the
#        flush bound on its clock, not upstream_timeout nor real time),
#        logging the bytes it could not commit; only the committed bytes
#        are checked on disk.
# nfscached must exit 0, the stream must end (its connection
# closes), and `test_wb_shutdown check` compares the file on disk.
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_SHUTDOWN busy|tail|nocommit|down}
scenario=${2:?usage: $0 TEST_WB_SHUTDOWN busy|tail|nocommit|down}
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
# run the check. With $2, nfscached must exit within $2 ms. With $3 (the
# proxy on its test clock), once it logs that it is stopping and while it
# still runs, advance its clock by $3 seconds. Adds to status on failure.
term_and_check() {
	local t0 t1 stream_status=0 max_ms=${2:-} advance=${3:-} i
	touch "$WB_STREAM_MARK"
	t0=$(date +%s%N)
	if [[ -n "$advance" ]]; then
		kill -TERM "$NFSC_PROXY_PID"
		for ((i = 0; i < 600; i++)); do
			grep -q 'stopping' "$NFSC_PROXY_LOG" && break
			sleep 0.1
		done
		if ! nfsc_pid_alive "$NFSC_PROXY_PID"; then
			nfsc_say "$1: nfscached exited before its clock reached the flush limit"
			status=1
		else
			# The timers due run right after the answer is queued,
			# so the proxy may exit before it is sent: the exit
			# within max_ms (under the flush limit) is the check.
			curl -sS -X POST -o /dev/null --max-time 10 \
				"http://$NFSC_METRICS_ADDR/debug/clock/advance?seconds=$advance" || true
		fi
		wbp_wait TERM	# no second SIGTERM: it may meet the exit
	else
		wbp_kill TERM
	fi
	t1=$(date +%s%N)
	nfsc_say "$1: nfscached took $(((t1 - t0) / 1000000)) ms to exit after SIGTERM"
	if [[ -n "$max_ms" ]] && (((t1 - t0) / 1000000 > max_ms)); then
		nfsc_say "$1: nfscached took over $max_ms ms to exit"
		status=1
	fi
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

# Start `test_wb_shutdown tail` against nfscached configured by $1 and
# wait until it has its 2.5 MiB tail acknowledged and falls silent.
start_tail() {
	export WB_STREAM_READY=$NFSC_TMP/wb-tail.ready
	wbp_setup "$1"
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
}

# Scenario tail: SIGTERM while 2.5 MiB are acknowledged and not committed,
# and the client is silent: the shutdown flush alone must write them.
tail_() {
	export WB_STREAM_STATE=$NFSC_TMP/wb-tail.state
	export WB_STREAM_MARK=$NFSC_TMP/wb-tail.sigterm
	start_tail "$conf"
	term_and_check tail
}

# Scenario down: the tail, then the upstream goes away, then SIGTERM.
down() {
	export WB_STREAM_STATE=$NFSC_TMP/wb-down.state
	export WB_STREAM_MARK=$NFSC_TMP/wb-down.sigterm
	conf_down=$NFSC_TMP/wb-sigterm-down.conf
	printf 'writeback_delay = 600\nshutdown_flush_timeout = 30\nupstream_timeout = 40\n' >"$conf_down"
	export NFSCACHED_TEST_CLOCK=1
	start_tail "$conf_down"
	"${NFSC_UPSTREAMCTL:?run under harness.sh}" stop
	export WB_CHECK_COMMITTED_ONLY=1
	term_and_check down 20000 31
	if ! grep -q 'bytes not committed upstream' "$NFSC_PROXY_LOG"; then
		nfsc_say "down: nfscached did not log the bytes it could not commit"
		status=1
	fi
	"$NFSC_UPSTREAMCTL" start
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
down) down ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
exit "$status"
