"""attnops.torch_npu.npu_fusion_attention(_grad) and torch.ops.attnops.* against the
independent float64 implementation (fa_oracle.py), forward and backward."""
import itertools

import pytest
import torch

import attnops
import attnops.torch_npu as torch_npu
from checks import assert_close, assert_gradients_close, compare
import fa_oracle

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def shaped(layout, b, n, s, d, dtype, lens=None):
    """A random tensor in `layout` (TND: sum(lens) rows)."""
    shape = {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d), "SBH": (s, b, n * d),
             "TND": (sum(lens or []), n, d)}[layout]
    return torch.randn(shape).to(dtype)


def cumulative(lens):
    return list(itertools.accumulate(lens))


def check_case(layout, dtype, *, b=2, n1=4, n2=2, s1=70, s2=90, d=40, dv=24, qlens=None, kvlens=None,
               scale=None, oracle_kw=None, **op_kw):
    """Forward + autograd backward of npu_fusion_attention vs the oracle's forward + autograd."""
    q = shaped(layout, b, n1, s1, d, dtype, qlens)
    k = shaped(layout, b, n2, s2, d, dtype, kvlens)
    v = shaped(layout, b, n2, s2, dv, dtype, kvlens)
    scale = scale if scale is not None else d ** -0.5
    tnd = {}
    if layout == "TND":
        tnd = dict(actual_seq_qlen=cumulative(qlens), actual_seq_kvlen=cumulative(kvlens))
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out, smax, ssum, soft_out, seed, offset, numels = torch_npu.npu_fusion_attention(
        *inputs, n1, layout, scale=scale, **tnd, **op_kw)
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, inputs, dy)

    ref_inputs = [t.double().requires_grad_() for t in (q, k, v)]
    kw = dict(oracle_kw or {})
    if callable(kw.get("keep")):  # the keep mask of the call's (seed, offset)
        kw["keep"] = kw["keep"](seed, offset)
    if layout == "TND":
        kw.update(qlens=[x for x in qlens], kvlens=[x for x in kvlens])
    ref = fa_oracle.attention(*ref_inputs, n1, layout, scale=scale, **kw)
    ref_grads = torch.autograd.grad(ref, ref_inputs, dy.double())
    k_len = max(s1, s2, d)
    assert_close("attention_out", out, ref, dtype, k_len)
    assert_gradients_close(("dq", "dk", "dv"), grads, ref_grads, dtype, k_len)
    assert soft_out.numel() == 0
    return out, smax, ssum, seed, offset, numels


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH", "SBH"])
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_layouts_gqa(layout, dtype):
    out, smax, ssum, seed, offset, numels = check_case(layout, dtype)
    assert smax.shape == (2, 4, 70, 8) and smax.dtype == F32 and ssum.shape == smax.shape
    assert (seed, offset, numels) == (0, 0, 2 * 4 * 70 * 90)


def compressed_causal(rows=2048):
    return torch.triu(torch.ones(rows, 2048, dtype=torch.bool), diagonal=1)


def prefix_compressed():
    """The mode-6 mask: [triu(2048, 1); zeros 1024x1024 | ones 1024x1024] (spec 3.2)."""
    low = torch.cat([torch.zeros(1024, 1024, dtype=torch.bool), torch.ones(1024, 1024, dtype=torch.bool)], 1)
    return torch.cat([compressed_causal(), low])


@pytest.mark.parametrize("mode,s1,s2,pre,nxt", [
    (0, 70, 90, 20, 10), (1, 70, 90, 2147483647, 2147483647), (2, 70, 90, 2147483647, 0),
    (3, 70, 90, 2147483647, 0), (3, 90, 90, 2147483647, 0), (4, 70, 90, 30, 5), (4, 90, 70, 25, 12),
    (5, 70, 90, 2147483647, 0), (6, 70, 90, 2147483647, 0)])
def test_sparse_modes(mode, s1, s2, pre, nxt):
    b, prefix = 2, [25, 60]
    if mode == 0:
        mask = fa_oracle.masked_positions(0, s1, s2, pre, nxt)
    elif mode == 1:
        mask = torch.rand(b, 1, s1, s2) < 0.3
    elif mode == 5:
        mask = torch.stack([fa_oracle.masked_positions(5, s1, s2, pre, nxt, prefix[i]) for i in range(b)])[:, None]
    elif mode == 6:
        mask = prefix_compressed()
    else:
        mask = compressed_causal()
    kw = dict(sparse_mode=mode, pre_tockens=pre, next_tockens=nxt, atten_mask=mask)
    if mode in (5, 6):
        kw["prefix"] = prefix
    oracle_kw = dict(sparse_mode=mode, pre=pre, nxt=nxt, atten_mask=mask, prefix=prefix)
    check_case("BSND", F32, b=b, s1=s1, s2=s2, oracle_kw=oracle_kw, **kw)


