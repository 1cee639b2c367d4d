"""fagen's attention, row kernels and linear as PyTorch custom ops, for
torch.compile.

    from fagen import ops
    out, lse = ops.attention(q, k, v, causal=True)   # torch.ops.fagen.attention
    y = ops.softmax(x)                               # torch.ops.fagen.softmax
    y = ops.layer_norm(x, w, b, eps=1e-5)            # torch.ops.fagen.layer_norm
    y = ops.linear(x, w, b, activation="silu")       # torch.ops.fagen.linear

fagen.attention calls libfagen through ctypes, which torch.compile cannot
trace: a graph break, and an error under fullgraph=True.  Importing this
module registers torch.ops.fagen.attention with torch.library (PyTorch
2.4 or later), with a fake (meta) implementation that gives the output
shapes, so a compiled graph keeps the call as one opaque node
(fullgraph=True works).  The arguments and results are fagen.attention's
(window and softcap as there; sinks a float32 (H,) tensor).

The op is differentiable like fagen.attention (issue #13): its autograd
formula (register_autograd) calls a second custom op,
torch.ops.fagen.attention_backward, fg_attention_backward with its own
fake implementation, so torch.compile(fullgraph=True) traces the forward
and the backward with no graph break.  lse is not differentiable;
head dims as fagen.attention's (192 with head_dim_v 128 included); sinks
get their gradient.  Issue #17.
"""

from typing import Optional, Tuple

try:
    import torch
except ImportError as e:
    raise ImportError("fagen.ops needs PyTorch (import torch failed: %s)"
                      % e) from None

import fagen

from fagen import norm as _norm
# fagen.linear is the function: the module's names come from sys.modules
from fagen.linear import _compute as _lin_compute, _grads as _lin_grads, \
    _validate as _lin_validate

__all__ = ["attention", "softmax", "layer_norm", "linear"]

# the CPU too, for libfagen's simulator (fagen.use_simulator, FAGEN_SIM;
# issue #18): each op's implementation checks its tensors' device as
# fagen's functions do (_device.check), so on the GPU a CPU tensor is
# refused by that check rather than by the dispatcher
_DEVICES = ("cuda", "cpu")


@torch.library.custom_op("fagen::attention", mutates_args=(),
                         device_types=_DEVICES)
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               causal: bool, scale: Optional[float], windowed: bool,
               window_left: int, window_right: int, softcap: float,
               sinks: Optional[torch.Tensor], deterministic: bool = False
               ) -> Tuple[torch.Tensor, torch.Tensor]:
    # deterministic is the backward's (setup_context keeps it)
    # fagen._call, not fagen.attention: the autograd graph is the
    # dispatcher's here (register_autograd below)
    return fagen._call(
        "fg_attention_forward", q, k, v, causal, scale,
        window=(window_left, window_right) if windowed else None,
        softcap=softcap if softcap > 0 else None, sinks=sinks)


@_attention.register_fake
def _(q, k, v, causal, scale, windowed, window_left, window_right, softcap,
      sinks, deterministic=False):
    b, h, sq, _ = q.shape
    return (q.new_empty((b, h, sq, v.shape[3])),  # V's head dim
            q.new_empty((b, h, sq), dtype=torch.float32))


@torch.library.custom_op("fagen::attention_backward", mutates_args=(),
                         device_types=_DEVICES)
def _attention_backward(dout: torch.Tensor, q: torch.Tensor,
                        k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                        lse: torch.Tensor, causal: bool,
                        scale: Optional[float], windowed: bool,
                        window_left: int, window_right: int, softcap: float,
                        deterministic: bool = False
                        ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return fagen._backward(
        q, k, v, out, lse, dout, causal, scale,
        (window_left, window_right) if windowed else None,
        softcap if softcap > 0 else None, deterministic=deterministic)


@_attention_backward.register_fake
def _(dout, q, k, v, out, lse, causal, scale, windowed, window_left,
      window_right, softcap, deterministic=False):
    # fagen._backward's: torch.empty_like keeps a dense tensor's strides
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output):
    # inputs has every argument, defaults filled in (register_autograd's)
    q, k, v, causal, scale, windowed, wl, wr, softcap, sinks, det = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, sinks)
    ctx.mark_non_differentiable(lse)
    ctx.causal, ctx.scale = causal, scale
    ctx.opts = (windowed, wl, wr, softcap, det)
    ctx.unsupported = fagen._bwd_unsupported(
        q, (wl, wr) if windowed else None, softcap > 0, sinks, None, v)


def _backward(ctx, dout, dlse):
    if ctx.unsupported:
        fagen._bwd_refuse(ctx.unsupported)
    q, k, v, out, lse, sinks = ctx.saved_tensors
    dq, dk, dv = torch.ops.fagen.attention_backward(dout, q, k, v, out, lse,
                                                    ctx.causal, ctx.scale,
                                                    *ctx.opts)
    dsinks = None
    if sinks is not None and ctx.needs_input_grad[9]:
        # as fagen.attention's: -sum over rows of exp(sink - LSE) DELTA
        delta = (dout.float() * out.float()).sum(-1)
        dsinks = -(torch.exp(sinks.float()[None, :, None] - lse) *
                   delta).sum((0, 2))
    # a gradient per input the op was called with: the dispatcher may
    # leave out a trailing argument equal to its default (deterministic)
    grads = (dq, dk, dv, None, None, None, None, None, None, dsinks, None)
    return grads[:len(ctx.needs_input_grad)]


