#!/usr/bin/env python3
"""run.py FAGEN: the compiler's passes scale linearly (issue #29).

For each shape of tests/scale/gen.py, times fagen (every pass, PTX to
/dev/null) on a schedule of size N and of 4N, the best of 3 runs each,
and fails if the time grows more than 6x.  A quadratic pass grows 16x; a
linear one 4x, measured up to about 4.8x on a 2-core machine because the
larger program also misses the caches more.  A ratio, so it holds on a
loaded machine.  The statement shapes are as large as the expansion limit
lets 4N be (docs/LANGUAGE.md), the declarations larger; where 4N takes
under 0.03 s the ratio is noise, reported but not judged.  Any run over
10 s fails too (a linear compile of these takes under 0.5 s even under
ASan; before issue #29's fixes, 4N 'let's took 17 s).  A shape that fails
is measured again, up to 3 times, and passes if any attempt does: other
tests running beside it slow one run, not every one.  fagen must exit
0 or 1 (the partition shape overlaps warps on purpose)."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import gen  # noqa: E402

# shape, N: statements, declarations, nesting, unrolling
CASES = [("stmts", 10000), ("lets", 10000), ("ifs", 5000),
         ("consts", 50000), ("parts", 20000), ("chain", 50000),
         ("attrs", 50000), ("sfor", 8000), ("nest", 60),
         ("defines", 10000)]
RATIO = 6.0
# -D: the 4N command line (80,000 arguments) costs the kernel and the
# argument loop more than 4x; a quadratic -D lookup measured 14 to 20x
SHAPE_RATIO = {"defines": 8.0}
FLOOR = 0.03
LIMIT = 10.0


def defines(path):
    """The 'defines' shape: a 'consts' schedule with a -D for each const,
    so the command line's and sema's -D handling are timed too."""
    if "defines_" not in path:
        return []
    n = int(path.rsplit("_", 1)[1].split(".")[0])
    return [a for i in range(n) for a in ("-D", "c%d=%d" % (i, i + 1))]


def best(fagen, path):
    t = None
    for _ in range(3):
        start = time.perf_counter()
        try:
            r = subprocess.run([fagen, path, "-o", os.devnull] +
                               defines(path),
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=LIMIT)
        except subprocess.TimeoutExpired:
            return None
        dt = time.perf_counter() - start
        if r.returncode not in (0, 1):
            raise SystemExit("FAIL %s: fagen exited %d\n%s" % (
                path, r.returncode, r.stderr.decode(errors="replace")[-2000:]))
        t = dt if t is None else min(t, dt)
    return t


def measure(fagen, shape, n, paths):
    """One attempt at a shape: prints it, returns whether it failed."""
    ts = []
    for path in paths:
        ts.append(best(fagen, path))
        if ts[-1] is None:
            print("FAIL %-7s N=%-6d: a run took over %gs" % (
                shape, n if len(ts) == 1 else 4 * n, LIMIT))
            return True
    ratio = ts[1] / max(ts[0], 1e-4)
    judged = ts[1] >= FLOOR
    fail = judged and ratio > SHAPE_RATIO.get(shape, RATIO)
    print("%-4s %-7s N=%-6d %.3fs  4N %.3fs  ratio %.1f%s" % (
        "FAIL" if fail else "ok", shape, n, ts[0], ts[1], ratio,
        "" if judged else " (below %.2fs: not judged)" % FLOOR))
    return fail


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: run.py FAGEN")
    fagen = sys.argv[1]
    only = os.environ.get("FAGEN_SCALE_ONLY")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for shape, n in CASES:
            if only and shape != only:
                continue
            paths = []
            for size in (n, 4 * n):
                paths.append(os.path.join(tmp, "%s_%d.fa" % (shape, size)))
                with open(paths[-1], "w") as f:
                    f.write(gen("consts" if shape == "defines" else shape,
                                size))
            for attempt in range(3):
                fail = measure(fagen, shape, n, paths)
                if not fail:
                    break
            bad += fail
    if bad:
        print("%d shape(s) failed: grew more than %gx from N to 4N, or ran "
              "over %gs" % (bad, RATIO, LIMIT))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
