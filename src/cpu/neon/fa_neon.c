/* The NEON (AArch64 ASIMD) FlashAttention kernels (kernels.h states each
 * contract; portable/kernels_portable.c is the plain-C statement of it).
 * ASIMD is part of every AArch64 CPU: no flags, no run-time check;
 * rows_neon.c holds the KeyPool and AttnRes kernels of the same ISA.  The
 * algorithms are the AVX2 set's on 4 lanes, so element-wise results are the
 * x86 sets' bits; reductions sum in their own order.
 *
 * A step is 8 elements in two q registers (two independent chains for the
 * two FP pipes of a Kunpeng 920 or Neoverse core); abs_max takes 16 into
 * four accumulators, the Philox kernels 8 blocks.  ASIMD has no masked
 * loads or stores: whole steps load and store directly, and a row's last
 * partial one (n < 8 elements) runs the same operations on a zero-padded
 * copy and copies its n results back.  Release builds are -O2, which does
 * not unswitch loops: a choice that is fixed for a call (dtype, bias order,
 * accumulate, square root) selects one of several always-inline
 * instantiations of the loop rather than being tested in it.
 *
 * Where NEON forced another choice than x86:
 *  - vminq/vmaxq return NaN when either input is NaN, where min_ps/max_ps
 *    return the second operand: the exp clamp and abs_max compare and
 *    select, as the scalar statements do; the softmax max uses vmaxnmq,
 *    which is that comparison on its inputs (below);
 *  - base ARMv8.0 has no bf16 instruction: bf16 rounds on the integer bits;
 *  - FCVTN (f32 -> f16) keeps the top of a NaN's payload: NaN lanes become
 *    sign | 0x7E00, as attnops_f32_to_f16 gives;
 *  - there is no scalef: exp4 applies 2^n in two exact halves, as AVX2.
 * The FPCR is left as Linux starts a process (round to nearest, no flush
 * to zero), which the f16 conversions and exp's subnormal results rely on. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/neon/neon_common.h"
#include "cpu/vec_tanh.h"

ALWAYS_INLINE float32x4x2_t exp8(float32x4x2_t x) { return (float32x4x2_t){{exp4(x.val[0]), exp4(x.val[1])}}; }

/* ---- whole steps and a row's partial last step ---- */

ALWAYS_INLINE float32x4x2_t load8(const float *p) { return (float32x4x2_t){{vld1q_f32(p), vld1q_f32(p + 4)}}; }

ALWAYS_INLINE void store8(float *p, float32x4x2_t x)
{
    vst1q_f32(p, x.val[0]);
    vst1q_f32(p + 4, x.val[1]);
}

/* n < 8 floats (zero past n), and their store. */
static inline float32x4x2_t load_tail(const float *p, int n)
{
    float t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof *t);
    return load8(t);
}

static inline void store_tail(float *p, int n, float32x4x2_t x)
{
    float t[8];
    store8(t, x);
    memcpy(p, t, (size_t)n * sizeof *t);
}

/* The same for 16-bit data, 8 to a q register. */
static inline uint16x8_t load_tail_u16(const uint16_t *p, int n)
{
    uint16_t t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof *t);
    return vld1q_u16(t);
}

static inline void store_tail_u16(uint16_t *p, int n, uint16x8_t h)
{
    uint16_t t[8];
    vst1q_u16(t, h);
    memcpy(p, t, (size_t)n * sizeof *t);
}

/* x with lanes n.. (n < 8) set to fill: a partial step's padding kept out
 * of a reduction. */
static inline float32x4x2_t pad8(float32x4x2_t x, int n, float fill)
{
    const int32x4_t count = vdupq_n_s32(n), lane = {0, 1, 2, 3};
    const float32x4_t f = vdupq_n_f32(fill);
    x.val[0] = vbslq_f32(vcgtq_s32(count, lane), x.val[0], f);
    x.val[1] = vbslq_f32(vcgtq_s32(count, vaddq_s32(lane, vdupq_n_s32(4))), x.val[1], f);
    return x;
}

ALWAYS_INLINE float32x4x2_t mul8(float32x4x2_t x, float32x4_t a)
{
    return (float32x4x2_t){{vmulq_f32(x.val[0], a), vmulq_f32(x.val[1], a)}};
}

