#!/usr/bin/env bash
# run.sh SECONDS [LIBFUZZER-ARGS...]: build a libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined) in build-fuzz/ (FUZZ_DIR
# overrides), then fuzz for SECONDS seconds.  FUZZ_TARGET picks it:
#   compile  (the default) tests/fuzz/fuzz_compile.c, the whole compile,
#            from the shipped schedules, the examples and every golden
#            input, with tests/fuzz/fagen.dict
#   meta     tests/fuzz/fuzz_meta.c, the runtime's reading of fagen's PTX
#            metadata and its argument checks, from the metadata of the
#            shipped PTX
#   gen      tests/fuzz/fuzz_gen.c, the input read as a schedule
#            generator's choices: large, long and deeply nested schedules
#            (up to 1 MB of text), with a 10 s limit per input
#            (FUZZ_TIMEOUT) that a pass slow in the program's size misses
#
# The corpus grows in build-fuzz/corpus (corpus-meta, corpus-gen) and is
# kept between runs.  A crash, hang (an input over FUZZ_TIMEOUT seconds, 60 by
# default), leak or sanitizer report stops the run, leaves the input in
# build-fuzz/artifacts/ and makes the script exit non-zero; make it a
# golden input or a unit test, fix it, and rerun.  SECONDS=0 only builds
# and replays the seeds.
#
# Needs clang and its runtime (libclang-rt-14-dev on Debian):
# FAGEN_FUZZ=1 scripts/setup installs them.  Exits 77 (SKIP) without them.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
	echo "usage: $0 SECONDS [LIBFUZZER-ARGS...]" >&2
	exit 2
fi
secs=$1
shift
cd "$(dirname "$0")/../.."
dir=${FUZZ_DIR:-build-fuzz}
cc=${FUZZ_CC:-clang}
target=${FUZZ_TARGET:-compile}
timeout=${FUZZ_TIMEOUT:-60}
case $target in
compile) corpus=$dir/corpus ;;
meta) corpus=$dir/corpus-meta ;;
gen) corpus=$dir/corpus-gen timeout=${FUZZ_TIMEOUT:-10} ;;
*) echo "fuzz: FUZZ_TARGET is compile, meta or gen, not '$target'" >&2
	exit 2 ;;
esac

# The probe links into a scratch file, never -o /dev/null: a linker run
# as root replaces /dev/null with a regular file.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if ! command -v "$cc" >/dev/null 2>&1 ||
    ! echo 'int LLVMFuzzerTestOneInput(const char *p, long n)
	{ (void)p; (void)n; return 0; }' |
	"$cc" -x c -fsanitize=fuzzer,address,undefined -o "$probe/a.out" - \
	>/dev/null 2>&1; then
	echo "fuzz: $cc with libFuzzer not found (FAGEN_FUZZ=1 scripts/setup)"
	exit 77
fi

# The compiler core as meson.build lists it (but the CLI), the grammar,
# and for 'meta' the runtime; the runtime needs cuda.h for its types.
mkdir -p "$dir/gen" "$dir/obj" "$corpus" "$dir/seeds-$target" \
	"$dir/artifacts"
flex --outfile="$dir/gen/lexer.c" --header-file="$dir/gen/lexer.h" \
	grammar/lexer.l
bison -Wall -Werror --defines="$dir/gen/parser.h" \
	--output="$dir/gen/parser.c" grammar/parser.y
san=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
# the version, as meson.build passes it
version=$(sed -n "s/^  version: '\(.*\)',\$/\1/p" meson.build)
cflags=(-std=c17 -D_POSIX_C_SOURCE=200809L -g -O1 "${san[@]}"
	-DFAGEN_VERSION="\"$version\"" -Icompiler -Iinclude -Igrammar
	-I"$dir/gen")
srcs=("$dir/gen/lexer.c" "$dir/gen/parser.c" "tests/fuzz/fuzz_$target.c")
for f in $(grep -o "'compiler/[a-z_0-9/]*\.c'" meson.build | tr -d "'" |
    sort -u); do
	[ "$f" != compiler/main.c ] && [ -f "$f" ] && srcs+=("$f")
