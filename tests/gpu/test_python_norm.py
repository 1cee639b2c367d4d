"""test_python_norm.py: fagen.rms_norm and its backward on the GPU against
float64 (issue #26).

Every case draws fresh inputs (torch.randn, a weight around 1, some rows
zero or scaled by 1000), runs fagen.rms_norm twice with every output
poisoned with NaN first (out= for y; residual_out and rstd by freeing
NaN tensors of their size just before the call, which PyTorch's caching
allocator hands back: each line says whether it did), and checks:

  y             against float64, |y - ref| <= rtol * |ref| + rtol / 100,
                rtol 2e-2 (bf16), 2e-3 (f16), 1e-5 (f32)
  rstd          float32, against float64 within 1e-5 relative
  residual_out  bitwise equal to x + residual as PyTorch adds them
  repeat        the two runs bitwise equal

over M in {1, 7, 256, 4099} x N in {1, 2, 7, 64, 1000, 1024, 4096, 5120,
8192, 16384, 32768} x bf16, f16, f32 x with and without a weight and a
residual (odd N runs with 1-element accesses), then layouts: [B, S, N]
inputs, a transposed (copied) x, addresses that are not 16-byte aligned
(narrower accesses), a side stream and torch's default stream.

The backward (fg_rms_norm_backward, rmsnorm_bwd.fa) through autograd:
torch.autograd.grad of y (and residual_out, with its own gradient) with
respect to x, weight and residual, against torch.autograd.grad of the
same formula on float64 copies of the inputs, over M in {1, 7, 256,
4099} x N in {1, 7, 64, 1000, 4096, 5120, 8192, and past one CTA, on a
cluster: 8200, 16384, 20000, 32768} x bf16, f16, f32 x with
and without a weight and a residual, tolerances relative to the
gradients' scale: dx and dresidual within rtol of the row's largest
|rstd * dy * weight| (plus |dresidual_out|), dW within rtol of its
column's norm, sqrt(sum over rows of (dy * s * rstd)^2), plus |dW| (less
half an f16 subnormal's spacing, 2^-25, for f16's dW);
rtol 3e-2 (bf16), 5e-3 (f16), 1e-4 (f32).  Two runs must give the same
bits, dW included (its partial sums are added in a fixed order); x and
residual get the same gradient.  Through the C call itself: the rows
of partials fg_rms_norm_backward_partials counts (min(M, 2 x SMs)),
more rows than that (poisoned with NaN: the rest must come back zeroed)
and too few (FG_ERR_INVALID).  Then bad arguments must raise before
libfagen runs (dtype mismatch, weight shape, CPU tensors, a
non-contiguous or overlapping out, out= under autograd, eps) and rows
too wide must raise FagenError FG_ERR_UNSUPPORTED: past a cluster of 8
CTAs (262144 / 131072 elements for the forward, 65536 / 32768 for the
backward).  One line per case and a summary;
exit 1 on any failure, 77 (SKIP) without PyTorch or an sm_90 / sm_100
GPU.  --quick: M in {7, 4099}, bf16 and f32 only.
"""
import ctypes
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
EPS = 1e-6
RTOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
INT = {torch.bfloat16: torch.int16, torch.float16: torch.int16,
       torch.float32: torch.int32}
MS = [1, 7, 256, 4099]
NS = [1, 2, 7, 64, 1000, 1024, 4096, 5120, 8192, 16384, 32768]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
GRAD_RTOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3, torch.float32: 1e-4}
GRAD_NS = [1, 7, 64, 1000, 4096, 5120, 8192, 8200, 16384, 20000, 32768]
WIDE = [(torch.bfloat16, 32776), (torch.float16, 65536),   # 2 CTAs
        (torch.bfloat16, 100000),                            # 4
        (torch.bfloat16, 131073), (torch.bfloat16, 262144),  # 8
        (torch.float32, 16388), (torch.float32, 131072)]


def short(dt):
    return str(dt)[6:]


def inputs(shape, dtype, weight, resid):
    """x, w, r of dtype: x randn with row 3 (when there) zero and row 5
    scaled by 1000 (by 100 for f16, whose squares would still fit f32 but
    whose values must fit f16); w = 1 + randn / 2; r randn."""
    x = torch.randn(shape, device=dev)
    rows = x.view(-1, shape[-1])
    if rows.shape[0] > 5:
        rows[3] = 0
        rows[5] *= 100 if dtype == torch.float16 else 1000
    w = (1 + torch.randn(shape[-1], device=dev) / 2).to(dtype) \
        if weight else None
    r = torch.randn(shape, device=dev).to(dtype) if resid else None
    return x.to(dtype), w, r


