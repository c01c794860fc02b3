"""torch_npu-compatible operators on the CPU.

Signatures, defaults and return values are those of torch_npu's op-plugin
schema (op_plugin/config/op_plugin_functions.yaml of Ascend/op-plugin, the
torch_npu 7.1+ form; docs/PYTHON.md names the commit read), so code written
for Ascend NPUs calls these unchanged:

    out, smax, ssum, _, seed, offset, numels = npu_fusion_attention(q, k, v, n, "BSND", scale=0.125)
    dq, dk, dv, _, _ = npu_fusion_attention_grad(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                              attention_in=out, scale_value=0.125)

Differences from the NPU (docs/PYTHON.md): the tensors are CPU tensors.
The seed/offset of a dropout call are those torch_npu's NPU generator hands
out (_npu_rng: after torch.manual_seed(s) the k-th dropout call gets seed s,
offset 12 k) and the keep mask is the Ascend 950 in-kernel Philox stream of
that (seed, offset), bit-exact with the device;
gen_mask_parallel and sync have no effect; dpse is an empty tensor (CANN
reserves it); sink (attention sinks, f32 [head_num]) as op-plugin master takes it, the grad functions
returning its gradient dsink last (an empty tensor without a sink).
"""
import torch

import numpy as np

from . import _dropout, _kp_ar, _npu_rng, _npu_shim, _schema
from . import ops
from ._lib import INT32_MAX
from ._npu_shim import install, set_soc, soc, uninstall  # noqa: F401


_GEN_MASK_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


@torch.compiler.disable
def _gen_mask(query, keep_prob, seed_offset, numels):
    """The drop mask op-plugin draws on SoCs before the 950 (dropout_gen_mask_impl: aclnnDropoutGenMaskV2 over
    [numels] with prob = float(1) - float(keep_prob) in the query's dtype).  Outside torch.compile's graph: the
    draw needs the seed and offset as numbers."""
    seed, offset = (int(v) for v in (seed_offset.tolist() if isinstance(seed_offset, torch.Tensor) else seed_offset))
    prob = float(np.float32(1.0) - np.float32(keep_prob))
    return torch.from_numpy(_dropout.dropout_gen_mask(int(numels), prob, seed, offset,
                                                      _GEN_MASK_DTYPES.get(query.dtype, "float32")))


def _npu_dropout_gen_mask(self, size, p, seed, offset, parallel=True, sync=False):
    """torch_npu's _npu_dropout_gen_mask: the packed keep mask aclnnDropoutGenMaskV2 draws for prod(size) elements
    with drop probability p in self's dtype (the A2/A3 stream; docs/NUMERICS.md).  parallel and sync have no
    effect."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"_npu_dropout_gen_mask: dropout probability has to be between 0 and 1, but got {p}")
    numels = int(np.prod(list(size), dtype=np.int64))
    return torch.from_numpy(_dropout.dropout_gen_mask(numels, float(p), int(seed), int(offset),
                                                      _GEN_MASK_DTYPES.get(self.dtype, "float32")))


# The batch and sequence dimensions of a padded layout (include/attnops.h).
_BATCH_SEQ_DIMS = {"BNSD": (0, 2), "BSND": (0, 1), "BSH": (0, 1), "SBH": (1, 0)}


def _numels(query, head_num, input_layout, key, actual_seq_qlen, actual_seq_kvlen):
    """B*N1*S1*S2, or in TND N1 * sum S1_b * S2_b (the length of the dropout stream)."""
    if input_layout == "TND":
        q = [0, *actual_seq_qlen]
        kv = [0, *actual_seq_kvlen]
        return head_num * sum((q[i + 1] - q[i]) * (kv[i + 1] - kv[i]) for i in range(len(q) - 1))
    # plain shape arithmetic (no library call): it runs inside torch.compile's graphs, dropout included
    b_dim, s_dim = _BATCH_SEQ_DIMS[input_layout]
    return query.shape[b_dim] * head_num * query.shape[s_dim] * key.shape[s_dim]


def _check_reserved(padding_mask, softmax_in=None):
    """padding_mask and softmax_in are reserved by CANN.  softmax_in may be the forward's own (empty)
    softmax_out, which torch_npu's autograd hands back to the grad op."""
    if padding_mask is not None:
        raise ValueError("npu_fusion_attention: padding_mask is reserved by CANN and must be None")
    if softmax_in is not None and softmax_in.numel() != 0:
        raise ValueError("npu_fusion_attention_grad: softmax_in is reserved by CANN and must be None or empty (the "
                         f"forward's softmax_out); got a tensor of shape {tuple(softmax_in.shape)}")


