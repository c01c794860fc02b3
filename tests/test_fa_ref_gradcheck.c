/* The reference backward against central finite differences of the
 * reference forward, in double, independent of the derived gradient
 * formulas (spec 1.1 / 1.2).
 *
 * Loss L(q, k, v) = sum(dY * O(q, k, v)) for a fixed random dY, so dL/dx is
 * exactly what fa_ref_backward_f64 returns for upstream gradient dY (given
 * the m, l and O that fa_ref_forward_f64 produced).  For every element x_i of
 * q, k and v:   g_fd = (L(x + h e_i) - L(x - h e_i)) / 2h,   h = 1e-5.
 *
 * The forward itself is first checked against the textbook softmax
 * (exp(s) / sum exp(s), no max subtraction; fine for these small scores), so
 * the loss the differences are taken of is the real attention.
 *
 * A final case perturbs the analytic dk by 1e-4 (relative) and asserts that
 * the same comparison flags it: the check can fail.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/fa_ref.h"
#include "testutil.h"
#include "suite.h"

#define H 1e-5
#define EPS 0x1p-53 /* unit roundoff of double */

typedef struct shape_case {
    const char *name;
    int64_t B, N1, N2, S1, S2, D, Dv;
    double scale;
} shape_case;

static const shape_case CASES[] = {
    {"gqa B1 N4/2 S3x5 D4 Dv3", 1, 4, 2, 3, 5, 4, 3, 0.5},
    {"mha B2 N2/2 S4x3 D5 Dv5", 2, 2, 2, 4, 3, 5, 5, 0.37},
};

typedef struct state {
    fa_problem p;
    int64_t nq, nk, nv, no, nrow;
    double *q, *k, *v, *dy, *o, *m, *l, *dq, *dk, *dv, *scratch;
    double *o_tmp, *m_tmp, *l_tmp;
} state;

static double *alloc_randn(int64_t n, tu_rng *r)
{
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    if (r)
        for (int64_t i = 0; i < n; i++) x[i] = tu_randn(r);
    return x;
}

static void state_init(state *s, const shape_case *c, tu_rng *r)
{
    memset(s, 0, sizeof *s);
    fa_problem *p = &s->p;
    p->op = "gradcheck";
    p->B = c->B, p->N1 = c->N1, p->N2 = c->N2, p->G = c->N1 / c->N2;
    p->S1 = c->S1, p->S2 = c->S2, p->D = c->D, p->Dv = c->Dv;
    p->T1 = c->B * c->S1, p->T2 = c->B * c->S2; /* canonical arrays: every batch's rows stacked */
    p->scale = c->scale;
    p->keep_prob = 1.0; /* no dropout */
    p->dtype = ATTNOPS_DTYPE_F32; /* unused by the double cores */
    p->impl = ATTNOPS_IMPL_REFERENCE;
    p->threads = p->team = 1;
    s->nrow = p->B * p->N1 * p->S1;
    s->nq = s->nrow * p->D;
    s->nk = p->B * p->N2 * p->S2 * p->D;
    s->nv = p->B * p->N2 * p->S2 * p->Dv;
    s->no = s->nrow * p->Dv;
    s->q = alloc_randn(s->nq, r);
    s->k = alloc_randn(s->nk, r);
    s->v = alloc_randn(s->nv, r);
    s->dy = alloc_randn(s->no, r);
    s->o = alloc_randn(s->no, NULL);
    s->m = alloc_randn(s->nrow, NULL);
    s->l = alloc_randn(s->nrow, NULL);
    s->o_tmp = alloc_randn(s->no, NULL);
    s->m_tmp = alloc_randn(s->nrow, NULL);
    s->l_tmp = alloc_randn(s->nrow, NULL);
    s->dq = alloc_randn(s->nq, NULL);
    s->dk = alloc_randn(s->nk, NULL);
    s->dv = alloc_randn(s->nv, NULL);
    const size_t fwd = fa_ref_scratch_doubles(p, false), bwd = fa_ref_scratch_doubles(p, true);
    s->scratch = alloc_randn((int64_t)(fwd > bwd ? fwd : bwd), NULL); /* one scratch serves both passes */
}

