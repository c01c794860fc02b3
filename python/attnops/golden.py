"""numpy goldens: every operator on numpy arrays, by default through the library's
reference implementation (impl="reference": double accumulation, outputs rounded
once; "benchmark" is the triple rule's chain of rounded small operators, "auto"
/ "cpu" the fast kernel).  bf16 and fp8 arrays are ml_dtypes arrays; torch is
not needed.

    out, smax, ssum = attnops.golden.flash_attention_score(q, k, v, 8, "BSND", scale=0.125)
    verdict = attnops.compare(device_out, out, rule="dual")

Arguments are CANN's (include/attnops.h), with Python lists for the int arrays
(prefix, actual_seq_qlen, ...).  FP8 inputs (ml_dtypes.float8_e4m3fn /
float8_e5m2, from fp8_quantize_blocks) take their d_scale_* block scales and
out_dtype (0: float16, 1: bfloat16 outputs); the forward runs in the
reference only, as in the C API.  Outputs are new arrays; state_cache of
key_pool is updated in place.  num_threads 0 means OpenMP's default.
"""
import math

import ml_dtypes
import numpy as np

from . import _fa, _fia, _kp_ar, _lib
from ._lib import INT32_MAX
from ._views import Call


def _fa_kw(head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens,
           inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope,
           q_start_idx, kv_start_idx, seed, offset, impl, deterministic, num_threads, fp8, softcap, sink):
    return dict(fp8=fp8, head_num=head_num, input_layout=input_layout, pse=pse, drop_mask=drop_mask, sink=sink,
                atten_mask=atten_mask,
                scale=scale, keep_prob=keep_prob, pre_tokens=pre_tokens, next_tokens=next_tokens,
                inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
                actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode, pse_type=pse_type,
                query_rope=query_rope, key_rope=key_rope, q_start_idx=q_start_idx, kv_start_idx=kv_start_idx,
                seed=seed, offset=offset, impl=impl, deterministic=deterministic, num_threads=num_threads,
                softcap=softcap)


def flash_attention_score(query, key, value, head_num, input_layout, *, pse=None, drop_mask=None, atten_mask=None,
                          scale=1.0, keep_prob=1.0, pre_tokens=INT32_MAX, next_tokens=INT32_MAX, inner_precise=0,
                          prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1,
                          query_rope=None, key_rope=None, q_start_idx=None, kv_start_idx=None, seed=2, offset=0,
                          impl="reference", deterministic=False, num_threads=0, d_scale_q=None, d_scale_k=None,
                          d_scale_v=None, d_scale_o=None, out_dtype=1, softcap=0.0, sink=None):
    """-> (attention_out, softmax_max, softmax_sum) as numpy arrays.  softcap > 0: flash-attn's soft-capping
    of the q.k term; sink: f32 [N1] attention-sink logits (include/attnops.h)."""
    fp8 = _fp8(query, d_scale_q, d_scale_k, d_scale_v, None, d_scale_o, out_dtype)
    return _fa.forward(query, key, value, _fa_kw(
        head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens, inner_precise,
        prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope, q_start_idx,
        kv_start_idx, seed, offset, impl, deterministic, num_threads, fp8, softcap, sink))


def flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num, input_layout,
                               *, pse=None, drop_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0,
                               pre_tokens=INT32_MAX, next_tokens=INT32_MAX, inner_precise=0, prefix=None,
                               actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1,
                               query_rope=None, key_rope=None, q_start_idx=None, kv_start_idx=None, seed=2, offset=0,
                               impl="reference", deterministic=False, num_threads=0, d_scale_q=None, d_scale_k=None,
                               d_scale_v=None, d_scale_dy=None, d_scale_o=None, out_dtype=1, softcap=0.0, sink=None):
    """-> (dq, dk, dv, dq_rope, dk_rope, dsink); the rope gradients are empty arrays without rope inputs, dsink
    (f32 [N1]) without a sink."""
    fp8 = _fp8(query, d_scale_q, d_scale_k, d_scale_v, d_scale_dy, d_scale_o, out_dtype)
    return _fa.backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, _fa_kw(
        head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens, inner_precise,
        prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope, q_start_idx,
        kv_start_idx, seed, offset, impl, deterministic, num_threads, fp8, softcap, sink))


_FP8 = (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))


def _fp8(query, d_scale_q, d_scale_k, d_scale_v, d_scale_dy, d_scale_o, out_dtype):
    """The Fp8 scales of FP8 inputs (None for other dtypes, which must not pass scales)."""
    scales = (d_scale_q, d_scale_k, d_scale_v, d_scale_dy, d_scale_o)
    if np.asarray(query).dtype not in _FP8:
        if any(s is not None for s in scales):
            raise ValueError("attnops.golden: d_scale_* are for FP8 inputs; query has dtype "
                             f"{np.asarray(query).dtype}")
        return None
    return _fa.Fp8(*scales, out_dtype=out_dtype)


