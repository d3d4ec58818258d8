#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ktest.sh SCENARIO...: one kernel test. Run under tests/integration/
# harness.sh (which starts Ganesha, and nfscached unless --no-proxy): boots
# one guest (vm.sh) that mounts nfscached (or, with --no-proxy, Ganesha
# directly: the control) with the Linux kernel's NFS client, runs the
# scenarios in it (guest/run.sh, guest/SCENARIO.sh), then checks on the
# host what each one left in the upstream's export directory and, through
# nfscached, the proxy's /metrics deltas over each scenario.
#
# Scenarios: data fsx fio namespace cto restart lcommit locks nfsacl (see
# guest/*.sh). With locks the guest mounts without nolock (NFSC_VM_LOCKS:
# it runs rpcbind and rpc.statd) and so does its second mount.
#
#   ktest.sh [--lcommit-proxy | --knfsd-upstream] SCENARIO...
#
# --lcommit-proxy (under harness.sh --no-proxy): ktest.sh starts nfscached
# itself, with commit = "local" on a cache_dir, writeback_delay = 3600 and
# NFSCACHED_TEST_CLOCK=1 (for the disk gate), so that the guest's hooks
# can hold its journal, SIGKILL it and start it again; it is stopped
# (SIGTERM: everything written back) before the checks.
#
# Environment: what harness.sh exports; KFSX_BIN (the kfsx program);
# NFSC_VM_HOME (vm.sh's cache); KT_FSX_SEEDS ("1 2 3"), KT_FSX_OPS (20000).
# Also the guest's hook: `ktest.sh --hook snap NAME` saves the proxy's
# metrics as $NFSC_TMP/metrics.NAME; `ktest.sh --hook upstream stop|start`
# runs $NFSC_UPSTREAMCTL; `ktest.sh --hook proxy kill|start` SIGKILLs the
# --lcommit-proxy nfscached (and waits until it is gone) or starts it
# again on the same configuration ($KT_PROXY_PIDFILE holds its pid);
# `ktest.sh --hook gate close|open|held` closes or opens its disk tier's
# test gate, or waits until the gate holds work (docs/operations.md "Test
# clock"); `ktest.sh --hook upstream up` waits until nfscached reports its
# upstream connected (nfscached_upstream_up, 60 s at most).
#
# --knfsd-upstream (under harness.sh --no-proxy; scenario nfsacl): the
# upstream is the Linux kernel's NFS server that the guest itself runs
# (guest/nfsacl.sh), reached from here through QEMU's port forwards
# (NFSC_VM_HOSTFWD: two reserved host ports to the guest's 2049 and its
# mountd's KT_KNFSD_MOUNTD_PORT). ktest.sh starts nfscached with that
# upstream before the guest boots (it serves, the upstream down, and
# connects once the guest's knfsd answers); vm.sh mounts nothing: the
# guest mounts nfscached itself once knfsd serves and the hook `upstream
# up` returned. nfscached is stopped (SIGTERM, exit 0 wanted) before the
# checks. Ganesha, started by harness.sh, is not used.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${NFSC_TMP:?run this under tests/integration/harness.sh}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

MiB=$((1 << 20))
KT_IN=$NFSC_TMP/in
KT_FSX_SEEDS=${KT_FSX_SEEDS:-1 2 3}
KT_FSX_OPS=${KT_FSX_OPS:-20000}
# The fio job, in the guest and for the host's --verify_only.
KT_FIO_JOB="--name=kverify --size=16M --rw=randrw --bs=4k --ioengine=psync
 --verify=crc32c --verify_fatal=1 --randrepeat=1 --fsync_on_close=1"
