/* The Block Attention Residuals driver (harness_driver.h): a case ("op":
 * "attnres") has the seed's test parameters (spec keypool-attnres-pypto
 * B.3): B, T, N (blocks, 1..127), D (all four required), dtype (bf16 |
 * fp16 | fp32, default bf16), partial (or has_partial_block; default true),
 * rmsnorm (or enable_rmsnorm; default true), random_gamma (default false:
 * gamma ones, the seed's), scale (default 1), eps (rmsnorm_eps, default
 * 1e-6), data_seed and compare (default triple, the seed's rule).
 *
 * Each chain runs its forward and then its backward on that forward's
 * caches (the seed's cascade).  h, rms, alpha and every gradient are
 * judged, the seed's outputs each on its own line, the other blocks'
 * gradients in one summary line unless one fails. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_driver.h"

enum {
    A_B, A_T, A_N, A_D, A_DTYPE, A_PARTIAL, A_RMSNORM, A_RANDOM_GAMMA, A_SCALE, A_EPS, A_DATA_SEED, A_COMPARE, A_COUNT
};

static const harness_field AR_FIELDS[] = {
    {"B", A_B}, {"T", A_T}, {"N", A_N}, {"D", A_D}, {"dtype", A_DTYPE}, {"partial", A_PARTIAL},
    {"has_partial_block", A_PARTIAL}, {"rmsnorm", A_RMSNORM}, {"enable_rmsnorm", A_RMSNORM},
    {"random_gamma", A_RANDOM_GAMMA}, {"scale", A_SCALE}, {"eps", A_EPS}, {"data_seed", A_DATA_SEED},
    {"compare", A_COMPARE}};

typedef struct ar_raw {
    ar_case_spec *s;
    const char *dtype, *compare;
    int64_t data_seed;
} ar_raw;

static bool ar_read(harness_parse *c, const cJSON *v, int f, void *ctx)
{
    const int64_t big = (int64_t)1 << 40;
    ar_raw *r = ctx;
    ar_case_spec *s = r->s;
    const double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    switch (f) {
    case A_B: return hp_int(c, v, 0, big, &s->B);
    case A_T: return hp_int(c, v, 0, big, &s->T);
    case A_N: return hp_int(c, v, 1, 127, &s->N);
    case A_D: return hp_int(c, v, 1, big, &s->D);
    case A_DTYPE: return hp_str(c, v, &r->dtype);
    case A_PARTIAL: return hp_bool(c, v, &s->partial);
    case A_RMSNORM: return hp_bool(c, v, &s->rmsnorm);
    case A_RANDOM_GAMMA: return hp_bool(c, v, &s->random_gamma);
    case A_SCALE: /* finite as the f32 the operator multiplies by */
        s->scale = x;
        return isfinite((float)x) || hp_fail(c, v->string, "must be a finite number");
    case A_EPS:
        s->eps = x;
        return ((float)x > 0.0f && isfinite((float)x)) || hp_fail(c, v->string, "must be a positive number");
    case A_DATA_SEED: return hp_int(c, v, 0, big, &r->data_seed);
    case A_COMPARE: return hp_str(c, v, &r->compare);
    default: return true;
    }
}

static bool ar_parse(harness_parse *c, const cJSON *obj, harness_case *h)
{
    ar_case_spec *s = &h->ar;
    *s = (ar_case_spec){.dtype = ATTNOPS_DTYPE_BF16, .partial = true, .rmsnorm = true, .scale = 1.0, .eps = 1e-6};
    bool has[A_COUNT] = {false};
    ar_raw r = {.s = s, .data_seed = 1};
    if (!hp_read_fields(c, obj, AR_FIELDS, sizeof AR_FIELDS / sizeof AR_FIELDS[0], "AttnRes ", has, ar_read, &r))
        return false;
    static const int required[] = {A_B, A_T, A_N, A_D};
    static const char *const required_names[] = {"B", "T", "N", "D"};
    if (!hp_require(c, has, required, required_names, 4)) return false;
    if (r.dtype) {
        s->dtype = attnops_dtype_from_string(r.dtype);
        if (s->dtype != ATTNOPS_DTYPE_BF16 && s->dtype != ATTNOPS_DTYPE_F16 && s->dtype != ATTNOPS_DTYPE_F32)
            return hp_fail(c, "dtype", "is '%s'; AttnRes takes bf16, fp16 or fp32", r.dtype);
    }
    h->data_seed = (uint64_t)r.data_seed;
    h->rule = CMP_TRIPLE;
    return !r.compare || hp_rule(c, r.compare, &h->rule);
}

