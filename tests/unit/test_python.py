"""test_python.py: the Python binding without a GPU.

fagen imports without PyTorch and without a GPU; its ctypes structures
have the C layouts (sizes and offsets of fg_attention_args,
fg_attention_bwd_args, the row kernels' args, fg_linear_args,
fg_decode_args and fg_options, as numbers and against offsetof in a C
program compiled from include/fagen.h); it loads libfagen ($FAGEN_LIB)
and reports its version; attention(), rms_norm(), layer_norm(),
softmax(), cross_entropy(), linear() and attention_with_kvcache()
without PyTorch say they need it; with PyTorch, bad arguments (CPU
tensors, wrong dtype, shapes, strides, gradients, sinks; the norms'
weights, biases, outputs and eps, softmax's dim, cross_entropy's target,
ignore_index and reduction, linear's weight, bias, residual, activation,
scale and out, attention_with_kvcache's caches, new tokens, lengths,
page table, window, softcap, scale, splits and out) are refused before
libfagen is called.  Exits 77 (SKIP) after the checks that need no
PyTorch when PyTorch is missing.
"""
import importlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def expect(exc, fn, want):
    try:
        fn()
    except exc as e:
        assert want in str(e), "%r lacks %r" % (str(e), want)
        return
    raise AssertionError("no %s (%s)" % (exc.__name__, want))


def without_torch():
    saved = sys.modules.get("torch")
    sys.modules["torch"] = None       # import torch now fails
    try:
        import fagen
        importlib.reload(fagen)
        expect(ImportError, lambda: fagen.attention(1, 2, 3),
               "fagen.attention needs PyTorch")
        expect(ImportError, lambda: fagen.rms_norm(1),
               "fagen.rms_norm needs PyTorch")
        expect(ImportError, lambda: fagen.layer_norm(1),
               "fagen.layer_norm needs PyTorch")
        expect(ImportError, lambda: fagen.softmax(1),
               "fagen.softmax needs PyTorch")
        expect(ImportError, lambda: fagen.cross_entropy(1, 2),
               "fagen.cross_entropy needs PyTorch")
        expect(ImportError, lambda: fagen.linear(1, 2),
               "fagen.linear needs PyTorch")
        expect(ImportError, lambda: fagen.attention_with_kvcache(1, 2, 3),
               "fagen.attention_with_kvcache needs PyTorch")
    finally:
        if saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved


