/* FlashAttention semantics shared by every implementation: the validated,
 * layout-free description of one forward or backward call.
 *
 * Every tensor is reduced to an fa_view indexed [b][n][s][d] whatever its
 * layout and strides, so the reference and the fast kernel never look at
 * layouts.  Softmax statistics are viewed as [b][n][s][replica 0..7]. */
#ifndef ATTNOPS_FA_PROBLEM_H
#define ATTNOPS_FA_PROBLEM_H

#include <stdbool.h>

#include "core/core.h"

typedef struct fa_view {
    char *data;
    attnops_dtype dtype;
    int64_t esize;                   /* bytes per element */
    int64_t sb, sn, ss, sd;          /* element strides of b, n, s, d */
} fa_view;

static inline char *fa_at(const fa_view *v, int64_t b, int64_t n, int64_t s, int64_t d)
{
    return v->data + (b * v->sb + n * v->sn + s * v->ss + d * v->sd) * v->esize;
}

typedef struct fa_problem {
    const char *op;                  /* "FlashAttentionScore" or "...Grad" for messages */
    int64_t B, N1, N2, G, S1, S2, D, Dv;
    attnops_dtype dtype;             /* q, k, v (and dy, outputs) */
    double scale;
    fa_view q, k, v;
    fa_view o;                       /* forward: attention_out; backward: attention_in */
    fa_view smax, ssum;              /* f32, [B][N1][S1][8] */
    fa_view dy, dq, dk, dv;          /* backward only */
    attnops_impl impl;
    bool deterministic;
    int threads;                     /* resolved thread count (>= 1) */
} fa_problem;

/* True when no attention is computed (B, N1 or S1 is zero); the API still
 * zeroes dk/dv of a backward whose kv side is not empty. */
static inline bool fa_problem_is_empty(const fa_problem *p) { return p->B == 0 || p->N1 == 0 || p->S1 == 0; }

/* Validate the public arguments and derive the problem.  On failure the
 * status and sentence are set and `out` is unspecified. */
attnops_status fa_validate_fwd(const attnops_fa_fwd_args *args, fa_problem *out);
attnops_status fa_validate_bwd(const attnops_fa_bwd_args *args, fa_problem *out);

/* Sentinels CANN writes for a row that attends to nothing (spec 1.1). */
#define FA_INVALID_ROW_MAX (-3.4028234663852886e38)
#define FA_INVALID_ROW_SUM (3.4028234663852886e38)

#endif
