#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Fail when a C function in daemon/ proto/ cache/ disk/ conf/ is longer than
# MAX lines (default 80), counted from the line that opens its definition
# (the one with its name) to its closing brace, as universal-ctags reports
# them (fields line: and end:). Usage: check-function-length.sh SRCDIR [MAX]
set -euo pipefail

src=${1:?usage: $0 SRCDIR [MAX]}
max=${2:-80}
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
	echo "check-function-length: universal-ctags is not installed" >&2
	exit 1
fi
cd "$src"
files=$(ls daemon/*.c daemon/*.h daemon/*/*.c daemon/*/*.h proto/*.c proto/*.h cache/*.c cache/*.h \
	disk/*.c disk/*.h \
	conf/*.c conf/*.h)
ctags --languages=C --kinds-C=f --fields=+ne -o - $files |
awk -F'\t' -v max="$max" '
{
	line = 0; end = 0
	for (i = 4; i <= NF; i++) {
		if ($i ~ /^line:/) line = substr($i, 6)
		if ($i ~ /^end:/) end = substr($i, 5)
	}
	n++
	if (end == 0) { print $2 ": " $1 ": no end line"; bad++; next }
	if (end - line + 1 > max) {
		print $2 ":" line ": " $1 " is " end - line + 1 " lines (max " max ")"
		bad++
	}
}
END {
	print n " functions checked, " bad + 0 " over " max " lines"
	exit (n < 100 || bad > 0)
}'
