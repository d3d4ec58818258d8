#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_conf_man: nfscached.conf(5) lists exactly the directives the daemon
# accepts. Its lists are generated from conf/conf.c's table (man/conf_man.c);
# this compares the page with what `nfscached --dump-config` prints, both
# ways and per scope (global, export section): every directive's name, and
# its unit, range and default sentence word for word. nfscached(8), written
# by hand, must name every flag `nfscached --help` lists. Both manual pages
# must also format without a groff warning.
#
# Usage: test_conf_man.sh NFSCACHED CONF_MAN_PAGE MAN8_PAGE
set -euo pipefail

bin=${1:?usage: $0 NFSCACHED CONF_MAN_PAGE MAN8_PAGE}
page=${2:?usage: $0 NFSCACHED CONF_MAN_PAGE MAN8_PAGE}
page8=${3:?usage: $0 NFSCACHED CONF_MAN_PAGE MAN8_PAGE}
fails=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfsc-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Record a failed check.
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# From --dump-config: "SCOPE NAME<TAB>FACTS" per directive, SCOPE global or
# export (indented by a tab), FACTS the comment line just above it.
"$bin" --dump-config >"$tmp/dump.conf"
awk '
	/^\t?# / { facts = $0; sub(/^\t?# /, "", facts); next }
	/^[a-z_]+ = / { print "global " $1 "\t" facts; next }
	/^\t[a-z_]+ = / { sub(/^\t/, ""); print "export " $1 "\t" facts }
' "$tmp/dump.conf" | sort >"$tmp/dump.list"

# From the page: the same, from each ".TP / .B NAME / help / .br / FACTS"
# paragraph, the scope by the section it is in; roff escapes undone.
awk '
	/^\.SH GLOBAL DIRECTIVES/ { scope = "global" }
	/^\.SH EXPORT SECTIONS/ { scope = "" }
	/^\.SS Directives of an export section/ { scope = "export" }
	/^\.SH RULES/ { scope = "" }
	scope != "" && /^\.TP$/ { want = 1; next }
	want && /^\.B / { name = substr($0, 4); want = 0; next }
	/^\.br$/ && name != "" { facts = 1; next }
	facts {
		gsub(/\\-/, "-"); gsub(/\\e/, "\\"); sub(/^\\&/, "")
		print scope " " name "\t" $0; facts = 0; name = ""
	}
' "$page" | sed 's/\\_/_/g' | sort >"$tmp/page.list"

n=$(wc -l <"$tmp/dump.list")
((n > 40)) || fail "--dump-config printed only $n directives"
if ! diff -u --label dump-config "$tmp/dump.list" --label nfscached.conf.5 \
	"$tmp/page.list" >"$tmp/diff"; then
	fail "nfscached.conf(5) and --dump-config differ:"
	cat "$tmp/diff" >&2
fi

# Every flag of the usage, in the hand-written nfscached(8) (roff writes
# a '-' of a flag as '\-').
"$bin" --help >"$tmp/usage"
flags=$(grep -o -- '--[a-z][a-z-]*' "$tmp/usage" | sort -u)
((${#flags} > 0)) || fail "nfscached --help lists no flag"
for f in $flags; do
	grep -qF -- "${f//-/\\-}" "$page8" || fail "nfscached(8) does not describe $f"
done

for p in "$page" "$page8"; do
	out=$(LC_ALL=C.UTF-8 groff -man -ww -z "$p" 2>&1) || fail "groff failed on $p"
	[[ -z "$out" ]] || fail "groff warns on $p: $out"
done

if ((fails)); then
	echo "test_conf_man: $fails check(s) failed" >&2
	exit 1
fi
echo "test_conf_man: OK ($n directives)"
