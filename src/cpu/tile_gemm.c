#include "cpu/tile_gemm.h"

#include <libxsmm.h>
#include <pthread.h>
#include <string.h>

#include "attnops.h"
#include "cpu/isa.h"

static pthread_once_t xsmm_once = PTHREAD_ONCE_INIT;
static void xsmm_init(void) { libxsmm_init(); }

tile_gemm tile_gemm_make(tile_gemm_kind kind, int M, int N, int K, int lda, int ldb, int ldc, bool accumulate)
{
    tile_gemm g = {kind, M, N, K, lda, ldb, ldc, accumulate, NULL};
    if (cpu_isa_get() != CPU_ISA_AVX512) return g;
    pthread_once(&xsmm_once, xsmm_init);
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const libxsmm_blasint m = N, n = M, k = K, la = ldb, lb = lda, lc = ldc;
    int flags = 0;
    switch (kind) {
    case TILE_GEMM_F32_NN:
        g.jit = (void (*)(const void *, const void *, float *, ...))libxsmm_smmdispatch(m, n, k, &la, &lb, &lc,
                                                                                        &alpha, &beta, &flags, NULL);
        break;
    case TILE_GEMM_F32_TN:
        flags = LIBXSMM_GEMM_FLAG_TRANS_B;
        g.jit = (void (*)(const void *, const void *, float *, ...))libxsmm_smmdispatch(m, n, k, &la, &lb, &lc,
                                                                                        &alpha, &beta, &flags, NULL);
        break;
    case TILE_GEMM_BF16_NN_VNNI:
        flags = LIBXSMM_GEMM_FLAG_VNNI_A;
        g.jit = (void (*)(const void *, const void *, float *, ...))libxsmm_bsmmdispatch(m, n, k, &la, &lb, &lc,
                                                                                         &alpha, &beta, &flags, NULL);
        break;
    }
    return g; /* a NULL jit (shape or ISA libxsmm cannot do) falls back to the loops */
}

static void portable(const tile_gemm *g, const void *A, const void *B, float *C)
{
    const int M = g->M, N = g->N, K = g->K;
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * g->ldc;
        if (!g->accumulate) memset(c, 0, (size_t)N * sizeof *c);
        for (int k = 0; k < K; k++) {
            float a;
            switch (g->kind) {
            case TILE_GEMM_F32_NN: a = ((const float *)A)[(size_t)i * g->lda + k]; break;
            case TILE_GEMM_F32_TN: a = ((const float *)A)[(size_t)k * g->lda + i]; break;
            default: a = attnops_bf16_to_f32(((const uint16_t *)A)[(size_t)i * g->lda + k]); break;
            }
            if (g->kind == TILE_GEMM_BF16_NN_VNNI) {
                const uint16_t *b = (const uint16_t *)B + (size_t)(k / 2) * g->ldb * 2 + (k & 1);
                for (int j = 0; j < N; j++) c[j] += a * attnops_bf16_to_f32(b[2 * j]);
            } else {
                const float *b = (const float *)B + (size_t)k * g->ldb;
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            }
        }
    }
}

void tile_gemm_run(const tile_gemm *g, const void *A, const void *B, float *C)
{
    if (g->jit) g->jit(B, A, C);
    else portable(g, A, B, C);
}
