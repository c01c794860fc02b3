"""The torch wrappers bind every value to its own schema argument.  Their fast paths call the ops by position,
passing arguments only up to the last that differs from its default (attnops._schema); a ladder that stopped
one rung short, or a tuple out of the schema's order, would drop a value or hand it to another argument without
any error.  Here each op is replaced by a recorder that names what it receives with the registered schema's
names (positional, then keyword, the rest the schema's defaults), and for each rung of each ladder -- every
argument alone, then all together, each with a value unlike any default or other value -- every schema argument
must arrive with the value the wrapper meant for it.  The slow paths' leading positional arguments are checked
the same way, and positional_counts must refuse a schema whose order differs from a wrapper's list."""
from types import SimpleNamespace

import pytest
import torch

from attnops import _schema, flash_attn, ops, torch_npu
from attnops._lib import INT32_MAX


def recorder(op, result):
    """(calls, fn): fn stands in for `op` (an OpOverload), returns `result` and appends to calls the
    {schema name: value} of each call."""
    arguments = op._schema.arguments
    calls = []

    def record(*args, **kwargs):
        assert len(args) <= len(arguments), f"{len(args)} positional arguments for {len(arguments)}"
        bound = {arg.name: value for arg, value in zip(arguments, args)}
        assert not set(bound) & set(kwargs), f"given twice: {set(bound) & set(kwargs)}"
        assert set(kwargs) <= {arg.name for arg in arguments}, f"unknown keywords {set(kwargs)}"
        bound.update(kwargs)
        for arg in arguments:
            if arg.name not in bound:
                assert arg.default_value is not None or arg.type.kind() == "OptionalType", f"{arg.name} missing"
                bound[arg.name] = arg.default_value
        calls.append(bound)
        return result

    return calls, record


def same(received, expected):
    if isinstance(expected, torch.Tensor):
        return isinstance(received, torch.Tensor) and received.shape == expected.shape and torch.equal(
            received.to(expected.dtype), expected)
    return type(received) is type(expected) and received == expected


def check_call(calls, expected):
    (bound,) = calls
    wrong = {name: (bound[name], value) for name, value in expected.items() if not same(bound[name], value)}
    assert not wrong, f"(received, meant) by schema name: {wrong}"


Q = torch.randn(1, 2, 4, 8)
K, V = torch.randn(1, 3, 4, 8), torch.randn(1, 3, 4, 8)
SLOPES, SINK = torch.rand(4) + 1, torch.rand(4) + 3


# flash_attn_func's fast path -> flash_attn_forward: (wrapper keywords, what the op must receive besides them).
FORWARD_RUNGS = [
    (dict(), dict()),
    (dict(softmax_scale=0.25), dict(softmax_scale=0.25)),
    (dict(causal=True), dict(causal=True)),
    (dict(window_size=(3, -1)), dict(window_left=3)),
    (dict(window_size=(-1, 5)), dict(window_right=5)),
    (dict(softcap=7.0), dict(softcap=7.0)),
    (dict(deterministic=True), dict(deterministic=True)),
    (dict(softmax_scale=0.25, causal=True, window_size=(3, 5), softcap=7.0, deterministic=True),
     dict(softmax_scale=0.25, causal=True, window_left=3, window_right=5, softcap=7.0, deterministic=True)),
]


@pytest.mark.parametrize("given,meant", FORWARD_RUNGS)
def test_flash_attn_func_fast_path(monkeypatch, given, meant):
    calls, record = recorder(torch.ops.attnops.flash_attn_forward.default, (Q, None, None))
    monkeypatch.setattr(ops, "flash_attn_forward", record)
    flash_attn.flash_attn_func(Q, K, V, **given)
    check_call(calls, dict(dict(q=Q, k=K, v=V, softmax_scale=None, causal=False, window_left=-1, window_right=-1,
                                softcap=0.0, deterministic=False), **meant))


