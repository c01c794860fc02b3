/* Block Attention Residuals (spec B, docs/ATTNRES.md):
 *   (a) the reference: its forward against an independent long-double
 *       evaluation of B.1, its backward against central finite differences
 *       of its own forward (ar_ref_token_forward, in double); f32
 *       activations, small shapes, with and without RMSNorm and partial
 *       block, scale != 1, random gamma;
 *   (b) the fast kernel (impl CPU) against the reference over the stated
 *       range (bf16 and f16, one f32 case; N 1..127; B 1..8; T 1, 17, 1023
 *       and one 32768; D 1536..6144; scale 1 and not; with and without
 *       partial block and RMSNorm), every output including every block's
 *       gradient, each within tu_attention_tolerance(dtype, f32, K, max|e|)
 *       with K the reduction behind it (D or L; B T L for dw and dgamma);
 *   (c) the seed's two cases by the seed's triple rule (cmp_compare
 *       CMP_TRIPLE) on every output the seed compares plus every block
 *       gradient: kernel = impl CPU, benchmark = impl BENCHMARK, golden =
 *       impl REFERENCE, each chain's forward feeding its caches to its own
 *       backward (the seed's cascade); fp32 small-value thresholds, which is
 *       what the seed applies in effect (spec B.3);
 *   (d) impl CPU and REFERENCE with 1, 2 and 3 threads, and with strided
 *       views (element stride 2, padded rows) for every tensor: bitwise the
 *       same outputs, dw and dgamma included;
 *   (e) mutation proof: a perturbed golden fails (b)'s check, a perturbed
 *       kernel output and a wrong golden fail the triple rule;
 * (The AttnRes row kernels of every ISA are checked in
 * tests/test_kernel_inventory.c.)
 * Inputs as the seed's _make_inputs (verify/ar_case.h, shared with the
 * harness): blocks, partial block, grad_h standard normal in the dtype,
 * proj_weight randn / sqrt(4D) (the division in the dtype), gamma ones (or
 * standard normal where marked, for coverage).
 * With a file argument (ctest passes verify/suites/attnres_seed.json) it
 * also checks that the harness's attnres-seed suite is (c)'s two cases.
 * Prints a line per case and a summary; exits 1 on any failure.
 * Usage: test_attnres [--quick] [SUITE.json]
 *   (--quick: all but the large (b) and the (c) cases) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ar_case.h"
#include "attnres/ar_problem.h"
#include "compare.h"
#include "core/core.h"
#include "cpu/isa.h"
#include "harness_case.h"
#include "ref/ar_ref.h"
#include "suite.h"

static const attnops_dtype F32 = ATTNOPS_DTYPE_F32, F16 = ATTNOPS_DTYPE_F16, BF16 = ATTNOPS_DTYPE_BF16;

/* A problem (verify/ar_case.h) with a name. */
typedef struct test_case {
    const char *name;
    ar_case_spec s;
} test_case;

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One chain (ar_case_run); a failed call is a check failure. */
static void run_chain(const ar_case *d, const char *name, attnops_impl impl, int threads, ar_chain *r)
{
    const attnops_status st = ar_case_run(d, impl, threads, r);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: impl %d failed: %d %s", name, (int)impl, (int)st, attnops_last_error());
}

static bool contiguous(const attnops_tensor *v)
{
    int64_t stride = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        if (v->shape[i] > 1 && v->strides[i] != stride) return false;
        stride *= v->shape[i];
    }
    return true;
}

/* t's elements as doubles (malloc'd); contiguous tensors in parallel. */
static double *to_f64(const tu_tensor *t)
{
    const int64_t n = tu_numel(&t->view), es = (int64_t)attnops_dtype_size(t->view.dtype);
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!contiguous(&t->view)) {
        tu_tensor_to_f64(t, x);
        return x;
    }
    const char *data = t->view.data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] = ao_load_f64(data + i * es, t->view.dtype);
    return x;
}

/* ---- (a) the reference against finite differences ---- */

