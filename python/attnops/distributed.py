"""Context-parallel attention across processes on torch.distributed: ring and Ulysses attention.

    local = shard(x, rank, world_size, seq_dim=1, zigzag=True)        # this rank's part of the sequence
    out = ring_attention(q, k, v, causal=True, zigzag=True)             # q, k, v: local shards
    out = ulysses_attention(q, k, v, causal=True, zigzag=True)          # the same, by all-to-all
    full = unshard(out, seq_dim=1, zigzag=True)                         # all_gather and reassemble

Each rank of the process group holds a shard of the sequence: q, k, v are
[B, S_local, N, D] (layout "BSND") or [B, N, S_local, D] ("BNSD"), the same
shape on every rank (checked with one all_gather per call; a mismatch raises
ValueError on every rank).  K/V travel around the ring (rank r sends to r+1
and receives from r-1 with isend/irecv) while the block in hand is computed;
the library call releases the GIL, so gloo's threads move the next block
during it.  After W steps every rank has attended its queries to every key.

Merging.  A block's call returns its output O_b and the row statistics of
its scores s = scale q.k: m_b = max s, l_b = sum exp(s - m_b).  The running
result is merged in fp32 (ring-flash-attention's and CANN's
FlashAttentionScore: softmax_max / softmax_sum are exactly these):
    M = max(m, m_b),  L = l exp(m - M) + l_b exp(m_b - M),
    O = (O l exp(m - M) + O_b l_b exp(m_b - M)) / L.
(M, L) are the global statistics of the rows, so the backward's block calls
get them with the merged output as attention_in: FlashAttentionScoreGrad
recomputes P = exp(s - M) / L and Drow = rowsum(dy * O), each block's dq,
dk, dv are its exact share, and dq is summed locally in fp32 while the dK/dV
accumulators (fp32) travel the ring with their K/V block, arriving home after
W sends.

Causal.  With contiguous shards (zigzag=False) rank r's queries see rank
r' < r's keys fully, its own causally, later ranks' not at all (those steps
are skipped: no call, the block still travels).  That leaves rank W-1 with W
blocks of work and rank 0 with one; zigzag=True balances it: the sequence is
cut into 2W chunks and rank r holds chunks r and 2W-1-r (shard()), so every
step is half a block of work on every rank (q x its own kv causally at step
0; then all of q x the first kv chunk when the kv came from a lower rank, or
the second q chunk x all of the kv from a higher rank) - the layout of
zhuzilin/ring-flash-attention's zigzag_ring_flash_attn.  Causal needs the
same global length for queries and keys (both origins coincide then).

Ulysses.  ulysses_attention trades the sequence shards for head shards with
one all-to-all (rank r gets heads [r N/W, (r+1) N/W) of the whole sequence),
runs attnops.flash_attn.flash_attn_func on them - any mask, window or ALiBi
it supports, the slopes of the rank's heads - and trades back; the
backward is autograd's, through the reverse all-to-alls.  N and N_kv must
divide by W, or W by N_kv (K/V heads are then repeated, their gradients
summed back).

ALiBi in the ring: each call is cut into pieces whose rows are contiguous in
the global sequence and gets their global starts as q_start_idx /
kv_start_idx, which shift CANN's generated ALiBi distance.

Not in this version (they raise NotImplementedError): dropout; sliding
windows in the ring; TND.  docs/DISTRIBUTED.md.
"""
import math

import torch
import torch.distributed as dist

from . import _fa, flash_attn, ops

_FLT_MAX = 3.4028234663852886e38
_LAYOUT_SEQ_DIM = {"BSND": 1, "BNSD": 2}
_DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


# ---- sharding ---------------------------------------------------------------------------
def _chunks_of(rank, world_size, zigzag):
    """The sequence chunks rank holds, in order: (rank,) of W, or (rank, 2W-1-rank) of 2W."""
    return (rank, 2 * world_size - 1 - rank) if zigzag else (rank,)


