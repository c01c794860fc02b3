/* tanh(x) and its derivative as every kernel set computes them (the score
 * soft-capping of flash-attn's softcap, docs/NUMERICS.md "Soft-capping"),
 * one algorithm for every ISA so that their results agree bit for bit.
 * Cephes' tanhf split (its coefficients, from Moshier's Cephes library):
 *  - |x| < 0.625: the odd polynomial t = a + a z P(z), z = a^2, a = |x|,
 *    which keeps tanh's full relative precision near 0 (1 - 2/(e + 1)
 *    would cancel there);
 *  - otherwise u = 2 / (exp(2a) + 1) = 1 - tanh(a) with vec_exp.h's exp, and
 *    t = 1 - u (exp's clamp makes t = 1 for large a, inf included).
 * The derivative 1 - t^2 is fma(-t, t, 1) on the polynomial side, where
 * t^2 < 0.31 cancels nothing, and u (2 - u) = (1 - t)(1 + t) on the other,
 * exact in relative terms where t is near 1.  The sign is x's (tanh(-0) =
 * -0); a NaN x gives NaN for both.
 *
 * vec_tanh_ref is the scalar statement in the vector forms' order of
 * operations, the reference they equal bit for bit. */
#ifndef ATTNOPS_CPU_VEC_TANH_H
#define ATTNOPS_CPU_VEC_TANH_H

#include "cpu/vec_exp.h"

#define VEC_TANH_SMALL 0.625f
#define VEC_TANH_P0 -5.70498872745e-3f
#define VEC_TANH_P1 2.06390887954e-2f
#define VEC_TANH_P2 -5.37397155531e-2f
#define VEC_TANH_P3 1.33314422036e-1f
#define VEC_TANH_P4 -3.33332819422e-1f

/* tanh(x); *dtanh = 1 - tanh(x)^2. */
static inline float vec_tanh_ref(float x, float *dtanh)
{
    if (x != x) return *dtanh = x, x;
    const float a = fabsf(x);
    float t;
    if (a < VEC_TANH_SMALL) {
        const float z = a * a;
        float p = VEC_TANH_P0;
        p = fmaf(p, z, VEC_TANH_P1);
        p = fmaf(p, z, VEC_TANH_P2);
        p = fmaf(p, z, VEC_TANH_P3);
        p = fmaf(p, z, VEC_TANH_P4);
        t = fmaf(p * z, a, a);
        *dtanh = fmaf(-t, t, 1.0f);
    } else {
        const float u = 2.0f / (vec_exp_ref(a + a) + 1.0f);
        t = 1.0f - u;
        *dtanh = u * (2.0f - u);
    }
    return copysignf(t, x);
}

#endif
