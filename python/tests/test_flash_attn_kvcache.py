"""attnops.flash_attn.flash_attn_with_kvcache against the tests' own float64 statement of flash-attn 2.x's
semantics (docs/FIA_SPEC.md section 4; written here, never calling attnops): the in-place append,
rotary on q and the new k, contiguous and paged caches (shuffled pages), cache_batch_idx, cache_leftpad,
causal and local windows (bottom-right), GQA, softmax_lse, softcap and ALiBi; and a decode loop that appends one
token per step, compared at every step with full causal attention over the same history."""
import math

import pytest
import torch

from attnops._lib import AttnopsError
from attnops.flash_attn import flash_attn_with_kvcache
from checks import assert_close


def rotate(x, cos, sin, pos, interleaved):
    """Rotary of x (B, S, H, D) at positions pos (B, S), the first 2 cos.shape[1] dims, in float32 as
    flash-attn's kernel computes it (then rounded to x's dtype by the caller)."""
    rd = 2 * cos.shape[1]
    x = x.float().clone()
    c, s = cos.float()[pos][:, :, None], sin.float()[pos][:, :, None]
    if interleaved:
        a, b = x[..., 0:rd:2].clone(), x[..., 1:rd:2].clone()
        x[..., 0:rd:2], x[..., 1:rd:2] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., :rd // 2].clone(), x[..., rd // 2:rd].clone()
        x[..., :rd // 2], x[..., rd // 2:rd] = a * c - b * s, b * c + a * s
    return x


def reference(q, k_rows, v_rows, scale, causal, window, softcap=0.0, slopes=None):
    """float64 attention of q (Sq, H, D) over keys (Sk, Hk, D) with flash-attn's bottom-right masks, softcap
    (s = softcap tanh(s / softcap) on the scaled scores) and ALiBi (slopes [H]: -slope |i + Sk - Sq - j|, the
    documented bias, added after the cap); a row with no key gives out 0 and lse +inf."""
    sq, h, _ = q.shape
    sk, hk = k_rows.shape[0], k_rows.shape[1]
    g = h // hk
    k, v = k_rows.double().repeat_interleave(g, 1), v_rows.double().repeat_interleave(g, 1)
    s = torch.einsum("ihd,jhd->hij", q.double(), k) * scale
    i, j = torch.arange(sq)[:, None], torch.arange(sk)[None, :]
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if slopes is not None:
        s = s - slopes.double()[:, None, None] * (i + sk - sq - j).abs()
    left, right = window
    right = 0 if causal else right
    keep = torch.ones(sq, sk, dtype=torch.bool)
    if left >= 0:
        keep &= j >= i + sk - sq - left
    if right >= 0:
        keep &= j <= i + sk - sq + right
    s = s.masked_fill(~keep, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    out = torch.einsum("hij,jhd->ihd", p, v)
    return out, torch.where(torch.isfinite(lse), lse, torch.full_like(lse, math.inf))


def _paged(cache, page, seed):
    """cache (B, S, Hk, D) as shuffled pages (num_blocks, page, Hk, D) and its block table."""
    b, s, hk, d = cache.shape
    cols = -(-s // page)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(b * cols + 1, generator=g)
    blocks = torch.zeros(b * cols + 1, page, hk, d, dtype=cache.dtype)
    table = perm[:b * cols].reshape(b, cols).int()
    for bi in range(b):
        for c in range(cols):
            rows = cache[bi, c * page:(c + 1) * page]
            blocks[table[bi, c], :rows.shape[0]] = rows
    return blocks, table


@pytest.mark.parametrize("extensions", [False, True])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("sq,causal,window", [(1, False, (-1, -1)), (3, True, (-1, -1)), (4, False, (2, 1)),
                                              (1, True, (5, 0))])
def test_append_rotary_and_attend(paged, interleaved, sq, causal, window, extensions):
    """extensions: softcap and ALiBi slopes (B, H); (1, True, (5, 0)) is a sliding-window decode step, whose keys
    the wrapper trims from the front."""
    torch.manual_seed(0)
    b, h, hk, d, cap, s_new, dtype = 3, 8, 2, 32, 64, sq, torch.bfloat16  # the queries are the new tokens
    q = torch.randn(b, sq, h, d, dtype=dtype)
    k_cache = torch.randn(b, cap, hk, d, dtype=dtype)
    v_cache = torch.randn(b, cap, hk, d, dtype=dtype)
    k_new, v_new = torch.randn(b, s_new, hk, d, dtype=dtype), torch.randn(b, s_new, hk, d, dtype=dtype)
    seqlens = torch.tensor([40, 0, 60], dtype=torch.int32)
    cos, sin = torch.randn(cap, 8), torch.randn(cap, 8)
    kw = dict(rotary_cos=cos, rotary_sin=sin, cache_seqlens=seqlens, causal=causal, window_size=window,
              rotary_interleaved=interleaved, return_softmax_lse=True)
    softcap, slopes = (2.0, torch.rand(b, h) * 0.5 + 0.05) if extensions else (0.0, None)
    if extensions:
        kw.update(softcap=softcap, alibi_slopes=slopes)
    if paged:
        kc, table = _paged(k_cache, 16, 1)
        vc, _ = _paged(v_cache, 16, 1)
        out, lse = flash_attn_with_kvcache(q, kc, vc, k_new, v_new, block_table=table, **kw)
        rows = lambda cache, bi, n: cache[table[bi, torch.arange(n) // 16].long(), torch.arange(n) % 16]  # noqa
        got_k, got_v = kc, vc
    else:
        out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, k_new, v_new, **kw)
        rows = lambda cache, bi, n: cache[bi, :n]  # noqa: E731
        got_k, got_v = k_cache, v_cache
    for bi in range(b):
        start = int(seqlens[bi])
        pos = start + torch.arange(s_new)[None]
        k_rot = rotate(k_new[bi:bi + 1], cos, sin, pos, interleaved)[0]
        n = start + s_new
        # the append: the new rows (k rotated, rounded to the cache dtype), the history untouched
        assert torch.equal(rows(got_k, bi, n)[start:], k_rot.to(dtype))
        assert torch.equal(rows(got_v, bi, n)[start:], v_new[bi])
        q_pos = start + (torch.arange(sq) if causal or window != (-1, -1) else torch.zeros(sq, dtype=torch.long))
        q_rot = rotate(q[bi:bi + 1], cos, sin, q_pos[None], interleaved)[0].to(dtype)
        e_out, e_lse = reference(q_rot, rows(got_k, bi, n), rows(got_v, bi, n), d ** -0.5, causal, window, softcap,
                                 slopes[bi] if extensions else None)
        assert_close(f"out[{bi}]", out[bi], e_out, dtype, n)
        inf = torch.isinf(e_lse)
        assert torch.equal(torch.isinf(lse[bi]), inf)
        assert_close(f"lse[{bi}]", lse[bi][~inf], e_lse[~inf], torch.float32, n)


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("sq,causal", [(1, False), (3, True)])
def test_decode_step_takes_flash_attn_forms(paged, sq, causal):
    """A step without an append goes to the op as flash-attn's arguments are (python/csrc's flash_attn_kvcache
    reads their forms): cache_seqlens int32, int64, int16 or (B, 1), or None (every row; paged: every page of
    the table), an int64 block_table, the default scale; against the float64 statement; a wrong number of
    lengths, a float length and a table id int32 cannot hold are refused with a sentence, a length beyond the cache
    with the library's AttnopsError."""
    g = torch.Generator().manual_seed(90)
    b, h, hk, d, cap = 2, 4, 2, 16, 24
    q = torch.randn(b, sq, h, d, generator=g)
    k_cache, v_cache = torch.randn(b, cap, hk, d, generator=g), torch.randn(b, cap, hk, d, generator=g)
    lens = torch.tensor([9, 24], dtype=torch.int32)
    kw = dict(block_table=None)
    if paged:
        kc, table = _paged(k_cache, 8, 91)
        vc, _ = _paged(v_cache, 8, 91)
        kw = dict(block_table=table.long())
    else:
        kc, vc = k_cache, v_cache
    for form in (lens, lens.long(), lens.short(), lens[:, None], None):
        out, lse = flash_attn_with_kvcache(q, kc, vc, cache_seqlens=form, causal=causal, return_softmax_lse=True,
                                           **kw)
        for bi in range(b):
            n = cap if form is None else int(lens[bi])
            e_out, e_lse = reference(q[bi], k_cache[bi, :n], v_cache[bi, :n], d ** -0.5, causal, (-1, -1))
            assert_close(f"out[{bi}] {None if form is None else form.dtype}", out[bi], e_out, torch.float32, n)
            assert_close(f"lse[{bi}]", lse[bi], e_lse, torch.float32, n)
    with pytest.raises(ValueError, match="cache_seqlens has 3 values; it must have batch = 2"):
        flash_attn_with_kvcache(q, kc, vc, cache_seqlens=torch.tensor([1, 2, 3]), **kw)
    with pytest.raises(TypeError, match="cache_seqlens has dtype torch.float32; it must be an integer dtype"):
        flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens.float() + 0.5, **kw)
    if paged:  # an id int32 cannot hold is refused, not wrapped onto another block (2**32 + 1 would be 1)
        wrapped = kw["block_table"].clone()
        wrapped[0, 0] += 2 ** 32
        with pytest.raises(ValueError, match="block_table \\(torch.int64\\) holds a block id outside int32"):
            flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, block_table=wrapped)
        with pytest.raises(TypeError, match="block_table has dtype torch.float32"):
            flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, block_table=kw["block_table"].float())
    with pytest.raises(AttnopsError) as exc:  # the library's refusal, with its status
        flash_attn_with_kvcache(q, kc, vc, cache_seqlens=torch.tensor([1, cap + 1]), **kw)
    assert exc.value.status == 161002 and isinstance(exc.value, ValueError)


def test_cache_batch_idx_and_leftpad():
    torch.manual_seed(1)
    b, h, hk, d, cap = 2, 4, 4, 16, 30
    q = torch.randn(b, 1, h, d)
    k_cache, v_cache = torch.randn(3, cap, hk, d), torch.randn(3, cap, hk, d)
    idx = torch.tensor([2, 0], dtype=torch.int32)
    seqlens = torch.tensor([20, 30], dtype=torch.int32)
    leftpad = torch.tensor([5, 0], dtype=torch.int32)
    out = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, cache_batch_idx=idx,
                                  cache_leftpad=leftpad)
    for bi in range(b):
        c, lo, hi = int(idx[bi]), int(leftpad[bi]), int(seqlens[bi])
        e_out, _ = reference(q[bi], k_cache[c, lo:hi], v_cache[c, lo:hi], d ** -0.5, False, (-1, -1))
        assert_close(f"out[{bi}]", out[bi], e_out, torch.float32, hi - lo)


