"""test_python_linear.py: fagen.linear (fg_linear on the shipped GEMM,
schedules/gemm_ws_sm90.fa; gemm_ws_sm100.fa on sm_100) and its autograd
backward on the GPU against float64 (issue #26).

Every case draws fresh inputs (randn, rounded to the dtype) and runs
twice, the output poisoned with NaN first (out= where given, else by
freeing a NaN tensor of its size just before the call, which PyTorch's
caching allocator hands back: each line says whether it did), and checks
the two runs bitwise equal.  The reference is float64 from the same
rounded inputs: z = scale * x W^T + bias, y = act(z) + residual.  Per
element |y - ref| <= rtol |ref| + ztol |z| + 2^-20 mag: rtol 8e-3 (bf16)
or 2e-3 (f16), the output's rounding with margin; ztol 1e-3 with GELU
(the kernel's tanh is tanh.approx, about 2^-11 relative), 1e-5
otherwise; mag = |scale| |x| |W|^T + |bias| + |residual|, the size of
the terms the float32 accumulator and epilogue add (16 float32 ulps of
it: where they cancel, ref is small but their rounding is not).

  forward   M in {1, 17, 1000, 4097} x N in {8, 136, 1000} x K in {8,
            72, 1000, 4096}, bf16 and f16, without an epilogue and with
            all of it (scale 0.5, bias, GELU, residual); then every
            combination of scale, bias, activation (none, gelu_tanh,
            silu) and residual at two shapes; [2, 3, K] inputs, a
            non-contiguous x, x 2 bytes off 16-byte alignment (copied),
            out=, a side stream, K = 0 (computed by PyTorch), empty
            problems.
  backward  torch.autograd.grad of y with dy randn, against float64
            autograd of the same formula: dx, dW, dbias per element
            within rtol of |ref| plus rtol * 1e-2 of the tensor's max
            |ref|; dresidual bitwise dy.
  ops       torch.ops.fagen.linear passes torch.library.opcheck and runs
            under torch.compile(fullgraph=True), forward and backward,
            the forward bitwise as eagerly, the gradients within twice
            the backward's bound of eager's (inductor fuses its float32
            ops in its own order; both are rounded).
  errors    bad dtypes, K or N not a multiple of 8, mismatched shapes,
            plain 'gelu', out overlapping an input: each raises with its
            text before (or, for K and N, from) libfagen.

One line per case and a summary; exit 1 on any failure, 77 (SKIP)
without PyTorch or an sm_90 / sm_100 GPU.  --quick: the shape sweep at
M in {17, 4097} only.
"""
import contextlib
import math
import sys

SKIP = 77

try:
    import torch
except ImportError:
    print("no PyTorch: skipping")
    sys.exit(SKIP)
import fagen

if not torch.cuda.is_available() or \
        torch.cuda.get_device_capability() not in ((9, 0), (10, 0)):
    print("no sm_90 or sm_100 GPU: skipping")
    sys.exit(SKIP)

dev = torch.device("cuda")
failures = []
ncases = 0
RTOL = {torch.bfloat16: 8e-3, torch.float16: 2e-3}
ZTOL = {None: 1e-5, "gelu_tanh": 1e-3, "silu": 1e-5}
MS = [1, 17, 1000, 4097]
NS = [8, 136, 1000]
KS = [8, 72, 1000, 4096]
DTYPES = [torch.bfloat16, torch.float16]
ACTS = [None, "gelu_tanh", "silu"]


def short(dt):
    return str(dt)[6:]


@contextlib.contextmanager
def freed_poison(shape, dtype):
    """A NaN tensor of shape freed on entry, so the caching allocator
    hands it to the call; yields its address."""
    t = torch.full(shape, math.nan, dtype=dtype, device=dev)
    torch.cuda.synchronize()
    ptr = t.data_ptr()
    del t
    yield ptr


def on(stream):
    return torch.cuda.stream(stream) if stream is not None else \
        contextlib.nullcontext()


def same(a, b):
    return (a is None and b is None) or torch.equal(a.view(torch.int16),
                                                    b.view(torch.int16))


def maxerr(err):
    return err.max().item() if err.numel() else 0.0