def shard(x, rank, world_size, *, seq_dim=1, zigzag=False):
    """rank's part of the full sequence x (a contiguous copy): the rank-th of W equal chunks along
    seq_dim, or with zigzag the chunks rank and 2W-1-rank of 2W, concatenated."""
    pieces = 2 * world_size if zigzag else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"attnops.distributed.shard: rank {rank} is not in [0, {world_size})")
    if x.shape[seq_dim] % pieces:
        raise ValueError(f"attnops.distributed.shard: the sequence length {x.shape[seq_dim]} (dim {seq_dim}) does "
                         f"not split into {pieces} equal chunks")
    chunks = x.chunk(pieces, dim=seq_dim)
    return torch.cat([chunks[c] for c in _chunks_of(rank, world_size, zigzag)], dim=seq_dim).contiguous()


def merge_shards(shards, *, seq_dim=1, zigzag=False):
    """The full sequence from every rank's shard (shards[r] = shard(x, r, W, ...)): shard's inverse."""
    world_size = len(shards)
    chunks = [None] * (2 * world_size if zigzag else world_size)
    for rank, local in enumerate(shards):
        held = _chunks_of(rank, world_size, zigzag)
        for c, piece in zip(held, local.chunk(len(held), dim=seq_dim)):
            chunks[c] = piece
    return torch.cat(chunks, dim=seq_dim)


def unshard(local, *, group=None, seq_dim=1, zigzag=False):
    """The full sequence on every rank: all_gather of the shards, then merge_shards."""
    gathered = [torch.empty_like(local) for _ in range(dist.get_world_size(group))]
    dist.all_gather(gathered, local.contiguous(), group=group)
    return merge_shards(gathered, seq_dim=seq_dim, zigzag=zigzag)


# ---- the ring ---------------------------------------------------------------------------------
class _Ring:
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


_KV_TAG, _DKV_TAG = 0, 2


