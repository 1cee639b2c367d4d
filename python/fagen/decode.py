"""fagen.attention_with_kvcache: libfagen's fg_attention_decode (issue
#16), flash_attn_with_kvcache on PyTorch CUDA tensors.

    out = fagen.attention_with_kvcache(q, k_cache, v_cache, k, v,
                                       cache_seqlens=lens, causal=True)

q is (B, Sq, H, D), FlashAttention's layout: a few new query tokens
(Sq 1 to 16 in decoding, any count here) of each sequence.  The cache is
contiguous, k_cache and v_cache (B, Sk, Hk, D), or paged, (num_pages,
page_size, Hk, D) with page_table (B, max_pages) int32: key j of sequence
b is row j % page_size of page page_table[b, j // page_size].  k and v,
(B, Sn, Hk, D), are written into the cache at cache_seqlens[b] (in
place) before the attention, which then sees cache_seqlens[b] + Sn keys
of sequence b.  The keys are split among CTAs and merged (split-KV) and
the query heads of a K/V head share a tile (packed GQA).  The kernels
run on torch's current stream; with a CUDA graph being captured they are
captured (validate off, the workspace from PyTorch's allocator).
"""

import ctypes

from . import _STATUS, _device, _load
from .norm import _torch

__all__ = ["attention_with_kvcache"]

_MAX_SPLITS = 256


class _DecodeArgs(ctypes.Structure):        # fg_decode_args
    _fields_ = [
        ("q", ctypes.c_uint64), ("k_cache", ctypes.c_uint64),
        ("v_cache", ctypes.c_uint64), ("k_new", ctypes.c_uint64),
        ("v_new", ctypes.c_uint64), ("cache_seqlens", ctypes.c_uint64),
        ("page_table", ctypes.c_uint64), ("o", ctypes.c_uint64),
        ("lse", ctypes.c_uint64),
        ("q_strides", ctypes.c_int64 * 4), ("k_strides", ctypes.c_int64 * 4),
        ("v_strides", ctypes.c_int64 * 4),
        ("batch", ctypes.c_int64), ("seq_q", ctypes.c_int64),
        ("heads", ctypes.c_int64), ("heads_k", ctypes.c_int64),
        ("head_dim", ctypes.c_int64), ("cache_len", ctypes.c_int64),
        ("num_pages", ctypes.c_int64), ("page_size", ctypes.c_int64),
        ("max_pages", ctypes.c_int64), ("seq_new", ctypes.c_int64),
        ("dtype", ctypes.c_int), ("causal", ctypes.c_int),
        ("window", ctypes.c_int),
        ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double), ("scale", ctypes.c_double),
        ("num_splits", ctypes.c_int),
        ("workspace", ctypes.c_uint64), ("workspace_bytes", ctypes.c_size_t),
        ("validate", ctypes.c_int),
    ]


_ready = []


def _lib():
    """libfagen with the decode calls' argument types set."""
    from . import FagenError
    lib = _load()
    if not _ready:
        try:
            run = lib.fg_attention_decode
            size = lib.fg_attention_decode_workspace
        except AttributeError:
            raise FagenError("FG_ERR_NO_LIBRARY", "this libfagen has no "
                             "fg_attention_decode: it is older than the "
                             "fagen package; set FAGEN_LIB to a newer "
                             "one") from None
        run.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DecodeArgs),
                        ctypes.c_void_p]
        size.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DecodeArgs),
                         ctypes.POINTER(ctypes.c_size_t)]
        _ready.append(True)
    return lib


