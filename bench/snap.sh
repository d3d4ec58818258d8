#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The load generator's hook: record every counter of the running cell under
# a label, so that bench/report.py can subtract one label from another.
#   bench/snap.sh LABEL
# writes $BENCH_SNAPDIR/LABEL.snap, one fact a line:
#   time SECONDS                    CLOCK_REALTIME, for the record
#   host BUSY TOTAL                 the machine's CPU seconds, all CPUs
#                                   (/proc/stat): busy (user, nice,
#                                   system, irq, softirq, steal) and
#                                   in all (busy, idle, iowait)
#   proc NAME UTIME STIME HWM RSS   /proc/PID: CPU seconds, peak and
#                                   current RSS in KiB, for each NAME:PID
#                                   in $BENCH_PIDS
#   v3 PROC COUNT                   the upstream Ganesha's NFSv3 calls
#   v4 OP COUNT                     its NFSv4 operations
#                                   (D-Bus GetFULLV3Stats/GetFULLV4Stats on
#                                   the private bus, name prefix
#                                   $BENCH_UP_DBUS)
#   m SAMPLE VALUE                  nfscached's /metrics at $BENCH_METRICS
set -uo pipefail

label=${1:?usage: snap.sh LABEL}
out="${BENCH_SNAPDIR:?}/$label.snap"
tmp="$out.tmp"
ticks=$(getconf CLK_TCK)

{
	printf 'time %s\n' "$(date +%s.%N)"
	awk -v t="$ticks" '$1 == "cpu" { b = $2 + $3 + $4 + $7 + $8 + $9
		printf "host %.2f %.2f\n", b / t, (b + $5 + $6) / t; exit }' /proc/stat
	for np in ${BENCH_PIDS:-}; do
		name=${np%%:*} pid=${np#*:}
		[[ -r /proc/$pid/stat ]] || continue
		# Fields 14 and 15 of /proc/PID/stat, after the ")" of comm.
		read -r ut st < <(sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12, $13 }')
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
		awk -v n="$name" -v u="$ut" -v s="$st" -v t="$ticks" -v h="$hwm" -v r="$rss" \
			'BEGIN { printf "proc %s %.2f %.2f %s %s\n", n, u / t, s / t, h, r }'
	done
	if [[ -n "${BENCH_UP_DBUS:-}" ]]; then
		for v in 3 4; do
			dbus-send --system --print-reply --reply-timeout=5000 \
				--dest="$BENCH_UP_DBUS.org.ganesha.nfsd" /org/ganesha/nfsd/ExportMgr \
				"org.ganesha.nfsd.exportstats.GetFULLV${v}Stats" 2>/dev/null |
				awk -v v="$v" '
				/string "/ { split($0, a, "\""); name = a[2]; next }
				/uint64/ && name != "" { print "v" v, name, $2; name = ""; next }
				{ name = "" }'
		done
	fi
	if [[ -n "${BENCH_METRICS:-}" ]]; then
		curl -sf --max-time 10 "http://$BENCH_METRICS/metrics" |
			awk '!/^#/ && NF == 2 { print "m", $1, $2 }'
	fi
} >"$tmp"
mv "$tmp" "$out"
