#!/usr/bin/env python3
"""bench_cp.py: context-parallel attention (issue #23), training steps
(forward + backward) over a sequence sharded across the GPUs of one host.

    torchrun --nproc_per_node N bench/bench_cp.py [--seqs 65536,...]
        [--heads 16] [--kv-heads 16] [--dim 128] [--reps 3] [--causal yes]
        [--methods ring,ulysses,cp-cudnn,cp-flash,single,sdpa-cudnn]

Methods (each: out = attention(q, k, v), out.backward(dout) on this
rank's shard; bf16, batch 1):

  ring        fagen.distributed.ring_attention (zigzag shards when causal)
  ulysses     fagen.distributed.ulysses_attention (heads >= ranks)
  cp-cudnn    PyTorch's context_parallel (torch.distributed.tensor.
  cp-flash    experimental, ring with its head-tail load balancing) around
              scaled_dot_product_attention with the cuDNN or flash backend
  single      fagen.attention on the whole sequence (one rank only)
  sdpa-cudnn  SDPA cuDNN on the whole sequence (one rank only)

Per point and method: one warm-up, then --reps timed steps, methods
interleaved round-robin; a step's time is the slowest rank's (CUDA
events, all-reduced with MAX); the median is reported as tokens/s per
GPU (S / time / N).  Given --base FILE (a one-rank run's CSV), an N-rank
run prints the scaling efficiency T1 / (N * TN): fagen's methods against
fagen.attention on one GPU ("single"), PyTorch's against SDPA cuDNN on
one GPU.  Each method's output is checked
on 64 query rows of head 0 against float64 after the timed steps (the
whole sequence is made on every rank from one seed; the rows are
gathered); a method off by more than 2e-2 (relative) fails the point.
Writes --out DIR/bench_cp_N.csv (rank 0).
"""
import argparse
import csv
import math
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

import fagen
import fagen.distributed as fd


# the one-rank method a method's scaling efficiency is measured against
BASELINE = {"ring": "single", "ulysses": "single", "cp-cudnn": "sdpa-cudnn",
            "cp-flash": "sdpa-cudnn"}


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--seqs", default="65536,131072,262144")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=0)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--causal", default="yes")
    p.add_argument("--methods",
                   default="ring,ulysses,cp-cudnn,cp-flash,single,"
                           "sdpa-cudnn")
    p.add_argument("--out", default=".")
    p.add_argument("--base", default="")
    return p.parse_args()


def cp_context(mesh, bufs):
    from torch.distributed.tensor.experimental import context_parallel
    return context_parallel(mesh, buffers=bufs,
                            buffer_seq_dims=[2] * len(bufs),
                            no_restore_buffers=set(bufs))


def sdpa_backend(name):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.CUDNN_ATTENTION if name.endswith("cudnn")
                        else SDPBackend.FLASH_ATTENTION])


class Method:
    """A method's step on this rank: run() -> the output shard;
    rows(out) -> (out rows of head 0 at global positions idx)."""

    def __init__(self, name, full, causal, world, mesh):
        self.name, self.causal, self.world, self.mesh = name, causal, world, \
            mesh
        self.full = full
        q, k, v, dout = full
        if name in ("single", "sdpa-cudnn"):
            self.args = [t.detach().clone() for t in full]
            self.zig = False
        elif name.startswith("cp-"):
            # context_parallel shards (and reorders) its buffers in place
            self.args = [t.detach().clone() for t in full]
            self.ctx = cp_context(mesh, self.args)
            self.ctx.__enter__()
            self.zig = None
        else:
            self.zig = causal and name == "ring"
            self.args = [fd.shard(t, 2, zigzag=self.zig).contiguous()
                         for t in full]

    def run(self):
        q, k, v, dout = self.args
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        if self.name == "ring":
            out, _ = fd.ring_attention(q, k, v, causal=self.causal,
                                       validate=False)
        elif self.name == "ulysses":
            out, _ = fd.ulysses_attention(q, k, v, causal=self.causal)
        elif self.name == "single":
            out, _ = fagen.attention(q, k, v, causal=self.causal)
        else:
            with sdpa_backend(self.name):
                out = F.scaled_dot_product_attention(q, k, v,
                                                     is_causal=self.causal)
        out.backward(dout)
        return out

    def gathered(self, out):
        if self.name in ("single", "sdpa-cudnn"):
            return out
        if self.name.startswith("cp-"):
            from torch.distributed.tensor.experimental._attention import \
                context_parallel_unshard
            return context_parallel_unshard(self.mesh, [out], [2])[0]
        return fd.unshard(out, 2, zigzag=self.zig)

    def close(self):
        if self.name.startswith("cp-"):
            self.ctx.__exit__(None, None, None)


