#!/usr/bin/env bash
# output.sh FAGEN: fagen never leaves a partial or stray output file (issue
# 8).  It writes -o OUT to a temporary file beside OUT and renames it
# there only once the whole text is written, so:
#   - a compile that fails keeps an existing OUT as it was (exit 1)
#   - an OUT that cannot be created or written (in a directory that cannot
#     be created, a directory as OUT, a write cut short by a file size
#     limit, a full disk on standard output) is an exit 2 with a message
#     and no file, and an existing OUT kept
#   - --check writes nothing; a successful compile replaces OUT whole
#   - OUT gets the mode a plain create gives (0666 less the umask), not
#     mkstemp's 0600
# In every case no temporary file is left in OUT's directory.
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
bad=$tmp/bad.fa
printf 'kernel k target=sm_90a;\nparam M : i32\n' >"$bad"
nfail=0
n=0

fail() {
	nfail=$((nfail + 1))
	echo "FAIL: $1"
	[ -s "$tmp/err" ] && sed 's/^/  | /' "$tmp/err" | head -n 5
}

# run WANT-RC WHAT FAGEN-ARGS...: fagen exits WANT-RC.
run() {
	local want=$1 what=$2 rc=0
	shift 2
	n=$((n + 1))
	"$fagen" "$@" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, want $want"
		return 1
	fi
	if [ "$want" -eq 2 ] && ! grep -q '^fagen: ' "$tmp/err"; then
		fail "$what: exit 2 without a message"
		return 1
	fi
}

# clean DIR WHAT: no temporary file is left in DIR.
clean() {
	if compgen -G "$1/*.tmp??????" >/dev/null; then
		fail "$2: left $(cd "$1" && echo *.tmp??????)"
	fi
}

# same FILE CONTENT WHAT: FILE still holds CONTENT.
same() {
	if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
		fail "$3: $1 was changed"
	fi
}

d=$tmp/out
mkdir "$d"

# a failing compile keeps the old output
echo old >"$d/k.ptx"
run 1 "failing compile" "$bad" -o "$d/k.ptx" && same "$d/k.ptx" old \
	"failing compile"
clean "$d" "failing compile"

# --check writes nothing, even where OUT is named
run 0 "--check" "$sched" --check -o "$d/k.ptx" && same "$d/k.ptx" old \
	"--check"
run 0 "--check, no file" "$sched" --check -o "$d/new.ptx"
[ -e "$d/new.ptx" ] && fail "--check created its -o file"

# a directory that cannot be created: no file anywhere
: >"$tmp/file"
run 2 "OUT below a regular file" "$sched" -o "$tmp/file/sub/k.ptx"
[ -s "$tmp/file" ] && fail "OUT below a regular file: the file changed"

# a read-only directory (binds only when not root)
ro=$tmp/ro
mkdir "$ro"
echo old >"$ro/k.ptx"
chmod 0555 "$ro"
if ! : 2>/dev/null >"$ro/probe"; then
	run 2 "read-only directory" "$sched" -o "$ro/k.ptx" &&
		same "$ro/k.ptx" old "read-only directory"
	clean "$ro" "read-only directory"
fi
rm -f "$ro/probe"

# OUT is a directory: the rename fails, the temporary goes
mkdir "$d/dir.ptx"
run 2 "OUT is a directory" "$sched" -o "$d/dir.ptx"
[ -d "$d/dir.ptx" ] || fail "OUT is a directory: it was replaced"
clean "$d" "OUT is a directory"

# a write cut short (a file size limit, SIGXFSZ ignored: EFBIG)
n=$((n + 1))
rc=0
(
	ulimit -f 1
	trap '' XFSZ
	exec "$fagen" "$sched" -o "$d/k.ptx"
) 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || fail "write cut short: exit $rc, want 2"
same "$d/k.ptx" old "write cut short"
clean "$d" "write cut short"

# standard output full or closed
n=$((n + 2))
rc=0
"$fagen" "$sched" >/dev/full 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || fail "standard output full: exit $rc, want 2"
rc=0
"$fagen" "$sched" >&- 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || fail "standard output closed: exit $rc, want 2"

# an input that cannot be read: no output file
run 2 "missing input" "$tmp/nonexistent.fa" -o "$d/none.ptx"
[ -e "$d/none.ptx" ] && fail "missing input created its -o file"

# success replaces OUT whole, with the umask's mode
if run 0 "success" "$sched" -o "$d/k.ptx"; then
	"$fagen" "$sched" >"$tmp/want.ptx"
	cmp -s "$d/k.ptx" "$tmp/want.ptx" || fail "success: OUT differs"
fi
(umask 027 && "$fagen" "$sched" -o "$d/m.ptx")
n=$((n + 1))
mode=$(stat -c %a "$d/m.ptx" 2>/dev/null)
[ "$mode" = 640 ] || fail "umask 027 gave mode ${mode:-none}, want 640"
clean "$d" "success"

echo "cli output: $n checks, $nfail failed"
[ "$nfail" -eq 0 ]
