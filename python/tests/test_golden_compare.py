"""attnops.golden (numpy, no torch in the call path) and attnops.compare (the harness's rules)."""
import ml_dtypes
import numpy as np
import pytest
import torch

import attnops
import attnops.golden as golden
import attnops.ops  # noqa: F401  (torch.ops.attnops.*)
import fa_oracle
from checks import assert_close, assert_gradients_close


def test_numpy_golden_matches_the_oracle_and_the_torch_op():
    rng = np.random.default_rng(0)
    b, n1, n2, s1, s2, d = 2, 4, 2, 30, 44, 24
    q = rng.standard_normal((b, s1, n1, d)).astype(ml_dtypes.bfloat16)
    k = rng.standard_normal((b, s2, n2, d)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((b, s2, n2, d)).astype(ml_dtypes.bfloat16)
    mask = np.triu(np.ones((2048, 2048), np.bool_), 1)
    out, smax, ssum = golden.flash_attention_score(q, k, v, n1, "BSND", scale=0.2, atten_mask=mask, sparse_mode=3)
    assert out.dtype == ml_dtypes.bfloat16 and smax.shape == (b, n1, s1, 8) and smax.dtype == np.float32
    tq, tk, tv = (torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16) for x in (q, k, v))
    t_out, t_max, _ = torch.ops.attnops.flash_attention_score(tq, tk, tv, n1, "BSND", scale=0.2,
                                                              atten_mask=torch.from_numpy(mask), sparse_mode=3,
                                                              impl="reference")
    assert torch.equal(torch.from_numpy(out.astype(np.float32)), t_out.float())
    assert np.array_equal(smax, t_max.numpy())
    ref = fa_oracle.attention(tq, tk, tv, n1, "BSND", scale=0.2, sparse_mode=3, atten_mask=torch.from_numpy(mask))
    assert_close("golden attention_out", torch.from_numpy(out.astype(np.float32)).to(torch.bfloat16), ref,
                 torch.bfloat16, s2)

    dy = rng.standard_normal(out.shape).astype(ml_dtypes.bfloat16)
    dq, dk, dv, dqr, dkr, _ = golden.flash_attention_score_grad(q, k, v, dy, out, smax, ssum, n1, "BSND", scale=0.2,
                                                                atten_mask=mask, sparse_mode=3)
    assert dqr.size == 0 and dkr.size == 0 and dq.shape == q.shape
    ins = [x.double().requires_grad_() for x in (tq, tk, tv)]
    r = fa_oracle.attention(*ins, n1, "BSND", scale=0.2, sparse_mode=3, atten_mask=torch.from_numpy(mask))
    ref_grads = torch.autograd.grad(r, ins, torch.from_numpy(dy.astype(np.float64)))
    grads = [torch.from_numpy(g.astype(np.float32)).to(torch.bfloat16) for g in (dq, dk, dv)]
    assert_gradients_close(("dq", "dk", "dv"), grads, ref_grads, torch.bfloat16, s2)


def test_numpy_golden_keypool_and_attnres():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 32)).astype(ml_dtypes.bfloat16)
    wk = (rng.standard_normal((16, 32)) / 6).astype(ml_dtypes.bfloat16)
    gate = (rng.standard_normal((16, 32)) / 6).astype(ml_dtypes.bfloat16)
    ape = rng.standard_normal((4, 16)).astype(np.float32)
    cache = np.zeros((4, 4, 32), np.float32)
    table, start = np.array([[1, 2, 3]], np.int32), np.array([2], np.int32)
    pooled = golden.key_pool(x, wk, gate, ape, cache, table, start)
    t_cache = torch.zeros(4, 4, 32)
    t_pooled = torch.ops.attnops.key_pool(*(torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
                                            for a in (x, wk, gate)), torch.from_numpy(ape), t_cache,
                                          torch.from_numpy(table), torch.from_numpy(start), impl="reference")
    assert np.array_equal(pooled.astype(np.float32), t_pooled.float().numpy())
    assert np.array_equal(cache, t_cache.numpy()) and cache.any()

    blocks = [rng.standard_normal((2, 3, 40)).astype(np.float32) for _ in range(3)]
    w, g = rng.standard_normal(40).astype(np.float32) / 6, np.ones(40, np.float32)
    h, rms, alpha = golden.attn_res(blocks, w, rmsnorm_gamma=g)
    assert rms.shape == (2, 3, 3, 1) and alpha.shape == (2, 3, 3)
    grads = golden.attn_res_grad(np.ones_like(h), blocks, w, alpha, rmsnorm_gamma=g, rms=rms)
    assert len(grads[0]) == 3 and grads[2].shape == (40,)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, rtol=1e-6)


