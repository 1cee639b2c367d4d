"""Attention over a sequence sharded across GPUs: context parallelism on
torch.distributed (issue #23).

    import fagen.distributed as fd
    q, k, v = (fd.shard(t, 2, zigzag=True) for t in (q, k, v))   # (B, H, S, D)
    out, lse = fd.ring_attention(q, k, v, causal=True)           # this rank's rows

ring_attention: each rank of the process group holds a shard of the
sequence (queries, keys and values alike); the key/value shards travel
round a ring (torch.distributed.batch_isend_irecv to the next rank, from
the previous one) while each rank attends its queries to the shard in
hand with fagen.attention's kernels; the partial outputs are merged in
float32 through their log-sum-exp.  The backward sends the key/value
shards round again, with float32 dK/dV accumulators that reach their
owner after the last step.  Causal attention is balanced with zigzag
shards (rank r holds chunks r and 2N - 1 - r of 2N; shard(..., zigzag=
True) cuts them, unshard() puts them back): every rank then computes
the same amount at every step (_ring.py says which halves).  With GQA
only the K/V heads travel.

ulysses_attention: all-to-all from sequence shards to head shards, the
whole sequence's attention on H / N heads per rank, and back (DeepSpeed
Ulysses); heads and K/V heads must be multiples of the group's size.

Both are differentiable and are torch.library custom ops
(torch.ops.fagen.ring_attention, ...) taking the process group by name,
so torch.compile(fullgraph=True) keeps them as opaque nodes; they run in
models wrapped by DDP or FSDP2 (the gradients of a rank's shard are its
own; the data-parallel reduction sums them).  Communication runs on
ProcessGroupNCCL's own stream, which waits for torch's current stream
where a transfer is issued; the current stream waits for a transfer only
where its data is needed, so the next shard moves while the current one
is computed.

The group's timeout (init_process_group(timeout=...)) bounds how long a
rank waits for a peer that died: NCCL's watchdog then ends the process
with an error naming the operation that timed out.
"""

from typing import Optional, Tuple

try:
    import torch
    import torch.distributed as dist
except ImportError as e:
    raise ImportError("fagen.distributed needs PyTorch (import torch "
                      "failed: %s)" % e) from None

import fagen
from fagen import _ring

__all__ = ["ring_attention", "ring_attention_varlen", "ulysses_attention",
           "shard", "unshard", "shard_varlen"]

_DEVICES = ("cuda", "cpu")


# ------------------------------------------------------------ shards

def _world(group):
    g = group if group is not None else dist.group.WORLD
    return g, dist.get_rank(g), dist.get_world_size(g)


def _cut(n, world, zigzag, what):
    parts = 2 * world if zigzag else world
    if n % parts:
        raise ValueError("%s: %d positions do not split into %d equal %s"
                         "chunks (%d ranks%s)"
                         % (what, n, parts, "zigzag " if zigzag else "",
                            world, ", two chunks each" if zigzag else ""))
    return n // parts


def shard(x, dim, group=None, zigzag=False, rank=None, world=None):
    """This rank's shard of the full tensor x along dim: chunk r of N, or
    with zigzag chunks r and 2N - 1 - r of 2N, concatenated in that order
    (a view where contiguous, else a new tensor).  rank, world: a
    rank of a ring of world ranks (default: the group's)."""
    if rank is None or world is None:
        _, r, n = _world(group)
        rank = r if rank is None else rank
        world = n if world is None else world
    c = _cut(x.shape[dim], world, zigzag, "shard of dim %d" % dim)
    idx = _ring.chunks(rank, world, zigzag)
    parts = [x.narrow(dim, i * c, c) for i in idx]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim)


def _reorder(shards, dim, zigzag):
    """The full tensor from the ranks' shards (in rank order)."""
    if not zigzag:
        return torch.cat(shards, dim)
    world = len(shards)
    c = shards[0].shape[dim] // 2
    out = [None] * (2 * world)
    for r, s in enumerate(shards):
        a, b = _ring.chunks(r, world, True)
        out[a], out[b] = s.narrow(dim, 0, c), s.narrow(dim, c, c)
    return torch.cat(out, dim)