def layouts():
    import ctypes
    import fagen
    a, o = fagen._Args, fagen._Options
    assert ctypes.sizeof(a) == 416, ctypes.sizeof(a)
    assert a.dtype.offset == 208 and a.scale.offset == 216
    assert a.schedule.offset == 224 and a.heads_k.offset == 232
    assert a.window.offset == 240 and a.window_left.offset == 248
    assert a.window_right.offset == 256 and a.softcap.offset == 264
    assert a.sinks.offset == 272 and a.cu_seqlens_q.offset == 280
    assert a.cu_seqlens_k.offset == 288 and a.max_seqlen_q.offset == 296
    assert a.max_seqlen_k.offset == 304 and a.alibi_slopes.offset == 312
    assert a.mods.offset == 320 and a.score_mod.offset == 328   # issue #22
    assert a.mask_mod.offset == 332 and a.mod_args.offset == 336
    assert a.nmod_args.offset == 344 and a.block_kv_num.offset == 352
    assert a.block_kv_idx.offset == 360 and a.block_full_num.offset == 368
    assert a.block_full_idx.offset == 376
    assert a.pack_gqa.offset == 384             # issue #12
    assert a.head_dim_v.offset == 392 and a.block_batch.offset == 400
    assert a.block_heads.offset == 408
    assert ctypes.sizeof(fagen._Arg) == 128 and fagen._Arg.t.offset == 32
    assert ctypes.sizeof(o) == 88 and o.schedule_dir.offset == 64
    assert o.sim.offset == 72                   # issue #18
    assert o.target.offset == 80                # issue #28
    b = fagen._BwdArgs      # issue #13
    assert ctypes.sizeof(b) == 600, ctypes.sizeof(b)
    assert b.fwd.offset == 0 and b.dout.offset == 416
    assert b.dout_strides.offset == 424 and b.dq.offset == 456
    assert b.dk.offset == 464 and b.dv.offset == 472
    assert b.dq_strides.offset == 480 and b.dk_strides.offset == 512
    assert b.dv_strides.offset == 544
    assert b.schedule.offset == 576 and b.block_qlist.offset == 584
    assert b.deterministic.offset == 592
    n = fagen.norm._NormArgs    # issue #26
    assert ctypes.sizeof(n) == 504, ctypes.sizeof(n)
    assert n.weight.offset == 96 and n.out.offset == 288
    assert n.rstd.offset == 480 and n.dtype.offset == 488
    assert n.eps.offset == 496
    n = fagen.norm._NormBwdArgs
    assert ctypes.sizeof(n) == 416, ctypes.sizeof(n)
    assert n.dy.offset == 192 and n.rstd.offset == 288
    assert n.dx.offset == 296 and n.dw_partial.offset == 392
    assert n.dw_partial_rows.offset == 400 and n.dtype.offset == 408
    n = fagen.norm._LayerNormArgs
    assert ctypes.sizeof(n) == 608, ctypes.sizeof(n)
    assert n.bias.offset == 192 and n.out.offset == 384
    assert n.mean.offset == 576 and n.rstd.offset == 584
    assert n.dtype.offset == 592 and n.eps.offset == 600
    n = fagen.norm._SoftmaxArgs
    assert ctypes.sizeof(n) == 200 and n.dtype.offset == 192
    n = fagen.norm._SoftmaxBwdArgs
    assert ctypes.sizeof(n) == 296 and n.dx.offset == 192
    assert n.dtype.offset == 288
    n = fagen.xent._XentArgs
    assert ctypes.sizeof(n) == 216 and n.target.offset == 96
    assert n.loss.offset == 192 and n.lse.offset == 200
    assert n.dtype.offset == 208
    n = sys.modules["fagen.linear"]._LinearArgs    # fagen.linear: the function
    assert ctypes.sizeof(n) == 504, ctypes.sizeof(n)
    assert n.bias.offset == 192 and n.residual.offset == 288
    assert n.out.offset == 384 and n.dtype.offset == 480
    assert n.alpha.offset == 488 and n.act.offset == 496
    n = fagen.decode._DecodeArgs    # issue #16
    assert ctypes.sizeof(n) == 328, ctypes.sizeof(n)
    assert n.o.offset == 56 and n.q_strides.offset == 72
    assert n.batch.offset == 168 and n.cache_len.offset == 208
    assert n.seq_new.offset == 240 and n.dtype.offset == 248
    assert n.window_left.offset == 264 and n.softcap.offset == 280
    assert n.num_splits.offset == 296 and n.workspace.offset == 304
    assert n.workspace_bytes.offset == 312 and n.validate.offset == 320
    assert fagen.version().count(".") == 2, fagen.version()


