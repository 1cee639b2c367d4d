#!/usr/bin/env bash
# warnings.sh FAGEN: -W options name known warnings (issue 29).
#   - -WNAME, -Wno-NAME and -Werror=NAME with a name that is no warning's,
#     or with no name, are usage errors (exit 2); a known name within 2
#     edits is offered ("did you mean"), and otherwise the known names are
#     listed
#   - every warning name the compiler's sources pass to diag_warn is
#     accepted, so the list fagen checks against is complete
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 FAGEN" >&2
	exit 2
fi
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
sched=$PWD/schedules/copy_ws_sm90.fa
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0
n=0

fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1"
	[ -s "$tmp/err" ] && sed 's/^/  | /' "$tmp/err" | head -n 5
}

# run WANT-RC WHAT FAGEN-ARGS...: fagen exits WANT-RC, its standard error
# in $tmp/err.
run() {
	local want=$1 what=$2 rc=0
	shift 2
	n=$((n + 1))
	"$fagen" "$@" >/dev/null 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, want $want"
		return 1
	fi
}

# bad OPTION MESSAGE: 'fagen SCHED --check OPTION' is a usage error whose
# message is exactly MESSAGE.
bad() {
	run 2 "$1" "$sched" --check "$1" || return
	n=$((n + 1))
	[ "$(cat "$tmp/err")" = "$2" ] || fail "$1: other message, want: $2"
}

known='register-pressure, tma-outside-elect, unused-warps, verify-limit'
bad -Wfoo "fagen: -Wfoo: unknown warning 'foo' (the warnings are $known)"
bad -Werror=typo \
	"fagen: -Werror=typo: unknown warning 'typo' (the warnings are $known)"
bad -Wno- "fagen: -Wno- needs a warning name ($known)"
bad -Werror= "fagen: -Werror= needs a warning name ($known)"
bad -Wunused-warp \
	"fagen: -Wunused-warp: unknown warning 'unused-warp'; did you mean 'unused-warps'?"
bad -Wno-unsed-warp \
	"fagen: -Wno-unsed-warp: unknown warning 'unsed-warp'; did you mean 'unused-warps'?"
bad -Werror=verify_limit \
	"fagen: -Werror=verify_limit: unknown warning 'verify_limit'; did you mean 'verify-limit'?"

# every name the sources warn with is accepted, in each form
names=$(grep -rhoE 'diag_warn\([^,]+, *"[a-z0-9-]+"' compiler |
	sed -E 's/.*"([a-z0-9-]+)"/\1/' | sort -u)
n=$((n + 1))
[ "$(echo "$names" | wc -w)" -ge 4 ] ||
	fail "found only '$names' among diag_warn calls"
for w in $names; do
	run 0 "-Wno-$w" "$sched" --check "-Wno-$w"
	run 0 "-Werror=$w" "$sched" --check "-Werror=$w"
	run 0 "-W$w" "$sched" --check "-W$w"
done

echo "cli warnings: $n checks, $nfail failed"
[ "$nfail" -eq 0 ]