def _layout(input_layout):
    """torch_npu upper-cases input_layout before handing it to CANN ("bsh" is "BSH")."""
    return input_layout.upper() if isinstance(input_layout, str) else input_layout


def _softmax_layout(op, softmax_layout, input_layout):
    """torch_npu 7.2's softmax_layout: "" (the statistics hold per-batch [N1, S_b, 8] blocks) or, with
    input_layout TND only, "TND" (a true [T1, N1, 8] array): CANN's softmax_in_layout "same_as_input"."""
    if softmax_layout == "":
        return ""
    if softmax_layout != "TND":
        raise ValueError(f"{op}: softmax_layout is {softmax_layout!r}; it must be \"\" or \"TND\"")
    if input_layout != "TND":
        raise ValueError(f"{op}: softmax_layout \"TND\" needs input_layout TND, got {input_layout!r}")
    return "same_as_input"


_OPTIONAL_INPUTS = ("pse", "atten_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "query_rope", "key_rope",
                    "q_start_idx", "kv_start_idx")


def _attributes(scale, keep_prob, pre_tokens, next_tokens, inner_precise, sparse_mode, pse_type, optional):
    """The op's keyword arguments for the attributes that differ from its defaults and the optional inputs given
    (`optional`: their values in _OPTIONAL_INPUTS' order): torch's parser costs ~0.2-0.5 us a keyword and
    nothing for an argument left to its default."""
    kw = {name: value for name, value in zip(_OPTIONAL_INPUTS, optional) if value is not None}
    if scale != 1.0:
        kw["scale"] = scale
    if keep_prob != 1.0:
        kw["keep_prob"] = keep_prob
    if pre_tokens != INT32_MAX:
        kw["pre_tokens"] = pre_tokens
    if next_tokens != INT32_MAX:
        kw["next_tokens"] = next_tokens
    if inner_precise:
        kw["inner_precise"] = inner_precise
    if sparse_mode:
        kw["sparse_mode"] = sparse_mode
    if pse_type != 1:
        kw["pse_type"] = pse_type
    return kw


def _forward(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, query_rope, key_rope, scale,
             keep_prob, pre_tokens, next_tokens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode,
             pse_type, q_start_idx, kv_start_idx, softmax_layout, sink=None):
    _check_reserved(padding_mask)
    input_layout = _layout(input_layout)
    kw = _attributes(scale, keep_prob, pre_tokens, next_tokens, inner_precise, sparse_mode, pse_type,
                     (pse, atten_mask, prefix, actual_seq_qlen, actual_seq_kvlen, query_rope, key_rope, q_start_idx,
                      kv_start_idx))
    if softmax_layout:
        kw["softmax_in_layout"] = _softmax_layout("npu_fusion_attention", softmax_layout, input_layout)
    if sink is not None:
        kw["sink"] = sink
    seed, offset = 0, 0
    numels = _numels(query, head_num, input_layout, key, actual_seq_qlen, actual_seq_kvlen)
    if 0.0 < keep_prob < 1.0:
        seed, offset, seed_offset = _npu_rng.draw()
        if _npu_shim.gen_mask_dropout():
            kw["drop_mask"] = _gen_mask(query, keep_prob, seed_offset if seed_offset is not None else (seed, offset),
                                        numels)
        else:
            kw.update(ops.seed_args(seed, offset, seed_offset))
    out, smax, ssum = ops.flash_attention_score(query, key, value, head_num, input_layout, **kw)
    return out, smax, ssum, query.new_empty(0), seed, offset, numels


