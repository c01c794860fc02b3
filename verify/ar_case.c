#include "ar_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Standard normal values rounded to the dtype into a contiguous tensor:
 * tu_tensor_randn's job, for the 10^8 values of the large cases (one
 * thread and one log and cos per value would take ~10 s there).  Slices of
 * 2^16 values each have their own stream (seed, slice), so the values do
 * not depend on the thread count; Marsaglia's polar method, two values per
 * accepted pair. */
static void fill_randn(tu_tensor *t, uint64_t seed)
{
    const int64_t n = tu_numel(&t->view), slice = 1 << 16, slices = (n + slice - 1) / slice;
    const attnops_dtype dt = t->view.dtype;
    const int64_t es = (int64_t)attnops_dtype_size(dt);
    char *data = t->view.data;
#pragma omp parallel for schedule(static)
    for (int64_t s = 0; s < slices; s++) {
        tu_rng r = tu_rng_make(seed * 0x100000001B3ull + (uint64_t)s);
        for (int64_t i = s * slice; i < n && i < (s + 1) * slice; i += 2) {
            double u, v, q;
            do {
                u = 2.0 * tu_uniform(&r) - 1.0, v = 2.0 * tu_uniform(&r) - 1.0, q = u * u + v * v;
            } while (q >= 1.0 || q == 0.0);
            const double f = sqrt(-2.0 * log(q) / q);
            tu_store_f64(data + i * es, dt, (float)(u * f));
            if (i + 1 < n) tu_store_f64(data + (i + 1) * es, dt, (float)(v * f));
        }
    }
}

/* A tensor of `shape`, contiguous or (strided) with element stride 2 and
 * padded rows: storage [..., last + 3, 2], the view its [..., last, 0]
 * elements.  Contents undefined. */
static tu_tensor new_tensor(attnops_dtype dt, int rank, const int64_t *shape, bool strided)
{
    if (!strided) return tu_tensor_new(dt, rank, shape, 0);
    int64_t storage[ATTNOPS_MAX_RANK];
    memcpy(storage, shape, (size_t)rank * sizeof(int64_t));
    storage[rank - 1] += 3, storage[rank] = 2;
    tu_tensor t = tu_tensor_new(dt, rank + 1, storage, 0);
    t.view.rank = rank; /* the storage's strides of the leading dims are the view's */
    t.view.shape[rank - 1] = shape[rank - 1];
    return t;
}

/* *t's values moved into a strided tensor. */
static void restride(tu_tensor *t)
{
    tu_tensor s = new_tensor(t->view.dtype, t->view.rank, t->view.shape, true);
    const int64_t n = tu_numel(&t->view);
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    tu_tensor_to_f64(t, x);
    tu_tensor_from_f64(&s, x);
    free(x);
    tu_tensor_free(t);
    *t = s;
}

void ar_case_init(ar_case *c, const ar_case_spec *s, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->spec = *s;
    c->L = s->N + s->partial;
    tu_rng rng = tu_rng_make(seed);
    const int64_t act[3] = {s->B, s->T, s->D};
    for (int64_t l = 0; l < c->L; l++) {
        c->v[l] = tu_tensor_new(s->dtype, 3, act, 0);
        fill_randn(&c->v[l], tu_next(&rng));
    }
    c->grad_h = tu_tensor_new(s->dtype, 3, act, 0);
    fill_randn(&c->grad_h, tu_next(&rng));
    c->w = tu_tensor_new(s->dtype, 1, &s->D, 0);
    tu_tensor_randn(&c->w, &rng, 1.0);
    const int64_t es = (int64_t)attnops_dtype_size(s->dtype);
    const float div = (float)sqrt((double)(4 * s->D)); /* randn(d, dtype) / sqrt(4d): f32 math, dtype result */
    for (int64_t i = 0; i < s->D; i++) {
        char *e = (char *)c->w.view.data + i * es;
        tu_store_f64(e, s->dtype, (float)tu_load_f64(e, s->dtype) / div);
    }
    c->gamma = tu_tensor_new(s->dtype, 1, &s->D, 0);
    if (s->random_gamma) tu_tensor_randn(&c->gamma, &rng, 1.0);
    else
        for (int64_t i = 0; i < s->D; i++) tu_store_f64((char *)c->gamma.view.data + i * es, s->dtype, 1.0);
    if (s->strided) {
        for (int64_t l = 0; l < c->L; l++) restride(&c->v[l]);
        restride(&c->grad_h), restride(&c->w), restride(&c->gamma);
    }
}

void ar_case_free(ar_case *c)
{
    for (int64_t l = 0; l < c->L; l++) tu_tensor_free(&c->v[l]);
    tu_tensor_free(&c->grad_h);
    tu_tensor_free(&c->w);
    tu_tensor_free(&c->gamma);
}