@pytest.mark.parametrize("mode,pre,nxt", [(None, 0, 0), (0, 25, 8), (0, -5, 40), (2, 2147483647, 0),
                                          (3, 2147483647, 0), (4, 20, 6), (4, -3, 30), (7, 100, 0), (8, 100, 0)])
def test_tnd(mode, pre, nxt):
    """Varlen with an interior and a trailing zero-length batch.  Negative tokens need -pre <= S2 and
    -next <= S1 in every batch, so those cases have a trailing empty batch only: it is valid because
    trailing empty batches are dropped (spec 3.4), and a library that kept it would refuse the call."""
    qlens, kvlens = [30, 0, 30, 17, 0], [50, 0, 33, 17, 0]
    if pre < 0 or nxt < 0:
        qlens, kvlens = [30, 30, 17, 0], [50, 33, 17, 0]
    kw, okw = {}, {}
    if mode is not None:
        mask = fa_oracle.masked_positions(0, 30, 50, pre, nxt) if mode == 0 else compressed_causal()
        kw = dict(sparse_mode=mode, pre_tockens=pre, next_tockens=nxt, atten_mask=mask)
        okw = dict(sparse_mode=mode, pre=pre, nxt=nxt, atten_mask=mask)
    out, smax, *_, numels = check_case("TND", F32, qlens=qlens, kvlens=kvlens, oracle_kw=okw, **kw)
    assert smax.shape == (sum(qlens), 4, 8)
    assert numels == 4 * sum(a * b for a, b in zip(qlens, kvlens))


FLT_MAX = 3.4028234663852886e38


@pytest.mark.parametrize("mode,qlens,kvlens", [
    (7, [5, 0, 3], [2, 0, 3]),  # a batch before the band with S1 > S2: mode 3's rule selects the sentinel
    (7, [3, 0, 5], [3, 0, 2]),  # the (last) band batch with next + S2 < S1
    (7, [3, 4], [3, 6]),        # no batch meets a rule: no sentinel
    (8, [5, 3], [2, 3]),        # the (first) band batch with next + S2 < S1
    (8, [3, 5], [3, 2]),        # a later batch with S1 > S2 is causal from the top left: no sentinel
])
def test_tnd_band_modes_invalid_rows(mode, qlens, kvlens):
    """Modes 7/8: which batches' rules select the invalid-row sentinel, against the oracle's statement of
    them (fa_oracle.call_skips_invalid_rows), read from softmax_max / softmax_sum of the fully masked rows."""
    pre, nxt = 65536, 0
    mask = compressed_causal()
    out, smax, ssum, *_ = check_case("TND", F32, qlens=qlens, kvlens=kvlens, sparse_mode=mode, pre_tockens=pre,
                                     next_tockens=nxt, atten_mask=mask,
                                     oracle_kw=dict(sparse_mode=mode, pre=pre, nxt=nxt, atten_mask=mask))
    skip = fa_oracle.call_skips_invalid_rows(mode, "TND", qlens, kvlens, pre, nxt, None)
    band = fa_oracle.band_batch(mode, qlens)
    start, checked = 0, 0
    for b, (s1, s2) in enumerate(zip(qlens, kvlens)):
        full = fa_oracle.masked_positions(mode, s1, s2, pre, nxt, band=b == band).all(dim=-1)
        # the statistics' memory is [N1, S1_b, 8] per batch in the [T, N1, 8] tensor (docs/NUMERICS.md)
        row_max, row_sum = (t.flatten()[start * 4 * 8:(start + s1) * 4 * 8].view(4, s1, 8)[:, :, 0]
                            for t in (smax, ssum))
        for i in full.nonzero().flatten().tolist():
            rows = set(zip(row_max[:, i].tolist(), row_sum[:, i].tolist()))
            assert rows == {(-FLT_MAX, FLT_MAX) if skip else (-40000.0, float(s2))}, (b, i, rows)
            checked += 1
        start += s1
    assert checked > 0 or not skip


