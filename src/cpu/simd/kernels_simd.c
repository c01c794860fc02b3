/* The inventories' element-wise and row kernels (kernels.h states each
 * contract; portable/kernels_portable.c is the plain-C statement of it),
 * written once on the vector vocabulary of simd.h and compiled once per ISA
 * with that ISA's header (ATTNOPS_SIMD_VOCABULARY) and flags
 * (CMakeLists.txt, attnops_simd_kernels).  Element-wise results are the same
 * bits on every ISA by construction; reductions keep each ISA's order,
 * which follows from VW and the vocabulary's reductions.  What differs in
 * its algorithm per ISA (the Philox lanes) stays in the ISA's folder.
 *
 * A step of VW elements takes the count n of those present (n < VW only in
 * a row's tail).  Row sums of 32 elements a step keep 32 / VW accumulators,
 * combined pairwise before the horizontal sum: every ISA sums element d
 * into partial d % 32. */
#include <math.h>
#include <string.h>

#include "cpu/kernels.h"

#include ATTNOPS_SIMD_VOCABULARY
#include "cpu/simd/simd.h"

#define K(name) SIMD_KERNEL(name)

enum { ROW_STEP = 32, ACCS = ROW_STEP / VW };

/* The loops over a step's VW-wide parts (a count fixed by VW) written out:
 * -O2 does not unroll them, and an array indexed in a loop lives in memory,
 * so the accumulators and the chunk went through the stack (AttnRes on
 * AVX2, 4 parts, ran 3.4 times slower). */
#define UNROLLED _Pragma("GCC unroll 8")
#define UNROLLED_VW _Pragma("GCC unroll 16") /* a loop over a step's VW lanes */

/* a[0] + a[1] + ... pairwise: ((a0 + a1) + (a2 + a3)) + ... */
SIMD_INLINE vf combine(const vf *a, int n)
{
    return n == 1 ? a[0] : v_add(combine(a, n / 2), combine(a + n / 2, n / 2));
}

SIMD_INLINE vd combine_d(const vd *a, int n)
{
    return n == 1 ? a[0] : vd_add(combine_d(a, n / 2), combine_d(a + n / 2, n / 2));
}

/* ---- FlashAttention ---- */

static void K(fa_softmax_fwd)(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l,
                              float *alpha)
{
    const vf vscale = v_set1(scale), ninf = v_set1(-INFINITY);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * cols;
        vf vmax = ninf;
        for (int c = 0; c < valid_cols; c += VW) {
            const int n = valid_cols - c;
            const vf x = v_mul(v_loadn(row + c, n), vscale);
            v_storen(row + c, n, x);
            vmax = v_max(vmax, n >= VW ? x : v_select(vm_tail(n), x, ninf));
        }
        float mx = v_hmax(vmax);
        if (m[r] > mx) mx = m[r];
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        const vf vm = v_set1(mx);
        /* one accumulator: exp's throughput bounds this loop, not the add's latency (a second one
         * spills a register and measured slower on AVX2) */
        vf sum = v_zero();
        for (int c = 0; c < cols; c += VW) {
            const vf e = v_maskz(vm_tail(valid_cols - c), v_exp(v_sub(v_loadn(row + c, cols - c), vm)));
            v_storen(row + c, cols - c, e);
            sum = v_add(sum, e);
        }
        l[r] = l[r] * alpha[r] + v_hsum(sum);
        m[r] = mx;
    }
}

static void K(fa_softmax_bwd)(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                              const float *l, const float *drow)
{
    const vf vscale = v_set1(scale);
    for (int r = 0; r < rows; r++) {
        float *ps = s + (size_t)r * cols, *pd = dp + (size_t)r * cols;
        const vf vm = v_set1(m[r]), vl = v_set1(l[r]), vd = v_set1(drow[r]);
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            const vf x = v_fms(v_loadn(ps + c, n), vscale, vm);
            const vf p = v_maskz(vm_tail(valid_cols - c), v_div(v_exp(x), vl));
            v_storen(ps + c, n, p);
            v_storen(pd + c, n, v_mul(p, v_sub(v_loadn(pd + c, n), vd)));
        }
    }
}

static void K(fa_to_bf16)(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni)
{
    if (!vnni) {
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c += VW)
                vh_storen(dst + (size_t)r * ld_dst + c, cols - c, v_bf16(v_loadn(src + (size_t)r * cols + c, cols - c)));
        return;
    }
    /* VNNI-2: rows r and r+1 interleave, one 32-bit pair per column. */
    for (int r = 0; r < rows; r += 2)
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            const float *lo = src + (size_t)r * cols + c, *hi = lo + cols;
            const vi pair = v_bf16_pairs(v_loadn(lo, n), v_loadn(hi, n));
            v_storen((float *)(dst + ((size_t)(r / 2) * ld_dst + c) * 2), n, v_from_bits(pair));
        }
}

