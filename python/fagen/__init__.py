"""fagen: fused attention from libfagen, on PyTorch CUDA tensors.

    import fagen
    out, lse = fagen.attention(q, k, v, causal=True)

q is (B, H, Sq, D) and k, v are (B, H, Sk, D), the layout of
torch.nn.functional.scaled_dot_product_attention, with any strides whose
last one is 1: contiguous tensors, (B, S, H, D) tensors transposed to
(B, H, S, D), slices of a packed QKV tensor.  dtype bfloat16 or float16,
D 64, 128 or 256, all on one CUDA device (sm_90: H100, H200).  out is a new
contiguous (B, H, Sq, D) tensor of q's dtype, lse a float32 (B, H, Sq)
tensor: log(sum(exp(q k^T * scale))), the natural log.  scale None means
1/sqrt(D).  Causal attention is aligned to the bottom right (query i sees
keys j <= i + Sk - Sq), as in FlashAttention; scaled_dot_product_attention
aligns is_causal to the top left, which differs only when Sq != Sk.  A
row that sees no key gets zeros and lse = -inf.  sinks, a float32 (H,)
tensor, adds gpt-oss's attention sinks: sinks[h] (a logit in the units of
the scaled scores) joins the softmax denominator of every row of head h,
and a row that sees no key then gets lse = sinks[h].  alibi_slopes, a
float32 (H,) tensor, adds ALiBi as FlashAttention defines it: the bias
-alibi_slopes[h] * |i + Sk - Sq - j| joins the scaled score of query i
and key j (and so the lse).

The kernel runs asynchronously on torch's current stream; on the legacy
default stream (stream 0), which libfagen never launches on, it runs on
the calling thread's per-thread default stream instead, made to wait for
the legacy stream first when another thread launched last (which orders
it after the other threads' work: autograd runs backwards on a thread of
its own; a per-thread stream waits for the legacy stream's earlier work
by itself), and the legacy stream waits for it in turn.  fagen.attention and fagen.attention_varlen are
differentiable (torch.autograd.Functions whose backward is
fg_attention_backward: head_dim 64, 96, 128, 192 and 256 (head_dim_v =
head_dim, or 128 with 192), causal or not, GQA/MQA,
windows, softcaps and ALiBi; other variants raise NotImplementedError in
the backward); fagen.reference has no backward and refuses calls that
would need gradients (use torch.no_grad() or torch.inference_mode()).

fagen.reference() computes the same with the unfused float32 baseline
(nvrtc-compiled CUDA C), for checking.  The package imports without
libfagen, a GPU or PyTorch; those are needed when a function is called.
libfagen is found through $FAGEN_LIB, next to this file (where pip
install puts it), the dynamic linker's path (libfagen.so.0), then the
source tree's build/; where no CUDA toolkit is installed it assembles PTX
with the nvidia-cuda-nvcc and nvidia-nvjitlink wheels (fagen[cuda];
_cuda.py).  fagen.__version__ is libfagen's version.

fagen.flex_attention, fagen.create_block_mask and fagen.BlockMask
(flex.py) take FlexAttention's score_mod and mask_mod, traced into
fagen's schedule language (_flextrace.py; issue #22).  fagen.rms_norm and
fagen.layer_norm (norm.py) are RMSNorm and LayerNorm with an optional
fused residual add, fagen.softmax a differentiable softmax, and
fagen.cross_entropy (xent.py) the cross-entropy loss of rows of any width,
and fagen.linear (linear.py) torch.nn.functional.linear with a fused
epilogue (activation, scale, residual) on the warp-specialized GEMM
(issue #26).  fagen.attention_with_kvcache (decode.py) is
flash_attn_with_kvcache: decoding attention over a contiguous or paged
KV cache, new keys and values appended first, split-KV (issue #16).
fagen.distributed (distributed.py, imported on its own) is context
parallelism on torch.distributed: ring_attention, ring_attention_varlen
and ulysses_attention over a sequence sharded across ranks (issue #23).

Without a GPU, fagen.use_simulator("sm_90a") (or "sm_100a"), or
FAGEN_SIM=1 / sm_90a / sm_100a in the environment, runs every call on
libfagen's CPU simulator (issue #18; docs/TARGETS.md, section 8) for
debugging a schedule's numerics and hangs: the functions then take and
return CPU tensors, run synchronously, and are as slow as the simulator
(about a million warp instructions a second: test shapes, not a
model's).  Their autograd backwards and fagen.ops run there too;
fagen.reference does not (FG_ERR_UNSUPPORTED).  fagen.simulator() says
which target is simulated (None: the GPU).  _device.py holds the
difference between the two modes.
"""

