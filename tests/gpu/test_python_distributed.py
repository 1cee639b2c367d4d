"""test_python_distributed.py: context-parallel attention (issue #23).

fagen.distributed's ring_attention, ring_attention_varlen and
ulysses_attention against float64, forward and every gradient, within 2x
the error of fagen.attention on the whole sequence (plus a floor); both
errors are printed.

  python3 test_python_distributed.py            one process, then 2 ranks
  python3 test_python_distributed.py --world N  N ranks only
  python3 test_python_distributed.py --kill     a rank dies mid-step
  python3 test_python_distributed.py --capture  the CUDA-graph capture gate

One process (the GPU, or libfagen's simulator with FAGEN_SIM on CPU
tensors): a virtual ring of N ranks (the ring's own step and merge code,
exchanges replaced by rotating lists) for N in 2, 3, 4, 8, causal
(zigzag and contiguous shards) or not, GQA, variable-length batches,
the deterministic backward (two passes bitwise equal);
unequal shards are refused; then a real process group of one rank
(ring and Ulysses through torch.distributed; bitwise equal to
fagen.attention).  Several ranks (processes this script starts, one per
GPU with NCCL, or on the simulator with gloo): ring and Ulysses on the
sharded sequence equal the single-process result on the gathered one;
a small transformer trained one step under DDP and under FSDP2
(torch.compile'd) gets the gradients of the same model run on the whole
sequence on one device; torch.compile(fullgraph=True) of ring_attention
gives the eager bits.  --kill: rank 1 exits at the first exchange of
the second call; rank 0 must report an error within the group's timeout
(plus 20 s) and exit (not hang).  Exit 77 (SKIP) without PyTorch, or
without a Hopper GPU and the simulator.
"""
import datetime
import math
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP = 77
try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("no PyTorch: skipping")
    sys.exit(SKIP)
import fagen

SIM = fagen.simulator() is not None
if not SIM and not (torch.cuda.is_available() and
                    torch.cuda.get_device_capability() == (9, 0)):
    print("no Hopper GPU and no simulator (FAGEN_SIM): skipping")
    sys.exit(SKIP)
import fagen.distributed as fd  # noqa: E402

failures = []
TIMEOUT = 30       # seconds: the process group's, for --kill


def device():
    if SIM:
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def rel(x, ref):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def f64(q, k, v, causal, scale, dout=None):
    """out, lse and (with dout) dq, dk, dv of softmax(q k^T scale) v in
    float64, causal top-left (Sq = Sk), GQA by repeating K/V heads."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    ke, ve = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ ke.transpose(-1, -2) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool,
                                     device=s.device).triu(1), -math.inf)
    out = torch.softmax(s, -1) @ ve
    lse = torch.logsumexp(s, -1)
    if dout is None:
        return out.detach(), lse.detach()
    out.backward(dout.double())
    return out.detach(), lse.detach(), q.grad, k.grad, v.grad


def expect(name, errs, yard, floor=2e-3):
    """errs within 2x yard + floor, element by element."""
    bad = [n for n, e in errs.items() if not e <= 2 * yard[n] + floor]
    line = "%-44s %s" % (name, " ".join(
        "%s %.1e (%.1e)" % (n, errs[n], yard[n]) for n in errs))
    print(("FAIL " if bad else "ok   ") + line)
    if bad:
        failures.append(name)


def make(b, h, hk, s, d, dtype, gen=None):
    dev = device()
    q = torch.randn(b, h, s, d, generator=gen, device=dev).to(dtype)
    k = torch.randn(b, hk, s, d, generator=gen, device=dev).to(dtype)
    v = torch.randn(b, hk, s, d, generator=gen, device=dev).to(dtype)
    dout = torch.randn(b, h, s, d, generator=gen, device=dev).to(dtype)
    return q, k, v, dout


def yardstick(q, k, v, dout, causal, ref):
    """fagen.attention's errors on the whole sequence."""
    qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out, lse = fagen.attention(qq, kk, vv, causal=causal)
    out.backward(dout)
    return {"out": rel(out, ref[0]), "lse": rel(lse, ref[1]),
            "dq": rel(qq.grad, ref[2]), "dk": rel(kk.grad, ref[3]),
            "dv": rel(vv.grad, ref[4])}, (out, lse, qq.grad, kk.grad,
                                         vv.grad)


