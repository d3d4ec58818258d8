#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The benchmark: install what it needs, build a Release tree, run every
# cell, and write docs/benchmarks.md with its plots (docs/bench-*.png).
#
#   bench/run.sh [--no-deps] [--quick] [--only REGEX] [--report-only DIR]
#
# --no-deps      skip bench/setup.sh (the apt-get step)
# --quick        every time box x0.2 (a smoke run; do not commit its report)
# --only REGEX   run only the cells whose id matches (e.g. 'W1-.*-2ms')
# --report-only DIR   rebuild the report from the raw results in DIR
#
# Environment: BENCH_BUILD_DIR (default build-bench), BENCH_OUT (default
# docs), BENCH_SCALE (multiplies every time box).
#
# A cell is one workload on one path at one delay and one number of calls
# in flight, started fresh: a new upstream Ganesha (FSAL VFS on a new
# directory, NFSv3 and v4 counters on a private D-Bus), the delay relay in
# front of it, and the path under test:
#   direct     client -> relay -> Ganesha
#   nfscached  client -> nfscached -> relay -> Ganesha
#   peer       client -> Ganesha FSAL PROXY_V4 -> relay (NFSv4.1) -> Ganesha
#   local      nfscached with a cache_dir on the build directory's disk and
#              commit = "local" (issue 18): COMMITs answered from cache_dir
# The load generator (bench/loadgen.c) runs the workload's phases and calls
# bench/snap.sh around each measured phase to record the counters; raw
# results stay in $BENCH_BUILD_DIR/bench-results, bench/report.py turns
# them into the report. Budget: 15 minutes on 2 cores (6 to 11 seen).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

deps=1 scale=${BENCH_SCALE:-1} only='' report_only=''
while (($#)); do
	case $1 in
	--no-deps) deps=0 ;;
	--quick) scale=$(awk -v s="$scale" 'BEGIN { print s * 0.2 }') ;;
	--only) only=${2:?--only needs a regex}; shift ;;
	--report-only) report_only=${2:?--report-only needs a directory}; shift ;;
	-h|--help) sed -n '3,30p' "$0"; exit 0 ;;
	*) echo "bench: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

build=${BENCH_BUILD_DIR:-$root/build-bench}
outdir=${BENCH_OUT:-$root/docs}
say() { printf 'bench: %s\n' "$*" >&2; }

if [[ -n "$report_only" ]]; then
	exec python3 "$root/bench/report.py" --results "$report_only" --out "$outdir" --root "$root"
fi

start_time=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
((deps)) && "$root/bench/setup.sh"

say "building Release in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
cmake --build "$build" --target nfscached delayrelay loadgen -j"$(nproc)" >/dev/null
# The kernel client's row (K1) boots tests/kernel/vm.sh's guest; its kernel
# and initramfs are kept here.
kvm_home=$build/kernel-vm
nfscached=$build/daemon/nfscached
relay=$build/tests/tools/delayrelay
loadgen=$build/bench/loadgen

# ------------------------------------------------------------ settings

page_default=65536
cache_mib=256		# nfscached cache_size for every cell
t() { awk -v a="$1" -v s="$scale" 'BEGIN { printf "%.2f", a * s }'; }
T_W1=$(t 2.5) T_W2=$(t 5) T_W3=$(t 4) T_W4=$(t 4) T_W5R=$(t 5) T_W5S=$(t 3)
T_W6=$(t 4) T_W6B=$(t 4) T_W9=$(t 8) WARM=$(t 0.5) T_K1=$(t 20)
T_W8=$(t 6) T_W10=$(t 4)
# W8 (warm restart, issue 17): a file larger than the RAM cache is read
# once, nfscached restarts, and the file is read again from the disk tier.
w8_cache_mib=64		# cache_size of W8's nfscached; its file is 256 MiB
w8_disk_mib=1024	# its disk_cache_size
W8_COLD_SECS=120	# the first read must read the whole file
# A call still unanswered this long after its phase's time box is given
# up on (a COMMIT cannot be time-boxed; a slow flush must not stall the
# run): the phase is reported as timed out and the run goes on.
GRACE=$(t 10)
STOP_WAIT=10	# seconds nfscached may take to exit after SIGTERM
to() { awk -v a="$1" -v b="${2:-0}" -v g="$GRACE" 'BEGIN { printf "%.2f", a + b + g }'; }

