"""varlen.py: fagen.attention_varlen and reference_varlen (issue #12):
attention over a packed batch of sequences of different lengths, as
flash_attn_varlen_func takes it (cu_seqlens_q/k offsets, max lengths),
and its backward through torch.autograd.  Each call is one launch of the
runtime's attention entry points with the offsets bound (_launch, from
__init__.py, which imports this module once _launch is defined)."""
from . import (_bwd_refuse, _bwd_unsupported, _check, _check_opts, _launch,
               _torch)


def _check_cu(torch, name, cu, q, total, max_len, validate):
    if not isinstance(cu, torch.Tensor) or cu.dim() != 1 or \
            cu.dtype != torch.int32 or cu.numel() < 2 or \
            not cu.is_contiguous():
        raise ValueError("%s must be a contiguous int32 (B + 1,) tensor "
                         "of offsets" % name)
    if cu.device != q.device:
        raise ValueError("%s is on %s: it must be on q's device (%s)"
                         % (name, cu.device, q.device))
    if not isinstance(max_len, int) or isinstance(max_len, bool):
        raise TypeError("max_seqlen_%s must be an int" % name[-1])
    if not validate:
        return None
    off = cu.tolist()   # one small device-to-host copy
    if off[0] != 0 or any(b < a for a, b in zip(off, off[1:])) or \
            off[-1] > total:
        raise ValueError("%s is %s: offsets must start at 0, never "
                         "decrease and end at most at the total tokens "
                         "(%d)" % (name, off if len(off) <= 8 else
                                   str(off[:8])[:-1] + ", ...]", total))
    longest = max(b - a for a, b in zip(off, off[1:]))
    if longest > max_len:
        raise ValueError("max_seqlen_%s is %d but a sequence has %d tokens"
                         % (name[-1], max_len, longest))
    return off[-1]


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, causal=False, scale=None, window=None,
                     softcap=None, sinks=None, out=None, lse=None,
                     schedule=None, validate=True, alibi_slopes=None,
                     deterministic=False):
    torch = _torch()
    args = (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
            causal, scale, window, softcap, sinks, out, lse, schedule,
            validate, alibi_slopes)
    if not (torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad
            for t in (q, k, v, sinks, alibi_slopes))):
        return _varlen(*args)[:2]
    if out is not None or lse is not None:
        raise RuntimeError("fagen.attention_varlen: out= and lse= do not "
                           "support automatic differentiation, but an "
                           "argument requires grad")
    return _varlen_function(torch).apply(q, k, v, args,
                                         bool(deterministic))


attention_varlen.__doc__ = None   # set below, from _varlen's


def _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
            max_seqlen_k, causal=False, scale=None, window=None,
            softcap=None, sinks=None, out=None, lse=None,
            schedule=None, validate=True, alibi_slopes=None,
            _fn="fg_attention_forward"):
    """Attention over a packed batch of sequences of different lengths, as
    flash_attn_varlen_func: (out, lse).

    q: (total_q, H, D), k and v: (total_k, Hk, D), the B sequences one
    after the other; sequence b's queries are rows cu_seqlens_q[b] ..
    cu_seqlens_q[b + 1] - 1 of q and its keys rows cu_seqlens_k[b] ..
    cu_seqlens_k[b + 1] - 1 of k and v (int32 (B + 1,) CUDA tensors);
    max_seqlen_q, max_seqlen_k: ints, the longest sequence's lengths.
    Each sequence is attended alone, with attention()'s options (causal
    and window bottom-right aligned per sequence, as is ALiBi's distance
    i + Sk - Sq - j with each sequence's lengths; GQA when Hk < H).  out
    is (total_q, H, D) of q's dtype, lse float32 (H, total_q), as
    flash-attention's.  validate (default) copies the offsets to the host
    once and checks them (start at 0, non-decreasing, end at most at the
    totals, no sequence longer than its max_seqlen); validate=False skips
    that copy, e.g. under CUDA graphs: then bad offsets give undefined
    rows (never an access out of bounds).  Rows past the last sequence are
    left as they are in out (new ones: uninitialized).

    Differentiable (issue #13): where q, k or v requires gradients, the
    backward is fg_attention_backward on the packed batch (head_dim 64,
    96, 128, 192 and 256, head_dim_v 128 with 192, causal or not,
    GQA/MQA, windows, softcaps, ALiBi; sinks raise NotImplementedError
    in the backward); dq, dk, dv
    are new contiguous tensors of q's, k's and v's shapes, zero in rows
    outside every sequence.  deterministic (attention_varlen's, as
    flash_attn_varlen_func's): as attention()'s, dq bitwise repeatable
    from run to run when True."""
    torch = _torch()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if isinstance(t, torch.Tensor) and t.dim() != 3:
            raise ValueError("%s has %d dimensions: attention_varlen takes "
                             "(total_tokens, H, D)" % (name, t.dim()))
    q4, k4, v4 = (t.unsqueeze(0).transpose(1, 2)
                  if isinstance(t, torch.Tensor) else t for t in (q, k, v))
    _check(torch, q4, k4, v4)
    _check_opts(torch, q, scale, window, softcap, sinks, alibi_slopes)
    tq, h, d = q.shape
    endq = _check_cu(torch, "cu_seqlens_q", cu_seqlens_q, q, tq,
                     max_seqlen_q, validate)
    endk = _check_cu(torch, "cu_seqlens_k", cu_seqlens_k, q, k.shape[0],
                     max_seqlen_k, validate)
    if cu_seqlens_q.numel() != cu_seqlens_k.numel():
        raise ValueError("cu_seqlens_q has %d entries and cu_seqlens_k %d: "
                         "both are (B + 1,)" % (cu_seqlens_q.numel(),
                                                cu_seqlens_k.numel()))
    oshape = (tq, h, v.shape[2])        # V's head dim
    if out is None:
        out = torch.empty(oshape, dtype=q.dtype, device=q.device)
    elif not isinstance(out, torch.Tensor) or out.shape != oshape or \
            out.dtype != q.dtype or out.device != q.device or \
            not out.is_contiguous():
        raise ValueError("out must be a contiguous (total_q, H, Dv) = %s "
                         "tensor of q's dtype and device" % (oshape,))
    if lse is None:
        lse = torch.empty((h, tq), dtype=torch.float32, device=q.device)
    elif not isinstance(lse, torch.Tensor) or lse.shape != (h, tq) or \
            lse.dtype != torch.float32 or lse.device != q.device or \
            not lse.is_contiguous():
        raise ValueError("lse must be a contiguous float32 (H, total_q) = "
                         "%s tensor on q's device" % ((h, tq),))
    if endq == 0:
        return out, lse, endk   # no query rows: nothing to compute
    if endk:
        # K and V end where the last sequence does: the last sequence's
        # partial key block then reads zeros (TMA's out-of-bounds fill)
        # past it, never an uninitialized tail whose NaN would survive
        # P = 0 in P V (rows of the next sequence are read, as in
        # FlashAttention 3; they are finite where the inputs are)
        k4, v4 = k4[:, :, :endk], v4[:, :, :endk]
    _launch(torch, _fn, q4, k4, v4,
            out.unsqueeze(0).transpose(1, 2), lse, cu_seqlens_q.numel() - 1,
            causal, scale, schedule, window, softcap, sinks,
            (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k),
            alibi_slopes)
    return out, lse, endk