static void K(fa_round_bf16)(float *x, int n)
{
    for (int i = 0; i < n; i += VW) v_storen(x + i, n - i, v_bf16_round(v_loadn(x + i, n - i)));
}

static void K(fa_scale_rows)(float *o, int rows, int cols, const float *alpha)
{
    for (int r = 0; r < rows; r++) {
        const vf a = v_set1(alpha[r]);
        float *row = o + (size_t)r * cols;
        for (int c = 0; c < cols; c += VW) v_storen(row + c, cols - c, v_mul(v_loadn(row + c, cols - c), a));
    }
}

/* A VW x VW block at a time: VW rows of src loaded (scaled), then log2(VW)
 * rounds of interleaving row k with row k + VW/2 (v_zip), which leaves row
 * k holding column k (the perfect-shuffle transpose); 2 VW log2(VW)
 * permutes a block where element-wise stores took VW^2. */
static void K(fa_transpose_scaled)(const float *src, int ld_src, int rows, int cols, float scale, float *dst,
                                    int ld_dst)
{
    const vf sc = v_set1(scale);
    for (int c0 = 0; c0 < cols; c0 += VW)
        for (int r0 = 0; r0 < rows; r0 += VW) {
            const int nc = cols - c0 < VW ? cols - c0 : VW, nr = rows - r0;
            vf a[VW], b[VW];
            UNROLLED_VW for (int k = 0; k < VW; k++)
                a[k] = k < nc ? v_mul(v_loadn(src + (size_t)(c0 + k) * ld_src + r0, nr), sc) : v_zero();
            UNROLLED for (int round = 1; round < VW; round *= 2) {
                UNROLLED for (int k = 0; k < VW / 2; k++) v_zip(a[k], a[k + VW / 2], &b[2 * k], &b[2 * k + 1]);
                UNROLLED_VW for (int k = 0; k < VW; k++) a[k] = b[k];
            }
            UNROLLED_VW for (int k = 0; k < VW; k++)
                if (k < nr) v_storen(dst + (size_t)(r0 + k) * ld_dst + c0, nc, a[k]);
        }
}

static void K(fa_f16_to_f32)(const uint16_t *src, int n, float *dst)
{
    for (int i = 0; i < n; i += VW) v_storen(dst + i, n - i, vh_f16_to_f32(vh_loadn(src + i, n - i)));
}

static void K(fa_f32_to_f16)(const float *src, int n, uint16_t *dst)
{
    for (int i = 0; i < n; i += VW) vh_storen(dst + i, n - i, v_f16(v_loadn(src + i, n - i)));
}

static void K(fa_add_bias)(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                           int64_t ld_b, bool add_then_scale)
{
    const vf vs = v_set1(scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            const vf x = v_loadn(row + c, n), y = v_load_dt(bias, dtype, r * ld_b + c, n);
            v_storen(row + c, n, add_then_scale ? v_mul(v_add(x, y), vs) : v_fma(x, vs, y));
        }
    }
}

static void K(fa_add_alibi)(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist)
{
    const vf vs = v_set1(scale), vslope = v_set1(-slope), iota = v_iota(), sign = v_set1(-0.0f);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            /* |d0 - r + c + lane| is an exact small integer in float */
            vf d = v_andnot(sign, v_add(v_set1(d0 - (float)r + (float)c), iota));
            if (sqrt_dist) d = v_sqrt(d);
            v_storen(row + c, n, v_fma(vslope, d, v_mul(v_loadn(row + c, n), vs)));
        }
    }
}

/* ao_f8_round_f32 on VW lanes: quantum = 2^(max(exponent, emin) - mantissa
 * bits) built from the exponent field, y = |x| / quantum (multiplying by the
 * exact power of two 1 / quantum), rounded to nearest even. */
static void K(fa_fp8_round)(float *x, int n, float scale, const ao_f8_format *f)
{
    const vi absmask = vi_set1(0x7fffffff), inf_bits = vi_set1(0x7f800000);
    const vi emin = vi_set1(f->emin + 127), man = vi_set1(f->man_bits), two_bias = vi_set1(254);
    const vf sc = v_set1(scale), max_finite = v_set1(f->max_finite), overflow = v_set1(f->overflow);
    for (int i = 0; i < n; i += VW) {
        const vf v = v_mul(v_loadn(x + i, n - i), sc);
        const vi u = v_bits(v), a = vi_and(u, absmask);
        const vi qexp = vi_sub(vi_max(vi_srli(a, 23), emin), man);
        const vf quantum = v_from_bits(vi_slli(qexp, 23));
        const vf inv = v_from_bits(vi_slli(vi_sub(two_bias, qexp), 23));
        vf r = v_mul(v_round_even(v_mul(v_from_bits(a), inv)), quantum);
        r = v_select(vm_gt(r, max_finite), overflow, r);
        r = v_select(vm_eq_i(a, inf_bits), overflow, r);     /* +-inf */
        r = v_select(vm_gt_i(a, inf_bits), v_from_bits(a), r); /* NaN (a, inf_bits >= 0 as signed) */
        v_storen(x + i, n - i, v_or(r, v_from_bits(vi_and(u, vi_set1((int32_t)0x80000000u)))));
    }
}