# ------------------------------------------------------------ one process

def virtual_check(n, b, h, hk, s, d, dtype, causal, zigzag, det=False):
    q, k, v, dout = make(b, h, hk, s, d, dtype)
    scale = d ** -0.5
    ref = f64(q, k, v, causal, scale, dout)
    yard, _ = yardstick(q, k, v, dout, causal, ref)
    cut = lambda t: [fd.shard(t, 2, zigzag=zigzag, rank=r, world=n)  # noqa
                     for r in range(n)]
    qs, ks, vs, ds = cut(q), cut(k), cut(v), cut(dout)
    lay = fd._Dense(None, det)
    res = fd._virtual_forward(lay, qs, ks, vs, causal, zigzag)
    grads = fd._virtual_backward(lay, qs, ks, vs, [o for o, _ in res],
                                 [l for _, l in res], ds, causal, zigzag)
    if det:   # the deterministic backward: the same bits a second time
        again = fd._virtual_backward(lay, qs, ks, vs, [o for o, _ in res],
                                     [l for _, l in res], ds, causal,
                                     zigzag)
        same = all(torch.equal(x, y) for g, a in zip(grads, again)
                   for x, y in zip(g, a))
        print("%s virtual N=%d deterministic: two backward passes %s" % (
            "ok  " if same else "FAIL", n, "bitwise equal" if same else
            "differ"))
        if not same:
            failures.append("virtual deterministic")
    full = lambda xs: fd._reorder(xs, 2, zigzag)  # noqa: E731
    got = [full([o for o, _ in res]), full([l for _, l in res])] + \
        [full([g[i] for g in grads]) for i in range(3)]
    errs = {nm: rel(x, r) for nm, x, r in
            zip(("out", "lse", "dq", "dk", "dv"), got, ref)}
    expect("virtual N=%d %s%s H%d/%d S%d D%d %s%s" % (
        n, "causal " if causal else "", "zigzag" if zigzag else
        "contig" if causal else "", h, hk, s, d, str(dtype)[6:],
        " deterministic" if det else ""), errs, yard)


def varlen_ref(q, k, v, dout, cu, causal, scale):
    """float64 out, lse, dq, dk, dv of a packed batch, each sequence
    alone; (T, H, D) layout, lse (H, T)."""
    outs = [torch.empty(0)] * 5
    parts = []
    for i in range(len(cu) - 1):
        sl = slice(cu[i], cu[i + 1])
        four = [t[sl].transpose(0, 1).unsqueeze(0) for t in (q, k, v, dout)]
        o, l, dq, dk, dv = f64(*four[:3], causal, scale, four[3])
        parts.append((o[0].transpose(0, 1), l[0], dq[0].transpose(0, 1),
                      dk[0].transpose(0, 1), dv[0].transpose(0, 1)))
    outs = [torch.cat([p[i] for p in parts], 1 if i == 1 else 0)
            for i in range(5)]
    return outs


def unshard_varlen(xs, cu, n, zigzag, dim=0):
    """The packed batch from the ranks' shard_varlen pieces."""
    seqs = []
    off = [0] * n
    for i in range(len(cu) - 1):
        ln = (cu[i + 1] - cu[i]) // n
        pieces = [x.narrow(dim, off[r], ln) for r, x in enumerate(xs)]
        off = [o + ln for o in off]
        seqs.append(fd._reorder(pieces, dim, zigzag))
    return torch.cat(seqs, dim)