KT_FIO_JOB=${KT_FIO_JOB//$'\n'/}

# ---------------------------------------------------------------- hooks

# Run the guest's hook request $@.
hook() {
	case "$1 ${2:-}" in
	"snap "*)
		[[ "$2" =~ ^[a-z0-9_-]+$ ]] || return 2
		[[ -n "${NFSC_METRICS_ADDR:-}" ]] || return 0
		nfsc_metrics "$NFSC_METRICS_ADDR" >"$NFSC_TMP/metrics.$2"
		;;
	"upstream stop" | "upstream start") "$NFSC_UPSTREAMCTL" "$2" ;;
	"upstream up")
		local i up
		for ((i = 0; i < 600; i++)); do
			up=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_up{export="/export"}' 2>/dev/null) || up=
			[[ "$up" == 1 ]] && return 0
			sleep 0.1
		done
		echo "ktest: nfscached's upstream is not up after 60 s" >&2
		return 1
		;;
	"proxy kill")
		[[ -n "${KT_PROXY_PIDFILE:-}" ]] || return 2
		local pid
		pid=$(<"$KT_PROXY_PIDFILE")
		kill -KILL "$pid" || return 1
		nfsc_wait_gone "$pid" 600
		;;
	"gate close" | "gate open")
		curl -sf -X POST --max-time 10 \
			"http://$NFSC_METRICS_ADDR/debug/disk/gate?action=$2" >/dev/null
		;;
	"gate held")
		# Until the gate holds work (60 s at most).
		local i out
		for ((i = 0; i < 600; i++)); do
			out=$(curl -sf --max-time 10 "http://$NFSC_METRICS_ADDR/debug/disk/gate") || out=
			[[ "$out" =~ (^|$'\n')held\ [1-9] ]] && return 0
			sleep 0.1
		done
		return 1
		;;
	"proxy start")
		[[ -n "${KT_PROXY_PIDFILE:-}" ]] || return 2
		nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
			"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF" ||
			return 1
		echo "$NFSC_PROXY_PID" >"$KT_PROXY_PIDFILE"
		;;
	*) return 2 ;;
	esac
}

if [[ "${1:-}" == --hook ]]; then
	shift
	hook "$@"
	exit
fi

# ------------------------------------------------------------ utilities

# Fail the test with a message.
kt_fail() {
	echo "ktest: FAIL: $*" >&2
	exit 1
}

# Fail unless $1 equals $2; $3 names what was compared.
kt_expect() {
	[[ "$1" == "$2" ]] || kt_fail "$3: got '$1', want '$2'"
	echo "ktest:    ok: $3 = $2"
}

# Fail unless export-directory file $1 and file $2 are byte-identical.
kt_cmp() {
	cmp "$2" "$NFSC_EXPORT_DIR/$1" || kt_fail "upstream $1 differs from $2"
	echo "ktest:    ok: upstream $1 is byte-identical to ${2#"$NFSC_TMP"/}"
}

# Print metric sample $2 (exact name with labels) from snapshot $1 (0 if
# absent).
snap() {
	awk -v s="$2" '$1 == s { v = $2 } END { print v + 0 }' "$NFSC_TMP/metrics.$1"
}

# Print the change of sample $2 over scenario $1.
delta() {
	echo $(($(snap "$1-after" "$2") - $(snap "$1-before" "$2")))
}

# True when the test runs through nfscached.
via_proxy() { [[ -n "${NFSC_METRICS_ADDR:-}" ]]; }

# Check that nfscached holds nothing not yet committed upstream at the end
# of scenario $1 (the guest's fsync/close COMMITs made it write back).
kt_all_committed() {
	local s
	for s in dirty writing unstable; do
		kt_expect "$(snap "$1-after" "nfscached_cache_bytes{state=\"$s\"}")" 0 \
			"$1: nfscached $s bytes at the end"
	done
}

# ------------------------------------------------ scenarios: the host side

prepare_data() {
	[[ -e "$KT_IN/data.src" ]] || head -c $((64 * MiB)) /dev/urandom >"$KT_IN/data.src"
}

check_data() {
	local w=$((2 * 64 * MiB + 4097000))
	kt_cmp data.bin "$KT_IN/data.src"
	kt_cmp direct.bin "$KT_IN/data.src"
	head -c 4097000 "$KT_IN/data.src" >"$KT_IN/odd.expected"
	kt_cmp odd.bin "$KT_IN/odd.expected"
	via_proxy || return 0
	kt_expect "$(delta data nfscached_client_write_bytes_total)" "$w" \
		"data: bytes the guest WROTE to nfscached"
	kt_expect "$(delta data nfscached_upstream_write_bytes_total)" "$w" \
		"data: bytes nfscached wrote upstream"
	kt_all_committed data
}

