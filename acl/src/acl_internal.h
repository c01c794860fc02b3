/* The CANN compatibility layer's objects and shared helpers (libattnops_acl).
 *
 * aclTensor is an attnops_tensor view plus what CANN's descriptor carries
 * (dtype, format, view offset, storage shape); the arrays own copies of
 * their values; an executor (acl_fa.c) owns copies of everything its run
 * needs, so the caller may destroy tensors and arrays between the phases. */
#ifndef ATTNOPS_ACL_INTERNAL_H
#define ATTNOPS_ACL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "attnops.h"

struct aclTensor {
    attnops_tensor view; /* data = storage + offset elements; dtype 0 where attnops has none */
    aclDataType acl_dtype;
    aclFormat format;
    int64_t offset;
    int64_t storage_dims[ATTNOPS_MAX_RANK];
    uint64_t storage_rank;
    void *storage;
};

struct aclIntArray {
    uint64_t size;
    int64_t values[];
};

struct aclFloatArray {
    uint64_t size;
    float values[];
};

struct aclBoolArray {
    uint64_t size;
    bool values[];
};

/* The sentence of this thread's last failure, as aclGetRecentErrMsg returns it. */
void acl_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An attnops status as an aclnn status, keeping the library's sentence:
 * 161001 / 161002 as they are, 161003 (a valid request attnops does not
 * implement) as 161002, 361001 as ACLNN_ERR_RUNTIME_ERROR, anything else
 * as ACLNN_ERR_INNER. */
aclnnStatus acl_status_from(attnops_status status);

/* The deterministic mode of the calling thread's current context: its own
 * (aclrtCtxSetSysParamOpt), else the process's (aclrtSetSysParamOpt). */
int64_t acl_deterministic(void);

/* Live handles by kind, so that a free or destroy of a pointer this layer
 * did not hand out (or already took back) is an error, not a crash.  Keys
 * are the addresses (never dereferenced). */
typedef enum { ACL_HANDLE_MEMORY, ACL_HANDLE_TENSOR, ACL_HANDLE_ARRAY, ACL_HANDLE_STREAM, ACL_HANDLE_CONTEXT } acl_handle_kind;
/* false when out of memory (the caller then frees p and fails). */
bool acl_handle_add(acl_handle_kind kind, uintptr_t p);
/* true when p was live (it is not any more). */
bool acl_handle_take(acl_handle_kind kind, uintptr_t p);
bool acl_handle_live(acl_handle_kind kind, uintptr_t p);

#endif