static float K(fa_abs_max)(const float *x, int n)
{
    const vf sign = v_set1(-0.0f);
    vf m = v_zero();
    for (int i = 0; i < n; i += VW) /* max(|x|, m): a NaN lane keeps m, as fmaxf ignores NaN */
        m = v_max(v_andnot(sign, v_loadn(x + i, n - i)), m);
    return v_hmax(m);
}

static void K(fa_scale2)(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    const vf va = v_set1(a), vb = v_set1(b);
    for (int i = 0; i < n; i += VW) {
        vf v = v_mul(v_mul(v_loadn(x + i, n - i), va), vb);
        if (accumulate) v = v_add(v_loadn(y + i, n - i), v);
        v_storen(y + i, n - i, v);
    }
}

static void K(fa_apply_keep)(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    const vf sc = v_set1(scale);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * (size_t)ld;
        const uint8_t *kr = keep + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            v_storen(row + c, n, v_mul(v_loadn(row + c, n), v_mul(v_load_u8n(kr + c, n), sc)));
        }
    }
}

static void K(fa_softcap)(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    const vf vin = v_set1(in_scale), vout = v_set1(out_scale);
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * (size_t)ld;
        float *drow = dtanh ? dtanh + (size_t)r * (size_t)ld : NULL;
        for (int c = 0; c < cols; c += VW) {
            const int n = cols - c;
            vf d;
            const vf t = v_tanh(v_mul(v_loadn(row + c, n), vin), &d);
            v_storen(row + c, n, v_mul(t, vout));
            if (drow) v_storen(drow + c, n, d);
        }
    }
}

static void K(fa_softcap_grad)(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++) {
        float *row = ds + (size_t)r * (size_t)ld;
        const float *drow = dtanh + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c += VW)
            v_storen(row + c, cols - c, v_mul(v_loadn(row + c, cols - c), v_loadn(drow + c, cols - c)));
    }
}

/* ---- KeyPool ---- */

static void K(kp_group_pool)(const float *const *key, const float *const *gate, const float *ape, int R, int D,
                             bool bf16, float *out)
{
    vf e[128];
    for (int d = 0; d < D; d += VW) {
        const int n = D - d;
        vf m = v_set1(-INFINITY), sum = v_zero(), acc = v_zero();
        for (int r = 0; r < R; r++) {
            e[r] = v_add(v_loadn(gate[r] + d, n), v_loadn(ape + (size_t)r * D + d, n));
            m = v_max(m, e[r]);
        }
        for (int r = 0; r < R; r++) sum = v_add(sum, e[r] = v_exp(v_sub(e[r], m)));
        for (int r = 0; r < R; r++) { /* mul then add: no contraction, as the contract states */
            const vf q = v_div(e[r], sum);
            const vf w = bf16 ? v_bf16_round(q) : vh_f16_to_f32(v_f32_to_f16_raw(q)); /* weights are finite */
            acc = v_add(acc, v_mul(w, v_loadn(key[r] + d, n)));
        }
        v_storen(out + d, n, acc);
    }
}

/* ---- Block Attention Residuals ---- */

/* The products of 16 floats a step widened to double (which holds them
 * exactly) into 2 * 16 / VW accumulators per sum, a partial step's VW into
 * the first two; one line of next per line of v prefetched into L2, so the
 * row after this one streams in while this one is summed. */
static void K(ar_dots_f64)(const float *v, int D, const float *x, const float *y, float *vx, float *vy,
                           const void *next)
{
    enum { STEP = 16, VECS = STEP / VW };
    const char *ahead = next;
    vd sx[2 * VECS], sy[2 * VECS];
    UNROLLED
    for (int i = 0; i < 2 * VECS; i++) sx[i] = sy[i] = vd_zero();
    int d = 0;
    for (; d + STEP <= D; d += STEP) {
        if (ahead) v_prefetch_l2(ahead + 4 * d);
        UNROLLED
        for (int j = 0; j < VECS; j++) {
            const vf a = v_load(v + d + j * VW), b = x ? v_load(x + d + j * VW) : a, c = v_load(y + d + j * VW);
            const vd a0 = vd_widen_lo(a), a1 = vd_widen_hi(a);
            sx[2 * j] = vd_fma(a0, vd_widen_lo(b), sx[2 * j]), sx[2 * j + 1] = vd_fma(a1, vd_widen_hi(b), sx[2 * j + 1]);
            sy[2 * j] = vd_fma(a0, vd_widen_lo(c), sy[2 * j]), sy[2 * j + 1] = vd_fma(a1, vd_widen_hi(c), sy[2 * j + 1]);
        }
    }
    for (; d < D; d += VW) {
        const int n = D - d;
        const vf a = v_loadn(v + d, n), b = x ? v_loadn(x + d, n) : a, c = v_loadn(y + d, n);
        const vd a0 = vd_widen_lo(a), a1 = vd_widen_hi(a);
        sx[0] = vd_fma(a0, vd_widen_lo(b), sx[0]), sx[1] = vd_fma(a1, vd_widen_hi(b), sx[1]);
        sy[0] = vd_fma(a0, vd_widen_lo(c), sy[0]), sy[1] = vd_fma(a1, vd_widen_hi(c), sy[1]);
    }
    *vx = (float)vd_hsum(combine_d(sx, 2 * VECS));
    *vy = (float)vd_hsum(combine_d(sy, 2 * VECS));
}

