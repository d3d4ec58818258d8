#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# commit = "local" across SIGKILL, SIGTERM, a wiped cache_dir, an upstream
# that is down and write-back failures (test_lcommit.c says what each
# suite checks). Runs under `harness.sh --no-proxy` with its own nfscached
# (wbtest_proxy.sh) on the test clock (NFSCACHED_TEST_CLOCK=1):
#
#   test_lcommit.sh TEST_LCOMMIT
#
# 1. ack_before; SIGKILL (status 137); restart; ack_after;
# 2. SIGTERM; restart; verf_same; SIGTERM; remove cache_dir; restart;
#    verf_new;
# 3. SIGTERM; restart; down_prep; stop Ganesha; down_write; start Ganesha;
#    `nfscached cache flush`; down_after;
# 4. acces; stale; `nfscached cache status` reports both failures and the
#    one record kept; SIGTERM (status 0).
set -euo pipefail

prog=${1:?usage: $0 TEST_LCOMMIT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"

trap 'wbp_cleanup' EXIT
export NFSCACHED_TEST_CLOCK=1
cache_dir=$NFSC_TMP/diskcache
conf=$NFSC_TMP/lcommit.conf
export_conf=$NFSC_TMP/lcommit-export.conf
cat >"$conf" <<EOF
writeback_delay = 600
cache_dir = "$cache_dir"
EOF
cat >"$export_conf" <<EOF
	commit = "local"
	acregmin = 600
	acregmax = 600
EOF
wbp_setup "$conf" "$export_conf"

# Run suite $1; on failure show the log and fail.
run() {
	nfsc_say "suite $1"
	"$prog" "$1" || { wbp_log_tail; exit 1; }
}

# Stop with signal $1 and expect exit status $2.
stop() {
	wbp_kill "$1"
	if [[ "$WBP_STATUS" != "$2" ]]; then
		nfsc_say "nfscached exit status after SIG$1: $WBP_STATUS, want $2"
		wbp_log_tail
		exit 1
	fi
}

wbp_start
run ack_before
stop KILL 137
wbp_start
run ack_after
stop TERM 0
wbp_start
run verf_same
stop TERM 0
rm -rf "$cache_dir"
wbp_start
run verf_new
stop TERM 0
wbp_start
run down_prep
"$NFSC_UPSTREAMCTL" stop
run down_write
"$NFSC_UPSTREAMCTL" start
admin=(cache --socket "$NFSC_TMP/wbproxy/state/admin.sock" --timeout 120)
"$NFSCACHED_BIN" "${admin[@]}" flush || { wbp_log_tail; exit 1; }
run down_after
run acces
run stale
status=$("$NFSCACHED_BIN" "${admin[@]}" status)
nfsc_say "cache status: $status"
for want in '"journal_records":1,' '"acces":[1-9]' '"stale":[1-9]' '"perm":0,'; do
	if ! grep -q -- "$want" <<<"$status"; then
		nfsc_say "cache status lacks $want"
		exit 1
	fi
done
stop TERM 0
echo "test_lcommit: passed"
