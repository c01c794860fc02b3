/* The tile GEMMs (src/cpu/tile_gemm.h) alone, under the ISA ctest selects
 * (ATTNOPS_ISA; once per ISA of the build): every kind, overwrite and
 * accumulate, on shapes the drivers use and on ragged ones (M, N, K of 1,
 * not a multiple of any register block, K odd for the fp32 kinds), with
 * and without padded leading dimensions.  The operator suites reach these
 * GEMMs only through whole attention problems, where a wrong edge block of
 * one backend can hide in a tolerance or in a shape no suite happens to use.
 *
 * Each GEMM is held against the same product summed in double:
 *   |C - C_exact| <= gamma_(K+1) max_ij (|C0_ij| + sum_k |A_ik B_kj|),
 *   gamma_n = n u / (1 - n u), u = 2^-24,
 * the bound of any order of fp32 summation, FMA or not (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., section 3.1); bf16 operands
 * have exact fp32 products, so the same bound holds for the bf16 kind.
 * Without accumulate C starts as NaN, which must not reach the result;
 * C's padding columns and the floats after its last row must keep their bits.
 * The fp32 kinds must run on the build's GEMM library wherever the ISA in
 * use allows one (libxsmm on x86-64, the NEON kernels on AArch64): a silent
 * fall-back to the C loops would pass every operator test, only slower.
 * A self-test requires each part of the check to fail for a GEMM that is
 * wrong in that way. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/isa.h"
#include "cpu/tile_gemm.h"
#include "testutil.h"
#include "suite.h"

static const char *const KIND_NAME[TILE_GEMM_KIND_COUNT] = {"f32_nn", "f32_tn", "bf16_nn_vnni"};

/* The operands of one GEMM as the kind stores them, and the product in double. */
typedef struct problem {
    tile_gemm_kind kind;
    int M, N, K, lda, ldb, ldc;
    bool accumulate;
    void *A, *B;
    float *C;        /* [M][ldc] + TAIL sentinel floats */
    double *want;    /* [M][N] */
    double atol;
} problem;

enum { TAIL = 16 };
static const uint32_t SENTINEL = 0x7fc0dead; /* a NaN payload no GEMM computes */

static double a_at(const problem *p, int i, int k)
{
    switch (p->kind) {
    case TILE_GEMM_F32_NN: return ((const float *)p->A)[(size_t)i * p->lda + k];
    case TILE_GEMM_F32_TN: return ((const float *)p->A)[(size_t)k * p->lda + i];
    default: return attnops_bf16_to_f32(((const uint16_t *)p->A)[(size_t)i * p->lda + k]);
    }
}

static double b_at(const problem *p, int k, int j)
{
    if (p->kind == TILE_GEMM_BF16_NN_VNNI)
        return attnops_bf16_to_f32(((const uint16_t *)p->B)[((size_t)(k / 2) * p->ldb + j) * 2 + (k & 1)]);
    return ((const float *)p->B)[(size_t)k * p->ldb + j];
}

/* n standard-normal operands, bf16 values in bf16's bits */
static void fill_operand(tu_rng *r, bool bf16, void *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float v = (float)tu_randn(r);
        if (bf16) ((uint16_t *)x)[i] = attnops_f32_to_bf16(v);
        else ((float *)x)[i] = v;
    }
}

/* pad: the padding elements of lda, ldb and ldc (0: dense) */
static problem problem_make(tu_rng *r, tile_gemm_kind kind, int M, int N, int K, const int pad[3], bool accumulate)
{
    const bool bf16 = kind == TILE_GEMM_BF16_NN_VNNI;
    problem p = {.kind = kind, .M = M, .N = N, .K = K, .lda = (kind == TILE_GEMM_F32_TN ? M : K) + pad[0],
                 .ldb = N + pad[1], .ldc = N + pad[2], .accumulate = accumulate};
    const size_t elem = bf16 ? 2 : 4;
    const size_t a_len = (size_t)(kind == TILE_GEMM_F32_TN ? K : M) * p.lda, b_len = (size_t)K * p.ldb;
    p.A = calloc(a_len, elem);
    p.B = calloc(b_len, elem);
    p.C = malloc(((size_t)M * p.ldc + TAIL) * sizeof(float));
    p.want = malloc((size_t)M * N * sizeof(double));
    if (!p.A || !p.B || !p.C || !p.want) {
        fprintf(stderr, "test_tile_gemm: out of memory\n");
        exit(2);
    }
    /* every stored element random, padding included: a kernel reading
     * padding as data shows */
    fill_operand(r, bf16, p.A, a_len);
    fill_operand(r, bf16, p.B, b_len);
    for (size_t i = 0; i < (size_t)M * p.ldc + TAIL; i++) memcpy(&p.C[i], &SENTINEL, 4);
    double magnitude = 0.0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double c0 = 0.0;
            if (accumulate) p.C[(size_t)i * p.ldc + j] = (float)(c0 = tu_randn(r));
            else p.C[(size_t)i * p.ldc + j] = NAN;
            double sum = (float)c0, size = fabs((float)c0);
            for (int k = 0; k < K; k++) {
                const double t = a_at(&p, i, k) * b_at(&p, k, j);
                sum += t;
                size += fabs(t);
            }
            p.want[(size_t)i * N + j] = sum;
            if (size > magnitude) magnitude = size;
        }
    const double u = 0x1p-24, n = K + 1;
    p.atol = n * u / (1.0 - n * u) * magnitude;
    return p;
}

