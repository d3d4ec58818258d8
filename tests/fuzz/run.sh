#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A fuzz campaign: run every libFuzzer target (or those named) for SECONDS
# each, JOBS at a time, over a scratch copy of its corpus in the tree, with
# ASan+UBSan (the NFSCACHED_FUZZ build) and leak checks. Prints one line
# per target: executions, seconds, executions/s, new corpus inputs, and
# FINDING with the crash file if libFuzzer stopped on one.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [JOBS] [TARGET...]
#
# BUILD_DIR is a tree configured with -DCMAKE_C_COMPILER=clang
# -DNFSCACHED_FUZZ=ON and built with --target fuzz. Findings (crash-*,
# leak-*, oom-*, timeout-*) and logs stay in BUILD_DIR/fuzz-campaign/.
# Copy the inputs worth keeping (small, new coverage) into corpus/NAME/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: run.sh BUILD_DIR SECONDS [JOBS] [TARGET...]}
secs=${2:?usage: run.sh BUILD_DIR SECONDS [JOBS] [TARGET...]}
jobs=${3:-1}
shift $(($# < 3 ? $# : 3))
targets=("$@")
((${#targets[@]})) || targets=($(cd "$here/corpus" && ls))
out=$build/fuzz-campaign
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Run target $1 for $secs seconds; print its summary line.
one() {
	local t=$1 bin=$build/tests/fuzz/$1 dir=$out/$1 rc=0 runs start end
	rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/artifacts"
	cp "$here/corpus/$t"/* "$dir/corpus/"
	start=$(date +%s.%N)
	"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 \
		-artifact_prefix="$dir/artifacts/" -print_final_stats=1 \
		"$dir/corpus" >"$dir/log" 2>&1 || rc=$?
	end=$(date +%s.%N)
	runs=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$dir/log")
	printf '%-18s %12s execs %7.1f s %9.0f execs/s %4d new inputs%s\n' "$t" \
		"${runs:-0}" "$(echo "$end - $start" | bc)" \
		"$(echo "${runs:-0} / ($end - $start)" | bc)" \
		$(($(ls "$dir/corpus" | wc -l) - $(ls "$here/corpus/$t" | wc -l))) \
		"$( ((rc == 0)) || echo "  FINDING (rc $rc): $(ls "$dir/artifacts" | head -1)")"
}

for t in "${targets[@]}"; do
	one "$t" &
	while (($(jobs -rp | wc -l) >= jobs)); do
		wait -n || true
	done
done
wait
