#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_flags: command-line flags are checked as the directives they set.
# With the quick-start flags and --dump-config (nothing is served):
#   - a bad --mount-port (negative, not a number, above 65535) exits 2
#     naming the flag;
#   - a bad --log-level, --metrics (not ADDR:PORT, port 0) or an empty
#     --state-dir exits 1 with "--FLAG: directive: reason", as a bad file
#     line would be refused;
#   - good values land in the dumped configuration, and that dump passes
#     --check-config (the docs promise it is a valid file);
#   - `nfscached stats` refuses a --count or --interval that is not a
#     number in range with a usage error (2);
#   - an unusable cache_dir (a regular file; a path under a regular file,
#     refused even as root) is refused by --check-config and by a real
#     start, both with exactly "FILE:LINE: reason" at the cache_dir line
#     (disk_dir_check, the one check of both), exit 1; so is a cache_dir
#     whose slab another process holds locked, found only at start by
#     disk_open, at its line too. Nothing is served: the start fails
#     before any listener or upstream;
#   - a metrics address the machine does not have stops the start with
#     the system's reason ("Cannot assign requested address"), exit 1;
#   - cache_preallocate with a cache_size over 7/8 of RLIMIT_AS is not
#     preallocated, with a warning (it would have the kernel kill it).
# Needs NFSCACHED_BIN.
set -euo pipefail
bin=${NFSCACHED_BIN:?set NFSCACHED_BIN}
up='nfs://10.0.0.5/srv/data'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# Expect exit status $1 and output containing $2 from nfscached ${@:3}.
expect() {
	local want=$1 text=$2 out rc=0
	shift 2
	out=$("$bin" --dump-config --upstream "$up" "$@" 2>&1) || rc=$?
	if [[ "$rc" == "$want" && "$out" == *"$text"* ]]; then
		echo "ok: $* -> $rc: $(grep -F -- "$text" <<<"$out" | head -n 1)"
	else
		echo "FAIL: $* -> status $rc (want $want), output:" >&2
		printf '%s\n' "$out" | head -n 5 >&2
		fails=$((fails + 1))
	fi
}

expect 2 '--mount-port: "-5" is not a port number' --mount-port -5
expect 2 '--mount-port: "abc" is not a port number' --mount-port abc
expect 2 '--mount-port: "70000" is not a port number' --mount-port 70000
expect 1 '--log-level: log_level: "bogus"' --log-level bogus
expect 1 '--metrics: metrics_listen: "nonsense"' --metrics nonsense
expect 1 '--metrics: metrics_listen: "127.0.0.1:0": port must be' --metrics 127.0.0.1:0
expect 1 '--state-dir: state_dir: must not be empty' --state-dir ''
expect 0 'mount_port = 0' --mount-port 0
expect 0 'metrics_listen = ""' --metrics ''
expect 0 'log_level = "debug"' --log-level debug

"$bin" --dump-config --upstream "$up" --mount-port 20049 --metrics 127.0.0.1:9700 \
	--log-level warn --state-dir /var/lib/x >"$tmp/dump.conf"
for line in 'mount_port = 20049' 'metrics_listen = "127.0.0.1:9700"' \
	'log_level = "warn"' 'state_dir = "/var/lib/x"'; do
	if grep -qxF "$line" "$tmp/dump.conf"; then
		echo "ok: the dump has $line"
	else
		echo "FAIL: the dump lacks '$line'" >&2
		fails=$((fails + 1))
	fi
done
if out=$("$bin" --check-config "$tmp/dump.conf" --no-probe 2>&1); then
	echo "ok: the dump passes --check-config: $out"
else
	echo "FAIL: the dump does not pass --check-config: $out" >&2
	fails=$((fails + 1))
fi
# `nfscached stats` takes a count of 1 or more and an interval of at least
# 0.1 s, as numbers; anything else is a usage error (status 2).
for args in "--count -1" "--count abc" "--count 0" "--count 2.5" \
	"--interval x" "--interval 0.05"; do
	rc=0
	# shellcheck disable=SC2086 # the flag and its value, split
	"$bin" stats --metrics 127.0.0.1:1 $args >/dev/null 2>&1 || rc=$?
	if ((rc == 2)); then
		echo "ok: stats $args -> 2"
	else
		echo "FAIL: stats $args -> status $rc, want 2" >&2
		fails=$((fails + 1))
	fi
done

