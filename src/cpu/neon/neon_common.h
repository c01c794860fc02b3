/* What the NEON kernel files share: ALWAYS_INLINE (at -O2 gcc neither
 * unswitches nor fully unrolls their small row loops, so the row bodies are
 * forced inline to make their dtype and form choices constants), vec_exp.h's
 * exp on 4 lanes, and the bf16/f16 conversions, bit for bit the scalar ones
 * of src/core (the rounding rules live here once). */
#ifndef ATTNOPS_CPU_NEON_COMMON_H
#define ATTNOPS_CPU_NEON_COMMON_H

#include <arm_neon.h>

#include "cpu/vec_exp.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* vec_exp.h's exp on 4 floats, bit for bit vec_exp_ref.  The upper clamp
 * compares and selects so that a NaN becomes HI (vminq would keep it);
 * after it x is no NaN, so vmaxq is the lower clamp.  2^n (n in [-150,
 * 128]) is applied as 2^(n>>1) then 2^(n - (n>>1)), each a normal float
 * built from exponent bits: the first product is exact, so the second
 * rounds once, subnormal results and the underflow to 0 included, as
 * ldexpf does. */
ALWAYS_INLINE float32x4_t exp4(float32x4_t x)
{
    const float32x4_t hi = vdupq_n_f32(VEC_EXP_HI);
    x = vbslq_f32(vcltq_f32(x, hi), x, hi);
    x = vmaxq_f32(x, vdupq_n_f32(VEC_EXP_LO));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(VEC_EXP_LOG2E)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(VEC_EXP_LN2_HI)); /* fmaf(-n, ln2_hi, x) */
    r = vfmsq_f32(r, n, vdupq_n_f32(VEC_EXP_LN2_LO));
    float32x4_t p = vdupq_n_f32(VEC_EXP_P0);
    p = vfmaq_f32(vdupq_n_f32(VEC_EXP_P1), p, r);
    p = vfmaq_f32(vdupq_n_f32(VEC_EXP_P2), p, r);
    p = vfmaq_f32(vdupq_n_f32(VEC_EXP_P3), p, r);
    p = vfmaq_f32(vdupq_n_f32(VEC_EXP_P4), p, r);
    p = vfmaq_f32(vdupq_n_f32(VEC_EXP_P5), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    const int32x4_t k = vcvtq_s32_f32(n), k1 = vshrq_n_s32(k, 1), k2 = vsubq_s32(k, k1);
    const int32x4_t bias = vdupq_n_s32(127);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k1, bias), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(k2, bias), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

/* bf16(x): nearest even on the integer bits, NaN -> 0x7FC0, bit for bit
 * ao_f32_to_bf16 (ADDHN adds the rounding bias and keeps the high half;
 * base ARMv8.0 has no bf16 instruction). */
ALWAYS_INLINE uint16x4_t bf16_round4(float32x4_t x)
{
    const uint32x4_t u = vreinterpretq_u32_f32(x);
    const uint32x4_t bias = vaddq_u32(vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1)), vdupq_n_u32(0x7fff));
    const uint16x4_t not_nan = vmovn_u32(vceqq_f32(x, x));
    return vbsl_u16(not_nan, vaddhn_u32(u, bias), vdup_n_u16(0x7fc0));
}

/* f16(x): FCVTN rounds to nearest even (the FPCR mode Linux runs),
 * subnormals and the overflow to inf included, but keeps part of a NaN's
 * payload: a NaN lane becomes sign | 0x7E00 (the sign from x, whatever
 * FPCR.DN), bit for bit attnops_f32_to_f16. */
ALWAYS_INLINE uint16x4_t f16_round4(float32x4_t x)
{
    const uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(x));
    const uint16x4_t sign = vand_u16(vshrn_n_u32(vreinterpretq_u32_f32(x), 16), vdup_n_u16(0x8000));
    const uint16x4_t not_nan = vmovn_u32(vceqq_f32(x, x));
    return vbsl_u16(not_nan, h, vorr_u16(sign, vdup_n_u16(0x7e00)));
}

ALWAYS_INLINE uint16x8_t bf16_round8(float32x4x2_t x)
{
    return vcombine_u16(bf16_round4(x.val[0]), bf16_round4(x.val[1]));
}

ALWAYS_INLINE uint16x8_t f16_round8(float32x4x2_t x) { return vcombine_u16(f16_round4(x.val[0]), f16_round4(x.val[1])); }

/* 8 bf16 widened (exact: the bits shifted up). */
ALWAYS_INLINE float32x4x2_t bf16_widen8(uint16x8_t h)
{
    return (float32x4x2_t){{vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)),
                            vreinterpretq_f32_u32(vshll_high_n_u16(h, 16))}};
}

/* 8 f16 widened: FCVTL is attnops_f16_to_f32 exactly, subnormals widened
 * exactly (the FPCR does not flush), a NaN quietened with its payload kept. */
ALWAYS_INLINE float32x4x2_t f16_widen8(uint16x8_t h)
{
    const float16x8_t f = vreinterpretq_f16_u16(h);
    return (float32x4x2_t){{vcvt_f32_f16(vget_low_f16(f)), vcvt_high_f32_f16(f)}};
}

#endif
