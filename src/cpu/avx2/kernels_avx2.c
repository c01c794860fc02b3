/* The AVX2 + FMA + F16C kernel set (kernels.h states each contract;
 * portable/kernels_portable.c is the plain-C statement of it).  Compiled
 * with AVX2 flags and reached only through cpu_kernels() after the CPUID
 * check.  The algorithms are the AVX-512 set's on 8 lanes, so element-wise
 * results are the same bits by construction; reductions sum in their own
 * order.
 *
 * A step of 8 elements takes the count n of those present (n < 8 only in a
 * row's tail): masked loads (zero past n) and stores for f32, a zero-padded
 * copy for 8- and 16-bit data, which have no masked forms. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/vec_exp.h"
#include "cpu/vec_tanh.h"

/* vec_exp.h's exp on 8 floats.  AVX2 has no vscalefps: 2^n (n in [-150,
 * 128]) is applied as 2^(n>>1) then 2^(n - (n>>1)), each a normal float
 * built from exponent bits; the first product is exact, so the second
 * rounds once, subnormals and the underflow to 0 included, as scalef does. */
static inline __m256 exp8(__m256 x)
{
    const __m256 log2e = _mm256_set1_ps(VEC_EXP_LOG2E);
    const __m256 ln2_hi = _mm256_set1_ps(VEC_EXP_LN2_HI), ln2_lo = _mm256_set1_ps(VEC_EXP_LN2_LO);
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(VEC_EXP_HI)), _mm256_set1_ps(VEC_EXP_LO));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
    r = _mm256_fnmadd_ps(n, ln2_lo, r);
    __m256 p = _mm256_set1_ps(VEC_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEC_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEC_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEC_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEC_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VEC_EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* Lanes i < n all ones (n <= 0: none). */
static inline __m256i tail_mask(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __m256 load8(const float *p, int n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tail_mask(n));
}

static inline void store8(float *p, int n, __m256 x)
{
    if (n >= 8) _mm256_storeu_ps(p, x);
    else _mm256_maskstore_ps(p, tail_mask(n), x);
}

/* n 16-bit elements (zero past n), and their store. */
static inline __m128i load8_u16(const uint16_t *p, int n)
{
    if (n >= 8) return _mm_loadu_si128((const __m128i *)p);
    uint16_t t[8] = {0};
    memcpy(t, p, (size_t)n * 2);
    return _mm_loadu_si128((const __m128i *)t);
}

static inline void store8_u16(uint16_t *p, int n, __m128i h)
{
    if (n >= 8) {
        _mm_storeu_si128((__m128i *)p, h);
        return;
    }
    uint16_t t[8];
    _mm_storeu_si128((__m128i *)t, h);
    memcpy(p, t, (size_t)n * 2);
}

static inline float hsum8(__m256 x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

static inline float hmax8(__m256 x)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

static inline double hsum4d(__m256d x)
{
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

static void softmax_fwd(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l, float *alpha)
{
    const __m256 vscale = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * cols;
        __m256 vmax = ninf;
        for (int c = 0; c < valid_cols; c += 8) {
            const int n = valid_cols - c;
            const __m256 x = _mm256_mul_ps(load8(row + c, n), vscale);
            store8(row + c, n, x);
            vmax = _mm256_max_ps(vmax, n >= 8 ? x : _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(tail_mask(n))));
        }
        float mx = hmax8(vmax);
        if (m[r] > mx) mx = m[r];
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        const __m256 vm = _mm256_set1_ps(mx);
        /* one accumulator: exp8's throughput bounds this loop, not the add's latency (a second one
         * spills a register and measured slower) */
        __m256 sum = _mm256_setzero_ps();
        for (int c = 0; c < cols; c += 8) {
            const __m256 keep = _mm256_castsi256_ps(tail_mask(valid_cols - c));
            const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(load8(row + c, cols - c), vm)), keep);
            store8(row + c, cols - c, e);
            sum = _mm256_add_ps(sum, e);
        }
        l[r] = l[r] * alpha[r] + hsum8(sum);
        m[r] = mx;
    }
}

static void softmax_bwd(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                        const float *l, const float *drow)
{
    const __m256 vscale = _mm256_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *ps = s + (size_t)r * cols, *pd = dp + (size_t)r * cols;
        const __m256 vm = _mm256_set1_ps(m[r]), vl = _mm256_set1_ps(l[r]), vd = _mm256_set1_ps(drow[r]);
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            const __m256 keep = _mm256_castsi256_ps(tail_mask(valid_cols - c));
            const __m256 x = _mm256_fmsub_ps(load8(ps + c, n), vscale, vm);
            const __m256 p = _mm256_and_ps(_mm256_div_ps(exp8(x), vl), keep);
            store8(ps + c, n, p);
            store8(pd + c, n, _mm256_mul_ps(p, _mm256_sub_ps(load8(pd + c, n), vd)));
        }
    }
}