import ctypes
import os
import threading

from . import _cuda, _device
from ._device import _Options, simulator, use_simulator
from .flex import BlockMask, create_block_mask, flex_attention

__all__ = ["attention", "attention_varlen", "reference", "reference_varlen",
           "version",
           "FagenError", "flex_attention", "create_block_mask",
           "BlockMask", "rms_norm", "layer_norm", "softmax",
           "cross_entropy", "linear", "attention_with_kvcache",
           "use_simulator", "simulator"]

_STATUS = [
    "FG_OK", "FG_ERR_INVALID", "FG_ERR_NOMEM", "FG_ERR_IO",
    "FG_ERR_COMPILE", "FG_ERR_NO_DRIVER", "FG_ERR_NO_DEVICE",
    "FG_ERR_UNSUPPORTED", "FG_ERR_JIT", "FG_ERR_CUDA",
]
_DTYPE_BF16, _DTYPE_F16 = 1, 2
# attention() and attention_varlen() record the autograd graph themselves
# and run the forward with gradients off, so only reference() gets here
_NO_BACKWARD = ("fagen.reference has no backward; call it under "
                "torch.no_grad() or torch.inference_mode()")
class FagenError(RuntimeError):
    """A libfagen call failed: status is its fg_status name."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status


class _Args(ctypes.Structure):      # fg_attention_args
    _fields_ = [
        ("q", ctypes.c_uint64), ("k", ctypes.c_uint64),
        ("v", ctypes.c_uint64), ("o", ctypes.c_uint64),
        ("lse", ctypes.c_uint64),
        ("q_strides", ctypes.c_int64 * 4), ("k_strides", ctypes.c_int64 * 4),
        ("v_strides", ctypes.c_int64 * 4), ("o_strides", ctypes.c_int64 * 4),
        ("batch", ctypes.c_int64), ("heads", ctypes.c_int64),
        ("seq_q", ctypes.c_int64), ("seq_k", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("dtype", ctypes.c_int), ("causal", ctypes.c_int),
        ("scale", ctypes.c_double),
        ("schedule", ctypes.c_char_p),
        ("heads_k", ctypes.c_int64),
        ("window", ctypes.c_int),
        ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double),
        ("sinks", ctypes.c_uint64),
        ("cu_seqlens_q", ctypes.c_uint64), ("cu_seqlens_k", ctypes.c_uint64),
        ("max_seqlen_q", ctypes.c_int64), ("max_seqlen_k", ctypes.c_int64),
        ("alibi_slopes", ctypes.c_uint64),
        ("mods", ctypes.c_char_p),
        ("score_mod", ctypes.c_int), ("mask_mod", ctypes.c_int),
        ("mod_args", ctypes.c_void_p), ("nmod_args", ctypes.c_int),
        ("block_kv_num", ctypes.c_uint64), ("block_kv_idx", ctypes.c_uint64),
        ("block_full_num", ctypes.c_uint64),
        ("block_full_idx", ctypes.c_uint64),
        ("pack_gqa", ctypes.c_int),
        ("head_dim_v", ctypes.c_int64),
        ("block_batch", ctypes.c_int64), ("block_heads", ctypes.c_int64),
    ]


_MAX_RANK = 5                       # FG_MAX_RANK
_ARG_TENSOR = 3                     # FG_ARG_TENSOR


class _Tensor(ctypes.Structure):    # fg_tensor
    _fields_ = [("ptr", ctypes.c_uint64), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * _MAX_RANK),
                ("strides", ctypes.c_int64 * _MAX_RANK)]


class _Arg(ctypes.Structure):       # fg_arg
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int),
                ("i", ctypes.c_int64), ("f", ctypes.c_double),
                ("t", _Tensor)]


class _BwdArgs(ctypes.Structure):   # fg_attention_bwd_args
    _fields_ = [
        ("fwd", _Args), ("dout", ctypes.c_uint64),
        ("dout_strides", ctypes.c_int64 * 4),
        ("dq", ctypes.c_uint64), ("dk", ctypes.c_uint64),
        ("dv", ctypes.c_uint64),
        ("dq_strides", ctypes.c_int64 * 4),
        ("dk_strides", ctypes.c_int64 * 4),
        ("dv_strides", ctypes.c_int64 * 4),
        ("schedule", ctypes.c_char_p),
        ("block_qlist", ctypes.c_uint64),
        ("deterministic", ctypes.c_int),
    ]


_lock = threading.Lock()
_lib = None


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("FAGEN_LIB")
    if env:
        return [env]
    return [os.path.join(here, "libfagen.so"), "libfagen.so.0",
            os.path.join(here, "..", "..", "build", "libfagen.so")]


def _load():
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        _cuda.use_wheels()
        errors = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                errors.append(str(e))
        else:
            raise FagenError("FG_ERR_NO_LIBRARY", "cannot load libfagen (%s); "
                             "set FAGEN_LIB to libfagen.so" % "; ".join(errors))
        lib.fg_version.restype = ctypes.c_char_p
        lib.fg_errmsg.restype = ctypes.c_char_p
        lib.fg_errmsg.argtypes = [ctypes.c_void_p]
        lib.fg_ctx_create.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.POINTER(_Options)]
        for fn in (lib.fg_attention_forward, lib.fg_attention_reference):
            fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Args),
                           ctypes.c_void_p]
        lib.fg_attention_backward.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(_BwdArgs), ctypes.c_void_p]
        _lib = lib
        return lib


def version():
    """libfagen's version, "MAJOR.MINOR.PATCH"."""
    return _load().fg_version().decode()


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("fagen.attention needs PyTorch (import torch "
                          "failed: %s)" % e) from None
    return torch


