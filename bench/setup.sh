#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install what the benchmark needs on Debian 12: everything the build and
# the tests need (scripts/install-deps.sh), plus the packages only the
# benchmark uses. Does nothing when all are installed; otherwise runs
# apt-get as root.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"

packages=(
	nfs-ganesha-proxy-v4	# the peer: Ganesha's FSAL PROXY_V4
	dbus-daemon dbus-bin	# a private bus for Ganesha's counters
	gnuplot-nox		# the report's plots
	python3			# the report
	procps coreutils	# ps, timeout, nproc
	sysbench		# K1: the kernel client's row (in the guest)
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || status=
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "bench/setup: all ${#packages[@]} benchmark packages present"
	exit 0
fi
if ((EUID != 0)); then
	echo "bench/setup: missing packages: ${missing[*]}; run as root" >&2
	exit 1
fi
echo "bench/setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${missing[@]}"
