#!/usr/bin/env python3
"""bench_bwd.py: fagen's attention backward against cuDNN's and
FlashAttention 2's (SDPA backends) and FlashAttention-4's where
importable, side by side in one process (issue #13).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench_bwd.py \
        [--reps N] [--dims 64,128] [--seqs 1024,...] [--causal both|yes|no]
        [--gqa G] [--heads H] [--det] [--dv DV] [--csv FILE]

Grid: batch 16384/S, heads 2048/D (or --heads), bf16, B,H,S,D tensors;
with --gqa G, k and v have H/G heads; with --dv, v and the output have
DV columns (192 with 128: DeepSeek's MLA prefill shape).  For each point and method the
forward runs once with gradients enabled, then the backward alone is timed
(torch.autograd.grad with retain_graph, dO fixed): CUDA events around
back-to-back calls, warm-up excluded, the median over --reps runs, the
methods interleaved round-robin.  TFLOP/s counts 2.5 x the forward's
4*B*H*S*S*D (FlashAttention's convention; 2*B*H*S*S*(D + DV) with
--dv), half for causal.

Each method's dq, dk, dv are checked first: against a float64 backward of
batch 0 (every head) where S <= 2048, else against cuDNN's gradients; a
relative RMS error above 4x cuDNN's (plus 2^-9) fails the point.
With --det, fagen's deterministic backward ("fagen-det":
fagen.attention(..., deterministic=True), dQ's tiles added in key-block
order) is timed beside the others, and its dq, dk and dv must be
bitwise equal over two backward passes.
"""
import argparse
import csv
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fagen


