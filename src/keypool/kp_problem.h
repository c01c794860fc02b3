/* KeyPool semantics shared by every implementation: the validated
 * description of one call, and the traversal both implementations follow
 * (spec A.3): project every token, write every batch's trailing incomplete
 * group to the cache, then pool every complete group that holds a current
 * token, reading earlier positions from the cache.
 *
 * Workspace layout common to the implementations (kp_rows_*):
 *   key  f32 [T][D]  this call's K rows, LayerNorm applied (what the cache holds)
 *   gate f32 [T][D]  this call's G rows, rounded to the activation dtype
 * with T = all tokens of the call, batch b's rows from token_base(b). */
#ifndef ATTNOPS_KP_PROBLEM_H
#define ATTNOPS_KP_PROBLEM_H

#include <stdbool.h>

#include "core/core.h"

/* A strided 2-D view [rows][cols] of any dtype. */
typedef struct kp_matrix {
    char *data;
    attnops_dtype dtype;
    int64_t esize, sr, sc; /* bytes per element; element strides of rows, columns */
} kp_matrix;

static inline char *kp_at(const kp_matrix *m, int64_t r, int64_t c)
{
    return m->data + (r * m->sr + c * m->sc) * m->esize;
}

typedef struct kp_problem {
    attnops_dtype dtype;  /* activations: bf16 or f16 */
    bool th;              /* layout TH (cu_seqlens) rather than BSH */
    int64_t B, S, T;      /* BSH: S per batch, T = B*S; TH: T tokens */
    int64_t H, D, R, L;   /* hidden, head dim, cmp_ratio, table columns */
    int64_t block_num, block_size;
    double eps;           /* norm_eps as the golden's f32 tensors see it */
    bool layer_norm;
    attnops_key_pool_capacity capacity;
    attnops_impl impl;
    int threads;          /* resolved thread count (>= 1): the arithmetic follows it */
    int team;      /* threads the parallel regions run on: set for the run (ao_team_acquire) */

    /* hidden row of token i of batch b: BSH (b, i); TH (cu[b] + i) */
    kp_matrix hidden;     /* [rows][H]; BSH rows are b*S + i through hb */
    int64_t hidden_sb;    /* BSH batch stride (elements); 0 for TH */
    kp_matrix wk, gate;   /* [D][H] */
    kp_matrix ape;        /* f32 [R][D] */
    const char *norm_w, *norm_b; int64_t norm_ws, norm_bs; /* f32 [D] */
    char *cache; int64_t cache_sb, cache_ss, cache_sc;      /* f32 [block][slot][2D] */
    const char *table; int64_t table_sb, table_sl;          /* i32 [B][L] */
    const char *start; int64_t start_s;                     /* i32 [B] */
    const char *cu; int64_t cu_s;                           /* i32 [B+1], TH */

    kp_matrix out;        /* [out rows][D]; BSH and FIXED: batch b's rows from b*out_sb */
    int64_t out_sb;       /* elements; 0 in TH/CURRENT (rows packed, see kp_out_row0) */
    int64_t out_rows;     /* rows per batch (BSH/FIXED) or in all (TH/CURRENT) */
} kp_problem;

static inline int32_t kp_i32(const char *base, int64_t stride, int64_t i)
{
    return *(const int32_t *)(base + i * stride * 4);
}

static inline int64_t kp_start(const kp_problem *p, int64_t b) { return kp_i32(p->start, p->start_s, b); }
static inline int64_t kp_len(const kp_problem *p, int64_t b)
{
    return p->th ? kp_i32(p->cu, p->cu_s, b + 1) - kp_i32(p->cu, p->cu_s, b) : p->S;
}
/* Batch b's first row in the call-wide [T] numbering (hidden and workspace). */
static inline int64_t kp_token_base(const kp_problem *p, int64_t b)
{
    return p->th ? kp_i32(p->cu, p->cu_s, b) : b * p->S;
}
static inline const char *kp_hidden_row(const kp_problem *p, int64_t token)
{
    return p->th ? kp_at(&p->hidden, token, 0)
                 : kp_at(&p->hidden, 0, 0) + ((token / p->S) * p->hidden_sb + (token % p->S) * p->hidden.sr) *
                                                 p->hidden.esize;
}
/* Groups of batch b this call pools: [first, first + n). */
static inline int64_t kp_first_group(const kp_problem *p, int64_t b) { return kp_start(p, b) / p->R; }
static inline int64_t kp_valid_rows(const kp_problem *p, int64_t b)
{
    return (kp_start(p, b) + kp_len(p, b)) / p->R - kp_start(p, b) / p->R;
}
/* The cache row (f32 [2D]) of logical position pos of batch b. */
static inline float *kp_cache_row(const kp_problem *p, int64_t b, int64_t pos)
{
    const int64_t block = *(const int32_t *)(p->table + (b * p->table_sb + pos / p->block_size * p->table_sl) * 4);
    return (float *)(p->cache + (block * p->cache_sb + (pos % p->block_size) * p->cache_ss) * 4);
}

/* Key and gate rows of logical position pos of batch b while pooling: this
 * call's (st <= pos) or the cache's (pos < st).  Cache columns are read with
 * stride cache_sc; this call's rows are dense.  Returns the column stride. */
static inline int64_t kp_group_row(const kp_problem *p, int64_t b, int64_t pos, const float *key_ws,
                                   const float *gate_ws, const float **key, const float **gate)
{
    const int64_t st = kp_start(p, b);
    if (pos >= st) {
        const int64_t t = kp_token_base(p, b) + pos - st;
        *key = key_ws + t * p->D, *gate = gate_ws + t * p->D;
        return 1;
    }
    const float *row = kp_cache_row(p, b, pos);
    *key = row, *gate = row + p->D * p->cache_sc;
    return p->cache_sc;
}

/* Writes the trailing incomplete group's current tokens of every batch to
 * the cache (spec A.3 step 3), from the workspace rows. */
void kp_write_tails(const kp_problem *p, const float *key_ws, const float *gate_ws);
/* Zero every output row no group writes (capacity FIXED only). */
void kp_zero_unused_rows(const kp_problem *p);
/* Output row pointer of group g (0-based, < n[b]) of batch b; row0 is
 * batch b's first packed row (TH/CURRENT), from kp_out_row0. */
char *kp_out_row(const kp_problem *p, int64_t b, int64_t row0, int64_t g);
/* row0[b] for b = 0..B-1: the packed TH/CURRENT row offsets (0 elsewhere). */
void kp_out_row0(const kp_problem *p, int64_t *row0);
/* One token's LayerNorm of key[D] in place (kp_layer_norm.c): two-pass
 * biased variance in double, as the golden's mean((K - mu)^2). */
void kp_layer_norm(const kp_problem *p, float *key);

/* Validation (spec A.2's order): fills *p.  need_output: pooled_key is
 * required and checked (false for the shape / valid-row queries). */
attnops_status kp_validate(const attnops_key_pool_args *a, const char *op, bool need_output, kp_problem *p);
/* The shape pooled_key must have. */
void kp_output_shape(const kp_problem *p, int32_t *rank, int64_t shape[3]);

#endif
