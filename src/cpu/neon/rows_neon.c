/* The NEON (AArch64 ASIMD) KeyPool and AttnRes row kernels (kernels.h
 * states each contract; portable/kernels_portable.c is the plain-C
 * statement of it).  ASIMD is part of every AArch64 CPU: no flags, no
 * run-time check; fa_neon.c holds the FlashAttention kernels of the same
 * ISA.  The algorithms are the AVX2 set's on 4 lanes, two to eight q
 * registers a step, so element-wise results are the x86 sets' bits;
 * reductions sum in their own order.
 *
 * Tails: a step of 8 elements (a chunk of 32 in the pair-split forms) takes
 * the count n of those present and, when n falls short, loads a
 * zero-padded copy of them or stores through one (ASIMD has no masked
 * loads or stores).  Loops run whole steps and the partial one comes after
 * them, so that its memcpy calls leave the loop's registers alone.
 *
 * Release builds are -O2, which neither unswitches loops nor fully unrolls
 * small ones, and a branch or a variable index left in a loop sends its
 * accumulators to memory.  So steps are written out register by register,
 * and each row loop is an always-inline body instantiated per dtype and
 * form (x given or not), its choices constants there.
 *
 * Where NEON forced another choice than x86:
 *  - vminq/vmaxq return NaN when either input is NaN, where min_ps/max_ps
 *    return the second operand: the exp clamp and the softmax max compare
 *    and select instead, as the scalar statements do;
 *  - base ARMv8.0 has no bf16 instruction: bf16 rounds on the integer bits;
 *  - FCVTN (f32 -> f16) keeps the top of a NaN's payload: NaN lanes become
 *    sign | 0x7E00, as attnops_f32_to_f16 gives;
 *  - there is no scalef: exp4 applies 2^n in two exact halves;
 *  - ACLE has no non-temporal store: `stream` writes with plain stores (an
 *    STNP in inline asm could not be measured here). */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/neon/neon_common.h"

/* n floats from p (zero past n), and their store: one q register, then two. */
static inline float32x4_t load4(const float *p, int n)
{
    if (n >= 4) return vld1q_f32(p);
    float t[4] = {0};
    memcpy(t, p, (size_t)n * sizeof(float));
    return vld1q_f32(t);
}

static inline void store4(float *p, int n, float32x4_t x)
{
    if (n >= 4) {
        vst1q_f32(p, x);
        return;
    }
    float t[4];
    vst1q_f32(t, x);
    memcpy(p, t, (size_t)n * sizeof(float));
}

static inline float32x4x2_t load8(const float *p, int n)
{
    if (n >= 8) return vld1q_f32_x2(p);
    float t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof(float));
    return vld1q_f32_x2(t);
}

static inline void store8(float *p, int n, float32x4x2_t x)
{
    if (n >= 8) {
        vst1q_f32_x2(p, x);
        return;
    }
    float t[8];
    vst1q_f32_x2(t, x);
    memcpy(p, t, (size_t)n * sizeof(float));
}

/* n 16-bit elements (zero past n), and their store. */
static inline uint16x8_t load8_u16(const uint16_t *p, int n)
{
    if (n >= 8) return vld1q_u16(p);
    uint16_t t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof(uint16_t));
    return vld1q_u16(t);
}

static inline void store8_u16(uint16_t *p, int n, uint16x8_t h)
{
    if (n >= 8) {
        vst1q_u16(p, h);
        return;
    }
    uint16_t t[8];
    vst1q_u16(t, h);
    memcpy(p, t, (size_t)n * sizeof(uint16_t));
}

/* n values (zero past n) from element d of an f32, f16 or bf16 row,
 * widened exactly (FCVTL quietens an f16 NaN as attnops_f16_to_f32 does). */
ALWAYS_INLINE float32x4x2_t load8_dt(const void *v, attnops_dtype dt, int d, int n)
{
    if (dt == ATTNOPS_DTYPE_F32) return load8((const float *)v + d, n);
    const uint16x8_t h = load8_u16((const uint16_t *)v + d, n);
    return dt == ATTNOPS_DTYPE_F16 ? f16_widen8(h) : bf16_widen8(h);
}

