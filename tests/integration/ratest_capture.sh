#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A second, independent count of the upstream READs of a cold sequential
# read: the packets. Runs under ratest_proxy.sh (so the proxy's upstream
# is the relay, and the relay's connections end at Ganesha's NFS port):
#
#   ratest_proxy.sh ... -- ratest_capture.sh TEST_RA_PROXY
#
# dumpcap records the packets sent to Ganesha's NFS port (calls only:
# the 256 MiB of replies flow the other way) while `TEST_RA_PROXY
# ra_sequential` runs with RA_DIRECT_MIB=0 (no READs of its own through
# the relay). tshark then lists the `count` of every NFSv3 READ call
# Ganesha received. readahead.h's windows give, for 256 MiB in 64 KiB
# READs from offset 0 (see seq_model() in test_ra_proxy.c): one demand
# READ of 64K, prefetches of 128K and 512K, 254 of 1M, and the tail 320K:
# 259 READs, 255 of them 1 MiB, summing to 256 MiB; the proxy's own
# counter must say 259 as well.
set -euo pipefail

prog=${1:?usage: $0 TEST_RA_PROXY}
: "${NFSC_LIB:?run under harness.sh}"
: "${NFSC_RELAY_URL:?run under ratest_proxy.sh}"
# shellcheck source=../../scripts/lib.sh
. "$NFSC_LIB"

cap=$NFSC_TMP/ra-capture.pcapng
up=$NFSC_DIRECT_NFS_PORT
nfsc_capture_start "tcp dst port $up" "$cap" "$NFSC_TMP/dumpcap.log" || exit 1

status=0
RA_SEQ_MIB=256 RA_DIRECT_MIB=0 "$prog" ra_sequential || status=1
nfsc_capture_stop

# The count of every READ call to Ganesha, one a line, in capture order.
nfsc_capture_calls "$cap" "$up" 6 nfs.count3 >"$NFSC_TMP/read-counts"
reads=$(wc -l <"$NFSC_TMP/read-counts")
full=$(grep -cx 1048576 "$NFSC_TMP/read-counts" || true)
bytes=$(awk '{ s += $1 } END { print s + 0 }' "$NFSC_TMP/read-counts")
others=$(grep -vx 1048576 "$NFSC_TMP/read-counts" | sort -n | tr '\n' ' ' || true)
m_reads=$(nfsc_metric "$NFSC_METRICS_ADDR" 'nfscached_upstream_rpcs_total{procedure="read"}')
nfsc_say "capture: Ganesha got $reads READs ($full of 1 MiB; others: $others)" \
	"asking $bytes bytes; the proxy counted $m_reads"
want_others="65536 131072 327680 524288 "
if [[ "$reads" != 259 || "$m_reads" != 259 ]]; then
	nfsc_say "READs on the wire $reads, counted $m_reads: want 259"
	status=1
fi
if [[ "$full" != 255 || "$others" != "$want_others" ]]; then
	nfsc_say "READ sizes: $full of 1 MiB and '$others'; want 255 and '$want_others'"
	status=1
fi
if [[ "$bytes" != $((256 * 1024 * 1024)) ]]; then
	nfsc_say "READ bytes asked on the wire $bytes, want $((256 * 1024 * 1024))"
	status=1
fi
exit "$status"