ALWAYS_INLINE float32x4x2_t sub8(float32x4x2_t x, float32x4_t a)
{
    return (float32x4x2_t){{vsubq_f32(x.val[0], a), vsubq_f32(x.val[1], a)}};
}

ALWAYS_INLINE float32x4x2_t add8(float32x4x2_t x, float32x4x2_t y)
{
    return (float32x4x2_t){{vaddq_f32(x.val[0], y.val[0]), vaddq_f32(x.val[1], y.val[1])}};
}

/* ---- softmax ---- */

static void softmax_fwd(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l, float *alpha)
{
    const float32x4_t vscale = vdupq_n_f32(scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * cols;
        /* vmaxnmq ignores a quiet NaN, as the portable `x > mx` does; x = s * scale is a product, never a
         * signalling NaN (for which vmaxnmq would return NaN) */
        float32x4_t max0 = vdupq_n_f32(-INFINITY), max1 = max0;
        int c = 0;
        for (; c + 8 <= valid_cols; c += 8) {
            const float32x4x2_t x = mul8(load8(row + c), vscale);
            store8(row + c, x);
            max0 = vmaxnmq_f32(max0, x.val[0]), max1 = vmaxnmq_f32(max1, x.val[1]);
        }
        if (c < valid_cols) {
            const int n = valid_cols - c;
            const float32x4x2_t x = mul8(load_tail(row + c, n), vscale);
            store_tail(row + c, n, x);
            const float32x4x2_t present = pad8(x, n, -INFINITY);
            max0 = vmaxnmq_f32(max0, present.val[0]), max1 = vmaxnmq_f32(max1, present.val[1]);
        }
        float mx = vmaxnmvq_f32(vmaxnmq_f32(max0, max1));
        if (m[r] > mx) mx = m[r];
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        const float32x4_t vm = vdupq_n_f32(mx);
        float32x4_t sum0 = vdupq_n_f32(0.0f), sum1 = sum0;
        for (c = 0; c + 8 <= valid_cols; c += 8) {
            const float32x4x2_t e = exp8(sub8(load8(row + c), vm));
            store8(row + c, e);
            sum0 = vaddq_f32(sum0, e.val[0]), sum1 = vaddq_f32(sum1, e.val[1]);
        }
        if (c < valid_cols) {
            const int n = valid_cols - c;
            const float32x4x2_t e = exp8(sub8(load_tail(row + c, n), vm));
            store_tail(row + c, n, e);
            const float32x4x2_t present = pad8(e, n, 0.0f);
            sum0 = vaddq_f32(sum0, present.val[0]), sum1 = vaddq_f32(sum1, present.val[1]);
        }
        memset(row + valid_cols, 0, (size_t)(cols - valid_cols) * sizeof *row);
        l[r] = l[r] * alpha[r] + vaddvq_f32(vaddq_f32(sum0, sum1));
        m[r] = mx;
    }
}

/* P = exp(s scale - m) / l (the exp argument fused, as AVX2's fmsub) and
 * dS = P (dp - drow), 4 lanes. */
ALWAYS_INLINE void softmax_bwd4(float32x4_t *s, float32x4_t *dp, float32x4_t vscale, float32x4_t neg_m,
                                float32x4_t vl, float32x4_t vd)
{
    const float32x4_t p = vdivq_f32(exp4(vfmaq_f32(neg_m, *s, vscale)), vl);
    *s = p;
    *dp = vmulq_f32(p, vsubq_f32(*dp, vd));
}

static void softmax_bwd(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                        const float *l, const float *drow)
{
    const float32x4_t vscale = vdupq_n_f32(scale);
    for (int r = 0; r < rows; r++) {
        float *ps = s + (size_t)r * cols, *pd = dp + (size_t)r * cols;
        const float32x4_t neg_m = vdupq_n_f32(-m[r]), vl = vdupq_n_f32(l[r]), vd = vdupq_n_f32(drow[r]);
        int c = 0;
        for (; c + 8 <= valid_cols; c += 8) {
            float32x4x2_t x = load8(ps + c), d = load8(pd + c);
            softmax_bwd4(&x.val[0], &d.val[0], vscale, neg_m, vl, vd);
            softmax_bwd4(&x.val[1], &d.val[1], vscale, neg_m, vl, vd);
            store8(ps + c, x), store8(pd + c, d);
        }
        if (c < valid_cols) {
            const int n = valid_cols - c;
            float32x4x2_t x = load_tail(ps + c, n), d = load_tail(pd + c, n);
            softmax_bwd4(&x.val[0], &d.val[0], vscale, neg_m, vl, vd);
            softmax_bwd4(&x.val[1], &d.val[1], vscale, neg_m, vl, vd);
            store_tail(ps + c, n, x), store_tail(pd + c, n, d);
        }
        memset(ps + valid_cols, 0, (size_t)(cols - valid_cols) * sizeof *ps);
        memset(pd + valid_cols, 0, (size_t)(cols - valid_cols) * sizeof *pd);
    }
}