/* B.1 for one token, written independently of the library, in long double. */
static void forward_ld(const ar_case_spec *c, int64_t L, const double *V, const double *w, const double *gamma,
                       long double *h, long double *r, long double *alpha)
{
    const int64_t D = c->D;
    long double z[AR_MAX_L], m = -INFINITY, sum = 0;
    for (int64_t l = 0; l < L; l++) {
        long double ss = 0, dot = 0;
        for (int64_t d = 0; d < D; d++) ss += (long double)V[l * D + d] * V[l * D + d];
        r[l] = c->rmsnorm ? sqrtl(ss / D + (long double)(float)c->eps) : 1;
        for (int64_t d = 0; d < D; d++) dot += w[d] * (V[l * D + d] / r[l] * (c->rmsnorm ? gamma[d] : 1));
        z[l] = (long double)(float)c->scale * dot;
        if (z[l] > m) m = z[l];
    }
    for (int64_t l = 0; l < L; l++) sum += alpha[l] = expl(z[l] - m);
    for (int64_t l = 0; l < L; l++) alpha[l] /= sum;
    for (int64_t d = 0; d < D; d++) {
        h[d] = 0;
        for (int64_t l = 0; l < L; l++) h[d] += alpha[l] * V[l * D + d];
    }
}

/* Token (b, t)'s rows of the data as doubles [L][D]. */
static void token_rows(const ar_case *d, double *const *all, int64_t b, int64_t t, double *V)
{
    const int64_t D = d->spec.D;
    for (int64_t l = 0; l < d->L; l++) memcpy(V + l * D, all[l] + (b * d->spec.T + t) * D, (size_t)D * sizeof(double));
}

/* sum_d gh[d] h[d] of one token through the reference's own forward ((a)'s D <= 64). */
static double token_loss(const ar_problem *p, const double *w, const double *gamma, const double *V, const double *gh)
{
    double h[64], r[AR_MAX_L], alpha[AR_MAX_L], loss = 0.0;
    ar_ref_token_forward(p, w, gamma, V, h, r, alpha);
    for (int64_t d = 0; d < p->D; d++) loss += gh[d] * h[d];
    return loss;
}

/* What a central difference perturbs and evaluates: token_loss over V, w,
 * gamma and grad_h, one of which holds the perturbed element. */
typedef struct fd_ctx {
    const ar_problem *p;
    const double *w, *gamma, *V, *gh;
} fd_ctx;

/* d loss / d x[i] by a central difference (x[i] restored afterwards). */
static double central(double *x, int64_t i, const fd_ctx *f)
{
    const double x0 = x[i], step = 1e-5 * (1.0 + fabs(x0));
    x[i] = x0 + step;
    const double plus = token_loss(f->p, f->w, f->gamma, f->V, f->gh);
    x[i] = x0 - step;
    const double minus = token_loss(f->p, f->w, f->gamma, f->V, f->gh);
    x[i] = x0;
    return (plus - minus) / (2.0 * step);
}

static bool check_close(const char *label, const double *a, const double *e, int64_t n, double rtol, double atol_rel)
{
    const tu_tolerance tol = {rtol, atol_rel * tu_max_abs(e, n)};
    return tu_compare(label, a, e, n, tol, NULL, 0, NULL).pass;
}

