#!/usr/bin/env bash
# verify_jobs.sh FAGEN: the verifier's runs on threads say exactly what
# they say one at a time (compiler/check/verify_runs.c): for every
# verifier golden (tests/golden/verify/, failures of every check, limits
# reached) and for mutants of the shipped schedules (a synchronizing
# line deleted), the output and exit status under FAGEN_VERIFY_JOBS=1
# and under 2, 3 and 8 threads are the same, byte for byte.
set -u
if [ $# -ne 1 ]; then
	echo "usage: $0 FAGEN" >&2
	exit 2
fi
fagen=$(realpath "$1")
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0
n=0
# mutants: the first 'wait', 'arrive', 'bsync', 'commit' and 'tma_wait'
# lines of each shipped schedule with an sm_100a or sm_90a pipeline
for s in fa_fwd_sm90 fa_fwd_baseline_sm90 fa_fwd_sm100 \
    fa_fwd_baseline_sm100 fa_bwd_sm90; do
	for k in wait arrive bsync commit tma_wait; do
		l=$(grep -n "^[[:space:]]*$k " "schedules/$s.fa" | sed -n 2p |
			cut -d: -f1)
		[ -n "$l" ] || continue
		sed "${l}d" "schedules/$s.fa" >"$tmp/$s-$k.fa"
	done
done
for f in tests/golden/verify/*.fa "$tmp"/*.fa; do
	n=$((n + 1))
	FAGEN_VERIFY_JOBS=1 "$fagen" --check "$f" >"$tmp/one" 2>&1
	rc1=$?
	for j in 2 3 8; do
		FAGEN_VERIFY_JOBS=$j "$fagen" --check "$f" >"$tmp/many" 2>&1
		rc=$?
		if [ $rc -ne $rc1 ] || ! cmp -s "$tmp/one" "$tmp/many"; then
			echo "FAIL: $f: $j threads (exit $rc) differ from one (exit $rc1)"
			diff "$tmp/one" "$tmp/many" | head -n 8 | sed 's/^/  | /'
			nfail=$((nfail + 1))
			break
		fi
	done
done
echo "$n schedules, $nfail differ"
[ "$nfail" -eq 0 ]
