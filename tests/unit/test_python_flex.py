"""test_python_flex.py: issue #22, fagen.flex_attention's tracer without a
GPU or PyTorch.

FlexAttention's score_mods and mask_mods (causal, sliding window,
prefix-LM, document, ALiBi, softcap, relative-position bias) trace to the
exact mod-file text expected; tracing twice gives the same text; torch's
type promotion (cvt to f32), its functions (through __torch_function__,
with stand-ins for torch's functions) and captured tensors (stand-ins with
shape and dtype) become the language's operations; a shared subexpression
becomes a helper mod, so a DAG of depth 30 stays short; everything fagen
cannot compile is a TraceError naming it; scalar loads are proven in
bounds.  Every traced mod file is compiled into schedules/fa_fwd_sm90.fa's
hooks with the fagen CLI ($FAGEN_CLI: --check --mod FILE -D SCORE_MOD /
MASK_MOD / BLOCKS), as libfagen compiles it, so the text is valid
language there.  With PyTorch importable, create_block_mask and the re-blocking
of a BlockMask run on the CPU against a brute-force classification.
"""
import os
import re
import subprocess
import sys
import tempfile
import types

from fagen import _flextrace as ft
from fagen import flex

failures = []


def check(name, got, want):
    if got != want:
        failures.append(name)
        print("%s: FAIL\n  got:  %r\n  want: %r" % (name, got, want))
    else:
        print("%s: ok" % name)


def expect_error(name, exc, fn, want):
    try:
        fn()
    except exc as e:
        if want in str(e):
            print("%s: ok (%s)" % (name, str(e)[:70]))
            return
        failures.append(name)
        print("%s: FAIL: %r lacks %r" % (name, str(e), want))
        return
    failures.append(name)
    print("%s: FAIL: no %s" % (name, exc.__name__))


