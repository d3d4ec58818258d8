#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# commit = "local" never rolls back acknowledged data after the disk tier
# turned off (issue 37; docs/disk-tier.md "Local commit", "The tier
# turned off at run time"). Runs under `harness.sh --no-proxy` with its
# own nfscached (wbtest_proxy.sh), cache_dir on a 32 MiB ext4 filesystem
# of its own (a loop device), in a private mount namespace (unshare -m,
# as root) so nobody else sees it and it cannot outlive the test:
#
#   test_lcommit_rollback.sh TEST_LCOMMIT
#
# For each stop in TERM KILL, on a fresh filesystem: rb_before (64 KiB of A journaled); the
# filesystem filled with a file; rb_full (1 MiB more + COMMIT: the tier
# turns off, the COMMIT goes upstream; 64 KiB of B at 0 + COMMIT); the
# tier's log line says "No space left on device"; stop with the signal;
# the filler removed; restart; rb_after (the upstream and READ give B).
set -euo pipefail

prog=${1:?usage: $0 TEST_LCOMMIT}
if [[ "${LC_RB_NS:-}" != 1 ]]; then
	if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
		echo "test_lcommit_rollback: needs root and unshare" >&2
		exit 1
	fi
	export LC_RB_NS=1
	exec unshare -m --propagation private "$0" "$@"
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=wbtest_proxy.sh
. "$here/wbtest_proxy.sh"

cache_dir=$NFSC_TMP/diskcache
img=$NFSC_TMP/diskcache.img
cleanup() {
	wbp_cleanup
	if mountpoint -q "$cache_dir"; then
		umount "$cache_dir" || echo "test_lcommit_rollback: cannot unmount $cache_dir" >&2
	fi
	rm -f "$img"
}
trap cleanup EXIT
mkdir -p "$cache_dir"

# A fresh 32 MiB ext4 on cache_dir (a journal with no free pages inside
# its file, so a full filesystem fails its next commit).
fresh_fs() {
	if mountpoint -q "$cache_dir"; then
		umount "$cache_dir"
	fi
	rm -f "$img"
	truncate -s 32M "$img"
	mkfs.ext4 -q -F -m 0 "$img"
	mount -o loop "$img" "$cache_dir"
}
conf=$NFSC_TMP/lcommit.conf
export_conf=$NFSC_TMP/lcommit-export.conf
cat >"$conf" <<EOF
writeback_delay = 600
cache_dir = "$cache_dir"
disk_cache_size = 4
EOF
cat >"$export_conf" <<EOF
	commit = "local"
EOF
wbp_setup "$conf" "$export_conf"

run() {
	nfsc_say "suite $1"
	"$prog" "$1" || { wbp_log_tail; exit 1; }
}

for sig in TERM KILL; do
	fresh_fs
	wbp_start
	run rb_before
	mountpoint -q "$cache_dir" || { nfsc_say "$cache_dir is not mounted"; exit 1; }
	dd if=/dev/zero of="$cache_dir/filler" bs=1M status=none 2>/dev/null || true
	sync
	nfsc_say "cache_dir filled: $(df -k --output=avail "$cache_dir" | tail -n 1) KiB left"
	run rb_full
	if ! grep -q 'disk tier off: .*No space left on device' "$NFSC_PROXY_LOG"; then
		nfsc_say "the tier's log line does not say ENOSPC"
		wbp_log_tail
		exit 1
	fi
	wbp_kill "$sig"
	want=0
	[[ $sig == KILL ]] && want=137
	if [[ "$WBP_STATUS" != "$want" ]]; then
		nfsc_say "exit status after SIG$sig: $WBP_STATUS, want $want"
		exit 1
	fi
	rm -f "$cache_dir/filler"
	sync
	: >"$NFSC_PROXY_LOG"
	wbp_start
	run rb_after
	wbp_kill TERM
	[[ "$WBP_STATUS" == 0 ]] || { nfsc_say "exit status after SIGTERM: $WBP_STATUS"; exit 1; }
done
echo "test_lcommit_rollback: passed"
