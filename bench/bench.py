#!/usr/bin/env python3
"""bench.py: fagen's attention against cuDNN, FlashAttention 2 and the
unfused baseline, side by side in one process (issue 7's grid).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/bench.py \
        [--out DIR] [--quick] [--reps N] [--dims 64,96,128,192:128,256] \
        [--seqs 1024,...] [--causal both|yes|no] [--extra NAME=FILE ...] \
        [--heads H] [--gqa G]
    python3 bench/bench.py --plot bench.csv [--out DIR]  # redraw only
    python3 bench/bench.py --bwd [bench_bwd.py's arguments]  # backward
    python3 bench/bench.py --kernels [bench_kernels.py's]    # norms, ..., xent
    python3 bench/bench.py --decode [bench_decode.py's]      # KV-cache decode

For every grid point (D in 64, 128, 256, or --dims, where D:DV gives v
and the output another head dim, e.g. 192:128, DeepSeek's MLA prefill;
causal off and on; S from 1k to 16k; batch 16384/S, heads 2048/D or
--heads; bf16; with --gqa G, k and v have H/G heads, grouped-query
attention) it runs, on fresh random inputs:

  fagen     fagen.attention's default: the fastest shipped schedule
            (fa_fwd_sm90.fa at D=128, fa_fwd_baseline_sm90.fa at D=64)
  ws        fa_fwd_sm90.fa, the warp-specialized schedule (FA3-style)
  baseline  fa_fwd_baseline_sm90.fa, the non-specialized schedule
  NAME      each --extra NAME=FILE: another schedule, for A/B tests
  cudnn     torch SDPA restricted to the cuDNN backend
  flash     torch SDPA restricted to the flash (FlashAttention 2) backend
  fa4       FlashAttention-4 (flash_attn.cute, CuTe DSL) where importable
            (../shared/peers/README.md puts it on the device machine)
  unfused   libfagen's nvrtc reference (S = QK^T in f32, softmax, PV),
            for S up to 4k

Each output is checked against a float64 reference on a few (batch, head)
slices, after its buffer was filled with NaN; a method whose error is more
than 4x cuDNN's (plus 2^-10) fails the point.  Timing: CUDA events around
a run of back-to-back calls over rotating input sets (so L2 holds none of
them), warm-up excluded, the median over --reps runs; the methods' runs
are interleaved round-robin (the first method rotating) so that clock
drift within a point does not favour the method timed first.  TFLOP/s counts
2*B*H*S*S*(D + DV), half for causal.  Also times a bf16 8192^3 GEMM (torch.mm) as
the ceiling.  Writes DIR/bench.csv and DIR/bench.png (when matplotlib is
there) and prints the table with each method's ratio to cuDNN.
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import fagen
except ImportError:     # --plot needs neither
    torch = None

SEQS = [1024, 2048, 4096, 8192, 16384]
METHODS = ["fagen", "ws", "baseline", "cudnn", "flash", "fa4", "unfused"]
COLORS = {"fagen": "tab:blue", "ws": "tab:cyan", "baseline": "tab:orange",
          "cudnn": "tab:green", "flash": "tab:red", "fa4": "tab:brown",
          "unfused": "tab:purple"}
SETS = 3          # rotating input sets


def flops(b, h, s, d, causal, dv=None):
    f = 2.0 * b * h * s * s * (d + (dv or d))
    return f / 2 if causal else f


def make_fns(d, causal, extra=(), gqa=1):
    """name -> fn(q, k, v, out) returning the output tensor, for the
    methods that take this head dim; extra: (name, schedule file) pairs
    timed like 'fagen' (A/B experiments).  gqa > 1: k and v have that many
    times fewer heads than q (SDPA with enable_gqa: cuDNN's native GQA)."""
    kw = {"enable_gqa": True} if gqa > 1 else {}

    def sdpa(backend):
        def fn(q, k, v, out):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v,
                                                      is_causal=causal, **kw)
        return fn

    fns = {}
    if d in (64, 96, 128, 192, 256):
        fns["fagen"] = lambda q, k, v, out: fagen.attention(
            q, k, v, causal=causal, out=out)[0]
        fns["ws"] = lambda q, k, v, out: fagen.attention(
            q, k, v, causal=causal, schedule="fa_fwd_sm90.fa", out=out)[0]
        fns["baseline"] = lambda q, k, v, out: fagen.attention(
            q, k, v, causal=causal, schedule="fa_fwd_baseline_sm90.fa",
            out=out)[0]
        for name, file in extra:
            fns[name] = (lambda file: lambda q, k, v, out: fagen.attention(
                q, k, v, causal=causal, schedule=file, out=out)[0])(file)
    fns["cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
    fns["flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
    try:     # FlashAttention-4 (CuTe DSL), when installed (shared/peers)
        from flash_attn.cute import flash_attn_func as fa4

        def fa4_fn(q, k, v, out):
            # (B, H, S, D) views of its (B, S, H, D); GQA native
            o = fa4(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    causal=causal)[0]
            return o.transpose(1, 2)
        fns["fa4"] = fa4_fn
    except ImportError:
        pass
    fns["unfused"] = lambda q, k, v, out: fagen.reference(
        q, k, v, causal=causal, out=out)[0]
    return fns


def reference64(q, k, v, causal, idx):
    """float64 attention of the (batch, head) slices in idx."""
    outs = []
    g = q.shape[1] // k.shape[1]       # query heads per K/V head
    for b, h in idx:
        qq = q[b, h].double()
        kk, vv = k[b, h // g].double(), v[b, h // g].double()
        s = qq @ kk.T / math.sqrt(q.shape[-1])
        if causal:
            n = s.shape[0]
            s.masked_fill_(torch.ones(n, n, dtype=torch.bool,
                                      device=s.device).triu(1),
                           float("-inf"))
        outs.append(torch.softmax(s, -1) @ vv)
    return outs


def time_fn(fn, sets, outs, reps, per_rep, warmup=3):
    """Median seconds per call."""
    for i in range(warmup):
        fn(*sets[i % len(sets)], outs[i % len(outs)])
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        z = torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(per_rep):
            fn(*sets[i % len(sets)], outs[i % len(outs)])
        z.record()
        z.synchronize()
        times.append(a.elapsed_time(z) / 1e3 / per_rep)
    return statistics.median(times)


def gemm_rate(reps):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = time_fn(lambda x, y, o: torch.mm(x, y), [(a, b)], [None], reps, 10)
    return 2.0 * n ** 3 / t / 1e12


def bench_point(d, causal, s, reps, fns, gen, gqa=1, heads=None, dv=None):
    dv = dv or d
    b, h = 16384 // s, heads or max(2048 // d, 1)
    shape, kvshape = (b, h, s, d), (b, h // gqa, s, d)
    vshape, oshape = (b, h // gqa, s, dv), (b, h, s, dv)
    sets = [tuple(torch.randn(sh, device="cuda", dtype=torch.bfloat16,
                              generator=gen) for sh in (shape, kvshape,
                                                        vshape))
            for _ in range(SETS)]
    outs = [torch.empty(oshape, device="cuda", dtype=torch.bfloat16)
            for _ in range(SETS)]
    idx = [(0, 0), (b - 1, h - 1)]
    ref = reference64(*sets[0], causal, idx)
    fl = flops(b, h, s, d, causal, dv)
    row = {"D": d, "DV": dv, "causal": int(causal), "S": s, "B": b, "H": h,
           "Hk": h // gqa}
    errs, ok = {}, {}
    for name, fn in fns.items():                        # check first
        if name == "unfused" and s > 4096:
            continue     # slow, and its S matrix is B*H*S*S*4 bytes
        try:
            outs[0].fill_(float("nan"))
            o = fn(*sets[0], outs[0])
            torch.cuda.synchronize()
            err = max((o[bb, hh].double() - r).abs().max().item()
                      for (bb, hh), r in zip(idx, ref))
            if math.isnan(err) or torch.isnan(o).any().item():
                err = float("inf")
            errs[name] = err
            ok[name] = fn
        except Exception as e:                          # noqa: BLE001
            print("  %s D=%d causal=%d S=%d: %s" % (name, d, causal, s,
                  str(e).splitlines()[0][:160]), file=sys.stderr)
            torch.cuda.synchronize()
    # Then time the methods round-robin, one repetition each in turn and
    # the starting method rotating, so that clock and power drift over the
    # point (first-timed methods ran a few % faster) falls on all alike.
    per_rep = max(1, min(50, int(2e-3 / max(fl / 400e12, 1e-6))))
    names = [n for n in ok if n != "unfused"]
    times = {n: [] for n in names}
    for n in names:                                     # warm-up
        time_fn(ok[n], sets, outs, 1, 3)
    for r in range(reps):
        for k in range(len(names)):
            n = names[(r + k) % len(names)]
            times[n].append(time_fn(ok[n], sets, outs, 1, per_rep,
                                    warmup=0))
    for n in names:
        row[n] = fl / statistics.median(times[n]) / 1e12
    if "unfused" in ok:
        row["unfused"] = fl / time_fn(ok["unfused"], sets, outs, 3, 1) / 1e12
    tol = 4 * errs.get("cudnn", errs.get("flash", 1e-2)) + 2 ** -10
    for name, err in errs.items():
        row[name + "_err"] = err
        if err > tol:
            row[name + "_bad"] = 1
            print("  CHECK FAILED: %s D=%d causal=%d S=%d: max error %.3g "
                  "> %.3g" % (name, d, causal, s, err, tol), file=sys.stderr)
    del sets, outs
    torch.cuda.empty_cache()
    return row


def fmt(row, name):
    if name not in row:
        return "-"
    v = "%.0f" % row[name]
    if row.get(name + "_bad"):
        v += "!"
    if name != "cudnn" and "cudnn" in row:
        v += " (%.2fx)" % (row[name] / row["cudnn"])
    return v


def plot(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: %s not written" % path)
        return
    combos = sorted({(r["D"], r.get("DV") or r["D"], r["causal"])
                     for r in rows})
    ncol = (len(combos) + 1) // 2
    fig, axes = plt.subplots(2, ncol, figsize=(4.4 * ncol, 7.2),
                             squeeze=False)
    for i, (d, dv, c) in enumerate(combos):
        ax = axes[i % 2][i // 2]
        rs = [r for r in rows if r["D"] == d and (r.get("DV") or d) == dv
              and r["causal"] == c]
        for name in METHODS:
            pts = [(r["S"], r[name]) for r in rs if name in r]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                        label=name, color=COLORS[name])
        ax.set_xscale("log", base=2)
        ax.set_title("D=%s %s" % (d if dv == d else "%s:%s" % (d, dv),
                                  "causal" if c else "full"))
        ax.set_xlabel("seq len")
        ax.set_ylabel("TFLOP/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote %s" % path)


def main():
    if "--bwd" in sys.argv[1:]:
        # the backward pass (issue #13): bench_bwd.py, with the other
        # arguments it takes (--reps, --dims, --seqs, --causal, --gqa,
        # --heads, --csv)
        sys.argv.remove("--bwd")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_bwd
        return bench_bwd.main()
    if "--kernels" in sys.argv[1:]:
        # memory-bound kernels (issue #26): bench_kernels.py, with the
        # other arguments it takes (--kernel, --reps, --per, --shapes,
        # --dtype, --eps, --csv)
        sys.argv.remove("--kernels")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_kernels
        return bench_kernels.main()
    if "--decode" in sys.argv[1:]:
        # decoding against a KV cache (issue #16): bench_decode.py, with
        # the other arguments it takes (--batches, --ctxs, --groups,
        # --hkv, --reps, --csv, --methods)
        sys.argv.remove("--decode")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_decode
        return bench_decode.main()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true",
                    help="S 2k and 8k only, D 64 and 128")
    ap.add_argument("--dims", default="64,128,256")
    ap.add_argument("--plot", metavar="CSV",
                    help="only draw DIR/bench.png from a bench.csv")
    ap.add_argument("--title", default=None, help="the plot's title")
    ap.add_argument("--seqs", default=None,
                    help="comma-separated sequence lengths (default: "
                    "1k to 16k)")
    ap.add_argument("--causal", choices=["both", "yes", "no"],
                    default="both")
    ap.add_argument("--heads", type=int, default=None, metavar="H",
                    help="query heads (default: 2048 / D, hidden 2048)")
    ap.add_argument("--gqa", type=int, default=1, metavar="G",
                    help="grouped-query attention: G query heads per K/V "
                    "head (k, v have H/G heads; SDPA gets enable_gqa)")
    ap.add_argument("--extra", action="append", default=[],
                    metavar="NAME=FILE",
                    help="also time the schedule FILE (a file name in "
                    "$FAGEN_SCHEDULE_DIR) as method NAME; repeatable")
    args = ap.parse_args()
    extra = []
    for e in args.extra:
        name, _, file = e.partition("=")
        if not name or not file or name in METHODS:
            ap.error("--extra NAME=FILE, with a new NAME: %r" % e)
        extra.append((name, file))
        METHODS.insert(METHODS.index("cudnn"), name)
        COLORS.setdefault(name, None)
    if args.plot:
        with open(args.plot) as f:
            rows = [{k: float(v) if "." in v or "e" in v else int(v)
                     for k, v in r.items() if v != ""}
                    for r in csv.DictReader(f)]
        os.makedirs(args.out, exist_ok=True)
        plot(rows, os.path.join(args.out, "bench.png"), args.title or
             "bf16 forward, 16k tokens, hidden 2048")
        return 0
    if torch is None:
        print("bench.py needs PyTorch and fagen (PYTHONPATH=python)",
              file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("bench.py needs a CUDA GPU", file=sys.stderr)
        return 77
    os.makedirs(args.out, exist_ok=True)
    # D or D:DV (v's and the output's head dim)
    dims = [tuple(int(y) for y in x.split(":")) + (None,)
            for x in args.dims.split(",")]
    dims = [(x[0], x[1] or x[0]) for x in dims]
    seqs = [int(x) for x in args.seqs.split(",")] if args.seqs else SEQS
    if args.quick:
        dims, seqs = [d for d in dims if d[0] != 256], [2048, 8192]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time()))
    print("%s, torch %s, cuDNN %s, fagen %s" % (
        torch.cuda.get_device_name(), torch.__version__,
        torch.backends.cudnn.version(), fagen.version()))
    rows = []
    keys = ["D", "DV", "causal", "S", "B", "H", "Hk", "gemm"]
    for m in METHODS:
        keys += [m, m + "_err"]
    f = open(os.path.join(args.out, "bench.csv"), "w", newline="")
    w = csv.DictWriter(f, keys, extrasaction="ignore")
    w.writeheader()
    with torch.inference_mode():
        gemm = gemm_rate(args.reps)
        print("bf16 8192^3 GEMM (torch.mm): %.0f TFLOP/s" % gemm)
        for d, dv in dims:
            for causal in {"both": (False, True), "yes": (True,),
                           "no": (False,)}[args.causal]:
                fns = make_fns(d, causal, extra, args.gqa)
                for s in seqs:
                    t0 = time.time()
                    row = bench_point(d, causal, s, args.reps, fns, gen,
                                      args.gqa, args.heads, dv)
                    row["gemm"] = gemm
                    rows.append(row)
                    w.writerow(row)
                    f.flush()
                    print("D=%-7s %-6s S=%-5d %s  [%.1fs]" % (
                        d if dv == d else "%d:%d" % (d, dv),
                        "causal" if causal else "full", s,
                        "  ".join("%s %s" % (m, fmt(row, m))
                                  for m in METHODS), time.time() - t0),
                        flush=True)
    f.close()
    ratios = [r["fagen"] / r["cudnn"] for r in rows
              if "fagen" in r and "cudnn" in r]
    if ratios:
        print("fagen / cuDNN: min %.3f, geometric mean %.3f over %d points"
              % (min(ratios), math.exp(sum(map(math.log, ratios)) /
                                       len(ratios)), len(ratios)))
        for r in rows:
            if r["D"] == 128 and not r["causal"] and r["S"] >= 4096 and \
                    "fagen" in r:
                print("D=128 full S=%d: fagen at %.0f%% of the GEMM rate"
                      % (r["S"], 100 * r["fagen"] / gemm))
    plot(rows, os.path.join(args.out, "bench.png"), args.title or
         "%s, bf16 forward, 16k tokens, hidden 2048" %
         torch.cuda.get_device_name())
    bad = [r for r in rows if any(k.endswith("_bad") for k in r)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