def c_layouts():
    """Every field of the ctypes mirrors against offsetof and sizeof from
    fagen.h, compiled with $FAGEN_CC (meson's C compiler), else cc."""
    import ctypes
    import fagen
    cc = shlex.split(os.environ.get("FAGEN_CC", "")) or \
        [c for c in [shutil.which("cc")] if c]
    if not cc:
        print("no C compiler: the C layout check is skipped")
        return
    structs = (("fg_attention_args", fagen._Args),
               ("fg_attention_bwd_args", fagen._BwdArgs),
               ("fg_options", fagen._Options),
               ("fg_tensor", fagen._Tensor), ("fg_arg", fagen._Arg),
               ("fg_rmsnorm_args", fagen.norm._NormArgs),
               ("fg_rmsnorm_bwd_args", fagen.norm._NormBwdArgs),
               ("fg_layernorm_args", fagen.norm._LayerNormArgs),
               ("fg_softmax_args", fagen.norm._SoftmaxArgs),
               ("fg_softmax_bwd_args", fagen.norm._SoftmaxBwdArgs),
               ("fg_cross_entropy_args", fagen.xent._XentArgs),
               ("fg_linear_args", sys.modules["fagen.linear"]._LinearArgs),
               ("fg_decode_args", fagen.decode._DecodeArgs))
    lines = ['#include <stddef.h>', '#include <stdio.h>',
             '#include "fagen.h"', 'int main(void) {']
    for name, st in structs:
        lines.append('printf("%s sizeof %%zu\\n", sizeof(%s));'
                     % (name, name))
        for f in st._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(%s, %s));'
                         % (name, f[0], name, f[0]))
    lines.append("return 0; }")
    inc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "include")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(cc + ["-I", inc, "-o", exe, src], check=True)
        got = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout.split("\n")
    want = []
    for name, st in structs:
        want.append("%s sizeof %d" % (name, ctypes.sizeof(st)))
        want += ["%s %s %d" % (name, f[0], getattr(st, f[0]).offset)
                 for f in st._fields_]
    for w, g in zip(want, got):
        assert w == g, "ctypes says %r, fagen.h %r" % (w, g)
    assert len(got) == len(want) + 1, got