# Write a configuration with cache_dir = $2 on line 3 into file $1.
cache_conf() {
	cat >"$1" <<EOF
listen = "127.0.0.1"
state_dir = "$tmp/state"
cache_dir = "$2"
nfs_port = 2
mount_port = 0
metrics_listen = ""
admin_socket = ""
register_rpcbind = false
export "/data" {
  id = 1
  upstream = "nfs://127.0.0.1/srv/data"
  clients = {"127.0.0.1/32"}
}
EOF
}

# Expect `nfscached $3...` to exit 1 with line $2 exactly (on stdout or
# stderr, after the log's "TIME nfscached: error: " when $1 is "log").
expect_line() {
	local how=$1 want=$2 out rc=0
	shift 2
	out=$(timeout 20 "$bin" "$@" </dev/null 2>&1) || rc=$?
	if [[ $how == log ]]; then
		out=$(sed -n 's/^[^ ]* nfscached: error: //p' <<<"$out")
	fi
	if ((rc == 1)) && grep -qxF -- "$want" <<<"$out"; then
		echo "ok: $* -> 1: $want"
	else
		echo "FAIL: $* -> status $rc (want 1 and '$want'), output:" >&2
		printf '%s\n' "$out" | head -n 5 >&2
		fails=$((fails + 1))
	fi
}

: >"$tmp/plain"
cache_conf "$tmp/file.conf" "$tmp/plain"
cache_conf "$tmp/under.conf" "$tmp/plain/cache"
for c in file under; do
	dir=$tmp/plain
	[[ $c == under ]] && dir=$tmp/plain/cache
	want="$tmp/$c.conf:3: cache_dir $dir: Not a directory"
	expect_line plain "$want" --check-config "$tmp/$c.conf"
	expect_line log "$want" --config "$tmp/$c.conf"
done
# A usable directory whose slab this shell holds locked (as a second
# daemon on it would): --check-config passes, the start is refused by
# disk_open at the cache_dir line.
mkdir "$tmp/locked"
exec {lockfd}>"$tmp/locked/slab"
flock -x "$lockfd"
cache_conf "$tmp/locked.conf" "$tmp/locked"
if out=$("$bin" --check-config "$tmp/locked.conf" 2>&1); then
	echo "ok: a usable cache_dir passes --check-config: $out"
else
	echo "FAIL: a usable cache_dir fails --check-config: $out" >&2
	fails=$((fails + 1))
fi
expect_line log "$tmp/locked.conf:3: cache_dir $tmp/locked: in use by another process (slab locked): Device or resource busy" \
	--config "$tmp/locked.conf"
exec {lockfd}>&-

# --check-config: a state_dir under a missing parent is refused (the
# start would fail: the daemon makes state_dir, not its parents).
cache_conf "$tmp/noparent.conf" "$tmp/cache-np"
sed -i "s|^state_dir = .*|state_dir = \"$tmp/missing/state\"|" "$tmp/noparent.conf"
expect_line plain "state_dir $tmp/missing/state: its parent $tmp/missing does not exist: the start would fail (the daemon makes state_dir itself, not its parents; create $tmp/missing, or choose a state_dir in an existing directory)" \
	--check-config "$tmp/noparent.conf"

# Upstream probes, warnings only (exit 0): a name that does not resolve,
# an address where nothing answers on the NFS port; --no-probe skips
# them. In a network namespace of its own with only lo up: the name's DNS
# query has no route off this machine (it must not reach the configured
# resolver), and nothing listens on the port taken below.
isolated() {
	unshare --net bash -c 'ip link set lo up && exec "$@"' _ "$@"
}
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cache_conf "$tmp/probe.conf" "$tmp/cache-probe"
sed -i "s|^  upstream = .*|  upstream = \"nfs://127.0.0.1/srv/data?nfsport=$dead\&mountport=$dead\"|" "$tmp/probe.conf"
cat >>"$tmp/probe.conf" <<EOF
export "/other" {
  id = 2
  upstream = "nfs://no-such-host.invalid/srv/data?nfsport=2049&mountport=2049"
}
EOF
rc=0
out=$(isolated "$bin" --check-config "$tmp/probe.conf" 2>&1) || rc=$?
if [[ $rc == 0 && $out == *"warning: export \"/data\": upstream 127.0.0.1 port $dead (NFS v3) does not answer an RPC NULL call within 2 s (Connection refused)"* &&
	$out == *"warning: export \"/other\": upstream host no-such-host.invalid does not resolve now"* ]]; then
	echo "ok: --check-config warns of upstreams that do not resolve or answer, exit 0"
else
	echo "FAIL: --check-config probes: status $rc, output: $out" >&2
	fails=$((fails + 1))
