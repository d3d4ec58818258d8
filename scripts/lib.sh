# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shell functions shared by the test harness, the demo and the test runner.
# Source it from bash: `. scripts/lib.sh`. It sets no shell options of its
# own; every function returns non-zero on failure and says why on stderr.
#
# What it knows how to run, all on 127.0.0.1 and all on explicit ports:
#   rpcbind      nfsc_ensure_rpcbind / nfsc_stop_rpcbind
#                (NFS-Ganesha 4.3 will not serve NFSv3 without one)
#   NFS-Ganesha  nfsc_ganesha_start / nfsc_ganesha_launch / nfsc_ganesha_stop
#                (a VFS export of one directory, the settings HACKING.md's
#                "Testing on these machines" lists; ganesha.nfsd
#                daemonizes, we track it by pidfile)
#   nfscached    nfsc_proxy_config / nfsc_proxy_start / nfsc_proxy_stop
#                (runs in the foreground as our child, so its exit status
#                can be collected with `wait`)
#   dumpcap      nfsc_capture_start / nfsc_capture_stop / nfsc_capture_calls
#                (a packet capture on lo, for tests that count calls on
#                the wire; tshark reads the file afterwards)
# and how to pick TCP ports nobody else is using (nfsc_free_ports).

# Print a message on stderr with a prefix.
nfsc_say() {
	printf 'nfsc: %s\n' "$*" >&2
}

# True if pid names a live process (a zombie counts as gone).
nfsc_pid_alive() {
	local pid=$1 state
	[[ -n "$pid" ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ "$state" != Z ]]
}

# Wait until pid is gone; $2 = timeout in tenths of a second. True if gone.
nfsc_wait_gone() {
	local pid=$1 tenths=$2 i
	for ((i = 0; i < tenths; i++)); do
		nfsc_pid_alive "$pid" || return 0
		sleep 0.1
	done
	! nfsc_pid_alive "$pid"
}

# True if an ONC RPC NULL call (AUTH_NULL) to program $2 version $3 on
# 127.0.0.1:$1 over TCP is answered MSG_ACCEPTED/SUCCESS within 5 s
# (RFC 5531 s9, record marking s11). Done in bash over /dev/tcp rather
# than with `rpcinfo -n PORT -t`, because rpcinfo asks rpcbind first and
# fails while the program has no mapping there, which happens whenever
# another Ganesha on this machine unregisters on its way down.
nfsc_rpc_ping() {
	local port=$1 prog=$2 vers=$3 xid call got zero=00000000
	xid=$(printf '%08x' $(((RANDOM << 15 | RANDOM) & 0x7fffffff)))
	# Record mark (last fragment, 40 bytes), xid, CALL, RPC version 2,
	# program, version, procedure 0, AUTH_NULL credential and verifier.
	call=$(printf '80000028%s%s00000002%08x%08x%s%s%s%s%s' "$xid" $zero \
		"$prog" "$vers" $zero $zero $zero $zero $zero | sed 's/../\\x&/g')
	# shellcheck disable=SC2016 # expanded by the inner bash
	got=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "$2" >&3
		head -c 28 <&3 | od -An -v -tx1 | tr -d " \n"' _ "$port" "$call" 2>/dev/null) || return 1
	# Record mark (last fragment, 24 bytes), xid, REPLY, MSG_ACCEPTED,
	# AUTH_NULL verifier, SUCCESS.
	[[ "$got" == "80000018${xid}00000001$zero$zero$zero$zero" ]]
}

# ---------------------------------------------------------------- ports
#
# A port is ours while ${NFSC_PORT_LOCKS}/PORT exists (mkdir is atomic, so
# two harnesses running at once never pick the same port) and holds the pid
# of its owner; a lock whose owner is dead is taken over. Ports come from
# 20000..31999, below the kernel's ephemeral range (32768..60999), so an
# outgoing connection cannot take one between our check and the bind.

NFSC_PORT_LOCKS=${NFSC_PORT_LOCKS:-${TMPDIR:-/tmp}/nfscached-ports}

# True if any TCP socket on this machine uses port as its local port.
nfsc_port_busy() {
	ss -Htan "( sport = :$1 )" 2>/dev/null | grep -q .
}

