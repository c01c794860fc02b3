/* The AVX-512 (F, BW, DQ, VL) vector vocabulary: 16 float lanes.  Its
 * contract (what every vocabulary gives, bit for bit) is stated in simd.h;
 * only kernels_simd.c includes it, compiled with the AVX-512 flags.
 *
 * Masks are k registers: a row's tail is a masked load or store of any
 * element size, and v_ldexp is vscalefps, which rounds once itself. */
#ifndef ATTNOPS_CPU_SIMD_AVX512_H
#define ATTNOPS_CPU_SIMD_AVX512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#define VW 16
#define SIMD_INLINE static inline __attribute__((always_inline))

typedef __m512 vf;     /* VW floats */
typedef __m512i vi;    /* VW 32-bit integers */
typedef __m256i vh;    /* VW 16-bit values */
typedef __m512d vd;    /* VW / 2 doubles */
typedef __mmask16 vmask;

/* ---- constants, loads and stores (n: elements present, zero past n) ---- */
SIMD_INLINE vf v_set1(float x) { return _mm512_set1_ps(x); }
SIMD_INLINE vf v_zero(void) { return _mm512_setzero_ps(); }
SIMD_INLINE vf v_iota(void) { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
SIMD_INLINE vi vi_set1(int32_t x) { return _mm512_set1_epi32(x); }

/* Lanes i < n (n <= 0: none). */
SIMD_INLINE vmask vm_tail(int n) { return n >= VW ? (vmask)0xffff : n <= 0 ? (vmask)0 : (vmask)((1u << n) - 1u); }
/* The same for 2 VW 16-bit lanes. */
SIMD_INLINE __mmask32 vm_tail2(int n) { return n >= 2 * VW ? ~0u : n <= 0 ? 0u : (1u << n) - 1u; }

SIMD_INLINE vf v_load(const float *p) { return _mm512_loadu_ps(p); }
SIMD_INLINE void v_store(float *p, vf x) { _mm512_storeu_ps(p, x); }
SIMD_INLINE vf v_loadn(const float *p, int n) { return n >= VW ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(vm_tail(n), p); }
SIMD_INLINE void v_storen(float *p, int n, vf x)
{
    if (n >= VW) _mm512_storeu_ps(p, x);
    else _mm512_mask_storeu_ps(p, vm_tail(n), x);
}

SIMD_INLINE vh vh_loadn(const uint16_t *p, int n) { return _mm256_maskz_loadu_epi16(vm_tail(n), p); }
SIMD_INLINE void vh_storen(uint16_t *p, int n, vh x) { _mm256_mask_storeu_epi16(p, vm_tail(n), x); }
/* A whole step written without reading its line first (p 32-byte aligned). */
SIMD_INLINE void vh_stream(uint16_t *p, vh x) { _mm256_stream_si256((__m256i *)p, x); }

/* n bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_u8n(const uint8_t *p, int n)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(vm_tail(n), p)));
}

/* n signed bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_i8n(const int8_t *p, int n)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(vm_tail(n), p)));
}

/* VW pairs of 16-bit values (one 32-bit lane each, the first of a pair
 * low): n <= 2 VW of them, zero past n, and their stores. */
SIMD_INLINE vi vp_loadn(const uint16_t *p, int n)
{
    return n >= 2 * VW ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(vm_tail2(n), p);
}
SIMD_INLINE void vp_storen(uint16_t *p, int n, vi x) { _mm512_mask_storeu_epi16(p, vm_tail2(n), x); }
SIMD_INLINE void vp_stream(uint16_t *p, vi x) { _mm512_stream_si512((__m512i *)p, x); } /* p 64-byte aligned */
SIMD_INLINE void v_stream_fence(void) { _mm_sfence(); }
SIMD_INLINE void v_prefetch_l2(const void *p) { _mm_prefetch((const char *)p, _MM_HINT_T1); }

/* ---- arithmetic (IEEE single, one rounding each; fma fused) ---- */
SIMD_INLINE vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
SIMD_INLINE vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
SIMD_INLINE vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
SIMD_INLINE vf v_div(vf a, vf b) { return _mm512_div_ps(a, b); }
SIMD_INLINE vf v_sqrt(vf a) { return _mm512_sqrt_ps(a); }
SIMD_INLINE vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }  /* a b + c */
SIMD_INLINE vf v_fms(vf a, vf b, vf c) { return _mm512_fmsub_ps(a, b, c); }  /* a b - c */
SIMD_INLINE vf v_fnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); } /* c - a b */
/* a > b ? a : b and a < b ? a : b: b where either is NaN (vmaxps/vminps). */
SIMD_INLINE vf v_max(vf a, vf b) { return _mm512_max_ps(a, b); }
SIMD_INLINE vf v_min(vf a, vf b) { return _mm512_min_ps(a, b); }
SIMD_INLINE vf v_round_even(vf a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

SIMD_INLINE vf v_and(vf a, vf b) { return _mm512_and_ps(a, b); }
SIMD_INLINE vf v_or(vf a, vf b) { return _mm512_or_ps(a, b); }
SIMD_INLINE vf v_andnot(vf a, vf b) { return _mm512_andnot_ps(a, b); } /* ~a & b */
SIMD_INLINE vi v_bits(vf a) { return _mm512_castps_si512(a); }
SIMD_INLINE vf v_from_bits(vi a) { return _mm512_castsi512_ps(a); }

SIMD_INLINE vi vi_add(vi a, vi b) { return _mm512_add_epi32(a, b); }
SIMD_INLINE vi vi_sub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
SIMD_INLINE vi vi_and(vi a, vi b) { return _mm512_and_si512(a, b); }
SIMD_INLINE vi vi_or(vi a, vi b) { return _mm512_or_si512(a, b); }
SIMD_INLINE vi vi_max(vi a, vi b) { return _mm512_max_epi32(a, b); } /* signed */
#define vi_srli(a, imm) _mm512_srli_epi32((a), (imm))
#define vi_slli(a, imm) _mm512_slli_epi32((a), (imm))
#define vi_srai(a, imm) _mm512_srai_epi32((a), (imm))
SIMD_INLINE vi v_to_int(vf a) { return _mm512_cvtps_epi32(a); } /* nearest even (MXCSR's default) */

/* ---- masks ---- */
SIMD_INLINE vmask vm_lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); } /* false for NaN */
SIMD_INLINE vmask vm_gt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); } /* false for NaN */
SIMD_INLINE vmask vm_nan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
SIMD_INLINE vmask vm_eq_i(vi a, vi b) { return _mm512_cmpeq_epi32_mask(a, b); }
SIMD_INLINE vmask vm_gt_i(vi a, vi b) { return _mm512_cmpgt_epi32_mask(a, b); } /* signed */
SIMD_INLINE vf v_select(vmask m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); } /* m ? a : b */
SIMD_INLINE vi vi_select(vmask m, vi a, vi b) { return _mm512_mask_blend_epi32(m, b, a); }
SIMD_INLINE vf v_maskz(vmask m, vf a) { return _mm512_maskz_mov_ps(m, a); } /* m ? a : 0 */
SIMD_INLINE bool vm_all(vmask m) { return m == 0xffff; }
SIMD_INLINE bool vm_any(vmask m) { return m != 0; }

