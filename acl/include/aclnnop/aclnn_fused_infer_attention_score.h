/* attnops' CANN compatibility layer: the FusedInferAttentionScore (V1) entry points of CANN's
 * aclnnop/aclnn_fused_infer_attention_score.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/fused_infer_attention_score/op_host/op_api/aclnn_fused_infer_attention_score.h
 * at commit c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and
 * returns a single-use executor, the second call runs it.  key and value are lists of one tensor each; the
 * quantised query/output and padding-size arguments are refused when given (161002, the sentence naming the
 * argument). */
#ifndef ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_H
#define ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blockTable, const aclTensor *queryPaddingSize, const aclTensor *kvPaddingSize, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScore(void *workspace, uint64_t workspaceSize,
                                                              aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
