"""FlashAttentionScore(Grad) on torch tensors or numpy arrays: output shapes and the C calls.

Shapes (N1 query heads, N2 kv heads, layouts as in include/attnops.h):
  BNSD q [B,N1,S1,D]  BSND q [B,S1,N1,D]  BSH q [B,S1,N1*D]  SBH q [S1,B,N1*D]
  TND  q [T1,N1,D] with actual_seq_qlen / actual_seq_kvlen (cumulative, no leading 0)
attention_out has q's shape with D -> Dv; softmax_max / softmax_sum are f32
[B,N1,S1,8], in TND [T1,N1,8].  Used by the custom ops' real and fake
implementations alike (python/attnops/ops.py), so both give the same shapes.
"""
import ctypes

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


def _params(call, p, query, key, value, *, head_num, input_layout, pse, drop_mask, atten_mask, scale, keep_prob,
            pre_tokens, next_tokens, inner_precise, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, pse_type,
            query_rope, key_rope, q_start_idx, kv_start_idx, seed, offset, impl, deterministic, num_threads):
    check_layout(input_layout)
    if not call.arrays.is_float(query):
        raise TypeError(f"attnops: query has dtype {query.dtype}; FlashAttention from Python takes float32, float16 "
                        "or bfloat16 (FP8 inputs need the C API's block scales)")
    if impl not in _lib.IMPL:
        raise ValueError(f"attnops: impl is {impl!r}; it must be one of {', '.join(_lib.IMPL)}")
    p.query, p.key, p.value = call.view(query, "query"), call.view(key, "key"), call.view(value, "value")
    p.pse, p.drop_mask, p.atten_mask = call.view(pse, "pse"), call.view(drop_mask, "drop_mask"), call.view(
        atten_mask, "atten_mask")
    p.query_rope, p.key_rope = call.view(query_rope, "query_rope"), call.view(key_rope, "key_rope")
    p.prefix = call.ints(prefix, "prefix")
    p.actual_seq_qlen, p.actual_seq_kvlen = call.ints(actual_seq_qlen, "actual_seq_qlen"), call.ints(
        actual_seq_kvlen, "actual_seq_kvlen")
    p.q_start_idx, p.kv_start_idx = call.ints(q_start_idx, "q_start_idx"), call.ints(kv_start_idx, "kv_start_idx")
    p.scale_value, p.keep_prob = scale, keep_prob
    p.pre_tokens, p.next_tokens, p.head_num = pre_tokens, next_tokens, head_num
    p.input_layout = _lib.LAYOUTS.index(input_layout) + 1
    p.inner_precise, p.sparse_mode, p.pse_type, p.seed, p.offset = inner_precise, sparse_mode, pse_type, seed, offset
    p.impl, p.deterministic, p.num_threads = _lib.IMPL[impl], int(deterministic), num_threads


def forward(query, key, value, arrays=TORCH, **kw):
    """(attention_out, softmax_max, softmax_sum), new contiguous tensors (or numpy arrays: arrays=NUMPY)."""
    call = Call(arrays)
    args = _lib.FaFwdArgs()
    _lib.lib.attnops_fa_fwd_args_init(ctypes.byref(args))
    _params(call, args.p, query, key, value, **kw)
    layout, n1 = kw["input_layout"], kw["head_num"]
    out = call.empty(out_shape(query, key, value, n1, layout), query)
    smax, ssum = (call.empty_f32(stat_shape(query, n1, layout)) for _ in range(2))
    args.attention_out, args.softmax_max, args.softmax_sum = (call.view(out, "attention_out"),
                                                              call.view(smax, "softmax_max"),
                                                              call.view(ssum, "softmax_sum"))
    _lib.run("flash_attention_score", args)
    return out, smax, ssum


def backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, arrays=TORCH, **kw):
    """(dq, dk, dv, dq_rope, dk_rope); the rope gradients are empty without rope inputs."""
    call = Call(arrays)
    args = _lib.FaBwdArgs()
    _lib.lib.attnops_fa_bwd_args_init(ctypes.byref(args))
    _params(call, args.p, query, key, value, **kw)
    grads = [call.empty(t.shape, t) for t in (query, key, value)]
    rope = [call.empty(t.shape, t) if t is not None else call.empty((0,), query)
            for t in (kw["query_rope"], kw["key_rope"])]
    args.dy, args.attention_in = call.view(dy, "dy"), call.view(attention_in, "attention_in")
    args.softmax_max, args.softmax_sum = call.view(softmax_max, "softmax_max"), call.view(softmax_sum, "softmax_sum")
    args.dq, args.dk, args.dv = (call.view(g, n) for g, n in zip(grads, ("dq", "dk", "dv")))
    if kw["query_rope"] is not None:
        args.dq_rope = call.view(rope[0], "dq_rope")
    if kw["key_rope"] is not None:
        args.dk_rope = call.view(rope[1], "dk_rope")
    _lib.run("flash_attention_score_grad", args)
    return (*grads, *rope)

