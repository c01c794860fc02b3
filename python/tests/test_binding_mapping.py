"""Argument mapping of the bindings: a one-line slip there (an argument bound to another name or dropped, a fake
kernel with a wrong shape for one flag combination) passes every test that leaves the argument at its default.

1. Every torch op of the package (torch.ops.attnops.*) passes torch.library.opcheck for every combination of the
   flags and inputs that decide which outputs exist and their shapes (softmax_lse_flag / return_softmax_lse,
   layouts, paged and NZ caches, rope and sink inputs of the grad op, enable_rmsnorm, a partial block, capacity):
   each fake (Meta) kernel against the real one.
2. Each argument that changes FusedInferAttentionScore's output, given alone with a non-default value, through
   every wrapper that takes it (the torch op, attnops.golden on numpy, torch_npu's npu_fused_infer_attention_score,
   _v2, npu_incre_flash_attention, npu_prompt_flash_attention) against the float64 oracle (fia_oracle.py); and
   flash_attn_with_kvcache's arguments through each of its three paths (the positional fast path, whose ladder
   picks how many arguments it passes, the append path and the single-row table path).  Every case first checks
   that the oracle without the argument gives another answer, so a wrapper that dropped it would fail.
3. The same for FlashAttentionScore's fast paths: npu_fusion_attention's and flash_attn_func's position ladders
   and their general paths (npu_fusion_attention_v2 / _v3 too), against fa_oracle.py.
"""
import itertools

import numpy as np
import pytest
import torch

import attnops.flash_attn as fa
from attnops import golden, ops, torch_npu

from checks import assert_close, compare
from fa_oracle import attention as fa_oracle
from fia_oracle import fia as oracle

INT32_MAX = 2147483647
B, N1, N2, S2, D = 2, 4, 2, 12, 16
BASE_SCALE = D ** -0.5  # flash_attn_with_kvcache's default: the base problem uses it everywhere
OP = torch.ops.attnops


# ---- 1. opcheck: every op, every output-shaping combination ---------------------------------------------------
# The fake kernel against the real one (test_faketensor), the schema and the autograd registration; the compiled
# round trip (test_aot_dispatch_dynamic, most of opcheck's time) is test_torch_integration.py's.
_OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor")


def _opcheck(op, args, kwargs):
    torch.library.opcheck(op, args, kwargs, test_utils=_OPCHECK_UTILS)


def _randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _like(layout, n, s, d, seed):
    """A q-like tensor of the layout (TND: s tokens)."""
    shape = {"BSH": (B, s, n * d), "BSND": (B, s, n, d), "BNSD": (B, n, s, d), "TND": (s * B, n, d),
             "SBH": (s, B, n * d)}[layout]
    return _randn(*shape, seed=seed)


@pytest.mark.parametrize("lse", [False, True])
@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD", "TND", "BNSD_BSND"])
def test_opcheck_fia_layouts(layout, lse):
    lay_in = layout.split("_")[0]
    q, k, v = _like(lay_in, N1, 3, D, 1), _like(lay_in, N2, 5, D, 2), _like(lay_in, N2, 5, 8, 3)
    kw = dict(num_heads=N1, num_key_value_heads=N2, input_layout=layout, softmax_lse_flag=lse, scale=0.3)
    if lay_in == "TND":
        kw.update(actual_seq_lengths=torch.tensor([3, 6]), actual_seq_lengths_kv=torch.tensor([5, 10]))
    _opcheck(OP.fused_infer_attention_score.default, (q, k, v), kw)


