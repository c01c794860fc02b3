/* The vector vocabulary every SIMD ISA defines (src/cpu/simd/<isa>.h), and
 * the math written once on it.  The kernels of kernels_simd.c use nothing
 * else, so one source serves every ISA and each ISA's bits follow from the
 * vocabulary's semantics below (the model: SLEEF's helper headers under one
 * sleefsimdsp.c; ggml's simd-mappings.h).
 *
 * A vocabulary header defines, for VW lanes:
 *   VW, SIMD_INLINE;
 *   vf (VW floats), vi (VW int32), vh (VW 16-bit values), vd (VW/2
 *     doubles), vmask (a per-lane predicate);
 *   loads and stores: v_load/v_store (whole steps), v_loadn/v_storen (n
 *     present: lanes past n read as 0 and are not written), vh_loadn /
 *     vh_storen / vh_stream, vp_loadn / vp_storen / vp_stream (VW pairs of
 *     16-bit values, n <= 2 VW of them), v_load_u8n / v_load_i8n (bytes
 *     widened to float), v_stream_fence,
 *     v_prefetch_l2;
 *   IEEE arithmetic, one rounding each: v_add v_sub v_mul v_div v_sqrt,
 *     v_fma (a b + c) v_fms (a b - c) v_fnma (c - a b), fused;
 *     v_max(a, b) = a > b ? a : b and v_min(a, b) = a < b ? a : b (b where
 *     either is NaN: x86's maxps/minps); v_round_even; bitwise v_and v_or
 *     v_andnot (~a & b), v_bits / v_from_bits; int32 vi_add vi_sub vi_and
 *     vi_or vi_max (signed) vi_srli vi_slli vi_srai, v_to_int (nearest
 *     even);
 *   predicates: vm_tail(n) (lanes < n), vm_lt / vm_gt (ordered), vm_nan,
 *     vm_eq_i / vm_gt_i (signed), v_select(m, a, b) = m ? a : b, vi_select,
 *     v_maskz(m, a) = m ? a : 0, vm_all, vm_any;
 *   reductions: v_hsum, v_hmax, vd_hsum (each in the ISA's own fixed
 *     order: a reduction's bits are the ISA's, kernels.h); v_hsum4(a, b,
 *     c, d, out) the four sums at once (in each 128-bit block lanes l and
 *     l + 2, then l and l + 1, then the blocks);
 *   doubles: vd_zero, vd_widen_lo / vd_widen_hi (the lower / upper VW / 2
 *     lanes), vd_add, vd_fma;
 *   16-bit data: vh_f16_to_f32 (exact), v_f32_to_f16_raw (nearest even, a
 *     NaN keeps the top of its payload), vh_widen_u16, vi_narrow_u16 (the
 *     low half of each lane, lanes <= 0xffff);
 *   v_unzip(a, b) (the even and odd lanes of 2 VW floats) and its inverse
 *     v_zip;
 *   v_ldexp(p, n): 2^n p for integral n in [-150, 128], rounded once
 *     (subnormals and the underflow to 0 included). */
#ifndef ATTNOPS_CPU_SIMD_SIMD_H
#define ATTNOPS_CPU_SIMD_SIMD_H

#include "cpu/vec_exp.h"
#include "cpu/vec_tanh.h"

#define SIMD_CAT_(a, b) a##__##b
#define SIMD_CAT(a, b) SIMD_CAT_(a, b)
/* A kernel's symbol: its table's operator stem, "_", its name, "__", the
 * ISA (XNNPACK's convention), e.g. fa_softmax_fwd__avx2, ar_dots__avx2; ATTNOPS_KERNEL_ISA is the ISA's name in CMake's
 * attnops_simd_kernels, which also names the header. */
#define SIMD_KERNEL(name) SIMD_CAT(name, ATTNOPS_KERNEL_ISA)

/* vec_exp.h's exp: bit for bit vec_exp_ref on every lane (the clamp as
 * min then max, so a NaN becomes the upper clamp, as the scalar statement's
 * comparisons do). */
SIMD_INLINE vf v_exp(vf x)
{
    x = v_max(v_min(x, v_set1(VEC_EXP_HI)), v_set1(VEC_EXP_LO));
    const vf n = v_round_even(v_mul(x, v_set1(VEC_EXP_LOG2E)));
    vf r = v_fnma(n, v_set1(VEC_EXP_LN2_HI), x);
    r = v_fnma(n, v_set1(VEC_EXP_LN2_LO), r);
    vf p = v_set1(VEC_EXP_P0);
    p = v_fma(p, r, v_set1(VEC_EXP_P1));
    p = v_fma(p, r, v_set1(VEC_EXP_P2));
    p = v_fma(p, r, v_set1(VEC_EXP_P3));
    p = v_fma(p, r, v_set1(VEC_EXP_P4));
    p = v_fma(p, r, v_set1(VEC_EXP_P5));
    p = v_fma(p, v_mul(r, r), v_add(r, v_set1(1.0f)));
    return v_ldexp(p, n);
}

/* vec_tanh.h's tanh and its derivative, bit for bit vec_tanh_ref.  Each
 * lane takes the polynomial side (a < 0.625) or the exp one; a side is
 * computed only when some lane needs it (the scores of a real cap, Gemma 2's
 * 50, are nearly all on the polynomial side, and exp plus a division costs
 * three times the polynomial).  The sign is x's OR'd in (t >= 0, -0 kept),
 * and a NaN lane gets x itself for both (v_exp turns NaN into its clamp). */