prepare_fsx() { :; }

check_fsx() {
	local seed
	for seed in $KT_FSX_SEEDS; do
		KFSX_REPLAY=$KT_IN/fsx.$seed.model NFSC_FSX_SEED=$seed \
			NFSC_FSX_OPS=$KT_FSX_OPS "$KFSX_BIN" | grep '^kfsx: seed.*replay' ||
			kt_fail "kfsx replay of seed $seed"
		kt_cmp "fsx.$seed" "$KT_IN/fsx.$seed.model"
	done
	via_proxy || return 0
	kt_all_committed fsx
}

prepare_fio() { :; }

check_fio() {
	# shellcheck disable=SC2086 # the job's options, word by word
	fio --filename="$NFSC_EXPORT_DIR/fio.dat" $KT_FIO_JOB --verify_only \
		>"$KT_IN/fio-verify.out" 2>&1 || { cat "$KT_IN/fio-verify.out" >&2; kt_fail "fio --verify_only"; }
	grep -q 'err= 0' "$KT_IN/fio-verify.out" || kt_fail "fio --verify_only reported an error"
	echo "ktest:    ok: fio --verify_only of the upstream's fio.dat: err= 0"
	via_proxy || return 0
	kt_all_committed fio
}

prepare_namespace() { prepare_data; }

check_namespace() {
	local e=$NFSC_EXPORT_DIR
	kt_expect "$(find "$e/big" -type f | wc -l)" 2000 "namespace: upstream files in big/"
	kt_expect "$(cat "$e/big/f1234")" 1234 "namespace: upstream big/f1234"
	kt_expect "$(stat -c '%h %i' "$e/l1")" "$(stat -c '%h %i' "$e/l2")" \
		"namespace: upstream l2 links and inode (as l1)"
	kt_expect "$(stat -c %h "$e/l1")" 2 "namespace: upstream link count of l1"
	kt_expect "$(find "$e" -maxdepth 1 -name '.nfs*' | wc -l)" 0 "namespace: upstream .nfs files"
	kt_expect "$(find "$e" -maxdepth 1 -name 's[123]' -printf '%f\n')" s2 \
		"namespace: upstream s1/s2/s3 left"
	kt_expect "$(cat "$e/s2")" "the new s2" "namespace: upstream s2"
	kt_expect "$(stat -c '%a %u %g' "$e/own")" "640 1234 5678" "namespace: upstream mode uid gid of own"
	kt_expect "$(readlink "$e/sym") $(readlink "$e/symdir") $(readlink "$e/dangling")" \
		"own dir nowhere" "namespace: upstream symlink targets"
	kt_expect "$(stat -c %s "$e/sparse")" $(((5 << 30) + 4096)) "namespace: upstream size of sparse"
	head -c 4096 "$KT_IN/data.src" >"$KT_IN/4k"
	tail -c 4096 "$e/sparse" >"$KT_IN/sparse.tail"
	cmp "$KT_IN/4k" "$KT_IN/sparse.tail" || kt_fail "the upstream's 4 KiB at 5 GiB differ"
	echo "ktest:    ok: the upstream's 4 KiB at 5 GiB"
	via_proxy || return 0
	kt_all_committed namespace
}

prepare_cto() { :; }

check_cto() {
	kt_expect "$(cat "$NFSC_EXPORT_DIR/cto.txt")" "round 19" "cto: upstream cto.txt"
	kt_expect "$(find "$NFSC_EXPORT_DIR" -maxdepth 1 -name 'new.*' | wc -l)" 20 \
		"cto: upstream new.* files"
}

prepare_locks() { :; }

