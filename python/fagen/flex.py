"""fagen.flex_attention: FlexAttention's interface on fagen's kernels
(issue #22).

    import fagen
    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    def softcap(score, b, h, q_idx, kv_idx):
        return 30.0 * torch.tanh(score / 30.0)
    bm = fagen.create_block_mask(causal, B, H, S, S)
    out = fagen.flex_attention(q, k, v, score_mod=softcap, block_mask=bm)

score_mod and mask_mod are traced (_flextrace.py), not compiled by
torch.compile: called once with symbolic values, they become a `mod`
file of fagen's schedule language, whose text is the kernel cache key, so
a new modifier costs one fagen compile and a known one none.  Block masks
are FlexAttention's BlockMask form on 128 x 128 blocks: fagen's own
(create_block_mask, which never materializes the S x S mask) or torch's
(torch.nn.attention.flex_attention.create_block_mask, re-blocked when its
block size is another multiple or divisor of 128).
"""

import importlib
import math
import re

from . import _device
from ._flextrace import TraceError, make_plan, remember

__all__ = ["flex_attention", "create_block_mask", "BlockMask", "TraceError"]

BLOCK = 128             # the kernel's query and key block
_CHUNK = 1 << 26        # mask elements evaluated at once


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("fagen.flex_attention needs PyTorch (import torch "
                          "failed: %s)" % e) from None
    return torch


def _cdiv(a, b):
    return (a + b - 1) // b


# ---- block classes ---------------------------------------------------------
# A block mask is held as a class tensor [B, H, nq, nk] (int8): 0 empty,
# 1 partial (mask_mod applies), 2 full (no mask code runs), and turned into
# FlexAttention's count-and-indices form for the kernel.

def _indices(torch, sel):
    """Counts [B, H, n] and indices [B, H, n, m] of the True entries of sel
    [B, H, n, m], ascending, then the others (torch's BlockMask order)."""
    num = sel.sum(-1, dtype=torch.int32)
    idx = torch.sort(sel.to(torch.uint8), dim=-1, descending=True,
                     stable=True).indices
    return num.contiguous(), idx.to(torch.int32).contiguous()


def _from_classes(torch, cls):
    """(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
    q_num_blocks, q_indices, full_q_num_blocks, full_q_indices)."""
    out = []
    for c in (cls, cls.transpose(-1, -2)):
        out += _indices(torch, c == 1) + _indices(torch, c == 2)
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]


def _to_classes(torch, num, idx, full_num, full_idx):
    """The class tensor of a block mask in count-and-indices form."""
    b, h, nq, nk = idx.shape
    cls = torch.zeros((b, h, nq, nk + 1), dtype=torch.int8,
                      device=idx.device)
    for n, ix, c in ((num, idx, 1), (full_num, full_idx, 2)):
        if n is None:
            continue
        n = n.expand(b, h, nq) if n.dim() == 3 else n
        m = ix.shape[-1]
        keep = torch.arange(m, device=ix.device) < n[..., None].long()
        ix = torch.where(keep & (ix >= 0) & (ix < nk), ix.long(), nk)
        cls.scatter_(-1, ix, c)
    return cls[..., :nk]


def _group(torch, x, dim, r, every, pad):
    """x grouped by r along dim, padded with pad: whether every (else
    any) element of each group is true."""
    n = x.shape[dim]
    g = _cdiv(n, r)
    if g * r != n:
        shape = list(x.shape)
        shape[dim] = g * r - n
        x = torch.cat([x, torch.full(shape, pad, dtype=torch.bool,
                                     device=x.device)], dim)
    shape = list(x.shape)
    shape[dim:dim + 1] = [g, r]
    x = x.reshape(shape)
    return x.all(dim + 1) if every else x.any(dim + 1)


