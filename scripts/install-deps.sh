#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages that building nfscached, its tests and its
# demo need. Does nothing (and needs no root) when all are installed;
# otherwise runs apt-get update and apt-get install -y as root.
set -euo pipefail

packages=(
	# build
	build-essential cmake pkg-config
	libevent-dev libtirpc-dev rpcsvc-proto libnfs-dev libssl-dev
	libconfuse-dev uthash-dev
	# unit tests
	libcunit1-dev
	# integration tests and demo: the upstream server, its rpcbind, the
	# clients, the metrics fetch, and the tools the scripts call
	# (ss, pgrep, flock/setsid, cmp)
	nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils curl
	# /etc/services and /etc/rpc: rpcbind cannot bind "sunrpc" without
	# them (a minimal Debian has no netbase)
	netbase
	iproute2 procps util-linux diffutils
	# the service tests: systemd-analyze verify/security, systemd-sysusers
	systemd
	# tests that count upstream calls on the wire too (dumpcap, tshark)
	tshark
	# the libFuzzer targets (tests/fuzz): clang, and libclang-rt-14-dev
	# for libFuzzer and the sanitizer runtimes; bc for tests/fuzz/run.sh
	clang libclang-rt-14-dev bc
	# run-tests.sh --stress: the timing-sensitivity check (CPU hogs)
	stress-ng
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi
if ((EUID != 0)); then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run this script as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${packages[@]}"