check_locks() {
	kt_expect "$(sqlite3 "$NFSC_EXPORT_DIR/locks.db" "SELECT count(*) FROM t;")" 100 \
		"locks: upstream locks.db rows"
	kt_expect "$(sqlite3 "$NFSC_EXPORT_DIR/locks.db" "PRAGMA integrity_check;")" ok \
		"locks: upstream locks.db integrity_check"
	if via_proxy; then
		# Every lock went to Ganesha's lock manager, none failed.
		kt_expect "$(($(delta locks nfscached_nlm_forwarded_total) >= 10))" 1 \
			"locks: NLM calls forwarded upstream (at least 10)"
		kt_expect "$(delta locks nfscached_nlm_failures_total)" 0 \
			"locks: NLM calls that failed upstream"
		kt_expect "$(($(delta locks 'nfscached_client_rpcs_total{program="nlm4",procedure="lock"}') >= 10))" 1 \
			"locks: the guest's LOCK calls reached the proxy"
	fi
}

prepare_nfsacl() {
	[[ -n "${KT_KNFSD_PORTS:-}" ]] || kt_fail "nfsacl needs --knfsd-upstream"
}

check_nfsacl() {
	local c='nfscached_client_rpcs_total{program="nfsacl3",procedure=' set get fwd hits
	# The guest compared every ACL with the server's own (getfacl on
	# knfsd's tmpfs): SETACLs reached knfsd. Here: nfscached forwarded
	# each one it did not answer from a kept reply, knfsd answered them
	# all, and a repeated GETACL of an unchanged file was a cache hit.
	set=$(delta nfsacl_proxy "$c\"setacl\"}")
	get=$(delta nfsacl_proxy "$c\"getacl\"}")
	fwd=$(delta nfsacl_proxy nfscached_nfsacl_forwarded_total)
	hits=$(delta nfsacl_proxy nfscached_nfsacl_cache_hits_total)
	echo "ktest:    the guest sent nfscached $set SETACL and $get GETACL;" \
		"$fwd forwarded upstream, $hits answered from the cache"
	# setfacl -m, setfacl -d -m, setfacl -b twice (the client may add
	# its own SETACLs of the ACLs new files inherit).
	kt_expect "$((set >= 4))" 1 "nfsacl: SETACLs through nfscached (at least 4)"
	kt_expect "$fwd" $((set + get - hits)) \
		"nfsacl: NFSACL calls forwarded (every SETACL and every GETACL not answered from the cache)"
	# Eight reads of an ACL right after it changed (or of a new file's):
	# no kept reply may answer those.
	kt_expect "$((fwd - set >= 8))" 1 "nfsacl: GETACLs forwarded upstream (at least 8)"
	kt_expect "$(delta nfsacl_proxy nfscached_nfsacl_unserved_total)" 0 \
		"nfsacl: NFSACL calls the upstream refused (PROG_UNAVAIL)"
	kt_expect "$(delta nfsacl_proxy nfscached_nfsacl_failures_total)" 0 \
		"nfsacl: NFSACL calls the upstream did not answer"
	# The GETACL asked again of an unchanged directory.
	kt_expect "$(($(delta nfsacl_hit "$c\"getacl\"}") >= 1))" 1 \
		"nfsacl: the repeated GETACL reached nfscached"
	kt_expect "$(delta nfsacl_hit nfscached_nfsacl_cache_hits_total)" \
		"$(delta nfsacl_hit "$c\"getacl\"}")" "nfsacl: repeated GETACLs answered from the cache"
	kt_expect "$(delta nfsacl_hit nfscached_nfsacl_forwarded_total)" 0 \
		"nfsacl: NFSACL calls forwarded for the repeated GETACL"
	kt_expect "$((hits >= 1))" 1 "nfsacl: GETACLs answered from the cache (at least 1)"
}

prepare_restart() {
	head -c $((64 * MiB)) /dev/urandom >"$KT_IN/copy.src"
}

check_restart() {
	kt_cmp copy.bin "$KT_IN/copy.src"
	via_proxy || return 0
	kt_expect "$(($(delta restart nfscached_upstream_connects_total) >= 1))" 1 \
		"restart: nfscached reconnected to the upstream (connects >= 1)"
	kt_all_committed restart
}

prepare_lcommit() {
	[[ -n "${KT_PROXY_PIDFILE:-}" ]] || kt_fail "lcommit needs --lcommit-proxy"
	head -c $((16 * MiB)) /dev/urandom >"$KT_IN/lc.src"
}

