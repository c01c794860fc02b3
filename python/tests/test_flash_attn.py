"""attnops.flash_attn against a naive float64 implementation of flash-attn's
documented conventions (flash_attn_interface.py docstrings): bottom-right
causal, sliding windows, ALiBi -slope |i + Sk - Sq - j|, softcap (the scaled
scores capped before ALiBi and the mask, as flash-attn's tests' attention_ref
does), varlen, softmax_lse."""
import math

import pytest
import torch

import attnops
import attnops.flash_attn as fa
from checks import assert_close, assert_gradients_close

F32, BF16 = torch.float32, torch.bfloat16


def naive(q, k, v, scale, causal=False, window=(-1, -1), slopes=None, keep=None, keep_prob=1.0, probs=False,
          softcap=0.0):
    """q [Sq, H, D], k/v [Sk, Hk, D] of one sequence -> (out [Sq, H, Dv], lse [H, Sq]) (probs: and the
    probabilities P [H, Sq, Sk] before dropout)."""
    sq, sk, h, hk = q.shape[0], k.shape[0], q.shape[1], k.shape[1]
    q, k, v = (t.double().transpose(0, 1) for t in (q, k, v))
    k, v = k.repeat_interleave(h // hk, 0), v.repeat_interleave(h // hk, 0)
    s = q @ k.transpose(1, 2) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
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
    out = ((p if keep is None else p * keep.double() / keep_prob) @ v).transpose(0, 1)
    lse = torch.where(visible.any(-1), lse, torch.full_like(lse, math.inf))
    return (out, lse, p) if probs else (out, lse)


@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (16, 8)), (True, (20, -1)),
                                           (False, (-1, 5))])
@pytest.mark.parametrize("sq,sk", [(48, 64), (64, 48), (50, 50), (1, 600), (4, 700)])  # short q: the split-KV path
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_flash_attn_func(causal, window, sq, sk, dtype):
    b, h, hk, d = 2, 4, 2, 32
    q, k, v = torch.randn(b, sq, h, d).to(dtype), torch.randn(b, sk, hk, d).to(dtype), torch.randn(b, sk, hk,
                                                                                                   d).to(dtype)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, probs = fa.flash_attn_func(*ins, causal=causal, window_size=window, return_attn_probs=True)
    assert lse.shape == (b, h, sq) and lse.dtype == F32 and probs.shape == (b, h, sq, sk) and probs.dtype == F32
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    refs = [naive(ref_ins[0][i], ref_ins[1][i], ref_ins[2][i], d ** -0.5, causal, window, probs=True)
            for i in range(b)]
    ref = torch.stack([r[0] for r in refs])
    ref_grads = torch.autograd.grad(ref, ref_ins, dy.double())
    kl = max(sq, sk, d)
    assert_close("out", out, ref, dtype, kl)
    assert_gradients_close(("dq", "dk", "dv"), grads, ref_grads, dtype, kl)
    ref_lse = torch.stack([r[1] for r in refs])
    assert torch.equal(torch.isinf(lse), torch.isinf(ref_lse))
    finite = ~torch.isinf(ref_lse)
    assert_close("softmax_lse", lse[finite], ref_lse[finite], F32, kl, operand=dtype)
    assert_close("S_dmask", probs, torch.stack([r[2] for r in refs]), F32, kl, operand=dtype)


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


@pytest.mark.parametrize("causal,window,alibi", [(False, (-1, -1), False), (True, (-1, -1), True),
                                                 (False, (16, 8), False)])
