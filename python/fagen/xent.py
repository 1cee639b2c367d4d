"""fagen.cross_entropy: libfagen's fg_cross_entropy (issue #26), the
cross-entropy loss of logits against class indices, as
torch.nn.functional.cross_entropy takes them.

    loss = fagen.cross_entropy(logits, target)             # the mean
    loss, lse = fagen.cross_entropy(logits, target, reduction="none",
                                    return_lse=True)

logits is [..., C], its last dimension the classes (PyTorch's 2-D [B, C]
and 1-D [C]; for more dimensions PyTorch takes the classes at dim 1,
fagen at the last, as after logits.movedim(1, -1)); target holds a class
index per row, of logits' shape without its last dimension.  The kernel,
schedules/cross_entropy.fa, gives per row, in float32, lse = log(sum(exp(
logits))) and loss = lse - logits[target], walking rows of any width in
chunks with an online logsumexp.  A row whose target is ignore_index, or
not a class at all, has loss 0, no gradient and is not counted in the
mean.  The reductions are PyTorch ops in float32.  The backward is one
kernel, schedules/cross_entropy_bwd.fa (fg_cross_entropy_backward):
(softmax(logits) - onehot(target)) times the gradient, from the
forward's lse.
"""

import ctypes
import operator

from . import _Tensor, _device
from .norm import _DTYPES, _check, _desc, _rows, _run, _torch

__all__ = ["cross_entropy"]

_REDUCTIONS = ("none", "mean", "sum")


class _XentArgs(ctypes.Structure):          # fg_cross_entropy_args
    _fields_ = [("logits", _Tensor), ("target", _Tensor),
                ("loss", ctypes.c_uint64), ("lse", ctypes.c_uint64),
                ("dtype", ctypes.c_int)]


def _forward(torch, x, tgt):
    """fg_cross_entropy of a contiguous x [rows, C] with int32 targets tgt
    [rows]: (loss, lse), float32 [rows] each."""
    rows, n = x.shape
    loss = torch.empty(rows, dtype=torch.float32, device=x.device)
    lse = torch.empty_like(loss)
    if rows:
        t = _Tensor(ptr=tgt.data_ptr(), rank=1)
        t.dims[0] = rows
        a = _XentArgs(logits=_desc(x, rows, n), target=t,
                      loss=loss.data_ptr(), lse=lse.data_ptr(),
                      dtype=_DTYPES[x.dtype])
        _run(torch, "fg_cross_entropy", _XentArgs, a, x.device)
    return loss, lse


def _targets(torch, target, n, ignore_index):
    """The kernel's int32 targets [rows], -1 where a row is not counted
    (ignore_index, or not in [0, n): int64 values past int32's range
    too), and that mask (True: counted)."""
    t = target.reshape(-1)
    valid = (t >= 0) & (t < n)
    if 0 <= ignore_index < n:       # outside, valid excludes it already
        valid &= t != ignore_index
    return t.masked_fill(~valid, -1).to(torch.int32), valid


def _reduce(torch, loss, valid, reduction):
    """loss [rows] (float32) reduced: itself, its sum, or its sum over
    the counted rows' count (NaN for none, as PyTorch's)."""
    if reduction == "none":
        return loss
    s = loss.sum()
    return s if reduction == "sum" else s / valid.sum()


class _XentBwdArgs(ctypes.Structure):       # fg_cross_entropy_bwd_args
    _fields_ = [("logits", _Tensor), ("target", _Tensor),
                ("lse", ctypes.c_uint64), ("dloss", ctypes.c_uint64),
                ("dlogits", _Tensor), ("dtype", ctypes.c_int)]


def _backward(torch, x, tgt, valid, lse, dout, reduction):
    """d loss / d x for x [rows, C], by fg_cross_entropy_backward: per
    counted row, (exp(x - lse) - onehot(tgt)) times its loss's gradient
    (the count folded in for 'mean'), in float32, rounded to x's dtype;
    rows not counted (tgt -1) get 0."""
    rows, n = x.shape
    g = dout.float()
    if reduction == "none":
        g = g.reshape(-1).contiguous()
    else:
        if reduction == "mean":
            g = g / valid.sum()
        g = g.reshape(()).expand(rows).contiguous()
    dx = torch.empty_like(x)
    if rows:
        t = _Tensor(ptr=tgt.data_ptr(), rank=1)
        t.dims[0] = rows
        a = _XentBwdArgs(logits=_desc(x, rows, n), target=t,
                         lse=lse.data_ptr(), dloss=g.data_ptr(),
                         dlogits=_desc(dx, rows, n),
                         dtype=_DTYPES[x.dtype])
        _run(torch, "fg_cross_entropy_backward", _XentBwdArgs, a, x.device)
    return dx


_Function = None


