"""test_python.py: fagen.attention on a Hopper GPU against PyTorch.

For each problem, out and lse from fagen.attention are compared with a
float64 reference computed on the GPU, next to
torch.nn.functional.scaled_dot_product_attention's error against the same
reference (fagen's must be within 2x SDPA's, or within the dtype's
tolerance), and lse with logsumexp in float64.  Problems: (B, H, S, D)
contiguous, (B, S, H, D) transposed, slices of a packed QKV tensor,
causal with Sq != Sk both ways (bottom-right, with rows that see no key),
a given scale, a side stream and the default stream, grouped-query and
multi-query attention (k, v with fewer heads than q), ALiBi biases
(alibi_slopes, against the float64 reference with the bias), attention sinks
(gpt-oss: a float64 reference with the sink as an extra softmax column,
both schedules and fagen.reference).  Then a 2-layer
transformer with random weights runs its forward pass with SDPA and with
fagen.attention, and the outputs are compared; so does a transformers
Llama model with grouped-query attention (random weights), against a
float64 copy.  Then bad arguments are
refused with libfagen's messages, and fagen and SDPA (each backend PyTorch
has here) are timed at 8k tokens.  Exit 77 (SKIP) without PyTorch or a
Hopper GPU.
"""
import itertools
import math
import sys

SKIP = 77

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("no PyTorch: skipping")
    sys.exit(SKIP)
import fagen

if not torch.cuda.is_available() or \
        torch.cuda.get_device_capability() != (9, 0):
    print("no Hopper GPU: skipping")
    sys.exit(SKIP)

dev = torch.device("cuda")
failures = []


