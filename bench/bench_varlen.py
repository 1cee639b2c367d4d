#!/usr/bin/env python3
"""bench_varlen.py: fagen.attention_varlen against the dense kernel on the
same total tokens (issue 12's target: within 5 %), and on mixed lengths.

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench_varlen.py \
        [--reps N] [--dims 64,128] [--total 16384] [--heads H] \
        [--schedule FILE]

For each D, causal off and on, and S in 1k, 4k, 16k: B = total / S
sequences of S tokens, once as a dense (B, H, S, D) batch through
fagen.attention and once packed (B*S, H, D) through
fagen.attention_varlen (the same schedule, -D VARLEN=true: the
runtime's for D, fa_fwd_baseline_sm90.fa at 64 and fa_fwd_sm90.fa at 128
and 256, or --schedule's), and a mixed batch of the same total
tokens (lengths spread 1..2S), each checked first against float64 on one
sequence (outputs NaN-poisoned), then timed with CUDA events (median of
--reps interleaved runs, warm-up excluded).  TFLOP/s counts each
sequence's 4*H*Sq*Sk*D (half for causal).  Prints varlen/dense ratios.
"""
import argparse
import math
import statistics
import sys

import torch

import fagen


def timed(fn, reps, per=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    z = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(per):
        fn()
    z.record()
    z.synchronize()
    return a.elapsed_time(z) / 1e3 / per


def f64(q, k, v, causal):
    """float64 attention of one sequence, its first head: q (S, H, D), k,
    v (S, Hk, D); (S, 1, D)."""
    q, k, v = q[:, :1], k[:, :1], v[:, :1]
    g = 1
    q, k, v = (t.double().transpose(0, 1) for t in (q, k, v))
    k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        keep = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
        s = s.masked_fill(~keep.tril(sk - sq), -math.inf)
    return (torch.softmax(s, -1) @ v).transpose(0, 1)


def point(d, causal, s, total, h, reps, gen, sched):
    b = total // s
    mk = lambda *sh: torch.randn(*sh, device="cuda", dtype=torch.bfloat16,
                                 generator=gen)
    qd, kd, vd = mk(b, h, s, d), mk(b, h, s, d), mk(b, h, s, d)
    qp, kp, vp = (t.transpose(1, 2).reshape(b * s, h, d).contiguous()
                  for t in (qd, kd, vd))
    cu = torch.arange(0, b * s + 1, s, dtype=torch.int32, device="cuda")
    lens = torch.randint(1, 2 * s, (4 * b,), generator=gen,
                         device="cuda").tolist()
    mixed, acc = [], 0
    for n in lens:                   # lengths 1 .. 2S up to the total
        n = min(n, total - acc)
        if n <= 0:
            break
        mixed.append(n)
        acc += n
    cm = torch.tensor([0] + [sum(mixed[:i + 1]) for i in range(len(mixed))],
                      dtype=torch.int32, device="cuda")
    qm, km, vm = mk(acc, h, d), mk(acc, h, d), mk(acc, h, d)
    op = torch.empty_like(qp)
    om = torch.empty_like(qm)
    od = torch.empty_like(qd)
    runs = {
        "dense": lambda: fagen.attention(qd, kd, vd, causal=causal, out=od,
                                         schedule=sched),
        "varlen": lambda: fagen.attention_varlen(
            qp, kp, vp, cu, cu, s, s, causal=causal, out=op, validate=False,
            schedule=sched),
        "mixed": lambda: fagen.attention_varlen(
            qm, km, vm, cm, cm, max(mixed), max(mixed), causal=causal,
            out=om, validate=False, schedule=sched),
    }
    # check: NaN-poisoned outputs against float64 on one sequence each
    for o in (op, om, od):
        o.fill_(math.nan)
    for fn in runs.values():
        fn()
    torch.cuda.synchronize()
    last = b - 1
    err = {
        "dense": (od[last].transpose(0, 1)[:, :1].double() -
                  f64(qp[last * s:], kp[last * s:], vp[last * s:],
                      causal)).abs().max().item(),
        "varlen": (op[last * s:, :1].double() -
                   f64(qp[last * s:], kp[last * s:], vp[last * s:],
                       causal)).abs().max().item(),
    }
    i = len(mixed) - 1
    a0, a1 = cm[i].item(), cm[i + 1].item()
    err["mixed"] = (om[a0:a1, :1].double() - f64(qm[a0:a1], km[a0:a1],
                                             vm[a0:a1], causal)
                    ).abs().max().item()
    times = {n: [] for n in runs}
    for r in range(reps):
        for n in runs:
            times[n].append(timed(runs[n], 1))
    fl = lambda lens_: sum(4.0 * h * n * n * d / (2 if causal else 1)
                           for n in lens_)
    rate = {"dense": fl([s] * b) / statistics.median(times["dense"]) / 1e12,
            "varlen": fl([s] * b) / statistics.median(times["varlen"]) /
            1e12,
            "mixed": fl(mixed) / statistics.median(times["mixed"]) / 1e12}
    bad = [n for n, e in err.items() if not e < 2e-2]
    print("D=%3d %-6s S=%5d B=%3d: dense %4.0f  varlen %4.0f (%.3fx)  "
          "mixed(%d seqs) %4.0f TFLOP/s; max err %s%s" % (
              d, "causal" if causal else "full", s, b, rate["dense"],
              rate["varlen"], rate["varlen"] / rate["dense"], len(mixed),
              rate["mixed"], " ".join("%s %.1e" % kv for kv in err.items()),
              "  CHECK FAILED: " + ",".join(bad) if bad else ""))
    return not bad, rate["varlen"] / rate["dense"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--seqs", default="1024,4096,16384")
    ap.add_argument("--total", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--schedule", default=None)
    a = ap.parse_args()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    print("device: %s, torch %s, libfagen %s" % (
        torch.cuda.get_device_name(), torch.__version__, fagen.version()))
    ok, ratios = True, []
    with torch.no_grad():
        for d in (int(x) for x in a.dims.split(",")):
            for causal in (False, True):
                for s in (int(x) for x in a.seqs.split(",")):
                    good, r = point(d, causal, s, a.total,
                                    a.heads or 2048 // d, a.reps, gen,
                                    a.schedule)
                    ok &= good
                    ratios.append(r)
    print("varlen / dense: geomean %.3f, min %.3f" % (
        math.exp(sum(map(math.log, ratios)) / len(ratios)), min(ratios)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
