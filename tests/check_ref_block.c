/* The golden's block products against the scalar loops that define their
 * order (src/ref/ref_block.h), bit for bit, over shapes that exercise every
 * tile edge (M, N not multiples of the tile, K tails below 8, K across the
 * 128-row chunks of ref_gemm_acc), padded leading dimensions and a
 * transposed A.  Data spans 2^+-20 so any change of summation order shows;
 * the check proves that by finding elements where another order differs.
 * test_kernel_inventory runs it on every ISA's build of ref_block.c: the
 * golden's bits must not depend on the CPU. */
#include "check_ref_block.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

/* A value in +-[2^-20, 2^21) with a random 53-bit significand. */
static double wide_value(void)
{
    const double frac = (double)(next_u64() >> 11) / 9007199254740992.0;
    const int e = (int)(next_u64() % 41) - 20;
    return ldexp(1.0 + frac, e) * ((next_u64() & 1) ? -1.0 : 1.0);
}

static double *filled(int64_t n)
{
    double *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = wide_value();
    return x;
}

static double dot_definition(const double *a, const double *b, int64_t n)
{
    double s[8] = {0};
    for (int64_t i = 0; i < n; i++) s[i % 8] += a[i] * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static double dot_sequential(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* per check: elements unlike their definition, and elements another order
 * would change */
typedef struct block_tally {
    int wrong, order_sensitive_dot, order_sensitive_gemm;
} block_tally;

static void check_dot(const golden_kernels *k, block_tally *t, int64_t M, int64_t N, int64_t K)
{
    const int64_t lda = K + 3, ldb = K + 1, ldo = N + 2;
    double *a = filled(M * lda), *b = filled(N * ldb), *out = filled(M * ldo);
    k->ref_dot_block(M, N, K, a, lda, b, ldb, out, ldo);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const double want = dot_definition(a + m * lda, b + n * ldb, K), got = out[m * ldo + n];
            if (memcmp(&want, &got, sizeof got) != 0 && t->wrong++ < 10)
                fprintf(stderr, "  ref_dot_block M%lld N%lld K%lld [%lld,%lld]: %.17g, definition %.17g\n",
                        (long long)M, (long long)N, (long long)K, (long long)m, (long long)n, got, want);
            t->order_sensitive_dot += got != dot_sequential(a + m * lda, b + n * ldb, K);
            if (n == 0 && k->ref_dot(a + m * lda, b, K) != dot_definition(a + m * lda, b, K) && t->wrong++ < 10)
                fprintf(stderr, "  ref_dot K%lld row %lld differs from its definition\n", (long long)K, (long long)m);
        }
    free(a), free(b), free(out);
}

static void check_gemm(const golden_kernels *k, block_tally *t, int64_t M, int64_t N, int64_t K, int transposed)
{
    /* A(m, k) = a[m am + k ak]: row-major [M][lda] or transposed [K][lda] */
    const int64_t lda = (transposed ? M : K) + 5, am = transposed ? 1 : lda, ak = transposed ? lda : 1;
    const int64_t ldb = N + 3, ldc = N + 1;
    double *a = filled((transposed ? K : M) * lda), *b = filled(K * ldb), *c = filled(M * ldc);
    double *want = malloc((size_t)(M * ldc) * sizeof *want), *reversed = malloc((size_t)(M * ldc) * sizeof *reversed);
    memcpy(want, c, (size_t)(M * ldc) * sizeof *c);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = c[m * ldc + n], r = c[m * ldc + n];
            for (int64_t k = 0; k < K; k++) s += a[m * am + k * ak] * b[k * ldb + n];
            for (int64_t k = K - 1; k >= 0; k--) r += a[m * am + k * ak] * b[k * ldb + n];
            want[m * ldc + n] = s, reversed[m * ldc + n] = r;
        }
    k->ref_gemm_acc(M, N, K, a, am, ak, b, ldb, c, ldc);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < ldc; n++) { /* the padding column must stay as it was */
            const double w = want[m * ldc + n], g = c[m * ldc + n];
            if (memcmp(&w, &g, sizeof g) != 0 && t->wrong++ < 10)
                fprintf(stderr, "  ref_gemm_acc M%lld N%lld K%lld%s [%lld,%lld]: %.17g, definition %.17g\n",
                        (long long)M, (long long)N, (long long)K, transposed ? " (A transposed)" : "", (long long)m,
                        (long long)n, g, w);
            t->order_sensitive_gemm += n < N && g != reversed[m * ldc + n];
        }
    free(a), free(b), free(c), free(want), free(reversed);
}

void check_golden_blocks(const golden_kernels *k, const char *isa)
{
    block_tally t = {0};
    rng_state = 0x9E3779B97F4A7C15ull; /* the same data on every ISA */
    const int64_t sizes[] = {1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 72};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    for (int x = 0; x < ns; x++)
        for (int y = 0; y < ns; y++) {
            check_dot(k, &t, sizes[x], sizes[y], sizes[(x + y) % ns] + (y & 1 ? 128 : 0));
            check_gemm(k, &t, sizes[x], sizes[y], sizes[(x * 3 + y) % ns], y & 1);
        }
    check_dot(k, &t, 32, 128, 128), check_dot(k, &t, 5, 2, 300);
    check_gemm(k, &t, 32, 128, 300, 0), check_gemm(k, &t, 128, 128, 32, 1);
    check_gemm(k, &t, 4, 130, 257, 0), check_gemm(k, &t, 3, 40, 129, 1);
    /* the data must make the order visible, or a wrong order would pass */
    TU_CHECK(t.order_sensitive_dot > 0 && t.order_sensitive_gemm > 0,
             "%s golden blocks: no element depends on the summation order (dot %d, gemm %d): the check is blind", isa,
             t.order_sensitive_dot, t.order_sensitive_gemm);
    TU_CHECK(t.wrong == 0, "%s golden blocks: %d elements differ from the scalar definition", isa, t.wrong);
}
