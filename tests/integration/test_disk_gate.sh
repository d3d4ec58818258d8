#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A held disk operation does not hold RAM hits or metadata calls (issue
# 17). Runs under `harness.sh --no-proxy` with its own nfscached
# (wbtest_proxy.sh), configured with cache_dir in the test's temp dir and
# on its test clock (NFSCACHED_TEST_CLOCK=1), which serves the disk tier's
# test gate (docs/operations.md, "Test clock"):
#
#   test_disk_gate.sh TEST_DISK_GATE
#
# Two files of random bytes in the export, a (4 MiB) and b (1 MiB);
# `TEST_DISK_GATE store` reads a through the proxy and waits until its
# pages are on disk; the proxy is stopped (SIGTERM, exit 0) and started
# again, so RAM is cold and a is on disk; `TEST_DISK_GATE gate` then holds
# a READ of a at the closed gate and checks what is answered meanwhile
# (test_disk_gate.c says what). The proxy must exit 0 at the end.
# Before that, the gate's HTTP answers (docs/operations.md): 404 on a
# proxy without cache_dir; with it, GET gives "gate open" and "held 0",
# a POST without a known action 400, a GET with an action 405. (403 from
# a non-loopback address is not tested: tests stay on loopback.)
set -euo pipefail

prog=${1:?usage: $0 TEST_DISK_GATE}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
trap wbp_cleanup EXIT

conf=$NFSC_TMP/disk-gate.conf
printf 'cache_dir = "%s"\n' "$NFSC_TMP/diskcache" >"$conf"
export NFSCACHED_TEST_CLOCK=1
head -c $((4 << 20)) /dev/urandom >"$NFSC_EXPORT_DIR/a"
head -c $((1 << 20)) /dev/urandom >"$NFSC_EXPORT_DIR/b"
status=0

# The HTTP status of METHOD $1 on the metrics listener's path $2 is $3.
expect_code() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' -X "$1" --max-time 10 \
		"http://$NFSC_METRICS_ADDR$2") || true
	if [[ "$code" == "$3" ]]; then
		nfsc_say "$1 $2: $code"
	else
		nfsc_say "$1 $2: $code, want $3"
		status=1
	fi
}

# Stop the proxy (SIGTERM); it must exit 0.
stop() {
	wbp_kill TERM
	if [[ "$WBP_STATUS" != 0 ]]; then
		nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
		status=1
	fi
}

wbp_setup "$conf"
# No disk tier: nothing to gate.
full_conf=$NFSC_PROXY_CONF
NFSC_PROXY_CONF=$NFSC_TMP/disk-gate-nodisk.conf
grep -v '^cache_dir' "$full_conf" >"$NFSC_PROXY_CONF"
wbp_start
expect_code GET /debug/disk/gate 404
expect_code POST '/debug/disk/gate?action=close' 404
stop
NFSC_PROXY_CONF=$full_conf

wbp_start
expect_code POST /debug/disk/gate 400
expect_code POST '/debug/disk/gate?action=shut' 400
expect_code GET '/debug/disk/gate?action=close' 405
body=$(curl -sS --max-time 10 "http://$NFSC_METRICS_ADDR/debug/disk/gate") || true
if [[ "$body" == $'gate open\nheld 0' ]]; then
	nfsc_say "GET /debug/disk/gate: $(tr '\n' ' ' <<<"$body")"
else
	nfsc_say "GET /debug/disk/gate: '$body', want 'gate open', 'held 0'"
	status=1
fi
"$prog" store || status=1
stop
((status == 0)) || { wbp_log_tail; exit 1; }

wbp_start
"$prog" gate || status=1
stop
((status == 0)) || wbp_log_tail
exit "$status"
