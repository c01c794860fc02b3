"""FusedInferAttentionScore cases test_fia.py leaves out, each aimed at a class of one-line addressing or routing
bug that slipped past it: masks whose content differs per batch (a batch stride dropped), every int8 antiquant
form with parameters that differ per channel, head and token (a stride swapped, an offset ignored), paged caches
whose block size neither divides nor is a multiple of the kernel's 128-key tile (a block's row computed from the
tile), and both sides of every route threshold (the FlashAttention route, few-row kernels against tile GEMMs,
the key splits, FlashAttention's short query, the Python fast paths).  Every case runs the golden and the fast
kernel against the float64 oracle (fia_oracle.py; fa_oracle.py for FlashAttention's own entry), never one
implementation against the other."""
import types

import pytest
import torch

from attnops import flash_attn, ops, transformers

import fa_oracle
from checks import assert_close
from fia_oracle import fia as oracle
from test_fia import _as_layout, _call, _check, _nz, _paged, _qkv

INT32_MAX = 2147483647
CAUSAL = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)


# (query dtype, mask dtype, padding of the mask's last dim): every mask dtype CANN takes
MASK_DTYPES = [(torch.bfloat16, torch.bool, 0), (torch.float32, torch.uint8, 5), (torch.float16, torch.int8, 0)]


def _batch_masks(shape, seed, dtype):
    """A random mask whose density differs per batch (dim 0), so no two batches share their content."""
    g = torch.Generator().manual_seed(seed)
    density = torch.linspace(0.15, 0.6, shape[0]).view(-1, *([1] * (len(shape) - 1)))
    mask = torch.rand(shape, generator=g) < density
    return mask if dtype is torch.bool else mask.to(dtype)


def _maybe_paged(k, v, kw, lens, paged, block_size=16, seed=0):
    """k, v (BNSD) as they are, or as a shuffled paged cache with the table in kw."""
    if not paged:
        return k, v
    kc, vc, table = _paged(k, v, block_size, lens, 4, seed=seed)
    kw.update(block_table=table, block_size=block_size)
    return kc, vc


def _capacity(kw, s2):
    """The key positions a mask or per-token parameter covers: S2, or the block table's capacity when paged."""
    return kw["block_table"].shape[1] * kw["block_size"] if "block_table" in kw else s2


# ---- 1. masks whose batch stride matters --------------------------------------------------------------------

@pytest.mark.parametrize("mode,pre,nxt", [(0, INT32_MAX, INT32_MAX), (0, 4, 1), (1, 0, 0)])
@pytest.mark.parametrize("s1", [3, 9])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("dtype,mask_dtype,pad", MASK_DTYPES)
def test_prompt_mask_differs_per_batch(mode, pre, nxt, s1, paged, dtype, mask_dtype, pad):
    """A rank-3 prompt mask [B, S1, S2'] (exact, or wider than S2: its row stride is not S2) whose content
    differs per batch, over two key tiles, with per-batch lengths; 3 rows of G = 2 take the few-row kernels,
    9 the tile GEMMs.  Catches a mask read at batch 0's (or a wrong batch's, row's) offset."""
    b, n1, n2, s2, d = 3, 4, 2, 150, 16
    q, k, v = _qkv("BNSD", b, n1, n2, s1, s2, d, dtype, seed=100 + s1)
    lens_kv = [s2, s2 - 23, 131]
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, sparse_mode=mode,
              pre_tokens=pre, next_tokens=nxt, actual_seq_lengths=[s1, s1 - 1, s1], actual_seq_lengths_kv=lens_kv)
    k, v = _maybe_paged(k, v, kw, lens_kv, paged, seed=102)
    kw["atten_mask"] = _batch_masks((b, s1, _capacity(kw, s2) + pad), 101, mask_dtype)
    _check(q, k, v, s2, **kw)


