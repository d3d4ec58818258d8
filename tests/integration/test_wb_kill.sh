#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGKILL, then a restart: the proxy's write verifier is new, and a file
# handle from before the kill still works (same state_dir, so the handle
# key is the same). Runs under `harness.sh --no-proxy` with its own
# nfscached (wbtest_proxy.sh), which it kills:
#
#   test_wb_kill.sh TEST_WB_VERIFIER
#
# 1. start nfscached (writeback_delay = 600: nothing is written back);
# 2. test_wb_verifier kill_before: absorb 64 KiB UNSTABLE, save the name,
#    the handle and the WRITE verifier;
# 3. SIGKILL; the exit status must be 137 (killed, not exited);
# 4. start nfscached again on the same config and state_dir;
# 5. test_wb_verifier kill_after: the handle works, the verifier differs,
#    the lost bytes were never on Ganesha and, resent, are after COMMIT.
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_VERIFIER}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"

trap 'wbp_cleanup' EXIT
conf=$NFSC_TMP/wb-kill.conf
echo "writeback_delay = 600" >"$conf"
wbp_setup "$conf"
wbp_start
"$prog" kill_before || { wbp_log_tail; exit 1; }
wbp_kill KILL
if [[ "$WBP_STATUS" != 137 ]]; then
	nfsc_say "nfscached exit status after SIGKILL: $WBP_STATUS, want 137"
	exit 1
fi
wbp_start
"$prog" kill_after || { wbp_log_tail; exit 1; }
wbp_kill TERM
if [[ "$WBP_STATUS" != 0 ]]; then
	nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
	wbp_log_tail
	exit 1
fi
echo "test_wb_kill: passed"
