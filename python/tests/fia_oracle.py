"""An independent float64 FusedInferAttentionScore, written from the specification
(docs/FIA_SPEC.md sections 3.2-3.11, CANN's documented rules), never calling
attnops.

Per batch b, query head h (kv head h // (N1 // N2)), query row i < act_q[b], key j < act_kv[b]:
    s[i, j] = scale * (q_i . k_j + q_rope_i . k_rope_j) + pse[b|0, h, i, j]
    (the attnops extensions: softcap c > 0 makes the scaled term c tanh(term / c) before pse; alibi_slopes
    [N1] or [B, N1] add -slope[b|.][h] |i + L2 - L1 - j|, flash-attn's bottom-right ALiBi; with alibi_rule 2
    CANN's inner ALiBi, aclnnFusedInferAttentionScoreV5's pseType 2, -slope |(kv_start + j) - (q_start + i)|, and
    with 3 the square root of that distance, "-alibi_slope * sqrt(abs(i - j))" on the V5 page)
    kept(i, j): decode (one query row): not mask[b, j];
                prompt: mode 0 with a mask: not mask[i, j] and -pre <= j - i <= next
                        mode 0 without one: always;  mode 1: not mask[i, j]
                        mode 2: j <= i;  mode 3: j <= i + (L2 - L1)
                        mode 4: L2 - L1 - pre <= j - i <= L2 - L1 + next
    out_i = softmax over the kept j of s, times v;  lse_i = ln sum_j exp(s[i, j]) (kept j)
A row with no kept key, and a padded query row past act_q[b], gives out 0 and lse +inf.
int8 key/value: k_hat[n, s, d] = (k + offset) * scale, indexed by mode: 0 [n, d] (or one value), 1 [b, s],
2 [n], 3 [b, n, s]; the combined antiquant_scale / _offset lead with 2 (key, value), antiquant_mode 0 or 1.
Paged key/value: position s of batch b is row s % block_size of block block_table[b][s // block_size]
of a cache [blocks, block_size, N2 * D], [blocks, N2, block_size, D] or Ascend's NZ (fractal)
[blocks, N2, D / c0, block_size, c0]: element d of a row in chunk d // c0, at d % c0.
"""
import math

import torch


