#!/usr/bin/env python3
"""bench_kernels.py: fagen's memory-bound kernels against PyTorch and
QuACK, as fractions of a device-to-device copy's bandwidth measured in
the same run (issue #26).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so \\
        python3 bench/bench_kernels.py [--reps N] [--per N] \\
        [--shapes M,N;M,N...] [--dtype bf16|f16|f32] [--eps E] [--csv FILE]
    python3 bench/bench.py --kernels [the same arguments]

RMSNorm with a weight over (M, N) = (32768, 4096), (16384, 8192),
(8192, 16384), (4096, 32768), bf16 (each x 256 MiB, far past L2):

  fagen    fagen.rms_norm(x, w, eps)
  compile  torch.compile(eager, dynamic=False), compiled per shape
  eager    (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
           * w).to(x.dtype): the usual formula, its result in x's dtype
           like the others'
  quack    QuACK's rmsnorm(x, w, eps=eps) (quack.rmsnorm, where
           importable; skipped with a message otherwise)
  copy     y.copy_(x) for a tensor of x's size: the yardstick

GB/s counts the bytes a norm must move: x and w read, y written
(fagen's rstd, 4 bytes a row, is not counted); the copy's, x read and y
written.  Each method's output is checked first against float64 (its
buffer filled with NaN before): max |y - ref| / (|ref| + 0.01) must be
at most 2e-2 for bf16 (2e-3 f16, 1e-5 f32, as tests/gpu/
test_python_norm.py), else its column is marked '!'.  Timing: CUDA
events around --per back-to-back calls, the median over --reps runs
(20 at least), the methods interleaved round-robin with the first one
rotating, warm-up runs excluded.  Prints a table with each method's
GB/s and its fraction of the copy's.
"""
import argparse
import csv
import statistics
import sys

import torch

import fagen

SHAPES = [(32768, 4096), (16384, 8192), (8192, 16384), (4096, 32768)]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16,
          "f32": torch.float32}
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
METHODS = ["fagen", "compile", "eager", "quack"]


def eager(x, w, eps):
    return (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
            * w).to(x.dtype)


def quack_fn():
    """QuACK's rmsnorm(x, w, eps=...), or None with the reason."""
    errors = []
    for mod, attr in (("quack", "rmsnorm"), ("quack.rmsnorm", "rmsnorm"),
                      ("quack", "rms_norm")):
        try:
            m = __import__(mod, fromlist=[attr])
            fn = getattr(m, attr)
            if not callable(fn):        # the module quack.rmsnorm
                fn = getattr(fn, "rmsnorm")
        except Exception as e:      # noqa: BLE001 -- any: skip it
            errors.append("%s.%s: %s" % (mod, attr, e))
            continue

        def call(x, w, eps, fn=fn):
            y = fn(x, w, eps=eps)
            return y[0] if isinstance(y, tuple) else y
        return call, None
    return None, "; ".join(errors)


def methods(eps):
    fns = {"fagen": lambda x, w: fagen.rms_norm(x, w, eps=eps),
           "eager": lambda x, w: eager(x, w, eps)}
    compiled = torch.compile(eager, dynamic=False)
    fns["compile"] = lambda x, w: compiled(x, w, eps)
    q, why = quack_fn()
    if q is None:
        print("quack: not importable, skipped (%s)" % why, file=sys.stderr)
    else:
        fns["quack"] = lambda x, w: q(x, w, eps)
    return fns


def check(name, fn, x, w, ref, tol):
    """fn's output against float64 (NaN-filled memory handed back first):
    (error, ok), or None when it raised."""
    try:
        torch.empty_like(x).fill_(float("nan"))     # freed: reused next
        y = fn(x, w)
        torch.cuda.synchronize()
    except Exception as e:                          # noqa: BLE001
        print("  %s: %s" % (name, str(e).splitlines()[0][:200]),
              file=sys.stderr)
        torch.cuda.synchronize()
        return None
    if y.shape != x.shape or y.dtype != x.dtype:
        print("  %s: returned %s %s, not %s %s" % (
            name, tuple(y.shape), y.dtype, tuple(x.shape), x.dtype),
            file=sys.stderr)
        return float("inf"), False
    err = ((y.double() - ref).abs() / (ref.abs() + 1e-2)).max().item()
    ok = err <= tol                                 # NaN fails
    if not ok:
        print("  CHECK FAILED: %s: error %.3g > %.3g" % (name, err, tol),
              file=sys.stderr)
    return err, ok


