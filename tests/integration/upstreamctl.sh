#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Stop, start or restart the Ganesha upstream of the current integration
# test, on the same ports and the same export directory:
#
#   $NFSC_UPSTREAMCTL stop|start|restart|status
#
# Works from the environment harness.sh exports (NFSC_TMP,
# NFSC_DIRECT_NFS_PORT, NFSC_DIRECT_MOUNT_PORT); the instance's config,
# log and pidfile live in $NFSC_TMP/ganesha. `start` returns when the
# server answers RPC NULL on both ports; `stop` when the process is gone.
# `status` exits 0 if it is running. Starting a running instance or
# stopping a stopped one is not an error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/lib.sh
. "$here/../../scripts/lib.sh"

: "${NFSC_TMP:?not run under harness.sh}"
: "${NFSC_DIRECT_NFS_PORT:?not run under harness.sh}"
: "${NFSC_DIRECT_MOUNT_PORT:?not run under harness.sh}"
w=$NFSC_TMP/ganesha

# Start the instance unless it is running.
start() {
	if nfsc_ganesha_pid "$w" >/dev/null; then
		return 0
	fi
	nfsc_ganesha_launch "$w" "$NFSC_DIRECT_NFS_PORT" "$NFSC_DIRECT_MOUNT_PORT"
}

case ${1:-} in
stop) nfsc_ganesha_stop "$w" ;;
start) start ;;
restart) nfsc_ganesha_stop "$w" && start ;;
status) nfsc_ganesha_pid "$w" >/dev/null ;;
*)
	echo "usage: $0 stop|start|restart|status" >&2
	exit 2
	;;
esac
