#!/usr/bin/env bash
# run-ptxas.sh FILE.ptx: assemble an expected PTX file with ptxas for the
# architecture on its .target line.  Fails on any ptxas error and on spills
# (a non-zero 'N bytes spill stores/loads' in the -v report) and on any
# (C75xx) advisory line; sm_80 PTX also for sm_86 and sm_89; exits 77
# (SKIP) when there is no ptxas.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 FILE.ptx" >&2
	exit 2
fi
file=$1
# shellcheck source=scripts/cuda-env
. "$(dirname "$0")/../scripts/cuda-env"
if ! find_cuda; then
	echo "ptxas not found (set CUDA_HOME): skipping $file"
	exit 77
fi

arch=$(awk '$1 == ".target" { sub(/,.*/, "", $2); print $2; exit }' "$file")
if [ -z "$arch" ]; then
	echo "run-ptxas: $file has no .target line" >&2
	exit 1
fi

# sm_80 PTX also serves sm_86 and sm_89 (issue #28): each must pass
for more in $([ "$arch" = sm_80 ] && echo sm_86 sm_89); do
	o=$(ptxas -v -arch="$more" "$file" -o /dev/null 2>&1) || {
		printf '%s\n' "$o"
		echo "run-ptxas: ptxas -arch=$more failed on $file" >&2
		exit 1
	}
	if printf '%s\n' "$o" | grep -Eq '[1-9][0-9]* bytes spill|\(C75[0-9]{2}\)'; then
		printf '%s\n' "$o"
		echo "run-ptxas: $file spills or draws a C75xx notice for $more" >&2
		exit 1
	fi
done

rc=0
out=$(ptxas -v -arch="$arch" "$file" -o /dev/null 2>&1) || rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
	echo "run-ptxas: ptxas -arch=$arch failed on $file (exit $rc)" >&2
	exit 1
fi
if printf '%s\n' "$out" | grep -Eq '[1-9][0-9]* bytes spill (stores|loads)'; then
	echo "run-ptxas: $file spills registers for $arch" >&2
	exit 1
fi
# a (C75xx) advisory: ptxas changed or ignored what the PTX asked for
if printf '%s\n' "$out" | grep -Eq '\(C75[0-9]{2}\)'; then
	echo "run-ptxas: ptxas reports a C75xx notice on $file for $arch" >&2
	exit 1
fi