check_lcommit() {
	local w c
	# At the kill: the 8 fsynced MiB were acknowledged from cache_dir and
	# none of it had gone upstream; the 4 MiB after them had reached it.
	w=$(($(snap lcommit-kill nfscached_client_write_bytes_total) -
		$(snap lcommit-before nfscached_client_write_bytes_total)))
	kt_expect "$w" $((12 * MiB)) "lcommit: bytes the guest WROTE before the kill"
	# Each fsync: a FILE_SYNC WRITE or UNSTABLE WRITEs and a COMMIT.
	w=0
	for c in commit write; do
		w=$((w + $(snap lcommit-kill "nfscached_local_commits_total{call=\"$c\"}") -
			$(snap lcommit-before "nfscached_local_commits_total{call=\"$c\"}")))
	done
	kt_expect "$((w >= 8))" 1 \
		"lcommit: fsyncs answered from cache_dir before the kill (>= 8)"
	kt_expect "$(($(snap lcommit-kill nfscached_upstream_write_bytes_total) -
		$(snap lcommit-before nfscached_upstream_write_bytes_total)))" 0 \
		"lcommit: bytes written upstream before the kill"
	kt_expect "$(($(snap lcommit-kill nfscached_disk_dirty_bytes) >= 8 * MiB))" 1 \
		"lcommit: journal bytes in cache_dir at the kill (>= 8 MiB)"
	kt_expect "$(($(snap lcommit-kill nfscached_client_commit_calls_total) -
		$(snap lcommit-before nfscached_client_commit_calls_total) >= 1))" 1 \
		"lcommit: the held COMMIT had arrived at the kill"
	# The new process: the journal recovered, a new verifier, and the
	# kernel resent the 4 MiB it had not seen committed.
	kt_expect "$(snap lcommit-after nfscached_write_verifier_reused)" 0 \
		"lcommit: write verifier reused after SIGKILL"
	kt_expect "$(($(snap lcommit-after nfscached_local_recovered_records) > 0))" 1 \
		"lcommit: journal records recovered at the restart (> 0)"
	kt_expect "$(snap lcommit-after nfscached_client_write_bytes_total)" $((8 * MiB)) \
		"lcommit: bytes the guest WROTE after the restart (4 MiB resent + 4 MiB)"
	lcommit_proxy_stop
	kt_cmp lc.bin "$KT_IN/lc.src"
}

# ------------------------------------------- --lcommit-proxy: own nfscached

KT_PROXY_PIDFILE=
KT_PROXY_FIRST=

# Start nfscached with commit = "local" (wbtest_proxy.sh's config).
lcommit_proxy_start() {
	# shellcheck source=../integration/wbtest_proxy.sh
	. "$here/../integration/wbtest_proxy.sh"
	cat >"$NFSC_TMP/lcommit.conf" <<-EOF
		writeback_delay = 3600
		cache_dir = "$NFSC_TMP/diskcache"
	EOF
	printf '\tcommit = "local"\n' >"$NFSC_TMP/lcommit-export.conf"
	export NFSCACHED_TEST_CLOCK=1
	wbp_setup "$NFSC_TMP/lcommit.conf" "$NFSC_TMP/lcommit-export.conf" ||
		kt_fail "lcommit: nfscached's configuration"
	wbp_start || kt_fail "lcommit: nfscached did not start"
	KT_PROXY_FIRST=$NFSC_PROXY_PID
	KT_PROXY_PIDFILE=$NFSC_TMP/proxy.pid
	echo "$NFSC_PROXY_PID" >"$KT_PROXY_PIDFILE"
	export KT_PROXY_PIDFILE NFSCACHED_BIN
	trap 'lcommit_proxy_cleanup' EXIT
}

# Stop the running nfscached with SIGTERM: it writes everything back and
# logs "stopped" last; the first one (SIGKILLed) exited 137.
lcommit_proxy_stop() {
	local pid st=0
	pid=$(<"$KT_PROXY_PIDFILE")
	kill -TERM "$pid" 2>/dev/null || kt_fail "lcommit: nfscached (pid $pid) is not running"
	nfsc_wait_gone "$pid" 600 || kt_fail "lcommit: nfscached still runs 60 s after SIGTERM"
	: >"$KT_PROXY_PIDFILE"
	kt_expect "$(tail -n 1 "$NFSC_PROXY_LOG" | grep -c ': stopped$')" 1 \
		"lcommit: nfscached's last log line is 'stopped'"
	if [[ "$pid" != "$KT_PROXY_FIRST" ]]; then
		wait "$KT_PROXY_FIRST" || st=$?
		kt_expect "$st" 137 "lcommit: exit status of the SIGKILLed nfscached"
	fi
}

