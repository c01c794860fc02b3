/* The aclnn FlashAttentionScore(Grad) entry points on attnops.
 *
 * Phase one copies every view and int array the call needs into a new
 * executor, validates through attnops' workspace query (so failures carry
 * the library's sentence, with CANN's status) and returns the executor;
 * phase two runs it once, synchronously, and frees it -- unless
 * aclSetAclOpExecutorRepeatable made it reusable: then it runs as often as
 * asked, its tensors' addresses can move (aclSetInputTensorAddr /
 * aclSetOutputTensorAddr), and aclDestroyAclOpExecutor frees it.  Live
 * executors are kept in a list, so a second run of a single-use executor
 * (or a pointer that never was one) is refused with 161002 instead of
 * touching freed memory.
 * ATTNOPS_ACL_IMPL=cpu (default: the fast kernel) or reference picks the
 * implementation; aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) the
 * deterministic backward. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

/* Every view an FA call can pass (inputs, int arrays, outputs). */
#define EXEC_VIEWS 24
#define EXEC_ARRAYS 5
/* The tensor arguments by their index in the entry point's signature, as
 * aclSetInputTensorAddr / aclSetOutputTensorAddr count them: the forward's
 * query, key, value, realShift, dropMask, paddingMask, attenMask and
 * softmaxMax, softmaxSum, softmaxOut, attentionOut; the backward's query,
 * key, value, dy, pseShift, dropMask, paddingMask, attenMask, softmaxMax,
 * softmaxSum, softmaxIn, attentionIn and dq, dk, dv, dpse. */
#define EXEC_INPUTS 12
#define EXEC_OUTPUTS 4

typedef struct exec_slot {
    attnops_tensor *view; /* the executor's copy; NULL: the argument was NULL (or is not read: softmaxIn) */
    int64_t offset;       /* the aclTensor's view offset, in elements */
    size_t elem;
    bool given;           /* a tensor was passed */
} exec_slot;

typedef enum { EXEC_SCORE, EXEC_VARLEN_SCORE, EXEC_GRAD, EXEC_UNPADDING_GRAD } exec_kind;
#define EXEC_ANY (-1)

struct aclOpExecutor {
    aclOpExecutor *next; /* the live list */
    exec_kind kind;
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
    attnops_tensor views[EXEC_VIEWS];
    int n_views;
    int64_t *arrays[EXEC_ARRAYS];
    int n_arrays;
    exec_slot inputs[EXEC_INPUTS], outputs[EXEC_OUTPUTS];
    int n_inputs, n_outputs;
    bool repeatable;
    size_t workspace;
};

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

/* The executor's copy of t (NULL for NULL), remembered as signature slot `slot`. */
static const attnops_tensor *slot_view(aclOpExecutor *e, exec_slot *slot, const aclTensor *t)
{
    const attnops_tensor *v = own_view(e, t);
    *slot = (exec_slot){(attnops_tensor *)v, t ? t->offset : 0, t ? aclDataTypeSize(t->acl_dtype) : 0, t != NULL};
    return v;
}

/* An int array as an i64 [size] view of the executor's own copy; false when out of memory. */
static bool own_array(aclOpExecutor *e, const aclIntArray *a, const attnops_tensor **out)
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

/* What the four forward and four backward entries share. */
typedef struct fa_call {
    const char *op;
    const aclTensor *query, *key, *value, *pse, *drop_mask, *padding_mask, *atten_mask;
    const aclIntArray *prefix, *qlen, *kvlen, *qstart, *kvstart;
    double scale, keep_prob;
    int64_t pre_tokens, next_tokens, head_num, inner_precise, sparse_mode, pse_type;
    const char *layout;
} fa_call;