def _tensor(torch, name, t, q=None, dtype=None):
    """t is on fagen's device (on q's); of dtype, else q's, else a
    16-bit float."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, not %s"
                        % (name, type(t).__name__))
    _device.check(name, t)
    if q is None:
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise ValueError("%s is %s: fagen takes torch.bfloat16 or "
                             "torch.float16" % (name, t.dtype))
        return
    if t.device != q.device:
        raise ValueError("%s is on %s and q on %s: they must share a "
                         "device" % (name, t.device, q.device))
    want = q.dtype if dtype is None else dtype
    if t.dtype != want:
        raise ValueError("%s is %s: it must be %s%s" % (
            name, t.dtype, want, " (q's dtype)" if dtype is None else ""))


def _four(name, t, what):
    if t.dim() != 4:
        raise ValueError("%s has %d dimensions: it must be %s"
                         % (name, t.dim(), what))
    if t.stride(-1) != 1:
        raise ValueError("%s has stride %d in its last dimension: fagen "
                         "needs it contiguous (1)" % (name, t.stride(-1)))


def _strides(t):
    """t's strides as libfagen takes them: a dimension of extent 1 gets
    its dense stride (PyTorch may give such a one any stride)."""
    st = list(t.stride())
    for i in range(len(st) - 2, -1, -1):
        if t.shape[i] == 1:
            st[i] = st[i + 1] * t.shape[i + 1]
    return st


def _tma_ok(t):
    """q's layout as TMA reads it: 16-byte aligned, strides of 16 bytes."""
    return t.data_ptr() % 16 == 0 and \
        all(s > 0 and s % 8 == 0 for s in _strides(t)[:-1])


def _window(window):
    if window is None:
        return None
    if not isinstance(window, (tuple, list)) or len(window) != 2 or \
            not all(isinstance(w, int) and not isinstance(w, bool) and
                    w >= -1 for w in window):
        raise ValueError("window is %r: it must be (left, right), each a "
                         "number of keys >= 0 or -1 for unbounded"
                         % (window,))
    return window


def _number(name, x, text):
    """x as a float: None is 0; otherwise a real number >= 0 (text: what
    0 or None mean)."""
    if x is None:
        return 0.0
    if isinstance(x, bool) or not isinstance(x, (int, float)) or \
            not x >= 0 or x == float("inf"):
        raise ValueError("%s is %r: it must be a finite number > 0 (%s)"
                         % (name, x, text))
    return float(x)


def _seqlens(torch, cache_seqlens, q, b):
    """cache_seqlens as an int32 (B,) tensor on q's device, or None."""
    if cache_seqlens is None:
        return None
    if isinstance(cache_seqlens, int) and not isinstance(cache_seqlens,
                                                         bool):
        if cache_seqlens < 0:
            raise ValueError("cache_seqlens is %d: a length must be >= 0"
                             % cache_seqlens)
        return torch.full((b,), cache_seqlens, dtype=torch.int32,
                          device=q.device)
    _tensor(torch, "cache_seqlens", cache_seqlens, q, torch.int32)
    if tuple(cache_seqlens.shape) != (b,) or \
            not cache_seqlens.is_contiguous():
        raise ValueError("cache_seqlens has shape %s: it must be an int "
                         "or a contiguous int32 (B,) = (%d,) tensor"
                         % (tuple(cache_seqlens.shape), b))
    return cache_seqlens


def _pages(torch, page_table, block_table, q, b):
    if block_table is not None:
        if page_table is not None and page_table is not block_table:
            raise ValueError("page_table and block_table are the same "
                             "argument (block_table is FlashAttention's "
                             "name): give one of them")
        page_table = block_table
    if page_table is None:
        return None
    _tensor(torch, "page_table", page_table, q, torch.int32)
    if page_table.dim() != 2 or page_table.shape[0] != b or \
            not page_table.is_contiguous():
        raise ValueError("page_table has shape %s: it must be a "
                         "contiguous int32 (B, max_pages) tensor, B = %d"
                         % (tuple(page_table.shape), b))
    return page_table