def events(fn, per):
    """Seconds per call over per back-to-back calls."""
    a = torch.cuda.Event(enable_timing=True)
    z = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(per):
        fn()
    z.record()
    z.synchronize()
    return a.elapsed_time(z) / 1e3 / per


def point(m, n, dtype, fns, args):
    gen = torch.Generator(device="cuda").manual_seed(m * 131 + n)
    x = torch.randn(m, n, device="cuda", generator=gen).to(dtype)
    w = (1 + torch.randn(n, device="cuda", generator=gen) / 2).to(dtype)
    xd = x.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) +
                           args.eps) * w.double()
    del xd
    esz = x.element_size()
    row = {"M": m, "N": n, "dtype": args.dtype}
    runs = {}
    for name, fn in fns.items():                    # check first
        c = check(name, fn, x, w, ref, TOL[dtype])
        if c is None:
            continue
        row[name + "_err"], row[name + "_ok"] = c
        runs[name] = (lambda fn: lambda: fn(x, w))(fn)
    del ref
    y = torch.empty_like(x)
    runs["copy"] = lambda: y.copy_(x)
    names = list(runs)
    for nm in names:                                # warm-up, excluded
        events(runs[nm], 3)
    times = {nm: [] for nm in names}
    for r in range(args.reps):
        for k in range(len(names)):
            nm = names[(r + k) % len(names)]
            times[nm].append(events(runs[nm], args.per))
    moved = {nm: (2 * m * n + n) * esz for nm in names}
    moved["copy"] = 2 * m * n * esz
    for nm in names:
        t = statistics.median(times[nm])
        row[nm] = moved[nm] / t / 1e9
        row[nm + "_us"] = t * 1e6
    for nm in names:
        row[nm + "_frac"] = row[nm] / row["copy"]
    torch.cuda.empty_cache()
    return row


def fmt(row, name):
    if name not in row:
        return "-"
    s = "%.0f (%.2f)" % (row[name], row[name + "_frac"])
    return s + ("!" if not row.get(name + "_ok", True) else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30,
                    help="timed runs per method (at least 20)")
    ap.add_argument("--per", type=int, default=10,
                    help="back-to-back calls per run")
    ap.add_argument("--shapes", default=None,
                    help="M,N;M,N... (default: %s)" % ";".join(
                        "%d,%d" % s for s in SHAPES))
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--csv", default=None, help="also write the rows here")
    args = ap.parse_args()
    if args.reps < 20:
        ap.error("--reps must be at least 20")
    if not torch.cuda.is_available():
        print("bench_kernels.py needs a CUDA GPU", file=sys.stderr)
        return 77
    shapes = SHAPES if not args.shapes else [
        tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";")]
    dtype = DTYPES[args.dtype]
    print("%s, torch %s, fagen %s; RMSNorm with a weight, %s, eps %g; "
          "GB/s (fraction of the copy's)" % (
              torch.cuda.get_device_name(), torch.__version__,
              fagen.version(), args.dtype, args.eps))
    fns = methods(args.eps)
    cols = [nm for nm in METHODS if nm in fns]
    print("%7s %7s  " % ("M", "N") + "".join("%-15s" % c for c in cols) +
          "copy GB/s")
    rows = []
    with torch.inference_mode():
        for m, n in shapes:
            row = point(m, n, dtype, fns, args)
            rows.append(row)
            print("%7d %7d  " % (m, n) +
                  "".join("%-15s" % fmt(row, c) for c in cols) +
                  "%.0f" % row["copy"], flush=True)
    if args.csv:
        keys = sorted({k for r in rows for k in r})
        with open(args.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=keys)
            wr.writeheader()
            wr.writerows(rows)
        print("wrote %s" % args.csv)
    bad = [r for r in rows for c in cols
           if c + "_ok" in r and not r[c + "_ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
