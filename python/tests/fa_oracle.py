"""An independent float64 FlashAttentionScore, written from the specification
(../shared/spec/flash-attention.md sections 1-5, CANN's documented rules),
never calling attnops.  Gradients come from torch.autograd through it, so the
backward is checked against the exact derivative of the stated forward.

Per batch b and query head h (kv head h // G), batch-local i < S1, j < S2:
    s = (Q K^T + pse) * scale          pse_type 1
    s = Q K^T * scale + bias           pse_type 0 (bias = pse), 2 / 3 (generated ALiBi)
    s[i, j] = -40000 where masked(i, j)        (the golden's masked_fill)
    P = softmax_j(s),  O = (P * keep / keep_prob) V
Fully masked rows get uniform weights, or under the golden's "skip invalid
rows" conditions (spec 1.1, `skips_invalid_rows`) or inner_precise = 2 output 0
and no gradient.

CANN's backward is a formula (spec 1.2), dS = P (dP - Drow) scale, with no
mask term.  Where a row has an unmasked key, P = 0 at its masked positions and
the formula is the derivative; on a fully masked row with uniform weights it
is not (masked_fill makes those scores constants).  The oracle therefore lets
the gradient pass through the fill (straight-through), which is the formula.

softcap c > 0 (an attnops extension, flash-attn's softcap; include/attnops.h):
    s = c tanh(Q K^T scale / c) + bias, bias = pse * scale (pse_type 1), pse (0), ALiBi (2 / 3)
and a masked score is the constant -40000 with no gradient (the chain rule
through the cap: flash-attn's dS * dtanh, whose masked P are 0).
"""
import itertools
import math

import torch

MASK_FILL = -40000.0


# ---- layouts: per batch [N, S, D] views ------------------------------------------
def split_batches(x, layout, n, lens=None):
    """[N, S_b, D] float64 tensors, one per batch (lens: per-batch lengths in TND)."""
    x = x.double()
    if layout == "BNSD":
        return list(x)
    if layout == "BSND":
        return [xb.transpose(0, 1) for xb in x]
    if layout == "BSH":
        return [xb.reshape(xb.shape[0], n, -1).transpose(0, 1) for xb in x]
    if layout == "SBH":
        return [x[:, b].reshape(x.shape[0], n, -1).transpose(0, 1) for b in range(x.shape[1])]
    if layout == "TND":
        starts = [0, *itertools.accumulate(lens)]
        return [x[starts[b]:starts[b + 1]].transpose(0, 1) for b in range(len(lens))]
    raise ValueError(layout)


def join_batches(parts, layout):
    """Inverse of split_batches for the output (parts: [N, S_b, Dv])."""
    if layout == "BNSD":
        return torch.stack(parts)
    if layout == "BSND":
        return torch.stack([p.transpose(0, 1) for p in parts])
    if layout == "BSH":
        return torch.stack([p.transpose(0, 1).reshape(p.shape[1], -1) for p in parts])
    if layout == "SBH":
        return torch.stack([p.transpose(0, 1).reshape(p.shape[1], -1) for p in parts], dim=1)
    if layout == "TND":
        return torch.cat([p.transpose(0, 1) for p in parts])
    raise ValueError(layout)


# ---- masks (spec 3.2), batch-local ----------------------------------------------------
def masked_positions(mode, s1, s2, pre, nxt, prefix=None, user_mask=None, band=False):
    """Bool [S1, S2], True = masked out."""
    i = torch.arange(s1).view(-1, 1)
    j = torch.arange(s2).view(1, -1)
    if mode == 0:
        return (j - i > nxt) | (i - j > pre)
    if mode == 1:
        return user_mask.bool()
    if mode == 2:
        return j > i
    if mode == 3:
        return j - i > s2 - s1
    if mode == 4:
        return (j - i > nxt + s2 - s1) | (i - j > pre + s1 - s2)
    if mode in (5, 6):
        return (j - i > s2 - s1) & (j >= prefix)
    if mode == 7:
        return masked_positions(4 if band else 3, s1, s2, pre, nxt)
    if mode == 8:
        return masked_positions(4 if band else 2, s1, s2, pre, nxt)
    raise ValueError(mode)


