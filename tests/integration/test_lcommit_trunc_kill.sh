#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_lcommit_trunc_kill: commit = "local" with the disk tier on. 256 KiB
# journaled by a COMMIT, then a SETATTR to size 0 answered NFS3_OK, then
# SIGKILL right after that reply; after a restart and a flush the
# upstream file must still be size 0 (an independent run saw it 256 KiB
# again: the journal's rewrite had been queued, not waited for, and the
# older records replayed). Three rounds. Run under harness.sh --no-proxy
# with the test_lcommit program as $1.
set -euo pipefail
prog=${1:?usage: test_lcommit_trunc_kill.sh TEST_LCOMMIT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"
trap 'wbp_cleanup' EXIT

conf=$NFSC_TMP/lcommit.conf
export_conf=$NFSC_TMP/lcommit-export.conf
printf 'writeback_delay = 600\ncache_dir = "%s"\n' "$NFSC_TMP/diskcache" >"$conf"
printf '\tcommit = "local"\n' >"$export_conf"
wbp_setup "$conf" "$export_conf"
fails=0
for round in 1 2 3; do
	wbp_start
	"$prog" tr_kill || fails=$((fails + 1))
	wbp_wait KILL
	wbp_start
	"$NFSCACHED_BIN" cache --socket "$NFSC_TMP/wbproxy/state/admin.sock" \
		--timeout 60 flush || fails=$((fails + 1))
	if ! "$prog" tr_check; then
		echo "round $round: the truncation was rolled back" >&2
		fails=$((fails + 1))
	fi
	wbp_kill TERM
done
echo "test_lcommit_trunc_kill: $fails failure(s)"
((fails == 0))
