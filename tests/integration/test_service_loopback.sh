#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_service_loopback: by default the metrics endpoint listens on
# loopback only, even when NFS listens on every address.
#
# The test re-executes itself in a private network namespace (`unshare
# --net`, root), so the default port 9655 is free whatever else runs on
# this machine and no traffic can leave it. There it starts nfscached from
# a configuration that says nothing about metrics_listen, with
# listen = "0.0.0.0" and an upstream that does not answer, then checks the
# daemon's own listening sockets twice, with `ss -ltnp` (by pid) and from
# /proc/PID/net/tcp (by the socket inodes among /proc/PID/fd):
#   - 127.0.0.1:9655 is the metrics socket, and no other socket of the
#     daemon listens on 9655;
#   - NFS listens on 0.0.0.0 (so the loopback binding is the default's
#     doing, not the listen address's);
#   - GET /healthz answers 503 "upstream down" and /metrics says
#     nfscached_upstream_up{export="/export"} 0, as the upstream is down;
#   - SIGTERM: exit 0.
# Exit 77 (skipped) only if this machine cannot make a network namespace.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ "${NFSC_LOOPBACK_NS:-}" != 1 ]]; then
	: "${NFSCACHED_BIN:?set NFSCACHED_BIN to the nfscached binary}"
	if ! unshare --net true 2>/dev/null; then
		echo "test_service_loopback: cannot create a network namespace here; skipped" >&2
		exit 77
	fi
	NFSC_LOOPBACK_NS=1 exec unshare --net -- bash "${BASH_SOURCE[0]}" "$@"
fi

# shellcheck source=scripts/lib.sh
. "$here/../../scripts/lib.sh"

NFS_PORT=12049
fails=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-loopback.XXXXXX")
NFSC_PROXY_PID=

# Stop the daemon if still running, remove the temp dir.
cleanup() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" 20 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# Record a failed check.
fail() {
	echo "test_service_loopback: FAILED: $*" >&2
	fails=$((fails + 1))
}

# Record a passed check.
pass() {
	echo "test_service_loopback: ok: $*"
}

# Print "ADDR:PORT" for every TCP socket pid $1 listens on, from /proc:
# the inodes of its socket fds, looked up in its net/tcp and net/tcp6.
proc_listeners() {
	local pid=$1 inodes
	inodes=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null |
		sed 's/socket:\[\(.*\)\]/\1/' | sort -u | tr '\n' ' ')
	local addr h p
	awk -v want=" $inodes" 'FNR > 1 && $4 == "0A" && index(want, " " $10 " ") { print $2 }' \
		"/proc/$pid/net/tcp" "/proc/$pid/net/tcp6" |
	while IFS=: read -r h p; do
		if ((${#h} == 8)); then
			addr="$((16#${h:6:2})).$((16#${h:4:2})).$((16#${h:2:2})).$((16#${h:0:2}))"
		else
			addr="v6:$h"
		fi
		echo "$addr:$((16#$p))"
	done
}

ip link set lo up
cat >"$tmp/nfscached.conf" <<EOF
listen = "0.0.0.0"
nfs_port = $NFS_PORT
mount_port = 0
state_dir = "$tmp/state"
register_rpcbind = false
export "/export" {
	id = 1
	upstream = "nfs://127.0.0.1/export?nfsport=2049&mountport=20048"
	clients = {"127.0.0.1/32"}
}
EOF
# No rpcbind in this namespace, so readiness is judged by the listeners
# (nfsc_proxy_start's RPC ping goes through rpcbind).
"$NFSCACHED_BIN" --config "$tmp/nfscached.conf" >"$tmp/nfscached.log" 2>&1 </dev/null &
NFSC_PROXY_PID=$!
pid=$NFSC_PROXY_PID
for ((i = 0; i < 100; i++)); do
	nfsc_pid_alive "$pid" || break
	n=$(ss -Hltnp | grep -c "pid=$pid," || true)
	((n >= 2)) && break
	sleep 0.1
done
nfsc_pid_alive "$pid" || { fail "nfscached exited at start"; cat "$tmp/nfscached.log" >&2; exit 1; }

ss_lines=$(ss -Hltnp | grep "pid=$pid," || true)
ss_metrics=$(awk '$4 ~ /:9655$/ { print $4 }' <<<"$ss_lines")
if [[ "$ss_metrics" == "127.0.0.1:9655" ]]; then
	pass "ss -ltnp: the daemon listens for metrics on 127.0.0.1:9655 only"
else
	fail "ss -ltnp: the daemon's port-9655 sockets are '${ss_metrics//$'\n'/ }', not 127.0.0.1:9655 alone"
fi
if awk '{ print $4 }' <<<"$ss_lines" | grep -qx "0.0.0.0:$NFS_PORT"; then
	pass "ss -ltnp: NFS listens on 0.0.0.0:$NFS_PORT"
else
	fail "ss -ltnp: no 0.0.0.0:$NFS_PORT among the daemon's sockets: $ss_lines"
fi

proc=$(proc_listeners "$pid")
proc_metrics=$(grep ':9655$' <<<"$proc" || true)
if [[ "$proc_metrics" == "127.0.0.1:9655" ]]; then
	pass "/proc/$pid/net/tcp: the metrics socket is 127.0.0.1:9655"
else
	fail "/proc/$pid/net/tcp: the daemon's port-9655 listeners are '${proc_metrics//$'\n'/ }'"
fi
grep -qx "0.0.0.0:$NFS_PORT" <<<"$proc" ||
	fail "/proc/$pid/net/tcp: no 0.0.0.0:$NFS_PORT listener (got: ${proc//$'\n'/ })"

code=$(curl -s -o "$tmp/healthz" -w '%{http_code}' --max-time 10 http://127.0.0.1:9655/healthz) || true
if [[ "$code" == 503 && "$(cat "$tmp/healthz")" == "upstream down" ]]; then
	pass "/healthz: 503 upstream down"
else
	fail "/healthz answered $code '$(cat "$tmp/healthz" 2>/dev/null)' with the upstream down"
fi
v=$(nfsc_metric 127.0.0.1:9655 'nfscached_upstream_up{export="/export"}') || v="(absent)"
[[ "$v" == 0 ]] && pass "nfscached_upstream_up{export=\"/export\"} 0" ||
	fail "nfscached_upstream_up{export=\"/export\"} is $v with the upstream down"

NFSC_PROXY_PID=
if nfsc_proxy_stop "$pid" 20; then
	pass "exit 0 on SIGTERM"
else
	fail "exit $NFSC_PROXY_STATUS on SIGTERM"
fi
if ((fails)); then
	echo "test_service_loopback: $fails check(s) failed; the log:" >&2
	cat "$tmp/nfscached.log" >&2
	exit 1
fi
echo "test_service_loopback: OK"
