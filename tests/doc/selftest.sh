#!/usr/bin/env bash
# selftest.sh BUILDDIR: check-docs.sh fails on broken documents (issue
# #25: a deliberately broken doc example must fail CI).  README.md with one
# command broken, and small documents with one fault each, must each fail
# for the stated reason; an intact copy of README.md must pass.
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0 n=0

# expect NAME WANT: check-docs on $tmp/NAME.md fails, printing WANT
expect() {
	n=$((n + 1))
	if "$here/check-docs.sh" "$build" "$tmp/$1.md" >"$tmp/out" 2>&1; then
		echo "FAIL $1: check-docs passed"
		nfail=$((nfail + 1))
	elif ! grep -qF -- "$2" "$tmp/out"; then
		echo "FAIL $1: check-docs failed, but without '$2':"
		sed 's/^/  | /' "$tmp/out"
		nfail=$((nfail + 1))
	fi
}

cp "$src/README.md" "$tmp/readme.md"
n=$((n + 1))
if ! "$here/check-docs.sh" "$build" "$tmp/readme.md" >"$tmp/out" 2>&1; then
	echo "FAIL an intact copy of README.md does not pass:"
	sed 's/^/  | /' "$tmp/out"
	nfail=$((nfail + 1))
fi

sed 's|^\(build/fagen schedules/copy_ws_sm90.fa\) --check |\1 --chek |' \
	"$src/README.md" >"$tmp/readme_cmd.md"
cmp -s "$src/README.md" "$tmp/readme_cmd.md" &&
	echo "FAIL README.md no longer has the line this test breaks" &&
	nfail=$((nfail + 1))
expect readme_cmd "exited 2, expected 0"

sed 's| -ldl -lm$| -ldl|' "$src/README.md" >"$tmp/readme_cc.md"
expect readme_cc "undefined reference to symbol 'fmaxf"

fence='```'
cat >"$tmp/c_error.md" <<EOD
${fence}c
#include "fagen.h"
int f(void) { return fg_no_such_function(); }
$fence
EOD
expect c_error "does not compile"

cat >"$tmp/status.md" <<EOD
${fence}sh
build/fagen no/such/file.fa --check
$fence
EOD
expect status "exited 2, expected 0"

cat >"$tmp/unmarked.md" <<EOD
${fence}python
import torch
$fence
EOD
expect unmarked "a 'python' block"

cat >"$tmp/indented.md" <<EOD
Text.

    build/fagen --help
EOD
expect indented "an indented code block"

cat >"$tmp/table.md" <<EOD
| a | b |
|---|---|
| 1 | 2 |
A paragraph.
| 3 | 4 |
EOD
expect table "a paragraph splits the table"

cat >"$tmp/path.md" <<EOD
See \`shared/ptx/README.md\` and [this](docs/NOPE.md).
EOD
expect path "'shared/ptx/README.md' is not in the repository"

cat >"$tmp/skip.md" <<EOD
<!-- doc-test: skip -->
${fence}sh
build/fagen --help
$fence
EOD
expect skip "unknown directive"

echo "selftest: $n cases, $nfail failed"
[ "$nfail" -eq 0 ]
