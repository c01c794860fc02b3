/* The AVX2 Philox kernels (kernels.h states the contract; the other kernels
 * of the set are src/cpu/simd/kernels_simd.c on the AVX2 vocabulary).  The
 * Philox lanes are this ISA's own algorithm: 32 x 32 -> 64-bit products
 * from vpmuludq on even and odd lanes, counters carried in vector registers
 * and the 4 x 8 words transposed to 8 blocks through 128-bit lane shuffles,
 * where AVX-512 builds its counters in memory and extracts 128-bit lanes. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"

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
static void fa_philox_blocks__avx2(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
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
static void fa_philox_bytes__avx2(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
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

const cpu_kernel_set cpu_kernels_philox__avx2 = {
    .fa = {.philox_bytes = fa_philox_bytes__avx2, .philox_blocks = fa_philox_blocks__avx2}};