/* Round to nearest even on the integer bits, NaN -> 0x7FC0: bit for bit
 * attnops_f32_to_bf16 (outputs can carry a caller's NaN), in the low half
 * of each 32-bit lane. */
static inline __m256i bf16_bits(__m256 x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), nan);
}

/* The same packed to 8 bf16. */
static inline __m128i bf16_round(__m256 x)
{
    const __m256i b = bf16_bits(x);
    return _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

/* Lane i: bf16(even[i]) low, bf16(odd[i]) high: elements 2i and 2i + 1 of a
 * bf16 row, a VNNI-2 pair or a pair of the split layout. */
static inline __m256i bf16_pairs(__m256 even, __m256 odd)
{
    return _mm256_or_si256(bf16_bits(even), _mm256_slli_epi32(bf16_bits(odd), 16));
}

static void to_bf16(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni)
{
    if (!vnni) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c += 8) {
                const __m128i h = bf16_round(load8(src + (size_t)r * cols + c, cols - c));
                store8_u16(dst + (size_t)r * ld_dst + c, cols - c, h);
            }
        return;
    }
    /* VNNI-2: rows r and r+1 interleave, one 32-bit pair per column. */
    for (int r = 0; r < rows; r += 2)
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            const float *lo = src + (size_t)r * cols + c, *hi = lo + cols;
            const __m256i pair = bf16_pairs(load8(lo, n), load8(hi, n));
            store8((float *)(dst + ((size_t)(r / 2) * ld_dst + c) * 2), n, _mm256_castsi256_ps(pair));
        }
}

static void round_bf16(float *x, int n)
{
    for (int i = 0; i < n; i += 8)
        store8(x + i, n - i, _mm256_castsi256_ps(_mm256_slli_epi32(bf16_bits(load8(x + i, n - i)), 16)));
}

static void scale_rows(float *o, int rows, int cols, const float *alpha)
{
    for (int r = 0; r < rows; r++) {
        const __m256 a = _mm256_set1_ps(alpha[r]);
        float *row = o + (size_t)r * cols;
        for (int c = 0; c < cols; c += 8) store8(row + c, cols - c, _mm256_mul_ps(load8(row + c, cols - c), a));
    }
}

/* n values (zero past n) from element `at` of f32, f16 or bf16 data,
 * widened to fp32 exactly. */
static inline __m256 load8_dt(const void *src, attnops_dtype dtype, int64_t at, int n)
{
    if (dtype == ATTNOPS_DTYPE_F32) return load8((const float *)src + at, n);
    const __m128i h = load8_u16((const uint16_t *)src + at, n);
    if (dtype == ATTNOPS_DTYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* x rounded to f32, f16 or bf16 (nearest even) into n elements from `at`. */
static inline void store8_dt(void *dst, attnops_dtype dtype, int64_t at, int n, __m256 x)
{
    if (dtype == ATTNOPS_DTYPE_F32) store8((float *)dst + at, n, x);
    else if (dtype == ATTNOPS_DTYPE_F16)
        store8_u16((uint16_t *)dst + at, n, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else store8_u16((uint16_t *)dst + at, n, bf16_round(x));
}

static void f16_to_f32(const uint16_t *src, int n, float *dst)
{
    for (int i = 0; i < n; i += 8) store8(dst + i, n - i, _mm256_cvtph_ps(load8_u16(src + i, n - i)));
}

/* vcvtps2ph is attnops_f32_to_f16 but for NaNs, which keep part of their
 * payload there and become sign | 0x7E00 here. */
static void f32_to_f16(const float *src, int n, uint16_t *dst)
{
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), canon = _mm256_set1_epi32(0x7e00);
    for (int i = 0; i < n; i += 8) {
        const __m256 x = load8(src + i, n - i);
        const __m256i u = _mm256_castps_si256(x);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absmask), _mm256_set1_epi32(0x7f800000));
        const __m256i fixed = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)), canon);
        const __m256i r = _mm256_blendv_epi8(h, fixed, nan);
        store8_u16(dst + i, n - i, _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
    }
}

static void add_bias(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale)
{
    const __m256 vs = _mm256_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            const __m256 x = load8(row + c, n), y = load8_dt(bias, dtype, r * ld_b + c, n);
            store8(row + c, n, add_then_scale ? _mm256_mul_ps(_mm256_add_ps(x, y), vs) : _mm256_fmadd_ps(x, vs, y));
        }
    }
}

