# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# data: 64 MiB written with dd conv=fsync, the same with O_DIRECT, and
# O_DIRECT writes of an odd size (4097 bytes: NFS direct I/O has no
# alignment rule, so they go out as they are), the guest's caches
# dropped, read back buffered and O_DIRECT. The source is the host's
# $KT_IN/data.src (over 9p); ktest.sh compares the upstream's copies.

guest_data() {
	local src=$KT_IN/data.src sum
	sum=$(md5_of "$src")
	step "write 64 MiB: dd bs=1M conv=fsync"
	dd if="$src" of="$M/data.bin" bs=1M conv=fsync status=none
	step "write 64 MiB: dd bs=1M oflag=direct conv=fsync"
	dd if="$src" of="$M/direct.bin" bs=1M oflag=direct conv=fsync status=none
	step "write 1000 x 4097 bytes: dd oflag=direct"
	dd if="$src" of="$M/odd.bin" bs=4097 count=1000 oflag=direct status=none
	step "drop the guest's caches, read back"
	drop_caches
	expect_eq "$(md5_of "$M/data.bin")" "$sum" "md5 of data.bin (buffered)"
	expect_eq "$(dd if="$M/direct.bin" bs=1M iflag=direct status=none | md5_of)" \
		"$sum" "md5 of direct.bin (O_DIRECT)"
	expect_eq "$(md5_of "$M/odd.bin")" "$(head -c 4097000 "$src" | md5_of)" \
		"md5 of odd.bin"
}