SIMD_INLINE vf v_tanh_small(vf a, vf *d)
{
    const vf z = v_mul(a, a);
    vf p = v_set1(VEC_TANH_P0);
    p = v_fma(p, z, v_set1(VEC_TANH_P1));
    p = v_fma(p, z, v_set1(VEC_TANH_P2));
    p = v_fma(p, z, v_set1(VEC_TANH_P3));
    p = v_fma(p, z, v_set1(VEC_TANH_P4));
    const vf t = v_fma(v_mul(p, z), a, a);
    *d = v_fnma(t, t, v_set1(1.0f)); /* fmaf(-t, t, 1) */
    return t;
}

SIMD_INLINE vf v_tanh_large(vf a, vf *d)
{
    const vf one = v_set1(1.0f), two = v_set1(2.0f);
    const vf u = v_div(two, v_add(v_exp(v_add(a, a)), one));
    *d = v_mul(u, v_sub(two, u));
    return v_sub(one, u);
}

SIMD_INLINE vf v_tanh(vf x, vf *dtanh)
{
    const vf sign = v_set1(-0.0f);
    const vf a = v_andnot(sign, x);
    const vmask small = vm_lt(a, v_set1(VEC_TANH_SMALL)); /* false for NaN */
    vf t, d;
    if (vm_all(small)) {
        t = v_tanh_small(a, &d);
    } else {
        t = v_tanh_large(a, &d);
        if (vm_any(small)) {
            vf ds;
            const vf ts = v_tanh_small(a, &ds);
            t = v_select(small, ts, t), d = v_select(small, ds, d);
        }
        const vmask nan = vm_nan(x);
        t = v_select(nan, x, t), d = v_select(nan, x, d);
    }
    *dtanh = d;
    return v_or(t, v_and(x, sign));
}

/* ---- bf16 and f16, bit for bit attnops_f32_to_bf16 / attnops_f32_to_f16 ---- */

/* Round to nearest even on the integer bits, a NaN to 0x7FC0 (outputs can
 * carry a caller's NaN), in the low half of each lane. */
SIMD_INLINE vi v_bf16_bits(vf x)
{
    const vi u = v_bits(x);
    const vi lsb = vi_and(vi_srli(u, 16), vi_set1(1));
    const vi r = vi_srli(vi_add(u, vi_add(lsb, vi_set1(0x7fff))), 16);
    return vi_select(vm_nan(x), vi_set1(0x7fc0), r);
}

SIMD_INLINE vh v_bf16(vf x) { return vi_narrow_u16(v_bf16_bits(x)); }

/* x rounded to bf16 and widened back. */
SIMD_INLINE vf v_bf16_round(vf x) { return v_from_bits(vi_slli(v_bf16_bits(x), 16)); }

/* Lane i: bf16(even[i]) low, bf16(odd[i]) high: elements 2i and 2i + 1 of a
 * bf16 row, a VNNI-2 pair or a pair of the split layout. */
SIMD_INLINE vi v_bf16_pairs(vf even, vf odd) { return vi_or(v_bf16_bits(even), vi_slli(v_bf16_bits(odd), 16)); }

SIMD_INLINE vf vh_bf16_to_f32(vh h) { return v_from_bits(vi_slli(vh_widen_u16(h), 16)); }

/* The even and odd elements of VW bf16 pairs, widened exactly. */
SIMD_INLINE vf vp_bf16_even(vi pairs) { return v_from_bits(vi_slli(pairs, 16)); }
SIMD_INLINE vf vp_bf16_odd(vi pairs) { return v_from_bits(vi_and(pairs, vi_set1((int32_t)0xFFFF0000u))); }

/* f16, nearest even, a NaN to its sign | 0x7E00 (the conversion
 * instructions keep part of a NaN's payload). */
SIMD_INLINE vh v_f16(vf x)
{
    const vi h = vh_widen_u16(v_f32_to_f16_raw(x));
    const vi fixed = vi_or(vi_and(vi_srli(v_bits(x), 16), vi_set1(0x8000)), vi_set1(0x7e00));
    return vi_narrow_u16(vi_select(vm_nan(x), fixed, h));
}

/* n values (zero past n) from element `at` of f32, f16 or bf16 data,
 * widened to fp32 exactly. */
SIMD_INLINE vf v_load_dt(const void *src, attnops_dtype dtype, int64_t at, int n)
{
    if (dtype == ATTNOPS_DTYPE_F32) return v_loadn((const float *)src + at, n);
    const vh h = vh_loadn((const uint16_t *)src + at, n);
    return dtype == ATTNOPS_DTYPE_F16 ? vh_f16_to_f32(h) : vh_bf16_to_f32(h);
}

/* x rounded to f32, f16 or bf16 (nearest even) into n elements from `at`
 * (f16 NaNs as the conversion instruction leaves them: AttnRes outputs). */
SIMD_INLINE void v_store_dt(void *dst, attnops_dtype dtype, int64_t at, int n, vf x)
{
    if (dtype == ATTNOPS_DTYPE_F32) v_storen((float *)dst + at, n, x);
    else if (dtype == ATTNOPS_DTYPE_F16) vh_storen((uint16_t *)dst + at, n, v_f32_to_f16_raw(x));
    else vh_storen((uint16_t *)dst + at, n, v_bf16(x));
}

#endif
