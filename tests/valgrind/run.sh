#!/usr/bin/env bash
# run.sh BUILD cli [--all] | unit NAME: memcheck over the fagen CLI or
# one unit test program of the build directory BUILD (issue 8).
#
#   cli       fagen on the first and last documented variant of each
#             shipped schedule (--all: every variant of tests/shipped/
#             variants.txt), with --verify-each, and on a failing schedule,
#             -D errors and --emit ir, dot and ast
#   unit NAME BUILD/NAME, a CMocka program (fork()ed children included)
#
# A run fails on any memcheck error and on definite or indirect leaks
# (still-reachable blocks at exit() are not leaks), on a crash, and when
# the program's own exit status is not the one expected.  Exits 77 (SKIP)
# without valgrind, without the program, or when BUILD is a sanitizer
# build (valgrind cannot run ASan's runtime).
set -u
if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD cli [--all] | unit NAME" >&2
	exit 2
fi
build=$(realpath "$1")
what=$2
shift 2
cd "$(dirname "$0")/../.." || exit 2
if ! command -v valgrind >/dev/null 2>&1; then
	echo "valgrind not found (scripts/setup installs it): skipping"
	exit 77
fi
vg=(valgrind -q --error-exitcode=99 --leak-check=full
	--errors-for-leak-kinds=definite,indirect
	--show-leak-kinds=definite,indirect --track-origins=yes)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
nfail=0

# check WANT NAME CMD...: CMD under memcheck exits WANT and is clean.
check() {
	local want=$1 name=$2 rc=0
	shift 2
	n=$((n + 1))
	"${vg[@]}" --log-file="$out/vg.%p" "$@" >"$out/stdout" \
		2>"$out/stderr" || rc=$?
	if [ "$rc" -eq 99 ] || cat "$out"/vg.* 2>/dev/null | grep -q .; then
		nfail=$((nfail + 1))
		echo "FAIL $name: memcheck reports"
		cat "$out"/vg.* | head -n 60
	elif [ "$rc" -ne "$want" ]; then
		nfail=$((nfail + 1))
		echo "FAIL $name: exit $rc, want $want"
		tail -n 20 "$out/stdout" "$out/stderr"
	fi
	rm -f "$out"/vg.*
}

sanitized() {
	nm -D "$1" 2>/dev/null | grep -q '__asan_init\|__ubsan_handle' ||
		nm "$1" 2>/dev/null | grep -q '__asan_init\|__ubsan_handle'
}

case $what in
cli)
	fagen=$build/fagen
	[ -x "$fagen" ] || { echo "no $fagen: skipping"; exit 77; }
	if sanitized "$fagen"; then
		echo "$fagen is a sanitizer build: skipping"
		exit 77
	fi
	if [ "${1:-}" = --all ]; then
		sel='!/^#/ && NF'
	else  # the first and last variant of each schedule
		sel='!/^#/ && NF { if (!($2 in first)) { first[$2] = 1; print; }
			last[$2] = $0 } END { for (s in last) print last[s] }'
	fi
	while read -r name sched args; do
		read -r -a argv <<<"${args:-}"
		check 0 "$name" "$fagen" --verify-each "$sched" \
			${argv[@]+"${argv[@]}"} -o "$out/k.ptx"
	done < <(awk "$sel" tests/shipped/variants.txt | sort -u)
	copy=schedules/copy_ws_sm90.fa
	for e in ir dot ast; do
		check 0 "--emit $e" "$fagen" "$copy" --emit "$e" -o "$out/k"
	done
	check 1 "-D errors" "$fagen" "$copy" -D STAGES=0 -D DT=i32 -o "$out/k"
	check 1 "unknown -D" "$fagen" "$copy" -D NOPE=1 -o "$out/k"
	for f in tests/golden/parse/recovery.fa tests/golden/parse/huge_int.fa \
	    tests/golden/parse/deep_nesting.fa; do
		[ -f "$f" ] && check 1 "$f" "$fagen" "$f" -o "$out/k"
	done
	check 2 "missing input" "$fagen" "$out/nonexistent.fa"
	;;
unit)
	prog=$build/${1:-}
	[ -x "$prog" ] || { echo "no $prog: skipping"; exit 77; }
	if sanitized "$prog"; then
		echo "$prog is a sanitizer build: skipping"
		exit 77
	fi
	check 0 "$1" "$prog"
	;;
*)
	echo "usage: $0 BUILD cli [--all] | unit NAME" >&2
	exit 2
	;;
esac
echo "valgrind $what: $n runs, $nfail failed"
[ "$nfail" -eq 0 ]
