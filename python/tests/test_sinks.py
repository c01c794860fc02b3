"""Attention sinks (GPT-OSS's learnable sinks; torch_npu's `sink`, CANN's `learnable_sink`) against an
independent float64 oracle written here from the definition: one extra logit per head, sink[h], joins every
row's softmax and attends to nothing,

    p_ij = exp(s_ij) / (sum_j exp(s_ij) + exp(sink_h)),   out_i = sum_j p_ij v_j,
    lse_i = log(sum_j exp(s_ij) + exp(sink_h)),

the oracle's gradients by torch's autograd in float64, and dsink also by central finite differences of
the library's own golden forward.  FlashAttention forward and backward in both implementations on this CPU
(and, through subprocesses, on every ISA it has), the few-row forward, TND; FusedInferAttentionScore decode
and prompt, contiguous and paged; the torch_npu entry points (npu_fusion_attention(_v2) and their grads'
dsink, npu_fused_infer_attention_score_v2's learnable_sink)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import attnops
import attnops.torch_npu as torch_npu
from attnops import golden, ops
from checks import assert_close, assert_gradients_close

F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16


def oracle(q, k, v, sink, scale, causal=False):
    """BNSD float64 (out, lse [B, N, S1]); q [B, N1, S1, D], k/v [B, N2, S2, .], sink [N1]; causal: bottom-right."""
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        s1, s2 = s.shape[-2:]
        keep = torch.ones(s1, s2, dtype=torch.bool).tril(s2 - s1)
        s = s.masked_fill(~keep, -torch.inf)
    z = torch.cat([s, sink.reshape(1, -1, 1, 1).expand(*s.shape[:-1], 1)], -1)
    lse = torch.logsumexp(z, -1)
    return torch.exp(s - lse[..., None]) @ v, lse


def _inputs(b, n1, n2, s1, s2, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(shape, generator=g).to(dtype) for shape in
               ((b, s1, n1, d), (b, s2, n2, d), (b, s2, n2, d)))
    sink = torch.randn(n1, generator=g) * 2  # about as large as the scores: the sink takes a real share
    return q, k, v, sink


def _dsink_scale(q, k, v, sink, dy, scale, causal=False):
    """The size of dsink's terms, sum_i |e^(sink - lse_i)| * sum_d |dy_i o_i| per head (its tolerance's scale)."""
    out, lse = oracle(*(t.double().transpose(1, 2) for t in (q, k, v)), sink.double(), scale, causal)
    w = torch.exp(sink.double().reshape(1, -1, 1) - lse)
    return float((w * (dy.double().transpose(1, 2) * out).abs().sum(-1)).sum((0, 2)).max())


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("s1, causal", [(33, False), (40, True), (2, False)])  # 2 rows x G 2: the few-row forward
def test_flash_attention_sink_forward_backward(impl, dtype, s1, causal):
    b, n1, n2, s2, d, scale = 2, 4, 2, 48, 32, 0.3
    q, k, v, sink = _inputs(b, n1, n2, s1, s2, d, dtype, seed=s1)
    leaves = [t.clone().requires_grad_() for t in (q, k, v, sink)]
    kw = dict(scale=scale, impl=impl)
    if causal:
        kw.update(atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1), sparse_mode=3)
    out, smax, ssum = ops.flash_attention_score(*leaves[:3], n1, "BSND", sink=leaves[3], **kw)
    ref_leaves = [t.detach().double().requires_grad_() for t in (q, k, v, sink)]
    ref_out, ref_lse = oracle(*(t.transpose(1, 2) for t in ref_leaves[:3]), ref_leaves[3], scale, causal)
    assert_close("attention_out", out.transpose(1, 2), ref_out, dtype, s2)
    lse = (smax[..., 0].double() + ssum[..., 0].double().log())
    assert_close("softmax_max + log softmax_sum", lse, ref_lse, F32, s2)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    out.backward(dy)
    ref_out.backward(dy.double().transpose(1, 2))
    assert_gradients_close(("dq", "dk", "dv"), [t.grad.transpose(1, 2) for t in leaves[:3]],
                           [t.grad.transpose(1, 2) for t in ref_leaves[:3]], dtype, max(s1, s2, d))
    assert_close("dsink", leaves[3].grad, ref_leaves[3].grad, dtype, b * s1 * d,
                 scale=_dsink_scale(q, k, v, sink, dy, scale, causal))


def test_flash_attention_sink_tnd():
    n1, n2, d = 4, 1, 16
    qlen, kvlen = [7, 7, 20], [9, 30, 41]  # cumulative: an empty query batch in the middle
    g = torch.Generator().manual_seed(3)
    q, dy = torch.randn(20, n1, d, generator=g), torch.randn(20, n1, d, generator=g)
    k, v = torch.randn(41, n2, d, generator=g), torch.randn(41, n2, d, generator=g)
    sink = (torch.randn(n1, generator=g) * 2).requires_grad_()
    qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
    out = ops.flash_attention_score(qq, kk, vv, n1, "TND", scale=0.25, sink=sink, actual_seq_qlen=qlen,
                                    actual_seq_kvlen=kvlen)[0]
    out.backward(dy)
    ref_sink = sink.detach().double().requires_grad_()
    for (q0, q1), (k0, k1) in zip(((0, 7), (7, 7), (7, 20)), ((0, 9), (9, 30), (30, 41))):
        if q1 == q0:
            continue
        o, _ = oracle(*(t[a:b_].double().transpose(0, 1)[None] for t, (a, b_) in
                        zip((q, k, v), ((q0, q1), (k0, k1), (k0, k1)))), ref_sink, 0.25)
        assert_close("attention_out", out[q0:q1], o[0].transpose(0, 1), F32, k1 - k0)
        o.backward(dy[q0:q1].double().transpose(0, 1)[None])
    assert_close("dsink", sink.grad, ref_sink.grad, F32, 20 * d)


def test_dsink_against_finite_differences():
    """The golden's dsink against central differences of its own forward, L = sum(dy * out), in f32 I/O:
    step h = 1e-2 on the sink; truncation O(h^2) and f32 rounding of out (u * |L| / h) stay below 1e-4 of it."""
    rng = np.random.default_rng(7)
    b, n, s1, s2, d = 1, 2, 12, 20, 16
    q, k, v, dy = (rng.standard_normal(shape).astype(np.float32) for shape in
                   ((b, s1, n, d), (b, s2, n, d), (b, s2, n, d), (b, s1, n, d)))
    sink = np.array([0.5, -1.0], np.float32)
    out, smax, ssum = golden.flash_attention_score(q, k, v, n, "BSND", scale=0.3, sink=sink)
    dsink = golden.flash_attention_score_grad(q, k, v, dy, out, smax, ssum, n, "BSND", scale=0.3, sink=sink)[5]
    h = 1e-2
    for head in range(n):
        plus, minus = sink.copy(), sink.copy()
        plus[head] += h
        minus[head] -= h
        lp = float((dy.astype(np.float64) * golden.flash_attention_score(q, k, v, n, "BSND", scale=0.3,
                                                                         sink=plus)[0]).sum())
        lm = float((dy.astype(np.float64) * golden.flash_attention_score(q, k, v, n, "BSND", scale=0.3,
                                                                         sink=minus)[0]).sum())
        fd = (lp - lm) / (float(plus[head]) - float(minus[head]))
        assert abs(fd - dsink[head]) <= 1e-4 * max(abs(fd), 1e-3), (head, fd, dsink[head])
        # the check bites: a 1 % error in dsink would be caught
        assert abs(fd - 1.01 * dsink[head]) > 1e-4 * abs(fd)


def test_flash_attention_sink_refusals():
    q, k, v, sink = _inputs(1, 2, 2, 4, 4, 8, F32)
    with pytest.raises(attnops.AttnopsValueError, match="'sink' has dtype f16"):
        ops.flash_attention_score(q, k, v, 2, "BSND", sink=sink.half())
    with pytest.raises(attnops.AttnopsValueError, match="tensor 'sink' has shape \\[3\\]"):
        ops.flash_attention_score(q, k, v, 2, "BSND", sink=torch.zeros(3))


def _fia_oracle_bnsd(q, k, v, sink, scale, lens_kv, causal=False):
    """Per batch b, the first lens_kv[b] keys; -> (out [B, N1, S1, Dv], lse [B, N1, S1])."""
    outs, lses = [], []
    for b, length in enumerate(lens_kv):
        o, lse = oracle(q[b:b + 1].double(), k[b:b + 1, :, :length].double(), v[b:b + 1, :, :length].double(),
                        sink.double(), scale, causal)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("s1", [1, 5])
@pytest.mark.parametrize("sink_dtype", [F32, BF16])
def test_fia_sink(impl, s1, sink_dtype):
    b, n1, n2, s2, d = 3, 8, 2, 300, 32
    g = torch.Generator().manual_seed(11)
    q = torch.randn(b, n1, s1, d, generator=g).to(BF16)
    k, v = (torch.randn(b, n2, s2, d, generator=g).to(BF16) for _ in range(2))
    sink = (torch.randn(n1, generator=g) * 2).to(sink_dtype)
    lens = [300, 0, 77]  # a batch without keys: its rows are the sink's alone (out 0, lse = sink)
    kw = dict(num_heads=n1, num_key_value_heads=n2, scale=0.2, input_layout="BNSD", softmax_lse_flag=True,
              actual_seq_lengths_kv=torch.tensor(lens), learnable_sink=sink, impl=impl)
    causal = s1 > 1
    if causal:
        kw.update(sparse_mode=3, atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
    out, lse = ops.fused_infer_attention_score(q, k, v, **kw)
    e_out, e_lse = _fia_oracle_bnsd(q, k, v, sink.float(), 0.2, lens, causal)
    assert_close("attention_out", out, e_out, BF16, s2)
    assert_close("softmax_lse", lse[..., 0], e_lse, F32, s2)
    assert float(out[1].abs().max()) == 0.0


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("sink_dtype", [F32, BF16])
def test_fused_infer_attention_sink_long_prompt(impl, sink_dtype):
    """A prompt of more rows than one split-KV block (S1 G = 160 > 64) with every batch's full length: the
    planner runs it on the tiled kernel (attn_plan.c), which must read the sink too (it once ran there
    without it: out 0.09 off in bf16)."""
    b, n1, n2, s1, s2, d = 2, 8, 2, 40, 64, 32
    g = torch.Generator().manual_seed(12)
    q = torch.randn(b, n1, s1, d, generator=g).to(BF16)
    k, v = (torch.randn(b, n2, s2, d, generator=g).to(BF16) for _ in range(2))
    sink = (torch.randn(n1, generator=g) * 2).to(sink_dtype)
    for causal in (False, True):
        kw = dict(num_heads=n1, num_key_value_heads=n2, scale=0.2, input_layout="BNSD", softmax_lse_flag=True,
                  learnable_sink=sink, impl=impl)
        if causal:
            kw.update(sparse_mode=3, atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
        out, lse = ops.fused_infer_attention_score(q, k, v, **kw)
        e_out, e_lse = _fia_oracle_bnsd(q, k, v, sink.float(), 0.2, [s2] * b, causal)
        assert_close("attention_out", out, e_out, BF16, s2)
        assert_close("softmax_lse", lse[..., 0], e_lse, F32, s2)


def test_npu_fusion_attention_v2_sink_and_dsink():
    """torch_npu: sink on the forward, dsink as the grad functions' last output, and autograd into sink."""
    b, n, s, d = 1, 2, 16, 16
    q, k, v, sink = _inputs(b, n, n, s, s, d, F32, seed=9)
    out, smax, ssum = torch_npu.npu_fusion_attention_v2(q, k, v, n, "BSND", scale=0.25, sink=sink)[:3]
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    grads = torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                                   attention_in=out, scale_value=0.25, sink=sink)
    assert len(grads) == 7
    v1 = torch_npu.npu_fusion_attention_grad(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                             attention_in=out, scale_value=0.25, sink=sink)
    assert len(v1) == 5 and torch.equal(v1[4], grads[6])
    leaf = sink.clone().requires_grad_()
    auto = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=0.25, sink=leaf)[0]
    auto.backward(dy)
    assert torch.equal(leaf.grad, grads[6])
    ref_sink = sink.double().requires_grad_()
    ref, _ = oracle(*(t.double().transpose(1, 2) for t in (q, k, v)), ref_sink, 0.25)
    ref.backward(dy.double().transpose(1, 2))
    assert_close("dsink", grads[6], ref_sink.grad, F32, s * d, scale=_dsink_scale(q, k, v, sink, dy, 0.25))
    empty = torch_npu.npu_fusion_attention_grad_v2(q, k, v, dy, n, "BSND", softmax_max=smax, softmax_sum=ssum,
                                                   attention_in=out, scale_value=0.25)
    assert empty[6].numel() == 0


