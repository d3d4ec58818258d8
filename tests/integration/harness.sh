#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run one integration test against a fresh NFS-Ganesha upstream and a fresh
# nfscached in front of it, all on loopback, then tear both down.
#
#   harness.sh [--no-proxy] [--proxy-may-exit] [--proxy-conf-extra FILE]
#              [--proxy-export-conf FILE] [--proxy-resolv-conf FILE]
#              [--ganesha-nlm] [--ganesha-nfsacl]
#              [--ganesha-extra FILE] -- CMD ARGS...
#
#   --no-proxy             start Ganesha only (NFSC_PROXY_* stay unset)
#   --proxy-may-exit       the test stops or kills nfscached itself: do not
#                          end the test when it exits, and check its exit
#                          status only if it is still running at the end
#   --proxy-conf-extra F   append F to the generated nfscached config
#   --proxy-export-conf F  add F's lines inside the generated export block
#                          (libconfuse keeps the last value of an option)
#   --proxy-resolv-conf F  run nfscached in a mount namespace of its own
#                          where F is bind-mounted over /etc/resolv.conf
#                          (its name lookups go to the resolver F names;
#                          same pid, same network: unshare -m)
#   --ganesha-nlm          Ganesha serves NLM v4 (Enable_NLM, on a port of
#                          its own, NFSC_DIRECT_NLM_PORT) with an rpc.statd
#                          (started here if none runs, and left running for
#                          the next test: scripts/run-tests.sh stops it);
#                          the proxy's upstream URL names that port
#                          (nlmport)
#   --ganesha-nfsacl       Ganesha serves the NFSACL side protocol
#                          (Enable_NFSACL), so POSIX ACLs cross NFSv3
#   --ganesha-extra F      merge F into the generated Ganesha config: the
#                          bodies of its NFS_CORE_PARAM, NFSv4 and EXPORT
#                          blocks go into ours (same-named items replaced),
#                          other blocks are appended (scripts/lib.sh)
#
# The nfscached binary is $NFSCACHED_BIN (CMake sets it). CMD runs with:
#   NFSC_TMP                a private temp dir, removed afterwards
#   NFSC_EXPORT_DIR         Ganesha's VFS export directory on disk
#   NFSC_DIRECT_URL         nfs://127.0.0.1/export?version=3&nfsport=N&mountport=M
#   NFSC_DIRECT_NFS_PORT, NFSC_DIRECT_MOUNT_PORT
#   NFSC_PROXY_URL          the same through nfscached
#   NFSC_PROXY_NFS_PORT, NFSC_PROXY_MOUNT_PORT
#   NFSC_METRICS_ADDR       127.0.0.1:PORT (GET /metrics)
#   NFSC_PROXY_PID, NFSC_PROXY_CONF, NFSC_PROXY_LOG
#   NFSC_GANESHA_LOG
#   NFSC_UPSTREAMCTL        `$NFSC_UPSTREAMCTL stop|start|restart|status`
#   NFSC_LIB                scripts/lib.sh, for tests that want its helpers
#
# Exit status: CMD's, or 1 if CMD passed but nfscached did not exit 0 on
# SIGTERM (a crash, a sanitizer report or a hung shutdown fails the test).
# If nfscached exits non-zero while CMD runs, CMD is stopped at once.
# CMD is given ${NFSC_CMD_TIMEOUT:-540} s, so that the teardown still runs
# inside ctest's 600 s. NFSC_KEEP_TMP=1 keeps the temp dir for a post-mortem.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NFSC_LIB=$(cd "$here/../../scripts" && pwd)/lib.sh
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

usage() {
	echo "usage: $0 [--no-proxy] [--proxy-may-exit] [--proxy-conf-extra FILE]" \
		"[--proxy-export-conf FILE] [--proxy-resolv-conf FILE]" \
		"[--ganesha-nlm] [--ganesha-nfsacl]" \
		"[--ganesha-extra FILE] -- CMD ARGS..." >&2
	exit 2
}

# Print the last lines of log $2 under the title $1.
show_tail() {
	[[ -s "$2" ]] || return 0
	echo "----- last 60 lines of $1 ($2) -----" >&2
	tail -n 60 "$2" >&2
	echo "----- end of $1 -----" >&2
}