def _backward(query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max, softmax_sum,
              softmax_in, attention_in, query_rope, key_rope, scale_value, keep_prob, pre_tokens, next_tokens,
              inner_precise, seed, offset, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type,
              q_start_idx, kv_start_idx, softmax_layout, sink=None):
    """-> (dq, dk, dv, dq_rope, dk_rope, dsink) of the grad op."""
    _check_reserved(padding_mask, softmax_in)
    input_layout = _layout(input_layout)
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum), ("attention_in", attention_in)):
        if t is None:
            raise ValueError(f"npu_fusion_attention_grad: {name} is required (the forward's output); got None")
    kw = _attributes(scale_value, keep_prob, pre_tokens, next_tokens, inner_precise, sparse_mode, pse_type,
                     (pse, atten_mask, prefix, actual_seq_qlen, actual_seq_kvlen, query_rope, key_rope, q_start_idx,
                      kv_start_idx))
    if softmax_layout:
        kw["softmax_in_layout"] = _softmax_layout("npu_fusion_attention_grad", softmax_layout, input_layout)
    if sink is not None:
        kw["sink"] = sink
    if keep_prob != 1.0:
        if _npu_shim.gen_mask_dropout():
            kw["drop_mask"] = _gen_mask(query, keep_prob, (seed, offset), _numels(
                query, head_num, input_layout, key, actual_seq_qlen, actual_seq_kvlen))
        else:
            kw.update(seed=seed, offset=offset)
    return ops.flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num,
                                          input_layout, **kw)


# npu_fusion_attention's fast path (the arguments it passes, in the schema's order, checked at import): how many
# positional arguments pass each, read from the schema.
_FUSION = _schema.positional_counts(torch.ops.attnops.npu_fusion_attention.default, (
    "query", "key", "value", "head_num", "input_layout", "pse", "padding_mask", "atten_mask", "scale", "keep_prob",
    "pre_tockens", "next_tockens", "inner_precise", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "sparse_mode",
    "gen_mask_parallel", "sync", "softmax_layout"))


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1., keep_prob=1., pre_tockens=INT32_MAX, next_tockens=INT32_MAX, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, softmax_layout="", sink=None):
    """-> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels).

    softmax_out is reserved (an empty tensor).  Differentiable in query, key,
    value and sink: the backward is npu_fusion_attention_grad on the saved
    outputs, with the dropout mask replayed from (seed, offset)."""
    if keep_prob == 1.0 and sink is None:
        # torch.ops.attnops.npu_fusion_attention: torch_npu's schema and outputs, 22 arguments against
        # flash_attention_score's 37 (torch parses every one on each call); by position up to the last that
        # differs from its default, as flash_attn_func and flash_attn_with_kvcache call theirs (a positional
        # argument costs torch's parser ~0.06 us, a keyword ~0.35, a default less than either).
        if padding_mask is not None:
            _check_reserved(padding_mask)
        given = (_FUSION["softmax_layout"] if softmax_layout else _FUSION["sparse_mode"] if sparse_mode
                 else _FUSION["actual_seq_kvlen"] if actual_seq_kvlen is not None
                 else _FUSION["actual_seq_qlen"] if actual_seq_qlen is not None
                 else _FUSION["prefix"] if prefix is not None else _FUSION["inner_precise"] if inner_precise
                 else _FUSION["next_tockens"] if next_tockens != INT32_MAX
                 else _FUSION["pre_tockens"] if pre_tockens != INT32_MAX else _FUSION["scale"])
        args = (query, key, value, head_num, input_layout, pse, None, atten_mask, scale, 1.0, pre_tockens,
                next_tockens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, True, False,
                softmax_layout)
        return ops.npu_fusion_attention(*args[:given])
    return _forward(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, None, None, scale,
                    keep_prob, pre_tockens, next_tockens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen,
                    sparse_mode, 1, None, None, softmax_layout, sink)


def npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                              atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                              attention_in=None, scale_value=1., keep_prob=1., pre_tockens=INT32_MAX,
                              next_tockens=INT32_MAX, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
                              actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                              sync=False, softmax_layout="", sink=None):
    """-> (dq, dk, dv, dpse, dsink): op-plugin master's five outputs; dpse is an empty tensor (reserved by
    CANN), dsink f32 [head_num] with a sink, else empty.

    softmax_max, softmax_sum and attention_in (the forward's outputs) are
    required; numels is accepted and not needed (the mask follows from the
    shapes and (seed, offset))."""
    dq, dk, dv, _, _, dsink = _backward(query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask,
                                        softmax_max, softmax_sum, softmax_in, attention_in, None, None, scale_value,
                                        keep_prob, pre_tockens, next_tockens, inner_precise, seed, offset, prefix,
                                        actual_seq_qlen, actual_seq_kvlen, sparse_mode, 1, None, None, softmax_layout,
                                        sink)
    return dq, dk, dv, query.new_empty(0), dsink