@pytest.mark.parametrize("sq,causal,window", [(1, False, (-1, -1)), (1, False, (6, -1)), (3, True, (-1, -1)),
                                              (3, False, (4, 1))])
def test_leftpad_and_window_with_softcap_and_alibi(sq, causal, window):
    """A left pad and a decode window drop keys from the front of the cache (the wrapper's row table): the ALiBi
    distances stay bottom-right over the attended keys, as flash-attn's kernel (which moves the key pointer by the
    pad) has them.  Against the float64 statement over cache rows [leftpad, seqlen), slopes (H,)."""
    torch.manual_seed(3)
    b, h, hk, d, cap = 3, 4, 2, 16, 40
    q = torch.randn(b, sq, h, d)
    k_cache, v_cache = torch.randn(4, cap, hk, d), torch.randn(4, cap, hk, d)
    idx = torch.tensor([3, 0, 1], dtype=torch.int32)
    seqlens = torch.tensor([30, 40, 12], dtype=torch.int32)
    leftpad = torch.tensor([7, 0, 2], dtype=torch.int32)
    slopes = torch.rand(h) * 0.5 + 0.05
    out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=seqlens, cache_batch_idx=idx,
                                       cache_leftpad=leftpad, causal=causal, window_size=window, softcap=3.0,
                                       alibi_slopes=slopes, return_softmax_lse=True)
    for bi in range(b):
        c, lo, hi = int(idx[bi]), int(leftpad[bi]), int(seqlens[bi])
        e_out, e_lse = reference(q[bi], k_cache[c, lo:hi], v_cache[c, lo:hi], d ** -0.5, causal, window, 3.0, slopes)
        assert_close(f"out[{bi}]", out[bi], e_out, torch.float32, hi - lo)
        assert_close(f"lse[{bi}]", lse[bi], e_lse, torch.float32, hi - lo)


