"""The operators as torch.library custom ops (namespace `attnops`), with fake
(meta) implementations for torch.compile and autograd that calls the grad ops.

    torch.ops.attnops.flash_attention_score(query, key, value, head_num, input_layout, ...)
        -> (attention_out, softmax_max, softmax_sum)
    torch.ops.attnops.flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max,
                                                 softmax_sum, head_num, input_layout, ...)
        -> (dq, dk, dv, dq_rope, dk_rope)
    torch.ops.attnops.fused_infer_attention_score(query, key, value, ...) -> (attention_out, softmax_lse)

Argument names and defaults are CANN's (include/attnops.h), with torch_npu's
int[] for the sequence-length lists.  `impl` picks the implementation
("auto", "cpu": the fast kernel; "reference": the golden; "benchmark").
Each call uses torch.get_num_threads() threads; `deterministic` (or
torch.use_deterministic_algorithms(True)) makes the backward bitwise
independent of the thread count.  dpse is not computed (CANN reserves it):
a pse input gets no gradient.
"""
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _fa, _fia, _kp_ar

_NS = "attnops"


def _common(head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens,
            inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope,
            q_start_idx, kv_start_idx, seed, offset, impl, deterministic, seed_offset=None, softmax_in_layout="",
            cu_seqlens_q=None, cu_seqlens_kv=None, softcap=0.0):
    return _finish(dict(head_num=head_num, input_layout=input_layout, pse=pse, drop_mask=drop_mask,
                        atten_mask=atten_mask, scale=scale, keep_prob=keep_prob, pre_tokens=pre_tokens,
                        next_tokens=next_tokens, inner_precise=inner_precise, prefix=prefix,
                        actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode,
                        pse_type=pse_type, query_rope=query_rope, key_rope=key_rope, q_start_idx=q_start_idx,
                        kv_start_idx=kv_start_idx, seed=seed, offset=offset, impl=impl, deterministic=deterministic,
                        seed_offset=seed_offset, softmax_in_layout=softmax_in_layout, cu_seqlens_q=cu_seqlens_q,
                        cu_seqlens_kv=cu_seqlens_kv, softcap=softcap))


def _finish(kw):
    """The op's arguments as the C params want them (_fa.forward's kw): the run-time seed, the global
    deterministic flag, torch's thread count."""
    seed_offset = kw.pop("seed_offset")
    if seed_offset is not None:  # drawn inside a compiled graph: read at run time
        kw["seed"], kw["offset"] = (int(x) for x in seed_offset.tolist())
    for name, lengths in (("cu_seqlens_q", "actual_seq_qlen"), ("cu_seqlens_kv", "actual_seq_kvlen")):
        cu = kw.pop(name, None)
        if cu is not None:  # flash-attn's [B + 1] from 0, read at run time (a compiled graph's varlen call)
            values = [int(x) for x in cu.tolist()]
            if not values or values[0] != 0:
                raise ValueError(f"attnops: {name} must be cumulative lengths [batch + 1] starting at 0; got "
                                 f"{values[:8]}")
            kw[lengths] = values[1:]
    kw["deterministic"] = kw["deterministic"] or torch.are_deterministic_algorithms_enabled()
    kw["num_threads"] = torch.get_num_threads()
    return kw


def dropout_seed(keep_prob):
    """(seed, offset, seed_offset) of a dropout call, from torch's default CPU generator: a seed in
    [0, 2^62) and offset 0 as ints (seed_offset None) in eager mode; inside torch.compile, where reading
    a drawn number is a graph break, an int64 [2] tensor drawn in the graph, which the op reads at run
    time, and the same tensor's elements as seed and offset.  No dropout: (0, 0, None)."""
    if not 0.0 < keep_prob < 1.0:
        return 0, 0, None
    if torch.compiler.is_compiling():
        seed_offset = torch.cat([torch.randint(0, 2 ** 62, (1,), dtype=torch.int64),
                                 torch.zeros(1, dtype=torch.int64)])
        return seed_offset[0], seed_offset[1], seed_offset
    return int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item()), 0, None


