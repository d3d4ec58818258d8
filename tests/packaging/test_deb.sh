#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_deb: the Debian package the project builds (cmake/package.cmake).
# It builds the package from BUILD_DIR with cpack into a temporary
# directory and, without installing anything on this machine:
#   - dpkg-deb --info: the name, the version, the runtime libraries in
#     Depends (from dpkg-shlibdeps), the configuration as a conffile;
#   - dpkg-deb -x into a temporary root: the files a deployment needs are
#     there (binary, unit, sysusers.d entry, configuration, both manual
#     pages, the Prometheus rules, the Grafana dashboard), the unit and the
#     pages name /usr/sbin and /etc/nfscached, the unpacked binary prints
#     its version and accepts the unpacked example configuration;
#   - the maintainer scripts, run with stand-ins for the commands they may
#     call: postinst creates the user from the sysusers.d entry (or with
#     useradd where systemd-sysusers is missing, as in a container), and
#     no script enables or starts anything.
# With NFSCACHED_TEST_APT=1 (and root) it also installs the package with
# `apt-get install ./FILE.deb`, checks the user and the binary, and purges
# it again; off by default, since the suite must not leave a package on
# the machine it runs on.
#
# cpack first builds what is out of date in BUILD_DIR (CMake's preinstall
# target): nothing in the test command, which builds the tree before ctest.
#
# Usage: test_deb.sh BUILD_DIR VERSION
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR VERSION}
version=${2:?usage: $0 BUILD_DIR VERSION}
fails=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Record a failed check.
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

