"""test_python_kernels.py: fagen.layer_norm and fagen.softmax (forward and
autograd backward) on the GPU against float64 (issue #26).

Every case draws fresh inputs and runs twice, every output poisoned with
NaN first (out= for layer_norm's y; the others by freeing NaN tensors of
their size just before the call, which PyTorch's caching allocator hands
back: each line says whether it did), and checks the two runs bitwise
equal.  Tolerances per dtype, as tests/gpu/test_python_norm.py's: rtol
2e-2 (bf16), 2e-3 (f16), 1e-5 (f32).

  layer_norm  x randn, row 3 zero, row 5 scaled by 1000 (100 for f16),
              for 16-bit x row 6 shifted by 4 (a mean far from 0; in
              f32 the sums' rounding of a shifted mean is more than
              f32's tolerance where y is near 0); weight 1 + randn/2,
              bias randn, residual randn.  y: |y - ref| <= rtol * (|ref|
              + |bias| + 0.01); mean and rstd (float32): within 1e-5 of
              the row's scale (|mean| + std) and of rstd; residual_out
              bitwise x + residual as PyTorch adds them.
  softmax     x randn, row 3 zero, row 5 scaled by 10, row 6 with every
              third column -inf.  y: (|y - ref| - atol) / |ref| <= rtol
              (atol 1e-7 for f16's subnormals, 1e-37 otherwise); the
              backward, torch.autograd.grad(y, x, dy) with dy randn:
              against float64 autograd of the float64 softmax, per row
              max |dx - ref| <= rtol * max y * (|dy| + sum(|dy| * y))
              (dx from a rounded y is off by its rounding times that,
              however small dx is).

over M in {1, 7, 256, 4099} x N in {1, 2, 7, 64, 1000, 1024, 4096, 5120,
8192, 16384, 32768 (16-bit only)} x bf16, f16, f32 x (layer_norm) weight,
bias and residual combinations; then layouts (a [B, S, N] input, softmax
over another dim, a non-contiguous input, y.sum().backward(), a side
stream) and bad arguments, which must raise before libfagen runs.  One
line per case and a summary; exit 1 on any failure, 77 (SKIP) without
PyTorch or an sm_90 / sm_100 GPU.  --quick: M in {7, 4099}, bf16 and
f32 only.
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
EPS = 1e-5
RTOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
ATOL = {torch.bfloat16: 1e-37, torch.float16: 1e-7, torch.float32: 1e-37}
INT = {torch.bfloat16: torch.int16, torch.float16: torch.int16,
       torch.float32: torch.int32}
MS = [1, 7, 256, 4099]
NS = [1, 2, 7, 64, 1000, 1024, 4096, 5120, 8192, 16384, 32768]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
# (weight, bias, residual): each on and off, and every -D switch
FLAGS = [(True, True, False), (True, True, True), (False, False, False),
         (False, True, True), (True, False, False)]


def short(dt):
    return str(dt)[6:]


def poisoned(shape, dtype):
    return torch.full(shape, math.nan, dtype=dtype, device=dev)


@contextlib.contextmanager
def freed_poison(*specs):
    """NaN tensors of specs ((shape, dtype) pairs) freed on entry, so the
    caching allocator hands them to the call; yields their addresses."""
    ts = [poisoned(s, d) for s, d in specs]
    torch.cuda.synchronize()
    ptrs = {t.data_ptr() for t in ts}
    del ts
    yield ptrs


def on(stream):
    return torch.cuda.stream(stream) if stream is not None else \
        contextlib.nullcontext()


def bits(t):
    return None if t is None else t.view(INT[t.dtype] if t.dtype in INT
                                         else torch.int32)


def same(a, b):
    return (a is None and b is None) or torch.equal(bits(a), bits(b))


def maxerr(err):
    return err.max().item() if err.numel() else 0.0


def verdict(name, ok, text):
    print("%s: %s -> %s" % (name, text, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def raised(name, e):
    print("%s: raised %s -> FAIL" % (name, str(e).splitlines()[0]))
    failures.append(name)


# ---------------------------------------------------------------- layer_norm

def ln_inputs(shape, dtype, weight, bias, resid):
    x = torch.randn(shape, device=dev)
    rows = x.view(-1, shape[-1])
    if rows.shape[0] > 6:
        rows[3] = 0
        rows[5] *= 100 if dtype == torch.float16 else 1000
        if dtype != torch.float32:
            # f32 sums of a shifted row put its mean off by more than
            # f32's tolerance allows where y is near 0
            rows[6] += 4
    n = shape[-1]
    w = (1 + torch.randn(n, device=dev) / 2).to(dtype) if weight else None
    b = torch.randn(n, device=dev).to(dtype) if bias else None
    r = torch.randn(shape, device=dev).to(dtype) if resid else None
    return x.to(dtype), w, b, r


def ln_reference(x, w, b, r):
    """float64 y, mean, rstd of the (unrounded) sum x + r."""
    s = x.double() if r is None else x.double() + r.double()
    mean = s.mean(-1)
    var = (s - mean[..., None]).pow(2).mean(-1)
    rstd = torch.rsqrt(var + EPS)
    y = (s - mean[..., None]) * rstd[..., None]
    if w is not None:
        y = y * w.double()
    if b is not None:
        y = y + b.double()
    return y, mean, rstd, var.sqrt()


def ln_run(x, w, b, r, stream=None):
    """One fagen.layer_norm with its outputs poisoned: (y, h, mean, rstd,
    whether h, mean and rstd landed in the poisoned memory)."""
    y = poisoned(x.shape, x.dtype)
    specs = [(x.shape[:-1], torch.float32)] * 2
    if r is not None:
        specs.append((x.shape, x.dtype))
    with freed_poison(*specs) as ptrs, on(stream):
        res = fagen.layer_norm(x, w, b, eps=EPS, residual=r, out=y,
                               return_stats=True)
    torch.cuda.synchronize()
    if r is None:
        y2, mean, rstd = res
        h = None
    else:
        y2, h, mean, rstd = res
    assert y2 is y
    reused = all(t.data_ptr() in ptrs for t in (h, mean, rstd)
                 if t is not None)
    return y, h, mean, rstd, reused


def ln_case(shape, dtype, weight, bias, resid, name=None, make=None,
            stream=None):
    global ncases
    ncases += 1
    m, n = math.prod(shape[:-1]), shape[-1]
    name = name or "layer_norm %s M=%d N=%d%s%s%s" % (
        short(dtype), m, n, " weight" if weight else "",
        " bias" if bias else "", " residual" if resid else "")
    x, w, b, r = ln_inputs(shape, dtype, weight, bias, resid)
    xin = make(x) if make is not None else x
    try:
        one = ln_run(xin, w, b, r, stream)
        two = ln_run(xin, w, b, r, stream)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    y, h, mean, rstd, reused = one
    ref, mref, rref, sd = ln_reference(x, w, b, r)
    rtol = RTOL[dtype]
    # a bias adds: where it cancels the normalized term, y's rounding is
    # the bias's size, not y's
    floor = 1e-2 if b is None else b.double().abs() + 1e-2
    # and x - mean, computed in f32, is exact to 2^-22 of |x|: where the
    # row's spread is far below |x| (two close values), rstd magnifies
    # that, as in any f32 LayerNorm
    sx = x.double() if r is None else x.double() + r.double()
    cond = sx.abs() * rref[..., None] * (1.0 if w is None else
                                         w.double().abs()) * 2.0 ** -22
    err = (y.double() - ref).abs() / (ref.abs() + floor + cond / rtol)
    merr = (mean.double() - mref).abs() / (mref.abs() + sd + 1e-30)
    rerr = (rstd.double() - rref).abs() / rref
    ok_y = bool((err <= rtol).all())          # NaN fails
    ok_s = bool((merr <= 1e-5).all()) and bool((rerr <= 1e-5).all())
    ok_h = h is None or same(h, x + r)
    rep = all(same(p, q) for p, q in zip(one[:4], two[:4]))
    verdict(name, ok_y and ok_s and ok_h and rep,
            "y err %.1e (tol %.0e), mean err %.1e, rstd err %.1e%s, "
            "repeat %s, poisoned %s" % (
                maxerr(err), rtol, maxerr(merr), maxerr(rerr),
                "" if h is None else ", residual_out %s" % (
                    "exact" if ok_h else "DIFFERS"),
                "bitwise" if rep else "DIFFERS",
                "all" if reused and two[4] else "y only"))


# ---------------------------------------------------------------- softmax

def sm_inputs(shape, dtype):
    x = torch.randn(shape, device=dev)
    rows = x.view(-1, shape[-1])
    if rows.shape[0] > 6:
        rows[3] = 0
        rows[5] *= 10
        if shape[-1] > 1:               # not a whole row: that is NaN
            rows[6, ::3] = -math.inf    # a mask, column 0 of it too
    dy = torch.randn(shape, device=dev).to(dtype)
    return x.to(dtype), dy


def sm_run(x, dy, stream=None):
    """fagen.softmax of x (as a leaf that requires grad, at x's address),
    then its backward with dy, each output poisoned: (y, dx, whether both
    landed in poisoned memory)."""
    leaf = x.detach().requires_grad_()
    with freed_poison((x.shape, x.dtype)) as p1, on(stream):
        y = fagen.softmax(leaf)
    with freed_poison((x.shape, x.dtype)) as p2, on(stream):
        dx, = torch.autograd.grad(y, leaf, dy)
    torch.cuda.synchronize()
    return y.detach(), dx, y.data_ptr() in p1 and dx.data_ptr() in p2


def sm_error(y, ref, dtype):
    """(|y - ref| - atol) / |ref|, 0 where within atol: softmax's values
    are small, and f16's smallest are subnormal."""
    d = (y.double() - ref).abs() - ATOL[dtype]     # NaN stays NaN
    return torch.where(d <= 0, torch.zeros_like(d), d / ref.abs())


def dx_error(dx, dref, y64, dy):
    """Per row (the last dim), max |dx - dref| over max y * (|dy| +
    sum(|dy| * y)): dx = y * (dy - sum(dy * y)) from a y rounded to its
    dtype is off by that much times the rounding, however small dx is
    (a peaked row's dy - sum cancels)."""
    n = dx.shape[-1]
    dy = dy.double()
    scale = y64 * (dy.abs() + (dy.abs() * y64).sum(-1, keepdim=True))
    a = (dx.double() - dref).abs().reshape(-1, n).amax(-1)
    return a / (scale.reshape(-1, n).amax(-1) + 1e-30)


def sm_case(shape, dtype, name=None, make=None, stream=None):
    global ncases
    ncases += 1
    m, n = math.prod(shape[:-1]), shape[-1]
    name = name or "softmax %s M=%d N=%d" % (short(dtype), m, n)
    x, dy = sm_inputs(shape, dtype)
    xin = make(x) if make is not None else x
    try:
        one = sm_run(xin, dy, stream)
        two = sm_run(xin, dy, stream)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    y, dx, reused = one
    x64 = x.double().requires_grad_()
    ref = torch.softmax(x64, -1)
    dref, = torch.autograd.grad(ref, x64, dy.double())
    ref = ref.detach()
    rtol = RTOL[dtype]
    yerr = sm_error(y, ref, dtype)
    ok_y = bool((yerr <= rtol).all())       # NaN fails
    derr = dx_error(dx, dref, ref, dy)
    ok_d = bool((derr <= rtol).all())
    rep = same(one[0], two[0]) and same(one[1], two[1])
    verdict(name, ok_y and ok_d and rep,
            "y err %.1e (tol %.0e), dx err %.1e, repeat %s, poisoned %s" % (
                maxerr(yerr), rtol, maxerr(derr),
                "bitwise" if rep else "DIFFERS",
                "all" if reused and two[2] else "not all"))


def sm_forward(shape, dtype):
    """fagen.softmax alone (no gradient), twice, each output in a block
    the caching allocator held NaNs in just before."""
    global ncases
    ncases += 1
    name = "softmax %s M=%d N=%d (forward)" % (short(dtype), shape[0],
                                               shape[-1])
    x, _ = sm_inputs(shape, dtype)
    outs = []
    with torch.no_grad():
        for _ in range(2):
            poison = torch.full_like(x, float("nan"))
            del poison
            try:
                outs.append(fagen.softmax(x))
            except (fagen.FagenError, RuntimeError, ValueError) as e:
                raised(name, e)
                return
    ref = torch.softmax(x.double(), -1)
    yerr = sm_error(outs[0], ref, dtype)
    ok = bool((yerr <= RTOL[dtype]).all())
    rep = same(outs[0], outs[1])
    verdict(name, ok and rep, "y err %.1e (tol %.0e), repeat %s" % (
        maxerr(yerr), RTOL[dtype], "bitwise" if rep else "DIFFERS"))


# ---------------------------------------------------------------- layouts

def offset(k):
    """x at an address k elements past 16-byte alignment."""
    def make(x):
        flat = torch.empty(x.numel() + k, dtype=x.dtype, device=dev)
        v = flat[k:].view(x.shape)
        v.copy_(x)
        return v
    return make


def sm_dim_case(shape, dim, dtype):
    """softmax over another dim, with gradients: against torch.softmax of
    float64 over that dim."""
    global ncases
    ncases += 1
    name = "softmax %s %s dim=%d" % (short(dtype), list(shape), dim)
    x = torch.randn(shape, device=dev).to(dtype).requires_grad_()
    dy = torch.randn(shape, device=dev).to(dtype)
    try:
        y = fagen.softmax(x, dim)
        torch.autograd.backward(y, dy)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    x64 = x.detach().double().requires_grad_()
    ref = torch.softmax(x64, dim)
    dref, = torch.autograd.grad(ref, x64, dy.double())
    rtol = RTOL[dtype]
    ok_y = bool((sm_error(y, ref.detach(), dtype) <= rtol).all())
    last = [t.movedim(dim, -1) for t in (x.grad, dref, ref.detach(), dy)]
    derr = dx_error(*last)
    ok = ok_y and y.shape == x.shape and bool((derr <= rtol).all())
    verdict(name, ok, "dx err %.1e" % maxerr(derr))


def sum_backward(dtype):
    """y.sum().backward(): x.grad = y * (1 - sum(y)), from fagen's own y
    (the kernel's contract), in float64."""
    global ncases
    ncases += 1
    name = "softmax %s y.sum().backward()" % short(dtype)
    x = torch.randn(300, 1000, device=dev).to(dtype).requires_grad_()
    try:
        y = fagen.softmax(x)
        y.sum().backward()
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    y64 = y.detach().double()
    ref = y64 * (1 - y64.sum(-1, keepdim=True))
    err = (x.grad.double() - ref).abs()
    # dx is y times a sum's rounding error: tiny against y itself
    ok = bool((err <= RTOL[dtype] * y64 + ATOL[dtype]).all())
    verdict(name, ok, "max |dx - ref| %.1e" % maxerr(err))


def layouts():
    bf, hf, f32 = torch.bfloat16, torch.float16, torch.float32
    ln_case((2, 333, 4096), bf, True, True, True, "layer_norm bf16 "
            "[2, 333, 4096] weight bias residual")
    ln_case((777, 2048), bf, True, True, False, "layer_norm bf16 x "
            "transposed (copied)", lambda x: x.t().contiguous().t())
    ln_case((999, 4096), bf, True, True, True, "layer_norm bf16 x 2 bytes "
            "off (VEC 1)", offset(1))
    ln_case((999, 5120), f32, True, True, False, "layer_norm f32 x 8 bytes "
            "off (VEC 2)", offset(2))
    ln_case((4099, 8191), hf, True, True, False, "layer_norm f16 N=8191 "
            "(VEC 1)")
    ln_case((300, 4096), bf, True, True, True, "layer_norm bf16 side "
            "stream", stream=torch.cuda.Stream())
    sm_case((3, 5, 7, 1000), f32, "softmax f32 [3, 5, 7, 1000]")
    sm_case((999, 4096), bf, "softmax bf16 x 2 bytes off (VEC 1)",
            offset(1))
    sm_case((777, 2048), hf, "softmax f16 x transposed (copied)",
            lambda x: x.t().contiguous().t())
    sm_case((4099, 8191), bf, "softmax bf16 N=8191 (VEC 1)")
    sm_case((300, 4096), hf, "softmax f16 side stream",
            stream=torch.cuda.Stream())
    sm_case((300, 4096), f32, "softmax f32 default stream",
            stream=torch.cuda.default_stream())
    sm_dim_case((1000, 300), 0, bf)
    sm_dim_case((4, 64, 33), 1, f32)
    sm_dim_case((4, 64, 33), -3, hf)
    for dt in DTYPES:
        sum_backward(dt)


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
    x = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    w = torch.ones(64, device=dev, dtype=torch.bfloat16)
    ln, sm = fagen.layer_norm, fagen.softmax
    expect(ValueError, lambda: ln(x, w, w.float()), "bias is torch.float32 "
           "and x torch.bfloat16: they must share a dtype")
    expect(ValueError, lambda: ln(x, w, w[:32]), "bias has shape (32,); it "
           "must be (N,) = (64,)")
    expect(ValueError, lambda: ln(x, w, residual=x[:4]), "residual has "
           "shape (4, 64); it must be x's, (8, 64)")
    expect(ValueError, lambda: ln(x.cpu()), "x is on cpu: fagen needs CUDA "
           "tensors")
    expect(ValueError, lambda: ln(x, bias=w.cpu()), "bias is on cpu")
    expect(ValueError, lambda: ln(x.double()), "x is torch.float64: "
           "fagen.layer_norm takes torch.bfloat16")
    expect(ValueError, lambda: ln(x, out=x), "out overlaps x: "
           "fagen.layer_norm does not normalize in place")
    expect(ValueError, lambda: ln(x, out=torch.empty_like(x).t().
                                  contiguous().t()),
           "out has strides (1, 8): it must be contiguous")
    expect(ValueError, lambda: ln(x, eps=-1.0), "eps is -1.0: it must be "
           "a finite number >= 0")
    expect(ValueError, lambda: ln(x, eps=math.inf), "eps is inf")
    expect(RuntimeError, lambda: ln(x, w.clone().requires_grad_()),
           "fagen.layer_norm has no backward yet")
    expect(TypeError, lambda: sm(x.tolist()), "x must be a torch.Tensor")
    expect(ValueError, lambda: sm(x.cpu()), "x is on cpu")
    expect(ValueError, lambda: sm(x.to(torch.int32)), "x is torch.int32: "
           "fagen.softmax takes torch.bfloat16")
    expect(ValueError, lambda: sm(x[0, 0]), "x is a 0-d tensor")
    expect(IndexError, lambda: sm(x, 2), "dim is 2: x has 2 dimensions, "
           "so it must be in [-2, 1]")
    expect(IndexError, lambda: sm(x, -3), "dim is -3")
    expect(TypeError, lambda: sm(x, None), "dim must be an int, not "
           "NoneType")
    # rows wider than a cluster of 8 CTAs takes (issue #27)
    wide = torch.randn(2, 131073, device=dev, dtype=torch.bfloat16)
    expect(fagen.FagenError, lambda: ln(wide), "fg_layer_norm: rows of "
           "131073 elements are wider than a cluster of 8 CTAs takes",
           "FG_ERR_UNSUPPORTED")
    wide = torch.randn(2, 262145, device=dev, dtype=torch.bfloat16)
    expect(fagen.FagenError, lambda: sm(wide), "fg_softmax: rows of 262145 "
           "elements are wider than a cluster of 8 CTAs takes",
           "FG_ERR_UNSUPPORTED")
    # empty tensors: nothing to do
    ncases += 1
    e = ln(torch.empty(0, 64, device=dev, dtype=torch.bfloat16),
           return_stats=True)
    z = ln(torch.empty(5, 0, device=dev), return_stats=True)
    s = sm(torch.empty(0, 64, device=dev, dtype=torch.float16))
    g = torch.empty(3, 0, device=dev).requires_grad_()
    sm(g).sum().backward()
    ok = e[0].shape == (0, 64) and e[2].shape == (0,) and \
        z[0].shape == (5, 0) and bool(z[1].isnan().all()) and \
        bool(z[2].isnan().all()) and s.shape == (0, 64) and \
        g.grad.shape == (3, 0)
    verdict("empty tensors", ok, "shapes")


def main():
    quick = "--quick" in sys.argv[1:]
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    ms = [7, 4099] if quick else MS
    dts = [torch.bfloat16, torch.float32] if quick else DTYPES
    for dtype in dts:
        for n in (x for x in NS if dtype != torch.float32 or x <= 16384):
            for m in ms:
                with torch.no_grad():
                    for weight, bias, resid in FLAGS:
                        ln_case((m, n), dtype, weight, bias, resid)
                sm_case((m, n), dtype)
    # rows wider than a CTA: clusters of 2, 4, 8 CTAs (issue #27)
    for dtype, n in ((torch.bfloat16, 32776), (torch.float16, 65536),
                     (torch.bfloat16, 131071), (torch.float32, 16388),
                     (torch.float32, 65536)):
        for m in (1, 7, 300):
            with torch.no_grad():
                for weight, bias, resid in FLAGS:
                    ln_case((m, n), dtype, weight, bias, resid)
    # the softmax backward's threads hold half as much, so 262144 is
    # forward only
    for dtype, n in ((torch.bfloat16, 32776), (torch.float16, 65536),
                     (torch.bfloat16, 131071), (torch.float32, 16388),
                     (torch.float32, 65536)):
        for m in (1, 7, 300):
            sm_case((m, n), dtype)
    for m in (1, 7, 300):
        sm_forward((m, 262144), torch.bfloat16)
    layouts()
    errors()            # grad mode on: the gradient checks need it
    print("%d cases, %d failures%s" % (
        ncases, len(failures),
        ": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
