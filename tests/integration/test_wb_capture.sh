#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A second, independent count of what write-back sends upstream: the
# packets themselves. Runs under harness.sh (with wbtest_hold.conf):
#
#   test_wb_capture.sh TEST_WB_COALESCE
#
# dumpcap records loopback traffic to Ganesha's NFS port and to the
# proxy's while `test_wb_coalesce random_4k` runs (10,240 random 4 KiB
# UNSTABLE WRITEs over 40 MiB, then COMMIT); tshark then counts the NFSv3
# WRITE and COMMIT calls on each port. The WRITE and COMMIT calls that
# reached Ganesha must equal the proxy's own counters
# (nfscached_upstream_rpcs_total{procedure="write"|"commit"}, the proxy
# being fresh), and the client WRITEs seen on the proxy's port must be
# exactly the 10,240 the test sent.
set -euo pipefail

prog=${1:?usage: $0 TEST_WB_COALESCE}
: "${NFSC_LIB:?run under harness.sh}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

cap=$NFSC_TMP/wb-capture.pcapng
up=$NFSC_DIRECT_NFS_PORT
px=$NFSC_PROXY_NFS_PORT
nfsc_capture_start "tcp port $up or tcp port $px" "$cap" "$NFSC_TMP/dumpcap.log" || exit 1

status=0
"$prog" random_4k || status=1
nfsc_capture_stop

# Print how many NFSv3 calls of procedure $2 went to TCP port $1.
calls() {
	nfsc_capture_calls "$cap" "$1" "$2" rpc.xid | wc -l
}

up_writes=$(calls "$up" 7)
up_commits=$(calls "$up" 21)
client_writes=$(calls "$px" 7)
m_writes=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_rpcs_total{procedure="write"}')
m_commits=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_rpcs_total{procedure="commit"}')
nfsc_say "capture: Ganesha got $up_writes WRITEs and $up_commits COMMITs;" \
	"the proxy counted $m_writes and $m_commits; clients sent $client_writes WRITEs"
# nfsc_capture_calls reassembles out-of-order segments, so the wire must
# match the proxy's counter exactly.
if ((up_writes != m_writes)); then
	nfsc_say "upstream WRITEs on the wire ($up_writes) != the proxy's counter ($m_writes)"
	status=1
fi
if [[ "$up_commits" != "$m_commits" ]]; then
	nfsc_say "upstream COMMITs on the wire ($up_commits) != the proxy's counter ($m_commits)"
	status=1
fi
if ((client_writes != 10240)); then
	nfsc_say "client WRITEs on the wire: $client_writes, want 10240"
	status=1
fi
# At most ceil(40 MiB / wsize) + 2, wsize being write-back's WRITE size
# (writeback_wsize, 256 KiB by default, under Ganesha's 1 MiB wtmax).
wsize=$(nfsc_metric "$NFSC_METRICS_ADDR" nfscached_config_writeback_wsize_bytes)
wsize=${wsize%.*}
((wsize > 1048576)) && wsize=1048576
max=$(((40 * 1048576 + wsize - 1) / wsize + 2))
if ((up_writes == 0 || up_writes > max)); then
	nfsc_say "upstream WRITEs on the wire: $up_writes, want 1..$max (wsize $wsize)"
	status=1
fi
exit "$status"
