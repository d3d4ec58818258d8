#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Show nfscached working on this machine, from nothing:
#
#   1. install the Debian packages the demo needs (install-deps.sh --demo:
#      no test tooling), build the daemon alone (Release, -DBUILD_TESTING=OFF,
#      in build-demo/, so a test tree in build/ is left as it is)
#   2. start rpcbind (if none runs), an NFS-Ganesha server exporting a temp
#      directory, and nfscached in front of it, all on loopback
#   3. copy a 10 MiB file in and out through the proxy with nfs-cp, read it
#      twice with nfs-cat (both reads are served from the cache: the copy
#      in filled it), check
#      every copy byte for byte
#   4. print the proxy's counters from its /metrics endpoint
#   5. stop everything (nfscached must exit 0 on SIGTERM)
#   6. print `nfscached stats`, the summary of this run (hit ratio, bytes
#      saved, writes, upstream latency), taken just before the stop
#
# Options: --no-deps (skip the package check), --no-build (use build-demo/
# as is).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
# shellcheck source=lib.sh
. scripts/lib.sh

deps=1
build=1
while (($#)); do
	case $1 in
	--no-deps) deps=0 ;;
	--no-build) build=0 ;;
	*) echo "usage: $0 [--no-deps] [--no-build]" >&2; exit 2 ;;
	esac
	shift
done

# Print a step title.
step() {
	printf '\n==> %s\n' "$*"
}

if ((deps)); then
	step "installing the Debian packages the demo needs"
	scripts/install-deps.sh --demo
fi
bin=$repo/build-demo/daemon/nfscached
if ((build)); then
	step "building nfscached (Release, the daemon only) in build-demo/"
	cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
	cmake --build build-demo --target nfscached -j "$(nproc 2>/dev/null || echo 2)"
fi
[[ -x "$bin" ]] || { echo "demo: $bin was not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfscached-demo.XXXXXX")
ports=()
proxy_pid=
ganesha_started=0

# Stop whatever was started and remove the temp dir.
cleanup() {
	local rc=$?
	nfsc_stop_session "${NFSC_CMD_PID:-}"
	if [[ -n "$proxy_pid" ]]; then
		nfsc_proxy_stop "$proxy_pid" || true
		[[ $rc != 0 ]] || rc=1
	fi
	if ((rc != 0)) && [[ -s "$tmp/nfscached.log" ]]; then
		echo "demo: failed; the end of nfscached's log:" >&2
		tail -n 30 "$tmp/nfscached.log" >&2
	fi
	if ((ganesha_started)); then
		nfsc_ganesha_stop "$tmp/ganesha" || true
	fi
	nfsc_stop_rpcbind || true
	if ((${#ports[@]})); then
		nfsc_release_ports "${ports[@]}"
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT

# Run a client command, at most 120 s, stopped at once if nfscached dies;
# exit (through cleanup) if it fails.
client() {
	if ! nfsc_run_watching "$proxy_pid" 120 "$@"; then
		if [[ -n "$NFSC_WATCHED_EXIT" ]]; then
			proxy_pid=
		fi
		echo "demo: '$*' failed (status $NFSC_CMD_STATUS)" >&2
		exit 1
	fi
}

step "starting rpcbind, NFS-Ganesha and nfscached on 127.0.0.1"
mkdir -p "$tmp/export" "$tmp/ganesha" "$tmp/state" "$tmp/files"
portlist=$(nfsc_free_ports 5)
read -r -a ports <<<"$portlist"
nfsc_ensure_rpcbind
ganesha_started=1
nfsc_ganesha_start "$tmp/ganesha" "$tmp/export" "${ports[0]}" "${ports[1]}"
direct="nfs://127.0.0.1/export?version=3&nfsport=${ports[0]}&mountport=${ports[1]}"
proxy="nfs://127.0.0.1/export?version=3&nfsport=${ports[2]}&mountport=${ports[3]}"
metrics=127.0.0.1:${ports[4]}
echo "upstream (Ganesha): $direct, exporting $tmp/export"
nfsc_proxy_config "${ports[2]}" "${ports[3]}" "$metrics" "$tmp/state" \
	"$direct" >"$tmp/nfscached.conf"
echo "nfscached config ($tmp/nfscached.conf):"
sed 's/^/    /' "$tmp/nfscached.conf"
nfsc_proxy_start "$tmp/nfscached.log" "${ports[2]}" "${ports[3]}" \
	"$bin" --config "$tmp/nfscached.conf"
proxy_pid=$NFSC_PROXY_PID
echo "nfscached (pid $proxy_pid): $proxy, metrics on http://$metrics/metrics"

step "copying a 10 MiB file in and out through nfscached"
size=$((10 * 1024 * 1024))
head -c "$size" /dev/urandom >"$tmp/files/demo.bin"
url=$(nfsc_url_join "$proxy" demo.bin)
client nfs-cp "$tmp/files/demo.bin" "$url"
client nfs-cp "$url" "$tmp/files/back.bin"
cmp "$tmp/files/demo.bin" "$tmp/files/back.bin"
cmp "$tmp/files/demo.bin" "$tmp/export/demo.bin"
echo "in and out: $size bytes, identical to the original and to the file on the server"

# Print the number of READ calls that clients sent and that nfscached sent
# upstream so far, as "CLIENT UPSTREAM" (0 for a counter not yet there).
read_counts() {
	local c u
	c=$(nfsc_metric "$metrics" 'nfscached_client_rpcs_total{program="nfs3",procedure="read"}') || c=0
	u=$(nfsc_metric "$metrics" 'nfscached_upstream_rpcs_total{procedure="read"}') || u=0
	echo "$c $u"
}

step "reading it twice with nfs-cat (both reads should come from the cache: the copy in filled it)"
for i in 1 2; do
	read -r c0 u0 <<<"$(read_counts)"
	start=$(date +%s%N)
	client nfs-cat "$url" >"$tmp/files/cat$i.bin"
	end=$(date +%s%N)
	read -r c1 u1 <<<"$(read_counts)"
	cmp "$tmp/files/demo.bin" "$tmp/files/cat$i.bin"
	echo "read $i: $size bytes in $(((end - start) / 1000000)) ms, identical;" \
		"$((c1 - c0)) client READs, $((u1 - u0)) sent upstream"
done

step "nfscached's counters (GET http://$metrics/metrics; zeros and histograms left out)"
curl -sSf --max-time 10 "http://$metrics/metrics" >"$tmp/metrics.txt"
grep '^nfscached_' "$tmp/metrics.txt" |
	grep -Ev '_(bucket|sum|count)[{ ]| 0(\.0*)?$' | sed 's/^/    /' || true
read -r c1 u1 <<<"$(read_counts)"
echo "in all: $c1 client READs, $u1 READs sent upstream"

# The summary of the run, printed at the end (the daemon must be up to ask).
"$bin" stats --metrics "$metrics" >"$tmp/stats.txt"

step "stopping nfscached (SIGTERM), Ganesha and what else this demo started"
pid=$proxy_pid
proxy_pid=
status=0
nfsc_proxy_stop "$pid" || status=$?
if ((status != 0)); then
	echo "demo: nfscached exited with status $status on SIGTERM; its log:" >&2
	tail -n 30 "$tmp/nfscached.log" >&2
	exit 1
fi
echo "nfscached exited 0"
echo "demo: OK"

step "nfscached stats: the summary of this run (taken just before the stop)"
sed 's/^/    /' "$tmp/stats.txt"
