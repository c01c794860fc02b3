"""FlashAttentionScore(Grad) on numpy arrays (attnops.golden): the C calls, their outputs shaped by the
library (attnops_flash_attention_score_output_shapes: attention_out is q's shape with D -> Dv,
softmax_max / softmax_sum f32 [B,N1,S1,8], in TND [T1,N1,8]; layouts as in include/attnops.h).
"""
import ctypes
import typing

from . import _lib
from ._views import Call


def check_layout(input_layout):
    if input_layout not in _lib.LAYOUTS:
        raise ValueError(f"attnops: input_layout is {input_layout!r}; it must be one of {', '.join(_lib.LAYOUTS)}")


def output_shapes(query, key, value, head_num, input_layout):
    """(attention_out's shape, softmax_max's and softmax_sum's) for inputs of these shapes: the library's rule
    (attnops_flash_attention_score_output_shapes); query, key and value are anything with .shape."""
    check_layout(input_layout)
    args = _lib.FaFwdArgs()
    _lib.lib.attnops_fa_fwd_args_init(ctypes.byref(args))
    views = [_lib.shape_only(x) for x in (query, key, value)]
    args.p.query, args.p.key, args.p.value = (ctypes.addressof(t) for t in views)
    args.p.head_num, args.p.input_layout = head_num, _lib.LAYOUTS.index(input_layout) + 1
    return _lib.output_shapes("flash_attention_score", args)


class DropoutBlock(typing.NamedTuple):
    """A call that is a block of a larger one and drops what that call drops at the block's positions (the
    C params' dropout_* fields, include/attnops.h): heads [head_start, + N1) of head_num, and per batch
    query rows [q_start[b], + S1_b) of seq_qlen's and key rows [kv_start[b], + S2_b) of seq_kvlen's.
    Padded layouts: seq_qlen / seq_kvlen are [S1] / [S2] of the whole call; TND: cumulative lists like
    actual_seq_qlen.  Starts: one value for every batch, or one per batch; None = 0."""
    head_num: int
    head_start: int
    seq_qlen: list
    seq_kvlen: list
    q_start: list = None
    kv_start: list = None


_NO_BLOCK = DropoutBlock(0, 0, None, None)


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


PARAM_TENSORS = ("query", "key", "value", "pse", "drop_mask", "padding_mask", "atten_mask", "prefix",
                 "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx", "query_rope", "key_rope",
                 "d_scale_q", "d_scale_k", "d_scale_v", "d_scale_dy", "d_scale_o", "dropout_seq_qlen",
                 "dropout_seq_kvlen", "dropout_q_start", "dropout_kv_start", "sink")
FWD_OUTPUTS = ("softmax_max", "softmax_sum", "softmax_out", "attention_out")
BWD_TENSORS = ("dy", "attention_in", "softmax_max", "softmax_sum", "softmax_in", "dq", "dk", "dv", "dpse", "dq_rope",
               "dk_rope", "dsink")
FWD_NAMES, BWD_NAMES = PARAM_TENSORS + FWD_OUTPUTS, PARAM_TENSORS + BWD_TENSORS


def _slots(args_struct, names):
    """Byte offsets in an args struct of its pointer fields `names` (the params' inside its .p), from the
    layouts read off the header (_lib.STRUCTS): Call.bind stores the views' addresses there."""
    params = args_struct.p.offset
    return tuple(params + getattr(_lib.FaParams, name).offset if name in PARAM_TENSORS else
                 getattr(args_struct, name).offset for name in names)


FWD_SLOTS, BWD_SLOTS = _slots(_lib.FaFwdArgs, FWD_NAMES), _slots(_lib.FaBwdArgs, BWD_NAMES)
_SOFTMAX_LAYOUTS = {"": 0, "same_as_input": 1}


