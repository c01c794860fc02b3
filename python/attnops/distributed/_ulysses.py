"""Ulysses attention: one all-to-all trades the sequence shards for head shards of the whole sequence,
the library's call runs on them, one all-to-all trades the output back.

Shapes: q [B, S/W, N, D] (BSND), [B, N, S/W, D] (BNSD) or [T/W, N, D] (TND) in and out; in between
[B, S, N/W, D] ([T, N/W, D]) on every rank, rank r holding heads [r N/W, (r+1) N/W).
"""
import math

import torch
import torch.distributed as dist

from .. import _fa, flash_attn, ops
from ._common import DTYPE_CODES, SEQ_DIM, Ring, check_inputs, check_same_everywhere, dropout_seed, keep_code, \
    window as _window
from ._shards import merge_shards, seqlens_list, shard


def _all_to_all(x, group, scatter_dim, gather_pieces):
    """Cut x into W pieces along scatter_dim, send piece j to rank j -> the W pieces received, in rank
    order, for gather_pieces to put together."""
    world_size = dist.get_world_size(group)
    sent = torch.stack(x.chunk(world_size, dim=scatter_dim)).contiguous()
    received = torch.empty_like(sent)
    dist.all_to_all_single(received, sent, group=group)
    return gather_pieces(list(received.unbind(0)))


class _Regroup(torch.autograd.Function):
    """to_heads: sequence shards -> head shards of the whole sequence; otherwise the way back.  The
    backward is the other direction.  shards: (group, seq_dim, head_dim, zigzag, cu_seqlens)."""

    @staticmethod
    def forward(ctx, x, to_heads, shards):
        ctx.to_heads, ctx.shards = to_heads, shards
        return (_seq_to_heads if to_heads else _heads_to_seq)(x, *shards)

    @staticmethod
    def backward(ctx, dy):
        return (_heads_to_seq if ctx.to_heads else _seq_to_heads)(dy, *ctx.shards), None, None


def _seq_to_heads(x, group, seq_dim, head_dim, zigzag, cu_seqlens):
    return _all_to_all(x, group, head_dim,
                       lambda pieces: merge_shards(pieces, seq_dim=seq_dim, zigzag=zigzag, cu_seqlens=cu_seqlens))


def _heads_to_seq(x, group, seq_dim, head_dim, zigzag, cu_seqlens):
    world_size = dist.get_world_size(group)
    # piece j of the scatter must be rank j's sequence shard: reorder so that chunk() cuts them out
    ordered = x if not zigzag and cu_seqlens is None else torch.cat(
        [shard(x, r, world_size, seq_dim=seq_dim, zigzag=zigzag, cu_seqlens=cu_seqlens) for r in range(world_size)],
        dim=seq_dim)
    return _all_to_all(ordered, group, seq_dim, lambda pieces: torch.cat(pieces, dim=head_dim))


class _HeadShardAttention(torch.autograd.Function):
    """The library's forward and backward on one rank's head shard of the whole sequence: flash-attn's
    call, with the dropout block that puts its heads at their global index."""

    @staticmethod
    def forward(ctx, q, k, v, kw):
        out, smax, ssum = ops.flash_attention_score(q.detach(), k.detach(), v.detach(), **kw)
        ctx.kw = kw
        ctx.save_for_backward(q, k, v, out, smax, ssum)
        return out

    @staticmethod
    def backward(ctx, dy):
        q, k, v, out, smax, ssum = ctx.saved_tensors
        return (*ops.flash_attention_score_grad(q.detach(), k.detach(), v.detach(), dy, out, smax, ssum, **ctx.kw)[:3],
                None)


def _call_args(layout, band, slopes, s_q, s_kv, cu_seqlens_q, cu_seqlens_k):
    """flash_attn_func's (flash_attn_varlen_func's in TND) mask, ALiBi and sequence arguments."""
    if layout == "TND":
        return flash_attn._varlen_args(cu_seqlens_q, cu_seqlens_k, False, band, slopes,
                                       "attnops.distributed.ulysses_attention")
    args = flash_attn._mask_args(False, band)
    return {**args, **(flash_attn._alibi_args(slopes, s_q, s_kv) if slopes is not None else {})}


