#!/usr/bin/env bash
# run-gpu.sh BUILDDIR: run the build's gpu_* test executables on the GPU
# (gpu_sim_calib among them: the simulator against the GPU, issue #18).
# Exits 77 (SKIP) when there is no GPU, or when there is nothing to run yet.
set -euo pipefail

build=${1:-build}
if [ ! -e /dev/nvidia0 ] || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no GPU here (nvidia-smi -L fails or no /dev/nvidia0): skipping"
	exit 77
fi

mapfile -t progs < <(find "$build" -type f -name 'gpu_*' -perm -u+x | LC_ALL=C sort)
if [ "${#progs[@]}" -eq 0 ]; then
	echo "GPU present, but no gpu_* test executables are built yet: skipping"
	exit 77
fi

fail=0
for p in "${progs[@]}"; do
	echo "== $p"
	if ! "$p"; then
		echo "FAIL $p" >&2
		fail=1
	fi
done
exit "$fail"
