"""flash-attn-style functions on attnops (flash_attn/flash_attn_interface.py of
Dao-AILab/flash-attention 2.8.3 is the interface followed; docs/PYTHON.md), so
that `import attnops.flash_attn as flash_attn` stands in for the package.

    out = flash_attn_func(q, k, v, causal=True)                 # q [B, Sq, H, D], k/v [B, Sk, Hk, D]
    out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k)   # q [total_q, H, D]
    ... the kvpacked / qkvpacked forms, and bert_padding.pad_input / unpad_input

flash-attn's conventions, mapped onto FlashAttentionScore:
  - causal is aligned bottom-right (key j visible to query i iff j <= i + Sk - Sq): sparse_mode 3;
  - window_size (left, right), -1 = unbounded: keys i + Sk - Sq - left <= j <= i + Sk - Sq + right, the
    bottom-right band of sparse_mode 4 with pre_tokens = left, next_tokens = right (causal: right = 0);
    in varlen a band of (0, 0), which CANN's TND rule (pre + next > 0) refuses, runs one call per sequence;
  - alibi_slopes f32 [H] or [B, H]: bias -slope |i + Sk - Sq - j|, pse_type 2 with the start indices
    q_start = Sk - Sq (or kv_start = Sq - Sk) that shift the distance by Sk - Sq.  With causal, flash-attn's
    CUDA kernel adds slope * j instead: the same softmax, its lse larger by slope (i + Sk - Sq) per row;
    attnops returns the documented bias's lse (docs/PYTHON.md);
  - a query row that sees no key gets output 0 and softmax_lse +inf (flash-attn's values);
  - dropout_p drops with the Ascend 950 Philox stream of a seed drawn from torch's default generator;
  - return_attn_probs: (out, softmax_lse, S_dmask), S_dmask the attention probabilities [B, H, Sq, Sk]
    (varlen: [B, H, max_seqlen_q, max_seqlen_k], zero past each sequence) in f32, negated where dropout
    drops (flash-attn's sign convention; its CUDA kernel pads the last two dims to its block size).
  - softcap > 0 (Gemma 2's soft-capping): the scaled q.k becomes softcap * tanh(q.k scale / softcap) before
    ALiBi and the mask, as flash-attn's kernel applies it (the C library's softcap attribute, forward and
    backward); softcap <= 0 is off, as in flash-attn.  flash-attn refuses softcap with dropout; attnops
    computes it (the cap, then the softmax, then the dropout).
"""
import math

import torch

from .. import _schema, dropout_mask, ops
from .._lib import INT32_MAX
from . import bert_padding  # noqa: F401  (flash_attn.bert_padding)

_KVCACHE = torch.ops.attnops.flash_attn_kvcache.default
# The fast paths' positional calls (the arguments they pass, in the schema's order, checked at import): how many
# positional arguments pass each, read from the schema.
_FORWARD = _schema.positional_counts(torch.ops.attnops.flash_attn_forward.default, (
    "q", "k", "v", "softmax_scale", "causal", "window_left", "window_right", "softcap", "deterministic"))
_DECODE = _schema.positional_counts(_KVCACHE, (
    "q", "k_cache", "v_cache", "cache_seqlens", "block_table", "softmax_scale", "causal", "window_left",
    "window_right", "softcap", "alibi_slopes", "return_softmax_lse", "s_aux"))

__version__ = "2.8.3"  # the flash-attn release whose interface this follows

_FLT_MAX = 3.4028234663852886e38
# The 2048 x 2048 upper-triangular mask sparse modes 3 and 4 read (by diagonal offset).  Made at import:
# created lazily, the first compiled call saw a None global and the second recompiled.
_CAUSAL_MASK = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


def _compressed_mask():
    return _CAUSAL_MASK


def _band(causal, window_size):
    """(left, right) of the visible band, -1 = unbounded."""
    left, right = window_size
    return left, 0 if causal else right


def _mask_args(causal, window_size):
    left, right = _band(causal, window_size)
    if left < 0 and right < 0:
        return dict()
    if left < 0 and right == 0:
        return dict(atten_mask=_CAUSAL_MASK, sparse_mode=3, pre_tokens=INT32_MAX, next_tokens=0)
    return dict(atten_mask=_CAUSAL_MASK, sparse_mode=4, pre_tokens=INT32_MAX if left < 0 else left,
                next_tokens=INT32_MAX if right < 0 else right)


