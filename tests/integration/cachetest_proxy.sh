#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run a cache test against a second nfscached whose export section carries
# extra directives (acregmin, acregmax, ...), which harness.sh's
# --proxy-conf-extra cannot add (a second `export "/export"` section is
# refused as a duplicate path). Runs under harness.sh:
#
#   harness.sh -- cachetest_proxy.sh [--conf FILE] [--export-conf FILE] \
#                 -- CMD ARGS...
#
#   --conf FILE         global directives appended to the config
#   --export-conf FILE  directives added inside export "/export" { }
#
# The second nfscached uses the same Ganesha (NFSC_DIRECT_URL) on ports of
# its own; CMD runs with NFSC_PROXY_URL, NFSC_PROXY_NFS_PORT,
# NFSC_PROXY_MOUNT_PORT, NFSC_METRICS_ADDR, NFSC_PROXY_PID, NFSC_PROXY_CONF
# and NFSC_PROXY_LOG pointing at it (the harness's own proxy stays up,
# unused). Exit status: CMD's, or 1 if CMD passed but this nfscached did
# not exit 0 on SIGTERM.
set -euo pipefail

: "${NFSC_LIB:?run under harness.sh}"
: "${NFSC_TMP:?run under harness.sh}"
: "${NFSCACHED_BIN:?set NFSCACHED_BIN}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

conf_extra=
export_extra=
while (($#)); do
	case $1 in
	--conf) conf_extra=$(realpath "${2:?}"); shift ;;
	--export-conf) export_extra=$(realpath "${2:?}"); shift ;;
	--) shift; break ;;
	*) echo "usage: $0 [--conf F] [--export-conf F] -- CMD ARGS..." >&2; exit 2 ;;
	esac
	shift
done
(($#)) || { echo "usage: $0 [--conf F] [--export-conf F] -- CMD ARGS..." >&2; exit 2; }

read -r -a ports <<<"$(nfsc_free_ports 3)"
dir=$NFSC_TMP/cacheproxy
mkdir -p "$dir/state"
NFSC_PROXY_NFS_PORT=${ports[0]}
NFSC_PROXY_MOUNT_PORT=${ports[1]}
NFSC_METRICS_ADDR=127.0.0.1:${ports[2]}
NFSC_PROXY_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[0]}&mountport=${ports[1]}"
NFSC_PROXY_CONF=$dir/nfscached.conf
NFSC_PROXY_LOG=$dir/nfscached.log
NFSC_PROXY_PID=

# Stop this script's nfscached (if still running) and free its ports.
finish() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" || true
		NFSC_PROXY_PID=
	fi
	nfsc_release_ports "${ports[@]}"
}
trap finish EXIT

{
	cat <<EOF
# cachetest_proxy.sh: a second nfscached with per-export directives.
listen = "127.0.0.1"
nfs_port = $NFSC_PROXY_NFS_PORT
mount_port = $NFSC_PROXY_MOUNT_PORT
metrics_listen = "$NFSC_METRICS_ADDR"
state_dir = "$dir/state"
register_rpcbind = false
EOF
	[[ -z "$conf_extra" ]] || cat "$conf_extra"
	cat <<EOF
export "/export" {
	id = 1
	upstream = "$NFSC_DIRECT_URL"
	clients = {"127.0.0.1/32"}
	root_squash = false
	secure = false
EOF
	[[ -z "$export_extra" ]] || cat "$export_extra"
	echo "}"
} >"$NFSC_PROXY_CONF"

nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
	"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF"
export NFSC_PROXY_URL NFSC_PROXY_NFS_PORT NFSC_PROXY_MOUNT_PORT \
	NFSC_METRICS_ADDR NFSC_PROXY_PID NFSC_PROXY_CONF NFSC_PROXY_LOG

status=0
"$@" || status=$?
if ((status != 0)); then
	echo "----- last 60 lines of the cache test's nfscached log ($NFSC_PROXY_LOG) -----" >&2
	tail -n 60 "$NFSC_PROXY_LOG" >&2 || true
fi
proxy_status=0
nfsc_proxy_stop "$NFSC_PROXY_PID" || proxy_status=$?
NFSC_PROXY_PID=
if ((status == 0 && proxy_status != 0)); then
	nfsc_say "the cache test's nfscached exited with status $proxy_status on SIGTERM (want 0)"
	tail -n 60 "$NFSC_PROXY_LOG" >&2 || true
	status=1
fi
exit "$status"
