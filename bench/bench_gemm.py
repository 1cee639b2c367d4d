#!/usr/bin/env python3
"""bench_gemm.py: schedules/gemm_ws_sm90.fa, plain and with its fused
bias + GELU epilogue, in clusters of 1, 2 and 4 CTAs multicasting B's
tile (-D CM, issue #27), beside cuBLAS (torch.mm, and addmm then the
tanh GELU as an eager PyTorch user writes it), in TFLOP/s (issue #26).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so FAGEN_SCHEDULE_DIR=schedules \\
        python3 bench/bench_gemm.py [--shapes 'M,N,K;...'] [--reps 20]
            [--cms 1,2,4] [--once]

The L2-to-SM traffic of each variant (one launch of each):

    ncu --kernel-name gemm_ws --metrics lts__t_sectors_srcunit_tex_op_read.sum,\
        lts__t_sectors_op_read.sum python3 bench/bench_gemm.py --once

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
    ap.add_argument("--once", action="store_true",
                    help="launch each fagen variant once at the first "
                    "shape and stop (for ncu --kernel-name gemm_ws)")
    ap.add_argument("--cms", default="1,2,4",
                    help="cluster sizes of fagen's plain GEMM")
    ap.add_argument("--gelu-cm", type=int, default=1,
                    help="cluster size of fagen's bias + GELU variant")
    ap.add_argument("--defs", default="",
                    help="more -D of every fagen variant, e.g. "
                    "'BN=256,ST=3'")
    a = ap.parse_args()
    cms = [int(v) for v in a.cms.split(",")]
    more = [d for d in a.defs.split(",") if d]
    shapes = SHAPES if not a.shapes else [
        tuple(int(v) for v in s.split(",")) for s in a.shapes.split(";")]
    path = os.path.join(os.environ.get("FAGEN_SCHEDULE_DIR", "schedules"),
                        "gemm_ws_sm90.fa")
    torch.cuda.set_stream(torch.cuda.Stream())   # not the legacy one
    kern = {}
    for cm in cms:
        kern["fagen" if cm == 1 else "fagen cm%d" % cm] = (
            _fglib.compile_kernel(path, ["DT=bf16", "CM=%d" % cm] + more),
            False)
    kern["fagen+gelu"] = (_fglib.compile_kernel(path, [
        "DT=bf16", "BIAS=true", "ACT=1", "CM=%d" % a.gelu_cm] + more), True)
    for nm, ((k, why), _) in kern.items():
        if not k:
            print("%s: does not compile: %s" % (nm, why))
            return 1
    print("%s, torch %s; bf16 C = A B^T; TFLOP/s (ratio to torch.mm)" % (
        torch.cuda.get_device_name(), torch.__version__))
    print("fagen+gelu in clusters of %d; -D %s" % (a.gelu_cm,
                                                    " ".join(more)))
    cols = ["torch.mm", "addmm+gelu"] + list(kern)
    print("%6s %6s %6s  %s" % ("M", "N", "K", " ".join(
        "%-14s" % c for c in cols)))
    for m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / 32
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        xd, wd, bd = x[:64].double(), w[:64].double(), b[:64].double()
        ref = xd @ wd.T
        refg = F.gelu(ref + bd, approximate="tanh")
        runs = {
            "torch.mm": (lambda: torch.mm(x, w.t()), ref),
            "addmm+gelu": (lambda: F.gelu(torch.addmm(b, x, w.t()),
                                          approximate="tanh"), refg),
        }
        outs = {}
        for nm, ((kn, _), bias) in kern.items():
            outs[nm] = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            args = {"M": m, "N": n, "K": k, "A": x, "B": w, "C": outs[nm]}
            if bias:
                args["BV"] = b
            runs[nm] = (_fglib.launcher(kn, args), refg if bias else ref)
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
        if a.once:
            torch.cuda.synchronize()
            return 0
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
