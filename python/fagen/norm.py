"""fagen.rms_norm, fagen.layer_norm and fagen.softmax: libfagen's row
kernels (issue #26).

    y = fagen.rms_norm(x, weight, eps=1e-6)        # differentiable
    y, h = fagen.rms_norm(x, weight, residual=h)   # h = x + h; y = norm(h)
    y = fagen.layer_norm(x, weight, bias, eps=1e-5)
    p = fagen.softmax(x)                           # differentiable

Per row of x (its last dimension, all others flattened into rows), in
float32: rms_norm's y = s * rsqrt(mean(s^2) + eps) * weight, layer_norm's
y = (s - mean(s)) * rsqrt(var(s) + eps) * weight + bias, with s = x, or
x + residual with a residual, whose sum (rounded to x's dtype) is returned
too, as the pre-norm transformer's next residual stream; softmax's y =
exp(x - max) / sum(exp(x - max)).  The kernels are schedules/rmsnorm.fa,
layernorm.fa and softmax.fa, compiled for the row width and dtype on
first use; they run asynchronously on torch's current stream.  rms_norm
and softmax record a torch.autograd.Function where a gradient is
needed, whose backward is fg_rms_norm_backward (rmsnorm_bwd.fa: dx, and
dW as a row of partial sums per CTA, added up here) and
fg_softmax_backward; layer_norm has no backward yet.
"""

import ctypes
import math
import struct

from . import FagenError, _STATUS, _Tensor, _device, _load

__all__ = ["rms_norm", "layer_norm", "softmax"]

_DTYPES = {}                        # torch dtype -> fg_dtype, on first use
_FLT_MAX = 3.4028234663852886e38
_ready = set()                      # the C functions whose argtypes are set
_fns = {}                           # C function name -> (libfagen, function)
_torch_mod = None                   # torch, once imported


class _NormArgs(ctypes.Structure):  # fg_rmsnorm_args
    _fields_ = [
        ("x", _Tensor), ("weight", _Tensor), ("residual", _Tensor),
        ("out", _Tensor), ("residual_out", _Tensor),
        ("rstd", ctypes.c_uint64), ("dtype", ctypes.c_int),
        ("eps", ctypes.c_double),
    ]


class _NormBwdArgs(ctypes.Structure):       # fg_rmsnorm_bwd_args
    _fields_ = [
        ("x", _Tensor), ("weight", _Tensor), ("dy", _Tensor),
        ("rstd", ctypes.c_uint64), ("dx", _Tensor),
        ("dw_partial", ctypes.c_uint64), ("dw_partial_rows", ctypes.c_int64),
        ("dtype", ctypes.c_int),
    ]


class _LayerNormArgs(ctypes.Structure):     # fg_layernorm_args
    _fields_ = [
        ("x", _Tensor), ("weight", _Tensor), ("bias", _Tensor),
        ("residual", _Tensor), ("out", _Tensor), ("residual_out", _Tensor),
        ("mean", ctypes.c_uint64), ("rstd", ctypes.c_uint64),
        ("dtype", ctypes.c_int), ("eps", ctypes.c_double),
    ]


class _SoftmaxArgs(ctypes.Structure):       # fg_softmax_args
    _fields_ = [("x", _Tensor), ("out", _Tensor), ("dtype", ctypes.c_int)]


class _SoftmaxBwdArgs(ctypes.Structure):    # fg_softmax_bwd_args
    _fields_ = [("y", _Tensor), ("dy", _Tensor), ("dx", _Tensor),
                ("dtype", ctypes.c_int)]


# The args structs are filled by struct.pack_into at their fields'
# offsets (ctypes' own): a [rows, n] fg_tensor's ptr, rank and dims[0..1]
# in one pack, fg_rmsnorm_args' rstd, dtype and eps in another.  The
# bytes are those the ctypes constructors write (the rest stays zero),
# at a quarter of their cost: building nested Structures field by field
# was about a tenth of a small call's host time.
_T2 = struct.Struct("=Qi%dx2q" % (_Tensor.dims.offset - _Tensor.rank.offset
                                  - ctypes.sizeof(ctypes.c_int)))
