#!/usr/bin/env bash
# input.sh FAGEN: how fagen reads its input (issue 29).
#   - an input over the 64 MiB limit is refused with exit 2 and a message
#     naming the limit, after reading at most the limit and one byte;
#     an input of exactly the limit is read (and compiled)
#   - every I/O error says why (strerror), with exit 2
#   - '\r' alone and "\r\n" end lines as '\n' does: an error on line 3
#     of a CR-only or CRLF file says line 3
#   - a UTF-8 byte-order mark at the start is skipped: the schedule
#     compiles as without it, and line 1's columns count from the first
#     real character; a mark anywhere else is an error that names it
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

# --- line ends: the error is on line 3 whatever ends the lines
for nl in cr crlf lf; do
	case $nl in
	cr) e=$'\r' ;;
	crlf) e=$'\r\n' ;;
	lf) e=$'\n' ;;
	esac
	printf 'kernel k target=sm_90a;%scta threads=32;%s  bogus;%s' \
		"$e" "$e" "$e" >"$tmp/$nl.fa"
	run 1 "$nl line ends" "$tmp/$nl.fa" --check || continue
	printf '%s\n' "$tmp/$nl.fa:3:3: error: expected end of file, declaration, 'cta', 'tiles', 'static' or 'mod', found 'bogus'" \
		'    3 |   bogus;' '      |   ^~~~~' '1 error' >"$tmp/want"
	n=$((n + 1))
	diff -u "$tmp/want" "$tmp/err" >"$tmp/diff" ||
		{ fail "$nl line ends: other diagnostics"; cat "$tmp/diff"; }
done

# --- a byte-order mark
bom=$'\xef\xbb\xbf'
{ printf '%s' "$bom"; cat "$sched"; } >"$tmp/bom.fa"
if run 0 "a BOM at the start" "$tmp/bom.fa" -o "$tmp/bom.ptx"; then
	"$fagen" "$sched" -o "$tmp/plain.ptx"
	n=$((n + 1))
	cmp -s "$tmp/bom.ptx" "$tmp/plain.ptx" ||
		fail "a BOM at the start: the PTX differs"
fi
printf '%skernel k target=sm_9a;\n' "$bom" >"$tmp/bomerr.fa"
run 1 "a BOM, then an error on line 1" "$tmp/bomerr.fa" --check &&
	says "a BOM, then an error on line 1" \
		"bomerr.fa:1:17: error: 'target' must be one of"
n=$((n + 1))
sed -n 2p "$tmp/err" | cmp -s - <(echo '    1 | kernel k target=sm_9a;') ||
	fail "a BOM, then an error on line 1: the line is not echoed bare"
printf 'kernel k target=sm_90a;\n%s\n' "$bom" >"$tmp/bomlate.fa"
run 1 "a BOM later" "$tmp/bomlate.fa" --check &&
	says "a BOM later" "bomlate.fa:2:1: error: a byte-order mark (U+FEFF)"

echo "cli input: $n checks, $nfail failed"
[ "$nfail" -eq 0 ]
