/* FlashAttention semantics shared by every implementation: the validated,
 * layout-free description of one forward or backward call.
 *
 * Every tensor is reduced to an fa_view indexed [b][n][s][d] whatever its
 * layout and strides, so the reference and the fast kernel never look at
 * layouts.  Softmax statistics are viewed as [b][n][s][replica 0..7]. */
#ifndef ATTNOPS_FA_PROBLEM_H
#define ATTNOPS_FA_PROBLEM_H

#include <math.h>
#include <stdbool.h>

#include "attn/attn_problem.h"
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

/* Masking of one call (spec 3).  Every sparse mode reduces, per batch, to a
 * band in top-left coordinates plus an optional prefix and an optional
 * element mask; see fa_mask.h. */
typedef struct fa_mask_cfg {
    attn_rule rule;         /* active: a mask tensor was given; without one nothing is masked */
    bool has_elements;      /* modes 0, 1, 5: the tensor's elements are read */
    fa_view elements;       /* [b][n][i][j] view of those elements (broadcast dims have stride 0) */
    bool skip_invalid_rows; /* fully masked rows get the sentinels (spec 1.1) */
} fa_mask_cfg;

/* The additive position bias (spec 4). */
typedef enum fa_pse_kind {
    FA_PSE_NONE,
    FA_PSE_TENSOR,          /* BNSS / 1NSS / BN1S: elements read through `bias` */
    FA_PSE_ALIBI_1024,      /* BNHS / 1NHS: last 1024 rows of a causal alibi, reconstructed */
    FA_PSE_SLOPES           /* pse_type 2/3: -slope * |delta| or -slope * sqrt|delta| */
} fa_pse_kind;

typedef struct fa_pse_cfg {
    fa_pse_kind kind;
    int64_t type;           /* pse_type: 1 = (raw + pse) * scale, else raw * scale + pse */
    fa_view bias;           /* TENSOR / ALIBI_1024: [b][n][row][j], broadcast dims stride 0 */
    int64_t alibi_rows;     /* ALIBI_1024: rows in the tensor (1024) */
    const float *slopes;    /* SLOPES: [N1] or [B][N1] */
    int64_t slope_sb, slope_sn;
    int64_t q_start, kv_start;
} fa_pse_cfg;

/* Dropout of a block of a larger call (attnops_fa_params.dropout_*): this
 * call's (b, h, i, j) is the whole call's (b, h + head0, i + q0[b], j + kv0[b]),
 * and the whole call has N1 heads and batch lengths seq_q[b] x seq_kv[b]
 * (padded: one value each; TND: cumulative lists). */
typedef struct fa_drop_block {
    bool active;
    int64_t N1, head0;
    attn_list seq_q, seq_kv;           /* [1] or cumulative [B] */
    attn_list q0, kv0;                 /* [1] or [B]; count 0 = all zero */
    int64_t q0_count, kv0_count;
} fa_drop_block;

typedef struct fa_problem {
    const char *op;                  /* "FlashAttentionScore" or "...Grad" for messages */
    /* S1, S2: the lengths of every batch, or in TND the longest ones (sizing). */
    int64_t B, N1, N2, G, S1, S2, D, Dv;
    /* TND: batch b's query rows are [cu_q[b-1], cu_q[b]) of T1 (cu_q[-1] = 0);
     * its views are indexed with b = 0 and the global row. */
    bool varlen;
    attn_list cu_q, cu_kv;
    int64_t T1, T2;
    bool stats_packed;               /* TND default stats layout: per batch [N1][S_b][8] blocks */
    attnops_dtype dtype;             /* q, k, v and dy */
    attnops_dtype out_dtype;         /* attention_out/in, dq, dk, dv, a pse tensor: dtype, or out_dtype under FP8 */
    /* FP8 (spec 6): q, k, v, dy hold f8 values quantised per 128-row block;
     * dsq/dsdy [b][n1][block], dsk/dsv [b][n2][block] (f32, read as
     * fa_at(v, b, n, block, 0)) are the de-quantisation factors. */
    bool fp8;
    fa_view dsq, dsk, dsv, dsdy;
    double scale;
    double softcap;                  /* 0: off; else the q.k term is softcap tanh(scale q.k / softcap) */
    fa_view q, k, v;
    fa_view o;                       /* forward: attention_out; backward: attention_in */
    fa_view smax, ssum;              /* f32, [B][N1][S1][8] */
    fa_view dy, dq, dk, dv;          /* backward only */
    /* MLA (spec 1.3): Q = [q | qr], K = [k | kr] on the head dim, Dr > 0
     * columns after D; dqr, dkr are their gradients (backward).  The API
     * gathers both parts into one head dim (fa_api.c) before an
     * implementation runs, so implementations always see Dr = 0. */
    int64_t Dr;
    fa_view qr, kr, dqr, dkr;
    fa_mask_cfg mask;
    fa_pse_cfg pse;
    int64_t seed, offset;            /* dropout stream (spec 5) */
    double keep_prob;                /* 1: no dropout */
    const uint8_t *drop_bits;        /* explicit drop_mask (spec 5.6), or NULL */
    int64_t drop_bits_stride;
    fa_drop_block drop_block;        /* the call is a block of a larger one (fa_dropout.h) */
    /* Attention sinks: f32 [N1] (data NULL: none), one extra logit per head
     * in every row's softmax, m and l included; dsink [N1] (backward, may be
     * NULL). */
    attn_sinks sink;
    float *dsink;
    int64_t dsink_stride;
    attnops_impl impl;
    attnops_dtype chain_round;       /* impl BENCHMARK: every intermediate rounded to this dtype; 0: the golden */
    bool deterministic;
    int threads;                     /* resolved thread count (>= 1): the arithmetic follows it */
    int team;      /* threads the parallel regions run on: set for the run (ao_team_acquire) */
} fa_problem;