static bool check_reference_gradients(const test_case *tc, uint64_t seed)
{
    const ar_case_spec *c = &tc->s;
    ar_case d;
    ar_chain r;
    ar_case_init(&d, c, seed);
    run_chain(&d, tc->name, ATTNOPS_IMPL_REFERENCE, 0, &r);
    const int64_t B = c->B, T = c->T, D = c->D, L = d.L, tokens = B * T;
    double *all[AR_MAX_L], *gh = to_f64(&d.grad_h), *w = to_f64(&d.w), *gamma = to_f64(&d.gamma);
    for (int64_t l = 0; l < L; l++) all[l] = to_f64(&d.v[l]);
    ar_problem p;
    memset(&p, 0, sizeof p);
    p.L = L, p.D = D, p.rmsnorm = c->rmsnorm, p.eps = (float)c->eps, p.scale = (float)c->scale;

    /* forward: h, rms and alpha each one rounding (to f32) from the exact values */
    double *V = malloc((size_t)(L * D) * sizeof(double)), *want_h = malloc((size_t)(tokens * D) * sizeof(double));
    double *want_r = malloc((size_t)(tokens * L) * sizeof(double)), *want_a = malloc((size_t)(tokens * L) * sizeof(double));
    for (int64_t tok = 0; tok < tokens; tok++) {
        long double h[64], rr[AR_MAX_L], al[AR_MAX_L];
        token_rows(&d, all, tok / T, tok % T, V);
        forward_ld(c, L, V, w, gamma, h, rr, al);
        for (int64_t x = 0; x < D; x++) want_h[tok * D + x] = (double)h[x];
        for (int64_t l = 0; l < L; l++) want_r[tok * L + l] = (double)rr[l], want_a[tok * L + l] = (double)al[l];
    }
    double *got_h = to_f64(&r.h), *got_a = to_f64(&r.alpha), *got_r = c->rmsnorm ? to_f64(&r.rms) : NULL;
    char label[160];
    bool ok = true;
    snprintf(label, sizeof label, "%s reference h", tc->name);
    ok &= check_close(label, got_h, want_h, tokens * D, 0x1p-24 + 1e-12, 1e-12);
    snprintf(label, sizeof label, "%s reference alpha", tc->name);
    ok &= check_close(label, got_a, want_a, tokens * L, 0x1p-24 + 1e-12, 1e-12);
    if (c->rmsnorm) {
        snprintf(label, sizeof label, "%s reference rms", tc->name);
        ok &= check_close(label, got_r, want_r, tokens * L, 0x1p-24 + 1e-12, 1e-12);
    }

    /* backward: every input's gradient against central differences of
     * L = sum gh . h; the API's gradients are f32 and come from f32 caches,
     * hence the 1e-6 tolerances */
    double *fd = malloc((size_t)(tokens * D) * sizeof(double)), fdw[64] = {0}, fdg[64] = {0};
    for (int64_t l = 0; l < L; l++) {
        for (int64_t tok = 0; tok < tokens; tok++) {
            token_rows(&d, all, tok / T, tok % T, V);
            const fd_ctx f = {&p, w, gamma, V, gh + tok * D};
            for (int64_t x = 0; x < D; x++) fd[tok * D + x] = central(V, l * D + x, &f);
        }
        double *got = to_f64(&r.dv[l]);
        snprintf(label, sizeof label, "%s reference grad of row %lld vs finite differences", tc->name, (long long)l);
        ok &= check_close(label, got, fd, tokens * D, 1e-6, 1e-6);
        free(got);
    }
    for (int64_t tok = 0; tok < tokens; tok++) {
        token_rows(&d, all, tok / T, tok % T, V);
        const fd_ctx f = {&p, w, gamma, V, gh + tok * D};
        for (int64_t x = 0; x < D; x++) {
            fdw[x] += central(w, x, &f);
            if (c->rmsnorm) fdg[x] += central(gamma, x, &f);
        }
    }
    double *got_w = to_f64(&r.dw);
    snprintf(label, sizeof label, "%s reference grad_proj_weight vs finite differences", tc->name);
    ok &= check_close(label, got_w, fdw, D, 1e-6, 1e-6);
    free(got_w);
    if (c->rmsnorm) {
        double *got_g = to_f64(&r.dgamma);
        snprintf(label, sizeof label, "%s reference grad_rmsnorm_gamma vs finite differences", tc->name);
        ok &= check_close(label, got_g, fdg, D, 1e-6, 1e-6);
        free(got_g);
    }

    free(fd), free(V), free(want_h), free(want_r), free(want_a), free(got_h), free(got_a), free(got_r);
    for (int64_t l = 0; l < L; l++) free(all[l]);
    free(gh), free(w), free(gamma);
    ar_chain_free(&r);
    ar_case_free(&d);
    TU_CHECK(ok, "(a) %s: the reference disagrees with B.1 or with finite differences", tc->name);
    return ok;
}

/* ---- (b) the fast kernel against the reference ---- */

/* Distance in units in the last place between two values of one dtype
 * (raw bits; f32, f16, bf16). */
