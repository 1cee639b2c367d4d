#!/usr/bin/env python3
"""bench_kernels.py: fagen's memory-bound row kernels against PyTorch and
QuACK, as fractions of a device-to-device copy's bandwidth measured in
the same run (issue #26).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so \\
        python3 bench/bench_kernels.py
        [--kernel rmsnorm|rmsnorm_bwd|layernorm|softmax|xent|all]
        [--reps N] [--per N]
        [--shapes M,N;M,N...] [--dtype bf16|f16|f32] [--eps E] [--csv FILE]
    python3 bench/bench.py --kernels [the same arguments]

Each kernel (--kernel all, the default, runs the five in turn) over
(M, N) = (32768, 4096), (16384, 8192), (8192, 16384), (4096, 32768), bf16
(each x 256 MiB, far past L2), rmsnorm_bwd and xent over their own shapes
(below):

  rmsnorm    RMSNorm with a weight, eps 1e-6
    fagen    fagen.rms_norm(x, w, eps)
    eager    (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) +
             eps) * w).to(x.dtype): the usual formula, its result in x's
             dtype like the others'
    quack    QuACK's rmsnorm(x, w, eps=eps) (quack.rmsnorm)
  rmsnorm_bwd  RMSNorm's backward with a weight, eps 1e-6: dx and dW from
             x, w and dy, over (M, N) = (65536, 2048), (32768, 4096),
             (16384, 8192), (4096, 8192) (fagen's backward takes rows of
             8192 at most); each method's forward runs once, untimed,
             and the timed call is torch.autograd.grad(y, (x, w), dy,
             retain_graph=True) on its graph
    fagen    through fagen.rms_norm(x, w, eps)'s autograd Function:
             fg_rms_norm_backward_partials, fg_rms_norm_backward (dx and
             dW's partial sums, a row per CTA) and their sum by PyTorch
    eager    through the rmsnorm eager formula's autograd
    quack    QuACK's quack.rmsnorm.rmsnorm_bwd(x, w, dy, rstd) where it
             has one and takes those (rstd from PyTorch, untimed), else
             through its rmsnorm's autograd
  layernorm  LayerNorm with a weight and a bias, eps 1e-5
    fagen    fagen.layer_norm(x, w, b, eps)
    eager    torch.nn.functional.layer_norm(x, (N,), w, b, eps)
    quack    QuACK's LayerNorm: quack.rmsnorm.layernorm_fwd(x, w, b,
             eps=eps) (weight and bias float32, as it requires; converted
             before timing); an older QuACK's quack.layernorm.layernorm
             takes no bias and is skipped
  softmax    softmax over the last dimension (forward)
    fagen    fagen.softmax(x)
    eager    torch.softmax(x, -1)
    quack    QuACK's softmax(x) (quack.softmax)
  xent       cross-entropy of each row against an int64 target (every
             16th -100, ignored), the per-row loss (reduction 'none',
             forward), over (M, C) = (4096, 32000), (4096, 128256),
             (1024, 262144), (16384, 50257): vocabularies of 32k to 256k
             classes, rows wider than a CTA holds (fagen walks them in
             chunks)
    fagen    fagen.cross_entropy(x, t, reduction="none"): the int32
             targets, the kernel's float32 loss, rounded to x's dtype
    eager    torch.nn.functional.cross_entropy(x, t, reduction="none")
    quack    QuACK's cross-entropy forward, float32 loss:
             quack.cross_entropy.cross_entropy_fwd(x, t), else its
             cross_entropy(x, t, reduction="none") where it takes that

and for each, compile: torch.compile(eager, dynamic=False), compiled per
shape (for rmsnorm_bwd: its backward, through autograd, with
torch._functorch.config.donated_buffer off, as retain_graph needs);
copy: y.copy_(x) for a tensor of x's size, the yardstick.  QuACK is used
where it imports; otherwise its column is skipped with the reason.

GB/s counts the bytes a kernel must move: x read (and w, b), y written
(fagen's rstd and mean, 4 bytes a row, are not counted); for xent the
logits read, the int64 targets read and a float32 loss written (8 + 4
bytes a row, whatever each method's own types); for rmsnorm_bwd x, dy and
w read, dx and dW written, and dW's partial sums, fagen's, written and
read, min(M, 2 x SMs) rows of N float32 (counted for every method); the
copy's, x read and y written (for xent a copy of the logits).  Each
method's output is checked first against float64 (its buffer filled
with NaN before): max
|y - ref| / (|ref| + 0.01) (LayerNorm: + |b|, where the bias cancels;
softmax, whose values are small: max (|y - ref| - atol) / |ref|, atol
1e-7 for f16's subnormals, 1e-37 otherwise; xent: max |loss - ref| /
(|ref| + 1), in whatever floating dtype the method returns) must be at
most 2e-2 for bf16 (2e-3 f16, 1e-5 f32, as
tests/gpu/test_python_norm.py; rmsnorm_bwd: dx's error over its row's
largest |rstd * dy * w| and dW's over its column's norm of dy * x *
rstd plus |dW|, at most 3e-2, 5e-3, 1e-4, as that test's backward), else
its column is marked '!'.  Timing: CUDA events around --per
back-to-back calls, the median over --reps
runs (20 at least), the methods interleaved round-robin with the first
one rotating, warm-up runs excluded.  Prints a table per kernel with each
method's GB/s and its fraction of the copy's.
"""
import argparse
import contextlib
import csv
import inspect
import statistics
import sys

