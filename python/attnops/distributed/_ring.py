"""Ring attention: each rank's queries against every rank's K/V block as the blocks travel the ring.

Shapes: q [B, S_q/W, N, D] (BSND), [B, N, S_q/W, D] (BNSD) or [T_q/W, N, D] (TND: every sequence's
shard, concatenated); k, v the same with S_kv (T_kv) and N_kv heads.  The running result is the fp32
output [.., Dv] and the rows' statistics m, l: [B, N, S_q/W] padded, [N, T_q/W] TND.
"""
from itertools import accumulate

import torch

from .. import _fa, flash_attn, ops
from .._lib import INT32_MAX
from ._common import (DTYPE_CODES, SEQ_DIM, Ring, check_inputs, check_same_everywhere, dropout_seed, keep_code,
                      window as _window)
from ._shards import chunks_of, seqlens_list

_FLT_MAX = 3.4028234663852886e38
_KV_TAG, _DKV_TAG = 0, 2


class _Rows:
    """Where the rows of the shards lie in the global sequences.  global_q / global_kv: the lengths of
    the sequences ([S] padded, one per sequence in TND); every rank holds one chunk of each
    sequence (two with zigzag), of chunk_q[b] / chunk_kv[b] rows.  Inside the ring a TND shard is
    kept position-major (every sequence's first chunk, then every sequence's second), so that each chunk
    position is one slice of rows; `perm_q` / `perm_kv` map that order to the caller's (None: the same)."""

    def __init__(self, world_size, zigzag, tnd, global_q, global_kv):
        self.world_size, self.zigzag, self.tnd = world_size, zigzag, tnd
        pieces = (2 if zigzag else 1) * world_size
        self.global_q, self.global_kv = global_q, global_kv
        self.chunk_q = [n // pieces for n in global_q]
        self.chunk_kv = [n // pieces for n in global_kv]
        self.perm_q = self._position_major(self.chunk_q)
        self.perm_kv = self._position_major(self.chunk_kv)

    def _position_major(self, chunk):
        if not (self.tnd and self.zigzag) or len(chunk) == 1:
            return None
        starts = [2 * x for x in accumulate(chunk[:-1], initial=0)]  # sequence b's first local row
        return torch.cat([torch.arange(s + p * n, s + (p + 1) * n) for p in range(2) for s, n in zip(starts, chunk)])

    def chunks(self, rank, kv):
        """(chunk id, local rows) of each chunk position of rank's shard."""
        width = sum(self.chunk_kv if kv else self.chunk_q)
        return [(c, slice(p * width, (p + 1) * width))
                for p, c in enumerate(chunks_of(rank, self.world_size, self.zigzag))]


def _to_internal(t, perm):
    return t if perm is None else t.index_select(0, perm)


def _from_internal(t, perm):
    return t if perm is None else torch.empty_like(t).index_copy_(0, perm, t)


class _Plan:
    """One call's fixed arguments: the ring, the rows, the mask rule, the library's keyword args."""

    def __init__(self, ring, layout, head_num, scale, band, bottom_right, rows, pse, dropout):
        self.ring, self.layout, self.rows_of = ring, layout, rows
        self.seq_dim = SEQ_DIM[layout]
        self.band = band  # flash-attn's (left, right) on the global sequence, -1 = unbounded
        self.bottom_right = bottom_right  # the band's origin: the last query sees the last key
        self.head_num = head_num
        self.pse = pse  # ALiBi: dict(pse=slopes, pse_type=2 or 3), or None
        self.dropout = dropout  # dict(keep_prob=, seed=, offset=), or None
        tnd = dict(softmax_in_layout="same_as_input") if layout == "TND" else {}
        common = dict(scale=scale, **(pse or {}), **(dropout or {}), **tnd)
        self.full = dict(head_num=head_num, input_layout=layout, **common)
        self.diagonal = dict(self.full, atten_mask=flash_attn._compressed_mask(), sparse_mode=3, next_tokens=0)
        square = rows.global_q == rows.global_kv
        # Full attention, or causal on equal lengths, without ALiBi or dropout, is the same for any row
        # order: whole shards per call.  Otherwise each call is a piece of rows contiguous in the globals.
        self.whole_blocks = layout != "TND" and pse is None and dropout is None and (
            band == (-1, -1) or (band == (-1, 0) and square))
        # TND: one call per chunk pair serves every sequence unless their starts or bands differ (CANN's
        # start indices and tokens are one value for all): ALiBi, windows, causal on unequal lengths
        self.per_sequence = layout == "TND" and (pse is not None or band not in ((-1, -1), (-1, 0)) or (
            band == (-1, 0) and not square))
        self._pieces = {}

    def calls(self, src):
        """The library calls of the step that holds rank src's K/V: (query rows, key rows, kwargs)."""
        if self.whole_blocks:
            return self._whole_blocks(src)
        if src not in self._pieces:
            self._pieces[src] = self._cut_per_sequence(src) if self.per_sequence else self._cut(src)
        return self._pieces[src]

    def _whole_blocks(self, src):
        """Full or causal on whole (or half) shards: rows as slices of the local sequence."""
        rank, every = self.ring.rank, slice(None)
        if self.band == (-1, -1):
            return [(every, every, self.full)]
        if src == rank:
            return [(every, every, self.diagonal)]
        if not self.rows_of.zigzag:
            return [(every, every, self.full)] if src < rank else []
        s_q, s_kv = self.rows_of.chunk_q[0] * 2, self.rows_of.chunk_kv[0] * 2
        if src < rank:  # kv chunks (src, 2W-1-src): the first is before both q chunks, the second after
            return [(every, slice(0, s_kv // 2), self.full)]
        return [(slice(s_q // 2, None), every, self.full)]  # only q chunk 2W-1-rank sees kv from a higher rank

    def _cut(self, src):
        """Each (query chunk, key chunk) pair as a call: its global starts as q_start_idx / kv_start_idx
        (ALiBi's distance) and as a dropout block (the whole sequence's Philox positions), the band in
        its own coordinates (skipped where it has no element), and in TND its sequences' lengths."""
        rows, pieces = self.rows_of, []
        for c_q, q_rows in rows.chunks(self.ring.rank, kv=False):
            for c_kv, kv_rows in rows.chunks(src, kv=True):
                q_starts = [c_q * n for n in rows.chunk_q]
                kv_starts = [c_kv * n for n in rows.chunk_kv]
                mask = self._mask(q_starts, kv_starts)
                if mask is None:
                    continue
                kw = dict(self.full, **mask)
                if self.pse is not None:  # padded: one start serves every batch
                    kw.update(q_start_idx=q_starts[:1], kv_start_idx=kv_starts[:1])
                if rows.tnd:
                    kw.update(actual_seq_qlen=list(accumulate(rows.chunk_q)),
                              actual_seq_kvlen=list(accumulate(rows.chunk_kv)))
                if self.dropout is not None:
                    lens = (list(accumulate(rows.global_q)), list(accumulate(rows.global_kv))) if rows.tnd else \
                        (rows.global_q, rows.global_kv)
                    kw.update(ops.dropout_block_args(_fa.DropoutBlock(self.head_num, 0, *lens, q_starts, kv_starts)))
                pieces.append((q_rows, kv_rows, kw))
        return pieces

    def _cut_per_sequence(self, src):
        """TND, each (query chunk, key chunk) pair of each sequence as a call of one sequence, with its own
        starts, band and ALiBi slopes.  The dropout block of a one-sequence call is batch 0 of a whole
        call of that sequence alone; the stream offset moves it to the sequence's place in the whole
        call's stream (a multiple of 16 bytes: the offset's unit)."""
        rows, pieces = self.rows_of, []
        before_q, before_kv = (list(accumulate(chunk[:-1], initial=0)) for chunk in (rows.chunk_q, rows.chunk_kv))
        stream_base = list(accumulate((self.head_num * s_q * -(-s_kv // 16) * 16 for s_q, s_kv in
                                       zip(rows.global_q, rows.global_kv)), initial=0))
        for c_q, q_pos in rows.chunks(self.ring.rank, kv=False):
            for c_kv, kv_pos in rows.chunks(src, kv=True):
                for b, (len_q, len_kv) in enumerate(zip(rows.chunk_q, rows.chunk_kv)):
                    q0, kv0 = c_q * len_q, c_kv * len_kv
                    mask = self._sequence_band(b, q0, kv0) if len_q and len_kv else None
                    if mask is None:
                        continue
                    kw = dict(self.full, **mask, actual_seq_qlen=[len_q], actual_seq_kvlen=[len_kv])
                    if self.pse is not None:
                        slopes = self.pse["pse"]
                        kw.update(pse=slopes[b] if slopes.dim() == 2 else slopes, q_start_idx=[q0],
                                  kv_start_idx=[kv0])
                    if self.dropout is not None:
                        block = _fa.DropoutBlock(self.head_num, 0, [rows.global_q[b]], [rows.global_kv[b]], [q0],
                                                 [kv0])
                        kw.update(offset=self.dropout["offset"] + stream_base[b], **ops.dropout_block_args(block))
                    q_rows = slice(q_pos.start + before_q[b], q_pos.start + before_q[b] + len_q)
                    kv_rows = slice(kv_pos.start + before_kv[b], kv_pos.start + before_kv[b] + len_kv)
                    pieces.append((q_rows, kv_rows, kw))
        return pieces

    def _mask(self, q_starts, kv_starts):
        """The piece's mask arguments, one for all its sequences: None when the band masks every element,
        {} when none.  In TND (full, or causal on square sequences: _cut_per_sequence takes the rest) a
        sequence of one row per chunk sees its whole piece ({}) where the others need the band, which
        covers it too."""
        rows = self.rows_of
        seen = [self._sequence_band(b, q0, kv0) for b, (q0, kv0) in enumerate(zip(q_starts, kv_starts))
                if rows.chunk_q[b] and rows.chunk_kv[b]]  # one entry for the padded layouts
        if all(m is None for m in seen):
            return None
        bands = [m for m in seen if m]
        if None in seen or any(m != bands[0] for m in bands):
            raise NotImplementedError("attnops.distributed.ring_attention: the sequences of a block need different "
                                      "masks")
        return bands[0] if bands else {}

    def _sequence_band(self, b, q_start, kv_start):
        """_band_args of sequence b's chunks starting at q_start / kv_start, from the band's origin."""
        rows = self.rows_of
        align = rows.global_kv[b] - rows.global_q[b] if self.bottom_right else 0
        return _band_args(self.band, q_start, kv_start, rows.chunk_q[b], rows.chunk_kv[b], align)

    def rows(self, t, rows):
        """t's rows (sequence positions) of a slice, as a view."""
        index = [slice(None)] * t.dim()
        index[self.seq_dim] = rows
        return t[tuple(index)]

    def stat_rows(self, t, rows):
        """Rows of a statistic: [B, N, S(, 8)], or [T, N(, 8)] in TND (softmax_in_layout "same_as_input")."""
        return t[rows] if self.layout == "TND" else t[:, :, rows]

    def to_layout(self, w):
        """A statistic-shaped weight broadcast against the layout's [.., D]."""
        return (w if self.layout in ("BNSD", "TND") else w.transpose(-1, -2)).unsqueeze(-1)


def _band_args(band, q_start, kv_start, len_q, len_kv, align):
    """The mask of the piece of global rows [q_start, + len_q) x [kv_start, + len_kv) of flash-attn's band
    (left, right) whose diagonal is j - i = align: None when it masks every element, {} when none, else
    the band as sparse_mode 4 (whose tokens count from the bottom-right corner).  Query i sees key j iff
    -left <= j - i - align <= right."""
    left, right = band
    shift = kv_start - q_start - align  # j - i in the piece's own coordinates is the global j - i minus this
    lo = None if left < 0 else -left - shift
    hi = None if right < 0 else right - shift
    if (hi is not None and hi < 1 - len_q) or (lo is not None and lo > len_kv - 1):
        return None
    if (lo is None or lo <= 1 - len_q) and (hi is None or hi >= len_kv - 1):
        return {}
    pre = INT32_MAX if lo is None else -lo - len_q + len_kv
    nxt = INT32_MAX if hi is None else hi + len_q - len_kv
    return dict(atten_mask=flash_attn._compressed_mask(), sparse_mode=4, pre_tokens=pre, next_tokens=nxt)


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
    """The global softmax_max / softmax_sum [.., 8] (f32) of the merged rows; rows that saw no key get
    CANN's sentinels (max -FLT_MAX, sum FLT_MAX), as the library's own call gives them."""
    empty = row_sum == 0
    smax = torch.where(empty, torch.full_like(row_max, -_FLT_MAX), row_max)
    ssum = torch.where(empty, torch.full_like(row_sum, _FLT_MAX), row_sum)
    return (smax.unsqueeze(-1).expand(*smax.shape, 8).contiguous(),
            ssum.unsqueeze(-1).expand(*ssum.shape, 8).contiguous())


def _ring_forward(plan, q, k, v):
    """(out in q's dtype, softmax_max, softmax_sum) of the local queries against every rank's keys."""
    n = plan.head_num
    out_shape, stat_shape = _fa.output_shapes(q, k, v, n, plan.layout)
    stat = stat_shape[:-1]
    out = torch.zeros(out_shape, dtype=torch.float32)
    acc = (out, torch.full(stat, -_FLT_MAX), torch.zeros(stat))  # a row that sees no key keeps out = 0
    ring, kv = plan.ring, (k.contiguous(), v.contiguous())
    for step in range(ring.world_size):
        wait_kv = ring.start(kv, _KV_TAG) if step + 1 < ring.world_size else None
        src = (ring.rank - step) % ring.world_size
        for q_rows, kv_rows, kw in plan.calls(src):
            out_b, smax_b, ssum_b = ops.flash_attention_score(plan.rows(q, q_rows), plan.rows(kv[0], kv_rows),
                                                              plan.rows(kv[1], kv_rows), **kw)
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
    dy = dy.contiguous()
    for step in range(ring.world_size):
        wait_kv = ring.start(kv, _KV_TAG) if step + 1 < ring.world_size else None
        src = (ring.rank - step) % ring.world_size
        grads = [(q_rows, kv_rows, *ops.flash_attention_score_grad(
            plan.rows(q, q_rows), plan.rows(kv[0], kv_rows), plan.rows(kv[1], kv_rows), plan.rows(dy, q_rows),
            plan.rows(out, q_rows), plan.stat_rows(smax, q_rows), plan.stat_rows(ssum, q_rows), **kw)[:3])
            for q_rows, kv_rows, kw in plan.calls(src)]
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
    """The ring on the caller's tensors; inside it TND shards are position-major (_Rows)."""

    @staticmethod
    def forward(ctx, q, k, v, plan):
        rows = plan.rows_of
        q_in = _to_internal(q.detach(), rows.perm_q)
        k_in, v_in = (_to_internal(t.detach(), rows.perm_kv) for t in (k, v))
        out, smax, ssum = _ring_forward(plan, q_in, k_in, v_in)
        ctx.plan = plan
        ctx.save_for_backward(q_in, k_in, v_in, out, smax, ssum)
        return _from_internal(out, rows.perm_q)

    @staticmethod
    def backward(ctx, dy):
        plan, rows = ctx.plan, ctx.plan.rows_of
        dq, dk, dv = _ring_backward(plan, *ctx.saved_tensors, _to_internal(dy, rows.perm_q))
        return (_from_internal(dq, rows.perm_q), _from_internal(dk, rows.perm_kv), _from_internal(dv, rows.perm_kv),
                None)


def _global_lengths(op, q, k, layout, world_size, pieces, cu_seqlens_q, cu_seqlens_k):
    """The global sequence lengths ([S] padded, per sequence in TND), checked against the shards."""
    seq_dim = SEQ_DIM[layout]
    if layout != "TND":
        if cu_seqlens_q is not None or cu_seqlens_k is not None:
            raise ValueError(f"attnops.distributed.{op}: cu_seqlens_q / cu_seqlens_k are for layout TND")
        lengths = [q.shape[seq_dim] * world_size], [k.shape[seq_dim] * world_size]
    else:
        if cu_seqlens_q is None or cu_seqlens_k is None:
            raise ValueError(f"attnops.distributed.{op}: layout TND needs cu_seqlens_q and cu_seqlens_k (the global "
                             "sequences' cumulative lengths, 0 first)")
        bounds = seqlens_list(cu_seqlens_q, op), seqlens_list(cu_seqlens_k, op)
        if len(bounds[0]) != len(bounds[1]):
            raise ValueError(f"attnops.distributed.{op}: cu_seqlens_q has {len(bounds[0])} entries, cu_seqlens_k "
                             f"{len(bounds[1])}")
        lengths = tuple([b - a for a, b in zip(x, x[1:])] for x in bounds)
        for name, t, lens in (("q", q, lengths[0]), ("k", k, lengths[1])):
            if sum(lens) != t.shape[0] * world_size:
                raise ValueError(f"attnops.distributed.{op}: {name} holds {t.shape[0]} rows, but its sequences "
                                 f"({sum(lens)} rows) give {world_size} ranks {sum(lens) / world_size:g} each")
    for what, lens in zip(("query", "key"), lengths):
        if any(n % pieces for n in lens):
            raise ValueError(f"attnops.distributed.{op}: the {what} sequence lengths {lens} must split into "
                             f"{pieces} equal chunks (world size{' x 2 with zigzag' if pieces > world_size else ''})")
    return lengths


def ring_attention(q, k, v, *, group=None, causal=False, causal_origin="bottom_right", window_size=(-1, -1),
                   zigzag=False, scale=None, layout="BSND", cu_seqlens_q=None, cu_seqlens_k=None, dropout_p=0.0,
                   seed=None, alibi_slopes=None, pse_type=2):
    """Attention of this rank's query shard against the keys of every rank of `group` (default: the
    world): out, the local shard of the output, differentiable in q, k, v.

    causal / window_size (left, right), -1 = unbounded: flash-attn's band on the global sequences,
    query i sees keys i + a - left .. i + a + right with a = S_kv - S_q (causal_origin "bottom_right",
    sparse_mode 3's origin) or a = 0 ("top_left", sparse_mode 2's); causal sets right = 0.  zigzag: the
    shards are shard(..., zigzag=True)'s (causal load balancing).  scale defaults to D^-0.5.  layout TND:
    q [T_q/W, N, D] holds every sequence's shard (shard(..., cu_seqlens=)); cu_seqlens_q / cu_seqlens_k
    are the global sequences' cumulative lengths (0 first).  dropout_p drops what the single-process call
    with the same seed drops (Philox at the global positions); seed defaults to one drawn from torch's
    default generator on rank 0.  alibi_slopes (f32 [N] or [B, N]) add CANN's generated ALiBi at the
    global positions: -slope |i - j| (pse_type 2) or -slope sqrt|i - j| (pse_type 3)."""
    op = "ring_attention"
    if alibi_slopes is not None and (pse_type not in (2, 3) or alibi_slopes.dtype != torch.float32):
        raise ValueError(f"attnops.distributed.{op}: ALiBi takes float32 slopes and pse_type 2 or 3, got "
                         f"{alibi_slopes.dtype} and pse_type {pse_type}")
    if causal_origin not in ("bottom_right", "top_left"):
        raise ValueError(f"attnops.distributed.{op}: causal_origin is {causal_origin!r}; it is 'bottom_right' or "
                         "'top_left'")
    check_inputs(op, q, k, v, layout)
    band = _window(op, causal, window_size)
    keep_prob, seed = dropout_seed(op, dropout_p, seed)
    ring = Ring(group)
    lengths = _global_lengths(op, q, k, layout, ring.world_size, ring.world_size * (2 if zigzag else 1),
                              cu_seqlens_q, cu_seqlens_k)
    seed = check_same_everywhere(op, ring, q, k, v, (
        DTYPE_CODES[q.dtype], DTYPE_CODES[k.dtype], DTYPE_CODES[v.dtype], SEQ_DIM[layout], *band,
        int(causal_origin == "top_left"), int(zigzag), 0 if alibi_slopes is None else pse_type, keep_code(keep_prob),
        *lengths[0], *lengths[1]), seed)
    head_num = q.shape[-2] if layout != "BNSD" else q.shape[1]
    pse = None if alibi_slopes is None else dict(pse=alibi_slopes.contiguous(), pse_type=pse_type)
    dropout = None if keep_prob == 1.0 else dict(keep_prob=keep_prob, seed=seed, offset=0)
    rows = _Rows(ring.world_size, zigzag, layout == "TND", *lengths)
    plan = _Plan(ring, layout, head_num, q.shape[-1] ** -0.5 if scale is None else scale, band,
                 causal_origin == "bottom_right", rows, pse, dropout)
    return _RingAttention.apply(q, k, v, plan)