@pytest.mark.parametrize("dtype", [F32, BF16])
def test_softcap(causal, window, alibi, dtype):
    """Gemma 2's soft-capping, forward, gradients, lse and S_dmask; softcap <= 0 is off (flash-attn's rule)."""
    b, sq, sk, h, hk, d, cap = 2, 48, 64, 4, 2, 32, 1.0
    q, k, v = (torch.randn(b, s, n, d).to(dtype) for s, n in ((sq, h), (sk, hk), (sk, hk)))
    slopes = torch.rand(h) if alibi else None
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, probs = fa.flash_attn_func(*ins, causal=causal, window_size=window, alibi_slopes=slopes,
                                         softcap=cap, return_attn_probs=True)
    dy = torch.randn(out.shape).to(dtype)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    refs = [naive(ref_ins[0][i], ref_ins[1][i], ref_ins[2][i], d ** -0.5, causal, window, slopes=slopes, probs=True,
                  softcap=cap) for i in range(b)]
    ref = torch.stack([r[0] for r in refs])
    kl = max(sq, sk, d)
    assert_close("out", out, ref, dtype, kl)
    assert_gradients_close(("dq", "dk", "dv"), grads, torch.autograd.grad(ref, ref_ins, dy.double()), dtype, kl)
    ref_lse = torch.stack([r[1] for r in refs])
    finite = ~torch.isinf(ref_lse)
    assert_close("softmax_lse", lse[finite], ref_lse[finite], F32, kl, operand=dtype)
    assert_close("S_dmask", probs, torch.stack([r[2] for r in refs]), F32, kl, operand=dtype)
    assert torch.equal(fa.flash_attn_func(q, k, v, causal=causal, window_size=window, alibi_slopes=slopes,
                                          softcap=-1.0),
                       fa.flash_attn_func(q, k, v, causal=causal, window_size=window, alibi_slopes=slopes))


def test_qkvpacked_gradients_reach_qkv():
    qkv = torch.randn(2, 40, 3, 4, 16, requires_grad=True)
    out = fa.flash_attn_qkvpacked_func(qkv, causal=True)
    q, k, v = qkv.detach().unbind(2)
    assert torch.equal(out, fa.flash_attn_func(q, k, v, causal=True))
    out.sum().backward()
    assert qkv.grad.shape == qkv.shape and qkv.grad.abs().sum() > 0


def _cu(lens):
    return torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)


def _varlen_reference(q, k, v, lens_q, lens_k, scale, causal, window, slopes=None, softcap=0.0):
    """(out, lse [H, total_q]) of the naive implementation, sequence by sequence."""
    outs, lses, cq, ck = [], [], _cu(lens_q).tolist(), _cu(lens_k).tolist()
    for i, (a, b_, c, e) in enumerate(zip(cq, cq[1:], ck, ck[1:])):
        o, l_ = naive(q[a:b_], k[c:e], v[c:e], scale, causal, window,
                      slopes=None if slopes is None else slopes[i] if slopes.dim() == 2 else slopes, softcap=softcap)
        outs.append(o), lses.append(l_)
    return torch.cat(outs), torch.cat(lses, dim=1)


def seeded_keep(torch_seed, p, h, b, sq, sk):
    """The keep mask flash_attn_func draws after torch.manual_seed(torch_seed) (a seed from torch.randint,
    offset 0); leaves torch seeded with torch_seed again, for the call."""
    torch.manual_seed(torch_seed)
    seed = int(torch.randint(0, 2 ** 62, (1,), dtype=torch.int64).item())
    keep = torch.from_numpy(attnops.dropout_mask(seed, 0, 1 - p, h, batch=b, seq_q=sq, seq_kv=sk))
    torch.manual_seed(torch_seed)
    return keep


def check_varlen(lens_q, lens_k, causal, window, h=4, hk=2, d=32, softcap=0.0):
    """flash_attn_varlen_func's out, gradients and lse against the naive one sequence at a time; -> S_dmask."""
    q, k, v = torch.randn(sum(lens_q), h, d), torch.randn(sum(lens_k), hk, d), torch.randn(sum(lens_k), hk, d)
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    out, lse, probs = fa.flash_attn_varlen_func(*ins, _cu(lens_q), _cu(lens_k), max(lens_q), max(lens_k),
                                                causal=causal, window_size=window, return_attn_probs=True,
                                                softcap=softcap)
    dy = torch.randn(out.shape)
    grads = torch.autograd.grad(out, ins, dy)
    ref_ins = [t.double().requires_grad_() for t in (q, k, v)]
    ref, ref_lse = _varlen_reference(*ref_ins, lens_q, lens_k, d ** -0.5, causal, window, softcap=softcap)
    kl = max(*lens_q, *lens_k, d)
    assert_close("out", out, ref, F32, kl)
    assert_gradients_close(("dq", "dk", "dv"), grads, torch.autograd.grad(ref, ref_ins, dy.double()), F32, kl)
    assert lse.shape == (h, sum(lens_q)) and torch.equal(torch.isinf(lse), torch.isinf(ref_lse))
    finite = ~torch.isinf(ref_lse)
    assert_close("softmax_lse", lse[finite], ref_lse[finite], F32, kl)
    return probs


