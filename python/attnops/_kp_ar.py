"""KeyPool and Block Attention Residuals on numpy arrays (attnops.golden): output shapes and the C calls.

KeyPool (docs/KEYPOOL.md): hidden_states bf16/f16 BSH [B,S,H] or TH [T,H] (with
cu_seqlens i32 [B+1]), wk / gate_weight [D,H], ape f32 [R,D], state_cache f32
[blocks, block_size, 2D] (updated in place), cache_block_table i32 [B,L],
start_pos i32 [B]; pooled_key by `capacity`: "fixed" (CANN today, the default)
[B, ceil(L*block_size/R), D] with zeros past each batch's valid rows, or
"current" (the seed's current-input capacity) [B, ceil(S/R), D] (BSH) or
[min(T, T//R + B), D] (TH) with the rows past the valid ones unspecified.

AttnRes (docs/ATTNRES.md): N blocks [B,T,D] (+ partial_block), proj_weight and
rmsnorm_gamma [D]; h [B,T,D], rms f32 [B,T,L,1], alpha f32 [B,T,L], L = N (+1).
"""
import ctypes

import numpy as np

from . import _lib
from ._views import Call


CAPACITIES = ("current", "fixed")  # attnops_key_pool_capacity's order


def key_pool(hidden_states, wk, gate_weight, ape, state_cache, cache_block_table, start_pos, *, norm_weight,
             norm_bias, cos, sin, cu_seqlens, seqused, cmp_ratio, norm_eps, rotary_mode, capacity, impl, num_threads):
    """pooled_key (a new array, of the library's shape for `capacity`); state_cache is updated in place."""
    if capacity not in CAPACITIES:
        raise ValueError(f"attnops: key_pool: capacity is {capacity!r}; it must be \"fixed\" or \"current\"")
    call = Call()
    args = _lib.KeyPoolArgs()
    _lib.lib.attnops_key_pool_args_init(ctypes.byref(args))
    for name, t in (("hidden_states", hidden_states), ("wk", wk), ("gate_weight", gate_weight), ("ape", ape),
                    ("state_cache", state_cache), ("cache_block_table", cache_block_table),
                    ("start_pos", start_pos), ("norm_weight", norm_weight), ("norm_bias", norm_bias), ("cos", cos),
                    ("sin", sin), ("cu_seqlens", cu_seqlens), ("seqused", seqused)):
        setattr(args, name, call.view(t, name))
    args.cmp_ratio, args.norm_eps, args.rotary_mode = cmp_ratio, norm_eps, rotary_mode
    args.capacity = CAPACITIES.index(capacity)
    args.impl, args.num_threads = _impl(impl), num_threads
    rank, shape = ctypes.c_int32(), (ctypes.c_int64 * 3)()
    _lib.check(_lib.lib.attnops_key_pool_output_shape(ctypes.byref(args), ctypes.byref(rank), shape))
    out = call.empty(tuple(shape[:rank.value]), hidden_states)
    args.pooled_key = call.view(out, "pooled_key")
    _lib.run("key_pool", args)
    return out


def key_pool_valid_rows(hidden_states, start_pos, cu_seqlens=None, cmp_ratio=4):
    """int64 [B]: the valid rows of each batch, by the library's rule (attnops_key_pool_valid_rows).  The rule
    reads hidden_states' shape, start_pos, cu_seqlens and cmp_ratio only; the inputs the library also checks
    are stand-ins that fit them, zero-stride views of one element: an f16 hidden_states of the caller's shape, one
    [1, H] weight pair, and a single cache block as long as any batch can reach."""
    shape = tuple(hidden_states.shape)
    starts = np.asarray(start_pos, np.int32)
    cu = None if cu_seqlens is None else np.asarray(cu_seqlens, np.int32)
    batch = shape[0] if len(shape) == 3 else len(starts) if cu is None else cu.shape[0] - 1
    tokens = shape[1] if len(shape) == 3 else shape[0]
    block_size = max(1, int(starts.max(initial=0)) + tokens)
    weight = np.broadcast_to(np.float16(0), (1, shape[-1]))
    stand_ins = (("hidden_states", np.broadcast_to(np.float16(0), shape)), ("wk", weight), ("gate_weight", weight),
                 ("ape", np.broadcast_to(np.float32(0), (max(cmp_ratio, 1), 1))),
                 ("state_cache", np.broadcast_to(np.float32(0), (2, block_size, 2))),
                 ("cache_block_table", np.broadcast_to(np.int32(1), (batch, 1))))
    call = Call()
    args = _lib.KeyPoolArgs()
    _lib.lib.attnops_key_pool_args_init(ctypes.byref(args))
    for name, t in stand_ins + (("start_pos", starts), ("cu_seqlens", cu)):
        setattr(args, name, call.view(t, name))
    args.cmp_ratio = cmp_ratio
    rows = np.empty(batch, np.int64)
    out = rows.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    _lib.check(_lib.lib.attnops_key_pool_valid_rows(ctypes.byref(args), out))
    return rows