def _function(torch):
    """cross_entropy's torch.autograd.Function, made on first use (the
    package imports without PyTorch)."""
    global _Function
    if _Function is not None:
        return _Function
    from torch.autograd.function import once_differentiable

    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, tgt, valid, reduction):
            loss, lse = _forward(torch, x, tgt)
            ctx.save_for_backward(x, tgt, valid, lse)
            ctx.reduction = reduction
            ctx.mark_non_differentiable(lse)
            return _reduce(torch, loss, valid, reduction).to(x.dtype), lse

        @staticmethod
        @once_differentiable
        def backward(ctx, dout, dlse):
            x, tgt, valid, lse = ctx.saved_tensors
            return (_backward(torch, x, tgt, valid, lse, dout,
                              ctx.reduction), None, None, None)

    _Function = CrossEntropy
    return CrossEntropy


def _check_target(torch, target, logits):
    if not isinstance(target, torch.Tensor):
        raise TypeError("target must be a torch.Tensor, not %s"
                        % type(target).__name__)
    if target.dtype not in (torch.int64, torch.int32):
        raise ValueError("target is %s: fagen.cross_entropy takes class "
                         "indices of torch.int64 or torch.int32 (class "
                         "probabilities are not supported)" % target.dtype)
    _device.check("target", target)
    if target.device != logits.device:
        raise ValueError("target is on %s and logits on %s: they must "
                         "share a device" % (target.device, logits.device))
    want = tuple(logits.shape[:-1])
    if tuple(target.shape) != want:
        raise ValueError("target has shape %s; it must be logits' without "
                         "its last dim (the classes), %s"
                         % (tuple(target.shape), want))


def _ignore(ignore_index):
    if isinstance(ignore_index, bool):
        raise TypeError("ignore_index must be an int, not bool")
    try:
        return operator.index(ignore_index)
    except TypeError:
        raise TypeError("ignore_index must be an int, not %s"
                        % type(ignore_index).__name__) from None


def cross_entropy(logits, target, ignore_index=-100, reduction="mean",
                  return_lse=False):
    """The cross-entropy of logits' rows against target, as
    torch.nn.functional.cross_entropy(logits, target, ignore_index=...,
    reduction=...) for [B, C] (or [C]) logits and class indices: the
    loss, or (loss, lse) with return_lse.

    logits: a CUDA tensor [..., C] of torch.bfloat16, float16 or float32,
    its last dimension the classes, of any width (C >= 1).  target: a
    CUDA tensor of torch.int64 or int32 class indices on logits' device,
    of shape logits.shape[:-1] (0-d for 1-D logits); it is converted to
    int32 on the GPU.  Per row, in float32: lse = log(sum(exp(logits)))
    and loss = lse - logits[target].  A row whose target is ignore_index
    (an int, -100 by default) or is not a class (outside [0, C), int64
    values past int32's range included: PyTorch raises a device-side
    assert for those) has loss 0, gets no gradient and is not counted.
    reduction: 'none' (per-row loss, of target's shape), 'sum', or 'mean'
    (the sum over the counted rows' count, NaN when none is counted, as
    PyTorch's), computed in float32; the loss is returned in logits'
    dtype, as PyTorch returns it.  lse is float32 of target's shape.
    Class weights, label smoothing and class-probability targets are not
    supported.  Inputs that are not contiguous are copied first.  Runs
    on torch's current stream.  Differentiable in logits: with grad mode
    on and logits requiring grad, it records a torch.autograd.Function
    whose backward is one fused kernel (fg_cross_entropy_backward):
    (exp(logits - lse) - onehot(target)) times the loss's gradient (over
    the count, for 'mean'), in float32, rounded to logits' dtype.  Wrong types,
    devices, dtypes, shapes or reductions raise TypeError or ValueError
    before libfagen is called; what libfagen refuses raises
    fagen.FagenError."""
    fn = "cross_entropy"
    torch = _torch(fn)
    _check(torch, fn, "logits", logits)
    _check_target(torch, target, logits)
    ignore = _ignore(ignore_index)
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise ValueError("reduction is %r: use 'none', 'mean' or 'sum'"
                         % (reduction,))
    rows, n = _rows(logits)
    if rows and not n:
        raise ValueError("logits has shape %s: it must have a class (its "
                         "last dim is 0)" % (tuple(logits.shape),))
    x = logits.contiguous().view(rows, n)
    tgt, valid = _targets(torch, target, n, ignore)
    if torch.is_grad_enabled() and logits.requires_grad:
        out, lse = _function(torch).apply(x, tgt, valid, reduction)
    else:
        loss, lse = _forward(torch, x, tgt)
        out = _reduce(torch, loss, valid, reduction).to(logits.dtype)
    if reduction == "none":
        out = out.view(target.shape)
    lse = lse.view(target.shape)
    return (out, lse) if return_lse else out
