#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_log_timestamps: log lines carry a timestamp when stderr is not the
# journal, and none (only the "<N>" priority) when it is. The journal is
# told apart as systemd.exec(5) documents: JOURNAL_STREAM="DEV:INODE" of
# the stream systemd connected, compared with stderr's. Uses a file with
# two errors (nothing is served):
#   - stderr to a file, no JOURNAL_STREAM: each line is
#     "YYYY-MM-DDTHH:MM:SS.mmm+HH:MM nfscached: error: ..." (RFC 3339,
#     local time; TZ=UTC gives +00:00), one line per error;
#   - JOURNAL_STREAM naming that very file: "<3>FILE:LINE: ..." lines;
#   - JOURNAL_STREAM naming another file (a service whose stderr was
#     redirected): timestamps again.
# Needs NFSCACHED_BIN.
set -euo pipefail
bin=${NFSCACHED_BIN:?set NFSCACHED_BIN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
conf=$tmp/bad.conf
printf 'nfs_port = 0\ncache_size = 4X\n' >"$conf"

fail() {
	echo "test_log_timestamps: FAILED: $*" >&2
	fails=$((fails + 1))
}

# Run nfscached on the bad file with stderr to $1, the rest of the
# environment from the caller; it must exit 1.
run() {
	local rc=0
	: >"$1"
	"$bin" --config "$conf" 2>>"$1" || rc=$?
	[[ $rc == 1 ]] || fail "exit status $rc, want 1"
}

stamp='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} nfscached: error: '

TZ=UTC run "$tmp/plain.log"
n=$(grep -cE "${stamp}$conf:[12]: " "$tmp/plain.log" || true)
if [[ $n == 2 && $(wc -l <"$tmp/plain.log") == 3 ]] &&
	grep -qE '^[^ ]+\+00:00 nfscached: error: .*: no export' "$tmp/plain.log"; then
	echo "ok: not the journal: $(head -n 1 "$tmp/plain.log")"
else
	fail "not the journal: want 3 timestamped lines, got:"
	cat "$tmp/plain.log" >&2
fi

: >"$tmp/journal.log"
js=$(stat -c '%d:%i' "$tmp/journal.log")
JOURNAL_STREAM=$js run "$tmp/journal.log"
if [[ $(grep -c "^<3>$conf:[12]: " "$tmp/journal.log") == 2 ]] &&
	! grep -qE '^[0-9]{4}-' "$tmp/journal.log"; then
	echo "ok: the journal ($js): $(head -n 1 "$tmp/journal.log")"
else
	fail "journal: want <3> lines without a time, got:"
	cat "$tmp/journal.log" >&2
fi

: >"$tmp/other"
JOURNAL_STREAM=$(stat -c '%d:%i' "$tmp/other") TZ=UTC run "$tmp/redirected.log"
if [[ $(grep -cE "$stamp" "$tmp/redirected.log") == 3 ]]; then
	echo "ok: JOURNAL_STREAM of another stream: timestamps"
else
	fail "redirected: want timestamps, got:"
	cat "$tmp/redirected.log" >&2
fi
exit $((fails > 0))