class _Plan:
    """One call's fixed arguments: the ring, the layout, the mask rule, the library's keyword args."""

    def __init__(self, ring, layout, head_num, scale, causal, zigzag, zigzag_shards, pse):
        self.ring, self.layout, self.causal, self.zigzag = ring, layout, causal, zigzag
        self.zigzag_shards = zigzag_shards  # the shards' layout (zigzag: causal balancing of the steps)
        self.seq_dim = _LAYOUT_SEQ_DIM[layout]
        self.pse = pse  # ALiBi: dict(pse=slopes, pse_type=2 or 3), or None
        self.full = ops._call_kwargs(head_num, layout, dict(scale=scale, **(pse or {})))
        self.diagonal = ops._call_kwargs(head_num, layout, dict(
            scale=scale, atten_mask=flash_attn._compressed_mask(), sparse_mode=3, next_tokens=0, **(pse or {})))

    def calls(self, src, s_q, s_kv):
        """The library calls of the step that holds rank src's K/V: (query rows, key rows, kwargs).  With
        ALiBi the distance needs the rows' global positions, so each call is cut into pieces whose rows are
        contiguous in the global sequence (one chunk of a zigzag shard), and each piece gets its chunks'
        start indices (q_start_idx / kv_start_idx shift only the ALiBi distance; the causal mask of a
        diagonal piece stays local)."""
        if self.pse is None:
            return self.blocks(src, s_q, s_kv)
        pieces = []
        for q_rows, kv_rows, kw in self.blocks(src, s_q, s_kv):
            for q_chunk, q_start, q_piece in self._chunks(self.ring.rank, s_q, q_rows):
                for kv_chunk, kv_start, kv_piece in self._chunks(src, s_kv, kv_rows):
                    if kw is self.diagonal and kv_chunk > q_chunk:
                        continue  # keys after every query of the piece
                    piece_kw = self.diagonal if kw is self.diagonal and kv_chunk == q_chunk else self.full
                    pieces.append((q_piece, kv_piece, dict(piece_kw, q_start_idx=[q_start],
                                                           kv_start_idx=[kv_start])))
        return pieces

    def _chunks(self, rank, length, rows):
        """(chunk id, global start, local rows) of the shard's chunks that `rows` covers (whole chunks)."""
        if not self.zigzag_shards:
            return [(rank, rank * length + (rows.start or 0), rows)]
        half = length // 2
        held = zip(_chunks_of(rank, self.ring.world_size, True), (slice(0, half), slice(half, length)))
        lo, hi = rows.start or 0, length if rows.stop is None else rows.stop
        return [(chunk, chunk * half, local) for chunk, local in held if lo <= local.start and local.stop <= hi]

    def blocks(self, src, s_q, s_kv):
        """The calls of the step that holds rank src's K/V: (query rows, key rows, kwargs) with rows
        as slices of the local sequence."""
        rank, every = self.ring.rank, slice(None)
        if not self.causal:
            return [(every, every, self.full)]
        if src == rank:
            return [(every, every, self.diagonal)]
        if not self.zigzag:
            return [(every, every, self.full)] if src < rank else []
        if src < rank:  # kv chunks (src, 2W-1-src): the first is before both q chunks, the second after
            return [(every, slice(0, s_kv // 2), self.full)]
        return [(slice(s_q // 2, None), every, self.full)]  # only q chunk 2W-1-rank sees kv from a higher rank

    def rows(self, t, rows):
        """t's rows (sequence positions) of a slice, as a view."""
        index = [slice(None)] * t.dim()
        index[self.seq_dim] = rows
        return t[tuple(index)]

    def stat_rows(self, t, rows):
        """Rows of a [B, N, S(, 8)] statistic."""
        return t[:, :, rows]

    def to_layout(self, w):
        """A [B, N, S] weight broadcast against the layout's [.., D]."""
        return (w.transpose(1, 2) if self.layout == "BSND" else w).unsqueeze(-1)


def _merge(plan, acc, rows, out_b, smax_b, ssum_b):
    """Merge one block's (O_b, m_b, l_b) into the running fp32 (O, m, l) of the local rows `rows`."""
    out, row_max, row_sum = acc
    m_b, l_b = smax_b[..., 0], ssum_b[..., 0]
    l_b = torch.where(m_b == -_FLT_MAX, torch.zeros_like(l_b), l_b)  # a row that saw no key adds nothing
    m_rows, l_rows, out_rows = plan.stat_rows(row_max, rows), plan.stat_rows(row_sum, rows), plan.rows(out, rows)
    m_new = torch.maximum(m_rows, m_b)
    w_old, w_b = l_rows * torch.exp(m_rows - m_new), l_b * torch.exp(m_b - m_new)
    l_new = w_old + w_b
    safe = torch.where(l_new > 0, l_new, torch.ones_like(l_new))
    out_rows.copy_(out_rows * plan.to_layout(w_old / safe) + out_b.float() * plan.to_layout(w_b / safe))
    m_rows.copy_(m_new)
    l_rows.copy_(l_new)


def _finish_stats(row_max, row_sum):
    """The global softmax_max / softmax_sum [B, N, S, 8] (f32) of the merged rows; rows that saw no key
    get CANN's sentinels (max -FLT_MAX, sum FLT_MAX), as the library's own call gives them."""
    empty = row_sum == 0
    smax = torch.where(empty, torch.full_like(row_max, -_FLT_MAX), row_max)
    ssum = torch.where(empty, torch.full_like(row_sum, _FLT_MAX), row_sum)
    return (smax.unsqueeze(-1).expand(*smax.shape, 8).contiguous(),
            ssum.unsqueeze(-1).expand(*ssum.shape, 8).contiguous())


def _ring_forward(plan, q, k, v):
    """(out in q's dtype, softmax_max, softmax_sum) of the local queries against every rank's keys."""
    stat = _fa.stat_shape(q, plan.full["head_num"], plan.layout)[:3]
    out = torch.zeros(_fa.out_shape(q, k, v, plan.full["head_num"], plan.layout), dtype=torch.float32)
    acc = (out, torch.full(stat, -_FLT_MAX), torch.zeros(stat))  # a row that sees no key keeps out = 0
    ring, kv = plan.ring, (k.contiguous(), v.contiguous())
    s_q, s_kv = q.shape[plan.seq_dim], k.shape[plan.seq_dim]
    for step in range(ring.world_size):
        wait_kv = ring.start(kv, _KV_TAG) if step + 1 < ring.world_size else None
        src = (ring.rank - step) % ring.world_size
        for q_rows, kv_rows, kw in plan.calls(src, s_q, s_kv):
            out_b, smax_b, ssum_b = _fa.forward(plan.rows(q, q_rows), plan.rows(kv[0], kv_rows),
                                                plan.rows(kv[1], kv_rows), kw)
            _merge(plan, acc, q_rows, out_b, smax_b, ssum_b)
        if wait_kv:
            kv = wait_kv()
    return (out.to(q.dtype), *_finish_stats(acc[1], acc[2]))


def _ring_backward(plan, q, k, v, out, smax, ssum, dy):
    """(dq, dk, dv) of the local shards: each step's block gradients with the global statistics.  The
    dK/dV accumulators (fp32) travel with their K/V block, one step behind it, so that a step's compute
    hides the previous accumulator's transfer; after W sends each is home."""
    ring = plan.ring
    dq = torch.zeros(q.shape, dtype=torch.float32)
    kv = (k.contiguous(), v.contiguous())
    dkv, wait_dkv = (torch.zeros(k.shape), torch.zeros(v.shape)), None
    s_q, s_kv = q.shape[plan.seq_dim], k.shape[plan.seq_dim]
    dy = dy.contiguous()
    for step in range(ring.world_size):
        wait_kv = ring.start(kv, _KV_TAG) if step + 1 < ring.world_size else None
        src = (ring.rank - step) % ring.world_size
        grads = [(q_rows, kv_rows, *_fa.backward(
            plan.rows(q, q_rows), plan.rows(kv[0], kv_rows), plan.rows(kv[1], kv_rows), plan.rows(dy, q_rows),
            plan.rows(out, q_rows), plan.stat_rows(smax, q_rows), plan.stat_rows(ssum, q_rows), kw)[:3])
            for q_rows, kv_rows, kw in plan.calls(src, s_q, s_kv)]
        if wait_dkv:
            dkv = wait_dkv()  # the accumulator of the block in hand
        for q_rows, kv_rows, dq_b, dk_b, dv_b in grads:
            plan.rows(dq, q_rows).add_(dq_b)
            plan.rows(dkv[0], kv_rows).add_(dk_b)
            plan.rows(dkv[1], kv_rows).add_(dv_b)
        wait_dkv = ring.start(dkv, _DKV_TAG)
        if wait_kv:
            kv = wait_kv()
    dk, dv = wait_dkv()
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class _RingAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, plan):
        out, smax, ssum = _ring_forward(plan, q.detach(), k.detach(), v.detach())
        ctx.plan = plan
        ctx.save_for_backward(q, k, v, out, smax, ssum)
        return out

    @staticmethod
    def backward(ctx, dy):
        q, k, v, out, smax, ssum = ctx.saved_tensors
        dq, dk, dv = _ring_backward(ctx.plan, q.detach(), k.detach(), v.detach(), out, smax, ssum, dy)
        return dq, dk, dv, None


def _check_same_everywhere(op, ring, q, k, v, signature):
    """Every rank must make the same call: one all_gather of the shapes, dtypes and options."""
    mine = torch.tensor([*q.shape, *k.shape, *v.shape, *signature], dtype=torch.int64)
    every = [torch.empty_like(mine) for _ in range(ring.world_size)]
    dist.all_gather(every, mine, group=ring.group)
    for r, theirs in enumerate(every):
        if not torch.equal(theirs, mine):
            raise ValueError(f"attnops.distributed.{op}: rank {r} calls with shapes / options {theirs.tolist()}, "
                             f"rank {ring.rank} with {mine.tolist()} (q, k, v shapes, dtypes, layout and options "
                             "must agree on every rank)")


def _check_inputs(op, q, k, v, layout):
    if layout not in _LAYOUT_SEQ_DIM:
        raise NotImplementedError(f"attnops.distributed.{op}: layout {layout!r} is not supported; use one of "
                                  f"{', '.join(_LAYOUT_SEQ_DIM)}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"attnops.distributed.{op}: {name} must have rank 4 ({layout}), got shape "
                             f"{tuple(t.shape)}")
        if t.dtype not in _DTYPE_CODES:
            raise TypeError(f"attnops.distributed.{op}: {name} has dtype {t.dtype}; float32, float16 or bfloat16 "
                            "are supported")


def ring_attention(q, k, v, *, group=None, causal=False, zigzag=False, scale=None, layout="BSND", dropout_p=0.0,
                   alibi_slopes=None, pse_type=2, window_size=(-1, -1)):
    """Attention of this rank's query shard against the keys of every rank of `group` (default: the
    world): out, the local shard of the output, differentiable in q, k, v.  zigzag=True: the shards are
    shard(..., zigzag=True)'s (causal load balancing).  scale defaults to D^-0.5.  alibi_slopes (f32 [N]
    or [B, N]) add CANN's generated ALiBi at the global positions: -slope |i - j| (pse_type 2) or
    -slope sqrt|i - j| (pse_type 3)."""
    if dropout_p != 0.0 or tuple(window_size) != (-1, -1):
        raise NotImplementedError("attnops.distributed.ring_attention: dropout and sliding windows are not "
                                  "supported yet (ulysses_attention has windows; docs/DISTRIBUTED.md)")
    if alibi_slopes is not None and (pse_type not in (2, 3) or alibi_slopes.dtype != torch.float32):
        raise ValueError(f"attnops.distributed.ring_attention: ALiBi takes float32 slopes and pse_type 2 or 3, got "
                         f"{alibi_slopes.dtype} and pse_type {pse_type}")
    _check_inputs("ring_attention", q, k, v, layout)
    ring = _Ring(group)
    seq_dim = _LAYOUT_SEQ_DIM[layout]
    _check_same_everywhere("ring_attention", ring, q, k, v, (
        _DTYPE_CODES[q.dtype], _DTYPE_CODES[k.dtype], _DTYPE_CODES[v.dtype], seq_dim, int(causal), int(zigzag),
        0 if alibi_slopes is None else pse_type))
    if causal and q.shape[seq_dim] != k.shape[seq_dim]:
        raise ValueError(f"attnops.distributed.ring_attention: causal needs as many keys as queries per rank, got "
                         f"{q.shape[seq_dim]} and {k.shape[seq_dim]}")
    if zigzag and (q.shape[seq_dim] % 2 or k.shape[seq_dim] % 2):
        raise ValueError(f"attnops.distributed.ring_attention: a zigzag shard holds two equal chunks; the lengths "
                         f"{q.shape[seq_dim]} (q) and {k.shape[seq_dim]} (k) must be even")
    head_num = q.shape[2] if layout == "BSND" else q.shape[1]
    pse = None if alibi_slopes is None else dict(pse=alibi_slopes.contiguous(), pse_type=pse_type)
    plan = _Plan(ring, layout, head_num, q.shape[-1] ** -0.5 if scale is None else scale, causal,
                 causal and zigzag, zigzag, pse)
    return _RingAttention.apply(q, k, v, plan)


# ---- Ulysses: all-to-all between sequence shards and head shards --------------------------------
def _all_to_all(x, group, scatter_dim, gather_pieces):
    """Cut x into W pieces along scatter_dim, send piece j to rank j -> the W pieces received, in rank
    order, for gather_pieces to put together."""
    world_size = dist.get_world_size(group)
    sent = torch.stack(x.chunk(world_size, dim=scatter_dim)).contiguous()
    received = torch.empty_like(sent)
    dist.all_to_all_single(received, sent, group=group)
    return gather_pieces(list(received.unbind(0)))


class _Regroup(torch.autograd.Function):
    """to_heads: [.., S_local, .., N, ..] sequence shards -> [.., S, .., N / W, ..] head shards; otherwise
    the way back.  The backward is the other direction (the layout's seq and head dims, zigzag or
    contiguous shards)."""

    @staticmethod
    def forward(ctx, x, to_heads, group, seq_dim, head_dim, zigzag):
        ctx.to_heads, ctx.args = to_heads, (group, seq_dim, head_dim, zigzag)
        return (_seq_to_heads if to_heads else _heads_to_seq)(x, *ctx.args)

    @staticmethod
    def backward(ctx, dy):
        return (_heads_to_seq if ctx.to_heads else _seq_to_heads)(dy, *ctx.args), None, None, None, None, None


def _seq_to_heads(x, group, seq_dim, head_dim, zigzag):
    return _all_to_all(x, group, head_dim, lambda pieces: merge_shards(pieces, seq_dim=seq_dim, zigzag=zigzag))


def _heads_to_seq(x, group, seq_dim, head_dim, zigzag):
    world_size = dist.get_world_size(group)
    # piece j of the scatter must be rank j's sequence shard: reorder so that chunk() cuts them out
    ordered = torch.cat([shard(x, r, world_size, seq_dim=seq_dim, zigzag=zigzag) for r in range(world_size)],
                        dim=seq_dim) if zigzag else x
    return _all_to_all(ordered, group, seq_dim, lambda pieces: torch.cat(pieces, dim=head_dim))


def ulysses_attention(q, k, v, *, group=None, causal=False, window_size=(-1, -1), alibi_slopes=None, scale=None,
                      layout="BSND", zigzag=False, dropout_p=0.0):
    """Attention of this rank's query shard against the whole sequence by head parallelism: out, the local
    shard of the output, differentiable in q, k, v.  causal, window_size and alibi_slopes (f32 [N], of all
    the heads) have flash_attn_func's meanings on the global sequence; zigzag: the shards are
    shard(..., zigzag=True)'s."""
    if dropout_p != 0.0:
        raise NotImplementedError("attnops.distributed.ulysses_attention: dropout is not supported yet "
                                  "(docs/DISTRIBUTED.md)")
    _check_inputs("ulysses_attention", q, k, v, layout)
    ring = _Ring(group)
    w = ring.world_size
    seq_dim, head_dim = _LAYOUT_SEQ_DIM[layout], 3 - _LAYOUT_SEQ_DIM[layout]
    window = tuple(window_size)
    _check_same_everywhere("ulysses_attention", ring, q, k, v, (
        _DTYPE_CODES[q.dtype], _DTYPE_CODES[k.dtype], _DTYPE_CODES[v.dtype], seq_dim, int(causal), int(zigzag),
        *window, int(alibi_slopes is not None)))
    n, n_kv = q.shape[head_dim], k.shape[head_dim]
    if n % w or (n_kv % w and w % n_kv):
        raise ValueError(f"attnops.distributed.ulysses_attention: {n} query heads and {n_kv} key/value heads "
                         f"cannot be shared by {w} ranks (N and N_kv must divide by W, or W by N_kv)")
    if n_kv % w:  # W / N_kv ranks share each kv head: repeat it (autograd sums its gradients back)
        k, v = (t.repeat_interleave(w // math.gcd(n_kv, w), dim=head_dim) for t in (k, v))
    slopes = None
    if alibi_slopes is not None:
        if tuple(alibi_slopes.shape) != (n,):
            raise ValueError(f"attnops.distributed.ulysses_attention: alibi_slopes must be [{n}] (every head's), got "
                             f"{tuple(alibi_slopes.shape)}")
        slopes = alibi_slopes.chunk(w)[ring.rank].contiguous()
    heads = [_Regroup.apply(t, True, group, seq_dim, head_dim, zigzag) for t in (q, k, v)]
    if layout == "BNSD":  # flash_attn_func takes [B, S, N, D]: strided views, no copies
        heads = [t.transpose(1, 2) for t in heads]
    out = flash_attn.flash_attn_func(*heads, softmax_scale=scale, causal=causal, window_size=window,
                                     alibi_slopes=slopes)
    if layout == "BNSD":
        out = out.transpose(1, 2)
    return _Regroup.apply(out, False, group, seq_dim, head_dim, zigzag)