attention_varlen.__doc__ = _varlen.__doc__


def reference_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k, causal=False, scale=None, window=None,
                     softcap=None, sinks=None, out=None, lse=None,
                     validate=True, alibi_slopes=None):
    """attention_varlen's result from libfagen's unfused float32 baseline
    (fg_attention_reference, compiled with nvrtc), each sequence attended
    alone: for checking."""
    return _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                   max_seqlen_k, causal, scale, window, softcap, sinks, out,
                   lse, None, validate, alibi_slopes,
                   _fn="fg_attention_reference")[:2]


def _varlen_backward(q, k, v, out, lse, dout, cu_q, cu_k, mq, mk, causal,
                     scale, window, softcap, endk, alibi,
                     deterministic=False):
    """(dq, dk, dv) by fg_attention_backward for the attention_varlen call
    that gave out and lse (endk: _varlen's), new contiguous tensors of q's,
    k's and v's shapes, zero in rows outside every sequence;
    deterministic as _backward's."""
    torch = _torch()
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk, dv = (torch.zeros(t.shape, dtype=t.dtype, device=t.device)
              for t in (k, v))
    if out.shape[0] == 0:
        return dq.zero_(), dk, dv
    dout = dout.contiguous()
    q4, k4, v4, o4, g4, dq4, dk4, dv4 = (
        t.unsqueeze(0).transpose(1, 2)
        for t in (q, k, v, out, dout, dq, dk, dv))
    if endk:
        k4, v4, dk4, dv4 = (t[:, :, :endk] for t in (k4, v4, dk4, dv4))
    _launch(torch, "fg_attention_backward", q4, k4, v4, o4, lse,
            cu_q.numel() - 1, causal, scale, None, window, softcap,
            None, (cu_q, cu_k, mq, mk), alibi_slopes=alibi,
            bwd=(g4, dq4, dk4, dv4), deterministic=deterministic)
    return dq, dk, dv


_VarlenFunction = None


def _varlen_function(torch):
    """attention_varlen's torch.autograd.Function, made on first use."""
    global _VarlenFunction
    if _VarlenFunction is not None:
        return _VarlenFunction
    from torch.autograd.function import once_differentiable

    class VarlenAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, args, deterministic):
            with torch.no_grad():
                out, lse, endk = _varlen(*args)
            cu_q, cu_k, mq, mk, causal, scale, window, softcap, sinks = (
                args[3:12])
            ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k)
            ctx.mark_non_differentiable(lse)
            ctx.opts = (mq, mk, causal, scale, window, softcap, endk,
                        args[16], deterministic)
            ctx.unsupported = _bwd_unsupported(q.unsqueeze(0), window,
                                               softcap, sinks, args[16],
                                               v)
            if sinks is not None and sinks.requires_grad:
                ctx.unsupported = "the sinks' own gradient with a " \
                    "variable-length batch"
            return out, lse

        @staticmethod
        @once_differentiable
        def backward(ctx, dout, dlse):
            if ctx.unsupported:
                _bwd_refuse(ctx.unsupported)
            q, k, v, out, lse, cu_q, cu_k = ctx.saved_tensors
            if ctx.needs_input_grad == (False,) * 5:
                return (torch.zeros_like(q), torch.zeros_like(k),
                        torch.zeros_like(v), None, None)
            return _varlen_backward(q, k, v, out, lse, dout, cu_q, cu_k,
                                    *ctx.opts) + (None, None)

    _VarlenFunction = VarlenAttention
    return VarlenAttention
