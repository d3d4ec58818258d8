#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# vm.sh: run one command in a throwaway QEMU guest whose kernel is a stock
# Debian 12 kernel (linux-image-amd64), with an NFSv3 export served on this
# host's loopback mounted by the guest's kernel NFS client.
#
#   vm.sh NFSPORT MOUNTPORT [--] COMMAND...   boot, mount, run, power off
#   vm.sh 0 0 [--] COMMAND...                 the same without a mount
#   vm.sh setup                               only prepare (idempotent)
#
# The guest mounts 10.0.2.2:$NFSC_VM_EXPORT (/export) on $NFSC_VM_MNT (/mnt)
# with vers=3,proto=tcp,port=NFSPORT,mountport=MOUNTPORT,mountproto=tcp,
# nolock,retry=0 (10.0.2.2 is QEMU user-mode networking's name for this
# host's 127.0.0.1), runs COMMAND there as root with bash (one argument: a
# shell command line; several: an argument vector) in the directory vm.sh
# was started from, streams its stdout and stderr back on ours and exits
# with its status: 125 if the rig failed (no boot, mount failed; the reason
# and the guest console's tail on stderr), 124 after NFSC_VM_TIMEOUT.
#
# The guest's root is this host's / over virtio-9p, read-only, under a
# guest tmpfs (overlayfs): every program installed or built here runs in
# the guest, and what the guest writes outside NFS stays in guest RAM.
# Nothing on this host is installed or started: the kernel package is
# fetched with `apt-get download` and unpacked under NFSC_VM_HOME.
#
# Hooks: with NFSC_VM_HOOK set to a command of ours, the guest's
# `nfsc_vm_hook WORD...` (tests/kernel/guest/lib.sh) runs
# `$NFSC_VM_HOOK WORD...` here, waits for it and gets its exit status (the
# words are letters, digits, '-', '_' and '.'). A test uses it to restart
# the upstream at a chosen point of a guest's workload.
#
# Settings (environment):
#   NFSC_VM_HOME     kernel, initramfs, job directories (default: build/
#                    kernel-vm of this source tree; ctest sets its tree's)
#   NFSC_VM_OPTS     extra mount options appended to the ones above
#   NFSC_VM_MOUNT_OPTS  the whole option string instead (ports not added)
#   NFSC_VM_EXPORT   export path (/export)    NFSC_VM_MNT mount point (/mnt)
#   NFSC_VM_MEM      guest memory (1G)        NFSC_VM_SMP guest CPUs (1)
#   NFSC_VM_ACCEL    kvm | tcg | auto (auto: kvm only if this CPU shows
#                    vmx/svm and /dev/kvm is usable, else tcg)
#   NFSC_VM_TIMEOUT  seconds before the guest is killed (1800)
#   NFSC_VM_MOUNT_TRIES   mount attempts, 1 s apart (3)
#   NFSC_VM_UMOUNT_TIMEOUT  seconds the final umount may take (60)
#   NFSC_VM_MODULES  extra modules to modprobe in the guest (e.g. "nfsd")
#   NFSC_VM_HOSTFWD  QEMU user-network port forwards from this host into
#                    the guest, space-separated, each as QEMU's hostfwd
#                    takes it: "tcp:127.0.0.1:HOSTPORT-:GUESTPORT" (a
#                    connection to HOSTPORT here reaches the guest's
#                    GUESTPORT from 10.0.2.2; e.g. a knfsd in the guest
#                    serving an nfscached on this host)
#   NFSC_VM_PKGS     Debian packages `vm.sh setup` fetches (apt-get
#                    download) and unpacks (dpkg-deb -x) under NFSC_VM_HOME/
#                    pkg/NAME, never installed, for the guest to run from
#                    there (nfs-kernel-server: rpc.nfsd, exportfs and
#                    rpc.mountd for a knfsd in the guest; installing it here
#                    would start an NFS server on this host)
#   NFSC_VM_LOCKS    1: mount without nolock (lock); the guest starts
#                    rpcbind first, and mount.nfs starts rpc.statd, so its
#                    lockd asks the server's rpcbind for NLM
#   NFSC_VM_KPKG     kernel package (linux-image-amd64)
#   NFSC_VM_VERBOSE  1: the guest's console (kernel log) on our stderr
#   NFSC_VM_QUIET    1: no "nfsc-vm: ... boot ..." summary on stderr
#   NFSC_VM_KEEP     1: keep the job directory (console.log, status.log)
#   NFSC_VM_CWD      directory in the guest to run COMMAND in ($PWD)
#   NFSC_VM_APPEND   extra kernel command line parameters
#   NFSC_VM_PASSENV  names of our variables to export to COMMAND (it gets
#                    HOME, PATH, TERM=dumb, LANG, NFSC_VM_MNT otherwise)
#   NFSC_VM_HOOK     the hook command (see above)
#   NFSC_VM_SHELL    1: an interactive shell in the guest on our terminal
#                    instead of COMMAND's output streams (see README.md)
set -u

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NFSC_VM_HOME=${NFSC_VM_HOME:-$SELF_DIR/../../build/kernel-vm}
NFSC_VM_INIT=$SELF_DIR/guest-init.sh
NFSC_VM_CLOCK_SRC=$SELF_DIR/vm_clock.c
NFSC_VM_KPKG=${NFSC_VM_KPKG:-linux-image-amd64}
KDIR=$NFSC_VM_HOME/kernel
BOOT_MODULES="virtio_pci 9pnet_virtio 9p virtio_console overlay virtio_net nfsv3"