def _check(torch, q, k_cache, v_cache, k, v, page_table):
    """The caches' and new tokens' types, devices, dtypes and shapes
    (q's are checked); returns (B, Hk)."""
    b, _, h, d = q.shape
    shape = "(num_pages, page_size, Hk, D)" if page_table is not None \
        else "(B, Sk, Hk, D)"
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        _tensor(torch, name, t, q)
        _four(name, t, shape)
    if k_cache.shape != v_cache.shape or k_cache.shape[3] != d or \
            (page_table is None and k_cache.shape[0] != b):
        raise ValueError("q is %s, k_cache %s, v_cache %s: the caches must "
                         "be %s with q's D%s" % (
                             tuple(q.shape), tuple(k_cache.shape),
                             tuple(v_cache.shape), shape,
                             "" if page_table is not None else " and B"))
    hk = k_cache.shape[2]
    if hk < 1 or h % hk:
        raise ValueError("q has %d heads and the caches %d: the query heads "
                         "must be a multiple of the K/V heads (grouped-"
                         "query attention)" % (h, hk))
    if (k is None) != (v is None):
        raise ValueError("k is %s and v is %s: give the new keys and values "
                         "together" % ("None" if k is None else "given",
                                       "None" if v is None else "given"))
    for name, t in (("k", k), ("v", v)):
        if t is None:
            continue
        _tensor(torch, name, t, q)
        if t.dim() != 4 or t.shape[0] != b or t.shape[2:] != (hk, d) or \
                t.shape != k.shape:
            raise ValueError("%s has shape %s: k and v must be (B, Sn, Hk, "
                             "D) = (%d, Sn, %d, %d)" % (
                                 name, tuple(t.shape), b, hk, d))
    return b, hk


def _dense(t):
    """t contiguous and 16-byte aligned (a copy where it is not)."""
    t = t.contiguous()
    return t.clone() if t.data_ptr() % 16 else t


def _no_grad(torch, *ts):
    if torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in ts):
        raise RuntimeError("fagen.attention_with_kvcache has no backward; "
                           "call it under torch.no_grad() or "
                           "torch.inference_mode()")