@pytest.mark.parametrize("shape", ["B,S2", "B,1,S2", "B,1,1,S2"])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_decode_mask_differs_per_batch(shape, paged, dtype):
    """A decode mask [B, S2'], [B, 1, S2'] or [B, 1, 1, S2'] whose content differs per batch, over 700 keys (two
    key splits of the few-row kernels).  Catches mask[b][j] read as batch 0's, or at a split's local key."""
    b, n1, n2, s2, d = 3, 8, 2, 700, 16
    q, k, v = _qkv("BNSD", b, n1, n2, 1, s2, d, dtype, seed=110)
    lens_kv = [700, 517, 640]
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, actual_seq_lengths_kv=lens_kv)
    k, v = _maybe_paged(k, v, kw, lens_kv, paged, seed=112)
    cols = _capacity(kw, s2) + 4
    dims = {"B,S2": (b, cols), "B,1,S2": (b, 1, cols), "B,1,1,S2": (b, 1, 1, cols)}[shape]
    kw["atten_mask"] = _batch_masks(dims, 111, torch.bool)
    _check(q, k, v, s2, **kw)


# ---- 2. every int8 antiquant form ---------------------------------------------------------------------------

# name: (combined, key mode, value mode, key shape, value shape); shapes of (B, N2, D, positions S')
_SEPARATE = {
    "channel [N2*D]": (0, 0, lambda b, n2, d, s: (n2 * d,)),
    "channel [N2, D]": (0, 0, lambda b, n2, d, s: (n2, d)),
    "channel [1, N2, D]": (0, 0, lambda b, n2, d, s: (1, n2, d)),
    "channel [1, N2, 1, D]": (0, 0, lambda b, n2, d, s: (1, n2, 1, d)),
    "tensor [1]": (0, 0, lambda b, n2, d, s: (1,)),
    "token [1, B, S]": (1, 1, lambda b, n2, d, s: (1, b, s)),
    "token [B, S]": (1, 1, lambda b, n2, d, s: (b, s)),
    "head [N2]": (2, 2, lambda b, n2, d, s: (n2,)),
    "token-head [B, N2, S]": (3, 3, lambda b, n2, d, s: (b, n2, s)),
}
_COMBINED = {
    "combined [2, N2, 1, D]": (0, lambda b, n2, d, s: (2, n2, 1, d)),
    "combined [2, N2, D]": (0, lambda b, n2, d, s: (2, n2, d)),
    "combined [2, N2*D]": (0, lambda b, n2, d, s: (2, n2 * d)),
    "combined [2]": (0, lambda b, n2, d, s: (2,)),
    "combined [2, B, S]": (1, lambda b, n2, d, s: (2, b, s)),
    "combined [2, 1, B, S]": (1, lambda b, n2, d, s: (2, 1, b, s)),
}
_FORMS = [*_SEPARATE, "key channel [N2, D], value token [B, S]", *_COMBINED]


def _params(shape, mode, g, query_dtype, with_offset):
    """Random scale and offset of a shape: every channel, head and token its own; f32 for the token modes."""
    dtype = torch.float32 if mode in (1, 3) else query_dtype
    scale = (torch.rand(shape, generator=g) * 0.02 + 0.002).to(dtype)
    offset = (torch.randn(shape, generator=g) * 24).to(dtype) if with_offset else None
    return scale, offset


def _antiquant_kw(form, b, n2, d, positions, g, query_dtype, with_offset):
    kw = {}
    if form in _COMBINED:
        mode, shape = _COMBINED[form]
        kw["antiquant_scale"], offset = _params(shape(b, n2, d, positions), mode, g, query_dtype, with_offset)
        kw.update(antiquant_mode=mode, **({"antiquant_offset": offset} if with_offset else {}))
        return kw
    if form in _SEPARATE:
        km, vm, shape = _SEPARATE[form]
        shapes = shape(b, n2, d, positions), shape(b, n2, d, positions)
    else:  # G4's reading: K per channel, V per token
        km, vm, shapes = 0, 1, ((n2, d), (b, positions))
    for which, mode, sh in (("key", km, shapes[0]), ("value", vm, shapes[1])):
        kw[f"{which}_antiquant_scale"], offset = _params(sh, mode, g, query_dtype, with_offset)
        kw[f"{which}_antiquant_mode"] = mode
        if with_offset:
            kw[f"{which}_antiquant_offset"] = offset
    return kw


