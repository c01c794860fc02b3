"""torch_npu-compatible operators on the CPU.

Signatures, defaults and return values are those of torch_npu's op-plugin
schema (op_plugin/config/op_plugin_functions.yaml of Ascend/op-plugin, the
torch_npu 7.1+ form; docs/PYTHON.md names the commit read), so code written
for Ascend NPUs calls these unchanged:

    out, smax, ssum, _, seed, offset, numels = npu_fusion_attention(q, k, v, n, "BSND", scale=0.125)
    dq, dk, dv, _ = npu_fusion_attention_grad(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                              attention_in=out, scale_value=0.125)

Differences from the NPU (docs/PYTHON.md): the tensors are CPU tensors;
seed/offset of a dropout call come from torch's default CPU generator (so
torch.manual_seed makes runs repeatable) and the keep mask is the Ascend 950
in-kernel Philox stream of that (seed, offset), bit-exact with the device;
gen_mask_parallel and sync have no effect; dpse is an empty tensor (CANN
reserves it).
"""
import torch

from . import _fa
from . import ops  # noqa: F401  (registers torch.ops.attnops.*)

_INT32_MAX = _fa.INT32_MAX


def _numels(query, head_num, input_layout, key, actual_seq_qlen, actual_seq_kvlen):
    """B*N1*S1*S2, or in TND N1 * sum S1_b * S2_b (the length of the dropout stream)."""
    if input_layout == "TND":
        q = [0, *actual_seq_qlen]
        kv = [0, *actual_seq_kvlen]
        return head_num * sum((q[i + 1] - q[i]) * (kv[i + 1] - kv[i]) for i in range(len(q) - 1))
    s = _fa.stat_shape(query, head_num, input_layout)
    s2 = _fa.stat_shape(key, 1, input_layout)[2]
    return s[0] * head_num * s[2] * s2


def _check_reserved(padding_mask, softmax_in=None):
    if padding_mask is not None:
        raise ValueError("npu_fusion_attention: padding_mask is reserved by CANN and must be None")
    if softmax_in is not None:
        raise ValueError("npu_fusion_attention_grad: softmax_in is reserved by CANN and must be None")


def _draw_seed(keep_prob):
    """(seed, offset) of a dropout call: a seed from torch's default CPU generator, offset 0."""
    if not 0.0 < keep_prob < 1.0:
        return 0, 0
    return int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item()), 0


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1., keep_prob=1., pre_tockens=_INT32_MAX, next_tockens=_INT32_MAX, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False):
    """-> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels).

    softmax_out is reserved (an empty tensor).  Differentiable in query, key
    and value: the backward is npu_fusion_attention_grad on the saved
    outputs, with the dropout mask replayed from (seed, offset)."""
    _check_reserved(padding_mask)
    seed, offset = _draw_seed(keep_prob)
    out, smax, ssum = torch.ops.attnops.flash_attention_score(
        query, key, value, head_num, input_layout, pse=pse, atten_mask=atten_mask, scale=scale,
        keep_prob=keep_prob, pre_tokens=pre_tockens, next_tokens=next_tockens, inner_precise=inner_precise,
        prefix=prefix, actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode,
        seed=seed, offset=offset)
    numels = _numels(query, head_num, input_layout, key, actual_seq_qlen, actual_seq_kvlen)
    return out, smax, ssum, query.new_empty(0), seed, offset, numels


def npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                              atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                              attention_in=None, scale_value=1., keep_prob=1., pre_tockens=_INT32_MAX,
                              next_tockens=_INT32_MAX, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
                              actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                              sync=False):
    """-> (dq, dk, dv, dpse); dpse is an empty tensor (reserved by CANN).

    softmax_max, softmax_sum and attention_in (the forward's outputs) are
    required; numels is accepted and not needed (the mask follows from the
    shapes and (seed, offset))."""
    _check_reserved(padding_mask, softmax_in)
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum), ("attention_in", attention_in)):
        if t is None:
            raise ValueError(f"npu_fusion_attention_grad: {name} is required (the forward's output); got None")
    dq, dk, dv, _, _ = torch.ops.attnops.flash_attention_score_grad(
        query, key, value, dy, attention_in, softmax_max, softmax_sum, head_num, input_layout, pse=pse,
        atten_mask=atten_mask, scale=scale_value, keep_prob=keep_prob, pre_tokens=pre_tockens,
        next_tokens=next_tockens, inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=actual_seq_kvlen, sparse_mode=sparse_mode, seed=seed, offset=offset)
    return dq, dk, dv, query.new_empty(0)