def verdict(name, ok, text):
    print("%s: %s -> %s" % (name, text, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def raised(name, e):
    print("%s: raised %s -> FAIL" % (name, str(e).splitlines()[0]))
    failures.append(name)


def act64(z, act):
    if act == "gelu_tanh":
        return 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) *
                                         (z + 0.044715 * z ** 3)))
    if act == "silu":
        return z * torch.sigmoid(z)
    return z


def inputs(lead, n, k, dtype, bias, resid, requires_grad=False):
    x = torch.randn(*lead, k, device=dev).to(dtype)
    w = (torch.randn(n, k, device=dev) / math.sqrt(max(k, 1))).to(dtype)
    b = torch.randn(n, device=dev).to(dtype) if bias else None
    r = torch.randn(*lead, n, device=dev).to(dtype) if resid else None
    if requires_grad:
        x, w = x.requires_grad_(), w.requires_grad_()
        b = b.requires_grad_() if b is not None else None
        r = r.requires_grad_() if r is not None else None
    return x, w, b, r


def reference(x, w, b, r, scale, act):
    """float64 (z, y) of the rounded inputs, y differentiable in them
    where they require grad."""
    x64, w64 = x.double(), w.double()
    z = torch.matmul(x64, w64.t()) * (1.0 if scale is None else scale)
    if b is not None:
        z = z + b.double()
    y = act64(z, act)
    if r is not None:
        y = y + r.double()
    return z, y


def magnitude(x, w, b, r, scale):
    """float64 |scale| |x| |W|^T + |bias| + |residual|: the size of the
    terms the kernel adds in float32."""
    mag = torch.matmul(x.double().abs(), w.double().abs().t()) * abs(
        1.0 if scale is None else scale)
    if b is not None:
        mag = mag + b.double().abs()
    if r is not None:
        mag = mag + r.double().abs()
    return mag


def yerror(y, z, ref, mag, dtype, act):
    """Per element |y - ref| over the bound in the header: <= 1 passes
    (NaN fails)."""
    bound = RTOL[dtype] * ref.abs() + ZTOL[act] * z.abs() + \
        2.0 ** -20 * mag + 1e-30
    return (y.double() - ref).abs() / bound


def run(x, w, b, r, act, scale, out=None, stream=None):
    """One fagen.linear, its output poisoned: (y, whether it landed in
    the poisoned memory)."""
    shape = tuple(x.shape[:-1]) + (w.shape[0],)
    if out is not None:
        out.fill_(math.nan)
        with on(stream):
            y = fagen.linear(x, w, b, activation=act, residual=r,
                             scale=scale, out=out)
        torch.cuda.synchronize()
        return y, y is out
    with freed_poison(shape, x.dtype) as p, on(stream):
        y = fagen.linear(x, w, b, activation=act, residual=r, scale=scale)
    torch.cuda.synchronize()
    return y, y.data_ptr() == p


def fwd_case(lead, n, k, dtype, bias=False, resid=False, act=None,
             scale=None, name=None, make=None, out=False, stream=None):
    global ncases
    ncases += 1
    m = math.prod(lead)
    name = name or "linear %s M=%d N=%d K=%d%s%s%s%s" % (
        short(dtype), m, n, k, "" if scale is None else " scale",
        " bias" if bias else "", " " + act if act else "",
        " residual" if resid else "")
    x, w, b, r = inputs(lead, n, k, dtype, bias, resid)
    xin = make(x) if make is not None else x
    o = torch.empty(tuple(lead) + (n,), dtype=dtype, device=dev) \
        if out else None
    try:
        with torch.no_grad():
            y1, p1 = run(xin, w, b, r, act, scale, o, stream)
            y1 = y1.clone()
            y2, p2 = run(xin, w, b, r, act, scale, o, stream)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    z, ref = reference(x, w, b, r, scale, act)
    err = yerror(y1, z, ref, magnitude(x, w, b, r, scale), dtype, act)
    ok = y1.shape == ref.shape and y1.dtype == dtype and \
        bool((err <= 1).all())
    rep = same(y1, y2)
    verdict(name, ok and rep, "err %.2f of the bound, repeat %s, poisoned "
            "%s" % (maxerr(err), "bitwise" if rep else "DIFFERS",
                    "yes" if p1 and p2 else "not reused"))


