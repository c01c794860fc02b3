/* The kernel inventories: one table of element-wise and row kernels per
 * operator (FlashAttention, KeyPool, AttnRes, FusedInferAttentionScore), the
 * only way the drivers reach ISA-specific code.
 *
 * The kernels are written once on a vector vocabulary (src/cpu/simd/:
 * kernels_simd.c compiled per ISA with its header, symbols op_name__isa) where
 * the ISA has one; what an ISA does its own way (Philox lanes: src/cpu/avx2,
 * src/cpu/avx512) and src/cpu/portable, src/cpu/neon define cpu_kernel_sets
 * with designated initializers, one per file, naming only the kernels they
 * have.  isa.c fills the table of every
 * ISA the CPU supports the way BLIS configures its reference kernels first:
 * the portable set (complete), then each ISA in order overriding what it
 * defines, so an ISA inherits whatever it leaves out from the ISA before it.  The *_KERNEL_NAMES lists name every
 * member once; isa.c merges with them and tests/test_kernel_inventory.c
 * walks them, so a kernel added here is merged and must be tested.
 *
 * Tiles are row-major fp32 [rows][cols] with leading dimension `cols` unless
 * an argument says otherwise; columns >= valid_cols are padding (keys past
 * S2) and are treated as absent. */
#ifndef ATTNOPS_CPU_KERNELS_H
#define ATTNOPS_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnops.h"
#include "core/f8_format.h"
#include "core/philox.h"

/* ---- FlashAttention (src/cpu/fa_fwd.c, fa_bwd.c, fa_scores.c, pack.c) ---- */
typedef struct fa_kernels {
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
    /* x[i] = bf16(x[i]) widened back to f32 (nearest even, bit for bit
     * to_bf16): P and dS rounded as the bf16 GEMMs take them, for bf16
     * inputs run through fp32 GEMMs (a CPU whose libxsmm has no bf16 kernel). */
    void (*round_bf16)(float *x, int n);
    /* The packers' f16 conversions of contiguous rows, bit for bit
     * attnops_f16_to_f32 (exact; a NaN quietened) and attnops_f32_to_f16
     * (nearest even; a NaN to the sign and 0x7E00). */
    void (*f16_to_f32)(const uint16_t *src, int n, float *dst);
    void (*f32_to_f16)(const float *src, int n, uint16_t *dst);
    /* o[r][0..cols) *= alpha[r]. */
    void (*scale_rows)(float *o, int rows, int cols, const float *alpha);
    /* dst[r][c] = scale * src[c][r] for r < rows, c < cols (src rows ld_src
     * apart, dst rows ld_dst apart; nothing else written): a tile GEMM's
     * S^T turned into S as it is scaled (the FIA prompt blocks). */
    void (*transpose_scaled)(const float *src, int ld_src, int rows, int cols, float scale, float *dst, int ld_dst);
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
     * for bit (the vector forms run 8 or 16 Philox blocks at once). */
    void (*philox_bytes)(const ao_philox *g, uint64_t first, size_t count, uint8_t *out);
    /* Blocks blocks[0..n) (n <= 16, any indices) into out[16 * i]: the tile
     * form, which gathers the few blocks of many rows into one pass. */
    void (*philox_blocks)(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out);
    /* FP8: x[i] = f8(x[i] * scale) as a float, rounded to nearest even, bit
     * for bit ao_f8_round_f32 of the float product. */
    void (*fp8_round)(float *x, int n, float scale, const ao_f8_format *f);
    /* max |x[i]| over n values (0 for n = 0; NaNs, quiet or signalling, are ignored). */
    float (*abs_max)(const float *x, int n);
    /* y[i] = x[i] * a * b (in that order), plus y[i] first when accumulate;
     * y may be x.  The FP8 block scales applied around its GEMMs. */
    void (*scale2)(float *y, const float *x, int n, float a, float b, bool accumulate);
    /* Dropout: x[r][c] *= (float)keep[r][c] * scale (keep bytes 0/1) over
     * rows x cols of tiles whose rows are ld apart (x and keep alike). */
    void (*apply_keep)(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale);
    /* Soft-capping (docs/NUMERICS.md): over rows x cols of a tile whose rows
     * are ld apart, t = tanh(s * in_scale) and s = t * out_scale, tanh as
     * vec_tanh_ref computes it (bit for bit, every ISA); dtanh (NULL in the
     * forward), laid out as s, gets vec_tanh_ref's 1 - t^2. */
    void (*softcap)(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh);
    /* The backward's chain rule through the cap: ds[r][c] *= dtanh[r][c]
     * over rows x cols (rows ld apart). */
    void (*softcap_grad)(float *ds, const float *dtanh, int rows, int cols, int ld);
} fa_kernels;

