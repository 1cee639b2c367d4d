"""test_python_decode.py: fagen.attention_with_kvcache (fg_attention_decode:
schedules/fa_decode_sm90.fa, fa_combine.fa and kv_append.fa) on a Hopper
GPU against float64 (issue #16).

Every case draws fresh inputs (randn, rounded to the dtype); the cache
rows past each sequence's length hold other random values (finite: the
kernel masks them, docs/API.md); out is poisoned with NaN before each
run, and two runs must agree bitwise.  The reference gathers each
sequence's keys and values from the cache (through the page table when
paged, after the appended tokens are written), then float64 attention
with the new queries at the last positions (causal and windows
bottom-right, softcap), rows that see no key 0 and lse -inf.  out within
1e-2 (bf16) or 3e-3 (f16) relative error, lse within 1e-3.

  shapes   batch 1 to 64, ragged cache lengths 1 to 128k, contiguous and
           paged (page sizes 16, 64, 256, pages shuffled, unused table
           entries -1), G in {1, 4, 8} (and 7, which packs 1 head a tile
           row group), 1 to 16 query tokens, causal, windows, softcap,
           head dims 64, 128, 256, bf16 and f16.
  append   k=, v= written into the cache at cache_seqlens (contiguous and
           paged): the cache afterwards holds them there and nothing
           else changed.
  splits   num_splits 1, 3, 8 and the heuristic agree within 4e-3
           relative (each rounds its merged f32 partials once) and 1e-4
           in lse, and each matches the reference.
  graph    a decode step captured in a CUDA graph and replayed gives the
           eager call's bits; nothing is allocated by the replay.
  errors   bad page sizes, heads, dtypes, lengths past the cache, page
           numbers out of range (validate=True): each raises before any
           launch.

Exit 1 on any failure, 77 (SKIP) without PyTorch or a Hopper GPU.
--quick: fewer shapes.
"""
import math
import sys

SKIP = 77

try:
    import torch
except ImportError:
    print("no PyTorch: skipping")
    sys.exit(SKIP)
import fagen

if not torch.cuda.is_available() or \
        torch.cuda.get_device_capability() != (9, 0):
    print("no Hopper GPU: skipping")
    sys.exit(SKIP)

dev = torch.device("cuda")
failures = []
QUICK = "--quick" in sys.argv
TOL = {torch.bfloat16: 1e-2, torch.float16: 3e-3}


def short(dt):
    return str(dt)[6:]


