/* attnops' CANN compatibility layer: the FusedInferAttentionScoreV3 entry
 * points of CANN's aclnnop/aclnn_fused_infer_attention_score_v3.h, with
 * CANN's parameter list (written here), checked against
 * hicann/ops-transformer
 * attention/fused_infer_attention_score/op_host/op_api/aclnn_fused_infer_attention_score_v3.h
 * at commit c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md,
 * docs/FIA_SPEC.md section 2).  Two-phase:
 * ...GetWorkspaceSize validates and returns a single-use executor, the
 * second call runs it (docs/ACL.md).  key and value are lists of one tensor
 * each; the quantised query/output, padding-size, shared-prefix and
 * keyRopeAntiquantScale arguments are refused when given (161002, the
 * sentence naming the argument). */
#ifndef ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_V3_H
#define ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_V3_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV3(void *workspace, uint64_t workspaceSize,
                                                                aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
