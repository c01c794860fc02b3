"""torch_npu code as it is written for Ascend NPUs: the dropout (seed, offset) torch_npu's
generator hands out, the arguments torch_npu passes (an empty softmax_in, a lower-case layout), the v2
token order, and the fake implementation's dtypes under torch.compile."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import attnops
import attnops.torch_npu as torch_npu
from attnops import _npu_rng
from checks import assert_close
import fa_oracle

INT32_MAX = 2147483647


# ---- the generator: the rule as torch_npu's source states it ----------------------------------------
# op-plugin (FlashAttentionKernelNpuOpApi.cpp): a dropout call asks for philox_engine_inputs(10);
# torch_npu (NPUGeneratorImpl::philox_engine_inputs): the offset handed out is the generator's, which
# then grows by the increment rounded up to a multiple of 4; set_current_seed resets the offset to 0.
def npu_sequence(seed, calls, increment=10):
    step = (increment + 3) // 4 * 4
    return [(seed, k * step) for k in range(calls)]


def _qkv(b=1, s=24, n=2, d=16):
    return (torch.randn(b, s, n, d) for _ in range(3))


def test_dropout_seed_offset_follow_the_npu_generator():
    q, k, v = _qkv()
    torch.manual_seed(2)
    got = [tuple(torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)[4:6]) for _ in range(3)]
    assert got == npu_sequence(2, 3)
    # a call without dropout draws nothing and returns (0, 0), as on the NPU
    assert tuple(torch_npu.npu_fusion_attention(q, k, v, 2, "BSND")[4:6]) == (0, 0)
    # v2 draws from the same generator
    assert tuple(torch_npu.npu_fusion_attention_v2(q, k, v, 2, "BSND", keep_prob=0.5)[4:6]) == (2, 36)
    # re-seeding with the same seed resets the offset (an initial-seed check alone would miss it)
    torch.manual_seed(2)
    assert tuple(torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)[4:6]) == (2, 0)
    torch.random.manual_seed(11)
    assert _npu_rng.state() == (11, 0)
    s = torch.seed()
    assert _npu_rng.state() == (_npu_rng._signed(s), 0)
    # seeds are used modulo 2^64 and handed out as torch_npu's int64_t
    torch.manual_seed(2 ** 64 - 1)
    assert tuple(torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)[4:6]) == (-1, 0)


def test_the_first_dropout_call_after_manual_seed_2_is_the_npu_golden():
    """op-plugin's forward dropout tests build their golden from seed 2, offset 0 after torch.manual_seed(2):
    the output equals the independent oracle on the Philox mask of (2, 0), and the second call's that of
    (2, 12)."""
    b, n, s1, s2, d, kp = 2, 4, 40, 56, 32, 0.8
    q, k, v = torch.randn(b, s1, n, d), torch.randn(b, s2, n, d), torch.randn(b, s2, n, d)
    torch.manual_seed(2)
    for seed, offset in npu_sequence(2, 2):
        out = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=d ** -0.5, keep_prob=kp)[0]
        keep = torch.from_numpy(attnops.dropout_mask(seed, offset, kp, n, batch=b, seq_q=s1, seq_kv=s2))
        ref = fa_oracle.attention(q, k, v, n, "BSND", scale=d ** -0.5, keep=keep, keep_prob=kp)
        assert_close(f"attention_out (seed {seed}, offset {offset})", out, ref, torch.float32, max(s2, d))


def test_dropout_offsets_advance_inside_torch_compile(inductor_cache_per_isa):
    q, k, v = _qkv()

    def two_calls(q, k, v):
        a = torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)
        b = torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)
        return a[0], b[0], torch.stack([torch.as_tensor(x) for x in (a[4], a[5], b[4], b[5])])

    torch.manual_seed(2)
    eager = two_calls(q, k, v)
    compiled = torch.compile(two_calls, fullgraph=True)
    torch.manual_seed(2)
    first = compiled(q, k, v)
    second = compiled(q, k, v)
    assert eager[2].tolist() == [2, 0, 2, 12]
    assert first[2].tolist() == [2, 0, 2, 12] and second[2].tolist() == [2, 24, 2, 36]
    assert torch.equal(first[0], eager[0]) and torch.equal(first[1], eager[1])
    assert _npu_rng.state() == (2, 48)


# ---- arguments as torch_npu passes them ----------------------------------------------------------
def test_grad_takes_the_forwards_empty_softmax_out():
    q, k, v = _qkv()
    out, smax, ssum, soft_out, seed, offset, numels = torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.25)
    dy = torch.randn(out.shape)
    kw = dict(softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.25)
    with_empty = torch_npu.npu_fusion_attention_grad(q, k, v, dy, 2, "BSND", softmax_in=soft_out, **kw)
    without = torch_npu.npu_fusion_attention_grad(q, k, v, dy, 2, "BSND", **kw)
    assert soft_out.numel() == 0
    for a, e in zip(with_empty[:3], without[:3]):
        assert torch.equal(a, e)
    with pytest.raises(ValueError, match="softmax_in is reserved .* got a tensor of shape \\(1, 2, 24, 8\\)"):
        torch_npu.npu_fusion_attention_grad(q, k, v, dy, 2, "BSND", softmax_in=smax, **kw)


@pytest.mark.parametrize("layout", ["bsh", "Bnsd", "tnd"])
def test_input_layout_is_upper_cased(layout):
    b, s, n, d = 2, 20, 2, 16
    upper = layout.upper()
    shape = {"BSH": (b, s, n * d), "BNSD": (b, n, s, d), "TND": (b * s, n, d)}[upper]
    q, k, v = (torch.randn(shape) for _ in range(3))
    tnd = dict(actual_seq_qlen=[s, 2 * s], actual_seq_kvlen=[s, 2 * s]) if upper == "TND" else {}
    lower = torch_npu.npu_fusion_attention(q, k, v, n, layout, scale=0.25, **tnd)
    same = torch_npu.npu_fusion_attention(q, k, v, n, upper, scale=0.25, **tnd)
    assert torch.equal(lower[0], same[0]) and torch.equal(lower[1], same[1])
    dy = torch.randn(lower[0].shape)
    kw = dict(softmax_max=lower[1], softmax_sum=lower[2], attention_in=lower[0], scale_value=0.25, **tnd)
    g_lower = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, layout, **kw)
    g_upper = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, upper, **kw)
    assert all(torch.equal(a, e) for a, e in zip(g_lower[:3], g_upper[:3]))


def test_v2_pre_and_next_tokens_reach_the_library_in_order():
    """An asymmetric band (sparse_mode 4, pre 20, next 3): swapped tokens give another band, which the
    oracle refuses."""
    b, n, s1, s2, d = 1, 2, 48, 48, 16
    q, k, v = torch.randn(b, s1, n, d), torch.randn(b, s2, n, d), torch.randn(b, s2, n, d)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fusion_attention_v2(q, k, v, n, "BSND", atten_mask=mask, scale=0.25, pre_tokens=20,
                                            next_tokens=3, sparse_mode=4)[0]
    ref = fa_oracle.attention(q, k, v, n, "BSND", scale=0.25, sparse_mode=4, pre=20, nxt=3, atten_mask=mask)
    assert_close("attention_out", out, ref, torch.float32, max(s2, d))
    dy = torch.randn(out.shape)
    out, smax, ssum = torch_npu.npu_fusion_attention_v2(q, k, v, n, "BSND", atten_mask=mask, scale=0.25,
                                                        pre_tokens=20, next_tokens=3, sparse_mode=4)[:3]
    grads = torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, n, "BSND", atten_mask=mask, softmax_max=smax,
                                                   softmax_sum=ssum, attention_in=out, scale_value=0.25,
                                                   pre_tokens=20, next_tokens=3, sparse_mode=4)
    ref_in = [t.double().requires_grad_() for t in (q, k, v)]
    ref = fa_oracle.attention(*ref_in, n, "BSND", scale=0.25, sparse_mode=4, pre=20, nxt=3, atten_mask=mask)
    for name, a, e in zip(("dq", "dk", "dv"), grads, torch.autograd.grad(ref, ref_in, dy.double())):
        assert_close(name, a, e, torch.float32, max(s1, s2, d))


# ---- the fake implementation: what torch.compile allocates ---------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_fake_outputs_match_the_real_ones(dtype, layout):
    """Shapes and dtypes of every output, real vs fake (softmax_max / softmax_sum are float32 whatever the
    query's dtype)."""
    shape = (2, 24, 2, 16) if layout == "BSND" else (48, 2, 16)
    tnd = dict(actual_seq_qlen=[24, 48], actual_seq_kvlen=[24, 48]) if layout == "TND" else {}
    q, k, v = (torch.randn(shape).to(dtype) for _ in range(3))
    real = torch.ops.attnops.flash_attention_score(q, k, v, 2, layout, scale=0.25, **tnd)
    dy = torch.randn(real[0].shape).to(dtype)
    real_grad = torch.ops.attnops.flash_attention_score_grad(q, k, v, dy, real[0], real[1], real[2], 2, layout,
                                                             scale=0.25, **tnd)
    with FakeTensorMode() as mode:
        fq, fk, fv, fdy = (mode.from_tensor(t) for t in (q, k, v, dy))
        fake = torch.ops.attnops.flash_attention_score(fq, fk, fv, 2, layout, scale=0.25, **tnd)
        fstats = [mode.from_tensor(t) for t in real]
        fake_grad = torch.ops.attnops.flash_attention_score_grad(fq, fk, fv, fdy, *fstats, 2, layout, scale=0.25,
                                                                 **tnd)
    for r, f in zip((*real, *real_grad), (*fake, *fake_grad)):
        assert (f.shape, f.dtype, f.stride()) == (r.shape, r.dtype, r.stride())
    assert fake[1].dtype == fake[2].dtype == torch.float32


# ---- softmax_layout (torch_npu 7.2): the TND statistics' memory order ------------------------------
def _row_stats(q, k, qlens, kvlens, n, scale):
    """float64 (max, sum of exp(s - max)) [T1, N] of the unmasked scores, from the definition."""
    m, l, q0, k0 = [], [], 0, 0
    for sq, sk in zip(qlens, kvlens):
        if sq == 0:
            continue
        s = torch.einsum("ind,jnd->nij", q[q0:q0 + sq].double(), k[k0:k0 + sk].double()) * scale
        mb = s.amax(-1)
        m.append(mb.T), l.append(torch.exp(s - mb[..., None]).sum(-1).T)
        q0, k0 = q0 + sq, k0 + sk
    return torch.cat(m), torch.cat(l)


def test_softmax_layout_tnd_is_a_true_tnd_array():
    """softmax_layout="TND" (CANN's "same_as_input"): softmax_max[t, n] is row t's statistic of head n; the
    default holds per-batch [N1, S_b, 8] blocks under the same declared shape [T1, N1, 8].  The backward
    takes each layout's own statistics and gives the same gradients."""
    qlens, kvlens, n, d, scale = [5, 0, 9, 3], [7, 0, 4, 6], 2, 16, 0.25
    q, k, v = torch.randn(sum(qlens), n, d), torch.randn(sum(kvlens), n, d), torch.randn(sum(kvlens), n, d)
    cq, ck = [5, 5, 14, 17], [7, 7, 11, 17]
    tnd = dict(actual_seq_qlen=cq, actual_seq_kvlen=ck, scale=scale)
    out_t, smax_t, ssum_t = torch_npu.npu_fusion_attention(q, k, v, n, "TND", softmax_layout="TND", **tnd)[:3]
    out_d, smax_d, ssum_d = torch_npu.npu_fusion_attention(q, k, v, n, "TND", **tnd)[:3]
    assert smax_t.shape == smax_d.shape == (17, n, 8) and torch.equal(out_t, out_d)
    row_max, row_sum = _row_stats(q, k, qlens, kvlens, n, scale)
    for k8 in range(8):
        assert_close("softmax_max", smax_t[..., k8], row_max, torch.float32, d)
        assert_close("softmax_sum", ssum_t[..., k8], row_sum, torch.float32, max(kvlens))
    blocks, row = [], 0
    for sq in qlens:  # the default's memory: per batch [N1, S_b, 8]
        blocks.append(smax_t[row:row + sq].transpose(0, 1).reshape(-1))
        row += sq
    assert torch.equal(smax_d.reshape(-1), torch.cat(blocks))
    dy = torch.randn(out_t.shape)
    g_t = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, "TND", softmax_max=smax_t, softmax_sum=ssum_t,
                                              attention_in=out_t, scale_value=scale, softmax_layout="TND",
                                              actual_seq_qlen=cq, actual_seq_kvlen=ck)
    g_d = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, "TND", softmax_max=smax_d, softmax_sum=ssum_d,
                                              attention_in=out_d, scale_value=scale, actual_seq_qlen=cq,
                                              actual_seq_kvlen=ck)
    assert all(torch.equal(a, e) for a, e in zip(g_t[:3], g_d[:3]))
    # autograd carries the layout to the backward
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    out = torch_npu.npu_fusion_attention_v2(*inputs, n, "TND", softmax_layout="TND", **tnd)[0]
    assert all(torch.equal(a, e) for a, e in zip(torch.autograd.grad(out, inputs, dy), g_d[:3]))


