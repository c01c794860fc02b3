/* Block Attention Residuals semantics shared by every implementation: the
 * validated description of one call (forward or backward) and the fixed
 * token chunks the backward reduces grad_proj_weight / grad_rmsnorm_gamma
 * over.
 *
 * Per token (b, t), V[l] (l < L) is row (b, t) of blocks[l], or of
 * partial_block for l = N.  Every activation view is strided [B][T][D];
 * the caches are f32 [B][T][L] (rms's trailing 1 dropped). */
#ifndef ATTNOPS_AR_PROBLEM_H
#define ATTNOPS_AR_PROBLEM_H

#include <stdbool.h>

#include "core/core.h"

#define AR_MAX_BLOCKS 127
#define AR_MAX_L (AR_MAX_BLOCKS + 1)

/* A strided [B][T][D] view of the activation dtype. */
typedef struct ar_rows {
    char *data;
    int64_t sb, st, sd; /* element strides */
} ar_rows;

/* A strided [D] vector of the activation dtype (proj_weight, gamma, their gradients). */
typedef struct ar_vec {
    char *data;
    int64_t s;
} ar_vec;

/* A strided f32 [B][T][L] cache; data NULL when a forward does not write it. */
typedef struct ar_cache {
    char *data;
    int64_t sb, st, sl;
} ar_cache;

typedef struct ar_problem {
    attnops_dtype dtype;       /* activations: bf16, f16 or f32 */
    int64_t esize;             /* bytes per activation element */
    int64_t B, T, D, N, L;     /* L = N + (partial given) */
    bool partial, rmsnorm, backward;
    float scale, eps;          /* as the golden's f32 tensors see them */
    attnops_impl impl;
    attnops_dtype chain_round; /* impl BENCHMARK: every intermediate rounded to this dtype; 0: the golden */
    int threads;               /* resolved thread count (>= 1): the arithmetic follows it */
    int team;      /* threads the parallel regions run on: set for the run (ao_team_acquire) */

    ar_rows v[AR_MAX_L];       /* inputs: the blocks, then the partial block */
    ar_vec w, gamma;           /* proj_weight; gamma only with RMSNorm */
    ar_rows h;                 /* forward: the output */
    ar_rows g;                 /* backward: grad_h */
    ar_cache rms, alpha;       /* forward: optional outputs; backward: inputs (rms with RMSNorm) */
    ar_rows dv[AR_MAX_L];      /* backward: grad_blocks, then grad_partial_block */
    ar_vec dw, dgamma;         /* backward: grad_proj_weight; grad_rmsnorm_gamma with RMSNorm */
} ar_problem;

/* Row (b, t) of a [B][T][D] view; element d at + d * sd * esize. */
static inline char *ar_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t)
{
    return r->data + (b * r->sb + t * r->st) * p->esize;
}

static inline char *ar_vec_at(const ar_problem *p, const ar_vec *v, int64_t d) { return v->data + d * v->s * p->esize; }

static inline float *ar_cache_at(const ar_cache *c, int64_t b, int64_t t, int64_t l)
{
    return (float *)(c->data + (b * c->sb + t * c->st + l * c->sl) * 4);
}

/* The backward's sums over all tokens (grad_proj_weight, grad_rmsnorm_gamma)
 * are taken per token, then per chunk of consecutive tokens (b*T + t order)
 * in token order, then over the chunks in chunk order.  The chunks depend
 * on B*T only, never on the thread count, so the result is bitwise the same
 * for any number of threads. */
#define AR_MAX_CHUNKS 256
#define AR_MIN_CHUNK_TOKENS 8

static inline int64_t ar_chunk_tokens(const ar_problem *p)
{
    const int64_t tokens = p->B * p->T, even = (tokens + AR_MAX_CHUNKS - 1) / AR_MAX_CHUNKS;
    return even > AR_MIN_CHUNK_TOKENS ? even : AR_MIN_CHUNK_TOKENS;
}

static inline int64_t ar_chunks(const ar_problem *p)
{
    return (p->B * p->T + ar_chunk_tokens(p) - 1) / ar_chunk_tokens(p);
}

/* Validation: fills *p.  op is "AttnRes" or "AttnResGrad". */
attnops_status ar_validate_fwd(const attnops_attn_res_fwd_args *a, const char *op, ar_problem *p);
attnops_status ar_validate_bwd(const attnops_attn_res_bwd_args *a, const char *op, ar_problem *p);

#endif
