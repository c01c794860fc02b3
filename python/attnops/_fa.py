"""FlashAttentionScore(Grad) on torch tensors or numpy arrays: output shapes and the C calls.

Shapes (N1 query heads, N2 kv heads, layouts as in include/attnops.h):
  BNSD q [B,N1,S1,D]  BSND q [B,S1,N1,D]  BSH q [B,S1,N1*D]  SBH q [S1,B,N1*D]
  TND  q [T1,N1,D] with actual_seq_qlen / actual_seq_kvlen (cumulative, no leading 0)
attention_out has q's shape with D -> Dv; softmax_max / softmax_sum are f32
[B,N1,S1,8], in TND [T1,N1,8].  Used by the custom ops' real and fake
implementations alike (python/attnops/ops.py), so both give the same shapes.
"""
import ctypes
import struct
import typing

from . import _lib
from ._views import TORCH, Call

INT32_MAX = 2147483647


def _hidden(layout):
    return layout in ("BSH", "SBH")


def check_layout(input_layout):
    if input_layout not in _lib.LAYOUTS:
        raise ValueError(f"attnops: input_layout is {input_layout!r}; it must be one of {', '.join(_lib.LAYOUTS)}")


def head_dims(query, key, value, head_num, input_layout):
    """(D, Dv) of one head: read from the last dim, split by the head counts in BSH/SBH."""
    check_layout(input_layout)
    if not _hidden(input_layout):
        return query.shape[-1], value.shape[-1]
    if head_num <= 0 or query.shape[-1] % head_num:
        raise ValueError(f"attnops: head_num {head_num} does not divide query's hidden size {query.shape[-1]}")
    d = query.shape[-1] // head_num
    if d == 0 or key.shape[-1] % d:
        raise ValueError(f"attnops: key's hidden size {key.shape[-1]} is not a multiple of the head dim {d}")
    n2 = key.shape[-1] // d
    if n2 == 0 or value.shape[-1] % n2:
        raise ValueError(f"attnops: value's hidden size {value.shape[-1]} is not a multiple of N2 = {n2}")
    return d, value.shape[-1] // n2


def out_shape(query, key, value, head_num, input_layout):
    """attention_out's shape: query's with the head dim D replaced by Dv."""
    if len(query.shape) == 0:
        raise ValueError("attnops: query must have rank 3 or 4, got a scalar")
    _, dv = head_dims(query, key, value, head_num, input_layout)
    return (*query.shape[:-1], head_num * dv if _hidden(input_layout) else dv)


def stat_shape(query, head_num, input_layout):
    """softmax_max / softmax_sum: [B,N1,S1,8], in TND [T1,N1,8]."""
    s = query.shape
    if input_layout == "TND":
        return (s[0], head_num, 8)
    b, s1 = (s[1], s[0]) if input_layout == "SBH" else (s[0], s[2] if input_layout == "BNSD" else s[1])
    return (b, head_num, s1, 8)


class Fp8(typing.NamedTuple):
    """FP8 inputs' de-quantisation factors (f32 [B, N, ceil(S/128), 1], attnops_fp8_quantize_blocks) and
    the outputs' dtype (0: float16, 1: bfloat16)."""
    d_scale_q: object
    d_scale_k: object
    d_scale_v: object
    d_scale_dy: object = None
    d_scale_o: object = None
    out_dtype: int = 1


def _output(call, shape, like, fp8):
    """An output of `shape`: like's dtype, or FP8's output dtype."""
    return call.empty(shape, like) if fp8 is None else call.empty_float(shape, ("float16", "bfloat16")[fp8.out_dtype])


# attnops_fa_params packed by struct: 19 tensor pointers, scale_value,
# keep_prob, pre/next_tokens, head_num, input_layout (+4 padding),
# inner_precise, sparse_mode, pse_type, seed, offset, out_dtype,
# softmax_in_layout, impl, deterministic, num_threads (test_abi.py checks it
# against the ctypes struct, which is checked against the header).  One
# pack_into per call instead of ~30 ctypes attribute writes; the output
# pointers follow the params in the args structs.
PARAMS = struct.Struct("<19Q2d3qi4x6q4i")
FWD_OUTPUTS = struct.Struct("<4Q")   # softmax_max, softmax_sum, softmax_out, attention_out
BWD_TENSORS = struct.Struct("<11Q")  # dy, attention_in, softmax_max, softmax_sum, softmax_in, dq, dk, dv, dpse,
#                                      dq_rope, dk_rope