_PTR = struct.Struct("=Q")
_RMS_TAIL = struct.Struct("=Qi%dxd" % (
    _NormArgs.eps.offset - _NormArgs.dtype.offset
    - ctypes.sizeof(ctypes.c_int)))
assert (_Tensor.ptr.offset, _Tensor.rank.offset) == (0, 8) and \
    _NormArgs.dtype.offset == _NormArgs.rstd.offset + 8
_RMS_X, _RMS_W, _RMS_R, _RMS_OUT, _RMS_RO, _RMS_RSTD = (
    getattr(_NormArgs, f).offset for f in ("x", "weight", "residual", "out",
                                           "residual_out", "rstd"))


def _torch(fn):
    global _torch_mod
    if _torch_mod is not None:
        return _torch_mod
    try:
        import torch
    except ImportError as e:
        raise ImportError("fagen.%s needs PyTorch (import torch failed: "
                          "%s)" % (fn, e)) from None
    if not _DTYPES:
        _DTYPES.update({torch.bfloat16: 1, torch.float16: 2,
                        torch.float32: 3})
    _torch_mod = torch
    return torch


def _lib(cfn, args, last=ctypes.c_void_p):
    """libfagen, cfn's argument types set for its struct args (and last,
    the stream's place)."""
    lib = _load()
    if cfn not in _ready:
        try:
            fn = getattr(lib, cfn)
        except AttributeError:
            raise FagenError("FG_ERR_NO_LIBRARY", "this libfagen has no "
                             "%s: it is older than the fagen package; set "
                             "FAGEN_LIB to a newer one" % cfn) from None
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(args), last]
        _ready.add(cfn)
    return lib


def _check(torch, fn, name, t, x=None, shape=None, sim=_device._ASK):
    """t is on fagen's device (_device.check) and of a supported dtype;
    with x, on x's device, of x's dtype and of shape (x's by default).
    sim: as _device.check's."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, not %s"
                        % (name, type(t).__name__))
    _device.check(name, t, sim)
    if x is None:
        if t.dtype not in _DTYPES:
            raise ValueError("%s is %s: fagen.%s takes torch.bfloat16, "
                             "torch.float16 or torch.float32"
                             % (name, t.dtype, fn))
        if t.dim() < 1:
            raise ValueError("%s is a 0-d tensor: fagen.%s takes [..., N]"
                             % (name, fn))
        return
    # both on CUDA devices, or both on the CPU (the simulator): the same
    # device where get_device() (an int, not a new torch.device) agrees
    if t.get_device() != x.get_device():
        raise ValueError("%s is on %s and x on %s: they must share a device"
                         % (name, t.device, x.device))
    if t.dtype != x.dtype:
        raise ValueError("%s is %s and x %s: they must share a dtype (cast "
                         "with .to(x.dtype))" % (name, t.dtype, x.dtype))
    want = x.shape if shape is None else shape
    if t.shape != want:         # torch.Size is a tuple
        raise ValueError("%s has shape %s; it must be %s" % (
            name, tuple(t.shape), "x's, %s" % (tuple(want),)
            if shape is None else "(N,) = %s, N x's last dim" % (want,)))


def _eps(eps):
    """eps as a float: finite, >= 0 and fitting float32."""
    if type(eps) is float and 0 <= eps <= _FLT_MAX:
        return eps
    try:
        e = float(eps)
    except (TypeError, ValueError):
        e = math.nan
    if isinstance(eps, (bool, str, bytes)) or not 0 <= e <= _FLT_MAX:
        raise ValueError("eps is %r: it must be a finite number >= 0 "
                         "(that fits float32)" % (eps,))
    return e


def _grad_needed(*ts):
    """A gradient is needed for one of ts: grad mode is on and one that
    is a tensor requires grad (without importing torch: a tensor that
    requires grad means torch is imported)."""
    for t in ts:
        if getattr(t, "requires_grad", False) is True:
            import torch
            return torch.is_grad_enabled()
    return False


def _no_grad(torch, fn, *ts):
    if torch.is_grad_enabled():
        for t in ts:
            if t is not None and t.requires_grad:
                raise RuntimeError("fagen.%s has no backward yet; call it "
                                   "under torch.no_grad() or "
                                   "torch.inference_mode()" % fn)


def _overlap(fn, out, inputs):
    """out overlaps none of inputs ((name, tensor or None) pairs, all
    contiguous)."""
    if out is None or not out.numel():
        return
    for name, t in inputs:
        if t is None:
            continue
        (a, b), (c, d) = _span(out), _span(t)
        if a < d and c < b:
            raise ValueError("out overlaps %s: fagen.%s does not normalize "
                             "in place" % (name, fn))


def _span(t):
    """The bytes of a contiguous tensor: (lo, hi)."""
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


def _desc(t, rows, n):
    """fg_tensor of a contiguous tensor as [rows, n] (rank 2)."""
    d = _Tensor()
    _T2.pack_into(d, 0, t.data_ptr(), 2, rows, n)
    return d


def _rows(x):
    """x's rows (its outer dims' product) and row width."""
    n = x.shape[-1]
    return (x.numel() // n if n else math.prod(x.shape[:-1])), n


def _run(torch, cfn, args, a, device, out=None, sim=_device._ASK):
    """libfagen's cfn on a (an args struct) on torch's current stream, or
    with out (a ctypes.c_int64 it writes) in the stream's place.  device:
    the tensors' torch.device, or its get_device(); sim: as
    _device.check's."""
    f = _fns.get(cfn)
    if f is None:
        lib = _lib(cfn, args, ctypes.c_void_p if out is None else
                   ctypes.POINTER(ctypes.c_int64))
        f = _fns[cfn] = (lib, getattr(lib, cfn))
    lib, fn = f
    if sim is _device._ASK:
        sim = _device.simulator()
    ctx = _device.ctx(torch, lib, device, sim)
    if out is None:
        last = _device.stream(torch, device, sim)
    else:
        last = ctypes.byref(out)
    st = fn(ctx, ctypes.byref(a), last)
    if st:
        _raise(lib, ctx, st)