/* 32 elements a step, one line of next per line of v prefetched into L2. */
static void K(ar_dots)(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                       const void *next)
{
    const char *ahead = next;
    const int64_t esize = (int64_t)attnops_dtype_size(dt);
    vf sx[ACCS], sy[ACCS];
    UNROLLED
    for (int i = 0; i < ACCS; i++) sx[i] = sy[i] = v_zero();
    int d = 0;
    for (; d + ROW_STEP <= D; d += ROW_STEP) {
        if (ahead) {
            v_prefetch_l2(ahead + d * esize);
            if (esize == 4) v_prefetch_l2(ahead + d * esize + 64);
        }
        UNROLLED
        for (int j = 0; j < ACCS; j++) {
            const vf a = v_load_dt(v, dt, d + j * VW, VW);
            sx[j] = v_fma(a, x ? v_load(x + d + j * VW) : a, sx[j]);
            sy[j] = v_fma(a, v_load(y + d + j * VW), sy[j]);
        }
    }
    for (; d < D; d += VW) {
        const int n = D - d;
        const vf a = v_load_dt(v, dt, d, n);
        sx[0] = v_fma(a, x ? v_loadn(x + d, n) : a, sx[0]);
        sy[0] = v_fma(a, v_loadn(y + d, n), sy[0]);
    }
    *vx = v_hsum(combine(sx, ACCS));
    *vy = v_hsum(combine(sy, ACCS));
}

static void K(ar_accumulate)(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    const vf vc = v_set1(c), ve = v_set1(e);
    for (int d = 0; d < D; d += VW) {
        const int n = D - d;
        vf a = v_loadn(acc + d, n);
        if (c != 1.0f) a = v_mul(a, vc); /* c = 1: a * 1 = a exactly */
        v_storen(acc + d, n, v_fma(v_load_dt(v, dt, d, n), ve, a));
    }
}

static void K(ar_store_div)(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    const vf vd = v_set1(div);
    for (int d = 0; d < D; d += VW) v_store_dt(out, out_dt, d, D - d, v_div(v_loadn(src + d, D - d), vd));
}

/* The pair-split chunk of 32 elements from element d: q[k] = layout
 * positions d + VW k .. d + VW k + VW - 1, so q[0 .. ACCS/2) hold the even
 * elements of the chunk's 16-element halves and q[ACCS/2 ..) their odd ones. */
typedef struct split_chunk {
    vf q[ACCS];
} split_chunk;

enum { HALF = ACCS / 2 }; /* VW pairs per 16-bit vector: the chunk is HALF of them */

/* The chunk of 32 bf16 from element d (a tail of D - d < 32 zero-filled). */
SIMD_INLINE split_chunk split32(const uint16_t *v, int d, int D)
{
    split_chunk c;
    UNROLLED
    for (int j = 0; j < HALF; j++) {
        const vi raw = vp_loadn(v + d + 2 * VW * j, D - d - 2 * VW * j);
        c.q[j] = vp_bf16_even(raw), c.q[HALF + j] = vp_bf16_odd(raw);
    }
    return c;
}

/* The same chunk of natural f32 src. */
SIMD_INLINE split_chunk split32_f32(const float *src, int d, int D)
{
    split_chunk c;
    UNROLLED
    for (int j = 0; j < HALF; j++) {
        const int at = d + 2 * VW * j, t = D - at;
        const vf a = t > 0 ? v_loadn(src + at, t) : v_zero(), b = t > VW ? v_loadn(src + at + VW, t - VW) : v_zero();
        v_unzip(a, b, &c.q[j], &c.q[HALF + j]);
    }
    return c;
}

/* Elements d .. d + t - 1 (t <= 32) of chunk c, in natural order: bf16
 * (streamed when asked and whole) or f32. */
SIMD_INLINE void store_split32(void *out, attnops_dtype out_dt, int d, int t, split_chunk c, bool stream)
{
    UNROLLED
    for (int j = 0; j < HALF; j++) {
        const int at = 2 * VW * j;
        if (out_dt == ATTNOPS_DTYPE_BF16) {
            uint16_t *o = (uint16_t *)out + d + at;
            const vi pairs = v_bf16_pairs(c.q[j], c.q[HALF + j]);
            if (t == ROW_STEP && stream) vp_stream(o, pairs);
            else if (t > at) vp_storen(o, t - at, pairs);
            continue;
        }
        float *o = (float *)out + d + at;
        vf lo, hi;
        v_zip(c.q[j], c.q[HALF + j], &lo, &hi);
        if (t > at) v_storen(o, t - at, lo);
        if (t > at + VW) v_storen(o + VW, t - at - VW, hi);
    }
}