/* x rounded to f32, f16 or bf16 (nearest even) into n elements from d. */
ALWAYS_INLINE void store8_dt(void *out, attnops_dtype dt, int d, int n, float32x4x2_t x)
{
    if (dt == ATTNOPS_DTYPE_F32) store8((float *)out + d, n, x);
    else store8_u16((uint16_t *)out + d, n, dt == ATTNOPS_DTYPE_F16 ? f16_round8(x) : bf16_round8(x));
}

/* A weight rounded to bf16 or f16 (nearest even) and widened back. */
static inline float32x4_t round_weight4(float32x4_t w, bool bf16)
{
    if (!bf16) return vcvt_f32_f16(vcvt_f16_f32(w));
    return vreinterpretq_f32_u32(vshll_n_u16(bf16_round4(w), 16));
}

/* Channels d .. d + n - 1 (n <= 4) of group_pool, e [R] its scratch.  The
 * max compares and selects as the portable kernel does (vmaxq would let a
 * NaN logit through); the weighted sum is a multiply then an add, r in
 * order. */
ALWAYS_INLINE void pool4(const float *const *key, const float *const *gate, const float *ape, int R, int D, int d,
                         int n, bool bf16, float32x4_t *e, float *out)
{
    float32x4_t m = vdupq_n_f32(-INFINITY), sum = vdupq_n_f32(0.0f), acc = sum;
    for (int r = 0; r < R; r++) {
        e[r] = vaddq_f32(load4(gate[r] + d, n), load4(ape + (size_t)r * D + d, n));
        m = vbslq_f32(vcgtq_f32(e[r], m), e[r], m);
    }
    for (int r = 0; r < R; r++) sum = vaddq_f32(sum, e[r] = exp4(vsubq_f32(e[r], m)));
    for (int r = 0; r < R; r++) {
        const float32x4_t w = round_weight4(vdivq_f32(e[r], sum), bf16);
        acc = vaddq_f32(acc, vmulq_f32(w, load4(key[r] + d, n)));
    }
    store4(out + d, n, acc);
}

/* Four channels a step: each r costs an exp and a division, so the three
 * chains over r (max, sum, acc) are short beside it. */
static void group_pool(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out)
{
    float32x4_t e[128];
    int d = 0;
    for (; d + 4 <= D; d += 4) pool4(key, gate, ape, R, D, d, 4, bf16, e, out);
    if (d < D) pool4(key, gate, ape, R, D, d, D - d, bf16, e, out);
}

/* ar_dots_f64's sums: four accumulators of two doubles per sum. */
typedef struct f64_sums {
    float64x2_t x0, x1, x2, x3, y0, y1, y2, y3;
} f64_sums;

/* Products of 8 floats a with b (into x) and with c (into y), widened to
 * double, which holds them exactly. */
ALWAYS_INLINE void dots8_f64(f64_sums *s, float32x4x2_t a, float32x4x2_t b, float32x4x2_t c)
{
    const float64x2_t a0 = vcvt_f64_f32(vget_low_f32(a.val[0])), a1 = vcvt_high_f64_f32(a.val[0]);
    const float64x2_t a2 = vcvt_f64_f32(vget_low_f32(a.val[1])), a3 = vcvt_high_f64_f32(a.val[1]);
    s->x0 = vfmaq_f64(s->x0, a0, vcvt_f64_f32(vget_low_f32(b.val[0])));
    s->x1 = vfmaq_f64(s->x1, a1, vcvt_high_f64_f32(b.val[0]));
    s->x2 = vfmaq_f64(s->x2, a2, vcvt_f64_f32(vget_low_f32(b.val[1])));
    s->x3 = vfmaq_f64(s->x3, a3, vcvt_high_f64_f32(b.val[1]));
    s->y0 = vfmaq_f64(s->y0, a0, vcvt_f64_f32(vget_low_f32(c.val[0])));
    s->y1 = vfmaq_f64(s->y1, a1, vcvt_high_f64_f32(c.val[0]));
    s->y2 = vfmaq_f64(s->y2, a2, vcvt_f64_f32(vget_low_f32(c.val[1])));
    s->y3 = vfmaq_f64(s->y3, a3, vcvt_high_f64_f32(c.val[1]));
}

