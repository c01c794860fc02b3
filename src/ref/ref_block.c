/* The golden's double block products (the order is the contract: see
 * ref_block.h).  Written with GCC vector extensions, each lane an
 * independent IEEE double, so every ISA's build computes the same bits:
 *
 *   ref_dot_block: 4 x 4 dot products at a time, 16 accumulators of 8 lanes
 *                  (lane l holds the running sum s[l]); the lanes of 8 of
 *                  them are reduced together by three even/odd pair steps
 *                  that add exactly the pairs of the scalar tree.
 *   ref_gemm_acc:  a 4-row x 32-column block of C held in registers over a
 *                  chunk of 128 k, B's chunk rows (32 columns) reused by
 *                  all row blocks; each element still adds its terms in k
 *                  order (a chunk continues where the last one stored).
 * A K tail shorter than 8 is read into zero-padded vectors: 0 x 0 = +0 and
 * s + +0 = s for every running sum (they start at +0 and so are never -0). */
#include <string.h>

#include "ref/ref_block.h"

#ifndef ATTNOPS_KERNEL_ISA
#define ATTNOPS_KERNEL_ISA portable
#endif
#define NAME(name) GOLDEN_KERNEL_NAME(name, ATTNOPS_KERNEL_ISA)
GOLDEN_KERNELS_DECLARE(ATTNOPS_KERNEL_ISA)

/* Every helper taking or returning a vector is inlined, so no vector
 * crosses a call (a 64-byte vector's calling convention depends on the
 * ISA flags of the build: -Wpsabi). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#define INLINE static inline __attribute__((always_inline))

typedef double v8d __attribute__((vector_size(64)));
#if defined(__clang__)
#define EVEN(x, y) __builtin_shufflevector(x, y, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD(x, y) __builtin_shufflevector(x, y, 1, 3, 5, 7, 9, 11, 13, 15)
#else
typedef long long v8i __attribute__((vector_size(64)));
#define EVEN(x, y) __builtin_shuffle(x, y, (v8i){0, 2, 4, 6, 8, 10, 12, 14})
#define ODD(x, y) __builtin_shuffle(x, y, (v8i){1, 3, 5, 7, 9, 11, 13, 15})
#endif

enum { KC = 128 }; /* k chunk of ref_gemm_acc: 128 rows x 32 columns of B = 32 KiB */

INLINE v8d load(const double *p)
{
    v8d v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void store(double *p, v8d v) { memcpy(p, &v, sizeof v); }

/* The first n (< 8) elements, the rest +0. */
INLINE v8d load_part(const double *p, int64_t n)
{
    double t[8] = {0};
    memcpy(t, p, (size_t)n * sizeof(double));
    return load(t);
}

INLINE double tree(v8d s) { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); }

/* Lane i of the result is tree(x[i]): each step adds neighbouring lanes,
 * as the scalar tree does, and packs two inputs' sums into one vector. */
INLINE v8d tree8(const v8d x[8])
{
    const v8d y01 = EVEN(x[0], x[1]) + ODD(x[0], x[1]), y23 = EVEN(x[2], x[3]) + ODD(x[2], x[3]);
    const v8d y45 = EVEN(x[4], x[5]) + ODD(x[4], x[5]), y67 = EVEN(x[6], x[7]) + ODD(x[6], x[7]);
    /* y01 = [x0 s01, x0 s23, x0 s45, x0 s67, x1 s01, ...] */
    const v8d z0 = EVEN(y01, y23) + ODD(y01, y23), z1 = EVEN(y45, y67) + ODD(y45, y67);
    /* z0 = [x0 s0123, x0 s4567, x1 s0123, x1 s4567, x2 ..., x3 ...] */
    return EVEN(z0, z1) + ODD(z0, z1);
}

double NAME(ref_dot)(const double *a, const double *b, int64_t n)
{
    v8d s = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) s += load(a + i) * load(b + i);
    if (i < n) s += load_part(a + i, n - i) * load_part(b + i, n - i);
    return tree(s);
}

