#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Profile nfscached's READ hit path (issue 42): the benchmark's W1 read
# phase (random 1 KiB READs of blocks written in this run, 16 in flight,
# no delay) against a daemon run under a profiler, so that the cost per
# cached READ can be counted.
#
#   bench/hitprof.sh BUILD OUTDIR [callgrind|perf|cpu] [READS]
#   HITPROF_WORK=miss bench/hitprof.sh ...
#
# HITPROF_WORK=miss profiles the miss path instead: the benchmark's W4
# (cold sequential 64 KiB READs of a 256 MiB file, 16 in flight, no
# delay), every READ a miss or a readahead fill; READS counts 64 KiB
# READs for callgrind (default 2048: 128 MiB). Per MiB of miss = the
# phase's cost / (READS / 16). HITPROF_FILL=1 reads the whole file once
# before the measured phase (with HITPROF_CACHE_MIB=128, a cache half the
# file, the measured pass then misses on a pool already faulted in);
# HITPROF_CACHE_MIB sets cache_size (default 512 for miss, 256 for hit);
# HITPROF_CONF adds lines to the daemon's configuration (for example
# "cache_preallocate = true").
#
# callgrind (the default): nfscached runs under valgrind --tool=callgrind;
# its counters are zeroed when the read phase starts and dumped when it
# ends (loadgen's snap hook), so OUTDIR/callgrind.out.PID.1 holds the read
# phase alone: READS cached READs (default 20000), every one a hit
# (OUTDIR/reads.txt has the daemon's READ counters before and after).
# Instructions are a count, not a time: repeatable on a shared machine.
# Instructions per READ = the dump's total Ir / READS.
# perf: nfscached runs natively and `perf record -g` samples it during a
# timed read phase of 5 s (OUTDIR/perf.data). cpu: natively, unprofiled,
# for 5 s. In every mode OUTDIR/cpu.txt gets the daemon's CPU ticks at
# the phase's start and end, "LABEL TOTAL UTIME STIME" (/proc/PID/stat;
# stime is the kernel's share: on loopback about half of a cached READ's
# CPU, the TCP send and receive): a time, so only a rough figure on a
# shared machine.
#
# Everything runs on 127.0.0.1 with ports from scripts/lib.sh.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: hitprof.sh BUILD OUTDIR [callgrind|perf] [READS]}" && pwd)
out=${2:?usage: hitprof.sh BUILD OUTDIR [callgrind|perf] [READS]}
mode=${3:-callgrind}
work=${HITPROF_WORK:-hit}
if [[ $work == miss ]]; then reads=${4:-2048}; else reads=${4:-20000}; fi
mkdir -p "$out" && out=$(cd "$out" && pwd)
# shellcheck source=../scripts/lib.sh
. "$root/scripts/lib.sh"

x=$(mktemp -d "${TMPDIR:-/tmp}/hitprof.XXXXXX")
read -r up_nfs up_mnt p_nfs p_mnt metrics < <(nfsc_free_ports 5)
ports=("$up_nfs" "$up_mnt" "$p_nfs" "$p_mnt" "$metrics")
proxy=
cleanup() {
	[[ -z "$proxy" ]] || nfsc_proxy_stop "$proxy" 60 || true
	nfsc_ganesha_stop "$x/up" || true
	nfsc_release_ports "${ports[@]}"
	rm -rf "$x"
}
trap cleanup EXIT

nfsc_ensure_rpcbind || exit 1
mkdir -p "$x/up" "$x/export" "$x/state"
if [[ $work == miss ]]; then
	"$build/bench/loadgen" --gen "$x/export/w4" --size 256M --base pat:14 || exit 1
else
	"$build/bench/loadgen" --gen "$x/export/w1" --size 64M --base pat:11 || exit 1
fi
nfsc_ganesha_start "$x/up" "$x/export" "$up_nfs" "$up_mnt" || exit 1
if [[ $work == miss ]]; then cache_mib=${HITPROF_CACHE_MIB:-512}; else cache_mib=${HITPROF_CACHE_MIB:-256}; fi
printf 'page_size = 65536\ncache_size = %s\n%s\n' "$cache_mib" "${HITPROF_CONF:-}" >"$x/extra"
nfsc_proxy_config "$p_nfs" "$p_mnt" "127.0.0.1:$metrics" "$x/state" \
	"nfs://127.0.0.1/export?nfsport=$up_nfs&mountport=$up_mnt" "$x/extra" \
	>"$x/nfscached.conf" || exit 1