def _check(torch, q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, not %s"
                            % (name, type(t).__name__))
        _device.check(name, t)
        if t.dim() != 4:
            raise ValueError("%s has %d dimensions: fagen takes (B, H, S, D)"
                             % (name, t.dim()))
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise ValueError("%s is %s: fagen takes torch.bfloat16 or "
                             "torch.float16" % (name, t.dtype))
        if t.stride(-1) != 1:
            raise ValueError("%s has stride %d in its last dimension: fagen "
                             "needs it contiguous (1); call .contiguous()"
                             % (name, t.stride(-1)))
    if k.device != q.device or v.device != q.device:
        raise ValueError("q, k, v are on %s, %s, %s: they must share a "
                         "device" % (q.device, k.device, v.device))
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError("q, k, v are %s, %s, %s: they must share a dtype"
                         % (q.dtype, k.dtype, v.dtype))
    b, h, _, d = q.shape
    if k.shape[:3] != v.shape[:3] or k.shape[0] != b or k.shape[3] != d:
        raise ValueError("q is %s, k %s, v %s: k must be (B, Hk, Sk, D) "
                         "with q's B and D, and v (B, Hk, Sk, Dv)"
                         % (tuple(q.shape), tuple(k.shape),
                            tuple(v.shape)))
    if k.shape[1] < 1 or h % k.shape[1]:
        raise ValueError("q has %d heads and k, v %d: the query heads must "
                         "be a multiple of the K/V heads (grouped-query "
                         "attention)" % (h, k.shape[1]))
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        raise RuntimeError(_NO_BACKWARD)


def _check_sinks(torch, sinks, q, name="sinks"):
    h = q.shape[1]
    if not isinstance(sinks, torch.Tensor) or sinks.shape != (h,) or \
            sinks.dtype != torch.float32 or sinks.device != q.device or \
            not sinks.is_contiguous():
        raise ValueError("%s must be a contiguous float32 (H,) = (%d,) "
                         "tensor on q's device" % (name, h))
    if torch.is_grad_enabled() and sinks.requires_grad:
        raise RuntimeError(_NO_BACKWARD)


