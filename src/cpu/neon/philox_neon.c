/* The NEON Philox kernels (kernels.h states the contract; the other kernels
 * of the set are src/cpu/simd/kernels_simd.c on the NEON vocabulary).  The
 * Philox lanes are this ISA's own algorithm: 32 x 32 -> 64-bit products
 * from UMULL / UMULL2 gathered by UZP1 / UZP2, the counters' 128-bit carry
 * from compares, two quads of 4 blocks a round (one's multiplies fill the
 * other's latency) and a 4 x 4 transpose by ZIP, where the x86 sets use
 * vpmuludq on even and odd lanes. */
#include <arm_neon.h>
#include <string.h>

#include "cpu/kernels.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The four counter words of 4 Philox blocks: lane i of w[k] is word k of
 * block i. */
typedef struct philox_quad {
    uint32x4_t w[4];
} philox_quad;

/* Counters base + n_i, n_i = hi[i] << 32 | lo[i], with the carry through
 * all four words (word 1 adds hi and word 0's carry, either of which can
 * carry out).  A compare's all-ones lane is -1: subtracting it adds 1. */
ALWAYS_INLINE philox_quad philox_counters(const ao_philox *g, uint32x4_t lo, uint32x4_t hi)
{
    const uint32x4_t b0 = vdupq_n_u32(g->base[0]), b1 = vdupq_n_u32(g->base[1]);
    const uint32x4_t b2 = vdupq_n_u32(g->base[2]), b3 = vdupq_n_u32(g->base[3]);
    const uint32x4_t c0 = vaddq_u32(b0, lo), t = vaddq_u32(b1, hi);
    const uint32x4_t c1 = vsubq_u32(t, vcltq_u32(c0, b0));
    const uint32x4_t carry1 = vorrq_u32(vcltq_u32(t, b1), vcltq_u32(c1, t));
    const uint32x4_t c2 = vsubq_u32(b2, carry1);
    return (philox_quad){{c0, c1, c2, vsubq_u32(b3, vcltq_u32(c2, b2))}};
}

/* One round: the 32 x 32 -> 64-bit products of words 0 and 2 (UMULL,
 * UMULL2; UZP1 / UZP2 gather their low and high words in lane order). */
ALWAYS_INLINE philox_quad philox_round(philox_quad c, uint32x4_t m0, uint32x4_t m1, uint32x4_t k0, uint32x4_t k1)
{
    const uint32x4_t p0a = vreinterpretq_u32_u64(vmull_u32(vget_low_u32(c.w[0]), vget_low_u32(m0)));
    const uint32x4_t p0b = vreinterpretq_u32_u64(vmull_high_u32(c.w[0], m0));
    const uint32x4_t p1a = vreinterpretq_u32_u64(vmull_u32(vget_low_u32(c.w[2]), vget_low_u32(m1)));
    const uint32x4_t p1b = vreinterpretq_u32_u64(vmull_high_u32(c.w[2], m1));
    const uint32x4_t hi0 = vuzp2q_u32(p0a, p0b), lo0 = vuzp1q_u32(p0a, p0b);
    const uint32x4_t hi1 = vuzp2q_u32(p1a, p1b), lo1 = vuzp1q_u32(p1a, p1b);
    return (philox_quad){{veorq_u32(veorq_u32(hi1, c.w[1]), k0), lo1, veorq_u32(veorq_u32(hi0, c.w[3]), k1), lo0}};
}

/* The quad's 4 blocks of 4 little-endian words into out[64]: a 4 x 4
 * transpose (stored as bytes, since out has no alignment). */
ALWAYS_INLINE void philox_store4(philox_quad c, uint8_t *out)
{
    const uint64x2_t t0 = vreinterpretq_u64_u32(vzip1q_u32(c.w[0], c.w[1]));
    const uint64x2_t t1 = vreinterpretq_u64_u32(vzip2q_u32(c.w[0], c.w[1]));
    const uint64x2_t t2 = vreinterpretq_u64_u32(vzip1q_u32(c.w[2], c.w[3]));
    const uint64x2_t t3 = vreinterpretq_u64_u32(vzip2q_u32(c.w[2], c.w[3]));
    vst1q_u8(out, vreinterpretq_u8_u64(vzip1q_u64(t0, t2)));
    vst1q_u8(out + 16, vreinterpretq_u8_u64(vzip2q_u64(t0, t2)));
    vst1q_u8(out + 32, vreinterpretq_u8_u64(vzip1q_u64(t1, t3)));
    vst1q_u8(out + 48, vreinterpretq_u8_u64(vzip2q_u64(t1, t3)));
}

