/* The forward-attention pieces FlashAttentionScore and FusedInferAttentionScore
 * share: each operator's validation (fa_validate.c, fia_validate.c) fills
 * them, and every implementation of either reads them through the accessors
 * below, so a rule written here is written once for both.
 *
 *   attn_list   a rank-1 i32/i64 list the caller owns (lengths, prefix)
 *   attn_rule   the kept-key rule of CANN's sparse modes 0-8, per batch a
 *               band of diagonals (attn_band_of)
 *   attn_sinks  one extra softmax logit per query head (attention sinks)
 *
 * Indices: b batch, h query head, i query row and j key of the batch (its
 * own rows: 0 .. L1 - 1 and 0 .. L2 - 1). */
#ifndef ATTNOPS_ATTN_PROBLEM_H
#define ATTNOPS_ATTN_PROBLEM_H

#include <math.h>
#include <stdbool.h>

#include "core/core.h"

typedef struct attn_list {
    const char *data;
    attnops_dtype dtype; /* I32 or I64 */
    int64_t stride;      /* in elements */
} attn_list;

static inline int64_t attn_list_at(const attn_list *l, int64_t i)
{
    const char *at = l->data + i * l->stride * (int64_t)attnops_dtype_size(l->dtype);
    return l->dtype == ATTNOPS_DTYPE_I32 ? *(const int32_t *)(const void *)at : *(const int64_t *)(const void *)at;
}

/* Which keys a query row keeps (docs/NUMERICS.md "Masks"; spec 3.2).  Per
 * batch of L1 query rows and L2 keys every sparse mode is a band in top-left
 * coordinates plus a prefix:
 *
 *   kept(i, j) = -pre <= j - i <= next  or  j < prefix
 *
 *   mode 0  pre, next as given           mode 4  pre + L1 - L2, next - L1 + L2
 *   mode 1  every key                    mode 5, 6  next = L2 - L1, prefix[b]
 *   mode 2  pre = inf, next = 0          mode 7 (8)  the band batch as mode 4,
 *   mode 3  pre = inf, next = L2 - L1               the others as 3 (2)
 *
 * A mask tensor's elements, where the operator reads them, mask on top of
 * this (each operator's own view of them).  Not active: every key is kept,
 * whatever the mode (no mask given; a decode step). */
typedef struct attn_rule {
    bool active;
    int64_t mode;       /* sparse_mode */
    int64_t pre, next;  /* pre_tokens / next_tokens as given */
    attn_list prefix;   /* modes 5, 6: [B] */
    int64_t band_batch; /* modes 7, 8: the batch that follows mode 4 */
} attn_rule;

#define ATTN_TOKENS_INF ((int64_t)1 << 60)

typedef struct attn_band {
    int64_t pre, next, prefix;
} attn_band;

/* The band of batch b whose lengths are L1, L2 (every key: pre = next = ATTN_TOKENS_INF). */
attn_band attn_band_of(const attn_rule *r, int64_t b, int64_t L1, int64_t L2);

static inline bool attn_band_keeps(const attn_band *band, int64_t i, int64_t j)
{
    return (j - i <= band->next && i - j <= band->pre) || j < band->prefix;
}

/* Attention sinks: [N1] floats of any float dtype (data NULL: none); head
 * h's logit joins every row's softmax, its max and its sum. */
typedef struct attn_sinks {
    const char *data;
    attnops_dtype dtype;
    int64_t stride; /* in elements */
} attn_sinks;

/* Head h's sink logit, or -inf without sinks (its term e^(-inf - m) is 0). */
static inline double attn_sink_of(const attn_sinks *s, int64_t h)
{
    if (!s->data) return -INFINITY;
    return ao_load_f64(s->data + h * s->stride * (int64_t)attnops_dtype_size(s->dtype), s->dtype);
}

#endif
