#!/usr/bin/env python3
"""tune_rows.py: sweep the configurations of schedules/rmsnorm.fa,
softmax.fa or layernorm.fa (--kernel; the -D consts the runtime's
heuristic picks: TPR, WARPS, WHOLD, and CL for clusters sharing a row)
at given shapes, to choose and check that heuristic (issues #26, #27).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so FAGEN_SCHEDULE_DIR=schedules \\
        python3 bench/tune_rows.py [--shapes 'M,N;M,N'] [--reps 30]

Each configuration is compiled through libfagen (fg_compile_string,
fg_kernel_create) and launched with fg_launch on PyTorch's stream; its
output is checked against float64 first (bf16: 2e-2 relative), then
timed with CUDA events, the median of --reps runs of 5 back-to-back
launches, the configurations and a device-to-device copy of x
interleaved.  Prints GB/s (x and w read, y written) and the fraction of
the copy's, best first.
"""
import argparse
import os
import statistics
import sys

import torch

import _fglib

SHAPES = [(131072, 1024), (65536, 2048), (32768, 4096), (16384, 8192),
          (8192, 16384), (4096, 32768)]
EPS = 1e-6


def launcher(kind, k, x, w, b, y, st):
    m, n = x.shape
    args = {"M": m, "NC": n, "X": x, "Y": y}
    if kind != "softmax":
        args.update({"inv_n": 1.0 / n, "eps": EPS, "W": w, "RSTD": st})
    if kind == "layernorm":
        args.update({"B": b, "MEAN": st})
    return _fglib.launcher(k, args)


def reference(kind, x, w, b):
    """float64 of the first rows."""
    xd = x[:64].double()
    if kind == "softmax":
        return torch.softmax(xd, -1)
    if kind == "layernorm":
        return torch.nn.functional.layer_norm(xd, (x.shape[1],),
                                              w.double(), b.double(), EPS)
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS) * \
        w.double()


def configs(kind, n, most, stages=(), rgs=()):
    """(name, defines) of the configurations worth trying at width n;
    with stages, each one-CTA configuration also warp-specialized (-D
    WS=true, a cp.async loader warp and a ring of ST stages) for each ST
    whose ring fits 200 KiB."""
    out = []
    for tpr in (32, 64, 128, 256, 512, 1024):
        per = n // tpr                     # elements of a row a thread holds
        if n % (tpr * 8) or per > most:
            continue
        for warps in sorted({max(4, tpr // 32), 8, 16, 32}):
            if warps * 32 < tpr or warps > 32:
                continue
            whold = warps < 32 or per * 2 <= 32
            d = ["N=%d" % n, "TPR=%d" % tpr, "WARPS=%d" % warps]
            if kind != "softmax":
                d.append("WHOLD=%s" % ("true" if whold else "false"))
            out.append(("tpr%d w%d" % (tpr, warps), d))
            rows = warps * 32 // tpr
            for st in stages:
                if kind != "layernorm" and st * rows * n * 2 <= 200 * 1024:
                    out.append(("tpr%d w%d ws%d" % (tpr, warps, st),
                                d + ["WS=true", "ST=%d" % st]))
    # rows wider than a CTA: a cluster of CL CTAs shares a row, a row a
    # CTA of TPR threads (issue #27)
    for cl in (2, 4, 8, 16):
        nn = n // cl
        for tpr in (256, 512, 1024):
            per = nn // tpr
            if n % cl or nn % (tpr * 8) or per > most or per < 8:
                continue
            d = ["N=%d" % nn, "TPR=%d" % tpr, "WARPS=%d" % (tpr // 32),
                 "CL=%d" % cl]
            if kind != "softmax":
                d.append("WHOLD=false")
            out.append(("cl%d tpr%d" % (cl, tpr), d))
            for rg in rgs:    # another register budget (RG, issue #27)
                out.append(("cl%d tpr%d rg%d" % (cl, tpr, rg),
                            d + ["RG=%d" % rg]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--kernel", default="rmsnorm",
                    choices=["rmsnorm", "softmax", "layernorm"])
    ap.add_argument("--most", type=int, default=32,
                    help="elements of a row a thread may hold")
    ap.add_argument("--maxnreg", default="",
                    help="also try each configuration with '.maxnreg R' "
                    "added to its PTX, for each R of a comma list")
    ap.add_argument("--ws", default="",
                    help="also the warp-specialized form of each "
                    "configuration, for each ring depth of a comma list")
    ap.add_argument("--rg", default="",
                    help="also each cluster configuration with the "
                    "register budget RG, for each of a comma list")
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args()
    shapes = SHAPES if not a.shapes else [
        tuple(int(v) for v in s.split(",")) for s in a.shapes.split(";")]
    path = os.path.join(os.environ.get("FAGEN_SCHEDULE_DIR", "schedules"),
                        a.kernel + ".fa")
    # libfagen refuses the legacy default stream: work on a stream of ours
    torch.cuda.set_stream(torch.cuda.Stream())
    print("%s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    for m, n in shapes:
        x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        rstd = torch.empty(m, device="cuda", dtype=torch.float32)
        ref = reference(a.kernel, x, w, b)
        runs = {}
        cands = configs(a.kernel, n, a.most,
                        [int(v) for v in a.ws.split(",") if v],
                        [int(v) for v in a.rg.split(",") if v])
        cfgs = [(nm, d, None) for nm, d in cands]
        for r in [int(v) for v in a.maxnreg.split(",") if v]:
            cfgs += [("%s r%d" % (nm, r), d, r) for nm, d in cands]
        for name, d, r in cfgs:
            flt = None if r is None else (
                lambda t, r=r: t.replace(".maxntid", ".maxnreg %d\n.maxntid"
                                         % r, 1))
            k, why = _fglib.compile_kernel(path, d + ["DT=bf16"], flt)
            if not k:
                print("  %s: %s" % (name, why))
                continue
            go = launcher(a.kernel, k, x, w, b, y, rstd)
            y.fill_(float("nan"))
            go()
            err = ((y[:64].double() - ref).abs() / (ref.abs() + 1e-2)).max()
            if not err <= 2e-2:
                print("  %s: wrong (%.2e)" % (name, err))
                continue
            runs[name] = go
        cp = torch.empty_like(x)
        runs["copy"] = lambda: cp.copy_(x)
        for f in runs.values():
            for _ in range(3):
                f()
        times = {nm: [] for nm in runs}
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        names = list(runs)
        for r in range(a.reps):
            for nm in names[r % len(names):] + names[:r % len(names)]:
                ev[0].record()
                for _ in range(5):
                    runs[nm]()
                ev[1].record()
                ev[1].synchronize()
                times[nm].append(ev[0].elapsed_time(ev[1]) / 5)
        byts = 2 * m * n * 2 + (0 if a.kernel == "softmax" else n * 2)
        gbs = {nm: byts / statistics.median(t) / 1e6 for nm, t in
               times.items()}
        cp_gbs = gbs.pop("copy")
        print("M=%d N=%d: copy %.0f GB/s" % (m, n, cp_gbs))
        for nm, g in sorted(gbs.items(), key=lambda kv: -kv[1])[:a.top]:
            print("  %-16s %6.0f GB/s (%.2f)" % (nm, g, g / cp_gbs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
