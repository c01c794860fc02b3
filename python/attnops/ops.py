"""The operators as torch ops (namespace `attnops`).

    torch.ops.attnops.flash_attention_score(query, key, value, head_num, input_layout, ...)
        -> (attention_out, softmax_max, softmax_sum)
    torch.ops.attnops.flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max,
                                                 softmax_sum, head_num, input_layout, ...)
        -> (dq, dk, dv, dq_rope, dk_rope)
    torch.ops.attnops.fused_infer_attention_score(query, key, value, ...) -> (attention_out, softmax_lse)

FlashAttention and FusedInferAttentionScore are registered from C++ (python/csrc, the package's
libattnops_torch.so) with CPU, Meta and (FlashAttention) Autograd kernels; their schemas are
there, one list of attributes each.  KeyPool and Block Attention Residuals are torch.library
custom ops defined below.  Argument names and defaults are CANN's (include/attnops.h), with
torch_npu's int[] for the sequence-length lists.  `impl` picks the implementation ("auto",
"cpu": the fast kernel; "reference": the golden; "benchmark").  Each call uses
torch.get_num_threads() threads; `deterministic` (or torch.use_deterministic_algorithms(True))
makes the backward bitwise independent of the thread count.  dpse is not computed (CANN reserves
it): a pse input gets no gradient.

A failed call of torch.ops.attnops.* raises ValueError / NotImplementedError / RuntimeError with
the library's sentence; the functions of this module (and every entry point of the package)
raise attnops.AttnopsError's subclasses, which carry the library's status.
"""
from pathlib import Path
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _build_info, _kp_ar, _lib

_NS = "attnops"


def _release(version):
    return tuple(version.split("+")[0].split(".")[:2])


def _load_binding():
    """Load libattnops_torch.so into torch.ops.attnops, after checking it was built for this torch: libtorch's
    C++ ABI changes between torch releases, so a binding built for another one must not be loaded."""
    built = _build_info.TORCH_VERSION
    if not built:
        raise ImportError("attnops: this installation was built without torch, so it has no torch ops; reinstall it "
                          "where torch is installed: pip install --no-build-isolation <attnops source>")
    if _release(built) != _release(torch.__version__):
        raise ImportError(f"attnops: the torch ops were built for torch {built}, but torch {torch.__version__} is "
                          "installed; reinstall attnops against it: pip install --no-build-isolation <attnops source>")
    torch.ops.load_library(str(Path(__file__).resolve().parent / "_lib" / "libattnops_torch.so"))


_load_binding()


def _translated(op):
    """op (an OpOverload) as a function raising attnops' exceptions (with the library's status) for the
    library's failures; a call that fails elsewhere raises what it raised."""
    def call(*args, **kwargs):
        try:
            return op(*args, **kwargs)
        except (ValueError, NotImplementedError, RuntimeError) as exc:
            error = _lib.error_from_message(str(exc))
            if error is None:
                raise
            raise error from None
    call.__name__ = call.__qualname__ = op.__name__.split(".")[0]
    call.__doc__ = f"torch.ops.attnops.{call.__name__}, raising attnops.AttnopsError's subclasses.\n\n{op._schema}"
    return call


flash_attention_score = _translated(torch.ops.attnops.flash_attention_score.default)
flash_attention_score_grad = _translated(torch.ops.attnops.flash_attention_score_grad.default)
fused_infer_attention_score = _translated(torch.ops.attnops.fused_infer_attention_score.default)


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


def present(**kw):
    """The keyword arguments whose value is not None: an absent optional argument is left to the op's
    default, which torch fills in without parsing a keyword (~0.5 us each on a 37-argument schema)."""
    return {k: v for k, v in kw.items() if v is not None}


def dropout_block_args(block):
    """The op's dropout_* keyword arguments of a _fa.DropoutBlock (a block of a larger call)."""
    return dict(dropout_head_num=block.head_num, dropout_head_start=block.head_start,
                dropout_seq_qlen=block.seq_qlen, dropout_seq_kvlen=block.seq_kvlen, dropout_q_start=block.q_start,
                dropout_kv_start=block.kv_start)


def lengths_tensor(values):
    """A list of lengths (or None, or a tensor) as the op takes it: an int64 tensor."""
    if values is None or isinstance(values, Tensor):
        return values
    return torch.tensor([int(v) for v in values], dtype=torch.int64)


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