@pytest.mark.parametrize("softmax_layout,layout,match", [
    ("NTD", "TND", "must be \"\" or \"TND\""), ("TND", "BSND", "needs input_layout TND")])
def test_softmax_layout_refusals_name_the_argument(softmax_layout, layout, match):
    q = torch.randn(12, 2, 16) if layout == "TND" else torch.randn(1, 12, 2, 16)
    tnd = dict(actual_seq_qlen=[12], actual_seq_kvlen=[12]) if layout == "TND" else {}
    with pytest.raises(ValueError, match=f"npu_fusion_attention: softmax_layout .*{match}"):
        torch_npu.npu_fusion_attention(q, q, q, 2, layout, softmax_layout=softmax_layout, **tnd)


def test_op_argument_refusals_name_the_argument():
    """The ops' new arguments, refused before the library runs: a softmax_in_layout that is not CANN's, and
    cu_seqlens that do not start at 0."""
    q = torch.randn(12, 2, 16)
    with pytest.raises(ValueError, match="softmax_in_layout is 'TND'; it must be \"\" or \"same_as_input\""):
        torch.ops.attnops.flash_attention_score(q, q, q, 2, "TND", actual_seq_qlen=[12], actual_seq_kvlen=[12],
                                                softmax_in_layout="TND")
    cu = torch.tensor([0, 12], dtype=torch.int32)
    with pytest.raises(ValueError, match="cu_seqlens_q must be cumulative lengths .* starting at 0; got \\[2, 12\\]"):
        torch.ops.attnops.flash_attention_score(q, q, q, 2, "TND", cu_seqlens_q=torch.tensor([2, 12]),
                                                cu_seqlens_kv=cu)
    out = torch.ops.attnops.flash_attention_score(q, q, q, 2, "TND", cu_seqlens_q=cu, cu_seqlens_kv=cu)[0]
    assert torch.equal(out, torch.ops.attnops.flash_attention_score(q, q, q, 2, "TND", actual_seq_qlen=[12],
                                                                    actual_seq_kvlen=[12])[0])