def test_v2_learnable_sink_tnd():
    """npu_fused_infer_attention_score_v2's learnable_sink (bf16 [N1], op-plugin's own test shape: TND)."""
    n, d = 8, 64
    g = torch.Generator().manual_seed(4)
    q = torch.randn(12, n, d, generator=g).to(BF16)
    k, v = (torch.randn(40, n, d, generator=g).to(BF16) for _ in range(2))
    sink = torch.randn(n, generator=g).to(BF16)
    out, _ = torch_npu.npu_fused_infer_attention_score_v2(
        q, k, v, learnable_sink=sink, num_query_heads=n, input_layout="TND", softmax_scale=0.125,
        actual_seq_qlen=[5, 12], actual_seq_kvlen=[15, 40])
    for (q0, q1), (k0, k1) in (((0, 5), (0, 15)), ((5, 12), (15, 40))):
        e, _ = oracle(*(t[a:b_].double().transpose(0, 1)[None] for t, (a, b_) in
                        zip((q, k, v), ((q0, q1), (k0, k1), (k0, k1)))), sink.double(), 0.125)
        assert_close("attention_out", out[q0:q1], e[0].transpose(0, 1), BF16, k1 - k0)


def test_fia_sink_refusals():
    q = torch.randn(1, 2, 1, 8)
    k = v = torch.randn(1, 2, 5, 8)
    for bad, words in ((torch.zeros(2, dtype=torch.int32), "learnable_sink has dtype i32"),
                       (torch.zeros(3), "'learnable_sink' has shape \\[3\\]")):
        with pytest.raises(attnops.AttnopsValueError, match=words):
            ops.fused_infer_attention_score(q, k, v, num_heads=2, input_layout="BNSD", learnable_sink=bad)


