/* exp(x) as the vector kernels compute it (v_exp in simd/simd.h, every ISA),
 * one algorithm for every ISA so that their element-wise results agree:
 * x clamped to [LO, HI] (exp(HI) is finite, exp(LO) rounds to 0; any NaN
 * becomes HI, as min_ps(x, HI) returns HI when either is NaN), n =
 * x log2e rounded to nearest even, Cody-Waite reduction r = x - n ln2 with
 * ln2 split in two so that n ln2_hi is exact, the Cephes expf polynomial on
 * |r| <= ln2/2, and p 2^n rounded once (subnormal results included).
 *
 * vec_exp_ref is the scalar statement of those operations in the same
 * order, the reference the vector forms equal bit for bit. */
#ifndef ATTNOPS_CPU_VEC_EXP_H
#define ATTNOPS_CPU_VEC_EXP_H

#include <math.h>

#define VEC_EXP_HI 88.7228f
#define VEC_EXP_LO -104.0f
#define VEC_EXP_LOG2E 1.44269504088896341f
#define VEC_EXP_LN2_HI 0.693359375f
#define VEC_EXP_LN2_LO -2.12194440e-4f
#define VEC_EXP_P0 1.9875691500e-4f
#define VEC_EXP_P1 1.3981999507e-3f
#define VEC_EXP_P2 8.3334519073e-3f
#define VEC_EXP_P3 4.1665795894e-2f
#define VEC_EXP_P4 1.6666665459e-1f
#define VEC_EXP_P5 5.0000001201e-1f

static inline float vec_exp_ref(float x)
{
    /* min_ps(x, HI), then max_ps(that, LO), as comparisons: fminf turns a signalling NaN into NaN */
    x = x < VEC_EXP_HI ? x : VEC_EXP_HI;
    x = x > VEC_EXP_LO ? x : VEC_EXP_LO;
    const float n = nearbyintf(x * VEC_EXP_LOG2E);
    float r = fmaf(-n, VEC_EXP_LN2_HI, x);
    r = fmaf(-n, VEC_EXP_LN2_LO, r);
    float p = VEC_EXP_P0;
    p = fmaf(p, r, VEC_EXP_P1);
    p = fmaf(p, r, VEC_EXP_P2);
    p = fmaf(p, r, VEC_EXP_P3);
    p = fmaf(p, r, VEC_EXP_P4);
    p = fmaf(p, r, VEC_EXP_P5);
    p = fmaf(p, r * r, r + 1.0f);
    return ldexpf(p, (int)n);
}

#endif
