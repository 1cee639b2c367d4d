#!/usr/bin/env bash
# check.sh BUILDDIR: the example programs (examples/*.c) build with the
# commands their opening comment documents (the lines indented by a tab,
# '\' continuing a line), run from a scratch directory where 'build' is
# BUILDDIR and the rest of the repository is linked in.  Each program
# must link without libcuda, and must stop at once with exit status 1
# and libfagen's status name on standard error: FG_ERR_NO_DRIVER where
# the driver cannot be loaded (FAGEN_DRIVER_LIB points nowhere, so this
# holds on a GPU host too), FG_ERR_NO_DEVICE with the toolkit's stub
# libcuda, when there is one.  Issue #25.
set -u
build=$(realpath "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for e in "$src"/*; do
	[ "$(basename "$e")" = build ] || ln -s "$e" "$tmp/"
done
ln -s "$build" "$tmp/build"
export FAGEN_DRIVER_LIB=/nonexistent/libcuda.so.1
stub=
for d in "${CUDA_HOME:-/usr/local/cuda}" /usr/local/cuda; do
	for s in "$d/lib64/stubs/libcuda.so" "$d/lib/stubs/libcuda.so"; do
		[ -z "$stub" ] && [ -f "$s" ] && stub=$s
	done
done

fail=0 n=0
bad() {
	echo "FAIL $*"
	sed 's/^/  | /' "$tmp/out"
	fail=1
}
for f in "$src"/examples/*.c; do
	name=examples/$(basename "$f")
	# the documented commands: the opening comment's tab-indented lines
	mapfile -t cmds < <(awk '
		/\*\// { done = 1 }
		{ line = $0; sub(/[ \t]*\*\/.*$/, "", line) }
		line ~ /^ \*\t/ {
			sub(/^ \*\t[ \t]*/, "", line)
			cmd = cmd line
			if (cmd ~ /\\$/) { sub(/\\$/, "", cmd); next }
			print cmd
			cmd = ""
		}
		done { exit }' "$f")
	if [ "${#cmds[@]}" -lt 2 ]; then
		echo "FAIL $name: its opening comment documents no build" \
			"and run commands"
		fail=1
		continue
	fi
	prog=
	for c in "${cmds[@]}"; do
		n=$((n + 1))
		rc=0
		(cd "$tmp" && bash -c "$c") >"$tmp/out" 2>&1 || rc=$?
		case $c in
		cc\ *)
			if [ "$rc" -ne 0 ]; then
				bad "$name: '$c' exited $rc"
				continue 2
			fi
			prog=$(sed -n 's/.* -o \([^ ]*\).*/\1/p' <<<"$c")
			if readelf -d "$tmp/$prog" | grep -q 'NEEDED.*libcuda'; then
				echo "FAIL $name: $prog links libcuda"
				fail=1
			fi
			;;
		*)
			if [ "$rc" -ne 1 ] ||
			    ! grep -q '^FG_ERR_NO_DRIVER: ' "$tmp/out"; then
				bad "$name: '$c' without a driver exited $rc," \
					"expected 1 and FG_ERR_NO_DRIVER"
			fi
			;;
		esac
	done
	if [ -n "$stub" ] && [ -n "$prog" ]; then
		n=$((n + 1))
		rc=0
		(cd "$tmp" && FAGEN_DRIVER_LIB=$stub \
			LD_LIBRARY_PATH=build "./$prog") >"$tmp/out" 2>&1 || rc=$?
		if [ "$rc" -ne 1 ] ||
		    ! grep -q '^FG_ERR_NO_DEVICE: no usable GPU' "$tmp/out"; then
			bad "$name: with the stub driver $stub it exited $rc," \
				"expected 1 and FG_ERR_NO_DEVICE"
		fi
	fi
done
echo "examples: $n commands, $([ $fail = 0 ] && echo all passed ||
	echo some failed)"
exit $fail