class Tensor:
    """A captured tensor's stand-in: shape and dtype; indexing it with
    traced values goes where torch's TorchFunctionMode sends it."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), "torch." + dtype

    def __getitem__(self, idx):
        return ft.index(self, idx)


def torch_fn(name, method=False):
    """A stand-in for a torch function: dispatches to the traced
    arguments' __torch_function__, as torch's argument parser does."""
    def fn(*args, **kwargs):
        return ft.Value.__torch_function__(fn, (), args, kwargs)
    fn.__name__ = name
    fn.__qualname__ = ("Tensor." if method else "") + name
    return fn


torch = types.SimpleNamespace(**{n: torch_fn(n) for n in (
    "where", "tanh", "abs", "exp", "exp2", "log", "log2", "sigmoid",
    "sqrt", "rsqrt", "minimum", "maximum", "clamp", "sin", "max", "zeros_like",
    "full_like")})
torch.Tensor = types.SimpleNamespace(where=torch_fn("where", True))

DOC = Tensor((2, 1000), "int32")
DOC4 = Tensor((4, 16384), "int32")
REL = Tensor((4, 1999), "float32")
SLOPES = Tensor((4,), "float32")
WINDOW = 256
PREFIX = 100


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= WINDOW)


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < PREFIX) | (q_idx >= kv_idx)


def document(b, h, q_idx, kv_idx):
    return (DOC[b, q_idx] == DOC[b, kv_idx]) & (q_idx >= kv_idx)


def alibi(score, b, h, q_idx, kv_idx):
    return score - SLOPES[h] * torch.abs(q_idx - kv_idx)


def softcap(score, b, h, q_idx, kv_idx):
    return 30.0 * torch.tanh(score / 30.0)


def relpos(score, b, h, q_idx, kv_idx):
    return score + REL[h, q_idx - kv_idx + 999]


def pairs():
    """(name, score_mod, mask_mod, expected text)."""
    return [
        ("causal", None, causal,
         "mod mask_mod(b, h, q, k) = q >= k;\n"),
        ("sliding window", None, sliding,
         "mod mask_mod(b, h, q, k) = q >= k && q - k <= 256;\n"),
        ("prefix-LM", None, prefix_lm,
         "mod mask_mod(b, h, q, k) = k < 100 || q >= k;\n"),
        ("document", None, document,
         "global FX0 : i32[2, 1000];\n"
         "mod mask_mod(b, h, q, k) = FX0[b, q] == FX0[b, k] && q >= k;\n"),
        ("alibi", alibi, None,
         "global FX0 : f32[4];\n"
         "mod score_mod(s, b, h, q, k) = "
         "s - FX0[h] * cvt(abs(q - k), f32);\n"),
        ("softcap", softcap, None,
         "mod score_mod(s, b, h, q, k) = "
         "30.0 * tanh(s * 0.03333333333333333);\n"),
        ("relative position", relpos, None,
         "global FX0 : f32[4, 1999];\n"
         "mod score_mod(s, b, h, q, k) = s + FX0[h, q - k + 999];\n"),
        ("softcap and document", softcap, document,
         "global FX0 : i32[2, 1000];\n"
         "mod score_mod(s, b, h, q, k) = "
         "30.0 * tanh(s * 0.03333333333333333);\n"
         "mod mask_mod(b, h, q, k) = FX0[b, q] == FX0[b, k] && q >= k;\n"),
        ("docs/API.md's example",
         lambda s, b, h, q, k: s - 0.5 * abs(q - k),
         lambda b, h, q, k: (DOC4[b, q] == DOC4[b, k]) & (q >= k),
         "global FX0 : i32[4, 16384];\n"
         "mod score_mod(s, b, h, q, k) = s - 0.5 * cvt(abs(q - k), f32);\n"
         "mod mask_mod(b, h, q, k) = FX0[b, q] == FX0[b, k] && q >= k;\n"),
        ("division by a traced value",
         lambda s, b, h, q, k: s / (k + 1) + s / 0.0, None,
         "mod score_mod(s, b, h, q, k) = "
         "s / cvt(k + 1, f32) + s / 0.0;\n"),
        ("where and promotion",
         lambda s, b, h, q, k: torch.where(q >= k, s * (q / 2), -float("inf")),
         lambda b, h, q, k: ~(q < 3) & (h == 1),
         "mod score_mod(s, b, h, q, k) = "
         "select(q >= k, s * (cvt(q, f32) * 0.5), -inf);\n"
         "mod mask_mod(b, h, q, k) = !(q < 3) && h == 1;\n"),
        ("exp, log, sigmoid",
         lambda s, b, h, q, k: torch.exp(s) + torch.log(s) - torch.sigmoid(s),
         None,
         "mod score_mod(s, b, h, q, k) = exp2(s * 1.4426950408889634) + "
         "log2(s) * 0.6931471805599453 - "
         "rcp(1.0 + exp2(s * (-1.4426950408889634)));\n"),
        ("sqrt, rsqrt",
         lambda s, b, h, q, k: torch.sqrt(torch.abs(s)) * torch.rsqrt(
             s * s + 1.0),
         None,
         "mod score_mod(s, b, h, q, k) = sqrt(abs(s)) * rsqrt(s * s + "
         "1.0);\n"),
        ("clamp, minimum, methods",
         lambda s, b, h, q, k: torch.clamp(s, min=-5, max=5.5) +
         torch.minimum(q, k).float() + (k - q).abs().to("torch.float32") +
         torch.Tensor.where(s, q > k, 0),
         None,
         "mod score_mod(s, b, h, q, k) = min(max(s, -5.0), 5.5) + "
         "cvt(min(q, k), f32) + cvt(abs(k - q), f32) + "
         "select(q > k, s, 0.0);\n"),
        ("ints stay ints, parentheses",
         lambda s, b, h, q, k: s - (q - (k - b * 2)) * (h + 1) - (-0.5),
         lambda b, h, q, k: (q > k) | (q < k) & (b == 0),
         "mod score_mod(s, b, h, q, k) = "
         "s - cvt((q - (k - b * 2)) * (h + 1), f32) - (-0.5);\n"
         "mod mask_mod(b, h, q, k) = q > k || q < k && b == 0;\n"),
        ("bools compared, bool to float",
         lambda s, b, h, q, k: s + (q > k).float(),
         lambda b, h, q, k: (q > k) != (h > 1),
         "mod score_mod(s, b, h, q, k) = s + select(q > k, 1.0, 0.0);\n"
         "mod mask_mod(b, h, q, k) = q > k && !(h > 1) || "
         "!(q > k) && h > 1;\n"),
        ("constants", lambda s, b, h, q, k: 1, lambda b, h, q, k: False,
         "mod score_mod(s, b, h, q, k) = 1.0;\n"
         "mod mask_mod(b, h, q, k) = false;\n"),
        ("identities", lambda s, b, h, q, k: s, lambda b, h, q, k: True, ""),
        ("bool and int64 tensors",
         None, lambda b, h, q, k: Tensor((1000,), "bool")[q] &
         (Tensor((2, 1000), "int64")[b, k] > 0),
         "global FX0 : i32[1000];\nglobal FX1 : i32[2, 1000];\n"
         "mod mask_mod(b, h, q, k) = FX0[q] != 0 && FX1[b, k] > 0;\n"),
    ]


def texts():
    for name, sm, mm, want in pairs():
        p = ft.make_plan(sm, mm)
        check("text: " + name, p.text, want)
        check("repeat: " + name, ft.make_plan(sm, mm).text, p.text)
        check("flags: " + name, (p.has_score_mod, p.has_mask_mod),
              (sm is not None and "score_mod" in want,
               mm is not None and "mask_mod" in want))
    p = ft.make_plan(None, document)
    check("tensors in order", [(n, t.shape) for n, t in p.tensors],
          [("FX0", (2, 1000))])
    check("empty plan", ft.make_plan(None, None).text, "")


def sharing():
    def deep(s, b, h, q, k):
        x = s
        for _ in range(30):
            x = x * 0.5 + x       # each level uses the one below twice
        return x
    t = ft.make_plan(deep, None).text
    check("a DAG of depth 30: helpers", t.count("\nmod _t"), 27)
    check("a DAG of depth 30: linear text", len(t) < 3000, True)
    check("a helper's call", "mod score_mod(s, b, h, q, k) = "
          "_t27(s, b, h, q, k) * 0.5 + _t27(s, b, h, q, k);" in t, True)
    # equal subexpressions written twice are one node: short ones inline
    t = ft.make_plan(None, lambda b, h, q, k: (q - k >= 0) &
                     (q - k < 9)).text
    check("hash-consed, short inline", t,
          "mod mask_mod(b, h, q, k) = q - k >= 0 && q - k < 9;\n")
    t = ft.make_plan(lambda s, b, h, q, k: torch.tanh(s * 0.125 + q * 0.25) *
                     torch.tanh(s * 0.125 + q * 0.25), None).text
    check("hash-consed, long shared", t,
          "mod _t0(s, b, h, q, k) = tanh(s * 0.125 + cvt(q, f32) * 0.25);\n"
          "mod score_mod(s, b, h, q, k) = "
          "_t0(s, b, h, q, k) * _t0(s, b, h, q, k);\n")


def errors():
    who = "fagen.flex_attention: score_mod uses "
    sm = lambda f: (lambda: ft.make_plan(f, None))   # noqa: E731
    mm = lambda f: (lambda: ft.make_plan(None, f))   # noqa: E731
    E = ft.TraceError
    expect_error("torch.sin", E, sm(lambda s, b, h, q, k: torch.sin(s)),
                 who + "torch.sin, which fagen cannot compile; supported: "
                 "+ - * /")
    expect_error("a method", E, sm(lambda s, b, h, q, k: s.cos()),
                 who + ".cos, which")
    expect_error("if", E, mm(lambda b, h, q, k: True if q > 5 else False),
                 "mask_mod branches on a traced value")
    expect_error("and", E, mm(lambda b, h, q, k: q > 5 and k > 5),
                 "combine masks with & | ~")
    expect_error("//", E, sm(lambda s, b, h, q, k: s + q // 2),
                 "// (floor division)")
    expect_error("%", E, mm(lambda b, h, q, k: q % 2 == 0),
                 "% (remainder)")
    expect_error("& on ints", E, mm(lambda b, h, q, k: (q & 1) == 0),
                 "'&' on i32 (bitwise operations on integers)")
    expect_error("float()", E, sm(lambda s, b, h, q, k: s + float(q)),
                 "turns a traced value into a Python number")
    expect_error("torch.max", E, sm(lambda s, b, h, q, k: torch.max(s, q)),
                 "use torch.minimum/torch.maximum")
    expect_error("bool arithmetic", E,
                 sm(lambda s, b, h, q, k: s + (q > k)),
                 "'+' on a bool")
    expect_error("mask returns int", E, mm(lambda b, h, q, k: q - k),
                 "mask_mod returns i32; a mask_mod returns a bool")
    expect_error("score returns bool", E, sm(lambda s, b, h, q, k: q > k),
                 "score_mod returns a bool")
    expect_error("a whole tensor", E, sm(lambda s, b, h, q, k: s + SLOPES),
                 "a captured tensor as a whole")
    expect_error("too few indices", E,
                 sm(lambda s, b, h, q, k: s + REL[h]),
                 "shape (4, 1999) with 1 indices")
    expect_error("a slice", E,
                 sm(lambda s, b, h, q, k: s + REL[h, slice(None)]),
                 "with slice(None, None, None)")
    expect_error("a float index", E,
                 sm(lambda s, b, h, q, k: s + SLOPES[h / 2]),
                 "with a f32 (index 0)")
    expect_error("a float64 tensor", E,
                 sm(lambda s, b, h, q, k: s + Tensor((4,), "float64")[h]),
                 "captured torch.float64 tensor")
    expect_error("a big constant", E, mm(lambda b, h, q, k: q < 2 ** 40),
                 "does not fit in i32")
    expect_error("NaN", E, sm(lambda s, b, h, q, k: s + float("nan")),
                 "a NaN constant")
    p = ft.make_plan(lambda s, b, h, q, k: s + SLOPES[h + 1], None)
    expect_error("scalar load out of bounds", IndexError,
                 lambda: p.check_bounds(1, 4),
                 "at index 0 in [1, 4], outside [0, 4) for B=1, H=4")
    p.check_bounds(1, 3)
    print("scalar load in bounds: ok")
    p = ft.make_plan(lambda s, b, h, q, k: s + SLOPES[DOC[b, h]], None)
    expect_error("scalar load through a load", IndexError,
                 lambda: p.check_bounds(1, 1), "in [-inf, inf]")


def counted():
    """Runs of the tracer (ft._make_plan) from now on: a one-element
    list, counted by a wrapper put in place of the tracer."""
    n = [0]
    real = ft._make_plan

    def wrap(*a):
        n[0] += 1
        return real(*a)
    ft._make_plan = wrap
    return n, lambda: setattr(ft, "_make_plan", real)


def plan_cache():
    """A plan is traced once while what its mods read is unchanged, and
    again when it changes; mods reading what has no fingerprint are
    traced at every call."""
    n, undo = counted()
    try:
        def window(w):
            return lambda b, h, q, k: (q >= k) & (q - k < w)
        p = ft.make_plan(None, window(1000))
        check("cache: hit", (ft.make_plan(None, window(1000)) is p, n[0]),
              (True, 1))
        check("cache: closure value", "< 77" in
              ft.make_plan(None, window(77)).text, True)
        lim = [5]
        mod = lambda b, h, q, k: q - k < lim[0]   # noqa: E731
        ft.make_plan(None, mod)
        lim[0] = 6
        check("cache: list element changed", "< 6" in
              ft.make_plan(None, mod).text, True)
        box = types.SimpleNamespace(w=3)
        mod = lambda b, h, q, k: q - k < box.w    # noqa: E731
        before = n[0]
        ft.make_plan(None, mod)
        box.w = 4
        check("cache: an object's attribute is traced every call",
              ("< 4" in ft.make_plan(None, mod).text, n[0] - before),
              (True, 2))
        bias = Tensor((4,), "float32")
        mod = lambda s, b, h, q, k: s + bias[h]   # noqa: E731
        p = ft.make_plan(mod, None)
        check("cache: same tensor", ft.make_plan(mod, None) is p, True)
        bias = Tensor((8,), "float32")
        check("cache: tensor rebound", ft.make_plan(mod, None).text,
              "global FX0 : f32[8];\n"
              "mod score_mod(s, b, h, q, k) = s + FX0[h];\n")
        def later():
            def mod(b, h, q, k):
                return q - k < w
            try:
                ft.make_plan(None, mod)
            except NameError as e:      # the trace's error, not the key's
                return "w" in str(e)
            w = 1   # noqa: F841 -- assigned after the call: an empty cell
        check("cache: an empty closure cell is the trace's NameError",
              later(), True)
        for i in range(ft._PLANS_MAX + 6):
            ft.make_plan(None, window(i))
        check("cache: bounded", len(ft._PLANS), ft._PLANS_MAX)
    finally:
        undo()


def expand(text):
    """A mod file's globals, and its score and mask expressions with the
    helper mods substituted (the compiler has no 'mod' yet)."""
    glob, helpers, mods = [], [], {}
    for line in text.splitlines():
        m = re.match(r"mod (\w+)\(([^)]*)\) = (.*);$", line)
        if not m:
            glob.append(line)
            continue
        body = m.group(3)
        for name, call, hb in helpers:
            body = body.replace(name + call, "(%s)" % hb)
        if m.group(1).startswith("_t"):
            helpers.append((m.group(1), "(%s)" % m.group(2), body))
        else:
            mods[m.group(1)] = body
    return glob, mods.get("score_mod"), mods.get("mask_mod")


KERNEL = """kernel flex target=sm_90a;
param SQ : i32;
param BB : i32;
param HH : i32;
global Y : f32[SQ, 64];
%s
cta threads=128;
tiles grid=(cdiv(SQ, 64));
layout acc = wgmma_acc(n=64);
partition wg warps=0..3 {
	for t in tiles {
		reg s : f32[64, 64] layout=acc;
		let row0 = t.x * 64;
		let b = BB;
		let h = HH;
		let q = rowid(s) + row0;
		let k = colid(s);
		s = %s;
		s = select(%s, s, -inf);
		store Y[row0, 0], s limit=SQ;
	}
}
"""


def compiles():
    cli = os.environ.get("FAGEN_CLI")
    if not cli:
        print("no $FAGEN_CLI: the compile check is skipped")
        return
    extra = [
        ("shared", lambda s, b, h, q, k: torch.tanh(s * 0.125 + q * 0.25) *
         torch.tanh(s * 0.125 + q * 0.25), None),
        ("scalar math", lambda s, b, h, q, k: s * (b / 2) + abs(h - 3) +
         torch.tanh(h * 0.5) + torch.where(b > 0, 1.0, 2), None),
    ]
    cases = [(n, sm, mm) for n, sm, mm, _ in pairs()] + extra
    sched = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "..", "schedules", "fa_fwd_sm90.fa")
    with tempfile.TemporaryDirectory() as tmp:
        for name, sm, mm in cases:
            plan = ft.make_plan(sm, mm)
            # the mod file into the shipped schedule's hooks, as libfagen
            # compiles it (tile gathers and _helpers included)
            path = os.path.join(tmp, "mods.fa")
            with open(path, "w") as f:
                f.write(plan.text)
            args = [cli, sched, "--check", "--mod", path, "-D",
                    "BLOCKS=true"]
            for flag, on in (("SCORE_MOD", plan.has_score_mod),
                             ("MASK_MOD", plan.has_mask_mod)):
                if on:
                    args += ["-D", flag + "=true"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode:
                failures.append("compile: " + name)
                print("compile: %s: FAIL\n%s%s" % (name, plan.text,
                                                   r.stderr))
            else:
                print("compile: %s: ok" % name)


def block_masks(torch):
    """create_block_mask and re-blocking on the CPU against brute force."""
    def dense_classes(mask_mod, b, h, sq, sk, bs=(128, 128)):
        bi = torch.arange(b)[:, None, None, None]
        hi = torch.arange(h)[None, :, None, None]
        m = mask_mod(bi, hi, torch.arange(sq)[None, None, :, None],
                     torch.arange(sk)[None, None, None, :])
        m = torch.as_tensor(m).expand(b, h, sq, sk)
        nq, nk = -(-sq // bs[0]), -(-sk // bs[1])
        cls = torch.zeros(b, h, nq, nk, dtype=torch.int8)
        for i in range(nq):
            for j in range(nk):
                blk = m[:, :, i * bs[0]:(i + 1) * bs[0],
                        j * bs[1]:(j + 1) * bs[1]]
                tail = (j + 1) * bs[1] > sk
                cls[:, :, i, j] = torch.where(
                    blk.flatten(2).all(-1) & (not tail), 2,
                    blk.flatten(2).any(-1).to(torch.int8))
        return cls

    doc = torch.tensor([[0] * 100 + [1] * 150 + [2] * 83,
                        [0] * 300 + [1] * 33])
    # torch's own tensors and functions, through its TorchFunctionMode
    t = ft.make_plan(lambda s, b, h, q, k: torch.where(
        q >= k, s + torch.tanh(s), -float("inf")),
        lambda b, h, q, k: (doc[b, q] == doc[b, k]) & (q >= k)).text
    check("torch: captured tensor and functions", t,
          "global FX0 : i32[2, 333];\n"
          "mod score_mod(s, b, h, q, k) = select(q >= k, s + tanh(s), "
          "-inf);\n"
          "mod mask_mod(b, h, q, k) = FX0[b, q] == FX0[b, k] && q >= k;\n")
    mods = [("causal", lambda b, h, q, k: q >= k),
            ("sliding", lambda b, h, q, k: (q >= k) & (q - k <= 100)),
            ("document", lambda b, h, q, k: (doc[b, q] == doc[b, k]) &
             (q >= k)),
            ("by head", lambda b, h, q, k: (h == 0) | (k < 200))]
    for name, mod in mods:
        for sq, sk in ((333, 333), (333, 200), (1, 333), (256, 256)):
            if name == "document" and sk != 333:
                continue
            bm = flex.create_block_mask(mod, 2, 2, sq, sk, device="cpu")
            cls = flex._to_classes(torch, bm.kv_num_blocks, bm.kv_indices,
                                   bm.full_kv_num_blocks,
                                   bm.full_kv_indices)
            want = dense_classes(mod, 2, 2, sq, sk)
            check("create_block_mask %s %dx%d" % (name, sq, sk),
                  torch.equal(cls, want), True)
            # a mask of 64- or 256-blocks re-blocks to the same classes
            # where the blocks are whole, never claims a full block that
            # is not
            for bs in ((64, 64), (256, 256), (64, 256)):
                small = dense_classes(mod, 2, 2, sq, sk, bs)
                ts = flex._from_classes(torch, small)
                got = flex._no_full_tail(flex._reblock(
                    torch, flex._to_classes(torch, *ts[:4]), bs, (sq, sk)),
                    sk)
                ok = torch.equal(got > 0, want > 0) if bs[0] <= 128 and \
                    bs[1] <= 128 else bool(((got > 0) >= (want > 0)).all())
                ok = ok and bool(((got == 2) <= (want == 2)).all())
                check("re-block %s %s %dx%d" % (name, bs, sq, sk), ok, True)
    bm = flex.create_block_mask(mods[0][1], None, None, 300, 300,
                                device="cpu")
    check("broadcast B, H", tuple(bm.kv_num_blocks.shape), (1, 1, 3))
    check("repr", repr(bm).startswith("fagen.BlockMask(shape=(1, 1, 300, "
                                      "300), sparsity=33.33%"), True)
    flex._CHUNK, saved = 128 * 333, flex._CHUNK    # one block a chunk
    try:
        bm2 = flex.create_block_mask(mods[2][1], 2, 2, 333, 333,
                                     device="cpu")
    finally:
        flex._CHUNK = saved
    check("chunked", torch.equal(bm2.kv_indices, flex.create_block_mask(
        mods[2][1], 2, 2, 333, 333, device="cpu").kv_indices), True)
    caches(torch, mods[0][1])


def caches(torch, causal):
    """The plan cache with torch's tensors; the block-table cache."""
    n, undo = counted()
    try:
        cap = torch.tensor(5)
        mod = lambda b, h, q, k: q - k < cap.item()    # noqa: E731
        ft.make_plan(None, mod)
        cap.fill_(6)
        check("cache: a value read while tracing is not cached",
              ("< 6" in ft.make_plan(None, mod).text, n[0]), (True, 2))
    finally:
        undo()
    q = torch.zeros(1, 2, 300, 64)
    bm = flex.create_block_mask(causal, 1, 1, 300, 300, device="cpu")
    b1 = flex._blocks_cached(torch, bm, q, q)
    b2 = flex._blocks_cached(torch, bm, q, q)
    check("block tables: B and H of 1 stay 1 (the kernel broadcasts)",
          tuple(b1[0][0].shape), (1, 1, 3))
    check("block tables: fagen's own passed as they are",
          b1[0][0] is bm.kv_num_blocks, True)
    check("block tables: cached", b2[0][0] is b1[0][0] and b2[2] is b1[2],
          True)
    bm.full_kv_num_blocks.zero_()       # in place: the version moves
    b3 = flex._blocks_cached(torch, bm, q, q)
    check("block tables: an in-place change rebuilds them",
          (b3[2] is b1[2], int(b3[0][2].sum())), (False, 0))
    with torch.inference_mode():
        bi = flex.create_block_mask(causal, 1, 1, 300, 300, device="cpu")
        c1 = flex._blocks_cached(torch, bi, q, q)
        c2 = flex._blocks_cached(torch, bi, q, q)
    check("block tables: inference tensors are not cached",
          c1[2] is c2[2], False)
    # a mask of another kind (torch's BlockMask) on 128 x 128 blocks: as
    # it is where the keys fill whole blocks, re-derived where the last
    # key block is partial (it can never be whole)
    import types
    for sk, passed in ((384, True), (300, False)):
        mb = flex.create_block_mask(lambda b, h, q, k: k <= q + 100, 1, 1,
                                    256, sk, device="cpu")
        other = types.SimpleNamespace(**{a: getattr(mb, a) for a in (
            "kv_num_blocks", "kv_indices", "full_kv_num_blocks",
            "full_kv_indices", "BLOCK_SIZE", "seq_lengths", "mask_mod")})
        qq, kk = torch.zeros(2, 2, 256, 64), torch.zeros(2, 2, sk, 64)
        t, _ = flex._blocks(torch, other, qq, kk)
        check("torch's mask, Sk %d: passed as it is" % sk,
              t[1] is mb.kv_indices, passed)
        check("torch's mask, Sk %d: the same blocks as fagen's" % sk,
              torch.equal(flex._to_classes(torch, *t),
                          flex._to_classes(torch, *flex._blocks(
                              torch, mb, qq, kk)[0])), True)
    # the backward's lists: per K/V head and key block, the count, then
    # the pair g, 2 m + whole of each block of the group not empty, head
    # by head
    gen = torch.Generator().manual_seed(5)
    cls = torch.randint(0, 3, (2, 4, 3, 5), generator=gen) * \
        torch.randint(0, 2, (2, 4, 3, 5), generator=gen)
    ql = flex._qlist(torch, cls, 2)
    want = []
    for z in range(2):
        for hk in range(2):
            for n in range(5):
                e = [x for g in range(2) for m in range(3)
                     if cls[z, hk * 2 + g, m, n] != 0
                     for x in (g, 2 * m + int(cls[z, hk * 2 + g, m, n] == 2))]
                want.append([len(e) // 2] + e)
    got = [ql[z, hk, n, :1 + 2 * int(ql[z, hk, n, 0])].tolist()
           for z in range(2) for hk in range(2) for n in range(5)]
    check("backward's query-block lists", (tuple(ql.shape), str(ql.dtype),
          got == want), ((2, 2, 5, 13), "torch.int32", True))
    i64 = torch.arange(300)
    a = flex._as_int32(torch, i64)
    check("int64 capture: converted once", flex._as_int32(torch, i64) is a,
          True)
    i64[7] = 2 ** 40
    expect_error("int64 capture: changed in place", ValueError,
                 lambda: flex._as_int32(torch, i64), "outside int32")


def main():
    texts()
    sharing()
    errors()
    plan_cache()
    compiles()
    try:
        import torch as real_torch
    except ImportError:
        real_torch = None
        print("no PyTorch: create_block_mask's checks are skipped (they "
              "run in gpu.python_flex)")
    if real_torch is not None:
        block_masks(real_torch)
    if failures:
        print("%d FAILED: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