def test_decode_loop_matches_full_attention():
    """A prompt of 5 tokens, then 20 decode steps of one token each, over a paged cache: every step's output is
    causal attention of its query over the whole history (float64, computed here)."""
    torch.manual_seed(2)
    h, hk, d, total, page = 4, 2, 16, 25, 8
    qs, ks, vs = (torch.randn(total, n, d, dtype=torch.float16) for n in (h, hk, hk))
    blocks = 4
    k_cache = torch.zeros(blocks + 1, page, hk, d, dtype=torch.float16)
    v_cache = torch.zeros_like(k_cache)
    table = torch.tensor([[3, 0, 4, 1]], dtype=torch.int32)
    length = 0
    for step, n in enumerate([5] + [1] * 20):
        sl = slice(length, length + n)
        out = flash_attn_with_kvcache(qs[None, sl], k_cache, v_cache, ks[None, sl], vs[None, sl],
                                      cache_seqlens=torch.tensor([length], dtype=torch.int32), block_table=table,
                                      causal=True)
        length += n
        e_out, _ = reference(qs[sl], ks[:length], vs[:length], d ** -0.5, True, (-1, -1))
        assert_close(f"step {step}", out[0], e_out, torch.float16, length)


def test_refusals():
    q, kc = torch.randn(1, 1, 2, 8), torch.randn(1, 4, 2, 8)
    with pytest.raises(TypeError, match="alibi_slopes must be float32"):
        flash_attn_with_kvcache(q, kc, kc, alibi_slopes=torch.ones(2, dtype=torch.float64))
    cache, new = torch.zeros(1, 4, 2, 8), torch.ones(1, 1, 2, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="share one dtype"):
        flash_attn_with_kvcache(q, cache, cache, new, new, cache_seqlens=0)
    assert not cache.any(), "a refused call appended to the cache"
    with pytest.raises(ValueError, match="exceed the cache"):
        flash_attn_with_kvcache(q, kc, kc.clone(), torch.randn(1, 2, 2, 8), torch.randn(1, 2, 2, 8),
                                cache_seqlens=3)


