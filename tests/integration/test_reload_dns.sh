#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_reload_dns: a SIGHUP whose configuration names a client host the
# resolver does not answer for does not stop the daemon (issue 39, item
# 2). harness.sh runs nfscached with --proxy-resolv-conf
# resolv_hold.conf: its resolver is dns_hold.py on 127.0.0.77, which
# holds every query until the test releases it. The test checks order,
# never time:
#
#   1. the edited file (clients += "held.nfscached.test") and SIGHUP: the
#      resolver receives the lookup and holds it;
#   2. while it is held (no answer sent, no "reloaded" logged): a READ
#      through the proxy returns the file's bytes, GET /metrics answers,
#      and a second SIGHUP is logged as waiting for the read out;
#   3. released (NXDOMAIN): the reload completes with the name's warning,
#      then the second SIGHUP's read too: reloads_total{result="ok"} 2;
#   4. held again, a reload adds an export whose upstream is a host name
#      (evdns asks it in mixed case, 0x20 randomization):
#      the reload completes (the upstream connects in the background, its
#      name looked up by evdns), the lookup reaches the resolver and is
#      held, and meanwhile the first export's READs and /metrics are
#      answered; released, the new export's upstream is still down (the
#      name does not resolve) and the first export serves on;
#   5. held again, SIGHUP then SIGTERM: the daemon stops while the read
#      is out (the read is left behind, its worker frees it), logs
#      "stopped", and no reload is applied after "stopping"
#      (harness.sh --proxy-may-exit). (A stop that lasts past the
#      release, with bytes to write back, drops the read's result:
#      reload_read's d->stopping; not staged here.)
set -euo pipefail

: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_PROXY_LOG:?}"
: "${NFSC_PROXY_URL:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"
here=$(cd "$(dirname "$0")" && pwd)

fails=0
fail() { echo "test_reload_dns: FAILED: $*" >&2; fails=$((fails + 1)); }
pass() { echo "test_reload_dns: ok: $*"; }
log_count() { grep -cF -- "$1" "$NFSC_PROXY_LOG" || true; }