/* Batch b's query / key lengths and the row of its first one in the views
 * (0 for the padded layouts, whose views carry b themselves). */
static inline int64_t fa_q_len(const fa_problem *p, int64_t b)
{
    if (!p->varlen) return p->S1;
    return attn_list_at(&p->cu_q, b) - (b ? attn_list_at(&p->cu_q, b - 1) : 0);
}
static inline int64_t fa_kv_len(const fa_problem *p, int64_t b)
{
    if (!p->varlen) return p->S2;
    return attn_list_at(&p->cu_kv, b) - (b ? attn_list_at(&p->cu_kv, b - 1) : 0);
}
static inline int64_t fa_q_first(const fa_problem *p, int64_t b)
{
    return p->varlen && b ? attn_list_at(&p->cu_q, b - 1) : 0;
}
static inline int64_t fa_kv_first(const fa_problem *p, int64_t b)
{
    return p->varlen && b ? attn_list_at(&p->cu_kv, b - 1) : 0;
}

/* Number of (b, h, i, j) score elements: B*N1*S1*S2, or N1 * sum S1_b*S2_b in TND. */
static inline int64_t fa_score_count(const fa_problem *p)
{
    int64_t n = 0;
    for (int64_t b = 0; b < p->B; b++) n += p->N1 * fa_q_len(p, b) * fa_kv_len(p, b);
    return n;
}

/* The 8 replicas of softmax_max / softmax_sum for query row i of (b, h).
 * TND's default layout packs each batch as an [N1][S_b][8] block (spec 1.1);
 * that tensor is required to be contiguous. */
static inline float *fa_stat(const fa_problem *p, const fa_view *st, int64_t b, int64_t h, int64_t i)
{
    if (p->stats_packed)
        return (float *)st->data + ((fa_q_first(p, b) * p->N1 + h * fa_q_len(p, b) + i) * 8);
    return (float *)fa_at(st, b, h, fa_q_first(p, b) + i, 0);
}

/* True when no attention is computed (B, N1 or S1 is zero); the API still
 * zeroes dk/dv of a backward whose kv side is not empty. */
static inline bool fa_problem_is_empty(const fa_problem *p) { return p->B == 0 || p->N1 == 0 || p->S1 == 0; }

/* Validate the public arguments and derive the problem; `op` names the
 * operator in messages.  On failure the status and sentence are set and
 * `out` is unspecified. */
attnops_status fa_validate_fwd(const attnops_fa_fwd_args *args, const char *op, fa_problem *out);
attnops_status fa_validate_bwd(const attnops_fa_bwd_args *args, const char *op, fa_problem *out);
/* attention_out's and the statistics' shapes from the inputs' shapes alone
 * (attnops_flash_attention_score_output_shapes, which has checked query,
 * key and value with ao_check_shape_only). */
attnops_status fa_output_shapes(const attnops_fa_params *p, const char *op, attnops_output_shape *out,
                                attnops_output_shape *stats);

/* A q/k/v-like tensor in a padded layout: checks its view and rank, and
 * gives (B, S, N, D) and its [b][n][s][d] view; `heads` splits the hidden
 * size of BSH/SBH. */
attnops_status fa_layout_view(const char *op, const char *name, const attnops_tensor *t, attnops_layout layout,
                              int64_t heads, int64_t dims[4], fa_view *view);

/* TND's cumulative lengths into pr (B, S1/S2 = the longest, T1/T2, the
 * lists); T1/T2 < 0: the lists' last values define them. */
attnops_status fa_derive_varlen(const char *op, const attnops_tensor *qlen, const attnops_tensor *kvlen, int64_t T1,
                                int64_t T2, fa_problem *pr);

/* Sentinels CANN writes for a row that attends to nothing (spec 1.1). */
#define FA_INVALID_ROW_MAX (-3.4028234663852886e38)
#define FA_INVALID_ROW_SUM (3.4028234663852886e38)
/* The value a masked score is replaced with (the golden's masked_fill). */
#define FA_MASK_FILL (-40000.0)

#endif
