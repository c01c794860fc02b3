/* The aclnn FlashAttentionScore(Grad) entry points on attnops.
 *
 * Phase one copies every view and int array the call needs into a new
 * executor, validates through attnops' workspace query (so failures carry
 * the library's sentence, with CANN's status) and returns the executor;
 * phase two runs it once, synchronously, and frees it.  Live executors are
 * kept in a list, so a second run of the same executor (or a pointer that
 * never was one) is refused with 161002 instead of touching freed memory.
 * ATTNOPS_ACL_IMPL=cpu (default: the fast kernel) or reference picks the
 * implementation; aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) the
 * deterministic backward. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl_internal.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

/* Every view an FA call can pass (inputs, int arrays, outputs). */
#define EXEC_VIEWS 24
#define EXEC_ARRAYS 5

typedef enum { EXEC_SCORE, EXEC_VARLEN_SCORE, EXEC_GRAD, EXEC_UNPADDING_GRAD } exec_kind;

struct aclOpExecutor {
    aclOpExecutor *next; /* the live list */
    exec_kind kind;
    attnops_fa_fwd_args fwd;
    attnops_fa_bwd_args bwd;
    attnops_tensor views[EXEC_VIEWS];
    int n_views;
    int64_t *arrays[EXEC_ARRAYS];
    int n_arrays;
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

/* Takes e off the live list if it is there with this kind. */
static bool claim(aclOpExecutor *e, exec_kind kind)
{
    bool found = false;
    pthread_mutex_lock(&live_lock);
    for (aclOpExecutor **p = &live; *p; p = &(*p)->next)
        if (*p == e && e->kind == kind) {
            *p = e->next, found = true;
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

static aclnnStatus fill_params(aclOpExecutor *e, attnops_fa_params *p, const fa_call *c)
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
    p->query = own_view(e, c->query), p->key = own_view(e, c->key), p->value = own_view(e, c->value);
    p->pse = own_view(e, c->pse), p->drop_mask = own_view(e, c->drop_mask);
    p->padding_mask = own_view(e, c->padding_mask), p->atten_mask = own_view(e, c->atten_mask);
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
    st = fill_params(e, &e->fwd.p, c);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        e->fwd.softmax_max = own_view(e, softmax_max), e->fwd.softmax_sum = own_view(e, softmax_sum);
        e->fwd.softmax_out = own_view(e, softmax_out), e->fwd.attention_out = own_view(e, attention_out);
        st = acl_status_from(kind == EXEC_VARLEN_SCORE ? attnops_flash_attention_varlen_score_workspace_size(&e->fwd, &bytes)
                                                       : attnops_flash_attention_score_workspace_size(&e->fwd, &bytes));
    }
    return finish_phase_one(e, st, bytes, workspace_size, executor);
}

static aclnnStatus grad_prepare(const fa_call *c, exec_kind kind, const aclTensor *dy, const aclTensor *softmax_max,
                                const aclTensor *softmax_sum, const aclTensor *attention_in, const aclTensor *dq,
                                const aclTensor *dk, const aclTensor *dv, const aclTensor *dpse,
                                uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = check_phase_one(c->op, workspace_size, executor);
    if (st) return st;
    aclOpExecutor *e = exec_new(c->op, kind);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    st = fill_params(e, &e->bwd.p, c);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        attnops_fa_bwd_args *b = &e->bwd;
        b->dy = own_view(e, dy), b->attention_in = own_view(e, attention_in);
        b->softmax_max = own_view(e, softmax_max), b->softmax_sum = own_view(e, softmax_sum);
        b->dq = own_view(e, dq), b->dk = own_view(e, dk), b->dv = own_view(e, dv), b->dpse = own_view(e, dpse);
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
    if (!claim(executor, kind)) {
        acl_set_error("%s: executor %p was already run, or is not one that %sGetWorkspaceSize returned (an executor "
                      "runs once).", op, (void *)executor, op);
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
    exec_free(executor); /* single use, run or refused */
    return st;
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
 * non-NULL one; the device ignores it); dpseOut is reserved and not written. */
aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
    const aclTensor *query, const aclTensor *keyIn, const aclTensor *value, const aclTensor *dy,
    const aclTensor *pseShiftOptional, const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional,
    const aclTensor *attenMaskOptional, const aclTensor *softmaxMaxOptional, const aclTensor *softmaxSumOptional,
    const aclTensor *softmaxInOptional, const aclTensor *attentionInOptional, const aclIntArray *prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor *dqOut, const aclTensor *dkOut, const aclTensor *dvOut,
    const aclTensor *dpseOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    (void)softmaxInOptional;
    const fa_call c = {"aclnnFlashAttentionScoreGrad", query, keyIn, value, pseShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, NULL, NULL, scaleValue,
                       keepProb, preTokens, nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return grad_prepare(&c, EXEC_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, attentionInOptional, dqOut, dkOut,
                        dvOut, dpseOut, workspaceSize, executor);
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
    (void)softmaxInOptional;
    const fa_call c = {"aclnnFlashAttentionScoreGradV2", query, keyIn, value, pseShiftOptional, dropMaskOptional,
                       paddingMaskOptional, attenMaskOptional, prefixOptional, NULL, NULL, qStartIdxOptional,
                       kvStartIdxOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, innerPrecise,
                       sparseMode, pseType, inputLayout};
    return grad_prepare(&c, EXEC_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, attentionInOptional, dqOut, dkOut,
                        dvOut, dpseOut, workspaceSize, executor);
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
    (void)softmaxInOptional;
    const fa_call c = {"aclnnFlashAttentionUnpaddingScoreGrad", query, keyIn, value, pseShiftOptional,
                       dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional,
                       actualSeqQLenOptional, actualSeqKvLenOptional, NULL, NULL, scaleValue, keepProb, preTokens,
                       nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return grad_prepare(&c, EXEC_UNPADDING_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, attentionInOptional,
                        dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
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
    (void)softmaxInOptional;
    const fa_call c = {"aclnnFlashAttentionUnpaddingScoreGradV2", query, keyIn, value, pseShiftOptional,
                       dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional,
                       actualSeqQLenOptional, actualSeqKvLenOptional, qStartIdxOptional, kvStartIdxOptional,
                       scaleValue, keepProb, preTokens, nextTokens, headNum, innerPrecise, sparseMode, pseType,
                       inputLayout};
    return grad_prepare(&c, EXEC_UNPADDING_GRAD, dy, softmaxMaxOptional, softmaxSumOptional, attentionInOptional,
                        dqOut, dkOut, dvOut, dpseOut, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                    const aclrtStream stream)
{
    return run("aclnnFlashAttentionUnpaddingScoreGradV2", EXEC_UNPADDING_GRAD, workspace, workspaceSize, executor,
               stream);
}