@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (10, 3))])
def test_varlen(causal, window):
    check_varlen([30, 1, 45, 17], [50, 9, 33, 17], causal, window)


@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (True, (0, 0)), (False, (10, 3))])
def test_varlen_softcap(causal, window):
    """softcap 1 through the TND call and through the per-sequence calls of a single-key band."""
    check_varlen([30, 1, 45, 17], [50, 9, 33, 17], causal, window, softcap=1.0)


@pytest.mark.parametrize("causal,window", [(False, (0, 0)), (True, (0, 0)), (True, (0, 7))])
def test_varlen_single_key_band(causal, window):
    """Each query sees one key (bottom-right diagonal): a TND band of pre + next = 0, which CANN refuses,
    computed one sequence at a time; with an empty sequence and one with no keys."""
    probs = check_varlen([12, 0, 20, 7, 3], [15, 4, 20, 5, 0], causal, window, d=16)
    assert probs.shape == (5, 4, 20, 20) and torch.all(probs.sum(-1) <= 1 + 1e-5)


def test_packed_forms_equal_the_unpacked_calls():
    b, sq, sk, h, hk, d = 2, 24, 30, 4, 2, 16
    q, kv = torch.randn(b, sq, h, d, requires_grad=True), torch.randn(b, sk, 2, hk, d, requires_grad=True)
    out = fa.flash_attn_kvpacked_func(q, kv, causal=True)
    assert torch.equal(out, fa.flash_attn_func(q.detach(), *kv.detach().unbind(2), causal=True))
    out.sum().backward()
    assert kv.grad.shape == kv.shape and kv.grad[:, :, 1].abs().sum() > 0
    lens = [9, 0, 15]
    qkv = torch.randn(sum(lens), 3, h, d, requires_grad=True)
    out = fa.flash_attn_varlen_qkvpacked_func(qkv, _cu(lens), 15, causal=True)
    assert torch.equal(out, fa.flash_attn_varlen_func(*qkv.detach().unbind(1), _cu(lens), _cu(lens), 15, 15,
                                                      causal=True))
    out.sum().backward()
    assert qkv.grad.abs().sum() > 0
    lens_k = [11, 3, 15]
    q, kv = torch.randn(sum(lens), h, d), torch.randn(sum(lens_k), 2, hk, d)
    out = fa.flash_attn_varlen_kvpacked_func(q, kv, _cu(lens), _cu(lens_k), 15, 15, window_size=(4, 2))
    assert torch.equal(out, fa.flash_attn_varlen_func(q, *kv.unbind(1), _cu(lens), _cu(lens_k), 15, 15,
                                                      window_size=(4, 2)))


def test_attn_probs_carry_the_dropout_sign():
    b, sq, sk, h, d, p = 2, 20, 28, 2, 16, 0.3
    q, k, v = torch.randn(b, sq, h, d), torch.randn(b, sk, h, d), torch.randn(b, sk, h, d)
    keep = seeded_keep(5, p, h, b, sq, sk)
    out, lse, probs = fa.flash_attn_func(q, k, v, dropout_p=p, causal=True, return_attn_probs=True)
    refs = [naive(q[i], k[i], v[i], d ** -0.5, True, keep=keep[i], keep_prob=1 - p, probs=True) for i in range(b)]
    assert_close("out", out, torch.stack([r[0] for r in refs]), F32, sk)
    ref_p = torch.stack([r[2] for r in refs])
    assert_close("|S_dmask|", probs.abs(), ref_p, F32, sk)
    positive = ref_p > 0
    assert torch.equal(probs[positive] > 0, keep.bool()[positive])