def npu_fusion_attention_v2(query, key, value, head_num, input_layout, *, pse=None, padding_mask=None,
                            atten_mask=None, query_rope=None, key_rope=None, scale=1., keep_prob=1.,
                            pre_tokens=INT32_MAX, next_tokens=INT32_MAX, inner_precise=0, prefix=None,
                            actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                            sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="", sink=None):
    """npu_fusion_attention with MLA rope inputs, pse_type 0-3 and q/kv start indices (v2 spells
    pre_tokens / next_tokens); differentiable in query, key, value, query_rope, key_rope and sink."""
    return _forward(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, query_rope, key_rope,
                    scale, keep_prob, pre_tokens, next_tokens, inner_precise, prefix, actual_seq_qlen,
                    actual_seq_kvlen, sparse_mode, pse_type, q_start_idx, kv_start_idx, softmax_layout, sink)


def npu_fusion_attention_grad_v2(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                                 atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                                 attention_in=None, query_rope=None, key_rope=None, scale_value=1., keep_prob=1.,
                                 pre_tokens=INT32_MAX, next_tokens=INT32_MAX, inner_precise=0, seed=0, offset=0,
                                 numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                                 gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None,
                                 softmax_layout="", sink=None):
    """-> (dq, dk, dv, dpse, dq_rope, dk_rope, dsink): op-plugin master's seven outputs; dpse is empty, and so
    are dq_rope / dk_rope without rope inputs and dsink without a sink."""
    dq, dk, dv, dq_rope, dk_rope, dsink = _backward(
        query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max, softmax_sum,
        softmax_in, attention_in, query_rope, key_rope, scale_value, keep_prob, pre_tokens, next_tokens,
        inner_precise, seed, offset, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, q_start_idx,
        kv_start_idx, softmax_layout, sink)
    return dq, dk, dv, query.new_empty(0), dq_rope, dk_rope, dsink


def _int_list(lengths):
    """v3's lengths: an int64 cpu tensor (or a list) as a list of ints."""
    return None if lengths is None else [int(x) for x in (lengths.tolist() if isinstance(lengths, torch.Tensor)
                                                          else lengths)]


def npu_fusion_attention_v3(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                            scale=1., keep_prob=1., pre_tockens=INT32_MAX, next_tockens=INT32_MAX, inner_precise=0,
                            prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                            gen_mask_parallel=True, sync=False, softmax_layout="", sink=None):
    """-> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset): torch_npu's graph-mode form of
    npu_fusion_attention (op-plugin master): the lengths are int64 cpu tensors, seed and offset are returned as
    int64 tensors (for npu_fusion_attention_grad_v3), numels is not."""
    out, smax, ssum, soft, seed, offset, _ = _forward(
        query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, None, None, scale, keep_prob,
        pre_tockens, next_tockens, inner_precise, prefix, _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen),
        sparse_mode, 1, None, None, softmax_layout, sink)
    as_tensor = (lambda x: x.reshape(1) if isinstance(x, torch.Tensor) else torch.tensor([x], dtype=torch.int64))
    return out, smax, ssum, soft, as_tensor(seed), as_tensor(offset)


def npu_fusion_attention_grad_v3(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                                 atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                                 attention_in=None, scale_value=1., keep_prob=1., pre_tockens=INT32_MAX,
                                 next_tockens=INT32_MAX, inner_precise=0, seed=None, offset=None, prefix=None,
                                 actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                                 sync=False, softmax_layout="", sink=None):
    """-> (dq, dk, dv, dpse, dsink): npu_fusion_attention_grad with v3's forms (seed / offset and the lengths as
    tensors)."""
    seed = 0 if seed is None else int(seed.reshape(-1)[0]) if isinstance(seed, torch.Tensor) else int(seed)
    offset = 0 if offset is None else int(offset.reshape(-1)[0]) if isinstance(offset, torch.Tensor) else int(offset)
    dq, dk, dv, _, _, dsink = _backward(query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask,
                                        softmax_max, softmax_sum, softmax_in, attention_in, None, None, scale_value,
                                        keep_prob, pre_tockens, next_tockens, inner_precise, seed, offset, prefix,
                                        _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen), sparse_mode, 1,
                                        None, None, softmax_layout, sink)
    return dq, dk, dv, query.new_empty(0), dsink