def reference(x, w, r):
    """float64 y, rstd of the (unrounded) sum x + r."""
    s = x.double() if r is None else x.double() + r.double()
    rstd = torch.rsqrt(s.pow(2).mean(-1) + EPS)
    y = s * rstd[..., None]
    return (y if w is None else y * w.double()), rstd


def poisoned(shape, dtype):
    return torch.full(shape, math.nan, dtype=dtype, device=dev)


def run(x, w, r, stream=None):
    """One fagen.rms_norm call with its outputs poisoned: (y, h, rstd,
    whether h and rstd landed in the poisoned memory)."""
    shape = x.shape
    y = poisoned(shape, x.dtype)
    hp = poisoned(shape, x.dtype) if r is not None else None
    rp = poisoned(shape[:-1], torch.float32)
    torch.cuda.synchronize()
    ptrs = {t.data_ptr() for t in (hp, rp) if t is not None}
    del hp, rp
    with torch.cuda.stream(stream) if stream is not None else \
            contextlib.nullcontext():
        res = fagen.rms_norm(x, w, eps=EPS, residual=r, out=y,
                             return_rstd=True)
    torch.cuda.synchronize()
    if r is None:
        y2, rstd = res
        h = None
    else:
        y2, h, rstd = res
    assert y2 is y
    reused = all(t.data_ptr() in ptrs for t in (h, rstd) if t is not None)
    return y, h, rstd, reused


def bits(t):
    return None if t is None else t.view(INT[t.dtype] if t.dtype in INT
                                         else torch.int32)


def same(a, b):
    return (a is None and b is None) or torch.equal(bits(a), bits(b))


