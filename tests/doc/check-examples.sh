#!/usr/bin/env bash
# check-examples.sh FAGEN DOCFILE: compile every complete example in a
# Markdown document and check that it behaves as the document says.
#
# Fenced blocks, by their info string:
#   ```fa            a complete schedule: compiled, see below
#   ```fa-fragment   a snippet that is not a complete program: not compiled
#   ```diag          the exact standard error of the ```fa block just before
#                    it (only prose may stand between the two)
#   ```ANYTHING      shell, PTX, EBNF, ...: ignored
# A fence without an info string is an error: say what the block is.
#
# Each ```fa block is written to example.fa in a directory of its own and
# compiled there with 'FAGEN example.fa --check', so diagnostics name the
# file example.fa.  Directives in the block's leading comment lines:
#   // expect-error   fagen must exit 1 (otherwise 0); the block must be
#                     followed by a ```diag block
#   // RUN: ARGS      run 'FAGEN example.fa ARGS' instead of '--check'
#                     (split at blanks; several RUN lines concatenate)
# A block with no ```diag after it must compile with empty standard error:
# a warning the text does not show is a failure.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 FAGEN DOCFILE" >&2
	exit 2
fi
fagen=$(realpath -- "$1")
doc=$2
if [ ! -x "$fagen" ]; then
	echo "check-examples: $1 is not an executable" >&2
	exit 2
fi
if [ ! -f "$doc" ]; then
	echo "check-examples: $doc: no such file" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Split the document: block N's text goes to $tmp/N/example.fa (fa) or
# $tmp/N/expected.stderr (a diag block that follows fa block N); the
# index lists 'N LINE' per fa block.  awk reports structural errors.
awk -v dir="$tmp" '
	function fail(msg) {
		printf "%s:%d: %s\n", FILENAME, NR, msg > "/dev/stderr"
		bad = 1
	}
	BEGIN { infence = 0; n = 0; last = 0 }
	/^```/ {
		if (infence) {
			if ($0 != "```")
				fail("a closing fence has text after it")
			if (kind == "fa" || kind == "diag")
				close(out)
			if (kind == "fa")
				last = n
			else
				last = 0
			infence = 0
			next
		}
		info = substr($0, 4)
		sub(/[ \t]+$/, "", info)
		if (info == "") {
			fail("a fenced block without an info string " \
				"(fa, fa-fragment, diag, sh, ...)")
			info = "?"
		}
		kind = info
		infence = 1
		start = NR
		if (kind == "fa") {
			n++
			system("mkdir -p \"" dir "/" n "\"")
			out = dir "/" n "/example.fa"
			printf "" > out
			print n, NR > (dir "/index")
		} else if (kind == "diag") {
			if (last)
				out = dir "/" last "/expected.stderr"
			else {
				fail("a diag block that does not follow an fa block")
				out = "/dev/null"
			}
			printf "" > out
		}
		next
	}
	infence && (kind == "fa" || kind == "diag") { print > out }
	END {
		if (infence) {
			NR = start
			fail("an unclosed fenced block")
		}
		exit bad
	}
' "$doc" || exit 1

if [ ! -f "$tmp/index" ]; then
	echo "check-examples: $doc has no \`\`\`fa block" >&2
	exit 1
fi

nfail=0
nblocks=0
while read -r n line; do
	nblocks=$((nblocks + 1))
	d=$tmp/$n
	want=0
	args=()
	run=0
	while IFS= read -r l; do
		case $l in
		'// expect-error'*) want=1 ;;
		'// RUN:'*)
			read -r -a words <<<"${l#// RUN:}"
			args+=("${words[@]}")
			run=1
			;;
		//* | '') ;;
		*) break ;;
		esac
	done <"$d/example.fa"
	[ "$run" -eq 1 ] || args=(--check)
	where="$doc:$line"
	if [ "$want" -eq 1 ] && [ ! -f "$d/expected.stderr" ]; then
		echo "FAIL $where: an expect-error block needs a \`\`\`diag" \
			"block after it" >&2
		nfail=$((nfail + 1))
		continue
	fi
	rc=0
	(cd "$d" && "$fagen" example.fa "${args[@]}") \
		>"$d/stdout" 2>"$d/stderr" </dev/null || rc=$?
	ok=1
	if [ "$rc" -ne "$want" ]; then
		echo "FAIL $where: fagen example.fa ${args[*]} exited $rc," \
			"expected $want" >&2
		sed 's/^/  stderr: /' "$d/stderr" >&2
		ok=0
	elif [ -f "$d/expected.stderr" ]; then
		if ! diff -u --label "$where (diag block)" --label "fagen stderr" \
			"$d/expected.stderr" "$d/stderr" >&2; then
			echo "FAIL $where: standard error differs" >&2
			ok=0
		fi
	elif [ -s "$d/stderr" ]; then
		echo "FAIL $where: fagen printed diagnostics the document" \
			"does not show (add a \`\`\`diag block):" >&2
		sed 's/^/  stderr: /' "$d/stderr" >&2
		ok=0
	fi
	[ "$ok" -eq 1 ] || nfail=$((nfail + 1))
done <"$tmp/index"

echo "check-examples: $nblocks examples, $nfail failed"
[ "$nfail" -eq 0 ]