#define FA_KERNEL_NAMES(X)                                                                                      \
    X(softmax_fwd) X(softmax_bwd) X(to_bf16) X(round_bf16) X(f16_to_f32) X(f32_to_f16) X(scale_rows)              \
    X(transpose_scaled) X(add_bias) X(add_alibi) X(philox_bytes) X(philox_blocks) X(fp8_round) X(abs_max)          \
    X(scale2) X(apply_keep) X(softcap) X(softcap_grad)

/* ---- KeyPool (src/cpu/kp_cpu.c) ---- */
typedef struct kp_kernels {
    /* One group of R rows (key[r], gate[r]: D floats, unit stride; ape
     * [R][D]): per channel d, w_r = softmax_r(gate[r][d] + ape[r][d]) in f32
     * (max subtracted, e_r / sum), rounded to bf16 (f16 when !bf16); out[d]
     * = sum_r w_r key[r][d] in f32, r in order, no FMA contraction. */
    void (*group_pool)(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out);
} kp_kernels;

#define KP_KERNEL_NAMES(X) X(group_pool)

/* ---- Block Attention Residuals (src/cpu/ar_cpu.c) ----
 * Rows of D elements with unit stride, of dtype f32, f16 or bf16 where a
 * dtype is given; f32 arithmetic.  Reductions: every ISA sums in f32 in its
 * own order, except dots_f64. */
typedef struct ar_kernels {
    /* *vx = sum_d v[d] x[d] (x NULL: sum_d v[d]^2), *vy = sum_d v[d] y[d];
     * next (may be NULL): the row of the same size the caller reads next,
     * prefetched into L2 while v is summed. */
    void (*dots)(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                 const void *next);
    /* dots of f32 activations: the exact products summed in double, each
     * result rounded to f32 once.  z = scale V.w feeds exp, so an f32 sum's
     * error, which grows with D, becomes a relative error of every alpha and,
     * where h = sum alpha V cancels, a large one of h (docs/ATTNRES.md). */
    void (*dots_f64)(const float *v, int D, const float *x, const float *y, float *vx, float *vy,
                     const void *next);
    /* acc[d] = c acc[d] + e v[d]: the forward's online-softmax accumulation
     * (c = 1, the common case, costs no multiplication by c). */
    void (*accumulate)(float *acc, float c, float e, const void *v, attnops_dtype dt, int D);
    /* out[d] = src[d] / div, rounded to out_dt (nearest even). */
    void (*store_div)(void *out, attnops_dtype out_dt, const float *src, float div, int D);
    /* The bf16 forms, with the f32 rows (xs, ys, accs, srcs, gs, us) in the
     * pair-split layout (AR_SPLIT below), which widens bf16 pairs with one
     * shift and one and; sums in layout order, padding included:
     * dots_split: *vx = sum v xs (xs NULL: sum v^2), *vy = sum v ys;
     * accumulate_split: accs = c accs + e split(v);
     * store_div_split: out[d] = srcs[AR_SPLIT(d)] / div, out_dt bf16 or f32;
     * grad_row_split: grad_row on v of dtype bf16 or f32 (both in natural
     * order), gs, ys and us split, out natural (bf16 or f32). */
    void (*dots_split)(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                       const void *next);
    void (*accumulate_split)(float *accs, float c, float e, const uint16_t *v, int D);
    void (*store_div_split)(void *out, attnops_dtype out_dt, const float *srcs, float div, int D);
    void (*grad_row_split)(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                           float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream);
    /* The backward's row update: out[d] = a g[d] + b y[d] + e v[d], rounded
     * to out_dt; u[d] += b v[d].  stream: out will not be read soon (a call
     * whose outputs exceed the caches), so an ISA that has non-temporal
     * stores writes it without first reading its lines (fenced before
     * returning). */
    void (*grad_row)(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                     float e, void *out, attnops_dtype out_dt, float *u, bool stream);
} ar_kernels;