def _reblock(torch, cls, bs, seq):
    """cls on (bs[0], bs[1]) blocks as classes of 128 x 128 blocks for
    seq = (Sq, Sk): a 128-block is empty if all its sub-blocks are, full
    if all are full, else partial; larger blocks are split."""
    for dim, size, n in ((2, bs[0], seq[0]), (3, bs[1], seq[1])):
        if size > BLOCK:
            cls = cls.repeat_interleave(size // BLOCK, dim)
        elif size < BLOCK:
            r = BLOCK // size
            some = _group(torch, cls > 0, dim, r, False, False)
            # past the sequence's end a query sub-block counts as full
            # (the rows do not exist); a key tail is never full (below)
            full = _group(torch, cls == 2, dim, r, True, dim == 2)
            cls = some.to(torch.int8) + full.to(torch.int8)
        want = _cdiv(n, BLOCK)
        if cls.shape[dim] > want:
            cls = cls.narrow(dim, 0, want)
        elif cls.shape[dim] < want:
            shape = list(cls.shape)
            shape[dim] = want - cls.shape[dim]
            cls = torch.cat([cls, cls.new_zeros(shape)], dim)
    return cls


def _no_full_tail(cls, sk):
    """A key block reaching past Sk is never full: the kernel skips mask
    code on full blocks, the key tail's included."""
    if sk % BLOCK:
        last = cls[..., -1]
        last.masked_fill_(last == 2, 1)
    return cls


# ---- BlockMask and create_block_mask ---------------------------------------

class BlockMask:
    """FlexAttention's BlockMask on 128 x 128 blocks: for each batch, head
    and query block, the count and indices of the key blocks that need
    mask_mod (kv_num_blocks [B, H, nq], kv_indices [B, H, nq, nk], int32)
    and of those that need no mask (full_kv_num_blocks, full_kv_indices);
    the q_* counterparts index query blocks per key block.  B or H is 1
    where the mask does not depend on it (broadcast).  seq_lengths is
    (Q_LEN, KV_LEN), BLOCK_SIZE (128, 128)."""

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices,
                 full_kv_num_blocks, full_kv_indices, q_num_blocks,
                 q_indices, full_q_num_blocks, full_q_indices, mask_mod):
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.mask_mod = mask_mod
        self.BLOCK_SIZE = (BLOCK, BLOCK)

    @classmethod
    def _from_classes(cls_, torch, cls, seq_lengths, mask_mod):
        return cls_(seq_lengths, *_from_classes(torch, cls), mask_mod)

    @property
    def shape(self):
        b, h = self.kv_num_blocks.shape[:2]
        return (b, h) + self.seq_lengths

    def to_dense(self):
        """[B, H, nq, nk] int32: 1 where a block is computed."""
        torch = _torch()
        cls = _to_classes(torch, self.kv_num_blocks, self.kv_indices,
                          self.full_kv_num_blocks, self.full_kv_indices)
        return (cls > 0).to(torch.int32)

    def sparsity(self):
        """The percentage of blocks skipped (neither partial nor full)."""
        done = int(self.kv_num_blocks.sum()) + \
            int(self.full_kv_num_blocks.sum())
        total = self.kv_indices.numel()
        return 100.0 * (1 - done / total) if total else 0.0

    def __repr__(self):
        return ("fagen.BlockMask(shape=%s, sparsity=%.2f%%, BLOCK_SIZE=%s, "
                "mask_mod=%s)" % (self.shape, self.sparsity(),
                                  self.BLOCK_SIZE,
                                  getattr(self.mask_mod, "__name__",
                                          self.mask_mod)))


def _block_size(bs):
    if isinstance(bs, int) and not isinstance(bs, bool):
        return bs, bs
    if isinstance(bs, (tuple, list)) and len(bs) == 2 and \
            all(isinstance(x, int) for x in bs):
        return tuple(bs)
    raise ValueError("BLOCK_SIZE is %r: an int or a (Q, KV) pair" % (bs,))


