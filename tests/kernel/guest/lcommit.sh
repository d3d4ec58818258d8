# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# lcommit: commit = "local" under the kernel client (issue 18), through an
# nfscached that ktest.sh --lcommit-proxy started with writeback_delay =
# 3600 (nothing goes upstream before the kill) and its test clock on (the
# disk tier's test gate).
#
# 8 MiB are written 1 MiB at a time, each fsynced: answered once durable
# in cache_dir. Then the host closes the disk gate and 4 MiB more are
# written and fsynced: the kernel's UNSTABLE WRITEs are answered, its
# COMMIT waits at the gate for the journal (it is never answered before
# the bytes are durable). With that COMMIT outstanding the host SIGKILLs
# nfscached and starts it again on the same cache_dir (hooks `proxy kill`,
# `proxy start`); the kernel sends the COMMIT again, gets the new
# process's write verifier, and so writes the 4 MiB again (RFC 1813
# section 3.3.7) before the fsync returns. The last 4 MiB are written
# with fsync. The file, read back after the guest's caches are dropped,
# is the source; ktest.sh checks the metrics and, after nfscached's clean
# stop, the upstream's copy.

guest_lcommit() {
	local src=$KT_IN/lc.src i pid
	step "8 x 1 MiB, each fsynced (dd conv=fsync)"
	for ((i = 0; i < 8; i++)); do
		dd if="$src" of="$M/lc.bin" bs=1M count=1 skip="$i" seek="$i" \
			conv=notrunc,fsync status=none
	done
	step "4 MiB fsynced with the disk gate closed; nfscached killed and started again"
	nfsc_vm_hook gate close
	# dd holds the only descriptor of the file: a process that closed one
	# (an exec closing it included) would wait at the gate too.
	dd if="$src" of="$M/lc.bin" bs=1M count=4 skip=8 seek=8 \
		conv=notrunc,fsync status=none &
	pid=$!
	# A failing hook must not leave dd waiting at the gate (and the guest
	# until its timeout): kill it, open the gate.
	trap 'kill -KILL "$pid" 2>/dev/null; nfsc_vm_hook gate open' EXIT
	nfsc_vm_hook gate held
	nfsc_vm_hook snap lcommit-kill
	nfsc_vm_hook proxy kill
	nfsc_vm_hook proxy start
	wait "$pid" || fail "the write and fsync of [8 MiB, 12 MiB) across the restart failed"
	trap - EXIT
	step "the last 4 MiB, fsynced"
	dd if="$src" of="$M/lc.bin" bs=1M count=4 skip=12 seek=12 \
		conv=notrunc,fsync status=none
	drop_caches
	expect_eq "$(md5_of "$M/lc.bin")" "$(md5_of "$src")" "md5 of lc.bin"
}
