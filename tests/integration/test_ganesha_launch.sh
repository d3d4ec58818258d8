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
# start it three times in all.
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
export PATH="$tmp/bin:$PATH" TMPDIR=$tmp

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
((fail == 0)) && echo "ok: launch_once returned 3; launch tried 3 times"
exit "$fail"