res=$build/bench-results
rm -rf "$res"
mkdir -p "$res/cells" "$res/data"
data=$res/data

# The scaling cells (issue 39) set these: nfscached's threads, and how
# many load generators (connections) share the calls in flight.
cell_threads='' cell_conns=1

# --------------------------------------------------- processes we own

dbus_pid='' bg_pids=()

# Wait for the background stops (a bare `wait` would wait for dbus too).
bg_wait() {
	((${#bg_pids[@]} == 0)) || wait "${bg_pids[@]}" 2>/dev/null || true
	bg_pids=()
}

cleanup() {
	local st=$?
	cell_stop || true
	bg_wait
	[[ -n "$dbus_pid" ]] && kill "$dbus_pid" 2>/dev/null
	nfsc_stop_rpcbind || true
	nfsc_release_ports "${cell_ports[@]}" 2>/dev/null || true
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start a private D-Bus system bus: Ganesha publishes its counters there.
dbus_start() {
	local i
	cat >"$res/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=$res/dbus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
	setsid dbus-daemon --config-file="$res/dbus.conf" --nofork --nopidfile \
		</dev/null >"$res/dbus.log" 2>&1 &
	dbus_pid=$!
	export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$res/dbus.sock"
	for ((i = 0; i < 50; i++)); do
		dbus-send --system --print-reply --dest=org.freedesktop.DBus \
			/org/freedesktop/DBus org.freedesktop.DBus.ListNames >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	say "the private dbus-daemon does not answer"
	return 1
}

# ------------------------------------------------------------- one cell

cell_ports=() cell_up='' cell_peer='' cell_relay='' cell_proxy='' cdir='' cell_url=''
cell_restart=()	# nfsc_proxy_start's arguments for the cell's nfscached

# Stop what the current cell started. Ganesha takes 1-2 s to exit, so its
# instances stop in the background (they hold distinct ports).
cell_stop() {
	if [[ -n "$cell_proxy" ]]; then
		nfsc_proxy_stop "$cell_proxy" "$STOP_WAIT" || say "nfscached exited with status $NFSC_PROXY_STATUS"
		echo "${NFSC_PROXY_STATUS:-0}" >"$cdir/nfscached.status"
	fi
	cell_proxy=
	cell_restart=()
	if [[ -n "$cell_relay" ]]; then
		kill "$cell_relay" 2>/dev/null || true
		wait "$cell_relay" 2>/dev/null || true
	fi
	cell_relay=
	local w
	for w in "$cell_peer" "$cell_up"; do
		[[ -n "$w" ]] || continue
		(nfsc_ganesha_stop "$w"; rm -rf "${w%/*}/export") &
		bg_pids+=($!)
	done
	cell_peer='' cell_up=''
	nfsc_release_ports "${cell_ports[@]}"
	cell_ports=()
}

# Start the delay relay: $1 delay (ms), then LISTEN=TARGET pairs.
relay_start() {
	local delay=$1 i args=()
	shift
	for i in "$@"; do args+=(--pair "$i"); done
	"$relay" --delay-ms "$delay" "${args[@]}" >"$cdir/relay.out" 2>"$cdir/relay.err" &
	cell_relay=$!
	for ((i = 0; i < 100; i++)); do
		grep -qx ready "$cdir/relay.out" 2>/dev/null && return 0
		nfsc_pid_alive "$cell_relay" || break
		sleep 0.05
	done
	say "delayrelay did not start: $(cat "$cdir/relay.err")"
	return 1
}

# Ganesha settings every upstream gets on top of scripts/lib.sh's: the
# per-procedure counters and a D-Bus name of its own.
up_extra() {
	cat <<EOF
NFS_CORE_PARAM {
  Enable_FULLV3_Stats = true;
  Enable_FULLV4_Stats = true;
  Dbus_Name_Prefix = $1;
}
EOF
}

# The peer: Ganesha serving NFSv3 from FSAL PROXY_V4, which talks NFSv4.1
# to $1:$2. Attributes are cached for Ganesha's default 60 s (the lib's
# 0 s would make the peer revalidate on every call).
peer_extra() {
	cat <<EOF
NFS_CORE_PARAM {
  Dbus_Name_Prefix = $3;
}
EXPORT {
  Path = /export;
  Attr_Expiration_Time = 60;
  FSAL {
    Name = PROXY_V4;
    Srv_Addr = $1;
    NFS_Port = $2;
  }
}
EOF
}

# Put the files workload $1 reads into export directory $2.
cell_files() {
	case $1 in
	W1) cp "$data/w1.base" "$2/w1" ;;
	W2) cp "$data/w2.base" "$2/w2" ;;
	W4) ln "$data/w4.base" "$2/w4" ;;
	W5) ln "$data/w4.base" "$2/w5" ;;
	W6b) ln "$data/w6b.base" "$2/w6b" ;;
	W8) ln "$data/w4.base" "$2/w8" ;;
	esac
}