static void state_free(state *s)
{
    double *all[] = {s->q, s->k, s->v, s->dy, s->o, s->m, s->l, s->o_tmp, s->m_tmp, s->l_tmp,
                     s->dq, s->dk, s->dv, s->scratch};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* L = sum(dY * O) with the current q, k, v. */
static double loss(state *s)
{
    fa_ref_forward_f64(&s->p, s->q, s->k, s->v, s->o_tmp, s->m_tmp, s->l_tmp, s->scratch);
    double L = 0.0;
    for (int64_t i = 0; i < s->no; i++) L += s->dy[i] * s->o_tmp[i];
    return L;
}

static void central_differences(state *s, double *x, int64_t n, double *g)
{
    for (int64_t i = 0; i < n; i++) {
        const double x0 = x[i];
        x[i] = x0 + H;
        const double lp = loss(s);
        x[i] = x0 - H;
        const double lm = loss(s);
        x[i] = x0;
        /* (x0 + H) - (x0 - H) is 2H up to one rounding of each sum; use the
         * step actually taken so that representation error is not counted. */
        g[i] = (lp - lm) / ((x0 + H) - (x0 - H));
    }
}

/* The textbook forward for one problem: o, m, l. */
static void naive_forward(const state *s, double *o, double *m, double *l)
{
    const fa_problem *p = &s->p;
    if (p->S2 > 16) abort(); /* the small shapes of this test only */
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->N1; h++)
            for (int64_t i = 0; i < p->S1; i++) {
                /* canonical arrays (fa_ref.h): [N][B*S], batch b's rows at b*S */
                const int64_t row = (h * p->B + b) * p->S1 + i, kv = (h / p->G) * p->B + b;
                double sc[16], mx = -INFINITY, den = 0.0;
                for (int64_t j = 0; j < p->S2; j++) {
                    double dot = 0.0;
                    for (int64_t d = 0; d < p->D; d++) dot += s->q[row * p->D + d] * s->k[(kv * p->S2 + j) * p->D + d];
                    sc[j] = p->scale * dot;
                    mx = fmax(mx, sc[j]);
                    den += exp(sc[j]);
                }
                for (int64_t e = 0; e < p->Dv; e++) {
                    double num = 0.0;
                    for (int64_t j = 0; j < p->S2; j++) num += exp(sc[j]) * s->v[(kv * p->S2 + j) * p->Dv + e];
                    o[row * p->Dv + e] = num / den;
                }
                m[row] = mx;
                l[row] = den / exp(mx);
            }
}

static double max_abs(const double *x, int64_t n) { return tu_max_abs(x, n); }

static double sum_abs(const double *x, int64_t n)
{
    double t = 0.0;
    for (int64_t i = 0; i < n; i++) t += fabs(x[i]);
    return t;
}