def with_torch(torch):
    import fagen
    x = torch.zeros(1, 2, 8, 64, dtype=torch.bfloat16)
    expect(ValueError, lambda: fagen.attention(x, x, x), "is on cpu")
    expect(TypeError, lambda: fagen.attention(x.numpy, x, x),
           "q must be a torch.Tensor")
    # fagen.rms_norm (issue #26)
    expect(ValueError, lambda: fagen.rms_norm(x), "x is on cpu: fagen "
           "needs CUDA tensors")
    expect(TypeError, lambda: fagen.rms_norm([1.0]), "x must be a "
           "torch.Tensor")
    expect(ValueError, lambda: fagen.layer_norm(x), "x is on cpu")
    expect(ValueError, lambda: fagen.softmax(x), "x is on cpu")
    expect(ValueError, lambda: fagen.cross_entropy(
        x[0, 0], torch.zeros(8, dtype=torch.long)), "logits is on cpu")
    expect(ValueError, lambda: fagen.linear(x, x[0, 0]), "x is on cpu")
    expect(TypeError, lambda: fagen.linear([1.0], x), "x must be a "
           "torch.Tensor, not list")
    kv = fagen.attention_with_kvcache
    expect(ValueError, lambda: kv(x, x, x), "q is on cpu: fagen needs "
           "CUDA tensors")
    expect(TypeError, lambda: kv(None, x, x), "q must be a torch.Tensor, "
           "not NoneType")
    if not torch.cuda.is_available():
        return
    norm_checks(torch)
    linear_checks(torch)
    decode_checks(torch)
    c = x.cuda()
    expect(ValueError, lambda: fagen.attention(c.float(), c, c),
           "fagen takes torch.bfloat16 or torch.float16")
    expect(ValueError, lambda: fagen.attention(c[0], c, c),
           "q has 3 dimensions")
    expect(ValueError, lambda: fagen.attention(c.transpose(2, 3), c, c),
           "stride 64 in its last dimension")
    expect(ValueError, lambda: fagen.attention(c, c[..., :32], c[..., :32]),
           "with q's B and D")
    c3 = torch.zeros(1, 3, 8, 64, dtype=torch.bfloat16).cuda()
    expect(ValueError, lambda: fagen.attention(c3, c, c),
           "the query heads must be a multiple of the K/V heads")
    expect(ValueError, lambda: fagen.attention(c, c, c, scale=-1.0),
           "scale is -1.0")
    expect(ValueError, lambda: fagen.attention(c, c, c, window=(-2, 0)),
           "window is (-2, 0)")
    expect(ValueError, lambda: fagen.attention(c, c, c, window=5),
           "it must be (left, right)")
    expect(ValueError, lambda: fagen.attention(c, c, c, softcap=-1.0),
           "softcap is -1.0")
    expect(ValueError, lambda: fagen.attention(c, c, c, out=c[:, :1]),
           "out must be a tensor of q's shape")
    expect(ValueError, lambda: fagen.attention(c, c, c, lse=c),
           "lse must be a contiguous float32")
    expect(fagen.FagenError, lambda: fagen.attention(c, c, c,
                                                     schedule="../x.fa"),
           "give the file name of a shipped schedule")
    # fagen.attention is differentiable (issue #13), but not with out=,
    # and reference() has no backward
    g = c.clone().requires_grad_()
    expect(RuntimeError, lambda: fagen.attention(g, c, c, out=c.clone()),
           "out= and lse= do not support automatic differentiation")
    expect(RuntimeError, lambda: fagen.reference(g, c, c), "no backward")
    s = torch.zeros(2, dtype=torch.float32, device=c.device)
    strided = torch.zeros(4, device=c.device)[::2]
    for bad in (s[:1], s.double(), s.cpu(), strided):
        expect(ValueError, lambda: fagen.attention(c, c, c, sinks=bad),
               "sinks must be a contiguous float32 (H,) = (2,)")
    expect(RuntimeError, lambda: fagen.reference(
        c, c, c, sinks=s.clone().requires_grad_()), "no backward")
    for bad in (s[:1], s.double(), s.cpu(), strided):
        expect(ValueError, lambda: fagen.attention(c, c, c,
                                                   alibi_slopes=bad),
               "alibi_slopes must be a contiguous float32 (H,) = (2,)")
    # variable-length batches: (total, H, D) tensors and int32 offsets
    p = torch.zeros(10, 2, 64, dtype=torch.bfloat16, device=c.device)
    cu = torch.tensor([0, 4, 10], dtype=torch.int32, device=c.device)
    vl = fagen.attention_varlen   # differentiable since issue #13: its
    # gradients are checked on a GPU (tests/gpu/test_python_backward.py)
    expect(ValueError, lambda: vl(c, p, p, cu, cu, 6, 6),
           "q has 4 dimensions: attention_varlen takes (total_tokens, H, D)")
    expect(ValueError, lambda: vl(p, p, p, cu.cpu(), cu, 6, 6),
           "cu_seqlens_q is on cpu")
    expect(ValueError, lambda: vl(p, p, p, cu.long(), cu, 6, 6),
           "cu_seqlens_q must be a contiguous int32 (B + 1,) tensor")
    bad = torch.tensor([0, 6, 4, 10], dtype=torch.int32, device=c.device)
    expect(ValueError, lambda: vl(p, p, p, bad, bad, 6, 6),
           "offsets must start at 0, never decrease")
    over = torch.tensor([0, 4, 11], dtype=torch.int32, device=c.device)
    expect(ValueError, lambda: vl(p, p, p, over, cu, 7, 6),
           "end at most at the total tokens (10)")
    expect(ValueError, lambda: vl(p, p, p, cu, cu, 5, 6),
           "max_seqlen_q is 5 but a sequence has 6 tokens")
    expect(TypeError, lambda: vl(p, p, p, cu, cu, 6.0, 6),
           "max_seqlen_q must be an int")
    expect(ValueError, lambda: vl(p, p, p, cu, cu[:2], 6, 6),
           "cu_seqlens_q has 3 entries and cu_seqlens_k 2")
    expect(ValueError, lambda: vl(p, p, p, cu, cu, 6, 6, lse=p),
           "lse must be a contiguous float32 (H, total_q) = (2, 10)")