static void add_alibi(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist)
{
    const __m256 vs = _mm256_set1_ps(scale), vslope = _mm256_set1_ps(-slope);
    const __m256 iota = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            /* |d0 - r + c + lane| is an exact small integer in float */
            __m256 d = _mm256_and_ps(_mm256_add_ps(_mm256_set1_ps(d0 - (float)r + (float)c), iota), absmask);
            if (sqrt_dist) d = _mm256_sqrt_ps(d);
            store8(row + c, n, _mm256_fmadd_ps(vslope, d, _mm256_mul_ps(load8(row + c, n), vs)));
        }
    }
}

/* 32 x 32 -> 64-bit products of 8 lanes: their high and low halves. */
static inline void mul_hi_lo(__m256i a, __m256i m, __m256i *hi, __m256i *lo)
{
    const __m256i even = _mm256_mul_epu32(a, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* a < b as unsigned 32-bit lanes: all ones, else 0. */
static inline __m256i lt_epu32(__m256i a, __m256i b)
{
    return _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(a, b), a), _mm256_set1_epi32(-1));
}

/* Philox blocks base + n_i, n_i = hi[i] << 32 | lo[i] (i < 8), into
 * out[16 * i].  The counters are built in vector registers: words stored
 * one by one and loaded as a vector would stall on store forwarding. */
static void philox8(const ao_philox *g, __m256i lo, __m256i hi, uint8_t out[128])
{
    /* base + n_i with the carry through all four words; word 1 adds hi and word 0's carry, either of
     * which can carry out */
    const __m256i b0 = _mm256_set1_epi32((int)g->base[0]), b1 = _mm256_set1_epi32((int)g->base[1]);
    const __m256i b2 = _mm256_set1_epi32((int)g->base[2]), b3 = _mm256_set1_epi32((int)g->base[3]);
    __m256i c0 = _mm256_add_epi32(b0, lo);
    const __m256i t = _mm256_add_epi32(b1, hi);
    __m256i c1 = _mm256_sub_epi32(t, lt_epu32(c0, b0));
    const __m256i carry1 = _mm256_or_si256(lt_epu32(t, b1), lt_epu32(c1, t));
    __m256i c2 = _mm256_sub_epi32(b2, carry1);
    __m256i c3 = _mm256_sub_epi32(b3, _mm256_and_si256(carry1, lt_epu32(c2, b2)));
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 7; r++) {
        __m256i h0, l0, h1, l1;
        mul_hi_lo(c0, m0, &h0, &l0);
        mul_hi_lo(c2, m1, &h1, &l1);
        const __m256i n0v = _mm256_xor_si256(_mm256_xor_si256(h1, c1), _mm256_set1_epi32((int)k0));
        const __m256i n2v = _mm256_xor_si256(_mm256_xor_si256(h0, c3), _mm256_set1_epi32((int)k1));
        c0 = n0v, c1 = l1, c2 = n2v, c3 = l0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    /* 4 x 8 words -> 8 blocks of 4 words: the 128-bit lanes of u_k hold blocks k and 4 + k */
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 32), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 64), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 96), _mm256_permute2x128_si256(u2, u3, 0x31));
}

/* Block i is that of stream element blocks[i] * 16 (ao_philox_bytes, as
 * the portable statement): its index mod 2^60. */
static void philox_blocks(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    const __m256i mod = _mm256_set1_epi64x((long long)(UINT64_MAX >> 4));
    const __m256i halves = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7); /* low words, then high words */
    for (int b = 0; b < n; b += 8) {
        const int take = n - b < 8 ? n - b : 8;
        uint64_t pad[8];
        const uint64_t *idx = blocks + b;
        if (take < 8) { /* a short batch repeats its first block */
            for (int i = 0; i < 8; i++) pad[i] = blocks[b + (i < take ? i : 0)];
            idx = pad;
        }
        const __m256i i0 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)idx), mod);
        const __m256i i1 = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(idx + 4)), mod);
        const __m256i a = _mm256_permutevar8x32_epi32(i0, halves), c = _mm256_permutevar8x32_epi32(i1, halves);
        const __m256i lo = _mm256_permute2x128_si256(a, c, 0x20), hi = _mm256_permute2x128_si256(a, c, 0x31);
        if (take == 8) philox8(g, lo, hi, out + 16 * b);
        else {
            uint8_t buf[128];
            philox8(g, lo, hi, buf);
            memcpy(out + 16 * b, buf, (size_t)take * 16);
        }
    }
}

