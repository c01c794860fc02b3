/* The AVX-512 Philox kernels (kernels.h states the contract; the other
 * kernels of the set are src/cpu/simd/kernels_simd.c on the AVX-512
 * vocabulary).  The Philox lanes are this ISA's own algorithm: 16 counters
 * built in memory with the 128-bit carry, 32 x 32 -> 64-bit products from
 * vpmuludq on even and odd lanes merged by k-mask blends, and the 4 x 16
 * words transposed to 16 blocks by 128-bit lane extracts, where AVX2 keeps
 * its counters in registers. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"

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

static void fa_philox_blocks__avx512(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    uint64_t idx[16];
    uint8_t buf[256];
    /* element offsets are 64-bit: a block index wraps mod 2^60, as in ao_philox_bytes(blocks[i] * 16) */
    for (int i = 0; i < 16; i++) idx[i] = blocks[i < n ? i : 0] & (UINT64_MAX >> 4);
    philox16(g, idx, buf);
    memcpy(out, buf, (size_t)n * 16);
}

static void fa_philox_bytes__avx512(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
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

const cpu_kernel_set cpu_kernels_philox__avx512 = {
    .fa = {.philox_bytes = fa_philox_bytes__avx512, .philox_blocks = fa_philox_blocks__avx512}};