with_proxy=1
proxy_may_exit=0
proxy_extra=
proxy_export=
proxy_resolv=
ganesha_extra=
ganesha_nlm=0
ganesha_nfsacl=0
while (($#)); do
	case $1 in
	--no-proxy) with_proxy=0 ;;
	--proxy-may-exit) proxy_may_exit=1 ;;
	--proxy-conf-extra) proxy_extra=$(realpath "${2:?}"); shift ;;
	--proxy-export-conf) proxy_export=$(realpath "${2:?}"); shift ;;
	--proxy-resolv-conf) proxy_resolv=$(realpath "${2:?}"); shift ;;
	--ganesha-extra) ganesha_extra=$(realpath "${2:?}"); shift ;;
	--ganesha-nlm) ganesha_nlm=1 ;;
	--ganesha-nfsacl) ganesha_nfsacl=1 ;;
	--) shift; break ;;
	*) usage ;;
	esac
	shift
done
(($#)) || usage
if ((with_proxy)); then
	: "${NFSCACHED_BIN:?set NFSCACHED_BIN to the nfscached binary}"
	[[ -x "$NFSCACHED_BIN" ]] || { nfsc_say "NFSCACHED_BIN=$NFSCACHED_BIN is not executable"; exit 2; }
fi

NFSC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-it.XXXXXX")
ports=()
started_ganesha=0
NFSC_PROXY_PID=
proxy_status=0
cleaned=0

# Stop nfscached and Ganesha, free the ports, remove the temp dir. Sets
# proxy_status to nfscached's exit status. Runs once.
cleanup() {
	((cleaned)) && return 0
	cleaned=1
	nfsc_stop_session "${NFSC_CMD_PID:-}"
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" || proxy_status=$?
		NFSC_PROXY_PID=
	fi
	if ((started_ganesha)); then
		nfsc_ganesha_stop "$NFSC_TMP/ganesha" || true
	fi
	if ((${#ports[@]})); then
		nfsc_release_ports "${ports[@]}"
	fi
	if [[ "${NFSC_KEEP_TMP:-0}" == 1 ]]; then
		nfsc_say "kept $NFSC_TMP"
	else
		rm -rf "$NFSC_TMP"
	fi
}

# Tear down on any exit that did not go through the normal path.
on_exit() {
	local rc=$?
	if ((!cleaned)); then
		show_tail "the Ganesha log" "$NFSC_TMP/ganesha/ganesha.log"
		show_tail "the nfscached log" "$NFSC_TMP/nfscached.log"
		cleanup
	fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$NFSC_TMP/export" "$NFSC_TMP/ganesha" "$NFSC_TMP/proxy-state"
NFSC_EXPORT_DIR=$NFSC_TMP/export
portlist=$(nfsc_free_ports 6)
read -r -a ports <<<"$portlist"

nfsc_ensure_rpcbind
upstream_url_extra=
if ((ganesha_nlm || ganesha_nfsacl)); then
	[[ -z "$ganesha_extra" ]] ||
		{ echo "harness: --ganesha-nlm and --ganesha-nfsacl take no --ganesha-extra" >&2; exit 2; }
	ganesha_extra=$NFSC_TMP/ganesha-side.conf
	{
		echo 'NFS_CORE_PARAM {'
		((!ganesha_nfsacl)) || echo '  Enable_NFSACL = true;'
		((!ganesha_nlm)) || printf '  Enable_NLM = true;\n  NLM_Port = %s;\n' "${ports[5]}"
		echo '}'
	} >"$ganesha_extra"
fi
if ((ganesha_nlm)); then
	nfsc_ensure_statd
	NFSC_DIRECT_NLM_PORT=${ports[5]}
	export NFSC_DIRECT_NLM_PORT
	upstream_url_extra="&nlmport=${ports[5]}"
fi
started_ganesha=1
nfsc_ganesha_start "$NFSC_TMP/ganesha" "$NFSC_EXPORT_DIR" \
	"${ports[0]}" "${ports[1]}" "$ganesha_extra"

NFSC_DIRECT_NFS_PORT=${ports[0]}
NFSC_DIRECT_MOUNT_PORT=${ports[1]}
NFSC_DIRECT_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[0]}&mountport=${ports[1]}"
NFSC_GANESHA_LOG=$NFSC_TMP/ganesha/ganesha.log
NFSC_UPSTREAMCTL=$here/upstreamctl.sh
export NFSC_TMP NFSC_EXPORT_DIR NFSC_DIRECT_URL NFSC_DIRECT_NFS_PORT \
	NFSC_DIRECT_MOUNT_PORT NFSC_GANESHA_LOG NFSC_UPSTREAMCTL NFSC_LIB

if ((with_proxy)); then
	NFSC_PROXY_NFS_PORT=${ports[2]}
	NFSC_PROXY_MOUNT_PORT=${ports[3]}
	NFSC_METRICS_ADDR=127.0.0.1:${ports[4]}
	NFSC_PROXY_URL="nfs://127.0.0.1/export?version=3&nfsport=${ports[2]}&mountport=${ports[3]}"
	NFSC_PROXY_CONF=$NFSC_TMP/nfscached.conf
	NFSC_PROXY_LOG=$NFSC_TMP/nfscached.log
	nfsc_proxy_config "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
		"$NFSC_METRICS_ADDR" "$NFSC_TMP/proxy-state" "$NFSC_DIRECT_URL$upstream_url_extra" \
		"$proxy_extra" "$proxy_export" >"$NFSC_PROXY_CONF"
	proxy_bin=$NFSCACHED_BIN
	if [[ -n "$proxy_resolv" ]]; then
		# unshare and sh exec in turn: nfscached keeps the pid.
		proxy_bin=$NFSC_TMP/nfscached-resolv
		printf '#!/bin/sh\nexec unshare -m sh -c '\''mount --bind "$0" /etc/resolv.conf && exec "$@"'\'' %q %q "$@"\n' \
			"$proxy_resolv" "$NFSCACHED_BIN" >"$proxy_bin"
		chmod +x "$proxy_bin"
	fi
	nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
		"$NFSC_PROXY_MOUNT_PORT" "$proxy_bin" --config "$NFSC_PROXY_CONF"
	export NFSC_PROXY_URL NFSC_PROXY_NFS_PORT NFSC_PROXY_MOUNT_PORT \
		NFSC_METRICS_ADDR NFSC_PROXY_PID NFSC_PROXY_CONF NFSC_PROXY_LOG
fi

# Run CMD in its own session, so that it and whatever it started can be
# stopped together, and watch nfscached meanwhile: if the proxy dies with a
# non-zero status, the test cannot pass, and its clients would retry
# forever, so end it now rather than at the timeout.
cmd_status=0
watched=$NFSC_PROXY_PID
if ((proxy_may_exit)); then
	watched=
fi
nfsc_run_watching "$watched" "${NFSC_CMD_TIMEOUT:-540}" "$@" || cmd_status=$?
if [[ -n "$NFSC_WATCHED_EXIT" ]]; then
	proxy_status=$NFSC_WATCHED_EXIT
	NFSC_PROXY_PID=
fi
if ((cmd_status != 0)); then
	show_tail "the Ganesha log" "$NFSC_GANESHA_LOG"
	if ((with_proxy)); then
		show_tail "the nfscached log" "$NFSC_PROXY_LOG"
	fi
fi

if ((proxy_may_exit)) && [[ -n "$NFSC_PROXY_PID" ]] &&
	! nfsc_pid_alive "$NFSC_PROXY_PID"; then
	wait "$NFSC_PROXY_PID" || true
	NFSC_PROXY_PID=
fi
if [[ -n "$NFSC_PROXY_PID" ]]; then
	nfsc_proxy_stop "$NFSC_PROXY_PID" || proxy_status=$?
	NFSC_PROXY_PID=
	if ((proxy_status != 0)); then
		nfsc_say "nfscached exited with status $proxy_status on SIGTERM (want 0)"
		show_tail "the nfscached log" "$NFSC_PROXY_LOG"
	fi
fi
cleanup
trap - EXIT

if ((cmd_status != 0)); then
	exit "$cmd_status"
fi
if ((proxy_status != 0)); then
	exit 1
fi
exit 0
