"""test_python_flex.py: fagen.flex_attention on a Hopper GPU (issue #22).

Each case runs fagen.flex_attention with fresh random inputs and compares
out and lse with a float64 reference that applies score_mod with torch to
the whole [B, H, Sq, Sk] score tensor and materializes mask_mod: causal,
sliding window, prefix-LM, document (captured int32 and int64 document
ids), ALiBi (captured slopes), softcap, a relative-position bias from a
captured (H, 2S - 1) tensor, a score_mod with a mask_mod, GQA 8/2,
lengths 1, 63 and 333, Sq != Sk both ways, rows that see no key, and 20
random mask_mods (compositions of comparisons of q_idx, kv_idx, h,
constants and documents with & | ~).  The outputs are poisoned (NaN
tensors of their size freed just before the call, which PyTorch's caching
allocator hands back; each line says whether it did) and two runs must be
bitwise equal.  create_block_mask is checked against a brute-force
classification of every block; torch's own BlockMask
(torch.nn.attention.flex_attention.create_block_mask, where importable),
at block sizes 128, 64 and 256, is taken as it is.  Then errors: an
unsupported operation named, Python control flow on a traced value, bad
head dims, dtypes, heads and block masks.  The first call of each new mod
prints its time (compile included).  One line per case; exit 1 on any
failure, 77 (SKIP) without PyTorch or a Hopper GPU.
"""
import math
import operator
import random
import sys
import time

# test_python.py exits 77 (SKIP) without PyTorch or a Hopper GPU
from test_python import dev

import torch

import fagen

failures = []
seen_texts = set()


def ref(q, k, v, score_mod, mask_mod, scale):
    """float64 out and lse: score_mod on the whole score tensor, mask_mod
    materialized; a row that sees no key gets 0 and -inf."""
    q, k, v = q.double(), k.double(), v.double()
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
        s = score_mod(s, bi, hi, qi, ki).double().expand(bsz, h, sq, sk)
    if mask_mod is not None:
        keep = torch.as_tensor(mask_mod(bi, hi, qi, ki), device=dev)
        s = s.masked_fill(~keep.expand(bsz, h, sq, sk), -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def rel(x, r):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - r).norm() / r.norm().clamp_min(1e-30)).item()


def poisoned_call(shape, dtype, fn):
    """fn() after NaN tensors of out's and lse's sizes were freed (the
    caching allocator returns such a block to the next request of its
    size): its result, and whether out landed on the poison."""
    po = torch.full(shape, math.nan, dtype=dtype, device=dev)
    pl = torch.full(shape[:3], math.nan, dtype=torch.float32, device=dev)
    ptr = po.data_ptr()
    del po, pl
    r = fn()
    return r, r[0].data_ptr() == ptr


def run_case(name, b, hq, hkv, sq, sk, d, dtype, score_mod=None,
             mask_mod=None, block_mask="make", tol=None, lse_tol=1e-3):
    q = torch.randn(b, hq, sq, d, device=dev, dtype=dtype)
    k = torch.randn(b, hkv, sk, d, device=dev, dtype=dtype)
    v = torch.randn(b, hkv, sk, d, device=dev, dtype=dtype)
    if block_mask == "make":
        block_mask = None if mask_mod is None else fagen.create_block_mask(
            mask_mod, b, hq, sq, sk, device=dev)
    elif block_mask is not None:
        mask_mod = block_mask.mask_mod
    scale = 1 / math.sqrt(d)
    text = fagen._flextrace.make_plan(
        score_mod, None if block_mask is None else mask_mod).text

    def call():
        return fagen.flex_attention(q, k, v, score_mod=score_mod,
                                    block_mask=block_mask,
                                    enable_gqa=hkv != hq, return_lse=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    (out, lse), poisoned = poisoned_call((b, hq, sq, d), dtype, call)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    (out2, lse2), _ = poisoned_call((b, hq, sq, d), dtype, call)
    torch.cuda.synchronize()
    same = torch.equal(out.view(torch.int16), out2.view(torch.int16)) and \
        torch.equal(lse.view(torch.int32), lse2.view(torch.int32))
    r_out, r_lse = ref(q, k, v, score_mod, mask_mod, scale)
    seen = r_lse > -math.inf
    tol = tol or (1e-2 if dtype == torch.bfloat16 else 3e-3)
    e_out = rel(out, r_out)
    e_lse = (lse.double() - r_lse)[seen].abs().max().item() \
        if seen.any() else 0.0
    empty = bool((lse[~seen] == -math.inf).all()) and \
        bool((out.transpose(1, 2)[~seen.transpose(1, 2)] == 0).all())
    ok = same and empty and e_out <= tol and e_lse <= lse_tol
    new = text not in seen_texts
    seen_texts.add(text)
    label = "%s B=%d H=%d/%d Sq=%d Sk=%d D=%d %s" % (
        name, b, hq, hkv, sq, sk, d, str(dtype)[6:])
    print("%s: rel err %.2e, lse err %.1e; repeat %s; poisoned %s%s -> %s"
          % (label, e_out, e_lse, "bitwise" if same else "DIFFERS",
             "yes" if poisoned else "no",
             "; first call (new mod, compile included) %.0f ms"
             % (first * 1e3) if new else "", "ok" if ok else "FAIL"))
    if not ok:
        failures.append(label)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 100)


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < 200) | (q_idx >= kv_idx)