def _raise(lib, ctx, st):
    """The FagenError of libfagen's status st on ctx."""
    raise FagenError(_STATUS[st] if st < len(_STATUS) else str(st),
                     lib.fg_errmsg(ctx).decode(errors="replace"))


def _norm(fn, x, weight, bias, eps, residual, out, grad=False):
    """The norms' checks and outputs: (torch, x, weight, bias, residual,
    y, residual_out or None, eps as a float, rows, n), the inputs made
    contiguous; with grad (a gradient is needed: the autograd Function
    makes its outputs) y and residual_out are None."""
    torch = _torch(fn)
    sim = _device.simulator()       # once for the call's checks
    _check(torch, fn, "x", x, sim=sim)
    n = x.shape[-1]
    if weight is not None:
        _check(torch, fn, "weight", weight, x, (n,), sim)
    if bias is not None:
        _check(torch, fn, "bias", bias, x, (n,), sim)
    if residual is not None:
        _check(torch, fn, "residual", residual, x, sim=sim)
    if out is not None:
        _check(torch, fn, "out", out, x, sim=sim)
        if not out.is_contiguous():
            raise ValueError("out has strides %s: it must be contiguous "
                             "(the kernel writes dense rows)"
                             % (out.stride(),))
    e = _eps(eps)
    if not grad:
        _no_grad(torch, fn, x, weight, bias, residual)
    elif out is not None:
        raise RuntimeError("fagen.%s: out= is not differentiable (as "
                           "PyTorch's out= arguments are not); drop it, or "
                           "call under torch.no_grad()" % fn)
    x = x.contiguous()
    if weight is not None:
        weight = weight.contiguous()
    if bias is not None:
        bias = bias.contiguous()
    if residual is not None:
        residual = residual.contiguous()
    rows, n = _rows(x)
    if grad:
        return torch, x, weight, bias, residual, None, None, e, rows, n
    if out is not None:
        _overlap(fn, out, (("x", x), ("weight", weight), ("bias", bias),
                           ("residual", residual)))
    # the shape as a tuple: PyTorch parses a torch.Size as a size about
    # 1 us slower than a tuple (issue #26: a small call's host time)
    shape = tuple(x.shape)
    y = out if out is not None else torch.empty(
        shape, dtype=x.dtype, device=x.device)
    h = None if residual is None else torch.empty(
        shape, dtype=x.dtype, device=x.device)
    return torch, x, weight, bias, residual, y, h, e, rows, n