static inline float hsum_f64(float64x2_t s0, float64x2_t s1, float64x2_t s2, float64x2_t s3)
{
    return (float)vaddvq_f64(vaddq_f64(vaddq_f64(s0, s1), vaddq_f64(s2, s3)));
}

/* Elements d .. d + n - 1 (n <= 8) of a row's remainder into s. */
ALWAYS_INLINE void tail8_f64(f64_sums *s, const float *v, const float *x, const float *y, int d, int n)
{
    const float32x4x2_t a = load8(v + d, n);
    dots8_f64(s, a, x ? load8(x + d, n) : a, load8(y + d, n));
}

/* 16 floats a step; one line of next per line of v prefetched into L2, so
 * the row after this one streams in while this one is summed.  x NULL:
 * the products of v with itself. */
ALWAYS_INLINE void dots_f64_row(const float *v, int D, const float *x, const float *y, float *vx, float *vy,
                                const char *ahead)
{
    const float64x2_t zero = vdupq_n_f64(0.0);
    f64_sums s = {zero, zero, zero, zero, zero, zero, zero, zero};
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        if (ahead) __builtin_prefetch(ahead + 4 * d, 0, 2);
        const float32x4x2_t a0 = vld1q_f32_x2(v + d), a1 = vld1q_f32_x2(v + d + 8);
        dots8_f64(&s, a0, x ? vld1q_f32_x2(x + d) : a0, vld1q_f32_x2(y + d));
        dots8_f64(&s, a1, x ? vld1q_f32_x2(x + d + 8) : a1, vld1q_f32_x2(y + d + 8));
    }
    for (; d + 8 <= D; d += 8) tail8_f64(&s, v, x, y, d, 8);
    if (d < D) tail8_f64(&s, v, x, y, d, D - d);
    *vx = hsum_f64(s.x0, s.x1, s.x2, s.x3), *vy = hsum_f64(s.y0, s.y1, s.y2, s.y3);
}

static void ar_dots_f64(const float *v, int D, const float *x, const float *y, float *vx, float *vy, const void *next)
{
    if (x) dots_f64_row(v, D, x, y, vx, vy, next);
    else dots_f64_row(v, D, NULL, y, vx, vy, next);
}

/* ar_dots' and ar_dots_split's sums: four accumulators per sum (the FMA
 * latency), accumulator k taking elements 4k .. 4k + 3 of each 16. */
typedef struct dot_sums {
    float32x4_t x0, x1, x2, x3, y0, y1, y2, y3;
} dot_sums;

/* 16 consecutive elements a0..a3 into x (times x, or times themselves when
 * x is NULL) and y (times y).  ar_dots of an f32 row whose length is a
 * multiple of 32 and ar_dots_split of its bf16 source both sum through here
 * in layout order: the same bits. */
ALWAYS_INLINE void dots16(dot_sums *s, float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3,
                          const float *x, const float *y)
{
    s->x0 = vfmaq_f32(s->x0, a0, x ? vld1q_f32(x) : a0);
    s->x1 = vfmaq_f32(s->x1, a1, x ? vld1q_f32(x + 4) : a1);
    s->x2 = vfmaq_f32(s->x2, a2, x ? vld1q_f32(x + 8) : a2);
    s->x3 = vfmaq_f32(s->x3, a3, x ? vld1q_f32(x + 12) : a3);
    s->y0 = vfmaq_f32(s->y0, a0, vld1q_f32(y));
    s->y1 = vfmaq_f32(s->y1, a1, vld1q_f32(y + 4));
    s->y2 = vfmaq_f32(s->y2, a2, vld1q_f32(y + 8));
    s->y3 = vfmaq_f32(s->y3, a3, vld1q_f32(y + 12));
}