def gerror(g, ref):
    """Per element |g - ref| / (rtol |ref| + rtol 1e-2 max |ref|), rtol
    the dtype's."""
    rtol = RTOL[g.dtype]
    big = ref.abs().max().item() if ref.numel() else 0.0
    return (g.double() - ref).abs() / (rtol * ref.abs() + rtol * 1e-2 *
                                       big + 1e-12)


def bwd_case(lead, n, k, dtype, bias=False, resid=False, act=None,
             scale=None, name=None):
    global ncases
    ncases += 1
    m = math.prod(lead)
    name = name or "backward %s M=%d N=%d K=%d%s%s%s%s" % (
        short(dtype), m, n, k, "" if scale is None else " scale",
        " bias" if bias else "", " " + act if act else "",
        " residual" if resid else "")
    x, w, b, r = inputs(lead, n, k, dtype, bias, resid, requires_grad=True)
    leaves = [t for t in (x, w, b, r) if t is not None]
    dy = torch.randn(tuple(lead) + (n,), device=dev).to(dtype)
    try:
        grads = []
        for _ in range(2):
            y = fagen.linear(x, w, b, activation=act, residual=r,
                             scale=scale)
            grads.append(torch.autograd.grad(y, leaves, dy))
        torch.cuda.synchronize()
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    l64 = [t.detach().double().requires_grad_() for t in leaves]
    it = iter(l64)
    x64, w64 = next(it), next(it)
    b64 = next(it) if b is not None else None
    r64 = next(it) if r is not None else None
    _, ref = reference(x64, w64, b64, r64, scale, act)
    refs = torch.autograd.grad(ref, l64, dy.double())
    errs, ok = [], y.dtype == dtype
    for t, g, gr in zip(leaves, grads[0], refs):
        if t is r:
            ok = ok and same(g, dy)     # dresidual is dy
            continue
        e = maxerr(gerror(g, gr))
        errs.append(e)
        ok = ok and g.dtype == t.dtype and g.shape == t.shape and e <= 1
    rep = all(same(p, q) for p, q in zip(grads[0], grads[1]))
    verdict(name, ok and rep, "grad err %s of the bound, repeat %s" % (
        ", ".join("%.2f" % e for e in errs), "bitwise" if rep else
        "DIFFERS"))


def k0_case(dtype):
    """K = 0: act(bias) + residual, computed by PyTorch, and its
    gradients (dx and dW empty, dbias and dresidual not)."""
    global ncases
    ncases += 1
    name = "linear %s K=0 bias gelu_tanh residual" % short(dtype)
    x, w, b, r = inputs((5,), 16, 0, dtype, True, True, requires_grad=True)
    try:
        y = fagen.linear(x, w, b, activation="gelu_tanh", residual=r)
        dy = torch.randn_like(y)
        g = torch.autograd.grad(y, (x, w, b, r), dy)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    ins = (x.detach(), w.detach(), b.detach(), r.detach(), None)
    z, ref = reference(*ins, "gelu_tanh")
    err = maxerr(yerror(y.detach(), z, ref, magnitude(*ins), dtype,
                        "gelu_tanh"))
    z64 = b.detach().double()
    c = math.sqrt(2 / math.pi)
    t = torch.tanh(c * (z64 + 0.044715 * z64 ** 3))
    d = 0.5 * (1 + t) + 0.5 * z64 * (1 - t * t) * c * (1 + 3 * 0.044715 *
                                                       z64 ** 2)
    db = (dy.double() * d).sum(0)
    ok = err <= 1 and g[0].shape == (5, 0) and g[1].shape == (16, 0) and \
        maxerr(gerror(g[2], db)) <= 1 and same(g[3], dy)
    verdict(name, ok, "err %.2f of the bound" % err)


def offset(k):
    """x at an address k elements past 16-byte alignment (copied)."""
    def make(x):
        flat = torch.empty(x.numel() + k, dtype=x.dtype, device=dev)
        v = flat[k:].view(x.shape)
        v.copy_(x)
        return v
    return make


def strided(x):
    """x as a non-contiguous view: every other column of a wider one."""
    wide = torch.empty(*x.shape[:-1], 2 * x.shape[-1], dtype=x.dtype,
                       device=dev)
    v = wide[..., ::2]
    v.copy_(x)
    return v