@pytest.mark.parametrize("pse_type", [0, 1])
@pytest.mark.parametrize("shape", ["BNSS", "1NSS", "BN1S"])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_external_pse(pse_type, shape, dtype):
    b, n1, s1, s2 = 2, 4, 70, 90
    pse = torch.randn({"BNSS": (b, n1, s1, s2), "1NSS": (1, n1, s1, s2), "BN1S": (b, n1, 1, s2)}[shape]).to(dtype)
    q, k = shaped("BSND", b, n1, s1, 40, dtype), shaped("BSND", b, 2, s2, 40, dtype)
    v = shaped("BSND", b, 2, s2, 24, dtype)
    _check_op(q, k, v, n1, dict(pse=pse, pse_type=pse_type), dict(pse=pse, pse_type=pse_type), dtype, (s1, s2, 40))


@pytest.mark.parametrize("pse_type", [2, 3])
@pytest.mark.parametrize("per_batch", [False, True])
def test_generated_alibi(pse_type, per_batch):
    b, n1, s1, s2 = 2, 4, 70, 90
    slopes = torch.rand(b, n1) if per_batch else fa_oracle.get_slopes(n1)
    q, k, v = shaped("BSND", b, n1, s1, 40, F32), shaped("BSND", b, 2, s2, 40, F32), shaped("BSND", b, 2, s2, 24, F32)
    kw = dict(pse=slopes, pse_type=pse_type, q_start_idx=[7], kv_start_idx=[3])
    _check_op(q, k, v, n1, kw, dict(pse=slopes, pse_type=pse_type, q_start=7, kv_start=3), F32, (s1, s2, 40))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 12, 20, 24, 40, 64, 100])
def test_alibi_slopes_are_the_standard_ones(n):
    """attnops_alibi_slopes (the slopes the harness and the C suites generate) against the oracle's statement
    of ALiBi's slopes (spec 4.2): for a head count that is not a power of two, the extra slopes take the odd
    powers of 2^(-4/p).  The library raises a float base to the k-th power, so its relative error grows
    with k: within (n + 2) 2^-24."""
    import ctypes
    from attnops import _lib
    out = (ctypes.c_float * n)()
    assert _lib.lib.attnops_alibi_slopes(n, out) == 0
    got, want = torch.tensor(list(out), dtype=torch.float64), fa_oracle.get_slopes(n).double()
    rel = ((got - want).abs() / want).max().item()
    assert rel <= (n + 2) * 2.0 ** -24, (rel, got.tolist(), want.tolist())


@pytest.mark.parametrize("pse_type", [2, 3])
def test_generated_alibi_tnd_trailing_empty_batch(pse_type):
    """Generated ALiBi in TND with a trailing empty batch: valid, since trailing empty batches are dropped
    (spec 3.4) and the pse rule refuses only empty batches that remain."""
    qlens, kvlens, n1 = [30, 30, 0], [50, 33, 0], 4
    slopes = fa_oracle.get_slopes(n1)
    q = shaped("TND", 0, n1, 0, 40, F32, qlens)
    k, v = shaped("TND", 0, 2, 0, 40, F32, kvlens), shaped("TND", 0, 2, 0, 24, F32, kvlens)
    kw = dict(pse=slopes, pse_type=pse_type, actual_seq_qlen=cumulative(qlens), actual_seq_kvlen=cumulative(kvlens))
    _check_op(q, k, v, n1, kw, dict(pse=slopes, pse_type=pse_type, qlens=qlens, kvlens=kvlens), F32, (50, 40),
              layout="TND")


def test_bf16_forward_rounds_p():
    """The bf16 forward rounds P to bf16 before P.V, as the device's bf16 GEMM takes it (docs/NUMERICS.md):
    its output is, bit for bit, o = (bf16(exp(s - m)) V) / l in float64 rounded once, and not the output
    of an unrounded P.  One key tile (S2 = 64), so that the running max is the final max; a sharp softmax
    (scale 3/sqrt(D)) spreads P.  Tolerance-based checks cannot see the rounding: leaving it out moves the
    kernel closer to the float64 oracle."""
    b, n, s1, s2, d = 1, 4, 128, 64, 64
    q, k, v = shaped("BSND", b, n, s1, d, BF16), shaped("BSND", b, n, s2, d, BF16), shaped("BSND", b, n, s2, d, BF16)
    scale = 3 * d ** -0.5
    out = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=scale)[0]
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    s = (qd @ kd.transpose(-1, -2)) * scale
    p = torch.exp(s - s.amax(-1, keepdim=True))
    lsum = p.sum(-1, keepdim=True)
    rounded, unrounded = ((pp @ vd / lsum).transpose(1, 2).to(BF16) for pp in (p.to(BF16).double(), p))
    assert (out == rounded).double().mean().item() >= 0.995
    assert (out == unrounded).double().mean().item() < 0.9