def unshard(x, dim, group=None, zigzag=False):
    """The full tensor from every rank's shard x (all_gather; the inverse
    of shard).  Not differentiable."""
    g, _, world = _world(group)
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.contiguous(), group=g)
    return _reorder(parts, dim, zigzag)


def shard_varlen(x, cu_seqlens, group=None, zigzag=False, rank=None,
                 world=None):
    """This rank's shard of a packed batch x (total_tokens, ...) with
    offsets cu_seqlens (B + 1,): each sequence cut as shard() cuts a
    tensor, the pieces packed in sequence order.  Returns (x_local,
    cu_seqlens_local, max_seqlen_local), the arguments of
    ring_attention_varlen."""
    if rank is None or world is None:
        _, r, n = _world(group)
        rank = r if rank is None else rank
        world = n if world is None else world
    cu = [int(c) for c in cu_seqlens.tolist()]
    pieces, local = [], [0]
    for b in range(len(cu) - 1):
        seq = x.narrow(0, cu[b], cu[b + 1] - cu[b])
        pieces.append(shard(seq, 0, zigzag=zigzag, rank=rank, world=world))
        local.append(local[-1] + pieces[-1].shape[0])
    lens = [local[i + 1] - local[i] for i in range(len(local) - 1)]
    cu_local = torch.tensor(local, dtype=torch.int32,
                            device=cu_seqlens.device)
    return torch.cat(pieces, 0), cu_local, max(lens, default=0)


# ------------------------------------------------------------ layouts
# The ring's step code sees a shard through a layout: which rows are a
# half, how to call the forward and backward kernels on them, and how to
# merge a partial result into the float32 accumulators.

def _merge_into(acc_o, acc_l, o, l, col):
    """acc_o, acc_l (float32, normalized output and log-sum-exp) become
    the merge of themselves and the partial o, l; col(t) makes an lse-
    shaped t broadcast against o.  A row with lse -inf (no key seen)
    weighs nothing; a row with nothing at all stays 0 and -inf."""
    m = torch.maximum(acc_l, l)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    w1, w2 = torch.exp(acc_l - m), torch.exp(l - m)
    s = w1 + w2
    inv = torch.where(s > 0, 1.0 / s, torch.zeros_like(s))
    acc_o.mul_(col(w1 * inv)).add_(o.float() * col(w2 * inv))
    acc_l.copy_(m + torch.log(s))


class _Dense:
    """(B, H, S, D) shards, halves along S; lse (B, H, S)."""

    def __init__(self, scale, det=False):
        self.scale, self.det = scale, det

    @staticmethod
    def rows(x, half, dim=2):
        if half is None:
            return x
        n = x.shape[dim] // 2
        return x.narrow(dim, half * n, n)

    keys = rows

    def fwd(self, q, k, v, causal, qh, kh):
        return fagen._call("fg_attention_forward", q, k, v, causal,
                           self.scale)

    def bwd(self, dout, q, k, v, out, lse, causal, qh, kh):
        return fagen._backward(q, k, v, out, lse.contiguous(), dout, causal,
                               self.scale, deterministic=self.det)

    def acc(self, q):
        b, h, s, d = q.shape
        return (torch.zeros((b, h, s, d), dtype=torch.float32,
                            device=q.device),
                torch.full((b, h, s), float("-inf"), dtype=torch.float32,
                           device=q.device))

    def lse_rows(self, lse, half):
        return self.rows(lse, half)

    def merge(self, acc, o, l, half):
        _merge_into(self.rows(acc[0], half), self.rows(acc[1], half), o, l,
                    lambda t: t.unsqueeze(-1))

    def add_rows(self, acc, part, half):
        self.rows(acc, half).add_(part)

    add_keys = add_rows