def test_compare_dual_rule_verdicts():
    e = np.linspace(-1, 1, 1000)
    ok = attnops.compare(e * (1 + 1e-3), e, rule="dual", label="dq")
    assert ok.passed and bool(ok) and ok.rule == "dual" and ok.n == 1000 and ok.n_fail == 0
    assert str(ok).startswith("PASS dq [dual]")
    bad = e.copy()
    bad[:10] *= 1.02  # 1 % of the elements 2 % off: more than the rule's 0.5 %
    v = attnops.compare(bad, e, rule="dual", label="dq")
    assert not v.passed and v.n_fail == 10 and v.worst == (0,) and str(v).startswith("FAIL dq [dual]")
    nan = e.copy()
    nan[5] = np.nan
    assert not attnops.compare(nan, e, rule="dual").passed
    assert attnops.compare(np.where(np.isnan(nan), np.nan, e), nan, rule="dual").passed  # NaN where the golden has one


def test_compare_other_rules():
    e = np.linspace(1, 2, 400).reshape(20, 20)
    assert attnops.compare(e * (1 + 5e-4), e, rule="thousandth").passed
    assert not attnops.compare(e * (1 + 5e-3), e, rule="thousandth").passed
    counted = np.zeros_like(e, dtype=bool)
    counted[:10] = True
    off = e.copy()
    off[10:] += 1.0
    assert attnops.compare(off, e, rule="isclose", counted=counted).passed
    assert not attnops.compare(off, e, rule="isclose").passed
    assert attnops.compare(e + 1e-3, e, rule="allclose").passed
    golden_ = torch.linspace(-2, 2, 512, dtype=torch.float64)
    bench = (golden_.to(torch.bfloat16)).double()
    assert attnops.compare(bench, golden_, rule="triple", bench=bench, dtype=torch.bfloat16).passed
    worse = bench + 0.05
    v = attnops.compare(worse, golden_, rule="triple", bench=bench, dtype=torch.bfloat16)
    assert not v.passed and "mare" in " ".join(v.metrics).lower()


def test_compare_refuses_bad_requests():
    e = np.zeros(4)
    with pytest.raises(ValueError, match="rule"):
        attnops.compare(e, e, rule="close-enough")
    with pytest.raises(ValueError, match="shape"):
        attnops.compare(np.zeros(5), e)
    with pytest.raises(ValueError, match="bench"):
        attnops.compare(e, e, rule="triple")


def _rel(a, e):
    a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
    return np.linalg.norm(a - e) / np.linalg.norm(e)


def test_fp8_golden_takes_its_block_scales():
    """FP8 inputs from fp8_quantize_blocks against the bf16 golden of the de-quantised values: within
    2 u_e4m3 = 2^-3 in relative L2 (the FP8 golden also quantises P and dS); the same call with
    d_scale_k and d_scale_v swapped is far off (the check sees a wrong scale)."""
    rng = np.random.default_rng(0)
    b, n, s, d = 1, 2, 200, 64
    q, k, v, dy = (rng.standard_normal((b, n, s, d)).astype(np.float32) * f for f in (1, 8, 0.05, 3))
    quant = [golden.fp8_quantize_blocks(x, "BNSD", n) for x in (q, k, v, dy)]
    assert quant[0][0].dtype == ml_dtypes.float8_e4m3fn and quant[0][1].shape == (b, n, 2, 1)
    deq = [(x.astype(np.float32) * np.repeat(sc, 128, axis=2)[:, :, :s]).astype(ml_dtypes.bfloat16)
           for x, sc in quant]
    (q8, sq), (k8, sk), (v8, sv), (dy8, sdy) = quant
    scales = dict(d_scale_q=sq, d_scale_k=sk, d_scale_v=sv, d_scale_o=sq)
    out, smax, ssum = golden.flash_attention_score(q8, k8, v8, n, "BNSD", scale=0.015, **scales)
    ref, rmax, rsum = golden.flash_attention_score(*deq[:3], n, "BNSD", scale=0.015)
    assert out.dtype == ml_dtypes.bfloat16 and _rel(out, ref) < 2 * 2.0 ** -4
    grads = golden.flash_attention_score_grad(q8, k8, v8, dy8, out, smax, ssum, n, "BNSD", scale=0.015,
                                              d_scale_dy=sdy, **scales)
    ref_grads = golden.flash_attention_score_grad(*deq, ref, rmax, rsum, n, "BNSD", scale=0.015)
    for g, rg in zip(grads[:3], ref_grads[:3]):
        assert _rel(g, rg) < 2 * 2.0 ** -4
    fast = golden.flash_attention_score_grad(q8, k8, v8, dy8, out, smax, ssum, n, "BNSD", scale=0.015,
                                             d_scale_dy=sdy, impl="cpu", **scales)
    for name, a, e in zip(("dq", "dk", "dv"), fast[:3], grads[:3]):
        assert attnops.compare(a, e, rule="dual", label=name).passed
    swapped = dict(scales, d_scale_k=sv, d_scale_v=sk)
    wrong = golden.flash_attention_score(q8, k8, v8, n, "BNSD", scale=0.015, **swapped)[0]
    assert _rel(wrong, ref) > 1.0
    with pytest.raises(ValueError, match="d_scale"):
        golden.flash_attention_score(deq[0], deq[1], deq[2], n, "BNSD", d_scale_q=sq)


