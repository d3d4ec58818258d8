#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# metrics.rules: the shipped Prometheus rules (docs/prometheus/) against
# promtool and a recorded /metrics scrape of nfscached (scrape.prom):
#   1. promtool check metrics: the recorded exposition is clean;
#   2. promtool check rules on docs/prometheus/nfscached.rules.yml, and on
#      the queries of the Grafana dashboard (docs/grafana/nfscached.json);
#      the dashboard uses no recording rule and has disk-tier,
#      local-commit and per-export panels;
#   3. every nfscached_ and process_ family the rules and the Grafana
#      dashboard name is in the scrape, and every series of the scenario
#      tests carries a label set the scrape has (plus job and instance);
#      every such family is documented in docs/metrics.md;
#   4. promtool test rules: the scenarios (nfscached.rules.test.yml), and
#      the recorded scrape itself (with up 1) held for 40 minutes, a healthy
#      daemon on which no alert of the rules file may fire and every
#      dashboard query (but histogram quantiles) returns a sample.
#
#   test_rules.sh SRC_DIR TOOLS_DIR
# promtool is $PROMTOOL, or promtool on PATH, or TOOLS_DIR/usr/bin/promtool
# taken from Debian's prometheus package with apt-get download + dpkg-deb -x
# (nothing is installed, no service started).
# Regenerate scrape.prom after changing exported families, with a disk
# tier so that its families and local commit's are in it (FILE holding
# `cache_dir = "DIR"` and `disk_cache_size = 64`, DIR an empty directory):
#   tests/integration/harness.sh --proxy-conf-extra FILE -- sh -c 'curl -s http://$NFSC_METRICS_ADDR/metrics' > tests/prometheus/scrape.prom
set -euo pipefail
src=${1:?usage: test_rules.sh SRC_DIR TOOLS_DIR}
tools=${2:?usage: test_rules.sh SRC_DIR TOOLS_DIR}
here=$src/tests/prometheus
rules=$src/docs/prometheus/nfscached.rules.yml
dash=$src/docs/grafana/nfscached.json
scrape=$here/scrape.prom

fail() { echo "metrics.rules: FAIL: $*" >&2; exit 1; }

# Print the promtool to use, fetching Debian's package into $tools if needed.
find_promtool() {
	if [[ -n "${PROMTOOL:-}" ]]; then echo "$PROMTOOL"; return; fi
	if command -v promtool >/dev/null; then command -v promtool; return; fi
	if [[ ! -x "$tools/usr/bin/promtool" ]]; then
		mkdir -p "$tools"
		[[ "$(apt-cache policy prometheus)" == *"Candidate: "[0-9]* ]] ||
			fail "no prometheus package in the apt sources"
		(cd "$tools" && rm -f prometheus_*.deb && apt-get download prometheus >&2 &&
			dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb) ||
			fail "apt-get download prometheus"
	fi
	echo "$tools/usr/bin/promtool"
}

promtool=$(find_promtool)
"$promtool" --version 2>&1 | head -1
"$promtool" check metrics <"$scrape" || fail "promtool check metrics $scrape"
"$promtool" check rules "$rules" || fail "promtool check rules"

# The dashboard's queries parse: each becomes a recording rule for
# promtool check rules.
python3 - "$dash" >"$tools/dashboard.rules.yml" <<'PY' || fail "reading $dash"
import json, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
print("groups:\n  - name: dashboard\n    rules:")
for i, e in enumerate(exprs):
    print("      - record: dashboard:query_%d\n        expr: %s" % (i, json.dumps(e)))
PY
"$promtool" check rules "$tools/dashboard.rules.yml" || fail "a dashboard query does not parse"
# The dashboard works without the recording rules, and has its disk-tier,
# local-commit and per-export panels.
python3 - "$dash" <<'PY' || fail "the dashboard's panels"
import json, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
bad = [e for e in exprs if "nfscached:" in e]
if bad:
    sys.exit("a dashboard query uses a recording rule: %s" % bad[0])
for fam in ("nfscached_disk_on", "nfscached_disk_hits_total", "nfscached_disk_stores_total",
            "nfscached_disk_errors_total", "nfscached_local_commits_total",
            "nfscached_local_commit_fallbacks_total", "nfscached_local_journal_writes_total",
            "nfscached_local_writeback_failures_total"):
    if not any(fam + "{" in e for e in exprs):
        sys.exit("no dashboard panel shows %s" % fam)