done
libs=(-lm)
if [ "$target" = meta ]; then
	# shellcheck source=scripts/cuda-env
	. scripts/cuda-env
	if ! find_cuda || ! [ -f "$CUDA_HOME/include/cuda.h" ]; then
		echo "fuzz: no CUDA toolkit (cuda.h) for the runtime: skipping"
		exit 77
	fi
	cflags+=(-Iruntime/base -Iruntime/driver -Iruntime/jit -Iruntime/front
		-Isim -Itests/unit -I"$CUDA_HOME/include")
	# and the simulator, which libfagen contains (FAGEN_SIM)
	for f in $(grep -o "'\(runtime\|sim\)/[a-z_0-9/]*\.c'" meson.build |
	    tr -d "'" | sort -u); do
		[ "$f" != sim/main.c ] && srcs+=("$f")
	done
	# the schedules built into libfagen, as meson.build makes them
	python3 tools/embed-schedules.py "$dir/gen/shipped.c" schedules/*.fa
	srcs+=("$dir/gen/shipped.c")
	libs+=(-ldl -lpthread)
fi
objs=()
pids=()
newest=$(ls -t $(find compiler grammar runtime sim include -name '*.h') \
	tests/unit/testalloc.h "$0" | head -n 1)
for f in "${srcs[@]}"; do
	o=$dir/obj/$(echo "${f%.c}" | tr / _).o
	objs+=("$o")
	# Rebuild what changed; two compilers at a time.
	if [ "$o" -nt "$f" ] && [ "$o" -nt "$newest" ]; then
		continue
	fi
	# The verifier's vector clocks compare in tight loops where tracing
	# each comparison (trace-cmp) would cost most of the run time.
	extra=()
	[ "$f" = compiler/check/verify.c ] && extra=(-fno-sanitize-coverage=trace-cmp -O2)
	"$cc" "${cflags[@]}" ${extra[@]+"${extra[@]}"} -w -c "$f" -o "$o" &
	pids+=($!)
	if [ "${#pids[@]}" -ge 2 ]; then
		wait "${pids[0]}"
		pids=("${pids[@]:1}")
	fi
done
for p in ${pids[@]+"${pids[@]}"}; do
	wait "$p"
done
"$cc" "${san[@]}" "${objs[@]}" "${libs[@]}" -o "$dir/fuzz_$target"

# Seeds: every schedule and golden input, by a name that keeps its path;
# for 'meta', the metadata and header of every shipped PTX; for 'gen',
# the shipped schedules again, read as choices.
seeds=$dir/seeds-$target
rm -f "$seeds"/*
if [ "$target" = gen ]; then
	for f in schedules/*.fa; do
		cp "$f" "$seeds/$(echo "$f" | tr / _)"
	done
	dict=()
elif [ "$target" = compile ]; then
	for f in schedules/*.fa examples/*.fa tests/golden/*/*.fa \
	    tests/gpu/*.fa; do
		[ -f "$f" ] && cp "$f" "$seeds/$(echo "$f" | tr / _)"
	done
	dict=(-dict=tests/fuzz/fagen.dict)
else
	for f in tests/shipped/*.ptx tests/golden/ptx/*.ptx; do
		[ -f "$f" ] && sed '/^\.address_size/q' "$f" \
			>"$seeds/$(echo "$f" | tr / _)"
	done
	dict=()
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
args=(${dict[@]+"${dict[@]}"} -max_len=16384
	-timeout="$timeout" -rss_limit_mb=2048
	-artifact_prefix="$dir/artifacts/" -print_final_stats=1)
if [ "$secs" -eq 0 ]; then
	"$dir/fuzz_$target" "${args[@]}" -runs=0 "$@" "$seeds"
else
	"$dir/fuzz_$target" "${args[@]}" -max_total_time="$secs" "$@" \
		"$corpus" "$seeds"
fi
