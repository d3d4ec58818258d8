# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# fio: Debian's fio, a random read/write job with verify=crc32c on a
# 16 MiB file of the mount ($KT_FIO_JOB, shared with ktest.sh, which
# verifies the upstream's copy with the same job and --verify_only).

guest_fio() {
	step "fio $KT_FIO_JOB"
	# shellcheck disable=SC2086 # the job's options, word by word
	fio --filename="$M/fio.dat" $KT_FIO_JOB --output-format=normal >"/tmp/fio.out" ||
		{ cat /tmp/fio.out; fail "fio"; }
	grep -E 'err=|READ:|WRITE:' /tmp/fio.out
	grep -q 'err= 0' /tmp/fio.out || fail "fio reported an error"
}
