/* The AVX-512 kernel set (kernels.h states each contract;
 * portable/kernels_portable.c is the plain-C statement of it).  Compiled
 * with AVX-512 flags and reached only through cpu_kernels() after the CPUID
 * check; what it leaves out it inherits from the AVX2 set. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/vec_exp.h"
#include "cpu/vec_tanh.h"

/* exp(x) for 16 floats, inlined because it runs on every score: Cody-Waite
 * reduction x = n ln2 + r (ln2 split in two so n*ln2_hi is exact), the
 * Cephes expf polynomial on |r| <= ln2/2, then vscalefps for the 2^n, which
 * also underflows cleanly to 0.  Error: at most 1 ULP against the correctly
 * rounded result over [-87.3, 88.7] (a sweep of 44M inputs, see
 * docs/NUMERICS.md); exp(0) = 1 and exp(-inf) = 0 exactly.  The constants
 * and the scalar statement: cpu/vec_exp.h. */
static inline __m512 exp16(__m512 x)
{
    const __m512 log2e = _mm512_set1_ps(VEC_EXP_LOG2E);
    const __m512 ln2_hi = _mm512_set1_ps(VEC_EXP_LN2_HI), ln2_lo = _mm512_set1_ps(VEC_EXP_LN2_LO);
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(VEC_EXP_HI)), _mm512_set1_ps(VEC_EXP_LO));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    __m512 p = _mm512_set1_ps(VEC_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEC_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEC_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEC_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEC_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VEC_EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

static inline __mmask16 tail_mask(int n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u); }

static void softmax_fwd(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l, float *alpha)
{
    const __m512 vscale = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * cols;
        __m512 vmax = ninf;
        for (int c = 0; c < valid_cols; c += 16) {
            __mmask16 k = tail_mask(valid_cols - c);
            __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), vscale);
            _mm512_mask_storeu_ps(row + c, k, x);
            vmax = _mm512_mask_max_ps(vmax, k, vmax, x);
        }
        float mx = _mm512_reduce_max_ps(vmax);
        if (m[r] > mx) mx = m[r];
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        const __m512 vm = _mm512_set1_ps(mx);
        __m512 vsum = _mm512_setzero_ps();
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(valid_cols - c > 0 ? valid_cols - c : 0);
            __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + c), vm));
            e = _mm512_maskz_mov_ps(k, e);
            _mm512_storeu_ps(row + c, e);
            vsum = _mm512_add_ps(vsum, e);
        }
        l[r] = l[r] * alpha[r] + _mm512_reduce_add_ps(vsum);
        m[r] = mx;
    }
}

static void softmax_bwd(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                        const float *l, const float *drow)
{
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *ps = s + (size_t)r * cols, *pd = dp + (size_t)r * cols;
        const __m512 vm = _mm512_set1_ps(m[r]), vl = _mm512_set1_ps(l[r]), vd = _mm512_set1_ps(drow[r]);
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(valid_cols - c > 0 ? valid_cols - c : 0);
            __m512 x = _mm512_fmsub_ps(_mm512_loadu_ps(ps + c), vscale, vm);
            __m512 p = _mm512_maskz_mov_ps(k, _mm512_div_ps(exp16(x), vl));
            __m512 ds = _mm512_mul_ps(p, _mm512_sub_ps(_mm512_loadu_ps(pd + c), vd));
            _mm512_storeu_ps(ps + c, p);
            _mm512_storeu_ps(pd + c, ds);
        }
    }
}

/* Round to nearest even on the integer bits, NaN -> 0x7FC0: bit for bit
 * attnops_f32_to_bf16 (outputs can carry a caller's NaN). */
static inline __m256i bf16_round(__m512 x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    u = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    u = _mm512_srli_epi32(u, 16);
    u = _mm512_mask_mov_epi32(u, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_set1_epi32(0x7fc0));
    return _mm512_cvtepi32_epi16(u);
}