#define AR_KERNEL_NAMES(X)                                                                                       \
    X(dots) X(dots_f64) X(accumulate) X(store_div) X(dots_split) X(accumulate_split) X(store_div_split)          \
    X(grad_row_split) X(grad_row)

/* The pair-split layout of a row of D elements, AR_SPLIT_LEN(D) floats:
 * each chunk of 32 holds its even elements, then its odd ones (a bf16 pair
 * is one 32-bit lane: its low half shifted up is the even element, its
 * high half masked the odd one); positions past D hold 0. */
#define AR_SPLIT_LEN(D) (((D) + 31) / 32 * 32)
#define AR_SPLIT(d) (((d) & ~31) + (((d) & 1) << 4) + (((d) & 31) >> 1))

/* ---- FusedInferAttentionScore's few-row kernels (src/cpu/fia_cpu.c) ----
 * A decode step's handful of query rows (a kv group's heads, a few
 * speculative tokens) against key and value rows read in place from the
 * cache: row c of a tile at kv[c], D contiguous elements of dtype f32, f16,
 * bf16 or int8, each widened exactly to f32 in registers (no copy of the
 * cache, which a GEMM on the tile needs: a decode step reads each byte once
 * and does 4 FLOPs per key element and query row, so the copy is the cost).
 * q, p, s, o are f32 with rows ld_* apart. */
typedef struct fia_kernels {
    /* s[r][c] = sum_d q[r][d] k_c[d] (+ s[r][c] first when accumulate), for
     * r < rows, c < cols: each sum in the ISA's lane order (kernels.h).  With
     * bf16 keys q holds bf16 values (the query's own), which an ISA with bf16
     * dot products takes as they are (AVX512-BF16: subnormals flushed); so do
     * int8 keys (exact in bf16) when every q value is a bf16 value. */
    void (*dot_rows)(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt, int D, int cols,
                     float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes);
    /* o[r][d] += sum_c p[r][c] v_c[d], c in order, for r < rows, d < D.
     * p_bf16 (a bf16 query's call) lets an ISA with bf16 dot products round p
     * to bf16 first (nearest even), as the FlashAttention forward's bf16
     * GEMMs take P, and take bf16 or int8 values (exact in bf16) in pairs. */
    void (*axpy_rows)(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt, int D, int cols,
                      float *o, int ld_o, bool p_bf16, const void *const *ahead, int ahead_bytes);
    /* Both: ahead, when not NULL, holds a row per key c < cols (ahead_bytes
     * each) that a later call reads; the call asks for it (into L2) as it
     * takes key c, so that the fetches overlap its FMAs.  (Asked for all at
     * once before the call, the fetches stalled the core: ~25 % of a memory-
     * bound decode step's time on Zen 4, AVX2, 2 threads.) */
} fia_kernels;

/* Asks for one row of `bytes` (into L2): a fia kernel's `ahead`. */
static inline void fia_prefetch_row(const void *row, int bytes)
{
    for (int at = 0; at < bytes; at += 64) __builtin_prefetch((const char *)row + at, 0, 2);
}

#define FIA_KERNEL_NAMES(X) X(dot_rows) X(axpy_rows)

/* ---- Tile GEMMs (src/cpu/tile_gemm.c) ---- */
typedef struct gemm_kernels {
    /* C[M][N] (+)= op(A) . B in fp32, row-major, leading dimensions lda,
     * ldb, ldc; op(A) = A [M][K], or A^T of A stored [K][M] when trans_a.
     * Each element sums over k in order (tile_gemm.c runs it where the GEMM
     * library does not serve the tile; an ISA that defines it is that ISA's
     * GEMM, the portable one the C loops). */
    void (*f32)(bool trans_a, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                int ldc, bool accumulate);
} gemm_kernels;