def _params(call, p, query, kw):
    """Set the scalars of one call's params `p` (kw: the keyword arguments of forward); -> the arrays of its
    pointer fields, in PARAM_TENSORS order (None for NULL)."""
    input_layout, impl, fp8 = kw["input_layout"], kw["impl"], kw.get("fp8")
    check_layout(input_layout)
    if fp8 is None and not call.arrays.is_float(query):
        raise TypeError(f"attnops: query has dtype {query.dtype}; FlashAttention takes float32, float16 or "
                        "bfloat16 here (FP8 inputs: attnops.golden with their d_scale_* block scales)")
    if impl not in _lib.IMPL:
        raise ValueError(f"attnops: impl is {impl!r}; it must be one of {', '.join(_lib.IMPL)}")
    softmax_layout = kw.get("softmax_in_layout", "")
    if softmax_layout not in _SOFTMAX_LAYOUTS:
        raise ValueError(f"attnops: softmax_in_layout is {softmax_layout!r}; it must be \"\" or \"same_as_input\"")
    block = kw.get("dropout_block") or _NO_BLOCK
    p.scale_value, p.keep_prob, p.softcap = kw["scale"], kw["keep_prob"], kw.get("softcap", 0.0)
    p.pre_tokens, p.next_tokens, p.head_num = kw["pre_tokens"], kw["next_tokens"], kw["head_num"]
    p.input_layout, p.inner_precise = _lib.LAYOUTS.index(input_layout) + 1, kw["inner_precise"]
    p.sparse_mode, p.pse_type, p.seed, p.offset = kw["sparse_mode"], kw["pse_type"], kw["seed"], kw["offset"]
    p.dropout_head_num, p.dropout_head_start = block.head_num, block.head_start
    p.out_dtype, p.softmax_in_layout = fp8.out_dtype if fp8 else 0, _SOFTMAX_LAYOUTS[softmax_layout]
    p.impl, p.deterministic, p.num_threads = _lib.IMPL[impl], int(kw["deterministic"]), kw["num_threads"]
    ints = call.arrays.int64
    lists = (kw["prefix"], kw["actual_seq_qlen"], kw["actual_seq_kvlen"], kw["q_start_idx"], kw["kv_start_idx"])
    return (kw["pse"], kw["drop_mask"], None, kw["atten_mask"], *(None if v is None else ints(v) for v in lists),
            kw["query_rope"], kw["key_rope"],
            *((fp8.d_scale_q, fp8.d_scale_k, fp8.d_scale_v, fp8.d_scale_dy, fp8.d_scale_o) if fp8 else (None,) * 5),
            *(None if v is None else ints(v) for v in block[2:]), kw.get("sink"))


def forward(query, key, value, kw):
    """(attention_out, softmax_max, softmax_sum), new contiguous numpy arrays.
    kw: every keyword of the C params (head_num, input_layout, pse, ..., num_threads; fp8 optional)."""
    call, args, outputs = forward_args(query, key, value, kw)
    _lib.run("flash_attention_score", args)
    return outputs


def forward_args(query, key, value, kw):
    """(call, args struct, outputs) of a forward, ready for _lib.run (bench/bench_python.py times the run)."""
    call = Call()
    args = _lib.FaFwdArgs()
    tensors = _params(call, args.p, query, kw)
    layout, n1, fp8 = kw["input_layout"], kw["head_num"], kw.get("fp8")
    out_shape, stat_shape = output_shapes(query, key, value, n1, layout)
    out = _output(call, out_shape, query, fp8)
    smax = call.empty_f32(stat_shape)
    ssum = call.empty(smax.shape, smax)
    call.bind(args, FWD_SLOTS, FWD_NAMES, (query, key, value, *tensors, smax, ssum, None, out))
    return call, args, (out, smax, ssum)


def backward(query, key, value, dy, attention_in, softmax_max, softmax_sum, kw):
    """(dq, dk, dv, dq_rope, dk_rope, dsink); the rope gradients are empty without rope inputs, dsink (f32
    [N1]) without a sink.  kw: as forward's."""
    call, args, outputs = backward_args(query, key, value, dy, attention_in, softmax_max, softmax_sum, kw)
    _lib.run("flash_attention_score_grad", args)
    return outputs


def backward_args(query, key, value, dy, attention_in, softmax_max, softmax_sum, kw):
    """(call, args struct, outputs) of a backward, ready for _lib.run."""
    call = Call()
    args = _lib.FaBwdArgs()
    tensors = _params(call, args.p, query, kw)
    grads = [_output(call, t.shape, t, kw.get("fp8")) for t in (query, key, value)]
    ropes = (kw["query_rope"], kw["key_rope"])
    rope = [call.empty(t.shape, t) if t is not None else call.empty((0,), query) for t in ropes]
    sink = kw.get("sink")
    dsink = call.empty_f32((sink.shape[0] if sink is not None else 0,))
    call.bind(args, BWD_SLOTS, BWD_NAMES, (query, key, value, *tensors, dy, attention_in, softmax_max, softmax_sum,
                                           None, *grads, None,
                                           *(r if t is not None else None for r, t in zip(rope, ropes)),
                                           dsink if sink is not None else None))
    return call, args, (*grads, *rope, dsink)