static void to_bf16(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni)
{
    if (!vnni) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c += 16) {
                __mmask16 k = tail_mask(cols - c);
                __m256i h = bf16_round(_mm512_maskz_loadu_ps(k, src + (size_t)r * cols + c));
                _mm256_mask_storeu_epi16(dst + (size_t)r * ld_dst + c, k, h);
            }
        return;
    }
    /* VNNI-2: rows r and r+1 interleave, one 32-bit pair per column. */
    for (int r = 0; r < rows; r += 2)
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(cols - c);
            __m512i lo = _mm512_cvtepu16_epi32(bf16_round(_mm512_maskz_loadu_ps(k, src + (size_t)r * cols + c)));
            __m512i hi = _mm512_cvtepu16_epi32(bf16_round(_mm512_maskz_loadu_ps(k, src + (size_t)(r + 1) * cols + c)));
            _mm512_mask_storeu_epi32(dst + ((size_t)(r / 2) * ld_dst + c) * 2, k,
                                     _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
}

static void round_bf16(float *x, int n)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512i h = _mm512_cvtepu16_epi32(bf16_round(_mm512_maskz_loadu_ps(k, x + i)));
        _mm512_mask_storeu_ps(x + i, k, _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
    }
}

static void scale_rows(float *o, int rows, int cols, const float *alpha)
{
    for (int r = 0; r < rows; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
        float *row = o + (size_t)r * cols;
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(cols - c);
            _mm512_mask_storeu_ps(row + c, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), a));
        }
    }
}

/* 16 values (lanes k) from element `at` of f32, f16 or bf16 data, widened
 * to fp32 exactly. */
static inline __m512 load16(const void *src, attnops_dtype dtype, int64_t at, __mmask16 k)
{
    if (dtype == ATTNOPS_DTYPE_F32) return _mm512_maskz_loadu_ps(k, (const float *)src + at);
    __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t *)src + at);
    if (dtype == ATTNOPS_DTYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static void f16_to_f32(const uint16_t *src, int n, float *dst)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, src + i)));
    }
}

/* vcvtps2ph is attnops_f32_to_f16 but for NaNs, which keep part of their
 * payload there and become sign | 0x7E00 here. */
static void f32_to_f16(const float *src, int n, uint16_t *dst)
{
    for (int i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(k, src + i);
        const __m512i u = _mm512_castps_si512(x);
        __m512i h = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m512i fixed = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
                                              _mm512_set1_epi32(0x7e00));
        h = _mm512_mask_mov_epi32(h, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), fixed);
        _mm256_mask_storeu_epi16(dst + i, k, _mm512_cvtepi32_epi16(h));
    }
}

static void add_bias(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale)
{
    const __m512 vs = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(cols - c);
            __m512 x = _mm512_maskz_loadu_ps(k, row + c), y = load16(bias, dtype, r * ld_b + c, k);
            x = add_then_scale ? _mm512_mul_ps(_mm512_add_ps(x, y), vs) : _mm512_fmadd_ps(x, vs, y);
            _mm512_mask_storeu_ps(row + c, k, x);
        }
    }
}

static void add_alibi(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist)
{
    const __m512 vs = _mm512_set1_ps(scale), vslope = _mm512_set1_ps(-slope);
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(cols - c);
            /* |d0 - r + c + lane| is an exact small integer in float */
            __m512 d = _mm512_abs_ps(_mm512_add_ps(_mm512_set1_ps(d0 - (float)r + (float)c), iota));
            if (sqrt_dist) d = _mm512_sqrt_ps(d);
            __m512 x = _mm512_maskz_loadu_ps(k, row + c);
            _mm512_mask_storeu_ps(row + c, k, _mm512_fmadd_ps(vslope, d, _mm512_mul_ps(x, vs)));
        }
    }
}

