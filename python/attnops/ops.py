"""The operators as torch ops (namespace `attnops`).

    torch.ops.attnops.flash_attention_score(query, key, value, head_num, input_layout, ...)
        -> (attention_out, softmax_max, softmax_sum)
    torch.ops.attnops.flash_attention_score_grad(query, key, value, dy, attention_in, softmax_max,
                                                 softmax_sum, head_num, input_layout, ...)
        -> (dq, dk, dv, dq_rope, dk_rope)
    torch.ops.attnops.flash_attn_forward(q, k, v, softmax_scale=None, causal=False, window_left=-1,
                                         window_right=-1, softcap=0., deterministic=False)
        -> (attention_out, softmax_max, softmax_sum)
    torch.ops.attnops.flash_attn_backward(q, k, v, dy, attention_in, softmax_max, softmax_sum, <the same>)
        -> (dq, dk, dv)
    torch.ops.attnops.npu_fusion_attention(query, key, value, head_num, input_layout, <torch_npu's arguments>,
                                           seed=0, offset=0)
        -> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)
    torch.ops.attnops.npu_fusion_attention_backward(query, key, value, dy, attention_in, softmax_max,
                                                    softmax_sum, head_num, input_layout, <the same>) -> (dq, dk, dv)
    torch.ops.attnops.fused_infer_attention_score(query, key, value, ...) -> (attention_out, softmax_lse)
    torch.ops.attnops.flash_attn_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None,
                                         softmax_scale=None, causal=False, window_left=-1, window_right=-1,
                                         softcap=0., alibi_slopes=None, return_softmax_lse=False)
        -> (out, softmax_lse)

    torch.ops.attnops.key_pool(hidden_states, wk, gate_weight, ape, state_cache!, ...) -> pooled_key
    torch.ops.attnops.attn_res(blocks, proj_weight, ...) -> (h, rms, alpha), and attn_res_grad

They are registered from C++ (python/csrc, the package's libattnops_torch.so) with CPU, Meta
and (FlashAttention, AttnRes) Autograd kernels; their schemas are there, one list of arguments
each.  Argument names and defaults are CANN's (include/attnops.h), with torch_npu's int[] for the
sequence-length lists.  flash_attn_forward / flash_attn_backward are flash_attention_score(_grad)
with flash-attn's arguments (BSND, bottom-right causal and window, softcap; no dropout or ALiBi): a
schema a quarter of the size, which is most of a small call's cost, over the same params and
kernels (the same bits); npu_fusion_attention is flash_attention_score with torch_npu's schema and
outputs (22 arguments: op-plugin's 20, then the dropout stream's seed and offset, which torch_npu
draws from its generator and the op takes as given); flash_attn_kvcache is, likewise, fused_infer_attention_score over a
contiguous or paged KV cache with flash-attn's arguments (flash_attn_with_kvcache's attention).
`impl` picks the implementation ("auto", "cpu": the fast kernel; "reference": the golden;
"benchmark").  Each call uses
torch.get_num_threads() threads; `deterministic` (or torch.use_deterministic_algorithms(True))
makes the backward bitwise independent of the thread count.  dpse is not computed (CANN reserves
it): a pse input gets no gradient.

A failed call of torch.ops.attnops.* raises ValueError / NotImplementedError / RuntimeError with
the library's sentence; the functions of this module (and every entry point of the package)
raise attnops.AttnopsError's subclasses, which carry the library's status.
"""
from pathlib import Path
import torch
from torch import Tensor

from . import _build_info, _lib

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


def library_error(exc):
    """The exception to raise for an op's exc: attnops' own (with the library's status) for the library's
    failures, else exc itself."""
    return _lib.error_from_message(str(exc)) or exc


def _translated(op):
    """op (an OpOverload) as a function raising attnops' exceptions (with the library's status) for the
    library's failures; a call that fails elsewhere raises what it raised."""
    def call(*args, **kwargs):
        try:
            return op(*args, **kwargs)
        except (ValueError, NotImplementedError, RuntimeError) as exc:
            raise library_error(exc) from None
    call.__name__ = call.__qualname__ = op.__name__.split(".")[0]
    call.__doc__ = f"torch.ops.attnops.{call.__name__}, raising attnops.AttnopsError's subclasses (docs/PYTHON.md)."
    return call


flash_attention_score = _translated(torch.ops.attnops.flash_attention_score.default)
flash_attention_score_grad = _translated(torch.ops.attnops.flash_attention_score_grad.default)
flash_attn_forward = _translated(torch.ops.attnops.flash_attn_forward.default)
flash_attn_backward = _translated(torch.ops.attnops.flash_attn_backward.default)
fused_infer_attention_score = _translated(torch.ops.attnops.fused_infer_attention_score.default)
flash_attn_kvcache = _translated(torch.ops.attnops.flash_attn_kvcache.default)
npu_fusion_attention = _translated(torch.ops.attnops.npu_fusion_attention.default)
key_pool = _translated(torch.ops.attnops.key_pool.default)
attn_res = _translated(torch.ops.attnops.attn_res.default)
attn_res_grad = _translated(torch.ops.attnops.attn_res_grad.default)


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