def seed_args(seed, offset, seed_offset):
    """The op's keyword arguments for dropout_seed's result."""
    return dict(seed=seed, offset=offset) if seed_offset is None else dict(seed_offset=seed_offset)


def can_call_directly(*tensors):
    """True when a call needs nothing the dispatcher adds: no autograd (no input requires grad, or grad
    mode is off), no torch.compile tracing, no dispatch or function mode, only plain CPU tensors (no other
    device, subclass, fake, functional or functorch-wrapped tensor).  The torch_npu and flash-attn entry
    points then call the implementation below the op directly, saving the dispatcher's ~100 us per call;
    the results are the same bits (python/tests/test_torch_integration.py)."""
    if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() or \
            torch._C._is_torch_function_mode_enabled():
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if t is None:
            continue
        if type(t) is not torch.Tensor or not t.is_cpu or (grad and t.requires_grad) or \
                torch._C._functorch.is_functorch_wrapped_tensor(t):
            return False
    return True


def flash_attention_score_call(query, key, value, head_num, input_layout, **kw):
    """flash_attention_score through the dispatcher, or directly when nothing needs it."""
    if can_call_directly(query, key, value, kw.get("pse"), kw.get("atten_mask"), kw.get("query_rope"),
                         kw.get("key_rope"), kw.get("seed_offset"), kw.get("cu_seqlens_q"), kw.get("cu_seqlens_kv")):
        return _fa.forward(query, key, value, _call_kwargs(head_num, input_layout, kw))
    return flash_attention_score(query, key, value, head_num, input_layout, **kw)


def flash_attention_score_grad_call(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num,
                                    input_layout, **kw):
    """flash_attention_score_grad through the dispatcher, or directly when nothing needs it."""
    if can_call_directly(query, key, value, dy, attention_in, softmax_max, softmax_sum, kw.get("pse"),
                         kw.get("atten_mask"), kw.get("query_rope"), kw.get("key_rope"), kw.get("seed_offset"),
                         kw.get("cu_seqlens_q"), kw.get("cu_seqlens_kv")):
        return _fa.backward(query, key, value, dy, attention_in, softmax_max, softmax_sum,
                            _call_kwargs(head_num, input_layout, kw))
    return flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num,
                                      input_layout, **kw)


_DEFAULTS = dict(pse=None, drop_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tokens=_fa.INT32_MAX,
                 next_tokens=_fa.INT32_MAX, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None,
                 sparse_mode=0, pse_type=1, query_rope=None, key_rope=None, q_start_idx=None, kv_start_idx=None,
                 seed=2, offset=0, impl="auto", deterministic=False, seed_offset=None, softmax_in_layout="",
                 cu_seqlens_q=None, cu_seqlens_kv=None, softcap=0.0)


def _call_kwargs(head_num, input_layout, kw):
    return _finish({**_DEFAULTS, **kw, "head_num": head_num, "input_layout": input_layout})


