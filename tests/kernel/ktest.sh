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
# Scenarios: data fsx fio namespace cto restart (see guest/*.sh).
#
# Environment: what harness.sh exports; KFSX_BIN (the kfsx program);
# NFSC_VM_HOME (vm.sh's cache); KT_FSX_SEEDS ("1 2 3"), KT_FSX_OPS (20000).
# Also the guest's hook: `ktest.sh --hook snap NAME` saves the proxy's
# metrics as $NFSC_TMP/metrics.NAME; `ktest.sh --hook upstream stop|start`
# runs $NFSC_UPSTREAMCTL.
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

# ------------------------------------------------------------------ main

main() {
	local s nfs mnt t0 t1 rc=0
	(($#)) || kt_fail "usage: $0 SCENARIO..."
	for s in "$@"; do
		declare -F "check_$s" >/dev/null || kt_fail "no scenario $s"
	done
	[[ -x "${KFSX_BIN:-}" ]] || kt_fail "KFSX_BIN is not set to the kfsx program"
	if via_proxy; then
		nfs=$NFSC_PROXY_NFS_PORT mnt=$NFSC_PROXY_MOUNT_PORT
		echo "ktest: the guest mounts nfscached (port $nfs), upstream Ganesha"
	else
		nfs=$NFSC_DIRECT_NFS_PORT mnt=$NFSC_DIRECT_MOUNT_PORT
		echo "ktest: the guest mounts Ganesha directly (port $nfs): the control"
	fi
	mkdir -p "$KT_IN"
	for s in "$@"; do "prepare_$s"; done
	KT_MOUNT2_OPTS="vers=3,proto=tcp,port=$nfs,mountport=$mnt,mountproto=tcp,nolock,retry=0,nosharecache"
	export KT_IN KT_FSX_SEEDS KT_FSX_OPS KT_FIO_JOB KT_MOUNT2_OPTS KFSX_BIN
	export NFSC_VM_PASSENV="KT_IN KT_FSX_SEEDS KT_FSX_OPS KT_FIO_JOB KT_MOUNT2_OPTS KFSX_BIN"
	export NFSC_VM_HOOK="$here/ktest.sh --hook"
	export NFSC_VM_TIMEOUT=${NFSC_VM_TIMEOUT:-$((${NFSC_CMD_TIMEOUT:-540} - 60))}
	t0=$EPOCHREALTIME
	"$here/vm.sh" "$nfs" "$mnt" -- "$here/guest/run.sh" "$@" || rc=$?
	t1=$EPOCHREALTIME
	((rc == 0)) || kt_fail "the guest's run exited $rc"
	for s in "$@"; do
		echo "ktest: $s: the upstream's side"
		"check_$s"
	done
	awk -v a="$t0" -v b="$t1" -v s="$*" \
		'BEGIN { printf "ktest: PASS: %s (guest %.1f s)\n", s, b - a }'
}

# One line: bash reads a script as it runs, and this must not be re-read.
main "$@"; exit $?