static inline float hsum_f32(float32x4_t s0, float32x4_t s1, float32x4_t s2, float32x4_t s3)
{
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

/* Elements d .. d + n - 1 (n <= 8) of a row's remainder into s. */
ALWAYS_INLINE void tail8(dot_sums *s, const void *v, attnops_dtype dt, const float *x, const float *y, int d, int n)
{
    const float32x4x2_t a = load8_dt(v, dt, d, n), b = x ? load8(x + d, n) : a, c = load8(y + d, n);
    s->x0 = vfmaq_f32(s->x0, a.val[0], b.val[0]), s->x1 = vfmaq_f32(s->x1, a.val[1], b.val[1]);
    s->y0 = vfmaq_f32(s->y0, a.val[0], c.val[0]), s->y1 = vfmaq_f32(s->y1, a.val[1], c.val[1]);
}

/* 32 elements a step (two of dots16), one line of next per line of v
 * prefetched into L2. */
ALWAYS_INLINE void dots_row(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx,
                            float *vy, const char *ahead)
{
    const int esize = dt == ATTNOPS_DTYPE_F32 ? 4 : 2;
    const float32x4_t zero = vdupq_n_f32(0.0f);
    dot_sums s = {zero, zero, zero, zero, zero, zero, zero, zero};
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        if (ahead) {
            __builtin_prefetch(ahead + d * esize, 0, 2);
            if (esize == 4) __builtin_prefetch(ahead + d * esize + 64, 0, 2);
        }
        const float32x4x2_t a0 = load8_dt(v, dt, d, 8), a1 = load8_dt(v, dt, d + 8, 8);
        dots16(&s, a0.val[0], a0.val[1], a1.val[0], a1.val[1], x ? x + d : NULL, y + d);
        const float32x4x2_t a2 = load8_dt(v, dt, d + 16, 8), a3 = load8_dt(v, dt, d + 24, 8);
        dots16(&s, a2.val[0], a2.val[1], a3.val[0], a3.val[1], x ? x + d + 16 : NULL, y + d + 16);
    }
    for (; d + 8 <= D; d += 8) tail8(&s, v, dt, x, y, d, 8);
    if (d < D) tail8(&s, v, dt, x, y, d, D - d);
    *vx = hsum_f32(s.x0, s.x1, s.x2, s.x3), *vy = hsum_f32(s.y0, s.y1, s.y2, s.y3);
}

static void ar_dots(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                    const void *next)
{
    switch (dt) {
    case ATTNOPS_DTYPE_BF16:
        if (x) dots_row(v, ATTNOPS_DTYPE_BF16, D, x, y, vx, vy, next);
        else dots_row(v, ATTNOPS_DTYPE_BF16, D, NULL, y, vx, vy, next);
        break;
    case ATTNOPS_DTYPE_F16:
        if (x) dots_row(v, ATTNOPS_DTYPE_F16, D, x, y, vx, vy, next);
        else dots_row(v, ATTNOPS_DTYPE_F16, D, NULL, y, vx, vy, next);
        break;
    default:
        if (x) dots_row(v, ATTNOPS_DTYPE_F32, D, x, y, vx, vy, next);
        else dots_row(v, ATTNOPS_DTYPE_F32, D, NULL, y, vx, vy, next);
        break;
    }
}

/* c acc + e x (c = 1: acc * 1 = acc exactly, no multiplication). */
ALWAYS_INLINE float32x4_t accumulate4(float32x4_t acc, float32x4_t x, bool rescale, float32x4_t vc, float32x4_t ve)
{
    if (rescale) acc = vmulq_f32(acc, vc);
    return vfmaq_f32(acc, x, ve);
}

/* Elements d .. d + n - 1 (n <= 8) of ar_accumulate. */
ALWAYS_INLINE void accumulate8(float *acc, const void *v, attnops_dtype dt, int d, int n, bool rescale,
                               float32x4_t vc, float32x4_t ve)
{
    const float32x4x2_t x = load8_dt(v, dt, d, n), a = load8(acc + d, n);
    store8(acc + d, n,
           (float32x4x2_t){{accumulate4(a.val[0], x.val[0], rescale, vc, ve),
                            accumulate4(a.val[1], x.val[1], rescale, vc, ve)}});
}

ALWAYS_INLINE void accumulate_row(float *acc, float c, float e, const void *v, attnops_dtype dt, int D, bool rescale)
{
    const float32x4_t vc = vdupq_n_f32(c), ve = vdupq_n_f32(e);
    int d = 0;
    for (; d + 8 <= D; d += 8) accumulate8(acc, v, dt, d, 8, rescale, vc, ve);
    if (d < D) accumulate8(acc, v, dt, d, D - d, rescale, vc, ve);
}