# The hook loadgen runs at each snap: zero the counters as the read phase
# starts, dump them as it ends (or start and stop perf).
cat >"$x/hook.sh" <<EOF
#!/usr/bin/env bash
reads() { curl -s "http://127.0.0.1:$metrics/metrics" | grep -E '^nfscached_reads_total|^nfscached_upstream_.*(READ|read)' >>"$out/reads.txt"; }
cpu() { awk -v l="\$1" '{ print l, \$14 + \$15, \$14, \$15 }' /proc/\$(cat "$x/pid")/stat >>"$out/cpu.txt"; }
case \$1 in
r0)	echo "before:" >"$out/reads.txt"; reads; : >"$out/cpu.txt"; cpu r0
	if [[ $mode == callgrind ]]; then callgrind_control -z \$(cat "$x/pid") >/dev/null
	elif [[ $mode == perf ]]; then perf record -g -o "$out/perf.data" -p \$(cat "$x/pid") >"$x/perf.log" 2>&1 & echo \$! >"$x/perfpid"; sleep 1
	fi ;;
r1)	cpu r1
	if [[ $mode == callgrind ]]; then callgrind_control -d r1 \$(cat "$x/pid") >/dev/null
	elif [[ $mode == perf ]]; then kill -INT \$(cat "$x/perfpid"); while kill -0 \$(cat "$x/perfpid") 2>/dev/null; do sleep 0.2; done
	fi
	echo "after:" >>"$out/reads.txt"; reads ;;
esac
EOF
chmod +x "$x/hook.sh"

rm -f "$out"/callgrind.out.*
if [[ "$mode" == callgrind ]]; then
	nfsc_proxy_start "$out/nfscached.log" "$p_nfs" "$p_mnt" /usr/bin/valgrind \
		--tool=callgrind --callgrind-out-file="$out/callgrind.out.%p" \
		"$build/daemon/nfscached" --config "$x/nfscached.conf" || exit 1
	phase="read,label=w1read,bs=1K,pattern=written,qd=16,count=$reads,timeout=600"
else
	nfsc_proxy_start "$out/nfscached.log" "$p_nfs" "$p_mnt" \
		"$build/daemon/nfscached" --config "$x/nfscached.conf" || exit 1
	phase="read,label=w1read,bs=1K,pattern=written,qd=16,time=5,timeout=60"
fi
proxy=$NFSC_PROXY_PID
echo "$proxy" >"$x/pid"
# With cache_preallocate, start once the pool has stopped growing.
if [[ "${HITPROF_CONF:-}" == *cache_preallocate*true* ]]; then
	echo "page pool preallocated: $(nfsc_pool_wait "127.0.0.1:$metrics") bytes"
fi
url="nfs://127.0.0.1/export?version=3&nfsport=$p_nfs&mountport=$p_mnt"
if [[ $work == miss ]]; then
	if [[ "$mode" == callgrind ]]; then
		phase="read,label=w4,bs=64K,pattern=seq,qd=16,count=$reads,timeout=600"
	else
		phase="read,label=w4,bs=64K,pattern=seq,qd=16,time=5,timeout=60"
	fi
	"$build/bench/loadgen" --url "$url" --hook "$x/hook.sh" \
		open,file=w4,base=pat:14 ${HITPROF_FILL:+"read,label=fill,bs=64K,pattern=seq,qd=16,count=4096,timeout=600"} \
		snap,label=r0 "$phase" snap,label=r1 \
		>"$out/loadgen.jsonl" || {
		echo "loadgen failed" >&2
		exit 1
	}
	cat "$out/reads.txt"
	exit 0
fi
"$build/bench/loadgen" --url "$url" --hook "$x/hook.sh" \
	open,file=w1,base=pat:11 \
	"write,label=w1write,bs=1K,pattern=rand,qd=16,count=20000,timeout=600" \
	commit,timeout=600 \
	"read,label=warm,bs=1K,pattern=written,qd=16,count=2000,timeout=600" \
	snap,label=r0 "$phase" snap,label=r1 >"$out/loadgen.jsonl" || {
	echo "loadgen failed" >&2
	exit 1
}
cat "$out/reads.txt"