/* gap: 1 in the backward, whose signature has dy between value and the pse. */
static aclnnStatus fill_params(aclOpExecutor *e, attnops_fa_params *p, const fa_call *c, int gap)
{
    if (!c->layout) {
        acl_set_error("%s: inputLayout is NULL.", c->op);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    p->input_layout = attnops_layout_from_string(c->layout);
    if (p->input_layout == ATTNOPS_LAYOUT_UNSET) {
        acl_set_error("%s: inputLayout is \"%s\"; it must be one of BSH, SBH, BSND, BNSD, TND.", c->op, c->layout);
        return ACLNN_ERR_PARAM_INVALID;
    }
    const char *impl = getenv("ATTNOPS_ACL_IMPL");
    if (!impl || !*impl || !strcmp(impl, "cpu")) p->impl = ATTNOPS_IMPL_AUTO;
    else if (!strcmp(impl, "reference")) p->impl = ATTNOPS_IMPL_REFERENCE;
    else {
        acl_set_error("%s: ATTNOPS_ACL_IMPL is \"%s\"; it must be cpu or reference.", c->op, impl);
        return ACLNN_ERR_PARAM_INVALID;
    }
    exec_slot *in = e->inputs;
    p->query = slot_view(e, &in[0], c->query), p->key = slot_view(e, &in[1], c->key);
    p->value = slot_view(e, &in[2], c->value), p->pse = slot_view(e, &in[3 + gap], c->pse);
    p->drop_mask = slot_view(e, &in[4 + gap], c->drop_mask);
    p->padding_mask = slot_view(e, &in[5 + gap], c->padding_mask);
    p->atten_mask = slot_view(e, &in[6 + gap], c->atten_mask);
    if (!own_array(e, c->prefix, &p->prefix) || !own_array(e, c->qlen, &p->actual_seq_qlen) ||
        !own_array(e, c->kvlen, &p->actual_seq_kvlen) || !own_array(e, c->qstart, &p->q_start_idx) ||
        !own_array(e, c->kvstart, &p->kv_start_idx)) {
        acl_set_error("%s: out of memory.", c->op);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    p->scale_value = c->scale, p->keep_prob = c->keep_prob;
    p->pre_tokens = c->pre_tokens, p->next_tokens = c->next_tokens, p->head_num = c->head_num;
    p->inner_precise = c->inner_precise, p->sparse_mode = c->sparse_mode, p->pse_type = c->pse_type;
    p->deterministic = acl_deterministic() != 0;
    return ACLNN_SUCCESS;
}

static aclOpExecutor *exec_new(const char *op, exec_kind kind)
{
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (!e) {
        acl_set_error("%s: out of memory.", op);
        return NULL;
    }
    e->kind = kind;
    attnops_fa_fwd_args_init(&e->fwd);
    attnops_fa_bwd_args_init(&e->bwd);
    return e;
}

static aclnnStatus check_phase_one(const char *op, uint64_t *workspace_size, aclOpExecutor **executor)
{
    if (workspace_size && executor) return ACLNN_SUCCESS;
    acl_set_error("%s: %s is NULL.", op, !workspace_size ? "workspaceSize" : "executor");
    return ACLNN_ERR_PARAM_NULLPTR;
}

/* Validation passed: hand out the executor; else free it. */
static aclnnStatus finish_phase_one(aclOpExecutor *e, aclnnStatus st, size_t bytes, uint64_t *workspace_size,
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

static aclnnStatus score_prepare(const fa_call *c, exec_kind kind, const aclTensor *softmax_max,
                                 const aclTensor *softmax_sum, const aclTensor *softmax_out,
                                 const aclTensor *attention_out, uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = check_phase_one(c->op, workspace_size, executor);
    if (st) return st;
    aclOpExecutor *e = exec_new(c->op, kind);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    st = fill_params(e, &e->fwd.p, c, 0);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        exec_slot *out = e->outputs;
        e->n_inputs = 7, e->n_outputs = 4;
        e->fwd.softmax_max = slot_view(e, &out[0], softmax_max);
        e->fwd.softmax_sum = slot_view(e, &out[1], softmax_sum);
        e->fwd.softmax_out = slot_view(e, &out[2], softmax_out);
        e->fwd.attention_out = slot_view(e, &out[3], attention_out);
        st = acl_status_from(kind == EXEC_VARLEN_SCORE ? attnops_flash_attention_varlen_score_workspace_size(&e->fwd, &bytes)
                                                       : attnops_flash_attention_score_workspace_size(&e->fwd, &bytes));
    }
    return finish_phase_one(e, st, bytes, workspace_size, executor);
}

static aclnnStatus grad_prepare(const fa_call *c, exec_kind kind, const aclTensor *dy, const aclTensor *softmax_max,
                                const aclTensor *softmax_sum, const aclTensor *softmax_in,
                                const aclTensor *attention_in, const aclTensor *dq,
                                const aclTensor *dk, const aclTensor *dv, const aclTensor *dpse,
                                uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = check_phase_one(c->op, workspace_size, executor);
    if (st) return st;
    aclOpExecutor *e = exec_new(c->op, kind);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    st = fill_params(e, &e->bwd.p, c, 1);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        attnops_fa_bwd_args *b = &e->bwd;
        exec_slot *in = e->inputs, *out = e->outputs;
        e->n_inputs = 12, e->n_outputs = 4;
        b->dy = slot_view(e, &in[3], dy), b->softmax_max = slot_view(e, &in[8], softmax_max);
        b->softmax_sum = slot_view(e, &in[9], softmax_sum);
        in[10] = (exec_slot){NULL, 0, 0, softmax_in != NULL}; /* reserved: not read */
        b->attention_in = slot_view(e, &in[11], attention_in);
        b->dq = slot_view(e, &out[0], dq), b->dk = slot_view(e, &out[1], dk), b->dv = slot_view(e, &out[2], dv);
        b->dpse = slot_view(e, &out[3], dpse);
        st = acl_status_from(kind == EXEC_UNPADDING_GRAD
                                 ? attnops_flash_attention_unpadding_score_grad_workspace_size(b, &bytes)
                                 : attnops_flash_attention_score_grad_workspace_size(b, &bytes));
    }
    return finish_phase_one(e, st, bytes, workspace_size, executor);
}

static aclnnStatus run(const char *op, exec_kind kind, void *workspace, uint64_t workspace_size,
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
        const size_t n = (size_t)workspace_size;
        switch (kind) {
        case EXEC_SCORE: st = acl_status_from(attnops_flash_attention_score(&executor->fwd, workspace, n)); break;
        case EXEC_VARLEN_SCORE:
            st = acl_status_from(attnops_flash_attention_varlen_score(&executor->fwd, workspace, n));
            break;
        case EXEC_GRAD: st = acl_status_from(attnops_flash_attention_score_grad(&executor->bwd, workspace, n)); break;
        case EXEC_UNPADDING_GRAD:
            st = acl_status_from(attnops_flash_attention_unpadding_score_grad(&executor->bwd, workspace, n));
            break;
        }
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

/* ---- the forward entries ------------------------------------------------------- */
aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionScore", query, key, value, realShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, NULL, NULL, scaleValue,
                       keepProb, preTokens, nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return score_prepare(&c, EXEC_SCORE, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut, workspaceSize,
                         executor);
}

aclnnStatus aclnnFlashAttentionScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     const aclrtStream stream)
{
    return run("aclnnFlashAttentionScore", EXEC_SCORE, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionScoreV2", query, key, value, realShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, qStartIdxOptional,
                       kvStartIdxOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, innerPrecise,
                       sparseMode, pseType, inputLayout};
    return score_prepare(&c, EXEC_SCORE, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut, workspaceSize,
                         executor);
}

