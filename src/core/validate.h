/* Argument checks shared by every operator's validation (see validate.c).
 * `op` is the operator's name as it starts each error sentence. */
#ifndef ATTNOPS_CORE_VALIDATE_H
#define ATTNOPS_CORE_VALIDATE_H

#include "core.h"

/* Return the status of `expr` from the calling function unless it succeeded. */
#define AO_TRY(expr)                                                                                               \
    do {                                                                                                           \
        attnops_status st_ = (expr);                                                                               \
        if (st_ != ATTNOPS_SUCCESS) return st_;                                                                    \
    } while (0)

/* pre_tokens / next_tokens beyond +-2^60 act as unbounded; clamping keeps
 * the band arithmetic from overflowing (INT64_MAX is a legal "no limit"). */
static inline int64_t ao_clamp_tokens(int64_t t)
{
    const int64_t lim = INT64_C(1) << 60;
    return t > lim ? lim : (t < -lim ? -lim : t);
}

/* "[2, 8, 128, 64]" into buf (for messages); returns buf. */
const char *ao_shape_str(const attnops_tensor *t, char *buf, size_t n);
/* 161001 when a required tensor is NULL. */
attnops_status ao_check_present(const char *op, const char *name, const attnops_tensor *t);
/* Rank 1..8, known dtype, non-negative extents and strides, data unless empty. */
attnops_status ao_check_view(const char *op, const char *name, const attnops_tensor *t);
/* Exactly `shape` (rank `rank`); `why` ends the sentence. */
attnops_status ao_check_shape(const char *op, const char *name, const attnops_tensor *t, const int64_t *shape,
                              int rank, const char *why);
attnops_status ao_check_dtype(const char *op, const char *name, const attnops_tensor *t, attnops_dtype want,
                              const char *why);
/* No output aliases itself (a zero stride over an extent > 1, or a stride
 * within what its smaller-stride dimensions span) or another output; NULL
 * entries are skipped. */
attnops_status ao_check_disjoint(const char *op, const attnops_tensor *const *outs, const char *const *names, int n);
/* The run phase's workspace: NULL while the call needs `need` bytes -> 161001,
 * fewer than `need` bytes -> 161002 (the workspace query gives `need`). */
attnops_status ao_check_workspace(const char *op, const void *workspace, size_t bytes, size_t need);

/* Building an attnops_output_shape: the next dimension is query's dimension
 * `dim`, or an extent of its own. */
static inline void ao_out_query_dim(attnops_output_shape *s, const attnops_tensor *query, int dim)
{
    s->dims[s->rank++] = (attnops_output_dim){dim, query->shape[dim]};
}
static inline void ao_out_extent(attnops_output_shape *s, int64_t extent)
{
    s->dims[s->rank++] = (attnops_output_dim){-1, extent};
}

/* Rank and extents alone (a shape function's check: data may be NULL). */
attnops_status ao_check_shape_only(const char *op, const char *name, const attnops_tensor *t);

#endif
