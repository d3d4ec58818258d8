#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_notify: nfscached's sd_notify messages, received on a NOTIFY_SOCKET
# this test creates (notify_recv plays systemd), in order. Runs under
# harness.sh --no-proxy: a Ganesha upstream is up; the test starts its own
# nfscached instances.
#
#   phase 1, upstream up, WATCHDOG_USEC=300000: the first message is
#            READY=1 with STATUS=upstream up; WATCHDOG=1 arrives several
#            times a second; SIGHUP gives RELOADING=1 then READY=1 again;
#            SIGTERM gives STOPPING=1 as the last message, and exit 0.
#   phase 2, upstream stopped, start_without_upstream = true (default):
#            READY=1 arrives, with a STATUS= saying the upstream is down.
#   phase 3, upstream stopped, start_without_upstream = false: no READY=1
#            for 3 s; once the upstream starts, READY=1 with STATUS=upstream
#            up.
# WATCHDOG=1 lines are left out of the order checks.
#
# Usage (harness.sh --no-proxy): test_notify.sh NOTIFY_RECV_BINARY
set -euo pipefail

recv_bin=${1:?usage: $0 NOTIFY_RECV_BINARY}
: "${NFSCACHED_BIN:?}" "${NFSC_TMP:?}" "${NFSC_LIB:?}" "${NFSC_DIRECT_URL:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
sock=$NFSC_TMP/notify.sock
out=$NFSC_TMP/notify.txt
log=$NFSC_TMP/nfscached-notify.log
recv_pid=
NFSC_PROXY_PID=
read -r nfs_port mnt_port met_port <<<"$(nfsc_free_ports 3)"

# Stop what this test started, each by its own pid.
cleanup() {
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" 20 || true
	fi
	if [[ -n "$recv_pid" ]]; then
		kill "$recv_pid" 2>/dev/null || true
		wait "$recv_pid" 2>/dev/null || true
	fi
	nfsc_release_ports "$nfs_port" "$mnt_port" "$met_port"
}
trap cleanup EXIT

# Record a failed check.
fail() {
	echo "test_notify: FAILED: $*" >&2
	echo "  messages so far:" >&2
	sed 's/^/    /' "$out" >&2 || true
	fails=$((fails + 1))
}

# Record a passed check.
pass() {
	echo "test_notify: ok: $*"
}

# The messages received, WATCHDOG=1 left out.
messages() {
	grep -v '^WATCHDOG=1$' "$out" || true
}

# Wait up to $2 seconds for a message matching ERE $1. True if seen.
wait_msg() {
	local re=$1 secs=$2 i
	for ((i = 0; i < secs * 10; i++)); do
		messages | grep -Eq "$re" && return 0
		sleep 0.1
	done
	return 1
}

# Wait up to $2 seconds for at least $1 messages (watchdog pings aside).
wait_count() {
	local n=$1 secs=$2 i
	for ((i = 0; i < secs * 10; i++)); do
		(($(messages | wc -l) >= n)) && return 0
		sleep 0.1
	done
	return 1
}

# Write a configuration with extra global lines $1 to $NFSC_TMP/notify.conf.
write_conf() {
	nfsc_proxy_config "$nfs_port" "$mnt_port" "127.0.0.1:$met_port" \
		"$NFSC_TMP/notify-state" "$NFSC_DIRECT_URL" >"$NFSC_TMP/notify.conf"
	printf '%s\n' "$1" >>"$NFSC_TMP/notify.conf"
}

# Start nfscached on the configuration with NOTIFY_SOCKET set.
start_proxy() {
	: >"$out"
	NOTIFY_SOCKET=$sock nfsc_proxy_start "$log" "$nfs_port" "$mnt_port" \
		"$NFSCACHED_BIN" --config "$NFSC_TMP/notify.conf"
}

# Stop it; true if it exited 0.
stop_proxy() {
	local pid=$NFSC_PROXY_PID
	NFSC_PROXY_PID=
	nfsc_proxy_stop "$pid" 20
}

"$recv_bin" "$sock" "$out" 540 &
recv_pid=$!
for ((i = 0; i < 50; i++)); do
	[[ -S "$sock" ]] && break
	sleep 0.1
done
[[ -S "$sock" ]] || { echo "test_notify: notify_recv did not bind $sock" >&2; exit 1; }

