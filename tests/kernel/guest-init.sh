#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# shellcheck shell=dash
#
# guest-init.sh: PID 1 of the guest that tests/kernel/vm.sh boots (it
# becomes /init of the initramfs; run by the initramfs's static busybox sh).
#
# 1. loads the modules every boot needs (virtio-pci, 9p, virtio-console,
#    overlayfs, virtio-net, NFSv3 and their dependencies) from the
#    initramfs, in the order vm.sh worked out,
# 2. mounts the HOST's / read-only over virtio-9p (mount tag "hostroot") and
#    lays a tmpfs over it with overlayfs, so the guest runs the host's own
#    programs and may write anywhere; writes stay in guest RAM,
# 3. makes the host-side extracted kernel tree the guest's /lib/modules, so
#    any other module (NFSC_VM_MODULES, a modprobe in the command) loads,
#    and sets the guest's clock from the host's (status port "clock?"),
# 4. brings up eth0 on QEMU's user-mode network (10.0.2.15/24, no default
#    route: only 10.0.2.2 = the host's 127.0.0.1, and QEMU's own DNS
#    forwarder, which /etc/resolv.conf no longer names, are reachable),
# 5. mounts the NFS export (mount.nfs of the host, run in the chroot),
# 6. runs the job's command chrooted into the overlay, with stdout/stderr
#    on the virtio-serial ports "nfsc_vm.out"/"nfsc_vm.err",
# 7. reports progress and the exit status on port "nfsc_vm.status", unmounts,
#    and powers the guest off.
#
# Kernel command line parameters it reads (vm.sh sets them):
#   nfsc_vm.job=DIR    host path of the job directory (job.env, cmd)
#   nfsc_vm.kmod=DIR   host path of the directory that holds lib/modules/KVER
#
# The command gets NFSC_VM_HOOK_DEV, the hook port's device (vm.sh runs
# the host's NFSC_VM_HOOK for each line written there; see guest/lib.sh).
# With NFSC_VM_SHELL=1 in job.env its stdin, stdout and stderr are the
# second serial port (/dev/ttyS1, vm.sh's terminal) instead.

PATH=/bin
export PATH
/bin/busybox mkdir -p /proc /sys /dev /host /rw /newroot /lib/modules /tmp
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

STATUS=/dev/null
HOOK=
HAVE_STATUS=
OUT=/dev/console
ERR=/dev/console
JOB=
KMOD=
for w in $(cat /proc/cmdline); do
	case $w in
	nfsc_vm.job=*) JOB=${w#nfsc_vm.job=} ;;
	nfsc_vm.kmod=*) KMOD=${w#nfsc_vm.kmod=} ;;
	esac
done

up() { cut -d' ' -f1 /proc/uptime; }
say() { echo "nfsc-vm-init[$(up)]: $*"; }
st() {
	[ -n "$HAVE_STATUS" ] && echo "$*" >&3
	say "$*"
}
halt_vm() {
	sync
	poweroff -f
	sleep 2
	echo o >/proc/sysrq-trigger
	sleep 10
}
die() {
	echo "nfsc-vm: guest: $*" >"$ERR" 2>/dev/null
	st "fatal $*"
	halt_vm
}

# -- 1. the modules needed at boot (virtio-pci, 9p, virtio-console,
# overlayfs, virtio-net, NFSv3), in the initramfs in load order
while read -r m; do
	insmod "/kmod-boot/$m" || die "insmod $m failed"
done </kmod-boot/order

# -- 2. the host's root over 9p, read-only
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 \
	hostroot /host || die "cannot mount the host's root over 9p"
say "host root mounted"

# -- 3. the host-side extracted kernel tree is /lib/modules (modprobe)
KVER=$(uname -r)
[ -n "$KMOD" ] && [ -d "/host$KMOD/lib/modules/$KVER" ] ||
	die "no modules for $KVER under host path '$KMOD'"
mount --bind "/host$KMOD/lib/modules" /lib/modules || die "bind modules"
i=0
while [ $i -lt 100 ]; do
	for p in /sys/class/virtio-ports/*; do
		[ -e "$p/name" ] || continue
		d=/dev/${p##*/}
		[ -c "$d" ] || continue
		case $(cat "$p/name") in
		nfsc_vm.out) OUT=$d ;;
		nfsc_vm.err) ERR=$d ;;
		nfsc_vm.status) STATUS=$d ;;
		nfsc_vm.hook) HOOK=$d ;;
		esac
	done
	[ "$OUT" != /dev/console ] && [ "$ERR" != /dev/console ] &&
		[ "$STATUS" != /dev/null ] && [ -n "$HOOK" ] && break
	i=$((i + 1))
	sleep 0.05
done
if [ "$STATUS" != /dev/null ]; then
	# held open all along: the host's replies (clock) must find it open
	exec 3<>"$STATUS" && HAVE_STATUS=1
else
	say "no nfsc_vm.status port"
fi
st "booted $(up)"

[ -n "$JOB" ] && [ -r "/host$JOB/job.env" ] || die "no job at host path '$JOB'"
# shellcheck disable=SC1090
. "/host$JOB/job.env"
: "${NFSC_VM_NFSPORT:=0}" "${NFSC_VM_MOUNTPORT:=0}" "${NFSC_VM_SERVER:=10.0.2.2}"
: "${NFSC_VM_EXPORT:=/export}" "${NFSC_VM_MNT:=/mnt}" "${NFSC_VM_CWD:=/}"