@torch.library.custom_op(f"{_NS}::flash_attention_score", mutates_args=(), device_types="cpu")
def flash_attention_score(query: Tensor, key: Tensor, value: Tensor, head_num: int, input_layout: str,
                          pse: Optional[Tensor] = None, drop_mask: Optional[Tensor] = None,
                          atten_mask: Optional[Tensor] = None, scale: float = 1.0, keep_prob: float = 1.0,
                          pre_tokens: int = _fa.INT32_MAX, next_tokens: int = _fa.INT32_MAX,
                          inner_precise: int = 0, prefix: Optional[List[int]] = None,
                          actual_seq_qlen: Optional[List[int]] = None, actual_seq_kvlen: Optional[List[int]] = None,
                          sparse_mode: int = 0, pse_type: int = 1, query_rope: Optional[Tensor] = None,
                          key_rope: Optional[Tensor] = None, q_start_idx: Optional[List[int]] = None,
                          kv_start_idx: Optional[List[int]] = None, seed: int = 2, offset: int = 0,
                          impl: str = "auto", deterministic: bool = False,
                          seed_offset: Optional[Tensor] = None, softmax_in_layout: str = "",
                          cu_seqlens_q: Optional[Tensor] = None,
                          cu_seqlens_kv: Optional[Tensor] = None,
                          softcap: float = 0.0) -> Tuple[Tensor, Tensor, Tensor]:
    """seed_offset: int64 [2] (seed, offset) read at run time instead of seed / offset (a dropout seed
    drawn inside a compiled graph).  softmax_in_layout (TND): "" or "same_as_input" (include/attnops.h).
    cu_seqlens_q / cu_seqlens_kv: TND lengths as flash-attn's int tensors [B + 1] from 0, read at run time
    instead of actual_seq_qlen / actual_seq_kvlen (no output shape depends on them, so a compiled graph
    passes them without reading them).  softcap > 0: the q.k term of every score becomes
    softcap * tanh(scale q.k / softcap) before the bias and the mask (flash-attn's softcap; 0 = off)."""
    return _fa.forward(query, key, value, _common(
        head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens, inner_precise,
        prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope, q_start_idx,
        kv_start_idx, seed, offset, impl, deterministic, seed_offset, softmax_in_layout, cu_seqlens_q,
        cu_seqlens_kv, softcap))


@flash_attention_score.register_fake
def _(query, key, value, head_num, input_layout, *args, **kwargs):
    out = query.new_empty(_fa.out_shape(query, key, value, head_num, input_layout))
    smax = query.new_empty(_fa.stat_shape(query, head_num, input_layout), dtype=torch.float32)
    return out, smax, torch.empty_like(smax)


@torch.library.custom_op(f"{_NS}::flash_attention_score_grad", mutates_args=(), device_types="cpu")
def flash_attention_score_grad(query: Tensor, key: Tensor, value: Tensor, dy: Tensor, attention_in: Tensor,
                               softmax_max: Tensor, softmax_sum: Tensor, head_num: int, input_layout: str,
                               pse: Optional[Tensor] = None, drop_mask: Optional[Tensor] = None,
                               atten_mask: Optional[Tensor] = None, scale: float = 1.0, keep_prob: float = 1.0,
                               pre_tokens: int = _fa.INT32_MAX, next_tokens: int = _fa.INT32_MAX,
                               inner_precise: int = 0, prefix: Optional[List[int]] = None,
                               actual_seq_qlen: Optional[List[int]] = None,
                               actual_seq_kvlen: Optional[List[int]] = None, sparse_mode: int = 0,
                               pse_type: int = 1, query_rope: Optional[Tensor] = None,
                               key_rope: Optional[Tensor] = None, q_start_idx: Optional[List[int]] = None,
                               kv_start_idx: Optional[List[int]] = None, seed: int = 2, offset: int = 0,
                               impl: str = "auto", deterministic: bool = False, seed_offset: Optional[Tensor] = None,
                               softmax_in_layout: str = "", cu_seqlens_q: Optional[Tensor] = None,
                               cu_seqlens_kv: Optional[Tensor] = None, softcap: float = 0.0
                               ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return _fa.backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, _common(
        head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob, pre_tokens, next_tokens, inner_precise,
        prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type, query_rope, key_rope, q_start_idx,
        kv_start_idx, seed, offset, impl, deterministic, seed_offset, softmax_in_layout, cu_seqlens_q,
        cu_seqlens_kv, softcap))


@flash_attention_score_grad.register_fake
def _(query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num, input_layout, pse=None,
      drop_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tokens=_fa.INT32_MAX, next_tokens=_fa.INT32_MAX,
      inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1,
      query_rope=None, key_rope=None, *args, **kwargs):
    rope = [torch.empty_like(t, memory_format=torch.contiguous_format) if t is not None else query.new_empty(0)
            for t in (query_rope, key_rope)]
    return (*(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (query, key, value)), *rope)