def _stat(torch, x):
    return torch.empty(tuple(x.shape)[:-1], dtype=torch.float32,
                       device=x.device)


def _result(*ts):
    res = [t for t in ts if t is not None]
    return res[0] if len(res) == 1 else tuple(res)


def _rms_fwd(torch, x, weight, residual, e, y, h, rstd):
    """fg_rms_norm of contiguous inputs into y, h (with a residual) and
    rstd."""
    rows, n = _rows(x)
    if rows and n:
        a = _NormArgs()             # zeros: weight and residual absent
        _T2.pack_into(a, _RMS_X, x.data_ptr(), 2, rows, n)
        _T2.pack_into(a, _RMS_OUT, y.data_ptr(), 2, rows, n)
        _RMS_TAIL.pack_into(a, _RMS_RSTD, rstd.data_ptr(),
                            _DTYPES[x.dtype], e)
        if weight is not None:      # its ptr alone: rank 0, [n]
            _PTR.pack_into(a, _RMS_W, weight.data_ptr())
        if residual is not None:
            _T2.pack_into(a, _RMS_R, residual.data_ptr(), 2, rows, n)
            _T2.pack_into(a, _RMS_RO, h.data_ptr(), 2, rows, n)
        _run(torch, "fg_rms_norm", _NormArgs, a, x.get_device())
    elif rows:
        rstd.fill_(math.nan)    # the mean of no squares


def _rms_bwd(torch, s, weight, rstd, dy, want_dw):
    """fg_rms_norm_backward: (dx, dW) from the forward's s (x, or x +
    residual), weight, rstd and dy; dW (weight's dtype) when want_dw,
    summed here in float32 from the kernel's partial sums, a row per CTA
    (a fixed order for a fixed shape and device: repeatable).  dy is cast
    and made contiguous: autograd may hand in any strides."""
    dy = dy.to(s.dtype).contiguous()
    dx = torch.empty(s.shape, dtype=s.dtype, device=s.device)
    rows, n = _rows(s)
    if not (rows and n):
        return dx, (torch.zeros_like(weight) if want_dw else None)
    a = _NormBwdArgs(x=_desc(s, rows, n), dy=_desc(dy, rows, n),
                     dx=_desc(dx, rows, n), rstd=rstd.data_ptr(),
                     dtype=_DTYPES[s.dtype])
    dwp = None
    if weight is not None:
        a.weight = _Tensor(ptr=weight.data_ptr())
    if want_dw:
        p = ctypes.c_int64()
        _run(torch, "fg_rms_norm_backward_partials", _NormBwdArgs, a,
             s.device, out=p)
        dwp = torch.empty((p.value, n), dtype=torch.float32,
                          device=s.device)
        a.dw_partial, a.dw_partial_rows = dwp.data_ptr(), p.value
    _run(torch, "fg_rms_norm_backward", _NormBwdArgs, a, s.device)
    return dx, (None if dwp is None else dwp.sum(0).to(weight.dtype))