@pytest.mark.parametrize("form", _FORMS)
@pytest.mark.parametrize("with_offset", [True, False])
@pytest.mark.parametrize("s1", [1, 9])
@pytest.mark.parametrize("paged", [False, True])
def test_int8_antiquant_every_form(form, with_offset, s1, paged):
    """Every int8 dequantisation form CANN accepts (fia_antiquant.c), separate and combined, with and without
    offsets, whose values differ per channel, per head and per token; decode (the few-row kernels, the
    dequantisation folded around them) and 9 rows of G = 2 (tile GEMMs on widened rows), contiguous and paged
    (per-token parameters indexed by the logical key position).  Catches swapped index strides (channel vs
    head, batch vs token), an offset ignored or taken from the scale, the value's parameters read as the key's."""
    b, n1, n2, s2, d = 2, 4, 2, 200, 32
    g = torch.Generator().manual_seed(120)
    dtype = torch.float16 if paged else torch.bfloat16
    q = torch.randn(b, n1, s1, d, generator=g).to(dtype)
    k = torch.randint(-128, 128, (b, n2, s2, d), generator=g, dtype=torch.int8)
    v = torch.randint(-128, 128, (b, n2, s2, d), generator=g, dtype=torch.int8)
    lens_kv = [200, 131]
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, actual_seq_lengths_kv=lens_kv)
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=CAUSAL)
    k, v = _maybe_paged(k, v, kw, lens_kv, paged, seed=121)
    positions = _capacity(kw, s2) + 3  # S' past the key positions
    kw.update(_antiquant_kw(form, b, n2, d, positions, g, dtype, with_offset))
    _check(q, k, v, s2, **kw)


# ---- 3. paged caches whose block size is no divisor or multiple of the key tile -----------------------------

# path: (B, N1, N2, S1, kv lengths); the kernel's choice in fia_cpu.c plan_of
_PATHS = {
    "decode": (2, 8, 2, 1, [760, 533]),        # 4 rows: few-row kernels, two key splits
    "split": (1, 2, 1, 1, [1500]),             # one (b, n2) block: three splits of 512 keys
    "speculative": (2, 8, 2, 3, [760, 533]),   # 12 rows <= 16: few-row kernels on a causal prompt
    "tile": (2, 8, 2, 9, [760, 533]),          # 36 rows: tile GEMMs
}


_DTYPES = [torch.bfloat16, torch.float16, torch.int8]


# Every block size crosses every path and cache rank; the dtype rotates with them (a Latin square: every rank
# and every path meets every dtype) to keep the oracle's time in bounds.
@pytest.mark.parametrize("block_size", [48, 80, 144])
@pytest.mark.parametrize("rank,dtype,path", [(rank, _DTYPES[(r + p) % 3], path) for r, rank in enumerate((3, 4, 5))
                                             for p, path in enumerate(_PATHS)])
def test_paged_odd_block_sizes(block_size, rank, dtype, path):
    """Block sizes 48, 80 and 144 (16-aligned, neither a divisor nor a multiple of the 128-key tile): a tile's
    runs of rows cross a block boundary at a different place in every tile; a shuffled table; caches of rank 3
    (BnBsH), 4 (BnNBsD) and 5 (NZ); bf16, f16 and int8 (K per channel, V per token); on each kernel path.
    Catches a block's row taken as s % tile, s % (block_size - 16), a run's length counted from the tile, or a
    per-token parameter read at the physical row."""
    b, n1, n2, s1, lens = _PATHS[path]
    d, s2 = 32, max(lens)
    int8 = dtype is torch.int8
    q, k, v = _qkv("BNSD", b, n1, n2, s1, s2, d, torch.float16 if int8 else dtype, seed=130 + block_size)
    g = torch.Generator().manual_seed(131)
    if int8:
        k = torch.randint(-128, 128, k.shape, generator=g, dtype=torch.int8)
        v = torch.randint(-128, 128, v.shape, generator=g, dtype=torch.int8)
    kc, vc, table = _paged(k, v, block_size, lens, min(rank, 4), seed=132)
    if rank == 5:
        kc, vc = _nz(kc), _nz(vc)
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.2, block_table=table,
              block_size=block_size, actual_seq_lengths_kv=lens)
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=CAUSAL)
    if int8:
        kw.update(_antiquant_kw("key channel [N2, D], value token [B, S]", b, n2, d, table.shape[1] * block_size, g,
                                torch.float16, True))
    _check(q, kc, vc, s2, **kw)


# ---- 4. both sides of every route choice --------------------------------------------------------------------

def _fa_bits(q, k, v, kw):
    """Whether the fast call's output is the FlashAttention forward's, bit for bit (the route taken)."""
    fast, _ = _call(q, k, v, impl="cpu", **kw)
    masks = {name: kw[name] for name in ("sparse_mode", "atten_mask") if name in kw}
    fa_out, _, _ = ops.flash_attention_score(q, k, v, kw["num_heads"], kw["input_layout"], scale=kw["scale"],
                                             **masks)
    return torch.equal(fast, fa_out)