/* Blocks e / 16 + i, i < 8, a step; whole steps straight into out. */
static void philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    uint64_t e = first;
    while (count > 0) {
        const uint64_t blk = e / 16;
        const __m256i base_lo = _mm256_set1_epi32((int)(uint32_t)blk), lo = _mm256_add_epi32(base_lo, iota);
        const __m256i hi = _mm256_sub_epi32(_mm256_set1_epi32((int)(uint32_t)(blk >> 32)), lt_epu32(lo, base_lo));
        const size_t from = (size_t)(e % 16), take = 128 - from < count ? 128 - from : count;
        if (take == 128) philox8(g, lo, hi, out);
        else {
            uint8_t buf[128];
            philox8(g, lo, hi, buf);
            memcpy(out, buf + from, take);
        }
        out += take, e += take, count -= take;
    }
}

/* fa_fp8_round_f32 on 8 lanes: quantum = 2^(max(exponent, emin) - mantissa
 * bits) built from the exponent field, y = |x| / quantum (multiplying by the
 * exact power of two 1 / quantum), rounded to nearest even. */
static void fp8_round(float *x, int n, float scale, const fa_fp8_format *f)
{
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), inf_bits = _mm256_set1_epi32(0x7f800000);
    const __m256i emin = _mm256_set1_epi32(f->emin + 127), man = _mm256_set1_epi32(f->man_bits);
    const __m256i two_bias = _mm256_set1_epi32(254);
    const __m256 sc = _mm256_set1_ps(scale), max_finite = _mm256_set1_ps(f->max_finite);
    const __m256 overflow = _mm256_set1_ps(f->overflow);
    for (int i = 0; i < n; i += 8) {
        const __m256 v = _mm256_mul_ps(load8(x + i, n - i), sc);
        const __m256i u = _mm256_castps_si256(v), a = _mm256_and_si256(u, absmask);
        const __m256i qexp = _mm256_sub_epi32(_mm256_max_epi32(_mm256_srli_epi32(a, 23), emin), man);
        const __m256 quantum = _mm256_castsi256_ps(_mm256_slli_epi32(qexp, 23));
        const __m256 inv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(two_bias, qexp), 23));
        __m256 r = _mm256_mul_ps(_mm256_castsi256_ps(a), inv);
        r = _mm256_mul_ps(_mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), quantum);
        r = _mm256_blendv_ps(r, overflow, _mm256_cmp_ps(r, max_finite, _CMP_GT_OQ));
        r = _mm256_blendv_ps(r, overflow, _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, inf_bits))); /* +-inf */
        /* NaN (a and inf_bits are non-negative as signed) */
        r = _mm256_blendv_ps(r, _mm256_castsi256_ps(a), _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, inf_bits)));
        const __m256i sign = _mm256_andnot_si256(absmask, u);
        store8(x + i, n - i, _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(r), sign)));
    }
}

static float abs_max(const float *x, int n)
{
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m0 = _mm256_setzero_ps(), m1 = m0;
    /* max(|x|, m): a NaN lane keeps m, as fmaxf ignores NaN */
    for (int i = 0; i < n; i += 16) {
        m0 = _mm256_max_ps(_mm256_and_ps(load8(x + i, n - i), absmask), m0);
        if (i + 8 < n) m1 = _mm256_max_ps(_mm256_and_ps(load8(x + i + 8, n - i - 8), absmask), m1);
    }
    return hmax8(_mm256_max_ps(m0, m1));
}

static void scale2(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    for (int i = 0; i < n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(load8(x + i, n - i), va), vb);
        if (accumulate) v = _mm256_add_ps(load8(y + i, n - i), v);
        store8(y + i, n - i, v);
    }
}

static void apply_keep(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    const __m256 sc = _mm256_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * (size_t)ld;
        const uint8_t *kr = keep + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            __m128i k8 = _mm_setzero_si128();
            if (n >= 8) k8 = _mm_loadl_epi64((const __m128i *)(kr + c));
            else memcpy(&k8, kr + c, (size_t)n);
            const __m256 kf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(k8));
            store8(row + c, n, _mm256_mul_ps(load8(row + c, n), _mm256_mul_ps(kf, sc)));
        }
    }
}

/* Soft-capping: vec_tanh.h's algorithm on 8 lanes, bit for bit vec_tanh_ref.
 * Each lane takes the polynomial side (a < 0.625) or the exp one; a side is
 * computed only when some lane needs it (the scores of a real cap, Gemma 2's
 * 50, are nearly all on the polynomial side, and exp plus a division costs
 * three times the polynomial).  The sign is x's OR'd in (t >= 0, -0 kept),
 * and a NaN lane gets x itself for both (exp8 turns NaN into its clamp). */
static inline __m256 tanh8_small(__m256 a, __m256 *d)
{
    const __m256 z = _mm256_mul_ps(a, a);
    __m256 p = _mm256_set1_ps(VEC_TANH_P0);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(VEC_TANH_P1));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(VEC_TANH_P2));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(VEC_TANH_P3));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(VEC_TANH_P4));
    const __m256 t = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
    *d = _mm256_fnmadd_ps(t, t, _mm256_set1_ps(1.0f)); /* fmaf(-t, t, 1) */
    return t;
}