def npu_key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos, norm_weight=None,
                 norm_bias=None, cos=None, sin=None, cu_seqlens=None, seqused=None, cmp_ratio=4, norm_eps=1e-6,
                 rotary_mode=0, capacity="fixed"):
    """-> pooled_key; state_cache is updated in place (docs/KEYPOOL.md).  As the device returns it today
    (aclnnKeyPool's infershape): [B, ceil(L * block_size / cmp_ratio), D] for BSH and TH alike, each batch's
    valid rows (npu_key_pool_valid_rows) first and zeros after them.  capacity="current" (an attnops
    extension) gives the seed's current-input capacity instead (its rows past the valid ones zero here too)."""
    return ops.key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos,
                        cmp_ratio=cmp_ratio, norm_eps=norm_eps, rotary_mode=rotary_mode, capacity=capacity,
                        **ops.present(norm_weight=norm_weight, norm_bias=norm_bias, cos=cos, sin=sin,
                                      cu_seqlens=cu_seqlens, seqused=seqused))


def npu_key_pool_valid_rows(hidden_states, start_pos, cu_seqlens=None, cmp_ratio=4):
    """int64 [B]: how many rows of npu_key_pool's output each batch fills."""
    return torch.from_numpy(_kp_ar.key_pool_valid_rows(hidden_states, start_pos, cu_seqlens, cmp_ratio))


def _gamma(rmsnorm_gamma, enable_rmsnorm, like):
    """The seed's reference skips the gamma product when it is None; multiplying by ones is the same."""
    if enable_rmsnorm and rmsnorm_gamma is None:
        return torch.ones(like.shape[-1], dtype=like.dtype)
    return rmsnorm_gamma if enable_rmsnorm else None


def ai_infra_block_attn_res(blocks, proj_weight, partial_block=None, scale=1.0, rmsnorm_eps=1e-6,
                            rmsnorm_gamma=None, enable_rmsnorm=True, rms_out_flag=True, alpha_out_flag=True):
    """-> (h, rms_cache f32 [B,T,L,1] or None, alpha_cache f32 [B,T,L] or None), the PyPTO kernel's
    interface; differentiable in blocks, partial_block, proj_weight and rmsnorm_gamma."""
    h, rms, alpha = ops.attn_res(list(blocks), proj_weight, partial_block=partial_block,
                                 rmsnorm_gamma=_gamma(rmsnorm_gamma, enable_rmsnorm, proj_weight), scale=scale,
                                 rmsnorm_eps=rmsnorm_eps, enable_rmsnorm=enable_rmsnorm)
    return h, rms if (enable_rmsnorm and rms_out_flag) else None, alpha if alpha_out_flag else None


def ai_infra_block_attn_res_backward(grad_h, blocks, proj_weight, alpha_cache, partial_block=None,
                                     rmsnorm_gamma=None, rms_cache=None, scale=1.0, enable_rmsnorm=True):
    """-> (grad_blocks list, grad_partial_block or None, grad_proj_weight, grad_rmsnorm_gamma or None),
    from the forward's caches (the softmax is not recomputed)."""
    grads, grad_partial, grad_proj, grad_gamma = ops.attn_res_grad(
        grad_h, list(blocks), proj_weight, alpha_cache, partial_block=partial_block,
        rmsnorm_gamma=_gamma(rmsnorm_gamma, enable_rmsnorm, proj_weight), rms=rms_cache, scale=scale,
        enable_rmsnorm=enable_rmsnorm)
    return (grads, grad_partial if partial_block is not None else None, grad_proj,
            grad_gamma if enable_rmsnorm else None)


# ---- FusedInferAttentionScore and its older siblings (docs/FIA.md) ------------------------------
def _left_out(op, **given):
    """NotImplementedError naming the first given argument attnops leaves out (docs/FIA.md)."""
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError(f"attnops: {op}: {name} is not supported (docs/FIA.md, \"Left out\")")


