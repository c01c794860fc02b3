"""softcap (flash-attn's score soft-capping, an attnops extension of FlashAttentionScore) through
torch.ops.attnops, forward and autograd backward, against the independent float64 oracle
(fa_oracle.py: s = c tanh(q.k scale / c) + bias, the masked fill a constant), for the fast kernel and
the golden.  softcap 1 with scores ~N(0, 1) keeps most of them in tanh's curved part, so a kernel
that left the cap (or its derivative) out fails by far more than the tolerance."""
import itertools

import pytest
import torch

import attnops
import attnops.golden
import attnops.ops
import fa_oracle
from checks import assert_close, assert_gradients_close, compare

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
IMPLS = ["cpu", "reference"]


def shaped(layout, b, n, s, d, dtype, lens=None):
    shape = {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d), "SBH": (s, b, n * d),
             "TND": (sum(lens or []), n, d)}[layout]
    return torch.randn(shape).to(dtype)


def run(layout, dtype, impl, *, softcap=1.0, b=2, n1=4, n2=2, s1=70, s2=90, d=40, dv=24, qlens=None, kvlens=None,
        op_kw=None, oracle_kw=None, check=True):
    """attention_out and the gradients of the op vs the oracle's; -> (out, ref)."""
    q, k = shaped(layout, b, n1, s1, d, dtype, qlens), shaped(layout, b, n2, s2, d, dtype, kvlens)
    v = shaped(layout, b, n2, s2, dv, dtype, kvlens)
    scale = d ** -0.5
    op_kw, okw = dict(op_kw or {}), dict(oracle_kw or {})
    if layout == "TND":
        op_kw.update(actual_seq_qlen=list(itertools.accumulate(qlens)),
                     actual_seq_kvlen=list(itertools.accumulate(kvlens)))
        okw.update(qlens=qlens, kvlens=kvlens)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out = torch.ops.attnops.flash_attention_score(*ins, n1, layout, scale=scale, softcap=softcap, impl=impl,
                                                  **op_kw)[0]
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    ref = fa_oracle.attention(*ref_ins, n1, layout, scale=scale, softcap=softcap, **okw)
    ref_grads = torch.autograd.grad(ref, ref_ins, dy.double())
    if check:
        kl = max(s1, s2, d)
        assert_close("attention_out", out, ref, dtype, kl)
        assert_gradients_close(("dq", "dk", "dv"), grads, ref_grads, dtype, kl)
    return out, ref


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layout", ["BNSD", "BSND", "SBH"])
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_layouts_and_dtypes(impl, layout, dtype):
    run(layout, dtype, impl)


def compressed_causal():
    return torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["causal", "band", "fully_masked_rows", "pse1", "pse0", "alibi"])
def test_masks_and_biases(impl, case):
    """The bias enters after the cap in the score's units; a masked score has no gradient, also on a row
    whose every key is masked (uniform weights: dv gets them, dq / dk nothing through the fill)."""
    b, n1, s1, s2 = 2, 4, 70, 90
    if case == "causal":
        kw = dict(atten_mask=compressed_causal(), sparse_mode=3)
        okw = dict(atten_mask=kw["atten_mask"], sparse_mode=3)
    elif case == "band":
        kw = dict(atten_mask=compressed_causal(), sparse_mode=4, pre_tokens=30, next_tokens=5)
        okw = dict(atten_mask=kw["atten_mask"], sparse_mode=4, pre=30, nxt=5)
    elif case == "fully_masked_rows":
        mask = torch.rand(b, 1, s1, s2) < 0.3
        mask[:, :, 5] = True
        kw = okw = dict(sparse_mode=1, atten_mask=mask)
    elif case in ("pse1", "pse0"):
        pse_type = int(case[-1])
        pse = torch.randn((b, n1, s1, s2) if pse_type else (b, n1, 1, s2))
        kw = okw = dict(pse=pse, pse_type=pse_type)
    else:
        slopes = torch.rand(n1)
        kw = dict(pse=slopes, pse_type=2, q_start_idx=[3], kv_start_idx=[1])
        okw = dict(pse=slopes, pse_type=2, q_start=3, kv_start=1)
    run("BSND", F32, impl, b=b, n1=n1, s1=s1, s2=s2, op_kw=kw, oracle_kw=okw)


@pytest.mark.parametrize("impl", IMPLS)
def test_tnd(impl):
    qlens, kvlens = [30, 0, 45, 17], [50, 0, 33, 17]
    mask = compressed_causal()
    run("TND", BF16, impl, qlens=qlens, kvlens=kvlens, op_kw=dict(atten_mask=mask, sparse_mode=3),
        oracle_kw=dict(atten_mask=mask, sparse_mode=3))


def test_dropout_follows_the_cap():
    """The cap, then the softmax, then the exported keep mask (flash-attn refuses softcap with dropout;
    attnops computes it)."""
    b, n1, s1, s2, kp = 2, 4, 70, 90, 0.8
    keep = torch.from_numpy(attnops.dropout_mask(5, 0, kp, n1, batch=b, seq_q=s1, seq_kv=s2))
    run("BSND", F32, "cpu", b=b, n1=n1, s1=s1, s2=s2, op_kw=dict(keep_prob=kp, seed=5, offset=0),
        oracle_kw=dict(keep=keep, keep_prob=kp))


def uncapped_reference():
    """The oracle without the cap, on the inputs run() draws after torch.manual_seed(0)."""
    torch.manual_seed(0)
    q, k = shaped("BSND", 2, 4, 70, 40, F32), shaped("BSND", 2, 2, 90, 40, F32)
    v = shaped("BSND", 2, 2, 90, 24, F32)
    return fa_oracle.attention(q.double(), k.double(), v.double(), 4, "BSND", scale=40 ** -0.5)


def test_the_cap_matters_and_a_large_one_does_not():
    """The comparisons above can fail: softcap 1 is far from the uncapped oracle, and softcap 1e4 is
    within tolerance of it (c tanh(x / c) = x - x^3 / 3c^2 + ...)."""
    ref = uncapped_reference()
    torch.manual_seed(0)
    out, _ = run("BSND", F32, "cpu", check=False)
    ok, msg = compare("capped vs uncapped", out, ref, F32, 90)
    assert not ok, msg
    torch.manual_seed(0)
    out, _ = run("BSND", F32, "cpu", softcap=1e4, check=False)
    assert_close("softcap 1e4 vs uncapped", out, ref, F32, 90)


@pytest.mark.parametrize("value,words", [(-1.0, "softcap is -1"), (float("nan"), "softcap is nan"),
                                         (float("inf"), "softcap is inf")])
def test_bad_softcap_is_refused_by_name(value, words):
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(attnops.AttnopsValueError, match=words):
        attnops.ops.flash_attention_score(q, q, q, 2, "BSND", softcap=value)


def test_fp8_with_softcap_is_refused():
    import ml_dtypes
    import numpy as np
    q = np.zeros((1, 2, 8, 16), ml_dtypes.float8_e4m3fn)
    ds = np.ones((1, 2, 1, 1), np.float32)
    with pytest.raises(attnops.AttnopsNotImplementedError, match="softcap"):
        attnops.golden.flash_attention_score(q, q, q, 2, "BNSD", d_scale_q=ds, d_scale_k=ds, d_scale_v=ds,
                                             softcap=30.0)