def layouts():
    bf, hf = torch.bfloat16, torch.float16
    fwd_case((2, 3), 136, 72, bf, True, True, "silu", 0.5,
             "linear bf16 [2, 3, 72] -> [2, 3, 136] epilogue")
    fwd_case((4, 33, 7), 1000, 1000, hf, True, False, "gelu_tanh",
             name="linear f16 [4, 33, 7, 1000] bias gelu_tanh")
    fwd_case((1000,), 136, 72, bf, True, True, name="linear bf16 x "
             "transposed (copied)", make=lambda x: x.t().contiguous().t())
    fwd_case((1000,), 136, 1000, hf, name="linear f16 x strided (copied)",
             make=strided)
    fwd_case((999,), 1000, 72, bf, True, False, "gelu_tanh", name="linear "
             "bf16 x 2 bytes off (copied)", make=offset(1))
    fwd_case((4097,), 1000, 4096, bf, True, True, "silu", 2.0, name="linear "
             "bf16 out=", out=True)
    fwd_case((300,), 136, 1000, hf, True, True, name="linear f16 side "
             "stream", stream=torch.cuda.Stream())
    fwd_case((300,), 136, 1000, bf, name="linear bf16 default stream",
             stream=torch.cuda.default_stream())
    fwd_case((300,), 136, 1000, hf, scale=0.0, bias=True, resid=True,
             name="linear f16 scale 0 (act(bias) + residual)")


def expect(exc, fn, want, status=None):
    global ncases
    ncases += 1
    try:
        fn()
    except exc as e:
        if want in str(e) and (status is None or e.status == status):
            print("error %r: ok" % want)
            return
        print("error %r: got %r -> FAIL" % (want, str(e)))
    except Exception as e:     # noqa: BLE001 (any other is a failure)
        print("error %r: got %s %r -> FAIL"
              % (want, type(e).__name__, str(e)))
    else:
        print("error %r: nothing raised -> FAIL" % want)
    failures.append("error " + want)


def errors():
    global ncases
    bf = torch.bfloat16
    x = torch.randn(8, 64, device=dev, dtype=bf)
    w = torch.randn(32, 64, device=dev, dtype=bf)
    li = fagen.linear
    expect(ValueError, lambda: li(x.float(), w.float()), "x is "
           "torch.float32: fagen.linear takes torch.bfloat16 or "
           "torch.float16")
    expect(ValueError, lambda: li(x, w.half()), "weight is torch.float16 "
           "and x torch.bfloat16: they must share a dtype")
    expect(ValueError, lambda: li(x.double(), w), "x is torch.float64")
    x7 = torch.randn(8, 7, device=dev, dtype=bf)
    w7 = torch.randn(32, 7, device=dev, dtype=bf)
    expect(fagen.FagenError, lambda: li(x7, w7), "fg_linear: K is 7: x's "
           "and weight's rows must be a multiple of 16 bytes (8 elements) "
           "for TMA", "FG_ERR_INVALID")
    expect(fagen.FagenError, lambda: li(x, w[:30]), "fg_linear: N is 30: "
           "out's rows must be a multiple of 16 bytes (8 elements) for "
           "TMA", "FG_ERR_INVALID")
    expect(ValueError, lambda: li(x, w[:, :32]), "weight has shape (32, "
           "32); it must be (N, K) with K = 64, x's last dim")
    expect(ValueError, lambda: li(x, w, w[0]), "bias has shape (64,); it "
           "must be (N,), N weight's rows, (32,)")
    expect(ValueError, lambda: li(x, w, residual=x), "residual has shape "
           "(8, 64); it must be the result's: x's outer dims, then N, "
           "(8, 32)")
    expect(ValueError, lambda: li(x, w, activation="gelu"), "activation "
           "is 'gelu': fagen has GELU's tanh form only; pass 'gelu_tanh'")
    expect(ValueError, lambda: li(x, w, activation="relu"), "activation "
           "is 'relu': use None, 'gelu_tanh' or 'silu'")
    expect(ValueError, lambda: li(x, w, scale=math.inf), "scale is inf")
    expect(ValueError, lambda: li(x.cpu(), w), "x is on cpu")
    expect(ValueError, lambda: li(x, w, out=x.view(-1)[:256].view(8, 32)),
           "out overlaps x: fagen.linear does not compute in place")
    expect(RuntimeError, lambda: li(x, w.clone().requires_grad_(),
                                    out=torch.empty(8, 32, dtype=bf,
                                                    device=dev)),
           "fagen.linear: out= is not differentiable")
    # empty problems: nothing to do
    ncases += 1
    e1 = li(torch.empty(0, 64, device=dev, dtype=bf), w)
    e2 = li(x, torch.empty(0, 64, device=dev, dtype=bf))
    g = torch.empty(0, 3, 64, device=dev, dtype=bf).requires_grad_()
    li(g, w).sum().backward()
    ok = e1.shape == (0, 32) and e2.shape == (8, 0) and \
        g.grad.shape == (0, 3, 64)
    verdict("empty problems", ok, "shapes")