# Print the load generator's phases for workload $1 with $2 calls in
# flight, one a line. Every measured phase NAME sits between snapshots
# NAME-0 and NAME-1. $3, for the scaling cells: this generator's number
# of $4 side by side; each then works in its own part of the file ($3th
# of $4: W1's and W2's 64 MiB, W4's 256 MiB, W6's 1 GiB), so that the
# generators miss apart and never read what another wrote (each checks
# what it reads against what it wrote). Only generator 0 creates W6's
# file (a CREATE of a file that exists would truncate it).
phases() {
	local w=$1 q=$2 gen=${3:-} ngen=${4:-1} region='' mib=0
	if [[ -n "$gen" ]] && ((ngen > 1)); then
		case $w in
		W1|W2) mib=64 ;;
		W4) mib=256 ;;
		W6) mib=1024 ;;
		esac
		((mib == 0)) ||
			region=",start=$((gen * mib / ngen))M,span=$(((gen + 1) * mib / ngen))M"
	fi
	m() { echo "snap,label=$1-0"; echo "$2,label=$1$3"; echo "snap,label=$1-1"; }
	case $w in
	W1)	echo "open,file=w1,base=pat:11"
		echo "snap,label=w1write-0"
		echo "write,label=w1write,bs=1K,pattern=rand,qd=$q,warmup=$WARM,time=$T_W1,timeout=$(to "$WARM" "$T_W1")$region"
		echo "commit,label=w1commit,timeout=$GRACE"
		echo "snap,label=w1write-1"
		m w1read read ",bs=1K,pattern=written,qd=$q,warmup=$WARM,time=$T_W1,timeout=$(to "$WARM" "$T_W1")" ;;
	W2)	echo "open,file=w2,base=pat:12"
		m w2 rw ",bs=2K,pattern=rand,qd=$q,rmix=1,wmix=2,commit_every=100,warmup=$WARM,time=$T_W2,timeout=$(to "$WARM" "$T_W2")$region" ;;
	W3)	echo "open,file=w3,create=1,base=zero"
		echo "snap,label=w3-0"
		echo "write,label=w3,bs=64K,pattern=seq,span=655360000,count=10000,qd=$q,time=$T_W3,timeout=$(to "$T_W3")"
		echo "commit,label=w3commit,timeout=$GRACE"
		echo "snap,label=w3-1" ;;
	W4)	echo "open,file=w4,base=pat:14"
		m w4 read ",bs=64K,pattern=seq,qd=$q,time=$T_W4,timeout=$(to "$T_W4")$region" ;;
	W5)	echo "open,file=w5,base=pat:14"
		m w5rand read ",bs=4K,pattern=rand,start=128M,count=1000,qd=$q,time=$T_W5R,timeout=$(to "$T_W5R")"
		echo "snap,label=w5seq-0"
		echo "read,label=w5seq3,bs=64K,pattern=seq,count=3,qd=$q,lat=1,timeout=$GRACE"
		echo "snap,label=w5seq3-1"
		echo "read,label=w5seq4,bs=64K,pattern=seq,start=192K,count=1,qd=$q,lat=1,timeout=$GRACE"
		echo "snap,label=w5seq4-1"
		echo "read,label=w5seq16,bs=64K,pattern=seq,start=256K,count=12,qd=$q,lat=1,timeout=$GRACE"
		echo "snap,label=w5seq16-1"
		echo "read,label=w5seq,bs=64K,pattern=seq,start=1M,qd=$q,time=$T_W5S,timeout=$(to "$T_W5S")"
		echo "snap,label=w5seq-1" ;;
	W6)	if [[ -z "$gen" || "$gen" == 0 ]]; then
			echo "open,file=w6,create=1,size=1G,base=zero"
		else
			echo "open,file=w6,base=zero"
		fi
		m w6 read ",bs=64K,pattern=seq,qd=$q,time=$T_W6,timeout=$(to "$T_W6")$region" ;;
	# W10 (issue 18): 4 KiB WRITE + COMMIT pairs, one call in flight:
	# an fsync after every write, a database's log.
	W10)	echo "open,file=w10,create=1,base=zero"
		m w10 rw ",bs=4K,pattern=seq,span=1073741824,qd=$q,rmix=0,wmix=1,commit_every=1,time=$T_W10,timeout=$(to "$T_W10")" ;;
	W9)	echo "open,file=w9,create=1,size=1G,base=zero"
		echo "snap,label=w9-0"
		echo "write,label=w9,bs=4K,pattern=rand,qd=$q,time=$T_W9,timeout=$(to "$T_W9")"
		echo "commit,label=w9commit,timeout=$GRACE"
		echo "snap,label=w9-1" ;;
	W6b)	echo "open,file=w6b,base=zpat:16:16"
		m w6b1 read ",bs=64K,pattern=seq,qd=$q,time=$T_W6B,timeout=$(to "$T_W6B")"
		m w6b2 read ",bs=64K,pattern=seq,span=prev,qd=$q,time=$T_W6B,timeout=$(to "$T_W6B")" ;;
	# W8 runs as two load generators, nfscached restarted between them
	# (cell_run): the whole file once, then the measured second read.
	W8a)	echo "open,file=w8,base=pat:14"
		m w8cold read ",bs=64K,pattern=seq,qd=$q,time=$W8_COLD_SECS,timeout=$(to "$W8_COLD_SECS")" ;;
	W8b)	echo "open,file=w8,base=pat:14"
		m w8warm read ",bs=64K,pattern=seq,qd=$q,time=$T_W8,timeout=$(to "$T_W8")" ;;
	esac
}