aclnnStatus aclnnFlashAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream)
{
    return run("aclnnFlashAttentionScoreV2", EXEC_SCORE, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode,
    const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut,
    const aclTensor *attentionOutOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionVarLenScore", query, key, value, realShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, actualSeqQLenOptional,
                       actualSeqKvLenOptional, NULL, NULL, scaleValue, keepProb, preTokens, nextTokens, headNum,
                       innerPrecise, sparseMode, 1, inputLayout};
    return score_prepare(&c, EXEC_VARLEN_SCORE, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut,
                         workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionVarLenScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                           const aclrtStream stream)
{
    return run("aclnnFlashAttentionVarLenScore", EXEC_VARLEN_SCORE, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, const aclIntArray *qStartIdxOptional,
    const aclIntArray *kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut,
    const aclTensor *attentionOutOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionVarLenScoreV2", query, key, value, realShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, actualSeqQLenOptional,
                       actualSeqKvLenOptional, qStartIdxOptional, kvStartIdxOptional, scaleValue, keepProb,
                       preTokens, nextTokens, headNum, innerPrecise, sparseMode, pseType, inputLayout};
    return score_prepare(&c, EXEC_VARLEN_SCORE, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut,
                         workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionVarLenScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             const aclrtStream stream)
{
    return run("aclnnFlashAttentionVarLenScoreV2", EXEC_VARLEN_SCORE, workspace, workspaceSize, executor, stream);
}

/* ---- the backward entries --------------------------------------------------------
 * softmaxInOptional is reserved by CANN and not read (attnops refuses a
 * non-NULL one; the device ignores it; only its slot for
 * aclSetInputTensorAddr is kept); dpseOut is reserved and not written. */
aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy,
    const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionScoreGrad", query, keyIn, value, pseShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, NULL, NULL, scaleValue,
                       keepProb, preTokens, nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return grad_prepare(&c, EXEC_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
                        attentionInOptional, dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScoreGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         const aclrtStream stream)
{
    return run("aclnnFlashAttentionScoreGrad", EXEC_GRAD, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy,
    const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional,
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, int64_t pseType, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionScoreGradV2", query, keyIn, value, pseShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, qStartIdxOptional,
                       kvStartIdxOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, innerPrecise,
                       sparseMode, pseType, inputLayout};
    return grad_prepare(&c, EXEC_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
                        attentionInOptional, dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScoreGradV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                           const aclrtStream stream)
{
    return run("aclnnFlashAttentionScoreGradV2", EXEC_GRAD, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy,
    const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional,
    const aclIntArray *actualSeqQLenOptional, const aclIntArray *actualSeqKvLenOptional, double scaleValue,
    double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionUnpaddingScoreGrad", query, keyIn, value, pseShiftOptional,
                       dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional,
                       actualSeqQLenOptional, actualSeqKvLenOptional, NULL, NULL, scaleValue, keepProb, preTokens,
                       nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return grad_prepare(&c, EXEC_UNPADDING_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
                        attentionInOptional, dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionUnpaddingScoreGrad(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                  const aclrtStream stream)
{
    return run("aclnnFlashAttentionUnpaddingScoreGrad", EXEC_UNPADDING_GRAD, workspace, workspaceSize, executor,
               stream);
}

aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy,
    const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional,
    const aclIntArray *actualSeqQLenOptional, const aclIntArray *actualSeqKvLenOptional,
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise,
    int64_t sparseMode, int64_t pseType, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fa_call c = {"aclnnFlashAttentionUnpaddingScoreGradV2", query, keyIn, value, pseShiftOptional,
                       dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional,
                       actualSeqQLenOptional, actualSeqKvLenOptional, qStartIdxOptional, kvStartIdxOptional,
                       scaleValue, keepProb, preTokens, nextTokens, headNum, innerPrecise, sparseMode, pseType,
                       inputLayout};
    return grad_prepare(&c, EXEC_UNPADDING_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
                        attentionInOptional, dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    return run("aclnnFlashAttentionUnpaddingScoreGradV2", EXEC_UNPADDING_GRAD, workspace, workspaceSize, executor,
               stream);
}
