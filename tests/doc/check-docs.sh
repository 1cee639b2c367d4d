#!/usr/bin/env bash
# check-docs.sh BUILDDIR DOC...: every code block of the
# documents runs, compiles or is marked as not runnable here (issue #25).
#
# Blocks are fenced, and the info string says what a block is:
#   fa, diag, fa-fragment   schedules: tests/doc/check-examples.sh
#   sh                      commands, run (see below)
#   c                       a C file: compiled against the build's fagen.h
#                           with -Wall -Wextra -Werror; with a main it is
#                           linked with the build's libfagen and run,
#                           otherwise linked into a shared object with
#                           --no-undefined (every fg_ name must exist)
#   c-fragment, python-fragment, text, ebnf, ptx
#                           shown, not run (declarations, output, grammar)
# A block of another kind, an indented code block, a fence without an
# info string, and a table that a paragraph splits are errors.
#
# Directives, in HTML comments on the lines just before a fence:
#   <!-- doc-test: skip REASON -->   not run (a GPU, pip, ...): counted
#   <!-- doc-test: status N -->      each command (the program) exits N;
#                                    0 when not given
#   <!-- doc-test: output TEXT -->   its standard output or error holds
#                                    TEXT
#   <!-- doc-test: file NAME -->     a c block is written to NAME, where
#                                    later sh blocks of the document can
#                                    use it
#   <!-- doc-test: installed -->     sh: as after 'meson install' (the
#                                    build is installed into a scratch
#                                    DESTDIR that pkg-config points into)
#
# sh commands (a line, '\' continuing it; '#' lines and blank lines are
# skipped) run with bash from a scratch directory per document that
# holds links to every top-level entry of the repository, 'build' being
# BUILDDIR, so the documented relative paths work; 'fagen' is the
# build's.  FAGEN_DRIVER_LIB points nowhere, so anything that needs the
# GPU stops at libfagen's FG_ERR_NO_DRIVER even on a GPU host.
#
# Also every repository path a document names in backquotes or a link
# (docs/..., tests/..., ...), and every one that a comment of
# schedules/*.fa or examples/* names, must exist.  The last line counts
# the blocks that ran, those skipped and those only shown.
set -uo pipefail

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILDDIR DOC..." >&2
	exit 2