@pytest.mark.parametrize("extensions", [False, True])
@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (3, 2))])
def test_varlen_func_over_a_paged_cache(causal, window, extensions):
    """flash_attn_varlen_func with block_table (paged prefill): each sequence's queries against its keys read
    through the table, flash-attn's bottom-right masks, GQA, softcap and ALiBi; against the float64 statement
    per sequence."""
    from attnops.flash_attn import flash_attn_varlen_func
    g = torch.Generator().manual_seed(60)
    lens_q, lens_k, h, hk, d, page = [5, 1, 7], [9, 20, 7], 4, 2, 16, 4
    cache = torch.randn(3, 20, hk, d, generator=g).bfloat16()
    vcache = torch.randn(3, 20, hk, d, generator=g).bfloat16()
    kb, table = _paged(cache, page, seed=61)
    vb, _ = _paged(vcache, page, seed=61)
    q = torch.randn(sum(lens_q), h, d, generator=g).bfloat16()
    cu = lambda x: torch.tensor([0] + list(torch.tensor(x).cumsum(0)), dtype=torch.int32)  # noqa: E731
    ext = dict(softcap=1.5, alibi_slopes=torch.rand(h, generator=g) * 0.5) if extensions else {}
    out = flash_attn_varlen_func(q, kb, vb, cu(lens_q), cu(lens_k), max(lens_q), max(lens_k), causal=causal,
                                 window_size=window, block_table=table, **ext)
    first = 0
    for b, (lq, lk) in enumerate(zip(lens_q, lens_k)):
        want, _ = reference(q[first:first + lq], cache[b, :lk], vcache[b, :lk], d ** -0.5, causal, window,
                            ext.get("softcap", 0.0), ext.get("alibi_slopes"))
        assert_close(f"sequence {b}", out[first:first + lq], want, torch.bfloat16, lk)
        first += lq
    with pytest.raises(NotImplementedError, match="dropout_p"):
        flash_attn_varlen_func(q, kb, vb, cu(lens_q), cu(lens_k), 7, 20, dropout_p=0.1, block_table=table)
    with pytest.raises(ValueError, match="same batch"):
        flash_attn_varlen_func(q, kb, vb, cu(lens_q), cu(lens_k), 7, 20, block_table=table[:2])