static void ar_accumulate(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    const bool rescale = c != 1.0f;
    switch (dt) {
    case ATTNOPS_DTYPE_BF16:
        if (rescale) accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_BF16, D, true);
        else accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_BF16, D, false);
        break;
    case ATTNOPS_DTYPE_F16:
        if (rescale) accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_F16, D, true);
        else accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_F16, D, false);
        break;
    default:
        if (rescale) accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_F32, D, true);
        else accumulate_row(acc, c, e, v, ATTNOPS_DTYPE_F32, D, false);
        break;
    }
}

/* Elements d .. d + n - 1 (n <= 8) of ar_store_div. */
ALWAYS_INLINE void store_div8(void *out, attnops_dtype out_dt, const float *src, int d, int n, float32x4_t vd)
{
    const float32x4x2_t s = load8(src + d, n);
    store8_dt(out, out_dt, d, n, (float32x4x2_t){{vdivq_f32(s.val[0], vd), vdivq_f32(s.val[1], vd)}});
}

ALWAYS_INLINE void store_div_row(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    const float32x4_t vd = vdupq_n_f32(div);
    int d = 0;
    for (; d + 8 <= D; d += 8) store_div8(out, out_dt, src, d, 8, vd);
    if (d < D) store_div8(out, out_dt, src, d, D - d, vd);
}

static void ar_store_div(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    switch (out_dt) {
    case ATTNOPS_DTYPE_BF16: store_div_row(out, ATTNOPS_DTYPE_BF16, src, div, D); break;
    case ATTNOPS_DTYPE_F16: store_div_row(out, ATTNOPS_DTYPE_F16, src, div, D); break;
    default: store_div_row(out, ATTNOPS_DTYPE_F32, src, div, D); break;
    }
}

/* The pair-split chunk of 32 elements from element d as eight vectors:
 * q[k] = layout positions d + 4k .. d + 4k + 3, so q[0..3] are the chunk's
 * even elements and q[4..7] its odd ones. */
typedef struct split_chunk {
    float32x4_t q[8];
} split_chunk;

/* The even and odd elements of 8 bf16: each 32-bit lane is a pair, its low
 * half shifted up the even element, its high half masked the odd one. */
static inline float32x4_t bf16_evens(uint16x8_t h)
{
    return vreinterpretq_f32_u32(vshlq_n_u32(vreinterpretq_u32_u16(h), 16));
}

static inline float32x4_t bf16_odds(uint16x8_t h)
{
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_u16(h), vdupq_n_u32(0xffff0000u)));
}

/* The chunk of 32 bf16 at src. */
ALWAYS_INLINE split_chunk split32(const uint16_t *src)
{
    const uint16x8_t h0 = vld1q_u16(src), h1 = vld1q_u16(src + 8), h2 = vld1q_u16(src + 16), h3 = vld1q_u16(src + 24);
    return (split_chunk){{bf16_evens(h0), bf16_evens(h1), bf16_evens(h2), bf16_evens(h3), bf16_odds(h0),
                          bf16_odds(h1), bf16_odds(h2), bf16_odds(h3)}};
}

/* The same chunk of 32 natural f32 at src: LD2 deinterleaves it. */
ALWAYS_INLINE split_chunk split32_f32(const float *src)
{
    const float32x4x2_t p0 = vld2q_f32(src), p1 = vld2q_f32(src + 8), p2 = vld2q_f32(src + 16),
                        p3 = vld2q_f32(src + 24);
    return (split_chunk){{p0.val[0], p1.val[0], p2.val[0], p3.val[0], p0.val[1], p1.val[1], p2.val[1], p3.val[1]}};
}

/* A row's last chunk, n < 32 elements at src of dtype dt (bf16 or f32),
 * zero-padded. */
static inline split_chunk split32_tail(const void *src, attnops_dtype dt, int n)
{
    if (dt == ATTNOPS_DTYPE_BF16) {
        uint16_t pad[32] = {0};
        memcpy(pad, src, (size_t)n * sizeof(uint16_t));
        return split32(pad);
    }
    float pad[32] = {0};
    memcpy(pad, src, (size_t)n * sizeof(float));
    return split32_f32(pad);
}

/* Elements d .. d + n - 1 (n <= 32) of chunk c in natural order, bf16 or
 * f32: ST2 interleaves the even and odd elements back. */