/* 32 x 32 -> 64-bit products of 16 lanes: their high and low halves. */
static inline void mul_hi_lo(__m512i a, __m512i m, __m512i *hi, __m512i *lo)
{
    const __m512i even = _mm512_mul_epu32(a, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* Philox blocks base + idx[i], i < 16, into out[16 * i]. */
static void philox16(const ao_philox *g, const uint64_t idx[16], uint8_t out[256])
{
    uint32_t w[4][16];
    for (int i = 0; i < 16; i++) { /* counters base + idx[i], with the carry */
        const uint64_t n = idx[i];
        uint64_t sum = (uint64_t)g->base[0] + (uint32_t)n;
        w[0][i] = (uint32_t)sum;
        sum = (uint64_t)g->base[1] + (uint32_t)(n >> 32) + (sum >> 32);
        w[1][i] = (uint32_t)sum;
        sum = (uint64_t)g->base[2] + (sum >> 32);
        w[2][i] = (uint32_t)sum;
        w[3][i] = g->base[3] + (uint32_t)(sum >> 32);
    }
    __m512i c0 = _mm512_loadu_si512(w[0]), c1 = _mm512_loadu_si512(w[1]);
    __m512i c2 = _mm512_loadu_si512(w[2]), c3 = _mm512_loadu_si512(w[3]);
    const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 7; r++) {
        __m512i h0, l0, h1, l1;
        mul_hi_lo(c0, m0, &h0, &l0);
        mul_hi_lo(c2, m1, &h1, &l1);
        const __m512i n0v = _mm512_xor_si512(_mm512_xor_si512(h1, c1), _mm512_set1_epi32((int)k0));
        const __m512i n2v = _mm512_xor_si512(_mm512_xor_si512(h0, c3), _mm512_set1_epi32((int)k1));
        c0 = n0v, c1 = l1, c2 = n2v, c3 = l0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    /* 4 x 16 words -> 16 blocks of 4 words: each 128-bit lane of u_k holds block 4*lane + k */
    const __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    const __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    const __m512i u[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2), _mm512_unpacklo_epi64(t1, t3),
                          _mm512_unpackhi_epi64(t1, t3)};
    for (int k = 0; k < 4; k++) {
        _mm_storeu_si128((__m128i *)(out + 16 * (0 + k)), _mm512_extracti32x4_epi32(u[k], 0));
        _mm_storeu_si128((__m128i *)(out + 16 * (4 + k)), _mm512_extracti32x4_epi32(u[k], 1));
        _mm_storeu_si128((__m128i *)(out + 16 * (8 + k)), _mm512_extracti32x4_epi32(u[k], 2));
        _mm_storeu_si128((__m128i *)(out + 16 * (12 + k)), _mm512_extracti32x4_epi32(u[k], 3));
    }
}

static void philox_blocks(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    uint64_t idx[16];
    uint8_t buf[256];
    /* element offsets are 64-bit: a block index wraps mod 2^60, as in ao_philox_bytes(blocks[i] * 16) */
    for (int i = 0; i < 16; i++) idx[i] = blocks[i < n ? i : 0] & (UINT64_MAX >> 4);
    philox16(g, idx, buf);
    memcpy(out, buf, (size_t)n * 16);
}

static void philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    uint8_t buf[256];
    uint64_t e = first, idx[16];
    while (count > 0) {
        for (int i = 0; i < 16; i++) idx[i] = e / 16 + (uint64_t)i;
        philox16(g, idx, buf);
        const size_t from = (size_t)(e % 16), take = 256 - from < count ? 256 - from : count;
        memcpy(out, buf + from, take);
        out += take, e += take, count -= take;
    }
}

/* fa_fp8_round_f32 on 16 lanes: quantum = 2^(max(exponent, emin) - mantissa
 * bits) built from the exponent field, y = |x| / quantum (multiplying by the
 * exact power of two 1 / quantum), rounded to nearest even by roundscale. */
static void fp8_round(float *x, int n, float scale, const fa_fp8_format *f)
{
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), inf_bits = _mm512_set1_epi32(0x7f800000);
    const __m512i emin = _mm512_set1_epi32(f->emin + 127), man = _mm512_set1_epi32(f->man_bits);
    const __m512i two_bias = _mm512_set1_epi32(254);
    const __m512 sc = _mm512_set1_ps(scale), max_finite = _mm512_set1_ps(f->max_finite);
    const __m512 overflow = _mm512_set1_ps(f->overflow);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), sc);
        const __m512i u = _mm512_castps_si512(v), a = _mm512_and_si512(u, absmask);
        const __m512i qexp = _mm512_sub_epi32(_mm512_max_epi32(_mm512_srli_epi32(a, 23), emin), man);
        const __m512 quantum = _mm512_castsi512_ps(_mm512_slli_epi32(qexp, 23));
        const __m512 inv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(two_bias, qexp), 23));
        __m512 r = _mm512_mul_ps(_mm512_castsi512_ps(a), inv);
        r = _mm512_mul_ps(_mm512_roundscale_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), quantum);
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, max_finite, _CMP_GT_OQ), overflow);
        r = _mm512_mask_mov_ps(r, _mm512_cmpeq_epi32_mask(a, inf_bits), overflow);              /* +-inf */
        r = _mm512_mask_mov_ps(r, _mm512_cmpgt_epu32_mask(a, inf_bits), _mm512_castsi512_ps(a)); /* NaN */
        const __m512i sign = _mm512_andnot_si512(absmask, u);
        _mm512_mask_storeu_ps(x + i, k, _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign)));
    }
}

