# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# restart: the upstream stops and starts again while the guest copies a
# 64 MiB file ($KT_IN/copy.src) onto the mount: the first 24 MiB are
# written, the host stops the upstream (hook `upstream stop`, returns once
# it is gone), the rest of the copy starts while it is down, the host
# starts it again, and the copy ends with an fsync. It must complete and
# be byte-identical (here after dropping caches, and in the export
# directory: ktest.sh).

guest_restart() {
	local src=$KT_IN/copy.src pid
	step "copy 24 MiB, then the upstream stops"
	dd if="$src" of="$M/copy.bin" bs=1M count=24 status=none
	nfsc_vm_hook upstream stop
	step "copy the rest while it is down; the upstream starts again"
	dd if="$src" of="$M/copy.bin" bs=1M skip=24 seek=24 conv=notrunc,fsync status=none &
	pid=$!
	nfsc_vm_hook upstream start
	wait "$pid" || fail "the copy failed"
	drop_caches
	expect_eq "$(md5_of "$M/copy.bin")" "$(md5_of "$src")" "md5 of copy.bin"
}
