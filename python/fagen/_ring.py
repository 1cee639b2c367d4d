"""Which part of a sequence shard's attention each step of a ring
computes (fagen.distributed, issue #23).  Pure Python: no PyTorch.

N ranks each hold a shard of the sequence.  At step i of the ring, rank
r holds the keys and values of rank src = (r - i) mod N and computes the
attention of its queries against them; the partial results are merged
through their log-sum-exp.  Without causality every step is the whole
shard against the whole shard.  With it, the shards' positions decide:

- contiguous shards (rank r holds chunk r of N): keys of an earlier rank
  are all visible (FULL), the rank's own keys are the diagonal (DIAG,
  causal), a later rank's are all masked (SKIP).  Rank r works on r + 1
  of the N steps: the last rank waits for the first.
- zigzag shards (rank r holds chunks r and 2N - 1 - r of 2N, in that
  order; FlashAttention's ring-attention users' load balancing): the
  own keys are the diagonal, again causal (the local order is the
  global order); an earlier rank's first chunk is visible to both local
  chunks and its second chunk to neither (KV_FIRST: all queries against
  the first half of the keys); a later rank's keys are visible to the
  second local chunk only (Q_SECOND: the second half of the queries
  against all keys).  Every step but the first is half a shard squared:
  the ranks are balanced.
"""

FULL = "full"            # all queries, all keys, no mask
DIAG = "diag"            # all queries, all keys, causal
KV_FIRST = "kv_first"    # all queries, the first half of the keys
Q_SECOND = "q_second"    # the second half of the queries, all keys
SKIP = "skip"            # nothing visible

__all__ = ["FULL", "DIAG", "KV_FIRST", "Q_SECOND", "SKIP", "plan",
           "halves", "chunks", "source"]


def source(rank, step, world):
    """The rank whose keys and values rank holds at step."""
    return (rank - step) % world


def plan(rank, src, world, causal, zigzag):
    """What rank computes against the keys and values of rank src."""
    if not 0 <= rank < world or not 0 <= src < world:
        raise ValueError("rank %r and source %r of a ring of %r"
                         % (rank, src, world))
    if not causal:
        return FULL
    if src == rank:
        return DIAG
    if zigzag:
        return KV_FIRST if src < rank else Q_SECOND
    return FULL if src < rank else SKIP


def halves(p):
    """(query half, key half) of a plan: None for all rows, 0 for the
    first half, 1 for the second."""
    return {FULL: (None, None), DIAG: (None, None), KV_FIRST: (None, 0),
            Q_SECOND: (1, None), SKIP: (None, None)}[p]


def chunks(rank, world, zigzag):
    """The global chunks a rank's shard holds, in its local order: of N
    chunks for contiguous shards, of 2N for zigzag ones."""
    return (rank, 2 * world - 1 - rank) if zigzag else (rank,)
