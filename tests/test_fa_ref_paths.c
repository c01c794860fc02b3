/* The golden's two element paths give the same bits.
 *
 * Without a mask, a pse, FP8 or chain rounding, fa_ref.c's forward and
 * backward run plain element loops (no call per score); otherwise the
 * general ones through score().  A pse tensor of zeros (one f32 0 read
 * through zero strides) takes the general path with the same operations --
 * pse_type 1: (raw + 0) * scale, else raw * scale + 0 -- so every double
 * output (O, m, l, dq, dk, dv) must be identical.  This is checked on the
 * double cores, where a one-ulp change shows (through f16 outputs it would
 * not), on shapes that cross the key chunks (128) and the forward's row
 * blocks, with GQA, for both pse orders and 1 and 2 threads.  A mutated
 * copy of the plain result (one ulp in one element) must be flagged, so
 * the comparison can fail.  (The added zero turns a -0 product into +0;
 * ref_dot never returns -0, so no data here tells that part apart.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref/fa_ref.h"
#include "testutil.h"
#include "suite.h"

typedef struct outputs {
    double *o, *m, *l, *dq, *dk, *dv;
} outputs;

typedef struct problem {
    fa_problem p;
    int64_t nq, nk, nv, no, nrow;
    double *q, *k, *v, *dy, *scratch;
} problem;

/* n doubles, standard normal when r is given (else left as malloc gives them). */
static double *doubles(int64_t n, tu_rng *r)
{
    double *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; r && i < n; i++) x[i] = tu_randn(r);
    return x;
}

static void problem_init(problem *s, int64_t B, int64_t N1, int64_t N2, int64_t S1, int64_t S2, int64_t D,
                         int64_t Dv, int64_t pse_type, int threads, tu_rng *r)
{
    memset(s, 0, sizeof *s);
    fa_problem *p = &s->p;
    p->op = "fa_ref_paths";
    p->B = B, p->N1 = N1, p->N2 = N2, p->G = N1 / N2, p->S1 = S1, p->S2 = S2, p->D = D, p->Dv = Dv;
    p->T1 = B * S1, p->T2 = B * S2;
    p->scale = 1.0 / sqrt((double)D);
    p->keep_prob = 1.0;
    p->dtype = p->out_dtype = ATTNOPS_DTYPE_F32;
    p->impl = ATTNOPS_IMPL_REFERENCE;
    p->threads = p->team = threads;
    p->pse.type = pse_type;
    s->nrow = B * N1 * S1, s->nq = s->nrow * D, s->no = s->nrow * Dv;
    s->nk = B * N2 * S2 * D, s->nv = B * N2 * S2 * Dv;
    s->q = doubles(s->nq, r), s->k = doubles(s->nk, r), s->v = doubles(s->nv, r), s->dy = doubles(s->no, r);
    const size_t fwd = fa_ref_scratch_doubles(p, false), bwd = fa_ref_scratch_doubles(p, true);
    s->scratch = doubles((int64_t)(fwd > bwd ? fwd : bwd), NULL);
}

static outputs run(const problem *s)
{
    outputs x = {doubles(s->no, NULL), doubles(s->nrow, NULL), doubles(s->nrow, NULL),
                 doubles(s->nq, NULL), doubles(s->nk, NULL), doubles(s->nv, NULL)};
    fa_ref_forward_f64(&s->p, s->q, s->k, s->v, x.o, x.m, x.l, s->scratch);
    fa_ref_backward_f64(&s->p, s->q, s->k, s->v, x.o, s->dy, x.m, x.l, x.dq, x.dk, x.dv, s->scratch);
    return x;
}

static void outputs_free(outputs *x)
{
    free(x->o), free(x->m), free(x->l), free(x->dq), free(x->dk), free(x->dv);
}

/* The first output whose bits differ, or NULL. */
static const char *first_difference(const problem *s, const outputs *a, const outputs *b)
{
    const struct { const char *name; const double *x, *y; int64_t n; } all[] = {
        {"attention_out", a->o, b->o, s->no}, {"softmax_max", a->m, b->m, s->nrow},
        {"softmax_sum", a->l, b->l, s->nrow}, {"dq", a->dq, b->dq, s->nq},
        {"dk", a->dk, b->dk, s->nk},          {"dv", a->dv, b->dv, s->nv}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (memcmp(all[i].x, all[i].y, (size_t)all[i].n * sizeof(double))) return all[i].name;
    return NULL;
}

int main(void)
{
    int passed = 0;
    static const float zero = 0.0f;
    const struct { int64_t B, N1, N2, S1, S2, D, Dv; } shapes[] = {
        {1, 2, 1, 300, 290, 24, 16}, /* GQA, three key chunks, two forward row blocks (256 + 44) */
        {2, 2, 2, 70, 129, 40, 40},  /* a one-key tail chunk */
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int64_t pse_type = 0; pse_type <= 1; pse_type++)
            for (int threads = 1; threads <= 2; threads++) {
                tu_rng r = tu_rng_make(tu_suite_seed() + 31 * k);
                problem s;
                problem_init(&s, shapes[k].B, shapes[k].N1, shapes[k].N2, shapes[k].S1, shapes[k].S2, shapes[k].D,
                             shapes[k].Dv, pse_type, threads, &r);
                outputs plain = run(&s);
                s.p.pse.kind = FA_PSE_TENSOR; /* zeros: the general path */
                s.p.pse.bias = (fa_view){(char *)&zero, ATTNOPS_DTYPE_F32, sizeof zero, 0, 0, 0, 0};
                outputs general = run(&s);
                const char *diff = first_difference(&s, &plain, &general);
                TU_CHECK(!diff, "shape %zu, pse_type %lld, %d threads: the plain path differs from the general one in %s "
                         "(ATTNOPS_TEST_SEED=%llu)", k, (long long)pse_type, threads, diff ? diff : "",
                         (unsigned long long)tu_suite_seed());
                passed += !diff;
                /* the comparison bites: one ulp in one element of dk */
                general.dk[s.nk / 2] = nextafter(general.dk[s.nk / 2], INFINITY);
                TU_CHECK(first_difference(&s, &plain, &general) != NULL, "a one-ulp change of dk went unnoticed");
                outputs_free(&plain), outputs_free(&general);
                free(s.q), free(s.k), free(s.v), free(s.dy), free(s.scratch);
            }
    return tu_finish("test_fa_ref_paths", passed);
}