def band_batch(mode, qlens):
    """Modes 7/8 (spec 3.2): the band batch is the last (7) / first (8) batch with query rows."""
    nonempty = [b for b, s in enumerate(qlens) if s]
    return nonempty[-1] if mode == 7 else nonempty[0]


def skips_invalid_rows(mode, layout, s1, s2, pre, nxt, prefix, band=False):
    """The golden's conditions for the sentinel behaviour of fully masked rows (spec 1.1), for one batch.
    Modes 7/8 (docs/NUMERICS.md): the band batch takes mode 4's rule, mode 7's other batches mode 3's,
    mode 8's other batches (mode 2, never a fully masked row) none."""
    if mode == 0:
        return (pre < 0 or nxt < 0) if layout == "TND" else (pre < s1 or nxt < s2)
    if mode == 3:
        return s1 > s2
    if mode == 4:
        return pre < 0 or nxt + s2 < s1
    if mode in (5, 6):
        return any(x == 0 for x in prefix)
    if mode == 7:
        return skips_invalid_rows(4 if band else 3, layout, s1, s2, pre, nxt, prefix)
    if mode == 8:
        return band and skips_invalid_rows(4, layout, s1, s2, pre, nxt, prefix)
    return False


def call_skips_invalid_rows(mode, layout, qlens, kvlens, pre, nxt, prefix):
    """The call's choice: in TND any batch meeting its rule selects the sentinel for every batch."""
    band = band_batch(mode, qlens) if mode in (7, 8) else None
    return any(skips_invalid_rows(mode, layout, s1, s2, pre, nxt, prefix, band=b == band)
               for b, (s1, s2) in enumerate(zip(qlens, kvlens)))


def alibi_bias(slopes, s1, s2, sqrt, q_start=0, kv_start=0):
    """pse_type 2 / 3: -slope * |delta| (or sqrt|delta|), delta = (j + kv_start) - (i + q_start); [N, S1, S2]."""
    i = torch.arange(s1, dtype=torch.float64).view(-1, 1) + q_start
    j = torch.arange(s2, dtype=torch.float64).view(1, -1) + kv_start
    dist = (j - i).abs()
    if sqrt:
        dist = dist.sqrt()
    return -slopes.double().view(-1, 1, 1) * dist


def get_slopes(n):
    """Standard ALiBi slopes (spec 4.2), computed independently of the library."""
    p = 2 ** math.floor(math.log2(n))
    base = 2.0 ** (-8.0 / p)
    slopes = [base ** (k + 1) for k in range(p)]
    if p < n:
        extra = 2.0 ** (-4.0 / p)
        slopes += [extra ** k for k in range(1, 2 * (n - p), 2)]
    return torch.tensor(slopes, dtype=torch.float32)


