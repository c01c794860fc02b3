/* What the NEON kernel files share: ALWAYS_INLINE (at -O2 gcc neither
 * unswitches nor fully unrolls their small row loops, so the row bodies are
 * forced inline to make their dtype and form choices constants) and
 * vec_exp.h's exp on 4 lanes. */
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

#endif