def _one_tensor(op, name, t):
    """key / value: a tensor, or torch_npu's one-element tensor list."""
    if isinstance(t, (list, tuple)):
        if len(t) != 1:
            raise NotImplementedError(f"attnops: {op}: {name} as a list of {len(t)} tensors is not supported")
        return t[0]
    return t


def npu_fused_infer_attention_score(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
                                    actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None,
                                    dequant_scale2=None, quant_scale2=None, quant_offset2=None,
                                    antiquant_scale=None, antiquant_offset=None, key_antiquant_scale=None,
                                    key_antiquant_offset=None, value_antiquant_scale=None,
                                    value_antiquant_offset=None, block_table=None, query_padding_size=None,
                                    kv_padding_size=None, key_shared_prefix=None, value_shared_prefix=None,
                                    actual_shared_prefix_len=None, query_rope=None, key_rope=None,
                                    key_rope_antiquant_scale=None, num_heads=1, scale=1.0,
                                    pre_tokens=INT32_MAX, next_tokens=INT32_MAX, input_layout="BSH",
                                    num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0,
                                    antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0,
                                    softmax_lse_flag=False):
    """-> (attention_out, softmax_lse): op-plugin 7.1.0's schema; softmax_lse is [B, N, S1, 1] (TND
    [T, N, 1]) with softmax_lse_flag, else a one-element zero."""
    op = "npu_fused_infer_attention_score"
    _left_out(op, dequant_scale1=dequant_scale1, quant_scale1=quant_scale1, dequant_scale2=dequant_scale2,
              quant_scale2=quant_scale2, quant_offset2=quant_offset2, query_padding_size=query_padding_size,
              kv_padding_size=kv_padding_size, key_shared_prefix=key_shared_prefix,
              value_shared_prefix=value_shared_prefix, actual_shared_prefix_len=actual_shared_prefix_len,
              key_rope_antiquant_scale=key_rope_antiquant_scale)
    return ops.fused_infer_attention_score(
        query, _one_tensor(op, "key", key), _one_tensor(op, "value", value), pse_shift=pse_shift,
        atten_mask=atten_mask, actual_seq_lengths=ops.lengths_tensor(actual_seq_lengths),
        actual_seq_lengths_kv=ops.lengths_tensor(actual_seq_lengths_kv), block_table=block_table, query_rope=query_rope,
        key_rope=key_rope, num_heads=num_heads, scale=scale, pre_tokens=pre_tokens, next_tokens=next_tokens,
        input_layout=input_layout.upper(), num_key_value_heads=num_key_value_heads, sparse_mode=sparse_mode,
        inner_precise=inner_precise, block_size=block_size, softmax_lse_flag=softmax_lse_flag,
        key_antiquant_scale=key_antiquant_scale, key_antiquant_offset=key_antiquant_offset,
        value_antiquant_scale=value_antiquant_scale, value_antiquant_offset=value_antiquant_offset,
        antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset, antiquant_mode=antiquant_mode,
        key_antiquant_mode=key_antiquant_mode, value_antiquant_mode=value_antiquant_mode)


def npu_incre_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                              actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None, block_table=None,
                              dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None,
                              quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0,
                              input_layout="BSH", num_key_value_heads=0, block_size=0, inner_precise=1):
    """-> attention_out: the decode step; actual_seq_lengths are the key/value lengths (IFA's meaning)."""
    _left_out("npu_incre_flash_attention", padding_mask=padding_mask, dequant_scale1=dequant_scale1,
              quant_scale1=quant_scale1,
              dequant_scale2=dequant_scale2, quant_scale2=quant_scale2, quant_offset2=quant_offset2,
              kv_padding_size=kv_padding_size)
    return npu_fused_infer_attention_score(
        query, key, value, pse_shift=pse_shift, atten_mask=atten_mask, actual_seq_lengths_kv=actual_seq_lengths,
        antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset, block_table=block_table,
        num_heads=num_heads, scale=scale_value, input_layout=input_layout,
        num_key_value_heads=num_key_value_heads, block_size=block_size, inner_precise=inner_precise)[0]


