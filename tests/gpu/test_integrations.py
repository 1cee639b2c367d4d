"""test_integrations.py: issue #17's PyTorch integration on a Hopper GPU.

fagen.ops: torch.ops.fagen.attention passes torch.library.opcheck, and a
function calling it (causal; grouped-query with a window and a softcap)
compiles with torch.compile(fullgraph=True) and gives what eager
fagen.attention gives.  fagen.integrations.transformers: after
register(), a transformers Llama (random weights, 8 query heads over 2
K/V heads, D 128) with attn_implementation="fagen" gives logits close to
a float64 eager copy (within 2x SDPA's error), and so does a decoding
step through the KV cache (1 query against 64 keys).  Issue #26's row
ops: torch.ops.fagen.softmax (and its backward) and layer_norm pass
opcheck, and a function of them compiles with fullgraph=True and gives
eager fagen's values and softmax's gradient, bit for bit.  Exit 77 (SKIP)
without PyTorch or a Hopper GPU; the transformers part is skipped
without transformers 4.53 or later.
"""
import sys

SKIP = 77

try:
    import torch
except ImportError:
    print("no PyTorch: skipping")
    sys.exit(SKIP)
if not torch.cuda.is_available() or \
        torch.cuda.get_device_capability() != (9, 0):
    print("no Hopper GPU: skipping")
    sys.exit(SKIP)

import fagen
from fagen import ops

dev = torch.device("cuda")
failures = []


def rel(x, ref):
    return ((x.double() - ref.double()).norm() / ref.double().norm()).item()


def compile_check():
    torch.manual_seed(1)
    bf = torch.bfloat16
    q = torch.randn(2, 8, 300, 128, device=dev, dtype=bf)
    k = torch.randn(2, 2, 300, 128, device=dev, dtype=bf)
    v = torch.randn(2, 2, 300, 128, device=dev, dtype=bf)
    try:
        torch.library.opcheck(torch.ops.fagen.attention.default,
                              (q, k, v, True, None, False, -1, -1, 0.0,
                               None))
        print("opcheck: ok")
    except Exception as e:
        print("opcheck: FAIL: %s" % e)
        failures.append("opcheck")

    def f(q, k, v):
        out, lse = ops.attention(q, k, v, causal=True)
        o2, _ = ops.attention(q, k, v, window=(64, 0), softcap=30.0)
        return out * 2 + o2, lse

    with torch.no_grad():
        want = f(q, k, v)
        e1, _ = fagen.attention(q, k, v, causal=True)
        e2, _ = fagen.attention(q, k, v, window=(64, 0), softcap=30.0)
        g = torch.compile(f, fullgraph=True)
        got = g(q, k, v)
        got = g(q, k, v)       # the compiled graph, not the tracing run
    errs = (rel(want[0], e1 * 2 + e2), rel(got[0], want[0]),
            rel(got[1], want[1]))
    ok = max(errs) < 1e-2
    print("torch.compile(fullgraph=True) of ops.attention: rel err %.1e "
          "(op vs fagen.attention), %.1e, %.1e (compiled vs eager) -> %s"
          % (errs + ("ok" if ok else "FAIL",)))
    if not ok:
        failures.append("compile")


def transformers_check():
    try:
        import fagen.integrations.transformers as ft
        ft.register()
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print("transformers: %s: skipped" % e)
        return
    cfg = dict(hidden_size=1024, num_attention_heads=8, num_key_value_heads=2,
               head_dim=128, intermediate_size=2048, num_hidden_layers=2,
               vocab_size=1000, max_position_embeddings=2048)
    torch.manual_seed(2)
    ids = torch.randint(0, 1000, (2, 65), device=dev)
    full, step = {}, {}
    with torch.no_grad():
        for impl, dt in (("eager", torch.float64), ("sdpa", torch.bfloat16),
                         ("fagen", torch.bfloat16)):
            torch.manual_seed(3)
            m = LlamaForCausalLM(LlamaConfig(attn_implementation=impl,
                                             **cfg)).to(dev, dt).eval()
            full[impl] = m(ids).logits.double()
            pre = m(ids[:, :-1], use_cache=True)
            step[impl] = m(ids[:, -1:], past_key_values=pre.past_key_values,
                           use_cache=True).logits.double()
    for what, d in (("prefill 65", full), ("decode 1 after 64", step)):
        e_fa, e_sd = rel(d["fagen"], d["eager"]), rel(d["sdpa"], d["eager"])
        ok = e_fa <= max(2 * e_sd, 1e-2)
        print("transformers Llama attn_implementation='fagen', %s: logits "
              "rel err vs float64: fagen %.2e, sdpa %.2e -> %s"
              % (what, e_fa, e_sd, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("transformers " + what)


def rows_check():
    torch.manual_seed(2)
    x = torch.randn(37, 1000, device=dev, dtype=torch.bfloat16)
    w = torch.randn(1000, device=dev, dtype=torch.bfloat16)
    b = torch.randn(1000, device=dev, dtype=torch.bfloat16)
    try:
        torch.library.opcheck(torch.ops.fagen.softmax.default,
                              (x.clone().requires_grad_(),))
        torch.library.opcheck(torch.ops.fagen.softmax_backward.default,
                              (torch.softmax(x.float(), -1).to(x.dtype),
                               torch.randn_like(x)))
        torch.library.opcheck(torch.ops.fagen.layer_norm.default,
                              (x, w, b, 1e-5))
        print("row ops opcheck: ok")
    except Exception as e:      # opcheck raises what it found
        print("row ops opcheck: FAIL: %s" % e)
        failures.append("row ops opcheck")

    def f(x, w, b):
        return ops.softmax(ops.layer_norm(x, w, b, eps=1e-5) * 2.0)

    xe = x.clone().requires_grad_()
    ye = fagen.softmax(fagen.layer_norm(x, w, b, eps=1e-5) * 2.0)
    xg = x.clone().requires_grad_()
    yg = torch.compile(lambda t: ops.softmax(t * 2.0), fullgraph=True)(xg)
    yr = fagen.softmax(xe * 2.0)
    yc = torch.compile(f, fullgraph=True)(x, w, b)
    g = torch.randn_like(x)
    yg.backward(g)
    yr.backward(g)
    ok = torch.equal(yc, ye) and torch.equal(xg.grad, xe.grad)
    print("row ops under torch.compile(fullgraph=True): %s" % (
        "ok" if ok else "FAIL"))
    if not ok:
        failures.append("row ops compile")


def main():
    compile_check()
    rows_check()
    transformers_check()
    if failures:
        print("FAILED: %s" % ", ".join(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