def check(out, full, causal, idx):
    """Relative error of out's head-0 rows idx against float64."""
    q, k, v, _ = full
    qr = q[0, 0, idx].double()
    s = qr @ k[0, 0].double().t() / math.sqrt(q.shape[-1])
    if causal:
        pos = torch.arange(k.shape[2], device=q.device)
        s = s.masked_fill(pos[None, :] > idx[:, None], -math.inf)
    ref = torch.softmax(s, -1) @ v[0, 0].double()
    got = out[0, 0, idx].double()
    return ((got - ref).norm() / ref.norm()).item()


def main():
    a = parse()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dev = torch.device("cuda")
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (world,))
    causal = a.causal == "yes"
    hk = a.kv_heads or a.heads
    methods = [m for m in a.methods.split(",")
               if world == 1 or m not in ("single", "sdpa-cudnn")]
    if world == 1:
        methods = [m for m in methods if m in ("single", "sdpa-cudnn",
                                               "ring")]
    base = {}       # (S, method) -> seconds on one rank
    if a.base and os.path.exists(a.base):
        for row in csv.DictReader(open(a.base)):
            base[(int(row["S"]), row["method"])] = float(row["sec"])
    rows = []
    for s in (int(x) for x in a.seqs.split(",")):
        g = torch.Generator(device=dev).manual_seed(s)
        full = [torch.randn(1, h, s, a.dim, generator=g, device=dev,
                            dtype=torch.bfloat16)
                for h in (a.heads, hk, hk, a.heads)]
        live = []
        for m in methods:
            try:
                live.append(Method(m, full, causal, world, mesh))
            except Exception as e:      # a peer's API that is not here
                if rank == 0:
                    print("%s: not run (%s: %s)" % (m, type(e).__name__,
                                                      str(e)[:200]))
        times = {m.name: [] for m in live}
        outs = {}
        for rep in range(a.reps + 1):
            order = live[rep % len(live):] + live[:rep % len(live)]
            for m in order:
                dist.barrier()
                torch.cuda.synchronize()
                t0 = torch.cuda.Event(enable_timing=True)
                t1 = torch.cuda.Event(enable_timing=True)
                t0.record()
                out = m.run()
                t1.record()
                torch.cuda.synchronize()
                ms = torch.tensor([t0.elapsed_time(t1)], device=dev)
                dist.all_reduce(ms, op=dist.ReduceOp.MAX)
                if rep:
                    times[m.name].append(ms.item() / 1e3)
                outs[m.name] = out
        idx = torch.randint(0, s, (64,), generator=g, device=dev)
        for m in live:
            err = check(m.gathered(outs[m.name].detach()), full, causal, idx)
            sec = statistics.median(times[m.name])
            tps = s / sec / world
            flops = 4 * s * s * a.heads * a.dim * (0.5 if causal else 1) * \
                3.5 / world
            one = base.get((s, BASELINE.get(m.name, m.name)))
            eff = one / (world * sec) if one else float("nan")
            rows.append(dict(world=world, S=s, method=m.name, sec=sec,
                             tokens_per_s_per_gpu=tps,
                             tflops_per_gpu=flops / sec / 1e12,
                             scaling=eff, err=err))
            if rank == 0:
                print("N=%d S=%7d %-10s %8.1f ms  %9.0f tok/s/GPU  %5.0f "
                      "TFLOP/s/GPU  scaling %s  err %.1e%s" % (
                          world, s, m.name, sec * 1e3, tps,
                          flops / sec / 1e12,
                          "%.2f" % eff if eff == eff else "  - ", err,
                          "  FAIL" if not err < 2e-2 else ""), flush=True)
            m.close()
        del live, outs, full
        torch.cuda.empty_cache()
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, "bench_cp_%d.csv" % world)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print("wrote", path)
    bad = [r for r in rows if not r["err"] < 2e-2]
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