import torch
import torch.nn.functional as F

import fagen

SHAPES = [(32768, 4096), (16384, 8192), (8192, 16384), (4096, 32768)]
BWD_SHAPES = [(65536, 2048), (32768, 4096), (16384, 8192), (4096, 8192)]
XENT_SHAPES = [(4096, 32000), (4096, 128256), (1024, 262144), (16384, 50257)]
IGNORE = -100
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16,
          "f32": torch.float32}
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}
BWD_TOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3, torch.float32: 1e-4}
ATOL = {torch.bfloat16: 1e-37, torch.float16: 1e-7, torch.float32: 1e-37}
METHODS = ["fagen", "compile", "eager", "quack"]


def attempt(tries):
    """The first of tries ((module, attribute) pairs) that imports: (its
    callable, None), or (None, why each failed)."""
    errors = []
    for mod, attr in tries:
        try:
            fn = getattr(__import__(mod, fromlist=[attr]), attr)
            if not callable(fn):        # a module named like its function
                fn = getattr(fn, attr)
            return fn, None
        except Exception as e:      # noqa: BLE001 -- any: skip it
            errors.append("%s.%s: %s" % (mod, attr, e))
    return None, "; ".join(errors)


# ---------------------------------------------------------------- rmsnorm

def rms_eager(x, w, eps):
    return (x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
            * w).to(x.dtype)


def rms_reference(x, w, eps):
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * \
        w.double()


def rms_quack(eps):
    fn, why = attempt((("quack", "rmsnorm"), ("quack.rmsnorm", "rmsnorm"),
                       ("quack", "rms_norm")))
    if fn is None:
        return None, why

    def make(x, w):
        def call():
            y = fn(x, w, eps=eps)
            return y[0] if isinstance(y, tuple) else y
        return call
    return make, None


# ---------------------------------------------------------------- rmsnorm_bwd

def bwd_make(forward):
    """make(x, w, dy) for a differentiable forward(x, w): its graph built
    once on leaf copies, untimed; the call is its backward,
    torch.autograd.grad(y, (x, w), dy, retain_graph=True): (dx, dW)."""
    def make(x, w, dy):
        xl, wl = x.detach().requires_grad_(), w.detach().requires_grad_()
        y = forward(xl, wl)
        y = y[0] if isinstance(y, tuple) else y

        def call():
            return torch.autograd.grad(y, (xl, wl), dy, retain_graph=True)
        return call
    return make


def bwd_reference(x, w, dy, eps):
    """float64 autograd: (dx, dW, the rows' scale, the columns')."""
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    rstd = torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    dx, dw = torch.autograd.grad(xd * rstd * wd, (xd, wd), dy.double())
    rstd = rstd.detach()
    row = (rstd * dy.double() * w.double()).abs().amax(-1, keepdim=True)
    col = (dy.double() * x.double() * rstd).norm(dim=0) + dw.abs()
    return dx, dw, row, col