# Try to reserve port for owner pid $2. True if it is now ours.
nfsc_port_reserve() {
	local port=$1 owner=$2 lock="$NFSC_PORT_LOCKS/$1" old
	mkdir -p "$NFSC_PORT_LOCKS" 2>/dev/null || true
	if ! mkdir "$lock" 2>/dev/null; then
		old=$(cat "$lock/owner" 2>/dev/null) || old=
		# An owner that died (or a lock still being written) is not ours
		# to judge unless its pid is known and gone.
		[[ -n "$old" ]] && ! nfsc_pid_alive "$old" || return 1
		rm -rf "$lock"
		mkdir "$lock" 2>/dev/null || return 1
	fi
	echo "$owner" >"$lock/owner"
	if nfsc_port_busy "$port"; then
		rm -rf "$lock"
		return 1
	fi
}

# Print n free TCP ports, space-separated, reserved for ${NFSC_PORT_OWNER:-$$}
# until nfsc_release_ports. Fails after 1000 tries.
nfsc_free_ports() {
	local n=$1 owner=${NFSC_PORT_OWNER:-$$} got=() tries=0 port
	while ((${#got[@]} < n)); do
		((tries++ < 1000)) || { nfsc_say "no free ports"; return 1; }
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		nfsc_port_reserve "$port" "$owner" && got+=("$port")
	done
	echo "${got[*]}"
}

# Release the given ports' reservations.
nfsc_release_ports() {
	local port
	for port in "$@"; do
		rm -rf "${NFSC_PORT_LOCKS:?}/$port"
	done
}

# --------------------------------------------------------------- rpcbind

# Run $@ with every file descriptor above 2 closed, in place of this
# (sub)shell. For daemons that outlive their caller: an inherited lock
# file or ctest output pipe would otherwise stay open as long as they live
# (an rpcbind holding the rpcbind lock below blocked every later caller).
nfsc_exec_closed() {
	local fd
	for fd in $(ls "/proc/$BASHPID/fd"); do
		((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
	done
	exec "$@"
}

# Ensure an rpcbind answers on 127.0.0.1. If none answers and no rpcbind
# process exists (one that is on its way out counts once it is gone),
# start `rpcbind -f` in its own session with no inherited descriptors
# (never with -h: that crashes on Debian 12) and set NFSC_RPCBIND_PID, so
# the caller can stop what it started with nfsc_stop_rpcbind. Concurrent
# callers are serialized by a lock; one that waits 60 s for it fails.
# Gives up after about 10 s without an answer.
nfsc_ensure_rpcbind() {
	local lockf="${TMPDIR:-/tmp}/nfscached-rpcbind.lock" pidf i
	local rblog="${TMPDIR:-/tmp}/nfscached-rpcbind.log"
	NFSC_RPCBIND_PID=
	command -v rpcbind >/dev/null || { nfsc_say "rpcbind is not installed"; return 1; }
	for ((i = 0; i < 100; i++)); do
		timeout 5 rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && return 0
		if [[ -z "$NFSC_RPCBIND_PID" ]]; then
			pidf=$(mktemp "${TMPDIR:-/tmp}/nfscached-rpcbind.XXXXXX") || return 1
			if ! (
				flock -w 60 9 || { nfsc_say "$lockf is still locked after 60 s"; exit 1; }
				if ! pgrep -x rpcbind >/dev/null; then
					(nfsc_exec_closed setsid rpcbind -f) </dev/null >"$rblog" 2>&1 &
					echo $! >"$pidf"
				fi
			) 9>>"$lockf"; then
				rm -f "$pidf"
				return 1
			fi
			NFSC_RPCBIND_PID=$(cat "$pidf")
			rm -f "$pidf"
		fi
		sleep 0.1
	done
	nfsc_say "rpcbind does not answer on 127.0.0.1"
	if [[ -n "$NFSC_RPCBIND_PID" ]]; then
		nfsc_pid_alive "$NFSC_RPCBIND_PID" ||
			nfsc_say "the rpcbind started here (pid $NFSC_RPCBIND_PID) has exited"
		[[ -s "$rblog" ]] && nfsc_say "its output: $(cat "$rblog")"
	else
		nfsc_say "an rpcbind process exists but does not answer: $(pgrep -a -x rpcbind | head -3)"
	fi
	return 1
}

# Stop the rpcbind that nfsc_ensure_rpcbind started, if it started one.
nfsc_stop_rpcbind() {
	[[ -n "${NFSC_RPCBIND_PID:-}" ]] || return 0
	kill -TERM "$NFSC_RPCBIND_PID" 2>/dev/null || true
	if ! nfsc_wait_gone "$NFSC_RPCBIND_PID" 50; then
		kill -KILL "$NFSC_RPCBIND_PID" 2>/dev/null || true
	fi
	NFSC_RPCBIND_PID=
}

# ------------------------------------------------------------ rpc.statd
#
# Ganesha's lock manager (Enable_NLM) monitors its lock holders through
# the host's NSM (rpc.statd, program 100024), which it finds through
# rpcbind.

# Ensure an rpc.statd answers through 127.0.0.1's rpcbind. If none is
# registered, start `rpc.statd -F --no-notify` in its own session with its
# state in ${TMPDIR:-/tmp}/nfscached-statd (sm, sm.bak) and set
# NFSC_STATD_PID for nfsc_stop_statd. Serialized by a lock; gives up after
# about 10 s without an answer.
nfsc_ensure_statd() {
	local lockf="${TMPDIR:-/tmp}/nfscached-statd.lock" pidf i
	local dir="${TMPDIR:-/tmp}/nfscached-statd"
	NFSC_STATD_PID=
	command -v rpc.statd >/dev/null || { nfsc_say "rpc.statd is not installed (nfs-common)"; return 1; }
	for ((i = 0; i < 100; i++)); do
		timeout 5 rpcinfo -T tcp 127.0.0.1 100024 1 >/dev/null 2>&1 && return 0
		if [[ -z "$NFSC_STATD_PID" ]]; then
			mkdir -p "$dir/sm" "$dir/sm.bak" || return 1
			pidf=$(mktemp "${TMPDIR:-/tmp}/nfscached-statd.XXXXXX") || return 1
			if ! (
				flock -w 60 9 || { nfsc_say "$lockf is still locked after 60 s"; exit 1; }
				if ! timeout 5 rpcinfo -T tcp 127.0.0.1 100024 1 >/dev/null 2>&1; then
					(nfsc_exec_closed setsid rpc.statd -F --no-notify -P "$dir") \
						</dev/null >"$dir.log" 2>&1 &
					echo $! >"$pidf"
				fi
			) 9>>"$lockf"; then
				rm -f "$pidf"
				return 1
			fi
			NFSC_STATD_PID=$(cat "$pidf")
			[[ -n "$NFSC_STATD_PID" ]] || NFSC_STATD_PID=none
			rm -f "$pidf"
		fi
		sleep 0.1
	done
	nfsc_say "rpc.statd does not answer through rpcbind; its output: $(cat "$dir.log" 2>/dev/null)"
	return 1
}

# Stop every rpc.statd nfsc_ensure_statd started, in any shell (the one
# with its state directory): a test leaves it running for the next, which
# may run in another harness at the same time; the test command stops it
# at the end.
nfsc_stop_test_statd() {
	pkill -TERM -f "^rpc.statd -F --no-notify -P ${TMPDIR:-/tmp}/nfscached-statd\$" 2>/dev/null || true
}

# Stop the rpc.statd that nfsc_ensure_statd started, if it started one.
nfsc_stop_statd() {
	[[ -n "${NFSC_STATD_PID:-}" && "$NFSC_STATD_PID" != none ]] || { NFSC_STATD_PID=; return 0; }
	kill -TERM "$NFSC_STATD_PID" 2>/dev/null || true
	if ! nfsc_wait_gone "$NFSC_STATD_PID" 50; then
		kill -KILL "$NFSC_STATD_PID" 2>/dev/null || true
	fi
	NFSC_STATD_PID=
}

# ----------------------------------------------------------- NFS-Ganesha
#
# An instance lives in a work directory W: W/ganesha.conf, W/ganesha.log,
# W/ganesha.pid, W/recovery (its NFSv4 RecoveryRoot).

# Print the top-level block bodies of config file $1 named $2
# (case-insensitive), or with $2 = "-", every top-level block whose name is
# none of NFS_CORE_PARAM, NFSv4 and EXPORT, whole.
nfsc_conf_blocks() {
	awk -v want="$2" '
	function merged(n) { n = tolower(n); return n == "nfs_core_param" || n == "nfsv4" || n == "export" }
	{
		line = $0; code = line; sub(/#.*/, "", code)
		if (depth == 0 && match(code, /^[ \t]*[A-Za-z0-9_]+[ \t]*\{/)) {
			name = code; sub(/^[ \t]*/, "", name); sub(/[ \t]*\{.*/, "", name)
			if (want == "-") keep = !merged(name)
			else keep = tolower(name) == tolower(want)
			body = (want != "-")
			opens = gsub(/\{/, "{", code); closes = gsub(/\}/, "}", code)
			depth = opens - closes
			if (keep && !body) print line
			else if (keep) {
				rest = line; sub(/^[^{]*\{/, "", rest)
				if (depth == 0) sub(/\}[^}]*$/, "", rest)
				if (rest ~ /[^ \t]/) print rest
			}
			next
		}
		if (depth > 0) {
			opens = gsub(/\{/, "{", code); closes = gsub(/\}/, "}", code)
			depth += opens - closes
			if (keep && (!body || depth > 0)) print line
			else if (keep && depth == 0) { sub(/\}[^}]*$/, "", line); if (line ~ /[^ \t]/) print line }
			next
		}
		if (want == "-" && code ~ /[^ \t]/) print line
	}' "$1"
}

# Print the block body on stdin less its top-level items (a `Key = value;`
# setting or a `Name { ... }` sub-block) also named in body $1, then body
# $1: a merge where $1 wins. (Ganesha rejects some keys set twice in one
# block, such as Path, and a second block of the same name resets the
# first.)
nfsc_conf_merge() {
	awk -v extra="$1" '
	function itemname(code,   n) {
		n = code; sub(/^[ \t]*/, "", n)
		if (!match(n, /^[A-Za-z0-9_]+[ \t]*[={]/)) return ""
		sub(/[ \t]*[={].*/, "", n); return tolower(n)
	}
	BEGIN {
		m = split(extra, xl, "\n")
		for (i = 1; i <= m; i++) {
			code = xl[i]; sub(/#.*/, "", code)
			if (d == 0 && (n = itemname(code)) != "") drop[n] = 1
			d += gsub(/\{/, "{", code) - gsub(/\}/, "}", code)
		}
		d = 0
	}
	{
		code = $0; sub(/#.*/, "", code)
		if (d == 0) skip = ((n = itemname(code)) != "" && (n in drop))
		d += gsub(/\{/, "{", code) - gsub(/\}/, "}", code)
		if (!skip) print
	}'
	[[ -z "$1" ]] || printf '%s\n' "$1"
}

# Print a Ganesha configuration exporting directory $1 as /export
# (Export_Id 1) on NFS port $2 and MOUNT port $3, recovery under $4.
# $5, if given, is a file of extra configuration: the bodies of its
# NFS_CORE_PARAM, NFSv4 and EXPORT blocks are merged into the generated
# blocks of the same name (its settings and sub-blocks replace ours of the
# same name), and its other blocks are appended as they are.
nfsc_ganesha_config() {
	local dir=$1 nfs_port=$2 mnt_port=$3 recovery=$4 extra=${5:-}
	local core="" v4="" export="" other=""
	if [[ -n "$extra" ]]; then
		[[ -r "$extra" ]] || { nfsc_say "cannot read $extra"; return 1; }
		core=$(nfsc_conf_blocks "$extra" NFS_CORE_PARAM)
		v4=$(nfsc_conf_blocks "$extra" NFSv4)
		export=$(nfsc_conf_blocks "$extra" EXPORT)
		other=$(nfsc_conf_blocks "$extra" -)
	fi
	echo "# Generated by nfscached scripts/lib.sh for a loopback test instance."
	echo "NFS_CORE_PARAM {"
	nfsc_conf_merge "$core" <<-EOF
	  Bind_Addr = 127.0.0.1;
	  NFS_Port = $nfs_port;
	  MNT_Port = $mnt_port;
	  mount_path_pseudo = true;
	  Enable_RQUOTA = false;
	  Enable_NLM = false;
	  Enable_UDP = false;
	  Protocols = 3, 4;
	EOF
	echo "}"
	echo "NFSv4 {"
	nfsc_conf_merge "$v4" <<-EOF
	  Graceless = true;
	  RecoveryRoot = "$recovery";
	EOF
	echo "}"
	echo "EXPORT {"
	nfsc_conf_merge "$export" <<-EOF
	  Export_Id = 1;
	  Path = "$dir";
	  Pseudo = /export;
	  Access_Type = RW;
	  Squash = No_Root_Squash;
	  SecType = sys;
	  Protocols = 3, 4;
	  Transports = TCP;
	  MaxRead = 1048576;
	  MaxWrite = 1048576;
	  Attr_Expiration_Time = 0;
	  FSAL {
	    Name = VFS;
	  }
	EOF
	echo "}"
	[[ -z "$other" ]] || printf '%s\n' "$other"
}

# Start the instance in work dir $1 from its existing ganesha.conf and wait
# until it serves NFS port $2 and MOUNT port $3: the log (from this start
# on) says NFS SERVER INITIALIZED and RPC NULL calls to both ports are
# answered. Fails, printing the log, on `CONFIG :CRIT` or after 20 s.
#
# Starts are serialized by a lock (held until the instance is up, waited
# for at most 120 s) because Ganesha clears 100003/100005 from rpcbind and
# then sets them: two instances starting at once interleave those calls,
# rpcbind refuses the second SET, and that instance logs "Cannot register
# NFS V3 on TCP" and exits. An instance that still fails that way is
# started again, NFSC_GANESHA_TRIES tries in all (default 8, about 12 s of
# waiting): besides another Ganesha starting at the same moment, a proxy
# started with register_rpcbind = true and rpcbind_conflict = "replace"
# (integration.rpcbind, integration.nlm_reboot) owns 100003 in the host's
# rpcbind for the seconds it runs, and every Ganesha start fails until it
# exits and puts the mapping back.
#
# Safe under `set -e` in the caller: a failed try is a status to look at,
# never an exit (it was once, and one lost registration failed a test).
nfsc_ganesha_launch() {
	local w=$1 nfs_port=$2 mnt_port=$3 try rc tries=${NFSC_GANESHA_TRIES:-8}
	local lockf="${TMPDIR:-/tmp}/nfscached-ganesha-start.lock"
	w=$(cd "$w" && pwd) || return 1
	for ((try = 1; try <= tries; try++)); do
		rc=0
		(
			flock -w 120 9 || { nfsc_say "$lockf is still locked after 120 s"; exit 1; }
			nfsc_ganesha_launch_once "$w" "$nfs_port" "$mnt_port"
		) 9>>"$lockf" || rc=$?
		((rc == 3)) || return "$rc"
		nfsc_say "Ganesha ($w) could not register with rpcbind (try $try of $tries)"
		sleep "$((try < 3 ? 1 : 2))"
	done
	return 1
}

# Check Ganesha log $2 of work dir $1 from byte offset $3 for a failed
# start; on one, stop the instance and return 1 (a configuration error,
# printed) or 3 (it could not register with rpcbind). 0 otherwise.
nfsc_ganesha_log_failed() {
	local w=$1 new
	new=$(tail -c +"$(($3 + 1))" "$2")
	if grep -q 'CONFIG :CRIT' <<<"$new"; then
		nfsc_say "Ganesha ($w) has a configuration error; its log:"
		printf '%s\n' "$new" >&2
		nfsc_ganesha_stop "$w"
		return 1
	fi
	if grep -q 'Cannot register NFS' <<<"$new"; then
		nfsc_ganesha_stop "$w"
		return 3
	fi
	return 0
}

# One start of nfsc_ganesha_launch, under its lock; ganesha.nfsd gets no
# descriptor above 2, so the daemon it leaves behind does not hold the
# lock. Returns 3 if Ganesha failed to register with rpcbind.
nfsc_ganesha_launch_once() {
	local w=$1 nfs_port=$2 mnt_port=$3 log="$1/ganesha.log" off i pid
	touch "$log"
	off=$(stat -c %s "$log")
	rm -f "$w/ganesha.pid"
	if ! (nfsc_exec_closed ganesha.nfsd -f "$w/ganesha.conf" -L "$log" \
		-p "$w/ganesha.pid" -N NIV_EVENT); then
		nfsc_say "ganesha.nfsd failed to start; its log:"
		cat "$log" >&2
		return 1
	fi
	for ((i = 0; i < 200; i++)); do
		nfsc_ganesha_log_failed "$w" "$log" "$off" || return
		if tail -c +"$((off + 1))" "$log" | grep -q 'NFS SERVER INITIALIZED' &&
			nfsc_rpc_ping "$nfs_port" 100003 3 &&
			nfsc_rpc_ping "$mnt_port" 100005 3; then
			return 0
		fi
		pid=$(cat "$w/ganesha.pid" 2>/dev/null) || pid=
		if [[ -n "$pid" ]] && ! nfsc_pid_alive "$pid"; then
			# It may have logged why just before exiting, after
			# the check above: read the log once more.
			nfsc_ganesha_log_failed "$w" "$log" "$off" || return
			break
		fi
		sleep 0.1
	done
	nfsc_say "Ganesha ($w) is not ready on ports $nfs_port/$mnt_port; its log:"
	tail -c +"$((off + 1))" "$log" >&2
	nfsc_ganesha_stop "$w"
	return 1
}

# Write work dir $1's configuration for export directory $2, NFS port $3,
# MOUNT port $4 and extra config file $5 (optional), then launch it.
nfsc_ganesha_start() {
	local w=$1 dir=$2 nfs_port=$3 mnt_port=$4 extra=${5:-}
	mkdir -p "$w/recovery" || return 1
	w=$(cd "$w" && pwd) || return 1
	dir=$(cd "$dir" && pwd) || return 1
	command -v ganesha.nfsd >/dev/null || { nfsc_say "ganesha.nfsd is not installed"; return 1; }
	nfsc_ganesha_config "$dir" "$nfs_port" "$mnt_port" "$w/recovery" "$extra" \
		>"$w/ganesha.conf" || return 1
	nfsc_ganesha_launch "$w" "$nfs_port" "$mnt_port"
}

# Print the pid of the instance in work dir $1 if it is running.
nfsc_ganesha_pid() {
	local pid
	pid=$(cat "$1/ganesha.pid" 2>/dev/null) || return 1
	nfsc_pid_alive "$pid" || return 1
	echo "$pid"
}

# Stop the instance in work dir $1: SIGTERM, wait until it is gone, SIGKILL
# after 10 s. True if it is not running afterwards.
nfsc_ganesha_stop() {
	local pid
	pid=$(nfsc_ganesha_pid "$1") || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! nfsc_wait_gone "$pid" 100; then
		nfsc_say "Ganesha pid $pid ignored SIGTERM for 10 s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		nfsc_wait_gone "$pid" 50 || return 1
	fi
	rm -f "$1/ganesha.pid"
}

# ------------------------------------------------------------- nfscached

# Print an nfscached configuration: listen on 127.0.0.1, NFS port $1,
# MOUNT port $2, metrics on address $3 (ADDR:PORT), state in directory $4,
# one export "/export" (id 1) in front of upstream URL $5, open to
# 127.0.0.1 without root squashing. $6, if given, is a file appended as it
# is; $7, if given, a file of directives added inside the export section.
# A directive either file sets replaces the base line (nfscached refuses a
# directive given twice). With NFSC_PROXY_THREADS set, the configuration
# says threads = $NFSC_PROXY_THREADS (the tests registered twice, ".t4").
nfsc_proxy_config() {
	local nfs_port=$1 mnt_port=$2 metrics=$3 state=$4 upstream=$5 extra=${6:-}
	local export_extra=${7:-} line name
	echo "# Generated by nfscached scripts/lib.sh for a loopback test instance."
	# A directive given twice is an error: leave out each base line the
	# extra file of its scope sets.
	while IFS= read -r line; do
		name=${line%% =*}
		[[ -n "$extra" ]] && grep -qE "^[[:space:]]*$name[[:space:]]*=" "$extra" && continue
		printf '%s\n' "$line"
	done <<EOF
listen = "127.0.0.1"
nfs_port = $nfs_port
mount_port = $mnt_port
metrics_listen = "$metrics"
state_dir = "$state"
admin_socket = "$state/admin.sock"
register_rpcbind = false
${NFSC_PROXY_THREADS:+threads = $NFSC_PROXY_THREADS}
EOF
	echo 'export "/export" {'
	while IFS= read -r line; do
		name=${line%% =*}
		[[ -n "$export_extra" ]] && grep -qE "^[[:space:]]*$name[[:space:]]*=" "$export_extra" && continue
		printf '\t%s\n' "$line"
	done <<EOF
id = 1
upstream = "$upstream"
clients = {"127.0.0.1/32"}
root_squash = false
secure = false
EOF
	if [[ -n "$export_extra" ]]; then
		cat "$export_extra" || return 1
	fi
	echo "}"
	if [[ -n "$extra" ]]; then
		cat "$extra" || return 1
	fi
}

# Start nfscached in the background of this shell with stdout and stderr
# appended to log $1, then wait until RPC NULL calls to NFS port $2 (and
# MOUNT port $3 unless it is 0 or empty) are answered. $4 is the binary,
# $5... its arguments. Sets NFSC_PROXY_PID. Fails, printing the log, if
# the daemon exits or is not ready within 20 s.
nfsc_proxy_start() {
	local log=$1 nfs_port=$2 mnt_port=$3 bin=$4 i st
	shift 4
	[[ -x "$bin" ]] || { nfsc_say "nfscached binary '$bin' is not executable"; return 1; }
	"$bin" "$@" >>"$log" 2>&1 </dev/null &
	NFSC_PROXY_PID=$!
	for ((i = 0; i < 200; i++)); do
		if ! nfsc_pid_alive "$NFSC_PROXY_PID"; then
			st=0
			wait "$NFSC_PROXY_PID" || st=$?
			nfsc_say "nfscached exited (status $st) before it was ready; its log:"
			cat "$log" >&2
			NFSC_PROXY_PID=
			return 1
		fi
		if nfsc_rpc_ping "$nfs_port" 100003 3 &&
			{ [[ -z "$mnt_port" || "$mnt_port" == 0 ]] ||
				nfsc_rpc_ping "$mnt_port" 100005 3; }; then
			return 0
		fi
		sleep 0.1
	done
	nfsc_say "nfscached is not ready on port $nfs_port after 20 s; its log:"
	cat "$log" >&2
	nfsc_proxy_stop "$NFSC_PROXY_PID" 5 || true
	NFSC_PROXY_PID=
	return 1
}

# Stop nfscached pid $1 (a child of this shell) with SIGTERM, waiting up to
# $2 seconds (default 60: it writes back dirty data first) before SIGKILL.
# Sets NFSC_PROXY_STATUS to its exit status (128+N if killed by signal N)
# and returns it: 0 only for a clean exit.
nfsc_proxy_stop() {
	local pid=$1 secs=${2:-60}
	NFSC_PROXY_STATUS=0
	kill -TERM "$pid" 2>/dev/null || true
	if ! nfsc_wait_gone "$pid" $((secs * 10)); then
		nfsc_say "nfscached pid $pid did not exit ${secs} s after SIGTERM; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || NFSC_PROXY_STATUS=$?
	return "$NFSC_PROXY_STATUS"
}

# Stop the session (process group) led by pid $1: SIGTERM, SIGKILL after
# 5 s.
nfsc_stop_session() {
	[[ -n "$1" ]] || return 0
	kill -TERM -- -"$1" 2>/dev/null || true
	if ! nfsc_wait_gone "$1" 50; then
		kill -KILL -- -"$1" 2>/dev/null || true
	fi
}

# Run $3... in a session of its own, for at most $2 seconds, while
# watching nfscached pid $1 (a child of this shell, or "" to watch
# nothing). If nfscached exits non-zero first, the command is stopped at
# once: a client of a dead server retries forever. Returns the command's
# status (124 on timeout) and sets NFSC_CMD_STATUS to it; sets
# NFSC_WATCHED_EXIT to nfscached's exit status if it exited (and was
# reaped), else to "". NFSC_CMD_PID names the session while it runs.
nfsc_run_watching() {
	local watched=$1 secs=$2 st
	shift 2
	NFSC_CMD_STATUS=0
	NFSC_WATCHED_EXIT=
	setsid timeout -k 10 "$secs" "$@" &
	NFSC_CMD_PID=$!
	while nfsc_pid_alive "$NFSC_CMD_PID"; do
		if [[ -n "$watched" && -z "$NFSC_WATCHED_EXIT" ]] &&
			! nfsc_pid_alive "$watched"; then
			st=0
			wait "$watched" || st=$?
			NFSC_WATCHED_EXIT=$st
			if ((st != 0)); then
				nfsc_say "nfscached exited with status $st while '$1' ran; stopping it"
				nfsc_stop_session "$NFSC_CMD_PID"
			fi
		fi
		sleep 0.2
	done
	wait "$NFSC_CMD_PID" || NFSC_CMD_STATUS=$?
	NFSC_CMD_PID=
	if ((NFSC_CMD_STATUS == 124)); then
		nfsc_say "'$1' timed out after $secs s"
	fi
	return "$NFSC_CMD_STATUS"
}

# --------------------------------------------------------------- clients

# Print nfs:// URL $1 with /$2 appended to its path (before any query).
nfsc_url_join() {
	local url=$1 name=$2 query=""
	if [[ "$url" == *\?* ]]; then
		query="?${url#*\?}"
		url=${url%%\?*}
	fi
	echo "${url%/}/$name$query"
}

# The metrics page of the nfscached at ADDR:PORT $1 as the tests read it:
# as served, then each counter or histogram series that carries an export
# label once more without it, summed over the exports
# (nfscached_reads_total{result="hit"} is every export's). Gauges with an
# export label (nfscached_upstream_up, nfscached_config_*) are not summed.
nfsc_metrics() {
	local page
	page=$(curl -sSf --max-time 10 "http://$1/metrics") || return 1
	printf '%s\n' "$page"
	awk '!/^#/ && NF == 2 && index($1, "export=\"") {
		f = $1
		sub(/\{.*/, "", f)
		if (f !~ /(_total|_bucket|_sum|_count)$/) next
		n = $1
		sub(/export="[^"]*",?/, "", n)
		sub(/,}$/, "}", n)
		sub(/\{\}$/, "", n)
		if (!(n in sum)) order[++k] = n
		sum[n] += $2
	}
	END { for (i = 1; i <= k; i++) printf "%s %.17g\n", order[i], sum[order[i]] }' <<<"$page"
}

# Print the value of the metrics sample exactly named $2 (with its labels,
# e.g. 'nfscached_upstream_rpcs_total{procedure="read"}') from the page of
# nfscached at $1; fails if there is no such sample.
nfsc_metric() {
	nfsc_metrics "$1" | awk -v s="$2" '$1 == s { print $2; found = 1 } END { exit !found }'
}

# Wait until the page pool of the nfscached at ADDR:PORT $1 stops growing
# (nfscached_cache_page_pool_bytes non-zero and the same twice, 0.5 s
# apart; at most 300 s): with cache_preallocate, its budget is faulted
# in. Prints the last value read (empty if none).
nfsc_pool_wait() {
	local last='' now='' i
	for ((i = 0; i < 600; i++)); do
		now=$(nfsc_metric "$1" nfscached_cache_page_pool_bytes 2>/dev/null) || now=''
		[[ -n "$now" && "$now" != 0 && "$now" == "$last" ]] && break
		last=$now
		sleep 0.5
	done
	printf '%s\n' "$now"
}

# -------------------------------------------------------------- captures

# Capture the packets on lo that match BPF filter $1 into pcapng file $2,
# with dumpcap in the background of this shell (a 512 MiB buffer, so a
# busy machine loses fewer packets) and its stderr in log $3. Waits until
# the file has its header (up to 10 s), then 0.5 s more so the capture is
# surely running. Sets NFSC_CAPTURE_PID and an EXIT trap that stops
# dumpcap if the caller exits first (it replaces any EXIT trap). Fails if
# dumpcap or tshark is not installed, or, printing the log, if the
# capture does not start. Stop it with nfsc_capture_stop.
nfsc_capture_start() {
	local filter=$1 file=$2 log=$3 tool i
	NFSC_CAPTURE_PID=
	for tool in dumpcap tshark; do
		command -v "$tool" >/dev/null || { nfsc_say "$tool is not installed"; return 1; }
	done
	dumpcap -q -B 512 -i lo -f "$filter" -w "$file" 2>"$log" &
	NFSC_CAPTURE_PID=$!
	trap 'kill -TERM $NFSC_CAPTURE_PID 2>/dev/null || true' EXIT
	# dumpcap writes the file header once it captures.
	for ((i = 0; i < 100; i++)); do
		[[ -s "$file" ]] && break
		sleep 0.1
	done
	[[ -s "$file" ]] || { nfsc_say "dumpcap did not start"; cat "$log" >&2; return 1; }
	sleep 0.5
}

# Print field $4 (a tshark field name, e.g. nfs.count3 or rpc.xid) of every
# NFSv3 call of procedure $3 (RFC 1813 number: 6 READ, 7 WRITE, 21 COMMIT)
# to TCP port $2 in capture file $1, one value a line, in capture order.
# TCP streams are reassembled, out-of-order segments included: with two
# CPUs capturing, loopback segments can reach the file out of order, and
# without reassemble_out_of_order tshark dropped 3 to 13 of 40 WRITE calls
# of a capture that had lost no packet.
nfsc_capture_calls() {
	local file=$1 port=$2 proc=$3 field=$4
	tshark -r "$file" -d "tcp.port==$port,rpc" -o tcp.desegment_tcp_streams:TRUE \
		-o tcp.reassemble_out_of_order:TRUE \
		-Y "rpc.msgtyp == 0 && nfs.procedure_v3 == $proc && tcp.dstport == $port" \
		-T fields -E occurrence=a -E separator=, -e "$field" 2>/dev/null |
		tr ',' '\n' | grep . || true
}

# Stop the capture nfsc_capture_start started: wait 0.5 s for the last
# packets, SIGINT (dumpcap then finishes the file), wait for it to exit,
# and drop the EXIT trap. Fails if dumpcap had already exited.
nfsc_capture_stop() {
	local pid=${NFSC_CAPTURE_PID:-} st=0
	[[ -n "$pid" ]] || return 0
	sleep 0.5
	if ! kill -INT "$pid" 2>/dev/null; then
		nfsc_say "dumpcap (pid $pid) exited before the capture ended"
		st=1
	fi
	wait "$pid" || true
	trap - EXIT
	NFSC_CAPTURE_PID=
	return "$st"
}