def _params(call, buf, query, key, value, *, head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob,
            pre_tokens, next_tokens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type,
            query_rope, key_rope, q_start_idx, kv_start_idx, seed, offset, impl, deterministic, num_threads,
            fp8=None):
    """Pack the params of one call into `buf` (offset 0).  fp8: the Fp8 block scales of FP8 inputs."""
    check_layout(input_layout)
    if fp8 is None and not call.arrays.is_float(query):
        raise TypeError(f"attnops: query has dtype {query.dtype}; FlashAttention takes float32, float16 or "
                        "bfloat16 here (FP8 inputs: attnops.golden with their d_scale_* block scales)")
    if impl not in _lib.IMPL:
        raise ValueError(f"attnops: impl is {impl!r}; it must be one of {', '.join(_lib.IMPL)}")
    v = call.view
    pointers = (v(query, "query"), v(key, "key"), v(value, "value"), v(pse, "pse"), v(drop_mask, "drop_mask"), 0,
                v(atten_mask, "atten_mask"), call.ints(prefix, "prefix"), call.ints(actual_seq_qlen, "actual_seq_qlen"),
                call.ints(actual_seq_kvlen, "actual_seq_kvlen"), call.ints(q_start_idx, "q_start_idx"),
                call.ints(kv_start_idx, "kv_start_idx"), v(query_rope, "query_rope"), v(key_rope, "key_rope"),
                *((v(fp8.d_scale_q, "d_scale_q"), v(fp8.d_scale_k, "d_scale_k"), v(fp8.d_scale_v, "d_scale_v"),
                   v(fp8.d_scale_dy, "d_scale_dy"), v(fp8.d_scale_o, "d_scale_o")) if fp8 else (0,) * 5))
    PARAMS.pack_into(buf, 0, *(p or 0 for p in pointers), scale, keep_prob, pre_tokens, next_tokens, head_num,
                     _lib.LAYOUTS.index(input_layout) + 1, inner_precise, sparse_mode, pse_type, seed, offset,
                     fp8.out_dtype if fp8 else 0, 0, _lib.IMPL[impl], int(deterministic), num_threads)


def forward(query, key, value, arrays=TORCH, **kw):
    """(attention_out, softmax_max, softmax_sum), new contiguous tensors (or numpy arrays: arrays=NUMPY)."""
    call, args, outputs = forward_args(query, key, value, arrays, **kw)
    _lib.run("flash_attention_score", args)
    return outputs


def forward_args(query, key, value, arrays=TORCH, **kw):
    """(call, packed args, outputs) of a forward, ready for _lib.run (bench/bench_python.py times the run)."""
    call = Call(arrays)
    args = ctypes.create_string_buffer(PARAMS.size + FWD_OUTPUTS.size)
    _params(call, args, query, key, value, **kw)
    layout, n1, fp8 = kw["input_layout"], kw["head_num"], kw.get("fp8")
    out = _output(call, out_shape(query, key, value, n1, layout), query, fp8)
    smax, ssum = (call.empty_f32(stat_shape(query, n1, layout)) for _ in range(2))
    FWD_OUTPUTS.pack_into(args, PARAMS.size, call.view(smax, "softmax_max"), call.view(ssum, "softmax_sum"), 0,
                          call.view(out, "attention_out"))
    return call, args, (out, smax, ssum)


def backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, arrays=TORCH, **kw):
    """(dq, dk, dv, dq_rope, dk_rope); the rope gradients are empty without rope inputs."""
    call, args, outputs = backward_args(query, key, value, dy, attention_in, softmax_max, softmax_sum, arrays, **kw)
    _lib.run("flash_attention_score_grad", args)
    return outputs


def backward_args(query, key, value, dy, attention_in, softmax_max, softmax_sum, arrays=TORCH, **kw):
    """(call, packed args, outputs) of a backward, ready for _lib.run."""
    call = Call(arrays)
    args = ctypes.create_string_buffer(PARAMS.size + BWD_TENSORS.size)
    _params(call, args, query, key, value, **kw)
    grads = [_output(call, t.shape, t, kw.get("fp8")) for t in (query, key, value)]
    rope = [call.empty(t.shape, t) if t is not None else call.empty((0,), query)
            for t in (kw["query_rope"], kw["key_rope"])]
    rope_views = [call.view(r, n) if t is not None else 0
                  for r, t, n in zip(rope, (kw["query_rope"], kw["key_rope"]), ("dq_rope", "dk_rope"))]
    BWD_TENSORS.pack_into(args, PARAMS.size, call.view(dy, "dy"), call.view(attention_in, "attention_in"),
                          call.view(softmax_max, "softmax_max"), call.view(softmax_sum, "softmax_sum"), 0,
                          *(call.view(g, n) for g, n in zip(grads, ("dq", "dk", "dv"))), 0, *rope_views)
    return call, args, (*grads, *rope)