def bwd_quack(eps):
    """QuACK's rmsnorm_bwd(x, w, dy, rstd), tried once when made (a
    signature it does not take falls back), else its rmsnorm's
    autograd."""
    fwd, why_f = attempt((("quack", "rmsnorm"), ("quack.rmsnorm",
                                                  "rmsnorm")))
    bwd, why_b = attempt((("quack.rmsnorm", "rmsnorm_bwd"),))
    if fwd is None and bwd is None:
        return None, "%s; %s" % (why_b, why_f)

    def make(x, w, dy):
        if bwd is not None:
            rstd = torch.rsqrt(x.float().pow(2).mean(-1) + eps)
            try:
                bwd(x, w, dy, rstd)

                def call():
                    r = bwd(x, w, dy, rstd)
                    return r[0], r[1]
                return call
            except Exception as e:          # noqa: BLE001 -- fall back
                if fwd is None:
                    raise
                print("  quack: rmsnorm_bwd(x, w, dy, rstd): %s; through "
                      "its rmsnorm's autograd" % str(e).splitlines()[0],
                      file=sys.stderr)
        return bwd_make(lambda xl, wl: fwd(xl, wl, eps=eps))(x, w, dy)
    return make, None


def bwd_bytes(m, n, esz):
    """x, dy, w read, dx and dW written; fagen's partial sums written and
    read."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return (3 * m * n + 2 * n) * esz + 2 * min(m, 2 * sms) * n * 4


# ---------------------------------------------------------------- layernorm

def ln_eager(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def ln_reference(x, w, b, eps):
    return F.layer_norm(x.double(), (x.shape[-1],), w.double(), b.double(),
                        eps)


def ln_quack(eps):
    fn, why = attempt((("quack.rmsnorm", "layernorm_fwd"),))
    if fn is None:
        old, _ = attempt((("quack.layernorm", "layernorm"),))
        if old is not None:
            return None, ("quack.layernorm.layernorm takes no bias (an "
                          "older QuACK); %s" % why)
        return None, why

    def make(x, w, b):
        wf, bf = w.float(), b.float()       # QuACK takes float32 ones

        def call():
            y = fn(x, wf, bf, eps=eps)
            return y[0] if isinstance(y, tuple) else y
        return call
    return make, None


# ---------------------------------------------------------------- softmax

def sm_eager(x):
    return torch.softmax(x, -1)


def sm_quack(eps):
    fn, why = attempt((("quack", "softmax"), ("quack.softmax", "softmax")))
    if fn is None:
        return None, why
    return (lambda x: lambda: fn(x)), None


# ---------------------------------------------------------------- xent

def xent_eager(x, t):
    return F.cross_entropy(x, t, ignore_index=IGNORE, reduction="none")


def xent_reference(x, t):
    """float64 per-row loss, a block of rows at a time (the float64
    logits of 16384 x 50257 would be 6.6 GB)."""
    out = []
    for i in range(0, x.shape[0], 1024):
        out.append(F.cross_entropy(x[i:i + 1024].double(), t[i:i + 1024],
                                   ignore_index=IGNORE, reduction="none"))
    return torch.cat(out)


def xent_quack(eps):
    """QuACK's per-row forward: cross_entropy_fwd(x, t, ignore_index=),
    else cross_entropy(x, t, reduction="none", ignore_index=); one that
    takes no ignore_index would read the logit at -100, so it is
    skipped."""
    whys = []
    for tries, kw in (((("quack.cross_entropy", "cross_entropy_fwd"),), {}),
                      ((("quack.cross_entropy", "cross_entropy"),
                        ("quack", "cross_entropy")),
                       {"reduction": "none"})):
        fn, why = attempt(tries)
        if fn is None:
            whys.append(why)
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        missing = [p for p in list(kw) + ["ignore_index"]
                   if p not in params]
        if missing:
            whys.append("%s takes no %s (an older QuACK)" % (
                fn.__name__, "= or ".join(missing) + "="))
            continue
        kw = dict(kw, ignore_index=IGNORE)

        def make(x, t, fn=fn, kw=kw):
            def call():
                y = fn(x, t, **kw)
                return y[0] if isinstance(y, tuple) else y
            return call
        return make, None
    return None, "; ".join(whys)


# Each kernel: its default eps (None: none), its inputs beyond x (w, b:
# 1 + randn / 2 and randn, of x's dtype; t: int64 targets), fagen's call,
# the eager math, the float64 reference, QuACK's factory, and the bytes
# it moves beyond x and y (xent: its own, and its own shapes).
KERNELS = {
    "rmsnorm": {
        "title": "RMSNorm with a weight", "eps": 1e-6, "extra": "w",
        "fagen": lambda x, w, eps: fagen.rms_norm(x, w, eps=eps),
        "eager": rms_eager, "reference": rms_reference, "quack": rms_quack,
    },
    "rmsnorm_bwd": {
        "title": "RMSNorm's backward (dx, dW) with a weight", "eps": 1e-6,
        "extra": "wd", "backward": True,
        "fagen": lambda x, w, eps: fagen.rms_norm(x, w, eps=eps),
        "eager": rms_eager, "reference": bwd_reference, "quack": bwd_quack,
        "shapes": BWD_SHAPES, "bytes": bwd_bytes,
    },
    "layernorm": {
        "title": "LayerNorm with a weight and a bias", "eps": 1e-5,
        "extra": "wb",
        "fagen": lambda x, w, b, eps: fagen.layer_norm(x, w, b, eps=eps),
        "eager": ln_eager, "reference": ln_reference, "quack": ln_quack,
    },
    "softmax": {
        "title": "softmax over the last dimension", "eps": None,
        "extra": "",
        "fagen": lambda x: fagen.softmax(x),
        "eager": sm_eager,
        "reference": lambda x: torch.softmax(x.double(), -1),
        "quack": sm_quack,
    },
    "xent": {
        "title": "cross-entropy per row (reduction 'none')", "eps": None,
        "extra": "t",
        "fagen": lambda x, t: fagen.cross_entropy(x, t, reduction="none"),
        "eager": xent_eager, "reference": xent_reference,
        "quack": xent_quack, "shapes": XENT_SHAPES,
        "bytes": lambda m, n, esz: m * n * esz + m * (8 + 4),
    },
}


def bind(fn, eps):
    """fn(*inputs) with the kernel's eps, if it has one."""
    return fn if eps is None else (lambda *t: fn(*t, eps))