def _prompt(s1, s2, g=1, layout="BSND", dtype=torch.bfloat16, seed=140):
    n2 = 2
    q, k, v = _qkv(layout, 2, n2 * g, n2, s1, s2, 16, dtype, seed=seed)
    return q, k, v, dict(input_layout=layout, num_heads=n2 * g, num_key_value_heads=n2, scale=0.25)


@pytest.mark.parametrize("s1,g,mode,s2,routed", [
    (64, 1, 0, 80, False), (65, 1, 0, 80, True),    # S1 G = FIA_MQ stays, FIA_MQ + 1 goes
    (16, 4, 3, 80, False), (17, 4, 3, 80, True),    # the same with G = 4
    (70, 1, 3, 70, True), (70, 1, 3, 69, False),    # mode 3: S2 >= S1 goes, S2 = S1 - 1 stays (empty top rows)
    (70, 1, 2, 40, True), (70, 1, 4, 90, False),    # mode 2 goes; the band of mode 4 stays
])
def test_route_to_flash_attention_threshold(s1, g, mode, s2, routed):
    """The planner (src/attn/attn_plan.c, fia_fits_tiled): a dense or causal prompt over a contiguous float cache
    goes to the FlashAttention forward when S1 G > FIA_MQ (64) and, in mode 3, S2 >= S1 (every row keeps a key);
    S1 G = 64 stays on the split-KV kernel's tile GEMMs, as do mode 3 with S2 < S1 (rows without keys: FA's statistics
    are no lse) and mode 4.  Each side against the oracle, and the side taken asserted by the bits (FA's output
    exactly, or not).  Catches an off-by-one in the row threshold or the S2 >= S1 rule, or a mode let through."""
    q, k, v, kw = _prompt(s1, s2, g)
    if mode:
        kw.update(sparse_mode=mode, atten_mask=CAUSAL, pre_tokens=7, next_tokens=3)
    _check(q, k, v, s2, **kw)
    if routed:
        assert _fa_bits(q, k, v, kw), "expected the FlashAttention route"


def _off_route(feature):
    """A 70-row causal prompt (the FlashAttention route's) with one feature that keeps it on the split-KV kernel."""
    s1, s2 = 70, 90
    q, k, v, kw = _prompt(s1, s2, layout="BNSD", dtype=torch.float16, seed=150)
    kw.update(sparse_mode=3, atten_mask=CAUSAL)
    g = torch.Generator().manual_seed(151)
    if feature == "kv lengths only":
        kw["actual_seq_lengths_kv"] = [s2, s2 - 17]
    elif feature == "q lengths only":
        kw["actual_seq_lengths"] = [s1, s1 - 9]
    elif feature == "paged":
        kw["actual_seq_lengths_kv"] = [s2, s2]
        k, v = _maybe_paged(k, v, kw, [s2, s2], True, seed=152)
    elif feature == "pse_shift":
        kw["pse_shift"] = torch.randn(1, 2, s1, s2, generator=g).half()
    elif feature == "int8":
        k = torch.randint(-128, 128, k.shape, generator=g, dtype=torch.int8)
        v = torch.randint(-128, 128, v.shape, generator=g, dtype=torch.int8)
        kw.update(_antiquant_kw("channel [N2, D]", 2, 2, 16, s2, g, torch.float16, True))
    elif feature == "rope":
        kw.update(query_rope=torch.randn(2, 2, s1, 8, generator=g).half(),
                  key_rope=torch.randn(2, 2, s2, 8, generator=g).half())
    elif feature == "user mask":
        kw.update(sparse_mode=1, atten_mask=_batch_masks((2, s1, s2), 153, torch.bool))
    elif feature == "BNSD_BSND":
        kw["input_layout"] = "BNSD_BSND"
    elif feature == "tnd":
        q, k, v = (_as_layout(t, "TND") for t in (q, k, v))
        kw.update(input_layout="TND", actual_seq_lengths=[s1, 2 * s1], actual_seq_lengths_kv=[s2, 2 * s2])
    return q, k, v, kw


@pytest.mark.parametrize("feature", ["kv lengths only", "q lengths only", "paged", "pse_shift", "int8", "rope",
                                     "user mask", "BNSD_BSND", "tnd"])
