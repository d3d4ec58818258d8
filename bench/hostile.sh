#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The overload and stalled-connection runs of issue 20, as a script: one
# fresh Ganesha and nfscached (tests/integration/harness.sh), then
#   load     64 loadgen clients, each on its own connection with 64 calls in
#            flight (4,096 in all), random 4 KiB reads and writes (1:1) on
#            a 4 MiB file of its own for LOAD_SECS seconds, every READ
#            verified by loadgen (exit 0 = every byte right);
#   stalled  500 connections that send 10 bytes of a record announcing
#            1,000 and 100 that send one byte a second, while a normal
#            client times NULL calls; until the proxy has closed them all.
# Prints one JSON line per run (ops/s, errors, verify failures, proxy peak
# RSS against cache_size, descriptors held at peak and after, closes by
# reason, the seconds until every stalled connection was closed) and
# appends them to $BENCH_HOSTILE_OUT (default build-bench/hostile.jsonl)
# for bench/report.py.
#
#   bench/hostile.sh [BUILD_DIR]     (default build; needs nfscached, loadgen)
#
# The proxy runs with cache_size = 64 MiB and record_timeout = 5 s
# (bench/hostile.conf) so the figures mean something on a small machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
export NFSCACHED_BIN=$build/daemon/nfscached
export BENCH_LOADGEN=$build/bench/loadgen
export BENCH_HOSTILE_OUT=${BENCH_HOSTILE_OUT:-$root/build-bench/hostile.jsonl}
export LOAD_SECS=${LOAD_SECS:-20}
mkdir -p "$(dirname "$BENCH_HOSTILE_OUT")"
exec "$root/tests/integration/harness.sh" \
	--proxy-conf-extra "$root/bench/hostile.conf" -- "$root/bench/hostile_run.sh"