static inline __m256 tanh8_large(__m256 a, __m256 *d)
{
    const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    const __m256 u = _mm256_div_ps(two, _mm256_add_ps(exp8(_mm256_add_ps(a, a)), one));
    *d = _mm256_mul_ps(u, _mm256_sub_ps(two, u));
    return _mm256_sub_ps(one, u);
}

static inline __m256 tanh8(__m256 x, __m256 *dtanh)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 a = _mm256_andnot_ps(sign, x);
    const __m256 small = _mm256_cmp_ps(a, _mm256_set1_ps(VEC_TANH_SMALL), _CMP_LT_OQ); /* false for NaN */
    const int lanes = _mm256_movemask_ps(small);
    __m256 t, d;
    if (lanes == 0xff) {
        t = tanh8_small(a, &d);
    } else {
        t = tanh8_large(a, &d);
        if (lanes) {
            __m256 ds;
            const __m256 ts = tanh8_small(a, &ds);
            t = _mm256_blendv_ps(t, ts, small), d = _mm256_blendv_ps(d, ds, small);
        }
        const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        t = _mm256_blendv_ps(t, x, nan), d = _mm256_blendv_ps(d, x, nan);
    }
    *dtanh = d;
    return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

static void softcap(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    const __m256 vin = _mm256_set1_ps(in_scale), vout = _mm256_set1_ps(out_scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * (size_t)ld;
        float *drow = dtanh ? dtanh + (size_t)r * (size_t)ld : NULL;
        for (int c = 0; c < cols; c += 8) {
            const int n = cols - c;
            __m256 d;
            const __m256 t = tanh8(_mm256_mul_ps(load8(row + c, n), vin), &d);
            store8(row + c, n, _mm256_mul_ps(t, vout));
            if (drow) store8(drow + c, n, d);
        }
    }
}

static void softcap_grad(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++) {
        float *row = ds + (size_t)r * (size_t)ld;
        const float *drow = dtanh + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += 8)
            store8(row + c, cols - c, _mm256_mul_ps(load8(row + c, cols - c), load8(drow + c, cols - c)));
    }
}

/* Round 8 floats to bf16 or f16 (nearest even) and widen back. */
static inline __m256 round_weights(__m256 w, bool bf16)
{
    if (!bf16) return _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i u = _mm256_castps_si256(w);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u))); /* weights are finite */
}

static void group_pool(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out)
{
    __m256 e[128];
    for (int d = 0; d < D; d += 8) {
        const int n = D - d;
        __m256 m = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps(), acc = _mm256_setzero_ps();
        for (int r = 0; r < R; r++) {
            e[r] = _mm256_add_ps(load8(gate[r] + d, n), load8(ape + (size_t)r * D + d, n));
            m = _mm256_max_ps(m, e[r]);
        }
        for (int r = 0; r < R; r++) sum = _mm256_add_ps(sum, e[r] = exp8(_mm256_sub_ps(e[r], m)));
        for (int r = 0; r < R; r++) { /* mul then add: no contraction, as the contract states */
            const __m256 w = round_weights(_mm256_div_ps(e[r], sum), bf16);
            acc = _mm256_add_ps(acc, _mm256_mul_ps(w, load8(key[r] + d, n)));
        }
        store8(out + d, n, acc);
    }
}

/* Products of a with b and with c, each half widened to double (which holds
 * them exactly) and added into (sb0, sb1), (sc0, sc1). */
static inline void dots8_f64(__m256 a, __m256 b, __m256 c, __m256d *sb0, __m256d *sb1, __m256d *sc0, __m256d *sc1)
{
    const __m256d a0 = _mm256_cvtps_pd(_mm256_castps256_ps128(a)), a1 = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    *sb0 = _mm256_fmadd_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(b)), *sb0);
    *sb1 = _mm256_fmadd_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)), *sb1);
    *sc0 = _mm256_fmadd_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(c)), *sc0);
    *sc1 = _mm256_fmadd_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(c, 1)), *sc1);
}

/* 16 floats a step into four accumulators per sum (the fmadd latency); one
 * line of next per line of v prefetched into L2, so the row after this one
 * streams in while this one is summed. */