/* ---- reductions: the compiler's _mm512_reduce_* (halving: upper 256 bits onto the lower, ...) ---- */
SIMD_INLINE float v_hsum(vf x) { return _mm512_reduce_add_ps(x); }
SIMD_INLINE float v_hmax(vf x) { return _mm512_reduce_max_ps(x); }
/* Four sums at once (simd.h's order): in each 128-bit block lanes l + l+2,
 * then l + l+1; then the blocks, upper 256 bits onto the lower, then 128. */
SIMD_INLINE void v_hsum4(vf a, vf b, vf c, vf d, float out[4])
{
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 x = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

/* ---- doubles: the lower / upper VW / 2 floats widened (exactly) ---- */
SIMD_INLINE vd vd_zero(void) { return _mm512_setzero_pd(); }
SIMD_INLINE vd vd_widen_lo(vf a) { return _mm512_cvtps_pd(_mm512_castps512_ps256(a)); }
SIMD_INLINE vd vd_widen_hi(vf a) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)); }
SIMD_INLINE vd vd_add(vd a, vd b) { return _mm512_add_pd(a, b); }
SIMD_INLINE vd vd_fma(vd a, vd b, vd c) { return _mm512_fmadd_pd(a, b, c); }
SIMD_INLINE double vd_hsum(vd x) { return _mm512_reduce_add_pd(x); }

/* ---- 16-bit data ---- */
SIMD_INLINE vf vh_f16_to_f32(vh h) { return _mm512_cvtph_ps(h); } /* exact */
/* Nearest even; a NaN keeps the top of its payload (simd.h's v_f16 fixes NaNs). */
SIMD_INLINE vh v_f32_to_f16_raw(vf x) { return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
SIMD_INLINE vi vh_widen_u16(vh h) { return _mm512_cvtepu16_epi32(h); }
/* The low 16 bits of each lane. */
SIMD_INLINE vh vi_narrow_u16(vi x) { return _mm512_cvtepi32_epi16(x); }

/* ---- the pair-split rows (kernels.h AR_SPLIT) and VNNI pairs ---- */
/* Lanes 2i and 2i + 1 of the 2 VW floats a, b: the even ones and the odd ones. */
SIMD_INLINE void v_unzip(vf a, vf b, vf *even, vf *odd)
{
    const __m512i ei = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *even = _mm512_permutex2var_ps(a, ei, b);
    *odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(ei, _mm512_set1_epi32(1)), b);
}
/* The inverse: *lo = even0 odd0 even1 odd1 ..., *hi the next VW. */
SIMD_INLINE void v_zip(vf even, vf odd, vf *lo, vf *hi)
{
    const __m512i li = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    *lo = _mm512_permutex2var_ps(even, li, odd);
    *hi = _mm512_permutex2var_ps(even, _mm512_add_epi32(li, _mm512_set1_epi32(8)), odd);
}

/* 2^n p for integral n, rounded once (vscalefps). */
SIMD_INLINE vf v_ldexp(vf p, vf n) { return _mm512_scalef_ps(p, n); }

#endif
