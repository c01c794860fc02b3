/* The NEON (AArch64 ASIMD) vector vocabulary: 8 float lanes in two q
 * registers (two independent chains for the two FP pipes of a Kunpeng 920
 * or Neoverse core).  Its contract (what every vocabulary gives, bit for
 * bit) is stated in simd.h; only kernels_simd.c includes it.  ASIMD is part
 * of every AArch64 CPU: no flags, no run-time check.
 *
 * Where NEON needs other instructions than x86 for the contract's bits:
 *  - vminq/vmaxq return NaN when either input is NaN: v_min/v_max compare
 *    and select (maxps's a > b ? a : b);
 *  - v_hsum and v_hmax reduce in AVX2's order (upper half onto the lower,
 *    then lanes 2, 3 onto 0, 1, then lane 1 onto 0), so every kernel's
 *    bits, reductions included, are AVX2's;
 *  - ASIMD has no masked loads or stores: a row's partial last step goes
 *    through a zero-padded copy;
 *  - there is no scalef: v_ldexp applies 2^n in two exact halves, as AVX2;
 *  - ACLE has no non-temporal store: the stream stores are plain stores.
 * The FPCR is left as Linux starts a process (round to nearest, no flush
 * to zero), which the f16 conversions and exp's subnormal results rely on. */
#ifndef ATTNOPS_CPU_SIMD_NEON_H
#define ATTNOPS_CPU_SIMD_NEON_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define VW 8
#define SIMD_INLINE static inline __attribute__((always_inline))

typedef float32x4x2_t vf;   /* VW floats: val[0] lanes 0-3, val[1] lanes 4-7 */
typedef int32x4x2_t vi;     /* VW 32-bit integers */
typedef uint16x8_t vh;      /* VW 16-bit values */
typedef float64x2x2_t vd;   /* VW / 2 doubles */
typedef uint32x4x2_t vmask; /* lanes all ones or zero */

/* The two halves of an operation. */
#define NEON_F2(op, a, b) ((vf){{op((a).val[0], (b).val[0]), op((a).val[1], (b).val[1])}})
#define NEON_I2(op, a, b) ((vi){{op((a).val[0], (b).val[0]), op((a).val[1], (b).val[1])}})

SIMD_INLINE uint32x4_t u32_(float32x4_t x) { return vreinterpretq_u32_f32(x); }
SIMD_INLINE float32x4_t f32_(uint32x4_t x) { return vreinterpretq_f32_u32(x); }

/* ---- constants, loads and stores (n: elements present, zero past n) ---- */
SIMD_INLINE vf v_set1(float x) { return (vf){{vdupq_n_f32(x), vdupq_n_f32(x)}}; }
SIMD_INLINE vf v_zero(void) { return v_set1(0.0f); }
SIMD_INLINE vf v_iota(void)
{
    const float32x4_t lo = {0, 1, 2, 3}, hi = {4, 5, 6, 7};
    return (vf){{lo, hi}};
}
SIMD_INLINE vi vi_set1(int32_t x) { return (vi){{vdupq_n_s32(x), vdupq_n_s32(x)}}; }

/* Lanes i < n (n <= 0: none). */
SIMD_INLINE vmask vm_tail(int n)
{
    const int32x4_t count = vdupq_n_s32(n), lo = {0, 1, 2, 3}, hi = {4, 5, 6, 7};
    return (vmask){{vcgtq_s32(count, lo), vcgtq_s32(count, hi)}};
}

SIMD_INLINE vf v_load(const float *p) { return vld1q_f32_x2(p); }
SIMD_INLINE void v_store(float *p, vf x) { vst1q_f32_x2(p, x); }
SIMD_INLINE vf v_loadn(const float *p, int n)
{
    if (n >= VW) return vld1q_f32_x2(p);
    float t[VW] = {0};
    if (n > 0) memcpy(t, p, (size_t)n * sizeof *t);
    return vld1q_f32_x2(t);
}
SIMD_INLINE void v_storen(float *p, int n, vf x)
{
    if (n >= VW) {
        vst1q_f32_x2(p, x);
        return;
    }
    float t[VW];
    vst1q_f32_x2(t, x);
    if (n > 0) memcpy(p, t, (size_t)n * sizeof *t);
}

