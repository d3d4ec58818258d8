#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_rpcbind.sh: nfscached registers NFS 100003 v3, MOUNT 100005 v3 and
# NLM 100021 v4 (on the NFS port; nlm = false leaves it out) over TCP with
# rpcbind (register_rpcbind = true), a client that gives no
# ports finds the proxy through rpcbind, SIGTERM unregisters, and a live
# server's mappings are handled as rpcbind_conflict says.
#
# rpcbind refuses a SET while another mapping of the same program and
# version exists, and the machine's rpcbind is shared by every Ganesha the
# other tests start, so this test brings its own world: it re-executes
# itself under `unshare --net --mount` (root), brings up lo, mounts a
# private tmpfs over /run (rpcbind keeps /run/rpcbind.sock, rpcbind.lock
# and /run/rpcbind/ there; the machine's stay untouched), starts a private
# `rpcbind -f`, then a Ganesha (scripts/lib.sh) whose NFSv3 and MOUNT v3
# registrations land in that rpcbind, then nfscached on other ports with
# explicit upstream ports.
#
#   phase 0: --no-rpcbind (register_rpcbind = true in the file): nothing
#            is registered.
#   phase 1: Ganesha's registrations deleted (rpcinfo -d) before
#            nfscached starts: nfscached's own must appear, and a client
#            can only have found the export through them; after SIGTERM
#            rpcinfo lists neither program version 3.
#   phase 2: Ganesha restarted (registered again, and answering) before
#            nfscached starts, rpcbind_conflict unset ("skip"): Ganesha's
#            mappings are kept, with a warning naming each; a client
#            without ports reaches Ganesha, not the proxy; after SIGTERM
#            Ganesha's mappings are still there.
#   phase 3: the same with rpcbind_conflict = "replace": nfscached takes
#            the mappings (a client without ports comes through it) and
#            puts Ganesha's back at SIGTERM.
#   phase 4: rpcbind_conflict = "refuse": nfscached exits non-zero at
#            start saying why, and Ganesha's mappings stay.
#   phase 5: Ganesha killed with SIGKILL (its mappings stale, nothing
#            answers there): nfscached replaces them with a warning that
#            says they are stale, and removes them at SIGTERM.
# A client through the proxy: `nfs-ls` with no ports in its URL lists the
# export, and the proxy counted exactly one MNT.
#
# Needs NFSCACHED_BIN (CMake sets it). Exit 77 (skipped) only if this
# machine cannot make namespaces at all.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ "${NFSC_RPCBIND_NS:-}" != 1 ]]; then
	: "${NFSCACHED_BIN:?set NFSCACHED_BIN to the nfscached binary}"
	if ! unshare --net --mount true 2>/dev/null; then
		echo "test_rpcbind: cannot create namespaces here; skipped" >&2
		exit 77
	fi
	NFSC_RPCBIND_NS=1 exec unshare --net --mount --propagation private -- \
		bash "${BASH_SOURCE[0]}" "$@"
fi

# shellcheck source=scripts/lib.sh
. "$here/../../scripts/lib.sh"

G_NFS=22049		# Ganesha, inside the private network namespace
G_MNT=22048
P_NFS=12049		# nfscached
P_MNT=12048
METRICS=127.0.0.1:19655

fails=0
tmp=
rb_pid=
NFSC_PROXY_PID=

# Record a failed check.
fail() {
	echo "test_rpcbind: FAILED: $*" >&2
	fails=$((fails + 1))
}

# Record a passed check.
pass() {
	echo "test_rpcbind: ok: $*" >&2
}

# Print the last lines of the logs, for a post-mortem.
show_logs() {
	local f
	for f in "$tmp/nfscached.log" "$tmp/ganesha/ganesha.log"; do
		[[ -s "$f" ]] || continue
		echo "----- last 40 lines of $f -----" >&2
		tail -n 40 "$f" >&2
	done
}