/* ---- conversions ---- */

/* Lanes 2i, 2i + 1: bf16(even[i]), bf16(odd[i]), i < 4 (a VNNI-2 pair of
 * rows r, r + 1). */
ALWAYS_INLINE uint16x8_t bf16_pairs4(float32x4_t even, float32x4_t odd)
{
    const uint16x4x2_t z = vzip_u16(bf16_round4(even), bf16_round4(odd));
    return vcombine_u16(z.val[0], z.val[1]);
}

static void to_bf16(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni)
{
    if (!vnni) {
        for (int r = 0; r < rows; r++) {
            const float *in = src + (size_t)r * cols;
            uint16_t *out = dst + (size_t)r * ld_dst;
            int c = 0;
            for (; c + 8 <= cols; c += 8) vst1q_u16(out + c, bf16_round8(load8(in + c)));
            if (c < cols) store_tail_u16(out + c, cols - c, bf16_round8(load_tail(in + c, cols - c)));
        }
        return;
    }
    /* VNNI-2: rows r and r+1 interleave, one 32-bit pair per column; 8 columns are 16 elements */
    for (int r = 0; r < rows; r += 2) {
        const float *lo = src + (size_t)r * cols, *hi = lo + cols;
        uint16_t *out = dst + (size_t)(r / 2) * ld_dst * 2;
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            const float32x4x2_t a = load8(lo + c), b = load8(hi + c);
            vst1q_u16(out + 2 * c, bf16_pairs4(a.val[0], b.val[0]));
            vst1q_u16(out + 2 * c + 8, bf16_pairs4(a.val[1], b.val[1]));
        }
        if (c < cols) {
            const int n = cols - c;
            const float32x4x2_t a = load_tail(lo + c, n), b = load_tail(hi + c, n);
            uint16_t t[16];
            vst1q_u16(t, bf16_pairs4(a.val[0], b.val[0]));
            vst1q_u16(t + 8, bf16_pairs4(a.val[1], b.val[1]));
            memcpy(out + 2 * c, t, (size_t)(2 * n) * sizeof *t);
        }
    }
}

/* bf16(x) widened back, NaN included (0x7FC00000). */
ALWAYS_INLINE float32x4x2_t round_bf16_8(float32x4x2_t x) { return bf16_widen8(bf16_round8(x)); }

static void round_bf16(float *x, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) store8(x + i, round_bf16_8(load8(x + i)));
    if (i < n) store_tail(x + i, n - i, round_bf16_8(load_tail(x + i, n - i)));
}

static void f16_to_f32(const uint16_t *src, int n, float *dst)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) store8(dst + i, f16_widen8(vld1q_u16(src + i)));
    if (i < n) store_tail(dst + i, n - i, f16_widen8(load_tail_u16(src + i, n - i)));
}

static void f32_to_f16(const float *src, int n, uint16_t *dst)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) vst1q_u16(dst + i, f16_round8(load8(src + i)));
    if (i < n) store_tail_u16(dst + i, n - i, f16_round8(load_tail(src + i, n - i)));
}

/* ---- score tiles ---- */

static void scale_rows(float *o, int rows, int cols, const float *alpha)
{
    for (int r = 0; r < rows; r++) {
        const float32x4_t a = vdupq_n_f32(alpha[r]);
        float *row = o + (size_t)r * cols;
        int c = 0;
        for (; c + 8 <= cols; c += 8) store8(row + c, mul8(load8(row + c), a));
        if (c < cols) store_tail(row + c, cols - c, mul8(load_tail(row + c, cols - c), a));
    }
}