SIMD_INLINE vh vh_loadn(const uint16_t *p, int n)
{
    if (n >= VW) return vld1q_u16(p);
    uint16_t t[VW] = {0};
    if (n > 0) memcpy(t, p, (size_t)n * sizeof *t);
    return vld1q_u16(t);
}
SIMD_INLINE void vh_storen(uint16_t *p, int n, vh x)
{
    if (n >= VW) {
        vst1q_u16(p, x);
        return;
    }
    uint16_t t[VW];
    vst1q_u16(t, x);
    if (n > 0) memcpy(p, t, (size_t)n * sizeof *t);
}
SIMD_INLINE void vh_stream(uint16_t *p, vh x) { vst1q_u16(p, x); }

/* n bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_u8n(const uint8_t *p, int n)
{
    uint8x8_t b;
    if (n >= VW) b = vld1_u8(p);
    else {
        uint8_t t[VW] = {0};
        if (n > 0) memcpy(t, p, (size_t)n);
        b = vld1_u8(t);
    }
    const uint16x8_t w = vmovl_u8(b);
    return (vf){{vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), vcvtq_f32_u32(vmovl_high_u16(w))}};
}

/* n signed bytes (zero past n) widened to float. */
SIMD_INLINE vf v_load_i8n(const int8_t *p, int n)
{
    int8x8_t b;
    if (n >= VW) b = vld1_s8(p);
    else {
        int8_t t[VW] = {0};
        if (n > 0) memcpy(t, p, (size_t)n);
        b = vld1_s8(t);
    }
    const int16x8_t w = vmovl_s8(b);
    return (vf){{vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), vcvtq_f32_s32(vmovl_high_s16(w))}};
}

/* VW pairs of 16-bit values (one 32-bit lane each, the first of a pair
 * low): n <= 2 VW of them, zero past n, and their stores. */
SIMD_INLINE vi vp_loadn(const uint16_t *p, int n)
{
    uint16_t t[2 * VW] = {0};
    const uint16_t *src = p;
    if (n < 2 * VW) {
        if (n > 0) memcpy(t, p, (size_t)n * sizeof *t);
        src = t;
    }
    return (vi){{vreinterpretq_s32_u16(vld1q_u16(src)), vreinterpretq_s32_u16(vld1q_u16(src + VW))}};
}
SIMD_INLINE void vp_storen(uint16_t *p, int n, vi x)
{
    uint16_t t[2 * VW], *dst = n >= 2 * VW ? p : t;
    vst1q_u16(dst, vreinterpretq_u16_s32(x.val[0]));
    vst1q_u16(dst + VW, vreinterpretq_u16_s32(x.val[1]));
    if (n < 2 * VW && n > 0) memcpy(p, t, (size_t)n * sizeof *t);
}
SIMD_INLINE void vp_stream(uint16_t *p, vi x) { vp_storen(p, 2 * VW, x); }
SIMD_INLINE void v_stream_fence(void) {}
SIMD_INLINE void v_prefetch_l2(const void *p) { __builtin_prefetch(p, 0, 2); }