def _rms_fast(torch, x, weight, eps, residual, return_rstd):
    """rms_norm's result without a gradient, out= or copies, or None.

    The common small call's path (issue #26: its host time): where x,
    and weight and residual where given, are plain strided contiguous
    tensors on fagen's device, of x's device and dtype (a supported one)
    and of the shapes they must have, x has rows and columns, eps is a
    float that fits float32, and libfagen's fg_rms_norm has been called
    before (_run set its argument types), each of rms_norm's checks is a
    test here, in one function, and the outputs are the general path's
    (_norm, _stat, _rms_fwd: the same allocations and the same C call on
    the same bytes, its errors raised as _run raises them).  Otherwise
    None, and the general path checks, copies or raises as it does."""
    if type(eps) is not float or not 0 <= eps <= _FLT_MAX or \
            type(x) is not torch.Tensor:
        return None
    f = _fns.get("fg_rms_norm")
    sim = _device.simulator()
    strided = torch.strided
    if f is None or x.dtype not in _DTYPES or x.layout != strided or \
            not (x.is_cuda if sim is None else x.is_cpu) or \
            not x.is_contiguous():
        return None
    shape = tuple(x.shape)
    if not shape:
        return None
    n = shape[-1]
    rows = x.numel() // n if n else 0
    if not rows:
        return None
    dev, dtype = x.get_device(), x.dtype
    for t, want in ((weight, (n,)), (residual, shape)):
        if t is not None and (
                type(t) is not torch.Tensor or t.layout != strided or
                not (t.is_cuda if sim is None else t.is_cpu) or
                t.get_device() != dev or t.dtype != dtype or
                t.shape != want or not t.is_contiguous()):
            return None
    # new_empty with a tuple: torch.empty(x.shape, dtype=x.dtype,
    # device=x.device)'s tensor (a plain tensor: x is one), without
    # parsing a torch.Size, a dtype and a device
    y = x.new_empty(shape)
    h = None if residual is None else x.new_empty(shape)
    rstd = x.new_empty(shape[:-1], dtype=torch.float32)
    a = _NormArgs()
    _T2.pack_into(a, _RMS_X, x.data_ptr(), 2, rows, n)
    _T2.pack_into(a, _RMS_OUT, y.data_ptr(), 2, rows, n)
    _RMS_TAIL.pack_into(a, _RMS_RSTD, rstd.data_ptr(), _DTYPES[dtype], eps)
    if weight is not None:
        _PTR.pack_into(a, _RMS_W, weight.data_ptr())
    if residual is not None:
        _T2.pack_into(a, _RMS_R, residual.data_ptr(), 2, rows, n)
        _T2.pack_into(a, _RMS_RO, h.data_ptr(), 2, rows, n)
    lib, fn = f
    ctx = _device.ctx(torch, lib, dev, sim)
    st = fn(ctx, ctypes.byref(a), _device.stream(torch, dev, sim))
    if st:
        _raise(lib, ctx, st)
    if h is None:
        return (y, rstd) if return_rstd else y
    return (y, h, rstd) if return_rstd else (y, h)


_RMSFunction = None


def _rms_function(torch):
    """rms_norm's torch.autograd.Function, made on first use (the package
    imports without PyTorch).  Its outputs: y, (residual_out,) rstd; the
    backward's: the gradients of x, weight and residual (with a residual
    both x's and residual's are that of s = x + residual: dx from the
    kernel plus residual_out's gradient)."""
    global _RMSFunction
    if _RMSFunction is not None:
        return _RMSFunction
    from torch.autograd.function import once_differentiable

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, residual, e):
            y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            h = None if residual is None else torch.empty_like(y)
            rstd = torch.empty(x.shape[:-1], dtype=torch.float32,
                               device=x.device)
            _rms_fwd(torch, x, weight, residual, e, y, h, rstd)
            ctx.save_for_backward(x if h is None else h, weight, rstd)
            ctx.mark_non_differentiable(rstd)
            ctx.set_materialize_grads(False)
            return (y, rstd) if h is None else (y, h, rstd)

        @staticmethod
        @once_differentiable
        def backward(ctx, dy, *rest):
            s, weight, rstd = ctx.saved_tensors
            dh = rest[0] if len(rest) == 2 else None
            want_dw = ctx.needs_input_grad[1]
            if dy is None:          # y not used: only residual_out's
                dx, dw = None, (torch.zeros_like(weight) if want_dw
                                else None)
            else:
                dx, dw = _rms_bwd(torch, s, weight, rstd, dy, want_dw)
            if dh is not None:
                dh = dh.to(s.dtype)
                dx = dh if dx is None else dx.add_(dh)
            if dx is None and (ctx.needs_input_grad[0] or
                               ctx.needs_input_grad[2]):
                dx = torch.zeros_like(s)
            return (dx if ctx.needs_input_grad[0] else None, dw,
                    dx if ctx.needs_input_grad[2] else None, None)

    _RMSFunction = RMSNorm
    return RMSNorm


