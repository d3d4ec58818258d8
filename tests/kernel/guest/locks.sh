# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# guest_locks: the kernel client's locks on a mount WITHOUT nolock (the
# guest runs rpcbind and rpc.statd; its lockd sends NLM to whatever the
# server's rpcbind names). Through nfscached the locks go to Ganesha's
# lock manager; against Ganesha directly they are the control. Every
# step checks what a lock must exclude, with processes that take turns
# through fifos (no timing):
#   1. flock(1) takes and drops a whole-file lock;
#   2. a held flock excludes another process (flock -n fails), and the
#      holder's exit releases it (its close sends UNLOCK);
#   3. fcntl byte ranges: exclusive [0,10) held; another process is
#      refused [5,15) and F_GETLK names the holder's range; [20,30) is
#      free; a shared lock shares with a shared one and excludes an
#      exclusive one;
#   4. F_SETLKW blocks while the range is held and is granted after the
#      holder unlocks (the client's lockd asks again: QEMU's user network
#      lets no server call the guest, so the proxy's relay of the GRANTED
#      callback cannot reach it; integration.nlm_granted tests the relay);
#   5. sqlite3 through two mounts of the export (two superblocks,
#      nosharecache): two writers of 50 transactions each, concurrently,
#      give 100 rows and integrity_check ok.

# The python helper: lock.py OP FILE START LEN [TYPE] [FIFO_IN FIFO_OUT].
locks_py() {
	python3 - "$@" <<'PY'
import fcntl, os, struct, sys
op, path, start, length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
typ = {"w": fcntl.F_WRLCK, "r": fcntl.F_RDLCK}[sys.argv[5] if len(sys.argv) > 5 else "w"]
fd = os.open(path, os.O_RDWR)
if op == "try":        # exit 0 granted, 1 refused
    try:
        fcntl.lockf(fd, (fcntl.LOCK_EX if typ == fcntl.F_WRLCK else fcntl.LOCK_SH) | fcntl.LOCK_NB, length, start)
    except OSError:
        sys.exit(1)
    sys.exit(0)
if op == "getlk":      # print the conflicting lock: TYPE START LEN
    fl = struct.pack("hhqqi", typ, 0, start, length, 0)
    r = fcntl.fcntl(fd, fcntl.F_GETLK, fl)
    t, w, s, l, p = struct.unpack("hhqqi", r)
    print({fcntl.F_UNLCK: "unlck", fcntl.F_WRLCK: "w", fcntl.F_RDLCK: "r"}[t], s, l)
    sys.exit(0)
if op == "hold":       # lock (blocking), say so, wait for a word, exit
    fin, fout = sys.argv[6], sys.argv[7]
    fcntl.lockf(fd, fcntl.LOCK_EX if typ == fcntl.F_WRLCK else fcntl.LOCK_SH, length, start)
    with open(fout, "w") as f:
        f.write("locked\n")
    with open(fin) as f:
        f.readline()
    sys.exit(0)
sys.exit(2)
PY
}

guest_locks() {
	local f=$M/locks.dat d=/tmp/locks pid st out
	mkdir -p $d
	rm -f $d/*
	mkfifo $d/in $d/out $d/in2 $d/out2
	printf 'base-content\n' >"$f"

	step "locks: 1. flock(1) takes and drops a lock"
	flock -x "$f" -c true || fail "flock -x on $f"
	expect_eq "ok" "ok" "flock -x and its release"

	step "locks: 2. a held flock excludes another process"
	flock -x "$f" -c "echo locked >$d/out; read w <$d/in" &
	pid=$!
	read -r out <$d/out
	expect_eq "$out" "locked" "the holder has the lock"
	st=0
	flock -n -x "$f" -c true || st=$?
	expect_eq "$st" 1 "flock -n while held (1: refused)"
	echo go >$d/in
	wait "$pid" || fail "the holder exited non-zero"
	flock -n -x "$f" -c true || fail "flock -n after the holder exited"
	expect_eq "free" "free" "released by the holder's exit"

	step "locks: 3. fcntl byte ranges"
	locks_py hold "$f" 0 10 w $d/in $d/out &
	pid=$!
	read -r out <$d/out
	expect_eq "$out" "locked" "exclusive [0,10) held"
	st=0
	locks_py try "$f" 5 10 w || st=$?
	expect_eq "$st" 1 "another process's exclusive [5,15) (1: refused)"
	st=0
	locks_py try "$f" 5 10 r || st=$?
	expect_eq "$st" 1 "another process's shared [5,15) (1: refused)"
	expect_eq "$(locks_py getlk "$f" 5 10 w)" "w 0 10" "F_GETLK names the holder's range"
	locks_py try "$f" 20 10 w || fail "[20,30) should be free"
	expect_eq "$(locks_py getlk "$f" 20 10 w)" "unlck 20 10" "F_GETLK of a free range"
	echo go >$d/in
	wait "$pid" || fail "the range holder exited non-zero"
	locks_py hold "$f" 0 10 r $d/in $d/out &
	pid=$!
	read -r out <$d/out
	locks_py try "$f" 0 10 r || fail "a shared lock beside a shared one"
	st=0
	locks_py try "$f" 0 10 w || st=$?
	expect_eq "$st" 1 "an exclusive lock beside a shared one (1: refused)"
	echo go >$d/in
	wait "$pid" || fail "the shared holder exited non-zero"

	step "locks: 4. F_SETLKW waits for the holder"
	locks_py hold "$f" 0 10 w $d/in $d/out &
	pid=$!
	read -r out <$d/out
	locks_py hold "$f" 0 10 w $d/in2 $d/out2 &
	local waiter=$!
	# The waiter is blocked: the range is still refused to a third.
	st=0
	locks_py try "$f" 0 10 w || st=$?
	expect_eq "$st" 1 "the range while held and waited for"
	echo go >$d/in
	wait "$pid" || fail "the first holder exited non-zero"
	read -r out <$d/out2
	expect_eq "$out" "locked" "the waiter got the lock after the release"
	echo go >$d/in2
	wait "$waiter" || fail "the waiter exited non-zero"

	step "locks: 5. sqlite3 through two mounts"
	local M2=/mnt2 db=locks.db
	mkdir -p $M2
	mount -t nfs -o "$KT_MOUNT2_OPTS" "10.0.2.2:/export" $M2 || fail "second mount"
	rm -f "$M/$db"
	sqlite3 "$M/$db" "CREATE TABLE t(w TEXT, i INTEGER);" || fail "create"
	local w
	for w in a b; do
		(
			base=$M
			[[ $w == b ]] && base=$M2
			for ((i = 0; i < 50; i++)); do
				sqlite3 -cmd ".timeout 600000" "$base/$db" \
					"BEGIN IMMEDIATE; INSERT INTO t VALUES('$w', $i); COMMIT;" ||
					exit 1
			done
		) &
		eval "pid_$w=\$!"
	done
	wait "$pid_a" || fail "writer a failed"
	wait "$pid_b" || fail "writer b failed"
	expect_eq "$(sqlite3 "$M2/$db" "SELECT count(*) FROM t;")" 100 "rows through the second mount"
	expect_eq "$(sqlite3 "$M/$db" "SELECT count(DISTINCT w || i) FROM t;")" 100 "distinct rows"
	expect_eq "$(sqlite3 "$M/$db" "PRAGMA integrity_check;")" ok "integrity_check"
	umount $M2 || fail "umount $M2"
}
