/* AVX-512 versions of the element-wise tile kernels (isa.h states the
 * contract; tile_kernels_portable.c is the plain-C statement of it).
 * Compiled with AVX-512 flags and reached only through fa_tile_kernels_get()
 * after the CPUID check. */
#include <immintrin.h>
#include <math.h>

#include "cpu/isa.h"

/* exp(x) for 16 floats, inlined because it runs on every score: Cody-Waite
 * reduction x = n ln2 + r (ln2 split in two so n*ln2_hi is exact), the
 * Cephes expf polynomial on |r| <= ln2/2, then vscalefps for the 2^n, which
 * also underflows cleanly to 0.  Error: at most 1 ULP against the correctly
 * rounded result over [-87.3, 88.7] (a sweep of 44M inputs, see
 * docs/NUMERICS.md); exp(0) = 1 and exp(-inf) = 0 exactly. */
static inline __m512 exp16(__m512 x)
{
    const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
    const __m512 ln2_hi = _mm512_set1_ps(0.693359375f), ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.7228f)), _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
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

/* 16 bias values widened to fp32 (f16 and bf16 exactly). */
static inline __m512 load_bias(const void *bias, attnops_dtype dtype, int64_t at, __mmask16 k)
{
    if (dtype == ATTNOPS_DTYPE_F32) return _mm512_maskz_loadu_ps(k, (const float *)bias + at);
    __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t *)bias + at);
    if (dtype == ATTNOPS_DTYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static void add_bias(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale)
{
    const __m512 vs = _mm512_set1_ps(scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += 16) {
            __mmask16 k = tail_mask(cols - c);
            __m512 x = _mm512_maskz_loadu_ps(k, row + c), y = load_bias(bias, dtype, r * ld_b + c, k);
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

const fa_tile_kernels fa_tile_kernels_avx512 = {softmax_fwd, softmax_bwd, to_bf16, scale_rows, add_bias, add_alibi};