def _check(q):
    if q.dim() == 0:
        raise ValueError("attnops.flash_attn: q must be a tensor of rank 3 or 4")


def _softcap(softcap):
    """The C attribute of flash-attn's softcap: a float, <= 0 off (flash-attn's rule)."""
    return max(float(softcap), 0.0)


def _slopes(alibi_slopes):
    if alibi_slopes is not None and alibi_slopes.dtype != torch.float32:
        raise TypeError(f"attnops.flash_attn: alibi_slopes must be float32, got {alibi_slopes.dtype}")
    return alibi_slopes


def _given(keep_prob, seed, offset, seed_offset, deterministic, softcap):
    """The dropout, determinism and softcap keywords of a call, only where they are not the op's defaults
    (each keyword costs torch's argument parser ~0.5 us)."""
    kw = dict(keep_prob=keep_prob, **ops.seed_args(seed, offset, seed_offset)) if keep_prob < 1.0 else {}
    if deterministic:
        kw["deterministic"] = True
    if softcap:
        kw["softcap"] = softcap
    return kw


def _alibi_args(alibi_slopes, sq, sk):
    if _slopes(alibi_slopes) is None:
        return dict()
    return dict(pse=alibi_slopes, pse_type=2, q_start_idx=[max(sk - sq, 0)], kv_start_idx=[max(sq - sk, 0)])


def _tnd_mask_args(causal, window_size):
    """The mask in TND: bottom-right per sequence, sparse_mode 4 (TND mode 3 needs S1 <= S2 per sequence;
    mode 4 has the same rows)."""
    args = _mask_args(causal, window_size)
    if args.get("sparse_mode") == 3:
        args["sparse_mode"] = 4
    return args


def _varlen_args(cq, ck, causal, window_size, alibi_slopes, op):
    """flash_attn_varlen_func's TND arguments: the lengths (cu_seqlens without the leading 0), the mask
    and ALiBi (equal query and key lengths per sequence)."""
    args = _tnd_mask_args(causal, window_size)
    if alibi_slopes is not None:
        if cq != ck:
            raise NotImplementedError(f"{op}: alibi_slopes need seqlen_q == seqlen_k in every sequence (one start "
                                      "index serves every batch in TND)")
        args.update(_alibi_args(alibi_slopes, 0, 0))
    return dict(args, actual_seq_qlen=cq[1:], actual_seq_kvlen=ck[1:])


def _lse(smax, ssum):
    """max + log(sum) in fp32; rows that saw no key (sentinel or TND-masked statistics) get +inf."""
    lse = smax + torch.log(ssum)
    empty = (smax == -_FLT_MAX) | (smax == -40000.0)
    return torch.where(empty, torch.full_like(lse, math.inf), lse)


