# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# cto: close-to-open between two mounts of the same export in one guest
# ($M and /mnt2, the second with nosharecache: its own superblock, inode
# and page cache). Written and closed on one, opened and read on the
# other: new files, and a file the reader has cached rewritten with the
# same size (only its change attributes tell), 20 rounds each way.

guest_cto() {
	local i a b want got
	mkdir -p /mnt2
	mount.nfs "10.0.2.2:/export" /mnt2 -o "$KT_MOUNT2_OPTS" || fail "second mount"
	step "second mount: $(grep ' /mnt2 nfs' /proc/mounts)"
	printf 'round -1\n' >"$M/cto.txt"
	expect_eq "$(cat /mnt2/cto.txt)" "round -1" "cto.txt on /mnt2 before the rounds"
	for ((i = 0; i < 20; i++)); do
		# Odd rounds write on /mnt2 and read on $M.
		a=$M b=/mnt2
		((i % 2)) && a=/mnt2 b=$M
		printf 'new %04d\n' "$i" >"$a/new.$i"
		got=$(cat "$b/new.$i")
		[[ "$got" == "new $(printf %04d "$i")" ]] || fail "round $i: new.$i on $b: '$got'"
		want=$(printf 'round %02d\n' "$i")
		printf '%s\n' "$want" >"$a/cto.txt"
		got=$(cat "$b/cto.txt")
		[[ "$got" == "$want" ]] || fail "round $i: cto.txt written on $a, read on $b: '$got', want '$want'"
	done
	printf '   ok: 20 rounds, each write seen by the other mount at open\n'
	umount /mnt2 || fail "umount /mnt2"
}
