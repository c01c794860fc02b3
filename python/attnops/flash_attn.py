"""flash-attn-style functions on attnops (flash_attn/flash_attn_interface.py of
Dao-AILab/flash-attention 2.8 is the interface followed; docs/PYTHON.md).

    out = flash_attn_func(q, k, v, causal=True)                 # q [B, Sq, H, D], k/v [B, Sk, Hk, D]
    out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k)   # q [total_q, H, D]

flash-attn's conventions, mapped onto FlashAttentionScore:
  - causal is aligned bottom-right (key j visible to query i iff j <= i + Sk - Sq): sparse_mode 3;
  - window_size (left, right), -1 = unbounded: keys i + Sk - Sq - left <= j <= i + Sk - Sq + right, the
    bottom-right band of sparse_mode 4 with pre_tokens = left, next_tokens = right (causal: right = 0);
  - alibi_slopes f32 [H] or [B, H]: bias -slope |i + Sk - Sq - j|, pse_type 2 with the start indices
    q_start = Sk - Sq (or kv_start = Sq - Sk) that shift the distance by Sk - Sq;
  - a query row that sees no key gets output 0 and softmax_lse +inf (flash-attn's values);
  - dropout_p drops with the Ascend 950 Philox stream of a seed drawn from torch's default generator.
softcap != 0 raises NotImplementedError (FlashAttentionScore has no logit soft-capping); with
return_attn_probs the third value (flash-attn's debugging S_dmask) is None.
"""
import math

import torch

from . import ops

_INT32_MAX = 2147483647
_FLT_MAX = 3.4028234663852886e38
_causal_mask = None


def _compressed_mask():
    """The 2048 x 2048 upper-triangular mask sparse modes 3 and 4 read (by diagonal offset)."""
    global _causal_mask
    if _causal_mask is None:
        _causal_mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return _causal_mask


def _mask_args(causal, window_size):
    left, right = window_size
    if causal:
        right = 0
    if left < 0 and right < 0:
        return dict()
    if left < 0 and right == 0:
        return dict(atten_mask=_compressed_mask(), sparse_mode=3, pre_tokens=_INT32_MAX, next_tokens=0)
    return dict(atten_mask=_compressed_mask(), sparse_mode=4, pre_tokens=_INT32_MAX if left < 0 else left,
                next_tokens=_INT32_MAX if right < 0 else right)


def _check(softcap, q):
    if softcap != 0.0:
        raise NotImplementedError("attnops.flash_attn: softcap != 0 is not supported (FlashAttentionScore has no "
                                  "logit soft-capping)")
    if q.dim() == 0:
        raise ValueError("attnops.flash_attn: q must be a tensor of rank 3 or 4")


def _alibi_args(alibi_slopes, sq, sk):
    if alibi_slopes is None:
        return dict()
    if alibi_slopes.dtype != torch.float32:
        raise TypeError(f"attnops.flash_attn: alibi_slopes must be float32, got {alibi_slopes.dtype}")
    return dict(pse=alibi_slopes, pse_type=2, q_start_idx=[max(sk - sq, 0)], kv_start_idx=[max(sq - sk, 0)])


def _varlen_args(cq, ck, causal, window_size, alibi_slopes, op):
    """flash_attn_varlen_func's TND arguments: the lengths (cu_seqlens without the leading 0), the mask
    (bottom-right per sequence: sparse_mode 4) and ALiBi (equal query and key lengths per sequence)."""
    args = _mask_args(causal, window_size)
    if args.get("sparse_mode") == 3:  # TND mode 3 needs S1 <= S2 per sequence; mode 4 has the same rows
        args["sparse_mode"] = 4
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


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """out [B, Sq, H, Dv]; with return_attn_probs (out, softmax_lse f32 [B, H, Sq], None)."""
    _check(softcap, q)
    if q.dim() != 4:
        raise ValueError(f"attnops.flash_attn_func: q must be [batch, seqlen, nheads, headdim], got {tuple(q.shape)}")
    sq, sk, heads = q.shape[1], k.shape[1], q.shape[2]
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    keep_prob = 1.0 - dropout_p
    seed, offset, seed_offset = ops.dropout_seed(keep_prob)
    out, smax, ssum = ops.flash_attention_score_call(
        q, k, v, heads, "BSND", scale=scale, keep_prob=keep_prob, **ops.seed_args(seed, offset, seed_offset),
        deterministic=deterministic, **_mask_args(causal, window_size), **_alibi_args(alibi_slopes, sq, sk))
    if not return_attn_probs:
        return out
    return out, _lse(smax[..., 0], ssum[..., 0]), None


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """qkv [B, S, 3, H, D]: q, k, v are strided views of it (no copy); gradients flow back into qkv."""
    q, k, v = qkv.unbind(2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """q [total_q, H, D], k/v [total_k, Hk, D], cu_seqlens int32 [B + 1] starting at 0; out [total_q, H, Dv];
    with return_attn_probs (out, softmax_lse f32 [H, total_q], None).  Causal and windows are bottom-right
    aligned per sequence (sparse_mode 4 in TND)."""
    _check(softcap, q)
    if block_table is not None:
        raise NotImplementedError("attnops.flash_attn_varlen_func: block_table (paged KV) is not supported")
    if q.dim() != 3:
        raise ValueError(f"attnops.flash_attn_varlen_func: q must be [total_q, nheads, headdim], got {tuple(q.shape)}")
    cq, ck = [int(x) for x in cu_seqlens_q.tolist()], [int(x) for x in cu_seqlens_k.tolist()]
    if len(cq) != len(ck) or len(cq) < 2 or cq[0] != 0 or ck[0] != 0:
        raise ValueError("attnops.flash_attn_varlen_func: cu_seqlens_q and cu_seqlens_k must have the same length "
                         f">= 2 and start at 0; got {cq} and {ck}")
    heads = q.shape[1]
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    keep_prob = 1.0 - dropout_p
    seed, offset, seed_offset = ops.dropout_seed(keep_prob)
    out, smax, ssum = ops.flash_attention_score_call(
        q, k, v, heads, "TND", scale=scale, keep_prob=keep_prob, **ops.seed_args(seed, offset, seed_offset),
        deterministic=deterministic, **_varlen_args(cq, ck, causal, window_size, alibi_slopes,
                                                    "attnops.flash_attn_varlen_func"))
    if not return_attn_probs:
        return out
    # TND statistics hold per-sequence [H, S_b, 8] blocks back to back.
    flat_max, flat_sum = smax.reshape(-1), ssum.reshape(-1)
    parts = []
    for a, b in zip(cq, cq[1:]):
        lo, hi = a * heads * 8, b * heads * 8
        parts.append(_lse(flat_max[lo:hi].view(heads, b - a, 8)[..., 0], flat_sum[lo:hi].view(heads, b - a, 8)[..., 0]))
    return out, torch.cat(parts, dim=1), None