/* A chunk a step into ACCS accumulators per sum, one line of next
 * prefetched into L2 per line of v. */
static void K(ar_dots_split)(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                             const void *next)
{
    vf sx[ACCS], sy[ACCS];
    UNROLLED
    for (int i = 0; i < ACCS; i++) sx[i] = sy[i] = v_zero();
    for (int d = 0; d < D; d += ROW_STEP) {
        const split_chunk c = split32(v, d, D);
        if (next) v_prefetch_l2((const char *)next + 2 * d);
        UNROLLED
        for (int j = 0; j < ACCS; j++) {
            sx[j] = v_fma(c.q[j], xs ? v_load(xs + d + j * VW) : c.q[j], sx[j]);
            sy[j] = v_fma(c.q[j], v_load(ys + d + j * VW), sy[j]);
        }
    }
    *vx = v_hsum(combine(sx, ACCS));
    *vy = v_hsum(combine(sy, ACCS));
}

static void K(ar_accumulate_split)(float *accs, float c, float e, const uint16_t *v, int D)
{
    const vf vc = v_set1(c), ve = v_set1(e);
    for (int d = 0; d < D; d += ROW_STEP) {
        const split_chunk x = split32(v, d, D);
        UNROLLED
        for (int j = 0; j < ACCS; j++) {
            float *p = accs + d + j * VW;
            vf a = v_load(p);
            if (c != 1.0f) a = v_mul(a, vc); /* c = 1: a * 1 = a exactly */
            v_store(p, v_fma(x.q[j], ve, a));
        }
    }
}

static void K(ar_store_div_split)(void *out, attnops_dtype out_dt, const float *srcs, float div, int D)
{
    const vf vd = v_set1(div);
    for (int d = 0; d < D; d += ROW_STEP) {
        split_chunk c;
        UNROLLED
        for (int j = 0; j < ACCS; j++) c.q[j] = v_div(v_load(srcs + d + j * VW), vd);
        store_split32(out, out_dt, d, D - d < ROW_STEP ? D - d : ROW_STEP, c, false);
    }
}

static void K(ar_grad_row_split)(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                                 float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & (sizeof(vi) - 1)) == 0;
    const vf va = v_set1(a), vb = v_set1(b), ve = v_set1(e);
    for (int d = 0; d < D; d += ROW_STEP) {
        const split_chunk x = dt == ATTNOPS_DTYPE_BF16 ? split32(v, d, D) : split32_f32(v, d, D);
        split_chunk o;
        UNROLLED
        for (int j = 0; j < ACCS; j++) { /* a g + b y + e x; u += b x */
            const int at = d + j * VW;
            vf r = v_mul(v_load(gs + at), va);
            r = v_fma(v_load(ys + at), vb, r);
            v_store(us + at, v_fma(x.q[j], vb, v_load(us + at)));
            o.q[j] = v_fma(x.q[j], ve, r);
        }
        store_split32(out, out_dt, d, D - d < ROW_STEP ? D - d : ROW_STEP, o, stream);
    }
    if (stream) v_stream_fence();
}

static void K(ar_grad_row)(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                           float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    /* the common large case: bf16 rows on vector boundaries, written whole without reading them first */
    stream = stream && out_dt == ATTNOPS_DTYPE_BF16 && ((uintptr_t)out & (sizeof(vh) - 1)) == 0;
    const vf va = v_set1(a), vb = v_set1(b), ve = v_set1(e);
    for (int d = 0; d < D; d += VW) {
        const int n = D - d;
        const vf x = v_load_dt(v, dt, d, n);
        vf r = v_mul(v_loadn(g + d, n), va);
        r = v_fma(v_loadn(y + d, n), vb, r);
        const vf o = v_fma(x, ve, r);
        if (stream && n >= VW) vh_stream((uint16_t *)out + d, v_bf16(o));
        else v_store_dt(out, out_dt, d, n, o);
        v_storen(u + d, n, v_fma(x, vb, v_loadn(u + d, n)));
    }
    if (stream) v_stream_fence();
}


/* ---- FusedInferAttentionScore: a few query rows against rows read in place ---- */

/* Query rows per register block: FIA_ROWS x DOT_KEYS key accumulators
 * (dot_rows) or FIA_ROWS x AXPY_STEPS output accumulators (axpy_rows) stay
 * in registers on every ISA (AVX2 has 16: 12 accumulators and 3 keys). */
enum { FIA_ROWS = 4, AXPY_STEPS = VW >= 16 ? 4 : 2, DOT_KEYS = VW >= 16 ? 4 : 3 };
_Static_assert(FIA_ROWS == 4, "dot_block reduces its rows four at a time (v_hsum4)");

