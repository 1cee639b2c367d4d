"""test_python_ring.py: the ring's plan (python/fagen/_ring.py, issue #23),
pure Python, no PyTorch.

For rings of 1 to 9 ranks, causal or not, zigzag or contiguous shards:
over all ranks and steps, every (query chunk, key chunk) pair of the
whole sequence is computed exactly once, and with the right mask (full
below the diagonal, causal on it, nothing above it when causal); with
zigzag shards every rank does the same work at every step; every rank
holds keys of every rank once over the N steps.  A plan that computed a
pair twice, missed one or masked it wrongly fails here.
"""
import sys

from fagen import _ring

failures = []


def pairs(rank, src, world, causal, zigzag):
    """{(query chunk, key chunk): 'full' | 'diag'} that rank computes with
    the keys of src, from the plan (the shard's local order is its chunks'
    order, and DIAG is causal over the concatenated local positions)."""
    p = _ring.plan(rank, src, world, causal, zigzag)
    qc, kc = _ring.chunks(rank, world, zigzag), _ring.chunks(src, world,
                                                            zigzag)
    qh, kh = _ring.halves(p)
    qi = list(range(len(qc))) if qh is None else [qh]
    ki = list(range(len(kc))) if kh is None else [kh]
    out = {}
    if p == _ring.SKIP:
        return out, 0.0
    work = 0.0
    for i in qi:
        for j in ki:
            if p == _ring.DIAG:
                if j > i:
                    continue
                out[(qc[i], kc[j])] = "diag" if i == j else "full"
            else:
                out[(qc[i], kc[j])] = "full"
            work += 0.5 if out[(qc[i], kc[j])] == "diag" else 1.0
    return out, work


def check(world, causal, zigzag):
    name = "N=%d %s %s" % (world, "causal" if causal else "full",
                           "zigzag" if zigzag else "contiguous")
    seen = {}
    nchunks = 2 * world if zigzag else world
    for step in range(world):
        works = []
        srcs = set()
        for rank in range(world):
            src = _ring.source(rank, step, world)
            srcs.add(src)
            got, work = pairs(rank, src, world, causal, zigzag)
            works.append(work)
            for pq, kind in got.items():
                if pq in seen:
                    failures.append("%s: pair %s computed twice" % (name, pq))
                seen[pq] = kind
        if len(srcs) != world:
            failures.append("%s: step %d holds keys %s" % (name, step, srcs))
        if zigzag and len(set(works)) != 1:
            failures.append("%s: step %d unbalanced, work %s"
                            % (name, step, works))
    for qc in range(nchunks):
        for kc in range(nchunks):
            want = None if causal and kc > qc else \
                "diag" if causal and kc == qc else "full"
            if seen.get((qc, kc)) != want:
                failures.append("%s: pair %s is %s, want %s"
                                % (name, (qc, kc), seen.get((qc, kc)), want))


def main():
    for world in range(1, 10):
        for causal, zigzag in ((False, False), (True, False), (True, True)):
            check(world, causal, zigzag)
    for bad in ((2, 0, 2), (0, -1, 2), (0, 3, 3)):
        try:
            _ring.plan(*bad, True, True)
            failures.append("plan%s accepted" % (bad,))
        except ValueError:
            pass
    for f in failures:
        print("FAIL", f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