for fam in ("nfscached_reads_total", "nfscached_read_bytes_total",
            "nfscached_upstream_write_bytes_total"):
    if not any(fam + "{" in e and 'export=~"$export"' in e for e in exprs):
        sys.exit("no per-export ($export) panel shows %s" % fam)
PY

# 3. Families named by the rules, the scenarios and the dashboard.
families=$(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$scrape" | sort -u)
used=$(cat "$rules" "$here/nfscached.rules.test.yml" "$dash" |
	grep -oE '\b(nfscached|process)_[a-z0-9_]+' | sort -u)
for name in $used; do
	base=${name%_bucket}
	grep -qxF "$base" <<<"$families" ||
		fail "$name is used by the rules or the dashboard but not exported"
done
echo "$(wc -w <<<"$used") families used, all exported"
# ... and each is documented in docs/metrics.md's tables.
documented=$(grep -oE '^\| `(nfscached|process)_[a-z0-9_]+`' "$src/docs/metrics.md" |
	sed 's/^| `//; s/`$//' | sort -u)
for name in $used; do
	base=${name%_bucket}
	grep -qxF "$base" <<<"$documented" ||
		fail "$name is used by the rules or the dashboard but not in docs/metrics.md"
done
# Series of the scenarios: name{labels} minus job and instance must be
# a series of the scrape, or have a label set the scrape's family has.
# Series Prometheus makes itself (up) are not the daemon's.
grep -oE "series: '(nfscached|process)_[^']+'" "$here/nfscached.rules.test.yml" | sed "s/series: '//; s/'\$//" |
while read -r s; do
	name=${s%%\{*}
	labels=$(sed -E 's/.*\{(.*)\}/\1/; s/(^|,)(job|instance)="[^"]*"//g; s/^,//' <<<"$s")
	keys=$(grep -oE '[a-z_]+=' <<<"$labels" | sort | tr -d '\n' || true)
	found=0
	while read -r line; do
		l=$(sed -nE 's/^[^{ ]+\{(.*)\} .*/\1/p' <<<"$line")
		[[ "$(grep -oE '[a-z_]+=' <<<"$l" | sort | tr -d '\n' || true)" == "$keys" ]] && found=1 && break
	done < <(grep -E "^$name[{ ]" "$scrape")
	((found)) || fail "scenario series $s: no series of that shape in the scrape"
done

# 4. The recorded scrape as input series (histogram buckets and the
# build/config info series left out), constant for 40 minutes (past every
# alert's window and for): nothing fires.
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
{
	echo "rule_files: [$rules]"
	echo "evaluation_interval: 1m"
	echo "tests:"
	echo "  - interval: 1m"
	echo "    input_series:"
	grep -v '^#' "$scrape" | grep -vE '_bucket\{|_info\{|^nfscached_build_info' |
	awk '{
		n = $1; v = $2
		if (index(n, "{")) sub(/}$/, ",job=\"nfscached\",instance=\"rec:9655\"}", n)
		else n = n "{job=\"nfscached\",instance=\"rec:9655\"}"
		printf "      - series: %c%s%c\n        values: %c%sx40%c\n", 39, n, 39, 39, v, 39
	}'
	echo "      - series: 'up{job=\"nfscached\",instance=\"rec:9655\"}'"
	echo "        values: '1x40'"
	echo "    alert_rule_test:"
	alerts=$(awk '$1 == "-" && $2 == "alert:" { print $3 }' "$rules")
	[[ $(wc -w <<<"$alerts") -ge 16 ]] || fail "only $(wc -w <<<"$alerts") alerts in $rules"
	for a in $alerts; do
		printf '      - eval_time: 35m\n        alertname: %s\n        exp_alerts: []\n' "$a"
	done
	# Every dashboard query (template variables matching all) returns a
	# sample on the healthy scrape: no panel is empty for want of a
	# recording rule or a family. Histogram quantiles are left out (the
	# buckets are not in the input series).
	echo "    promql_expr_test:"
	python3 - "$dash" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["panels"]:
    for t in p.get("targets", []):
        e = t["expr"]
        if "_bucket" in e:
            continue
        for v in ("$job", "$instance", "$export"):
            e = e.replace(v, ".*")
        print("      - expr: %s" % json.dumps("clamp_max(count(%s), 1)" % e))
        print("        eval_time: 35m")
        print("        exp_samples:")
        print("          - labels: '{}'")
        print("            value: 1")
PY
} >"$gen/recorded.test.yml"
"$promtool" test rules "$here/nfscached.rules.test.yml" "$gen/recorded.test.yml" ||
	fail "promtool test rules"
echo "metrics.rules: PASS"
