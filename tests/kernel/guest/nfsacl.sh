# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# guest_nfsacl: POSIX ACLs through nfscached to an upstream that keeps
# them: the Linux kernel's own NFS server (knfsd), run in this guest on a
# tmpfs (POSIX ACLs on). The upstream of the tests' other scenarios,
# Ganesha 4.3 FSAL_VFS, has no POSIX ACLs (it lists none, refuses SETACL).
#
#   1. knfsd: the nfsd module (ktest.sh adds it to NFSC_VM_MODULES) and
#      its filesystem, a tmpfs /srv/acl exported to 10.0.2.0/24 (QEMU's
#      NAT: the host's nfscached arrives from 10.0.2.2, from any port:
#      insecure) and to loopback, rpcbind, then exportfs, rpc.mountd (port
#      KT_KNFSD_MOUNTD_PORT) and rpc.nfsd (NFSv3 only) from the unpacked
#      nfs-kernel-server under KT_KNFSD_ROOT (vm.sh setup fetches it; it
#      is not installed on the host). Any step failing fails the test
#      with its reason: a knfsd that does not start is no skip.
#   2. the control: the guest mounts its own knfsd (127.0.0.1) and runs
#      the round trip below in /srv/acl/direct.
#   3. the host's nfscached reaches this knfsd through QEMU's port
#      forwards (its upstream URL names the host ends); the hook
#      `upstream up` waits until it reports the upstream connected, then
#      the guest mounts nfscached (KT_PROXY_MOUNT_OPTS) and runs the same
#      round trip in /srv/acl/proxy, with the proxy's metrics snapshotted
#      around it (`nfsacl_proxy-before`, `-after`) and around a GETACL the
#      proxy should answer from its cache (`nfsacl_hit-before`, `-after`).
#
# The round trip, each ACL compared as getfacl's text (entries in its
# order, --omit-header, tabs as spaces) through the mount AND directly on
# /srv/acl (the server's truth), after dropping the guest's caches so each
# getfacl through the mount asks the server:
#   a. setfacl -m u:1234:rw-,g:2345:r-- on a file: the two named entries
#      and the mask rw-;
#   b. chmod 640 on it: the mask follows the group bits (r--), the named
#      user's rw- is masked to r--, other is ---, as POSIX says;
#   c. setfacl -d -m u:1234:rwx on a directory: its default ACL; a file
#      and a directory created in it inherit (the file's mode 0666 masks
#      the inherited mask to rw-, the directory keeps the default too);
#   d. setfacl -b on the file and the directory: only the base entries.

KT_KNFSD_ROOT=${KT_KNFSD_ROOT:-}
KT_KNFSD_MOUNTD_PORT=${KT_KNFSD_MOUNTD_PORT:-20048}
ACL_SRV=/srv/acl

# Print file $1's ACL as getfacl prints it, one line, entries separated
# by commas, tabs as spaces.
acl_text() {
	local out
	out=$(getfacl -p --omit-header "$1") || fail "getfacl $1"
	printf '%s\n' "$out" | sed '/^$/d; s/\t/ /g' | paste -sd, -
}

# Fail unless the ACL of $1 (through the mount) and of $2 (on the
# server) are both $3; $4 names it.
acl_expect() {
	expect_eq "$(acl_text "$1")" "$3" "$4, through the mount"
	expect_eq "$(acl_text "$2")" "$3" "$4, on the server"
}

# Show the last kernel messages and fail with $*.
knfsd_fail() {
	dmesg | tail -n 20 >&2
	fail "knfsd: $*"
}

# Start knfsd serving $ACL_SRV (step 1 above).
knfsd_start() {
	local k=$KT_KNFSD_ROOT i opts
	step "nfsacl: 1. knfsd in the guest serves $ACL_SRV"
	[[ -n "$k" && -x "$k/usr/sbin/rpc.nfsd" ]] ||
		fail "knfsd: no rpc.nfsd under KT_KNFSD_ROOT='$k' (vm.sh setup unpacks nfs-kernel-server there)"
	grep -qw nfsd /proc/filesystems ||
		knfsd_fail "the kernel has no nfsd filesystem (module nfsd not loaded: NFSC_VM_MODULES)"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd ||
		knfsd_fail "mount -t nfsd nfsd /proc/fs/nfsd"
	mkdir -p "$ACL_SRV"
	mount -t tmpfs -o mode=0755,size=64m nfsacl-srv "$ACL_SRV" || knfsd_fail "tmpfs on $ACL_SRV"
	mkdir -p /run/rpcbind /var/lib/nfs/sm /var/lib/nfs/sm.bak
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	pgrep -x rpcbind >/dev/null || /usr/sbin/rpcbind -w || knfsd_fail "rpcbind"
	opts=rw,insecure,no_root_squash,no_subtree_check,sync,fsid=1
	echo "$ACL_SRV 10.0.2.0/24($opts) 127.0.0.0/8($opts)" >/etc/exports
	"$k/usr/sbin/exportfs" -r || knfsd_fail "exportfs -r"
	"$k/usr/sbin/rpc.mountd" --no-nfs-version 4 --port "$KT_KNFSD_MOUNTD_PORT" ||
		knfsd_fail "rpc.mountd"
	"$k/usr/sbin/rpc.nfsd" --no-nfs-version 4 --nfs-version 3 --no-udp 4 ||
		knfsd_fail "rpc.nfsd"
	# Serving once rpcbind maps NFS v3, NFSACL v3 and MOUNT v3 (TCP) and
	# each answers a NULL call.
	for ((i = 0; i < 100; i++)); do
		rpcinfo -t 127.0.0.1 nfs 3 >/dev/null 2>&1 &&
			rpcinfo -t 127.0.0.1 nfs_acl 3 >/dev/null 2>&1 &&
			rpcinfo -t 127.0.0.1 mountd 3 >/dev/null 2>&1 && break
		sleep 0.1
	done
	((i < 100)) || { rpcinfo -p 127.0.0.1 >&2; knfsd_fail "NFS, NFSACL or MOUNT v3 does not answer after 10 s"; }
	echo "   knfsd versions: $(cat /proc/fs/nfsd/versions)"
	"$k/usr/sbin/exportfs" -v
	rpcinfo -p 127.0.0.1 | grep -E 'nfs|mountd'
}