def methods(k, eps):
    """Method name -> make(*inputs) -> a call with no arguments (for a
    backward, the call is the backward of a forward made once)."""
    if k.get("backward"):
        # a compiled backward that donates its buffers refuses
        # retain_graph=True, which the timed calls need
        try:
            import torch._functorch.config as functorch_config
            functorch_config.donated_buffer = False
        except (ImportError, AttributeError):
            pass
    compiled = torch.compile(k["eager"], dynamic=False)
    if k.get("backward"):
        fns = {"fagen": bwd_make(bind(k["fagen"], eps)),
               "eager": bwd_make(bind(k["eager"], eps)),
               "compile": bwd_make(bind(compiled, eps))}
    else:
        fns = {name: (lambda f: lambda *t: lambda: f(*t))(bind(k[name],
                                                               eps))
               for name in ("fagen", "eager")}
        fns["compile"] = (lambda f: lambda *t: lambda: f(*t))(
            bind(compiled, eps))
    q, why = k["quack"](eps)
    if q is None:
        print("quack: not importable, skipped (%s)" % why, file=sys.stderr)
    else:
        fns["quack"] = q
    return fns


def error(kernel, y, ref, inputs, dtype):
    """max |y - ref| over |ref| and the kernel's floor."""
    if kernel == "rmsnorm_bwd":     # (dx, dW) over their scales
        dx, dw, row, col = ref
        return max(((y[0].double() - dx).abs() / row).max().item(),
                   ((y[1].double() - dw).abs() / col).max().item())
    d = (y.double() - ref).abs()
    if kernel == "xent":        # losses of about log(C)
        return (d / (ref.abs() + 1)).max().item()
    if kernel == "softmax":     # small values: atol, then relative
        d = d - ATOL[dtype]                         # NaN stays NaN
        return torch.where(d <= 0, torch.zeros_like(d),
                           d / ref.abs()).max().item()
    floor = 1e-2
    if kernel == "layernorm":       # a bias that cancels the rest
        floor = inputs[2].double().abs() + 1e-2
    return (d / (ref.abs() + floor)).max().item()


