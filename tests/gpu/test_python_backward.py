"""test_python_backward.py: fagen.attention's backward on a Hopper GPU.

Issue #13: dq, dk, dv from fagen.attention's autograd (libfagen's
fg_attention_backward) against float64 autograd of softmax(q k^T * scale
+ mask) v, within 2x the error of PyTorch's own backward in the same
dtype (scaled_dot_product_attention, enable_gqa where needed) plus a
small floor; both errors are printed.  Problems: bf16 and f16, D 64, 96,
128, 192 and 256, causal and not, Sq != Sk both ways (rows that see no
key get dq = 0), grouped-query (8 over 2 heads) and multi-query attention, the
(B, H, S, D), (B, S, H, D) and packed QKV layouts, a given scale,
sliding windows, softcaps and ALiBi (against the same math run by
PyTorch in the dtype, as SDPA has none of them), variable-length batches
(attention_varlen, each sequence against its own references).  Then:
two backward passes on the same inputs give bitwise equal dk and dv (dq
is summed with atomics); with deterministic=True three passes give
bitwise equal dq, dk and dv too, within the usual tolerance of float64,
and fagen.ops.attention the same bits; torch.compile(fullgraph=True) of
linear -> fagen.ops.attention -> sum gives the eager path's gradients,
and both custom ops pass torch.library.opcheck; autocast casts float32
inputs;
gpt-oss's sinks with their own gradient; head dim 192 with V's 128;
the variants without a backward (ALiBi slopes that require grad) run
their
forward and
raise NotImplementedError in the backward.  Helpers come from
test_python.py, which exits 77 (SKIP) without PyTorch or a Hopper GPU.
"""
import math
import sys

from test_python import dev, keep_mask, make, rel, sdpa, slopes

import torch

import fagen
import fagen.ops

failures = []


def f64_grads(q, k, v, dout, causal, scale, window=None, softcap=None,
              dtype=torch.float64, alibi=None):
    """dq, dk, dv of softmax(q k^T * scale + mask) v by float64 autograd
    (bottom-right causal and window, a softcap cap * tanh(s / cap), GQA by
    repeating K/V heads); a row that sees no key has out = 0 and adds
    nothing.  dtype: the same math in another dtype (PyTorch's own
    backward of it, for the tolerance of variants SDPA lacks)."""
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ ke.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if alibi is not None:   # -alibi[h] * |i + sk - sq - j|
        sq, sk = q.shape[2], k.shape[2]
        i = torch.arange(sq, device=q.device)[:, None] + sk - sq
        j = torch.arange(sk, device=q.device)[None, :]
        s = s - alibi.to(dtype)[:, None, None] * (i - j).abs().to(dtype)
    keep = keep_mask(q.shape[2], k.shape[2], causal, window, q.device)
    seen = torch.ones(q.shape[2], 1, dtype=torch.bool, device=dev)
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
        seen = keep.any(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(~seen, 0.0), -1) * seen
    (p @ ve).backward(dout.to(dtype))
    return q.grad, k.grad, v.grad


def sdpa_grads(q, k, v, dout, causal, scale):
    """PyTorch's own backward in q's dtype: SDPA's dq, dk, dv; with causal
    and Sq > Sk the first Sq - Sk rows, which see no key, are left out
    (their dq is 0), as SDPA gives such rows NaN."""
    skip = max(q.shape[2] - k.shape[2], 0) if causal else 0
    qs, ks, vs = (t.detach().clone().requires_grad_()
                  for t in (q[:, :, skip:], k, v))
    sdpa(qs, ks, vs, causal, scale).backward(dout[:, :, skip:])
    dq = torch.zeros_like(q)
    dq[:, :, skip:] = qs.grad
    return dq, ks.grad, vs.grad


