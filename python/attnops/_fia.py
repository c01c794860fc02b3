"""FusedInferAttentionScore on numpy arrays (attnops.golden): the C call, its outputs shaped by the library
(include/attnops.h, docs/FIA.md).

input_layout is CANN's string: BSH, BSND, BNSD, TND, or BNSD_BSND (BNSD in, BSND out).  The
length lists are Python sequences (per batch; TND cumulative, the kv lengths per batch when
paged).  Returns (attention_out, softmax_lse); softmax_lse is [B, N1, S1, 1] (TND [T1, N1, 1])
with softmax_lse_flag, else a one-element zero, as op-plugin returns it.
"""
import ctypes

from . import _lib
from ._lib import INT32_MAX
from ._views import Call

_IN_LAYOUTS = {"BSH": ("BSH", "BSH"), "BSND": ("BSND", "BSND"), "BNSD": ("BNSD", "BNSD"), "TND": ("TND", "TND"),
               "BNSD_BSND": ("BNSD", "BSND")}


def _layouts(input_layout):
    if input_layout not in _IN_LAYOUTS:
        raise ValueError(f"attnops: input_layout is {input_layout!r}; it must be one of {', '.join(_IN_LAYOUTS)}")
    return _IN_LAYOUTS[input_layout]


def fused_infer_attention_score(query, key, value, **kw):
    """(attention_out, softmax_lse): new arrays, or the pair `out` given (op-plugin's .out form).
    softcap and alibi_slopes (f32 [N1] or [B, N1]) are attnops extensions (docs/FIA.md), and
    alibi_rule 2 / 3 with alibi_q_start_idx / alibi_kv_start_idx CANN's inner ALiBi (V5's pseType);
    learnable_sink ([N1]) CANN's attention sinks."""
    _call, args, outputs = fia_args(query, key, value, **kw)
    _lib.run("fused_infer_attention_score", args)
    return outputs


def output_shapes(query, key, value, input_layout="BSH", num_heads=1, block_table=None):
    """(attention_out's shape, softmax_lse's with the flag on) for these numpy inputs: the library's rule
    (attnops_fused_infer_attention_score_output_shapes), which reads their shapes and dtypes alone."""
    lay_in, lay_out = _layouts(input_layout)
    call, args = Call(), _lib.FiaArgs()
    _lib.lib.attnops_fia_args_init(ctypes.byref(args))
    for name, t in (("query", query), ("key", key), ("value", value), ("block_table", block_table)):
        setattr(args, name, call.view(t, name))
    args.num_heads = num_heads
    args.input_layout, args.output_layout = _lib.LAYOUTS.index(lay_in) + 1, _lib.LAYOUTS.index(lay_out) + 1
    return _lib.output_shapes("fused_infer_attention_score", args)


def fia_args(query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
             actual_seq_lengths_kv=None, block_table=None, query_rope=None, key_rope=None, num_heads=1, scale=1.0,
             pre_tokens=INT32_MAX, next_tokens=INT32_MAX, input_layout="BSH", num_key_value_heads=0, sparse_mode=0,
             inner_precise=0, block_size=0, softmax_lse_flag=False, key_antiquant_scale=None,
             key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None, antiquant_scale=None,
             antiquant_offset=None, antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0, softcap=0.0,
             alibi_slopes=None, alibi_rule=0, alibi_q_start_idx=0, alibi_kv_start_idx=0, learnable_sink=None,
             impl="auto", num_threads=0, out=None):
    """(call, args struct, (attention_out, softmax_lse)) of a call, ready for _lib.run."""
    lay_in, lay_out = _layouts(input_layout)
    call = Call()
    args = _lib.FiaArgs()
    _lib.lib.attnops_fia_args_init(ctypes.byref(args))
    # a list, or an int64 / int32 array of the lengths
    lengths = {name: None if vals is None else vals if hasattr(vals, "shape") else call.arrays.int64(vals)
               for name, vals in (("actual_seq_lengths", actual_seq_lengths),
                                  ("actual_seq_lengths_kv", actual_seq_lengths_kv))}
    for name, t in (("query", query), ("key", key), ("value", value), ("pse_shift", pse_shift),
                    ("atten_mask", atten_mask), ("block_table", block_table), ("query_rope", query_rope),
                    ("key_rope", key_rope), ("key_antiquant_scale", key_antiquant_scale),
                    ("key_antiquant_offset", key_antiquant_offset), ("value_antiquant_scale", value_antiquant_scale),
                    ("value_antiquant_offset", value_antiquant_offset), ("antiquant_scale", antiquant_scale),
                    ("antiquant_offset", antiquant_offset), ("alibi_slopes", alibi_slopes),
                    ("learnable_sink", learnable_sink), *lengths.items()):
        setattr(args, name, call.view(t, name))
    args.num_heads, args.scale_value = num_heads, scale
    args.pre_tokens, args.next_tokens = pre_tokens, next_tokens
    args.input_layout = _lib.LAYOUTS.index(lay_in) + 1
    args.output_layout = _lib.LAYOUTS.index(lay_out) + 1
    args.num_key_value_heads, args.sparse_mode = num_key_value_heads, sparse_mode
    args.inner_precise, args.block_size, args.softmax_lse_flag = inner_precise, block_size, bool(softmax_lse_flag)
    args.antiquant_mode, args.key_antiquant_mode = antiquant_mode, key_antiquant_mode
    args.value_antiquant_mode, args.softcap = value_antiquant_mode, softcap
    args.alibi_rule, args.alibi_q_start_idx, args.alibi_kv_start_idx = alibi_rule, alibi_q_start_idx, alibi_kv_start_idx
    if impl not in _lib.IMPL:
        raise ValueError(f"attnops: impl is {impl!r}; it must be one of {', '.join(_lib.IMPL)}")
    args.impl, args.num_threads = _lib.IMPL[impl], num_threads
    if out is None:
        out_shape, lse_shape = _lib.output_shapes("fused_infer_attention_score", args)
        out = call.arrays.empty(out_shape, query), call.arrays.empty_f32(lse_shape if softmax_lse_flag else (1,))
    out, lse = out
    args.attention_out, args.softmax_lse = call.view(out, "attention_out"), call.view(lse, "softmax_lse")
    return call, args, (out, lse)
