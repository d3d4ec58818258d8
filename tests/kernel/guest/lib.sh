# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shell functions for scripts that run INSIDE the kernel-test guest
# (tests/kernel/vm.sh): steps, exact checks, the host hook, cache drops.
# Sourced by guest/run.sh; every function fails the scenario (exit 1)
# with a message rather than returning an error.

# The mount point, for the scenarios (guest/*.sh).
# shellcheck disable=SC2034
M=${NFSC_VM_MNT:-/mnt}

# Print a step title.
step() { printf '== %s\n' "$*"; }

# Fail the scenario with a message.
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

# Fail unless $1 equals $2; $3 names what was compared.
expect_eq() {
	[[ "$1" == "$2" ]] || fail "$3: got '$1', want '$2'"
	printf '   ok: %s = %s\n' "$3" "$2"
}

# Print the md5 of file $1 (or of stdin without $1).
md5_of() { md5sum "$@" | cut -d' ' -f1; }

# Run `$NFSC_VM_HOOK WORD...` on the host (vm.sh's hook port), wait for it
# and fail unless it exited 0.
nfsc_vm_hook() {
	local rc
	[[ -n "${NFSC_VM_HOOK_DEV:-}" ]] || fail "no hook port"
	exec 4<>"$NFSC_VM_HOOK_DEV"
	echo "$*" >&4
	read -r rc <&4 || rc=255
	exec 4>&-
	((rc == 0)) || fail "host hook '$*' exited $rc"
}

# Write back every dirty page and drop the guest's page, dentry and inode
# caches: what is read next comes from the server.
drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}
