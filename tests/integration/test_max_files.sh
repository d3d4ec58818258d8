#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The bound on file records (max_files): with max_files = 16 and room for
# 16 pages, a stock client (nfs-cat) reads 120 small files through the
# proxy, twice. Every read must return the file's bytes as Ganesha stored
# them; the proxy must never hold more than max_files idle files plus one
# per page (files that hold pages are bounded by cache_size instead) plus
# the export's root directory; and nfscached_cache_files_forgotten_total
# must count the files it let go. Run under harness.sh with
# --proxy-conf-extra max_files.conf.
set -euo pipefail
# shellcheck source=../../scripts/lib.sh
. "${NFSC_LIB:?run under harness.sh}"

nfiles=120
limit=$((16 + 16 + 1))
work=$NFSC_TMP/maxfiles
mkdir -p "$work"

# Fail the test with a message.
fail() {
	echo "test_max_files: FAIL: $*" >&2
	exit 1
}

# The value of metric sample $1 (it must exist).
metric() {
	nfsc_metric "$NFSC_METRICS_ADDR" "$1" || fail "no metric $1"
}

for ((i = 0; i < nfiles; i++)); do
	head -c $((1000 + i * 37)) /dev/urandom >"$NFSC_EXPORT_DIR/f$i"
done

max_seen=0
for pass in 1 2; do
	for ((i = 0; i < nfiles; i++)); do
		timeout 60 nfs-cat "$(nfsc_url_join "$NFSC_PROXY_URL" "f$i")" \
			>"$work/got" || fail "pass $pass: nfs-cat f$i"
		cmp -s "$work/got" "$NFSC_EXPORT_DIR/f$i" ||
			fail "pass $pass: f$i read through the proxy differs"
		if ((i % 10 == 9)); then
			n=$(metric nfscached_cache_files)
			((n > max_seen)) && max_seen=$n
			((n <= limit)) ||
				fail "pass $pass after f$i: $n files held, want <= $limit"
		fi
	done
	forgotten=$(metric nfscached_cache_files_forgotten_total)
	want=$((pass * nfiles - limit))
	((forgotten >= want)) ||
		fail "pass $pass: $forgotten files forgotten, want >= $want"
	echo "test_max_files: pass $pass: $nfiles files intact," \
		"at most $max_seen held, $forgotten forgotten so far" >&2
done
echo "test_max_files: PASS"
