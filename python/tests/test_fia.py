"""FusedInferAttentionScore's golden against the tests' own float64 statement of the rules
(fia_oracle.py, which never calls attnops): decode and prompt, every layout, GQA, per-batch
lengths, paged caches with random block tables, masks and sparse modes 0-4, pse_shift, MLA rope,
softmax_lse, softcap and ALiBi (the attnops extensions); and the invalid arguments, refused with a sentence
and nothing written."""
import math

import numpy as np
import pytest
import torch

from attnops import _fia, _lib, golden, ops

from checks import assert_close
from fia_oracle import fia as oracle

INT32_MAX = 2147483647


def _call(q, k, v, num_threads=None, **kw):
    """The torch op, lists of lengths given as its int64 tensors; num_threads: torch's thread count for it."""
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        kw[name] = ops.lengths_tensor(kw.get(name))
    saved = torch.get_num_threads()
    torch.set_num_threads(num_threads or saved)
    try:
        return ops.fused_infer_attention_score(q, k, v, **kw)
    finally:
        torch.set_num_threads(saved)


def _run(q, k, v, **kw):
    return _call(q, k, v, impl="reference", **kw)


def _check(q, k, v, reduce_len, **kw):
    """The golden's and the fast kernel's out and lse against the oracle; returns the golden's."""
    e_out, e_lse = oracle(q, k, v, **kw)
    inf = torch.isinf(e_lse)
    results = []
    for impl in ("reference", "cpu"):
        out, lse = _call(q, k, v, impl=impl, softmax_lse_flag=True, **kw)
        assert_close(f"{impl} attention_out", out, e_out, q.dtype, reduce_len)
        lse = lse.reshape(e_lse.shape).double()
        assert torch.equal(torch.isinf(lse), inf) and bool((lse[inf] > 0).all()), f"{impl} lse +inf rows"
        assert_close(f"{impl} softmax_lse", lse[~inf], e_lse[~inf], torch.float32, reduce_len)
        results.append((out, lse))
    return results[0]


