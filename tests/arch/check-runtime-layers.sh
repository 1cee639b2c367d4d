#!/bin/sh
# check-runtime-layers.sh [--self-test] [ROOT]: runtime/ is layered one way
# (issue 19).  Layers, bottom up:
#
#	0 runtime/base/    1 runtime/driver/    2 runtime/jit/
#	3 runtime/front/   4 runtime/*.c (api.c)
#
# Every '#include "..."' line of a .c or .h file under ROOT/runtime that
# names a header of the runtime must name one of the file's own layer or
# a layer below; headers from elsewhere (fagen.h, fgc.h) are not checked.
# A file outside the known layer folders, a header found in two layers, a
# header in runtime/ itself or an include of a path are errors too, so a
# new folder has to be placed here before it builds a cycle.  Prints each
# offence as FILE:LINE and exits 1; exits 0 when there is none.
#
# --self-test also proves the check can fail: it copies runtime/ into a
# temporary tree, makes base/ include the front ends' header, and expects
# the check to catch it.
set -eu

self_test=0
if [ "${1:-}" = --self-test ]; then
	self_test=1
	shift
fi
root=${1:-$(dirname "$0")/../..}

layer_of() { # layer_of PATH-UNDER-runtime: the layer number, or nothing
	case $1 in
	base/*/* | driver/*/* | jit/*/* | front/*/*) ;;
	base/*) echo 0 ;;
	driver/*) echo 1 ;;
	jit/*) echo 2 ;;
	front/*) echo 3 ;;
	*/*) ;;
	*.c) echo 4 ;;
	esac
}

check() { # check ROOT: print each offence
	cd "$1/runtime" || exit 2
	headers=$(find . -name '*.h' | sed 's|^\./||' | sort)
	for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
		from=$(layer_of "$f")
		case $f in
		*/*) ;;
		*.h) from= ;;  # a header at the top would serve no layer
		esac
		if [ -z "$from" ]; then
			echo "runtime/$f: not in a layer folder (base, driver, jit, front) nor a .c file of runtime/"
			continue
		fi
		awk '/^[ \t]*#[ \t]*include[ \t]*"/ {
			match($0, /"[^"]*"/)
			print FNR, substr($0, RSTART + 1, RLENGTH - 2)
		}' "$f" | while read -r line name; do
			case $name in
			*/*)
				echo "runtime/$f:$line: includes '$name' by path: name the header alone"
				continue ;;
			esac
			where=$(printf '%s\n' "$headers" | grep -E "(^|/)$name\$" || true)
			[ -n "$where" ] || continue   # not the runtime's
			if [ "$(printf '%s\n' "$where" | wc -l)" -gt 1 ]; then
				echo "runtime/$f:$line: '$name' is in more than one layer: $(echo "$where" | tr '\n' ' ')"
				continue
			fi
			to=$(layer_of "$where")
			if [ -z "$to" ] || [ "$to" -gt "$from" ]; then
				echo "runtime/$f:$line: includes '$name' (runtime/$where), of a layer above its own"
			fi
		done
	done
}

status=0
out=$(check "$root")
if [ -n "$out" ]; then
	printf '%s\n' "$out" >&2
	echo "runtime-layers: a file includes a header of a higher layer (see the layers above)" >&2
	status=1
else
	echo "runtime-layers: runtime/ includes only its own layer and below"
fi

if [ "$self_test" = 1 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -R "$root/runtime" "$tmp/"
	printf '#include "rt_front.h"\n' >>"$tmp/runtime/base/rt.c"
	out=$(check "$tmp")
	case $out in
	*"runtime/base/rt.c:"*"rt_front.h"*)
		echo "runtime-layers: self-test: caught: $out" ;;
	*)
		echo "runtime-layers: self-test: base/ including rt_front.h went unnoticed" >&2
		status=1 ;;
	esac
fi
exit $status
