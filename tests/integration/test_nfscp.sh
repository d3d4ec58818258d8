#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Whole-file round trip through the proxy with a stock client (libnfs-utils
# nfs-cp): a 10 MiB random file copied in through nfscached and back out
# must come back byte for byte, and must be byte for byte what Ganesha
# stored on disk and what Ganesha serves directly. Run under harness.sh.
set -euo pipefail
# shellcheck source=../../scripts/lib.sh
. "${NFSC_LIB:?run under harness.sh}"

size=$((10 * 1024 * 1024))
work=$NFSC_TMP/nfscp
name=nfscp-10MiB.bin
mkdir -p "$work"
head -c "$size" /dev/urandom >"$work/orig"

# Fail the test with a message.
fail() {
	echo "test_nfscp: FAIL: $*" >&2
	exit 1
}

# Compare file $1 with the original, naming it $2 on failure.
same_as_orig() {
	local got
	got=$(stat -c %s "$1") || fail "$2: missing"
	((got == size)) || fail "$2: $got bytes, want $size"
	cmp "$work/orig" "$1" || fail "$2 differs from the original"
}

nfs-cp "$work/orig" "$(nfsc_url_join "$NFSC_PROXY_URL" "$name")" ||
	fail "nfs-cp into the proxy"
nfs-cp "$(nfsc_url_join "$NFSC_PROXY_URL" "$name")" "$work/back" ||
	fail "nfs-cp out of the proxy"
nfs-cp "$(nfsc_url_join "$NFSC_DIRECT_URL" "$name")" "$work/direct" ||
	fail "nfs-cp out of Ganesha directly"

same_as_orig "$work/back" "the copy read back through the proxy"
same_as_orig "$NFSC_EXPORT_DIR/$name" "the file in Ganesha's export directory"
same_as_orig "$work/direct" "the copy read directly from Ganesha"
echo "test_nfscp: PASS: $size bytes in and out through the proxy intact"