# Seconds the cell's load generator may take before it is killed.
phase_limit() {
	awk -v s="$scale" 'BEGIN { printf "%d", 120 + 60 * s }'
}

# Start cell $cdir's servers for workload $1, path $2, delay $3 ms
# ("none": no relay), page $4, in work directory $5; set cell_url, the
# URL the client mounts. Returns non-zero (after saying why) on failure;
# cell_stop cleans up whatever started.
cell_start() {
	local w=$1 path=$2 delay=$3 page=$4 x=$5 pfx
	local up_nfs up_mnt r_nfs r_mnt p_nfs p_mnt metrics
	mkdir -p "$x/up" "$x/export" || return 1
	cell_files "$w" "$x/export" || return 1
	read -r up_nfs up_mnt r_nfs r_mnt p_nfs p_mnt metrics < <(nfsc_free_ports 7)
	[[ -n "$metrics" ]] || return 1
	cell_ports=("$up_nfs" "$up_mnt" "$r_nfs" "$r_mnt" "$p_nfs" "$p_mnt" "$metrics")
	pfx="up$RANDOM$RANDOM"
	up_extra "$pfx" >"$x/up.extra"
	cell_up=$x/up
	nfsc_ganesha_start "$x/up" "$x/export" "$up_nfs" "$up_mnt" "$x/up.extra" || return 1
	if [[ "$delay" == none ]]; then
		r_nfs=$up_nfs r_mnt=$up_mnt
	else
		relay_start "$delay" "127.0.0.1:$r_nfs=127.0.0.1:$up_nfs" \
			"127.0.0.1:$r_mnt=127.0.0.1:$up_mnt" || return 1
	fi
	BENCH_SNAPDIR=$cdir/snaps BENCH_UP_DBUS=$pfx BENCH_METRICS='' BENCH_PIDS=''
	case $path in
	direct)
		cell_url="nfs://127.0.0.1/export?version=3&nfsport=$r_nfs&mountport=$r_mnt" ;;
	nfscached|local)
		: >"$x/export.extra"
		if [[ "$w" == W8 ]]; then
			printf 'page_size = %s\ncache_size = %s\ncache_dir = "%s"\ndisk_cache_size = %s\n' \
				"$page" "$w8_cache_mib" "$x/disk" "$w8_disk_mib" >"$x/nfscached.extra"
		elif [[ "$path" == local ]]; then
			# cache_dir on the disk under $build (ext4 here, not tmpfs).
			printf 'page_size = %s\ncache_size = %s\ncache_dir = "%s"\n' \
				"$page" "$cache_mib" "$x/disk" >"$x/nfscached.extra"
			echo '	commit = "local"' >"$x/export.extra"
		else
			printf 'page_size = %s\ncache_size = %s\n' "$page" "$cache_mib" >"$x/nfscached.extra"
		fi
		# BENCH_PROXY_EXTRA: more global directives for every nfscached
		# cell, one per line (e.g. "upstream_connections = 4").
		[[ -z "${BENCH_PROXY_EXTRA:-}" ]] || printf '%s\n' "$BENCH_PROXY_EXTRA" >>"$x/nfscached.extra"
		[[ -z "$cell_threads" ]] || echo "threads = $cell_threads" >>"$x/nfscached.extra"
		# A daemon that has run a while: its page memory faulted in
		# (docs/operations.md, "Memory"); BENCH_NO_PREALLOC=1 measures
		# a fresh one, which pays the first touch during the cell.
		[[ -n "${BENCH_NO_PREALLOC:-}" ]] || echo "cache_preallocate = true" >>"$x/nfscached.extra"
		nfsc_proxy_config "$p_nfs" "$p_mnt" "127.0.0.1:$metrics" "$x/state" \
			"nfs://127.0.0.1/export?nfsport=$r_nfs&mountport=$r_mnt" "$x/nfscached.extra" \
			"$x/export.extra" >"$x/nfscached.conf" || return 1
		mkdir -p "$x/state"
		nfsc_proxy_start "$cdir/nfscached.log" "$p_nfs" "$p_mnt" "$nfscached" \
			--config "$x/nfscached.conf" || return 1
		cell_proxy=$NFSC_PROXY_PID
		cell_restart=("$cdir/nfscached.log" "$p_nfs" "$p_mnt" "$nfscached" --config "$x/nfscached.conf")
		BENCH_METRICS=127.0.0.1:$metrics BENCH_PIDS="nfscached:$cell_proxy"
		pool_wait
		cell_url="nfs://127.0.0.1/export?version=3&nfsport=$p_nfs&mountport=$p_mnt" ;;
	peer)
		mkdir -p "$x/peer" "$x/peer-dir"
		peer_extra 127.0.0.1 "$r_nfs" "peer$RANDOM$RANDOM" >"$x/peer.extra"
		cell_peer=$x/peer
		nfsc_ganesha_start "$x/peer" "$x/peer-dir" "$p_nfs" "$p_mnt" "$x/peer.extra" || return 1
		BENCH_PIDS="peer:$(nfsc_ganesha_pid "$x/peer")"
		cell_url="nfs://127.0.0.1/export?version=3&nfsport=$p_nfs&mountport=$p_mnt" ;;
	esac
	BENCH_PIDS="$BENCH_PIDS upstream:$(nfsc_ganesha_pid "$x/up")"
	export BENCH_SNAPDIR BENCH_UP_DBUS BENCH_PIDS BENCH_METRICS
}