#define GEMM_KERNEL_NAMES(X) X(f32)

/* ---- The FLOP ceiling (bench/fma_ceiling.c) ---- */
typedef struct peak_kernels {
    /* iters steps of PEAK_CHAINS independent chains a <- a PEAK_B + PEAK_C
     * (chain j starts at PEAK_START(j): distinct, so no compiler merges
     * them) on every lane of the ISA's float vector, in
     * registers only: the ISA's fp32 FMA throughput with no memory traffic
     * (twelve chains cover two FMA ports x four cycles of latency).  A
     * vector ISA fuses each step (one rounding); the portable kernel is
     * scalar C, a multiply and an add.  Returns the sum of every lane of
     * every chain, so the loop cannot be removed, and sets *flops to the
     * floating-point operations done (2 per lane and step). */
    float (*fma_chains)(long iters, double *flops);
} peak_kernels;

#define PEAK_KERNEL_NAMES(X) X(fma_chains)
enum { PEAK_CHAINS = 12 };
#define PEAK_B 0.999999f
#define PEAK_C 1e-7f
#define PEAK_START(j) (1.0f + 0.0625f * (float)(j))

/* ---- The golden's double block products (src/ref/ref_block.h states them) ---- */
typedef struct golden_kernels {
    double (*ref_dot)(const double *a, const double *b, int64_t n);
    void (*ref_dot_block)(int64_t M, int64_t N, int64_t K, const double *a, int64_t lda, const double *b,
                          int64_t ldb, double *out, int64_t ldo);
    void (*ref_gemm_acc)(int64_t M, int64_t N, int64_t K, const double *a, int64_t am, int64_t ak, const double *b,
                         int64_t ldb, double *c, int64_t ldc);
} golden_kernels;

#define GOLDEN_KERNEL_NAMES(X) X(ref_dot) X(ref_dot_block) X(ref_gemm_acc)
/* src/ref/ref_block.c defines them once per ISA, named golden_<kernel>__<isa>
 * (golden_ref_dot__avx2, ...); this declares one ISA's three. */
#define GOLDEN_KERNEL_NAME_(name, isa) golden_##name##__##isa
#define GOLDEN_KERNEL_NAME(name, isa) GOLDEN_KERNEL_NAME_(name, isa)
#define GOLDEN_KERNELS_DECLARE(isa)                                                                            \
    double GOLDEN_KERNEL_NAME(ref_dot, isa)(const double *a, const double *b, int64_t n);                       \
    void GOLDEN_KERNEL_NAME(ref_dot_block, isa)(int64_t M, int64_t N, int64_t K, const double *a, int64_t lda,  \
                                                const double *b, int64_t ldb, double *out, int64_t ldo);        \
    void GOLDEN_KERNEL_NAME(ref_gemm_acc, isa)(int64_t M, int64_t N, int64_t K, const double *a, int64_t am,    \
                                               int64_t ak, const double *b, int64_t ldb, double *c, int64_t ldc);

typedef struct cpu_kernel_set {
    fa_kernels fa;
    kp_kernels kp;
    ar_kernels ar;
    fia_kernels fia;
    gemm_kernels gemm;
    peak_kernels peak;
    golden_kernels golden;
} cpu_kernel_set;

/* Every kernel of the set, for merging and for the tests: its table, its
 * name and where its pointer lives. */
typedef struct cpu_kernel_entry {
    const char *table, *name;
    size_t offset;
} cpu_kernel_entry;

extern const cpu_kernel_entry cpu_kernel_entries[];
extern const int cpu_kernel_entry_count;

/* A kernel's pointer in a set (NULL: the set does not define it). */
static inline void (*cpu_kernel_at(const cpu_kernel_set *k, const cpu_kernel_entry *e))(void)
{
    void (*f)(void);
    __builtin_memcpy(&f, (const char *)k + e->offset, sizeof f);
    return f;
}

/* The kernels of the ISA in use (isa.h), complete. */
const cpu_kernel_set *cpu_kernels(void);

/* The portable set: every kernel, plain C (src/cpu/portable/); the ISAs'
 * sets are isa.c's. */
extern const cpu_kernel_set cpu_kernels_portable;

#endif