def check(shape, dtype, weight, resid, name=None, make=None, stream=None):
    """One case; make(x) -> the tensor passed as x (a layout)."""
    global ncases
    ncases += 1
    m, n = math.prod(shape[:-1]), shape[-1]
    name = name or "%s M=%d N=%d%s%s" % (
        short(dtype), m, n, " weight" if weight else "",
        " residual" if resid else "")
    x, w, r = inputs(shape, dtype, weight, resid)
    xin = make(x) if make is not None else x
    try:
        a = run(xin, w, r, stream=stream)
        b = run(xin, w, r, stream=stream)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        print("%s: raised %s -> FAIL" % (name, str(e).splitlines()[0]))
        failures.append(name)
        return
    y, h, rstd, reused = a
    ref, rref = reference(x, w, r)
    rtol = RTOL[dtype]
    err = ((y.double() - ref).abs() / (ref.abs() + 1e-2))
    ok_y = bool((err <= rtol).all())          # NaN fails
    e_y = err.max().item() if err.numel() else 0.0
    rerr = ((rstd.double() - rref).abs() / rref)
    ok_r = bool((rerr <= 1e-5).all())
    e_r = rerr.max().item() if rerr.numel() else 0.0
    ok_h = h is None or same(h, x + r)
    rep = same(a[0], b[0]) and same(a[1], b[1]) and same(a[2], b[2])
    ok = ok_y and ok_r and ok_h and rep
    print("%s: y err %.1e (tol %.0e), rstd err %.1e%s, repeat %s, "
          "poisoned %s -> %s" % (
              name, e_y, rtol, e_r,
              "" if h is None else ", residual_out %s" % (
                  "exact" if ok_h else "DIFFERS"),
              "bitwise" if rep else "DIFFERS",
              "all" if reused and b[3] else "y only",
              "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def grad_run(x, w, r, dy, dh):
    """fagen.rms_norm's forward and backward on leaf copies of x, w, r,
    with dy (and dh, residual_out's gradient): (dx, dw, dr), None where
    not an input.  Memory of the gradients' size is poisoned with NaN
    first, which the caching allocator may hand back."""
    for t in (x, x, w):
        if t is not None:
            poisoned(t.shape, t.dtype)
    poisoned((264 * 4, x.shape[-1]), torch.float32)
    ins = [None if t is None else t.clone().requires_grad_()
           for t in (x, w, r)]
    out = fagen.rms_norm(ins[0], ins[1], eps=EPS, residual=ins[2])
    outs, grads = ((out,), (dy,)) if r is None else (out, (dy, dh))
    given = [t for t in ins if t is not None]
    got = iter(torch.autograd.grad(outs, given, grads))
    torch.cuda.synchronize()
    return tuple(None if t is None else next(got) for t in ins)


def grad_reference(x, w, r, dy, dh):
    """float64 autograd of the same formula: (dx, dw, dr), the rows'
    scale for dx and dr and the columns' for dw."""
    ins = [None if t is None else t.double().requires_grad_()
           for t in (x, w, r)]
    s = ins[0] if r is None else ins[0] + ins[2]
    rstd = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS)
    y = s * rstd if w is None else s * rstd * ins[1]
    outs, grads = ((y,), (dy.double(),)) if r is None else \
        ((y, s), (dy.double(), dh.double()))
    given = [t for t in ins if t is not None]
    got = iter(torch.autograd.grad(outs, given, grads))
    ref = tuple(None if t is None else next(got) for t in ins)
    s, rstd = s.detach(), rstd.detach()
    g = dy.double() if w is None else dy.double() * w.double()
    row = (rstd * g).abs().amax(-1)
    if r is not None:
        row = row + dh.double().abs().amax(-1)
    col = None
    if w is not None:
        # with a residual the backward reads residual_out, x + r rounded
        # to the dtype: where they cancel, its rounding is their size's
        mag = s.abs() if r is None else x.double().abs() + r.double().abs()
        col = (dy.double() * mag * rstd).norm(dim=0) + ref[1].abs()
    return ref, row, col


def grad_check(m, n, dtype, weight, resid):
    """One backward case: against float64, twice bitwise."""
    global ncases
    ncases += 1
    name = "backward %s M=%d N=%d%s%s" % (
        short(dtype), m, n, " weight" if weight else "",
        " residual" if resid else "")
    x, w, r = inputs((m, n), dtype, weight, resid)
    dy = torch.randn(m, n, device=dev).to(dtype)
    dh = torch.randn(m, n, device=dev).to(dtype) if resid else None
    try:
        a = grad_run(x, w, r, dy, dh)
        b = grad_run(x, w, r, dy, dh)
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        print("%s: raised %s -> FAIL" % (name, str(e).splitlines()[0]))
        failures.append(name)
        return
    ref, row, col = grad_reference(x, w, r, dy, dh)
    rtol = GRAD_RTOL[dtype]
    errs, ok = [], True
    for what, got, want in zip(("dx", "dw", "dr"), a, ref):
        if got is None:
            continue
        e = (got.double() - want).abs()
        if what == "dw":
            # dW comes back in the weight's dtype: an f16 element below
            # its least normal (6.1e-5) is a subnormal, rounded to 2^-24
            # absolute, which no relative bound holds for tiny ones
            sub = 2.0 ** -25 if dtype == torch.float16 else 0.0
            e = (e - sub).clamp(min=0) / (col + 1e-300)
        else:
            e = e.amax(-1) / (row + 1e-300)
        worst = e.max().item() if e.numel() else 0.0
        ok &= bool((e <= rtol).all()) and got.dtype == dtype
        errs.append("%s %.1e" % (what, worst))
    rep = all(p is None or same(p, q) for p, q in zip(a, b))
    tied = r is None or same(a[0], a[2])
    ok = ok and rep and tied
    print("%s: %s (tol %.0e), repeat %s%s -> %s" % (
        name, ", ".join(errs), rtol, "bitwise" if rep else "DIFFERS",
        "" if r is None else ", dx %s dr" % ("==" if tied else "!="),
        "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def partials():
    """fg_rms_norm_backward through ctypes: the partial rows it counts,
    more rows than that (the rest zeroed), too few."""
    global ncases
    from fagen.norm import _NormBwdArgs, _Tensor, _desc, _run
    m, n = 4099, 4096
    x, w, _ = inputs((m, n), torch.bfloat16, True, False)
    dy = torch.randn(m, n, device=dev).to(torch.bfloat16)
    _, rstd = fagen.rms_norm(x, w, eps=EPS, return_rstd=True)
    dx = torch.empty_like(x)
    a = _NormBwdArgs(x=_desc(x, m, n), weight=_Tensor(ptr=w.data_ptr()),
                     dy=_desc(dy, m, n), rstd=rstd.data_ptr(),
                     dx=_desc(dx, m, n), dtype=1)
    p = ctypes.c_int64()
    _run(torch, "fg_rms_norm_backward_partials", _NormBwdArgs, a, dev,
         out=p)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    ncases += 1
    ok = p.value == min(m, 2 * sms)
    print("partials: %d rows for M=%d on %d SMs: %s" % (
        p.value, m, sms, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("partials count")
    dwp = torch.full((p.value + 37, n), math.nan, device=dev)
    a.dw_partial, a.dw_partial_rows = dwp.data_ptr(), p.value + 37
    _run(torch, "fg_rms_norm_backward", _NormBwdArgs, a, dev)
    torch.cuda.synchronize()
    (_, ref_w, _), _, col = grad_reference(x, w, None, dy, None)
    ncases += 1
    err = ((dwp.sum(0).double() - ref_w).abs() / col).max().item()
    ok = bool((dwp[p.value:] == 0).all()) and err <= 1e-4
    print("partials: 37 more rows zeroed, their sum's err %.1e: %s" % (
        err, "ok" if ok else "FAIL"))
    if not ok:
        failures.append("partials zeroed")
    a.dw_partial_rows = p.value - 1
    expect(fagen.FagenError, lambda: _run(
        torch, "fg_rms_norm_backward", _NormBwdArgs, a, dev),
        "fg_rms_norm_backward: dw_partial_rows is %d, fewer than the %d "
        "rows of partial sums" % (p.value - 1, p.value), "FG_ERR_INVALID")


def layouts():
    bf, hf, f32 = torch.bfloat16, torch.float16, torch.float32
    # [B, S, N]: the outer dims are rows
    check((2, 333, 4096), bf, True, True, "bf16 [2, 333, 4096] weight "
          "residual")
    check((3, 5, 7, 1000), f32, True, False, "f32 [3, 5, 7, 1000] weight")
    check((4096,), hf, True, True, "f16 [4096] weight residual")
    # a transposed x: copied to dense rows first
    check((777, 2048), bf, True, False, "bf16 x transposed (copied)",
          lambda x: x.t().contiguous().t())
    # addresses 2, 4 or 8 bytes past 16-byte alignment: narrower accesses

    def offset(k):
        def make(x):
            flat = torch.empty(x.numel() + k, dtype=x.dtype, device=dev)
            v = flat[k:].view(x.shape)
            v.copy_(x)
            return v
        return make
    check((999, 4096), bf, True, True, "bf16 x 2 bytes off (VEC 1)",
          offset(1))
    check((999, 4096), hf, True, False, "f16 x 4 bytes off (VEC 2)",
          offset(2))
    check((999, 4096), bf, False, False, "bf16 x 8 bytes off (VEC 4)",
          offset(4))
    check((999, 5120), f32, True, True, "f32 x 4 bytes off (VEC 1)",
          offset(1))
    check((4099, 8191), bf, True, False, "bf16 N=8191 (VEC 1, widest)")
    check((300, 4096), bf, True, True, "bf16 side stream",
          stream=torch.cuda.Stream())
    check((300, 4096), hf, True, False, "f16 default stream",
          stream=torch.cuda.default_stream())


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
        print("error %r: got %s %r -> FAIL" % (want, type(e).__name__,
                                              str(e)))
    else:
        print("error %r: nothing raised -> FAIL" % want)
    failures.append("error " + want)


def errors():
    x = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    w = torch.ones(64, device=dev, dtype=torch.bfloat16)
    rn = fagen.rms_norm
    expect(ValueError, lambda: rn(x, w.float()), "weight is torch.float32 "
           "and x torch.bfloat16: they must share a dtype")
    expect(ValueError, lambda: rn(x, w[:32]), "weight has shape (32,); it "
           "must be (N,) = (64,)")
    expect(ValueError, lambda: rn(x, w, residual=x[:4]), "residual has "
           "shape (4, 64); it must be x's, (8, 64)")
    expect(ValueError, lambda: rn(x.cpu()), "x is on cpu: fagen needs CUDA "
           "tensors")
    expect(ValueError, lambda: rn(x, w.cpu()), "weight is on cpu")
    expect(TypeError, lambda: rn(x.tolist()), "x must be a torch.Tensor")
    expect(ValueError, lambda: rn(x.to(torch.int32)), "x is torch.int32: "
           "fagen.rms_norm takes torch.bfloat16")
    expect(ValueError, lambda: rn(x.double()), "x is torch.float64")
    expect(ValueError, lambda: rn(x[0, 0]), "x is a 0-d tensor")
    expect(ValueError, lambda: rn(x, w, out=torch.empty_like(x).t().
                                  contiguous().t()),
           "out has strides (1, 8): it must be contiguous")
    expect(ValueError, lambda: rn(x, w, out=x), "out overlaps x: "
           "fagen.rms_norm does not normalize in place")
    big = torch.randn(16, 64, device=dev, dtype=torch.bfloat16)
    expect(ValueError, lambda: rn(big[:8], w, out=big[4:12]),
           "out overlaps x")
    expect(ValueError, lambda: rn(x, w, out=x.float()), "out is "
           "torch.float32 and x torch.bfloat16")
    expect(ValueError, lambda: rn(x, w, eps=-1.0), "eps is -1.0: it must "
           "be a finite number >= 0")
    expect(ValueError, lambda: rn(x, w, eps=math.nan), "eps is nan")
    expect(ValueError, lambda: rn(x, w, eps=1e300), "eps is 1e+300")
    expect(ValueError, lambda: rn(x, w, eps="1e-6"), "eps is '1e-6'")
    expect(RuntimeError, lambda: rn(x.clone().requires_grad_(), w,
                                    out=torch.empty_like(x)),
           "fagen.rms_norm: out= is not differentiable")
    # a non-contiguous input is copied, not refused
    global ncases
    ncases += 1
    y = rn(x.t().contiguous().t(), w)
    ok = torch.equal(y, rn(x, w))
    print("non-contiguous x copied: %s" % ("ok" if ok else "FAIL"))
    if not ok:
        failures.append("non-contiguous x")
    # rows wider than a cluster of 8 CTAs takes (issue #27)
    wide = torch.randn(2, 262145, device=dev, dtype=torch.bfloat16)
    expect(fagen.FagenError, lambda: rn(wide), "rows of 262145 elements "
           "are wider than a cluster of 8 CTAs takes", "FG_ERR_UNSUPPORTED")
    wide = torch.randn(2, 131073, device=dev, dtype=torch.float32)
    expect(fagen.FagenError, lambda: rn(wide), "131072 elements",
           "FG_ERR_UNSUPPORTED")
    # the backward's rows: a cluster of 8 CTAs' at most, 65536 16-bit or
    # 32768 f32 elements (with dW wanted, the count of its partial rows
    # says so first)
    for dt, n, wgrad, fn, most, hold in (
            (torch.bfloat16, 65537, True, "fg_rms_norm_backward_partials",
             65536, 16),
            (torch.float32, 32769, False, "fg_rms_norm_backward", 32768,
             8)):
        wide = torch.randn(2, n, device=dev, dtype=dt).requires_grad_()
        ww = torch.ones(n, device=dev, dtype=dt, requires_grad=wgrad)
        expect(fagen.FagenError, lambda: rn(wide, ww).sum().backward(),
               "%s: rows of %d elements are wider than a cluster of 8 "
               "CTAs takes: 512 threads a CTA holding %d elements of a "
               "row each, %d elements" % (fn, n, hold, most),
               "FG_ERR_UNSUPPORTED")
    # empty tensors: nothing to do
    ncases += 1
    e = rn(torch.empty(0, 64, device=dev, dtype=torch.bfloat16),
           torch.ones(64, device=dev, dtype=torch.bfloat16),
           return_rstd=True)
    z = rn(torch.empty(5, 0, device=dev), return_rstd=True)
    ok = e[0].shape == (0, 64) and e[1].shape == (0,) and \
        z[0].shape == (5, 0) and bool(z[1].isnan().all())
    print("empty tensors: %s" % ("ok" if ok else "FAIL"))
    if not ok:
        failures.append("empty tensors")


def main():
    quick = "--quick" in sys.argv[1:]
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    ms = [7, 4099] if quick else MS
    dts = [torch.bfloat16, torch.float32] if quick else DTYPES
    with torch.no_grad():
        for dtype in dts:
            for n in (x for x in NS if dtype != torch.float32 or x <= 16384):
                for m in ms:
                    for weight, resid in ((True, False), (True, True),
                                          (False, False), (False, True)):
                        check((m, n), dtype, weight, resid)
        layouts()
        # rows wider than a CTA: a cluster of 2, 4 or 8 CTAs shares each
        # (issue #27); 131073 takes 1-element accesses
        for dtype, n in WIDE:
            for m in (1, 7, 300):
                for weight, resid in ((True, False), (True, True),
                                      (False, False), (False, True)):
                    check((m, n), dtype, weight, resid)
    for dtype in dts:       # the backward: grad mode on
        for n in GRAD_NS:
            for m in ms:
                for weight, resid in ((True, False), (True, True),
                                      (False, False), (False, True)):
                    grad_check(m, n, dtype, weight, resid)
    partials()
    errors()            # grad mode on: the gradient check needs it
    print("%d cases, %d failures%s" % (ncases, len(failures),
                                        ": " + ", ".join(failures)
                                        if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