fi
build=$(realpath -- "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fagen=$build/fagen
if [ ! -x "$fagen" ]; then
	echo "check-docs: $fagen is not an executable" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/cache"
ln -s "$fagen" "$tmp/bin/fagen"
export PATH="$tmp/bin:$PATH"
export FAGEN_DRIVER_LIB=/nonexistent/libcuda.so.1
export FAGEN_CACHE_DIR=$tmp/cache
# a path into the repository, as documents and comments name them
tops='(docs|schedules|examples|tests|compiler|runtime|include|bench|scripts'
tops=$tops'|python|grammar|reference|shared)'
cuda_inc=
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
	[ -n "$d" ] && [ -f "$d/include/cuda.h" ] && cuda_inc=$d/include &&
		break
done
pc_cflags=$(PKG_CONFIG_PATH=$build/meson-uninstalled \
	pkg-config --cflags fagen 2>/dev/null)

nrun=0 nskip=0 nshown=0 nfail=0
fail() {
	echo "FAIL $*" >&2
	nfail=$((nfail + 1))
}
show() {
	sed 's/^/  | /' "$1" | head -20 >&2
}

# A scratch directory that looks like the repository root.
scratch() {
	local d=$1 e
	mkdir -p "$d"
	for e in "$src"/*; do
		case $(basename "$e") in
		build | build-*) ;;
		*) ln -s "$e" "$d/" ;;
		esac
	done
	ln -s "$build" "$d/build"
}

# The build, installed into a scratch DESTDIR, for 'installed' blocks:
# sets inst_env to the environment that makes pkg-config find it.
inst_env=()
install_once() {
	[ "${#inst_env[@]}" -gt 0 ] && return 0
	local root=$tmp/destdir pc
	if ! meson install -C "$build" --no-rebuild --quiet \
	    --destdir "$root" >"$tmp/install.log" 2>&1; then
		show "$tmp/install.log"
		return 1
	fi
	pc=$(find "$root" -name fagen.pc | head -1)
	[ -n "$pc" ] || return 1
	inst_env=("PKG_CONFIG_PATH=$(dirname "$pc")"
		"PKG_CONFIG_SYSROOT_DIR=$root"
		"LD_LIBRARY_PATH=$(dirname "$(dirname "$pc")")")
}

# run_sh WHERE DIR STATUS OUTPUT INSTALLED FILE: each command of FILE.
run_sh() {
	local where=$1 dir=$2 want=$3 out=$4 inst=$5 file=$6 cmd rc
	local -a env=()
	if [ "$inst" = 1 ]; then
		install_once || { fail "$where: meson install failed"; return; }
		env=("${inst_env[@]}")
	fi
	while IFS= read -r cmd; do
		rc=0
		(cd "$dir" && env ${env[@]+"${env[@]}"} bash -c "$cmd") \
			>"$tmp/out" 2>&1 </dev/null || rc=$?
		if [ "$rc" -ne "$want" ]; then
			fail "$where: '$cmd' exited $rc, expected $want"
			show "$tmp/out"
		elif [ -n "$out" ] && ! grep -qF -- "$out" "$tmp/out"; then
			fail "$where: '$cmd' did not print '$out'"
			show "$tmp/out"
		fi
	done < <(awk '
		/^[ \t]*(#|$)/ && cmd == "" { next }
		{ cmd = cmd $0 }
		cmd ~ /\\$/ { sub(/\\$/, "", cmd); next }
		{ print cmd; cmd = "" }' "$file")
}

# run_c WHERE DIR STATUS OUTPUT FILE: compile (link, run) a C file.
run_c() {
	local where=$1 dir=$2 want=$3 out=$4 file=$5 rc=0 exe
	local -a cf=(-std=c17 -Wall -Wextra -Werror -fPIC
		-D_POSIX_C_SOURCE=200809L)
	# shellcheck disable=SC2206
	cf+=($pc_cflags)
	[ -n "$cuda_inc" ] && cf+=(-I"$cuda_inc")
	exe=${file%.c}
	if ! (cd "$dir" && cc "${cf[@]}" -c "$file" -o "$exe.o") \
	    >"$tmp/out" 2>&1; then
		fail "$where: it does not compile"
		show "$tmp/out"
		return
	fi
	if ! grep -qE '^main\(|int main\(' "$dir/$file"; then
		(cd "$dir" && cc -shared -Wl,--no-undefined -o "$exe.so" \
			"$exe.o" -L"$build" -lfagen) >"$tmp/out" 2>&1 ||
			{ fail "$where: it does not link"; show "$tmp/out"; }
		return
	fi
	if ! (cd "$dir" && cc -o "$exe" "$exe.o" -L"$build" -lfagen -ldl \
	    -lm) >"$tmp/out" 2>&1; then
		fail "$where: it does not link"
		show "$tmp/out"
		return
	fi
	(cd "$dir" && LD_LIBRARY_PATH=$build "./$(basename "$exe")") \
		>"$tmp/out" 2>&1 </dev/null || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$where: the program exited $rc, expected $want"
		show "$tmp/out"
	elif [ -n "$out" ] && ! grep -qF -- "$out" "$tmp/out"; then
		fail "$where: the program did not print '$out'"
		show "$tmp/out"
	fi
}

# Every path into the repository that DOC names must exist.
check_paths() {
	local doc=$1 dir p
	# links are relative to the document's folder; a document outside
	# the repository (the self-test's) is taken to be at its root
	dir=$(cd "$(dirname "$doc")" && pwd)
	case $dir/ in
	"$src"/*) ;;
	*) dir=$src ;;
	esac
	grep -noE "\`$tops/[A-Za-z0-9_./-]*\`" "$doc" |
	while IFS=: read -r line p; do
		p=${p//\`/}
		[ -e "$src/$p" ] || echo "$doc:$line: '$p' is not in the repository"
	done
	grep -noE '\]\([^)#: ]+' "$doc" | while IFS=: read -r line p; do
		p=${p#](}
		[ -e "$dir/$p" ] || echo "$doc:$line: link '$p' is not in the repository"
	done
}

ndoc=0
for doc in "$@"; do
	ndoc=$((ndoc + 1))
	d=$tmp/doc$ndoc
	mkdir -p "$d/blocks"
	scratch "$d/root"
	# Split DOC into blocks: blocks/N.{kind,line,body} and one line of
	# directives per block in blocks/N.dir; awk reports structure errors.
	if ! awk -v dir="$d/blocks" '
		function err(msg) {
			printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
			bad = 1
		}
		/^```/ && !infence {
			kind = substr($0, 4)
			sub(/[ \t]+$/, "", kind)
			if (kind == "")
				err("a fenced block without an info string")
			n++
			infence = 1
			body = dir "/" n ".body"
			printf "" > body
			print kind > (dir "/" n ".kind")
			print FNR > (dir "/" n ".line")
			printf "%s", pending > (dir "/" n ".dir")
			close(dir "/" n ".kind"); close(dir "/" n ".line")
			close(dir "/" n ".dir")
			pending = ""
			prev = $0
			next
		}
		/^```/ && infence {
			if ($0 != "```")
				err("a closing fence has text after it")
			infence = 0
			close(body)
			prev = $0
			next
		}
		infence { print > body; next }
		/^<!-- doc-test: .* -->$/ {
			s = $0
			sub(/^<!-- doc-test: /, "", s)
			sub(/ -->$/, "", s)
			pending = pending s "\n"
			next
		}
		/^<!-- doc-test/ { err("a doc-test comment must be one line"); next }
		{
			if (pending != "" && $0 != "")
				err("a doc-test comment not just before a fence")
			if ($0 != "")
				pending = ""
		}
		/^(    |\t)/ && prev == "" && !inlist {
			err("an indented code block: fence it and say what it is")
		}
		/^\|/ && prev != "" && prev !~ /^\|/ {
			err("a table row just after text: a paragraph splits the " \
				"table, or the table needs a blank line before it")
		}
		/^([-*]|[0-9]+\.) / { inlist = 1 }
		/^[^ \t|-]/ && !/^([-*]|[0-9]+\.) / { inlist = 0 }
		{ prev = $0 }
		END {
			if (infence)
				err("an unclosed fenced block")
			exit bad
		}' "$doc"; then
		nfail=$((nfail + 1))
		continue
	fi
	check_paths "$doc" >"$tmp/paths"
	if [ -s "$tmp/paths" ]; then
		fail "$doc: names files that are not in the repository:"
		show "$tmp/paths"
	fi
	nfa=0
	for k in "$d"/blocks/*.kind; do
		[ -e "$k" ] || continue
		b=${k%.kind}
		kind=$(cat "$k")
		where=$doc:$(cat "$b.line")
		skip= want=0 out= file= inst=0
		while IFS= read -r dl; do
			case $dl in
			skip\ ?*) skip=${dl#skip } ;;
			status\ [0-9]*) want=${dl#status } ;;
			output\ ?*) out=${dl#output } ;;
			file\ ?*) file=${dl#file } ;;
			installed) inst=1 ;;
			*) fail "$where: unknown directive 'doc-test: $dl'" ;;
			esac
		done <"$b.dir"
		if [ -n "$skip" ]; then
			nskip=$((nskip + 1))
			continue
		fi
		case $kind in
		fa)
			nfa=$((nfa + 1))
			nrun=$((nrun + 1)) ;;
		diag | fa-fragment | c-fragment | python-fragment | text | \
		    ebnf | ptx)
			nshown=$((nshown + 1)) ;;
		sh)
			nrun=$((nrun + 1))
			run_sh "$where" "$d/root" "$want" "$out" "$inst" \
				"$b.body" ;;
		c)
			nrun=$((nrun + 1))
			[ -n "$file" ] || file=block$(basename "$b").c
			cp "$b.body" "$d/root/$file"
			run_c "$where" "$d/root" "$want" "$out" "$file" ;;
		*)
			fail "$where: a '$kind' block: say what it is (sh, c," \
				"fa, ...) or mark it '<!-- doc-test: skip" \
				"REASON -->'" ;;
		esac
	done
	if [ "$nfa" -gt 0 ] && ! "$here/check-examples.sh" "$fagen" "$doc" \
	    >"$tmp/out" 2>&1; then
		fail "$doc: its fa blocks (tests/doc/check-examples.sh):"
		show "$tmp/out"
	fi
done

# The comments of the shipped schedules and the examples, which users
# read as documentation, cite no file that is not in the repository.
for f in "$src"/schedules/*.fa "$src"/examples/*; do
	grep -noE "$tops/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(md|fa|c|h|sh|py|txt)\b" \
		"$f" | while IFS=: read -r line p; do
		[ -e "$src/$p" ] ||
			echo "${f#"$src"/}:$line: '$p' is not in the repository"
	done
done >"$tmp/paths"
if [ -s "$tmp/paths" ]; then
	fail "schedules/ and examples/ cite files that are not in the" \
		"repository:"
	show "$tmp/paths"
fi

echo "check-docs: $ndoc documents: $nrun blocks run, $nskip skipped," \
	"$nshown shown only, $nfail failed"
[ "$nfail" -eq 0 ]
