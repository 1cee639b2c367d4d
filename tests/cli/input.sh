#!/usr/bin/env bash
# input.sh FAGEN: how fagen reads its input (issue 29).
#   - an input over the 64 MiB limit is refused with exit 2 and a message
#     naming the limit, after reading at most the limit and one byte;
#     an input of exactly the limit is read (and compiled)
#   - every I/O error says why (strerror), with exit 2
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 FAGEN" >&2
	exit 2
fi
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
sched=$PWD/schedules/copy_ws_sm90.fa
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
limit=$((64 << 20))
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
	"$fagen" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, want $want"
		return 1
	fi
}

# says WHAT TEXT: standard error holds TEXT (a fixed string).
says() {
	n=$((n + 1))
	grep -qF -- "$2" "$tmp/err" || fail "$1: no '$2' in the message"
}

# --- the size limit
truncate -s $((limit + 1)) "$tmp/over.fa"
run 2 "over the limit" "$tmp/over.fa" --check &&
	says "over the limit" "'$tmp/over.fa' is larger than 64 MiB ($limit bytes)"
# standard input: how far fagen read shows in the shared file offset
truncate -s $((3 * limit)) "$tmp/huge.fa"
n=$((n + 1))
rc=0
pos=$(
	exec <"$tmp/huge.fa"
	"$fagen" - --check 2>"$tmp/err" || echo "rc=$?"
	awk '/^pos:/ { print $2 }' /proc/self/fdinfo/0
)
case $pos in
"rc=2"*) ;;
*) fail "over the limit on standard input: ${pos%%$'\n'*}, want rc=2" ;;
esac
pos=${pos##*$'\n'}
n=$((n + 1))
if [ "$pos" -gt $((limit + 65536)) ]; then
	fail "over the limit on standard input: read $pos bytes"
fi
says "over the limit on standard input" "'<stdin>' is larger than 64 MiB"
# exactly the limit is read: blanks, so the schedule is empty (exit 1)
head -c "$limit" /dev/zero | tr '\0' ' ' >"$tmp/full.fa"
run 1 "at the limit" "$tmp/full.fa" --check
rm -f "$tmp/over.fa" "$tmp/huge.fa" "$tmp/full.fa"

# --- I/O errors say why
run 2 "missing input" "$tmp/nonexistent.fa" &&
	says "missing input" "cannot open '$tmp/nonexistent.fa': No such file"
run 2 "a directory as input" "$tmp" && says "a directory as input" \
	"cannot read '$tmp': Is a directory"
: >"$tmp/noread.fa"
chmod 0000 "$tmp/noread.fa"
if ! cat "$tmp/noread.fa" 2>/dev/null; then # binds only when not root
	run 2 "unreadable input" "$tmp/noread.fa" &&
		says "unreadable input" "Permission denied"
fi
mkdir "$tmp/dir.ptx"
run 2 "OUT is a directory" "$sched" -o "$tmp/dir.ptx" &&
	says "OUT is a directory" "cannot write '$tmp/dir.ptx': Is a directory"
run 2 "OUT in a missing directory" "$sched" -o "$tmp/none/k.ptx" &&
	says "OUT in a missing directory" \
		"cannot create a file beside '$tmp/none/k.ptx': No such file"
n=$((n + 1))
rc=0
"$fagen" "$sched" >/dev/full 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || fail "standard output full: exit $rc, want 2"
says "standard output full" "No space left on device"

echo "cli input: $n checks, $nfail failed"
[ "$nfail" -eq 0 ]
