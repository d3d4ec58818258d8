#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Locks across a proxy SIGKILL: the owners the upstream sees are derived
# from the clients' own, so a lock taken before the kill is still held
# upstream after the restart and its owner's UNLOCK through the new
# process frees it. Runs under `harness.sh --no-proxy --ganesha-nlm` with
# its own nfscached (wbtest_proxy.sh):
#
#   test_nlm_restart.sh TEST_NLM
#
# 1. start nfscached; test_nlm nlm_restart before: A locks, B is denied;
# 2. SIGKILL (exit status 137); start it again (same config, state_dir);
# 3. test_nlm nlm_restart after: B still denied, TEST names A, A's UNLOCK
#    frees the range for B; SIGTERM exits 0;
# 4. --check-config probes the upstream's lock manager: no warning of it
#    at Ganesha's NLM port, a warning at a port where nothing answers.
set -euo pipefail

prog=${1:?usage: $0 TEST_NLM}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
: "${NFSC_DIRECT_NLM_PORT:?run under harness.sh --ganesha-nlm}"

trap 'wbp_cleanup' EXIT
# The proxy's upstream names Ganesha's lock manager (wbp_setup uses
# NFSC_DIRECT_URL as the upstream).
NFSC_DIRECT_URL="$NFSC_DIRECT_URL&nlmport=$NFSC_DIRECT_NLM_PORT"
wbp_setup "$here/nlm_proxy.conf"
wbp_start
"$prog" nlm_restart before || { wbp_log_tail; exit 1; }
wbp_kill KILL
if [[ "$WBP_STATUS" != 137 ]]; then
	nfsc_say "nfscached exit status after SIGKILL: $WBP_STATUS, want 137"
	exit 1
fi
wbp_start
"$prog" nlm_restart after || { wbp_log_tail; exit 1; }
wbp_kill TERM
if [[ "$WBP_STATUS" != 0 ]]; then
	nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
	wbp_log_tail
	exit 1
fi
# 4. --check-config's lock manager probe.
out=$("$NFSCACHED_BIN" --check-config "$NFSC_PROXY_CONF" 2>&1) || {
	nfsc_say "--check-config failed: $out"; exit 1; }
if [[ $out == *"lock manager"* ]]; then
	nfsc_say "--check-config warns of Ganesha's answering lock manager: $out"
	exit 1
fi
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed "s|nlmport=$NFSC_DIRECT_NLM_PORT|nlmport=$dead|" "$NFSC_PROXY_CONF" >"$NFSC_TMP/dead-nlm.conf"
out=$("$NFSCACHED_BIN" --check-config "$NFSC_TMP/dead-nlm.conf" 2>&1) || {
	nfsc_say "--check-config failed: $out"; exit 1; }
if [[ $out != *"warning: export \"/export\": upstream 127.0.0.1's lock manager (NLM v4, port $dead) does not answer an RPC NULL call within 2 s (Connection refused): clients' locks would fail with ENOLCK"* ]]; then
	nfsc_say "--check-config does not warn of a dead lock manager: $out"
	exit 1
fi
echo "ok: --check-config probes the upstream's lock manager"
echo "test_nlm_restart: passed"
