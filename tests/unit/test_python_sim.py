"""test_python_sim.py: fagen's Python functions on libfagen's CPU
simulator (issue #18), with no GPU.

Without PyTorch: fagen.simulator() follows $FAGEN_SIM and
fagen.use_simulator, and both refuse unknown targets; then exit 77
(SKIP).  With PyTorch (a CPU-only build will do), on CPU tensors, against
float64 on the CPU with test_python*.py's tolerances:
  FAGEN_SIM=sm_90a  fagen.attention (B 1, H 2, 130 tokens, d64, bf16),
                    causal and not, GQA (2 query heads over 1): rel err
                    <= 1e-2, lse within 1e-3; its backward: dq, dk, dv
                    within 2x SDPA's own bf16 error + 1e-3; through
                    fagen.ops.attention too, forward and backward; with
                    deterministic=True (fa_bwd_sm90.fa's DQSEM counters),
                    through both; fagen.rms_norm: |y - ref|
                    <= 2e-2 (|ref| + 1e-2), dx and dW rel err <= 3e-2;
                    fagen.softmax: |y - ref| <= 2e-2 |ref|, dx within
                    2e-2 of its row's scale; a tensor on another device
                    and fagen.reference are refused
  use_simulator("sm_100a")  fagen.attention (fa_fwd_sm100.fa) causal,
                    and GQA; its backward (fa_bwd_sm100.fa), GQA causal;
                    deterministic=True reaches fg_attention_backward from
                    fagen.attention, attention_varlen and fagen.ops
                    .attention, which refuses it there (FagenError)
Each case takes well under a second on the simulator.
"""
import math
import os
import sys

SKIP = 77
failures = []


def expect(exc, fn, want):
    try:
        fn()
    except exc as e:
        assert want in str(e), "%r lacks %r" % (str(e), want)
        return
    raise AssertionError("no %s (%s)" % (exc.__name__, want))


def switch():
    """The mode's choice, with no PyTorch and no libfagen."""
    import fagen
    for env, want in (("", None), ("0", None), ("1", "sm_90a"),
                      ("sm_90a", "sm_90a"), ("sm_100a", "sm_100a")):
        os.environ["FAGEN_SIM"] = env
        assert fagen.simulator() == want, (env, fagen.simulator())
    os.environ["FAGEN_SIM"] = "sm_80"
    expect(ValueError, fagen.simulator, "FAGEN_SIM=sm_80: expected 1")
    fagen.use_simulator(False)          # the GPU, whatever FAGEN_SIM says
    assert fagen.simulator() is None
    fagen.use_simulator()
    assert fagen.simulator() == "sm_90a"
    fagen.use_simulator("sm_100a")
    assert fagen.simulator() == "sm_100a"
    expect(ValueError, lambda: fagen.use_simulator("sm_80"),
           "use_simulator('sm_80')")
    fagen.use_simulator(None)           # $FAGEN_SIM again
    os.environ["FAGEN_SIM"] = "sm_90a"
    assert fagen.simulator() == "sm_90a"
    print("switch: FAGEN_SIM and use_simulator -> ok")