def linear_checks(torch):
    """fagen.linear refuses bad arguments before libfagen runs."""
    import fagen
    li = fagen.linear
    x = torch.zeros(8, 64, dtype=torch.bfloat16, device="cuda")
    w = torch.zeros(32, 64, dtype=torch.bfloat16, device="cuda")
    b = torch.zeros(32, dtype=torch.bfloat16, device="cuda")
    expect(ValueError, lambda: li(x.float(), w.float()), "x is "
           "torch.float32: fagen.linear takes torch.bfloat16 or "
           "torch.float16 (the GEMM's tensor cores take 16-bit inputs)")
    expect(ValueError, lambda: li(x[0, 0], w), "x is a 0-d tensor")
    expect(TypeError, lambda: li(x, w.tolist()), "weight must be a "
           "torch.Tensor, not list")
    expect(ValueError, lambda: li(x, w.cpu()), "weight is on cpu")
    expect(ValueError, lambda: li(x, w.half()), "weight is torch.float16 "
           "and x torch.bfloat16: they must share a dtype")
    expect(ValueError, lambda: li(x, w[:, :32]), "weight has shape (32, "
           "32); it must be (N, K) with K = 64, x's last dim")
    expect(ValueError, lambda: li(x, w[0]), "weight has shape (64,)")
    expect(ValueError, lambda: li(x, w, b[:16]), "bias has shape (16,); "
           "it must be (N,), N weight's rows, (32,)")
    expect(ValueError, lambda: li(x, w, residual=x), "residual has shape "
           "(8, 64); it must be the result's: x's outer dims, then N, "
           "(8, 32)")
    expect(ValueError, lambda: li(x, w, activation="gelu"), "activation "
           "is 'gelu': fagen has GELU's tanh form only; pass 'gelu_tanh'")
    expect(ValueError, lambda: li(x, w, activation="relu"), "activation "
           "is 'relu': use None, 'gelu_tanh' or 'silu'")
    expect(ValueError, lambda: li(x, w, activation=1), "activation is 1")
    expect(ValueError, lambda: li(x, w, scale=float("nan")), "scale is "
           "nan: it must be a finite number")
    expect(ValueError, lambda: li(x, w, scale=1e39), "scale is 1e+39")
    expect(ValueError, lambda: li(x, w, scale=True), "scale is True")
    y = torch.empty(8, 32, dtype=torch.bfloat16, device="cuda")
    expect(ValueError, lambda: li(x, w, out=y[:4]), "out has shape (4, "
           "32); it must be the result's")
    expect(ValueError, lambda: li(x, w, out=y.t().contiguous().t()),
           "out has strides (1, 8): it must be contiguous")
    odd = torch.empty(257, dtype=torch.bfloat16, device="cuda")[1:]
    expect(ValueError, lambda: li(x, w, out=odd.view(8, 32)),
           "not 16-byte aligned")
    expect(ValueError, lambda: li(x, w, out=x.view(-1)[:256].view(8, 32)),
           "out overlaps x: fagen.linear does not compute in place")
    expect(RuntimeError, lambda: li(x, w.clone().requires_grad_(), out=y),
           "fagen.linear: out= is not differentiable")