/* An mr x nr block of dot products (mr, nr <= 4, constants after inlining). */
INLINE void dot_tile(int mr, int nr, int64_t K, const double *a, int64_t lda, const double *b, int64_t ldb,
                     double *out, int64_t ldo)
{
    v8d acc[4][4];
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) acc[r][c] = (v8d){0};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        v8d av[4], bv[4];
        for (int r = 0; r < mr; r++) av[r] = load(a + r * lda + k);
        for (int c = 0; c < nr; c++) bv[c] = load(b + c * ldb + k);
        for (int r = 0; r < mr; r++)
            for (int c = 0; c < nr; c++) acc[r][c] += av[r] * bv[c];
    }
    if (k < K) {
        v8d av[4], bv[4];
        for (int r = 0; r < mr; r++) av[r] = load_part(a + r * lda + k, K - k);
        for (int c = 0; c < nr; c++) bv[c] = load_part(b + c * ldb + k, K - k);
        for (int r = 0; r < mr; r++)
            for (int c = 0; c < nr; c++) acc[r][c] += av[r] * bv[c];
    }
    if (mr == 4 && nr == 4) {
        for (int h = 0; h < 2; h++) { /* rows 2h and 2h + 1 */
            const v8d x[8] = {acc[2 * h][0], acc[2 * h][1], acc[2 * h][2], acc[2 * h][3],
                              acc[2 * h + 1][0], acc[2 * h + 1][1], acc[2 * h + 1][2], acc[2 * h + 1][3]};
            const v8d t = tree8(x);
            for (int c = 0; c < 4; c++) out[2 * h * ldo + c] = t[c], out[(2 * h + 1) * ldo + c] = t[4 + c];
        }
        return;
    }
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) out[r * ldo + c] = tree(acc[r][c]);
}

void NAME(ref_dot_block)(int64_t M, int64_t N, int64_t K, const double *a, int64_t lda, const double *b, int64_t ldb,
                         double *out, int64_t ldo)
{
    int64_t n = 0;
    for (; n + 4 <= N; n += 4) { /* four b rows, reused by every a row */
        int64_t m = 0;
        for (; m + 4 <= M; m += 4) dot_tile(4, 4, K, a + m * lda, lda, b + n * ldb, ldb, out + m * ldo + n, ldo);
        for (; m < M; m++) dot_tile(1, 4, K, a + m * lda, lda, b + n * ldb, ldb, out + m * ldo + n, ldo);
    }
    for (; n < N; n++)
        for (int64_t m = 0; m < M; m++) dot_tile(1, 1, K, a + m * lda, lda, b + n * ldb, ldb, out + m * ldo + n, ldo);
}

/* C block of mr rows x nv vectors += its K terms (mr <= 4, nv <= 4). */
INLINE void gemm_tile(int mr, int nv, int64_t K, const double *a, int64_t am, int64_t ak, const double *b,
                      int64_t ldb, double *c, int64_t ldc)
{
    v8d acc[4][4];
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) acc[r][v] = load(c + r * ldc + 8 * v);
    for (int64_t k = 0; k < K; k++) {
        v8d bv[4];
        for (int v = 0; v < nv; v++) bv[v] = load(b + k * ldb + 8 * v);
        for (int r = 0; r < mr; r++) {
            const double x = a[r * am + k * ak];
            for (int v = 0; v < nv; v++) acc[r][v] += x * bv[v];
        }
    }
    for (int r = 0; r < mr; r++)
        for (int v = 0; v < nv; v++) store(c + r * ldc + 8 * v, acc[r][v]);
}

void NAME(ref_gemm_acc)(int64_t M, int64_t N, int64_t K, const double *a, int64_t am, int64_t ak, const double *b,
                        int64_t ldb, double *c, int64_t ldc)
{
    const int64_t N8 = N / 8 * 8;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = K - k0 < KC ? K - k0 : KC;
        const double *ak0 = a + k0 * ak, *bk0 = b + k0 * ldb;
        for (int64_t n = 0; n < N8;) {
            const int nv = N8 - n >= 32 ? 4 : 1;
            int64_t m = 0;
            for (; m + 4 <= M; m += 4) {
                if (nv == 4) gemm_tile(4, 4, kc, ak0 + m * am, am, ak, bk0 + n, ldb, c + m * ldc + n, ldc);
                else gemm_tile(4, 1, kc, ak0 + m * am, am, ak, bk0 + n, ldb, c + m * ldc + n, ldc);
            }
            for (; m < M; m++) {
                if (nv == 4) gemm_tile(1, 4, kc, ak0 + m * am, am, ak, bk0 + n, ldb, c + m * ldc + n, ldc);
                else gemm_tile(1, 1, kc, ak0 + m * am, am, ak, bk0 + n, ldb, c + m * ldc + n, ldc);
            }
            n += 8 * nv;
        }
        for (int64_t m = 0; m < M; m++) /* columns past the last full vector */
            for (int64_t n = N8; n < N; n++) {
                double s = c[m * ldc + n];
                for (int64_t k = 0; k < kc; k++) s += ak0[m * am + k * ak] * bk0[k * ldb + n];
                c[m * ldc + n] = s;
            }
    }
}