def rms_norm(x, weight=None, eps=1e-6, residual=None, out=None,
             return_rstd=False):
    """RMSNorm of x's rows: y, or (y, residual_out) with a residual, and
    rstd appended with return_rstd.

    x: a CUDA tensor [..., N] of torch.bfloat16, float16 or float32 (N
    at most 262144 for 16-bit, 131072 for float32 elements; rows wider
    than 32768 and 16384 are shared by the CTAs of a cluster).  weight:
    None (no scaling) or an (N,) tensor; residual: None or a tensor of x's shape; both of x's dtype and on its
    device.  Per row, in float32: s = x (+ residual), rstd = 1 /
    sqrt(mean(s^2) + eps), y = s * rstd * weight, rounded to x's dtype;
    residual_out = s rounded to x's dtype (x + residual as PyTorch adds
    them).  rstd is float32 of shape x.shape[:-1].  eps: a finite float
    >= 0.  out: None or a contiguous tensor of x's shape and dtype on its
    device, not overlapping the inputs (no in-place normalization), to
    write y into.  Inputs that are not contiguous are copied first (the
    kernel reads dense rows).  Runs on torch's current stream.  Wrong
    types, devices, dtypes, shapes or an out that overlaps an input raise
    TypeError or ValueError before libfagen is called; what libfagen
    refuses raises fagen.FagenError.

    Differentiable in x, weight and residual: with grad mode on and one
    of them requiring grad, it records a torch.autograd.Function whose
    backward is fg_rms_norm_backward (schedules/rmsnorm_bwd.fa; rows
    past 8192 are shared by a cluster's CTAs, up to 65536 16-bit or
    32768 float32 elements: wider ones raise FagenError
    FG_ERR_UNSUPPORTED when the backward runs): per row, in float32, g = dy * weight, ds = rstd *
    (g - s * rstd^2 * mean(g * s)), rounded to x's dtype, and dW = the
    sum over rows of dy * s * rstd, in float32 (partial sums of the
    kernel's CTAs added up by PyTorch, in a fixed order: repeatable),
    rounded to weight's dtype.  With a residual, x and residual both get
    ds plus residual_out's gradient.  rstd has no gradient.  out= is
    refused there (RuntimeError), as PyTorch refuses out= under
    autograd."""
    if _grad_needed(x, weight, residual):
        torch, x, weight, _, residual, _, _, e, rows, n = _norm(
            "rms_norm", x, weight, None, eps, residual, out, grad=True)
        res = _rms_function(torch).apply(x, weight, residual, e)
        return res if return_rstd else _result(*res[:-1])
    if out is None and _torch_mod is not None:
        res = _rms_fast(_torch_mod, x, weight, eps, residual, return_rstd)
        if res is not None:
            return res
    torch, x, weight, _, residual, y, h, e, rows, n = _norm(
        "rms_norm", x, weight, None, eps, residual, out)
    rstd = _stat(torch, x)
    _rms_fwd(torch, x, weight, residual, e, y, h, rstd)
    return _result(y, h, rstd if return_rstd else None)


def layer_norm(x, weight=None, bias=None, eps=1e-5, residual=None, out=None,
               return_stats=False):
    """LayerNorm of x's rows: y, or (y, residual_out) with a residual, and
    (mean, rstd) appended with return_stats.

    As rms_norm, with a bias: weight and bias are None or (N,) tensors of
    x's dtype on its device.  Per row, in float32: s = x (+ residual),
    mean = mean(s), rstd = 1 / sqrt(mean((s - mean)^2) + eps), y = (s -
    mean) * rstd * weight + bias, rounded to x's dtype; residual_out = s
    rounded to x's dtype.  mean and rstd are float32 of shape
    x.shape[:-1].  The same rules and errors as rms_norm's; no backward
    yet (inputs that require grad raise RuntimeError in grad mode)."""
    torch, x, weight, bias, residual, y, h, e, rows, n = _norm(
        "layer_norm", x, weight, bias, eps, residual, out)
    mean, rstd = _stat(torch, x), _stat(torch, x)
    if rows and n:
        a = _LayerNormArgs(x=_desc(x, rows, n), out=_desc(y, rows, n),
                           mean=mean.data_ptr(), rstd=rstd.data_ptr(),
                           dtype=_DTYPES[x.dtype], eps=e)
        if weight is not None:
            a.weight = _Tensor(ptr=weight.data_ptr())
        if bias is not None:
            a.bias = _Tensor(ptr=bias.data_ptr())
        if residual is not None:
            a.residual = _desc(residual, rows, n)
            a.residual_out = _desc(h, rows, n)
        _run(torch, "fg_layer_norm", _LayerNormArgs, a, x.device)
    elif rows:
        mean.fill_(math.nan)    # the mean of nothing
        rstd.fill_(math.nan)
    return _result(y, h, *((mean, rstd) if return_stats else ()))