def npu_prompt_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                               actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None,
                               quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0,
                               pre_tokens=2147473647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
                               actual_seq_lengths_kv=None, sparse_mode=0):
    """-> attention_out: the prompt branch; sparse_mode 10..14 is op-plugin's high-precision alias of 0..4."""
    _left_out("npu_prompt_flash_attention", padding_mask=padding_mask, deq_scale1=deq_scale1,
              quant_scale1=quant_scale1, deq_scale2=deq_scale2, quant_scale2=quant_scale2,
              quant_offset2=quant_offset2)
    inner_precise = 1
    if 10 <= sparse_mode <= 14:
        sparse_mode, inner_precise = sparse_mode - 10, 0
    return npu_fused_infer_attention_score(
        query, key, value, pse_shift=pse_shift, atten_mask=atten_mask, actual_seq_lengths=actual_seq_lengths,
        actual_seq_lengths_kv=actual_seq_lengths_kv, num_heads=num_heads, scale=scale_value, pre_tokens=pre_tokens,
        next_tokens=next_tokens, input_layout=input_layout, num_key_value_heads=num_key_value_heads,
        sparse_mode=sparse_mode, inner_precise=inner_precise)[0]


# op-plugin's FusedInferAttentionScoreV2 layouts (get_query_and_attention_out_layout): input_layout ->
# (query's layout, attention_out's).  The library takes BSH, BSND, BNSD and TND queries; NTD and NSD
# queries (and non-paged key / value) are views of them, and an output layout the library does not
# write is a permutation of the query layout's output.
_V2_LAYOUTS = {"BSH": ("BSH", "BSH"), "BSND": ("BSND", "BSND"), "BNSD": ("BNSD", "BNSD"), "TND": ("TND", "TND"),
               "NTD": ("NTD", "NTD"), "BNSD_BSND": ("BNSD", "BSND"), "BSH_BNSD": ("BSH", "BNSD"),
               "BSND_BNSD": ("BSND", "BNSD"), "NTD_TND": ("NTD", "TND"), "BSH_NBSD": ("BSH", "NBSD"),
               "BSND_NBSD": ("BSND", "NBSD"), "BNSD_NBSD": ("BNSD", "NBSD"), "TND_NTD": ("TND", "NTD"),
               "NSD": ("NSD", "NSD")}
# the query layouts as the library takes them: (its layout, the view of a tensor in the query's layout)
_V2_QUERY_VIEWS = {"NTD": ("TND", lambda t: t.permute(1, 0, 2)), "NSD": ("BNSD", lambda t: t.unsqueeze(0))}


def _v2_output(out, lib_layout, want, num_heads):
    """attention_out from the library's layout (BSH, BSND, BNSD, TND) to `want` (adds NBSD, NTD, NSD)."""
    if want in (lib_layout, "TND") or (lib_layout, want) == ("BNSD", "NSD"):
        return out[0] if want == "NSD" else out
    if lib_layout == "TND":  # want NTD
        return out.permute(1, 0, 2).contiguous()
    if lib_layout == "BSH":
        out = out.unflatten(2, (num_heads, -1))
    bnsd = out if lib_layout == "BNSD" else out.permute(0, 2, 1, 3)
    return {"BSND": lambda: bnsd.permute(0, 2, 1, 3), "BNSD": lambda: bnsd,
            "NBSD": lambda: bnsd.permute(1, 0, 2, 3)}[want]().contiguous()


