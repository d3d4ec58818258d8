#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The disk tier on a full file system (issue 17). Runs under
# `harness.sh --proxy-may-exit`:
#
#   test_disk_full.sh TEST_DISK_FULL
#
# It re-executes itself in a private mount namespace (unshare -m, as
# root), so the tmpfs is seen by nobody else and cannot outlive the test
# even if the test is killed. It stops the harness's nfscached, mounts a
# 4 MiB tmpfs on NFSC_TMP/diskcache and starts its own nfscached on the
# same ports with cache_dir there, disk_cache_size = 64 (MiB: more than
# the tmpfs holds) and cache_size = 8 (MiB: less than the file). Then
# TEST_DISK_FULL reads a 24 MiB file twice and checks the replies and
# nfscached_disk_on going 1 -> 0 with nfscached_disk_errors_total 1
# (test_disk_full.c). Afterwards nfscached must exit 0 on SIGTERM and its
# log must have exactly one error line, the tier's: the full disk, and
# that it goes on from RAM and the upstream. The tmpfs is unmounted at
# the end, on failure too (EXIT trap).
set -euo pipefail

prog=${1:?usage: $0 TEST_DISK_FULL}
if [[ "${DISK_FULL_NS:-}" != 1 ]]; then
	if [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
		echo "test_disk_full: needs root and unshare" >&2
		exit 1
	fi
	export DISK_FULL_NS=1
	exec unshare -m --propagation private "$0" "$@"
fi

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_TMP:?}" "${NFSC_LIB:?}"
: "${NFSCACHED_BIN:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

dir=$NFSC_TMP/diskcache
conf=$NFSC_TMP/disk_full.conf
log=$NFSC_TMP/disk_full.log
mypid=

# Stop our nfscached if it is still running, then unmount the tmpfs.
cleanup() {
	if [[ -n "$mypid" ]] && nfsc_pid_alive "$mypid"; then
		kill -KILL "$mypid" 2>/dev/null || true
		wait "$mypid" 2>/dev/null || true
	fi
	if mountpoint -q "$dir"; then
		umount "$dir" || echo "test_disk_full: cannot unmount $dir" >&2
	fi
}
trap cleanup EXIT

# Replace the harness's proxy by ours (same ports).
kill -TERM "$NFSC_PROXY_PID"
nfsc_wait_gone "$NFSC_PROXY_PID" 600 || { echo "harness proxy did not stop" >&2; exit 1; }
mkdir -p "$dir"
mount -t tmpfs -o size=4m,mode=0700 nfscached-disk-full "$dir"
df -h "$dir" >&2
cp "$NFSC_PROXY_CONF" "$conf"
cat >>"$conf" <<CONF
cache_size = 8
cache_dir = "$dir"
disk_cache_size = 64
CONF
nfsc_proxy_start "$log" "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
	"$NFSCACHED_BIN" --config "$conf"
mypid=$NFSC_PROXY_PID

status=0
"$prog" || status=1
if nfsc_proxy_stop "$mypid" 60; then
	echo "ok: nfscached exit 0 on SIGTERM"
else
	echo "FAIL: nfscached exit $NFSC_PROXY_STATUS on SIGTERM, want 0" >&2
	status=1
fi
mypid=
# Exactly one error line, the tier's (tier_log in daemon/wb/disk_tier.c).
errors=$(grep -c ' nfscached: error: ' "$log" || true)
# The step that hit ENOSPC first may be the slab write or the index's.
tier=$(grep -cE "^[^ ]+ nfscached: error: disk tier off: $dir: [a-z ]+: No space left on device; serving from RAM and the upstream only\$" "$log" || true)
if ((errors == 1 && tier == 1)); then
	echo "ok: one log line about it: $(grep ' nfscached: error: ' "$log")"
else
	echo "FAIL: $errors error lines, $tier about the full disk (want 1 and 1):" >&2
	grep -E ' (error|warn): ' "$log" >&2 || true
	status=1
fi
cleanup
if mountpoint -q "$dir"; then
	echo "FAIL: $dir is still mounted" >&2
	status=1
fi
if ((status)); then
	tail -n 40 "$log" >&2
fi
exit "$status"
