#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_netgroup.sh: netgroup clients entries ("@NAME", exports(5)) are
# matched with the system's innetgr(3), evaluated by the daemon's name
# worker. The test brings its own netgroups: it re-executes itself under
# `unshare --mount` (root; no network namespace: everything stays on
# 127.0.0.1), bind-mounts a private copy of /etc over /etc whose
# nsswitch.conf says "hosts: files" (the reverse lookup of 127.0.0.1 never
# leaves the machine: /etc/hosts names it localhost) and "netgroup: files",
# and whose /etc/netgroup defines
#
#   lab     (localhost,,)         127.0.0.1 by its host name
#   other   (nosuchhost.invalid,,)
#   byaddr  (127.0.0.1,,)         127.0.0.1 by its address as text
#
# then runs itself under harness.sh (Ganesha and nfscached in that
# namespace) and, by SIGHUP, gives the proxy two exports:
#
#   1. /export {"@lab(rw)"}: a libnfs client from 127.0.0.1 lists it,
#      copies a file in and reads it back byte for byte;
#   2. /other {"@other"} (a subdirectory of the same upstream export): the
#      same client is refused, MNT3ERR_ACCES, counted once in
#      nfscached_client_refusals_total{export="/other",call="mount",
#      reason="not_in_clients"};
#   3. another SIGHUP with /export {"@byaddr(ro)"}: membership is asked
#      again (the reload forgot it), by the address: the client is served
#      read-only (a copy in fails, nothing is created upstream).
#
# Needs NFSCACHED_BIN (CMake sets it). Exit 77 (skipped) only if this
# machine cannot make a mount namespace.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"

case "${NFSC_NETGROUP_STAGE:-}" in
"")
	: "${NFSCACHED_BIN:?set NFSCACHED_BIN to the nfscached binary}"
	if ! unshare --mount --propagation private true 2>/dev/null; then
		echo "test_netgroup: cannot create a mount namespace here; skipped" >&2
		exit 77
	fi
	NFSC_NETGROUP_STAGE=ns exec unshare --mount --propagation private -- \
		bash "$self" "$@"
	;;
ns)
	etc=$(mktemp -d /tmp/nfsc-netgroup-etc.XXXXXX)
	trap 'rm -rf "$etc"' EXIT
	cp -a /etc/. "$etc/"
	grep -v -E '^(hosts|netgroup):' /etc/nsswitch.conf >"$etc/nsswitch.conf"
	printf 'hosts: files\nnetgroup: files\n' >>"$etc/nsswitch.conf"
	printf '%s\n' 'lab (localhost,,)' 'other (nosuchhost.invalid,,)' \
		'byaddr (127.0.0.1,,)' >"$etc/netgroup"
	mount --bind "$etc" /etc
	# The premises: 127.0.0.1 is localhost, and the groups say what we
	# wrote (getent asks the same NSS the daemon's innetgr does).
	getent hosts 127.0.0.1 | grep -qw localhost ||
		{ echo "test_netgroup: 127.0.0.1 is not localhost in /etc/hosts" >&2; exit 1; }
	getent netgroup lab | grep -q localhost ||
		{ echo "test_netgroup: getent netgroup lab: no localhost" >&2; exit 1; }
	st=0
	NFSC_NETGROUP_STAGE=inner "$here/harness.sh" -- "$self" || st=$?
	exit "$st"
	;;
inner) ;;
*)
	echo "test_netgroup: bad NFSC_NETGROUP_STAGE" >&2
	exit 2
	;;
esac

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_PROXY_LOG:?}"
: "${NFSC_PROXY_URL:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
: "${NFSC_EXPORT_DIR:?}" "${NFSC_TMP:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
conf=$NFSC_PROXY_CONF
orig=$NFSC_TMP/netgroup-orig.conf
cp "$conf" "$orig"

fail() { echo "test_netgroup: FAILED: $*" >&2; fails=$((fails + 1)); }
pass() { echo "test_netgroup: ok: $*"; }
log_count() { grep -cF -- "$1" "$NFSC_PROXY_LOG" || true; }
metric() { nfsc_metric "$NFSC_METRICS_ADDR" "$1" || echo absent; }