/* Elements d .. d + n (n <= VW) of a key or value row, widened exactly. */
SIMD_INLINE vf kv_load(const void *row, attnops_dtype dt, int d, int n)
{
    if (dt == ATTNOPS_DTYPE_I8) return v_load_i8n((const int8_t *)row + d, n);
    return v_load_dt(row, dt, d, n);
}

/* One step of dot_block: elements d .. d + n of DOT_KEYS keys against R
 * rows (n constant VW in the loop over whole steps, so the widening's tail
 * test folds away; the last partial step passes its own n). */
SIMD_INLINE void dot_step(const float *q, int R, int ld_q, const void *const *keys, int NK, attnops_dtype dt, int d,
                          int n, vf a[DOT_KEYS][FIA_ROWS])
{
    vf x[DOT_KEYS];
    UNROLLED for (int j = 0; j < NK; j++) x[j] = kv_load(keys[j], dt, d, n);
    UNROLLED for (int r = 0; r < R; r++) {
        const vf qr = v_loadn(q + (size_t)r * ld_q + d, n);
        UNROLLED for (int j = 0; j < NK; j++) a[j][r] = v_fma(qr, x[j], a[j][r]);
    }
}

/* R (constant) rows against NK (constant) keys from key c: R NK
 * independent FMA chains, each key's sums reduced four rows at a time (a
 * reduction costs as much as the products of a 128-wide row); the keys'
 * `ahead` rows asked for. */
SIMD_INLINE void dot_keys(const float *q, int R, int ld_q, const void *const *k, int c, int NK, attnops_dtype dt, int D,
                          float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes)
{
    const int whole = D / VW * VW;
    const void *const *keys = k + c;
    UNROLLED for (int j = 0; ahead && j < NK; j++) fia_prefetch_row(ahead[c + j], ahead_bytes);
    vf a[DOT_KEYS][FIA_ROWS];
    UNROLLED for (int j = 0; j < DOT_KEYS; j++)
        UNROLLED for (int r = 0; r < FIA_ROWS; r++) a[j][r] = v_zero();
    for (int d = 0; d < whole; d += VW) dot_step(q, R, ld_q, keys, NK, dt, d, VW, a);
    if (whole < D) dot_step(q, R, ld_q, keys, NK, dt, whole, D - whole, a);
    UNROLLED for (int j = 0; j < NK; j++) {
        float sum[FIA_ROWS];
        v_hsum4(a[j][0], a[j][1], a[j][2], a[j][3], sum);
        UNROLLED for (int r = 0; r < R; r++) {
            float *out = s + (size_t)r * ld_s + c + j;
            *out = accumulate ? *out + sum[r] : sum[r];
        }
    }
}

/* R (constant) rows against DOT_KEYS keys at a time, then the few left:
 * more independent chains than 2 keys' 8 keep the FMA units busy (a chain's
 * latency is 4 cycles, 2 FMAs a cycle on Zen 4; in L1, 2 keys took ~46
 * cycles a key on AVX2 and ~49 on AVX-512, 4 keys on AVX-512 43). */
SIMD_INLINE void dot_block(const float *q, int R, int ld_q, const void *const *k, attnops_dtype dt, int D, int cols,
                           float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes)
{
    int c = 0;
    for (; c + DOT_KEYS <= cols; c += DOT_KEYS)
        dot_keys(q, R, ld_q, k, c, DOT_KEYS, dt, D, s, ld_s, accumulate, ahead, ahead_bytes);
    _Static_assert(DOT_KEYS <= 4, "the keys left are 1 to 3");
    switch (cols - c) {
    case 1: dot_keys(q, R, ld_q, k, c, 1, dt, D, s, ld_s, accumulate, ahead, ahead_bytes); break;
    case 2: dot_keys(q, R, ld_q, k, c, 2, dt, D, s, ld_s, accumulate, ahead, ahead_bytes); break;
    case 3: dot_keys(q, R, ld_q, k, c, 3, dt, D, s, ld_s, accumulate, ahead, ahead_bytes); break;
    default: break;
    }
}

