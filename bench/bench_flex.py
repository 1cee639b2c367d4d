#!/usr/bin/env python3
"""bench_flex.py: fagen.flex_attention against compiled FlexAttention
(issue 22's points), side by side in one process.

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench_flex.py \
        [--reps N] [--seq 16384] [--heads 16] [--dim 128] [--only NAME,...]
        [--bwd] [--torch-mask]

Points (bf16, B=1, H=16, S=16k, D=128 by default, FlexAttention's own
benchmark shape): causal, document mask (16 documents), sliding window
1k and 4k (causal), prefix-LM (first 2k tokens see each other), ALiBi
and a tanh softcap (score_mod), softcap + causal, and a random block
mask with 25% of its blocks non-empty (compared with the dense time).
fagen's block mask comes from fagen.create_block_mask (--torch-mask:
the one FlexAttention gets); FlexAttention's from torch's
create_block_mask on the same mask_mod (both 128 x 128, B 1, H None).
Before timing, each output is checked against float64 on the first 512
query rows of head 0 (fagen's output buffer is fresh; FlexAttention's
too); a method more than 4x FlexAttention's error (plus 2^-10) fails the
point.  Timing: CUDA events around back-to-back calls, warm-up excluded,
the median of --reps interleaved runs (--bwd: forward and backward, the
gradients of q, k and v).  Also prints each method's first
call for a new modifier (fagen: trace, compile, load, run; FlexAttention:
torch.compile), and the ratio fagen / FlexAttention per point.
"""
import argparse
import math
import statistics
import sys
import time

import torch

import fagen

try:
    from torch.nn.attention import flex_attention as tfa
except ImportError:  # pragma: no cover
    tfa = None


def events(fn, per):
    a = torch.cuda.Event(enable_timing=True)
    z = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(per):
        fn()
    z.record()
    z.synchronize()
    return a.elapsed_time(z) / per


def points(s):
    docs = 16
    doc = (torch.arange(s, device="cuda") * docs // s).to(torch.int32)

    def causal(b, h, q, k):
        return q >= k

    def document(b, h, q, k):
        return doc[q] == doc[k]

    def window(w):
        def m(b, h, q, k):
            return (q >= k) & (q - k < w)
        return m

    def prefix(b, h, q, k):
        return (k < 2048) | (q >= k)

    slopes = torch.exp2(-8.0 * (torch.arange(16, device="cuda") + 1) / 16)

    def alibi(score, b, h, q, k):
        return score - slopes[h] * torch.abs(q - k)

    def softcap(score, b, h, q, k):
        return 30.0 * torch.tanh(score / 30.0)

    gen = torch.Generator(device="cuda").manual_seed(7)
    nb = -(-s // 128)
    keep = torch.rand(nb, nb, generator=gen, device="cuda") < 0.25
    keep.fill_diagonal_(True)
    # a block-level mask: every listed block is whole (no mask_mod runs)
    sparse = ("blocks", keep)

    return [
        ("dense", None, None),
        ("causal", None, causal),
        ("document", None, document),
        ("window1k", None, window(1024)),
        ("window4k", None, window(4096)),
        ("prefixlm", None, prefix),
        ("alibi", alibi, None),
        ("softcap", softcap, None),
        ("softcap+causal", softcap, causal),
        ("sparse25", None, sparse),
    ]


def ref64(q, k, v, score_mod, mask_mod, rows):
    """float64 attention of head 0's first rows queries: (rows, D)."""
    s = q[0, 0, :rows].double() @ k[0, 0].double().T / math.sqrt(q.shape[-1])
    qi = torch.arange(rows, device="cuda")[:, None]
    ki = torch.arange(k.shape[2], device="cuda")[None, :]
    z = torch.zeros((), dtype=torch.int64, device="cuda")
    if score_mod is not None:
        s = score_mod(s, z, z, qi, ki).double()
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(z, z, qi, ki), -math.inf)
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v[0, 0].double()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--seq", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--only", default=None)
    ap.add_argument("--torch-mask", action="store_true",
                    help="fagen takes torch's BlockMask (the one "
                    "FlexAttention gets), not its own")
    ap.add_argument("--bwd", action="store_true",
                    help="time forward + backward (a training step's "
                    "attention) instead of the forward")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_flex.py needs a CUDA GPU", file=sys.stderr)
        return 77
    s, h, d = args.seq, args.heads, args.dim
    print("%s, torch %s, fagen %s; B=1 H=%d S=%d D=%d bf16" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version(),
        h, s, d))
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    q, k, v = (torch.randn(1, h, s, d, device="cuda", dtype=torch.bfloat16,
                           generator=gen) for _ in range(3))
    if tfa:     # one recompile per point (and per --bwd step): more
        # than dynamo's default limit of 8, past which FlexAttention falls
        # back to its unfused reference
        from torch import _dynamo
        _dynamo.config.recompile_limit = 64
    flex = torch.compile(tfa.flex_attention) if tfa else None
    only = set(args.only.split(",")) if args.only else None
    dense_ms = None
    bad = 0
    with torch.inference_mode(not args.bwd):
        for name, smod, mmod in points(s):
            if only and name not in only:
                continue
            try:
                dense_ms = point(args, name, smod, mmod, q, k, v, flex, s,
                                 h, dense_ms)
            except Exception as e:  # noqa: BLE001 -- reported, go on
                print("%-15s FAILED: %s: %s" % (name, type(e).__name__,
                                               str(e)[:300]), flush=True)
                bad += 1
    return 1 if bad else 0


