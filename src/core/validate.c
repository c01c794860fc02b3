/* Argument checks every operator's validation shares: presence, view
 * sanity, exact shape, dtype and output disjointness, each failing with one
 * sentence that names the operator and the argument. */
#include <stdio.h>

#include "validate.h"

#define NULLPTR ATTNOPS_ERR_NULLPTR
#define INVALID ATTNOPS_ERR_PARAM_INVALID

/* Shape as "[2, 8, 128, 64]" for messages. */
const char *ao_shape_str(const attnops_tensor *t, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

attnops_status ao_check_present(const char *op, const char *name, const attnops_tensor *t)
{
    if (!t) return ao_fail(NULLPTR, "%s: required tensor '%s' is NULL.", op, name);
    return ATTNOPS_SUCCESS;
}

/* Rank, strides and data pointer of any tensor that is present. */
static attnops_status check_rank(const char *op, const char *name, const attnops_tensor *t)
{
    if (t->rank < 1 || t->rank > ATTNOPS_MAX_RANK)
        return ao_fail(INVALID, "%s: tensor '%s' has rank %d; ranks 1..%d are supported.", op, name, (int)t->rank,
                       ATTNOPS_MAX_RANK);
    return ATTNOPS_SUCCESS;
}

static attnops_status check_extents(const char *op, const char *name, const attnops_tensor *t)
{
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] < 0)
            return ao_fail(INVALID, "%s: tensor '%s' has negative extent %lld in dimension %d.", op, name,
                           (long long)t->shape[i], i);
    return ATTNOPS_SUCCESS;
}

attnops_status ao_check_shape_only(const char *op, const char *name, const attnops_tensor *t)
{
    AO_TRY(ao_check_present(op, name, t));
    AO_TRY(check_rank(op, name, t));
    return check_extents(op, name, t);
}

attnops_status ao_check_view(const char *op, const char *name, const attnops_tensor *t)
{
    AO_TRY(check_rank(op, name, t));
    if (attnops_dtype_size(t->dtype) == 0)
        return ao_fail(INVALID, "%s: tensor '%s' has unknown dtype code %d.", op, name, (int)t->dtype);
    AO_TRY(check_extents(op, name, t));
    for (int i = 0; i < t->rank; i++)
        if (t->strides[i] < 0)
            return ao_fail(INVALID, "%s: tensor '%s' has negative stride %lld in dimension %d.", op, name,
                           (long long)t->strides[i], i);
    if (!t->data && ao_tensor_numel(t) > 0)
        return ao_fail(NULLPTR, "%s: tensor '%s' has %lld elements but a NULL data pointer.", op, name,
                       (long long)ao_tensor_numel(t));
    return ATTNOPS_SUCCESS;
}

attnops_status ao_check_shape(const char *op, const char *name, const attnops_tensor *t, const int64_t *shape,
                                  int rank, const char *why)
{
    bool same = t->rank == rank;
    for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
    if (same) return ATTNOPS_SUCCESS;
    attnops_tensor want = {0};
    want.rank = rank;
    for (int i = 0; i < rank; i++) want.shape[i] = shape[i];
    char got_buf[96], want_buf[96];
    return ao_fail(INVALID, "%s: tensor '%s' has shape %s but must be %s (%s).", op, name,
                   ao_shape_str(t, got_buf, sizeof got_buf), ao_shape_str(&want, want_buf, sizeof want_buf), why);
}

attnops_status ao_check_dtype(const char *op, const char *name, const attnops_tensor *t, attnops_dtype want,
                                  const char *why)
{
    if (t->dtype == want) return ATTNOPS_SUCCESS;
    return ao_fail(INVALID, "%s: tensor '%s' has dtype %s but must be %s (%s).", op, name,
                   attnops_dtype_name(t->dtype), attnops_dtype_name(want), why);
}

/* An output's elements must not share bytes.  Taken by increasing stride,
 * each dimension (of extent > 1) must step past everything the smaller ones
 * span: that proves the view non-overlapping (slices, transposes and padded
 * rows pass).  Views that interleave their dimensions without overlapping
 * (strides (2, 3) over extents (3, 2)) fail it too; deciding those exactly
 * is a subset-sum problem, and no output a caller allocates is one. */
static attnops_status check_no_self_overlap(const char *op, const char *name, const attnops_tensor *t)
{
    int order[ATTNOPS_MAX_RANK], n = 0;
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] <= 1) continue;
        if (t->strides[d] == 0)
            return ao_fail(INVALID, "%s: output tensor '%s' has stride 0 in dimension %d of extent %lld, so its "
                           "elements overlap.", op, name, d, (long long)t->shape[d]);
        int k = n++;
        while (k > 0 && t->strides[order[k - 1]] > t->strides[d]) order[k] = order[k - 1], k--;
        order[k] = d;
    }
    int64_t span = 0; /* elements reached by the dimensions so far, minus one */
    for (int k = 0; k < n; k++) {
        const int d = order[k];
        if (t->strides[d] <= span)
            return ao_fail(INVALID, "%s: output tensor '%s' has stride %lld in dimension %d, within the %lld elements "
                           "its smaller-stride dimensions span, so its elements overlap (or interleave).", op, name,
                           (long long)t->strides[d], d, (long long)span + 1);
        span += (t->shape[d] - 1) * t->strides[d];
    }
    return ATTNOPS_SUCCESS;
}

/* Outputs must not share bytes: a later write would clobber an earlier one. */
attnops_status ao_check_disjoint(const char *op, const attnops_tensor *const *outs, const char *const *names,
                                     int n)
{
    for (int i = 0; i < n; i++) {
        if (!outs[i]) continue;
        AO_TRY(check_no_self_overlap(op, names[i], outs[i]));
        const char *lo_i, *hi_i;
        ao_tensor_extent(outs[i], &lo_i, &hi_i);
        for (int j = i + 1; j < n; j++) {
            if (!outs[j]) continue;
            const char *lo_j, *hi_j;
            ao_tensor_extent(outs[j], &lo_j, &hi_j);
            if (lo_i < hi_j && lo_j < hi_i)
                return ao_fail(INVALID, "%s: output tensors '%s' and '%s' overlap in memory.", op, names[i],
                               names[j]);
        }
    }
    return ATTNOPS_SUCCESS;
}

attnops_status ao_check_workspace(const char *op, const void *workspace, size_t bytes, size_t need)
{
    if (need > 0 && !workspace)
        return ao_fail(NULLPTR, "%s: workspace is NULL but this call needs %zu bytes.", op, need);
    if (bytes < need)
        return ao_fail(INVALID, "%s: workspace is %zu bytes but this call needs %zu bytes (the workspace size query "
                       "gives it for the same arguments).", op, bytes, need);
    return ATTNOPS_SUCCESS;
}
