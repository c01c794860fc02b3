/* Tile GEMMs in row-major terms, each run by the build's GEMM library where
 * it has the kind, by plain C loops otherwise and on the portable ISA:
 *
 *   x86-64   libxsmm's JIT for the running CPU, dispatched once per shape,
 *            wherever libxsmm returns a kernel for the kind and shape (fp32
 *            on AVX2 and AVX-512; bf16 where libxsmm 1.17 has it, AVX-512);
 *   AArch64  the neon kernel set's gemm.f32 (src/cpu/neon/gemm_neon.c) for
 *            the two fp32 kinds; bf16 operands are widened (below).
 *            docs/ARM64.md says why not OpenBLAS.
 * The fp32 kinds libxsmm does not take run the kernel set's gemm.f32
 * (kernels.h): the ISA's own where it has one, the C loops otherwise; no
 * file here names an ISA.
 *
 *   F32_NN        C[M][N] (+)= A[M][K] . B[K][N]
 *   F32_TN        C[M][N] (+)= A^T . B,   A stored [K][M]
 *   BF16_NN_VNNI  C[M][N] (+)= A[M][K] . B,   A bf16 row-major, B bf16 in
 *                 VNNI-2 form [K/2][ldb][2] (rows k, k+1 interleaved), K even;
 *                 C is fp32.  libxsmm runs it only for an even lda (an odd
 *                 one gets the C loops: tile_gemm.c says why).
 *
 * libxsmm is column-major, so a row-major C = A.B is issued as the
 * column-major C^T = B^T.A^T: libxsmm's "A" is our B.  That is why our
 * transposed-A case maps to libxsmm's TRANS_B flag and why the VNNI operand
 * (libxsmm's A) is our B. */
#ifndef ATTNOPS_TILE_GEMM_H
#define ATTNOPS_TILE_GEMM_H

#include <stdbool.h>
#include <stdint.h>

typedef enum tile_gemm_kind {
    TILE_GEMM_F32_NN,
    TILE_GEMM_F32_TN,
    TILE_GEMM_BF16_NN_VNNI,
    TILE_GEMM_KIND_COUNT
} tile_gemm_kind;

typedef struct tile_gemm {
    tile_gemm_kind kind;
    int M, N, K, lda, ldb, ldc;
    bool accumulate;
    bool library; /* false: the C loops */
    void (*jit)(const void *, const void *, float *, ...); /* libxsmm's kernel */
} tile_gemm;

tile_gemm tile_gemm_make(tile_gemm_kind kind, int M, int N, int K, int lda, int ldb, int ldc, bool accumulate);
void tile_gemm_run(const tile_gemm *g, const void *A, const void *B, float *C);

/* Whether the GEMM library runs this kind here (libxsmm: probed once on a
 * 64 x 64 x 64 tile).
 * Drivers with bf16 operands use the bf16 kind only where it does, and
 * otherwise widen the operands to fp32 while packing (exact) and round P
 * and dS to bf16 values instead: the same products, fp32 GEMMs. */
bool tile_gemm_library_available(tile_gemm_kind kind);

/* "libxsmm JIT (<arch>)", "neon kernels" (an ISA's own gemm.f32) or "C loops":
 * what runs a kind, for reports. */
const char *tile_gemm_backend(tile_gemm_kind kind);

#endif