static float abs_max(const float *x, int n)
{
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) /* max(|x|, m): a NaN lane keeps m, as fmaxf ignores NaN */
        m = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(n - i), x + i)), m);
    return _mm512_reduce_max_ps(m);
}

static void scale2(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
    for (int i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), va), vb);
        if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i), v);
        _mm512_mask_storeu_ps(y + i, k, v);
    }
}

static void apply_keep(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    const __m512 sc = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * (size_t)ld;
        const uint8_t *kr = keep + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += 16) {
            const __mmask16 k = tail_mask(cols - c);
            const __m512 kf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, kr + c)));
            _mm512_mask_storeu_ps(row + c, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), _mm512_mul_ps(kf, sc)));
        }
    }
}

/* Soft-capping: vec_tanh.h's algorithm on 16 lanes, bit for bit
 * vec_tanh_ref, as the AVX2 set does it: each lane takes the polynomial side
 * (a < 0.625) or the exp one, a side computed only when some lane needs it
 * (a real cap's scores are nearly all on the cheap polynomial side); the
 * sign is x's OR'd in (t >= 0, -0 kept), and a NaN lane gets x itself for
 * both (exp16 turns NaN into its clamp). */
static inline __m512 tanh16_small(__m512 a, __m512 *d)
{
    const __m512 z = _mm512_mul_ps(a, a);
    __m512 p = _mm512_set1_ps(VEC_TANH_P0);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(VEC_TANH_P1));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(VEC_TANH_P2));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(VEC_TANH_P3));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(VEC_TANH_P4));
    const __m512 t = _mm512_fmadd_ps(_mm512_mul_ps(p, z), a, a);
    *d = _mm512_fnmadd_ps(t, t, _mm512_set1_ps(1.0f)); /* fmaf(-t, t, 1) */
    return t;
}

static inline __m512 tanh16_large(__m512 a, __m512 *d)
{
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    const __m512 u = _mm512_div_ps(two, _mm512_add_ps(exp16(_mm512_add_ps(a, a)), one));
    *d = _mm512_mul_ps(u, _mm512_sub_ps(two, u));
    return _mm512_sub_ps(one, u);
}

static inline __m512 tanh16(__m512 x, __m512 *dtanh)
{
    const __m512 sign = _mm512_set1_ps(-0.0f);
    const __m512 a = _mm512_andnot_ps(sign, x);
    const __mmask16 small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(VEC_TANH_SMALL), _CMP_LT_OQ); /* not NaN */
    __m512 t, d;
    if (small == 0xffff) {
        t = tanh16_small(a, &d);
    } else {
        t = tanh16_large(a, &d);
        if (small) {
            __m512 ds;
            const __m512 ts = tanh16_small(a, &ds);
            t = _mm512_mask_mov_ps(t, small, ts), d = _mm512_mask_mov_ps(d, small, ds);
        }
        const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        t = _mm512_mask_mov_ps(t, nan, x), d = _mm512_mask_mov_ps(d, nan, x);
    }
    *dtanh = d;
    return _mm512_or_ps(t, _mm512_and_ps(x, sign));
}

static void softcap(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    const __m512 vin = _mm512_set1_ps(in_scale), vout = _mm512_set1_ps(out_scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * (size_t)ld;
        float *drow = dtanh ? dtanh + (size_t)r * (size_t)ld : NULL;
        for (int c = 0; c < cols; c += 16) {
            const __mmask16 k = tail_mask(cols - c);
            __m512 d;
            const __m512 t = tanh16(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), vin), &d);
            _mm512_mask_storeu_ps(row + c, k, _mm512_mul_ps(t, vout));
            if (drow) _mm512_mask_storeu_ps(drow + c, k, d);
        }
    }
}

