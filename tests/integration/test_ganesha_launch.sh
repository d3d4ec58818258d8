#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/lib.sh nfsc_ganesha_launch_once against a stub ganesha.nfsd that
# fails the way a real one does when another instance's rpcbind calls
# interleave with its own: it logs "Cannot register NFS V3 on TCP" and
# exits. The stub makes the losing order certain: its pid file is a FIFO
# whose reader (the launcher's pid check, after its log check) gets the
# pid of an exited process only once the line is in the log. The launcher
# must answer 3 (retry), not 1 (not ready), and nfsc_ganesha_launch must
# start it NFSC_GANESHA_TRIES (3 here) times in all, also when its caller
# runs under `set -e` (as harness.sh does).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/lib.sh
. "$here/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/w"
: >"$tmp/w/ganesha.conf"
cat >"$tmp/bin/ganesha.nfsd" <<'STUB'
#!/usr/bin/env bash
# Stub: -L LOG -p PIDFILE; daemonizes like ganesha.nfsd.
while (($#)); do
	case $1 in
	-L) log=$2; shift ;;
	-p) pidf=$2; shift ;;
	esac
	shift
done
echo start >>"${pidf%/*}/starts"
mkfifo "$pidf"
(
	sh -c 'exit 0' & dead=$!
	wait "$dead"
	exec 3>"$pidf"		# blocks until the launcher reads the pid
	echo "nfs_Init_svc :DISP :FATAL :Cannot register NFS V3 on TCP" >>"$log"
	echo "$dead" >&3
	rm -f "$pidf"
	echo "$dead" >"$pidf"
) </dev/null >/dev/null 2>&1 &
exit 0
STUB
chmod +x "$tmp/bin/ganesha.nfsd"
export PATH="$tmp/bin:$PATH" TMPDIR=$tmp NFSC_GANESHA_TRIES=3

fail=0
rc=0
nfsc_ganesha_launch_once "$tmp/w" 1 1 2>"$tmp/err1" || rc=$?
if ((rc != 3)); then
	echo "FAIL: nfsc_ganesha_launch_once returned $rc after 'Cannot register NFS V3 on TCP', want 3" >&2
	cat "$tmp/err1" >&2
	fail=1
fi
rm -f "$tmp/w/starts"
rc=0
nfsc_ganesha_launch "$tmp/w" 1 1 2>"$tmp/err2" || rc=$?
starts=$(wc -l <"$tmp/w/starts")
if ((rc != 1 || starts != 3)); then
	echo "FAIL: nfsc_ganesha_launch returned $rc after $starts starts, want 1 after 3" >&2
	cat "$tmp/err2" >&2
	fail=1
fi
# The harness's way: a bare call in a `set -e` shell.
rm -f "$tmp/w/starts"
rc=0
bash -euc '. "$1"; nfsc_ganesha_launch "$2" 1 1' _ "$here/../../scripts/lib.sh" \
	"$tmp/w" 2>"$tmp/err3" || rc=$?
starts=$(wc -l <"$tmp/w/starts")
if ((rc != 1 || starts != 3)); then
	echo "FAIL: under set -e, nfsc_ganesha_launch exited $rc after $starts starts, want 1 after 3" >&2
	cat "$tmp/err3" >&2
	fail=1
fi
((fail == 0)) && echo "ok: launch_once returned 3; launch tried 3 times, also under set -e"
exit "$fail"
