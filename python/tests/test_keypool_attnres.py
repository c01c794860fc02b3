"""npu_key_pool and ai_infra_block_attn_res(_backward) against independent
implementations written here from the contracts (docs/KEYPOOL.md,
docs/ATTNRES.md); neither calls attnops."""
import math

import pytest
import torch

import attnops.torch_npu as torch_npu
from checks import assert_close, assert_gradients_close

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


# ---- KeyPool ----------------------------------------------------------------------------
def key_pool_oracle(x_batches, starts, wk, gate, ape, cache, table, ratio, norm=None, eps=1e-6):
    """(valid rows per batch as [n_b, D] tensors, the updated cache), in float64 between the contract's
    rounding points (projections and softmax weights rounded to the activation dtype, the output once)."""
    dtype = wk.dtype
    cache = cache.clone()
    block = cache.shape[1]
    d = wk.shape[0]

    def rnd(t):
        return t.to(dtype).double()

    def row(b, p):
        return cache[table[b][p // block], p % block]

    current = []
    for b, x in enumerate(x_batches):
        k = rnd(x.double() @ wk.double().T)
        g = rnd(x.double() @ gate.double().T)
        if norm is not None:
            w, bias = norm
            mu = k.mean(-1, keepdim=True)
            var = ((k - mu) ** 2).mean(-1, keepdim=True)
            k = ((k - mu) / torch.sqrt(var + float(torch.tensor(eps, dtype=F32))) * w.double() + bias.double())
            k = k.float().double()
        current.append((k, g))
    for b, x in enumerate(x_batches):  # every batch's trailing group is cached before any pooling
        st, end = starts[b], starts[b] + x.shape[0]
        k, g = current[b]
        for p in range(max(st, end // ratio * ratio), end):
            r = row(b, p)
            r[:d], r[d:] = k[p - st].float(), g[p - st].float()
    outs = []
    for b, x in enumerate(x_batches):
        st, end = starts[b], starts[b] + x.shape[0]
        k, g = current[b]
        rows = []
        for q in range(st // ratio, end // ratio):
            ks, gs = [], []
            for p in range(q * ratio, q * ratio + ratio):
                if p >= st:
                    ks.append(k[p - st]), gs.append(g[p - st])
                else:
                    r = row(b, p).double()
                    ks.append(r[:d]), gs.append(r[d:])
            w = rnd(torch.softmax(torch.stack(gs) + ape.double(), dim=0))
            rows.append((w * torch.stack(ks)).sum(0).to(dtype))
        outs.append(torch.stack(rows) if rows else torch.empty(0, d, dtype=dtype))
    return outs, cache


def isclose_fraction(actual, expected, rtol=1 / 128, atol=1e-4):
    """The seed's KeyPool rule (docs/KEYPOOL.md): the fraction of elements within isclose."""
    a, e = actual.double(), expected.double()
    if a.numel() == 0:
        return 1.0
    return torch.isclose(a, e, rtol=rtol, atol=atol).double().mean().item()


@pytest.mark.parametrize("layout", ["BSH", "TH"])
@pytest.mark.parametrize("dtype", [BF16, F16])
@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("capacity", ["fixed", "current"])
def test_key_pool(layout, dtype, norm, capacity):
    """Both capacities (docs/KEYPOOL.md): "fixed", the default, is aclnnKeyPool's infershape today,
    [B, ceil(L * block_size / R), D] for BSH and TH with zeros past each batch's valid rows; "current" is
    the seed's current-input capacity, valid rows first (TH: packed), the rest unspecified."""
    ratio, d, h, block, nblocks = 4, 32, 96, 8, 12
    starts = [0, 6, 13]
    lens = [19, 19, 19] if layout == "BSH" else [19, 7, 30]
    wk = (torch.randn(d, h) / h ** 0.5).to(dtype)
    gate = (torch.randn(d, h) / h ** 0.5).to(dtype)
    ape = torch.randn(ratio, d)
    cache = torch.randn(nblocks, block, 2 * d)
    table = torch.tensor([[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 0], [11, 10, 9, 8, 7, 6]], dtype=torch.int32)[:, :6]
    table[2] = torch.tensor([3, 5, 7, 9, 11, 1])
    xs = [torch.randn(n, h).to(dtype) for n in lens]
    nw = (torch.rand(d) + 0.5, torch.randn(d) * 0.1) if norm else None
    start_pos = torch.tensor(starts, dtype=torch.int32)
    if layout == "BSH":
        hidden, cu = torch.stack(xs), None
    else:
        hidden = torch.cat(xs)
        cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    expected, expected_cache = key_pool_oracle(xs, starts, wk, gate, ape, cache, table.tolist(), ratio, nw)
    state = cache.clone()
    kw = {} if capacity == "fixed" else {"capacity": capacity}  # the default is "fixed"
    out = torch_npu.npu_key_pool(hidden, wk, gate, ape, state, table, start_pos,
                                 norm_weight=nw[0] if nw else None, norm_bias=nw[1] if nw else None,
                                 cu_seqlens=cu, cmp_ratio=ratio, **kw)
    valid = torch_npu.npu_key_pool_valid_rows(hidden, start_pos, cu, ratio)
    assert valid.tolist() == [e.shape[0] for e in expected]
    if capacity == "fixed":
        assert tuple(out.shape) == (3, -(-table.shape[1] * block // ratio), d)
        for b, n in enumerate(valid.tolist()):
            assert not out[b, n:].any(), "the fixed capacity is zero past the valid rows"
    else:
        assert tuple(out.shape) == ((3, -(-19 // ratio), d) if layout == "BSH"
                                    else (min(sum(lens), sum(lens) // ratio + 3), d))
    if layout == "BSH" or capacity == "fixed":
        actual = [out[b, :n] for b, n in enumerate(valid.tolist())]
    else:
        actual = list(out[:int(valid.sum())].split(valid.tolist()))
    for a, e in zip(actual, expected):
        assert torch.isfinite(a.float()).all()
        assert isclose_fraction(a, e) >= 0.995
    assert isclose_fraction(state, expected_cache) >= 0.995
    assert not torch.equal(state, cache), "the state cache is updated in place"


def test_key_pool_rule_catches_a_missing_ape():
    """The rule fails when the gate misses ape (the check can fail)."""
    ratio, d, h = 4, 16, 32
    wk, gate = torch.randn(d, h).to(BF16), torch.randn(d, h).to(BF16)
    ape = torch.randn(ratio, d) * 3
    cache, table = torch.zeros(4, 8, 2 * d), [[1, 2]]
    x = torch.randn(16, h).to(BF16)
    right, _ = key_pool_oracle([x], [0], wk, gate, ape, cache, table, ratio)
    wrong, _ = key_pool_oracle([x], [0], wk, gate, ape * 0, cache, table, ratio)
    out = torch_npu.npu_key_pool(x[None], wk, gate, ape, cache.clone(), torch.tensor(table, dtype=torch.int32),
                                 torch.tensor([0], dtype=torch.int32), cmp_ratio=ratio)
    assert isclose_fraction(out[0], right[0]) >= 0.995
    assert isclose_fraction(out[0], wrong[0]) < 0.995


# ---- Block Attention Residuals -------------------------------------------------------------
def attn_res_oracle(blocks, proj_weight, partial, gamma, scale, eps, enable_rmsnorm):
    v = torch.stack(blocks + ([partial] if partial is not None else []), dim=2)
    k = v
    rms = None
    if enable_rmsnorm:
        rms = torch.sqrt((v ** 2).mean(-1, keepdim=True) + eps)
        k = v / rms * gamma
    alpha = torch.softmax(scale * (k @ proj_weight), dim=2)
    return (alpha.unsqueeze(-2) @ v).squeeze(-2), rms, alpha


@pytest.mark.parametrize("dtype", [F32, BF16, F16])
@pytest.mark.parametrize("enable_rmsnorm,partial,scale", [(True, True, 1.0), (False, True, 0.5),
                                                          (True, False, 2.0)])
def test_attn_res(dtype, enable_rmsnorm, partial, scale):
    b, t, n, d = 2, 7, 5, 96
    blocks = [torch.randn(b, t, d).to(dtype) for _ in range(n)]
    pb = torch.randn(b, t, d).to(dtype) if partial else None
    w = (torch.randn(d) / math.sqrt(d)).to(dtype)
    g = (torch.rand(d) + 0.5).to(dtype)
    inputs = [x.clone().requires_grad_() for x in blocks + ([pb] if partial else []) + [w, g]]
    ins_blocks, ins_pb = inputs[:n], inputs[n] if partial else None
    h, rms, alpha = torch_npu.ai_infra_block_attn_res(ins_blocks, inputs[-2], partial_block=ins_pb,
                                                      scale=scale, rmsnorm_gamma=inputs[-1],
                                                      enable_rmsnorm=enable_rmsnorm)
    dh = torch.randn(h.shape).to(dtype)
    wanted = inputs if enable_rmsnorm else inputs[:-1]
    grads = torch.autograd.grad(h, wanted, dh)
    ref_in = [x.detach().double().requires_grad_() for x in wanted]
    rb, rpb = ref_in[:n], ref_in[n] if partial else None
    rg = ref_in[-1] if enable_rmsnorm else None
    rw = ref_in[-2] if enable_rmsnorm else ref_in[-1]
    rh, rrms, ralpha = attn_res_oracle(rb, rw, rpb, rg, scale, 1e-6, enable_rmsnorm)
    ref_grads = torch.autograd.grad(rh, ref_in, dh.double())
    levels = n + partial
    assert_close("h", h, rh, dtype, levels * d)
    assert_close("alpha", alpha, ralpha, F32, d, operand=dtype)
    if enable_rmsnorm:
        assert_close("rms", rms, rrms, F32, d, operand=dtype)
    else:
        assert rms is None
    # grad_proj_weight and grad_gamma sum over every token: K = B*T*L
    assert_gradients_close([f"grad[{i}]" for i in range(len(wanted))], grads, ref_grads, dtype, b * t * levels * d)