# With cache_preallocate, wait until the cell's nfscached has faulted its
# page budget in: nfscached_cache_page_pool_bytes stops growing (at most
# 300 s), so that the cell measures calls, not the first touch of memory.
pool_wait() {
	local now
	[[ -z "${BENCH_NO_PREALLOC:-}" ]] || return 0
	now=$(nfsc_pool_wait "$BENCH_METRICS")
	say "page pool preallocated: ${now:-?} bytes"
}

# W8's restart of the cell's nfscached: wait until the disk tier has
# stored what the first read fetched (its stored and dropped counts stop
# moving for 2 s; at most 300 s), stop it with SIGTERM (it must exit 0)
# and start it again on the same configuration and cache_dir.
w8_restart() {
	local last='' now i
	for ((i = 0; i < 300; i++)); do
		now=$(curl -sf --max-time 10 "http://$BENCH_METRICS/metrics" |
			awk '$1 == "nfscached_disk_store_bytes_total" || $1 == "nfscached_disk_stores_dropped_total" { s = s " " $2 } END { print s }')
		[[ -n "$now" && "$now" == "$last" ]] && ((i >= 2)) && break
		last=$now
		sleep 1
	done
	say "W8: disk tier settled at (stored bytes, dropped stores):$now after $i s"
	nfsc_proxy_stop "$cell_proxy" "$STOP_WAIT" || say "nfscached exited with status $NFSC_PROXY_STATUS"
	echo "${NFSC_PROXY_STATUS:-0}" >"$cdir/nfscached.first.status"
	cell_proxy=
	nfsc_proxy_start "${cell_restart[@]}" || return 1
	cell_proxy=$NFSC_PROXY_PID
	BENCH_PIDS="nfscached:$cell_proxy upstream:$(nfsc_ganesha_pid "$cell_up")"
	export BENCH_PIDS
	pool_wait
}