_ISA_SCRIPT = """
import torch, attnops, sys
from attnops import ops
assert attnops.cpu_isa() == sys.argv[1], (attnops.cpu_isa(), sys.argv[1])
g = torch.Generator().manual_seed(0)
for s1 in (37, 2):
    q, k, v = (torch.randn(1, s, 4, 32, generator=g) for s in (s1, 70, 70))
    sink = torch.randn(4, generator=g) * 2
    ref = ops.flash_attention_score(q, k, v, 4, "BSND", scale=0.3, sink=sink, impl="reference")
    fast = ops.flash_attention_score(q, k, v, 4, "BSND", scale=0.3, sink=sink, impl="cpu")
    for a, e in zip(fast, ref):
        assert (a - e).abs().max() <= 1e-5 * max(e.abs().max(), 1), (a - e).abs().max()
    dec = [ops.fused_infer_attention_score(q[:, :1].transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           num_heads=4, scale=0.3, input_layout="BNSD", learnable_sink=sink,
                                           impl=impl)[0] for impl in ("reference", "cpu")]
    assert (dec[0] - dec[1]).abs().max() <= 1e-5, (dec[0] - dec[1]).abs().max()
print("ok")
"""


@pytest.mark.parametrize("isa", ["portable", "avx2", "avx512", "avx512bf16"])
def test_sink_kernels_on_every_isa(isa):
    """The fast kernels against the golden with each ISA's kernels (ATTNOPS_ISA); SKIPPED where the CPU lacks it."""
    env = dict(os.environ, ATTNOPS_ISA=isa)
    probe = subprocess.run([sys.executable, "-c", "import attnops; print(attnops.cpu_isa())"], env=env,
                           capture_output=True, text=True)
    if probe.stdout.strip() != isa:
        pytest.skip(f"SKIPPED: this CPU has no {isa} ({probe.stderr.strip() or probe.stdout.strip()})")
    run = subprocess.run([sys.executable, "-c", _ISA_SCRIPT, isa], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_flash_attn_s_aux():
    """vLLM's s_aux on flash_attn_func (differentiable, bf16 sinks), flash_attn_varlen_func and
    flash_attn_with_kvcache (decode, contiguous and paged)."""
    from attnops.flash_attn import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache
    b, n1, n2, s1, s2, d = 2, 4, 2, 6, 30, 16
    q, k, v, sink = _inputs(b, n1, n2, s1, s2, d, F32, seed=21)
    s_aux = sink.to(BF16).requires_grad_()
    qq = q.clone().requires_grad_()
    out = flash_attn_func(qq, k, v, softmax_scale=0.25, causal=True, s_aux=s_aux)
    ref_sink = s_aux.detach().double().requires_grad_()
    ref, _ = oracle(qq.detach().double().transpose(1, 2), k.double().transpose(1, 2), v.double().transpose(1, 2),
                    ref_sink, 0.25, causal=True)
    assert_close("flash_attn_func", out.transpose(1, 2), ref, F32, s2)
    dy = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    out.backward(dy)
    ref.backward(dy.double().transpose(1, 2))
    assert s_aux.grad is not None and s_aux.grad.dtype == BF16
    assert_close("ds_aux", s_aux.grad, ref_sink.grad, BF16, b * s1 * d)
    sink = s_aux.detach().float()  # the bf16 values the oracle saw
    cu = torch.tensor([0, s1, 2 * s1], dtype=torch.int32)
    cuk = torch.tensor([0, s2, 2 * s2], dtype=torch.int32)
    var = flash_attn_varlen_func(q.reshape(-1, n1, d), k.reshape(-1, n2, d), v.reshape(-1, n2, d), cu, cuk, s1, s2,
                                 softmax_scale=0.25, causal=True, s_aux=sink)
    assert_close("flash_attn_varlen_func", var.view(b, s1, n1, d).transpose(1, 2), ref.detach(), F32, s2)
    step = flash_attn_with_kvcache(q[:, :1], k, v, cache_seqlens=torch.tensor([s2, 11], dtype=torch.int32),
                                   softmax_scale=0.25, s_aux=sink)
    for i, length in enumerate((s2, 11)):
        e, _ = oracle(q[i:i + 1, :1].double().transpose(1, 2), k[i:i + 1, :length].double().transpose(1, 2),
                      v[i:i + 1, :length].double().transpose(1, 2), sink.double(), 0.25)
        assert_close("flash_attn_with_kvcache", step[i:i + 1].transpose(1, 2), e, F32, length)
    pages = k.reshape(b * s2 // 10, 10, n2, d), v.reshape(b * s2 // 10, 10, n2, d)
    paged = flash_attn_with_kvcache(q[:, :1], *pages, cache_seqlens=torch.tensor([s2, 11], dtype=torch.int32),
                                    block_table=torch.arange(b * s2 // 10, dtype=torch.int32).view(b, -1),
                                    softmax_scale=0.25, s_aux=sink)
    assert torch.equal(paged, step)
