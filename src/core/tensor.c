/* Strided tensor views: construction, size and memory extent. */
#include "core.h"

attnops_tensor attnops_tensor_contiguous(void *data, attnops_dtype dtype, int32_t rank, const int64_t *shape)
{
    attnops_tensor t = {0};
    t.data = data;
    t.dtype = dtype;
    t.rank = rank < 0 ? 0 : (rank > ATTNOPS_MAX_RANK ? ATTNOPS_MAX_RANK : rank);
    int64_t stride = 1;
    for (int i = t.rank - 1; i >= 0; i--) {
        t.shape[i] = shape ? shape[i] : 0;
        t.strides[i] = stride;
        stride *= t.shape[i] > 0 ? t.shape[i] : 1;
    }
    return t;
}

int64_t ao_tensor_numel(const attnops_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

void ao_tensor_extent(const attnops_tensor *t, const char **lo, const char **hi)
{
    const char *base = (const char *)t->data;
    if (ao_tensor_numel(t) <= 0) {
        *lo = *hi = base;
        return;
    }
    int64_t last = 0;
    for (int i = 0; i < t->rank; i++) last += (t->shape[i] - 1) * t->strides[i];
    *lo = base;
    *hi = base + (last + 1) * (int64_t)attnops_dtype_size(t->dtype);
}