/* The tolerance for |g_analytic - g_fd|, the same for q, k and v.
 *
 * Central difference: (L(x+h) - L(x-h)) / 2h = L'(x) + (h^2/6) L'''(xi), so
 *   truncation <= (h^2 / 6) M3,   M3 = max |d^3 L / dx^3| near x.
 * Bounding M3: L = sum_r dY_r . O_r and O_r = E_P[v] with P = softmax(s_r).
 * Moving one input x by t moves the scores of a row linearly, s_j + t a_j,
 * with |a_j| <= A = scale * max(|q|, |k|) (x in q: a_j = scale k_jd; x in
 * k: a_j = scale q_rd for one j, 0 otherwise).  For f = v[., e] under P(t):
 *   d^3/dt^3 E[f] = E[(f - Ef)(a - Ea)^3] - 3 Var(a) Cov(f, a)
 * and |f - Ef| <= 2V, |a - Ea| <= 2A, Var(a) <= A^2, |Cov| <= V A give
 *   |d^3 O_re / dt^3| <= 16 V A^3 + 3 V A^3 = 19 V A^3,   V = max |v|.
 * Summing over all rows the perturbation can reach (at most all of them):
 *   M3 <= 19 V A^3 ||dY||_1.   (For x in v, L is linear: M3 = 0.)
 *
 * Cancellation: each evaluation of L carries an absolute rounding error
 * delta; the difference quotient then carries delta / h.  O_re is a convex
 * combination of v (|O| <= V), its scores have error <= D eps scale |q||k|
 * which moves P relatively by as much, and each of the exp, normalisation,
 * S2-term sums and the final ||dY||_1-weighted sum over n_o terms adds a few
 * eps, so
 *   delta <= eps V ||dY||_1 (2 D A max(|q|,|k|) + 4 (S2 + Dv) + n_o).
 * The analytic side is a double computation of the same size (~ eps), far
 * below both terms.  The check uses twice the sum of the two bounds:
 *   atol = 2 ((h^2/6) M3 + delta / h).
 * With the shapes here this is ~1e-7, while the gradients are O(1): an error
 * of 1e-4 relative in any sizeable component is far outside it (asserted
 * below, so the bite case cannot pass by luck). */
static double fd_tolerance(const state *s)
{
    const fa_problem *p = &s->p;
    const double xmax = fmax(max_abs(s->q, s->nq), max_abs(s->k, s->nk));
    const double A = p->scale * xmax, V = max_abs(s->v, s->nv), dy1 = sum_abs(s->dy, s->no);
    const double M3 = 19.0 * V * A * A * A * dy1;
    const double delta = EPS * V * dy1 * (2.0 * (double)p->D * A * xmax + 4.0 * (double)(p->S2 + p->Dv) + (double)s->no);
    return 2.0 * (H * H / 6.0 * M3 + delta / H);
}

