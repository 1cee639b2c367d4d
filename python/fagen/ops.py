"""fagen's attention as a PyTorch custom op, for torch.compile.

    from fagen import ops
    out, lse = ops.attention(q, k, v, causal=True)   # torch.ops.fagen.attention

fagen.attention calls libfagen through ctypes, which torch.compile cannot
trace: a graph break, and an error under fullgraph=True.  Importing this
module registers torch.ops.fagen.attention with torch.library (PyTorch
2.4 or later), with a fake (meta) implementation that gives the output
shapes, so a compiled graph keeps the call as one opaque node
(fullgraph=True works).  The arguments and results are fagen.attention's
(window and softcap as there; sinks a float32 (H,) tensor).  Forward
only: there is no autograd formula yet, so a call that needs gradients
fails.  Issue #17.
"""

from typing import Optional, Tuple

try:
    import torch
except ImportError as e:
    raise ImportError("fagen.ops needs PyTorch (import torch failed: %s)"
                      % e) from None

import fagen

__all__ = ["attention"]


@torch.library.custom_op("fagen::attention", mutates_args=(),
                         device_types="cuda")
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               causal: bool, scale: Optional[float], windowed: bool,
               window_left: int, window_right: int, softcap: float,
               sinks: Optional[torch.Tensor]
               ) -> Tuple[torch.Tensor, torch.Tensor]:
    return fagen.attention(
        q, k, v, causal=causal, scale=scale,
        window=(window_left, window_right) if windowed else None,
        softcap=softcap if softcap > 0 else None, sinks=sinks)


@_attention.register_fake
def _(q, k, v, causal, scale, windowed, window_left, window_right, softcap,
      sinks):
    b, h, sq, d = q.shape
    return (q.new_empty((b, h, sq, d)),
            q.new_empty((b, h, sq), dtype=torch.float32))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              causal: bool = False, scale: Optional[float] = None,
              window: Optional[Tuple[int, int]] = None,
              softcap: Optional[float] = None,
              sinks: Optional[torch.Tensor] = None
              ) -> Tuple[torch.Tensor, torch.Tensor]:
    """fagen.attention through torch.ops.fagen.attention: (out, lse)."""
    wl, wr = window if window is not None else (-1, -1)
    return torch.ops.fagen.attention(q, k, v, causal, scale,
                                     window is not None, wl, wr,
                                     float(softcap or 0.0), sinks)