def _steps(bn, hn, cell):
    """Batches, heads and query blocks per chunk of at most _CHUNK mask
    elements (cell: elements of one query block of one head)."""
    if bn * hn * cell <= _CHUNK:
        return bn, hn, max(1, _CHUNK // (bn * hn * cell))
    if hn * cell <= _CHUNK:
        return max(1, _CHUNK // (hn * cell)), hn, 1
    return 1, max(1, _CHUNK // cell), 1


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=128):
    """A BlockMask for mask_mod(b, h, q_idx, kv_idx) -> bool (True: attend)
    over B batches, H heads, Q_LEN queries and KV_LEN keys, as
    torch.nn.attention.flex_attention.create_block_mask: B or H None
    means a mask that does not depend on it (broadcast).  mask_mod runs
    on torch index tensors, in chunks of query blocks of at most 2^26
    mask elements, never the whole Q_LEN x KV_LEN; each 128 x 128 block is
    classified empty (skipped), partial (mask_mod applies in the kernel)
    or full (no mask code), a key block past KV_LEN never full.  device
    None: "cuda", or "cpu" on the simulator (fagen.use_simulator)."""
    torch = _torch()
    if device is None:
        device = _device.default()
    if _block_size(BLOCK_SIZE) != (BLOCK, BLOCK):
        raise ValueError("BLOCK_SIZE is %r: fagen's kernels take 128 x 128 "
                         "blocks (a torch BlockMask of another size that "
                         "128 divides or that divides 128 is re-blocked "
                         "by flex_attention)" % (BLOCK_SIZE,))
    for name, n in (("Q_LEN", Q_LEN), ("KV_LEN", KV_LEN)):
        if not isinstance(n, int) or n < 1:
            raise ValueError("%s is %r: a positive int" % (name, n))
    for name, n in (("B", B), ("H", H)):
        if n is not None and (not isinstance(n, int) or n < 1):
            raise ValueError("%s is %r: a positive int, or None to "
                             "broadcast" % (name, n))
    bn, hn = B or 1, H or 1
    nq, nk = _cdiv(Q_LEN, BLOCK), _cdiv(KV_LEN, BLOCK)
    cls = torch.empty((bn, hn, nq, nk), dtype=torch.int8, device=device)
    bstep, hstep, qstep = _steps(bn, hn, BLOCK * KV_LEN)
    kv = torch.arange(KV_LEN, device=device)[None, None, None, :]
    for b0 in range(0, bn, bstep):
        bi = torch.arange(b0, min(bn, b0 + bstep), device=device)
        for h0 in range(0, hn, hstep):
            hi = torch.arange(h0, min(hn, h0 + hstep), device=device)
            for q0 in range(0, nq, qstep):
                q1 = min(nq, q0 + qstep)
                qi = torch.arange(q0 * BLOCK, min(Q_LEN, q1 * BLOCK),
                                  device=device)
                cls[b0:b0 + len(bi), h0:h0 + len(hi), q0:q1] = _classify(
                    torch, mask_mod, bi, hi, qi, kv, q1 - q0, nk)
    return BlockMask._from_classes(torch, _no_full_tail(cls, KV_LEN),
                                   (Q_LEN, KV_LEN), mask_mod)


def _classify(torch, mask_mod, bi, hi, qi, kv, nqb, nk):
    """The classes of nqb query blocks x nk key blocks: mask_mod on the
    index tensors, padded to whole blocks."""
    m = mask_mod(bi[:, None, None, None], hi[None, :, None, None],
                 qi[None, None, :, None], kv)
    m = torch.as_tensor(m, device=kv.device)
    if m.dtype != torch.bool:
        raise TypeError("mask_mod returned a %s tensor: it must return "
                        "bool (True: attend)" % m.dtype)
    shape = (len(bi), len(hi), len(qi), kv.shape[-1])
    try:
        m = m.expand(shape)
    except RuntimeError:
        raise ValueError("mask_mod returned shape %s, which does not "
                         "broadcast to [B, H, Q, KV] = %s"
                         % (tuple(m.shape), shape)) from None
    pad = torch.zeros(shape[:2] + (nqb * BLOCK, nk * BLOCK),
                      dtype=torch.bool, device=kv.device)
    pad[:, :, :shape[2], :shape[3]] = m
    blocks = pad.view(shape[0], shape[1], nqb, BLOCK, nk, BLOCK)
    some = blocks.any(5).any(3)
    pad[:, :, shape[2]:, :] = True  # rows past Q_LEN do not exist
    full = blocks.all(5).all(3)
    return some.to(torch.int8) + full.to(torch.int8)


# ---- flex_attention --------------------------------------------------------

def _check_qkv(torch, q, k, v, enable_gqa):
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s must be a torch.Tensor, not %s"
                            % (name, type(t).__name__))
        if t.dim() != 4:
            raise ValueError("%s has %d dimensions: flex_attention takes "
                             "[B, H, S, D]" % (name, t.dim()))
        _device.check(name, t)
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise ValueError("%s is %s: fagen.flex_attention takes "
                             "torch.bfloat16 or torch.float16"
                             % (name, t.dtype))
        if t.stride(-1) != 1:
            raise ValueError("%s has stride %d in its last dimension: fagen "
                             "needs it contiguous (1)" % (name, t.stride(-1)))
    if k.device != q.device or v.device != q.device or \
            k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError("query, key, value must share a device and dtype "
                         "(%s %s, %s %s, %s %s)" % (q.device, q.dtype,
                                                   k.device, k.dtype,
                                                   v.device, v.dtype))
    b, hq, _, d = q.shape
    if d not in (64, 128):
        raise ValueError("head dimension %d: fagen.flex_attention supports "
                         "64 and 128" % d)
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError("query is %s, key %s, value %s: key and value must "
                         "be [B, Hkv, S_kv, D] with query's B and D"
                         % (tuple(q.shape), tuple(k.shape), tuple(v.shape)))
    hkv = k.shape[1]
    if not enable_gqa and hq != hkv:
        raise ValueError("Expect query and key/value to have the same "
                         "number of heads but got Hq=%d and Hkv=%d. Try "
                         "setting enable_gqa=True for GQA." % (hq, hkv))
    if enable_gqa and (hkv < 1 or hq % hkv):
        raise ValueError("Expect number of query heads to be a multiple of "
                         "kv heads for GQA but got Hq=%d and Hkv=%d."
                         % (hq, hkv))


def _is_noop(mask_mod):
    return mask_mod is None or getattr(mask_mod, "__name__", "") == \
        "noop_mask"


# The kernel's block tables of the block masks used lately, and what the
# backward derives from them: building them launches small kernels (the
# expansion to every head, the classes) whose host time a short kernel
# would wait for.  An entry holds its BlockMask, so its id stays its own;
# it is used while the mask's tensors are the same and unmodified
# (data_ptr and torch's in-place version counter).
_BLOCK_CACHE = {}
_BLOCK_CACHE_MAX = 8


class _Untracked(Exception):
    """A tensor whose in-place changes torch does not count."""


def _state(t):
    """What changes when tensor t is replaced or modified in place: an
    inference tensor has no version counter (_Untracked)."""
    if t.is_inference():
        raise _Untracked
    return (t.data_ptr(), t._version, tuple(t.shape), tuple(t.stride()),
            str(t.device), str(t.dtype))


def _blocks_cached(torch, bm, q, k):
    """_blocks(torch, bm, q, k) and a dict for what is derived from it,
    from the cache where bm is unchanged since."""
    try:
        key = (id(bm), id(bm.mask_mod), tuple(q.shape[:3]), k.shape[2],
               str(q.device), repr(bm.BLOCK_SIZE), repr(bm.seq_lengths)) + \
            tuple(None if t is None else _state(t)
                  for t in (bm.kv_num_blocks, bm.kv_indices,
                            bm.full_kv_num_blocks, bm.full_kv_indices))
    except Exception:   # noqa: BLE001 -- _Untracked, or what _blocks
        key = None      # then reports (a missing attribute, say)
    hit = _BLOCK_CACHE.get(key) if key is not None else None
    if hit is not None and hit[0] is bm:
        return hit[1], hit[2], hit[3]
    blocks, mask_mod = _blocks(torch, bm, q, k)
    derived = {}
    if key is not None:
        remember(_BLOCK_CACHE, _BLOCK_CACHE_MAX, key,
                 (bm, blocks, mask_mod, derived))
    return blocks, mask_mod, derived


def _blocks(torch, bm, q, k):
    """block_mask as the kernel's int32 (num, indices, full_num,
    full_indices) on q's device, [B, H, nq(, nk)], and its mask_mod."""
    b, h, sq = q.shape[:3]
    sk = k.shape[2]
    need = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks",
            "full_kv_indices", "BLOCK_SIZE", "seq_lengths", "mask_mod")
    lacks = [a for a in need if not hasattr(bm, a)]
    if lacks:
        raise TypeError("block_mask must be a fagen.BlockMask or torch's "
                        "BlockMask (create_block_mask); a %s lacks %s"
                        % (type(bm).__name__, ", ".join(lacks)))
    seq = tuple(int(x) for x in bm.seq_lengths)
    if seq != (sq, sk):
        raise ValueError("block_mask is for (Q_LEN, KV_LEN) = %s but query "
                         "and key have %d and %d tokens" % (seq, sq, sk))
    nb, nh = bm.kv_num_blocks.shape[:2]
    if nb not in (1, b) or nh not in (1, h):
        raise ValueError("block_mask has B=%d, H=%d; query has B=%d, H=%d "
                         "(a mask's B and H are the query's, or 1)"
                         % (nb, nh, b, h))
    bs = _block_size(bm.BLOCK_SIZE)
    nq, nk = _cdiv(sq, BLOCK), _cdiv(sk, BLOCK)
    ts = (bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks,
          bm.full_kv_indices)
    # fagen's own masks, and torch's on 128 x 128 blocks that need no
    # change: no full block past the keys' end, no padding
    mine = isinstance(bm, BlockMask) or (
        sk % BLOCK == 0 and bs == (BLOCK, BLOCK) and
        all(t is not None and t.dtype == torch.int32 for t in ts) and
        ts[0].shape[2] == ts[2].shape[2] == nq and
        ts[1].shape[2:] == ts[3].shape[2:] == (nq, nk) and
        ts[0].shape[:2] == ts[1].shape[:2] == ts[2].shape[:2] ==
        ts[3].shape[:2])
    if bs != (BLOCK, BLOCK) or not mine:
        if not all(x % BLOCK == 0 or BLOCK % x == 0 for x in bs):
            raise ValueError("block_mask has BLOCK_SIZE %s: fagen re-blocks "
                             "sizes that are multiples or divisors of 128"
                             % (bs,))
        cls = _to_classes(torch, bm.kv_num_blocks, bm.kv_indices,
                          bm.full_kv_num_blocks, bm.full_kv_indices)
        cls = _no_full_tail(_reblock(torch, cls, bs, (sq, sk)), sk)
        ts = _from_classes(torch, cls)[:4]
    # a B or H of 1 stays 1: the kernel reads one mask for all
    out = []
    for t in ts:
        out.append(t.to(device=q.device, dtype=torch.int32).contiguous())
    return tuple(out), None if _is_noop(bm.mask_mod) else bm.mask_mod


