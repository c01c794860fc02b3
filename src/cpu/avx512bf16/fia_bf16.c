/* FusedInferAttentionScore's few-row kernels (kernels.h, fia_kernels) on
 * AVX512-BF16 (Zen 4, Cooper Lake, Sapphire Rapids): for bf16 keys and
 * values, VDPBF16PS does 32 products a step where the f32 FMAs of the
 * AVX-512 set do 16 after widening each element, which halves a decode
 * step's arithmetic (it is the arithmetic, not the bytes, that bounds the
 * step on a few cores: 4 FLOPs per cached bf16 element and query row).
 * int8 keys and values take the same path when they meet bf16 values (q of
 * bf16 values; a bf16 query's p): an int8 value is exact in bf16, widened
 * once per chunk (int32, f32, bf16) and shared by the block's rows.  Other
 * dtypes, and head dims past FIA_BF16_MAX_D, go to the AVX-512 set's
 * kernels.  VDPBF16PS adds each pair of exact products to the accumulator
 * with one rounding each, flushing subnormal bf16 inputs to zero (Intel SDM,
 * VDPBF16PS; AMD implements the same).
 *
 *   dot_rows:  q f32 rows (bf16 values: the query's own), packed once per
 *              call into bf16 chunks of 32; 4 rows x 2 keys of accumulators;
 *              the 8 sums reduced together (halves, 128-bit blocks, two
 *              hadds) instead of 8 horizontal sums.
 *   axpy_rows: (a bf16 query's call) p rounded to bf16 (nearest even) as
 *              the FlashAttention forward's bf16 GEMMs take P; keys in
 *              pairs, the two value rows
 *              interleaved by 16-bit unpacks so that one VDPBF16PS adds
 *              p_c v_c[d] + p_c+1 v_c+1[d]; 4 rows x 64 columns of O in
 *              registers, put back in order at the end of each pass. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/kernels.h"

enum { ROWS = 4, FIA_BF16_MAX_D = 1024, CHUNK = 32, KEYS_MAX = 512 };

extern const cpu_kernel_set cpu_kernels_simd__avx512; /* the kernels for everything else */

#define UNROLLED _Pragma("GCC unroll 8")

static inline __mmask16 tail16(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u); }
static inline __mmask32 tail32(int n) { return n >= 32 ? ~0u : n <= 0 ? 0u : (1u << n) - 1u; }

/* 32 f32 values holding bf16 values (n present, zero past n) as 32 bf16: their high halves. */
static inline __m512i bf16_chunk(const float *q, int n)
{
    const __m512 lo = _mm512_maskz_loadu_ps(tail16(n), q), hi = _mm512_maskz_loadu_ps(tail16(n - 16), q + 16);
    const __m256i l = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(lo), 16));
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(hi), 16));
    return _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
}

