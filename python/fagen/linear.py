"""fagen.linear: libfagen's fg_linear (issue #26),
torch.nn.functional.linear with a fused epilogue, on the shipped GEMM
(schedules/gemm_ws_sm90.fa; gemm_ws_sm100.fa on sm_100).

    y = fagen.linear(x, weight, bias)                   # x W^T + bias
    u = fagen.linear(x, w_up, activation="gelu_tanh")   # GELU(x W^T)
    h = fagen.linear(u, w_down, b, residual=h)          # h + u W^T + b

x is [..., K], weight [N, K] (nn.Linear's), the result [..., N]: per
element, in float32, y = act(scale * x W^T + bias) + residual, the
product accumulated in float32 by the tensor cores and the whole rounded
once to x's dtype (bfloat16 or float16).  The kernel runs on torch's
current stream.  The backward is PyTorch ops, not fused: it recomputes
z = scale * x W^T + bias in float32 (only with an activation) and takes
the gradients from g = dy * act'(z) with float32 matmuls.
"""

import ctypes
import math

from . import _Tensor, _device
from .norm import _DTYPES, _desc, _grad_needed, _run, _span, _torch

__all__ = ["linear"]

_ACTS = {None: 0, "gelu_tanh": 1, "silu": 2}     # fg_activation
_FLT_MAX = 3.4028234663852886e38
_GELU_C = 0.7978845608028654                       # sqrt(2 / pi)
_GELU_A = 0.044715


class _LinearArgs(ctypes.Structure):        # fg_linear_args
    _fields_ = [("x", _Tensor), ("weight", _Tensor), ("bias", _Tensor),
                ("residual", _Tensor), ("out", _Tensor),
                ("dtype", ctypes.c_int), ("alpha", ctypes.c_double),
                ("act", ctypes.c_int)]


def _activation(activation):
    """activation's fg_activation."""
    if activation == "gelu":
        raise ValueError("activation is 'gelu': fagen has GELU's tanh form "
                         "only; pass 'gelu_tanh' (torch.nn.functional."
                         "gelu(x, approximate='tanh'))")
    if not (activation is None or isinstance(activation, str)) or \
            activation not in _ACTS:
        raise ValueError("activation is %r: use None, 'gelu_tanh' or "
                         "'silu'" % (activation,))
    return _ACTS[activation]


def _scale(scale):
    """scale as a float: 1.0 for None; finite and fitting float32."""
    if scale is None:
        return 1.0
    try:
        s = float(scale)
    except (TypeError, ValueError):
        s = math.nan
    if isinstance(scale, (bool, str, bytes)) or not abs(s) <= _FLT_MAX:
        raise ValueError("scale is %r: it must be a finite number (that "
                         "fits float32) or None" % (scale,))
    return s