def test_package_stand_in():
    """What code importing the flash_attn package reads: the version, bert_padding, the functions."""
    import attnops.flash_attn.bert_padding as bp
    assert fa.__version__ == "2.8.3" and fa.bert_padding is bp
    for name in ("flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
                 "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func"):
        assert callable(getattr(fa, name))


def test_pad_unpad_round_trip_and_varlen_equivalence():
    """unpad_input -> varlen -> pad_input equals the padded call on each sequence's real tokens (left
    padding here), and the gradients reach the padded input only at real tokens."""
    b, s, h, d = 3, 16, 2, 16
    mask = torch.zeros(b, s, dtype=torch.bool)
    for i, n in enumerate((16, 9, 1)):
        mask[i, s - n:] = True  # left padding
    x = torch.randn(b, s, h, d, requires_grad=True)
    rows, indices, cu, max_len, seqused = bp_unpad = fa.bert_padding.unpad_input(x, mask)
    assert cu.dtype == torch.int32 and cu.tolist() == [0, 16, 25, 26] and max_len == 16
    assert seqused.tolist() == [16, 9, 1] and torch.equal(rows, x.detach()[mask])
    out = fa.bert_padding.pad_input(fa.flash_attn_varlen_func(rows, rows, rows, cu, cu, max_len, max_len,
                                                              causal=True), indices, b, s)
    assert out.shape == x.shape and torch.all(out[~mask] == 0)
    for i in range(b):
        real = x.detach()[i][mask[i]].unsqueeze(0)
        assert torch.equal(out.detach()[i][mask[i]], fa.flash_attn_func(real, real, real, causal=True)[0])
    out.sum().backward()
    assert torch.all(x.grad[~mask] == 0) and x.grad[mask].abs().sum() > 0
    unused = torch.zeros_like(mask)
    unused[1, :2] = True
    rows_u, _, cu_u, _, used = fa.bert_padding.unpad_input(x.detach(), mask, unused)
    assert cu_u.tolist() == [0, 16, 27, 28] and used.tolist() == [16, 9, 1] and rows_u.shape[0] == 28
    assert len(bp_unpad) == 5


FRESH_PROCESS_COMPILE = """
import torch
import attnops.flash_attn as fa
torch._dynamo.config.error_on_recompile = True
f = torch.compile(fa.flash_attn_func, fullgraph=True)
q, k, v = (torch.randn(1, 32, 2, 16) for _ in range(3))
first = f(q, k, v, causal=True)
second = f(q + 1, k, v, causal=True)
assert torch.equal(second, fa.flash_attn_func(q + 1, k, v, causal=True))
print("ok")
"""


def test_compiled_flash_attn_func_does_not_recompile(tmp_path, inductor_cache_per_isa):
    import subprocess
    import sys
    script = tmp_path / "compile_twice.py"
    script.write_text(FRESH_PROCESS_COMPILE)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr[-3000:]


def test_varlen_compiles_without_graph_breaks(inductor_cache_per_isa):
    """fullgraph=True: the cu_seqlens tensors reach the op, which reads them when the graph runs; the same
    graph serves other lengths of the same count, forward and backward equal to eager."""
    h, hk, d = 4, 2, 16

    def step(q, k, v, cu_q, cu_k):
        return fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 32, 32, causal=True, window_size=(6, -1))

    compiled = torch.compile(step, fullgraph=True)
    for lens_q, lens_k in (([10, 0, 22], [12, 5, 23]), ([4, 20, 8], [30, 1, 9])):
        q, k, v = torch.randn(32, h, d), torch.randn(40, hk, d), torch.randn(40, hk, d)
        ins_c, ins_e = ([t.clone().requires_grad_() for t in (q, k, v)] for _ in range(2))
        with torch._dynamo.config.patch(error_on_recompile=True):
            out = compiled(*ins_c, _cu(lens_q), _cu(lens_k))
        want = step(*ins_e, _cu(lens_q), _cu(lens_k))
        assert torch.equal(out, want)
        dy = torch.randn(out.shape)
        for a, e in zip(torch.autograd.grad(out, ins_c, dy), torch.autograd.grad(want, ins_e, dy)):
            assert torch.equal(a, e)
