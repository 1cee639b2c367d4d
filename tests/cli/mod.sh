#!/usr/bin/env bash
# mod.sh FAGEN: mods and --mod FILE (issue #22), beyond the goldens.
#   - a mod inlined gives the PTX of its body written out, byte for byte
#     (tests/golden/ptx/mod_score.fa with -D INLINE=true), and the
#     verifier says the same of a mod as of its body written out
#     (tests/golden/verify/mod_wait_parity.fa)
#   - --mod FILE replaces a default: the PTX is that of the schedule with
#     the file's body written in place of the default's; --mod=FILE is
#     the same; it is repeatable (one file's mod may use another's param)
#     and '--mod -' reads standard input
#   - a missing file is an I/O error (exit 2) that names it; --help
#     documents --mod
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 FAGEN" >&2
	exit 2
fi
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
score=tests/golden/ptx/mod_score.fa
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0
n=0

fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1"
	[ -s "$tmp/err" ] && sed 's/^/  | /' "$tmp/err" | head -n 5
}

# run WANT-RC WHAT OUT FAGEN-ARGS...: fagen exits WANT-RC, its standard
# output in OUT, its standard error in $tmp/err.
run() {
	local want=$1 what=$2 out=$3 rc=0
	shift 3
	n=$((n + 1))
	"$fagen" "$@" >"$out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, want $want"
		return 1
	fi
}

# same WHAT A B: files A and B are equal.
same() {
	n=$((n + 1))
	cmp -s "$2" "$3" || fail "$1: $2 and $3 differ"
}

# --- inlined, a mod is its body written out
run 0 "mods" "$tmp/mod.ptx" "$score" -o - &&
	run 0 "written out" "$tmp/inline.ptx" "$score" -D INLINE=true -o - &&
	same "inline PTX" "$tmp/mod.ptx" "$tmp/inline.ptx"
parity=tests/golden/verify/mod_wait_parity.fa
run 1 "verify, mod" /dev/null "$parity" --check
grep -o 'error: .*' "$tmp/err" >"$tmp/mod.err"
run 1 "verify, written out" /dev/null "$parity" --check -D INLINE=true
grep -o 'error: .*' "$tmp/err" >"$tmp/inline.err"
n=$((n + 1))
[ -s "$tmp/mod.err" ] || fail "verify: no error"
same "verify" "$tmp/mod.err" "$tmp/inline.err"

# --- --mod FILE replaces the default
body='s * 2.0 + bias'
printf 'param bias : f32;\n' >"$tmp/param.fa"
printf 'mod score_mod(s, q, k) = %s;\n' "$body" >"$tmp/hook.fa"
sed "s/^mod score_mod(s, q, k) = .*/param bias : f32;\\
mod score_mod(s, q, k) = $body;/" "$score" >"$tmp/edited.fa"
run 0 "edited" "$tmp/edited.ptx" "$tmp/edited.fa" -o - &&
	run 0 "--mod" "$tmp/hooked.ptx" "$score" --mod "$tmp/param.fa" \
		--mod "$tmp/hook.fa" -o - &&
	same "--mod" "$tmp/edited.ptx" "$tmp/hooked.ptx"
n=$((n + 1))
cmp -s "$tmp/mod.ptx" "$tmp/hooked.ptx" && fail "--mod: the default stayed"
run 0 "--mod=" "$tmp/eq.ptx" "$score" --mod="$tmp/param.fa" \
	--mod="$tmp/hook.fa" -o - &&
	same "--mod=" "$tmp/edited.ptx" "$tmp/eq.ptx"
run 0 "--mod -" "$tmp/stdin.ptx" "$score" --mod "$tmp/param.fa" --mod - \
	-o - <"$tmp/hook.fa" &&
	same "--mod -" "$tmp/edited.ptx" "$tmp/stdin.ptx"
# the file's param after the kernel's: the runtime's arguments say so
n=$((n + 1))
grep -q '^// fagen.arg 3 param bias f32' "$tmp/hooked.ptx" ||
	fail "--mod: 'bias' is not the kernel's last argument"

# --- errors and help
run 2 "missing file" /dev/null "$score" --mod "$tmp/none.fa" -o - &&
	{ n=$((n + 1)); grep -qF "cannot open '$tmp/none.fa'" "$tmp/err" ||
		fail "missing file: not named"; }
run 2 "no value" /dev/null "$score" --mod
run 0 "help" "$tmp/help" --help &&
	{ n=$((n + 1)); grep -q -- '--mod FILE' "$tmp/help" ||
		fail "--help does not list --mod"; }

echo "mod.sh: $n checks, $nfail failed"
[ "$nfail" -eq 0 ]