def ops_check():
    """torch.ops.fagen.linear: opcheck, then torch.compile(fullgraph=True)
    of a forward and backward, bitwise as eager."""
    global ncases
    try:
        from fagen import ops
    except ImportError as e:
        print("fagen.ops: %s: skipped" % e)
        return
    ncases += 2
    bf = torch.bfloat16
    x = torch.randn(37, 72, device=dev, dtype=bf)
    w = torch.randn(136, 72, device=dev, dtype=bf)
    b = torch.randn(136, device=dev, dtype=bf)
    r = torch.randn(37, 136, device=dev, dtype=bf)
    try:
        torch.library.opcheck(torch.ops.fagen.linear.default,
                              (x.clone().requires_grad_(),
                               w.clone().requires_grad_(),
                               b.clone().requires_grad_(), r, 0.5, 1))
        torch.library.opcheck(torch.ops.fagen.linear.default,
                              (x, w, None, None, 1.0, 0))
        verdict("torch.ops.fagen.linear opcheck", True, "passed")
    except Exception as e:      # opcheck raises what it found
        verdict("torch.ops.fagen.linear opcheck", False, str(e)[:200])

    def f(x, w, b, r):
        return ops.linear(x, w, b, activation="silu", residual=r,
                          scale=0.5)

    xs = [x.clone().requires_grad_() for _ in range(2)]
    ws = [w.clone().requires_grad_() for _ in range(2)]
    dy = torch.randn(37, 136, device=dev, dtype=bf)
    try:
        ye = f(xs[0], ws[0], b, r)
        ye.backward(dy)
        yc = torch.compile(f, fullgraph=True)(xs[1], ws[1], b, r)
        yc.backward(dy)
        fwd = torch.equal(ye, yc)
        err = max(maxerr(gerror(xs[1].grad, xs[0].grad.double())),
                  maxerr(gerror(ws[1].grad, ws[0].grad.double())))
        verdict("ops.linear under torch.compile(fullgraph=True)",
                fwd and err <= 2, "forward %s eager's, gradients within "
                "%.2f of the bound (2: two roundings)" % (
                    "bitwise" if fwd else "NOT", err))
    except Exception as e:      # noqa: BLE001 (any is a failure)
        raised("ops.linear under torch.compile(fullgraph=True)", e)


def main():
    quick = "--quick" in sys.argv[1:]
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    ms = [17, 4097] if quick else MS
    for dtype in DTYPES:
        for m in ms:
            for n in NS:
                for k in KS:
                    fwd_case((m,), n, k, dtype)
                    fwd_case((m,), n, k, dtype, True, True, "gelu_tanh",
                             0.5)
    for dtype in DTYPES:
        for m, n, k in ((1000, 136, 72), (4097, 1000, 4096)):
            for act in ACTS:
                for scale in (None, -1.5):
                    for bias in (False, True):
                        for resid in (False, True):
                            fwd_case((m,), n, k, dtype, bias, resid, act,
                                     scale)
    layouts()
    for dtype in DTYPES:
        for act in ACTS:
            bwd_case((17,), 136, 72, dtype, True, True, act, 0.5)
        bwd_case((1000,), 1000, 4096, dtype, True, False, "gelu_tanh")
        bwd_case((4097,), 8, 1000, dtype, False, True, "silu")
        bwd_case((2, 3), 136, 72, dtype, True, True, None, -2.0)
        bwd_case((1,), 8, 8, dtype)
        k0_case(dtype)
    errors()
    ops_check()
    print("%d cases, %d failures%s" % (
        ncases, len(failures),
        ": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