# Write the configuration with /export's clients {$1} and, if $2 is set,
# an export /other of subdirectory o with clients {$2}; SIGHUP and wait
# (20 s) for the reload.
configure() {
	local before i up q
	sed -e "s|clients = {\"127.0.0.1/32\"}|clients = {$1}|" "$orig" >"$conf"
	grep -qF "clients = {$1}" "$conf" ||
		{ echo "test_netgroup: cannot edit $conf" >&2; exit 1; }
	if [[ -n "${2:-}" ]]; then
		up=$(sed -n 's|^\tupstream = "\(.*\)"$|\1|p' "$orig" | head -n 1)
		q=${up#*\?}
		printf 'export "/other" {\n\tid = 2\n\tupstream = "%s"\n\tclients = {%s}\n\troot_squash = false\n\tsecure = false\n}\n' \
			"${up%%\?*}/o?$q" "$2" >>"$conf"
	fi
	before=$(log_count "reloaded $conf")
	kill -HUP "$NFSC_PROXY_PID"
	for ((i = 0; i < 200; i++)); do
		(($(log_count "reloaded $conf") > before)) && return 0
		sleep 0.1
	done
	fail "clients = {$1}: no 'reloaded $conf' in the log"
	tail -n 20 "$NFSC_PROXY_LOG" >&2
	exit 1
}

mkdir -p "$NFSC_EXPORT_DIR/o" "$NFSC_EXPORT_DIR/sq"
chmod 1777 "$NFSC_EXPORT_DIR/sq"
head -c 300000 /dev/urandom >"$NFSC_TMP/data"
other_url="${NFSC_PROXY_URL%%/export*}/other?${NFSC_PROXY_URL#*\?}"
refused='nfscached_client_refusals_total{export="/other",call="mount",reason="not_in_clients"}'

# 1 and 2: a member of @lab by its name; no member of @other.
configure '"@lab(rw)"' '"@other"'
if timeout 20 nfs-ls "$NFSC_PROXY_URL" >/dev/null 2>&1; then
	pass "@lab(rw): 127.0.0.1 (localhost) lists /export"
else
	fail "@lab(rw): 127.0.0.1 (localhost) cannot list /export"
fi
if timeout 20 nfs-cp "$NFSC_TMP/data" "$(nfsc_url_join "$NFSC_PROXY_URL" sq/in)" >/dev/null 2>&1 &&
	timeout 20 nfs-cp "$(nfsc_url_join "$NFSC_PROXY_URL" sq/in)" "$NFSC_TMP/back" >/dev/null 2>&1 &&
	cmp -s "$NFSC_TMP/data" "$NFSC_TMP/back" &&
	cmp -s "$NFSC_TMP/data" "$NFSC_EXPORT_DIR/sq/in"; then
	pass "@lab(rw): a file written and read back byte for byte"
else
	fail "@lab(rw): writing or reading back sq/in failed, or bytes differ"
fi
before=$(metric "$refused")
[[ "$before" == absent ]] && before=0
if timeout 20 nfs-ls "$other_url" >/dev/null 2>&1; then
	fail "@other: 127.0.0.1 lists /other"
else
	pass "@other: 127.0.0.1 is refused /other"
fi
after=$(metric "$refused")
if [[ "$after" =~ ^[0-9]+$ ]] && ((after - before == 1)); then
	pass "/other not_in_clients mount refusals $before -> $after"
else
	fail "/other not_in_clients mount refusals $before -> $after, want +1"
fi
grep -qF "MNT /other refused for 127.0.0.1" "$NFSC_PROXY_LOG" &&
	pass "the refusal is logged" || fail "no 'MNT /other refused for 127.0.0.1' in the log"

# 3. After a reload, a member of @byaddr by its address: read-only.
configure '"@byaddr(ro)"'
if timeout 20 nfs-ls "$NFSC_PROXY_URL" >/dev/null 2>&1; then
	pass "@byaddr(ro): 127.0.0.1 lists /export"
else
	fail "@byaddr(ro): 127.0.0.1 cannot list /export"
fi
if timeout 20 nfs-cp "$NFSC_TMP/data" "$(nfsc_url_join "$NFSC_PROXY_URL" sq/ro)" >/dev/null 2>&1; then
	fail "@byaddr(ro): a copy into the export succeeded"
else
	pass "@byaddr(ro): a copy into the export fails"
fi
[[ ! -e "$NFSC_EXPORT_DIR/sq/ro" ]] && pass "@byaddr(ro): nothing created upstream" ||
	fail "@byaddr(ro): sq/ro exists on Ganesha's disk"

cp "$orig" "$conf"
if ((fails)); then
	echo "test_netgroup: $fails check(s) failed" >&2
	exit 1
fi
echo "test_netgroup: all checks passed"