QN, KN = torch.randn(1, 2, 32), torch.randn(1, 3, 32)
PSE, MASK = torch.randn(1, 4, 2, 3), torch.zeros(2, 3, dtype=torch.bool)
FUSION_RUNGS = [
    dict(), dict(pse=PSE), dict(atten_mask=MASK), dict(scale=0.3), dict(pre_tockens=7), dict(next_tockens=9),
    dict(inner_precise=2), dict(prefix=[1]), dict(actual_seq_qlen=[2]), dict(actual_seq_kvlen=[3]),
    dict(sparse_mode=4), dict(softmax_layout="TND"),
    dict(pse=PSE, atten_mask=MASK, scale=0.3, pre_tockens=7, next_tockens=9, inner_precise=2, prefix=[1],
         actual_seq_qlen=[2], actual_seq_kvlen=[3], sparse_mode=4, softmax_layout="TND"),
]


@pytest.mark.parametrize("given", FUSION_RUNGS)
def test_npu_fusion_attention_fast_path(monkeypatch, given):
    calls, record = recorder(torch.ops.attnops.npu_fusion_attention.default, (QN,) * 4 + (0, 0, 0))
    monkeypatch.setattr(ops, "npu_fusion_attention", record)
    torch_npu.npu_fusion_attention(QN, KN, KN, 4, "BSH", **given)
    check_call(calls, dict(dict(query=QN, key=KN, value=KN, head_num=4, input_layout="BSH", pse=None,
                                padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=INT32_MAX,
                                next_tockens=INT32_MAX, inner_precise=0, prefix=None, actual_seq_qlen=None,
                                actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
                                softmax_layout="", seed=0, offset=0), **given))


CACHE = torch.randn(1, 8, 4, 8)
LENS, TABLE = torch.tensor([3], dtype=torch.int32), torch.tensor([[1]], dtype=torch.int32)
DECODE_RUNGS = [
    (dict(), dict()),
    (dict(cache_seqlens=LENS), dict(cache_seqlens=LENS)),
    (dict(block_table=TABLE), dict(block_table=TABLE)),
    (dict(softmax_scale=0.25), dict(softmax_scale=0.25)),
    (dict(causal=True), dict(causal=True)),
    (dict(window_size=(-1, 5)), dict(window_right=5)),
    (dict(softcap=7.0), dict(softcap=7.0)),
    (dict(alibi_slopes=SLOPES), dict(alibi_slopes=SLOPES)),
    (dict(return_softmax_lse=True), dict(return_softmax_lse=True)),
    (dict(s_aux=SINK), dict(s_aux=SINK)),
    (dict(cache_seqlens=LENS, block_table=TABLE, softmax_scale=0.25, causal=True, window_size=(-1, 5), softcap=7.0,
          alibi_slopes=SLOPES, return_softmax_lse=True, s_aux=SINK),
     dict(cache_seqlens=LENS, block_table=TABLE, softmax_scale=0.25, causal=True, window_right=5, softcap=7.0,
          alibi_slopes=SLOPES, return_softmax_lse=True, s_aux=SINK)),
]
DECODE_DEFAULTS = dict(cache_seqlens=None, block_table=None, softmax_scale=None, causal=False, window_left=-1,
                       window_right=-1, softcap=0.0, alibi_slopes=None, return_softmax_lse=False, s_aux=None)


@pytest.mark.parametrize("given,meant", DECODE_RUNGS)
def test_flash_attn_with_kvcache_fast_path(monkeypatch, given, meant):
    calls, record = recorder(torch.ops.attnops.flash_attn_kvcache.default, (Q, Q))
    monkeypatch.setattr(flash_attn, "_KVCACHE", record)
    flash_attn.flash_attn_with_kvcache(Q, CACHE, CACHE, **given)
    check_call(calls, dict(dict(q=Q, k_cache=CACHE, v_cache=CACHE, **DECODE_DEFAULTS), **meant))