@pytest.mark.parametrize("lse", [False, True])
@pytest.mark.parametrize("cache", ["3d", "4d", "nz"])
def test_opcheck_fia_paged(cache, lse):
    """value's head dim from each cache form ([blocks, bs, N2 Dv], [blocks, N2, bs, Dv], NZ)."""
    bs, blocks, dv = 16, 3, 8
    shapes = {"3d": ((blocks, bs, N2 * D), (blocks, bs, N2 * dv)), "4d": ((blocks, N2, bs, D), (blocks, N2, bs, dv)),
              "nz": ((blocks, N2, D // 8, bs, 8), (blocks, N2, dv // 8, bs, 8))}[cache]
    q, k, v = _randn(B, 1, N1 * D, seed=1), _randn(*shapes[0], seed=2), _randn(*shapes[1], seed=3)
    table = torch.tensor([[2, 0], [1, 0]], dtype=torch.int32)
    kw = dict(num_heads=N1, num_key_value_heads=N2, input_layout="BSH", softmax_lse_flag=lse, block_size=bs,
              block_table=table, actual_seq_lengths_kv=torch.tensor([20, 9]))
    _opcheck(OP.fused_infer_attention_score.default, (q, k, v), kw)


@pytest.mark.parametrize("lse,paged", list(itertools.product([False, True], repeat=2)))
def test_opcheck_flash_attn_kvcache(lse, paged):
    q = _randn(B, 3, N1, D, seed=1)
    kc, vc = (_randn(4, 8, N2, D, seed=2), _randn(4, 8, N2, 8, seed=3)) if paged else \
        (_randn(B, 16, N2, D, seed=2), _randn(B, 16, N2, 8, seed=3))
    table = torch.tensor([[3, 1], [0, 2]], dtype=torch.int32) if paged else None
    _opcheck(OP.flash_attn_kvcache.default, (q, kc, vc, torch.tensor([16, 9]), table),
             dict(return_softmax_lse=lse, causal=True))


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD", "TND"])
def test_opcheck_flash_attention_score_layouts(layout):
    """out's head dim Dv != D in each layout (BSH / SBH: N1 Dv from value's N2 Dv)."""
    q, k, v = (_like(layout, N1, 4, D, 1).requires_grad_(), _like(layout, N2, 6, D, 2).requires_grad_(),
               _like(layout, N2, 6, 8, 3).requires_grad_())
    kw = dict(scale=0.3)
    if layout == "TND":
        kw.update(actual_seq_qlen=[4, 8], actual_seq_kvlen=[6, 12])
    _opcheck(OP.flash_attention_score.default, (q, k, v, N1, layout), kw)


@pytest.mark.parametrize("rope,sink", list(itertools.product([False, True], repeat=2)))
def test_opcheck_flash_attention_score_grad_outputs(rope, sink):
    """dq_rope / dk_rope exist with rope inputs, dsink with a sink: each fake output's shape."""
    q, k, v = _randn(B, 4, N1, D, seed=1), _randn(B, 6, N2, D, seed=2), _randn(B, 6, N2, D, seed=3)
    kw = dict(scale=0.3)
    if rope:
        kw.update(query_rope=_randn(B, 4, N1, 8, seed=4), key_rope=_randn(B, 6, N2, 8, seed=5))
    if sink:
        kw["sink"] = _randn(N1, seed=6)
    out, smax, ssum = OP.flash_attention_score(q, k, v, N1, "BSND", **kw)
    _opcheck(OP.flash_attention_score.default, (q, k, v, N1, "BSND"), kw)
    _opcheck(OP.flash_attention_score_grad.default,
             (q, k, v, _randn(*out.shape, seed=7), out, smax, ssum, N1, "BSND"), kw)


@pytest.mark.parametrize("gen_mask_parallel,sync", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("layout", ["BSH", "TND"])
def test_opcheck_npu_fusion_attention(layout, gen_mask_parallel, sync):
    q, k, v = _like(layout, N1, 4, D, 1), _like(layout, N2, 6, D, 2), _like(layout, N2, 6, D, 3)
    kw = dict(scale=0.3, gen_mask_parallel=gen_mask_parallel, sync=sync)
    if layout == "TND":
        kw.update(actual_seq_qlen=[4, 8], actual_seq_kvlen=[6, 12], softmax_layout="TND")
    _opcheck(OP.npu_fusion_attention.default, (q, k, v, N1, layout), kw)
    out, smax, ssum = OP.npu_fusion_attention(q, k, v, N1, layout, **kw)[:3]
    _opcheck(OP.npu_fusion_attention_backward.default,
             (q, k, v, _randn(*out.shape, seed=7), out, smax, ssum, N1, layout), kw)


@pytest.mark.parametrize("causal,deterministic", list(itertools.product([False, True], repeat=2)))
def test_opcheck_flash_attn_forward_backward(causal, deterministic):
    q, k, v = _randn(B, 4, N1, D, seed=1), _randn(B, 6, N2, D, seed=2), _randn(B, 6, N2, 8, seed=3)
    kw = dict(causal=causal, deterministic=deterministic)
    out, smax, ssum = OP.flash_attn_forward(q, k, v, **kw)
    _opcheck(OP.flash_attn_forward.default, (q, k, v), kw)
    _opcheck(OP.flash_attn_backward.default, (q, k, v, _randn(*out.shape, seed=4), out, smax, ssum), kw)


@pytest.mark.parametrize("enable_rmsnorm,partial", list(itertools.product([False, True], repeat=2)))
def test_opcheck_attn_res(enable_rmsnorm, partial):
    """rms is empty without RMSNorm, alpha has N + 1 columns with a partial block, and the grads' empties."""
    blocks = [_randn(2, 3, 40, seed=i) for i in range(3)]
    w, g = _randn(40, seed=5) / 6, torch.ones(40)
    part = _randn(2, 3, 40, seed=6) if partial else None
    kw = dict(enable_rmsnorm=enable_rmsnorm, scale=0.7)
    _opcheck(OP.attn_res.default, (blocks, w, part, g), kw)
    h, rms, alpha = OP.attn_res(blocks, w, part, g, **kw)
    _opcheck(OP.attn_res_grad.default,
             (_randn(*h.shape, seed=7), blocks, w, alpha, part, g, rms if enable_rmsnorm else None), kw)


@pytest.mark.parametrize("capacity,th", list(itertools.product(["fixed", "current"], [False, True])))
def test_opcheck_key_pool(capacity, th):
    x = torch.randn(1, 8, 32).to(torch.bfloat16)
    wk, gate = (torch.randn(16, 32) / 6).to(torch.bfloat16), (torch.randn(16, 32) / 6).to(torch.bfloat16)
    args = (x[0] if th else x, wk, gate, torch.randn(4, 16), torch.zeros(4, 4, 32),
            torch.tensor([[1, 2, 3]], dtype=torch.int32), torch.tensor([3 if th else 2], dtype=torch.int32))
    kw = dict(capacity=capacity)
    if th:
        kw["cu_seqlens"] = torch.tensor([0, 8], dtype=torch.int32)
    _opcheck(OP.key_pool.default, args, kw)


# ---- 2. FusedInferAttentionScore's arguments through every wrapper ------------------------------------------------
def _base(decode, seed):
    """(q, k, v, the oracle's keyword arguments): BSND, GQA 4 / 2, f32, scale D^-0.5."""
    s1 = 1 if decode else 4
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, s1, N1, D, generator=g), torch.randn(B, S2, N2, D, generator=g),
               torch.randn(B, S2, N2, D, generator=g))
    return q, k, v, dict(input_layout="BSND", num_heads=N1, num_key_value_heads=N2, scale=BASE_SCALE)


def _mask(shape, g):
    m = torch.rand(shape, generator=g) < 0.35
    m[..., 0] = False  # every row keeps a key
    return m


def _paged(x, table, bs):
    """A BSND key-like tensor as a [blocks, bs, N2 D] cache through `table` (a spare block stays zero)."""
    cache = torch.zeros(int(table.max()) + 2, bs, x.shape[2] * x.shape[3], dtype=x.dtype)
    for b in range(x.shape[0]):
        for s in range(x.shape[1]):
            cache[int(table[b, s // bs]), s % bs] = x[b, s].reshape(-1)
    return cache


def _int8(g):
    return torch.randint(-128, 128, (B, S2, N2, D), generator=g, dtype=torch.int8)


def _scale(shape, g):
    return 0.001 + 0.02 * torch.rand(shape, generator=g)


def _problem(arg, decode, seed=3):
    """(q, k, v, kw, left_out): the base problem with `arg` given a non-default value; left_out names what the
    oracle leaves out to show the argument matters."""
    q, k, v, kw = _base(decode, seed)
    g = torch.Generator().manual_seed(seed + 100)
    s1 = q.shape[1]
    if arg == "scale":
        kw["scale"] = 0.37
        return q, k, v, kw, dict(scale=BASE_SCALE)
    if arg == "atten_mask":
        kw["atten_mask"] = _mask((B, 1, 1, S2) if decode else (B, 1, s1, S2), g)
    elif arg == "actual_seq_lengths":
        kw["actual_seq_lengths"] = [s1, s1 // 2]
    elif arg == "actual_seq_lengths_kv":
        kw["actual_seq_lengths_kv"] = [S2, 7]
    elif arg == "block_table":
        table = torch.tensor([[4, 1, 2], [0, 5, 3]], dtype=torch.int32)
        k, v = _paged(k, table, 4), _paged(v, table, 4)
        kw.update(block_table=table, block_size=4, actual_seq_lengths_kv=[S2, 9])
    elif arg in ("pre_tokens", "next_tokens"):
        kw.update(atten_mask=torch.zeros(B, 1, s1, S2, dtype=torch.bool), **{arg: 1})
    elif arg == "sparse_mode":
        kw.update(sparse_mode=3, atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
    elif arg == "sparse_mode_4":
        kw.update(sparse_mode=4, pre_tokens=3, next_tokens=1,
                  atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
        arg = "sparse_mode"
    elif arg == "pse_shift":
        kw["pse_shift"] = torch.randn(B, N1, s1, S2, generator=g)
    elif arg == "rope":
        kw.update(query_rope=torch.randn(B, s1, N1, 8, generator=g), key_rope=torch.randn(B, S2, N2, 8, generator=g))
        return q, k, v, kw, ("query_rope", "key_rope")
    elif arg == "int8_channel_token":  # key per channel (mode 0), value per token (mode 1)
        k, v = _int8(g), _int8(g)
        kw.update(key_antiquant_scale=_scale((N2 * D,), g), key_antiquant_offset=8 * torch.randn(N2 * D, generator=g),
                  value_antiquant_scale=_scale((1, B, S2), g),
                  value_antiquant_offset=8 * torch.randn(1, B, S2, generator=g), value_antiquant_mode=1)
        return q, k, v, kw, ("key_antiquant_offset", "value_antiquant_offset")
    elif arg == "int8_token_head":  # modes 3: [B, N2, S2] each
        k, v = _int8(g), _int8(g)
        kw.update(key_antiquant_scale=_scale((B, N2, S2), g),
                  key_antiquant_offset=8 * torch.randn(B, N2, S2, generator=g),
                  value_antiquant_scale=_scale((B, N2, S2), g),
                  value_antiquant_offset=8 * torch.randn(B, N2, S2, generator=g), key_antiquant_mode=3,
                  value_antiquant_mode=3)
        return q, k, v, kw, ("key_antiquant_offset", "value_antiquant_offset")
    elif arg == "antiquant_channel":  # the combined pair, mode 0: [2, N2, 1, D]
        k, v = _int8(g), _int8(g)
        kw.update(antiquant_scale=_scale((2, N2, 1, D), g), antiquant_offset=8 * torch.randn(2, N2, 1, D, generator=g))
        return q, k, v, kw, ("antiquant_offset",)
    elif arg == "antiquant_token":  # the combined pair, antiquant_mode 1: [2, B, S2]
        k, v = _int8(g), _int8(g)
        kw.update(antiquant_scale=_scale((2, B, S2), g), antiquant_offset=8 * torch.randn(2, B, S2, generator=g),
                  antiquant_mode=1)
        return q, k, v, kw, ("antiquant_offset",)
    elif arg == "softcap":
        kw["softcap"] = 0.8
    elif arg == "alibi_slopes":
        kw["alibi_slopes"] = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    elif arg == "alibi_slopes_batch":
        kw["alibi_slopes"] = torch.tensor([[0.5, 0.25, 0.125, 0.0625], [0.3, 0.2, 0.1, 0.05]])
        arg = "alibi_slopes"
    elif arg == "alibi_rule":
        kw.update(alibi_slopes=torch.tensor([0.5, 0.25, 0.125, 0.0625]), alibi_rule=2, alibi_q_start_idx=5,
                  alibi_kv_start_idx=1)
        return q, k, v, kw, ("alibi_rule", "alibi_q_start_idx", "alibi_kv_start_idx")
    elif arg == "learnable_sink":
        kw["learnable_sink"] = torch.tensor([1.5, -0.5, 0.7, 2.0])
    elif arg == "softmax_lse_flag":
        kw["softmax_lse_flag"] = True
        return q, k, v, kw, ()
    return q, k, v, kw, (arg,)


def _to_layout(q, k, v, kw, layout):
    """The BSND problem in another input layout (TND: cumulative lengths of every row)."""
    kw = dict(kw, input_layout=layout)
    lay = layout.split("_")[0]
    if lay == "BSH":
        return q.flatten(2), k.flatten(2), v.flatten(2), kw
    if lay == "BNSD":
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), kw
    s1 = q.shape[1]
    kw.update(actual_seq_lengths=[s1 * (b + 1) for b in range(B)], actual_seq_lengths_kv=[S2 * (b + 1) for b in
                                                                                          range(B)])
    return q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), kw


def _expected(q, k, v, kw):
    """The oracle's (out, lse [B, N1, S1] or [T, N1]), attention sinks folded in (one extra logit per head)."""
    sink = kw.get("learnable_sink")
    out, lse = oracle(q, k, v, **{n: x for n, x in kw.items() if n not in ("learnable_sink", "softmax_lse_flag")})
    if sink is None:
        return out, lse
    with_sink = torch.logaddexp(lse, sink.double()[None, :, None])
    return out * torch.exp(lse - with_sink).transpose(1, 2)[..., None], with_sink


def _assert_matters(q, k, v, kw, left_out):
    """The oracle without left_out gives another output (or cannot run): a wrapper dropping it would fail."""
    if not left_out:
        return
    dropped = {n: x for n, x in kw.items() if n not in left_out} if not isinstance(left_out, dict) else \
        dict(kw, **left_out)
    try:
        other, _ = _expected(q, k, v, dropped)
    except Exception:  # noqa: BLE001 -- the oracle cannot run the call without it: a dropped argument fails too
        return
    want, _ = _expected(q, k, v, kw)
    ok, _ = compare("without", other, want, torch.float32, S2)
    assert not ok, f"the oracle gives the same output without {left_out}: the case could not see it dropped"


def _check(name, out, lse, q, k, v, kw):
    want, want_lse = _expected(q, k, v, kw)
    assert_close(f"{name} attention_out", out, want, torch.float32, S2 + 8)
    if lse is not None and kw.get("softmax_lse_flag"):
        assert_close(f"{name} softmax_lse", lse.reshape(want_lse.shape), want_lse, torch.float32, S2 + 8)


# Each wrapper: how it is called from the oracle's arguments, and which it takes.
def _call_op(q, k, v, kw):
    kw = dict(kw)
    for n in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        kw[n] = ops.lengths_tensor(kw.get(n))
    return ops.fused_infer_attention_score(q, k, v, **kw)


def _call_golden(q, k, v, kw):
    arrays = {n: (x.numpy() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()}
    out, lse = golden.fused_infer_attention_score(q.numpy(), k.numpy(), v.numpy(), **arrays)
    return torch.from_numpy(np.asarray(out)), torch.from_numpy(np.asarray(lse))


def _call_npu(q, k, v, kw):
    return torch_npu.npu_fused_infer_attention_score(q, k, v, **kw)


_V2_NAMES = dict(actual_seq_lengths="actual_seq_qlen", actual_seq_lengths_kv="actual_seq_kvlen",
                 key_antiquant_scale="dequant_scale_key", key_antiquant_offset="dequant_offset_key",
                 value_antiquant_scale="dequant_scale_value", value_antiquant_offset="dequant_offset_value",
                 key_antiquant_mode="key_quant_mode", value_antiquant_mode="value_quant_mode",
                 num_heads="num_query_heads", scale="softmax_scale", softmax_lse_flag="return_softmax_lse")


def _call_npu_v2(q, k, v, kw):
    return torch_npu.npu_fused_infer_attention_score_v2(q, k, v, **{_V2_NAMES.get(n, n): x for n, x in kw.items()})


def _call_incre(q, k, v, kw):
    kw = dict(kw)
    kw["scale_value"] = kw.pop("scale")
    if "actual_seq_lengths_kv" in kw:
        kw["actual_seq_lengths"] = kw.pop("actual_seq_lengths_kv")
    return torch_npu.npu_incre_flash_attention(q, k, v, **kw), None


def _call_prompt(q, k, v, kw, alias=False):
    kw = dict(kw)
    kw["scale_value"] = kw.pop("scale")
    kw.setdefault("pre_tokens", INT32_MAX)  # the wrapper's defaults are op-plugin's (2147473647, 0)
    kw.setdefault("next_tokens", INT32_MAX)
    if alias and "sparse_mode" in kw:  # 10..14: op-plugin's high-precision spelling of 0..4
        kw["sparse_mode"] += 10
    return torch_npu.npu_prompt_flash_attention(q, k, v, **kw), None


COMMON = {"scale", "atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv", "block_table", "pre_tokens",
          "next_tokens", "sparse_mode", "sparse_mode_4", "pse_shift", "rope", "int8_channel_token",
          "int8_token_head", "softmax_lse_flag"}
COMBINED = {"antiquant_channel", "antiquant_token"}
EXTENSIONS = {"softcap", "alibi_slopes", "alibi_slopes_batch"}
# name: (call, the arguments it takes, branches: decode / prompt)
WRAPPERS = {
    "torch op": (_call_op, COMMON | COMBINED | EXTENSIONS | {"learnable_sink"}, (True, False)),
    "golden": (_call_golden, COMMON | COMBINED | EXTENSIONS | {"learnable_sink", "alibi_rule"}, (True, False)),
    "npu_fused_infer_attention_score": (_call_npu, COMMON | COMBINED, (True, False)),
    "npu_fused_infer_attention_score_v2": (_call_npu_v2, COMMON | {"learnable_sink"}, (True, False)),
    "npu_incre_flash_attention": (_call_incre, {"scale", "atten_mask", "actual_seq_lengths_kv", "block_table",
                                                "pse_shift", "antiquant_channel"}, (True,)),
    "npu_prompt_flash_attention": (_call_prompt, {"scale", "atten_mask", "actual_seq_lengths",
                                                  "actual_seq_lengths_kv", "pre_tokens", "next_tokens",
                                                  "sparse_mode", "sparse_mode_4", "pse_shift"}, (False,)),
    "npu_prompt_flash_attention sparse_mode 10..14": (lambda q, k, v, kw: _call_prompt(q, k, v, kw, alias=True),
                                                      {"sparse_mode", "sparse_mode_4"}, (False,)),
}
PROMPT_ONLY = {"actual_seq_lengths", "pre_tokens", "next_tokens", "sparse_mode", "sparse_mode_4"}
ALL_ARGS = sorted(set().union(*(w[1] for w in WRAPPERS.values())))
CASES = [(w, a, decode) for w, (_, takes, branches) in WRAPPERS.items() for a in ALL_ARGS if a in takes
         for decode in branches if not (decode and a in PROMPT_ONLY)]


@pytest.mark.parametrize("wrapper,arg,decode", CASES,
                         ids=[f"{w}-{a}-{'decode' if d else 'prompt'}" for w, a, d in CASES])
def test_fia_argument_reaches_the_operator(wrapper, arg, decode):
    q, k, v, kw, left_out = _problem(arg, decode)
    _assert_matters(q, k, v, kw, left_out)
    call = WRAPPERS[wrapper][0]
    out, lse = call(q, k, v, kw)
    _check(wrapper, out, lse, q, k, v, kw)


LAYOUT_CASES = [(w, layout) for w in ("torch op", "golden", "npu_fused_infer_attention_score",
                                      "npu_fused_infer_attention_score_v2", "npu_prompt_flash_attention")
                for layout in ("BSH", "BNSD", "TND", "BNSD_BSND")] + \
               [("npu_incre_flash_attention", layout) for layout in ("BSH", "BNSD")]  # IFA: no TND, no BNSD_BSND


@pytest.mark.parametrize("wrapper,layout", LAYOUT_CASES)
def test_fia_input_layout_reaches_the_operator(wrapper, layout):
    """input_layout (and num_heads, which BSH needs to split the hidden size): the output in the layout's shape."""
    decode = wrapper == "npu_incre_flash_attention"
    q, k, v, kw = _base(decode, 3)
    if not wrapper.startswith(("npu_incre", "npu_prompt")):  # those two return no softmax_lse
        kw["softmax_lse_flag"] = True
    q, k, v, kw = _to_layout(q, k, v, kw, layout)
    out, lse = WRAPPERS[wrapper][0](q, k, v, kw)
    _check(wrapper, out, lse, q, k, v, kw)


# ---- flash_attn_with_kvcache: each argument through each path -----------------------------------------------------
KV_LENS = [S2, 9]
_CAUSAL = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)


def _kv_problem(arg, decode=False, seed=5):
    """(q, k_cache, v_cache, the call's keyword arguments, the oracle's (q, k, v, kw), each batch's cache rows
    (k, v) [B, S2, Hk, D] as flash-attn numbers them, left_out): three query rows (one with decode), lengths
    KV_LENS."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, 1 if decode else 3, N1, D, generator=g)
    kc, vc = torch.randn(B, S2, N2, D, generator=g), torch.randn(B, S2, N2, D, generator=g)
    call = dict(cache_seqlens=torch.tensor(KV_LENS, dtype=torch.int32))
    kw = dict(input_layout="BSND", num_heads=N1, num_key_value_heads=N2, scale=BASE_SCALE,
              actual_seq_lengths_kv=list(KV_LENS))
    ref_k, ref_v, left_out = kc, vc, (arg,)
    if arg == "cache_seqlens":
        left_out = ("actual_seq_lengths_kv",)
    elif arg == "softmax_scale":
        call["softmax_scale"], kw["scale"], left_out = 0.37, 0.37, dict(scale=BASE_SCALE)
    elif arg == "causal":
        call["causal"] = True
        kw.update(sparse_mode=3, atten_mask=_CAUSAL)
        left_out = ("sparse_mode",)
    elif arg == "window_right":
        call["window_size"] = (-1, 1)
        kw.update(sparse_mode=4, next_tokens=1, atten_mask=_CAUSAL)
        left_out = ("sparse_mode",)
    elif arg == "window_left":
        call["window_size"] = (2, -1)
        kw.update(sparse_mode=4, pre_tokens=2, atten_mask=_CAUSAL)
        left_out = ("sparse_mode",)
    elif arg == "softcap":
        call["softcap"] = kw["softcap"] = 0.8
    elif arg == "alibi_slopes":
        call["alibi_slopes"] = kw["alibi_slopes"] = torch.tensor([0.5, 0.25, 0.125, 0.0625])
    elif arg == "return_softmax_lse":
        call["return_softmax_lse"] = kw["softmax_lse_flag"] = True
        left_out = ()
    elif arg == "s_aux":
        call["s_aux"] = kw["learnable_sink"] = torch.tensor([1.5, -0.5, 0.7, 2.0])
        left_out = ("learnable_sink",)
    elif arg == "block_table":
        table = torch.tensor([[4, 1, 2], [0, 5, 3]], dtype=torch.int32)
        ref_k, ref_v = _paged(kc, table, 4), _paged(vc, table, 4)
        call["block_table"] = table
        kw.update(block_table=table, block_size=4)
        return q, ref_k.unflatten(2, (N2, D)), ref_v.unflatten(2, (N2, D)), call, (q, ref_k, ref_v, kw), (kc, vc), \
            ("block_table",)
    elif arg == "cache_batch_idx":  # the batches' caches stored swapped
        call["cache_batch_idx"] = torch.tensor([1, 0], dtype=torch.int32)
        return q, kc.flip(0), vc.flip(0), call, (q, kc, vc, kw), (kc, vc), \
            dict(k=kc.flip(0), v=vc.flip(0))
    elif arg == "cache_leftpad":  # batch 0's first 3 rows are padding: its keys are rows [3, 12)
        call["cache_leftpad"] = torch.tensor([3, 0], dtype=torch.int32)
        ref_k, ref_v = kc.clone(), vc.clone()
        ref_k[0, :S2 - 3], ref_v[0, :S2 - 3] = kc[0, 3:], vc[0, 3:]
        kw["actual_seq_lengths_kv"] = [S2 - 3, KV_LENS[1]]
        left_out = dict(k=kc, v=vc, actual_seq_lengths_kv=list(KV_LENS))
    return q, kc, vc, call, (q, ref_k, ref_v, kw), (kc, vc), left_out


def _kv_assert_matters(ref, left_out):
    q, k, v, kw = ref
    if isinstance(left_out, dict) and "k" in left_out:
        other = dict(left_out)
        k2, v2 = other.pop("k"), other.pop("v")
        got, _ = _expected(q, k2, v2, dict(kw, **other))
        ok, _ = compare("without", got, _expected(q, k, v, kw)[0], torch.float32, S2)
        assert not ok, "the oracle gives the same output without the argument"
        return
    _assert_matters(q, k, v, kw, left_out)


KV_ARGS = ["cache_seqlens", "block_table", "softmax_scale", "causal", "window_right", "window_left", "softcap",
           "alibi_slopes", "return_softmax_lse", "s_aux", "cache_batch_idx", "cache_leftpad"]
KV_NOT_FAST = {"window_left", "cache_batch_idx", "cache_leftpad"}  # each sends the call off the fast path
KV_CASES = [(a, p) for a in KV_ARGS for p in ("fast", "append", "table") if not (p == "fast" and a in KV_NOT_FAST)]


@pytest.mark.parametrize("arg,path", KV_CASES)
def test_flash_attn_with_kvcache_argument_reaches_the_operator(arg, path):
    """fast: the positional ladder (each argument alone picks its own rung); append: k and v (the cache's last two
    rows of each batch, written again where they are) with cache_seqlens two shorter; table: the single-row table
    path, through cache_batch_idx (the identity), or for a paged cache a one-row query with a window that keeps
    every key."""
    decode = path == "table" and arg == "block_table"
    q, kc, vc, call, ref, (k_rows, v_rows), left_out = _kv_problem(arg, decode)
    _kv_assert_matters(ref, left_out)
    kc, vc = kc.clone(), vc.clone()
    if path == "append":
        lens = call["cache_seqlens"]
        call = dict(call, cache_seqlens=lens - 2,
                    k=torch.stack([k_rows[b, n - 2:n] for b, n in enumerate(lens.tolist())]),
                    v=torch.stack([v_rows[b, n - 2:n] for b, n in enumerate(lens.tolist())]))
    elif path == "table":
        if decode:
            call["window_size"] = (S2, -1)
        elif "cache_batch_idx" not in call:
            call["cache_batch_idx"] = torch.arange(B, dtype=torch.int32)
    got = fa.flash_attn_with_kvcache(q, kc, vc, **call)
    out, lse = got if call.get("return_softmax_lse") else (got, None)
    _check(f"flash_attn_with_kvcache {path}", out, lse, *ref)


# ---- FlashAttentionScore's fast paths: npu_fusion_attention (v2, v3) and flash_attn_func ---------------------------
# Each argument alone through the fast path (npu_fusion_attention's and flash_attn_func's position ladders: the
# argument picks the rung) and through the general path, reached with a sink of -1e4 per head: e^(-1e4 - m) is 0
# in f32, so the sink takes no weight and the oracle (fa_oracle.py, no sinks) still states the output.
FA_S1, FA_S2 = 6, 10
_NO_WEIGHT_SINK = torch.full((N1,), -1e4)


def _fa_qkv(seed):
    """q [B, FA_S1, N1, D], k and v [B, FA_S2, N2, D] (BSND)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, FA_S1, N1, D, generator=g), torch.randn(B, FA_S2, N2, D, generator=g),
            torch.randn(B, FA_S2, N2, D, generator=g))


def _fa_problem(arg, seed=9):
    """(q, k, v, the wrapper's keyword arguments in npu_fusion_attention's spelling, the oracle's keyword
    arguments, the oracle's keyword arguments without `arg`)."""
    q, k, v = _fa_qkv(seed)
    g = torch.Generator().manual_seed(seed + 100)
    call, ref = dict(scale=BASE_SCALE), dict(scale=BASE_SCALE)
    band_mask = torch.zeros(FA_S1, FA_S2, dtype=torch.bool)  # mode 0 reads only pre / next (fa_oracle)
    if arg == "pse":
        call["pse"] = ref["pse"] = torch.randn(B, N1, FA_S1, FA_S2, generator=g)
    elif arg == "atten_mask":  # mode 1 reads the mask itself
        mask = torch.rand(B, 1, FA_S1, FA_S2, generator=g) < 0.35
        mask[..., 0] = False
        call.update(atten_mask=mask, sparse_mode=1)
        ref.update(atten_mask=mask, sparse_mode=1)
    elif arg == "pre_tockens":
        call.update(atten_mask=band_mask, pre_tockens=1)
        ref.update(atten_mask=band_mask, pre=1)
    elif arg == "next_tockens":
        call.update(atten_mask=band_mask, next_tockens=1)
        ref.update(atten_mask=band_mask, nxt=1)
    elif arg == "sparse_mode":
        call.update(atten_mask=_CAUSAL, sparse_mode=3)
        ref.update(atten_mask=_CAUSAL, sparse_mode=3)
    elif arg == "actual_seq_qlen":  # TND: the batches' cumulative lengths
        q, k, v = q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1)
        call.update(actual_seq_qlen=[2, 2 * FA_S1], actual_seq_kvlen=[7, 2 * FA_S2])
        ref.update(qlens=[2, 2 * FA_S1 - 2], kvlens=[7, 2 * FA_S2 - 7])
        return q, k, v, "TND", call, ref, dict(ref, qlens=[FA_S1, FA_S1], kvlens=[FA_S2, FA_S2])
    dropped = {"pse": dict(pse=None), "atten_mask": dict(sparse_mode=0), "pre_tockens": dict(pre=INT32_MAX),
               "next_tockens": dict(nxt=INT32_MAX), "sparse_mode": dict(sparse_mode=0), "scale": dict(scale=1.0)}
    if arg == "scale":
        call["scale"] = ref["scale"] = 0.37
    return q, k, v, "BSND", call, ref, dict(ref, **dropped[arg])


def _fa_expected(q, k, v, layout, ref):
    return fa_oracle(q, k, v, N1, layout, **ref)


def _fa_matters(q, k, v, layout, ref, dropped):
    ok, _ = compare("without", _fa_expected(q, k, v, layout, dropped), _fa_expected(q, k, v, layout, ref),
                    torch.float32, FA_S2)
    assert not ok, "the oracle gives the same output without the argument: the case could not see it dropped"


def _npu_fa(q, k, v, layout, call, path):
    return torch_npu.npu_fusion_attention(q, k, v, N1, layout, **call, **(
        dict(sink=_NO_WEIGHT_SINK) if path == "general" else {}))[0]


def _npu_fa_v2(q, k, v, layout, call, path):
    call = {{"pre_tockens": "pre_tokens", "next_tockens": "next_tokens"}.get(n, n): x for n, x in call.items()}
    return torch_npu.npu_fusion_attention_v2(q, k, v, N1, layout, **call, sink=_NO_WEIGHT_SINK)[0]


def _npu_fa_v3(q, k, v, layout, call, path):
    call = {n: (torch.tensor(x) if n.startswith("actual_seq") else x) for n, x in call.items()}
    return torch_npu.npu_fusion_attention_v3(q, k, v, N1, layout, **call, sink=_NO_WEIGHT_SINK)[0]


FA_ARGS = ["scale", "pse", "atten_mask", "pre_tockens", "next_tockens", "sparse_mode", "actual_seq_qlen"]
FA_CASES = ([("npu_fusion_attention", a, p) for a in FA_ARGS for p in ("fast", "general")]
            + [(w, a, "general") for w in ("npu_fusion_attention_v2", "npu_fusion_attention_v3") for a in FA_ARGS])
FA_WRAPPERS = dict(npu_fusion_attention=_npu_fa, npu_fusion_attention_v2=_npu_fa_v2,
                   npu_fusion_attention_v3=_npu_fa_v3)


@pytest.mark.parametrize("wrapper,arg,path", FA_CASES)
def test_npu_fusion_attention_argument_reaches_the_operator(wrapper, arg, path):
    q, k, v, layout, call, ref, dropped = _fa_problem(arg)
    _fa_matters(q, k, v, layout, ref, dropped)
    out = FA_WRAPPERS[wrapper](q, k, v, layout, call, path)
    assert_close(f"{wrapper} {path} attention_out", out, _fa_expected(q, k, v, layout, ref), torch.float32, FA_S2)


# flash_attn_func: (its keyword arguments, the oracle's, the oracle's without them)
_FLASH_ARGS = {
    "softmax_scale": (dict(softmax_scale=0.37), dict(scale=0.37), dict(scale=BASE_SCALE)),
    "causal": (dict(causal=True), dict(atten_mask=_CAUSAL, sparse_mode=3), {}),
    "window_left": (dict(window_size=(2, -1)), dict(atten_mask=_CAUSAL, sparse_mode=4, pre=2), {}),
    "window_right": (dict(window_size=(-1, 1)), dict(atten_mask=_CAUSAL, sparse_mode=4, nxt=1), {}),
    "softcap": (dict(softcap=0.8), dict(softcap=0.8), {}),
}
FLASH_CASES = [(a, p) for a in _FLASH_ARGS for p in ("fast", "general")]


@pytest.mark.parametrize("arg,path", FLASH_CASES)
def test_flash_attn_func_argument_reaches_the_operator(arg, path):
    q, k, v = _fa_qkv(9)
    base = dict(scale=BASE_SCALE)  # flash-attn's default D^-0.5
    given, ref, dropped = _FLASH_ARGS[arg]
    ref = dict(base, **ref)
    _fa_matters(q, k, v, "BSND", ref, dict(base, **dropped))
    out = fa.flash_attn_func(q, k, v, **given, **(dict(s_aux=_NO_WEIGHT_SINK) if path == "general" else {}))
    assert_close(f"flash_attn_func {path} out", out, _fa_expected(q, k, v, "BSND", ref), torch.float32, FA_S2)
