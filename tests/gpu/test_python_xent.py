"""test_python_xent.py: fagen.cross_entropy and fg_cross_entropy on the
GPU against float64 (issue #26).

Every case draws fresh inputs: logits randn, row 3 zero, row 5 scaled by
100, row 6 with every third column -inf (never the target's); targets
uniform in [0, C), every fifth row from row 2 ignore_index (-100).
Then:

  kernel     fg_cross_entropy through the package's ctypes struct, its
             loss and lse buffers filled with NaN first, run twice: the
             runs bitwise equal; loss and lse (float32) against float64
             (torch.nn.functional.cross_entropy(reduction='none') and
             torch.logsumexp of the logits as float64), |err| / (1 +
             |lse|) <= 2e-5: the logits are exact in float32, so this is
             the kernel's own float32 error whatever the dtype; ignored
             rows' loss exactly 0, their lse the row's.
  none       fagen.cross_entropy(reduction='none', return_lse=True):
             bitwise the kernel's loss rounded to the logits' dtype, and
             its lse.
  mean, sum  against float64, |out - ref| / (|ref| + 1e-3) <= rtol of
             the dtype the result is rounded to: 2e-2 (bf16), 2e-3
             (f16), 5e-5 (f32).

over M in {1, 7, 256, 4099} (1, 7 and 256 for C of 32000 and more) x C
in {1, 2, 7, 64, 1000, 4096, 32000, 50257, 128256, 262144} x bf16, f16,
f32.  Then the backward, torch.autograd.grad of each reduction with a
random gradient, against float64 autograd of
torch.nn.functional.cross_entropy: per element |dx - ref| / (|ref| + g)
<= rtol, g the row's gradient of the loss (1 / count for 'mean'); other
layouts and targets (int32, an ignore_index inside [0, C), targets out
of range and past int32, [B, S, C] and 1-D logits, a non-contiguous and
a misaligned logits, a side stream, every row ignored, empty batches);
and bad arguments, which must raise before libfagen runs.  One line per
case and a summary; exit 1 on any failure, 77 (SKIP) without PyTorch or
an sm_90 / sm_100 GPU.  --quick: M in {7, 256}, bf16 and f32 only.
"""
import contextlib
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
from fagen import norm as _norm
from fagen import xent as _xent

if not torch.cuda.is_available() or \
        torch.cuda.get_device_capability() not in ((9, 0), (10, 0)):
    print("no sm_90 or sm_100 GPU: skipping")
    sys.exit(SKIP)
_norm._torch("cross_entropy")      # its dtype table, for kernel()

dev = torch.device("cuda")
failures = []
ncases = 0
KTOL = 2e-5                 # the kernel's float32 loss and lse
RTOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 5e-5}
INT = {torch.bfloat16: torch.int16, torch.float16: torch.int16,
       torch.float32: torch.int32}
MS = [1, 7, 256, 4099]
WIDE = 32000                # from here on, M in {1, 7, 256}
CS = [1, 2, 7, 64, 1000, 4096, 32000, 50257, 128256, 262144]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
IGNORE = -100


def short(dt):
    return str(dt)[6:]


def bits(t):
    return t.view(INT.get(t.dtype, torch.int32))


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and \
        torch.equal(bits(a), bits(b))


def maxerr(err):
    return err.max().item() if err.numel() else 0.0


