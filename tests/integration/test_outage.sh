#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Outage mode (issue 41, docs/semantics.md "Outage mode across a
# restart"): a proxy restarted on its cache_dir while the upstream is
# down serves a cached file by name. Runs under `harness.sh --no-proxy`
# with its own nfscached (wbtest_proxy.sh): stale_on_error = 600, a
# cache_dir in the test's temp dir, every attribute timeout 60 s, the
# test clock (NFSCACHED_TEST_CLOCK=1).
#
#   test_outage.sh TEST_OUTAGE
#
# Steps (test_outage.c says what each suite checks):
#   1. start the proxy; `TEST_OUTAGE prime` creates a/b/c/file, reads it
#      as a mounting client would and waits until its pages and the
#      outage records are on disk;
#   2. stop Ganesha; `TEST_OUTAGE live`: LOOKUPs answered stale by the
#      same proxy;
#   3. SIGTERM the proxy (exit 0), start it again on the same cache_dir;
#      `TEST_OUTAGE restart`: MNT, LOOKUPs, GETATTR, ACCESS, READ of the
#      whole file answered with the upstream still down, no JUKEBOX;
#   4. `TEST_OUTAGE rewrite` changes the file in the export directory,
#      Ganesha is started; `TEST_OUTAGE recover`: the proxy reconnects and
#      reads the new bytes from the upstream.
# The proxy must exit 0 on SIGTERM each time.
set -euo pipefail

prog=${1:?usage: $0 TEST_OUTAGE}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
status=0

# Start Ganesha again if the test stopped it, and stop the proxy.
finish() {
	"$NFSC_UPSTREAMCTL" start || true
	wbp_cleanup
}
trap finish EXIT

conf=$NFSC_TMP/outage.conf
export_conf=$NFSC_TMP/outage-export.conf
printf 'stale_on_error = 600\ncache_dir = "%s"\n' "$NFSC_TMP/diskcache" >"$conf"
printf 'acregmin = 60\nacregmax = 60\nacdirmin = 60\nacdirmax = 60\n' >"$export_conf"
export NFSCACHED_TEST_CLOCK=1

# Run suite $1 of the test program; a failure fails the test.
suite() {
	"$prog" "$1" || { nfsc_say "suite $1 failed"; status=1; }
}

# Stop the proxy (SIGTERM); it must exit 0.
stop() {
	wbp_kill TERM
	if [[ "$WBP_STATUS" != 0 ]]; then
		nfsc_say "nfscached exit status after SIGTERM: $WBP_STATUS, want 0"
		status=1
	fi
}

wbp_setup "$conf" "$export_conf"
wbp_start
suite prime
"$NFSC_UPSTREAMCTL" stop
suite live
stop
wbp_start
suite restart
suite rewrite
"$NFSC_UPSTREAMCTL" start
suite recover
stop
((status == 0)) || wbp_log_tail
exit "$status"
