"""test_python_flex_bwd.py: the gradients of fagen.flex_attention on a
Hopper GPU (issue #22, item 4).

For each case (a mask_mod alone, with fagen's block mask, a score_mod
whose derivative the compiler derives from its body: ALiBi, a tanh
softcap, a relative-position bias from a captured tensor, and both hooks
together; GQA 8/2, odd lengths, Sq != Sk), fresh random q, k, v and dO:
dq, dk, dv by fagen (forward and backward kernels with the traced mods)
and by autograd through a float64 reference that materializes the mask
and applies score_mod with torch; and the same through a float32 eager
reference run in the inputs' dtype as the yardstick: fagen's relative
error must be within 4x of it plus 2^-10 (bf16) and bitwise repeatable
in dk and dv.  One line per case; exit 1 on any failure, 77 (SKIP)
without PyTorch or a Hopper GPU.
"""
import math
import sys
import time

# test_python.py exits 77 (SKIP) without PyTorch or a Hopper GPU
from test_python import dev

import torch

import fagen

failures = []


def attend(q, k, v, score_mod, mask_mod, scale):
    """Differentiable eager attention in q's dtype's precision: float64 or
    float32."""
    if k.shape[1] != q.shape[1]:
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    bsz, h, sq, sk = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    bi = torch.arange(bsz, device=dev)[:, None, None, None]
    hi = torch.arange(h, device=dev)[None, :, None, None]
    qi = torch.arange(sq, device=dev)[None, None, :, None]
    ki = torch.arange(sk, device=dev)[None, None, None, :]
    if score_mod is not None:
        s = score_mod(s, bi, hi, qi, ki).to(s.dtype).expand(bsz, h, sq, sk)
    if mask_mod is not None:
        keep = torch.as_tensor(mask_mod(bi, hi, qi, ki), device=dev)
        s = s.masked_fill(~keep.expand(bsz, h, sq, sk), -math.inf)
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v


def grads(fn, q, k, v, do):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = fn(q, k, v)
    out.backward(do.to(out.dtype))
    return out.detach(), q.grad, k.grad, v.grad


def rel(x, r):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - r).norm() / r.norm().clamp_min(1e-30)).item()


def case(name, score_mod=None, mask_mod=None, b=1, h=4, hk=4,
         sq=333, sk=333, d=128, dtype=torch.bfloat16, mb=None, mh=None):
    gen = torch.Generator(device=dev).manual_seed(int(time.time() * 1e3)
                                                  % 2 ** 31)
    q = torch.randn(b, h, sq, d, device=dev, dtype=dtype, generator=gen)
    k = torch.randn(b, hk, sk, d, device=dev, dtype=dtype, generator=gen)
    v = torch.randn(b, hk, sk, d, device=dev, dtype=dtype, generator=gen)
    do = torch.randn(b, h, sq, d, device=dev, dtype=dtype, generator=gen)
    scale = 1 / math.sqrt(d)
    # FlexAttention's convention: a mask_mod comes in a block mask
    # (mb, mh: the mask's B and H; None: one mask for all)
    bm = fagen.create_block_mask(mask_mod, mb, mh, sq, sk) if mask_mod \
        else None

    def run(q, k, v):
        return fagen.flex_attention(q, k, v, score_mod=score_mod,
                                    block_mask=bm, enable_gqa=hk != h)
    try:
        t0 = time.perf_counter()
        got = grads(run, q, k, v, do)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        again = grads(run, q, k, v, do)
    except Exception as e:  # noqa: BLE001 -- reported as a failure
        failures.append(name)
        print("%s: %s: %s -> FAIL" % (name, type(e).__name__, e))
        return
    ref = grads(lambda q, k, v: attend(q, k, v, score_mod, mask_mod, scale),
                q.double(), k.double(), v.double(), do.double())
    yard = grads(lambda q, k, v: attend(q, k, v, score_mod, mask_mod, scale),
                 q.float(), k.float(), v.float(), do.float())
    names = ("out", "dq", "dk", "dv")
    errs = [rel(x, r) for x, r in zip(got, ref)]
    ys = [rel(x.to(dtype), r) for x, r in zip(yard, ref)]
    bad = [n for n, e, y in zip(names, errs, ys) if not e <= 4 * y + 2 ** -10]
    same = all(torch.equal(x, y) for x, y in zip(got[2:], again[2:]))
    if not same:
        bad.append("dk/dv not bitwise repeatable")
    print("%s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s: rel err fagen/yardstick "
          "%s; first call %.2f s -> %s" % (
              name, b, h, hk, sq, sk, d, str(dtype).split(".")[-1],
              ", ".join("%s %.1e/%.1e" % (n, e, y)
                        for n, e, y in zip(names, errs, ys)),
              first, "FAIL " + ", ".join(bad) if bad else "ok"))
    if bad:
        failures.append(name)