# Wait (a hang guard of 120 s, not a timing) until command "$@" is true.
wait_for() {
	local i
	for ((i = 0; i < 1200; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
file_at_least() { [[ -s "$1" ]] && (($(cat "$1") >= $2)); }
logged_at_least() { (($(log_count "$1") >= $2)); }

dns=$NFSC_TMP/dns
mkdir -p "$dns"
python3 "$here/dns_hold.py" 127.0.0.77 "$dns" &
dns_pid=$!
trap 'kill "$dns_pid" 2>/dev/null || true' EXIT
wait_for test -e "$dns/ready" || { echo "dns_hold.py did not start" >&2; exit 1; }

head -c 100000 /dev/urandom >"$NFSC_EXPORT_DIR/held.bin"
url=$(nfsc_url_join "$NFSC_PROXY_URL" held.bin)
read_ok() {
	timeout 60 nfs-cat "$url" 2>/dev/null | cmp -s - "$NFSC_EXPORT_DIR/held.bin"
}
read_ok && pass "READ before the reload" || fail "READ before the reload"

# 1. A client entry whose name the resolver holds.
conf=$NFSC_PROXY_CONF
sed -i 's|clients = {"127.0.0.1/32"}|clients = {"127.0.0.1/32", "held.nfscached.test"}|' "$conf"
grep -q 'held.nfscached.test' "$conf" || { echo "cannot edit $conf" >&2; exit 1; }
kill -HUP "$NFSC_PROXY_PID"
if wait_for file_at_least "$dns/queries" 1 &&
	grep -qix 'held.nfscached.test' "$dns/names"; then
	pass "the reload's lookup reached the resolver ($(cat "$dns/queries") queries) and is held"
else
	fail "no lookup of held.nfscached.test reached the resolver"
fi

# 2. Served while the lookup is held.
read_ok && pass "READ answered while the lookup is held" ||
	fail "READ not answered while the lookup is held"
v=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_config_reloads_total{result="ok"}') || v=
[[ "$v" == 0 ]] && pass "GET /metrics answered while held (reloads ok: 0)" ||
	fail "GET /metrics while held: reloads ok '$v', want 0"
kill -HUP "$NFSC_PROXY_PID"
wait_for logged_at_least "is still out" 1 &&
	pass "a second SIGHUP waits for the read out" ||
	fail "no 'still out' line for the second SIGHUP"
if [[ ! -e "$dns/answered" ]] && (($(log_count "reloaded $conf") == 0)); then
	pass "all of it while the lookup was still held"
else
	fail "the lookup was answered, or the reload done, before the checks"
fi

# 3. Released: both reloads complete.
touch "$dns/release"
if wait_for logged_at_least "reloaded $conf" 2; then
	pass "released: the reload and the second SIGHUP's completed"
else
	fail "released: $(log_count "reloaded $conf") reloads logged, want 2"
fi
logged_at_least 'clients entry "held.nfscached.test"' 1 &&
	pass "the name that did not resolve is named in the log" ||
	fail "no warning naming held.nfscached.test"
v=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_config_reloads_total{result="ok"}') || v=
[[ "$v" == 2 ]] && pass "reloads_total{result=\"ok\"} = 2" ||
	fail "reloads_total{result=\"ok\"} is '$v', want 2"
read_ok && pass "READ after the reloads" || fail "READ after the reloads"

# 4. Another export whose upstream's name the resolver holds (the client
# list back to addresses only: this reload's read looks nothing up).
rm -f "$dns/release"
q0=$(cat "$dns/queries")
sed -i 's|clients = {"127.0.0.1/32", "held.nfscached.test"}|clients = {"127.0.0.1/32"}|' "$conf"
cat >>"$conf" <<EOC
export "/held" {
	id = 2
	upstream = "nfs://held-upstream.nfscached.test/export"
	clients = {"127.0.0.1/32"}
}
EOC
kill -HUP "$NFSC_PROXY_PID"
wait_for logged_at_least "reloaded $conf" 3 &&
	pass "an export with a held upstream name added" ||
	fail "the reload adding /held did not complete"
if wait_for file_at_least "$dns/queries" $((q0 + 1)) &&
	tail -n +$((q0 + 1)) "$dns/names" | grep -qix 'held-upstream.nfscached.test'; then
	pass "the upstream's lookup reached the resolver and is held"
else
	fail "no lookup of held-upstream.nfscached.test reached the resolver ($(tail -n +$((q0 + 1)) "$dns/names" | tr '\n' ' '))"
fi
read_ok && pass "the first export's READ answered while the upstream lookup is held" ||
	fail "the first export's READ not answered while the upstream lookup is held"
v=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_up{export="/held"}') || v=
[[ "$v" == 0 ]] && pass "GET /metrics answered while held (/held's upstream up: 0)" ||
	fail "GET /metrics while the upstream lookup is held: /held up '$v', want 0"
a0=$(cat "$dns/answered")
[[ "$(cat "$dns/queries")" -gt "$q0" && "$a0" -lt "$(cat "$dns/queries")" ]] &&
	pass "all of it while the upstream lookup was still held" ||
	fail "the upstream lookup was answered before the checks"
touch "$dns/release"
wait_for file_at_least "$dns/answered" $((a0 + 1)) &&
	pass "released: the upstream lookup answered NXDOMAIN" ||
	fail "released: the upstream lookup was not answered"
read_ok && pass "the first export serves on" || fail "the first export after the release"

# 5. A read out when SIGTERM comes.
rm -f "$dns/release"
q0=$(cat "$dns/queries")
sed -i 's|clients = {"127.0.0.1/32"}|clients = {"127.0.0.1/32", "held2.nfscached.test"}|' "$conf"
kill -HUP "$NFSC_PROXY_PID"
wait_for file_at_least "$dns/queries" $((q0 + 1)) ||
	fail "the last reload's lookup did not reach the resolver"
kill -TERM "$NFSC_PROXY_PID"
wait_for logged_at_least "signal 15: stopping" 1 || fail "no 'stopping' after SIGTERM"
touch "$dns/release"
proxy_gone() { ! nfsc_pid_alive "$NFSC_PROXY_PID"; }
if wait_for logged_at_least "nfscached: info: stopped" 1 && wait_for proxy_gone; then
	pass "stopped with a reload read out, and exited"
else
	fail "not stopped and gone after SIGTERM with a reload read out"
fi
after=$(sed -n '/signal 15: stopping/,$p' "$NFSC_PROXY_LOG")
if grep -q "reloaded $conf" <<<"$after"; then
	fail "a reload applied after SIGTERM: $(grep "reloaded $conf" <<<"$after")"
else
	pass "no reload applied after SIGTERM"
fi

((fails == 0)) || { echo "test_reload_dns: $fails checks failed" >&2; exit 1; }
echo "test_reload_dns: all checks passed"
