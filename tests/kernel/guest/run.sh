#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run.sh SCENARIO...: run in the kernel-test guest (tests/kernel/vm.sh, as
# tests/kernel/ktest.sh starts it) with the NFS export mounted on
# $NFSC_VM_MNT. Each scenario is guest/SCENARIO.sh's function
# guest_SCENARIO, run in a subshell with errexit; the host snapshots the
# proxy's metrics before and after each one (hook `snap NAME-before` and
# `snap NAME-after`). Stops at the first failing scenario, exit 1.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

step "kernel $(uname -r); $(grep " $M nfs" /proc/mounts)"
for s in "$@"; do
	[[ -r "$here/$s.sh" ]] || fail "no scenario $s"
	t0=$EPOCHREALTIME
	nfsc_vm_hook snap "$s-before"
	# shellcheck disable=SC1090
	if ! (set -euo pipefail; . "$here/$s.sh"; "guest_$s"); then
		printf 'kt: scenario %s FAILED\n' "$s"
		exit 1
	fi
	sync
	nfsc_vm_hook snap "$s-after"
	awk -v s="$s" -v a="$EPOCHREALTIME" -v b="$t0" \
		'BEGIN { printf "kt: scenario %s passed in the guest in %.1f s\n", s, a - b }'
done
