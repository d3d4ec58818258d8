#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A client's reboot releases its locks across a proxy SIGKILL: the
# proxy's table of which client holds which lock upstream is kept in
# state_dir (nlm.mdb), loaded at the restart, and its clients watched
# again by the host's rpc.statd, so the reboot notification that reaches
# the new process releases that client's locks upstream. Runs under
# `harness.sh --no-proxy --ganesha-nlm` with its own nfscached
# (wbtest_proxy.sh), registered with the host's rpcbind for statd's
# callback (nlm_reboot_proxy.conf):
#
#   test_nlm_reboot_restart.sh TEST_NLM
#
# 1. start nfscached; test_nlm nlm_reboot_restart before: two clients
#    lock, statd watches both, Ganesha's lock manager holds both ranges;
# 2. SIGKILL (exit status 137); start it again (same config, state_dir);
# 3. test_nlm nlm_reboot_restart after: the table was loaded (2 locks),
#    both clients watched again; one client's SM_NOTIFY releases its
#    lock upstream (a direct TEST to Ganesha's lock manager), not the
#    other's; SIGTERM exits 0.
set -euo pipefail

prog=${1:?usage: $0 TEST_NLM}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
: "${NFSC_DIRECT_NLM_PORT:?run under harness.sh --ganesha-nlm}"

trap 'wbp_cleanup' EXIT
# The proxy's upstream names Ganesha's lock manager (wbp_setup uses
# NFSC_DIRECT_URL as the upstream): the proxy takes 100021 in rpcbind.
NFSC_DIRECT_URL="$NFSC_DIRECT_URL&nlmport=$NFSC_DIRECT_NLM_PORT"
wbp_setup "$here/nlm_reboot_proxy.conf"
wbp_start
"$prog" nlm_reboot_restart before || { wbp_log_tail; exit 1; }
wbp_kill KILL
if [[ "$WBP_STATUS" != 137 ]]; then
	nfsc_say "nfscached exit status after SIGKILL: $WBP_STATUS, want 137"
	exit 1
fi
state=$NFSC_TMP/wbproxy/state
if [[ ! -s "$state/nlm.mdb" ]]; then
	nfsc_say "no lock table in $state after the SIGKILL"
	exit 1
fi
wbp_start
"$prog" nlm_reboot_restart after || { wbp_log_tail; exit 1; }
wbp_kill TERM
if [[ "$WBP_STATUS" != 0 ]]; then
	nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
	wbp_log_tail
	exit 1
fi
echo "test_nlm_reboot_restart: passed"