static int64_t ulp_distance(const void *a, const void *b, attnops_dtype dt)
{
    if (dt == F32) {
        int32_t x, y;
        memcpy(&x, a, 4), memcpy(&y, b, 4);
        const int64_t kx = x < 0 ? -(int64_t)(x & 0x7fffffff) : x, ky = y < 0 ? -(int64_t)(y & 0x7fffffff) : y;
        return llabs(kx - ky);
    }
    uint16_t x, y;
    memcpy(&x, a, 2), memcpy(&y, b, 2);
    const int64_t kx = x & 0x8000 ? -(int64_t)(x & 0x7fff) : x, ky = y & 0x8000 ? -(int64_t)(y & 0x7fff) : y;
    return llabs(kx - ky);
}

/* Closeness of fast to reference over one kind of output, for the report:
 * bit-identical and within-one-ulp shares, and the largest |a - e| relative
 * to the tensor's largest |e| (elements far below it can differ by many
 * ulps after cancellation and still be within the tolerance). */
typedef struct closeness {
    int64_t n, same, one_ulp;
    double max_err;
} closeness;

static void measure(closeness *m, const tu_tensor *a, const tu_tensor *e, const double *ax, const double *ex)
{
    const int64_t n = tu_numel(&a->view), es = (int64_t)attnops_dtype_size(a->view.dtype);
    const double scale = tu_max_abs(ex, n);
    int64_t same = 0, one = 0;
    double worst = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : same, one) reduction(max : worst)
    for (int64_t i = 0; i < n; i++) {
        const int64_t u = ulp_distance((const char *)a->view.data + i * es, (const char *)e->view.data + i * es,
                                       a->view.dtype);
        same += u == 0, one += u <= 1;
        const double err = fabs(ax[i] - ex[i]) / (scale > 0 ? scale : 1.0);
        if (err > worst) worst = err;
    }
    m->n += n, m->same += same, m->one_ulp += one;
    if (worst > m->max_err) m->max_err = worst;
}

enum { C_H, C_CACHE, C_GRAD, C_PARAM, C_KINDS };
static const char *const KIND_NAME[C_KINDS] = {"h", "rms/alpha caches (f32)", "block gradients", "dw/dgamma"};
static closeness g_close[3][C_KINDS]; /* [dtype: 0 f32, 1 f16, 2 bf16][kind] */

static int dtype_slot(attnops_dtype dt) { return dt == F32 ? 0 : dt == F16 ? 1 : 2; }

static void print_closeness(void)
{
    static const char *const DT[3] = {"f32", "f16", "bf16"};
    for (int dt = 0; dt < 3; dt++)
        for (int kind = 0; kind < C_KINDS; kind++) {
            const closeness *m = &g_close[dt][kind];
            if (m->n)
                printf("    %-4s %-23s %7.3f%% bit-identical, %7.3f%% within 1 ulp, max |a-e| / max|e| %.2g\n",
                       DT[dt], KIND_NAME[kind], 100.0 * (double)m->same / (double)m->n,
                       100.0 * (double)m->one_ulp / (double)m->n, m->max_err);
        }
}

static bool fast_vs_reference(const test_case *tc, uint64_t seed)
{
    const ar_case_spec *c = &tc->s;
    ar_case d;
    ar_chain ref, fast;
    ar_case_init(&d, c, seed);
    const double t0 = seconds();
    run_chain(&d, tc->name, ATTNOPS_IMPL_REFERENCE, 0, &ref);
    const double t1 = seconds();
    run_chain(&d, tc->name, ATTNOPS_IMPL_CPU, 0, &fast);
    const double t2 = seconds();
    ar_output oe[AR_CASE_MAX_OUTPUTS], oa[AR_CASE_MAX_OUTPUTS];
    int seed_n;
    const int n = ar_chain_outputs(&d, &ref, oe, &seed_n);
    ar_chain_outputs(&d, &fast, oa, &seed_n);
    bool ok = true;
    int64_t same = 0, total = 0;
    for (int i = 0; i < n; i++) {
        const tu_tensor *const e_t = oe[i].t, *const a_t = oa[i].t;
        const bool cache = e_t == &ref.rms || e_t == &ref.alpha, param = e_t == &ref.dw || e_t == &ref.dgamma;
        const int kind = e_t == &ref.h ? C_H : cache ? C_CACHE : param ? C_PARAM : C_GRAD;
        const int64_t K = param ? c->B * c->T * d.L : cache ? c->D : (c->D > d.L ? c->D : d.L);
        const int64_t count = tu_numel(&e_t->view);
        double *a = to_f64(a_t), *e = to_f64(e_t);
        const tu_tolerance tol = tu_attention_tolerance(e_t->view.dtype, F32, K, tu_max_abs(e, count));
        char label[160];
        snprintf(label, sizeof label, "%.100s %.50s", tc->name, oe[i].name);
        ok &= tu_compare(label, a, e, count, tol, e_t->view.shape, e_t->view.rank, NULL).pass;
        closeness *g = &g_close[dtype_slot(c->dtype)][kind];
        const int64_t before = g->same;
        measure(g, a_t, e_t, a, e);
        same += g->same - before, total += count;
        free(a), free(e);
    }
    printf("(b) %-34s %s  %5.1f%% of %lld values bit-identical  (reference %.2fs, fast %.3fs)\n", tc->name,
           ok ? "ok  " : "FAIL", 100.0 * (double)same / (double)total, (long long)total, t1 - t0, t2 - t1);
    ar_chain_free(&ref);
    ar_chain_free(&fast);
    ar_case_free(&d);
    TU_CHECK(ok, "(b) %s: the fast kernel is outside the tolerance", tc->name);
    return ok;
}