def varlen_check(n, lens, h, hk, d, dtype, causal, zigzag):
    dev = device()
    cu = [0]
    for ln in lens:
        cu.append(cu[-1] + ln)
    t = cu[-1]
    q = torch.randn(t, h, d, device=dev).to(dtype)
    k = torch.randn(t, hk, d, device=dev).to(dtype)
    v = torch.randn(t, hk, d, device=dev).to(dtype)
    dout = torch.randn(t, h, d, device=dev).to(dtype)
    scale = d ** -0.5
    ref = varlen_ref(q, k, v, dout, cu, causal, scale)
    cu_t = torch.tensor(cu, dtype=torch.int32, device=dev)
    qq, kk, vv = (x.detach().clone().requires_grad_() for x in (q, k, v))
    out, lse = fagen.attention_varlen(qq, kk, vv, cu_t, cu_t, max(lens),
                                      max(lens), causal=causal)
    out.backward(dout)
    yard = {"out": rel(out, ref[0]), "lse": rel(lse, ref[1]),
            "dq": rel(qq.grad, ref[2]), "dk": rel(kk.grad, ref[3]),
            "dv": rel(vv.grad, ref[4])}
    sh = [[fd.shard_varlen(x, cu_t, zigzag=zigzag, rank=r, world=n)
           for r in range(n)] for x in (q, k, v, dout)]
    cu_loc, mx = sh[0][0][1], sh[0][0][2]
    qs, ks, vs, ds = ([p[0] for p in s_] for s_ in sh)
    lay = fd._Varlen(None, cu_loc, mx, zigzag)
    res = fd._virtual_forward(lay, qs, ks, vs, causal, zigzag)
    grads = fd._virtual_backward(lay, qs, ks, vs, [o for o, _ in res],
                                 [l for _, l in res], ds, causal, zigzag)
    got = [unshard_varlen([o for o, _ in res], cu, n, zigzag),
           unshard_varlen([l for _, l in res], cu, n, zigzag, 1)] + \
        [unshard_varlen([g[i] for g in grads], cu, n, zigzag)
         for i in range(3)]
    errs = {nm: rel(x, r) for nm, x, r in
            zip(("out", "lse", "dq", "dk", "dv"), got, ref)}
    expect("virtual varlen N=%d %s lens %s H%d/%d D%d" % (
        n, "causal" if causal else "full", lens, h, hk, d), errs, yard)


def refusals():
    dev = device()
    x = torch.randn(1, 2, 64, 64, device=dev).bfloat16()
    y = torch.randn(1, 2, 96, 64, device=dev).bfloat16()
    for what, fn in (
            ("unequal shards", lambda: fd._virtual_forward(
                fd._Dense(None), [x, y], [x, y], [x, y], True, True)),
            ("zigzag of an odd length", lambda: fd.shard(
                torch.zeros(1, 1, 10, 8), 2, zigzag=True, rank=0,
                world=3)),
            ("uneven contiguous cut", lambda: fd.shard(
                torch.zeros(1, 1, 10, 8), 2, rank=0, world=3)),
            ("varlen zigzag, odd piece", lambda: fd._Varlen(
                None, torch.tensor([0, 3, 8], dtype=torch.int32), 5,
                True)),
            ("v's head dim not q's", lambda: fd.ring_attention(
                x, x, x[..., :32], causal=True))):
        try:
            fn()
        except ValueError as e:
            print("ok   refused %s: %s" % (what, e))
            continue
        print("FAIL %s was not refused" % what)
        failures.append("refuse " + what)


def capture_check():
    """While a CUDA graph captures: ring_attention skips its shape check
    (an all_gather read on the host), ring_attention_varlen refuses (it
    reads cu_seqlens on the host); outside a capture both go on."""
    import types
    real = torch.cuda.is_current_stream_capturing
    capturing_fn = fd._capturing
    cuda = types.SimpleNamespace(is_cuda=True)
    try:
        for capturing in (False, True):
            torch.cuda.is_current_stream_capturing = lambda: capturing
            got = fd._validating(True, 2, cuda)
            ok = got == (not capturing)
            print("%s validate while %scapturing: %s" % (
                "ok  " if ok else "FAIL", "" if capturing else "not ", got))
            if not ok:
                failures.append("capture validate %s" % capturing)
        # the refusal comes before cu_seqlens.tolist() (fd._capturing
        # stands in for a capture, which CPU tensors cannot be in)
        q, k, v, _ = make(1, 2, 2, 64, 64, torch.bfloat16)
        q, k, v = (x[0].transpose(0, 1) for x in (q, k, v))
        cu = torch.tensor([0, 64], dtype=torch.int32, device=q.device)
        fd._capturing = lambda t: True
        try:
            fd.ring_attention_varlen(q, k, v, cu, 64)
            print("FAIL varlen under capture was not refused")
            failures.append("capture varlen")
        except ValueError as e:
            print("ok   refused varlen under capture: %s" % e)
    finally:
        torch.cuda.is_current_stream_capturing = real
        fd._capturing = capturing_fn