def test_features_that_keep_a_prompt_off_the_flash_attention_route(feature):
    """A prompt that would take the FlashAttention route (70 rows, causal, S2 >= S1) but for one feature the
    forward cannot take as it is: kv lengths alone (shorter than the tensor), q lengths alone, a paged cache,
    pse_shift (added after the scale), int8, rope, a user mask, BNSD_BSND (another output layout), TND.  It must
    stay on the split-KV kernel, so the result is the oracle's.  Catches a route condition dropped (the forward
    would ignore the feature and attend to the whole tensor)."""
    q, k, v, kw = _off_route(feature)
    _check(q, k, v, 90, **kw)


@pytest.mark.parametrize("n1,n2,s1", [
    pytest.param(4, 1, 4, id="G4-16rows-few"), pytest.param(4, 1, 5, id="G4-20rows-tile"),
    pytest.param(16, 1, 1, id="decode-G16-few"), pytest.param(17, 1, 1, id="decode-G17-tile"),
    pytest.param(2, 2, 16, id="G1-16rows-few"), pytest.param(2, 2, 17, id="G1-17rows-tile"),
])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_few_rows_against_tile_gemms_threshold(n1, n2, s1, dtype):
    """plan_of (src/cpu/fia_cpu.c): a query block of <= FIA_DIRECT_ROWS (16) rows S1 G runs the few-row kernels
    on the cache in place, 17 and more the tile GEMMs; both sides over three key tiles with per-batch lengths,
    causal (a prompt of <= 64 rows stays off the FlashAttention route).  Catches an off-by-one there or in the
    rows a block packs (i = r / G, h = r % G)."""
    q, k, v = _qkv("BNSD", 2, n1, n2, s1, 300, 16, dtype, seed=160 + s1)
    kw = dict(input_layout="BNSD", num_heads=n1, num_key_value_heads=n2, scale=0.25, actual_seq_lengths_kv=[300, 171])
    if s1 > 1:
        kw.update(sparse_mode=3, atten_mask=CAUSAL)
    _check(q, k, v, 300, **kw)


@pytest.mark.parametrize("b,n2,keys", [
    pytest.param(1, 1, 512, id="1block-512keys-1split"), pytest.param(1, 1, 513, id="1block-513keys-2splits"),
    pytest.param(4, 2, 4096, id="8blocks-4096keys-8splits"), pytest.param(4, 2, 4097, id="8blocks-4097keys-7splits"),
    pytest.param(32, 2, 600, id="64blocks-unsplit"), pytest.param(21, 3, 600, id="63blocks-2splits"),
])
def test_key_split_thresholds(b, n2, keys):
    """plan_of's key splits: as few as give FIA_MIN_ITEMS (64) items, each of at least 512 keys rounded to the
    128-key tile; each side of those thresholds on a decode step (G = 2), the last batch a key shorter (a split
    boundary moved by one).  The merge pass takes the splits' partials in order.  Catches an off-by-one in the
    split count or size, or a split that drops or repeats its boundary key."""
    q, k, v = _qkv("BNSD", b, 2 * n2, n2, 1, keys, 16, torch.bfloat16, seed=170 + b)
    lens = [keys] * (b - 1) + [keys - 1] if b > 1 else [keys]
    _check(q, k, v, keys, input_layout="BNSD", num_heads=2 * n2, num_key_value_heads=n2, scale=0.25,
           actual_seq_lengths_kv=lens)


@pytest.mark.parametrize("n1,n2,s1,mode", [
    (2, 2, 16, 3), (2, 2, 17, 3),   # S1 G = 16: the FIA kernel (attn_plan.c); 17: FlashAttention's tiles
    (8, 2, 4, 0), (8, 2, 5, 0),     # the same with G = 4, no mask
    (8, 2, 4, 1),                   # a user mask keeps a short query on FlashAttention's own kernel
])
@pytest.mark.parametrize("impl", ["reference", "cpu"])
def test_flash_attention_short_query_threshold(n1, n2, s1, mode, impl):
    """fa_fits_split_kv (src/attn/attn_plan.c): a FlashAttentionScore forward whose S1 G fits one few-row
    block (<= 16) runs on the FusedInferAttentionScore kernel, 17 rows on FlashAttention's tiles, and a user
    mask (mode 1) keeps it off; FlashAttention's own oracle (fa_oracle.py) on both sides.  Catches an
    off-by-one there, or the restated problem's strides, masks or kv heads wrong."""
    s2, d = 200, 16
    q, k, v = _qkv("BSND", 2, n1, n2, s1, s2, d, torch.bfloat16, seed=180 + s1)
    masks = {}
    if mode == 3:
        masks = dict(sparse_mode=3, atten_mask=CAUSAL)
    elif mode == 1:
        masks = dict(sparse_mode=1, atten_mask=_batch_masks((s1, s2), 181, torch.bool))
    out, _, _ = ops.flash_attention_score(q, k, v, n1, "BSND", scale=0.25, impl=impl, **masks)
    want = fa_oracle.attention(q, k, v, n1, "BSND", scale=0.25, **masks)
    assert_close(f"{impl} attention_out", out, want, q.dtype, s2)