def _bind(torch, plan, device, learn=None):
    """The plan's captured tensors as the kernel reads them: contiguous,
    on the device, int64 (range-checked) and bool as int32.  learn: a
    list to which (name, tensor, shape) of each floating tensor that
    requires grad is appended (score_mod's learnable tensors)."""
    out = []
    for name, t, ty, convert, _, shape in plan._captures:
        if t.device != device:
            raise ValueError("a mod reads a captured tensor on %s; it must "
                             "be on the query's device (%s)"
                             % (t.device, device))
        if torch.is_grad_enabled() and t.requires_grad:
            if convert or not t.is_floating_point():
                raise RuntimeError("a mod reads a captured %s tensor that "
                                   "requires grad" % (t.dtype,))
            learn.append((name, t, shape))
            t = t.detach()
        if convert:
            t = _as_int32(torch, t)
        out.append((name, t.contiguous()))
    return out


# int64 and bool tensors the mods read, converted to int32 lately: the
# range check of an int64 one waits for the GPU, so it is done once while
# the tensor is unmodified (the same storage and in-place version)
_CONVERTED = {}
_CONVERTED_MAX = 16


def _as_int32(torch, t):
    try:
        key = (id(t),) + _state(t)
    except _Untracked:
        key = None
    hit = _CONVERTED.get(key) if key is not None else None
    if hit is not None and hit[0] is t:
        return hit[1]
    if t.dtype == torch.int64 and t.numel():
        lo, hi = torch.aminmax(t)
        if lo.item() < -2 ** 31 or hi.item() >= 2 ** 31:
            raise ValueError("a mod reads a captured int64 tensor "
                             "with values outside int32 (%d..%d)"
                             % (lo.item(), hi.item()))
    c = t.to(torch.int32).contiguous()
    if key is None:
        return c
    remember(_CONVERTED, _CONVERTED_MAX, key, (t, c))
    return c


