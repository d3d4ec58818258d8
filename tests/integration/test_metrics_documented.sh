#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every metric family nfscached exports is documented in docs/metrics.md:
# scrape /metrics from the harness's proxy and look each "# TYPE" name up.
# Also: HEAD /metrics and HEAD /healthz answer 200 with a Content-Length and
# no body (RFC 9110 s9.3.2), both as text/plain, and POST gets 501. Runs
# under harness.sh.
set -euo pipefail
: "${NFSC_METRICS_ADDR:?run under harness.sh}"
doc="$(dirname "${BASH_SOURCE[0]}")/../../docs/metrics.md"
names=$(curl -sf "http://$NFSC_METRICS_ADDR/metrics" | awk '$1 == "#" && $2 == "TYPE" { print $3 }')
n=0 missing=0
for name in $names; do
	n=$((n + 1))
	if ! grep -q "\`$name\`" "$doc"; then
		echo "metric $name is not documented in docs/metrics.md"
		missing=$((missing + 1))
	fi
done
echo "$n metric families exported, $missing undocumented"
[ "$n" -gt 50 ] && [ "$missing" -eq 0 ] || exit 1

# The process_* families hold the daemon's own live values (procstat.c):
# resident memory and open descriptors above 0 and at most what /proc says
# of NFSC_PROXY_PID now (give or take a few MiB and fds), a start time
# within the last day and not in the future, CPU seconds between what
# /proc says of it just before and just after the scrape (a fast start may
# have used less than one clock tick: 0 is then the right value).
: "${NFSC_PROXY_PID:?}"
# The process's user + system CPU seconds from /proc/PID/stat.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.6f\n", ($12 + $13) / hz }' \
		"/proc/$NFSC_PROXY_PID/stat"
}
cpu0=$(proc_cpu)
page=$(curl -sf "http://$NFSC_METRICS_ADDR/metrics")
cpu1=$(proc_cpu)
pval() { awk -v n="$1" '$1 == n { print $2 }' <<<"$page"; }
rss=$(pval process_resident_memory_bytes)
fds=$(pval process_open_fds)
start=$(pval process_start_time_seconds)
cpu=$(pval process_cpu_seconds_total)
proc_rss=$(($(awk '/^VmRSS:/ { print $2 }' "/proc/$NFSC_PROXY_PID/status") * 1024))
proc_fds=$(find "/proc/$NFSC_PROXY_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
now=$(date +%s)
echo "process_*: rss $rss (/proc $proc_rss), fds $fds (/proc $proc_fds), start $start (now $now), cpu $cpu"
awk -v r="$rss" -v p="$proc_rss" 'BEGIN { exit !(r > 0 && r < p + 16777216 && r > p - 16777216) }' ||
	{ echo "process_resident_memory_bytes $rss, /proc says $proc_rss"; exit 1; }
awk -v f="$fds" -v p="$proc_fds" 'BEGIN { exit !(f > 0 && f <= p + 8 && f >= p - 8) }' ||
	{ echo "process_open_fds $fds, /proc says $proc_fds"; exit 1; }
awk -v s="$start" -v n="$now" 'BEGIN { exit !(s > n - 86400 && s <= n + 1) }' ||
	{ echo "process_start_time_seconds $start, now $now"; exit 1; }
awk -v c="$cpu" -v a="$cpu0" -v b="$cpu1" 'BEGIN { exit !(c >= a && c <= b) }' ||
	{ echo "process_cpu_seconds_total $cpu, /proc says $cpu0 before and $cpu1 after"; exit 1; }

# Send "HEAD $1 HTTP/1.0" over a raw socket (curl would not read a body
# after a HEAD) and print the whole response, which ends when the server
# closes the connection.
head_raw() {
	local host=${NFSC_METRICS_ADDR%:*} port=${NFSC_METRICS_ADDR##*:}
	exec 3<>"/dev/tcp/$host/$port"
	printf 'HEAD %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$NFSC_METRICS_ADDR" >&3
	timeout 10 cat <&3
	exec 3<&-
}
for path in /metrics /healthz; do
	resp=$(head_raw "$path" | od -An -v -tx1 | tr -d ' \n')
	# Headers end at the first CR LF CR LF; nothing may follow it.
	hdr=${resp%%0d0a0d0a*}
	[[ "$hdr" != "$resp" ]] || { echo "HEAD $path: no end of headers"; exit 1; }
	body_hex=${resp#"$hdr"0d0a0d0a}
	text=$(printf '%s' "$hdr" | sed 's/../\\x&/g')
	text=$(printf '%b' "$text" | tr -d '\r')
	echo "HEAD $path: $(head -1 <<<"$text"), $((${#body_hex} / 2)) body bytes"
	grep -q '^HTTP/1\.[01] 200 ' <<<"$text" || { echo "HEAD $path: not 200"; exit 1; }
	grep -qi '^Content-Length: [1-9][0-9]*$' <<<"$text" ||
		{ echo "HEAD $path: no Content-Length of the GET body"; exit 1; }
	[[ -z "$body_hex" ]] || { echo "HEAD $path: a body of $((${#body_hex} / 2)) bytes"; exit 1; }
	grep -qi '^Content-Type: text/plain' <<<"$text" ||
		{ echo "HEAD $path: not text/plain: $(grep -i '^Content-Type' <<<"$text")"; exit 1; }
done
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 10 "http://$NFSC_METRICS_ADDR/metrics") || true
echo "POST /metrics: $code"
[[ "$code" == 501 ]] || { echo "POST /metrics: $code, not 501"; exit 1; }
# The test clock (docs/operations.md) is off here: advancing it is refused.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 10 \
	"http://$NFSC_METRICS_ADDR/debug/clock/advance?seconds=5") || true
echo "POST /debug/clock/advance (test clock off): $code"
[[ "$code" == 501 ]] || { echo "POST /debug/clock/advance: $code, not 501"; exit 1; }
# Nor is the disk tier's test gate there (docs/operations.md, "Test clock").
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 10 \
	"http://$NFSC_METRICS_ADDR/debug/disk/gate?action=close") || true
echo "POST /debug/disk/gate (test clock off): $code"
[[ "$code" == 501 ]] || { echo "POST /debug/disk/gate: $code, not 501"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	"http://$NFSC_METRICS_ADDR/debug/disk/gate") || true
echo "GET /debug/disk/gate (test clock off): $code"
[[ "$code" == 404 ]] || { echo "GET /debug/disk/gate: $code, not 404"; exit 1; }