static int check_case(const shape_case *c, uint64_t seed)
{
    int passed = 0;
    char label[160], repro[160];
    tu_rng rng = tu_rng_make(seed);
    state s;
    state_init(&s, c, &rng);
    const fa_problem *p = &s.p;
    snprintf(repro, sizeof repro, "ATTNOPS_TEST_SEED=%llu ./fa_ref_gradcheck  (case '%s')",
             (unsigned long long)tu_suite_seed(), c->name);

    /* 1. the forward is the softmax attention */
    fa_ref_forward_f64(p, s.q, s.k, s.v, s.o, s.m, s.l, s.scratch);
    double *o_n = malloc((size_t)s.no * sizeof *o_n), *m_n = malloc((size_t)s.nrow * sizeof *m_n),
           *l_n = malloc((size_t)s.nrow * sizeof *l_n);
    naive_forward(&s, o_n, m_n, l_n);
    /* two double evaluations of the same O(S2 + D)-term expressions */
    const tu_tolerance tight = {1e-12, 1e-13};
    const int64_t orow_shape[4] = {p->B, p->N1, p->S1, p->Dv}, row_shape[3] = {p->B, p->N1, p->S1};
    struct { const char *what; const double *got, *want; int64_t n; const int64_t *shape; int rank; } fwd[] = {
        {"O", s.o, o_n, s.no, orow_shape, 4}, {"m (row max)", s.m, m_n, s.nrow, row_shape, 3},
        {"l (row sum)", s.l, l_n, s.nrow, row_shape, 3}};
    for (int i = 0; i < 3; i++) {
        snprintf(label, sizeof label, "%s: forward %s vs textbook softmax", c->name, fwd[i].what);
        tu_compare_result r = tu_compare(label, fwd[i].got, fwd[i].want, fwd[i].n, tight, fwd[i].shape, fwd[i].rank,
                                         repro);
        TU_CHECK(r.pass, "%s: the reference forward's %s is not the softmax attention", c->name, fwd[i].what);
        passed += r.pass;
    }
    free(o_n), free(m_n), free(l_n);

    /* 2. analytic gradients from the forward's own m, l and O */
    fa_ref_backward_f64(p, s.q, s.k, s.v, s.o, s.dy, s.m, s.l, s.dq, s.dk, s.dv, s.scratch);

    /* 3. central differences of L for every element of q, k, v */
    double *fq = malloc((size_t)s.nq * sizeof *fq), *fk = malloc((size_t)s.nk * sizeof *fk),
           *fv = malloc((size_t)s.nv * sizeof *fv);
    const double L0 = loss(&s);
    central_differences(&s, s.q, s.nq, fq);
    central_differences(&s, s.k, s.nk, fk);
    central_differences(&s, s.v, s.nv, fv);
    TU_CHECK(loss(&s) == L0, "%s: inputs not restored after the differences", c->name);

    const double atol = fd_tolerance(&s);
    const tu_tolerance tol = {0.0, atol};
    const int64_t q_shape[4] = {p->B, p->N1, p->S1, p->D}, k_shape[4] = {p->B, p->N2, p->S2, p->D},
                  v_shape[4] = {p->B, p->N2, p->S2, p->Dv};
    struct { const char *name; const double *a, *f; int64_t n; const int64_t *shape; } grads[] = {
        {"dq", s.dq, fq, s.nq, q_shape}, {"dk", s.dk, fk, s.nk, k_shape}, {"dv", s.dv, fv, s.nv, v_shape}};
    for (int i = 0; i < 3; i++) {
        snprintf(label, sizeof label, "%s: %s analytic vs central difference", c->name, grads[i].name);
        tu_compare_result r = tu_compare(label, grads[i].a, grads[i].f, grads[i].n, tol, grads[i].shape, 4, repro);
        TU_CHECK(r.pass, "%s: %s disagrees with the finite differences", c->name, grads[i].name);
        TU_CHECK(tu_max_abs(grads[i].a, grads[i].n) > 1e3 * atol, "%s: %s is too small (max %.3g) for tolerance %.3g",
                 c->name, grads[i].name, tu_max_abs(grads[i].a, grads[i].n), atol);
        printf("%-26s %s: max |analytic - fd| = %.3g (tolerance %.3g, max |g| = %.3g)\n", c->name, grads[i].name,
               r.max_abs, atol, tu_max_abs(grads[i].a, grads[i].n));
        passed += r.pass;
    }

    /* 4. the check bites: dk off by 1e-4 relative must be flagged */
    const double rel = 1e-4;
    TU_CHECK(rel * tu_max_abs(s.dk, s.nk) > 4.0 * atol,
             "%s: a %.0e perturbation of dk (max %.3g) would not clearly exceed the tolerance %.3g", c->name, rel,
             tu_max_abs(s.dk, s.nk), atol);
    double *dk_bad = malloc((size_t)s.nk * sizeof *dk_bad);
    for (int64_t i = 0; i < s.nk; i++) dk_bad[i] = s.dk[i] * (1.0 + rel);
    snprintf(label, sizeof label, "%s: dk * (1 + 1e-4) [expected mismatch: the check must bite]", c->name);
    tu_compare_result bad = tu_compare(label, dk_bad, fk, s.nk, tol, k_shape, 4, NULL);
    TU_CHECK(!bad.pass, "%s: a 1e-4 relative error in dk was not detected", c->name);
    passed += !bad.pass;
    free(dk_bad);

    free(fq), free(fk), free(fv);
    state_free(&s);
    return passed;
}

int main(void)
{
    int passed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) passed += check_case(&CASES[i], tu_suite_seed() + i);
    if (tu_failures) fprintf(stderr, "seed %llu (ATTNOPS_TEST_SEED)\n", (unsigned long long)tu_suite_seed());
    return tu_finish("fa_ref_gradcheck", passed);
}