# Stop everything this script started (each by its own pid).
cleanup() {
	local rc=$?
	if [[ -n "$NFSC_PROXY_PID" ]]; then
		nfsc_proxy_stop "$NFSC_PROXY_PID" 20 || true
	fi
	if [[ -n "$tmp" ]]; then
		nfsc_ganesha_stop "$tmp/ganesha" || true
	fi
	if [[ -n "$rb_pid" ]]; then
		kill -TERM "$rb_pid" 2>/dev/null || true
		nfsc_wait_gone "$rb_pid" 50 || kill -KILL "$rb_pid" 2>/dev/null || true
	fi
	if ((rc != 0 || fails != 0)); then
		show_logs
	fi
	[[ -z "$tmp" ]] || rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT

# Print the ports rpcbind maps program $1 version $2 over tcp to, one a line.
mapped_ports() {
	timeout 10 rpcinfo -p 127.0.0.1 |
		awk -v p="$1" -v v="$2" '$1 == p && $2 == v && $3 == "tcp" { print $4 }'
}

# Check that program $1 version $2 over tcp maps to port $3 and only to it
# (within 5 s: a daemon may register just after it starts listening).
expect_mapped() {
	local got i
	for ((i = 0; i < 50; i++)); do
		got=$(mapped_ports "$1" "$2" | sort -u | tr '\n' ' ')
		[[ "$got" != "$3 " ]] || break
		sleep 0.1
	done
	if [[ "$got" == "$3 " ]]; then
		pass "rpcbind maps $1 v$2 tcp to $3"
	else
		fail "rpcbind maps $1 v$2 tcp to '${got% }', expected '$3'"
		timeout 10 rpcinfo -p 127.0.0.1 >&2 || true
	fi
}

# Check that program $1 version $2 over tcp is not mapped at all.
expect_unmapped() {
	local got
	got=$(mapped_ports "$1" "$2" | tr '\n' ' ')
	if [[ -z "$got" ]]; then
		pass "rpcbind has no $1 v$2 tcp mapping"
	else
		fail "rpcbind still maps $1 v$2 tcp to ${got% }"
		timeout 10 rpcinfo -p 127.0.0.1 >&2 || true
	fi
}

# The value of metric sample $1 on the proxy (0 if absent: never counted).
metric() {
	nfsc_metric "$METRICS" "$1" 2>/dev/null || echo 0
}

# True if something listens on TCP port $1 in this namespace.
listening() {
	ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .
}

# Write the proxy's configuration with register_rpcbind = true and the
# global lines $1 (may be empty).
write_config() {
	printf 'register_rpcbind = true\n%s\n' "$1" >"$tmp/register.conf"
	nfsc_proxy_config "$P_NFS" "$P_MNT" "$METRICS" "$tmp/state" \
		"nfs://127.0.0.1/export?nfsport=$G_NFS&mountport=$G_MNT" \
		"$tmp/register.conf" >"$tmp/nfscached.conf"
}

# Start nfscached with the global lines $1 and the flags $2... and wait
# until its three ports listen. (Not nfsc_proxy_start: its readiness
# probe, rpcinfo -n, asks rpcbind first and fails while the program is
# not registered.)
start_proxy() {
	local i lines=$1
	shift
	write_config "$lines"
	"$NFSCACHED_BIN" --config "$tmp/nfscached.conf" "$@" >>"$tmp/nfscached.log" 2>&1 </dev/null &
	NFSC_PROXY_PID=$!
	for ((i = 0; i < 200; i++)); do
		if ! nfsc_pid_alive "$NFSC_PROXY_PID"; then
			NFSC_PROXY_PID=
			echo "test_rpcbind: nfscached exited at start" >&2
			exit 1
		fi
		listening "$P_NFS" && listening "$P_MNT" && listening "${METRICS##*:}" && return 0
		sleep 0.1
	done
	echo "test_rpcbind: nfscached does not listen after 20 s" >&2
	exit 1
}

# nfs-ls through rpcbind (no ports in the URL) lists the export, and the
# proxy answered exactly one MNT for it. $1 names the phase.
expect_listing_through_rpcbind() {
	local mnt='nfscached_client_rpcs_total{program="mount3",procedure="mnt"}'
	local before after out
	before=$(metric "$mnt")
	if out=$(timeout 30 nfs-ls "nfs://127.0.0.1/export?version=3" 2>&1) &&
		grep -q "rpcbind-proof.txt" <<<"$out"; then
		pass "$1: nfs-ls without ports lists the export"
	else
		fail "$1: nfs-ls nfs://127.0.0.1/export?version=3 did not list rpcbind-proof.txt: $out"
	fi
	after=$(metric "$mnt")
	if [[ "$((after - before))" == 1 ]]; then
		pass "$1: the proxy served the MNT"
	else
		fail "$1: proxy MNT count moved by $((after - before)), expected 1 (the client did not come through the proxy)"
	fi
}

# SIGTERM the proxy: it exits 0. $1: phase.
stop_proxy() {
	local st=0
	nfsc_proxy_stop "$NFSC_PROXY_PID" 30 || st=$?
	NFSC_PROXY_PID=
	if [[ "$st" == 0 ]]; then
		pass "$1: nfscached exited 0 on SIGTERM"
	else
		fail "$1: nfscached exited $st on SIGTERM"
	fi
}

# SIGTERM the proxy: it exits 0 and its mappings are gone. $1: phase.
expect_clean_stop() {
	stop_proxy "$1"
	expect_unmapped 100003 3
	expect_unmapped 100005 3
	expect_unmapped 100021 4
}

# Check that the proxy's log has the line fragment $2. $1: phase.
expect_logged() {
	if grep -qF -- "$2" "$tmp/nfscached.log"; then
		pass "$1: logged: $2"
	else
		fail "$1: no '$2' in the log"
	fi
}

# --- the private world ---
# Besides 127.0.0.1, give lo one documentation-range IPv4 and one ULA IPv6
# address, private to this namespace: getaddrinfo(AI_ADDRCONFIG), which
# Ganesha uses to parse Bind_Addr, ignores loopback addresses and fails
# ("No IP address found for 127.0.0.1") when nothing else is configured.
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
ip -6 addr add fd00:6e66:7363::1/128 dev lo nodad
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-rpcbind.XXXXXX")
mkdir -p "$tmp/export" "$tmp/ganesha" "$tmp/state"
echo "found through rpcbind" >"$tmp/export/rpcbind-proof.txt"
mount -t tmpfs -o mode=0755 nfsc-rpcbind-run /run
mkdir -p /run/rpcbind /run/ganesha /run/lock
chown _rpc /run/rpcbind 2>/dev/null || true

rpcbind -f </dev/null >"$tmp/rpcbind.log" 2>&1 &
rb_pid=$!
for ((i = 0; i < 100; i++)); do
	timeout 5 rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
	sleep 0.1
done
timeout 5 rpcinfo -p 127.0.0.1 >/dev/null || { echo "test_rpcbind: private rpcbind does not answer" >&2; exit 1; }

nfsc_ganesha_start "$tmp/ganesha" "$tmp/export" "$G_NFS" "$G_MNT"
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"

# Phase 1: all of Ganesha's registrations removed first. Not only version
# 3: a portmap GETPORT for a version nobody registered answers with the
# port of any other version of the program (rpcbind's find_service_pmap),
# so a leftover MOUNT v1 or NFS v4 mapping would lead a client to Ganesha.
rpcinfo -d 100003 3
rpcinfo -d 100003 4
rpcinfo -d 100005 3
rpcinfo -d 100005 1
for v in 1 3 4; do
	expect_unmapped 100003 "$v"
	expect_unmapped 100005 "$v"
done
# Phase 0: --no-rpcbind wins over the file's register_rpcbind = true.
start_proxy "" --no-rpcbind
expect_unmapped 100003 3
expect_unmapped 100005 3
if grep -qF "registered with rpcbind" "$tmp/nfscached.log"; then
	fail "phase 0: registered with rpcbind despite --no-rpcbind"
else
	pass "phase 0: --no-rpcbind registered nothing"
fi
stop_proxy "phase 0"

start_proxy ""
expect_mapped 100003 3 "$P_NFS"
expect_mapped 100005 3 "$P_MNT"
expect_mapped 100021 4 "$P_NFS"
expect_listing_through_rpcbind "phase 1"
expect_clean_stop "phase 1"

# Phase 1b: nlm = false registers NFS and MOUNT only.
start_proxy "nlm = false"
expect_mapped 100003 3 "$P_NFS"
expect_unmapped 100021 4
stop_proxy "phase 1b"

# Phase 2: Ganesha registered again and answering; nfscached keeps its
# mappings (rpcbind_conflict's default, "skip").
nfsc_ganesha_stop "$tmp/ganesha"
nfsc_ganesha_launch "$tmp/ganesha" "$G_NFS" "$G_MNT"
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"
: >"$tmp/nfscached.log"
start_proxy ""
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"
for m in "NFS v3 is mapped to tcp/$G_NFS" "MOUNT v3 is mapped to tcp/$G_MNT"; do
	expect_logged "phase 2" "warn: rpcbind: $m, where a live server answers: its mapping is kept"
done
mnt='nfscached_client_rpcs_total{program="mount3",procedure="mnt"}'
before=$(metric "$mnt")
if out=$(timeout 30 nfs-ls "nfs://127.0.0.1/export?version=3" 2>&1) &&
	grep -q "rpcbind-proof.txt" <<<"$out" && [[ "$(metric "$mnt")" == "$before" ]]; then
	pass "phase 2: a client without ports reached Ganesha, not the proxy"
else
	fail "phase 2: nfs-ls without ports: '$out', proxy MNTs $before -> $(metric "$mnt")"
fi
stop_proxy "phase 2"
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"

# Phase 3: rpcbind_conflict = "replace": taken, and put back at exit.
: >"$tmp/nfscached.log"
start_proxy 'rpcbind_conflict = "replace"'
expect_mapped 100003 3 "$P_NFS"
expect_mapped 100005 3 "$P_MNT"
for m in "NFS v3 mapping to tcp/$G_NFS" "MOUNT v3 mapping to tcp/$G_MNT"; do
	expect_logged "phase 3" "warn: rpcbind: replacing the $m (a live server's)"
done
expect_listing_through_rpcbind "phase 3"
stop_proxy "phase 3"
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"

# Phase 4: rpcbind_conflict = "refuse": no start.
: >"$tmp/nfscached.log"
write_config 'rpcbind_conflict = "refuse"'
st=0
timeout 60 "$NFSCACHED_BIN" --config "$tmp/nfscached.conf" >>"$tmp/nfscached.log" 2>&1 </dev/null || st=$?
if [[ "$st" != 0 && "$st" != 124 ]]; then
	pass "phase 4: nfscached refused to start (exit $st)"
else
	fail "phase 4: nfscached exit status $st, expected a refusal"
fi
expect_logged "phase 4" "error: rpcbind: NFS v3 is mapped to tcp/$G_NFS, where a live server answers; not starting"
expect_mapped 100003 3 "$G_NFS"
expect_mapped 100005 3 "$G_MNT"

# Phase 5: Ganesha dies without unregistering: its mappings are stale.
kill -KILL "$(cat "$tmp/ganesha/ganesha.pid")"
nfsc_wait_gone "$(cat "$tmp/ganesha/ganesha.pid")" 100 || true
expect_mapped 100003 3 "$G_NFS"
: >"$tmp/nfscached.log"
start_proxy ""
expect_mapped 100003 3 "$P_NFS"
expect_mapped 100005 3 "$P_MNT"
expect_logged "phase 5" "warn: rpcbind: replacing the stale NFS v3 mapping to tcp/$G_NFS (nothing answers there)"
expect_clean_stop "phase 5"

if ((fails)); then
	echo "test_rpcbind: $fails check(s) failed" >&2
	exit 1
fi
echo "test_rpcbind: all checks passed" >&2
