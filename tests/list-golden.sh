#!/usr/bin/env bash
# list-golden.sh [--ptx]: print the golden inputs, tests/golden/<stage>/<name>.fa,
# one per line, relative to the repository root and sorted bytewise.  With
# --ptx, print the expected PTX files (tests/golden/**/*.ptx) instead.
# Meson calls this when it configures, since it cannot glob.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

if [ "${1:-}" = --ptx ]; then
	find tests/golden -type f -name '*.ptx'
else
	find tests/golden -mindepth 2 -maxdepth 2 -type f -name '*.fa'
fi | sort