def check(kernel, name, call, x, ref, inputs, tol):
    """call's output against float64 (NaN-filled memory handed back
    first): (error, ok), or None when it raised."""
    try:
        # freed: reused next (xent's loss may be float32 or x's dtype)
        for dt in {x.dtype, torch.float32 if kernel == "xent" else
                   x.dtype}:
            torch.empty(x.shape if kernel == "rmsnorm_bwd" else
                        ref.shape, dtype=dt, device=x.device).fill_(
                float("nan"))
        y = call()
        torch.cuda.synchronize()
    except Exception as e:                          # noqa: BLE001
        print("  %s: %s" % (name, str(e).splitlines()[0][:200]),
              file=sys.stderr)
        torch.cuda.synchronize()
        return None
    # xent's loss: float32 (QuACK's) or x's dtype (PyTorch's)
    if kernel == "rmsnorm_bwd":
        if tuple(y[0].shape) != tuple(x.shape) or \
                tuple(y[1].shape) != (x.shape[-1],):
            print("  %s: returned shapes %s" % (
                name, [tuple(t.shape) for t in y]), file=sys.stderr)
            return float("inf"), False
    elif y.shape != ref.shape or (y.dtype != x.dtype and
                                  kernel != "xent"):
        print("  %s: returned %s %s, not %s %s" % (
            name, tuple(y.shape), y.dtype, tuple(ref.shape), x.dtype),
            file=sys.stderr)
        return float("inf"), False
    err = error(kernel, y, ref, inputs, x.dtype)
    ok = err <= tol                                 # NaN fails
    if not ok:
        print("  CHECK FAILED: %s: error %.3g > %.3g" % (name, err, tol),
              file=sys.stderr)
    return err, ok


def events(fn, per):
    """Seconds per call over per back-to-back calls."""
    a = torch.cuda.Event(enable_timing=True)
    z = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(per):
        fn()
    z.record()
    z.synchronize()
    return a.elapsed_time(z) / 1e3 / per


def inputs_for(k, m, n, dtype):
    gen = torch.Generator(device="cuda").manual_seed(m * 131 + n)
    x = torch.randn(m, n, device="cuda", generator=gen).to(dtype)
    extra = []
    if "w" in k["extra"]:
        extra.append((1 + torch.randn(n, device="cuda", generator=gen) /
                      2).to(dtype))
    if "b" in k["extra"]:
        extra.append(torch.randn(n, device="cuda", generator=gen).to(dtype))
    if "t" in k["extra"]:
        t = torch.randint(0, n, (m,), device="cuda", generator=gen)
        t[::16] = IGNORE
        extra.append(t)
    if "d" in k["extra"]:           # the backward's dy
        extra.append(torch.randn(m, n, device="cuda",
                                 generator=gen).to(dtype))
    return [x] + extra


