"""What ring and Ulysses attention share: the group's ring of neighbours, the check that every rank makes
the same call, and the checks of the arguments."""
import torch
import torch.distributed as dist

from .. import ops

SEQ_DIM = {"BSND": 1, "BNSD": 2, "TND": 0}
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


class Ring:
    """Neighbours in the group's ring, and one step's exchange: send to rank+1, receive from rank-1."""

    def __init__(self, group):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.next, self.prev = (self._global((self.rank + step) % self.world_size) for step in (1, -1))

    def _global(self, group_rank):
        """The rank in the default group that P2POp wants, of a rank of this group."""
        return group_rank if self.group is None else dist.get_global_rank(self.group, group_rank)

    def start(self, tensors, tag):
        """Start sending `tensors` (contiguous) to the next rank and receiving their successors from the
        previous one -> a function that waits for the exchange and returns what arrived.  Each kind of
        exchange has its own tags (tag, tag + 1, ...), so two in flight never match each other's messages."""
        if self.world_size == 1:
            return lambda: tuple(tensors)
        received = [torch.empty_like(t) for t in tensors]
        p2p = [dist.P2POp(dist.isend, t, self.next, self.group, tag + i) for i, t in enumerate(tensors)] + \
              [dist.P2POp(dist.irecv, t, self.prev, self.group, tag + i) for i, t in enumerate(received)]
        works = dist.batch_isend_irecv(p2p)

        def wait():
            for w in works:
                w.wait()
            return tuple(received)
        return wait


def check_same_everywhere(op, ring, q, k, v, signature, seed):
    """Every rank must make the same call: one all_gather of the shapes, dtypes and options (a mismatch
    raises ValueError on every rank) -> rank 0's dropout seed, which every rank then uses."""
    mine = torch.tensor([*q.shape, *k.shape, *v.shape, *signature, seed], dtype=torch.int64)
    every = [torch.empty_like(mine) for _ in range(ring.world_size)]
    dist.all_gather(every, mine, group=ring.group)
    for r, theirs in enumerate(every):
        if not torch.equal(theirs[:-1], mine[:-1]):
            raise ValueError(f"attnops.distributed.{op}: rank {r} calls with shapes / options {theirs[:-1].tolist()}, "
                             f"rank {ring.rank} with {mine[:-1].tolist()} (q, k, v shapes, dtypes, layout and options "
                             "must agree on every rank)")
    return int(every[0][-1])


def check_inputs(op, q, k, v, layout):
    if layout not in SEQ_DIM:
        raise NotImplementedError(f"attnops.distributed.{op}: layout {layout!r} is not supported; use one of "
                                  f"{', '.join(SEQ_DIM)}")
    rank = 3 if layout == "TND" else 4
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != rank:
            raise ValueError(f"attnops.distributed.{op}: {name} must have rank {rank} ({layout}), got shape "
                             f"{tuple(t.shape)}")
        if t.dtype not in DTYPE_CODES:
            raise TypeError(f"attnops.distributed.{op}: {name} has dtype {t.dtype}; float32, float16 or bfloat16 "
                            "are supported")


def dropout_seed(op, dropout_p, seed):
    """(keep_prob, this rank's seed): seed, or one drawn from torch's default generator (rank 0's is used)."""
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"attnops.distributed.{op}: dropout_p is {dropout_p}; it must lie in [0, 1)")
    keep_prob = 1.0 - dropout_p
    if keep_prob == 1.0:
        return keep_prob, 0
    return keep_prob, ops.dropout_seed(keep_prob)[0] if seed is None else int(seed)


def window(op, causal, window_size):
    """flash-attn's (left, right) band, -1 = unbounded; causal sets right = 0."""
    left, right = (int(x) for x in window_size)
    if left < -1 or right < -1:
        raise ValueError(f"attnops.distributed.{op}: window_size is {tuple(window_size)}; each side is >= 0, or -1 "
                         "for unbounded")
    return (left, 0) if causal else (left, right)


def keep_code(keep_prob):
    """keep_prob as an integer for the signature check."""
    return round(keep_prob * 2 ** 32)