# Run the load generator on the phases of workload $1 with $2 in flight,
# appending to the cell's loadgen.jsonl; its exit status. With
# cell_conns = C > 1 (the scaling cells), C generators run side by side,
# each with its own connection and $2 / C calls in flight: the first
# takes the snapshots and writes loadgen.jsonl, generator K loadgen.K.jsonl
# (started once the first took its first snapshot); the status is the
# first failure's.
cell_load() {
	local ph=() pids=() k st rc=0 q=$(($2 / cell_conns)) first i
	mapfile -t ph < <(phases "$1" "$q" 0 "$cell_conns")
	timeout "$(phase_limit)" "$loadgen" --url "$cell_url" --hook "$root/bench/snap.sh" \
		"${ph[@]}" >>"$cdir/loadgen.jsonl" 2>>"$cdir/loadgen.err" &
	first=$!
	# The others start once generator 0 has opened (created) the file
	# and taken its first snapshot: their phases run beside its own.
	for ((i = 0; cell_conns > 1 && i < 600; i++)); do
		compgen -G "$cdir/snaps/*.snap" >/dev/null && break
		kill -0 "$first" 2>/dev/null || break
		sleep 0.05
	done
	for ((k = 1; k < cell_conns; k++)); do
		mapfile -t ph < <(phases "$1" "$q" "$k" "$cell_conns")
		timeout "$(phase_limit)" "$loadgen" --url "$cell_url" \
			"${ph[@]}" >>"$cdir/loadgen.$k.jsonl" 2>>"$cdir/loadgen.err" &
		pids+=($!)
	done
	wait "$first" || rc=$?
	for k in "${pids[@]}"; do
		wait "$k" && st=0 || st=$?
		if ((rc == 0)); then
			rc=$st
		fi
	done
	return "$rc"
}

# Run one cell: workload $1, path $2, delay $3 ms ("none": no relay, to
# measure what the relay itself costs), $4 in flight, page $5. A cell
# whose servers do not start is tried once more, then recorded as failed
# (loadgen_rc -1) and the run goes on.
cell_run() {
	local w=$1 path=$2 delay=$3 qd=$4 page=$5
	local id="$w-$path-${delay}ms-qd$qd-p$page" rc=-1 t0 t1 try
	[[ "$delay" == none ]] && id="$w-$path-norelay-qd$qd-p$page"
	[[ -z "$cell_threads" ]] || id="S-$w-$path-t$cell_threads-${delay}ms-qd${qd}x$cell_conns-p$page"
	[[ -z "$only" || "$id" =~ $only ]] || return 0
	cdir=$res/cells/$id
	mkdir -p "$cdir/snaps"
	say "cell $id"
	t0=$(date +%s.%N)
	for try in 1 2; do
		if cell_start "$w" "$path" "$delay" "$page" "$cdir/try$try"; then
			rc=0
			break
		fi
		say "cell $id: the servers did not start (try $try)"
		cell_stop
	done
	if ((rc == 0)); then
		: >"$cdir/loadgen.jsonl"
		: >"$cdir/loadgen.err"
		if [[ "$w" == W8 ]]; then
			cell_load W8a "$qd" || rc=$?
			if ((rc == 0)) && [[ "$path" == nfscached ]]; then
				w8_restart || rc=1
			fi
			((rc != 0)) || cell_load W8b "$qd" || rc=$?
		else
			cell_load "$w" "$qd" || rc=$?
		fi
		"$root/bench/snap.sh" end || true
		((rc == 0)) || say "cell $id: loadgen exited $rc: $(tail -n 3 "$cdir/loadgen.err" | tr '\n' ' ')"
		cell_stop
	fi
	t1=$(date +%s.%N)
	[[ "$delay" == none ]] && delay='"none"'
	printf '{"id":"%s","workload":"%s","path":"%s","delay_ms":%s,"qd":%s,"page":%s,"cache_mib":%s,"loadgen_rc":%s,"secs":%.1f,"threads":%s,"conns":%s}\n' \
		"$id" "$w" "$path" "$delay" "$qd" "$page" "$([[ "$w" == W8 ]] && echo "$w8_cache_mib" || echo "$cache_mib")" "$rc" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "${cell_threads:-null}" "$cell_conns" >"$cdir/cell.json"
}

