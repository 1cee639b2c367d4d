#!/usr/bin/env bash
# mods_library.sh FAGEN: every mod of the shipped library (schedules/mods/,
# issue #22; and tests/cli/mods/: a mask of long boolean chains)
# compiles into both sm_90a forward schedules, at D 64 and 128, with
# block sparsity, and ptxas accepts the result with no spills; and
# into the sm_100a baseline's hooks, which ptxas accepts.  Exit
# 77 without ptxas for that half.
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 FAGEN" >&2
	exit 2
fi
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
. scripts/cuda-env >/dev/null 2>&1 || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0
n=0
for m in schedules/mods/*.fa tests/cli/mods/*.fa; do
	if grep -q '^mod score_mod' "$m"; then hook=SCORE_MOD; else hook=MASK_MOD; fi
	for s in fa_fwd_sm90 fa_fwd_baseline_sm90; do
		for d in 64 128; do
			n=$((n + 1))
			what="$m into $s -D D=$d -D $hook=true -D BLOCKS=true"
			if ! "$fagen" "schedules/$s.fa" -D D=$d -D $hook=true \
			    -D BLOCKS=true --mod "$m" \
			    -o "$tmp/k.ptx" 2>"$tmp/err"; then
				echo "FAIL: $what"
				sed 's/^/  | /' "$tmp/err" | head -n 5
				nfail=$((nfail + 1))
				continue
			fi
			command -v ptxas >/dev/null 2>&1 || continue
			if ! ptxas -v -arch=sm_90a "$tmp/k.ptx" -o "$tmp/k.cubin" \
			    >"$tmp/v.txt" 2>&1 ||
			    grep -Eq '[1-9][0-9]* bytes spill' "$tmp/v.txt"; then
				echo "FAIL: ptxas on $what"
				sed 's/^/  | /' "$tmp/v.txt" | head -n 5
				nfail=$((nfail + 1))
			fi
		done
	done
done
# Blackwell's baseline takes the hooks without block sparsity; ptxas
# must accept it (a column gather over a 128-wide tensor-memory row may
# spill: counted, not failed)
for m in schedules/mods/*.fa tests/cli/mods/*.fa; do
	if grep -q '^mod score_mod' "$m"; then hook=SCORE_MOD; else hook=MASK_MOD; fi
	n=$((n + 1))
	what="$m into fa_fwd_baseline_sm100 -D $hook=true"
	if ! "$fagen" schedules/fa_fwd_baseline_sm100.fa -D $hook=true \
	    --mod "$m" -o "$tmp/k.ptx" 2>"$tmp/err"; then
		echo "FAIL: $what"
		sed 's/^/  | /' "$tmp/err" | head -n 5
		nfail=$((nfail + 1))
		continue
	fi
	command -v ptxas >/dev/null 2>&1 || continue
	if ! ptxas -v -arch=sm_100a "$tmp/k.ptx" -o "$tmp/k.cubin" \
	    >"$tmp/v.txt" 2>&1; then
		echo "FAIL: ptxas on $what"
		sed 's/^/  | /' "$tmp/v.txt" | head -n 5
		nfail=$((nfail + 1))
	elif grep -Eq '[1-9][0-9]* bytes spill' "$tmp/v.txt"; then
		echo "note: $what spills ($(grep -Eo '[0-9]+ bytes spill stores' \
			"$tmp/v.txt"))"
	fi
done
echo "mods_library: $((n - nfail)) of $n passed"
[ "$nfail" = 0 ]
