#!/usr/bin/env python3
"""bench_gemm.py: schedules/gemm_ws_sm90.fa, plain and with its fused
bias + GELU epilogue, beside cuBLAS (torch.mm, and addmm then the tanh
GELU as an eager PyTorch user writes it), in TFLOP/s (issue #26).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so FAGEN_SCHEDULE_DIR=schedules \\
        python3 bench/bench_gemm.py [--shapes 'M,N,K;...'] [--reps 20]

C = A B^T with A [M, K] and B [N, K], bf16.  Each method's output is
checked against float64 on a 64 x 64 corner first (relative Frobenius
error at most 1e-2), then timed with CUDA events, the median of --reps
runs of 3 back-to-back calls, the methods interleaved.  Prints TFLOP/s
(2 M N K) and each method's ratio to torch.mm of the same shape.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import _fglib

SHAPES = [(8192, 8192, 8192), (16384, 4096, 4096), (4096, 16384, 4096)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    shapes = SHAPES if not a.shapes else [
        tuple(int(v) for v in s.split(",")) for s in a.shapes.split(";")]
    path = os.path.join(os.environ.get("FAGEN_SCHEDULE_DIR", "schedules"),
                        "gemm_ws_sm90.fa")
    torch.cuda.set_stream(torch.cuda.Stream())   # not the legacy one
    plain, why = _fglib.compile_kernel(path, ["DT=bf16"])
    fused, why2 = _fglib.compile_kernel(path, ["DT=bf16", "BIAS=true",
                                               "ACT=1"])
    if not plain or not fused:
        print("fagen: does not compile: %s %s" % (why, why2))
        return 1
    print("%s, torch %s; bf16 C = A B^T; TFLOP/s (ratio to torch.mm)" % (
        torch.cuda.get_device_name(), torch.__version__))
    print("%6s %6s %6s  %-14s %-14s %-14s %-14s" % (
        "M", "N", "K", "torch.mm", "addmm+gelu", "fagen", "fagen+gelu"))
    for m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / 32
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        c2 = torch.empty_like(c)
        xd, wd, bd = x[:64].double(), w[:64].double(), b[:64].double()
        ref = xd @ wd.T
        refg = F.gelu(ref + bd, approximate="tanh")
        runs = {
            "torch.mm": (lambda: torch.mm(x, w.t()), ref),
            "addmm+gelu": (lambda: F.gelu(torch.addmm(b, x, w.t()),
                                          approximate="tanh"), refg),
            "fagen": (_fglib.launcher(plain, {"M": m, "N": n, "K": k,
                                              "A": x, "B": w, "C": c}),
                      ref),
            "fagen+gelu": (_fglib.launcher(fused, {"M": m, "N": n, "K": k,
                                                   "A": x, "B": w, "C": c2,
                                                   "BV": b}), refg),
        }
        outs = {"fagen": c, "fagen+gelu": c2}
        ok = {}
        for nm, (f, r) in runs.items():
            if nm in outs:
                outs[nm].fill_(float("nan"))
            y = f()
            y = outs.get(nm, y)
            d = y[:64, :64].double()
            err = ((d - r).norm() / r.norm()).item()
            ok[nm] = err <= 1e-2
            if not ok[nm]:
                print("  %s: relative error %.2e: not timed" % (nm, err))
        names = [nm for nm in runs if ok[nm]]
        for nm in names:
            for _ in range(2):
                runs[nm][0]()
        times = {nm: [] for nm in names}
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        for rep in range(a.reps):
            for nm in names[rep % len(names):] + names[:rep % len(names)]:
                ev[0].record()
                for _ in range(3):
                    runs[nm][0]()
                ev[1].record()
                ev[1].synchronize()
                times[nm].append(ev[0].elapsed_time(ev[1]) / 3)
        tf = {nm: 2 * m * n * k / statistics.median(t) / 1e9 for nm, t in
              times.items()}
        base = tf.get("torch.mm")
        cells = []
        for nm in runs:
            if nm not in tf:
                cells.append("%-14s" % "wrong")
            else:
                cells.append("%-14s" % ("%.0f (%.2f)" % (
                    tf[nm], tf[nm] / base) if base else "%.0f" % tf[nm]))
        print("%6d %6d %6d  %s" % (m, n, k, " ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