static void ar_dots_f64(const float *v, int D, const float *x, const float *y, float *vx, float *vy, const void *next)
{
    const char *ahead = next;
    __m256d sx0 = _mm256_setzero_pd(), sx1 = sx0, sx2 = sx0, sx3 = sx0, sy0 = sx0, sy1 = sx0, sy2 = sx0, sy3 = sx0;
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        if (ahead) _mm_prefetch(ahead + 4 * d, _MM_HINT_T1);
        const __m256 a0 = _mm256_loadu_ps(v + d), a1 = _mm256_loadu_ps(v + d + 8);
        dots8_f64(a0, x ? _mm256_loadu_ps(x + d) : a0, _mm256_loadu_ps(y + d), &sx0, &sx1, &sy0, &sy1);
        dots8_f64(a1, x ? _mm256_loadu_ps(x + d + 8) : a1, _mm256_loadu_ps(y + d + 8), &sx2, &sx3, &sy2, &sy3);
    }
    for (; d < D; d += 8) {
        const int n = D - d;
        const __m256 a = load8(v + d, n);
        dots8_f64(a, x ? load8(x + d, n) : a, load8(y + d, n), &sx0, &sx1, &sy0, &sy1);
    }
    *vx = (float)hsum4d(_mm256_add_pd(_mm256_add_pd(sx0, sx1), _mm256_add_pd(sx2, sx3)));
    *vy = (float)hsum4d(_mm256_add_pd(_mm256_add_pd(sy0, sy1), _mm256_add_pd(sy2, sy3)));
}

/* 32 elements a step into four accumulators per sum (the fmadd latency),
 * one line of next per line of v prefetched into L2. */
static void ar_dots(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                    const void *next)
{
    const char *ahead = next;
    const int64_t esize = (int64_t)attnops_dtype_size(dt);
    __m256 sx0 = _mm256_setzero_ps(), sx1 = sx0, sx2 = sx0, sx3 = sx0, sy0 = sx0, sy1 = sx0, sy2 = sx0, sy3 = sx0;
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        if (ahead) {
            _mm_prefetch(ahead + d * esize, _MM_HINT_T1);
            if (esize == 4) _mm_prefetch(ahead + d * esize + 64, _MM_HINT_T1);
        }
        const __m256 a0 = load8_dt(v, dt, d, 8), a1 = load8_dt(v, dt, d + 8, 8);
        const __m256 a2 = load8_dt(v, dt, d + 16, 8), a3 = load8_dt(v, dt, d + 24, 8);
        sx0 = _mm256_fmadd_ps(a0, x ? _mm256_loadu_ps(x + d) : a0, sx0);
        sx1 = _mm256_fmadd_ps(a1, x ? _mm256_loadu_ps(x + d + 8) : a1, sx1);
        sx2 = _mm256_fmadd_ps(a2, x ? _mm256_loadu_ps(x + d + 16) : a2, sx2);
        sx3 = _mm256_fmadd_ps(a3, x ? _mm256_loadu_ps(x + d + 24) : a3, sx3);
        sy0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(y + d), sy0);
        sy1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(y + d + 8), sy1);
        sy2 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(y + d + 16), sy2);
        sy3 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(y + d + 24), sy3);
    }
    for (; d < D; d += 8) {
        const int n = D - d;
        const __m256 a = load8_dt(v, dt, d, n);
        sx0 = _mm256_fmadd_ps(a, x ? load8(x + d, n) : a, sx0);
        sy0 = _mm256_fmadd_ps(a, load8(y + d, n), sy0);
    }
    *vx = hsum8(_mm256_add_ps(_mm256_add_ps(sx0, sx1), _mm256_add_ps(sx2, sx3)));
    *vy = hsum8(_mm256_add_ps(_mm256_add_ps(sy0, sy1), _mm256_add_ps(sy2, sy3)));
}

static void ar_accumulate(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    const __m256 vc = _mm256_set1_ps(c), ve = _mm256_set1_ps(e);
    for (int d = 0; d < D; d += 8) {
        const int n = D - d;
        __m256 a = load8(acc + d, n);
        if (c != 1.0f) a = _mm256_mul_ps(a, vc); /* c = 1: a * 1 = a exactly */
        store8(acc + d, n, _mm256_fmadd_ps(load8_dt(v, dt, d, n), ve, a));
    }
}

static void ar_store_div(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    const __m256 vd = _mm256_set1_ps(div);
    for (int d = 0; d < D; d += 8) store8_dt(out, out_dt, d, D - d, _mm256_div_ps(load8(src + d, D - d), vd));
}

/* The pair-split chunk of 32 elements from element d as four quarters:
 * q[k] = layout positions d + 8k .. d + 8k + 7, i.e. q[0], q[1] the even
 * elements of the first and second 16, q[2], q[3] their odd ones. */
typedef struct split_chunk {
    __m256 q[4];
} split_chunk;

