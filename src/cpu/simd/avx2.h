/* The AVX2 + FMA + F16C vector vocabulary: 8 float lanes.  Its contract
 * (what every vocabulary gives, bit for bit) is stated in simd.h; only
 * kernels_simd.c includes it, compiled with -mavx2 -mfma -mf16c.
 *
 * AVX2 has masked loads and stores for 32-bit lanes only: 8- and 16-bit
 * data of a row's last partial step go through a zero-padded copy. */
#ifndef ATTNOPS_CPU_SIMD_AVX2_H
#define ATTNOPS_CPU_SIMD_AVX2_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define VW 8
#define SIMD_INLINE static inline __attribute__((always_inline))

typedef __m256 vf;   /* VW floats */
typedef __m256i vi;  /* VW 32-bit integers */
typedef __m128i vh;  /* VW 16-bit values */
typedef __m256d vd;  /* VW / 2 doubles */
typedef __m256 vmask; /* lanes all ones or zero */

/* ---- constants, loads and stores (n: elements present, zero past n) ---- */
SIMD_INLINE vf v_set1(float x) { return _mm256_set1_ps(x); }
SIMD_INLINE vf v_zero(void) { return _mm256_setzero_ps(); }
SIMD_INLINE vf v_iota(void) { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
SIMD_INLINE vi vi_set1(int32_t x) { return _mm256_set1_epi32(x); }

/* Lanes i < n (n <= 0: none). */
SIMD_INLINE vmask vm_tail(int n)
{
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

SIMD_INLINE vf v_load(const float *p) { return _mm256_loadu_ps(p); }
SIMD_INLINE void v_store(float *p, vf x) { _mm256_storeu_ps(p, x); }
SIMD_INLINE vf v_loadn(const float *p, int n)
{
    return n >= VW ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, _mm256_castps_si256(vm_tail(n)));
}
SIMD_INLINE void v_storen(float *p, int n, vf x)
{
    if (n >= VW) _mm256_storeu_ps(p, x);
    else _mm256_maskstore_ps(p, _mm256_castps_si256(vm_tail(n)), x);
}

SIMD_INLINE vh vh_loadn(const uint16_t *p, int n)
{
    if (n >= VW) return _mm_loadu_si128((const __m128i *)p);
    uint16_t t[VW] = {0};
    if (n > 0) memcpy(t, p, (size_t)n * 2);
    return _mm_loadu_si128((const __m128i *)t);
}
SIMD_INLINE void vh_storen(uint16_t *p, int n, vh x)
{
    if (n >= VW) {
        _mm_storeu_si128((__m128i *)p, x);
        return;
    }
    uint16_t t[VW];
    _mm_storeu_si128((__m128i *)t, x);
    memcpy(p, t, (size_t)n * 2);
}
/* A whole step written without reading its line first (p 16-byte aligned). */
SIMD_INLINE void vh_stream(uint16_t *p, vh x) { _mm_stream_si128((__m128i *)p, x); }

/* n bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_u8n(const uint8_t *p, int n)
{
    __m128i b = _mm_setzero_si128();
    if (n >= VW) b = _mm_loadl_epi64((const __m128i *)p);
    else memcpy(&b, p, (size_t)n);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}

/* n signed bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_i8n(const int8_t *p, int n)
{
    __m128i b = _mm_setzero_si128();
    if (n >= VW) b = _mm_loadl_epi64((const __m128i *)p);
    else if (n > 0) memcpy(&b, p, (size_t)n);
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

/* VW pairs of 16-bit values (one 32-bit lane each, the first of a pair
 * low): n <= 2 VW of them, zero past n, and their stores. */
SIMD_INLINE vi vp_loadn(const uint16_t *p, int n)
{
    if (n >= 2 * VW) return _mm256_loadu_si256((const __m256i *)p);
    uint16_t t[2 * VW] = {0};
    if (n > 0) memcpy(t, p, (size_t)n * 2);
    return _mm256_loadu_si256((const __m256i *)t);
}
SIMD_INLINE void vp_storen(uint16_t *p, int n, vi x)
{
    if (n >= 2 * VW) {
        _mm256_storeu_si256((__m256i *)p, x);
        return;
    }
    uint16_t t[2 * VW];
    _mm256_storeu_si256((__m256i *)t, x);
    memcpy(p, t, (size_t)n * 2);
}
SIMD_INLINE void vp_stream(uint16_t *p, vi x) { _mm256_stream_si256((__m256i *)p, x); } /* p 32-byte aligned */
SIMD_INLINE void v_stream_fence(void) { _mm_sfence(); }
SIMD_INLINE void v_prefetch_l2(const void *p) { _mm_prefetch((const char *)p, _MM_HINT_T1); }

/* ---- arithmetic (IEEE single, one rounding each; fma fused) ---- */
SIMD_INLINE vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
SIMD_INLINE vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
SIMD_INLINE vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
SIMD_INLINE vf v_div(vf a, vf b) { return _mm256_div_ps(a, b); }
SIMD_INLINE vf v_sqrt(vf a) { return _mm256_sqrt_ps(a); }
SIMD_INLINE vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }  /* a b + c */
SIMD_INLINE vf v_fms(vf a, vf b, vf c) { return _mm256_fmsub_ps(a, b, c); }  /* a b - c */
SIMD_INLINE vf v_fnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); } /* c - a b */
/* a > b ? a : b and a < b ? a : b: b where either is NaN (x86's maxps/minps). */
SIMD_INLINE vf v_max(vf a, vf b) { return _mm256_max_ps(a, b); }
SIMD_INLINE vf v_min(vf a, vf b) { return _mm256_min_ps(a, b); }
SIMD_INLINE vf v_round_even(vf a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

SIMD_INLINE vf v_and(vf a, vf b) { return _mm256_and_ps(a, b); }
SIMD_INLINE vf v_or(vf a, vf b) { return _mm256_or_ps(a, b); }
SIMD_INLINE vf v_andnot(vf a, vf b) { return _mm256_andnot_ps(a, b); } /* ~a & b */
SIMD_INLINE vi v_bits(vf a) { return _mm256_castps_si256(a); }
SIMD_INLINE vf v_from_bits(vi a) { return _mm256_castsi256_ps(a); }

SIMD_INLINE vi vi_add(vi a, vi b) { return _mm256_add_epi32(a, b); }
SIMD_INLINE vi vi_sub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
SIMD_INLINE vi vi_and(vi a, vi b) { return _mm256_and_si256(a, b); }
SIMD_INLINE vi vi_or(vi a, vi b) { return _mm256_or_si256(a, b); }
SIMD_INLINE vi vi_max(vi a, vi b) { return _mm256_max_epi32(a, b); } /* signed */
#define vi_srli(a, imm) _mm256_srli_epi32((a), (imm))
#define vi_slli(a, imm) _mm256_slli_epi32((a), (imm))
#define vi_srai(a, imm) _mm256_srai_epi32((a), (imm))
SIMD_INLINE vi v_to_int(vf a) { return _mm256_cvtps_epi32(a); } /* nearest even */

/* ---- masks ---- */
SIMD_INLINE vmask vm_lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }  /* false for NaN */
SIMD_INLINE vmask vm_gt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }  /* false for NaN */
SIMD_INLINE vmask vm_nan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
SIMD_INLINE vmask vm_eq_i(vi a, vi b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)); }
SIMD_INLINE vmask vm_gt_i(vi a, vi b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); } /* signed */
SIMD_INLINE vf v_select(vmask m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); } /* m ? a : b */
SIMD_INLINE vi vi_select(vmask m, vi a, vi b) { return _mm256_blendv_epi8(b, a, _mm256_castps_si256(m)); }
SIMD_INLINE vf v_maskz(vmask m, vf a) { return _mm256_and_ps(a, m); } /* m ? a : 0 */
SIMD_INLINE bool vm_all(vmask m) { return _mm256_movemask_ps(m) == 0xff; }
SIMD_INLINE bool vm_any(vmask m) { return _mm256_movemask_ps(m) != 0; }

