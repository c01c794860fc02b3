/* The aclnn executors every entry point shares (acl_internal.h): their
 * copies of the call's views and arrays, the live list, phase two, and
 * CANN's reusable executors (aclSetAclOpExecutorRepeatable,
 * aclSetInputTensorAddr / aclSetOutputTensorAddr, aclDestroyAclOpExecutor).
 * ATTNOPS_ACL_IMPL=cpu (default: the fast kernels) or reference picks the
 * implementation. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static aclOpExecutor *live;

static void exec_free(aclOpExecutor *e)
{
    for (int i = 0; i < e->n_arrays; i++) free(e->arrays[i]);
    free(e);
}

static void publish(aclOpExecutor *e)
{
    pthread_mutex_lock(&live_lock);
    e->next = live, live = e;
    pthread_mutex_unlock(&live_lock);
}

/* What find_live does with an executor it finds. */
typedef enum { LIVE_LOOK, LIVE_TAKE, LIVE_TAKE_SINGLE_USE } live_action;

/* True when e is on the live list (with this kind, unless kind is
 * EXEC_ANY).  LIVE_TAKE removes it; LIVE_TAKE_SINGLE_USE (a run) removes it
 * unless it is repeatable.  One pass under the lock. */
static bool find_live(aclOpExecutor *e, int kind, live_action act)
{
    bool found = false;
    pthread_mutex_lock(&live_lock);
    for (aclOpExecutor **p = &live; *p; p = &(*p)->next)
        if (*p == e && (kind == EXEC_ANY || (int)e->kind == kind)) {
            if (act == LIVE_TAKE || (act == LIVE_TAKE_SINGLE_USE && !e->repeatable)) *p = e->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&live_lock);
    return found;
}

static const attnops_tensor *own_view(aclOpExecutor *e, const aclTensor *t)
{
    if (!t) return NULL;
    e->views[e->n_views] = t->view;
    return &e->views[e->n_views++];
}

const attnops_tensor *acl_exec_slot(aclOpExecutor *e, exec_slot *slot, const aclTensor *t)
{
    const attnops_tensor *v = own_view(e, t);
    *slot = (exec_slot){(attnops_tensor *)v, t ? t->offset : 0, t ? aclDataTypeSize(t->acl_dtype) : 0, t != NULL};
    return v;
}

bool acl_exec_array(aclOpExecutor *e, const aclIntArray *a, const attnops_tensor **out)
{
    *out = NULL;
    if (!a) return true;
    int64_t *copy = malloc(sizeof *copy * (a->size ? a->size : 1));
    if (!copy) return false;
    if (a->size) memcpy(copy, a->values, sizeof *copy * a->size);
    e->arrays[e->n_arrays++] = copy;
    const int64_t n = (int64_t)a->size;
    e->views[e->n_views] = attnops_tensor_contiguous(copy, ATTNOPS_DTYPE_I64, 1, &n);
    *out = &e->views[e->n_views++];
    return true;
}

