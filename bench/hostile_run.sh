#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The body of bench/hostile.sh, run under tests/integration/harness.sh
# (NFSC_* variables). See bench/hostile.sh.
set -euo pipefail
: "${NFSC_PROXY_PID:?run under harness.sh}" "${BENCH_LOADGEN:?}" "${BENCH_HOSTILE_OUT:?}"
pid=$NFSC_PROXY_PID
metric() { curl -sf "http://$NFSC_METRICS_ADDR/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
fds() { ls "/proc/$pid/fd" | wc -l; }
kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$pid/status"; }

# ---- load: 64 clients x 64 in flight, verified ----
tmp=$NFSC_TMP/load
mkdir -p "$tmp"
peak_fds=0
start=$(date +%s.%N)
lpids=()
for i in $(seq 1 64); do
	"$BENCH_LOADGEN" --url "$NFSC_PROXY_URL" \
		"open,file=load$i,create=1,size=4194304,base=zero" \
		"rw,bs=4096,pattern=rand,qd=64,time=$LOAD_SECS,warmup=2,rmix=1,wmix=1" \
		"commit,timeout=60" >"$tmp/$i.jsonl" 2>"$tmp/$i.err" &
	lpids+=($!)
done
while (($(jobs -rp | wc -l) > 0)); do
	n=$(fds); ((n > peak_fds)) && peak_fds=$n
	sleep 0.5
done
rc=0
for p in "${lpids[@]}"; do wait "$p" || rc=$((rc + 1)); done
python3 - "$tmp" "$rc" "$peak_fds" "$(kib VmHWM)" "$(fds)" "$BENCH_HOSTILE_OUT" <<'PY'
import json, os, sys
d, failed, peak_fds, hwm, fds_after, out = sys.argv[1:7]
ops = errors = vfail = commits_to = 0
for f in os.listdir(d):
    if not f.endswith('.jsonl'):
        continue
    for line in open(os.path.join(d, f)):
        j = json.loads(line)
        if j['phase'] == 'rw':
            ops += j['ops_s']
            errors += j['errors']
            vfail += j['verify_fail']
        if j['phase'] == 'commit' and j['timed_out']:
            commits_to += 1
r = {'run': 'load', 'clients': 64, 'qd': 64, 'ops_s': round(ops, 1),
     'errors': errors, 'verify_fail': vfail, 'loadgen_failed': int(failed),
     'commit_timeouts': commits_to, 'proxy_peak_rss_mib': round(int(hwm) / 1024, 1),
     'cache_size_mib': 64, 'peak_fds': int(peak_fds), 'fds_after': int(fds_after)}
print(json.dumps(r))
open(out, 'a').write(json.dumps(r) + '\n')
PY

# ---- stalled: 500 stalled in a record, 100 trickling, one normal client ----
python3 "$(dirname "${BASH_SOURCE[0]}")/hostile_stalled.py" "$NFSC_PROXY_NFS_PORT" "$pid" \
	"$NFSC_METRICS_ADDR" "$BENCH_HOSTILE_OUT"
