#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_reload_exports: exports added, removed and re-pointed by SIGHUP
# (harness.sh's daemon and Ganesha; a second export of the proxy points at
# a subdirectory of Ganesha's export). One daemon process throughout:
#
#   1. add "/second" (id 2, upstream .../export/a): a file there reads
#      byte for byte through it, while the first export's cached file is
#      still a hit (upstream READs unchanged) and the first export's
#      nfscached_config_export_changes_total{change="added"} is 1;
#   2. re-point "/second" at .../export/b: the same name now reads b's
#      bytes, the log says "now points at", repointed counts 1, the old
#      connection closes ("retired") and nfscached_config_exports_retiring
#      returns to 0;
#   3. remove "/second": MNT of it is refused, the first export still
#      served with its cache, removed counts 1, exports gauge 1.
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_PROXY_LOG:?}"
: "${NFSC_PROXY_URL:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
: "${NFSC_EXPORT_DIR:?}" "${NFSC_DIRECT_URL:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
conf=$NFSC_PROXY_CONF
good=$NFSC_TMP/reload-exports-good.conf
cp "$conf" "$good"

fail() { echo "test_reload_exports: FAILED: $*" >&2; fails=$((fails + 1)); }
pass() { echo "test_reload_exports: ok: $*"; }
log_count() { grep -cF -- "$1" "$NFSC_PROXY_LOG" || true; }

# Send SIGHUP and wait (20 s) for a new log line containing $1.
hup_and_wait() {
	local want=$1 before i
	before=$(log_count "$want")
	kill -HUP "$NFSC_PROXY_PID"
	for ((i = 0; i < 200; i++)); do
		(($(log_count "$want") > before)) && return 0
		sleep 0.1
	done
	return 1
}

# Wait (20 s) until a log line containing $1 exists.
wait_log() {
	local i
	for ((i = 0; i < 200; i++)); do
		(($(log_count "$1") > 0)) && return 0
		sleep 0.1
	done
	return 1
}

want_metric() {
	local v
	v=$(nfsc_metric "$NFSC_METRICS_ADDR" "$1") || v="(absent)"
	[[ "$v" == "$2" ]] && pass "$1 = $2" || fail "$1 is $v, want $2"
}

# The first export's upstream URL, and a URL for a subdirectory of it.
up=$(sed -n 's|^\tupstream = "\(.*\)"$|\1|p' "$good" | head -n 1)
[[ -n "$up" ]] || { echo "test_reload_exports: no upstream in $conf" >&2; exit 1; }
sub_url() { local q=${up#*\?}; echo "${up%%\?*}/$1?$q"; }
second_url() { local q=${NFSC_PROXY_URL#*\?}; echo "${NFSC_PROXY_URL%%/export*}/second/$1?$q"; }

# Write the configuration with a second export pointing at subdirectory $1.
with_second() {
	cp "$good" "$conf"
	printf 'export "/second" {\n\tid = 2\n\tupstream = "%s"\n\tclients = {"127.0.0.1/32"}\n\troot_squash = false\n\tsecure = false\n}\n' \
		"$(sub_url "$1")" >>"$conf"
}

mkdir -p "$NFSC_EXPORT_DIR/a" "$NFSC_EXPORT_DIR/b"
head -c 1500000 /dev/urandom >"$NFSC_EXPORT_DIR/a/f.bin"
head -c 1200000 /dev/urandom >"$NFSC_EXPORT_DIR/b/f.bin"
head -c 2000000 /dev/urandom >"$NFSC_EXPORT_DIR/first.bin"
first=$(nfsc_url_join "$NFSC_PROXY_URL" first.bin)
nfs-cat "$first" >"$NFSC_TMP/first.out"
cmp -s "$NFSC_TMP/first.out" "$NFSC_EXPORT_DIR/first.bin" || fail "first export: bytes differ"
reads() { nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_rpcs_total{procedure="read"}'; }
# The first export's file is cached: read it again, it must be a hit.
first_is_hit() {
	local r0 r1
	r0=$(reads)
	nfs-cat "$first" >"$NFSC_TMP/first.out"
	r1=$(reads)
	cmp -s "$NFSC_TMP/first.out" "$NFSC_EXPORT_DIR/first.bin" &&
		((r1 == r0)) && pass "$1: first export's file is a hit ($r0 upstream READs)" ||
		fail "$1: first export's file: upstream READs $r0 -> $r1, or bytes differ"
}
first_is_hit "before any reload"

# 1. Add.
with_second a
if hup_and_wait 'reload: export "/second" added (id 2'; then
	pass "added: $(grep -F 'reload: export "/second" added' "$NFSC_PROXY_LOG" | tail -n 1)"
else
	fail "added: no log line"
fi
if timeout 20 nfs-cat "$(second_url f.bin)" >"$NFSC_TMP/second.out" 2>"$NFSC_TMP/second.err" &&
	cmp -s "$NFSC_TMP/second.out" "$NFSC_EXPORT_DIR/a/f.bin"; then
	pass "added export serves a/f.bin byte for byte"
else
	fail "added export: $(cat "$NFSC_TMP/second.err")"
fi
first_is_hit "after the add"
want_metric 'nfscached_config_exports' 2
want_metric 'nfscached_config_export_changes_total{change="added"}' 1
want_metric 'nfscached_upstream_up{export="/second"}' 1

# 2. Re-point.
with_second b
if hup_and_wait 'reload: export "/second" now points at'; then
	pass "re-pointed: logged"
else
	fail "re-pointed: no log line"
fi
wait_log 'reload: export "/second" (id 2) retired' &&
	pass "old upstream connection closed" || fail "re-pointed: never retired"
want_metric 'nfscached_config_exports_retiring' 0
want_metric 'nfscached_config_export_changes_total{change="repointed"}' 1
if timeout 20 nfs-cat "$(second_url f.bin)" >"$NFSC_TMP/second.out" 2>"$NFSC_TMP/second.err" &&
	cmp -s "$NFSC_TMP/second.out" "$NFSC_EXPORT_DIR/b/f.bin"; then
	pass "re-pointed export serves b/f.bin's bytes"
else
	fail "re-pointed export: not b's bytes $(cat "$NFSC_TMP/second.err")"
fi
first_is_hit "after the re-point"

# 3. Remove.
cp "$good" "$conf"
if hup_and_wait 'reload: export "/second" (id 2) removed'; then
	pass "removed: logged"
else
	fail "removed: no log line"
fi
if timeout 20 nfs-ls "$(second_url '')" >/dev/null 2>&1; then
	fail "removed export still mounts"
else
	pass "removed export: MNT refused"
fi
first_is_hit "after the removal"
want_metric 'nfscached_config_exports' 1
want_metric 'nfscached_config_export_changes_total{change="removed"}' 1
kill -0 "$NFSC_PROXY_PID" || fail "the daemon exited"
((fails == 0)) || exit 1
echo "test_reload_exports: all passed"
