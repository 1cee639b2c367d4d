#!/usr/bin/env python3
"""bench_pack.py: packed GQA (issue 12, pack_gqa) at decode-like shapes:
fagen with the G query heads of a K/V head packed into one tile's rows,
unpacked, and PyTorch's SDPA (cuDNN, flash or efficient, enable_gqa; not
causal: its is_causal is aligned to the top left) and FlashAttention-2
(flash_attn, when importable) on the same tensors.

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench_pack.py \
        [--reps N] [--batch B] [--heads H] [--kv-heads HK] [--dim D] \
        [--sq 1,4,16,64,128] [--sk 4096,16384] [--causal]

Each point is checked first against float64 on its first batch entry
(outputs NaN-poisoned; packed and unpacked alike), then timed with CUDA
events: the median of --reps rounds, each round every method once in
turn (interleaved), warm-up excluded.  Prints microseconds per call,
the K/V bandwidth of the packed kernel (bytes of K and V once over its
time) and the ratios packed/unpacked and packed/best peer.
"""
import argparse
import math
import statistics
import sys

import torch

import fagen

try:
    import flash_attn
except ImportError:
    flash_attn = None


def f64(q, k, v, causal):
    """float64 attention of batch entry 0: q (1, H, Sq, D), k, v
    (1, Hk, Sk, D)."""
    q, k, v = (t[:1].double() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
        s = s.masked_fill(~keep.tril(sk - sq), -math.inf)
    return torch.softmax(s, -1) @ v


def rel(x, ref):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - ref).norm() / ref.norm()).item()


def point(args, sq, sk):
    b, h, hk, d = args.batch, args.heads, args.kv_heads, args.dim
    dt = torch.bfloat16
    # (B, S, H, D) storage, as models hold it; (B, H, S, D) views
    q = torch.randn(b, sq, h, d, device="cuda", dtype=dt).transpose(1, 2)
    k = torch.randn(b, sk, hk, d, device="cuda", dtype=dt).transpose(1, 2)
    v = torch.randn(b, sk, hk, d, device="cuda", dtype=dt).transpose(1, 2)
    ref = f64(q, k, v, args.causal)
    outs = {}
    for pack in (True, False):
        out = torch.full((b, h, sq, d), math.nan, device="cuda", dtype=dt)
        fagen.attention(q, k, v, causal=args.causal, out=out, pack_gqa=pack)
        outs[pack] = out
        e = rel(out[:1], ref)
        if not e <= 1e-2:
            print("FAIL sq=%d sk=%d pack=%s: rel err %.2e" % (sq, sk, pack,
                                                              e))
            return False
    methods = {
        "packed": lambda: fagen.attention(q, k, v, causal=args.causal,
                                          out=outs[True], pack_gqa=True),
        "unpacked": lambda: fagen.attention(q, k, v, causal=args.causal,
                                            out=outs[False], pack_gqa=False),
    }
    # SDPA's is_causal is aligned to the top left (query i sees keys <=
    # i), fagen's and flash_attn's to the bottom right: causal points
    # compare with flash_attn only
    if not args.causal:
        methods["sdpa"] = lambda: \
            torch.nn.functional.scaled_dot_product_attention(
                q, k, v, enable_gqa=True)
    if flash_attn is not None:
        qs, ks, vs = (t.transpose(1, 2) for t in (q, k, v))
        methods["fa2"] = lambda: flash_attn.flash_attn_func(
            qs, ks, vs, causal=args.causal)
    ev = {m: (torch.cuda.Event(enable_timing=True),
              torch.cuda.Event(enable_timing=True)) for m in methods}
    times = {m: [] for m in methods}
    for fn in methods.values():     # warm-up (compiles, autotunes)
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    per = 20
    for _ in range(args.reps):
        for m, fn in methods.items():
            ev[m][0].record()
            for _ in range(per):
                fn()
            ev[m][1].record()
        torch.cuda.synchronize()
        for m in methods:
            times[m].append(ev[m][0].elapsed_time(ev[m][1]) * 1e3 / per)
    med = {m: statistics.median(t) for m, t in times.items()}
    kv = 2 * b * hk * sk * d * 2
    peers = [m for m in med if m not in ("packed", "unpacked")]
    best = min(peers, key=lambda m: med[m]) if peers else None
    print("%5d %6d  %s  %7.0f GB/s  %5.2f  %s" % (
        sq, sk, "  ".join("%8.1f" % med[m] for m in methods),
        kv / med["packed"] / 1e3, med["unpacked"] / med["packed"],
        "%5.2f (%s)" % (med[best] / med["packed"], best) if best else
        "  n/a"))
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--sq", default="1,4,16,64,128")
    p.add_argument("--sk", default="4096,16384")
    p.add_argument("--causal", action="store_true")
    args = p.parse_args()
    print("device: %s, torch %s, libfagen %s, flash_attn %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version(),
        getattr(flash_attn, "__version__", "none")))
    print("B=%d H=%d Hk=%d D=%d bf16 %s; microseconds per call" % (
        args.batch, args.heads, args.kv_heads, args.dim,
        "causal" if args.causal else "full"))
    names = ["packed", "unpacked"] + ([] if args.causal else ["sdpa"]) + \
        (["fa2"] if flash_attn else [])
    print("   Sq     Sk  %s  packed K/V  unp/pk  peer/pk" % "  ".join(
        "%8s" % n for n in names))
    ok = True
    with torch.no_grad():
        for sk in (int(x) for x in args.sk.split(",")):
            for sq in (int(x) for x in args.sq.split(",")):
                ok &= point(args, sq, sk)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