/* Elements [32 ch, 32 ch + 32) of a bf16 or int8 row (zero past the mask) as 32 bf16. */
static inline __m512i row_chunk(const void *row, bool int8, int ch, __mmask32 m)
{
    if (!int8) return _mm512_maskz_loadu_epi16(m, (const uint16_t *)row + ch * CHUNK);
    const __m256i b = _mm256_maskz_loadu_epi8(m, (const int8_t *)row + ch * CHUNK);
    const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(b)));
    const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(b, 1)));
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* R (constant) rows of packed q against NP (constant) pairs of keys from
 * key c (an odd last key pairs with itself, its twin's sums dropped),
 * asking for their `ahead` rows. */
static inline __attribute__((always_inline)) void dot_pairs(const __m512i qb[ROWS][FIA_BF16_MAX_D / CHUNK], int R,
                                                            const void *const *k, int c, int NP, bool int8, int D,
                                                            int cols, float *s, int ld_s, bool accumulate,
                                                            const void *const *ahead, int ahead_bytes)
{
    const int chunks = (D + CHUNK - 1) / CHUNK;
    const void *keys[4];
    UNROLLED for (int j = 0; j < 2 * NP; j++) {
        keys[j] = k[c + j < cols ? c + j : c + j - 1];
        if (ahead && c + j < cols) fia_prefetch_row(ahead[c + j], ahead_bytes);
    }
    __m512 a[4][ROWS];
    UNROLLED for (int j = 0; j < 2 * NP; j++)
        UNROLLED for (int r = 0; r < ROWS; r++) a[j][r] = _mm512_setzero_ps();
    for (int ch = 0; ch < chunks; ch++) {
        const __mmask32 m = tail32(D - ch * CHUNK);
        __m512i x[4];
        UNROLLED for (int j = 0; j < 2 * NP; j++) x[j] = row_chunk(keys[j], int8, ch, m);
        UNROLLED for (int r = 0; r < R; r++)
            UNROLLED for (int j = 0; j < 2 * NP; j++)
                a[j][r] = _mm512_dpbf16_ps(a[j][r], (__m512bh)qb[r][ch], (__m512bh)x[j]);
    }
    UNROLLED for (int h = 0; h < NP; h++) {
        const __m512 *a0 = a[2 * h], *a1 = a[2 * h + 1];
        /* u[r]: row r's partial sums, 4 of the pair's first key then 4 of its second; the hadds finish them */
        __m256 u[ROWS];
        UNROLLED for (int r = 0; r < ROWS; r++) {
            const __m256 t0 = _mm256_add_ps(_mm512_castps512_ps256(a0[r]), _mm512_extractf32x8_ps(a0[r], 1));
            const __m256 t1 = _mm256_add_ps(_mm512_castps512_ps256(a1[r]), _mm512_extractf32x8_ps(a1[r], 1));
            u[r] = _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
        }
        float sum[8]; /* rows 0..3 of the first key, then of the second */
        _mm256_storeu_ps(sum, _mm256_hadd_ps(_mm256_hadd_ps(u[0], u[1]), _mm256_hadd_ps(u[2], u[3])));
        const int c0 = c + 2 * h;
        UNROLLED for (int r = 0; r < R; r++) {
            float *out = s + (size_t)r * ld_s + c0;
            out[0] = accumulate ? out[0] + sum[r] : sum[r];
            if (c0 + 1 < cols) out[1] = accumulate ? out[1] + sum[4 + r] : sum[4 + r];
        }
    }
}

/* R (constant) rows of q against the keys, four at a time (16 chains of
 * VDPBF16PS: in L1 on Zen 4, 2 keys' 8 took 37 cycles a key), then a pair
 * with what is left. */
static inline __attribute__((always_inline)) void dot_block(const float *q, int R, int ld_q, const void *const *k,
                                                            bool int8, int D, int cols, float *s, int ld_s,
                                                            bool accumulate, const void *const *ahead, int ahead_bytes)
{
    __m512i qb[ROWS][FIA_BF16_MAX_D / CHUNK];
    const int chunks = (D + CHUNK - 1) / CHUNK;
    for (int r = 0; r < ROWS; r++)
        for (int ch = 0; ch < chunks; ch++)
            qb[r][ch] = r < R ? bf16_chunk(q + (size_t)r * ld_q + ch * CHUNK, D - ch * CHUNK) : _mm512_setzero_si512();
    int c = 0;
    for (; c + 4 <= cols; c += 4) dot_pairs(qb, R, k, c, 2, int8, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
    for (; c < cols; c += 2) dot_pairs(qb, R, k, c, 1, int8, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
}

/* Whether every q value is a bf16 value (low 16 bits zero): rows x D
 * compares a call, against rows x D x cols products. */
static bool bf16_values(const float *q, int rows, int ld_q, int D)
{
    __m512i low = _mm512_setzero_si512();
    for (int r = 0; r < rows; r++)
        for (int d = 0; d < D; d += 16)
            low = _mm512_or_si512(low, _mm512_maskz_loadu_epi32(tail16(D - d), q + (size_t)r * ld_q + d));
    return _mm512_test_epi32_mask(low, _mm512_set1_epi32(0xffff)) == 0;
}

/* The first block of rows asks for the `ahead` rows. */
static inline __attribute__((always_inline)) void dot_blocks(const float *q, int rows, int ld_q, const void *const *k,
                                                             bool int8, int D, int cols, float *s, int ld_s,
                                                             bool accumulate, const void *const *ahead, int ahead_bytes)
{
    for (int r0 = 0; r0 < rows; r0 += ROWS, ahead = NULL) {
        const float *qb = q + (size_t)r0 * ld_q;
        float *sb = s + (size_t)r0 * ld_s;
        switch (rows - r0) {
        case 1: dot_block(qb, 1, ld_q, k, int8, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        case 2: dot_block(qb, 2, ld_q, k, int8, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        case 3: dot_block(qb, 3, ld_q, k, int8, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        default: dot_block(qb, ROWS, ld_q, k, int8, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes);
        }
    }
}

static void fia_dot_rows__avx512bf16(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt,
                                     int D, int cols, float *s, int ld_s, bool accumulate, const void *const *ahead,
                                     int ahead_bytes)
{
    if (D > FIA_BF16_MAX_D || (dt != ATTNOPS_DTYPE_BF16 && (dt != ATTNOPS_DTYPE_I8 || !bf16_values(q, rows, ld_q, D))))
        cpu_kernels_simd__avx512.fia.dot_rows(q, rows, ld_q, k, dt, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
    else if (dt == ATTNOPS_DTYPE_I8)
        dot_blocks(q, rows, ld_q, k, true, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
    else
        dot_blocks(q, rows, ld_q, k, false, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
}

/* The 16-bit unpacks leave a chunk's 32 columns as lo: {0-3, 8-11, 16-19, 24-27}, hi: {4-7, ...}; these
 * indices put them back: columns 0-15 and 16-31 of the chunk. */
static inline void in_order(__m512 lo, __m512 hi, __m512 *first, __m512 *second)
{
    const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    *first = _mm512_permutex2var_ps(lo, i0, hi), *second = _mm512_permutex2var_ps(lo, i1, hi);
}

/* R (constant) rows x 2 chunks of O per pass over the keys; the first pass asks for the `ahead` rows. */
static inline __attribute__((always_inline)) void axpy_block(const uint32_t *pp, int R, const void *const *v,
                                                             bool int8, int D, int cols, float *o, int ld_o,
                                                             const void *const *ahead, int ahead_bytes)
{
    for (int d0 = 0; d0 < D; d0 += 2 * CHUNK, ahead = NULL) {
        __m512 lo[ROWS][2], hi[ROWS][2];
        UNROLLED for (int r = 0; r < ROWS; r++)
            UNROLLED for (int h = 0; h < 2; h++) lo[r][h] = _mm512_setzero_ps(), hi[r][h] = _mm512_setzero_ps();
        const __mmask32 m0 = tail32(D - d0), m1 = tail32(D - d0 - CHUNK);
        for (int c = 0; c < cols; c += 2) {
            const int ch = d0 / CHUNK;
            if (ahead) {
                fia_prefetch_row(ahead[c], ahead_bytes);
                if (c + 1 < cols) fia_prefetch_row(ahead[c + 1], ahead_bytes);
            }
            const __m512i a0 = row_chunk(v[c], int8, ch, m0), a1 = row_chunk(v[c], int8, ch + 1, m1);
            __m512i b0 = _mm512_setzero_si512(), b1 = b0; /* an odd last key pairs with zeros (its p is 0 too) */
            if (c + 1 < cols) b0 = row_chunk(v[c + 1], int8, ch, m0), b1 = row_chunk(v[c + 1], int8, ch + 1, m1);
            const __m512i x[2][2] = {{_mm512_unpacklo_epi16(a0, b0), _mm512_unpackhi_epi16(a0, b0)},
                                     {_mm512_unpacklo_epi16(a1, b1), _mm512_unpackhi_epi16(a1, b1)}};
            UNROLLED for (int r = 0; r < R; r++) {
                const __m512bh w = (__m512bh)_mm512_set1_epi32((int)pp[r * (KEYS_MAX / 2) + c / 2]);
                UNROLLED for (int h = 0; h < 2; h++) {
                    lo[r][h] = _mm512_dpbf16_ps(lo[r][h], w, (__m512bh)x[h][0]);
                    hi[r][h] = _mm512_dpbf16_ps(hi[r][h], w, (__m512bh)x[h][1]);
                }
            }
        }
        UNROLLED for (int r = 0; r < R; r++)
            UNROLLED for (int h = 0; h < 2; h++) {
                float *row = o + (size_t)r * ld_o + d0 + h * CHUNK;
                const int n = D - d0 - h * CHUNK;
                __m512 first, second;
                in_order(lo[r][h], hi[r][h], &first, &second);
                _mm512_mask_storeu_ps(row, tail16(n), _mm512_add_ps(_mm512_maskz_loadu_ps(tail16(n), row), first));
                _mm512_mask_storeu_ps(row + 16, tail16(n - 16),
                                      _mm512_add_ps(_mm512_maskz_loadu_ps(tail16(n - 16), row + 16), second));
            }
    }
}

static inline __attribute__((always_inline)) void axpy_blocks(const uint32_t *pp, int R, const void *const *v,
                                                              bool int8, int D, int cols, float *o, int ld_o,
                                                              const void *const *ahead, int ahead_bytes)
{
    switch (R) {
    case 1: axpy_block(pp, 1, v, int8, D, cols, o, ld_o, ahead, ahead_bytes); break;
    case 2: axpy_block(pp, 2, v, int8, D, cols, o, ld_o, ahead, ahead_bytes); break;
    case 3: axpy_block(pp, 3, v, int8, D, cols, o, ld_o, ahead, ahead_bytes); break;
    default: axpy_block(pp, ROWS, v, int8, D, cols, o, ld_o, ahead, ahead_bytes);
    }
}

static void fia_axpy_rows__avx512bf16(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt,
                                      int D, int cols, float *o, int ld_o, bool p_bf16, const void *const *ahead,
                                      int ahead_bytes)
{
    if (!p_bf16 || (dt != ATTNOPS_DTYPE_BF16 && dt != ATTNOPS_DTYPE_I8) || cols > KEYS_MAX) {
        cpu_kernels_simd__avx512.fia.axpy_rows(p, rows, ld_p, v, dt, D, cols, o, ld_o, p_bf16, ahead, ahead_bytes);
        return;
    }
    const bool int8 = dt == ATTNOPS_DTYPE_I8;
    /* each row's p as bf16 pairs (p_c low, p_c+1 high; nearest even), an odd tail's partner 0 */
    uint32_t pp[ROWS * (KEYS_MAX / 2)];
    for (int r0 = 0; r0 < rows; r0 += ROWS, ahead = NULL) { /* the first block of rows asks for them */
        const int R = rows - r0 < ROWS ? rows - r0 : ROWS;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < cols; c += 2 * 16) {
                const float *pr = p + (size_t)(r0 + r) * ld_p + c;
                const __m512 lo = _mm512_maskz_loadu_ps(tail16(cols - c), pr);
                const __m512 hi = _mm512_maskz_loadu_ps(tail16(cols - c - 16), pr + 16);
                _mm512_storeu_si512(pp + r * (KEYS_MAX / 2) + c / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
        float *ob = o + (size_t)r0 * ld_o;
        if (int8) axpy_blocks(pp, R, v, true, D, cols, ob, ld_o, ahead, ahead_bytes); /* int8 a constant in each copy */
        else axpy_blocks(pp, R, v, false, D, cols, ob, ld_o, ahead, ahead_bytes);
    }
}

const cpu_kernel_set cpu_kernels_fia__avx512bf16 = {
    .fia = {.dot_rows = fia_dot_rows__avx512bf16, .axpy_rows = fia_axpy_rows__avx512bf16},
};
