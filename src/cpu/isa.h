/* Run-time selection of the instruction set the fast kernels use.
 * Decided once per process: CPUID, overridable with ATTNOPS_ISA=portable
 * (or =avx512 to insist; refused silently when the CPU lacks it). */
#ifndef ATTNOPS_CPU_ISA_H
#define ATTNOPS_CPU_ISA_H

#include <stdbool.h>
#include <stdint.h>

#include "attnops.h"
#include "core/philox.h"
#include "fa/fa_fp8.h"

typedef enum cpu_isa { CPU_ISA_PORTABLE = 0, CPU_ISA_AVX512 = 1 } cpu_isa;

cpu_isa cpu_isa_get(void);

/* Element-wise tile kernels.  Tiles are row-major fp32 [rows][cols] with
 * leading dimension `cols`; columns >= valid_cols are padding (keys past
 * S2) and are treated as absent. */
typedef struct fa_tile_kernels {
    /* Online-softmax step of the forward.  In: s = raw scores q.k.  Out: s =
     * exp(scale*s - m_new) (0 in padding), m/l updated, alpha[r] =
     * exp(m_old - m_new) (the factor the running output must be scaled by). */
    void (*softmax_fwd)(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l,
                        float *alpha);
    /* Backward recomputation.  In: s = raw scores, dp = dy.v.  Out: s = P =
     * exp(scale*s - m) / l, dp = dS = P * (dp - drow) (both 0 in padding). */
    void (*softmax_bwd)(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                        const float *l, const float *drow);
    /* dst = bf16(src) (round to nearest even), row-major with leading
     * dimension ld_dst, or with `vnni` in VNNI-2 form: element (r, c) at
     * ((r/2)*ld_dst + c)*2 + r%2 (rows even). */
    void (*to_bf16)(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni);
    /* o[r][0..cols) *= alpha[r]. */
    void (*scale_rows)(float *o, int rows, int cols, const float *alpha);
    /* Scores from raw q.k with an external bias of dtype f32, f16 or bf16
     * (contiguous rows): s = (s + bias) * scale when add_then_scale
     * (pse_type 1), else s * scale + bias.  Row strides ld_s, ld_b in
     * elements (ld_b = 0: one bias row for every row). */
    void (*add_bias)(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale);
    /* Scores with the generated ALiBi: s = s * scale - slope * g(|d0 - r + c|),
     * g = sqrt when sqrt_dist (pse_type 3), identity otherwise. */
    void (*add_alibi)(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist);
    /* Dropout stream elements [first, first + count): ao_philox_bytes, bit
     * for bit (the AVX-512 form runs 16 Philox blocks at once). */
    void (*philox_bytes)(const ao_philox *g, uint64_t first, size_t count, uint8_t *out);
    /* Blocks blocks[0..n) (n <= 16, any indices) into out[16 * i]: the tile
     * form, which gathers the few blocks of many rows into one pass. */
    void (*philox_blocks)(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out);
    /* FP8 (spec 6): x[i] = f8(x[i] * scale) as a float, rounded to nearest
     * even, bit for bit fa_fp8_round_f32 of the float product. */
    void (*fp8_round)(float *x, int n, float scale, const fa_fp8_format *f);
    /* max |x[i]| over n values (0 for n = 0; NaNs, quiet or signalling, are ignored). */
    float (*abs_max)(const float *x, int n);
    /* y[i] = x[i] * a * b (in that order), plus y[i] first when accumulate;
     * y may be x.  The FP8 block scales applied around its GEMMs. */
    void (*scale2)(float *y, const float *x, int n, float a, float b, bool accumulate);
    /* Dropout: x[r][c] *= (float)keep[r][c] * scale (keep bytes 0/1) over
     * rows x cols of tiles whose rows are ld apart (x and keep alike). */
    void (*apply_keep)(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale);
    /* KeyPool, one group of R rows (key[r], gate[r]: D floats, unit stride;
     * ape [R][D]): per channel d, w_r = softmax_r(gate[r][d] + ape[r][d]) in
     * f32 (max subtracted, e_r / sum), rounded to bf16 (f16 when !bf16);
     * out[d] = sum_r w_r key[r][d] in f32, r in order, no FMA contraction. */
    void (*group_pool)(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out);
    /* Block Attention Residuals (src/cpu/ar_cpu.c), on rows of D elements
     * with unit stride, of dtype f32, f16 or bf16 where a dtype is given;
     * f32 arithmetic.  Reductions: every ISA sums in f32 in its own order,
     * except ar_dots_f64.
     * ar_dots: *vx = sum_d v[d] x[d] (x NULL: sum_d v[d]^2), *vy = sum_d v[d] y[d];
     * next (may be NULL): the row of the same size the caller reads next,
     * prefetched into L2 while v is summed. */
    void (*ar_dots)(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                    const void *next);
    /* ar_dots of f32 activations: the exact products summed in double, each
     * result rounded to f32 once.  z = scale V.w feeds exp, so an f32 sum's
     * error, which grows with D, becomes a relative error of every alpha and,
     * where h = sum alpha V cancels, a large one of h (docs/ATTNRES.md). */
    void (*ar_dots_f64)(const float *v, int D, const float *x, const float *y, float *vx, float *vy,
                        const void *next);
    /* acc[d] = c acc[d] + e v[d]: the forward's online-softmax accumulation
     * (c = 1, the common case, costs no multiplication by c). */
    void (*ar_accumulate)(float *acc, float c, float e, const void *v, attnops_dtype dt, int D);
    /* out[d] = src[d] / div, rounded to out_dt (nearest even). */
    void (*ar_store_div)(void *out, attnops_dtype out_dt, const float *src, float div, int D);
    /* The bf16 forms, with the f32 rows (xs, ys, accs, srcs, gs, us) in the
     * pair-split layout (AR_SPLIT below), which widens 32 bf16 with one shift
     * and one and; sums in layout order, padding included:
     * ar_dots_split: *vx = sum v xs (xs NULL: sum v^2), *vy = sum v ys;
     * ar_accumulate_split: accs = c accs + e split(v);
     * ar_store_div_split: out[d] = srcs[AR_SPLIT(d)] / div, out_dt bf16 or f32;
     * ar_grad_row_split: ar_grad_row on v of dtype bf16 or f32 (both in natural
     * order), gs, ys and us split, out natural (bf16 or f32). */
    void (*ar_dots_split)(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                          const void *next);
    void (*ar_accumulate_split)(float *accs, float c, float e, const uint16_t *v, int D);
    void (*ar_store_div_split)(void *out, attnops_dtype out_dt, const float *srcs, float div, int D);
    void (*ar_grad_row_split)(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                              float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream);
    /* The backward's row update: out[d] = a g[d] + b y[d] + e v[d], rounded
     * to out_dt; u[d] += b v[d].  stream: out will not be read soon (a call
     * whose outputs exceed the caches), so an ISA that has non-temporal
     * stores writes it without first reading its lines (fenced before
     * returning). */
    void (*ar_grad_row)(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                        float e, void *out, attnops_dtype out_dt, float *u, bool stream);
} fa_tile_kernels;

/* The pair-split layout of a row of D elements, AR_SPLIT_LEN(D) floats:
 * each chunk of 32 holds its even elements, then its odd ones (a bf16 pair
 * is one 32-bit lane: its low half shifted up is the even element, its
 * high half masked the odd one); positions past D hold 0. */
#define AR_SPLIT_LEN(D) (((D) + 31) / 32 * 32)
#define AR_SPLIT(d) (((d) & ~31) + (((d) & 1) << 4) + (((d) & 31) >> 1))

const fa_tile_kernels *fa_tile_kernels_get(void);

extern const fa_tile_kernels fa_tile_kernels_portable;
extern const fa_tile_kernels fa_tile_kernels_avx512;

#endif