/* ---- arithmetic (IEEE single, one rounding each; fma fused) ---- */
SIMD_INLINE vf v_add(vf a, vf b) { return NEON_F2(vaddq_f32, a, b); }
SIMD_INLINE vf v_sub(vf a, vf b) { return NEON_F2(vsubq_f32, a, b); }
SIMD_INLINE vf v_mul(vf a, vf b) { return NEON_F2(vmulq_f32, a, b); }
SIMD_INLINE vf v_div(vf a, vf b) { return NEON_F2(vdivq_f32, a, b); }
SIMD_INLINE vf v_sqrt(vf a) { return (vf){{vsqrtq_f32(a.val[0]), vsqrtq_f32(a.val[1])}}; }
/* a b + c; vfmaq_f32(c, a, b) is fmaf(a, b, c), vfmsq_f32(c, a, b) fmaf(-a, b, c) */
SIMD_INLINE vf v_fma(vf a, vf b, vf c)
{
    return (vf){{vfmaq_f32(c.val[0], a.val[0], b.val[0]), vfmaq_f32(c.val[1], a.val[1], b.val[1])}};
}
SIMD_INLINE vf v_fms(vf a, vf b, vf c) /* a b - c: -c is exact */
{
    return (vf){{vfmaq_f32(vnegq_f32(c.val[0]), a.val[0], b.val[0]),
                 vfmaq_f32(vnegq_f32(c.val[1]), a.val[1], b.val[1])}};
}
SIMD_INLINE vf v_fnma(vf a, vf b, vf c) /* c - a b */
{
    return (vf){{vfmsq_f32(c.val[0], a.val[0], b.val[0]), vfmsq_f32(c.val[1], a.val[1], b.val[1])}};
}
/* a > b ? a : b and a < b ? a : b: b where either is NaN (maxps/minps). */
SIMD_INLINE float32x4_t max4_(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
SIMD_INLINE float32x4_t min4_(float32x4_t a, float32x4_t b) { return vbslq_f32(vcltq_f32(a, b), a, b); }
SIMD_INLINE vf v_max(vf a, vf b) { return NEON_F2(max4_, a, b); }
SIMD_INLINE vf v_min(vf a, vf b) { return NEON_F2(min4_, a, b); }
SIMD_INLINE vf v_round_even(vf a) { return (vf){{vrndnq_f32(a.val[0]), vrndnq_f32(a.val[1])}}; }

SIMD_INLINE float32x4_t and4_(float32x4_t a, float32x4_t b) { return f32_(vandq_u32(u32_(a), u32_(b))); }
SIMD_INLINE float32x4_t or4_(float32x4_t a, float32x4_t b) { return f32_(vorrq_u32(u32_(a), u32_(b))); }
SIMD_INLINE float32x4_t andnot4_(float32x4_t a, float32x4_t b) { return f32_(vbicq_u32(u32_(b), u32_(a))); }
SIMD_INLINE vf v_and(vf a, vf b) { return NEON_F2(and4_, a, b); }
SIMD_INLINE vf v_or(vf a, vf b) { return NEON_F2(or4_, a, b); }
SIMD_INLINE vf v_andnot(vf a, vf b) { return NEON_F2(andnot4_, a, b); } /* ~a & b */
SIMD_INLINE vi v_bits(vf a) { return (vi){{vreinterpretq_s32_f32(a.val[0]), vreinterpretq_s32_f32(a.val[1])}}; }
SIMD_INLINE vf v_from_bits(vi a) { return (vf){{vreinterpretq_f32_s32(a.val[0]), vreinterpretq_f32_s32(a.val[1])}}; }

SIMD_INLINE vi vi_add(vi a, vi b) { return NEON_I2(vaddq_s32, a, b); }
SIMD_INLINE vi vi_sub(vi a, vi b) { return NEON_I2(vsubq_s32, a, b); }
SIMD_INLINE vi vi_and(vi a, vi b) { return NEON_I2(vandq_s32, a, b); }
SIMD_INLINE vi vi_or(vi a, vi b) { return NEON_I2(vorrq_s32, a, b); }
SIMD_INLINE vi vi_max(vi a, vi b) { return NEON_I2(vmaxq_s32, a, b); } /* signed */
/* Shifts by a count (a constant where the kernels use them, which the
 * compiler folds into the immediate forms). */
SIMD_INLINE int32x4_t srli4_(int32x4_t a, int n)
{
    return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vdupq_n_s32(-n)));
}
SIMD_INLINE vi vi_srli(vi a, int n) { return (vi){{srli4_(a.val[0], n), srli4_(a.val[1], n)}}; }
SIMD_INLINE vi vi_slli(vi a, int n)
{
    return (vi){{vshlq_s32(a.val[0], vdupq_n_s32(n)), vshlq_s32(a.val[1], vdupq_n_s32(n))}};
}
SIMD_INLINE vi vi_srai(vi a, int n)
{
    return (vi){{vshlq_s32(a.val[0], vdupq_n_s32(-n)), vshlq_s32(a.val[1], vdupq_n_s32(-n))}};
}
SIMD_INLINE vi v_to_int(vf a) { return (vi){{vcvtnq_s32_f32(a.val[0]), vcvtnq_s32_f32(a.val[1])}}; } /* nearest even */

