#!/usr/bin/env bash
# selftest.sh: check-dag.py can fail.  Copies compiler/ and grammar/ to a
# temporary tree, adds one bad include at a time, and expects the check to
# refuse each: a cycle (base -> front), a target reached directly (ptx ->
# sm90) and the umbrella header inside a stage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check=("${PYTHON:-python3}" "$here/check-dag.py")

"${check[@]}" "$src" >/dev/null || { echo "selftest: the tree itself fails"; exit 1; }
fail=0
expect_refused() {  # FILE INCLUDE WHAT
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t"
	cp -r "$src/compiler" "$src/grammar" "$tmp/t/"
	printf '#include "%s"\n' "$2" >>"$tmp/t/$1"
	if out=$("${check[@]}" "$tmp/t" 2>&1); then
		echo "selftest: not refused: $3 ($1 including $2)"
		fail=1
	elif ! grep -q "$4" <<<"$out"; then
		echo "selftest: refused without saying '$4': $out"
		fail=1
	else
		echo "selftest: refused as expected: $3"
	fi
}
expect_refused compiler/base/arena.c front/front.h "a cycle" "cycle between"
expect_refused compiler/ptx/ptxgen.c sm90/sm90.h "a target reached directly" \
	"target folder"
expect_refused compiler/sm100/ptx_tmem.c sm90/sm90.h "one target using another" \
	"target folder"
expect_refused compiler/sir/pass.c fgc.h "the umbrella in a stage" "umbrella"
exit $fail