aclnnStatus acl_exec_impl(const char *op, attnops_impl *impl)
{
    const char *name = getenv("ATTNOPS_ACL_IMPL");
    if (!name || !*name || !strcmp(name, "cpu")) *impl = ATTNOPS_IMPL_AUTO;
    else if (!strcmp(name, "reference")) *impl = ATTNOPS_IMPL_REFERENCE;
    else {
        acl_set_error("%s: ATTNOPS_ACL_IMPL is \"%s\"; it must be cpu or reference.", op, name);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

aclOpExecutor *acl_exec_new(const char *op, exec_kind kind)
{
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (!e) {
        acl_set_error("%s: out of memory.", op);
        return NULL;
    }
    e->kind = kind;
    attnops_fa_fwd_args_init(&e->fwd);
    attnops_fa_bwd_args_init(&e->bwd);
    attnops_fia_args_init(&e->fia);
    attnops_key_pool_args_init(&e->kp);
    return e;
}

aclnnStatus acl_exec_check_phase_one(const char *op, uint64_t *workspace_size, aclOpExecutor **executor)
{
    if (workspace_size && executor) return ACLNN_SUCCESS;
    acl_set_error("%s: %s is NULL.", op, !workspace_size ? "workspaceSize" : "executor");
    return ACLNN_ERR_PARAM_NULLPTR;
}

aclnnStatus acl_exec_finish_phase_one(aclOpExecutor *e, aclnnStatus st, size_t bytes, uint64_t *workspace_size,
                                    aclOpExecutor **executor)
{
    if (st != ACLNN_SUCCESS) {
        exec_free(e);
        return st;
    }
    e->workspace = bytes;
    *workspace_size = bytes;
    *executor = e;
    publish(e);
    return ACLNN_SUCCESS;
}

aclnnStatus acl_exec_run(const char *op, exec_kind kind, void *workspace, uint64_t workspace_size,
                       aclOpExecutor *executor, aclrtStream stream)
{
    if (!executor) {
        acl_set_error("%s: executor is NULL.", op);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) return ACLNN_ERR_PARAM_INVALID; /* the sentence is set */
    /* a single-use executor leaves the list now; a repeatable one stays for the next run */
    if (!find_live(executor, (int)kind, LIVE_TAKE_SINGLE_USE)) {
        acl_set_error("%s: executor %p was already run, or is not one that %sGetWorkspaceSize returned (an executor "
                      "runs once unless aclSetAclOpExecutorRepeatable made it repeatable).", op, (void *)executor, op);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclnnStatus st = ACLNN_SUCCESS;
    if (workspace_size < executor->workspace) {
        acl_set_error("%s: workspaceSize %llu is below the %zu bytes the first phase asked for.", op,
                      (unsigned long long)workspace_size, executor->workspace);
        st = ACLNN_ERR_PARAM_INVALID;
    } else if (!workspace && executor->workspace) {
        acl_set_error("%s: workspace is NULL; the first phase asked for %zu bytes.", op, executor->workspace);
        st = ACLNN_ERR_PARAM_NULLPTR;
    } else {
        st = acl_status_from(executor->call(executor, workspace, (size_t)workspace_size));
    }
    if (!executor->repeatable) exec_free(executor); /* single use, run or refused */
    return st;
}

/* ---- reusable executors (CANN's acl_meta.h) ----------------------------------------- */
/* 561103 for a NULL executor, 161002 for anything but a live one (found as `act` says). */
static aclnnStatus check_live(const char *fn, aclOpExecutor *executor, live_action act)
{
    if (!executor) {
        acl_set_error("%s: executor is NULL.", fn);
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (find_live(executor, EXEC_ANY, act)) return ACLNN_SUCCESS;
    acl_set_error("%s: executor %p is not a live executor from a first phase (destroyed already, or a single-use one "
                  "that ran).", fn, (void *)executor);
    return ACLNN_ERR_PARAM_INVALID;
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor)
{
    const aclnnStatus st = check_live("aclSetAclOpExecutorRepeatable", executor, LIVE_LOOK);
    if (st == ACLNN_SUCCESS) executor->repeatable = true;
    return st;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    const aclnnStatus st = check_live("aclDestroyAclOpExecutor", executor, LIVE_TAKE);
    if (st == ACLNN_SUCCESS) exec_free(executor);
    return st;
}

/* Points tensor argument `index` of a repeatable executor (and the aclTensor) at new storage. */
static aclnnStatus set_tensor_addr(const char *fn, aclOpExecutor *executor, size_t index, aclTensor *tensor,
                                   void *addr, bool output)
{
    if (!executor || !tensor) {
        acl_set_error("%s: %s is NULL.", fn, !executor ? "executor" : "tensor");
        return ACLNN_ERR_INNER_NULLPTR;
    }
    if (!find_live(executor, EXEC_ANY, LIVE_LOOK) || !executor->repeatable) {
        acl_set_error("%s: executor %p is not a live executor made repeatable by aclSetAclOpExecutorRepeatable.", fn,
                      (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    const int n = output ? executor->n_outputs : executor->n_inputs;
    if (index >= (size_t)n) {
        acl_set_error("%s: index %zu is out of range; this operator has %d %s tensors.", fn, index, n,
                      output ? "output" : "input");
        return ACLNN_ERR_PARAM_INVALID;
    }
    exec_slot *slot = &(output ? executor->outputs : executor->inputs)[index];
    if (!slot->given) {
        acl_set_error("%s: %s tensor %zu was NULL in the first phase; its address cannot be set.", fn,
                      output ? "output" : "input", index);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (slot->view) slot->view->data = addr ? (char *)addr + (size_t)slot->offset * slot->elem : NULL;
    if (acl_handle_live(ACL_HANDLE_TENSOR, (uintptr_t)tensor)) { /* the descriptor follows, as on the device */
        tensor->storage = addr;
        tensor->view.data = addr ? (char *)addr + (size_t)tensor->offset * aclDataTypeSize(tensor->acl_dtype) : NULL;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr)
{
    return set_tensor_addr("aclSetInputTensorAddr", executor, index, tensor, addr, false);
}

aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr)
{
    return set_tensor_addr("aclSetOutputTensorAddr", executor, index, tensor, addr, true);
}
