#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_open_exports: an export every host may mount is warned about at
# start: the quick start (--upstream, no clients list) and a file's export
# with clients = {}; an export with a clients list is not. The daemon is
# stopped right after the warning by a state_dir it cannot create (its next
# step, load_key), so nothing is served and no network is needed.
# Needs NFSCACHED_BIN.
set -euo pipefail
bin=${NFSCACHED_BIN:?set NFSCACHED_BIN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
nodir=/proc/nfscached-test-no-such-dir

fail() {
	echo "test_open_exports: FAILED: $*" >&2
	fails=$((fails + 1))
}

# Run nfscached "$@" (it must stop with status 1); its log into $tmp/log.
run() {
	local rc=0
	"$bin" "$@" 2>"$tmp/log" || rc=$?
	[[ $rc == 1 ]] || fail "$*: exit status $rc, want 1"
}

run --upstream nfs://10.0.0.5/srv/data --state-dir "$nodir"
if grep -q 'warn: export "/srv/data": any host may mount it (the quick start has no clients list)' "$tmp/log"; then
	echo "ok: quick start: $(grep -F 'any host' "$tmp/log")"
else
	fail "quick start: no warning in:"; cat "$tmp/log" >&2
fi

cat >"$tmp/c.conf" <<CONF
state_dir = "$nodir"
export "/open" {
  id = 1
  upstream = "nfs://10.0.0.5/a"
}
export "/closed" {
  id = 2
  upstream = "nfs://10.0.0.5/b"
  clients = {"10.0.0.0/8"}
}
CONF
run --config "$tmp/c.conf"
if grep -q 'warn: export "/open": clients = {} lets any host mount it' "$tmp/log" &&
	! grep -q '"/closed"' "$tmp/log" &&
	[[ $(grep -c 'any host' "$tmp/log") == 1 ]]; then
	echo "ok: file: $(grep -F 'any host' "$tmp/log")"
else
	fail "file: want one warning, for /open only, in:"; cat "$tmp/log" >&2
fi
exit $((fails > 0))
