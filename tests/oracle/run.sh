#!/usr/bin/env bash
# run.sh FGDESC: the encoding oracle (issue #18).  fgdesc writes every
# descriptor fagen emits for the shipped schedules (tests/shipped/
# variants.txt, each checked against its own PTX) and a sweep of the
# operand space, as cases.inc; oracle.cpp, compiled here against the
# CUTLASS headers of the installed nvidia-cutlass package, rebuilds each
# with CUTLASS's encoders and compares.  Exit 77 (SKIP) without the
# package or a C++ compiler and the CUDA headers.  FAGEN_CUTLASS_INCLUDE
# may name a CUTLASS include directory instead of the package.
set -u
fgdesc=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
. scripts/cuda-env >/dev/null 2>&1 && find_cuda >/dev/null 2>&1 || true

inc=${FAGEN_CUTLASS_INCLUDE:-}
if [ -z "$inc" ]; then
	inc=$(python3 -c 'import importlib.util as u, os
s = u.find_spec("cutlass_library")
print(os.path.join(list(s.submodule_search_locations)[0], "source",
	"include") if s else "")' 2>/dev/null)
fi
if [ -z "$inc" ] || [ ! -f "$inc/cute/arch/mma_sm100_desc.hpp" ]; then
	echo "SKIP: CUTLASS headers not found; install them with"
	echo "  scripts/setup --with-oracle"
	echo "  (python3 -m pip install --no-deps nvidia-cutlass==4.2.0.0)"
	exit 77
fi
cxx=${CXX:-c++}
if ! command -v "$cxx" >/dev/null 2>&1; then
	echo "SKIP: no C++ compiler ($cxx) for the CUTLASS half"
	exit 77
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -d "$cuda/include/cccl" ] && [ ! -f "$cuda/include/cuda/std/utility" ]
then
	echo "SKIP: CUTLASS needs the CUDA headers (cuda/std); set CUDA_HOME"
	exit 77
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$fgdesc" sweep >"$out/cases.inc" || exit 1
fail=0
while read -r name sched args; do
	case $name in '#'* | '') continue ;; esac
	read -r -a argv <<<"${args:-}"
	"$fgdesc" kernel "$name" "$sched" "${argv[@]}" >>"$out/cases.inc" ||
		fail=1
done <tests/shipped/variants.txt
[ "$fail" = 0 ] || { echo "FAIL: the PTX does not take the encoders' values"; exit 1; }
# the sweep and 50 variants share most operands
sort -u "$out/cases.inc" -o "$out/cases.inc"
echo "oracle: $(wc -l <"$out/cases.inc") cases; CUTLASS at $inc"
if ! "$cxx" -std=c++17 -O0 -w -I"$out" -I"$inc" -I"$cuda/include" \
    -I"$cuda/include/cccl" tests/oracle/oracle.cpp -o "$out/oracle" \
    2>"$out/cxx.txt"; then
	head -n 40 "$out/cxx.txt"
	echo "FAIL: oracle.cpp does not compile against $inc"
	exit 1
fi
"$out/oracle"; r=$?; [ -n "${FAGEN_ORACLE_KEEP:-}" ] && cp -r "$out" "$FAGEN_ORACLE_KEEP"; exit $r
