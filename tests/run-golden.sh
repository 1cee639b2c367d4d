#!/usr/bin/env bash
# run-golden.sh FAGEN INPUT: check one golden input against its expected files.
#
# INPUT is tests/golden/<stage>/<name>.fa, relative to the repository root.
# Each expected file that exists next to it is one check:
#   <name>.err        fagen INPUT -o /dev/null         exit 1, stderr compared
#   <name>.warn       fagen INPUT -o /dev/null         exit 0, stderr compared
#                     (warnings only; an empty .warn expects no output)
#   <name>.ir         fagen INPUT --emit ir -o -       stdout compared
#   <name>.sm90.ptx   fagen INPUT --arch sm_90a -o -   stdout compared
#   <name>.sm100.ptx  fagen INPUT --arch sm_100a -o -  stdout compared
#   <name>.sm80.ptx   fagen INPUT --arch sm_80 -o -    stdout compared
#   <name>.dot        fagen INPUT --emit dot -o -      stdout compared
#                     (exit 1 when there is a <name>.err: the graph of a
#                     schedule the verifier refuses, its errors in red)
# Lines '// RUN: ARGS' among the input's leading comment lines add ARGS to
# every command (split at blanks; no quoting).  fagen runs from the repository root, so diagnostics name
# the input as tests/golden/...  With FAGEN_UPDATE_GOLDEN=1 the expected files
# are rewritten instead of compared.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 FAGEN INPUT" >&2
	exit 2
fi

# Resolve fagen before cd: meson may pass a path relative to the build dir.
fagen=$(realpath -- "$1")
input=$2
cd "$(dirname "$0")/.."
if [ ! -f "$input" ]; then
	echo "run-golden: $input: no such input" >&2
	exit 1
fi

# Directives: '// RUN:' lines in the leading block of comments and blanks.
extra=()
while IFS= read -r line; do
	case $line in
	'// RUN:'*)
		read -r -a words <<<"${line#// RUN:}"
		extra+=("${words[@]}")
		;;
	//* | '') ;;
	*) break ;;
	esac
done <"$input"

base=${input%.fa}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nchecks=0
nfail=0

# check EXPECTED WANT_RC WHICH ARGS...: run fagen on the input with ARGS and
# compare its WHICH (stdout or stderr) with EXPECTED.
check() {
	local expected=$1 want=$2 which=$3 rc=0
	shift 3
	nchecks=$((nchecks + 1))
	"$fagen" "$input" "$@" ${extra[@]+"${extra[@]}"} \
		>"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "FAIL $expected: fagen exited $rc, expected $want" >&2
		echo "command: $fagen $input $* ${extra[*]-}" >&2
		sed 's/^/  stderr: /' "$tmp/stderr" >&2
		nfail=$((nfail + 1))
		return 0
	fi
	if [ "${FAGEN_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$tmp/$which" "$expected"
		echo "updated $expected"
	elif ! diff -u --label "$expected" --label "fagen $which" \
		"$expected" "$tmp/$which"; then
		nfail=$((nfail + 1))
	fi
}

[ -f "$base.err" ] && check "$base.err" 1 stderr -o /dev/null
[ -f "$base.warn" ] && check "$base.warn" 0 stderr -o /dev/null
[ -f "$base.ir" ] && check "$base.ir" 0 stdout --emit ir -o -
[ -f "$base.sm90.ptx" ] && check "$base.sm90.ptx" 0 stdout --arch sm_90a -o -
[ -f "$base.sm100.ptx" ] &&
	check "$base.sm100.ptx" 0 stdout --arch sm_100a -o -
[ -f "$base.sm80.ptx" ] && check "$base.sm80.ptx" 0 stdout --arch sm_80 -o -
if [ -f "$base.dot" ]; then
	if [ -f "$base.err" ]; then
		check "$base.dot" 1 stdout --emit dot -o -
	else
		check "$base.dot" 0 stdout --emit dot -o -
	fi
fi

if [ "$nchecks" -eq 0 ]; then
	echo "run-golden: $input has no expected file: create an empty" \
		"$base.err, .warn, .ir, .sm90.ptx, .sm100.ptx, .sm80.ptx or .dot and fill" \
		"it with FAGEN_UPDATE_GOLDEN=1 meson test -C build --suite" \
		"golden" >&2
	exit 1
fi
[ "$nfail" -eq 0 ]