def _check_opts(torch, q, scale, window, softcap, sinks, alibi_slopes=None):
    if sinks is not None:
        _check_sinks(torch, sinks, q)
    if alibi_slopes is not None:
        _check_sinks(torch, alibi_slopes, q, "alibi_slopes")
    if scale is not None and not scale > 0:
        raise ValueError("scale is %r: it must be > 0 (None: 1/sqrt(D))"
                         % (scale,))
    if window is not None and (
            not isinstance(window, (tuple, list)) or len(window) != 2 or
            not all(isinstance(w, int) and w >= -1 for w in window)):
        raise ValueError("window is %r: it must be (left, right), each a "
                         "number of keys >= 0 or -1 for unbounded"
                         % (window,))
    if softcap is not None and not softcap >= 0:
        raise ValueError("softcap is %r: it must be > 0 (None or 0: none)"
                         % (softcap,))


def _call(fn_name, q, k, v, causal, scale, schedule=None, out=None,
          lse=None, window=None, softcap=None, sinks=None, alibi_slopes=None,
          pack_gqa=None):
    torch = _torch()
    _check(torch, q, k, v)
    _check_opts(torch, q, scale, window, softcap, sinks, alibi_slopes)
    b, h, sq, d = q.shape
    oshape = (b, h, sq, v.shape[3])     # V's head dim
    if out is None:
        out = torch.empty(oshape, dtype=q.dtype, device=q.device)
    elif not isinstance(out, torch.Tensor) or out.shape != oshape or \
            out.dtype != q.dtype or out.device != q.device or \
            out.stride(-1) != 1:
        raise ValueError("out must be a (B, H, Sq, Dv) = %s tensor of q's "
                         "dtype and device with a contiguous last dimension"
                         % (oshape,))
    if lse is None:
        lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    elif not isinstance(lse, torch.Tensor) or \
            lse.shape != (b, h, sq) or lse.dtype != torch.float32 or \
            lse.device != q.device or not lse.is_contiguous():
        raise ValueError("lse must be a contiguous float32 (B, H, Sq) = %s "
                         "tensor on q's device" % ((b, h, sq),))
    if pack_gqa not in (None, True, False):
        raise ValueError("pack_gqa must be None, True or False, not %r"
                         % (pack_gqa,))
    _launch(torch, fn_name, q, k, v, out, lse, b, causal, scale, schedule,
            window, softcap, sinks, alibi_slopes=alibi_slopes,
            pack_gqa=pack_gqa)
    return out, lse


def _launch(torch, fn_name, q, k, v, out, lse, batch, causal, scale,
            schedule, window, softcap, sinks, varlen=None, alibi_slopes=None,
            bwd=None, pack_gqa=None, deterministic=False):
    """q, k, v, out as (B, H, S, D) views; varlen: None or (cu_seqlens_q,
    cu_seqlens_k, max_seqlen_q, max_seqlen_k); bwd: None or (dout, dq, dk,
    dv) for fg_attention_backward, the forward's arguments in fwd, and
    deterministic its flag."""
    _, h, sq, d = q.shape
    a = _Args(q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(),
              o=out.data_ptr(), lse=lse.data_ptr(),
              batch=batch, heads=h, seq_q=sq, seq_k=k.shape[2], head_dim=d,
              heads_k=k.shape[1], window=0 if window is None else 1,
              window_left=0 if window is None else window[0],
              window_right=0 if window is None else window[1],
              softcap=float(softcap or 0.0),
              dtype=_DTYPE_BF16 if q.dtype == torch.bfloat16 else _DTYPE_F16,
              causal=1 if causal else 0,
              scale=0.0 if scale is None else float(scale),
              schedule=None if schedule is None else schedule.encode(),
              sinks=0 if sinks is None else sinks.data_ptr(),
              alibi_slopes=0 if alibi_slopes is None else
              alibi_slopes.data_ptr(),
              pack_gqa=0 if pack_gqa is None else 1 if pack_gqa else -1,
              head_dim_v=v.shape[3])
    if varlen is not None:
        a.cu_seqlens_q = varlen[0].data_ptr()
        a.cu_seqlens_k = varlen[1].data_ptr()
        a.max_seqlen_q, a.max_seqlen_k = varlen[2], varlen[3]
    a.q_strides[:] = q.stride()
    a.k_strides[:] = k.stride()
    a.v_strides[:] = v.stride()
    a.o_strides[:] = out.stride()
    if bwd is not None:
        a = _BwdArgs(fwd=a, dout=bwd[0].data_ptr(), dq=bwd[1].data_ptr(),
                     dk=bwd[2].data_ptr(), dv=bwd[3].data_ptr(),
                     deterministic=1 if deterministic else 0)
        a.dout_strides[:] = bwd[0].stride()
        a.dq_strides[:] = bwd[1].stride()
        a.dk_strides[:] = bwd[2].stride()
        a.dv_strides[:] = bwd[3].stride()
    _flex_call(torch, q, fn_name, a)


