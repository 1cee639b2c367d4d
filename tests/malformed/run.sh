#!/usr/bin/env bash
# run.sh FAGEN [FAGEN...]: fagen survives malformed input.
#
# gen.py writes each input (empty files, random bytes, NUL bytes, invalid
# UTF-8, huge literals, 100k-deep nesting, 1 MB lines, truncated schedules
# ...) into a temporary directory, each with what is expected of it:
#   error  exit status exactly 1 and at least one 'FILE:LINE:COL: error:'
#   ok     exit status 0 and no error
#   any    either of those
# Always: no signal, no internal error (exit 2), no sanitizer report, and
# done within 10 seconds.  Each FAGEN runs every input.  When build-asan/
# fagen exists, is not one of them and is not older than the first FAGEN
# (a stale build proves nothing), it runs every input too.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 FAGEN [FAGEN...]" >&2
	exit 2
fi
fagens=()
for f in "$@"; do
	fagens+=("$(realpath -- "$f")")
done
cd "$(dirname "$0")/../.."
asan=$(realpath -- build-asan/fagen 2>/dev/null || true)
if [ -n "$asan" ] && [ -x "$asan" ] && ! [ "$asan" -ot "${fagens[0]}" ]; then
	case " ${fagens[*]} " in
	*" $asan "*) ;;
	*) fagens+=("$asan") ;;
	esac
fi
sched=schedules/copy_ws_sm90.fa
[ -f "$sched" ] || sched=tests/golden/ptx/copy_ws_sm90.fa

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 tests/malformed/gen.py "$tmp" "$sched" >"$tmp/cases"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
located='^[^ ]+:[0-9]+:[0-9]+: error: '
sanitizer='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:'
n=0
nfail=0

# fail NAME FAGEN WHY: report one failure with the end of its stderr.
fail() {
	nfail=$((nfail + 1))
	echo "FAIL $1 ($2): $3"
	tail -n 5 "$tmp/stderr" | cut -c1-200 | sed 's/^/  | /'
}

for fagen in "${fagens[@]}"; do
	while read -r name expect; do
		n=$((n + 1))
		rc=0
		timeout 10 "$fagen" "$tmp/$name.fa" -o /dev/null \
			>/dev/null 2>"$tmp/stderr" || rc=$?
		if [ "$rc" -eq 124 ]; then
			fail "$name" "$fagen" "no answer within 10 seconds"
		elif [ "$rc" -ge 128 ]; then
			fail "$name" "$fagen" "killed by signal $((rc - 128))"
		elif grep -Eq "$sanitizer" "$tmp/stderr"; then
			fail "$name" "$fagen" "sanitizer report (exit $rc)"
		elif grep -q 'internal error' "$tmp/stderr"; then
			fail "$name" "$fagen" "internal error (exit $rc)"
		elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
			fail "$name" "$fagen" "exit status $rc"
		elif [ "$expect" = ok ] && [ "$rc" -ne 0 ]; then
			fail "$name" "$fagen" "a valid input was rejected"
		elif [ "$expect" = error ] && [ "$rc" -ne 1 ]; then
			fail "$name" "$fagen" "accepted (exit 0)"
		elif [ "$rc" -eq 1 ] && ! grep -Eq "$located" "$tmp/stderr"; then
			fail "$name" "$fagen" "exit 1 without a FILE:LINE:COL error"
		fi
	done <"$tmp/cases"
done
echo "malformed: $n runs, $nfail failed (${fagens[*]})"
[ "$nfail" -eq 0 ]