def _fp8_e4m3_round(x):
    """float8_e4m3fn rounding of float64 values, computed in float64 (no intermediate float32): the
    quantum is 2^(max(e, -6) - 3) for |x| in [2^e, 2^(e+1)), ties to even (spec 6)."""
    e = np.maximum(np.floor(np.log2(np.where(x == 0, 1.0, np.abs(x)))), -6.0)
    quantum = np.exp2(e - 3)
    return np.round(x / quantum) * quantum


def test_fp8_forward_quantises_the_dropped_p():
    """FP8 forward with dropout against a float64 statement of spec 6: Pq = fp8(P keep / kp) -- the dropout
    scaling before the quantisation -- and o = sum_j Pq[j] vf[j] (vf the de-quantised values).  The golden
    computes in double, so the only rounding left is attention_out's to bf16: the comparison takes f32
    operands (quantising P before the scaling is off by up to half an e4m3 step of P).  The FP8 forward is
    the reference's only (the fast kernel refuses it)."""
    rng = np.random.default_rng(1)
    b, n, s, d, kp, scale = 1, 2, 200, 64, 0.8, 0.1
    q, k, v = (rng.standard_normal((b, n, s, d)).astype(np.float32) * f for f in (1, 2, 0.5))
    quant = [golden.fp8_quantize_blocks(x, "BNSD", n) for x in (q, k, v)]
    (q8, sq), (k8, sk), (v8, sv) = quant
    out = golden.flash_attention_score(q8, k8, v8, n, "BNSD", scale=scale, keep_prob=kp, seed=5, offset=24,
                                       d_scale_q=sq, d_scale_k=sk, d_scale_v=sv, d_scale_o=sq)[0]
    qf, kf, vf = (x.astype(np.float64) * np.repeat(sc.astype(np.float64), 128, axis=2)[:, :, :s] for x, sc in quant)
    p = qf @ kf.transpose(0, 1, 3, 2) * scale
    p = np.exp(p - p.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    keep = attnops.dropout_mask(5, 24, kp, n, batch=b, seq_q=s, seq_kv=s).astype(np.float64)
    ref = _fp8_e4m3_round(p * keep / kp) @ vf
    assert keep.mean() < 0.9
    assert_close("attention_out", torch.from_numpy(out.astype(np.float32)), torch.from_numpy(ref), torch.bfloat16,
                 s, operand=torch.float32)


def test_benchmark_chain_backward_rounds_every_small_operator():
    """The triple rule's benchmark chain (impl "benchmark"), backward in f16, against a float64 statement of
    it (src/ref/fa_ref.c's header): every small operator's result rounded to f16 -- q.k, the scaled score,
    s - m, exp, P, dy.v, Drow = dy.o, dP - Drow, dS, scale dS and the summed gradients.  numpy rounds float64
    to f16 directly, as the chain does, and the sums are in float64, so the results agree bit for bit
    (leaving out Drow's rounding changes about a quarter of dq)."""
    rng = np.random.default_rng(2)
    b, n, s1, s2, d, scale = 1, 2, 40, 56, 32, 0.15
    q, k, v, dy = (rng.standard_normal((b, n, s, d)).astype(np.float16) for s in (s1, s2, s2, s1))
    out, smax, ssum = golden.flash_attention_score(q, k, v, n, "BNSD", scale=scale)
    grads = golden.flash_attention_score_grad(q, k, v, dy, out, smax, ssum, n, "BNSD", scale=scale,
                                              impl="benchmark")

    def r(x):
        return x.astype(np.float16).astype(np.float64)

    q, k, v, dy, o = (x.astype(np.float64) for x in (q, k, v, dy, out))
    row_max, row_sum = (x[..., :1].astype(np.float64) for x in (smax, ssum))
    kt = k.transpose(0, 1, 3, 2)
    p = r(r(np.exp(r(r(r(q @ kt) * scale) - row_max))) / row_sum)
    drow = r((dy * o).sum(-1, keepdims=True))
    ds = r(scale * r(p * r(r(dy @ v.transpose(0, 1, 3, 2)) - drow)))
    expected = (r(ds @ k), r(ds.transpose(0, 1, 3, 2) @ q), r(p.transpose(0, 1, 3, 2) @ dy))
    for name, a, e in zip(("dq", "dk", "dv"), grads[:3], expected):
        assert a.dtype == np.float16
        off = np.count_nonzero(a.astype(np.float64) != e)
        assert off == 0, f"{name}: {off} of {a.size} elements differ from the chain's statement"
