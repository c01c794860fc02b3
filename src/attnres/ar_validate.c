/* Block Attention Residuals argument validation (spec B.1 / B.2), one
 * sentence per failure starting "AttnRes: " (forward) or "AttnResGrad: "
 * (backward) and naming the argument.  A NULL required pointer -> 161001;
 * a malformed value, shape, dtype or combination -> 161002; D beyond what
 * the kernels index -> 161003.  Nothing is written before every rule has
 * passed.  The order: the block list, the attributes, the inputs (blocks,
 * partial, proj_weight, gamma), then the operator's own tensors. */
#include <math.h>
#include <stdio.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "attnres/ar_problem.h"
#include "core/validate.h"

#define NULLPTR ATTNOPS_ERR_NULLPTR
#define INVALID ATTNOPS_ERR_PARAM_INVALID
#define UNSUPPORTED ATTNOPS_ERR_UNSUPPORTED

/* What the forward and the backward share. */
typedef struct ar_inputs {
    const attnops_tensor *const *blocks;
    int64_t n;
    const attnops_tensor *partial, *w, *gamma;
    double scale;
    int32_t enable_rmsnorm;
    attnops_impl impl;
    int32_t num_threads;
} ar_inputs;

/* The shared fields of either argument struct (the same names in both). */
#define INPUTS_OF(a)                                                                                               \
    {(a)->blocks, (a)->num_blocks, (a)->partial_block, (a)->proj_weight, (a)->rmsnorm_gamma,                      \
     (a)->scale, (a)->enable_rmsnorm, (a)->impl, (a)->num_threads}

/* "blocks[3]" and the like, for messages. */
typedef struct ar_name {
    char s[40];
} ar_name;

static ar_name indexed(const char *list, int64_t i)
{
    ar_name n;
    snprintf(n.s, sizeof n.s, "%s[%lld]", list, (long long)i);
    return n;
}