def bwd_check(layout, b, h, sq, sk, d, dtype, causal, hk=None, scale=None,
              window=None, softcap=None, alibi=None, dv=None):
    """fagen.attention's backward (issue #13): dq, dk, dv against float64
    autograd, within 2x the error of SDPA's backward in the same dtype
    (with a window or softcap, which SDPA lacks: of the same math run by
    PyTorch in that dtype) plus a floor; dout in q's layout; rows that see
    no key get dq = 0.  dv: V's head dim (its first dv columns of a
    tensor made with d, so its rows are strided)."""
    q, k, v = make(layout, b, h, sq, sk, d, dtype, hk)
    if dv is not None:
        v = v[..., :dv]
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    sc = scale if scale is not None else 1 / math.sqrt(d)
    dout = torch.randn_like(q[..., :v.shape[-1]])
    out, _ = fagen.attention(q, k, v, causal=causal, scale=scale,
                             window=window, softcap=softcap,
                             alibi_slopes=alibi)
    out.backward(dout)
    got = (q.grad, k.grad, v.grad)
    ref = f64_grads(q, k, v, dout, causal, sc, window, softcap, alibi=alibi)
    if window is None and softcap is None and alibi is None and dv is None:
        sd = sdpa_grads(q, k, v, dout, causal, sc)
    else:
        sd = f64_grads(q, k, v, dout, causal, sc, window, softcap, dtype,
                       alibi)
    floor = 1e-3 if dtype == torch.bfloat16 else 2e-4
    errs = [(rel(g, r), rel(s, r)) for g, s, r in zip(got, sd, ref)]
    ok = all(e <= 2 * s + floor for e, s in errs) and all(
        g.shape == t.shape and g.dtype == dtype
        for g, t in zip(got, (q, k, v)))
    if causal and sq > sk:
        ok = ok and bool((q.grad[:, :, :sq - sk] == 0).all())
    name = "backward %s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s%s" % (
        layout, b, h, hk or h, sq, sk, d, str(dtype)[6:],
        "causal" if causal else "full",
        ("" if scale is None else " scale=%g" % scale) +
        ("" if window is None else " window=%s" % (window,)) +
        ("" if softcap is None else " softcap=%g" % softcap) +
        ("" if alibi is None else " alibi") +
        ("" if dv is None else " Dv=%d" % dv))
    print("%s: rel err fagen/sdpa dq %.2e/%.2e, dk %.2e/%.2e, dv %.2e/%.2e "
          "-> %s" % ((name,) + sum(errs, ()) + ("ok" if ok else "FAIL",)))
    if not ok:
        failures.append(name)