def _impl(impl):
    if impl not in _lib.IMPL:
        raise ValueError(f"attnops: impl is {impl!r}; it must be one of {', '.join(_lib.IMPL)}")
    return _lib.IMPL[impl]


def attn_res(blocks, proj_weight, *, partial_block, rmsnorm_gamma, scale, rmsnorm_eps, enable_rmsnorm, impl,
             num_threads):
    """(h, rms, alpha); rms is empty without RMSNorm."""
    if not blocks:
        raise ValueError("attnops: blocks is empty; Block Attention Residuals needs at least one block")
    call = Call()
    args = _lib.AttnResFwdArgs()
    _lib.lib.attnops_attn_res_fwd_args_init(ctypes.byref(args))
    args.blocks, args.num_blocks = call.view_array(blocks, "blocks"), len(blocks)
    args.partial_block = call.view(partial_block, "partial_block")
    args.proj_weight, args.rmsnorm_gamma = call.view(proj_weight, "proj_weight"), call.view(rmsnorm_gamma,
                                                                                            "rmsnorm_gamma")
    args.scale, args.rmsnorm_eps, args.enable_rmsnorm = scale, rmsnorm_eps, int(enable_rmsnorm)
    args.impl, args.num_threads = _impl(impl), num_threads
    b, t, d = blocks[0].shape
    levels = len(blocks) + (partial_block is not None)
    h = call.empty((b, t, d), blocks[0])
    rms = call.empty_f32((b, t, levels, 1) if enable_rmsnorm else (0,))
    alpha = call.empty_f32((b, t, levels))
    args.h, args.alpha = call.view(h, "h"), call.view(alpha, "alpha")
    if enable_rmsnorm:
        args.rms = call.view(rms, "rms")
    _lib.run("attn_res", args)
    return h, rms, alpha


def attn_res_grad(grad_h, blocks, proj_weight, alpha, *, partial_block, rmsnorm_gamma, rms, scale, enable_rmsnorm,
                  impl, num_threads):
    """(grad_blocks list, grad_partial_block or empty, grad_proj_weight, grad_rmsnorm_gamma or empty)."""
    if not blocks:
        raise ValueError("attnops: blocks is empty; Block Attention Residuals needs at least one block")
    call = Call()
    args = _lib.AttnResBwdArgs()
    _lib.lib.attnops_attn_res_bwd_args_init(ctypes.byref(args))
    args.grad_h = call.view(grad_h, "grad_h")
    args.blocks, args.num_blocks = call.view_array(blocks, "blocks"), len(blocks)
    args.partial_block = call.view(partial_block, "partial_block")
    args.proj_weight, args.rmsnorm_gamma = call.view(proj_weight, "proj_weight"), call.view(rmsnorm_gamma,
                                                                                            "rmsnorm_gamma")
    args.alpha, args.rms = call.view(alpha, "alpha"), call.view(rms if enable_rmsnorm else None, "rms")
    args.scale, args.enable_rmsnorm = scale, int(enable_rmsnorm)
    args.impl, args.num_threads = _impl(impl), num_threads
    grad_blocks = [call.empty(t.shape, t) for t in blocks]
    args.grad_blocks = call.view_array(grad_blocks, "grad_blocks")
    grad_partial = call.empty(partial_block.shape if partial_block is not None else (0,), blocks[0])
    grad_proj = call.empty(proj_weight.shape, proj_weight)
    grad_gamma = call.empty(rmsnorm_gamma.shape if enable_rmsnorm else (0,), blocks[0])
    if partial_block is not None:
        args.grad_partial_block = call.view(grad_partial, "grad_partial_block")
    args.grad_proj_weight = call.view(grad_proj, "grad_proj_weight")
    if enable_rmsnorm:
        args.grad_rmsnorm_gamma = call.view(grad_gamma, "grad_rmsnorm_gamma")
    _lib.run("attn_res_grad", args)
    return grad_blocks, grad_partial, grad_proj, grad_gamma