def decode_checks(torch):
    """fagen.attention_with_kvcache refuses bad arguments before libfagen
    runs."""
    import fagen
    kv = fagen.attention_with_kvcache
    bf = torch.bfloat16
    q = torch.zeros(2, 1, 8, 64, dtype=bf, device="cuda")
    kc = torch.zeros(2, 32, 2, 64, dtype=bf, device="cuda")
    pc = torch.zeros(4, 16, 2, 64, dtype=bf, device="cuda")
    pt = torch.zeros(2, 2, dtype=torch.int32, device="cuda")
    new = torch.zeros(2, 1, 2, 64, dtype=bf, device="cuda")
    lens = torch.zeros(2, dtype=torch.int32, device="cuda")
    expect(ValueError, lambda: kv(q.float(), kc, kc), "q is torch.float32: "
           "fagen takes torch.bfloat16 or torch.float16")
    expect(ValueError, lambda: kv(q[0], kc, kc), "q has 3 dimensions: it "
           "must be (B, Sq, H, D)")
    expect(ValueError, lambda: kv(q, kc.half(), kc), "k_cache is "
           "torch.float16: it must be torch.bfloat16 (q's dtype)")
    expect(ValueError, lambda: kv(q, kc.cpu(), kc), "k_cache is on cpu")
    expect(ValueError, lambda: kv(q, kc, kc[:, :16]), "the caches must be "
           "(B, Sk, Hk, D) with q's D and B")
    expect(ValueError, lambda: kv(q, kc[:1], kc[:1]), "the caches must be")
    expect(ValueError, lambda: kv(q[:, :, :3], kc, kc), "q has 3 heads and "
           "the caches 2: the query heads must be a multiple of the K/V "
           "heads")
    expect(ValueError, lambda: kv(q, kc, kc, k=new), "k is given and v is "
           "None: give the new keys and values together")
    expect(ValueError, lambda: kv(q, kc, kc, new, new[:, :, :1]), "v has "
           "shape (2, 1, 1, 64): k and v must be (B, Sn, Hk, D) = (2, Sn, "
           "2, 64)")
    expect(ValueError, lambda: kv(q, kc, kc, new, new), "k and v need "
           "cache_seqlens")
    expect(ValueError, lambda: kv(q, kc.transpose(0, 1).contiguous()
                                  .transpose(0, 1), kc, new, new,
                                  cache_seqlens=3),
           "the caches, which must be contiguous")
    expect(ValueError, lambda: kv(q, kc, kc, cache_seqlens=-1),
           "cache_seqlens is -1: a length must be >= 0")
    expect(ValueError, lambda: kv(q, kc, kc, cache_seqlens=lens.long()),
           "cache_seqlens is torch.int64: it must be torch.int32")
    expect(ValueError, lambda: kv(q, kc, kc, cache_seqlens=lens[:1]),
           "cache_seqlens has shape (1,): it must be an int or a "
           "contiguous int32 (B,) = (2,) tensor")
    expect(ValueError, lambda: kv(q, pc, pc, page_table=pt.long()),
           "page_table is torch.int64: it must be torch.int32")
    expect(ValueError, lambda: kv(q, pc, pc, page_table=pt[:1]),
           "page_table has shape (1, 2): it must be a contiguous int32 (B, "
           "max_pages) tensor, B = 2")
    expect(ValueError, lambda: kv(q, pc, pc, page_table=pt,
                                  block_table=pt.clone()),
           "page_table and block_table are the same argument")
    expect(ValueError, lambda: kv(q, kc, kc, window=(1, -2)), "window is "
           "(1, -2): it must be (left, right)")
    expect(ValueError, lambda: kv(q, kc, kc, softcap=-1.0), "softcap is "
           "-1.0: it must be a finite number > 0 (None or 0: none)")
    expect(ValueError, lambda: kv(q, kc, kc, scale=0.0), "scale is 0.0: "
           "it must be > 0")
    expect(ValueError, lambda: kv(q, kc, kc, num_splits=257), "num_splits "
           "is 257: it must be 0 (the heuristic) or 1 to 256")
    expect(ValueError, lambda: kv(q, kc, kc, out=q[:1]), "out must be a "
           "contiguous, 16-byte aligned tensor of q's shape (2, 1, 8, 64)")
    expect(RuntimeError, lambda: kv(q.clone().requires_grad_(), kc, kc),
           "fagen.attention_with_kvcache has no backward")
    # libfagen's own checks: a page size that does not tile a block
    bad = torch.zeros(4, 24, 2, 64, dtype=bf, device="cuda")
    expect(fagen.FagenError, lambda: kv(q, bad, bad, page_table=pt),
           "fg_attention_decode: page_size is 24")


