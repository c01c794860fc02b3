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

struct aclTensorList {
    uint64_t size;
    aclTensor *values[]; /* owned: aclDestroyTensorList destroys them */
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
typedef enum {
    ACL_HANDLE_MEMORY, ACL_HANDLE_TENSOR, ACL_HANDLE_ARRAY, ACL_HANDLE_TENSOR_LIST, ACL_HANDLE_STREAM, ACL_HANDLE_CONTEXT
} acl_handle_kind;
/* false when out of memory (the caller then frees p and fails). */
bool acl_handle_add(acl_handle_kind kind, uintptr_t p);
/* true when p was live (it is not any more). */
bool acl_handle_take(acl_handle_kind kind, uintptr_t p);
bool acl_handle_live(acl_handle_kind kind, uintptr_t p);

/* ---- executors (acl_exec.c) ---------------------------------------------------------
 * Phase one copies every view and int array the call needs into a new
 * executor, validates through attnops' workspace query and hands it out;
 * phase two (acl_exec_run) runs it, once unless aclSetAclOpExecutorRepeatable
 * made it repeatable.  Live executors are kept in a list, so a second run of
 * a single-use executor (or a pointer that never was one) is refused with
 * 161002 instead of touching freed memory. */
#define EXEC_VIEWS 48 /* every view a call can pass (inputs, int arrays, outputs) */
#define EXEC_ARRAYS 5
/* The tensor arguments by their index, as aclSetInputTensorAddr /
 * aclSetOutputTensorAddr count them (each entry file lists its order). */
#define EXEC_INPUTS 26
#define EXEC_OUTPUTS 4

typedef struct exec_slot {
    attnops_tensor *view; /* the executor's copy; NULL: the argument was NULL (or is not read) */
    int64_t offset;       /* the aclTensor's view offset, in elements */
    size_t elem;
    bool given;           /* a tensor was passed */
} exec_slot;

typedef enum { EXEC_SCORE, EXEC_VARLEN_SCORE, EXEC_GRAD, EXEC_UNPADDING_GRAD, EXEC_FIA, EXEC_KEY_POOL } exec_kind;
#define EXEC_ANY (-1)

struct aclOpExecutor {
    aclOpExecutor *next; /* the live list */
    exec_kind kind;
    /* the library call of phase two, on the executor's own arguments */
    attnops_status (*call)(const aclOpExecutor *e, void *workspace, size_t workspace_bytes);
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
    attnops_fia_args fia;
    attnops_key_pool_args kp;
    attnops_tensor views[EXEC_VIEWS];
    int n_views;
    int64_t *arrays[EXEC_ARRAYS];
    int n_arrays;
    exec_slot inputs[EXEC_INPUTS], outputs[EXEC_OUTPUTS];
    int n_inputs, n_outputs;
    bool repeatable;
    size_t workspace;
};

/* A new executor of `kind` (NULL, the sentence set, when out of memory). */
aclOpExecutor *acl_exec_new(const char *op, exec_kind kind);
/* The executor's copy of t (NULL for NULL), remembered as signature slot `slot`. */
const attnops_tensor *acl_exec_slot(aclOpExecutor *e, exec_slot *slot, const aclTensor *t);
/* An int array as an i64 [size] view of the executor's own copy; false when out of memory. */
bool acl_exec_array(aclOpExecutor *e, const aclIntArray *a, const attnops_tensor **out);
/* ATTNOPS_ACL_IMPL (cpu, the default, or reference) as an attnops impl. */
aclnnStatus acl_exec_impl(const char *op, attnops_impl *impl);
/* 161001 unless both out-pointers of phase one are given. */
aclnnStatus acl_exec_check_phase_one(const char *op, uint64_t *workspace_size, aclOpExecutor **executor);
/* Validation passed (st 0): hand out the executor; else free it. */
aclnnStatus acl_exec_finish_phase_one(aclOpExecutor *e, aclnnStatus st, size_t bytes, uint64_t *workspace_size,
                                      aclOpExecutor **executor);
/* Phase two of an executor of `kind`. */
aclnnStatus acl_exec_run(const char *op, exec_kind kind, void *workspace, uint64_t workspace_size,
                         aclOpExecutor *executor, aclrtStream stream);

#endif