# ---- autograd: the backward is the grad op on the saved forward outputs ----------
# Positions of the forward's arguments (the schema above).
_FWD_ARGS = ("query", "key", "value", "head_num", "input_layout", "pse", "drop_mask", "atten_mask", "scale",
             "keep_prob", "pre_tokens", "next_tokens", "inner_precise", "prefix", "actual_seq_qlen",
             "actual_seq_kvlen", "sparse_mode", "pse_type", "query_rope", "key_rope", "q_start_idx", "kv_start_idx",
             "seed", "offset", "impl", "deterministic", "seed_offset", "softmax_in_layout", "cu_seqlens_q",
             "cu_seqlens_kv", "softcap")
_SAVED = ("query", "key", "value", "pse", "drop_mask", "atten_mask", "query_rope", "key_rope", "seed_offset",
          "cu_seqlens_q", "cu_seqlens_kv")


def _setup_context(ctx, inputs, output):
    named = dict(zip(_FWD_ARGS, inputs))
    out, smax, ssum = output
    ctx.save_for_backward(*(named[n] for n in _SAVED), out, smax, ssum)
    ctx.attrs = {n: v for n, v in named.items() if n not in _SAVED}
    ctx.mark_non_differentiable(smax, ssum)


def _backward(ctx, d_out, _d_max, _d_sum):
    *saved, out, smax, ssum = ctx.saved_tensors
    t = dict(zip(_SAVED, saved))
    a = ctx.attrs
    dq, dk, dv, dq_rope, dk_rope = flash_attention_score_grad(
        t["query"], t["key"], t["value"], d_out, out, smax, ssum, a["head_num"], a["input_layout"], pse=t["pse"],
        drop_mask=t["drop_mask"], atten_mask=t["atten_mask"], scale=a["scale"], keep_prob=a["keep_prob"],
        pre_tokens=a["pre_tokens"], next_tokens=a["next_tokens"], inner_precise=a["inner_precise"],
        prefix=a["prefix"], actual_seq_qlen=a["actual_seq_qlen"], actual_seq_kvlen=a["actual_seq_kvlen"],
        sparse_mode=a["sparse_mode"], pse_type=a["pse_type"], query_rope=t["query_rope"], key_rope=t["key_rope"],
        q_start_idx=a["q_start_idx"], kv_start_idx=a["kv_start_idx"], seed=a["seed"], offset=a["offset"],
        impl=a["impl"], deterministic=a["deterministic"], seed_offset=t["seed_offset"],
        softmax_in_layout=a["softmax_in_layout"], cu_seqlens_q=t["cu_seqlens_q"], cu_seqlens_kv=t["cu_seqlens_kv"],
        softcap=a["softcap"])
    grads = dict(query=dq, key=dk, value=dv, query_rope=dq_rope if t["query_rope"] is not None else None,
                 key_rope=dk_rope if t["key_rope"] is not None else None)
    return tuple(grads.get(n) for n in _FWD_ARGS)


torch.library.register_autograd(f"{_NS}::flash_attention_score", _backward, setup_context=_setup_context)


# ---- FusedInferAttentionScore (inference: no gradient) ---------------------------------
@torch.library.custom_op(f"{_NS}::fused_infer_attention_score", mutates_args=(), device_types="cpu")
def fused_infer_attention_score(query: Tensor, key: Tensor, value: Tensor, pse_shift: Optional[Tensor] = None,
                                atten_mask: Optional[Tensor] = None,
                                actual_seq_lengths: Optional[Tensor] = None,
                                actual_seq_lengths_kv: Optional[Tensor] = None,
                                block_table: Optional[Tensor] = None, query_rope: Optional[Tensor] = None,
                                key_rope: Optional[Tensor] = None, num_heads: int = 1, scale: float = 1.0,
                                pre_tokens: int = _fa.INT32_MAX, next_tokens: int = _fa.INT32_MAX,
                                input_layout: str = "BSH", num_key_value_heads: int = 0, sparse_mode: int = 0,
                                inner_precise: int = 0, block_size: int = 0, softmax_lse_flag: bool = False,
                                key_antiquant_scale: Optional[Tensor] = None,
                                key_antiquant_offset: Optional[Tensor] = None,
                                value_antiquant_scale: Optional[Tensor] = None,
                                value_antiquant_offset: Optional[Tensor] = None,
                                antiquant_scale: Optional[Tensor] = None, antiquant_offset: Optional[Tensor] = None,
                                antiquant_mode: int = 0, key_antiquant_mode: int = 0, value_antiquant_mode: int = 0,
                                impl: str = "auto", softcap: float = 0.0,
                                alibi_slopes: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """(attention_out, softmax_lse): docs/INFER_ATTENTION.md.  The lengths are int64 tensors (lengths_tensor), so
    that a decode step whose lengths come from a tensor (flash_attn_with_kvcache's cache_seqlens) compiles.
    softcap and alibi_slopes (f32 [N1] or [B, N1]) are attnops extensions (flash-attn's, for its KV-cache API)."""
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
        alibi_slopes=alibi_slopes, impl=impl, num_threads=torch.get_num_threads())


