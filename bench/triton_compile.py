#!/usr/bin/env python3
"""triton_compile.py: how long PyTorch's bundled Triton takes to compile an
attention forward kernel, next to bench_compile's figures for fagen.

    TRITON_CACHE_DIR=$(mktemp -d) python3 bench/triton_compile.py   # cold
    TRITON_CACHE_DIR=<the same dir> python3 bench/triton_compile.py  # warm

The kernel is a plain online-softmax FlashAttention forward written here
(one program per 128-row query block and head, 64-key blocks, exp2 with
log2(e) in the scale), not a tuned one.  For each head dim (64, 128) it
prints the first call's time (Triton's compile, or its disk-cache load,
plus one launch) minus a later call's, and checks the output against
torch's SDPA (max error).  Exits 77 without Triton or a GPU."""
import sys
import time

try:
    import torch
    import triton
    import triton.language as tl
except ImportError:
    print("needs torch and triton")
    sys.exit(77)


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale_log2,
             D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    mb = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * seq * D
    rows = mb * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * D + cols[None, :],
                mask=rows[:, None] < seq, other=0.0)
    m = tl.full([BM], -1.0e30, tl.float32)
    l = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, seq, BN):
        keys = n0 + tl.arange(0, BN)
        kt = tl.load(k_ptr + base + keys[None, :] * D + cols[:, None],
                     mask=keys[None, :] < seq, other=0.0)
        s = tl.dot(q, kt) * scale_log2
        s = tl.where(keys[None, :] < seq, s, -1.0e30)
        mnew = tl.maximum(m, tl.max(s, 1))
        p = tl.exp2(s - mnew[:, None])
        alpha = tl.exp2(m - mnew)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + keys[:, None] * D + cols[None, :],
                    mask=keys[:, None] < seq, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = mnew
    acc = acc / l[:, None]
    tl.store(o_ptr + base + rows[:, None] * D + cols[None, :],
             acc.to(o_ptr.dtype.element_ty), mask=rows[:, None] < seq)


def main():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 77
    print("%s, torch %s, triton %s" % (torch.cuda.get_device_name(),
                                       torch.__version__, triton.__version__))
    bad = 0
    for d in (64, 128):
        b, h, s = 2, 4, 1000
        q, k, v = (torch.randn(b, h, s, d, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        grid = (triton.cdiv(s, 128), b * h)
        args = (q, k, v, o, s, 1.4426950408889634 / d ** 0.5)
        times = []
        for _ in range(2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            attn_fwd[grid](*args, D=d, BM=128, BN=64, num_warps=8)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        err = (o.float() - ref.float()).abs().max().item()
        bad |= not err < 0.05
        print("D=%d: first call %.3f s, a later call %.4f s: compile or "
              "cache load %.3f s; max error vs SDPA %.4f" % (
                  d, times[0], times[1], times[0] - times[1], err))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
