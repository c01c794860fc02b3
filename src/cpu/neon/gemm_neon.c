/* The fp32 tile GEMMs on NEON, the neon set's gemm.f32 (kernels.h; tile_gemm.h's
 * TILE_GEMM_F32_NN and _TN):
 *
 *   C[M][N] (+)= op(A)[M][K] . B[K][N],  row-major, op(A) = A stored
 *   [M][K] (lda) or A^T with A stored [K][M] (lda); B [K][N] (ldb).
 *
 * Why our own and not OpenBLAS (docs/ARM64.md, "GEMMs"): Debian's serial
 * OpenBLAS, called from two OpenMP threads at once as the drivers call their
 * tiles, gave backward results that changed from run to run (21, 0, 3 and
 * 0 of 178 accuracy cases wrong in four runs on two cores; 178 of 178 with
 * a lock around each call).  The tiles are small and
 * already packed by the drivers, so a register-blocked kernel without
 * packing of its own is what they need.
 *
 * Blocks of 4 rows x 16 columns keep 16 accumulators in registers over the
 * whole K (8 more registers hold a step's A and B values); each element is
 * summed over k in order with one FMA per step, so the result does not
 * depend on threads or on the tile's position.  Column and row remainders
 * run the same sums 4 or 1 columns at a time. */
#include <arm_neon.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "cpu/kernels.h"

/* -O2 inlines neither the block nor its loops on its own */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

typedef struct gemm_args {
    bool trans_a, accumulate;
    int K, lda, ldb, ldc;
    const float *A, *B;
    float *C;
} gemm_args;

/* op(A)[i][k] */
static inline float a_at(const gemm_args *g, int i, int k)
{
    return g->trans_a ? g->A[(size_t)k * g->lda + i] : g->A[(size_t)i * g->lda + k];
}

static inline float32x4_t c_start(const gemm_args *g, int i, int j)
{
    return g->accumulate ? vld1q_f32(g->C + (size_t)i * g->ldc + j) : vdupq_n_f32(0.0f);
}

/* The 16 FMAs of one k: row r of the block takes lane lr of ar. */
#define FMA_4X16(a0, l0, a1, l1, a2, l2, a3, l3)                                                                 \
    do {                                                                                                         \
        c00 = vfmaq_laneq_f32(c00, b0, a0, l0), c01 = vfmaq_laneq_f32(c01, b1, a0, l0);                          \
        c02 = vfmaq_laneq_f32(c02, b2, a0, l0), c03 = vfmaq_laneq_f32(c03, b3, a0, l0);                          \
        c10 = vfmaq_laneq_f32(c10, b0, a1, l1), c11 = vfmaq_laneq_f32(c11, b1, a1, l1);                          \
        c12 = vfmaq_laneq_f32(c12, b2, a1, l1), c13 = vfmaq_laneq_f32(c13, b3, a1, l1);                          \
        c20 = vfmaq_laneq_f32(c20, b0, a2, l2), c21 = vfmaq_laneq_f32(c21, b1, a2, l2);                          \
        c22 = vfmaq_laneq_f32(c22, b2, a2, l2), c23 = vfmaq_laneq_f32(c23, b3, a2, l2);                          \
        c30 = vfmaq_laneq_f32(c30, b0, a3, l3), c31 = vfmaq_laneq_f32(c31, b1, a3, l3);                          \
        c32 = vfmaq_laneq_f32(c32, b2, a3, l3), c33 = vfmaq_laneq_f32(c33, b3, a3, l3);                          \
    } while (0)

/* Row k of B's 16 columns at j. */
#define LOAD_B(k)                                                                                                \
    const float *brow = g->B + (size_t)(k) * g->ldb + j;                                                         \
    const float32x4_t b0 = vld1q_f32(brow), b1 = vld1q_f32(brow + 4), b2 = vld1q_f32(brow + 8),                  \
                      b3 = vld1q_f32(brow + 12)

/* Rows i..i+3, columns j..j+15; trans_a a constant once inlined (-O2 does
 * not unswitch the k loop).  A^T's four values of column k are contiguous:
 * one load, lane r for row r.  A's rows are contiguous in k instead: four k
 * a step, one load per row, lane kk for step kk; a remainder of K % 4 takes
 * its four values one by one. */