static double ar_bytes(const harness_case *h)
{
    const ar_case_spec *a = &h->ar;
    return 8.0 * 2.0 * ((double)a->N + 3.0) * (double)a->B * (double)a->T * (double)a->D;
}

/* One set of inputs; each chain its outputs, named into its own list. */
typedef struct ar_run {
    ar_case c;
    ar_chain chain[HARNESS_CHAIN_COUNT];
    bool made[HARNESS_CHAIN_COUNT];
    ar_output out[HARNESS_CHAIN_COUNT][AR_CASE_MAX_OUTPUTS];
    char block[AR_CASE_MAX_L][16]; /* block_00 ... */
} ar_run;

static void ar_free(harness_run *r)
{
    ar_run *s = r->state;
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (s->made[c]) ar_chain_free(&s->chain[c]);
    ar_case_free(&s->c);
    free(s);
}

static cJSON *ar_attributes(const ar_case_spec *s)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "num_blocks", (double)s->N);
    cJSON_AddBoolToObject(a, "partial_block", s->partial);
    cJSON_AddBoolToObject(a, "enable_rmsnorm", s->rmsnorm);
    cJSON_AddNumberToObject(a, "scale", s->scale);
    cJSON_AddNumberToObject(a, "rmsnorm_eps", s->eps);
    return a;
}

/* The inputs -- block_00 ..., partial_block, proj_weight, rmsnorm_gamma
 * (with RMSNorm), grad_h -- and the chains' outputs (ar_chain_outputs: the
 * seed's first, then every other block's gradient, summarised). */
static void ar_tensors(harness_run *r, ar_run *s)
{
    const ar_case_spec *spec = &s->c.spec;
    for (int64_t l = 0; l < spec->N; l++) {
        snprintf(s->block[l], sizeof s->block[l], "block_%02d", (int)l);
        harness_add(r, s->block[l], "input", &s->c.v[l].view, NULL, NULL);
    }
    if (spec->partial) harness_add(r, "partial_block", "input", &s->c.v[spec->N].view, NULL, NULL);
    harness_add(r, "proj_weight", "input", &s->c.w.view, NULL, NULL);
    if (spec->rmsnorm) harness_add(r, "rmsnorm_gamma", "input", &s->c.gamma.view, NULL, NULL);
    harness_add(r, "grad_h", "input", &s->c.grad_h.view, NULL, NULL);
    int seed_n = 0, n = 0;
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (s->made[c]) n = ar_chain_outputs(&s->c, &s->chain[c], s->out[c], &seed_n);
    for (int i = 0; i < n; i++) {
        const attnops_tensor *v[HARNESS_CHAIN_COUNT];
        for (int c = 0; c < HARNESS_CHAIN_COUNT; c++) v[c] = s->made[c] ? &s->out[c][i].t->view : NULL;
        harness_tensor *t = harness_add(r, s->out[HARNESS_GOLDEN][i].name, "output", v[0], v[1], v[2]);
        t->judged = true;
        t->summarised = i >= seed_n;
    }
}

static attnops_status ar_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r)
{
    ar_run *s = calloc(1, sizeof *s);
    r->state = s;
    ar_case_init(&s->c, &hc->ar, hc->data_seed);
    const bool want[HARNESS_CHAIN_COUNT] = {true, o->kernel, o->bench};
    const attnops_impl impl[HARNESS_CHAIN_COUNT] = {ATTNOPS_IMPL_REFERENCE, o->impl, ATTNOPS_IMPL_BENCHMARK};
    attnops_status st = ATTNOPS_SUCCESS;
    for (int c = 0; c < HARNESS_CHAIN_COUNT && st == ATTNOPS_SUCCESS; c++) {
        if (!want[c]) continue;
        s->made[c] = true;
        st = ar_case_run(&s->c, impl[c], o->threads, &s->chain[c]);
    }
    if (st != ATTNOPS_SUCCESS) return st;
    r->attributes = ar_attributes(&hc->ar);
    ar_tensors(r, s);
    return st;
}