def fp8_quantize_blocks(src, input_layout, head_num, fp8_dtype=ml_dtypes.float8_e4m3fn):
    """-> (out, d_scale): src (f32/f16/bf16, BNSD/BSND/BSH/SBH) quantised per block of 128 rows of a head,
    the way the golden prepares device inputs (attnops_fp8_quantize_blocks): out has src's shape in
    fp8_dtype, d_scale is f32 [B, N, ceil(S/128), 1] with src ~ out * d_scale."""
    src = np.asarray(src)
    _fa.check_layout(input_layout)
    if input_layout == "TND":
        raise NotImplementedError("attnops.golden.fp8_quantize_blocks: FP8 inputs are not defined for layout TND")
    s = src.shape
    if len(s) not in (3, 4):
        raise ValueError(f"attnops.golden.fp8_quantize_blocks: src must have rank 3 or 4, got shape {s}")
    b, seq = {"BNSD": (s[0], s[2]), "BSND": (s[0], s[1]), "BSH": (s[0], s[1]), "SBH": (s[1], s[0])}[input_layout]
    out = np.empty(s, fp8_dtype)
    d_scale = np.empty((b, head_num, math.ceil(seq / 128), 1), np.float32)
    call = Call()
    layout = _lib.LAYOUTS.index(input_layout) + 1
    status = _lib.lib.attnops_fp8_quantize_blocks(call.view(src, "src"), layout, head_num, call.view(out, "out"),
                                                  call.view(d_scale, "d_scale"))
    _lib.check(status)
    return out, d_scale


def key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos, *, norm_weight=None,
             norm_bias=None, cu_seqlens=None, cmp_ratio=4, norm_eps=1e-6, rotary_mode=0, capacity="fixed",
             impl="reference", num_threads=0):
    """-> pooled_key ("fixed": CANN's [B, ceil(L*block_size/R), D], zero past the valid rows; "current": the
    seed's current-input capacity); state_cache (f32, writable) is updated in place."""
    return _kp_ar.key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos,
                           norm_weight=norm_weight, norm_bias=norm_bias, cos=None, sin=None, cu_seqlens=cu_seqlens,
                           seqused=None, cmp_ratio=cmp_ratio, norm_eps=norm_eps, rotary_mode=rotary_mode,
                           capacity=capacity, impl=impl, num_threads=num_threads)


def attn_res(blocks, proj_weight, *, partial_block=None, rmsnorm_gamma=None, scale=1.0, rmsnorm_eps=1e-6,
             enable_rmsnorm=True, impl="reference", num_threads=0):
    """-> (h, rms f32 [B,T,L,1] (empty without RMSNorm), alpha f32 [B,T,L])."""
    return _kp_ar.attn_res(list(blocks), proj_weight, partial_block=partial_block, rmsnorm_gamma=rmsnorm_gamma,
                           scale=scale, rmsnorm_eps=rmsnorm_eps, enable_rmsnorm=enable_rmsnorm, impl=impl,
                           num_threads=num_threads)


def attn_res_grad(grad_h, blocks, proj_weight, alpha, *, partial_block=None, rmsnorm_gamma=None, rms=None, scale=1.0,
                  enable_rmsnorm=True, impl="reference", num_threads=0):
    """-> (grad_blocks list, grad_partial_block (empty without one), grad_proj_weight, grad_rmsnorm_gamma
    (empty without RMSNorm))."""
    return _kp_ar.attn_res_grad(grad_h, list(blocks), proj_weight, alpha, partial_block=partial_block,
                                rmsnorm_gamma=rmsnorm_gamma, rms=rms, scale=scale, enable_rmsnorm=enable_rmsnorm,
                                impl=impl, num_threads=num_threads)


def fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
                                actual_seq_lengths_kv=None, block_table=None, query_rope=None, key_rope=None,
                                num_heads=1, scale=1.0, pre_tokens=INT32_MAX, next_tokens=INT32_MAX,
                                input_layout="BSH", num_key_value_heads=0, sparse_mode=0, inner_precise=0,
                                block_size=0, softmax_lse_flag=False, key_antiquant_scale=None,
                                key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None,
                                antiquant_scale=None, antiquant_offset=None, antiquant_mode=0, key_antiquant_mode=0,
                                value_antiquant_mode=0, softcap=0.0, alibi_slopes=None, alibi_rule=0,
                                alibi_q_start_idx=0, alibi_kv_start_idx=0, learnable_sink=None, impl="reference",
                                num_threads=0):
    """-> (attention_out, softmax_lse f32): CANN's FusedInferAttentionScore (docs/FIA.md),
    decode (S1 = 1) or prompt, contiguous or paged (block_table, block_size) key/value, int8 key/value with
    their antiquant scales, attention sinks (learnable_sink [N1]); softcap and alibi_slopes (f32 [N1] or [B, N1])
    are attnops extensions, with flash-attn's bottom-right distance or (alibi_rule 2 / 3 and the start indices)
    CANN's inner ALiBi, aclnnFusedInferAttentionScoreV5's pseType."""
    return _fia.fused_infer_attention_score(
        query, key, value, pse_shift=pse_shift, atten_mask=atten_mask, actual_seq_lengths=actual_seq_lengths,
        actual_seq_lengths_kv=actual_seq_lengths_kv, block_table=block_table, query_rope=query_rope,
        key_rope=key_rope, num_heads=num_heads, scale=scale, pre_tokens=pre_tokens, next_tokens=next_tokens,
        input_layout=input_layout, num_key_value_heads=num_key_value_heads, sparse_mode=sparse_mode,
        inner_precise=inner_precise, block_size=block_size, softmax_lse_flag=softmax_lse_flag,
        key_antiquant_scale=key_antiquant_scale, key_antiquant_offset=key_antiquant_offset,
        value_antiquant_scale=value_antiquant_scale, value_antiquant_offset=value_antiquant_offset,
        antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset, antiquant_mode=antiquant_mode,
        key_antiquant_mode=key_antiquant_mode, value_antiquant_mode=value_antiquant_mode, softcap=softcap,
        alibi_slopes=alibi_slopes, alibi_rule=alibi_rule, alibi_q_start_idx=alibi_q_start_idx,
        alibi_kv_start_idx=alibi_kv_start_idx, learnable_sink=learnable_sink, impl=impl, num_threads=num_threads)
