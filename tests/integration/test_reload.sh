#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_reload: SIGHUP re-reads the configuration file of the running
# nfscached (harness.sh's, $NFSC_PROXY_CONF). Each step edits the file,
# sends SIGHUP, waits for the daemon's log line, then checks what clients
# see (nfs-ls through the proxy: MOUNT, then NFS) and /metrics:
#
#   1. a broken file (an unknown directive): "reload refused: FILE:LINE:
#      reason" logged, reloads_total{result="refused"} 1, the daemon keeps
#      serving on the old configuration;
#   2. a good file with another client list and acregmax = 7: the proxy's
#      own address is no longer allowed (nfs-ls fails, MNT refused), the
#      acregmax gauge says 7, reloads_total{result="ok"} 1, and the last
#      success timestamp (to the millisecond) falls between the SIGHUP and
#      the log line;
#   3. the client list back: nfs-ls works again; then acregmin = acregmax
#      = 0 makes every READ revalidate attributes upstream, and 60 makes
#      none do (counted on /metrics);
#   4. the export's id changed: refused at the export's line, saying
#      clients' handles carry the id, and the daemon keeps serving (adding,
#      removing and re-pointing exports: test_reload_exports.sh);
#   5. nfs_port changed (fixed at start): the reload goes through, the
#      change is logged as waiting for a restart and the old port serves;
#   6. strict, writeback_delay (changed at once) and max_transfer (fixed
#      at start) in one reload: each is named in the log, numbers whole;
#   7. max_connections changed: logged, and nfscached_connections_max
#      follows it.
# The same daemon process serves throughout.
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_PROXY_LOG:?}"
: "${NFSC_PROXY_URL:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
conf=$NFSC_PROXY_CONF
good=$NFSC_TMP/reload-good.conf
cp "$conf" "$good"

# Record a failed check.
fail() {
	echo "test_reload: FAILED: $*" >&2
	fails=$((fails + 1))
}

# Record a passed check.
pass() {
	echo "test_reload: ok: $*"
}

# Number of lines in the proxy's log matching fixed string $1.
log_count() {
	grep -cF -- "$1" "$NFSC_PROXY_LOG" || true
}

# Send SIGHUP and wait (10 s) for a new log line containing $1. True if seen.
hup_and_wait() {
	local want=$1 before i
	before=$(log_count "$want")
	kill -HUP "$NFSC_PROXY_PID"
	for ((i = 0; i < 100; i++)); do
		(($(log_count "$want") > before)) && return 0
		sleep 0.1
	done
	return 1
}

# Check that metric sample $1 has value $2.
want_metric() {
	local v
	v=$(nfsc_metric "$NFSC_METRICS_ADDR" "$1") || v="(absent)"
	if [[ "$v" == "$2" ]]; then
		pass "$1 = $2"
	else
		fail "$1 is $v, want $2"
	fi
}

# True if a client can list the export through the proxy.
can_list() {
	timeout 20 nfs-ls "$NFSC_PROXY_URL" >/dev/null 2>&1
}

# Check that the proxy serves (or, with $1 = no, refuses) the client.
want_served() {
	if [[ "${1:-yes}" == yes ]]; then
		can_list && pass "$2: the client is served" || fail "$2: the client is not served"
	else
		can_list && fail "$2: the client is still served" || pass "$2: the client is refused"
	fi
}

want_served yes "before any reload"
want_metric 'nfscached_config_reloads_total{result="ok"}' 0

# 1. A broken file.
cp "$good" "$conf"
printf 'no_such_directive = 1\n' >>"$conf"
line=$(wc -l <"$conf")
if hup_and_wait "reload refused: $conf:$line:"; then
	pass "broken file: $(grep -F "reload refused: $conf:$line:" "$NFSC_PROXY_LOG" | tail -n 1)"
else
	fail "broken file: no 'reload refused: $conf:$line: ...' in the log"
fi
want_metric 'nfscached_config_reloads_total{result="refused"}' 1
want_metric 'nfscached_config_last_reload_successful' 0
want_served yes "after the refused reload"

# 2. Another client list and acregmax.
sed -e 's|clients = {"127.0.0.1/32"}|clients = {"10.9.8.0/24"}|' \
	-e 's|secure = false|secure = false\n\tacregmax = 7|' "$good" >"$conf"
grep -q '"10.9.8.0/24"' "$conf" && grep -q 'acregmax = 7' "$conf" ||
	{ echo "test_reload: cannot edit $conf" >&2; exit 1; }
t_hup=$(date +%s.%N)
if hup_and_wait "reloaded $conf"; then
	pass "new client list and acregmax: reloaded"
else
	fail "new client list: no 'reloaded $conf' in the log"
fi
t_done=$(date +%s.%N)
want_metric 'nfscached_config_reloads_total{result="ok"}' 1
# The reload's time, to the millisecond: between the SIGHUP and the log line.
ts=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_config_last_reload_success_timestamp_seconds) || ts=
if [[ "$ts" =~ ^[0-9]+\.[0-9]{3}$ ]] &&
	awk -v a="$t_hup" -v t="$ts" -v b="$t_done" 'BEGIN { exit !(t >= a - 0.001 && t <= b + 0.001) }'; then
	pass "last reload success timestamp $ts, between $t_hup and $t_done"
else
	fail "last reload success timestamp '$ts', want a time with milliseconds between $t_hup and $t_done"