@pytest.mark.parametrize("all_given", [False, True])
def test_flash_attn_with_kvcache_after_append(monkeypatch, all_given):
    """The append path calls flash_attn_kvcache with every argument by position."""
    calls, record = recorder(torch.ops.attnops.flash_attn_kvcache.default, (Q, Q))
    monkeypatch.setattr(ops, "flash_attn_kvcache", record)
    k_cache, v_cache = torch.randn(1, 8, 4, 8), torch.randn(1, 8, 4, 8)
    given = dict(softmax_scale=0.25, window_size=(3, 5), softcap=7.0, alibi_slopes=SLOPES, return_softmax_lse=True,
                 s_aux=SINK) if all_given else {}
    flash_attn.flash_attn_with_kvcache(Q, k_cache, v_cache, k=torch.randn(1, 1, 4, 8), v=torch.randn(1, 1, 4, 8),
                                       cache_seqlens=torch.tensor([2], dtype=torch.int32), **given)
    meant = dict(softmax_scale=0.25, window_left=3, window_right=5, softcap=7.0, alibi_slopes=SLOPES,
                 return_softmax_lse=True, s_aux=SINK) if all_given else {}
    check_call(calls, dict(DECODE_DEFAULTS, q=Q, k_cache=k_cache, v_cache=v_cache,
                           cache_seqlens=torch.tensor([3], dtype=torch.int32), **meant))


def test_slow_paths_leading_arguments(monkeypatch):
    """The calls that pass only the required leading arguments by position (flash_attention_score(_grad))."""
    calls, record = recorder(torch.ops.attnops.flash_attention_score.default, (QN, QN, QN))
    monkeypatch.setattr(ops, "flash_attention_score", record)
    torch_npu.npu_fusion_attention(QN, KN, KN, 4, "BSH", keep_prob=0.5)
    check_call(calls, dict(query=QN, key=KN, value=KN, head_num=4, input_layout="BSH", keep_prob=0.5))

    calls.clear()
    flash_attn.flash_attn_func(Q, K, V, dropout_p=0.5, softmax_scale=0.25)
    check_call(calls, dict(query=Q, key=K, value=V, head_num=4, input_layout="BSND", scale=0.25, keep_prob=0.5))

    calls, record = recorder(torch.ops.attnops.flash_attention_score_grad.default, (QN,) * 6)
    monkeypatch.setattr(ops, "flash_attention_score_grad", record)
    dy, out, smax, ssum = torch.randn(1, 2, 32), torch.randn(1, 2, 32), torch.randn(1, 4, 2, 8), torch.rand(1, 4, 2, 8)
    torch_npu.npu_fusion_attention_grad(QN, KN, KN, dy, 4, "BSH", softmax_max=smax, softmax_sum=ssum,
                                        attention_in=out, scale_value=0.3)
    check_call(calls, dict(query=QN, key=KN, value=KN, dy=dy, attention_in=out, softmax_max=smax, softmax_sum=ssum,
                           head_num=4, input_layout="BSH", scale=0.3))


def fake_op(*names):
    arguments = [SimpleNamespace(name=name) for name in names]
    return SimpleNamespace(_schema=SimpleNamespace(name="attnops::fake", arguments=arguments))


def test_positional_counts_follow_the_schema():
    assert _schema.positional_counts(fake_op("q", "k", "causal", "softcap"), ("q", "k", "causal")) == dict(
        q=1, k=2, causal=3)
    with pytest.raises(ImportError, match="attnops::fake"):  # a reordered schema: the import fails
        _schema.positional_counts(fake_op("q", "k", "softcap", "causal"), ("q", "k", "causal", "softcap"))
    with pytest.raises(ImportError, match="attnops::fake"):  # a new argument between the wrapper's
        _schema.positional_counts(fake_op("q", "k", "bias", "causal"), ("q", "k", "causal"))