@pytest.mark.parametrize("q_len,kv_len,causal", [
    (16, 40, True), (17, 40, True),   # <= 16 new tokens: the FIA operator; 17: flash_attn_func
    (16, 16, True),                   # q_len = kv_len: flash_attn_func
    (1, 40, False), (16, 40, False),  # non-causal on the FIA side
])
def test_transformers_fast_path_threshold(q_len, kv_len, causal):
    """attnops.transformers.attention_forward: a step of q_len <= 16 with q_len < kv_len (no padding mask,
    dropout, softcap, window or grad) goes to fused_infer_attention_score (BNSD_BSND, causal as sparse mode 3),
    anything else to flash_attn_func; both against the FIA oracle (bottom-right causal).  Catches the fast
    path's layout, GQA heads or causal mask wrong on one side of its threshold."""
    b, h, hk, d = 2, 8, 2, 16
    g = torch.Generator().manual_seed(190 + q_len)
    q = torch.randn(b, h, q_len, d, generator=g).bfloat16()
    k = torch.randn(b, hk, kv_len, d, generator=g).bfloat16()
    v = torch.randn(b, hk, kv_len, d, generator=g).bfloat16()
    out, _ = transformers.attention_forward(types.SimpleNamespace(is_causal=causal), q, k, v, None, scaling=0.25)
    masks = dict(sparse_mode=3, atten_mask=CAUSAL) if causal and q_len > 1 else {}
    want, _ = oracle(q, k, v, input_layout="BNSD_BSND", num_heads=h, num_key_value_heads=hk, scale=0.25, **masks)
    assert_close("attention_forward", out, want, q.dtype, kv_len)


@pytest.mark.parametrize("left", [-1, 0, 5])
@pytest.mark.parametrize("paged", [False, True])
def test_kvcache_decode_window_route(left, paged):
    """flash_attn_with_kvcache on a decode step: without a left window it goes to the flash_attn_kvcache op as
    given; with one (window_size[0] >= 0) to a host table of single rows over the cache (block_size 1); both
    against the FIA oracle over each batch's kept keys [n - 1 - left, n).  Catches the window's first key off by
    one, or the table's rows taken from the wrong batch or page."""
    b, h, hk, d, page = 2, 8, 2, 16, 16
    lens = [37, 20]
    g = torch.Generator().manual_seed(200)
    q = torch.randn(b, 1, h, d, generator=g).half()
    k = torch.randn(b, 48, hk, d, generator=g).half()
    v = torch.randn(b, 48, hk, d, generator=g).half()
    seqlens = torch.tensor(lens, dtype=torch.int32)
    kw = dict(cache_seqlens=seqlens, softmax_scale=0.25, window_size=(left, -1))
    if paged:
        kc, vc, table = _paged(k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous(), page, lens, 4,
                               seed=201)
        out = flash_attn.flash_attn_with_kvcache(q, kc.transpose(1, 2).contiguous(), vc.transpose(1, 2).contiguous(),
                                                 block_table=table, **kw)
    else:
        out = flash_attn.flash_attn_with_kvcache(q, k, v, **kw)
    for bi, n in enumerate(lens):
        first = max(0, n - 1 - left) if left >= 0 else 0
        want, _ = oracle(q[bi:bi + 1], k[bi:bi + 1, first:n], v[bi:bi + 1, first:n], input_layout="BSND",
                         num_heads=h, num_key_value_heads=hk, scale=0.25)
        assert_close(f"batch {bi}", out[bi:bi + 1], want, q.dtype, n - first)