def one_rank_group():
    """ring_attention and ulysses_attention through a real process group
    of one rank: bitwise fagen.attention."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    dist.init_process_group("gloo" if SIM else "nccl", rank=0, world_size=1,
                            device_id=None if SIM else device())
    for causal in (False, True):
        q, k, v, dout = make(2, 4, 2, 256, 64, torch.bfloat16)
        ref = []
        for fn in (lambda a, b, c: fagen.attention(a, b, c, causal=causal),
                   lambda a, b, c: fd.ring_attention(a, b, c, causal=causal),
                   lambda a, b, c: fd.ulysses_attention(a, b, c,
                                                        causal=causal)):
            qq, kk, vv = (t.detach().clone().requires_grad_()
                          for t in (q, k, v))
            out, lse = fn(qq, kk, vv)
            out.backward(dout)
            ref.append((out, lse, qq.grad, kk.grad, vv.grad))
        for name, got in (("ring", ref[1]), ("ulysses", ref[2])):
            same = all(torch.equal(a, b) for a, b in zip(got, ref[0]))
            print("%sone-rank group %s %s: bitwise fagen.attention"
                  % ("ok   " if same else "FAIL ", name,
                     "causal" if causal else "full"))
            if not same:
                failures.append("one-rank " + name)
    dist.destroy_process_group()


# ------------------------------------------------------------ several ranks

def gathered(x, dim, zigzag):
    return fd.unshard(x.contiguous(), dim, zigzag=zigzag)


def rank_cases(rank, world):
    dev = device()
    gen = torch.Generator(device=dev)
    cases = [("ring", True, None, 4, 4, 128), ("ring", True, False, 4, 4, 64),
             ("ring", False, False, 8, 2, 128), ("ring", True, None, 8, 1, 64),
             ("ulysses", True, False, 4, 2, 128),
             ("ulysses", False, False, 4, 4, 64),
             ("ulysses", True, True, 8, 2, 64)]
    s = 256 if SIM else 2048
    for i, (kind, causal, zz, h, hk, d) in enumerate(cases):
        if SIM and d == 128:
            continue
        if kind == "ulysses" and hk % world:    # heads must split evenly
            m = world // math.gcd(hk, world)
            h, hk = h * m, hk * m
        gen.manual_seed(1234 + i)
        q, k, v, dout = make(1 if SIM else 2, h, hk, s, d, torch.bfloat16,
                             gen)
        z = causal if zz is None else zz
        ref = f64(q, k, v, causal, d ** -0.5, dout)
        yard, single = yardstick(q, k, v, dout, causal, ref)
        qq, kk, vv = (fd.shard(t, 2, zigzag=z).detach().clone()
                      .requires_grad_() for t in (q, k, v))
        if kind == "ring":
            out, lse = fd.ring_attention(qq, kk, vv, causal=causal, zigzag=z)
        else:
            out, lse = fd.ulysses_attention(qq, kk, vv, causal=causal,
                                            zigzag=z)
        out.backward(fd.shard(dout, 2, zigzag=z))
        got = [gathered(x, 2, z) for x in (out, lse, qq.grad, kk.grad,
                                           vv.grad)]
        errs = {nm: rel(x, r) for nm, x, r in
                zip(("out", "lse", "dq", "dk", "dv"), got, ref)}
        # and against the single-device result on the gathered sequence
        errs["vs1"] = max(rel(x, y.double()) for x, y in zip(got, single))
        yard["vs1"] = max(yard.values())
        if rank == 0:
            expect("%d ranks %s %s%s H%d/%d S%d D%d" % (
                world, kind, "causal " if causal else "full ",
                "zigzag" if z else "contig", h, hk, s, d), errs, yard)
    # varlen
    gen.manual_seed(99)
    lens = [n * 2 * world for n in ((16, 48, 32) if SIM else
                                    (128, 320, 64, 512))]
    cu = [0]
    for ln in lens:
        cu.append(cu[-1] + ln)
    h, hk, d = 4, 2, 64
    t = cu[-1]
    q, k, v, dout = (torch.randn(t, hh, d, generator=gen, device=dev)
                     .bfloat16() for hh in (h, hk, hk, h))
    ref = varlen_ref(q, k, v, dout, cu, True, d ** -0.5)
    cu_t = torch.tensor(cu, dtype=torch.int32, device=dev)
    sh = [fd.shard_varlen(x, cu_t, zigzag=True) for x in (q, k, v, dout)]
    qq, kk, vv = (p[0].detach().clone().requires_grad_() for p in sh[:3])
    out, lse = fd.ring_attention_varlen(qq, kk, vv, sh[0][1], sh[0][2],
                                        causal=True)
    out.backward(sh[3][0])
    parts = []
    for x, dim in ((out, 0), (lse, 1), (qq.grad, 0), (kk.grad, 0),
                   (vv.grad, 0)):
        all_ = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(all_, x.contiguous())
        parts.append(unshard_varlen(all_, cu, world, True, dim))
    errs = {nm: rel(x, r) for nm, x, r in
            zip(("out", "lse", "dq", "dk", "dv"), parts, ref)}
    if rank == 0:
        expect("%d ranks ring varlen causal zigzag %s" % (world, lens),
               errs, {nm: 3e-3 for nm in errs})


class Block(torch.nn.Module):
    def __init__(self, dm, nh, nkv, hd):
        super().__init__()
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.n1 = torch.nn.RMSNorm(dm)
        self.qkv = torch.nn.Linear(dm, (nh + 2 * nkv) * hd, bias=False)
        self.o = torch.nn.Linear(nh * hd, dm, bias=False)
        self.n2 = torch.nn.RMSNorm(dm)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dm, 4 * dm),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(4 * dm, dm))
        self.attn = None

    def forward(self, x):
        b, s, _ = x.shape
        qkv = self.qkv(self.n1(x)).view(b, s, -1, self.hd).transpose(1, 2)
        q, k, v = qkv.to(torch.bfloat16).split(
            (self.nh, self.nkv, self.nkv), 1)
        a = self.attn(q, k, v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.o(a.to(x.dtype))
        return x + self.mlp(self.n2(x))


def model_check(rank, world, wrap):
    """One training step's gradients under context parallelism (DDP or
    FSDP2 over the ring's ranks, torch.compile'd) against the same model
    on the whole sequence."""
    dev = device()
    torch.manual_seed(7)
    model = torch.nn.Sequential(*[Block(256, 4, 2, 64) for _ in range(2)]
                                ).to(dev)
    ref = torch.nn.Sequential(*[Block(256, 4, 2, 64) for _ in range(2)]
                              ).to(dev)
    ref.load_state_dict(model.state_dict())
    for blk in ref:
        blk.attn = lambda q, k, v: fagen.attention(q, k, v, causal=True)[0]
    for blk in model:
        blk.attn = lambda q, k, v: fd.ring_attention(q, k, v,
                                                     causal=True)[0]
    s = 256 if SIM else 2048
    gen = torch.Generator(device=dev).manual_seed(11)
    x = torch.randn(2, s, 256, generator=gen, device=dev)
    y = torch.randn(2, s, 256, generator=gen, device=dev)
    loss = ((ref(x) - y) ** 2).mean()
    loss.backward()
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(model)
    else:
        from torch.distributed.fsdp import fully_shard
        for blk in model:
            fully_shard(blk)
        net = fully_shard(model)
    if not SIM:
        net = torch.compile(net)
    xs, ys = (fd.shard(t, 1, zigzag=True) for t in (x, y))
    # the mean over the whole sequence: a rank's share, times world, since
    # DDP and FSDP2 average the ranks' gradients
    out = net(xs)
    (((out - ys) ** 2).sum() * world / y.numel()).backward()
    worst = 0.0
    for (name, p), (_, pr) in zip(model.named_parameters(),
                                  ref.named_parameters()):
        g = p.grad
        if hasattr(g, "full_tensor"):
            g = g.full_tensor()
        worst = max(worst, rel(g, pr.grad.double()))
    if rank == 0:
        ok = worst <= 2e-2
        print("%s%d ranks %s%s training step: worst parameter gradient "
              "rel %.1e" % ("ok   " if ok else "FAIL ", world, wrap,
                            "" if SIM else " + torch.compile", worst))
        if not ok:
            failures.append("model " + wrap)


def fullgraph_check(rank, world):
    """torch.compile(fullgraph=True) keeps ring_attention as one op."""
    dev = device()
    q, k, v, dout = make(1, 4, 2, 512, 64, torch.bfloat16,
                         torch.Generator(device=dev).manual_seed(5))
    qs = [fd.shard(t, 2, zigzag=True) for t in (q, k, v)]
    eager = fd.ring_attention(*qs, causal=True)[0]
    fn = torch.compile(lambda a, b, c: fd.ring_attention(
        a, b, c, causal=True, validate=False)[0], fullgraph=True)
    same = torch.equal(fn(*qs), eager)
    if rank == 0:
        print("%s%d ranks torch.compile(fullgraph=True) ring_attention: "
              "bitwise eager" % ("ok   " if same else "FAIL ", world))
        if not same:
            failures.append("fullgraph")


def worker():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    kill = os.environ.get("FAGEN_TEST_KILL") == "1"
    if not SIM:
        torch.cuda.set_device(device())
    dist.init_process_group("gloo" if SIM else "nccl",
                            timeout=datetime.timedelta(seconds=TIMEOUT),
                            device_id=None if SIM else device())
    if kill:
        return kill_worker(rank)
    rank_cases(rank, world)
    for wrap in ("ddp", "fsdp2"):
        model_check(rank, world, wrap)
    if not SIM:
        fullgraph_check(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failures else 0


def kill_worker(rank):
    """Rank 1 exits as it would send its keys and values at the first
    step of the second call (the first set the connections up); rank 0
    then waits for them until the group's timeout."""
    q, k, v, _ = make(1, 4, 4, 4096, 128, torch.bfloat16)
    start = fd._Comm.start
    import faulthandler
    faulthandler.dump_traceback_later(TIMEOUT + 30, exit=False)

    calls = [0]

    def dying(self, tensors):
        calls[0] += 1
        if rank == 1 and calls[0] == 2:
            print("rank 1: exiting at the second call's first exchange at %.3f"
                  % time.time(), flush=True)
            os._exit(3)
        return start(self, tensors)
    fd._Comm.start = dying
    qs = [fd.shard(t, 2, zigzag=True) for t in (q, k, v)]
    for _ in range(3):
        out, _ = fd.ring_attention(*qs, causal=True)
        out.float().sum().item()        # waits on the GPU
    print("rank %d: finished, which it should not have" % rank)
    return 0


