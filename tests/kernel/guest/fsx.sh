# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# fsx: the project's fsx model (kfsx, built from tests/integration/
# fsx_model.c) on files of the mount, one per seed in $KT_FSX_SEEDS,
# $KT_FSX_OPS operations each, the seeds at the same time (the guest has
# two CPUs, and each run waits on the server much of its time). kfsx
# checks every read against its model; ktest.sh replays each seed on the
# host and compares the upstream's file.

guest_fsx() {
	local seed pids=() rc=0 i=0
	for seed in $KT_FSX_SEEDS; do
		step "kfsx seed $seed, $KT_FSX_OPS operations"
		KFSX_FILE=$M/fsx.$seed NFSC_FSX_SEED=$seed NFSC_FSX_OPS=$KT_FSX_OPS \
			"$KFSX_BIN" >"/tmp/kfsx.$seed" 2>&1 &
		pids+=($!)
	done
	for seed in $KT_FSX_SEEDS; do
		wait "${pids[i++]}" || rc=1
		grep -E '^kfsx|FAIL' "/tmp/kfsx.$seed" || true
	done
	((rc == 0)) || { cat /tmp/kfsx.* >&2; fail "kfsx"; }
}