ALWAYS_INLINE void store_split32(void *out, attnops_dtype out_dt, int d, int n, const split_chunk *c)
{
    if (out_dt == ATTNOPS_DTYPE_BF16) {
        uint16_t pad[32], *o = (uint16_t *)out + d, *dst = n == 32 ? o : pad;
        const uint16x8_t even0 = vcombine_u16(bf16_round4(c->q[0]), bf16_round4(c->q[1]));
        const uint16x8_t even1 = vcombine_u16(bf16_round4(c->q[2]), bf16_round4(c->q[3]));
        const uint16x8_t odd0 = vcombine_u16(bf16_round4(c->q[4]), bf16_round4(c->q[5]));
        const uint16x8_t odd1 = vcombine_u16(bf16_round4(c->q[6]), bf16_round4(c->q[7]));
        const uint16x8x2_t lo = {{even0, odd0}}, hi = {{even1, odd1}}; /* named: clang's intrinsics are macros */
        vst2q_u16(dst, lo);
        vst2q_u16(dst + 16, hi);
        if (n < 32) memcpy(o, pad, (size_t)n * sizeof(uint16_t));
        return;
    }
    float pad[32], *o = (float *)out + d, *dst = n == 32 ? o : pad;
    const float32x4x2_t p0 = {{c->q[0], c->q[4]}}, p1 = {{c->q[1], c->q[5]}}, p2 = {{c->q[2], c->q[6]}},
                        p3 = {{c->q[3], c->q[7]}};
    vst2q_f32(dst, p0);
    vst2q_f32(dst + 8, p1);
    vst2q_f32(dst + 16, p2);
    vst2q_f32(dst + 24, p3);
    if (n < 32) memcpy(o, pad, (size_t)n * sizeof(float));
}

/* Chunk c at layout position d into the sums: dots16 twice, in layout
 * order. */
ALWAYS_INLINE void dots_chunk(dot_sums *s, const split_chunk *c, const float *xs, const float *ys, int d)
{
    dots16(s, c->q[0], c->q[1], c->q[2], c->q[3], xs ? xs + d : NULL, ys + d);
    dots16(s, c->q[4], c->q[5], c->q[6], c->q[7], xs ? xs + d + 16 : NULL, ys + d + 16);
}

/* A chunk a step, one line of next prefetched into L2 per line of v. */
ALWAYS_INLINE void dots_split_row(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                                  const char *ahead)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    dot_sums s = {zero, zero, zero, zero, zero, zero, zero, zero};
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        if (ahead) __builtin_prefetch(ahead + 2 * d, 0, 2);
        const split_chunk c = split32(v + d);
        dots_chunk(&s, &c, xs, ys, d);
    }
    if (d < D) {
        const split_chunk c = split32_tail(v + d, ATTNOPS_DTYPE_BF16, D - d);
        dots_chunk(&s, &c, xs, ys, d);
    }
    *vx = hsum_f32(s.x0, s.x1, s.x2, s.x3), *vy = hsum_f32(s.y0, s.y1, s.y2, s.y3);
}

static void ar_dots_split(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                          const void *next)
{
    if (xs) dots_split_row(v, D, xs, ys, vx, vy, next);
    else dots_split_row(v, D, NULL, ys, vx, vy, next);
}

/* Layout positions p .. p + 3 of accs = c accs + e x. */
ALWAYS_INLINE void accumulate_at(float *p, float32x4_t x, bool rescale, float32x4_t vc, float32x4_t ve)
{
    vst1q_f32(p, accumulate4(vld1q_f32(p), x, rescale, vc, ve));
}

/* Chunk x into the 32 layout positions at p (padding included: 0 stays 0). */
ALWAYS_INLINE void accumulate_chunk(float *p, const split_chunk *x, bool rescale, float32x4_t vc, float32x4_t ve)
{
    accumulate_at(p, x->q[0], rescale, vc, ve), accumulate_at(p + 4, x->q[1], rescale, vc, ve);
    accumulate_at(p + 8, x->q[2], rescale, vc, ve), accumulate_at(p + 12, x->q[3], rescale, vc, ve);
    accumulate_at(p + 16, x->q[4], rescale, vc, ve), accumulate_at(p + 20, x->q[5], rescale, vc, ve);
    accumulate_at(p + 24, x->q[6], rescale, vc, ve), accumulate_at(p + 28, x->q[7], rescale, vc, ve);
}