/* ---- (c) the seed's triple rule ---- */

/* kernel, benchmark and golden of one output by the seed's rule, with the
 * fp32 thresholds; prints the seed's line. */
static bool triple(const char *label, const tu_tensor *k, const tu_tensor *bm, const tu_tensor *g, bool print)
{
    double *kx = to_f64(k), *bx = to_f64(bm), *gx = to_f64(g);
    const cmp_options o = {.rule = CMP_TRIPLE, .dtype = F32};
    const cmp_verdict v = cmp_compare(&o, kx, gx, bx, tu_numel(&g->view));
    if (print || !v.pass) cmp_print(stdout, label, &v, kx, gx, g->view.shape, g->view.rank);
    free(kx), free(bx), free(gx);
    return v.pass;
}

static bool seed_case(const test_case *tc, uint64_t seed)
{
    const ar_case_spec *c = &tc->s;
    ar_case d;
    ar_chain kernel, bench, golden;
    ar_case_init(&d, c, seed);
    const double t0 = seconds();
    run_chain(&d, tc->name, ATTNOPS_IMPL_CPU, 0, &kernel);
    const double t1 = seconds();
    run_chain(&d, tc->name, ATTNOPS_IMPL_BENCHMARK, 0, &bench);
    const double t2 = seconds();
    run_chain(&d, tc->name, ATTNOPS_IMPL_REFERENCE, 0, &golden);
    const double t3 = seconds();
    printf("(c) %s: kernel %.2fs, benchmark %.2fs, golden %.2fs\n", tc->name, t1 - t0, t2 - t1, t3 - t2);
    ar_output ko[AR_CASE_MAX_OUTPUTS], bo[AR_CASE_MAX_OUTPUTS], go[AR_CASE_MAX_OUTPUTS];
    int seed_n;
    const int n = ar_chain_outputs(&d, &kernel, ko, &seed_n);
    ar_chain_outputs(&d, &bench, bo, &seed_n);
    ar_chain_outputs(&d, &golden, go, &seed_n);
    bool ok = true;
    int blocks_passed = 0;
    for (int i = 0; i < n; i++) {
        const bool extra = i >= seed_n; /* printed only when it fails */
        char label[160];
        snprintf(label, sizeof label, "%.100s %.50s", tc->name, go[i].name);
        const bool pass = triple(label, ko[i].t, bo[i].t, go[i].t, !extra);
        ok &= pass;
        blocks_passed += extra && pass;
    }
    printf("    %s: grad_block_01..%02d all by the triple rule: %d of %lld PASS\n", tc->name, (int)(c->N - 1),
           blocks_passed, (long long)(c->N - 1));
    ar_chain_free(&kernel);
    ar_chain_free(&bench);
    ar_chain_free(&golden);
    ar_case_free(&d);
    TU_CHECK(ok, "(c) %s: the seed's triple rule fails", tc->name);
    return ok;
}

/* ---- (d) thread counts and layouts ---- */

/* Two chains with bitwise equal values, output by output (ar_case_run
 * checks the canaries). */
