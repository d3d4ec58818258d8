#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A write-back failure (NFS3ERR_NOSPC) reaches the client's COMMIT. Runs
# under `harness.sh --no-proxy`:
#
#   test_wb_nospc.sh TEST_WB_NOSPC
#
# It re-executes itself in a private mount namespace (unshare -m, as root),
# stops the harness's Ganesha, mounts a 4 MiB tmpfs on NFSC_EXPORT_DIR and
# starts Ganesha again inside the namespace, so only that Ganesha sees the
# small file system; the harness, outside, still sees the plain directory
# it removes at the end, and the tmpfs goes away with the namespace's last
# process (the Ganesha the harness stops). Then it starts its own nfscached
# (writeback_delay = 600) and runs TEST_WB_NOSPC; nfscached must exit 0 on
# SIGTERM afterwards (the failed bytes were dropped, the rest committed).
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_NOSPC}
if [[ "${WB_NOSPC_NS:-}" != 1 ]]; then
	if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
		echo "test_wb_nospc: needs root and unshare" >&2
		exit 1
	fi
	export WB_NOSPC_NS=1
	exec unshare -m --propagation private "$0" "$@"
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
trap 'wbp_cleanup' EXIT

"$NFSC_UPSTREAMCTL" stop
mount -t tmpfs -o size=4m,mode=0777 wbtest-nospc "$NFSC_EXPORT_DIR"
"$NFSC_UPSTREAMCTL" start
df -h "$NFSC_EXPORT_DIR" >&2

conf=$NFSC_TMP/wb-nospc.conf
echo "writeback_delay = 600" >"$conf"
wbp_setup "$conf"
wbp_start
status=0
"$prog" nospc || status=1
wbp_kill TERM
if [[ "$WBP_STATUS" != 0 ]]; then
	nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
	status=1
fi
if ((status)); then
	wbp_log_tail
fi
exit "$status"