def test_bf16_backward_rounds_p_and_ds():
    """The bf16 backward rounds P before dV = P^T dY and dS before dQ = scale dS K, as the bf16 GEMMs take
    them: dv and dq are, bit for bit, those float64 products of the rounded P and dS (P from the forward's
    softmax_max / softmax_sum), and not those of the unrounded ones.  One key tile (S2 = 64)."""
    b, n, s1, s2, d = 1, 4, 128, 64, 64
    q, k, v = shaped("BSND", b, n, s1, d, BF16), shaped("BSND", b, n, s2, d, BF16), shaped("BSND", b, n, s2, d, BF16)
    dy = shaped("BSND", b, n, s1, d, BF16)
    scale = 3 * d ** -0.5
    out, smax, ssum = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=scale)[:3]
    dq, dk, dv = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                                     attention_in=out, scale_value=scale)[:3]
    qd, kd, vd, dyd, od = (t.double().transpose(1, 2) for t in (q, k, v, dy, out))
    p = torch.exp((qd @ kd.transpose(-1, -2)) * scale - smax[..., :1].double()) / ssum[..., :1].double()
    ds = p * (dyd @ vd.transpose(-1, -2) - (dyd * od).sum(-1, keepdim=True))

    def bf16(x):
        return x.to(BF16).double()

    for name, got, rounded, unrounded in (
            ("dv", dv, bf16(p).transpose(-1, -2) @ dyd, p.transpose(-1, -2) @ dyd),
            ("dq", dq, scale * bf16(ds) @ kd, scale * ds @ kd)):
        same = [(got == x.transpose(1, 2).to(BF16)).double().mean().item() for x in (rounded, unrounded)]
        assert same[0] >= 0.995 and same[1] < 0.9, f"{name}: bit-equal to rounded {same[0]}, to unrounded {same[1]}"


def test_rope():
    b, n1, s1, s2 = 2, 4, 70, 90
    q, k, v = shaped("BNSD", b, n1, s1, 32, F32), shaped("BNSD", b, 2, s2, 32, F32), shaped("BNSD", b, 2, s2, 32, F32)
    qr, kr = shaped("BNSD", b, n1, s1, 16, F32), shaped("BNSD", b, 2, s2, 16, F32)
    _check_op(q, k, v, n1, dict(query_rope=qr, key_rope=kr), dict(), F32, (s1, s2, 48), layout="BNSD",
              rope=(qr, kr))


def _check_op(q, k, v, n1, op_kw, oracle_kw, dtype, dims, layout="BSND", rope=None):
    """torch.ops.attnops.flash_attention_score (+ autograd) vs the oracle, for the v2-only arguments."""
    scale = 0.15
    extra = [t.clone().requires_grad_() for t in rope] if rope else []
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    if rope:
        op_kw = dict(op_kw, query_rope=extra[0], key_rope=extra[1])
    out = torch.ops.attnops.flash_attention_score(*inputs, n1, layout, scale=scale, **op_kw)[0]
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, inputs + extra, dy)
    ref_in = [t.double().requires_grad_() for t in (q, k, v) + (tuple(rope) if rope else ())]
    okw = dict(oracle_kw)
    if rope:
        okw.update(q_rope=ref_in[3], k_rope=ref_in[4])
    ref = fa_oracle.attention(*ref_in[:3], n1, layout, scale=scale, **okw)
    ref_grads = torch.autograd.grad(ref, ref_in, dy.double())
    k_len = max(dims)
    assert_close("attention_out", out, ref, dtype, k_len)
    assert_gradients_close(("dq", "dk", "dv", "dq_rope", "dk_rope"), grads, ref_grads, dtype, k_len)