def _attn_probs(q, k, scale, softcap, band, slopes, lse, keep):
    """S_dmask of one batch: q [Sq, H, D], k [Sk, Hk, D], lse [H, Sq], keep u8 [H, Sq, Sk] or None ->
    f32 [H, Sq, Sk], exp(s - lse) where visible (0 elsewhere), negated where dropped."""
    sq, sk, h = q.shape[0], k.shape[0], q.shape[1]
    kk = k.float().repeat_interleave(h // k.shape[1], 1)
    s = torch.einsum("ihd,jhd->hij", q.float(), kk) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    diag = torch.arange(sk).view(1, -1) - torch.arange(sq).view(-1, 1) - (sk - sq)  # j - (i + Sk - Sq)
    if slopes is not None:
        s = s - slopes.float().view(-1, 1, 1) * diag.abs()
    left, right = band
    visible = torch.ones(sq, sk, dtype=torch.bool)
    if right >= 0:
        visible &= diag <= right
    if left >= 0:
        visible &= diag >= -left
    p = torch.where(visible & torch.isfinite(lse).unsqueeze(-1), torch.exp(s - lse.unsqueeze(-1)), 0.0)
    return p if keep is None else torch.where(keep.bool(), p, -p)


def _dense_probs(q, k, scale, softcap, causal, window_size, alibi_slopes, lse, keep_prob, seed, offset):
    """S_dmask of flash_attn_func: [B, H, Sq, Sk]."""
    b, sq, h = q.shape[:3]
    keep = None
    if keep_prob < 1.0:
        keep = torch.from_numpy(dropout_mask(int(seed), int(offset), keep_prob, h, batch=b, seq_q=sq,
                                             seq_kv=k.shape[1]))
    slopes = [None] * b if alibi_slopes is None else [alibi_slopes[i] if alibi_slopes.dim() == 2 else alibi_slopes
                                                      for i in range(b)]
    with torch.no_grad():
        return torch.stack([_attn_probs(q[i], k[i], scale, softcap, _band(causal, window_size), slopes[i], lse[i],
                                        None if keep is None else keep[i]) for i in range(b)])


def _sink(s_aux, op):
    """vLLM's s_aux (attention sinks, one logit per query head [H], any float dtype) as the op's f32 sink;
    differentiable (the cast passes the gradient back)."""
    if s_aux is None:
        return {}
    if not isinstance(s_aux, torch.Tensor) or not s_aux.is_floating_point() or s_aux.dim() != 1:
        raise ValueError(f"attnops: {op}: s_aux must be a float tensor [nheads] (one sink logit per query head)")
    return dict(sink=s_aux.float())


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False, s_aux=None):
    """out [B, Sq, H, Dv]; with return_attn_probs (out, softmax_lse f32 [B, H, Sq], S_dmask f32 [B, H, Sq, Sk]).
    s_aux: attention sinks [H] (vLLM's name; docs/NUMERICS.md "Attention sinks"), differentiable."""
    if q.dim() != 4:
        raise ValueError(f"attnops.flash_attn_func: q must be [batch, seqlen, nheads, headdim], got {tuple(q.shape)}")
    softcap = _softcap(softcap) if softcap else 0.0
    if not dropout_p and alibi_slopes is None and not return_attn_probs and s_aux is None:
        # flash_attn_forward: flash-attn's arguments, a third of flash_attention_score's schema (most of a
        # small call's cost), given by position up to the last that differs from its default (torch's parser
        # takes ~0.05 us a positional argument and ~0.35 us a keyword).
        left, right = window_size
        given = (_FORWARD["deterministic"] if deterministic else _FORWARD["softcap"] if softcap
                 else _FORWARD["window_right"] if right >= 0 else _FORWARD["window_left"] if left >= 0
                 else _FORWARD["causal"] if causal else _FORWARD["softmax_scale"])
        args = (q, k, v, softmax_scale, causal, left, right, softcap, deterministic)
        return ops.flash_attn_forward(*args[:given])[0]
    shape = q.shape
    sq, heads = shape[1], shape[2]
    scale = shape[3] ** -0.5 if softmax_scale is None else softmax_scale
    keep_prob = 1.0 - dropout_p
    seed, offset, seed_offset = ops.dropout_seed(keep_prob)
    kw = _given(keep_prob, seed, offset, seed_offset, deterministic, softcap)
    kw.update(_mask_args(causal, window_size))
    if alibi_slopes is not None:
        kw.update(_alibi_args(alibi_slopes, sq, k.shape[1]))
    if s_aux is not None and return_attn_probs:
        raise NotImplementedError("attnops.flash_attn_func: return_attn_probs with s_aux (the probabilities would "
                                  "leave out the sink's share)")
    out, smax, ssum = ops.flash_attention_score(q, k, v, heads, "BSND", scale=scale, **kw,
                                                **_sink(s_aux, "flash_attn_func"))
    if not return_attn_probs:
        return out
    lse = _lse(smax[..., 0], ssum[..., 0])
    return out, lse, _dense_probs(q, k, scale, softcap, causal, window_size, alibi_slopes, lse, keep_prob, seed,
                                  offset)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """qkv [B, S, 3, H, D]: q, k, v are strided views of it (no copy); gradients flow back into qkv."""
    q, k, v = qkv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q [B, Sq, H, D], kv [B, Sk, 2, Hk, D] (k, v strided views of it; gradients flow back into kv)."""
    k, v = kv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def _cu_list(cu_seqlens, name, op):
    """cu_seqlens as a list of ints (int32 [B + 1], starting at 0)."""
    cu = [int(x) for x in cu_seqlens.tolist()]
    if len(cu) < 2 or cu[0] != 0 or any(b < a for a, b in zip(cu, cu[1:])):
        raise ValueError(f"{op}: {name} must be [batch + 1] non-decreasing lengths starting at 0; got {cu}")
    return cu


def _per_sequence(q, k, v, cq, ck, scale, softcap, keep_prob, causal, window_size, alibi_slopes, deterministic,
                  sink=None):
    """A varlen call made one BSND call per sequence: (out [total_q, H, Dv], lse [H, total_q], per-sequence
    (seed, offset)).  For the bands CANN's TND rule refuses (pre + next > 0) and the padded one accepts."""
    outs, lses, seeds = [], [], []
    for i, (q0, q1, k0, k1) in enumerate(zip(cq, cq[1:], ck, ck[1:])):
        if q1 == q0 or k1 == k0:  # no query, or no key to see: output 0, lse +inf (flash-attn's values)
            outs.append(v.new_zeros(q1 - q0, q.shape[1], v.shape[-1]))
            lses.append(torch.full((q.shape[1], q1 - q0), math.inf)), seeds.append((0, 0))
            continue
        slopes = None if alibi_slopes is None else (alibi_slopes[i] if alibi_slopes.dim() == 2 else alibi_slopes)
        seed, offset, seed_offset = ops.dropout_seed(keep_prob)
        out, smax, ssum = ops.flash_attention_score(
            q[q0:q1].unsqueeze(0), k[k0:k1].unsqueeze(0), v[k0:k1].unsqueeze(0), q.shape[1], "BSND", scale=scale,
            **_given(keep_prob, seed, offset, seed_offset, deterministic, softcap), **_mask_args(causal, window_size),
            **_alibi_args(slopes, q1 - q0, k1 - k0), **(sink or {}))
        outs.append(out[0]), lses.append(_lse(smax[0, ..., 0], ssum[0, ..., 0])), seeds.append((seed, offset))
    return torch.cat(outs), torch.cat(lses, dim=1), seeds