def methods(causal, gqa, det=False):
    kw = {"enable_gqa": True} if gqa > 1 else {}

    def sdpa(backend):
        def fn(q, k, v):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=causal, **kw)
        return fn

    fns = {"fagen": lambda q, k, v: fagen.attention(q, k, v,
                                                    causal=causal)[0],
           "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
           **({"fagen-det": lambda q, k, v: fagen.attention(
               q, k, v, causal=causal, deterministic=True)[0]}
              if det else {}),
           "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
    try:
        from flash_attn.cute import flash_attn_func as fa4

        def fa4_fn(q, k, v):
            o = fa4(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    causal=causal)[0]
            return o.transpose(1, 2)
        fns["fa4"] = fa4_fn
    except ImportError:
        pass
    return fns


def ref64(q, k, v, do, causal):
    """float64 dq, dk, dv of batch 0."""
    q, k, v, do = (x[:1].double().detach().requires_grad_(True)
                   for x in (q, k, v, do))
    g = q.shape[1] // k.shape[1]
    kk = k.repeat_interleave(g, 1)
    vv = v.repeat_interleave(g, 1)
    s = q @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool,
                                     device=s.device).triu(1), float("-inf"))
    o = torch.softmax(s, -1) @ vv
    return torch.autograd.grad(o, (q, k, v), do[:1].double())


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def point(d, causal, s, gqa, heads, reps, det=False, dv=None):
    b, h = max(1, 16384 // s), heads or 2048 // d
    gen = torch.Generator(device="cuda").manual_seed(s * 7 + d + causal)
    dv = dv or d
    mk = (lambda hh, dd=d: torch.randn((b, hh, s, dd), device="cuda",
                                       dtype=torch.bfloat16, generator=gen))
    q, k, v = mk(h), mk(h // gqa), mk(h // gqa, dv)
    do = mk(h, dv)
    row = {"D": d, "causal": int(causal), "S": s, "B": b, "H": h,
           "Hk": h // gqa}
    graphs, grads = {}, {}
    for name, fn in methods(causal, gqa, det).items():
        try:
            qq, kk, vv = (x.clone().requires_grad_(True) for x in (q, k, v))
            o = fn(qq, kk, vv)
            gr = torch.autograd.grad(o, (qq, kk, vv), do, retain_graph=True)
            torch.cuda.synchronize()
            graphs[name] = (o, (qq, kk, vv))
            grads[name] = gr
            if name == "fagen-det":     # bitwise the same the second time
                g2 = torch.autograd.grad(o, (qq, kk, vv), do,
                                         retain_graph=True)
                same = all(torch.equal(x, y) for x, y in zip(gr, g2))
                row["det_bitwise"] = int(same)
                if not same:
                    print("  CHECK FAILED: fagen-det D=%d causal=%d S=%d: "
                          "two backward passes differ" % (d, causal, s),
                          file=sys.stderr)
        except Exception as e:                          # noqa: BLE001
            print("  %s D=%d causal=%d S=%d: %s" % (name, d, causal, s,
                  str(e).splitlines()[0][:160]), file=sys.stderr)
    if s <= 2048:
        ref = ref64(q, k, v, do, causal)
        errs = {n: max(rel(g[i][:1], ref[i]) for i in range(3))
                for n, g in grads.items()}
        against = "float64"
    else:
        c = grads.get("cudnn")
        errs = {n: max(rel(g[i], c[i]) for i in range(3)) if c else 0.0
                for n, g in grads.items()}
        against = "cudnn"
    tol = 4 * errs.get("cudnn", errs.get("flash", 1e-2)) + 2 ** -9
    if against == "cudnn":
        tol = 2 ** -6    # two bf16 backwards differ by both their errors
    ok = []
    for n, e in errs.items():
        row[n + "_err"] = e
        if not e <= tol and n != "cudnn":
            print("  CHECK FAILED: %s D=%d causal=%d S=%d: error %.3g vs %s"
                  " > %.3g" % (n, d, causal, s, e, against, tol),
                  file=sys.stderr)
        else:
            ok.append(n)
    fl = 2.5 * 2.0 * b * h * s * s * (d + dv) / (2 if causal else 1)
    times = {n: [] for n in ok}

    def run(n, calls):
        o, ins = graphs[n]
        for _ in range(calls):
            torch.autograd.grad(o, ins, do, retain_graph=True)

    per = max(1, min(20, int(4e-3 / max(fl / 300e12, 1e-6))))
    for n in ok:
        run(n, 2)
    torch.cuda.synchronize()
    for r in range(reps):
        for i in range(len(ok)):
            n = ok[(r + i) % len(ok)]
            a = torch.cuda.Event(enable_timing=True)
            z = torch.cuda.Event(enable_timing=True)
            a.record()
            run(n, per)
            z.record()
            z.synchronize()
            times[n].append(a.elapsed_time(z) / 1e3 / per)
    for n in ok:
        row[n] = fl / statistics.median(times[n]) / 1e12
    graphs.clear()      # free the tensors (run() closes over graphs)
    grads.clear()
    torch.cuda.empty_cache()
    return row, against


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    ap.add_argument("--causal", choices=["both", "yes", "no"],
                    default="both")
    ap.add_argument("--gqa", type=int, default=1)
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--det", action="store_true")
    ap.add_argument("--dv", type=int, default=None)
    ap.add_argument("--csv", default=None)
    a = ap.parse_args()
    print("device: %s, torch %s, cuDNN %s" % (
        torch.cuda.get_device_name(), torch.__version__,
        torch.backends.cudnn.version()))
    rows = []
    cs = {"both": [False, True], "yes": [True], "no": [False]}[a.causal]
    for d in [int(x) for x in a.dims.split(",")]:
        for causal in cs:
            for s in [int(x) for x in a.seqs.split(",")]:
                row, against = point(d, causal, s, a.gqa, a.heads, a.reps,
                                     a.det, a.dv)
                rows.append(row)
                names = [n for n in ("fagen", "fagen-det", "cudnn", "flash",
                                     "fa4") if n in row]
                c = row.get("cudnn")
                print("bwd B=%d H=%d Hk=%d S=%d D=%d%s %s: %s (checked vs "
                      "%s)" % (row["B"], row["H"], row["Hk"], s, d,
                         " Dv=%d" % a.dv if a.dv else "",
                         "causal" if causal else "full", "; ".join(
                             "%s %.0f TFLOP/s%s" % (
                                 n, row[n], " (%.2fx cuDNN)" % (row[n] / c)
                                 if c and n != "cudnn" else "")
                             for n in names), against), flush=True)
    if a.csv:
        keys = sorted({k for r in rows for k in r})
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