def keep_mask(sq, sk, causal, window, device):
    """The keys each query sees, bottom-right aligned: causal, and a
    window (left, right), -1 for an unbounded side (flash_attn's
    window_size); None when every key is seen."""
    if not causal and window is None:
        return None
    i = torch.arange(sq, device=device)[:, None] + sk - sq
    j = torch.arange(sk, device=device)[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if causal:
        keep &= j <= i
    if window is not None:
        if window[0] >= 0:
            keep &= j >= i - window[0]
        if window[1] >= 0:
            keep &= j <= i + window[1]
    return keep


def f64_ref(q, k, v, causal, scale, window=None, softcap=None, alibi=None):
    """out (float64) and lse (float64); bottom-right causal and window;
    alibi: None or (H,) slopes, FlashAttention's ALiBi: -alibi[h] *
    |i + sk - sq - j| added to the scaled (softcapped) scores; rows with
    no key get 0 and -inf."""
    q, k, v = q.double(), k.double(), v.double()
    if k.shape[1] != q.shape[1]:       # GQA: each K/V head serves a group
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    sq, sk = q.shape[2], k.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if alibi is not None:
        i = torch.arange(sq, device=q.device)[:, None] + sk - sq
        j = torch.arange(sk, device=q.device)[None, :]
        s = s - alibi.double()[None, :, None, None] * (i - j).abs().double()
    keep = keep_mask(sq, sk, causal, window, q.device)
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def f64_ref_sinks(q, k, v, causal, scale, sinks):
    """f64_ref with gpt-oss's sinks: sinks[h] (not scaled) is one more
    column of every row's softmax, dropped afterwards; a row with no key
    gets 0 and lse = sinks[h]."""
    q, k, v = q.double(), k.double(), v.double()
    if k.shape[1] != q.shape[1]:
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    sq, sk = q.shape[2], k.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
        s = s.masked_fill(~keep.tril(sk - sq), -math.inf)
    col = sinks.double()[None, :, None, None].expand(*s.shape[:3], 1)
    lse = torch.logsumexp(torch.cat([s, col], -1), -1)
    return torch.exp(s - lse[..., None]) @ v, lse


def sinks_check(layout, b, h, sq, sk, d, dtype, causal, hk=None,
                schedule=None):
    """fagen.attention(..., sinks=) and fagen.reference against the float64
    reference; every third head's sink dominates its rows."""
    q, k, v = make(layout, b, h, sq, sk, d, dtype, hk)
    sinks = torch.randn(h, device=dev, dtype=torch.float32) * 2
    sinks[2::3] += 6
    sc = 1 / math.sqrt(d)
    out, lse = fagen.attention(q, k, v, causal=causal, sinks=sinks,
                               schedule=schedule)
    rout, rlse = fagen.reference(q, k, v, causal=causal, sinks=sinks)
    ref, flse = f64_ref_sinks(q, k, v, causal, sc, sinks)
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    e_fa, e_rf = rel(out, ref), rel(rout, ref)
    e_lse = (lse.double() - flse).abs().max().item()
    e_rl = (rlse.double() - flse).abs().max().item()
    ok = e_fa <= tol and e_rf <= tol and e_lse < 1e-3 and e_rl < 1e-3
    name = "sinks %s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s%s" % (
        layout, b, h, hk or h, sq, sk, d, str(dtype)[6:],
        "causal" if causal else "full", "" if schedule is None else
        " " + schedule)
    print("%s: rel err fagen %.2e, reference %.2e; lse err %.1e, %.1e -> %s"
          % (name, e_fa, e_rf, e_lse, e_rl, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def slopes(h):
    """ALiBi's slopes for h heads (2^(-8 (i + 1) / h)), as float32."""
    return torch.tensor([2 ** (-8 * (i + 1) / h) for i in range(h)],
                        device=dev, dtype=torch.float32)


def twice(out_shape, lse_shape, dtype, call):
    """call(out, lse) twice, each time into outputs poisoned with NaN:
    the first run's (out, lse) and whether the two are bitwise equal."""
    runs = []
    for _ in range(2):
        out = torch.full(out_shape, math.nan, device=dev, dtype=dtype)
        lse = torch.full(lse_shape, math.nan, device=dev)
        call(out, lse)
        runs.append((out, lse))
    out, lse = runs[0]
    same = torch.equal(out.view(torch.int16), runs[1][0].view(torch.int16)) \
        and torch.equal(lse.view(torch.int32), runs[1][1].view(torch.int32))
    return out, lse, same


def alibi_check(layout, b, h, sq, sk, d, dtype, causal, hk=None,
                schedule=None, window=None, softcap=None):
    """fagen.attention(..., alibi_slopes=) and fagen.reference against the
    float64 reference with the bias (issue #22); outputs poisoned first,
    two runs bitwise equal; rows that see no key get 0 and lse -inf."""
    q, k, v = make(layout, b, h, sq, sk, d, dtype, hk)
    al = slopes(h)
    sc = 1 / math.sqrt(d)
    kw = dict(causal=causal, window=window, softcap=softcap,
              alibi_slopes=al)
    out, lse, same = twice((b, h, sq, d), (b, h, sq), dtype, lambda o, ls:
                           fagen.attention(q, k, v, out=o, lse=ls,
                                           schedule=schedule, **kw))
    rout, rlse = fagen.reference(q, k, v, **kw)
    ref, flse = f64_ref(q, k, v, causal, sc, window, softcap, al)
    seen = flse > -math.inf
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    e_fa, e_rf = rel(out, ref), rel(rout, ref)
    e_lse = (lse.double() - flse)[seen].abs().max().item()
    e_rl = (rlse.double() - flse)[seen].abs().max().item()
    empty = bool((lse[~seen] == -math.inf).all())
    ok = same and empty and e_fa <= tol and e_rf <= tol and e_lse < 1e-3 \
        and e_rl < 1e-3
    name = "alibi %s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s%s%s%s" % (
        layout, b, h, hk or h, sq, sk, d, str(dtype)[6:],
        "causal" if causal else "full",
        "" if window is None else " window=%s" % (window,),
        "" if not softcap else " softcap=%g" % softcap,
        "" if schedule is None else " " + schedule)
    print("%s: rel err fagen %.2e, reference %.2e; lse err %.1e, %.1e; "
          "repeat %s -> %s" % (name, e_fa, e_rf, e_lse, e_rl,
                               "bitwise" if same else "DIFFERS",
                               "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def pack_check(b, h, hk, sq, sk, d, dtype, causal=False, window=None,
               softcap=None, sinks=False, alibi=False, layout="bshd"):
    """Packed GQA (issue #12, pack_gqa=True: the H // Hk query heads of
    a K/V head share a tile's rows) and unpacked (False) against the
    float64 reference: outputs poisoned with NaN first, two runs each
    bitwise equal, rows that see no key 0 with lse -inf (or the sink)."""
    q, k, v = make(layout, b, h, sq, sk, d, dtype, hk)
    sc = 1 / math.sqrt(d)
    sn = torch.randn(h, device=dev) * 2 if sinks else None
    al = slopes(h) if alibi else None
    if sinks:
        ref, flse = f64_ref_sinks(q, k, v, causal, sc, sn)
    else:
        ref, flse = f64_ref(q, k, v, causal, sc, window, softcap, al)
    seen = flse > -math.inf
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    kw = dict(causal=causal, window=window, softcap=softcap, sinks=sn,
              alibi_slopes=al)
    ok, errs = True, []
    for pack in (True, False):
        out, lse, same = twice(
            (b, h, sq, d), (b, h, sq), dtype, lambda o, ls, pack=pack:
            fagen.attention(q, k, v, out=o, lse=ls, pack_gqa=pack, **kw))
        e_fa = rel(out, ref)
        e_lse = (lse.double() - flse)[seen].abs().max().item() \
            if bool(seen.any()) else 0.0
        empty = bool((lse[~seen] == -math.inf).all() and
                     (out[~seen] == 0).all())
        ok &= same and empty and e_fa <= tol and e_lse < 1e-3
        errs.append("%s %.2e/%.1e%s" % ("packed" if pack else "unpacked",
                                        e_fa, e_lse,
                                        "" if same else " DIFFERS"))
    name = "pack %s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s%s%s%s%s" % (
        layout, b, h, hk, sq, sk, d, str(dtype)[6:],
        "causal" if causal else "full",
        "" if window is None else " window=%s" % (window,),
        "" if not softcap else " softcap=%g" % softcap,
        " sinks" if sinks else "", " alibi" if alibi else "")
    print("%s: rel err / lse err %s -> %s" % (name, ", ".join(errs),
                                              "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def sdpa(q, k, v, causal, scale, window=None):
    sq, sk = q.shape[2], k.shape[2]
    gqa = {"enable_gqa": True} if k.shape[1] != q.shape[1] else {}
    if window is not None or (causal and sq != sk):
        # SDPA's is_causal is top-left, and it has no window: mask instead
        keep = keep_mask(sq, sk, causal, window, q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                              scale=scale, **gqa)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                          scale=scale, **gqa)


def rel(x, ref):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make(layout, b, h, sq, sk, d, dtype, hk=None):
    hk = hk or h     # K/V heads
    if layout == "bhsd":
        q = torch.randn(b, h, sq, d, device=dev, dtype=dtype)
        k = torch.randn(b, hk, sk, d, device=dev, dtype=dtype)
        v = torch.randn(b, hk, sk, d, device=dev, dtype=dtype)
    elif layout == "bshd":
        q = torch.randn(b, sq, h, d, device=dev, dtype=dtype).transpose(1, 2)
        k = torch.randn(b, sk, hk, d, device=dev, dtype=dtype).transpose(1, 2)
        v = torch.randn(b, sk, hk, d, device=dev, dtype=dtype).transpose(1, 2)
    else:   # packed (B, S, 3, H, D), sq == sk
        qkv = torch.randn(b, sq, 3, h, d, device=dev, dtype=dtype)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
    return q, k, v


def check(layout, b, h, sq, sk, d, dtype, causal, scale=None, stream=None,
          hk=None, window=None, softcap=None):
    q, k, v = make(layout, b, h, sq, sk, d, dtype, hk)
    sc = scale if scale is not None else 1 / math.sqrt(d)
    kw = dict(causal=causal, scale=scale, window=window, softcap=softcap)
    if stream is None:
        out, lse = fagen.attention(q, k, v, **kw)
    else:
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            out, lse = fagen.attention(q, k, v, **kw)
        torch.cuda.current_stream().wait_stream(stream)
    ref, rlse = f64_ref(q, k, v, causal, sc, window, softcap)
    seen = rlse > -math.inf            # rows that see a key
    e_fa = rel(out, ref)
    if softcap:      # SDPA has no softcap: the dtype's tolerance alone
        e_sd = 0.0
    else:
        s = sdpa(q, k, v, causal, sc, window)
        e_sd = rel(s.nan_to_num(0.0), ref)
    e_lse = (lse.double() - rlse)[seen].abs().max().item()
    empty_ok = bool((out[~seen] == 0).all() and (lse[~seen] == -math.inf)
                    .all())
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    ok = (e_fa <= max(2 * e_sd, tol) and e_lse < 1e-3 and empty_ok and
          out.shape == (b, h, sq, d) and lse.shape == (b, h, sq))
    name = "%s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d %s %s%s%s%s%s" % (
        layout, b, h, hk or h, sq, sk, d, str(dtype)[6:], "causal" if causal
        else "full", "" if scale is None else " scale=%g" % scale,
        "" if stream is None else " side stream",
        "" if window is None else " window=%s" % (window,),
        "" if not softcap else " softcap=%g" % softcap)
    print("%s: rel err fagen %.2e, sdpa %.2e; lse err %.1e; %d rows see no "
          "key -> %s" % (name, e_fa, e_sd, e_lse, int((~seen).sum()),
                         "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def varlen_check(lq, lk, h, d, dtype, causal=False, hk=None, window=None,
                 softcap=None, sinks=False, schedule=None, alibi=False):
    """fagen.attention_varlen on sequences of query lengths lq and key
    lengths lk packed together: each sequence against the float64
    reference and against fagen.attention on it alone (both on schedule,
    None: the runtime's pick); outputs poisoned (NaN) first, rows past
    the last sequence left alone, two runs bitwise equal."""
    hk = hk or h
    cq = torch.tensor([0] + list(itertools.accumulate(lq)), dtype=torch.int32,
                      device=dev)
    ck = torch.tensor([0] + list(itertools.accumulate(lk)), dtype=torch.int32,
                      device=dev)
    tail = 5                              # rows past the last sequence
    q = torch.randn(sum(lq) + tail, h, d, device=dev, dtype=dtype)
    # K and V rows past the last sequence: NaN, which must not leak into
    # the last sequence's partial key block (P = 0 there, but 0 * NaN)
    k = torch.randn(sum(lk) + tail, hk, d, device=dev, dtype=dtype)
    v = torch.randn(sum(lk) + tail, hk, d, device=dev, dtype=dtype)
    k[sum(lk):] = math.nan
    v[sum(lk):] = math.nan
    sk_ = torch.randn(h, device=dev, dtype=torch.float32) * 2 if sinks \
        else None
    al = slopes(h) if alibi else None
    kw = dict(causal=causal, window=window, softcap=softcap, sinks=sk_,
              schedule=schedule, alibi_slopes=al)
    out, lse, same = twice(q.shape, (h, q.shape[0]), q.dtype, lambda o, ls:
                           fagen.attention_varlen(q, k, v, cq, ck, max(lq),
                                                  max(lk), out=o, lse=ls,
                                                  **kw))
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    worst, alone, lse_err, ok = 0.0, 0.0, 0.0, same
    # the unfused reference on the packed batch (fg_attention_reference
    # runs each sequence alone on the device), outputs poisoned too
    rkw = {x: y for x, y in kw.items() if x != "schedule"}
    r_out = torch.full_like(q, math.nan)
    r_lse = torch.full((h, q.shape[0]), math.nan, device=dev)
    fagen.reference_varlen(q, k, v, cq, ck, max(lq), max(lk), out=r_out,
                           lse=r_lse, **rkw)
    rworst = 0.0
    sc = 1 / math.sqrt(d)
    for b in range(len(lq)):
        q0, q1, k0, k1 = cq[b].item(), cq[b + 1].item(), ck[b].item(), \
            ck[b + 1].item()
        if q1 == q0:
            continue
        qs = q[q0:q1].transpose(0, 1)[None]
        ks = k[k0:k1].transpose(0, 1)[None]
        vs = v[k0:k1].transpose(0, 1)[None]
        o_b = out[q0:q1].transpose(0, 1)[None]
        l_b = lse[:, q0:q1][None]
        if sinks:
            ref, rl = f64_ref_sinks(qs, ks, vs, causal, sc, sk_)
        else:
            ref, rl = f64_ref(qs, ks, vs, causal, sc, window, softcap, al)
        worst = max(worst, rel(o_b, ref) if ref.norm() > 0 else
                    o_b.double().abs().max().item())
        r_b = r_out[q0:q1].transpose(0, 1)[None]
        rl_b = r_lse[:, q0:q1][None]
        rworst = max(rworst, rel(r_b, ref) if ref.norm() > 0 else
                     r_b.double().abs().max().item())
        seen = rl > -math.inf
        if seen.any():
            rworst = max(rworst, (rl_b.double() - rl)[seen].abs().max()
                         .item())
        if not bool((rl_b[~seen] == rl[~seen].float()).all()):
            rworst = math.inf   # rows with no key: -inf (or the sink)
        if seen.any():
            lse_err = max(lse_err, (l_b.double() - rl)[seen].abs().max()
                          .item())
        if not sinks and not bool((l_b[~seen] == -math.inf).all() and
                                  (o_b.transpose(1, 2)[~seen.transpose(
                                      1, 2)] == 0).all()):
            ok = False
        if k1 > k0:
            a_o, _ = fagen.attention(qs, ks, vs, **kw)
            alone = max(alone, (a_o.double() - o_b.double()).abs().max()
                        .item())
    untouched = bool(out[sum(lq):].isnan().all() and
                     lse[:, sum(lq):].isnan().all())
    ok = ok and worst <= tol and lse_err < 1e-3 and untouched and \
        alone <= 1e-2 and rworst <= tol
    name = "varlen lq=%s lk=%s H=%d Hk=%d D=%d %s%s%s%s%s%s%s" % (
        lq, lk, h, hk, d, str(dtype)[6:], " causal" if causal else "",
        "" if window is None else " window=%s" % (window,),
        "" if not softcap else " softcap=%g" % softcap,
        " sinks" if sinks else "", " alibi" if alibi else "",
        " " + schedule if schedule else "")
    print("%s: rel err %.2e; lse err %.1e; vs alone %.1e; reference %.1e; "
          "repeat %s; tail %s -> %s" % (
              name, worst, lse_err, alone, rworst, "bitwise" if same else
              "DIFFERS", "untouched" if untouched else "WRITTEN",
              "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


class Block(torch.nn.Module):
    """A pre-norm transformer block; attention through self.attn_fn."""

    def __init__(self, dm, nh):
        super().__init__()
        self.nh = nh
        self.ln1 = torch.nn.LayerNorm(dm)
        self.ln2 = torch.nn.LayerNorm(dm)
        self.qkv = torch.nn.Linear(dm, 3 * dm)
        self.proj = torch.nn.Linear(dm, dm)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dm, 4 * dm),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * dm, dm))
        self.attn_fn = None

    def forward(self, x):
        b, s, dm = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.nh, dm // self.nh)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # strided
        a = self.attn_fn(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, dm))
        return x + self.mlp(self.ln2(x))


def model_check(dm, nh, s, dtype):
    torch.manual_seed(1)
    model = torch.nn.Sequential(Block(dm, nh), Block(dm, nh)).to(dev, dtype)
    x = torch.randn(2, s, dm, device=dev, dtype=dtype)
    outs = {}
    with torch.no_grad():
        for name, fn in (("sdpa", lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, is_causal=True)),
                ("fagen", lambda q, k, v: fagen.attention(q, k, v,
                                                          causal=True)[0]),
                ("float64", lambda q, k, v: f64_ref(q, k, v, True, 1 /
                 math.sqrt(q.shape[-1]))[0].to(q.dtype))):
            for blk in model:
                blk.attn_fn = fn
            outs[name] = model(x).double()
    e_fa = rel(outs["fagen"], outs["float64"])
    e_sd = rel(outs["sdpa"], outs["float64"])
    e_fs = rel(outs["fagen"], outs["sdpa"])
    ok = e_fa <= max(2 * e_sd, 1e-2)
    print("2-layer transformer d_model=%d heads=%d (D=%d) seq=%d %s, causal: "
          "output rel err vs float64 attention: fagen %.2e, sdpa %.2e; "
          "fagen vs sdpa %.2e -> %s" % (dm, nh, dm // nh, s, str(dtype)[6:],
                                         e_fa, e_sd, e_fs,
                                         "ok" if ok else "FAIL"))
    if not ok:
        failures.append("model %d/%d" % (dm, nh))


def llama_check(dtype):
    """A transformers Llama (random weights, 2 layers, 8 query heads over
    2 K/V heads, D 128) with fagen as its attention: logits against a
    float64 copy of the model, next to SDPA's."""
    try:
        from transformers import (AttentionInterface, LlamaConfig,
                                  LlamaForCausalLM)
    except ImportError as e:
        print("llama: transformers without AttentionInterface (%s): "
              "skipped" % e)
        return

    def fagen_attn(module, query, key, value, attention_mask, scaling=None,
                   dropout=0.0, **kwargs):
        # key, value: (B, Hk, S, D), not repeated to q's heads
        out, _ = fagen.attention(query, key, value, causal=True,
                                 scale=scaling)
        return out.transpose(1, 2).contiguous(), None

    AttentionInterface.register("fagen", fagen_attn)
    cfg = dict(hidden_size=1024, num_attention_heads=8, num_key_value_heads=2,
               head_dim=128, intermediate_size=2048, num_hidden_layers=2,
               vocab_size=1000, max_position_embeddings=2048)
    torch.manual_seed(2)
    ids = torch.randint(0, 1000, (2, 777), device=dev)
    logits = {}
    with torch.no_grad():
        for impl, dt in (("eager", torch.float64), ("sdpa", dtype),
                         ("fagen", dtype)):
            torch.manual_seed(3)
            m = LlamaForCausalLM(LlamaConfig(attn_implementation=impl,
                                             **cfg)).to(dev, dt).eval()
            logits[impl] = m(ids).logits.double()
    e_fa = rel(logits["fagen"], logits["eager"])
    e_sd = rel(logits["sdpa"], logits["eager"])
    ok = e_fa <= max(2 * e_sd, 1e-2)
    print("llama 2 layers, 8 heads / 2 K/V heads, D=128, seq 777 %s: logits "
          "rel err vs float64: fagen %.2e, sdpa %.2e -> %s" % (
              str(dtype)[6:], e_fa, e_sd, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("llama")


def ref_window_check():
    """fagen.reference with a window and a softcap, against float64."""
    q, k, v = make("bshd", 2, 4, 300, 500, 96, torch.float16, 2)
    kw = dict(causal=True, window=(100, -1), softcap=20.0)
    out, lse = fagen.reference(q, k, v, **kw)
    ref, rlse = f64_ref(q, k, v, True, 1 / math.sqrt(96), (100, -1), 20.0)
    seen = rlse > -math.inf
    e = rel(out, ref)
    el = (lse.double() - rlse)[seen].abs().max().item()
    ok = e < 3e-3 and el < 1e-4
    print("fagen.reference GQA window=(100, -1) softcap=20 D=96 float16: "
          "rel err %.2e, lse err %.1e -> %s" % (e, el, "ok" if ok else
                                                "FAIL"))
    if not ok:
        failures.append("reference window")


def reference_check():
    """fagen.reference, the nvrtc baseline, at a head dim the fused kernels
    do not take, and with v's head dim not q's."""
    for d, dv in ((80, 80), (192, 128), (64, 160)):
        q, k, _ = make("bshd", 2, 3, 300, 500, d, torch.float16)
        v = torch.randn(2, 500, 3, dv, device=dev,
                        dtype=torch.float16).transpose(1, 2)
        out, lse = fagen.reference(q, k, v, causal=True)
        ref, rlse = f64_ref(q, k, v, True, 1 / math.sqrt(d))
        e, el = rel(out, ref), (lse.double() - rlse).abs().max().item()
        ok = e < 3e-3 and el < 1e-4 and out.shape == (2, 3, 300, dv)
        print("fagen.reference bshd B=2 H=3 Sq=300 Sk=500 D=%d Dv=%d float16 "
              "causal: rel err %.2e, lse err %.1e -> %s"
              % (d, dv, e, el, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("reference D=%d Dv=%d" % (d, dv))


def headdim_check(layout, b, h, sq, sk, d, dv, dtype, causal, hk=None,
                  schedule=None, window=None, softcap=None):
    """Head dims 96 and 192, v's 128 at 192 (DeepSeek's MLA prefill,
    issue #12): fagen.attention against the float64 reference, outputs
    poisoned with NaN first, two runs bitwise equal."""
    hk = hk or h
    q, k, _ = make(layout, b, h, sq, sk, d, dtype, hk)
    if layout == "bhsd":
        v = torch.randn(b, hk, sk, dv, device=dev, dtype=dtype)
    else:
        v = torch.randn(b, sk, hk, dv, device=dev, dtype=dtype).transpose(1, 2)
    kw = dict(causal=causal, schedule=schedule, window=window,
              softcap=softcap)
    out, lse, same = twice((b, h, sq, dv), (b, h, sq), dtype, lambda o, ls:
                           fagen.attention(q, k, v, out=o, lse=ls, **kw))
    ref, rlse = f64_ref(q, k, v, causal, 1 / math.sqrt(d), window, softcap)
    seen = rlse > -math.inf
    e = rel(out, ref)
    el = (lse.double() - rlse)[seen].abs().max().item()
    empty_ok = bool((out[~seen] == 0).all() and
                    (lse[~seen] == -math.inf).all())
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    ok = same and e <= tol and el < 1e-3 and empty_ok
    name = "%s B=%d H=%d Hk=%d Sq=%d Sk=%d D=%d Dv=%d %s %s%s%s%s" % (
        layout, b, h, hk, sq, sk, d, dv, str(dtype)[6:],
        "causal" if causal else "full",
        "" if schedule is None else " " + schedule,
        "" if window is None else " window=%s" % (window,),
        "" if not softcap else " softcap=%g" % softcap)
    print("%s: rel err %.2e, lse err %.1e, %s -> %s" % (
        name, e, el, "bitwise" if same else "DIFFERS",
        "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def headdim_varlen_check(lq, lk, h, d, dv, dtype, causal=False):
    """attention_varlen at head dims (d, dv): each sequence against the
    float64 reference; outputs poisoned first."""
    cq = torch.tensor([0] + list(itertools.accumulate(lq)), dtype=torch.int32,
                      device=dev)
    ck = torch.tensor([0] + list(itertools.accumulate(lk)), dtype=torch.int32,
                      device=dev)
    q = torch.randn(sum(lq), h, d, device=dev, dtype=dtype)
    k = torch.randn(sum(lk), h, d, device=dev, dtype=dtype)
    v = torch.randn(sum(lk), h, dv, device=dev, dtype=dtype)
    out = torch.full((sum(lq), h, dv), math.nan, device=dev, dtype=dtype)
    lse = torch.full((h, sum(lq)), math.nan, device=dev)
    fagen.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=causal,
                           out=out, lse=lse)
    worst, lerr = 0.0, 0.0
    for i in range(len(lq)):
        a, z, ka, kz = cq[i].item(), cq[i + 1].item(), ck[i].item(), \
            ck[i + 1].item()
        if z == a:
            continue
        ref, rlse = f64_ref(*(t.transpose(0, 1)[None] for t in
                              (q[a:z], k[ka:kz], v[ka:kz])), causal,
                            1 / math.sqrt(d))
        got = out[a:z].transpose(0, 1)[None]
        seen = rlse > -math.inf
        worst = max(worst, rel(got, ref) if seen.any() else
                    got.abs().max().item())
        if seen.any():
            lerr = max(lerr, (lse[:, a:z][None].double() - rlse)[seen].abs()
                       .max().item())
    tol = 1e-2 if dtype == torch.bfloat16 else 3e-3
    ok = worst <= tol and lerr < 1e-3
    name = "varlen %s H=%d D=%d Dv=%d %s %s" % (
        lq, h, d, dv, str(dtype)[6:], "causal" if causal else "full")
    print("%s: worst rel err %.2e, lse err %.1e -> %s" % (
        name, worst, lerr, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def errors():
    q = torch.randn(1, 2, 64, 64, device=dev, dtype=torch.bfloat16)
    cases = [
        (lambda: fagen.attention(q, q, q.cpu()), ValueError, "is on cpu"),
        (lambda: fagen.attention(q.half(), q, q), ValueError, "share a dtype"),
        (lambda: fagen.attention(q.float(), q.float(), q.float()),
         ValueError, "torch.bfloat16 or torch.float16"),
        (lambda: fagen.attention(q[..., :32], q[..., :32], q[..., :32]),
         fagen.FagenError, "head_dim is 32; the fused kernels support 64, "
         "96, 128, 192 and 256"),
        (lambda: fagen.attention(torch.randn(1, 2, 64, 72, device=dev,
                                             dtype=torch.bfloat16)[..., 4:68],
                                 q, q), fagen.FagenError,
         "not 16-byte aligned, as TMA requires"),
        (lambda: fagen.attention(torch.randn(1, 2, 64, 68, device=dev,
                                             dtype=torch.bfloat16)[..., :64],
                                 q, q), fagen.FagenError,
         "q_strides[2] (seq) is 68 elements; TMA needs a multiple of 8"),
        (lambda: fagen.attention(q, q, q, sinks=torch.zeros(3, device=dev)),
         ValueError, "sinks must be a contiguous float32 (H,) = (2,)"),
    ]
    for fn, exc, want in cases:
        try:
            fn()
            ok, got = False, "no error"
        except exc as e:
            ok, got = want in str(e), str(e)
        print("refused: %s -> %s" % (got.splitlines()[0], "ok" if ok else
                                     "FAIL (want %r)" % want))
        if not ok:
            failures.append(want)


def bench():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def t(fn, n=10):
        fn()
        ms = []
        for _ in range(n):
            a, b = torch.cuda.Event(True), torch.cuda.Event(True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
        return sorted(ms)[n // 2]

    for b, h, hk, s, d, causal in ((2, 16, 16, 8192, 128, False),
                                   (2, 16, 16, 8192, 128, True),
                                   (2, 32, 32, 8192, 64, False),
                                   (2, 32, 32, 8192, 64, True),
                                   (8, 32, 8, 2048, 128, False),  # GQA
                                   (8, 32, 8, 2048, 128, True)):
        q, k, v = make("bhsd", b, h, s, s, d, torch.bfloat16, hk)
        gqa = {"enable_gqa": True} if hk != h else {}
        fl = 4 * b * h * s * s * d / (2 if causal else 1)
        line = "bench B=%d H=%d Hk=%d S=%d D=%d %s:" % (
            b, h, hk, s, d, "causal" if causal else "full")
        with torch.no_grad():
            ms = t(lambda: fagen.attention(q, k, v, causal=causal))
            line += " fagen %.3f ms %.0f TFLOP/s;" % (ms, fl / ms / 1e9)
            for be in (getattr(SDPBackend, n) for n in (
                    "CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")
                    if hasattr(SDPBackend, n)):
                try:
                    with sdpa_kernel([be]):
                        ms = t(lambda: F.scaled_dot_product_attention(
                            q, k, v, is_causal=causal, **gqa))
                    line += " %s %.3f ms %.0f TFLOP/s;" % (
                        be.name.lower(), ms, fl / ms / 1e9)
                except RuntimeError as e:
                    line += " %s n/a (%s);" % (be.name.lower(),
                                               str(e).splitlines()[0][:40])
        print(line)
    # sliding window (4k keys left, causal) and softcap against the dense
    # causal kernel at 16k tokens: the window's cost grows with it, not S
    q, k, v = make("bhsd", 1, 16, 16384, 16384, 128, torch.bfloat16)
    fl = 4 * 16 * 16384 * 16384 * 128 / 2
    with torch.no_grad():
        base = t(lambda: fagen.attention(q, k, v, causal=True))
        win = t(lambda: fagen.attention(q, k, v, causal=True,
                                        window=(4096, 0)))
        cap = t(lambda: fagen.attention(q, k, v, causal=True,
                                        softcap=50.0))
    print("bench B=1 H=16 S=16384 D=128 causal: dense %.3f ms (%.0f "
          "TFLOP/s); window (4096, 0) %.3f ms, %.2fx faster; softcap 50 "
          "%.3f ms (%.0f TFLOP/s, %.2fx the dense time)" % (
              base, fl / base / 1e9, win, base / win, cap, fl / cap / 1e9,
              cap / base))


def main():
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    bf, hf = torch.bfloat16, torch.float16
    with torch.no_grad():
        check("bhsd", 2, 4, 256, 256, 64, bf, False)
        check("bshd", 2, 4, 256, 256, 64, bf, False)
        check("bhsd", 2, 4, 1000, 1000, 128, bf, True)
        check("bshd", 1, 3, 700, 900, 256, bf, True)
        check("bhsd", 2, 2, 300, 1000, 256, hf, False)
        check("bshd", 1, 8, 300, 1000, 128, hf, True)
        check("bhsd", 2, 2, 1000, 300, 64, bf, True)   # rows see none
        check("packed", 2, 8, 777, 777, 64, hf, True)
        check("packed", 1, 16, 2048, 2048, 128, bf, False)
        check("bhsd", 1, 4, 17, 4097, 128, bf, False, scale=0.3)
        check("bshd", 2, 4, 512, 512, 128, bf, True,
              stream=torch.cuda.Stream())
        check("bhsd", 4, 16, 2048, 2048, 64, hf, True)
        check("bshd", 2, 32, 1000, 1000, 128, bf, True, hk=8)   # GQA
        check("bhsd", 1, 8, 333, 2049, 64, hf, False, hk=1)     # MQA
        check("bshd", 2, 4, 63, 63, 256, bf, False, hk=2)
        check("bhsd", 1, 32, 2049, 3333, 128, hf, True, hk=1)      # G = 32
        check("bshd", 2, 4, 1000, 1000, 128, bf, False, window=(128, 64))
        check("bhsd", 1, 8, 2049, 2049, 64, hf, True, hk=2,
              window=(300, -1))
        check("bshd", 1, 4, 333, 4097, 256, bf, False, window=(-1, 0))
        check("bhsd", 2, 4, 1000, 300, 128, bf, False, window=(0, 0))
        # more queries than keys with the right side unbounded or past
        # seq_k: row 0 sees keys up to seq_k - seq_q + right (the runtime
        # once clamped the right side to seq_k, losing rows' keys)
        check("bhsd", 2, 4, 1000, 300, 128, bf, False, window=(100, -1))
        check("bshd", 1, 4, 700, 300, 64, hf, False, window=(50, 500))
        check("bshd", 2, 8, 1000, 1000, 128, bf, True, softcap=50.0)
        check("bhsd", 1, 4, 777, 1500, 64, hf, False, softcap=5.0,
              window=(256, 256))
        ref_window_check()
        mix_q = [0, 1, 63, 333, 2049, 3333, 128]
        mix_k = [5, 0, 63, 1000, 2049, 333, 129]
        varlen_check(mix_q, mix_q, 4, 128, bf, causal=True)
        varlen_check(mix_q, mix_k, 8, 128, hf, hk=2)
        varlen_check(mix_q, mix_k, 4, 64, bf, causal=True, hk=1)
        # D = 64 runs the baseline (64-row tiles): sequences ending on a
        # tile's edge, just past it, a row, none; window, softcap, sinks;
        # and fa_fwd_sm90.fa's VARLEN at D = 64 by name
        varlen_check([64, 1, 65, 0, 128, 333], [64, 200, 1, 7, 0, 1000], 4,
                     64, hf, causal=True, sinks=True)
        varlen_check(mix_q, mix_k, 8, 64, bf, hk=2, window=(100, 30),
                     softcap=20.0)
        varlen_check(mix_q, mix_k, 4, 64, hf, causal=True,
                     schedule="fa_fwd_sm90.fa")
        varlen_check([777, 1, 2049], [777, 3000, 100], 2, 256, bf)
        varlen_check(mix_q, mix_k, 32, 128, bf, hk=8, window=(256, 0))
        varlen_check([1000, 17, 300], [1000, 17, 900], 4, 128, hf,
                     causal=True, softcap=30.0)
        varlen_check([1000, 0, 300], [1000, 9, 0], 6, 128, bf, causal=True,
                     sinks=True)
        sinks_check("bhsd", 2, 6, 1000, 1000, 128, bf, False)
        sinks_check("bshd", 1, 6, 1000, 300, 128, bf, True)  # rows see none
        sinks_check("bshd", 2, 8, 333, 2049, 64, hf, True, hk=2)
        sinks_check("bhsd", 1, 4, 777, 777, 128, hf, True,
                    schedule="fa_fwd_baseline_sm90.fa")
        sinks_check("bhsd", 1, 3, 256, 256, 256, bf, False)
        # ALiBi (issue #22): both sm_90 schedules, causal or not, GQA,
        # Sq != Sk both ways, odd lengths, with a window and a softcap
        alibi_check("bhsd", 2, 8, 1000, 1000, 128, bf, False)
        alibi_check("bshd", 1, 8, 777, 2049, 128, hf, True)
        alibi_check("bshd", 2, 8, 1000, 300, 128, bf, True)  # rows see none
        alibi_check("bhsd", 2, 16, 333, 1000, 64, bf, False, hk=4)
        alibi_check("bhsd", 1, 4, 1025, 1025, 64, hf, True)
        alibi_check("bshd", 1, 4, 513, 513, 64, bf, True,
                    schedule="fa_fwd_sm90.fa")
        alibi_check("bhsd", 1, 4, 300, 300, 256, bf, False)
        alibi_check("bhsd", 1, 8, 1000, 1000, 128, bf, False,
                    window=(256, 64), softcap=30.0)
        varlen_check(mix_q, mix_k, 8, 128, bf, causal=True, hk=2,
                     alibi=True)
        varlen_check([64, 1, 65, 0, 128, 333], [64, 200, 1, 7, 0, 1000], 4,
                     64, hf, alibi=True)
        # packed GQA (issue #12): decode-like Sq, G = 2 .. 32, D 64 .. 256,
        # masks, softcap, sinks, ALiBi, and Sq past one tile
        pack_check(2, 32, 8, 1, 2049, 128, bf)
        pack_check(1, 8, 2, 7, 333, 64, hf, causal=True)
        pack_check(2, 16, 2, 33, 1000, 128, bf, causal=True)
        pack_check(1, 32, 1, 3, 4097, 128, bf)                  # MQA
        pack_check(1, 4, 2, 100, 100, 256, bf, causal=True)
        pack_check(1, 16, 4, 64, 3000, 128, bf, window=(256, 0))
        pack_check(1, 16, 2, 17, 777, 128, hf, softcap=30.0)
        pack_check(2, 8, 2, 5, 1000, 128, bf, causal=True, sinks=True)
        pack_check(1, 8, 2, 9, 2000, 64, bf, causal=True, alibi=True)
        pack_check(1, 16, 1, 1, 1, 128, bf)
        pack_check(1, 8, 2, 1000, 1000, 128, bf, causal=True)   # many tiles
        pack_check(2, 16, 4, 200, 150, 64, hf, causal=True,
                   layout="bhsd")                               # rows see none
        reference_check()
        # head dims 96 and 192 (v's 128 at 192: DeepSeek's MLA prefill),
        # both sm_90 schedules, GQA, Sq != Sk, rows that see no key
        for sched in (None, "fa_fwd_baseline_sm90.fa"):
            headdim_check("bhsd", 2, 4, 1000, 1000, 96, 96, bf, True,
                          schedule=sched)
            headdim_check("bshd", 1, 8, 777, 2049, 192, 128, bf, False,
                          hk=2, schedule=sched)
            headdim_check("bshd", 2, 4, 1000, 300, 192, 128, hf, True,
                          schedule=sched)                 # rows see none
            headdim_check("bhsd", 1, 4, 333, 1000, 192, 192, bf, True,
                          schedule=sched)
        headdim_check("bshd", 2, 16, 2048, 2048, 192, 128, bf, True)
        headdim_check("bhsd", 1, 8, 1000, 1000, 96, 96, hf, False, hk=1,
                      window=(128, 64), softcap=30.0)
        headdim_check("bshd", 1, 32, 5, 3000, 192, 128, bf, False,
                      hk=4)                               # packed GQA
        # long causal grids: a CTA a tile (-D PERSIST=false), longest
        # first; MHA from 4096 query rows, GQA from 16384
        headdim_check("bhsd", 1, 4, 4097, 4097, 128, 128, bf, True)
        headdim_check("bshd", 1, 2, 16384, 16384, 128, 128, bf, True, hk=1)
        headdim_check("bshd", 1, 2, 4097, 5000, 256, 256, hf, True)
        headdim_check("bhsd", 1, 4, 8192, 8192, 192, 128, bf, True)
        # head dim 64 from 8192 query rows, no mask: three consumers,
        # 192-row tiles (-D NC=3; the last tile partial)
        headdim_check("bshd", 1, 2, 8192, 8193, 64, 64, bf, False)
        headdim_check("bhsd", 1, 4, 9001, 8192, 64, 64, hf, False, hk=2)
        # and head dim 96 from 4096, P V reading P from shared memory
        headdim_check("bshd", 1, 4, 4096, 4097, 96, 96, bf, False)
        headdim_check("bhsd", 2, 4, 5000, 3000, 96, 96, hf, False, hk=1)
        headdim_check("bshd", 1, 4, 4097, 4500, 96, 96, bf, True)  # causal
        headdim_varlen_check([0, 1, 333, 2049, 128], [5, 0, 1000, 2049, 129],
                             4, 192, 128, bf, causal=True)
        headdim_varlen_check([63, 300, 1], [63, 500, 700], 4, 96, 96, hf)
        llama_check(torch.bfloat16)
    model_check(1024, 8, 1024, torch.bfloat16)
    model_check(512, 8, 777, torch.float16)
    errors()
    bench()
    print("%d failures%s" % (len(failures), ": " + ", ".join(failures)
                             if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