def _varlen_probs(q, k, cq, ck, max_q, max_k, scale, softcap, band, alibi_slopes, lse, keep_prob, seeds):
    """S_dmask of flash_attn_varlen_func: [B, H, max_seqlen_q, max_seqlen_k], zero past each sequence.
    seeds: one (seed, offset) per sequence (per-sequence calls), or one for the TND call."""
    h, batches = q.shape[1], len(cq) - 1
    probs = torch.zeros(batches, h, max_q, max_k)
    flat_keep, pos = None, 0
    if keep_prob < 1.0 and len(seeds) == 1:
        flat_keep = torch.from_numpy(dropout_mask(int(seeds[0][0]), int(seeds[0][1]), keep_prob, h,
                                                  actual_seq_qlen=cq[1:], actual_seq_kvlen=ck[1:]))
    with torch.no_grad():
        for i, (q0, q1, k0, k1) in enumerate(zip(cq, cq[1:], ck, ck[1:])):
            sq, sk = q1 - q0, k1 - k0
            keep = None
            if flat_keep is not None:
                keep = flat_keep[pos:pos + h * sq * sk].view(h, sq, sk)
                pos += h * sq * sk
            elif keep_prob < 1.0 and sq and sk:
                keep = torch.from_numpy(dropout_mask(int(seeds[i][0]), int(seeds[i][1]), keep_prob, h, batch=1,
                                                     seq_q=sq, seq_kv=sk))[0]
            slopes = None if alibi_slopes is None else (alibi_slopes[i] if alibi_slopes.dim() == 2 else alibi_slopes)
            probs[i, :, :sq, :sk] = _attn_probs(q[q0:q1], k[k0:k1], scale, softcap, band, slopes, lse[:, q0:q1],
                                                keep)
    return probs