static void problem_free(problem *p)
{
    free(p->A);
    free(p->B);
    free(p->C);
    free(p->want);
}

/* How a GEMM is run: the library's, or one of the self-test's wrong ones. */
typedef void (*runner)(const problem *p);

static int on_library[TILE_GEMM_KIND_COUNT]; /* GEMMs of each kind the library ran (a shape it lacks runs on the loops) */

static void run_tile_gemm(const problem *p)
{
    const tile_gemm g = tile_gemm_make(p->kind, p->M, p->N, p->K, p->lda, p->ldb, p->ldc, p->accumulate);
    on_library[p->kind] += g.library;
    tile_gemm_run(&g, p->A, p->B, p->C);
}

/* True when C holds the product within the bound and nothing outside the
 * M x N result changed; prints what failed (through the comparator). */
static bool check(const problem *p, runner run, const char *isa)
{
    run(p);
    char label[160];
    snprintf(label, sizeof label, "%s %s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d %s", isa, KIND_NAME[p->kind], p->M,
             p->N, p->K, p->lda, p->ldb, p->ldc, p->accumulate ? "accumulate" : "overwrite");
    double *got = malloc((size_t)p->M * p->N * sizeof(double));
    if (!got) exit(2);
    bool outside_ok = true;
    for (int i = 0; i < p->M; i++) {
        for (int j = 0; j < p->N; j++) got[(size_t)i * p->N + j] = p->C[(size_t)i * p->ldc + j];
        for (int j = p->N; j < p->ldc; j++) outside_ok &= memcmp(&p->C[(size_t)i * p->ldc + j], &SENTINEL, 4) == 0;
    }
    for (int t = 0; t < TAIL; t++) outside_ok &= memcmp(&p->C[(size_t)p->M * p->ldc + t], &SENTINEL, 4) == 0;
    if (!outside_ok) fprintf(stderr, "FAIL %s: wrote outside the M x N result\n", label);
    const int64_t shape[2] = {p->M, p->N};
    const tu_compare_result r =
        tu_compare(label, got, p->want, (int64_t)p->M * p->N, (tu_tolerance){0.0, p->atol}, shape, 2, NULL);
    free(got);
    return r.pass && outside_ok;
}

/* ---- the self-test's wrong GEMMs, one per part of the check ---- */
static void drops_last_k(const problem *p) /* a K edge lost */
{
    const tile_gemm g = tile_gemm_make(p->kind, p->M, p->N, p->K - 2, p->lda, p->ldb, p->ldc, p->accumulate);
    tile_gemm_run(&g, p->A, p->B, p->C);
}
static void ignores_accumulate(const problem *p) /* C0 dropped */
{
    const tile_gemm g = tile_gemm_make(p->kind, p->M, p->N, p->K, p->lda, p->ldb, p->ldc, false);
    tile_gemm_run(&g, p->A, p->B, p->C);
}
static void writes_padding(const problem *p) /* a full-width store on a ragged N */
{
    run_tile_gemm(p);
    p->C[p->N] = 0.0f;
}
static void writes_past_end(const problem *p) /* one row too many */
{
    run_tile_gemm(p);
    p->C[(size_t)p->M * p->ldc] = 0.0f;
}
static void off_by_bound(const problem *p) /* one element just outside the bound */
{
    run_tile_gemm(p);
    float *c = &p->C[(size_t)(p->M - 1) * p->ldc + p->N - 1];
    *c = (float)(p->want[(size_t)p->M * p->N - 1] + 2.0 * p->atol + fabs(*c) * 0x1p-23);
}

