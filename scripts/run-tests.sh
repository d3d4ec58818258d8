#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The test command: build and run every test twice, the way CI does.
#
#   1. install the Debian packages (scripts/install-deps.sh)
#   2. build/       Release, -DNFSCACHED_WERROR=ON; ctest (the kernel tests
#                   of tests/kernel/ run in this tree only)
#   3. build-asan/  Debug, -DNFSCACHED_SANITIZE=ON (ASan + UBSan); ctest
#   4. build-tsan/  RelWithDebInfo, -DNFSCACHED_SANITIZE=thread (TSan);
#                   the tests labelled tsan only (ctest -L tsan: the ones
#                   that run the daemon's threads, tests/CMakeLists.txt),
#                   their daemons with threads = 4;
#                   any report fails the step (tests/tsan.supp: third-party
#                   code only, each entry with its reason)
#   5. build-fuzz/  clang, -DNFSCACHED_FUZZ=ON: the libFuzzer targets only,
#                   each run over its corpus (ctest -L fuzz, about a minute)
#
# rpcbind is started if none runs (NFS-Ganesha needs it) and stopped at the
# end if this script started it. Every tree runs even if one before fails.
# Exits 0 only if all built and passed; the last line sums it up.
#
# Options: --no-deps (skip step 1), --no-asan (skip step 3), --no-tsan
# (skip step 4), --no-fuzz (skip step 5), --stress (run `stress-ng --cpu 2`
# alongside, the check that no test depends on the machine's speed;
# README.md "Timing sensitivity"); arguments after -- go to the ctest runs
# of steps 2-4 (e.g. -- -L unit, or -- -R nfscp; in step 4 they narrow
# the tsan label's tests).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib.sh
. scripts/lib.sh

deps=1
asan=1
tsan=1
fuzz=1
stress=0
ctest_args=()
while (($#)); do
	case $1 in
	--no-deps) deps=0 ;;
	--no-asan) asan=0 ;;
	--no-tsan) tsan=0 ;;
	--no-fuzz) fuzz=0 ;;
	--stress) stress=1 ;;
	--) shift; ctest_args=("$@"); break ;;
	*) echo "usage: $0 [--no-deps] [--no-asan] [--no-tsan] [--no-fuzz] [--stress] [-- CTEST_ARGS...]" >&2; exit 2 ;;
	esac
	shift
done

jobs=$(nproc 2>/dev/null || echo 2)
summary=()
failed=0

# Configure, build and test tree $2 (label $1) with cmake options $3...
# Records "LABEL: PASS|FAIL (ctest's summary)" in summary. The ctest run
# gets ctest_extra's arguments, then ctest_args'.
ctest_extra=()
build_and_test() {
	local label=$1 dir=$2 log line
	shift 2
	echo "==> [$label] configure $dir: $*"
	if ! cmake -S . -B "$dir" "$@"; then
		summary+=("$label: FAIL (configure)")
		failed=1
		return 0
	fi
	echo "==> [$label] build $dir"
	if ! cmake --build "$dir" -j "$jobs"; then
		summary+=("$label: FAIL (build)")
		failed=1
		return 0
	fi
	echo "==> [$label] ctest in $dir"
	log="$dir/run-tests-ctest.log"
	local rc=0
	ctest --test-dir "$dir" --output-on-failure --no-tests=error -j2 \
		"${ctest_extra[@]}" "${ctest_args[@]}" 2>&1 |
		tee "$log" || rc=$?
	line=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1) || line=
	if ((rc == 0)); then
		summary+=("$label: PASS (${line:-no summary})")
	else
		summary+=("$label: FAIL (${line:-ctest status $rc})")
		failed=1
	fi
}

if ((deps)); then
	scripts/install-deps.sh
fi

nfsc_ensure_rpcbind
stress_pid=
# Stop what this script started: the CPU hogs, the tests' rpc.statd,
# rpcbind.
finish() {
	if [[ -n "$stress_pid" ]]; then
		kill -TERM "$stress_pid" 2>/dev/null || true
		wait "$stress_pid" 2>/dev/null || true
	fi
	nfsc_stop_test_statd
	nfsc_stop_rpcbind
}
trap finish EXIT
if ((stress)); then
	stress-ng --cpu 2 --quiet &
	stress_pid=$!
	echo "==> stress-ng --cpu 2 running alongside (pid $stress_pid)"
fi

build_and_test release build \
	-DCMAKE_BUILD_TYPE=Release -DNFSCACHED_WERROR=ON -DBUILD_TESTING=ON

if ((asan)); then
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	# Leaks inside system libraries (libtirpc), listed with their reason.
	export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
	build_and_test asan build-asan \
		-DCMAKE_BUILD_TYPE=Debug -DNFSCACHED_SANITIZE=ON -DBUILD_TESTING=ON
fi

# The ThreadSanitizer tree: the tests labelled tsan (tests/CMakeLists.txt
# says which and why). Every process writes its reports to
# build-tsan/tsan-reports/report.PID, and halts at its first one with
# status 66: a test fails when its own process or a daemon whose status
# it checks reports; a report from a process nobody waits for (a daemon
# a test SIGKILLs, a detached client) fails the step here, printed.
tsan_tree() {
	local reports=$PWD/build-tsan/tsan-reports n
	mkdir -p build-tsan
	rm -rf "$reports"
	mkdir -p "$reports"
	# Third-party code only in tsan.supp, each entry with its reason.
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp:print_suppressions=0:log_path=$reports/report}
	ctest_extra=(-L tsan)
	# Every daemon of the tree's integration tests runs 4 event loops
	# (threads = 4): the connections' loops against loop 0.
	export NFSC_PROXY_THREADS=4
	build_and_test tsan build-tsan \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DNFSCACHED_SANITIZE=thread \
		-DNFSCACHED_WERROR=ON -DBUILD_TESTING=ON
	ctest_extra=()
	unset TSAN_OPTIONS NFSC_PROXY_THREADS
	n=$(find "$reports" -type f | wc -l)
	if ((n > 0)); then
		echo "==> [tsan] $n report file(s) in $reports:"
		for f in "$reports"/*; do
			echo "---- $f"
			cat "$f"
		done
		summary[${#summary[@]}-1]="tsan: FAIL ($n ThreadSanitizer report file(s) in $reports)"
		failed=1
	fi
}
if ((tsan)); then
	tsan_tree
fi

# The fuzz tree builds only the fuzz targets and runs only their checks.
fuzz_tree() {
	echo "==> [fuzz] configure build-fuzz"
	if ! cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DNFSCACHED_FUZZ=ON; then
		summary+=("fuzz: FAIL (configure)")
		failed=1
		return 0
	fi
	if ! cmake --build build-fuzz -j "$jobs" --target fuzz; then
		summary+=("fuzz: FAIL (build)")
		failed=1
		return 0
	fi
	if ctest --test-dir build-fuzz --output-on-failure -L fuzz -j2 \
		2>&1 | tee build-fuzz/run-tests-ctest.log; then
		summary+=("fuzz: PASS ($(grep -E 'tests passed' build-fuzz/run-tests-ctest.log | tail -n 1))")
	else
		summary+=("fuzz: FAIL ($(grep -E 'tests passed' build-fuzz/run-tests-ctest.log | tail -n 1))")
		failed=1
	fi
}
if ((fuzz)); then
	fuzz_tree
fi

echo
echo "==> summary"
for s in "${summary[@]}"; do
	echo "    $s"
done
all=$(printf '%s; ' "${summary[@]}")
all=${all%; }
if ((failed)); then
	echo "run-tests: FAIL: $all"
	exit 1
fi
echo "run-tests: PASS: $all"
