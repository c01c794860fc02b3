/* attnops' CANN compatibility layer: the FusedInferAttentionScoreV5 entry points (the Ascend 950 entry) of CANN's
 * aclnnop/aclnn_fused_infer_attention_score_v5.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/fused_infer_attention_score/op_api/aclnn_fused_infer_attention_score_v5.cpp at
 * commit 315e687b6bba99894b5ee35d2afb12431245d25a and the page docs/aclnnFusedInferAttentionScoreV5.md
 * (docs/ACL.md).  V4's list with qStartIdxOptional / kvStartIdxOptional after learnableSinkOptional and pseType
 * after queryQuantMode.  V4's refusals; pseType 0 is V4's pseShift (added after the scale); pseType 2 and 3 make
 * the ALiBi inside from the slopes in pseShiftOptional (f32 [numHeads]) and the first values of qStartIdxOptional /
 * kvStartIdxOptional (0 when NULL): -slope * g(|(kvStart + j) - (qStart + i)|), g the distance (2) or its square
 * root (3), the library's alibi_rule; any other pseType, or 2 / 3 without pseShiftOptional, is refused (161002, the
 * sentence naming it). The start indices are not read at pseType 0.
 */
#ifndef ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_V5_H
#define ATTNOPS_ACL_ACLNN_FUSED_INFER_ATTENTION_SCORE_V5_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
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
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional,
    const aclTensor *dequantScaleQueryOptional, const aclTensor *learnableSinkOptional,
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode,
    int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, int64_t queryQuantMode, int64_t pseType, const aclTensor *attentionOut,
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFusedInferAttentionScoreV5(void *workspace, uint64_t workspaceSize,
                                                                aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