def test_dropout_replays_the_exported_mask():
    b, n1, s1, s2, kp = 2, 4, 70, 90, 0.8
    q = shaped("BSND", b, n1, s1, 40, F32)
    first = torch_npu.npu_fusion_attention(q, q, q, n1, "BSND", keep_prob=kp)
    assert first[4:6] == (0, 0)  # the autouse fixture's torch.manual_seed(0)
    torch.manual_seed(7)
    run_a = torch_npu.npu_fusion_attention(q, q, q, n1, "BSND", keep_prob=kp)
    torch.manual_seed(7)
    run_b = torch_npu.npu_fusion_attention(q, q, q, n1, "BSND", keep_prob=kp)
    assert run_a[4:6] == run_b[4:6] == (7, 0) and torch.equal(run_a[0], run_b[0]), \
        "torch.manual_seed must make the dropout stream repeatable"

    def exported(seed, offset):
        keep = torch.from_numpy(attnops.dropout_mask(seed, offset, kp, n1, batch=b, seq_q=s1, seq_kv=s2))
        assert 0.7 < keep.float().mean().item() < 0.9
        return keep

    check_case("BSND", F32, b=b, n1=n1, s1=s1, s2=s2, keep_prob=kp, oracle_kw=dict(keep=exported, keep_prob=kp))


def test_dropout_tnd():
    qlens, kvlens, kp = [30, 0, 45, 17], [50, 0, 33, 17], 0.7

    def exported(seed, offset):
        return torch.from_numpy(attnops.dropout_mask(seed, offset, kp, 4, actual_seq_qlen=cumulative(qlens),
                                                     actual_seq_kvlen=cumulative(kvlens)))

    check_case("TND", F32, qlens=qlens, kvlens=kvlens, keep_prob=kp, oracle_kw=dict(keep=exported, keep_prob=kp))


@pytest.mark.parametrize("sentinel", [False, True])
def test_fully_masked_rows(sentinel):
    """A row with every key masked: uniform weights, or (inner_precise 2) output 0 and no gradient."""
    b, s1, s2 = 2, 70, 90
    mask = torch.rand(b, 1, s1, s2) < 0.3
    mask[:, :, 5] = True
    mask[1, :, 60] = True
    kw = dict(sparse_mode=1, atten_mask=mask, inner_precise=2 if sentinel else 0)
    out, smax, ssum, *_ = check_case("BSND", F32, b=b, s1=s1, s2=s2,
                                     oracle_kw=dict(sparse_mode=1, atten_mask=mask, inner_precise=kw["inner_precise"]),
                                     **kw)
    row = smax[0, 0, 5, 0].item(), ssum[0, 0, 5, 0].item()
    assert row == ((-3.4028234663852886e38, 3.4028234663852886e38) if sentinel else (-40000.0, float(s2)))


def test_explicit_grad_equals_autograd():
    q, k, v = shaped("BSH", 2, 4, 50, 32, BF16), shaped("BSH", 2, 2, 60, 32, BF16), shaped("BSH", 2, 2, 60, 16, BF16)
    mask = compressed_causal()
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out, smax, ssum, _, seed, offset, numels = torch_npu.npu_fusion_attention(
        *inputs, 4, "BSH", atten_mask=mask, sparse_mode=3, scale=0.2, keep_prob=0.9)
    dy = torch.randn(out.shape).to(BF16)
    auto = torch.autograd.grad(out, inputs, dy)
    explicit = torch_npu.npu_fusion_attention_grad(
        q, k, v, dy, 4, "BSH", atten_mask=mask, softmax_max=smax, softmax_sum=ssum, attention_in=out.detach(),
        scale_value=0.2, keep_prob=0.9, seed=seed, offset=offset, numels=numels, sparse_mode=3)
    for a, e in zip(auto, explicit[:3]):
        assert torch.equal(a, e)
    assert explicit[3].numel() == 0


def test_non_contiguous_inputs():
    """Strided views go to the library as they are (no copies), same results as contiguous copies."""
    base = torch.randn(2, 70, 4, 40)
    q = base.transpose(1, 2)  # a BNSD view of BSND memory
    k = torch.randn(2, 90, 2, 80)[..., ::2].transpose(1, 2)
    v = torch.randn(2, 2, 90, 24)
    a = torch_npu.npu_fusion_attention(q, k, v, 4, "BNSD", scale=0.1)[0]
    e = torch_npu.npu_fusion_attention(q.contiguous(), k.contiguous(), v, 4, "BNSD", scale=0.1)[0]
    assert not q.is_contiguous() and not k.is_contiguous()
    assert torch.equal(a, e)


