#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_exports_rules: the exports(5)-style clients entries of a running
# nfscached (harness.sh's, $NFSC_PROXY_CONF), each set by editing the file
# and SIGHUP, checked with libnfs clients (nfs-ls, nfs-cp, all from
# 127.0.0.1), Ganesha's directory on disk and /metrics:
#
#   1. "localhost(ro)": a host name, resolved at the reload: the client is
#      served, a copy into the export fails (NFS3ERR_ROFS) and creates
#      nothing upstream; refusals{reason="read_only"} counts it;
#   2. "127.0.0.1(rw,all_squash,anonuid=4242,anongid=4343)": a copy in
#      works and the file on Ganesha's disk belongs to 4242:4343;
#   3. "local*(rw)": a wildcard, matched against the name of 127.0.0.1
#      looked up by the proxy (/etc/hosts says localhost): served, and
#      name_lookups_total{result="found"} counts the lookup;
#   4. {"10.9.9.9", "*.nowhere.invalid"}: 20 listings refused, counted 20
#      times under not_in_clients, logged in far fewer lines (one per 10 s
#      per reason).
# The same daemon process serves throughout.
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_PROXY_LOG:?}"
: "${NFSC_PROXY_URL:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
: "${NFSC_EXPORT_DIR:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
conf=$NFSC_PROXY_CONF
orig=$NFSC_TMP/rules-orig.conf
cp "$conf" "$orig"
work=$NFSC_TMP/rules
mkdir -p "$work" "$NFSC_EXPORT_DIR/sq"
chmod 1777 "$NFSC_EXPORT_DIR/sq"
head -c 4096 /dev/urandom >"$work/data"

fail() {
	echo "test_exports_rules: FAILED: $*" >&2
	fails=$((fails + 1))
}

pass() {
	echo "test_exports_rules: ok: $*"
}

# Number of lines in the proxy's log matching fixed string $1.
log_count() {
	grep -cF -- "$1" "$NFSC_PROXY_LOG" || true
}

# Write clients = {$1} into the configuration, SIGHUP, wait for the reload.
set_clients() {
	local before i
	sed -e "s|clients = {\"127.0.0.1/32\"}|clients = {$1}|" "$orig" >"$conf"
	grep -qF "clients = {$1}" "$conf" ||
		{ echo "test_exports_rules: cannot edit $conf" >&2; exit 1; }
	before=$(log_count "reloaded $conf")
	kill -HUP "$NFSC_PROXY_PID"
	for ((i = 0; i < 200; i++)); do
		(($(log_count "reloaded $conf") > before)) && return 0
		sleep 0.1
	done
	fail "clients = {$1}: no 'reloaded $conf' in the log"
	return 1
}

# The value of metric sample $1 ("absent" if none).
metric() {
	nfsc_metric "$NFSC_METRICS_ADDR" "$1" || echo absent
}

refusals() {
	metric "nfscached_client_refusals_total{export=\"/export\",call=\"$1\",reason=\"$2\"}"
}

can_list() {
	timeout 20 nfs-ls "$NFSC_PROXY_URL" >/dev/null 2>&1
}

# 1. A host name, read-only.
set_clients '"localhost(ro)"'
can_list && pass "localhost(ro): served" || fail "localhost(ro): not served"
ro_before=$(refusals nfs read_only)
if nfs-cp "$work/data" "$(nfsc_url_join "$NFSC_PROXY_URL" sq/ro-file)" >/dev/null 2>&1; then
	fail "localhost(ro): a copy into the export succeeded"
else
	pass "localhost(ro): a copy into the export fails"
fi
[[ ! -e "$NFSC_EXPORT_DIR/sq/ro-file" ]] && pass "localhost(ro): nothing created upstream" ||
	fail "localhost(ro): sq/ro-file exists on Ganesha's disk"
ro_after=$(refusals nfs read_only)
if [[ "$ro_before" =~ ^[0-9]+$ && "$ro_after" =~ ^[0-9]+$ ]] && ((ro_after > ro_before)); then
	pass "read_only refusals $ro_before -> $ro_after"
else
	fail "read_only refusals $ro_before -> $ro_after, want an increase"
fi

# 2. all_squash with anonuid/anongid: the file belongs to 4242:4343.
set_clients '"127.0.0.1(rw,all_squash,anonuid=4242,anongid=4343)"'
if nfs-cp "$work/data" "$(nfsc_url_join "$NFSC_PROXY_URL" sq/squashed)" >/dev/null 2>&1; then
	owner=$(stat -c %u:%g "$NFSC_EXPORT_DIR/sq/squashed" 2>/dev/null || echo missing)
	[[ "$owner" == 4242:4343 ]] && pass "all_squash: owner $owner" ||
		fail "all_squash: owner $owner, want 4242:4343"
	cmp -s "$work/data" "$NFSC_EXPORT_DIR/sq/squashed" && pass "all_squash: bytes on disk" ||
		fail "all_squash: the bytes on Ganesha's disk differ"
else
	fail "all_squash: the copy into the export failed"
fi

# 3. A wildcard of host names.
found_before=$(metric 'nfscached_client_name_lookups_total{result="found"}')
set_clients '"local*(rw)"'
can_list && pass "local*: served" || fail "local*: not served (is 127.0.0.1 localhost in /etc/hosts?)"
found_after=$(metric 'nfscached_client_name_lookups_total{result="found"}')
if [[ "$found_before" =~ ^[0-9]+$ && "$found_after" =~ ^[0-9]+$ ]] && ((found_after > found_before)); then
	pass "name lookups found $found_before -> $found_after"
else
	fail "name lookups found $found_before -> $found_after, want an increase"
fi

# 4. Not listed: refused, counted each time, logged at a bounded rate.
set_clients '"10.9.9.9", "*.nowhere.invalid"'
mnt_before=$(refusals mount not_in_clients)
lines_before=$(log_count "MNT /export refused for 127.0.0.1")
served=0
for ((i = 0; i < 20; i++)); do
	can_list && served=$((served + 1))
done
((served == 0)) && pass "not listed: 20 listings refused" || fail "not listed: $served of 20 listings served"
mnt_after=$(refusals mount not_in_clients)
if [[ "$mnt_before" =~ ^[0-9]+$ && "$mnt_after" =~ ^[0-9]+$ ]] && ((mnt_after - mnt_before == 20)); then
	pass "not_in_clients refusals $mnt_before -> $mnt_after"
else
	fail "not_in_clients refusals $mnt_before -> $mnt_after, want +20"
fi
lines=$(($(log_count "MNT /export refused for 127.0.0.1") - lines_before))
if ((lines >= 1 && lines <= 5)); then
	pass "20 refusals logged in $lines line(s)"
else
	fail "20 refusals logged in $lines lines, want 1..5 (one per 10 s)"
fi

cp "$orig" "$conf"
kill -HUP "$NFSC_PROXY_PID"
if ((fails)); then
	echo "test_exports_rules: $fails check(s) failed" >&2
	exit 1
fi
echo "test_exports_rules: all checks passed"
