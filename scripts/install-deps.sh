#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages that nfscached needs, for one of three
# uses, each a superset of the one before:
#
#   --build   build the daemon, its manual pages and its Debian package
#             (-DBUILD_TESTING=OFF; cpack needs dpkg-shlibdeps)
#   --demo    that, and what scripts/demo.sh runs: an NFS-Ganesha upstream,
#             rpcbind, the libnfs clients, curl and the shell tools
#   (none)    everything: that, and what the tests need (CUnit, ctags,
#             systemd's tools, tshark, clang's libFuzzer, stress-ng,
#             python3, groff) and the kernel tests' QEMU guest
#
# Does nothing (and needs no root) when all are installed; otherwise runs
# apt-get update and apt-get install -y as root.
#
# The kernel tests (tests/kernel/) need a QEMU guest's packages too; they
# are installed without their recommendations (qemu-system-x86 would bring
# a desktop's worth). The guest's kernel is not a package installed here:
# tests/kernel/vm.sh fetches it with `apt-get download` into the build tree,
# as tests/prometheus/test_rules.sh does promtool (package prometheus).
# nfs-common (for mount.nfs, run in the guest) ships init scripts that
# would start rpc.statd on this host: while it is installed, a temporary
# /usr/sbin/policy-rc.d denies every service start (invoke-rc.d's
# documented hook), unless one is there already.
set -euo pipefail

build_packages=(
	build-essential cmake pkg-config
	libevent-dev libtirpc-dev rpcsvc-proto libnfs-dev libssl-dev
	libconfuse-dev uthash-dev
	# the disk tier (disk/): its index, its page checksums
	liblmdb-dev libxxhash-dev
	# the package: cpack's dependency list comes from dpkg-shlibdeps
	dpkg-dev
)
demo_packages=(
	# the upstream server, its rpcbind, the clients, the metrics fetch,
	# and the tools scripts/lib.sh calls (ss, pgrep, flock/setsid, cmp)
	nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils curl
	# /etc/services and /etc/rpc: rpcbind cannot bind "sunrpc" without
	# them (a minimal Debian has no netbase)
	netbase
	iproute2 procps util-linux diffutils
)
test_packages=(
	# unit tests, and the function-length check (ctags over the sources)
	libcunit1-dev universal-ctags
	# the service tests: systemd-analyze verify/security, systemd-sysusers
	systemd
	# tests that count upstream calls on the wire too (dumpcap, tshark)
	tshark
	# the libFuzzer targets (tests/fuzz): clang, and libclang-rt-14-dev
	# for libFuzzer and the sanitizer runtimes; bc for tests/fuzz/run.sh
	clang libclang-rt-14-dev bc
	# run-tests.sh --stress: the timing-sensitivity check (CPU hogs)
	stress-ng
	# metrics.rules reads the Grafana dashboard's JSON; its promtool is
	# not installed: the test fetches Debian's prometheus package with
	# apt-get download and unpacks it into the build tree (dpkg-deb -x),
	# so no Prometheus service is ever set up here
	python3
	# man.conf_directives and package.deb format the manual pages
	groff-base
)
# The kernel tests: QEMU, mount.nfs (run in the guest), a static busybox
# for the guest's initramfs, cpio and xz to build it and unpack the
# kernel, fio for the guest's verify job, sqlite3 for the lock test's
# two writers (run in the guest, checked on the host), acl (getfacl,
# setfacl) for the ACL test, whose guest runs knfsd from an unpacked,
# never installed nfs-kernel-server (vm.sh setup): the libraries its
# rpc.nfsd, exportfs and rpc.mountd link that nothing above brings.
kernel_packages=(
	qemu-system-x86 nfs-common busybox-static cpio xz-utils fio sqlite3
	acl libwrap0 libsqlite3-0 libevent-core-2.1-7 libcap2 libblkid1 libuuid1
)

# Print the packages among $@ that are not installed.
not_installed() {
	local p status
	for p in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=
		[[ "$status" == "install ok installed" ]] || echo "$p"
	done
}

usage() {
	echo "usage: $0 [--build | --demo]" >&2
	exit 2
}

mode=all
case ${1:-} in
--build) mode=build ;;
--demo) mode=demo ;;
"") ;;
*) usage ;;
esac
(($# <= 1)) || usage
packages=("${build_packages[@]}")
[[ $mode == build ]] || packages+=("${demo_packages[@]}")
[[ $mode != all ]] || packages+=("${test_packages[@]}")
[[ $mode == all ]] || kernel_packages=()

mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t kmissing < <(not_installed "${kernel_packages[@]}")
total=$((${#packages[@]} + ${#kernel_packages[@]}))

if ((${#missing[@]} + ${#kmissing[@]} == 0)); then
	echo "install-deps: all $total packages present"
	exit 0
fi
if ((EUID != 0)); then
	echo "install-deps: missing packages: ${missing[*]} ${kmissing[*]}" >&2
	echo "install-deps: run this script as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]} ${kmissing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
if ((${#missing[@]})); then
	apt-get install -y "${packages[@]}"
fi
if ((${#kmissing[@]})); then
	policy=
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\n# install-deps.sh: no service starts during its install\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get install -y --no-install-recommends "${kernel_packages[@]}"
fi