/* The list itself (blocks or grad_blocks): N entries, each present and a sane view. */
static attnops_status check_list(const char *op, const char *list, const attnops_tensor *const *t, int64_t n)
{
    if (!t) return ao_fail(NULLPTR, "%s: %s is NULL (an array of %lld tensor views is required).", op, list,
                           (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const ar_name name = indexed(list, i);
        AO_TRY(ao_check_present(op, name.s, t[i]));
        AO_TRY(ao_check_view(op, name.s, t[i]));
    }
    return ATTNOPS_SUCCESS;
}

static attnops_status check_attributes(const char *op, const ar_inputs *in)
{
    if (in->enable_rmsnorm != 0 && in->enable_rmsnorm != 1)
        return ao_fail(INVALID, "%s: enable_rmsnorm must be 0 or 1; got %d.", op, (int)in->enable_rmsnorm);
    if (!isfinite(in->scale) || !isfinite((float)in->scale))
        return ao_fail(INVALID, "%s: scale must be finite (as an f32); got %g.", op, in->scale);
    if (in->impl < ATTNOPS_IMPL_AUTO || in->impl > ATTNOPS_IMPL_BENCHMARK)
        return ao_fail(INVALID, "%s: impl is %d; it must be AUTO, REFERENCE, CPU or BENCHMARK.", op, (int)in->impl);
    if (in->num_threads < 0)
        return ao_fail(INVALID, "%s: num_threads is %d; it must be >= 0.", op, (int)in->num_threads);
    return ATTNOPS_SUCCESS;
}

/* An optional tensor that is present must be a sane view. */
static attnops_status check_optional_view(const char *op, const char *name, const attnops_tensor *t)
{
    return t ? ao_check_view(op, name, t) : ATTNOPS_SUCCESS;
}

/* blocks[0] fixes the activation dtype and [B, T, D]; every other
 * activation must match it (spec B.1's "!= expected"). */
static attnops_status check_activations(const char *op, const ar_inputs *in, ar_problem *p)
{
    const attnops_tensor *b0 = in->blocks[0];
    char buf[96];
    const attnops_dtype dt = b0->dtype;
    if (dt != ATTNOPS_DTYPE_BF16 && dt != ATTNOPS_DTYPE_F16 && dt != ATTNOPS_DTYPE_F32)
        return ao_fail(INVALID, "%s: blocks[0] has dtype %s; the activations must be bf16, f16 or f32.", op,
                       attnops_dtype_name(dt));
    if (b0->rank != 3)
        return ao_fail(INVALID, "%s: blocks[0] has shape %s; every block must be [B, T, D].", op,
                       ao_shape_str(b0, buf, sizeof buf));
    if (b0->shape[2] < 1)
        return ao_fail(INVALID, "%s: blocks[0] has shape %s; D must be at least 1.", op,
                       ao_shape_str(b0, buf, sizeof buf));
    if (b0->shape[2] > INT32_MAX)
        return ao_fail(UNSUPPORTED, "%s: blocks[0] has D = %lld; this version supports D <= 2147483647.", op,
                       (long long)b0->shape[2]);
    for (int64_t i = 1; i < in->n; i++) {
        const ar_name name = indexed("blocks", i);
        AO_TRY(ao_check_shape(op, name.s, in->blocks[i], b0->shape, 3, "every block has blocks[0]'s shape"));
        AO_TRY(ao_check_dtype(op, name.s, in->blocks[i], dt, "every block has blocks[0]'s dtype"));
    }
    if (in->partial) {
        AO_TRY(ao_check_shape(op, "partial_block", in->partial, b0->shape, 3, "the blocks' shape"));
        AO_TRY(ao_check_dtype(op, "partial_block", in->partial, dt, "the blocks' dtype"));
    }
    p->dtype = dt;
    p->esize = (int64_t)attnops_dtype_size(dt);
    p->B = b0->shape[0], p->T = b0->shape[1], p->D = b0->shape[2];
    return ATTNOPS_SUCCESS;
}

/* A [D] vector of the activation dtype (proj_weight, gamma, their gradients). */
static attnops_status check_param(const char *op, const char *name, const attnops_tensor *t, const ar_problem *p)
{
    char why[64];
    snprintf(why, sizeof why, "%s must be [D] = [%lld]", name, (long long)p->D);
    AO_TRY(ao_check_shape(op, name, t, &p->D, 1, why));
    return ao_check_dtype(op, name, t, p->dtype, "the blocks' dtype");
}

static ar_rows rows_of(const attnops_tensor *t)
{
    return (ar_rows){(char *)t->data, t->strides[0], t->strides[1], t->strides[2]};
}

static ar_vec vec_of(const attnops_tensor *t) { return (ar_vec){(char *)t->data, t->strides[0]}; }

static ar_cache cache_of(const attnops_tensor *t)
{
    return (ar_cache){(char *)t->data, t->strides[0], t->strides[1], t->strides[2]};
}

/* Everything the two directions share; fills p's inputs. */
static attnops_status check_inputs(const char *op, const ar_inputs *in, ar_problem *p)
{
    if (in->n == 0) return ao_fail(INVALID, "%s: blocks must not be empty (num_blocks = 0).", op);
    if (in->n < 1 || in->n > AR_MAX_BLOCKS)
        return ao_fail(INVALID, "%s: N (num_blocks) must be in [1, %d], got %lld.", op, AR_MAX_BLOCKS,
                       (long long)in->n);
    AO_TRY(check_list(op, "blocks", in->blocks, in->n));
    AO_TRY(ao_check_present(op, "proj_weight", in->w));
    AO_TRY(check_attributes(op, in));
    AO_TRY(ao_check_view(op, "proj_weight", in->w));
    AO_TRY(check_optional_view(op, "partial_block", in->partial));
    AO_TRY(check_activations(op, in, p));
    AO_TRY(check_param(op, "proj_weight", in->w, p));
    p->rmsnorm = in->enable_rmsnorm == 1;
    if (p->rmsnorm) { /* without RMSNorm gamma is not read (the source ignores it too) */
        if (!in->gamma)
            return ao_fail(NULLPTR, "%s: rmsnorm_gamma is required when enable_rmsnorm = 1 (it is NULL).", op);
        AO_TRY(ao_check_view(op, "rmsnorm_gamma", in->gamma));
        AO_TRY(check_param(op, "rmsnorm_gamma", in->gamma, p));
        p->gamma = vec_of(in->gamma);
    }

    p->N = in->n;
    p->partial = in->partial != NULL;
    p->L = p->N + p->partial;
    p->scale = (float)in->scale; /* the golden multiplies an f32 tensor */
    p->impl = in->impl;
    p->chain_round = in->impl == ATTNOPS_IMPL_BENCHMARK ? p->dtype : 0;
#ifdef _OPENMP
    p->threads = in->num_threads > 0 ? in->num_threads : omp_get_max_threads();
#else
    p->threads = 1;
#endif
    p->team = p->threads; /* the entry points cap it for their run */
    for (int64_t l = 0; l < p->N; l++) p->v[l] = rows_of(in->blocks[l]);
    if (p->partial) p->v[p->N] = rows_of(in->partial);
    p->w = vec_of(in->w);
    return ATTNOPS_SUCCESS;
}

/* An f32 cache [B, T, L] (alpha) or [B, T, L, 1] (rms). */
static attnops_status check_cache(const char *op, const char *name, const attnops_tensor *t, int rank,
                                  const ar_problem *p)
{
    AO_TRY(ao_check_view(op, name, t));
    AO_TRY(ao_check_dtype(op, name, t, ATTNOPS_DTYPE_F32, "the caches are f32"));
    const int64_t shape[4] = {p->B, p->T, p->L, 1};
    return ao_check_shape(op, name, t, shape, rank, rank == 4 ? "[B, T, L, 1]" : "[B, T, L]");
}

/* A [B, T, D] activation of the blocks' shape and dtype. */
static attnops_status check_like_blocks(const char *op, const char *name, const attnops_tensor *t,
                                        const ar_problem *p)
{
    AO_TRY(ao_check_view(op, name, t));
    const int64_t shape[3] = {p->B, p->T, p->D};
    AO_TRY(ao_check_shape(op, name, t, shape, 3, "the blocks' shape"));
    return ao_check_dtype(op, name, t, p->dtype, "the blocks' dtype");
}

attnops_status ar_validate_fwd(const attnops_attn_res_fwd_args *a, const char *op, ar_problem *p)
{
    if (!a) return ao_fail(NULLPTR, "%s: the argument struct is NULL.", op);
    *p = (ar_problem){0};
    const ar_inputs in = INPUTS_OF(a);
    AO_TRY(check_inputs(op, &in, p));
    if (!(a->rmsnorm_eps > 0) || !isfinite((float)a->rmsnorm_eps) || (float)a->rmsnorm_eps == 0.0f)
        return ao_fail(INVALID, "%s: rmsnorm_eps must be positive and finite (as an f32); got %g.", op,
                       a->rmsnorm_eps);
    p->eps = (float)a->rmsnorm_eps; /* added to an f32 mean */

    AO_TRY(ao_check_present(op, "h", a->h));
    AO_TRY(check_like_blocks(op, "h", a->h, p));
    if (a->rms && !p->rmsnorm)
        return ao_fail(INVALID, "%s: rms output requested with enable_rmsnorm = 0 (there is no RMSNorm to cache).",
                       op);
    if (a->rms) AO_TRY(check_cache(op, "rms", a->rms, 4, p));
    if (a->alpha) AO_TRY(check_cache(op, "alpha", a->alpha, 3, p));
    const attnops_tensor *outs[3] = {a->h, a->rms, a->alpha};
    const char *names[3] = {"h", "rms", "alpha"};
    AO_TRY(ao_check_disjoint(op, outs, names, 3));

    p->h = rows_of(a->h);
    if (a->rms) p->rms = cache_of(a->rms);
    if (a->alpha) p->alpha = cache_of(a->alpha);
    return ATTNOPS_SUCCESS;
}

/* The backward's outputs: grad_blocks[N], grad_partial_block exactly when
 * partial_block is given, grad_proj_weight, grad_rmsnorm_gamma exactly with
 * RMSNorm; all disjoint. */
static attnops_status check_grads(const char *op, const attnops_attn_res_bwd_args *a, ar_problem *p)
{
    AO_TRY(check_list(op, "grad_blocks", a->grad_blocks, p->N));
    for (int64_t l = 0; l < p->N; l++) {
        const ar_name name = indexed("grad_blocks", l);
        AO_TRY(check_like_blocks(op, name.s, a->grad_blocks[l], p));
    }
    if (p->partial && !a->grad_partial_block)
        return ao_fail(NULLPTR, "%s: grad_partial_block is required when partial_block is given (it is NULL).", op);
    if (!p->partial && a->grad_partial_block)
        return ao_fail(INVALID, "%s: grad_partial_block is given but partial_block is not (there is no partial "
                       "gradient to write).", op);
    if (p->partial) AO_TRY(check_like_blocks(op, "grad_partial_block", a->grad_partial_block, p));
    AO_TRY(ao_check_present(op, "grad_proj_weight", a->grad_proj_weight));
    AO_TRY(ao_check_view(op, "grad_proj_weight", a->grad_proj_weight));
    AO_TRY(check_param(op, "grad_proj_weight", a->grad_proj_weight, p));
    if (p->rmsnorm && !a->grad_rmsnorm_gamma)
        return ao_fail(NULLPTR, "%s: grad_rmsnorm_gamma is required when enable_rmsnorm = 1 (it is NULL).", op);
    if (!p->rmsnorm && a->grad_rmsnorm_gamma)
        return ao_fail(INVALID, "%s: grad_rmsnorm_gamma is given but enable_rmsnorm = 0 (there is no gamma "
                       "gradient to write).", op);
    if (p->rmsnorm) {
        AO_TRY(ao_check_view(op, "grad_rmsnorm_gamma", a->grad_rmsnorm_gamma));
        AO_TRY(check_param(op, "grad_rmsnorm_gamma", a->grad_rmsnorm_gamma, p));
    }

    const attnops_tensor *outs[AR_MAX_L + 2];
    ar_name names[AR_MAX_L + 2];
    const char *name_ptrs[AR_MAX_L + 2];
    int n = 0;
    for (int64_t l = 0; l < p->N; l++) outs[n] = a->grad_blocks[l], names[n++] = indexed("grad_blocks", l);
    const attnops_tensor *rest[3] = {a->grad_partial_block, a->grad_proj_weight, a->grad_rmsnorm_gamma};
    const char *rest_names[3] = {"grad_partial_block", "grad_proj_weight", "grad_rmsnorm_gamma"};
    for (int i = 0; i < 3; i++) outs[n] = rest[i], snprintf(names[n++].s, sizeof names[0].s, "%s", rest_names[i]);
    for (int i = 0; i < n; i++) name_ptrs[i] = names[i].s;
    AO_TRY(ao_check_disjoint(op, outs, name_ptrs, n));

    for (int64_t l = 0; l < p->N; l++) p->dv[l] = rows_of(a->grad_blocks[l]);
    if (p->partial) p->dv[p->N] = rows_of(a->grad_partial_block);
    p->dw = vec_of(a->grad_proj_weight);
    if (p->rmsnorm) p->dgamma = vec_of(a->grad_rmsnorm_gamma);
    return ATTNOPS_SUCCESS;
}

attnops_status ar_validate_bwd(const attnops_attn_res_bwd_args *a, const char *op, ar_problem *p)
{
    if (!a) return ao_fail(NULLPTR, "%s: the argument struct is NULL.", op);
    *p = (ar_problem){0};
    const ar_inputs in = INPUTS_OF(a);
    AO_TRY(check_inputs(op, &in, p));
    p->backward = true;

    AO_TRY(ao_check_present(op, "grad_h", a->grad_h));
    AO_TRY(check_like_blocks(op, "grad_h", a->grad_h, p));
    if (!a->alpha)
        return ao_fail(NULLPTR, "%s: alpha (the forward's softmax cache) is required; the backward never recomputes "
                       "the softmax.", op);
    AO_TRY(check_cache(op, "alpha", a->alpha, 3, p));
    if (p->rmsnorm) { /* without RMSNorm rms is not read */
        if (!a->rms)
            return ao_fail(NULLPTR, "%s: rms (the forward's RMSNorm cache) is required when enable_rmsnorm = 1.", op);
        AO_TRY(check_cache(op, "rms", a->rms, 4, p));
        p->rms = cache_of(a->rms);
    }
    AO_TRY(check_grads(op, a, p));

    p->g = rows_of(a->grad_h);
    p->alpha = cache_of(a->alpha);
    return ATTNOPS_SUCCESS;
}

void attnops_attn_res_fwd_args_init(attnops_attn_res_fwd_args *a)
{
    if (!a) return;
    *a = (attnops_attn_res_fwd_args){0};
    a->scale = 1.0;
    a->rmsnorm_eps = 1e-6;
    a->enable_rmsnorm = 1;
}

void attnops_attn_res_bwd_args_init(attnops_attn_res_bwd_args *a)
{
    if (!a) return;
    *a = (attnops_attn_res_bwd_args){0};
    a->scale = 1.0;
    a->enable_rmsnorm = 1;
}