class _Varlen:
    """(T, H, D) shards of packed sequences whose local offsets are cu
    (the same on every rank), halves per sequence; lse (H, T)."""

    def __init__(self, scale, cu, max_seqlen, zigzag, det=False):
        self.scale, self.det = scale, det
        self.cu, self.max = cu, max_seqlen
        host = [int(c) for c in cu.tolist()]
        lens = [host[i + 1] - host[i] for i in range(len(host) - 1)]
        if zigzag and any(n % 2 for n in lens):
            raise ValueError("ring_attention_varlen: zigzag shards hold two "
                             "equal chunks of each sequence, but local "
                             "sequence lengths %s are not all even" % lens)
        self.total = host[-1] if host else 0
        self.idx = None
        if zigzag:
            dev = cu.device
            first = [i for b in range(len(lens))
                     for i in range(host[b], host[b] + lens[b] // 2)]
            second = [i for b in range(len(lens))
                      for i in range(host[b] + lens[b] // 2, host[b + 1])]
            self.idx = (torch.tensor(first, dtype=torch.long, device=dev),
                        torch.tensor(second, dtype=torch.long, device=dev))
            self.cu_half = torch.div(cu, 2, rounding_mode="floor")
            self.max_half = max_seqlen // 2

    def rows(self, x, half, dim=0):
        return x if half is None else x.index_select(dim, self.idx[half])

    keys = rows

    def _cu(self, half):
        return (self.cu, self.max) if half is None else (self.cu_half,
                                                         self.max_half)

    def fwd(self, q, k, v, causal, qh, kh):
        (cq, mq), (ck, mk) = self._cu(qh), self._cu(kh)
        out, lse, _ = fagen._varlen(q, k, v, cq, ck, mq, mk, causal,
                                    self.scale, validate=False)
        return out, lse

    def bwd(self, dout, q, k, v, out, lse, causal, qh, kh):
        (cq, mq), (ck, mk) = self._cu(qh), self._cu(kh)
        return fagen._varlen_backward(q, k, v, out, lse.contiguous(), dout,
                                      cq, ck, mq, mk, causal, self.scale,
                                      None, None, 0, None, self.det)

    def acc(self, q):
        t, h, d = q.shape
        return (torch.zeros((t, h, d), dtype=torch.float32, device=q.device),
                torch.full((h, t), float("-inf"), dtype=torch.float32,
                           device=q.device))

    def lse_rows(self, lse, half):
        return self.rows(lse, half, 1)

    def merge(self, acc, o, l, half):
        col = lambda t: t.t().unsqueeze(-1)   # noqa: E731  (H, T) -> (T, H, 1)
        if half is None:
            _merge_into(acc[0], acc[1], o, l, col)
            return
        ao, al = self.rows(acc[0], half), self.lse_rows(acc[1], half)
        _merge_into(ao, al, o, l, col)
        acc[0].index_copy_(0, self.idx[half], ao)
        acc[1].index_copy_(1, self.idx[half], al)

    def add_rows(self, acc, part, half):
        if half is None:
            acc.add_(part)
        else:
            acc.index_add_(0, self.idx[half], part.to(acc.dtype))

    add_keys = add_rows


# ------------------------------------------------------------ steps
# One step of one rank; the ring drivers below (NCCL) and the virtual
# ring of the tests (_virtual_*: N ranks in one process, the exchanges
# replaced by rotating lists) call the same functions.

def _fwd_step(lay, q, kv, p, acc):
    if p == _ring.SKIP:
        return
    qh, kh = _ring.halves(p)
    o, l = lay.fwd(lay.rows(q, qh), lay.keys(kv[0], kh), lay.keys(kv[1], kh),
                   p == _ring.DIAG, qh, kh)
    lay.merge(acc, o, l, qh)


def _bwd_step(lay, st, kv, p, dq):
    """The gradients of one step: dq added into dq (float32), dk and dv of
    the key/value shard in hand returned (with their half) for the
    accumulators that travel with it; None where the step is skipped."""
    if p == _ring.SKIP:
        return None
    q, out, dout, lse = st
    qh, kh = _ring.halves(p)
    dqi, dki, dvi = lay.bwd(lay.rows(dout, qh), lay.rows(q, qh),
                            lay.keys(kv[0], kh), lay.keys(kv[1], kh),
                            lay.rows(out, qh), lay.lse_rows(lse, qh),
                            p == _ring.DIAG, qh, kh)
    lay.add_rows(dq, dqi, qh)
    return dki, dvi, kh


def _bwd_accumulate(lay, dkv, part):
    if part is not None:
        lay.add_keys(dkv[0], part[0], part[2])
        lay.add_keys(dkv[1], part[1], part[2])


def _finish(acc, q):
    return acc[0].to(q.dtype), acc[1]


class _Comm:
    """The ring of a process group: send to the next rank, receive from
    the previous one, batched (torch.distributed.batch_isend_irecv)."""

    def __init__(self, group):
        self.group, self.rank, self.size = _world(group)
        self.next = dist.get_global_rank(self.group,
                                         (self.rank + 1) % self.size)
        self.prev = dist.get_global_rank(self.group,
                                         (self.rank - 1) % self.size)

    def start(self, tensors):
        sends = [t.contiguous() for t in tensors]
        recvs = [torch.empty_like(t) for t in sends]
        ops = [dist.P2POp(dist.isend, t, self.next, self.group)
               for t in sends]
        ops += [dist.P2POp(dist.irecv, t, self.prev, self.group)
                for t in recvs]
        return _Pending(dist.batch_isend_irecv(ops), recvs, sends)


class _Pending:
    def __init__(self, works, recvs, sends):
        self.works, self.recvs, self.sends = works, recvs, sends

    def wait(self):
        """The received tensors, once torch's current stream waits for
        them (the host does not block)."""
        for w in self.works:
            w.wait()
        self.sends = None
        return self.recvs


def _ring_forward(lay, comm, q, k, v, causal, zigzag):
    n, r = comm.size, comm.rank
    acc = lay.acc(q)
    kv = (k, v)
    for i in range(n):
        nxt = comm.start(kv) if i + 1 < n else None
        _fwd_step(lay, q, kv, _ring.plan(r, _ring.source(r, i, n), n,
                                         causal, zigzag), acc)
        if nxt is not None:
            kv = nxt.wait()
    return _finish(acc, q)


def _ring_backward(lay, comm, q, k, v, out, lse, dout, causal, zigzag):
    n, r = comm.size, comm.rank
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    st = (q, out, dout, lse)
    kv, pending, dkv = (k, v), None, None
    for i in range(n):
        nxt = comm.start(kv) if i + 1 < n else None
        part = _bwd_step(lay, st, kv, _ring.plan(
            r, _ring.source(r, i, n), n, causal, zigzag), dq)
        # the accumulators of the shard in hand arrive from the previous
        # rank while this step computes
        if pending is None:
            dkv = [torch.zeros(t.shape, dtype=torch.float32, device=t.device)
                   for t in (k, v)]
        else:
            dkv = pending.wait()
        _bwd_accumulate(lay, dkv, part)
        pending = comm.start(dkv) if n > 1 else None
        if nxt is not None:
            kv = nxt.wait()
    if pending is not None:
        dkv = pending.wait()    # this rank's own, after a whole round
    return dq.to(q.dtype), dkv[0].to(k.dtype), dkv[1].to(v.dtype)


def _virtual_forward(lay, qs, ks, vs, causal, zigzag):
    """_ring_forward's result on every rank of a ring of len(qs) ranks in
    this process (tests)."""
    n = len(qs)
    for name, ts in (("q", qs), ("k", ks), ("v", vs)):
        _check_shards("ring_attention (%s)" % name, [t.shape for t in ts])
    accs = [lay.acc(q) for q in qs]
    kvs = list(zip(ks, vs))
    for i in range(n):
        for r in range(n):
            _fwd_step(lay, qs[r], kvs[r], _ring.plan(
                r, _ring.source(r, i, n), n, causal, zigzag), accs[r])
        kvs = [kvs[(r - 1) % n] for r in range(n)]
    return [_finish(a, q) for a, q in zip(accs, qs)]


def _virtual_backward(lay, qs, ks, vs, outs, lses, douts, causal, zigzag):
    """_ring_backward's result on every rank of a virtual ring (tests)."""
    n = len(qs)
    dqs = [torch.zeros(q.shape, dtype=torch.float32, device=q.device)
           for q in qs]
    kvs = list(zip(ks, vs))
    dkvs = [[torch.zeros(t.shape, dtype=torch.float32, device=t.device)
             for t in (k, v)] for k, v in zip(ks, vs)]
    for i in range(n):
        for r in range(n):
            part = _bwd_step(lay, (qs[r], outs[r], douts[r], lses[r]),
                             kvs[r], _ring.plan(r, _ring.source(r, i, n), n,
                                                causal, zigzag), dqs[r])
            _bwd_accumulate(lay, dkvs[r], part)
        kvs = [kvs[(r - 1) % n] for r in range(n)]
        dkvs = [dkvs[(r - 1) % n] for r in range(n)]
    return [(dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype))
            for dq, q, (dk, dv), k, v in zip(dqs, qs, dkvs, ks, vs)]


# ------------------------------------------------------------ checks

def _check_shards(name, shapes):
    """Every rank's shard has the same shape (the ring exchanges them)."""
    for r, s in enumerate(shapes):
        if tuple(s) != tuple(shapes[0]):
            raise ValueError(
                "%s: rank %d's shard has shape %s and rank 0's %s; the "
                "ranks' shards must be equal (shard() cuts them so)"
                % (name, r, tuple(s), tuple(shapes[0])))


def _check(name, q, k, v, causal, zigzag, seq_dim):
    for t, nm in ((q, "q"), (k, "k"), (v, "v")):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: %s is %s, not a tensor"
                            % (name, nm, type(t).__name__))
    if q.shape[seq_dim] != k.shape[seq_dim]:
        raise ValueError("%s: q's shard has %d positions and k's %d; the "
                         "ring keeps a rank's queries, keys and values "
                         "together, in equal shards"
                         % (name, q.shape[seq_dim], k.shape[seq_dim]))
    if v.dim() and v.shape[-1] != q.shape[-1]:
        raise ValueError("%s: v's head dim is %d and q's %d; the ring and "
                         "Ulysses take v with q's head dim (fagen.attention "
                         "takes 192 and 128 on one GPU)"
                         % (name, v.shape[-1], q.shape[-1]))
    if zigzag and q.shape[seq_dim] % 2:
        raise ValueError("%s: a zigzag shard holds two equal chunks, but "
                         "it has %d positions" % (name, q.shape[seq_dim]))
    if zigzag and not causal:
        raise ValueError("%s: zigzag shards balance causal attention; "
                         "without causal pass zigzag=False" % name)


def _capturing(t):
    """A CUDA graph is being captured on the current stream of t's
    device: no host synchronization may happen."""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _validating(validate, world, t):
    """Whether to run _validate: asked for, several ranks, and neither
    torch.compile tracing nor a CUDA graph capturing (its all_gather
    reads the shapes on the host; a graph's eager warm-up call checks
    them)."""
    return bool(validate) and world > 1 and \
        not torch.compiler.is_compiling() and not _capturing(t)


def _validate(name, group, *tensors, values=None):
    """The ranks' shards agree in shape, and the host list values (the
    local offsets of ring_attention_varlen) agrees too: one small
    all_gather."""
    g, _, world = _world(group)
    mine = torch.tensor([d for t in tensors for d in t.shape] +
                        list(values or []),
                        dtype=torch.long, device=tensors[0].device)
    all_ = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(all_, mine, group=g)
    _check_shards(name, [a.tolist() for a in all_])


def _resolve(group_name):
    from torch.distributed.distributed_c10d import _resolve_process_group
    return _resolve_process_group(group_name)


# ------------------------------------------------------------ ring ops

@torch.library.custom_op("fagen::ring_attention", mutates_args=(),
                         device_types=_DEVICES)
def _ring_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             group_name: str, causal: bool, scale: Optional[float],
             zigzag: bool, deterministic: bool = False
             ) -> Tuple[torch.Tensor, torch.Tensor]:
    return _ring_forward(_Dense(scale), _Comm(_resolve(group_name)), q, k,
                         v, causal, zigzag)


@_ring_op.register_fake
def _(q, k, v, group_name, causal, scale, zigzag, deterministic=False):
    b, h, s, d = q.shape
    return q.new_empty((b, h, s, d)), q.new_empty((b, h, s),
                                                  dtype=torch.float32)


@torch.library.custom_op("fagen::ring_attention_backward", mutates_args=(),
                         device_types=_DEVICES)
def _ring_bwd_op(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                 v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                 group_name: str, causal: bool, scale: Optional[float],
                 zigzag: bool, deterministic: bool = False
                 ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _ring_backward(_Dense(scale, deterministic),
                          _Comm(_resolve(group_name)), q, k, v, out, lse,
                          dout, causal, zigzag)


@_ring_bwd_op.register_fake
def _(dout, q, k, v, out, lse, group_name, causal, scale, zigzag,
      deterministic=False):
    # _ring_backward's are new contiguous tensors
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _ring_setup(ctx, inputs, output):
    q, k, v, group_name, causal, scale, zigzag, det = inputs
    ctx.save_for_backward(q, k, v, *output)
    ctx.mark_non_differentiable(output[1])
    ctx.opts = (group_name, causal, scale, zigzag, det)
    ctx.unsupported = fagen._bwd_unsupported(q, None, None, None, None)


def _ring_grad(ctx, dout, dlse):
    if ctx.unsupported:
        fagen._bwd_refuse(ctx.unsupported)
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.fagen.ring_attention_backward(
        dout, q, k, v, out, lse, *ctx.opts)
    return dq, dk, dv, None, None, None, None, None


_ring_op.register_autograd(_ring_grad, setup_context=_ring_setup)


def ring_attention(q, k, v, group=None, causal=False, scale=None,
                   zigzag=None, validate=True, deterministic=False):
    """Ring attention over the ranks of group (None: the default group):
    (out, lse) for this rank's queries.

    q: (B, H, S_local, D), k and v: (B, Hk, S_local, D), this rank's
    shard of the sequence, laid out as fagen.attention takes them (any
    strides whose last one is 1; bfloat16 or float16; D 64, 128 or 256,
    gradients for 64 and 128; Hk divides H: GQA, and only the Hk heads
    travel).  Every rank holds an equal shard; the ranks' order is the
    sequence's.  zigzag (default: causal): the shards are zigzag ones
    (shard(..., zigzag=True)), which balances causal attention; with
    zigzag=False and causal, rank r holds chunk r and the ranks' work
    grows with r.  causal is top-left aligned over the whole sequence
    (queries and keys are the same positions).  scale: None for
    1/sqrt(D).  out is q's dtype, (B, H, S_local, D); lse float32 (B, H,
    S_local), the log-sum-exp over the whole sequence's keys.
    validate (default): one all_gather of the shapes first, so that
    unequal shards are a ValueError on every rank, not a hang (skipped
    while torch.compile traces or a CUDA graph captures: the shapes then
    go to the host nowhere; a graph's eager warm-up call checks them).
    deterministic: each step's backward adds its dQ in a fixed order
    (fagen.attention's deterministic); the ring's own sums already run
    in ring order, so the gradients are then bitwise repeatable.

    Differentiable (the backward sends the shards round again); a
    torch.library custom op (torch.ops.fagen.ring_attention), so it
    traces into torch.compile graphs."""
    if zigzag is None:
        zigzag = bool(causal)
    _check("ring_attention", q, k, v, causal, zigzag, 2)
    g, _, world = _world(group)
    if _validating(validate, world, q):
        _validate("ring_attention", g, q, k, v)
    return _ring_op(q, k, v, g.group_name, bool(causal), scale, zigzag,
                    bool(deterministic))


@torch.library.custom_op("fagen::ring_attention_varlen", mutates_args=(),
                         device_types=_DEVICES)
def _ring_varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    cu_seqlens: torch.Tensor, max_seqlen: int,
                    group_name: str, causal: bool, scale: Optional[float],
                    zigzag: bool, deterministic: bool = False
                    ) -> Tuple[torch.Tensor, torch.Tensor]:
    lay = _Varlen(scale, cu_seqlens, max_seqlen, zigzag)
    return _ring_forward(lay, _Comm(_resolve(group_name)), q, k, v, causal,
                         zigzag)


@_ring_varlen_op.register_fake
def _(q, k, v, cu_seqlens, max_seqlen, group_name, causal, scale, zigzag,
      deterministic=False):
    t, h, d = q.shape
    return q.new_empty((t, h, d)), q.new_empty((h, t), dtype=torch.float32)


@torch.library.custom_op("fagen::ring_attention_varlen_backward",
                         mutates_args=(), device_types=_DEVICES)
def _ring_varlen_bwd_op(dout: torch.Tensor, q: torch.Tensor,
                        k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                        lse: torch.Tensor, cu_seqlens: torch.Tensor,
                        max_seqlen: int, group_name: str, causal: bool,
                        scale: Optional[float], zigzag: bool,
                        deterministic: bool = False
                        ) -> Tuple[torch.Tensor, torch.Tensor,
                                   torch.Tensor]:
    lay = _Varlen(scale, cu_seqlens, max_seqlen, zigzag, deterministic)
    return _ring_backward(lay, _Comm(_resolve(group_name)), q, k, v, out,
                          lse, dout, causal, zigzag)


@_ring_varlen_bwd_op.register_fake
def _(dout, q, k, v, out, lse, cu_seqlens, max_seqlen, group_name, causal,
      scale, zigzag, deterministic=False):
    # _ring_backward's are new contiguous tensors
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _ring_varlen_setup(ctx, inputs, output):
    q, k, v, cu, mx, group_name, causal, scale, zigzag, det = inputs
    ctx.save_for_backward(q, k, v, *output, cu)
    ctx.mark_non_differentiable(output[1])
    ctx.opts = (mx, group_name, causal, scale, zigzag, det)
    ctx.unsupported = fagen._bwd_unsupported(q.unsqueeze(0), None, None,
                                             None, None)


def _ring_varlen_grad(ctx, dout, dlse):
    if ctx.unsupported:
        fagen._bwd_refuse(ctx.unsupported)
    q, k, v, out, lse, cu = ctx.saved_tensors
    dq, dk, dv = torch.ops.fagen.ring_attention_varlen_backward(
        dout, q, k, v, out, lse, cu, *ctx.opts)
    return dq, dk, dv, None, None, None, None, None, None, None


_ring_varlen_op.register_autograd(_ring_varlen_grad,
                                  setup_context=_ring_varlen_setup)


def ring_attention_varlen(q, k, v, cu_seqlens, max_seqlen, group=None,
                          causal=False, scale=None, zigzag=None,
                          validate=True, deterministic=False):
    """ring_attention over a packed batch of sequences, each cut across
    the ranks (shard_varlen): (out, lse).

    q: (T_local, H, D), k and v: (T_local, Hk, D); cu_seqlens: int32 (B +
    1,) offsets of the sequences' local pieces in them, on q's device,
    the same on every rank (every sequence is cut into equal pieces,
    zigzag or contiguous as in ring_attention), covering all T_local rows;
    max_seqlen: the longest local piece.  out (T_local, H, D), lse
    float32 (H, T_local), as fagen.attention_varlen.  Each sequence
    attends only to itself.  The offsets are read on the host once per
    call (a synchronization), so a CUDA graph cannot capture it (a
    ValueError while one captures).  deterministic as ring_attention's."""
    if zigzag is None:
        zigzag = bool(causal)
    _check("ring_attention_varlen", q, k, v, causal, zigzag, 0)
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 \
            or cu_seqlens.dtype != torch.int32:
        raise ValueError("ring_attention_varlen: cu_seqlens must be an int32 "
                         "(B + 1,) tensor")
    if _capturing(cu_seqlens):
        raise ValueError("ring_attention_varlen reads cu_seqlens on the "
                         "host, which a CUDA graph cannot capture; capture "
                         "ring_attention on padded sequences instead")
    host = [int(c) for c in cu_seqlens.tolist()]
    if not host or host[0] != 0 or host[-1] != q.shape[0] or \
            any(b < a for a, b in zip(host, host[1:])):
        raise ValueError("ring_attention_varlen: cu_seqlens %s must rise "
                         "from 0 to the shard's %d rows"
                         % (host, q.shape[0]))
    if max(b - a for a, b in zip(host, host[1:] or [0])) > max_seqlen:
        raise ValueError("ring_attention_varlen: a local piece is longer "
                         "than max_seqlen %d" % max_seqlen)
    g, _, world = _world(group)
    if _validating(validate, world, q):
        _validate("ring_attention_varlen", g, q, k, v, values=host)
    return _ring_varlen_op(q, k, v, cu_seqlens, int(max_seqlen),
                           g.group_name, bool(causal), scale, zigzag,
                           bool(deterministic))


# ------------------------------------------------------------ Ulysses

def _a2a(x, group):
    """all_to_all_single along dim 0, differentiable and traceable."""
    from torch.distributed import _functional_collectives as fc
    y = fc.all_to_all_single_autograd(x, None, None, group)
    return fc.wait_tensor(y)


def _seq_to_heads(x, group, world, perm):
    """(B, H, S/N, D) sequence shards -> (B, H/N, S, D) head shards."""
    b, h, s, d = x.shape
    y = x.reshape(b, world, h // world, s, d).permute(1, 0, 2, 3, 4)
    y = _a2a(y.contiguous(), group)           # [rank j's sequence shard]
    y = y.permute(1, 2, 0, 3, 4).reshape(b, h // world, world * s, d)
    return y if perm is None else y.index_select(2, perm)


def _heads_to_seq(y, group, world, inv):
    """The inverse of _seq_to_heads."""
    if inv is not None:
        y = y.index_select(2, inv)
    b, hn, sn, d = y.shape
    s = sn // world
    x = y.reshape(b, hn, world, s, d).permute(2, 0, 1, 3, 4)
    x = _a2a(x.contiguous(), group)           # [rank j's head shard]
    return x.permute(1, 0, 2, 3, 4).reshape(b, world * hn, s, d)


def _zigzag_perm(world, s, device):
    """Positions of the gathered zigzag shards in the global order, and
    back."""
    c = s // 2
    order = [ch for r in range(world) for ch in _ring.chunks(r, world, True)]
    perm = torch.empty(world * s, dtype=torch.long)
    for pos, ch in enumerate(order):       # gathered chunk pos is ch
        perm[ch * c:(ch + 1) * c] = torch.arange(pos * c, (pos + 1) * c)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(world * s)
    return perm.to(device), inv.to(device)


def ulysses_attention(q, k, v, group=None, causal=False, scale=None,
                      zigzag=False, window=None, softcap=None,
                      deterministic=False):
    """DeepSpeed Ulysses over the ranks of group: (out, lse) for this
    rank's sequence shard, as ring_attention's.  An all-to-all turns the
    sequence shards into head shards (H / N query heads, Hk / N K/V heads,
    the whole sequence), fagen's attention runs on them (torch.ops.fagen.
    attention: window and softcap as fagen.attention's), and a second
    all-to-all turns the output back.  H and Hk must be multiples of the
    group's size N.  zigzag: the shards are zigzag ones (shard(...,
    zigzag=True)); default contiguous.  Differentiable (the collectives
    are torch's functional, differentiable all-to-alls), traceable by
    torch.compile; deterministic as fagen.attention's (the all-to-alls
    only move data, so the gradients are then bitwise repeatable)."""
    from fagen import ops
    g, _, world = _world(group)
    _check("ulysses_attention", q, k, v, True, zigzag, 2)
    h, hk = q.shape[1], k.shape[1]
    if h % world or hk % world:
        raise ValueError("ulysses_attention: %d query heads and %d K/V heads "
                         "must be multiples of the group's %d ranks (ring_"
                         "attention has no such limit)" % (h, hk, world))
    perm = inv = None
    if zigzag and world > 1:
        perm, inv = _zigzag_perm(world, q.shape[2], q.device)
    q2, k2, v2 = (_seq_to_heads(t, g, world, perm) for t in (q, k, v))
    out2, lse2 = ops.attention(q2, k2, v2, causal=causal, scale=scale,
                               window=window, softcap=softcap,
                               deterministic=deterministic)
    out = _heads_to_seq(out2, g, world, inv)
    lse = _heads_to_seq(lse2.unsqueeze(-1), g, world, inv).squeeze(-1)
    return out, lse