@pytest.mark.parametrize("paged", [False, True])
def test_decode_steps_compile_fullgraph(paged):
    """A decode step (append k/v at cache_seqlens with rotary, attend causally) under torch.compile with
    fullgraph=True: no graph break (the lengths stay tensors, the append is the caches' index_put_ mutation),
    and three steps give eager's outputs and caches (to f32 rounding: inductor computes the rotary itself)."""
    g = torch.Generator().manual_seed(70)
    b, h, hk, d, cap = 2, 4, 2, 16, 24
    cache = torch.zeros(b, cap, hk, d)
    page = 8
    cos, sin = torch.randn(cap, d // 4, generator=g), torch.randn(cap, d // 4, generator=g)

    def step(q, k, v, k_cache, v_cache, seqlens, table):
        return flash_attn_with_kvcache(q, k_cache, v_cache, k, v, rotary_cos=cos, rotary_sin=sin,
                                       cache_seqlens=seqlens, block_table=table, causal=True)

    compiled = torch.compile(step, fullgraph=True)
    caches = {}
    for mode in ("eager", "compiled"):
        if paged:
            k_cache, table = _paged(cache, page, seed=71)
            v_cache = k_cache.clone()
        else:
            k_cache, v_cache, table = cache.clone(), cache.clone(), None
        seqlens = torch.tensor([3, 7], dtype=torch.int32)
        outs = []
        gs = torch.Generator().manual_seed(72)
        for _ in range(3):
            q = torch.randn(b, 1, h, d, generator=gs)
            k, v = torch.randn(b, 1, hk, d, generator=gs), torch.randn(b, 1, hk, d, generator=gs)
            outs.append((step if mode == "eager" else compiled)(q, k, v, k_cache, v_cache, seqlens, table))
            seqlens = seqlens + 1
        caches[mode] = (outs, k_cache, v_cache)
    (eo, ek, ev), (co, ck, cv) = caches["eager"], caches["compiled"]
    for i, (x, y) in enumerate(zip(co, eo)):
        assert_close(f"step {i}", x, y, torch.float32, cap)
    assert_close("k_cache", ck, ek, torch.float32, d)
    assert torch.equal(cv, ev) and ek.abs().sum() > 0  # v is copied, not computed


def test_flash_attn_kvcache_op_is_fused_infer_attention_score():
    """torch.ops.attnops.flash_attn_kvcache (flash_attn_with_kvcache's attention with flash-attn's arguments)
    gives fused_infer_attention_score's bits for a contiguous and a paged cache, masks, softcap, ALiBi and the
    lse; opcheck (its fake); a one-row query with a left window and a 3-D q are refused with a sentence."""
    g = torch.Generator().manual_seed(80)
    b, h, hk, d, cap, sq = 2, 4, 2, 16, 24, 3
    q = torch.randn(b, sq, h, d, generator=g)
    kc, vc = torch.randn(b, cap, hk, d, generator=g), torch.randn(b, cap, hk, d, generator=g)
    lens = torch.tensor([10, 24], dtype=torch.int32)
    slopes = torch.rand(h, generator=g)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    fia = torch.ops.attnops.fused_infer_attention_score
    op = torch.ops.attnops.flash_attn_kvcache
    pk, table = _paged(kc, 8, 81)
    pv, _ = _paged(vc, 8, 81)
    base = dict(actual_seq_lengths_kv=lens, num_heads=h, num_key_value_heads=hk, input_layout="BSND",
                softmax_lse_flag=True)
    cases = [(dict(), dict(scale=d ** -0.5)),
             (dict(causal=True, softmax_scale=0.3), dict(scale=0.3, atten_mask=mask, sparse_mode=3, next_tokens=0)),
             (dict(window_left=2, window_right=1, softcap=1.5, alibi_slopes=slopes),
              dict(scale=d ** -0.5, atten_mask=mask, sparse_mode=4, pre_tokens=2, next_tokens=1, softcap=1.5,
                   alibi_slopes=slopes))]
    for compact, full in cases:
        for paged in (False, True):
            if paged:
                got = op(q, pk, pv, lens, table, return_softmax_lse=True, **compact)
                want = fia(q, pk.view(pk.shape[0], 8, -1), pv.view(pv.shape[0], 8, -1), block_table=table,
                           block_size=8, **base, **full)
            else:
                got = op(q, kc, vc, lens, return_softmax_lse=True, **compact)
                want = fia(q, kc, vc, **base, **full)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1].reshape(b, h, sq)), (compact, paged)
        torch.library.opcheck(op.default, (q, kc, vc, lens), compact)
    assert op(q, kc, vc, lens)[1].numel() == 0
    with pytest.raises(NotImplementedError, match="one-row query with window_left >= 0"):
        op(q[:, :1], kc, vc, lens, window_left=4)
    with pytest.raises(ValueError, match="flash_attn_kvcache: q must have rank 4; it has rank 3"):
        op(q[0], kc, vc, lens)
