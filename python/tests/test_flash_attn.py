"""attnops.flash_attn against a naive float64 implementation of flash-attn's
documented conventions (flash_attn_interface.py docstrings): bottom-right
causal, sliding windows, ALiBi -slope |i + Sk - Sq - j|, varlen, softmax_lse."""
import math

import pytest
import torch

import attnops
import attnops.flash_attn as fa
from checks import assert_close, assert_gradients_close

F32, BF16 = torch.float32, torch.bfloat16


def naive(q, k, v, scale, causal=False, window=(-1, -1), slopes=None, keep=None, keep_prob=1.0):
    """q [Sq, H, D], k/v [Sk, Hk, D] of one sequence -> (out [Sq, H, Dv], lse [H, Sq])."""
    sq, sk, h, hk = q.shape[0], k.shape[0], q.shape[1], k.shape[1]
    q, k, v = (t.double().transpose(0, 1) for t in (q, k, v))
    k, v = k.repeat_interleave(h // hk, 0), v.repeat_interleave(h // hk, 0)
    s = q @ k.transpose(1, 2) * scale
    i = torch.arange(sq).view(-1, 1)
    j = torch.arange(sk).view(1, -1)
    left, right = window
    if causal:
        right = 0
    visible = torch.ones(sq, sk, dtype=torch.bool)
    if right >= 0:
        visible &= j <= i + sk - sq + right
    if left >= 0:
        visible &= j >= i + sk - sq - left
    if slopes is not None:
        s = s - slopes.double().view(-1, 1, 1) * (i + sk - sq - j).abs()
    s = s.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    if keep is not None:
        p = p * keep.double() / keep_prob
    out = (p @ v).transpose(0, 1)
    return out, torch.where(visible.any(-1), lse, torch.full_like(lse, math.inf))


@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (16, 8)), (True, (20, -1)),
                                           (False, (-1, 5))])
@pytest.mark.parametrize("sq,sk", [(48, 64), (64, 48), (50, 50)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_flash_attn_func(causal, window, sq, sk, dtype):
    b, h, hk, d = 2, 4, 2, 32
    q, k, v = torch.randn(b, sq, h, d).to(dtype), torch.randn(b, sk, hk, d).to(dtype), torch.randn(b, sk, hk,
                                                                                                   d).to(dtype)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, probs = fa.flash_attn_func(*ins, causal=causal, window_size=window, return_attn_probs=True)
    assert probs is None and lse.shape == (b, h, sq) and lse.dtype == F32
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    refs = [naive(ref_ins[0][i], ref_ins[1][i], ref_ins[2][i], d ** -0.5, causal, window) for i in range(b)]
    ref = torch.stack([r[0] for r in refs])
    ref_grads = torch.autograd.grad(ref, ref_ins, dy.double())
    kl = max(sq, sk, d)
    assert_close("out", out, ref, dtype, kl)
    assert_gradients_close(("dq", "dk", "dv"), grads, ref_grads, dtype, kl)
    ref_lse = torch.stack([r[1] for r in refs])
    assert torch.equal(torch.isinf(lse), torch.isinf(ref_lse))
    finite = ~torch.isinf(ref_lse)
    assert_close("softmax_lse", lse[finite], ref_lse[finite], F32, kl, operand=dtype)


@pytest.mark.parametrize("per_batch", [False, True])
@pytest.mark.parametrize("sq,sk", [(40, 56), (56, 40)])
def test_alibi(per_batch, sq, sk):
    b, h, d = 2, 4, 32
    slopes = torch.rand(b, h) if per_batch else torch.rand(h)
    q, k, v = torch.randn(b, sq, h, d), torch.randn(b, sk, h, d), torch.randn(b, sk, h, d)
    out = fa.flash_attn_func(q, k, v, alibi_slopes=slopes, causal=True)
    ref = torch.stack([naive(q[i], k[i], v[i], d ** -0.5, True, slopes=slopes[i] if per_batch else slopes)[0]
                       for i in range(b)])
    assert_close("out", out, ref, F32, max(sq, sk, d))


def test_qkvpacked_gradients_reach_qkv():
    qkv = torch.randn(2, 40, 3, 4, 16, requires_grad=True)
    out = fa.flash_attn_qkvpacked_func(qkv, causal=True)
    q, k, v = qkv.detach().unbind(2)
    assert torch.equal(out, fa.flash_attn_func(q, k, v, causal=True))
    out.sum().backward()
    assert qkv.grad.shape == qkv.shape and qkv.grad.abs().sum() > 0


@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (10, 3))])
def test_varlen(causal, window):
    lens_q, lens_k = [30, 1, 45, 17], [50, 9, 33, 17]
    h, hk, d = 4, 2, 32
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()], dtype=torch.int32)
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()], dtype=torch.int32)
    q, k, v = torch.randn(sum(lens_q), h, d), torch.randn(sum(lens_k), hk, d), torch.randn(sum(lens_k), hk, d)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, _ = fa.flash_attn_varlen_func(*ins, cu_q, cu_k, max(lens_q), max(lens_k), causal=causal,
                                            window_size=window, return_attn_probs=True)
    dy = torch.randn(out.shape)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    outs, lses = [], []
    for a, b_, c, e in zip(cu_q[:-1], cu_q[1:], cu_k[:-1], cu_k[1:]):
        o, l_ = naive(ref_ins[0][a:b_], ref_ins[1][c:e], ref_ins[2][c:e], d ** -0.5, causal, window)
        outs.append(o), lses.append(l_)
    ref = torch.cat(outs)
    assert_close("out", out, ref, F32, 50)
    assert_gradients_close(("dq", "dk", "dv"), grads, torch.autograd.grad(ref, ref_ins, dy.double()), F32, 50)
    ref_lse = torch.cat(lses, dim=1)
    assert lse.shape == (h, sum(lens_q)) and torch.equal(torch.isinf(lse), torch.isinf(ref_lse))
    finite = ~torch.isinf(ref_lse)
    assert_close("softmax_lse", lse[finite], ref_lse[finite], F32, 50)


def test_dropout_replays_the_exported_mask():
    b, sq, sk, h, d, p = 1, 40, 48, 2, 16, 0.25
    q, k, v = torch.randn(b, sq, h, d), torch.randn(b, sk, h, d), torch.randn(b, sk, h, d)
    torch.manual_seed(11)
    seed = int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item())
    keep = torch.from_numpy(attnops.dropout_mask(seed, 0, 1 - p, h, batch=b, seq_q=sq, seq_kv=sk))
    torch.manual_seed(11)
    out = fa.flash_attn_func(q, k, v, dropout_p=p)
    ref = naive(q[0], k[0], v[0], d ** -0.5, keep=keep[0], keep_prob=1 - p)[0]
    assert_close("out", out[0], ref, F32, 48)


def test_unsupported_arguments_raise():
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(NotImplementedError, match="softcap"):
        fa.flash_attn_func(q, q, q, softcap=30.0)
    with pytest.raises(ValueError, match="batch, seqlen"):
        fa.flash_attn_func(q[0], q[0], q[0])
    cu = torch.tensor([0, 8], dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="block_table"):
        fa.flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 8, 8, block_table=cu)
