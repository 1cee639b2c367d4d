#!/usr/bin/env bash
# run.sh FAGEN [--variants | --full] [--jobs N] [-v]: sweep the -D space of
# the shipped schedules (sweep.py).  Each shipped schedule with each of its
# consts moved, one at a time, over a set of values; --variants: every
# documented variant of tests/shipped/variants.txt so (about 6 minutes on
# 2 cores), --full: every pair of consts moved together too (longer).  Each
# time fagen (with -Werror=register-pressure) either accepts the variant,
# and then ptxas must assemble its PTX for its .target without spills (but
# for sweep.py's KNOWN_SPILLS), or refuses it with exit 1 and a located
# error.
# Out-of-range values (D=0, D=96, DT=i32, ST=0, BN=512, CAUSAL=2, huge
# integers, ...) must be refused the same way.  Never an exit 2, a signal,
# an internal error or a sanitizer report.  --bad-only runs only the
# out-of-range values (for sanitizer builds).  Ends with the counts.
set -euo pipefail
if [ $# -lt 1 ]; then
	echo "usage: $0 FAGEN [--variants | --full | --bad-only] [--jobs N]" \
		"[-v]" >&2
	exit 2
fi
# shellcheck source=scripts/cuda-env
. "$(dirname "$0")/../../scripts/cuda-env"
find_cuda || true
exec python3 "$(dirname "$0")/sweep.py" "$@"