def rel(x, ref):
    x = x.double().nan_to_num(nan=1e9)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make_cache(b, cap, hk, d, dtype, ps):
    """A cache of capacity cap per sequence: contiguous (ps 0) or paged,
    the pages of each sequence shuffled over the pool, entries past what
    a sequence may use -1.  Returns k_cache, v_cache, page_table."""
    if not ps:
        kc = torch.randn(b, cap, hk, d, device=dev, dtype=dtype)
        vc = torch.randn(b, cap, hk, d, device=dev, dtype=dtype)
        return kc, vc, None
    mp = -(-cap // ps)
    npages = b * mp + 3
    kc = torch.randn(npages, ps, hk, d, device=dev, dtype=dtype)
    vc = torch.randn(npages, ps, hk, d, device=dev, dtype=dtype)
    perm = torch.randperm(npages, device=dev)[:b * mp].to(torch.int32)
    pt = perm.view(b, mp).contiguous()
    return kc, vc, pt


def gather(cache, pt, z, n):
    """Rows 0 .. n - 1 of sequence z: [n, hk, d]."""
    if pt is None:
        return cache[z, :n]
    ps = cache.shape[1]
    j = torch.arange(n, device=dev)
    return cache[pt[z, j // ps].long(), j % ps]


def reference(q, kc, vc, pt, lens, causal, window, softcap, scale):
    """out [b, sq, h, d] and lse [b, h, sq] in float64; lens: the keys
    of each sequence after the append."""
    b, sq, h, d = q.shape
    out = torch.zeros(b, sq, h, d, dtype=torch.float64, device=dev)
    lse = torch.full((b, h, sq), -math.inf, dtype=torch.float64,
                     device=dev)
    for z in range(b):
        n = lens[z]
        k = gather(kc, pt, z, n).double().transpose(0, 1)   # [hk, n, d]
        v = gather(vc, pt, z, n).double().transpose(0, 1)
        g = h // k.shape[0]
        k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
        qz = q[z].double().transpose(0, 1)                  # [h, sq, d]
        s = (qz @ k.transpose(-1, -2)) * scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        i = torch.arange(sq, device=dev)[:, None] + n - sq
        j = torch.arange(n, device=dev)[None, :]
        keep = torch.ones(sq, n, dtype=torch.bool, device=dev)
        if causal:
            keep &= j <= i
        if window is not None:
            if window[0] >= 0:
                keep &= j >= i - window[0]
            if window[1] >= 0:
                keep &= j <= i + window[1]
        s = s.masked_fill(~keep, -math.inf)
        l = torch.logsumexp(s, -1)
        p = torch.exp(s - l[..., None]).nan_to_num(0.0)
        out[z] = (p @ v).transpose(0, 1)
        lse[z] = l
    return out, lse


def run(q, kc, vc, pt, seqlens, knew, vnew, causal, window, softcap,
        splits):
    """Two runs on NaN-poisoned outputs (the cache copied back between
    them when appending); returns out, lse and whether they agree."""
    outs = []
    kc0, vc0 = kc.clone(), vc.clone()
    for rep in range(2):
        if rep:
            kc.copy_(kc0)
            vc.copy_(vc0)
        out = torch.full_like(q, math.nan)
        r = fagen.attention_with_kvcache(
            q, kc, vc, k=knew, v=vnew, cache_seqlens=seqlens,
            page_table=pt, causal=causal, window=window, softcap=softcap,
            num_splits=splits, out=out, return_lse=True)
        outs.append((r[0].clone(), r[1].clone()))
    same = torch.equal(outs[0][0], outs[1][0]) and \
        torch.equal(outs[0][1], outs[1][1])
    return outs[1][0], outs[1][1], same


def case(b, h, hk, sq, d, cap, lens, ps=0, dtype=torch.bfloat16,
         causal=False, window=None, softcap=None, new=0, splits=0):
    """lens: each sequence's cached keys before the append (new more are
    appended when new > 0)."""
    global failures
    q = torch.randn(b, sq, h, d, device=dev, dtype=dtype)
    kc, vc, pt = make_cache(b, cap, hk, d, dtype, ps)
    seqlens = torch.tensor(lens, dtype=torch.int32, device=dev)
    knew = vnew = None
    if new:
        knew = torch.randn(b, new, hk, d, device=dev, dtype=dtype)
        vnew = torch.randn(b, new, hk, d, device=dev, dtype=dtype)
    kc_before, vc_before = kc.clone(), vc.clone()
    out, lse, same = run(q, kc, vc, pt, seqlens, knew, vnew, causal, window,
                         softcap, splits)
    after = [n + new for n in lens]
    ok_cache = True
    if new:
        # the new rows landed, and nothing else moved
        ek, ev = kc_before.clone(), vc_before.clone()
        for z in range(b):
            for t in range(new):
                pos = lens[z] + t
                if pt is None:
                    ek[z, pos], ev[z, pos] = knew[z, t], vnew[z, t]
                else:
                    pg = pt[z, pos // ps].item()
                    ek[pg, pos % ps], ev[pg, pos % ps] = knew[z, t], \
                        vnew[z, t]
        ok_cache = torch.equal(kc, ek) and torch.equal(vc, ev)
    scale = 1 / math.sqrt(d)
    ref, rlse = reference(q, kc, vc, pt, after, causal, window, softcap,
                          scale)
    e = rel(out, ref)
    fin = torch.isfinite(rlse)
    e_lse = (lse.double()[fin] - rlse[fin]).abs().max().item() \
        if fin.any() else 0.0
    lse_inf = bool((lse[~fin] == -math.inf).all())
    ok = same and ok_cache and e <= TOL[dtype] and e_lse < 1e-3 and lse_inf
    name = ("B=%d H=%d Hk=%d Sq=%d D=%d cap=%d lens=%s%s %s%s%s%s%s "
            "splits=%s" % (
                b, h, hk, sq, d, cap,
                lens if len(lens) <= 4 else "[%d..%d]" % (min(lens),
                                                         max(lens)),
                " page=%d" % ps if ps else "", short(dtype),
                " causal" if causal else "",
                " window=%s" % (window,) if window else "",
                " softcap=%g" % softcap if softcap else "",
                " +%d new" % new if new else "", splits))
    print("%s: rel err %.2e, lse err %.1e%s%s -> %s" % (
        name, e, e_lse, "" if same else ", runs differ",
        "" if ok_cache else ", cache wrong", "ok" if ok else "FAIL"))
    if not ok:
        failures.append(name)
    return out


def ragged(b, lo, hi, gen):
    return [int(x) for x in torch.randint(lo, hi + 1, (b,), generator=gen)]


def shapes():
    gen = torch.Generator().manual_seed(16)
    # G = 1, 4, 8 (and 7: gcd(7, 64) = 1), 1 to 16 new tokens, paged
    for (b, h, hk, sq, d, cap, ps) in [
            (1, 8, 8, 1, 128, 1000, 0),
            (4, 32, 8, 1, 128, 4096, 0),
            (8, 32, 4, 1, 128, 3000, 16),
            (3, 32, 8, 4, 128, 2000, 64),
            (2, 64, 8, 16, 128, 5000, 256),
            (5, 28, 4, 2, 128, 700, 64),
            (2, 16, 2, 3, 64, 900, 16),
            (2, 16, 16, 1, 256, 1500, 128),
            (64, 32, 8, 1, 128, 1024, 64)]:
        lens = ragged(b, max(1, cap // 8), cap, gen)
        lens[0] = 1 if b > 1 else lens[0]
        case(b, h, hk, sq, d, cap, lens, ps)
    # long contexts, ragged
    case(2, 32, 8, 1, 128, 131072, [131072, 70001], 0)
    if not QUICK:
        case(3, 32, 8, 1, 128, 131072, [131000, 1, 65536], 256)
        case(1, 8, 1, 1, 128, 32768, [32768], 16)
    # causal among new tokens, windows, softcap, f16
    case(3, 32, 8, 8, 128, 2048, [9, 1000, 2048], 64, causal=True)
    case(2, 16, 4, 16, 128, 4096, [16, 3333], 0, causal=True,
         dtype=torch.float16)
    case(2, 32, 8, 4, 128, 4096, [500, 4096], 16, window=(256, 0))
    case(2, 8, 8, 2, 64, 3000, [2999, 1200], 0, window=(100, 1))
    # more new tokens than the cache holds, the right side unbounded:
    # row 0 sees every key (the right side was once bound to the cache)
    case(1, 8, 8, 40, 64, 32, [32], 0, window=(100, -1))
    case(2, 32, 8, 1, 128, 2048, [2048, 77], 256, softcap=30.0)
    case(1, 16, 16, 1, 256, 3000, [3000], 0, dtype=torch.float16,
         causal=True)


def appends():
    # new tokens written into the cache by the call, then attended
    case(3, 32, 8, 1, 128, 2048, [0, 100, 2047], 0, new=1)
    case(2, 32, 8, 4, 128, 1024, [5, 1000], 16, new=4, causal=True)
    case(2, 16, 4, 16, 64, 2048, [0, 700], 64, new=16, causal=True)
    case(4, 32, 8, 1, 128, 4096, [1, 17, 4000, 2222], 256, new=1)


def splits():
    # the same problem at several split counts: equal up to rounding
    gen = torch.Generator().manual_seed(7)
    b, h, hk, sq, d, cap, ps = 2, 32, 8, 2, 128, 8192, 64
    lens = ragged(b, 1000, cap, gen)
    q = torch.randn(b, sq, h, d, device=dev, dtype=torch.bfloat16)
    kc, vc, pt = make_cache(b, cap, hk, d, torch.bfloat16, ps)
    sl = torch.tensor(lens, dtype=torch.int32, device=dev)
    res = {}
    for ns in (1, 3, 8, 0):
        res[ns] = fagen.attention_with_kvcache(
            q, kc, vc, cache_seqlens=sl, page_table=pt, num_splits=ns,
            return_lse=True)
    for ns in (3, 8, 0):
        e = rel(res[ns][0], res[1][0].double())
        el = (res[ns][1] - res[1][1]).abs().max().item()
        ok = e <= 4e-3 and el < 1e-4
        print("splits %d vs 1: rel diff %.2e, lse diff %.1e -> %s"
              % (ns, e, el, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("splits %d" % ns)
    # and every split count against the reference
    for ns in (1, 5, 0):
        case(2, 32, 8, 1, 128, 8192, lens, ps, splits=ns)


def graph():
    b, h, hk, sq, d, cap, ps = 8, 32, 8, 1, 128, 4096, 64
    q = torch.randn(b, sq, h, d, device=dev, dtype=torch.bfloat16)
    kc, vc, pt = make_cache(b, cap, hk, d, torch.bfloat16, ps)
    sl = torch.randint(1, cap - 4, (b,), dtype=torch.int32, device=dev)
    kn = torch.randn(b, 1, hk, d, device=dev, dtype=torch.bfloat16)
    vn = torch.randn(b, 1, hk, d, device=dev, dtype=torch.bfloat16)
    out = torch.empty_like(q)
    kc0, vc0 = kc.clone(), vc.clone()
    ok = True
    for ns in (1, 4):
        kc.copy_(kc0)
        vc.copy_(vc0)
        eager = fagen.attention_with_kvcache(
            q, kc, vc, k=kn, v=vn, cache_seqlens=sl, page_table=pt,
            num_splits=ns, return_lse=True)
        eager = (eager[0].clone(), eager[1].clone())
        kc.copy_(kc0)
        vc.copy_(vc0)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):      # warm up: compile and load
            fagen.attention_with_kvcache(
                q, kc, vc, k=kn, v=vn, cache_seqlens=sl, page_table=pt,
                num_splits=ns, out=out, validate=False)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            r = fagen.attention_with_kvcache(
                q, kc, vc, k=kn, v=vn, cache_seqlens=sl, page_table=pt,
                num_splits=ns, out=out, return_lse=True)
        for rep in range(3):
            kc.copy_(kc0)
            vc.copy_(vc0)
            out.fill_(math.nan)
            g.replay()
            torch.cuda.synchronize()
            same = torch.equal(out, eager[0]) and torch.equal(r[1],
                                                              eager[1])
            ok &= same
        print("graph splits=%d: replays %s the eager bits -> %s" % (
            ns, "give" if ok else "do not give", "ok" if ok else "FAIL"))
        if not ok:
            failures.append("graph splits=%d" % ns)


def raises(what, fn, text):
    global failures
    try:
        fn()
    except (ValueError, TypeError, RuntimeError) as e:
        ok = text in str(e)
        print("error %s: %s -> %s" % (what, str(e).splitlines()[0][:150],
                                      "ok" if ok else "FAIL"))
        if not ok:
            failures.append("error " + what)
        return
    print("error %s: no error -> FAIL" % what)
    failures.append("error " + what)


def errors():
    q = torch.randn(2, 1, 32, 128, device=dev, dtype=torch.bfloat16)
    kc, vc, pt = make_cache(2, 512, 8, 128, torch.bfloat16, 16)
    sl = torch.tensor([3, 500], dtype=torch.int32, device=dev)
    k24, v24, pt24 = make_cache(2, 480, 8, 128, torch.bfloat16, 24)
    raises("page size 24", lambda: fagen.attention_with_kvcache(
        q, k24, v24, cache_seqlens=sl, page_table=pt24), "page")
    raises("heads", lambda: fagen.attention_with_kvcache(
        q[:, :, :30], kc, vc, cache_seqlens=sl, page_table=pt), "heads")
    raises("dtype", lambda: fagen.attention_with_kvcache(
        q.half(), kc, vc, cache_seqlens=sl, page_table=pt), "dtype")
    long = torch.tensor([3, 600], dtype=torch.int32, device=dev)
    raises("length past the cache", lambda: fagen.attention_with_kvcache(
        q, kc, vc, cache_seqlens=long, page_table=pt, validate=True),
        "600")
    bad = pt.clone()
    bad[1, 5] = 10 ** 6
    raises("page out of range", lambda: fagen.attention_with_kvcache(
        q, kc, vc, cache_seqlens=sl, page_table=bad, validate=True),
        "1000000")
    # without validation the kernel stays in bounds: finite output
    out = fagen.attention_with_kvcache(q, kc, vc, cache_seqlens=long,
                                       page_table=bad, validate=False)
    torch.cuda.synchronize()
    print("unvalidated bad table: no fault -> ok")


shapes()
appends()
splits()
graph()
errors()
print("%d failure(s)" % len(failures))
for f in failures:
    print("  FAIL", f)
sys.exit(1 if failures else 0)