# On exit: kill what still runs, release the ports.
lcommit_proxy_cleanup() {
	local pid
	pid=$(cat "$KT_PROXY_PIDFILE" 2>/dev/null) || pid=
	[[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null
	NFSC_PROXY_PID=
	wbp_cleanup
}

# ------------------------------------- --knfsd-upstream: own nfscached

KT_KNFSD_PORTS=
KT_KNFSD_MOUNTD_PORT=20048
KT_KNFSD_PROXY_PID=

# Start nfscached in front of the guest's knfsd, reached through the host
# ends of QEMU's port forwards (not listening until the guest boots).
knfsd_proxy_start() {
	local p dir=$NFSC_TMP/knfsd-proxy up
	read -r -a p <<<"$(nfsc_free_ports 5)" || kt_fail "no free ports"
	KT_KNFSD_PORTS="${p[*]}"
	trap 'knfsd_proxy_cleanup' EXIT
	mkdir -p "$dir/state"
	NFSC_PROXY_NFS_PORT=${p[0]}
	NFSC_PROXY_MOUNT_PORT=${p[1]}
	NFSC_METRICS_ADDR=127.0.0.1:${p[2]}
	NFSC_PROXY_CONF=$dir/nfscached.conf
	NFSC_PROXY_LOG=$dir/nfscached.log
	up="nfs://127.0.0.1/srv/acl?version=3&nfsport=${p[3]}&mountport=${p[4]}"
	nfsc_proxy_config "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
		"$NFSC_METRICS_ADDR" "$dir/state" "$up" "" "$here/knfsd_export.conf" \
		>"$NFSC_PROXY_CONF" || kt_fail "nfscached's configuration"
	nfsc_proxy_start "$NFSC_PROXY_LOG" "$NFSC_PROXY_NFS_PORT" \
		"$NFSC_PROXY_MOUNT_PORT" "$NFSCACHED_BIN" --config "$NFSC_PROXY_CONF" ||
		kt_fail "nfscached did not start (upstream $up, not up yet)"
	KT_KNFSD_PROXY_PID=$NFSC_PROXY_PID
	export NFSC_METRICS_ADDR NFSC_PROXY_NFS_PORT NFSC_PROXY_MOUNT_PORT KT_KNFSD_MOUNTD_PORT
	export NFSC_VM_HOSTFWD="tcp:127.0.0.1:${p[3]}-:2049 tcp:127.0.0.1:${p[4]}-:$KT_KNFSD_MOUNTD_PORT"
	# vm.sh setup unpacks nfs-kernel-server there; the guest sees this
	# host's paths.
	KT_KNFSD_ROOT=$(realpath -m "${NFSC_VM_HOME:-$here/../../build/kernel-vm}/pkg/nfs-kernel-server")
	export KT_KNFSD_ROOT
	# The guest loads nfsd (and what it needs) at boot.
	[[ " ${NFSC_VM_MODULES:-} " == *" nfsd "* ]] ||
		export NFSC_VM_MODULES="${NFSC_VM_MODULES:+$NFSC_VM_MODULES }nfsd"
	echo "ktest: nfscached (port ${p[0]}) in front of the guest's knfsd: $up"
}

# Stop nfscached (SIGTERM) and fail unless it exited 0.
knfsd_proxy_stop() {
	local st=0
	nfsc_proxy_stop "$KT_KNFSD_PROXY_PID" || st=$?
	KT_KNFSD_PROXY_PID=
	((st == 0)) || kt_fail "nfscached exited $st on SIGTERM (want 0)"
}

# On exit: kill what still runs, release the ports; the log on failure.
knfsd_proxy_cleanup() {
	local rc=$?
	if ((rc != 0)) && [[ -s "${NFSC_PROXY_LOG:-}" ]]; then
		echo "----- last 40 lines of $NFSC_PROXY_LOG -----" >&2
		tail -n 40 "$NFSC_PROXY_LOG" >&2
	fi
	[[ -n "$KT_KNFSD_PROXY_PID" ]] && kill -KILL "$KT_KNFSD_PROXY_PID" 2>/dev/null
	# shellcheck disable=SC2086 # the port list, word by word
	[[ -n "$KT_KNFSD_PORTS" ]] && nfsc_release_ports $KT_KNFSD_PORTS
	return "$rc"
}

# ------------------------------------------------------------------ main

main() {
	local s nfs mnt t0 t1 rc=0
	if [[ "${1:-}" == --lcommit-proxy ]]; then
		shift
		lcommit_proxy_start
	elif [[ "${1:-}" == --knfsd-upstream ]]; then
		shift
		knfsd_proxy_start
	fi
	(($#)) || kt_fail "usage: $0 [--lcommit-proxy | --knfsd-upstream] SCENARIO..."
	for s in "$@"; do
		declare -F "check_$s" >/dev/null || kt_fail "no scenario $s"
	done
	[[ -x "${KFSX_BIN:-}" ]] || kt_fail "KFSX_BIN is not set to the kfsx program"
	if [[ -n "$KT_KNFSD_PORTS" ]]; then
		# The guest mounts nfscached itself once its knfsd serves.
		nfs=0 mnt=0
		KT_PROXY_MOUNT_OPTS="vers=3,proto=tcp,port=$NFSC_PROXY_NFS_PORT,mountport=$NFSC_PROXY_MOUNT_PORT,mountproto=tcp,nolock,retry=0"
		export KT_PROXY_MOUNT_OPTS
	elif via_proxy; then
		nfs=$NFSC_PROXY_NFS_PORT mnt=$NFSC_PROXY_MOUNT_PORT
		echo "ktest: the guest mounts nfscached (port $nfs), upstream Ganesha"
	else
		nfs=$NFSC_DIRECT_NFS_PORT mnt=$NFSC_DIRECT_MOUNT_PORT
		echo "ktest: the guest mounts Ganesha directly (port $nfs): the control"
	fi
	mkdir -p "$KT_IN"
	for s in "$@"; do "prepare_$s"; done
	KT_MOUNT2_OPTS="vers=3,proto=tcp,port=$nfs,mountport=$mnt,mountproto=tcp,nolock,retry=0,nosharecache"
	if [[ " $* " == *" locks "* ]]; then
		export NFSC_VM_LOCKS=1
		KT_MOUNT2_OPTS=${KT_MOUNT2_OPTS/,nolock,/,lock,}
	fi
	export KT_IN KT_FSX_SEEDS KT_FSX_OPS KT_FIO_JOB KT_MOUNT2_OPTS KFSX_BIN
	export NFSC_VM_PASSENV="KT_IN KT_FSX_SEEDS KT_FSX_OPS KT_FIO_JOB KT_MOUNT2_OPTS KFSX_BIN
 KT_PROXY_MOUNT_OPTS KT_KNFSD_ROOT KT_KNFSD_MOUNTD_PORT"
	export NFSC_VM_HOOK="$here/ktest.sh --hook"
	export NFSC_VM_TIMEOUT=${NFSC_VM_TIMEOUT:-$((${NFSC_CMD_TIMEOUT:-540} - 60))}
	t0=$EPOCHREALTIME
	"$here/vm.sh" "$nfs" "$mnt" -- "$here/guest/run.sh" "$@" || rc=$?
	t1=$EPOCHREALTIME
	((rc == 0)) || kt_fail "the guest's run exited $rc"
	[[ -z "$KT_KNFSD_PROXY_PID" ]] || knfsd_proxy_stop
	for s in "$@"; do
		echo "ktest: $s: the upstream's side"
		"check_$s"
	done
	awk -v a="$t0" -v b="$t1" -v s="$*" \
		'BEGIN { printf "ktest: PASS: %s (guest %.1f s)\n", s, b - a }'
}

# One line: bash reads a script as it runs, and this must not be re-read.
main "$@"; exit $?