def point(kernel, m, n, dtype, fns, args):
    k = KERNELS[kernel]
    inputs = inputs_for(k, m, n, dtype)
    x = inputs[0]
    ref = bind(k["reference"], args.eps)(*inputs)
    esz = x.element_size()
    row = {"kernel": kernel, "M": m, "N": n, "dtype": args.dtype}
    runs = {}
    for name, make in fns.items():                  # check first
        try:
            call = make(*inputs)
        except Exception as e:                      # noqa: BLE001
            print("  %s: %s" % (name, str(e).splitlines()[0][:200]),
                  file=sys.stderr)
            continue
        c = check(kernel, name, call, x, ref, inputs,
                  (BWD_TOL if k.get("backward") else TOL)[dtype])
        if c is None:
            continue
        row[name + "_err"], row[name + "_ok"] = c
        runs[name] = call
    del ref
    y = torch.empty_like(x)
    runs["copy"] = lambda: y.copy_(x)
    names = list(runs)
    for nm in names:                                # warm-up, excluded
        events(runs[nm], 3)
    times = {nm: [] for nm in names}
    for r in range(args.reps):
        for j in range(len(names)):
            nm = names[(r + j) % len(names)]
            times[nm].append(events(runs[nm], args.per))
    moved = {nm: k["bytes"](m, n, esz) if "bytes" in k else
             (2 * m * n + len(k["extra"]) * n) * esz for nm in names}
    runs.clear()                    # the backward's graphs
    moved["copy"] = 2 * m * n * esz
    for nm in names:
        t = statistics.median(times[nm])
        row[nm] = moved[nm] / t / 1e9
        row[nm + "_us"] = t * 1e6
    for nm in names:
        row[nm + "_frac"] = row[nm] / row["copy"]
    torch.cuda.empty_cache()
    return row


def fmt(row, name):
    if name not in row:
        return "-"
    s = "%.0f (%.2f)" % (row[name], row[name + "_frac"])
    return s + ("!" if not row.get(name + "_ok", True) else "")


def table(kernel, shapes, dtype, args):
    """One kernel's table: its rows."""
    k = KERNELS[kernel]
    eps = args.eps if args.eps is not None else k["eps"]
    run = argparse.Namespace(**vars(args))
    run.eps = eps
    print("%s, torch %s, fagen %s; %s, %s%s; GB/s (fraction of the "
          "copy's)" % (torch.cuda.get_device_name(), torch.__version__,
                       fagen.version(), k["title"], args.dtype,
                       "" if eps is None else ", eps %g" % eps))
    fns = methods(k, eps)
    cols = [nm for nm in METHODS if nm in fns]
    print("%7s %7s  " % ("M", "N") + "".join("%-15s" % c for c in cols) +
          "copy GB/s")
    rows = []
    for m, n in shapes:
        row = point(kernel, m, n, dtype, fns, run)
        rows.append(row)
        print("%7d %7d  " % (m, n) +
              "".join("%-15s" % fmt(row, c) for c in cols) +
              "%.0f" % row["copy"], flush=True)
    return rows, cols


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS) + ["all"],
                    default="all", help="which kernel (default: all)")
    ap.add_argument("--reps", type=int, default=30,
                    help="timed runs per method (at least 20)")
    ap.add_argument("--per", type=int, default=10,
                    help="back-to-back calls per run")
    ap.add_argument("--shapes", default=None,
                    help="M,N;M,N... (default: %s; rmsnorm_bwd: %s; "
                    "xent: %s)" % tuple(
                        ";".join("%d,%d" % s for s in shapes)
                        for shapes in (SHAPES, BWD_SHAPES, XENT_SHAPES)))
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--eps", type=float, default=None,
                    help="the norms' eps (default: 1e-6 for RMSNorm, 1e-5 "
                    "for LayerNorm)")
    ap.add_argument("--csv", default=None, help="also write the rows here")
    args = ap.parse_args()
    if args.reps < 20:
        ap.error("--reps must be at least 20")
    if not torch.cuda.is_available():
        print("bench_kernels.py needs a CUDA GPU", file=sys.stderr)
        return 77
    given = None if not args.shapes else [
        tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";")]
    dtype = DTYPES[args.dtype]
    kernels = list(KERNELS) if args.kernel == "all" else [args.kernel]
    rows, bad = [], []
    for i, kernel in enumerate(kernels):
        if i:
            print()
        shapes = given or KERNELS[kernel].get("shapes", SHAPES)
        # a backward needs autograd
        with contextlib.nullcontext() if KERNELS[kernel].get("backward") \
                else torch.inference_mode():
            krows, cols = table(kernel, shapes, dtype, args)
            rows += krows
            bad += [r for r in krows for c in cols
                    if c + "_ok" in r and not r[c + "_ok"]]
    if args.csv:
        keys = sorted({key for r in rows for key in r})
        with open(args.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=keys)
            wr.writeheader()
            wr.writerows(rows)
        print("wrote %s" % args.csv)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