# ---- errors -----------------------------------------------------------------------------
def test_errors_carry_the_sentence_and_status():
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(attnops.AttnopsValueError) as exc:
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSND", sparse_mode=9, atten_mask=compressed_causal())
    assert exc.value.status == 161002 and "sparse_mode" in str(exc.value) and "161002" in str(exc.value)
    assert isinstance(exc.value, ValueError)
    with pytest.raises(ValueError, match="input_layout"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSDN")
    with pytest.raises(attnops.AttnopsValueError, match="query has dtype i32"):
        torch_npu.npu_fusion_attention(q.int(), q.int(), q.int(), 2, "BSND")
    with pytest.raises(ValueError, match="padding_mask"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSND", padding_mask=q)
    with pytest.raises(ValueError, match="softmax_max"):
        torch_npu.npu_fusion_attention_grad(q, q, q, q, 2, "BSND")


def test_arguments_the_binding_refuses_name_the_argument():
    """The binding reads each tensor itself: a dtype the library has no code for and a rank above its
    maximum are refused naming the argument, before the C call."""
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(TypeError, match="atten_mask has dtype torch.complex64, which attnops does not support"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSND", atten_mask=torch.zeros(8, 8, dtype=torch.complex64))
    with pytest.raises(ValueError, match="pse has rank 9, above the library's maximum of 8"):
        torch_npu.npu_fusion_attention(q, q, q, 2, "BSND", pse=torch.zeros((1,) * 9))


def test_unsupported_is_not_implemented():
    q = torch.randn(10, 2, 16)
    pse = torch.randn(10 * 2)  # the undocumented 1-D TND form
    with pytest.raises(NotImplementedError) as exc:
        torch_npu.npu_fusion_attention(q, q, q, 2, "TND", pse=pse, actual_seq_qlen=[10], actual_seq_kvlen=[10])
    assert exc.value.status == 161003


# ---- the checks themselves fail when they should -----------------------------------------
def test_comparator_catches_errors():
    e = torch.randn(64, 64, dtype=torch.float64)
    assert compare("same", e.float(), e, F32, 64)[0]
    assert not compare("1e-4 off", (e * (1 + 1e-4)).float(), e, F32, 64)[0]
    nan = e.float().clone()
    nan[3, 4] = float("nan")
    assert not compare("nan", nan, e, F32, 64)[0]


def test_oracle_catches_a_wrong_alibi_rule():
    """pse_type 3 without the square root (a mutation the shared C code could hide) fails the check."""
    b, n1, s1 = 1, 2, 40
    slopes = fa_oracle.get_slopes(n1)
    q, k, v = (shaped("BSND", b, n1, s1, 16, F32) for _ in range(3))
    out = torch.ops.attnops.flash_attention_score(q, k, v, n1, "BSND", scale=0.25, pse=slopes, pse_type=3)[0]
    wrong = fa_oracle.attention(q, k, v, n1, "BSND", scale=0.25, pse=slopes, pse_type=2)
    right = fa_oracle.attention(q, k, v, n1, "BSND", scale=0.25, pse=slopes, pse_type=3)
    assert compare("right", out, right, F32, 40)[0]
    assert not compare("wrong", out, wrong, F32, 40)[0]


def test_v2_rope_alibi_equals_grad_v2():
    """npu_fusion_attention_v2 (rope, pse_type 3, start indices) and its autograd equal npu_fusion_attention_grad_v2,
    and both match the oracle."""
    b, n1, s1, s2 = 1, 4, 40, 56
    q, k, v = shaped("BNSD", b, n1, s1, 32, F32), shaped("BNSD", b, 2, s2, 32, F32), shaped("BNSD", b, 2, s2, 24, F32)
    qr, kr = shaped("BNSD", b, n1, s1, 16, F32), shaped("BNSD", b, 2, s2, 16, F32)
    slopes = fa_oracle.get_slopes(n1)
    kw = dict(pse=slopes, pse_type=3, q_start_idx=[5], kv_start_idx=[2], scale=0.12)
    inputs = [t.clone().requires_grad_() for t in (q, k, v, qr, kr)]
    out, smax, ssum, _, seed, offset, numels = torch_npu.npu_fusion_attention_v2(
        *inputs[:3], n1, "BNSD", query_rope=inputs[3], key_rope=inputs[4], **kw)
    dy = torch.randn(out.shape)
    auto = torch.autograd.grad(out, inputs, dy)
    explicit = torch_npu.npu_fusion_attention_grad_v2(
        q, k, v, dy, n1, "BNSD", pse=slopes, softmax_max=smax, softmax_sum=ssum, attention_in=out.detach(),
        query_rope=qr, key_rope=kr, scale_value=0.12, pse_type=3, q_start_idx=[5], kv_start_idx=[2], seed=seed,
        offset=offset, numels=numels)
    assert len(explicit) == 7 and explicit[3].numel() == 0 and explicit[6].numel() == 0
    for a, e in zip(auto, explicit[:3] + explicit[4:]):
        assert torch.equal(a, e)
    ref_in = [t.double().requires_grad_() for t in (q, k, v, qr, kr)]
    ref = fa_oracle.attention(*ref_in[:3], n1, "BNSD", scale=0.12, pse=slopes, pse_type=3, q_start=5, kv_start=2,
                              q_rope=ref_in[3], k_rope=ref_in[4])
    assert_close("attention_out", out, ref, F32, 56)
    ref_grads = torch.autograd.grad(ref, ref_in, dy.double())
    assert_gradients_close(("dq", "dk", "dv", "dq_rope", "dk_rope"), auto, ref_grads, F32, 56)


@pytest.mark.parametrize("pse_type", [0, 1])
def test_compressed_alibi_pse(pse_type):
    """The 1024-row ALiBi form [1, N1, 1024, S2] (S1 = S2 > 1024, causal): the oracle gets the full
    bias slope (j - i) below the diagonal (spec 4.2), the op only its last 1024 rows."""
    n1, s, d = 2, 1100, 16
    slopes = fa_oracle.get_slopes(n1).double()
    i = torch.arange(s).view(-1, 1)
    j = torch.arange(s).view(1, -1)
    full = (slopes.view(-1, 1, 1) * (j - i).clamp(max=0))[None].float()
    q, k, v = (shaped("BSND", 1, n1, s, d, F32) for _ in range(3))
    mask = compressed_causal()
    kw = dict(pse=full[:, :, -1024:].contiguous(), pse_type=pse_type, atten_mask=mask, sparse_mode=3)
    _check_op(q, k, v, n1, kw, dict(pse=full, pse_type=pse_type, atten_mask=mask, sparse_mode=3, nxt=0), F32,
              (s, s, d))


def test_flash_attn_autograd_equals_the_explicit_grad():
    """flash_attn_func(causal, alibi) through autograd gives the bits of npu_fusion_attention_grad_v2 called
    with the arguments it maps to (bottom-right causal = sparse_mode 3, ALiBi = pse_type 2 shifted)."""
    import attnops.flash_attn as fa
    q, k, v = torch.randn(2, 40, 4, 16), torch.randn(2, 56, 2, 16), torch.randn(2, 56, 2, 16)
    slopes = torch.rand(4)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, _ = fa.flash_attn_func(*ins, causal=True, alibi_slopes=slopes, return_attn_probs=True)
    dy = torch.randn(out.shape)
    auto = torch.autograd.grad(out, ins, dy)
    fwd = torch_npu.npu_fusion_attention_v2(q, k, v, 4, "BSND", atten_mask=compressed_causal(), sparse_mode=3,
                                            next_tokens=0, scale=0.25, pse=slopes, pse_type=2, q_start_idx=[16],
                                            kv_start_idx=[0])
    assert torch.equal(fwd[0], out.detach())
    explicit = torch_npu.npu_fusion_attention_grad_v2(
        q, k, v, dy, 4, "BSND", atten_mask=compressed_causal(), softmax_max=fwd[1], softmax_sum=fwd[2],
        attention_in=fwd[0], scale_value=0.25, sparse_mode=3, next_tokens=0, pse=slopes, pse_type=2,
        q_start_idx=[16], kv_start_idx=[0])
    for a, e in zip(auto, explicit[:3]):
        assert torch.equal(a, e)


def test_a_call_mixing_meta_and_cpu_tensors_gives_meta_outputs():
    """The Meta kernel answers with meta tensors whatever the other inputs' device (never CPU tensors
    left unwritten)."""
    q = torch.randn(1, 8, 2, 16)
    out, smax, ssum = torch.ops.attnops.flash_attention_score(q, q, q, 2, "BSND",
                                                              pse=torch.empty(1, 2, 8, 8, device="meta"))
    assert out.device.type == smax.device.type == ssum.device.type == "meta"