/* 8 bias values widened to f32 exactly: from p (whole) or the n < 8 there
 * (tail, zero past n). */
ALWAYS_INLINE float32x4x2_t bias8(const void *p, attnops_dtype dtype, bool whole, int n)
{
    if (dtype == ATTNOPS_DTYPE_F32) return whole ? load8(p) : load_tail(p, n);
    const uint16x8_t h = whole ? vld1q_u16(p) : load_tail_u16(p, n);
    return dtype == ATTNOPS_DTYPE_F16 ? f16_widen8(h) : bf16_widen8(h);
}

/* (s + b) scale, or s scale + b fused as AVX2's fmadd. */
ALWAYS_INLINE float32x4x2_t biased8(float32x4x2_t x, float32x4x2_t b, float32x4_t vs, bool add_then_scale)
{
    if (add_then_scale) return mul8(add8(x, b), vs);
    return (float32x4x2_t){{vfmaq_f32(b.val[0], x.val[0], vs), vfmaq_f32(b.val[1], x.val[1], vs)}};
}

/* add_bias for one (dtype, order), constants once inlined. */
ALWAYS_INLINE void add_bias_rows(float *s, int rows, int cols, int ld_s, float scale, const void *bias,
                                 attnops_dtype dtype, int64_t ld_b, bool add_then_scale)
{
    const float32x4_t vs = vdupq_n_f32(scale);
    const size_t esize = dtype == ATTNOPS_DTYPE_F32 ? 4 : 2;
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        const char *brow = (const char *)bias + (size_t)(r * ld_b) * esize;
        int c = 0;
        for (; c + 8 <= cols; c += 8)
            store8(row + c, biased8(load8(row + c), bias8(brow + c * esize, dtype, true, 8), vs, add_then_scale));
        if (c < cols) {
            const int n = cols - c;
            store_tail(row + c, n,
                       biased8(load_tail(row + c, n), bias8(brow + c * esize, dtype, false, n), vs, add_then_scale));
        }
    }
}

static void add_bias(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32:
        if (add_then_scale) add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_F32, ld_b, true);
        else add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_F32, ld_b, false);
        break;
    case ATTNOPS_DTYPE_F16:
        if (add_then_scale) add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_F16, ld_b, true);
        else add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_F16, ld_b, false);
        break;
    default: /* bf16 */
        if (add_then_scale) add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_BF16, ld_b, true);
        else add_bias_rows(s, rows, cols, ld_s, scale, bias, ATTNOPS_DTYPE_BF16, ld_b, false);
        break;
    }
}

/* s scale - slope g(|d0 - r + c + lane|), lanes 0..3 from `at` = d0 - r + c
 * (an exact small integer in float): the fused form of AVX2. */
ALWAYS_INLINE float32x4_t alibi4(float32x4_t x, float at, float32x4_t lane, float32x4_t vs, float32x4_t neg_slope,
                                 bool sqrt_dist)
{
    float32x4_t d = vabsq_f32(vaddq_f32(vdupq_n_f32(at), lane));
    if (sqrt_dist) d = vsqrtq_f32(d);
    return vfmaq_f32(vmulq_f32(x, vs), neg_slope, d);
}

ALWAYS_INLINE void add_alibi_rows(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0,
                                  bool sqrt_dist)
{
    const float32x4_t vs = vdupq_n_f32(scale), neg_slope = vdupq_n_f32(-slope);
    const float32x4_t lane0 = {0, 1, 2, 3}, lane4 = {4, 5, 6, 7};
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            const float at = d0 - (float)r + (float)c;
            const float32x4x2_t x = load8(row + c);
            store8(row + c, (float32x4x2_t){{alibi4(x.val[0], at, lane0, vs, neg_slope, sqrt_dist),
                                             alibi4(x.val[1], at, lane4, vs, neg_slope, sqrt_dist)}});
        }
        if (c < cols) {
            const float at = d0 - (float)r + (float)c;
            const float32x4x2_t x = load_tail(row + c, cols - c);
            store_tail(row + c, cols - c,
                       (float32x4x2_t){{alibi4(x.val[0], at, lane0, vs, neg_slope, sqrt_dist),
                                        alibi4(x.val[1], at, lane4, vs, neg_slope, sqrt_dist)}});
        }
    }
}