def _no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def launch(world, kill=False):
    env = dict(os.environ, WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29600 + os.getpid() % 1000),
               NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1")
    if kill:
        env["FAGEN_TEST_KILL"] = "1"
    procs, logs = [], []
    for r in range(world):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        logs.append(tempfile.TemporaryFile("w+"))
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker"], env=e,
            stdout=logs[-1], stderr=subprocess.STDOUT, text=True,
            preexec_fn=_no_core))   # an abort's core dump takes a minute
    t0 = time.time()
    outs, ends = [], []
    for p, f in zip(procs, logs):
        try:
            p.wait(timeout=(TIMEOUT + 90) if kill else 900)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        ends.append(time.time())
        f.seek(0)
        outs.append(f.read() + ("" if p.returncode != -9 else
                                "\n(killed by the test: no exit in time)"))
    if kill:
        return [p.returncode for p in procs], outs, ends[0]
    return [p.returncode for p in procs], outs, time.time() - t0


def several(world):
    if not SIM and torch.cuda.device_count() < world:
        print("%d ranks: %d GPU(s) here, skipped" % (
            world, torch.cuda.device_count()))
        return
    codes, outs, secs = launch(world)
    print(outs[0], end="")
    for r in range(1, world):
        if codes[r]:
            print("rank %d:\n%s" % (r, outs[r][-3000:]))
    print("%d ranks: exit codes %s, %.0f s" % (world, codes, secs))
    if any(codes):
        failures.append("%d ranks" % world)