def _call(lib, ctx, fn, a, last):
    from . import FagenError    # the package's, also once reloaded
    st = fn(ctx, ctypes.byref(a), last)
    if st:
        raise FagenError(_STATUS[st] if st < len(_STATUS) else str(st),
                         lib.fg_errmsg(ctx).decode(errors="replace"))


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None,
                           cache_seqlens=None, page_table=None, causal=False,
                           window=None, softcap=None, scale=None,
                           num_splits=0, out=None, return_lse=False,
                           block_table=None, validate=None):
    """softmax(q K^T * scale) V over a KV cache, as flash_attn_with_kvcache:
    out, or (out, lse) with return_lse.

    q: (B, Sq, H, D), bfloat16 or float16 CUDA tensor with a contiguous
    last dimension; D 64, 128 or 256.  k_cache, v_cache: (B, Sk, Hk, D),
    or with page_table (alias block_table, FlashAttention's name), an
    int32 (B, max_pages) tensor, paged (num_pages, page_size, Hk, D),
    page_size a multiple of 8 that divides 128 or that 128 divides (64 at
    D 256); Hk divides H (GQA, MQA).  k, v: None, or (B, Sn, Hk, D) new
    keys and values, written into the caches (which must be contiguous)
    at cache_seqlens[b] before the attention, in place.  cache_seqlens:
    None (every sequence holds Sk keys, or max_pages * page_size), an
    int, or an int32 (B,) tensor: the keys each sequence's cache holds
    before k and v are appended.  causal and window ((left, right), -1
    unbounded) are aligned to the bottom right: query i of sequence b,
    which holds L = cache_seqlens[b] + Sn keys, is at position L - Sq + i.
    softcap: None or cap > 0 (Gemma 2's); scale: None for 1/sqrt(D).
    num_splits: 0 for FlashAttention's heuristic, else 1 to 256 parts of
    the keys attended in parallel and merged.  out: None or a contiguous
    (B, Sq, H, D) tensor of q's dtype to write into.  lse is float32 (B,
    H, Sq).  validate: None (True unless the current stream is capturing
    a CUDA graph) or a bool; True copies cache_seqlens and page_table to
    the host (synchronizing the stream) and refuses lengths past the
    cache and page numbers out of range.  Without it, such contents give
    undefined rows but never an access out of bounds.

    Wrong types, devices, dtypes and shapes raise TypeError or
    ValueError; what libfagen refuses raises fagen.FagenError.  There is
    no backward (RuntimeError where an input requires grad)."""
    torch = _torch("attention_with_kvcache")
    _tensor(torch, "q", q)
    _four("q", q, "(B, Sq, H, D)")
    page_table = _pages(torch, page_table, block_table, q, q.shape[0])
    b, hk = _check(torch, q, k_cache, v_cache, k, v, page_table)
    _no_grad(torch, q, k_cache, v_cache, k, v)
    lens = _seqlens(torch, cache_seqlens, q, b)
    if k is not None and lens is None:
        raise ValueError("k and v need cache_seqlens: the new tokens go "
                         "after each sequence's cached keys")
    if k is not None and not (k_cache.is_contiguous() and
                              v_cache.is_contiguous()):
        raise ValueError("k and v are appended to the caches, which must "
                         "be contiguous (the kernel writes them densely)")
    win = _window(window)
    cap = _number("softcap", softcap, "None or 0: none")
    if scale is not None and not (isinstance(scale, (int, float)) and
                                  not isinstance(scale, bool) and
                                  0 < scale < float("inf")):
        raise ValueError("scale is %r: it must be > 0 (None: 1/sqrt(D))"
                         % (scale,))
    if isinstance(num_splits, bool) or not isinstance(num_splits, int) or \
            not 0 <= num_splits <= _MAX_SPLITS:
        raise ValueError("num_splits is %r: it must be 0 (the heuristic) "
                         "or 1 to %d" % (num_splits, _MAX_SPLITS))
    _, sq, h, d = q.shape
    if out is None:
        out = torch.empty((b, sq, h, d), dtype=q.dtype, device=q.device)
    else:
        _tensor(torch, "out", out, q)
        if tuple(out.shape) != tuple(q.shape) or not out.is_contiguous() or \
                out.data_ptr() % 16:
            raise ValueError("out must be a contiguous, 16-byte aligned "
                             "tensor of q's shape %s" % (tuple(q.shape),))
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device) \
        if return_lse else None
    if not _tma_ok(q):
        q = q.contiguous() if q.data_ptr() % 16 == 0 else q.clone(
            memory_format=torch.contiguous_format)
    if k is not None:
        k, v = _dense(k), _dense(v)
    if validate is None:
        validate = not _device.capturing(torch)
    a = _DecodeArgs(
        q=q.data_ptr(), k_cache=k_cache.data_ptr(),
        v_cache=v_cache.data_ptr(),
        k_new=0 if k is None else k.data_ptr(),
        v_new=0 if v is None else v.data_ptr(),
        cache_seqlens=0 if lens is None else lens.data_ptr(),
        page_table=0 if page_table is None else page_table.data_ptr(),
        o=out.data_ptr(), lse=0 if lse is None else lse.data_ptr(),
        batch=b, seq_q=sq, heads=h, heads_k=hk, head_dim=d,
        cache_len=0 if page_table is not None else k_cache.shape[1],
        seq_new=0 if k is None else k.shape[1],
        dtype=1 if q.dtype == torch.bfloat16 else 2,
        causal=1 if causal else 0, window=0 if win is None else 1,
        window_left=0 if win is None else win[0],
        window_right=0 if win is None else win[1],
        softcap=cap, scale=0.0 if scale is None else float(scale),
        num_splits=num_splits, validate=1 if validate else 0)
    if page_table is not None:
        a.num_pages, a.page_size = k_cache.shape[0], k_cache.shape[1]
        a.max_pages = page_table.shape[1]
    a.q_strides[:] = _strides(q)
    a.k_strides[:] = _strides(k_cache)
    a.v_strides[:] = _strides(v_cache)
    lib = _lib()
    ctx = _device.ctx(torch, lib, q.device)
    n = ctypes.c_size_t()
    _call(lib, ctx, lib.fg_attention_decode_workspace, a, ctypes.byref(n))
    ws = None
    if n.value:
        # PyTorch's caching allocator, so a graph capture takes it too
        ws = torch.empty(n.value, dtype=torch.uint8, device=q.device)
        a.workspace, a.workspace_bytes = ws.data_ptr(), n.value
    _call(lib, ctx, lib.fg_attention_decode, a,
          _device.stream(torch, q.device))
    del ws
    return (out, lse) if return_lse else out