static void add_alibi(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist)
{
    if (sqrt_dist) add_alibi_rows(s, rows, cols, ld_s, scale, slope, d0, true);
    else add_alibi_rows(s, rows, cols, ld_s, scale, slope, d0, false);
}

/* ---- dropout: the Philox stream ---- */

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
static void philox_blocks(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
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
static void philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
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

/* ---- FP8 ---- */

/* The constants of fp8_round for one format. */
typedef struct fp8_consts {
    int32x4_t emin, man_bits;
    float32x4_t scale, max_finite, overflow;
} fp8_consts;

/* fa_fp8_round_f32(x scale) on 4 lanes: quantum = 2^(max(exponent, emin)
 * - mantissa bits) built from the exponent field, y = |x| / quantum
 * (multiplying by the exact power of two 1 / quantum), rounded to nearest
 * even; past max_finite or inf the overflow value, a NaN kept. */
ALWAYS_INLINE float32x4_t fp8_round4(float32x4_t x, const fp8_consts *k)
{
    const uint32x4_t abs_mask = vdupq_n_u32(0x7fffffff), inf_bits = vdupq_n_u32(0x7f800000);
    const uint32x4_t u = vreinterpretq_u32_f32(vmulq_f32(x, k->scale)), a = vandq_u32(u, abs_mask);
    const int32x4_t exponent = vreinterpretq_s32_u32(vshrq_n_u32(a, 23));
    const int32x4_t qexp = vsubq_s32(vmaxq_s32(exponent, k->emin), k->man_bits);
    const float32x4_t quantum = vreinterpretq_f32_s32(vshlq_n_s32(qexp, 23));
    const float32x4_t inv = vreinterpretq_f32_s32(vshlq_n_s32(vsubq_s32(vdupq_n_s32(254), qexp), 23));
    float32x4_t r = vmulq_f32(vrndnq_f32(vmulq_f32(vreinterpretq_f32_u32(a), inv)), quantum);
    r = vbslq_f32(vcgtq_f32(r, k->max_finite), k->overflow, r);
    r = vbslq_f32(vceqq_u32(a, inf_bits), k->overflow, r);
    r = vbslq_f32(vcgtq_u32(a, inf_bits), vreinterpretq_f32_u32(a), r); /* NaN */
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(r), vbicq_u32(u, abs_mask)));
}

static void fp8_round(float *x, int n, float scale, const fa_fp8_format *f)
{
    const fp8_consts k = {vdupq_n_s32(f->emin + 127), vdupq_n_s32(f->man_bits), vdupq_n_f32(scale),
                          vdupq_n_f32(f->max_finite), vdupq_n_f32(f->overflow)};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4x2_t v = load8(x + i);
        store8(x + i, (float32x4x2_t){{fp8_round4(v.val[0], &k), fp8_round4(v.val[1], &k)}});
    }
    if (i < n) {
        const float32x4x2_t v = load_tail(x + i, n - i);
        store_tail(x + i, n - i, (float32x4x2_t){{fp8_round4(v.val[0], &k), fp8_round4(v.val[1], &k)}});
    }
}

/* max(m, |x|) as the comparison |x| > m: a NaN lane, quiet or signalling,
 * keeps m (vmaxq would return NaN, vmaxnmq too for a signalling one). */
ALWAYS_INLINE float32x4_t abs_max4(float32x4_t m, float32x4_t x)
{
    const float32x4_t a = vabsq_f32(x);
    return vbslq_f32(vcgtq_f32(a, m), a, m);
}

static float abs_max(const float *x, int n)
{
    float32x4_t m0 = vdupq_n_f32(0.0f), m1 = m0, m2 = m0, m3 = m0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const float32x4x2_t a = load8(x + i), b = load8(x + i + 8);
        m0 = abs_max4(m0, a.val[0]), m1 = abs_max4(m1, a.val[1]);
        m2 = abs_max4(m2, b.val[0]), m3 = abs_max4(m3, b.val[1]);
    }
    if (i + 8 <= n) {
        const float32x4x2_t a = load8(x + i);
        m0 = abs_max4(m0, a.val[0]), m1 = abs_max4(m1, a.val[1]);
        i += 8;
    }
    if (i < n) { /* zero padding: |0| > m never holds */
        const float32x4x2_t a = load_tail(x + i, n - i);
        m2 = abs_max4(m2, a.val[0]), m3 = abs_max4(m3, a.val[1]);
    }
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(m0, m1), vmaxq_f32(m2, m3))); /* no NaN left */
}