def _per_batch_q(x, layout, n, lens_q):
    """[N, S_b, D] float64 per batch of a query-like tensor (lens_q: per-batch lengths in TND)."""
    x = x.double()
    if layout == "BNSD":
        return list(x)
    if layout == "BSND":
        return [t.transpose(0, 1) for t in x]
    if layout == "BSH":
        b, s, h = x.shape
        return [t.transpose(0, 1) for t in x.reshape(b, s, n, h // n)]
    out, start = [], 0  # TND
    for length in lens_q:
        out.append(x[start:start + length].transpose(0, 1))
        start += length
    return out


def _per_batch_kv(x, layout, n2, lens_kv, block_table, block_size, d):
    """[N2, L2_b, D] float64 per batch of a key-like tensor: contiguous, or gathered through the block table."""
    if block_table is None:
        return [t[:, :length] for t, length in zip(_per_batch_q(x, layout, n2, lens_kv), lens_kv)]
    x = x.double()
    if x.dim() == 5:  # NZ: the chunks of c0 back into one head dim
        x = x.permute(0, 1, 3, 2, 4).reshape(x.shape[0], x.shape[1], x.shape[3], x.shape[2] * x.shape[4])
    cache = x.reshape(x.shape[0], x.shape[1], n2, d).transpose(1, 2) if x.dim() == 3 else x  # [blocks, N2, bs, D]
    out = []
    for b, length in enumerate(lens_kv):
        rows = [cache[int(block_table[b][s // block_size]), :, s % block_size] for s in range(length)]
        out.append(torch.stack(rows, 1) if rows else cache.new_zeros(cache.shape[1], 0, cache.shape[3]))
    return out


def _dequant(x, b, scale, offset, mode, n2, d):
    """(x + offset) * scale of batch b's [N2, L2, D] int8 rows, the parameters broadcast by mode."""
    l2 = x.shape[1]

    def spread(t):
        t = t.double()
        if mode == 0:
            return t.reshape(1, 1, 1) if t.numel() == 1 else t.reshape(n2, 1, d)
        if mode == 1:
            return t.reshape(-1, t.shape[-1])[b, :l2].reshape(1, l2, 1)
        if mode == 2:
            return t.reshape(n2, 1, 1)
        return t.reshape(-1, n2, t.shape[-1])[b, :, :l2].reshape(n2, l2, 1)
    return (x + (spread(offset) if offset is not None else 0.0)) * spread(scale)


def _kept(mode, decode, mask_b, i, j, l1, l2, pre, nxt):
    """[L1, L2] bool: which keys each query row keeps."""
    if decode:
        return ~mask_b[None, :l2] if mask_b is not None else torch.ones(l1, l2, dtype=torch.bool)
    delta = j[None, :] - i[:, None]
    if mode == 0:
        if mask_b is None:
            return torch.ones(l1, l2, dtype=torch.bool)
        return ~mask_b[:l1, :l2] & (delta >= -pre) & (delta <= nxt)
    if mode == 1:
        return ~mask_b[:l1, :l2]
    shift = l2 - l1
    if mode == 2:
        return delta <= 0
    if mode == 3:
        return delta <= shift
    return (delta >= shift - pre) & (delta <= shift + nxt)


def _mask_of_batch(mask, b, decode, mode):
    if mask is None or (mode >= 2 and not decode):
        return None
    m = mask.bool()
    if decode:  # [B, S2'], [B, 1, S2'], [B, 1, 1, S2']
        return m.reshape(m.shape[0], -1)[b]
    while m.dim() > 2:  # [S1', S2'], [B|1, S1', S2'], [B|1, 1, S1', S2']
        m = m[b if m.shape[0] > 1 else 0]
    return m


def fia(q, k, v, *, input_layout="BSH", num_heads=1, num_key_value_heads=0, scale=1.0, actual_seq_lengths=None,
        actual_seq_lengths_kv=None, block_table=None, block_size=0, atten_mask=None, sparse_mode=0,
        pre_tokens=2147483647, next_tokens=2147483647, pse_shift=None, query_rope=None, key_rope=None,
        key_antiquant_scale=None, key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None,
        key_antiquant_mode=0, value_antiquant_mode=0, antiquant_scale=None, antiquant_offset=None, antiquant_mode=0,
        softcap=0.0, alibi_slopes=None, alibi_rule=0, alibi_q_start_idx=0, alibi_kv_start_idx=0):
    """(out float64 in the output layout's shape, lse float64 [B, N1, S1] or [T1, N1])."""
    lay_in, lay_out = {"BNSD_BSND": ("BNSD", "BSND")}.get(input_layout, (input_layout, input_layout))
    n1 = num_heads
    d = q.shape[-1] // n1 if lay_in == "BSH" else q.shape[-1]
    tnd = lay_in == "TND"
    if tnd:
        cum = list(actual_seq_lengths)
        lens_q = [c - p for p, c in zip([0] + cum[:-1], cum)]
        b_count = len(lens_q)
    else:
        b_count = q.shape[0]
        s1 = q.shape[1] if lay_in in ("BSH", "BSND") else q.shape[2]
        lens_q = [s1] * b_count
        if actual_seq_lengths is not None and s1 > 1:
            vals = list(actual_seq_lengths)
            lens_q = [vals[0] if len(vals) == 1 else vals[b] for b in range(b_count)]
    decode = max(lens_q) == 1 if tnd else s1 == 1
    paged = block_table is not None
    if paged:
        n2 = k.shape[1] if k.dim() >= 4 else k.shape[-1] // d
        cap = block_table.shape[1] * block_size
    else:
        n2 = k.shape[2] if lay_in == "BSND" else k.shape[1] if lay_in in ("BNSD", "TND") else k.shape[-1] // d
        cap = k.shape[0] if tnd else (k.shape[1] if lay_in in ("BSH", "BSND") else k.shape[2])
    if v.dim() == 5:  # NZ: [blocks, N2, Dv / c0, block_size, c0]
        dv = v.shape[2] * v.shape[4]
    else:
        dv = v.shape[-1] if (v.dim() == 4 or (tnd and not paged)) else v.shape[-1] // n2
    if actual_seq_lengths_kv is None:
        lens_kv = [cap] * b_count
    else:
        vals = list(actual_seq_lengths_kv)
        if tnd and not paged:
            lens_kv = [c - p for p, c in zip([0] + vals[:-1], vals)]
        else:
            lens_kv = [vals[0] if len(vals) == 1 else vals[b] for b in range(b_count)]
    g = n1 // n2
    qs = _per_batch_q(q, lay_in, n1, lens_q)
    if tnd and not paged:
        ks = _per_batch_q(k, lay_in, n2, lens_kv)
        vs = _per_batch_q(v, lay_in, n2, lens_kv)
        krs = _per_batch_q(key_rope, lay_in, n2, lens_kv) if key_rope is not None else None
    else:
        ks = _per_batch_kv(k, lay_in, n2, lens_kv, block_table, block_size, d)
        vs = _per_batch_kv(v, lay_in, n2, lens_kv, block_table, block_size, dv)
        dr = query_rope.shape[-1] // n1 if query_rope is not None and lay_in == "BSH" else (
            query_rope.shape[-1] if query_rope is not None else 0)
        krs = _per_batch_kv(key_rope, lay_in, n2, lens_kv, block_table, block_size, dr) if key_rope is not None \
            else None
    if k.dtype == torch.int8:
        if key_antiquant_scale is None:  # the combined pair: [0] key, [1] value
            key_antiquant_scale, value_antiquant_scale = antiquant_scale[0], antiquant_scale[1]
            if antiquant_offset is not None:
                key_antiquant_offset, value_antiquant_offset = antiquant_offset[0], antiquant_offset[1]
            key_antiquant_mode = value_antiquant_mode = antiquant_mode
        ks = [_dequant(x, b, key_antiquant_scale, key_antiquant_offset, key_antiquant_mode, n2, d)
              for b, x in enumerate(ks)]
        vs = [_dequant(x, b, value_antiquant_scale, value_antiquant_offset, value_antiquant_mode, n2, dv)
              for b, x in enumerate(vs)]
    qrs = _per_batch_q(query_rope, lay_in, n1, lens_q) if query_rope is not None else None
    rows = max(lens_q) if not tnd else None
    outs, lses = [], []
    for b in range(b_count):
        l1, l2 = lens_q[b], lens_kv[b]
        s1b = l1 if tnd else rows
        out = torch.zeros(n1, s1b, dv, dtype=torch.float64)
        lse = torch.full((n1, s1b), math.inf, dtype=torch.float64)
        i, j = torch.arange(l1), torch.arange(l2)
        kept = _kept(sparse_mode, decode, _mask_of_batch(atten_mask, b, decode, sparse_mode), i, j, l1, l2,
                     pre_tokens, next_tokens)
        for h in range(n1):
            n = h // g
            s = qs[b][h, :l1] @ ks[b][n].T
            if qrs is not None:
                s = s + qrs[b][h, :l1] @ krs[b][n].T
            s = s * scale
            if softcap > 0:
                s = softcap * torch.tanh(s / softcap)
            if pse_shift is not None:
                s = s + pse_shift[b if pse_shift.shape[0] > 1 else 0, h, :l1, :l2].double()
            if alibi_slopes is not None:
                slope = (alibi_slopes[b] if alibi_slopes.dim() == 2 else alibi_slopes)[h].double()
                if alibi_rule == 0:  # flash-attn's: the diagonal at the bottom-right corner
                    dist = (i[:, None] + l2 - l1 - j[None, :]).abs().double()
                else:  # CANN's pseType 2 / 3: -slope * g(|(kv_start + j) - (q_start + i)|)
                    dist = ((alibi_kv_start_idx + j[None, :]) - (alibi_q_start_idx + i[:, None])).abs().double()
                    dist = dist.sqrt() if alibi_rule == 3 else dist
                s = s - slope * dist
            s = s.masked_fill(~kept, -math.inf)
            m = s.max(dim=1, keepdim=True).values if l2 else torch.full((l1, 1), -math.inf, dtype=torch.float64)
            valid = torch.isfinite(m[:, 0])
            w = torch.where(valid[:, None], torch.exp(s - m.where(valid[:, None], torch.zeros_like(m))),
                            torch.zeros_like(s))
            den = w.sum(1)
            o = (w / den.where(valid, torch.ones_like(den))[:, None]) @ vs[b][n] if l2 else torch.zeros(l1, dv)
            out[h, :l1] = torch.where(valid[:, None], o, torch.zeros_like(o))
            lse[h, :l1] = torch.where(valid, m[:, 0] + torch.log(den.where(valid, torch.ones_like(den))),
                                      torch.full_like(den, math.inf))
        outs.append(out)
        lses.append(lse)
    if tnd:
        out = torch.cat([o.transpose(0, 1) for o in outs])  # [T1, N1, Dv]
        return out, torch.cat([x.transpose(0, 1) for x in lses])
    out = torch.stack(outs)  # [B, N1, S1, Dv]
    lse = torch.stack(lses)
    if lay_out == "BSND":
        out = out.transpose(1, 2)
    elif lay_out == "BSH":
        out = out.transpose(1, 2).reshape(b_count, rows, n1 * dv)
    return out, lse