# Run the round trip in directory $1 (through a mount) whose server path
# is $2; $3 names the mount in the steps.
acl_round_trip() {
	local c=$1 s=$2 via=$3 base
	umask 022
	mkdir "$c" || fail "mkdir $c"
	base="user::rw-,group::r--,other::r--"

	step "nfsacl: $via: a. setfacl -m on a file"
	touch "$c/f"
	drop_caches
	acl_expect "$c/f" "$s/f" "$base" "$via: f's ACL before"
	setfacl -m u:1234:rw-,g:2345:r-- "$c/f" || fail "setfacl -m"
	drop_caches
	acl_expect "$c/f" "$s/f" \
		"user::rw-,user:1234:rw-,group::r--,group:2345:r--,mask::rw-,other::r--" \
		"$via: f's ACL after setfacl -m"
	expect_eq "$(stat -c %a "$c/f") $(stat -c %a "$s/f")" "664 664" \
		"$via: f's mode (group bits = the mask), mount and server"

	step "nfsacl: $via: b. chmod 640 moves the mask"
	chmod 640 "$c/f" || fail "chmod"
	drop_caches
	acl_expect "$c/f" "$s/f" \
		"user::rw-,user:1234:rw- #effective:r--,group::r--,group:2345:r--,mask::r--,other::---" \
		"$via: f's ACL after chmod 640"

	step "nfsacl: $via: c. a default ACL is inherited"
	mkdir "$c/d"
	setfacl -d -m u:1234:rwx "$c/d" || fail "setfacl -d -m"
	drop_caches
	acl_expect "$c/d" "$s/d" \
		"user::rwx,group::r-x,other::r-x,default:user::rwx,default:user:1234:rwx,default:group::r-x,default:mask::rwx,default:other::r-x" \
		"$via: d's ACL after setfacl -d -m"
	touch "$c/d/inh"
	mkdir "$c/d/sub"
	drop_caches
	acl_expect "$c/d/inh" "$s/d/inh" \
		"user::rw-,user:1234:rwx #effective:rw-,group::r-x #effective:r--,mask::rw-,other::r--" \
		"$via: the ACL a new file inherits"
	acl_expect "$c/d/sub" "$s/d/sub" \
		"user::rwx,user:1234:rwx,group::r-x,mask::rwx,other::r-x,default:user::rwx,default:user:1234:rwx,default:group::r-x,default:mask::rwx,default:other::r-x" \
		"$via: the ACLs a new directory inherits"

	step "nfsacl: $via: d. setfacl -b removes them"
	setfacl -b "$c/f" || fail "setfacl -b f"
	setfacl -b "$c/d" || fail "setfacl -b d"
	drop_caches
	acl_expect "$c/f" "$s/f" "user::rw-,group::r--,other::---" "$via: f's ACL after setfacl -b"
	acl_expect "$c/d" "$s/d" "user::rwx,group::r-x,other::r-x" "$via: d's ACL after setfacl -b"
}

guest_nfsacl() {
	local dm=/mnt-knfsd
	knfsd_start

	step "nfsacl: 2. the control: the guest's own knfsd mounted directly"
	mkdir -p $dm
	mount -t nfs -o "vers=3,proto=tcp,port=2049,mountport=$KT_KNFSD_MOUNTD_PORT,mountproto=tcp,nolock,retry=0" \
		"127.0.0.1:$ACL_SRV" $dm || fail "mount of the guest's knfsd"
	acl_round_trip $dm/direct $ACL_SRV/direct direct
	umount $dm || fail "umount $dm"

	step "nfsacl: 3. through nfscached (upstream: this knfsd)"
	nfsc_vm_hook upstream up
	mkdir -p "$M"
	mount -t nfs -o "$KT_PROXY_MOUNT_OPTS" 10.0.2.2:/export "$M" || fail "mount of nfscached"
	grep " $M nfs" /proc/mounts
	nfsc_vm_hook snap nfsacl_proxy-before
	acl_round_trip "$M/proxy" $ACL_SRV/proxy nfscached
	# A GETACL of an unchanged file, asked again once the guest forgot
	# it: nfscached answers from the reply it kept.
	getfacl -p "$M/proxy/d" >/dev/null || fail "getfacl d"
	drop_caches
	nfsc_vm_hook snap nfsacl_hit-before
	expect_eq "$(acl_text "$M/proxy/d")" "user::rwx,group::r-x,other::r-x" \
		"nfscached: d's ACL asked again"
	nfsc_vm_hook snap nfsacl_hit-after
	nfsc_vm_hook snap nfsacl_proxy-after
	umount "$M" || fail "umount $M"
}