def _tensor(torch, name, t, x=None, shape=None, text=""):
    """t is on fagen's device; with x, on x's device and of x's dtype; with
    shape, of that shape (text says what it is)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, not %s"
                        % (name, type(t).__name__))
    _device.check(name, t)
    if x is None:
        return
    if t.device != x.device:
        raise ValueError("%s is on %s and x on %s: they must share a device"
                         % (name, t.device, x.device))
    if t.dtype != x.dtype:
        raise ValueError("%s is %s and x %s: they must share a dtype (cast "
                         "with .to(x.dtype))" % (name, t.dtype, x.dtype))
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError("%s has shape %s; it must be %s, %s"
                         % (name, tuple(t.shape), text, shape))


def _validate(torch, x, weight, bias, residual, activation, scale):
    """The checks that need no addresses (torch.compile's fake tensors
    pass them too): (fg_activation, scale as a float)."""
    _tensor(torch, "x", x)
    if x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError("x is %s: fagen.linear takes torch.bfloat16 or "
                         "torch.float16 (the GEMM's tensor cores take "
                         "16-bit inputs)" % x.dtype)
    if x.dim() < 1:
        raise ValueError("x is a 0-d tensor: fagen.linear takes [..., K]")
    k = x.shape[-1]
    _tensor(torch, "weight", weight, x)
    if weight.dim() != 2 or weight.shape[1] != k:
        raise ValueError("weight has shape %s; it must be (N, K) with K = "
                         "%d, x's last dim (nn.Linear's weight)"
                         % (tuple(weight.shape), k))
    n = weight.shape[0]
    if bias is not None:
        _tensor(torch, "bias", bias, x, (n,), "(N,), N weight's rows")
    if residual is not None:
        _tensor(torch, "residual", residual, x, tuple(x.shape[:-1]) + (n,),
                "the result's: x's outer dims, then N")
    return _activation(activation), _scale(scale)


def _dense(t, tma):
    """t contiguous, and copied where TMA reads it from an address that
    is not 16-byte aligned (a view's offset); None stays None."""
    if t is None:
        return None
    t = t.contiguous()
    return t.clone() if tma and t.data_ptr() % 16 else t


def _act(torch, z, act):
    """The activation on float32 z, as the kernel's epilogue has it."""
    if act == 1:
        return torch.nn.functional.gelu(z, approximate="tanh")
    if act == 2:
        return torch.nn.functional.silu(z)
    return z


def _dact(torch, z, act):
    """act'(z), in closed form, on float32 z."""
    if act == 1:
        t = torch.tanh(_GELU_C * (z + _GELU_A * z * z * z))
        return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * _GELU_C * (
            1 + 3 * _GELU_A * z * z)
    s = torch.sigmoid(z)
    return s * (1 + z * (1 - s))


def _forward(torch, x, weight, bias, residual, alpha, act, y):
    """y = act(alpha x W^T + bias) + residual for dense inputs (x and
    weight 16-byte aligned) into a contiguous y, by fg_linear; K = 0,
    which fg_linear refuses (no matrix product), by PyTorch in float32,
    rounded once."""
    k, n = x.shape[-1], weight.shape[0]
    m = math.prod(x.shape[:-1])
    if not (m and n):
        return y
    if not k:
        z = torch.zeros((m, n), dtype=torch.float32, device=x.device)
        if bias is not None:
            z += bias.float()
        z = _act(torch, z, act)
        if residual is not None:
            z += residual.reshape(m, n).float()
        y.view(m, n).copy_(z)
        return y
    a = _LinearArgs(x=_desc(x, m, k), weight=_desc(weight, n, k),
                    out=_desc(y, m, n), dtype=_DTYPES[x.dtype],
                    alpha=alpha, act=act)
    if bias is not None:
        a.bias = _Tensor(ptr=bias.data_ptr())
    if residual is not None:
        a.residual = _desc(residual, m, n)
    _run(torch, "fg_linear", _LinearArgs, a, x.device)
    return y


def _compute(torch, x, weight, bias, residual, alpha, act):
    """fg_linear into a new tensor, the inputs made dense first."""
    x, weight = _dense(x, True), _dense(weight, True)
    bias, residual = _dense(bias, False), _dense(residual, False)
    y = torch.empty(tuple(x.shape[:-1]) + (weight.shape[0],),
                    dtype=x.dtype, device=x.device)
    return _forward(torch, x, weight, bias, residual, alpha, act, y)


def _grads(torch, x, weight, bias, dy, alpha, act, need):
    """The gradients of x, weight, bias and residual (need: which, as
    ctx.needs_input_grad) from y's, dy, by PyTorch ops in float32: g = dy
    * act'(z), z = alpha x W^T + bias recomputed (with an activation);
    dx = alpha g W, dW = alpha g^T x, dbias = the sum of g over rows,
    dresidual = dy; each rounded to its input's dtype."""
    k, n = x.shape[-1], weight.shape[0]
    m = math.prod(x.shape[:-1])     # not -1: K or N may be 0
    x2 = x.reshape(m, k)
    g = dy.reshape(m, n).float()
    w = weight.float()
    if act:
        z = torch.mm(x2.float(), w.t())
        if alpha != 1:
            z.mul_(alpha)
        if bias is not None:
            z += bias.float()
        g = g * _dact(torch, z, act)
    gs = g * alpha if alpha != 1 else g
    dx = dw = db = dr = None
    if need[0]:
        dx = torch.mm(gs, w).to(x.dtype).reshape(x.shape)
    if need[1]:
        dw = torch.mm(gs.t(), x2.float()).to(weight.dtype)
    if need[2] and bias is not None:
        db = g.sum(0).to(bias.dtype)
    if need[3]:
        dr = dy.to(x.dtype)
    return dx, dw, db, dr


_Function = None


def _function(torch):
    """linear's torch.autograd.Function, made on first use (the package
    imports without PyTorch)."""
    global _Function
    if _Function is not None:
        return _Function
    from torch.autograd.function import once_differentiable

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, residual, alpha, act):
            y = _compute(torch, x, weight, bias, residual, alpha, act)
            ctx.save_for_backward(x, weight, bias)
            ctx.alpha, ctx.act = alpha, act
            return y

        @staticmethod
        @once_differentiable
        def backward(ctx, dy):
            x, weight, bias = ctx.saved_tensors
            return _grads(torch, x, weight, bias, dy, ctx.alpha, ctx.act,
                          ctx.needs_input_grad) + (None, None)

    _Function = Linear
    return Linear


