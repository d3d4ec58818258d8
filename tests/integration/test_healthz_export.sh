#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_healthz_export: GET /healthz?export=PATH answers for one export
# (docs/operations.md "Health checks"). The harness's proxy is restarted
# with a second export, "/dead" (id 2), whose upstream is a reserved port
# nothing listens on, beside "/export" on the harness's Ganesha. Then:
#   - /healthz?export=/export: 200 "ok" (its upstream is up), while
#     /healthz (every export) is 503 "upstream down" because of /dead;
#   - /healthz?export=/dead: 503, one line "upstream down[: why]";
#   - /healthz?export=/nope: 404 "no export /nope"; %2F-encoded paths are
#     decoded; a query string without '=' is 400; HEAD gives the headers
#     of the GET (its Content-Length) and no body;
#   - Ganesha stopped: once nfscached_upstream_up{export="/export"} is 0,
#     /healthz?export=/export is 503 "upstream down...";
#   - stale_on_error = 600 set by a reload (SIGHUP): /export, still down,
#     is 200 "ok stale: ..." (cached files are answered from expired
#     state), /nope still 404.
set -euo pipefail
: "${NFSC_PROXY_CONF:?}" "${NFSC_PROXY_PID:?}" "${NFSC_METRICS_ADDR:?}" "${NFSC_LIB:?}"
: "${NFSC_UPSTREAMCTL:?}" "${NFSCACHED_BIN:?}" "${NFSC_TMP:?}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

fails=0
fail() { echo "test_healthz_export: FAILED: $*" >&2; fails=$((fails + 1)); }
pass() { echo "test_healthz_export: ok: $*"; }

conf=$NFSC_PROXY_CONF
dead_port=$(nfsc_free_ports 1)
trap 'nfsc_release_ports "$dead_port"' EXIT
printf 'export "/dead" {\n\tid = 2\n\tupstream = "nfs://127.0.0.1/export?version=3&nfsport=%s&mountport=%s"\n\tclients = {"127.0.0.1/32"}\n}\n' \
	"$dead_port" "$dead_port" >>"$conf"
# The harness's proxy is not this shell's child: stop it by its pid.
kill -TERM "$NFSC_PROXY_PID"
nfsc_wait_gone "$NFSC_PROXY_PID" 600 || { echo "the harness proxy did not stop" >&2; exit 1; }
nfsc_proxy_start "$NFSC_TMP/healthz.log" "$NFSC_PROXY_NFS_PORT" "$NFSC_PROXY_MOUNT_PORT" \
	"$NFSCACHED_BIN" --config "$conf" || exit 1

# GET (or $3) /healthz$1 and check status $2 and that the body matches
# the extended regular expression $4 on exactly one line.
check() {
	local q=$1 want=$2 method=$3 re=$4 code body lines
	code=$(curl -s -X "$method" -o "$NFSC_TMP/body" -w '%{http_code}' --max-time 10 \
		"http://$NFSC_METRICS_ADDR/healthz$q") || true
	body=$(cat "$NFSC_TMP/body" 2>/dev/null || true)
	lines=$(wc -l <"$NFSC_TMP/body" 2>/dev/null || echo 0)
	if [[ "$code" == "$want" && "$lines" == 1 && "$body" =~ $re ]]; then
		pass "$method /healthz$q: $code '$body'"
	else
		fail "$method /healthz$q: $code ($lines lines) '$body', want $want matching /$re/"
	fi
}

# Wait up to 60 s for metric sample $1 to be $2.
wait_metric() {
	local i v
	for ((i = 0; i < 600; i++)); do
		v=$(nfsc_metric "$NFSC_METRICS_ADDR" "$1" 2>/dev/null) || v=
		[[ "$v" == "$2" ]] && return 0
		sleep 0.1
	done
	echo "test_healthz_export: $1 is '$v' after 60 s, want $2" >&2
	return 1
}

wait_metric 'nfscached_upstream_up{export="/export"}' 1 || fail "/export's upstream never came up"
check '?export=/export' 200 GET '^ok$'
check '?export=%2Fexport' 200 GET '^ok$'
check '' 503 GET '^upstream down$'
check '?export=/dead' 503 GET '^upstream down(: .+)?$'
check '?export=/nope' 404 GET '^no export /nope$'
check '?export=/export/' 404 GET '^no export /export/$'
check '?export' 400 GET '^bad query string'
# HEAD: the GET's headers, Content-Length included, and no body.
hdr=$(curl -s -I --max-time 10 "http://$NFSC_METRICS_ADDR/healthz?export=/export" | tr -d '\r')
if [[ "$hdr" == "HTTP/1.1 200 OK"* && "$hdr" == *$'\nContent-Length: 3'* ]]; then
	pass "HEAD /healthz?export=/export: 200, Content-Length 3"
else
	fail "HEAD /healthz?export=/export: '$hdr'"
fi

# The upstream goes away: that export's check turns 503.
"$NFSC_UPSTREAMCTL" stop
wait_metric 'nfscached_upstream_up{export="/export"}' 0 || fail "/export's upstream still up"
check '?export=/export' 503 GET '^upstream down(: .+)?$'
check '?export=/nope' 404 GET '^no export /nope$'

# stale_on_error by reload: a down export is served stale, so healthy.
echo 'stale_on_error = 600' >>"$conf"
ok_before=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_config_reloads_total{result="ok"}') || ok_before=absent
kill -HUP "$NFSC_PROXY_PID"
if wait_metric 'nfscached_config_reloads_total{result="ok"}' $((ok_before + 1)); then
	check '?export=/export' 200 GET '^ok stale: upstream down, cached data served for 600 s past expiry \(stale_on_error\)$'
	check '?export=/nope' 404 GET '^no export /nope$'
else
	fail "the reload adding stale_on_error was not taken; log: $(tail -5 "$NFSC_TMP/healthz.log")"
fi

"$NFSC_UPSTREAMCTL" start || fail "Ganesha did not start again"
nfsc_proxy_stop "$NFSC_PROXY_PID" 60 || fail "the proxy exited $NFSC_PROXY_STATUS"
((fails == 0)) || { echo "test_healthz_export: $fails check(s) failed" >&2; exit 1; }
echo "test_healthz_export: all checks passed"