def lengths_tensor(values):
    """A list of lengths (or None, or a tensor) as the op takes it: an int64 tensor."""
    if values is None or isinstance(values, Tensor):
        return values
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


@fused_infer_attention_score.register_fake
def _(query, key, value, pse_shift=None, atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None,
      block_table=None, query_rope=None, key_rope=None, num_heads=1, scale=1.0, pre_tokens=_fa.INT32_MAX,
      next_tokens=_fa.INT32_MAX, input_layout="BSH", num_key_value_heads=0, sparse_mode=0, inner_precise=0,
      block_size=0, softmax_lse_flag=False, *args, **kwargs):
    out, lse = _fia.output_shapes(query, key, value, input_layout, num_heads, block_table is not None)
    return query.new_empty(out), query.new_empty(lse if softmax_lse_flag else (1,), dtype=torch.float32)


# ---- KeyPool ------------------------------------------------------------------------
@torch.library.custom_op(f"{_NS}::key_pool", mutates_args=("state_cache",), device_types="cpu")
def key_pool(hidden_states: Tensor, wk: Tensor, gate_weight: Tensor, ape: Tensor, state_cache: Tensor,
             cache_block_table: Tensor, start_pos: Tensor, norm_weight: Optional[Tensor] = None,
             norm_bias: Optional[Tensor] = None, cos: Optional[Tensor] = None, sin: Optional[Tensor] = None,
             cu_seqlens: Optional[Tensor] = None, seqused: Optional[Tensor] = None, cmp_ratio: int = 4,
             norm_eps: float = 1e-6, rotary_mode: int = 0, impl: str = "auto") -> Tensor:
    """pooled_key; state_cache is written in place (the trailing incomplete groups)."""
    return _kp_ar.key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos,
                           norm_weight=norm_weight, norm_bias=norm_bias, cos=cos, sin=sin, cu_seqlens=cu_seqlens,
                           seqused=seqused, cmp_ratio=cmp_ratio, norm_eps=norm_eps, rotary_mode=rotary_mode,
                           impl=impl, num_threads=torch.get_num_threads())


@key_pool.register_fake
def _(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos, norm_weight=None,
      norm_bias=None, cos=None, sin=None, cu_seqlens=None, seqused=None, cmp_ratio=4, *args, **kwargs):
    return hidden_states.new_empty(_kp_ar.key_pool_shape(hidden_states, wk, cmp_ratio, cu_seqlens))


# ---- Block Attention Residuals -----------------------------------------------------------
@torch.library.custom_op(f"{_NS}::attn_res", mutates_args=(), device_types="cpu")
def attn_res(blocks: List[Tensor], proj_weight: Tensor, partial_block: Optional[Tensor] = None,
             rmsnorm_gamma: Optional[Tensor] = None, scale: float = 1.0, rmsnorm_eps: float = 1e-6,
             enable_rmsnorm: bool = True, impl: str = "auto") -> Tuple[Tensor, Tensor, Tensor]:
    """(h, rms [B,T,L,1] f32 (empty without RMSNorm), alpha [B,T,L] f32)."""
    return _kp_ar.attn_res(blocks, proj_weight, partial_block=partial_block, rmsnorm_gamma=rmsnorm_gamma,
                           scale=scale, rmsnorm_eps=rmsnorm_eps, enable_rmsnorm=enable_rmsnorm, impl=impl,
                           num_threads=torch.get_num_threads())