def _check_out(torch, out, x, n, inputs):
    """out: contiguous, of the result's shape, x's dtype and device,
    16-byte aligned, overlapping none of inputs ((name, dense tensor or
    None) pairs)."""
    _tensor(torch, "out", out, x, tuple(x.shape[:-1]) + (n,),
            "the result's: x's outer dims, then N")
    if not out.is_contiguous():
        raise ValueError("out has strides %s: it must be contiguous (the "
                         "kernel writes dense rows)" % (out.stride(),))
    if not out.numel():
        return
    if out.data_ptr() % 16:
        raise ValueError("out is at 0x%x, not 16-byte aligned: the kernel "
                         "writes it with TMA" % out.data_ptr())
    a, b = _span(out)
    for name, t in inputs:
        if t is None or not t.numel():
            continue
        c, d = _span(t)
        if a < d and c < b:
            raise ValueError("out overlaps %s: fagen.linear does not "
                             "compute in place" % name)


def linear(x, weight, bias=None, activation=None, residual=None,
           scale=None, out=None):
    """torch.nn.functional.linear(x, weight, bias) with a fused
    epilogue: act(scale * x W^T + bias) + residual, computed in float32
    and rounded once to x's dtype.

    x: a CUDA tensor [..., K] of torch.bfloat16 or float16 (any leading
    dims, K a multiple of 8: TMA's 16-byte rows).  weight: (N, K), N a
    multiple of 8; bias: None or (N,); residual: None or [..., N], x's
    outer dims then N; all of x's dtype and on its device.  activation:
    None, 'gelu_tanh' (torch.nn.functional.gelu(z, approximate='tanh');
    plain 'gelu', the erf form, is refused) or 'silu'.  scale: None (1)
    or a finite float multiplying x W^T before the bias.  out: None or a
    contiguous tensor of the result's shape, x's dtype and device,
    16-byte aligned and not overlapping an input, to write into.  Inputs
    that are not contiguous (or, x and weight, not 16-byte aligned) are
    copied first.  Returns [..., N].  K = 0 is computed by PyTorch (no
    matrix product: act(bias) + residual).  Runs on torch's current
    stream.  Wrong types, devices, dtypes (float32 included), shapes,
    activations, scales or outs raise TypeError or ValueError before
    libfagen is called; what libfagen refuses (K or N not a multiple of
    8) raises fagen.FagenError.

    Differentiable in x, weight, bias and residual: with grad mode on and
    one of them requiring grad, it records a torch.autograd.Function
    whose backward is PyTorch ops in float32, not fused: z = scale * x
    W^T + bias recomputed where there is an activation, g = dy *
    act'(z) (the tanh-GELU's and SiLU's derivatives in closed form), dx
    = scale * g W, dW = scale * g^T x, dbias = the sum of g over rows and
    dresidual = dy, each rounded to its input's dtype.  out= is refused
    there (RuntimeError), as PyTorch refuses out= under autograd."""
    fn = "linear"
    torch = _torch(fn)
    act, alpha = _validate(torch, x, weight, bias, residual, activation,
                           scale)
    if _grad_needed(x, weight, bias, residual):
        if out is not None:
            raise RuntimeError("fagen.linear: out= is not differentiable "
                               "(as PyTorch's out= arguments are not); drop "
                               "it, or call under torch.no_grad()")
        return _function(torch).apply(x, weight, bias, residual, alpha,
                                      act)
    if out is None:
        return _compute(torch, x, weight, bias, residual, alpha, act)
    x, weight = _dense(x, True), _dense(weight, True)
    bias, residual = _dense(bias, False), _dense(residual, False)
    _check_out(torch, out, x, weight.shape[0],
               (("x", x), ("weight", weight), ("bias", bias),
                ("residual", residual)))
    return _forward(torch, x, weight, bias, residual, alpha, act, out)