def _qkv(layout, b, n1, n2, s1, s2, d, dtype, dv=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    dv = dv or d

    def make(n, s, dd):
        shape = {"BSH": (b, s, n * dd), "BSND": (b, s, n, dd), "BNSD": (b, n, s, dd)}[layout]
        return torch.randn(shape, generator=g).to(dtype)
    return make(n1, s1, d), make(n2, s2, d), make(n2, s2, dv)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
@pytest.mark.parametrize("n2", [8, 2, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_decode_contiguous(layout, n2, dtype):
    q, k, v = _qkv(layout, 3, 8, n2, 1, 37, 16, dtype)
    _check(q, k, v, 37, input_layout=layout, num_heads=8, num_key_value_heads=n2, scale=0.25,
           actual_seq_lengths_kv=[37, 0, 1])


@pytest.mark.parametrize("mode,pre,nxt", [(0, INT32_MAX, INT32_MAX), (0, 3, 1), (1, 0, 0), (2, 0, 0), (3, 0, 0),
                                          (4, 4, 2), (4, -1, 3)])
def test_prompt_masks(mode, pre, nxt):
    b, s1, s2 = 2, 9, 13
    q, k, v = _qkv("BNSD", b, 4, 2, s1, s2, 16, torch.float32, seed=1)
    g = torch.Generator().manual_seed(2)
    mask = (torch.rand(b, 1, s1 + 2, s2 + 3, generator=g) < 0.3) if mode < 2 else torch.triu(
        torch.ones(2048, 2048, dtype=torch.bool), 1)
    _check(q, k, v, s2, input_layout="BNSD", num_heads=4, num_key_value_heads=2, scale=0.3, atten_mask=mask,
           sparse_mode=mode, pre_tokens=pre, next_tokens=nxt, actual_seq_lengths=[9, 6],
           actual_seq_lengths_kv=[13, 4])


def test_prompt_without_mask_ignores_tokens_and_fills_padded_rows():
    q, k, v = _qkv("BSND", 2, 2, 2, 6, 8, 8, torch.float16, seed=3)
    out, lse = _check(q, k, v, 8, input_layout="BSND", num_heads=2, pre_tokens=0, next_tokens=0,
                      actual_seq_lengths=[4, 6], actual_seq_lengths_kv=[8, 5])
    assert float(out[0, 4:].abs().max()) == 0.0 and bool(torch.isinf(lse[0, :, 4:]).all())


def test_pse_shift():
    b, s1, s2 = 2, 5, 11
    q, k, v = _qkv("BSH", b, 4, 4, s1, s2, 8, torch.bfloat16, seed=4)
    pse = torch.randn(1, 4, s1 + 1, s2 + 2).to(torch.bfloat16)
    _check(q, k, v, s2, input_layout="BSH", num_heads=4, scale=0.5, pse_shift=pse)
    qd, kd, vd = _qkv("BSH", b, 4, 4, 1, s2, 8, torch.bfloat16, seed=5)
    _check(qd, kd, vd, s2, input_layout="BSH", num_heads=4, scale=0.5,
           pse_shift=torch.randn(b, 4, 1, s2).to(torch.bfloat16))


def test_decode_mask():
    q, k, v = _qkv("BNSD", 3, 4, 1, 1, 20, 16, torch.float32, seed=6)
    g = torch.Generator().manual_seed(7)
    mask = torch.rand(3, 1, 1, 24, generator=g) < 0.5
    mask[1] = True  # a step with every key masked: out 0, lse +inf
    out, lse = _check(q, k, v, 20, input_layout="BNSD", num_heads=4, num_key_value_heads=1, atten_mask=mask,
                      sparse_mode=3)
    assert float(out[1].abs().max()) == 0.0


def _paged(k, v, block_size, lens, rank, seed, shared=False, spare=3):
    """A paged copy of contiguous BNSD k, v [B, N2, S, D]: shuffled blocks, partially filled last blocks,
    (shared: batch 1 reuses batch 0's first block, whose rows agree), unused blocks left random."""
    g = torch.Generator().manual_seed(seed)
    b, n2, s, d = k.shape
    dv = v.shape[3]
    cols = max(-(-length // block_size) for length in lens)
    need = sum(-(-length // block_size) for length in lens)
    blocks = need + spare
    perm = torch.randperm(blocks, generator=g).tolist()
    table = torch.full((b, cols + 1), -1, dtype=torch.int32)
    kc = torch.randn(blocks, n2, block_size, d, generator=g).to(k.dtype)
    vc = torch.randn(blocks, n2, block_size, dv, generator=g).to(v.dtype)
    used = 0
    for bi, length in enumerate(lens):
        for c in range(-(-length // block_size)):
            if shared and bi == 1 and c == 0:
                blk = int(table[0, 0])
                k[1, :, :block_size] = k[0, :, :block_size]
                v[1, :, :block_size] = v[0, :, :block_size]
            else:
                blk = perm[used]
                used += 1
            table[bi, c] = blk
            rows = min(block_size, length - c * block_size)
            kc[blk, :, :rows] = k[bi, :, c * block_size:c * block_size + rows]
            vc[blk, :, :rows] = v[bi, :, c * block_size:c * block_size + rows]
    if rank == 3:
        kc = kc.transpose(1, 2).reshape(blocks, block_size, n2 * d)
        vc = vc.transpose(1, 2).reshape(blocks, block_size, n2 * dv)
    return kc, vc, table


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("s1", [1, 5])
@pytest.mark.parametrize("block_size", [4, 16])
def test_paged(rank, s1, block_size):
    b, n1, n2, d, s2 = 3, 8, 2, 16, 40
    q, k, v = _qkv("BNSD", b, n1, n2, s1, s2, d, torch.float16, seed=8)
    lens = [40, 17, 1]
    kc, vc, table = _paged(k, v, block_size, lens, rank, seed=9, shared=True)
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, block_table=table,
              block_size=block_size, actual_seq_lengths_kv=lens)
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
    out, lse = _check(q, kc, vc, s2, **kw)
    # the same keys contiguous give the same bits
    masked = {k2: v2 for k2, v2 in kw.items() if k2 not in ("block_table", "block_size")}
    out_c, lse_c = _run(q, k, v, softmax_lse_flag=True, **masked)
    assert torch.equal(out, out_c) and torch.equal(lse, lse_c.reshape(lse.shape).double())


def _as_layout(x, layout):
    """BNSD [B, N, S, D] -> the layout's tensor (TND: the batches' full rows back to back)."""
    return {"BNSD": lambda: x, "BSND": lambda: x.transpose(1, 2).contiguous(),
            "BSH": lambda: x.transpose(1, 2).flatten(2).contiguous(),
            "TND": lambda: x.transpose(1, 2).flatten(0, 1).contiguous()}[layout]()


def _nz(cache):
    """A BnNBsD cache [blocks, N2, block_size, D] as Ascend's NZ [blocks, N2, D / c0, block_size, c0], c0 = 32
    bytes of the dtype."""
    c0 = 32 // cache.element_size()
    blocks, n2, bs, d = cache.shape
    return cache.reshape(blocks, n2, bs, d // c0, c0).permute(0, 1, 3, 2, 4).contiguous()


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD", "TND"])
@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize("s1", [1, 4])
def test_every_cache_layout_with_every_query_layout(layout, rank, s1):
    """aclnnFusedInferAttentionScoreV4: each paged cache layout (BnBsH rank 3, BnNBsD rank 4, NZ rank 5) crosses
    with each query layout, decode and prompt, GQA; the golden and the fast kernel against the oracle."""
    b, n1, n2, d, s2, bs = 2, 8, 2, 32, 30, 8
    q, k, v = _qkv("BNSD", b, n1, n2, s1, s2, d, torch.bfloat16, seed=60 + rank)
    lens = [30, 11]
    kc, vc, table = _paged(k, v, bs, lens, min(rank, 4), seed=61)
    if rank == 5:
        kc, vc = _nz(kc), _nz(vc)
    kw = dict(input_layout=layout, num_heads=n1, num_key_value_heads=n2, scale=0.25, block_table=table,
              block_size=bs, actual_seq_lengths_kv=lens)
    if layout == "TND":
        kw["actual_seq_lengths"] = [s1, 2 * s1]
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
    _check(_as_layout(q, layout), kc, vc, s2, **kw)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_ntd_queries_with_every_cache_layout(rank):
    """NTD queries exist only in torch_npu's v2 entry (the op has TND): NTD, NTD_TND and TND_NTD over each paged
    cache layout give the TND call's bytes, transposed; the TND call is checked against the oracle above."""
    from attnops import torch_npu
    b, n1, n2, d, s2, bs = 2, 8, 2, 32, 30, 8
    q, k, v = _qkv("BNSD", b, n1, n2, 4, s2, d, torch.bfloat16, seed=80 + rank)
    lens = [30, 11]
    kc, vc, table = _paged(k, v, bs, lens, min(rank, 4), seed=81)
    if rank == 5:
        kc, vc = _nz(kc), _nz(vc)
    tnd = _as_layout(q, "TND")[:7]  # batches of 3 and 4 rows
    kw = dict(num_query_heads=n1, num_key_value_heads=n2, softmax_scale=0.25, block_table=table, block_size=bs,
              actual_seq_qlen=[3, 7], actual_seq_kvlen=lens, sparse_mode=3, return_softmax_lse=True,
              atten_mask=torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1))
    want, want_lse = torch_npu.npu_fused_infer_attention_score_v2(tnd, kc, vc, input_layout="TND", **kw)
    ntd = tnd.transpose(0, 1).contiguous()
    for layout, query, flip in (("NTD", ntd, True), ("NTD_TND", ntd, False), ("TND_NTD", tnd, True)):
        out, lse = torch_npu.npu_fused_infer_attention_score_v2(query, kc, vc, input_layout=layout, **kw)
        assert torch.equal(out, want.transpose(0, 1) if flip else want), layout
        assert torch.equal(lse, want_lse), layout


@pytest.mark.parametrize("nz", [False, True])
def test_int8_bnnbsd_cache_with_bsh_queries(nz):
    b, n1, n2, d, bs = 2, 8, 2, 64, 16
    q, k, v = _qkv("BNSD", b, n1, n2, 1, 40, d, torch.float16, seed=70)
    g = torch.Generator().manual_seed(71)
    k8, v8 = (torch.randint(-100, 100, t.shape, generator=g, dtype=torch.int8) for t in (k, v))
    kc, vc, table = _paged(k8, v8, bs, [40, 23], 4, seed=72)
    if nz:
        kc, vc = _nz(kc), _nz(vc)
    scale = (torch.rand(n2 * d, generator=g) * 0.02).to(torch.float16)
    _check(_as_layout(q, "BSH"), kc, vc, 40, input_layout="BSH", num_heads=n1, num_key_value_heads=n2, scale=0.125,
           block_table=table, block_size=bs, actual_seq_lengths_kv=[40, 23], key_antiquant_scale=scale,
           value_antiquant_scale=scale)


def test_tnd_contiguous_and_paged():
    n1, n2, d = 4, 2, 16
    lens_q, lens_kv = [3, 1, 5], [6, 0, 9]
    g = torch.Generator().manual_seed(10)
    q = torch.randn(sum(lens_q), n1, d, generator=g)
    k = torch.randn(sum(lens_kv), n2, d, generator=g)
    v = torch.randn(sum(lens_kv), n2, d, generator=g)
    cum = lambda xs: list(np.cumsum(xs))  # noqa: E731
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    out, lse = _check(q, k, v, 9, input_layout="TND", num_heads=n1, num_key_value_heads=n2, scale=0.25,
                      actual_seq_lengths=cum(lens_q), actual_seq_lengths_kv=cum(lens_kv), sparse_mode=3,
                      atten_mask=mask)
    # the same keys in a paged cache (kv lengths per batch)
    kb = torch.zeros(3, n2, 9, d)
    vb = torch.zeros(3, n2, 9, d)
    start = 0
    for bi, length in enumerate(lens_kv):
        kb[bi, :, :length] = k[start:start + length].transpose(0, 1)
        vb[bi, :, :length] = v[start:start + length].transpose(0, 1)
        start += length
    kc, vc, table = _paged(kb, vb, 4, lens_kv, 4, seed=11)
    out_p, lse_p = _check(q, kc, vc, 9, input_layout="TND", num_heads=n1, num_key_value_heads=n2, scale=0.25,
                          actual_seq_lengths=cum(lens_q), actual_seq_lengths_kv=lens_kv, block_table=table,
                          block_size=4, sparse_mode=3, atten_mask=mask)
    assert torch.equal(out, out_p) and torch.equal(lse, lse_p)


@pytest.mark.parametrize("n1", [8, 32])
def test_mla_rope_decode_paged(n1):
    """DeepSeek's absorbed form in small: N2 = 1, the rope part a second dot product before the scale (8 heads:
    the few-row kernels; 32: the tile GEMMs)."""
    b, d, dr, s2, bs = 2, 32, 8, 23, 8
    g = torch.Generator().manual_seed(12)
    q = torch.randn(b, n1, 1, d, generator=g).bfloat16()
    qr = torch.randn(b, n1, 1, dr, generator=g).bfloat16()
    k = torch.randn(b, 1, s2, d, generator=g).bfloat16()
    kr = torch.randn(b, 1, s2, dr, generator=g).bfloat16()
    lens = [23, 9]
    kc, vc, table = _paged(k, k.clone(), bs, lens, 3, seed=13)
    krc, _, _ = _paged(kr, kr.clone(), bs, lens, 3, seed=13)
    _check(q, kc, vc, s2, input_layout="BNSD", num_heads=n1, num_key_value_heads=1, scale=1 / math.sqrt(d + dr),
           block_table=table, block_size=bs, actual_seq_lengths_kv=lens, query_rope=qr, key_rope=krc)


def test_bnsd_bsnd_and_value_head_dim():
    q, k, v = _qkv("BNSD", 2, 4, 4, 3, 10, 16, torch.float32, dv=8, seed=14)
    out, _ = _check(q, k, v, 10, input_layout="BNSD_BSND", num_heads=4, scale=0.2)
    assert out.shape == (2, 3, 4, 8)


def test_lse_flag_off_gives_a_zero():
    q, k, v = _qkv("BSH", 1, 2, 2, 1, 5, 8, torch.float32, seed=15)
    out, lse = _call(q, k, v, num_heads=2, impl="reference")
    assert lse.shape == (1,) and float(lse[0]) == 0.0
    e_out, _ = oracle(q, k, v, num_heads=2)
    assert_close("attention_out", out, e_out, q.dtype, 5)


def test_numpy_golden():
    """attnops.golden on numpy arrays (bf16 through ml_dtypes) is the same call."""
    import ml_dtypes
    q, k, v = _qkv("BSND", 2, 4, 2, 1, 9, 8, torch.bfloat16, seed=16)
    to_np = lambda t: t.float().numpy().astype(ml_dtypes.bfloat16)  # noqa: E731
    out, lse = golden.fused_infer_attention_score(to_np(q), to_np(k), to_np(v), num_heads=4,
                                                  num_key_value_heads=2, input_layout="BSND",
                                                  softmax_lse_flag=True, actual_seq_lengths_kv=[9, 3])
    t_out, t_lse = _run(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BSND", softmax_lse_flag=True,
                        actual_seq_lengths_kv=[9, 3])
    assert np.array_equal(out.astype(np.float32), t_out.float().numpy())
    assert np.array_equal(lse, t_lse.numpy())
    slopes = _slopes(2, 4, 49, True)
    out, lse = golden.fused_infer_attention_score(to_np(q), to_np(k), to_np(v), num_heads=4, num_key_value_heads=2,
                                                  input_layout="BSND", softmax_lse_flag=True, softcap=0.5,
                                                  alibi_slopes=slopes.numpy())
    e_out, e_lse = oracle(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BSND", softcap=0.5,
                          alibi_slopes=slopes)
    assert_close("numpy golden, softcap and ALiBi", torch.from_numpy(out.astype(np.float32)), e_out, q.dtype, 9)
    assert_close("its lse", torch.from_numpy(lse).reshape(e_lse.shape), e_lse, torch.float32, 9)


def _slopes(b, n1, seed, per_batch):
    """ALiBi slopes in [0.05, 0.55), f32 [N1] or [B, N1]."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand((b, n1) if per_batch else (n1,), generator=g) * 0.5 + 0.05


@pytest.mark.parametrize("per_batch", [False, True])
@pytest.mark.parametrize("cap", [0.0, 1.5])
def test_softcap_and_alibi(per_batch, cap):
    """The attnops extensions on either branch: decode over a contiguous cache (GQA, a batch without keys) and a
    paged one, prompts with bottom-right and band masks and per-batch lengths (L2 - L1 differs per batch: the
    distance is bottom-right per batch), TND, and pse_shift added beside the slopes."""
    b, n1, n2, d = 3, 8, 2, 16
    slopes = _slopes(b, n1, 40, per_batch)
    ext = dict(softcap=cap, alibi_slopes=slopes)
    q, k, v = _qkv("BSND", b, n1, n2, 1, 37, d, torch.bfloat16, seed=41)
    _check(q, k, v, 37, input_layout="BSND", num_heads=n1, num_key_value_heads=n2, scale=0.5,
           actual_seq_lengths_kv=[37, 0, 20], **ext)
    kc, vc, table = _paged(*_qkv("BNSD", b, n1, n2, 1, 40, d, torch.float16, seed=42)[1:], 8, [40, 17, 3], 3, seed=43)
    qd = _qkv("BNSD", b, n1, n2, 1, 40, d, torch.float16, seed=44)[0]
    _check(qd, kc, vc, 40, input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.5, block_table=table,
           block_size=8, actual_seq_lengths_kv=[40, 17, 3], **ext)
    causal = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    q, k, v = _qkv("BNSD", b, n1, n2, 9, 30, d, torch.float32, seed=45)  # 9 rows of G = 4: the tile GEMMs
    for mode, pre, nxt in ((3, INT32_MAX, 0), (4, 5, 2), (0, INT32_MAX, INT32_MAX)):
        masks = dict(sparse_mode=mode, pre_tokens=pre, next_tokens=nxt, atten_mask=causal) if mode else {}
        _check(q, k, v, 30, input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.5,
               actual_seq_lengths=[9, 4, 2], actual_seq_lengths_kv=[30, 11, 2], **masks, **ext)
    pse = torch.randn(1, n1, 9, 30)
    _check(q, k, v, 30, input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.5, pse_shift=pse,
           actual_seq_lengths_kv=[30, 12, 9], **ext)
    lens_q, lens_kv = [5, 1, 7], [9, 20, 7]
    g = torch.Generator().manual_seed(46)
    qt = torch.randn(sum(lens_q), n1, d, generator=g)
    kt, vt = torch.randn(sum(lens_kv), n2, d, generator=g), torch.randn(sum(lens_kv), n2, d, generator=g)
    _check(qt, kt, vt, 20, input_layout="TND", num_heads=n1, num_key_value_heads=n2, scale=0.5,
           actual_seq_lengths=list(np.cumsum(lens_q)), actual_seq_lengths_kv=list(np.cumsum(lens_kv)),
           sparse_mode=3, atten_mask=causal, **ext)


def test_alibi_distance_is_bottom_right():
    """A check that fails on a wrong alignment: the oracle's distance, which the golden matches, differs from the
    top-left one |i - j| wherever L2 != L1."""
    q, k, v = _qkv("BNSD", 1, 2, 2, 3, 11, 8, torch.float32, seed=47)
    slopes = _slopes(1, 2, 48, False)
    out, _ = _run(q, k, v, input_layout="BNSD", num_heads=2, alibi_slopes=slopes)
    e_out, _ = oracle(q, k, v, input_layout="BNSD", num_heads=2, alibi_slopes=slopes)
    assert_close("attention_out", out, e_out, q.dtype, 11)
    top_left, _ = oracle(q, k, v, input_layout="BNSD", num_heads=2, pse_shift=-(slopes.view(1, 2, 1, 1) * (
        torch.arange(3).view(3, 1) - torch.arange(11).view(1, 11)).abs()))
    with pytest.raises(AssertionError):
        assert_close("attention_out", out, top_left, q.dtype, 11)


def _check_numpy(q, k, v, reduce_len, **kw):
    """_check through the numpy binding (the arguments the torch op does not carry): golden and fast kernel
    against the oracle."""
    e_out, e_lse = oracle(q, k, v, **kw)
    np_kw = {name: t.numpy() if isinstance(t, torch.Tensor) else t for name, t in kw.items()}
    for impl in ("reference", "cpu"):
        out, lse = _fia.fused_infer_attention_score(q.numpy(), k.numpy(), v.numpy(), impl=impl,
                                                    softmax_lse_flag=True, **np_kw)
        assert_close(f"{impl} attention_out", torch.from_numpy(out), e_out, q.dtype, reduce_len)
        assert_close(f"{impl} softmax_lse", torch.from_numpy(lse).reshape(e_lse.shape), e_lse, torch.float32,
                     reduce_len)


@pytest.mark.parametrize("rule", [2, 3])
def test_cann_inner_alibi(rule):
    """aclnnFusedInferAttentionScoreV5's pseType 2 / 3 (alibi_rule): the distance from the start indices, the
    same for every batch, on decode (contiguous and paged, GQA) and prompt (causal, per-batch lengths); a check
    that the start indices are read (the bottom-right rule's output differs)."""
    b, n1, n2, d = 2, 8, 2, 16
    slopes = _slopes(b, n1, 90, False)
    cann = dict(alibi_slopes=slopes, alibi_rule=rule, alibi_q_start_idx=36, alibi_kv_start_idx=0)
    q, k, v = _qkv("BSND", b, n1, n2, 1, 37, d, torch.float32, seed=91)
    base = dict(input_layout="BSND", num_heads=n1, num_key_value_heads=n2, scale=0.5, actual_seq_lengths_kv=[37, 12])
    _check_numpy(q, k, v, 37, **base, **cann)
    kc, vc, table = _paged(*_qkv("BNSD", b, n1, n2, 1, 40, d, torch.float16, seed=92)[1:], 8, [40, 17], 3, seed=93)
    qd = _qkv("BNSD", b, n1, n2, 1, 40, d, torch.float16, seed=94)[0]
    _check_numpy(qd, kc, vc, 40, input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.5,
                 block_table=table, block_size=8, actual_seq_lengths_kv=[40, 17], **cann)
    q, k, v = _qkv("BNSD", b, n1, n2, 9, 30, d, torch.float32, seed=95)  # 9 rows of G = 4: the tile GEMMs
    causal = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    prompt = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.5, sparse_mode=3,
                  atten_mask=causal, actual_seq_lengths=[9, 4], actual_seq_lengths_kv=[30, 11])
    shifted = dict(cann, alibi_q_start_idx=10, alibi_kv_start_idx=25)  # the distance changes sign in the rows
    _check_numpy(q, k, v, 30, **prompt, **shifted)
    # a longer prompt without per-batch lengths: the FlashAttention route, FA's pse_type 2 / 3
    qb, kb, vb = _qkv("BSND", b, n1, n2, 24, 40, d, torch.float32, seed=96)
    _check_numpy(qb, kb, vb, 40, input_layout="BSND", num_heads=n1, num_key_value_heads=n2, scale=0.5, sparse_mode=3,
                 atten_mask=causal, **shifted)
    bottom_right, _ = oracle(q, k, v, **prompt, alibi_slopes=slopes)
    out, _ = _fia.fused_infer_attention_score(q.numpy(), k.numpy(), v.numpy(), **prompt, **shifted)
    with pytest.raises(AssertionError):
        assert_close("attention_out", torch.from_numpy(out), bottom_right, q.dtype, 30)


def _refused(words, status, q, k, v, **kw):
    """The library's refusal, through the numpy binding into outputs given (NaN before, NaN after)."""
    np_kw = {name: t.numpy() if isinstance(t, torch.Tensor) else t for name, t in kw.items()}
    qn, kn, vn = (t.numpy() for t in (q, k, v))
    try:
        shape = _fia.output_shapes(qn, kn, vn, kw.get("input_layout", "BSH"), kw.get("num_heads", 1),
                                   np_kw.get("block_table"))[0]
    except _lib.AttnopsError:  # inputs whose shapes the library refuses: the call refuses them before any output
        shape = (1,)
    out = np.full(shape, math.nan, dtype=qn.dtype)
    lse = np.full((1,), math.nan, np.float32)
    with pytest.raises(_lib.AttnopsError) as exc:
        _fia.fused_infer_attention_score(qn, kn, vn, out=(out, lse), **np_kw)
    msg = str(exc.value).rsplit(" [", 1)[0]  # the library's sentence, before " [STATUS number]"
    assert exc.value.status == status, msg
    assert msg.startswith("FusedInferAttentionScore: ") and msg.endswith(".") and all(w in msg for w in words), msg
    assert np.isnan(out).all() and np.isnan(lse).all(), "an output was written"


def test_invalid_arguments_are_refused_and_nothing_written():
    q, k, v = _qkv("BNSD", 2, 4, 2, 1, 8, 16, torch.float16, seed=17)
    inv = _lib.ERR_PARAM_INVALID
    base = dict(input_layout="BNSD", num_heads=4, num_key_value_heads=2)
    _refused(["num_key_value_heads", "4"], inv, q, k, v, input_layout="BNSD", num_heads=4, num_key_value_heads=4)
    _refused(["num_heads = 4", "3"], inv, q, k[:, :1].repeat(1, 3, 1, 1), v[:, :1].repeat(1, 3, 1, 1),
             input_layout="BNSD", num_heads=4, num_key_value_heads=3)
    _refused(["sparse_mode", "5"], inv, q, k, v, sparse_mode=5, **base)
    _refused(["actual_seq_lengths_kv[1] = 9", "[0, 8]"], inv, q, k, v, actual_seq_lengths_kv=[8, 9], **base)
    kc, vc, table = _paged(k.clone(), v.clone(), 4, [8, 5], 4, seed=18)
    table[1, 1] = kc.shape[0]
    _refused(["block_table[1][1]", "is not a block"], inv, q, kc, vc, block_table=table, block_size=4,
             actual_seq_lengths_kv=[8, 5], **base)
    _refused(["actual_seq_lengths_kv", "block_table"], _lib.ERR_NULLPTR, q, kc, vc, block_table=table, block_size=4,
             **base)
    _refused(["impl is 3", "no benchmark chain"], inv, q, k, v, impl="benchmark", **base)
    with pytest.raises(ValueError, match="input_layout is 'SBH'"):
        _call(q, k, v, input_layout="SBH", num_heads=4)
    _refused(["inner_precise is 2", "decode"], inv, q, k, v, inner_precise=2, **base)
    for cap, shown in ((-1.0, "-1"), (math.nan, "nan"), (math.inf, "inf")):
        _refused([f"softcap is {shown}", "0 (off) or positive"], inv, q, k, v, softcap=cap, **base)
    _refused(["'alibi_slopes' has dtype f16", "f32"], inv, q, k, v, alibi_slopes=torch.ones(4).half(), **base)
    _refused(["alibi_slopes has shape [1, 4]", "[N1 = 4] or [B = 2, N1]"], inv, q, k, v,
             alibi_slopes=torch.ones(1, 4), **base)
    qp, kp, vp = _qkv("BNSD", 2, 4, 2, 5, 8, 16, torch.float16, seed=17)  # the prompt branch
    _refused(["alibi_slopes has shape [8]", "[N1 = 4]"], inv, qp, kp, vp, alibi_slopes=torch.ones(8), **base)
    _refused(["softcap is -0.5"], inv, qp, kp, vp, softcap=-0.5, **base)
    _refused(["alibi_rule is 1", "0 (bottom-right), 2 or 3"], inv, q, k, v, alibi_slopes=torch.ones(4), alibi_rule=1,
             **base)
    _refused(["alibi_rule is 2 but alibi_slopes is NULL"], _lib.ERR_NULLPTR, q, k, v, alibi_rule=2, **base)
    _refused(["alibi_kv_start_idx 1048577", "2^20"], inv, q, k, v, alibi_slopes=torch.ones(4), alibi_rule=3,
             alibi_kv_start_idx=1 << 20 | 1, **base)


def test_check_fails_on_a_wrong_rule():
    """The comparison catches a wrong rule: the oracle with mode 2 against the golden's mode 3."""
    q, k, v = _qkv("BNSD", 1, 2, 2, 6, 9, 8, torch.float32, seed=19)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    out, _ = _run(q, k, v, input_layout="BNSD", num_heads=2, sparse_mode=3, atten_mask=mask)
    e_out, _ = oracle(q, k, v, input_layout="BNSD", num_heads=2, sparse_mode=2, atten_mask=mask)
    with pytest.raises(AssertionError):
        assert_close("attention_out", out, e_out, q.dtype, 9)


@pytest.mark.parametrize("keys", [1, 127, 128, 129, 511, 512, 513, 1100])
@pytest.mark.parametrize("paged", [False, True])
def test_fast_kernel_across_tile_and_split_boundaries(keys, paged):
    """Key counts one below, at and above the kernel's tile (128) and split (512) sizes, decode and a short
    prompt, contiguous and paged (block 16): the fast kernel against the oracle (in _check).  G = 4: one and
    three rows take the few-row kernels on the cache in place (blocks of <= 16 rows), five the tile GEMMs."""
    causal = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    for s1, kw in ((1, {}), (3, dict(sparse_mode=3, atten_mask=causal)), (5, dict(sparse_mode=3, atten_mask=causal))):
        q, k, v = _qkv("BNSD", 2, 8, 2, s1, keys, 32, torch.bfloat16, seed=keys + s1)
        lens = [keys, max(keys // 2, 1)]
        if paged:
            kc, vc, table = _paged(k, v, 16, lens, 4, seed=keys)
            kw = dict(kw, block_table=table, block_size=16)
            k, v = kc, vc
        _check(q, k, v, keys, input_layout="BNSD", num_heads=8, num_key_value_heads=2, scale=0.2,
               actual_seq_lengths_kv=lens, **kw)


def test_fast_kernel_bits_do_not_depend_on_threads():
    q, k, v = _qkv("BSND", 1, 8, 1, 1, 3000, 64, torch.float16, seed=20)
    runs = [_call(q, k, v, input_layout="BSND", num_heads=8, num_key_value_heads=1, softmax_lse_flag=True, impl="cpu",
                  num_threads=t) for t in (1, 2, 3)]
    for out, lse in runs[1:]:
        assert torch.equal(out, runs[0][0]) and torch.equal(lse, runs[0][1])


def test_torch_npu_entry_points_and_opcheck():
    """npu_fused_infer_attention_score (op-plugin 7.1.0's schema), npu_incre_flash_attention (its
    actual_seq_lengths are kv lengths) and npu_prompt_flash_attention (sparse_mode 13 = 3 at high
    precision) give the operator's results; the torch.library op passes opcheck (its fake included)."""
    from attnops import torch_npu
    q, k, v = _qkv("BSH", 2, 4, 2, 1, 30, 16, torch.float16, seed=21)
    want, want_lse = _call(q, k, v, num_heads=4, num_key_value_heads=2, scale=0.25, actual_seq_lengths_kv=[30, 12],
                           softmax_lse_flag=True)
    out, lse = torch_npu.npu_fused_infer_attention_score(q, [k], [v], num_heads=4, num_key_value_heads=2, scale=0.25,
                                                         actual_seq_lengths_kv=[30, 12], softmax_lse_flag=True)
    assert torch.equal(out, want) and torch.equal(lse, want_lse)
    inc = torch_npu.npu_incre_flash_attention(q, k, v, num_heads=4, num_key_value_heads=2, scale_value=0.25,
                                              actual_seq_lengths=[30, 12])
    assert torch.equal(inc, want)
    qp, kp, vp = _qkv("BNSD", 1, 2, 2, 6, 9, 8, torch.float32, seed=22)
    causal = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    prompt = torch_npu.npu_prompt_flash_attention(qp, kp, vp, num_heads=2, input_layout="BNSD", atten_mask=causal,
                                                  sparse_mode=13)
    e_out, _ = oracle(qp, kp, vp, input_layout="BNSD", num_heads=2, sparse_mode=3, atten_mask=causal)
    assert_close("prompt", prompt, e_out, torch.float32, 9)
    with pytest.raises(NotImplementedError, match="quant_scale2"):
        torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=4, quant_scale2=torch.ones(1))
    torch.library.opcheck(torch.ops.attnops.fused_infer_attention_score.default, (q, k, v),
                          dict(num_heads=4, num_key_value_heads=2, actual_seq_lengths_kv=torch.tensor([30, 12]),
                               softmax_lse_flag=True))


def _int8_kv(b, n2, s2, d, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-128, 128, (b, n2, s2, d), generator=g, dtype=torch.int8),
            torch.randint(-128, 128, (b, n2, s2, d), generator=g, dtype=torch.int8))


@pytest.mark.parametrize("modes", [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1)])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("s1", [1, 5])
def test_int8_kv_separate_modes(modes, paged, s1):
    """Decode (the few-row kernels, dequantisation folded around them) and five rows of G = 4 (the tile GEMMs
    on rows dequantised as they are widened)."""
    b, n1, n2, s2, d = 2, 8, 2, 300, 16  # 300 keys: three tiles, so the per-tile rescaling is in play
    g = torch.Generator().manual_seed(30)
    q = torch.randn(b, n1, s1, d, generator=g).to(torch.bfloat16)
    k, v = _int8_kv(b, n2, s2, d, 31)
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, key_antiquant_mode=modes[0],
              value_antiquant_mode=modes[1], actual_seq_lengths_kv=[300, 141])
    positions = s2
    if paged:
        k, v, table = _paged(k, v, 16, [300, 141], 4, seed=32)
        kw.update(block_table=table, block_size=16)
        positions = table.shape[1] * 16  # per-token parameters cover the table's capacity
    shapes = {0: (1, n2, 1, d), 1: (1, b, positions + 3), 2: (n2,), 3: (b, n2, positions + 3)}
    dtypes = {0: torch.bfloat16, 1: torch.float32, 2: torch.bfloat16, 3: torch.float32}
    for which, mode in (("key", modes[0]), ("value", modes[1])):
        kw[f"{which}_antiquant_scale"] = (torch.rand(shapes[mode], generator=g) * 0.02 + 0.001).to(dtypes[mode])
        kw[f"{which}_antiquant_offset"] = (torch.randn(shapes[mode], generator=g) * 64).to(dtypes[mode])
    _check(q, k, v, s2, **kw)


def test_int8_kv_combined_and_refusals():
    b, n1, n2, s2, d = 2, 4, 4, 30, 8
    g = torch.Generator().manual_seed(33)
    q = torch.randn(b, 1, n1 * d, generator=g).half()
    k, v = _int8_kv(b, n2, s2, d, 34)
    k, v = k.transpose(1, 2).reshape(b, s2, n2 * d), v.transpose(1, 2).reshape(b, s2, n2 * d)  # BSH
    for mode, shape, dt in ((0, (2, n2 * d), torch.float16), (0, (2,), torch.float16), (1, (2, b, s2), torch.float32)):
        scale = (torch.rand(shape, generator=g) * 0.02 + 0.001).to(dt)
        offset = torch.randn(shape, generator=g).to(dt)
        _check(q, k, v, s2, num_heads=n1, antiquant_scale=scale, antiquant_offset=offset, antiquant_mode=mode)
    base = dict(num_heads=n1)
    _refused(["antiquant scales", "int8"], _lib.ERR_NULLPTR, q, k, v, **base)
    _refused(["antiquant scales are given", "f16"], _lib.ERR_PARAM_INVALID, q, q.repeat(1, 5, 1)[:, :s2], q.repeat(
        1, 5, 1)[:, :s2], key_antiquant_scale=torch.ones(1), value_antiquant_scale=torch.ones(1), **base)
    _refused(["key antiquant scale", "[3]", "mode 0"], _lib.ERR_PARAM_INVALID, q, k, v,
             key_antiquant_scale=torch.ones(3), value_antiquant_scale=torch.ones(1), **base)
    _refused(["key_antiquant_mode 1 with value_antiquant_mode 0"], _lib.ERR_PARAM_INVALID, q, k, v,
             key_antiquant_scale=torch.ones(1, b, s2), value_antiquant_scale=torch.ones(1), key_antiquant_mode=1,
             **base)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_prompt_runs_on_the_flashattention_forward(layout):
    """A dense or causal prompt (no mask; sparse mode 2; 3 with S2 >= S1) over a contiguous float cache, with more
    rows than one query block of the split-KV kernel (64), runs on the FlashAttention forward: its output is that
    operator's bit for bit and its lse max + ln sum of that operator's statistics; both are the oracle's (in
    _check).  Per-batch lengths keep it on the split-KV kernel (still the oracle's)."""
    from attnops import ops
    causal = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    q, k, v = _qkv(layout, 2, 8, 2, 40, 64, 32, torch.bfloat16, seed=80)
    for mode in (0, 2, 3):
        masks = dict(sparse_mode=mode, atten_mask=causal) if mode else {}
        kw = dict(input_layout=layout, num_heads=8, num_key_value_heads=2, scale=0.2, **masks)
        out, lse = _check(q, k, v, 64, **kw)
        fast, fast_lse = _call(q, k, v, impl="cpu", softmax_lse_flag=True, **kw)
        fa_out, smax, ssum = ops.flash_attention_score(q, k, v, 8, layout, scale=0.2, **masks)
        assert torch.equal(fast, fa_out), f"mode {mode}: not the FlashAttention forward's output"
        want = (smax[..., 0].double() + ssum[..., 0].double().log()).float()
        assert torch.equal(fast_lse.reshape(want.shape), want), f"mode {mode}: lse is not max + ln sum"
    _check(q, k, v, 64, input_layout=layout, num_heads=8, num_key_value_heads=2, scale=0.2,
           actual_seq_lengths=[40, 17], actual_seq_lengths_kv=[64, 33])
    # softcap and ALiBi go with it: FA's softcap, its pse_type 2 with the starts of the bottom-right distance
    slopes = _slopes(2, 8, 81, True)
    for mode in (0, 3):
        masks = dict(sparse_mode=mode, atten_mask=causal) if mode else {}
        kw = dict(input_layout=layout, num_heads=8, num_key_value_heads=2, scale=0.2, softcap=2.0, **masks)
        _check(q, k, v, 64, alibi_slopes=slopes, **kw)
        fast, _ = _call(q, k, v, impl="cpu", alibi_slopes=slopes, **kw)
        fa_out, _, _ = ops.flash_attention_score(q, k, v, 8, layout, scale=0.2, softcap=2.0, pse=slopes,
                                                 pse_type=2, q_start_idx=[24], kv_start_idx=[0], **masks)
        assert torch.equal(fast, fa_out), f"mode {mode} with softcap and ALiBi: not the FlashAttention forward's"


def test_empty_mask_and_pse_are_absent_as_on_the_device():
    """The device's fallback (docs/NUMERICS.md): an atten_mask or pse_shift with no elements is no mask / no
    bias (IncreFlashAttention warns and drops it, PromptFlashAttention skips it); a sparse mode that needs a mask
    still refuses an empty one.  The warning comes once per process (a fresh one here)."""
    import subprocess
    import sys
    script = (
        "import torch\n"
        "from attnops import ops\n"
        "q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, 30, 16), torch.randn(2, 4, 30, 16)\n"
        "kw = dict(num_heads=4, input_layout='BNSD', scale=0.25)\n"
        "plain = ops.fused_infer_attention_score(q, k, v, **kw)[0]\n"
        "for _ in range(3):\n"
        "    got = ops.fused_infer_attention_score(q, k, v, atten_mask=torch.zeros(2, 0, dtype=torch.bool),\n"
        "                                          pse_shift=torch.zeros(2, 4, 1, 0), **kw)[0]\n"
        "    assert torch.equal(got, plain)\n"
        "qp = torch.randn(2, 4, 5, 16)\n"
        "try:\n"
        "    ops.fused_infer_attention_score(qp, k, v, atten_mask=torch.zeros(0, 0, dtype=torch.bool), sparse_mode=3,\n"
        "                                    **kw)\n"
        "except ValueError as e:\n"
        "    assert 'atten_mask' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('sparse_mode 3 with an empty mask must be refused')\n"
        "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("attnops: warning:")]
    assert len(warnings) == 2 and "atten_mask has no elements" in warnings[0] and "pse_shift" in warnings[1], \
        run.stderr