ALWAYS_INLINE void accumulate_split_row(float *accs, float c, float e, const uint16_t *v, int D, bool rescale)
{
    const float32x4_t vc = vdupq_n_f32(c), ve = vdupq_n_f32(e);
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        const split_chunk x = split32(v + d);
        accumulate_chunk(accs + d, &x, rescale, vc, ve);
    }
    if (d < D) {
        const split_chunk x = split32_tail(v + d, ATTNOPS_DTYPE_BF16, D - d);
        accumulate_chunk(accs + d, &x, rescale, vc, ve);
    }
}

static void ar_accumulate_split(float *accs, float c, float e, const uint16_t *v, int D)
{
    if (c != 1.0f) accumulate_split_row(accs, c, e, v, D, true);
    else accumulate_split_row(accs, c, e, v, D, false);
}

/* The chunk of srcs at layout position d divided by div, stored as its
 * n <= 32 natural elements. */
ALWAYS_INLINE void store_div_chunk(void *out, attnops_dtype out_dt, const float *srcs, int d, int n, float32x4_t vd)
{
    const float *p = srcs + d;
    const split_chunk q = {{vdivq_f32(vld1q_f32(p), vd), vdivq_f32(vld1q_f32(p + 4), vd),
                            vdivq_f32(vld1q_f32(p + 8), vd), vdivq_f32(vld1q_f32(p + 12), vd),
                            vdivq_f32(vld1q_f32(p + 16), vd), vdivq_f32(vld1q_f32(p + 20), vd),
                            vdivq_f32(vld1q_f32(p + 24), vd), vdivq_f32(vld1q_f32(p + 28), vd)}};
    store_split32(out, out_dt, d, n, &q);
}

static void ar_store_div_split(void *out, attnops_dtype out_dt, const float *srcs, float div, int D)
{
    const float32x4_t vd = vdupq_n_f32(div);
    int d = 0;
    for (; d + 32 <= D; d += 32) store_div_chunk(out, out_dt, srcs, d, 32, vd);
    if (d < D) store_div_chunk(out, out_dt, srcs, d, D - d, vd);
}

/* One vector of a gradient row: returns a g + b y + e x, and u + b x in *u. */
ALWAYS_INLINE float32x4_t grad4(float32x4_t g, float32x4_t y, float32x4_t x, float32x4_t *u, float32x4_t va,
                                float32x4_t vb, float32x4_t ve)
{
    float32x4_t r = vmulq_f32(g, va);
    r = vfmaq_f32(r, y, vb);
    *u = vfmaq_f32(*u, x, vb);
    return vfmaq_f32(r, x, ve);
}

/* Layout positions p .. p + 3 of the split gradient row: returns the
 * output, updates us. */
ALWAYS_INLINE float32x4_t grad_at(const float *gs, const float *ys, float *us, int p, float32x4_t x, float32x4_t va,
                                  float32x4_t vb, float32x4_t ve)
{
    float32x4_t u = vld1q_f32(us + p);
    const float32x4_t o = grad4(vld1q_f32(gs + p), vld1q_f32(ys + p), x, &u, va, vb, ve);
    vst1q_f32(us + p, u);
    return o;
}

/* The chunk at layout position d of the split gradient row from its input
 * chunk x, out's n <= 32 natural elements stored. */
ALWAYS_INLINE void grad_chunk(const split_chunk *x, int d, int n, const float *gs, const float *ys, float *us,
                              void *out, attnops_dtype out_dt, float32x4_t va, float32x4_t vb, float32x4_t ve)
{
    const split_chunk o = {{grad_at(gs, ys, us, d, x->q[0], va, vb, ve), grad_at(gs, ys, us, d + 4, x->q[1], va, vb, ve),
                            grad_at(gs, ys, us, d + 8, x->q[2], va, vb, ve),
                            grad_at(gs, ys, us, d + 12, x->q[3], va, vb, ve),
                            grad_at(gs, ys, us, d + 16, x->q[4], va, vb, ve),
                            grad_at(gs, ys, us, d + 20, x->q[5], va, vb, ve),
                            grad_at(gs, ys, us, d + 24, x->q[6], va, vb, ve),
                            grad_at(gs, ys, us, d + 28, x->q[7], va, vb, ve)}};
    store_split32(out, out_dt, d, n, &o);
}

