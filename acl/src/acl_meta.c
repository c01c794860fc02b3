/* aclTensor and the aclnn arrays: CANN's descriptors over attnops views. */
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static attnops_dtype dtype_of(aclDataType t)
{
    switch (t) {
    case ACL_FLOAT: return ATTNOPS_DTYPE_F32;
    case ACL_FLOAT16: return ATTNOPS_DTYPE_F16;
    case ACL_BF16: return ATTNOPS_DTYPE_BF16;
    case ACL_FLOAT8_E4M3FN: return ATTNOPS_DTYPE_F8_E4M3FN;
    case ACL_FLOAT8_E5M2: return ATTNOPS_DTYPE_F8_E5M2;
    case ACL_UINT8: return ATTNOPS_DTYPE_U8;
    case ACL_BOOL: return ATTNOPS_DTYPE_BOOL;
    case ACL_INT32: return ATTNOPS_DTYPE_I32;
    case ACL_INT64: return ATTNOPS_DTYPE_I64;
    case ACL_INT8: return ATTNOPS_DTYPE_I8;
    default: return (attnops_dtype)0; /* no operator takes it: the operator's validation names it */
    }
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                           uint64_t storageDimsNum, void *tensorData)
{
    if ((!viewDims && viewDimsNum) || (!storageDims && storageDimsNum) || (!stride && viewDimsNum)) {
        acl_set_error("aclCreateTensor: viewDims, stride or storageDims is NULL with a non-zero count.");
        return NULL;
    }
    if (viewDimsNum > ATTNOPS_MAX_RANK || storageDimsNum > ATTNOPS_MAX_RANK) {
        acl_set_error("aclCreateTensor: rank %llu exceeds the maximum of %d.",
                      (unsigned long long)(viewDimsNum > storageDimsNum ? viewDimsNum : storageDimsNum),
                      ATTNOPS_MAX_RANK);
        return NULL;
    }
    const size_t elem = aclDataTypeSize(dataType);
    if (elem == 0) {
        acl_set_error("aclCreateTensor: dataType %d has no element size here.", (int)dataType);
        return NULL;
    }
    /* The view must lie inside the storage: its last element at offset + sum (dim - 1) stride. */
    int64_t storage_elems = 1, last = offset, view_elems = 1;
    for (uint64_t i = 0; i < storageDimsNum; i++) storage_elems *= storageDims[i];
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        if (viewDims[i] < 0 || stride[i] < 0) {
            acl_set_error("aclCreateTensor: dim %llu has size %lld and stride %lld; both must be >= 0.",
                          (unsigned long long)i, (long long)viewDims[i], (long long)stride[i]);
            return NULL;
        }
        view_elems *= viewDims[i];
        if (viewDims[i] > 0) last += (viewDims[i] - 1) * stride[i];
    }
    if (offset < 0 || (view_elems > 0 && last >= storage_elems)) {
        acl_set_error("aclCreateTensor: the view (offset %lld, last element %lld) does not fit in the storage of "
                      "%lld elements.", (long long)offset, (long long)last, (long long)storage_elems);
        return NULL;
    }
    aclTensor *t = calloc(1, sizeof *t);
    if (!t) {
        acl_set_error("aclCreateTensor: out of memory.");
        return NULL;
    }
    t->view.data = tensorData ? (char *)tensorData + (size_t)offset * elem : NULL;
    t->view.dtype = dtype_of(dataType);
    t->view.rank = (int32_t)viewDimsNum;
    for (uint64_t i = 0; i < viewDimsNum; i++) t->view.shape[i] = viewDims[i], t->view.strides[i] = stride[i];
    t->acl_dtype = dataType, t->format = format, t->offset = offset;
    t->storage_rank = storageDimsNum;
    if (storageDimsNum) memcpy(t->storage_dims, storageDims, storageDimsNum * sizeof *storageDims);
    t->storage = tensorData;
    if (!acl_handle_add(ACL_HANDLE_TENSOR, (uintptr_t)t)) {
        free(t);
        acl_set_error("aclCreateTensor: out of memory.");
        return NULL;
    }
    return t;
}

/* NULL, or a live object of this kind, which is freed; anything else is refused. */
static aclnnStatus destroy(acl_handle_kind kind, const void *p, const char *fn)
{
    if (!p) return ACLNN_SUCCESS;
    if (!acl_handle_take(kind, (uintptr_t)p)) {
        acl_set_error("%s: %p was not created by this library, or was destroyed already.", fn, p);
        return ACLNN_ERR_PARAM_INVALID;
    }
    free((void *)p);
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) { return destroy(ACL_HANDLE_TENSOR, tensor, "aclDestroyTensor"); }

/* One array type per element type, each a size and a copy of the values. */
#define ACL_ARRAY(Type, elem_t, create, destroy_fn)                                                              \
    Type *create(const elem_t *value, uint64_t size)                                                           \
    {                                                                                                          \
        if (!value && size) {                                                                                  \
            acl_set_error(#create ": value is NULL with size %llu.", (unsigned long long)size);                \
            return NULL;                                                                                       \
        }                                                                                                      \
        Type *a = malloc(sizeof *a + size * sizeof(elem_t));                                                   \
        if (!a || !acl_handle_add(ACL_HANDLE_ARRAY, (uintptr_t)a)) {                                           \
            free(a);                                                                                           \
            acl_set_error(#create ": out of memory.");                                                         \
            return NULL;                                                                                       \
        }                                                                                                      \
        a->size = size;                                                                                        \
        if (size) memcpy(a->values, value, size * sizeof(elem_t));                                             \
        return a;                                                                                              \
    }                                                                                                          \
    aclnnStatus destroy_fn(const Type *array) { return destroy(ACL_HANDLE_ARRAY, array, #destroy_fn); }

ACL_ARRAY(aclIntArray, int64_t, aclCreateIntArray, aclDestroyIntArray)
ACL_ARRAY(aclFloatArray, float, aclCreateFloatArray, aclDestroyFloatArray)
ACL_ARRAY(aclBoolArray, bool, aclCreateBoolArray, aclDestroyBoolArray)

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size)
{
    if (!value && size) {
        acl_set_error("aclCreateTensorList: value is NULL with size %llu.", (unsigned long long)size);
        return NULL;
    }
    for (uint64_t i = 0; i < size; i++)
        if (!value[i] || !acl_handle_live(ACL_HANDLE_TENSOR, (uintptr_t)value[i])) {
            acl_set_error("aclCreateTensorList: value[%llu] (%p) is not a tensor made by aclCreateTensor.",
                          (unsigned long long)i, (const void *)value[i]);
            return NULL;
        }
    aclTensorList *l = malloc(sizeof *l + size * sizeof(aclTensor *));
    if (!l || !acl_handle_add(ACL_HANDLE_TENSOR_LIST, (uintptr_t)l)) {
        free(l);
        acl_set_error("aclCreateTensorList: out of memory.");
        return NULL;
    }
    l->size = size;
    for (uint64_t i = 0; i < size; i++) l->values[i] = (aclTensor *)value[i];
    return l;
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array)
{
    if (!array) return ACLNN_SUCCESS;
    if (!acl_handle_live(ACL_HANDLE_TENSOR_LIST, (uintptr_t)array)) {
        acl_set_error("aclDestroyTensorList: %p was not created by this library, or was destroyed already.",
                      (const void *)array);
        return ACLNN_ERR_PARAM_INVALID;
    }
    for (uint64_t i = 0; i < array->size; i++) aclDestroyTensor(array->values[i]); /* the list owns them */
    return destroy(ACL_HANDLE_TENSOR_LIST, array, "aclDestroyTensorList");
}