ALWAYS_INLINE void block_4x16(const gemm_args *g, int i, int j, bool trans_a)
{
    float32x4_t c00 = c_start(g, i, j), c01 = c_start(g, i, j + 4), c02 = c_start(g, i, j + 8),
                c03 = c_start(g, i, j + 12);
    float32x4_t c10 = c_start(g, i + 1, j), c11 = c_start(g, i + 1, j + 4), c12 = c_start(g, i + 1, j + 8),
                c13 = c_start(g, i + 1, j + 12);
    float32x4_t c20 = c_start(g, i + 2, j), c21 = c_start(g, i + 2, j + 4), c22 = c_start(g, i + 2, j + 8),
                c23 = c_start(g, i + 2, j + 12);
    float32x4_t c30 = c_start(g, i + 3, j), c31 = c_start(g, i + 3, j + 4), c32 = c_start(g, i + 3, j + 8),
                c33 = c_start(g, i + 3, j + 12);
    int k = 0;
    if (trans_a) {
        for (; k < g->K; k++) {
            LOAD_B(k);
            const float32x4_t a = vld1q_f32(g->A + (size_t)k * g->lda + i);
            FMA_4X16(a, 0, a, 1, a, 2, a, 3);
        }
    } else {
        const float *a_row = g->A + (size_t)i * g->lda;
        const size_t lda = (size_t)g->lda;
        for (; k + 4 <= g->K; k += 4) {
            const float32x4_t a0 = vld1q_f32(a_row + k), a1 = vld1q_f32(a_row + lda + k),
                              a2 = vld1q_f32(a_row + 2 * lda + k), a3 = vld1q_f32(a_row + 3 * lda + k);
            {
                LOAD_B(k);
                FMA_4X16(a0, 0, a1, 0, a2, 0, a3, 0);
            }
            {
                LOAD_B(k + 1);
                FMA_4X16(a0, 1, a1, 1, a2, 1, a3, 1);
            }
            {
                LOAD_B(k + 2);
                FMA_4X16(a0, 2, a1, 2, a2, 2, a3, 2);
            }
            {
                LOAD_B(k + 3);
                FMA_4X16(a0, 3, a1, 3, a2, 3, a3, 3);
            }
        }
        for (; k < g->K; k++) {
            LOAD_B(k);
            const float32x4_t a = {a_row[k], a_row[lda + k], a_row[2 * lda + k], a_row[3 * lda + k]};
            FMA_4X16(a, 0, a, 1, a, 2, a, 3);
        }
    }
    float *c = g->C + (size_t)i * g->ldc + j;
    const size_t ldc = (size_t)g->ldc;
    vst1q_f32(c, c00), vst1q_f32(c + 4, c01), vst1q_f32(c + 8, c02), vst1q_f32(c + 12, c03);
    c += ldc;
    vst1q_f32(c, c10), vst1q_f32(c + 4, c11), vst1q_f32(c + 8, c12), vst1q_f32(c + 12, c13);
    c += ldc;
    vst1q_f32(c, c20), vst1q_f32(c + 4, c21), vst1q_f32(c + 8, c22), vst1q_f32(c + 12, c23);
    c += ldc;
    vst1q_f32(c, c30), vst1q_f32(c + 4, c31), vst1q_f32(c + 8, c32), vst1q_f32(c + 12, c33);
}

#undef LOAD_B
#undef FMA_4X16

/* Row i, columns j..j+3. */
static void block_1x4(const gemm_args *g, int i, int j)
{
    float32x4_t c = c_start(g, i, j);
    for (int k = 0; k < g->K; k++) c = vfmaq_n_f32(c, vld1q_f32(g->B + (size_t)k * g->ldb + j), a_at(g, i, k));
    vst1q_f32(g->C + (size_t)i * g->ldc + j, c);
}

/* Row i, column j. */
static void block_1x1(const gemm_args *g, int i, int j)
{
    float c = g->accumulate ? g->C[(size_t)i * g->ldc + j] : 0.0f;
    for (int k = 0; k < g->K; k++) c = fmaf(a_at(g, i, k), g->B[(size_t)k * g->ldb + j], c);
    g->C[(size_t)i * g->ldc + j] = c;
}

static void gemm_f32__neon(bool trans_a, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                           float *C, int ldc, bool accumulate)
{
    const gemm_args g = {trans_a, accumulate, K, lda, ldb, ldc, A, B, C};
    const int M4 = M / 4 * 4, N16 = N / 16 * 16, N4 = N / 4 * 4;
    for (int i = 0; i < M4; i += 4)
        for (int j = 0; j < N16; j += 16) {
            if (trans_a) block_4x16(&g, i, j, true);
            else block_4x16(&g, i, j, false);
        }
    for (int i = 0; i < M; i++) {
        for (int j = i < M4 ? N16 : 0; j < N4; j += 4) block_1x4(&g, i, j);
        for (int j = N4; j < N; j++) block_1x1(&g, i, j);
    }
}

const cpu_kernel_set cpu_kernels_gemm__neon = {.gemm = {.f32 = gemm_f32__neon}};