_attention.register_autograd(_backward, setup_context=_setup_context)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              causal: bool = False, scale: Optional[float] = None,
              window: Optional[Tuple[int, int]] = None,
              softcap: Optional[float] = None,
              sinks: Optional[torch.Tensor] = None,
              deterministic: bool = False
              ) -> Tuple[torch.Tensor, torch.Tensor]:
    """fagen.attention through torch.ops.fagen.attention: (out, lse).
    Under CUDA autocast, q, k and v are cast to autocast's dtype first (as
    autocast does for scaled_dot_product_attention): a model's rotary
    embedding hands float32 queries to attention there.  deterministic:
    as fagen.attention's, dq bitwise repeatable from one backward pass to
    the next when True (slower)."""
    if torch.is_autocast_enabled("cuda"):
        dt = torch.get_autocast_dtype("cuda")
        if dt in (torch.bfloat16, torch.float16):
            q, k, v = (x.to(dt) if x.is_floating_point() else x
                       for x in (q, k, v))
    wl, wr = window if window is not None else (-1, -1)
    return torch.ops.fagen.attention(q, k, v, causal, scale,
                                     window is not None, wl, wr,
                                     float(softcap or 0.0), sinks,
                                     bool(deterministic))


# ------------------------------------------------------------ row kernels
# Issue #26: the row kernels of fagen.norm as custom ops, each with a
# fake implementation (the output's shape and dtype), so that a compiled
# graph keeps the call as one node.  softmax is differentiable through a
# second op, torch.ops.fagen.softmax_backward (fg_softmax_backward).


@torch.library.custom_op("fagen::softmax", mutates_args=(),
                         device_types=_DEVICES)
def _softmax(x: torch.Tensor) -> torch.Tensor:
    # _torch sets up the dtype table the internals read
    return _norm._softmax_fwd(_norm._torch("softmax"), x.contiguous())


@_softmax.register_fake
def _(x):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.custom_op("fagen::softmax_backward", mutates_args=(),
                         device_types=_DEVICES)
def _softmax_backward(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return _norm._softmax_bwd(_norm._torch("softmax"), y, dy)


@_softmax_backward.register_fake
def _(y, dy):
    return torch.empty(y.shape, dtype=y.dtype, device=y.device)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_grad(ctx, dy):
    y, = ctx.saved_tensors
    return torch.ops.fagen.softmax_backward(y, dy)


_softmax.register_autograd(_softmax_grad, setup_context=_softmax_setup)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """fagen.softmax over the last dimension through
    torch.ops.fagen.softmax: differentiable, traceable by torch.compile
    (fullgraph=True).  x's other checks are fagen.softmax's (run
    eagerly, before the op)."""
    # _norm._torch fills the dtype table _check reads
    _norm._check(_norm._torch("softmax"), "softmax", "x", x)
    return torch.ops.fagen.softmax(x)


@torch.library.custom_op("fagen::layer_norm", mutates_args=(),
                         device_types=_DEVICES)
def _layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    return fagen.layer_norm(x, weight, bias, eps=eps)


@_layer_norm.register_fake
def _(x, weight, bias, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5) -> torch.Tensor:
    """fagen.layer_norm (no residual, no stats) through
    torch.ops.fagen.layer_norm: for inference under torch.compile; it
    has no backward yet, as fagen.layer_norm."""
    return torch.ops.fagen.layer_norm(x, weight, bias, float(eps))


# ------------------------------------------------------------ linear
# Issue #26: fagen.linear as a custom op.  Its forward is fg_linear; its
# autograd formula is fagen.linear's backward, PyTorch ops in float32,
# which torch.compile traces like any other (no second custom op).


@torch.library.custom_op("fagen::linear", mutates_args=(),
                         device_types=_DEVICES)
def _linear(x: torch.Tensor, weight: torch.Tensor,
            bias: Optional[torch.Tensor], residual: Optional[torch.Tensor],
            scale: float, activation: int) -> torch.Tensor:
    return _lin_compute(_norm._torch("linear"), x, weight, bias, residual,
                        scale, activation)


@_linear.register_fake
def _(x, weight, bias, residual, scale, activation):
    return x.new_empty(tuple(x.shape[:-1]) + (weight.shape[0],))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, residual, scale, activation = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.scale, ctx.act = scale, activation


def _linear_grad(ctx, dy):
    x, weight, bias = ctx.saved_tensors
    return _lin_grads(torch, x, weight, bias, dy, ctx.scale, ctx.act,
                      ctx.needs_input_grad) + (None, None)


_linear.register_autograd(_linear_grad, setup_context=_linear_setup)


def linear(x: torch.Tensor, weight: torch.Tensor,
           bias: Optional[torch.Tensor] = None,
           activation: Optional[str] = None,
           residual: Optional[torch.Tensor] = None,
           scale: Optional[float] = None) -> torch.Tensor:
    """fagen.linear (no out=) through torch.ops.fagen.linear:
    differentiable, traceable by torch.compile (fullgraph=True).  The
    checks that need no addresses are fagen.linear's, run before the op
    (its activation becomes an fg_activation, scale a float, 1.0 for
    None)."""
    act, alpha = _lin_validate(torch, x, weight, bias, residual, activation,
                               scale)
    return torch.ops.fagen.linear(x, weight, bias, residual, alpha, act)