def documents(b, s, int64=False):
    """Document ids [b, s]: random boundaries, ascending ids."""
    ids = torch.zeros(b, s, dtype=torch.int64, device=dev)
    for i in range(b):
        cuts = sorted(random.sample(range(1, s), min(5, s - 1)))
        for c in cuts:
            ids[i, c:] += 1
    return ids if int64 else ids.to(torch.int32)


def document_mask(doc):
    def mask_mod(b, h, q_idx, kv_idx):
        return (doc[b, q_idx] == doc[b, kv_idx]) & (q_idx >= kv_idx)
    return mask_mod


def alibi_mod(h_count):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / h_count)
                           for i in range(h_count)], device=dev)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * torch.abs(q_idx - kv_idx)
    return score_mod


def softcap(score, b, h, q_idx, kv_idx):
    return 30.0 * torch.tanh(score / 30.0)


def relpos_mod(h_count, s, dtype=torch.float32):
    bias = (torch.randn(h_count, 2 * s - 1, device=dev) * 0.5).to(dtype)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + bias[h, q_idx - kv_idx + s - 1]
    return score_mod


def named_cases():
    bf, hf = torch.bfloat16, torch.float16
    run_case("dense", 2, 4, 4, 512, 512, 128, bf)
    run_case("causal", 2, 4, 4, 512, 512, 128, bf, mask_mod=causal)
    run_case("causal", 1, 2, 2, 333, 333, 64, hf, mask_mod=causal)
    run_case("sliding window 100", 2, 2, 2, 1000, 1000, 128, bf,
             mask_mod=sliding)
    run_case("prefix-LM 200", 2, 2, 2, 777, 777, 64, hf,
             mask_mod=prefix_lm)
    for int64 in (False, True):
        run_case("document%s" % (" int64" if int64 else ""), 2, 2, 2, 1000,
                 1000, 128, bf,
                 mask_mod=document_mask(documents(2, 1000, int64)))
    run_case("alibi", 2, 4, 4, 600, 600, 128, bf, score_mod=alibi_mod(4))
    run_case("alibi causal", 1, 8, 8, 333, 333, 64, hf,
             score_mod=alibi_mod(8), mask_mod=causal)
    run_case("softcap 30 causal", 2, 2, 2, 512, 512, 128, bf,
             score_mod=softcap, mask_mod=causal, lse_tol=3e-3)
    for dt in (torch.float32, torch.bfloat16):
        run_case("relative-position bias %s" % str(dt)[6:], 2, 4, 4, 500,
                 500, 128, bf, score_mod=relpos_mod(4, 500, dt))
    run_case("alibi + document", 2, 4, 4, 900, 900, 128, bf,
             score_mod=alibi_mod(4),
             mask_mod=document_mask(documents(2, 900)))
    run_case("GQA 8/2 causal", 2, 8, 2, 700, 700, 128, bf,
             mask_mod=causal)
    run_case("GQA 8/2 softcap", 1, 8, 2, 300, 300, 64, hf,
             score_mod=softcap, lse_tol=3e-3)
    for s in (1, 63, 333):
        run_case("causal odd", 1, 2, 2, s, s, 128, bf, mask_mod=causal)
    run_case("Sq < Sk causal", 1, 2, 2, 333, 1000, 128, bf,
             mask_mod=causal)
    run_case("Sq > Sk sliding", 1, 2, 2, 1000, 333, 64, bf,
             mask_mod=sliding)
    run_case("rows with no key", 1, 2, 2, 300, 500, 128, bf,
             mask_mod=lambda b, h, q, k: (q < 200) & (k >= q + 100))