def _flex_args(torch, q, k, v, out, lse, scale, mods_text, tensors, blocks,
               score_mod, mask_mod):
    """fg_attention_args of a flex call, and what must outlive it."""
    b, h, sq, d = q.shape
    text = mods_text or None
    if score_mod is None:
        score_mod = bool(text) and "mod score_mod(" in text
    if mask_mod is None:
        mask_mod = bool(text) and "mod mask_mod(" in text
    args = (_Arg * max(len(tensors), 1))()
    for i, (name, t) in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.device != q.device or \
                not t.is_contiguous():
            raise ValueError("the mods' global %s must be a contiguous "
                             "tensor on q's device" % name)
        args[i].name = name.encode()
        args[i].kind = _ARG_TENSOR
        args[i].t.ptr = t.data_ptr()
    a = _Args(q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(),
              o=out.data_ptr(), lse=lse.data_ptr(), batch=b, heads=h,
              seq_q=sq, seq_k=k.shape[2], head_dim=d, heads_k=k.shape[1],
              dtype=_DTYPE_BF16 if q.dtype == torch.bfloat16 else _DTYPE_F16,
              scale=0.0 if scale is None else float(scale),
              mods=None if text is None else text.encode(),
              score_mod=1 if text and score_mod else 0,
              mask_mod=1 if text and mask_mod else 0,
              mod_args=ctypes.cast(args, ctypes.c_void_p) if tensors else
              None, nmod_args=len(tensors))
    if blocks is not None:
        # B and H of the mask: the query's, or 1 (one mask for all);
        # any other shape fails the check below
        nq, nk = -(-sq // 128), -(-k.shape[2] // 128)
        mb, mh = (blocks[0].shape[:2] if isinstance(blocks[0], torch.Tensor)
                  and blocks[0].dim() == 3 else (b, h))
        mb, mh = (mb if mb in (1, b) else b), (mh if mh in (1, h) else h)
        for t, shape in zip(blocks, ((mb, mh, nq), (mb, mh, nq, nk)) * 2):
            if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 \
                    or tuple(t.shape) != shape or t.device != q.device or \
                    not t.is_contiguous():
                raise ValueError("block mask tensors must be contiguous "
                                 "int32 %s and %s on q's device (B and "
                                 "H may be 1)"
                                 % ((b, h, nq), (b, h, nq, nk)))
        (a.block_kv_num, a.block_kv_idx, a.block_full_num,
         a.block_full_idx) = (t.data_ptr() for t in blocks)
        a.block_batch, a.block_heads = mb, mh
    for name, t in (("q", q), ("k", k), ("v", v), ("o", out)):
        getattr(a, name + "_strides")[:] = t.stride()
    return a, (args, text)


def _flex_call(torch, q, fn, a):
    """libfagen's fn (an attention entry point) with args a on torch's
    current stream of q's device; FagenError on a refusal."""
    lib = _load()
    ctx = _device.ctx(torch, lib, q.device)
    st = getattr(lib, fn)(ctx, ctypes.byref(a),
                          _device.stream(torch, q.device))
    if st:
        raise FagenError(_STATUS[st] if st < len(_STATUS) else str(st),
                         lib.fg_errmsg(ctx).decode(errors="replace"))


def _flex_launch(q, k, v, *, scale, mods_text, tensors, blocks, enable_gqa,
                 return_lse, score_mod=None, mask_mod=None):
    """fg_attention_forward with a mod file (fagen.flex_attention's
    launcher): q, k, v (B, H, S, D); mods_text the traced mod file or None;
    tensors [(global name, tensor)] it reads, each contiguous on q's
    device; blocks None or (kv_num_blocks, kv_indices, full_kv_num_blocks,
    full_kv_indices), contiguous int32 [B, H, cdiv(Sq, 128)(, cdiv(Sk,
    128))]; score_mod / mask_mod: whether mods_text defines that hook
    (None: whether it declares 'mod score_mod' / 'mod mask_mod').
    Returns out, or (out, lse)."""
    torch = _torch()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor" % name)
    if not enable_gqa and k.shape[1] != q.shape[1]:
        raise ValueError("q has %d heads and k, v %d: pass enable_gqa=True "
                         "for grouped-query attention"
                         % (q.shape[1], k.shape[1]))
    if scale is not None and not scale > 0:
        raise ValueError("scale is %r: it must be > 0 (None: 1/sqrt(D))"
                         % (scale,))
    with torch.no_grad():
        _check(torch, q, k, v)
    b, h, sq, d = q.shape
    out = torch.empty((b, h, sq, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    a, keep = _flex_args(torch, q, k, v, out, lse, scale, mods_text, tensors,
                         blocks, score_mod, mask_mod)
    _flex_call(torch, q, "fg_attention_forward", a)
    del keep
    return (out, lse) if return_lse else out


def _flex_backward(q, k, v, out, lse, dout, *, scale, mods_text, tensors,
                   blocks, block_qlist=None, score_mod=None,
                   mask_mod=None):
    """fg_attention_backward of a _flex_launch call: dq, dk, dv (dense,
    like q, k, v).  block_qlist: None, or with blocks the int32 [B, Hk,
    cdiv(Sk, 128), 2 * Hq // Hk * cdiv(Sq, 128) + 1] lists of the query
    blocks each K/V head's key block meets, masked or whole
    (flex._qlist)."""
    torch = _torch()
    dout = dout.contiguous() if dout.stride(-1) != 1 or \
        dout.data_ptr() % 16 else dout
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    a, keep = _flex_args(torch, q, k, v, out, lse, scale, mods_text, tensors,
                         blocks, score_mod, mask_mod)
    ba = _BwdArgs(fwd=a, dout=dout.data_ptr(), dq=dq.data_ptr(),
                  dk=dk.data_ptr(), dv=dv.data_ptr(),
                  block_qlist=0 if block_qlist is None else
                  block_qlist.data_ptr())
    ba.dout_strides[:] = dout.stride()
    ba.dq_strides[:] = dq.stride()
    ba.dk_strides[:] = dk.stride()
    ba.dv_strides[:] = dv.stride()
    _flex_call(torch, q, "fg_attention_backward", ba)
    del keep
    return dq, dk, dv


def _bwd_unsupported(q, window, softcap, sinks, alibi_slopes, v=None):
    """What of this forward call fg_attention_backward does not take (a
    phrase for NotImplementedError), or None."""
    d = q.shape[-1]
    if d not in (64, 96, 128, 192, 256):
        return "head_dim %s" % d
    if v is not None and v.shape[-1] != d and (d, v.shape[-1]) != (192, 128):
        return "head_dim_v %s with head_dim %s" % (v.shape[-1], d)
    return None


def _bwd_refuse(what):
    raise NotImplementedError(
        "fagen.attention has no backward pass for %s yet (it supports "
        "head_dim 64, 96, 128, 192 and 256, head_dim_v = head_dim or 128 "
        "with 192, causal or not, GQA/MQA, windows, softcaps and ALiBi); the "
        "forward ran, "
        "its gradient cannot be computed" % what)


def _tma_ok(t):
    """t's layout as fg_attention_backward takes it: 16-byte aligned, the
    last stride 1, the others positive multiples of 8 elements."""
    return t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and \
        all(s > 0 and s % 8 == 0 for s in t.stride()[:-1])


def _backward(q, k, v, out, lse, dout, causal, scale, window=None,
              softcap=None, alibi_slopes=None, deterministic=False):
    """(dq, dk, dv) by fg_attention_backward for the forward call that
    gave out and lse (window, softcap and ALiBi as it had them; sinks
    need nothing here); dq, dk, dv new
    tensors laid out like q, k, v by torch.empty_like (their strides where
    they are dense, else a dense layout in their dimension order), dout
    copied only where its layout is not TMA's.  deterministic: dq's
    partial sums added in a fixed order (bitwise repeatable)."""
    torch = _torch()
    if not _tma_ok(dout):
        dout = dout.clone(memory_format=torch.contiguous_format)
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    _launch(torch, "fg_attention_backward", q, k, v, out, lse, q.shape[0],
            causal, scale, None, window, softcap, None,
            alibi_slopes=alibi_slopes, bwd=(dout, dq, dk, dv),
            deterministic=deterministic)
    return dq, dk, dv


_Function = None


def _function(torch):
    """fagen.attention's torch.autograd.Function, made on first use (the
    package imports without PyTorch)."""
    global _Function
    if _Function is not None:
        return _Function
    from torch.autograd.function import once_differentiable

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, sinks, alibi_slopes, opts):
            (causal, scale, schedule, window, softcap, pack_gqa,
             deterministic) = opts
            out, lse = _call("fg_attention_forward", q, k, v, causal, scale,
                             schedule, None, None, window, softcap, sinks,
                             alibi_slopes, pack_gqa)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.mark_non_differentiable(lse)
            ctx.causal, ctx.scale = causal, scale
            ctx.window, ctx.softcap = window, softcap
            ctx.alibi, ctx.sinks = alibi_slopes, sinks
            ctx.deterministic = deterministic
            ctx.unsupported = _bwd_unsupported(q, window, softcap, sinks,
                                               alibi_slopes, v)
            return out, lse

        @staticmethod
        @once_differentiable
        def backward(ctx, dout, dlse):
            if ctx.unsupported:
                _bwd_refuse(ctx.unsupported)
            if ctx.needs_input_grad[4]:
                _bwd_refuse("the ALiBi slopes themselves (alibi_slopes "
                            "requires grad; q, k and v have theirs)")
            q, k, v, out, lse = ctx.saved_tensors
            dq, dk, dv = _backward(q, k, v, out, lse, dout, ctx.causal,
                                   ctx.scale, ctx.window, ctx.softcap,
                                   ctx.alibi, ctx.deterministic)
            dsinks = None
            if ctx.needs_input_grad[3]:
                # a sink is a logit with no value row: its gradient is
                # -sum over rows of P_sink * DELTA, P_sink = exp(sink -
                # LSE) (the LSE holds the sink), DELTA = rowsum(dO * O)
                delta = (dout.float() * out.float()).sum(-1)
                dsinks = -(torch.exp(ctx.sinks.float()[None, :, None] -
                                     lse) * delta).sum((0, 2))
            return dq, dk, dv, dsinks, None, None

    _Function = Attention
    return Attention


def attention(q, k, v, causal=False, scale=None, schedule=None, out=None,
              lse=None, window=None, softcap=None, sinks=None,
              alibi_slopes=None, pack_gqa=None, deterministic=False):
    """softmax(q k^T * scale) v and its log-sum-exp: (out, lse).

    q: (B, H, Sq, D), k and v: (B, Hk, Sk, D), bfloat16 or float16 CUDA
    tensors with a contiguous last dimension; D 64, 128 or 256.  Hk
    divides H: Hk < H is grouped-query attention (query head i reads K/V
    head i // (H // Hk); Hk = 1 is MQA), with no copy of K or V.  causal:
    bottom-right aligned.  scale: None for 1/sqrt(D).  Runs on torch's
    current stream.  Raises FagenError with libfagen's message when it
    refuses the arguments (alignment, strides, sizes) or cannot run.
    schedule: None for the fastest shipped schedule (on sm_90: the
    non-specialized "fa_fwd_baseline_sm90.fa" at head dim 64, the
    warp-specialized "fa_fwd_sm90.fa" at 128), or the file name of another
    shipped attention schedule taking the same parameters.  out, lse:
    tensors to write the results into (None: new ones).  window: None, or
    (left, right), sliding-window attention as flash_attn's window_size:
    query i (aligned to the bottom right, i' = i + Sk - Sq) sees keys
    i' - left .. i' + right, -1 for an unbounded side; with causal the
    right side is 0.  softcap: None, or cap > 0: each score s becomes
    cap * tanh(s / cap) (Gemma 2).  sinks: None, or a contiguous float32
    (H,) tensor of gpt-oss's per-head sink logits (not multiplied by
    scale), which join each row's softmax denominator.  alibi_slopes: None,
    or a contiguous float32 (H,) tensor: ALiBi as flash_attn's
    alibi_slopes, the bias -alibi_slopes[h] * |i + Sk - Sq - j| added to
    the scaled (and softcapped) score of query i and key j.  pack_gqa
    (flash_attn's): with Hk < H, the H // Hk query heads of one K/V head
    share the rows of one 128-row tile, so K and V are read once for
    them (fa_fwd_sm90.fa; H // Hk must divide 128); None: when that fills
    the tiles better (Sq short of 128, as in decoding), True: whenever it
    can, False: never.  The result is the same either way.

    Differentiable: where q, k or v requires gradients (and grad mode is
    on), out's backward is fg_attention_backward (head_dim 64, 96, 128,
    192 and 256, causal or not, GQA/MQA, windows, softcaps, ALiBi, sinks,
    whose gradient too is computed; dk and dv have k's and v's heads;
    head_dim_v 128 with head_dim 192 too, DeepSeek's MLA prefill shape).
    lse is not differentiable (as SDPA's internal logsumexp).  out= and
    lse= do not combine with gradients (RuntimeError), as PyTorch's out=
    arguments.  deterministic (flash_attn_func's): False, dq's float32
    partial sums are added in an order that varies from run to run, so dq
    may differ in the last bits between two backward passes (dk and dv
    never do); True, they are added in a fixed order and dq is bitwise
    repeatable, at some cost in speed (fg_attention_backward's
    deterministic; not yet measured).  It matters only to the backward;
    on sm_100 it raises FagenError (FG_ERR_UNSUPPORTED) there."""
    torch = _torch()
    if not (torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad
            for t in (q, k, v, sinks, alibi_slopes))):
        return _call("fg_attention_forward", q, k, v, causal, scale,
                     schedule, out, lse, window, softcap, sinks,
                     alibi_slopes, pack_gqa)
    if out is not None or lse is not None:
        raise RuntimeError("fagen.attention: out= and lse= do not support "
                           "automatic differentiation, but an argument "
                           "requires grad")
    return _function(torch).apply(q, k, v, sinks, alibi_slopes,
                                  (causal, scale, schedule, window, softcap,
                                   pack_gqa, bool(deterministic)))


def reference(q, k, v, causal=False, scale=None, out=None, lse=None,
              window=None, softcap=None, sinks=None, alibi_slopes=None):
    """The same result from libfagen's unfused float32 baseline (compiled
    with nvrtc): any D up to 512 and 2-byte alignment; for checking."""
    return _call("fg_attention_reference", q, k, v, causal, scale, None,
                 out, lse, window, softcap, sinks, alibi_slopes)


# fagen.rms_norm, layer_norm, softmax, cross_entropy and linear (issue
# #26) and attention_with_kvcache (issue #16); norm.py, xent.py,
# linear.py and decode.py take _Tensor and _load from here, so they
# are imported once those are defined.  fagen.linear is the
# function; its module is sys.modules["fagen.linear"]
from .norm import layer_norm, rms_norm, softmax  # noqa: E402
from .xent import cross_entropy  # noqa: E402
from .linear import linear  # noqa: E402
from .decode import attention_with_kvcache  # noqa: E402
# attention_varlen (issue #12); distributed.py calls _varlen and
# _varlen_backward
from .varlen import (attention_varlen, reference_varlen,  # noqa: E402
                     _varlen, _varlen_backward)  # noqa: F401


def __getattr__(name):
    # fagen.__version__ is libfagen's: one version for the library, the
    # CLI and the package (meson.build's; issue #17)
    if name == "__version__":
        return version()
    raise AttributeError("module 'fagen' has no attribute %r" % name)
