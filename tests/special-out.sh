#!/usr/bin/env bash
# special-out.sh FAGEN: -o onto something that is not a regular file is
# written in place, never replaced by a rename: a FIFO stays a FIFO and
# receives the PTX, and /dev/null stays a character device (which matters
# when the tests run as root: a rename would replace the device).
set -u
fagen=$1
src=$(dirname "$0")/../schedules/copy_ws_sm90.fa
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkfifo "$tmp/fifo"
timeout 10 cat "$tmp/fifo" >"$tmp/got" &
reader=$!
"$fagen" "$src" -o "$tmp/fifo" || { echo "fagen -o FIFO failed"; exit 1; }
wait "$reader"
[ -p "$tmp/fifo" ] || { echo "the FIFO was replaced"; exit 1; }
grep -q '^\.target sm_90a' "$tmp/got" ||
	{ echo "the FIFO did not receive the PTX"; exit 1; }

"$fagen" "$src" -o /dev/null || { echo "fagen -o /dev/null failed"; exit 1; }
[ -c /dev/null ] || { echo "/dev/null is no longer a device"; exit 1; }
ls "$tmp" | grep -q tmp && { echo "a temporary file was left"; exit 1; }
echo ok