def kill_check():
    if not SIM and torch.cuda.device_count() < 2:
        print("--kill: one GPU here, skipped")
        return
    codes, outs, end0 = launch(2, kill=True)
    died = [float(ln.rsplit(" ", 1)[1]) for ln in outs[1].splitlines()
            if ln.startswith("rank 1: exiting")]
    secs = end0 - died[0] if died else float("inf")
    # the first error NCCL's watchdog logs: [E1126 16:53:30.012776244 ...
    m = re.search(r"\[E(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)",
                  outs[0])
    err = float("inf")
    if m and died:
        y = time.localtime(died[0]).tm_year
        err = time.mktime((y,) + tuple(int(g) for g in m.groups()[:5]) +
                          (0, 0, -1)) + float(m.group(6)) - died[0]
    elif "Error" in outs[0] and died:
        err = secs          # a Python exception: when the process ended
    tail = "\n".join(ln for ln in outs[0].splitlines()
                     if "frame #" not in ln)[-1500:]
    print("rank 0 (exit %s %.0f s after rank 1 died; timeout %d s):\n%s"
          % (codes[0], secs, TIMEOUT, tail))
    ok = codes[1] == 3 and codes[0] != 0 and err < TIMEOUT + 20 and \
        secs < TIMEOUT + 90 and "finished" not in outs[0]
    print("%sa rank killed mid-step: the other reported an error %.0f s "
          "after it and exited after %.0f s" % ("ok   " if ok else "FAIL ",
                                               err, secs))
    if not ok:
        failures.append("kill")