@attn_res.register_fake
def _(blocks, proj_weight, partial_block=None, rmsnorm_gamma=None, scale=1.0, rmsnorm_eps=1e-6, enable_rmsnorm=True,
      impl="auto"):
    b, t, _ = blocks[0].shape
    levels = len(blocks) + (partial_block is not None)
    rms = blocks[0].new_empty((b, t, levels, 1) if enable_rmsnorm else (0,), dtype=torch.float32)
    return torch.empty_like(blocks[0]), rms, blocks[0].new_empty((b, t, levels), dtype=torch.float32)


@torch.library.custom_op(f"{_NS}::attn_res_grad", mutates_args=(), device_types="cpu")
def attn_res_grad(grad_h: Tensor, blocks: List[Tensor], proj_weight: Tensor, alpha: Tensor,
                  partial_block: Optional[Tensor] = None, rmsnorm_gamma: Optional[Tensor] = None,
                  rms: Optional[Tensor] = None, scale: float = 1.0, enable_rmsnorm: bool = True,
                  impl: str = "auto") -> Tuple[List[Tensor], Tensor, Tensor, Tensor]:
    """(grad_blocks, grad_partial_block (empty without one), grad_proj_weight, grad_rmsnorm_gamma (empty
    without RMSNorm))."""
    grads, grad_partial, grad_proj, grad_gamma = _kp_ar.attn_res_grad(
        grad_h, blocks, proj_weight, alpha, partial_block=partial_block, rmsnorm_gamma=rmsnorm_gamma, rms=rms,
        scale=scale, enable_rmsnorm=enable_rmsnorm, impl=impl, num_threads=torch.get_num_threads())
    return grads, grad_partial, grad_proj, grad_gamma


@attn_res_grad.register_fake
def _(grad_h, blocks, proj_weight, alpha, partial_block=None, rmsnorm_gamma=None, rms=None, scale=1.0,
      enable_rmsnorm=True, impl="auto"):
    grad_partial = torch.empty_like(partial_block) if partial_block is not None else grad_h.new_empty(0)
    grad_gamma = torch.empty_like(rmsnorm_gamma) if enable_rmsnorm else grad_h.new_empty(0)
    return [torch.empty_like(t) for t in blocks], grad_partial, torch.empty_like(proj_weight), grad_gamma


def _attn_res_setup(ctx, inputs, output):
    blocks, proj_weight, partial_block, rmsnorm_gamma, scale, _eps, enable_rmsnorm, impl = inputs
    _h, rms, alpha = output
    ctx.num_blocks = len(blocks)
    ctx.has_partial = partial_block is not None
    ctx.attrs = (scale, enable_rmsnorm, impl)
    ctx.save_for_backward(*blocks, proj_weight, partial_block, rmsnorm_gamma, rms, alpha)
    ctx.mark_non_differentiable(rms, alpha)


def _attn_res_backward(ctx, grad_h, _grad_rms, _grad_alpha):
    saved = ctx.saved_tensors
    blocks, (proj_weight, partial_block, rmsnorm_gamma, rms, alpha) = list(saved[:ctx.num_blocks]), saved[
        ctx.num_blocks:]
    scale, enable_rmsnorm, impl = ctx.attrs
    grads, grad_partial, grad_proj, grad_gamma = attn_res_grad(
        grad_h, blocks, proj_weight, alpha, partial_block, rmsnorm_gamma, rms, scale, enable_rmsnorm, impl)
    return (grads, grad_proj, grad_partial if ctx.has_partial else None, grad_gamma if enable_rmsnorm else None,
            None, None, None, None)


torch.library.register_autograd(f"{_NS}::attn_res", _attn_res_backward, setup_context=_attn_res_setup)
