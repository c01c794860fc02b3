"""Context-parallel attention across processes on torch.distributed: ring and Ulysses attention.

    local = shard(x, rank, world_size, seq_dim=1, zigzag=True)        # this rank's part of the sequence
    out = ring_attention(q, k, v, causal=True, zigzag=True)             # q, k, v: local shards
    out = ulysses_attention(q, k, v, causal=True, zigzag=True)          # the same, by all-to-all
    full = unshard(out, seq_dim=1, zigzag=True)                         # all_gather and reassemble

Each rank of the process group holds a shard of the sequence: q, k, v are
[B, S_local, N, D] (layout "BSND"), [B, N, S_local, D] ("BNSD") or
[T_local, N, D] ("TND": the rank's shard of every sequence, concatenated;
shard(..., cu_seqlens=)), the same shape on every rank (checked with one
all_gather per call; a mismatch raises ValueError on every rank).

Ring (_ring.py).  K/V travel around the ring (rank r sends to r+1 and
receives from r-1 with isend/irecv) while the block in hand is computed;
the library call releases the GIL, so gloo's threads move the next block
during it.  A block's call returns its output O_b and the row statistics
of its scores s = scale q.k: m_b = max s, l_b = sum exp(s - m_b), merged in
fp32 (ring-flash-attention's merge; CANN's softmax_max / softmax_sum are
exactly these):
    M = max(m, m_b),  L = l exp(m - M) + l_b exp(m_b - M),
    O = (O l exp(m - M) + O_b l_b exp(m_b - M)) / L.
(M, L) are the rows' global statistics, so the backward's block calls get
them with the merged output as attention_in (FlashAttentionScoreGrad
recomputes P = exp(s - M) / L and Drow = rowsum(dy * O)): each block's dq,
dk, dv are its exact share; dq is summed locally in fp32 while the dK/dV
accumulators (fp32) travel the ring with their K/V block.

Causal balance.  With contiguous shards rank r's queries see rank r' < r's
keys fully, its own causally, later ranks' not at all (no call; the block
still travels): rank W-1 does W blocks of work, rank 0 one.  zigzag=True
cuts the sequence into 2W chunks, rank r holding chunks r and 2W-1-r, so
every step is half a block of work on every rank (zhuzilin/
ring-flash-attention's zigzag layout).

Global positions.  With ALiBi, dropout, a window, or causal on different
query and key lengths, each call is a piece whose rows are contiguous in
the global sequence (one chunk): it gets its global starts as
q_start_idx / kv_start_idx (ALiBi's distance) and as a dropout block (the C
params' dropout_*: the piece draws the whole sequence's Philox stream at its
positions, so the ring drops exactly what the unsplit call drops), and the
band in its own coordinates (sparse_mode 4; a piece the band misses makes
no call, one it covers is a full call).

Ulysses (_ulysses.py).  One all-to-all gives rank r heads [r N/W, (r+1) N/W)
of the whole sequence; flash-attn's call runs on them (any mask, window or
ALiBi it supports; dropout at the heads' global index) and one all-to-all
trades back.  N and N_kv divide by W, or W by N_kv (K/V heads are then
repeated, their gradients summed back).

Dropout seed: `seed`, or one drawn from torch's default generator on rank 0
and shared by the call's all_gather.  docs/DISTRIBUTED.md.
"""
from ._ring import ring_attention
from ._shards import merge_shards, shard, unshard
from ._ulysses import ulysses_attention

__all__ = ["ring_attention", "ulysses_attention", "shard", "merge_shards", "unshard"]
