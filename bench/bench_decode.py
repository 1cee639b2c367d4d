#!/usr/bin/env python3
"""bench_decode.py: decoding attention (issue #16), fagen against its
peers in one process: achieved HBM bandwidth and step latency.

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench.py \
        --decode [--batches 1,8,64] [--ctxs 1024,8192,32768,131072] \
        [--groups 4,8] [--hkv 8] [--reps N] [--csv FILE]

Each point is one decoding step: batch B sequences of ctx cached tokens
(all of the same length, so that SDPA can take them), Hkv = 8 K/V heads,
G query heads each (GQA), one new query token, D = 128, bf16.  Methods:

  fagen       fagen.attention_with_kvcache, a contiguous cache
              (fa_decode_sm90.fa, split-KV by the runtime's heuristic,
              then fa_combine.fa)
  fagen-p64   the same through a page table of 64-token pages, shuffled
  cudnn       SDPA (enable_gqa) restricted to the cuDNN backend
  flash       SDPA restricted to the flash backend (FlashAttention 2)
  efficient   SDPA restricted to the memory-efficient backend
  fa4         FlashAttention-4 (flash_attn.cute.flash_attn_func) where
              importable, the contiguous cache, num_splits=1 (on sm_90
              FA4 has no split-KV: its heuristic's splits are refused)
  fa4-p64     FlashAttention-4's flash_attn_varlen_func with its page
              table (64-token pages), seqused_k, num_splits=1

Each output is checked against a float64 reference on two sequences
(relative error <= 1e-2, else the point fails for that method).  Timing:
each method's step is captured in a CUDA graph over R rotating sets of
inputs (R sets hold at least 256 MB, so L2 keeps none); the graphs (and
a device-to-device copy of the same bytes) are replayed round-robin, rep
after rep with the first one rotating, CUDA events around each replay,
and the median over --reps replays divided by R is the step's GPU time
without host overhead ('latency').  Before each timed replay L2 is
flushed (a 256 MB write, synchronized, outside the timing).  (Timed
back to back without it, a step right after the 1 GB copy measured 15 %
slower on an H200, and a step after another method over the same cache
found part of it in L2.)
Bandwidth is the bytes of K and V the step must read (B ctx Hkv D 2 2)
over it; 'copy' (of the same bytes, at most 2 GB) is the copy's reads
plus writes over its time, so
'frac' = bandwidth / copy bandwidth.  Eager times (the host's launch
cost included, the calls made back to back over the sets) are printed
too.
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

dev = torch.device("cuda")


def make_sets(b, ctx, hkv, g, d, nsets, paged):
    sets = []
    for _ in range(nsets):
        q = torch.randn(b, 1, hkv * g, d, device=dev, dtype=torch.bfloat16)
        kc = torch.randn(b, ctx, hkv, d, device=dev, dtype=torch.bfloat16)
        vc = torch.randn(b, ctx, hkv, d, device=dev, dtype=torch.bfloat16)
        s = {"q": q, "kc": kc, "vc": vc,
             "len": torch.full((b,), ctx, dtype=torch.int32, device=dev)}
        if paged:
            ps = 64
            mp = ctx // ps
            perm = torch.randperm(b * mp, device=dev)
            pt = perm.view(b, mp).to(torch.int32).contiguous()
            # the pages in table order hold the contiguous cache's rows
            kp = torch.empty(b * mp, ps, hkv, d, device=dev,
                             dtype=torch.bfloat16)
            vp = torch.empty_like(kp)
            kp[perm] = kc.reshape(b * mp, ps, hkv, d)
            vp[perm] = vc.reshape(b * mp, ps, hkv, d)
            s.update(kp=kp, vp=vp, pt=pt)
        sets.append(s)
    return sets


def methods(has_fa4):
    def fagen_fn(s, out):
        return fagen.attention_with_kvcache(
            s["q"], s["kc"], s["vc"], cache_seqlens=s["len"], out=out,
            validate=False)

    def fagen_paged(s, out):
        return fagen.attention_with_kvcache(
            s["q"], s["kp"], s["vp"], cache_seqlens=s["len"],
            page_table=s["pt"], out=out, validate=False)

    def sdpa(backend):
        def fn(s, out):
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(
                    s["q"].transpose(1, 2), s["kc"].transpose(1, 2),
                    s["vc"].transpose(1, 2), enable_gqa=True)
            return o.transpose(1, 2)
        return fn

    fns = {"fagen": fagen_fn, "fagen-p64": fagen_paged,
           "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
           "flash": sdpa(SDPBackend.FLASH_ATTENTION),
           "efficient": sdpa(SDPBackend.EFFICIENT_ATTENTION)}
    if has_fa4:
        from flash_attn.cute import flash_attn_func as fa4d
        from flash_attn.cute import flash_attn_varlen_func as fa4v

        # num_splits=1: on sm_90 FA4 refuses split-KV ("SplitKV not
        # supported on SM 9.0"), which its heuristic (0) asks for at
        # small batches
        def fa4_fn(s, out):
            r = fa4d(s["q"], s["kc"], s["vc"], num_splits=1)
            return r[0] if isinstance(r, tuple) else r

        def fa4_paged(s, out):
            r = fa4v(s["q"], s["kp"], s["vp"], seqused_k=s["len"],
                     page_table=s["pt"], num_splits=1)
            return r[0] if isinstance(r, tuple) else r
        fns["fa4"] = fa4_fn
        fns["fa4-p64"] = fa4_paged
    return fns


def fa4_available():
    try:
        import flash_attn.cute  # noqa: F401
        return True
    except Exception as e:  # noqa: BLE001 (any import failure)
        print("fa4: not importable (%s)" % str(e).splitlines()[0][:120])
        return False


def ref_err(fn, s, name):
    """Relative error against float64 on sequences 0 and B - 1."""
    out = fn(s, None) if not name.startswith("fagen") else fn(
        s, torch.full_like(s["q"], math.nan))
    torch.cuda.synchronize()
    worst = 0.0
    b, _, h, d = s["q"].shape
    for z in sorted({0, b - 1}):
        q = s["q"][z].double().transpose(0, 1)          # [h, 1, d]
        k = s["kc"][z].double().transpose(0, 1)         # [hkv, n, d]
        v = s["vc"][z].double().transpose(0, 1)
        g = h // k.shape[0]
        k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
        p = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(d), -1)
        ref = (p @ v).transpose(0, 1)
        e = ((out[z].double().nan_to_num(nan=1e9) - ref).norm() /
             ref.norm()).item()
        worst = max(worst, e)
    return worst


def capture(fn, sets, name):
    """fn's step over the sets: (a CUDA graph's replay, the eager calls),
    warmed up first."""
    outs = [torch.empty_like(s["q"]) for s in sets]
    pass_out = name.startswith("fagen")
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for s, o in zip(sets, outs):    # warm up: compile, load
            fn(s, o if pass_out else None)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for s, o in zip(sets, outs):
            fn(s, o if pass_out else None)

    def eager():
        for s, o in zip(sets, outs):
            fn(s, o if pass_out else None)
    eager.keep = (g, outs)
    return g.replay, eager


_FLUSH = []


def timed(run):
    """us of run, L2 flushed first (a 256 MB write, outside the timing,
    as triton's do_bench does), so no run finds its predecessor's data
    in L2 and none pays for another's dirty lines inside its timing."""
    if not _FLUSH:
        _FLUSH.append(torch.empty(2 ** 28, dtype=torch.uint8, device=dev))
    _FLUSH[0].zero_()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(True), torch.cuda.Event(True)
    a.record()
    run()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3


def interleaved(runs, reps):
    """{name: median us} of the runs (name -> callable), timed round-robin
    rep after rep, the first one rotating, so that drift (clocks, the
    memory's state after a copy) favours none."""
    ts = {n: [] for n in runs}
    names = list(runs)
    for r in range(reps):
        for i in range(len(names)):
            n = names[(r + i) % len(names)]
            ts[n].append(timed(runs[n]))
    return {n: statistics.median(v) for n, v in ts.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--ctxs", default="1024,8192,32768,131072")
    ap.add_argument("--groups", default="4,8")
    ap.add_argument("--hkv", type=int, default=8)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--csv", default=None)
    ap.add_argument("--methods", default=None,
                    help="a comma list (default: all)")
    a = ap.parse_args()
    if torch.cuda.get_device_capability() != (9, 0):
        print("bench_decode: needs an sm_90 GPU")
        return 77
    print("GPU: %s, torch %s" % (torch.cuda.get_device_name(),
                                 torch.__version__))
    fns = methods(fa4_available())
    if a.methods:
        fns = {k: v for k, v in fns.items() if k in a.methods.split(",")}
    rows = []
    d = 128
    for g in map(int, a.groups.split(",")):
        for b in map(int, a.batches.split(",")):
            for ctx in map(int, a.ctxs.split(",")):
                kv = b * ctx * a.hkv * d * 2 * 2
                if kv > 40e9:
                    continue
                nsets = max(1, min(32, math.ceil(256e6 / kv)))
                sets = make_sets(b, ctx, a.hkv, g, d, nsets, True)
                # the copy's bytes: the step's, at most 2 GB (its rate
                # is flat by then, and memory is short at the largest)
                cb = min(kv, 2 ** 31)
                src = torch.empty(max(cb // 2, 1), dtype=torch.bfloat16,
                                  device=dev)
                dst = torch.empty_like(src)
                graphs, eagers, errs = {"copy": lambda: dst.copy_(src)}, {}, {}
                line = ""
                for name, fn in fns.items():
                    try:
                        errs[name] = ref_err(fn, sets[0], name)
                        graphs[name], eagers[name] = capture(fn, sets, name)
                    except Exception as e:  # noqa: BLE001 (a peer's limit)
                        line += " %s n/a (%s)" % (name, str(e).splitlines()[
                            0][:60] if str(e) else type(e).__name__)
                t = interleaved(graphs, a.reps)
                te = interleaved(eagers, max(3, a.reps // 3))
                copy_bw = 2 * cb / t.pop("copy") / 1e3   # GB/s, r + w
                line = "G=%d B=%-2d ctx=%-6d  copy %4.0f GB/s |%s" % (
                    g, b, ctx, copy_bw, line)
                for name in t:
                    us = t[name] / len(sets)
                    bw = kv / us / 1e3
                    ok = errs[name] <= 1e-2
                    rows.append({"G": g, "B": b, "ctx": ctx, "method": name,
                                 "us": round(us, 2), "eager_us": round(
                                     te[name] / len(sets), 2),
                                 "GBps": round(bw), "frac": round(
                                     bw / copy_bw, 3), "err": errs[name],
                                 "ok": ok})
                    line += " %s %.1fus %.0fGB/s %.2f%s (eager %.1f)" % (
                        name, us, bw, bw / copy_bw, "" if ok else " FAIL",
                        te[name] / len(sets))
                del src, dst, graphs, eagers
                print(line, flush=True)
                del sets
                torch.cuda.empty_cache()
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 1 if any(not r["ok"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