static bool same_results(const ar_case *d, ar_chain *a, ar_chain *b, const char *what)
{
    ar_output oa[AR_CASE_MAX_OUTPUTS], ob[AR_CASE_MAX_OUTPUTS];
    int seed_n;
    const int n = ar_chain_outputs(d, a, oa, &seed_n);
    ar_chain_outputs(d, b, ob, &seed_n);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        double *x = to_f64(oa[i].t), *y = to_f64(ob[i].t);
        const bool same = memcmp(x, y, (size_t)tu_numel(&oa[i].t->view) * sizeof(double)) == 0;
        TU_CHECK(same, "(d) %s: %s differs", what, oa[i].name);
        ok &= same;
        free(x), free(y);
    }
    return ok;
}

static bool check_determinism(void)
{
    /* 300 tokens: 38 chunks of 8, which 1, 2 and 3 threads split differently; D not a multiple of 16 */
    const ar_case_spec c = {.dtype = BF16, .B = 3, .T = 100, .N = 6, .D = 200, .partial = true, .rmsnorm = true,
                            .random_gamma = true, .scale = 0.9, .eps = 1e-6};
    ar_case_spec strided = c;
    strided.strided = true;
    ar_case d, s;
    ar_case_init(&d, &c, tu_suite_seed() + 77);
    ar_case_init(&s, &strided, tu_suite_seed() + 77);
    bool ok = true;
    const attnops_impl impls[2] = {ATTNOPS_IMPL_CPU, ATTNOPS_IMPL_REFERENCE};
    for (int k = 0; k < 2; k++) {
        ar_chain one, other;
        char what[64];
        run_chain(&d, "determinism_bf16", impls[k], 1, &one);
        for (int threads = 2; threads <= 3; threads++) {
            snprintf(what, sizeof what, "impl %d, %d threads vs 1", (int)impls[k], threads);
            run_chain(&d, "determinism_bf16", impls[k], threads, &other);
            ok &= same_results(&d, &one, &other, what);
            ar_chain_free(&other);
        }
        snprintf(what, sizeof what, "impl %d, strided views vs contiguous", (int)impls[k]);
        run_chain(&s, "determinism_bf16 strided", impls[k], 2, &other);
        ok &= same_results(&d, &one, &other, what);
        ar_chain_free(&other);
        ar_chain_free(&one);
    }
    ar_case_free(&s);
    ar_case_free(&d);
    printf("(d) 1, 2, 3 threads and strided views: %s\n", ok ? "bitwise identical" : "FAIL");
    return ok;
}

/* ---- (e) the checks can fail ---- */

static bool check_mutations(void)
{
    const ar_case_spec c = {.dtype = BF16, .B = 1, .T = 64, .N = 5, .D = 512, .partial = true, .rmsnorm = true,
                            .scale = 1.0, .eps = 1e-6};
    ar_case d;
    ar_chain kernel, bench, golden;
    ar_case_init(&d, &c, tu_suite_seed() + 99);
    run_chain(&d, "mutation_bf16", ATTNOPS_IMPL_CPU, 0, &kernel);
    run_chain(&d, "mutation_bf16", ATTNOPS_IMPL_BENCHMARK, 0, &bench);
    run_chain(&d, "mutation_bf16", ATTNOPS_IMPL_REFERENCE, 0, &golden);
    bool ok = true;
    fprintf(stderr, "(e) mutation proof: the FAIL and MISMATCH lines that follow are intended\n");

    /* (b)'s check against a golden with one gradient element moved by 3 tolerances */
    const int64_t n = tu_numel(&golden.dv[2].view), at = n / 3;
    double *a = to_f64(&kernel.dv[2]), *e = to_f64(&golden.dv[2]);
    const tu_tolerance tol = tu_attention_tolerance(BF16, F32, c.D, tu_max_abs(e, n));
    TU_CHECK(tu_compare("unmutated grad_blocks[2]", a, e, n, tol, NULL, 0, NULL).pass, "(e) the unmutated check fails");
    e[at] += 3.0 * (tol.atol + tol.rtol * fabs(e[at]));
    const bool caught_tol = !tu_compare("mutated golden grad_blocks[2]", a, e, n, tol, NULL, 0, NULL).pass;
    TU_CHECK(caught_tol, "(e) a golden off by 3 tolerances at one element passes the tolerance check");
    free(a), free(e);

    /* the triple rule: the true kernel passes; a kernel 1/64 off everywhere
     * (a mis-scaled gradient) and one writing the wrong block's gradient fail */
    TU_CHECK(triple("unmutated grad_blocks[2]", &kernel.dv[2], &bench.dv[2], &golden.dv[2], false),
             "(e) the unmutated kernel fails the triple rule");
    double *k = to_f64(&kernel.dv[2]);
    for (int64_t i = 0; i < n; i++) k[i] *= 1.0 + 1.0 / 64;
    tu_tensor_from_f64(&kernel.dv[2], k);
    free(k);
    const bool caught_scale = !triple("mutated kernel grad_blocks[2] * (1 + 1/64)", &kernel.dv[2], &bench.dv[2],
                                      &golden.dv[2], true);
    TU_CHECK(caught_scale, "(e) a kernel gradient 1/64 off passes the triple rule");
    const bool caught_swap = !triple("kernel writing block 3's gradient as grad_blocks[1]", &kernel.dv[3],
                                     &bench.dv[1], &golden.dv[1], true);
    TU_CHECK(caught_swap, "(e) a kernel writing the wrong block's gradient passes the triple rule");
    ok = caught_tol && caught_scale && caught_swap;
    ar_chain_free(&kernel);
    ar_chain_free(&bench);
    ar_chain_free(&golden);
    ar_case_free(&d);
    printf("(e) mutations caught: %s\n", ok ? "all three" : "NOT ALL");
    return ok;
}

