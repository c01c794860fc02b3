/* The golden's double block products.  Each output element is summed in one
 * fixed order, the order a plain scalar loop writes, so blocking, register
 * tiling and the ISA (each ISA's build of ref_block.c, below; FMA
 * contraction is off) never change a bit of the golden:
 *
 *   ref_dot:        eight running sums s[i mod 8] += a[i] b[i], then
 *                   ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
 *   ref_dot_block:  out[m][n] = ref_dot(a_m, b_n, K)
 *   ref_gemm_acc:   c[m][n] = (((c[m][n] + A(m,0) b[0][n]) + A(m,1) b[1][n]) + ...)
 *
 * They are register-tiled (4 x 4 dot products, 4 rows x 32 columns of
 * updates) because the golden's time is these products; the per-element
 * order is what the scalar definition above gives. */
#ifndef ATTNOPS_REF_BLOCK_H
#define ATTNOPS_REF_BLOCK_H

#include <stdint.h>

#include "cpu/kernels.h"

/* ref_block.c is compiled once per ISA (its symbols suffixed with it:
 * GOLDEN_KERNELS_DECLARE in cpu/kernels.h), and the ISA in use's copy sits
 * in the kernel table's golden group: the one place code is chosen by ISA
 * (src/cpu/isa.c), ATTNOPS_ISA included.  Only the speed is the ISA's; the
 * bits are the order above on every ISA.  (The golden reads the kernel
 * table; no cpu/ file includes ref/.) */
static inline double ref_dot(const double *a, const double *b, int64_t n)
{
    return cpu_kernels()->golden.ref_dot(a, b, n);
}

/* out[m * ldo + n] = ref_dot(a + m * lda, b + n * ldb, K), m < M, n < N. */
static inline void ref_dot_block(int64_t M, int64_t N, int64_t K, const double *a, int64_t lda, const double *b,
                                 int64_t ldb, double *out, int64_t ldo)
{
    cpu_kernels()->golden.ref_dot_block(M, N, K, a, lda, b, ldb, out, ldo);
}

/* c[m * ldc + n] += sum_k A(m, k) b[k * ldb + n] in k order, m < M, n < N,
 * k < K, with A(m, k) = a[m * am + k * ak] (so A may be a transposed view). */
static inline void ref_gemm_acc(int64_t M, int64_t N, int64_t K, const double *a, int64_t am, int64_t ak,
                                const double *b, int64_t ldb, double *c, int64_t ldc)
{
    cpu_kernels()->golden.ref_gemm_acc(M, N, K, a, am, ak, b, ldb, c, ldc);
}

#endif