/* Perf mode: the inputs, one chain's outputs, the two calls; the backward
 * reads the forward's rms and alpha. */
typedef struct ar_perf {
    ar_case c;
    ar_chain out;
    ar_case_calls calls;
} ar_perf;

static attnops_status ar_perf_setup(const harness_case *hc, attnops_impl impl, int threads, harness_perf *p)
{
    ar_perf *a = calloc(1, sizeof *a);
    p->state = a;
    ar_case_init(&a->c, &hc->ar, hc->data_seed);
    ar_chain_alloc(&a->c, &a->out);
    ar_case_calls_init(&a->c, &a->out, impl, threads, &a->calls);
    return ATTNOPS_SUCCESS;
}

/* Each element once, with E the dtype's bytes, BTD = B T D, BTL = B T L and
 * the caches (alpha, and rms with RMSNorm) f32: forward reads L BTD E and
 * the parameters, writes h and the caches; the backward reads grad_h, the L
 * blocks, the caches and the parameters, writes L gradients and the
 * parameters' (a block row it reads twice counts once). */
static attnops_status ar_perf_phase(harness_perf *p, int phase)
{
    const ar_perf *a = p->state;
    const ar_case_spec *s = &a->c.spec;
    const double e = (double)attnops_dtype_size(s->dtype), L = (double)a->c.L;
    const double btd = (double)s->B * (double)s->T * (double)s->D, btl = (double)s->B * (double)s->T * L;
    const double caches = (s->rmsnorm ? 2.0 : 1.0) * btl * 4.0, params = (s->rmsnorm ? 2.0 : 1.0) * (double)s->D * e;
    p->in_bytes = (phase ? (L + 1.0) * btd * e + caches : L * btd * e) + params;
    p->out_bytes = phase ? L * btd * e + params : btd * e + caches;
    p->flops = 0.0, p->gemm_dtype = 0;
    return phase ? attnops_attn_res_grad_workspace_size(&a->calls.bwd, &p->workspace_bytes)
                 : attnops_attn_res_workspace_size(&a->calls.fwd, &p->workspace_bytes);
}

static attnops_status ar_perf_call(harness_perf *p, int phase, void *workspace)
{
    const ar_perf *a = p->state;
    return phase ? attnops_attn_res_grad(&a->calls.bwd, workspace, p->workspace_bytes)
                 : attnops_attn_res(&a->calls.fwd, workspace, p->workspace_bytes);
}

static void ar_perf_free(harness_perf *p)
{
    ar_perf *a = p->state;
    ar_chain_free(&a->out);
    ar_case_free(&a->c);
    free(a);
}

static const char *const AR_PHASES[] = {"fwd", "bwd", NULL};

static const attnops_dtype AR_DTYPES[] = {ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_F32, 0};

static void ar_example(attnops_dtype dtype, char *json, size_t n)
{
    snprintf(json, n, "{\"op\": \"attnres\", \"B\": 1, \"T\": 5, \"N\": 3, \"D\": 16, \"dtype\": \"%s\"}",
             attnops_dtype_traits_of(dtype)->cann_name);
}

const harness_driver driver_attnres = {
    .name = "attnres",
    .title = "Block Attention Residuals (forward + backward)",
    .dtypes = {[ATTNOPS_IMPL_REFERENCE] = AR_DTYPES, [ATTNOPS_IMPL_CPU] = AR_DTYPES,
               [ATTNOPS_IMPL_BENCHMARK] = AR_DTYPES},
    .example = ar_example,
    .triple_dtype = ATTNOPS_DTYPE_F32,
    .parse = ar_parse,
    .bytes = ar_bytes,
    .run = ar_run_case,
    .free = ar_free,
    .phases = AR_PHASES,
    .perf_setup = ar_perf_setup,
    .perf_phase = ar_perf_phase,
    .perf_call = ar_perf_call,
    .perf_free = ar_perf_free,
};