fi
want_metric 'nfscached_config_last_reload_successful' 1
want_metric 'nfscached_config_attr_cache_seconds{export="/export",setting="acregmax"}' 7
want_served no "clients = 10.9.8.0/24"
n=$(log_count 'MNT /export refused for 127.0.0.1')
if ((n >= 1)); then
	pass "MNT refused for 127.0.0.1 (logged)"
else
	fail "no 'MNT /export refused for 127.0.0.1' in the log"
fi

# 3. The client list back.
cp "$good" "$conf"
hup_and_wait "reloaded $conf" || fail "restoring the client list: not reloaded"
want_served yes "clients restored"
want_metric 'nfscached_config_reloads_total{result="ok"}' 2

# 3b. Attribute timeouts take effect: with acregmin = acregmax = 0 every
# READ revalidates the file's attributes (one GETATTR upstream beyond the
# client's own GETATTRs, all forwarded with strict = true); with 60 s none
# does.
head -c 3000000 /dev/urandom >"$NFSC_EXPORT_DIR/reload-ac.bin"
ac_url=$(nfsc_url_join "$NFSC_PROXY_URL" reload-ac.bin)
nfs-cat "$ac_url" >/dev/null
for ac in 0 60; do
	sed -e "s|secure = false|secure = false\n\tstrict = true\n\tacregmin = $ac\n\tacregmax = $ac|" "$good" >"$conf"
	hup_and_wait "reloaded $conf" || fail "acregmin = acregmax = $ac: not reloaded"
	for s in 0 1; do
		snap[s]=$(for x in 'nfscached_upstream_rpcs_total{procedure="getattr"}' \
			'nfscached_client_rpcs_total{program="nfs3",procedure="getattr"}' \
			'nfscached_client_rpcs_total{program="nfs3",procedure="read"}'; do
			nfsc_metric "$NFSC_METRICS_ADDR" "$x"; done | tr '\n' ' ')
		((s == 0)) && nfs-cat "$ac_url" >/dev/null
	done
	read -r ug0 cg0 rd0 <<<"${snap[0]}"
	read -r ug1 cg1 rd1 <<<"${snap[1]}"
	extra=$(((ug1 - ug0) - (cg1 - cg0)))
	reads=$((rd1 - rd0))
	want=$((ac == 0 ? reads : 0))
	if ((reads > 0 && extra == want)); then
		pass "acregmax = $ac: $reads READs, $extra GETATTRs of the proxy's own"
	else
		fail "acregmax = $ac: $reads READs, $extra GETATTRs of the proxy's own, want $want"
	fi
done
cp "$good" "$conf"
hup_and_wait "reloaded $conf" || fail "restoring the attribute timeouts: not reloaded"

# 4. The export's id changed (clients' handles carry it): refused.
sed -e 's|^\tid = 1$|\tid = 2|' "$good" >"$conf"
grep -q '^	id = 2$' "$conf" || { echo "test_reload: cannot edit $conf" >&2; exit 1; }
if hup_and_wait "id changed from 1 to 2"; then
	msg=$(grep -F "id changed from 1 to 2" "$NFSC_PROXY_LOG" | tail -n 1)
	xline=$(grep -n '^export "/export"' "$conf" | head -n 1 | cut -d: -f1)
	[[ "$msg" == *"reload refused: $conf:$xline: "*"handles carry the id"* ]] &&
		pass "changed id: $msg" || fail "changed id logged as '$msg'"
else
	fail "changed id: no refusal in the log"
fi
want_metric 'nfscached_config_reloads_total{result="refused"}' 2
want_served yes "after the refused id change"

# 5. A directive fixed at start.
sed -e "s|^nfs_port = $NFSC_PROXY_NFS_PORT|nfs_port = $((NFSC_PROXY_NFS_PORT + 1))|" "$good" >"$conf"
if hup_and_wait "reload: nfs_port changed from $NFSC_PROXY_NFS_PORT"; then
	pass "nfs_port change logged as waiting for a restart"
else
	fail "nfs_port change: no warning in the log"
fi
want_metric 'nfscached_config_reloads_total{result="ok"}' 6
want_served yes "after the nfs_port change (old port)"
cp "$good" "$conf"

# 6. Settings that change at once are named in the log; a number fixed at
# start is printed whole (not 1.04858e+06).
{
	sed -e 's|secure = false|secure = false\n\tstrict = true|' "$good"
	printf 'writeback_delay = 7\nmax_transfer = 65536\n'
} >"$conf"
if hup_and_wait "reloaded $conf"; then
	for want in 'reload: new writeback_delay 7 (was ' \
		'reload: export "/export": new strict' \
		'reload: max_transfer changed from 1048576 to 65536: keeping 1048576'; do
		if (($(log_count "$want") == 1)); then
			pass "logged: $want"
		else
			fail "no '$want' in the log"
		fi
	done
else
	fail "strict, writeback_delay and max_transfer: not reloaded"
fi
cp "$good" "$conf"

# 7. max_connections changes at once, and its gauge follows.
printf 'max_connections = 37\n' >>"$conf"
if hup_and_wait "reload: new max_connections 37"; then
	want_metric 'nfscached_connections_max' 37
else
	fail "max_connections = 37: not reloaded"
fi
cp "$good" "$conf"
hup_and_wait "reloaded $conf" || fail "restoring max_connections: not reloaded"

if kill -0 "$NFSC_PROXY_PID" 2>/dev/null; then
	pass "the same nfscached process (pid $NFSC_PROXY_PID) served throughout"
else
	fail "nfscached (pid $NFSC_PROXY_PID) is gone"
fi
if ((fails)); then
	echo "test_reload: $fails check(s) failed" >&2
	exit 1
fi
echo "test_reload: OK"