def _softmax_fwd(torch, x):
    """fg_softmax of a contiguous x: a new y."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rows, n = _rows(x)
    if rows and n:
        a = _SoftmaxArgs(x=_desc(x, rows, n), out=_desc(y, rows, n),
                         dtype=_DTYPES[x.dtype])
        _run(torch, "fg_softmax", _SoftmaxArgs, a, x.device)
    return y


def _softmax_bwd(torch, y, dy):
    """fg_softmax_backward: dx from the forward's y and dy, of y's dtype
    (dy is cast and made contiguous: autograd may hand in any strides, an
    expanded tensor of stride 0 for sum()'s)."""
    dy = dy.to(y.dtype).contiguous()
    dx = torch.empty(y.shape, dtype=y.dtype, device=y.device)
    rows, n = _rows(y)
    if rows and n:
        a = _SoftmaxBwdArgs(y=_desc(y, rows, n), dy=_desc(dy, rows, n),
                            dx=_desc(dx, rows, n), dtype=_DTYPES[y.dtype])
        _run(torch, "fg_softmax_backward", _SoftmaxBwdArgs, a, y.device)
    return dx


_Function = None


def _function(torch):
    """softmax's torch.autograd.Function, made on first use (the package
    imports without PyTorch)."""
    global _Function
    if _Function is not None:
        return _Function
    from torch.autograd.function import once_differentiable

    class Softmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = _softmax_fwd(torch, x.contiguous())
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once_differentiable
        def backward(ctx, dy):
            y, = ctx.saved_tensors
            return _softmax_bwd(torch, y, dy)

    _Function = Softmax
    return Softmax


def softmax(x, dim=-1):
    """The softmax of x along dim, as torch.softmax(x, dim): in float32,
    exp(x - max) / sum(exp(x - max)), rounded to x's dtype.

    x: a CUDA tensor of torch.bfloat16, float16 or float32 whose dim is
    at most 262144 wide for 16-bit, 131072 for float32 elements (rows
    wider than 32768 and 16384 are shared by the CTAs of a cluster; the
    backward takes half as wide).  The kernel takes the last dimension: x
    is copied to be contiguous first where it is not, and a softmax over
    another dim is one over the last of x.transpose(dim, -1), copied,
    whose result is transposed back (a view, not contiguous).  Runs on
    torch's current stream.  Differentiable: with grad mode on and x
    requiring grad, it records a torch.autograd.Function whose backward is
    fg_softmax_backward (dx = y * (dy - sum(dy * y)), in float32), so
    y.sum().backward() gives x.grad.  Wrong types, devices or dtypes
    raise TypeError or ValueError, a dim out of range IndexError, before
    libfagen is called; what libfagen refuses raises fagen.FagenError."""
    torch = _torch("softmax")
    _check(torch, "softmax", "x", x)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError("dim must be an int, not %s" % type(dim).__name__)
    if not -x.dim() <= dim < x.dim():
        raise IndexError("dim is %d: x has %d dimensions, so it must be "
                         "in [%d, %d]" % (dim, x.dim(), -x.dim(),
                                          x.dim() - 1))
    d = dim % x.dim()
    if d != x.dim() - 1:
        return softmax(x.transpose(d, -1), -1).transpose(d, -1)
    if torch.is_grad_enabled() and x.requires_grad:
        return _function(torch).apply(x)
    return _softmax_fwd(torch, x.contiguous())
