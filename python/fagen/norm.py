"""fagen.rms_norm: RMSNorm on libfagen's fg_rms_norm (issue #26).

    y = fagen.rms_norm(x, weight, eps=1e-6)
    y, h = fagen.rms_norm(x, weight, residual=h)   # h = x + h; y = norm(h)

Per row of x (its last dimension, all others flattened into rows), in
float32: y = s * rsqrt(mean(s^2) + eps) * weight, s = x, or x + residual
with a residual, whose sum (rounded to x's dtype) is returned too, as the
pre-norm transformer's next residual stream.  The kernel is
schedules/rmsnorm.fa, compiled for the row width and dtype on first use;
it runs asynchronously on torch's current stream.  No backward yet.
"""

import ctypes
import math

from . import (FagenError, _CU_STREAM_PER_THREAD, _STATUS, _Tensor, _ctx,
               _load)

__all__ = ["rms_norm"]

_DTYPES = {}                        # torch dtype -> fg_dtype, on first use
_FLT_MAX = 3.4028234663852886e38
_ready = False                      # fg_rms_norm's argtypes set


class _NormArgs(ctypes.Structure):  # fg_rmsnorm_args
    _fields_ = [
        ("x", _Tensor), ("weight", _Tensor), ("residual", _Tensor),
        ("out", _Tensor), ("residual_out", _Tensor),
        ("rstd", ctypes.c_uint64), ("dtype", ctypes.c_int),
        ("eps", ctypes.c_double),
    ]


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("fagen.rms_norm needs PyTorch (import torch "
                          "failed: %s)" % e) from None
    if not _DTYPES:
        _DTYPES.update({torch.bfloat16: 1, torch.float16: 2,
                        torch.float32: 3})
    return torch


def _lib():
    global _ready
    lib = _load()
    if not _ready:
        try:
            fn = lib.fg_rms_norm
        except AttributeError:
            raise FagenError("FG_ERR_NO_LIBRARY", "this libfagen has no "
                             "fg_rms_norm: it is older than the fagen "
                             "package; set FAGEN_LIB to a newer one") \
                from None
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NormArgs),
                       ctypes.c_void_p]
        _ready = True
    return lib


def _check(torch, name, t, x=None, shape=None):
    """t is a CUDA tensor of a supported dtype; with x, on x's device,
    of x's dtype and of shape (x's by default)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, not %s"
                        % (name, type(t).__name__))
    if not t.is_cuda:
        raise ValueError("%s is on %s: fagen needs CUDA tensors"
                         % (name, t.device))
    if x is None:
        if t.dtype not in _DTYPES:
            raise ValueError("%s is %s: fagen.rms_norm takes torch.bfloat16, "
                             "torch.float16 or torch.float32"
                             % (name, t.dtype))
        if t.dim() < 1:
            raise ValueError("%s is a 0-d tensor: fagen.rms_norm takes "
                             "[..., N]" % name)
        return
    if t.device != x.device:
        raise ValueError("%s is on %s and x on %s: they must share a device"
                         % (name, t.device, x.device))
    if t.dtype != x.dtype:
        raise ValueError("%s is %s and x %s: they must share a dtype (cast "
                         "with .to(x.dtype))" % (name, t.dtype, x.dtype))
    want = tuple(x.shape) if shape is None else shape
    if tuple(t.shape) != want:
        raise ValueError("%s has shape %s; it must be %s" % (
            name, tuple(t.shape), "x's, %s" % (want,) if shape is None
            else "(N,) = %s, N x's last dim" % (want,)))


def _span(t):
    """The bytes of a contiguous tensor: (lo, hi)."""
    return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()


def _desc(t, rows, n):
    """fg_tensor of a contiguous tensor as [rows, n] (rank 2)."""
    d = _Tensor(ptr=t.data_ptr(), rank=2)
    d.dims[0], d.dims[1] = rows, n
    return d


def rms_norm(x, weight=None, eps=1e-6, residual=None, out=None,
             return_rstd=False):
    """RMSNorm of x's rows: y, or (y, residual_out) with a residual, and
    rstd appended with return_rstd.

    x: a CUDA tensor [..., N] of torch.bfloat16, float16 or float32 (N
    at most 32768 for 16-bit, 16384 for float32 elements: wider rows need
    a cluster, issue #27).  weight: None (no scaling) or an (N,) tensor;
    residual: None or a tensor of x's shape; both of x's dtype and on its
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
    refuses raises fagen.FagenError.  There is no backward yet: with grad
    mode on, inputs that require grad raise RuntimeError."""
    torch = _torch()
    _check(torch, "x", x)
    n = x.shape[-1]
    if weight is not None:
        _check(torch, "weight", weight, x, (n,))
    if residual is not None:
        _check(torch, "residual", residual, x)
    if out is not None:
        _check(torch, "out", out, x)
        if not out.is_contiguous():
            raise ValueError("out has strides %s: it must be contiguous "
                             "(the kernel writes dense rows)"
                             % (out.stride(),))
    try:
        e = float(eps)
    except (TypeError, ValueError):
        e = math.nan
    if isinstance(eps, (bool, str, bytes)) or not 0 <= e <= _FLT_MAX:
        raise ValueError("eps is %r: it must be a finite number >= 0 "
                         "(that fits float32)" % (eps,))
    if torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (x, weight,
                                                        residual)):
        raise RuntimeError("fagen.rms_norm has no backward yet; call it "
                           "under torch.no_grad() or "
                           "torch.inference_mode()")
    x, weight, residual = (None if t is None else t.contiguous()
                           for t in (x, weight, residual))
    rows = x.numel() // n if n else math.prod(x.shape[:-1])
    y = out if out is not None else torch.empty(
        x.shape, dtype=x.dtype, device=x.device)
    h = None if residual is None else torch.empty(
        x.shape, dtype=x.dtype, device=x.device)
    rstd = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
    if out is not None and out.numel():
        for name, t in (("x", x), ("weight", weight),
                        ("residual", residual)):
            if t is None:
                continue
            (a, b), (c, d) = _span(out), _span(t)
            if a < d and c < b:
                raise ValueError("out overlaps %s: fagen.rms_norm does not "
                                 "normalize in place" % name)
    if rows and n:
        _launch(torch, x, weight, residual, y, h, rstd, rows, n, e)
    elif rows:
        rstd.fill_(math.nan)    # the mean of no squares
    res = [y] + ([h] if h is not None else []) + \
        ([rstd] if return_rstd else [])
    return res[0] if len(res) == 1 else tuple(res)


def _launch(torch, x, weight, residual, y, h, rstd, rows, n, eps):
    lib = _lib()
    device = x.device.index if x.device.index is not None else \
        torch.cuda.current_device()
    ctx = _ctx(lib, device)
    a = _NormArgs(x=_desc(x, rows, n), out=_desc(y, rows, n),
                  rstd=rstd.data_ptr(), dtype=_DTYPES[x.dtype],
                  eps=float(eps))
    if weight is not None:
        a.weight = _Tensor(ptr=weight.data_ptr())
    if residual is not None:
        a.residual = _desc(residual, rows, n)
        a.residual_out = _desc(h, rows, n)
    stream = torch.cuda.current_stream(x.device).cuda_stream
    st = lib.fg_rms_norm(ctx, ctypes.byref(a),
                         stream or _CU_STREAM_PER_THREAD)
    if st:
        raise FagenError(_STATUS[st] if st < len(_STATUS) else str(st),
                         lib.fg_errmsg(ctx).decode(errors="replace"))