static bool self_test(tu_rng *r)
{
    static const struct {
        runner run;
        const char *name;
    } WRONG[] = {{drops_last_k, "drops the last k"},
                 {ignores_accumulate, "ignores accumulate"},
                 {writes_padding, "writes C's padding"},
                 {writes_past_end, "writes past C's last row"},
                 {off_by_bound, "one element off by twice the bound"}};
    fflush(stderr);
    const int saved_err = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    int caught = 0, n = 0;
    const char *missed[16];
    for (size_t w = 0; w < sizeof WRONG / sizeof WRONG[0]; w++)
        for (int kind = 0; kind < TILE_GEMM_KIND_COUNT; kind++) {
            problem p = problem_make(r, (tile_gemm_kind)kind, 5, 17, 6, (const int[3]){2, 3, 3}, true);
            const bool passed = check(&p, WRONG[w].run, "self-test");
            problem_free(&p);
            n++;
            if (!passed) caught++;
            else if (n - caught <= 16) missed[n - caught - 1] = WRONG[w].name;
        }
    fflush(stderr);
    if (saved_err >= 0) dup2(saved_err, 2), close(saved_err);
    if (devnull >= 0) close(devnull);
    for (int i = 0; i < n - caught && i < 16; i++) TU_CHECK(false, "self-test: a GEMM that %s passes", missed[i]);
    printf("self-test: %d of %d wrong GEMMs caught\n", caught, n);
    return caught == n;
}

int main(void)
{
    tu_require_isa();
    const int isa = cpu_isa_selected();
    const char *isa_name = cpu_isa_name(isa);
    int passed = 0;

    /* which backend runs each kind, and the fp32 kinds on the library */
    const bool library_allowed = cpu_isa_gemm_target(isa) != NULL;
    for (int kind = 0; kind < TILE_GEMM_KIND_COUNT; kind++) {
        const bool library = tile_gemm_library_available((tile_gemm_kind)kind);
        printf("%s %s: %s\n", isa_name, KIND_NAME[kind], tile_gemm_backend((tile_gemm_kind)kind));
        TU_CHECK(library_allowed || !library, "%s: %s runs on the library, but this ISA allows none", isa_name,
                 KIND_NAME[kind]);
#if ATTNOPS_TEST_GEMM_LIBRARY
        if (kind != TILE_GEMM_BF16_NN_VNNI)
            TU_CHECK(library == library_allowed, "%s: %s %s the GEMM library", isa_name, KIND_NAME[kind],
                     library ? "runs on" : "does not run on");
#endif
    }
    passed += tu_failures == 0;

    static const int Ms[] = {1, 3, 4, 5, 17, 64}, Ns[] = {1, 7, 16, 17, 33, 64}, Ks[] = {1, 2, 5, 6, 64, 130};
    enum { NM = sizeof Ms / sizeof *Ms, NN = sizeof Ns / sizeof *Ns, NK = sizeof Ks / sizeof *Ks };
    tu_rng r = tu_rng_make(tu_suite_seed());
    int cases = 0, failed = 0, of_kind[TILE_GEMM_KIND_COUNT] = {0};
    for (int kind = 0; kind < TILE_GEMM_KIND_COUNT; kind++)
        for (int acc = 0; acc < 2; acc++)
            for (int m = 0; m < NM; m++)
                for (int n = 0; n < NN; n++)
                    for (int k = 0; k < NK; k++) {
                        if (kind == TILE_GEMM_BF16_NN_VNNI && Ks[k] % 2) continue; /* VNNI pairs k */
                        /* each leading dimension dense, padded to odd or to even, by turns */
                        const int pad[3] = {cases % 3, cases / 3 % 3, cases / 9 % 3};
                        problem p = problem_make(&r, (tile_gemm_kind)kind, Ms[m], Ns[n], Ks[k], pad, acc);
                        const bool ok = check(&p, run_tile_gemm, isa_name);
                        problem_free(&p);
                        cases++, of_kind[kind]++;
                        if (!ok) failed++, tu_failures++;
                    }
    printf("%s: %d of %d GEMMs within the bound (suite seed %llu)\n", isa_name, cases - failed, cases,
           (unsigned long long)tu_suite_seed());
    for (int kind = 0; kind < TILE_GEMM_KIND_COUNT; kind++)
        printf("%s %s: %d of %d shapes on the library\n", isa_name, KIND_NAME[kind], on_library[kind], of_kind[kind]);
    passed += cases - failed;

    if (tu_failures == 0) passed += self_test(&r); /* only meaningful once the GEMMs are right */
    return tu_finish("test_tile_gemm", passed);
}