def verdict(name, ok, text):
    print("%s: %s -> %s" % (name, text, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)


def raised(name, e):
    print("%s: raised %s -> FAIL" % (name, str(e).splitlines()[0]))
    failures.append(name)


def on(stream):
    return torch.cuda.stream(stream) if stream is not None else \
        contextlib.nullcontext()


def inputs(shape, dtype):
    """logits of shape and dtype, int64 targets of shape[:-1]."""
    c = shape[-1]
    x = torch.randn(shape, device=dev)
    t = torch.randint(0, c, shape[:-1], device=dev)
    rows, tf = x.view(-1, c), t.view(-1)
    if rows.shape[0] > 6:
        rows[3] = 0
        rows[5] *= 100
        if c > 3:           # every third column -inf, never the target
            rows[6, ::3] = -math.inf
            tf[6] = 1
    tf[2::5] = IGNORE
    return x.to(dtype), t


def reference(x, t, ignore=IGNORE):
    """float64 per-row loss (0 where ignored) and lse, [rows] each."""
    c = x.shape[-1]
    x64 = x.double().reshape(-1, c)
    tf = t.reshape(-1)
    loss = F.cross_entropy(x64, tf, ignore_index=ignore, reduction="none")
    return loss, torch.logsumexp(x64, -1)


def kernel(x, t, ignore=IGNORE, stream=None, raw=False):
    """fg_cross_entropy on x [..., C], its outputs NaN first: (loss,
    lse), float32 [rows].  The targets as fagen.cross_entropy gives them
    to the kernel (-1 where not counted), or raw: as they are, int32."""
    c = x.shape[-1]
    rows = x.numel() // c
    x2 = x.contiguous().view(rows, c)
    if raw:
        tgt = t.reshape(-1).to(torch.int32)
    else:
        tgt, _ = _xent._targets(torch, t, c, ignore)
    loss = torch.full((rows,), math.nan, device=dev)
    lse = torch.full((rows,), math.nan, device=dev)
    td = fagen._Tensor(ptr=tgt.data_ptr(), rank=1)
    td.dims[0] = rows
    a = _xent._XentArgs(logits=_norm._desc(x2, rows, c), target=td,
                        loss=loss.data_ptr(), lse=lse.data_ptr(),
                        dtype=_norm._DTYPES[x.dtype])
    with on(stream):
        _norm._run(torch, "fg_cross_entropy", _xent._XentArgs, a, dev)
    torch.cuda.synchronize()
    return loss, lse


def counted(t, c, ignore=IGNORE):
    tf = t.reshape(-1)
    return (tf >= 0) & (tf < c) & (tf != ignore)


def kernel_errors(loss, lse, rl, rs):
    """|err| / (1 + |lse|) of loss and lse against float64."""
    scale = 1 + rs.abs()
    return (loss.double() - rl).abs() / scale, \
        (lse.double() - rs).abs() / scale


def reduced_error(out, ref):
    return abs(out.double().item() - ref.item()) / (abs(ref.item()) + 1e-3)


def case(shape, dtype, name=None, make=None, ignore=IGNORE, tmake=None,
         stream=None, raw=False):
    global ncases
    ncases += 1
    c = shape[-1]
    rows = math.prod(shape[:-1])
    name = name or "cross_entropy %s M=%d C=%d" % (short(dtype), rows, c)
    x, t = inputs(shape, dtype)
    if tmake is not None:
        t = tmake(t)
    xin = make(x) if make is not None else x
    try:
        one = kernel(xin, t, ignore, stream, raw)
        two = kernel(xin, t, ignore, stream, raw)
        with on(stream):
            none, nlse = fagen.cross_entropy(xin, t, ignore_index=ignore,
                                             reduction="none",
                                             return_lse=True)
            mean = fagen.cross_entropy(xin, t, ignore_index=ignore)
            total = fagen.cross_entropy(xin, t, ignore_index=ignore,
                                        reduction="sum")
        torch.cuda.synchronize()
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    loss, lse = one
    valid = counted(t, c, ignore)
    # PyTorch raises for targets out of range: give it ignore_index there
    tref = torch.where(valid.view(t.shape), t.long(),
                       torch.full(t.shape, ignore, device=dev))
    rl, rs = reference(x, tref, ignore)
    lerr, serr = kernel_errors(loss, lse, rl, rs)
    ok_k = bool((lerr <= KTOL).all()) and bool((serr <= KTOL).all())
    ok_z = bool((loss[~valid] == 0).all())
    rep = same(one[0], two[0]) and same(one[1], two[1])
    ok_n = same(none, loss.to(dtype).view(t.shape)) and \
        same(nlse, lse.view(t.shape))
    n = valid.sum().double()
    rsum = rl.sum()
    rmean = rsum / n if n else torch.tensor(math.nan, dtype=torch.float64)
    if n:
        merr = reduced_error(mean, rmean)
        ok_m = merr <= RTOL[dtype]
    else:
        merr, ok_m = 0.0, bool(mean.isnan())
    serr_sum = reduced_error(total, rsum)
    ok_s = serr_sum <= RTOL[dtype] and mean.dtype == total.dtype == dtype
    verdict(name, ok_k and ok_z and rep and ok_n and ok_m and ok_s,
            "loss err %.1e, lse err %.1e (tol %.0e)%s, repeat %s, none "
            "%s, mean err %.1e, sum err %.1e (tol %.0e)" % (
                maxerr(lerr), maxerr(serr), KTOL,
                "" if ok_z else ", ignored rows NOT 0",
                "bitwise" if rep else "DIFFERS",
                "same" if ok_n else "DIFFERS", merr, serr_sum,
                RTOL[dtype]))


# ---------------------------------------------------------------- backward

def grad_case(shape, dtype, reduction, ignore=IGNORE):
    global ncases
    ncases += 1
    c = shape[-1]
    name = "backward %s %s %s%s" % (short(dtype), list(shape), reduction,
                                    "" if ignore == IGNORE else
                                    " ignore_index=%d" % ignore)
    x, t = inputs(shape, dtype)
    if ignore != IGNORE:    # PyTorch raises for -100 then
        t = torch.where(t == IGNORE, torch.full_like(t, ignore), t)
    leaf = x.detach().requires_grad_()
    try:
        out = fagen.cross_entropy(leaf, t, ignore_index=ignore,
                                  reduction=reduction)
        g = torch.randn(out.shape, device=dev).to(dtype)
        dx, = torch.autograd.grad(out, leaf, g)
        torch.cuda.synchronize()
    except (fagen.FagenError, RuntimeError, ValueError) as e:
        raised(name, e)
        return
    x64 = x.double().reshape(-1, c).requires_grad_()
    ref = F.cross_entropy(x64, t.reshape(-1), ignore_index=ignore,
                          reduction=reduction)
    g64 = g.double().reshape(ref.shape)
    dref, = torch.autograd.grad(ref, x64, g64)
    valid = counted(t, c, ignore).double()
    if reduction == "none":
        grow = g64.abs() * valid
    elif reduction == "mean":
        grow = (g64.abs() / valid.sum()).expand(valid.shape) * valid
    else:
        grow = g64.abs().expand(valid.shape) * valid
    err = (dx.double().reshape(-1, c) - dref).abs() / \
        (dref.abs() + grow[:, None] + 1e-30)
    ok = dx.dtype == dtype and dx.shape == x.shape and \
        bool((err <= RTOL[dtype]).all())
    verdict(name, ok, "dx err %.1e (tol %.0e)"
            % (maxerr(err), RTOL[dtype]))


# ---------------------------------------------------------------- layouts

def offset(k):
    """x at an address k elements past 16-byte alignment."""
    def make(x):
        flat = torch.empty(x.numel() + k, dtype=x.dtype, device=dev)
        v = flat[k:].view(x.shape)
        v.copy_(x)
        return v
    return make


def out_of_range(t):
    """Targets past the classes and past int32: not counted."""
    t = t.clone()
    tf = t.view(-1)
    tf[1::7] = 2 ** 40
    tf[2::7] = -(2 ** 33) - 5
    tf[4::7] = 1 << 30
    return t


def out_of_range32(c):
    """int32 targets past the classes, each kind in turn, given to the
    kernel as they are."""
    def make(t):
        t = t.to(torch.int32)
        tf = t.view(-1)
        for i, v in enumerate((c, c + 5, 2 ** 31 - 1, -1, -2 ** 31)):
            tf[i + 1::7] = v
        return t
    return make


def layouts():
    global ncases
    bf, hf, f32 = torch.bfloat16, torch.float16, torch.float32
    case((2, 333, 32000), bf, "cross_entropy bf16 [2, 333, 32000]")
    case((4, 5, 7, 1000), f32, "cross_entropy f32 [4, 5, 7, 1000]")
    case((50257,), bf, "cross_entropy bf16 1-D [50257]")
    case((777, 4096), bf, "cross_entropy bf16 logits transposed (copied)",
         lambda x: x.t().contiguous().t())
    case((999, 32000), bf, "cross_entropy bf16 logits 2 bytes off (VEC 1)",
         offset(1))
    case((999, 4096), f32, "cross_entropy f32 logits 8 bytes off (VEC 2)",
         offset(2))
    case((300, 50257), hf, "cross_entropy f16 side stream",
         stream=torch.cuda.Stream())
    case((300, 4096), f32, "cross_entropy f32 default stream",
         stream=torch.cuda.default_stream())
    case((1000, 4096), bf, "cross_entropy bf16 int32 targets",
         tmake=lambda t: t.to(torch.int32))
    case((1000, 1000), bf, "cross_entropy bf16 ignore_index=0", ignore=0)
    case((1000, 32000), f32, "cross_entropy f32 ignore_index=C+1",
         ignore=32001)
    case((1000, 4096), bf, "cross_entropy bf16 targets out of range",
         tmake=out_of_range)
    case((1000, 32000), bf, "cross_entropy bf16 int32 targets out of "
         "range, raw to the kernel", tmake=out_of_range32(32000), raw=True)
    case((64, 1000), hf, "cross_entropy f16 every row ignored",
         tmake=lambda t: torch.full_like(t, IGNORE))
    # empty batches: nothing launched
    ncases += 1
    e = torch.empty(0, 1000, device=dev, dtype=bf)
    te = torch.empty(0, dtype=torch.long, device=dev)
    none, lse = fagen.cross_entropy(e, te, reduction="none",
                                    return_lse=True)
    ok = none.shape == (0,) and lse.shape == (0,) and \
        bool(fagen.cross_entropy(e, te).isnan()) and \
        fagen.cross_entropy(e, te, reduction="sum").item() == 0
    g = e.clone().requires_grad_()
    with torch.enable_grad():
        fagen.cross_entropy(g, te, reduction="sum").backward()
    ok = ok and g.grad.shape == (0, 1000)
    verdict("empty batch", ok, "shapes, mean NaN, sum 0")


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
    x = torch.randn(8, 64, device=dev, dtype=torch.bfloat16)
    t = torch.zeros(8, dtype=torch.long, device=dev)
    ce = fagen.cross_entropy
    expect(ValueError, lambda: ce(x.cpu(), t), "logits is on cpu: fagen "
           "needs CUDA tensors")
    expect(ValueError, lambda: ce(x.double(), t), "logits is "
           "torch.float64: fagen.cross_entropy takes torch.bfloat16, "
           "torch.float16 or torch.float32")
    expect(ValueError, lambda: ce(x[0, 0], t), "logits is a 0-d tensor")
    expect(TypeError, lambda: ce(x.tolist(), t), "logits must be a "
           "torch.Tensor")
    expect(ValueError, lambda: ce(x, t.float()), "target is torch.float32: "
           "fagen.cross_entropy takes class indices of torch.int64 or "
           "torch.int32 (class probabilities are not supported)")
    expect(ValueError, lambda: ce(x, t.cpu()), "target is on cpu")
    expect(ValueError, lambda: ce(x, t[:4]), "target has shape (4,); it "
           "must be logits' without its last dim (the classes), (8,)")
    expect(ValueError, lambda: ce(x, t.view(2, 4)), "target has shape "
           "(2, 4)")
    expect(TypeError, lambda: ce(x, 3), "target must be a torch.Tensor")
    expect(ValueError, lambda: ce(x, t, reduction="avg"), "reduction is "
           "'avg': use 'none', 'mean' or 'sum'")
    expect(ValueError, lambda: ce(x, t, reduction=None), "reduction is "
           "None")
    expect(TypeError, lambda: ce(x, t, ignore_index=1.5), "ignore_index "
           "must be an int, not float")
    expect(TypeError, lambda: ce(x, t, ignore_index=True), "ignore_index "
           "must be an int, not bool")
    expect(ValueError, lambda: ce(x[:, :0], t), "logits has shape (8, 0): "
           "it must have a class")
    expect(TypeError, lambda: ce(x, t, label_smoothing=0.1),
           "label_smoothing")
    expect(TypeError, lambda: ce(x, t, weight=x[0]), "weight")


def main():
    quick = "--quick" in sys.argv[1:]
    torch.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    ms = [7, 256] if quick else MS
    dts = [torch.bfloat16, torch.float32] if quick else DTYPES
    with torch.no_grad():
        for dtype in dts:
            for c in CS:
                for m in ms:
                    if c < WIDE or m < 4099:
                        case((m, c), dtype)
        layouts()
    for shape, dtype in (((7, 1000), torch.bfloat16),
                         ((256, 32000), torch.float32),
                         ((4099, 64), torch.float16),
                         ((3, 5, 50257), torch.bfloat16)):
        for reduction in ("mean", "sum", "none"):
            grad_case(shape, dtype, reduction)
    grad_case((300, 4096), torch.float32, "mean", ignore=2)
    errors()
    print("%d cases, %d failures%s" % (
        ncases, len(failures),
        ": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