/* ---- masks ---- */
SIMD_INLINE vmask vm_lt(vf a, vf b) { return (vmask){{vcltq_f32(a.val[0], b.val[0]), vcltq_f32(a.val[1], b.val[1])}}; }
SIMD_INLINE vmask vm_gt(vf a, vf b) { return (vmask){{vcgtq_f32(a.val[0], b.val[0]), vcgtq_f32(a.val[1], b.val[1])}}; }
SIMD_INLINE vmask vm_nan(vf a)
{
    return (vmask){{vmvnq_u32(vceqq_f32(a.val[0], a.val[0])), vmvnq_u32(vceqq_f32(a.val[1], a.val[1]))}};
}
SIMD_INLINE vmask vm_eq_i(vi a, vi b) { return (vmask){{vceqq_s32(a.val[0], b.val[0]), vceqq_s32(a.val[1], b.val[1])}}; }
SIMD_INLINE vmask vm_gt_i(vi a, vi b) { return (vmask){{vcgtq_s32(a.val[0], b.val[0]), vcgtq_s32(a.val[1], b.val[1])}}; }
SIMD_INLINE vf v_select(vmask m, vf a, vf b) /* m ? a : b */
{
    return (vf){{vbslq_f32(m.val[0], a.val[0], b.val[0]), vbslq_f32(m.val[1], a.val[1], b.val[1])}};
}
SIMD_INLINE vi vi_select(vmask m, vi a, vi b)
{
    return (vi){{vbslq_s32(m.val[0], a.val[0], b.val[0]), vbslq_s32(m.val[1], a.val[1], b.val[1])}};
}
SIMD_INLINE vf v_maskz(vmask m, vf a) /* m ? a : 0 */
{
    return (vf){{f32_(vandq_u32(u32_(a.val[0]), m.val[0])), f32_(vandq_u32(u32_(a.val[1]), m.val[1]))}};
}
SIMD_INLINE bool vm_all(vmask m) { return vminvq_u32(vandq_u32(m.val[0], m.val[1])) != 0; }
SIMD_INLINE bool vm_any(vmask m) { return vmaxvq_u32(vorrq_u32(m.val[0], m.val[1])) != 0; }

/* ---- reductions, in AVX2's order (the file's header says why) ---- */
SIMD_INLINE float v_hsum(vf x)
{
    const float32x4_t s = vaddq_f32(x.val[0], x.val[1]);
    const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}
/* AVX2's unpack / shuffle steps on each half (vzip1/vzip2 are unpacklo/hi),
 * then the halves: AVX2's bits. */
SIMD_INLINE float32x4_t hsum4_block_(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d)
{
    const float32x4_t ab = vaddq_f32(vzip1q_f32(a, b), vzip2q_f32(a, b));
    const float32x4_t cd = vaddq_f32(vzip1q_f32(c, d), vzip2q_f32(c, d));
    return vaddq_f32(vcombine_f32(vget_low_f32(ab), vget_low_f32(cd)),
                     vcombine_f32(vget_high_f32(ab), vget_high_f32(cd)));
}
SIMD_INLINE void v_hsum4(vf a, vf b, vf c, vf d, float out[4])
{
    vst1q_f32(out, vaddq_f32(hsum4_block_(a.val[0], b.val[0], c.val[0], d.val[0]),
                             hsum4_block_(a.val[1], b.val[1], c.val[1], d.val[1])));
}
SIMD_INLINE float v_hmax(vf x)
{
    const float32x4_t m = max4_(x.val[0], x.val[1]);
    const float32x2_t lo = vget_low_f32(m), hi = vget_high_f32(m);
    const float32x2_t t = vbsl_f32(vcgt_f32(lo, hi), lo, hi);
    const float a = vget_lane_f32(t, 0), b = vget_lane_f32(t, 1);
    return a > b ? a : b;
}

