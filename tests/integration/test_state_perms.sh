#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_state_perms: a handle key file or a state_dir other users could
# use to forge handles is refused, by --check-config and by a real start
# alike, with a message naming the file, its mode and the fix:
#   - handle.key of mode 0644 or 0666 (others can read it): exit 1,
#     "handle key PATH has mode 0644: ... chmod 600 PATH ...";
#   - a state_dir of mode 0777 (others can replace the key): exit 1,
#     "state_dir DIR has mode 0777: ... chmod 700 DIR";
#   - with mode 0600 and 0700 (what the systemd unit's StateDirectoryMode
#     and the daemon's own mkdir make) --check-config passes and the
#     start gets past the key: it stops at a cache_dir whose slab this
#     shell holds locked (found only by disk_open, after the key), so
#     nothing is served.
# Needs NFSCACHED_BIN.
set -euo pipefail
bin=${NFSCACHED_BIN:?set NFSCACHED_BIN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# Write a configuration with state_dir $2 and cache_dir $3 (line 3) to $1.
state_conf() {
	cat >"$1" <<CONF
listen = "127.0.0.1"
state_dir = "$2"
cache_dir = "$3"
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
CONF
}

# Expect `nfscached $3...` to exit $1 with $2 in its output.
expect() {
	local want=$1 text=$2 out rc=0
	shift 2
	out=$(timeout 20 "$bin" "$@" </dev/null 2>&1) || rc=$?
	if [[ "$rc" == "$want" && "$out" == *"$text"* ]]; then
		echo "ok: $* -> $rc: $(grep -F -- "$text" <<<"$out" | head -n 1)"
	else
		echo "FAIL: $* -> status $rc (want $want and '$text'), output:" >&2
		printf '%s\n' "$out" | head -n 5 >&2
		fails=$((fails + 1))
	fi
}

# A cache_dir that stops a start after the key: its slab locked here.
mkdir "$tmp/locked"
exec {lockfd}>"$tmp/locked/slab"
flock -x "$lockfd"
state="$tmp/state"
key="$state/handle.key"
conf="$tmp/n.conf"
state_conf "$conf" "$state" "$tmp/locked"
past_key="$conf:3: cache_dir $tmp/locked: in use by another process"

# The daemon makes the state_dir and the key itself: 0700 and 0600.
expect 1 "$past_key" --config "$conf"
if [[ $(stat -c %a "$state") == 700 && $(stat -c %a "$key") == 600 ]]; then
	echo "ok: the daemon made $state 0700 and its key 0600"
else
	echo "FAIL: state_dir $(stat -c %a "$state"), key $(stat -c %a "$key")" >&2
	fails=$((fails + 1))
fi
expect 0 ": ok (1 export)" --check-config "$conf"

for mode in 0644 0666 0640 0604; do
	chmod "$mode" "$key"
	msg="handle key $key has mode $mode: other users can read"
	expect 1 "$msg" --check-config "$conf"
	expect 1 "chmod 600 $key" --check-config "$conf"
	expect 1 "$msg" --config "$conf"
done
chmod 0600 "$key"
expect 1 "$past_key" --config "$conf"

for mode in 0777 0770 0757; do
	chmod "$mode" "$state"
	msg="state_dir $state has mode $mode: other users can replace"
	expect 1 "$msg" --check-config "$conf"
	expect 1 "chmod 700 $state" --check-config "$conf"
	expect 1 "$msg" --config "$conf"
done
# Readable (not writable) by others is fine: the key itself is 0600.
chmod 0755 "$state"
expect 0 ": ok (1 export)" --check-config "$conf"
expect 1 "$past_key" --config "$conf"
chmod 0700 "$state"
expect 0 ": ok (1 export)" --check-config "$conf"
exec {lockfd}>&-
echo "test_state_perms: $fails failure(s)"
((fails == 0))
