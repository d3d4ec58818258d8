#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The crash loop of commit = "local" (issue 18): LC_ROUNDS (50) times,
# test_lcommit crash_work appends to a file of its own with a COMMIT every
# few writes and some FILE_SYNC writes, recording after each
# acknowledgement which bytes the proxy has acknowledged as stable (the
# COMMITted length and the FILE_SYNC ranges since); the proxy is SIGKILLed
# at a random moment (0 to 1.9 s after the file exists) and started again
# on the same cache_dir, which writes back what it recovered while the
# next round runs. At the end crash_check waits for the journal to empty
# and checks every file on Ganesha's disk holds every acknowledged byte,
# byte-exact. Under `harness.sh --no-proxy` (wbtest_proxy.sh); real
# clock, writeback_delay = 1. Release tree only (tests/integration/
# CMakeLists.txt).
#
#   test_lcommit_crash.sh TEST_LCOMMIT
set -euo pipefail

prog=${1:?usage: $0 TEST_LCOMMIT}
rounds=${LC_ROUNDS:-50}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"

worker=
cleanup() {
	[[ -n "$worker" ]] && kill "$worker" 2>/dev/null
	wbp_cleanup
}
trap cleanup EXIT
export LC_CRASH_DIR=$NFSC_TMP/lc-crash
mkdir -p "$LC_CRASH_DIR"
conf=$NFSC_TMP/lcommit.conf
export_conf=$NFSC_TMP/lcommit-export.conf
cat >"$conf" <<EOF
writeback_delay = 1
cache_dir = "$NFSC_TMP/diskcache"
EOF
echo '	commit = "local"' >"$export_conf"
wbp_setup "$conf" "$export_conf"

RANDOM=$$
for ((i = 0; i < rounds; i++)); do
	wbp_start
	export LC_CRASH_NAME=lc-crash-$i LC_CRASH_ACK=$LC_CRASH_DIR/lc-crash-$i.ack
	"$prog" crash_work >"$LC_CRASH_DIR/work-$i.log" 2>&1 &
	worker=$!
	# The file exists (its .ack written) before the moment is chosen.
	for ((t = 0; t < 3000; t++)); do
		[[ -e $LC_CRASH_ACK ]] && break
		kill -0 "$worker" 2>/dev/null || break
		sleep 0.02
	done
	if [[ ! -e $LC_CRASH_ACK ]]; then
		nfsc_say "round $i: crash_work did not create its file"
		cat "$LC_CRASH_DIR/work-$i.log" >&2
		wbp_log_tail
		exit 1
	fi
	sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	wbp_kill KILL
	if [[ "$WBP_STATUS" != 137 ]]; then
		nfsc_say "round $i: exit status after SIGKILL $WBP_STATUS, want 137"
		wbp_log_tail
		exit 1
	fi
	wait "$worker" || true
	worker=
	nfsc_say "round $i: committed $(head -n 1 "$LC_CRASH_ACK" | cut -d' ' -f2) bytes"
done
wbp_start
"$prog" crash_check || { wbp_log_tail; exit 1; }
wbp_kill TERM
[[ "$WBP_STATUS" == 0 ]] || { nfsc_say "exit status after SIGTERM: $WBP_STATUS"; exit 1; }
echo "test_lcommit_crash: passed ($rounds rounds)"