/* ---- doubles: the lower / upper VW / 2 floats widened (exactly) ---- */
SIMD_INLINE vd vd_zero(void) { return (vd){{vdupq_n_f64(0.0), vdupq_n_f64(0.0)}}; }
SIMD_INLINE vd vd_widen_lo(vf a) { return (vd){{vcvt_f64_f32(vget_low_f32(a.val[0])), vcvt_high_f64_f32(a.val[0])}}; }
SIMD_INLINE vd vd_widen_hi(vf a) { return (vd){{vcvt_f64_f32(vget_low_f32(a.val[1])), vcvt_high_f64_f32(a.val[1])}}; }
SIMD_INLINE vd vd_add(vd a, vd b) { return (vd){{vaddq_f64(a.val[0], b.val[0]), vaddq_f64(a.val[1], b.val[1])}}; }
SIMD_INLINE vd vd_fma(vd a, vd b, vd c)
{
    return (vd){{vfmaq_f64(c.val[0], a.val[0], b.val[0]), vfmaq_f64(c.val[1], a.val[1], b.val[1])}};
}
SIMD_INLINE double vd_hsum(vd x) { return vaddvq_f64(vaddq_f64(x.val[0], x.val[1])); }

/* ---- 16-bit data ---- */
/* FCVTL: exact, subnormals widened (the FPCR does not flush), a NaN quietened with its payload kept. */
SIMD_INLINE vf vh_f16_to_f32(vh h)
{
    const float16x8_t f = vreinterpretq_f16_u16(h);
    return (vf){{vcvt_f32_f16(vget_low_f16(f)), vcvt_high_f32_f16(f)}};
}
/* FCVTN: nearest even (the FPCR mode Linux runs); a NaN keeps the top of its payload. */
SIMD_INLINE vh v_f32_to_f16_raw(vf x)
{
    return vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(x.val[0]), x.val[1]));
}
SIMD_INLINE vi vh_widen_u16(vh h)
{
    return (vi){{vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h))), vreinterpretq_s32_u32(vmovl_high_u16(h))}};
}
/* The low 16 bits of each lane. */
SIMD_INLINE vh vi_narrow_u16(vi x)
{
    return vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(x.val[0])), vmovn_u32(vreinterpretq_u32_s32(x.val[1])));
}

/* ---- the pair-split rows (kernels.h AR_SPLIT) and VNNI pairs ---- */
/* Lanes 2i and 2i + 1 of the 2 VW floats a, b: the even ones and the odd ones (UZP1 / UZP2). */
SIMD_INLINE void v_unzip(vf a, vf b, vf *even, vf *odd)
{
    *even = (vf){{vuzp1q_f32(a.val[0], a.val[1]), vuzp1q_f32(b.val[0], b.val[1])}};
    *odd = (vf){{vuzp2q_f32(a.val[0], a.val[1]), vuzp2q_f32(b.val[0], b.val[1])}};
}
/* The inverse: *lo = even0 odd0 even1 odd1 ..., *hi the next VW (ZIP1 / ZIP2). */
SIMD_INLINE void v_zip(vf even, vf odd, vf *lo, vf *hi)
{
    *lo = (vf){{vzip1q_f32(even.val[0], odd.val[0]), vzip2q_f32(even.val[0], odd.val[0])}};
    *hi = (vf){{vzip1q_f32(even.val[1], odd.val[1]), vzip2q_f32(even.val[1], odd.val[1])}};
}

/* 2^n p for integral n in [-150, 128], rounded once: 2^(n>>1) then
 * 2^(n - (n>>1)), each a normal float built from exponent bits; the first
 * product is exact, so the second rounds once, subnormals and the underflow
 * to 0 included. */
SIMD_INLINE vf v_ldexp(vf p, vf n)
{
    const vi k = v_to_int(n), k1 = vi_srai(k, 1), k2 = vi_sub(k, k1), bias = vi_set1(127);
    const vf s1 = v_from_bits(vi_slli(vi_add(k1, bias), 23)), s2 = v_from_bits(vi_slli(vi_add(k2, bias), 23));
    return v_mul(v_mul(p, s1), s2);
}

#endif