/* ---- the cases ---- */

/* name, dtype, B, T, N, D, partial block, RMSNorm, random gamma, scale; eps 1e-6 */
#define AR(name, dt, b, t, n, d, part, rms, rgamma, sc)                                                           \
    {name, {.dtype = dt, .B = b, .T = t, .N = n, .D = d, .partial = part, .rmsnorm = rms, .random_gamma = rgamma,  \
            .scale = sc, .eps = 1e-6}}

/* (a): f32, small, every path. */
static const test_case FD_CASES[] = {
    AR("fd_rms_partial", F32, 2, 3, 3, 16, true, true, true, 1.0),
    AR("fd_rms_no_partial_scale", F32, 1, 3, 4, 12, false, true, true, 1.7),
    AR("fd_no_rms_partial_scale", F32, 2, 2, 3, 8, true, false, false, -0.8),
    AR("fd_no_rms_no_partial", F32, 1, 2, 5, 9, false, false, false, 2.5),
    AR("fd_rms_d1", F32, 1, 2, 2, 1, true, true, true, 1.3),
};

/* (b): the stated range (dtype f16/bf16, N 1..127, B 1..8, T 1..32K, D in
 * the six sizes), sampled so each value of each axis appears. */
static const test_case FAST_SMALL[] = {
    AR("b1_t17_n127_d1536_bf16_rms_partial", BF16, 1, 17, 127, 1536, true, true, true, 1.0),
    AR("b8_t1_n32_d5120_f16_scale", F16, 8, 1, 32, 5120, false, false, false, 0.5),
    AR("b1_t1_n127_d6144_f16_rms", F16, 1, 1, 127, 6144, false, true, false, 2.0),
    AR("b5_t1_n63_d2048_bf16_partial", BF16, 5, 1, 63, 2048, true, false, false, -1.5),
    AR("b3_t17_n31_d2560_bf16_scale", BF16, 3, 17, 31, 2560, false, false, false, 0.25),
    AR("b1_t17_n31_d4096_f32_rms_partial", F32, 1, 17, 31, 4096, true, true, true, 1.5),
    AR("b1_t1_n1_d1536_bf16", BF16, 1, 1, 1, 1536, false, false, false, 1.0),
};
static const test_case FAST_LARGE[] = {
    AR("b2_t17_n63_d6144_f16_rms_scale", F16, 2, 17, 63, 6144, false, true, true, 0.7),
    AR("b4_t1023_n1_d2048_f16_partial", F16, 4, 1023, 1, 2048, true, false, false, 3.0),
    AR("b2_t1023_n2_d4096_bf16_scale", BF16, 2, 1023, 2, 4096, false, false, false, 1.25),
    AR("b1_t1023_n2_d5120_bf16_rms", BF16, 1, 1023, 2, 5120, false, true, false, 0.8),
    AR("b1_t32768_n2_d1536_bf16_scale", BF16, 1, 32768, 2, 1536, false, false, false, 2.0),
};