OPS = [(operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"),
       (operator.ge, ">="), (operator.eq, "=="), (operator.ne, "!=")]


def random_mask(rng, doc, depth=3):
    """A random mask_mod and its description."""
    if depth == 0 or rng.random() < 0.3:
        op, sym = rng.choice(OPS)
        c = rng.randrange(-300, 300)
        kind = rng.randrange(5)
        if kind == 0:
            return (lambda b, h, q, k: op(q, k + c)), "q %s k + %d" % (sym, c)
        if kind == 1:
            c = abs(c) + 1
            return (lambda b, h, q, k: op(q, c)), "q %s %d" % (sym, c)
        if kind == 2:
            return (lambda b, h, q, k: op(q - k, c)), "q - k %s %d" % (sym, c)
        if kind == 3:
            return (lambda b, h, q, k: op(h, c % 3)), "h %s %d" % (sym, c % 3)
        return (lambda b, h, q, k: doc[b, q] == doc[b, k]), "same doc"
    kind = rng.randrange(3)
    a, da = random_mask(rng, doc, depth - 1)
    if kind == 2:
        return (lambda *x: ~a(*x)), "~(%s)" % da
    c, dc = random_mask(rng, doc, depth - 1)
    if kind == 0:
        return (lambda *x: a(*x) & c(*x)), "(%s) & (%s)" % (da, dc)
    return (lambda *x: a(*x) | c(*x)), "(%s) | (%s)" % (da, dc)


def brute_classes(mask_mod, b, h, sq, sk):
    bi = torch.arange(b, device=dev)[:, None, None, None]
    hi = torch.arange(h, device=dev)[None, :, None, None]
    m = torch.as_tensor(mask_mod(bi, hi,
                                 torch.arange(sq, device=dev)[:, None],
                                 torch.arange(sk, device=dev)[None, :]),
                        device=dev).expand(b, h, sq, sk)
    nq, nk = -(-sq // 128), -(-sk // 128)
    cls = torch.zeros(b, h, nq, nk, dtype=torch.int8, device=dev)
    for i in range(nq):
        for j in range(nk):
            blk = m[:, :, i * 128:(i + 1) * 128,
                    j * 128:(j + 1) * 128].flatten(2)
            full = blk.all(-1) & ((j + 1) * 128 <= sk)
            cls[:, :, i, j] = torch.where(full, 2, blk.any(-1).to(torch.int8))
    return cls


def random_cases():
    rng = random.Random(22)
    for i in range(20):
        sq = rng.choice([1, 63, 128, 333, 700, 1000])
        sk = sq if rng.random() < 0.6 else rng.choice([63, 333, 1000])
        doc = documents(2, max(sq, sk))
        mask_mod, desc = random_mask(rng, doc)
        bm = fagen.create_block_mask(mask_mod, 2, 2, sq, sk, device=dev)
        cls = fagen.flex._to_classes(torch, bm.kv_num_blocks, bm.kv_indices,
                                     bm.full_kv_num_blocks,
                                     bm.full_kv_indices)
        want = brute_classes(mask_mod, 2, 2, sq, sk)
        ok = torch.equal(cls, want)
        print("random %d block classes (%s): %s" % (i, desc,
                                                   "ok" if ok else "FAIL"))
        if not ok:
            failures.append("random %d block classes" % i)
        run_case("random %d" % i, 2, 2, 2, sq, sk, rng.choice([64, 128]),
                 torch.bfloat16, mask_mod=mask_mod, block_mask=bm)


def torch_block_masks():
    try:
        from torch.nn.attention.flex_attention import \
            create_block_mask as torch_cbm
    except ImportError:
        print("torch's create_block_mask is not importable: skipped")
        return
    doc = documents(1, 700)
    for bs in (128, 64, 256):
        for name, mod in (("causal", causal),
                          ("document", document_mask(doc))):
            bm = torch_cbm(mod, 1, 2, 700, 700, device=dev, BLOCK_SIZE=bs)
            run_case("torch BlockMask %s BLOCK_SIZE=%d" % (name, bs), 1, 2,
                     2, 700, 700, 128, torch.bfloat16, block_mask=bm)
    bm = torch_cbm(causal, None, None, 333, 333, device=dev)
    run_case("torch BlockMask broadcast B, H", 2, 4, 4, 333, 333, 64,
             torch.float16, block_mask=bm)
    # keys in whole 128-blocks: torch's tables go to the kernel as they
    # are, B or H of 1 read for every batch or head
    doc = documents(2, 768)
    for mb, mh in ((None, None), (2, None), (None, 4), (2, 4)):
        bm = torch_cbm(document_mask(doc) if mb else causal, mb, mh, 640,
                       768, device=dev)
        for inference in (False, True):
            with torch.inference_mode(inference):
                run_case("torch BlockMask B=%s H=%s, tables as they are%s"
                         % (mb, mh, ", inference" if inference else ""),
                         2, 4, 2, 640, 768, 128, torch.bfloat16,
                         block_mask=bm)


def expect(name, exc, fn, want):
    try:
        fn()
    except exc as e:
        ok = want in str(e)
        print("error %s: %s -> %s" % (name, str(e)[:100],
                                       "ok" if ok else "FAIL"))
        if not ok:
            failures.append("error " + name)
        return
    print("error %s: no %s -> FAIL" % (name, exc.__name__))
    failures.append("error " + name)


def errors():
    x = torch.randn(1, 2, 64, 128, device=dev, dtype=torch.bfloat16)
    fa = fagen.flex_attention
    expect("torch.sin", NotImplementedError,
           lambda: fa(x, x, x, score_mod=lambda s, b, h, q, k: torch.sin(s)),
           "score_mod uses torch.sin, which fagen cannot compile; "
           "supported:")
    expect("if on a traced value", NotImplementedError,
           lambda: fa(x, x, x, score_mod=lambda s, b, h, q, k:
                      s if q > k else -s), "choose with torch.where")
    bm = fagen.create_block_mask(causal, 1, 2, 64, 64, device=dev)
    expect("mask with //", NotImplementedError, lambda: fa(
        x, x, x, block_mask=fagen.create_block_mask(
            lambda b, h, q, k: q // 2 >= k, 1, 2, 64, 64, device=dev)),
        "mask_mod uses // (floor division)")
    expect("head dim 96", ValueError, lambda: fa(x[..., :96], x[..., :96],
                                                 x[..., :96]),
           "supports 64 and 128")
    expect("float32", ValueError, lambda: fa(x.float(), x.float(),
                                             x.float()),
           "takes torch.bfloat16 or torch.float16")
    kv = torch.randn(1, 1, 64, 128, device=dev, dtype=torch.bfloat16)
    expect("heads without enable_gqa", ValueError, lambda: fa(x, kv, kv),
           "Try setting enable_gqa=True for GQA")
    x3 = torch.randn(1, 3, 64, 128, device=dev, dtype=torch.bfloat16)
    kv2 = torch.randn(1, 2, 64, 128, device=dev, dtype=torch.bfloat16)
    expect("GQA 3/2", ValueError, lambda: fa(x3, kv2, kv2, enable_gqa=True),
           "multiple of kv heads")
    expect("block mask length", ValueError, lambda: fa(
        x, x, x, block_mask=fagen.create_block_mask(causal, 1, 2, 65, 64,
                                                    device=dev)),
           "block_mask is for (Q_LEN, KV_LEN) = (65, 64)")
    expect("block mask heads", ValueError, lambda: fa(
        x, x, x, block_mask=fagen.create_block_mask(causal, 1, 3, 64, 64,
                                                    device=dev)),
           "block_mask has B=1, H=3")
    expect("not a block mask", TypeError,
           lambda: fa(x, x, x, block_mask=bm.kv_indices),
           "block_mask must be a fagen.BlockMask or torch's BlockMask")
    cpu_bias = torch.zeros(2, 64)
    expect("captured tensor on the CPU", ValueError, lambda: fa(
        x, x, x, score_mod=lambda s, b, h, q, k: s + cpu_bias[h, k]),
        "captured tensor on cpu")
    expect("create_block_mask BLOCK_SIZE", ValueError,
           lambda: fagen.create_block_mask(causal, 1, 1, 64, 64,
                                           device=dev, BLOCK_SIZE=64),
           "fagen's kernels take 128 x 128 blocks")


def main():
    if "_flex_launch" not in fagen.__dict__:
        print("fagen._flex_launch is missing: this build has no launcher "
              "for flex_attention")
        return 1
    random.seed(22)
    torch.manual_seed(22)
    named_cases()
    random_cases()
    torch_block_masks()
    errors()
    if failures:
        print("%d FAILED: %s" % (len(failures), "; ".join(failures)))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