def bwd_repeat_check():
    """Backward twice on the same inputs: dk, dv bitwise equal; dq (f32
    atomic adds) may differ in the last bits only."""
    q, k, v = make("bhsd", 1, 8, 1000, 1000, 128, torch.bfloat16, 2)
    dout = torch.randn_like(q)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    runs = []
    for _ in range(2):
        out, _ = fagen.attention(q, k, v, causal=True)
        runs.append(torch.autograd.grad(out, (q, k, v), dout))
    (q1, k1, v1), (q2, k2, v2) = runs
    same = all(torch.equal(a.view(torch.int16), b.view(torch.int16))
               for a, b in ((k1, k2), (v1, v2)))
    e_dq = rel(q2, q1.double())
    ok = same and e_dq < 1e-2
    print("backward repeated, GQA 8/2 heads, S=1000, D=128 causal: dk, dv "
          "%s; dq rel diff %.1e -> %s" % ("bitwise" if same else "DIFFER",
                                          e_dq, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("backward repeat")


def bwd_deterministic_check(layout, b, h, sq, sk, d, dtype, causal,
                            hk=None):
    """fagen.attention(..., deterministic=True) (issue #13): three backward
    passes on the same inputs give bitwise equal q.grad, k.grad and
    v.grad, the first within bwd_check's tolerance of float64 autograd
    (2x SDPA's error in the dtype plus a floor); fagen.ops.attention with
    deterministic=True gives the same bits."""
    q, k, v = (t.detach().requires_grad_() for t in
               make(layout, b, h, sq, sk, d, dtype, hk))
    dout = torch.randn_like(q)
    runs = []
    for use_ops in (False, False, False, True):
        for t in (q, k, v):
            t.grad = None
        # freed NaN blocks of the gradients' sizes: the caching allocator
        # most likely hands them to the backward's new dq, dk, dv, so a
        # row it failed to write shows as NaN, not as the last pass's
        poison = [torch.full_like(t, math.nan) for t in (q, k, v)]
        del poison
        fn = fagen.ops.attention if use_ops else fagen.attention
        out, _ = fn(q, k, v, causal=causal, deterministic=True)
        out.backward(dout)
        runs.append([t.grad.clone() for t in (q, k, v)])

    def bits(x):
        return x.view(torch.int16)
    same = all(torch.equal(bits(a), bits(r_)) for r in runs[1:3]
               for a, r_ in zip(runs[0], r))
    ops_same = all(torch.equal(bits(a), bits(r_))
                   for a, r_ in zip(runs[0], runs[3]))
    sc = 1 / math.sqrt(d)
    ref = f64_grads(q, k, v, dout, causal, sc)
    sd = sdpa_grads(q, k, v, dout, causal, sc)
    floor = 1e-3 if dtype == torch.bfloat16 else 2e-4
    errs = [(rel(g, r), rel(s_, r)) for g, s_, r in zip(runs[0], sd, ref)]
    ok = same and ops_same and all(e <= 2 * s_ + floor for e, s_ in errs)
    name = "backward deterministic %s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d " \
        "%s %s" % (layout, b, h, hk or h, sq, sk, d, str(dtype)[6:],
                   "causal" if causal else "full")
    print("%s: 3 passes %s, fagen.ops %s; rel err fagen/sdpa dq %.2e/%.2e, "
          "dk %.2e/%.2e, dv %.2e/%.2e -> %s" % (
              (name, "bitwise equal" if same else "DIFFER",
               "the same bits" if ops_same else "DIFFERENT bits") +
              sum(errs, ()) + ("ok" if ok else "FAIL",)))
    if not ok:
        failures.append(name)


class AttnModule(torch.nn.Module):
    """linear -> attention -> sum; attention by fagen.ops (compiled) or
    fagen.attention (eager)."""

    def __init__(self, dm, nh, use_ops):
        super().__init__()
        self.nh, self.use_ops = nh, use_ops
        self.lin = torch.nn.Linear(dm, 3 * dm)

    def forward(self, x):
        b, s, dm = x.shape
        qkv = self.lin(x).view(b, s, 3, self.nh, dm // self.nh)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # strided
        fn = fagen.ops.attention if self.use_ops else fagen.attention
        return fn(q, k, v, causal=True)[0].float().sum()


def bwd_compile_check():
    """torch.compile(fullgraph=True) of AttnModule with fagen.ops:
    loss.backward() gives the eager fagen.attention path's gradients; both
    custom ops pass torch.library.opcheck (with gradients)."""
    torch.manual_seed(4)
    m = AttnModule(512, 4, False).to(dev, torch.bfloat16)
    x = torch.randn(2, 333, 512, device=dev, dtype=torch.bfloat16,
                    requires_grad=True)
    grads = []
    for use_ops in (False, True, True):   # eager; compiled: trace, run
        m.use_ops = use_ops
        fn = torch.compile(m, fullgraph=True) if use_ops else m
        m.zero_grad()
        x.grad = None
        fn(x).backward()
        grads.append([p.grad.clone() for p in m.parameters()] + [x.grad])
    errs = [max(rel(g, w.double()) for g, w in zip(got, grads[0]))
            for got in grads[1:]]
    q, k, v = (t.requires_grad_() for t in make(
        "bhsd", 1, 8, 200, 300, 64, torch.float16, 2))
    try:
        torch.library.opcheck(torch.ops.fagen.attention.default,
                              (q, k, v, True, None, False, -1, -1, 0.0,
                               None))
        with torch.no_grad():
            out, lse = fagen.attention(q, k, v, causal=True)
        torch.library.opcheck(torch.ops.fagen.attention_backward.default,
                              (torch.randn_like(out), q.detach(), k.detach(),
                               v.detach(), out, lse, True, None, False, -1,
                               -1, 0.0))
        opc = "ok"
    except Exception as e:
        opc = "FAIL: %s" % str(e).splitlines()[0]
    ok = max(errs) < 1e-2 and opc == "ok"
    print("torch.compile(fullgraph=True) linear -> fagen.ops.attention -> "
          "sum, backward: grads rel err vs eager %.1e, %.1e; opcheck %s -> "
          "%s" % (errs[0], errs[1], opc, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("backward compile")


def bwd_autocast_check():
    """Under bf16 autocast, fagen.ops.attention takes float32 q, k, v (as
    a model's rotary embedding hands them over) and their gradients come
    back float32, matching SDPA's under the same autocast."""
    torch.manual_seed(6)
    q, k, v = (torch.randn(1, h, 300, 64, device=dev, requires_grad=True)
               for h in (8, 2, 2))
    dout = torch.randn(1, 8, 300, 64, device=dev)
    got = []
    for use_fagen in (True, False):
        for t in (q, k, v):
            t.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            if use_fagen:
                o = fagen.ops.attention(q, k, v, causal=True)[0]
            else:
                o = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=True)
        o.float().backward(dout)
        got.append((o.dtype, [t.grad.clone() for t in (q, k, v)]))
    errs = [rel(a, b.double()) for a, b in zip(got[0][1], got[1][1])]
    ok = (got[0][0] == torch.bfloat16 and all(g.dtype == torch.float32
          for g in got[0][1]) and max(errs) < 2e-2)
    print("autocast bf16, float32 q/k/v (GQA 8/2, causal): out %s, grads "
          "%s, rel diff vs SDPA %.1e -> %s" % (got[0][0], got[0][1][0].dtype,
                                               max(errs), "ok" if ok else
                                               "FAIL"))
    if not ok:
        failures.append("backward autocast")


def bwd_varlen_check(lq, lk, d, dtype, causal, h=8, hk=2):
    """fagen.attention_varlen's backward: each sequence's dq, dk, dv
    against float64 autograd of that sequence alone, the relative error
    over the batch within 2x SDPA's (run per sequence) plus a floor; rows
    outside every sequence get 0."""
    cq = torch.tensor([0] + list(lq), device=dev).cumsum(0).to(torch.int32)
    ck = torch.tensor([0] + list(lk), device=dev).cumsum(0).to(torch.int32)
    tq, tk = int(cq[-1]) + 5, int(ck[-1]) + 3      # tails outside
    q = torch.randn(tq, h, d, device=dev, dtype=dtype).requires_grad_()
    k, v = (torch.randn(tk, hk, d, device=dev, dtype=dtype).requires_grad_()
            for _ in range(2))
    dout = torch.randn(tq, h, d, device=dev, dtype=dtype)
    out, _ = fagen.attention_varlen(q, k, v, cq, ck, max(lq), max(lk),
                                    causal=causal)
    out.backward(dout)
    sc = 1 / math.sqrt(d)
    gots, refs, sds = [[], [], []], [[], [], []], [[], [], []]
    for b in range(len(lq)):
        if lq[b] == 0 or lk[b] == 0:
            continue
        sl_q, sl_k = slice(int(cq[b]), int(cq[b + 1])), \
            slice(int(ck[b]), int(ck[b + 1]))
        qb, kb, vb, gb = (t[sl].transpose(0, 1).unsqueeze(0).detach()
                          for t, sl in ((q, sl_q), (k, sl_k), (v, sl_k),
                                        (dout, sl_q)))
        ref = f64_grads(qb, kb, vb, gb, causal, sc)
        sd = sdpa_grads(qb, kb, vb, gb, causal, sc)
        got = (q.grad[sl_q], k.grad[sl_k], v.grad[sl_k])
        got = tuple(t.transpose(0, 1).unsqueeze(0) for t in got)
        for i in range(3):
            gots[i].append(got[i].flatten())
            refs[i].append(ref[i].flatten())
            sds[i].append(sd[i].flatten())
    # over the whole batch: a sequence with one key has dq = dk = 0
    # exactly, which no 16-bit backward reproduces to a relative error
    floor = 1e-3 if dtype == torch.bfloat16 else 2e-4
    e = [rel(torch.cat(gots[i]), torch.cat(refs[i])) for i in range(3)]
    se = [rel(torch.cat(sds[i]), torch.cat(refs[i])) for i in range(3)]
    tails = all(bool((t.grad[n:] == 0).all()) for t, n in
                ((q, int(cq[-1])), (k, int(ck[-1])), (v, int(ck[-1]))))
    ok = all(a <= 2 * b_ + floor for a, b_ in zip(e, se)) and tails
    name = "backward varlen %d sequences H=%d Hk=%d D=%d %s %s" % (
        len(lq), h, hk, d, str(dtype)[6:], "causal" if causal else "full")
    print("%s: rel err fagen/sdpa dq %.2e/%.2e, dk %.2e/%.2e, dv "
          "%.2e/%.2e; tails %s -> %s" % ((name, e[0], se[0], e[1], se[1],
                                          e[2], se[2], "0" if tails else
                                          "NOT 0", "ok" if ok else "FAIL")))
    if not ok:
        failures.append(name)


def bwd_unsupported_check():
    """A variant without a backward: the forward runs (as without
    gradients), the backward raises NotImplementedError naming it."""
    h = 4
    for kw, d, word in ((dict(alibi_slopes=slopes(4).requires_grad_()), 64,
                         "the ALiBi slopes themselves"),):
        q, k, v = make("bhsd", 1, h, 200, 200, d, torch.bfloat16)
        with torch.no_grad():
            want, _ = fagen.attention(q, k, v, **kw)
        q.requires_grad_()
        out, _ = fagen.attention(q, k, v, **kw)
        fwd_ok = out.requires_grad and torch.equal(out, want)
        try:
            out.sum().backward()
            got = "no error"
        except NotImplementedError as e:
            got = str(e)
        ok = fwd_ok and word in got
        print("backward with %s: forward %s; backward: %s -> %s" % (
            word, "ok" if fwd_ok else "WRONG", got, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("backward unsupported " + word)


def sinks_check(b, h, hk, sq, sk, d, causal, dtype):
    """gpt-oss's sinks: dq, dk, dv and the sinks' gradient against float64
    autograd (the sink a logit with no value row in each row's softmax),
    within 4x of float32's rounded to the inputs' dtype, plus 2^-10."""
    scale = 1 / math.sqrt(d)
    q = torch.randn(b, h, sq, d, device=dev, dtype=dtype)
    k = torch.randn(b, hk, sk, d, device=dev, dtype=dtype)
    v = torch.randn(b, hk, sk, d, device=dev, dtype=dtype)
    g = torch.randn(b, h, sq, d, device=dev, dtype=dtype)
    sinks = torch.randn(h, device=dev) * 2

    def ref(q, k, v, sinks):
        kk = k.repeat_interleave(h // hk, 1)
        vv = v.repeat_interleave(h // hk, 1)
        s = (q @ kk.transpose(-1, -2)) * scale
        if causal:
            keep = torch.ones(sq, sk, dtype=torch.bool, device=dev).tril(
                sk - sq)
            s = s.masked_fill(~keep, -math.inf)
        col = sinks.to(s.dtype)[None, :, None, None].expand(b, h, sq, 1)
        lse = torch.logsumexp(torch.cat([s, col], -1), -1, keepdim=True)
        return torch.exp(s - lse) @ vv

    def grads(fn, dt):
        ins = [(t.detach() if dt is None else t.detach().to(dt))
               .requires_grad_(True) for t in (q, k, v, sinks)]
        out = fn(*ins)
        out.backward(g.to(out.dtype))
        return [t.grad.double() for t in ins]
    got = grads(lambda q, k, v, s: fagen.attention(
        q, k, v, causal=causal, sinks=s.float())[0], None)
    want = grads(ref, torch.float64)
    yard = grads(ref, torch.float32)
    rel = [((x - w).norm() / w.norm()).item() for x, w in zip(got, want)]
    # the yardstick: float32 results rounded to the inputs' dtype, the
    # error any kernel storing that dtype makes
    ry = [((x.to(dtype).double() - w).norm() / w.norm()).item()
          for x, w in zip(yard, want)]
    ok = all(r <= 4 * y + 2 ** -10 for r, y in zip(rel, ry))
    name = "backward sinks B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s" % (
        b, h, hk, sq, sk, d, str(dtype)[6:], "causal" if causal else "full")
    print("%s: rel err fagen/float32 dq %.1e/%.1e, dk %.1e/%.1e, dv "
          "%.1e/%.1e, dsinks %.1e/%.1e -> %s" % (
              name, rel[0], ry[0], rel[1], ry[1], rel[2], ry[2], rel[3],
              ry[3], "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def main():
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    bf, hf = torch.bfloat16, torch.float16
    bwd_check("bhsd", 2, 4, 256, 256, 64, bf, False)
    bwd_check("bshd", 1, 4, 77, 200, 128, hf, True)
    bwd_check("bhsd", 2, 4, 1000, 200, 64, bf, True)       # rows see none
    bwd_check("bhsd", 1, 8, 200, 1000, 128, bf, False, hk=2)   # GQA
    bwd_check("bshd", 1, 8, 1000, 77, 64, hf, True, hk=2)
    bwd_check("bhsd", 2, 8, 77, 1000, 128, hf, True, hk=1)     # MQA
    bwd_check("bhsd", 1, 8, 200, 77, 64, bf, False, hk=1)
    bwd_check("packed", 2, 4, 333, 333, 128, bf, True)
    bwd_check("bshd", 1, 4, 1000, 1000, 128, hf, False, scale=0.3)
    bwd_check("bhsd", 1, 4, 1000, 1000, 64, hf, True)
    bwd_check("bshd", 1, 8, 300, 500, 128, bf, False, hk=2, window=(64, 16))
    bwd_check("bhsd", 2, 4, 500, 300, 64, hf, True, window=(100, -1))
    bwd_check("bhsd", 1, 4, 333, 333, 128, bf, True, softcap=5.0)
    bwd_check("bshd", 1, 8, 200, 700, 64, hf, False, hk=4, window=(-1, 50),
              softcap=2.0)
    bwd_check("bhsd", 1, 8, 300, 500, 128, bf, False, hk=2,
              alibi=slopes(8))
    bwd_check("bshd", 2, 4, 400, 250, 64, hf, True, softcap=3.0,
              alibi=slopes(4))
    # head dim 96 (issue #12): 64-byte swizzles, dQ from one consumer
    bwd_check("bhsd", 2, 4, 1000, 1000, 96, bf, True)
    bwd_check("bshd", 1, 8, 300, 777, 96, hf, False, hk=2)
    bwd_check("bhsd", 1, 8, 777, 300, 96, bf, True, hk=1, window=(100, -1),
              softcap=5.0)
    # head dims 192 and 256 (the schedule's SPLIT form)
    bwd_check("bhsd", 2, 4, 1000, 1000, 256, bf, True)
    bwd_check("bshd", 1, 8, 300, 777, 256, hf, False, hk=2)
    bwd_check("bhsd", 1, 8, 777, 300, 192, bf, True, hk=1, window=(100, -1),
              softcap=4.0)
    bwd_check("bshd", 1, 4, 1000, 333, 192, hf, False)
    bwd_check("bhsd", 1, 8, 300, 500, 256, bf, False, hk=2,
              alibi=slopes(8))
    bwd_varlen_check((200, 77, 513), (100, 300, 513), 256, bf, True)
    bwd_varlen_check((200, 77, 513), (100, 300, 513), 192, hf, False)
    bwd_deterministic_check("bhsd", 1, 8, 1000, 1000, 256, bf, True, hk=2)
    bwd_deterministic_check("bshd", 2, 4, 300, 700, 192, hf, False)
    # head dim 192 with V's 128 (DeepSeek's MLA prefill shape)
    bwd_check("bhsd", 2, 4, 1000, 1000, 192, bf, True, dv=128)
    bwd_check("bshd", 1, 8, 300, 777, 192, hf, False, hk=2, dv=128,
              window=(100, 50))
    bwd_varlen_check((1, 300, 129, 64, 0), (5, 385, 129, 1, 200), 128, bf,
                     False)
    bwd_varlen_check((200, 77, 513), (100, 300, 513), 96, bf, True)
    bwd_varlen_check((200, 77, 513), (100, 300, 513), 64, hf, True)
    bwd_repeat_check()
    bwd_deterministic_check("bhsd", 2, 4, 1000, 1000, 64, bf, False)
    bwd_deterministic_check("bshd", 1, 8, 777, 1000, 64, hf, True, hk=2)
    bwd_deterministic_check("bhsd", 1, 8, 1000, 500, 128, bf, True, hk=2)
    bwd_deterministic_check("bshd", 2, 4, 300, 700, 128, hf, False)
    bwd_deterministic_check("bhsd", 1, 8, 1000, 1000, 96, bf, True, hk=2)
    bwd_compile_check()
    bwd_autocast_check()
    sinks_check(2, 8, 2, 300, 300, 128, True, bf)
    sinks_check(1, 4, 4, 200, 333, 64, False, hf)
    bwd_unsupported_check()
    print("%d failures%s" % (len(failures), ": " + ", ".join(failures)
                             if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