/* y = (x a) b, plus y first when accumulate: the statement's roundings
 * (vmulq and vaddq stay apart: ISO C mode does not contract them). */
ALWAYS_INLINE void scale2_rows(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4x2_t v = mul8(mul8(load8(x + i), va), vb);
        if (accumulate) v = add8(load8(y + i), v);
        store8(y + i, v);
    }
    if (i < n) {
        float32x4x2_t v = mul8(mul8(load_tail(x + i, n - i), va), vb);
        if (accumulate) v = add8(load_tail(y + i, n - i), v);
        store_tail(y + i, n - i, v);
    }
}

static void scale2(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    if (accumulate) scale2_rows(y, x, n, a, b, true);
    else scale2_rows(y, x, n, a, b, false);
}

/* x (float)keep scale, the keep factor first, as the statement. */
ALWAYS_INLINE float32x4x2_t keep8(float32x4x2_t x, uint8x8_t keep, float32x4_t scale)
{
    const uint16x8_t k16 = vmovl_u8(keep);
    const float32x4_t k0 = vcvtq_f32_u32(vmovl_u16(vget_low_u16(k16))), k1 = vcvtq_f32_u32(vmovl_high_u16(k16));
    return (float32x4x2_t){{vmulq_f32(x.val[0], vmulq_f32(k0, scale)), vmulq_f32(x.val[1], vmulq_f32(k1, scale))}};
}

static void apply_keep(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    const float32x4_t sc = vdupq_n_f32(scale);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * (size_t)ld;
        const uint8_t *kr = keep + (size_t)r * (size_t)ld;
        int c = 0;
        for (; c + 8 <= cols; c += 8) store8(row + c, keep8(load8(row + c), vld1_u8(kr + c), sc));
        if (c < cols) {
            const int n = cols - c;
            uint8_t k[8] = {0};
            memcpy(k, kr + c, (size_t)n);
            store_tail(row + c, n, keep8(load_tail(row + c, n), vld1_u8(k), sc));
        }
    }
}

/* ---- soft-capping ---- */

/* vec_tanh.h's algorithm on 4 lanes, bit for bit vec_tanh_ref, as the AVX2
 * set does it: each lane takes the polynomial side (a < 0.625) or the exp
 * one, a side computed only when some lane needs it (a real cap's scores are
 * nearly all on the cheap polynomial side); the sign is x's OR'd in (t >= 0,
 * -0 kept), and a NaN lane gets x itself for both (exp4 turns NaN into its
 * clamp).  vfmaq_f32(c, a, b) is fmaf(a, b, c); vfmsq_f32(c, a, b) is
 * fmaf(-a, b, c). */
ALWAYS_INLINE float32x4_t tanh4_small(float32x4_t a, float32x4_t *d)
{
    const float32x4_t z = vmulq_f32(a, a);
    float32x4_t p = vdupq_n_f32(VEC_TANH_P0);
    p = vfmaq_f32(vdupq_n_f32(VEC_TANH_P1), p, z);
    p = vfmaq_f32(vdupq_n_f32(VEC_TANH_P2), p, z);
    p = vfmaq_f32(vdupq_n_f32(VEC_TANH_P3), p, z);
    p = vfmaq_f32(vdupq_n_f32(VEC_TANH_P4), p, z);
    const float32x4_t t = vfmaq_f32(a, vmulq_f32(p, z), a);
    *d = vfmsq_f32(vdupq_n_f32(1.0f), t, t);
    return t;
}

ALWAYS_INLINE float32x4_t tanh4_large(float32x4_t a, float32x4_t *d)
{
    const float32x4_t one = vdupq_n_f32(1.0f), two = vdupq_n_f32(2.0f);
    const float32x4_t u = vdivq_f32(two, vaddq_f32(exp4(vaddq_f32(a, a)), one));
    *d = vmulq_f32(u, vsubq_f32(two, u));
    return vsubq_f32(one, u);
}