def flex_attention(query, key, value, score_mod=None, block_mask=None,
                   scale=None, enable_gqa=False, return_lse=False):
    """FlexAttention's call on fagen's kernel: softmax(score_mod(q k^T *
    scale)) v over the blocks block_mask allows, mask_mod applied in its
    partial blocks.  query [B, Hq, Sq, D], key and value [B, Hkv, Sk, D],
    bfloat16 or float16 CUDA tensors, D 64 or 128; Hkv < Hq with
    enable_gqa (query head h reads K/V head h // (Hq // Hkv)).  scale None:
    1/sqrt(D).  score_mod(score, b, h, q_idx, kv_idx) gets the scaled
    score (natural-log units) and returns the one the softmax takes;
    block_mask None attends to every key.  Returns out [B, Hq, Sq, D] of
    query's dtype, and with return_lse also lse [B, Hq, Sq] float32 (the
    natural log; -inf for a row that sees no key, whose out is 0).
    Raises TraceError (a NotImplementedError) naming what a mod does that
    fagen cannot compile, before anything runs."""
    torch = _torch()
    _check_qkv(torch, query, key, value, enable_gqa)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    elif not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ValueError("scale is %r: a finite number (None: 1/sqrt(D))"
                         % (scale,))
    blocks, mask_mod, derived = (None, None, None) if block_mask is None \
        else _blocks_cached(torch, block_mask, query, key)
    plan = make_plan(score_mod, mask_mod)
    plan.check_bounds(query.shape[0], query.shape[1])
    learn = []
    tensors = _bind(torch, plan, query.device, learn)
    pkg = importlib.import_module(__package__)
    launch = pkg.__dict__.get("_flex_launch")
    if launch is None:
        # the launcher lives in __init__.py (the runtime's side of issue
        # #22); without it a traced call stops here
        raise NotImplementedError("fagen._flex_launch is not in this "
                                  "build of fagen")
    kw = dict(scale=float(scale), mods_text=plan.text, tensors=tensors,
              blocks=blocks, score_mod=plan.has_score_mod,
              mask_mod=plan.has_mask_mod)
    if learn or (torch.is_grad_enabled() and any(
            t.requires_grad for t in (query, key, value))):
        ql = None
        if blocks is not None:
            ql = derived.get(key.shape[1])
        if blocks is not None and ql is None:
            cls = _to_classes(torch, *blocks).expand(
                query.shape[:2] + blocks[1].shape[2:])
            ql = _qlist(torch, cls, key.shape[1])
            derived[key.shape[1]] = ql
        grad = (_grad_text(plan.text, learn), learn)
        out, lse = _function(torch).apply(query, key, value, kw,
                                          ql, pkg, grad,
                                          *(t for _, t, _ in learn))
        return (out, lse) if return_lse else out
    return launch(query, key, value, enable_gqa=enable_gqa,
                  return_lse=return_lse, **kw)