def attention(q, k, v, n1, layout, *, scale, sparse_mode=0, pre=2147483647, nxt=2147483647, atten_mask=None,
              prefix=None, pse=None, pse_type=1, q_start=0, kv_start=0, keep=None, keep_prob=1.0, q_rope=None,
              k_rope=None, qlens=None, kvlens=None, inner_precise=0, softcap=0.0):
    """attention_out (float64, in `layout`).  keep: u8 mask [B, N1, S1, S2] or, in TND, flat per-batch
    [N1, S1_b, S2_b] blocks; atten_mask: the user mask (mode 1 reads it, [S1,S2] or [B|1, 1|N1, S1, S2])."""
    qs, ks, vs = split_batches(q, layout, n1, qlens), None, None
    n2 = k.shape[-2] if layout in ("BSND", "TND") else (k.shape[1] if layout == "BNSD" else None)
    if n2 is None:  # BSH / SBH: N2 = hidden / D
        n2 = k.shape[-1] // (q.shape[-1] // n1)
    ks, vs = split_batches(k, layout, n2, kvlens), split_batches(v, layout, n2, kvlens)
    if q_rope is not None:
        qs = [torch.cat([a, r], -1) for a, r in zip(qs, split_batches(q_rope, layout, n1, qlens))]
        ks = [torch.cat([a, r], -1) for a, r in zip(ks, split_batches(k_rope, layout, n2, kvlens))]
    g = n1 // n2
    band = band_batch(sparse_mode, qlens) if sparse_mode in (7, 8) else None
    lens = (qlens, kvlens) if layout == "TND" else ([qs[0].shape[1]], [ks[0].shape[1]])
    skip = inner_precise == 2 or (atten_mask is not None and call_skips_invalid_rows(
        sparse_mode, layout, *lens, pre, nxt, prefix))
    outs, keep_pos = [], 0
    for b, (qb, kb, vb) in enumerate(zip(qs, ks, vs)):
        s1, s2 = qb.shape[1], kb.shape[1]
        kb, vb = kb.repeat_interleave(g, 0), vb.repeat_interleave(g, 0)
        raw = qb @ kb.transpose(1, 2)
        if softcap > 0:
            s = softcap * torch.tanh(raw * scale / softcap)
            if pse_type == 1 and pse is not None:
                s = s + _pse_block(pse, b, n1, s1, s2) * scale
            elif pse_type == 0 and pse is not None:
                s = s + _pse_block(pse, b, n1, s1, s2)
            elif pse_type in (2, 3):
                slopes = pse[b] if pse.dim() == 2 else pse
                qs0, kv0 = (q_start, kv_start) if (sparse_mode != 8 or b == 0) else (0, 0)
                s = s + alibi_bias(slopes, s1, s2, pse_type == 3, qs0, kv0)
        elif pse_type == 1 and pse is not None:
            s = (raw + _pse_block(pse, b, n1, s1, s2)) * scale
        elif pse_type == 0 and pse is not None:
            s = raw * scale + _pse_block(pse, b, n1, s1, s2)
        elif pse_type in (2, 3):
            slopes = pse[b] if pse.dim() == 2 else pse
            qs0, kv0 = (q_start, kv_start) if (sparse_mode != 8 or b == 0) else (0, 0)
            s = raw * scale + alibi_bias(slopes, s1, s2, pse_type == 3, qs0, kv0)
        else:
            s = raw * scale
        masked = torch.zeros(s1, s2, dtype=torch.bool)
        if atten_mask is not None:
            user = None
            if sparse_mode == 1:
                user = atten_mask if atten_mask.dim() == 2 else atten_mask[b if atten_mask.shape[0] > 1 else 0, 0]
                user = user[:s1, :s2]
            masked = masked_positions(sparse_mode, s1, s2, pre, nxt, None if prefix is None else prefix[b], user,
                                      band=b == band)
        if softcap > 0:
            s = s.masked_fill(masked, MASK_FILL)
        else:
            s = torch.where(masked, s - (s - MASK_FILL).detach(), s)  # value -40000, gradient passed (above)
        p = torch.softmax(s, dim=-1)
        if layout == "TND":  # the TND golden zeroes masked P after the softmax (spec 1.1)
            p = p.masked_fill(masked, 0.0)
        if skip:
            p = p.masked_fill(masked.all(dim=-1, keepdim=True), 0.0)
        if keep is not None:
            if layout == "TND":
                kb_mask = keep[keep_pos:keep_pos + n1 * s1 * s2].reshape(n1, s1, s2)
                keep_pos += n1 * s1 * s2
            else:
                kb_mask = keep[b]
            p = p * torch.as_tensor(kb_mask).double() / keep_prob
        outs.append(p @ vb)
    return join_batches(outs, layout)


def _pse_block(pse, b, n1, s1, s2):
    """The [N1, S1, S2] bias of batch b from pse [B|1, N1, S1|1, S2] (broadcast)."""
    blk = pse[b if pse.shape[0] > 1 else 0].double()
    return blk.expand(n1, s1, s2)