/* (c): the seed's two cases (bf16, RMSNorm, partial block, scale 1). */
static const test_case SEED_CASES[] = {
    AR("b2_t4096_n25_d512_bf16", BF16, 2, 4096, 25, 512, true, true, false, 1.0),
    AR("b1_t1023_n32_d512_bf16", BF16, 1, 1023, 32, 512, true, true, false, 1.0),
};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))
#define SEED_DATA_SEED 42 /* the seed's torch.manual_seed */

static bool same_spec(const ar_case_spec *a, const ar_case_spec *b)
{
    return a->dtype == b->dtype && a->B == b->B && a->T == b->T && a->N == b->N && a->D == b->D &&
           a->partial == b->partial && a->rmsnorm == b->rmsnorm && a->random_gamma == b->random_gamma &&
           a->scale == b->scale && a->eps == b->eps && a->strided == b->strided;
}

/* The harness's attnres-seed suite (verify/suites/attnres_seed.json) is
 * (c)'s two cases, in order, with (c)'s data seed and the triple rule. */
static bool check_suite(const char *path)
{
    char err[512];
    char *text = harness_read_text(path, err, sizeof err);
    harness_case *cases = NULL;
    const int n = text ? harness_parse_cases(text, path, &cases, err, sizeof err) : -1;
    bool ok = n == COUNT(SEED_CASES);
    TU_CHECK(ok, "suite %s: %d cases (%s)", path, n, n < 0 ? err : "");
    for (int i = 0; ok && i < n; i++) {
        const bool same = cases[i].op == HARNESS_OP_ATTNRES && !strcmp(cases[i].name, SEED_CASES[i].name) &&
                          same_spec(&cases[i].ar, &SEED_CASES[i].s) && cases[i].data_seed == SEED_DATA_SEED &&
                          cases[i].rule == CMP_TRIPLE;
        TU_CHECK(same, "suite %s: case %d is not the seed's %s", path, i, SEED_CASES[i].name);
        ok &= same;
    }
    printf("attnres-seed suite %s: %s\n", path, ok ? "the seed's two cases" : "FAIL");
    free(cases);
    free(text);
    return ok;
}

int main(int argc, char **argv)
{
    tu_require_isa();
    bool quick = false;
    const char *suite = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else suite = argv[i];
    }
    const uint64_t seed = tu_suite_seed();
    const double start = seconds();
    int passed = 0;
    printf("test_attnres: ISA %s, seed %llu%s\n", attnops_cpu_isa(), (unsigned long long)seed,
           quick ? ", quick" : "");
    if (suite) passed += check_suite(suite);

    int fd_ok = 0;
    for (int i = 0; i < COUNT(FD_CASES); i++) fd_ok += check_reference_gradients(&FD_CASES[i], seed + (uint64_t)i);
    printf("(a) reference forward vs B.1 and backward vs finite differences: %d of %d cases ok\n", fd_ok,
           COUNT(FD_CASES));
    passed += fd_ok;

    for (int i = 0; i < COUNT(FAST_SMALL); i++) passed += fast_vs_reference(&FAST_SMALL[i], seed + 10 + (uint64_t)i);
    for (int i = 0; !quick && i < COUNT(FAST_LARGE); i++)
        passed += fast_vs_reference(&FAST_LARGE[i], seed + 20 + (uint64_t)i);
    printf("(b) fast vs reference, by activation dtype and output (%.1fs):\n", seconds() - start);
    print_closeness();

    double t = seconds();
    for (int i = 0; !quick && i < COUNT(SEED_CASES); i++) passed += seed_case(&SEED_CASES[i], SEED_DATA_SEED);
    if (!quick) printf("(c) %.1fs\n", seconds() - t);
    passed += check_determinism();
    passed += check_mutations();
    printf("test_attnres: %.1fs in all\n", seconds() - start);
    return tu_finish("test_attnres", passed);
}