say() { printf 'nfsc-vm: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 125
}
now() { echo "$EPOCHREALTIME"; }
T0=$(now)

# ------------------------------------------------------------------ setup

# Fail unless the programs the rig needs are installed (scripts/install-
# deps.sh installs them; this script installs nothing).
check_programs() {
	local miss=() t
	for t in qemu-system-x86_64 xz cpio gzip dpkg-deb apt-get flock; do
		command -v "$t" >/dev/null || miss+=("$t")
	done
	[[ -x /sbin/mount.nfs ]] || miss+=(/sbin/mount.nfs)
	busybox_static || miss+=("a static /bin/busybox")
	((${#miss[@]} == 0)) || die "missing: ${miss[*]} (run scripts/install-deps.sh)"
}

# True if /bin/busybox is a static executable (busybox-static).
busybox_static() {
	[[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1
}

# Print the kernel release (e.g. 6.1.0-57-amd64) that is set up, if any.
kernel_release() {
	local r
	r=$(cat "$KDIR/release" 2>/dev/null) || return 1
	[[ -s "$KDIR/vmlinux-$r" && -s "$KDIR/root/lib/modules/$r/modules.dep" ]] || return 1
	echo "$r"
}

# Print the versioned package the metapackage $1 depends on.
kernel_package() {
	apt-cache depends "$1" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

# Download the kernel package (never installed: the host's own kernel and
# /boot are untouched) and unpack it under $KDIR. Without package lists
# (a fresh machine), as root, run apt-get update once first.
fetch_kernel() {
	local pkg=$NFSC_VM_KPKG deb
	if [[ "$pkg" != linux-image-[0-9]* ]]; then
		pkg=$(kernel_package "$NFSC_VM_KPKG")
		if [[ -z "$pkg" && $EUID == 0 ]]; then
			say "no package lists know $NFSC_VM_KPKG: apt-get update"
			apt-get update -qq >&2
			pkg=$(kernel_package "$NFSC_VM_KPKG")
		fi
		[[ -n "$pkg" ]] || die "cannot resolve $NFSC_VM_KPKG to a kernel package"
	fi
	deb=$(ls -t "$KDIR/${pkg}_"*.deb 2>/dev/null | head -1)
	if [[ -z "$deb" ]]; then
		say "fetching $pkg (apt-get download)"
		(cd "$KDIR" && apt-get download "$pkg" >&2) || die "apt-get download $pkg failed"
		deb=$(ls -t "$KDIR/${pkg}_"*.deb | head -1)
	fi
	rm -rf "$KDIR/root"
	dpkg-deb -x "$deb" "$KDIR/root" || die "dpkg-deb -x $deb failed"
}

# Download package $1 (apt-get download: never installed) and unpack it
# into $NFSC_VM_HOME/pkg/$1 unless done already. Without package lists,
# as root, run apt-get update once first.
setup_pkg() {
	local pkg=$1 dir=$NFSC_VM_HOME/pkg/$1 deb
	[[ -e "$dir/.unpacked" ]] && return 0
	mkdir -p "$NFSC_VM_HOME/pkg" || die "cannot create $NFSC_VM_HOME/pkg"
	deb=$(ls -t "$NFSC_VM_HOME/pkg/${pkg}_"*.deb 2>/dev/null | head -1)
	if [[ -z "$deb" ]]; then
		if ! apt-cache show "$pkg" >/dev/null 2>&1 && [[ $EUID == 0 ]]; then
			say "no package lists know $pkg: apt-get update"
			apt-get update -qq >&2
		fi
		say "fetching $pkg (apt-get download)"
		(cd "$NFSC_VM_HOME/pkg" && apt-get download "$pkg" >&2) ||
			die "apt-get download $pkg failed"
		deb=$(ls -t "$NFSC_VM_HOME/pkg/${pkg}_"*.deb | head -1)
	fi
	rm -rf "$dir"
	dpkg-deb -x "$deb" "$dir" || die "dpkg-deb -x $deb failed"
	: >"$dir/.unpacked"
}

# Fetch and unpack the kernel, index its modules (the host may have no
# kmod: busybox depmod) and unpack its bzImage's xz payload into an ELF
# vmlinux that QEMU boots through its PVH entry point: under software
# emulation, decompressing in the guest costs about 7 s per boot.
setup_kernel() {
	local r off ok=
	kernel_release >/dev/null && return 0
	mkdir -p "$KDIR" || die "cannot create $KDIR"
	fetch_kernel
	r=$(ls "$KDIR/root/lib/modules" | head -1)
	[[ -n "$r" && -f "$KDIR/root/boot/vmlinuz-$r" ]] || die "the package has no kernel"
	say "indexing the modules of $r"
	/bin/busybox depmod -b "$KDIR/root" "$r" || die "depmod failed"
	# Try each place the xz magic occurs until one decompresses to ELF.
	for off in $(grep -abo $'\xfd7zXZ\x00' "$KDIR/root/boot/vmlinuz-$r" | cut -d: -f1); do
		tail -c +$((off + 1)) "$KDIR/root/boot/vmlinuz-$r" | xz -dc >"$KDIR/vmlinux.tmp" 2>/dev/null
		if [[ "$(head -c 4 "$KDIR/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]]; then
			ok=1
			break
		fi
	done
	[[ -n "$ok" ]] || die "cannot unpack vmlinux from vmlinuz-$r"
	mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux-$r"
	echo "$r" >"$KDIR/release"
}

# Print module $1 (a name) and everything it needs, dependencies first, as
# paths relative to lib/modules/RELEASE, from modules.dep in directory $2.
module_closure() {
	local name=$1 dir=$2 line path dep
	line=$(grep -E "(^|/)${name//-/[-_]}\.ko(\.[a-z]+)?:" "$dir/modules.dep" | head -1)
	[[ -n "$line" ]] || return 0 # built in
	path=${line%%:*}
	for dep in ${line#*:}; do
		dep=${dep##*/}
		module_closure "${dep%%.ko*}" "$dir"
	done
	echo "$path"
}

# Build the initramfs: static busybox, the init script, the clock setter
# and the modules every boot loads, in load order (insmod from the
# initramfs is faster than modprobe over 9p, which re-reads modules.dep).
setup_initramfs() {
	local r=$1 ir tmp m mdir seen=" "
	ir=$NFSC_VM_HOME/initramfs-$r.cpio.gz
	mdir=$KDIR/root/lib/modules/$r
	if [[ -s "$ir" && "$ir" -nt "$NFSC_VM_INIT" && "$ir" -nt "$NFSC_VM_CLOCK_SRC" &&
		"$ir" -nt "$mdir/modules.dep" &&
		"$(cat "$ir.modules" 2>/dev/null)" == "$BOOT_MODULES" ]]; then
		return 0
	fi
	tmp=$(mktemp -d "$NFSC_VM_HOME/initramfs.XXXXXX") || die "mktemp"
	mkdir -p "$tmp/bin" "$tmp/kmod-boot"
	cp /bin/busybox "$tmp/bin/busybox"
	ln -s busybox "$tmp/bin/sh"
	cp "$NFSC_VM_INIT" "$tmp/init"
	chmod 0755 "$tmp/init"
	# Static: it runs before the host's root (and its libc) is mounted.
	cc -static -O2 -Wall -Wextra -Werror -o "$tmp/bin/nfsc-vm-clock" \
		"$NFSC_VM_CLOCK_SRC" || die "cannot build $NFSC_VM_CLOCK_SRC"
	: >"$tmp/kmod-boot/order"
	for m in $(for n in $BOOT_MODULES; do module_closure "$n" "$mdir"; done); do
		[[ "$seen" == *" $m "* ]] && continue
		seen+="$m "
		cp "$mdir/$m" "$tmp/kmod-boot/" || die "cannot copy $m"
		echo "${m##*/}" >>"$tmp/kmod-boot/order"
	done
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$ir.tmp" || die "cpio failed"
	mv "$ir.tmp" "$ir"
	echo "$BOOT_MODULES" >"$ir.modules"
	rm -rf "$tmp"
}

# Prepare everything (one caller at a time) and print the kernel release.
setup_all() {
	local r p
	mkdir -p "$NFSC_VM_HOME" || die "cannot create $NFSC_VM_HOME"
	NFSC_VM_HOME=$(cd "$NFSC_VM_HOME" && pwd)
	KDIR=$NFSC_VM_HOME/kernel
	exec 8>>"$NFSC_VM_HOME/.setup.lock"
	flock -w 900 8 || die "setup lock busy"
	check_programs
	setup_kernel
	r=$(kernel_release) || die "kernel setup failed"
	setup_initramfs "$r"
	for p in ${NFSC_VM_PKGS-nfs-kernel-server}; do
		[[ "$p" =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || die "NFSC_VM_PKGS: bad package name '$p'"
		setup_pkg "$p"
	done
	exec 8>&-
	echo "$r"
}

# ----------------------------------------------------------------- running

# Print QEMU's accelerator arguments for NFSC_VM_ACCEL; sets accel.
pick_accel() {
	accel=${NFSC_VM_ACCEL:-auto}
	if [[ "$accel" == auto ]]; then
		accel=tcg
		# A /dev/kvm without vmx/svm in the CPU flags is a software
		# hypervisor (seen: kvm_pvm inside a Firecracker VM), under which
		# a stock kernel crawls: 56 s to reach memory init.
		if [[ -r /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
			accel=kvm
		fi
	fi
	# -cpu qemu64, not max: max made memory copies 7x slower under TCG.
	# shellcheck disable=SC2054 # commas inside one QEMU argument
	case $accel in
	kvm) accel_args=(-enable-kvm -cpu host) ;;
	tcg) accel_args=(-accel tcg,thread=multi -cpu qemu64) ;;
	*) die "NFSC_VM_ACCEL must be kvm, tcg or auto" ;;
	esac
}

# Quote $1 for sh (the guest's busybox sh reads job.env).
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Write the job directory's job.env and cmd for command $@.
write_job() {
	local v
	{
		echo "NFSC_VM_NFSPORT=$(shq "$NFSPORT")"
		echo "NFSC_VM_MOUNTPORT=$(shq "$MOUNTPORT")"
		echo "NFSC_VM_SERVER=10.0.2.2"
		echo "NFSC_VM_EXPORT=$(shq "${NFSC_VM_EXPORT:-/export}")"
		echo "NFSC_VM_MNT=$(shq "${NFSC_VM_MNT:-/mnt}")"
		echo "NFSC_VM_MOUNT_OPTS=$(shq "$NFSC_VM_MOUNT_OPTS")"
		echo "NFSC_VM_MODULES=$(shq "${NFSC_VM_MODULES:-}")"
		echo "NFSC_VM_LOCKS=$(shq "${NFSC_VM_LOCKS:-0}")"
		echo "NFSC_VM_CWD=$(shq "${NFSC_VM_CWD:-$PWD}")"
		echo "NFSC_VM_MOUNT_TRIES=$(shq "${NFSC_VM_MOUNT_TRIES:-3}")"
		echo "NFSC_VM_UMOUNT_TIMEOUT=$(shq "${NFSC_VM_UMOUNT_TIMEOUT:-60}")"
		echo "NFSC_VM_SHELL=$(shq "${NFSC_VM_SHELL:-0}")"
		[[ "${NFSC_VM_SHELL:-0}" == 1 ]] && echo "NFSC_VM_TERM=$(shq "${TERM:-dumb}")"
	} >"$JOB/job.env"
	{
		for v in ${NFSC_VM_PASSENV:-}; do
			[[ "$v" =~ ^[A-Za-z_][A-Za-z0-9_]*$ && -n "${!v+set}" ]] &&
				printf 'export %s=%q\n' "$v" "${!v}"
		done
		if (($# == 1)); then
			printf '%s\n' "$1"
		else
			printf '%q ' "$@"
			echo
		fi
	} >"$JOB/cmd"
}

# Start the readers of the guest's ports (QEMU opens each FIFO, blocking,
# when it starts): stdout, stderr, the status port (each line logged with
# our time of arrival; "clock?" answered with our clock) and the hook port.
start_readers() {
	cat "$JOB/out.fifo" &
	PIDS+=($!)
	cat "$JOB/err.fifo" >&2 &
	PIDS+=($!)
	while IFS= read -r line; do
		[[ "$line" == "clock?" ]] && echo "$EPOCHREALTIME" >"$JOB/status.in"
		printf '%s %s\n' "$EPOCHREALTIME" "$line"
	done <"$JOB/status.out" >"$JOB/status.log" &
	PIDS+=($!)
	while IFS= read -r line; do
		run_hook "$line" >"$JOB/hook.in"
	done <"$JOB/hook.out" &
	PIDS+=($!)
}

# Run the hook for request line $1; print its exit status (127: none).
run_hook() {
	local rc=0 words
	if [[ -z "${NFSC_VM_HOOK:-}" || ! "$1" =~ ^[A-Za-z0-9_.\ -]+$ ]]; then
		say "hook request refused: '$1'"
		echo 127
		return
	fi
	read -r -a words <<<"$1"
	say "hook: ${words[*]}"
	$NFSC_VM_HOOK "${words[@]}" </dev/null >&2 || rc=$?
	say "hook: ${words[*]}: exit $rc"
	echo "$rc"
}

# Print the -netdev user option's hostfwd= items for NFSC_VM_HOSTFWD
# (",hostfwd=RULE" each); fail on a rule that is not PROTO:ADDR:PORT-:PORT.
hostfwd_opts() {
	local f
	for f in ${NFSC_VM_HOSTFWD:-}; do
		[[ "$f" =~ ^(tcp|udp):[0-9.]*:[0-9]+-[0-9.]*:[0-9]+$ ]] ||
			die "NFSC_VM_HOSTFWD: bad rule '$f' (want tcp:127.0.0.1:HOSTPORT-:GUESTPORT)"
		printf ',hostfwd=%s' "$f"
	done
}

# Boot QEMU in the background (sets QPID) for kernel release $1.
start_qemu() {
	local r=$1 quiet=quiet con_args serial_args args
	con_args=(-chardev "file,id=con,path=$JOB/console.log")
	if [[ "${NFSC_VM_VERBOSE:-0}" == 1 ]]; then
		mkfifo "$JOB/console.fifo"
		tee "$JOB/console.log" <"$JOB/console.fifo" >&2 &
		PIDS+=($!)
		con_args=(-chardev "file,id=con,path=$JOB/console.fifo")
		quiet=
	fi
	serial_args=(-serial chardev:con)
	# The shell: the guest's second serial port on our terminal.
	if [[ "${NFSC_VM_SHELL:-0}" == 1 ]]; then
		# shellcheck disable=SC2054 # commas inside QEMU arguments
		serial_args+=(-chardev stdio,id=sh,signal=off -serial chardev:sh)
	fi
	# The kernel command line: no crypto self-tests (~0.5 s of initcalls),
	# acpi=noirq (~0.35 s of IRQ-link work; the devices use MSI-X), no
	# page-table isolation (TLB flushes are dear under TCG), panic ends QEMU.
	# One vCPU: under TCG a second one costs more than it gives (TLB
	# flushes and atomics synchronised across vCPU threads). kernel.fsx
	# with 3 x 2,000 operations, alone on the idle 2 cores: command 16.2 s
	# and 27 CPU-s with 1 vCPU, 20.6 s and 40 CPU-s with 2; the suite runs
	# two guests at once beside other tests, so the CPU-s are what count.
	# shellcheck disable=SC2054 # commas inside QEMU arguments
	args=("${accel_args[@]}" \
		-machine pc -m "${NFSC_VM_MEM:-1G}" -smp "${NFSC_VM_SMP:-1}" \
		-nodefaults -no-user-config -nographic -no-reboot \
		-kernel "$KDIR/vmlinux-$r" -initrd "$NFSC_VM_HOME/initramfs-$r.cpio.gz" \
		-append "console=ttyS0 panic=-1 $quiet mitigations=off cryptomgr.notests acpi=noirq ${NFSC_VM_APPEND:-} nfsc_vm.job=$JOB nfsc_vm.kmod=$KDIR/root" \
		"${con_args[@]}" "${serial_args[@]}" -monitor none \
		-device virtio-serial-pci,id=vser \
		-chardev "file,id=gout,path=$JOB/out.fifo" \
		-device virtserialport,bus=vser.0,nr=1,chardev=gout,name=nfsc_vm.out \
		-chardev "file,id=gerr,path=$JOB/err.fifo" \
		-device virtserialport,bus=vser.0,nr=2,chardev=gerr,name=nfsc_vm.err \
		-chardev "pipe,id=gst,path=$JOB/status" \
		-device virtserialport,bus=vser.0,nr=3,chardev=gst,name=nfsc_vm.status \
		-chardev "pipe,id=ghook,path=$JOB/hook" \
		-device virtserialport,bus=vser.0,nr=4,chardev=ghook,name=nfsc_vm.hook \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-netdev "user,id=net0,ipv6=off$FWD" -device virtio-net-pci,netdev=net0,romfile=)
	# A background job's stdin is /dev/null unless given: the shell's
	# terminal is fd 9 (main).
	if [[ "${NFSC_VM_SHELL:-0}" == 1 ]]; then
		qemu-system-x86_64 "${args[@]}" <&9 2>"$JOB/qemu.log" &
	else
		qemu-system-x86_64 "${args[@]}" </dev/null 2>"$JOB/qemu.log" &
	fi
	QPID=$!
}

# Kill the guest after NFSC_VM_TIMEOUT seconds (in the background; sets
# WPID); it ends with QEMU.
start_watchdog() {
	(
		for ((i = 0; i < ${NFSC_VM_TIMEOUT:-1800}; i++)); do
			kill -0 "$QPID" 2>/dev/null || exit 0
			sleep 1
		done
		: >"$JOB/timed-out"
		kill -TERM "$QPID" 2>/dev/null
		sleep 5
		kill -KILL "$QPID" 2>/dev/null
	) &
	WPID=$!
}

# Wait for the readers to end at EOF once QEMU is gone; stop one still
# blocked in open() (QEMU died before opening its FIFO).
reap_readers() {
	local i p alive
	for ((i = 0; i < 50; i++)); do
		alive=0
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		((alive)) || break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	PIDS=()
}

# Print the first status line of kind $1, its host time first.
status_line() { awk -v k="$1" '$2 == k { $1 = $1; print; exit }' "$JOB/status.log"; }

# Explain why the guest ran no command (or timed out) and exit 125 or 124.
report_failure() {
	local qrc=$1 fatal mf
	if [[ -e "$JOB/timed-out" ]]; then
		say "timed out after ${NFSC_VM_TIMEOUT:-1800} s; guest console tail:"
		tail -n 30 "$JOB/console.log" | tr -d '\r' >&2
		exit 124
	fi
	fatal=$(status_line fatal | cut -d' ' -f3-)
	[[ -n "$fatal" ]] && fatal="fatal: $fatal"
	mf=$(status_line mount-failed | cut -d' ' -f3-)
	[[ -n "$mf" ]] && fatal="mount failed: $mf"
	say "the guest did not run the command (${fatal:-no status}; qemu exit $qrc)"
	[[ -s "$JOB/qemu.log" ]] && sed 's/^/nfsc-vm: qemu: /' "$JOB/qemu.log" >&2
	say "guest console tail:"
	tail -n 30 "$JOB/console.log" | tr -d '\r' >&2
	exit 125
}

# Print the summary line: boot time (our start to the command's start:
# the guest's uptime at "start" against our clock at its arrival gives
# when its kernel started), the command's time, the total.
report_times() {
	local started=$1 exited=$2 rc=$3 sa ex m um
	read -r -a sa <<<"$started"
	read -r -a ex <<<"$exited"
	m=$(status_line mounted)
	[[ -n "$m" ]] && say "guest /proc/mounts: ${m#* mounted }"
	um=$(status_line umount)
	say "$(awk -v t0="$T0" -v tq="$T_QEMU" -v ts="${sa[0]}" -v us="${sa[2]:-0}" \
		-v te="${ex[0]}" -v t1="$(now)" -v a="$accel" -v rc="$rc" \
		-v um="${um:+, umount ${um##* }}" 'BEGIN {
		printf "%s guest: boot %.2f s (setup %.2f, qemu+firmware %.2f, kernel+init %.2f), command %.2f s, total %.2f s, exit %d%s",
			a, ts - t0, tq - t0, ts - us - tq, us, te - ts, t1 - t0, rc, um }')"
}

# All of the run in one function, which bash parses whole before running:
# an edit of this file while a guest runs cannot break the run.
main() {
	if [[ "${1:-}" == setup ]]; then
		r=$(setup_all) || exit 125
		say "ready: kernel $r in $KDIR"
		exit 0
	fi
	if (($# < 2)) || [[ ! "$1" =~ ^[0-9]+$ || ! "$2" =~ ^[0-9]+$ ]]; then
		sed -n '3,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
		exit 125
	fi
	NFSPORT=$1 MOUNTPORT=$2
	shift 2
	[[ "${1:-}" == -- ]] && shift
	(($# > 0)) || die "no command given"

	R=$(setup_all) || exit 125
	NFSC_VM_HOME=$(cd "$NFSC_VM_HOME" && pwd)
	KDIR=$NFSC_VM_HOME/kernel
	if [[ -z "${NFSC_VM_MOUNT_OPTS:-}" ]]; then
		# retry=0: mount.nfs fails at once instead of retrying for 2
		# minutes (the guest tries NFSC_VM_MOUNT_TRIES times, 1 s apart).
		NFSC_VM_MOUNT_OPTS="vers=3,proto=tcp,port=$NFSPORT,mountport=$MOUNTPORT,mountproto=tcp,nolock,retry=0"
		[[ "${NFSC_VM_LOCKS:-0}" == 1 ]] && NFSC_VM_MOUNT_OPTS=${NFSC_VM_MOUNT_OPTS/,nolock,/,lock,}
		[[ -n "${NFSC_VM_OPTS:-}" ]] && NFSC_VM_MOUNT_OPTS+=",$NFSC_VM_OPTS"
	fi
	pick_accel
	FWD=$(hostfwd_opts) || exit 125
	[[ "${NFSC_VM_TIMEOUT:-1800}" =~ ^[0-9]+$ ]] ||
		die "NFSC_VM_TIMEOUT must be whole seconds, not '$NFSC_VM_TIMEOUT'"

	mkdir -p "$NFSC_VM_HOME/jobs" || die "cannot create $NFSC_VM_HOME/jobs"
	JOB=$(mktemp -d "$NFSC_VM_HOME/jobs/job.XXXXXX") || die "mktemp"
	chmod 0755 "$JOB"
	write_job "$@"
	mkfifo "$JOB/out.fifo" "$JOB/err.fifo" "$JOB/status.in" "$JOB/status.out" \
		"$JOB/hook.in" "$JOB/hook.out" || die "mkfifo"
	PIDS=()
	QPID=
	WPID=
	# shellcheck disable=SC2317 # run by the EXIT trap
	cleanup() {
		local p
		[[ -n "$QPID" ]] && kill -KILL "$QPID" 2>/dev/null
		[[ -n "$WPID" ]] && kill "$WPID" 2>/dev/null
		for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
		if [[ "${NFSC_VM_KEEP:-0}" == 1 ]]; then
			say "job directory kept: $JOB"
		else
			cp "$JOB/console.log" "$NFSC_VM_HOME/last-console.log" 2>/dev/null
			rm -rf "$JOB"
		fi
	}
	trap cleanup EXIT
	trap 'say "interrupted"; exit 130' INT TERM HUP

	start_readers
	T_QEMU=$(now)
	exec 9<&0
	start_qemu "$R"
	start_watchdog
	wait "$QPID"
	qrc=$?
	QPID=
	kill "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	reap_readers

	started=$(status_line start)
	exited=$(status_line exit)
	[[ -n "$exited" && ! -e "$JOB/timed-out" ]] || report_failure "$qrc"
	read -r -a ex <<<"$exited"
	rc=${ex[2]}
	[[ "${NFSC_VM_QUIET:-0}" == 1 ]] || report_times "$started" "$exited" "$rc"
	exit "$rc"
}

# One line: bash reads a script as it runs, and this must not be re-read.
main "$@"; exit $?