ALWAYS_INLINE void grad_split_row(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                                  float b, float e, void *out, attnops_dtype out_dt, float *us)
{
    const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b), ve = vdupq_n_f32(e);
    int d = 0;
    for (; d + 32 <= D; d += 32) {
        const split_chunk x =
            dt == ATTNOPS_DTYPE_BF16 ? split32((const uint16_t *)v + d) : split32_f32((const float *)v + d);
        grad_chunk(&x, d, 32, gs, ys, us, out, out_dt, va, vb, ve);
    }
    if (d < D) {
        const size_t esize = dt == ATTNOPS_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float);
        const split_chunk x = split32_tail((const char *)v + (size_t)d * esize, dt, D - d);
        grad_chunk(&x, d, D - d, gs, ys, us, out, out_dt, va, vb, ve);
    }
}

/* `stream` writes with plain stores (the file-top comment says why). */
static void ar_grad_row_split(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                              float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    (void)stream;
    if (dt == ATTNOPS_DTYPE_BF16) grad_split_row(v, ATTNOPS_DTYPE_BF16, D, gs, ys, a, b, e, out, out_dt, us);
    else grad_split_row(v, ATTNOPS_DTYPE_F32, D, gs, ys, a, b, e, out, out_dt, us);
}

/* Elements d .. d + n - 1 (n <= 8) of ar_grad_row. */
ALWAYS_INLINE void grad8(const void *v, attnops_dtype dt, int d, int n, const float *g, const float *y, void *out,
                         attnops_dtype out_dt, float *u, float32x4_t va, float32x4_t vb, float32x4_t ve)
{
    const float32x4x2_t x = load8_dt(v, dt, d, n), gv = load8(g + d, n), yv = load8(y + d, n);
    const float32x4x2_t uv = load8(u + d, n);
    float32x4_t u0 = uv.val[0], u1 = uv.val[1]; /* separate: grad4 updating uv.val[h] in place kept uv in memory */
    const float32x4x2_t o = {{grad4(gv.val[0], yv.val[0], x.val[0], &u0, va, vb, ve),
                              grad4(gv.val[1], yv.val[1], x.val[1], &u1, va, vb, ve)}};
    store8_dt(out, out_dt, d, n, o);
    store8(u + d, n, (float32x4x2_t){{u0, u1}});
}

ALWAYS_INLINE void grad_row(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                            float e, void *out, attnops_dtype out_dt, float *u)
{
    const float32x4_t va = vdupq_n_f32(a), vb = vdupq_n_f32(b), ve = vdupq_n_f32(e);
    int d = 0;
    for (; d + 8 <= D; d += 8) grad8(v, dt, d, 8, g, y, out, out_dt, u, va, vb, ve);
    if (d < D) grad8(v, dt, d, D - d, g, y, out, out_dt, u, va, vb, ve);
}

/* `stream` writes with plain stores (the file-top comment says why). */
static void ar_grad_row(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                        float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    (void)stream;
    switch (dt) {
    case ATTNOPS_DTYPE_BF16: grad_row(v, ATTNOPS_DTYPE_BF16, D, g, y, a, b, e, out, out_dt, u); break;
    case ATTNOPS_DTYPE_F16: grad_row(v, ATTNOPS_DTYPE_F16, D, g, y, a, b, e, out, out_dt, u); break;
    default: grad_row(v, ATTNOPS_DTYPE_F32, D, g, y, a, b, e, out, out_dt, u); break;
    }
}

const cpu_kernel_set cpu_kernels_neon_rows = {
    .kp = {.group_pool = group_pool},
    .ar = {.ar_dots = ar_dots,
           .ar_dots_f64 = ar_dots_f64,
           .ar_accumulate = ar_accumulate,
           .ar_store_div = ar_store_div,
           .ar_dots_split = ar_dots_split,
           .ar_accumulate_split = ar_accumulate_split,
           .ar_store_div_split = ar_store_div_split,
           .ar_grad_row_split = ar_grad_row_split,
           .ar_grad_row = ar_grad_row},
};
