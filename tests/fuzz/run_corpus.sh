#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ctest's fuzz check: run fuzz target $1 once over every input of corpus
# directory $2, then $3 (default 20,000) mutations of it (seed 1, so a failure
# reproduces) into a scratch directory; the corpus in the tree is only
# read. Fails on any crash, sanitizer report or leak. Takes seconds.
set -euo pipefail
target=${1:?usage: run_corpus.sh TARGET CORPUS_DIR [RUNS]}
corpus=${2:?usage: run_corpus.sh TARGET CORPUS_DIR [RUNS]}
runs=${3:-20000}
[[ -d "$corpus" ]] || { echo "no corpus at $corpus" >&2; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
n=$(find "$corpus" -type f | wc -l)
echo "$(basename "$target"): $n corpus inputs"
find "$corpus" -type f -print0 | xargs -0 "$target" -runs=1 >"$scratch/corpus.log" 2>&1 ||
	{ tail -n 60 "$scratch/corpus.log"; exit 1; }
"$target" -seed=1 -runs="$runs" -max_len=4096 "$scratch" "$corpus" \
	>"$scratch/mutate.log" 2>&1 || { tail -n 60 "$scratch/mutate.log"; exit 1; }
grep -E '^Done [0-9]+ runs' "$scratch/mutate.log" || tail -n 3 "$scratch/mutate.log"
