"""Sequence shards: each rank's part of a sequence (contiguous or zigzag), and the whole from the parts.

A batch of one sequence length (BSND / BNSD) is cut along its sequence dim; a TND batch of several
sequences (cu_seqlens, cumulative with a leading 0, flash-attn's convention) has each sequence cut
the same way and the rank's parts of all sequences concatenated in sequence order.
"""
import torch
import torch.distributed as dist


def chunks_of(rank, world_size, zigzag):
    """The sequence chunks rank holds, in order: (rank,) of W, or (rank, 2W-1-rank) of 2W."""
    return (rank, 2 * world_size - 1 - rank) if zigzag else (rank,)


def seqlens_list(cu_seqlens, op):
    """cu_seqlens (a list or an integer tensor [B + 1], 0 first, not decreasing) as a list of ints."""
    bounds = [int(x) for x in (cu_seqlens.tolist() if torch.is_tensor(cu_seqlens) else cu_seqlens)]
    if len(bounds) < 2 or bounds[0] != 0 or any(b < a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"attnops.distributed.{op}: cu_seqlens must start at 0, not decrease and have at least 2 "
                         f"entries, got {bounds}")
    return bounds


def _lengths(total, cu_seqlens, op):
    """The sequence lengths of `total` rows: [total], or those of cu_seqlens (which must end at total)."""
    if cu_seqlens is None:
        return [total]
    bounds = seqlens_list(cu_seqlens, op)
    if bounds[-1] != total:
        raise ValueError(f"attnops.distributed.{op}: cu_seqlens ends at {bounds[-1]} but the tensor has {total} rows")
    return [b - a for a, b in zip(bounds, bounds[1:])]


def shard(x, rank, world_size, *, seq_dim=1, zigzag=False, cu_seqlens=None):
    """rank's part of the full sequence x (a contiguous copy): the rank-th of W equal chunks along
    seq_dim, or with zigzag the chunks rank and 2W-1-rank of 2W, concatenated; with cu_seqlens (TND),
    that of every sequence, concatenated in sequence order."""
    pieces = 2 * world_size if zigzag else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"attnops.distributed.shard: rank {rank} is not in [0, {world_size})")
    parts, start = [], 0
    for length in _lengths(x.shape[seq_dim], cu_seqlens, "shard"):
        if length % pieces:
            raise ValueError(f"attnops.distributed.shard: the sequence length {length} (dim {seq_dim}) does not "
                             f"split into {pieces} equal chunks")
        n = length // pieces
        parts += [x.narrow(seq_dim, start + c * n, n) for c in chunks_of(rank, world_size, zigzag)]
        start += length
    return torch.cat(parts, dim=seq_dim).contiguous()


def merge_shards(shards, *, seq_dim=1, zigzag=False, cu_seqlens=None):
    """The full sequence from every rank's shard (shards[r] = shard(x, r, W, ...)): shard's inverse."""
    world_size = len(shards)
    pieces = 2 * world_size if zigzag else world_size
    lengths = _lengths(shards[0].shape[seq_dim] * world_size, cu_seqlens, "merge_shards")
    merged, offset = [], 0  # offset: where the current sequence's part starts in every shard
    for length in lengths:
        n, chunks = length // pieces, [None] * pieces
        for rank, local in enumerate(shards):
            for i, c in enumerate(chunks_of(rank, world_size, zigzag)):
                chunks[c] = local.narrow(seq_dim, offset + i * n, n)
        merged += chunks
        offset += length // world_size
    return torch.cat(merged, dim=seq_dim)


def unshard(local, *, group=None, seq_dim=1, zigzag=False, cu_seqlens=None):
    """The full sequence on every rank: all_gather of the shards, then merge_shards."""
    gathered = [torch.empty_like(local) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, local.contiguous(), group=group)
    return merge_shards(gathered, seq_dim=seq_dim, zigzag=zigzag, cu_seqlens=cu_seqlens)