# K1, informational (no target): the Linux kernel's NFS client in the
# kernel tests' QEMU guest (tests/kernel/vm.sh) runs sysbench fileio,
# 2 KiB random reads and writes (sysbench's default mix: 1.5 reads per
# write, an fsync every 100 requests) on 4 files of 8 MiB, on path $1 at
# delay $2 ms. The guest is emulated (TCG): its CPU bounds both paths, so
# only the ratio means anything. Results in $res/kernel/K1-PATH-DELAYms/.
kernel_cell() {
	local path=$1 delay=$2 id="K1-$1-${2}ms" rc=0 nfs mnt
	local sb="sysbench fileio --file-num=4 --file-total-size=32M" secs
	secs=$(printf '%.0f' "$T_K1")	# whole seconds, for sysbench and vm.sh
	[[ -z "$only" || "$id" =~ $only ]] || return 0
	cdir=$res/kernel/$id
	mkdir -p "$cdir/snaps"
	say "cell $id"
	if cell_start K1 "$path" "$delay" "$page_default" "$cdir/x"; then
		nfs=$(sed -n 's/.*nfsport=\([0-9]*\).*/\1/p' <<<"$cell_url")
		mnt=$(sed -n 's/.*mountport=\([0-9]*\).*/\1/p' <<<"$cell_url")
		NFSC_VM_HOME=$kvm_home NFSC_VM_TIMEOUT=$((secs + 300)) \
			"$root/tests/kernel/vm.sh" "$nfs" "$mnt" -- \
			"cd /mnt && $sb prepare >/dev/null && $sb --file-test-mode=rndrw --file-block-size=2K --time=$secs run" \
			>"$cdir/sysbench.out" 2>"$cdir/vm.err" || rc=$?
		((rc == 0)) || say "cell $id: the guest exited $rc: $(tail -n 3 "$cdir/vm.err" | tr '\n' ' ')"
	else
		rc=-1
	fi
	cell_stop
	printf '{"id":"%s","path":"%s","delay_ms":%s,"rc":%s,"secs":%s}\n' \
		"$id" "$path" "$delay" "$rc" "$secs" >"$cdir/cell.json"
}

# ----------------------------------------------------------------- main

dbus_start
nfsc_ensure_rpcbind

# The relay's own ceiling (issue 16): one bulk TCP stream through it
# alone, 0 and 2 ms alternating, so the report can say which cells it bounds.
say "measuring the delay relay's own ceiling"
python3 "$root/bench/relay_ceiling.py" --baselines "$relay" 1024 0 2 0 2 >"$res/relay_ceiling.jsonl" 2>"$res/relay_ceiling.err" ||
	say "bench/relay_ceiling.py failed: $(tail -n 3 "$res/relay_ceiling.err" | tr '\n' ' ')"