for t in cpack dpkg-deb dpkg-shlibdeps groff; do
	command -v "$t" >/dev/null ||
		{ echo "FAIL: $t is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done

if ! cpack --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1; then
	cat "$tmp/cpack.log" >&2
	echo "FAIL: cpack did not build the package" >&2
	exit 1
fi
debs=("$tmp"/out/nfscached_"$version"-*_*.deb)
[[ -f "${debs[0]}" ]] || { echo "FAIL: no nfscached_$version-*.deb in $tmp/out" >&2; ls "$tmp/out" >&2; exit 1; }
deb=${debs[0]}
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# ---- control: dpkg-deb --info ----
info=$(dpkg-deb --info "$deb")
[[ "$(dpkg-deb -f "$deb" Package)" == nfscached ]] || fail "Package is not nfscached"
[[ "$(dpkg-deb -f "$deb" Version)" == "$version"-* ]] || fail "Version is not $version-N"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libevent- libtirpc libnfs libssl liblmdb libxxhash libconfuse; do
	[[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
mkdir -p "$tmp/control"
dpkg-deb -e "$deb" "$tmp/control"
grep -qxF /etc/nfscached/nfscached.conf "$tmp/control/conffiles" 2>/dev/null ||
	fail "/etc/nfscached/nfscached.conf is not a conffile"
for s in postinst prerm postrm; do
	[[ -x "$tmp/control/$s" ]] || { fail "no executable $s"; continue; }
	sh -n "$tmp/control/$s" || fail "$s: syntax error"
done
sed '/^[[:space:]]*#/d' "$tmp/control"/post* "$tmp/control"/prerm |
	grep 'systemctl.*\(enable\|start\)\|deb-systemd' &&
	fail "a maintainer script enables or starts the service"

# ---- the files: dpkg-deb -x ----
root=$tmp/root
dpkg-deb -x "$deb" "$root"
for f in usr/sbin/nfscached usr/lib/systemd/system/nfscached.service \
	usr/lib/sysusers.d/nfscached.conf etc/nfscached/nfscached.conf \
	usr/share/man/man8/nfscached.8 usr/share/man/man5/nfscached.conf.5 \
	usr/share/nfscached/nfscached.rules.yml usr/share/nfscached/nfscached.json \
	usr/share/doc/nfscached/operations.md usr/share/doc/nfscached/nfscached.conf.example; do
	[[ -f "$root/$f" ]] || fail "not in the package: /$f"
done
empty=$(cd "$root" && find . -type d -empty)
[[ -z "$empty" ]] || fail "empty directories in the package: $empty"
unit=$root/usr/lib/systemd/system/nfscached.service
grep -qxF "ExecStart=/usr/sbin/nfscached --config /etc/nfscached/nfscached.conf" "$unit" ||
	fail "the unit's ExecStart does not name /usr/sbin and /etc/nfscached"
left=$(grep -l '@[A-Z]*@' "$unit" "$root"/usr/share/man/man*/* || true)
[[ -z "$left" ]] || fail "placeholders left in: $left"
grep -q '/etc/nfscached/nfscached.conf' "$root/usr/share/man/man5/nfscached.conf.5" ||
	fail "nfscached.conf(5) does not name /etc/nfscached/nfscached.conf"
for p in "$root"/usr/share/man/man*/*; do
	out=$(LC_ALL=C.UTF-8 groff -man -ww -z "$p" 2>&1) || fail "groff failed on $p"
	[[ -z "$out" ]] || fail "groff warns on $p: $out"
done
out=$("$root/usr/sbin/nfscached" --version 2>&1) || fail "--version failed: $out"
[[ "$out" == "nfscached $version" ]] || fail "--version printed '$out'"
out=$("$root/usr/sbin/nfscached" --check-config "$root/etc/nfscached/nfscached.conf" --no-probe 2>&1) ||
	fail "the packaged configuration does not validate: $out"
echo "$out"

# ---- the maintainer scripts, with stand-ins that log their calls ----
# Write a stand-in for command $2 into directory $1; it logs its arguments
# and exits $3 (default 0).
stub() {
	mkdir -p "$1"
	printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit %s\n' "$2" "$tmp/calls" "${3:-0}" >"$1/$2"
	chmod +x "$1/$2"
}
stub "$tmp/bin1" systemd-sysusers
stub "$tmp/bin1" systemctl
stub "$tmp/bin1" useradd
: >"$tmp/calls"
PATH=$tmp/bin1:/usr/bin:/bin sh "$tmp/control/postinst" configure ||
	fail "postinst configure failed"
grep -qxF "systemd-sysusers /usr/lib/sysusers.d/nfscached.conf" "$tmp/calls" ||
	fail "postinst did not run systemd-sysusers on the package's entry: $(cat "$tmp/calls")"
grep -q useradd "$tmp/calls" && fail "postinst ran useradd beside systemd-sysusers"
# No systemd-sysusers (a container): useradd, once, for a missing user.
stub "$tmp/bin2" getent 2
stub "$tmp/bin2" useradd
: >"$tmp/calls"
PATH=$tmp/bin2 /bin/sh "$tmp/control/postinst" configure || fail "postinst (useradd) failed"
grep -q '^useradd --system .*--home-dir /var/lib/nfscached .* nfscached$' "$tmp/calls" ||
	fail "postinst without systemd-sysusers did not useradd: $(cat "$tmp/calls")"
for s in prerm postrm; do
	: >"$tmp/calls"
	PATH=$tmp/bin1:/usr/bin:/bin sh "$tmp/control/$s" upgrade || fail "$s upgrade failed"
	grep -q 'systemctl.*\(enable\|start\)' "$tmp/calls" && fail "$s enabled or started something"
done

# ---- optional: a real install and purge ----
if [[ "${NFSCACHED_TEST_APT:-0}" == 1 ]]; then
	if dpkg-query -W nfscached >/dev/null 2>&1; then
		fail "NFSCACHED_TEST_APT: nfscached is already installed here; not touching it"
	else
		apt-get install -y "$deb" >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; fail "apt-get install failed"; }
		id nfscached >/dev/null 2>&1 || fail "apt install: no nfscached user"
		[[ "$(/usr/sbin/nfscached --version)" == "nfscached $version" ]] || fail "apt install: --version"
		/usr/sbin/nfscached --check-config /etc/nfscached/nfscached.conf --no-probe || fail "apt install: --check-config"
		ls /etc/systemd/system/*.wants/nfscached.service 2>/dev/null && fail "apt install enabled the unit"
		apt-get purge -y nfscached >>"$tmp/apt.log" 2>&1 || fail "apt-get purge failed"
		[[ ! -e /usr/sbin/nfscached && ! -e /etc/nfscached ]] || fail "purge left files"
		echo "apt install and purge: done"
	fi
fi

if ((fails)); then
	echo "test_deb: $fails check(s) failed" >&2
	exit 1
fi
echo "test_deb: OK"