def _varlen_in_graph(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, softcap, causal, window_size,
                     deterministic, sink):
    """flash_attn_varlen_func inside torch.compile: the cu_seqlens tensors go to the op, which reads them at
    run time (no output shape depends on them), so the graph does not break; the library checks the lengths
    (a bad one raises when the graph runs).  The mask and scale are the eager call's."""
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    keep_prob = 1.0 - dropout_p
    seed, offset, seed_offset = ops.dropout_seed(keep_prob)
    out, _, _ = ops.flash_attention_score(q, k, v, q.shape[1], "TND", scale=scale, cu_seqlens_q=cu_seqlens_q,
                                          cu_seqlens_kv=cu_seqlens_k, **_tnd_mask_args(causal, window_size),
                                          **_given(keep_prob, seed, offset, seed_offset, deterministic, softcap),
                                          **sink)
    return out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, s_aux=None):
    """q [total_q, H, D], k/v [total_k, Hk, D], cu_seqlens int32 [B + 1] starting at 0; out [total_q, H, Dv];
    with return_attn_probs (out, softmax_lse f32 [H, total_q], S_dmask).  Causal and windows are bottom-right
    aligned per sequence (sparse_mode 4 in TND).  With block_table, k/v are paged caches [num_blocks,
    page_block_size, Hk, D] holding sequence b's keys in the blocks of row b (_varlen_paged).  s_aux: attention
    sinks [H] (vLLM's name), differentiable."""
    op = "attnops.flash_attn_varlen_func"
    _check(q)
    softcap = _softcap(softcap)
    sink = _sink(s_aux, op)
    if sink and (block_table is not None or return_attn_probs):
        which = "block_table" if block_table is not None else "return_attn_probs"
        raise NotImplementedError(f"{op}: s_aux with {which} is not supported")
    if block_table is not None:
        return _varlen_paged(op, q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size,
                             softcap, alibi_slopes, return_attn_probs, block_table)
    if q.dim() != 3:
        raise ValueError(f"{op}: q must be [total_q, nheads, headdim], got {tuple(q.shape)}")
    band = _band(causal, window_size)
    if torch.compiler.is_compiling() and band != (0, 0) and alibi_slopes is None and not return_attn_probs:
        return _varlen_in_graph(q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, softcap, causal,
                                window_size, deterministic, sink)
    cq, ck = _cu_list(cu_seqlens_q, "cu_seqlens_q", op), _cu_list(cu_seqlens_k, "cu_seqlens_k", op)
    if len(cq) != len(ck):
        raise ValueError(f"{op}: cu_seqlens_q and cu_seqlens_k must have the same length; got {cq} and {ck}")
    heads = q.shape[1]
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    keep_prob = 1.0 - dropout_p
    if band == (0, 0):  # each query sees one key: pre + next = 0, which TND refuses
        out, lse, seeds = _per_sequence(q, k, v, cq, ck, scale, softcap, keep_prob, causal, window_size,
                                        alibi_slopes, deterministic, sink)
    else:
        seed, offset, seed_offset = ops.dropout_seed(keep_prob)
        out, smax, ssum = ops.flash_attention_score(
            q, k, v, heads, "TND", scale=scale, **_given(keep_prob, seed, offset, seed_offset, deterministic, softcap),
            **_varlen_args(cq, ck, causal, window_size, alibi_slopes, op), **sink)
        if not return_attn_probs:
            return out
        # TND statistics hold per-sequence [H, S_b, 8] blocks back to back.
        flat_max, flat_sum = smax.reshape(-1), ssum.reshape(-1)
        parts = []
        for a, b in zip(cq, cq[1:]):
            lo, hi = a * heads * 8, b * heads * 8
            parts.append(_lse(flat_max[lo:hi].view(heads, b - a, 8)[..., 0],
                              flat_sum[lo:hi].view(heads, b - a, 8)[..., 0]))
        lse, seeds = torch.cat(parts, dim=1), [(seed, offset)]
    if not return_attn_probs:
        return out
    return out, lse, _varlen_probs(q, k, cq, ck, max_seqlen_q, max_seqlen_k, scale, softcap, band, alibi_slopes,
                                   lse, keep_prob, seeds)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """qkv [total, 3, H, D] with one cu_seqlens for queries and keys."""
    q, k, v = qkv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, dropout_p, softmax_scale,
                                  causal, window_size, softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q [total_q, H, D], kv [total_k, 2, Hk, D]."""
    k, v = kv.unbind(1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


# ---- the KV-cache API ------------------------------------------------------------------------------
def _rotary(x, cos, sin, pos, interleaved):
    """x (B, S, H, D) with its first rd = 2 cos.shape[1] dims rotated at positions pos (B, S), in f32 (flash-attn's
    flash_attn/layers/rotary.py): pairs (2d, 2d + 1) when interleaved (GPT-J), else (d, d + rd / 2) (GPT-NeoX)."""
    rd = 2 * cos.shape[1]
    c, s = cos[pos].unsqueeze(2).float(), sin[pos].unsqueeze(2).float()
    x1 = x[..., :rd].float()
    if interleaved:
        a, b = x1[..., 0::2], x1[..., 1::2]
        rot = torch.stack((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
    else:
        a, b = x1[..., :rd // 2], x1[..., rd // 2:]
        rot = torch.cat((a * c - b * s, b * c + a * s), dim=-1)
    return torch.cat((rot.to(x.dtype), x[..., rd:]), dim=-1)


def _kv_lengths(op, cache_seqlens, batch, capacity):
    """cache_seqlens as an int32 or int64 tensor [batch] (None: every batch full; an int32 tensor, flash-attn's
    form, is passed on without a copy), read on the host only outside torch.compile (a compiled decode step
    keeps it a tensor)."""
    if cache_seqlens is None or isinstance(cache_seqlens, int):
        return torch.full((batch,), capacity if cache_seqlens is None else cache_seqlens, dtype=torch.int64)
    lens = cache_seqlens if cache_seqlens.dim() == 1 else cache_seqlens.reshape(-1)  # a view costs ~1 us
    if lens.dtype not in (torch.int32, torch.int64):
        lens = lens.long()
    if lens.shape[0] != batch:
        raise ValueError(f"attnops: {op}: cache_seqlens has {lens.shape[0]} values; it must have batch = {batch}")
    return lens


def _checked_append_rows(op, q, k_cache, v_cache, k, v, cache_seqlens, lens, capacity):
    """The rows an append writes (S_new of k), after the checks that must pass before it writes: a refused
    call leaves the caches as they were."""
    if (k is None) != (v is None):
        raise ValueError(f"attnops: {op}: k and v go together")
    dtypes = {t.dtype for t in (q, k_cache, v_cache, k, v)}
    if len(dtypes) > 1:
        raise ValueError(f"attnops: {op}: q, k_cache, v_cache (and k, v) must share one dtype; got "
                         f"{sorted(str(d) for d in dtypes)}")
    if cache_seqlens is None:
        raise ValueError(f"attnops: {op}: new k and v need cache_seqlens (where they are written)")
    s_new = k.shape[1]
    if not torch.compiler.is_compiling() and bool((lens + s_new > capacity).any()):
        raise ValueError(f"attnops: {op}: cache_seqlens + {s_new} new rows exceed the cache's {capacity} rows")
    return s_new


def _append(k_cache, v_cache, k, v, lens, block_table, cache_batch_idx):
    """k, v (B, S_new, Hk, D) written in place at rows lens[b] + t of batch b's cache (through the block table,
    or row cache_batch_idx[b] of a contiguous cache): one index_put_ per cache, which torch.compile keeps as the
    caches' mutation."""
    batch, s_new = k.shape[:2]
    rows = lens[:, None] + torch.arange(s_new)
    if block_table is not None:
        page = k_cache.shape[1]
        flat = (block_table.long().gather(1, rows // page) * page + rows % page).reshape(-1)
        for cache, new in ((k_cache, k), (v_cache, v)):
            cache.view(-1, *cache.shape[2:]).index_put_((flat,), new.reshape(-1, *new.shape[2:]).to(cache.dtype))
        return
    which = torch.arange(batch) if cache_batch_idx is None else cache_batch_idx.long()
    for cache, new in ((k_cache, k), (v_cache, v)):
        cache.index_put_((which[:, None].expand(-1, s_new), rows), new.to(cache.dtype))


def _varlen_paged(op, q, k, v, cu_seqlens_q, cu_seqlens_k, dropout_p, softmax_scale, causal, window_size, softcap,
                  alibi_slopes, return_attn_probs, block_table):
    """flash_attn_varlen_func over paged caches (flash-attn 2.x's paged prefill, an inference path: no dropout,
    no gradient) as FusedInferAttentionScore in TND with the caches paged: the queries' cumulative lengths,
    the keys' per-sequence lengths (cu_seqlens_k's differences) read through block_table; softcap and ALiBi
    (bottom-right per sequence) through the operator's extensions."""
    unsupported = [name for name, given in (("dropout_p", dropout_p > 0), ("return_attn_probs", return_attn_probs))
                   if given]
    if unsupported:
        raise NotImplementedError(f"{op}: {', '.join(unsupported)} with a paged cache (block_table) is not supported")
    if q.dim() != 3 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"{op}: with block_table, q is [total_q, nheads, headdim] and k, v are paged caches "
                         f"[num_blocks, page_block_size, nheads_k, headdim]; got q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}")
    cq, ck = _cu_list(cu_seqlens_q, "cu_seqlens_q", op), _cu_list(cu_seqlens_k, "cu_seqlens_k", op)
    if len(cq) != len(ck) or block_table.dim() != 2 or block_table.shape[0] != len(cq) - 1:
        raise ValueError(f"{op}: cu_seqlens_q, cu_seqlens_k and block_table must describe the same batch; got "
                         f"{len(cq) - 1}, {len(ck) - 1} and block_table {tuple(block_table.shape)}")
    lens_q = [b - a for a, b in zip(cq, cq[1:])]
    lens_k = [b - a for a, b in zip(ck, ck[1:])]
    left, _ = _band(causal, window_size)
    if left >= 0 and all(n == 1 for n in lens_q):
        # one row per sequence is the operator's decode branch, which has no window (flash_attn_with_kvcache
        # takes such a step)
        raise NotImplementedError(f"{op}: a window over a paged cache with one query row per sequence is not "
                                  "supported; flash_attn_with_kvcache takes that decode step")
    heads, hk, page = q.shape[1], k.shape[2], k.shape[1]
    with torch.no_grad():
        out, _ = ops.fused_infer_attention_score(
            q, k.reshape(k.shape[0], page, -1), v.reshape(v.shape[0], page, -1),
            actual_seq_lengths=ops.lengths_tensor(cq[1:]), actual_seq_lengths_kv=ops.lengths_tensor(lens_k),
            block_table=block_table.int(), block_size=page, num_heads=heads,
            num_key_value_heads=hk, scale=q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale,
            input_layout="TND", softcap=_softcap(softcap), alibi_slopes=_slopes(alibi_slopes),
            **_mask_args(causal, window_size))
    return out


def _cache_rows(k_cache, block_table, cache_batch_idx, b, rows):
    """Physical rows of k_cache viewed as [-1, Hk, D] for batch b's logical rows."""
    if block_table is not None:
        page = k_cache.shape[1]
        return block_table[b, rows // page].long() * page + rows % page
    bc = int(cache_batch_idx[b]) if cache_batch_idx is not None else b
    return bc * k_cache.shape[1] + rows


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False,
                            s_aux=None):
    """flash-attn 2.x's decoding entry point (docs/FIA_SPEC.md section 4): k and v, when given, are
    written into the caches in place at rows cache_seqlens[b] + t (k after rotary); q attends to the cache rows
    [cache_leftpad[b], cache_seqlens[b] + S_new), causal bottom-right.  Caches are (B_c, S_c, Hk, D), or paged
    (num_blocks, page_block_size, Hk, D) through block_table (any page size).  Returns out (B, Sq, H, D), with
    return_softmax_lse also softmax_lse f32 (B, H, Sq).  num_splits only tunes flash-attn's CUDA kernel.
    softcap > 0 caps the scaled q.k as softcap * tanh(s / softcap) before ALiBi and the mask (<= 0: off);
    alibi_slopes f32 (H,) or (B, H) add -slope |i + sk - sq - j| over the attended keys (sk of them: a left pad
    or a decode window drops keys from the front, which leaves these bottom-right distances as they are).  With
    causal, flash-attn's CUDA kernel adds slope * j instead: the same softmax, its lse larger by
    slope (i + sk - sq); attnops returns the documented bias's lse, as flash_attn_func does.  Both are the
    operator's attnops extensions (docs/FIA.md).  s_aux (vLLM's name): attention sinks [H], the
    operator's learnable_sink."""
    if (k is None and v is None and rotary_cos is None and cache_batch_idx is None and cache_leftpad is None
            and window_size[0] < 0 and type(cache_seqlens) is not int):
        # A decode step (no append; a contiguous or paged cache; no left window): flash-attn's arguments go to
        # torch.ops.attnops.flash_attn_kvcache as they are (its C++ reads the lengths' and table's forms, the
        # default scale and the causal band), by position up to the last that differs from its default: torch
        # parses a positional argument in ~0.06 us, fills a default in less (4 given: 0.5 us less than 12).
        # Python here is a decode step's largest fixed cost (docs/PERFORMANCE.md "The torch binding's per-call
        # cost").
        if alibi_slopes is not None:
            _slopes(alibi_slopes)
        given = (_DECODE["s_aux"] if s_aux is not None else _DECODE["return_softmax_lse"] if return_softmax_lse
                 else _DECODE["alibi_slopes"] if alibi_slopes is not None else _DECODE["softcap"] if softcap
                 else _DECODE["window_right"] if window_size[1] >= 0 else _DECODE["causal"] if causal
                 else _DECODE["softmax_scale"] if softmax_scale is not None
                 else _DECODE["block_table"] if block_table is not None else _DECODE["cache_seqlens"])
        args = (q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal, -1, window_size[1], softcap,
                alibi_slopes, return_softmax_lse, s_aux)
        try:  # the op itself, not ops' translating wrapper: one Python frame less (~0.3 us of a cache-cold step)
            out, lse = _KVCACHE(*args[:given])
        except (ValueError, NotImplementedError, RuntimeError) as exc:
            raise ops.library_error(exc) from None
        return (out, lse) if return_softmax_lse else out
    op = "flash_attn_with_kvcache"
    _check(q)
    if alibi_slopes is not None:
        _slopes(alibi_slopes)
    paged = block_table is not None
    if paged and (cache_batch_idx is not None or cache_leftpad is not None):
        raise ValueError(f"attnops: {op}: a paged cache (block_table) takes neither cache_batch_idx nor "
                         "cache_leftpad (flash-attn's rule)")
    batch, sq, heads, d = q.shape
    k_shape = k_cache.shape
    capacity = block_table.shape[1] * k_shape[1] if paged else k_shape[1]
    lens = _kv_lengths(op, cache_seqlens, batch, capacity)
    s_new = 0
    if k is not None or v is not None:
        s_new = _checked_append_rows(op, q, k_cache, v_cache, k, v, cache_seqlens, lens, capacity)
    left, right = _band(causal, window_size)
    if rotary_cos is not None:
        if k is None:
            raise ValueError(f"attnops: {op}: rotary_cos / rotary_sin rotate the new k; give k and v")
        start = lens.unsqueeze(1)
        q_pos = start + (torch.arange(sq) if causal or left >= 0 or right >= 0
                         else torch.zeros(sq, dtype=torch.long))
        q = _rotary(q, rotary_cos, rotary_sin, q_pos, rotary_interleaved)
        k = _rotary(k, rotary_cos, rotary_sin, start + torch.arange(s_new), rotary_interleaved)
    if k is not None:
        _append(k_cache, v_cache, k, v, lens, block_table, cache_batch_idx)
    sk = lens + s_new if s_new else lens
    hk = k_shape[2]
    if cache_leftpad is not None or cache_batch_idx is not None or (sq == 1 and left >= 0):
        # A left pad, a cache_batch_idx or a decode step's window pick rows no plain or paged view does: a table
        # of single rows over the cache viewed as [rows, 1, Hk D] (the operator's paged form, block_size 1),
        # built on the host.
        lead = [0] * batch if cache_leftpad is None else [int(x) for x in cache_leftpad.reshape(-1).tolist()]
        counts_all = [n - lp for n, lp in zip(sk.tolist(), lead)]
        first = [max(0, n - 1 - left) if sq == 1 and left >= 0 else 0 for n in counts_all]
        counts = [n - f for n, f in zip(counts_all, first)]
        table = torch.zeros(batch, max(max(counts), 1), dtype=torch.int32)
        for b in range(batch):
            rows = lead[b] + first[b] + torch.arange(counts[b])
            table[b, :counts[b]] = _cache_rows(k_cache, block_table, cache_batch_idx, b, rows).int()
        flat_k, flat_v = k_cache.view(-1, hk, d), v_cache.view(-1, hk, v_cache.shape[-1])
        key, value = flat_k.view(-1, 1, hk * d), flat_v.view(-1, 1, hk * v_cache.shape[-1])
        kw = dict(block_table=table, block_size=1)
        sk = ops.lengths_tensor(counts)
    else:
        # After an append or a rotary: the attention over the lengths with the new rows, as a decode step's (every
        # argument by position, in the order _DECODE checked).
        out, lse = ops.flash_attn_kvcache(q, k_cache, v_cache, sk, block_table, softmax_scale, causal, left,
                                          window_size[1], softcap, alibi_slopes, return_softmax_lse, s_aux)
        return (out, lse) if return_softmax_lse else out
    # Only what differs from the op's defaults (each keyword costs torch's parser ~0.2-0.5 us).
    if sq > 1 and (left >= 0 or right >= 0):
        kw.update(_mask_args(causal, window_size))
    if softcap:
        kw["softcap"] = _softcap(softcap)
    if return_softmax_lse:
        kw["softmax_lse_flag"] = True
    if alibi_slopes is not None:
        kw["alibi_slopes"] = alibi_slopes
    if s_aux is not None:
        kw["learnable_sink"] = s_aux
    out, lse = ops.fused_infer_attention_score(
        q, key, value, actual_seq_lengths_kv=sk, num_heads=heads, num_key_value_heads=hk,
        scale=softmax_scale if softmax_scale is not None else d ** -0.5, input_layout="BSND", **kw)
    return (out, lse.reshape(batch, heads, sq)) if return_softmax_lse else out