def main():
    if "--worker" in sys.argv:
        return worker()
    if "--kill" in sys.argv:
        kill_check()
    elif "--world" in sys.argv:
        several(int(sys.argv[sys.argv.index("--world") + 1]))
    elif "--capture" in sys.argv:
        capture_check()
    else:
        capture_check()
        torch.manual_seed(0)
        dt = torch.bfloat16
        if SIM:
            for n, causal, zz in ((2, True, True), (3, False, False),
                                  (4, True, False), (2, True, True)):
                virtual_check(n, 1, 2, 1, 48 * n, 64, dt, causal, zz)
            varlen_check(2, [32, 96], 2, 1, 64, dt, True, True)
            virtual_check(2, 1, 2, 1, 96, 64, dt, True, True, det=True)
        else:
            for n in (2, 3, 4, 8):
                for causal, zz in ((False, False), (True, True),
                                   (True, False)):
                    virtual_check(n, 2, 4, 4, 256 * n, 128, dt, causal, zz)
                virtual_check(n, 1, 8, 2, 128 * n, 64, torch.float16, True,
                              True)
            virtual_check(4, 2, 4, 2, 2048, 128, dt, True, True, det=True)
            for n, causal, zz in ((2, True, True), (4, True, True),
                                  (3, False, False)):
                varlen_check(n, [2 * n * 64, 2 * n * 200, 2 * n * 8], 4, 2,
                             128, dt, causal, zz)
        refusals()
        one_rank_group()
        several(2)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