void ar_chain_alloc(const ar_case *c, ar_chain *r)
{
    const ar_case_spec *s = &c->spec;
    const int64_t act[3] = {s->B, s->T, s->D}, cache[4] = {s->B, s->T, c->L, 1};
    const attnops_dtype F32 = ATTNOPS_DTYPE_F32;
    memset(r, 0, sizeof *r);
    r->h = new_tensor(s->dtype, 3, act, s->strided);
    if (s->rmsnorm) r->rms = new_tensor(F32, 4, cache, s->strided);
    r->alpha = new_tensor(F32, 3, cache, s->strided);
    for (int64_t l = 0; l < c->L; l++) r->dv[l] = new_tensor(s->dtype, 3, act, s->strided);
    r->dw = new_tensor(s->dtype, 1, &s->D, s->strided);
    if (s->rmsnorm) r->dgamma = new_tensor(s->dtype, 1, &s->D, s->strided);
}

void ar_chain_free(ar_chain *r)
{
    tu_tensor *all[] = {&r->h, &r->rms, &r->alpha, &r->dw, &r->dgamma};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tu_tensor_free(all[i]);
    for (int l = 0; l < AR_CASE_MAX_L; l++) tu_tensor_free(&r->dv[l]);
}

static attnops_status run_fwd(const void *a, void *ws, size_t n) { return attnops_attn_res(a, ws, n); }
static attnops_status run_bwd(const void *a, void *ws, size_t n) { return attnops_attn_res_grad(a, ws, n); }

void ar_case_calls_init(const ar_case *c, ar_chain *r, attnops_impl impl, int threads, ar_case_calls *k)
{
    const ar_case_spec *s = &c->spec;
    for (int64_t l = 0; l < s->N; l++) k->blocks[l] = &c->v[l].view, k->grads[l] = &r->dv[l].view;

    attnops_attn_res_fwd_args *f = &k->fwd;
    attnops_attn_res_fwd_args_init(f);
    f->blocks = k->blocks, f->num_blocks = s->N, f->partial_block = s->partial ? &c->v[s->N].view : NULL;
    f->proj_weight = &c->w.view, f->rmsnorm_gamma = s->rmsnorm ? &c->gamma.view : NULL;
    f->scale = s->scale, f->rmsnorm_eps = s->eps, f->enable_rmsnorm = s->rmsnorm;
    f->h = &r->h.view, f->rms = s->rmsnorm ? &r->rms.view : NULL, f->alpha = &r->alpha.view;
    f->impl = impl, f->num_threads = threads;

    attnops_attn_res_bwd_args *b = &k->bwd;
    attnops_attn_res_bwd_args_init(b);
    b->grad_h = &c->grad_h.view, b->blocks = f->blocks, b->num_blocks = s->N, b->partial_block = f->partial_block;
    b->proj_weight = f->proj_weight, b->rmsnorm_gamma = f->rmsnorm_gamma, b->alpha = f->alpha, b->rms = f->rms;
    b->scale = s->scale, b->enable_rmsnorm = s->rmsnorm;
    b->grad_blocks = k->grads, b->grad_partial_block = s->partial ? &r->dv[s->N].view : NULL;
    b->grad_proj_weight = &r->dw.view, b->grad_rmsnorm_gamma = s->rmsnorm ? &r->dgamma.view : NULL;
    b->impl = impl, b->num_threads = threads;
}

attnops_status ar_case_run(const ar_case *c, attnops_impl impl, int threads, ar_chain *r)
{
    ar_chain_alloc(c, r);
    ar_case_calls k;
    ar_case_calls_init(c, r, impl, threads, &k);
    size_t bytes = 0;
    attnops_status st = attnops_attn_res_workspace_size(&k.fwd, &bytes);
    if (st == ATTNOPS_SUCCESS) st = tu_run_with_workspace(run_fwd, &k.fwd, bytes, "attn_res");
    if (st == ATTNOPS_SUCCESS) st = attnops_attn_res_grad_workspace_size(&k.bwd, &bytes);
    if (st == ATTNOPS_SUCCESS) st = tu_run_with_workspace(run_bwd, &k.bwd, bytes, "attn_res_grad");

    ar_output outs[AR_CASE_MAX_OUTPUTS];
    int seed_n;
    const int n = ar_chain_outputs(c, r, outs, &seed_n);
    for (int i = 0; i < n; i++)
        TU_CHECK(tu_canaries_ok(outs[i].t, outs[i].name), "attn_res (impl %d) wrote outside %s", (int)impl,
                 outs[i].name);
    return st;
}

int ar_chain_outputs(const ar_case *c, ar_chain *r, ar_output *out, int *seed_n)
{
    const ar_case_spec *s = &c->spec;
    int n = 0;
#define OUT(tensor, ...) (out[n].t = (tensor), snprintf(out[n].name, sizeof out[n].name, __VA_ARGS__), n++)
    OUT(&r->h, "h");
    if (s->rmsnorm) OUT(&r->rms, "rms");
    OUT(&r->alpha, "alpha");
    if (s->partial) OUT(&r->dv[s->N], "grad_partial_block");
    OUT(&r->dv[0], "grad_block_00");
    OUT(&r->dw, "grad_proj_weight");
    if (s->rmsnorm) OUT(&r->dgamma, "grad_rmsnorm_gamma");
    *seed_n = n;
    for (int64_t l = 1; l < s->N; l++) OUT(&r->dv[l], "grad_block_%02d", (int)l);
#undef OUT
    return n;
}