def ulysses_attention(q, k, v, *, group=None, causal=False, window_size=(-1, -1), alibi_slopes=None, scale=None,
                      layout="BSND", zigzag=False, cu_seqlens_q=None, cu_seqlens_k=None, dropout_p=0.0, seed=None):
    """Attention of this rank's query shard against the whole sequence by head parallelism: out, the local
    shard of the output, differentiable in q, k, v.  causal, window_size and alibi_slopes (f32 [N], of all
    the heads) have flash_attn_func's meanings on the global sequence (flash_attn_varlen_func's per
    sequence in TND, whose global cumulative lengths cu_seqlens_q / cu_seqlens_k give, 0 first); zigzag:
    the shards are shard(..., zigzag=True)'s.  dropout_p drops what the single-process call with the
    same seed drops; seed defaults to one drawn from torch's default generator on rank 0."""
    op = "ulysses_attention"
    check_inputs(op, q, k, v, layout)
    band = _window(op, causal, window_size)
    keep_prob, seed = dropout_seed(op, dropout_p, seed)
    ring = Ring(group)
    w = ring.world_size
    seq_dim, head_dim = SEQ_DIM[layout], {"BSND": 2, "BNSD": 1, "TND": 1}[layout]
    bounds = []
    if layout == "TND":
        if cu_seqlens_q is None or cu_seqlens_k is None:
            raise ValueError(f"attnops.distributed.{op}: layout TND needs cu_seqlens_q and cu_seqlens_k")
        bounds = [seqlens_list(cu_seqlens_q, op), seqlens_list(cu_seqlens_k, op)]
    seed = check_same_everywhere(op, ring, q, k, v, (
        DTYPE_CODES[q.dtype], DTYPE_CODES[k.dtype], DTYPE_CODES[v.dtype], seq_dim, *band, int(zigzag),
        int(alibi_slopes is not None), keep_code(keep_prob), *(x for b in bounds for x in b)), seed)
    n, n_kv = q.shape[head_dim], k.shape[head_dim]
    if n % w or (n_kv % w and w % n_kv):
        raise ValueError(f"attnops.distributed.{op}: {n} query heads and {n_kv} key/value heads cannot be shared "
                         f"by {w} ranks (N and N_kv must divide by W, or W by N_kv)")
    if n_kv % w:  # W / N_kv ranks share each kv head: repeat it (autograd sums its gradients back)
        k, v = (t.repeat_interleave(w // math.gcd(n_kv, w), dim=head_dim) for t in (k, v))
    slopes = None
    if alibi_slopes is not None:
        if tuple(alibi_slopes.shape) != (n,):
            raise ValueError(f"attnops.distributed.{op}: alibi_slopes must be [{n}] (every head's), got "
                             f"{tuple(alibi_slopes.shape)}")
        slopes = alibi_slopes.chunk(w)[ring.rank].contiguous()
    cu_q, cu_k = bounds or (None, None)
    heads = [_Regroup.apply(t, True, (group, seq_dim, head_dim, zigzag, cu)) for t, cu in
             ((q, cu_q), (k, cu_k), (v, cu_k))]
    call_layout = "TND" if layout == "TND" else "BSND"
    if layout == "BNSD":  # the call takes [B, S, N, D]: strided views, no copies
        heads = [t.transpose(1, 2) for t in heads]
    call_seq = 1 if call_layout == "BSND" else 0
    s_q, s_kv, n_local = heads[0].shape[call_seq], heads[1].shape[call_seq], n // w
    extra = dict(scale=heads[0].shape[-1] ** -0.5 if scale is None else scale,
                 **_call_args(layout, band, slopes, s_q, s_kv, cu_q, cu_k))
    if keep_prob < 1.0:
        whole = (cu_q[1:], cu_k[1:]) if layout == "TND" else ([s_q], [s_kv])
        extra.update(keep_prob=keep_prob, seed=seed, offset=0,
                     **ops.dropout_block_args(_fa.DropoutBlock(n, ring.rank * n_local, *whole)))
    out = _HeadShardAttention.apply(*heads, dict(head_num=n_local, input_layout=call_layout, **extra))
    if layout == "BNSD":
        out = out.transpose(1, 2)
    return _Regroup.apply(out, False, (group, seq_dim, head_dim, zigzag, cu_q))