/* ---- reductions: the upper half added to (or maxed with) the lower, halving to one lane ---- */
SIMD_INLINE float v_hsum(vf x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
/* Four sums at once (simd.h's order): in each 128-bit block lanes l + l+2,
 * then l + l+1; then the two blocks. */
SIMD_INLINE void v_hsum4(vf a, vf b, vf c, vf d, float out[4])
{
    const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    const __m256 x = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xEE));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1)));
}
SIMD_INLINE float v_hmax(vf x)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/* ---- doubles: the lower / upper VW / 2 floats widened (exactly) ---- */
SIMD_INLINE vd vd_zero(void) { return _mm256_setzero_pd(); }
SIMD_INLINE vd vd_widen_lo(vf a) { return _mm256_cvtps_pd(_mm256_castps256_ps128(a)); }
SIMD_INLINE vd vd_widen_hi(vf a) { return _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)); }
SIMD_INLINE vd vd_add(vd a, vd b) { return _mm256_add_pd(a, b); }
SIMD_INLINE vd vd_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }
SIMD_INLINE double vd_hsum(vd x)
{
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* ---- 16-bit data ---- */
SIMD_INLINE vf vh_f16_to_f32(vh h) { return _mm256_cvtph_ps(h); } /* exact */
/* Nearest even; a NaN keeps the top of its payload (simd.h's v_f16 fixes NaNs). */
SIMD_INLINE vh v_f32_to_f16_raw(vf x) { return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
SIMD_INLINE vi vh_widen_u16(vh h) { return _mm256_cvtepu16_epi32(h); }
/* The low 16 bits of each lane (every lane <= 0xffff). */
SIMD_INLINE vh vi_narrow_u16(vi x) { return _mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1)); }

/* ---- the pair-split rows (kernels.h AR_SPLIT) and VNNI pairs ---- */
/* Lanes 2i and 2i + 1 of the 2 VW floats a, b: the even ones and the odd ones. */
SIMD_INLINE void v_unzip(vf a, vf b, vf *even, vf *odd)
{
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}
/* The inverse: *lo = even0 odd0 even1 odd1 ..., *hi the next VW. */
SIMD_INLINE void v_zip(vf even, vf odd, vf *lo, vf *hi)
{
    const __m256 l = _mm256_unpacklo_ps(even, odd), h = _mm256_unpackhi_ps(even, odd);
    *lo = _mm256_permute2f128_ps(l, h, 0x20);
    *hi = _mm256_permute2f128_ps(l, h, 0x31);
}

/* 2^n p for integral n in [-150, 128], rounded once: no vscalefps, so 2^n
 * is applied as 2^(n>>1) then 2^(n - (n>>1)), each a normal float built from
 * exponent bits; the first product is exact, so the second rounds once,
 * subnormals and the underflow to 0 included, as scalef does. */
SIMD_INLINE vf v_ldexp(vf p, vf n)
{
    const __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

#endif