def _grad_text(text, learn):
    """The mod file of the backward: each learnable tensor's global
    gets its gradient, 'global NAME : T[...] grad=D_NAME;' after
    'global D_NAME : f32[...];' (dscatter adds into it)."""
    for name, _, _ in learn:
        m = re.search(r"^global %s : (\w+)\[([^\]]*)\];$" % re.escape(name),
                      text, re.M)
        if m is None:
            raise RuntimeError("fagen: no global %s in the traced mods"
                               % name)
        text = text[:m.start()] + \
            "global D_%s : f32[%s];\nglobal %s : %s[%s] grad=D_%s;" % (
                name, m.group(2), name, m.group(1), m.group(2), name) + \
            text[m.end():]
    return text


def _qlist(torch, cls, hk):
    """Per batch, K/V head and key block, the 128-row query blocks of the
    head group whose class cls [B, H, nq, nk] is not 0: int32 [B, Hk, nk,
    2 * G * nq + 1], the count, then pairs g, 2 * m + w for query head
    hk * G + g and block m (w 1 where the block is whole, class 2), head
    by head, m ascending: the blocks the backward visits."""
    b, h, nq, nk = cls.shape
    g = h // hk
    c = cls.reshape(b, hk, g, nq, nk).permute(0, 1, 4, 2, 3).reshape(
        b, hk, nk, g * nq)
    num, idx = _indices(torch, c != 0)
    whole = torch.gather(c, -1, idx.long()) == 2
    pairs = torch.stack([idx // nq, idx % nq * 2 + whole], -1)
    return torch.cat([num[..., None], pairs.flatten(-2)], -1).to(
        torch.int32).contiguous()


_FN = []


def _function(torch):
    """The autograd.Function of flex_attention (made once, on first use,
    so that importing fagen needs no torch)."""
    if _FN:
        return _FN[0]

    class FlexAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, kw, ql, pkg, grad, *learned):
            out, lse = pkg._flex_launch(q.detach(), k.detach(), v.detach(),
                                        enable_gqa=True, return_lse=True,
                                        **kw)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.kw, ctx.ql, ctx.pkg, ctx.grad = kw, ql, pkg, grad
            ctx.mark_non_differentiable(lse)
            return out, lse

        @staticmethod
        def backward(ctx, dout, dlse):
            q, k, v, out, lse = ctx.saved_tensors
            text, learn = ctx.grad
            kw = dict(ctx.kw)
            # the learnable tensors' gradients: f32, zeroed, added into
            # atomically by the backward kernel (dscatter)
            dg = [torch.zeros(shape, dtype=torch.float32, device=q.device)
                  for _, _, shape in learn]
            if learn:
                kw["mods_text"] = text
                kw["tensors"] = list(kw["tensors"]) + [
                    ("D_" + name, g) for (name, _, _), g in zip(learn, dg)]
            dq, dk, dv = ctx.pkg._flex_backward(
                q.detach(), k.detach(), v.detach(), out, lse, dout,
                block_qlist=ctx.ql, **kw)
            return (dq, dk, dv, None, None, None, None) + tuple(
                g.reshape(t.shape).to(t.dtype)
                for (_, t, _), g in zip(learn, dg))

    _FN.append(FlexAttention)
    return FlexAttention