fi
rc=0
out=$(isolated "$bin" --check-config "$tmp/probe.conf" --no-probe 2>&1) || rc=$?
if [[ $rc == 0 && $out != *"warning: export"* ]]; then
	echo "ok: --no-probe skips the upstream probes"
else
	echo "FAIL: --no-probe: status $rc, output: $out" >&2
	fails=$((fails + 1))
fi

# --user: the check runs as the service's user. A cache_dir only root may
# use passes as root and is refused as nobody, as the service would be.
mkdir -m 0700 "$tmp/rootonly"
cache_conf "$tmp/user.conf" "$tmp/rootonly/cache"
chmod 0755 "$tmp"
if "$bin" --check-config "$tmp/user.conf" --no-probe >/dev/null 2>&1; then
	echo "ok: as root the cache_dir passes"
else
	echo "FAIL: as root the cache_dir is refused" >&2
	fails=$((fails + 1))
fi
rc=0
out=$("$bin" --check-config "$tmp/user.conf" --no-probe --user nobody 2>&1) || rc=$?
if [[ $rc == 1 && $out == *"$tmp/user.conf:3: cache_dir $tmp/rootonly/cache: Permission denied"* ]]; then
	echo "ok: --user nobody: the cache_dir is refused at its line"
else
	echo "FAIL: --user nobody: status $rc, output: $out" >&2
	fails=$((fails + 1))
fi
expect_line plain "--user no-such-user-xyz: no such user" \
	--check-config "$tmp/user.conf" --user no-such-user-xyz

# A metrics listener that cannot bind (an address this machine does not
# have) stops the start with the reason from the system, before serving.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rc=0
out=$(timeout 60 "$bin" --upstream 'nfs://127.0.0.1/x?nfsport=1&mountport=1' \
	--listen "127.0.0.1:$port" --mount-port 0 --state-dir "$tmp/st" \
	--metrics 192.0.2.1:9655 --no-rpcbind 2>&1) || rc=$?
if [[ "$rc" == 1 && "$out" == *"error: cannot listen for metrics on 192.0.2.1:9655: Cannot assign requested address"* ]]; then
	echo "ok: a metrics address that cannot be bound is refused with its errno"
else
	echo "FAIL: metrics bind failure: status $rc, output: $out" >&2
	fails=$((fails + 1))
fi
# cache_preallocate past 7/8 of the memory the process may use (here
# RLIMIT_AS, 2 GiB, against cache_size 4096 MiB) is not preallocated, with
# a warning naming both, before the start goes on (to the same metrics
# failure); under it (cache_size 16) no such warning.
"$bin" --dump-config --upstream 'nfs://127.0.0.1/x?nfsport=1&mountport=1' \
	--listen "127.0.0.1:$port" --mount-port 0 --state-dir "$tmp/st" \
	--metrics 192.0.2.1:9655 --no-rpcbind >"$tmp/pre.conf"
# The sanitizers reserve terabytes of shadow address space at start, so a
# sanitizer build cannot run under any RLIMIT_AS: this check is the Release
# tree's (as integration.cache_memory's RSS bounds are). (grep reads all of
# ldd's output: with -q, pipefail would see ldd's SIGPIPE.)
sizes="4096 16"
if ldd "$bin" 2>/dev/null | grep -E 'lib(asan|tsan)' >/dev/null; then
	echo "not here: cache_preallocate under RLIMIT_AS (a sanitizer build cannot start under one)"
	sizes=
fi
for size in $sizes; do
	sed -e "s/^cache_size = .*/cache_size = $size/" \
		-e 's/^cache_preallocate = .*/cache_preallocate = true/' \
		"$tmp/pre.conf" >"$tmp/pre$size.conf"
	rc=0
	out=$(timeout 60 prlimit --as=$((2 << 30)) "$bin" --config "$tmp/pre$size.conf" 2>&1) || rc=$?
	# The limit named is the lower of RLIMIT_AS and the cgroup's.
	warn="warn: cache_preallocate: cache_size $size MiB is more than 7/8 of the memory this process may use ("
	if [[ "$rc" == 1 && "$out" == *"cannot listen for metrics"* &&
		( ($size == 4096 && "$out" == *"$warn"*) ||
		  ($size == 16 && "$out" != *"cache_preallocate"*) ) ]]; then
		echo "ok: cache_preallocate with cache_size $size under a 2 GiB RLIMIT_AS"
	else
		echo "FAIL: cache_preallocate, cache_size $size: status $rc, output: $out" >&2
		fails=$((fails + 1))
	fi
done
echo "test_flags: $fails failure(s)"
((fails == 0))