/* The chunk of 32 bf16 from element d (a tail of D - d < 32 zero-filled). */
static inline split_chunk split32(const uint16_t *v, int d, int D)
{
    __m256i lo, hi;
    if (D - d >= 32) {
        lo = _mm256_loadu_si256((const __m256i *)(v + d));
        hi = _mm256_loadu_si256((const __m256i *)(v + d + 16));
    } else {
        uint16_t t[32] = {0};
        memcpy(t, v + d, (size_t)(D - d) * 2);
        lo = _mm256_loadu_si256((const __m256i *)t);
        hi = _mm256_loadu_si256((const __m256i *)(t + 16));
    }
    const __m256i odd = _mm256_set1_epi32((int)0xFFFF0000u);
    return (split_chunk){{_mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)),
                          _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)),
                          _mm256_castsi256_ps(_mm256_and_si256(lo, odd)),
                          _mm256_castsi256_ps(_mm256_and_si256(hi, odd))}};
}

/* Elements 2i (evens8) and 2i + 1 (odds8), i < 8, of the 16 in a, b. */
static inline __m256 evens8(__m256 a, __m256 b)
{
    const __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

static inline __m256 odds8(__m256 a, __m256 b)
{
    const __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The same chunk of natural f32 src. */
static inline split_chunk split32_f32(const float *src, int d, int D)
{
    const int t = D - d;
    const __m256 z = _mm256_setzero_ps();
    const __m256 x0 = load8(src + d, t), x1 = t > 8 ? load8(src + d + 8, t - 8) : z;
    const __m256 x2 = t > 16 ? load8(src + d + 16, t - 16) : z, x3 = t > 24 ? load8(src + d + 24, t - 24) : z;
    return (split_chunk){{evens8(x0, x1), evens8(x2, x3), odds8(x0, x1), odds8(x2, x3)}};
}

/* 16 natural f32 elements from the even and odd quarters of their half. */
static inline void store_split16_f32(float *o, int t, __m256 even, __m256 odd)
{
    const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
    store8(o, t, _mm256_permute2f128_ps(lo, hi, 0x20));
    if (t > 8) store8(o + 8, t - 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* Elements d .. d + t - 1 (t <= 32) of chunk c, in natural order: bf16
 * (streamed when asked and whole) or f32. */
static inline void store_split32(void *out, attnops_dtype out_dt, int d, int t, split_chunk c, bool stream)
{
    if (out_dt == ATTNOPS_DTYPE_BF16) {
        uint16_t *o = (uint16_t *)out + d;
        const __m256i p0 = bf16_pairs(c.q[0], c.q[2]), p1 = bf16_pairs(c.q[1], c.q[3]); /* elements 0..15, 16..31 */
        if (t == 32 && stream) {
            _mm256_stream_si256((__m256i *)o, p0);
            _mm256_stream_si256((__m256i *)(o + 16), p1);
        } else if (t == 32) {
            _mm256_storeu_si256((__m256i *)o, p0);
            _mm256_storeu_si256((__m256i *)(o + 16), p1);
        } else {
            uint16_t buf[32];
            _mm256_storeu_si256((__m256i *)buf, p0);
            _mm256_storeu_si256((__m256i *)(buf + 16), p1);
            memcpy(o, buf, (size_t)t * 2);
        }
        return;
    }
    float *o = (float *)out + d;
    store_split16_f32(o, t, c.q[0], c.q[2]);
    if (t > 16) store_split16_f32(o + 16, t - 16, c.q[1], c.q[3]);
}

/* A chunk a step into four accumulators per sum, one line of next
 * prefetched into L2 per line of v. */
static void ar_dots_split(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                          const void *next)
{
    __m256 sx0 = _mm256_setzero_ps(), sx1 = sx0, sx2 = sx0, sx3 = sx0, sy0 = sx0, sy1 = sx0, sy2 = sx0, sy3 = sx0;
    for (int d = 0; d < D; d += 32) {
        const split_chunk c = split32(v, d, D);
        if (next) _mm_prefetch((const char *)next + 2 * d, _MM_HINT_T1);
        sx0 = _mm256_fmadd_ps(c.q[0], xs ? _mm256_loadu_ps(xs + d) : c.q[0], sx0);
        sx1 = _mm256_fmadd_ps(c.q[1], xs ? _mm256_loadu_ps(xs + d + 8) : c.q[1], sx1);
        sx2 = _mm256_fmadd_ps(c.q[2], xs ? _mm256_loadu_ps(xs + d + 16) : c.q[2], sx2);
        sx3 = _mm256_fmadd_ps(c.q[3], xs ? _mm256_loadu_ps(xs + d + 24) : c.q[3], sx3);
        sy0 = _mm256_fmadd_ps(c.q[0], _mm256_loadu_ps(ys + d), sy0);
        sy1 = _mm256_fmadd_ps(c.q[1], _mm256_loadu_ps(ys + d + 8), sy1);
        sy2 = _mm256_fmadd_ps(c.q[2], _mm256_loadu_ps(ys + d + 16), sy2);
        sy3 = _mm256_fmadd_ps(c.q[3], _mm256_loadu_ps(ys + d + 24), sy3);
    }
    *vx = hsum8(_mm256_add_ps(_mm256_add_ps(sx0, sx1), _mm256_add_ps(sx2, sx3)));
    *vy = hsum8(_mm256_add_ps(_mm256_add_ps(sy0, sy1), _mm256_add_ps(sy2, sy3)));
}

/* p[0..8) = c p + e x (c = 1: p * 1 = p exactly, no multiplication). */
static inline void accumulate8(float *p, __m256 x, float c, __m256 vc, __m256 ve)
{
    __m256 a = _mm256_loadu_ps(p);
    if (c != 1.0f) a = _mm256_mul_ps(a, vc);
    _mm256_storeu_ps(p, _mm256_fmadd_ps(x, ve, a));
}

static void ar_accumulate_split(float *accs, float c, float e, const uint16_t *v, int D)
{
    const __m256 vc = _mm256_set1_ps(c), ve = _mm256_set1_ps(e);
    for (int d = 0; d < D; d += 32) {
        const split_chunk x = split32(v, d, D);
        accumulate8(accs + d, x.q[0], c, vc, ve);
        accumulate8(accs + d + 8, x.q[1], c, vc, ve);
        accumulate8(accs + d + 16, x.q[2], c, vc, ve);
        accumulate8(accs + d + 24, x.q[3], c, vc, ve);
    }
}

static void ar_store_div_split(void *out, attnops_dtype out_dt, const float *srcs, float div, int D)
{
    const __m256 vd = _mm256_set1_ps(div);
    for (int d = 0; d < D; d += 32) {
        const split_chunk c = {{_mm256_div_ps(_mm256_loadu_ps(srcs + d), vd),
                                _mm256_div_ps(_mm256_loadu_ps(srcs + d + 8), vd),
                                _mm256_div_ps(_mm256_loadu_ps(srcs + d + 16), vd),
                                _mm256_div_ps(_mm256_loadu_ps(srcs + d + 24), vd)}};
        store_split32(out, out_dt, d, D - d < 32 ? D - d : 32, c, false);
    }
}

/* One quarter of ar_grad_row_split: returns a g + b y + e x, u += b x. */
static inline __m256 grad8(const float *g, const float *y, float *u, __m256 x, __m256 va, __m256 vb, __m256 ve)
{
    __m256 r = _mm256_mul_ps(_mm256_loadu_ps(g), va);
    r = _mm256_fmadd_ps(_mm256_loadu_ps(y), vb, r);
    _mm256_storeu_ps(u, _mm256_fmadd_ps(x, vb, _mm256_loadu_ps(u)));
    return _mm256_fmadd_ps(x, ve, r);
}

static void ar_grad_row_split(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                              float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & 31) == 0;
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), ve = _mm256_set1_ps(e);
    for (int d = 0; d < D; d += 32) {
        const split_chunk x = dt == ATTNOPS_DTYPE_BF16 ? split32(v, d, D) : split32_f32(v, d, D);
        const split_chunk o = {{grad8(gs + d, ys + d, us + d, x.q[0], va, vb, ve),
                                grad8(gs + d + 8, ys + d + 8, us + d + 8, x.q[1], va, vb, ve),
                                grad8(gs + d + 16, ys + d + 16, us + d + 16, x.q[2], va, vb, ve),
                                grad8(gs + d + 24, ys + d + 24, us + d + 24, x.q[3], va, vb, ve)}};
        store_split32(out, out_dt, d, D - d < 32 ? D - d : 32, o, stream);
    }
    if (stream) _mm_sfence();
}

static void ar_grad_row(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                        float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    /* the common large case: bf16 rows on 16-byte boundaries, written whole without reading them first */
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & 15) == 0;
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), ve = _mm256_set1_ps(e);
    for (int d = 0; d < D; d += 8) {
        const int n = D - d;
        const __m256 x = load8_dt(v, dt, d, n);
        __m256 r = _mm256_mul_ps(load8(g + d, n), va);
        r = _mm256_fmadd_ps(load8(y + d, n), vb, r);
        const __m256 o = _mm256_fmadd_ps(x, ve, r);
        if (stream && n >= 8) _mm_stream_si128((__m128i *)((uint16_t *)out + d), bf16_round(o));
        else store8_dt(out, out_dt, d, n, o);
        store8(u + d, n, _mm256_fmadd_ps(x, vb, load8(u + d, n)));
    }
    if (stream) _mm_sfence();
}

const cpu_kernel_set cpu_kernels_avx2 = CPU_KERNEL_SET_COMPLETE;
