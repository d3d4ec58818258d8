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
# Three rounds, each on a fresh filesystem: the filesystem filled, then
# SIGTERM; filled, then SIGKILL; turned read-only (an ext4 error with
# errors=remount-ro), then SIGKILL (the fence is then in state_dir
# alone, and the filesystem is mounted again before the restart). A
# round: rb_before (64 KiB of A journaled); the fault; rb_full (1 MiB
# more + COMMIT: the tier turns off, the COMMIT goes upstream; 64 KiB of
# B at 0 + COMMIT); when full, the tier's log line says "No space left on
# device"; stop with the signal; the filler removed (or the filesystem
# mounted again); restart; rb_after (the upstream and READ give B).
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
	mount -o loop,errors=remount-ro "$img" "$cache_dir"
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

# Turn cache_dir's filesystem read-only under the daemon, as an ext4
# error with errors=remount-ro does (its own error trigger).
fs_error() {
	local dev
	dev=$(basename "$(findmnt -n -o SOURCE "$cache_dir")")
	echo 1 >"/sys/fs/ext4/$dev/trigger_fs_error"
	for ((t = 0; t < 500; t++)); do
		touch "$cache_dir/probe" 2>/dev/null || return 0
		sleep 0.01
	done
	nfsc_say "cache_dir did not turn read-only"
	exit 1
}

# One round: stop $2 (TERM or KILL) after the fault $1 (full: the
# filesystem filled; ro: turned read-only).
round() {
	local fault=$1 sig=$2 want=0
	nfsc_say "round: $fault, SIG$sig"
	fresh_fs
	wbp_start
	run rb_before
	mountpoint -q "$cache_dir" || { nfsc_say "$cache_dir is not mounted"; exit 1; }
	if [[ $fault == full ]]; then
		dd if=/dev/zero of="$cache_dir/filler" bs=1M status=none 2>/dev/null || true
		sync
		nfsc_say "cache_dir filled: $(df -k --output=avail "$cache_dir" | tail -n 1) KiB left"
	else
		fs_error
	fi
	run rb_full
	if [[ $fault == full ]] &&
	   ! grep -q 'disk tier off: .*No space left on device' "$NFSC_PROXY_LOG"; then
		nfsc_say "the tier's log line does not say ENOSPC"
		wbp_log_tail
		exit 1
	fi
	# Read-only cache_dir: the fence is in state_dir only.
	if [[ $fault == ro ]] &&
	   ! grep -q "fence written in $NFSC_TMP/wbproxy/state\$" "$NFSC_PROXY_LOG"; then
		nfsc_say "the fence is not in state_dir alone"
		wbp_log_tail
		exit 1
	fi
	wbp_kill "$sig"
	[[ $sig == KILL ]] && want=137
	if [[ "$WBP_STATUS" != "$want" ]]; then
		nfsc_say "exit status after SIG$sig: $WBP_STATUS, want $want"
		exit 1
	fi
	if [[ $fault == full ]]; then
		rm -f "$cache_dir/filler"
	else
		umount "$cache_dir"
		mount -o loop,errors=remount-ro "$img" "$cache_dir"
	fi
	sync
	: >"$NFSC_PROXY_LOG"
	wbp_start
	run rb_after
	wbp_kill TERM
	[[ "$WBP_STATUS" == 0 ]] || { nfsc_say "exit status after SIGTERM: $WBP_STATUS"; exit 1; }
}

round full TERM
round full KILL
round ro KILL
echo "test_lcommit_rollback: passed"