def learn_case(name, h=8, hk=8, sq=400, sk=400, d=64, qkv_grad=True,
               causal=False, dtype=torch.bfloat16):
    """A learnable relative-position bias (a captured float32 tensor that
    requires grad, read by score_mod with a gather): its gradient by
    fagen's backward (dscatter, atomic adds) against autograd through the
    float64 reference, within 4x the error of the float32 yardstick
    rounded to the inputs' dtype, plus 2^-10; q, k, v's too when they
    require grad."""
    gen = torch.Generator(device=dev).manual_seed(int(time.time() * 1e3)
                                                  % 2 ** 31)
    q, k, v, do = (torch.randn(1, hh, s, d, device=dev, dtype=dtype,
                               generator=gen)
                   for hh, s in ((h, sq), (hk, sk), (hk, sk), (h, sq)))
    span = sq + sk - 1
    relb0 = torch.randn(h, span, device=dev, generator=gen) * 0.5
    scale = 1 / math.sqrt(d)

    def mods(relb):
        def score(s, b, hh, qq, kk):
            return s + relb[hh, qq - kk + sk - 1]
        return score

    def mask(b, hh, qq, kk):
        return qq >= kk
    bm = fagen.create_block_mask(mask, 1, h, sq, sk) if causal else None

    def run(dt):
        # the bias is float32 (float64 in the reference), as parameters are
        relb = relb0.detach().clone().to(
            torch.float64 if dt == torch.float64 else torch.float32
        ).requires_grad_(True)
        ins = [t.detach().clone().to(dt) for t in (q, k, v)]
        if dt == dtype:
            for t in ins:
                t.requires_grad_(qkv_grad)
            out = fagen.flex_attention(*ins, score_mod=mods(relb),
                                       block_mask=bm, enable_gqa=hk != h)
        else:
            for t in ins:
                t.requires_grad_(True)
            out = attend(*ins, mods(relb), mask if causal else None, scale)
        out.backward(do.to(out.dtype))
        return [relb.grad] + [t.grad for t in ins]
    try:
        got = run(dtype)
    except Exception as e:  # noqa: BLE001 -- reported as a failure
        failures.append(name)
        print("%s: %s: %s -> FAIL" % (name, type(e).__name__, e))
        return
    ref = run(torch.float64)
    yard = run(torch.float32)
    names = ("dbias", "dq", "dk", "dv")
    bad, errs = [], []
    for n, x, r, y in zip(names, got, ref, yard):
        if x is None:
            if qkv_grad or n == "dbias":
                bad.append(n + " missing")
            continue
        # the yardstick rounded to the inputs' dtype, the bias's too: its
        # gradient sums dS, which the kernel computes from dtype tiles
        # (P and dP in the MMAs), as dq and dk are
        e, ye = rel(x, r), rel(y.to(dtype), r)
        errs.append("%s %.1e/%.1e" % (n, e, ye))
        if not e <= 4 * ye + 2 ** -10:
            bad.append(n)
    print("%s H=%d Hk=%d Sq=%d Sk=%d D=%d%s: rel err fagen/yardstick %s "
          "-> %s" % (name, h, hk, sq, sk, d, " causal" if causal else "",
                     ", ".join(errs), "FAIL " + ", ".join(bad) if bad
                     else "ok"))
    if bad:
        failures.append(name)


def main():
    slopes = torch.exp2(-torch.arange(1, 9, device=dev, dtype=torch.float32))
    relb = torch.randn(8, 2 * 700, device=dev) * 0.5
    doc = torch.randint(0, 4, (700,), device=dev).sort().values.to(torch.int32)

    def causal(b, h, q, k):
        return q >= k

    def window(b, h, q, k):
        return (q >= k) & (q - k < 100)

    def document(b, h, q, k):
        return doc[q] == doc[k]

    def alibi(s, b, h, q, k):
        return s - slopes[h] * torch.abs(q - k)

    def softcap(s, b, h, q, k):
        return 20.0 * torch.tanh(s / 20.0)

    def relbias(s, b, h, q, k):
        return s + relb[h, q - k + 699]

    case("mask causal", mask_mod=causal, mb=1, mh=4)
    case("mask causal, one block mask for 2 batches and 4 heads",
         mask_mod=causal, b=2)
    case("mask window", mask_mod=window, d=64,
         dtype=torch.float16)
    case("mask document, blocks, GQA", mask_mod=document, h=8,
         hk=2, sq=700, sk=700, mb=1, mh=8)
    case("score alibi", score_mod=alibi, sq=200, sk=500, h=8, hk=2, d=64)
    case("score softcap", score_mod=softcap, d=64, sq=129, sk=63)
    case("score softcap D128", score_mod=softcap, sq=333, sk=600)
    case("score relative bias + causal, blocks", score_mod=relbias,
         mask_mod=causal, h=8, hk=8, sq=400, sk=400, d=64)
    case("score alibi + document", score_mod=alibi, mask_mod=document,
         h=8, hk=4, sq=700, sk=700, d=128)
    # a learnable bias (dscatter): with q, k, v's gradients, causal with
    # a block mask and GQA, and the bias's gradient alone
    learn_case("learnable relative bias")
    learn_case("learnable relative bias, causal, GQA", h=8, hk=2, sq=333,
               sk=500, d=128, causal=True)
    learn_case("learnable relative bias alone", qkv_grad=False, sq=129,
               sk=700)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