def npu_fused_infer_attention_score_v2(query, key, value, *, query_rope=None, key_rope=None, pse_shift=None,
                                       atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, block_table=None,
                                       dequant_scale_query=None, dequant_scale_key=None, dequant_offset_key=None,
                                       dequant_scale_value=None, dequant_offset_value=None,
                                       dequant_scale_key_rope=None, quant_scale_out=None, quant_offset_out=None,
                                       quant_scale_p=None, learnable_sink=None, num_query_heads=1,
                                       num_key_value_heads=0, softmax_scale=1.0, pre_tokens=INT32_MAX,
                                       next_tokens=INT32_MAX, input_layout="BSH", sparse_mode=0, block_size=0,
                                       query_quant_mode=0, key_quant_mode=0, value_quant_mode=0, inner_precise=0,
                                       return_softmax_lse=False, query_dtype=None, key_dtype=None, value_dtype=None,
                                       query_rope_dtype=None, key_rope_dtype=None, key_shared_prefix_dtype=None,
                                       value_shared_prefix_dtype=None, dequant_scale_query_dtype=None,
                                       dequant_scale_key_dtype=None, dequant_scale_value_dtype=None,
                                       dequant_scale_key_rope_dtype=None, out_dtype=None):
    """-> (attention_out, softmax_lse): op-plugin's current schema (the v1 op's arguments renamed, as its
    FusedInferAttentionScoreV2 kernel hands them to aclnnFusedInferAttentionScoreV4: dequant_scale_key /
    dequant_offset_key / key_quant_mode are the int8 key's antiquant scale / offset / mode, likewise for
    value).  softmax_lse is [B, N, S1, 1] ([T, N, 1] for the TND / NTD layouts) with return_softmax_lse,
    else an empty f32 tensor, as op-plugin allocates it.  Arguments attnops does not implement raise
    NotImplementedError naming them (docs/PYTHON.md)."""
    op = "npu_fused_infer_attention_score_v2"
    _left_out(op, dequant_scale_query=dequant_scale_query, dequant_scale_key_rope=dequant_scale_key_rope,
              quant_scale_out=quant_scale_out, quant_offset_out=quant_offset_out, quant_scale_p=quant_scale_p,
              query_dtype=query_dtype, key_dtype=key_dtype, value_dtype=value_dtype,
              query_rope_dtype=query_rope_dtype, key_rope_dtype=key_rope_dtype,
              key_shared_prefix_dtype=key_shared_prefix_dtype, value_shared_prefix_dtype=value_shared_prefix_dtype,
              dequant_scale_query_dtype=dequant_scale_query_dtype, dequant_scale_key_dtype=dequant_scale_key_dtype,
              dequant_scale_value_dtype=dequant_scale_value_dtype,
              dequant_scale_key_rope_dtype=dequant_scale_key_rope_dtype, out_dtype=out_dtype)
    if query_quant_mode != 0:
        raise NotImplementedError(f"attnops: {op}: query_quant_mode {query_quant_mode} is not supported (a quantised "
                                  "query; docs/FIA.md, \"Left out\")")
    layout = _layout(input_layout)
    if layout not in _V2_LAYOUTS:
        raise ValueError(f"attnops: {op}: input_layout is {input_layout!r}; it must be one of "
                         f"{', '.join(_V2_LAYOUTS)}")
    q_layout, out_layout = _V2_LAYOUTS[layout]
    key, value = _one_tensor(op, "key", key), _one_tensor(op, "value", value)
    lib_layout, view = _V2_QUERY_VIEWS.get(q_layout, (q_layout, None))
    if view is not None:
        query, query_rope = view(query), query_rope if query_rope is None else view(query_rope)
        if block_table is None:  # key and value follow the query's layout; a paged cache has its own
            key, value = view(key), view(value)
            key_rope = key_rope if key_rope is None else view(key_rope)
    if (lib_layout, out_layout) == ("BNSD", "BSND"):
        lib_layout = out_layout = "BNSD_BSND"
    out, lse = ops.fused_infer_attention_score(
        query, key, value, pse_shift=pse_shift, atten_mask=atten_mask,
        actual_seq_lengths=ops.lengths_tensor(actual_seq_qlen),
        actual_seq_lengths_kv=ops.lengths_tensor(actual_seq_kvlen),
        block_table=block_table, query_rope=query_rope, key_rope=key_rope, num_heads=num_query_heads,
        scale=softmax_scale, pre_tokens=pre_tokens, next_tokens=next_tokens, input_layout=lib_layout,
        num_key_value_heads=num_key_value_heads, sparse_mode=sparse_mode, inner_precise=inner_precise,
        block_size=block_size, softmax_lse_flag=bool(return_softmax_lse), key_antiquant_scale=dequant_scale_key,
        key_antiquant_offset=dequant_offset_key, value_antiquant_scale=dequant_scale_value,
        value_antiquant_offset=dequant_offset_value, key_antiquant_mode=key_quant_mode,
        value_antiquant_mode=value_quant_mode, **ops.present(learnable_sink=learnable_sink))
    if lib_layout == "BNSD_BSND":
        lib_layout, out_layout = "BSND", "BSND"
    out = _v2_output(out, lib_layout, out_layout, num_query_heads)
    return out, lse if return_softmax_lse else lse.new_empty(0)
