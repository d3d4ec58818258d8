#!/bin/sh
# SPDX-License-Identifier: MIT
# lint.file_statics: no mutable state outside its owner.
#
# usage: check-statics.sh SRCDIR BUILDDIR
#
# Lists every mutable variable with static storage (file scope or a
# function's `static`) in the product's object files (the libraries built
# from daemon/ proto/ cache/ conf/ disk/: their .data, .bss and TLS
# sections; `const` data sits in .rodata or .data.rel.ro and is not
# listed), and fails on one that scripts/statics-allow.txt does not name.
# State belongs to the object that owns it (struct daemon or a subsystem
# object it holds): two daemons in one process, or two event loops, must
# not share it. The allow-list is for what is truly one per process, each
# entry with its reason; an entry whose variable is gone fails too, so
# the list stays true.
set -eu
src=${1:?usage: $0 SRCDIR BUILDDIR}
build=${2:?usage: $0 SRCDIR BUILDDIR}
allow=$src/scripts/statics-allow.txt
objs=$(find "$build/daemon" "$build/proto" "$build/cache" "$build/conf" \
	"$build/disk" -path '*/CMakeFiles/nfscached_*.dir/*' -name '*.c.o' | sort)
if [ -z "$objs" ]; then
	echo "check-statics: no object files under $build: build first" >&2
	exit 1
fi
found=$(for o in $objs; do
	rel=${o#*.dir/}
	objdump -t "$o" | awk -v o="${rel%.o}" '
		$3 == "O" && $4 ~ /^\.(data|bss|tbss|tdata)(\.|$)/ &&
		$4 !~ /rel\.ro/ {
			name = $NF; sub(/\.[0-9]+$/, "", name)
			# globals AddressSanitizer adds (the ASan tree)
			if (name !~ /^(__odr_asan|___asan|__asan|__sancov)/)
				print o, name
		}'
done | sort -u)
bad=0
n=0
echo "$found" | while read -r file name; do
	[ -n "$file" ] || continue
	if ! grep -q "^$file $name " "$allow"; then
		echo "$file: $name: mutable static state outside its owner" \
			"(move it into the object that owns it, or add it to" \
			"scripts/statics-allow.txt with the reason)"
		echo x
	fi
done > "$build/check-statics.out"
grep -v '^x$' "$build/check-statics.out" || true
bad=$(grep -c '^x$' "$build/check-statics.out" || true)
n=$(echo "$found" | grep -c . || true)
# An entry for something that no longer exists is stale.
while read -r file name reason; do
	case $file in '#'*|'') continue ;; esac
	if ! echo "$found" | grep -q "^$file $name\$"; then
		echo "scripts/statics-allow.txt: $file $name: no such variable any more"
		bad=$((bad + 1))
	fi
done < "$allow"
echo "check-statics: $n mutable statics, $bad findings"
[ "$bad" -eq 0 ]