ALWAYS_INLINE float32x4_t tanh4(float32x4_t x, float32x4_t *dtanh)
{
    const float32x4_t a = vabsq_f32(x);
    const uint32x4_t small = vcltq_f32(a, vdupq_n_f32(VEC_TANH_SMALL)); /* false for NaN */
    const uint32_t lanes = vminvq_u32(small) ? 2u : vmaxvq_u32(small) ? 1u : 0u; /* 2 all, 1 some, 0 none */
    float32x4_t t, d;
    if (lanes == 2u) {
        t = tanh4_small(a, &d);
    } else {
        t = tanh4_large(a, &d);
        if (lanes) {
            float32x4_t ds;
            const float32x4_t ts = tanh4_small(a, &ds);
            t = vbslq_f32(small, ts, t), d = vbslq_f32(small, ds, d);
        }
        const uint32x4_t not_nan = vceqq_f32(x, x);
        t = vbslq_f32(not_nan, t, x), d = vbslq_f32(not_nan, d, x);
    }
    *dtanh = d;
    const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(t), sign));
}

/* 8 raw scores: s = tanh(s in) out, d = the derivative. */
ALWAYS_INLINE float32x4x2_t softcap8(float32x4x2_t s, float32x4_t vin, float32x4_t vout, float32x4x2_t *d)
{
    const float32x4_t t0 = tanh4(vmulq_f32(s.val[0], vin), &d->val[0]);
    const float32x4_t t1 = tanh4(vmulq_f32(s.val[1], vin), &d->val[1]);
    return (float32x4x2_t){{vmulq_f32(t0, vout), vmulq_f32(t1, vout)}};
}

/* softcap with or without the derivative tile (the backward's, or NULL). */
ALWAYS_INLINE void softcap_rows(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh,
                                bool with_d)
{
    const float32x4_t vin = vdupq_n_f32(in_scale), vout = vdupq_n_f32(out_scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * (size_t)ld;
        float *drow = with_d ? dtanh + (size_t)r * (size_t)ld : NULL;
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            float32x4x2_t d;
            store8(row + c, softcap8(load8(row + c), vin, vout, &d));
            if (with_d) store8(drow + c, d);
        }
        if (c < cols) {
            const int n = cols - c;
            float32x4x2_t d;
            store_tail(row + c, n, softcap8(load_tail(row + c, n), vin, vout, &d));
            if (with_d) store_tail(drow + c, n, d);
        }
    }
}

static void softcap(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    if (dtanh) softcap_rows(s, rows, cols, ld, in_scale, out_scale, dtanh, true);
    else softcap_rows(s, rows, cols, ld, in_scale, out_scale, NULL, false);
}

static void softcap_grad(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++) {
        float *row = ds + (size_t)r * (size_t)ld;
        const float *drow = dtanh + (size_t)r * (size_t)ld;
        int c = 0;
        for (; c + 8 <= cols; c += 8) {
            const float32x4x2_t x = load8(row + c), d = load8(drow + c);
            store8(row + c, (float32x4x2_t){{vmulq_f32(x.val[0], d.val[0]), vmulq_f32(x.val[1], d.val[1])}});
        }
        if (c < cols) {
            const int n = cols - c;
            const float32x4x2_t x = load_tail(row + c, n), d = load_tail(drow + c, n);
            store_tail(row + c, n, (float32x4x2_t){{vmulq_f32(x.val[0], d.val[0]), vmulq_f32(x.val[1], d.val[1])}});
        }
    }
}

const cpu_kernel_set cpu_kernels_neon_fa = {.fa = {.softmax_fwd = softmax_fwd,
                                                   .softmax_bwd = softmax_bwd,
                                                   .to_bf16 = to_bf16,
                                                   .round_bf16 = round_bf16,
                                                   .f16_to_f32 = f16_to_f32,
                                                   .f32_to_f16 = f32_to_f16,
                                                   .scale_rows = scale_rows,
                                                   .add_bias = add_bias,
                                                   .add_alibi = add_alibi,
                                                   .philox_bytes = philox_bytes,
                                                   .philox_blocks = philox_blocks,
                                                   .fp8_round = fp8_round,
                                                   .abs_max = abs_max,
                                                   .scale2 = scale2,
                                                   .apply_keep = apply_keep,
                                                   .softcap = softcap,
                                                   .softcap_grad = softcap_grad}};