static void softcap_grad(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++) {
        float *row = ds + (size_t)r * (size_t)ld;
        const float *drow = dtanh + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += 16) {
            const __mmask16 k = tail_mask(cols - c);
            _mm512_mask_storeu_ps(row + c, k,
                                  _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), _mm512_maskz_loadu_ps(k, drow + c)));
        }
    }
}

/* Round 16 floats to bf16 or f16 (nearest even) and widen back. */
static inline __m512 round_weights(__m512 w, bool bf16)
{
    if (!bf16) return _mm512_cvtph_ps(_mm512_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512i u = _mm512_castps_si512(w);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u))); /* weights are finite */
}

static void group_pool(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out)
{
    __m512 e[128];
    for (int d = 0; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        __m512 m = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps(), acc = _mm512_setzero_ps();
        for (int r = 0; r < R; r++) {
            e[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(k, gate[r] + d), _mm512_maskz_loadu_ps(k, ape + r * D + d));
            m = _mm512_max_ps(m, e[r]);
        }
        for (int r = 0; r < R; r++) sum = _mm512_add_ps(sum, e[r] = exp16(_mm512_sub_ps(e[r], m)));
        for (int r = 0; r < R; r++) {
            const __m512 w = round_weights(_mm512_div_ps(e[r], sum), bf16);
            acc = _mm512_add_ps(acc, _mm512_mul_ps(w, _mm512_maskz_loadu_ps(k, key[r] + d)));
        }
        _mm512_mask_storeu_ps(out + d, k, acc);
    }
}

/* x rounded to f32, f16 or bf16 (nearest even) into lanes k from element `at`. */
static inline void store16(void *dst, attnops_dtype dtype, int64_t at, __mmask16 k, __m512 x)
{
    if (dtype == ATTNOPS_DTYPE_F32) _mm512_mask_storeu_ps((float *)dst + at, k, x);
    else if (dtype == ATTNOPS_DTYPE_F16)
        _mm256_mask_storeu_epi16((uint16_t *)dst + at, k, _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else _mm256_mask_storeu_epi16((uint16_t *)dst + at, k, bf16_round(x));
}

/* Two rows of 16 per step, four accumulators: the sums are latency-bound otherwise.  One line of
 * next per line of v into L2: the memory stalls of the row after this one overlap this one's work. */
/* The products widened to double, which holds them exactly, and summed in double. */
static void ar_dots_f64(const float *v, int D, const float *x, const float *y, float *vx, float *vy, const void *next)
{
    const char *ahead = next;
    __m512d sx0 = _mm512_setzero_pd(), sx1 = sx0, sy0 = sx0, sy1 = sx0;
    for (int d = 0; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        if (ahead) _mm_prefetch(ahead + 4 * d, _MM_HINT_T1);
        const __m512 a = _mm512_maskz_loadu_ps(k, v + d), b = x ? _mm512_maskz_loadu_ps(k, x + d) : a;
        const __m512 c = _mm512_maskz_loadu_ps(k, y + d);
        const __m512d a0 = _mm512_cvtps_pd(_mm512_castps512_ps256(a)), a1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1));
        sx0 = _mm512_fmadd_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(b)), sx0);
        sx1 = _mm512_fmadd_pd(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(b, 1)), sx1);
        sy0 = _mm512_fmadd_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(c)), sy0);
        sy1 = _mm512_fmadd_pd(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(c, 1)), sy1);
    }
    *vx = (float)_mm512_reduce_add_pd(_mm512_add_pd(sx0, sx1));
    *vy = (float)_mm512_reduce_add_pd(_mm512_add_pd(sy0, sy1));
}