def point(args, name, smod, mmod, q, k, v, flex, s, h, dense_ms):
    row = {}
    t0 = time.perf_counter()
    rmod = mmod
    if isinstance(mmod, tuple):     # whole blocks, no mask_mod
        keep = mmod[1]
        rmod = lambda b, h, qi, ki: keep[qi // 128, ki // 128]  # noqa
        cls = (mmod[1].to(torch.int8) * 2)[None, None]
        fbm = fagen.flex.BlockMask._from_classes(torch, cls,
                                                 (s, s), None)
        mmod = None
        tbm = tfa.BlockMask.from_kv_blocks(
            torch.zeros_like(fbm.kv_num_blocks),
            fbm.kv_indices, fbm.full_kv_num_blocks,
            fbm.full_kv_indices, BLOCK_SIZE=128) if tfa else None
    else:
        fbm = fagen.create_block_mask(mmod, 1, None, s, s) if mmod \
            else None
        tbm = tfa.create_block_mask(mmod, 1, None, s, s) if \
            mmod and tfa else None
    if args.torch_mask and tbm is not None:
        fbm = tbm
    fg = lambda: fagen.flex_attention(q, k, v, score_mod=smod,
                                      block_mask=fbm)
    out = fg()
    torch.cuda.synchronize()
    row["fagen_first_s"] = time.perf_counter() - t0
    fns = {"fagen": fg}
    if flex is not None:
        t0 = time.perf_counter()
        fx = lambda: flex(q, k, v, score_mod=smod, block_mask=tbm)
        outx = fx()
        torch.cuda.synchronize()
        row["flex_first_s"] = time.perf_counter() - t0
        fns["flex"] = fx
    if name == "causal":    # fagen's own causal kernel, for scale
        fns["builtin"] = lambda: fagen.attention(q, k, v, causal=True)
    r = ref64(q, k, v, smod, rmod, 512)
    err = {"fagen": (out[0, 0, :512].double() - r).abs().max().item()}
    if flex is not None:
        err["flex"] = (outx[0, 0, :512].double() -
                       r).abs().max().item()
    if args.bwd:    # a training step's attention: forward and backward
        qg, kg, vg = (t.detach().clone().requires_grad_(True)
                      for t in (q, k, v))
        do = torch.randn_like(q)

        def step(f):
            def run():
                f(qg, kg, vg).backward(do)
            return run
        fns = {"fagen": step(lambda a, b, c: fagen.flex_attention(
            a, b, c, score_mod=smod, block_mask=fbm))}
        if flex is not None:
            fns["flex"] = step(lambda a, b, c: flex(
                a, b, c, score_mod=smod, block_mask=tbm))
    times = {m: [] for m in fns}
    for fn in fns.values():
        for _ in range(3):
            fn()
    for i in range(args.reps):
        order = list(fns)
        order = order[i % len(order):] + order[:i % len(order)]
        for m in order:
            times[m].append(events(fns[m], 3))
    med = {m: statistics.median(t) for m, t in times.items()}
    if name == "dense":
        dense_ms = med["fagen"]
    line = "%-15s fagen %.3f ms (err %.1e, first call %.2f s)" % (
        name, med["fagen"], err["fagen"], row["fagen_first_s"])
    if "flex" in med:
        line += "; FlexAttention %.3f ms (err %.1e, first call " \
            "%.2f s); fagen %.2fx" % (med["flex"], err["flex"],
                                     row["flex_first_s"],
                                     med["flex"] / med["fagen"])
    if "builtin" in med:
        line += "; fagen causal=True %.3f ms" % med["builtin"]
    if name == "sparse25" and dense_ms:
        nb = fbm.kv_indices.shape[-1]
        used = (fbm.kv_num_blocks.sum() +
                fbm.full_kv_num_blocks.sum()).item()
        line += "; %.0f%% of fagen's dense time (%.0f%% of blocks)" \
            % (100 * med["fagen"] / dense_ms,
               100 * used / (h * nb * nb) if fbm.kv_num_blocks.shape[1] > 1
               else 100 * used / (nb * nb))
    print(line, flush=True)
    if err["fagen"] > 4 * err.get("flex", err["fagen"]) + 2 ** -10:
        raise RuntimeError("fagen's error %.2e is above 4x "
                           "FlexAttention's" % err["fagen"])
    return dense_ms


if __name__ == "__main__":
    sys.exit(main())