# -- the root: host / (read-only, 9p) under a tmpfs upper layer
mount -t tmpfs -o mode=0755 nfsc-vm-rw /rw || die "tmpfs"
mkdir -p /rw/upper /rw/wd
mount -t overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/wd \
	nfsc-vm-root /newroot || die "cannot mount the overlay root"
R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t tmpfs -o mode=0755 tmpfs $R/run
mkdir -p $R/run/lock $R/run/mount
# the kernel's modules at /lib/modules inside the guest too (modprobe works)
mdir=/lib/modules
l=$(readlink $R/lib) && mdir=/${l#/}/modules
mkdir -p "$R$mdir" && mount --bind "/host$KMOD/lib/modules" "$R$mdir"
# the kernel's own module requests (request_module) run this busybox
echo /bin/modprobe >/proc/sys/kernel/modprobe
# a host without kmod still gets modprobe & co in the guest (busybox's)
for t in modprobe insmod rmmod lsmod modinfo; do
	[ -e $R/sbin/$t ] || [ -e $R/usr/local/sbin/$t ] ||
		ln -s /bin/busybox $R/usr/local/sbin/$t 2>/dev/null
done
# no name service: nothing in the guest may reach out through QEMU's DNS
rm -f $R/etc/resolv.conf
echo "# nfsc-vm guest: no DNS" >$R/etc/resolv.conf
hostname nfsc-vm
echo nfsc-vm >$R/etc/hostname 2>/dev/null
# The RTC gives whole seconds: ask the host for its time (vm.sh answers
# "clock?" on the status port), so that the client's and the server's
# clocks agree (see vm_clock.c).
if [ -n "$HAVE_STATUS" ]; then
	/bin/nfsc-vm-clock || say "clock sync failed"
fi

say "root ready"
# -- 4. network: QEMU user mode (slirp); 10.0.2.2 is the host's loopback
ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do
	i=$((i + 1))
	sleep 0.05
done
ip link set eth0 up || die "no eth0"
ip addr add 10.0.2.15/24 dev eth0 || die "ip addr"
say "network up"

# -- 5. any modules the job asked for, then the mount
if [ -n "$NFSC_VM_MODULES" ]; then
	# shellcheck disable=SC2086
	modprobe -a $NFSC_VM_MODULES || die "modprobe $NFSC_VM_MODULES failed"
fi
# locks (NFSC_VM_LOCKS): rpcbind for the guest's own statd and lockd;
# mount.nfs starts rpc.statd (start-statd) when it mounts without nolock
if [ "$NFSC_VM_LOCKS" = 1 ]; then
	mkdir -p $R/run/rpcbind $R/var/lib/nfs/sm $R/var/lib/nfs/sm.bak
	chroot $R /usr/sbin/rpcbind -w || die "rpcbind"
	say "rpcbind started"
fi
MOUNTED=
if [ "$NFSC_VM_NFSPORT" != 0 ]; then
	mkdir -p "$R$NFSC_VM_MNT"
	n=0
	while :; do
		if chroot $R /sbin/mount.nfs "$NFSC_VM_SERVER:$NFSC_VM_EXPORT" "$NFSC_VM_MNT" \
			-o "$NFSC_VM_MOUNT_OPTS" >/tmp/mount.log 2>&1; then
			break
		fi
		n=$((n + 1))
		if [ $n -ge "${NFSC_VM_MOUNT_TRIES:-3}" ]; then
			cat /tmp/mount.log >"$ERR"
			cat /tmp/mount.log
			st "mount-failed $NFSC_VM_SERVER:$NFSC_VM_EXPORT -o $NFSC_VM_MOUNT_OPTS"
			halt_vm
		fi
		sleep 1
	done
	MOUNTED=1
	st "mounted $(grep " $R$NFSC_VM_MNT nfs" /proc/mounts | sed -n "\$s| $R| |p")"
fi

# -- 6. the command
st "start $(up)"
IN=/dev/null
if [ "$NFSC_VM_SHELL" = 1 ]; then
	IN=/dev/ttyS1 OUT=/dev/ttyS1 ERR=/dev/ttyS1
fi
chroot $R /usr/bin/env -i HOME=/root TERM="${NFSC_VM_TERM:-dumb}" LANG=C.UTF-8 \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	NFSC_VM_MNT="$NFSC_VM_MNT" NFSC_VM_JOB="$JOB" NFSC_VM_CWD="$NFSC_VM_CWD" \
	NFSC_VM_HOOK_DEV="$HOOK" \
	/bin/bash -c 'cd "$NFSC_VM_CWD" 2>/dev/null || cd /; exec /bin/bash "$NFSC_VM_JOB/cmd"' \
	<"$IN" >"$OUT" 2>"$ERR" 3>&-
rc=$?
st "exit $rc $(up)"

# -- 7. leftovers killed, the export unmounted (flushes dirty pages), off
kill -TERM -1 2>/dev/null
sleep 0.2
kill -KILL -1 2>/dev/null
sync
if [ -n "$MOUNTED" ]; then
	if timeout "${NFSC_VM_UMOUNT_TIMEOUT:-60}" umount "$R$NFSC_VM_MNT"; then
		st "umount 0"
	else
		st "umount failed"
		umount -f -l "$R$NFSC_VM_MNT" 2>/dev/null
	fi
fi
st "poweroff $(up)"
halt_vm