static void ar_dots(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                    const void *next)
{
    const char *ahead = next;
    const int64_t esize = (int64_t)attnops_dtype_size(dt);
    __m512 sx0 = _mm512_setzero_ps(), sx1 = sx0, sy0 = sx0, sy1 = sx0;
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        const __m512 a0 = load16(v, dt, d, 0xffff), a1 = load16(v, dt, d + 16, 0xffff);
        if (ahead) {
            _mm_prefetch(ahead + d * esize, _MM_HINT_T1);
            if (esize == 4) _mm_prefetch(ahead + d * esize + 64, _MM_HINT_T1);
        }
        sx0 = _mm512_fmadd_ps(a0, x ? _mm512_loadu_ps(x + d) : a0, sx0);
        sx1 = _mm512_fmadd_ps(a1, x ? _mm512_loadu_ps(x + d + 16) : a1, sx1);
        sy0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(y + d), sy0);
        sy1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(y + d + 16), sy1);
    }
    for (; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        const __m512 a = load16(v, dt, d, k);
        sx0 = _mm512_fmadd_ps(a, x ? _mm512_maskz_loadu_ps(k, x + d) : a, sx0);
        sy0 = _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(k, y + d), sy0);
    }
    *vx = _mm512_reduce_add_ps(_mm512_add_ps(sx0, sx1));
    *vy = _mm512_reduce_add_ps(_mm512_add_ps(sy0, sy1));
}

static void ar_accumulate(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    const __m512 vc = _mm512_set1_ps(c), ve = _mm512_set1_ps(e);
    for (int d = 0; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        __m512 a = _mm512_maskz_loadu_ps(k, acc + d);
        if (c != 1.0f) a = _mm512_mul_ps(a, vc); /* c = 1: a * 1 = a exactly */
        _mm512_mask_storeu_ps(acc + d, k, _mm512_fmadd_ps(load16(v, dt, d, k), ve, a));
    }
}

static void ar_store_div(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    const __m512 vd = _mm512_set1_ps(div);
    for (int d = 0; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        store16(out, out_dt, d, k, _mm512_div_ps(_mm512_maskz_loadu_ps(k, src + d), vd));
    }
}

/* 32 bf16 from element d (a tail of D - d < 32 zero-filled) as the even
 * and odd halves of the pair-split layout. */
static inline void split32(const uint16_t *v, int d, int D, __m512 *even, __m512 *odd)
{
    const int t = D - d;
    const __m512i raw = t >= 32 ? _mm512_loadu_si512(v + d) : _mm512_maskz_loadu_epi16((__mmask32)((1u << t) - 1u), v + d);
    *even = _mm512_castsi512_ps(_mm512_slli_epi32(raw, 16));
    *odd = _mm512_castsi512_ps(_mm512_and_si512(raw, _mm512_set1_epi32((int)0xFFFF0000u)));
}

static void ar_dots_split(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                          const void *next)
{
    __m512 sx0 = _mm512_setzero_ps(), sx1 = sx0, sy0 = sx0, sy1 = sx0;
    for (int d = 0; d < D; d += 32) {
        __m512 e, o;
        split32(v, d, D, &e, &o);
        if (next) _mm_prefetch((const char *)next + 2 * d, _MM_HINT_T1);
        sx0 = _mm512_fmadd_ps(e, xs ? _mm512_loadu_ps(xs + d) : e, sx0);
        sx1 = _mm512_fmadd_ps(o, xs ? _mm512_loadu_ps(xs + d + 16) : o, sx1);
        sy0 = _mm512_fmadd_ps(e, _mm512_loadu_ps(ys + d), sy0);
        sy1 = _mm512_fmadd_ps(o, _mm512_loadu_ps(ys + d + 16), sy1);
    }
    *vx = _mm512_reduce_add_ps(_mm512_add_ps(sx0, sx1));
    *vy = _mm512_reduce_add_ps(_mm512_add_ps(sy0, sy1));
}

static void ar_accumulate_split(float *accs, float c, float e, const uint16_t *v, int D)
{
    const __m512 vc = _mm512_set1_ps(c), ve = _mm512_set1_ps(e);
    for (int d = 0; d < D; d += 32) {
        __m512 ev, od, a0 = _mm512_loadu_ps(accs + d), a1 = _mm512_loadu_ps(accs + d + 16);
        split32(v, d, D, &ev, &od);
        if (c != 1.0f) a0 = _mm512_mul_ps(a0, vc), a1 = _mm512_mul_ps(a1, vc); /* c = 1: a * 1 = a exactly */
        _mm512_storeu_ps(accs + d, _mm512_fmadd_ps(ev, ve, a0));
        _mm512_storeu_ps(accs + d + 16, _mm512_fmadd_ps(od, ve, a1));
    }
}

/* *even = elements d + 2i, *odd = elements d + 2i + 1 (i < 16) of natural
 * f32 src, zero past D: the two halves of the pair-split layout. */
