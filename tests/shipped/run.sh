#!/usr/bin/env bash
# run.sh FAGEN NAME: the shipped variant NAME of variants.txt compiles to
# exactly tests/shipped/NAME.ptx, and ptxas -v accepts it for its target
# with no spills and the resource report in NAME.ptxas.txt (registers,
# shared memory, barriers: so that changes show up in review); sm_80 PTX
# also for sm_86 and sm_89, unspilled; the verifier must follow it to the
# end (no -Wverify-limit).
# FAGEN_UPDATE_GOLDEN=1 rewrites both files.  Exit 77 without ptxas for
# the ptxas half.
set -u
fagen=$(realpath "$1")
name=$2
cd "$(dirname "$0")/../.." || exit 2
line=$(awk -v n="$name" '$1 == n' tests/shipped/variants.txt)
[ -n "$line" ] || { echo "no variant '$name'"; exit 2; }
read -r _ sched args <<<"$line"
read -r -a argv <<<"${args:-}"
exp=tests/shipped/$name.ptx
rep=tests/shipped/$name.ptxas.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# -Werror=verify-limit: a shipped variant the verifier gives up on is a
# blind spot, not a pass
if ! "$fagen" "$sched" "${argv[@]}" -Werror=verify-limit -o "$out/k.ptx"; then
	echo "FAIL: fagen $sched ${args:-} exited $?"
	exit 1
fi
. "$(dirname "$0")/../../scripts/cuda-env" >/dev/null 2>&1 || true
arch=$(sed -n 's/^\.target \(sm_[0-9a-z]*\).*/\1/p' "$out/k.ptx")
if command -v ptxas >/dev/null 2>&1; then
	if ! ptxas -v -arch="$arch" "$out/k.ptx" -o "$out/k.cubin" \
	    >"$out/v.txt" 2>&1; then
		cat "$out/v.txt"
		echo "FAIL: ptxas -arch=$arch rejected $name"
		exit 1
	fi
	grep -v 'Compile time' "$out/v.txt" >"$out/report.txt"
	if grep -Eq '[1-9][0-9]* bytes spill' "$out/report.txt"; then
		cat "$out/report.txt"
		echo "FAIL: $name spills"
		exit 1
	fi
	if grep -q 'C75[0-9][0-9]' "$out/report.txt"; then
		cat "$out/report.txt"
		echo "FAIL: ptxas changed $name (a C75xx info line)"
		exit 1
	fi
	# sm_80 PTX also serves sm_86 and sm_89 (issue #28): the same checks
	for more in $([ "$arch" = sm_80 ] && echo sm_86 sm_89); do
		if ! ptxas -v -arch="$more" "$out/k.ptx" -o "$out/m.cubin" \
		    >"$out/m.txt" 2>&1 || grep -Eq \
		    '[1-9][0-9]* bytes spill|C75[0-9][0-9]' "$out/m.txt"; then
			cat "$out/m.txt"
			echo "FAIL: ptxas -arch=$more rejects, spills or changes $name"
			exit 1
		fi
	done
else
	echo "ptxas not found: checking the PTX only"
	: >"$out/report.txt"
fi
if [ -n "${FAGEN_UPDATE_GOLDEN:-}" ]; then
	cp "$out/k.ptx" "$exp"
	[ -s "$out/report.txt" ] && cp "$out/report.txt" "$rep"
	echo "updated $exp"
	exit 0
fi
fail=0
diff -u "$exp" "$out/k.ptx" || fail=1
if [ -s "$out/report.txt" ]; then
	diff -u "$rep" "$out/report.txt" || fail=1
fi
exit $fail