/* Philox blocks base + n_i (i < 8; lanes of lo0, hi0 blocks 0..3, of lo1,
 * hi1 blocks 4..7) into out[16 * i].  Two quads a round, so one's
 * multiplies fill the other's latency. */
static void philox8(const ao_philox *g, uint32x4_t lo0, uint32x4_t hi0, uint32x4_t lo1, uint32x4_t hi1,
                    uint8_t out[128])
{
    philox_quad a = philox_counters(g, lo0, hi0), b = philox_counters(g, lo1, hi1);
    const uint32x4_t m0 = vdupq_n_u32(0xD2511F53u), m1 = vdupq_n_u32(0xCD9E8D57u);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 7; r++) {
        const uint32x4_t vk0 = vdupq_n_u32(k0), vk1 = vdupq_n_u32(k1);
        a = philox_round(a, m0, m1, vk0, vk1);
        b = philox_round(b, m0, m1, vk0, vk1);
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    philox_store4(a, out);
    philox_store4(b, out + 64);
}

/* Block i is that of stream element blocks[i] * 16 (ao_philox_bytes, as
 * the portable statement): its index mod 2^60. */
static void fa_philox_blocks__neon(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    const uint64x2_t mod = vdupq_n_u64(UINT64_MAX >> 4);
    for (int b = 0; b < n; b += 8) {
        const int take = n - b < 8 ? n - b : 8;
        uint64_t pad[8] = {0};
        const uint64_t *idx = blocks + b;
        if (take < 8) { /* a short batch computes blocks 0 for the missing ones */
            memcpy(pad, idx, (size_t)take * sizeof *pad);
            idx = pad;
        }
        /* the indices' low words, then their high words (UZP1 / UZP2) */
        const uint32x4_t i0 = vreinterpretq_u32_u64(vandq_u64(vld1q_u64(idx), mod));
        const uint32x4_t i1 = vreinterpretq_u32_u64(vandq_u64(vld1q_u64(idx + 2), mod));
        const uint32x4_t i2 = vreinterpretq_u32_u64(vandq_u64(vld1q_u64(idx + 4), mod));
        const uint32x4_t i3 = vreinterpretq_u32_u64(vandq_u64(vld1q_u64(idx + 6), mod));
        const uint32x4_t lo0 = vuzp1q_u32(i0, i1), hi0 = vuzp2q_u32(i0, i1);
        const uint32x4_t lo1 = vuzp1q_u32(i2, i3), hi1 = vuzp2q_u32(i2, i3);
        if (take == 8) philox8(g, lo0, hi0, lo1, hi1, out + 16 * b);
        else {
            uint8_t buf[128];
            philox8(g, lo0, hi0, lo1, hi1, buf);
            memcpy(out + 16 * b, buf, (size_t)take * 16);
        }
    }
}

/* Blocks e / 16 + i, i < 8, a step; whole steps straight into out. */
static void fa_philox_bytes__neon(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    const uint32x4_t lane0 = {0, 1, 2, 3}, lane4 = {4, 5, 6, 7};
    uint64_t e = first;
    while (count > 0) {
        const uint64_t blk = e / 16;
        const uint32x4_t base_lo = vdupq_n_u32((uint32_t)blk), base_hi = vdupq_n_u32((uint32_t)(blk >> 32));
        const uint32x4_t lo0 = vaddq_u32(base_lo, lane0), lo1 = vaddq_u32(base_lo, lane4);
        /* the low word's carry into the high one (all-ones is -1) */
        const uint32x4_t hi0 = vsubq_u32(base_hi, vcltq_u32(lo0, base_lo));
        const uint32x4_t hi1 = vsubq_u32(base_hi, vcltq_u32(lo1, base_lo));
        const size_t from = (size_t)(e % 16), take = 128 - from < count ? 128 - from : count;
        if (take == 128) philox8(g, lo0, hi0, lo1, hi1, out);
        else {
            uint8_t buf[128];
            philox8(g, lo0, hi0, lo1, hi1, buf);
            memcpy(out, buf + from, take);
        }
        out += take, e += take, count -= take;
    }
}

const cpu_kernel_set cpu_kernels_philox__neon = {
    .fa = {.philox_bytes = fa_philox_bytes__neon, .philox_blocks = fa_philox_blocks__neon}};