static inline void split32_f32(const float *src, int d, int D, __m512 *even, __m512 *odd)
{
    const int t = D - d;
    const __m512 a = _mm512_maskz_loadu_ps(tail_mask(t), src + d);
    const __m512 b = t > 16 ? _mm512_maskz_loadu_ps(tail_mask(t - 16), src + d + 16) : _mm512_setzero_ps();
    const __m512i ei = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(a, ei, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ei, _mm512_set1_epi32(1)), b);
}

/* Elements d .. d + t - 1 (t <= 32) from the split halves ev, od, in natural
 * order: bf16 (streamed when asked and whole) or f32. */
static inline void store_split32(void *out, attnops_dtype out_dt, int d, int t, __m512 ev, __m512 od, bool stream)
{
    if (out_dt == ATTNOPS_DTYPE_BF16) { /* lane i: odd element's bits high, even's low */
        const __m512i pair = _mm512_or_si512(_mm512_cvtepu16_epi32(bf16_round(ev)),
                                             _mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16_round(od)), 16));
        if (stream && t == 32) _mm512_stream_si512((__m512i *)((uint16_t *)out + d), pair);
        else _mm512_mask_storeu_epi16((uint16_t *)out + d, (__mmask32)(t == 32 ? ~0u : (1u << t) - 1u), pair);
        return;
    }
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    float *o = (float *)out + d;
    _mm512_mask_storeu_ps(o, tail_mask(t), _mm512_permutex2var_ps(ev, lo, od));
    if (t > 16)
        _mm512_mask_storeu_ps(o + 16, tail_mask(t - 16),
                              _mm512_permutex2var_ps(ev, _mm512_add_epi32(lo, _mm512_set1_epi32(8)), od));
}

static void ar_store_div_split(void *out, attnops_dtype out_dt, const float *srcs, float div, int D)
{
    const __m512 vd = _mm512_set1_ps(div);
    for (int d = 0; d < D; d += 32)
        store_split32(out, out_dt, d, D - d < 32 ? D - d : 32, _mm512_div_ps(_mm512_loadu_ps(srcs + d), vd),
                      _mm512_div_ps(_mm512_loadu_ps(srcs + d + 16), vd), false);
}

static void ar_grad_row_split(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                              float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & 63) == 0;
    const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b), ve = _mm512_set1_ps(e);
    for (int d = 0; d < D; d += 32) {
        __m512 x[2];
        if (dt == ATTNOPS_DTYPE_BF16) split32(v, d, D, &x[0], &x[1]);
        else split32_f32(v, d, D, &x[0], &x[1]);
        __m512 o[2];
        for (int h = 0; h < 2; h++) {
            const int at = d + 16 * h;
            __m512 r = _mm512_mul_ps(_mm512_loadu_ps(gs + at), va);
            r = _mm512_fmadd_ps(_mm512_loadu_ps(ys + at), vb, r);
            o[h] = _mm512_fmadd_ps(x[h], ve, r);
            _mm512_storeu_ps(us + at, _mm512_fmadd_ps(x[h], vb, _mm512_loadu_ps(us + at)));
        }
        store_split32(out, out_dt, d, D - d < 32 ? D - d : 32, o[0], o[1], stream);
    }
    if (stream) _mm_sfence();
}

static void ar_grad_row(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                        float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    /* the common large case: bf16 rows on 32-byte boundaries, written whole without reading them first */
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & 31) == 0;
    const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b), ve = _mm512_set1_ps(e);
    for (int d = 0; d < D; d += 16) {
        const __mmask16 k = tail_mask(D - d);
        const __m512 x = load16(v, dt, d, k);
        __m512 r = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + d), va);
        r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, y + d), vb, r);
        const __m512 o = _mm512_fmadd_ps(x, ve, r);
        if (stream && k == 0xffff) _mm256_stream_si256((__m256i *)((uint16_t *)out + d), bf16_round(o));
        else store16(out, out_dt, d, k, o);
        _mm512_mask_storeu_ps(u + d, k, _mm512_fmadd_ps(x, vb, _mm512_maskz_loadu_ps(k, u + d)));
    }
    if (stream) _mm_sfence();
}

const cpu_kernel_set cpu_kernels_avx512 = CPU_KERNEL_SET_COMPLETE;
