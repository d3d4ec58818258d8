#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Every metric family nfscached exports is documented in docs/metrics.md:
# scrape /metrics from the harness's proxy and look each "# TYPE" name up.
# Runs under harness.sh.
set -euo pipefail
: "${NFSC_METRICS_ADDR:?run under harness.sh}"
doc="$(dirname "${BASH_SOURCE[0]}")/../../docs/metrics.md"
names=$(curl -sf "http://$NFSC_METRICS_ADDR/metrics" | awk '$1 == "#" && $2 == "TYPE" { print $3 }')
n=0 missing=0
for name in $names; do
	n=$((n + 1))
	if ! grep -q "\`$name\`" "$doc"; then
		echo "metric $name is not documented in docs/metrics.md"
		missing=$((missing + 1))
	fi
done
echo "$n metric families exported, $missing undocumented"
[ "$n" -gt 50 ] && [ "$missing" -eq 0 ]