/* The first block of rows asks for the `ahead` rows. */
SIMD_INLINE void dot_rows_dt(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt, int D,
                             int cols, float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes)
{
    for (int r0 = 0; r0 < rows; r0 += FIA_ROWS, ahead = NULL) {
        const float *qb = q + (size_t)r0 * ld_q;
        float *sb = s + (size_t)r0 * ld_s;
        switch (rows - r0) {
        case 1: dot_block(qb, 1, ld_q, k, dt, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        case 2: dot_block(qb, 2, ld_q, k, dt, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        case 3: dot_block(qb, 3, ld_q, k, dt, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes); break;
        default: dot_block(qb, FIA_ROWS, ld_q, k, dt, D, cols, sb, ld_s, accumulate, ahead, ahead_bytes);
        }
    }
}

static void K(fia_dot_rows)(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt, int D,
                            int cols, float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes)
{
    switch (dt) { /* one copy of the loops per dtype: the widening is chosen outside them */
    case ATTNOPS_DTYPE_F32:
        dot_rows_dt(q, rows, ld_q, k, ATTNOPS_DTYPE_F32, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
        break;
    case ATTNOPS_DTYPE_F16:
        dot_rows_dt(q, rows, ld_q, k, ATTNOPS_DTYPE_F16, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
        break;
    case ATTNOPS_DTYPE_BF16:
        dot_rows_dt(q, rows, ld_q, k, ATTNOPS_DTYPE_BF16, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
        break;
    default: dot_rows_dt(q, rows, ld_q, k, ATTNOPS_DTYPE_I8, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
    }
}

/* Every value row of the tile into R rows x S (constant, <= AXPY_STEPS)
 * steps of the output from column d0 (n: the columns left, constant where a
 * whole pass fits, so the widening's tail tests fold away), asking for the
 * `ahead` rows. */
SIMD_INLINE void axpy_pass(const float *p, int R, int ld_p, const void *const *v, attnops_dtype dt, int cols, int d0,
                           int n, int S, vf acc[FIA_ROWS][AXPY_STEPS], const void *const *ahead, int ahead_bytes)
{
    for (int c = 0; c < cols; c++) {
        if (ahead) fia_prefetch_row(ahead[c], ahead_bytes);
        vf x[AXPY_STEPS];
        UNROLLED for (int t = 0; t < S; t++) x[t] = kv_load(v[c], dt, d0 + t * VW, n - t * VW);
        UNROLLED for (int r = 0; r < R; r++) {
            const vf w = v_set1(p[(size_t)r * ld_p + c]);
            UNROLLED for (int t = 0; t < S; t++) acc[r][t] = v_fma(w, x[t], acc[r][t]);
        }
    }
}

/* Columns d0 .. d0 + n of R rows: S (constant) steps in registers while
 * every value row of the tile goes by. */
SIMD_INLINE void axpy_steps(const float *p, int R, int ld_p, const void *const *v, attnops_dtype dt, int cols, int d0,
                            int n, int S, float *o, int ld_o, const void *const *ahead, int ahead_bytes)
{
    vf acc[FIA_ROWS][AXPY_STEPS];
    UNROLLED for (int r = 0; r < R; r++)
        UNROLLED for (int t = 0; t < S; t++) acc[r][t] = v_loadn(o + (size_t)r * ld_o + d0 + t * VW, n - t * VW);
    axpy_pass(p, R, ld_p, v, dt, cols, d0, n, S, acc, ahead, ahead_bytes);
    UNROLLED for (int r = 0; r < R; r++)
        UNROLLED for (int t = 0; t < S; t++) v_storen(o + (size_t)r * ld_o + d0 + t * VW, n - t * VW, acc[r][t]);
}

/* R (constant) rows, AXPY_STEPS steps of the output at a time; the tile's
 * rows stay in L1/L2 for the next steps.  The last pass takes only the
 * steps it has columns for (a D of 16 is one step, not AXPY_STEPS of which
 * the rest are masked off); each element's sum is the same, in key order. */
SIMD_INLINE void axpy_block(const float *p, int R, int ld_p, const void *const *v, attnops_dtype dt, int D, int cols,
                            float *o, int ld_o, const void *const *ahead, int ahead_bytes)
{
    int d0 = 0;
    for (; d0 + AXPY_STEPS * VW <= D; d0 += AXPY_STEPS * VW, ahead = NULL) /* the first pass asks for them */
        axpy_steps(p, R, ld_p, v, dt, cols, d0, AXPY_STEPS * VW, AXPY_STEPS, o, ld_o, ahead, ahead_bytes);
    const int n = D - d0, steps = (n + VW - 1) / VW; /* 0 to AXPY_STEPS; 2 and 3 on AVX-512 only */
    if (steps == AXPY_STEPS) axpy_steps(p, R, ld_p, v, dt, cols, d0, n, AXPY_STEPS, o, ld_o, ahead, ahead_bytes);
    else if (steps == 1) axpy_steps(p, R, ld_p, v, dt, cols, d0, n, 1, o, ld_o, ahead, ahead_bytes);
    else if (AXPY_STEPS == 4 && steps == 2) axpy_steps(p, R, ld_p, v, dt, cols, d0, n, 2, o, ld_o, ahead, ahead_bytes);
    else if (AXPY_STEPS == 4 && steps == 3) axpy_steps(p, R, ld_p, v, dt, cols, d0, n, 3, o, ld_o, ahead, ahead_bytes);
}

SIMD_INLINE void axpy_rows_dt(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt, int D,
                              int cols, float *o, int ld_o, const void *const *ahead, int ahead_bytes)
{
    for (int r0 = 0; r0 < rows; r0 += FIA_ROWS, ahead = NULL) {
        const float *pb = p + (size_t)r0 * ld_p;
        float *ob = o + (size_t)r0 * ld_o;
        switch (rows - r0) {
        case 1: axpy_block(pb, 1, ld_p, v, dt, D, cols, ob, ld_o, ahead, ahead_bytes); break;
        case 2: axpy_block(pb, 2, ld_p, v, dt, D, cols, ob, ld_o, ahead, ahead_bytes); break;
        case 3: axpy_block(pb, 3, ld_p, v, dt, D, cols, ob, ld_o, ahead, ahead_bytes); break;
        default: axpy_block(pb, FIA_ROWS, ld_p, v, dt, D, cols, ob, ld_o, ahead, ahead_bytes);
        }
    }
}

static void K(fia_axpy_rows)(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt, int D,
                             int cols, float *o, int ld_o, bool p_bf16, const void *const *ahead, int ahead_bytes)
{
    (void)p_bf16; /* p as it is: f32 FMAs */
    switch (dt) {
    case ATTNOPS_DTYPE_F32:
        axpy_rows_dt(p, rows, ld_p, v, ATTNOPS_DTYPE_F32, D, cols, o, ld_o, ahead, ahead_bytes);
        break;
    case ATTNOPS_DTYPE_F16:
        axpy_rows_dt(p, rows, ld_p, v, ATTNOPS_DTYPE_F16, D, cols, o, ld_o, ahead, ahead_bytes);
        break;
    case ATTNOPS_DTYPE_BF16:
        axpy_rows_dt(p, rows, ld_p, v, ATTNOPS_DTYPE_BF16, D, cols, o, ld_o, ahead, ahead_bytes);
        break;
    default: axpy_rows_dt(p, rows, ld_p, v, ATTNOPS_DTYPE_I8, D, cols, o, ld_o, ahead, ahead_bytes);
    }
}

/* ---- The FLOP ceiling ---- */

static float K(peak_fma_chains)(long iters, double *flops)
{
    const vf b = v_set1(PEAK_B), c = v_set1(PEAK_C);
    vf a[PEAK_CHAINS];
    _Pragma("GCC unroll 12") for (int j = 0; j < PEAK_CHAINS; j++) a[j] = v_set1(PEAK_START(j));
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 12") for (int j = 0; j < PEAK_CHAINS; j++) a[j] = v_fma(a[j], b, c);
    }
    *flops = 2.0 * PEAK_CHAINS * VW * (double)iters;
    _Pragma("GCC unroll 6") for (int j = 0; j < PEAK_CHAINS / 2; j++) a[j] = v_add(a[2 * j], a[2 * j + 1]);
    _Pragma("GCC unroll 3") for (int j = 0; j < PEAK_CHAINS / 4; j++) a[j] = v_add(a[2 * j], a[2 * j + 1]);
    return v_hsum(v_add(v_add(a[0], a[1]), a[2]));
}
_Static_assert(PEAK_CHAINS == 12, "fma_chains sums its chains as 12 -> 6 -> 3 -> 1");

/* src/ref/ref_block.c, built with this ISA's flags next to this file */
GOLDEN_KERNELS_DECLARE(ATTNOPS_KERNEL_ISA)

/* Everything but the Philox kernels, whose lanes each ISA lays out its own way. */
const cpu_kernel_set K(cpu_kernels_simd) = {
    .fa = {.softmax_fwd = K(fa_softmax_fwd), .softmax_bwd = K(fa_softmax_bwd), .to_bf16 = K(fa_to_bf16),
           .round_bf16 = K(fa_round_bf16), .f16_to_f32 = K(fa_f16_to_f32), .f32_to_f16 = K(fa_f32_to_f16),
           .scale_rows = K(fa_scale_rows),
           .transpose_scaled = K(fa_transpose_scaled), .add_bias = K(fa_add_bias), .add_alibi = K(fa_add_alibi),
           .fp8_round = K(fa_fp8_round), .abs_max = K(fa_abs_max), .scale2 = K(fa_scale2),
           .apply_keep = K(fa_apply_keep), .softcap = K(fa_softcap), .softcap_grad = K(fa_softcap_grad)},
    .kp = {.group_pool = K(kp_group_pool)},
    .ar = {.dots = K(ar_dots), .dots_f64 = K(ar_dots_f64), .accumulate = K(ar_accumulate),
           .store_div = K(ar_store_div), .dots_split = K(ar_dots_split),
           .accumulate_split = K(ar_accumulate_split), .store_div_split = K(ar_store_div_split),
           .grad_row_split = K(ar_grad_row_split), .grad_row = K(ar_grad_row)},
    .fia = {.dot_rows = K(fia_dot_rows), .axpy_rows = K(fia_axpy_rows)},
    .peak = {.fma_chains = K(peak_fma_chains)},
    .golden = {.ref_dot = K(golden_ref_dot), .ref_dot_block = K(golden_ref_dot_block),
               .ref_gemm_acc = K(golden_ref_gemm_acc)},
};
