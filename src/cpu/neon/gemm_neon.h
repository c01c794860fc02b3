/* The fp32 tile GEMMs of AArch64 (gemm_neon.c), reached from tile_gemm.c. */
#ifndef ATTNOPS_CPU_NEON_GEMM_H
#define ATTNOPS_CPU_NEON_GEMM_H

#include <stdbool.h>

/* C[M][N] (+)= op(A) . B, row-major; op(A) = A [M][K], or A^T of A stored [K][M] when trans_a. */
void neon_gemm_f32(bool trans_a, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C,
                   int ldc, bool accumulate);

#endif