# ---- phase 1: upstream up, watchdog, reload, stop
write_conf ""
export WATCHDOG_USEC=300000
start_proxy
unset WATCHDOG_USEC
if wait_msg '^READY=1' 10; then
	first=$(messages | head -n 1)
	if [[ "$first" == "READY=1|STATUS=upstream up; "* ]]; then
		pass "first message: $first"
	else
		fail "the first message is '$first', not READY=1 with STATUS=upstream up"
	fi
else
	fail "no READY=1 within 10 s with the upstream up"
fi
sleep 1.5
n=$(grep -c '^WATCHDOG=1$' "$out" || true)
if ((n >= 4)); then
	pass "$n WATCHDOG=1 in about 1.5 s (WATCHDOG_USEC=300000)"
else
	fail "only $n WATCHDOG=1 in 1.5 s with WATCHDOG_USEC=300000"
fi
kill -HUP "$NFSC_PROXY_PID"
# The third message, not any READY=1: the first one is already there.
if wait_msg '^RELOADING=1$' 5 && wait_count 3 5 &&
	[[ "$(messages | sed -n 2p)" == "RELOADING=1" ]] &&
	[[ "$(messages | sed -n 3p)" == "READY=1|STATUS=upstream up; "* ]]; then
	pass "SIGHUP: RELOADING=1 then READY=1 with STATUS="
else
	fail "SIGHUP did not give RELOADING=1 then READY=1|STATUS=..."
fi
if stop_proxy; then
	pass "nfscached exited 0 on SIGTERM"
else
	fail "nfscached exited $NFSC_PROXY_STATUS on SIGTERM"
fi
# The daemon has exited: its STOPPING=1 is sent, and notify_recv (another
# process, late under load) writes it when it gets to it.
wait_msg '^STOPPING=1' 20 || true
last=$(messages | tail -n 1)
if [[ "$last" == "STOPPING=1|STATUS="* ]] && (($(messages | grep -c '^STOPPING=1') == 1)); then
	pass "the last message: $last"
else
	fail "the last message is '$last', not STOPPING=1 with STATUS="
fi
if (($(messages | grep -c '^READY=1') == 2)) && [[ "$(messages | sed -n 1p)" == READY=1* ]]; then
	pass "READY=1 once at start and once after the reload, nothing before it"
else
	fail "READY=1 not exactly at start and after the reload"
fi

# ---- phase 2: upstream down, start_without_upstream = true
"$NFSC_UPSTREAMCTL" stop
start_proxy
if wait_msg '^READY=1' 15; then
	first=$(messages | head -n 1)
	if [[ "$first" == "READY=1|STATUS=upstream down (1 of 1 export); "* ]]; then
		pass "upstream down: $first"
	else
		fail "with the upstream down the first message is '$first'"
	fi
else
	fail "no READY=1 within 15 s with the upstream down and start_without_upstream"
fi
stop_proxy || fail "nfscached exited $NFSC_PROXY_STATUS on SIGTERM (phase 2)"
# Before phase 3 truncates the file: this instance's last message is in
# (else it could land after the truncation, as phase 3's first).
wait_msg '^STOPPING=1' 20 || fail "no STOPPING=1 from phase 2's nfscached"

# ---- phase 3: upstream down, start_without_upstream = false
write_conf "start_without_upstream = false"
start_proxy
sleep 3
if messages | grep -q '^READY=1'; then
	fail "READY=1 came while the upstream was down and start_without_upstream = false"
else
	pass "no READY=1 for 3 s while the upstream is down"
fi
"$NFSC_UPSTREAMCTL" start
if wait_msg '^READY=1' 20; then
	first=$(messages | head -n 1)
	if [[ "$first" == "READY=1|STATUS=upstream up; "* ]]; then
		pass "READY=1 once the upstream came: $first"
	else
		fail "after the upstream came the first message is '$first'"
	fi
else
	fail "no READY=1 within 20 s of the upstream starting"
fi
stop_proxy || fail "nfscached exited $NFSC_PROXY_STATUS on SIGTERM (phase 3)"

if ((fails)); then
	echo "test_notify: $fails check(s) failed; nfscached's log:" >&2
	tail -n 40 "$log" >&2
	exit 1
fi
echo "test_notify: OK"
