/* The aclnn FlashAttentionScore(Grad) entry points on attnops, through the
 * shared executors (acl_exec.c): phase one validates through attnops'
 * workspace query, so failures carry the library's sentence with CANN's
 * status; aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) picks the
 * deterministic backward.  Tensor indices for aclSetInputTensorAddr /
 * aclSetOutputTensorAddr: the forward's query, key, value, realShift,
 * dropMask, paddingMask, attenMask and softmaxMax, softmaxSum, softmaxOut,
 * attentionOut; the backward's query, key, value, dy, pseShift, dropMask,
 * paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn, attentionIn and
 * dq, dk, dv, dpse. */
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

/* Phase two's library calls. */
static attnops_status call_score(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_flash_attention_score(&e->fwd, ws, n);
}
static attnops_status call_varlen_score(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_flash_attention_varlen_score(&e->fwd, ws, n);
}
static attnops_status call_grad(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_flash_attention_score_grad(&e->bwd, ws, n);
}
static attnops_status call_unpadding_grad(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_flash_attention_unpadding_score_grad(&e->bwd, ws, n);
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
    const aclnnStatus impl = acl_exec_impl(c->op, &p->impl);
    if (impl != ACLNN_SUCCESS) return impl;
    exec_slot *in = e->inputs;
    p->query = acl_exec_slot(e, &in[0], c->query), p->key = acl_exec_slot(e, &in[1], c->key);
    p->value = acl_exec_slot(e, &in[2], c->value), p->pse = acl_exec_slot(e, &in[3 + gap], c->pse);
    p->drop_mask = acl_exec_slot(e, &in[4 + gap], c->drop_mask);
    p->padding_mask = acl_exec_slot(e, &in[5 + gap], c->padding_mask);
    p->atten_mask = acl_exec_slot(e, &in[6 + gap], c->atten_mask);
    if (!acl_exec_array(e, c->prefix, &p->prefix) || !acl_exec_array(e, c->qlen, &p->actual_seq_qlen) ||
        !acl_exec_array(e, c->kvlen, &p->actual_seq_kvlen) || !acl_exec_array(e, c->qstart, &p->q_start_idx) ||
        !acl_exec_array(e, c->kvstart, &p->kv_start_idx)) {
        acl_set_error("%s: out of memory.", c->op);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    p->scale_value = c->scale, p->keep_prob = c->keep_prob;
    p->pre_tokens = c->pre_tokens, p->next_tokens = c->next_tokens, p->head_num = c->head_num;
    p->inner_precise = c->inner_precise, p->sparse_mode = c->sparse_mode, p->pse_type = c->pse_type;
    p->deterministic = acl_deterministic() != 0;
    return ACLNN_SUCCESS;
}

static aclnnStatus score_prepare(const fa_call *c, exec_kind kind, const aclTensor *softmax_max,
                                 const aclTensor *softmax_sum, const aclTensor *softmax_out,
                                 const aclTensor *attention_out, uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = acl_exec_check_phase_one(c->op, workspace_size, executor);
    if (st) return st;
    aclOpExecutor *e = acl_exec_new(c->op, kind);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    e->call = kind == EXEC_VARLEN_SCORE ? call_varlen_score : call_score;
    st = fill_params(e, &e->fwd.p, c, 0);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        exec_slot *out = e->outputs;
        e->n_inputs = 7, e->n_outputs = 4;
        e->fwd.softmax_max = acl_exec_slot(e, &out[0], softmax_max);
        e->fwd.softmax_sum = acl_exec_slot(e, &out[1], softmax_sum);
        e->fwd.softmax_out = acl_exec_slot(e, &out[2], softmax_out);
        e->fwd.attention_out = acl_exec_slot(e, &out[3], attention_out);
        st = acl_status_from(kind == EXEC_VARLEN_SCORE ? attnops_flash_attention_varlen_score_workspace_size(&e->fwd, &bytes)
                                                       : attnops_flash_attention_score_workspace_size(&e->fwd, &bytes));
    }
    return acl_exec_finish_phase_one(e, st, bytes, workspace_size, executor);
}

static aclnnStatus grad_prepare(const fa_call *c, exec_kind kind, const aclTensor *dy, const aclTensor *softmax_max,
                                const aclTensor *softmax_sum, const aclTensor *softmax_in,
                                const aclTensor *attention_in, const aclTensor *dq,
                                const aclTensor *dk, const aclTensor *dv, const aclTensor *dpse,
                                uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = acl_exec_check_phase_one(c->op, workspace_size, executor);
    if (st) return st;
    aclOpExecutor *e = acl_exec_new(c->op, kind);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    e->call = kind == EXEC_UNPADDING_GRAD ? call_unpadding_grad : call_grad;
    st = fill_params(e, &e->bwd.p, c, 1);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        attnops_fa_bwd_args *b = &e->bwd;
        exec_slot *in = e->inputs, *out = e->outputs;
        e->n_inputs = 12, e->n_outputs = 4;
        b->dy = acl_exec_slot(e, &in[3], dy), b->softmax_max = acl_exec_slot(e, &in[8], softmax_max);
        b->softmax_sum = acl_exec_slot(e, &in[9], softmax_sum);
        in[10] = (exec_slot){NULL, 0, 0, softmax_in != NULL}; /* reserved: not read */
        b->attention_in = acl_exec_slot(e, &in[11], attention_in);
        b->dq = acl_exec_slot(e, &out[0], dq), b->dk = acl_exec_slot(e, &out[1], dk), b->dv = acl_exec_slot(e, &out[2], dv);
        b->dpse = acl_exec_slot(e, &out[3], dpse);
        st = acl_status_from(kind == EXEC_UNPADDING_GRAD
                                 ? attnops_flash_attention_unpadding_score_grad_workspace_size(b, &bytes)
                                 : attnops_flash_attention_score_grad_workspace_size(b, &bytes));
    }
    return acl_exec_finish_phase_one(e, st, bytes, workspace_size, executor);
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
    return acl_exec_run("aclnnFlashAttentionScore", EXEC_SCORE, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionScoreV2", EXEC_SCORE, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionVarLenScore", EXEC_VARLEN_SCORE, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionVarLenScoreV2", EXEC_VARLEN_SCORE, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionScoreGrad", EXEC_GRAD, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionScoreGradV2", EXEC_GRAD, workspace, workspaceSize, executor, stream);
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
    return acl_exec_run("aclnnFlashAttentionUnpaddingScoreGrad", EXEC_UNPADDING_GRAD, workspace, workspaceSize, executor,
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
    return acl_exec_run("aclnnFlashAttentionUnpaddingScoreGradV2", EXEC_UNPADDING_GRAD, workspace, workspaceSize, executor,
               stream);
}