def verdict(name, ok, text):
    print("%s: %s -> %s" % (name, text, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def rel(x, ref):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def f64_attention(torch, q, k, v, causal):
    """out and lse of softmax(q k^T / sqrt(D)) v in float64, causal
    bottom-right aligned, GQA by repeating K/V heads."""
    q, k, v = (t.double() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        keep = torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq)
        s = s.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.exp(s - lse[..., None]) @ v, lse


def attention(torch, fagen, causal, hk=2, grad=False, via_ops=False,
              det=False, d=64, dv=None):
    bf = torch.bfloat16
    dv = dv or d
    q = torch.randn(1, 2, 130, d, dtype=bf)
    k = torch.randn(1, hk, 130, d, dtype=bf)
    v = torch.randn(1, hk, 130, dv, dtype=bf)
    name = "attention %s %s Hk=%d%s%s%s%s" % (
        fagen.simulator(), "causal" if causal else "full", hk,
        " backward" if grad else "", " fagen.ops" if via_ops else "",
        " deterministic" if det else "",
        " D=%d Dv=%d" % (d, dv) if d != 64 or dv != d else "")
    if grad:
        q, k, v = (t.requires_grad_() for t in (q, k, v))
    fn = fagen.ops.attention if via_ops else fagen.attention
    out, lse = fn(q, k, v, causal=causal, deterministic=det)
    ref, rlse = f64_attention(torch, q.detach(), k.detach(), v.detach(),
                              causal)
    e_o = rel(out, ref)
    e_l = (lse.double() - rlse).abs().max().item()
    ok = out.device.type == "cpu" and out.dtype == bf and e_o <= 1e-2 and \
        e_l < 1e-3 and out.shape == (1, 2, 130, dv)
    text = "rel err %.1e, lse err %.1e" % (e_o, e_l)
    if grad:
        dout = torch.randn_like(out)
        out.backward(dout)
        q64, k64, v64 = (t.detach().double().requires_grad_()
                         for t in (q, k, v))
        f64_attention(torch, q64, k64, v64, causal)[0].backward(
            dout.double())
        # PyTorch's own backward in bf16, for the tolerance
        qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
        torch.nn.functional.scaled_dot_product_attention(
            qs, ks.repeat_interleave(2 // hk, 1),
            vs.repeat_interleave(2 // hk, 1), is_causal=causal).backward(
            dout)
        for n, g, r, s in (("dq", q, q64, qs), ("dk", k, k64, ks),
                           ("dv", v, v64, vs)):
            e, e_sd = rel(g.grad, r.grad), rel(s.grad, r.grad)
            ok = ok and e <= 2 * e_sd + 1e-3 and g.grad.dtype == bf
            text += ", %s %.1e (SDPA %.1e)" % (n, e, e_sd)
    verdict(name, ok, text)


def rms_norm(torch, fagen):
    bf = torch.bfloat16
    x = torch.randn(5, 300, dtype=bf, requires_grad=True)
    w = (1 + torch.randn(300) / 2).to(bf).requires_grad_()
    y = fagen.rms_norm(x, w, eps=1e-6)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * w64
    err = ((y.double() - ref).abs() / (ref.abs() + 1e-2)).max().item()
    dy = torch.randn_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    e_x, e_w = rel(x.grad, x64.grad), rel(w.grad, w64.grad)
    verdict("rms_norm %s" % fagen.simulator(),
            y.device.type == "cpu" and err <= 2e-2 and e_x <= 3e-2 and
            e_w <= 3e-2,
            "y err %.1e, dx %.1e, dW %.1e" % (err, e_x, e_w))


def softmax(torch, fagen):
    bf = torch.bfloat16
    x = (torch.randn(6, 500) * 3).to(bf).requires_grad_()
    y = fagen.softmax(x)
    x64 = x.detach().double().requires_grad_()
    ref = torch.softmax(x64, -1)
    err = ((y.double() - ref).abs() / ref).max().item()
    dy = torch.randn_like(y)
    y.backward(dy)
    ref.backward(dy.double())
    # dx within rtol of y * (|dy| + sum(|dy| y)), per row (as
    # test_python_kernels.py's dx_error)
    r = ref.detach()
    d = dy.double().abs()
    scale = (r * (d + (d * r).sum(-1, keepdim=True))).amax(-1)
    e_d = ((x.grad.double() - x64.grad).abs().amax(-1) / scale).max().item()
    verdict("softmax %s" % fagen.simulator(),
            y.device.type == "cpu" and err <= 2e-2 and e_d <= 2e-2,
            "y err %.1e, dx err %.1e" % (err, e_d))


def refusals(torch, fagen):
    cpu = torch.zeros(1, 2, 130, 64, dtype=torch.bfloat16)
    meta = torch.empty(1, 2, 130, 64, dtype=torch.bfloat16, device="meta")
    expect(ValueError, lambda: fagen.attention(meta, cpu, cpu),
           "q is on meta: fagen runs on the simulator (sm_90a")
    expect(ValueError, lambda: fagen.rms_norm(meta),
           "x is on meta: fagen runs on the simulator")
    expect(fagen.FagenError, lambda: fagen.reference(cpu, cpu, cpu),
           "FG_ERR_UNSUPPORTED: fg_attention_reference runs CUDA C")
    q = torch.randn(1, 2, 130, 192, dtype=torch.bfloat16)
    k = torch.randn(1, 2, 130, 192, dtype=torch.bfloat16)
    v = torch.randn(1, 2, 130, 128, dtype=torch.bfloat16)
    # v's head dim must be q's or (192, 128); k's must be q's
    expect(fagen.FagenError, lambda: fagen.attention(
        q.detach()[..., :64], k[..., :64], v), "head_dim_v is 128 with "
        "head_dim 64")
    expect(ValueError, lambda: fagen.attention(q.detach(), v, v),
           "k must be (B, Hk, Sk, D) with q's B and D")
    print("refusals: another device, fagen.reference, head dims -> ok")


def deterministic_refused(torch, fagen):
    """deterministic=True (issue #13) reaches fg_attention_backward from
    each entry point with a backward: on the simulated sm_100a device it
    refuses it: the runtime does not offer fa_bwd_sm100.fa's variant yet."""
    bf, want = torch.bfloat16, "the runtime does not offer it yet"
    q, k, v = (torch.randn(1, 2, 130, 64, dtype=bf).requires_grad_()
               for _ in range(3))
    cu = torch.tensor([0, 130], dtype=torch.int32)

    def eager():
        fagen.attention(q, k, v, causal=True,
                        deterministic=True)[0].sum().backward()

    def ops():
        fagen.ops.attention(q, k, v, causal=True,
                            deterministic=True)[0].sum().backward()

    def varlen():
        q3, k3, v3 = (t[0].transpose(0, 1) for t in (q, k, v))
        fagen.attention_varlen(q3, k3, v3, cu, cu, 130, 130, causal=True,
                               deterministic=True)[0].sum().backward()
    for fn in (eager, ops, varlen):
        expect(fagen.FagenError, fn, want)
    print("deterministic on sm_100a: refused by fg_attention_backward from "
          "fagen.attention, fagen.ops.attention, attention_varlen -> ok")


def main():
    switch()
    try:
        import torch
    except ImportError:
        print("SKIP: no PyTorch (pip install torch; a CPU build will do)")
        return SKIP
    import fagen
    import fagen.ops
    torch.manual_seed(0)
    os.environ["FAGEN_SIM"] = "sm_90a"
    fagen.use_simulator(None)
    for causal in (False, True):
        attention(torch, fagen, causal)
    attention(torch, fagen, True, hk=1)
    attention(torch, fagen, True, grad=True)
    attention(torch, fagen, False, hk=1, grad=True)
    attention(torch, fagen, True, via_ops=True)
    attention(torch, fagen, False, grad=True, via_ops=True)
    attention(torch, fagen, True, grad=True, det=True)
    attention(torch, fagen, False, hk=1, grad=True, via_ops=True, det=True)
    # issue #12: head dims 96 and 192 (V's 128: DeepSeek's MLA prefill)
    attention(torch, fagen, True, d=96)
    attention(torch, fagen, False, hk=1, grad=True, d=96)
    attention(torch, fagen, False, hk=1, d=192, dv=128)
    attention(torch, fagen, True, d=192, dv=128, via_ops=True)
    # issue #13: the backward at head dims 192 and 256 (SPLIT)
    attention(torch, fagen, True, grad=True, d=256)
    attention(torch, fagen, False, hk=1, grad=True, d=192, det=True)
    attention(torch, fagen, True, grad=True, d=192, dv=128)
    rms_norm(torch, fagen)
    softmax(torch, fagen)
    refusals(torch, fagen)
    fagen.use_simulator("sm_100a")
    attention(torch, fagen, True)
    attention(torch, fagen, False, hk=1)
    attention(torch, fagen, True, hk=1, grad=True)   # fa_bwd_sm100.fa
    # two K/V heads in (B, H, S, D): dK and dV leave from registers by the
    # caller's strides (they were refused as not dense before)
    attention(torch, fagen, False, hk=2, grad=True)
    attention(torch, fagen, False, d=96, grad=True)  # fa_fwd_sm100.fa
    attention(torch, fagen, True, d=192, dv=128)     # its baseline
    deterministic_refused(torch, fagen)
    if failures:
        print("%d FAILED: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
