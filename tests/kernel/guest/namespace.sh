# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# namespace: what the kernel client does with names and attributes.
#   - a directory of 2,000 files (file i holds the decimal digits of i)
#     listed with ls -l (READDIRPLUS): 2,000 entries, each with its size;
#   - hard links: link count 2 on both names, one inode, data shared;
#   - an open file removed (the client renames it .nfsXXXX: silly rename)
#     and one renamed over while open: both stay readable through their
#     open descriptors, and the .nfs files go away on the last close;
#   - chmod and chown by root;
#   - symlinks: to a file, to a directory (followed), dangling;
#   - 4 KiB written at 5 GiB (a sparse file): its size, its bytes, zeros
#     before it.
# ktest.sh checks the same facts in the upstream's export directory.

# The 2,000-entry directory.
ns_bigdir() {
	local i n bad
	step "2000 files in big/, ls -l"
	mkdir "$M/big"
	for ((i = 0; i < 2000; i++)); do
		printf '%d' "$i" >"$M/big/f$i"
	done
	drop_caches
	ls -l "$M/big" >/tmp/ls.out
	n=$(grep -c '^-' /tmp/ls.out)
	expect_eq "$n" 2000 "regular entries in ls -l big/"
	# ls -l: size is field 5, name field 9; f<i> holds ${#i} bytes.
	bad=$(awk '/^-/ { i = substr($9, 2); if ($5 != length(i)) print }' /tmp/ls.out | head -3)
	expect_eq "$bad" "" "entries whose size is not their name's digit count"
	expect_eq "$(cat "$M/big/f1999")" 1999 "contents of big/f1999"
}

# Hard links.
ns_links() {
	step "hard links"
	echo "linked data" >"$M/l1"
	ln "$M/l1" "$M/l2"
	expect_eq "$(stat -c %h "$M/l1") $(stat -c %h "$M/l2")" "2 2" "link counts"
	expect_eq "$(stat -c %i "$M/l2")" "$(stat -c %i "$M/l1")" "inode of l2"
	echo "more" >>"$M/l2"
	drop_caches
	expect_eq "$(cat "$M/l1")" $'linked data\nmore' "l1 after appending to l2"
}

# Silly renames: an open file removed, and one renamed over.
ns_silly() {
	local n
	step "silly rename: rm and mv over open files"
	echo "open and removed" >"$M/s1"
	echo "open and replaced" >"$M/s2"
	echo "the new s2" >"$M/s3"
	exec 5<"$M/s1" 6<"$M/s2"
	rm "$M/s1"
	mv "$M/s3" "$M/s2"
	n=$(find "$M" -maxdepth 1 -name '.nfs*' | wc -l)
	expect_eq "$n" 2 ".nfs files while both are open"
	[[ ! -e "$M/s1" ]] || fail "s1 still visible after rm"
	expect_eq "$(cat <&5)" "open and removed" "s1 read through its descriptor"
	expect_eq "$(cat <&6)" "open and replaced" "old s2 read through its descriptor"
	expect_eq "$(cat "$M/s2")" "the new s2" "s2 by name"
	exec 5<&- 6<&-
	# The client removes a silly-renamed file when its last opener
	# closes it (nfs_dentry_iput -> nfs_async_unlink): asynchronously.
	for ((n = 0; n < 100; n++)); do
		[[ -z "$(find "$M" -maxdepth 1 -name '.nfs*')" ]] && break
		sleep 0.1
	done
	expect_eq "$(find "$M" -maxdepth 1 -name '.nfs*' | wc -l)" 0 ".nfs files after the close"
}

# chmod and chown by root, symlinks.
ns_attrs() {
	step "chmod, chown, symlinks"
	echo "owned" >"$M/own"
	chmod 0640 "$M/own"
	chown 1234:5678 "$M/own"
	drop_caches
	expect_eq "$(stat -c '%a %u %g' "$M/own")" "640 1234 5678" "mode uid gid of own"
	mkdir "$M/dir"
	echo "in dir" >"$M/dir/x"
	ln -s own "$M/sym"
	ln -s dir "$M/symdir"
	ln -s nowhere "$M/dangling"
	drop_caches
	expect_eq "$(readlink "$M/sym")" own "readlink sym"
	expect_eq "$(cat "$M/sym")" owned "cat sym"
	expect_eq "$(cat "$M/symdir/x")" "in dir" "cat symdir/x"
	expect_eq "$(stat -c %F "$M/dangling")" "symbolic link" "type of dangling"
	[[ ! -e "$M/dangling" ]] || fail "dangling resolves"
}

# 4 KiB at 5 GiB.
ns_5g() {
	local five=$((5 << 30))
	step "write 4 KiB at 5 GiB"
	head -c 4096 "$KT_IN/data.src" >/tmp/4k
	dd if=/tmp/4k of="$M/sparse" bs=4096 seek=$((five / 4096)) conv=fsync status=none
	drop_caches
	expect_eq "$(stat -c %s "$M/sparse")" $((five + 4096)) "size of sparse"
	expect_eq "$(dd if="$M/sparse" bs=4096 skip=$((five / 4096)) status=none | md5_of)" \
		"$(md5_of /tmp/4k)" "the 4 KiB at 5 GiB"
	expect_eq "$(dd if="$M/sparse" bs=1M skip=4096 count=2 status=none | tr -d '\0' | wc -c)" \
		0 "non-zero bytes in [4 GiB, 4 GiB + 2 MiB)"
}

guest_namespace() {
	ns_bigdir
	ns_links
	ns_silly
	ns_attrs
	ns_5g
}
