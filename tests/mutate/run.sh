#!/usr/bin/env bash
# run.sh FAGEN [SCHEDULE...]: mutation test of the verifier.  For every
# one-line barrier operation (wait, arrive, expect, bsync, barrive,
# commit, tma_commit, tma_wait, mma_commit, mma_wait) of each shipped
# schedule, make two mutants, the line deleted and the line duplicated,
# and check that 'fagen --check' rejects them.  Prints each accepted
# mutant and a summary; exits 1 when fewer than MIN_PCT (default 90)
# percent are caught.
set -u
fagen=$(realpath "$1")
shift
cd "$(dirname "$0")/../.." || exit 2
[ $# -gt 0 ] || set -- schedules/*.fa
min=${MIN_PCT:-90}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total=0 caught=0
for f in "$@"; do
	mapfile -t variants < <(sed -n 's|^// VARIANTS: *||p' "$f")
	[ "${#variants[@]}" -eq 0 ] && variants=(-)
	while IFS=: read -r n _; do
		for kind in delete duplicate; do
			if [ $kind = delete ]; then
				sed "${n}d" "$f" >"$tmp/m.fa"
			else
				sed "${n}p" "$f" >"$tmp/m.fa"
			fi
			total=$((total + 1))
			hit=0
			for v in "${variants[@]}"; do
				args=()
				[ "$v" != - ] && read -r -a args <<<"$v"
				if ! "$fagen" "$tmp/m.fa" --check "${args[@]}" \
				    >/dev/null 2>&1; then
					hit=1
					break
				fi
			done
			if [ $hit = 1 ]; then
				caught=$((caught + 1))
			else
				echo "accepted: $kind $f:$n: $(sed -n "${n}p" "$f" |
					sed 's/^[[:space:]]*//')"
			fi
		done
	done < <(grep -nE '^[[:space:]]*(wait|arrive|expect|bsync|barrive|commit|tma_commit|tma_wait|mma_commit|mma_wait)\b[^;]*;[[:space:]]*(//.*)?$' "$f")
done
pct=$((total ? caught * 100 / total : 100))
echo "mutants: $total, caught: $caught ($pct%)"
[ $pct -ge "$min" ]