def norm_checks(torch):
    """fagen.rms_norm refuses bad arguments before libfagen runs."""
    import fagen
    x = torch.zeros(8, 64, dtype=torch.bfloat16, device="cuda")
    w = torch.ones(64, dtype=torch.bfloat16, device="cuda")
    rn = fagen.rms_norm
    expect(ValueError, lambda: rn(x, w.float()), "weight is torch.float32 "
           "and x torch.bfloat16: they must share a dtype")
    expect(ValueError, lambda: rn(x, w[:32]), "weight has shape (32,); it "
           "must be (N,) = (64,), N x's last dim")
    expect(ValueError, lambda: rn(x, w.cpu()), "weight is on cpu")
    expect(ValueError, lambda: rn(x, residual=x[:2]), "residual has shape "
           "(2, 64); it must be x's, (8, 64)")
    expect(ValueError, lambda: rn(x.double()), "x is torch.float64: "
           "fagen.rms_norm takes torch.bfloat16, torch.float16 or "
           "torch.float32")
    expect(ValueError, lambda: rn(x[0, 0]), "x is a 0-d tensor")
    expect(ValueError, lambda: rn(x, out=x.t().contiguous().t()),
           "out has strides (1, 8): it must be contiguous")
    expect(ValueError, lambda: rn(x, out=x), "out overlaps x")
    expect(ValueError, lambda: rn(x, eps=-1.0), "eps is -1.0")
    expect(ValueError, lambda: rn(x, eps=float("inf")), "eps is inf")
    expect(ValueError, lambda: rn(x, eps="1"), "eps is '1'")
    expect(RuntimeError, lambda: rn(x.float().requires_grad_(),
                                    out=torch.empty_like(x.float())),
           "fagen.rms_norm: out= is not differentiable")
    expect(ValueError, lambda: rn(x.float().requires_grad_(), w),
           "weight is torch.bfloat16 and x torch.float32")
    # fagen.layer_norm and fagen.softmax
    ln = fagen.layer_norm
    expect(ValueError, lambda: ln(x, w, w[:32]), "bias has shape (32,); "
           "it must be (N,) = (64,), N x's last dim")
    expect(ValueError, lambda: ln(x, bias=w.half()), "bias is "
           "torch.float16 and x torch.bfloat16")
    expect(ValueError, lambda: ln(x.int()), "x is torch.int32: "
           "fagen.layer_norm takes torch.bfloat16")
    expect(ValueError, lambda: ln(x, out=x), "out overlaps x: "
           "fagen.layer_norm does not normalize in place")
    expect(ValueError, lambda: ln(x, eps=-1.0), "eps is -1.0")
    expect(RuntimeError, lambda: ln(x, w.clone().requires_grad_()),
           "fagen.layer_norm has no backward yet")
    sm = fagen.softmax
    expect(ValueError, lambda: sm(x.double()), "x is torch.float64: "
           "fagen.softmax takes torch.bfloat16, torch.float16 or "
           "torch.float32")
    expect(ValueError, lambda: sm(x[0, 0]), "x is a 0-d tensor")
    expect(IndexError, lambda: sm(x, 2), "dim is 2: x has 2 dimensions, "
           "so it must be in [-2, 1]")
    expect(TypeError, lambda: sm(x, 1.0), "dim must be an int")
    # fagen.cross_entropy
    ce = fagen.cross_entropy
    t = torch.zeros(8, dtype=torch.long, device="cuda")
    expect(ValueError, lambda: ce(x.double(), t), "logits is torch.float64: "
           "fagen.cross_entropy takes torch.bfloat16")
    expect(ValueError, lambda: ce(x, t.float()), "target is torch.float32: "
           "fagen.cross_entropy takes class indices of torch.int64 or "
           "torch.int32 (class probabilities are not supported)")
    expect(ValueError, lambda: ce(x, t.cpu()), "target is on cpu")
    expect(ValueError, lambda: ce(x, t[:4]), "target has shape (4,); it "
           "must be logits' without its last dim (the classes), (8,)")
    expect(TypeError, lambda: ce(x, t.tolist()), "target must be a "
           "torch.Tensor, not list")
    expect(ValueError, lambda: ce(x, t, reduction="avg"), "reduction is "
           "'avg': use 'none', 'mean' or 'sum'")
    expect(TypeError, lambda: ce(x, t, ignore_index=1.5), "ignore_index "
           "must be an int, not float")
    expect(ValueError, lambda: ce(x[:, :0], t), "logits has shape (8, 0): "
           "it must have a class")


def main():
    without_torch()
    layouts()
    c_layouts()
    try:
        import torch
    except ImportError:
        print("fagen imports and loads libfagen %s; no PyTorch here: "
              "its checks are skipped" % __import__("fagen").version())
        return SKIP
    with_torch(torch)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