say "writing the data files"
"$loadgen" --gen "$data/w1.base" --size 64M --base pat:11
"$loadgen" --gen "$data/w2.base" --size 64M --base pat:12
"$loadgen" --gen "$data/w4.base" --size 256M --base pat:14
"$loadgen" --gen "$data/w6b.base" --size 1G --base zpat:16:16
chmod 0444 "$data"/*.base

# The fdatasync latency of the disk the local path's cache_dir is on
# (issue 18): 4 KiB O_DSYNC writes, as a journal commit costs.
say "measuring fdatasync latency under $res"
python3 - "$res/dsync.probe" >"$res/fdatasync.json" <<'PY' || say "the fdatasync probe failed"
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_DSYNC, 0o600)
buf, n = b"\0" * 4096, 500
t0 = time.monotonic()
for i in range(n):
    os.pwrite(fd, buf, (i % 64) * 4096)
secs = time.monotonic() - t0
os.close(fd)
os.unlink(sys.argv[1])
print(json.dumps({"writes": n, "bytes": 4096, "mean_ms": secs / n * 1000}))
PY

cells=()
for d in 0 2; do
	for p in direct nfscached peer; do
		cells+=("W1 $p $d 1" "W1 $p $d 16" "W2 $p $d 16" "W3 $p $d 1" "W3 $p $d 16"
			"W4 $p $d 1" "W4 $p $d 16" "W5 $p $d 1" "W6 $p $d 16" "W6b $p $d 16")
	done
done
for c in "${cells[@]}"; do
	# shellcheck disable=SC2086
	cell_run $c "$page_default"
done
# Local commit (issue 18): W2 and W10 with commit = "local", against
# direct and nfscached (commit = "upstream") at the same delay.
lcells=()
for d in 0 2; do
	lcells+=("W2 local $d 16" "W10 direct $d 1" "W10 nfscached $d 1" "W10 local $d 1")
done
for c in "${lcells[@]}"; do
	# shellcheck disable=SC2086
	cell_run $c "$page_default"
done
# What the relay itself costs: direct without it.
cell_run W1 direct none 1 "$page_default"
cell_run W4 direct none 1 "$page_default"
cell_run W5 direct none 1 "$page_default"
cell_run W3 direct none 1 "$page_default"
# W7: the page-size sweep (65536 is the default page: those cells ran above).
for page in 4096 16384 1048576; do
	cell_run W1 nfscached 2 16 "$page"
	cell_run W4 nfscached 2 16 "$page"
done

# W8: warm restart, 16 in flight, at 0 and 2 ms (direct reads the file
# twice with nothing restarted: the upstream's page cache is warm for both).
for d in 0 2; do
	for p in direct nfscached; do
		cell_run W8 "$p" "$d" 16 "$page_default"
	done
done

# W9: scattered 4 KiB writes over 1 GiB, more pages than the cache holds:
# every page holds uncommitted data, the peak RSS case (issue 21).
for page in 4096 65536; do
	cell_run W9 nfscached 2 16 "$page"
done
# Scaling (issue 39): 0 ms, 16 calls in flight over 4 connections (4
# load generators of 4), nfscached with threads = 1, 2 and, where the
# machine has the cores, 4 and 8.
scale_threads=(1 2)
(($(nproc) >= 4)) && scale_threads+=(4)
(($(nproc) >= 8)) && scale_threads+=(8)
for w in W1 W6 W4 W2; do
	for t in "${scale_threads[@]}"; do
		cell_threads=$t cell_conns=4
		cell_run "$w" nfscached 0 16 "$page_default"
	done
done
cell_threads='' cell_conns=1
# K1: the kernel client (informational).
for p in direct nfscached; do
	kernel_cell "$p" 2
done

bg_wait
# The overload and stalled-connection runs (issue 20): about a minute.
if [[ -z "$only" || "hostile" =~ $only ]]; then
	rm -f "$res/hostile.jsonl"
	BENCH_HOSTILE_OUT=$res/hostile.jsonl LOAD_SECS=$(awk -v s="$scale" 'BEGIN { printf "%d", 20 * s + 0.999 }') \
		"$root/bench/hostile.sh" "$build" >"$res/hostile.log" 2>&1 ||
		say "bench/hostile.sh failed: $(tail -n 3 "$res/hostile.log" | tr '\n' ' ')"
fi
end_time=$(date +%s)
printf '{"start":%s,"end":%s,"scale":%s,"only":"%s","boxes":{"W1":%s,"warmup":%s,"W2":%s,"W3":%s,"W4":%s,"W5rand":%s,"W5scan":%s,"W6":%s,"W6b":%s,"W8":%s,"W9":%s,"W10":%s,"grace":%s},"w8_cache_mib":%s,"w8_disk_mib":%s,"stop_wait":%s,"prealloc":%s,"load_start":"%s","load_end":"%s"}\n' \
	"$start_time" "$end_time" "$scale" "$only" "$T_W1" "$WARM" "$T_W2" "$T_W3" "$T_W4" \
	"$T_W5R" "$T_W5S" "$T_W6" "$T_W6B" "$T_W8" "$T_W9" "$T_W10" "$GRACE" "$w8_cache_mib" "$w8_disk_mib" "$STOP_WAIT" "$([[ -n "${BENCH_NO_PREALLOC:-}" ]] && echo false || echo true)" "$load_start" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" >"$res/run.json"
say "cells done in $((end_time - start_time)) s; writing the report"
python3 "$root/bench/report.py" --results "$res" --out "$outdir" --root "$root"
say "report: $outdir/benchmarks.md ($(( $(date +%s) - start_time )) s in all)"
