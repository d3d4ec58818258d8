#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_service_unit: `cmake --install` into a temporary root gives a
# service systemd accepts. PID 1 here is not systemd, so the unit is checked
# offline, as installed:
#   - the binary, the unit, the sysusers.d entry, the example configuration
#     at etc/nfscached/nfscached.conf, the manual pages, the Prometheus
#     rules, the Grafana dashboard and the docs are where they belong, with
#     no empty directory; under --prefix /usr/local the configuration goes
#     to usr/local/etc/nfscached and the unit names it there;
#   - the installed configuration passes `nfscached --check-config`, and a
#     second install keeps an operator's edited configuration;
#   - `systemd-analyze verify --root` accepts the unit without a single
#     warning (the root gets the host's unit directory and kill, as a
#     Debian system would have them);
#   - `systemd-analyze security` rates its exposure at most 2.0;
#   - `systemd-sysusers --root` creates the user the unit runs as, and the
#     unit asks for what the service needs (Type=notify, SIGHUP reload,
#     CAP_NET_BIND_SERVICE, the state directory, the hardening).
#
# Usage: test_service_unit.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR}
fails=0
root=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-unit.XXXXXX")
trap 'rm -rf "$root" "$root.local"' EXIT

# Record a failed check.
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# Check that file $1 exists in the root.
want_file() {
	[[ -f "$root/$1" ]] || fail "not installed: /$1"
}

# Check that the installed unit has line $1 exactly.
want_line() {
	grep -qxF -- "$1" "$unit" || fail "the unit lacks the line '$1'"
}

for t in systemd-analyze systemd-sysusers; do
	command -v "$t" >/dev/null || { echo "FAIL: $t is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done

DESTDIR=$root cmake --install "$build" --prefix /usr >"$root.log" 2>&1 ||
	{ cat "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

unit=$root/usr/lib/systemd/system/nfscached.service
for f in usr/sbin/nfscached usr/lib/systemd/system/nfscached.service \
	usr/lib/sysusers.d/nfscached.conf etc/nfscached/nfscached.conf \
	usr/share/doc/nfscached/README.md \
	usr/share/doc/nfscached/configuration.md \
	usr/share/doc/nfscached/metrics.md \
	usr/share/doc/nfscached/semantics.md \
	usr/share/doc/nfscached/operations.md \
	usr/share/doc/nfscached/nfscached.conf.example \
	usr/share/man/man8/nfscached.8 usr/share/man/man5/nfscached.conf.5 \
	usr/share/nfscached/nfscached.rules.yml usr/share/nfscached/nfscached.json; do
	want_file "$f"
done
empty=$(cd "$root" && find . -type d -empty)
[[ -z "$empty" ]] || fail "empty directories installed: $empty"

# Another prefix: the configuration directory follows it, and so does the
# unit; nothing is written outside it.
other=$root.local
if DESTDIR=$other cmake --install "$build" --prefix /usr/local >/dev/null 2>&1; then
	[[ -f "$other/usr/local/etc/nfscached/nfscached.conf" ]] ||
		fail "--prefix /usr/local: no usr/local/etc/nfscached/nfscached.conf"
	outside=$(cd "$other" && find . -type f ! -path './usr/local/*')
	[[ -z "$outside" ]] || fail "--prefix /usr/local installed outside it: $outside"
	grep -qxF "ExecStart=/usr/local/sbin/nfscached --config /usr/local/etc/nfscached/nfscached.conf" \
		"$other/usr/local/lib/systemd/system/nfscached.service" ||
		fail "--prefix /usr/local: the unit does not name /usr/local paths"
else
	fail "cmake --install --prefix /usr/local failed"
fi
rm -rf "$other"
[[ -f "$unit" ]] || { echo "FAIL: no unit installed; stopping" >&2; exit 1; }

# The example configuration is valid as installed.
out=$("$root/usr/sbin/nfscached" --check-config "$root/etc/nfscached/nfscached.conf" --no-probe 2>&1) ||
	fail "the installed configuration does not validate: $out"

# A second install keeps the operator's configuration.
echo "# edited by the operator" >>"$root/etc/nfscached/nfscached.conf"
DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null 2>&1 || fail "second install failed"
grep -q "edited by the operator" "$root/etc/nfscached/nfscached.conf" ||
	fail "a second install overwrote etc/nfscached/nfscached.conf"

# Give the root what a Debian system has: systemd's own units and kill.
cp -an /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
mkdir -p "$root/usr/bin"
cp "$(type -P kill)" "$root/usr/bin/kill"
[[ -e "$root/bin" ]] || ln -s usr/bin "$root/bin"

if ! out=$(systemd-analyze verify --root="$root" nfscached.service 2>&1); then
	fail "systemd-analyze verify failed: $out"
elif [[ -n "$out" ]]; then
	fail "systemd-analyze verify warned: $out"
fi

out=$(systemd-analyze security --offline=true --root="$root" --threshold=20 \
	nfscached.service 2>&1) ||
	fail "systemd-analyze security: exposure above 2.0: $(tail -n 1 <<<"$out")"
echo "$(tail -n 1 <<<"$out")"

systemd-sysusers --root="$root" >/dev/null 2>&1 || fail "systemd-sysusers --root failed"
grep -q '^nfscached:' "$root/etc/passwd" || fail "sysusers.d did not create the user nfscached"
want_line "User=nfscached"
want_line "Type=notify"
want_line "ExecStart=/usr/sbin/nfscached --config /etc/nfscached/nfscached.conf"
want_line 'ExecReload=/bin/kill -HUP $MAINPID'
want_line "AmbientCapabilities=CAP_NET_BIND_SERVICE"
want_line "CapabilityBoundingSet=CAP_NET_BIND_SERVICE"
want_line "StateDirectory=nfscached"
want_line "CacheDirectory=nfscached"
want_line "RuntimeDirectory=nfscached"
want_line "ProtectSystem=strict"
want_line "ProtectHome=yes"
want_line "PrivateTmp=yes"
want_line "NoNewPrivileges=yes"
want_line "MemoryDenyWriteExecute=yes"
want_line "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"
want_line "SystemCallFilter=@system-service"
grep -q '^TimeoutStopSec=' "$unit" || fail "the unit sets no TimeoutStopSec"
grep -q '^LimitNOFILE=' "$unit" || fail "the unit sets no LimitNOFILE"
# The state directory the unit creates is the configuration's default.
grep -q '^state_dir = "/var/lib/nfscached"' "$root/etc/nfscached/nfscached.conf" ||
	fail "the example configuration's state_dir is not /var/lib/nfscached"

if ((fails)); then
	echo "test_service_unit: $fails check(s) failed" >&2
	exit 1
fi
echo "test_service_unit: OK"
